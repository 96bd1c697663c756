"""The methods of :class:`noisycal.data.Annotations` that read its ratings: counts, votes,
conversions, subsets and agreement summaries.

They live in a mixin so that ``data.py`` holds the container (construction, validation,
properties) and stays small; the mixin reads only the encoded arrays
(``_item_index``, ``_annotator_index``, ``_label_index``, ``_items``, ``_annotators``,
``_classes``, ``_annotators_known``) and builds new objects with ``type(self)(...)``.
"""

from __future__ import annotations

from typing import NamedTuple, Self

import numpy as np
import pandas as pd

from . import _annotations_stats as stats
from ._annotations_encode import show
from ._jax import as_numpy_rng
from ._typing import ArrayLike, Seed
from ._validation import check_choice, check_int, check_seed

__all__ = ["EngineArrays", "AnnotationsMethods", "TIE_OPTIONS"]

TIE_OPTIONS = ("lowest", "random", "raise")


class EngineArrays(NamedTuple):
    """Flat arrays an inference engine (EM, gradient MLE, NUTS) consumes.

    Attributes
    ----------
    item : ndarray of shape (n_ratings,), dtype int32
        Item index of each rating, in ``0..n_items-1``.
    annotator : ndarray of shape (n_ratings,), dtype int32
        Annotator index of each rating, in ``0..n_annotators-1``.
    label : ndarray of shape (n_ratings,), dtype int32
        Class index of each rating, in ``0..n_classes-1``.
    n_items : int
        Number of items (the segment count for ``segment_sum`` over ``item``).
    n_annotators : int
        Number of annotators.
    n_classes : int
        Number of classes.
    """

    item: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    n_items: int
    n_annotators: int
    n_classes: int


class AnnotationsMethods:
    """Counts, votes, conversions and summaries of encoded ratings (mixin)."""

    __slots__ = ()

    _item_index: np.ndarray
    _annotator_index: np.ndarray
    _label_index: np.ndarray
    _items: np.ndarray
    _annotators: np.ndarray
    _classes: np.ndarray
    _annotators_known: bool
    n_items: int
    n_annotators: int
    n_classes: int

    # ------------------------------------------------------------------ counts and votes


    def counts(self) -> np.ndarray:
        """Number of ratings of each class per item.

        Returns
        -------
        ndarray of shape (n_items, n_classes), dtype int64
            ``counts[i, k]`` is the number of ratings of class ``k`` for item ``i``.
        """
        K = self.n_classes
        flat = np.bincount(self._item_index * K + self._label_index,
                           minlength=self.n_items * K)
        return flat.reshape(self.n_items, K).astype(np.int64, copy=False)

    def n_ratings_per_item(self) -> np.ndarray:
        """Number of ratings of each item, shape (n_items,), int64 (all >= 1)."""
        return np.bincount(self._item_index, minlength=self.n_items).astype(np.int64)

    def soft_labels(self) -> np.ndarray:
        """Annotator distribution of each item (the soft label).

        Returns
        -------
        ndarray of shape (n_items, n_classes), dtype float64
            ``counts() / n_ratings_per_item()``: the share of each item's ratings in each
            class, the empirical annotator distribution :math:`\\hat\\pi_i`.
        """
        c = self.counts().astype(np.float64)
        return c / c.sum(axis=1, keepdims=True)

    def ties(self) -> np.ndarray:
        """Items whose largest class count is shared by two or more classes.

        Returns
        -------
        ndarray of shape (n_items,), dtype bool
        """
        c = self.counts()
        return (c == c.max(axis=1, keepdims=True)).sum(axis=1) >= 2

    def majority_vote(self, *, tie: str = "lowest", seed: Seed = None) -> np.ndarray:
        """The most frequent class of each item.

        Parameters
        ----------
        tie : {'lowest', 'random', 'raise'}, default='lowest'
            How to break ties between classes with the same largest count: ``'lowest'``
            takes the lowest class index, i.e. the class listed first in
            :attr:`classes` (NumPy's argmax convention), ``'random'`` takes
            one of the tied classes uniformly at random (needs ``seed``), ``'raise'``
            raises if any item is tied.
        seed : int or jax PRNG key, default=None
            Randomness for ``tie='random'``; the same seed gives the same votes. Untied
            items never depend on it. Given with another ``tie`` rule it raises.

        Returns
        -------
        ndarray of shape (n_items,), dtype int64
            Class indices into :attr:`classes`.

        Raises
        ------
        ValueError
            If ``tie`` is not an option, ``tie='random'`` is used without ``seed`` (or
            ``seed`` with another rule), or
            ``tie='raise'`` and some item is tied, or ``seed`` is not an int in the
            int64 range or a JAX key.
        """
        check_choice(tie, "tie", TIE_OPTIONS)
        if seed is not None:
            check_seed(seed)
            if tie != "random":
                raise ValueError(f"seed applies only to tie='random', got tie={tie!r}")
        if tie == "random" and seed is None:
            raise ValueError("seed is required with tie='random' (pass seed=0, or any int, "
                             "for reproducible tie-breaking)")
        c = self.counts()
        if tie == "lowest":
            return np.argmax(c, axis=1).astype(np.int64)
        tied_max = c == c.max(axis=1, keepdims=True)
        if tie == "raise":
            is_tied = tied_max.sum(axis=1) >= 2
            if is_tied.any():
                raise ValueError(f"tie='raise' but {int(is_tied.sum())} item(s) have tied "
                                 f"majority classes, e.g. items {show(self._items[is_tied])}; "
                                 "use tie='lowest' or tie='random'")
            return np.argmax(c, axis=1).astype(np.int64)
        keys = as_numpy_rng(seed).random(c.shape)
        return np.argmax(np.where(tied_max, keys, -1.0), axis=1).astype(np.int64)

    # ------------------------------------------------------------------ conversions

    def to_long(self) -> pd.DataFrame:
        """The long table with the original ids and labels.

        Returns
        -------
        DataFrame
            Columns ``item``, ``annotator`` and ``label``, one row per rating, in stored
            order.
        """
        return pd.DataFrame({
            "item": self._items[self._item_index],
            "annotator": self._annotators[self._annotator_index],
            "label": self._classes[self._label_index],
        })

    def to_wide(self, missing: int = -1) -> np.ndarray:
        """The (n_items, n_annotators) matrix of class indices.

        Parameters
        ----------
        missing : int, default=-1
            Value of entries with no rating; must not be a class index.

        Returns
        -------
        ndarray of shape (n_items, n_annotators), dtype int64
            Class indices into :attr:`classes`; rows follow :attr:`items`, columns
            :attr:`annotators`.

        Raises
        ------
        ValueError
            If an annotator rated an item more than once (a wide matrix cannot represent
            repeated ratings), or ``missing`` is a class index.
        """
        missing = check_int(missing, "missing")
        if 0 <= missing < self.n_classes:
            raise ValueError(f"missing must not be a class index (0..{self.n_classes - 1}), "
                             f"got {missing}")
        J = self.n_annotators
        cell = self._item_index * J + self._annotator_index
        per_cell = np.bincount(cell, minlength=self.n_items * J)
        if np.any(per_cell > 1):
            n_rep = int(np.count_nonzero(per_cell > 1))
            raise ValueError(f"to_wide cannot represent repeated ratings: {n_rep} "
                             "(item, annotator) pair(s) have more than one rating; use "
                             "to_long() or counts()")
        wide = np.full((self.n_items, J), missing, dtype=np.int64)
        wide[self._item_index, self._annotator_index] = self._label_index
        return wide

    def engine_arrays(self) -> EngineArrays:
        """The int32 index arrays and sizes an inference engine needs.

        Returns
        -------
        EngineArrays
        """
        return EngineArrays(
            item=self._item_index.astype(np.int32),
            annotator=self._annotator_index.astype(np.int32),
            label=self._label_index.astype(np.int32),
            n_items=self.n_items,
            n_annotators=self.n_annotators,
            n_classes=self.n_classes,
        )

    def subset(self, items: ArrayLike) -> Self:
        """The ratings of some items only.

        Parameters
        ----------
        items : array-like of bool of shape (n_items,), or of int
            A mask over :attr:`items`, or item indices (positions in :attr:`items`,
            ``0..n_items-1``, no duplicates).

        Returns
        -------
        Annotations
            The same annotators and classes (kept even if now unused, and
            :attr:`annotators_known` unchanged), with the selected items in their order
            in :attr:`items`.

        Raises
        ------
        ValueError
            If the mask has the wrong length, an index is out of range or repeated, or
            no item is selected.
        """
        sel = np.asarray(items)
        n = self.n_items
        if sel.ndim != 1:
            raise ValueError(f"items must be a 1-D mask or index array, got shape {sel.shape}")
        if sel.dtype.kind == "b":
            if sel.size != n:
                raise ValueError(f"items mask must have length n_items={n}, got {sel.size}")
            keep = sel.copy()
        elif sel.dtype.kind in "iu" or sel.size == 0:
            sel = sel.astype(np.int64)
            if sel.size and (sel.min() < 0 or sel.max() >= n):
                raise ValueError(f"items indices must lie in 0..{n - 1}, got values in "
                                 f"[{sel.min()}, {sel.max()}]")
            keep = np.zeros(n, dtype=bool)
            keep[sel] = True
            if np.count_nonzero(keep) != sel.size:
                raise ValueError("items indices must not repeat")
        else:
            raise ValueError(f"items must be a boolean mask or integer indices, "
                             f"got dtype {sel.dtype}")
        if not keep.any():
            raise ValueError("items selects no item")
        new_pos = np.full(n, -1, dtype=np.int64)
        new_pos[keep] = np.arange(np.count_nonzero(keep))
        rows = keep[self._item_index]
        return type(self)(new_pos[self._item_index[rows]], self._annotator_index[rows],
                          self._label_index[rows], items=self._items[keep],
                          annotators=self._annotators, classes=self._classes,
                          annotators_known=self._annotators_known)

    # ------------------------------------------------------------------ summaries

    def annotator_summary(self) -> pd.DataFrame:
        """Per-annotator counts, agreement with the majority and class shares.

        Returns
        -------
        DataFrame
            Indexed by annotator id (index name ``annotator``), one row per annotator in
            :attr:`annotators` order, with columns:

            - ``n_ratings``: number of ratings given;
            - ``n_items``: number of distinct items rated;
            - ``agreement_with_majority``: fraction of the annotator's ratings equal to
              the item's majority vote. The vote uses ``tie='lowest'`` and is computed
              with the annotator's own rating **included** (not leave-one-out), so it is
              optimistic for items with few ratings;
            - ``share_<class>`` for each class: fraction of the annotator's ratings in
              that class.

            Annotators with no rating have ``n_ratings == 0`` and NaN fractions.
        """
        return stats.annotator_summary(self._item_index, self._annotator_index,
                                       self._label_index, self.majority_vote(tie="lowest"),
                                       self._annotators, self._classes)

    def percent_agreement(self) -> float:
        """Mean pairwise agreement over items with at least 2 ratings.

        Returns
        -------
        float
            :math:`\\bar P = \\operatorname{mean}_i P_i` with
            :math:`P_i = \\sum_k n_{ik}(n_{ik}-1) / (n_i(n_i-1))`, the fraction of
            ordered pairs of ratings of item ``i`` that agree. Items with one rating are
            excluded.

        Raises
        ------
        ValueError
            If no item has at least 2 ratings.
        """
        return stats.percent_agreement(self.counts())

    def fleiss_kappa(self) -> float:
        """Fleiss' kappa, generalised to a varying number of ratings per item.

        Returns
        -------
        float
            :math:`\\kappa = (\\bar P - P_e) / (1 - P_e)` where :math:`\\bar P` is
            :meth:`percent_agreement`, :math:`P_e = \\sum_k p_k^2` and
            :math:`p_k = \\sum_i n_{ik} / \\sum_i n_i`, all over items with at least 2
            ratings. With the same number of ratings per item this is Fleiss (1971),
            and equals ``statsmodels.stats.inter_rater.fleiss_kappa(counts,
            method='fleiss')``. NaN, with a ``NumericalWarning``, when every rating is
            in one class (:math:`P_e = 1`: kappa is undefined).

        Raises
        ------
        ValueError
            If no item has at least 2 ratings.

        References
        ----------
        .. [1] Fleiss, J. L. (1971). Measuring nominal scale agreement among many
           raters. Psychological Bulletin, 76(5), 378-382.
        """
        return stats.fleiss_kappa(self.counts())
