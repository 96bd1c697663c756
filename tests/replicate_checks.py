"""Replicate-set checks shared by the bootstrap tests (test_bootstrap_binned.py,
test_bootstrap_sharding.py): simulated predictions and labels, and whether two sets of
bootstrap replicates agree within their Monte-Carlo error."""

from __future__ import annotations

import numpy as np

N_BOOT = 1500
LEVEL = 0.9


def probs_labels(n: int, K: int, temp: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Predictions softmax(temp * z), labels drawn from softmax(z) (temp 1: calibrated)."""
    rng = np.random.default_rng(seed)
    z = 1.2 * rng.standard_normal((n, K))

    def softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    cum = np.cumsum(softmax(z), axis=1)
    y = np.minimum((rng.random(n)[:, None] * cum[:, -1:] >= cum).sum(axis=1), K - 1)
    return softmax(temp * z), y


def quantile_se(reps: np.ndarray, q: float) -> float:
    """Monte-Carlo standard error of the q-quantile of ``reps`` (density from spacings)."""
    r = np.sort(reps)
    B = r.size
    h = int(np.sqrt(B))
    i = int(q * B)
    dens_inv = (r[min(i + h, B - 1)] - r[max(i - h, 0)]) / (2 * h / B)
    return float(dens_inv * np.sqrt(q * (1 - q) / B))


def agree(a: np.ndarray, b: np.ndarray, n_se: float = 4.0) -> tuple[bool, str]:
    """Whether two replicate sets give the same 5% and 95% quantiles and spread."""
    msgs, ok = [], True
    for q in ((1 - LEVEL) / 2, (1 + LEVEL) / 2):
        qa, qb = np.quantile(a, q), np.quantile(b, q)
        se = np.hypot(quantile_se(a, q), quantile_se(b, q))
        ok &= abs(qa - qb) <= n_se * se
        msgs.append(f"q{q}: {qa:.6g} vs {qb:.6g} (se {se:.2g})")
    # the standard deviation of a sample sd is about sd / sqrt(2B) for a near-normal law
    sa, sb = a.std(ddof=1), b.std(ddof=1)
    ok &= abs(sa - sb) <= n_se * np.hypot(sa, sb) / np.sqrt(2 * a.size)
    msgs.append(f"sd {sa:.4g} vs {sb:.4g}")
    return bool(ok), "; ".join(msgs)
