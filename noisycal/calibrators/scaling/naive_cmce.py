"""The naive CMCE temperature of the set-mass calibration paper.

From "Adaptive Set-Mass Calibration with Conformal Prediction" (Section 3): one
temperature chosen on a grid to minimise the calibration set's CMCE."""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from ..._util.types import ArrayLike
from ..._util.validation import check_choice, check_n_bins
from ...exceptions import IdentifiabilityWarning
from ...metrics.cmce import cmce_value, set_inputs
from .._base import check_eps, record_fit_target
from .._inputs import EPS, base_probs, score_matrix
from ..conformal.split import MatrixInput

__all__ = ["NaiveCMCETemperature", "REFERENCE_TAU_GRID"]

#: The naive CMCE temperature grid of the authors' CIFAR configuration,
#: ``linspace(1e-3, 100, 100)`` (a step of about 1.01; no value in (0.001, 1.011)).
REFERENCE_TAU_GRID = np.linspace(1e-3, 1e2, 100)


class NaiveCMCETemperature(MatrixInput):
    """One temperature chosen on a grid to minimise the calibration set's CMCE.

    "Adaptive Set-Mass Calibration with Conformal Prediction", Section 3 ("naive"):
    CMCE is not differentiable, so the temperature is searched over a grid, which the
    paper does not give. The default is the authors' CIFAR grid
    :data:`REFERENCE_TAU_GRID` (``linspace(1e-3, 100, 100)``, which has no value between
    0.001 and 1.011); ``grid='log'`` uses ``geomspace(0.05, 20, 400)``, and any
    increasing array of positive temperatures may be given. Ties go to the first grid
    minimum. Accepts any target (the CMCE of :func:`noisycal.cmce`).

    Parameters
    ----------
    grid : {'reference', 'log'} or array-like, default='reference'
    n_bins : int, default=25
    weighted : bool, default=True
    eps : float, default=1e-6

    Attributes
    ----------
    temperature_ : float
    grid_ : ndarray
    cmce_ : ndarray
        The calibration CMCE at every grid value.
    status_, message_ : str
        'ok', or 'boundary' when the minimum is at an end of the grid (warns).
    """

    _fitted_attr = "temperature_"

    def __init__(self, *, grid: object = "reference", n_bins: int = 25, weighted: bool = True,
                 eps: float = EPS) -> None:
        self.grid = grid
        self.n_bins = n_bins
        self.weighted = weighted
        self.eps = eps

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> NaiveCMCETemperature:
        """Pick the grid temperature with the smallest CMCE.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
        target : Target, matrix or labels

        Returns
        -------
        self
        """
        if isinstance(self.grid, str):
            check_choice(self.grid, "grid", ("reference", "log"))
            grid = REFERENCE_TAU_GRID if self.grid == "reference" else np.geomspace(0.05, 20,
                                                                                    400)
        else:
            grid = np.asarray(self.grid, dtype=np.float64)
            if grid.ndim != 1 or grid.size < 1 or not np.all(np.isfinite(grid)) \
                    or np.any(grid <= 0):
                raise ValueError("grid must be 'reference', 'log' or a 1-D array of positive "
                                 "finite temperatures")
        if not isinstance(self.weighted, bool | np.bool_):
            raise ValueError(f"weighted must be True or False, got {self.weighted!r}")
        eps = check_eps(self.eps)
        x = score_matrix(probs, logits, eps)
        P0 = base_probs(x)
        _, y, T = set_inputs(P0, target, None)
        record_fit_target(self, target)
        n_bins = check_n_bins(self.n_bins, P0.size)
        values = np.array([cmce_value(softmax(x.S / t, axis=1), y, T, n_bins,
                                      bool(self.weighted)) for t in grid])
        i = int(np.argmin(values))
        self.grid_, self.cmce_ = grid, values
        self.temperature_ = float(grid[i])
        self.n_classes_, self.eps_ = x.S.shape[1], eps
        if grid.size > 1 and i in (0, grid.size - 1):
            self._set_status("boundary", f"the smallest CMCE is at the grid's end "
                             f"(tau = {grid[i]:.6g}); widen the grid", IdentifiabilityWarning)
        else:
            self._set_status("ok", "", None)
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """``softmax(s / temperature_)``.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)

        Returns
        -------
        ndarray of shape (n, n_classes)
        """
        self._check_fitted()
        x = score_matrix(probs, logits, self.eps_)
        if x.S.shape[1] != self.n_classes_:
            raise ValueError(f"{x.given} must have {self.n_classes_} columns like the fit")
        Q = softmax(x.S / self.temperature_, axis=1)
        return Q[:, 1] if x.binary else Q

