"""CMCE, coverage windows and HPR sets ("Adaptive Set-Mass Calibration with Conformal
Prediction", Section 2): hand cases, the brute-force definition, chunk invariance,
consistency on the Gaussian-grid generator and the distribution-calibration proposition."""

import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.metrics import coverage_window, hpr_coverage, hpr_sets
from noisycal.metrics.set_mass import prefix_bin_stats


def _brute(P, T, n_bins, weighted=True):
    """CMCE straight from its definition: loop over every (item, t) pair."""
    pairs = []
    n, K = P.shape
    for i in range(n):
        order = sorted(range(K), key=lambda k: (-P[i, k], k))
        m = c = 0.0
        for t in range(K):
            m += P[i, order[t]]
            c += T[i, order[t]]
            pairs.append((min(max(m, 0.0), 1.0), c))
    cnt = np.zeros(n_bins)
    sm = np.zeros(n_bins)
    sc = np.zeros(n_bins)
    for m, c in pairs:
        b = min(int(np.searchsorted(np.arange(1, n_bins) / n_bins, m, side="right")),
                n_bins - 1)
        cnt[b] += 1
        sm[b] += m
        sc[b] += c
    ok = cnt > 0
    gap = np.abs(sc[ok] / cnt[ok] - sm[ok] / cnt[ok])
    if weighted:
        return float(np.sum(cnt[ok] * gap) / len(pairs))
    return float(np.mean(gap))


def test_hand_case():
    # row 1, label 0: masses 0.5, 0.75, 1 all covered; row 2, label 1: 0.75 (not
    # covered), 1, 1. Four bins: bin 2 holds (0.5, 1); bin 3 holds masses
    # 0.75, 1, 0.75, 1, 1 (mean 0.9) with coverage 4/5. CMCE = (1*0.5 + 5*0.1)/6 = 1/6.
    P = np.array([[0.5, 0.25, 0.25], [0.75, 0.25, 0.0]])
    est = nc.cmce(P, [0, 1], n_bins=4, interval=None)
    assert float(est) == pytest.approx(1 / 6, abs=1e-15)
    assert est.bins["count"].tolist() == [0, 0, 1, 5]
    assert est.bins["mean_target"].iloc[3] == pytest.approx(0.8)
    unw = nc.cmce(P, [0, 1], n_bins=4, interval=None, weighted=False)
    assert float(unw) == pytest.approx((0.5 + 0.1) / 2, abs=1e-15)


def test_float_sum_below_edge_stays_in_lower_bin():
    # 0.6 + 0.3 = 0.8999999999999999 < 0.9 in floating point: bin 8 of 10, while
    # 0.5 + 0.4 = 0.9 exactly is in bin 9 ([lo, hi), last bin closed)
    P = np.array([[0.6, 0.3, 0.1], [0.5, 0.4, 0.1]])
    est = nc.cmce(P, [0, 1], n_bins=10, interval=None)
    assert est.bins["count"].tolist() == [0, 0, 0, 0, 0, 1, 1, 0, 1, 3]
    assert float(est) == pytest.approx((0.5 + 0.4 + 0.1 + 3 * (1 - 2.9 / 3)) / 6)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [True, False])
def test_matches_brute_force(seed, weighted):
    rng = np.random.default_rng(seed)
    n, K = 40, 6
    P = rng.dirichlet(np.full(K, 0.7), size=n)
    P[0] = [0.25, 0.25, 0.25, 0.25, 0.0, 0.0]  # ties and zeros
    y = rng.integers(0, K, n)
    y[0] = 2
    hard = np.eye(K)[y]
    soft = rng.dirichlet(np.ones(K), size=n)
    for T, target in ((hard, y), (soft, soft)):
        got = float(nc.cmce(P, target, n_bins=7, weighted=weighted, interval=None))
        assert got == pytest.approx(_brute(P, T, 7, weighted), abs=1e-13)


def test_label_fast_path_equals_sorted_path_with_ties():
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(5), size=30)
    P[:10] = np.array([0.3, 0.3, 0.2, 0.2, 0.0])
    y = rng.integers(0, 5, 30)
    a = prefix_bin_stats(P, y, None, 9)
    b = prefix_bin_stats(P, None, np.eye(5)[y], 9)
    np.testing.assert_array_equal(a, b)


def test_chunk_invariance():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.full(8, 0.5), size=203)
    y = rng.integers(0, 8, 203)
    soft = rng.dirichlet(np.ones(8), size=203)
    for target in (y, soft):
        ref = nc.cmce(P, target, interval=None)
        for chunk in (1, 7, 64, 1000):
            got = nc.cmce(P, target, interval=None, chunk_size=chunk)
            assert float(got) == float(ref)
            np.testing.assert_array_equal(got.bins["count"], ref.bins["count"])
    assert coverage_window(P, y, 0.5, 0.9, chunk_size=3) == coverage_window(P, y, 0.5, 0.9)


def test_logits_and_probs_agree_and_binary_1d():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(100, 4)) * 2
    P = np.exp(Z) / np.exp(Z).sum(1, keepdims=True)
    y = rng.integers(0, 4, 100)
    assert float(nc.cmce(logits=Z, target=y, interval=None)) == pytest.approx(
        float(nc.cmce(P, y, interval=None)), abs=1e-12)
    p = rng.random(50)
    yb = (rng.random(50) < p).astype(int)
    assert float(nc.cmce(p, yb, interval=None)) == pytest.approx(
        float(nc.cmce(np.column_stack([1 - p, p]), yb, interval=None)), abs=1e-15)


def test_bounded_and_intervals_by_item():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.full(5, 0.3), size=400)
    y = rng.integers(0, 5, 400)
    inv = nc.cmce(P, y, seed=0)
    boot = nc.cmce(P, y, interval=nc.intervals.Bootstrap(n_boot=200), seed=0)
    assert 0 <= inv.details["plugin"] <= 1
    assert inv.low <= float(inv) <= inv.high
    assert boot.low <= float(boot) <= boot.high
    assert inv.n == boot.n == 400 and inv.details["n_sets"] == 2000
    # a cluster per item is the item bootstrap itself (same replicate weights per item)
    per_item = nc.cmce(P, y, interval=nc.intervals.Bootstrap(n_boot=200), seed=0,
                       cluster=np.arange(400))
    assert per_item.interval == pytest.approx(boot.interval, rel=1e-12)
    # the item (not the pair) is the unit: duplicating every item into a cluster of two
    # leaves the value and shrinks nothing
    P2, y2 = np.repeat(P, 2, axis=0), np.repeat(y, 2)
    dup = nc.cmce(P2, y2, seed=0, cluster=np.repeat(np.arange(400), 2))
    assert dup.details["plugin"] == pytest.approx(inv.details["plugin"], abs=1e-14)
    assert (dup.high - dup.low) == pytest.approx(inv.high - inv.low, rel=0.15)


def test_true_distribution_cmce_shrinks_with_n():
    # spec-style consistency check: P = p(y | x) exactly gives CMCE -> 0, an
    # over-confident noisy model stays away from 0
    vals, model = [], []
    for n in (500, 8000):
        reps_t, reps_m = [], []
        for r in range(3):
            g = nc.simulate.gaussian_grid(n, 9, seed=100 * r + n)
            reps_t.append(float(nc.cmce(g.true_probs, g.labels, interval=None)))
            rng = np.random.default_rng(r)
            z = 2.5 * g.true_logits + rng.normal(size=g.true_logits.shape)
            reps_m.append(float(nc.cmce(logits=z, target=g.labels, interval=None)))
        vals.append(np.mean(reps_t))
        model.append(np.mean(reps_m))
    assert vals[1] < vals[0] / 2
    assert vals[1] < 0.003
    assert min(model) > vals[0] and min(model) > 5 * vals[1]  # spec: below the model
    # with the exact distributions as the target the coverage equals the mass pairwise
    g = nc.simulate.gaussian_grid(300, 9, seed=0)
    assert float(nc.cmce(g.true_probs, g.true_probs, interval=None)) == pytest.approx(
        0.0, abs=1e-12)


def test_distribution_calibration_implies_cumulative_mass_calibration():
    # P distribution-calibrated: y ~ Categorical(P). Then P(Y in HPR_{1-a}) = E sum_HPR P
    # >= 1 - a (the necessity proposition); checked exactly with the soft target P and
    # by simulation with drawn labels, for several alpha.
    rng = np.random.default_rng(4)
    n, K = 20000, 6
    P = rng.dirichlet(np.full(K, 0.6), size=n)
    y = (P.cumsum(1) > rng.random((n, 1))).argmax(1)
    for alpha in (0.01, 0.05, 0.1, 0.3, 0.5):
        exact = hpr_coverage(P, P, alpha)
        assert exact >= 1 - alpha - 1e-12
        sim = hpr_coverage(P, y, alpha)
        se = np.sqrt(exact * (1 - exact) / n)
        assert abs(sim - exact) < 4 * se + 1e-12
        assert sim >= 1 - alpha - 4 * se
    # the one-sidedness remark: always right but only 0.5 on the top class passes too
    under = np.tile([0.5, 0.3, 0.2], (100, 1))
    assert hpr_coverage(under, np.zeros(100, int), 0.3) == 1.0


def test_hpr_tolerance_and_edges():
    row = np.array([[0.45, 0.45, 0.1]]) * (0.8999999999999999 / 0.9)
    row[0, 2] = 1 - row[0, :2].sum()
    assert row[0, :2].sum() < 0.9
    assert hpr_sets(row, 0.1).tolist() == [[True, True, False]]
    assert hpr_sets(row, 0.1, tol=0.0).tolist() == [[True, True, True]]
    P = np.array([[0.2, 0.5, 0.3]])
    assert hpr_sets(P, 1.0).tolist() == [[False, True, False]]
    assert hpr_sets(P, 0.0).sum() == 3


def test_coverage_window_hand_and_empty():
    P = np.array([[0.5, 0.25, 0.25], [0.75, 0.25, 0.0]])
    # sets with mass in [0.7, 0.8]: row 1 t=2 (covered), row 2 t=1 (not covered)
    assert coverage_window(P, [0, 1], 0.7, 0.8) == 0.5
    assert coverage_window(P, [0, 1], 1.0, 1.0) == 1.0
    with pytest.warns(nc.NumericalWarning, match="no nested"):
        assert np.isnan(coverage_window(P, [0, 1], 0.8, 0.9))
    with pytest.raises(ValueError, match="lo"):
        coverage_window(P, [0, 1], 90, 92)


def test_soft_target_is_expected_indicator():
    rng = np.random.default_rng(6)
    P = rng.dirichlet(np.ones(4), size=50)
    soft = rng.dirichlet(np.ones(4), size=50)
    # CMCE is a function of per-bin sums linear in the target: the soft-target per-bin
    # coverage is the mean over label draws of the hard-label coverage
    ref = nc.cmce(P, soft, interval=None).bins["mean_target"].to_numpy()
    many = np.zeros_like(ref)
    R = 400
    for _ in range(R):
        yy = (soft.cumsum(1) > rng.random((50, 1))).argmax(1)
        many += nc.cmce(P, yy, interval=None).bins["mean_target"].to_numpy()
    ok = np.isfinite(ref)
    np.testing.assert_allclose(many[ok] / R, ref[ok], atol=0.03)


def test_target_status_travels():
    P = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]] * 5)
    t = nc.targets.from_matrix(np.eye(2)[[0, 1, 1, 1] * 5])
    ok = nc.cmce(P, t, interval=None)
    assert ok.status == "ok"
    bad = nc.targets.Target(t.values, "posterior", status="not_converged",
                            message="EM stopped early")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = nc.cmce(P, bad, interval=None)
    assert est.status == "target_not_converged" and "EM stopped early" in est.message
    assert float(est) == float(ok)  # the value is computed, the failure travels with it


def test_degenerate_interval_reported():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = nc.cmce(np.array([[0.7, 0.3]]), [0], n_bins=10)
    assert est.status == "degenerate" and est.interval is None
