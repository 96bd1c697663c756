"""Simulators of the ambiguous-ground-truth calibration paper.

The simulators of "Confidence Calibration under Ambiguous Ground Truth": the synthetic
dermatologist annotators of its ISIC 2019 experiment and its three-Gaussian toy."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._util.jax import as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import PROB_ATOL, check_array, check_choice, check_int, check_seed

__all__ = ["ISIC2019_CLASSES", "ISIC2019_CONFUSION", "ISIC2019_CLASS_COUNTS",
           "sample_annotations", "THREE_GAUSSIANS", "ThreeGaussians", "three_gaussians"]

#: The eight ISIC 2019 classes in the order of :data:`ISIC2019_CONFUSION`.
ISIC2019_CLASSES = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")


def _frozen(a: ArrayLike) -> np.ndarray:
    out = np.array(a, dtype=np.float64)
    out.setflags(write=False)
    return out


#: The synthetic dermatologist confusion matrix ``C[consensus, annotator label]`` of Tao,
#: Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth" (Appendix
#: I, Table 6): rows sum to 1, mean diagonal 0.7525.
ISIC2019_CONFUSION = _frozen([
    [0.73, 0.14, 0.02, 0.03, 0.08, 0.00, 0.00, 0.00],
    [0.15, 0.76, 0.01, 0.01, 0.06, 0.01, 0.00, 0.00],
    [0.02, 0.01, 0.81, 0.05, 0.07, 0.01, 0.01, 0.02],
    [0.03, 0.01, 0.04, 0.65, 0.11, 0.00, 0.00, 0.16],
    [0.12, 0.05, 0.03, 0.10, 0.62, 0.00, 0.00, 0.08],
    [0.01, 0.02, 0.02, 0.01, 0.02, 0.87, 0.03, 0.02],
    [0.00, 0.01, 0.02, 0.01, 0.01, 0.02, 0.91, 0.02],
    [0.01, 0.01, 0.03, 0.18, 0.09, 0.00, 0.01, 0.67],
])

#: Images per class in the public ISIC 2019 training set (25,331 images), for simulating
#: consensus labels with the real class frequencies.
ISIC2019_CLASS_COUNTS = _frozen([4522, 12875, 3323, 867, 2624, 239, 253, 628])


def sample_annotations(labels: ArrayLike, confusion: ArrayLike = ISIC2019_CONFUSION, *,
                       n_annotators: int = 9, seed: Seed = 0) -> np.ndarray:
    r"""Vote counts of annotators who share one class-conditional confusion matrix.

    Each item's ``n_annotators`` labels are drawn independently from the row of its
    consensus label, :math:`a_i^{(j)} \sim \mathrm{Categorical}(C_{y_i,\cdot})`, as in the
    ISIC 2019 experiment of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under
    Ambiguous Ground Truth" (Appendix I; 9 annotators, :data:`ISIC2019_CONFUSION`).
    Every item of a class shares one row: there is no item-level ambiguity.

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Consensus class indices in ``0 .. K - 1``.
    confusion : array-like of shape (n_classes, n_classes), default=ISIC2019_CONFUSION
        ``confusion[consensus, annotator label]``, rows on the simplex.
    n_annotators : int, default=9
        Labels per item.
    seed : int or jax key, default=0

    Returns
    -------
    ndarray of shape (n_items, n_classes), int64
        Vote counts; rows sum to ``n_annotators`` (``nc.targets.soft(counts=...)`` is
        the soft target).

    Examples
    --------
    >>> import noisycal as nc
    >>> c = nc.ambiguity.sample_annotations([0, 1, 7], seed=0)
    >>> c.shape, c.sum(axis=1).tolist()
    ((3, 8), [9, 9, 9])
    """
    C = check_array(confusion, "confusion", ndim=2)
    K = C.shape[0]
    if C.shape != (K, K) or K < 2:
        raise ValueError(f"confusion must be a square (K, K) matrix with K >= 2, got shape "
                         f"{C.shape}")
    if np.any(C < 0) or np.any(np.abs(C.sum(axis=1) - 1.0) > PROB_ATOL):
        raise ValueError("confusion rows must be probability distributions (non-negative, "
                         "summing to 1)")
    y = np.asarray(labels)
    if y.ndim != 1 or y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= K)):
        raise ValueError(f"labels must be a 1-D array of class indices in 0..{K - 1}")
    m = check_int(n_annotators, "n_annotators", minimum=1)
    rng = as_numpy_rng(check_seed(seed))
    return rng.multinomial(m, C[y]).astype(np.int64)


class _Cluster(NamedTuple):
    mean: tuple[float, float]
    diag: tuple[float, float]
    distribution: tuple[float, float, float]


#: The toy's three clusters (Tao, Luo, Dong & Xu (2026), "Confidence Calibration under
#: Ambiguous Ground Truth", Section 4): class-0 cluster, the ambiguous middle cluster
#: (annotator distribution [0, 0.7, 0.3], voted label 1) and the class-2 cluster;
#: ``diag`` holds the diagonal of each covariance.
THREE_GAUSSIANS = (
    _Cluster((-3.2, 1.1), (0.60, 0.45), (1.0, 0.0, 0.0)),
    _Cluster((0.0, 0.0), (1.15, 0.75), (0.0, 0.7, 0.3)),
    _Cluster((3.2, -1.1), (0.60, 0.45), (0.0, 0.0, 1.0)),
)


class ThreeGaussians(NamedTuple):
    """A draw of the three-Gaussian toy.

    Attributes
    ----------
    x : ndarray of shape (n, 2)
        Inputs.
    cluster : ndarray of shape (n,)
        Cluster index (0, 1 = ambiguous, 2).
    distribution : ndarray of shape (n, 3)
        Annotator distribution pi of each item (its cluster's).
    voted : ndarray of shape (n,)
        Voted label argmax pi (1 for the whole middle cluster).
    annotation : ndarray of shape (n,)
        One annotator label drawn from pi (label 1 w.p. 0.7 and 2 w.p. 0.3 in the
        middle cluster).
    log_density : ndarray of shape (n, 3)
        log N(x; mean_c, cov_c) of each cluster, for the Bayes classifier of the
        voted labels.
    """

    x: np.ndarray
    cluster: np.ndarray
    distribution: np.ndarray
    voted: np.ndarray
    annotation: np.ndarray
    log_density: np.ndarray


def three_gaussians(n_per_cluster: int, *, diag: str = "variance", seed: Seed = 0
                    ) -> ThreeGaussians:
    """Draw the three-Gaussian toy with an ambiguous middle cluster.

    Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth",
    Section 4 (:data:`THREE_GAUSSIANS`). The paper writes the covariances as
    ``diag(.)`` without saying whether they hold variances or standard deviations, and
    gives no sample sizes; both are arguments here.

    Parameters
    ----------
    n_per_cluster : int
        Items per cluster.
    diag : {'variance', 'std'}, default='variance'
        How to read the printed diagonals.
    seed : int or jax key, default=0

    Returns
    -------
    ThreeGaussians

    Examples
    --------
    >>> import noisycal as nc
    >>> toy = nc.ambiguity.three_gaussians(100, seed=0)
    >>> toy.x.shape, toy.distribution[toy.cluster == 1][0].tolist()
    ((300, 2), [0.0, 0.7, 0.3])
    """
    n = check_int(n_per_cluster, "n_per_cluster", minimum=1)
    check_choice(diag, "diag", ("variance", "std"))
    rng = as_numpy_rng(check_seed(seed))
    cluster = np.repeat(np.arange(3), n)
    means = np.array([c.mean for c in THREE_GAUSSIANS])
    var = np.array([c.diag for c in THREE_GAUSSIANS])
    if diag == "std":
        var = var**2
    x = means[cluster] + rng.normal(size=(3 * n, 2)) * np.sqrt(var[cluster])
    pi = np.array([c.distribution for c in THREE_GAUSSIANS])[cluster]
    cum = np.cumsum(pi, axis=1)
    cum[:, -1] = 1.0
    annotation = (rng.random(3 * n)[:, None] >= cum).sum(axis=1)
    d = x[:, None, :] - means[None, :, :]
    log_density = -0.5 * (np.sum(d * d / var[None], axis=2)
                          + np.sum(np.log(2 * np.pi * var), axis=1)[None])
    return ThreeGaussians(x, cluster, pi, np.argmax(pi, axis=1), annotation, log_density)
