"""Agreement statistics of multi-annotator ratings.

The statistics are pairwise agreement, Fleiss' kappa and per-annotator summaries,
computed from count matrices and index arrays.

These are the computations behind :meth:`~noisycal.Annotations.percent_agreement`,
:meth:`~noisycal.Annotations.fleiss_kappa` and
:meth:`~noisycal.Annotations.annotator_summary`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..exceptions import NumericalWarning
from .encoding import py_value

__all__ = ["agreement_terms", "percent_agreement", "fleiss_kappa", "annotator_summary"]


def agreement_terms(counts: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Counts and per-item pair agreement P_i over the items with >= 2 ratings.

    Parameters
    ----------
    counts : ndarray of shape (n_items, n_classes)
        Ratings of each class per item.
    what : str
        Name of the caller, for the error message.

    Returns
    -------
    counts : ndarray of shape (n_kept, n_classes), float64
        The rows of items with at least 2 ratings.
    p_i : ndarray of shape (n_kept,)
        :math:`P_i = \\sum_k n_{ik}(n_{ik}-1) / (n_i(n_i-1))`.

    Raises
    ------
    ValueError
        If no item has at least 2 ratings.
    """
    n_i = counts.sum(axis=1)
    keep = n_i >= 2
    if not keep.any():
        raise ValueError(f"{what} needs items with at least 2 ratings; every item here "
                         "has a single rating")
    c, n_i = counts[keep].astype(np.float64), n_i[keep].astype(np.float64)
    p_i = (c * (c - 1.0)).sum(axis=1) / (n_i * (n_i - 1.0))
    return c, p_i


def percent_agreement(counts: np.ndarray) -> float:
    """Mean pairwise agreement :math:`\\bar P` over items with at least 2 ratings."""
    _, p_i = agreement_terms(counts, "percent_agreement")
    return float(p_i.mean())


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' (1971) kappa from a count matrix, items with fewer than 2 ratings excluded.

    NaN, with a :class:`~noisycal.exceptions.NumericalWarning`, when every rating is in one
    class (chance agreement 1: kappa is undefined).
    """
    c, p_i = agreement_terms(counts, "fleiss_kappa")
    totals = c.sum(axis=0)
    if np.count_nonzero(totals) <= 1:
        # stacklevel 3: past Annotations.fleiss_kappa to the user's call
        warnings.warn("fleiss_kappa is undefined (NaN): every rating (of items with at "
                      "least 2 ratings) is in one class, so chance agreement is 1",
                      NumericalWarning, stacklevel=3)
        return float("nan")
    p_k = totals / totals.sum()
    p_e = float(np.sum(p_k**2))
    return float((p_i.mean() - p_e) / (1.0 - p_e))


def annotator_summary(
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    label_index: np.ndarray,
    vote: np.ndarray,
    annotators: np.ndarray,
    classes: np.ndarray,
) -> pd.DataFrame:
    """Per-annotator counts, agreement with the majority vote and class shares.

    Parameters
    ----------
    item_index, annotator_index, label_index : ndarray of shape (n_ratings,)
        The encoded ratings.
    vote : ndarray of shape (n_items,)
        Majority class index of each item.
    annotators : ndarray of shape (n_annotators,)
        Annotator ids (the index of the table).
    classes : ndarray of shape (n_classes,)
        Class labels (the ``share_<class>`` column names).

    Returns
    -------
    DataFrame
        See :meth:`~noisycal.Annotations.annotator_summary`.
    """
    J, K = annotators.size, classes.size
    a = annotator_index
    n_ratings = np.bincount(a, minlength=J)
    pairs = np.unique(item_index * J + a)
    n_items = np.bincount(pairs % J, minlength=J)
    agree = np.bincount(a, weights=(label_index == vote[item_index]), minlength=J)
    by_class = np.bincount(a * K + label_index, minlength=J * K).reshape(J, K)
    denom = n_ratings.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(n_ratings > 0, agree / denom, np.nan)
        shares = np.where(n_ratings[:, None] > 0, by_class / denom[:, None], np.nan)
    frame = pd.DataFrame(
        {"n_ratings": n_ratings.astype(np.int64), "n_items": n_items.astype(np.int64),
         "agreement_with_majority": agreement},
        index=pd.Index(annotators, name="annotator"),
    )
    for k, c in enumerate(classes):
        frame[f"share_{py_value(c)}"] = shares[:, k]
    return frame
