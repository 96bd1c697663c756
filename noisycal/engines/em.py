"""EM and MAP-EM for the Dawid–Skene family (full, one-coin, score-group prevalences).

Functional core (STYLE rule 1): :func:`e_step`, :func:`m_step` and :func:`run_em` are pure
JAX functions; :func:`fit_em` runs several starts in one jitted, vmapped call. The E-step
uses the model's own likelihood, :func:`noisycal.models.dawid_skene.class_log_likelihood`.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from noisycal.models.dawid_skene import (
    LOG_FLOOR,
    DSData,
    class_log_likelihood,
    one_coin_confusion,
)

__all__ = [
    "EMState",
    "posteriors_at",
    "loglik_at",
    "vote_agreement",
    "e_step",
    "m_step",
    "run_em",
    "fit_em",
    "bootstrap_em",
    "collapse_patterns",
    "log_prior",
]

#: Sub-slots per (annotator, label) accumulator in the M-step scatter-add (power of two).
_SPLIT = 16


class EMState(NamedTuple):
    """State carried by the EM loop.

    Attributes
    ----------
    post : (n_items, K)
        Item-class posteriors from the latest E-step.
    prevalence : (n_groups, K)
    confusion : (n_annotators, K, K)
        Parameters from the latest M-step (``post`` was computed from them).
    objective : scalar
        Mean log-likelihood per item (plus the mean log prior for MAP-EM).
    loglik : scalar
        Total log-likelihood at ``prevalence``/``confusion``.
    n_iter : int
        Completed iterations.
    converged : bool
        Whether the objective changed by less than ``tol`` in the last iteration.
    """

    post: jax.Array
    prevalence: jax.Array
    confusion: jax.Array
    objective: jax.Array
    loglik: jax.Array
    n_iter: jax.Array
    converged: jax.Array


def log_prior(prevalence: jax.Array, confusion: jax.Array, alpha: jax.Array | None,
              beta: jax.Array | None, one_coin: bool) -> jax.Array:
    """Log Dirichlet prior density up to constants (0 when no prior is given)."""
    lp = jnp.zeros(())
    if alpha is not None:
        lp += jnp.sum((alpha - 1.0) * jnp.log(jnp.maximum(prevalence, LOG_FLOOR)))
    if beta is not None:
        if one_coin:
            K = confusion.shape[-1]
            acc = jnp.diagonal(confusion, axis1=1, axis2=2)[:, 0]
            a, b = beta[0, 0], (K - 1) * beta[0, 1]
            lp += jnp.sum((a - 1.0) * jnp.log(jnp.maximum(acc, LOG_FLOOR))
                          + (b - 1.0) * jnp.log(jnp.maximum(1.0 - acc, LOG_FLOOR)))
        else:
            lp += jnp.sum((beta - 1.0) * jnp.log(jnp.maximum(confusion, LOG_FLOOR)))
    return lp


def e_step(prevalence: jax.Array, confusion: jax.Array, data: DSData,
           gold: jax.Array | None) -> tuple[jax.Array, jax.Array]:
    """Item posteriors and each item's log-likelihood, shapes (n_items, K) and (n_items,).

    Items with a gold label (``gold >= 0``) have their posterior clamped to it, and
    contribute the joint log-probability of their class and ratings.
    """
    ll = class_log_likelihood({"confusion": confusion}, data)
    joint = ll + jnp.log(jnp.maximum(prevalence, LOG_FLOOR))[data.group]
    lse = jax.nn.logsumexp(joint, axis=1)
    post = jnp.exp(joint - lse[:, None])
    if gold is not None:
        known = gold >= 0
        onehot = jax.nn.one_hot(jnp.where(known, gold, 0), data.n_classes, dtype=post.dtype)
        post = jnp.where(known[:, None], onehot, post)
        lse = jnp.where(known, jnp.take_along_axis(
            joint, jnp.where(known, gold, 0)[:, None], axis=1)[:, 0], lse)
    return post, lse


def m_step(post: jax.Array, data: DSData, alpha: jax.Array | None, beta: jax.Array | None,
           one_coin: bool, weights: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Closed-form (MAP-)M-step: prevalence per group and confusion matrices.

    With Dirichlet priors the pseudo-counts ``alpha - 1`` and ``beta - 1`` are added to the
    expected counts (posterior mode on the probability scale). ``weights`` (n_items,)
    weight the items (bootstrap refits).
    """
    K, J, L = data.n_classes, data.n_annotators, data.n_groups
    if weights is not None:
        post = post * weights[:, None]
    n_g = jax.ops.segment_sum(post, data.group, num_segments=L)  # (L, K)
    if alpha is not None:
        n_g = n_g + (alpha - 1.0)
    tot = jnp.sum(n_g, axis=1, keepdims=True)
    # a group with no (weighted) items keeps a uniform prevalence, not 0/0: it happens
    # when a bootstrap resample draws no item of a small group
    prevalence = jnp.where(tot > 0, n_g / jnp.where(tot > 0, tot, 1.0), 1.0 / K)
    # expected counts[j, true, observed]; split accumulators avoid scatter contention
    R = data.item.shape[0]
    seg = (data.annotator * K + data.label) * _SPLIT + jnp.bitwise_and(
        jnp.arange(R, dtype=jnp.int32), _SPLIT - 1)
    acc = jax.ops.segment_sum(post[data.item], seg, num_segments=J * K * _SPLIT)
    counts = acc.reshape(J, K, _SPLIT, K).sum(axis=2).transpose(0, 2, 1)  # (J, true, obs)
    if one_coin:
        correct = jnp.trace(counts, axis1=1, axis2=2)
        total = jnp.sum(counts, axis=(1, 2))
        if beta is not None:
            a, b = beta[0, 0], (K - 1) * beta[0, 1]
            accuracy = (correct + a - 1.0) / (total + a + b - 2.0)
        else:
            accuracy = correct / jnp.maximum(total, LOG_FLOOR)
        return prevalence, one_coin_confusion(accuracy, K)
    if beta is not None:
        counts = counts + (beta - 1.0)
    rows = jnp.sum(counts, axis=2, keepdims=True)
    confusion = jnp.where(rows > 0, counts / jnp.where(rows > 0, rows, 1.0), 1.0 / K)
    return prevalence, confusion


def run_em(post0: jax.Array, data: DSData, gold: jax.Array | None, alpha: jax.Array | None,
           beta: jax.Array | None, *, one_coin: bool, max_iter: int, tol: float,
           weights: jax.Array | None = None) -> EMState:
    """EM from initial item posteriors until the mean objective changes by < ``tol``."""
    n = data.n_items if weights is None else jnp.sum(weights)

    def objective(prev: jax.Array, conf: jax.Array, loglik: jax.Array) -> jax.Array:
        return (loglik + log_prior(prev, conf, alpha, beta, one_coin)) / n

    def step(state: EMState) -> EMState:
        prev, conf = m_step(state.post, data, alpha, beta, one_coin, weights)
        post, lse = e_step(prev, conf, data, gold)
        loglik = jnp.sum(lse) if weights is None else jnp.sum(
            jnp.where(weights > 0, weights * lse, 0.0))
        obj = objective(prev, conf, loglik)
        converged = jnp.abs(obj - state.objective) < tol
        return EMState(post, prev, conf, obj, loglik, state.n_iter + 1, converged)

    def cond(state: EMState) -> jax.Array:
        return (state.n_iter < max_iter) & ~state.converged & jnp.isfinite(state.objective)

    if gold is not None:
        known = gold >= 0
        post0 = jnp.where(known[:, None], jax.nn.one_hot(jnp.where(known, gold, 0),
                                                         data.n_classes), post0)
    K, J, L = data.n_classes, data.n_annotators, data.n_groups
    init = EMState(post0, jnp.full((L, K), 1.0 / K), jnp.full((J, K, K), 1.0 / K),
                   jnp.asarray(-jnp.inf), jnp.asarray(-jnp.inf), jnp.asarray(0),
                   jnp.asarray(False))
    # the first step always runs (objective -inf is not finite, so bypass cond once)
    return jax.lax.while_loop(cond, step, step(init))


def split_data(data: DSData) -> tuple[tuple, tuple]:
    """(arrays, static sizes) of ``data``, the form the jitted helpers take."""
    return ((data.item, data.annotator, data.label, data.group),
            (data.n_items, data.n_annotators, data.n_classes, data.n_groups))


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol"))
def _fit_em(post0: jax.Array, arrays: tuple, gold: jax.Array | None, alpha: jax.Array | None,
            beta: jax.Array | None, weights: jax.Array | None, *, sizes: tuple,
            one_coin: bool, max_iter: int, tol: float) -> EMState:
    data = DSData(*arrays, *sizes)
    return jax.vmap(lambda p: run_em(p, data, gold, alpha, beta, one_coin=one_coin,
                                     max_iter=max_iter, tol=tol, weights=weights))(post0)


def fit_em(post0: jax.Array, data: DSData, gold: jax.Array | None, alpha: jax.Array | None,
           beta: jax.Array | None, *, one_coin: bool, max_iter: int, tol: float,
           weights: jax.Array | None = None) -> EMState:
    """Run EM from a stack of starts ``post0`` of shape (n_starts, n_items, K), vmapped
    and jitted (the sizes in ``data`` are static). ``weights`` count each row's items
    (rating patterns: see :func:`collapse_patterns`)."""
    arrays, sizes = split_data(data)
    return _fit_em(post0, arrays, gold, alpha, beta, weights, sizes=sizes, one_coin=one_coin,
                   max_iter=max_iter, tol=tol)


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol", "n_boot"))
def _bootstrap_em(rng_key: jax.Array, post0: jax.Array, arrays: tuple, gold: jax.Array | None,
                  alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array, *,
                  sizes: tuple, one_coin: bool, max_iter: int, tol: float,
                  n_boot: int) -> EMState:
    data = DSData(*arrays, *sizes)
    n = pattern.shape[0]

    def one(key: jax.Array) -> EMState:
        idx = jax.random.randint(key, (n,), 0, n, dtype=jnp.int32)
        w = jnp.zeros(data.n_items).at[pattern[idx]].add(1.0)
        st = run_em(post0, data, gold, alpha, beta, one_coin=one_coin, max_iter=max_iter,
                    tol=tol, weights=w)
        return st._replace(post=jnp.zeros((0,)))  # do not keep n_boot posteriors

    return jax.lax.map(one, jax.random.split(rng_key, n_boot))


def bootstrap_em(rng_key: jax.Array, post0: jax.Array, data: DSData, gold: jax.Array | None,
                 alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array, *,
                 one_coin: bool, max_iter: int, tol: float, n_boot: int) -> EMState:
    """EM refits on ``n_boot`` bootstrap resamples of the items, each started from
    ``post0`` (the fitted posteriors), so labels keep their orientation.

    ``data`` holds one row per rating pattern and ``pattern`` (n_items,) maps every
    original item to its pattern; a resample of items becomes pattern weights.
    """
    arrays, sizes = split_data(data)
    return _bootstrap_em(rng_key, post0, arrays, gold, alpha, beta, pattern, sizes=sizes,
                         one_coin=one_coin, max_iter=max_iter, tol=tol, n_boot=n_boot)


def collapse_patterns(item: np.ndarray, code: np.ndarray, n_items: int,
                      extra: tuple[np.ndarray, ...] = ()) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Group items with identical rating patterns (exact sufficient statistics of EM).

    Items whose multisets of (annotator, label) codes are equal (and whose ``extra``
    keys, e.g. group and gold label, are equal) have identical posteriors under every
    Dawid–Skene model, so EM can run on one representative per pattern weighted by its
    multiplicity. A pattern is identified by two independent 64-bit multiset hashes
    (sums of fixed pseudo-random keys of its codes), so two different patterns collide
    with probability about 2**-128 per pair.

    Returns
    -------
    pattern : (n_items,) pattern index of each item
    representative : (n_patterns,) one item of each pattern
    counts : (n_patterns,) items per pattern
    """
    keys = np.random.default_rng(20261130).integers(0, 2**63, size=(2, int(code.max()) + 1),
                                                     dtype=np.uint64)
    h = np.zeros((n_items, 2 + len(extra)), dtype=np.uint64)
    order = np.argsort(item, kind="stable")
    starts = np.searchsorted(item[order], np.arange(n_items))
    sorted_code = code[order]
    with np.errstate(over="ignore"):  # uint64 sums wrap around: a hash, not a count
        h[:, 0] = np.add.reduceat(keys[0][sorted_code], starts)
        h[:, 1] = np.add.reduceat(keys[1][sorted_code], starts)
    for c, e in enumerate(extra):
        h[:, 2 + c] = np.asarray(e).astype(np.int64).astype(np.uint64)
    # one fast 1-D unique on a 64-bit digest of the whole row, then a check that every
    # item agrees with its representative on all columns (else the exact 2-D unique)
    mix = np.random.default_rng(7).integers(1, 2**63, size=h.shape[1], dtype=np.uint64) | 1
    with np.errstate(over="ignore"):
        digest = (h * mix).sum(axis=1)
    _, rep, pattern, counts = np.unique(digest, return_index=True, return_inverse=True,
                                        return_counts=True)
    pattern = pattern.ravel()
    if not np.array_equal(h, h[rep][pattern]):  # a digest collision (probability ~1e-7)
        _, rep, pattern, counts = np.unique(h, axis=0, return_index=True,
                                            return_inverse=True, return_counts=True)
        pattern = pattern.ravel()
    return pattern.astype(np.int32), rep, counts




@partial(jax.jit, static_argnames=("sizes", "mode"))
def _draws_map(prevalence: jax.Array, confusion: jax.Array, arrays: tuple, vote: jax.Array,
               *, sizes: tuple, mode: str) -> jax.Array:
    data = DSData(*arrays, *sizes)

    def one(pc: tuple) -> jax.Array:
        post, lse = e_step(pc[0], pc[1], data, None)
        if mode == "agree":
            return post.T @ vote
        if mode == "loglik":
            return jnp.sum(lse)
        return post

    out = jax.lax.map(one, (prevalence, confusion), batch_size=64)
    return out.mean(0) if mode == "mean" else out


def posteriors_at(prevalence: jax.Array, confusion: jax.Array, data: DSData, *,
                  mean: bool = False) -> jax.Array:
    """E-step posteriors at D parameter sets (``prevalence`` (D, L, K), ``confusion``
    (D, J, K, K)): shape (D, n_items, K), or with ``mean=True`` their average over the
    D sets (n_items, K), the Rao-Blackwellised posteriors of a sampler's draws. Jitted
    with the sizes static, so same-shaped refits reuse the compiled code."""
    arrays, sizes = split_data(data)
    return _draws_map(prevalence, confusion, arrays, jnp.zeros((0, 0)), sizes=sizes,
                      mode="mean" if mean else "each")


def loglik_at(prevalence: jax.Array, confusion: jax.Array, data: DSData) -> jax.Array:
    """Marginal log-likelihood (D,) at D parameter sets (shapes as in posteriors_at)."""
    arrays, sizes = split_data(data)
    return _draws_map(prevalence, confusion, arrays, jnp.zeros((0, 0)), sizes=sizes,
                      mode="loglik")


def vote_agreement(prevalence: jax.Array, confusion: jax.Array, data: DSData,
                   vote: jax.Array) -> jax.Array:
    """Per parameter set, ``posterior.T @ vote`` (D, K, K) with ``vote`` an (n_items, K)
    one-hot matrix: how much each latent class agrees with each voted class."""
    arrays, sizes = split_data(data)
    return _draws_map(prevalence, confusion, arrays, vote, sizes=sizes, mode="agree")
