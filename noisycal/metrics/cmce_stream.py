r"""The CMCE's per-bin statistics and inverted-interval form, accumulated over row chunks.

The CMCE is the cumulative mass calibration error; no per-item table of n x n_bins x 3
numbers is built.

"Adaptive Set-Mass Calibration with Conformal Prediction" (Eq. 4): the CMCE is a
reduction of per-bin sums over the n * K nested sets. With the bins held fixed it is a
weighted L1 norm of the per-bin means over items of :math:`d_{ib}` (the item's coverage
minus mass summed over its sets in bin b), so the inverted interval needs the mean of
:math:`d_i` and its covariance, and the per-bin bands the sums of squared residuals
:math:`d_{ib} - \mathrm{gap}_b N_{ib}`. :func:`cmce_form` computes them in two passes
over chunks of rows (:func:`~noisycal.metrics.set_mass.prefix_bin_stats` on each
chunk): the first sums the statistics and the gaps, the second the centred cross
products (the two-pass form of :func:`~noisycal.metrics.binned.form.contribution_mean_cov`)
and the residuals. Probabilities are read in their dtype (float32 widened one chunk at
a time).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from .binned.form import _cluster_cov
from .set_mass import prefix_bin_stats

__all__ = ["CmceForm", "cmce_form", "STREAM_ROWS"]

#: Rows per chunk by default (the chunk's table is STREAM_ROWS x n_bins x 3 float64,
#: 2.4 MiB at 25 bins; small next to the input whatever n).
STREAM_ROWS = 2**12


class CmceForm(NamedTuple):
    """Per-bin statistics of the CMCE over row chunks.

    Attributes
    ----------
    stats : ndarray of shape (n_bins, 3)
        Count, mass and coverage sums over all sets.
    mean : ndarray of shape (n_bins,) or None
        Mean over items of coverage minus mass per bin (None: point estimate only).
    cov : ndarray of shape (n_bins, n_bins) or None
        Its estimated covariance (cluster-robust with clusters).
    band_se : ndarray of shape (n_bins,) or None
        Standard error of each bin's coverage (linearised ratio).
    """

    stats: np.ndarray
    mean: np.ndarray | None
    cov: np.ndarray | None
    band_se: np.ndarray | None


def _chunks(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None, n_bins: int,
            chunk_size: int | None) -> Iterator[tuple[int, int, np.ndarray]]:
    n = P.shape[0]
    step = STREAM_ROWS if chunk_size is None else chunk_size
    for a in range(0, n, step):
        b = min(n, a + step)
        yield a, b, prefix_bin_stats(P[a:b], None if labels is None else labels[a:b],
                                     None if T is None else T[a:b], n_bins, chunk_size)


def _running_sum(acc: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``acc + rows[0] + rows[1] + ...``, added in that order."""
    return np.concatenate([acc[None], rows], axis=0).sum(axis=0)


def cmce_form(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None, n_bins: int,
              chunk_size: int | None = None, *, inversion: bool = False,
              codes: np.ndarray | None = None, n_clusters: int | None = None) -> CmceForm:
    """Per-bin statistics of the CMCE and, with ``inversion``, its linear form.

    Parameters
    ----------
    P : ndarray of shape (n, K), float32 or float64
    labels : int ndarray of shape (n,) or None
    T : ndarray of shape (n, K) or None
    n_bins : int
    chunk_size : int, optional
        Rows per chunk (default :data:`STREAM_ROWS`).
    inversion : bool, default=False
        Also the mean, covariance and bands (a second pass over the chunks).
    codes : ndarray of shape (n,), optional
        Cluster codes: the covariance is then the cluster-robust one (from the (C,
        n_bins) cluster totals).
    n_clusters : int, optional

    Returns
    -------
    CmceForm
    """
    n = P.shape[0]
    B = n_bins
    stats, dsum = np.zeros((B, 3)), np.zeros(B)
    tot = None if codes is None or not inversion else np.zeros((int(n_clusters), B))
    for a, b, S in _chunks(P, labels, T, n_bins, chunk_size):
        # row by row onto the running sums, as NumPy sums the whole table over its
        # first axis: the same numbers whatever the chunks
        stats = _running_sum(stats, S)
        d = S[:, :, 2] - S[:, :, 1]
        dsum = _running_sum(dsum, d)
        if tot is not None:
            np.add.at(tot, np.asarray(codes[a:b], dtype=np.int64), d)
    if not inversion:
        return CmceForm(stats, None, None, None)
    mean = dsum / n
    cnt = stats[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(cnt > 0, dsum / cnt, np.nan)
    cross, resid2 = np.zeros((B, B)), np.zeros(B)
    for _, _, S in _chunks(P, labels, T, n_bins, chunk_size):
        d = S[:, :, 2] - S[:, :, 1]
        resid2 += np.sum((d - gap[None, :] * S[:, :, 0]) ** 2, axis=0)
        if tot is None:
            dev = d - mean
            cross += dev.T @ dev
    cov = cross / (n * max(n - 1, 1)) if tot is None else _cluster_cov(tot, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(resid2) / cnt
    return CmceForm(stats, mean, cov, se)
