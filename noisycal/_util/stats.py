"""Small statistical helpers shared by the interval and engine packages."""

from __future__ import annotations

from typing import Any

import numpy as np

from .validation import check_level

__all__ = ["equal_tailed"]


def equal_tailed(values: Any, level: float, *, axis: int | None = 0,
                 ignore_nan: bool = False) -> tuple[Any, Any]:
    """Equal-tailed interval: the (1 - level)/2 and (1 + level)/2 quantiles.

    Parameters
    ----------
    values : array-like
        Draws or replicates.
    level : float
        Coverage fraction in (0, 1).
    axis : int or None, default=0
        Axis holding the draws (None: all values).
    ignore_nan : bool, default=False
        Skip NaN draws (``numpy.nanquantile``) instead of propagating them.

    Returns
    -------
    low, high : float or ndarray
        Floats when the result is a scalar.

    Examples
    --------
    >>> [round(x, 9) for x in equal_tailed(range(101), 0.9)]
    [5.0, 95.0]
    """
    level = check_level(level)
    a = (1.0 - level) / 2.0
    q = np.nanquantile if ignore_nan else np.quantile
    lo, hi = q(np.asarray(values, dtype=np.float64), [a, 1.0 - a], axis=axis)
    if np.ndim(lo) == 0:
        return float(lo), float(hi)
    return lo, hi
