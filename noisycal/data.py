"""Multi-annotator categorical ratings: input, validation, counts, votes and agreement.

:class:`Annotations` is the one container every annotator model, target and metric in
noisycal reads. It stores ratings in long form (one row per rating) as three integer
index arrays into the sorted item ids, annotator ids and classes. Ratings may be ragged
(items rated by different numbers of annotators) and repeated (one annotator rating one
item several times); nothing is ever silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ._jax import as_numpy_rng
from ._typing import ArrayLike, Seed
from ._validation import check_array, check_choice, check_int

__all__ = ["Annotations", "EngineArrays"]

#: How many offending entries an error message lists.
_N_SHOW = 5

_TIE_OPTIONS = ("lowest", "random", "raise")


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


# ----------------------------------------------------------------------------------------
# helpers: ids and labels as sortable NumPy arrays
# ----------------------------------------------------------------------------------------


def _py(value: object) -> object:
    """A NumPy scalar as the plain Python value (for messages and column names)."""
    return value.item() if isinstance(value, np.generic) else value


def _show(values: np.ndarray) -> str:
    """The first few entries of ``values`` for an error message."""
    values = np.asarray(values)
    head = ", ".join(repr(_py(v)) for v in values[:_N_SHOW])
    more = ", ..." if values.size > _N_SHOW else ""
    return f"[{head}{more}]"


def _tidy_values(arr: np.ndarray) -> np.ndarray:
    """Give object arrays of strings or integers a proper dtype; integral floats become int."""
    if arr.dtype == object and arr.size:
        kind = pd.api.types.infer_dtype(arr, skipna=False)
        if kind == "string":
            arr = arr.astype(str)
        elif kind == "integer":
            arr = arr.astype(np.int64)
        elif kind == "floating":
            arr = arr.astype(np.float64)
    if arr.dtype.kind == "f" and arr.size and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    return arr


def _as_column(values: Any, name: str) -> np.ndarray:
    """A one-dimensional column of ids or labels with no missing entries."""
    if isinstance(values, pd.Series | pd.Index):
        arr = values.to_numpy()
    else:
        arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} must not be complex")
    missing = np.asarray(pd.isna(arr), dtype=bool)
    if missing.any():
        rows = np.flatnonzero(missing)
        raise ValueError(
            f"{name} contains {rows.size} missing value(s) (NaN/None) at row(s) {_show(rows)}; "
            "a long table has no missing entries: drop those rows "
            "(e.g. df.dropna(subset=[...])) before building Annotations"
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains infinite values")
    return _tidy_values(arr)


def _unique_inverse(values: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values and the index of each entry into them."""
    try:
        uniq, inverse = np.unique(values, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"{name} mixes values that cannot be sorted together "
                         f"(e.g. strings and numbers): {exc}") from exc
    return uniq, inverse.reshape(-1).astype(np.int64)


def _check_id_set(values: Any, name: str) -> np.ndarray:
    """An explicit set of ids (``classes``, ``items``, ``annotators``): 1-D, no duplicates."""
    arr = _as_column(values, name)
    uniq, _ = _unique_inverse(arr, name)
    if uniq.size != arr.size:
        seen, counts = np.unique(arr, return_counts=True)
        raise ValueError(f"{name} must not contain duplicates, got {_show(seen[counts > 1])} "
                         "more than once")
    return arr


def _check_n_classes(classes: np.ndarray, given: bool) -> None:
    if classes.size < 2:
        hint = ("" if given else
                " (only these labels were observed: pass classes= to declare the full class set)")
        raise ValueError(f"classes: at least 2 classes are needed, got {classes.size}: "
                         f"{_show(classes)}{hint}")


def _encode_labels(
    labels: np.ndarray, classes: ArrayLike | None, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class set and the class index of each label."""
    if labels.dtype.kind == "f" and classes is None:
        bad = labels[labels != np.round(labels)]
        raise ValueError(f"{name} contains non-integer numeric labels, e.g. {_show(bad)}; "
                         "pass classes= listing them if they really are class labels")
    uniq, inverse = _unique_inverse(labels, name)
    if classes is None:
        _check_n_classes(uniq, given=False)
        return uniq, inverse
    cls = np.sort(_check_id_set(classes, "classes"))
    _check_n_classes(cls, given=True)
    position = pd.Index(cls).get_indexer(uniq)
    if np.any(position < 0):
        unknown = uniq[position < 0]
        first = labels[np.isin(inverse, np.flatnonzero(position < 0))][0]
        raise ValueError(f"{name} contains label {_py(first)!r}, which is not in classes "
                         f"{_show(cls)} (unknown labels: {_show(unknown)})")
    return cls, position.astype(np.int64)[inverse]


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


# ----------------------------------------------------------------------------------------
# the container
# ----------------------------------------------------------------------------------------


class Annotations:
    """Categorical ratings of items by annotators, in long form.

    Build one with :meth:`from_long`, :meth:`from_wide`, :meth:`from_arrays` or
    :meth:`from_counts`; the plain constructor takes already-encoded indices.

    Each rating ``r`` is stored as three indices: ``item_index[r]`` into :attr:`items`,
    ``annotator_index[r]`` into :attr:`annotators` and ``label_index[r]`` into
    :attr:`classes`. Items, annotators and classes are sorted. Every item has at least
    one rating; annotators may have none (for instance an all-missing column of a wide
    matrix) and classes may be unused (declared with ``classes=``). Items may have
    different numbers of ratings, and one annotator may rate one item several times.

    The object is immutable: attributes cannot be set and its arrays are read-only.

    Parameters
    ----------
    item_index, annotator_index, label_index : array-like of shape (n_ratings,)
        Integer indices of each rating into ``items``, ``annotators`` and ``classes``.
    items : array-like of shape (n_items,)
        Sorted, unique item ids. Every item must have at least one rating.
    annotators : array-like of shape (n_annotators,)
        Sorted, unique annotator ids.
    classes : array-like of shape (n_classes,)
        Sorted, unique class labels, at least 2.

    Raises
    ------
    ValueError
        If an index is out of range, the id sets are not sorted and unique, an item has
        no rating, or there are fewer than 2 classes.

    Examples
    --------
    >>> import pandas as pd
    >>> from noisycal.data import Annotations
    >>> df = pd.DataFrame({"item": [1, 1, 1, 2, 2],
    ...                    "annotator": ["a", "b", "c", "a", "b"],
    ...                    "label": ["cat", "dog", "cat", "dog", "dog"]})
    >>> ann = Annotations.from_long(df)
    >>> ann
    Annotations(n_items=2, n_annotators=3, n_classes=2, n_ratings=5)
    >>> ann.classes.tolist()
    ['cat', 'dog']
    >>> ann.counts().tolist()
    [[2, 1], [0, 2]]
    >>> ann.majority_vote().tolist()
    [0, 1]
    """

    __slots__ = (
        "_item_index",
        "_annotator_index",
        "_label_index",
        "_items",
        "_annotators",
        "_classes",
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
    ) -> None:
        ids = {}
        for name, values in (("items", items), ("annotators", annotators),
                             ("classes", classes)):
            arr = _check_id_set(values, name)
            try:
                ordered = bool(np.all(arr[:-1] < arr[1:]))
            except TypeError:  # pragma: no cover - caught by _check_id_set
                ordered = False
            if not ordered:
                raise ValueError(f"{name} must be sorted (use the from_* constructors, "
                                 "which sort them)")
            ids[name] = arr
        _check_n_classes(ids["classes"], given=True)
        if ids["items"].size < 1:
            raise ValueError("items must contain at least one item")

        idx = {}
        n_ratings = None
        for name, values, size in (
            ("item_index", item_index, ids["items"].size),
            ("annotator_index", annotator_index, ids["annotators"].size),
            ("label_index", label_index, ids["classes"].size),
        ):
            arr = np.asarray(values)
            if arr.ndim != 1:
                raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
            if arr.dtype.kind not in "iu":
                raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
            if n_ratings is None:
                n_ratings = arr.size
            elif arr.size != n_ratings:
                raise ValueError(f"item_index, annotator_index and label_index must have the "
                                 f"same length, got {n_ratings} and {arr.size} ({name})")
            if arr.size and (arr.min() < 0 or arr.max() >= size):
                raise ValueError(f"{name} must lie in 0..{size - 1}, got values in "
                                 f"[{arr.min()}, {arr.max()}]")
            idx[name] = arr.astype(np.int64)
        per_item = np.bincount(idx["item_index"], minlength=ids["items"].size)
        if np.any(per_item == 0):
            empty = ids["items"][per_item == 0]
            raise ValueError(f"item(s) {_show(empty)} have no rating "
                             f"({empty.size} in all); every item needs at least one")

        set_ = object.__setattr__
        set_(self, "_item_index", _readonly(idx["item_index"]))
        set_(self, "_annotator_index", _readonly(idx["annotator_index"]))
        set_(self, "_label_index", _readonly(idx["label_index"]))
        set_(self, "_items", _readonly(ids["items"]))
        set_(self, "_annotators", _readonly(ids["annotators"]))
        set_(self, "_classes", _readonly(ids["classes"]))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Annotations is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Annotations is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild, (self._item_index, self._annotator_index, self._label_index,
                           self._items, self._annotators, self._classes))

    # ------------------------------------------------------------------ constructors

    @classmethod
    def _from_columns(
        cls,
        item: np.ndarray,
        annotator: np.ndarray,
        label: np.ndarray,
        *,
        classes: ArrayLike | None,
        label_name: str,
        annotators: np.ndarray | None = None,
        source: str,
    ) -> Annotations:
        """Encode validated long columns (already free of missing values)."""
        if item.size == 0:
            raise ValueError(f"{source} contains no ratings")
        items, item_index = _unique_inverse(item, "item")
        if annotators is None:
            annotators, annotator_index = _unique_inverse(annotator, "annotator")
        else:
            order = np.argsort(annotators, kind="stable")
            annotators = annotators[order]
            annotator_index = pd.Index(annotators).get_indexer(annotator).astype(np.int64)
        cls_set, label_index = _encode_labels(label, classes, label_name)
        return cls(item_index, annotator_index, label_index,
                   items=items, annotators=annotators, classes=cls_set)

    @classmethod
    def from_long(
        cls,
        df: pd.DataFrame | Mapping[str, ArrayLike],
        *,
        item: str = "item",
        annotator: str = "annotator",
        label: str = "label",
        classes: ArrayLike | None = None,
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
            The class set, when some classes were never used. Sorted. By default the
            sorted unique labels.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If a column is absent, an entry is missing (NaN/None: drop those rows), a label
            is not in ``classes``, or there are fewer than 2 classes.
        """
        if isinstance(df, pd.DataFrame):
            columns = [str(c) for c in df.columns]
            table: Any = df
        elif isinstance(df, Mapping):
            columns = [str(c) for c in df.keys()]
            table = df
        else:
            raise ValueError(f"df must be a pandas DataFrame or a mapping of columns, "
                             f"got {type(df).__name__}")
        cols = {}
        for role, col in (("item", item), ("annotator", annotator), ("label", label)):
            if col not in table:
                raise ValueError(f"df has no column {col!r} (the {role} column); available "
                                 f"columns: {columns}. Name it with {role}=...")
            cols[role] = _as_column(table[col], f"df[{col!r}] ({role})")
        sizes = {cols[r].size for r in cols}
        if len(sizes) != 1:
            raise ValueError(f"df columns must have equal lengths, got {sorted(sizes)}")
        return cls._from_columns(cols["item"], cols["annotator"], cols["label"],
                                 classes=classes, label_name=f"df[{label!r}] (label)",
                                 source="df")

    @classmethod
    def from_arrays(
        cls,
        item: ArrayLike,
        annotator: ArrayLike,
        label: ArrayLike,
        *,
        classes: ArrayLike | None = None,
    ) -> Annotations:
        """Ratings from the three long columns given as arrays.

        Parameters
        ----------
        item, annotator, label : array-like of shape (n_ratings,)
            Item id, annotator id and label of each rating.
        classes : array-like of shape (n_classes,), default=None
            The class set, when some classes were never used. Sorted. By default the
            sorted unique labels.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If the arrays are not 1-D of equal length, contain NaN/None, a label is not in
            ``classes``, or there are fewer than 2 classes.
        """
        it = _as_column(item, "item")
        an = _as_column(annotator, "annotator")
        lab = _as_column(label, "label")
        if not it.size == an.size == lab.size:
            raise ValueError("item, annotator and label must have the same length, got "
                             f"{it.size}, {an.size} and {lab.size}")
        return cls._from_columns(it, an, lab, classes=classes, label_name="label",
                                 source="item/annotator/label")

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
        matrix : array-like of shape (n_items, n_annotators)
            ``matrix[i, j]`` is the label annotator ``j`` gave item ``i``. NaN and None are
            always missing; so are entries equal to ``missing``. Integral floats are read
            as integers.
        missing : scalar, default=None
            Sentinel marking a missing rating (e.g. ``-1``), besides NaN/None.
        classes : array-like of shape (n_classes,), default=None
            The class set, when some classes were never used (and required to allow
            non-integer numeric labels). Sorted. By default the sorted unique labels.
        items : array-like of shape (n_items,), default=None
            Id of each row; default ``0..n_items-1``. Stored sorted.
        annotators : array-like of shape (n_annotators,), default=None
            Id of each column; default ``0..n_annotators-1``. Stored sorted. Every column
            is an annotator, even one with no rating.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If ``matrix`` is not 2-D, an item (row) has no rating, a label is not in
            ``classes``, or ``items``/``annotators`` have the wrong length or duplicates.
        """
        if isinstance(matrix, pd.DataFrame):
            if items is None:
                items = matrix.index.to_numpy()
            if annotators is None:
                annotators = matrix.columns.to_numpy()
            m = matrix.to_numpy()
        else:
            m = np.asarray(matrix)
        if m.ndim != 2:
            raise ValueError(f"matrix must be 2-dimensional (n_items, n_annotators), "
                             f"got shape {m.shape}")
        if m.dtype.kind == "c":
            raise ValueError("matrix must not be complex")
        n, J = m.shape
        if n == 0 or J == 0:
            raise ValueError(f"matrix must have at least one row and one column, "
                             f"got shape {m.shape}")
        is_missing = np.asarray(pd.isna(m), dtype=bool)
        if missing is not None and not (isinstance(missing, float) and np.isnan(missing)):
            if m.dtype.kind in "biuf" and isinstance(missing, int | float | np.number):
                is_missing |= m == missing
            else:
                is_missing |= np.asarray(m.astype(object) == missing, dtype=bool)
        if m.dtype.kind == "f":
            finite = np.isfinite(m) | is_missing
            if not finite.all():
                raise ValueError("matrix contains infinite values")
        empty = np.flatnonzero(~(~is_missing).any(axis=1))
        row_ids = (np.arange(n) if items is None else _check_id_set(items, "items"))
        col_ids = (np.arange(J) if annotators is None
                   else _check_id_set(annotators, "annotators"))
        if row_ids.size != n:
            raise ValueError(f"items must have one id per row of matrix ({n}), "
                             f"got {row_ids.size}")
        if col_ids.size != J:
            raise ValueError(f"annotators must have one id per column of matrix ({J}), "
                             f"got {col_ids.size}")
        if empty.size:
            raise ValueError(f"matrix: item(s) at row(s) {_show(empty)} have no rating "
                             f"({empty.size} in all); drop those rows or give their ratings")
        rows, cols = np.nonzero(~is_missing)
        labels = _tidy_values(np.asarray(m[rows, cols]))
        if labels.dtype.kind == "f" and classes is None:
            bad = labels[labels != np.round(labels)]
            raise ValueError(f"matrix contains non-integer numeric labels, e.g. {_show(bad)}; "
                             "pass classes= listing them if they really are class labels")
        return cls._from_columns(row_ids[rows], col_ids[cols], labels, classes=classes,
                                 label_name="matrix", annotators=col_ids, source="matrix")

    @classmethod
    def from_counts(
        cls,
        counts: ArrayLike,
        *,
        classes: ArrayLike | None = None,
    ) -> Annotations:
        """Ratings from an (n_items, n_classes) matrix of vote counts (e.g. CIFAR-10H).

        Annotator identities are not known from counts. Rating ``j`` of an item (ratings
        ordered by class) gets the anonymous annotator id ``j``, so "annotator j" means
        "the j-th rating of the item" and carries no meaning across items: do not fit
        per-annotator models (Dawid–Skene confusion matrices) to such data.

        Parameters
        ----------
        counts : array-like of shape (n_items, n_classes)
            Non-negative integer counts; ``counts[i, k]`` ratings of class ``k`` for item
            ``i``. Every row must have a positive total.
        classes : array-like of shape (n_classes,), default=None
            Label of each column; default ``0..n_classes-1``. If not sorted, the columns
            are reordered with them, so :meth:`counts` returns the columns in sorted
            class order.

        Returns
        -------
        Annotations

        Raises
        ------
        ValueError
            If ``counts`` is not a 2-D matrix of non-negative integers, a row sums to 0,
            there are fewer than 2 columns, or ``classes`` has the wrong length.
        """
        c = check_array(counts, "counts", ndim=2, dtype=np.float64)
        n, K = c.shape
        if n == 0:
            raise ValueError("counts must have at least one row (item)")
        if np.any(c != np.round(c)):
            raise ValueError("counts must be integers, got non-integer values")
        if np.any(c < 0):
            raise ValueError(f"counts must be non-negative, got minimum {c.min():g}")
        c = c.astype(np.int64)
        if classes is None:
            col_labels = np.arange(K)
        else:
            col_labels = _check_id_set(classes, "classes")
            if col_labels.size != K:
                raise ValueError(f"classes must have one label per column of counts ({K}), "
                                 f"got {col_labels.size}")
        _check_n_classes(col_labels, given=True)
        n_i = c.sum(axis=1)
        empty = np.flatnonzero(n_i == 0)
        if empty.size:
            raise ValueError(f"counts: item(s) at row(s) {_show(empty)} have no rating "
                             f"(zero total; {empty.size} in all)")
        flat = c.ravel()
        item = np.repeat(np.repeat(np.arange(n), K), flat)
        col = np.repeat(np.tile(np.arange(K), n), flat)
        start = np.concatenate([[0], np.cumsum(n_i)[:-1]])
        position = np.arange(item.size) - start[item]
        return cls._from_columns(item, position, col_labels[col], classes=col_labels,
                                 label_name="counts", annotators=np.arange(n_i.max()),
                                 source="counts")

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
        """Sorted item ids, shape (n_items,)."""
        return self._items

    @property
    def annotators(self) -> np.ndarray:
        """Sorted annotator ids, shape (n_annotators,)."""
        return self._annotators

    @property
    def classes(self) -> np.ndarray:
        """Sorted class labels, shape (n_classes,)."""
        return self._classes

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
            takes the lowest class index (NumPy's argmax convention), ``'random'`` takes
            one of the tied classes uniformly at random (needs ``seed``), ``'raise'``
            raises if any item is tied.
        seed : int or jax PRNG key, default=None
            Randomness for ``tie='random'``; the same seed gives the same votes. Untied
            items never depend on it.

        Returns
        -------
        ndarray of shape (n_items,), dtype int64
            Class indices into :attr:`classes`.

        Raises
        ------
        ValueError
            If ``tie`` is not an option, ``tie='random'`` is used without ``seed``, or
            ``tie='raise'`` and some item is tied.
        """
        check_choice(tie, "tie", _TIE_OPTIONS)
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
                                 f"majority classes, e.g. items {_show(self._items[is_tied])}; "
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

    def subset(self, items: ArrayLike) -> Annotations:
        """The ratings of some items only.

        Parameters
        ----------
        items : array-like of bool of shape (n_items,), or of int
            A mask over :attr:`items`, or item indices (positions in :attr:`items`,
            ``0..n_items-1``, no duplicates).

        Returns
        -------
        Annotations
            The same annotators and classes (counts are kept even if now unused), with
            the selected items.

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
        return Annotations(new_pos[self._item_index[rows]], self._annotator_index[rows],
                           self._label_index[rows], items=self._items[keep],
                           annotators=self._annotators, classes=self._classes)

    # ------------------------------------------------------------------ summaries

    def annotator_summary(self) -> pd.DataFrame:
        """Per-annotator counts, agreement with the majority and class shares.

        Returns
        -------
        DataFrame
            Indexed by annotator id (index name ``annotator``), one row per annotator,
            with columns:

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
        J, K = self.n_annotators, self.n_classes
        a = self._annotator_index
        n_ratings = np.bincount(a, minlength=J)
        pairs = np.unique(self._item_index * J + a)
        n_items = np.bincount(pairs % J, minlength=J)
        vote = self.majority_vote(tie="lowest")
        agree = np.bincount(a, weights=(self._label_index == vote[self._item_index]),
                            minlength=J)
        by_class = np.bincount(a * K + self._label_index, minlength=J * K).reshape(J, K)
        denom = n_ratings.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            agreement = np.where(n_ratings > 0, agree / denom, np.nan)
            shares = np.where(n_ratings[:, None] > 0, by_class / denom[:, None], np.nan)
        frame = pd.DataFrame(
            {"n_ratings": n_ratings.astype(np.int64), "n_items": n_items.astype(np.int64),
             "agreement_with_majority": agreement},
            index=pd.Index(self._annotators, name="annotator"),
        )
        for k, c in enumerate(self._classes):
            frame[f"share_{_py(c)}"] = shares[:, k]
        return frame

    def _agreement_terms(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        """Counts and per-item pair agreement P_i over items with >= 2 ratings."""
        c = self.counts()
        n_i = c.sum(axis=1)
        keep = n_i >= 2
        if not keep.any():
            raise ValueError(f"{what} needs items with at least 2 ratings; every item here "
                             "has a single rating")
        c, n_i = c[keep].astype(np.float64), n_i[keep].astype(np.float64)
        p_i = (c * (c - 1.0)).sum(axis=1) / (n_i * (n_i - 1.0))
        return c, p_i

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
        _, p_i = self._agreement_terms("percent_agreement")
        return float(p_i.mean())

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
            method='fleiss')``. NaN when every rating is in one class (:math:`P_e = 1`:
            kappa is undefined).

        Raises
        ------
        ValueError
            If no item has at least 2 ratings.

        References
        ----------
        .. [1] Fleiss, J. L. (1971). Measuring nominal scale agreement among many
           raters. Psychological Bulletin, 76(5), 378-382.
        """
        c, p_i = self._agreement_terms("fleiss_kappa")
        totals = c.sum(axis=0)
        if np.count_nonzero(totals) <= 1:
            return float("nan")
        p_k = totals / totals.sum()
        p_e = float(np.sum(p_k**2))
        return float((p_i.mean() - p_e) / (1.0 - p_e))


def _rebuild(
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    label_index: np.ndarray,
    items: np.ndarray,
    annotators: np.ndarray,
    classes: np.ndarray,
) -> Annotations:
    """Unpickle an :class:`Annotations` (through the validating constructor)."""
    return Annotations(item_index, annotator_index, label_index,
                       items=items, annotators=annotators, classes=classes)
