"""Binned calibration errors (ECE, MCE, classwise, debiased L2, true-label ECE).

Every function here compares predictions with a *target* matrix T (see
:mod:`noisycal.targets`): the bin statistic is the mean of ``T[i, k]`` over the
items in the bin (k the predicted class for top-label ECE, k fixed for classwise
and positive-class ECE). With hard labels this is the textbook ECE, with soft
labels the expected true-label ECE of paper 000.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

import jax
import jax.numpy as jnp

from .._jax import as_key, as_numpy_rng, x64
from .._typing import ArrayLike, Seed
from .._validation import PROB_ATOL, check_choice, check_int, check_level, predictions
from ..intervals.bootstrap import (
    BOOTSTRAP_METHODS,
    cluster_codes,
    default_batch_size,
    interval_from_replicates,
    replicate_weights,
)
from ..intervals.estimate import Estimate
from ..targets import Target, as_target_matrix
from .binning import (
    BIN_STRATEGIES,
    KINDS,
    Binned,
    assign_bins,
    gather_stats,
    group_scores,
    make_binned,
    metric_from_stats,
    quantile_inner_edges,
    segment_stats,
)

__all__ = ["ece", "mce", "true_label_ece", "PAPER_N_BINS", "INTERVALS"]

#: Bin counts used by the four papers (000 and 002: 15, 001: 25, 003: 10).
PAPER_N_BINS = {"000": 15, "001": 25, "002": 15, "003": 10}

#: Interval kinds the binned metrics offer in this version.
INTERVALS = (None, "bootstrap", "bound", "credible")


# ----------------------------------------------------------------------------- kernels


@partial(jax.jit, static_argnames=("n_bins", "n_draws", "reduce", "norm", "debias"))
def _point_stats(data: jax.Array, bins: jax.Array, *, n_bins: int, n_draws: int, reduce: str,
                 norm: str, debias: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    stats = segment_stats(data, bins, None, n_bins)
    value, per_group = metric_from_stats(stats, n_draws, reduce, norm, debias)
    return stats, value, per_group


def _bin_means(stats: jax.Array, n_draws: int) -> jax.Array:
    cnt = stats[:, :, 0]
    mt = jnp.mean(stats[:, :, 2:2 + n_draws], axis=2)
    return jnp.where(cnt > 0, mt / jnp.where(cnt > 0, cnt, 1.0), jnp.nan)


@partial(jax.jit, static_argnames=("n_bins", "n_draws", "reduce", "norm", "debias", "n_boot",
                                   "batch_size", "n_clusters", "rebin"))
def _replicates(rng_key: jax.Array, data: jax.Array, bins: jax.Array, codes: jax.Array | None,
                conf_sorted: jax.Array, order: jax.Array, *, n_bins: int, n_draws: int,
                reduce: str, norm: str, debias: bool, n_boot: int, batch_size: int,
                n_clusters: int, rebin: bool) -> tuple[jax.Array, jax.Array]:
    n = data.shape[1]
    keys = jax.random.split(rng_key, n_boot)

    def one(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        if rebin:
            w = replicate_weights(key, n, codes, n_clusters)
            inner = jax.vmap(lambda cs, o: quantile_inner_edges(cs, w[o], n_bins))(
                conf_sorted, order)
            b = jax.vmap(assign_bins)(data[:, :, 1], inner)
            stats = segment_stats(data, b, w, n_bins)
        elif codes is None:
            idx = jax.random.randint(key, (n,), 0, n, dtype=jnp.int32)
            stats = gather_stats(data, bins, idx, n_bins)
        else:
            w = replicate_weights(key, n, codes, n_clusters)
            stats = segment_stats(data, bins, w, n_bins)
        value, _ = metric_from_stats(stats, n_draws, reduce, norm, debias)
        return value, _bin_means(stats, n_draws)

    return jax.lax.map(one, keys, batch_size=batch_size)


@partial(jax.jit, static_argnames=("n_bins", "n_draws", "reduce", "norm", "debias",
                                   "batch_size"))
def _jackknife_items(data: jax.Array, bins: jax.Array, total: jax.Array, *, n_bins: int,
                     n_draws: int, reduce: str, norm: str, debias: bool,
                     batch_size: int) -> jax.Array:
    """Exact leave-one-item-out values with the bins held fixed."""
    G = data.shape[0]
    groups = jnp.arange(G)

    def loo(i: jax.Array) -> jax.Array:
        stats = total.at[groups, bins[:, i], :].add(-data[:, i, :])
        return metric_from_stats(stats, n_draws, reduce, norm, debias)[0]

    return jax.lax.map(loo, jnp.arange(data.shape[1]), batch_size=batch_size)


@partial(jax.jit, static_argnames=("n_bins", "n_draws", "reduce", "norm", "debias",
                                   "n_groups"))
def _jackknife_groups(data: jax.Array, bins: jax.Array, group: jax.Array, *, n_bins: int,
                      n_draws: int, reduce: str, norm: str, debias: bool,
                      n_groups: int) -> jax.Array:
    """Leave-one-group-out values (groups of clusters), bins held fixed."""

    def loo(g: jax.Array) -> jax.Array:
        w = jnp.where(group == g, 0.0, 1.0)
        stats = segment_stats(data, bins, w, n_bins)
        return metric_from_stats(stats, n_draws, reduce, norm, debias)[0]

    return jax.lax.map(loo, jnp.arange(n_groups), batch_size=min(n_groups, 16))


# ----------------------------------------------------------------------------- driver


def _check_common(n_bins: object, strategy: object, norm: object, debias: object,
                  interval: object, level: object, n_boot: object, method: object,
                  rebin: object) -> tuple[int, float, int]:
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    check_choice(strategy, "strategy", BIN_STRATEGIES)
    check_choice(norm, "norm", ("l1", "l2"))
    if debias and norm != "l2":
        raise ValueError("debias=True is defined for norm='l2' only (Kumar et al. 2019)")
    check_choice(interval, "interval", INTERVALS)
    level = check_level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    check_choice(method, "method", BOOTSTRAP_METHODS)
    if rebin and strategy != "quantile":
        raise ValueError("rebin=True re-estimates equal-mass edges per replicate; it needs "
                         "strategy='quantile'")
    return n_bins, level, n_boot


def _resolve_kind(kind: str | None, binary_1d: bool, n_classes: int) -> str:
    if kind is None:
        return "positive_class" if binary_1d else "top_label"
    check_choice(kind, "kind", KINDS)
    if kind == "positive_class" and n_classes != 2:
        raise ValueError(f"kind='positive_class' needs 2 classes, got {n_classes}")
    return kind


def _binned_estimate(binned: Binned, groups: list, *, name: str, reduce: str, norm: str,
                     debias: bool, interval: str | None, level: float, n_boot: int,
                     method: str, seed: Seed, cluster: ArrayLike | None, rebin: bool,
                     batch_size: int | None, details: dict) -> Estimate:
    G, n, C = binned.data.shape
    B, D = binned.n_bins, binned.n_draws
    cfg = dict(n_bins=B, n_draws=D, reduce=reduce, norm=norm, debias=debias)
    codes, n_clusters = cluster_codes(cluster, n)
    with x64():
        data = jnp.asarray(binned.data)
        bins = jnp.asarray(binned.bins)
        stats, value, per_group = _point_stats(data, bins, **cfg)
        stats = np.asarray(stats)
        value = float(value)
        per_group = np.asarray(per_group)
        reps = bin_reps = jack = None
        if interval == "bootstrap":
            key = as_key(seed)
            # On CPU a sequential map (one replicate per step) measured fastest: XLA
            # parallelises a single large gather/scatter better than a vmapped batch.
            bs = batch_size or (1 if jax.default_backend() == "cpu"
                                else default_batch_size(n_boot, 2 * G * n * C))
            order = np.argsort(binned.data[:, :, 1], axis=1, kind="stable")
            conf_sorted = np.take_along_axis(binned.data[:, :, 1], order, axis=1)
            reps, bin_reps = _replicates(
                key, data, bins, None if codes is None else jnp.asarray(codes),
                jnp.asarray(conf_sorted), jnp.asarray(order.astype(np.int32)),
                n_boot=n_boot, batch_size=bs, n_clusters=n_clusters, rebin=bool(rebin), **cfg)
            reps, bin_reps = np.asarray(reps), np.asarray(bin_reps)
            if method == "bca":
                if codes is None:
                    jbs = max(1, min(n, 2**22 // max(G * B * C, 1)))
                    jack = np.asarray(_jackknife_items(data, bins, jnp.asarray(stats),
                                                       batch_size=jbs, **cfg))
                else:
                    n_groups = min(n_clusters, 1000)
                    grp = (codes.astype(np.int64) * n_groups) // n_clusters
                    jack = np.asarray(_jackknife_groups(data, bins, jnp.asarray(grp, jnp.int32),
                                                        n_groups=n_groups, **cfg))
    status, message = "ok", ""
    ci = None
    if reps is not None:
        ci, status, message = interval_from_replicates(value, reps, level, method, jack)
    # per-bin table
    cnt = stats[:, :, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.where(cnt > 0, stats[:, :, 1] / cnt, np.nan)
        mean_t = np.where(cnt > 0, stats[:, :, 2:2 + D].mean(axis=2) / cnt, np.nan)
    rows = {
        "group": np.repeat(groups, B),
        "bin": np.tile(np.arange(B), G),
        "lo": binned.edges[:, :-1].ravel(),
        "hi": binned.edges[:, 1:].ravel(),
        "count": cnt.ravel().astype(np.int64),
        "mean_conf": mean_conf.ravel(),
        "mean_target": mean_t.ravel(),
        "gap": (mean_t - mean_conf).ravel(),
    }
    if bin_reps is not None:
        a = (1.0 - level) / 2.0
        flat = bin_reps.reshape(bin_reps.shape[0], -1)
        lo = np.full(flat.shape[1], np.nan)
        hi = np.full(flat.shape[1], np.nan)
        ok = np.any(np.isfinite(flat), axis=0)
        if np.any(ok):
            lo[ok], hi[ok] = np.nanquantile(flat[:, ok], [a, 1.0 - a], axis=0)
        rows["low"], rows["high"] = lo, hi
    table = pd.DataFrame(rows)
    table.attrs.update({"level": level if interval else None, "interval": interval})
    det = dict(details)
    det.update(n_bins=B, n_empty_bins=int(np.sum(cnt == 0)), edges=binned.edges)
    if G > 1 or groups[0].startswith("class"):
        det["per_group"] = dict(zip(groups, per_group.tolist(), strict=True))
    return Estimate(name, value, ci, level if ci is not None else None,
                    "bootstrap" if ci is not None else None,
                    method if ci is not None else None, n=n,
                    n_boot=n_boot if ci is not None else None, bins=table, status=status,
                    message=message, details=det, replicates=reps)


def _target_kind(target: object, T: np.ndarray) -> str:
    """Provenance of a target: a Target's kind, 'hard' for label vectors, else 'matrix'."""
    if isinstance(target, Target):
        return target.kind
    if np.ndim(target) == 1:
        return "hard"
    return "matrix"


def _binned_metric(probs: ArrayLike | None, target: object, logits: ArrayLike | None, *,
                   name: str, reduce: str, kind: str | None, n_bins: int, strategy: str,
                   norm: str, debias: bool, interval: str | None, level: float, n_boot: int,
                   method: str, seed: Seed, cluster: ArrayLike | None, rebin: bool,
                   batch_size: int | None, bound: dict | None = None,
                   refit_channels: bool = False) -> Estimate:
    n_bins, level, n_boot = _check_common(n_bins, strategy, norm, debias, interval, level,
                                          n_boot, method, rebin)
    if not isinstance(refit_channels, bool | np.bool_):
        raise ValueError(f"refit_channels must be True or False, got {refit_channels!r}")
    P, _, binary = predictions(probs, logits)
    kind = _resolve_kind(kind, binary, P.shape[1])
    T = as_target_matrix(target, P.shape[0], P.shape[1])
    target_kind = _target_kind(target, T)
    conf, tgt, groups = group_scores(P, T, kind)
    binned = make_binned(conf, tgt, n_bins, strategy, with_sq=debias)
    label = {"top_label": name, "positive_class": f"positive-class {name}",
             "classwise": f"classwise {name}"}[kind]
    if norm == "l2":
        label = ("debiased " if debias else "") + "L2 " + label
    details = {"kind": kind, "strategy": strategy, "norm": norm, "debias": debias,
               "target_kind": target_kind}
    if refit_channels:
        if interval != "bootstrap" or method == "bca" or cluster is not None:
            raise ValueError("refit_channels=True is a bootstrap over items: it needs "
                             "interval='bootstrap', method 'percentile' or 'basic', and no "
                             "cluster")
    if interval in ("bound", "credible") or refit_channels:
        if reduce != "ece" or norm != "l1" or debias or kind != "positive_class" \
                or strategy != "uniform":
            raise ValueError(f"interval={interval!r}"
                             + (" with refit_channels=True" if refit_channels else "")
                             + " is an NC-ECE interval of paper 003: it needs the L1 "
                             "positive-class ECE with equal-width bins (kind="
                             "'positive_class', norm='l1', strategy='uniform')")
        from ..intervals.bounds import nc_ece_bound, nc_ece_credible

        est = _binned_estimate(binned, groups, name=label, reduce=reduce, norm=norm,
                               debias=debias, interval=None, level=level, n_boot=n_boot,
                               method=method, seed=seed, cluster=cluster, rebin=rebin,
                               batch_size=batch_size, details=details)
        if refit_channels:
            from ..intervals.refit import nc_ece_refit_replicates

            reps, extra = nc_ece_refit_replicates(conf[:, 0], target, n_bins=n_bins,
                                                  n_boot=n_boot, seed=seed)
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
            ci, extra, vals = nc_ece_credible(conf[:, 0], target, n_bins, level, seed=seed)
            return Estimate(est.name, est.value, ci, level, "credible", "credible-eti",
                            n=est.n, bins=est.bins, status=est.status, message="",
                            details={**est.details, **extra}, replicates=vals)
        ci, extra = nc_ece_bound(float(est), target, est.bins["count"].to_numpy(), level,
                                 **(bound or {}))
        return Estimate(est.name, est.value, ci, level, "bound", "hoeffding-union", n=est.n,
                        bins=est.bins, status=est.status,
                        message=extra["bound_note"], details={**est.details, **extra})
    return _binned_estimate(binned, groups, name=label, reduce=reduce, norm=norm,
                            debias=debias, interval=interval, level=level, n_boot=n_boot,
                            method=method, seed=seed, cluster=cluster, rebin=rebin,
                            batch_size=batch_size, details=details)


# ----------------------------------------------------------------------------- public


def ece(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    n_bins: int = 15,
    kind: str | None = None,
    strategy: str = "uniform",
    norm: str = "l1",
    debias: bool = False,
    interval: str | None = "bootstrap",
    level: float = 0.9,
    n_boot: int = 1000,
    method: str = "percentile",
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
    rebin: bool = False,
    batch_size: int | None = None,
    bound_mode: str = "binned_only",
    channel_radius: float | None = None,
    true_channels: tuple | None = None,
    same_sample: bool = False,
    refit_channels: bool = False,
) -> Estimate:
    r"""Binned expected calibration error against any target.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_classes) or (n_items,)
        Predicted probabilities; rows sum to 1 (within 1e-6). A 1-D array holds
        positive-class probabilities of a binary problem. Give ``probs`` or ``logits``.
    target : Target, array-like of shape (n_items, n_classes), or int labels (n_items,)
        What the predictions are compared with. Any finite real matrix is accepted
        (noise-corrected targets may leave [0, 1]).
    logits : array-like of shape (n_items, n_classes) or (n_items,), optional
        Pre-softmax scores (1-D: the positive-class logit), instead of ``probs``.
    n_bins : int, default=15
        Number of bins (paper defaults in ``PAPER_N_BINS``).
    kind : {'top_label', 'classwise', 'positive_class'}, optional
        Default: 'positive_class' for 1-D binary input, else 'top_label'.
    strategy : {'uniform', 'quantile'}, default='uniform'
        Equal-width bins, or equal-mass bins whose inner edges are midpoints
        between order statistics (see :func:`~noisycal.metrics.binning.quantile_inner_edges`).
    norm : {'l1', 'l2'}, default='l1'
    debias : bool, default=False
        With ``norm='l2'``: the debiased estimator of Kumar, Liang & Ma (2019).
    interval : {'bootstrap', 'bound', 'credible', None}, default='bootstrap'
        'credible': for a corrected target built from a NUTS fit, channel posterior
        draws combined with a Bayesian bootstrap of items
        (:func:`noisycal.intervals.bounds.nc_ece_credible`).
        'bound': the finite-sample NC-ECE interval of paper 003 (Theorem 1 / Eq. C.11,
        or Proposition 1 with ``same_sample=True``) for a two-class corrected target; see
        :mod:`noisycal.intervals.bounds`. Its components (B-hat, sampling radius,
        channel term) are in ``details``.
    level : float, default=0.9
        Interval coverage, a fraction in (0, 1).
    n_boot : int, default=1000
    method : {'percentile', 'basic', 'bca'}, default='percentile'
    seed : int or jax key, default=0
    cluster : array-like of shape (n_items,), optional
        Cluster ids (several rows of one unit); clusters are resampled whole.
    rebin : bool, default=False
        With ``strategy='quantile'``: re-estimate the equal-mass edges in every
        replicate (True) or keep the sample's edges fixed (False).
    bound_mode : {'binned_only', 'oracle', 'radius'}, default='binned_only'
        With ``interval='bound'``: how the channel term enters (left out, exact from
        ``true_channels=(a, b)``, or ``B * channel_radius``).
    channel_radius, true_channels, same_sample
        See ``bound_mode`` and :func:`noisycal.intervals.bounds.nc_ece_bound`.
    batch_size : int, optional
        Replicates per vectorised chunk; default 1 on CPU (a sequential ``lax.map``
        measured fastest there) and as many as fit ~2**25 numbers on accelerators.
    refit_channels : bool, default=False
        With ``interval='bootstrap'`` and a two-class corrected target built from an EM
        fit: refit the channels (and the aggregation weights) in every replicate, so
        the interval carries the channel estimation error; False holds the channels at
        their estimates (the conditional bootstrap). See
        :mod:`noisycal.intervals.refit`.

    Returns
    -------
    Estimate
        ``bins`` holds the per-bin table; ``details['per_group']`` the per-class values
        in classwise mode.

    Notes
    -----
    With bins :math:`B_b`, confidences :math:`c_i` and target values :math:`t_i`,

    .. math:: \mathrm{ECE}_1 = \sum_b \frac{|B_b|}{n}\,|\bar t_b - \bar c_b|,
              \qquad
              \mathrm{ECE}_2 = \Big(\sum_b \frac{|B_b|}{n}(\bar t_b - \bar c_b)^2\Big)^{1/2}.

    Classwise values combine the K per-class errors as :math:`(\frac1K\sum_k
    \mathrm{CE}_k^p)^{1/p}` (Kull et al. 2019 for p = 1; Kumar et al. 2019 for p = 2).
    Empty bins contribute nothing. The bootstrap resamples items (or clusters) with
    the bins held fixed, unless ``rebin=True``; BCa's acceleration uses the exact
    leave-one-item-out jackknife (bins fixed).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    >>> float(nc.ece(p, np.array([0, 1, 1]), n_bins=10, interval=None))
    0.4
    """
    return _binned_metric(probs, target, logits, name="ECE", reduce="ece", kind=kind,
                          n_bins=n_bins, strategy=strategy, norm=norm, debias=debias,
                          interval=interval, level=level, n_boot=n_boot, method=method,
                          seed=seed, cluster=cluster, rebin=rebin, batch_size=batch_size,
                          bound={"mode": bound_mode, "channel_radius": channel_radius,
                                 "true_channels": true_channels, "same_sample": same_sample},
                          refit_channels=refit_channels)


def mce(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    n_bins: int = 15,
    kind: str | None = None,
    strategy: str = "uniform",
    interval: str | None = "bootstrap",
    level: float = 0.9,
    n_boot: int = 1000,
    method: str = "percentile",
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
    rebin: bool = False,
    batch_size: int | None = None,
) -> Estimate:
    r"""Maximum calibration error: the largest |mean target - mean confidence| over non-empty bins.

    Same arguments as :func:`ece`. In classwise mode the maximum runs over all classes
    and bins.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    >>> round(float(nc.mce(p, np.array([0, 1, 1]), n_bins=10, interval=None)), 6)
    0.8
    """
    return _binned_metric(probs, target, logits, name="MCE", reduce="mce", kind=kind,
                          n_bins=n_bins, strategy=strategy, norm="l1", debias=False,
                          interval=interval, level=level, n_boot=n_boot, method=method,
                          seed=seed, cluster=cluster, rebin=rebin, batch_size=batch_size)


def true_label_ece(
    probs: ArrayLike | None = None,
    soft_labels: object = None,
    *,
    logits: ArrayLike | None = None,
    form: str = "mc",
    n_draws: int = 100,
    n_bins: int = 15,
    kind: str | None = None,
    strategy: str = "uniform",
    interval: str | None = "bootstrap",
    level: float = 0.9,
    n_boot: int = 1000,
    method: str = "percentile",
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
    batch_size: int | None = None,
) -> Estimate:
    r"""True-label ECE of paper 000: ECE against labels drawn from the annotator distribution.

    Parameters
    ----------
    probs, logits : see :func:`ece`
    soft_labels : Target or array-like of shape (n_items, n_classes)
        Annotator distributions pi-hat_i (rows on the simplex).
    form : {'mc', 'expected'}, default='mc'
        'mc': draw :math:`\tilde y_i^{(s)} \sim \hat\pi_i` for s = 1..n_draws, compute the
        ECE of each draw with the same bins, and average the ECEs (paper 000, section 3.2;
        the draws are not pooled). 'expected': the ECE with the soft target itself,
        :math:`\sum_b \frac{|B_b|}{n}|\mathrm{mean}_{i\in B_b}\hat\pi_{i\hat c_i} - \bar c_b|`,
        the deterministic version; by Jensen the 'mc' form's expectation is at least it.
    n_draws : int, default=100
        Number of label draws S for ``form='mc'``.
    seed : int or jax key, default=0
        Seeds the label draws (and, through a split, the bootstrap).

    Returns
    -------
    Estimate
        The bootstrap resamples items and keeps each item's draws, so the interval
        reflects sampling of items, not the Monte-Carlo error of the draws.
    """
    check_choice(form, "form", ("mc", "expected"))
    check_choice(interval, "interval", (None, "bootstrap"))
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    n_bins, level, n_boot = _check_common(n_bins, strategy, "l1", False, interval, level,
                                          n_boot, method, False)
    P, _, binary = predictions(probs, logits)
    kind = _resolve_kind(kind, binary, P.shape[1])
    S = as_target_matrix(soft_labels, P.shape[0], P.shape[1], name="soft_labels")
    if np.any(S < -PROB_ATOL) or np.any(np.abs(S.sum(1) - 1.0) > PROB_ATOL):
        raise ValueError("soft_labels rows must be probability distributions (non-negative, "
                         "summing to 1)")
    key = as_key(seed)
    draw_key, boot_key = jax.random.split(key)
    draws = None
    if form == "mc":
        rng = as_numpy_rng(draw_key)
        cum = np.cumsum(np.clip(S, 0.0, None), axis=1)
        cum /= cum[:, -1:]
        u = rng.random((n_draws, P.shape[0]))
        draws = np.minimum((u[:, :, None] >= cum[None, :, :]).sum(axis=2), P.shape[1] - 1)
    conf, tgt, groups = group_scores(P, S, kind, draws=draws)
    binned = make_binned(conf, tgt, n_bins, strategy, with_sq=False)
    label = {"top_label": "true-label ECE", "positive_class": "positive-class true-label ECE",
             "classwise": "classwise true-label ECE"}[kind]
    return _binned_estimate(binned, groups, name=label, reduce="ece", norm="l1", debias=False,
                            interval=interval, level=level, n_boot=n_boot, method=method,
                            seed=boot_key, cluster=cluster, rebin=False,
                            batch_size=batch_size,
                            details={"kind": kind, "form": form, "n_draws": n_draws
                                     if form == "mc" else None, "strategy": strategy,
                                     "target_kind": "sampled" if form == "mc" else "soft"})
