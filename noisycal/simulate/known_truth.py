"""Seeded simulators with known truth, for tests, coverage studies and vignettes.

Every simulator takes ``seed=`` (an int or a JAX key; the same seed gives the same draw)
and validates its arguments: sizes are positive integers, probabilities lie in [0, 1],
probability vectors (prevalences, confusion-matrix rows) sum to 1. Nothing is clipped or
renormalised.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import integrate
from scipy import stats as sps
from scipy.special import expit, logit, softmax

from .._util.jax import as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import PROB_ATOL, check_array, check_choice, check_int, check_seed
from ..annotations.core import Annotations
from .grid import GaussianGrid, gaussian_grid
from .grid_classifier import GridClassifier, grid_classifier

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
    "GaussianGrid",
    "gaussian_grid",
    "GridClassifier",
    "grid_classifier",
]


def _rng(seed: Seed) -> np.random.Generator:
    """A NumPy generator from ``seed`` (required: simulations are always reproducible)."""
    if seed is None:
        raise ValueError("seed must be an int or a JAX PRNG key, got None")
    return as_numpy_rng(check_seed(seed))


def _check_real(value: object, name: str, *, positive: bool = False,
                unit: bool = False) -> float:
    """A finite real number (``positive``: > 0; ``unit``: in (0, 1])."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if positive and not v > 0:
        raise ValueError(f"{name} must be positive, got {v}")
    if unit and not 0.0 < v <= 1.0:
        raise ValueError(f"{name} must lie in (0, 1], got {v}")
    return v


def _check_simplex(x: ArrayLike, name: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    """Probability vectors along the last axis: non-negative, summing to 1."""
    arr = check_array(x, name, ndim=ndim)
    if arr.shape[-1] < 1 or arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in [0, 1], got values in "
                         f"[{arr.min():g}, {arr.max():g}]")
    dev = np.abs(arr.sum(axis=-1) - 1.0)
    if np.any(dev > PROB_ATOL):
        where = np.unravel_index(int(np.argmax(dev)), dev.shape)
        total = float(arr.sum(axis=-1)[where])
        raise ValueError(f"{name} must sum to 1 along its last axis (within {PROB_ATOL:g}); "
                         f"entry {tuple(int(i) for i in where)} sums to {total:.8g}")
    return arr


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

    Parameters
    ----------
    n_items : int
        Number of items, at least 1.
    intercept, slope : float, default=0.0, 1.0
        The true calibration curve on the logit scale (finite).
    a, b : float, default=1.0
        Positive Beta parameters of the score distribution.
    seed : int or jax PRNG key, default=0
        Randomness; ints must fit in int64.

    Returns
    -------
    BinaryScores

    Raises
    ------
    ValueError
        If a size is not a positive integer, a parameter is not finite, ``a`` or ``b``
        is not positive, or ``seed`` is invalid.

    Examples
    --------
    >>> from noisycal import simulate
    >>> s = simulate.binary_scores(5, slope=0.7, seed=0)
    >>> s.p.shape, s.y.dtype.kind
    ((5,), 'i')
    """
    n = check_int(n_items, "n_items", minimum=1)
    intercept, slope = _check_real(intercept, "intercept"), _check_real(slope, "slope")
    a, b = _check_real(a, "a", positive=True), _check_real(b, "b", positive=True)
    rng = _rng(seed)
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

    Parameters
    ----------
    n_bins : int
        Number of equal-width bins, at least 1.
    intercept, slope : float, default=0.0, 1.0
        The calibration curve, as in :func:`binary_scores`.
    a, b : float, default=1.0
        Positive Beta parameters of the score distribution.

    Returns
    -------
    float

    Examples
    --------
    >>> from noisycal import simulate
    >>> round(simulate.population_binned_ece(10, slope=0.5), 4)  # overconfident scores
    0.0966
    >>> simulate.population_binned_ece(10) < 1e-12  # calibrated scores
    True
    """
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    intercept, slope = _check_real(intercept, "intercept"), _check_real(slope, "slope")
    a, b = _check_real(a, "a", positive=True), _check_real(b, "b", positive=True)
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
        Votes of ``n_annotators`` annotators, each drawing from ``true_probs`` (the
        ambiguous-ground-truth model of Tao, Luo, Dong & Xu (2026), "Confidence
        Calibration under Ambiguous Ground Truth").
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

    Parameters
    ----------
    n_items : int
        Number of items, at least 1.
    n_classes : int, default=4
        Number of classes, at least 2.
    temperature : float, default=0.6
        Positive temperature of the reported logits.
    signal : float, default=2.5
        Finite logit boost of each item's latent class.
    n_annotators : int, default=5
        Votes per item, at least 1.
    seed : int or jax PRNG key, default=0
        Randomness; ints must fit in int64.

    Returns
    -------
    SimulatedClassifier
    """
    n = check_int(n_items, "n_items", minimum=1)
    K = check_int(n_classes, "n_classes", minimum=2)
    m = check_int(n_annotators, "n_annotators", minimum=1)
    temperature = _check_real(temperature, "temperature", positive=True)
    signal = _check_real(signal, "signal")
    rng = _rng(seed)
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
        Items ``0..n_items-1``, annotators ``0..n_annotators-1`` and classes ``0..K-1``,
        each in that order.
    true_class : ndarray of shape (n_items,)
        Class index of each item.
    group : ndarray of shape (n_items,)
        Group index of each item (all zero without groups).
    """

    annotations: Annotations
    true_class: np.ndarray
    group: np.ndarray


def _dawid_skene_params(
    prevalence: ArrayLike, confusion: ArrayLike, group_probs: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validated (prevalence rows, confusion, group probabilities) of :func:`dawid_skene`."""
    conf = _check_simplex(confusion, "confusion", ndim=3)
    J, K, K2 = conf.shape
    if K != K2 or K < 2 or J < 1:
        raise ValueError(f"confusion must have shape (n_annotators, K, K) with K >= 2, "
                         f"got {conf.shape}")
    prev = np.atleast_2d(_check_simplex(prevalence, "prevalence", ndim=(1, 2)))
    if prev.shape[1] != K:
        raise ValueError(f"prevalence has {prev.shape[1]} classes, confusion has {K}")
    if prev.shape[0] == 1:
        if group_probs is not None:
            raise ValueError("group_probs is only used with one prevalence row per group "
                             "(a 2-D prevalence); got a single prevalence vector")
        return prev, conf, None
    if group_probs is None:
        raise ValueError("group_probs is required with one prevalence row per group")
    gp = _check_simplex(group_probs, "group_probs", ndim=1)
    if gp.size != prev.shape[0]:
        raise ValueError(f"group_probs must have one entry per prevalence row "
                         f"({prev.shape[0]}), got {gp.size}")
    return prev, conf, gp


def dawid_skene(n_items: int, prevalence: ArrayLike, confusion: ArrayLike, *,
                group_probs: ArrayLike | None = None, p_rate: float = 1.0,
                seed: Seed = 0) -> SimulatedAnnotations:
    """Simulate ratings from a (grouped) Dawid–Skene model (Dawid & Skene, 1979).

    Parameters
    ----------
    n_items : int
        Number of items, at least 1.
    prevalence : array-like of shape (K,) or (n_groups, K)
        Class proportions (per group): non-negative, each row summing to 1.
    confusion : array-like of shape (n_annotators, K, K)
        ``confusion[j, true, observed]``: non-negative, rows summing to 1 (a label-flip
        channel).
    group_probs : array-like of shape (n_groups,), default=None
        Probability of each group; required when ``prevalence`` is 2-D, refused when
        it is 1-D.
    p_rate : float, default=1.0
        Each annotator rates each item with this probability in (0, 1] (independently
        of the truth); every item keeps at least one rating.
    seed : int or jax PRNG key, default=0
        Randomness; ints must fit in int64.

    Returns
    -------
    SimulatedAnnotations

    Raises
    ------
    ValueError
        If ``n_items`` is not a positive integer, ``prevalence``, ``confusion`` or
        ``group_probs`` are not probability vectors of matching shapes, ``p_rate`` is
        outside (0, 1], or ``seed`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal import simulate
    >>> conf = np.tile([[0.9, 0.1], [0.2, 0.8]], (3, 1, 1))
    >>> sim = simulate.dawid_skene(4, [0.5, 0.5], conf, seed=0)
    >>> sim.annotations
    Annotations(n_items=4, n_annotators=3, n_classes=2, n_ratings=12)
    """
    n = check_int(n_items, "n_items", minimum=1)
    prev, conf, gp = _dawid_skene_params(prevalence, confusion, group_probs)
    p_rate = _check_real(p_rate, "p_rate", unit=True)
    J, K, _ = conf.shape
    rng = _rng(seed)
    if gp is not None:
        group = rng.choice(prev.shape[0], size=n, p=gp)
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


#: Annotator channels of the Gaussian simulation (Figure 1, Table 1) of "Noisy-Label
#: Calibration with Multiple Unreliable Labels": false-positive rates a_j and
#: true-positive rates b_j = 1 - false-negative rates (0.16, 0.11, 0.06).
GAUSSIAN_TOY_A = np.array([0.08, 0.13, 0.18])
GAUSSIAN_TOY_B = np.array([0.84, 0.89, 0.94])

_TRUTHS = ("calibrated", "shifted", "nonlinear")


def gaussian_toy_truth(z: ArrayLike, truth: str) -> np.ndarray:
    """The true calibration curve m(z) = P(Y = 1 | Z = z) of :func:`gaussian_toy`.

    Parameters
    ----------
    z : array-like
        Scores in [0, 1].
    truth : {'calibrated', 'shifted', 'nonlinear'}
        ``z``; ``expit(0.65 logit(z) - 0.3)``; ``clip(z + 0.12 sin(2 pi z), 0.02, 0.98)``
        (the three curves of the Gaussian simulation of "Noisy-Label Calibration with
        Multiple Unreliable Labels").

    Returns
    -------
    ndarray
        m(z), the shape of ``z``.
    """
    check_choice(truth, "truth", _TRUTHS)
    z = check_array(z, "z")
    if np.any(z < 0) or np.any(z > 1):
        raise ValueError(f"z must lie in [0, 1], got values in [{z.min():g}, {z.max():g}]")
    if truth == "calibrated":
        return z.copy()
    if truth == "shifted":
        return expit(0.65 * logit(z) - 0.3)
    return np.clip(z + 0.12 * np.sin(2 * np.pi * z), 0.02, 0.98)


class GaussianToy(NamedTuple):
    """A draw of the Gaussian simulation of "Noisy-Label Calibration with Multiple
    Unreliable Labels".

    Attributes
    ----------
    z : ndarray of shape (n,)
        Scores sigmoid(0.3 - X), X ~ 1/2 N(-1, 1) + 1/2 N(1, 1).
    y : ndarray of shape (n,)
        True labels ~ Bernoulli(m(z)).
    annotations : ndarray of shape (n, n_annotators)
        0/1 labels of the annotators, independent given y.
    m : ndarray of shape (n,)
        The true calibration curve m(z).
    """

    z: np.ndarray
    y: np.ndarray
    annotations: np.ndarray
    m: np.ndarray


def gaussian_toy(n_items: int, *, truth: str = "calibrated", a: ArrayLike | None = None,
                 b: ArrayLike | None = None, seed: Seed = 0) -> GaussianToy:
    """Simulate the Gaussian toy of "Noisy-Label Calibration with Multiple Unreliable
    Labels" (the simulation of its Figure 1 and Table 1).

    ``X ~ 1/2 N(-1, 1) + 1/2 N(1, 1)``, ``Z = sigmoid(0.3 - X)``, ``Y | Z ~ Bernoulli(m(Z))``,
    and annotators with false-positive rates ``a`` and true-positive rates ``b`` label
    every item.

    Parameters
    ----------
    n_items : int
        Number of items, at least 1.
    truth : {'calibrated', 'shifted', 'nonlinear'}, default='calibrated'
        The calibration curve m (:func:`gaussian_toy_truth`).
    a, b : array-like of shape (n_annotators,), default=None
        False- and true-positive rates in [0, 1], one per annotator; default the
        published rates (0.08, 0.13, 0.18) and (0.84, 0.89, 0.94).
    seed : int or jax PRNG key, default=0
        Randomness; ints must fit in int64.

    Returns
    -------
    GaussianToy
    """
    n = check_int(n_items, "n_items", minimum=1)
    check_choice(truth, "truth", _TRUTHS)
    a = GAUSSIAN_TOY_A if a is None else check_array(a, "a", ndim=1)
    b = GAUSSIAN_TOY_B if b is None else check_array(b, "b", ndim=1)
    for name, r in (("a", a), ("b", b)):
        if r.size < 1 or np.any(r < 0) or np.any(r > 1):
            raise ValueError(f"{name} must be non-empty rates in [0, 1], got {r.tolist()}")
    if a.size != b.size:
        raise ValueError(f"a and b must have one rate per annotator each, got {a.size} "
                         f"and {b.size}")
    rng = _rng(seed)
    x = rng.normal(np.where(rng.random(n) < 0.5, -1.0, 1.0), 1.0)
    z = expit(0.3 - x)
    m = gaussian_toy_truth(z, truth)
    y = (rng.random(n) < m).astype(np.int64)
    p = np.where(y[:, None] == 1, b[None, :], a[None, :])
    A = (rng.random((n, a.size)) < p).astype(np.int64)
    return GaussianToy(z, y, A, m)

