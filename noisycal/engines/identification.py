"""Local identification of a fitted annotator model.

It asks: is the information near-singular?

A design can pass every count-based check and still identify some parameters only
weakly (three binary annotators of whom two barely separate the classes identify the
third one's channel only through products of tiny gaps): the likelihood is nearly flat
along a direction, EM stops far from the truth, and bootstrap refits stay near the fit.

The measure is the **relative information**, the smallest generalised eigenvalue ``r``
of ``I_obs v = r I_c v``. ``I_obs`` is the information of the free parameters at the
estimate (the negative Hessian of the log-likelihood for a Dawid–Skene fit, the inverse
of the GMM sandwich covariance for Hui–Walter); ``I_c`` is the complete-data
information, what the same items would carry with their true classes observed. ``1 - r``
is the largest fraction of missing information of Dempster, Laird and Rubin, "Maximum
likelihood from incomplete data via the EM algorithm" (Section 3.2; it is also EM's
rate of convergence), and ``1 / sqrt(r)`` is how many times larger the standard error of
the worst-identified combination of parameters is than with the classes known. ``r`` is
invariant under linear reparametrisation and hardly depends on the number of items, so
it separates a weak *design* from a small sample (which intervals are there to show).

Rule: the fit is ``'weakly_identified'`` when ``r < threshold`` (default
:data:`WEAK_THRESHOLD`, from the simulation ``benchmarks/identification_threshold.py``;
``r <= 0``, a flat or saddle direction, always is). The message names the parameters
loading on the near-null direction (a unit vector in complete-data standard-error
units): the fewest largest entries carrying 90% of its squared norm. A MAP-EM fit is
checked on its likelihood alone: the question is whether the *data* identify it.

Free parameters: each probability row (a group's prevalence, an annotator's confusion
row) contributes its interior entries less one reference entry (the largest), moved
against the reference so that the row keeps summing to 1; a one-coin accuracy, a
Hui–Walter rate and a group prevalence are free when interior. Entries with fewer than
:data:`MIN_COUNT` (one) item or rating expected on a side (``min(p, 1 - p) * N < 1``)
are held fixed. For Dawid–Skene fits a near-null direction carried (80% of its squared
norm) by one parameter within :data:`BOUNDARY_SE` (two) conditional standard errors of
0 or 1 is a boundary effect, not a ridge: with few events a small rate is uncertain
relative to its tiny complete-data variance (in the simulation a false-positive rate
fitted at 0.005 from 240 items gave r = 0.008). That parameter is held fixed and the
check repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse

import jax
import jax.numpy as jnp

from .._util.jax import x64
from .._util.threads import single_thread_blas
from .._util.validation import check_real
from .free_params import MIN_COUNT, channel_flat, channel_from_flat, free_parameters

__all__ = [
    "BOUNDARY_SE",
    "MAX_FREE",
    "MIN_COUNT",
    "NUTS_NOTE",
    "WEAK_THRESHOLD",
    "Identification",
    "check_weak_threshold",
    "dawid_skene_information",
    "free_parameters",
    "dawid_skene_identification",
    "hui_walter_identification",
    "relative_information",
]

#: Default threshold on the relative information ``r`` (see the module docstring).
WEAK_THRESHOLD = 0.005
#: Dawid–Skene fits with more free parameters are not checked (one Hessian-vector
#: product per parameter).
MAX_FREE = 1000
#: Conditional standard errors ``1 / sqrt(I_obs[i, i])`` within which a parameter is close
#: to 0 or 1, and the share of a near-null direction that makes it one parameter's.
BOUNDARY_SE, _SINGLE = 2.0, 0.8
#: The message names the largest entries of the near-null direction (a unit vector in
#: complete-data standard-error units) that together carry this share of its squared norm.
_LOADING = 0.9


class Identification(NamedTuple):
    """The local identification check of one fit.

    Attributes
    ----------
    status, message : str
        ``'ok'`` or ``'weakly_identified'``, and why (empty when ok).
    relative_information : float
        Smallest eigenvalue ``r`` of ``I_c^{-1} I_obs`` (1: the classes might as well be
        observed; 0: a direction of the parameters is not identified at all).
    condition_number : float
        Largest over smallest of those eigenvalues (inf when ``r <= 0``).
    max_se : float
        ``1 / sqrt(smallest eigenvalue of I_obs)``: the standard error of the worst
        unit-norm combination of the free parameters (probability scale; inf when
        ``I_obs`` is not positive definite).
    threshold, names : float and tuple of str
        The threshold the rule used; the free parameters.
    null_direction : ndarray of shape (n_free,)
        The near-null direction in complete-data standard-error units (unit norm).
    loading : tuple of str
        The fewest free parameters, largest first, whose squared entries of
        ``null_direction`` sum to at least 0.9.
    """

    status: str
    message: str
    relative_information: float
    condition_number: float
    max_se: float
    threshold: float
    names: tuple[str, ...]
    null_direction: np.ndarray
    loading: tuple[str, ...]

    def as_details(self) -> dict[str, Any]:
        """The numbers as a plain dict (for a fit's ``details['identification']``)."""
        return {"status": self.status, "relative_information": self.relative_information,
                "condition_number": self.condition_number, "max_se": self.max_se,
                "threshold": self.threshold, "n_free": len(self.names), "loading": self.loading}


def check_weak_threshold(value: object, name: str = "weak_threshold") -> float:
    """A threshold on the relative information: a real number in [0, 1).

    Parameters
    ----------
    value : object
        ``None`` gives :data:`WEAK_THRESHOLD`; 0 switches the rule off except for a
        non-positive-definite information.
    name : str, default='weak_threshold'
        The argument's name, for the message.

    Returns
    -------
    float
    """
    if value is None:
        return WEAK_THRESHOLD
    v = check_real(value, name, minimum=0.0, maximum=1.0)
    if v == 1.0:
        raise ValueError(f"{name} must satisfy 0 <= {name} < 1 (a relative information), "
                         f"got {value!r}")
    return v


def relative_information(info: np.ndarray, complete: np.ndarray, names: list[str], *,
                         threshold: float, what: str = "observed information",
                         covariance: bool = False) -> Identification:
    """The rule of this module on an information (or covariance) and the complete one.

    Parameters
    ----------
    info, complete : ndarray of shape (p, p)
        Observed information of the free parameters (with ``covariance=True`` the
        estimator's covariance, the inverse information) and the complete-data
        information (positive definite).
    names : list of str
        The free parameters.
    threshold : float
        Flag when the relative information is below it.
    what : str, default='observed information'
        What ``info`` is, for the message.
    covariance : bool, default=False
        ``info`` is a covariance matrix.

    Returns
    -------
    Identification
    """
    if not names:
        return Identification("ok", "", 1.0, 1.0, 0.0, threshold, (), np.zeros(0), ())
    with single_thread_blas():
        r, cond, u, max_se = _spectrum((info + info.T) / 2, (complete + complete.T) / 2,
                                       covariance)
    order = np.argsort(-np.abs(u), kind="stable")
    carried = np.cumsum(u[order] ** 2)
    loading = tuple(names[i] for i in order[:int(np.searchsorted(carried, _LOADING)) + 1])
    if r >= threshold and r > 0:
        return Identification("ok", "", r, cond, max_se, threshold, tuple(names), u, loading)
    if r <= 0:
        why = (f"the {what} is not positive definite (smallest relative eigenvalue "
               f"{r:.3g}): the likelihood is flat or curves upward along a direction of the "
               "free parameters")
    else:
        why = (f"the {what} is nearly singular: along one direction of the free "
               f"parameters it is {r:.3g} times the information the items would carry with "
               f"their true classes known (below weak_threshold={threshold:g}), so the "
               f"standard error there is {1 / np.sqrt(r):.3g} times larger")
    message = (f"weakly identified: {why}; the near-null direction loads on "
               f"{', '.join(loading[:6])}{' ...' if len(loading) > 6 else ''}. These "
               "estimates, and intervals built around them, are not to be trusted")
    return Identification("weakly_identified", message, r, cond, max_se, threshold,
                          tuple(names), u, loading)


def _spectrum(info: np.ndarray, complete: np.ndarray, covariance: bool
              ) -> tuple[float, float, np.ndarray, float]:
    """``(r, condition number, near-null direction, max_se)`` of :func:`relative_information`.

    In complete-data standard-error units ``z = d theta`` (``d`` the square roots of the
    diagonal of ``I_c``) ``I_c`` is a correlation matrix ``C = L L'``; the generalised
    eigenproblem is then the ordinary one of ``L^{-1} I_z L^{-T}`` (information) or of
    ``L' V_z L`` (covariance, whose eigenvalues are ``1 / r``).
    """
    d = np.sqrt(np.diag(complete))
    Ls = np.linalg.cholesky(complete / np.outer(d, d))
    if covariance:
        ev, vec = np.linalg.eigh(Ls.T @ (info * np.outer(d, d)) @ Ls)
        r = 1.0 / ev[-1] if ev[-1] > 0 else np.inf
        u = Ls @ vec[:, -1]
        max_se = float(np.sqrt(max(np.linalg.eigvalsh(info)[-1], 0.0)))
    else:
        half = scipy.linalg.solve_triangular(Ls, info / np.outer(d, d), lower=True)
        ev, vec = np.linalg.eigh(scipy.linalg.solve_triangular(Ls, half.T, lower=True))
        r = ev[0]
        u = scipy.linalg.solve_triangular(Ls.T, vec[:, 0], lower=False)
        low = np.linalg.eigvalsh(info)[0]
        max_se = float(1.0 / np.sqrt(low)) if low > 0 else np.inf
    cond = float(ev[-1] / ev[0]) if ev[0] > 0 else np.inf
    u = u / np.linalg.norm(u)
    return float(r), cond, u * np.sign(u[np.argmax(np.abs(u))]), max_se


# ---------------------------------------------------------------------- Dawid–Skene
@partial(jax.jit, static_argnames=("sizes", "one_coin"))
def _hessians(x0: jax.Array, B: jax.Array, post: jax.Array, weights: jax.Array,
              gold: jax.Array | None, arrays: tuple, *, sizes: tuple, one_coin: bool
              ) -> tuple[jax.Array, jax.Array]:
    """Negative Hessians of the log-likelihood and of the complete-data objective.

    The autodiff reference of :func:`_information` (tests/engines/test_first_call.py compares
    the two); a parametrisation whose entries are not affine in one free parameter each
    can fall back to it.
    """
    from noisycal.models.dawid_skene import item_log_likelihood, joint_log_likelihood

    from .em.dawid_skene import join_data

    data = join_data(arrays, sizes)
    L, K, J = data.n_groups, data.n_classes, data.n_annotators
    # entries no free direction touches stay constants (a select, not x0 + 0 * theta:
    # log(0) has an infinite derivative, and 0 * inf is NaN)
    moved = jnp.any(B != 0, axis=1)

    def params(theta: jax.Array) -> dict:
        x = jnp.where(moved, x0 + B @ theta, x0)
        prev = x[:L * K].reshape(L, K)
        conf = channel_from_flat(x[L * K:], one_coin, J, K)
        return {"prevalence": prev, "confusion": conf}

    def loglik(theta: jax.Array) -> jax.Array:
        joint = joint_log_likelihood(params(theta), data)
        return jnp.sum(weights * item_log_likelihood(joint, gold))

    def expected(theta: jax.Array) -> jax.Array:
        return jnp.sum(weights[:, None] * post * joint_log_likelihood(params(theta), data))

    theta0 = jnp.zeros(B.shape[1], dtype=x0.dtype)

    def hessian(f: Callable) -> jax.Array:
        # one Hessian-vector product per free parameter, 16 at a time (bounded memory)
        hvp = lambda v: jax.jvp(jax.grad(f), (theta0,), (v,))[1]  # noqa: E731
        return -jax.lax.map(hvp, jnp.eye(B.shape[1], dtype=x0.dtype), batch_size=16)

    return hessian(loglik), hessian(expected)


def dawid_skene_information(prevalence: np.ndarray, confusion: np.ndarray, data: Any,
                            weights: np.ndarray, gold: np.ndarray | None, *,
                            one_coin: bool, labels: dict[str, list[str]]
                            ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Observed and complete-data information of the free Dawid–Skene parameters.

    Both are negative Hessians at the estimate, computed in closed form with NumPy
    (:func:`_information`, Louis's identity; the same numbers as the autodiff Hessians
    of :func:`_hessians`, ``jax.jvp`` of ``jax.grad``, to round-off, without tracing or
    compiling), in the free parametrisation of the module docstring:
    of the log-likelihood
    :func:`noisycal.models.dawid_skene.log_likelihood` (weighted by pattern counts) and of
    the expected complete-data log-likelihood ``sum_i w_i sum_k post_ik joint_ik`` with
    the posteriors ``post`` held at the estimate (the objective of EM's M-step; its
    Hessian is the complete-data information given the ratings).

    Parameters
    ----------
    prevalence, confusion : ndarray of shape (L, K) and (J, K, K)
    data : DSData
        One row per rating pattern (float64 context).
    weights : ndarray of shape (n_patterns,)
        Items per pattern.
    gold : int ndarray of shape (n_patterns,) or None
        Known class of each pattern, ``-1`` where unknown.
    one_coin : bool or {'class_conditional', 'mace'}
        Parameters are the prevalence rows and the constrained channel's coordinates
        (:func:`~noisycal.engines.free_params.channel_flat`; True: one-coin).
    labels : dict
        Names of the ``'prevalence'``, ``'confusion'`` and ``'accuracy'`` entries.

    Returns
    -------
    info, complete : ndarray of shape (p, p)
    names : list of str
    room : ndarray of shape (p,)
        How far each free parameter can move before an entry reaches 0 or 1.
        (None instead of the tuple when p exceeds :data:`MAX_FREE`.)
    """
    post, B, names, _ = free_parameters(prevalence, confusion, data, weights, gold,
                                        one_coin=one_coin, labels=labels)
    if len(names) > MAX_FREE:
        return None
    w = np.asarray(weights, dtype=np.float64)
    x0 = np.concatenate([prevalence.ravel(), channel_flat(confusion, one_coin)])
    room = np.where(B != 0, x0[:, None], np.inf).min(0)  # to the nearer of 0 and 1
    room = np.where((B != 0).sum(0) == 1, np.minimum(room, 1 - room), room)
    if one_coin in ("class_conditional", "mace"):
        # entries not affine in one free parameter each (MACE's products, the
        # class-conditional errors): the autodiff Hessians
        from .em.dawid_skene import bucketed, split_data

        with x64():
            # rows of weight 0 up to a bucketed size: new data of a similar size reuse
            # the compiled Hessians (the numbers are the unpadded ones)
            data, jpost, jgold, jw = bucketed(data, post, gold, w)
            arrays, sizes = split_data(data)
            info, complete = _hessians(jnp.asarray(x0), jnp.asarray(B), jnp.asarray(jpost),
                                       jnp.asarray(jw),
                                       None if jgold is None else jnp.asarray(jgold),
                                       arrays, sizes=sizes, one_coin=one_coin)
        return np.asarray(info), np.asarray(complete), names, room
    with single_thread_blas():
        info, complete = _information(x0, B, post, w, data, one_coin=one_coin)
    return info, complete, names, room


def _information(x0: np.ndarray, B: np.ndarray, post: np.ndarray, w: np.ndarray, data: Any,
                 *, one_coin: bool) -> tuple[np.ndarray, np.ndarray]:
    """The two negative Hessians of :func:`_hessians`, in closed form with NumPy.

    Each entry of the flat parameters ``x`` (prevalences, then confusion entries or
    one-coin accuracies) enters ``joint[i, k]`` through ``log f(x_m)`` with ``f`` affine
    (``x``, or ``(1 - x) / (K - 1)`` for a one-coin error), so with ``g_ik`` the gradient
    of ``joint[i, k]`` in the free parameters and ``A = sum_i w_i sum_k post_ik (-d2
    joint_ik)`` (a diagonal in ``x`` mapped through ``B``):

    * complete-data information ``I_c = A``;
    * observed information ``I_obs = A - sum_i w_i Cov_{post_i}(g_i)`` (Louis's
      identity: the complete information less the missing one; an item with a known
      class has a one-hot posterior and no missing part).

    No tracing or compilation: the same numbers as the traced Hessians to round-off
    (tests/engines/test_first_call.py), at a fraction of a first call's time.
    """
    L, K = data.n_groups, data.n_classes
    item, ann, lab = (np.asarray(a) for a in (data.item, data.annotator, data.label))
    group = np.asarray(data.group)
    n, nx = post.shape[0], x0.size
    wp = w[:, None] * post                                    # (n, K)
    moved = np.any(B != 0, axis=1)  # the other entries are constants (no derivative)
    safe = np.where(moved, x0, 0.5)
    # prevalence entries: log x[g K + k]
    prev_idx = group[:, None] * K + np.arange(K)              # (n, K)
    d1p = np.where(moved[prev_idx], 1.0 / safe[prev_idx], 0.0)  # d log f / dx
    curv = np.zeros(nx)                                       # diagonal of A in x
    np.add.at(curv, prev_idx.ravel(), (wp * d1p ** 2).ravel())
    # rating r of item i, for class k: log conf[j_r, k, l_r]
    wr = wp[item]                                             # (n_ratings, K)
    if one_coin:
        idx = np.broadcast_to((L * K + ann)[:, None], wr.shape)
        acc = safe[idx]
        right = np.arange(K)[None, :] == lab[:, None]
        d1 = np.where(right, 1.0 / acc, -1.0 / (1.0 - acc))
    else:
        idx = L * K + ann[:, None] * K * K + np.arange(K)[None, :] * K + lab[:, None]
        d1 = 1.0 / safe[idx]
    d1 = np.where(moved[idx], d1, 0.0)
    np.add.at(curv, idx.ravel(), (wr * d1 ** 2).ravel())
    complete = B.T @ (curv[:, None] * B)
    # the gradient of joint[i, k] in x, row i K + k: one prevalence entry and one entry
    # per rating of item i (sparse; repeated entries add up), centred at its posterior
    # mean over k; the missing information is B' R' R B with R's rows weighted by
    # sqrt(w_i post_ik): the products over the rows stay sparse (a few entries per row
    # where B's columns are dense), then one (x, x) matrix meets B
    ik = np.arange(n * K).reshape(n, K)
    Gx = scipy.sparse.csr_matrix(
        (np.concatenate([d1p.ravel(), d1.ravel()]),
         (np.concatenate([ik.ravel(), ik[item].ravel()]),
          np.concatenate([prev_idx.ravel(), idx.ravel()]))), shape=(n * K, nx))
    mean = scipy.sparse.csr_matrix((post.ravel(), (np.repeat(np.arange(n), K), ik.ravel())),
                                   shape=(n, n * K)) @ Gx   # (n, x)
    R = scipy.sparse.diags(np.sqrt(wp).ravel()) @ (Gx - mean[np.repeat(np.arange(n), K)])
    missing = (R.T @ R).toarray()
    return complete - B.T @ missing @ B, complete


def dawid_skene_identification(ann: Any, prevalence: np.ndarray, confusion: np.ndarray, *,
                               group: np.ndarray | None = None, gold: np.ndarray | None = None,
                               one_coin: bool = False,
                               threshold: float = WEAK_THRESHOLD) -> Identification | str:
    """Local identification of a Dawid–Skene family fit at its point estimate.

    Parameters
    ----------
    ann : Annotations
        The fitted ratings.
    prevalence, confusion : ndarray of shape (L, K) and (J, K, K)
        The fit's group prevalences and ``confusion[j, true, observed]``.
    group : int ndarray of shape (n_items,), optional
        Group codes 0..L-1 (grouped model).
    gold : int ndarray of shape (n_items,), optional
        Known classes, ``-1`` where unknown.
    one_coin : bool or {'class_conditional', 'mace'}, default=False
        A constrained channel: one-coin (True), class-conditional or MACE.
    threshold : float, default=WEAK_THRESHOLD
        Flag when the relative information is below it.

    Returns
    -------
    Identification
    """
    from .em.dawid_skene import pattern_data

    prevalence = np.asarray(prevalence, dtype=np.float64)
    confusion = np.asarray(confusion, dtype=np.float64)
    L, K = prevalence.shape
    J = confusion.shape[0]
    cls = [str(c) for c in np.asarray(ann.classes).tolist()]
    who = [str(a) for a in np.asarray(ann.annotators).tolist()]
    labels = {"prevalence": [f"prevalence[{g}, {c}]" if L > 1 else f"prevalence[{c}]"
                             for g in range(L) for c in cls],
              "confusion": [f"confusion[{a}, {t}, {o}]" for a in who for t in cls
                            for o in cls],
              "accuracy": [f"accuracy[{a}]" for a in who],
              "class_accuracy": [f"accuracy[{a}, {c}]" for a in who for c in cls],
              "spam": [f"spam[{a}]" for a in who],
              "strategy": [f"strategy[{a}, {c}]" for a in who for c in cls]}
    arr = ann.engine_arrays()
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                           n_annotators=J, n_classes=K, group=group, n_groups=L, gold=gold)
    out = dawid_skene_information(prevalence, confusion, pd_.data, pd_.counts, pd_.gold,
                                  one_coin=one_coin, labels=labels)
    if out is None:
        return f"not checked: more than MAX_FREE={MAX_FREE} free parameters"
    info, complete, names, room = out
    close = room * np.sqrt(np.clip(np.diag(info), 0.0, None)) < BOUNDARY_SE
    keep = np.ones(len(names), bool)
    while True:
        idx = np.flatnonzero(keep)
        ident = relative_information(info[np.ix_(idx, idx)], complete[np.ix_(idx, idx)],
                                     [names[i] for i in idx], threshold=threshold)
        top = int(np.argmax(np.abs(ident.null_direction))) if idx.size else -1
        if top < 0 or ident.null_direction[top] ** 2 < _SINGLE or not close[idx[top]]:
            return ident
        keep[idx[top]] = False


# ---------------------------------------------------------------------- Hui–Walter
def hui_walter_identification(theta: np.ndarray, jacobian: np.ndarray,
                              weight_matrix: np.ndarray, moment_cov: np.ndarray,
                              counts: np.ndarray, *, annotators: list[str],
                              threshold: float = WEAK_THRESHOLD) -> Identification:
    """Local identification of a Hui–Walter moment (or GMM) fit from its moment Jacobian.

    The estimator's covariance is the GMM sandwich
    ``V = (G' W G)^{-1} G' W S W G (G' W G)^{-1}`` with ``G`` the moment Jacobian at the
    estimate, ``W`` the weight and ``S`` the block-diagonal covariance of the group
    moment vectors; the complete-data information is that of binomial rates with the
    classes observed: ``n0 / (a_j (1 - a_j))`` for a false-positive rate (``n0`` the
    expected items of class 0), ``n1 / (b_j (1 - b_j))`` for a true-positive rate and
    ``n_g / (mu_g (1 - mu_g))`` for a group prevalence. Parameters at 0 or 1 are held
    fixed (their columns of ``G`` are dropped). When ``G' W G`` is singular the relative
    information is 0.

    Parameters
    ----------
    theta : ndarray of shape (L + 4,)
        ``(a1, b1, a2, b2, mu_1, ..., mu_L)``.
    jacobian, weight_matrix : ndarray of shape (3L, L + 4) and (3L, 3L)
        The moment Jacobian at ``theta`` and the GMM weight.
    moment_cov, counts : ndarray of shape (L, 3, 3) and (L,)
        Covariance of each group's moment vector (divided by n_g) and the group sizes.
    annotators : list of str
        The two annotators' names.
    threshold : float, default=WEAK_THRESHOLD

    Returns
    -------
    Identification
    """
    theta = np.asarray(theta, dtype=np.float64)
    n1 = float(np.sum(counts * theta[4:]))
    n0 = float(np.sum(counts)) - n1
    names = [f"{r}[{a}]" for a in annotators for r in "ab"]
    names += [f"mu[{g}]" for g in range(theta.size - 4)]
    exposure = np.array([n0, n1, n0, n1, *counts], dtype=np.float64)
    idx = np.flatnonzero(np.minimum(theta, 1 - theta) * exposure >= MIN_COUNT)
    names = [names[i] for i in idx]
    complete = np.diag(exposure[idx] / (theta[idx] * (1 - theta[idx])))
    G = np.asarray(jacobian, dtype=np.float64)[:, idx]
    W = np.asarray(weight_matrix, dtype=np.float64)
    S = scipy.linalg.block_diag(*moment_cov)
    bread = G.T @ W @ G
    ev = np.linalg.eigvalsh(bread) if idx.size else np.ones(1)
    what = "moment Jacobian's information"
    if idx.size and not ev[0] > 1e-12 * ev[-1]:
        # the moments do not move along a direction of theta: the efficient GMM
        # information G' S^+ G is singular too (r = 0 up to round-off)
        return relative_information(G.T @ np.linalg.pinv(S) @ G, complete, names,
                                    threshold=threshold, what=what)
    inv = np.linalg.inv(bread) if idx.size else np.zeros((0, 0))
    V = inv @ G.T @ W @ S @ W @ G @ inv
    return relative_information(V, complete, names, threshold=threshold, what=what,
                                covariance=True)


#: Why NUTS fits are not checked (``details['identification']`` of a NUTS fit).
NUTS_NOTE = ("not checked for NUTS fits: the posterior mean is not a maximum of the "
             "likelihood, so the Hessian there is no information matrix; a weakly "
             "identified direction shows instead as posterior draws that stay as wide as "
             "the prior along it")
