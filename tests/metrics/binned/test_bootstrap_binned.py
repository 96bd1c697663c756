"""The binned bootstrap of the binned metrics against the exact item bootstrap.

The binned scheme draws the cell counts exactly (one multinomial over cells) and, given
its count, a large cell's sums from the normal with their exact conditional mean and
covariance; small cells are drawn item by item. These tests check the parts that are
exact (counts, constant statistics, unbiasedness) by hand, and the interval endpoints
against the exact bootstrap within Monte-Carlo error on fixed seeded cases.
"""

from __future__ import annotations

import numpy as np
import pytest
from replicate_checks import LEVEL, N_BOOT, agree, probs_labels

import noisycal as nc
from noisycal.metrics.binned.bins import group_scores, make_binned
from noisycal.metrics.binned.bootstrap import (
    NORMAL_FROM,
    binned_replicate_stats,
    cell_plan,
)

# These tests compare replicate distributions; a percentile interval of a near-calibrated
# ECE that misses its own estimate (status 'estimate_outside_interval') is not their point.
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*does not contain the estimate:noisycal.NumericalWarning")


def _both(*args: object, **kw: object) -> tuple[nc.Estimate, nc.Estimate]:
    fn = kw.pop("fn", nc.ece)
    common = dict(level=LEVEL)
    common.update(kw)
    ex = fn(*args, interval=nc.intervals.Bootstrap(n_boot=N_BOOT, scheme="exact"), seed=1,
            **common)
    bi = fn(*args, interval=nc.intervals.Bootstrap(n_boot=N_BOOT, scheme="binned"), seed=2,
            **common)
    assert ex.details["bootstrap"] == "exact" and bi.details["bootstrap"] == "binned"
    assert bi.value == pytest.approx(ex.value, abs=1e-12)
    return ex, bi


@pytest.mark.parametrize("case", ["near_calibrated", "badly_calibrated", "sparse_bins"])
def test_endpoints_match_exact_hard_labels(case: str) -> None:
    temp = {"near_calibrated": 1.0, "badly_calibrated": 2.5, "sparse_bins": 4.0}[case]
    P, y = probs_labels(3000, 4, temp, seed=11)
    ex, bi = _both(P, y, n_bins=15)
    ok, msg = agree(ex.replicates, bi.replicates)
    assert ok, msg
    plan = cell_plan(make_binned(*group_scores(P, np.eye(4)[y], "top_label")[:2], 15,
                                 "uniform", with_sq=False))
    assert plan.split
    if case == "sparse_bins":  # both kinds of cell are exercised
        assert plan.small_data.shape[0] > 0 and plan.mean.shape[0] > 0


def test_endpoints_match_exact_soft_target_and_l2_debiased() -> None:
    P, _ = probs_labels(3000, 3, 1.6, seed=5)
    rng = np.random.default_rng(6)
    T = rng.dirichlet(np.ones(3) * 0.7, size=P.shape[0]) * 0.5 + 0.5 * P
    for kw in ({}, {"norm": "l2", "debias": True}):
        ex, bi = _both(P, T, n_bins=10, **kw)
        ok, msg = agree(ex.replicates, bi.replicates)
        assert ok, f"{kw}: {msg}"


def test_endpoints_match_exact_mce_binary() -> None:
    rng = np.random.default_rng(3)
    p = rng.beta(2, 2, size=4000)
    y = (rng.random(4000) < p**1.5).astype(int)
    ex, bi = _both(p, y, n_bins=10, fn=nc.mce)
    ok, msg = agree(ex.replicates, bi.replicates)
    assert ok, msg


def test_agreement_check_detects_a_wrong_cell_noise() -> None:
    """The tolerance is tight enough: tripling the within-cell noise is detected."""
    P, _ = probs_labels(5000, 3, 1.6, seed=5)
    T = np.random.default_rng(6).dirichlet(np.ones(3) * 0.3, size=5000)
    binned = make_binned(*group_scores(P, T, "top_label")[:2], 10, "uniform", with_sq=False)
    plan = cell_plan(binned)
    assert not plan.split and plan.mean.shape[0] > 0
    ok_stats = binned_replicate_stats(plan, 5000, 10, N_BOOT, np.random.default_rng(0))
    bad_stats = binned_replicate_stats(plan._replace(root=3 * plan.root), 5000, 10, N_BOOT,
                                       np.random.default_rng(1))

    def ece_of(stats: np.ndarray) -> np.ndarray:
        return np.abs(stats[:, :, 2] - stats[:, :, 1]).sum(axis=1) / 5000

    ex = nc.ece(P, T, n_bins=10, interval=nc.intervals.Bootstrap(n_boot=N_BOOT, scheme="exact"),
                seed=3)
    assert agree(ex.replicates, ece_of(ok_stats))[0]
    assert not agree(ex.replicates, ece_of(bad_stats))[0]


def test_replicate_stats_exact_parts_by_hand() -> None:
    # three bins; bin 0 holds 300 correct items at confidence 0.05 (one large cell, no
    # spread), bin 1 holds 5 items (small), bin 2 holds 250 incorrect items at 0.9 and
    # 250 correct ones spread over [0.8, 1]
    conf = np.r_[np.full(300, 0.05), np.linspace(0.4, 0.6, 5), np.full(250, 0.9),
                 np.linspace(0.8, 1.0, 250)]
    t = np.r_[np.ones(300), [0, 1, 1, 0, 1], np.zeros(250), np.ones(250)]
    binned = make_binned(conf[:, None], t[:, None, None], 3, "uniform", with_sq=False)
    plan = cell_plan(binned)
    assert plan.split and plan.mean.shape[0] == 3 and plan.small_data.shape[0] == 5
    np.testing.assert_allclose(plan.prob, [300 / 805, 250 / 805, 250 / 805, 5 / 805])
    stats = binned_replicate_stats(plan, 805, 3, 4000, np.random.default_rng(0))
    cnt = stats[:, :, 0]
    np.testing.assert_array_equal(cnt.sum(axis=1), 805)           # n items per replicate
    np.testing.assert_array_equal(cnt, np.round(cnt))
    np.testing.assert_allclose(stats[:, 0, 1], 0.05 * cnt[:, 0], rtol=1e-12)  # no spread
    np.testing.assert_array_equal(stats[:, 0, 2], cnt[:, 0])      # all correct
    np.testing.assert_array_equal(stats[:, 2, 2], np.round(stats[:, 2, 2]))  # count of correct
    # unbiased: E[sums] = n * (sample sums / n); Monte-Carlo error about 4000**-0.5
    sample = np.stack([np.bincount(binned.bins[0], weights=binned.data[0, :, c], minlength=3)
                       for c in range(3)], axis=1)
    se = stats.std(axis=0) / np.sqrt(4000)
    assert np.all(np.abs(stats.mean(axis=0) - sample) <= 4 * se + 1e-12)
    # the multinomial's bin-count variances n p (1 - p)
    p = np.array([300, 5, 500]) / 805
    np.testing.assert_allclose(cnt.var(axis=0), 805 * p * (1 - p), rtol=0.1)


def test_all_small_cells_is_item_resampling() -> None:
    """With every cell below the normal threshold, each replicate is n item draws."""
    P, y = probs_labels(150, 3, 1.5, seed=2)
    binned = make_binned(*group_scores(P, np.eye(3)[y], "top_label")[:2], 5, "uniform",
                         with_sq=False)
    assert binned.data.shape[1] < NORMAL_FROM
    plan = cell_plan(binned)
    assert plan.mean.shape[0] == 0 and plan.small_data.shape[0] == 150
    stats = binned_replicate_stats(plan, 150, 5, 50, np.random.default_rng(0))
    np.testing.assert_array_equal(stats[:, :, 0].sum(axis=1), 150)
    # every replicate's sums are sums of whole items: target sums are integers and the
    # confidence sum of a bin is a sum of that bin's confidences with integer weights
    np.testing.assert_array_equal(stats[:, :, 2], np.round(stats[:, :, 2]))


def test_scheme_choice_and_refusals() -> None:
    P, y = probs_labels(400, 3, 1.5, seed=1)
    boot = nc.intervals.Bootstrap(n_boot=50)
    binned = nc.intervals.Bootstrap(n_boot=50, scheme="binned")
    assert nc.ece(P, y, interval=boot).details["bootstrap"] == "binned"
    assert nc.ece(P, y, kind="classwise", interval=boot).details["bootstrap"] == "exact"
    clusters = np.arange(400) // 2
    assert nc.ece(P, y, cluster=clusters, interval=boot).details["bootstrap"] == "exact"
    with pytest.raises(ValueError, match=r"Bootstrap\(scheme='binned'\)"):
        nc.ece(P, y, cluster=clusters, interval=binned)
    with pytest.raises(ValueError, match=r"Bootstrap\(scheme='binned'\)"):
        nc.ece(P, y, kind="classwise", interval=binned)
    with pytest.raises(ValueError, match="scheme"):  # the option refuses rebin with it
        nc.intervals.Bootstrap(n_boot=50, scheme="binned", rebin=True)
    with pytest.raises(ValueError, match="scheme"):
        nc.intervals.Bootstrap(n_boot=50, scheme="bayesian")
    with pytest.raises(ValueError, match=r"Bootstrap\(scheme='binned'\)"):
        nc.true_label_ece(P, np.eye(3)[y], form="mc", n_draws=3, interval=binned)
    # same seed, same replicates
    a = nc.ece(P, y, seed=4, interval=boot)
    b = nc.ece(P, y, seed=4, interval=boot)
    np.testing.assert_array_equal(a.replicates, b.replicates)


def test_a_bootstrap_scheme_belongs_to_the_bootstrap_option():
    # the scheme is a field of nc.intervals.Bootstrap: no other interval can receive it,
    # and the old keyword is gone
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=200)
    y = rng.integers(0, 3, 200)
    for scheme in ("exact", "binned"):
        with pytest.raises(TypeError, match="bootstrap"):
            nc.ece(P, y, bootstrap=scheme)
        with pytest.raises(TypeError, match="scheme"):
            nc.intervals.Inversion(scheme=scheme)
    assert np.isfinite(float(nc.ece(P, y, interval=None)))
