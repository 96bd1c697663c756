"""EM and MAP-EM for the Dawid–Skene family (full, one-coin, score-group prevalences).

Functional core (STYLE rule 1): :func:`e_step`, :func:`m_step` and :func:`run_em` are pure
JAX functions; :func:`fit_em` runs several starts in one jitted call. The E-step uses the
model's own likelihood, :func:`noisycal.models.dawid_skene.class_log_likelihood`, or the
same numbers on the probability scale (:mod:`noisycal.engines.em.estep`, for large data).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from noisycal.models.dawid_skene import (
    LOG_FLOOR,
    DSData,
    item_log_likelihood,
    joint_log_likelihood,
)

from ..._util.progress import reach, tick
from ..patterns import PatternData, collapse_patterns, pattern_data
from .channels import constrained_log_prior, constrained_m_step
from .estep import PROB_MIN_ITEMS, code_weights, prob_applies, prob_e_step
from .numpy_em import fit_em_numpy, numpy_applies

__all__ = ["EMState", "posteriors_at", "loglik_at", "vote_agreement", "e_step", "m_step",
           "run_em", "fit_em", "split_data", "join_data", "expected_counts", "bucket",
           "bucketed", "bucketed_data", "pad_rows", "BUCKET_MAX_ROWS",
           "pattern_data", "PatternData", "collapse_patterns", "log_prior"]

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
              beta: jax.Array | None, one_coin: bool | str) -> jax.Array:
    """Log Dirichlet prior density up to constants (0 when no prior is given).

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    alpha : (K,), optional
        Dirichlet prior of each group's prevalence.
    beta : (K, K) or (J, K, K), optional
        Dirichlet prior of each confusion row; for the one-coin model the accuracy gets
        Beta(beta[0, 0], (K - 1) beta[0, 1]) (other channels: :mod:`.em_channels`).
    one_coin : bool or {'class_conditional', 'mace'}
    """
    lp = jnp.zeros(())
    if alpha is not None:
        lp += jnp.sum((alpha - 1.0) * jnp.log(jnp.maximum(prevalence, LOG_FLOOR)))
    if beta is not None:
        lp += (constrained_log_prior(one_coin, confusion, beta) if one_coin else
               jnp.sum((beta - 1.0) * jnp.log(jnp.maximum(confusion, LOG_FLOOR))))
    return lp


def e_step(prevalence: jax.Array, confusion: jax.Array, data: DSData,
           gold: jax.Array | None) -> tuple[jax.Array, jax.Array]:
    """Item posteriors and each item's log-likelihood, shapes (n_items, K) and (n_items,).

    The E-step of Dawid and Skene (1979), "Maximum likelihood estimation of observer
    error-rates using the EM algorithm" (their Eq. 2.5), on the model's own likelihood
    (:func:`noisycal.models.dawid_skene.joint_log_likelihood`).

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    data : DSData
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown): those items have their posterior clamped
        and contribute the joint log-probability of their class and ratings.
    """
    joint = joint_log_likelihood({"prevalence": prevalence, "confusion": confusion}, data)
    lse = item_log_likelihood(joint, gold)
    post = jnp.exp(joint - jax.nn.logsumexp(joint, axis=1)[:, None])
    if gold is not None:
        known = gold >= 0
        onehot = jax.nn.one_hot(jnp.where(known, gold, 0), data.n_classes, dtype=post.dtype)
        post = jnp.where(known[:, None], onehot, post)
    return post, lse


def m_step(post: jax.Array, data: DSData, alpha: jax.Array | None, beta: jax.Array | None,
           one_coin: bool | str, weights: jax.Array | None = None,
           confusion: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Closed-form (MAP-)M-step: prevalence per group and confusion matrices.

    With Dirichlet priors the pseudo-counts ``alpha - 1`` and ``beta - 1`` are added to the
    expected counts (posterior mode on the probability scale).

    Parameters
    ----------
    post : (n_items, K)
        Item posteriors from the E-step.
    data : DSData
    alpha, beta : optional
        Dirichlet priors (see :func:`log_prior`).
    one_coin : bool or {'class_conditional', 'mace'}
        A constrained channel (:mod:`~noisycal.engines.em.channels`; True: one-coin).
    weights : (n_items,), optional
        Item weights (rating-pattern counts, bootstrap multiplicities).
    confusion : (J, K, K), optional
        The previous channel (MACE's generalised M-step starts there).

    Returns
    -------
    prevalence (L, K), confusion (J, K, K)
    """
    K, L = data.n_classes, data.n_groups
    if weights is not None:
        post = post * weights[:, None]
    n_g = (jnp.sum(post, axis=0, keepdims=True) if L == 1
           else jax.ops.segment_sum(post, data.group, num_segments=L))  # (L, K)
    if alpha is not None:
        n_g = n_g + (alpha - 1.0)
    tot = jnp.sum(n_g, axis=1, keepdims=True)
    # a group with no (weighted) items keeps a uniform prevalence, not 0/0: it happens
    # when a bootstrap resample draws no item of a small group
    prevalence = jnp.where(tot > 0, n_g / jnp.where(tot > 0, tot, 1.0), 1.0 / K)
    counts = expected_counts(post, data)  # (J, true, observed)
    if one_coin:  # a constrained channel (noisycal.engines.em.channels)
        return prevalence, constrained_m_step(one_coin, counts, beta, confusion)
    if beta is not None:
        counts = counts + (beta - 1.0)
    rows = jnp.sum(counts, axis=2, keepdims=True)
    confusion = jnp.where(rows > 0, counts / jnp.where(rows > 0, rows, 1.0), 1.0 / K)
    return prevalence, confusion


def expected_counts(post: jax.Array, data: DSData) -> jax.Array:
    """Expected rating counts ``[annotator, true, observed]`` given item posteriors.

    ``counts[j, k, l] = sum over ratings r of annotator j with label l of post[item_r, k]``
    (Dawid and Skene 1979, Eq. 2.3 before normalising). With the slot layout
    (:class:`noisycal.models.dawid_skene.Slots`) it is one scatter-add of the (n_items, K)
    posteriors per slot, with no (n_ratings, K) gather; otherwise a segment sum of the
    gathered posteriors of every rating.

    Parameters
    ----------
    post : (n_items, K)
        Posteriors (already multiplied by item weights, if any).
    data : DSData

    Returns
    -------
    (n_annotators, K, K)
    """
    K, J = data.n_classes, data.n_annotators
    if data.slots is None:
        # split accumulators avoid scatter contention
        R = data.item.shape[0]
        seg = (data.annotator * K + data.label) * _SPLIT + jnp.bitwise_and(
            jnp.arange(R, dtype=jnp.int32), _SPLIT - 1)
        acc = jax.ops.segment_sum(post[data.item], seg, num_segments=J * K * _SPLIT)
        return acc.reshape(J, K, _SPLIT, K).sum(axis=2).transpose(0, 2, 1)
    sl = data.slots
    acc = jnp.zeros((J * K + 1, K), post.dtype)  # row J K collects the empty slots
    for s in range(sl.code.shape[1]):
        acc = acc.at[sl.code[:, s]].add(post)
    if sl.over_code.shape[0]:
        acc = acc.at[sl.over_code].add(post[sl.over_item])
    return acc[:J * K].reshape(J, K, K).transpose(0, 2, 1)


def run_em(post0: jax.Array, data: DSData, gold: jax.Array | None, alpha: jax.Array | None,
           beta: jax.Array | None, *, one_coin: bool, max_iter: int, tol: float,
           weights: jax.Array | None = None, prob: bool = False,
           progress: bool = False) -> EMState:
    """EM from initial item posteriors until the mean objective changes by < ``tol``.

    A ``lax.while_loop`` of M-step then E-step; the objective is the mean
    log-likelihood per (weighted) item, plus the mean log prior for MAP-EM.

    Parameters
    ----------
    post0 : (n_items, K)
        Initial posteriors (gold items are clamped before the first M-step).
    data : DSData
    gold : int array of shape (n_items,), optional
        Known classes, ``-1`` where unknown.
    alpha, beta : optional
        Dirichlet priors (MAP-EM).
    one_coin : bool
    max_iter : int
        At most this many iterations (at least one runs).
    tol : float
        Convergence tolerance on the objective.
    weights : (n_items,), optional
        Item weights (pattern counts or bootstrap multiplicities).
    prob : bool, default=False
        E-step on the probability scale (:mod:`noisycal.engines.em.estep`, the same
        numbers to about 1e-15, faster), redone on the log scale in an iteration where
        it would underflow. Needs the slot layout (else ignored) and an unbatched call:
        under ``vmap`` the ``lax.cond`` becomes a ``select`` that runs both E-steps.
    progress : bool, default=False
        Report each iteration's count to the open progress bar (:mod:`noisycal._util.progress`).

    Returns
    -------
    EMState
        ``loglik`` is the log-likelihood at the returned parameters (the number EM
        monitors, without the prior).
    """
    n = data.n_items if weights is None else jnp.sum(weights)

    def objective(prev: jax.Array, conf: jax.Array, loglik: jax.Array) -> jax.Array:
        return (loglik + log_prior(prev, conf, alpha, beta, one_coin)) / n

    def log_e_step(pc: tuple) -> tuple[jax.Array, jax.Array]:
        post, lse = e_step(pc[0], pc[1], data, gold)
        return post, (jnp.sum(lse) if weights is None else jnp.sum(
            jnp.where(weights > 0, weights * lse, 0.0)))

    prob = prob and prob_applies(data)
    code_w = code_weights(data, weights) if prob else None

    def step(state: EMState) -> EMState:
        prev, conf = m_step(state.post, data, alpha, beta, one_coin, weights, state.confusion)
        if prob:
            post, loglik, ok = prob_e_step(prev, conf, data, gold, weights, code_w)
            post, loglik = jax.lax.cond(ok, lambda pc: (post, loglik), log_e_step,
                                        (prev, conf))
        else:
            post, loglik = log_e_step((prev, conf))
        obj = objective(prev, conf, loglik)
        converged = jnp.abs(obj - state.objective) < tol
        if progress:
            reach(state.n_iter + 1)
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
    """(arrays, static sizes) of ``data``, the form the jitted helpers take.

    ``arrays`` holds the rating arrays, the groups and the slot layout (or ``None``);
    :func:`join_data` puts them back together.
    """
    return ((data.item, data.annotator, data.label, data.group, data.slots),
            (data.n_items, data.n_annotators, data.n_classes, data.n_groups))


def join_data(arrays: tuple, sizes: tuple) -> DSData:
    """The :class:`DSData` that :func:`split_data` took apart.

    Parameters
    ----------
    arrays, sizes : tuple
        The two halves :func:`split_data` returns.
    """
    return DSData(*arrays[:4], *sizes, arrays[4])


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol", "progress",
                                   "prob"))
def _fit_em(post0: jax.Array, arrays: tuple, gold: jax.Array | None, alpha: jax.Array | None,
            beta: jax.Array | None, weights: jax.Array | None, *, sizes: tuple,
            one_coin: bool, max_iter: int, tol: float, progress: bool = False,
            prob: bool = False) -> EMState:
    data = join_data(arrays, sizes)

    def one(p: jax.Array) -> EMState:
        st = run_em(p, data, gold, alpha, beta, one_coin=one_coin, max_iter=max_iter,
                    tol=tol, weights=weights, prob=prob, progress=progress and not prob)
        if progress and prob:
            tick(st.n_iter)
        return st

    # probability scale: one start after another (lax.map, not vmap), since its
    # fallback is a lax.cond, which vmap would turn into running both E-steps
    return jax.lax.map(one, post0) if prob else jax.vmap(one)(post0)


def fit_em(post0: jax.Array, data: DSData, gold: jax.Array | None, alpha: jax.Array | None,
           beta: jax.Array | None, *, one_coin: bool, max_iter: int, tol: float,
           weights: jax.Array | None = None, devices: Sequence[Any] | None = None,
           progress: bool = False) -> EMState:
    """Run EM from several starts in one jitted call (the sizes in ``data`` are static).

    From :data:`~noisycal.engines.em.estep.PROB_MIN_ITEMS` rows on (with the slot layout)
    the E-step runs on the probability scale and the starts one after another
    (``lax.map``); below, on the log scale with the starts vmapped. Same fit to ~1e-15.
    Small fits of the full and one-coin channels run the same iteration in NumPy instead
    (:mod:`noisycal.engines.em.numpy_em`: compiling would cost more than the fit); larger
    ones pad their rows to a bucketed size (:func:`bucket`) so that new data of a similar
    size reuse the compiled program.

    Parameters
    ----------
    post0 : (n_starts, n_items, K)
        Start posteriors.
    data, gold, alpha, beta, one_coin, max_iter, tol, progress
        As in :func:`run_em` (progress: finished starts when they run one by one).
    weights : (n_items,), optional
        Items each row stands for (rating patterns: see :func:`collapse_patterns`).
    devices : sequence of jax devices, optional
        Shard the items over these devices (``check_devices``): every per-item array
        (slots, groups, weights, gold classes, posteriors) is split along the items on a
        one-axis mesh, the rest replicated, and XLA partitions the same EM program
        (the M-step's sums become cross-device reductions). The items are padded to a
        multiple of the device count with empty, zero-weight items, removed from the
        result. Needs the slot layout (``data.slots``). ``None`` or one device: no
        sharding.

    Returns
    -------
    EMState
        Stacked over the starts.
    """
    if devices is not None and len(devices) > 1:
        return _fit_em_sharded(post0, data, gold, alpha, beta, weights, devices,
                               one_coin=one_coin, max_iter=max_iter, tol=tol)
    # concrete inputs only: under a trace (make_jaxpr, an enclosing jit) the program is
    # built as it is
    concrete = not any(isinstance(x, jax.core.Tracer) for x in (post0, data.item, weights))
    if concrete and numpy_applies(data, int(np.shape(post0)[0]), one_coin):
        return EMState(*fit_em_numpy(post0, data, gold, alpha, beta, one_coin=bool(one_coin),
                                     max_iter=max_iter, tol=tol, weights=weights,
                                     progress=progress))
    n = data.n_items
    prob = n >= PROB_MIN_ITEMS
    if concrete:
        data, post0, gold, weights = bucketed(data, post0, gold, weights, post_axis=1)
    arrays, sizes = split_data(data)
    st = _fit_em(post0, arrays, gold, alpha, beta, weights, sizes=sizes, one_coin=one_coin,
                 max_iter=max_iter, tol=tol, progress=progress, prob=prob)
    # the real rows, sliced in NumPy (a compiled slice would be one more program per n)
    return st if st.post.shape[1] == n else st._replace(post=np.asarray(st.post)[:, :n])


#: Data with at most this many rows (rating patterns or items) are padded to a bucket
#: (:func:`bucket`), so that new data of a similar size reuse the compiled EM program;
#: above it the padding (up to a quarter more rows) would cost more than compiling.
BUCKET_MAX_ROWS = 2 ** 16
#: Buckets per doubling of the size: the padding adds at most 1 / BUCKETS_PER_OCTAVE.
BUCKETS_PER_OCTAVE = 4


def bucket(n: int, minimum: int = 16, per_octave: int = BUCKETS_PER_OCTAVE) -> int:
    """The padded size of ``n`` rows: ``n`` rounded up to a multiple of
    ``2^(floor(log2(n - 1)) - log2(per_octave))`` (at least ``minimum``), so at most
    ``per_octave`` sizes per doubling.

    Parameters
    ----------
    n : int
        Rows.
    minimum : int, default=16
        The smallest padded size.
    per_octave : int, default=BUCKETS_PER_OCTAVE
        Sizes per doubling, a power of two: the padding adds at most ``1 / per_octave``.
    """
    if n <= minimum:
        return minimum
    shift = (n - 1).bit_length() - 1 - (per_octave.bit_length() - 1)
    step = 1 << max(0, shift)
    return -(-n // step) * step


def bucketed_data(data: DSData) -> DSData:
    """``data`` (with the slot layout) padded to bucketed sizes (:func:`bucket`), in
    NumPy: empty rows (every slot empty, group 0) up to ``bucket(n_items)``, the overflow
    ratings and the rating arrays (not read by the slot layout's likelihood) with empty
    codes on the last (empty) row, to one size per doubling. Give the new rows weight 0
    (:func:`pad_rows`) and they add nothing to the M-step's counts, to the
    log-likelihood, to the objective or to the identification check's Hessians: the
    numbers are the unpadded ones (to rounding: the sums run over more zeros)."""
    n, J, K = data.n_items, data.n_annotators, data.n_classes
    nb = bucket(n)
    sl = data.slots
    m, R = int(sl.over_code.shape[0]), int(data.item.shape[0])
    # the overflow ratings and the rating arrays are few or cheap: one size per doubling
    mb, Rb = (bucket(m, per_octave=1) if m else 0), bucket(R, per_octave=1)
    empty = J * K
    slots = type(sl)(pad_rows(sl.code, nb, empty), pad_rows(sl.over_item, mb, nb - 1),
                     pad_rows(sl.over_code, mb, empty))
    return DSData(pad_rows(data.item, Rb, nb - 1), pad_rows(data.annotator, Rb, 0),
                  pad_rows(data.label, Rb, 0), pad_rows(data.group, nb, 0), nb, J, K,
                  data.n_groups, slots)


def pad_rows(x: Any, size: int, value: float, axis: int = 0) -> jax.Array:
    """``x`` padded with ``value`` to ``size`` along ``axis``, in NumPy, as a JAX array
    of the same dtype.

    Parameters
    ----------
    x : array-like
    size : int
        The padded length of ``axis`` (at least its length).
    value : float
        The value of the new entries.
    axis : int, default=0
    """
    x = np.asarray(x)
    width = [(0, 0)] * x.ndim
    width[axis] = (0, size - x.shape[axis])
    return jnp.asarray(np.pad(x, width, constant_values=value), dtype=x.dtype)


def bucketed(data: DSData, post: Any, gold: Any, weights: Any, *, post_axis: int = 0
             ) -> tuple:
    """``(data, post, gold, weights)`` padded to bucketed sizes (:func:`bucketed_data`):
    the new rows have weight 0 (``weights`` None: every real row weight 1), no gold class
    and a uniform posterior; unchanged without the slot layout or above
    ``BUCKET_MAX_ROWS`` rows.

    Parameters
    ----------
    data : DSData
    post : array
        Posteriors with the rows along ``post_axis`` (EM's starts: (S, n, K), axis 1).
    gold : int array of shape (n,), optional
    weights : array of shape (n,), optional
    post_axis : int, default=0
    """
    if data.slots is None or data.n_items > BUCKET_MAX_ROWS:
        return data, post, gold, weights
    n, K = data.n_items, data.n_classes
    data = bucketed_data(data)
    nb = data.n_items
    w = np.ones(n, np.asarray(post).dtype) if weights is None else np.asarray(weights)
    return (data, pad_rows(post, nb, 1.0 / K, axis=post_axis),
            None if gold is None else pad_rows(gold, nb, -1), pad_rows(w, nb, 0.0))


def _fit_em_sharded(post0: jax.Array, data: DSData, gold: jax.Array | None,
                    alpha: jax.Array | None, beta: jax.Array | None,
                    weights: jax.Array | None, devices: Sequence[Any], *, one_coin: bool,
                    max_iter: int, tol: float) -> EMState:
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    if data.slots is None:
        raise ValueError("sharding over devices needs the slot layout of the ratings "
                         "(make_data(..., slots=True))")
    n, K = data.n_items, data.n_classes
    D = len(devices)
    extra = -n % D
    mesh = Mesh(np.asarray(devices), ("items",))

    def put(x: jax.Array, spec: Any) -> jax.Array:
        return jax.device_put(x, NamedSharding(mesh, spec))

    sl = data.slots
    code = jnp.pad(sl.code, ((0, extra), (0, 0)), constant_values=data.n_annotators * K)
    w = jnp.ones(n, post0.dtype) if weights is None else jnp.asarray(weights, post0.dtype)
    w = put(jnp.pad(w, (0, extra)), P("items"))
    g = None if gold is None else put(jnp.pad(gold, (0, extra), constant_values=-1),
                                      P("items"))
    p0 = put(jnp.pad(post0, ((0, 0), (0, extra), (0, 0)), constant_values=1.0 / K),
             P(None, "items", None))
    rep = [put(x, P()) for x in (data.item, data.annotator, data.label, sl.over_item,
                                 sl.over_code)]
    slots = type(sl)(put(code, P("items", None)), rep[3], rep[4])
    arrays = (rep[0], rep[1], rep[2], put(jnp.pad(data.group, (0, extra)), P("items")), slots)
    sizes = (n + extra, data.n_annotators, K, data.n_groups)
    st = _fit_em(p0, arrays, g, alpha, beta, w, sizes=sizes, one_coin=one_coin,
                 max_iter=max_iter, tol=tol, prob=n >= PROB_MIN_ITEMS)
    return st._replace(post=st.post[:, :n])


@partial(jax.jit, static_argnames=("sizes", "mode"))
def _draws_map(prevalence: jax.Array, confusion: jax.Array, arrays: tuple, vote: jax.Array,
               gold: jax.Array | None, weights: jax.Array | None = None, *, sizes: tuple,
               mode: str) -> jax.Array:
    data = join_data(arrays, sizes)

    def one(pc: tuple) -> jax.Array:
        post, lse = e_step(pc[0], pc[1], data, gold)
        if mode == "agree":
            return post.T @ vote
        if mode == "loglik":
            return jnp.sum(lse) if weights is None else jnp.sum(weights * lse)
        return post

    out = jax.lax.map(one, (prevalence, confusion), batch_size=64)
    return out.mean(0) if mode == "mean" else out


def posteriors_at(prevalence: jax.Array, confusion: jax.Array, data: DSData, *,
                  mean: bool = False, gold: jax.Array | None = None) -> jax.Array:
    """E-step posteriors at D parameter sets.

    Jitted with the sizes static, so same-shaped refits reuse the compiled code.

    Parameters
    ----------
    prevalence : (D, L, K)
    confusion : (D, J, K, K)
    data : DSData
    mean : bool, default=False
        Average over the D sets (the Rao-Blackwellised posteriors of a sampler's draws).
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown); their posteriors are clamped.

    Returns
    -------
    (D, n_items, K), or (n_items, K) with ``mean=True``.
    """
    arrays, sizes = split_data(data)
    return _draws_map(prevalence, confusion, arrays, jnp.zeros((0, 0)), gold, sizes=sizes,
                      mode="mean" if mean else "each")


def loglik_at(prevalence: jax.Array, confusion: jax.Array, data: DSData,
              gold: jax.Array | None = None, weights: jax.Array | None = None) -> jax.Array:
    """Log-likelihood (D,) at D parameter sets.

    Parameters
    ----------
    prevalence, confusion, data
        As in :func:`posteriors_at`.
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown): those items contribute the joint
        log-probability of their class and ratings, as in :func:`e_step`.
    weights : array of shape (n_items,), optional
        Item multiplicities (rating-pattern counts).
    """
    arrays, sizes = split_data(data)
    return _draws_map(prevalence, confusion, arrays, jnp.zeros((0, 0)), gold, weights,
                      sizes=sizes, mode="loglik")


def vote_agreement(prevalence: jax.Array, confusion: jax.Array, data: DSData,
                   vote: jax.Array) -> jax.Array:
    """How much each latent class agrees with each voted class, per parameter set.

    Parameters
    ----------
    prevalence, confusion, data
        As in :func:`posteriors_at`.
    vote : (n_items, K)
        One-hot majority vote.

    Returns
    -------
    (D, K, K)
        ``posterior.T @ vote`` at each parameter set.
    """
    arrays, sizes = split_data(data)
    return _draws_map(prevalence, confusion, arrays, vote, None, sizes=sizes, mode="agree")
