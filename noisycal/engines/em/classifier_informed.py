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
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from noisycal.models.classifier_informed import class_log_prior, joint_log_likelihood
from noisycal.models.dawid_skene import DSData, class_log_likelihood

from ..._util.progress import ProgressBar
from .dawid_skene import join_data, log_prior, m_step, split_data

__all__ = ["CIState", "ci_e_step", "ci_posterior", "prior_m_step", "fit_ci_em",
           "ci_score_information"]


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


def _prior_objective(theta: jax.Array, scores: jax.Array, post: jax.Array) -> jax.Array:
    """Mean ``sum_k post[i, k] log softmax(scale z_i + bias)_k`` at ``theta = (scale,
    bias[1:])`` (``bias[0] = 0``): concave, being linear in ``theta`` inside the log
    softmax."""
    bias = jnp.concatenate([jnp.zeros(1, theta.dtype), theta[1:]])
    lp = class_log_prior({"scale": theta[0], "bias": bias}, scores)
    return jnp.sum(post * lp) / scores.shape[0]


@partial(jax.jit, static_argnames=("n_steps",))
def _newton(theta: jax.Array, scores: jax.Array, post: jax.Array, *, n_steps: int
            ) -> tuple[jax.Array, jax.Array]:
    grad = jax.grad(_prior_objective)
    hess = jax.hessian(_prior_objective)

    def step(_: int, carry: tuple) -> tuple:
        th, _ = carry
        g, H = grad(th, scores, post), hess(th, scores, post)
        d = -jnp.linalg.solve(H - 1e-12 * jnp.eye(H.shape[0]), g)  # H is negative definite
        f0 = _prior_objective(th, scores, post)

        def worse(t: jax.Array) -> jax.Array:  # halve while off scale > 0 or not better
            new = th + t * d
            return (t > 1e-10) & ((new[0] <= 0) | ~(_prior_objective(new, scores, post)
                                                    >= f0))

        t = jax.lax.while_loop(worse, lambda t: t / 2, jnp.asarray(1.0, th.dtype))
        new = jnp.where(t > 1e-10, th + t * d, th)
        return new, jnp.max(jnp.abs(g))

    return jax.lax.fori_loop(0, n_steps, step, (theta, jnp.asarray(jnp.inf, theta.dtype)))


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
