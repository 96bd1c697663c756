"""Per-item losses of the proper scores (:func:`noisycal.brier`, :func:`noisycal.nll`).

The formulas are shared by the in-memory metrics and by row blocks of Dask input."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .._util.validation import PROB_ATOL, user_stacklevel
from ..exceptions import NumericalWarning
from ..intervals.estimate import Estimate
from .binned.bins import CHUNK_ROWS

__all__ = ["AFFINE_IN_TARGET", "leaves_unit_interval", "brier_form", "brier_losses",
           "nll_losses", "nll_high_variance", "score_estimand", "SCORE_ESTIMATOR",
           "OUTSIDE_STATUS", "score_floor", "with_floor_status"]

#: Whether each score is affine in the target row T_i (then its mean against an unbiased
#: target, such as the noise-corrected one, is unbiased for the mean against the clean
#: labels). The plain Brier score ||p - T||^2 is quadratic in T; its affine form
#: ||p||^2 - 2 p.T + 1 (the expected Brier score) and the cross-entropy -T.log p are affine.
AFFINE_IN_TARGET = {"Brier": False, "expected Brier": True, "affine Brier": True,
                    "NLL": True}


#: How every proper score's value is computed: the mean of the per-item scores.
SCORE_ESTIMATOR = "plug-in"

_ESTIMANDS = {
    "Brier": "population mean Brier score against the target, E[||p - T||^2]",
    "expected Brier": ("population mean Brier score against a label drawn from the target "
                       "row, E[||p - T||^2 + 1 - ||T||^2] = E[||p||^2 - 2 p.T + 1]"),
    "affine Brier": ("population mean Brier score against the clean labels, through the "
                     "affine form E[||p||^2 - 2 p.T + 1] (equal to it when the target is "
                     "unbiased for the clean one-hot labels)"),
    "NLL": "population mean cross-entropy against the target, E[-sum_k T_k log p_k]",
}


def score_estimand(name: str, binary: bool = False) -> str:
    """The population quantity a proper score estimates, in words.

    Parameters
    ----------
    name : {'Brier', 'expected Brier', 'affine Brier', 'NLL'}
        The Estimate's name (:func:`brier_form` for the Brier scores).
    binary : bool, default=False
        1-D binary input: the binary Brier score, half the two-class one.

    Returns
    -------
    str
    """
    text = _ESTIMANDS[name]
    if binary and name != "NLL":
        text += " (binary input: the positive-class form, half the two-class score)"
    return text


def leaves_unit_interval(T: np.ndarray, target: object) -> bool:
    """Whether a target may leave [0, 1]: kind 'corrected', or an entry outside [0, 1].

    Parameters
    ----------
    T : ndarray of shape (n_items, n_classes)
        The target matrix.
    target : object
        The target argument as given (a Target carries its kind).

    Returns
    -------
    bool
    """
    if getattr(target, "kind", None) == "corrected":
        return True
    # two reductions, no temporaries of T's size
    return bool(T.size and (T.min() < -PROB_ATOL or T.max() > 1.0 + PROB_ATOL))


def _label_losses(P: np.ndarray, labels: np.ndarray, score: str) -> np.ndarray:
    """Per-item Brier score or NLL against one-hot labels, over row chunks, float64.

    ``||p_i - e_y||^2 = ||p_i||^2 - 2 p_iy + 1`` and ``-log p_iy``: the one-hot matrix is
    never built, float32 rows are widened one chunk at a time, and only the NLL takes a
    logarithm (of one entry per row).
    """
    n = P.shape[0]
    out = np.empty(n)
    for s in range(0, n, CHUNK_ROWS):
        e = min(n, s + CHUNK_ROWS)
        p = P[s:e].astype(np.float64)
        py = np.take_along_axis(p, labels[s:e, None], axis=1)[:, 0]
        if score == "nll":
            with np.errstate(divide="ignore"):
                out[s:e] = -np.log(py)
        else:
            out[s:e] = np.einsum("ij,ij->i", p, p) - 2.0 * py + 1.0
    return out


def brier_form(variant: str, binary: bool, outside: bool, rows_off: bool, negative: bool, *,
               hard: bool = False) -> tuple[bool, str, dict]:
    """Which Brier score :func:`brier` computes: ``(affine, name, details)``.

    Parameters
    ----------
    variant : {'plain', 'expected'}
    binary : bool
        1-D binary input.
    outside : bool
        The target leaves [0, 1] (:func:`leaves_unit_interval`).
    rows_off : bool
        Some target row does not sum to 1 (within ``PROB_ATOL``).
    negative : bool
        Some target entry is below ``-PROB_ATOL``.
    hard : bool, default=False
        One-hot targets given as class codes (plain and expected coincide).

    Returns
    -------
    affine, name, details

    Raises
    ------
    ValueError
        The affine form asked for (or forced by ``outside``) on rows that do not sum to 1,
        or ``variant='expected'`` on negative entries of a target within [0, 1].
    """
    if hard:
        name = "Brier" if variant == "plain" else "expected Brier"
        return False, name, {"variant": variant, "binary": binary,
                             "form": "plain" if variant == "plain" else "affine",
                             "affine_in_target": AFFINE_IN_TARGET[name]}
    if (variant == "expected" or outside) and rows_off:
        raise ValueError("target: the expected (affine) Brier score needs target rows that "
                         "sum to 1 (probability rows, or noise-corrected rows)")
    if variant == "expected" and not outside and negative:
        raise ValueError("variant='expected' needs target rows that are probability "
                         "distributions or noise-corrected rows")
    affine = variant == "expected" or outside
    name = "Brier" if not affine else ("expected Brier" if variant == "expected"
                                       else "affine Brier")
    return affine, name, {"variant": variant, "binary": binary,
                          "form": "affine" if affine else "plain",
                          "affine_in_target": AFFINE_IN_TARGET[name]}


def brier_losses(P: np.ndarray, T: np.ndarray | None, labels: np.ndarray | None,
                 binary: bool, affine: bool) -> np.ndarray:
    """Per-item Brier scores of :func:`brier` (``affine`` from :func:`brier_form`).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    T : ndarray of shape (n, K) or None
        Target matrix, None with ``labels``.
    labels : int ndarray of shape (n,) or None
        Class codes of a one-hot target.
    binary : bool
        1-D binary input: the binary score, half the two-class one.
    affine : bool

    Returns
    -------
    ndarray of shape (n,)
    """
    if labels is not None:
        # one-hot targets: plain and expected Brier coincide, ||p||^2 - 2 p_y + 1 per item
        losses = _label_losses(P, labels, "brier")
        if binary:  # the binary score (p - t)^2 is half the two-class one
            losses *= 0.5
        return losses
    if binary:
        p, t = P[:, 1], T[:, 1]
        # (p - t)^2 + t (1 - t) = p^2 - 2 p t + t: affine in t
        return p**2 - 2.0 * p * t + t if affine else (p - t) ** 2
    # ||p - T||^2 + 1 - ||T||^2 = ||p||^2 - 2 p.T + 1 for rows summing to 1
    return (np.sum(P**2, axis=1) - 2.0 * np.sum(P * T, axis=1) + 1.0 if affine
            else np.sum((P - T) ** 2, axis=1))


def nll_losses(P: np.ndarray, logP: np.ndarray | None, T: np.ndarray | None,
               labels: np.ndarray | None) -> np.ndarray:
    r"""Per-item cross-entropies of :func:`nll`: ``-log p_iy`` with ``labels``, else
    :math:`-\sum_k T_{ik} \log p_{ik}` (terms with :math:`T_{ik} = 0` are 0).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    logP : ndarray of shape (n, K) or None
        Log-probabilities (with ``T``).
    T : ndarray of shape (n, K) or None
    labels : int ndarray of shape (n,) or None

    Returns
    -------
    ndarray of shape (n,)
    """
    if labels is not None:
        return _label_losses(P, labels, "nll")
    with np.errstate(invalid="ignore"):
        terms = np.where(T != 0.0, -T * logP, 0.0)
    return terms.sum(axis=1)


def nll_high_variance(est: Estimate) -> Estimate:
    """The NLL against a target that leaves [0, 1]: ``est`` with the message saying why it
    is high-variance, and a :class:`~noisycal.NumericalWarning`.

    Parameters
    ----------
    est : Estimate

    Returns
    -------
    Estimate
    """
    msg = ("the target leaves [0, 1] (noise-corrected): the cross-entropy is linear in "
           "the target, so its mean is unbiased for the NLL against the clean labels, but "
           "the weights -log p_ik multiply the negative and amplified target entries, so "
           "it has a high variance and can be negative (the clean NLL is >= 0); prefer "
           "nc.brier (affine form) to compare predictors")
    if est.value < 0:
        msg += f"; here it is negative ({est.value:.4g})"
    warnings.warn(f"NLL: {msg}", NumericalWarning, stacklevel=user_stacklevel())
    return dataclasses.replace(est, message=f"{est.message}; {msg}" if est.message else msg)


#: The status of a proper score whose estimate lies below the smallest value the score
#: can take against any clean labels of the same predictions.
OUTSIDE_STATUS = "outside_parameter_space"


def score_floor(P: np.ndarray, logP: np.ndarray | None, score: str, binary: bool) -> float:
    """The smallest mean score the predictions can get against any clean one-hot labels.

    Each item's score is smallest when its label is its most probable class: the Brier
    score ``||p_i||^2 - 2 max_k p_ik + 1`` (binary input: ``min(p_i^2, (1 - p_i)^2)``,
    the half score) and the NLL ``-max_k log p_ik``. The mean of these is the floor of the
    population score against the clean labels; an estimate below it lies outside the
    parameter space.

    Parameters
    ----------
    P : ndarray of shape (n, K)
    logP : ndarray of shape (n, K) or None
        Log-probabilities (the NLL; None: ``log P``).
    score : {'brier', 'nll'}
    binary : bool
        1-D binary input (the Brier score's binary form).

    Returns
    -------
    float
    """
    if score == "nll":
        with np.errstate(divide="ignore"):
            top = logP.max(axis=1) if logP is not None else np.log(P.max(axis=1))
        return float(np.mean(-top))
    if binary:
        p = P[:, 1]
        return float(np.mean(np.minimum(p**2, (1.0 - p) ** 2)))
    return float(np.mean(np.sum(P**2, axis=1) - 2.0 * P.max(axis=1) + 1.0))


def with_floor_status(est: Estimate, floor: float) -> Estimate:
    """``est`` with status ``'outside_parameter_space'`` when its value lies below
    ``floor`` (:func:`score_floor`), the message naming the likely cause.

    Against clean labels a proper score cannot fall below ``floor``; a noise-corrected
    target's estimate can, by chance at small n or because the correction's assumption
    (annotator noise that does not depend on the classifier's score, with well-estimated
    channels) fails; the message says which is likelier (whether the interval, too, lies
    below the floor). The value and interval are kept; the status says the value is not
    a score the predictions can have, and ``details['floor']`` holds ``floor``.

    Parameters
    ----------
    est : Estimate
    floor : float

    Returns
    -------
    Estimate
    """
    tol = 1e-12 * max(1.0, abs(floor))
    if not (np.isfinite(est.value) and est.value < floor - tol):
        return est
    msg = (f"the {est.name} {est.value:.4g} lies below {floor:.4g}, the smallest value it "
           "can take against any clean labels of these predictions (each item labelled "
           "with its most probable class): an estimate outside the parameter space. The "
           "noise-corrected target is unbiased only when annotator noise does not depend "
           "on the classifier's score and the channels are well estimated; test the first "
           "with nc.annotators.noise_check(annotations, scores, fit=fit)")
    if est.interval is not None and np.isfinite(est.high):
        msg += ("; the whole interval lies below it too, so chance alone is an unlikely "
                "explanation" if est.high < floor - tol else
                "; the interval reaches above it, so chance at this sample size may explain "
                "it")
    details = {**est.details, "floor": floor}
    return dataclasses.replace(est, message=f"{est.message}; {msg}" if est.message else msg,
                               statuses=(*est.statuses, OUTSIDE_STATUS), details=details)
