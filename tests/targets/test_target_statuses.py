"""Target.statuses: every status of the fit a target comes from, carried to its Estimates."""

import warnings

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.engines.results import AnnotatorFit
from noisycal.intervals import Estimate
from noisycal.metrics.inputs import with_target_status

WIDE = np.array([[0, 0, 1], [1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 1, 0], [1, 1, 0]])


def _fit(status, statuses=(), message="the iteration limit was reached"):
    """A hand-built EM fit of WIDE (annotators and items as ``from_wide`` numbers them)."""
    post = np.array([[0.9, 0.1], [0.1, 0.9], [0.95, 0.05], [0.3, 0.7], [0.6, 0.4],
                     [0.4, 0.6]])
    conf = np.array([[[0.8, 0.2], [0.3, 0.7]], [[0.75, 0.25], [0.2, 0.8]],
                     [[0.7, 0.3], [0.25, 0.75]]])
    return AnnotatorFit("dawid_skene", "em", np.array([0, 1]), np.array([0, 1, 2]),
                        np.arange(6), np.array([[0.5, 0.5]]), conf, post, -10.0, 7, status,
                        message, status != "not_converged", 3, statuses=statuses)


def test_a_target_from_an_ok_fit_is_ok():
    t = nc.targets.posterior(None, _fit("ok"))
    assert (t.status, t.statuses) == ("ok", ("ok",))
    assert repr(t) == "Target(kind='posterior', n_items=6, n_classes=2)"


def test_a_target_keeps_every_status_of_its_fit():
    fit = _fit("not_converged", ("boundary",))
    assert fit.statuses == ("not_converged", "boundary")
    t = nc.targets.posterior(None, fit)
    assert t.status == "not_converged"
    assert t.statuses == ("not_converged", "boundary")
    assert t.message.startswith("built from an annotator fit whose statuses "
                                "'not_converged', 'boundary': the iteration limit")
    assert repr(t).endswith("statuses=('not_converged', 'boundary'))")
    assert "statuses not_converged, boundary" in t._repr_html_()
    assert t[[0, 1]].statuses == t.statuses  # a split keeps them


def test_an_estimate_from_a_not_converged_fit_outside_its_interval_lists_both():
    t = nc.targets.posterior(None, _fit("not_converged"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        own = Estimate("ECE", 0.05, (0.01, 0.04), 0.9, "bootstrap", "percentile", n=6)
    est = with_target_status(own, t)
    assert est.statuses == ("target_not_converged", "estimate_outside_interval")
    assert est.status == est.statuses[0]
    assert "the target is not reliable" in est.message
    assert "does not contain the estimate" in est.message


def test_a_metric_against_a_target_with_several_statuses_carries_them_all():
    t = nc.targets.posterior(None, _fit("not_converged", ("small_gap", "boundary")))
    probs = np.array([0.2, 0.7, 0.1, 0.6, 0.5, 0.55])
    est = nc.brier(probs, t, interval=None)
    assert est.statuses[:3] == ("target_not_converged", "target_small_gap",
                                "target_boundary")
    assert est.status == "target_not_converged"


def test_a_corrected_target_clears_small_gap_but_keeps_the_fits_other_statuses():
    ann = nc.Annotations.from_wide(WIDE)
    only_gap = nc.targets.corrected(ann, _fit("small_gap"))
    assert (only_gap.status, only_gap.statuses) == ("ok", ("ok",))
    t = nc.targets.corrected(ann, _fit("small_gap", ("boundary",)))
    assert t.statuses == ("boundary",)
    assert "statuses 'small_gap', 'boundary'" in t.message


def test_a_rejected_noise_check_is_kept_beside_the_fits_statuses():
    from noisycal.annotators.checks.noise_check import REJECTED, NoiseCheck
    from noisycal.annotators.checks.noise_target import with_noise_check

    t = nc.targets.posterior(None, _fit("boundary"))
    check = NoiseCheck(9.0, 1, 0.001, "lrt", 0.05, REJECTED,
                       "rejects class-conditional noise", pd.DataFrame())
    out = with_noise_check(t, check)
    assert out.statuses == ("boundary", REJECTED) and out.status == "boundary"
    assert "it was also built under class-conditional noise" in out.message
