r"""Cumulative mass calibration error (CMCE) and coverage of nested highest-probability sets.

Both are from "Adaptive Set-Mass Calibration with Conformal Prediction".

Every row of the predictions gives K nested highest-probability sets (t = 1..K, the full
set included); each is a pair (mass, coverage) (:mod:`noisycal.metrics.set_mass`). The
n * K pairs are binned by mass into equal-width bins ``[lo, hi)`` (last closed), and the
weighted CMCE (the paper's Eq. 4) is

.. math:: \mathrm{CMCE} = \frac{1}{nK} \sum_j N_j\, |\mathrm{cov}(S_j) - \mathrm{mass}(S_j)|,

the unweighted form the mean of :math:`|\mathrm{cov}(S_j) - \mathrm{mass}(S_j)|` over
non-empty bins. Both are reductions of per-bin sums, and the sums are accumulated per item,
so the sampling unit of every interval is the item (its K sets travel together), never
the pair.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy import stats as sps
from scipy.special import softmax

import jax
import jax.numpy as jnp

from .._util.jax import as_key, x64
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    as_array,
    categorical_labels,
    check_int,
    check_items,
    check_level,
    check_logits,
    check_n_bins,
    check_not_swapped,
    check_probs,
    check_seed,
    encode_labels,
    prediction_items,
)
from ..intervals.bootstrap import (
    cluster_codes,
    default_batch_size,
    interval_from_replicates,
    replicate_weights,
)
from ..intervals.estimate import Estimate
from ..intervals.inversion import inversion_report, invert_norm, no_variation
from ..intervals.options import Bootstrap, IntervalOption, Inversion, as_interval
from ..targets.target import Target, as_target_matrix
from .binned.bins import Binned, metric_from_stats, uniform_edges
from .binned.estimate import _bin_table
from .cmce_stream import CmceForm, cmce_form
from .ece import _target_kind, resolve_estimator, with_target_status
from .inputs import _checked_probs as checked_probs
from .inputs import _no_dask as no_dask
from .inputs import align_columns, check_target_rows, label_classes
from .set_mass import (
    HPR_TOL,
    check_window,
    hpr_mask,
    prefix_bin_stats,
    warn_empty_window,
    window_sums,
)

__all__ = ["cmce", "coverage_window", "hpr_sets", "hpr_coverage", "set_inputs", "cmce_value",
           "CMCE_INTERVALS", "CMCE_UNUSED"]

#: The interval kinds of :func:`cmce`.
CMCE_INTERVALS = (Inversion, Bootstrap)

#: The fields of :data:`CMCE_INTERVALS` the CMCE does not use.
CMCE_UNUSED = {Bootstrap: {
    "scheme": (("auto", "exact"), "its bootstrap reweights the items' per-bin sums (the "
               "exact scheme)"),
    "rebin": "its mass bins are equal-width, held fixed",
    "devices": "its bootstrap runs on one device"}}


def set_inputs(probs: ArrayLike | None, target: object, logits: ArrayLike | None, *,
               classes: ArrayLike | None = None, items: ArrayLike | None = None,
               lean: bool = False) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Probabilities and target of a set-mass metric: ``(P, labels, T)``.

    Label vectors stay vectors (``T`` is None), so no (n, K) one-hot matrix is built;
    a one-hot matrix or Target is turned into labels too. Other targets give ``T``.

    Parameters
    ----------
    probs, logits : array-like of shape (n, K) or (n,)
        Exactly one (a 1-D input is a binary problem's positive-class score).
    target : Target, array-like of shape (n, K), or labels (n,)
    classes, items : array-like, optional
        As in :func:`noisycal.ece`.
    lean : bool, default=False
        Keep an (n, K) float32 or float64 probability matrix in its dtype (checked over
        row chunks, never copied; the caller widens chunks), else float64.

    Returns
    -------
    P, labels, T
    """
    if (probs is None) == (logits is None):
        raise ValueError("give exactly one of probs= or logits= (they are never guessed)")
    no_dask(probs, target, logits)
    probs, logits = align_columns(probs, logits, classes, target)
    classes = label_classes(probs, logits, classes, target)
    ids = prediction_items(probs, logits, items)
    if probs is not None:
        arr = as_array(probs, "probs")
        if arr.dtype.kind in "biu":
            raise ValueError("probs must be floating-point probabilities (class labels? the "
                             "argument order is (probs, target))")
        lean = lean and arr.ndim == 2 and arr.dtype in (np.float32, np.float64) \
            and arr.shape[0] >= 1 and arr.shape[1] >= 2
        p = checked_probs(arr) if lean else check_probs(probs)
        P = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    else:
        z = check_logits(logits)
        P = softmax(np.column_stack([np.zeros_like(z), z]) if z.ndim == 1 else z, axis=1)
    n, K = P.shape
    if target is None:
        raise ValueError("target is required (labels, an (n, K) matrix or a Target)")
    arr = None if isinstance(target, Target) else np.asarray(
        target.to_numpy() if hasattr(target, "to_numpy") and getattr(target, "cat", None)
        is None else target)
    soft_binary = (arr is not None and arr.ndim == 1 and classes is None and K == 2
                   and arr.dtype.kind == "f" and np.all(np.isfinite(arr))
                   and np.any(arr != np.round(arr)))
    if arr is not None and arr.ndim == 1 and not soft_binary:
        if ids is not None and hasattr(target, "index") and hasattr(target, "to_numpy"):
            check_items(np.asarray(target.index), ids, "items")
        if arr.shape[0] != n:
            raise ValueError(f"target has {arr.shape[0]} labels but the predictions have "
                             f"{n} items")
        if classes is not None and len(classes) != K:
            raise ValueError(f"classes has {len(classes)} labels but the predictions have "
                             f"{K} columns")
        target = categorical_labels(target, classes, "target")
        y, _ = encode_labels(target, classes=classes, n_classes=None if classes is not None
                             else K, name="target")
        return P, y, None
    T = as_target_matrix(target, n, K, "target", classes=classes, items=ids)
    check_target_rows(T, target)
    if probs is not None:
        check_not_swapped(np.asarray(probs, dtype=np.float64), T)
    if np.all((T == 0.0) | (T == 1.0)) and np.all(T.sum(axis=1) == 1.0):
        return P, np.argmax(T, axis=1), None
    return P, None, T


def hpr_sets(probs: ArrayLike | None = None, alpha: float = 0.1, *,
             logits: ArrayLike | None = None, tol: float = HPR_TOL) -> np.ndarray:
    """Highest-probability regions :math:`HPR_{1-\\alpha}` of each row, as a boolean mask.

    The smallest prefix of the row sorted in decreasing order (stable: lower class index
    first on ties) whose mass reaches ``1 - alpha - tol`` ("Adaptive Set-Mass Calibration
    with Conformal Prediction", Section 2.2). The tolerance keeps floating-point rounding
    from adding a class: after mass rescaling to exactly 0.9 a prefix may sum to
    0.8999999999999999.

    Parameters
    ----------
    probs : array-like of shape (n, K)
        Probability rows (or ``logits=``).
    alpha : float, default=0.1
        Miscoverage level, a fraction in [0, 1].
    logits : array-like of shape (n, K), optional
    tol : float, default=1e-12

    Returns
    -------
    bool ndarray of shape (n, K)

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.metrics.hpr_sets([[0.5, 0.3, 0.2]], alpha=0.2).astype(int)
    array([[1, 1, 0]])
    """
    P, _, _ = set_inputs(probs, np.zeros(np.shape(probs if probs is not None else logits)[0],
                                         dtype=int), logits)
    alpha = check_level(alpha, "alpha") if alpha not in (0, 1) else float(alpha)
    return hpr_mask(P, 1.0 - alpha, float(tol))


def hpr_coverage(probs: ArrayLike | None = None, target: object = None, alpha: float = 0.1, *,
                 logits: ArrayLike | None = None, classes: ArrayLike | None = None,
                 items: ArrayLike | None = None) -> float:
    """Mean target mass of :math:`HPR_{1-\\alpha}`: the direct check of alpha-cumulative mass
    calibration (Definition 4 of "Adaptive Set-Mass Calibration with Conformal
    Prediction" asks it to be at least ``1 - alpha``).

    With hard labels this is the fraction of items whose label is in the region.

    Parameters
    ----------
    probs, target, logits, classes, items
        As in :func:`cmce`.
    alpha : float, default=0.1

    Returns
    -------
    float
    """
    P, y, T = set_inputs(probs, target, logits, classes=classes, items=items)
    alpha = check_level(alpha, "alpha") if alpha not in (0, 1) else float(alpha)
    mask = hpr_mask(P, 1.0 - alpha)
    if y is not None:
        return float(np.mean(mask[np.arange(P.shape[0]), y]))
    return float(np.mean(np.sum(np.where(mask, T, 0.0), axis=1)))


def coverage_window(probs: ArrayLike | None = None, target: object = None, lo: float = 0.9,
                    hi: float = 0.92, *, logits: ArrayLike | None = None,
                    classes: ArrayLike | None = None, items: ArrayLike | None = None,
                    chunk_size: int | None = None) -> float:
    """Coverage of the nested highest-probability sets whose mass lies in [lo, hi].

    Pools every (item, t) set with mass in the closed window and returns the mean of
    its coverage (the fraction containing the label for hard labels; the target mass of
    the set for other targets). "Adaptive Set-Mass Calibration with Conformal
    Prediction" reports the windows [0.9, 0.92] and [0.99, 0.995]; a calibrated model
    gives a value inside the window.

    Parameters
    ----------
    probs, target, logits, classes, items, chunk_size
        As in :func:`cmce`.
    lo, hi : float
        The window, ``0 <= lo <= hi <= 1``.

    Returns
    -------
    float
        NaN, with a :class:`~noisycal.NumericalWarning`, when no set has its mass in the
        window.
    """
    lo, hi = check_window(lo, hi)
    P, y, T = set_inputs(probs, target, logits, classes=classes, items=items)
    count, total = window_sums(P, y, T, lo, hi, _chunk(chunk_size))
    if count == 0:
        return warn_empty_window(lo, hi)
    return total / count


def cmce_value(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
               n_bins: int = 25, weighted: bool = True) -> float:
    """The plug-in CMCE of checked inputs (:func:`set_inputs`), without an Estimate.

    Parameters
    ----------
    P : ndarray of shape (n, K)
    labels : int ndarray of shape (n,) or None
    T : ndarray of shape (n, K) or None
    n_bins : int, default=25
    weighted : bool, default=True

    Returns
    -------
    float
    """
    stats = prefix_bin_stats(P, labels, T, n_bins).sum(axis=0)
    with x64():
        return float(_reduce(jnp.asarray(stats), bool(weighted))[0])


def _chunk(chunk_size: object) -> int | None:
    return None if chunk_size is None else check_int(chunk_size, "chunk_size", minimum=1)


def _reduce(stats: jax.Array, weighted: bool) -> tuple[jax.Array, jax.Array]:
    """CMCE and per-bin coverages from per-bin sums (B, 3) = (count, mass, coverage)."""
    cnt = stats[:, 0]
    ok = cnt > 0
    means = jnp.where(ok[:, None], stats[:, 1:] / jnp.where(ok, cnt, 1.0)[:, None], jnp.nan)
    if weighted:
        value = metric_from_stats(stats[None], 1, "ece", "l1", False)[0]
    else:
        gap = jnp.where(ok, jnp.abs(means[:, 1] - means[:, 0]), 0.0)
        value = jnp.sum(gap) / jnp.maximum(jnp.sum(ok), 1)
    return value, means[:, 1]


@partial(jax.jit, static_argnames=("weighted", "n_boot", "batch_size", "n_clusters"))
def _replicates(key: jax.Array, S: jax.Array, codes: jax.Array | None, *, weighted: bool,
                n_boot: int, batch_size: int, n_clusters: int) -> tuple[jax.Array, jax.Array]:
    def one(k: jax.Array) -> tuple[jax.Array, jax.Array]:
        w = replicate_weights(k, codes, n_clusters)
        return _reduce(jnp.tensordot(w, S, axes=1), weighted)

    return jax.lax.map(one, jax.random.split(key, n_boot), batch_size=batch_size)


@partial(jax.jit, static_argnames=("weighted",))
def _leave_one_out(total: jax.Array, parts: jax.Array, *, weighted: bool) -> jax.Array:
    return jax.vmap(lambda s: _reduce(total - s, weighted)[0])(parts)


def _bootstrap(S: np.ndarray, value: float, codes: np.ndarray | None, n_clusters: int, *,
               weighted: bool, n_boot: int, level: float, method: str, seed: Seed,
               batch_size: int | None) -> tuple:
    n, B, _ = S.shape
    bs = batch_size or default_batch_size(n_boot, 3 * n * B)
    with x64():
        reps, bin_reps = _replicates(as_key(seed), jnp.asarray(S),
                                     None if codes is None else jnp.asarray(codes),
                                     weighted=weighted, n_boot=n_boot, batch_size=bs,
                                     n_clusters=n_clusters)
        jack = None
        if method == "bca":
            parts = S if codes is None else np.stack(
                [np.bincount(codes, weights=S[:, b, c], minlength=n_clusters)
                 for b in range(B) for c in range(3)], axis=1).reshape(n_clusters, B, 3)
            jack = np.asarray(_leave_one_out(jnp.asarray(S.sum(axis=0)), jnp.asarray(parts),
                                             weighted=weighted))
    ci, status, message = interval_from_replicates(value, np.asarray(reps), level, method,
                                                   jack)
    return ci, status, message, np.asarray(reps), np.asarray(bin_reps)[:, None, :]


def _inverted(form: CmceForm, n: int, value: float, *, weighted: bool, level: float,
              n_boot: int, seed: Seed, estimator: str, table: object
              ) -> tuple[float, tuple[float, float] | None, dict, str, str]:
    cnt = form.stats[:, 0]
    B = cnt.shape[0]
    K_sets = cnt.sum() / n  # K, the number of sets per item
    mean, cov, se = form.mean, form.cov, form.band_se
    if weighted:
        weights = np.full(B, 1.0 / K_sets)
    else:
        ne = cnt > 0
        weights = np.where(ne, n / (max(int(ne.sum()), 1) * np.where(ne, cnt, 1.0)), 0.0)
    # per-bin bands of the coverage (linearised ratio standard error)
    z = float(sps.norm.ppf(0.5 + level / 2))
    table["low"] = table["mean_target"] - z * se
    table["high"] = table["mean_target"] + z * se
    table.attrs.update({"level": level, "interval": "inversion"})
    if not np.any(np.diag(cov) > 0):
        status, message = no_variation("a single item, or every item's coverage minus mass "
                                       "equal within each bin")
        return value, None, {"plugin": value}, status, message
    inv = invert_norm(mean, cov, weights, norm="l1", level=level, n_sim=n_boot, seed=seed)
    value, ci, det = inversion_report(inv, value, level, estimator)
    return value, ci, det, "ok", ""


def cmce(probs: ArrayLike | None = None, target: object = None, *,
         logits: ArrayLike | None = None, classes: ArrayLike | None = None,
         items: ArrayLike | None = None, n_bins: int = 25, weighted: bool = True,
         interval: IntervalOption | str | None = "auto", level: float = 0.9,
         seed: Seed = 0, cluster: ArrayLike | None = None, estimator: str | None = None,
         chunk_size: int | None = None) -> Estimate:
    r"""Cumulative mass calibration error against any target.

    "Adaptive Set-Mass Calibration with Conformal Prediction" (Section 2.3, Eq. 4): every
    item's K nested highest-probability sets (the top-1, top-2, ..., all K classes; ties
    in the order broken by lower class index) give n * K pairs (mass of the set,
    coverage of the set). They are binned by mass (``n_bins`` equal-width bins
    ``[lo, hi)``, the last closed; masses clipped to [0, 1] against rounding), and the
    error is :math:`\frac{1}{nK}\sum_j N_j |\mathrm{cov}_j - \mathrm{mass}_j|`
    (``weighted=True``) or the mean of :math:`|\mathrm{cov}_j - \mathrm{mass}_j|` over
    non-empty bins (``weighted=False``, the unweighted variant of the authors' code).
    The coverage of a set is the fraction of sets containing the label for hard labels;
    for soft, posterior or noise-corrected targets it is the target mass of the set,
    the expected coverage indicator under the target (an extension of ours; with a
    corrected target it is unbiased for the clean-label indicator).

    The sums are accumulated per item over row chunks (memory O(chunk x K), so n x K up
    to ~1e9 pairs fits), and every interval resamples items (with all their K sets),
    or the clusters of ``cluster``; never single pairs.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_classes) or (n_items,)
        Predicted probabilities (rows sum to 1 within 1e-6); 1-D: positive-class
        probabilities of a binary problem. Give ``probs`` or ``logits``.
    target : Target, array-like of shape (n_items, n_classes), or labels (n_items,)
        What the predictions are compared with (any target kind).
    logits : array-like of shape (n_items, n_classes) or (n_items,), optional
        Pre-softmax scores instead of ``probs``.
    classes, items : array-like, optional
        As in :func:`noisycal.ece`.
    n_bins : int, default=25
        Number of equal-width mass bins (25, the paper's figures and the authors' code;
        ``noisycal.metrics.PAPER_N_BINS['set_mass_conformal']``).
    weighted : bool, default=True
        Eq. 4 (bins weighted by their share of the n * K sets), or the unweighted mean
        over non-empty bins.
    interval : Inversion, Bootstrap, str or None, default='auto'
        An option object of :mod:`noisycal.intervals` or its name. 'auto' is
        ``Inversion()``: the CMCE with the bins held fixed is a weighted L1 norm of the
        per-bin means over items of (coverage minus mass) summed over the item's sets,
        so :func:`noisycal.intervals.inversion.invert_norm` applies as for the ECE
        (weights 1/K, or for the unweighted form the inverse of each bin's share held at
        its sample value; ``n_boot`` simulated draws). ``Bootstrap()``: the item
        bootstrap read off with its ``method`` ('bca' uses the exact
        leave-one-item-out values), ``batch_size`` replicates per vectorised batch; the
        exact scheme only, no ``rebin``, no ``devices``.
    level : float, default=0.9
        Interval coverage, a fraction.
    seed : int or jax key, default=0
    cluster : array-like of shape (n_items,), optional
        Cluster ids of the items (resampled whole; covariances cluster-robust).
    estimator : {'plug-in', 'median-unbiased'}, optional
        Default 'median-unbiased' with the inversion, else 'plug-in'.
        ``details['plugin']`` always holds Eq. 4's plug-in value.
    chunk_size : int, optional
        Rows per chunk (default: about a million numbers per work array).

    Returns
    -------
    Estimate
        ``bins`` is the per-bin table: ``count`` (sets), ``mean_conf`` (mean mass),
        ``mean_target`` (coverage), ``gap`` (coverage minus mass: positive means
        under-confident), with per-bin bands. The status is not 'ok' when there is no
        variation to build an interval from, or the target comes from a failed fit.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> P = np.array([[0.5, 0.25, 0.25], [0.75, 0.25, 0.0]])
    >>> round(float(nc.cmce(P, [0, 1], n_bins=4, interval=None)), 4)
    0.1667
    """
    for flag, name in ((weighted, "weighted"),):
        if not isinstance(flag, bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    option = as_interval(interval, CMCE_INTERVALS, default=Inversion(), where="cmce",
                         unused=CMCE_UNUSED)
    P, y, T = set_inputs(probs, target, logits, classes=classes, items=items, lean=True)
    n, K = P.shape
    n_bins = check_n_bins(n_bins, n * K)
    level = check_level(level)
    interval = None if option is None else option.name
    n_boot = None if option is None else option.n_boot
    check_seed(seed)
    estimator = resolve_estimator(estimator, interval, False)
    codes, n_clusters = cluster_codes(cluster, n)
    if interval == "bootstrap":  # the replicates reweight the items' (n, n_bins, 3) table
        S = prefix_bin_stats(P, y, T, n_bins, _chunk(chunk_size))
        stats = S.sum(axis=0)
    else:  # per-bin sums over row chunks (and the inversion's form): no item table
        form = cmce_form(P, y, T, n_bins, _chunk(chunk_size),
                         inversion=interval == "inversion", codes=codes,
                         n_clusters=n_clusters)
        stats = form.stats
    with x64():
        value, _ = _reduce(jnp.asarray(stats), bool(weighted))
    value = float(value)
    binned = Binned(None, None, uniform_edges(n_bins)[None, :], n_bins, 1)
    ci, kind, how, status, message, det = None, None, None, "ok", "", {}
    reps = bin_reps = None
    if interval == "bootstrap":
        ci, status, message, reps, bin_reps = _bootstrap(
            S, value, codes, n_clusters, weighted=bool(weighted), n_boot=n_boot, level=level,
            method=option.method, seed=seed, batch_size=option.batch_size)
        kind, how = ("bootstrap", option.method) if status == "ok" else (None, None)
        ci = ci if status == "ok" else None
    table = _bin_table(binned, ["sets"], stats[None], bin_reps, level, interval)
    if interval == "inversion":
        value, ci, det, status, message = _inverted(
            form, n, value, weighted=bool(weighted), level=level, n_boot=n_boot,
            seed=seed, estimator=estimator, table=table)
        kind, how = ("inversion", "parametric") if ci is not None else (None, None)
        if ci is None:
            estimator = "plug-in"
    det.update(n_bins=n_bins, weighted=bool(weighted), n_sets=int(n * K),
               n_empty_bins=int(np.sum(stats[:, 0] == 0)), edges=binned.edges[0],
               target_kind=_target_kind(target),
               coverage="indicator" if y is not None else "target mass of the set")
    estimand = ("population cumulative mass calibration error with the bins held fixed: "
                + ("sum over bins of P(set in bin) |E[coverage - mass | bin]|" if weighted
                   else "mean over non-empty bins of |E[coverage - mass | bin]|"))
    est = Estimate("CMCE" if weighted else "unweighted CMCE", value, ci,
                   level if ci is not None else None, kind, how, n=n,
                   n_boot=n_boot if ci is not None else None, bins=table, status=status,
                   message=message, details=det, replicates=reps, estimand=estimand,
                   estimator=estimator)
    return with_target_status(est, target, probs, logits)
