"""Weighted isotonic regression and the isotonic calibrators (binary, and top-label IR-Soft).

The fit is the weighted least-squares non-decreasing map of scores ``x_i`` to targets
``t_i``:

.. math:: g = \\arg\\min_{g \\text{ non-decreasing}} \\sum_i w_i (g(x_i) - t_i)^2,

computed as scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` does:

1. sort by score and merge **exactly equal** scores into one point whose value is the
   weighted mean of their targets and whose weight is the sum of their weights
   (scikit-learn also merges scores closer than 1e-15; we merge exact ties only);
2. pool adjacent violators (PAV) on the merged points: each pooled block takes the
   weighted mean of its members;
3. keep the knots where the fitted value changes (the first and last point of every
   flat run), as ``X_thresholds_`` / ``y_thresholds_``;
4. predict by linear interpolation between knots (default; scikit-learn's
   ``interp1d(kind="linear")``) or by the step function that holds the value of the
   nearest knot at or below the score, and clip scores outside the fitted range to the
   end values.

PAV runs vectorised in NumPy: every pass pools each maximal run of decreasing blocks at
once (pooling a decreasing run is a sequence of adjacent-violator poolings, so by the
order-independence of PAV the result is the isotonic regression); when a pass stops
shrinking the block count by a tenth, the remaining blocks are pooled by the classic
stack PAV, a loop over blocks (not items).

The isotonic fit is a least-squares fit, so it takes any real target: the mean of a
noise-corrected target that leaves [0, 1] is still an unbiased estimate, and the
squared error against it is the affine Brier loss of :mod:`noisycal.calibrators._inputs`
up to a constant. The calibrators return probabilities, so their fitted values are the
least-squares non-decreasing map **into [0, 1]**, which is the unbounded fit clipped to
[0, 1] (the bounded isotonic regression is the projection of the unbounded one; this is
also scikit-learn's ``y_min=0, y_max=1``). How many fitting items the clipping moved is
reported in ``n_clipped_``.

References
----------
Zadrozny, B. & Elkan, C. (2002). Transforming classifier scores into accurate multiclass
probability estimates. KDD.

Barlow, R. E., Bartholomew, D. J., Bremner, J. M. & Brunk, H. D. (1972). Statistical
Inference under Order Restrictions. Wiley.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._util.types import ArrayLike
from .._util.validation import check_array, check_choice
from ..exceptions import IdentifiabilityWarning
from ._base import (
    Calibrator,
    as_1d,
    check_alignment,
    inherit_target_status,
    positive_target,
)
from ._inputs import ScoreInput, fit_target
from ._toplabel import top_label_inputs, top_label_rebuild

__all__ = ["IsotonicFit", "IsotonicCalibration", "isotonic_regression", "isotonic_predict",
           "pool_adjacent_violators", "INTERPOLATIONS"]

#: Prediction rules between knots.
INTERPOLATIONS = ("linear", "step")
#: A vectorised PAV pass must remove at least this share of the blocks, else the stack
#: PAV finishes the fit.
_MIN_SHRINK = 0.1


class IsotonicFit(NamedTuple):
    """A fitted weighted isotonic regression.

    Attributes
    ----------
    x_thresholds : ndarray of shape (n_knots,)
        Increasing knot scores (the first and last merged score of every flat run).
    y_thresholds : ndarray of shape (n_knots,)
        Fitted values at the knots (non-decreasing).
    x_unique : ndarray of shape (n_unique,)
        The merged (distinct) scores, increasing.
    y_unique : ndarray of shape (n_unique,)
        The fitted value at every merged score.
    """

    x_thresholds: np.ndarray
    y_thresholds: np.ndarray
    x_unique: np.ndarray
    y_unique: np.ndarray


def _stack_pav(S: np.ndarray, W: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    """Classic stack PAV over blocks with sums ``S``, weights ``W`` and lengths ``n``."""
    oS: list[float] = []
    oW: list[float] = []
    on: list[int] = []
    for s, w, k in zip(S.tolist(), W.tolist(), n.tolist(), strict=True):
        while oS and oS[-1] / oW[-1] > s / w:
            s += oS.pop()
            w += oW.pop()
            k += on.pop()
        oS.append(s)
        oW.append(w)
        on.append(k)
    return np.array(oS), np.array(oW), np.array(on, dtype=np.int64)


def pool_adjacent_violators(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted PAV: the non-decreasing ``f`` minimising ``sum_i w_i (f_i - y_i)^2``.

    Parameters
    ----------
    y : ndarray of shape (m,)
        Values in the order of their (distinct, increasing) scores.
    w : ndarray of shape (m,)
        Positive weights.

    Returns
    -------
    ndarray of shape (m,)
        The fitted values; each pooled block holds the weighted mean of its members.
    """
    S = w * y
    W = w.astype(np.float64, copy=True)
    n = np.ones(y.size, dtype=np.int64)
    while S.size > 1:
        viol = S[:-1] / W[:-1] > S[1:] / W[1:]
        if not viol.any():
            break
        starts = np.flatnonzero(np.concatenate(([True], ~viol)))
        shrink = 1.0 - starts.size / S.size
        S, W, n = (np.add.reduceat(a, starts) for a in (S, W, n))
        if shrink < _MIN_SHRINK:
            S, W, n = _stack_pav(S, W, n)
            break
    return np.repeat(S / W, n)


def _merge_ties(x: np.ndarray, y: np.ndarray, w: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct scores, the weighted mean target and the weight sum of each.

    Items are ordered by score; where scores tie they are ordered by target and weight
    too, so the sums (and the fit) do not depend on the order of the input.
    """
    order = np.argsort(x)
    xs = x[order]
    same = xs[1:] == xs[:-1]
    if not same.any():
        return xs, y[order], w[order]
    order = np.lexsort((w, y, x))
    xs, ys, ws = x[order], y[order], w[order]
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    W = np.add.reduceat(ws, starts)
    return xs[starts], np.add.reduceat(ws * ys, starts) / W, W


def isotonic_regression(x: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
                        *, y_min: float | None = None, y_max: float | None = None
                        ) -> IsotonicFit:
    """Weighted isotonic (non-decreasing) least-squares regression of ``y`` on ``x``.

    The same fit as scikit-learn's ``IsotonicRegression(increasing=True, y_min=y_min,
    y_max=y_max)`` with ``sample_weight`` (module docstring), except that only exactly
    equal scores are merged.

    Parameters
    ----------
    x : array-like of shape (n,)
        Finite scores.
    y : array-like of shape (n,)
        Finite targets (any real values).
    sample_weight : array-like of shape (n,), optional
        Positive finite weights (default: all 1). Zero weights are refused rather than
        dropped (scikit-learn drops those items).
    y_min, y_max : float, optional
        Clip the fitted values to these bounds (the bounded isotonic regression).

    Returns
    -------
    IsotonicFit

    Raises
    ------
    ValueError
        If an input is not finite, not 1-D, empty, of mismatched length, or a weight is
        not positive.
    """
    xa = as_1d(x, "x")
    ya = check_array(y, "y", ndim=1)
    n = xa.size
    if ya.size != n:
        raise ValueError(f"y has {ya.size} values but x has {n}")
    w = check_weights(sample_weight, n)
    ux, uy, uw = _merge_ties(xa, ya, w)
    fitted = pool_adjacent_violators(uy, uw)
    if y_min is not None or y_max is not None:
        fitted = np.clip(fitted, -np.inf if y_min is None else y_min,
                         np.inf if y_max is None else y_max)
    return fit_from_values(ux, fitted)


def fit_from_values(x_unique: np.ndarray, fitted: np.ndarray) -> IsotonicFit:
    """The :class:`IsotonicFit` of fitted values at distinct increasing scores: the knots
    are the first and last score of every run of equal fitted values."""
    keep = np.ones(fitted.size, dtype=bool)
    keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return IsotonicFit(x_unique[keep], fitted[keep], x_unique, fitted)


def check_weights(sample_weight: ArrayLike | None, n: int,
                  name: str = "sample_weight") -> np.ndarray:
    """Positive finite weights of shape (n,) (all 1 when None)."""
    if sample_weight is None:
        return np.ones(n)
    w = check_array(sample_weight, name, ndim=1)
    if w.size != n:
        raise ValueError(f"{name} has {w.size} values but there are {n} items")
    if np.any(w <= 0):
        raise ValueError(f"{name} must be positive (zero-weight items are not dropped "
                         f"silently; remove them), got minimum {w.min():g}")
    return w


def isotonic_predict(x_thresholds: np.ndarray, y_thresholds: np.ndarray, x: np.ndarray,
                     interpolation: str = "linear") -> np.ndarray:
    """Evaluate a fitted isotonic map at ``x``, clipped outside the knots' range.

    Parameters
    ----------
    x_thresholds, y_thresholds : ndarray of shape (n_knots,)
        Knots of an :class:`IsotonicFit`.
    x : ndarray of shape (n,)
        Scores.
    interpolation : {'linear', 'step'}, default='linear'
        'linear' interpolates between neighbouring knots (scikit-learn); 'step' holds the
        value of the largest knot at or below the score (a right-continuous step
        function, which is what the fit determines at the fitting scores themselves).

    Returns
    -------
    ndarray of shape (n,)
    """
    if interpolation == "linear":
        return np.interp(x, x_thresholds, y_thresholds)
    idx = np.searchsorted(x_thresholds, x, side="right") - 1
    return y_thresholds[np.clip(idx, 0, x_thresholds.size - 1)]


class IsotonicCalibration(Calibrator):
    """Isotonic recalibration fitted to any target: binary scores, or top-label (IR-Soft).

    - **Binary** scores of shape (n,) (``probs=`` positive-class probabilities, or
      ``logits=``; the map acts on the scores as given): the weighted isotonic regression
      of the positive-class target on the score (Zadrozny & Elkan, 2002), equal to
      scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` for 0/1 labels.
    - **Multi-class** scores of shape (n, K): IR-Soft, "distributional isotonic regression"
      of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth"
      (Section 6): the isotonic map ``g`` of the top-class confidence ``p_c``
      (``c = argmax p``, lowest index on ties) against the target's mass on the predicted
      class, ``t_{i,c}``. With a soft target (the annotator distribution) this is IR-Soft;
      with a one-hot (hard or voted) target it is the usual top-label isotonic
      regression on the correctness indicator, through the same code path. The paper
      does not say how the full vector is built nor how to interpolate; the vector is the
      proportional rebuild ``q_c = g(p_c)``, ``q_k = p_k (1 - g(p_c)) / (1 - p_c)``
      (:func:`noisycal.calibrators._toplabel.top_label_rebuild`), which keeps ``c`` as
      the predicted class even where another ``q_k`` exceeds ``q_c`` (score it with
      ``nc.true_label_ece(q, target, predicted=p.argmax(1))``, as the paper and
      :func:`noisycal.ambiguity.compare_calibrators` do, not with ``argmax q``);
      ``interpolation`` is an argument; :meth:`predict_confidence` gives ``g(p_c)``
      alone. An (n, 2)
      matrix is a two-class top-label problem; for the positive-class map pass its
      column 1 as (n,) scores.

    Targets leaving [0, 1] (noise-corrected) are fitted by least squares, which stays
    unbiased for the clean-label Brier loss, and the fitted values are clipped to [0, 1]
    (the exact least-squares monotone map into [0, 1]; ``n_clipped_`` counts the fitting
    items whose unbounded fitted value was moved).

    Parameters
    ----------
    interpolation : {'linear', 'step'}, default='linear'
        Prediction between knots: linear interpolation (scikit-learn) or the value of
        the nearest knot at or below the score. Scores outside the fitted range get the
        end values in both cases.

    Attributes
    ----------
    X_thresholds_, y_thresholds_ : ndarray of shape (n_knots,)
        The knots of the map (scores, or top-class confidences for (n, K) input).
    X_min_, X_max_ : float
        The fitted score range (prediction is clipped to it).
    binary_ : bool
        Whether the fit was on 1-D binary scores.
    n_classes_ : int
        2 for binary scores, else K.
    input_ : {'probs', 'logits'}
        The input given to ``fit``.
    n_clipped_ : int
        Fitting items whose unbounded fitted value left [0, 1] and was clipped.
    objective_ : float
        The weighted mean squared error ``sum_i w_i (g(x_i) - t_i)^2 / sum_i w_i``.
    status_ : {'ok', 'constant', 'target_not_ok'}
        'constant' when the fitted map takes one value (one distinct score, a constant
        target, or a target that never increases with the score); 'target_not_ok' when
        the target is a Target built from a fit whose status is not 'ok'. A warning
        says so.
    message_ : str
        Why the status is not 'ok' ('' otherwise).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> iso = nc.calibrators.IsotonicCalibration().fit(
    ...     probs=np.array([0.1, 0.3, 0.5, 0.7]), target=np.array([0, 1, 0, 1]))
    >>> iso.y_thresholds_.tolist()
    [0.0, 0.5, 0.5, 1.0]
    >>> iso.predict_proba(probs=np.array([0.0, 0.2, 0.6, 0.9])).tolist()
    [0.0, 0.25, 0.75, 1.0]
    """

    _fitted_attr = "y_thresholds_"

    def __init__(self, *, interpolation: str = "linear") -> None:
        self.interpolation = interpolation

    def __sklearn_tags__(self) -> object:
        """scikit-learn's estimator tags: keyword inputs of shape (n,) or (n, K)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags

    def _scores(self, probs: ArrayLike | None, logits: ArrayLike | None
                ) -> tuple[ScoreInput, np.ndarray | None, np.ndarray | None]:
        """The input and, for (n, K) input, the probability matrix and predicted class."""
        return top_label_inputs(probs, logits)

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object = None, sample_weight: ArrayLike | None = None
            ) -> IsotonicCalibration:
        """Fit the isotonic map.

        Parameters
        ----------
        probs : array-like of shape (n,) or (n, n_classes), optional
            Positive-class probabilities, or a probability matrix (rows summing to 1).
        logits : array-like of shape (n,) or (n, n_classes), optional
            Logits (never clipped). Give exactly one of ``probs`` and ``logits``.
        target : Target, array-like of shape (n, n_classes) or (n,)
            Any target: labels, a matrix or a Target (hard, soft, voted, corrected,
            posterior). Binary: 0/1 labels, a 1-D float positive-class target, an (n, 2)
            matrix or a Target (column 1 is used).
        sample_weight : array-like of shape (n,), optional
            Positive item weights (default 1).

        Returns
        -------
        self : IsotonicCalibration

        Raises
        ------
        ValueError
            If ``interpolation`` is unknown, the scores are missing, both given, not
            finite, of the wrong shape or (probabilities) outside [0, 1] or not summing
            to 1, ``target`` does not match them, or a weight is not positive.
        """
        check_choice(self.interpolation, "interpolation", INTERPOLATIONS)
        x, P, top = self._scores(probs, logits)
        n = x.S.shape[0]
        if x.binary:
            raw = probs if logits is None else logits
            score = as_1d(raw, x.given)
            t = positive_target(target, n)
            check_alignment(raw, x.given, target, "target")
        else:
            T = fit_target(target, ScoreInput(x.S, False, x.given, x.raw))
            rows = np.arange(n)
            score, t = P[rows, top], T[rows, top]
        w = check_weights(sample_weight, n)
        fit = isotonic_regression(score, t, w)
        bounded = fit_from_values(fit.x_unique, np.clip(fit.y_unique, 0.0, 1.0))
        at = np.searchsorted(fit.x_unique, score)
        g = bounded.y_unique[at]
        self.n_clipped_ = int(np.count_nonzero(g != fit.y_unique[at]))
        self.objective_ = float(np.sum(w * (g - t) ** 2) / np.sum(w))
        self.X_thresholds_, self.y_thresholds_ = bounded.x_thresholds, bounded.y_thresholds
        self.X_min_, self.X_max_ = float(bounded.x_unique[0]), float(bounded.x_unique[-1])
        self.binary_ = bool(x.binary)
        self.n_classes_ = int(x.S.shape[1])
        self.input_ = x.given
        set_isotonic_status(self, bounded, t, {"target": target})
        return self

    def _check_input(self, x: ScoreInput) -> None:
        if x.binary != self.binary_ or x.S.shape[1] != self.n_classes_:
            fitted = "(n,) binary scores" if self.binary_ else f"(n, {self.n_classes_}) scores"
            raise ValueError(f"{x.given} must have the shape the map was fitted on, "
                             f"{fitted}; got shape {np.shape(x.raw)}")
        if self.binary_ and x.given != self.input_:
            raise ValueError(f"{x.given}: this IsotonicCalibration was fitted on "
                             f"{self.input_}= and maps binary scores on that scale; pass "
                             f"{self.input_}=")

    def predict_confidence(self, *, probs: ArrayLike | None = None,
                           logits: ArrayLike | None = None) -> np.ndarray:
        """The calibrated confidence ``g(p_c)`` (binary: ``g`` of the score).

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes), optional
            Exactly one, of the shape the map was fitted on (binary maps: the same input
            kind as ``fit``).

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        x, P, top = self._scores(probs, logits)
        self._check_input(x)
        if self.binary_:
            score = as_1d(probs if logits is None else logits, x.given)
        else:
            score = P[np.arange(P.shape[0]), top]
        return isotonic_predict(self.X_thresholds_, self.y_thresholds_, score,
                                self.interpolation)

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Calibrated probabilities.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes), optional
            Exactly one, of the shape the map was fitted on. Binary maps act on the
            scores as given, so they take the input kind of ``fit``; (n, K) maps act on
            the probabilities (``softmax`` of logits), so either kind works.

        Returns
        -------
        ndarray of shape (n,) or (n, n_classes)
            Positive-class probabilities (binary), or the rebuilt probability vectors
            (rows sum to 1, the predicted class keeps the calibrated confidence).

        Raises
        ------
        NotFittedError, ValueError
            Before ``fit``; on missing, doubled, non-finite or mis-shaped scores.
        """
        self._check_fitted()
        x, P, top = self._scores(probs, logits)
        self._check_input(x)
        if self.binary_:
            score = as_1d(probs if logits is None else logits, x.given)
            return isotonic_predict(self.X_thresholds_, self.y_thresholds_, score,
                                    self.interpolation)
        conf = isotonic_predict(self.X_thresholds_, self.y_thresholds_,
                                P[np.arange(P.shape[0]), top], self.interpolation)
        return top_label_rebuild(P, top, conf)


def set_isotonic_status(cal: Calibrator, fit: IsotonicFit, t: np.ndarray,
                        inputs: dict[str, object] | None = None) -> None:
    """Set ``status_``/``message_`` of an isotonic fit (and warn unless 'ok').

    A Target in ``inputs`` (argument name to value) built from a fit whose status is
    not 'ok' gives ``'<name>_not_ok'`` (the calibrator inherits its target's failure);
    otherwise a fitted map with a single value gives 'constant'.
    """
    if inherit_target_status(cal, inputs or {}):
        return
    if fit.y_thresholds[0] != fit.y_thresholds[-1]:
        cal._set_status("ok", "", None)
        return
    if fit.x_unique.size == 1:
        why = "every fitting score is the same"
    elif np.all(t == t[0]):
        why = "the fitting target is constant (all items in one class)"
    else:
        why = "the target never increases with the score, so every item is pooled"
    cal._set_status("constant", f"the fitted map is constant ({fit.y_thresholds[0]:.6g}): "
                    f"{why}", IdentifiabilityWarning)
