"""Binary recalibration maps fitted to any target (naive, soft, corrected).

Paper 003, section 5 of its spec: temperature g_T(z) = sigmoid(s(z) / T) with
0.05 <= T <= 20, Platt g_{u,v}(z) = sigmoid(u s(z) + v) with -10 <= u, v <= 10, where
s(z) = logit(clip(z, eps, 1 - eps)), fitted by minimising the mean of
softplus(eta_i) - y_i eta_i. That is the log loss for targets in [0, 1] and stays convex
and well defined for corrected targets outside [0, 1], which are never clipped.
The projected histogram (J equal-width bins, bin value clip(mean target, 0, 1), empty
bins the projected overall mean) carries the Proposition 2 bound.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize
from scipy.special import expit, log_expit

from .._typing import ArrayLike
from .._validation import check_array, check_int, check_level
from ..metrics.binning import equal_width_bins
from ..targets import as_target_matrix

__all__ = ["TemperatureScaling", "PlattScaling", "HistogramBinning", "EPS"]

#: Default score clipping level eps of s(z) = logit(clip(z, eps, 1 - eps)) (a spec gap).
EPS = 1e-6


def _scores(probs: ArrayLike | None, logits: ArrayLike | None, eps: float) -> np.ndarray:
    """Positive-class log-odds s(z) from (n,) probabilities or logits (explicit)."""
    if (probs is None) == (logits is None):
        raise ValueError("give exactly one of probs= or logits= (binary: shape (n,))")
    if logits is not None:
        s = check_array(logits, "logits", ndim=1)
        return np.clip(s, math.log(eps / (1 - eps)), math.log((1 - eps) / eps))
    z = check_array(probs, "probs", ndim=1)
    if np.any((z < 0) | (z > 1)):
        raise ValueError("probs must lie in [0, 1]")
    z = np.clip(z, eps, 1 - eps)
    return np.log(z) - np.log1p(-z)


def _targets(target: object, n: int) -> np.ndarray:
    T = as_target_matrix(target, n, 2)
    return T[:, 1]


def _objective(eta: np.ndarray, y: np.ndarray) -> float:
    # softplus(eta) - y eta, written as -log sigmoid(-eta) - y eta (stable)
    return float(np.mean(-log_expit(-eta) - y * eta))


class _Base:
    """Shared sklearn-like plumbing (parameters in __init__, fitted attributes with _)."""

    def get_params(self, deep: bool = True) -> dict[str, Any]:  # noqa: ARG002
        return {k: getattr(self, k) for k in self._param_names}

    def set_params(self, **params: Any) -> _Base:
        for k, v in params.items():
            if k not in self._param_names:
                raise ValueError(f"unknown parameter {k!r}; parameters are {self._param_names}")
            setattr(self, k, v)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "objective_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Calibrated positive-class probabilities, shape (n,)."""
        self._check_fitted()
        return expit(self._eta(_scores(probs, logits, self.eps)))


class TemperatureScaling(_Base):
    """Binary temperature scaling g_T(z) = sigmoid(s(z) / T), 0.05 <= T <= 20.

    Parameters
    ----------
    eps : float, default=1e-6
        Scores are clipped to [eps, 1 - eps] before the logit.
    bounds : (float, float), default=(0.05, 20.0)
        Box for T (paper 003).

    Attributes
    ----------
    temperature_ : float
    objective_ : float
        Final mean loss (softplus form).
    at_bound_ : bool
        Whether T ended on a bound of the box.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> b = nc.simulate.binary_scores(20000, slope=0.5, seed=0)
    >>> cal = nc.calibrators.TemperatureScaling().fit(probs=b.p, target=b.y)
    >>> round(cal.temperature_, 1)
    2.0
    """

    _param_names = ("eps", "bounds")

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (0.05, 20.0)) -> None:
        self.eps = eps
        self.bounds = bounds

    def _eta(self, s: np.ndarray) -> np.ndarray:
        return s / self.temperature_

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> TemperatureScaling:
        """Fit T to a target (labels, a (n, 2) matrix, or a Target; any real values)."""
        s = _scores(probs, logits, self.eps)
        y = _targets(target, s.shape[0])
        lo, hi = self.bounds
        if not 0 < lo < hi:
            raise ValueError(f"bounds must satisfy 0 < low < high, got {self.bounds}")

        def f(logt: np.ndarray) -> tuple[float, np.ndarray]:
            t = math.exp(float(logt[0]))
            eta = s / t
            loss = _objective(eta, y)
            grad = np.mean((expit(eta) - y) * (-eta))  # d/dlogT
            return loss, np.array([grad])

        best = None
        for start in (0.0, math.log(lo) / 2, math.log(hi) / 2):
            res = optimize.minimize(f, np.array([start]), jac=True, method="L-BFGS-B",
                                    bounds=[(math.log(lo), math.log(hi))])
            if best is None or res.fun < best.fun:
                best = res
        self.temperature_ = float(math.exp(best.x[0]))
        self.objective_ = float(best.fun)
        self.at_bound_ = bool(np.isclose(self.temperature_, lo) or
                              np.isclose(self.temperature_, hi))
        return self


class PlattScaling(_Base):
    """Binary Platt scaling g(z) = sigmoid(u s(z) + v), -10 <= u, v <= 10.

    Attributes
    ----------
    slope_, intercept_ : float
        u and v.
    objective_ : float
    at_bound_ : bool
    """

    _param_names = ("eps", "bounds")

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (-10.0, 10.0)) -> None:
        self.eps = eps
        self.bounds = bounds

    def _eta(self, s: np.ndarray) -> np.ndarray:
        return self.slope_ * s + self.intercept_

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> PlattScaling:
        """Fit (u, v) to a target (any real values)."""
        s = _scores(probs, logits, self.eps)
        y = _targets(target, s.shape[0])
        lo, hi = self.bounds

        def f(p: np.ndarray) -> tuple[float, np.ndarray]:
            eta = p[0] * s + p[1]
            r = expit(eta) - y
            return _objective(eta, y), np.array([np.mean(r * s), np.mean(r)])

        best = None
        for start in ((1.0, 0.0), (0.5, 0.0), (2.0, 0.0)):
            res = optimize.minimize(f, np.array(start), jac=True, method="L-BFGS-B",
                                    bounds=[(lo, hi), (lo, hi)])
            if best is None or res.fun < best.fun:
                best = res
        self.slope_, self.intercept_ = (float(x) for x in best.x)
        self.objective_ = float(best.fun)
        self.at_bound_ = bool(np.any(np.isclose(best.x, lo) | np.isclose(best.x, hi)))
        return self


class HistogramBinning(_Base):
    """Fixed-bin projected histogram (paper 003, section 5.3; Proposition 2).

    J equal-width bins on the original score; each bin's value is the mean target of its
    fitting items projected onto [0, 1]; empty bins get the projected mean of all fitting
    targets.

    Parameters
    ----------
    n_bins : int, default=10

    Attributes
    ----------
    values_ : ndarray of shape (n_bins,)
        Projected bin values.
    raw_means_ : ndarray of shape (n_bins,)
        Unprojected bin means (NaN for empty bins).
    counts_ : ndarray of shape (n_bins,)
    """

    _param_names = ("n_bins",)

    def __init__(self, *, n_bins: int = 10) -> None:
        self.n_bins = n_bins

    def fit(self, *, probs: ArrayLike, target: object) -> HistogramBinning:
        """Fit bin values from (n,) scores in [0, 1] and a target."""
        J = check_int(self.n_bins, "n_bins", minimum=1)
        z = check_array(probs, "probs", ndim=1)
        if np.any((z < 0) | (z > 1)):
            raise ValueError("probs must lie in [0, 1]")
        y = _targets(target, z.shape[0])
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
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Bin values of the scores' bins."""
        self._check_fitted()
        if logits is not None or probs is None:
            raise ValueError("HistogramBinning takes probs= (scores in [0, 1])")
        z = check_array(probs, "probs", ndim=1)
        J = len(self.values_)
        return self.values_[equal_width_bins(z, J)]

    def bound(self, target: object, *, level: float = 0.9, channel_term: float = 0.0) -> float:
        """Proposition 2: ECE(g o f) <= d_ch + (B + 1) sqrt(2 (J log 2 + log(4/eta)) / n_rec).

        ``target`` is the corrected target the histogram was fitted to (its weights and
        channels give B); ``channel_term`` is d_ch (0 assumes exact channels).
        """
        self._check_fitted()
        level = check_level(level)
        det = getattr(target, "details", {})
        if "weights" not in det:
            raise ValueError("bound() needs the corrected Target the histogram was fitted to")
        alpha = np.asarray(det["weights"])
        C = np.asarray(det["confusion"])
        use = alpha > 0
        B = float(np.sum(alpha[use] / (C[use, 1, 1] - C[use, 0, 1])))
        n = int(self.counts_.sum())
        J = len(self.values_)
        return channel_term + (B + 1) * math.sqrt(
            2 * (J * math.log(2) + math.log(4 / (1 - level))) / n)
