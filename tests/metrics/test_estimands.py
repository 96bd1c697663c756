"""Every Estimate names its estimand and estimator, and an estimate outside its own interval
is flagged (noisycal.intervals.estimate)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.intervals.estimate import OUTSIDE_ATOL, outside_interval


def _binary(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    return p, (rng.random(n) < p**1.3).astype(int)


def _multi(n: int = 300, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sim = nc.simulate.classifier(n, 3, temperature=0.7, n_annotators=4, seed=seed)
    return sim.probs, sim.labels, sim.counts / 4.0


def _option(interval, auto=None):
    """The interval option of a name, with 100 replicates or simulated draws."""
    if interval == "auto":
        return auto(n_boot=100)
    return nc.intervals.Bootstrap(n_boot=100) if interval == "bootstrap" else interval


def _calls() -> list[tuple[str, object]]:
    p, y = _binary()
    P, lab, S = _multi()
    inv, sim = nc.intervals.Inversion, nc.intervals.Simultaneous
    out = []
    for interval in ("auto", "bootstrap", None):
        out += [(f"ece-{interval}", lambda i=interval: nc.ece(p, y, interval=_option(i, inv))),
                (f"mce-{interval}", lambda i=interval: nc.mce(P, lab, n_bins=5,
                                                              interval=_option(i, sim))),
                (f"smooth_ece-{interval}",
                 lambda i=interval: nc.smooth_ece(p, y, interval=_option(i, inv))),
                (f"cmce-{interval}", lambda i=interval: nc.cmce(P, lab,
                                                                interval=_option(i, inv)))]
    for interval in ("bootstrap", "wald", None):
        out += [(f"brier-{interval}", lambda i=interval: nc.brier(P, S,
                                                                  interval=_option(i))),
                (f"brier-binary-{interval}",
                 lambda i=interval: nc.brier(p, y, interval=_option(i))),
                (f"nll-{interval}", lambda i=interval: nc.nll(P, lab, interval=_option(i))),
                (f"slope-{interval}",
                 lambda i=interval: nc.calibration_slope(p, y, interval=_option(i))),
                (f"intercept-{interval}",
                 lambda i=interval: nc.calibration_intercept(P, S, interval=_option(i)))]
    out += [("ece-classwise-l2", lambda: nc.ece(P, S, kind="classwise", norm="l2")),
            ("true_label_ece-mc", lambda: nc.true_label_ece(
                P, S, n_draws=5, interval=nc.intervals.Bootstrap(n_boot=100))),
            ("true_label_ece-expected", lambda: nc.true_label_ece(P, S, form="expected")),
            ("brier-expected", lambda: nc.brier(P, S, variant="expected",
                                                interval=nc.intervals.Bootstrap(n_boot=100))),
            ("brier-affine", lambda: nc.brier(p, _affine(y),
                                              interval=nc.intervals.Bootstrap(n_boot=100))),
            ("nll-soft", lambda: nc.nll(P, S, interval=nc.intervals.Bootstrap(n_boot=100))),
            # statuses other than 'ok' name them too
            ("slope-undefined", lambda: nc.calibration_slope(p, np.ones(300, int))),
            ("smooth-degenerate", lambda: nc.smooth_ece(p, p)),
            ("mce-no-bins", lambda: nc.mce(P[:30], lab[:30], n_bins=15))]
    return out



def _affine(y):
    """A noise-corrected binary target (entries -0.2 and 1.2), declared as such."""
    t = 1.4 * y - 0.2
    return nc.targets.from_matrix(np.column_stack([1 - t, t]), kind="corrected")


CALLS = _calls()


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[name for name, _ in CALLS])
def test_every_metric_names_its_estimand_and_estimator(call):
    with warnings.catch_warnings():  # degenerate cases and bootstraps warn: not the point
        warnings.simplefilter("ignore", nc.NumericalWarning)
        est = call()
    assert isinstance(est, nc.Estimate)
    assert est.estimand.startswith("population") or est.estimand.startswith("calibration")
    assert len(est.estimand) > 30 and est.estimator in (
        "plug-in", "median-unbiased", "debiased", "MLE (GLM)"), (est.estimand, est.estimator)


def test_estimand_texts_say_what_differs():
    p, y = _binary()
    P, lab, S = _multi()
    assert "E[||p - T||^2]" in nc.brier(P, S, interval=None).estimand
    assert "clean labels" in nc.brier(p, _affine(y), interval=None).estimand
    assert "cross-entropy" in nc.nll(P, S, interval=None).estimand
    slope = nc.calibration_slope(P, lab, interval=None)
    assert "b of the population logistic fit" in slope.estimand and "top-label" in \
        slope.estimand and slope.estimator == "MLE (GLM)"
    assert "slope fixed at 1" in nc.calibration_intercept(p, y, interval=None).estimand
    assert "at least 7 items" in nc.mce(P, lab, min_count=7, interval=None).estimand


# ----------------------------------------------------------------------------- outside


def test_outside_interval_by_hand():
    assert outside_interval(0.5, (0.2, 0.7)) == 0.0
    assert outside_interval(0.1, (0.2, 0.7)) == pytest.approx(-0.1)
    assert outside_interval(0.9, (0.2, 0.7)) == pytest.approx(0.2)
    # an end equal to the value up to rounding is inside; just beyond it is not
    assert outside_interval(0.3 - 1e-16, (0.1 + 0.2, 0.7)) == 0.0
    assert outside_interval(0.2 - 2 * OUTSIDE_ATOL - 1e-9, (0.2, 0.7)) < 0.0
    assert outside_interval(0.0, (5e-324, 1.0)) == 0.0          # open at 0
    for value, ci in ((np.nan, (0.0, 1.0)), (0.5, (np.nan, np.nan)), (0.5, None)):
        assert np.isnan(outside_interval(value, ci))


def test_an_estimate_outside_its_interval_is_flagged_once():
    with pytest.warns(nc.NumericalWarning, match=r"lies 0\.05 below it") as rec:
        est = nc.Estimate("ECE", 0.05, (0.1, 0.2), 0.9, "bootstrap", "percentile")
    assert len(rec) == 1 and rec[0].filename == __file__
    assert est.status == "estimate_outside_interval"
    assert "does not contain the estimate 0.05" in est.message
    assert "biased near a boundary" in est.message
    # re-built (dataclasses.replace) it keeps its status without warning again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = dataclasses.replace(est, estimand="x")
        assert again.status == "estimate_outside_interval"
        # other statuses, no interval, and values inside are left alone
        assert nc.Estimate("ECE", 0.05, (0.1, 0.2), status="degenerate").status == "degenerate"
        assert nc.Estimate("ECE", 0.05).status == "ok"
        assert nc.Estimate("ECE", 0.1, (0.1, 0.2), 0.9, "bootstrap").status == "ok"
    with pytest.warns(nc.NumericalWarning, match="different constructions"):
        bound = nc.Estimate("NC-ECE", 0.3, (0.0, 0.2), 0.9, "bound", "bound")
    assert bound.status == "estimate_outside_interval"
    with pytest.warns(nc.NumericalWarning, match=r"lies 0\.1 above it: the plug-in is biased"):
        nc.Estimate("ECE", 0.3, (0.0, 0.2), 0.9, "inversion", "parametric")


def test_a_metric_bootstrap_outside_its_estimate_says_so():
    # calibrated hard labels, many sparse bins: every resample's ECE is larger than the
    # sample's, so the percentile interval lies above it
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 2000)
    y = (rng.random(2000) < p).astype(int)
    with pytest.warns(nc.NumericalWarning, match="does not contain the estimate"):
        est = nc.ece(p, y, n_bins=40, interval=nc.intervals.Bootstrap(n_boot=200))
    assert est.status == "estimate_outside_interval" and est.value < est.low
