"""Bins and per-bin sufficient statistics: the core every binned metric reduces to.

For each group g (the top label, the positive class, or each class in classwise
mode) and bin b the statistics are, summed over the items i in the bin with
weights w_i (1 for the sample, bootstrap counts for a replicate):

    count = sum w_i,   sum_conf = sum w_i c_ig,
    sum_target[d] = sum w_i T_igd,   sum_target_sq[d] = sum w_i T_igd^2,

where d indexes target draws (one draw unless the target is sampled, as in the
Monte-Carlo true-label ECE of Tao, Luo, Dong & Xu (2026)). A metric is a function of these sums
only, so a bootstrap replicate is one weighted pass over the items.

Bins are ``[lo, hi)`` with the last bin closed: a confidence of exactly 1.0 is in
the last bin and exactly 0.0 in the first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

__all__ = [
    "BIN_STRATEGIES",
    "KINDS",
    "Binned",
    "uniform_edges",
    "equal_width_bins",
    "quantile_inner_edges",
    "assign_bins",
    "group_scores",
    "make_binned",
    "binned_from_predictions",
    "bin_sums",
    "streamed_bin_sums",
    "CHUNK_ROWS",
    "segment_stats",
    "gather_stats",
    "metric_from_stats",
    "residual_ece",
]

BIN_STRATEGIES = ("uniform", "quantile")
KINDS = ("top_label", "classwise", "positive_class")


class Binned(NamedTuple):
    """Items prepared for binned metrics.

    Attributes
    ----------
    data : ndarray of shape (n_groups, n_items, 2 + n_draws) or (..., 2 + 2 * n_draws)
        Columns: 1, confidence, target per draw, and (only when ``with_sq``, which the
        debiased L2 error needs) squared target per draw. Fewer columns make every
        bootstrap replicate's gather cheaper.
    bins : ndarray of shape (n_groups, n_items)
        Bin index of each item in each group.
    edges : ndarray of shape (n_groups, n_bins + 1)
        Bin edges (first 0, last 1).
    n_bins : int
    n_draws : int
    """

    data: np.ndarray
    bins: np.ndarray
    edges: np.ndarray
    n_bins: int
    n_draws: int


def uniform_edges(n_bins: int) -> np.ndarray:
    """Equal-width edges on [0, 1], computed as k / n_bins so that e.g. 0.7 is exactly an edge."""
    return np.arange(n_bins + 1) / n_bins


def equal_width_bins(z: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bin index (0..n_bins-1) of each score in [0, 1], NumPy version.

    The library's one edge rule: ``[h/J, (h+1)/J)`` bins with the last one
    closed, i.e. ``searchsorted(k / J for k = 1..J-1, z, side='right')``, the same as
    :func:`assign_bins` on :func:`uniform_edges`.

    Parameters
    ----------
    z : ndarray of shape (n,)
        Scores in [0, 1].
    n_bins : int
        J, the number of bins.

    Returns
    -------
    int ndarray of shape (n,)
    """
    return np.searchsorted(np.arange(1, n_bins) / n_bins, z, side="right")


def quantile_inner_edges(conf_sorted: jax.Array, w_sorted: jax.Array, n_bins: int) -> jax.Array:
    """Equal-mass inner edges from sorted confidences and their (integer) weights.

    Edge j (j = 1..n_bins-1) is the midpoint between the k-th and (k+1)-th weighted
    order statistics, k = floor(j * W / n_bins) with W the total weight, so with
    distinct confidences and n divisible by n_bins every bin holds n / n_bins items.
    The same rule serves the sample (unit weights) and bootstrap replicates.

    Parameters
    ----------
    conf_sorted : jax.Array of shape (n,)
        Confidences in increasing order.
    w_sorted : jax.Array of shape (n,)
        Their integer weights (bootstrap multiplicities, or ones).
    n_bins : int

    Returns
    -------
    jax.Array of shape (n_bins - 1,)
    """
    cw = jnp.cumsum(w_sorted)
    total = cw[-1]
    j = jnp.arange(1, n_bins, dtype=conf_sorted.dtype)
    k = jnp.floor(j * total / n_bins)
    last = conf_sorted.shape[0] - 1
    p1 = jnp.clip(jnp.searchsorted(cw, k, side="left"), 0, last)
    p2 = jnp.clip(jnp.searchsorted(cw, k + 1, side="left"), 0, last)
    return 0.5 * (conf_sorted[p1] + conf_sorted[p2])


def assign_bins(conf: jax.Array, inner_edges: jax.Array) -> jax.Array:
    """Bin index of each confidence: ``[lo, hi)`` bins, last closed (searchsorted right).

    Parameters
    ----------
    conf : jax.Array of shape (n,)
    inner_edges : jax.Array of shape (n_bins - 1,)
        Increasing inner edges.

    Returns
    -------
    int32 jax.Array of shape (n,)
    """
    return jnp.searchsorted(inner_edges, conf, side="right").astype(jnp.int32)


def group_scores(P: np.ndarray, T: np.ndarray, kind: str, draws: np.ndarray | None = None,
                 pred: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, list]:
    """Confidences (n, G) and targets (n, D, G) for a metric kind.

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Probabilities.
    T : ndarray of shape (n, K)
        Target matrix (ignored when ``draws`` is given).
    kind : {'top_label', 'classwise', 'positive_class'}
        Top-label: c = max_k P_ik, target T[i, argmax_k P_ik] (lowest index on ties).
        Positive class (K = 2): c = P_i1, target T_i1. Classwise: every column.
    draws : ndarray of shape (D, n), optional
        Sampled labels; the target of draw d is the one-hot of ``draws[d]``.
    pred : int ndarray of shape (n,), optional
        Top-label: the scored class, confidence ``P[i, pred_i]`` (default ``argmax P``).

    Returns
    -------
    conf, target, group_names
    """
    n, K = P.shape
    if kind == "top_label":
        pred = np.argmax(P, axis=1) if pred is None else pred
        conf = P[np.arange(n), pred][:, None]
        if draws is None:
            tgt = T[np.arange(n), pred][:, None, None]
        else:
            tgt = (draws == pred[None, :]).T.astype(np.float64)[:, :, None]
        return conf, tgt, ["top_label"]
    if kind == "positive_class":
        conf = P[:, 1:2]
        if draws is None:
            tgt = T[:, 1][:, None, None]
        else:
            tgt = (draws == 1).T.astype(np.float64)[:, :, None]
        return conf, tgt, ["positive_class"]
    conf = P
    if draws is None:
        tgt = T[:, None, :]
    else:
        tgt = (draws.T[:, :, None] == np.arange(K)[None, None, :]).astype(np.float64)
    return conf, tgt, [f"class_{k}" for k in range(K)]


def make_binned(conf: np.ndarray, tgt: np.ndarray, n_bins: int, strategy: str, *,
                with_sq: bool = True) -> Binned:
    """Bin the confidences and lay out the per-item statistics.

    Parameters
    ----------
    conf : ndarray of shape (n, G)
        Confidences of G score groups (1 for top-label, K for classwise).
    tgt : ndarray of shape (n, D, G)
        Target values (D > 1 for Monte-Carlo draws).
    n_bins : int
    strategy : {'uniform', 'quantile'}
        Equal-width or equal-mass bins.
    with_sq : bool, default=True
        Also lay out squared statistics (for L2 norms and per-bin variances).

    Returns
    -------
    Binned
    """
    n, G = conf.shape
    D = tgt.shape[1]
    if strategy == "uniform":
        edges = np.tile(uniform_edges(n_bins), (G, 1))
    else:
        edges = np.empty((G, n_bins + 1))
        with jax.enable_x64(True):
            for g in range(G):
                s = np.sort(conf[:, g])
                inner = quantile_inner_edges(jnp.asarray(s), jnp.ones(n), n_bins)
                edges[g] = np.concatenate([[0.0], np.asarray(inner), [1.0]])
    bins = np.stack([np.searchsorted(edges[g, 1:-1], conf[:, g], side="right")
                     for g in range(G)]).astype(np.int32)
    t = np.transpose(tgt, (2, 0, 1))  # (G, n, D)
    cols = [np.ones((G, n, 1)), conf.T[:, :, None], t] + ([t**2] if with_sq else [])
    data = np.concatenate(cols, axis=2)
    return Binned(data, bins, edges, n_bins, D)


#: Rows per chunk when laying out items from predictions (bounds the temporaries).
CHUNK_ROWS = 2**16


def _chunk_scores(p: np.ndarray, y: np.ndarray | None, T: np.ndarray | None, kind: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Confidences (G, m) and targets (G, m) of a chunk of rows, float64."""
    m, K = p.shape
    if kind == "top_label":
        pred = np.argmax(p, axis=1)
        conf = np.take_along_axis(p, pred[:, None], axis=1).T
        tgt = (y == pred) if y is not None else np.take_along_axis(T, pred[:, None], 1)[:, 0]
        return conf.astype(np.float64), np.asarray(tgt, dtype=np.float64)[None]
    if kind == "positive_class":
        tgt = (y == 1) if y is not None else T[:, 1]
        return p[:, 1][None].astype(np.float64), np.asarray(tgt, dtype=np.float64)[None]
    tgt = (y[None, :] == np.arange(K)[:, None]) if y is not None else T.T
    return p.T.astype(np.float64), np.asarray(tgt, dtype=np.float64)


def binned_from_predictions(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
                            kind: str, n_bins: int, strategy: str, *,
                            with_sq: bool = True) -> Binned:
    """``make_binned(*group_scores(P, T, kind)[:2], ...)`` laid out over row chunks.

    The probabilities keep their dtype (float32 input is never copied to float64 as a
    whole: each chunk's confidences are widened, exactly); hard labels are given as
    class codes and never become a one-hot matrix. Only the float64 item table of
    :class:`Binned` (``2 + 1 + with_sq`` numbers per item and group) is allocated in full.
    Same result as :func:`make_binned` on :func:`group_scores` (one target draw).

    Parameters
    ----------
    P : ndarray of shape (n, K), float32 or float64
        Probabilities.
    labels : int ndarray of shape (n,) or None
        Class codes (the target is their one-hot), or None when ``T`` is given.
    T : ndarray of shape (n, K) or None
        Target matrix when ``labels`` is None.
    kind : {'top_label', 'classwise', 'positive_class'}
    n_bins : int
    strategy : {'uniform', 'quantile'}
    with_sq : bool, default=True

    Returns
    -------
    Binned
    """
    n, K = P.shape
    G = K if kind == "classwise" else 1
    C = 4 if with_sq else 3
    data = np.empty((G, n, C))
    data[:, :, 0] = 1.0
    for s in range(0, n, CHUNK_ROWS):
        e = min(n, s + CHUNK_ROWS)
        conf, tgt = _chunk_scores(P[s:e], None if labels is None else labels[s:e],
                                  None if T is None else T[s:e], kind)
        data[:, s:e, 1] = conf
        data[:, s:e, 2] = tgt
        if with_sq:
            data[:, s:e, 3] = tgt**2
    if strategy == "uniform":
        edges = np.tile(uniform_edges(n_bins), (G, 1))
    else:
        edges = np.empty((G, n_bins + 1))
        with jax.enable_x64(True):
            for g in range(G):
                srt = np.sort(data[g, :, 1])
                inner = quantile_inner_edges(jnp.asarray(srt), jnp.ones(n), n_bins)
                edges[g] = np.concatenate([[0.0], np.asarray(inner), [1.0]])
    bins = np.empty((G, n), dtype=np.int32)
    for g in range(G):
        for s in range(0, n, CHUNK_ROWS):
            e = min(n, s + CHUNK_ROWS)
            bins[g, s:e] = np.searchsorted(edges[g, 1:-1], data[g, s:e, 1], side="right")
    return Binned(data, bins, edges, n_bins, 1)


def bin_sums(binned: Binned) -> np.ndarray:
    """Per-bin sums of every statistic of the sample, shape (G, n_bins, C), in NumPy.

    The same numbers as :func:`segment_stats` with unit weights (summed in another
    order), without moving the item table to JAX.

    Parameters
    ----------
    binned : Binned

    Returns
    -------
    ndarray of shape (G, n_bins, C)
    """
    G, n, C = binned.data.shape
    B = binned.n_bins
    out = np.zeros((G, B, C))
    for g in range(G):
        out[g, :, 0] = np.bincount(binned.bins[g], minlength=B)
        for c in range(1, C):
            for s in range(0, n, CHUNK_ROWS):  # the chunks of streamed_bin_sums: same sums
                e = min(n, s + CHUNK_ROWS)
                out[g, :, c] += np.bincount(binned.bins[g, s:e], weights=binned.data[g, s:e, c],
                                            minlength=B)
    return out


def streamed_bin_sums(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
                      kind: str, n_bins: int, *, with_sq: bool = True
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin sums of equal-width bins over row chunks, with no item table.

    What :func:`bin_sums` gives on :func:`binned_from_predictions` with
    ``strategy='uniform'`` (the same numbers: same bins, same chunks, same order of
    summation), holding only one chunk of rows at a time; enough for a point estimate.

    Parameters
    ----------
    P, labels, T, kind, n_bins, with_sq
        As in :func:`binned_from_predictions`.

    Returns
    -------
    sums : ndarray of shape (G, n_bins, C)
    edges : ndarray of shape (G, n_bins + 1)
    """
    n, K = P.shape
    G = K if kind == "classwise" else 1
    C = 4 if with_sq else 3
    edges = np.tile(uniform_edges(n_bins), (G, 1))
    inner = edges[0, 1:-1]
    out = np.zeros((G, n_bins, C))
    offset = (np.arange(G) * n_bins)[:, None]
    for s in range(0, n, CHUNK_ROWS):
        e = min(n, s + CHUNK_ROWS)
        conf, tgt = _chunk_scores(P[s:e], None if labels is None else labels[s:e],
                                  None if T is None else T[s:e], kind)
        key = (np.searchsorted(inner, conf, side="right") + offset).ravel()
        cols = [None, conf, tgt] + ([tgt**2] if with_sq else [])
        for c, x in enumerate(cols):
            w = None if x is None else x.ravel()
            out[:, :, c] += np.bincount(key, weights=w, minlength=G * n_bins).reshape(
                G, n_bins)
    return out, edges


def segment_stats(data: jax.Array, bins: jax.Array, weights: jax.Array | None,
                  n_bins: int) -> jax.Array:
    """Weighted per-bin sums, shape (G, n_bins, C).

    Parameters
    ----------
    data : jax.Array of shape (G, n, C)
        Per-item statistics of each score group.
    bins : int jax.Array of shape (G, n)
    weights : jax.Array of shape (n,) or None
        Item weights (bootstrap multiplicities); None means ones.
    n_bins : int

    Returns
    -------
    jax.Array of shape (G, n_bins, C)
    """

    def one(d: jax.Array, b: jax.Array) -> jax.Array:
        x = d if weights is None else d * weights[:, None]
        return jax.ops.segment_sum(x, b, num_segments=n_bins)

    return jax.vmap(one)(data, bins)


#: Sub-slots per bin in :func:`gather_stats` (a power of two).
_SPLIT = 64


def gather_stats(data: jax.Array, bins: jax.Array, idx: jax.Array, n_bins: int) -> jax.Array:
    """Per-bin sums of the resampled items ``idx`` (one gather, no weights), (G, n_bins, C).

    Each bin's sum is accumulated in 64 sub-slots (chosen by the low bits of the item
    index) and then added up: when most items share one bin (an overconfident model's
    top bin), a single accumulator serialises the scatter-add, and splitting it measured
    about 1.8x faster on CPU. The result is the same sum in a different order.

    Parameters
    ----------
    data : jax.Array of shape (G, n, C)
    bins : int jax.Array of shape (G, n)
    idx : int jax.Array of shape (m,)
        Indices of the resampled items.
    n_bins : int

    Returns
    -------
    jax.Array of shape (G, n_bins, C)
    """
    sub = jnp.bitwise_and(idx, _SPLIT - 1)

    def one(d: jax.Array, b: jax.Array) -> jax.Array:
        seg = b[idx] * _SPLIT + sub
        sums = jax.ops.segment_sum(d[idx], seg, num_segments=n_bins * _SPLIT)
        return sums.reshape(n_bins, _SPLIT, -1).sum(axis=1)

    return jax.vmap(one)(data, bins)


def metric_from_stats(stats: jax.Array, n_draws: int, reduce: str, norm: str,
                      debias: bool) -> tuple[jax.Array, jax.Array]:
    """Calibration error from per-bin sums.

    Parameters
    ----------
    stats : array of shape (G, B, 2 + D) or (G, B, 2 + 2D)
        The squared-target sums (last D columns) are needed only when ``debias``.
    n_draws : int
        D.
    reduce : {'ece', 'mce'}
        Weighted average of bin gaps, or the largest gap over non-empty bins.
    norm : {'l1', 'l2'}
        |gap| or gap^2 (then the square root of the weighted mean).
    debias : bool
        L2 only: subtract each bin's estimated sampling variance of the mean target,
        var_b / (n_b - 1), with var_b the within-bin (plug-in) variance of the target;
        bins with fewer than 2 items contribute 0 (Kumar, Liang & Ma 2019).

    Returns
    -------
    value : scalar
        Aggregated over groups (p-th power mean for ECE, max for MCE), then
        averaged over draws.
    per_group : array of shape (G,)
        The per-group value averaged over draws.
    """
    D = n_draws
    cnt = stats[:, :, 0]
    sconf = stats[:, :, 1]
    st = stats[:, :, 2:2 + D]
    nonempty = cnt > 0
    safe = jnp.where(nonempty, cnt, 1.0)
    mc = sconf / safe
    mt = st / safe[:, :, None]
    gap = jnp.where(nonempty[:, :, None], mt - mc[:, :, None], 0.0)  # (G, B, D)
    if reduce == "mce":
        per = jnp.max(jnp.abs(gap), axis=1)  # (G, D)
        return jnp.mean(jnp.max(per, axis=0)), jnp.mean(per, axis=1)
    total = jnp.sum(cnt, axis=1)  # (G,)
    frac = cnt / jnp.where(total > 0, total, 1.0)[:, None]
    if norm == "l1":
        per = jnp.sum(frac[:, :, None] * jnp.abs(gap), axis=1)  # (G, D)
        return jnp.mean(jnp.mean(per, axis=0)), jnp.mean(per, axis=1)
    sq = gap**2
    if debias:
        st2 = stats[:, :, 2 + D:2 + 2 * D]
        var = jnp.maximum(st2 / safe[:, :, None] - mt**2, 0.0)
        big = cnt >= 2
        corr = var / jnp.where(big, cnt - 1.0, 1.0)[:, :, None]
        sq = jnp.where(big[:, :, None], sq - corr, 0.0)
    per_sq = jnp.sum(frac[:, :, None] * sq, axis=1)  # (G, D)
    value = jnp.mean(jnp.sqrt(jnp.maximum(jnp.mean(per_sq, axis=0), 0.0)))
    return value, jnp.mean(jnp.sqrt(jnp.maximum(per_sq, 0.0)), axis=1)


def residual_ece(weights: jax.Array, target: jax.Array, conf: jax.Array, bins: jax.Array,
                 n_bins: int) -> jax.Array:
    r"""Binned L1 ECE of one group under item weights, from the per-bin statistics.

    With equal-width bins and a corrected target this is NC-ECE ("Noisy-Label
    Calibration with Multiple Unreliable Labels"): :math:`\sum_b |\hat r_b|` with the
    binned residual :math:`\hat r_b = \sum_{i \in B_b} w_i (\hat U_i - Z_i) / \sum_i w_i`.
    Written through :func:`segment_stats` and :func:`metric_from_stats`, so it is the
    same number as :func:`noisycal.ece` on the same bins (JAX-traceable; the NC-ECE
    credible, refit and cross-fitted intervals use it).

    Parameters
    ----------
    weights : array of shape (n_items,)
        Item weights (ones for the sample, bootstrap counts, Dirichlet weights).
    target : array of shape (n_items,)
        Target value of each item (e.g. the corrected label U_i).
    conf : array of shape (n_items,)
        Confidence of each item.
    bins : array of int, shape (n_items,)
        Bin index of each item.
    n_bins : int

    Returns
    -------
    scalar array
    """
    data = jnp.stack([jnp.ones_like(conf), conf, target], axis=1)[None]
    stats = segment_stats(data, bins[None], weights, n_bins)
    return metric_from_stats(stats, 1, "ece", "l1", False)[0]
