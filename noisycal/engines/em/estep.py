"""The EM E-step on the probability scale.

It is the fast path of :func:`noisycal.engines.em.dawid_skene.run_em`.

The E-step of Dawid and Skene (1979), "Maximum likelihood estimation of observer
error-rates using the EM algorithm" (their Eq. 2.5), is ``post[i, k] proportional to
prevalence[g_i, k] * prod over item i's ratings r of confusion[annotator_r, k, label_r]``.
:func:`noisycal.engines.em.dawid_skene.e_step` computes it on the log scale (a sum of logs, then
``logsumexp`` and ``exp`` over every (item, class) entry). On a CPU the ``exp`` and ``log``
of every entry cost more than the gathers themselves, so this module multiplies the
probabilities instead:

* each row ``(annotator, observed)`` of the (floored) confusion table is divided by its
  largest entry over the true classes, so every factor lies in [1e-300, 1] and one class
  of every rating has factor 1; the divisor is the same for every class, so it cancels in
  the posterior and enters the log-likelihood once per rating code (a constant table of
  weighted code counts times the log of the divisors);
* an item's unnormalised posterior is ``prevalence * product of its slots' factors`` and
  its log-likelihood ``log(sum over classes) + sum of its ratings' log divisors``: one
  ``log`` per item instead of an ``exp`` per (item, class) entry and two logs.

Exactness. The products only decrease from slot to slot, so if an item's sum over
classes is at least :data:`PROB_TINY` every intermediate with any weight in it was a
normal float64 number, each entry carries a few rounding errors (relative 1e-16 each) and
the posteriors equal the log-scale ones to about 1e-15 (the log scale itself loses
``|log joint| * 2**-52``). When some item falls below :data:`PROB_TINY` (contradicting
ratings from near-deterministic annotators: the product underflows where the log scale
does not), that iteration's E-step is redone on the log scale (a ``lax.cond``, not a
``select``: the caller must not vmap it, see :func:`noisycal.engines.em.dawid_skene.fit_em`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from noisycal.models.dawid_skene import LOG_FLOOR, DSData

__all__ = ["PROB_TINY", "PROB_MIN_ITEMS", "prob_applies", "code_weights", "prob_e_step"]

#: An item whose sum over classes of the scaled products falls below this value sends the
#: iteration's E-step to the log scale (see the module docstring). float64 numbers are
#: normal down to 2.2e-308, so entries 1e-58 below the sum still carry 15 digits.
PROB_TINY = 1e-250


#: :func:`noisycal.engines.em.dawid_skene.fit_em` uses the probability scale from this many EM rows
#: (items or rating patterns) on. Our choice: it saves about 0.14 microseconds per row and
#: iteration on a CPU (the log-scale E-step's exp and log) but compiles the log-scale
#: E-step too (its fallback), about 1.5 s more per new data shape; below some 10^4 rows
#: a default fit (10 starts, tens of iterations) gains less than that.
PROB_MIN_ITEMS = 10_000


def prob_applies(data: DSData) -> bool:
    """Whether the probability-scale E-step applies: it needs the slot layout."""
    return data.slots is not None


def code_weights(data: DSData, weights: jax.Array | None) -> jax.Array:
    """``(J K + 1,)`` weighted number of ratings with each code ``annotator * K + label``
    (the last entry counts the empty slots), constant over EM iterations.

    Parameters
    ----------
    data : DSData
        With the slot layout.
    weights : (n_items,), optional
        Item weights (1 when not given).
    """
    sl = data.slots
    C = data.n_annotators * data.n_classes + 1
    w = jnp.ones(data.n_items) if weights is None else weights
    acc = jnp.zeros(C, w.dtype)
    for s in range(sl.code.shape[1]):
        acc = acc.at[sl.code[:, s]].add(w)
    if sl.over_code.shape[0]:
        acc = acc.at[sl.over_code].add(w[sl.over_item])
    return acc


def _tables(prevalence: jax.Array, confusion: jax.Array) -> tuple[jax.Array, jax.Array,
                                                                  jax.Array]:
    """Scaled factor table (J K + 1, K), its log divisors (J K + 1,) and the floored
    prevalence (L, K)."""
    J, K = confusion.shape[0], confusion.shape[-1]
    rows = jnp.maximum(confusion, LOG_FLOOR).transpose(0, 2, 1).reshape(J * K, K)
    top = jnp.max(rows, axis=1)
    table = jnp.concatenate([rows / top[:, None], jnp.ones((1, K), rows.dtype)])
    log_top = jnp.concatenate([jnp.log(top), jnp.zeros(1, rows.dtype)])
    return table, log_top, jnp.maximum(prevalence, LOG_FLOOR)


def prob_e_step(prevalence: jax.Array, confusion: jax.Array, data: DSData,
                gold: jax.Array | None, weights: jax.Array | None, code_w: jax.Array
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Posteriors (n_items, K), the weighted log-likelihood and whether it is exact.

    The same numbers as :func:`noisycal.engines.em.dawid_skene.e_step` (posteriors) and the
    weighted sum of its per-item log-likelihoods, computed on the probability scale (module
    docstring); the third output is False when some item's scaled sum fell below
    :data:`PROB_TINY`, in which case the first two must not be used.

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    data : DSData
        With the slot layout (:func:`prob_applies`).
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown): their posteriors are clamped and they
        contribute the joint probability of their class and ratings.
    weights : (n_items,), optional
        Item weights (1 when not given).
    code_w : (J K + 1,)
        :func:`code_weights` of the same data and weights.
    """
    table, log_top, prev = _tables(prevalence, confusion)
    K, sl = data.n_classes, data.slots
    u = prev[0][None, :] if data.n_groups == 1 else prev[data.group]
    for s in range(sl.code.shape[1]):
        u = u * table[sl.code[:, s]]
    if sl.over_code.shape[0]:
        u = u * jax.ops.segment_prod(table[sl.over_code], sl.over_item,
                                     num_segments=data.n_items, indices_are_sorted=True)
    u = jnp.broadcast_to(u, (data.n_items, K))
    tot = jnp.sum(u, axis=1)
    post = u * (1.0 / tot)[:, None]  # n divisions, not n K (one more rounding)
    if gold is not None:
        known = gold >= 0
        at = jnp.take_along_axis(u, jnp.where(known, gold, 0)[:, None], axis=1)[:, 0]
        tot = jnp.where(known, at, tot)
        onehot = jax.nn.one_hot(jnp.where(known, gold, 0), K, dtype=post.dtype)
        post = jnp.where(known[:, None], onehot, post)
    ok = jnp.all(tot >= PROB_TINY)  # also False for a NaN
    log_tot = jnp.log(jnp.maximum(tot, PROB_TINY))
    loglik = jnp.sum(log_tot) if weights is None else jnp.sum(weights * log_tot)
    return post, loglik + jnp.dot(code_w, log_top), ok
