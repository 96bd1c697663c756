"""EM for the classifier-informed Dawid–Skene model (class prior from a fixed classifier).

Raykar et al. (2010), "Learning From Crowds", with the classifier held fixed: item i's
prior over the true class is ``softmax(scale * z_i + bias)``
(:func:`models.classifier_informed.class_log_prior`). EM alternates

- E-step: ``post[i, k] ∝ prior_i(k) * prod over item i's ratings of
  confusion[j, k, label]`` (:func:`models.classifier_informed.joint_log_likelihood`);
- M-step: the channels in closed form, the Dawid–Skene M-step with its prior convention
  (:func:`noisycal.engines.em.dawid_skene.m_step`: MAP pseudo-counts ``beta - 1``), and
  ``(scale, bias)`` by maximising ``sum_i sum_k post[i, k] log softmax(scale z_i +
  bias)_k`` (damped Newton in float64 on ``scale`` and ``bias[1:]``, ``bias[0] = 0``:
  the objective is concave in them; the bias is reported centred).

Each iteration raises the marginal log-likelihood (the prior's M-step only accepts
steps that raise its concave objective, started at the previous values); EM stops when
the mean log-likelihood per item (plus the mean log prior
of the channels for MAP-EM) changes by less than ``tol``.

Weighted EM (:func:`run_ci_em`) weights each item's log-likelihood: the channels'
expected counts and the prior's Newton objective sum over the items with their weights.
:func:`ci_weighted_refits` runs it under each row of item weights in one compiled
``lax.map``, started from the fit (behind
:meth:`noisycal.annotators.ClassifierInformedFit.refit`, which the refit NC-ECE calls).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from noisycal.models.classifier_informed import class_log_prior, joint_log_likelihood
from noisycal.models.dawid_skene import DSData, class_log_likelihood

from ..._util.progress import ProgressBar, tick
from .dawid_skene import join_data, log_prior, m_step, split_data

__all__ = ["CIState", "ci_e_step", "ci_posterior", "prior_m_step", "fit_ci_em",
           "ci_score_information", "run_ci_em", "ci_weighted_refits"]


class CIState(NamedTuple):
    """The end point of one EM run.

    Attributes
    ----------
    post : ndarray of shape (n_items, K)
        Item posteriors at the returned parameters.
    scale : float
    bias : ndarray of shape (K,)
        Centred (mean 0).
    confusion : ndarray of shape (J, K, K)
    loglik : float
        Marginal log-likelihood of the ratings given the scores.
    objective : float
        ``(loglik + log prior of the channels) / n_items``.
    n_iter : int
    converged : bool
    """

    post: np.ndarray
    scale: float
    bias: np.ndarray
    confusion: np.ndarray
    loglik: float
    objective: float
    n_iter: int
    converged: bool


@partial(jax.jit, static_argnames=("sizes",))
def _e_step(scale: jax.Array, bias: jax.Array, confusion: jax.Array, arrays: tuple,
            scores: jax.Array, *, sizes: tuple) -> tuple[jax.Array, jax.Array]:
    data = join_data(arrays, sizes)
    joint = joint_log_likelihood({"scale": scale, "bias": bias, "confusion": confusion},
                                 data, scores)
    return _normalise(joint)


def _normalise(joint: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The E-step's end: ``joint`` (n_items, K) normalised per item, and the sum of the
    items' log normalisers (the marginal log-likelihood)."""
    lse = jax.nn.logsumexp(joint, axis=1)
    return jnp.exp(joint - lse[:, None]), jnp.sum(lse)


@partial(jax.jit, static_argnames=("sizes",))
def _posterior(log_prior: jax.Array, confusion: jax.Array, arrays: tuple, *, sizes: tuple
               ) -> tuple[jax.Array, jax.Array]:
    data = join_data(arrays, sizes)
    return _normalise(log_prior + class_log_likelihood({"confusion": confusion}, data))


@partial(jax.jit, static_argnames=("sizes",))
def _channels(post: jax.Array, arrays: tuple, beta: jax.Array | None, *, sizes: tuple
              ) -> jax.Array:
    # the Dawid-Skene M-step (its prevalence is not a parameter of this model)
    return m_step(post, join_data(arrays, sizes), None, beta, False)[1]


def ci_e_step(scale: float, bias: Any, confusion: Any, data: DSData, scores: Any
              ) -> tuple[jax.Array, jax.Array]:
    """Item posteriors (n_items, K) and the marginal log-likelihood.

    Parameters
    ----------
    scale : float
    bias : array of shape (K,)
    confusion : array of shape (J, K, K)
    data : DSData
    scores : array of shape (n_items, K)
    """
    arrays, sizes = split_data(data)
    return _e_step(jnp.asarray(scale), jnp.asarray(bias), jnp.asarray(confusion), arrays,
                   jnp.asarray(scores), sizes=sizes)


def ci_posterior(log_prior: Any, confusion: Any, data: DSData
                 ) -> tuple[jax.Array, jax.Array]:
    """The E-step given each item's log prior: item posteriors (n_items, K) and the
    marginal log-likelihood (for a fit's ``predict``: its fitted ``item_prior``, which for
    a NUTS fit is averaged over the draws and so is no ``softmax(scale z + bias)``).

    Parameters
    ----------
    log_prior : array of shape (n_items, K)
        ``log prior_i(k)``, rows as the items of ``data``.
    confusion : array of shape (J, K, K)
    data : DSData
    """
    arrays, sizes = split_data(data)
    return _posterior(jnp.asarray(log_prior), jnp.asarray(confusion), arrays, sizes=sizes)


def _prior_objective(theta: jax.Array, scores: jax.Array, post: jax.Array,
                     total: Any = None) -> jax.Array:
    """Mean ``sum_k post[i, k] log softmax(scale z_i + bias)_k`` at ``theta = (scale,
    bias[1:])`` (``bias[0] = 0``): concave, being linear in ``theta`` inside the log
    softmax. Weighted EM passes the posteriors times the item weights and the weights'
    ``total`` (default ``n_items``): with weights all one, the same number bit for bit."""
    bias = jnp.concatenate([jnp.zeros(1, theta.dtype), theta[1:]])
    lp = class_log_prior({"scale": theta[0], "bias": bias}, scores)
    return jnp.sum(post * lp) / (scores.shape[0] if total is None else total)


def _prior_derivatives(theta: jax.Array, scores: jax.Array, post: jax.Array,
                       total: Any) -> tuple[jax.Array, jax.Array]:
    """The gradient and Hessian of :func:`_prior_objective` in closed form.

    With ``x_ik = (z_ik, [k = 1], ..., [k = K-1])`` the derivative of ``scale z_ik +
    bias_k`` in ``theta``, ``pi_i`` the prior and ``W_i = sum_k post[i, k]``: the gradient
    is ``sum_ik (post[i, k] - W_i pi_ik) x_ik / total`` and the Hessian ``-sum_i W_i
    Cov_{pi_i}(x_i) / total`` (the same numbers as autodiff to rounding; far less to
    compile inside the refit loop).
    """
    bias = jnp.concatenate([jnp.zeros(1, theta.dtype), theta[1:]])
    pi = jnp.exp(class_log_prior({"scale": theta[0], "bias": bias}, scores))
    W = jnp.sum(post, axis=1)
    resid = post - W[:, None] * pi                                   # (n, K)
    g = jnp.concatenate([jnp.sum(resid * scores)[None], jnp.sum(resid, axis=0)[1:]])
    # x_i's mean and second moment under pi_i, in the blocks (scale, bias[1:])
    mz = jnp.sum(pi * scores, axis=1)                                # (n,)
    ezz = jnp.sum(W * (jnp.sum(pi * scores ** 2, axis=1) - mz ** 2))
    ezb = jnp.sum(W[:, None] * pi * (scores - mz[:, None]), axis=0)[1:]
    ebb = jnp.diag(jnp.sum(W[:, None] * pi, axis=0)[1:]) \
        - jnp.einsum("i,ik,il->kl", W, pi[:, 1:], pi[:, 1:])
    H = jnp.concatenate([jnp.concatenate([ezz[None], ezb])[None],
                         jnp.concatenate([ezb[:, None], ebb], axis=1)], axis=0)
    return g / total, -H / total


def _newton_steps(theta: jax.Array, scores: jax.Array, post: jax.Array, total: Any,
                  n_steps: int, closed_form: bool = False) -> tuple[jax.Array, jax.Array]:
    """:data:`NEWTON_STEPS` damped Newton steps of the prior's M-step (``post`` and
    ``total`` as :func:`_prior_objective` takes them; ``closed_form``: the derivatives of
    :func:`_prior_derivatives` rather than autodiff's, as the refit loop takes them)."""
    grad = jax.grad(_prior_objective)
    hess = jax.hessian(_prior_objective)

    def derivatives(th: jax.Array) -> tuple[jax.Array, jax.Array]:
        if closed_form:
            return _prior_derivatives(th, scores, post, total)
        return grad(th, scores, post, total), hess(th, scores, post, total)

    def step(_: int, carry: tuple) -> tuple:
        th, _ = carry
        g, H = derivatives(th)
        d = -jnp.linalg.solve(H - 1e-12 * jnp.eye(H.shape[0]), g)  # H is negative definite
        f0 = _prior_objective(th, scores, post, total)

        def worse(t: jax.Array) -> jax.Array:  # halve while off scale > 0 or not better
            new = th + t * d
            return (t > 1e-10) & ((new[0] <= 0) | ~(_prior_objective(new, scores, post,
                                                                     total) >= f0))

        t = jax.lax.while_loop(worse, lambda t: t / 2, jnp.asarray(1.0, th.dtype))
        new = jnp.where(t > 1e-10, th + t * d, th)
        return new, jnp.max(jnp.abs(g))

    return jax.lax.fori_loop(0, n_steps, step, (theta, jnp.asarray(jnp.inf, theta.dtype)))


@partial(jax.jit, static_argnames=("n_steps",))
def _newton(theta: jax.Array, scores: jax.Array, post: jax.Array, *, n_steps: int
            ) -> tuple[jax.Array, jax.Array]:
    return _newton_steps(theta, scores, post, None, n_steps)


#: Newton steps of the prior's M-step per EM iteration (from the previous values; the
#: objective is concave, so a few steps reach it to machine precision).
NEWTON_STEPS = 8


def prior_m_step(scale: float, bias: np.ndarray, scores: Any, post: Any
                 ) -> tuple[float, np.ndarray, float]:
    """``(scale, bias)`` maximising ``sum_i sum_k post[i, k] log softmax(scale z_i + bias)_k``.

    Damped Newton steps (:data:`NEWTON_STEPS`, float64, jitted) on ``(scale, bias[1:] -
    bias[0])`` from the given values: the objective is concave in them, each step is
    halved until it improves the objective and keeps ``scale > 0``.

    Parameters
    ----------
    scale : float
        The start (> 0).
    bias : array of shape (K,)
        The start.
    scores : array of shape (n_items, K)
    post : array of shape (n_items, K)

    Returns
    -------
    scale, bias (centred), the largest gradient entry at the last step's start
    """
    b = np.asarray(bias, np.float64)
    theta0 = jnp.asarray(np.concatenate([[scale], b[1:] - b[0]]))
    theta, gmax = _newton(theta0, jnp.asarray(scores), jnp.asarray(post),
                          n_steps=NEWTON_STEPS)
    theta = np.asarray(theta)
    bias = np.concatenate([[0.0], theta[1:]])
    return float(theta[0]), bias - bias.mean(), float(gmax)


def fit_ci_em(post0: np.ndarray, data: DSData, scores: np.ndarray, beta: np.ndarray | None,
              *, max_iter: int, tol: float, progress: bool = False) -> CIState:
    """EM from initial item posteriors (one start), in float64 (call it under ``x64``).

    Parameters
    ----------
    post0 : ndarray of shape (n_items, K)
    data : DSData
    scores : ndarray of shape (n_items, K)
        The classifier's log-probabilities.
    beta : ndarray of shape (K, K) or (J, K, K), optional
        Dirichlet prior of the confusion rows (MAP-EM), as for Dawid–Skene.
    max_iter : int
    tol : float
    progress : bool, default=False
        A bar of EM iterations (up to ``max_iter``) on stderr.

    Returns
    -------
    CIState
    """
    n, K = scores.shape
    bj = None if beta is None else jnp.asarray(beta)
    post = jnp.asarray(post0)
    arrays, sizes = split_data(data)
    scale, bias = 1.0, np.zeros(K)
    objective, loglik, converged, it = -np.inf, -np.inf, False, 0
    with ProgressBar(max_iter, "EM iterations", enabled=progress) as bar:
        for it in range(1, max_iter + 1):  # noqa: B007 - the count is returned
            bar.update()
            conf = _channels(post, arrays, bj, sizes=sizes)
            scale, bias, _ = prior_m_step(scale, bias, scores, post)
            post, ll = ci_e_step(scale, bias, conf, data, scores)
            loglik = float(ll)
            lp = (0.0 if bj is None
                  else float(log_prior(jnp.ones((1, K)), conf, None, bj, False)))
            new = (loglik + lp) / n
            converged = bool(abs(new - objective) < tol)
            objective = new
            if converged or not np.isfinite(new):
                break
    return CIState(np.asarray(post), scale, bias, np.asarray(conf), loglik, objective, it,
                   converged)


class _Loop(NamedTuple):
    """The carry of :func:`run_ci_em` (JAX scalars and arrays)."""

    post: jax.Array
    scale: jax.Array
    bias: jax.Array
    confusion: jax.Array
    loglik: jax.Array
    objective: jax.Array
    n_iter: jax.Array
    converged: jax.Array


def run_ci_em(post0: jax.Array, scale0: jax.Array, bias0: jax.Array, data: DSData,
              scores: jax.Array, beta: jax.Array | None, weights: jax.Array, *,
              max_iter: int, tol: float) -> _Loop:
    """Weighted EM from item posteriors and a start of the prior, in one ``lax.while_loop``.

    The iteration of :func:`fit_ci_em` with each item's log-likelihood weighted: the
    channels' expected counts are ``sum_i w_i post[i, k]`` over the ratings, the prior's
    Newton steps maximise ``sum_i w_i sum_k post[i, k] log softmax(scale z_i + bias)_k``
    (started from the previous values, as there), and the objective is ``(sum_i w_i l_i
    + log prior of the channels) / sum_i w_i``. Items of weight 0 drop out (their
    log-likelihood is not evaluated into the sum). With ``weights`` all one and the start
    of :func:`fit_ci_em` (``scale0 = 1``, ``bias0 = 0``) it takes the same steps: the same
    end point to rounding (tests/annotators/test_classifier_informed_refit.py). Pure
    JAX, so callers vmap or ``lax.map`` it; call it under ``x64``.

    Parameters
    ----------
    post0 : array of shape (n_items, K)
        The start (the fitted posteriors, for a refit that keeps the fit's labelling).
    scale0 : scalar
        The prior's scale where its first Newton steps start (> 0).
    bias0 : array of shape (K,)
        The prior's bias there (centred or not).
    data : DSData
        One row per item.
    scores : array of shape (n_items, K)
        The classifier's log-probabilities.
    beta : array of shape (K, K) or (J, K, K), optional
        Dirichlet prior of the confusion rows (MAP-EM), as for Dawid–Skene.
    weights : array of shape (n_items,)
        Non-negative item weights with a positive sum.
    max_iter : int
        At most this many iterations (at least one runs).
    tol : float
        Convergence tolerance on the objective.

    Returns
    -------
    _Loop
        ``post``, ``scale``, ``bias`` (centred), ``confusion``, ``loglik`` (the weighted
        marginal log-likelihood), ``objective``, ``n_iter``, ``converged``.
    """
    K, J = data.n_classes, data.n_annotators
    n = jnp.sum(weights)

    def step(st: _Loop) -> _Loop:
        conf = m_step(st.post, data, None, beta, False, weights)[1]
        theta0 = jnp.concatenate([st.scale[None], st.bias[1:] - st.bias[0]])
        theta, _ = _newton_steps(theta0, scores, st.post * weights[:, None], n,
                                 NEWTON_STEPS, closed_form=True)
        bias = jnp.concatenate([jnp.zeros(1, theta.dtype), theta[1:]])
        bias = bias - jnp.mean(bias)
        joint = joint_log_likelihood({"scale": theta[0], "bias": bias, "confusion": conf},
                                     data, scores)
        lse = jax.nn.logsumexp(joint, axis=1)
        post = jnp.exp(joint - lse[:, None])
        loglik = jnp.sum(jnp.where(weights > 0, weights * lse, 0.0))
        lp = 0.0 if beta is None else log_prior(jnp.ones((1, K)), conf, None, beta, False)
        obj = (loglik + lp) / n
        return _Loop(post, theta[0], bias, conf, loglik, obj, st.n_iter + 1,
                     jnp.abs(obj - st.objective) < tol)

    def cond(st: _Loop) -> jax.Array:
        return (st.n_iter < max_iter) & ~st.converged & jnp.isfinite(st.objective)

    dt = post0.dtype
    init = _Loop(post0, jnp.asarray(scale0, dt), jnp.asarray(bias0, dt),
                 jnp.full((J, K, K), 1.0 / K, dt), jnp.asarray(-jnp.inf, dt),
                 jnp.asarray(-jnp.inf, dt), jnp.asarray(0), jnp.asarray(False))
    # the first step always runs (objective -inf is not finite, so bypass cond once)
    return jax.lax.while_loop(cond, step, step(init))


@partial(jax.jit, static_argnames=("sizes", "max_iter", "tol", "draw", "statistic",
                                   "progress"))
def _ci_refits(weights: jax.Array, post0: jax.Array, scale0: jax.Array, bias0: jax.Array,
               arrays: tuple, scores: jax.Array, beta: jax.Array | None, args: Any, *,
               sizes: tuple, max_iter: int, tol: float, draw: Callable[..., Any] | None,
               statistic: Callable[..., Any] | None, progress: bool) -> tuple:
    data = join_data(arrays, sizes)

    def one(x: jax.Array) -> tuple:
        w = x if draw is None else draw(x, args)
        st = run_ci_em(post0, scale0, bias0, data, scores, beta, w, max_iter=max_iter,
                       tol=tol)
        if progress:
            tick(st.n_iter)
        # the prevalence-equivalent of the weighted items: their mean prior
        prior = jnp.exp(class_log_prior({"scale": st.scale, "bias": st.bias}, scores))
        mu = jnp.sum(w[:, None] * prior, axis=0) / jnp.sum(w)
        stat = None if statistic is None else statistic(w, st.confusion, mu, args)
        return (stat, st.converged, st.confusion, st.n_iter, mu, mu[None], st.scale,
                st.bias)

    return jax.lax.map(one, weights)


def ci_weighted_refits(weights: Any, post0: Any, scale0: float, bias0: Any, data: DSData,
                       scores: Any, beta: Any, *, max_iter: int, tol: float,
                       draw: Callable[..., Any] | None = None,
                       statistic: Callable[..., Any] | None = None, args: Any = (),
                       progress: bool = False) -> tuple:
    """Weighted EM (:func:`run_ci_em`) under each row of item weights, in one compiled
    ``lax.map`` over the rows (each refit's own ``while_loop`` inside).

    The classifier-informed counterpart of
    :func:`noisycal.engines.em.resample.weighted_refits`: every item is its own row (the
    priors differ from item to item), and the prevalence handed to ``statistic`` is the
    prevalence-equivalent of the replicate, the weighted mean of the refitted priors
    ``sum_i w_i softmax(scale z_i + bias) / sum_i w_i``.

    Parameters
    ----------
    weights : (B, n_items), or (B, ...) inputs of ``draw``
        Item weights of each replicate, or what ``draw`` makes them from.
    post0 : (n_items, K)
        Start (the fitted posteriors, so each refit keeps the fit's labelling).
    scale0 : float
        The fitted scale (where the prior's Newton steps start).
    bias0 : (K,)
        The fitted bias.
    data : DSData
        One row per item.
    scores : (n_items, K)
        The classifier's log-probabilities.
    beta : optional
        Dirichlet prior of the confusion rows.
    max_iter, tol
        As in :func:`fit_ci_em`.
    draw : callable, optional
        ``draw(x, args) -> (n_items,)``, inside the compiled loop; static (hashable).
    statistic : callable, optional
        ``statistic(w, confusion, prevalence, args)``, inside the compiled loop; static
        (hashable).
    args : pytree of arrays
        Passed to ``draw`` and ``statistic`` as traced arguments.
    progress : bool, default=False
        Move the open progress bar (:mod:`noisycal._util.progress`) once per refit.

    Returns
    -------
    tuple
        Stacked over the replicates: the statistic (or None), converged (B,), channels
        (B, J, K, K), iterations (B,), prevalences (B, K), the same as (B, 1, K), scales
        (B,) and centred biases (B, K).
    """
    arrays, sizes = split_data(data)
    return _ci_refits(weights, jnp.asarray(post0), jnp.asarray(scale0), jnp.asarray(bias0),
                      arrays, jnp.asarray(scores), None if beta is None else jnp.asarray(beta),
                      args, sizes=sizes, max_iter=max_iter, tol=tol, draw=draw,
                      statistic=statistic, progress=progress)


@partial(jax.jit, static_argnames=("sizes",))
def _score_information(x0: jax.Array, basis: jax.Array, scale: jax.Array, bias: jax.Array,
                       arrays: tuple, scores: jax.Array, *, sizes: tuple
                       ) -> tuple[jax.Array, jax.Array, jax.Array]:
    data = join_data(arrays, sizes)
    J, K = sizes[1], sizes[2]
    pc = basis.shape[1]
    moved = jnp.any(basis != 0, axis=1)

    def prior_params(t: jax.Array) -> dict:
        return {"scale": scale + t[0],
                "bias": bias + jnp.concatenate([jnp.zeros(1, t.dtype), t[1:]])}

    def per_item(theta: jax.Array) -> jax.Array:
        conf = jnp.where(moved, x0 + basis @ theta[:pc], x0).reshape(J, K, K)
        params = {"confusion": conf, **prior_params(theta[pc:])}
        return jax.nn.logsumexp(joint_log_likelihood(params, data, scores), axis=1)

    def mean_prior(t: jax.Array) -> jax.Array:
        return jnp.mean(jnp.exp(class_log_prior(prior_params(t), scores)), axis=0)

    theta0 = jnp.zeros(pc + K, dtype=x0.dtype)
    s = jax.jacfwd(per_item)(theta0)                                   # (n, p)
    info = -jax.hessian(lambda t: jnp.sum(per_item(t)))(theta0)
    return s, info, jax.jacfwd(mean_prior)(theta0[pc:])               # (K, K)


def ci_score_information(confusion: Any, basis: Any, scale: float, bias: Any, data: DSData,
                         scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-item scores and the observed information of the marginal log-likelihood.

    ``l_i(theta) = log sum_k softmax(scale z_i + bias)_k prod_r confusion[j_r, k, y_r]``
    at ``theta = (channel coordinates, scale, bias[1:])``: the confusion moves by
    ``basis @ theta[:pc]`` (entries no column moves stay exactly where they are),
    ``scale`` by ``theta[pc]`` and ``bias[1:]`` by ``theta[pc + 1:]`` (``bias[0]`` held:
    the prior is unchanged by a constant added to the bias). Call it under ``x64``.

    Parameters
    ----------
    confusion : array of shape (J, K, K)
        The fitted channels.
    basis : array of shape (J * K * K, pc)
        The channels' free directions.
    scale : float
    bias : array of shape (K,)
    data : DSData
        The fitted ratings (one row per item, ``slots=False``).
    scores : array of shape (n_items, K)
        The classifier's log-probabilities.

    Returns
    -------
    scores : ndarray of shape (n_items, pc + K)
        Each item's gradient of ``l_i`` at ``theta = 0``.
    information : ndarray of shape (pc + K, pc + K)
        The negative Hessian of ``sum_i l_i``.
    prior_jacobian : ndarray of shape (K, K)
        The derivative of the mean prior ``mean_i softmax(scale z_i + bias)`` in
        ``(scale, bias[1:])``.
    """
    arrays, sizes = split_data(data)
    out = _score_information(jnp.asarray(np.ravel(confusion)), jnp.asarray(basis),
                             jnp.asarray(scale), jnp.asarray(bias), arrays,
                             jnp.asarray(scores), sizes=sizes)
    return tuple(np.asarray(x) for x in out)
