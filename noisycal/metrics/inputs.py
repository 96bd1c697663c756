"""Predictions and targets as the metrics read them.

:func:`resolve_inputs` gives validated float64 matrices; :func:`lean_inputs` keeps
float32, reads label vectors as class codes and checks them over row chunks."""

from __future__ import annotations

import dataclasses
import numbers
import sys

import numpy as np

from .._util.items import match_columns
from .._util.statuses import TARGET_PREFIX, join_messages
from .._util.types import ArrayLike
from .._util.validation import (
    as_array,
    check_choice,
    check_classes,
    check_not_swapped,
    check_probs,
    check_work_bytes,
    encode_labels,
    prediction_items,
    predictions,
    prob_atol,
)
from ..intervals.estimate import Estimate
from ..targets.circular import circular_status
from ..targets.target import Target, as_target_matrix
from .binned.bins import CHUNK_ROWS, KINDS

__all__ = ["resolve_inputs", "lean_inputs", "with_target_status", "target_kind",
           "resolve_kind", "is_dask_array", "align_columns", "label_classes",
           "check_target_rows", "check_covariance_memory"]


def is_dask_array(x: object) -> bool:
    """Whether ``x`` is a ``dask.array.Array`` (False without importing Dask)."""
    mod = sys.modules.get("dask.array")
    return mod is not None and isinstance(x, mod.Array)


def _no_dask(probs: object, target: object, logits: object) -> None:
    """Refuse Dask arrays where a metric would compute them whole (TypeError); Dask
    logits are refused everywhere (ValueError: Dask input is probabilities only)."""
    if is_dask_array(logits):
        raise ValueError("logits: Dask arrays are read as probs= only (noisycal.metrics."
                         "dask_input); apply the softmax block by block, or call .compute()")
    if any(is_dask_array(a) for a in (probs, target)):
        raise TypeError("Dask arrays are read block by block by nc.ece, nc.mce, nc.brier and "
                        "nc.nll only (noisycal.metrics.binned.dask); for this function call "
                        ".compute() on them first")


def resolve_inputs(probs: ArrayLike | None, target: object, logits: ArrayLike | None, *,
                   classes: ArrayLike | None, items: ArrayLike | None, name: str = "target",
                   check_target: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Predictions and target of a metric: ``(P, log P, T, binary_1d)``, checked and aligned.

    Parameters
    ----------
    probs, logits : array-like or pandas object
        Exactly one is given.
    target : object
        Target, matrix, label vector or 1-D binary target.
    classes : array-like, optional
        Class labels of the prediction columns, in the user's order.
    items : array-like, optional
        Item ids of the prediction rows (default: a pandas index).
    name : str, default='target'
    check_target : bool, default=True
        Check the target matrix with :func:`check_target_rows` (the Dask row blocks
        check it whole instead).

    Returns
    -------
    P, logP, T, binary_1d
    """
    _no_dask(probs, target, logits)
    probs, logits = align_columns(probs, logits, classes, target)
    classes = label_classes(probs, logits, classes, target)
    ids = prediction_items(probs, logits, items)
    P, logP, binary = predictions(probs, logits)
    T = as_target_matrix(target, P.shape[0], P.shape[1], name, classes=classes, items=ids)
    if check_target:
        check_target_rows(T, target, name)
    if probs is not None:
        check_not_swapped(np.asarray(probs, dtype=np.float64), T)
    return P, logP, T, binary


def _declared_classes(classes: ArrayLike | None, target: object) -> list | None:
    """The class labels the prediction columns stand for: ``classes=``, else a Target's
    classes, else a categorical target's declared categories; None when unknown."""
    if classes is not None:
        return check_classes(classes).tolist()
    if isinstance(target, Target):
        return None if target.classes is None else target.classes.tolist()
    cats = getattr(getattr(target, "cat", None), "categories", None)
    cats = getattr(target, "categories", None) if cats is None else cats
    return None if cats is None else list(cats)


def _check_column_order(labels: list, name: str) -> None:
    """Refuse DataFrame columns labelled 0..K-1 out of order when no classes are declared:
    read by position, column j would be taken as class j although it is labelled
    otherwise."""
    ints = all(isinstance(c, numbers.Integral) and not isinstance(c, bool | np.bool_)
               for c in labels)
    if ints and sorted(int(c) for c in labels) == list(range(len(labels))) \
            and [int(c) for c in labels] != list(range(len(labels))):
        raise ValueError(f"{name} is a DataFrame whose columns are labelled {labels}: the "
                         f"class indices 0..{len(labels) - 1} out of order. Columns are read "
                         "by position, so pass classes= (the class of each column, e.g. "
                         f"classes={labels}) or reorder the columns (df[sorted(df.columns)])")


def align_columns(probs: object, logits: object, classes: ArrayLike | None, target: object
                  ) -> tuple[object, object]:
    """``(probs, logits)`` with a DataFrame's columns put in the order of the classes.

    A pandas DataFrame of predictions carries its classes as column labels. When the
    classes are known (``classes=``, a Target's ``classes``, or a categorical target's
    categories) the columns are matched to them by label and reordered; labels that are
    not the classes raise a ValueError naming the argument. A DataFrame with the default
    columns 0..K-1 that are not the classes, and plain arrays, keep positional meaning.
    Without declared classes, integer column labels 0..K-1 in another order are refused
    (ValueError naming the argument): read by position, each column would be taken as a
    class other than its label.

    Parameters
    ----------
    probs, logits : array-like or pandas object
        The predictions (one of them is None).
    classes : array-like, optional
    target : object
        The metric's target argument.

    Returns
    -------
    probs, logits
    """
    x = probs if probs is not None else logits
    cols = getattr(x, "columns", None)
    if cols is None or not hasattr(x, "to_numpy"):
        return probs, logits
    name = "probs" if probs is not None else "logits"
    want = _declared_classes(classes, target)
    if want is None:
        _check_column_order(list(cols), name)
        return probs, logits
    x = match_columns(x, want, name)
    return (x, None) if probs is not None else (None, x)


def label_classes(probs: object, logits: object, classes: ArrayLike | None, target: object
                  ) -> ArrayLike | None:
    """``classes=`` as given; without it, the categories of a categorical target whose
    DataFrame of predictions names them as its columns (matched by label, any order),
    which then encode the labels; else None.

    A categorical target with plain-array predictions gets None here, and the target's
    reading refuses it unless its categories are 0..K-1
    (:func:`~noisycal._util.validation.check_categorical_labels`): its categories'
    order is not taken as the order of the columns.

    Parameters
    ----------
    probs, logits : array-like or pandas object
        The predictions (one of them is None).
    classes : array-like, optional
    target : object
        The metric's target argument.

    Returns
    -------
    array-like or None
    """
    if classes is not None or isinstance(target, Target):
        return classes
    cats = getattr(getattr(target, "cat", None), "categories", None)
    if cats is None and not isinstance(target, np.ndarray):
        cats = getattr(target, "categories", None)
    cols = getattr(probs if probs is not None else logits, "columns", None)
    if cats is None or cols is None:
        return None
    labels, want = list(cols), list(cats)
    same = len(labels) == len(want) == len(set(labels)) and set(labels) == set(want)
    return want if same else None


def check_target_rows(T: np.ndarray, target: object, name: str = "target") -> None:
    """Refuse a target matrix off the probability simplex.

    Every row must sum to 1 (within :func:`~noisycal._util.validation.prob_atol` of the
    target's dtype); entries must lie in [0, 1] unless the target is a Target of kind
    'corrected' (noise-corrected rows are unbiased estimates of one-hot rows: they sum to
    1 but may leave [0, 1]; ``nc.targets.from_matrix(values, kind='corrected')`` declares
    such a matrix).

    Parameters
    ----------
    T : ndarray of shape (n_items, n_classes)
    target : object
        The target argument as given (a Target carries its kind).
    name : str, default='target'
    """
    dtype = getattr(target, "dtype", None)
    tol = prob_atol(dtype if isinstance(dtype, np.dtype) and dtype.kind == "f"
                    else np.float64, T.shape[1])
    sums = T.sum(axis=1)
    dev = np.abs(sums - 1.0)
    if dev.size and float(dev.max()) > tol:
        i = int(np.argmax(dev))
        raise ValueError(f"rows of {name} must sum to 1 within {tol:g}; row {i} sums to "
                         f"{sums[i]:.8g} (a target row is a distribution over the classes)")
    if getattr(target, "kind", None) == "corrected" and isinstance(target, Target):
        return
    lo, hi = (float(T.min()), float(T.max())) if T.size else (0.0, 1.0)
    if lo < -tol or hi > 1.0 + tol:
        raise ValueError(f"{name} must lie in [0, 1], got values in [{lo:g}, {hi:g}]; only a "
                         "noise-corrected target may leave it (nc.targets.corrected, or "
                         "nc.targets.from_matrix(values, kind='corrected'))")


def _checked_probs(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself (float32 or float64), checked as :func:`check_probs` checks it.

    The checks run over row chunks, with row sums accumulated in float64; on a failure
    :func:`check_probs` is called on the whole array for its error message.
    """
    n = arr.shape[0]
    atol = prob_atol(arr.dtype, arr.shape[1] if arr.ndim == 2 else 2)
    for s in range(0, n, 16 * CHUNK_ROWS):
        c = arr[s:s + 16 * CHUNK_ROWS]
        bad = not np.all(np.isfinite(c)) or bool(np.any(c < 0.0)) or bool(np.any(c > 1.0))
        if not bad and c.ndim == 2:
            bad = bool(np.any(np.abs(c.sum(axis=1, dtype=np.float64) - 1.0) > atol))
        if bad:
            check_probs(arr)
    return arr


def _label_codes(target: object, ids: np.ndarray | None, n: int, n_classes: int,
                 classes: ArrayLike | None, name: str) -> np.ndarray | None:
    """Class codes of a plain integer label vector (whose target is its one-hot), else None.

    None leaves the target to :func:`~noisycal.targets.as_target_matrix` (Targets,
    matrices, soft binary vectors, labels with ``classes=``, categoricals, pandas labels
    checked against item ids).
    """
    if target is None or isinstance(target, Target) or classes is not None \
            or getattr(target, "cat", None) is not None \
            or getattr(target, "categories", None) is not None \
            or (ids is not None and hasattr(target, "index")):
        return None
    arr = np.asarray(target.to_numpy() if hasattr(target, "to_numpy") else target)
    if arr.ndim != 1 or arr.dtype.kind not in "iub" or arr.shape[0] != n:
        return None
    y, _ = encode_labels(arr, n_classes=n_classes, name=name)
    return y


def lean_inputs(probs: ArrayLike | None, target: object, logits: ArrayLike | None, *,
                classes: ArrayLike | None, items: ArrayLike | None, name: str = "target",
                check_target: bool = True
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, bool]:
    """Predictions and target as :func:`resolve_inputs` checks them, without copies.

    float32 or float64 probabilities are checked over row chunks and kept in their
    dtype, no logarithm is taken, and a plain integer label vector stays a vector of
    class codes (its one-hot matrix is never built). Other inputs (logits, other dtypes,
    other targets) go through :func:`resolve_inputs`.

    Parameters
    ----------
    probs, target, logits, classes, items, name, check_target
        As in :func:`resolve_inputs`.

    Returns
    -------
    P : ndarray of shape (n, K)
    T : ndarray of shape (n, K) or None
        The target matrix, None when ``labels`` is given.
    labels : int ndarray of shape (n,) or None
        Class codes whose one-hot matrix is the target.
    binary_1d : bool
    """
    _no_dask(probs, target, logits)
    probs, logits = align_columns(probs, logits, classes, target)
    classes = label_classes(probs, logits, classes, target)
    arr = None if probs is None else as_array(probs, "probs")
    if (logits is not None or arr is None or arr.dtype not in (np.float32, np.float64)
            or arr.ndim not in (1, 2) or arr.shape[0] < 1
            or (arr.ndim == 2 and arr.shape[1] < 2)):
        P, _, T, binary = resolve_inputs(probs, target, logits, classes=classes, items=items,
                                         name=name, check_target=check_target)
        return P, T, None, binary
    ids = prediction_items(probs, logits, items)
    p = _checked_probs(arr)
    binary = p.ndim == 1
    # a binary vector becomes [1 - p, p] in float64, as resolve_inputs makes it
    P = np.column_stack([1.0 - p.astype(np.float64), p]) if binary else p
    y = _label_codes(target, ids, P.shape[0], P.shape[1], classes, name)
    if y is not None:  # a one-hot target: never fractional, so never swapped
        return P, None, y, binary
    T = as_target_matrix(target, P.shape[0], P.shape[1], name, classes=classes, items=ids)
    if check_target:
        check_target_rows(T, target, name)
    if binary:
        check_not_swapped(p.astype(np.float64), T)
    # a target matrix is float64 and (n, K) already: products with it are computed in
    # float64, so float32 predictions are widened here (exact)
    return P.astype(np.float64, copy=False), T, None, binary


def with_target_status(est: Estimate, target: object, probs: object = None,
                       logits: object = None) -> Estimate:
    """``est`` with the statuses of a Target built from a failed fit (unchanged otherwise),
    and ``'circular_target'`` when the target's fit used these same predictions.

    Each of the target's ``statuses`` becomes ``'target_<status>'``, ahead of the
    Estimate's own statuses, which are kept after them. A target built from a fit that
    used a classifier's scores remembers them (:mod:`noisycal.targets.circular`); when
    ``probs``/``logits`` are those scores the Estimate also gets ``'circular_target'``.

    Parameters
    ----------
    est : Estimate
    target : object
        The metric's target argument.
    probs, logits : array-like, optional
        The metric's predictions (as the user gave them).

    Returns
    -------
    Estimate
    """
    circular = (circular_status(target, probs, logits) if isinstance(target, Target)
                else None)
    if circular is not None:
        est = dataclasses.replace(
            est, status=circular[0], message=join_messages(circular[1], est.message),
            statuses=(circular[0], *getattr(est, "statuses", (est.status,))))
    status = getattr(target, "status", "ok") if isinstance(target, Target) else "ok"
    if status == "ok":
        return est
    message = f"the target is not reliable: it was {target.message}"
    if est.message:
        message += f"; {est.message}"
    # every status of the target, prefixed, beside the Estimate's own (which it outranks)
    ours = tuple(f"{TARGET_PREFIX}{s}" for s in target.statuses)  # status comes first
    return dataclasses.replace(est, status=f"target_{status}", message=message,
                               statuses=ours + tuple(getattr(est, "statuses", (est.status,))))


def target_kind(target: object) -> str:
    """Provenance of a target: a Target's kind, 'hard' for label vectors, else 'matrix'."""
    if isinstance(target, Target):
        return target.kind
    return "hard" if np.ndim(target) == 1 else "matrix"


def resolve_kind(kind: str | None, binary_1d: bool, n_classes: int) -> str:
    """The metric's kind: ``kind`` checked, or the default for the input.

    Parameters
    ----------
    kind : {'top_label', 'classwise', 'positive_class'} or None
        None: 'positive_class' for 1-D binary scores, else 'top_label'.
    binary_1d : bool
        Whether the predictions were 1-D positive-class scores.
    n_classes : int

    Returns
    -------
    str
    """
    if kind is None:
        return "positive_class" if binary_1d else "top_label"
    check_choice(kind, "kind", KINDS)
    if kind == "positive_class" and n_classes != 2:
        raise ValueError(f"kind='positive_class' needs 2 classes, got {n_classes}")
    return kind


def check_covariance_memory(kind: str, n_classes: int, n_bins: int) -> None:
    """Refuse a binned ECE whose covariance of bin means would pass ``MAX_WORK_BYTES``.

    The inverted interval (and the calibration test) hold the (G B) x (G B) float64
    covariance of the G B bin means (G = n_classes for the classwise ECE, else 1):
    with 10^5 classes and 15 bins that is 16 TiB, refused here before anything is
    allocated.

    Parameters
    ----------
    kind : {'top_label', 'classwise', 'positive_class'}
    n_classes, n_bins : int
    """
    J = (n_classes if kind == "classwise" else 1) * n_bins
    check_work_bytes(8.0 * J * J, "probs", f"kind={kind!r} with {n_classes} classes and "
                     f"{n_bins} bins: the covariance of the {J} bin means ({J} x {J}, "
                     "float64; interval=None or 'bootstrap' does without it)")
