"""Hui–Walter: two binary annotators, two score groups (paper 003, spec section 3.2)."""

from __future__ import annotations

import warnings

import numpy as np

import jax
import jax.numpy as jnp

from ._jax import x64
from ._typing import ArrayLike
from ._validation import check_choice
from ._warnings import IdentifiabilityWarning
from .data import Annotations
from .engines.results import AnnotatorFit

__all__ = ["HuiWalter", "hui_walter_moments", "hui_walter_inverse", "moment_triple"]


def hui_walter_moments(theta: jax.Array) -> jax.Array:
    """Model moments Gamma(theta) of theta = (a1, b1, a2, b2, mu0, mu1) (spec Eq. 13).

    Returns (q_{1,0}, q_{2,0}, q_{12,0}, q_{1,1}, q_{2,1}, q_{12,1}).
    """
    a1, b1, a2, b2, mu0, mu1 = theta
    out = []
    for mu in (mu0, mu1):
        out += [a1 + (b1 - a1) * mu, a2 + (b2 - a2) * mu, (1 - mu) * a1 * a2 + mu * b1 * b2]
    return jnp.stack(out)


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


class HuiWalter:
    """Hui–Walter model: two binary annotators, two groups, shared channels.

    ``fit(annotations, groups=g, method='mom')`` inverts the six group moments in closed
    form. The result is an :class:`~noisycal.engines.results.AnnotatorFit` with
    ``prevalence`` of shape (2, 2) (rows: groups), ``confusion`` (2, 2, 2) and
    weak-identification diagnostics in ``details``: the group mean differences of each
    annotator, and the determinant and smallest singular value of the moment Jacobian
    (computed with ``jax.jacfwd``; the determinant equals
    delta_1^2 delta_2^2 (mu_1 - mu_0)^2). Infeasible inverses are reported with status
    ``'infeasible_mom'``, never as numbers that look fine.

    The gmm method arrives with the paper-003 issue; for more groups or annotators use
    :class:`~noisycal.GroupedDawidSkene`.
    """

    def fit(self, annotations: Annotations | ArrayLike, *, groups: ArrayLike,
            method: str = "mom") -> AnnotatorFit:
        """Fit by the method of moments (see the class docstring)."""
        check_choice(method, "method", ("mom",))
        if isinstance(annotations, Annotations):
            if annotations.n_annotators != 2 or annotations.n_classes != 2:
                raise ValueError("HuiWalter needs exactly 2 annotators and 2 classes, got "
                                 f"{annotations.n_annotators} and {annotations.n_classes}")
            wide = annotations.to_wide(missing=-1)
            if np.any(wide < 0):
                raise ValueError("HuiWalter needs both annotators to rate every item")
            A, items = wide.astype(float), annotations.items
            annotators, classes = annotations.annotators, annotations.classes
        else:
            A = np.asarray(annotations, dtype=np.float64)
            if A.ndim != 2 or A.shape[1] != 2:
                raise ValueError(f"annotations must have shape (n_items, 2), got {A.shape}")
            if not np.all(np.isin(A, (0.0, 1.0))):
                raise ValueError("annotations must be 0/1 labels with no missing values")
            items, annotators, classes = np.arange(A.shape[0]), np.arange(2), np.arange(2)
        g = np.asarray(groups)
        if g.shape != (A.shape[0],):
            raise ValueError(f"groups must have one entry per item ({A.shape[0]}), got shape "
                             f"{g.shape}")
        levels, gi = np.unique(g, return_inverse=True)
        if levels.size != 2:
            raise ValueError(f"groups must contain exactly two groups, got {levels.size}")
        q = []
        for k in (0, 1):
            Ak = A[gi == k]
            q += [Ak[:, 0].mean(), Ak[:, 1].mean(), (Ak[:, 0] * Ak[:, 1]).mean()]
        q = np.asarray(q)
        theta, status, message = hui_walter_inverse(q)
        with x64():
            jac = np.asarray(jax.jacfwd(hui_walter_moments)(jnp.asarray(
                np.nan_to_num(theta, nan=0.5))))
        details = {"moments": q, "group_mean_diff": (q[3] - q[0], q[4] - q[1]),
                   "jacobian_det": float(np.linalg.det(jac)),
                   "jacobian_min_sv": float(np.linalg.svd(jac, compute_uv=False).min()),
                   "groups": levels, "method": "mom"}
        a1, b1, a2, b2, mu0, mu1 = theta
        prev = np.array([[1 - mu0, mu0], [1 - mu1, mu1]])
        conf = np.array([[[1 - a1, a1], [1 - b1, b1]], [[1 - a2, a2], [1 - b2, b2]]])
        if status != "ok":
            warnings.warn(f"Hui-Walter: {message}", IdentifiabilityWarning, stacklevel=2)
            post = np.full((A.shape[0], 2), np.nan)
            loglik = float("nan")
        else:
            lik1 = prev[gi, 1] * np.prod(np.where(A == 1, [b1, b2], [1 - b1, 1 - b2]), 1)
            lik0 = prev[gi, 0] * np.prod(np.where(A == 1, [a1, a2], [1 - a1, 1 - a2]), 1)
            post = np.column_stack([lik0, lik1]) / (lik0 + lik1)[:, None]
            loglik = float(np.sum(np.log(lik0 + lik1)))
        return AnnotatorFit("hui_walter", "mom", np.asarray(classes), np.asarray(annotators),
                            np.asarray(items), prev, conf, post, loglik, 6, status, message,
                            status == "ok", 0, None, details)


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
    D = X - q
    C12, C13, C23 = (D[:, 0] * D[:, 1]).mean(), (D[:, 0] * D[:, 2]).mean(), \
        (D[:, 1] * D[:, 2]).mean()
    T = (D[:, 0] * D[:, 1] * D[:, 2]).mean()
    prod = C12 * C13 * C23
    nan = {"a": np.full(3, np.nan), "b": np.full(3, np.nan), "prevalence": np.nan}
    if not prod > 0:
        return {**nan, "status": "infeasible_mom",
                "message": "C12 C13 C23 <= 0: the triple is not informative"}
    t = np.sign(C12 * C13) * T / np.sqrt(prod)
    mu = (1 - t / np.sqrt(t * t + 4)) / 2
    v = mu * (1 - mu)
    d1 = np.sqrt(C12 * C13 / (C23 * v))
    delta = np.array([d1, C12 / (v * d1), C13 / (v * d1)])
    a = q - mu * delta
    b = a + delta
    back = np.argsort(order)
    a, b = a[back], b[back]
    ok = np.all((a >= 0) & (a <= 1) & (b >= 0) & (b <= 1))
    return {"a": a, "b": b, "prevalence": float(mu),
            "status": "ok" if ok else "infeasible_mom",
            "message": "" if ok else "the moment solution has rates outside [0, 1]"}
