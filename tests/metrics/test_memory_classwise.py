"""Classwise ECE with its inverted interval from streamed per-bin statistics: the same
numbers as from the K x n item table, and NumPy's peak below 2x the float32 input."""

from __future__ import annotations

import importlib
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import noisycal as nc
from noisycal.metrics.binned import streamed as streamed_form

backend = importlib.import_module("noisycal.metrics.binned.backend")


def _data(n: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident Dirichlet probabilities; labels from a tempered version of them."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(K, 0.5), size=n)
    Q = P ** 0.7
    Q /= Q.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(Q, axis=1)[:, :-1]).sum(axis=1)
    return P, y


def _both(monkeypatch: pytest.MonkeyPatch, P: object, target: object, **kw: object
          ) -> tuple[nc.Estimate, nc.Estimate]:
    """(streamed, item table) estimates of the same call."""
    streamed = nc.ece(P, target, kind="classwise", **kw)
    with monkeypatch.context() as m:
        m.setattr(backend.StreamedSums, "serves", staticmethod(lambda request: False))
        table = nc.ece(P, target, kind="classwise", **kw)
    return streamed, table


def _assert_same(a: nc.Estimate, b: nc.Estimate, rel: float = 1e-12) -> None:
    """Equal up to summation order: sums over chunks of rows are added chunk by chunk
    (the table path sums all rows at once), and the interval ends, found from the
    covariance S/n - mean mean^T (a difference of nearly equal numbers) through nested
    bisections on simulated quantiles, carry these ~1e-16 differences amplified (seen:
    3e-12 relative for L1, 5e-10 for the L2 upper end). With one chunk the numbers are
    identical (tested with rel=0)."""
    assert a.kind == b.kind == "inversion"
    assert a.status == b.status
    assert a.value == pytest.approx(b.value, rel=rel, abs=1e-14)
    assert a.interval == pytest.approx(b.interval, rel=rel, abs=1e-14)
    assert a.details["plugin"] == pytest.approx(b.details["plugin"], rel=1e-12, abs=1e-14)
    assert a.details["per_group"] == pytest.approx(b.details["per_group"], rel=1e-12)
    for key in ("zero_test", "variance_floor", "n_empty_bins"):
        assert a.details[key] == b.details[key], key
    np.testing.assert_array_equal(a.details["edges"], b.details["edges"])
    pd.testing.assert_frame_equal(a.bins, b.bins, rtol=1e-10, atol=1e-14)


# the plug-in of sparse bins (kw3) can lie above the inverted interval: flagged, not the
# point of this streamed-versus-table comparison
@pytest.mark.filterwarnings("ignore:.*does not contain the estimate:noisycal.NumericalWarning")
@pytest.mark.parametrize("kw", [
    {},                                            # default: L1, equal-width, labels
    {"norm": "l2"},
    {"strategy": "quantile", "n_bins": 6},
    {"estimator": "plug-in", "level": 0.8, "n_bins": 40},   # sparse bins
])
def test_streamed_equals_item_table(monkeypatch: pytest.MonkeyPatch, kw: dict) -> None:
    P, y = _data(2000, 4, 0)
    P32 = P.astype(np.float32)
    # one chunk: the same sums in the same order, so the very same numbers
    inv = nc.intervals.Inversion(n_boot=200)
    a, b = _both(monkeypatch, P32, y, interval=inv, seed=3, **kw)
    assert a.details["zero_test"] == "consistency"          # one-hot: the streamed null ran
    assert (a.value, a.interval) == (b.value, b.interval)
    _assert_same(a, b, rel=0.0)
    # many chunks and a ragged last one: equal up to summation order
    monkeypatch.setattr(streamed_form, "CHUNK_ROWS", 257)
    a, b = _both(monkeypatch, P32, y, interval=inv, seed=3, **kw)
    _assert_same(a, b, rel=2e-9)


def test_streamed_equals_item_table_soft_and_float64(monkeypatch: pytest.MonkeyPatch) -> None:
    P, y = _data(2000, 3, 1)
    monkeypatch.setattr(streamed_form, "CHUNK_ROWS", 100)
    # float64 probabilities and a one-hot matrix target
    inv = nc.intervals.Inversion(n_boot=200)
    a, b = _both(monkeypatch, P, np.eye(3)[y], interval=inv, seed=0)
    _assert_same(a, b, rel=2e-9)
    # a soft target: no consistency null (Gaussian zero test), no variance floor
    T = np.random.default_rng(2).dirichlet(np.ones(3), size=2000)
    a, b = _both(monkeypatch, P, T, interval=inv, seed=0)
    assert a.details["zero_test"] == "gaussian"
    _assert_same(a, b, rel=2e-9)


def test_streamed_null_equals_consistency_null(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunked label redraws reproduce binned_form.consistency_null replicate by
    replicate (same uniforms, same cells), for K classes and for one score group."""
    from noisycal.metrics.binned.bins import binned_from_predictions
    from noisycal.metrics.binned.form import consistency_null

    P, y = _data(1500, 5, 4)
    for chunk, kind in ((64, "classwise"), (64, "top_label"),  # chunk by chunk
                        (2**14, "classwise"), (2**14, "top_label")):  # replicates at once
        monkeypatch.setattr(streamed_form, "CHUNK_ROWS", chunk)
        form = streamed_form.StreamedForm(P, y, None, kind, 10, "uniform", with_sq=False)
        binned = binned_from_predictions(P, y, None, kind, 10, "uniform", with_sq=False)
        _, _, weights = form.linear_form("l1")
        got = form.consistency_null(weights, "l1", 250, 7)
        want = consistency_null(binned, weights, "l1", 250, 7)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        assert np.std(got) > 0


def test_classwise_inversion_numpy_peak_below_twice_input() -> None:
    """Float32 (n, K) probabilities and labels, the default (inverted) interval: NumPy's
    peak < 2x input (1.56x seen; on the item table path it was 69x at this n, whose
    consistency null drew 55 replicates of n x K at once, and the table alone is
    K x n x 3 float64, 6x the input). Below ~2e5 rows the chunks' fixed temporaries
    (~15 MB) would dominate."""
    rng = np.random.default_rng(5)
    n, K = 300_000, 10
    P = rng.dirichlet(np.ones(K), size=n).astype(np.float32)
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, K, n)
    kw = dict(kind="classwise", n_bins=15, interval=nc.intervals.Inversion(n_boot=100))
    nc.ece(P[:5000], y[:5000], **kw)  # compile first
    tracemalloc.start()
    est = nc.ece(P, y, **kw)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert est.kind == "inversion" and est.status == "ok"
    assert peak < 2 * P.nbytes, peak / P.nbytes
