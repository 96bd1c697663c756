r"""Conformal scores, the finite-sample quantile and the sets they give.

Scores of a label y for a probability row p, with y the r-th class of the stable
decreasing order :math:`\pi` of p and :math:`U \sim \mathrm{Unif}(0, 1)` one draw per row
(the same U for every label of the row):

- MSP (least ambiguous sets): :math:`s(x, y) = 1 - p_y`;
- APS, "Classification with Valid and Adaptive Coverage" (Romano, Sesia & Candès, 2020):
  :math:`s(x, y, U) = \sum_{j < r} p_{\pi(j)} + U\,p_y` (randomised), or with U = 1 the
  deterministic, inclusive mass :math:`\sum_{j \le r} p_{\pi(j)}`;
- RAPS, "Uncertainty Sets for Image Classifiers using Conformal Prediction" (Angelopoulos,
  Bates, Malik & Jordan, 2021): the APS score plus the rank penalty
  :math:`\lambda\,(r - k_{reg})^+`.

With calibration scores :math:`s_1..s_n` the threshold :math:`\hat q` is the k-th
smallest, :math:`k = \lceil (1 - \alpha)(n + 1) \rceil` (:math:`+\infty`, the full set,
when k > n), and the set of a new x is :math:`\{y : s(x, y, U) \le \hat q\}` with a fresh
U for x. For APS and RAPS the score increases with the rank for a fixed U, so the set is
a prefix of the order: the classes before the first rank L whose inclusive (penalised)
mass reaches :math:`\hat q`, plus the L-th with probability
:math:`1 - V`, :math:`V = (\text{mass}_L - \hat q) / p_{\pi(L)}` (both papers' rule;
the randomised sets may be empty). Randomised scores are continuous, so the marginal
coverage is exactly :math:`k / (n + 1)` under exchangeability, not only at least
:math:`1 - \alpha`.

Class-conditional ("Mondrian") thresholds take the quantile of the scores of each class
on its own, :math:`\hat q_y` from the :math:`n_y` calibration items labelled y, and the
set :math:`\{y : s(x, y, U) \le \hat q_y\}`: coverage at least :math:`1 - \alpha` given
the true class, for every class.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

import jax

from ..._util.jax import as_key
from ..._util.types import ArrayLike, Seed
from ..._util.validation import categorical_labels, encode_labels
from ...metrics.set_mass import hpr_mask
from ...targets.target import as_target_matrix

__all__ = ["SCORES", "check_alpha", "hard_labels", "conformal_rank", "conformal_quantile",
           "class_quantiles", "uniforms", "label_scores", "nonconformity",
           "prediction_sets"]

SCORES = ("msp", "aps", "raps")


def check_alpha(alpha: object) -> float:
    """A miscoverage level: a fraction with 0 < alpha < 1 (never a percent)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) \
            or not math.isfinite(alpha) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a fraction with 0 < alpha < 1 (0.1, not 10), got "
                         f"{alpha!r}")
    return float(alpha)


def hard_labels(target: object, n: int, K: int) -> np.ndarray:
    """Integer labels of a conformal calibration set (labels, or a one-hot matrix/Target).

    Split conformal guarantees rest on observed exchangeable labels, so soft or corrected
    targets are refused (ValueError naming ``target``).

    Parameters
    ----------
    target : object
    n, K : int
        Rows and classes of the scores.

    Returns
    -------
    int ndarray of shape (n,)
    """
    if target is None:
        raise ValueError("target is required: the hard labels of the calibration items")
    target = categorical_labels(target, None, "target")
    arr = None if hasattr(target, "values") and hasattr(target, "kind") else np.asarray(target)
    if arr is not None and arr.ndim == 1:
        if arr.shape[0] != n:
            raise ValueError(f"target has {arr.shape[0]} labels but the scores have {n} items")
        return encode_labels(arr, n_classes=K, name="target")[0]
    T = as_target_matrix(target, n, K)
    if not (np.all((T == 0.0) | (T == 1.0)) and np.all(T.sum(axis=1) == 1.0)):
        raise ValueError("target must be hard labels (a label vector or one-hot rows): split "
                         "conformal calibration needs observed labels, not soft or corrected "
                         "targets")
    return np.argmax(T, axis=1)


def conformal_rank(n: int, alpha: float) -> int:
    """The rank k = ceil((1 - alpha)(n + 1)) of the split-conformal threshold among n scores.

    The ceiling is taken 1e-12 below, so that (1 - alpha)(n + 1) an integer up to rounding
    (e.g. 0.9 * 20 = 18.000000000000004) gives that integer.

    Parameters
    ----------
    n : int
        Number of calibration scores.
    alpha : float
        Miscoverage level.

    Returns
    -------
    int
        k; the threshold is infinite when k > n.
    """
    return math.ceil((1.0 - alpha) * (n + 1) - 1e-12)


def conformal_quantile(scores: ArrayLike, alpha: float) -> float:
    r"""The split-conformal threshold: the k-th smallest score, k = ceil((1-alpha)(n+1)).

    Parameters
    ----------
    scores : array-like of shape (n,)
        Calibration scores.
    alpha : float
        Miscoverage level, 0 < alpha < 1.

    Returns
    -------
    float
        ``+inf`` when k > n (alpha < 1/(n+1): no finite threshold has the coverage, so the
        set is every class).

    Examples
    --------
    >>> from noisycal.calibrators.conformal import conformal_quantile
    >>> conformal_quantile([0.3, 0.1, 0.2, 0.5], 0.4)  # k = ceil(0.6 * 5) = 3
    0.3
    >>> conformal_quantile([0.3, 0.1], 0.1)
    inf
    """
    alpha = check_alpha(alpha)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size < 1 or not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be a non-empty finite 1-D array, got shape {s.shape}")
    n = s.size
    k = conformal_rank(n, alpha)
    if k > n:
        return math.inf
    return float(np.partition(s, k - 1)[k - 1])


def class_quantiles(scores: np.ndarray, labels: np.ndarray, n_classes: int,
                    alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class-conditional (Mondrian) thresholds: the conformal quantile of each class's scores.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Calibration scores of the observed labels.
    labels : int ndarray of shape (n,)
    n_classes : int
    alpha : float

    Returns
    -------
    q : ndarray of shape (n_classes,)
        ``+inf`` for a class with k > n_y (including a class absent from the calibration
        data).
    k : int ndarray of shape (n_classes,)
        The rank ``ceil((1 - alpha)(n_y + 1))`` of each class.
    n : int ndarray of shape (n_classes,)
        Calibration items per class.
    """
    alpha = check_alpha(alpha)
    n = np.bincount(labels, minlength=n_classes)
    k = np.array([conformal_rank(int(m), alpha) for m in n])
    q = np.full(n_classes, math.inf)
    for c in np.flatnonzero(k <= n):
        q[c] = conformal_quantile(scores[labels == c], alpha)
    return q, k, n


def uniforms(seed: Seed, n: int, stream: int) -> np.ndarray:
    """n draws of Unif(0, 1) from ``seed`` (int or JAX key) and a stream number.

    Different streams of one seed are independent (calibration and prediction draws).

    Parameters
    ----------
    seed : int or jax key
    n : int
    stream : int

    Returns
    -------
    ndarray of shape (n,)
    """
    data = np.asarray(jax.random.key_data(as_key(seed))).ravel().astype(np.uint64)
    return np.random.default_rng([*(int(x) for x in data), int(stream)]).random(n)


def label_scores(P: np.ndarray, score: str, *, u: np.ndarray | None = None,
                 lam: float = 0.0, k_reg: int = 0) -> np.ndarray:
    r"""Score of every class of every row, (n, K) (module docstring).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    score : {'msp', 'aps', 'raps'}
    u : ndarray of shape (n,), optional
        APS/RAPS: one uniform per row, the randomised score
        :math:`\sum_{j<r} p_{\pi(j)} + u\,p_y`; None gives the deterministic inclusive
        mass (u = 1). Ignored for 'msp'.
    lam : float, default=0.0
        RAPS penalty per rank beyond ``k_reg``.
    k_reg : int, default=0
        RAPS: ranks up to ``k_reg`` carry no penalty.

    Returns
    -------
    ndarray of shape (n, K)

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal.calibrators.conformal.scores import label_scores
    >>> P = np.array([[0.5, 0.25, 0.15, 0.1]])
    >>> label_scores(P, "aps", u=np.array([0.4])).round(4)
    array([[0.2 , 0.6 , 0.81, 0.94]])
    >>> label_scores(P, "raps", u=np.array([0.4]), lam=0.1, k_reg=1).round(4)
    array([[0.2 , 0.7 , 1.01, 1.24]])
    """
    if score == "msp":
        return 1.0 - P
    order = np.argsort(-P, axis=1, kind="stable")
    ps = np.take_along_axis(P, order, axis=1)
    cs = np.cumsum(ps, axis=1)
    if u is not None:
        cs = (cs - ps) + np.asarray(u, dtype=np.float64)[:, None] * ps
    if score == "raps":
        cs = cs + lam * np.maximum(np.arange(1, P.shape[1] + 1) - k_reg, 0)
    out = np.empty_like(P)
    np.put_along_axis(out, order, cs, axis=1)
    return out


def nonconformity(P: np.ndarray, labels: np.ndarray, score: str, *,
                  u: np.ndarray | None = None, lam: float = 0.0, k_reg: int = 0
                  ) -> np.ndarray:
    """Scores of the observed labels, (n,).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    labels : int ndarray of shape (n,)
    score : {'msp', 'aps', 'raps'}
    u, lam, k_reg
        As for :func:`label_scores`.

    Returns
    -------
    ndarray of shape (n,)
    """
    n = P.shape[0]
    if score == "msp":
        return 1.0 - P[np.arange(n), labels]
    return label_scores(P, score, u=u, lam=lam, k_reg=k_reg)[np.arange(n), labels]


def prediction_sets(P: np.ndarray, q: float | np.ndarray, score: str, *,
                    u: np.ndarray | None = None, lam: float = 0.0, k_reg: int = 0,
                    aps_include_boundary: bool = False) -> np.ndarray:
    """Conformal sets of each row for threshold(s) q, as a boolean mask (n, K).

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Base probabilities.
    q : float, ndarray of shape (n,) or ndarray of shape (n, K)
        The threshold: one, one per row (adaptive thresholds), or one per row and class
        (class-conditional thresholds); ``inf`` gives every class.
    score : {'msp', 'aps', 'raps'}
    u, lam, k_reg
        As for :func:`label_scores` (``u`` the new rows' uniforms).
    aps_include_boundary : bool, default=False
        Deterministic APS only: the shortest prefix whose mass reaches q
        (:math:`HPR_q`, 1e-12 tolerance) instead of the classes with score at most q.

    Returns
    -------
    bool ndarray of shape (n, K)
    """
    qq = np.asarray(q, dtype=np.float64)
    if qq.ndim < 2:
        qq = np.broadcast_to(qq, (P.shape[0],))[:, None]
    if score == "aps" and aps_include_boundary:
        return hpr_mask(P, qq[:, 0])  # inf: no prefix reaches it, so the full set
    return label_scores(P, score, u=u, lam=lam, k_reg=k_reg) <= qq
