"""Beta calibration of binary scores, and where the other scaling maps live.

The scaling maps (temperature, vector, Platt, matrix and Dirichlet scaling), fitted to
any target, are in :mod:`noisycal.calibrators.temperature` and
:mod:`noisycal.calibrators.multiclass`; :class:`BetaCalibration` (Kull, Silva Filho &
Flach, 2017) is here and shares their fitting code. Histogram binning is in
:mod:`noisycal.calibrators.binning`.

References
----------
Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beta calibration: a well-founded and
easily implemented improvement on logistic calibration for binary classifiers. AISTATS.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from .._typing import ArrayLike
from .._validation import check_choice
from .._warnings import IdentifiabilityWarning
from ._base import check_box
from ._inputs import EPS
from .multiclass import _doc, _LbfgsMap

__all__ = ["BetaCalibration", "BETA_PARAMETERS"]

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
