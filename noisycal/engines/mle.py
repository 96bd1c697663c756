"""Gradient maximum likelihood / MAP on any NumPyro model's log density.

The functional core is :func:`make_objective` (a pure log-density split into
likelihood and prior on a flat unconstrained vector); :func:`fit_map` is the driver
that minimises it with SciPy's L-BFGS-B, using JAX gradients in float64, and returns an
:class:`MLEResult`.
"""

from __future__ import annotations

import inspect
import math
import os
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

from .._jax import as_key, x64
from .._typing import Seed
from .._validation import check_choice, check_int
from .._warnings import ConvergenceWarning, IdentifiabilityWarning

__all__ = ["MLEResult", "Objective", "make_objective", "fit_map"]


def _user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` pointing at the first frame outside noisycal.

    Counts the consecutive innermost frames that live in the ``noisycal`` package or in
    ``noisycal.models`` (this function's frame included), like numpyro's
    ``find_stack_level``.
    """
    import noisycal
    import noisycal.models

    dirs = tuple(
        os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (noisycal, noisycal.models)
    )
    frame = inspect.currentframe()
    n = 0
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(dirs):
            break
        frame = frame.f_back
        n += 1
    return max(n, 1)


class Objective(NamedTuple):
    """A model's log density on a flat unconstrained vector, as pure functions.

    Built by :func:`make_objective`; :func:`fit_map` optimises ``objective`` and
    :func:`noisycal.engines.nuts.run_nuts` samples from ``potential``.

    Attributes
    ----------
    x0 : jax.Array of shape (n_params,)
        The initial flat unconstrained vector.
    unravel : callable
        Flat vector -> dict of unconstrained site values.
    constrain : callable
        Flat vector -> dict of constrained values (latent sites, plus deterministic
        sites when the model has any).
    log_parts : callable
        Flat vector -> ``(loglik, log_prior, log_jacobian)``, each a scalar: the summed
        log densities of the observed (and factor) sites, of the latent sites' priors,
        and the log absolute Jacobian determinant of the unconstrained-to-constrained map.
    objective : callable
        Flat vector -> the scalar that is maximised: ``loglik`` (+ ``log_prior`` when
        ``prior``) (+ ``log_jacobian`` when ``jacobian``).
    potential : callable
        Flat vector -> NumPyro's potential energy, ``-(loglik + log_prior +
        log_jacobian)`` (what NUTS samples from).
    init : callable
        PRNG key -> a flat initial vector drawn by the initialisation strategy (jitted).
    names : list of str
        A label for each entry of the flat vector, e.g. ``'kappa'``, ``'b[1]'``.
    """

    x0: jax.Array
    unravel: Callable[[jax.Array], dict[str, jax.Array]]
    constrain: Callable[[jax.Array], dict[str, jax.Array]]
    log_parts: Callable[[jax.Array], tuple[jax.Array, jax.Array, jax.Array]]
    objective: Callable[[jax.Array], jax.Array]
    potential: Callable[[jax.Array], jax.Array]
    init: Callable[[jax.Array], jax.Array]
    names: list[str]


def _init_to_prior_center(site: dict | None = None) -> Any:
    """Init strategy: the prior mean where it is finite, else the prior median.

    Deterministic for the usual priors (no sampling enters where the mean exists).
    """
    from numpyro.infer import init_to_median

    if site is None:
        return _init_to_prior_center
    if site["type"] != "sample" or site["is_observed"] or site["fn"].support.is_discrete:
        return None
    median = init_to_median(site)
    try:
        mean = 1.0 * site["fn"].mean
    except (NotImplementedError, ValueError):
        return median
    mean = jnp.broadcast_to(mean, jnp.shape(median))
    return jnp.where(jnp.isfinite(mean), mean, median)


def _init_to_values(values: Mapping[str, Any], fallback: Callable[..., Any]) -> Callable[..., Any]:
    """Init strategy: given constrained ``values`` by site name, ``fallback`` elsewhere."""

    def strategy(site: dict | None = None) -> Any:
        if site is None:
            return strategy
        if site["type"] == "sample" and not site["is_observed"]:
            if site["name"] in values:
                return values[site["name"]]
            return fallback(site)
        return None

    return strategy


def _entry_names(name: str, shape: tuple[int, ...]) -> list[str]:
    if len(shape) == 0:
        return [name]
    return [f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


def trace_initial(model: Callable[..., Any], key: jax.Array, model_args: tuple,
                  model_kwargs: dict, strategy: Callable[..., Any],
                  sites: dict[str, tuple[str, bool, bool]]) -> tuple[dict, dict]:
    """Trace ``model`` once with an init ``strategy``: unconstrained latent values, the
    values of its ``param``/``mutable`` sites, and each site's (kind, observed,
    discrete) recorded in ``sites``. Raises ValueError for discrete latent sites."""
    from numpyro.handlers import seed, substitute, trace
    from numpyro.infer.util import unconstrain_fn

    tr = trace(substitute(seed(model, key), substitute_fn=strategy)).get_trace(
        *model_args, **model_kwargs)
    for name, site in tr.items():
        if site["type"] == "sample":
            sites[name] = ("sample", bool(site["is_observed"]),
                           bool(site["fn"].support.is_discrete))
        elif site["type"] in ("param", "mutable", "deterministic"):
            sites[name] = (site["type"], False, False)
    discrete = [k for k, (kind, obs, disc) in sites.items()
                if kind == "sample" and not obs and disc]
    if discrete:
        raise ValueError(
            f"model has discrete latent site(s) {discrete}; noisycal's gradient and "
            "NUTS engines need a model whose discrete latent variables are "
            "marginalised (logsumexp) in the model"
        )
    fixed = {k: s["value"] for k, s in tr.items() if s["type"] in ("param", "mutable")}
    latent = {k: s["value"] for k, s in tr.items()
              if s["type"] == "sample" and not s["is_observed"]}
    return unconstrain_fn(substitute(model, data=fixed), model_args, model_kwargs, latent), fixed


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

    Call inside ``noisycal._jax.x64()`` for float64. See :func:`fit_map` for the
    arguments; ``rng_key`` seeds the initialisation (default key 0).
    ``init_strategy`` places the sites not in ``init_params``: ``'center'`` at the prior
    mean (median where the mean is not finite), ``'uniform'`` uniformly in (-2, 2) on the
    unconstrained scale (NumPyro's MCMC default).

    Returns
    -------
    Objective
        The initial point and the pure functions of the flat vector.
    """
    from jax.flatten_util import ravel_pytree
    from numpyro.handlers import seed, substitute
    from numpyro.infer import init_to_uniform
    from numpyro.infer.util import (
        compute_log_probs,
        constrain_fn,
        potential_energy,
    )

    model_args = tuple(model_args)
    model_kwargs = dict(model_kwargs or {})
    rng_key = jax.random.key(0) if rng_key is None else rng_key
    check_choice(init_strategy, "init_strategy", ("center", "uniform"))
    fallback = {"center": _init_to_prior_center, "uniform": init_to_uniform}[init_strategy]
    if init_params is not None:
        values = {k: jnp.asarray(v) for k, v in init_params.items()}
        strategy = _init_to_values(values, fallback)
    else:
        strategy = fallback

    # One jitted pass finds the initial point (eager tracing would compile every
    # primitive separately); the sites' Python-level metadata is recorded on the way.
    sites: dict[str, tuple[str, bool, bool]] = {}

    def initial(key: jax.Array) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
        return trace_initial(model, key, model_args, model_kwargs, strategy, sites)

    z0, fixed = jax.jit(initial)(rng_key)
    latent = [k for k, (kind, obs, _) in sites.items() if kind == "sample" and not obs]
    if init_params is not None:
        unknown = sorted(set(init_params) - set(latent))
        if unknown:
            raise ValueError(
                f"init_params has unknown site name(s) {unknown}; latent sites are {latent}"
            )
    base_model = seed(substitute(model, data=fixed), rng_seed=0)

    x0, unravel = ravel_pytree(z0)
    x0 = jnp.asarray(x0, dtype=jnp.result_type(float))
    names = []
    for name in sorted(z0):
        names.extend(_entry_names(name, tuple(np.shape(z0[name]))))
    latent_set = set(latent)

    def postprocess(z: dict[str, jax.Array]) -> dict[str, jax.Array]:
        return constrain_fn(base_model, model_args, model_kwargs, z, return_deterministic=True)

    def potential(z: dict[str, jax.Array]) -> jax.Array:
        return potential_energy(base_model, model_args, model_kwargs, z)

    def constrain(x: jax.Array) -> dict[str, jax.Array]:
        return postprocess(unravel(x))

    def log_parts(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        z = unravel(x)
        values = {k: v for k, v in postprocess(z).items() if k in latent_set}
        log_probs, tr = compute_log_probs(base_model, tuple(model_args), model_kwargs, values)
        loglik = jnp.zeros(())
        log_prior = jnp.zeros(())
        for name, lp in log_probs.items():
            if tr[name]["is_observed"]:
                loglik = loglik + lp
            else:
                log_prior = log_prior + lp
        # potential = -(loglik + log_prior + log|J|)
        log_jac = -potential(z) - loglik - log_prior
        return loglik, log_prior, log_jac

    def objective(x: jax.Array) -> jax.Array:
        loglik, log_prior, log_jac = log_parts(x)
        out = loglik
        if prior:
            out = out + log_prior
        if jacobian:
            out = out + log_jac
        return out

    def flat_potential(x: jax.Array) -> jax.Array:
        return potential(unravel(x))

    @jax.jit
    def init(key: jax.Array) -> jax.Array:
        return jnp.asarray(ravel_pytree(initial(key)[0])[0], dtype=x0.dtype)

    return Objective(x0, unravel, constrain, log_parts, objective, flat_potential, init, names)


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
                _entry_names(name, value.shape), value.ravel(), np.ravel(se), strict=True
            ):
                rows.append({"parameter": label, "estimate": float(v), "std_err": float(s)})
        return pd.DataFrame(rows).set_index("parameter")


def check_model_inputs(model: object, model_args: object, model_kwargs: object,
                       init_params: object) -> None:
    """Validate the model and its arguments (shared by :func:`fit_map` and ``run_nuts``)."""
    if not callable(model):
        raise ValueError(f"model must be a callable NumPyro model, got {model!r}")
    if not isinstance(model_args, tuple):
        raise ValueError(f"model_args must be a tuple, got {type(model_args).__name__}")
    if model_kwargs is not None and not isinstance(model_kwargs, Mapping):
        raise ValueError(f"model_kwargs must be a dict or None, got {type(model_kwargs).__name__}")
    if init_params is not None and not isinstance(init_params, Mapping):
        raise ValueError(f"init_params must be a dict or None, got {type(init_params).__name__}")


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
    check_model_inputs(model, model_args, model_kwargs, init_params)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not tol > 0:
        raise ValueError(f"tol must be a positive number, got {tol!r}")
    tol = float(tol)
    for flag, name in ((prior, "prior"), (jacobian, "jacobian"), (hessian, "hessian")):
        if not isinstance(flag, bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    if jacobian and not prior:
        raise ValueError("jacobian=True needs prior=True (a likelihood has no Jacobian term)")
    key = as_key(seed)

    with x64():
        obj = make_objective(
            model, model_args=model_args, model_kwargs=model_kwargs, init_params=init_params,
            prior=bool(prior), jacobian=bool(jacobian), rng_key=key,
        )
        result = _optimize(obj, max_iter=max_iter, tol=tol, prior=bool(prior),
                           jacobian=bool(jacobian), hessian=bool(hessian))
    if result.status != "ok":
        warnings.warn(f"fit_map: {result.message}", ConvergenceWarning,
                      stacklevel=_user_stacklevel())
    elif hessian and not np.all(np.isfinite(result.cov_unconstrained)):
        warnings.warn(f"fit_map: {result.message}", IdentifiabilityWarning,
                      stacklevel=_user_stacklevel())
    return result


def _optimize(obj: Objective, *, max_iter: int, tol: float, prior: bool, jacobian: bool,
              hessian: bool) -> MLEResult:
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

    x0 = np.asarray(obj.x0, dtype=np.float64)
    f0, _ = fun(x0)
    messages = []
    if n == 0:
        x, n_iter, success, opt_msg = x0, 0, True, "no free parameters"
    elif not math.isfinite(f0):
        x, n_iter, success, opt_msg = x0, 0, False, "objective is not finite at the start"
    else:
        res = scipy.optimize.minimize(
            fun, x0, jac=True, method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-10, "maxls": 50},
        )
        x, n_iter, success = np.asarray(res.x, dtype=np.float64), int(res.nit), bool(res.success)
        opt_msg = str(res.message)

    f_opt, g_opt = neg(jnp.asarray(x))
    f_opt, g_opt = float(f_opt), np.asarray(g_opt, dtype=np.float64)
    finite = math.isfinite(f_opt) and bool(np.all(np.isfinite(g_opt)))

    cov = np.full((n, n), np.nan)
    cov_ok = False
    decrement = math.nan
    if hessian and finite and n > 0:
        H = np.asarray(jax.jit(jax.hessian(lambda x: -obj.objective(x)))(jnp.asarray(x)),
                       dtype=np.float64)
        H = 0.5 * (H + H.T)
        if np.all(np.isfinite(H)):
            try:
                L = np.linalg.cholesky(H)
            except np.linalg.LinAlgError:
                L = None
            if L is not None:
                Linv = scipy.linalg.solve_triangular(L, np.eye(n), lower=True)
                cov = Linv.T @ Linv
                cov_ok = True
                decrement = 0.5 * float(g_opt @ cov @ g_opt)
        if not cov_ok:
            messages.append(
                "the Hessian of the objective is not positive definite at the optimum "
                "(a parameter may not be identified); cov_unconstrained is NaN"
            )

    near_optimum = cov_ok and decrement <= tol * max(1.0, abs(f_opt))
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
    params = {k: np.asarray(v) for k, v in params_j.items()}
    loglik, log_prior, _ = (float(v) for v in jax.jit(obj.log_parts)(xj))
    if cov_ok:
        from jax.flatten_util import ravel_pytree

        flat_c, unravel_c = ravel_pytree(params_j)

        def flat_constrain(x: jax.Array) -> jax.Array:
            return ravel_pytree(obj.constrain(x))[0]

        J = np.asarray(jax.jit(jax.jacfwd(flat_constrain))(xj), dtype=np.float64)
        var = np.einsum("ij,jk,ik->i", J, cov, J)
        se_flat = np.sqrt(np.clip(var, 0.0, None))
        std_errors = {k: np.asarray(v) for k, v in unravel_c(jnp.asarray(se_flat)).items()}
    else:
        std_errors = {k: np.full(np.shape(v), np.nan) for k, v in params.items()}

    return MLEResult(
        params=params,
        unconstrained=x,
        names=list(obj.names),
        loglik=loglik,
        log_prior=log_prior,
        log_joint=loglik + log_prior,
        objective=-f_opt,
        prior=prior,
        jacobian=jacobian,
        n_iter=n_iter,
        converged=converged,
        status=status,
        message="; ".join(messages),
        cov_unconstrained=cov,
        std_errors=std_errors,
        n_params=n,
    )
