"""Bootstrap intervals: resampling weights, interval rules, and a generic driver.

Resampling units are items (rows) or clusters (several rows of one item, given
by ``cluster=``). Replicates are computed in jitted chunks (``jax.lax.map`` with a
``batch_size``), never in a Python loop over replicates.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri  # the normal cdf and ppf, without scipy.stats

import jax
import jax.numpy as jnp

from .._util.jax import as_key, x64
from .._util.stats import equal_tailed
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_batch_size,
    check_choice,
    check_int,
    check_level,
    check_seed,
    user_stacklevel,
)
from ..exceptions import NumericalWarning
from .estimate import Estimate, outside_interval

__all__ = [
    "multinomial_counts",
    "BOOTSTRAP_METHODS",
    "bootstrap",
    "cluster_codes",
    "replicate_weights",
    "interval_from_replicates",
    "default_batch_size",
]

BOOTSTRAP_METHODS = ("percentile", "basic", "bca")

#: Number of float64 elements one chunk of replicates may hold (about 256 MB).
_CHUNK_ELEMENTS = 2**25


def default_batch_size(n_boot: int, per_replicate: int) -> int:
    """Replicates per vectorised chunk, so one chunk holds at most ~2**25 numbers.

    Parameters
    ----------
    n_boot : int
        Number of replicates.
    per_replicate : int
        Numbers one replicate holds in memory.

    Returns
    -------
    int
        Between 1 and ``n_boot``.
    """
    return int(max(1, min(n_boot, _CHUNK_ELEMENTS // max(per_replicate, 1))))


def cluster_codes(cluster: ArrayLike | None, n: int) -> tuple[np.ndarray | None, int]:
    """Map cluster labels to codes 0..C-1; ``(None, n)`` when resampling rows.

    Parameters
    ----------
    cluster : array-like of shape (n,) or None
        One cluster id per row (None: rows are the sampling units).
    n : int
        Number of rows.

    Returns
    -------
    codes : ndarray of shape (n,) or None
    n_clusters : int
    """
    if cluster is None:
        return None, n
    c = np.asarray(cluster)
    if c.ndim != 1 or c.shape[0] != n:
        raise ValueError(f"cluster must be a 1-D array of length {n} (one id per row), "
                         f"got shape {c.shape}")
    if c.dtype.kind == "f" and not np.all(np.isfinite(c)):
        raise ValueError("cluster contains NaN or infinite ids")
    if c.dtype == object and any(x is None or (isinstance(x, float) and x != x)
                                 for x in c.tolist()):
        raise ValueError("cluster contains missing ids (None or NaN)")
    _, codes = np.unique(c, return_inverse=True)
    return codes.astype(np.int32), int(codes.max()) + 1


def multinomial_counts(rng_key: jax.Array, n: int, *, dtype: Any = None) -> jax.Array:
    """Multinomial bootstrap weights: how often each of ``n`` units is drawn in ``n``
    draws with replacement (the one resample draw of every bootstrap).

    Parameters
    ----------
    rng_key : jax key
    n : int
        Number of units (static): items, rows or clusters.
    dtype : dtype, optional
        Of the counts (default: JAX's default float type).

    Returns
    -------
    (n,) array of counts summing to ``n``.
    """
    idx = jax.random.randint(rng_key, (n,), 0, n, dtype=jnp.int32)
    return jnp.zeros(n, dtype=dtype).at[idx].add(1.0)


def replicate_weights(rng_key: jax.Array, codes: jax.Array | None,
                      n_clusters: int) -> jax.Array:
    """Multinomial bootstrap weights of the n rows (clusters resampled whole when given).

    Parameters
    ----------
    rng_key : jax key
    codes : int array of shape (n,) or None
        Cluster code of every row (:func:`cluster_codes`); None resamples rows.
    n_clusters : int
        Number of clusters (rows when ``codes`` is None).

    Returns
    -------
    jax.Array of shape (n,)
        How often each row is drawn.
    """
    cw = multinomial_counts(rng_key, n_clusters, dtype=jnp.float64)
    return cw if codes is None else cw[codes]


def interval_from_replicates(
    theta_hat: float,
    reps: np.ndarray,
    level: float,
    method: str,
    jackknife: np.ndarray | None = None,
) -> tuple[tuple[float, float], str, str]:
    """Turn bootstrap replicates into an interval.

    Parameters
    ----------
    theta_hat : float
        The estimate on the original sample.
    reps : ndarray of shape (n_boot,)
        Replicate values.
    level : float
        Coverage fraction.
    method : {'percentile', 'basic', 'bca'}
        Percentile, basic (reverse percentile) or bias-corrected and accelerated
        (Efron 1987); BCa needs the ``jackknife`` (leave-one-out) values.

    Returns
    -------
    interval : (low, high)
    status : str
        ``'ok'``, ``'nonfinite'`` (some replicates are not finite),
        ``'degenerate'`` (every replicate equal, e.g. one item: the bootstrap carries no
        information about sampling error; the interval is NaN), ``'bca_degenerate'``
        (BCa only; the interval is NaN: all replicates on one side of the estimate, an
        acceleration that makes the adjusted levels non-monotone, or adjusted tail
        probabilities below ``1 / n_boot``, where the ends would be the most extreme
        replicates rather than quantiles) or ``'estimate_outside_interval'`` (BCa only:
        the bias correction moved the interval past the estimate; the interval is
        kept). A non-ok status also emits a :class:`~noisycal.NumericalWarning`.

    Notes
    -----
    BCa's bias correction is ``z0 = Phi^-1(share of replicates below the estimate)``,
    with replicates equal to the estimate counted half.
    message : str
    """
    reps = np.asarray(reps, dtype=np.float64)
    finite = np.isfinite(reps)
    nan2 = (float("nan"), float("nan"))
    if not np.all(finite):
        bad = int(np.sum(~finite))
        return _warned(nan2, "nonfinite",
                       f"{bad} of {reps.size} bootstrap replicates are not finite")
    if reps.size and np.all(reps == reps[0]):
        return _warned(nan2, "degenerate",
                       f"all {reps.size} bootstrap replicates are equal ({reps[0]:.6g}): with "
                       "a single item (or no variation between items) the bootstrap says "
                       "nothing about sampling error, so no interval is reported")
    if method == "percentile":
        return equal_tailed(reps, level), "ok", ""
    if method == "basic":
        qlo, qhi = equal_tailed(reps, level)
        return (float(2 * theta_hat - qhi), float(2 * theta_hat - qlo)), "ok", ""
    if method == "bca":
        if jackknife is None:
            raise ValueError("method='bca' needs jackknife values")
        return _bca(theta_hat, reps, level, jackknife)
    raise ValueError(f"method must be one of {BOOTSTRAP_METHODS}, got {method!r}")


def _bca(theta_hat: float, reps: np.ndarray, level: float, jackknife: np.ndarray
         ) -> tuple[tuple[float, float], str, str]:
    """BCa interval (Efron 1987) with its checks; see :func:`interval_from_replicates`."""
    nan2 = (float("nan"), float("nan"))
    n_boot = reps.size
    # share of replicates below the estimate, ties counted half (as scipy.stats.bootstrap
    # does): a statistic whose replicates often equal the estimate is not biased by ties
    prop = float((np.sum(reps < theta_hat) + np.sum(reps <= theta_hat)) / (2.0 * n_boot))
    if prop <= 0.0 or prop >= 1.0:
        return _warned(nan2, "bca_degenerate",
                       "all bootstrap replicates lie on one side of the estimate, so the "
                       "BCa bias correction is infinite; use method='percentile'")
    z0 = float(ndtri(prop))
    jk = np.asarray(jackknife, dtype=np.float64)
    d = jk.mean() - jk
    denom = 6.0 * np.sum(d**2) ** 1.5
    acc = float(np.sum(d**3) / denom) if denom > 0 else 0.0
    a = (1.0 - level) / 2.0
    z = ndtri(np.array([a, 1.0 - a]))
    shrink = 1.0 - acc * (z0 + z)
    if np.any(shrink <= 0):
        return _warned(nan2, "bca_degenerate",
                       f"the BCa acceleration ({acc:.3g}) is so large that the adjusted "
                       "levels are not monotone; use method='percentile'")
    adj = ndtr(z0 + (z0 + z) / shrink)
    # An end whose adjusted tail holds less than one replicate is the most extreme
    # replicate, not a quantile: the interval collapses onto the sample's edge
    # (typically a statistic biased near a boundary, such as an ECE near 0, whose
    # replicates nearly all lie on one side of the estimate).
    if adj[0] * n_boot < 1.0 or (1.0 - adj[1]) * n_boot < 1.0:
        return _warned(nan2, "bca_degenerate",
                       f"{100 * prop:.3g}% of the {n_boot} bootstrap replicates lie below "
                       f"the estimate (bias correction z0 = {z0:.3g}, acceleration "
                       f"{acc:.3g}), which moves the BCa tail probabilities to "
                       f"({adj[0]:.2g}, {1 - adj[1]:.2g}), beyond what {n_boot} replicates "
                       "resolve, so the interval would collapse onto the most extreme "
                       "replicates; no interval is reported: use method='percentile' (and "
                       "for a statistic biased near 0, such as an ECE, interval='inversion')")
    lo, hi = (float(x) for x in np.quantile(reps, adj))
    distance = outside_interval(theta_hat, (lo, hi))
    if distance != 0.0:
        return _warned((lo, hi), "estimate_outside_interval",
                       f"the BCa interval [{lo:.4g}, {hi:.4g}] does not contain the estimate "
                       f"{theta_hat:.4g}: only {100 * prop:.3g}% of the replicates lie below "
                       f"the estimate (bias correction z0 = {z0:.3g}), and BCa moves the "
                       "interval past it; read it as a statement about the estimand, or "
                       "use method='percentile'")
    return (lo, hi), "ok", ""


def _warned(interval: tuple[float, float], status: str, message: str
            ) -> tuple[tuple[float, float], str, str]:
    warnings.warn(f"bootstrap interval: {message}", NumericalWarning,
                  stacklevel=user_stacklevel())
    return interval, status, message


@partial(jax.jit, static_argnames=("statistic", "n_clusters", "n_boot", "batch_size"))
def _generic_replicates(rng_key: jax.Array, arrays: tuple, codes: jax.Array | None, *,
                        statistic: Callable, n_clusters: int, n_boot: int,
                        batch_size: int) -> jax.Array:
    keys = jax.random.split(rng_key, n_boot)

    def one(key: jax.Array) -> jax.Array:
        return statistic(replicate_weights(key, codes, n_clusters), *arrays)

    return jax.lax.map(one, keys, batch_size=batch_size)


def _grouped_jackknife(statistic: Callable, arrays: tuple, codes: np.ndarray | None,
                       n: int, n_clusters: int, max_groups: int) -> np.ndarray:
    """Leave-one-unit-out values (units grouped into at most ``max_groups`` blocks)."""
    unit = np.arange(n) if codes is None else codes
    n_units = n_clusters
    n_groups = min(n_units, max_groups)
    group_of_unit = (np.arange(n_units) * n_groups) // n_units
    group = jnp.asarray(group_of_unit[unit], dtype=jnp.int32)

    @jax.jit
    def loo(g: jax.Array) -> jax.Array:
        w = jnp.where(group == g, 0.0, 1.0)
        return statistic(w, *arrays)

    return np.asarray(jax.lax.map(loo, jnp.arange(n_groups), batch_size=min(n_groups, 64)))


def bootstrap(
    statistic: Callable[..., jax.Array],
    *arrays: ArrayLike,
    cluster: ArrayLike | None = None,
    n_boot: int = 1000,
    level: float = 0.9,
    method: str = "percentile",
    seed: Seed = 0,
    batch_size: int | None = None,
    name: str = "statistic",
    max_jackknife_groups: int = 1000,
) -> Estimate:
    """Bootstrap interval of a weighted statistic.

    Parameters
    ----------
    statistic : callable
        ``statistic(weights, *arrays) -> scalar``: a JAX-traceable function of row
        weights of shape (n,) (all ones for the original sample) and the arrays.
        Must be a module-level function (it is a static argument of a jitted kernel).
    *arrays : array-like
        Data, each with n rows.
    cluster : array-like of shape (n,), optional
        Cluster id of each row; clusters are resampled whole.
    n_boot : int, default=1000
    level : float, default=0.9
    method : {'percentile', 'basic', 'bca'}, default='percentile'
        BCa's acceleration comes from a grouped jackknife (leave-one-unit-out when
        there are at most ``max_jackknife_groups`` units, else leave-one-block-out).
    seed : int or jax key, default=0
    batch_size : int, optional
        Replicates per vectorised chunk; by default as many as fit ~2**25 numbers.
    name : str, default='statistic'
        Name of the estimate.
    max_jackknife_groups : int, default=1000
        Most leave-one-block-out refits for BCa's acceleration.

    Returns
    -------
    Estimate
    """
    level = check_level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    check_choice(method, "method", BOOTSTRAP_METHODS)
    check_seed(seed)
    batch_size = check_batch_size(batch_size)
    max_jackknife_groups = check_int(max_jackknife_groups, "max_jackknife_groups", minimum=2)
    arrs = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    if not arrs:
        raise ValueError("arrays: bootstrap needs at least one data array (none given)")
    n = arrs[0].shape[0]
    for i, a in enumerate(arrs):
        if a.ndim == 0 or a.shape[0] != n:
            raise ValueError(f"arrays[{i}] has shape {a.shape}, expected {n} rows")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"arrays[{i}] contains NaN or infinite values")
    codes, n_clusters = cluster_codes(cluster, n)
    per_rep = sum(int(np.prod(a.shape)) for a in arrs)
    bs = batch_size or default_batch_size(n_boot, per_rep)
    key = as_key(seed)
    with x64():
        jarrs = tuple(jnp.asarray(a) for a in arrs)
        jcodes = None if codes is None else jnp.asarray(codes)
        theta = float(statistic(jnp.ones(n), *jarrs))
        reps = np.asarray(_generic_replicates(key, jarrs, jcodes, statistic=statistic,
                                              n_clusters=n_clusters, n_boot=n_boot,
                                              batch_size=bs))
        jack = None
        if method == "bca":
            jack = _grouped_jackknife(statistic, jarrs, codes, n, n_clusters,
                                      max_jackknife_groups)
    interval, status, message = interval_from_replicates(theta, reps, level, method, jack)
    return Estimate(name, theta, interval, level, "bootstrap", method, n=n, n_boot=n_boot,
                    status=status, message=message, replicates=reps)
