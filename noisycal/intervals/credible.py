"""The credible interval of NC-ECE.

:func:`equal_tailed` (defined in ``noisycal._stats`` so that the engines can use it too)
is the one equal-tailed quantile rule of the library (bootstrap percentile intervals,
per-bin bands, credible intervals of posterior draws).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._jax import as_numpy_rng
from .._stats import equal_tailed
from ..correction import corrected_from_channels

__all__ = ["equal_tailed", "nc_ece_credible"]


def nc_ece_credible(conf: np.ndarray, bins: np.ndarray, target: Any, level: float, *,
                    statistic: Callable[..., Any], seed: Any = 0, max_draws: int = 1000
                    ) -> tuple[tuple[float, float], dict, np.ndarray]:
    """Credible interval of the binned (positive-class) NC-ECE.

    For each posterior draw of the channels (a NUTS fit) the corrected target is rebuilt
    with those channels (weights held at the point estimate's), and the NC-ECE is
    computed with Bayesian-bootstrap item weights (Dirichlet(1, ..., 1)), so both the
    annotator channel uncertainty and the sampling of items enter.

    Parameters
    ----------
    conf : ndarray of shape (n_items,)
        Positive-class probabilities.
    bins : ndarray of int, shape (n_items,)
        Bin index of each item (from the metric's bins).
    target : Target
        A corrected target built from a NUTS fit (``details['channel_draws']``).
    level : float
        Coverage fraction.
    statistic : callable
        ``statistic(weights, u, conf, bins) -> float``, the binned NC-ECE of corrected
        labels ``u`` under item weights (supplied by :mod:`noisycal.metrics`).
    seed : int or jax key, default=0
    max_draws : int, default=1000
        At most this many channel draws (a seeded subsample).

    Returns
    -------
    interval : (low, high)
    details : dict
        ``n_channel_draws``.
    values : ndarray
        The per-draw NC-ECE values.
    """
    det = getattr(target, "details", {})
    if getattr(target, "kind", None) != "corrected" or det.get("channel_draws") is None:
        raise ValueError("interval='credible' needs a corrected target built from a NUTS fit "
                         "(nc.targets.corrected(annotations, fit) with method='nuts')")
    draws = np.asarray(det["channel_draws"])
    rng = as_numpy_rng(seed)
    if draws.shape[0] > max_draws:
        draws = draws[rng.choice(draws.shape[0], max_draws, replace=False)]
    vals = np.empty(draws.shape[0])
    for d, C in enumerate(draws):
        u = corrected_from_channels(det["ratings"], det["observed"], det["informative"],
                                    det["weights"], C)[:, 1]
        w = rng.exponential(size=conf.size)
        vals[d] = float(statistic(w / w.sum(), u, conf, bins))
    return equal_tailed(vals, level), {"n_channel_draws": int(draws.shape[0])}, vals
