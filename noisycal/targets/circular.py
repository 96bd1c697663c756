"""Circular targets: a target whose fit used the very scores a metric then compares with it.

A fit that used a classifier's scores (:class:`~noisycal.annotators.ClassifierInformedDawidSkene`)
carries a :class:`ScoreFingerprint` of them; a target built from it keeps the fingerprint
of its own rows (``target.details['scores_fingerprint']``), and the metrics compare it
with their predictions (:func:`circular_status`): the same scores give the Estimate the
status ``'circular_target'``. The target then agrees with those scores by construction
(each item's target used its own score), so a calibration error against it is biased
towards calibrated. The honest routes: compare a held-out classifier (scores the fit did
not use), or cross-fit (fit the annotator model on some folds' scores and build the
target of the other fold's items).

The fingerprint is of the probabilities ``softmax(z)`` in float64: the SHA-256 of their
bytes and shape, and the probabilities of up to :data:`SKETCH_ROWS` evenly spaced rows,
so that the same scores given as logits to one and as (float32) probabilities to the
other are still recognised (each entry within :data:`SKETCH_ATOL`). A recalibrated copy of
the scores (temperature scaling) is another set of scores and is not recognised.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ScoreFingerprint", "score_fingerprint", "same_scores", "circular_status",
           "CIRCULAR",
           "SKETCH_ROWS", "SKETCH_ATOL"]

#: The status of an Estimate whose target was built from a fit of the same scores.
CIRCULAR = "circular_target"
#: Rows of the probabilities kept for the tolerant comparison.
SKETCH_ROWS = 64
#: Largest difference of a sketch entry for the same scores (float32 rounding is ~6e-8).
SKETCH_ATOL = 1e-6


@dataclass(frozen=True, eq=False)
class ScoreFingerprint:
    """What a target remembers of the classifier scores its fit used.

    Attributes
    ----------
    shape : tuple of int
        (n_rows, K) of the scores.
    digest : str
        SHA-256 of the float64 probabilities' bytes and shape.
    rows : ndarray of int
        Positions of the sketch rows.
    sketch : ndarray of shape (len(rows), K)
        The probabilities at those rows.
    """

    shape: tuple[int, ...]
    digest: str
    rows: np.ndarray
    sketch: np.ndarray

    def __repr__(self) -> str:
        return f"ScoreFingerprint(shape={self.shape}, digest={self.digest[:12]}...)"


def _digest(P: np.ndarray) -> str:
    h = hashlib.sha256(np.ascontiguousarray(P, dtype=np.float64).tobytes())
    h.update(repr(P.shape).encode())
    return h.hexdigest()


def score_fingerprint(probs: Any) -> ScoreFingerprint:
    """The fingerprint of a classifier's probabilities, one row per target row.

    Parameters
    ----------
    probs : array-like of shape (n, K)
        Probabilities (rows on the simplex).

    Returns
    -------
    ScoreFingerprint
    """
    P = np.asarray(probs, dtype=np.float64)
    n = P.shape[0]
    rows = np.unique(np.linspace(0, n - 1, min(n, SKETCH_ROWS)).round().astype(np.int64))
    return ScoreFingerprint(tuple(P.shape), _digest(P), rows, P[rows].copy())


def same_scores(fp: ScoreFingerprint, P: np.ndarray) -> bool:
    """Whether the probabilities ``P`` are the scores ``fp`` was taken of.

    Parameters
    ----------
    fp : ScoreFingerprint
    P : ndarray of shape (n, K)
    """
    P = np.asarray(P, dtype=np.float64)
    if tuple(P.shape) != tuple(fp.shape):
        return False
    if _digest(P) == fp.digest:
        return True
    return bool(np.max(np.abs(P[fp.rows] - fp.sketch)) <= SKETCH_ATOL)


def circular_status(target: Any, probs: Any, logits: Any) -> tuple[str, str] | None:
    """``('circular_target', message)`` when ``target`` was built from a fit of these
    scores; None otherwise (or when the target carries no fingerprint).

    Parameters
    ----------
    target : object
        A metric's target argument.
    probs, logits : array-like or None
        The metric's predictions (one of them given).

    Returns
    -------
    tuple of (str, str) or None
    """
    details = getattr(target, "details", None)
    fp = None if details is None else details.get("scores_fingerprint")
    if fp is None or (probs is None) == (logits is None):
        return None
    from .._util.validation import predictions

    try:
        P = predictions(probs, logits)[0]
    except (TypeError, ValueError):  # the metric has checked them already
        return None
    if not same_scores(fp, P):
        return None
    return CIRCULAR, ("the target was built from an annotator fit that used these same "
                      "classifier scores (each item's target used its own score), so it "
                      "agrees with them by construction and the calibration error is biased "
                      "towards 0; compare a held-out classifier, or cross-fit so that no "
                      "item's target used that item's score")
