"""The free parametrisation of a Dawid–Skene-family fit at its estimate.

Shared by the identification check (:mod:`noisycal.engines.identification`) and the
per-item influence of the channels (:mod:`noisycal.engines.influence`). A prevalence or
confusion row's free directions move mass between an interior entry and the row's largest
entry; an entry with fewer than :data:`MIN_COUNT` items (ratings) expected on a side,
``min(p, 1 - p) * N < MIN_COUNT``, is held fixed (a boundary estimate has no free
direction into the boundary). A one-coin fit has one free accuracy per annotator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MIN_COUNT", "free_parameters", "posteriors_np"]

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
                n_conf: np.ndarray, one_coin: bool, labels: dict[str, list[str]]
                ) -> tuple[np.ndarray, list[str]]:
    """The matrix B (flat parameters x free directions) and the free parameters' names."""
    L, K = prevalence.shape
    J = confusion.shape[0]
    pairs, names = _row_basis(prevalence, 0, labels["prevalence"], n_group.sum(1))
    if one_coin:
        acc, total = confusion[:, 0, 0], n_conf.sum(1)
        for j in range(J):
            if min(acc[j], 1 - acc[j]) * total[j] >= MIN_COUNT:
                pairs.append((L * K + j, None))
                names.append(labels["accuracy"][j])
    else:
        p2, n2 = _row_basis(confusion.reshape(J * K, K), L * K, labels["confusion"],
                            n_conf.ravel())
        pairs, names = pairs + p2, names + n2
    B = np.zeros((L * K + (J if one_coin else J * K * K), len(pairs)))
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
    The same numbers as :func:`noisycal.engines.em.posteriors_at` (to round-off; checked in
    tests/test_first_call.py) on the likelihood of
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


def free_parameters(prevalence: np.ndarray, confusion: np.ndarray, data: Any,
                    weights: np.ndarray, gold: Any, *, one_coin: bool,
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
    one_coin : bool
    labels : dict
        Names of the ``'prevalence'``, ``'confusion'`` and ``'accuracy'`` entries.

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
