"""A pandas DataFrame given as a target matrix.

Its columns are matched to the classes by label and its index read as (or matched to)
the item ids, as the metrics do for predictions."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.items import check_item_ids
from .._util.types import ArrayLike
from .._util.validation import categorical_labels, encode_labels

__all__ = ["frame_matrix", "one_hot", "vector_target"]


def _is_default(index: Any, n: int) -> bool:
    """Whether a pandas index is the unlabelled ``RangeIndex(0, n)``."""
    import pandas as pd

    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 \
        and len(index) == n


def frame_matrix(values: Any, name: str, classes: ArrayLike | None = None,
                 items: ArrayLike | None = None) -> tuple[Any, Any, Any]:
    """``(matrix, classes, items)`` of a target given as a DataFrame (others pass through).

    Columns: with ``classes`` the DataFrame's column labels must be those classes, in any
    order, and the columns are put in the order of ``classes``; without ``classes`` the
    column labels become the classes. Index: with ``items`` the index must hold those
    ids, in any order, and the rows are put in the order of ``items``; without ``items``
    the index becomes the item ids. An unlabelled axis (the default ``RangeIndex``
    0..n-1) keeps its positional meaning and carries no labels.

    Parameters
    ----------
    values : array-like or pandas DataFrame
    name : str
        The argument's name, for the messages.
    classes, items : array-like, optional
        The constructor's ``classes=`` and ``items=``.

    Returns
    -------
    matrix : ndarray or the input
    classes, items : array-like or None

    Raises
    ------
    ValueError
        Column labels that are not the classes, or an index that does not hold the items,
        naming ``name``; a repeated or missing id in the index.
    """
    if not (hasattr(values, "columns") and hasattr(values, "index")
            and hasattr(values, "to_numpy")):
        return values, classes, items
    n_rows, n_cols = values.shape
    cols = list(values.columns)
    if classes is not None:
        want = np.asarray(classes).tolist()
        if cols != want and not _is_default(values.columns, n_cols):
            if len(set(cols)) != len(cols) or set(cols) != set(want) or \
                    len(cols) != len(want):
                raise ValueError(f"{name}: the DataFrame's column labels {cols} are not the "
                                 f"classes {want}; name the columns by class (they are "
                                 "matched by label), or pass a plain array (read by "
                                 "position)")
            values = values[want]
    elif not _is_default(values.columns, n_cols):
        classes = np.asarray(cols)
    if _is_default(values.index, n_rows):
        return values.to_numpy(), classes, items
    ids = check_item_ids(np.asarray(values.index), n_rows, f"{name} (its index)")
    if items is None:
        return values.to_numpy(), classes, ids
    given = check_item_ids(items, n_rows)
    if ids.tolist() != given.tolist():
        if set(ids.tolist()) != set(given.tolist()):
            missing = next(v for v in given.tolist() if v not in set(ids.tolist()))
            raise ValueError(f"{name}: the DataFrame's index does not hold the items "
                             f"(item {missing!r} is not in it); index the rows by item id "
                             "(they are matched by label), or pass a plain array (read "
                             "by position)")
        values = values.loc[given.tolist()]
    return values.to_numpy(), classes, given


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Rows ``e_{y_i}`` of shape (n, n_classes) for class indices ``y``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Class indices in ``0..n_classes-1``.
    n_classes : int

    Returns
    -------
    ndarray of shape (n, n_classes)
    """
    out = np.zeros((y.shape[0], n_classes))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


def vector_target(target: object, arr: np.ndarray, n_items: int, n_classes: int, name: str,
                  classes: ArrayLike | None) -> np.ndarray:
    """A metric's 1-D target as a matrix (:func:`noisycal.targets.as_target_matrix`).

    Parameters
    ----------
    target : object
        The target as the user gave it (for messages).
    arr : ndarray of shape (n_items,)
        Class labels, or the positive-class target of a binary problem (floats).
    n_items, n_classes : int
        Of the predictions.
    name : str
        The argument's name in messages.
    classes : array-like, optional
        Class labels of the prediction columns.

    Returns
    -------
    ndarray of shape (n_items, n_classes)
    """
    if arr.shape[0] != n_items:
        raise ValueError(f"{name} has {arr.shape[0]} labels but the predictions have "
                         f"{n_items} items")
    target = categorical_labels(target, classes, name)
    if (classes is None and arr.dtype.kind == "f" and n_classes == 2
            and np.all(np.isfinite(arr)) and np.any(arr != np.round(arr))):
        t = arr.astype(np.float64)
        return np.column_stack([1.0 - t, t])
    if classes is not None and len(classes) != n_classes:
        raise ValueError(f"classes has {len(classes)} labels but the predictions have "
                         f"{n_classes} columns")
    y, _ = encode_labels(target, classes=classes,
                         n_classes=None if classes is not None else n_classes, name=name)
    return one_hot(y, n_classes)
