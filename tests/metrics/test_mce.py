"""The MCE (noisycal.metrics.mce): its estimand over bins of at least min_count items, the
simultaneous interval by hand, and its coverage on two cells of benchmarks/coverage_mce.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from benchmark_scripts import load_benchmark
from scipy import stats as sps

import noisycal as nc
from noisycal.metrics.mce import MIN_COUNT, simultaneous_bounds

LEVEL = 0.9


def _two_bins(n_big: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Bin [0.2, 0.3) holds n_big items at p = 0.25 with a hit rate near 0.5; bin
    [0.9, 1.0] holds 3 items at p = 0.95, all wrong (gap -0.95)."""
    rng = np.random.default_rng(seed)
    p = np.r_[np.full(n_big, 0.25), np.full(3, 0.95)]
    y = np.r_[(rng.random(n_big) < 0.5).astype(int), np.zeros(3, int)]
    return p, y


def test_textbook_mce_with_min_count_1_and_no_bins_status():
    p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    y = np.array([0, 1, 1])
    # bins of 0.9 (correct), 0.8 (wrong), 0.7 (correct): gaps 0.1, 0.8, 0.3
    assert float(nc.mce(p, y, n_bins=10, min_count=1, interval=None)) == pytest.approx(0.8)
    with pytest.warns(nc.NumericalWarning, match="min_count = 20"):
        est = nc.mce(p, y, n_bins=10)
    assert est.status == "no_bins" and np.isnan(est.value) and est.interval is None
    assert MIN_COUNT == 20 and "at least 20 items" in est.estimand


def test_min_count_leaves_nearly_empty_bins_out():
    p, y = _two_bins()
    big_gap = y[:40].mean() - 0.25
    est = nc.mce(p, y, n_bins=10, interval=None)
    assert est.value == pytest.approx(abs(big_gap), abs=1e-12)
    assert est.details["n_bins_in_mce"] == 1 and est.details["n_bins_left_out"] == 1
    assert list(est.bins.loc[est.bins["in_mce"], "bin"]) == [2]
    assert float(nc.mce(p, y, n_bins=10, min_count=1, interval=None)) == pytest.approx(0.95)
    assert est.estimator == "plug-in" and "max over the bins" in est.estimand


def test_simultaneous_bounds_by_hand():
    gap, se = np.array([0.1, -0.3]), np.array([0.05, 0.1])
    q_two = np.array([[-2.5, 2.5], [-2.5, 2.5]])
    q_one = np.array([[-1.645, 1.645], [-2.0, 1.645]])
    low, high, band = simultaneous_bounds(gap, se, q_two, q_one)
    # bin 0: [-0.025, 0.225] holds 0; bin 1: [-0.55, -0.05] is 0.05 from 0
    np.testing.assert_allclose(band, [[-0.025, 0.225], [-0.55, -0.05]], atol=1e-15)
    assert low == pytest.approx(0.05, abs=1e-15)
    # one-sided pairs: bin 0 [0.01775, 0.18225]; bin 1 [-0.4645, -0.1]
    assert high == pytest.approx(0.4645, abs=1e-15)


def test_one_bin_with_clusters_is_the_two_sided_t_interval():
    # one bin, every item its own cluster: the cluster-robust se is sd / sqrt(n) and the
    # interval is |gap| -/+ t_{n-1}(0.95) se (Sidak with one bin: two-sided 90%)
    rng = np.random.default_rng(3)
    p = rng.uniform(0.4, 0.6, 60)
    t = np.clip(p - 0.2 + rng.normal(0, 0.1, 60), 0, 1)
    est = nc.mce(p, t, n_bins=1, cluster=np.arange(60))
    d = t - p
    se = d.std(ddof=1) / np.sqrt(60)
    q = sps.t.ppf(0.95, 59)
    assert est.method == "student-t" and est.kind == "simultaneous"
    np.testing.assert_allclose(est.interval, [abs(d.mean()) - q * se, abs(d.mean()) + q * se],
                               rtol=1e-10)
    assert est.details["gap_se"][0] == pytest.approx(se, rel=1e-10)


def test_one_hot_variance_floor_keeps_a_bin_of_hits_honest():
    # 40 correct predictions at p = 0.95: the sample variance of y - p is 0, the floor is
    # p (1 - p); the bin's gap 0.05 is within a t quantile of 0, so the interval starts at 0
    p, y = np.full(40, 0.95), np.ones(40, int)
    est = nc.mce(p, y, n_bins=10)
    assert est.value == pytest.approx(0.05)
    assert est.details["gap_se"][9] == pytest.approx(np.sqrt(0.95 * 0.05 / 40), rel=1e-12)
    assert est.low == 0.0 and est.high > 0.05 + 1.3 * np.sqrt(0.95 * 0.05 / 40)
    with pytest.warns(nc.NumericalWarning, match="no standard error"):
        soft = nc.mce(p, np.full(40, 0.95), n_bins=10)  # every gap 0: nothing to infer
    assert soft.status == "degenerate" and soft.interval is None and soft.value == 0.0


def test_plugin_lies_inside_and_interval_is_seeded():
    # soft targets (share of 3 votes): the bootstrap-t, not Student's t, sets the ends
    s = nc.simulate.binary_scores(1500, slope=0.6, a=0.6, b=0.6, seed=4)
    t = (np.random.default_rng(4).random((1500, 3)) < s.true_prob[:, None]).mean(axis=1)
    a = nc.mce(s.p, t, n_bins=10, seed=1)
    b = nc.mce(s.p, t, n_bins=10, seed=1)
    c = nc.mce(s.p, t, n_bins=10, seed=2)
    assert a.status == "ok" and a.low <= a.value <= a.high
    assert a.interval == b.interval and a.interval != c.interval
    assert a.details["quantiles"] == "bootstrap-t" and a.n_boot == 1000
    inside = a.bins[a.bins["in_mce"]]
    assert np.all(inside["low"] <= inside["mean_target"])
    assert np.all(inside["mean_target"] <= inside["high"])


def test_classwise_maximum_runs_over_classes():
    sim = nc.simulate.classifier(3000, 3, temperature=0.6, seed=2)
    est = nc.mce(sim.probs, sim.labels, kind="classwise", n_bins=10)
    per = est.details["per_group"]
    assert est.value == pytest.approx(max(per.values()), abs=1e-15)
    b = est.bins[est.bins["in_mce"]]
    assert est.value == pytest.approx(b["gap"].abs().max(), abs=1e-12)
    assert est.status == "ok" and est.low <= est.value <= est.high


def test_bootstrap_has_the_same_estimand():
    p, y = _two_bins(n_big=60, seed=1)
    kw = dict(n_bins=10, interval=nc.intervals.Bootstrap(n_boot=200), seed=0)
    with warnings.catch_warnings():  # the percentile interval may miss its estimate
        warnings.simplefilter("ignore", nc.NumericalWarning)
        est = nc.mce(p, y, **kw)
        every = nc.mce(p, y, min_count=1, **kw)
    assert est.value == pytest.approx(float(nc.mce(p, y, n_bins=10, interval=None)))
    # the left-out bin (gap -0.95) never enters a replicate; with min_count=1 it does
    assert np.all(est.replicates < 0.5) and np.max(every.replicates) == pytest.approx(0.95)
    assert np.isnan(est.bins.loc[9, "low"])
    with pytest.raises(ValueError, match="rebin"):
        nc.mce(p, y, strategy="quantile", interval=nc.intervals.Bootstrap(rebin=True))


@pytest.mark.parametrize("bad", [0, 2.5, True])
def test_min_count_is_checked(bad):
    p, y = _two_bins()
    with pytest.raises(ValueError, match="min_count"):
        nc.mce(p, y, min_count=bad)


def test_dask_input_equals_in_memory():
    da = pytest.importorskip("dask.array")
    sim = nc.simulate.classifier(3000, 4, temperature=0.7, seed=5)
    dP = da.from_array(sim.probs, chunks=(700, 4))
    for kind in ("top_label", "classwise"):
        a = nc.mce(sim.probs, sim.labels, kind=kind, seed=3)
        b = nc.mce(dP, sim.labels, kind=kind, seed=3)
        assert a.status == b.status == "ok" and a.value == pytest.approx(b.value, abs=1e-12)
        np.testing.assert_allclose(b.interval, a.interval, rtol=0, atol=1e-12)
        cols = ["count", "mean_conf", "mean_target", "low", "high"]
        np.testing.assert_allclose(b.bins[cols].to_numpy(float),
                                   a.bins[cols].to_numpy(float), rtol=0, atol=1e-12)
    p, y = _two_bins()
    with pytest.raises(ValueError, match="min_count"):
        nc.mce(da.from_array(p, chunks=20), y, n_bins=10, interval="bootstrap")


# ----------------------------------------------------------------------------- coverage


@pytest.fixture(scope="module")
def mce_study(study: object) -> object:
    """``benchmarks/coverage_mce.py`` as a module (it imports coverage_study, loaded by
    the ``study`` fixture, and benchmarks/_output.py)."""
    return load_benchmark("coverage_mce")


def _cell(mod: object, study: object, name: str, ece: float, n: int, reps: int,
          methods: tuple = ("simultaneous",)) -> list[dict]:
    sc = next(s for s in study.scenarios(binary_only=True) if s.name == name)
    par, pop = study.solve_parameter(sc, ece)
    return mod.run_cell(sc, n, par, mod.binary_bin_gaps(par, sc.n_bins), reps, methods, 1000)


REPS = 60
TOL = 2.5 * np.sqrt(LEVEL * (1 - LEVEL) / REPS)  # binomial tolerance, 0.097


def test_coverage_at_perfect_calibration_is_nominal(mce_study, study):
    # soft targets at n = 500: sparse extreme bins of rare votes, where Student's t alone
    # covered 0.85 (benchmarks/README.md); the interval is exact at perfect calibration
    sim, pct = _cell(mce_study, study, "binary/hard", 0.0, 500, REPS,
                     ("simultaneous", "percentile"))
    soft = _cell(mce_study, study, "binary/soft", 0.0, 500, REPS)[0]
    for row in (sim, soft):
        assert row["population_mce"] == pytest.approx(0.0, abs=1e-12)
        assert LEVEL - TOL <= row["coverage"] <= LEVEL + TOL, row["coverage"]
    # the percentile bootstrap of the same estimand never covers 0 here
    assert pct["coverage"] <= 0.05


def test_coverage_far_from_calibration(mce_study, study):
    row = _cell(mce_study, study, "binary/hard", 0.1, 2000, REPS)[0]
    assert row["population_mce"] > 0.1
    # conservative away from calibration (the lower end is simultaneous over the bins)
    assert row["coverage"] >= LEVEL - TOL and row["mean_width"] < 0.2
