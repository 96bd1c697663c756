"""Intervals of the smooth ECE.

They are the item bootstrap with the bandwidth held fixed, and the inverted-test
interval (:mod:`noisycal.intervals.inversion`) on its linear form."""

from __future__ import annotations

from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.types import ArrayLike, Seed
from ..._util.validation import check_work_bytes
from ...intervals.bootstrap import (
    cluster_codes,
    default_batch_size,
    interval_from_replicates,
    replicate_weights,
)
from ...intervals.inversion import (
    covariance_factor,
    inversion_report,
    invert_norm,
    no_variation,
)
from .kernel import _damping, _item_cosines, _on_grid, n_terms, trapezoid_weights

__all__ = ["smooth_factor", "INVERSION_GRID", "check_factor_memory"]

#: Least grid points of the inverted interval's linear form (8 / bandwidth when larger,
#: at most the value's own grid): the grid of the value itself has 2001 points or more,
#: which makes the simulation needlessly slow.
INVERSION_GRID = 501


#: Leave-one-block-out groups at most, for BCa's acceleration.
_MAX_JACKKNIFE_GROUPS = 1000

# ----------------------------------------------------------------------------- bootstrap


def _value_jax(weights: jax.Array, dc: jax.Array, lam: jax.Array, wq: jax.Array,
               m: int) -> jax.Array:
    """The smooth ECE under item weights: mean over groups of sum_k wq_k |r_w(u_k)|."""
    a = jnp.einsum("n,gnj->gj", weights, dc) / jnp.sum(weights)
    return jnp.mean(jnp.abs(_on_grid(a * lam, m, jnp)) @ wq)


@partial(jax.jit, static_argnames=("m", "n_boot", "batch_size", "n_clusters"))
def _replicates(rng_key: jax.Array, dc: jax.Array, lam: jax.Array, wq: jax.Array,
                codes: jax.Array | None, *, m: int, n_boot: int, batch_size: int,
                n_clusters: int) -> jax.Array:
    keys = jax.random.split(rng_key, n_boot)

    def one(key: jax.Array) -> jax.Array:
        return _value_jax(replicate_weights(key, codes, n_clusters), dc, lam, wq, m)

    return jax.lax.map(one, keys, batch_size=batch_size)


@partial(jax.jit, static_argnames=("m", "n_groups"))
def _jackknife(dc: jax.Array, lam: jax.Array, wq: jax.Array, group: jax.Array, *, m: int,
               n_groups: int) -> jax.Array:
    def loo(g: jax.Array) -> jax.Array:
        return _value_jax(jnp.where(group == g, 0.0, 1.0), dc, lam, wq, m)

    return jax.lax.map(loo, jnp.arange(n_groups), batch_size=min(n_groups, 64))


def _bootstrap(conf: np.ndarray, resid: np.ndarray, bandwidth: float, m: int, value: float,
               *, level: float, n_boot: int, method: str, seed: Seed,
               cluster: ArrayLike | None, batch_size: int | None
               ) -> tuple[tuple[float, float], str, str, np.ndarray]:
    """Replicates with the bandwidth (and grid) held fixed; interval, status, message, reps."""
    n, G = conf.shape
    J = n_terms(bandwidth)
    codes, n_clusters = cluster_codes(cluster, n)
    dc = _item_cosines(conf, J) * resid.T[:, :, None]
    # on CPU, chunks of 64 replicates measured fastest (n 5000 to 20000)
    bs = batch_size or (min(n_boot, 64) if jax.default_backend() == "cpu"
                        else default_batch_size(n_boot, n + 4 * G * m))
    with x64():
        args = (jnp.asarray(dc), jnp.asarray(_damping(bandwidth, J)),
                jnp.asarray(trapezoid_weights(m)))
        reps = np.asarray(_replicates(as_key(seed), *args,
                                      None if codes is None else jnp.asarray(codes), m=m,
                                      n_boot=n_boot, batch_size=bs, n_clusters=n_clusters))
        jack = None
        if method == "bca":
            unit = np.arange(n) if codes is None else codes
            n_groups = min(n_clusters, _MAX_JACKKNIFE_GROUPS)
            group = ((np.arange(n_clusters) * n_groups) // n_clusters)[unit]
            jack = np.asarray(_jackknife(*args, jnp.asarray(group, jnp.int32), m=m,
                                         n_groups=n_groups))
    # an interval that misses the estimate is flagged by the Estimate itself
    # (status 'estimate_outside_interval', noisycal.intervals.estimate.outside_interval)
    interval, status, message = interval_from_replicates(value, reps, level, method, jack)
    return interval, status, message, reps

def smooth_factor(conf: np.ndarray, resid: np.ndarray, bandwidth: float, m: int,
                  codes: np.ndarray | None, n_units: int
                  ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """The smoothed residual on an m-point grid as a mean vector, a factor of its
    covariance, and the trapezoid weights (divided by the number of groups G).

    ``mean`` is linear in the J + 1 cosine coefficients of each group, so its covariance is
    B S B^T (B the damped cosine basis on the grid, S the coefficients' covariance from
    the items, or from cluster totals with ``codes``): the factor is B times a factor of S,
    with at most G (J + 1) columns. None with a single unit.

    Parameters
    ----------
    conf, resid : ndarray of shape (n, G)
    bandwidth : float
    m : int
        Grid points.
    codes : ndarray of shape (n,) or None
        Cluster codes.
    n_units : int
        Number of clusters (items without codes).

    Returns
    -------
    mean : ndarray of shape (G * m,)
    factor : ndarray of shape (G * m, r) or None
    weights : ndarray of shape (G * m,)
    """
    n, G = conf.shape
    J = n_terms(bandwidth)
    check_factor_memory(n, G, J)
    basis = np.cos(np.pi * np.outer(np.linspace(0.0, 1.0, m), np.arange(J + 1)))
    basis *= _damping(bandwidth, J)
    coef = (_item_cosines(conf, J) * resid.T[:, :, None]).transpose(1, 0, 2).reshape(n, -1)
    if codes is not None:
        totals = np.zeros((n_units, coef.shape[1]))
        np.add.at(totals, codes, coef)
        coef = totals
    mean = ((coef.sum(axis=0) / n).reshape(G, J + 1) @ basis.T).ravel()
    weights = np.tile(trapezoid_weights(m), G) / G
    if n_units < 2:
        return mean, None, weights
    S = np.atleast_2d(np.cov(coef, rowvar=False, ddof=1)) * n_units / n**2
    L = covariance_factor(S).reshape(G, J + 1, -1)
    return mean, np.einsum("kj,gjr->gkr", basis, L).reshape(G * m, -1), weights


def check_factor_memory(n: int, n_groups: int, J: int) -> None:
    """Refuse an inverted interval whose D x D covariance of the D = G (J + 1) cosine
    coefficients (and their n x D table) would pass ``MAX_WORK_BYTES``.

    Parameters
    ----------
    n : int
        Items.
    n_groups : int
        G.
    J : int
        Highest cosine frequency (:func:`~noisycal.metrics.smooth.kernel.n_terms`).
    """
    D = n_groups * (J + 1)
    check_work_bytes(8.0 * max(n * D, D * D), "probs" if n_groups > 1 else "bandwidth",
                     f"the inverted interval's covariance of {D} cosine coefficients "
                     f"({n_groups} group(s) x {J + 1} terms; interval=None does without it)")


def _inverted(conf: np.ndarray, resid: np.ndarray, sigma: float, m: int, value: float, *,
              level: float, n_boot: int, seed: Seed, cluster: ArrayLike | None,
              estimator: str) -> tuple[float, tuple[float, float], str, str, dict]:
    """The inverted-test interval on a grid of at most ``INVERSION_GRID`` points."""
    codes, n_units = cluster_codes(cluster, conf.shape[0])
    m_inv = min(m, max(INVERSION_GRID, int(8.0 / sigma) + 1))
    mean, factor, weights = smooth_factor(conf, resid, sigma, m_inv, codes, n_units)
    if factor is None or not np.any(factor):
        status, message = no_variation("a single item, or every residual equal")
        return value, (float("nan"), float("nan")), status, message, {"plugin": value}
    inv = invert_norm(mean, None, weights, level=level, n_sim=n_boot, seed=seed,
                      cov_factor=factor)
    reported, ci, det = inversion_report(inv, value, level, estimator)
    det.update(inversion_grid=m_inv, bootstrap=None)
    return reported, ci, "ok", "", det
