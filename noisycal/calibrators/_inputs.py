"""Inputs, targets and losses shared by the multi-class scaling maps.

Every map of :mod:`noisycal.calibrators.scaling.temperature` and
:mod:`noisycal.calibrators.scaling.multiclass` acts on an (n, K) score matrix ``S``:

- ``logits=`` of shape (n, K) are used as given (never clipped);
- ``probs=`` of shape (n, K) become log-probabilities ``log(max(p, eps))``: ``eps`` is a
  documented floor (zero probabilities have no logarithm), an argument of every map;
- 1-D (binary) inputs become the two-column log-probabilities of the positive-class
  score: ``[log(1 - p), log p]`` floored at ``eps`` for ``probs=``, and the exact
  ``[log sigmoid(-s), log sigmoid(s)]`` for ``logits=`` (never clipped).

The fitting loss of the maps ``q_i = softmax(eta_i)`` against a target row ``t_i`` (any
target: hard, soft, voted, corrected, posterior, a matrix) is the log loss
``-sum_k t_ik log q_ik`` for targets on the simplex, and for targets that leave it (a
Target of kind 'corrected'; any other target outside [0, 1] is refused naming ``target``,
as the metrics refuse it) the affine Brier loss
``sum_k (q_ik^2 - 2 q_ik t_ik + t_ik)``, which is bounded below for any real target,
equals the Brier score for one-hot rows, and is affine in the target, so it is unbiased
for the clean-label Brier loss under a noise-corrected target (the same rule as
:func:`noisycal.brier`). For binary 1-D inputs the Brier loss is halved (the binary
``q^2 - 2 q y + y`` of the positive class, as in the binary maps and :func:`noisycal.brier`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import log_expit, log_softmax, softmax

from .._util.items import aligned_values, classes_of, frame_classes
from .._util.types import ArrayLike
from .._util.validation import (
    PROB_ATOL,
    check_array,
    check_choice,
    check_logits_total,
    encode_labels,
    prob_atol,
)
from ..exceptions import ConvergenceWarning, IdentifiabilityWarning
from ..metrics.inputs import check_target_rows
from ..metrics.scores import FIT_LOSSES, leaves_unit_interval
from ..targets.target import as_target_matrix
from ._base import Calibrator, check_alignment, check_eps, positive_target, record_fit_target

__all__ = ["ScoreInput", "SoftmaxMap", "score_matrix", "fit_target", "resolve_loss",
           "softmax_loss", "finish_status", "check_float_scores", "separates", "EPS"]

#: Default floor eps of the probabilities before the logarithm (``log(max(p, eps))``).
EPS = 1e-6


class ScoreInput:
    """The score matrix of a call and how it was given.

    Attributes
    ----------
    S : ndarray of shape (n, K)
        Scores the maps act on (logits, or log-probabilities).
    binary : bool
        Whether the input was 1-D positive-class scores (then K = 2).
    given : {'probs', 'logits'}
        Which argument was given.
    raw : object
        The argument as given (for alignment checks).
    total : float or None
        ``S.sum()`` when the validation computed it on the way (logits used as given),
        else None.
    values : ndarray or None
        The checked float64 input (a DataFrame's columns in the classes' order), before
        any logarithm.
    """

    __slots__ = ("S", "binary", "given", "raw", "total", "values")

    def __init__(self, S: np.ndarray, binary: bool, given: str, raw: object,
                 total: float | None = None, values: np.ndarray | None = None) -> None:
        self.S, self.binary, self.given, self.raw, self.total = S, binary, given, raw, total
        self.values = values


def check_float_scores(x: ArrayLike, name: str) -> None:
    """Refuse boolean and integer scores: a calibrator's ``probs=``/``logits=`` are
    floating probabilities or logits, and 0/1 or integer arrays there are almost always
    labels (or a target) passed in the wrong place.

    Parameters
    ----------
    x : array-like or pandas object
        The scores as given.
    name : str
        The argument's name, for the message.

    Raises
    ------
    ValueError
        If ``x`` has a boolean or integer dtype.
    """
    arr = x.to_numpy() if hasattr(x, "to_numpy") else np.asarray(x)
    kind = getattr(getattr(arr, "dtype", None), "kind", "")
    if kind in "biu" and kind:
        raise ValueError(f"{name} must be floating probabilities or logits, got an array of "
                         f"dtype {arr.dtype} (labels belong in target=; cast with "
                         "astype(float) if these really are scores)")


def _scores(x: ArrayLike, name: str, classes: ArrayLike | None = None
            ) -> tuple[np.ndarray, float | None]:
    """A finite float64 array of shape (n,) or (n, K) with n >= 1 and K >= 2, and the sum
    of (n, K) logits (None otherwise). Logits that look like probabilities (every value of
    a 1-D vector, or every row of a matrix, in [0, 1] and summing to 1) warn as the
    metrics' logits do (:func:`~noisycal._util.validation.check_logits`). A pandas input
    is read by the one alignment (:func:`~noisycal._util.items.aligned_values`: its index
    holds one id per row, none repeated; a DataFrame's columns are matched to ``classes``
    by label)."""
    check_float_scores(x, name)
    arr = np.asarray(aligned_values(x, name, classes=classes))
    if getattr(arr, "ndim", 0) not in (1, 2):
        raise ValueError(f"{name} must be 1-D positive-class scores of shape (n,) or an "
                         f"(n, n_classes) matrix, got shape {np.shape(arr)}")
    total = None
    if name == "probs":
        z = check_array(arr, name)
    else:  # the metrics' check: logits that look like probabilities warn
        z, total = check_logits_total(arr, name)
        total = None if z.ndim == 1 else total
    if z.shape[0] < 1:
        raise ValueError(f"{name} must contain at least one score, got shape {z.shape}")
    if z.ndim == 2 and z.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (classes), got shape {z.shape}")
    return z, total


def score_matrix(probs: ArrayLike | None, logits: ArrayLike | None, eps: float, *,
                 log_probs: bool = False, classes: ArrayLike | None = None) -> ScoreInput:
    """The (n, K) scores of explicit ``probs=`` / ``logits=`` (module docstring).

    Parameters
    ----------
    probs, logits : array-like of shape (n,) or (n, K), optional
        Exactly one of them. A pandas index must hold one id per row, none repeated.
    eps : float
        Floor of the probabilities before the logarithm.
    log_probs : bool, default=False
        Turn (n, K) logits into log-probabilities ``log_softmax(logits)`` (Dirichlet
        calibration acts on log-probabilities).
    classes : array-like, optional
        The classes the columns stand for: a DataFrame's columns are matched to them by
        label (without them a DataFrame is read by position).

    Returns
    -------
    ScoreInput
    """
    if (probs is None) == (logits is None):
        raise ValueError("give exactly one of probs= or logits= (shape (n,) for a binary "
                         "problem, (n, K) otherwise; they are never guessed)")
    if logits is not None:
        z, total = _scores(logits, "logits", classes)
        if z.ndim == 1:
            S = np.column_stack([log_expit(-z), log_expit(z)])
        else:
            S = log_softmax(z, axis=1) if log_probs else z
        return ScoreInput(S, z.ndim == 1, "logits", logits, None if log_probs else total, z)
    p, _ = _scores(probs, "probs", classes)
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"probs must lie in [0, 1], got values in [{p.min():g}, {p.max():g}] "
                         "(pass logits= if these are logits)")
    if p.ndim == 1:
        P = np.column_stack([1.0 - p, p])
        # a score of exactly 1 stands for 1 - s below the input's resolution: 1 - s is
        # floored there (float64 1.1e-16, float32 6.0e-8), never below, whatever eps
        dt = getattr(probs, "dtype", None)
        dt = dt if isinstance(dt, np.dtype) and dt.kind == "f" else np.dtype(np.float64)
        one = max(eps, float(np.finfo(dt).epsneg))
        return ScoreInput(np.column_stack([np.log(np.maximum(P[:, 0], one)),
                                           np.log(np.maximum(P[:, 1], eps))]),
                          True, "probs", probs, values=p)
    else:
        dev, dt = np.abs(p.sum(axis=1) - 1.0), getattr(probs, "dtype", None)  # float16 too
        atol = prob_atol(dt if isinstance(dt, np.dtype) and dt.kind == "f" else p.dtype,
                         p.shape[1])
        if np.any(dev > atol):
            i = int(np.argmax(dev))
            raise ValueError(f"rows of probs must sum to 1 within {atol:g}; row {i} sums "
                             f"to {p[i].sum():.8g} (normalise them, or pass logits=)")
        P = p
    return ScoreInput(np.log(np.maximum(P, eps)), p.ndim == 1, "probs", probs, values=p)


def base_probs(x: ScoreInput) -> np.ndarray:
    """The exact (n, K) probabilities of a call: ``probs=`` as given (1-D binary scores as
    the columns ``(1 - p, p)``), or the softmax of ``logits=``. Never floored: ``eps``
    only enters the logarithms in ``x.S``.

    Parameters
    ----------
    x : ScoreInput
        From :func:`score_matrix` (which has checked the input).

    Returns
    -------
    ndarray of shape (n, K)
    """
    if x.given == "probs":
        p = np.asarray(x.raw if x.values is None else x.values, dtype=np.float64)
        return np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    return softmax(x.S, axis=1)


def fit_target(target: object, x: ScoreInput) -> np.ndarray:
    """The (n, K) target matrix of a fit, whose rows must sum to 1.

    A binary (1-D) input takes the binary calibrators' targets (0/1 labels, a 1-D float
    positive-class target, an (n, 2) matrix or a Target); an (n, K) input takes anything
    :func:`noisycal.targets.as_target_matrix` reads (labels, a matrix, a Target).
    """
    n, K = x.S.shape
    if x.binary:
        y = positive_target(target, n)
        T = np.column_stack([1.0 - y, y])
    else:
        if target is None:
            raise ValueError("target is required (labels, an (n, K) matrix or a Target)")
        T = as_target_matrix(target, n, K)
        dev = np.abs(T.sum(axis=1) - 1.0)
        if np.any(dev > PROB_ATOL):
            i = int(np.argmax(dev))
            raise ValueError(f"target rows must sum to 1 (probability rows, or noise-corrected "
                             f"rows) within {PROB_ATOL:g}; row {i} sums to {T[i].sum():.8g}")
        check_target_rows(T, target, "target")  # the metrics' check: [0, 1] unless corrected
    check_alignment(x.raw, x.given, target, "target")
    return T


def resolve_loss(loss: object, T: np.ndarray, target: object, *,
                 outside: bool | None = None) -> str:
    """``'log'`` or ``'brier'``: 'auto' is 'brier' for a target that leaves the simplex
    (``outside``: :func:`~noisycal.metrics.scores.leaves_unit_interval` when known)."""
    check_choice(loss, "loss", FIT_LOSSES)
    if loss != "auto":
        return str(loss)
    if outside is None:
        outside = leaves_unit_interval(T, target)
    return "brier" if outside else "log"


def softmax_loss(eta: np.ndarray, T: np.ndarray, loss: str, binary: bool) -> float:
    """Mean fitting loss of ``softmax(eta)`` against ``T`` (NumPy; module docstring)."""
    if loss == "log":
        top = eta.max(axis=1)  # logsumexp without scipy's general-purpose overhead
        lse = top + np.log(np.exp(eta - top[:, None]).sum(axis=1))
        return float(np.mean(lse * T.sum(1) - np.einsum("ij,ij->i", T, eta)))
    q = softmax(eta, axis=1)
    value = float(np.mean(np.sum(q * q - 2.0 * q * T + T, axis=1)))
    return 0.5 * value if binary else value


def separates(eta: np.ndarray, T: np.ndarray) -> bool:
    """Whether a one-hot target is separated by the fitted scores ``eta``: every item's
    own class strictly ahead of every other class.

    For a map whose scores are linear in its parameters (Platt, beta, vector, matrix,
    Dirichlet) such parameters, scaled up, drive the fitting loss to 0: its minimum is
    not attained, and the fitted values are where the optimiser stopped.

    Parameters
    ----------
    eta : ndarray of shape (n, K)
        The fitted map's scores (before the softmax).
    T : ndarray of shape (n, K)
        The target; anything but one-hot rows with at least two classes present gives
        False.

    Returns
    -------
    bool
    """
    if not np.all((T == 0.0) | (T == 1.0)) or not np.all(T.sum(axis=1) == 1.0):
        return False
    labels = np.argmax(T, axis=1)
    if np.unique(labels).size < 2:
        return False
    rows = np.arange(T.shape[0])
    own = eta[rows, labels]
    others = np.where(T == 1.0, -np.inf, eta).max(axis=1)
    return bool(np.all(own > others))


def finish_status(cal: Calibrator, *, not_identified: str | None, converged: bool,
                  optimiser: str, at_bound: bool, bounds: object, hint: str = "",
                  separated: bool = False) -> None:
    """Set ``status_``/``message_`` of a fitted map (and warn unless 'ok').

    Parameters
    ----------
    cal : Calibrator
        The fitted map.
    not_identified : str or None
        Why the parameters are not identified (status 'not_identified').
    converged : bool
        Whether the optimiser converged (else 'not_converged', with ``optimiser``).
    optimiser : str
        The optimiser's message.
    at_bound : bool
        Whether a parameter ended on its box (status 'boundary').
    bounds : object
        The box, for the message.
    hint : str, default=''
        Appended to the 'boundary' message.
    separated : bool, default=False
        Whether the fitted map separates a one-hot target (:func:`separates`; status
        'separation', ahead of 'not_converged' and 'boundary', which it causes).
    """
    if not_identified is not None:
        cal._set_status("not_identified", not_identified, IdentifiabilityWarning)
    elif separated:
        cal._set_status("separation", "the scores separate the target (the fitted map "
                        "ranks every item's own class first): the fitting loss falls "
                        "towards 0 as the slopes grow without limit, so its minimum is not "
                        "attained and the fitted parameters are where the optimiser stopped, "
                        "not estimates", IdentifiabilityWarning)
    elif not converged:
        cal._set_status("not_converged", f"the optimiser stopped before converging: "
                        f"{optimiser}", ConvergenceWarning)
    elif at_bound:
        cal._set_status("boundary", f"the fit ended on the box bounds={bounds!r}: the "
                        "unconstrained minimum lies outside it (the scores carry little "
                        "information about the target, or the target is separable by the "
                        f"scores{hint})", IdentifiabilityWarning)
    else:
        cal._set_status("ok", "", None)


class SoftmaxMap(Calibrator):
    """A map ``softmax(eta(S))`` of the score matrix: shared input handling and prediction.

    Subclasses define ``_eta(S)`` from their fitted parameters; ``_log_probs`` makes (n, K)
    logits enter as log-probabilities; ``_shift_invariant`` says whether adding a constant
    to a row of scores leaves the map unchanged (then a map fitted on ``logits=`` may
    predict from ``probs=`` and vice versa).
    """

    _fitted_attr = "objective_"
    _log_probs = False
    _shift_invariant = False

    def _eta(self, S: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self) -> Any:  # noqa: ANN401 - sklearn.utils.Tags, sklearn optional
        """scikit-learn's estimator tags: keyword inputs of shape (n,) or (n, K)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags

    def _prepare_codes(self, probs: ArrayLike | None, logits: ArrayLike | None,
                       target: object) -> tuple[ScoreInput, np.ndarray | None,
                                                np.ndarray | None]:
        """``_prepare`` that skips the one-hot target matrix of a plain integer label vector
        with (n, K) scores and the log loss: the checked scores, the target matrix (None
        for such labels) and the label codes (None otherwise). The scores are read once."""
        if not (isinstance(target, np.ndarray) and target.ndim == 1
                and target.dtype.kind in "iu" and self.loss in ("auto", "log")):
            return (*self._prepare(probs, logits, target), None)
        eps, classes = check_eps(self.eps), classes_of(target)
        x = score_matrix(probs, logits, eps, log_probs=self._log_probs, classes=classes)
        if x.binary:
            return (*self._prepare(probs, logits, target, scores=(x, eps, classes)), None)
        n, K = x.S.shape
        if target.shape[0] != n:
            raise ValueError(f"target has {target.shape[0]} labels but the predictions have "
                             f"{n} items")
        codes, _ = encode_labels(target, n_classes=K, name="target")
        check_alignment(x.raw, x.given, target, "target")
        record_fit_target(self, target)
        self._record_inputs(x, eps, "log", outside=False, classes=classes)
        return x, None, codes

    def _prepare(self, probs: ArrayLike | None, logits: ArrayLike | None,
                 target: object, scores: tuple[ScoreInput, float, list | None] | None = None
                 ) -> tuple[ScoreInput, np.ndarray]:
        """Checked scores and target of ``fit``; sets ``eps_``, ``loss_``, ``n_classes_``,
        ``binary_`` and ``input_`` (``scores``: the scores, eps and classes when already
        read)."""
        if scores is None:
            eps, classes = check_eps(self.eps), classes_of(target)
            x = score_matrix(probs, logits, eps, log_probs=self._log_probs, classes=classes)
        else:
            x, eps, classes = scores
        T = fit_target(target, x)
        record_fit_target(self, target)
        outside = leaves_unit_interval(T, target)
        self._record_inputs(x, eps, resolve_loss(self.loss, T, target, outside=outside),
                            outside=outside, classes=classes)
        return x, T

    def _record_inputs(self, x: ScoreInput, eps: float, loss: str, *, outside: bool,
                       classes: list | None) -> None:
        """Set ``eps_``, ``loss_``, ``n_classes_``, ``binary_``, ``input_``, whether the
        target leaves the simplex, and the classes the columns stand for (the target's,
        else a DataFrame's column labels; ``predict_proba`` matches a DataFrame's columns
        to them by label)."""
        self._outside, self.loss_, self.eps_ = outside, loss, eps
        self.n_classes_, self.binary_, self.input_ = int(x.S.shape[1]), bool(x.binary), x.given
        self._columns = classes if classes is not None else frame_classes(x.raw)

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Calibrated probabilities.

        Parameters
        ----------
        probs : array-like of shape (n,) or (n, n_classes), optional
            Probabilities (positive-class ones for a binary map fitted on 1-D scores),
            floored at the ``eps_`` of the fit before the logarithm.
        logits : array-like of shape (n,) or (n, n_classes), optional
            Logits (never clipped). Give exactly one of ``probs`` and ``logits``, of the
            shape the map was fitted on. A pandas index must hold one id per row, none
            repeated; a DataFrame's columns are matched by label to the classes of the
            fit (its target's, or the column labels of the DataFrame it was fitted on).

        Returns
        -------
        ndarray of shape (n,) or (n, n_classes)
            Positive-class probabilities for a binary map fitted on 1-D scores, else the
            calibrated probability matrix.

        Raises
        ------
        NotFittedError, ValueError
            Before ``fit``; if both or neither input is given, an input is not finite,
            its shape does not match the fit's, or a map that is not shift invariant was
            fitted on (n, K) ``logits=`` and is given ``probs=`` (or the reverse).
        """
        self._check_fitted()
        x = score_matrix(probs, logits, self.eps_, log_probs=self._log_probs,
                         classes=self.__dict__.get("_columns"))
        if x.binary != self.binary_ or x.S.shape[1] != self.n_classes_:
            fitted = "(n,) binary scores" if self.binary_ else f"(n, {self.n_classes_}) scores"
            raise ValueError(f"{x.given} must have the shape the map was fitted on, "
                             f"{fitted}; got shape {np.shape(x.raw)}")
        if not (self._shift_invariant or self.binary_) and x.given != self.input_:
            raise ValueError(f"{x.given}: this {type(self).__name__} was fitted on "
                             f"{self.input_}= and acts on them as given (log-probabilities "
                             "and logits differ by a per-item constant that changes this "
                             f"map); pass {self.input_}=")
        q = softmax(self._eta(x.S), axis=1)
        return q[:, 1] if self.binary_ else q
