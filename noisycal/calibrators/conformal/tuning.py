r"""The automatic choice of RAPS's ``k_reg`` and ``lam`` on a tuning split.

"Uncertainty Sets for Image Classifiers using Conformal Prediction" (Angelopoulos, Bates,
Malik and Jordan, ICLR 2021; Section 2.2 and the authors' ``pick_kreg`` and
``pick_lamda_size``) tunes the two penalty parameters on a part of the calibration data
that is then set aside: the conformal quantile comes from the other rows only, so the
sets keep their coverage guarantee (the tuned values do not depend on those rows):

* :math:`k_{reg}` is the :math:`1 - \alpha` quantile (the order statistic at or above
  it, numpy's ``'higher'``) of the rank, 1 for the most probable class, of the true
  label among the tuning rows: the set size beyond which a penalty is worth paying;
* :math:`\lambda` is the value of the grid :data:`LAMBDA_GRID` (the paper's) whose RAPS
  sets, calibrated on the tuning rows with that :math:`k_{reg}`, are smallest on
  average on the same rows (the first such value on ties).

The authors' code holds out 30% of the calibration data (:data:`TUNE_FRACTION`).
"""

from __future__ import annotations

import numpy as np

from .scores import conformal_quantile, nonconformity, prediction_sets

__all__ = ["LAMBDA_GRID", "TUNE_FRACTION", "pick_k_reg", "pick_lam"]

#: The paper's grid of penalties ``lam`` (``pick_lamda_size`` of the authors' code).
LAMBDA_GRID = (0.001, 0.01, 0.1, 0.2, 0.5)
#: Share of the calibration rows that tunes ``k_reg`` and ``lam`` (the authors' code).
TUNE_FRACTION = 0.3


def pick_k_reg(P: np.ndarray, labels: np.ndarray, alpha: float) -> int:
    """The :math:`1 - \\alpha` quantile ('higher') of the true labels' ranks (1-based).

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Base probabilities of the tuning rows.
    labels : int ndarray of shape (n,)
    alpha : float

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])
    >>> int(pick_k_reg(P, np.array([0, 2, 0, 1]), alpha=0.25))  # ranks 1, 2, 3, 2
    3
    """
    order = np.argsort(-P, axis=1, kind="stable")
    rank = np.argmax(order == np.asarray(labels)[:, None], axis=1) + 1
    return int(np.quantile(rank, 1.0 - alpha, method="higher"))


def pick_lam(P: np.ndarray, labels: np.ndarray, alpha: float, k_reg: int,
             u: np.ndarray | None, grid: tuple[float, ...] = LAMBDA_GRID
             ) -> tuple[float, np.ndarray]:
    """The penalty of ``grid`` whose RAPS sets are smallest on the tuning rows.

    Each candidate is calibrated on the tuning rows (its conformal quantile of their RAPS
    scores) and its sets are built for the same rows with the same uniforms.

    Parameters
    ----------
    P : ndarray of shape (n, K)
    labels : int ndarray of shape (n,)
    alpha : float
    k_reg : int
    u : ndarray of shape (n,) or None
        The rows' uniforms (randomised scores), or None (deterministic).
    grid : tuple of float, default=LAMBDA_GRID

    Returns
    -------
    lam : float
    mean_sizes : ndarray of shape (len(grid),)
    """
    sizes = np.empty(len(grid))
    for i, lam in enumerate(grid):
        s = nonconformity(P, labels, "raps", u=u, lam=lam, k_reg=k_reg)
        q = conformal_quantile(s, alpha)
        sizes[i] = prediction_sets(P, q, "raps", u=u, lam=lam, k_reg=k_reg).sum(1).mean()
    return float(grid[int(np.argmin(sizes))]), sizes
