"""Gradient maximum likelihood / MAP on any NumPyro model's log density.

The functional core is :func:`make_objective`: the model's log density split into
likelihood and prior on a flat unconstrained vector, built by the one model-to-potential
builder :func:`noisycal.engines.density.potential.build_potential` that NUTS uses too.
:func:`fit_map` is the driver that minimises it with SciPy's L-BFGS-B, using JAX gradients
in float64, and returns an :class:`MLEResult`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.optimize

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.progress import ProgressBar, check_progress
from ..._util.types import Seed
from ..._util.validation import check_choice, check_int, check_seed
from ...exceptions import ConvergenceWarning, IdentifiabilityWarning
from .potential import (
    build_potential,
    check_model_inputs,
    entry_names,
    split_inputs,
    trace_initial,
    user_stacklevel,
)

__all__ = ["MLEResult", "Objective", "make_objective", "fit_map", "check_model_inputs",
           "trace_initial"]


class Objective(NamedTuple):
    """A model's log density on a flat unconstrained vector, as pure functions of it.

    Built by :func:`make_objective`; :func:`fit_map` maximises ``objective``.

    Attributes
    ----------
    x0 : jax.Array of shape (n_params,)
        The initial flat unconstrained vector.
    constrain : callable
        Flat vector -> dict of constrained values (latent sites, plus deterministic
        sites when the model has any).
    log_parts : callable
        Flat vector -> ``(loglik, log_prior, log_jacobian)``, each a scalar (see
        :class:`noisycal.engines.density.potential.FlatPotential`).
    objective : callable
        Flat vector -> the scalar that is maximised: ``loglik`` (+ ``log_prior`` when
        ``prior``) (+ ``log_jacobian`` when ``jacobian``).
    names : list of str
        A label for each entry of the flat vector, e.g. ``'kappa'``, ``'b[1]'``.
    """

    x0: jax.Array
    constrain: Callable[[jax.Array], dict[str, jax.Array]]
    log_parts: Callable[[jax.Array], tuple[jax.Array, jax.Array, jax.Array]]
    objective: Callable[[jax.Array], jax.Array]
    names: list[str]


def make_objective(
    model: Callable[..., Any],
    *,
    model_args: tuple = (),
    model_kwargs: Mapping[str, Any] | None = None,
    init_params: Mapping[str, Any] | None = None,
    prior: bool = True,
    jacobian: bool = False,
    rng_key: jax.Array | None = None,
    init_strategy: str = "center",
) -> Objective:
    """Build the log density of ``model`` on a flat unconstrained parameter vector.

    Call inside ``noisycal._util.jax.x64()`` for float64. The model's inputs are constants of
    the returned functions (a fit compiles them once).

    Parameters
    ----------
    model : callable
        A NumPyro model with continuous latent sites.
    model_args : tuple, default=()
        Positional arguments of the model.
    model_kwargs : dict or None, default=None
        Keyword arguments of the model.
    init_params : dict or None, default=None
        Initial constrained values by site name.
    prior : bool, default=True
        Include the log prior in ``objective``.
    jacobian : bool, default=False
        Include the log Jacobian in ``objective``.
    rng_key : jax key or None, default=None
        Seeds the initialisation (default key 0).
    init_strategy : {'center', 'uniform'}, default='center'
        Where the sites not in ``init_params`` start: ``'center'`` at the prior mean
        (median where the mean is not finite), ``'uniform'`` uniformly in (-2, 2) on the
        unconstrained scale (NumPyro's MCMC default).

    Returns
    -------
    Objective
        The initial point and the pure functions of the flat vector.
    """
    check_choice(init_strategy, "init_strategy", ("center", "uniform"))
    rng_key = jax.random.key(0) if rng_key is None else rng_key
    values = {k: jnp.asarray(v, dtype=jnp.result_type(float))
              for k, v in (init_params or {}).items()}
    # every input a constant: the functions are compiled once per fit anyway, and models
    # that need concrete values of an array input (a plate size) work unchanged
    _, arrays, rebuild = split_inputs(tuple(model_args), dict(model_kwargs or {}),
                                      arrays_static=True)
    pot = build_potential(model, rebuild, arrays, {k: v.shape for k, v in values.items()},
                          init_strategy=init_strategy)
    x0, fixed = jax.jit(pot.initial)(rng_key, arrays, values)
    data = (arrays, fixed)

    def constrain(x: jax.Array) -> dict[str, jax.Array]:
        return pot.constrain(x, data)

    def log_parts(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        return pot.log_parts(x, data)

    def objective(x: jax.Array) -> jax.Array:
        loglik, log_prior, log_jac = log_parts(x)
        out = loglik
        if prior:
            out = out + log_prior
        if jacobian:
            out = out + log_jac
        return out

    return Objective(x0, constrain, log_parts, objective, pot.names)


@dataclass(frozen=True, eq=False)
class MLEResult:
    """Result of :func:`fit_map`.

    Attributes
    ----------
    params : dict of str to ndarray
        Constrained estimates of the latent sites (and of deterministic sites).
    unconstrained : ndarray of shape (n_params,)
        The optimum on the flat unconstrained scale (entries labelled by ``names``).
    names : list of str
        Labels of the entries of ``unconstrained``.
    loglik : float
        Log-likelihood (observed and factor sites only, never the priors) at the optimum.
    log_prior : float
        Sum of the latent sites' prior log densities at the optimum (computed also for a
        maximum likelihood fit).
    log_joint : float
        ``loglik + log_prior`` at the optimum.
    objective : float
        The maximised objective at the optimum (see ``prior`` and ``jacobian``).
    prior, jacobian : bool
        What the objective included besides the log-likelihood.
    n_iter : int
        L-BFGS-B iterations.
    converged : bool
        Whether the optimiser met its tolerance (or the predicted remaining gain, the
        Newton decrement, is below the tolerance).
    status : {'ok', 'not_converged', 'nonfinite'}
        Outcome; see ``message``.
    message : str
        Human-readable explanation (the optimiser's own message included).
    cov_unconstrained : ndarray of shape (n_params, n_params)
        Inverse Hessian of the negative objective at the optimum on the unconstrained
        scale (the observed-information covariance for a maximum likelihood fit, the
        Laplace covariance for a MAP fit); all NaN when the Hessian is not positive
        definite.
    std_errors : dict of str to ndarray
        Delta-method standard errors of ``params`` (NaN where unavailable).
    n_params : int
        Number of free (unconstrained) parameters.
    """

    params: dict[str, np.ndarray]
    unconstrained: np.ndarray
    names: list[str]
    loglik: float
    log_prior: float
    log_joint: float
    objective: float
    prior: bool
    jacobian: bool
    n_iter: int
    converged: bool
    status: str
    message: str
    cov_unconstrained: np.ndarray = field(repr=False)
    std_errors: dict[str, np.ndarray] = field(repr=False)
    n_params: int = 0

    def cov_params(self) -> np.ndarray:
        """Covariance of the unconstrained parameters (``cov_unconstrained``)."""
        return self.cov_unconstrained

    def summary(self) -> pd.DataFrame:
        """One row per scalar entry of ``params``: ``estimate`` and ``std_err``."""
        rows = []
        for name in sorted(self.params):
            value = np.asarray(self.params[name])
            se = np.broadcast_to(self.std_errors.get(name, np.nan), value.shape)
            for label, v, s in zip(
                entry_names(name, value.shape), value.ravel(), np.ravel(se), strict=True
            ):
                rows.append({"parameter": label, "estimate": float(v), "std_err": float(s)})
        return pd.DataFrame(rows).set_index("parameter")

    def to_frame(self) -> pd.DataFrame:
        """Tidy table of every scalar parameter entry: ``parameter``, ``estimate``,
        ``std_err`` (the :meth:`summary` with the parameter as a column)."""
        return self.summary().reset_index()



def fit_map(
    model: Callable[..., Any],
    *,
    model_args: tuple = (),
    model_kwargs: Mapping[str, Any] | None = None,
    init_params: Mapping[str, Any] | None = None,
    seed: Seed = 0,
    max_iter: int = 1000,
    tol: float = 1e-9,
    prior: bool = True,
    jacobian: bool = False,
    hessian: bool = True,
    progress: bool = False,
) -> MLEResult:
    """Maximum a posteriori (or maximum likelihood) fit of a NumPyro model.

    The model's latent sites are mapped to an unconstrained flat vector (NumPyro's
    ``biject_to`` transforms); the objective is maximised with SciPy's L-BFGS-B using
    exact JAX gradients, in float64.

    Parameters
    ----------
    model : callable
        A NumPyro model with continuous latent sites (discrete latent variables must be
        marginalised inside the model).
    model_args : tuple, default=()
        Positional arguments of the model (its data).
    model_kwargs : dict or None, default=None
        Keyword arguments of the model.
    init_params : dict or None, default=None
        Initial *constrained* values by site name; sites left out start at their prior
        mean (or median). None starts every site at its prior mean.
    seed : int or jax key, default=0
        Seeds the initialisation where it samples (prior medians, uniform fallback).
    max_iter : int, default=1000
        Maximum number of L-BFGS-B iterations.
    tol : float, default=1e-9
        Relative tolerance on the objective (L-BFGS-B ``ftol``).
    prior : bool, default=True
        Include the latent sites' prior log densities (MAP). False gives the maximum
        likelihood estimate: only observed sites and ``numpyro.factor`` sites count.
    jacobian : bool, default=False
        Add the log Jacobian of the unconstrained-to-constrained map, i.e. find the mode
        of the posterior density of the *unconstrained* parameters (what NUTS explores).
        The default is the mode on the constrained scale, the usual MAP. Needs
        ``prior=True``.
    hessian : bool, default=True
        Compute the Hessian at the optimum, for ``cov_unconstrained`` and
        ``std_errors`` (costly for very many parameters).
    progress : bool, default=False
        A bar on stderr over the L-BFGS-B iterations (at most ``max_iter``).

    Returns
    -------
    MLEResult
        The estimate, its log-likelihood, covariance and convergence status.

    Raises
    ------
    ValueError
        If an argument is invalid, or the model has discrete latent sites.

    Warns
    -----
    ConvergenceWarning
        When the optimiser stops before meeting its tolerance or meets non-finite values
        (the result's ``status`` says which).
    IdentifiabilityWarning
        When the Hessian at the optimum is not positive definite.

    Notes
    -----
    Maximising the likelihood is invariant to reparameterisation, so the maximum
    likelihood estimate is found on the unconstrained scale without a Jacobian term.
    ``cov_unconstrained`` is the inverse of the Hessian of the negative objective
    (observed information for ``prior=False``); ``std_errors`` push it through the
    Jacobian of the constraining map (delta method).
    """
    # (over 80 lines only because of the numpydoc docstring above; the body is short)
    check_model_inputs(model, model_args, model_kwargs, init_params)
    max_iter, tol = _check_fit_options(max_iter, tol, prior, jacobian, hessian)
    progress = check_progress(progress)
    key = as_key(check_seed(seed))

    with x64():
        obj = make_objective(
            model, model_args=model_args, model_kwargs=model_kwargs, init_params=init_params,
            prior=bool(prior), jacobian=bool(jacobian), rng_key=key,
        )
        with ProgressBar(max_iter, "L-BFGS-B iterations", enabled=progress) as bar:
            result = _optimize(obj, max_iter=max_iter, tol=tol, prior=bool(prior),
                               jacobian=bool(jacobian), hessian=bool(hessian),
                               bar=bar if progress else None)
    if result.status != "ok":
        warnings.warn(f"fit_map: {result.message}", ConvergenceWarning,
                      stacklevel=user_stacklevel())
    elif hessian and not np.all(np.isfinite(result.cov_unconstrained)):
        warnings.warn(f"fit_map: {result.message}", IdentifiabilityWarning,
                      stacklevel=user_stacklevel())
    return result


def _check_fit_options(max_iter: object, tol: object, prior: object, jacobian: object,
                       hessian: object) -> tuple[int, float]:
    """Validate :func:`fit_map`'s settings; returns ``(max_iter, tol)``."""
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if (isinstance(tol, bool) or not isinstance(tol, numbers.Real)
            or not math.isfinite(float(tol)) or not tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    for flag, name in ((prior, "prior"), (jacobian, "jacobian"), (hessian, "hessian")):
        if not isinstance(flag, bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    if jacobian and not prior:
        raise ValueError("jacobian=True needs prior=True (a likelihood has no Jacobian term)")
    return max_iter, float(tol)


def _minimize(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, *,
              max_iter: int, tol: float, bar: ProgressBar | None = None
              ) -> tuple[np.ndarray, int, bool, str]:
    """L-BFGS-B from ``x0``; returns ``(x, n_iter, success, message)`` (``bar``: one step
    per iteration)."""
    if x0.shape[0] == 0:
        return x0, 0, True, "no free parameters"
    if not math.isfinite(fun(x0)[0]):
        return x0, 0, False, "objective is not finite at the start"
    res = scipy.optimize.minimize(
        fun, x0, jac=True, method="L-BFGS-B",
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-10, "maxls": 50},
        callback=None if bar is None else (lambda *_: bar.update(1)),
    )
    return np.asarray(res.x, dtype=np.float64), int(res.nit), bool(res.success), str(res.message)


def _covariance(obj: Objective, x: np.ndarray) -> np.ndarray | None:
    """Inverse Hessian of ``-objective`` at ``x``, or None where it is not positive definite."""
    n = x.shape[0]
    H = np.asarray(jax.jit(jax.hessian(lambda x: -obj.objective(x)))(jnp.asarray(x)),
                   dtype=np.float64)
    H = 0.5 * (H + H.T)
    if not np.all(np.isfinite(H)):
        return None
    try:
        L = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        return None
    Linv = scipy.linalg.solve_triangular(L, np.eye(n), lower=True)
    return Linv.T @ Linv


def _std_errors(obj: Objective, x: np.ndarray, cov: np.ndarray | None,
                params_j: dict[str, jax.Array]) -> dict[str, np.ndarray]:
    """Delta-method standard errors of the constrained values (NaN without ``cov``)."""
    if cov is None:
        return {k: np.full(np.shape(v), np.nan) for k, v in params_j.items()}
    from jax.flatten_util import ravel_pytree

    _, unravel_c = ravel_pytree(params_j)

    def flat_constrain(x: jax.Array) -> jax.Array:
        return ravel_pytree(obj.constrain(x))[0]

    J = np.asarray(jax.jit(jax.jacfwd(flat_constrain))(jnp.asarray(x)), dtype=np.float64)
    var = np.einsum("ij,jk,ik->i", J, cov, J)
    se_flat = np.sqrt(np.clip(var, 0.0, None))
    return {k: np.asarray(v) for k, v in unravel_c(jnp.asarray(se_flat)).items()}


def _optimize(obj: Objective, *, max_iter: int, tol: float, prior: bool, jacobian: bool,
              hessian: bool, bar: ProgressBar | None = None) -> MLEResult:
    """Minimise ``-obj.objective`` with L-BFGS-B; then Hessian, covariance and summaries."""
    neg = jax.jit(jax.value_and_grad(lambda x: -obj.objective(x)))
    n = int(obj.x0.shape[0])

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = neg(jnp.asarray(x))
        f = float(f)
        g = np.asarray(g, dtype=np.float64)
        if not math.isfinite(f) or not np.all(np.isfinite(g)):
            # make L-BFGS-B's line search back off instead of stepping into NaN
            return math.inf, np.zeros_like(g)
        return f, g

    x, n_iter, success, opt_msg = _minimize(fun, np.asarray(obj.x0, dtype=np.float64),
                                            max_iter=max_iter, tol=tol, bar=bar)
    f_opt, g_opt = neg(jnp.asarray(x))
    f_opt, g_opt = float(f_opt), np.asarray(g_opt, dtype=np.float64)
    finite = math.isfinite(f_opt) and bool(np.all(np.isfinite(g_opt)))

    cov, messages, decrement = None, [], math.nan
    if hessian and finite and n > 0:
        cov = _covariance(obj, x)
        if cov is None:
            messages.append(
                "the Hessian of the objective is not positive definite at the optimum "
                "(a parameter may not be identified); cov_unconstrained is NaN"
            )
        else:
            decrement = 0.5 * float(g_opt @ cov @ g_opt)

    near_optimum = cov is not None and decrement <= tol * max(1.0, abs(f_opt))
    if not finite:
        status, converged = "nonfinite", False
        messages.insert(0, f"the objective or its gradient is not finite ({opt_msg})")
    elif success or near_optimum:
        status, converged = "ok", True
        if not success:
            messages.insert(0, f"L-BFGS-B: {opt_msg}; accepted: the Newton decrement "
                               f"{decrement:.2g} is below tol * max(1, |objective|)")
    else:
        status, converged = "not_converged", False
        messages.insert(0, f"L-BFGS-B did not converge after {n_iter} iterations "
                           f"(max_iter={max_iter}): {opt_msg}")

    xj = jnp.asarray(x)
    params_j = jax.jit(obj.constrain)(xj)
    loglik, log_prior, _ = (float(v) for v in jax.jit(obj.log_parts)(xj))
    return MLEResult(
        params={k: np.asarray(v) for k, v in params_j.items()},
        unconstrained=x, names=list(obj.names), loglik=loglik, log_prior=log_prior,
        log_joint=loglik + log_prior, objective=-f_opt, prior=prior, jacobian=jacobian,
        n_iter=n_iter, converged=converged, status=status, message="; ".join(messages),
        cov_unconstrained=np.full((n, n), np.nan) if cov is None else cov,
        std_errors=_std_errors(obj, x, cov, params_j), n_params=n,
    )
