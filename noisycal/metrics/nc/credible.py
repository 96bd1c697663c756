"""The credible interval of NC-ECE.

:func:`equal_tailed` (defined in ``noisycal._util.stats`` so that the engines can use it too)
is the one equal-tailed quantile rule of the library (bootstrap percentile intervals,
per-bin bands, credible intervals of posterior draws).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._util.jax import as_numpy_rng
from ..._util.stats import equal_tailed
from ...correction.labels import channels_invertible, corrected_from_channels

__all__ = ["equal_tailed", "nc_ece_credible", "check_credible_target",
           "bayesian_bootstrap_draws"]


def bayesian_bootstrap_draws(n_draws: int, n_items: int,
                             statistic: Callable[[int, np.ndarray], float], *,
                             seed: Any = 0, max_draws: int = 1000
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Per posterior draw, a statistic under Bayesian-bootstrap item weights.

    The one loop behind the credible intervals of the library (NC-ECE with channel
    draws, the true-label ECE after a posterior over calibration maps): at most
    ``max_draws`` draws (a seeded subsample without replacement when there are more),
    and for each draw d one set of item weights ``w ~ Dirichlet(1, ..., 1)`` (normalised
    exponentials, Rubin's Bayesian bootstrap), so that the posterior uncertainty of the
    draws and the sampling of items both enter the spread of the values.

    Parameters
    ----------
    n_draws : int
        Number of posterior draws available.
    n_items : int
        Number of items the weights are over.
    statistic : callable
        ``statistic(d, w) -> float``: the value for draw index ``d`` under the item
        weights ``w`` (shape (n_items,), summing to 1); NaN marks a failed draw.
    seed : int or jax key, default=0
    max_draws : int, default=1000

    Returns
    -------
    draw_index : ndarray of int
        The draws used, in order.
    values : ndarray of float
        The statistic of each.
    """
    rng = as_numpy_rng(seed)
    idx = np.arange(n_draws)
    if n_draws > max_draws:
        idx = rng.choice(n_draws, max_draws, replace=False)
    vals = np.empty(idx.shape[0])
    for j, d in enumerate(idx):
        w = rng.exponential(size=n_items)
        vals[j] = statistic(int(d), w / w.sum())
    return idx, vals


def check_credible_target(target: Any) -> dict:
    """Check that ``target`` is a corrected target built from a NUTS fit; its details.

    Parameters
    ----------
    target : object
        The metric's target.

    Returns
    -------
    dict
        With the fit (``details['fit']``, a :class:`~noisycal.targets.ChannelFit`)
        and its channel draws in the ratings' order (``details['channel_draws']``).
    """
    det = getattr(target, "details", {})
    if getattr(target, "kind", None) != "corrected" or det.get("channel_draws") is None \
            or det.get("fit") is None:
        raise ValueError("interval='credible' needs a corrected target built from a NUTS fit "
                         "(nc.targets.corrected(annotations, fit) with method='nuts')")
    n, J, K = np.shape(det["ratings"])
    if np.shape(det["channel_draws"])[1:] != (J, K, K):
        raise ValueError(f"the corrected target's channel draws have shape "
                         f"{np.shape(det['channel_draws'])[1:]} per draw but its ratings "
                         f"need ({J}, {K}, {K}): build the target with "
                         "nc.targets.corrected(annotations, fit)")
    return det


def nc_ece_credible(target: Any, level: float, *, statistic: Callable[..., Any],
                    seed: Any = 0, max_draws: int = 1000
                    ) -> tuple[tuple[float, float], dict, np.ndarray]:
    """Credible interval of the binned NC-ECE (any number of classes).

    For each posterior draw of the channels (a NUTS fit; matched to the target's
    annotators and classes by :func:`noisycal.targets.corrected`, which stores them in
    the ratings' annotator and class order) the corrected target is rebuilt
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

    Raises
    ------
    ValueError
        With fewer channel draws than the fit's ``posterior_draws(level)`` accepts
        (:func:`~noisycal.engines.density.diagnostics.min_credible_draws`: 20 at 0.9).
    """
    det = check_credible_target(target)
    det["fit"].posterior_draws(level)  # the fit refuses too few draws for this level
    draws = np.asarray(det["channel_draws"])
    mask = np.asarray(det["informative"], dtype=bool)

    def one(d: int, w: np.ndarray) -> float:
        C = draws[d]
        if not np.all(channels_invertible(C[mask])):
            return float("nan")
        T = corrected_from_channels(det["ratings"], det["observed"], mask, det["weights"], C)
        return float(statistic(w, T))

    idx, vals = bayesian_bootstrap_draws(draws.shape[0], np.shape(det["ratings"])[0], one,
                                         seed=seed, max_draws=max_draws)
    draws = draws[idx]
    n_failed = int(np.sum(np.isnan(vals)))
    ci = equal_tailed(vals, level) if n_failed == 0 else (float("nan"), float("nan"))
    return ci, {"n_channel_draws": int(draws.shape[0]), "n_failed": n_failed}, vals
