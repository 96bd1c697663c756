"""Binary recalibration maps fitted to any target (naive, soft or noise-corrected).

Temperature scaling (Guo et al., 2017) ``g_T(z) = sigmoid(s(z) / T)`` with
``0.05 <= T <= 20`` and Platt scaling (Platt, 1999) ``g_{u,v}(z) = sigmoid(u s(z) + v)``
with ``-10 <= u, v <= 10``, where ``s(z) = logit(clip(z, eps, 1 - eps))``. ``loss='log'``:
the mean of ``softplus(eta_i) - y_i eta_i`` (the paper's log loss; unbounded below for
targets outside [0, 1], so such fits run to the box); ``'brier'``: the affine Brier loss
``q_i^2 - 2 q_i y_i + y_i``, ``q_i = sigmoid(eta_i)``, bounded below and unbiased for the
clean-label Brier loss under a corrected target; ``'auto'`` (default, ours): 'brier' for
targets that leave [0, 1] (kind 'corrected' or any value outside), else 'log'. Targets
are never clipped. The clipped scores and the compact parameter boxes are those of
"Noisy-Label Calibration with Multiple Unreliable Labels" (Section 5, Appendix E.2). The
projected histogram (Zadrozny & Elkan, 2001; J equal-width bins, bin value
``clip(mean target, 0, 1)``, empty bins the projected overall mean) carries that paper's
Proposition 2 bound.

References
----------
Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. (2017). On calibration of modern neural
networks. ICML.

Platt, J. (1999). Probabilistic outputs for support vector machines and comparisons to
regularized likelihood methods. Advances in Large Margin Classifiers.

Zadrozny, B. & Elkan, C. (2001). Obtaining calibrated probability estimates from decision
trees and naive Bayesian classifiers. ICML.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import optimize
from scipy.special import expit

from .._typing import ArrayLike
from .._validation import MAX_BINS_PER_ITEM, check_int, check_level, check_n_bins
from .._warnings import ConvergenceWarning, IdentifiabilityWarning
from ..intervals.bounds import hoeffding_radius, target_range
from ..metrics.binning import equal_width_bins
from ..metrics.scores import logit_loss, resolve_fit_loss
from ._base import (
    Calibrator,
    binary_scores,
    check_alignment,
    check_box,
    check_eps,
    check_same_target,
    check_unit_scores,
    minimise_from_starts,
    positive_target,
    target_record,
)

__all__ = ["TemperatureScaling", "PlattScaling", "HistogramBinning", "EPS", "MAX_BINS_PER_ITEM"]

#: Default score clipping level eps of s(z) = logit(clip(z, eps, 1 - eps)) (the paper
#: leaves it open; any 0 < eps < 0.5 is accepted).
EPS = 1e-6


class _ScoreMap(Calibrator):
    """A map of the log-odds s(z): shared ``predict_proba`` and status rule."""

    _fitted_attr = "objective_"

    def _eta(self, s: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Calibrated positive-class probabilities.

        Parameters
        ----------
        probs : array-like of shape (n,), optional
            Positive-class probabilities in [0, 1].
        logits : array-like of shape (n,), optional
            Positive-class log-odds. Give exactly one of ``probs`` and ``logits``.

        Returns
        -------
        ndarray of shape (n,)

        Raises
        ------
        NotFittedError, ValueError
            Before ``fit``; if both or neither input is given, or an input is not a finite
            1-D array (``probs`` also in [0, 1]).
        """
        self._check_fitted()
        return expit(self._eta(binary_scores(probs, logits, self.eps_)))

    def _fit_inputs(self, probs: ArrayLike | None, logits: ArrayLike | None, target: object,
                    *, positive: bool) -> tuple[np.ndarray, np.ndarray, float, float]:
        """Checked ``(s, y, low, high)`` of ``fit`` (clipped log-odds, positive-class target,
        box with low > 0 if ``positive``), in this order of checks; sets ``loss_``."""
        eps = check_eps(self.eps)
        lo, hi = check_box(self.bounds, positive=positive)
        s = binary_scores(probs, logits, eps)
        y = positive_target(target, s.shape[0])
        check_alignment(logits if probs is None else probs,
                        "logits" if probs is None else "probs", target, "target")
        self.loss_ = resolve_fit_loss(self.loss, y, target)
        self._outside = bool(np.any(y < 0.0) or np.any(y > 1.0))
        return s, y, lo, hi

    def _finish(self, best: optimize.OptimizeResult, at_bound: bool,
                not_identified: str | None) -> None:
        """Set ``eps_``, ``objective_``, ``at_bound_``, ``status_``, ``message_`` (warn)."""
        self.eps_ = check_eps(self.eps)  # the clipping of the fit, kept for predict_proba
        self.objective_ = float(best.fun)
        self.at_bound_ = bool(at_bound)
        if not_identified is not None:
            self._set_status("not_identified", not_identified, IdentifiabilityWarning,
                             stacklevel=4)
        elif not best.success:
            self._set_status("not_converged", f"the optimiser stopped before converging: "
                             f"{best.message}", ConvergenceWarning, stacklevel=4)
        elif at_bound:
            hint = (", or the log loss is unbounded below for this target outside [0, 1]: "
                    "use loss='brier'") if self.loss_ == "log" and self._outside else ""
            self._set_status("boundary", f"the fit ended on the box bounds={self.bounds!r}: "
                             "the unconstrained minimum lies outside it (the scores carry "
                             "little information about the target, or the target is "
                             f"separable by the scores{hint})", IdentifiabilityWarning,
                             stacklevel=4)
        else:
            self._set_status("ok", "", None)


class TemperatureScaling(_ScoreMap):
    """Binary temperature scaling ``g_T(z) = sigmoid(s(z) / T)`` with T in a box.

    Guo et al. (2017), with the clipped scores ``s(z) = logit(clip(z, eps, 1 - eps))`` and
    the box ``0.05 <= T <= 20`` of "Noisy-Label Calibration with Multiple Unreliable
    Labels" (Section 5, Appendix E.2), fitted by the loss ``loss`` of ``eta_i = s_i / T``
    (see the module docstring; targets are never clipped).

    Parameters
    ----------
    eps : float, default=1e-6
        Scores are clipped to ``[eps, 1 - eps]`` before the logit (logits to
        ``[logit(eps), logit(1 - eps)]``). Must satisfy ``0 < eps < 0.5``. ``fit``
        keeps its value as ``eps_``, which ``predict_proba`` uses.
    bounds : (float, float), default=(0.05, 20.0)
        The box ``(low, high)`` for T, ``0 < low < high``.
    loss : {'auto', 'log', 'brier'}, default='auto'
        The fitting loss (module docstring): 'auto' is 'brier' for targets that leave
        [0, 1], else 'log'.

    Attributes
    ----------
    temperature_ : float
        The fitted T.
    eps_ : float
        The ``eps`` the fit used (``predict_proba`` clips with it, whatever ``eps`` is
        set to later).
    loss_ : str
        The loss the fit used, ``'log'`` or ``'brier'``.
    objective_ : float
        Final mean loss (of ``loss_``).
    at_bound_ : bool
        Whether T ended on a bound of the box.
    status_ : str
        ``'ok'``; ``'not_identified'`` when every score is 0.5 (log-odds 0: the loss does
        not depend on T, which stays at its start 1); ``'not_converged'`` when the
        optimiser failed; ``'boundary'`` when T ended on a bound of the box. Any status
        but ``'ok'`` comes with a :class:`~noisycal.IdentifiabilityWarning` or
        :class:`~noisycal.ConvergenceWarning`.
    message_ : str
        What the status means for this fit (``''`` when ok).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> b = nc.simulate.binary_scores(20000, slope=0.5, seed=0)
    >>> cal = nc.calibrators.TemperatureScaling().fit(probs=b.p, target=b.y)
    >>> round(cal.temperature_, 1), cal.status_
    (2.0, 'ok')
    """

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (0.05, 20.0),
                 loss: str = "auto") -> None:
        self.eps = eps
        self.bounds = bounds
        self.loss = loss

    def _eta(self, s: np.ndarray) -> np.ndarray:
        return s / self.temperature_

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> TemperatureScaling:
        """Fit T to a target.

        Parameters
        ----------
        probs : array-like of shape (n,), optional
            Positive-class probabilities in [0, 1].
        logits : array-like of shape (n,), optional
            Positive-class log-odds. Give exactly one of ``probs`` and ``logits``.
        target : Target, array-like of shape (n, 2) or (n,)
            What the predictions are fitted to: a Target or (n, 2) matrix (column 1 is
            used), 0/1 integer labels, or a 1-D float positive-class target (any finite
            real values: corrected targets may leave [0, 1]).

        Returns
        -------
        self : TemperatureScaling

        Raises
        ------
        ValueError
            If an input is missing, not finite, of the wrong shape or length, or not
            aligned (pandas predictions whose index differs from the target's items),
            or ``eps``, ``bounds`` or ``loss`` is invalid.
        """
        s, y, lo, hi = self._fit_inputs(probs, logits, target, positive=True)

        def f(logt: np.ndarray) -> tuple[float, np.ndarray]:
            t = math.exp(float(logt[0]))
            eta = s / t
            loss, d = logit_loss(eta, y, self.loss_)
            return loss, np.array([np.mean(d * (-eta))])  # d/dlogT

        starts = [np.array([x]) for x in (0.0, math.log(lo) / 2, math.log(hi) / 2)]
        best = minimise_from_starts(f, starts, [(math.log(lo), math.log(hi))])
        self.temperature_ = float(math.exp(best.x[0]))
        at_bound = np.isclose(self.temperature_, lo) or np.isclose(self.temperature_, hi)
        flat = None
        if not np.any(s != 0):
            flat = ("every score is 0.5 (log-odds 0), so the loss does not depend on T and "
                    "T is not identified; temperature_ is the start value 1")
        self._finish(best, at_bound, flat)
        return self


class PlattScaling(_ScoreMap):
    """Binary Platt scaling ``g(z) = sigmoid(u s(z) + v)`` with u and v in a box.

    Platt (1999), with the clipped scores ``s(z) = logit(clip(z, eps, 1 - eps))`` and the
    box ``-10 <= u, v <= 10`` of "Noisy-Label Calibration with Multiple Unreliable Labels"
    (Section 5, Appendix E.2), fitted by the same loss as :class:`TemperatureScaling`.

    Parameters
    ----------
    eps : float, default=1e-6
        Scores are clipped to ``[eps, 1 - eps]`` before the logit (logits to
        ``[logit(eps), logit(1 - eps)]``). Must satisfy ``0 < eps < 0.5``. ``fit``
        keeps its value as ``eps_``, which ``predict_proba`` uses.
    bounds : (float, float), default=(-10.0, 10.0)
        The box ``(low, high)`` shared by the slope u and the intercept v, ``low < high``.
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.

    Attributes
    ----------
    slope_, intercept_ : float
        u and v.
    eps_ : float
        The ``eps`` the fit used (``predict_proba`` clips with it, whatever ``eps`` is
        set to later).
    loss_ : str
        The loss the fit used, ``'log'`` or ``'brier'``.
    objective_ : float
        Final mean loss (of ``loss_``).
    at_bound_ : bool
        Whether u or v ended on a bound of the box.
    status_ : str
        ``'ok'``; ``'not_identified'`` when all scores are equal (one item, or constant
        scores: only ``u s + v`` is identified, not u and v); ``'not_converged'`` when the
        optimiser failed; ``'boundary'`` when u or v ended on a bound of the box (for
        example a target that the scores separate). Any status but ``'ok'`` comes with a
        :class:`~noisycal.IdentifiabilityWarning` or :class:`~noisycal.ConvergenceWarning`.
    message_ : str
        What the status means for this fit (``''`` when ok).

    Examples
    --------
    >>> import noisycal as nc
    >>> b = nc.simulate.binary_scores(20000, slope=0.7, intercept=0.2, seed=1)
    >>> cal = nc.calibrators.PlattScaling().fit(probs=b.p, target=b.y)
    >>> round(cal.slope_, 1), round(cal.intercept_, 1)
    (0.7, 0.2)
    """

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (-10.0, 10.0),
                 loss: str = "auto") -> None:
        self.eps = eps
        self.bounds = bounds
        self.loss = loss

    def _eta(self, s: np.ndarray) -> np.ndarray:
        return self.slope_ * s + self.intercept_

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> PlattScaling:
        """Fit (u, v) to a target.

        Parameters
        ----------
        probs : array-like of shape (n,), optional
            Positive-class probabilities in [0, 1].
        logits : array-like of shape (n,), optional
            Positive-class log-odds. Give exactly one of ``probs`` and ``logits``.
        target : Target, array-like of shape (n, 2) or (n,)
            As for :meth:`TemperatureScaling.fit`: a Target or (n, 2) matrix, 0/1 labels,
            or a 1-D float positive-class target (any finite real values).

        Returns
        -------
        self : PlattScaling

        Raises
        ------
        ValueError
            If an input is missing, not finite, of the wrong shape or length, or not
            aligned (pandas predictions whose index differs from the target's items),
            or ``eps``, ``bounds`` or ``loss`` is invalid.
        """
        s, y, lo, hi = self._fit_inputs(probs, logits, target, positive=False)

        def f(p: np.ndarray) -> tuple[float, np.ndarray]:
            loss, d = logit_loss(p[0] * s + p[1], y, self.loss_)
            return loss, np.array([np.mean(d * s), np.mean(d)])

        starts = [np.array(x) for x in ((1.0, 0.0), (0.5, 0.0), (2.0, 0.0))]
        best = minimise_from_starts(f, starts, [(lo, hi), (lo, hi)])
        self.slope_, self.intercept_ = (float(x) for x in best.x)
        at_bound = np.any(np.isclose(best.x, lo) | np.isclose(best.x, hi))
        flat = None
        if np.ptp(s) == 0:
            flat = (f"all {s.size} score(s) are equal, so only u s + v is identified, not the "
                    "slope u and intercept v separately")
        self._finish(best, at_bound, flat)
        return self


class _BinnedMap(Calibrator):
    """A map constant on equal-width score bins: shared ``predict_proba`` (``values_``)."""

    _fitted_attr = "values_"
    _map_name: str  # the class's name in predict_proba's error

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """The map's value at each score: ``values_`` of the score's bin.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1].
        logits : None
            Not accepted (the bins are on the probability scale); present to give a
            clear error.

        Returns
        -------
        ndarray of shape (n,)

        Raises
        ------
        NotFittedError
            If called before ``fit``.
        ValueError
            If ``logits`` is given, or ``probs`` is missing, not 1-D, not finite or
            outside [0, 1].
        """
        self._check_fitted()
        if logits is not None:
            raise ValueError(f"logits= is not accepted: {self._map_name} bins probabilities; "
                             "pass probs= (scores in [0, 1])")
        if probs is None:
            raise ValueError("probs is required (scores in [0, 1])")
        z = check_unit_scores(probs, "probs")
        return self.values_[equal_width_bins(z, len(self.values_))]


class HistogramBinning(_BinnedMap):
    """Fixed-bin projected histogram binning.

    Histogram binning (Zadrozny & Elkan, 2001) in the projected form of "Noisy-Label
    Calibration with Multiple Unreliable Labels" (Section 5), which carries its
    Proposition 2 bound: J equal-width bins on the original score; each bin's value is the
    mean target of its fitting items projected onto [0, 1]; empty bins get the projected
    mean of all fitting targets.

    Parameters
    ----------
    n_bins : int, default=10
        Number J of equal-width bins, ``[h/J, (h+1)/J)`` with the last bin closed; at
        least 1 and at most ``MAX_BINS_PER_ITEM`` (10) times the number of fitting items.

    Attributes
    ----------
    values_ : ndarray of shape (n_bins,)
        Projected bin values.
    raw_means_ : ndarray of shape (n_bins,)
        Unprojected bin means (NaN for empty bins).
    counts_ : ndarray of shape (n_bins,)
        Fitting items in each bin.
    objective_ : float
        Mass-weighted distance moved by the projection, ``sum_h (n_h / n) |raw - value|``.
    status_ : str
        Always ``'ok'`` (empty bins are part of the method, not a failure).
    message_ : str
        ``''``.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> z = np.array([0.05, 0.55, 0.58, 0.95])
    >>> h = nc.calibrators.HistogramBinning(n_bins=2).fit(probs=z, target=np.array([0, 1, 0, 1]))
    >>> h.values_.tolist(), h.predict_proba(probs=np.array([0.2, 0.9])).tolist()
    ([0.0, 0.6666666666666666], [0.0, 0.6666666666666666])
    """

    _map_name = "HistogramBinning"

    def __init__(self, *, n_bins: int = 10) -> None:
        self.n_bins = n_bins

    def fit(self, *, probs: ArrayLike, target: object) -> HistogramBinning:
        """Fit the bin values.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1] (the bins are on the probability scale, so
            there is no ``logits=``).
        target : Target, array-like of shape (n, 2) or (n,)
            A Target or (n, 2) matrix (column 1 is used), 0/1 labels, or a 1-D float
            positive-class target (any finite real values).

        Returns
        -------
        self : HistogramBinning

        Raises
        ------
        ValueError
            If ``probs`` is empty, not 1-D, not finite or outside [0, 1], ``target`` does
            not match it (length, or the items of a pandas ``probs``' index), or
            ``n_bins`` is not an integer in [1, 10 n].
        """
        J = check_int(self.n_bins, "n_bins", minimum=1)
        z = check_unit_scores(probs, "probs")
        check_n_bins(J, z.size)
        y = positive_target(target, z.shape[0])
        check_alignment(probs, "probs", target, "target")
        b = equal_width_bins(z, J)
        counts = np.bincount(b, minlength=J)
        sums = np.bincount(b, weights=y, minlength=J)
        with np.errstate(invalid="ignore", divide="ignore"):
            raw = np.where(counts > 0, sums / counts, np.nan)
        fill = float(np.clip(y.mean(), 0.0, 1.0))
        self.raw_means_ = raw
        self.counts_ = counts
        self.values_ = np.where(counts > 0, np.clip(raw, 0.0, 1.0), fill)
        self.objective_ = float(np.sum(counts / z.size * np.abs(np.nan_to_num(raw) -
                                                                  self.values_)))
        self._fit_target = target_record(target, y)  # what bound() checks its target by
        self._set_status("ok", "", None)
        return self

    def bound(self, target: object, *, level: float = 0.9, channel_term: float = 0.0) -> float:
        """Proposition 2: ECE(g o f) <= d_ch + (B + 1) sqrt(2 (J log 2 + log(4/eta)) / n_rec).

        B is B-hat of the fitted target (:func:`noisycal.intervals.bounds.target_range`;
        with missing ratings the maximum over items of sum_j w_ij / delta_j, our
        generalisation).

        The finite-sample bound on the calibration error of the fitted histogram of
        "Noisy-Label Calibration with Multiple Unreliable Labels" (Proposition 2), with
        ``eta = 1 - level``.

        Parameters
        ----------
        target : Target
            The corrected target the histogram was fitted to (its weights and channels
            give B); ``fit`` records its values, weights and channels, and any other
            target is an error.
        level : float, default=0.9
            Probability ``1 - eta`` with which the bound holds, a fraction in (0, 1).
        channel_term : float, default=0.0
            The channel-error term d_ch (0 assumes exact channels); finite and >= 0.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``level`` or ``channel_term`` is invalid, ``target`` is not the
            corrected Target the histogram was fitted to (same values, weights and
            channels), or its channel fit's status is not 'ok'.
        """
        self._check_fitted()
        level = check_level(level)
        if isinstance(channel_term, bool) or not isinstance(channel_term, numbers.Real) \
                or not math.isfinite(channel_term) or channel_term < 0:
            raise ValueError(f"channel_term must be a finite number >= 0, got {channel_term!r}")
        det = getattr(target, "details", {})
        if "weights" not in det:
            raise ValueError("target must be the corrected Target the histogram was fitted to "
                             "(nc.targets.corrected): bound() needs its weights and channels")
        record = check_same_target(target, self._fit_target, "the histogram")
        if record["fit_status"] not in (None, "ok"):
            raise ValueError(f"target: bound() needs identified channels, but the channel "
                             f"fit the target was built from has status "
                             f"{record['fit_status']!r} (Proposition 2 assumes its channels "
                             "are identified and consistent)")
        B = target_range(record)  # max over items of sum_j w_ij / delta_j
        # the same Hoeffding term as the NC-ECE bound, for a range of B + 1 and 4 events
        return channel_term + hoeffding_radius(B + 1.0, int(self.counts_.sum()),
                                               len(self.values_), level, union=4.0)
