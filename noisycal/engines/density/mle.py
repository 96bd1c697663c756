"""Gradient maximum likelihood / MAP on any NumPyro model's log density.

The functional core is a set of compiled functions of one model: its log density split
into likelihood and prior on a flat unconstrained vector, built by the one model-to-potential
builder :func:`noisycal.engines.density.potential.build_potential` that NUTS uses too, with
the objective's gradient and Hessian and the constraining map and its Jacobian.
:func:`fit_map` is the driver that minimises the objective with SciPy's L-BFGS-B, using JAX
gradients in float64, and returns an :class:`MLEResult`; :func:`make_objective` hands the
objective, the constraining map and the log-density parts to a caller. For noisycal's own
models the array inputs enter the compiled functions as arguments and the functions are
kept per model, data shapes and objective (as the NUTS programs are), so a fit on new data
of the same shapes (a simulation study's replications) compiles nothing; a user's model
has its inputs compiled in and is compiled again on every fit (it may read globals).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections import OrderedDict
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
    cached_program,
    check_model_inputs,
    concrete_errors,
    entry_names,
    initial_values,
    is_own_model,
    split_inputs,
    trace_initial,
    user_stacklevel,
)

__all__ = ["MLEResult", "Objective", "make_objective", "fit_map", "check_model_inputs",
           "trace_initial"]


class Objective(NamedTuple):
    """A model's log density on a flat unconstrained vector, as pure functions of it.

    Built by :func:`make_objective`; :func:`fit_map` maximises the same ``objective``.

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


#: Compiled MLE/MAP programs of noisycal's own models, kept for reuse (least recently used
#: dropped first), as the NUTS programs are.
MAX_PROGRAMS = 16
PROGRAMS: OrderedDict[Any, _Program] = OrderedDict()


class _Program(NamedTuple):
    """The jitted pieces of an MLE/MAP fit of one model; ``data`` is ``(arrays, fixed)``.

    The model's array inputs are arguments, so a fit on new data of the same shapes (a
    simulation study, a bootstrap, a second start) reuses every compiled piece.
    """

    names: list[str]
    initial: Callable  # (key, arrays, values) -> (x0, fixed)
    constrain: Callable  # (x, data) -> dict of constrained values
    log_parts: Callable  # (x, data) -> (loglik, log_prior, log_jacobian)
    objective: Callable  # (x, data) -> the maximised scalar (not jitted: for composing)
    neg_value_and_grad: Callable  # (x, data) -> (-objective, its gradient)
    neg_hessian: Callable  # (x, data) -> Hessian of -objective
    constrain_jacobian: Callable  # (x, data) -> Jacobian of the flat constrained values


def _build_program(model: Callable[..., Any], rebuild: Callable, arrays: list,
                   init_shapes: dict[str, tuple], *, init_strategy: str, prior: bool,
                   jacobian: bool) -> _Program:
    from jax.flatten_util import ravel_pytree

    pot = build_potential(model, rebuild, arrays, init_shapes, init_strategy=init_strategy)

    def objective(x: jax.Array, data: tuple) -> jax.Array:
        loglik, log_prior, log_jac = pot.log_parts(x, data)
        out = loglik
        if prior:
            out = out + log_prior
        if jacobian:
            out = out + log_jac
        return out

    def neg(x: jax.Array, data: tuple) -> jax.Array:
        return -objective(x, data)

    def flat_constrain(x: jax.Array, data: tuple) -> jax.Array:
        return ravel_pytree(pot.constrain(x, data))[0]

    return _Program(pot.names, jax.jit(pot.initial), jax.jit(pot.constrain),
                    jax.jit(pot.log_parts), objective, jax.jit(jax.value_and_grad(neg)),
                    jax.jit(jax.hessian(neg)), jax.jit(jax.jacfwd(flat_constrain)))


def _start(model: Callable[..., Any], model_args: tuple, model_kwargs: Mapping[str, Any] | None,
           init_params: Mapping[str, Any] | None, *, prior: bool, jacobian: bool,
           rng_key: jax.Array, init_strategy: str) -> tuple[_Program, tuple, jax.Array]:
    """The model's program, its data ``(arrays, fixed)`` and the initial flat vector.

    noisycal's own models take their array inputs as arguments and their programs are
    kept; a user's model (which may read globals that change between calls), or one that
    needs concrete values of an array input (a plate size), has its inputs baked in as
    constants and is compiled for this fit only.
    """
    values = initial_values(init_params)
    init_shapes = {k: tuple(v.shape) for k, v in values.items()}
    settings = {"init_strategy": init_strategy, "prior": prior, "jacobian": jacobian}

    def program(arrays_static: bool) -> tuple[_Program, list]:
        signature, arrays, rebuild = split_inputs(tuple(model_args), dict(model_kwargs or {}),
                                                  arrays_static=arrays_static)
        return cached_program(
            PROGRAMS, model, signature, init_shapes, settings,
            lambda: _build_program(model, rebuild, arrays, init_shapes, **settings),
            cache=not arrays_static, maxsize=MAX_PROGRAMS), arrays

    prog = None
    if is_own_model(model):
        try:
            prog, arrays = program(arrays_static=False)
        except concrete_errors():
            prog = None
    if prog is None:
        prog, arrays = program(arrays_static=True)
    x0, fixed = prog.initial(rng_key, arrays, values)
    return prog, (arrays, fixed), x0


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

    Call inside ``noisycal._util.jax.x64()`` for float64. The returned functions call
    compiled programs with the model's inputs bound: for noisycal's own models the programs
    are kept and reused by later fits on data of the same shapes; a user's model has its
    inputs compiled in as constants.

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
    prog, data, x0 = _start(model, model_args, model_kwargs, init_params, prior=bool(prior),
                            jacobian=bool(jacobian),
                            rng_key=jax.random.key(0) if rng_key is None else rng_key,
                            init_strategy=init_strategy)
    return Objective(x0, lambda x: prog.constrain(x, data), lambda x: prog.log_parts(x, data),
                     lambda x: prog.objective(x, data), list(prog.names))


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
        prog, data, x0 = _start(model, model_args, model_kwargs, init_params,
                                prior=bool(prior), jacobian=bool(jacobian), rng_key=key,
                                init_strategy="center")
        with ProgressBar(max_iter, "L-BFGS-B iterations", enabled=progress) as bar:
            result = _optimize(prog, data, x0, max_iter=max_iter, tol=tol, prior=bool(prior),
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


def _covariance(prog: _Program, data: tuple, x: np.ndarray) -> np.ndarray | None:
    """Inverse Hessian of ``-objective`` at ``x``, or None where it is not positive definite."""
    n = x.shape[0]
    H = np.asarray(prog.neg_hessian(jnp.asarray(x), data), dtype=np.float64)
    H = 0.5 * (H + H.T)
    if not np.all(np.isfinite(H)):
        return None
    try:
        L = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        return None
    Linv = scipy.linalg.solve_triangular(L, np.eye(n), lower=True)
    return Linv.T @ Linv


def _std_errors(prog: _Program, data: tuple, x: np.ndarray, cov: np.ndarray | None,
                params_j: dict[str, jax.Array]) -> dict[str, np.ndarray]:
    """Delta-method standard errors of the constrained values (NaN without ``cov``)."""
    if cov is None:
        return {k: np.full(np.shape(v), np.nan) for k, v in params_j.items()}
    from jax.flatten_util import ravel_pytree

    _, unravel_c = ravel_pytree(params_j)
    J = np.asarray(prog.constrain_jacobian(jnp.asarray(x), data), dtype=np.float64)
    var = np.einsum("ij,jk,ik->i", J, cov, J)
    se_flat = np.sqrt(np.clip(var, 0.0, None))
    return {k: np.asarray(v) for k, v in unravel_c(jnp.asarray(se_flat)).items()}


def _optimize(prog: _Program, data: tuple, x0: jax.Array, *, max_iter: int, tol: float,
              prior: bool, jacobian: bool, hessian: bool,
              bar: ProgressBar | None = None) -> MLEResult:
    """Minimise ``-objective`` with L-BFGS-B from ``x0``; then Hessian, covariance and
    summaries."""
    n = int(x0.shape[0])

    def neg(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return prog.neg_value_and_grad(x, data)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = neg(jnp.asarray(x))
        f = float(f)
        g = np.asarray(g, dtype=np.float64)
        if not math.isfinite(f) or not np.all(np.isfinite(g)):
            # make L-BFGS-B's line search back off instead of stepping into NaN
            return math.inf, np.zeros_like(g)
        return f, g

    x, n_iter, success, opt_msg = _minimize(fun, np.asarray(x0, dtype=np.float64),
                                            max_iter=max_iter, tol=tol, bar=bar)
    f_opt, g_opt = neg(jnp.asarray(x))
    f_opt, g_opt = float(f_opt), np.asarray(g_opt, dtype=np.float64)
    finite = math.isfinite(f_opt) and bool(np.all(np.isfinite(g_opt)))

    cov, messages, decrement = None, [], math.nan
    if hessian and finite and n > 0:
        cov = _covariance(prog, data, x)
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
    params_j = prog.constrain(xj, data)
    loglik, log_prior, _ = (float(v) for v in prog.log_parts(xj, data))
    return MLEResult(
        params={k: np.asarray(v) for k, v in params_j.items()},
        unconstrained=x, names=list(prog.names), loglik=loglik, log_prior=log_prior,
        log_joint=loglik + log_prior, objective=-f_opt, prior=prior, jacobian=jacobian,
        n_iter=n_iter, converged=converged, status=status, message="; ".join(messages),
        cov_unconstrained=np.full((n, n), np.nan) if cov is None else cov,
        std_errors=_std_errors(prog, data, x, cov, params_j), n_params=n,
    )
