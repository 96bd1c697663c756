"""Temperature scaling fitted exactly to any target, binary or multi-class.

``q_i = softmax(s_i / T)`` (Guo et al., 2017) on the score matrix of
:mod:`noisycal.calibrators._inputs` (logits as given, never clipped; probabilities as
``log(max(p, eps))``; binary 1-D scores as two-column log-probabilities, where the map is
``sigmoid(logit / T)``). With ``beta = 1/T`` and target rows ``t_i`` summing to 1, the
log loss is

.. math:: L(\\beta) = \\frac1n \\sum_i \\big[\\operatorname{logsumexp}(\\beta s_i)
          - \\beta \\langle t_i, s_i \\rangle\\big],

convex in beta, with derivative ``g(beta) = (1/n) sum_i E_{softmax(beta s_i)}[s_i] - m``,
``m = (1/n) sum_i <t_i, s_i>``. The first term is non-decreasing in beta (its derivative
is a variance), so the fit depends on the target only through the scalar ``m``, and T is
a decreasing function of ``m`` (Tao, Luo, Dong & Xu (2026), "Confidence Calibration under
Ambiguous Ground Truth", Section 2 and Eq. 2-3, for the family of targets; the
sufficient statistic is our observation). The fit is the exact root of ``g`` by a
safeguarded Halley iteration: each pass over the scores gives ``g``, its slope
``g'(beta) = (1/n) sum_i Var_{softmax(beta s_i)}[s_i]`` and ``g''`` (the mean third
central moment); Halley's step (cubic convergence) is kept inside a bracket of the root,
else Newton's, else bisection (:mod:`noisycal.calibrators.scaling.temperature_solver`). It starts
from the root on an evenly spaced subset of the items, refined by one single-precision
pass over all of them, and usually ends after one double-precision pass (the root to
about 1e-14, relative); the log loss at the fitted T is read off the last pass. The two
limits are decided exactly beforehand:

- ``g(0) >= 0``: the loss is non-decreasing in beta, the optimum is T -> infinity (uniform
  predictions): status ``'infinite_temperature'``;
- ``g(infinity) <= 0``, where ``g(infinity) = (1/n) sum_i mean_{k in argmax s_i} s_ik - m``:
  the loss falls all the way to T -> 0; for a target on the simplex the scores separate
  the target (every item's target mass sits on its top-scoring classes): status
  ``'separable'``; for a target outside the simplex the log loss is unbounded below:
  status ``'boundary'`` with the advice to use the affine Brier loss.

With the affine Brier loss (targets outside the simplex, ``loss='auto'``) there is no
sufficient statistic; T is found by L-BFGS-B on log T in the box.

References
----------
Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. (2017). On calibration of modern neural
networks. ICML.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize
from scipy.special import softmax

from ..._util.types import ArrayLike
from ...exceptions import ConvergenceWarning, IdentifiabilityWarning
from .._base import check_box, minimise_from_starts
from .._inputs import EPS, SoftmaxMap, softmax_loss
from .temperature_solver import (
    NewtonPass,
    newton_pass,
    solve_inverse_temperature,
    solve_with_loss,
)

__all__ = ["TemperatureScaling", "NewtonPass", "newton_pass", "solve_inverse_temperature"]


def _on_box(t: float, lo: float, hi: float) -> bool:
    """Whether T is on a bound of the box (relative tolerance only: a box may reach down
    to 1e-300)."""
    return bool(math.isclose(t, lo, rel_tol=1e-9) or math.isclose(t, hi, rel_tol=1e-9))


class TemperatureScaling(SoftmaxMap):
    """Temperature scaling ``softmax(s / T)``, one T, fitted exactly to any target.

    Binary (scores of shape (n,): ``sigmoid(logit / T)``) or multi-class (shape
    (n, n_classes)); Guo et al. (2017). With the log loss the fit is the exact root of the
    1-D convex problem in ``beta = 1/T`` (module docstring): T depends on the target only
    through ``m = mean_i <t_i, s_i>`` (``mean_target_score_``) and decreases in m. The
    limits T -> 0 (a separable target) and T -> infinity are reported as statuses, never
    clamped silently. The fitted T is kept in the box ``bounds`` ("Noisy-Label Calibration
    with Multiple Unreliable Labels", Section 5 and Appendix E.2, for the default box);
    an optimum outside it is reported (status ``'boundary'``, with the unconstrained
    value in ``unconstrained_temperature_``).

    Parameters
    ----------
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm, ``log(max(p, eps))`` (binary: the
        log-odds ``log max(p, eps) - log max(1 - p, eps)``); ``logits=`` are never
        clipped. Must satisfy ``0 < eps < 0.5``; ``fit`` keeps it as ``eps_`` for
        ``predict_proba``.
    bounds : (float, float), default=(0.05, 20.0)
        The box ``(low, high)`` for T, ``0 < low < high``.
    loss : {'auto', 'log', 'brier'}, default='auto'
        'log': the log loss (cross-entropy against the target rows); 'brier': the affine
        Brier loss ``sum_k (q_k^2 - 2 q_k t_k + t_k)`` (halved for binary 1-D scores),
        bounded below for any target; 'auto': 'brier' for targets that leave the simplex
        (a Target of kind 'corrected'), else 'log'.

    Attributes
    ----------
    temperature_ : float
        The fitted T (in the box).
    unconstrained_temperature_ : float
        The minimiser over all T > 0: equal to ``temperature_`` unless the status is
        'boundary', 'separable' (0.0) or 'infinite_temperature' (inf); NaN when not
        identified.
    mean_target_score_ : float
        ``m = (1/n) sum_i <t_i, s_i>``, the target's sufficient statistic.
    n_classes_ : int
        K (2 for binary 1-D scores).
    binary_ : bool
        Whether the fit was on 1-D positive-class scores (``predict_proba`` then returns
        positive-class probabilities).
    input_ : {'probs', 'logits'}
        The input of the fit.
    eps_, loss_ : float, str
        The floor and the loss ('log' or 'brier') the fit used.
    objective_ : float
        Mean loss at ``temperature_``.
    n_iter_ : int
        Double-precision passes of the Halley iteration over all the scores (or
        iterations of L-BFGS-B for the Brier loss).
    at_bound_ : bool
        Whether T is on a bound of the box.
    status_ : str
        ``'ok'``; ``'separable'`` (T -> 0, ``temperature_`` is the lower bound);
        ``'infinite_temperature'`` (T -> infinity, ``temperature_`` is the upper bound);
        ``'boundary'`` (a finite optimum outside the box, or the log loss unbounded below
        for a target outside the simplex); ``'not_identified'`` (every score row is
        constant: the loss does not depend on T, which stays 1); ``'not_converged'``.
        Any status but 'ok' comes with an :class:`~noisycal.IdentifiabilityWarning` or
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
    >>> z = np.array([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.3, 0.9]])
    >>> cal = nc.calibrators.TemperatureScaling().fit(logits=z, target=[0, 2, 1])
    >>> cal.predict_proba(logits=z).shape, round(cal.temperature_, 3)
    ((3, 3), 2.369)
    """

    _shift_invariant = True

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (0.05, 20.0),
                 loss: str = "auto") -> None:
        self.eps = eps
        self.bounds = bounds
        self.loss = loss

    def _eta(self, S: np.ndarray) -> np.ndarray:
        return S / self.temperature_

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> TemperatureScaling:
        """Fit T to a target.

        Parameters
        ----------
        probs : array-like of shape (n,) or (n, n_classes), optional
            Probabilities (binary: positive-class probabilities in [0, 1]; rows of a
            matrix sum to 1).
        logits : array-like of shape (n,) or (n, n_classes), optional
            Logits (binary: positive-class log-odds). Give exactly one of ``probs`` and
            ``logits``.
        target : Target, array-like of shape (n, n_classes) or (n,)
            A Target or matrix (rows summing to 1, in [0, 1] unless a Target of kind
            'corrected') or integer labels; for binary 1-D scores also a 1-D float
            positive-class target in [0, 1].

        Returns
        -------
        self : TemperatureScaling

        Raises
        ------
        ValueError
            If an input is missing, not finite, of the wrong shape or length, or not
            aligned (pandas predictions whose index differs from the target's items),
            target rows do not sum to 1, or ``eps``, ``bounds`` or ``loss`` is invalid.
        """
        lo, hi = check_box(self.bounds, positive=True)
        x, T, codes = self._prepare_codes(probs, logits, target)  # labels: no one-hot T
        S = x.S
        ts = (np.einsum("ij,ij->i", T, S) if codes is None
              else S[np.arange(S.shape[0]), codes])
        m = float(np.mean(ts))
        self.mean_target_score_ = m
        smax, total = S.max(axis=1), float(S.sum()) if x.total is None else x.total
        # every row constant (T not identified): the rows' spread about their maxima is
        # then rounding; the row minima are compared only when it is that small
        spread = float(np.mean(smax)) - total / S.size
        if (not spread > 1e-10 * float(np.mean(np.abs(smax)))
                and np.all(smax == S.min(axis=1))):
            self.temperature_, self.unconstrained_temperature_, self.n_iter_ = 1.0, math.nan, 0
            T = np.eye(S.shape[1])[codes] if T is None else T
            self._finish(S, T, lo, hi, "not_identified", "")
            return self
        if self.loss_ == "log":
            r = None if T is None else T.sum(axis=1)
            r = None if r is None or np.all(r == 1.0) else r
            beta, kind, self.n_iter_, loss_at = solve_with_loss(S, r, ts, smax, total=total)
            t_star = {"root": 1.0 / beta if beta > 0 else math.inf,
                      "infinite_temperature": math.inf, "zero_temperature": 0.0,
                      "not_converged": math.nan}[kind]
            self.unconstrained_temperature_ = t_star
            self.temperature_ = float(np.clip(t_star, lo, hi)) if kind != "not_converged" \
                else 1.0
            # the objective at temperature_ (from the last pass unless T was clipped)
            objective = loss_at(1.0 / self.temperature_)
            self._finish(S, T, lo, hi, kind, "", objective=objective)
            return self
        best = self._fit_brier(S, T, lo, hi, x.binary)
        self.temperature_ = float(math.exp(best.x[0]))
        on_box = _on_box(self.temperature_, lo, hi)
        self.unconstrained_temperature_ = math.nan if on_box else self.temperature_
        self.n_iter_ = int(best.nit)
        self._finish(S, T, lo, hi, "root" if best.success else "not_converged",
                     str(best.message))
        return self

    def _fit_brier(self, S: np.ndarray, T: np.ndarray, lo: float, hi: float,
                   binary: bool) -> optimize.OptimizeResult:
        """L-BFGS-B on log T in the box for the affine Brier loss, from three starts."""
        half = 0.5 if binary else 1.0

        def f(u: np.ndarray) -> tuple[float, np.ndarray]:
            beta = math.exp(-float(u[0]))
            q = softmax(beta * S, axis=1)
            mean = np.sum(q * S, axis=1, keepdims=True)
            dq = q * (S - mean)  # d q / d beta
            value = half * float(np.mean(np.sum(q * q - 2.0 * q * T + T, axis=1)))
            d_beta = half * float(np.mean(np.sum((2.0 * q - 2.0 * T) * dq, axis=1)))
            return value, np.array([-beta * d_beta])  # d/du, u = log T

        starts = [np.array([x]) for x in (0.0, math.log(lo) / 2, math.log(hi) / 2)]
        return minimise_from_starts(f, starts, [(math.log(lo), math.log(hi))])

    def _finish(self, S: np.ndarray, T: np.ndarray, lo: float, hi: float, kind: str,
                optimiser: str, objective: float | None = None) -> None:
        """Set ``objective_`` (unless given), ``at_bound_``, ``status_`` and ``message_``
        (and warn)."""
        self.objective_ = (softmax_loss(self._eta(S), T, self.loss_, self.binary_)
                           if objective is None else objective)
        t = self.temperature_
        self.at_bound_ = _on_box(t, lo, hi)
        box = f"bounds={self.bounds!r}"
        W = IdentifiabilityWarning
        if kind == "not_identified":
            self._set_status(kind, "every score row is constant (binary: every score is 0.5, "
                             "log-odds 0), so the loss does not depend on T and T is not "
                             "identified; temperature_ is the start value 1", W)
        elif kind == "not_converged":
            self._set_status(kind, "the optimiser stopped before converging"
                             + (f": {optimiser}" if optimiser else ""), ConvergenceWarning)
        elif kind == "infinite_temperature":
            self._set_status(kind, "the loss decreases as T grows without limit (g(0) >= 0: "
                             "the target's mean score m is no larger than the mean "
                             "class-averaged score, so uniform predictions fit best); "
                             f"temperature_ is the upper end of {box}", W)
        elif kind == "zero_temperature" and self._outside:
            self._set_status("boundary", "the log loss is unbounded below as T -> 0 for "
                             "this target outside [0, 1] (g stays negative); temperature_ "
                             f"is the lower end of {box}: use loss='brier'", W)
        elif kind == "zero_temperature":
            self._set_status("separable", "the scores separate the target: every item's "
                             "target mass sits on its top-scoring class(es), so the loss "
                             "falls as T -> 0 (hard argmax predictions); temperature_ is "
                             f"the lower end of {box}", W)
        elif self.at_bound_:
            u = self.unconstrained_temperature_
            where = (f"the unconstrained minimum T = {u:.6g} lies outside it"
                     if np.isfinite(u) and u != t else
                     "the minimum over the box is on its edge (the scores carry little "
                     "information about the target, or separate it)")
            self._set_status("boundary", f"the fit ended on the box {box}: {where}", W)
        else:
            self._set_status("ok", "", None)
