"""The free parametrisation of a Dawid–Skene-family fit at its estimate.

Shared by the identification check (:mod:`noisycal.engines.identification`) and the
per-item influence of the channels (:mod:`noisycal.engines.influence`). A prevalence or
confusion row's free directions move mass between an interior entry and the row's largest
entry; an entry with fewer than :data:`MIN_COUNT` items (ratings) expected on a side,
``min(p, 1 - p) * N < MIN_COUNT``, is held fixed (a boundary estimate has no free
direction into the boundary). A one-coin fit has one free accuracy per annotator, a
class-conditional fit one per annotator and class, a MACE fit a spam probability per
annotator and strategy rows held fixed below MIN_COUNT expected spam ratings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

__all__ = ["MIN_COUNT", "free_parameters", "posteriors_np", "channel_flat", "channel_from_flat"]

#: MACE confusion entries below this are constants in :func:`channel_from_flat`.
TINY = 1e-100

#: Held fixed below this many items (ratings) expected on a side, ``min(p, 1 - p) * N``.
MIN_COUNT = 1.0


def _row_basis(rows: np.ndarray, offset: int, labels: list[str], totals: np.ndarray
               ) -> tuple[list[tuple[int, int | None]], list[str]]:
    """Free directions ``(entry, reference)`` (flat indices from ``offset``) of rows (R, K):
    interior entries (expected count ``rows[r, k] * totals[r] >= MIN_COUNT``) other than
    the row's largest, each moving mass between it and the largest."""
    pairs, names = [], []
    R, K = rows.shape
    for r in range(R):
        ref = int(np.argmax(rows[r]))
        for k in np.flatnonzero(rows[r] * totals[r] >= MIN_COUNT):
            if k != ref:
                pairs.append((offset + r * K + int(k), offset + r * K + ref))
                names.append(labels[r * K + int(k)])
    return pairs, names


def _free_basis(prevalence: np.ndarray, confusion: np.ndarray, n_group: np.ndarray,
                n_conf: np.ndarray, one_coin: bool | str, labels: dict[str, list[str]]
                ) -> tuple[np.ndarray, list[str]]:
    """The matrix B (flat parameters x free directions) and the free parameters' names."""
    L, K = prevalence.shape
    J = confusion.shape[0]
    pairs, names = _row_basis(prevalence, 0, labels["prevalence"], n_group.sum(1))
    x = channel_flat(confusion, one_coin)
    if one_coin in (True, "class_conditional", "mace"):
        # one free direction per accuracy (spam probability) away from 0 and 1
        total = (n_conf.ravel() if one_coin == "class_conditional" else n_conf.sum(1))
        key = {True: "accuracy", "class_conditional": "class_accuracy", "mace": "spam"}
        for j in range(total.size):
            if min(x[j], 1 - x[j]) * total[j] >= MIN_COUNT:
                pairs.append((L * K + j, None))
                names.append(labels[key[one_coin]][j])
    if one_coin == "mace":  # strategy rows, each from the annotator's expected spam
        p2, n2 = _row_basis(x[J:].reshape(J, K), L * K + J, labels["strategy"],
                            x[:J] * n_conf.sum(1))
        pairs, names = pairs + p2, names + n2
    elif not one_coin:
        p2, n2 = _row_basis(confusion.reshape(J * K, K), L * K, labels["confusion"],
                            n_conf.ravel())
        pairs, names = pairs + p2, names + n2
    B = np.zeros((L * K + x.size, len(pairs)))
    for c, (i, ref) in enumerate(pairs):
        B[i, c] = 1.0
        if ref is not None:
            B[ref, c] = -1.0
    return B, names


def posteriors_np(prevalence: np.ndarray, confusion: np.ndarray, data: Any, gold: Any
                  ) -> np.ndarray:
    """The E-step posteriors (n_patterns, K) at one estimate, in NumPy.

    Parameters
    ----------
    prevalence, confusion : array-like of shape (L, K) and (J, K, K)
    data : DSData
        One row per rating pattern.
    gold : int array of shape (n_patterns,) or None
        Known classes (``-1`` where unknown): their posteriors are clamped to one-hot.

    Returns
    -------
    ndarray of shape (n_patterns, K)

    Notes
    -----
    The same numbers as :func:`noisycal.engines.em.dawid_skene.posteriors_at` (to round-off;
    checked in tests/engines/test_first_call.py) on the likelihood of
    :func:`noisycal.models.dawid_skene.joint_log_likelihood`, without tracing and
    compiling a JAX program for one evaluation (0.4-0.7 s of a first fit).
    """
    from noisycal.models.dawid_skene import LOG_FLOOR

    item, ann, lab = (np.asarray(a) for a in (data.item, data.annotator, data.label))
    joint = np.log(np.maximum(np.asarray(prevalence, np.float64), LOG_FLOOR))[
        np.asarray(data.group)]
    log_conf = np.log(np.maximum(np.asarray(confusion, np.float64), LOG_FLOOR))
    np.add.at(joint, item, log_conf[ann, :, lab])
    post = np.exp(joint - joint.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    if gold is not None:
        known = np.asarray(gold) >= 0
        post[known] = np.eye(post.shape[1])[np.asarray(gold)[known]]
    return post


def channel_flat(confusion: np.ndarray, one_coin: bool | str) -> np.ndarray:
    """The channel's free-parametrisation coordinates, flat: the confusion entries
    (J K K), the one-coin accuracies (J), the class-conditional accuracies (J K), or
    MACE's spam probabilities then strategies (J + J K).

    Parameters
    ----------
    confusion : ndarray of shape (J, K, K)
    one_coin : bool or {'class_conditional', 'mace'}
    """
    from noisycal.models.channels import mace_parameters

    confusion = np.asarray(confusion, dtype=np.float64)
    if one_coin == "class_conditional":
        return np.diagonal(confusion, axis1=1, axis2=2).ravel()
    if one_coin == "mace":
        spam, strategy = mace_parameters(confusion)
        return np.concatenate([np.asarray(spam), np.asarray(strategy).ravel()])
    return confusion[:, 0, 0] if one_coin else confusion.ravel()


def channel_from_flat(x: Any, one_coin: bool | str, J: int, K: int) -> Any:
    """The confusion (J, K, K) from :func:`channel_flat`'s coordinates (traceable by JAX).

    Parameters
    ----------
    x : array
    one_coin : bool or {'class_conditional', 'mace'}
    J, K : int
    """
    from noisycal.models.channels import class_conditional_confusion, mace_confusion
    from noisycal.models.dawid_skene import one_coin_confusion

    if one_coin == "class_conditional":
        return class_conditional_confusion(x.reshape(J, K), K)
    if one_coin == "mace":
        # an entry spam * strategy that EM drove towards 0 (geometrically, to ~1e-300) is
        # held constant: its log's second derivative would overflow and meet a zero
        # first derivative (0 * inf); its derivatives are below 1e-100 anyway
        conf = mace_confusion(x[:J], x[J:].reshape(J, K))
        fixed = jax.lax.stop_gradient(conf)
        return jnp.where(fixed < TINY, fixed, conf)
    return one_coin_confusion(x, K) if one_coin else x.reshape(J, K, K)


def free_parameters(prevalence: np.ndarray, confusion: np.ndarray, data: Any,
                    weights: np.ndarray, gold: Any, *, one_coin: bool | str,
                    labels: dict[str, list[str]]
                    ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """The free parametrisation of a Dawid–Skene-family fit at its estimate.

    Parameters
    ----------
    prevalence, confusion : ndarray of shape (L, K) and (J, K, K)
    data : DSData
        One row per rating pattern.
    weights : ndarray of shape (n_patterns,)
    gold : int array of shape (n_patterns,) or None
        Known class of each pattern, ``-1`` where unknown.
    one_coin : bool or {'class_conditional', 'mace'}
    labels : dict
        Names of the ``'prevalence'``, ``'confusion'`` and ``'accuracy'`` entries (and
        ``'class_accuracy'``, ``'spam'``, ``'strategy'`` for the other channels).

    Returns
    -------
    post : ndarray of shape (n_patterns, K)
        The item posteriors at the estimate.
    basis : ndarray of shape (n_flat, p)
        The free directions (see the module docstring).
    names : list of str
    confusion_counts : ndarray of shape (J, K)
        Expected items behind each confusion row (the posteriors summed over the
        annotator's ratings).
    """
    L, K = prevalence.shape
    J = confusion.shape[0]
    post = posteriors_np(prevalence, confusion, data, gold)
    w = np.asarray(weights, dtype=np.float64)
    # expected counts per prevalence row and per confusion row (rows without data)
    n_group, n_conf, item = np.zeros((L, K)), np.zeros((J, K)), np.asarray(data.item)
    np.add.at(n_group, np.asarray(data.group), post * w[:, None])
    np.add.at(n_conf, np.asarray(data.annotator), post[item] * w[item][:, None])
    B, names = _free_basis(prevalence, confusion, n_group, n_conf, one_coin, labels)
    return post, B, names, n_conf
