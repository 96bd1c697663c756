"""Label switching: the one Hungarian relabelling of latent classes.

A mixture's latent classes are identified only up to a permutation. Every fit and every
posterior draw of the Dawid–Skene family is named the same way: the latent class that
agrees most with a reference labelling (the majority vote) gets that class's name, the
assignment maximising total agreement (Hungarian algorithm); or, for two classes, by the
sign of an anchor annotator's gap ``confusion[anchor, 1, 1] - confusion[anchor, 0, 1]``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["hungarian_perm", "anchor_perm", "apply_perm", "relabel_draws"]


def hungarian_perm(agree: np.ndarray) -> np.ndarray:
    """Relabelling that maximises agreement with a reference labelling.

    Parameters
    ----------
    agree : ndarray of shape (K, K) or (D, K, K)
        ``agree[latent, reference]``: how much each latent class agrees with each
        reference class (for instance ``posterior.T @ one_hot(vote)``), for one fit or
        for D draws.

    Returns
    -------
    perm : ndarray of shape (K,) or (D, K)
        ``perm[c]`` is the latent class renamed ``c``: ``prevalence[..., perm]`` and
        ``confusion[:, perm, :]`` are the relabelled parameters.

    Examples
    --------
    >>> import numpy as np
    >>> hungarian_perm(np.array([[1.0, 9.0], [8.0, 2.0]])).tolist()
    [1, 0]
    """
    agree = np.asarray(agree, dtype=np.float64)
    flat = agree.reshape(-1, *agree.shape[-2:])
    K = flat.shape[-1]
    perm = np.empty((flat.shape[0], K), dtype=np.int64)
    for d in range(flat.shape[0]):  # one small assignment problem per draw
        rows, cols = linear_sum_assignment(-flat[d])
        perm[d, cols] = rows
    return perm.reshape(agree.shape[:-2] + (K,))


def anchor_perm(confusion: np.ndarray, anchor: int) -> np.ndarray:
    """Two-class relabelling that gives annotator ``anchor`` a non-negative gap.

    Parameters
    ----------
    confusion : ndarray of shape (J, 2, 2) or (D, J, 2, 2)
        Binary channels ``confusion[j, true, observed]`` of one fit or of D draws.
    anchor : int
        Index of the annotator whose gap ``b - a`` must be positive.

    Returns
    -------
    perm : ndarray of shape (2,) or (D, 2)
        ``[1, 0]`` where the anchor's gap is negative, else ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> anchor_perm(np.array([[[0.2, 0.8], [0.9, 0.1]]]), 0).tolist()
    [1, 0]
    """
    confusion = np.asarray(confusion)
    gaps = confusion[..., anchor, 1, 1] - confusion[..., anchor, 0, 1]
    flip = (np.asarray(gaps) < 0)[..., None]
    return np.where(flip, np.array([1, 0]), np.arange(2))


def apply_perm(prevalence: np.ndarray, confusion: np.ndarray, perm: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Relabel parameters by ``perm`` (one permutation, or one per draw).

    Parameters
    ----------
    prevalence : ndarray of shape (L, K) or (D, L, K)
    confusion : ndarray of shape (J, K, K) or (D, J, K, K)
    perm : ndarray of shape (K,) or (D, K)
        As returned by :func:`hungarian_perm` or :func:`anchor_perm`.

    Returns
    -------
    prevalence, confusion
        With the true-class axes reordered (the observed axis of ``confusion`` names
        the annotators' labels and is never permuted).
    """
    perm = np.asarray(perm)
    if perm.ndim == 1:
        return prevalence[..., perm], confusion[..., perm, :]
    prev = np.take_along_axis(prevalence, perm[:, None, :], axis=2)
    conf = np.take_along_axis(confusion, perm[:, None, :, None], axis=2)
    return prev, conf


def relabel_draws(prevalence: np.ndarray, confusion: np.ndarray, perms: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relabel a sampler's draws, one permutation per draw, and report who moved.

    Parameters
    ----------
    prevalence : (C, S, L, K)
        Draws by chain and sample.
    confusion : (C, S, J, K, K)
    perms : (C * S, K)
        One permutation per draw (:func:`hungarian_perm` or :func:`anchor_perm` of the
        flattened draws).

    Returns
    -------
    prevalence, confusion
        Relabelled, same shapes.
    moved : bool array of shape (C, S)
        Draws whose permutation differs from the most common one.
    """
    C, S = prevalence.shape[:2]
    prev, conf = apply_perm(prevalence.reshape(C * S, *prevalence.shape[2:]),
                            confusion.reshape(C * S, *confusion.shape[2:]), perms)
    values, counts = np.unique(perms, axis=0, return_counts=True)
    ref = values[np.argmax(counts)]
    moved = np.any(perms != ref, axis=1).reshape(C, S)
    return prev.reshape(prevalence.shape), conf.reshape(confusion.shape), moved
