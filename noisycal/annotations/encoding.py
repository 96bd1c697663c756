"""Checking and encoding the columns of an annotation table (ids, labels, classes).

The building blocks of :class:`~noisycal.Annotations` and its ``from_*`` constructors:
each turns a user column into a validated NumPy array, or ids/labels into integer codes.
Orders are never changed behind the user's back:

- item and annotator ids keep their given order, else their first-seen order;
- classes keep the order of ``classes=`` when given, else the declared categories of a
  pandas Categorical label column, else the sorted unique labels.

Every check raises ``ValueError`` naming the argument (or the column) it is about.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._util.types import ArrayLike

__all__ = [
    "N_SHOW",
    "py_value",
    "show",
    "tidy_values",
    "as_column",
    "categories_of",
    "check_id_set",
    "check_n_classes",
    "check_index",
    "encode_ids",
    "encode_labels",
    "readonly",
]

#: How many offending entries an error message lists.
N_SHOW = 5

#: ``pandas.api.types.infer_dtype`` kinds that mix incomparable types (strings and numbers).
_MIXED = ("mixed", "mixed-integer")


def py_value(value: object) -> object:
    """A NumPy scalar as the plain Python value (for messages and column names)."""
    return value.item() if isinstance(value, np.generic) else value


def show(values: ArrayLike) -> str:
    """The first few entries of ``values`` for an error message."""
    values = np.asarray(values)
    head = ", ".join(repr(py_value(v)) for v in values[:N_SHOW])
    more = ", ..." if values.size > N_SHOW else ""
    return f"[{head}{more}]"


def tidy_values(arr: np.ndarray) -> np.ndarray:
    """Give object arrays of strings or numbers a proper dtype; integral floats become int."""
    if arr.dtype == object and arr.size:
        kind = pd.api.types.infer_dtype(arr, skipna=False)
        if kind == "string":
            arr = arr.astype(str)
        elif kind == "integer":
            arr = arr.astype(np.int64)
        elif kind in ("floating", "mixed-integer-float"):
            arr = arr.astype(np.float64)
    if arr.dtype.kind == "f" and arr.size and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    return arr


def categories_of(values: Any) -> np.ndarray | None:
    """The declared categories of a pandas Categorical (or categorical Series), else None."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        values = values.array
    if isinstance(values, pd.Categorical):
        return tidy_values(np.asarray(values.categories.to_numpy()))
    return None


def as_column(values: Any, name: str) -> np.ndarray:
    """A one-dimensional column of ids or labels: no missing, infinite or mixed-type entries.

    Parameters
    ----------
    values : array-like, Series, Index or Categorical
        The column.
    name : str
        How error messages name it (e.g. ``"df['label'] (label)"``).

    Returns
    -------
    ndarray of shape (n,)
        Object arrays of strings or integers get a proper dtype; integral floats become
        int64.
    """
    if isinstance(values, pd.Series | pd.Index | pd.Categorical):
        arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
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
            f"{name} contains {rows.size} missing value(s) (NaN/None) at row(s) {show(rows)}; "
            "a long table has no missing entries: drop those rows "
            "(e.g. df.dropna(subset=[...])) before building Annotations"
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        rows = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{name} contains infinite values at row(s) {show(rows)}")
    if arr.dtype == object and arr.size:
        kind = pd.api.types.infer_dtype(arr, skipna=False)
        if kind in _MIXED:
            raise ValueError(f"{name} mixes values of different types (e.g. strings and "
                             f"numbers: {show(arr)}); use one type for all of them")
    return tidy_values(arr)


def check_id_set(values: Any, name: str) -> np.ndarray:
    """An explicit set of ids (``classes``, ``items``, ``annotators``): 1-D, no duplicates.

    Parameters
    ----------
    values : array-like
        The ids, in the order to keep.
    name : str
        The argument's name, for error messages.

    Returns
    -------
    ndarray
    """
    arr = as_column(values, name)
    dup = pd.Index(arr).duplicated()
    if dup.any():
        raise ValueError(f"{name} must not contain duplicates, got "
                         f"{show(pd.unique(arr[dup]))} more than once")
    return arr


def check_n_classes(classes: np.ndarray, given: bool) -> None:
    """At least two classes (with a hint when they were inferred from the labels).

    Parameters
    ----------
    classes : ndarray
        The class set.
    given : bool
        Whether the user declared it (no hint to pass ``classes=`` then).
    """
    if classes.size < 2:
        hint = ("" if given else
                " (only these labels were observed: pass classes= to declare the full class set)")
        raise ValueError(f"classes: at least 2 classes are needed, got {classes.size}: "
                         f"{show(classes)}{hint}")


def check_index(values: ArrayLike, name: str, size: int) -> np.ndarray:
    """A 1-D integer index array with entries in ``0..size-1``, as int64.

    Parameters
    ----------
    values : array-like
        The indices.
    name : str
        The argument's name, for error messages.
    size : int
        Length of the id set the indices point into.
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        raise ValueError(f"{name} must lie in 0..{size - 1}, got values in "
                         f"[{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def encode_ids(
    values: np.ndarray, declared: ArrayLike | None, name: str, column: str
) -> tuple[np.ndarray, np.ndarray]:
    """Id set and the index of each entry into it.

    With ``declared`` (the user's ``items=``/``annotators=``), its order is kept and every
    value must be in it; otherwise the ids are taken in first-seen order.

    Parameters
    ----------
    values : ndarray of shape (n_ratings,)
        A checked id column (:func:`as_column`).
    declared : array-like or None
        The declared id set.
    name : str
        The declared set's argument name (``items`` or ``annotators``).
    column : str
        How error messages name the column.

    Returns
    -------
    ids : ndarray
    index : ndarray of shape (n_ratings,), int64
    """
    if declared is None:
        codes, uniques = pd.factorize(values, sort=False)
        return tidy_values(np.asarray(uniques)), codes.astype(np.int64)
    ids = check_id_set(declared, name)
    position = pd.Index(ids).get_indexer(values)
    if np.any(position < 0):
        unknown = pd.unique(values[position < 0])
        raise ValueError(f"{column} contains id {py_value(unknown[0])!r}, which is not in "
                         f"{name} {show(ids)} (unknown ids: {show(unknown)})")
    return ids, position.astype(np.int64)


def encode_labels(
    labels: np.ndarray,
    classes: ArrayLike | None,
    name: str,
    categories: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Class set and the class index of each label.

    The class set is ``classes`` in the given order when given, else ``categories`` (the
    declared categories of a Categorical label column, unused ones included), else the
    sorted unique labels.

    Parameters
    ----------
    labels : ndarray of shape (n_ratings,)
        A checked label column (:func:`as_column`).
    classes : array-like or None
        The user's ``classes=``.
    name : str
        How error messages name the label column.
    categories : ndarray or None, default=None
        Declared categories of the label column.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    index : ndarray of shape (n_ratings,), int64
    """
    given = classes is not None
    if given:
        cls = check_id_set(classes, "classes")
    elif categories is not None:
        cls = check_id_set(categories, f"{name} categories")
    else:
        if labels.dtype.kind == "f":
            bad = labels[labels != np.round(labels)]
            raise ValueError(f"{name} contains non-integer numeric labels, e.g. {show(bad)}; "
                             "pass classes= listing them if they really are class labels")
        cls, inverse = np.unique(labels, return_inverse=True)
        check_n_classes(cls, given=False)
        return cls, inverse.reshape(-1).astype(np.int64)
    check_n_classes(cls, given=given or categories is not None)
    position = pd.Index(cls).get_indexer(labels)
    if np.any(position < 0):
        unknown = pd.unique(labels[position < 0])
        where = "classes" if given else "the declared categories"
        raise ValueError(f"{name} contains label {py_value(unknown[0])!r}, which is not in "
                         f"{where} {show(cls)} (unknown labels: {show(unknown)})")
    return cls, position.astype(np.int64)


def readonly(arr: np.ndarray) -> np.ndarray:
    """A read-only copy of ``arr``."""
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr
