r"""A binned calibration error as a norm of a vector of means, for the inverted interval.

With the bins held fixed and :math:`d_i` = target minus confidence, item i contributes
:math:`x_{i,(g,b)} = d_{ig}\,1\{i \in \text{bin } b \text{ of group } g\}`; the mean of
these contributions :math:`\hat m` gives the L1 ECE as :math:`\sum_j a_j|\hat m_j|`
(:math:`a_j = 1/G`, G = 1 for top-label and positive-class, K for classwise) and the L2
ECE as :math:`(\sum_j a_j \hat m_j^2)^{1/2}` (:math:`a_j = 1/(G\hat p_j)`, the bin's share
of items held at its sample value). :func:`noisycal.intervals.inversion.invert_norm`
turns the triple into an interval.
"""

from __future__ import annotations

import numpy as np

from ..._util.jax import as_numpy_rng
from ..._util.types import Seed
from ..._util.validation import check_choice
from ...intervals.inversion import norm_of_means
from .bins import Binned

__all__ = ["binned_linear_form", "bin_gap_se", "contribution_mean_cov", "one_hot_target",
           "consistency_null", "calibrated_bin_variance", "floored_cov",
           "linear_form_from_sums", "floor_variance", "gap_se_from_sums", "cross_sums",
           "consistency_counts", "TableForm"]

_CHUNK_ELEMENTS = 2**24


def _item_gaps(binned: Binned) -> np.ndarray:
    if binned.n_draws != 1:
        raise ValueError("the inverted interval needs one target value per item "
                         "(not Monte-Carlo label draws)")
    return binned.data[:, :, 2] - binned.data[:, :, 1]  # (G, n)


def cross_sums(d: np.ndarray, bins: np.ndarray, B: int) -> np.ndarray:
    """sum_i x_i x_i^T, (J, J) with J = G * B, built block by block with bincount.

    Parameters
    ----------
    d : ndarray of shape (G, n)
        Target minus confidence of each item in each group.
    bins : int ndarray of shape (G, n)
    B : int
        Bins per group.

    Returns
    -------
    ndarray of shape (G * B, G * B)
    """
    G = d.shape[0]
    S = np.zeros((G * B, G * B))
    for g in range(G):
        for h in range(g, G):
            block = np.bincount(bins[g].astype(np.int64) * B + bins[h], weights=d[g] * d[h],
                                minlength=B * B).reshape(B, B)
            S[g * B:(g + 1) * B, h * B:(h + 1) * B] = block
            S[h * B:(h + 1) * B, g * B:(g + 1) * B] = block.T
    return S


def _cluster_cov(tot: np.ndarray, n: int) -> np.ndarray:
    """Cluster-robust covariance of a mean over n rows from the (C, J) cluster totals."""
    C = tot.shape[0]
    dev = tot - tot.mean(axis=0)
    return (dev.T @ dev) * C / (max(C - 1, 1) * n * n)


def contribution_mean_cov(x: np.ndarray, codes: np.ndarray | None = None,
                          n_clusters: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean of dense per-item contributions and the estimated covariance of that mean.

    The same estimator as :func:`binned_linear_form` for items that contribute to several
    bins at once (e.g. the K nested sets of one item in the cumulative mass calibration
    error): the sample covariance over n (n - 1 divisor), or with ``codes`` the
    cluster-robust one.

    Parameters
    ----------
    x : ndarray of shape (n, J)
        Contribution of each item to each mean.
    codes : ndarray of shape (n,), optional
        Cluster code of each item.
    n_clusters : int, optional

    Returns
    -------
    mean : ndarray of shape (J,)
    cov : ndarray of shape (J, J)
    """
    n = x.shape[0]
    mean = x.sum(axis=0) / n
    if codes is None:
        dev = x - mean
        return mean, (dev.T @ dev) / (n * max(n - 1, 1))
    tot = np.zeros((int(n_clusters), x.shape[1]))
    np.add.at(tot, np.asarray(codes, dtype=np.int64), x)
    return mean, _cluster_cov(tot, n)


def calibrated_bin_variance(binned: Binned, n_items: int | None = None) -> np.ndarray:
    r"""Variance of each bin mean under calibration, one-hot targets, (G * B,).

    If the model is calibrated and the labels independent given the scores, a hit
    indicator with confidence p has variance p(1 - p), so the bin mean
    :math:`\hat m_j = \frac1n\sum_{i \in j}(y_i - p_i)` has variance
    :math:`\sum_{i \in j} p_i(1 - p_i)/n^2` (the variance behind consistency
    resampling, Bröcker & Smith 2007, "Increasing the reliability of reliability
    diagrams"). Empty bins get 0.

    Parameters
    ----------
    binned : Binned
    n_items : int, optional
        The n of the formula (default: the items of ``binned``; the sample size when
        ``binned`` holds one chunk of its rows, whose terms then add up over chunks).

    Returns
    -------
    ndarray of shape (G * B,)
    """
    conf = binned.data[:, :, 1]                      # (G, n)
    G, n = conf.shape
    n = n if n_items is None else n_items
    B = binned.n_bins
    flat = (np.arange(G)[:, None] * B + binned.bins).ravel()
    return np.bincount(flat, weights=(conf * (1.0 - conf)).ravel(), minlength=G * B) / n ** 2


def floored_cov(binned: Binned, cov: np.ndarray, variance_floor: str,
                codes: np.ndarray | None = None) -> np.ndarray:
    """``cov`` with its diagonal floored as ``variance_floor`` of :func:`binned_linear_form`
    says (returned unchanged for 'none', clustered or not one-hot targets).

    Parameters
    ----------
    binned : Binned
    cov : ndarray of shape (G * B, G * B)
        Covariance of the bin means (:func:`binned_linear_form` without a floor).
    variance_floor : {'none', 'calibrated'}
    codes : ndarray of shape (n,), optional
        Cluster codes (no floor with clusters).

    Returns
    -------
    ndarray of shape (G * B, G * B)
    """
    check_choice(variance_floor, "variance_floor", ("none", "calibrated"))
    if variance_floor == "none" or codes is not None or not one_hot_target(binned):
        return cov
    return floor_variance(cov, calibrated_bin_variance(binned))


def floor_variance(cov: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``cov`` with each diagonal entry raised to at least ``var`` (the shortfall added).

    Parameters
    ----------
    cov : ndarray of shape (J, J)
    var : ndarray of shape (J,)
        The floor, e.g. :func:`calibrated_bin_variance`.

    Returns
    -------
    ndarray of shape (J, J)
    """
    short = np.maximum(var - np.diag(cov), 0.0)
    return cov + np.diag(short)


def binned_linear_form(binned: Binned, norm: str, codes: np.ndarray | None = None,
                       n_clusters: int | None = None, *, variance_floor: str = "none"
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, cov, weights)`` of a binned L1 or L2 ECE with its bins held fixed.

    Parameters
    ----------
    binned : Binned
        Items laid out by :func:`~noisycal.metrics.binned.bins.make_binned` (one draw).
    norm : {'l1', 'l2'}
    codes : ndarray of shape (n,), optional
        Cluster code of each item; the covariance is then the cluster-robust one
        (clusters are the sampling units).
    n_clusters : int, optional
        Number of clusters (with ``codes``).
    variance_floor : {'none', 'calibrated'}, default='none'
        'calibrated' (our choice; the default of the binned ECE's inverted interval):
        for a one-hot target (:func:`one_hot_target`) without ``codes``, raise each
        bin mean's variance to at least its value under calibration,
        :func:`calibrated_bin_variance`, by adding the shortfall to the diagonal (which
        keeps the matrix positive semi-definite and leaves the covariances alone). A
        sparse bin with no positive label has a sample variance near 0 although its
        labels vary; the floor keeps the simulated statistic from being too light in
        its upper tail. Where the model is underconfident in a bin (true probability
        nearer 1/2 than p), the floor can bind above the true variance, and the interval
        is then conservative. Soft, corrected and clustered targets are left alone (the
        Bernoulli variance is not theirs).

    Returns
    -------
    mean : ndarray of shape (G * B,)
    cov : ndarray of shape (G * B, G * B)
        Estimated covariance of ``mean``: the sample covariance of the contributions
        (of the cluster totals with ``codes``) over n (times the number of clusters
        over n squared with ``codes``), with the n - 1 (clusters - 1) divisor; with
        ``variance_floor='calibrated'`` its diagonal floored as above.
    weights : ndarray of shape (G * B,)
    """
    check_choice(variance_floor, "variance_floor", ("none", "calibrated"))
    d = _item_gaps(binned)
    G, n = d.shape
    B = binned.n_bins
    bins = binned.bins
    flat = (np.arange(G)[:, None] * B + bins).ravel()
    J = G * B
    dsum = np.bincount(flat, weights=d.ravel(), minlength=J)
    counts = np.bincount(flat, minlength=J).astype(np.float64)
    if codes is None:
        mean, cov, weights = linear_form_from_sums(dsum, cross_sums(d, bins, B), counts, n,
                                                   G, norm)
    else:
        mean, _, weights = linear_form_from_sums(dsum, None, counts, n, G, norm)
        C = int(n_clusters)
        tot = np.zeros((C, J))
        rows = np.tile(np.asarray(codes, dtype=np.int64), G)
        np.add.at(tot, (rows, flat), d.ravel())
        cov = _cluster_cov(tot, n)
    cov = floored_cov(binned, cov, variance_floor, codes)
    return mean, cov, weights


def linear_form_from_sums(dsum: np.ndarray, cross: np.ndarray | None, counts: np.ndarray,
                          n: int, n_groups: int, norm: str
                          ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``(mean, cov, weights)`` of :func:`binned_linear_form` (items as sampling units, no
    floor) from per-bin sums, which add up over row chunks.

    Parameters
    ----------
    dsum : ndarray of shape (J,)
        Per-bin sums of target minus confidence (J = groups x bins).
    cross : ndarray of shape (J, J) or None
        :func:`cross_sums` of the items (None: no covariance returned).
    counts : ndarray of shape (J,)
        Items per bin.
    n : int
        Number of items.
    n_groups : int
    norm : {'l1', 'l2'}

    Returns
    -------
    mean, cov, weights
    """
    J = dsum.shape[0]
    mean = dsum / n
    cov = None if cross is None else (cross - n * np.outer(mean, mean)) / (n * max(n - 1, 1))
    if norm == "l1":
        weights = np.full(J, 1.0 / n_groups)
    else:
        share = counts / n
        weights = np.where(counts > 0, 1.0 / (n_groups * np.where(counts > 0, share, 1.0)),
                           0.0)
    return mean, cov, weights


def bin_gap_se(binned: Binned) -> np.ndarray:
    """Standard error of each bin's mean target minus mean confidence, (G, B).

    The within-bin standard deviation of the gaps over the square root of the count
    (NaN for bins with fewer than 2 items).

    Parameters
    ----------
    binned : Binned

    Returns
    -------
    ndarray of shape (G, B)
    """
    d = _item_gaps(binned)
    G, B = d.shape[0], binned.n_bins
    cnt, s1, s2 = np.empty((G, B)), np.empty((G, B)), np.empty((G, B))
    for g in range(G):
        cnt[g] = np.bincount(binned.bins[g], minlength=B)
        s1[g] = np.bincount(binned.bins[g], weights=d[g], minlength=B)
        s2[g] = np.bincount(binned.bins[g], weights=d[g] ** 2, minlength=B)
    return gap_se_from_sums(cnt, s1, s2)


def gap_se_from_sums(cnt: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """:func:`bin_gap_se` from per-bin counts and sums of the gaps and squared gaps.

    Parameters
    ----------
    cnt, s1, s2 : ndarray of shape (G, B)

    Returns
    -------
    ndarray of shape (G, B)
    """
    ok = cnt >= 2
    var = np.where(ok, (s2 - s1 ** 2 / np.where(ok, cnt, 1.0))
                   / np.where(ok, cnt - 1.0, 1.0), np.nan)
    return np.where(ok, np.sqrt(np.maximum(var, 0.0) / np.where(ok, cnt, 1.0)), np.nan)


def one_hot_target(binned: Binned) -> bool:
    """Whether labels can be redrawn from the confidences (:func:`consistency_null`).

    True for one target draw per item with values in {0, 1} and either one score group
    (top-label or positive-class: the target is the hit indicator) or groups that are all
    K classes (classwise: every item's targets sum to 1 and its confidences to 1, up to
    1e-9).

    Parameters
    ----------
    binned : Binned

    Returns
    -------
    bool
    """
    if binned.n_draws != 1:
        return False
    tgt, conf = binned.data[:, :, 2], binned.data[:, :, 1]
    if not np.all((tgt == 0.0) | (tgt == 1.0)):
        return False
    return tgt.shape[0] == 1 or bool(np.all(tgt.sum(axis=0) == 1.0)
                                     and np.allclose(conf.sum(axis=0), 1.0, atol=1e-9))


def consistency_null(binned: Binned, weights: np.ndarray, norm: str, n_sim: int,
                     seed: Seed) -> np.ndarray:
    """The binned ECE under labels redrawn from the confidences, bins held fixed.

    Consistency resampling (Bröcker & Smith 2007, "Increasing the reliability of
    reliability diagrams"): with one score group each item's hit is drawn from
    Bernoulli(confidence); with all K classes as groups its label is drawn from the
    categorical distribution of its K confidences. Exact up to Monte-Carlo error for
    one-hot targets (:func:`one_hot_target`), however sparsely the bins are filled.

    Parameters
    ----------
    binned : Binned
        Items with a one-hot target.
    weights : ndarray of shape (G * B,)
        Weights of the norm (:func:`binned_linear_form`).
    norm : {'l1', 'l2'}
    n_sim : int
    seed : int or jax key

    Returns
    -------
    ndarray of shape (n_sim,)
    """
    rng = as_numpy_rng(seed)
    G, n = binned.bins.shape
    B = binned.n_bins
    J = G * B
    flat2d = np.arange(G)[:, None] * B + binned.bins  # (G, n): bin of item i in group g
    conf = binned.data[:, :, 1]                       # (G, n)
    # Each bin mean is (number of hits in it - its sum of confidences) / n; the second
    # term does not depend on the draw.
    conf_sum = np.bincount(flat2d.ravel(), weights=conf.ravel(), minlength=J)
    out = np.empty(n_sim)
    step = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_sim, step):
        r = min(step, n_sim - start)
        # uniform number j * n + i of the stream belongs to draw j and item i
        counts = consistency_counts(rng.random((r, n)), conf, flat2d, J)
        m = (counts - conf_sum[None, :]) / n
        out[start:start + r] = norm_of_means(m, weights, norm)
    return out


def consistency_counts(u: np.ndarray, conf: np.ndarray, cells: np.ndarray,
                       n_cells: int) -> np.ndarray:
    """Hits per cell of labels redrawn from the confidences (:func:`consistency_null`).

    Parameters
    ----------
    u : ndarray of shape (r, m)
        One uniform per draw and item.
    conf : ndarray of shape (G, m)
        Confidences of the m items in each group (G = 1: the hit is Bernoulli(conf);
        G = K: the label is categorical(conf), drawn by inverse CDF).
    cells : int ndarray of shape (G, m)
        Cell (group x bin) of each item in each group.
    n_cells : int

    Returns
    -------
    int ndarray of shape (r, n_cells)
        Counts add up over chunks of items.
    """
    r, m = u.shape
    G = conf.shape[0]
    if G == 1:
        hit = u < conf[0][None, :]                                        # (r, m)
        cell = cells[0][None, :]
    else:
        # The label: the number of cumulative confidences at or below u (inverse
        # CDF, one class at a time); a hit only in the bin of the drawn class.
        cum = np.cumsum(conf.T, axis=1)                                   # (m, G)
        cum[:, -1] = 1.0
        y = np.zeros((r, m), dtype=np.int64)
        for k in range(G - 1):
            y += u >= cum[None, :, k]
        hit = np.ones((r, m), dtype=bool)
        cell = cells[y, np.arange(m)[None, :]]                            # (r, m)
    idx = (np.arange(r)[:, None] * n_cells + cell)[hit]
    return np.bincount(idx, minlength=r * n_cells).reshape(r, n_cells)


class TableForm:
    """The inputs of the inverted interval read off an item table (:class:`Binned`).

    The interface the interval asks of the sample (also offered by forms that gather
    per-bin sums over row chunks, e.g. of a Dask array).

    Parameters
    ----------
    binned : Binned
        Items laid out by :func:`~noisycal.metrics.binned.bins.make_binned` (one draw).
    """

    def __init__(self, binned: Binned) -> None:
        self.binned = binned

    def one_hot(self) -> bool:
        """:func:`one_hot_target`."""
        return one_hot_target(self.binned)

    def linear_form(self, norm: str, codes: np.ndarray | None = None,
                    n_clusters: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`binned_linear_form`.

        Parameters
        ----------
        norm : {'l1', 'l2'}
        codes : ndarray of shape (n,), optional
            Cluster codes.
        n_clusters : int, optional

        Returns
        -------
        mean, cov, weights
        """
        return binned_linear_form(self.binned, norm, codes, n_clusters)

    def floored_cov(self, cov: np.ndarray, variance_floor: str,
                    codes: np.ndarray | None = None) -> np.ndarray:
        """:func:`floored_cov`.

        Parameters
        ----------
        cov : ndarray of shape (J, J)
        variance_floor : {'none', 'calibrated'}
        codes : ndarray of shape (n,), optional
            Cluster codes (no floor with clusters).

        Returns
        -------
        ndarray of shape (J, J)
        """
        return floored_cov(self.binned, cov, variance_floor, codes)

    def gap_se(self) -> np.ndarray:
        """:func:`bin_gap_se`."""
        return bin_gap_se(self.binned)

    def consistency_null(self, weights: np.ndarray, norm: str, n_sim: int,
                         seed: Seed) -> np.ndarray:
        """:func:`consistency_null`.

        Parameters
        ----------
        weights : ndarray of shape (J,)
        norm : {'l1', 'l2'}
        n_sim : int
        seed : int or jax key

        Returns
        -------
        ndarray of shape (n_sim,)
        """
        return consistency_null(self.binned, weights, norm, n_sim, seed)
