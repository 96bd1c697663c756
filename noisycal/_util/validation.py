"""Validation at the Python boundary.

Every check raises ``ValueError`` naming the argument, what is allowed and what
was received. Nothing is clipped, dropped or guessed.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable

import numpy as np
from scipy.special import log_softmax, softmax

from ..exceptions import NumericalWarning
from .items import check_item_ids, check_items, not_rectangular, prediction_items
from .types import ArrayLike

__all__ = [
    "PROB_ATOL",
    "prob_atol",
    "MAX_WORK_BYTES",
    "check_work_bytes",
    "check_item_ids",
    "check_level",
    "check_int",
    "check_choice",
    "as_array",
    "check_array",
    "check_classes",
    "check_probs",
    "check_logits",
    "check_labels",
    "check_seed",
    "check_batch_size",
    "check_real",
    "check_n_bins",
    "MAX_BINS_PER_ITEM",
    "check_not_swapped",
    "user_stacklevel",
    "prediction_items",
    "encode_labels",
    "categorical_labels",
    "check_items",
    "predictions",
]

#: Rows of a probability matrix must sum to 1 within this absolute tolerance.
PROB_ATOL = 1e-6
#: At most this many bins per item (binned metrics and binned calibrators alike).
MAX_BINS_PER_ITEM = 10
#: Work arrays a metric would allocate beyond this many bytes (4 GiB) are refused up
#: front (:func:`check_work_bytes`); raise it here to allow more.
MAX_WORK_BYTES = 4 * 2**30


def prob_atol(dtype: object, n_classes: int) -> float:
    """Row-sum tolerance of probabilities stored in ``dtype``: ``PROB_ATOL`` (1e-6), or
    ``n_classes`` times the dtype's machine epsilon when that is larger (float16: 9.8e-4
    a class, so three float16 probabilities rounded from a normalised row pass).

    Parameters
    ----------
    dtype : dtype
    n_classes : int

    Returns
    -------
    float
    """
    dt = np.dtype(dtype)
    eps = float(np.finfo(dt).eps) if dt.kind == "f" else 0.0
    return max(PROB_ATOL, int(n_classes) * eps)


def check_work_bytes(n_bytes: float, name: str, what: str) -> None:
    """Refuse a request whose work arrays would take more than ``MAX_WORK_BYTES``.

    Parameters
    ----------
    n_bytes : float
        Estimated bytes of the largest allocation (``inf`` for an unrepresentable one).
    name : str
        The argument that sets the size, named in the message.
    what : str
        What would be allocated.
    """
    if n_bytes > MAX_WORK_BYTES:
        size = (f"{n_bytes / 2**30:.3g} GiB of memory" if n_bytes < 2**80
                else "more memory than exists")
        raise ValueError(f"{name}: {what} would need {size}, above the "
                         f"{MAX_WORK_BYTES / 2**30:g} GiB limit (noisycal._util.validation."
                         "MAX_WORK_BYTES); ask for less")


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


def check_real(value: object, name: str, *, minimum: float | None = None,
               maximum: float | None = None, strict: bool = False) -> float:
    """A finite real number (not a bool, not a string) in [minimum, maximum].

    Parameters
    ----------
    value : object
    name : str
        Argument name for the error message.
    minimum, maximum : float, optional
        Bounds; ``strict=True`` excludes them.
    strict : bool, default=False

    Returns
    -------
    float
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    lo_bad = minimum is not None and (v <= minimum if strict else v < minimum)
    hi_bad = maximum is not None and (v >= maximum if strict else v > maximum)
    if lo_bad or hi_bad:
        op = "<" if strict else "<="
        rng = " and ".join(x for x in (
            f"{minimum:g} {op} {name}" if minimum is not None else "",
            f"{name} {op} {maximum:g}" if maximum is not None else "") if x)
        raise ValueError(f"{name} must satisfy {rng}, got {value!r}")
    return v


def check_seed(seed: object, name: str = "seed") -> object:
    """A seed: an int in [-2**63, 2**63) or a JAX PRNG key (returned unchanged).

    Parameters
    ----------
    seed : int or jax key
    name : str, default='seed'

    Returns
    -------
    The seed.
    """
    if seed is None or isinstance(seed, bool):
        raise ValueError(f"{name} must be an int or a JAX PRNG key, got {seed!r}")
    if isinstance(seed, numbers.Integral):
        if not -(2**63) <= int(seed) < 2**63:
            raise ValueError(f"{name} must be an integer in [-2**63, 2**63), got {seed}")
        return seed
    if hasattr(seed, "dtype") and hasattr(seed, "shape") and not isinstance(seed, np.ndarray):
        return seed  # a JAX key; checked when it is used
    raise ValueError(f"{name} must be an int or a JAX PRNG key, got {type(seed).__name__}")


def check_batch_size(batch_size: object) -> int | None:
    """None (automatic) or a positive integer."""
    if batch_size is None:
        return None
    return check_int(batch_size, "batch_size", minimum=1)


def check_n_bins(n_bins: object, n_items: int) -> int:
    """A bin count: an integer >= 1 and at most ``MAX_BINS_PER_ITEM`` (10) per item.

    Many more bins than items leave almost every bin empty (and a bootstrap's per-bin
    arrays grow with n_bins), so such a request is refused rather than computed. The one
    rule of the binned metrics and the binned calibrators.

    Parameters
    ----------
    n_bins : int
    n_items : int
        The items the bins are filled with (the fitting items of a calibrator).

    Returns
    -------
    int
    """
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    if n_bins > MAX_BINS_PER_ITEM * int(n_items):
        raise ValueError(f"n_bins={n_bins} is far above the {n_items} item(s): at most "
                         f"{MAX_BINS_PER_ITEM} bins per item are allowed (almost every bin "
                         "would be empty)")
    return n_bins


def check_choice(value: object, name: str, options: Iterable[object]) -> object:
    """One of ``options``."""
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _nullable_values(x: object, name: str) -> np.ndarray | None:
    """The NumPy values of a pandas Series or DataFrame with nullable (masked) numeric
    columns (``Float64``, ``Int64``, ``boolean``), None for any other input; a missing
    value (``pd.NA``) is refused naming ``name``."""
    if not hasattr(x, "to_numpy") or not hasattr(x, "isna"):
        return None
    dtypes = list(x.dtypes) if hasattr(x, "columns") else [getattr(x, "dtype", None)]
    masked = [getattr(d, "numpy_dtype", None) for d in dtypes]
    if not any(isinstance(m, np.dtype) for m in masked):
        return None
    missing = int(np.asarray(x.isna()).sum())
    if missing:
        raise ValueError(f"{name} contains {missing} missing value(s) (pd.NA); every entry "
                         "needs a number")
    plain = [m if isinstance(m, np.dtype) else d for m, d in zip(masked, dtypes, strict=True)]
    try:
        dtype = np.result_type(*plain)
    except TypeError:  # a column of another extension type: read as NumPy reads it
        return None
    return x.to_numpy(dtype=dtype)


def as_array(x: ArrayLike, name: str) -> np.ndarray:
    """``np.asarray(x)``, with an input NumPy cannot read as one rectangular array (ragged
    rows) or at all refused naming ``name``. A pandas object of nullable numeric dtypes
    (``Float64``, ``Int64``) gives its values in the matching NumPy dtype; a missing
    value (``pd.NA``) in it is refused naming ``name``.

    Parameters
    ----------
    x : array-like
    name : str

    Returns
    -------
    ndarray
    """
    values = _nullable_values(x, name)
    if values is not None:
        return values
    try:
        return np.asarray(x)
    except ValueError as exc:
        raise not_rectangular(name, exc) from exc
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc


def check_array(
    x: ArrayLike,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    finite: bool = True,
    dtype: type = np.float64,
) -> np.ndarray:
    """Convert to a NumPy array of ``dtype`` (:func:`as_array`) and check its rank and
    finiteness."""
    arr = as_array(x, name)
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


def check_probs(probs: ArrayLike, name: str = "probs", *, atol: float | None = None
                ) -> np.ndarray:
    """Probabilities: (n,) positive-class probabilities or an (n, K) matrix whose rows sum to 1.

    Rows must sum to 1 within ``atol``, by default :func:`prob_atol` of the input's dtype
    (1e-6 for float32 and float64 up to 8 million classes). Returns the array unchanged
    in shape, as float64.
    """
    dtype = getattr(probs, "dtype", None)
    p = check_array(probs, name, ndim=(1, 2), finite=False)
    if atol is None:
        atol = prob_atol(dtype if isinstance(dtype, np.dtype) and dtype.kind == "f"
                         else np.float64, p.shape[1] if p.ndim == 2 else 2)
    # two reductions check finiteness and range at once (NaN and inf propagate to the
    # minimum or maximum); the messages are check_array's and the range message
    lo, hi = (float(p.min()), float(p.max())) if p.size else (0.0, 0.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        bad = int(np.size(p) - np.count_nonzero(np.isfinite(p)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")
    if p.shape[0] < 1:
        raise ValueError(f"{name} must contain at least one item, got shape {p.shape}")
    if p.ndim == 2 and p.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (classes), got shape {p.shape}")
    if lo < 0.0 or hi > 1.0:
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
    """Finite logits: (n,) positive-class logits or an (n, K) matrix.

    An (n, K) matrix whose rows all lie in [0, 1] and sum to 1, or an (n,) vector whose
    values all lie in [0, 1], looks like probabilities: a
    :class:`~noisycal.NumericalWarning` says so (it is still read as logits, as asked).
    """
    return check_logits_total(logits, name)[0]


def check_logits_total(logits: ArrayLike, name: str = "logits") -> tuple[np.ndarray, float]:
    """:func:`check_logits`, also returning the sum of all the logits.

    One reduction checks finiteness: NaN and inf propagate to the sum (a sum that
    overflows although every value is finite is told apart by the minimum and maximum).
    The minimum and maximum are otherwise computed only for 1-D logits or when the sum
    allows rows of probabilities (n within ``n * PROB_ATOL``)."""
    z = check_array(logits, name, ndim=(1, 2), finite=False)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(z.sum())
    lo = hi = None
    if not math.isfinite(total):
        lo, hi = float(z.min()), float(z.max())
        if not (math.isfinite(lo) and math.isfinite(hi)):
            bad = int(np.size(z) - np.count_nonzero(np.isfinite(z)))
            raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")
    if z.shape[0] < 1:
        raise ValueError(f"{name} must contain at least one item, got shape {z.shape}")
    if z.ndim == 2 and z.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (classes), got shape {z.shape}")
    n = z.shape[0]
    if z.ndim == 1 or abs(total - n) <= n * PROB_ATOL:
        lo, hi = (float(z.min()), float(z.max())) if lo is None else (lo, hi)
        if lo >= 0 and hi <= 1 and (z.ndim == 1 or np.all(np.abs(z.sum(axis=1) - 1.0)
                                                           <= PROB_ATOL)):
            what = "value" if z.ndim == 1 else "row"
            warnings.warn(f"every {what} of {name} lies in [0, 1]" + ("" if z.ndim == 1 else
                          " and sums to 1") + ": these look like probabilities; pass them "
                          "as probs= (they are used as logits, as given)", NumericalWarning,
                          stacklevel=user_stacklevel())
    return z, total


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
        dtype = as_array(probs, "probs").dtype
        if dtype.kind in "biu":
            raise ValueError(f"probs must be floating-point probabilities, got dtype "
                             f"{dtype} (class labels? the argument order is (probs, target))")
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


def user_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn`` that points at the first frame outside noisycal.

    Counts the consecutive innermost frames that live in the ``noisycal`` package or in
    ``noisycal.models`` (this function's frame included), like numpyro's
    ``find_stack_level``.

    Returns
    -------
    int
    """
    import inspect
    import os
    import sys

    # noisycal's own directory (this file is noisycal/_util/validation.py), and
    # noisycal.models' from sys.modules (no import of the package from inside it)
    dirs = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,)
    models = sys.modules.get("noisycal.models")
    if models is not None:
        dirs += (os.path.dirname(os.path.abspath(models.__file__)) + os.sep,)
    frame, level = inspect.currentframe(), 0
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(dirs):
        frame, level = frame.f_back, level + 1
    return max(level, 1)


def check_not_swapped(probs: np.ndarray, target: np.ndarray) -> None:
    """Refuse predictions that are all exactly 0 or 1 against a target that is not.

    That pattern is almost always ``metric(labels, probs)`` with the arguments swapped.

    Parameters
    ----------
    probs : ndarray
        The predictions as given: only a 1-D (positive-class) vector is checked.
    target : ndarray
        The (n, K) target matrix.
    """
    hard_probs = np.all((probs == 0.0) | (probs == 1.0))
    if probs.ndim == 1 and hard_probs and not np.all((target == 0.0) | (target == 1.0)):
        raise ValueError("probs are all exactly 0 or 1 while target holds fractional values: "
                         "are the arguments swapped? The order is (probs, target)")


def categorical_labels(labels: object, classes: ArrayLike | None, name: str = "target"
                       ) -> object:
    """A label vector as the metrics read it: a pandas categorical given without
    ``classes=`` is refused (ValueError naming ``classes``) unless its categories are the
    integers 0..K-1 in that order, and then read as its integer values.

    A categorical's categories say which labels exist, not which prediction column each
    stands for (pandas sorts them unless they are declared), so, as for a string array,
    the order of the columns must be given as ``classes=``. Categories 0..K-1 are read
    as integer labels are read (unused categories add no class).

    Parameters
    ----------
    labels : object
        The label vector (anything that is not a pandas categorical is returned as is).
    classes : array-like or None
        The ``classes=`` given with it (given: ``labels`` is returned as is).
    name : str, default='target'
        Argument name used in error messages.

    Returns
    -------
    object
        ``labels``, or the integer values of a categorical with categories 0..K-1.
    """
    if classes is not None:
        return labels
    cats = getattr(getattr(labels, "cat", None), "categories", None)
    if cats is None and not isinstance(labels, np.ndarray):
        cats = getattr(labels, "categories", None)
    if cats is None:
        return labels
    cats = list(cats)
    if all(isinstance(c, numbers.Integral) and not isinstance(c, bool | np.bool_)
           for c in cats) and [int(c) for c in cats] == list(range(len(cats))):
        return np.asarray(labels.to_numpy() if hasattr(labels, "to_numpy") else labels)
    raise ValueError(f"{name} is a pandas Categorical with categories {cats}, which are not "
                     f"the class indices 0..{len(cats) - 1}; give classes= with the class "
                     "labels in the order of the prediction columns, or a Target "
                     "(nc.targets.hard(labels, classes=...)): the categories' order is not "
                     "taken as the column order, as for a string array")


def check_classes(classes: ArrayLike) -> np.ndarray:
    """``classes=`` as an array: 1-D, at least 2 labels, none repeated, and not strings
    mixed with other labels (NumPy would make ``['a', 1]`` all strings)."""
    # a list or object array keeps each label's type; NumPy would make ['a', 1] strings
    typed = not isinstance(classes, np.ndarray) or classes.dtype == object
    if typed and isinstance(classes, Iterable) and not isinstance(classes, str):
        raw = list(classes.tolist() if isinstance(classes, np.ndarray) else classes)
        kinds = {"str" if isinstance(v, str) else "number" if isinstance(v, numbers.Number)
                 else type(v).__name__ for v in raw}
        if "str" in kinds and len(kinds) > 1:
            raise ValueError(f"classes mixes strings and other labels, got {raw!r}: NumPy "
                             "would read them all as strings, and labels would no longer "
                             "match; give every class label as one type")
    c = np.asarray(classes)
    if c.ndim != 1 or c.size < 2:
        raise ValueError(f"classes must be a 1-D sequence of at least 2 labels, got {classes!r}")
    if len(set(c.tolist())) != c.size:
        raise ValueError(f"classes must not repeat a label, got {c.tolist()}")
    return c


def encode_labels(labels: ArrayLike, *, classes: ArrayLike | None = None,
                  n_classes: int | None = None, name: str = "labels"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Class indices of labels, in the class order given (never re-sorted).

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Integer class indices, or any labels (strings, a pandas Categorical) with
        ``classes=``. A pandas Categorical without ``classes`` uses its declared
        categories, in their order, unused ones included.
    classes : array-like, optional
        The class labels in the user's order; label ``classes[k]`` becomes index k.
    n_classes : int, optional
        K for integer labels without ``classes``.
    name : str, default='labels'
        Argument name used in error messages.

    Returns
    -------
    codes : ndarray of int64, shape (n_items,)
    classes : ndarray of shape (K,)

    Examples
    --------
    >>> from noisycal._util.validation import encode_labels
    >>> encode_labels(["cat", "dog", "cat"], classes=["dog", "cat"])[0]
    array([1, 0, 1])
    """
    categories = None
    if getattr(labels, "cat", None) is not None:  # pandas Series of category dtype
        categories, raw = labels.cat.categories, labels.to_numpy()
    elif getattr(labels, "categories", None) is not None:  # pandas Categorical
        categories, raw = labels.categories, np.asarray(labels)
    else:
        raw = labels.to_numpy() if hasattr(labels, "to_numpy") else labels
    if classes is None and categories is not None:
        classes = np.asarray(categories)  # declared order, unused categories kept
    y = np.asarray(raw, dtype=object) if classes is not None else np.asarray(raw)
    if y.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {y.shape}")
    if classes is None:
        if n_classes is None:
            raise ValueError(f"{name}: give n_classes= (integer labels) or classes= (the "
                             "class labels in order)")
        if y.dtype.kind in "USO":
            raise ValueError(f"{name} are not integer class indices (dtype {y.dtype}); give "
                             "classes= with the class labels in order")
        k = check_int(n_classes, "n_classes", minimum=2)
        return check_labels(y, k, name), np.arange(k)
    c = check_classes(classes)
    if n_classes is not None and check_int(n_classes, "n_classes", minimum=2) != c.size:
        raise ValueError(f"n_classes={n_classes} but classes has {c.size} labels")
    lookup = {v: k for k, v in enumerate(c.tolist())}
    codes = np.empty(y.shape[0], dtype=np.int64)
    for i, v in enumerate(y.tolist()):
        k = lookup.get(v)
        if k is None:
            raise ValueError(f"{name} contains {v!r}, which is not in classes={c.tolist()}")
        codes[i] = k
    return codes, c
