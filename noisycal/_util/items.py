"""Item ids of predictions and targets: read, checked and compared.

Checked means none missing and none repeated. Re-exported by
:mod:`noisycal._util.validation`, the validation boundary."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .types import ArrayLike

__all__ = ["prediction_items", "check_item_ids", "check_items"]


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
    n = int(np.shape(x)[0]) if x is not None else None
    if items is not None:
        return check_item_ids(items, n)
    index = getattr(x, "index", None)
    if index is not None and hasattr(x, "to_numpy"):
        return check_item_ids(index, n, "items (the index of the predictions)")
    return None


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
    e, g = np.asarray(expected), np.asarray(given)
    if e.shape != g.shape or not all(x == y for x, y in zip(e.tolist(), g.tolist(),
                                                            strict=True)):
        first = next((i for i, (x, y) in enumerate(zip(e.tolist(), g.tolist(), strict=False))
                      if x != y), min(e.size, g.size))
        raise ValueError(f"{what}: the predictions' item ids do not match the target's "
                         f"items (first difference at position {first}); align them, e.g. "
                         "probs.loc[target.items]")
