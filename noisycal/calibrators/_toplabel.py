"""Top-label maps: rebuild a full probability vector from a recalibrated top-class confidence.

Histogram binning and isotonic regression on the top-class confidence (HB-Hard, HB-Soft and
IR-Soft of "Confidence Calibration under Ambiguous Ground Truth", Sections 4 and 6) return one
number per item, the new confidence ``g`` of the predicted class ``c``. Brier score, NLL and
classwise ECE need a whole vector; the paper does not say how it is built. We use the
proportional rebuild

    q_c = g,    q_k = p_k (1 - g) / (1 - p_c)   for k != c,

which keeps the ratios among the other classes and sums to 1. Where ``p_c = 1`` (all other
``p_k = 0``) the remaining mass ``1 - g`` is shared equally among the other classes (our
choice). ``q`` is a probability vector, but its argmax can leave ``c`` when ``g`` is below
some ``q_k``; the maps keep ``c`` as the predicted class and say so in their docstrings.
The paper keeps it too (it recalibrates the confidence of the uncalibrated predicted
class), so its top-label metrics score ``c`` with confidence ``g``: pass
``predicted=argmax p`` to :func:`noisycal.true_label_ece`.
"""

from __future__ import annotations

import numpy as np

from .._util.types import ArrayLike
from ._inputs import ScoreInput, base_probs, score_matrix

__all__ = ["top_label_rebuild", "top_label_inputs"]


def top_label_inputs(probs: ArrayLike | None, logits: ArrayLike | None
                     ) -> tuple[ScoreInput, np.ndarray | None, np.ndarray | None]:
    """The checked scores of a top-label map and, for (n, K) input, the probability matrix
    and the predicted class.

    Parameters
    ----------
    probs, logits : array-like of shape (n,) or (n, K), optional
        Exactly one (:func:`noisycal.calibrators._inputs.score_matrix` checks them:
        probabilities in [0, 1] with rows summing to 1, finite logits).

    Returns
    -------
    x : ScoreInput
        The input (its ``S`` is not floored: the floor is 1e-300).
    P : ndarray of shape (n, K) or None
        ``probs`` as given, or ``softmax(logits)``; None for binary (n,) scores.
    top : int ndarray of shape (n,) or None
        ``argmax P`` (lowest index on ties); None for binary scores.
    """
    x = score_matrix(probs, logits, 1e-300)
    if x.binary:
        return x, None, None
    P = base_probs(x)
    return x, P, np.argmax(P, axis=1)


def top_label_rebuild(P: np.ndarray, top: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """The full (n, K) probability vectors with new top-class confidences (module docstring).

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Uncalibrated probabilities (rows sum to 1), already validated.
    top : ndarray of shape (n,), int
        The predicted class ``c`` of each row (normally ``argmax P``).
    conf : ndarray of shape (n,)
        The new confidence ``g`` of class ``c``, in [0, 1].

    Returns
    -------
    ndarray of shape (n, K)
        Rows sum to 1; ``Q[i, top[i]] == conf[i]``.
    """
    P = np.asarray(P, dtype=np.float64)
    n, K = P.shape
    rows = np.arange(n)
    conf = np.asarray(conf, dtype=np.float64)
    others = P.copy()
    others[rows, top] = 0.0
    # the mass outside the top class summed directly, not as 1 - p_top: when p_top rounds
    # to within a few ulps of 1, 1 - p_top can be several times the true remainder and the
    # rescaled row would sum to more than 1
    rest = others.sum(axis=1)
    full = rest <= 0.0
    scale = np.divide(1.0 - conf, rest, out=np.zeros(n), where=~full)
    Q = others * scale[:, None]
    if np.any(full):
        Q[full] = ((1.0 - conf[full]) / (K - 1))[:, None]
    Q[rows, top] = conf
    return Q
