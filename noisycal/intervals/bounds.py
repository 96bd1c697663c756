"""Finite-sample bounds for NC-ECE (paper 003, Theorem 1 / Eq. C.11 and Proposition 1).

With corrected labels built from channels (a_j, b_j) and weights alpha on the simplex,
every summand of the binned residual lies in [-B, B] with B = sum_j alpha_j / (b_j - a_j).
Hoeffding's inequality and a union over the 2^M sign vectors give, with probability at
least 1 - eta (eta = 1 - level),

    |NC-ECE_B - ECE_B(f)| <= B sqrt(2 (M log 2 + log(c / eta)) / n) + d_ch,

with c = 2 when the channels were estimated on a sample independent of the evaluation
sample (Theorem 1) and c = 6K for channels fitted on the evaluation sample itself
(Proposition 1). The channel term d_ch = sum_j alpha_j e_j / delta_j (e_j the largest
error of annotator j's rates) is not observable: it is exact for known ("oracle")
channels, bounded by B r for a user-given channel radius r >= max_j e_j, or left out
("binned_only": the interval then assumes exact channels and says so). The interval
targets the binned population ECE; ECE(f) itself needs a Lipschitz term L_r h that is
not added here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_choice
from ..metrics.binning import equal_width_bins

__all__ = ["BOUND_MODES", "nc_ece_bound", "nc_ece_credible"]

BOUND_MODES = ("binned_only", "oracle", "radius")


def nc_ece_bound(value: float, target: Any, counts: np.ndarray, level: float, *,
                 mode: str = "binned_only", channel_radius: float | None = None,
                 true_channels: tuple[np.ndarray, np.ndarray] | None = None,
                 same_sample: bool = False) -> tuple[tuple[float, float], dict]:
    """Interval ``[max(0, value - rad), value + rad]`` and its components.

    Parameters
    ----------
    value : float
        The NC-ECE (binned L1 ECE against a corrected target).
    target : Target
        A two-class corrected target (``kind='corrected'``), whose details carry the
        weights and channels.
    counts : ndarray of shape (M,)
        Items per bin (M is the number of bins, empty bins included).
    level : float
        1 - eta.
    mode : {'binned_only', 'oracle', 'radius'}, default='binned_only'
    channel_radius : float, optional
        r >= max_j max(|a_hat_j - a_j|, |b_hat_j - b_j|), for ``mode='radius'``.
    true_channels : (a, b), optional
        The true rates, for ``mode='oracle'``.
    same_sample : bool, default=False
        Channels fitted on the evaluation sample (Proposition 1: log(6K/eta)).
    """
    check_choice(mode, "bound_mode", BOUND_MODES)
    if getattr(target, "kind", None) != "corrected" or target.n_classes != 2:
        raise ValueError("interval='bound' needs a two-class corrected target "
                         "(nc.targets.corrected); it bounds NC-ECE only")
    det = target.details
    alpha = np.asarray(det["weights"], dtype=np.float64)
    C = np.asarray(det["confusion"], dtype=np.float64)
    a_hat, b_hat = C[:, 0, 1], C[:, 1, 1]
    use = alpha > 0
    delta = b_hat - a_hat
    B = float(np.sum(alpha[use] / delta[use]))
    n = int(np.sum(counts))
    M = int(np.size(counts))
    K = int(alpha.size)
    eta = 1.0 - level
    c = 6.0 * K if same_sample else 2.0
    sampling = B * math.sqrt(2.0 * (M * math.log(2.0) + math.log(c / eta)) / n)
    bias = B * float(np.sum(np.sqrt(np.asarray(counts) / n))) / math.sqrt(n)
    if mode == "oracle":
        if true_channels is None:
            raise ValueError("bound_mode='oracle' needs true_channels=(a, b)")
        a_true, b_true = (np.asarray(x, dtype=np.float64) for x in true_channels)
        if a_true.shape != a_hat.shape or b_true.shape != b_hat.shape:
            raise ValueError(f"true_channels must give {K} rates each")
        e = np.maximum(np.abs(a_hat - a_true), np.abs(b_hat - b_true))
        channel = float(np.sum(alpha[use] * e[use] / delta[use]))
        note = "channel term exact (oracle channels)"
    elif mode == "radius":
        if channel_radius is None or not channel_radius >= 0:
            raise ValueError("bound_mode='radius' needs channel_radius >= 0")
        channel = B * float(channel_radius)
        note = f"channel term B * r with r = {channel_radius:g}"
    else:
        channel = 0.0
        note = "assumes exact channels (the channel term d_ch is not included)"
    rad = sampling + channel
    details = {"B_hat": B, "sampling_radius": sampling, "channel_term": channel,
               "expectation_bias_bound": bias, "bound_mode": mode, "same_sample": same_sample,
               "n_bins": M, "eta": eta, "bound_note": note}
    return (max(0.0, value - rad), value + rad), details


def nc_ece_credible(conf: np.ndarray, target: Any, n_bins: int, level: float, *,
                    seed: Any = 0, max_draws: int = 1000) -> tuple[tuple[float, float], dict,
                                                                   np.ndarray]:
    """Credible interval of the binned (positive-class) NC-ECE.

    For each posterior draw of the channels (a NUTS fit) the corrected target is rebuilt
    with those channels (weights held at the point estimate's), and the ECE is computed
    with Bayesian-bootstrap item weights (Dirichlet(1, ..., 1)), so both the annotator
    channel uncertainty and the sampling of items enter. Returns the equal-tailed
    interval, details and the per-draw values.
    """
    from .._jax import as_numpy_rng
    from ..correction import corrected_from_channels

    det = getattr(target, "details", {})
    if getattr(target, "kind", None) != "corrected" or det.get("channel_draws") is None:
        raise ValueError("interval='credible' needs a corrected target built from a NUTS fit "
                         "(nc.targets.corrected(annotations, fit) with method='nuts')")
    draws = np.asarray(det["channel_draws"])
    rng = as_numpy_rng(seed)
    if draws.shape[0] > max_draws:
        draws = draws[rng.choice(draws.shape[0], max_draws, replace=False)]
    J = n_bins
    b = equal_width_bins(conf, J)
    vals = np.empty(draws.shape[0])
    for d, C in enumerate(draws):
        u = corrected_from_channels(det["ratings"], det["observed"], det["informative"],
                                    det["weights"], C)[:, 1]
        w = rng.exponential(size=conf.size)
        w /= w.sum()
        r = np.bincount(b, weights=w * (u - conf), minlength=J)
        vals[d] = np.abs(r).sum()
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(vals, [a, 1.0 - a])
    return (float(lo), float(hi)), {"n_channel_draws": int(draws.shape[0])}, vals
