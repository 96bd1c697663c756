"""Hui–Walter: two binary annotators and score groups (paper 003, spec sections 3.2 and 3.3).

``HuiWalter().fit(..., method='mom')`` inverts the six moments of two groups in closed form
(section 3.2, Eqs. 13, D.3, D.5). ``method='gmm'`` is the grouped GMM of section 3.3
(Definition D.1): it minimises a quadratic form in the 3L group moments of L >= 2 ordered
score groups over a compact constraint set, with SLSQP and JAX gradients.
"""

from __future__ import annotations

import numbers
import warnings
from functools import partial
from typing import NamedTuple

import numpy as np
from scipy.linalg import block_diag
from scipy.optimize import minimize
from scipy.stats import chi2

import jax
import jax.numpy as jnp

from .._jax import as_numpy_rng, x64
from .._typing import ArrayLike, Seed
from .._validation import check_array, check_choice, check_int
from .._warnings import ConvergenceWarning, IdentifiabilityWarning
from ..data import Annotations
from ..engines.results import AnnotatorFit

__all__ = [
    "HuiWalter",
    "GMMSolution",
    "equal_count_groups",
    "gmm_fit_moments",
    "gmm_objective",
    "grouped_moments",
    "hui_walter_inverse",
    "hui_walter_moments",
    "moment_triple",
]

#: A GMM constraint counts as active (status ``'boundary'``) when the estimate is within
#: this distance of its limit. SLSQP is an active-set method, so active constraints hold
#: to round-off; the slack only absorbs that (spec 3.3 [GAP]: the value is ours).
ACTIVE_TOL = 1e-6

#: A start whose end point violates a constraint by more than this is not a candidate.
_FEASIBILITY_TOL = 1e-9

#: SLSQP's ``ftol`` (it stops when the objective changes by less than this), applied to
#: Q_n divided by the largest eigenvalue of the weight matrix so that both weights are on
#: the identity's scale, where the moments are probabilities. Q_n is a squared residual,
#: so the value is tight: on exact population moments every start then recovers theta to
#: about 1e-8.
_FTOL = 1e-16

_NOTE = ("the optimisation gap epsilon_opt of Eq. D.15 is not certified: the optimiser "
         "stops at a stationary point of the best of several starts, which need not be "
         "the global minimum of Q_n over the constraint set")


def grouped_moments(theta: ArrayLike, n_groups: int) -> jax.Array:
    """Model moments Gamma_L(theta) of the grouped Hui–Walter model (spec 3.3, Eq. 13).

    Parameters
    ----------
    theta : array-like of shape (n_groups + 4,)
        ``(a1, b1, a2, b2, mu_1, ..., mu_L)``: false- and true-positive rates of the two
        annotators, shared across groups, and the prevalence P(Y = 1 | G = g) of each group.
    n_groups : int
        L, the number of groups (static: it fixes the output shape).

    Returns
    -------
    jax.Array of shape (3 * n_groups,)
        ``(q_{1,g}, q_{2,g}, q_{12,g})`` stacked for g = 1..L, with
        ``q_{j,g} = a_j + (b_j - a_j) mu_g`` and
        ``q_{12,g} = (1 - mu_g) a1 a2 + mu_g b1 b2``.

    Raises
    ------
    ValueError
        If ``theta`` does not have shape ``(n_groups + 4,)``.
    """
    theta = jnp.asarray(theta)
    if theta.shape != (n_groups + 4,):
        raise ValueError(f"theta must have shape ({n_groups + 4},) for n_groups={n_groups}, "
                         f"got {theta.shape}")
    a1, b1, a2, b2 = theta[0], theta[1], theta[2], theta[3]
    mu = theta[4:]
    q1 = a1 + (b1 - a1) * mu
    q2 = a2 + (b2 - a2) * mu
    q12 = (1 - mu) * a1 * a2 + mu * b1 * b2
    return jnp.stack([q1, q2, q12], axis=1).reshape(3 * n_groups)


def hui_walter_moments(theta: jax.Array) -> jax.Array:
    """Model moments Gamma(theta) of theta = (a1, b1, a2, b2, mu0, mu1) (spec Eq. 13).

    Returns (q_{1,0}, q_{2,0}, q_{12,0}, q_{1,1}, q_{2,1}, q_{12,1}); the two-group case of
    :func:`grouped_moments`.
    """
    return grouped_moments(theta, 2)


def gmm_objective(theta: ArrayLike, moments: ArrayLike, weight_matrix: ArrayLike,
                  n_groups: int) -> jax.Array:
    """GMM objective Q_n(theta) = r' W r with r = moments - Gamma_L(theta) (spec 3.3).

    Parameters
    ----------
    theta : array-like of shape (n_groups + 4,)
        ``(a1, b1, a2, b2, mu_1, ..., mu_L)``.
    moments : array-like of shape (3 * n_groups,)
        Sample moments Gamma_hat_L in the order of :func:`grouped_moments`.
    weight_matrix : array-like of shape (3 * n_groups, 3 * n_groups)
        W_n, symmetric positive definite.
    n_groups : int
        L (static).

    Returns
    -------
    jax.Array
        The scalar Q_n(theta).
    """
    r = jnp.asarray(moments) - grouped_moments(theta, n_groups)
    return r @ jnp.asarray(weight_matrix) @ r


@partial(jax.jit, static_argnames=("n_groups",))
def _value_and_grad(theta: jax.Array, moments: jax.Array, weight_matrix: jax.Array,
                    n_groups: int) -> tuple[jax.Array, jax.Array]:
    """Q_n and its gradient in theta (jitted; call it under ``x64()``)."""
    return jax.value_and_grad(gmm_objective)(theta, moments, weight_matrix, n_groups)


def _moment_jacobian(theta: np.ndarray, n_groups: int) -> np.ndarray:
    """D Gamma_L(theta), shape (3L, L + 4), by forward-mode autodiff in float64."""
    with x64():
        jac = jax.jacfwd(partial(grouped_moments, n_groups=n_groups))(jnp.asarray(theta))
    return np.asarray(jac)


def hui_walter_inverse(q: np.ndarray) -> tuple[np.ndarray, str, str]:
    """Closed-form inverse H of the moments (spec Eqs. D.3, D.5).

    Returns theta = (a1, b1, a2, b2, mu0, mu1), a status ('ok' or 'infeasible_mom') and a
    message saying which validity condition failed.
    """
    q10, q20, q120, q11, q21, q121 = (float(x) for x in q)
    nan = np.full(6, np.nan)
    d1 = q11 - q10
    if d1 == 0:
        return nan, "infeasible_mom", "annotator 1 has the same mean in both groups"
    beta = (q21 - q20) / d1
    if not beta > 0:
        return nan, "infeasible_mom", ("the two annotators' group mean differences have "
                                       f"opposite signs or vanish (beta = {beta:.4g})")
    c = [q120 - q10 * q20, q121 - q11 * q21]
    h = [c[0] / beta + q10**2, c[1] / beta + q11**2]
    u = (h[1] - h[0]) / d1
    v = u * q10 - h[0]
    disc = u * u - 4 * v
    if not disc > 0:
        return nan, "infeasible_mom", f"the discriminant u^2 - 4v = {disc:.4g} is not positive"
    a1, b1 = (u - np.sqrt(disc)) / 2, (u + np.sqrt(disc)) / 2
    delta1 = b1 - a1
    a2 = q20 - beta * q10 + beta * a1
    b2 = a2 + beta * delta1
    mu0, mu1 = (q10 - a1) / delta1, (q11 - a1) / delta1
    theta = np.array([a1, b1, a2, b2, mu0, mu1])
    ok = (0 <= a1 < b1 <= 1) and (0 <= a2 < b2 <= 1) and (0 <= mu0 <= 1) and (0 <= mu1 <= 1)
    if not ok:
        return theta, "infeasible_mom", ("the inverse gives rates or prevalences outside "
                                         "[0, 1] (or a non-positive gap)")
    return theta, "ok", ""


def _check_open_unit(value: object, name: str) -> float:
    """A real number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    out = float(value)
    if not (np.isfinite(out) and 0.0 < out < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return out


def _linear_constraints(n_groups: int, min_gap: float, min_separation: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``C theta >= lb``: the two gaps and the extreme-group separation (spec 3.3)."""
    C = np.zeros((3, n_groups + 4))
    C[0, [0, 1]] = -1.0, 1.0  # b1 - a1 >= min_gap
    C[1, [2, 3]] = -1.0, 1.0  # b2 - a2 >= min_gap
    C[2, [4, n_groups + 3]] = -1.0, 1.0  # mu_L - mu_1 >= min_separation
    return C, np.array([min_gap, min_gap, min_separation])


def _violation(theta: np.ndarray, C: np.ndarray, lb: np.ndarray) -> float:
    """Largest violation of the bounds [0, 1] and of ``C theta >= lb`` (0 if feasible)."""
    return float(max(0.0, np.max(lb - C @ theta), np.max(-theta), np.max(theta - 1.0)))


def _mom_start(moments: np.ndarray, n_groups: int) -> np.ndarray | None:
    """A start from the closed-form inverse on the two extreme groups (spec 3.2).

    The rates come from :func:`hui_walter_inverse` on the moments of the first and last
    groups; each mu_g is the least-squares fit of ``q_{j,g} = a_j + delta_j mu_g``
    (j = 1, 2), clipped to [0, 1]. For L = 2 this is the MoM solution itself. Returns None
    when the inverse fails.
    """
    q = moments.reshape(n_groups, 3)
    theta, status, _ = hui_walter_inverse(np.concatenate([q[0], q[-1]]))
    if status != "ok":
        return None
    a1, b1, a2, b2 = theta[:4]
    d1, d2 = b1 - a1, b2 - a2
    mu = ((q[:, 0] - a1) * d1 + (q[:, 1] - a2) * d2) / (d1 * d1 + d2 * d2)
    return np.concatenate([theta[:4], np.clip(mu, 0.0, 1.0)])


class GMMSolution(NamedTuple):
    """The constrained minimiser returned by :func:`gmm_fit_moments`.

    Attributes
    ----------
    theta : ndarray of shape (n_groups + 4,)
        ``(a1, b1, a2, b2, mu_1, ..., mu_L)`` of the best start.
    objective : float
        Q_n(theta) with the weight matrix given (not rescaled).
    success : bool
        The optimiser's own success flag for the best start.
    n_iter : int
        Iterations of the best start.
    message : str
        The optimiser's message for the best start.
    start_objectives : ndarray of shape (n_runs,)
        Final Q_n of every start, in the order of ``start_kinds`` (inf when the end point
        is infeasible).
    start_kinds : tuple of str
        ``'init'`` (given starts), ``'mom'`` (closed-form start) or ``'random'``.
    best_start : int
        Index of the best start.
    """

    theta: np.ndarray
    objective: float
    success: bool
    n_iter: int
    message: str
    start_objectives: np.ndarray
    start_kinds: tuple[str, ...]
    best_start: int


def gmm_fit_moments(moments: ArrayLike, n_groups: int, *,
                    weight_matrix: ArrayLike | None = None, min_gap: float = 1e-4,
                    min_separation: float = 1e-5, n_starts: int = 5, seed: Seed = 0,
                    max_iter: int = 500, init: ArrayLike | None = None) -> GMMSolution:
    """Minimise the grouped GMM objective over the constraint set (spec 3.3, Eq. D.15).

    Minimises ``Q_n(theta) = (m - Gamma_L(theta))' W (m - Gamma_L(theta))`` over

    - ``0 <= a_j, b_j <= 1`` and ``0 <= mu_g <= 1`` (bounds);
    - ``b_j - a_j >= min_gap`` for j = 1, 2 (positive orientation, gaps bounded below);
    - ``mu_L - mu_1 >= min_separation`` (the first and last groups are the low- and
      high-score groups: groups must be ordered by score),

    with SLSQP and the exact gradient from JAX (float64 under a scoped x64 context). Starts:
    the given ``init`` points, the closed-form start of :func:`_mom_start` when it is
    feasible, and ``n_starts`` seeded random starts with a_j ~ U(0.01, 0.49),
    b_j ~ U(0.51, 0.99) and sorted mu_g ~ U(0.05, 0.95). The feasible end point with the
    smallest Q_n is returned.

    Parameters
    ----------
    moments : array-like of shape (3 * n_groups,)
        Gamma_hat_L, ``(q_{1,g}, q_{2,g}, q_{12,g})`` stacked over the ordered groups.
    n_groups : int
        L >= 2.
    weight_matrix : array-like of shape (3 * n_groups, 3 * n_groups), default=None
        W_n, symmetric positive definite; None means the identity.
    min_gap : float, default=1e-4
        Lower bound on each gap b_j - a_j, in (0, 1).
    min_separation : float, default=1e-5
        Lower bound on mu_L - mu_1, in (0, 1).
    n_starts : int, default=5
        Random starts (>= 1), in addition to ``init`` and the closed-form start.
    seed : int or JAX key, default=0
        Seed of the random starts.
    max_iter : int, default=500
        SLSQP iteration limit per start.
    init : array-like of shape (n_groups + 4,) or (k, n_groups + 4), default=None
        Extra starting points (for example a first-step estimate).

    Returns
    -------
    GMMSolution

    Raises
    ------
    ValueError
        If an argument has the wrong shape, type or range (the message names it).

    Notes
    -----
    The optimiser works on ``Q_n / lambda_max(W)`` so that its stopping tolerance means the
    same for every weight; the reported objective is Q_n itself. A stationary point of the
    best start does not certify the optimisation gap epsilon_opt of Eq. D.15.
    """
    L = check_int(n_groups, "n_groups", minimum=2)
    m = check_array(moments, "moments", ndim=1)
    if m.shape != (3 * L,):
        raise ValueError(f"moments must have shape ({3 * L},) for n_groups={L}, got {m.shape}")
    if weight_matrix is None:
        W = np.eye(3 * L)
    else:
        W = check_array(weight_matrix, "weight_matrix", ndim=2)
        if W.shape != (3 * L, 3 * L):
            raise ValueError(f"weight_matrix must have shape ({3 * L}, {3 * L}), got "
                             f"{W.shape}")
        if not np.allclose(W, W.T, rtol=1e-10, atol=0.0):
            raise ValueError("weight_matrix must be symmetric")
        W = (W + W.T) / 2
        if not np.linalg.eigvalsh(W).min() > 0:
            raise ValueError("weight_matrix must be positive definite")
    min_gap = _check_open_unit(min_gap, "min_gap")
    min_separation = _check_open_unit(min_separation, "min_separation")
    n_starts = check_int(n_starts, "n_starts", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    starts: list[tuple[str, np.ndarray]] = []
    if init is not None:
        x0 = check_array(init, "init", ndim=(1, 2))
        x0 = x0.reshape(-1, x0.shape[-1])
        if x0.shape[1] != L + 4:
            raise ValueError(f"init must have {L + 4} columns for n_groups={L}, got shape "
                             f"{x0.shape}")
        starts += [("init", np.clip(x, 0.0, 1.0)) for x in x0]
    rng = as_numpy_rng(seed)
    C, lb = _linear_constraints(L, min_gap, min_separation)
    mom = _mom_start(m, L)
    if mom is not None and _violation(mom, C, lb) == 0.0:
        starts.append(("mom", mom))
    for _ in range(n_starts):
        a, b = rng.uniform(0.01, 0.49, 2), rng.uniform(0.51, 0.99, 2)
        mu = np.sort(rng.uniform(0.05, 0.95, L))
        starts.append(("random", np.concatenate([[a[0], b[0], a[1], b[1]], mu])))

    scale = float(np.linalg.eigvalsh(W).max())
    constraint = {"type": "ineq", "fun": lambda x: C @ x - lb, "jac": lambda x: C}
    runs = []
    with x64():
        jm, jW = jnp.asarray(m), jnp.asarray(W / scale)

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            val, grad = _value_and_grad(jnp.asarray(x), jm, jW, L)
            return float(val), np.asarray(grad, dtype=np.float64)

        for _, x0 in starts:
            res = minimize(fun, x0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * (L + 4),
                           constraints=[constraint],
                           options={"maxiter": max_iter, "ftol": _FTOL})
            runs.append(res)
        thetas = [np.asarray(r.x, dtype=np.float64) for r in runs]
        values = [float(gmm_objective(jnp.asarray(t), jm, jnp.asarray(W), L)) for t in thetas]
    objectives = np.array([v if _violation(t, C, lb) <= _FEASIBILITY_TOL else np.inf
                           for t, v in zip(thetas, values, strict=True)])
    if np.all(np.isinf(objectives)):
        best = int(np.argmin([_violation(t, C, lb) for t in thetas]))
    else:
        best = int(np.argmin(objectives))
    res = runs[best]
    return GMMSolution(thetas[best], values[best],
                       bool(res.success), int(res.nit), str(res.message), objectives,
                       tuple(k for k, _ in starts), best)


def equal_count_groups(scores: ArrayLike, n_groups: int = 2, *, odd: str = "high"
                       ) -> np.ndarray:
    """Equal-count score-rank groups with deterministic tie breaking (spec 3.3 [GAP]).

    Items are sorted by ``(score, index)`` with a stable sort, so tied scores keep their
    input order, and the sorted sequence is cut into ``n_groups`` consecutive blocks whose
    sizes differ by at most one. With ``n = n_groups * k + r`` the ``r`` blocks of size
    ``k + 1`` are the highest-score ones (``odd='high'``) or the lowest (``odd='low'``).
    For two groups this is the spec's rule: the first ``floor(n / 2)`` sorted items form the
    low group and the rest the high group, so an odd item goes to the high group.

    Parameters
    ----------
    scores : array-like of shape (n_items,)
        Finite scores (for example predicted probabilities).
    n_groups : int, default=2
        L >= 2, at most ``n_items``.
    odd : {'high', 'low'}, default='high'
        Which end receives the remainder items when ``n_items`` is not a multiple of
        ``n_groups``.

    Returns
    -------
    ndarray of shape (n_items,), dtype int64
        Group of each item in input order, ``0`` (lowest scores) to ``n_groups - 1``; the
        labels are ordered by score, as ``HuiWalter.fit(method='gmm')`` requires.

    Raises
    ------
    ValueError
        If ``scores`` is not a finite 1-D array, ``n_groups`` is not an integer in
        ``[2, n_items]``, or ``odd`` is not 'high' or 'low'.

    Examples
    --------
    >>> from noisycal.hui_walter import equal_count_groups
    >>> equal_count_groups([0.5, 0.1, 0.5, 0.3, 0.5]).tolist()
    [1, 0, 1, 0, 1]
    >>> equal_count_groups([0.5, 0.1, 0.5, 0.3, 0.5], odd="low").tolist()
    [0, 0, 1, 0, 1]
    """
    z = check_array(scores, "scores", ndim=1)
    L = check_int(n_groups, "n_groups", minimum=2)
    check_choice(odd, "odd", ("high", "low"))
    n = z.size
    if L > n:
        raise ValueError(f"n_groups must be at most the number of scores ({n}) so that no "
                         f"group is empty, got {L}")
    k, r = divmod(n, L)
    sizes = np.full(L, k)
    if odd == "high":
        sizes[L - r:] += 1
    else:
        sizes[:r] += 1
    order = np.argsort(z, kind="stable")
    out = np.empty(n, dtype=np.int64)
    out[order] = np.repeat(np.arange(L), sizes)
    return out


def _sample_moments(A: np.ndarray, gi: np.ndarray, n_groups: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group sample moments (spec Eq. D.8) and the covariance of each group's mean vector.

    Returns the stacked moments (3L,), the (L, 3, 3) plug-in covariances of
    ``(A1, A2, A1 A2)`` within each group divided by n_g (the covariance of the group mean
    vector) and the group sizes (L,).
    """
    X = np.column_stack([A[:, 0], A[:, 1], A[:, 0] * A[:, 1]])
    counts = np.bincount(gi, minlength=n_groups)
    q = np.empty((n_groups, 3))
    cov = np.empty((n_groups, 3, 3))
    for g in range(n_groups):
        Xg = X[gi == g]
        q[g] = Xg.mean(axis=0)
        D = Xg - q[g]
        cov[g] = D.T @ D / counts[g] ** 2
    return q.ravel(), cov, counts


def _efficient_weight(cov: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Block-diagonal inverse covariance of the moment vector (two-step weight, spec 3.3).

    Group g's block is the inverse of ``Sigma_g = S_g / n_g``, with S_g the plug-in (ddof=0)
    covariance of ``(A1, A2, A1 A2)`` in the group; groups are independent, so the
    covariance of the stacked moments is block diagonal. Sigma_g is singular exactly when
    one of the four (A1, A2) cells is empty in the group; then, and whenever its smallest
    eigenvalue is below 1e-10 times its largest, ``I / n_g^2`` is added before inverting (a
    ridge of the order of the variance of a proportion estimated as 0 from n_g items). The
    regularised groups are returned with the weight.
    """
    blocks, ridged = [], []
    for g, (S, n) in enumerate(zip(cov, counts, strict=True)):
        ev = np.linalg.eigvalsh(S)
        if not ev[0] > 1e-10 * ev[-1]:
            S = S + np.eye(3) / float(n) ** 2
            ridged.append(g)
        blocks.append(np.linalg.inv(S))
    W = block_diag(*blocks)
    return (W + W.T) / 2, ridged


def _active_constraints(theta: np.ndarray, min_gap: float, min_separation: float
                        ) -> list[str]:
    """Constraints of the GMM parameter set within ``ACTIVE_TOL`` of their limits."""
    a1, b1, a2, b2 = theta[:4]
    mu = theta[4:]
    out = []
    for j, (a, b) in enumerate(((a1, b1), (a2, b2)), start=1):
        if b - a <= min_gap + ACTIVE_TOL:
            out.append(f"gap b{j} - a{j} at min_gap")
        if a <= ACTIVE_TOL:
            out.append(f"a{j} at 0")
        if b >= 1 - ACTIVE_TOL:
            out.append(f"b{j} at 1")
    if mu[-1] - mu[0] <= min_separation + ACTIVE_TOL:
        out.append("mu_high - mu_low at min_separation")
    for g, m in enumerate(mu):
        if m <= ACTIVE_TOL or m >= 1 - ACTIVE_TOL:
            out.append(f"mu of group {g} at {0 if m <= ACTIVE_TOL else 1}")
    return out


def _posterior_loglik(A: np.ndarray, gi: np.ndarray, prev: np.ndarray, a: np.ndarray,
                      b: np.ndarray) -> tuple[np.ndarray, float]:
    """Item posteriors P(Y | A, G) and the log-likelihood with per-group prevalence."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lik1 = prev[gi, 1] * np.prod(np.where(A == 1, b, 1 - b), axis=1)
        lik0 = prev[gi, 0] * np.prod(np.where(A == 1, a, 1 - a), axis=1)
        post = np.column_stack([lik0, lik1]) / (lik0 + lik1)[:, None]
        loglik = float(np.sum(np.log(lik0 + lik1)))
    return post, loglik


class HuiWalter:
    """Hui–Walter model: two binary annotators, L >= 2 score groups, shared channels.

    Annotator j has false-positive rate ``a_j = P(A_j = 1 | Y = 0)`` and true-positive rate
    ``b_j = P(A_j = 1 | Y = 1)`` in every group; group g has prevalence
    ``mu_g = P(Y = 1 | G = g)``; the annotators are independent given Y.

    - ``fit(annotations, groups=g, method='mom')`` (two groups) inverts the six group moments
      in closed form (spec 3.2). Infeasible inverses are reported with status
      ``'infeasible_mom'``, never as numbers that look fine.
    - ``fit(annotations, groups=g, method='gmm')`` (L >= 2 groups ordered by score) is the
      constrained grouped GMM of spec 3.3. With L = 2 it equals the MoM solution whenever
      that is feasible (the model is exactly identified); with L > 2 it has 2L - 4
      over-identifying restrictions. statsmodels' GMM (``sandbox.regression.gmm``)
      optimises without constraints, so the same objective is minimised here with
      SciPy's SLSQP under the spec's constraints; at interior solutions the two agree
      (tested).

    The result is an :class:`~noisycal.engines.results.AnnotatorFit` with ``prevalence`` of
    shape (L, 2) (rows: groups in sorted order), ``confusion`` (2, 2, 2) and
    weak-identification diagnostics in ``details``: the group mean differences of each
    annotator (between the two extreme groups) and the smallest singular value of the
    moment Jacobian (``jax.jacfwd``), plus its determinant when L = 2 (it equals
    delta_1^2 delta_2^2 (mu_1 - mu_0)^2). For more annotators use
    :class:`~noisycal.GroupedDawidSkene`.
    """

    def fit(self, annotations: Annotations | ArrayLike, *, groups: ArrayLike,
            method: str = "mom", weight: str = "identity", min_gap: float = 1e-4,
            min_separation: float = 1e-5, n_starts: int = 5, seed: Seed = 0,
            max_iter: int = 500) -> AnnotatorFit:
        """Fit the channels and group prevalences.

        Parameters
        ----------
        annotations : Annotations or array-like of shape (n_items, 2)
            0/1 labels of two annotators who rate every item.
        groups : array-like of shape (n_items,)
            Group of each item. ``'mom'`` needs exactly two distinct values; ``'gmm'`` needs
            at least two numeric values, **ordered by score**: the sorted labels are the
            groups from lowest to highest score (for example :func:`equal_count_groups`),
            because the separation constraint compares the first and last.
        method : {'mom', 'gmm'}, default='mom'
            Closed-form method of moments (spec 3.2) or constrained GMM (spec 3.3).
        weight : {'identity', 'efficient'}, default='identity'
            ``'gmm'`` only. The identity weight, or the two-step weight: a first step with
            the identity, then W_n = the inverse of the estimated covariance of the moment
            vector (block diagonal over groups; block g is the inverse of the plug-in
            covariance of ``(A1, A2, A1 A2)`` in group g divided by n_g, with a small
            ridge when a block is singular, see ``details['weight_ridge_groups']``). With
            this scaling Q_n at the estimate is Hansen's J statistic, asymptotically
            chi-squared with 2L - 4 degrees of freedom at an interior point.
        min_gap : float, default=1e-4
            ``'gmm'`` only. Lower bound on each gap b_j - a_j (the spec's admission
            threshold for delta_j); in (0, 1).
        min_separation : float, default=1e-5
            ``'gmm'`` only. Lower bound on mu_L - mu_1 (the spec's tabular value); in (0, 1).
        n_starts : int, default=5
            ``'gmm'`` only. Seeded random starts besides the closed-form start.
        seed : int or JAX key, default=0
            ``'gmm'`` only. Seed of the random starts.
        max_iter : int, default=500
            ``'gmm'`` only. SLSQP iteration limit per start.

        Returns
        -------
        AnnotatorFit
            ``status`` is, for ``'gmm'``: ``'ok'``; ``'boundary'`` when a constraint is
            active at the estimate (``details['active_constraints']`` lists them: a gap at
            ``min_gap``, the separation at ``min_separation``, a mu_g at 0 or 1, a_j at 0 or
            b_j at 1); ``'not_converged'`` when the optimiser failed; ``'not_identified'``
            when both annotators have exactly the same mean in the two extreme groups.

        Raises
        ------
        ValueError
            For invalid input, naming the argument.

        Warns
        -----
        IdentifiabilityWarning
            ``'mom'``: the inverse is infeasible. ``'gmm'``: status ``'not_identified'``,
            or ``'boundary'`` with a gap or the separation at its lower bound (the
            identifying conditions). A boundary at 0 or 1 alone does not warn.
        ConvergenceWarning
            ``'gmm'``: the optimiser did not converge.

        Notes
        -----
        GMM (spec 3.3, Definition D.1): ``Gamma_L(theta)`` stacks
        ``q_{j,g} = a_j + (b_j - a_j) mu_g`` and ``q_{12,g} = (1 - mu_g) a1 a2 + mu_g b1 b2``
        over groups (:func:`grouped_moments`); the estimator minimises
        ``Q_n(theta) = (Gamma_hat - Gamma_L(theta))' W_n (Gamma_hat - Gamma_L(theta))`` over
        the constraint set of :func:`gmm_fit_moments`. The final Q_n, the objective of every
        start and the optimiser's message are in ``details``; the optimisation gap
        epsilon_opt of Eq. D.15 is not certified (``details['note']``). ``n_params`` is
        L + 4. Item posteriors and the log-likelihood use the per-group prevalence.
        """
        check_choice(method, "method", ("mom", "gmm"))
        check_choice(weight, "weight", ("identity", "efficient"))
        if method == "mom":
            defaults = {"weight": "identity", "min_gap": 1e-4, "min_separation": 1e-5,
                        "n_starts": 5, "seed": 0, "max_iter": 500}
            given = {"weight": weight, "min_gap": min_gap, "min_separation": min_separation,
                     "n_starts": n_starts, "seed": seed, "max_iter": max_iter}
            changed = [k for k in defaults if not _same(given[k], defaults[k])]
            if changed:
                verb = "applies" if len(changed) == 1 else "apply"
                raise ValueError(f"{', '.join(changed)} {verb} only to method='gmm', got "
                                 "method='mom'")
        A, items, annotators, classes = _as_two_annotators(annotations)
        g = np.asarray(groups)
        if g.shape != (A.shape[0],):
            raise ValueError(f"groups must have one entry per item ({A.shape[0]}), got shape "
                             f"{g.shape}")
        if method == "gmm" and (g.dtype.kind not in "biuf"
                                or (g.dtype.kind == "f" and not np.all(np.isfinite(g)))):
            raise ValueError("groups must be finite numbers ordered by score for "
                             f"method='gmm', got dtype {g.dtype}")
        levels, gi = np.unique(g, return_inverse=True)
        gi = gi.reshape(-1)
        if method == "mom":
            if levels.size != 2:
                raise ValueError(f"groups must contain exactly two groups, got {levels.size}")
            return _fit_mom(A, gi, levels, items, annotators, classes)
        if levels.size < 2:
            raise ValueError("groups must contain at least two groups for method='gmm', got "
                             f"{levels.size}")
        min_gap = _check_open_unit(min_gap, "min_gap")
        min_separation = _check_open_unit(min_separation, "min_separation")
        n_starts = check_int(n_starts, "n_starts", minimum=1)
        max_iter = check_int(max_iter, "max_iter", minimum=1)
        return _fit_gmm(A, gi, levels, items, annotators, classes, weight=weight,
                        min_gap=min_gap, min_separation=min_separation, n_starts=n_starts,
                        seed=seed, max_iter=max_iter)


def _same(x: object, y: object) -> bool:
    """``x == y`` for plain Python values, False when the comparison is not a bool."""
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


def _as_two_annotators(annotations: Annotations | ArrayLike
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate two fully rated binary annotators; returns (A, items, annotators, classes)."""
    if isinstance(annotations, Annotations):
        if annotations.n_annotators != 2 or annotations.n_classes != 2:
            raise ValueError("HuiWalter needs exactly 2 annotators and 2 classes, got "
                             f"{annotations.n_annotators} and {annotations.n_classes}")
        wide = annotations.to_wide(missing=-1)
        if np.any(wide < 0):
            raise ValueError("HuiWalter needs both annotators to rate every item")
        return (wide.astype(float), np.asarray(annotations.items),
                np.asarray(annotations.annotators), np.asarray(annotations.classes))
    A = np.asarray(annotations, dtype=np.float64)
    if A.ndim != 2 or A.shape[1] != 2:
        raise ValueError(f"annotations must have shape (n_items, 2), got {A.shape}")
    if not np.all(np.isin(A, (0.0, 1.0))):
        raise ValueError("annotations must be 0/1 labels with no missing values")
    return A, np.arange(A.shape[0]), np.arange(2), np.arange(2)


def _channels(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prevalence (L, 2), confusion (2, 2, 2)) from theta = (a1, b1, a2, b2, mu...)."""
    a1, b1, a2, b2 = theta[:4]
    mu = theta[4:]
    prev = np.column_stack([1 - mu, mu])
    conf = np.array([[[1 - a1, a1], [1 - b1, b1]], [[1 - a2, a2], [1 - b2, b2]]])
    return prev, conf


def _fit_mom(A: np.ndarray, gi: np.ndarray, levels: np.ndarray, items: np.ndarray,
             annotators: np.ndarray, classes: np.ndarray) -> AnnotatorFit:
    """Closed-form Hui–Walter fit on two groups (spec 3.2)."""
    q, _, _ = _sample_moments(A, gi, 2)
    theta, status, message = hui_walter_inverse(q)
    jac = _moment_jacobian(np.nan_to_num(theta, nan=0.5), 2)
    details = {"moments": q, "group_mean_diff": (q[3] - q[0], q[4] - q[1]),
               "jacobian_det": float(np.linalg.det(jac)),
               "jacobian_min_sv": float(np.linalg.svd(jac, compute_uv=False).min()),
               "groups": levels, "group_index": gi, "method": "mom"}
    prev, conf = _channels(theta)
    if status != "ok":
        warnings.warn(f"Hui-Walter: {message}", IdentifiabilityWarning, stacklevel=3)
        post = np.full((A.shape[0], 2), np.nan)
        loglik = float("nan")
    else:
        post, loglik = _posterior_loglik(A, gi, prev, theta[[0, 2]], theta[[1, 3]])
    return AnnotatorFit("hui_walter", "mom", classes, annotators, items, prev, conf, post,
                        loglik, 6, status, message, status == "ok", 0, None, details)


def _fit_gmm(A: np.ndarray, gi: np.ndarray, levels: np.ndarray, items: np.ndarray,
             annotators: np.ndarray, classes: np.ndarray, *, weight: str, min_gap: float,
             min_separation: float, n_starts: int, seed: Seed, max_iter: int
             ) -> AnnotatorFit:
    """Constrained grouped GMM on L >= 2 ordered groups (spec 3.3)."""
    L = levels.size
    q, cov, counts = _sample_moments(A, gi, L)
    opts = {"min_gap": min_gap, "min_separation": min_separation, "n_starts": n_starts,
            "seed": seed, "max_iter": max_iter}
    sol = gmm_fit_moments(q, L, **opts)
    details: dict = {"method": "gmm", "weight": weight}
    if weight == "efficient":
        W, ridged = _efficient_weight(cov, counts)
        first = sol
        sol = gmm_fit_moments(q, L, weight_matrix=W, init=first.theta, **opts)
        df = 2 * L - 4
        details.update({
            "first_step": {"theta": first.theta, "objective": first.objective,
                           "success": first.success},
            "weight_matrix": W, "weight_ridge_groups": ridged,
            "j_statistic": sol.objective, "j_df": df,
            "j_pvalue": float(chi2.sf(sol.objective, df)) if df > 0 else float("nan")})
    else:
        details["weight_matrix"] = np.eye(3 * L)
    theta = sol.theta
    jac = _moment_jacobian(theta, L)
    diff = (float(q[3 * L - 3] - q[0]), float(q[3 * L - 2] - q[1]))
    active = _active_constraints(theta, min_gap, min_separation)
    details.update({
        "objective": sol.objective, "n_starts": n_starts,
        "start_objectives": sol.start_objectives, "start_kinds": sol.start_kinds,
        "best_start": sol.best_start, "optimizer_message": sol.message,
        "moments": q, "group_sizes": counts, "groups": levels, "group_index": gi,
        "theta": theta,
        "group_mean_diff": diff,
        "jacobian_min_sv": float(np.linalg.svd(jac, compute_uv=False).min()),
        "jacobian_det": float(np.linalg.det(jac)) if L == 2 else None,
        "min_gap": min_gap, "min_separation": min_separation,
        "active_constraints": tuple(active), "note": _NOTE})

    identifying = [c for c in active if "gap" in c or "separation" in c]
    if max(abs(diff[0]), abs(diff[1])) <= 1e-12:
        status, message = "not_identified", (
            "both annotators have the same mean in the lowest and highest groups, so the "
            "prevalences of the extreme groups cannot be separated")
        warnings.warn(f"Hui-Walter GMM: {message}", IdentifiabilityWarning, stacklevel=3)
    elif not (sol.success and np.all(np.isfinite(theta))):
        status, message = "not_converged", f"the optimiser failed: {sol.message}"
        warnings.warn(f"Hui-Walter GMM: {message}", ConvergenceWarning, stacklevel=3)
    elif active:
        status = "boundary"
        message = ("the estimate is on the boundary of the parameter set: "
                   + "; ".join(active))
        if identifying:
            warnings.warn(f"Hui-Walter GMM: {message}", IdentifiabilityWarning,
                          stacklevel=3)
    else:
        status, message = "ok", ""
    prev, conf = _channels(theta)
    post, loglik = _posterior_loglik(A, gi, prev, theta[[0, 2]], theta[[1, 3]])
    return AnnotatorFit("hui_walter", "gmm", classes, annotators, items, prev, conf, post,
                        loglik, L + 4, status, message, sol.success, sol.n_iter, None,
                        details)


def _triple_core(X: np.ndarray) -> tuple[float, float, float, float] | None:
    """(mu, delta_1, C12, C13) of Proposition D.2 from an (m, 3) 0/1 matrix whose first
    column is the anchor (gap taken positive); None when C12 C13 C23 <= 0."""
    D = X - X.mean(0)
    C12, C13, C23 = (D[:, 0] * D[:, 1]).mean(), (D[:, 0] * D[:, 2]).mean(), \
        (D[:, 1] * D[:, 2]).mean()
    prod = C12 * C13 * C23
    if not prod > 0:
        return None
    t = np.sign(C12 * C13) * (D[:, 0] * D[:, 1] * D[:, 2]).mean() / np.sqrt(prod)
    mu = (1 - t / np.sqrt(t * t + 4)) / 2
    return float(mu), float(np.sqrt(C12 * C13 / (C23 * mu * (1 - mu)))), float(C12), \
        float(C13)


def moment_triple(annotations: ArrayLike, *, anchor: int = 0) -> dict:
    r"""Closed-form channels from three binary annotators (paper 003, Proposition D.2).

    With :math:`q_j = E A_j`, :math:`C_{jk} = \mathrm{Cov}(A_j, A_k)` and the third central
    co-moment :math:`T`, :math:`t = \mathrm{sign}(C_{12}C_{13})\,T/\sqrt{C_{12}C_{13}C_{23}}`
    gives :math:`\mu = (1 - t/\sqrt{t^2+4})/2`, then
    :math:`\delta_1 = \sqrt{C_{12}C_{13}/(C_{23}\mu(1-\mu))}`,
    :math:`\delta_j = C_{1j}/(\mu(1-\mu)\delta_1)`, :math:`a_j = q_j - \mu\delta_j`,
    :math:`b_j = a_j + \delta_j`. The anchor annotator's gap is taken positive.

    Parameters
    ----------
    annotations : array-like of shape (n_items, 3)
        0/1 labels of three annotators (no missing values); the anchor is column
        ``anchor``.

    Returns
    -------
    dict
        ``a``, ``b`` (length 3), ``prevalence`` (mu), ``status`` ('ok' or
        'infeasible_mom') and ``message``.
    """
    A = np.asarray(annotations, dtype=np.float64)
    if A.ndim != 2 or A.shape[1] != 3 or not np.all(np.isin(A, (0.0, 1.0))):
        raise ValueError("annotations must be an (n_items, 3) array of 0/1 labels")
    if anchor not in (0, 1, 2):
        raise ValueError(f"anchor must be 0, 1 or 2, got {anchor!r}")
    order = [anchor] + [j for j in range(3) if j != anchor]
    X = A[:, order]
    q = X.mean(0)
    core = _triple_core(X)
    if core is None:
        return {"a": np.full(3, np.nan), "b": np.full(3, np.nan), "prevalence": np.nan,
                "status": "infeasible_mom",
                "message": "C12 C13 C23 <= 0: the triple is not informative"}
    mu, d1, C12, C13 = core
    v = mu * (1 - mu)
    delta = np.array([d1, C12 / (v * d1), C13 / (v * d1)])
    a = q - mu * delta
    b = a + delta
    back = np.argsort(order)
    a, b = a[back], b[back]
    ok = np.all((a >= 0) & (a <= 1) & (b >= 0) & (b <= 1))
    return {"a": a, "b": b, "prevalence": float(mu),
            "status": "ok" if ok else "infeasible_mom",
            "message": "" if ok else "the moment solution has rates outside [0, 1]"}
