"""Finite-sample bounds for NC-ECE ("Noisy-Label Calibration with Multiple Unreliable Labels",
Theorem 1 / Eq. C.11 and Proposition 1).

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

from .._validation import check_choice, check_level
from ..correction import correction_range

__all__ = ["BOUND_MODES", "nc_ece_bound", "hoeffding_radius"]

BOUND_MODES = ("binned_only", "oracle", "radius")


def hoeffding_radius(b_hat: float, n: int, n_bins: int, level: float, *,
                     union: float = 2.0) -> float:
    r"""Sampling radius of the binned NC-ECE: :math:`\hat B \sqrt{2 (M \log 2 +
    \log(c/\eta)) / n}`.

    Hoeffding's inequality for summands in an interval of length B-hat, with a union
    over the :math:`2^M` sign vectors of M bins and ``union`` = c events
    ("Noisy-Label Calibration with Multiple Unreliable Labels": c = 2 in Theorem 1 /
    Eq. C.11, c = 6K in Proposition 1, c = 2F for F cross-fitting folds).

    Parameters
    ----------
    b_hat : float
        B-hat, :func:`noisycal.correction.correction_range`.
    n : int
        Number of items.
    n_bins : int
        M, the number of bins (empty ones included).
    level : float
        1 - eta, a fraction in (0, 1).
    union : float, default=2.0
        c, the number of events in the union bound.

    Returns
    -------
    float

    Examples
    --------
    >>> round(hoeffding_radius(1 / 0.76, 5000, 10, 0.95), 4)
    0.0858
    """
    level = check_level(level)
    if not n >= 1:
        raise ValueError(f"n must be at least 1, got {n}")
    eta = 1.0 - level
    return float(b_hat) * math.sqrt(2.0 * (n_bins * math.log(2.0) + math.log(union / eta))
                                    / n)


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

    Returns
    -------
    interval : (low, high)
    details : dict
        B_hat, sampling_radius, channel_term, expectation_bias_bound, bound_mode, ...
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
    B = correction_range(alpha, a_hat, b_hat)
    n = int(np.sum(counts))
    M = int(np.size(counts))
    K = int(alpha.size)
    eta = 1.0 - level
    sampling = hoeffding_radius(B, n, M, level, union=6.0 * K if same_sample else 2.0)
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
        if isinstance(channel_radius, bool) or not isinstance(channel_radius, int | float) \
                or not channel_radius >= 0 or not math.isfinite(channel_radius):
            raise ValueError("bound_mode='radius' needs a finite channel_radius >= 0, got "
                             f"{channel_radius!r}")
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
