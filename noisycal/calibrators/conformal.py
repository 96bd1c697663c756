r"""Split conformal prediction sets: MSP and APS scores, the finite-sample quantile, and
constant or adaptive ("Ada") thresholds, as used by "Adaptive Set-Mass Calibration with
Conformal Prediction" (Sections 3.1 and 3.3).

Scores of a label y for a probability row p (all computed on the *base* predictions):

- MSP: :math:`s(x, y) = 1 - p_y`;
- APS (deterministic, inclusive of y): :math:`s(x, y) = \sum_{j \le r} p_{\pi(j)}` where y
  is the r-th class of the stable decreasing order :math:`\pi` (no randomisation, no
  regulariser).

With calibration scores :math:`s_1..s_n` the threshold is the k-th smallest score,
:math:`k = \lceil (1 - \alpha)(n + 1) \rceil`, and :math:`+\infty` (the full set) when
k > n. The set of a new point is :math:`\{y : s(x, y) \le \hat q\}`; for APS this is the
longest prefix of the order with mass at most :math:`\hat q` (the paper's rule, which may
be empty), or with ``aps_include_boundary=True`` the shortest prefix with mass at least
:math:`\hat q` (the authors' code: the highest-probability region :math:`HPR_{\hat q}`,
never empty and conservative).

The adaptive threshold learns :math:`\tilde s = s / (\gamma + w(x))` with
:math:`w(x) = |\mathrm{MLP}(z(x))|` on the base logits, fitted by least squares of
:math:`w(x)` to the score on the first part of the calibration data; the quantile is
taken on the transformed scores of the rest, and the threshold of x is
:math:`\hat q\,(\gamma + w(x))`. The paper only says "a normalizing-flow
transformation"; this architecture and loss follow the authors' code, and marginal
validity holds because the transform is monotone in s and fitted on data disjoint from
the quantile's.
"""

from __future__ import annotations

import math
import numbers
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import as_key, x64
from .._typing import ArrayLike, Seed
from .._validation import check_choice, check_int, check_real, check_seed, encode_labels
from ..metrics.set_mass import hpr_mask
from ..targets import as_target_matrix
from ._base import Calibrator, check_eps
from ._inputs import EPS, ScoreInput, base_probs, score_matrix

__all__ = ["conformal_quantile", "nonconformity", "label_scores", "prediction_sets",
           "SplitConformal", "MatrixInput", "check_alpha", "hard_labels", "fit_adaptive",
           "adaptive_scale",
           "SCORES", "THRESHOLDS"]

SCORES = ("msp", "aps")
THRESHOLDS = ("constant", "adaptive")


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
    """The rank k = ceil((1 - alpha)(n + 1)) of the split-conformal threshold among n
    scores (1e-12 below the ceiling, so that (1 - alpha)(n + 1) an integer up to rounding,
    e.g. 0.9 * 20 = 18.000000000000004, gives that integer)."""
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


def label_scores(P: np.ndarray, score: str) -> np.ndarray:
    """Score of every class of every row, (n, K): 1 - p (MSP) or the inclusive APS mass.

    Parameters
    ----------
    P : ndarray of shape (n, K)
    score : {'msp', 'aps'}

    Returns
    -------
    ndarray of shape (n, K)
    """
    if score == "msp":
        return 1.0 - P
    order = np.argsort(-P, axis=1, kind="stable")
    cs = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
    out = np.empty_like(P)
    np.put_along_axis(out, order, cs, axis=1)
    return out


def nonconformity(P: np.ndarray, labels: np.ndarray, score: str) -> np.ndarray:
    """Scores of the observed labels, (n,).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    labels : int ndarray of shape (n,)
    score : {'msp', 'aps'}

    Returns
    -------
    ndarray of shape (n,)
    """
    n = P.shape[0]
    if score == "msp":
        return 1.0 - P[np.arange(n), labels]
    return label_scores(P, "aps")[np.arange(n), labels]


def prediction_sets(P: np.ndarray, q: float | np.ndarray, score: str, *,
                    aps_include_boundary: bool = False) -> np.ndarray:
    """Conformal sets of each row for threshold(s) q, as a boolean mask (n, K).

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Base probabilities.
    q : float or ndarray of shape (n,)
        The threshold (per row for adaptive thresholds); ``inf`` gives every class.
    score : {'msp', 'aps'}
    aps_include_boundary : bool, default=False
        APS only: the shortest prefix whose mass reaches q (:math:`HPR_q`, 1e-12
        tolerance) instead of the classes with score at most q.

    Returns
    -------
    bool ndarray of shape (n, K)
    """
    qq = np.broadcast_to(np.asarray(q, dtype=np.float64), (P.shape[0],))[:, None]
    if score == "aps" and aps_include_boundary:
        return hpr_mask(P, qq[:, 0])  # inf: no prefix reaches it, so the full set
    return label_scores(P, score) <= qq


# ------------------------------------------------------------------ adaptive transform

_GAMMA = 1e-3


def _init_mlp(key: jax.Array, sizes: tuple[int, ...]) -> list:
    params = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        key, k1, k2 = jax.random.split(key, 3)
        lim = 1.0 / math.sqrt(a)
        params.append((jax.random.uniform(k1, (a, b), minval=-lim, maxval=lim),
                       jax.random.uniform(k2, (b,), minval=-lim, maxval=lim)))
    return params


def _mlp(params: list, x: jax.Array) -> jax.Array:
    for W, b in params[:-1]:
        x = jax.nn.relu(x @ W + b)
    W, b = params[-1]
    return jnp.abs((x @ W + b)[:, 0])


@partial(jax.jit, static_argnames=("n_steps", "batch"))
def _train(params: list, key: jax.Array, X: jax.Array, s: jax.Array, lr: float, *,
           n_steps: int, batch: int) -> tuple[list, jax.Array]:
    """Adam on the mean squared error of w(x) to the score, minibatches of ``batch``."""
    def loss(p: list, idx: jax.Array) -> jax.Array:
        return jnp.mean((s[idx] - _mlp(p, X[idx])) ** 2)

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)

    def step(carry: tuple, t: jax.Array) -> tuple:
        p, m, v, k = carry
        k, sub = jax.random.split(k)
        idx = jax.random.randint(sub, (batch,), 0, X.shape[0])
        g = jax.grad(loss)(p, idx)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        c1, c2 = 1 - 0.9 ** (t + 1.0), 1 - 0.999 ** (t + 1.0)
        p = jax.tree_util.tree_map(
            lambda w, a, b: w - lr * (a / c1) / (jnp.sqrt(b / c2) + 1e-8), p, m, v)
        return (p, m, v, k), None

    (params, _, _, _), _ = jax.lax.scan(step, (params, zeros, zeros, key),
                                        jnp.arange(n_steps, dtype=jnp.float64))
    return params, jnp.mean((s - _mlp(params, X)) ** 2)


def fit_adaptive(X: np.ndarray, s: np.ndarray, *, hidden: tuple[int, ...], n_steps: int,
                 lr: float, seed: Seed, max_restarts: int = 10) -> tuple[list, float, int]:
    """Fit w(x) = |MLP(x)| to the scores; restart with lr / 10 on a NaN or a loss above 10.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (the base logits).
    s : ndarray of shape (n,)
        Scores.
    hidden : tuple of int
    n_steps : int
    lr : float
    seed : int or jax key
    max_restarts : int, default=10

    Returns
    -------
    params, mse, restarts
        The layer weights, the final mean squared error and the number of restarts.
    """
    sizes = (X.shape[1], *hidden, 1)
    key = as_key(seed)
    with x64():
        Xj, sj = jnp.asarray(X), jnp.asarray(s)
        for r in range(max_restarts + 1):
            key, k_init, k_run = jax.random.split(key, 3)
            params = _init_mlp(k_init, sizes)
            params, mse = _train(params, k_run, Xj, sj, lr / 10**r, n_steps=n_steps,
                                 batch=max(1, X.shape[0] // 5))
            mse = float(mse)
            if math.isfinite(mse) and mse <= 10.0:
                return [(np.asarray(W), np.asarray(b)) for W, b in params], mse, r
    return [(np.asarray(W), np.asarray(b)) for W, b in params], mse, max_restarts


def adaptive_scale(params: list, X: np.ndarray) -> np.ndarray:
    """:math:`\\gamma + w(x)` of each row (the factor of the adaptive threshold).

    Parameters
    ----------
    params : list
        From :func:`fit_adaptive`.
    X : ndarray of shape (n, d)

    Returns
    -------
    ndarray of shape (n,)
    """
    with x64():
        w = np.asarray(_mlp([(jnp.asarray(W), jnp.asarray(b)) for W, b in params],
                            jnp.asarray(X)))
    return _GAMMA + w


class MatrixInput(Calibrator):
    """A calibrator of (n, K) score matrices (binary (n,) scores also accepted)."""

    def __sklearn_tags__(self) -> Any:  # noqa: ANN401 - sklearn.utils.Tags, sklearn optional
        """scikit-learn's estimator tags: keyword inputs of shape (n,) or (n, K)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags


class SplitConformal(MatrixInput):
    """Split conformal prediction sets on a classifier's base probabilities.

    Parameters
    ----------
    alpha : float, default=0.1
        Miscoverage level, a fraction in (0, 1).
    score : {'msp', 'aps'}, default='msp'
        Nonconformity score (module docstring).
    threshold : {'constant', 'adaptive'}, default='constant'
        One threshold for every x ("C"), or the adaptive threshold ("Ada").
    aps_include_boundary : bool, default=False
        APS sets as the highest-probability region of the threshold (the authors' code)
        instead of the paper's rule.
    ada_fraction : float, default=0.5
        With ``threshold='adaptive'``: the share of the calibration rows (the first ones,
        in the order given) that trains the transform; the rest give the quantile.
    ada_hidden : tuple of int, default=(100,) * 6
        Hidden layer widths of the MLP w(x) (ReLU).
    ada_steps : int, default=3000
    ada_lr : float, default=0.01
        Adam steps and learning rate (minibatches of a fifth of the training rows).
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (the MLP's features are logits or
        log-probabilities).
    seed : int, default=0

    Attributes
    ----------
    quantile_ : float
        The conformal threshold on the (transformed) scores; ``inf`` when k > n.
    k_ : int
        ``ceil((1 - alpha)(n + 1))`` with n the calibration rows used for the quantile.
    n_quantile_ : int
    scores_ : ndarray of shape (n_quantile_,)
        The (transformed) calibration scores the quantile is taken of.
    ada_params_ : list or None
        The MLP's weights (adaptive threshold).
    ada_mse_ : float or None
    status_, message_ : str
        'ok'; 'infinite_quantile' when k > n (every set is the full set; warns);
        'ada_not_converged' when the transform's training diverged after every restart.
    """

    _fitted_attr = "quantile_"

    def __init__(self, *, alpha: float = 0.1, score: str = "msp", threshold: str = "constant",
                 aps_include_boundary: bool = False, ada_fraction: float = 0.5,
                 ada_hidden: tuple[int, ...] = (100,) * 6, ada_steps: int = 3000,
                 ada_lr: float = 0.01, eps: float = EPS, seed: int = 0) -> None:
        self.alpha = alpha
        self.score = score
        self.threshold = threshold
        self.aps_include_boundary = aps_include_boundary
        self.ada_fraction = ada_fraction
        self.ada_hidden = ada_hidden
        self.ada_steps = ada_steps
        self.ada_lr = ada_lr
        self.eps = eps
        self.seed = seed

    def _inputs(self, probs: ArrayLike | None, logits: ArrayLike | None) -> ScoreInput:
        return score_matrix(probs, logits, check_eps(self.eps))

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> SplitConformal:
        """Compute the conformal threshold from calibration predictions and hard labels.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).
        target : labels of shape (n,), or one-hot rows / a hard Target

        Returns
        -------
        self
        """
        self.alpha_ = check_alpha(self.alpha)
        check_choice(self.score, "score", SCORES)
        check_choice(self.threshold, "threshold", THRESHOLDS)
        if not isinstance(self.aps_include_boundary, bool | np.bool_):
            raise ValueError(f"aps_include_boundary must be True or False, got "
                             f"{self.aps_include_boundary!r}")
        x = self._inputs(probs, logits)
        n, K = x.S.shape
        y = hard_labels(target, n, K)
        P = base_probs(x)
        s = nonconformity(P, y, self.score)
        self.n_classes_, self.input_ = K, x.given
        self.ada_params_ = self.ada_mse_ = None
        status, message = "ok", ""
        if self.threshold == "adaptive":
            frac = check_real(self.ada_fraction, "ada_fraction", minimum=0.0, maximum=1.0,
                              strict=True)
            n_tr = int(math.floor(frac * n))
            if n_tr < 1 or n - n_tr < 1:
                raise ValueError(f"ada_fraction={frac} leaves no rows for training or for the "
                                 f"quantile with {n} calibration rows")
            hidden = tuple(check_int(h, "ada_hidden", minimum=1) for h in self.ada_hidden)
            steps = check_int(self.ada_steps, "ada_steps", minimum=1)
            lr = check_real(self.ada_lr, "ada_lr", minimum=0.0, strict=True)
            check_seed(self.seed)
            self.ada_params_, self.ada_mse_, restarts = fit_adaptive(
                x.S[:n_tr], s[:n_tr], hidden=hidden, n_steps=steps, lr=lr, seed=self.seed)
            if not (math.isfinite(self.ada_mse_) and self.ada_mse_ <= 10.0):
                status, message = "ada_not_converged", (
                    f"the adaptive transform's training diverged after {restarts} restarts "
                    f"(mean squared error {self.ada_mse_:.3g})")
            s = s[n_tr:] / adaptive_scale(self.ada_params_, x.S[n_tr:])
        self.scores_ = s
        self._set_quantile(status, message)
        return self

    def _set_quantile(self, status: str, message: str) -> None:
        from .._warnings import NumericalWarning

        s = self.scores_
        self.n_quantile_ = int(s.size)
        self.k_ = conformal_rank(s.size, self.alpha_)
        self.quantile_ = conformal_quantile(s, self.alpha_)
        if status == "ok" and not math.isfinite(self.quantile_):
            status, message = "infinite_quantile", (
                f"k = ceil((1 - alpha)(n + 1)) = {self.k_} exceeds the n = {s.size} "
                "calibration scores: the threshold is +inf and every set is the full set")
        self._set_status(status, message, NumericalWarning if status != "ok" else None)

    def at_alpha(self, alpha: float) -> SplitConformal:
        """A copy with the quantile recomputed at another alpha (same scores and transform).

        The adaptive transform does not depend on alpha, so one fit serves every level.

        Parameters
        ----------
        alpha : float

        Returns
        -------
        SplitConformal
        """
        import copy

        self._check_fitted()
        out = copy.copy(self)
        out.alpha = alpha
        out.alpha_ = check_alpha(alpha)
        keep = self.status_ if self.status_ == "ada_not_converged" else "ok"
        out._set_quantile(keep, self.message_ if keep != "ok" else "")
        return out

    def thresholds(self, x: ScoreInput) -> np.ndarray:
        """The threshold of each row: ``quantile_`` or ``quantile_ * (gamma + w(x))``.

        Parameters
        ----------
        x : ScoreInput

        Returns
        -------
        ndarray of shape (n,)
        """
        n = x.S.shape[0]
        if self.ada_params_ is None or not math.isfinite(self.quantile_):
            return np.full(n, self.quantile_)
        return self.quantile_ * adaptive_scale(self.ada_params_, x.S)

    def sets_of(self, x: ScoreInput) -> np.ndarray:
        """Conformal sets of checked scores (boolean mask (n, n_classes)).

        Parameters
        ----------
        x : ScoreInput

        Returns
        -------
        bool ndarray
        """
        if x.S.shape[1] != self.n_classes_:
            raise ValueError(f"{x.given} must have {self.n_classes_} columns like the fit, got "
                             f"{x.S.shape[1]}")
        return prediction_sets(base_probs(x), self.thresholds(x), self.score,
                               aps_include_boundary=bool(self.aps_include_boundary))

    def predict_sets(self, *, probs: ArrayLike | None = None,
                     logits: ArrayLike | None = None) -> np.ndarray:
        """Conformal prediction sets of new rows.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).

        Returns
        -------
        bool ndarray of shape (n, n_classes)
        """
        self._check_fitted()
        return self.sets_of(self._inputs(probs, logits))

