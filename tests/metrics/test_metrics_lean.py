"""Metrics on float32 predictions and label vectors: same numbers, no wholesale copies."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import noisycal as nc


def _data(n: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(K, 0.4), size=n)
    y = np.array([rng.choice(K, p=row) for row in P[: min(n, 50)]] +
                 list(rng.integers(0, K, max(0, n - 50))))
    return P, y


@pytest.mark.parametrize("kind", ["top_label", "classwise"])
def test_label_vector_equals_one_hot_matrix(kind: str) -> None:
    P, y = _data(3000, 4, 0)
    T = np.eye(4)[y]
    for kw in ({}, {"norm": "l2", "debias": True}, {"strategy": "quantile"}):
        a = float(nc.ece(P, y, kind=kind, interval=None, **kw))
        b = float(nc.ece(P, T, kind=kind, interval=None, **kw))
        assert a == pytest.approx(b, abs=1e-13), kw
    assert float(nc.mce(P, y, kind=kind, interval=None)) == pytest.approx(
        float(nc.mce(P, T, kind=kind, interval=None)), abs=1e-13)


def test_scores_label_vector_equals_one_hot_matrix() -> None:
    P, y = _data(2000, 5, 1)
    T = np.eye(5)[y]
    for variant in ("plain", "expected"):
        a, b = nc.brier(P, y, variant=variant, interval=None), nc.brier(P, T, variant=variant,
                                                                       interval=None)
        assert a.value == pytest.approx(b.value, abs=1e-13)
        assert a.name == b.name and a.details == b.details
    assert nc.nll(P, y, interval=None).value == pytest.approx(
        nc.nll(P, T, interval=None).value, abs=1e-13)
    # a zero probability on the label: infinite NLL, status 'nonfinite', as with the matrix
    P0 = P.copy()
    P0[0] = 0.0
    P0[0, (y[0] + 1) % 5] = 1.0
    assert nc.nll(P0, y, interval=None).status == "nonfinite"
    # binary 1-D probabilities: (p - t)^2 and -log of the label's probability
    rng = np.random.default_rng(2)
    p = rng.random(500)
    yb = (rng.random(500) < p).astype(int)
    assert nc.brier(p, yb, interval=None).value == pytest.approx(np.mean((p - yb) ** 2),
                                                                abs=1e-14)
    assert nc.nll(p, yb, interval=None).value == pytest.approx(
        -np.mean(np.log(np.where(yb == 1, p, 1 - p))), abs=1e-14)


def test_float32_equals_its_float64_widening() -> None:
    P, y = _data(4000, 6, 3)
    P32 = P.astype(np.float32)
    P32 /= P32.sum(axis=1, keepdims=True)  # rows summing to 1 within float32 rounding
    P64 = P32.astype(np.float64)
    for kind in ("top_label", "classwise"):
        assert float(nc.ece(P32, y, kind=kind, interval=None)) == float(
            nc.ece(P64, y, kind=kind, interval=None))
    a = nc.ece(P32, y, interval=nc.intervals.Bootstrap(n_boot=200), seed=1)
    b = nc.ece(P64, y, interval=nc.intervals.Bootstrap(n_boot=200), seed=1)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert nc.brier(P32, y, interval=None).value == nc.brier(P64, y, interval=None).value
    assert nc.nll(P32, y, interval=None).value == nc.nll(P64, y, interval=None).value


def test_float32_bad_input_messages() -> None:
    P, y = _data(100, 3, 4)
    bad = P.astype(np.float32)
    bad[7, 0] = 1.5
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        nc.ece(bad, y, interval=None)
    bad = P.astype(np.float32)
    bad[9] *= 1.01
    with pytest.raises(ValueError, match="row 9 sums to"):
        nc.ece(bad, y, interval=None)
    bad = P.astype(np.float32)
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        nc.brier(bad, y, interval=None)
    with pytest.raises(ValueError, match="must lie in 0..2"):
        nc.ece(P.astype(np.float32), y + 1, interval=None)
    with pytest.raises(ValueError, match="labels but the predictions have"):
        nc.ece(P.astype(np.float32), y[:-1], interval=None)


@pytest.mark.parametrize("interval", [None, "bootstrap"])
def test_ece_numpy_peak_memory_within_twice_the_input(interval: str | None) -> None:
    """Float32 (n, K) probabilities and labels: NumPy's peak during ``nc.ece`` < 2x input.

    Before the chunked layout it was about 8x (float64 copy, logs, one-hot matrix).
    JAX buffers are not seen by tracemalloc (the benchmark's --memory mode reads the
    resident set size as well).
    """
    rng = np.random.default_rng(5)
    n, K = 200_000, 10
    P = rng.dirichlet(np.ones(K), size=n).astype(np.float32)
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, K, n)
    kw = dict(n_bins=15, interval=interval and nc.intervals.Bootstrap(n_boot=200))
    nc.ece(P[:5000], y[:5000], **kw)  # compile first
    tracemalloc.start()
    nc.ece(P, y, **kw)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2 * P.nbytes, peak / P.nbytes


def test_float32_with_a_soft_target_equals_its_float64_widening():
    # products with a target matrix are taken in float64 (the affine and expected Brier)
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(10), size=20_000)
    T = rng.dirichlet(np.ones(10) * 0.5, size=20_000)
    P32 = P.astype(np.float32)
    for variant in ("plain", "expected"):
        a = nc.brier(P32, T, variant=variant, interval=None)
        b = nc.brier(P32.astype(np.float64), T, variant=variant, interval=None)
        assert float(a) == float(b), variant
    assert float(nc.ece(P32, T, interval=None)) == float(nc.ece(P32.astype(np.float64), T,
                                                                   interval=None))
