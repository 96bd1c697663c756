r"""Nested highest-probability sets: their masses, coverages and per-bin statistics.

For a probability row :math:`q \in \Delta_K` sorted in decreasing order by a stable
permutation :math:`\pi` (on ties the lower class index comes first), the t-th nested
highest-probability set is :math:`\{\pi(1), \dots, \pi(t)\}`, t = 1..K. Its *mass* is
:math:`s(t) = \sum_{j \le t} q_{\pi(j)}` (clipped to [0, 1] against rounding), and its
*coverage* against a target row :math:`T_i` is the target mass of the set,
:math:`c(t) = \sum_{j \le t} T_{i\pi(j)}`. For hard labels this is the indicator that the
label is in the set, as in "Adaptive Set-Mass Calibration with Conformal Prediction"
(Section 2.3); for soft, posterior or noise-corrected targets it is the expected value of
that indicator under the target, an extension of ours (a corrected target may give
coverages outside [0, 1], unbiased for the clean-label indicator).

Everything here runs over row chunks, so memory is O(chunk x K) whatever n is; the
per-item, per-bin sums add up across chunks exactly.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._util.validation import check_real, user_stacklevel
from ..exceptions import NumericalWarning

__all__ = ["HPR_TOL", "chunk_rows", "prefix_bin_stats", "hpr_mask", "window_sums",
           "warn_empty_window", "check_window"]

#: Tolerance of the highest-probability region: a prefix whose mass is at least
#: ``1 - alpha - HPR_TOL`` reaches the level (so a mass of 0.8999999999999999 after
#: rescaling to exactly 0.9 still counts as 0.9).
HPR_TOL = 1e-12

#: Numbers one chunk holds per work array (about 8 MB of float64).
_CHUNK_ELEMENTS = 2**20


#: Up to this many classes the run starts of :func:`prefix_bin_stats` come from one
#: vectorised count (K x (n_bins - 1) comparisons a row); above, from a per-row search.
SMALL_K = 64


def chunk_rows(n_classes: int, chunk_size: int | None = None) -> int:
    """Rows per chunk: ``chunk_size`` if given, else about a million numbers per array.

    Parameters
    ----------
    n_classes : int
    chunk_size : int, optional

    Returns
    -------
    int
    """
    if chunk_size is not None:
        return int(chunk_size)
    return max(1, _CHUNK_ELEMENTS // max(int(n_classes), 1))


def _label_rank(P: np.ndarray, labels: np.ndarray, neg_sorted: np.ndarray) -> np.ndarray:
    """0-based position of each row's label under the stable decreasing order:
    #{classes above it} + #{tied classes with a lower index} (``neg_sorted``: the rows of
    -P sorted increasingly, used to find the rows with a tie at the label's value)."""
    m, K = P.shape
    py = P[np.arange(m), labels][:, None]
    rank = np.count_nonzero(P > py, axis=1)
    nxt = np.minimum(rank + 1, K - 1)
    tied = (rank + 1 < K) & (neg_sorted[np.arange(m), nxt] == -py[:, 0])
    ties = np.flatnonzero(tied)
    if ties.size:
        Pt, yt = P[ties], labels[ties]
        rank[ties] += np.count_nonzero((Pt == py[ties]) & (np.arange(K)[None, :]
                                                            < yt[:, None]), axis=1)
    return rank


def _chunk_sets(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Masses of the K nested sets of each row of a chunk (m, K), clipped to [0, 1], with
    the label's position (hard labels) or the cumulative coverages (m, K) (other targets)."""
    if labels is not None:
        # hard labels: no argsort needed, the coverage of set t is 1{t >= rank}
        # sorting -P gives the decreasing order contiguously; negation is exact
        mass = np.sort(-P, axis=1)
        cover, rank = None, _label_rank(P, labels, mass)
        np.cumsum(mass, axis=1, out=mass)
        np.negative(mass, out=mass)
    else:
        order = np.argsort(-P, axis=1, kind="stable")
        mass = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
        cover, rank = np.cumsum(np.take_along_axis(T, order, axis=1), axis=1), None
    np.minimum(mass, 1.0, out=mass)  # prefix sums of probabilities are never negative
    return mass, rank, cover


def _run_sums(x: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums of the flattened rows of x over consecutive runs (one ``add.reduceat`` pass);
    ``starts`` are the runs' first positions, empty runs (``counts == 0``) sum to 0."""
    flat = x.ravel()
    idx = np.minimum(starts, flat.size - 1)
    return np.where(counts > 0, np.add.reduceat(flat, idx), 0.0)


def prefix_bin_stats(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
                     n_bins: int, chunk_size: int | None = None) -> np.ndarray:
    """Per-item, per-bin sums over the K nested sets of every row, shape (n, n_bins, 3).

    Column 0 counts the sets of item i whose mass falls in bin b (equal-width bins
    ``[lo, hi)`` with the last one closed, :func:`~noisycal.metrics.binned.bins.equal_width_bins`),
    column 1 sums their masses and column 2 their coverages. Summed over items these are
    the per-bin sufficient statistics of the cumulative mass calibration error.

    The masses of a row increase with t, so each bin holds a run of consecutive sets:
    the run boundaries come from a ``searchsorted`` of the inner edges in each row, and
    the sums are one ``add.reduceat`` over the runs (for hard labels the number of covered sets in
    a run [a, b) is ``max(0, b - max(a, rank))``).

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Probability rows.
    labels : int ndarray of shape (n,) or None
        Hard labels (fast path without an argsort).
    T : ndarray of shape (n, K) or None
        Target matrix (when ``labels`` is None).
    n_bins : int
    chunk_size : int, optional
        Rows per chunk (default: about a million numbers per work array).

    Returns
    -------
    ndarray of shape (n, n_bins, 3)
    """
    n, K = P.shape
    B = n_bins
    step = chunk_rows(K, chunk_size)
    out = np.empty((n, B, 3))
    inner = np.arange(1, B) / B  # the inner edges of equal_width_bins
    for a in range(0, n, step):
        b = min(n, a + step)
        m = b - a
        # float32 rows widened one chunk at a time (exact)
        mass, rank, cover = _chunk_sets(P[a:b].astype(np.float64, copy=False),
                                        None if labels is None else labels[a:b],
                                        None if T is None else T[a:b])
        # start of every (row, bin) run in the row-major order: a row's masses increase,
        # so bin h (the rule of equal_width_bins) starts at the first mass >= h / B
        starts = np.empty((m, B + 1), np.int64)
        starts[:, 0], starts[:, B] = 0, K
        if K <= SMALL_K:  # few classes: count the masses below each edge, all rows at once
            starts[:, 1:B] = np.count_nonzero(mass[:, :, None] < inner, axis=1)
        else:  # many classes: a binary search per row
            for i in range(m):
                starts[i, 1:B] = mass[i].searchsorted(inner, side="left")
        starts += (np.arange(m, dtype=np.int64) * K)[:, None]
        starts = np.concatenate([starts[:, :B].ravel(), [m * K]])
        counts = np.diff(starts)
        out[a:b, :, 0] = counts.reshape(m, B)
        out[a:b, :, 1] = _run_sums(mass, starts[:-1], counts).reshape(m, B)
        if rank is not None:
            # positions within the row; covered sets of a run [lo, hi): max(0, hi - max(lo, r))
            lo = starts[:-1].reshape(m, B) - (np.arange(m) * K)[:, None]
            out[a:b, :, 2] = np.maximum(0, lo + counts.reshape(m, B)
                                        - np.maximum(lo, rank[:, None]))
        else:
            out[a:b, :, 2] = _run_sums(cover, starts[:-1], counts).reshape(m, B)
    return out


def hpr_mask(P: np.ndarray, level: float, tol: float = HPR_TOL) -> np.ndarray:
    """Membership of the highest-probability region :math:`HPR_{level}` of each row, (n, K).

    The region is the smallest prefix of the stable decreasing order whose mass is at least
    ``level - tol`` (the whole row when no prefix reaches it, as can happen in floating
    point for ``level = 1``).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    level : float or ndarray of shape (n,)
        The mass 1 - alpha (one per row allowed); a level above 1 (or inf) gives the
        whole row.
    tol : float, default=1e-12

    Returns
    -------
    bool ndarray of shape (n, K)
    """
    n, K = P.shape
    order = np.argsort(-P, axis=1, kind="stable")
    cs = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
    lv = np.broadcast_to(np.asarray(level, dtype=np.float64), (n,))[:, None]
    reach = cs >= lv - tol
    size = np.where(reach.any(axis=1), np.argmax(reach, axis=1) + 1, K)
    in_sorted = np.arange(K)[None, :] < size[:, None]
    mask = np.zeros((n, K), dtype=bool)
    np.put_along_axis(mask, order, in_sorted, axis=1)
    return mask


def window_sums(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
                lo: float, hi: float, chunk_size: int | None = None) -> tuple[int, float]:
    """Number of nested sets whose mass lies in the closed window [lo, hi], and the sum of
    their coverages.

    Parameters
    ----------
    P, labels, T, chunk_size
        As in :func:`prefix_bin_stats`.
    lo, hi : float

    Returns
    -------
    count, sum_coverage
    """
    n, K = P.shape
    step = chunk_rows(K, chunk_size)
    count, total = 0, 0.0
    for a in range(0, n, step):
        b = min(n, a + step)
        # float32 rows widened one chunk at a time (exact)
        mass, rank, cover = _chunk_sets(P[a:b].astype(np.float64, copy=False),
                                        None if labels is None else labels[a:b],
                                        None if T is None else T[a:b])
        inside = (mass >= lo) & (mass <= hi)
        count += int(np.count_nonzero(inside))
        if rank is not None:
            cover = np.arange(K)[None, :] >= rank[:, None]
        total += float(np.sum(cover[inside]))
    return count, total


def check_window(lo: object, hi: object) -> tuple[float, float]:
    """A closed mass window 0 <= lo <= hi <= 1 (ValueError naming the bound otherwise).

    Parameters
    ----------
    lo, hi : object

    Returns
    -------
    (float, float)
    """
    lo = check_real(lo, "lo", minimum=0.0)
    hi = check_real(hi, "hi", minimum=0.0)
    if hi > 1.0 or lo > 1.0:
        raise ValueError(f"lo and hi are set masses in [0, 1] (fractions, not percent), got "
                         f"lo={lo!r}, hi={hi!r}")
    if lo > hi:
        raise ValueError(f"lo must not exceed hi, got lo={lo!r} > hi={hi!r}")
    return lo, hi


def warn_empty_window(lo: float, hi: float) -> float:
    """Warn that no nested set has its mass in [lo, hi]; return NaN.

    Parameters
    ----------
    lo, hi : float

    Returns
    -------
    float
    """
    warnings.warn(f"coverage_window: no nested highest-probability set has its mass in "
                  f"[{lo:g}, {hi:g}]; the coverage is undefined (NaN)", NumericalWarning,
                  stacklevel=user_stacklevel())
    return math.nan
