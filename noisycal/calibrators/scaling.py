"""Beta calibration, binned binary recalibration maps, and where the scaling maps live.

The scaling maps (temperature, vector, Platt, matrix and Dirichlet scaling), fitted to
any target, are in :mod:`noisycal.calibrators.temperature` and
:mod:`noisycal.calibrators.multiclass`; :class:`BetaCalibration` (Kull, Silva Filho &
Flach, 2017) is here and shares their fitting code.

The projected histogram (Zadrozny & Elkan, 2001; J equal-width bins, bin value
``clip(mean target, 0, 1)``, empty bins the projected overall mean) carries the
Proposition 2 bound of "Noisy-Label Calibration with Multiple Unreliable Labels"
(Section 5).

References
----------
Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beta calibration: a well-founded and
easily implemented improvement on logistic calibration for binary classifiers. AISTATS.

Zadrozny, B. & Elkan, C. (2001). Obtaining calibrated probability estimates from decision
trees and naive Bayesian classifiers. ICML.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import optimize

from .._typing import ArrayLike
from .._validation import (
    MAX_BINS_PER_ITEM,
    check_choice,
    check_int,
    check_level,
    check_n_bins,
)
from .._warnings import IdentifiabilityWarning
from ..intervals.bounds import hoeffding_radius, target_range
from ..metrics.binning import equal_width_bins
from ._base import (
    Calibrator,
    check_alignment,
    check_box,
    check_same_target,
    check_unit_scores,
    positive_target,
    target_record,
)
from ._inputs import EPS
from .multiclass import _doc, _LbfgsMap

__all__ = ["BetaCalibration", "HistogramBinning", "MAX_BINS_PER_ITEM", "BETA_PARAMETERS"]

#: The parametrisations of beta calibration (Kull, Silva Filho & Flach, 2017, Section 3).
BETA_PARAMETERS = ("abm", "ab", "am")


class BetaCalibration(_LbfgsMap):
    """Beta calibration of binary scores, fitted to any binary target.

    Kull, Silva Filho & Flach (2017), "Beta calibration: a well-founded and easily
    implemented improvement on logistic calibration for binary classifiers" (Eq. 4 and
    Section 3): the calibrated probability of a score ``s`` in (0, 1) is

    .. math:: \\mu(s) = \\frac{1}{1 + 1 / \\big(e^{c}\\, s^{a} / (1 - s)^{b}\\big)},
              \\qquad \\operatorname{logit} \\mu(s) = a \\ln s - b \\ln(1 - s) + c,

    a logistic regression on the two features ``ln s`` and ``-ln(1 - s)``. The
    parametrisations (``parameters``):

    - ``'abm'`` (default): a, b and c free (three parameters; the midpoint m with
      ``mu(m) = 1/2`` solves ``a ln m - b ln(1 - m) + c = 0``);
    - ``'ab'``: m = 1/2, so ``c = (a - b) ln 2``;
    - ``'am'``: a = b, so ``logit mu(s) = a logit(s) + c``: Platt scaling on the log-odds
      (the binary :class:`PlattScaling`), with ``m = 1 / (1 + exp(c / a))``.

    The fit minimises the mean loss against the target by L-BFGS-B on JAX gradients (the
    code of :class:`PlattScaling`): the log loss ``-(t log mu + (1 - t) log(1 - mu))`` for
    any target in [0, 1] (hard labels, or soft, voted, posterior probabilities), and the
    affine Brier loss for a noise-corrected target that leaves [0, 1] (``loss='auto'``).
    The log loss is convex in (a, b, c), so the fit has one start, the identity map
    ``a = b = 1, c = 0``.

    The paper requires ``a, b >= 0`` for a monotone map; the ``betacal`` package fits the
    unconstrained logistic regression and, when a coefficient is negative, refits with it
    fixed at 0. Here ``monotone=True`` (default) solves the constrained problem directly
    (lower bound 0 on a and b, and on a = b for 'am'); a coefficient on that constraint is
    part of the model, recorded in ``constrained_``, not a failure. ``monotone=False``
    lets a and b range over the box.

    Parameters
    ----------
    parameters : {'abm', 'ab', 'am'}, default='abm'
        The parametrisation.
    monotone : bool, default=True
        Constrain ``a, b >= 0`` (a non-decreasing map).
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm: ``ln max(s, eps)`` and
        ``ln max(1 - s, eps)``, so scores of exactly 0 or 1 are usable (``0 < eps < 0.5``).
        ``logits=`` are never clipped: ``ln s = log_sigmoid(z)`` and
        ``ln(1 - s) = log_sigmoid(-z)`` exactly.
    bounds : (float, float), default=(-100.0, 100.0)
        The box ``(low, high)`` of a, b and c (a and b from 0 when ``monotone``).
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.
    max_iter : int, default=2000
        L-BFGS-B iteration limit.

    Attributes
    ----------
    a_, b_, c_ : float
        The fitted map (``b_ == a_`` for 'am'; ``c_ = (a_ - b_) ln 2`` for 'ab').
    m_ : float
        The midpoint ``mu(m) = 1/2``, NaN where the map never crosses 1/2 (a coefficient
        fixed at 0).
    constrained_ : tuple of str
        The coefficients ('a', 'b') held at 0 by the monotone constraint.
    parameters_ : str
        The parametrisation of the fit.
    n_classes_, binary_, input_, eps_, loss_, objective_, n_iter_, at_bound_ :
        As for :class:`VectorScaling` (``n_classes_ == 2``).
    status_, message_ : str
        ``'ok'``; ``'not_identified'`` when there are fewer distinct scores than
        parameters; ``'degenerate'`` when the monotone constraint holds every slope at 0
        (the fitted map is a constant: the scores carry no increasing information about
        the target); ``'boundary'`` when a parameter ended on the box (for example a
        target that the scores separate); ``'not_converged'``. Any status but 'ok' warns.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> rng = np.random.default_rng(0)
    >>> s = rng.beta(2, 2, 200_000)
    >>> mu = 1 / (1 + np.exp(-(2.0 * np.log(s) - 0.5 * np.log1p(-s) + 0.3)))
    >>> y = (rng.random(s.size) < mu).astype(int)
    >>> bc = nc.calibrators.BetaCalibration().fit(probs=s, target=y)
    >>> round(bc.a_, 1), round(bc.b_, 1), round(bc.c_, 1), bc.status_
    (2.0, 0.5, 0.3, 'ok')
    """

    def __init__(self, *, parameters: str = "abm", monotone: bool = True, eps: float = EPS,
                 bounds: tuple[float, float] = (-100.0, 100.0), loss: str = "auto",
                 max_iter: int = 2000) -> None:
        self.parameters = parameters
        self.monotone = monotone
        self.eps = eps
        self.bounds = bounds
        self.loss = loss
        self.max_iter = max_iter

    def _eta(self, S: np.ndarray) -> np.ndarray:
        u = self.a_ * S[:, 1] - self.b_ * S[:, 0] + self.c_
        return np.column_stack([np.zeros_like(u), u])

    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> BetaCalibration:
        """Fit a, b and c (as the parametrisation allows) to a binary target."""
        kind = check_choice(self.parameters, "parameters", BETA_PARAMETERS)
        if not isinstance(self.monotone, (bool, np.bool_)):
            raise ValueError(f"monotone must be True or False, got {self.monotone!r}")
        lo, hi = check_box(self.bounds, positive=False)
        for name, given in (("probs", probs), ("logits", logits)):
            if given is not None and np.ndim(given) != 1:
                raise ValueError(f"{name} must be 1-D positive-class scores of shape (n,) "
                                 f"(beta calibration is binary), got shape {np.shape(given)}")
        x, T = self._prepare(probs, logits, target)
        S = x.S
        n_par = {"abm": 3, "ab": 2, "am": 2}[kind]
        n_distinct = np.unique(S[:, 1]).size
        why = None if n_distinct >= n_par else (
            f"the scores take {n_distinct} distinct value(s), fewer than the {n_par} "
            f"parameters of '{kind}', so the map is not identified")
        a_lo = 0.0 if self.monotone else lo
        if kind == "am":  # Platt on the log-odds: theta = (a, c)
            box = [(a_lo, hi), (lo, hi)]
            theta = self._run("platt_binary", S, T, [np.array([1.0, 0.0])], box, why,
                              model_lower=np.array([self.monotone, False]))
            a, b, c = float(theta[0]), float(theta[0]), float(theta[1])
        elif kind == "ab":
            box = [(a_lo, hi), (a_lo, hi)]
            theta = self._run("beta_ab", S, T, [np.array([1.0, 1.0])], box, why,
                              model_lower=np.array([self.monotone] * 2))
            a, b = float(theta[0]), float(theta[1])
            c = (a - b) * math.log(2.0)
        else:
            box = [(a_lo, hi), (a_lo, hi), (lo, hi)]
            theta = self._run("beta_abm", S, T, [np.array([1.0, 1.0, 0.0])], box, why,
                              model_lower=np.array([self.monotone] * 2 + [False]))
            a, b, c = (float(v) for v in theta)
        self.a_, self.b_, self.c_ = a, b, c
        self.parameters_ = kind
        slopes = ("a", "b") if kind != "am" else ("a",)
        held = tuple(k for k, v in zip(("a", "b"), (a, b), strict=True)
                     if k in slopes and self.monotone and v == 0.0)
        self.constrained_ = held
        self.m_ = _midpoint(a, b, c)
        if self.status_ == "ok" and len(held) == len(slopes):
            self._set_status("degenerate", "the monotone constraint holds every slope at 0: "
                             "the fitted map is the constant sigmoid(c) (the scores carry no "
                             "increasing information about the target)",
                             IdentifiabilityWarning)
        return self


def _midpoint(a: float, b: float, c: float) -> float:
    """The score m with ``a ln m - b ln(1 - m) + c = 0`` (NaN where there is none)."""
    if a == b:
        return 1.0 / (1.0 + math.exp(c / a)) if a != 0 and abs(c / a) < 700 else math.nan

    def f(m: float) -> float:
        return a * math.log(m) - b * math.log1p(-m) + c

    lo, hi = 1e-300, 1.0 - 1e-16
    if not (f(lo) < 0 < f(hi) or f(lo) > 0 > f(hi)):
        return math.nan
    return float(optimize.brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps))


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
