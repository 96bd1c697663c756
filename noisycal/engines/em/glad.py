"""EM for GLAD: item posteriors, annotator abilities, item log-easiness and prevalence.

The model of Whitehill, Ruvolo, Wu, Bergsma and Movellan (2009), "Whose Vote Should Count
More: Optimal Integration of Labels from Labelers of Unknown Expertise": annotator ``a``
labels item ``i`` correctly with probability ``sigmoid(alpha_a * beta_i)``, ``beta_i =
exp(b_i) > 0``, and otherwise gives one of the other ``K - 1`` classes uniformly. EM
alternates the exact E-step (each item's posterior over its class) with an M-step that
maximises the expected complete-data log-likelihood plus the normal log-priors on
``alpha`` and ``b`` by L-BFGS (scipy's, on a jitted float64 objective and gradient over
all ratings at once) and sets the prevalence to the mean posterior (its exact maximiser)
unless it is fixed. The loop stops when the log posterior per item changes by less than
``tol``.

Item weights (``fit_glad(weights=...)``, the refits of :meth:`GLADFit.refit
<noisycal.annotators.GLADFit.refit>`) multiply each item's whole term of the log
posterior, its ratings' log-likelihood and its easiness prior together: item i's
easiness is still fitted from its own ratings alone (its maximiser does not depend on
its weight), the abilities' prior is counted once, the prevalence is the weighted mean
posterior and "per item" means per unit of weight. A weight of 2 is then the item
counted twice with its copies sharing one easiness, which at the optimum is what two
copies with an easiness each give (both copies maximise the same criterion), so integer
weights fit what a fit on the items duplicated fits.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import x64
from ..._util.progress import ProgressBar

__all__ = ["GladEM", "class_log_likelihood", "e_step", "fit_glad", "LOGIT_LIMIT",
           "saturated", "call_draw", "call_statistic"]

#: A rating whose fitted log-odds of being correct, ``|alpha_a * beta_i|``, exceeds this
#: (13.8 = logit(1 - 1e-6), the prevalence boundary of :mod:`noisycal.engines.status`)
#: has a fitted accuracy within 1e-6 of 0 or 1: the likelihood is flat there, so an
#: annotator (an item) all of whose ratings are beyond it has its ability (its
#: easiness) run off to the boundary.
LOGIT_LIMIT = float(np.log((1 - 1e-6) / 1e-6))


class GladEM(NamedTuple):
    """What :func:`fit_glad` returns (NumPy arrays, in the data's codes).

    Parameters
    ----------
    ability : ndarray of shape (J,)
        ``alpha``.
    log_easiness : ndarray of shape (n_items,)
        ``b``; the easiness is ``beta = exp(b)``.
    prevalence : ndarray of shape (K,)
    posterior : ndarray of shape (n_items, K)
    loglik : float
        The marginal log-likelihood at the estimates.
    objective : float
        ``loglik`` plus the log-priors (their normal constants left out).
    n_iter : int
    converged : bool
    """

    ability: np.ndarray          # (J,) alpha
    log_easiness: np.ndarray     # (n,) b, easiness beta = exp(b)
    prevalence: np.ndarray       # (K,)
    posterior: np.ndarray        # (n, K)
    loglik: float                # marginal log-likelihood at the estimates
    objective: float             # loglik + log-priors (normal constants left out)
    n_iter: int
    converged: bool


def class_log_likelihood(alpha: jax.Array, b: jax.Array, item: jax.Array,
                         annotator: jax.Array, label: jax.Array, n_items: int,
                         n_classes: int) -> jax.Array:
    """``log P(ratings of item i | class k)``, shape (n_items, n_classes).

    Parameters
    ----------
    alpha : (J,)
        Abilities.
    b : (n_items,)
        Log-easiness.
    item, annotator, label : (R,) int
        Each rating's item, annotator and label codes.
    n_items, n_classes : int

    Returns
    -------
    jax.Array
        Each rating adds ``log sigmoid(z)`` to its label's column and
        ``log sigmoid(-z) - log(K - 1)`` to every other, ``z = alpha_a exp(b_i)``.
    """
    z = alpha[annotator] * jnp.exp(b[item])
    wrong = jax.nn.log_sigmoid(-z) - jnp.log(n_classes - 1.0)
    right = jax.nn.log_sigmoid(z)
    base = jax.ops.segment_sum(wrong, item, num_segments=n_items)
    extra = jnp.zeros((n_items, n_classes), z.dtype).at[item, label].add(right - wrong)
    return base[:, None] + extra


def e_step(alpha: jax.Array, b: jax.Array, log_prev: jax.Array, item: jax.Array,
           annotator: jax.Array, label: jax.Array, gold: jax.Array | None, n_items: int,
           n_classes: int, weights: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Item posteriors and the marginal log-likelihood.

    Parameters
    ----------
    alpha, b, item, annotator, label, n_items, n_classes
        As for :func:`class_log_likelihood`.
    log_prev : (K,)
        Log prevalence.
    gold : (n_items,) int or None
        Known class codes (-1 where unknown): those items are clamped to their class
        and enter the likelihood at it.
    weights : (n_items,), optional
        Item weights of the log-likelihood (an item of weight 0 adds nothing, even where
        its likelihood is 0).

    Returns
    -------
    (posterior, loglik)
        (n_items, K) posteriors and the scalar (weighted) log-likelihood.
    """
    joint = log_prev[None, :] + class_log_likelihood(alpha, b, item, annotator, label,
                                                     n_items, n_classes)
    if gold is not None:
        known = gold >= 0
        clamp = jnp.where(jnp.arange(n_classes)[None, :] == gold[:, None], 0.0, -jnp.inf)
        joint = jnp.where(known[:, None], joint + clamp, joint)
    lse = jax.scipy.special.logsumexp(joint, axis=1)
    if weights is not None:
        return jnp.exp(joint - lse[:, None]), jnp.sum(jnp.where(weights > 0,
                                                                weights * lse, 0.0))
    return jnp.exp(joint - lse[:, None]), jnp.sum(lse)


def _log_prior(x: jax.Array, prior: jax.Array, weights: jax.Array | None = None) -> jax.Array:
    """``prior = (on, mean, sd)``: the normal log-density up to its constant, 0 when off;
    with ``weights``, each coordinate's term weighted."""
    if weights is not None:
        return -0.5 * prior[0] * jnp.sum(weights * ((x - prior[1]) / prior[2]) ** 2)
    return -0.5 * prior[0] * jnp.sum(((x - prior[1]) / prior[2]) ** 2)


def _prior_array(ability_prior: tuple | None, easiness_prior: tuple | None) -> np.ndarray:
    return np.array([[0.0, 0.0, 1.0] if p is None else [1.0, float(p[0]), float(p[1])]
                     for p in (ability_prior, easiness_prior)])


@partial(jax.jit, static_argnames=("n_items", "free_alpha"))
def _scale(alpha: jax.Array, b: jax.Array, item: jax.Array, annotator: jax.Array,
           priors: jax.Array, iw: jax.Array | None = None, *, n_items: int,
           free_alpha: bool) -> jax.Array:
    """The square root of the expected curvature of each coordinate of minus the M-step
    objective per item (the diagonal preconditioner of L-BFGS); ``iw`` item weights."""
    z = alpha[annotator] * jnp.exp(b[item])
    s = jax.nn.sigmoid(z)
    v = s * (1.0 - s)
    if iw is not None:
        v = v * iw[item]
    hb = jax.ops.segment_sum(v * z * z, item, num_segments=n_items)
    hb = hb + priors[1, 0] / priors[1, 2] ** 2 * (1.0 if iw is None else iw)
    norm = n_items if iw is None else jnp.sum(iw)
    if not free_alpha:
        return jnp.sqrt(hb / norm + 1e-12)
    ha = jax.ops.segment_sum(v * jnp.exp(2.0 * b[item]), annotator,
                             num_segments=alpha.shape[0])
    ha = ha + priors[0, 0] / priors[0, 2] ** 2
    return jnp.sqrt(jnp.concatenate([ha, hb]) / norm + 1e-12)


@partial(jax.jit, static_argnames=("n_items", "n_classes", "free_alpha"))
def _neg_q(x: jax.Array, scale: jax.Array, alpha_fixed: jax.Array, w: jax.Array,
           item: jax.Array, annotator: jax.Array, priors: jax.Array,
           iw: jax.Array | None = None, *, n_items: int, n_classes: int,
           free_alpha: bool) -> tuple[jax.Array, jax.Array]:
    """Minus the M-step objective per item and its gradient in the preconditioned
    coordinates ``x = theta * scale``; ``w`` each rating's posterior probability of
    being correct, ``iw`` item weights (of the ratings' terms and the easiness prior;
    "per item" is then per unit of weight)."""

    def f(x: jax.Array) -> jax.Array:
        t = x / scale
        J = alpha_fixed.shape[0]
        alpha = t[:J] if free_alpha else alpha_fixed
        b = t[J:] if free_alpha else t
        z = alpha[annotator] * jnp.exp(b[item])
        term = (w * jax.nn.log_sigmoid(z)
                + (1.0 - w) * (jax.nn.log_sigmoid(-z) - jnp.log(n_classes - 1.0)))
        q = jnp.sum(term if iw is None else iw[item] * term)
        q = q + _log_prior(b, priors[1], iw)
        if free_alpha:
            q = q + _log_prior(alpha, priors[0])
        return -q / (n_items if iw is None else jnp.sum(iw))

    return jax.value_and_grad(f)(x)


@partial(jax.jit, static_argnames=("n_items", "n_classes"))
def _e(alpha: jax.Array, b: jax.Array, log_prev: jax.Array, item: jax.Array,
       annotator: jax.Array, label: jax.Array, gold: jax.Array | None, priors: jax.Array,
       iw: jax.Array | None = None, *, n_items: int, n_classes: int
       ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    post, ll = e_step(alpha, b, log_prev, item, annotator, label, gold, n_items, n_classes,
                      iw)
    obj = ll + _log_prior(alpha, priors[0]) + _log_prior(b, priors[1], iw)
    return post, ll, obj, post[item, label]


def saturated(alpha: np.ndarray, b: np.ndarray, item: np.ndarray, annotator: np.ndarray,
              n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Annotators and items every one of whose ratings is beyond :data:`LOGIT_LIMIT`.

    Parameters
    ----------
    alpha, b : ndarray
        Abilities (J,) and log-easiness (n_items,).
    item, annotator : ndarray of int
        Each rating's codes.
    n_items : int

    Returns
    -------
    (annotators, items)
        Boolean masks of shape (J,) and (n_items,).
    """
    far = np.abs(alpha[annotator] * np.exp(b[item])) > LOGIT_LIMIT
    J = alpha.shape[0]
    rated_a = np.bincount(annotator, minlength=J)
    rated_i = np.bincount(item, minlength=n_items)
    return ((np.bincount(annotator, weights=far, minlength=J) == rated_a) & (rated_a > 0),
            (np.bincount(item, weights=far, minlength=n_items) == rated_i) & (rated_i > 0))


def fit_glad(item: np.ndarray, annotator: np.ndarray, label: np.ndarray, *, n_items: int,
             n_annotators: int, n_classes: int, ability_prior: tuple[float, float] | None,
             easiness_prior: tuple[float, float] | None, prevalence: np.ndarray | None,
             gold: np.ndarray | None = None, max_iter: int = 1000, tol: float = 1e-8,
             ability: np.ndarray | None = None, free_ability: bool = True,
             m_step_iter: int = 200, progress: bool = False,
             weights: np.ndarray | None = None, log_easiness: np.ndarray | None = None,
             start_prevalence: np.ndarray | None = None) -> GladEM:
    """GLAD by EM from ``alpha`` at the ability prior's mean (or ``ability``), every ``b``
    at the easiness prior's mean (1 without one; or ``log_easiness``) and the uniform
    prevalence (crowd-kit's start; or ``start_prevalence``).

    Parameters
    ----------
    item, annotator, label : ndarray of int
        Each rating's codes.
    n_items, n_annotators, n_classes : int
    ability_prior, easiness_prior : (mean, sd) or None
        Normal priors on ``alpha`` and on ``b = log beta`` (None: flat).
    prevalence : ndarray of shape (K,) or None
        Held fixed when given; else fitted (the mean posterior).
    gold : ndarray of int, optional
        Known class codes, -1 where unknown.
    max_iter : int
        EM iterations at most (the status is 'not_converged' when they run out).
    tol : float
        EM stops when the log posterior per item changes by less than ``tol``.
    ability : ndarray of shape (J,), optional
        The start of ``alpha`` (with ``free_ability=False``: its fixed value, as when
        new items are scored under a fit).
    free_ability : bool
        Fit the abilities (else only the easiness and the classes).
    m_step_iter : int
        L-BFGS iterations per M-step at most.
    progress : bool, default=False
        A bar of EM iterations on stderr (up to ``max_iter``; EM usually stops earlier).
    weights : ndarray of shape (n_items,), optional
        Non-negative item weights with a positive sum (not checked), each multiplying
        its item's log-likelihood and easiness prior (the module docstring);
        ``loglik`` and ``objective`` are then weighted sums and the tolerance is per
        unit of weight. None: the
        unweighted fit (not the same code path as weights all one, which agree with it
        to rounding).
    log_easiness : ndarray of shape (n_items,), optional
        The start of ``b`` (a refit starts from the fit's).
    start_prevalence : ndarray of shape (K,), optional
        The start of a fitted prevalence (ignored when ``prevalence`` is given).

    Returns
    -------
    GladEM
    """
    from scipy.optimize import minimize

    K, J = n_classes, n_annotators
    a0 = 1.0 if ability_prior is None else float(ability_prior[0])
    alpha = (np.full(J, a0) if ability is None else np.asarray(ability, np.float64)).copy()
    b = (np.full(n_items, 1.0 if easiness_prior is None else float(easiness_prior[0]))
         if log_easiness is None else np.asarray(log_easiness, np.float64).copy())
    fixed_prev = prevalence is not None
    prev = (np.asarray(prevalence, np.float64) if fixed_prev
            else np.full(K, 1.0 / K) if start_prevalence is None
            else np.asarray(start_prevalence, np.float64).copy())
    kw = {"n_items": n_items, "n_classes": K}
    iw_np = None if weights is None else np.asarray(weights, np.float64)
    norm = n_items if iw_np is None else float(iw_np.sum())
    with x64():
        priors = jnp.asarray(_prior_array(ability_prior, easiness_prior))
        it, an, lb = (jnp.asarray(x, jnp.int32) for x in (item, annotator, label))
        gd = None if gold is None else jnp.asarray(gold, jnp.int32)
        iw = None if iw_np is None else jnp.asarray(iw_np)

        def estep(alpha: np.ndarray, b: np.ndarray, prev: np.ndarray) -> tuple:
            with np.errstate(divide="ignore"):
                lp = np.log(prev)
            return _e(jnp.asarray(alpha), jnp.asarray(b), jnp.asarray(lp), it, an, lb, gd,
                      priors, iw, **kw)

        def fun(x: np.ndarray, w: Any, scale: Any) -> tuple[float, np.ndarray]:
            v, g = _neg_q(jnp.asarray(x), scale, a_fixed, w, it, an, priors, iw,
                          free_alpha=free_ability, **kw)
            return float(v), np.asarray(g, np.float64)

        post, ll, obj, w = estep(alpha, b, prev)
        obj = float(obj)
        converged, n_iter = False, 0
        with ProgressBar(max_iter, "GLAD EM iterations", enabled=progress) as bar:
            for step in range(1, max_iter + 1):
                n_iter = step
                bar.update()
                a_fixed = jnp.asarray(alpha)
                theta = np.concatenate([alpha, b]) if free_ability else b
                scale = _scale(a_fixed, jnp.asarray(b), it, an, priors, iw, n_items=n_items,
                               free_alpha=free_ability)
                sc = np.asarray(scale)
                res = minimize(fun, theta * sc, args=(w, scale), jac=True, method="L-BFGS-B",
                               options={"maxiter": m_step_iter, "ftol": 1e-15, "gtol": 1e-10})
                theta = res.x / sc
                if free_ability:
                    alpha, b = theta[:J].copy(), theta[J:].copy()
                else:
                    b = theta.copy()
                if not fixed_prev:
                    prev = (np.asarray(post).mean(axis=0) if iw_np is None
                            else iw_np @ np.asarray(post) / norm)
                post, ll, new, w = estep(alpha, b, prev)
                new = float(new)
                if abs(new - obj) / norm < tol:
                    obj, converged = new, True
                    break
                obj = new
    return GladEM(alpha, b, prev, np.asarray(post), float(ll), obj, n_iter, converged)


@partial(jax.jit, static_argnames=("draw",))
def call_draw(x: jax.Array, args: Any, *, draw: Any) -> jax.Array:
    """``draw(x, args)`` compiled (once per ``draw``, which is hashed as a static argument):
    one refit's item weights, for refit loops run from Python (:meth:`GLADFit.refit
    <noisycal.annotators.GLADFit.refit>`).

    Parameters
    ----------
    x : jax.Array
        The replicate's row of ``refit``'s ``weights`` (a random key for the bootstrap).
    args : pytree of arrays
    draw : callable
        ``draw(x, args) -> (n_items,)``.

    Returns
    -------
    jax.Array
    """
    return draw(x, args)


@partial(jax.jit, static_argnames=("statistic",))
def call_statistic(w: jax.Array, confusion: jax.Array, prevalence: jax.Array, args: Any, *,
                   statistic: Any) -> Any:
    """``statistic(w, confusion, prevalence, args)`` compiled (once per ``statistic``), as
    :func:`call_draw`.

    Parameters
    ----------
    w : (n_items,)
        The replicate's item weights.
    confusion : (J, K, K)
    prevalence : (K,)
    args : pytree of arrays
    statistic : callable

    Returns
    -------
    pytree of arrays
    """
    return statistic(w, confusion, prevalence, args)
