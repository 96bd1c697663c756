r"""The maximum calibration error (MCE) and a simultaneous interval that covers it.

**Estimand.** With the bins held fixed, a *cell* j is one bin of one score group (the
top-label or positive-class confidence: one group; classwise: K groups), and
:math:`m_j = \mathrm E[T - C \mid C \in \text{cell } j]` its population gap (T the target
value, C the confidence). The MCE reported here is

.. math:: \theta = \max_{j \in S} |m_j|, \qquad
          S = \{j : \text{cell } j \text{ holds at least } \texttt{min\_count}
          \text{ items of the sample}\}.

A cell with a handful of items says almost nothing about its own gap and dominates the
sample maximum (a single item's :math:`|y - p|` reaches 1), so the textbook MCE over every
non-empty bin is driven by nearly empty bins, and no interval can cover it.
``min_count`` (default ``MIN_COUNT`` = 20) makes the well-populated cells the estimand.
Given which cell each item falls in, the items of a cell are an independent sample from
the cell's conditional distribution; selecting S on the counts therefore leaves each cell
mean :math:`\bar g_j` unbiased for :math:`m_j`, and the interval below holds conditionally
on S. ``min_count=1`` gives the textbook MCE over non-empty bins (no interval then when a
cell holds a single item).

**Interval** (``interval='simultaneous'``, the default; our construction). With
:math:`s_j` the standard error of :math:`\bar g_j` and :math:`J = |S|`, two
per-cell intervals for :math:`m_j` are formed: a simultaneous one at the Šidák level
:math:`(1 - \alpha)^{1/J}` and a one-sided pair at :math:`\alpha/2` per side. The
lower end is the largest distance from 0 of a simultaneous interval (0 when one
contains 0); the upper end the largest :math:`|\cdot|` of a one-sided pair's ends.
The lower end exceeds :math:`\theta` only if some cell's simultaneous interval misses its
:math:`m_j` (probability at most :math:`\alpha`, exactly :math:`\alpha` when every
:math:`m_j = 0`); the upper end falls below :math:`\theta` only if the cell attaining
the maximum misses on one side (at most :math:`\alpha/2`, and both failures cannot
happen at once). With one cell the interval is exact at level :math:`1 - \alpha`; with
several it is exact at perfect calibration and conservative away from it
(``benchmarks/README.md`` has the measured coverage). The plug-in
:math:`\max_{j\in S}|\bar g_j|` always lies inside.

Standard errors are the within-cell standard deviation over :math:`\sqrt{n_j}`, the
variance floored for one-hot targets (hard or voted labels) at its value under
calibration, the mean of :math:`c(1 - c)` (a cell of only correct predictions has a
sample variance near 0 although its labels vary); with ``cluster`` the cluster-robust
(linearised ratio) variance. The quantiles come from a bootstrap-t within each cell
(the counts held fixed; ``n_boot`` replicates; cells of at most ``BOOT_T_MAX`` items),
never less extreme than Student's t with :math:`n_j - 1` degrees of freedom: sparse
cells of rare events have a skewed mean, which the symmetric t misses (measured: 0.85
coverage for soft targets at n = 500 with t alone). With ``cluster``: Student's t with
the cell's clusters minus 1 degrees of freedom, no bootstrap-t.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from scipy import stats as sps

from .._util.jax import as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_choice,
    check_int,
    check_level,
    check_n_bins,
    check_seed,
    user_stacklevel,
)
from ..exceptions import NumericalWarning
from ..intervals.bootstrap import cluster_codes
from ..intervals.estimate import Estimate
from ..intervals.options import Bootstrap, Simultaneous
from .binned.bins import BIN_STRATEGIES, Binned, binned_from_predictions, uniform_edges
from .binned.dask import block_inputs, gather_binned, refuse, row_blocks
from .binned.estimate import binned_estimate
from .binned.form import one_hot_target
from .binned.outside import carry_outside
from .inputs import lean_inputs, resolve_kind, target_kind, with_target_status

__all__ = ["mce_estimate", "mce_estimand", "simultaneous_bounds", "cell_moments",
           "CellMoments", "MIN_COUNT", "BOOT_T_MAX", "MCE_INTERVALS", "MCE_UNUSED"]

#: Default least number of sample items in a cell of the MCE's estimand.
MIN_COUNT = 20

#: Cells with more items take Student's t quantiles instead of the bootstrap-t (their
#: mean's skewness is small; bounds the bootstrap's cost at BOOT_T_MAX items per cell).
BOOT_T_MAX = 5000

#: Indices drawn at once by the bootstrap-t (replicates x items of a cell).
_CHUNK_ELEMENTS = 2**20

#: Interval kinds of :func:`noisycal.mce` (option classes of :mod:`noisycal.intervals`).
MCE_INTERVALS = (Simultaneous, Bootstrap)

#: The fields of :data:`MCE_INTERVALS` the MCE does not use (see
#: :func:`noisycal.intervals.options.refuse_fields`).
MCE_UNUSED = {Bootstrap: {
    "rebin": "edges re-estimated in every replicate change which bins hold min_count "
             "items",
    "devices": "the MCE's bootstrap runs on one device"}}


def mce_estimand(min_count: int, n_groups: int, classwise: bool) -> str:
    """The population quantity :func:`noisycal.mce` estimates, in words.

    Parameters
    ----------
    min_count : int
    n_groups : int
    classwise : bool

    Returns
    -------
    str
    """
    where = (f"over the bins of the {n_groups} classes" if classwise else "over the bins")
    return (f"population maximum calibration error with the bins held fixed: max {where} "
            f"that hold at least {min_count} items of the sample of "
            "|E[target - confidence | bin]|")


class CellMoments(NamedTuple):
    """Per-cell sums of a sample, flattened over groups x bins (J = G * B cells).

    Attributes
    ----------
    count, conf_sum, target_sum, dsum, d2sum, cvsum : ndarray of shape (J,)
        Items, sums of the confidence, the target, the gap d = target - confidence, d^2,
        and c (1 - c).
    one_hot : bool
        Whether the target is one-hot (hard or voted labels).
    """

    count: np.ndarray
    conf_sum: np.ndarray
    target_sum: np.ndarray
    dsum: np.ndarray
    d2sum: np.ndarray
    cvsum: np.ndarray
    one_hot: bool


def _cells(binned: Binned) -> np.ndarray:
    G = binned.bins.shape[0]
    return (np.arange(G)[:, None] * binned.n_bins + binned.bins).astype(np.int64)


def cell_moments(binned: Binned) -> CellMoments:
    """:class:`CellMoments` of an item table (one target draw).

    Parameters
    ----------
    binned : Binned

    Returns
    -------
    CellMoments
    """
    cells = _cells(binned).ravel()
    J = binned.bins.shape[0] * binned.n_bins
    conf, tgt = binned.data[:, :, 1].ravel(), binned.data[:, :, 2].ravel()
    d = tgt - conf
    sums = [np.bincount(cells, weights=w, minlength=J) for w in
            (None, conf, tgt, d, d * d, conf * (1.0 - conf))]
    return CellMoments(*sums, one_hot=one_hot_target(binned))


def _add(parts: list) -> CellMoments:
    """The moments of row blocks added up."""
    return CellMoments(*(sum(p[k] for p in parts) for k in range(6)),
                       one_hot=all(p.one_hot for p in parts))


def standard_errors(mom: CellMoments) -> tuple[np.ndarray, np.ndarray]:
    """Gap per cell and its standard error (NaN below 2 items), items as sampling units.

    Parameters
    ----------
    mom : CellMoments

    Returns
    -------
    gap, se : ndarray of shape (J,)
    """
    n = mom.count
    ok = n >= 2
    safe = np.where(n > 0, n, 1.0)
    gap = np.where(n > 0, mom.dsum / safe, np.nan)
    var = np.maximum(mom.d2sum - mom.dsum ** 2 / safe, 0.0) / np.where(ok, n - 1.0, 1.0)
    if mom.one_hot:  # floored at the variance under calibration
        var = np.maximum(var, mom.cvsum / safe)
    return gap, np.where(ok, np.sqrt(var / safe), np.nan)


def _cluster_se(binned: Binned, codes: np.ndarray, n_clusters: int,
                gap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-robust standard error of each cell's mean gap and its degrees of freedom
    (clusters in the cell minus 1): the linearised variance of a ratio of cluster totals."""
    J = binned.bins.shape[0] * binned.n_bins
    cells = _cells(binned).ravel()
    rows = np.tile(np.asarray(codes, dtype=np.int64), binned.bins.shape[0])
    d = (binned.data[:, :, 2] - binned.data[:, :, 1]).ravel()
    key = rows * J + cells
    D = np.bincount(key, weights=d, minlength=n_clusters * J).reshape(n_clusters, J)
    N = np.bincount(key, minlength=n_clusters * J).reshape(n_clusters, J)
    present = (N > 0).sum(axis=0)
    resid = D - np.nan_to_num(gap)[None, :] * N
    n = N.sum(axis=0)
    ok = present >= 2
    var = (resid ** 2).sum(axis=0) * present / np.where(ok, present - 1.0, 1.0)
    se = np.where(ok, np.sqrt(var) / np.where(n > 0, n, 1.0), np.nan)
    return se, np.maximum(present - 1, 1).astype(np.float64)


def _boot_t(items: tuple[np.ndarray, np.ndarray, np.ndarray], mom: CellMoments,
            gap: np.ndarray, cells: np.ndarray, probs: np.ndarray, n_boot: int,
            seed: Seed) -> np.ndarray:
    """Quantiles ``probs`` of the studentised cell mean, (len(cells), len(probs)), by
    resampling each cell's items (its count fixed); cells in increasing order, each
    drawing an (n_boot, n_j) block of item indices from one generator."""
    d, cv, cell = items
    order = np.argsort(cell, kind="stable")
    d, cv, cell = d[order], cv[order], cell[order]
    starts = np.searchsorted(cell, cells)
    rng = as_numpy_rng(seed)
    out = np.empty((cells.size, probs.size))
    for i, (j, s) in enumerate(zip(cells, starts, strict=True)):
        m = int(mom.count[j])
        t = np.empty(n_boot)
        step = max(1, _CHUNK_ELEMENTS // m)
        for r0 in range(0, n_boot, step):  # row blocks of one stream of indices
            r = min(step, n_boot - r0)
            idx = s + rng.integers(0, m, size=(r, m))
            dj = d[idx]
            s1, s2 = dj.sum(axis=1), np.einsum("ij,ij->i", dj, dj)
            var = np.maximum(s2 - s1 ** 2 / m, 0.0) / (m - 1)
            if mom.one_hot:
                var = np.maximum(var, cv[idx].sum(axis=1) / m)
            se = np.sqrt(var / m)
            diff = s1 / m - gap[j]
            with np.errstate(divide="ignore", invalid="ignore"):
                t[r0:r0 + r] = np.where(se > 0, diff / np.where(se > 0, se, 1.0),
                                        np.sign(diff) * np.inf)
        out[i] = np.quantile(t, probs)
    return out


def simultaneous_bounds(gap: np.ndarray, se: np.ndarray, q_two: np.ndarray,
                        q_one: np.ndarray) -> tuple[float, float, np.ndarray]:
    """The MCE interval from per-cell gaps, standard errors and studentised quantiles.

    Parameters
    ----------
    gap, se : ndarray of shape (J,)
        The selected cells' mean gaps and standard errors.
    q_two : ndarray of shape (J, 2)
        Lower and upper quantiles of the simultaneous (Šidák) per-cell interval, at
        :math:`a/2` and :math:`1 - a/2` with :math:`a = 1 - (1 - \\alpha)^{1/J}`.
    q_one : ndarray of shape (J, 2)
        The :math:`\\alpha/2` and :math:`1 - \\alpha/2` quantiles (one-sided pair).

    Returns
    -------
    low, high : float
    band : ndarray of shape (J, 2)
        The simultaneous interval of each cell's gap.
    """
    band = np.stack([gap - q_two[:, 1] * se, gap - q_two[:, 0] * se], axis=1)
    dist = np.where((band[:, 0] <= 0.0) & (band[:, 1] >= 0.0), 0.0,
                    np.min(np.abs(band), axis=1))
    one = np.stack([gap - q_one[:, 1] * se, gap - q_one[:, 0] * se], axis=1)
    return float(np.max(dist)), float(np.max(np.abs(one))), band


def _probs(level: float, J: int) -> np.ndarray:
    """The studentised quantiles' levels: Šidák's two-sided a/2 and 1 - a/2 with
    a = 1 - level^(1/J), then the one-sided pair alpha/2 and 1 - alpha/2."""
    alpha, a = 1.0 - level, 1.0 - level ** (1.0 / J)
    return np.array([a / 2, 1 - a / 2, alpha / 2, 1 - alpha / 2])


def _quantiles(level: float, J: int, df: np.ndarray, boot: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray, dict]:
    """Per-cell studentised quantiles: bootstrap-t (rows of ``boot``, NaN for cells left
    to Student's t) widened to at least Student's t."""
    a = 1.0 - level ** (1.0 / J)
    t = sps.t.ppf(_probs(level, J)[None, :], df[:, None])
    q = t if boot is None else np.where(np.isnan(boot), t, boot)
    q[:, 0::2] = np.minimum(q[:, 0::2], t[:, 0::2])
    q[:, 1::2] = np.maximum(q[:, 1::2], t[:, 1::2])
    return q[:, :2], q[:, 2:], {"sidak_level": 1.0 - a, "n_cells": J}


def _status_no_cells(min_count: int, largest: int) -> tuple[str, str]:
    message = (f"no bin holds at least min_count = {min_count} items (the largest holds "
               f"{largest}): the MCE over well-populated bins is not defined here; use "
               "fewer bins or a smaller min_count")
    warnings.warn(f"MCE: {message}", NumericalWarning, stacklevel=user_stacklevel())
    return "no_bins", message


def _simultaneous(mom: CellMoments, sel: np.ndarray, items: tuple | None,
                  cluster_se: tuple | None, *, level: float, n_boot: int, seed: Seed
                  ) -> tuple[tuple[float, float] | None, np.ndarray | None, str, str, dict]:
    gap, se = standard_errors(mom)
    df = np.maximum(mom.count - 1.0, 1.0)
    if cluster_se is not None:
        se, df = cluster_se
    cells = np.flatnonzero(sel)
    if np.any(~np.isfinite(se[cells])) or not np.any(se[cells] > 0):
        message = ("a bin of the MCE has fewer than 2 items (or clusters), or no bin's "
                   "gap varies between items: no standard error, so no interval; use "
                   "min_count >= 2")
        warnings.warn(f"MCE: {message}", NumericalWarning, stacklevel=user_stacklevel())
        return None, None, "degenerate", message, {}
    boot = None
    det = {"quantiles": "student-t" if cluster_se is not None else "bootstrap-t"}
    if cluster_se is None:
        small = cells[mom.count[cells] <= BOOT_T_MAX]
        boot = np.full((cells.size, 4), np.nan)
        boot[np.isin(cells, small)] = _boot_t(items, mom, gap, small,
                                              _probs(level, cells.size), n_boot, seed)
        det["bootstrap_t_cells"] = int(small.size)
    q_two, q_one, extra = _quantiles(level, cells.size, df[cells], boot)
    low, high, band = simultaneous_bounds(gap[cells], se[cells], q_two, q_one)
    det.update(extra, se=se)
    return (low, high), band, "ok", "", det


def _check(n_bins: object, n: int, strategy: object, level: object, seed: object,
           min_count: object) -> tuple[int, float, int]:
    n_bins = check_n_bins(n_bins, n)
    check_choice(strategy, "strategy", BIN_STRATEGIES)
    level = check_level(level)
    check_seed(seed)
    min_count = check_int(min_count, "min_count", minimum=1)
    return n_bins, level, min_count


def _mce_block(p: np.ndarray, t: object, first: int, *, classes: ArrayLike | None, kind: str,
               n_bins: int, boot_cells: np.ndarray | None) -> dict:
    """One Dask row block: its CellMoments, and the items of ``boot_cells``."""
    P, T, labels = block_inputs(p, t, first, classes)
    binned = binned_from_predictions(P, labels, T, kind, n_bins, "uniform", with_sq=False)
    out = {"moments": cell_moments(binned)}
    if boot_cells is not None:
        cells = _cells(binned).ravel()
        keep = np.isin(cells, boot_cells)
        conf, tgt = binned.data[:, :, 1].ravel(), binned.data[:, :, 2].ravel()
        out["items"] = ((tgt - conf)[keep], (conf * (1.0 - conf))[keep], cells[keep])
    return out


def _neutralised(binned: Binned, sel: np.ndarray) -> Binned:
    """The item table with every target in a cell outside S set to its confidence, so
    that those cells' gap is exactly 0 in every resample (and never the maximum)."""
    out = binned.data.copy()
    drop = ~sel[_cells(binned)]
    out[:, :, 2] = np.where(drop, out[:, :, 1], out[:, :, 2])
    return Binned(out, binned.bins, binned.edges, binned.n_bins, binned.n_draws)


def mce_estimate(probs: ArrayLike | None, target: object, logits: ArrayLike | None, *,
                 classes: ArrayLike | None, items: ArrayLike | None, n_bins: int,
                 kind: str | None, strategy: str, min_count: int,
                 interval: Simultaneous | Bootstrap | None, level: float, seed: Seed,
                 cluster: ArrayLike | None) -> Estimate:
    """The Estimate of :func:`noisycal.mce`.

    Parameters
    ----------
    probs, target, logits, classes, items, n_bins, kind, strategy, min_count
        As in :func:`noisycal.mce` (checked here).
    interval : Simultaneous, Bootstrap or None
        The interval option (resolved from 'auto'; a Bootstrap's ``rebin`` and
        ``devices`` already refused, :data:`MCE_UNUSED`).
    level, seed, cluster
        As in :func:`noisycal.mce`.

    Returns
    -------
    Estimate
    """
    # long: one pass from inputs to Estimate (in-memory and Dask inputs, both interval
    # kinds, the per-bin table) sharing the validated arguments
    blocks = row_blocks(probs, target, classes, logits=logits, items=items)  # Dask input
    P, T, labels, binary = (lean_inputs(probs, target, logits, classes=classes, items=items)
                            if blocks is None else blocks.inputs)
    n = P.shape[0]
    n_bins, level, min_count = _check(n_bins, n, strategy, level, seed, min_count)
    boot = interval if isinstance(interval, Bootstrap) else None
    n_boot = None if interval is None else interval.n_boot
    kind = resolve_kind(kind, binary, P.shape[1])
    G = P.shape[1] if kind == "classwise" else 1
    groups = [f"class_{k}" for k in range(G)] if kind == "classwise" else [kind]
    label = {"top_label": "MCE", "positive_class": "positive-class MCE",
             "classwise": "classwise MCE"}[kind]
    codes, n_clusters = cluster_codes(cluster, n)
    common = dict(name=label, reduce="mce", norm="l1", debias=False, level=level,
                  seed=seed, cluster=cluster)
    details = {"kind": kind, "strategy": strategy, "target_kind": target_kind(target),
               "min_count": min_count}
    if blocks is not None:
        refuse(cluster=cluster is not None, strategy=strategy == "quantile",
               **{"Bootstrap(method='bca')": boot is not None and boot.method == "bca"})
        parts = blocks.map(_mce_block, kind=kind, n_bins=n_bins, boot_cells=None)
        mom = _add([q["moments"] for q in parts])
        sums = np.stack([mom.count, mom.conf_sum, mom.target_sum], axis=1).reshape(
            G, n_bins, 3)
        binned = Binned(np.empty((G, 0, 3)), np.empty((G, 0), np.int32),
                        np.tile(uniform_edges(n_bins), (G, 1)), n_bins, 1)
        base = binned_estimate(binned, groups, interval=None, details=details, sums=sums,
                               **common)
    else:
        binned = binned_from_predictions(P, labels, T, kind, n_bins, strategy,
                                         with_sq=False)
        mom = cell_moments(binned)
        base = binned_estimate(binned, groups, interval=None, details=details, **common)

    def done(out: Estimate) -> Estimate:  # the base's bin-mean check, then the target's
        return with_target_status(carry_outside(out, base), target, probs, logits)

    sel = mom.count >= min_count
    gap, _ = standard_errors(mom)
    per_group = np.max(np.where(sel, np.abs(np.nan_to_num(gap)), -np.inf).reshape(
        G, n_bins), axis=1)
    value = float(np.max(per_group)) if np.any(sel) else float("nan")
    table = base.bins.copy()
    table["in_mce"] = sel
    det = dict(base.details)
    det.update(n_bins_in_mce=int(sel.sum()),
               n_bins_left_out=int(np.sum((mom.count > 0) & ~sel)))
    if G > 1:
        det["per_group"] = dict(zip(groups, np.where(np.isfinite(per_group), per_group,
                                                     np.nan).tolist(), strict=True))
    est = dict(n=n, details=det, estimand=mce_estimand(min_count, G, G > 1),
               estimator="plug-in")
    if not np.any(sel):
        status, message = _status_no_cells(min_count, int(mom.count.max(initial=0)))
        return done(Estimate(label, value, bins=table, status=status, message=message,
                             **est))
    if interval is None:
        return done(Estimate(label, value, bins=table, **est))
    if boot is not None:
        return done(_bootstrap_estimate(
            blocks, binned, sel, mom, groups, table, value, est, common, boot,
            kind=kind, n_bins=n_bins))
    items_ = None
    if cluster is None:
        small = np.flatnonzero(sel & (mom.count <= BOOT_T_MAX))
        if blocks is not None:
            parts = blocks.map(_mce_block, kind=kind, n_bins=n_bins, boot_cells=small)
            items_ = tuple(np.concatenate([q["items"][k] for q in parts]) for k in range(3))
        else:
            cells = _cells(binned).ravel()
            conf, tgt = binned.data[:, :, 1].ravel(), binned.data[:, :, 2].ravel()
            keep = np.isin(cells, small)
            items_ = ((tgt - conf)[keep], (conf * (1.0 - conf))[keep], cells[keep])
    cse = None if cluster is None else _cluster_se(binned, codes, n_clusters, gap)
    ci, band, status, message, extra = _simultaneous(mom, sel, items_, cse, level=level,
                                                     n_boot=n_boot, seed=seed)
    se = extra.pop("se", None)
    det.update(extra)
    table["low"], table["high"] = np.nan, np.nan
    if band is not None:
        conf_mean = mom.conf_sum[sel] / mom.count[sel]
        table.loc[sel, "low"] = conf_mean + band[:, 0]
        table.loc[sel, "high"] = conf_mean + band[:, 1]
        det["gap_se"] = se
    table.attrs.update({"level": level if ci is not None else None,
                        "interval": "simultaneous"})
    return done(Estimate(
        label, value, ci, level if ci is not None else None,
        "simultaneous" if ci is not None else None,
        ("bootstrap-t" if cluster is None else "student-t") if ci is not None else None,
        n_boot=n_boot if ci is not None and cluster is None else None, bins=table,
        status=status, message=message, **est))


def _bootstrap_estimate(blocks: object, binned: Binned, sel: np.ndarray, mom: CellMoments,
                        groups: list, table: object, value: float, est: dict, common: dict,
                        option: Bootstrap, *, kind: str, n_bins: int) -> Estimate:
    """The item bootstrap of the same estimand: cells outside S neutralised (in memory),
    or (Dask input) refused when a non-empty cell is left out."""
    left_out = bool(np.any((mom.count > 0) & ~sel))
    if blocks is not None:
        if left_out:
            raise ValueError("min_count: with Dask input, interval=Bootstrap() of the MCE "
                             "needs every non-empty bin to hold at least min_count items "
                             "(bins below it cannot be left out block by block); use "
                             "interval='auto', fewer bins or a smaller min_count")
        binned_e, sums, _, streamed = gather_binned(
            blocks, kind, n_bins, debias=False, interval=option, seed=common["seed"],
            strategy="uniform", cluster=None)
        boot = binned_estimate(binned_e, groups, interval=option, details={}, sums=sums,
                               streamed=streamed, **common)
    else:
        boot = binned_estimate(_neutralised(binned, sel) if left_out else binned, groups,
                               interval=option, details={}, **common)
    table = table.copy()
    for col in ("low", "high"):
        table[col] = np.where(sel, boot.bins[col].to_numpy(), np.nan)
    est["details"]["bootstrap"] = boot.details.get("bootstrap")
    ci = boot.interval
    return Estimate(common["name"], value, ci, common["level"] if ci is not None else None,
                    "bootstrap" if ci is not None else None,
                    option.method if ci is not None else None,
                    n_boot=option.n_boot if ci is not None else None, bins=table,
                    status=boot.status, message=boot.message, replicates=boot.replicates,
                    **est)
