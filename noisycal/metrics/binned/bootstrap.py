"""The binned bootstrap of the binned metrics.

It is ``bootstrap='binned'`` of :func:`noisycal.ece`: the sample's cells (bins, split by
label), exact multinomial cell counts per replicate, normal within-cell sums for large
cells and item-by-item draws for small ones."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .bins import CHUNK_ROWS, Binned

__all__ = ["NORMAL_FROM", "CellPlan", "binned_bootstrap_applies", "cell_plan",
           "binned_replicate_stats", "binary_target", "cell_sums", "cell_cross_sums",
           "plan_from_cells"]

#: Cells (bin, or bin x label) with at least this many sample items have their sums drawn
#: from the normal in the binned bootstrap; smaller cells are resampled item by item.
NORMAL_FROM = 200


class CellPlan(NamedTuple):
    """What the binned bootstrap needs of the sample (see :func:`cell_plan`).

    Attributes
    ----------
    prob : ndarray of shape (L + 1,)
        Sample fractions of the L large cells, then of all small-cell items together.
    mean : ndarray of shape (L, C - 1)
        Per-item mean of the non-constant statistics (confidence, target, ...) in each
        large cell.
    root : ndarray of shape (L, C - 1, C - 1)
        Symmetric square root of each large cell's plug-in covariance of those statistics.
    cell_bin : ndarray of shape (L,)
        Bin of each large cell.
    small_data : ndarray of shape (n_small, C)
        Rows of the items in small cells (constant column first).
    small_bins : ndarray of shape (n_small,)
    split : bool
        Whether cells are bin x target value (a 0/1 target) or bins.
    """

    prob: np.ndarray
    mean: np.ndarray
    root: np.ndarray
    cell_bin: np.ndarray
    small_data: np.ndarray
    small_bins: np.ndarray
    split: bool


def binned_bootstrap_applies(binned: Binned, codes: np.ndarray | None, rebin: bool) -> bool:
    """Whether the binned bootstrap can stand for the item bootstrap.

    It needs one score group (top-label or positive-class, not classwise: there every
    item is in K bins at once), one target value per item (no Monte-Carlo draws), items
    as the resampling units (no ``cluster``) and the sample's bins held fixed (no
    ``rebin``).

    Parameters
    ----------
    binned : Binned
    codes : ndarray or None
        Cluster codes (None: items are resampled).
    rebin : bool

    Returns
    -------
    bool
    """
    return binned.data.shape[0] == 1 and binned.n_draws == 1 and codes is None and not rebin


def cell_plan(binned: Binned, normal_from: int = NORMAL_FROM) -> CellPlan:
    """Cells of the sample and their moments, for :func:`binned_replicate_stats`.

    A cell is a bin, split further by the target value when every target is 0 or 1 (hard
    or voted labels), so that a large cell's target sum is exactly its count times the
    target. Moments are computed in two passes over row chunks (means, then centred
    cross-products); :func:`cell_sums`, :func:`cell_cross_sums` and
    :func:`plan_from_cells` are the per-chunk steps (also run on Dask chunks).

    Parameters
    ----------
    binned : Binned
        One group, one target draw.
    normal_from : int, default=NORMAL_FROM
        Cells with at least this many items are drawn from the normal.

    Returns
    -------
    CellPlan
    """
    data, bins = binned.data[0], binned.bins[0]
    n, C = data.shape
    chunks = [(s, min(n, s + 16 * CHUNK_ROWS)) for s in range(0, n, 16 * CHUNK_ROWS)]
    split = all(binary_target(data[s:e]) for s, e in chunks)
    n_cells = binned.n_bins * (2 if split else 1)
    cnt = np.zeros(n_cells, dtype=np.int64)
    mean = np.zeros((n_cells, C - 1))
    for s, e in chunks:
        c, sums = cell_sums(data[s:e], bins[s:e], split, n_cells)
        cnt += c
        mean += sums
    mean /= np.maximum(cnt, 1)[:, None]
    cov = np.zeros((n_cells, C - 1, C - 1))
    small_rows = []
    for s, e in chunks:
        part, small = cell_cross_sums(data[s:e], bins[s:e], split, mean, cnt, normal_from)
        cov += part
        small_rows.append(s + small)
    is_small = np.concatenate(small_rows)
    return plan_from_cells(cnt, mean, cov, data[is_small], bins[is_small], split,
                           normal_from)


def binary_target(data: np.ndarray) -> bool:
    """Whether every target (column 2 of item rows ``data``, shape (m, C)) is 0 or 1."""
    return bool(np.all((data[:, 2] == 0.0) | (data[:, 2] == 1.0)))


def _cell_key(data: np.ndarray, bins: np.ndarray, split: bool) -> np.ndarray:
    b = bins.astype(np.int64)
    return b * 2 + data[:, 2].astype(np.int64) if split else b


def cell_sums(data: np.ndarray, bins: np.ndarray, split: bool, n_cells: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """First pass of :func:`cell_plan` over a chunk of item rows: cell counts and sums.

    Parameters
    ----------
    data : ndarray of shape (m, C)
        Item rows of one group (constant column first).
    bins : int ndarray of shape (m,)
    split : bool
        Cells are bin x target value.
    n_cells : int

    Returns
    -------
    counts : int64 ndarray of shape (n_cells,)
    sums : ndarray of shape (n_cells, C - 1)
        Sums of the non-constant columns; both add up over chunks.
    """
    key = _cell_key(data, bins, split)
    sums = np.zeros((n_cells, data.shape[1] - 1))
    for j in range(data.shape[1] - 1):
        sums[:, j] += np.bincount(key, weights=data[:, 1 + j], minlength=n_cells)
    return np.bincount(key, minlength=n_cells).astype(np.int64), sums


def cell_cross_sums(data: np.ndarray, bins: np.ndarray, split: bool, mean: np.ndarray,
                    counts: np.ndarray, normal_from: int = NORMAL_FROM
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Second pass of :func:`cell_plan` over a chunk: centred cross-products, small rows.

    Parameters
    ----------
    data, bins, split
        As in :func:`cell_sums`.
    mean : ndarray of shape (n_cells, C - 1)
        The cell means of the whole sample (first pass).
    counts : int ndarray of shape (n_cells,)
        The cell counts of the whole sample.
    normal_from : int, default=NORMAL_FROM

    Returns
    -------
    cross : ndarray of shape (n_cells, C - 1, C - 1)
        Lower triangle of the summed centred cross-products (adds up over chunks).
    small : int ndarray
        Rows of the chunk (from 0) whose cell has fewer than ``normal_from`` items.
    """
    key = _cell_key(data, bins, split)
    m = data.shape[1] - 1
    cross = np.zeros((mean.shape[0], m, m))
    centred = [data[:, 1 + j] - mean[key, j] for j in range(m)]
    for j in range(m):
        for k in range(j + 1):
            cross[:, j, k] += np.bincount(key, weights=centred[j] * centred[k],
                                          minlength=mean.shape[0])
    return cross, np.flatnonzero(counts[key] < normal_from)


def plan_from_cells(counts: np.ndarray, mean: np.ndarray, cross: np.ndarray,
                    small_data: np.ndarray, small_bins: np.ndarray, split: bool,
                    normal_from: int = NORMAL_FROM) -> CellPlan:
    """The :class:`CellPlan` from the sample's cell counts, means and cross-products.

    Parameters
    ----------
    counts, mean
        Whole-sample cell counts and means (:func:`cell_sums`).
    cross : ndarray of shape (n_cells, C - 1, C - 1)
        Summed :func:`cell_cross_sums` (lower triangle).
    small_data : ndarray of shape (n_small, C)
        Rows of the items in small cells, in row order.
    small_bins : int ndarray of shape (n_small,)
    split : bool
    normal_from : int, default=NORMAL_FROM

    Returns
    -------
    CellPlan
    """
    n = int(counts.sum())
    cov = np.tril(cross) + np.transpose(np.tril(cross, -1), (0, 2, 1))
    large = np.flatnonzero(counts >= normal_from)
    cov = cov[large] / counts[large][:, None, None]
    lam, vec = np.linalg.eigh(cov)
    root = np.einsum("lij,lj,lkj->lik", vec, np.sqrt(np.maximum(lam, 0.0)), vec)
    # a statistic constant in a cell (the target of a split cell) gets exactly no noise
    const = np.diagonal(cov, axis1=1, axis2=2) == 0.0
    root = np.where(const[:, :, None] | const[:, None, :], 0.0, root)
    prob = np.append(counts[large], small_data.shape[0]) / n
    cell_bin = large // 2 if split else large
    return CellPlan(prob, mean[large], root, cell_bin, small_data,
                    small_bins.astype(np.int64), split)


#: Most small-item draws held at once by :func:`binned_replicate_stats`.
_DRAWS_PER_CHUNK = 2**22


def binned_replicate_stats(plan: CellPlan, n: int, n_bins: int, n_boot: int,
                           rng: np.random.Generator) -> np.ndarray:
    """Per-bin sums of ``n_boot`` binned-bootstrap replicates, shape (n_boot, n_bins, C).

    Per replicate: the counts of the large cells and of the small-item pool are one
    exact multinomial draw of n items over the cells (NumPy's ``multinomial``); each
    large cell's sums are ``N_c mu_c + sqrt(N_c) root_c z`` with z standard normal; the
    pool's S items are drawn uniformly (exactly: given that a resampled item falls in
    the pool it is any pool item with equal probability) and added to their bins.

    Parameters
    ----------
    plan : CellPlan
    n : int
        Sample size (items drawn per replicate).
    n_bins : int
    n_boot : int
    rng : numpy Generator

    Returns
    -------
    ndarray of shape (n_boot, n_bins, C)
    """
    L, m = plan.mean.shape
    C = m + 1
    counts = rng.multinomial(n, plan.prob, size=n_boot).astype(np.float64)
    big = counts[:, :L]
    z = rng.standard_normal((n_boot, L, m))
    sums = big[:, :, None] * plan.mean + np.sqrt(big)[:, :, None] * np.einsum(
        "lij,rlj->rli", plan.root, z)
    cells = np.concatenate([big[:, :, None], sums], axis=2)  # (n_boot, L, C)
    onehot = (plan.cell_bin[:, None] == np.arange(n_bins)[None, :]).astype(np.float64)
    stats = np.ascontiguousarray(np.einsum("rlc,lb->rbc", cells, onehot))
    n_small = plan.small_data.shape[0]
    if n_small == 0:
        return stats
    S = counts[:, L].astype(np.int64)
    flat = stats.reshape(n_boot * n_bins, C)  # a view of the contiguous stats: adds land
    assert np.shares_memory(flat, stats)
    start = 0
    while start < n_boot:  # chunks of replicates holding at most _DRAWS_PER_CHUNK draws
        cum = np.cumsum(S[start:])
        stop = start + max(1, int(np.searchsorted(cum, _DRAWS_PER_CHUNK, side="right")))
        s = S[start:stop]
        j = rng.integers(0, n_small, int(s.sum()))
        seg = np.repeat(np.arange(start, stop) * n_bins, s) + plan.small_bins[j]
        for c in range(C):
            flat[:, c] += np.bincount(seg, weights=plan.small_data[j, c],
                                      minlength=n_boot * n_bins)
        start = stop
    return stats
