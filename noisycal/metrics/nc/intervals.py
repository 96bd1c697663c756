"""The intervals of NC-ECE ("Noisy-Label Calibration with Multiple Unreliable Labels").

NC-ECE is :func:`noisycal.ece` with a corrected target (:func:`noisycal.targets.corrected`).
Its default interval, the inverted test with the channel estimation error carried, is
built in :mod:`noisycal.metrics.nc.delta` (through the binned estimate). The other
interval kinds, each an option object of :mod:`noisycal.intervals` fed here with the
metric's bins and the binned statistic :func:`nc_ece_statistic`:

- ``interval=Bound(...)``: Theorem 1 / Eq. C.11 (or Proposition 1), :func:`nc_ece_bound`,
  generalised there to K classes;
- ``interval=Credible()``: channel posterior draws x Bayesian bootstrap (the posterior of
  the plug-in: biased upward near 0);
- ``interval=Refit(...)``: a bootstrap that refits the channels in every replicate,
  inverted (:func:`noisycal.metrics.nc.assemble.refit_inversion`) or read off as a
  percentile interval (``Refit(method='percentile')``).

The paper defines NC-ECE for two classes (the positive-class error). With K > 2 classes
and Dawid–Skene confusion matrices the corrected target is ``e_A C^{-1}`` averaged over
annotators, and these intervals cover the top-label or classwise NC-ECE of that target
(our extension); they need the predictions (``probs=``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import x64
from ..._util.statuses import join_messages
from ..._util.types import Seed
from ..._util.validation import check_array
from ...intervals.bootstrap import interval_from_replicates
from ...intervals.estimate import Estimate
from ...intervals.options import Bound, Credible, Refit
from ..binned.bins import equal_width_bins, group_scores, residual_ece
from .assemble import fitted_channels, refit_inversion, target_columns
from .bound import nc_ece_bound
from .credible import check_credible_target, nc_ece_credible
from .refit import check_refit_target, nc_ece_refit_replicates

__all__ = ["nc_ece_interval", "check_nc_ece_metric", "nc_ece_statistic", "nc_ece_items"]

_PAPER = "\"Noisy-Label Calibration with Multiple Unreliable Labels\""


def check_nc_ece_metric(interval: Bound | Refit | Credible, *, n_classes: int, norm: str,
                        debias: bool, kind: str, strategy: str, cluster: Any) -> None:
    """Refuse an NC-ECE interval for a binned ECE it is not defined for.

    The bound, credible and refit intervals are those of the L1 binned NC-ECE with
    equal-width bins: for two classes the positive-class error, for K > 2 the top-label
    or classwise one; the refits resample items, so they take no clusters.

    Parameters
    ----------
    interval : Bound, Refit or Credible
    n_classes : int
        K, the number of classes of the predictions.
    norm, debias, kind, strategy, cluster
        The arguments of the same names given to :func:`noisycal.ece` (``kind``
        resolved).

    Raises
    ------
    ValueError
        Naming the setting the interval needs.
    """
    asked = f"interval={interval!r}"
    if isinstance(interval, Refit) and cluster is not None:
        raise ValueError(f"cluster: {asked} is a bootstrap over items, which it refits "
                         "the channels on; it takes no clusters")
    if n_classes == 2 and (norm != "l1" or debias or kind != "positive_class"
                           or strategy != "uniform"):
        raise ValueError(f"{asked} is an NC-ECE interval: it needs the L1 positive-class ECE "
                         "with equal-width bins (kind='positive_class', norm='l1', "
                         "strategy='uniform')")
    if n_classes > 2 and (norm != "l1" or debias or strategy != "uniform"
                          or kind not in ("top_label", "classwise")):
        raise ValueError(f"{asked} is an NC-ECE interval: with {n_classes} classes it needs "
                         "the L1 top-label or classwise ECE with equal-width bins "
                         "(kind='top_label' or 'classwise', norm='l1', strategy='uniform')")


def nc_ece_statistic(weights: jax.Array, target: jax.Array, conf: jax.Array,
                     bins: jax.Array, cols: jax.Array, n_bins: int) -> jax.Array:
    r"""Binned NC-ECE of a target matrix under item weights (JAX-traceable).

    The mean over groups g of :func:`~noisycal.metrics.binned.bins.residual_ece` with
    target values ``target[i, cols[g, i]]``, confidences ``conf[g]`` and bins
    ``bins[g]``: one group with the positive class for two classes, one group with the
    predicted class for the top-label error, K groups (class k in group k) for the
    classwise error (:math:`\frac1K \sum_k \mathrm{CE}_k`, as :func:`noisycal.ece`).

    Parameters
    ----------
    weights : array of shape (n_items,)
    target : array of shape (n_items, K)
        The corrected target.
    conf : array of shape (n_groups, n_items)
    bins : int array of shape (n_groups, n_items)
    cols : int array of shape (n_groups, n_items)
        The target column of each item in each group.
    n_bins : int

    Returns
    -------
    scalar array
    """
    t = jnp.take_along_axis(target, cols.T, axis=1).T
    per = jax.vmap(lambda tg, cg, bg: residual_ece(weights, tg, cg, bg, n_bins))(t, conf, bins)
    return jnp.mean(per)


_statistic_jit = jax.jit(nc_ece_statistic, static_argnames=("n_bins",))


def nc_ece_items(probs: np.ndarray, kind: str, n_bins: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Confidences, equal-width bins and target columns of :func:`nc_ece_statistic`.

    Parameters
    ----------
    probs : ndarray of shape (n_items, K)
        Predicted probabilities.
    kind : {'positive_class', 'top_label', 'classwise'}
        As in :func:`noisycal.ece` (top label: the lowest index on ties).
    n_bins : int

    Returns
    -------
    conf, bins, cols : arrays of shape (n_groups, n_items)
    """
    n, K = probs.shape
    conf = group_scores(probs, np.zeros((n, K)), kind)[0].T
    bins = np.stack([equal_width_bins(c, n_bins) for c in conf])
    return conf, bins.astype(np.int32), target_columns(probs, kind)


def credible_stat(w: np.ndarray, T: np.ndarray, *, conf: np.ndarray, bins: np.ndarray,
                  cols: np.ndarray, n_bins: int) -> float:
    """The binned ECE of item-weighted rows, one draw of a credible interval.

    Parameters
    ----------
    w : ndarray of shape (n_items,)
        Item weights (a Bayesian-bootstrap draw).
    T : ndarray of shape (n_items, n_classes)
        The target rows of this draw.
    conf, bins, cols : ndarray
        Scores, bin indices and target columns per group (:func:`nc_ece_items`).
    n_bins : int
    """
    with x64():
        return float(_statistic_jit(w, T, conf, bins, cols, n_bins=n_bins))


def _statistic_items(est: Estimate, conf: np.ndarray, bins: np.ndarray, target: Any,
                     probs: np.ndarray | None, asked: str) -> tuple:
    """(conf, bins, cols) of every group; for K > 2 rebuilt from ``probs``."""
    M, kind = int(est.details["n_bins"]), est.details["kind"]
    K = np.shape(getattr(target, "values", target))[-1]
    if probs is None:
        if K > 2:
            raise ValueError(f"{asked} with {K} classes needs the predictions: pass "
                             "probs= (n_items, K) to nc_ece_interval, which rebuilds the "
                             "top-label or classwise NC-ECE from them in every replicate")
        conf, bins = np.atleast_2d(conf), np.atleast_2d(bins)
        return conf, bins.astype(np.int32), np.ones(conf.shape, np.int32)
    probs = check_array(probs, "probs", ndim=2)
    if probs.shape[1] != K or probs.shape[0] != est.n:
        raise ValueError(f"probs must have shape ({est.n}, {K}) (the metric's items and the "
                         f"target's classes), got {probs.shape}")
    return nc_ece_items(probs, kind, M)


def nc_ece_interval(est: Estimate, conf: np.ndarray | None, bins: np.ndarray | None,
                    target: Any, *, interval: Bound | Refit | Credible, level: float,
                    seed: Seed, probs: np.ndarray | None = None,
                    estimator: str = "median-unbiased") -> Estimate:
    """Attach an NC-ECE interval (bound, credible or channel-refit bootstrap) to ``est``.

    Parameters
    ----------
    est : Estimate
        The point estimate (binned L1 ECE, no interval); its details give ``kind`` and
        ``n_bins``.
    conf : ndarray of shape (n_items,), optional
        Positive-class probabilities (two classes; ignored when ``probs`` is given).
    bins : ndarray of int, shape (n_items,), optional
        The estimate's bin of each item (two classes; ignored when ``probs`` is given).
    target : Target
        The corrected target.
    interval : Bound, Refit or Credible
        The interval option (:mod:`noisycal.intervals`); a Refit with
        ``method='inversion'`` is :func:`~noisycal.metrics.nc.assemble.refit_inversion`.
    level, seed
        As in :func:`noisycal.ece`.
    probs : ndarray of shape (n_items, K), optional
        The predictions; needed for K > 2 (top-label and classwise NC-ECE: the
        confidences, equal-width bins and predicted classes are rebuilt from them).
    estimator : {'median-unbiased', 'plug-in'}, default='median-unbiased'
        The value reported by the refit inversion.

    Returns
    -------
    Estimate
    """
    M = int(est.details["n_bins"])
    asked = f"interval={interval!r}"
    if isinstance(interval, Refit):
        n_boot = interval.n_boot
        check_refit_target(target)
        items = _statistic_items(est, conf, bins, target, probs, asked)
        if interval.method == "inversion":
            return refit_inversion(est, target, items, n_bins=M, n_boot=n_boot, level=level,
                                   seed=seed, estimator=estimator,
                                   progress=interval.progress)
        reps, extra = nc_ece_refit_replicates(target, items, n_bins=M, n_boot=n_boot,
                                              statistic=nc_ece_statistic, seed=seed,
                                              progress=interval.progress)
        ci, status, message = interval_from_replicates(float(est), reps, level,
                                                       interval.method)
        if extra["n_failed"]:
            message = (f"{extra['n_failed']} of {n_boot} refits gave a channel that cannot "
                       f"be inverted (gap or smallest singular value <= 1e-4); " + message)
        if extra["n_nonfinite"]:
            message = (f"{extra['n_nonfinite']} of {n_boot} refits gave a non-finite "
                       "value; " + message)
        return Estimate(est.name, est.value, ci, level, "bootstrap", interval.method,
                        n=est.n, n_boot=n_boot, bins=est.bins, status=status,
                        statuses=est.statuses, message=join_messages(message, est.message),
                        details={**est.details, **extra, "refit_channels": True},
                        replicates=reps)
    if isinstance(interval, Credible):
        check_credible_target(target)
        c, b, cols = _statistic_items(est, conf, bins, target, probs, asked)
        ci, extra, vals = nc_ece_credible(
            target, level, statistic=partial(credible_stat, conf=c, bins=b, cols=cols,
                                             n_bins=M), seed=seed)
        status, message = est.status, est.message
        if extra["n_failed"]:
            status, message = "nonfinite", join_messages(
                f"{extra['n_failed']} of {extra['n_channel_draws']} channel draws cannot be "
                "inverted (gap or smallest singular value <= 1e-4); no interval", message)
        return Estimate(est.name, est.value, ci, level, "credible", "credible-eti", n=est.n,
                        bins=est.bins, status=status, statuses=est.statuses, message=message,
                        details={**est.details, **extra}, replicates=vals)
    if not isinstance(interval, Bound):
        raise ValueError(f"interval must be a Bound, Refit or Credible option, got "
                         f"{interval!r}")
    items = (_statistic_items(est, conf, bins, target, probs, asked)
             if getattr(target, "kind", None) == "corrected" else None)  # else refused
    ci, extra = nc_ece_bound(float(est), target, est.bins["count"].to_numpy().reshape(-1, M),
                             level, items=items, mode=interval.mode,
                             channel_radius=interval.channel_radius,
                             true_channels=interval.true_channels,
                             same_sample=interval.same_sample, bound_kind=interval.kind)
    statuses, message = est.statuses, extra["bound_note"]
    if extra["bound_mode"] == "binned_only" and fitted_channels(target):
        # the guarantee is for the error against the fitted channels, not the true ones
        statuses, message = (*statuses, "channels_fixed"), join_messages(
            message, "the channels were fitted, and the bound leaves their estimation "
            "error out (mode='binned_only'): it bounds the binned error against the fitted "
            "channels, not the NC-ECE; give Bound(channel_radius=...) (a bound on the "
            "channels' total-variation error) for a guarantee, or use the default interval")
    if est.status != "ok":
        message = join_messages(est.message, message)
    return Estimate(est.name, est.value, ci, level, "bound", extra["bound_method"], n=est.n,
                    bins=est.bins, status=est.status, statuses=statuses, message=message,
                    details={**est.details, **extra})
