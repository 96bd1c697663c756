"""Multi-annotator categorical ratings: input, validation, order of items and classes.

:class:`Annotations` is the one container every annotator model, target and metric in
noisycal reads. It stores ratings in long form (one row per rating) as three integer
index arrays into the item ids, annotator ids and classes. Ratings may be ragged (items
rated by different numbers of annotators) and repeated (one annotator rating one item
several times); nothing is ever silently dropped, and no order is changed behind the
user's back (see :class:`Annotations` for the rules).

The input checks live in :mod:`noisycal.annotations.encoding` and
:mod:`noisycal.annotations.readers`; the agreement statistics in
:mod:`noisycal.annotations.agreement`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Self

import numpy as np
import pandas as pd

from .._util.jax import as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import check_choice, check_int, check_seed
from .agreement import annotator_summary, fleiss_kappa, percent_agreement
from .encoding import check_id_set, check_index, check_n_classes, readonly, show
from .readers import Parts, arrays_parts, counts_parts, long_parts, wide_parts

__all__ = ["Annotations", "EngineArrays", "TIE_OPTIONS"]

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


class Annotations:
    """Categorical ratings of items by annotators, in long form.

    Build one with :meth:`from_long`, :meth:`from_wide`, :meth:`from_arrays` or
    :meth:`from_counts`; the plain constructor takes already-encoded indices.

    Each rating ``r`` is stored as three indices: ``item_index[r]`` into :attr:`items`,
    ``annotator_index[r]`` into :attr:`annotators` and ``label_index[r]`` into
    :attr:`classes`. Every item has at least one rating; annotators may have none (for
    instance an all-missing column of a wide matrix) and classes may be unused (declared
    with ``classes=``). Items may have different numbers of ratings, and one annotator may
    rate one item several times.

    Orders are kept, never sorted behind the user's back, and every result (counts,
    votes, targets, fitted models) follows them:

    - **classes**: ``classes=`` as given; else the declared categories of a pandas
      Categorical label column (unused categories included); else the sorted unique
      labels. A label outside ``classes=`` is an error.
    - **items**: as given (``items=``, the rows of a wide matrix or its DataFrame index);
      else in order of first appearance. Item ids ``'0', '1', '10', '2'`` stay in that
      order.
    - **annotators**: as given (``annotators=``, the columns of a wide matrix, the
      categories of a Categorical annotator column); else in order of first appearance.

    Annotations built from vote counts (:meth:`from_counts`) have placeholder annotator
    ids; :attr:`annotators_known` is False for them, and per-annotator models refuse them.

    The object is immutable: attributes cannot be set and its arrays are read-only.

    Parameters
    ----------
    item_index, annotator_index, label_index : array-like of shape (n_ratings,)
        Integer indices of each rating into ``items``, ``annotators`` and ``classes``.
    items : array-like of shape (n_items,)
        Unique item ids, in order. Every item must have at least one rating.
    annotators : array-like of shape (n_annotators,)
        Unique annotator ids, in order.
    classes : array-like of shape (n_classes,)
        Unique class labels, in order, at least 2.
    annotators_known : bool, default=True
        Whether annotator ids identify real annotators across items (False for
        placeholder ids such as those of :meth:`from_counts`).

    Raises
    ------
    ValueError
        If an index is out of range, an id set has duplicates or missing values, an item
        has no rating, or there are fewer than 2 classes.

    Examples
    --------
    >>> import pandas as pd
    >>> from noisycal.annotations.core import Annotations
    >>> df = pd.DataFrame({"item": ["b", "b", "b", "a", "a"],
    ...                    "annotator": ["x", "y", "z", "x", "y"],
    ...                    "label": ["dog", "cat", "dog", "cat", "cat"]})
    >>> ann = Annotations.from_long(df, classes=["dog", "cat"])
    >>> ann
    Annotations(n_items=2, n_annotators=3, n_classes=2, n_ratings=5)
    >>> ann.items.tolist(), ann.classes.tolist()
    (['b', 'a'], ['dog', 'cat'])
    >>> ann.counts().tolist()
    [[2, 1], [0, 2]]
    >>> ann.majority_vote().tolist()
    [0, 1]
    >>> ann.annotators_known, Annotations.from_counts([[2, 1]]).annotators_known
    (True, False)
    """

    __slots__ = (
        "_item_index",
        "_annotator_index",
        "_label_index",
        "_items",
        "_annotators",
        "_classes",
        "_annotators_known",
    )

    def __init__(
        self,
        item_index: ArrayLike,
        annotator_index: ArrayLike,
        label_index: ArrayLike,
        *,
        items: ArrayLike,
        annotators: ArrayLike,
        classes: ArrayLike,
        annotators_known: bool = True,
    ) -> None:
        ids = {name: check_id_set(values, name) for name, values in
               (("items", items), ("annotators", annotators), ("classes", classes))}
        check_n_classes(ids["classes"], given=True)
        if ids["items"].size < 1:
            raise ValueError("items must contain at least one item")
        if not isinstance(annotators_known, bool | np.bool_):
            raise ValueError(f"annotators_known must be a bool, got {annotators_known!r}")
        idx = {name: check_index(values, name, ids[key].size) for name, values, key in (
            ("item_index", item_index, "items"),
            ("annotator_index", annotator_index, "annotators"),
            ("label_index", label_index, "classes"),
        )}
        sizes = [idx[name].size for name in idx]
        if len(set(sizes)) != 1:
            raise ValueError("item_index, annotator_index and label_index must have the "
                             f"same length, got {sizes[0]}, {sizes[1]} and {sizes[2]}")
        per_item = np.bincount(idx["item_index"], minlength=ids["items"].size)
        if np.any(per_item == 0):
            empty = ids["items"][per_item == 0]
            raise ValueError(f"item(s) {show(empty)} have no rating "
                             f"({empty.size} in all); every item needs at least one")

        set_ = object.__setattr__
        for name, arr in (*idx.items(), *ids.items()):
            set_(self, f"_{name}", readonly(arr))
        set_(self, "_annotators_known", bool(annotators_known))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Annotations is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Annotations is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild, (self._item_index, self._annotator_index, self._label_index,
                           self._items, self._annotators, self._classes,
                           self._annotators_known))

    # ------------------------------------------------------------------ constructors

    @classmethod
    def _from_parts(cls, parts: Parts) -> Annotations:
        return cls(parts.item_index, parts.annotator_index, parts.label_index,
                   items=parts.items, annotators=parts.annotators, classes=parts.classes,
                   annotators_known=parts.annotators_known)

    @classmethod
    def from_long(
        cls,
        df: pd.DataFrame | Mapping[str, ArrayLike],
        *,
        item: str = "item",
        annotator: str = "annotator",
        label: str = "label",
        classes: ArrayLike | None = None,
        items: ArrayLike | None = None,
        annotators: ArrayLike | None = None,
    ) -> Annotations:
        """Ratings from a long table with one row per rating.

        Parameters
        ----------
        df : DataFrame or mapping of column name to array-like
            The long table. Rows are kept in order; repeated (item, annotator) pairs are
            separate ratings.
        item, annotator, label : str, default='item', 'annotator', 'label'
            Names of the item id, annotator id and label columns.
        classes : array-like of shape (n_classes,), default=None
            The class set, in the order results should use (unused classes allowed).
            By default the declared categories of a Categorical label column, else the
            sorted unique labels.
        items : array-like of shape (n_items,), default=None
            The item ids in the order results should use; each needs a rating. By
            default the order of first appearance.
        annotators : array-like of shape (n_annotators,), default=None
            The annotator ids in order (annotators without ratings allowed). By default
            the categories of a Categorical annotator column, else first appearance.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If a column is absent or duplicated, an entry is missing (NaN/None: drop
            those rows) or infinite, a label is not in ``classes``, an id is not in
            ``items``/``annotators``, or there are fewer than 2 classes.
        """
        return cls._from_parts(long_parts(df, item=item, annotator=annotator, label=label,
                                          classes=classes, items=items,
                                          annotators=annotators))

    @classmethod
    def from_arrays(
        cls,
        item: ArrayLike,
        annotator: ArrayLike,
        label: ArrayLike,
        *,
        classes: ArrayLike | None = None,
        items: ArrayLike | None = None,
        annotators: ArrayLike | None = None,
    ) -> Annotations:
        """Ratings from the three long columns given as arrays.

        Parameters
        ----------
        item, annotator, label : array-like of shape (n_ratings,)
            Item id, annotator id and label of each rating.
        classes : array-like of shape (n_classes,), default=None
            The class set, in the order results should use (unused classes allowed).
            By default the declared categories of a Categorical ``label``, else the
            sorted unique labels.
        items : array-like of shape (n_items,), default=None
            The item ids in order; each needs a rating. By default first appearance.
        annotators : array-like of shape (n_annotators,), default=None
            The annotator ids in order (annotators without ratings allowed). By default
            the categories of a Categorical ``annotator``, else first appearance.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If the arrays are not 1-D of equal length, contain NaN/None or infinite
            values, a label is not in ``classes``, an id is not in
            ``items``/``annotators``, or there are fewer than 2 classes.

        Examples
        --------
        >>> from noisycal.annotations.core import Annotations
        >>> ann = Annotations.from_arrays(["10", "2", "10"], [0, 0, 1], [1, 0, 1])
        >>> ann.items.tolist()
        ['10', '2']
        """
        return cls._from_parts(arrays_parts(item, annotator, label, classes=classes,
                                            items=items, annotators=annotators))

    @classmethod
    def from_wide(
        cls,
        matrix: ArrayLike,
        *,
        missing: object = None,
        classes: ArrayLike | None = None,
        items: ArrayLike | None = None,
        annotators: ArrayLike | None = None,
    ) -> Annotations:
        """Ratings from a wide (n_items, n_annotators) matrix of labels.

        Parameters
        ----------
        matrix : array-like or DataFrame of shape (n_items, n_annotators)
            ``matrix[i, j]`` is the label annotator ``j`` gave item ``i``. NaN and None are
            always missing; so are entries equal to ``missing``. Integral floats are read
            as integers.
        missing : scalar, default=None
            Sentinel marking a missing rating (e.g. ``-1``), besides NaN/None. It must
            not be one of ``classes``.
        classes : array-like of shape (n_classes,), default=None
            The class set, in order (unused classes allowed; required for non-integer
            numeric labels). By default the shared categories of Categorical DataFrame
            columns, else the sorted unique labels.
        items : array-like of shape (n_items,), default=None
            Id of each row; default the DataFrame index, else ``0..n_items-1``. Rows keep
            their order.
        annotators : array-like of shape (n_annotators,), default=None
            Id of each column; default the DataFrame columns, else ``0..n_annotators-1``.
            Columns keep their order. Every column is an annotator, even one with no
            rating.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If ``matrix`` is not 2-D or holds infinite values, an item (row) has no rating,
            a label is not in ``classes``, ``missing`` is a class or not a scalar, or
            ``items``/``annotators`` have the wrong length or duplicates.
        """
        return cls._from_parts(wide_parts(matrix, missing=missing, classes=classes,
                                          items=items, annotators=annotators))

    @classmethod
    def from_counts(
        cls,
        counts: ArrayLike,
        *,
        classes: ArrayLike | None = None,
        items: ArrayLike | None = None,
    ) -> Annotations:
        """Ratings from an (n_items, n_classes) matrix of vote counts (e.g. CIFAR-10H).

        Annotator identities are not known from counts. Rating ``j`` of an item (ratings
        ordered by class) gets the placeholder annotator id ``j``, so "annotator j" means
        "the j-th rating of the item" and carries no meaning across items. The result has
        :attr:`annotators_known` False, and per-annotator models (Dawid–Skene confusion
        matrices) refuse it; its repr shows the ratings, not a number of annotators.

        Parameters
        ----------
        counts : array-like of shape (n_items, n_classes)
            Non-negative integer counts; ``counts[i, k]`` ratings of class ``k`` for item
            ``i``. Every row must have a positive total.
        classes : array-like of shape (n_classes,), default=None
            Label of each column, in column order (kept as given); default
            ``0..n_classes-1``.
        items : array-like of shape (n_items,), default=None
            Id of each row, in row order; default ``0..n_items-1``.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If ``counts`` is not a 2-D matrix of non-negative integers (booleans are
            refused), a row sums to 0, the total exceeds 2**31 - 1 ratings, there are
            fewer than 2 columns, or ``classes``/``items`` have the wrong length or
            duplicates.

        Examples
        --------
        >>> Annotations.from_counts([[2, 1], [0, 3]])
        Annotations(n_items=2, n_classes=2, n_ratings=6, counts per item: no annotator ids)
        """
        return cls._from_parts(counts_parts(counts, classes=classes, items=items))

    # ------------------------------------------------------------------ properties

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self._items.size)

    @property
    def n_annotators(self) -> int:
        """Number of annotators (including any with no rating).

        For :meth:`from_counts` (:attr:`annotators_known` False) the number of
        placeholder ids, the most ratings of one item: a count of rating slots, not of
        annotators (the repr does not show it).
        """
        return int(self._annotators.size)

    @property
    def n_classes(self) -> int:
        """Number of classes (including any nobody used)."""
        return int(self._classes.size)

    @property
    def n_ratings(self) -> int:
        """Number of ratings (rows of the long table)."""
        return int(self._item_index.size)

    @property
    def items(self) -> np.ndarray:
        """Item ids, shape (n_items,), in the given or first-seen order."""
        return self._items

    @property
    def annotators(self) -> np.ndarray:
        """Annotator ids, shape (n_annotators,), in the given or first-seen order."""
        return self._annotators

    @property
    def classes(self) -> np.ndarray:
        """Class labels, shape (n_classes,): ``classes=`` as given, else declared
        categories, else the sorted unique labels."""
        return self._classes

    @property
    def annotators_known(self) -> bool:
        """Whether annotator ids identify the same annotator across items.

        False for :meth:`from_counts` (placeholder ids: "the j-th rating of the item");
        models with per-annotator parameters need True.
        """
        return self._annotators_known

    @property
    def item_index(self) -> np.ndarray:
        """Item index of each rating, shape (n_ratings,), int64."""
        return self._item_index

    @property
    def annotator_index(self) -> np.ndarray:
        """Annotator index of each rating, shape (n_ratings,), int64."""
        return self._annotator_index

    @property
    def label_index(self) -> np.ndarray:
        """Class index of each rating, shape (n_ratings,), int64."""
        return self._label_index

    def __len__(self) -> int:
        return self.n_items

    def __repr__(self) -> str:
        if not self._annotators_known:  # placeholder ids: no annotators to count
            return (f"Annotations(n_items={self.n_items}, n_classes={self.n_classes}, "
                    f"n_ratings={self.n_ratings}, counts per item: no annotator ids)")
        return (f"Annotations(n_items={self.n_items}, n_annotators={self.n_annotators}, "
                f"n_classes={self.n_classes}, n_ratings={self.n_ratings})")

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
        return annotator_summary(self._item_index, self._annotator_index,
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
        return percent_agreement(self.counts())

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
        return fleiss_kappa(self.counts())


def _rebuild(
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    label_index: np.ndarray,
    items: np.ndarray,
    annotators: np.ndarray,
    classes: np.ndarray,
    annotators_known: bool = True,
) -> Annotations:
    """Unpickle an :class:`Annotations` (through the validating constructor)."""
    return Annotations(item_index, annotator_index, label_index, items=items,
                       annotators=annotators, classes=classes,
                       annotators_known=annotators_known)
