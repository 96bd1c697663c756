"""Seeded simulators with known truth, for tests, coverage studies and vignettes.

Later issues add the papers' generative toys and label-noise channels here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import integrate
from scipy import stats as sps
from scipy.special import expit, logit, softmax

from ._jax import as_numpy_rng
from ._typing import Seed
from ._validation import check_int

__all__ = [
    "BinaryScores",
    "binary_scores",
    "population_binned_ece",
    "SimulatedClassifier",
    "classifier",
    "SimulatedAnnotations",
    "dawid_skene",
    "GAUSSIAN_TOY_A",
    "GAUSSIAN_TOY_B",
    "GaussianToy",
    "gaussian_toy",
    "gaussian_toy_truth",
]


class BinaryScores(NamedTuple):
    """A simulated binary classifier.

    Attributes
    ----------
    p : ndarray of shape (n,)
        Predicted positive-class probabilities, Beta(a, b) distributed.
    y : ndarray of shape (n,)
        Labels drawn from Bernoulli(true_prob).
    true_prob : ndarray of shape (n,)
        P(Y = 1 | p) = expit(intercept + slope * logit(p)).
    """

    p: np.ndarray
    y: np.ndarray
    true_prob: np.ndarray


def _curve(p: np.ndarray | float, intercept: float, slope: float) -> np.ndarray:
    return expit(intercept + slope * logit(p))


def binary_scores(n_items: int, *, intercept: float = 0.0, slope: float = 1.0,
                  a: float = 1.0, b: float = 1.0, seed: Seed = 0) -> BinaryScores:
    """Binary scores with a known logistic calibration curve.

    ``p ~ Beta(a, b)`` and ``Y | p ~ Bernoulli(expit(intercept + slope * logit(p)))``, so
    the true calibration slope and intercept are known, and so is the population binned
    ECE (:func:`population_binned_ece`). slope < 1: overconfident scores.
    """
    n = check_int(n_items, "n_items", minimum=1)
    rng = as_numpy_rng(seed)
    p = rng.beta(a, b, size=n)
    p = np.clip(p, 1e-12, 1 - 1e-12)  # keep logit(p) finite; Beta draws at 0/1 have prob 0
    q = _curve(p, intercept, slope)
    y = (rng.random(n) < q).astype(np.int64)
    return BinaryScores(p, y, q)


def population_binned_ece(n_bins: int, *, intercept: float = 0.0, slope: float = 1.0,
                          a: float = 1.0, b: float = 1.0) -> float:
    r"""Population positive-class binned ECE of :func:`binary_scores`'s model.

    .. math:: \sum_b P(p \in B_b)\,\big|E[q(p) \mid p \in B_b] - E[p \mid p \in B_b]\big|

    with equal-width bins, computed by numerical integration against the Beta(a, b)
    density.
    """
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    dens = sps.beta(a, b).pdf
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        gap, _ = integrate.quad(lambda p: (_curve(p, intercept, slope) - p) * dens(p), lo, hi,
                                limit=200, epsabs=1e-13, epsrel=1e-12)
        total += abs(gap)
    return float(total)


class SimulatedClassifier(NamedTuple):
    """A simulated K-class classifier with ambiguous items and annotators.

    Attributes
    ----------
    logits : ndarray of shape (n, K)
        The classifier's logits, ``z / temperature``.
    probs : ndarray of shape (n, K)
        ``softmax(logits)``.
    true_probs : ndarray of shape (n, K)
        The data-generating class probabilities ``softmax(z)``: the classifier is
        calibrated exactly when temperature = 1.
    labels : ndarray of shape (n,)
        One label per item drawn from ``true_probs`` (a "clean" label).
    counts : ndarray of shape (n, K)
        Votes of ``n_annotators`` annotators, each drawing from ``true_probs``
        (the ambiguous-ground-truth model of paper 000).
    """

    logits: np.ndarray
    probs: np.ndarray
    true_probs: np.ndarray
    labels: np.ndarray
    counts: np.ndarray


def classifier(n_items: int, n_classes: int = 4, *, temperature: float = 0.6,
               signal: float = 2.5, n_annotators: int = 5, seed: Seed = 0
               ) -> SimulatedClassifier:
    """Simulate a K-class classifier whose true class probabilities are known.

    Latent logits ``z_i = signal * e_{c_i} + N(0, I)`` with ``c_i`` uniform; the truth is
    ``softmax(z_i)`` and the classifier reports ``softmax(z_i / temperature)``
    (temperature < 1: overconfident). Labels and annotator votes are drawn from the truth.
    """
    n = check_int(n_items, "n_items", minimum=1)
    K = check_int(n_classes, "n_classes", minimum=2)
    m = check_int(n_annotators, "n_annotators", minimum=1)
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    rng = as_numpy_rng(seed)
    c = rng.integers(0, K, size=n)
    z = rng.normal(size=(n, K))
    z[np.arange(n), c] += signal
    q = softmax(z, axis=1)
    logits = z / temperature
    p = softmax(logits, axis=1)
    cum = np.cumsum(q, axis=1)
    cum[:, -1] = 1.0
    labels = (rng.random(n)[:, None] >= cum).sum(axis=1)
    votes = (rng.random((n, m))[:, :, None] >= cum[:, None, :]).sum(axis=2)
    counts = np.zeros((n, K), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n), m), votes.ravel()), 1)
    return SimulatedClassifier(logits, p, q, labels.astype(np.int64), counts)


class SimulatedAnnotations(NamedTuple):
    """Annotations simulated from a Dawid–Skene model with known truth.

    Attributes
    ----------
    annotations : Annotations
    true_class : ndarray of shape (n_items,)
        Class index of each item.
    group : ndarray of shape (n_items,)
        Group index of each item (all zero without groups).
    """

    annotations: object
    true_class: np.ndarray
    group: np.ndarray


def dawid_skene(n_items: int, prevalence: np.ndarray, confusion: np.ndarray, *,
                group_probs: np.ndarray | None = None, p_rate: float = 1.0,
                seed: Seed = 0) -> SimulatedAnnotations:
    """Simulate ratings from a (grouped) Dawid–Skene model.

    Parameters
    ----------
    n_items : int
    prevalence : array of shape (K,) or (n_groups, K)
        Class proportions (per group).
    confusion : array of shape (n_annotators, K, K)
        ``confusion[j, true, observed]``; rows sum to 1 (a label-flip channel).
    group_probs : array of shape (n_groups,), optional
        Probability of each group (required when ``prevalence`` is 2-D).
    p_rate : float, default=1.0
        Each annotator rates each item with this probability (independently of the
        truth); every item keeps at least one rating.
    seed : int or jax key
    """
    from .data import Annotations

    n = check_int(n_items, "n_items", minimum=1)
    rng = as_numpy_rng(seed)
    prev = np.atleast_2d(np.asarray(prevalence, dtype=np.float64))
    conf = np.asarray(confusion, dtype=np.float64)
    J, K, _ = conf.shape
    if prev.shape[1] != K:
        raise ValueError(f"prevalence has {prev.shape[1]} classes, confusion has {K}")
    if prev.shape[0] > 1:
        if group_probs is None:
            raise ValueError("group_probs is required with one prevalence row per group")
        group = rng.choice(prev.shape[0], size=n, p=np.asarray(group_probs))
    else:
        group = np.zeros(n, dtype=np.int64)
    cum = np.cumsum(prev[group], axis=1)
    y = np.minimum((rng.random(n)[:, None] >= cum).sum(axis=1), K - 1)
    rates = rng.random((n, J)) < p_rate
    rates[np.arange(n), rng.integers(0, J, n)] |= ~rates.any(axis=1)
    item, ann = np.nonzero(rates)
    ccum = np.cumsum(conf[ann, y[item]], axis=1)
    label = np.minimum((rng.random(item.size)[:, None] >= ccum).sum(axis=1), K - 1)
    annotations = Annotations.from_arrays(item, ann, label, classes=np.arange(K),
                                          items=np.arange(n), annotators=np.arange(J))
    return SimulatedAnnotations(annotations, y, group)


#: Annotator channels of paper 003's Gaussian toy: false-positive rates a_j and
#: true-positive rates b_j = 1 - false-negative rates (0.16, 0.11, 0.06).
GAUSSIAN_TOY_A = np.array([0.08, 0.13, 0.18])
GAUSSIAN_TOY_B = np.array([0.84, 0.89, 0.94])


def gaussian_toy_truth(z: np.ndarray, truth: str) -> np.ndarray:
    """m(z) = P(Y = 1 | Z = z) of the toy: 'calibrated', 'shifted' or 'nonlinear'."""
    z = np.asarray(z, dtype=np.float64)
    if truth == "calibrated":
        return z.copy()
    if truth == "shifted":
        return expit(0.65 * logit(z) - 0.3)
    if truth == "nonlinear":
        return np.clip(z + 0.12 * np.sin(2 * np.pi * z), 0.02, 0.98)
    raise ValueError(f"truth must be one of ('calibrated', 'shifted', 'nonlinear'), "
                     f"got {truth!r}")


class GaussianToy(NamedTuple):
    """A draw of paper 003's Gaussian toy.

    Attributes
    ----------
    z : (n,) scores sigmoid(0.3 - X), X ~ 1/2 N(-1, 1) + 1/2 N(1, 1)
    y : (n,) true labels ~ Bernoulli(m(z))
    annotations : (n, K) 0/1 labels of the K annotators, independent given y
    m : (n,) the true calibration curve m(z)
    """

    z: np.ndarray
    y: np.ndarray
    annotations: np.ndarray
    m: np.ndarray


def gaussian_toy(n_items: int, *, truth: str = "calibrated", a: np.ndarray | None = None,
                 b: np.ndarray | None = None, seed: Seed = 0) -> GaussianToy:
    """Simulate paper 003's Gaussian toy (spec section 6.2).

    ``X ~ 1/2 N(-1, 1) + 1/2 N(1, 1)``, ``Z = sigmoid(0.3 - X)``, ``Y | Z ~ Bernoulli(m(Z))``,
    and annotators with false-positive rates ``a`` and true-positive rates ``b`` (default
    the paper's (0.08, 0.13, 0.18) and (0.84, 0.89, 0.94)) label every item.
    """
    n = check_int(n_items, "n_items", minimum=1)
    a = GAUSSIAN_TOY_A if a is None else np.asarray(a, dtype=np.float64)
    b = GAUSSIAN_TOY_B if b is None else np.asarray(b, dtype=np.float64)
    rng = as_numpy_rng(seed)
    x = rng.normal(np.where(rng.random(n) < 0.5, -1.0, 1.0), 1.0)
    z = expit(0.3 - x)
    m = gaussian_toy_truth(z, truth)
    y = (rng.random(n) < m).astype(np.int64)
    p = np.where(y[:, None] == 1, b[None, :], a[None, :])
    A = (rng.random((n, a.size)) < p).astype(np.int64)
    return GaussianToy(z, y, A, m)
