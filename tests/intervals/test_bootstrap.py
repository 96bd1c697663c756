"""Bootstrap intervals: determinism, cluster resampling, interval rules, coverage."""


import numpy as np
import pytest
from scipy import stats as sps

import jax.numpy as jnp

import noisycal as nc
from noisycal.intervals import interval_from_replicates


def test_same_seed_same_result_and_seeds_differ():
    sim = nc.simulate.classifier(600, 4, seed=0)
    a = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=100), seed=5)
    b = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=100), seed=5)
    c = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=100), seed=6)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert a.interval == b.interval
    assert not np.array_equal(a.replicates, c.replicates)
    assert a.n_boot == 100 and a.level == 0.9 and a.kind == "bootstrap"
    assert a.method == "percentile"


def test_batch_size_does_not_change_replicates():
    sim = nc.simulate.classifier(300, 3, seed=1)
    a = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=40, batch_size=1),
               seed=2)
    b = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=40, batch_size=40),
               seed=2)
    np.testing.assert_allclose(a.replicates, b.replicates, rtol=1e-12)


def test_cluster_bootstrap_of_duplicated_rows_equals_item_bootstrap():
    # every item appears twice; resampling clusters of the duplicated data draws the
    # same clusters as resampling items of the de-duplicated data (same key), so the
    # replicate ECEs coincide exactly (with the exact item bootstrap: the binned one
    # draws its replicates differently, tests/metrics/binned/test_bootstrap_binned.py).
    sim = nc.simulate.classifier(250, 3, seed=3)
    P2 = np.repeat(sim.probs, 2, axis=0)
    y2 = np.repeat(sim.labels, 2)
    cl = np.repeat(np.arange(250), 2)
    a = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=60, scheme="exact"),
               seed=4)
    b = nc.ece(P2, y2, interval=nc.intervals.Bootstrap(n_boot=60), seed=4, cluster=cl)
    np.testing.assert_allclose(a.replicates, b.replicates, rtol=1e-10)
    # rows resampled independently ignore the duplication: a narrower interval
    c = nc.ece(P2, y2, interval=nc.intervals.Bootstrap(n_boot=400), seed=4)
    d = nc.ece(P2, y2, interval=nc.intervals.Bootstrap(n_boot=400), seed=4, cluster=cl)
    assert (c.high - c.low) < 0.85 * (d.high - d.low)


def test_replicates_match_a_numpy_reference_bootstrap():
    # same distribution as the straightforward resample-and-recompute loop
    sim = nc.simulate.binary_scores(1000, slope=0.6, seed=7)
    est = nc.ece(sim.p, sim.y, n_bins=10, interval=nc.intervals.Bootstrap(n_boot=2000), seed=1)
    rng = np.random.default_rng(0)
    ref = []
    for _ in range(2000):
        i = rng.integers(0, 1000, 1000)
        ref.append(float(nc.ece(sim.p[i], sim.y[i], n_bins=10, interval=None)))
    ref = np.asarray(ref)
    assert np.mean(est.replicates) == pytest.approx(ref.mean(), abs=0.002)
    assert np.std(est.replicates) == pytest.approx(ref.std(), rel=0.1)


def test_interval_rules_by_hand():
    reps = np.arange(1, 101, dtype=float)  # 1..100
    (lo, hi), st, _ = interval_from_replicates(40.0, reps, 0.9, "percentile")
    assert (lo, hi) == (pytest.approx(np.quantile(reps, 0.05)),
                        pytest.approx(np.quantile(reps, 0.95)))
    (blo, bhi), _, _ = interval_from_replicates(40.0, reps, 0.9, "basic")
    assert blo == pytest.approx(80 - hi) and bhi == pytest.approx(80 - lo)
    # BCa with zero acceleration and theta at the median reduces to the percentile
    jack = np.ones(10)
    (clo, chi), _, _ = interval_from_replicates(50.7, reps, 0.9, "bca", jack)
    assert clo == pytest.approx(lo, abs=0.1) and chi == pytest.approx(hi, abs=0.1)
    with pytest.warns(nc.NumericalWarning, match="one side"):
        _, st, msg = interval_from_replicates(0.0, reps, 0.9, "bca", jack)
    assert st == "bca_degenerate" and "percentile" in msg
    with pytest.warns(nc.NumericalWarning, match="not finite"):
        _, st, _ = interval_from_replicates(1.0, np.array([1.0, np.inf]), 0.9, "percentile")
    assert st == "nonfinite"
    # every replicate equal (one item, no variation): no interval, status says why
    with pytest.warns(nc.NumericalWarning, match="replicates are equal"):
        ci, st, msg = interval_from_replicates(0.3, np.full(50, 0.3), 0.9, "percentile")
    assert st == "degenerate" and np.isnan(ci[0]) and np.isnan(ci[1])


def test_bca_differs_from_percentile_on_skewed_statistic():
    sim = nc.simulate.classifier(400, 4, seed=8)
    pct = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=500), seed=0)
    bca = nc.ece(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=500, method="bca"),
                 seed=0)
    np.testing.assert_array_equal(pct.replicates, bca.replicates)
    assert bca.interval != pct.interval
    assert bca.status == "ok"


def test_generic_bootstrap_of_a_mean_matches_normal_theory():
    rng = np.random.default_rng(2)
    x = rng.normal(1.0, 2.0, size=4000)
    from noisycal.metrics.scores import weighted_mean

    est = nc.bootstrap(weighted_mean, x, n_boot=2000, level=0.9, seed=3)
    assert float(est) == pytest.approx(x.mean(), rel=1e-12)
    half = sps.norm.ppf(0.95) * x.std(ddof=1) / np.sqrt(x.size)
    assert (est.high - est.low) / 2 == pytest.approx(half, rel=0.08)
    bca = nc.bootstrap(weighted_mean, x, n_boot=2000, level=0.9, seed=3, method="bca")
    assert bca.low == pytest.approx(est.low, abs=0.02)


def _skewed_stat(w, x):
    return jnp.sum(w * x**3) / jnp.sum(w)


def test_generic_bootstrap_bca_jackknife_groups():
    # with more units than max_jackknife_groups the acceleration uses blocks
    x = np.random.default_rng(3).exponential(size=3000)
    a = nc.bootstrap(_skewed_stat, x, n_boot=300, seed=1, method="bca")
    b = nc.bootstrap(_skewed_stat, x, n_boot=300, seed=1, method="bca",
                     max_jackknife_groups=3000)
    assert a.interval == pytest.approx(b.interval, rel=0.05)


def test_per_bin_intervals_bracket_bin_means():
    sim = nc.simulate.binary_scores(3000, slope=0.7, seed=9)
    est = nc.ece(sim.p, sim.y, n_bins=10, interval=nc.intervals.Bootstrap(n_boot=300), seed=2)
    b = est.bins
    assert {"low", "high"} <= set(b.columns)
    ok = b["count"] > 30
    assert (b.loc[ok, "low"] <= b.loc[ok, "mean_target"] + 1e-12).all()
    assert (b.loc[ok, "high"] >= b.loc[ok, "mean_target"] - 1e-12).all()
    # roughly binomial width: 2 * 1.645 * sqrt(q(1-q)/n_b)
    q, nb = b.loc[ok, "mean_target"], b.loc[ok, "count"]
    width = b.loc[ok, "high"] - b.loc[ok, "low"]
    # rtol 0.35: an order-of-magnitude check. The widths are quantile differences of 300
    # replicates (Monte-Carlo error ~10%) and the binomial formula ignores the spread of
    # the true probability within a bin; the exact interval rules are checked by hand above
    np.testing.assert_allclose(width, 2 * 1.645 * np.sqrt(q * (1 - q) / nb), rtol=0.35)


def test_repr_and_frame():
    PA = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    est = nc.ece(PA, [0, 1, 1], n_bins=10, interval=nc.intervals.Bootstrap(n_boot=50))
    text = repr(est)
    assert text.startswith("ECE 0.4000 [") and "90% bootstrap (percentile)" in text
    assert est.to_frame().shape[0] == 10
    assert float(est) == 0.4
    # Brier: (.01 + .01) + (.64 + .64) + (.09 + .09) = 1.48 over 3 items
    s = nc.brier(PA, [0, 1, 1], interval=None)
    assert repr(s) == "Brier 0.4933"
    assert s.to_frame().loc[0, "value"] == pytest.approx(1.48 / 3, abs=1e-12)


@pytest.mark.slow
def test_bootstrap_coverage_of_population_binned_ece():
    """90% percentile intervals cover the population binned ECE in 0.85-0.95 of runs.

    Scenario: p ~ U(0, 1), P(Y = 1 | p) = expit(0.6 + logit(p)) (underconfident on the
    positive class everywhere), n = 4000, 10 equal-width bins. Population ECE by
    numerical integration.
    """
    kw = dict(intercept=0.6, slope=1.0)
    pop = nc.simulate.population_binned_ece(10, **kw)
    reps = 400
    hits = 0
    for r in range(reps):
        sim = nc.simulate.binary_scores(4000, seed=1000 + r, **kw)
        est = nc.ece(sim.p, sim.y, n_bins=10, interval=nc.intervals.Bootstrap(n_boot=400), seed=r)
        hits += est.low <= pop <= est.high
    coverage = hits / reps
    print(f"population ECE {pop:.5f}; coverage {coverage:.3f} over {reps} replications")
    # nominal 0.9; 400 replications give a Monte-Carlo SE of 0.015, so +-0.05 is ~3 SE
    assert 0.85 <= coverage <= 0.95


def test_multinomial_counts_is_the_one_bootstrap_draw():
    """engines.resample.multinomial_counts: n draws with replacement over n units; the
    item weights of resample_weights are exactly its draw."""
    import jax
    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.engines.em.resample import multinomial_counts, resample_weights

    with x64():
        key = jax.random.PRNGKey(7)
        w = multinomial_counts(key, 50, dtype=jnp.float64)
        assert w.shape == (50,) and w.dtype == jnp.float64 and float(w.sum()) == 50.0
        idx = jax.random.randint(key, (50,), 0, 50, dtype=jnp.int32)
        np.testing.assert_array_equal(np.asarray(w), np.bincount(np.asarray(idx), minlength=50))
        pattern = jnp.arange(50) % 5
        w_items, w_pat = resample_weights(key, pattern, 5)
        np.testing.assert_array_equal(np.asarray(w_items), np.asarray(w))
        np.testing.assert_array_equal(np.asarray(w_pat),
                                      np.bincount(np.arange(50) % 5, weights=np.asarray(w)))
