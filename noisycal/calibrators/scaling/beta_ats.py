"""Beta calibration and adaptive temperature scaling, and where the other scaling maps live.

The scaling maps (temperature, vector, Platt, matrix and Dirichlet scaling), fitted to
any target, are in :mod:`noisycal.calibrators.scaling.temperature` and
:mod:`noisycal.calibrators.scaling.multiclass`; :class:`BetaCalibration` (Kull, Silva Filho &
Flach, 2017) and :class:`AdaptiveTemperatureScaling` (Joy et al., 2023, in the form of
"Confidence Calibration under Ambiguous Ground Truth") are here and share their fitting
code. Histogram binning is in :mod:`noisycal.calibrators.binning`.

References
----------
Joy, T., Pinto, F., Lim, S.-N., Torr, P. H. S. & Dokania, P. K. (2023). Sample-dependent
adaptive temperature scaling for improved calibration. AAAI.

Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beta calibration: a well-founded and
easily implemented improvement on logistic calibration for binary classifiers. AISTATS.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import optimize
from scipy.special import softmax, softplus

from ..._util.types import ArrayLike
from ..._util.validation import check_choice, check_real
from ...exceptions import IdentifiabilityWarning
from .._base import check_box
from .._inputs import EPS
from .multiclass import (
    ATS_MIN_TEMPERATURE,
    N_ATS_FEATURES,
    _doc,
    _LbfgsMap,
    _PerItemTemperature,
)
from .temperature import TemperatureScaling

__all__ = ["BetaCalibration", "BETA_PARAMETERS", "AdaptiveTemperatureScaling",
           "ats_features", "ATS_MAX_LOGIT"]

#: The parametrisations of beta calibration (Kull, Silva Filho & Flach, 2017, Section 3).
BETA_PARAMETERS = ("abm", "ab", "am")

#: Default floor of beta calibration's ``probs=`` before the logarithm: the smallest normal
#: float64, so only scores of exactly 0 or 1 (and subnormal ones) are floored and the fit on
#: probabilities is the maximum-likelihood fit of the beta family on the scores as given.
BETA_EPS = float(np.finfo(np.float64).tiny)

#: Largest ``|logit|`` adaptive temperature scaling accepts: its first feature is the
#: largest logit, whose variance (the features are standardised) must stay in float64.
ATS_MAX_LOGIT = 1e150


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
    eps : float, default=np.finfo(np.float64).tiny (about 2.2e-308)
        Floor of ``probs=`` before the logarithm: ``ln max(s, eps)`` and
        ``ln max(1 - s, eps)``, so scores of exactly 0 or 1 are usable (``0 < eps < 0.5``).
        The default floors only those (and subnormal scores): every other score enters
        with its own logarithm, so the default fit is the maximum-likelihood beta map of
        the scores as given (a larger floor such as the 1e-6 of the other maps merges
        all scores below it and moves the fit away from that maximum). A score of exactly
        1 stands for ``1 - s`` below the input's resolution (``sigmoid(z)`` rounds to 1 in
        float64 for z above about 37): ``1 - s`` is floored at that resolution (float64
        1.1e-16, float32 6.0e-8) when ``eps`` is smaller; pass ``logits=`` to keep the
        information. ``logits=`` are never clipped: ``ln s = log_sigmoid(z)`` and
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
        the target); ``'separation'`` when the fitted map separates a one-hot target
        (the loss has no minimum: the slopes would grow without limit); ``'boundary'``
        when a parameter ended on the box; ``'not_converged'``. Any status but 'ok' warns.

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

    def __init__(self, *, parameters: str = "abm", monotone: bool = True,
                 eps: float = BETA_EPS,
                 bounds: tuple[float, float] = (-100.0, 100.0), loss: str = "auto",
                 max_iter: int = 2000) -> None:
        self.parameters = parameters
        self.monotone = monotone
        self.eps = eps
        self.bounds = bounds
        self.loss = loss
        self.max_iter = max_iter

    def _eta(self, S: np.ndarray) -> np.ndarray:
        return _beta_eta(S, self.a_, self.b_, self.c_)

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
                              model_lower=np.array([self.monotone, False]),
                              eta_of=lambda th: _beta_eta(S, th[0], th[0], th[1]))
            a, b, c = float(theta[0]), float(theta[0]), float(theta[1])
        elif kind == "ab":
            box = [(a_lo, hi), (a_lo, hi)]
            theta = self._run("beta_ab", S, T, [np.array([1.0, 1.0])], box, why,
                              model_lower=np.array([self.monotone] * 2),
                              eta_of=lambda th: _beta_eta(S, th[0], th[1],
                                                          (th[0] - th[1]) * math.log(2.0)))
            a, b = float(theta[0]), float(theta[1])
            c = (a - b) * math.log(2.0)
        else:
            box = [(a_lo, hi), (a_lo, hi), (lo, hi)]
            theta = self._run("beta_abm", S, T, [np.array([1.0, 1.0, 0.0])], box, why,
                              model_lower=np.array([self.monotone] * 2 + [False]),
                              eta_of=lambda th: _beta_eta(S, *th))
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


def _beta_eta(S: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """The beta map's (n, 2) scores ``[0, a ln p - b ln(1 - p) + c]`` of the columns
    ``S = [ln(1 - p), ln p]`` (for the separation check)."""
    return np.column_stack([np.zeros(S.shape[0]), a * S[:, 1] - b * S[:, 0] + c])


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


def ats_features(S: np.ndarray) -> np.ndarray:
    """The features of adaptive temperature scaling, shape (n, 4).

    ``phi(z) = [max_k z_k, H(softmax(z)) / log K, p_(1) - p_(2), p_(1)]``, with
    ``p_(1) >= p_(2)`` the two largest probabilities of ``softmax(z)`` ("Confidence
    Calibration under Ambiguous Ground Truth", Appendix L).

    Parameters
    ----------
    S : ndarray of shape (n, K)
        Scores (logits, or log-probabilities), K >= 2.

    Returns
    -------
    ndarray of shape (n, 4)

    Raises
    ------
    ValueError
        If a score's magnitude exceeds ``ATS_MAX_LOGIT`` (1e150): the features' variance
        would overflow float64.
    """
    top = float(np.max(np.abs(S)))
    if top > ATS_MAX_LOGIT:
        raise ValueError(f"logits reach |z| = {top:.3g}: adaptive temperature scaling "
                         f"accepts |logits| <= {ATS_MAX_LOGIT:g} (its features are "
                         "standardised by their variance, which would overflow float64)")
    P = softmax(S, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.sum(np.where(P > 0, P * np.log(P), 0.0), axis=1)
    top2 = -np.sort(-P, axis=1)[:, :2]
    return np.column_stack([S.max(axis=1), H / math.log(S.shape[1]),
                            top2[:, 0] - top2[:, 1], top2[:, 0]])


class AdaptiveTemperatureScaling(_PerItemTemperature, _LbfgsMap):
    """Adaptive temperature scaling: one temperature per item from features of its scores.

    Joy et al. (2023), in the form that "Confidence Calibration under Ambiguous Ground
    Truth" (Tao, Luo, Dong & Xu, 2026, Appendix L) uses as its ATS baseline:

    .. math:: T_i = \\operatorname{softplus}(w^\\top \\tilde\\phi(z_i) + b) + 0.1,
              \\qquad q_i = \\operatorname{softmax}(z_i / T_i),

    with ``phi(z) = [max_k z_k, H(softmax(z)) / log K, p_(1) - p_(2), p_(1)]``
    (:func:`ats_features`) and ``phi~`` its standardisation by the mean and standard
    deviation over the fitting items (a constant feature keeps scale 1). The loss is the
    mean loss against the target (log loss for targets on the simplex, so the voted-label
    NLL of the paper with voted labels, and the soft cross-entropy with soft ones; the
    affine Brier loss for targets that leave it) plus ``reg_lambda * ||w||^2``.

    The paper leaves the optimiser, the standardisation and the start open; our choices:
    L-BFGS-B on JAX gradients (deterministic, instead of the suggested Adam), features
    standardised, and one start at ``w = 0, b = softplus^-1(T_TS - 0.1)`` where T_TS is
    the exact temperature-scaling fit to the same target (so the fit is never worse than
    temperature scaling on the fitting loss; the loss is not convex in (w, b)).

    Parameters
    ----------
    reg_lambda : float, default=1e-3
        Weight of the l2 penalty on w (>= 0).
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (``0 < eps < 0.5``); logits are never
        clipped.
    bounds : (float, float), default=(-50.0, 50.0)
        The box ``(low, high)`` of w and b.
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.
    max_iter : int, default=2000
        L-BFGS-B iteration limit.

    Attributes
    ----------
    coef_ : ndarray of shape (4,)
        w, on the standardised features.
    intercept_ : float
        b.
    feature_mean_, feature_scale_ : ndarray of shape (4,)
        The standardisation of the features.
    ts_temperature_ : float
        The temperature-scaling fit the optimiser starts from.
    mean_temperature_ : float
        The mean of ``T_i`` over the fitting items (the "T" the paper's tables report
        for ATS, presumably).
    n_classes_, binary_, input_, eps_, loss_, objective_, n_iter_, at_bound_ :
        As for :class:`VectorScaling`.
    status_, message_ : str
        ``'ok'``; ``'not_identified'`` when every score row is constant; ``'boundary'``
        when a parameter ended on the box; ``'not_converged'``;
        ``'start_not_ok'`` when the temperature-scaling start had a status other than
        'ok' (separable or infinite temperature). Any status but 'ok' warns.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(3000, 4)) * 3
    >>> y = (np.exp(z / 2).cumsum(1) / np.exp(z / 2).sum(1, keepdims=True)
    ...      > rng.random((3000, 1))).argmax(1)
    >>> ats = nc.calibrators.AdaptiveTemperatureScaling().fit(logits=z, target=y)
    >>> ats.status_, round(ats.ts_temperature_, 1), ats.predict_temperature(logits=z).shape
    ('ok', 2.1, (3000,))
    """

    def __init__(self, *, reg_lambda: float = 1e-3, eps: float = EPS,
                 bounds: tuple[float, float] = (-50.0, 50.0), loss: str = "auto",
                 max_iter: int = 2000) -> None:
        self.reg_lambda = reg_lambda
        self.eps = eps
        self.bounds = bounds
        self.loss = loss
        self.max_iter = max_iter

    def _standardised(self, S: np.ndarray) -> np.ndarray:
        return (ats_features(S) - self.feature_mean_) / self.feature_scale_

    def _temperatures(self, S: np.ndarray) -> np.ndarray:
        a = self._standardised(S) @ self.coef_ + self.intercept_
        return softplus(a) + ATS_MIN_TEMPERATURE


    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> AdaptiveTemperatureScaling:
        """Fit w and b to a target."""
        lam = check_real(self.reg_lambda, "reg_lambda", minimum=0.0)
        lo, hi = check_box(self.bounds, positive=False)
        x, T = self._prepare(probs, logits, target)
        S = x.S
        phi = ats_features(S)
        self.feature_mean_ = phi.mean(axis=0)
        scale = phi.std(axis=0)
        self.feature_scale_ = np.where(scale > 0, scale, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the start's status is reported below
            ts = TemperatureScaling(eps=self.eps, loss=self.loss_).fit(
                **{x.given: x.raw}, target=target)
        self.ts_temperature_ = float(ts.temperature_)
        b0 = float(np.log(np.expm1(max(ts.temperature_ - ATS_MIN_TEMPERATURE, 1e-8))))
        why = None if np.any(np.ptp(S, axis=1) > 0) else (
            "every score row is constant, so the temperatures do not enter the map")
        stacked = np.column_stack([S, (phi - self.feature_mean_) / self.feature_scale_])
        start = np.r_[np.zeros(N_ATS_FEATURES), np.clip(b0, lo, hi)]
        theta = self._run("adaptive", stacked, T, [start], [(lo, hi)] * (N_ATS_FEATURES + 1),
                          why, lam=lam)
        self.coef_ = theta[:N_ATS_FEATURES]
        self.intercept_ = float(theta[N_ATS_FEATURES])
        self.reg_lambda_ = lam
        self.mean_temperature_ = float(np.mean(self._temperatures(S)))
        if self.status_ == "ok" and ts.status_ != "ok":
            self._set_status("start_not_ok", f"the temperature-scaling start has status "
                             f"{ts.status_!r}: {ts.message_}", IdentifiabilityWarning)
        return self
