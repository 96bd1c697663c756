"""M-steps and log priors of the constrained Dawid–Skene channels.

:func:`noisycal.engines.em.dawid_skene.m_step` calls :func:`constrained_m_step` whenever its
``one_coin`` switch names a constrained channel: ``True`` (one accuracy per annotator),
``'class_conditional'`` (one accuracy per annotator and true class) or ``'mace'`` (a
spamming probability and a strategy per annotator, "Learning Whom to Trust with MACE").
Each update works on the expected counts ``n[j, k, l]`` (annotator j, true class k,
observed label l; :func:`noisycal.engines.em.dawid_skene.expected_counts`) and maximises,
or for MACE increases, ``sum n[j, k, l] log confusion[j, k, l]`` plus the log prior.

Priors travel in one array ``prior`` (the ``beta`` argument of the EM functions):

- one-coin: the (K, K) Dirichlet-row prior; the accuracy is Beta(prior[0, 0],
  (K - 1) prior[0, 1]);
- class-conditional: (2, K), ``accuracy[j, k] ~ Beta(prior[0, k], prior[1, k])``;
- MACE: (K + 2,), ``spam[j] ~ Beta(prior[0], prior[1])`` and ``strategy[j] ~
  Dirichlet(prior[2:])`` (:func:`pack_mace_prior`).

MAP updates add the pseudo-counts ``prior - 1``, so EM needs every entry >= 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from noisycal.models.channels import (
    class_conditional_confusion,
    mace_confusion,
    mace_parameters,
)
from noisycal.models.dawid_skene import LOG_FLOOR, one_coin_confusion

__all__ = ["CHANNELS", "MACE_INNER", "pack_mace_prior", "constrained_m_step",
           "constrained_log_prior", "class_conditional_m_step", "mace_inner_step",
           "mace_m_step", "mace_objective"]

#: The constrained channels named by a string (``True`` stands for the one-coin model).
CHANNELS = ("class_conditional", "mace")

#: Inner EM steps (spam indicators as latent) per MACE M-step, from each of two starts.
MACE_INNER = 50


def pack_mace_prior(spam_prior: jax.Array, strategy_prior: jax.Array) -> jax.Array:
    """The MACE ``prior`` array (K + 2,): the Beta parameters, then the Dirichlet's.

    Parameters
    ----------
    spam_prior : array of shape (2,)
    strategy_prior : array of shape (K,)
    """
    return jnp.concatenate([jnp.asarray(spam_prior), jnp.asarray(strategy_prior)])


def _log(x: jax.Array) -> jax.Array:
    return jnp.log(jnp.maximum(x, LOG_FLOOR))


def class_conditional_m_step(counts: jax.Array, prior: jax.Array | None) -> jax.Array:
    """Closed-form (MAP) accuracies (J, K) from the expected counts (J, K, K).

    ``accuracy[j, k] = (n[j, k, k] + a_k - 1) / (sum_l n[j, k, l] + a_k + b_k - 2)``
    (``a = b = 1`` without a prior); a row with no weight (no rating of that annotator on
    an item of that class, no prior) gets the uniform accuracy ``1 / K``.

    Parameters
    ----------
    counts : (J, K, K)
    prior : (2, K), optional
    """
    K = counts.shape[-1]
    correct = jnp.diagonal(counts, axis1=1, axis2=2)
    total = jnp.sum(counts, axis=2)
    if prior is not None:
        correct = correct + (prior[0] - 1.0)
        total = total + (prior[0] + prior[1] - 2.0)
    return jnp.where(total > 0, correct / jnp.where(total > 0, total, 1.0), 1.0 / K)


def mace_objective(counts: jax.Array, spam: jax.Array, strategy: jax.Array,
                   prior: jax.Array | None) -> jax.Array:
    """Per annotator (J,): ``sum_{k,l} n[j, k, l] log confusion[j, k, l]`` + log prior.

    The part of EM's expected complete-data objective that a MACE M-step changes.

    Parameters
    ----------
    counts : (J, K, K)
    spam : (J,)
    strategy : (J, K)
    prior : (K + 2,), optional
    """
    q = jnp.sum(counts * _log(mace_confusion(spam, strategy)), axis=(1, 2))
    if prior is not None:
        q = q + ((prior[0] - 1.0) * _log(spam) + (prior[1] - 1.0) * _log(1.0 - spam)
                 + jnp.sum((prior[2:] - 1.0) * _log(strategy), axis=-1))
    return q


def mace_inner_step(counts: jax.Array, spam: jax.Array, strategy: jax.Array,
                    prior: jax.Array | None) -> tuple[jax.Array, jax.Array]:
    """One exact EM step on :func:`mace_objective` with each rating's spam indicator latent.

    A rating with true class k and label ``l != k`` was spam for sure; one with ``l = k``
    was spam with probability ``r_l = spam strategy_l / (1 - spam + spam strategy_l)``.
    The expected spam labels ``m_l = sum_{k != l} n[k, l] + r_l n[l, l]`` then give
    ``spam = (sum_l m_l + a - 1) / (N + a + b - 2)`` and ``strategy ∝ m + gamma - 1``,
    so the objective never decreases.

    Parameters
    ----------
    counts : (J, K, K)
    spam : (J,)
    strategy : (J, K)
    prior : (K + 2,), optional

    Returns
    -------
    spam (J,), strategy (J, K)
    """
    K = counts.shape[-1]
    diag = jnp.diagonal(counts, axis1=1, axis2=2)  # (J, K)
    weighted = spam[:, None] * strategy
    denom = 1.0 - spam[:, None] + weighted
    r = jnp.where(denom > 0, weighted / jnp.where(denom > 0, denom, 1.0), 1.0)
    m = jnp.sum(counts, axis=1) - diag + r * diag  # expected spam labels (J, K)
    total = jnp.sum(counts, axis=(1, 2))
    s_num, s_den = jnp.sum(m, axis=1), total
    if prior is not None:
        s_num, s_den = s_num + prior[0] - 1.0, s_den + prior[0] + prior[1] - 2.0
        m = m + (prior[2:] - 1.0)
    new_spam = jnp.where(s_den > 0, s_num / jnp.where(s_den > 0, s_den, 1.0), spam)
    m_tot = jnp.sum(m, axis=1, keepdims=True)
    new_strategy = jnp.where(m_tot > 0, m / jnp.where(m_tot > 0, m_tot, 1.0), 1.0 / K)
    return new_spam, new_strategy


def mace_m_step(counts: jax.Array, prior: jax.Array | None, confusion: jax.Array, *,
                n_inner: int = MACE_INNER) -> jax.Array:
    """Generalised M-step of MACE: confusion (J, K, K) that does not lower the objective.

    :data:`MACE_INNER` steps of :func:`mace_inner_step` from the current parameters (read
    off ``confusion`` by :func:`~models.channels.mace_parameters`) and as many from
    ``spam = 0.5`` with a uniform strategy; each annotator keeps the end point with the
    larger :func:`mace_objective`. The first never lowers the objective, so EM stays
    monotone; the second gets the first iteration away from EM's uniform initial
    confusion (``spam = 1``, where the first would stay).

    Parameters
    ----------
    counts : (J, K, K)
    prior : (K + 2,), optional
    confusion : (J, K, K)
        The channel of the previous M-step.
    n_inner : int, default=MACE_INNER
    """
    J, K = counts.shape[0], counts.shape[-1]

    def run(start: tuple) -> tuple:
        return jax.lax.fori_loop(
            0, n_inner, lambda _, p: mace_inner_step(counts, p[0], p[1], prior), start)

    a = run(mace_parameters(confusion))
    b = run((jnp.full((J,), 0.5, counts.dtype), jnp.full((J, K), 1.0 / K, counts.dtype)))
    keep = mace_objective(counts, *a, prior) >= mace_objective(counts, *b, prior)
    spam = jnp.where(keep, a[0], b[0])
    strategy = jnp.where(keep[:, None], a[1], b[1])
    return mace_confusion(spam, strategy)


def constrained_m_step(channel: bool | str, counts: jax.Array, prior: jax.Array | None,
                       confusion: jax.Array | None) -> jax.Array:
    """The confusion (J, K, K) of a constrained channel's (MAP-)M-step.

    Parameters
    ----------
    channel : {True, 'class_conditional', 'mace'}
        ``True``: one-coin.
    counts : (J, K, K)
        Expected counts ``[annotator, true, observed]``.
    prior : array, optional
        See the module docstring.
    confusion : (J, K, K), optional
        The previous channel (MACE starts its inner iterations there).
    """
    K = counts.shape[-1]
    if channel == "class_conditional":
        return class_conditional_confusion(class_conditional_m_step(counts, prior), K)
    if channel == "mace":
        if confusion is None:
            confusion = jnp.full(counts.shape, 1.0 / K, counts.dtype)
        return mace_m_step(counts, prior, confusion)
    correct = jnp.trace(counts, axis1=1, axis2=2)
    total = jnp.sum(counts, axis=(1, 2))
    if prior is not None:
        a, b = prior[0, 0], (K - 1) * prior[0, 1]
        accuracy = (correct + a - 1.0) / (total + a + b - 2.0)
    else:
        accuracy = correct / jnp.maximum(total, LOG_FLOOR)
    return one_coin_confusion(accuracy, K)


def constrained_log_prior(channel: bool | str, confusion: jax.Array, prior: jax.Array
                          ) -> jax.Array:
    """Log prior density (up to constants) of a constrained channel's parameters.

    Parameters
    ----------
    channel : {True, 'class_conditional', 'mace'}
    confusion : (J, K, K)
    prior : array
        See the module docstring.
    """
    K = confusion.shape[-1]
    if channel == "mace":
        spam, strategy = mace_parameters(confusion)
        return jnp.sum(mace_objective(jnp.zeros_like(confusion), spam, strategy, prior))
    if channel == "class_conditional":
        acc, a, b = jnp.diagonal(confusion, axis1=1, axis2=2), prior[0], prior[1]
    else:
        acc, a, b = confusion[:, 0, 0], prior[0, 0], (K - 1) * prior[0, 1]
    return jnp.sum((a - 1.0) * _log(acc) + (b - 1.0) * _log(1.0 - acc))
