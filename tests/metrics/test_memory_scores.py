"""Bootstrap interval of brier/nll (a mean of per-item losses) drawn in blocks of
indices: the bootstrap of ``nc.bootstrap(weighted_mean, ...)`` within Monte-Carlo
error, the right replicates across block ends, and bounded memory."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
from scipy import stats as sps

import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import as_numpy_rng, x64
from noisycal.intervals import mean_bootstrap
from noisycal.intervals.bootstrap import _grouped_jackknife, cluster_codes
from noisycal.intervals.mean_bootstrap import bootstrap_mean
from noisycal.metrics.scores import weighted_mean


def _reference(values: np.ndarray, codes: np.ndarray | None, U: int, n_boot: int,
               seed: int, block: int) -> np.ndarray:
    """Replicates computed directly from the same draws (same generator, same blocks)."""
    rng = as_numpy_rng(seed)
    total = n_boot * U
    draws = np.concatenate([rng.integers(0, U, min(block, total - t))
                            for t in range(0, total, block)]).reshape(n_boot, U)
    if codes is None:
        return values[draws].mean(axis=1)
    S = np.bincount(codes, weights=values, minlength=U)
    N = np.bincount(codes, minlength=U)
    return S[draws].sum(axis=1) / N[draws].sum(axis=1)


@pytest.mark.parametrize("block", [7, 100, 2**18])
def test_replicates_across_block_ends(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.gamma(2.0, size=233)
    cl = rng.integers(0, 40, 233)
    monkeypatch.setattr(mean_bootstrap, "DRAW_BLOCK", block)
    est = bootstrap_mean(x, n_boot=57, seed=4)
    np.testing.assert_allclose(est.replicates, _reference(x, None, 233, 57, 4, block),
                               rtol=1e-13)
    codes, U = cluster_codes(cl, 233)
    est = bootstrap_mean(x, cluster=cl, n_boot=57, seed=4)
    np.testing.assert_allclose(est.replicates, _reference(x, codes, U, 57, 4, block),
                               rtol=1e-13)


def test_same_bootstrap_as_generic_driver() -> None:
    """Replicate quantiles and spread of the blocked and the generic (JAX) bootstrap of
    the same mean agree within 4 Monte-Carlo standard errors, and the replicates' spread
    matches the exact bootstrap variance of a mean, (1/n) mean((x - xbar)^2)."""
    rng = np.random.default_rng(1)
    n, B = 3000, 4000
    x = rng.exponential(size=n) ** 2                      # skewed
    a = bootstrap_mean(x, n_boot=B, seed=0).replicates
    b = nc.bootstrap(weighted_mean, x, n_boot=B, seed=1).replicates
    sd_exact = np.sqrt(np.mean((x - x.mean()) ** 2) / n)
    for reps in (a, b):
        # sd of a sample sd from B draws: about sd / sqrt(2 B) (near-normal replicates)
        assert abs(np.std(reps) - sd_exact) < 4 * sd_exact / np.sqrt(2 * B)
        assert abs(np.mean(reps) - x.mean()) < 4 * sd_exact / np.sqrt(B)
    for q in (0.05, 0.95):
        # the standard error of a sample quantile: sqrt(q (1 - q) / B) / density
        se = np.sqrt(q * (1 - q) / B) * sd_exact / sps.norm.pdf(sps.norm.ppf(q))
        assert abs(np.quantile(a, q) - np.quantile(b, q)) < 4 * np.sqrt(2) * se, q
    # clusters: the generic driver's cluster bootstrap, within Monte-Carlo error
    cl = rng.integers(0, 300, n)
    a = bootstrap_mean(x, cluster=cl, n_boot=B, seed=0).replicates
    b = nc.bootstrap(weighted_mean, x, cluster=cl, n_boot=B, seed=1).replicates
    assert abs(np.std(a) / np.std(b) - 1) < 4 * np.sqrt(2 / (2 * B)) * 1.5


def test_bca_jackknife_equals_generic_driver() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=2500)
    cl = rng.integers(0, 1300, 2500)
    for cluster, groups in ((None, 1000), (None, 5000), (cl, 1000), (cl, 100)):
        codes, U = cluster_codes(cluster, 2500)
        with x64():  # as nc.bootstrap calls it
            want = _grouped_jackknife(weighted_mean, (jnp.asarray(x),), codes, 2500, U,
                                      groups)
        got = mean_bootstrap._jackknife(x, codes, U, groups)
        np.testing.assert_allclose(got, want, rtol=1e-10)
    est = bootstrap_mean(x, n_boot=500, method="bca", seed=0)
    assert est.status == "ok" and est.interval[0] < x.mean() < est.interval[1]


def test_brier_nll_use_it_and_statuses() -> None:
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4), size=800)
    y = rng.integers(0, 4, 800)
    est = nc.brier(P, y, interval=nc.intervals.Bootstrap(n_boot=300), seed=5)
    losses = ((P - np.eye(4)[y]) ** 2).sum(axis=1)
    want = bootstrap_mean(losses, n_boot=300, seed=5)
    np.testing.assert_allclose(est.replicates, want.replicates, rtol=1e-12)
    assert est.interval == pytest.approx(want.interval, rel=1e-12)
    # one item: degenerate, no interval, a NumericalWarning
    with pytest.warns(nc.NumericalWarning):
        one = nc.nll(P[:1], y[:1], interval=nc.intervals.Bootstrap(n_boot=50))
    assert one.status == "degenerate" and np.isnan(one.interval[0])
    with pytest.raises(ValueError, match="values"):
        bootstrap_mean([1.0, np.nan])


def _peak_rss_growth(fn) -> int:
    """Growth of the peak resident set size during ``fn()`` (Linux), in bytes."""
    def kib(field: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    gc.collect()
    rss0 = kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    fn()
    return 1024 * (kib("VmHWM") - rss0)


@pytest.mark.parametrize("score", ["brier", "nll"])
def test_bootstrap_memory_below_twice_input(score: str) -> None:
    """Float32 (n, K) probabilities, label codes, the default bootstrap interval: the
    NumPy peak and the peak resident set growth (which sees JAX's buffers) < 2x input.
    The generic JAX driver holds 167 replicates of n weights at once at this n: its
    peak RSS growth was 162x the input (NumPy peak 1.78x, the input checks)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("needs /proc/self/clear_refs (Linux) to reset the peak RSS")
    rng = np.random.default_rng(5)
    n, K = 200_000, 10
    P = rng.dirichlet(np.ones(K), size=n).astype(np.float32)
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, K, n)
    fn = getattr(nc, score)
    boot = nc.intervals.Bootstrap(n_boot=200)
    fn(P[:5000], y[:5000], interval=nc.intervals.Bootstrap(n_boot=50))  # compile first
    tracemalloc.start()
    fn(P, y, interval=boot)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2 * P.nbytes, peak / P.nbytes
    growth = _peak_rss_growth(lambda: fn(P, y, interval=boot))
    assert growth < 2 * P.nbytes, growth / P.nbytes
