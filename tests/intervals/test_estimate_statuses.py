"""Estimate.statuses: every status that applies, most severe first, status == statuses[0]."""

import dataclasses
import warnings

import pytest

import noisycal as nc
from noisycal.intervals import Estimate


def _quiet(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        return Estimate("ECE", **kw)


def test_an_ok_estimate_has_the_one_status_ok():
    est = Estimate("ECE", 0.02, (0.01, 0.04), 0.9, "bootstrap", "percentile", n=100)
    assert (est.status, est.statuses) == ("ok", ("ok",))
    assert "status" not in repr(est)


def test_an_estimate_outside_its_interval_alone_warns_and_lists_only_that():
    with pytest.warns(nc.NumericalWarning, match="does not contain the estimate"):
        est = Estimate("ECE", 0.05, (0.01, 0.04), 0.9, "bootstrap", "percentile", n=100)
    assert est.statuses == ("estimate_outside_interval",)
    assert repr(est).endswith("status='estimate_outside_interval'")


def test_a_failed_estimate_outside_its_interval_lists_both_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = Estimate("ECE", 0.05, (0.01, 0.04), 0.9, "bootstrap", "percentile", n=100,
                       status="weak_channels", message="the channels are too uncertain")
    assert est.status == "weak_channels"
    assert est.statuses == ("weak_channels", "estimate_outside_interval")
    assert est.message.startswith("the channels are too uncertain; ECE: the bootstrap")
    assert repr(est).endswith("statuses=('weak_channels', 'estimate_outside_interval')")
    assert est.summary()["statuses"].iloc[0] == "weak_channels, estimate_outside_interval"
    assert est.to_frame()["status"].iloc[0] == "weak_channels"


def test_given_statuses_are_merged_ordered_and_the_first_is_the_status():
    est = _quiet(value=0.02, interval=(0.01, 0.04), level=0.9, status="boundary",
                 statuses=("target_small_gap", "no_bins", "boundary"))
    assert est.statuses == ("target_small_gap", "no_bins", "boundary")
    assert est.status == "target_small_gap"


def test_replace_keeps_the_statuses_already_there_and_does_not_repeat_the_message():
    est = _quiet(value=0.05, interval=(0.01, 0.04), level=0.9, kind="bootstrap")
    assert est.statuses == ("estimate_outside_interval",)
    worse = dataclasses.replace(est, status="target_not_converged")
    assert worse.statuses == ("target_not_converged", "estimate_outside_interval")
    assert worse.message == est.message  # the interval's message is not added twice
    again = dataclasses.replace(worse, details={"x": 1})
    assert again.statuses == worse.statuses and again.message == worse.message


def test_html_lists_every_status():
    est = _quiet(value=0.05, interval=(0.01, 0.04), level=0.9, status="weak_channels")
    assert "statuses weak_channels, estimate_outside_interval" in est._repr_html_()


def test_an_estimate_given_another_status_only_in_statuses_does_not_warn_either():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = Estimate("ECE", 0.05, (0.01, 0.04), 0.9, "bootstrap", n=100,
                       statuses=("no_bins",))
    assert est.statuses == ("no_bins", "estimate_outside_interval")
