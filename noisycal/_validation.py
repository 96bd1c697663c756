"""Validation at the Python boundary.

Every check raises ``ValueError`` naming the argument, what is allowed and what
was received. Nothing is clipped, dropped or guessed.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np
from scipy.special import log_softmax, softmax

from ._typing import ArrayLike

__all__ = [
    "PROB_ATOL",
    "check_level",
    "check_int",
    "check_choice",
    "check_array",
    "check_probs",
    "check_logits",
    "check_labels",
    "predictions",
]

#: Rows of a probability matrix must sum to 1 within this absolute tolerance.
PROB_ATOL = 1e-6


def check_level(level: object, name: str = "level") -> float:
    """A confidence level as a fraction strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, numbers.Real):
        raise ValueError(f"{name} must be a number in (0, 1), got {level!r}")
    value = float(level)
    if not np.isfinite(value) or not 0.0 < value < 1.0:
        hint = ""
        if 1.0 < value <= 100.0:
            hint = f" (levels are fractions: write {value / 100:g} for {value:g}%)"
        raise ValueError(f"{name} must be a fraction in (0, 1), got {level!r}{hint}")
    return value


def check_int(value: object, name: str, *, minimum: int | None = None) -> int:
    """An integer (not a bool, not a float) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_choice(value: object, name: str, options: Iterable[object]) -> object:
    """One of ``options``."""
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def check_array(
    x: ArrayLike,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    finite: bool = True,
    dtype: type = np.float64,
) -> np.ndarray:
    """Convert to a NumPy array of ``dtype`` and check its rank and finiteness."""
    try:
        arr = np.asarray(x)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise ValueError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} must be real, got complex values")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimensions, "
                             f"got shape {arr.shape}")
    arr = arr.astype(dtype, copy=False)
    if finite and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")
    return arr


def check_probs(probs: ArrayLike, name: str = "probs", *, atol: float = PROB_ATOL) -> np.ndarray:
    """Probabilities: (n,) positive-class probabilities or an (n, K) matrix whose rows sum to 1.

    Returns the array unchanged in shape, as float64.
    """
    p = check_array(probs, name, ndim=(1, 2))
    if p.shape[0] < 1:
        raise ValueError(f"{name} must contain at least one item, got shape {p.shape}")
    if p.ndim == 2 and p.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (classes), got shape {p.shape}")
    if np.any(p < 0.0) or np.any(p > 1.0):
        lo, hi = float(p.min()), float(p.max())
        raise ValueError(f"{name} must lie in [0, 1], got values in [{lo:g}, {hi:g}] "
                         "(pass logits= if these are logits)")
    if p.ndim == 2:
        dev = np.abs(p.sum(axis=1) - 1.0)
        if np.any(dev > atol):
            i = int(np.argmax(dev))
            raise ValueError(f"rows of {name} must sum to 1 within {atol:g}; row {i} sums to "
                             f"{p[i].sum():.8g} (normalise them, or pass logits=)")
    return p


def check_logits(logits: ArrayLike, name: str = "logits") -> np.ndarray:
    """Finite logits: (n,) positive-class logits or an (n, K) matrix."""
    z = check_array(logits, name, ndim=(1, 2))
    if z.shape[0] < 1:
        raise ValueError(f"{name} must contain at least one item, got shape {z.shape}")
    if z.ndim == 2 and z.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (classes), got shape {z.shape}")
    return z


def predictions(
    probs: ArrayLike | None, logits: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Resolve the explicit ``probs=`` / ``logits=`` pair.

    Returns
    -------
    P : ndarray of shape (n, K)
        Probabilities (a binary (n,) input becomes the (n, 2) matrix [1 - p, p]).
    log_P : ndarray of shape (n, K)
        Their logarithms, computed stably from logits when logits are given.
    binary_1d : bool
        Whether the input was a (n,) positive-class vector.
    """
    if (probs is None) == (logits is None):
        raise ValueError("give exactly one of probs= or logits= (they are never guessed)")
    if probs is not None:
        p = check_probs(probs)
        binary = p.ndim == 1
        P = np.column_stack([1.0 - p, p]) if binary else p
        with np.errstate(divide="ignore"):
            logP = np.log(P)
        return P, logP, binary
    z = check_logits(logits)
    binary = z.ndim == 1
    Z = np.column_stack([np.zeros_like(z), z]) if binary else z
    return softmax(Z, axis=1), log_softmax(Z, axis=1), binary


def check_labels(labels: ArrayLike, n_classes: int, name: str = "labels") -> np.ndarray:
    """Integer class labels in 0..n_classes-1 (floats allowed only when integral)."""
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {y.shape}")
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if np.any(y != np.round(y)):
            raise ValueError(f"{name} must be integer class labels; got non-integer values "
                             "(pass an (n, K) matrix or a Target for soft targets)")
        y = y.astype(np.int64)
    elif y.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integer class labels, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        bad = y[(y < 0) | (y >= n_classes)][0]
        raise ValueError(f"{name} must lie in 0..{n_classes - 1}, found label {bad}")
    return y
