"""The intervals of NC-ECE ("Noisy-Label Calibration with Multiple Unreliable Labels").

NC-ECE is :func:`noisycal.ece` with a two-class corrected target
(:func:`noisycal.targets.corrected`). Besides the conditional bootstrap it has three
interval kinds, each in :mod:`noisycal.intervals` and fed here with the metric's bins and
the binned statistic :func:`~noisycal.metrics.binning.residual_ece`:

- ``interval='bound'``: Theorem 1 / Eq. C.11 (or Proposition 1), :func:`nc_ece_bound`;
- ``interval='credible'``: channel posterior draws x Bayesian bootstrap;
- ``refit_channels=True``: a bootstrap that refits the channels in every replicate.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax

from .._jax import x64
from .._typing import Seed
from ..intervals.bootstrap import interval_from_replicates
from ..intervals.bounds import nc_ece_bound
from ..intervals.credible import nc_ece_credible
from ..intervals.estimate import Estimate
from ..intervals.refit import nc_ece_refit_replicates
from .binning import residual_ece

__all__ = ["nc_ece_interval", "check_nc_ece_request"]

_residual_ece_jit = jax.jit(residual_ece, static_argnames=("n_bins",))


def check_nc_ece_request(interval: str | None, refit_channels: bool, *, n_classes: int = 2,
                         reduce: str, norm: str,
                         debias: bool, kind: str, strategy: str, method: str,
                         cluster: Any) -> bool:
    """Whether the request is an NC-ECE interval; raise if its settings do not allow one.

    Parameters
    ----------
    interval, refit_channels, reduce, norm, debias, kind, strategy, method, cluster
        The arguments of the same names given to :func:`noisycal.ece`.
    n_classes : int, default=2
        K, the number of classes of the predictions.

    Returns
    -------
    bool
        True for ``interval='bound'``, ``'credible'`` or ``refit_channels=True``.
    """
    if refit_channels and (interval != "bootstrap" or method == "bca" or cluster is not None):
        raise ValueError("refit_channels=True is a bootstrap over items: it needs "
                         "interval='bootstrap', method 'percentile' or 'basic', and no "
                         "cluster")
    if interval not in ("bound", "credible") and not refit_channels:
        return False
    if n_classes > 2:
        asked = "refit_channels=True" if refit_channels else f"interval={interval!r}"
        raise ValueError(f"{asked} is implemented for two classes only: it is an interval for "
                         "the positive-class NC-ECE of \"Noisy-Label Calibration with "
                         f"Multiple Unreliable Labels\", and these predictions have {n_classes} "
                         "classes. For K > 2 use interval='bootstrap' (channels held fixed), "
                         "or evaluate one class against the rest with a two-class corrected "
                         "target")
    if reduce != "ece" or norm != "l1" or debias or kind != "positive_class" \
            or strategy != "uniform":
        raise ValueError(f"interval={interval!r}"
                         + (" with refit_channels=True" if refit_channels else "")
                         + " is an NC-ECE interval: it needs the L1 positive-class ECE with "
                         "equal-width bins (kind='positive_class', norm='l1', "
                         "strategy='uniform')")
    return True


def _credible_stat(w: np.ndarray, u: np.ndarray, conf: np.ndarray, bins: np.ndarray,
                   n_bins: int) -> float:
    with x64():
        return float(_residual_ece_jit(w, u, conf, bins, n_bins=n_bins))


def nc_ece_interval(est: Estimate, conf: np.ndarray, bins: np.ndarray, target: Any, *,
                    interval: str | None, refit_channels: bool, level: float, n_boot: int,
                    method: str, seed: Seed, bound: dict) -> Estimate:
    """Attach an NC-ECE interval (bound, credible or channel-refit bootstrap) to ``est``.

    Parameters
    ----------
    est : Estimate
        The point estimate (binned L1 positive-class ECE, no interval).
    conf : ndarray of shape (n_items,)
        Positive-class probabilities.
    bins : ndarray of int, shape (n_items,)
        The estimate's bin of each item.
    target : Target
        The corrected target.
    interval : {'bound', 'credible', 'bootstrap'}
    refit_channels : bool
    level, n_boot, method, seed
        As in :func:`noisycal.ece`.
    bound : dict
        ``mode``, ``channel_radius``, ``true_channels``, ``same_sample``.

    Returns
    -------
    Estimate
    """
    M = int(est.details["n_bins"])
    if refit_channels:
        reps, extra = nc_ece_refit_replicates(conf, bins, target, n_bins=M, n_boot=n_boot,
                                              statistic=residual_ece, seed=seed)
        ci, status, message = interval_from_replicates(float(est), reps, level, method)
        if extra["n_failed"]:
            message = (f"{extra['n_failed']} of {n_boot} refits gave an annotator gap "
                       f"b - a <= 1e-4 (not invertible); " + message)
        if extra["n_nonfinite"]:
            message = (f"{extra['n_nonfinite']} of {n_boot} refits gave a non-finite "
                       "value; " + message)
        return Estimate(est.name, est.value, ci, level, "bootstrap", method, n=est.n,
                        n_boot=n_boot, bins=est.bins, status=status, message=message,
                        details={**est.details, **extra, "refit_channels": True},
                        replicates=reps)
    if interval == "credible":
        ci, extra, vals = nc_ece_credible(conf, bins, target, level,
                                          statistic=partial(_credible_stat, n_bins=M),
                                          seed=seed)
        return Estimate(est.name, est.value, ci, level, "credible", "credible-eti", n=est.n,
                        bins=est.bins, status=est.status, message=est.message,
                        details={**est.details, **extra}, replicates=vals)
    ci, extra = nc_ece_bound(float(est), target, est.bins["count"].to_numpy(), level, **bound)
    return Estimate(est.name, est.value, ci, level, "bound", "hoeffding-union", n=est.n,
                    bins=est.bins, status=est.status, message=extra["bound_note"],
                    details={**est.details, **extra})
