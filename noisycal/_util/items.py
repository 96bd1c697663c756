"""Item ids and class columns of array-like inputs: read, checked and compared.

Checked means none missing and none repeated. :func:`aligned_values` is the one pandas
alignment of every array-like input (predictions, scores, sets, targets): a Series' or
DataFrame's index is checked against the item ids, a repeated index is refused, and a
DataFrame's columns are matched to the classes by label. Re-exported in part by
:mod:`noisycal._util.validation`, the validation boundary."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .types import ArrayLike

__all__ = ["prediction_items", "array_shape", "not_rectangular", "check_item_ids",
           "check_items", "first_difference", "is_pandas", "aligned_values", "checked_index",
           "match_columns", "check_same_ids",
           "item_ids_of", "classes_of", "frame_classes"]


def prediction_items(probs: Any, logits: Any, items: Any) -> np.ndarray | None:
    """Item ids of the predictions: ``items=`` if given, else a pandas index, else None.

    Parameters
    ----------
    probs, logits : array-like or pandas object
        The predictions (one of them is None).
    items : array-like, optional
        Explicit item ids, one per row.

    Returns
    -------
    ndarray or None
    """
    x = probs if probs is not None else logits
    n = None
    if x is not None:
        name = "probs" if probs is not None else "logits"
        shape = array_shape(x, name)
        if len(shape) not in (1, 2):
            raise ValueError(f"{name} must have 1 or 2 dimensions, got shape {shape}")
        n = int(shape[0])
    if items is not None:
        return check_item_ids(items, n)
    index = getattr(x, "index", None)
    if index is not None and hasattr(x, "to_numpy"):
        return check_item_ids(index, n, "items (the index of the predictions)")
    return None


def not_rectangular(name: str, exc: Exception) -> ValueError:
    """The error of an input NumPy cannot read as one rectangular array (ragged rows).

    Parameters
    ----------
    name : str
        The argument, named first in the message.
    exc : Exception
        NumPy's error, quoted after it.

    Returns
    -------
    ValueError
    """
    return ValueError(f"{name} must be a rectangular numeric array (every row of the same "
                      f"length); NumPy could not read it as one: {exc}")


def array_shape(x: Any, name: str) -> tuple[int, ...]:
    """``np.shape(x)``, with a ragged input refused naming ``name`` (:func:`not_rectangular`).

    Parameters
    ----------
    x : array-like
    name : str

    Returns
    -------
    tuple of int
    """
    try:
        return tuple(np.shape(x))
    except ValueError as exc:
        raise not_rectangular(name, exc) from exc


def check_item_ids(items: ArrayLike, n: int | None, name: str = "items") -> np.ndarray:
    """Item ids: a 1-D array of ``n`` ids, none missing (NaN or None), none repeated.

    Parameters
    ----------
    items : array-like
    n : int or None
        The number of rows they label (None: not checked).
    name : str, default='items'

    Returns
    -------
    ndarray
    """
    ids = np.asarray(items)
    if ids.ndim != 1 or (n is not None and ids.shape[0] != n):
        raise ValueError(f"{name} must be a 1-D array with one id per row ({n}), got shape "
                         f"{ids.shape}")
    values = ids.tolist()
    missing = sum(v is None or (isinstance(v, float) and v != v) for v in values)
    if missing:
        raise ValueError(f"{name} has {missing} missing id(s) (NaN or None) of {ids.size}: "
                         "every row needs an id")
    if len(set(values)) != ids.size:
        dup = next(v for v, c in Counter(values).items() if c > 1)
        raise ValueError(f"{name} must not repeat an id; {dup!r} appears more than once")
    return ids


def check_items(expected: ArrayLike | None, given: ArrayLike | None, what: str) -> None:
    """Raise ValueError when two item-id vectors (both known) differ in content or order.

    Parameters
    ----------
    expected : array-like or None
        The target's item ids.
    given : array-like or None
        The predictions' item ids (``items=`` or a pandas index).
    what : str
        Name of the argument that carried ``given``.
    """
    if expected is None or given is None:
        return
    e, g = np.asarray(expected).tolist(), np.asarray(given).tolist()
    if e != g:
        raise ValueError(f"{what}: the predictions' item ids do not match the target's "
                         f"items (first difference at position {first_difference(e, g)}); "
                         "align them, e.g. probs.loc[target.items]")


def first_difference(a: list, b: list) -> int:
    """The first position where two id lists differ (the shorter length when one is a
    prefix of the other); the one comparison behind every item-order message."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))


def is_pandas(x: object) -> bool:
    """Whether ``x`` is a pandas Series or DataFrame (an index and ``to_numpy``)."""
    return hasattr(x, "index") and hasattr(x, "to_numpy") and hasattr(x, "ndim")


def check_same_ids(expected: ArrayLike | None, given: ArrayLike | None, name: str,
                   whose: str) -> None:
    """Raise ValueError when the index ``given`` of ``name`` is not ``expected`` in order.

    Parameters
    ----------
    expected : array-like or None
        The item ids the rows must carry (None: nothing to compare).
    given : array-like or None
        The index of the input.
    name : str
        The input's argument name.
    whose : str
        Where ``expected`` comes from, for the message (``"the annotations'"``).
    """
    if expected is None or given is None:
        return
    e, g = np.asarray(expected).tolist(), np.asarray(given).tolist()
    if e == g:
        return
    if len(e) != len(g):
        where = f"{len(g)} rows for {len(e)} items"
    else:
        i = first_difference(e, g)
        where = f"first difference at position {i}: {g[i]!r} where {whose} item is {e[i]!r}"
    raise ValueError(f"{name}: its index does not list {whose} item ids in their order "
                     f"({where}); align it, e.g. {name}.loc[items], or pass a plain array "
                     "(read by position)")


def match_columns(frame: Any, classes: ArrayLike | None, name: str) -> Any:
    """A DataFrame with its columns put in the order of ``classes``, matched by label.

    Columns whose labels are the classes in another order are reordered; the default
    columns ``RangeIndex(K)`` that are not the classes keep positional meaning; other
    labels are refused. Without ``classes`` the frame is returned as is (positional).

    Parameters
    ----------
    frame : pandas.DataFrame
    classes : array-like or None
    name : str
        The argument's name, for the message.

    Returns
    -------
    pandas.DataFrame
    """
    cols = getattr(frame, "columns", None)
    if cols is None or classes is None:
        return frame
    labels, want = list(cols), np.asarray(classes).tolist()
    if labels == want:
        return frame
    if len(labels) == len(want) and len(set(labels)) == len(labels) \
            and set(labels) == set(want):
        return frame[want]
    import pandas as pd

    if isinstance(cols, pd.RangeIndex) and cols.start == 0 and cols.step == 1:
        return frame  # unlabelled columns: positional
    raise ValueError(f"{name}: the DataFrame's column labels {labels} are not the classes "
                     f"{want}; name the columns by class (they are matched by label), or "
                     "pass a plain array (read by position)")


def checked_index(x: Any, name: str, *, items: ArrayLike | None = None,
                  whose: str = "the target's") -> np.ndarray | None:
    """The index of a pandas input, checked as :func:`aligned_values` checks it.

    Parameters
    ----------
    x : object
        A Series or DataFrame (anything else: None, nothing checked).
    name : str
    items : array-like, optional
        The item ids the index must hold, in order.
    whose : str, default="the target's"

    Returns
    -------
    ndarray or None
    """
    if not is_pandas(x):
        return None
    ids = check_item_ids(np.asarray(x.index), len(x), f"{name} (its index)")
    check_same_ids(items, ids, name, whose)
    return ids


def aligned_values(x: Any, name: str, *, items: ArrayLike | None = None,
                   classes: ArrayLike | None = None, whose: str = "the target's") -> Any:
    """An array-like input with a pandas object checked and read as the metrics read it.

    A Series or DataFrame: its index must hold one id per row, none missing and none
    repeated, and (with ``items``) the item ids in their order; a DataFrame's columns are
    matched to ``classes`` by label (:func:`match_columns`). The values are returned as a
    NumPy array. Anything else is returned unchanged (read by position).

    Parameters
    ----------
    x : array-like, Series or DataFrame
    name : str
        The argument's name, for messages.
    items : array-like, optional
        The item ids the rows must carry.
    classes : array-like, optional
        The class labels the columns stand for.
    whose : str, default="the target's"
        Where ``items`` come from, for the message.

    Returns
    -------
    ndarray, or ``x`` itself when it is not a pandas object

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"b": [0.2, 0.9], "a": [0.8, 0.1]}, index=["i", "j"])
    >>> aligned_values(df, "probs", items=["i", "j"], classes=["a", "b"]).tolist()
    [[0.8, 0.2], [0.1, 0.9]]
    """
    if not is_pandas(x):
        return x
    checked_index(x, name, items=items, whose=whose)
    if x.ndim == 2:
        x = match_columns(x, classes, name)
    return x.to_numpy()


def item_ids_of(x: object, name: str) -> np.ndarray | None:
    """The item ids an input carries: a pandas index (checked: :func:`checked_index`), or
    the ``items`` of a Target or Annotations; None for a plain array.

    Parameters
    ----------
    x : object
    name : str
        The argument's name, for messages.

    Returns
    -------
    ndarray or None
    """
    if is_pandas(x):
        return checked_index(x, name)
    ids = getattr(x, "items", None)
    return None if ids is None or callable(ids) else np.asarray(ids)


def classes_of(x: object) -> list | None:
    """The class labels an input declares: a Target's ``classes``, or the categories of a
    pandas categorical; None when it declares none.

    Parameters
    ----------
    x : object

    Returns
    -------
    list or None
    """
    classes = getattr(x, "classes", None)
    if classes is not None and not callable(classes) and hasattr(x, "kind"):
        return np.asarray(classes).tolist()
    cats = getattr(getattr(x, "cat", None), "categories", None)
    return None if cats is None else list(cats)


def frame_classes(x: object) -> list | None:
    """The column labels of a DataFrame, unless they are the default ``RangeIndex(K)``
    (unlabelled columns); None for anything else.

    Parameters
    ----------
    x : object

    Returns
    -------
    list or None
    """
    cols = getattr(x, "columns", None)
    if cols is None or not is_pandas(x):
        return None
    import pandas as pd

    if isinstance(cols, pd.RangeIndex) and cols.start == 0 and cols.step == 1:
        return None
    return list(cols)
