"""Reading long, wide and count input into the encoded arrays of an Annotations object.

Each ``*_parts`` function validates one input form and returns :class:`Parts`, the
arguments of :class:`~noisycal.Annotations`' constructor, which validates them again
as a whole. Keeping these here (and not as methods) keeps
:mod:`noisycal.annotations.core` small and lets the constructor stay the one place an
Annotations object is made.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._util.types import ArrayLike
from .._util.validation import check_array
from .encoding import (
    as_column,
    categories_of,
    check_id_set,
    check_n_classes,
    encode_ids,
    encode_labels,
    show,
    tidy_values,
)

__all__ = ["Parts", "long_parts", "arrays_parts", "wide_parts", "counts_parts"]

#: Most ratings an Annotations object holds: engines index ratings with int32.
_MAX_RATINGS = 2**31 - 1


class Parts(NamedTuple):
    """Encoded ratings: the arguments of ``Annotations(...)``.

    Attributes
    ----------
    item_index, annotator_index, label_index : ndarray of shape (n_ratings,), int64
        Indices of each rating into ``items``, ``annotators`` and ``classes``.
    items, annotators, classes : ndarray
        The id sets, in their final order.
    annotators_known : bool
        False when annotator ids are placeholders (count input).
    """

    item_index: np.ndarray
    annotator_index: np.ndarray
    label_index: np.ndarray
    items: np.ndarray
    annotators: np.ndarray
    classes: np.ndarray
    annotators_known: bool


def _encode_columns(
    columns: dict[str, Any],
    names: dict[str, str],
    *,
    classes: ArrayLike | None,
    items: ArrayLike | None,
    annotators: ArrayLike | None,
    source: str,
) -> Parts:
    """Validate and encode the three long columns (item, annotator, label)."""
    arrays = {role: as_column(columns[role], names[role]) for role in columns}
    sizes = [arrays[r].size for r in ("item", "annotator", "label")]
    if len(set(sizes)) != 1:
        raise ValueError(f"{names['item']}, {names['annotator']} and {names['label']} must "
                         f"have the same length, got {sizes[0]}, {sizes[1]} and {sizes[2]}")
    if sizes[0] == 0:
        raise ValueError(f"{source} contains no ratings")
    item_ids, item_index = encode_ids(arrays["item"], items, "items", names["item"])
    if annotators is None:
        annotators = categories_of(columns["annotator"])
    ann_ids, ann_index = encode_ids(arrays["annotator"], annotators, "annotators",
                                    names["annotator"])
    cls, label_index = encode_labels(arrays["label"], classes, names["label"],
                                     categories_of(columns["label"]))
    return Parts(item_index, ann_index, label_index, item_ids, ann_ids, cls, True)


def long_parts(
    df: pd.DataFrame | Mapping[str, ArrayLike],
    *,
    item: str,
    annotator: str,
    label: str,
    classes: ArrayLike | None,
    items: ArrayLike | None,
    annotators: ArrayLike | None,
) -> Parts:
    """Encode a long table (see :meth:`~noisycal.Annotations.from_long`).

    Parameters
    ----------
    df : DataFrame or mapping
        The long table.
    item, annotator, label : str
        Column names.
    classes, items, annotators : array-like or None
        The declared class, item and annotator sets (see the method).

    Returns
    -------
    Parts
    """
    if isinstance(df, pd.DataFrame):
        columns = [str(c) for c in df.columns]
        if df.columns.has_duplicates:
            dup = df.columns[df.columns.duplicated()].unique().tolist()
            raise ValueError(f"df has duplicate column names {dup}; each column must "
                             "appear once")
    elif isinstance(df, Mapping):
        columns = [str(c) for c in df.keys()]
    else:
        raise ValueError(f"df must be a pandas DataFrame or a mapping of columns, "
                         f"got {type(df).__name__}")
    cols, names = {}, {}
    for role, col in (("item", item), ("annotator", annotator), ("label", label)):
        if col not in df:
            raise ValueError(f"df has no column {col!r} (the {role} column); available "
                             f"columns: {columns}. Name it with {role}=...")
        cols[role] = df[col]
        names[role] = f"df[{col!r}] ({role})"
    return _encode_columns(cols, names, classes=classes, items=items,
                           annotators=annotators, source="df")


def arrays_parts(
    item: ArrayLike,
    annotator: ArrayLike,
    label: ArrayLike,
    *,
    classes: ArrayLike | None,
    items: ArrayLike | None,
    annotators: ArrayLike | None,
) -> Parts:
    """Encode three long columns (see :meth:`~noisycal.Annotations.from_arrays`).

    Parameters
    ----------
    item, annotator, label : array-like of shape (n_ratings,)
        The columns.
    classes, items, annotators : array-like or None
        The declared class, item and annotator sets (see the method).

    Returns
    -------
    Parts
    """
    cols = {"item": item, "annotator": annotator, "label": label}
    names = {role: role for role in cols}
    return _encode_columns(cols, names, classes=classes, items=items,
                           annotators=annotators, source="item/annotator/label")


def _missing_mask(m: np.ndarray, missing: object) -> np.ndarray:
    """Entries of ``m`` that are NaN/None or equal to the ``missing`` sentinel."""
    is_missing = np.asarray(pd.isna(m), dtype=bool)
    if missing is None or (isinstance(missing, float) and np.isnan(missing)):
        return is_missing
    if isinstance(missing, bool | np.bool_):
        raise ValueError(f"missing must be a label-like scalar, not a bool ({missing!r} "
                         "would match the labels 1/0)")
    if np.ndim(missing) != 0:
        raise ValueError(f"missing must be a scalar, got {type(missing).__name__}")
    if m.dtype.kind in "iuf" and isinstance(missing, numbers.Number):
        return is_missing | (m == missing)
    return is_missing | np.asarray(m.astype(object) == missing, dtype=bool)


def _wide_categories(matrix: pd.DataFrame) -> np.ndarray | None:
    """The shared categories of a DataFrame whose columns are all Categorical, else None."""
    dtypes = [d for d in matrix.dtypes if isinstance(d, pd.CategoricalDtype)]
    if not dtypes:
        return None
    first = list(dtypes[0].categories)
    # compare the category lists: unordered CategoricalDtypes compare equal up to order
    if len(dtypes) != matrix.shape[1] or any(list(d.categories) != first for d in dtypes[1:]):
        raise ValueError("matrix has Categorical columns with different categories (or "
                         "mixed with plain columns); pass classes= to declare the class set")
    return categories_of(pd.Categorical([], dtype=dtypes[0]))


def wide_parts(
    matrix: ArrayLike,
    *,
    missing: object,
    classes: ArrayLike | None,
    items: ArrayLike | None,
    annotators: ArrayLike | None,
) -> Parts:
    """Encode a wide matrix (see :meth:`~noisycal.Annotations.from_wide`).

    Parameters
    ----------
    matrix : array-like or DataFrame of shape (n_items, n_annotators)
        The labels.
    missing : scalar or None
        The missing-rating sentinel.
    classes, items, annotators : array-like or None
        The declared class, item and annotator sets (see the method).

    Returns
    -------
    Parts
    """
    categories = None
    if isinstance(matrix, pd.DataFrame):
        categories = _wide_categories(matrix)
        items = matrix.index.to_numpy() if items is None else items
        annotators = matrix.columns.to_numpy() if annotators is None else annotators
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
        raise ValueError(f"matrix must have at least one row and one column, got shape {m.shape}")
    is_missing = _missing_mask(m, missing)
    if m.dtype.kind == "f" and not (np.isfinite(m) | is_missing).all():
        raise ValueError("matrix contains infinite values")
    row_ids = np.arange(n) if items is None else check_id_set(items, "items")
    col_ids = np.arange(J) if annotators is None else check_id_set(annotators, "annotators")
    if row_ids.size != n:
        raise ValueError(f"items must have one id per row of matrix ({n}), got {row_ids.size}")
    if col_ids.size != J:
        raise ValueError(f"annotators must have one id per column of matrix ({J}), "
                         f"got {col_ids.size}")
    empty = np.flatnonzero(is_missing.all(axis=1))
    if empty.size:
        raise ValueError(f"matrix: item(s) at row(s) {show(empty)} have no rating "
                         f"({empty.size} in all); drop those rows or give their ratings")
    rows, cols = np.nonzero(~is_missing)
    labels = as_column(tidy_values(np.asarray(m[rows, cols])), "matrix")
    cls, label_index = encode_labels(labels, classes, "matrix", categories)
    if missing is not None and not (isinstance(missing, float) and np.isnan(missing)):
        clash = pd.Index(cls).get_indexer([missing])[0]
        if clash >= 0:
            raise ValueError(f"missing={missing!r} is also one of the classes {show(cls)}; "
                             "choose a sentinel that is not a class label")
    return Parts(rows.astype(np.int64), cols.astype(np.int64), label_index, row_ids, col_ids,
                 cls, True)


def counts_parts(counts: ArrayLike, *, classes: ArrayLike | None,
                 items: ArrayLike | None = None) -> Parts:
    """Encode a count matrix (see :meth:`~noisycal.Annotations.from_counts`).

    Parameters
    ----------
    counts : array-like of shape (n_items, n_classes)
        Ratings of each class per item.
    classes : array-like or None
        Label of each column.
    items : array-like or None, default=None
        Id of each row.

    Returns
    -------
    Parts
    """
    if np.asarray(counts).dtype.kind == "b":
        raise ValueError("counts must be numbers of ratings, got booleans; pass "
                         "counts.astype(int) if a one-hot matrix is meant")
    c = check_array(counts, "counts", ndim=2, dtype=np.float64)
    n, K = c.shape
    if n == 0:
        raise ValueError("counts must have at least one row (item)")
    if np.any(c < 0):
        raise ValueError(f"counts must be non-negative, got minimum {c.min():g}")
    if np.any(c != np.round(c)):
        raise ValueError("counts must be integers, got non-integer values")
    c = c.astype(np.int64)
    if classes is None:
        col_labels = np.arange(K)
    else:
        col_labels = check_id_set(classes, "classes")
        if col_labels.size != K:
            raise ValueError(f"classes must have one label per column of counts ({K}), "
                             f"got {col_labels.size}")
    check_n_classes(col_labels, given=True)
    row_ids = np.arange(n) if items is None else check_id_set(items, "items")
    if row_ids.size != n:
        raise ValueError(f"items must have one id per row of counts ({n}), got {row_ids.size}")
    n_i = c.sum(axis=1)
    if n_i.sum() > _MAX_RATINGS:
        raise ValueError(f"counts total {int(n_i.sum())} ratings, more than the "
                         f"{_MAX_RATINGS} an Annotations object can index (int32 engine "
                         "arrays); check the counts")
    empty = np.flatnonzero(n_i == 0)
    if empty.size:
        raise ValueError(f"counts: item(s) at row(s) {show(empty)} have no rating "
                         f"(zero total; {empty.size} in all)")
    flat = c.ravel()
    item = np.repeat(np.repeat(np.arange(n), K), flat)
    col = np.repeat(np.tile(np.arange(K), n), flat)
    start = np.concatenate([[0], np.cumsum(n_i)[:-1]])
    position = np.arange(item.size) - start[item]
    return Parts(item, position.astype(np.int64), col, row_ids, np.arange(n_i.max()),
                 col_labels, False)
