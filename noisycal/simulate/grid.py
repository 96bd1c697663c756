"""The Gaussian-grid generator of "Adaptive Set-Mass Calibration with Conformal Prediction".

It is re-exported by :mod:`noisycal.simulate`."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import softmax

from .._util.jax import as_numpy_rng
from .._util.types import Seed
from .._util.validation import check_int, check_real, check_seed

__all__ = ["GaussianGrid", "gaussian_grid"]


class GaussianGrid(NamedTuple):
    """Draws of :func:`gaussian_grid`: inputs, labels and the exact class probabilities.

    Attributes
    ----------
    x : ndarray of shape (n, 2)
    labels : ndarray of shape (n,)
    true_logits : ndarray of shape (n, K)
        ``-||x - mu_k||^2 / (2 sigma^2)``.
    true_probs : ndarray of shape (n, K)
        ``p(y = k | x) = softmax(true_logits)``.
    centers : ndarray of shape (K, 2)
    sigma : float
    """

    x: np.ndarray
    labels: np.ndarray
    true_logits: np.ndarray
    true_probs: np.ndarray
    centers: np.ndarray
    sigma: float


def gaussian_grid(n_items: int, n_classes: int, *, spacing: float = 1.0,
                  sigma_scale: float = 0.35, seed: Seed = 0) -> GaussianGrid:
    """The 2-D Gaussian-grid classes of "Adaptive Set-Mass Calibration with Conformal
    Prediction" (Section 5.1 and Appendix E), with exact p(y | x).

    Class centres lie on a square grid of side ``g = ceil(sqrt(K))`` and step ``spacing``
    centred at the origin (the first K points of the row-major grid, as in the authors'
    code); labels are uniform and ``x | y = k ~ N(mu_k, sigma^2 I)`` with
    ``sigma = sigma_scale * spacing``, so ``p(y = k | x)`` is the softmax of
    ``-||x - mu_k||^2 / (2 sigma^2)`` (computed in float64).

    Parameters
    ----------
    n_items, n_classes : int
        n and K (K >= 2).
    spacing : float, default=1.0
    sigma_scale : float, default=0.35
    seed : int or jax key, default=0

    Returns
    -------
    GaussianGrid
    """
    n = check_int(n_items, "n_items", minimum=1)
    K = check_int(n_classes, "n_classes", minimum=2)
    spacing = check_real(spacing, "spacing", minimum=0.0, strict=True)
    sigma = check_real(sigma_scale, "sigma_scale", minimum=0.0, strict=True) * spacing
    rng = as_numpy_rng(check_seed(seed))
    g = int(np.ceil(np.sqrt(K)))
    xs = (np.arange(g) - (g - 1) / 2) * spacing
    gx, gy = np.meshgrid(xs, xs)
    centers = np.column_stack([gx.ravel(), gy.ravel()])[:K]
    y = rng.integers(0, K, size=n)
    x = centers[y] + sigma * rng.standard_normal((n, 2))
    # row chunks of about a million distances: the same arithmetic as one broadcast,
    # without its (n, K, 2) temporary (n = 50,000 and K = 1,000 would need 800 MB)
    z = np.empty((n, K))
    step = max(1, 2**20 // K)
    for i in range(0, n, step):
        d2 = np.sum((x[i:i + step, None, :] - centers[None, :, :]) ** 2, axis=2)
        z[i:i + step] = -0.5 * d2 / sigma**2
    return GaussianGrid(x, y, z, softmax(z, axis=1), centers, float(sigma))
