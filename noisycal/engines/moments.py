"""Moment and GMM estimators of binary annotator channels: all Hui–Walter inference.

The user-facing model is :class:`noisycal.annotators.HuiWalter`; this module holds the
estimators it (and the Dawid–Skene moment start) uses, all from "Noisy-Label Calibration
with Multiple Unreliable Labels" and Hui & Walter (1980):

- the Hui–Walter model moments of two annotators in L score groups (Eq. 13) and their
  closed-form inverse for two groups (Eqs. D.3, D.5): :func:`grouped_moments`,
  :func:`hui_walter_moments`, :func:`hui_walter_inverse`, :func:`moment_jacobian`;
- the constrained grouped GMM (Definition D.1, Eq. D.15) with identity or two-step
  efficient weight and Hansen's J test: :func:`gmm_objective`, :func:`gmm_fit_moments`,
  :func:`two_step_gmm`, :func:`sample_moments` (Eq. D.8), :func:`efficient_weight`,
  :func:`j_test`, :func:`active_constraints`;
- the closed-form three-annotator estimator of Proposition D.2: :func:`triple_core`,
  :func:`moment_triple`.

References
----------
S. L. Hui and S. D. Walter (1980), "Estimating the error rates of diagnostic tests",
Biometrics 36(1), 167-171.
"""

from __future__ import annotations

import numbers

import numpy as np

import jax
import jax.numpy as jnp

from .._util.jax import x64
from .._util.types import ArrayLike
from .._util.validation import check_array

__all__ = [
    "grouped_moments",
    "hui_walter_inverse",
    "hui_walter_moments",
    "moment_jacobian",
    "moment_triple",
    "sample_moments",
    "triple_channels",
    "triple_core",
]


def grouped_moments(theta: ArrayLike, n_groups: int) -> jax.Array:
    """Model moments Gamma_L(theta) of the grouped Hui–Walter model.

    Eq. 13 of "Noisy-Label Calibration with Multiple Unreliable Labels", stacked over
    the L groups.

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
    """Model moments Gamma(theta) of theta = (a1, b1, a2, b2, mu0, mu1).

    Eq. 13 of "Noisy-Label Calibration with Multiple Unreliable Labels".

    Returns (q_{1,0}, q_{2,0}, q_{12,0}, q_{1,1}, q_{2,1}, q_{12,1}); the two-group case of
    :func:`grouped_moments`.
    """
    return grouped_moments(theta, 2)


def moment_jacobian(theta: ArrayLike, n_groups: int) -> np.ndarray:
    """The moment Jacobian D Gamma_L(theta) by forward-mode autodiff in float64.

    Parameters
    ----------
    theta : array-like of shape (n_groups + 4,)
        ``(a1, b1, a2, b2, mu_1, ..., mu_L)``.
    n_groups : int
        L.

    Returns
    -------
    ndarray of shape (3 * n_groups, n_groups + 4)
        For L = 2 its determinant is delta_1^2 delta_2^2 (mu_1 - mu_0)^2 (Eq. D.6).
    """
    with x64():
        jac = _moment_jacobian(jnp.asarray(theta, dtype=jnp.float64), n_groups=n_groups)
    return np.asarray(jac)


# one compiled program per number of groups, not every operation of the Jacobian on its own
_moment_jacobian = jax.jit(jax.jacfwd(grouped_moments), static_argnames=("n_groups",))


def hui_walter_inverse(q: np.ndarray) -> tuple[np.ndarray, str, str]:
    """Closed-form inverse H of the moments (Hui & Walter, 1980; Eqs. D.3, D.5).

    Parameters
    ----------
    q : array-like of shape (6,)
        ``(q_{1,0}, q_{2,0}, q_{12,0}, q_{1,1}, q_{2,1}, q_{12,1})``, the moments of two
        groups in the order of :func:`hui_walter_moments`.

    Returns
    -------
    theta : ndarray of shape (6,)
        ``(a1, b1, a2, b2, mu0, mu1)``; NaN when the inverse does not exist.
    status : {'ok', 'infeasible_mom'}
    message : str
        Which validity condition failed (empty when ok).
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


def sample_moments(A: np.ndarray, gi: np.ndarray, n_groups: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group sample moments (Eq. D.8) and the covariance of each group's mean vector.

    Parameters
    ----------
    A : ndarray of shape (n_items, 2)
        0/1 labels of two annotators.
    gi : ndarray of shape (n_items,)
        Group index of each item, 0 to ``n_groups - 1``, every group non-empty.
    n_groups : int
        L.

    Returns
    -------
    moments : ndarray of shape (3L,)
        ``(q_{1,g}, q_{2,g}, q_{12,g})`` stacked over groups.
    cov : ndarray of shape (L, 3, 3)
        Plug-in covariances of ``(A1, A2, A1 A2)`` within each group divided by n_g (the
        covariance of the group mean vector).
    counts : ndarray of shape (L,)
        Group sizes.
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


def triple_core(X: np.ndarray) -> tuple[float, float, float, float] | None:
    """The core of Proposition D.2 (of "Noisy-Label Calibration with Multiple Unreliable
    Labels"): prevalence and the anchor's gap from three annotators' co-moments.

    Parameters
    ----------
    X : ndarray of shape (m, 3)
        0/1 labels of three annotators; the first column is the anchor, whose gap
        b_1 - a_1 is taken positive.

    Returns
    -------
    tuple of float or None
        ``(mu, delta_1, C12, C13)``; None when ``C12 C13 C23 <= 0`` (the triple is not
        informative).
    """
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


def triple_channels(mu: float, d_anchor: float, cov: np.ndarray, q: np.ndarray,
                    anchor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every annotator's channel from the prevalence and the anchor's gap (Proposition D.2
    of "Noisy-Label Calibration with Multiple Unreliable Labels").

    ``delta_j = C_aj / (mu (1 - mu) delta_a)`` (``delta_a`` itself for the anchor),
    ``a_j = q_j - mu delta_j`` and ``b_j = a_j + delta_j``.

    Parameters
    ----------
    mu, d_anchor : float
        Prevalence and the anchor's gap, from :func:`triple_core`.
    cov : ndarray of shape (J,)
        Covariance of every annotator's labels with the anchor's (the anchor's own entry
        is not used).
    q : ndarray of shape (J,)
        Every annotator's mean label.
    anchor : int
        Index of the anchor.

    Returns
    -------
    a, b, delta : ndarray of shape (J,)
        False- and true-positive rates and their gap ``b - a``; not clipped to [0, 1].
    """
    delta = np.asarray(cov, dtype=np.float64) / (mu * (1 - mu) * d_anchor)
    delta[anchor] = d_anchor
    a = q - mu * delta
    return a, a + delta, delta


def moment_triple(annotations: ArrayLike, *, anchor: int = 0) -> dict:
    r"""Closed-form channels from three binary annotators (Proposition D.2).

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
    anchor : {0, 1, 2}, default=0
        The annotator whose gap b - a is taken positive (orientation).

    Returns
    -------
    dict
        ``a``, ``b`` (length 3), ``prevalence`` (mu), ``status`` ('ok' or
        'infeasible_mom') and ``message``.

    Raises
    ------
    ValueError
        If ``annotations`` is not an (n_items, 3) 0/1 array with at least 2 items, or
        ``anchor`` is not 0, 1 or 2.

    References
    ----------
    "Noisy-Label Calibration with Multiple Unreliable Labels", Proposition D.2
    (Eq. D.20: the squared standardised third co-moment depends on mu only).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(20000) < 0.3
    >>> A = np.column_stack([np.where(y, rng.random(20000) < b, rng.random(20000) < a)
    ...                      for a, b in [(0.1, 0.9), (0.2, 0.8), (0.05, 0.7)]]).astype(int)
    >>> fit = moment_triple(A)
    >>> fit["status"], round(fit["prevalence"], 1)
    ('ok', 0.3)
    """
    A = check_array(annotations, "annotations", ndim=2)
    if A.shape[1] != 3 or not np.all(np.isin(A, (0.0, 1.0))):
        raise ValueError("annotations must be an (n_items, 3) array of 0/1 labels, got shape "
                         f"{A.shape}")
    if A.shape[0] < 2:
        raise ValueError(f"annotations must have at least 2 items, got {A.shape[0]}")
    if isinstance(anchor, bool) or not isinstance(anchor, numbers.Integral) \
            or anchor not in (0, 1, 2):
        raise ValueError(f"anchor must be 0, 1 or 2, got {anchor!r}")
    order = [anchor] + [j for j in range(3) if j != anchor]
    X = A[:, order]
    q = X.mean(0)
    core = triple_core(X)
    if core is None:
        return {"a": np.full(3, np.nan), "b": np.full(3, np.nan), "prevalence": np.nan,
                "status": "infeasible_mom",
                "message": "C12 C13 C23 <= 0: the triple is not informative"}
    mu, d1, C12, C13 = core
    a, b, _ = triple_channels(mu, d1, np.array([0.0, C12, C13]), q, 0)
    back = np.argsort(order)
    a, b = a[back], b[back]
    ok = np.all((a >= 0) & (a <= 1) & (b >= 0) & (b <= 1))
    return {"a": a, "b": b, "prevalence": float(mu),
            "status": "ok" if ok else "infeasible_mom",
            "message": "" if ok else "the moment solution has rates outside [0, 1]"}
