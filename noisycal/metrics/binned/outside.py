"""Bin means of a noise-corrected target outside [0, 1]: the correction's assumption failing.

A noise-corrected target (:func:`noisycal.targets.corrected`) has entries outside [0, 1],
but its mean over a bin estimates the probability of a class among the bin's items, which
lies in [0, 1]. A bin mean outside [0, 1] by more than its sampling noise says the
correction does not hold there: the annotators' channels are not what the fit says
(annotator noise that depends on the classifier's score, or misestimated channels).
:func:`with_outside_bins` is applied once, by
:func:`noisycal.metrics.binned.estimate.binned_estimate`, which every binned metric (ECE,
MCE, the NC-ECE and its intervals) passes through, and by
:func:`noisycal.workflows.nc_ece_crossfit` to its pooled cross-fitted target (its
statistic is computed outside ``binned_estimate``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats as sps

from ...intervals.estimate import Estimate
from ..score_losses import OUTSIDE_STATUS
from .bins import Binned

__all__ = ["OUTSIDE_LEVEL", "MIN_BIN_ITEMS", "outside_bins", "with_outside_bins",
           "carry_outside"]

#: Overall level of the check over the bins (Bonferroni): a bin is flagged when its mean
#: lies below 0 or above 1 by more than ``z`` standard errors, ``z = Phi^-1(1 - level /
#: m)`` for ``m`` checked bins (one-sided per bin: a bin whose true mean is 0 or 1 falls
#: beyond ``z`` on its side with probability ``level / m``).
OUTSIDE_LEVEL = 0.05

#: A bin with fewer items is not checked; nor is a bin whose standard error is 0 (every
#: item the same corrected value): the check is a normal approximation of the bin mean
#: with its within-bin standard error, and a corrected target's entries take few
#: distinct values (one per rating pattern), so a bin of a few items can show a
#: near-zero sample variance by chance. With a minimum of 2 items, correctly specified
#: Dawid–Skene designs were flagged in 1 of 6 cross-fitted runs (a three-item bin, 37
#: standard errors below 0); 30 is the usual size for a normal approximation.
MIN_BIN_ITEMS = 30

_TOL = 1e-12


def _bin_moments(binned: Binned, stats: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-bin sums of the item targets and their squares (targets averaged over draws),
    from the item table, else from squared-target sums in ``stats``; None without either."""
    G, n, _ = binned.data.shape
    D, B = binned.n_draws, binned.n_bins
    if n > 0:
        t = binned.data[:, :, 2:2 + D].mean(axis=2)
        s1 = np.stack([np.bincount(binned.bins[g], weights=t[g], minlength=B)
                       for g in range(G)])
        s2 = np.stack([np.bincount(binned.bins[g], weights=t[g] ** 2, minlength=B)
                       for g in range(G)])
        return s1, s2
    if stats.shape[2] >= 2 + 2 * D:  # per-draw sums; the draws' mean variance (an upper
        # bound on the variance of the draw-averaged target)
        return stats[:, :, 2:2 + D].mean(axis=2), stats[:, :, 2 + D:2 + 2 * D].mean(axis=2)
    return None


def outside_bins(binned: Binned, stats: np.ndarray, groups: list) -> dict | None:
    """The bins whose target mean lies outside [0, 1] beyond its sampling noise.

    Parameters
    ----------
    binned : Binned
        The metric's items (or none, when ``stats`` was streamed).
    stats : ndarray of shape (G, n_bins, C)
        The per-bin sums (:func:`~noisycal.metrics.binned.bins.bin_sums`).
    groups : list of str
        Group names, for the message.

    Returns
    -------
    dict or None
        None when every bin mean lies in [0, 1] (nothing to check: always so for targets
        in [0, 1]). Else ``level``, ``z``, ``n_checked`` (bins with at least
        :data:`MIN_BIN_ITEMS` items and a positive standard error), ``n_outside`` (bin
        means outside [0, 1] at all), ``checked`` (False when the per-bin variance was
        not gathered: streamed or Dask sums without squared targets) and ``flagged``: one
        dict per flagged bin (``group``, ``bin``, ``lo``, ``hi``, ``count``, ``mean``,
        ``se``, ``z``: the distance to [0, 1] in standard errors).
    """
    D = binned.n_draws
    cnt = stats[:, :, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(cnt > 0, stats[:, :, 2:2 + D].mean(axis=2) / cnt, np.nan)
    dist = np.where(mean < 0, -mean, np.where(mean > 1, mean - 1, 0.0))
    outside = np.isfinite(mean) & (dist > _TOL)
    if not np.any(outside):
        return None
    out = {"level": OUTSIDE_LEVEL, "n_outside": int(outside.sum()), "flagged": []}
    moments = _bin_moments(binned, stats)
    if moments is None:
        return {**out, "checked": False, "z": float("nan"), "n_checked": 0}
    s1, s2 = moments
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(cnt >= MIN_BIN_ITEMS, (s2 - s1**2 / cnt) / (cnt - 1), np.nan)
        se = np.sqrt(np.maximum(var, 0.0) / cnt)
    checked = (cnt >= MIN_BIN_ITEMS) & (se > 0)
    m = int(checked.sum())
    z = float(sps.norm.isf(OUTSIDE_LEVEL / m)) if m else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        zs = np.where(checked, dist / se, np.nan)
    for g, b in zip(*np.nonzero(checked & outside & (zs > z)), strict=True):
        out["flagged"].append({
            "group": groups[g], "bin": int(b), "lo": float(binned.edges[g, b]),
            "hi": float(binned.edges[g, b + 1]), "count": int(cnt[g, b]),
            "mean": float(mean[g, b]), "se": float(se[g, b]), "z": float(zs[g, b])})
    return {**out, "checked": True, "z": z, "n_checked": m}


def _message(found: dict) -> str:
    bins = "; ".join(
        f"bin {f['bin']} of {f['group']} ([{f['lo']:.3g}, {f['hi']:.3g}], {f['count']} "
        f"items): mean {f['mean']:.4g}, {f['z']:.1f} standard errors outside [0, 1]"
        for f in found["flagged"])
    return (f"the noise-corrected target's mean lies outside [0, 1] beyond its sampling "
            f"noise in {len(found['flagged'])} bin(s) ({bins}; more than z = "
            f"{found['z']:.2f}, the Bonferroni bound over {found['n_checked']} bins at "
            f"level {found['level']:g}): a bin mean estimates a probability, so the "
            "correction's assumption fails there. The noise-corrected target is unbiased "
            "only when annotator noise does not depend on the classifier's score and the "
            "channels are well estimated; test the first with "
            "nc.annotators.noise_check(annotations, scores, fit=fit)")


def with_outside_bins(est: Estimate, binned: Binned, stats: np.ndarray,
                      groups: list) -> Estimate:
    """``est`` with status ``'outside_parameter_space'`` when some bin's target mean lies
    outside [0, 1] by more than its sampling noise (:func:`outside_bins`).

    The value and interval are kept; ``details['outside_bins']`` holds the check (only
    when some bin mean lies outside [0, 1]) and the message names the flagged bins and the
    likely cause. The standard error of a bin mean is the within-bin one; the estimation
    error of fitted channels is not in it.

    Parameters
    ----------
    est : Estimate
    binned : Binned
    stats : ndarray of shape (G, n_bins, C)
    groups : list of str

    Returns
    -------
    Estimate
    """
    found = outside_bins(binned, stats, groups)
    if found is None:
        return est
    details = {**est.details, "outside_bins": found}
    if not found["flagged"]:
        return dataclasses.replace(est, details=details)
    msg = _message(found)
    return dataclasses.replace(est, details=details, statuses=(*est.statuses, OUTSIDE_STATUS),
                               message=f"{est.message}; {msg}" if est.message else msg)


def carry_outside(est: Estimate, base: Estimate) -> Estimate:
    """``est`` (built afresh from ``base``'s per-bin table, as the MCE is) with ``base``'s
    status ``'outside_parameter_space'`` and its message, when ``base`` has it.

    Parameters
    ----------
    est, base : Estimate

    Returns
    -------
    Estimate
    """
    if OUTSIDE_STATUS not in base.statuses:
        return est
    found = base.details["outside_bins"]
    msg = _message(found)
    return dataclasses.replace(
        est, details={**est.details, "outside_bins": found},
        statuses=(*est.statuses, OUTSIDE_STATUS),
        message=f"{est.message}; {msg}" if est.message else msg)
