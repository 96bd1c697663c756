"""Bootstrap interval of a mean with O(1) memory per replicate.

Resampled indices are drawn and summed in blocks, never a weight vector of n per
replicate."""

from __future__ import annotations

import numpy as np

from .._util.jax import as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import check_choice, check_int, check_level, check_seed
from .bootstrap import BOOTSTRAP_METHODS, cluster_codes, interval_from_replicates
from .estimate import Estimate

__all__ = ["bootstrap_mean", "DRAW_BLOCK"]

#: Resampled indices drawn at once (bounds every temporary: 8 bytes each, 2 MiB).
DRAW_BLOCK = 2**18


def _unit_sums(values: np.ndarray, codes: np.ndarray | None, n_units: int
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-unit totals and sizes (rows: the values themselves and None)."""
    if codes is None:
        return values, None
    return (np.bincount(codes, weights=values, minlength=n_units),
            np.bincount(codes, minlength=n_units).astype(np.float64))


def _replicate_sums(totals: np.ndarray, sizes: np.ndarray | None, n_boot: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Replicate means: n_units units drawn with replacement per replicate, in blocks of
    :data:`DRAW_BLOCK` draws over the replicates one after another."""
    U = totals.shape[0]
    num, den = np.zeros(n_boot), np.zeros(n_boot)
    total = n_boot * U
    for t0 in range(0, total, DRAW_BLOCK):
        t1 = min(total, t0 + DRAW_BLOCK)
        idx = rng.integers(0, U, t1 - t0)
        vals = totals[idx]
        size = None if sizes is None else sizes[idx]
        # the replicates this block touches, and their stretches of it
        first, last = t0 // U, (t1 - 1) // U
        for r in range(first, last + 1):
            a, b = max(t0, r * U) - t0, min(t1, (r + 1) * U) - t0
            num[r] += vals[a:b].sum()
            den[r] += (b - a) if size is None else size[a:b].sum()
    return num / den


def _jackknife(values: np.ndarray, codes: np.ndarray | None, n_units: int,
               max_groups: int) -> np.ndarray:
    """Leave-one-block-out means: units (rows or clusters) in at most ``max_groups``
    consecutive blocks, as :func:`noisycal.bootstrap`'s grouped jackknife forms them."""
    n = values.shape[0]
    n_groups = min(n_units, max_groups)
    gsum, gcnt = np.zeros(n_groups), np.zeros(n_groups)
    for s in range(0, n, DRAW_BLOCK):
        e = min(n, s + DRAW_BLOCK)
        unit = np.arange(s, e) if codes is None else codes[s:e].astype(np.int64)
        grp = (unit * n_groups) // n_units
        gsum += np.bincount(grp, weights=values[s:e], minlength=n_groups)
        gcnt += np.bincount(grp, minlength=n_groups)
    return (gsum.sum() - gsum) / (n - gcnt)


def bootstrap_mean(values: ArrayLike, *, cluster: ArrayLike | None = None,
                   n_boot: int = 1000, level: float = 0.9, method: str = "percentile",
                   seed: Seed = 0, name: str = "mean", max_jackknife_groups: int = 1000
                   ) -> Estimate:
    r"""Bootstrap interval of the mean of per-item values, drawn in blocks of indices.

    The same estimand and resampling scheme as ``nc.bootstrap(weighted_mean, values,
    cluster=...)`` (:func:`noisycal.bootstrap`): each replicate draws the n units (rows,
    or the clusters with ``cluster=``) with replacement and takes
    :math:`\sum_u w_u S_u / \sum_u w_u N_u` (unit totals :math:`S_u`, sizes
    :math:`N_u`, draw counts :math:`w_u`), read off as that function reads it; the
    random numbers differ (a NumPy generator seeded from ``seed``), so the interval
    agrees within Monte-Carlo error. The draws are made :data:`DRAW_BLOCK` indices at a
    time and summed, so beyond the values (and, with clusters, the per-cluster totals)
    the memory is bounded by the block, whatever n and ``n_boot``; that generic
    function holds n multinomial weights per replicate in flight.

    Parameters
    ----------
    values : array-like of shape (n,)
        Finite per-item values.
    cluster : array-like of shape (n,), optional
        Cluster id of each row; clusters are resampled whole.
    n_boot : int, default=1000
    level : float, default=0.9
    method : {'percentile', 'basic', 'bca'}, default='percentile'
        BCa's acceleration from the grouped jackknife of :func:`noisycal.bootstrap`
        (leave-one-unit-out with at most ``max_jackknife_groups`` units, else
        leave-one-block-out of consecutive units).
    seed : int or jax key, default=0
    name : str, default='mean'
    max_jackknife_groups : int, default=1000

    Returns
    -------
    Estimate
        With the replicates; status as :func:`noisycal.bootstrap`'s.
    """
    level = check_level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    check_choice(method, "method", BOOTSTRAP_METHODS)
    check_seed(seed)
    max_jackknife_groups = check_int(max_jackknife_groups, "max_jackknife_groups", minimum=2)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.shape[0] < 1:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("values contains NaN or infinite values")
    n = x.shape[0]
    codes, n_units = cluster_codes(cluster, n)
    totals, sizes = _unit_sums(x, codes, n_units)
    theta = float(np.mean(x))
    reps = _replicate_sums(totals, sizes, n_boot, as_numpy_rng(seed))
    jack = _jackknife(x, codes, n_units, max_jackknife_groups) if method == "bca" else None
    interval, status, message = interval_from_replicates(theta, reps, level, method, jack)
    return Estimate(name, theta, interval, level, "bootstrap", method, n=n, n_boot=n_boot,
                    status=status, message=message, replicates=reps)
