"""Finite-sample bounds for NC-ECE ("Noisy-Label Calibration with Multiple Unreliable Labels",
Theorem 1 / Eq. C.11 and Proposition 1).

With corrected labels built from channels (a_j, b_j) and weights alpha on the simplex,
every summand of the binned residual lies in [-B, B] with B = sum_j alpha_j / (b_j - a_j)
(every item fully rated).
Hoeffding's inequality and a union over the 2^M sign vectors give, with probability at
least 1 - eta (eta = 1 - level),

    |NC-ECE_B - ECE_B(f)| <= B sqrt(2 (M log 2 + log(c / eta)) / n) + d_ch,

with c = 2 when the channels were estimated on a sample independent of the evaluation
sample (Theorem 1) and c = 6K (K annotators) for channels fitted on the evaluation sample itself
(Proposition 1; the default infers which from the target's provenance,
:func:`infer_same_sample`). B-hat is the largest range of a corrected label,
:func:`target_range` (with missing ratings the maximum over items of sum_j w_ij / delta_j,
w_ij renormalised over item i's raters: our generalisation). With missing ratings this
is a plug-in: Hoeffding needs the range over every rating pattern that can occur, and the
observed maximum reaches it once each possible pattern has been seen (always when every
item is fully rated; max_j 1/delta_j once an item rated only by the weakest weighted
annotator is seen). The paper proves Proposition 1 for full ratings; applying it with
per-item weights is likewise ours. The channel term
d_ch = sum_j alpha_j e_j / delta_j (e_j the largest error of annotator j's rates; with
missing ratings the maximum over items of sum_j w_ij e_j / delta_j) is not observable: it
is exact for known ("oracle") channels, bounded by B r for a user-given channel radius
r >= max_j e_j, or left out ("binned_only": the interval then assumes exact channels and
says so). The interval
targets the binned population ECE; ECE(f) itself needs a Lipschitz term L_r h that is
not added here.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .._validation import check_array, check_choice, check_level
from ..correction import correction_range

__all__ = ["BOUND_MODES", "nc_ece_bound", "hoeffding_radius", "check_bound_options",
           "target_range", "infer_same_sample", "check_fit_identified"]

BOUND_MODES = ("binned_only", "oracle", "radius")
#: The bound option that belongs to each mode (the other modes refuse it).
_MODE_OPTION = {"oracle": "true_channels", "radius": "channel_radius"}


def _check_true_channels(true_channels: object) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(true_channels, str | bytes) or not hasattr(true_channels, "__len__") \
            or len(true_channels) != 2:
        raise ValueError("true_channels must be a pair (a, b) of rate arrays, got "
                         f"{true_channels!r}")
    a, b = (check_array(x, "true_channels", ndim=1) for x in true_channels)
    if a.shape != b.shape or np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)):
        raise ValueError("true_channels must be two rate arrays (a, b) of equal length in "
                         "[0, 1]")
    return a, b


def target_range(details: Any, scale: np.ndarray | None = None) -> float:
    """B-hat of a two-class corrected target, from its ``details`` (see
    :func:`noisycal.correction.correction_range`).

    Parameters
    ----------
    details : mapping
        ``weights``, ``confusion`` and, where present, ``observed`` and ``informative``
        (the details of :func:`noisycal.targets.corrected`).
    scale : ndarray of shape (n_annotators,), optional
        Per-annotator factors e_j: the result is then max_i sum_j w_ij e_j / delta_j (the
        oracle channel term with missing ratings).

    Returns
    -------
    float
    """
    C = np.asarray(details["confusion"], dtype=np.float64)
    obs = details.get("observed")
    if obs is not None:
        obs = np.asarray(obs, dtype=bool)
        inf = details.get("informative")
        if inf is not None:
            obs = obs & np.asarray(inf, dtype=bool)[None, :]
    if scale is None:
        return correction_range(details["weights"], C[:, 0, 1], C[:, 1, 1], obs)
    alpha = np.asarray(details["weights"], dtype=np.float64)
    obs = np.ones((1, alpha.size), bool) if obs is None else obs
    w = obs * alpha
    tot = w.sum(axis=1)
    use = alpha > 0
    per = np.where(use, scale / np.where(use, C[:, 1, 1] - C[:, 0, 1], 1.0), 0.0)
    return float(np.max((w[tot > 0] * per).sum(axis=1) / tot[tot > 0], initial=0.0))


def infer_same_sample(target: Any) -> tuple[bool, str]:
    """Whether a corrected target's channels were fitted on the items it evaluates.

    The rule (ours): channels given directly (``confusion=`` or ``a``/``b``, no fit) are
    taken as fixed independently of the evaluated items (Theorem 1); channels from a fit
    are taken as fitted on the evaluated items (Proposition 1), unless both the fit and
    the target name their items and none of the evaluated items is among the fit's (then
    Theorem 1). Proposition 1 holds for any channel estimate, so the rule errs on its side.

    Parameters
    ----------
    target : Target
        A corrected target.

    Returns
    -------
    same_sample : bool
    reason : str
    """
    det = getattr(target, "details", {})
    fit = det.get("fit")
    if fit is None:
        return False, "channels given directly (not fitted on these items)"
    fit_items = getattr(fit, "items", None)
    items = getattr(target, "items", None)
    items = det.get("items") if items is None else items
    if fit_items is not None and items is not None \
            and not np.isin(np.asarray(items), np.asarray(fit_items)).any():
        return False, "channels fitted on items disjoint from the evaluated ones"
    return True, "channels fitted on these annotations"


def check_fit_identified(target: Any, what: str = "interval='bound'") -> None:
    """Refuse a bound for a corrected target whose fit's status is not 'ok'.

    Parameters
    ----------
    target : Target
        A corrected target.
    what : str, default="interval='bound'"
        The request, for the message.
    """
    status = getattr(target, "details", {}).get("fit_status")
    if status not in (None, "ok"):
        raise ValueError(f"target: {what} needs identified channels, but the channel fit "
                         f"the target was built from has status {status!r} (the bound "
                         "assumes its channels are identified and consistent); refit with "
                         "a design that identifies them, or use interval='bootstrap'")


def check_bound_options(mode: object, channel_radius: object, true_channels: object,
                        same_sample: object, *, interval_bound: bool = True) -> dict:
    """Validated options of the NC-ECE bound (see :func:`nc_ece_bound`).

    Every option is checked whether or not it is used. ``channel_radius`` belongs to
    ``mode='radius'`` and ``true_channels`` to ``mode='oracle'``: given with another mode
    they raise, as does any non-default option when ``interval_bound`` is False (the
    metric was not asked for ``interval='bound'``).

    Parameters
    ----------
    mode : {'binned_only', 'oracle', 'radius'}
        ``bound_mode`` of :func:`noisycal.ece`.
    channel_radius : float or None
        Radius of the channel error (``mode='radius'`` only).
    true_channels : array-like or None
        The true channels (``mode='oracle'`` only).
    same_sample : bool or None
        Whether the channels were fitted on the evaluated items (None: inferred).
    interval_bound : bool, default=True
        Whether ``interval='bound'`` was asked for.

    Returns
    -------
    dict
        ``mode``, ``channel_radius`` (float or None), ``true_channels`` ((a, b) arrays or
        None), ``same_sample``.
    """
    check_choice(mode, "bound_mode", BOUND_MODES)
    if same_sample is not None and not isinstance(same_sample, bool | np.bool_):
        raise ValueError(f"same_sample must be True or False (or None: inferred), got "
                         f"{same_sample!r}")
    if channel_radius is not None:
        if isinstance(channel_radius, bool) or not isinstance(channel_radius, numbers.Real) \
                or not channel_radius >= 0 or not math.isfinite(channel_radius):
            raise ValueError("channel_radius must be a finite number >= 0, got "
                             f"{channel_radius!r}")
        channel_radius = float(channel_radius)
    if true_channels is not None:
        true_channels = _check_true_channels(true_channels)
    given = {"bound_mode": mode != "binned_only", "channel_radius": channel_radius is not None,
             "true_channels": true_channels is not None, "same_sample": bool(same_sample)}
    if not interval_bound and any(given.values()):
        name = next(k for k, v in given.items() if v)
        raise ValueError(f"{name} applies only to interval='bound'")
    for other, option in _MODE_OPTION.items():
        if given[option] and mode != other:
            raise ValueError(f"{option} applies only to bound_mode={other!r}, not "
                             f"bound_mode={mode!r}")
    if interval_bound and mode in _MODE_OPTION and not given[_MODE_OPTION[mode]]:
        need = "true_channels=(a, b)" if mode == "oracle" else "a channel_radius >= 0"
        raise ValueError(f"bound_mode={mode!r} needs {need}")
    return {"mode": mode, "channel_radius": channel_radius, "true_channels": true_channels,
            "same_sample": None if same_sample is None else bool(same_sample)}


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
                 same_sample: bool | None = None) -> tuple[tuple[float, float], dict]:
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
        Options of another mode raise (see :func:`check_bound_options`).
    channel_radius : float, optional
        r >= max_j max(|a_hat_j - a_j|, |b_hat_j - b_j|), for ``mode='radius'``.
    true_channels : (a, b), optional
        The true rates, for ``mode='oracle'``.
    same_sample : bool, optional
        Channels fitted on the evaluation sample (Proposition 1 of "Noisy-Label Calibration
        with Multiple Unreliable Labels": log(6K/eta)) or on an independent sample
        (Theorem 1: log(2/eta)). None (default): inferred from the target's provenance
        (:func:`infer_same_sample`); a given value overrides.

    Returns
    -------
    interval : (low, high)
    details : dict
        B_hat, sampling_radius, channel_term, expectation_bias_bound, bound_mode, ...
    """
    opts = check_bound_options(mode, channel_radius, true_channels, same_sample)
    channel_radius, true_channels = opts["channel_radius"], opts["true_channels"]
    same_sample = opts["same_sample"]
    if getattr(target, "kind", None) != "corrected" or target.n_classes != 2:
        raise ValueError("interval='bound' needs a two-class corrected target "
                         "(nc.targets.corrected); it bounds NC-ECE only")
    check_fit_identified(target)
    reason = "given by the caller"
    if same_sample is None:
        same_sample, reason = infer_same_sample(target)
    det = target.details
    alpha = np.asarray(det["weights"], dtype=np.float64)
    C = np.asarray(det["confusion"], dtype=np.float64)
    a_hat, b_hat = C[:, 0, 1], C[:, 1, 1]
    B = target_range(det)
    n = int(np.sum(counts))
    M = int(np.size(counts))
    K = int(alpha.size)
    eta = 1.0 - level
    sampling = hoeffding_radius(B, n, M, level, union=6.0 * K if same_sample else 2.0)
    bias = B * float(np.sum(np.sqrt(np.asarray(counts) / n))) / math.sqrt(n)
    if mode == "oracle":
        a_true, b_true = true_channels
        if a_true.shape != a_hat.shape or b_true.shape != b_hat.shape:
            raise ValueError(f"true_channels must give {K} rates each")
        e = np.maximum(np.abs(a_hat - a_true), np.abs(b_hat - b_true))
        channel = target_range(det, scale=e)
        note = "channel term exact (oracle channels)"
    elif mode == "radius":
        channel = B * float(channel_radius)
        note = f"channel term B * r with r = {channel_radius:g}"
    else:
        channel = 0.0
        note = "assumes exact channels (the channel term d_ch is not included)"
    rad = sampling + channel
    statement = "Proposition 1" if same_sample else "Theorem 1 / Eq. C.11"
    note = f"{statement} ({reason}); {note}"
    details = {"B_hat": B, "sampling_radius": sampling, "channel_term": channel,
               "expectation_bias_bound": bias, "bound_mode": mode, "same_sample": same_sample,
               "same_sample_reason": reason,
               "statement": statement,
               "n_bins": M, "eta": eta, "bound_note": note}
    return (max(0.0, value - rad), value + rad), details
