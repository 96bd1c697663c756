"""What a user touches on a Target: row selection (``target[idx]``) and its reprs.

Kept out of :mod:`noisycal.targets` (which holds the constructors) and attached to the
Target class there. Nothing here imports the Target type: rows are taken with
``dataclasses.replace``, so the new Target runs the same checks as any other.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from .._util.html import target_html

__all__ = ["select_rows", "target_repr", "target_html", "PER_ITEM_DETAILS"]

#: Entries of ``Target.details`` with one row per item (a corrected target's one-hot
#: ratings and their observed mask), selected together with the rows.
PER_ITEM_DETAILS = ("ratings", "observed")


def _row_index(index: object, n_items: int) -> np.ndarray:
    """Row positions (int64) from an integer array, a boolean mask or a slice."""
    if isinstance(index, slice):
        return np.arange(n_items)[index]
    if isinstance(index, numbers.Integral | np.ndarray) and np.ndim(index) == 0:
        raise ValueError(f"index must be an integer array, a boolean mask or a slice, got "
                         f"the single integer {index!r}; select one row with target[[i]]")
    arr = np.asarray(index)
    if arr.ndim != 1:
        raise ValueError(f"index must be one-dimensional (an integer array, a boolean mask "
                         f"or a slice), got shape {arr.shape}")
    if arr.dtype.kind == "b":
        if arr.shape[0] != n_items:
            raise ValueError(f"index: a boolean mask needs one entry per item ({n_items}), "
                             f"got {arr.shape[0]}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"index must hold integers or booleans, got dtype {arr.dtype} "
                         "(select by item id with target.items, e.g. "
                         "np.isin(target.items, ids))")
    if np.any(arr >= n_items) or np.any(arr < -n_items):
        bad = arr[(arr >= n_items) | (arr < -n_items)][0]
        raise ValueError(f"index holds {int(bad)}, outside the {n_items} rows")
    return np.where(arr < 0, arr + n_items, arr).astype(np.int64)


def select_rows(target: Any, index: object) -> Any:
    """The rows ``index`` of a Target, for splits: ``target[idx]``.

    Parameters
    ----------
    target : Target
    index : array-like of int or bool, or slice
        Row positions (negative ones count from the end), a boolean mask with one entry
        per item, or a slice. Select by item id with a mask, ``np.isin(target.items, ids)``.

    Returns
    -------
    Target
        The same kind, classes, status, message and details, with the selected rows of
        the matrix, of the item ids and of the per-item details (a corrected target's
        ``ratings`` and ``observed``, :data:`PER_ITEM_DETAILS`, and the fingerprint of
        the classifier scores of a target built from a fit that used them,
        ``scores_fingerprint``); everything else (the
        weights, the channels, the fit) is kept as is, so a split of a corrected target
        still matches its fit by item id.

    Raises
    ------
    ValueError
        If ``index`` is a single integer, not one-dimensional, neither integer nor
        boolean, a mask of the wrong length, or out of range.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> t = nc.targets.hard([0, 1, 1, 0], n_classes=2, items=["a", "b", "c", "d"])
    >>> t[np.array([True, False, True, False])].items
    array(['a', 'c'], dtype='<U1')
    >>> t[1:3].values
    array([[0., 1.],
           [0., 1.]])
    """
    rows = _row_index(index, target.n_items)
    details = dict(target.details)
    for key in PER_ITEM_DETAILS:
        value = details.get(key)
        if value is not None and np.shape(value)[:1] == (target.n_items,):
            details[key] = np.asarray(value)[rows]
    fp = details.get("scores_fingerprint")
    if fp is not None:   # the scores of the selected rows (:mod:`noisycal.targets.circular`)
        details["scores_fingerprint"] = fp.take(rows)
    items = None if target.items is None else np.asarray(target.items)[rows]
    return dataclasses.replace(target, values=target.values[rows], items=items,
                               details=details)


def target_repr(target: Any) -> str:
    """``Target(kind=..., n_items=..., n_classes=...)`` plus a status that is not ok (all
    of them, ``statuses=(...)``, when several apply)."""
    text = (f"Target(kind={target.kind!r}, n_items={target.n_items}, "
            f"n_classes={target.n_classes}")
    statuses = getattr(target, "statuses", (target.status,))
    if len(statuses) > 1:
        return text + f", statuses={tuple(statuses)!r})"
    return text + (f", status={target.status!r})" if target.status != "ok" else ")")
