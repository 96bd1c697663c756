"""The constrained generalised method of moments (GMM) for the grouped Hui–Walter model.

Moment conditions from :mod:`noisycal.engines.moments`; the solver is SciPy SLSQP with JAX
gradients under the rate, gap and separation constraints; weights are the identity or the
two-step efficient weight, and Hansen's J tests the over-identifying restrictions.
"""

from __future__ import annotations

import numbers
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from scipy.linalg import block_diag
from scipy.optimize import minimize
from scipy.special import chdtrc  # chi2.sf(x, df) without importing scipy.stats

import jax
import jax.numpy as jnp

from .._util.jax import as_numpy_rng, x64
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_choice, check_int, check_seed
from .moments import grouped_moments, hui_walter_inverse

__all__ = [
    "ACTIVE_TOL",
    "GMM_NOTE",
    "GMMSolution",
    "active_constraints",
    "check_open_unit",
    "efficient_weight",
    "gmm_fit_moments",
    "gmm_objective",
    "j_test",
    "two_step_gmm",
]


#: A GMM constraint counts as active (status ``'boundary'``) when the estimate is within
#: this distance of its limit. SLSQP is an active-set method, so active constraints hold
#: to round-off; the slack only absorbs that (the value is noisycal's choice; the paper
#: gives none).
ACTIVE_TOL = 1e-6


#: A start whose end point violates a constraint by more than this is not a candidate.
_FEASIBILITY_TOL = 1e-9


#: SLSQP's ``ftol`` (it stops when the objective changes by less than this), applied to
#: Q_n divided by the largest eigenvalue of the weight matrix so that both weights are on
#: the identity's scale, where the moments are probabilities. Q_n is a squared residual,
#: so the value is tight: on exact population moments every start then recovers theta to
#: about 1e-8.
_FTOL = 1e-16


GMM_NOTE = ("the optimisation gap epsilon_opt of Eq. D.15 is not certified: the optimiser "
         "stops at a stationary point of the best of several starts, which need not be "
         "the global minimum of Q_n over the constraint set")


def gmm_objective(theta: ArrayLike, moments: ArrayLike, weight_matrix: ArrayLike,
                  n_groups: int) -> jax.Array:
    """GMM objective Q_n(theta) = r' W r with r = moments - Gamma_L(theta) (Definition D.1).

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


def check_open_unit(value: object, name: str) -> float:
    """A real number strictly between 0 and 1, or a ValueError naming ``name``.

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        The argument's name, for the message.

    Returns
    -------
    float
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    out = float(value)
    if not (np.isfinite(out) and 0.0 < out < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return out


def _linear_constraints(n_groups: int, min_gap: float, min_separation: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``C theta >= lb``: the two gaps and the extreme-group separation (Definition D.1)."""
    C = np.zeros((3, n_groups + 4))
    C[0, [0, 1]] = -1.0, 1.0  # b1 - a1 >= min_gap
    C[1, [2, 3]] = -1.0, 1.0  # b2 - a2 >= min_gap
    C[2, [4, n_groups + 3]] = -1.0, 1.0  # mu_L - mu_1 >= min_separation
    return C, np.array([min_gap, min_gap, min_separation])


def _violation(theta: np.ndarray, C: np.ndarray, lb: np.ndarray) -> float:
    """Largest violation of the bounds [0, 1] and of ``C theta >= lb`` (0 if feasible)."""
    return float(max(0.0, np.max(lb - C @ theta), np.max(-theta), np.max(theta - 1.0)))


def _mom_start(moments: np.ndarray, n_groups: int) -> np.ndarray | None:
    """A start from the closed-form inverse on the two extreme groups (Hui & Walter, 1980).

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


def _check_weight(weight_matrix: ArrayLike | None, L: int) -> np.ndarray:
    """W_n as a symmetric positive definite (3L, 3L) array (identity for None)."""
    if weight_matrix is None:
        return np.eye(3 * L)
    W = check_array(weight_matrix, "weight_matrix", ndim=2)
    if W.shape != (3 * L, 3 * L):
        raise ValueError(f"weight_matrix must have shape ({3 * L}, {3 * L}), got {W.shape}")
    if not np.allclose(W, W.T, rtol=1e-10, atol=0.0):
        raise ValueError("weight_matrix must be symmetric")
    W = (W + W.T) / 2
    if not np.linalg.eigvalsh(W).min() > 0:
        raise ValueError("weight_matrix must be positive definite")
    return W


def _starts(m: np.ndarray, L: int, init: ArrayLike | None, n_starts: int, seed: Seed,
            C: np.ndarray, lb: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The starting points of :func:`gmm_fit_moments`, labelled by kind."""
    starts: list[tuple[str, np.ndarray]] = []
    if init is not None:
        x0 = check_array(init, "init", ndim=(1, 2))
        x0 = x0.reshape(-1, x0.shape[-1])
        if x0.shape[1] != L + 4:
            raise ValueError(f"init must have {L + 4} columns for n_groups={L}, got shape "
                             f"{x0.shape}")
        if np.any(x0 < -_FEASIBILITY_TOL) or np.any(x0 > 1 + _FEASIBILITY_TOL):
            raise ValueError("init must lie in [0, 1] (rates and prevalences), got values "
                             f"in [{x0.min():.4g}, {x0.max():.4g}]")
        # only round-off (at most _FEASIBILITY_TOL) is removed here
        starts += [("init", np.clip(x, 0.0, 1.0)) for x in x0]
    rng = as_numpy_rng(seed)
    mom = _mom_start(m, L)
    if mom is not None and _violation(mom, C, lb) == 0.0:
        starts.append(("mom", mom))
    for _ in range(n_starts):
        a, b = rng.uniform(0.01, 0.49, 2), rng.uniform(0.51, 0.99, 2)
        mu = np.sort(rng.uniform(0.05, 0.95, L))
        starts.append(("random", np.concatenate([[a[0], b[0], a[1], b[1]], mu])))
    return starts


def gmm_fit_moments(moments: ArrayLike, n_groups: int, *,
                    weight_matrix: ArrayLike | None = None, min_gap: float = 1e-4,
                    min_separation: float = 1e-5, n_starts: int = 5, seed: Seed = 0,
                    max_iter: int = 500, init: ArrayLike | None = None) -> GMMSolution:
    """Minimise the grouped GMM objective over the constraint set (Definition D.1, Eq. D.15).

    Minimises ``Q_n(theta) = (m - Gamma_L(theta))' W (m - Gamma_L(theta))`` over

    - ``0 <= a_j, b_j <= 1`` and ``0 <= mu_g <= 1`` (bounds);
    - ``b_j - a_j >= min_gap`` for j = 1, 2 (positive orientation, gaps bounded below);
    - ``mu_L - mu_1 >= min_separation`` (the first and last groups are the low- and
      high-score groups: groups must be ordered by score),

    with SLSQP and the exact gradient from JAX (float64 under a scoped x64 context). Starts:
    the given ``init`` points, the closed-form start (the Hui–Walter inverse on the two
    extreme groups) when it is feasible, and ``n_starts`` seeded random starts with
    a_j ~ U(0.01, 0.49), b_j ~ U(0.51, 0.99) and sorted mu_g ~ U(0.05, 0.95). The feasible
    end point with the smallest Q_n is returned.

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
        Extra starting points in [0, 1] (for example a first-step estimate).

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
    W = _check_weight(weight_matrix, L)
    min_gap = check_open_unit(min_gap, "min_gap")
    min_separation = check_open_unit(min_separation, "min_separation")
    n_starts = check_int(n_starts, "n_starts", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    C, lb = _linear_constraints(L, min_gap, min_separation)
    starts = _starts(m, L, init, n_starts, check_seed(seed), C, lb)
    runs, thetas, values = _run_starts(m, W, L, C, lb, [x for _, x in starts], max_iter)
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


def _run_starts(m: np.ndarray, W: np.ndarray, L: int, C: np.ndarray, lb: np.ndarray,
                starts: list[np.ndarray], max_iter: int) -> tuple[list, list, list]:
    """SLSQP from every start; returns the runs, their end points and their Q_n."""
    scale = float(np.linalg.eigvalsh(W).max())
    constraint = {"type": "ineq", "fun": lambda x: C @ x - lb, "jac": lambda x: C}
    runs = []
    with x64():
        jm, jW = jnp.asarray(m), jnp.asarray(W / scale)

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            val, grad = _value_and_grad(jnp.asarray(x), jm, jW, L)
            return float(val), np.asarray(grad, dtype=np.float64)

        for x0 in starts:
            res = minimize(fun, x0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * (L + 4),
                           constraints=[constraint],
                           options={"maxiter": max_iter, "ftol": _FTOL})
            runs.append(res)
        thetas = [np.asarray(r.x, dtype=np.float64) for r in runs]
        values = [float(gmm_objective(jnp.asarray(t), jm, jnp.asarray(W), L)) for t in thetas]
    return runs, thetas, values


def j_test(objective: float, n_groups: int) -> tuple[float, int, float]:
    """Hansen's J test of the over-identifying restrictions of the grouped GMM.

    Parameters
    ----------
    objective : float
        Q_n at the two-step estimate with the efficient weight of :func:`efficient_weight`
        (so scaled, Q_n is the J statistic).
    n_groups : int
        L; the test has 3L - (L + 4) = 2L - 4 degrees of freedom.

    Returns
    -------
    tuple
        ``(J, df, p_value)``; the p-value is the chi-squared(df) upper tail, NaN when
        df = 0 (L = 2 is exactly identified). It is asymptotically valid at an interior
        estimate only.

    Examples
    --------
    >>> j, df, p = j_test(3.0, 4)
    >>> df, round(p, 4)
    (4, 0.5578)
    """
    df = 2 * check_int(n_groups, "n_groups", minimum=2) - 4
    j = float(objective)
    return j, df, float(chdtrc(df, j)) if df > 0 else float("nan")


def two_step_gmm(moments: np.ndarray, cov: np.ndarray, counts: np.ndarray, *, weight: str,
                 **options: Any) -> tuple[GMMSolution, dict]:
    """The grouped GMM estimate with the identity or the two-step efficient weight.

    Parameters
    ----------
    moments : ndarray of shape (3L,)
        Stacked group sample moments (:func:`sample_moments`).
    cov : ndarray of shape (L, 3, 3)
        Covariances of the group mean vectors (:func:`sample_moments`).
    counts : ndarray of shape (L,)
        Group sizes.
    weight : {'identity', 'efficient'}
        ``'efficient'``: a first step with the identity, then W_n from
        :func:`efficient_weight`, restarted from the first-step estimate, and the J test.
    **options
        ``min_gap``, ``min_separation``, ``n_starts``, ``seed``, ``max_iter`` of
        :func:`gmm_fit_moments`.

    Returns
    -------
    tuple
        The final :class:`GMMSolution` and a dict of details (``weight_matrix`` and, for
        the efficient weight, ``first_step``, ``weight_ridge_groups``, ``j_statistic``,
        ``j_df``, ``j_pvalue``).
    """
    check_choice(weight, "weight", ("identity", "efficient"))
    L = len(counts)
    sol = gmm_fit_moments(moments, L, **options)
    if weight == "identity":
        return sol, {"weight_matrix": np.eye(3 * L)}
    W, ridged = efficient_weight(cov, counts)
    first = sol
    sol = gmm_fit_moments(moments, L, weight_matrix=W, init=first.theta, **options)
    j, df, p = j_test(sol.objective, L)
    return sol, {"first_step": {"theta": first.theta, "objective": first.objective,
                                "success": first.success},
                 "weight_matrix": W, "weight_ridge_groups": ridged,
                 "j_statistic": j, "j_df": df, "j_pvalue": p}


def efficient_weight(cov: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Block-diagonal inverse covariance of the moment vector (the two-step weight).

    Group g's block is the inverse of ``Sigma_g = S_g / n_g``, with S_g the plug-in (ddof=0)
    covariance of ``(A1, A2, A1 A2)`` in the group; groups are independent, so the
    covariance of the stacked moments is block diagonal. Sigma_g is singular exactly when
    one of the four (A1, A2) cells is empty in the group; then, and whenever its smallest
    eigenvalue is below 1e-10 times its largest, ``I / n_g^2`` is added before inverting (a
    ridge of the order of the variance of a proportion estimated as 0 from n_g items). The
    regularised groups are returned with the weight.

    Parameters
    ----------
    cov : ndarray of shape (L, 3, 3)
        Covariances of the group mean vectors (:func:`sample_moments`).
    counts : ndarray of shape (L,)
        Group sizes.

    Returns
    -------
    W : ndarray of shape (3L, 3L)
        The weight, so that Q_n at the estimate is Hansen's J statistic.
    ridged : list of int
        Groups whose block needed the ridge.
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


def active_constraints(theta: np.ndarray, min_gap: float, min_separation: float
                       ) -> list[str]:
    """Constraints of the GMM parameter set within ``ACTIVE_TOL`` of their limits.

    Parameters
    ----------
    theta : ndarray of shape (L + 4,)
        ``(a1, b1, a2, b2, mu_1, ..., mu_L)``.
    min_gap : float
        The gap bound the fit used.
    min_separation : float
        The separation bound the fit used.

    Returns
    -------
    list of str
        One description per active constraint (empty at an interior point).
    """
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
