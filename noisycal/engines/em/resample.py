"""Bootstrap refits of EM: the one resample loop over items.

EM runs on distinct rating patterns weighted by their counts
(:func:`noisycal.engines.em.dawid_skene.collapse_patterns`), so a bootstrap resample of the
items is a vector of pattern weights. :func:`resample_refit` draws one resample and refits
EM from a given start (its draw is :func:`~noisycal.intervals.bootstrap.multinomial_counts`,
the one bootstrap-weight draw); it is pure JAX, so callers vmap or ``lax.map`` it (the
fit's parameter draws, :func:`bootstrap_em`). :func:`weighted_refits` refits EM under
given item weights, one row per replicate, with an optional statistic of each refit
computed in the same compiled loop (behind
:meth:`~noisycal.engines.results.AnnotatorFit.refit`, which the refit NC-ECE of
:mod:`noisycal.metrics.nc.refit` calls).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from noisycal.models.dawid_skene import DSData

from ..._util.progress import tick
from ...intervals.bootstrap import multinomial_counts
from .dawid_skene import EMState, join_data, run_em, split_data

__all__ = ["resample_weights", "resample_refit", "bootstrap_em", "weighted_refits"]


def resample_weights(rng_key: jax.Array, pattern: jax.Array, n_patterns: int
                     ) -> tuple[jax.Array, jax.Array]:
    """One bootstrap resample of the items, as item and pattern multiplicities.

    Parameters
    ----------
    rng_key : jax key
    pattern : int array of shape (n_items,)
        Rating pattern of every original item.
    n_patterns : int
        Number of patterns (static).

    Returns
    -------
    item_weights : (n_items,)
        How often each item was drawn (n_items draws with replacement).
    pattern_weights : (n_patterns,)
        Their sums per pattern.
    """
    w_items = multinomial_counts(rng_key, pattern.shape[0])
    return w_items, jax.ops.segment_sum(w_items, pattern, num_segments=n_patterns)


def resample_refit(rng_key: jax.Array, post0: jax.Array, data: DSData, gold: jax.Array | None,
                   alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array, *,
                   one_coin: bool, max_iter: int, tol: float) -> tuple[jax.Array, EMState]:
    """EM refitted on one bootstrap resample of the items, started from ``post0``.

    Parameters
    ----------
    rng_key : jax key
    post0 : (n_patterns, K)
        Start (the fitted posteriors, so the refit keeps the fit's latent labelling).
    data : DSData
        One row per rating pattern.
    gold, alpha, beta
        Gold labels per pattern (or None) and Dirichlet priors, as in
        :func:`noisycal.engines.em.dawid_skene.run_em`.
    pattern : int array of shape (n_items,)
        Rating pattern of every original item.
    one_coin, max_iter, tol
        As in :func:`noisycal.engines.em.dawid_skene.run_em`.

    Returns
    -------
    item_weights : (n_items,)
        The resample's multiplicity of every item.
    state : EMState
        The refit.
    """
    w_items, w_pat = resample_weights(rng_key, pattern, data.n_items)
    st = run_em(post0, data, gold, alpha, beta, one_coin=one_coin, max_iter=max_iter,
                tol=tol, weights=w_pat)
    return w_items, st


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol", "n_boot",
                                   "progress"))
def _bootstrap_em(rng_key: jax.Array, post0: jax.Array, arrays: tuple, gold: jax.Array | None,
                  alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array, *,
                  sizes: tuple, one_coin: bool, max_iter: int, tol: float,
                  n_boot: int, progress: bool = False) -> EMState:
    data = join_data(arrays, sizes)

    def one(key: jax.Array) -> EMState:
        _, st = resample_refit(key, post0, data, gold, alpha, beta, pattern,
                               one_coin=one_coin, max_iter=max_iter, tol=tol)
        if progress:
            tick(st.n_iter)
        return st._replace(post=jnp.zeros((0,)))  # do not keep n_boot posteriors

    return jax.lax.map(one, jax.random.split(rng_key, n_boot))


def bootstrap_em(rng_key: jax.Array, post0: jax.Array, data: DSData, gold: jax.Array | None,
                 alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array, *,
                 one_coin: bool, max_iter: int, tol: float, n_boot: int,
                 progress: bool = False) -> EMState:
    """EM refits on ``n_boot`` bootstrap resamples of the items (jitted, ``lax.map``).

    Parameters
    ----------
    rng_key : jax key
    post0, data, gold, alpha, beta, pattern, one_coin, max_iter, tol
        As in :func:`resample_refit`.
    n_boot : int
        Number of resamples.
    progress : bool, default=False
        Move the open progress bar (:mod:`noisycal._util.progress`) once per refit.

    Returns
    -------
    EMState
        Stacked over the resamples (``post`` is dropped, an empty array).
    """
    arrays, sizes = split_data(data)
    return _bootstrap_em(rng_key, post0, arrays, gold, alpha, beta, pattern, sizes=sizes,
                         one_coin=one_coin, max_iter=max_iter, tol=tol, n_boot=n_boot,
                         progress=progress)


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol", "draw",
                                   "statistic", "progress"))
def _weighted_refits(weights: jax.Array, post0: jax.Array, perm: jax.Array, arrays: tuple,
                     alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array,
                     group: jax.Array, args: Any, *, sizes: tuple, one_coin: bool,
                     max_iter: int, tol: float, draw: Callable[..., Any] | None,
                     statistic: Callable[..., Any] | None, progress: bool = False,
                     gold: jax.Array | None = None) -> tuple:
    from ...correction.labels import marginal_prevalence

    data = join_data(arrays, sizes)

    def one(x: jax.Array) -> tuple:
        w = x if draw is None else draw(x, args)
        w_pat = jax.ops.segment_sum(w, pattern, num_segments=data.n_items)
        st = run_em(post0, data, gold, alpha, beta, one_coin=one_coin, max_iter=max_iter,
                    tol=tol, weights=w_pat)
        if progress:
            tick(st.n_iter)
        # from the latent labelling EM ran in to the fit's class order
        confusion = st.confusion[:, perm, :]
        group_prev = st.prevalence[:, perm]
        # groups without weight in this replicate weigh 0
        mu = marginal_prevalence(group_prev, jax.ops.segment_sum(
            w, group, num_segments=data.n_groups), xp=jnp)
        stat = None if statistic is None else statistic(w, confusion, mu, args)
        # this order of the outputs (the statistic first) compiles to a loop about 1.5x
        # faster on CPU than the statistic last (measured, XLA CPU)
        return stat, st.converged, confusion, st.n_iter, mu, group_prev

    return jax.lax.map(one, weights)


def weighted_refits(weights: jax.Array, post0: jax.Array, perm: jax.Array, data: DSData,
                    alpha: jax.Array | None, beta: jax.Array | None, pattern: jax.Array,
                    group: jax.Array, *, one_coin: bool, max_iter: int, tol: float,
                    draw: Callable[..., Any] | None = None,
                    statistic: Callable[..., Any] | None = None, args: Any = (),
                    progress: bool = False, gold: jax.Array | None = None) -> tuple:
    """EM refitted under each row of item weights (jitted, ``lax.map`` over the rows).

    Parameters
    ----------
    weights : (B, n_items), or (B, ...) inputs of ``draw``
        Item weights of each replicate (bootstrap multiplicities, say), or what ``draw``
        makes them from.
    post0 : (n_patterns, K)
        Start, in the latent labelling EM runs in (the fitted posteriors, so each refit
        keeps the fit's labelling).
    perm : int array of shape (K,)
        The fit's classes as a permutation of the latent labelling (``latent_perm``).
    data : DSData
        One row per rating pattern.
    alpha, beta
        Dirichlet priors, as in :func:`noisycal.engines.em.dawid_skene.run_em`.
    pattern : int array of shape (n_items,)
        Rating pattern of every item.
    group : int array of shape (n_items,)
        Group of every item.
    one_coin, max_iter, tol
        As in :func:`noisycal.engines.em.dawid_skene.run_em`.
    draw : callable, optional
        ``draw(x, args) -> (n_items,)``: one replicate's item weights from its row ``x``
        of ``weights`` (a random key, say), inside the compiled loop; static (hashable).
    statistic : callable, optional
        ``statistic(w, confusion, prevalence, args)``: a pytree of arrays from one
        replicate's item weights ``w`` (n_items,), refitted channels (J, K, K) and
        marginal prevalence (K,), in the fit's class order; traced inside the compiled
        loop, and static (hashable: a module-level function or a frozen dataclass).
    args : pytree of arrays
        Passed to ``draw`` and ``statistic`` as traced arguments.
    progress : bool, default=False
        Move the open progress bar (:mod:`noisycal._util.progress`) once per refit.
    gold : int array of shape (n_patterns,), optional
        Gold class of every pattern in the latent labelling, ``-1`` when unknown: those
        patterns' posteriors are clamped in every refit, as in
        :func:`noisycal.engines.em.dawid_skene.run_em` (patterns must not mix gold
        classes, :func:`noisycal.engines.patterns.collapse_patterns`).

    Returns
    -------
    tuple
        Stacked over the replicates: the statistic (or None), converged (B,), channels
        (B, J, K, K), iterations (B,), marginal prevalences (B, K) and group prevalences
        (B, L, K).
    """
    arrays, sizes = split_data(data)
    return _weighted_refits(weights, post0, perm, arrays, alpha, beta, pattern, group, args,
                            sizes=sizes, one_coin=one_coin, max_iter=max_iter, tol=tol,
                            draw=draw, statistic=statistic, progress=progress, gold=gold)
