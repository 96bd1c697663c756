"""Circular targets: a target whose fit used the very scores a metric then compares with it.

A fit that used a classifier's scores (:class:`~noisycal.annotators.ClassifierInformedDawidSkene`)
keeps them (``fit.score_probs``); a target built from it keeps a :class:`ScoreFingerprint`
of its own rows (``target.details['scores_fingerprint']``: each row's score in the fit,
NaN for an item the fit was not fitted on, and the rows' item ids), selected with the
target's rows (``target[idx]``), and the metrics compare it with their predictions
(:func:`circular_status`): the same scores on the fitted rows give the Estimate the status
``'circular_target'``. How the target used the scores depends on its kind:

- a posterior target (:func:`noisycal.targets.posterior`): each item's posterior used that
  item's own score (its prior ``softmax(scale z_i + bias)``), so it agrees with the score
  by construction;
- a corrected target (:func:`noisycal.targets.corrected`): the rows are the items' own
  ratings corrected through channels fitted with the scores as the items' priors; the
  scores enter only through the fitted channels, which were pulled towards agreeing with
  them on these very items.

Either way a calibration error of those scores against the target is biased towards
calibrated. The honest routes: compare a held-out classifier (scores the fit did not
use), or cross-fit (fit the annotator model on some folds' scores and build the target of
the other fold's items, whose fingerprint then has no fitted row and is not kept).

The comparison is of the probabilities ``softmax(z)`` in float64, every fitted row, each
entry within :data:`ATOL` (so the same scores given as logits to one and as float32
probabilities to the other are recognised). Predictions with item ids (``items=``, a
pandas index) are matched to the target's rows by id, others by position. A recalibrated
copy of the scores (temperature scaling) is another set of scores and is not recognised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..annotations.matching import positions

__all__ = ["ScoreFingerprint", "score_fingerprint", "same_scores", "circular_status",
           "CIRCULAR", "ATOL", "SOURCES"]

#: The status of an Estimate whose target was built from a fit of the same scores.
CIRCULAR = "circular_target"
#: Largest difference of a probability for the same scores (float32 rounding is ~6e-8).
ATOL = 1e-6
#: How a target used the scores: a posterior target, or a corrected one.
SOURCES = ("posterior", "corrected")


@dataclass(frozen=True, eq=False)
class ScoreFingerprint:
    """What a target remembers of the classifier scores its fit used, row by row.

    Attributes
    ----------
    probs : ndarray of shape (n_rows, K)
        The score (probabilities, float64) of each target row in the fit; NaN rows for
        items the fit was not fitted on.
    items : ndarray of shape (n_rows,) or None
        The target rows' item ids.
    source : {'posterior', 'corrected'}
        How the target used the scores (:data:`SOURCES`).
    """

    probs: np.ndarray
    items: np.ndarray | None
    source: str

    @property
    def shape(self) -> tuple[int, ...]:
        """(n_rows, K)."""
        return tuple(self.probs.shape)

    @property
    def fitted(self) -> np.ndarray:
        """Boolean mask of the rows whose item the fit was fitted on."""
        return ~np.isnan(self.probs[:, 0]) if self.probs.size else np.zeros(0, bool)

    def take(self, rows: np.ndarray) -> ScoreFingerprint:
        """The fingerprint of the target rows ``rows`` (positions, for ``target[idx]``).

        Parameters
        ----------
        rows : ndarray of int
        """
        items = None if self.items is None else self.items[rows]
        return ScoreFingerprint(self.probs[rows], items, self.source)

    def __repr__(self) -> str:
        return (f"ScoreFingerprint(shape={self.shape}, fitted_rows={int(self.fitted.sum())}, "
                f"source={self.source!r})")


def score_fingerprint(probs: Any, items: Any = None, source: str = "posterior"
                      ) -> ScoreFingerprint:
    """The fingerprint of a classifier's probabilities, one row per target row.

    Parameters
    ----------
    probs : array-like of shape (n, K)
        Probabilities (rows on the simplex); NaN rows for items the fit did not score.
    items : array-like of shape (n,), optional
        The target rows' item ids.
    source : {'posterior', 'corrected'}, default='posterior'
        How the target used the scores.

    Returns
    -------
    ScoreFingerprint
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    P = np.array(probs, dtype=np.float64)
    ids = None if items is None else np.asarray(items)
    if P.ndim != 2 or (ids is not None and ids.shape != (P.shape[0],)):
        raise ValueError(f"probs must be (n, K) with one item id per row, got shape "
                         f"{P.shape} and {None if ids is None else ids.shape} ids")
    return ScoreFingerprint(P, ids, source)


def same_scores(fp: ScoreFingerprint, P: np.ndarray, items: Any = None) -> int:
    """How many fitted rows of ``fp`` the probabilities ``P`` reproduce (0: not the scores
    ``fp`` was taken of).

    Rows are matched by item id when both ``items`` and ``fp.items`` are given and every
    id is a target row, else by position (same shape). ``P`` is the same scores when
    every matched row the fit scored agrees within :data:`ATOL`.

    Parameters
    ----------
    fp : ScoreFingerprint
    P : ndarray of shape (n, K)
    items : array-like of shape (n,), optional
        Item ids of the rows of ``P``.

    Returns
    -------
    int
        The number of fitted rows compared, when all of them agree; 0 otherwise.
    """
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != fp.shape[1]:
        return 0
    pos = (positions(items, fp.items) if items is not None and fp.items is not None
           and len(items) == len(P) else None)
    if pos is not None and np.all(pos >= 0):
        ref = fp.probs[pos]
    elif P.shape == fp.shape:   # ids that are not the target's (a default index): rows
        ref = fp.probs
    else:
        return 0
    fitted = ~np.isnan(ref[:, 0])
    if not fitted.any():
        return 0
    same = np.allclose(P[fitted], ref[fitted], rtol=0.0, atol=ATOL)
    return int(fitted.sum()) if same else 0


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
    from .._util.items import prediction_items
    from .._util.validation import predictions

    try:
        P = predictions(probs, logits)[0]
        ids = prediction_items(probs, logits, None)
    except (TypeError, ValueError):  # the metric has checked them already
        return None
    n = same_scores(fp, P, ids)
    if n == 0:
        return None
    rows = "" if n == len(P) else f" ({n} of the {len(P)} rows are items the fit scored)"
    if fp.source == "corrected":
        how = ("the target corrects the ratings through channels fitted with these same "
               "classifier scores as the items' priors: it uses the scores only through "
               "those channels, which were fitted to agree with them on these items")
    else:
        how = ("the target is an annotator fit's item posteriors that used these same "
               "classifier scores: each item's posterior used that item's own score as its "
               "prior")
    return CIRCULAR, (f"{how}{rows}, so it is pulled towards the scores and the calibration "
                      "error is biased towards 0; compare a held-out classifier, or "
                      "cross-fit so that no item's target used that item's score")
