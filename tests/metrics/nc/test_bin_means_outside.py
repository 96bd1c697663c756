"""Bin means of a corrected target outside [0, 1] beyond their noise: status
'outside_parameter_space' on every binned metric (ECE, NC-ECE intervals, MCE)."""

import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.metrics.binned.bins import bin_sums, make_binned
from noisycal.metrics.binned.outside import MIN_BIN_ITEMS, OUTSIDE_LEVEL, outside_bins

OUT = "outside_parameter_space"


def channels(J, K, acc):
    c = np.full((J, K, K), (1 - acc) / (K - 1))
    c[:, np.arange(K), np.arange(K)] = acc
    return c


def design(K, n, seed, *, J=3, acc=0.7, scale=4.0):
    """Confident predictions, labels drawn from them (calibrated), J annotators with
    symmetric channels of accuracy ``acc``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, scale, size=(n, K))
    P = np.exp(z - z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = (rng.random((n, 1)) > P.cumsum(1)).sum(1)
    cum = channels(J, K, acc)[:, y].cumsum(-1)
    return P, (rng.random((J, n, 1)) > cum).sum(-1).T.astype(float)


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


@pytest.mark.parametrize("K, acc, value, plugin", [
    (2, 0.7, 0.3927192410759165, 0.4142242152083338),
    (3, 0.6, 0.31841908211907455, 0.32284248724806563),
])
def test_misspecified_channels_flag_bins_values_unchanged(K, acc, value, plugin):
    P, R = design(K, 2000, 0, acc=acc)
    T = nc.targets.corrected(R, confusion=channels(3, K, acc - 0.1))  # too noisy: amplified
    Q = P[:, 1] if K == 2 else P
    est = quiet(nc.ece, Q, T)
    # the values from before the check, unchanged (to 1e-12: the inverted interval's
    # median-unbiased value is the root of a search whose l1 restriction is solved in
    # closed form since these values were recorded, which moved it by 6e-15 relative)
    assert est.value == pytest.approx(value, rel=1e-12, abs=0)
    assert quiet(nc.ece, Q, T, interval=None).value == plugin
    assert est.statuses == (OUT,)
    found = est.details["outside_bins"]
    assert found["level"] == OUTSIDE_LEVEL == 0.05
    assert found["flagged"] and all(f["z"] > found["z"] for f in found["flagged"])
    worst = found["flagged"][-1]
    assert worst["bin"] == 14 and worst["mean"] > 1
    assert f"bin 14 of {est.details['kind']}" in est.message
    assert "nc.annotators.noise_check" in est.message
    # the MCE carries the check of the bins it is computed from
    m = quiet(nc.mce, Q, T, interval=None)
    assert m.statuses == (OUT,) and "bin 14" in m.message


@pytest.mark.parametrize("K, acc", [(2, 0.7), (3, 0.6)])
def test_correct_channels_rarely_flag(K, acc):
    """Same design with the true channels, 20 seeds: bin means do leave [0, 1] by
    chance, but none beyond the Bonferroni bound."""
    flagged = outside = 0
    for s in range(20):
        P, R = design(K, 2000, 100 + s, acc=acc)
        T = nc.targets.corrected(R, confusion=channels(3, K, acc))
        est = quiet(nc.ece, P, T, interval=None)
        flagged += OUT in est.statuses
        outside += "outside_bins" in est.details
    assert flagged == 0
    assert outside >= 3  # the check ran on bins outside [0, 1] and let them pass


def test_fitted_channels_from_another_design_flag_every_nc_path():
    """Channels fitted on noisy annotators, applied to much cleaner ones."""
    _, RA = design(2, 2000, 1, acc=0.75)
    P, RB = design(2, 2000, 2, acc=0.95)
    fit = nc.annotators.DawidSkene().fit(nc.Annotations.from_wide(RA.astype(int)))
    assert fit.status == "ok"
    T = nc.targets.corrected(nc.Annotations.from_wide(RB.astype(int)), fit)
    plain = quiet(nc.ece, P[:, 1], T, interval=None)
    assert plain.statuses == (OUT,)
    bound = quiet(nc.ece, P[:, 1], T, interval=nc.intervals.Bound())
    assert bound.statuses == (OUT, "channels_fixed")
    assert bound.value == plain.value


def test_small_and_zero_se_bins_are_not_checked():
    # bin 0: MIN_BIN_ITEMS - 1 items around -3; bin 1: MIN_BIN_ITEMS items all at 1.5
    # (SE 0); bin 2: MIN_BIN_ITEMS items spread inside [0, 1] (checked, not flagged)
    m = MIN_BIN_ITEMS
    assert m == 30
    rng = np.random.default_rng(0)
    conf = np.concatenate([np.full(m - 1, 0.05), np.full(m, 0.5), np.full(m, 0.9)])
    tgt = np.concatenate([rng.normal(-3.0, 0.1, m - 1), np.full(m, 1.5),
                          rng.uniform(0.6, 1.0, m)])
    binned = make_binned(conf[:, None], tgt[:, None, None], 3, "uniform", with_sq=False)
    found = outside_bins(binned, bin_sums(binned), ["positive_class"])
    assert found["n_outside"] == 2 and found["n_checked"] == 1
    assert found["flagged"] == []


def test_targets_in_unit_interval_are_untouched():
    P, _ = design(2, 500, 3)
    y = (P[:, 1] > 0.5).astype(int)
    est = nc.ece(P[:, 1], y, interval=None)
    assert est.statuses == ("ok",) and "outside_bins" not in est.details
