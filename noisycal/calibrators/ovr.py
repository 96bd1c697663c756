"""One-vs-rest binary maps with renormalisation.

From "Adaptive Set-Mass Calibration with Conformal Prediction", Appendix F, Eq. 8: a
binary calibrator g_k per class on that class's score, ``q_k = g_k(s_k)``, then
``p_k = q_k / sum_j q_j``.

With many classes and a small calibration set some classes are rare or absent, and the
per-class fits then reach their boundary (reported per class); the renormalised
predictions can lose accuracy, as the paper's iNaturalist table shows.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit

from .._util.types import ArrayLike
from ..exceptions import IdentifiabilityWarning
from ._base import check_eps, record_fit_target
from ._inputs import EPS, base_probs, fit_target, score_matrix
from .conformal.split import MatrixInput
from .isotonic import IsotonicCalibration
from .scaling.multiclass import PlattScaling

__all__ = ["OneVsRestPlatt", "OneVsRestIsotonic"]


def _renormalise(q: np.ndarray) -> np.ndarray:
    """Rows of q divided by their sums; a row summing to 0 becomes uniform."""
    tot = q.sum(axis=1, keepdims=True)
    return np.where(tot > 0, q / np.where(tot > 0, tot, 1.0), 1.0 / q.shape[1])


def _class_status(cal: MatrixInput, st: list[str]) -> None:
    bad = [k for k, s in enumerate(st) if s != "ok"]
    if bad:
        cal._set_status("class_not_ok", f"{len(bad)} of {len(st)} class fits are not ok "
                        f"(classes {bad[:10]}{'...' if len(bad) > 10 else ''}: "
                        f"{sorted(set(st[k] for k in bad))}); see class_status_",
                        IdentifiabilityWarning)
    else:
        cal._set_status("ok", "", None)


class OneVsRestPlatt(MatrixInput):
    """One-vs-rest Platt scaling: ``sigmoid(u_k s_k + v_k)`` per class, renormalised.

    Each class's map is :class:`~noisycal.calibrators.PlattScaling` fitted on the binary
    problem "class k or not" with the target column ``T[:, k]`` (any target), on the
    logit ``s_k`` (or ``log max(p_k, eps)`` for ``probs=``). This is the unregularised
    maximum-likelihood fit in the box ``bounds``; the authors' code uses scikit-learn's
    L2-penalised logistic regression (C = 1), which differs slightly on small classes.
    A row whose maps all give 0 gets the uniform distribution.

    Parameters
    ----------
    eps : float, default=1e-6
    bounds : (float, float), default=(-10.0, 10.0)
    max_iter : int, default=2000

    Attributes
    ----------
    slope_, intercept_ : ndarray of shape (n_classes,)
    class_status_ : list of str
        Each class fit's status.
    n_classes_, binary_, input_ : int, bool, str
    status_, message_ : str
        'ok', or 'class_not_ok' when some class fits are not 'ok' (warns once).
    """

    _fitted_attr = "slope_"

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (-10.0, 10.0),
                 max_iter: int = 2000) -> None:
        self.eps = eps
        self.bounds = bounds
        self.max_iter = max_iter

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> OneVsRestPlatt:
        """Fit one binary Platt map per class.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)
        target : Target, matrix or labels

        Returns
        -------
        self
        """
        eps = check_eps(self.eps)
        x = score_matrix(probs, logits, eps)
        T = fit_target(target, x)
        record_fit_target(self, target)
        K = x.S.shape[1]
        u, v, st = np.empty(K), np.empty(K), []
        for k in range(K):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = PlattScaling(eps=eps, bounds=self.bounds, loss="log",
                                 max_iter=self.max_iter).fit(logits=x.S[:, k], target=T[:, k])
            u[k], v[k] = m.slope_, m.intercept_
            st.append(m.status_)
        self.slope_, self.intercept_, self.class_status_ = u, v, st
        self.n_classes_, self.binary_, self.input_, self.eps_ = K, x.binary, x.given, eps
        _class_status(self, st)
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Renormalised one-vs-rest probabilities.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)

        Returns
        -------
        ndarray of shape (n,) (binary 1-D fit) or (n, n_classes)
        """
        self._check_fitted()
        x = score_matrix(probs, logits, self.eps_)
        if x.S.shape[1] != self.n_classes_ or x.binary != self.binary_:
            raise ValueError(f"{x.given} must have the shape the map was fitted on")
        P = _renormalise(expit(x.S * self.slope_ + self.intercept_))
        return P[:, 1] if self.binary_ else P


class OneVsRestIsotonic(MatrixInput):
    """One-vs-rest isotonic regression: a non-decreasing map of ``p_k`` per class,
    renormalised.

    Each class's map is the binary :class:`~noisycal.calibrators.IsotonicCalibration` of
    the target column ``T[:, k]`` on the softmax probability ``p_k`` (as in the authors'
    code, not on the logit). Where every class map gives 0 the authors' code leaves the
    row at zero (off the simplex); here it becomes uniform. A class absent from the
    calibration data gets the constant map 0 (status 'constant', reported per class).

    Parameters
    ----------
    interpolation : {'linear', 'step'}, default='linear'
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (only used to turn probabilities into
        scores; the maps act on the probabilities).

    Attributes
    ----------
    maps_ : list of IsotonicCalibration
    class_status_ : list of str
    n_classes_, binary_, input_ : int, bool, str
    status_, message_ : str
        'ok', or 'class_not_ok' when some class maps are not 'ok' (warns once).
    """

    _fitted_attr = "maps_"

    def __init__(self, *, interpolation: str = "linear", eps: float = EPS) -> None:
        self.interpolation = interpolation
        self.eps = eps

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> OneVsRestIsotonic:
        """Fit one isotonic map per class.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)
        target : Target, matrix or labels

        Returns
        -------
        self
        """
        eps = check_eps(self.eps)
        x = score_matrix(probs, logits, eps)
        T = fit_target(target, x)
        record_fit_target(self, target)
        P = base_probs(x)
        maps, st = [], []
        for k in range(P.shape[1]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = IsotonicCalibration(interpolation=self.interpolation).fit(
                    probs=P[:, k], target=T[:, k])
            maps.append(m)
            st.append(m.status_)
        self.maps_, self.class_status_ = maps, st
        self.n_classes_, self.binary_, self.input_, self.eps_ = P.shape[1], x.binary, \
            x.given, eps
        _class_status(self, st)
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Renormalised one-vs-rest probabilities.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)

        Returns
        -------
        ndarray of shape (n,) (binary 1-D fit) or (n, n_classes)
        """
        self._check_fitted()
        x = score_matrix(probs, logits, self.eps_)
        if x.S.shape[1] != self.n_classes_ or x.binary != self.binary_:
            raise ValueError(f"{x.given} must have the shape the map was fitted on")
        P = base_probs(x)
        q = np.column_stack([m.predict_proba(probs=P[:, k])
                             for k, m in enumerate(self.maps_)])
        out = _renormalise(q)
        return out[:, 1] if self.binary_ else out
