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
from ..correction import channels_invertible, corrected_from_channels

__all__ = ["equal_tailed", "nc_ece_credible", "check_credible_target"]


def check_credible_target(target: Any) -> dict:
    """Check that ``target`` is a corrected target built from a NUTS fit; its details.

    Parameters
    ----------
    target : object
        The metric's target.

    Returns
    -------
    dict
    """
    det = getattr(target, "details", {})
    if getattr(target, "kind", None) != "corrected" or det.get("channel_draws") is None:
        raise ValueError("interval='credible' needs a corrected target built from a NUTS fit "
                         "(nc.targets.corrected(annotations, fit) with method='nuts')")
    return det


def nc_ece_credible(target: Any, level: float, *, statistic: Callable[..., Any],
                    seed: Any = 0, max_draws: int = 1000
                    ) -> tuple[tuple[float, float], dict, np.ndarray]:
    """Credible interval of the binned NC-ECE (any number of classes).

    For each posterior draw of the channels (a NUTS fit) the corrected target is rebuilt
    with those channels (weights held at the point estimate's), and the NC-ECE is
    computed with Bayesian-bootstrap item weights (Dirichlet(1, ..., 1)), so both the
    annotator channel uncertainty and the sampling of items enter. Two classes: the
    positive-class NC-ECE of "Noisy-Label Calibration with Multiple Unreliable Labels";
    K > 2 (K x K Dawid–Skene channels): the top-label or classwise NC-ECE, our
    extension.

    Parameters
    ----------
    target : Target
        A corrected target built from a NUTS fit (``details['channel_draws']``).
    level : float
        Coverage fraction.
    statistic : callable
        ``statistic(weights, T) -> float``, the binned NC-ECE of the corrected target
        matrix ``T`` (n_items, K) under item weights (supplied by :mod:`noisycal.metrics`,
        which binds the predictions and the bins).
    seed : int or jax key, default=0
    max_draws : int, default=1000
        At most this many channel draws (a seeded subsample).

    Returns
    -------
    interval : (low, high)
        NaN when some draw's informative channels cannot be inverted (``n_failed``).
    details : dict
        ``n_channel_draws`` and ``n_failed`` (draws whose channels of an informative
        annotator are not invertible: b - a <= 1e-4, or for K > 2 a smallest singular
        value <= 1e-4; their value is NaN).
    values : ndarray
        The per-draw NC-ECE values.
    """
    det = check_credible_target(target)
    draws = np.asarray(det["channel_draws"])
    mask = np.asarray(det["informative"], dtype=bool)
    rng = as_numpy_rng(seed)
    if draws.shape[0] > max_draws:
        draws = draws[rng.choice(draws.shape[0], max_draws, replace=False)]
    vals = np.empty(draws.shape[0])
    n = np.shape(det["ratings"])[0]
    for d, C in enumerate(draws):
        w = rng.exponential(size=n)
        if not np.all(channels_invertible(C[mask])):
            vals[d] = np.nan
            continue
        T = corrected_from_channels(det["ratings"], det["observed"], mask, det["weights"], C)
        vals[d] = float(statistic(w / w.sum(), T))
    n_failed = int(np.sum(np.isnan(vals)))
    ci = equal_tailed(vals, level) if n_failed == 0 else (float("nan"), float("nan"))
    return ci, {"n_channel_draws": int(draws.shape[0]), "n_failed": n_failed}, vals
