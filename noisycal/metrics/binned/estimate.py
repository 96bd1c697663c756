"""Binned estimates: the jitted kernels and the per-bin table shared by every binned metric.

The kernels compute the point value, bootstrap replicates and jackknife; the binned
metrics are those of :mod:`noisycal.metrics.ece`."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, as_numpy_rng, x64
from ..._util.types import ArrayLike, Seed
from ..._util.validation import check_work_bytes
from ...intervals.bootstrap import (
    cluster_codes,
    default_batch_size,
    interval_from_replicates,
    replicate_weights,
)
from ...intervals.estimate import Estimate
from ...intervals.inversion import inversion_report, invert_norm, no_variation
from ...intervals.options import Bootstrap, Inversion
from ..nc.credible import equal_tailed
from .bins import (
    Binned,
    assign_bins,
    bin_sums,
    gather_stats,
    metric_from_stats,
    quantile_inner_edges,
    segment_stats,
)
from .bootstrap import (
    CellPlan,
    binned_bootstrap_applies,
    binned_replicate_stats,
    cell_plan,
)
from .form import TableForm
from .outside import with_outside_bins
from .poisson import poisson_replicate_stats

__all__ = ["binned_estimate", "binned_bootstrap_applies", "requested_scheme"]


def requested_scheme(boot: Bootstrap) -> str:
    """The scheme a :class:`~noisycal.intervals.Bootstrap` asks for: its ``scheme``, and
    'poisson' for 'auto' with ``devices`` (only the Poisson bootstrap shards over items
    without a gather across devices; the option refuses devices with another scheme).

    Parameters
    ----------
    boot : Bootstrap

    Returns
    -------
    {'auto', 'exact', 'binned', 'poisson'}
    """
    return "poisson" if boot.devices is not None else boot.scheme


# ----------------------------------------------------------------------------- kernels


@partial(jax.jit, static_argnames=("n_draws", "reduce", "norm", "debias"))
def _point_value(stats: jax.Array, *, n_draws: int, reduce: str, norm: str,
                 debias: bool) -> tuple[jax.Array, jax.Array]:
    return metric_from_stats(stats, n_draws, reduce, norm, debias)


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
            w = replicate_weights(key, codes, n_clusters)
            inner = jax.vmap(lambda cs, o: quantile_inner_edges(cs, w[o], n_bins))(
                conf_sorted, order)
            b = jax.vmap(assign_bins)(data[:, :, 1], inner)
            stats = segment_stats(data, b, w, n_bins)
        elif codes is None:
            idx = jax.random.randint(key, (n,), 0, n, dtype=jnp.int32)
            stats = gather_stats(data, bins, idx, n_bins)
        else:
            w = replicate_weights(key, codes, n_clusters)
            stats = segment_stats(data, bins, w, n_bins)
        value, _ = metric_from_stats(stats, n_draws, reduce, norm, debias)
        return value, _bin_means(stats, n_draws)

    return jax.lax.map(one, keys, batch_size=batch_size)


@partial(jax.jit, static_argnames=("n_draws", "reduce", "norm", "debias", "batch_size"))
def _jackknife_items(data: jax.Array, bins: jax.Array, total: jax.Array, *,
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


# ----------------------------------------------------------------------------- binned bootstrap


@partial(jax.jit, static_argnames=("n_draws", "reduce", "norm", "debias"))
def _metric_of_replicates(stats: jax.Array, *, n_draws: int, reduce: str, norm: str,
                          debias: bool) -> tuple[jax.Array, jax.Array]:
    """Values and per-bin means of replicate statistics of shape (R, 1, B, C)."""

    def one(st: jax.Array) -> tuple[jax.Array, jax.Array]:
        return metric_from_stats(st, n_draws, reduce, norm, debias)[0], _bin_means(st, n_draws)

    return jax.vmap(one)(stats)


def _run_binned(binned: Binned, cfg: dict, *, n_boot: int, seed: Seed,
                plan: CellPlan | None = None, n: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Replicate values and per-bin replicate means of the binned bootstrap."""
    plan = cell_plan(binned) if plan is None else plan
    stats = binned_replicate_stats(plan, binned.data.shape[1] if n is None else n,
                                   binned.n_bins, n_boot, as_numpy_rng(seed))
    metric_cfg = {k: v for k, v in cfg.items() if k != "n_bins"}
    reps, bin_reps = _metric_of_replicates(jnp.asarray(stats[:, None]), **metric_cfg)
    return np.asarray(reps), np.asarray(bin_reps)


def resolve_scheme(scheme: str, binned: Binned, codes: np.ndarray | None,
                   rebin: bool) -> str:
    """The bootstrap scheme to run: 'auto' becomes 'binned' where it applies, else 'exact'.

    Parameters
    ----------
    scheme : {'auto', 'exact', 'binned'}
    binned : Binned
    codes : ndarray or None
        Cluster codes.
    rebin : bool

    Returns
    -------
    {'exact', 'binned'}

    Raises
    ------
    ValueError
        ``scheme='binned'`` where it does not apply (see
        :func:`binned_bootstrap_applies`).
    """
    if scheme == "poisson" and rebin:
        raise ValueError("Bootstrap(scheme='poisson') (what devices make of 'auto') keeps "
                         "the sample's bins fixed; rebin=True needs scheme='exact'")
    applies = binned_bootstrap_applies(binned, codes, rebin)
    if scheme == "binned" and not applies:
        raise ValueError("Bootstrap(scheme='binned') needs one score group (top-label or "
                         "positive-class, not classwise), one target value per item, no "
                         "cluster and rebin=False; use scheme='exact'")
    if scheme == "auto":
        return "binned" if applies else "exact"
    return scheme


def check_replicate_memory(n_boot: int, n_groups: int, n_bins: int, n_stats: int = 1
                           ) -> None:
    """Refuse a bootstrap whose stacked replicate arrays would pass ``MAX_WORK_BYTES``.

    Every replicate keeps its per-bin means (``n_groups x n_bins`` float64; G = n_classes
    for the classwise ECE, else 1), and the Poisson scheme its per-bin sums
    (``n_stats`` of them per bin): with 10^4 classes, 15 bins and 10^4 replicates that is
    11 GiB, refused here before anything is drawn.

    Parameters
    ----------
    n_boot, n_groups, n_bins : int
    n_stats : int, default=1
        Numbers per bin and replicate.
    """
    check_work_bytes(8.0 * n_boot * n_groups * n_bins * n_stats, "n_boot",
                     f"{n_boot} bootstrap replicates of {n_groups} score group(s) x "
                     f"{n_bins} bins" + (f" x {n_stats} sums" if n_stats > 1 else "")
                     + " (float64; fewer replicates, classes or bins need less)")


def _run_bootstrap(binned: Binned, stats: np.ndarray,
                   codes: np.ndarray | None, n_clusters: int, cfg: dict, *, n_boot: int,
                   method: str, seed: Seed, rebin: bool, batch_size: int | None,
                   scheme: str = "exact", devices: tuple | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, str]:
    """Replicate values, per-bin replicate means, BCa's jackknife values, scheme run."""
    G, n, C = binned.data.shape
    B = binned.n_bins
    check_replicate_memory(n_boot, G, B, C if scheme == "poisson" else 1)
    if scheme == "exact" or method == "bca":
        data, bins = jnp.asarray(binned.data), jnp.asarray(binned.bins)
    if scheme == "binned":
        reps, bin_reps = _run_binned(binned, cfg, n_boot=n_boot, seed=seed)
    elif scheme == "poisson":  # replicates with no item drawn have no value (NaN)
        st = poisson_replicate_stats(binned.data, binned.bins, codes, as_key(seed),
                                     n_bins=B, n_boot=n_boot, devices=devices)
        reps, bin_reps = _metric_of_replicates(st, **{k: v for k, v in cfg.items()
                                                       if k != "n_bins"})
        reps = jnp.where(jnp.sum(st[:, 0, :, 0], axis=1) > 0, reps, jnp.nan)
    else:
        # On CPU a sequential map (one replicate per step) measured fastest: XLA
        # parallelises a single large gather/scatter better than a vmapped batch.
        bs = batch_size or (1 if jax.default_backend() == "cpu"
                            else default_batch_size(n_boot, 2 * G * n * C))
        if rebin:
            order = np.argsort(binned.data[:, :, 1], axis=1, kind="stable")
            conf_sorted = np.take_along_axis(binned.data[:, :, 1], order, axis=1)
        else:  # unused without rebin: no O(n log n) sort
            order, conf_sorted = np.zeros((G, 1), np.int32), np.zeros((G, 1))
        reps, bin_reps = _replicates(
            as_key(seed), data, bins, None if codes is None else jnp.asarray(codes),
            jnp.asarray(conf_sorted), jnp.asarray(order.astype(np.int32)),
            n_boot=n_boot, batch_size=bs, n_clusters=n_clusters, rebin=bool(rebin), **cfg)
    jack = None
    if method == "bca":
        if codes is None:
            jbs = max(1, min(n, 2**22 // max(G * B * C, 1)))
            jack = np.asarray(_jackknife_items(
                data, bins, jnp.asarray(stats), batch_size=jbs,
                **{k: v for k, v in cfg.items() if k != "n_bins"}))
        else:
            n_groups = min(n_clusters, 1000)
            grp = (codes.astype(np.int64) * n_groups) // n_clusters
            jack = np.asarray(_jackknife_groups(data, bins, jnp.asarray(grp, jnp.int32),
                                                n_groups=n_groups, **cfg))
    return np.asarray(reps), np.asarray(bin_reps), jack, scheme


def _bin_table(binned: Binned, groups: list, stats: np.ndarray, bin_reps: np.ndarray | None,
               level: float, interval: str | None) -> pd.DataFrame:
    G, B, D = stats.shape[0], binned.n_bins, binned.n_draws
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
        flat = bin_reps.reshape(bin_reps.shape[0], -1)
        lo = np.full(flat.shape[1], np.nan)
        hi = np.full(flat.shape[1], np.nan)
        ok = np.any(np.isfinite(flat), axis=0)
        if np.any(ok):
            lo[ok], hi[ok] = equal_tailed(flat[:, ok], level, ignore_nan=True)
        rows["low"], rows["high"] = lo, hi
    table = pd.DataFrame(rows)
    table.attrs.update({"level": level if interval else None, "interval": interval})
    return table


def estimand_text(norm: str, n_groups: int, classwise: bool) -> str:
    """The population quantity a binned ECE with fixed bins estimates, in words.

    Parameters
    ----------
    norm : {'l1', 'l2'}
    n_groups : int
    classwise : bool

    Returns
    -------
    str
    """
    term = ("sum over bins of P(bin) |E[target - confidence | bin]|" if norm == "l1" else
            "(sum over bins of P(bin) E[target - confidence | bin]^2)^(1/2)")
    text = f"population binned calibration error with the bins held fixed: {term}"
    return text + (f", combined over the {n_groups} classes" if classwise else "")


#: The inverted interval's ``variance_floor`` (see binned_form.binned_linear_form).
_VARIANCE_FLOOR = "calibrated"


def _inverted(binned: Binned, table: pd.DataFrame, value: float, *, norm: str, level: float,
              n_boot: int, seed: Seed, codes: np.ndarray | None, n_clusters: int,
              estimator: str, form: object | None = None, cov_hook: Any = None
              ) -> tuple[float, tuple[float, float], dict]:
    """Inverted-test interval, reported value and details; fills the table's bin bands.

    With no sampling variation (one item, or every item's gap equal) the interval is
    (NaN, NaN) with status 'degenerate' and a NumericalWarning, as for the bootstrap.
    ``form`` (per-bin statistics gathered over row chunks, with the methods of
    :class:`~noisycal.metrics.binned.form.TableForm`) replaces the item table of ``binned``.
    ``cov_hook(cov, n_sim, seed) -> (cov, noise)`` adds what the sample covariance of the
    bin means leaves out (the channel estimation error of a corrected target,
    :mod:`noisycal.metrics.nc.delta`), and may give the test's null draws
    (``invert_norm(noise=)``; None: Gaussian).
    """
    src = TableForm(binned) if form is None else form
    mean, cov, weights = src.linear_form(norm, codes, n_clusters)
    noise = None
    if cov_hook is not None:
        cov, noise = cov_hook(cov, n_boot, seed)
    if not np.any(np.diag(cov) > 0):
        status = no_variation("a single item, or every target minus confidence equal "
                              "within each bin")
        return value, (float("nan"), float("nan")), {"plugin": value, "status": status}
    # One-hot targets: each bin mean's variance floored at its value under calibration
    # (sparse bins without a positive label otherwise have a sample variance near 0),
    # with the sample covariance as invert_norm's upper_cov (the upper end is the larger
    # of the two, so the floor cannot lower it).
    floored = src.floored_cov(cov, _VARIANCE_FLOOR, codes)
    cov, upper_cov = (floored, cov) if floored is not cov else (cov, None)
    # One-hot targets without clusters: the zero test by consistency resampling (exact
    # however sparse the bins); the upper end from the least favourable configuration.
    zero_null = src.consistency_null(weights, norm, n_boot, seed) \
        if codes is None and src.one_hot() else None
    inv = invert_norm(mean, cov, weights, norm=norm, level=level, n_sim=n_boot, seed=seed,
                      upper_null="least-favourable", zero_null=zero_null,
                      upper_cov=upper_cov, noise=noise)
    z = float(sps.norm.ppf(0.5 + level / 2))
    se = src.gap_se().ravel()
    table["low"] = table["mean_target"] - z * se
    table["high"] = table["mean_target"] + z * se
    table.attrs.update({"level": level, "interval": "inversion"})
    reported, ci, det = inversion_report(inv, value, level, estimator)
    det.update(zero_test="gaussian" if zero_null is None else "consistency",
               upper_null="least-favourable",
               variance_floor="none" if upper_cov is None else
               f"{_VARIANCE_FLOOR} (upper end: the larger of floored and sample)")
    return reported, ci, det


def binned_estimate(binned: Binned, groups: list, *, name: str, reduce: str, norm: str,
                    debias: bool, interval: Inversion | Bootstrap | None, level: float,
                    seed: Seed, cluster: ArrayLike | None, details: dict,
                    estimator: str = "plug-in", sums: np.ndarray | None = None,
                    form: object | None = None, streamed: dict | None = None,
                    cov_hook: Any = None) -> Estimate:
    """The Estimate of a binned metric: value, interval (if asked), per-bin table.

    Parameters
    ----------
    binned : Binned
        Items laid out by :func:`~noisycal.metrics.binned.bins.make_binned`.
    groups : list of str
        Group names (top label, positive class, or one per class).
    name : str
        Name of the estimate.
    reduce, norm, debias
        See :func:`~noisycal.metrics.binned.bins.metric_from_stats`.
    interval : Inversion, Bootstrap or None
        :class:`~noisycal.intervals.Inversion`:
        :func:`noisycal.intervals.inversion.invert_norm` with its ``n_boot`` simulated
        draws (reduce='ece' and one draw per item only).
        :class:`~noisycal.intervals.Bootstrap`: the item bootstrap; its ``scheme`` (see
        :func:`requested_scheme`) says how the replicates are drawn,
        ``details['bootstrap']`` which scheme ran, and its ``devices`` shard the Poisson
        scheme's items (:mod:`noisycal.metrics.binned.poisson`).
    level, seed, cluster
        As in :func:`noisycal.ece` (already validated).
    details : dict
        Extra details of the estimate.
    estimator : {'plug-in', 'median-unbiased', 'debiased'}, default='plug-in'
        Which value to report; 'median-unbiased' needs the inverted interval.
    sums : ndarray of shape (G, n_bins, C), optional
        The sample's per-bin sums when the caller streamed them
        (:func:`~noisycal.metrics.binned.bins.streamed_bin_sums`); ``binned`` then holds no
        items and ``interval`` must be None, or an Inversion with ``form``, or a Bootstrap
        with ``streamed``.
    form : TableForm-like, optional
        The per-bin statistics of the inverted interval, gathered over row chunks (the
        methods of :class:`~noisycal.metrics.binned.form.TableForm`).
    streamed : dict, optional
        The bootstrap's statistics gathered over row chunks
        (:mod:`noisycal.metrics.binned.dask`): ``{'plan': CellPlan}`` (the binned
        bootstrap) or ``{'replicate_stats': ndarray of shape (n_boot, G, B, C),
        'scheme': str}`` (per-bin sums of replicates drawn elsewhere).
    cov_hook : callable, optional
        With the inverted interval: ``cov_hook(cov, n_sim, seed) -> (cov, noise)``
        adjusts the bin means' covariance and null draws (see :func:`_inverted`).

    Returns
    -------
    Estimate
        With status ``'outside_parameter_space'`` when a bin's target mean lies outside
        [0, 1] beyond its sampling noise (a noise-corrected target whose correction fails
        there: :func:`~noisycal.metrics.binned.outside.with_outside_bins`).
    """
    G, n, _ = binned.data.shape
    streamed = streamed or {}
    boot = interval if isinstance(interval, Bootstrap) else None
    inverted = isinstance(interval, Inversion)
    if interval is not None and boot is None and not inverted:
        raise ValueError(f"interval: the binned estimate draws Inversion or Bootstrap "
                         f"intervals, got {interval!r}")
    if sums is not None:
        if interval is not None and (not inverted or form is None) and \
                (boot is None or not streamed):
            raise ValueError("sums: streamed per-bin sums serve the point estimate "
                             "(interval=None), with form= the inverted interval and with "
                             "streamed= the bootstrap")
        n = int(round(float(sums[0, :, 0].sum())))
    cfg = dict(n_bins=binned.n_bins, n_draws=binned.n_draws, reduce=reduce, norm=norm,
               debias=debias)
    codes, n_clusters = cluster_codes(cluster, n)
    n_boot = None if interval is None else interval.n_boot
    method = boot.method if boot is not None else None
    scheme = resolve_scheme(requested_scheme(boot), binned, codes, boot.rebin) \
        if boot is not None else None
    reps = bin_reps = jack = None
    with x64():
        # the sample's per-bin sums in NumPy: the item table moves to JAX only for the
        # exact bootstrap and BCa's jackknife
        stats = bin_sums(binned) if sums is None else sums
        value, per_group = _point_value(jnp.asarray(stats), n_draws=binned.n_draws,
                                        reduce=reduce, norm=norm, debias=debias)
        value, per_group = float(value), np.asarray(per_group)
        if boot is not None and "plan" in streamed:
            reps, bin_reps = _run_binned(binned, cfg, n_boot=n_boot, seed=seed,
                                         plan=streamed["plan"], n=n)
        elif boot is not None and "replicate_stats" in streamed:
            reps, bin_reps = (np.asarray(a) for a in _metric_of_replicates(
                jnp.asarray(streamed["replicate_stats"]),
                **{k: v for k, v in cfg.items() if k != "n_bins"}))
            scheme = streamed["scheme"]
        elif boot is not None:
            reps, bin_reps, jack, scheme = _run_bootstrap(
                binned, stats, codes, n_clusters, cfg, n_boot=n_boot,
                method=method, seed=seed, rebin=boot.rebin, batch_size=boot.batch_size,
                scheme=scheme, devices=boot.devices)
    status, message, ci = "ok", "", None
    if reps is not None:
        ci, status, message = interval_from_replicates(value, reps, level, method, jack)
    table = _bin_table(binned, groups, stats, bin_reps, level,
                       None if interval is None else interval.name)
    det = dict(details)
    kind, how = ("bootstrap", method) if ci is not None else (None, None)
    if inverted:
        value, ci, extra = _inverted(binned, table, value, norm=norm, level=level,
                                     n_boot=n_boot, seed=seed, codes=codes,
                                     n_clusters=n_clusters, estimator=estimator, form=form,
                                     cov_hook=cov_hook)
        status, message = extra.pop("status", (status, message))
        if status != "ok":
            estimator = "plug-in" if estimator == "median-unbiased" else estimator
        det.update(extra)
        kind, how = "inversion", "parametric"
    det.update(n_bins=binned.n_bins, n_empty_bins=int(np.sum(stats[:, :, 0] == 0)),
               edges=binned.edges)
    if reps is not None:
        det["bootstrap"] = scheme
        if boot.devices is not None:
            det["devices"] = len(boot.devices)
    if G > 1 or groups[0].startswith("class"):
        det["per_group"] = dict(zip(groups, per_group.tolist(), strict=True))
    est = Estimate(name, value, ci, level if ci is not None else None, kind, how, n=n,
                   n_boot=n_boot if ci is not None else None, bins=table, status=status,
                   message=message, details=det, replicates=reps,
                   estimand=estimand_text(norm, G, G > 1) if reduce == "ece" else "",
                   estimator=estimator)
    # corrected-target bin means outside [0, 1]: the one check of every binned metric
    return with_outside_bins(est, binned, np.asarray(stats), groups)
