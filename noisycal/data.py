"""Multi-annotator categorical ratings: input, validation, order of items and classes.

:class:`Annotations` is the one container every annotator model, target and metric in
noisycal reads. It stores ratings in long form (one row per rating) as three integer
index arrays into the item ids, annotator ids and classes. Ratings may be ragged (items
rated by different numbers of annotators) and repeated (one annotator rating one item
several times); nothing is ever silently dropped, and no order is changed behind the
user's back (see :class:`Annotations` for the rules).

The input checks live in ``_annotations_encode`` and ``_annotations_build``; counts,
votes, conversions and agreement statistics in ``_annotations_methods``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._annotations_build import Parts, arrays_parts, counts_parts, long_parts, wide_parts
from ._annotations_encode import check_id_set, check_index, check_n_classes, readonly, show
from ._annotations_methods import AnnotationsMethods, EngineArrays
from ._typing import ArrayLike

__all__ = ["Annotations", "EngineArrays"]


class Annotations(AnnotationsMethods):
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
    >>> from noisycal.data import Annotations
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
        >>> from noisycal.data import Annotations
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
        matrices) refuse it.

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
        """
        return cls._from_parts(counts_parts(counts, classes=classes, items=items))

    # ------------------------------------------------------------------ properties

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self._items.size)

    @property
    def n_annotators(self) -> int:
        """Number of annotators (including any with no rating)."""
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
        return (f"Annotations(n_items={self.n_items}, n_annotators={self.n_annotators}, "
                f"n_classes={self.n_classes}, n_ratings={self.n_ratings})")


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
