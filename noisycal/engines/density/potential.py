"""One builder from a NumPyro model to a flat potential, shared by gradient MLE/MAP and NUTS.

:func:`build_potential` maps a NumPyro model's continuous latent sites to one flat
unconstrained vector (NumPyro's ``biject_to`` transforms) and returns pure functions of
that vector and of the model's data: the potential energy that NUTS samples from, its split
into log-likelihood, log prior and log Jacobian that the MLE/MAP engine maximises, the
map back to the constrained scale, and a traced initialisation. The data enter as
arguments ``data = (arrays, fixed)`` (the model's array inputs and the values of its
``param`` sites), never as constants baked into a closure, so a compiled function can be
reused for new data of the same shapes; :func:`split_inputs` separates the array inputs
from the rest.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.validation import check_choice, user_stacklevel

__all__ = [
    "FlatPotential",
    "build_potential",
    "cached_program",
    "check_model_inputs",
    "concrete_errors",
    "initial_values",
    "is_own_model",
    "entry_names",
    "split_inputs",
    "trace_initial",
    "user_stacklevel",
]


def concrete_errors() -> tuple[type[Exception], ...]:
    """The errors JAX raises when a model needs a concrete value of an array input (a
    plate size held in a 0-d array, Python control flow on data): such a model is
    compiled with its arrays as constants instead (``split_inputs(arrays_static=True)``)."""
    return (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError,
            jax.errors.NonConcreteBooleanIndexError)


def initial_values(init_params: Mapping[str, Any] | None) -> dict[str, jax.Array]:
    """The given constrained initial values by site name, as float arrays (their shapes
    are part of a compiled program's key)."""
    return {k: jnp.asarray(v, dtype=jnp.result_type(float))
            for k, v in (init_params or {}).items()}


def is_own_model(model: object) -> bool:
    """Whether ``model`` is one of noisycal's models, whose compiled programs are kept: a
    user's model may read globals that change between calls, so it is retraced."""
    return (getattr(model, "__module__", None) or "").startswith("noisycal.")


def cached_program(programs: OrderedDict, model: Callable[..., Any], signature: Any,
                   init_shapes: Mapping[str, tuple], settings: Mapping[str, Any],
                   build: Callable[[], Any], *, cache: bool, maxsize: int) -> Any:
    """``build()``, kept in ``programs`` when ``cache`` is true (the NUTS and MLE programs).

    The least recently used program is dropped beyond ``maxsize``; a key that cannot be
    hashed (an unhashable static model input) builds without caching.

    Parameters
    ----------
    programs : OrderedDict
        The engine's kept programs, least recently used first.
    model : callable
        The NumPyro model.
    signature : tuple
        Its inputs' :func:`split_inputs` signature (static values, array shapes and dtypes).
    init_shapes : mapping of str to tuple of int
        Shapes of the initial values the program is given.
    settings : mapping of str to object
        The settings the program is compiled with (hashable values).
    build : callable
        ``() -> program``.
    cache : bool
        Keep the program (False: build it for this call only).
    maxsize : int
        Programs kept at most.

    Returns
    -------
    object
        The kept or newly built program.
    """
    if not cache:
        return build()
    key = (model, signature, tuple(sorted(init_shapes.items())),
           tuple(sorted(settings.items())))
    try:
        hash(key)
    except TypeError:
        return build()
    prog = programs.get(key)
    if prog is None:
        prog = build()
        programs[key] = prog
        while len(programs) > maxsize:
            programs.popitem(last=False)
    else:
        programs.move_to_end(key)
    return prog


def check_model_inputs(model: object, model_args: object, model_kwargs: object,
                       init_params: object) -> None:
    """Validate a model and its arguments (shared by ``fit_map`` and ``run_nuts``).

    Parameters
    ----------
    model : object
        Must be callable (a NumPyro model).
    model_args : object
        Must be a tuple.
    model_kwargs : object
        Must be a mapping or None.
    init_params : object
        Must be a mapping or None.

    Raises
    ------
    ValueError
        Naming the first invalid argument.
    """
    if not callable(model):
        raise ValueError(f"model must be a callable NumPyro model, got {model!r}")
    if not isinstance(model_args, tuple):
        raise ValueError(f"model_args must be a tuple, got {type(model_args).__name__}")
    if model_kwargs is not None and not isinstance(model_kwargs, Mapping):
        raise ValueError(f"model_kwargs must be a dict or None, got {type(model_kwargs).__name__}")
    if init_params is not None and not isinstance(init_params, Mapping):
        raise ValueError(f"init_params must be a dict or None, got {type(init_params).__name__}")


def entry_names(name: str, shape: tuple[int, ...]) -> list[str]:
    """Labels of the scalar entries of a site: ``'mu'``, or ``'W[0, 1]'`` row-major.

    Parameters
    ----------
    name : str
        The site name.
    shape : tuple of int
        The site's shape.

    Returns
    -------
    list of str
    """
    if len(shape) == 0:
        return [name]
    return [f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


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


def trace_initial(model: Callable[..., Any], key: jax.Array, model_args: tuple,
                  model_kwargs: dict, strategy: Callable[..., Any],
                  sites: dict[str, tuple[str, bool, bool]]) -> tuple[dict, dict]:
    """Trace ``model`` once with an init ``strategy``.

    Parameters
    ----------
    model : callable
        The NumPyro model.
    key : jax key
        Seeds the trace (strategies that sample).
    model_args : tuple
        Positional model inputs.
    model_kwargs : dict
        Keyword model inputs.
    strategy : callable
        A NumPyro init strategy (``substitute_fn``).
    sites : dict
        Filled with each site's ``(kind, observed, discrete)``.

    Returns
    -------
    tuple of dict
        The unconstrained latent values and the values of the ``param``/``mutable`` sites.

    Raises
    ------
    ValueError
        For discrete latent sites.
    """
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


def split_inputs(model_args: tuple, model_kwargs: dict, *, arrays_static: bool = False
                 ) -> tuple[Any, list, Callable]:
    """Split a model's inputs into array leaves (dynamic) and the rest (static).

    Parameters
    ----------
    model_args : tuple
        Positional model inputs.
    model_kwargs : dict
        Keyword model inputs.
    arrays_static : bool, default=False
        Keep every input, arrays included, as a constant (for models that need concrete
        values of an array input); ``arrays`` is then empty.

    Returns
    -------
    signature : tuple
        Hashable description of the static part and of the arrays' shapes and dtypes
        (unless ``arrays_static``), for caching compiled programs.
    arrays : list of jax.Array
        The dynamic array inputs.
    rebuild : callable
        ``arrays -> (model_args, model_kwargs)``.
    """
    leaves, treedef = jax.tree_util.tree_flatten((model_args, model_kwargs))
    mask = tuple(not arrays_static and isinstance(v, np.ndarray | jax.Array) for v in leaves)
    static = tuple(None if m else v for v, m in zip(leaves, mask, strict=True))
    arrays = [jnp.asarray(v) for v, m in zip(leaves, mask, strict=True) if m]

    def rebuild(dyn: list) -> tuple[tuple, dict]:
        it = iter(dyn)
        args, kwargs = jax.tree_util.tree_unflatten(
            treedef, [next(it) if m else s for m, s in zip(mask, static, strict=True)])
        return tuple(args), dict(kwargs)

    signature = (treedef, mask, static,
                 tuple((tuple(a.shape), str(a.dtype)) for a in arrays))
    return signature, arrays, rebuild


class FlatPotential(NamedTuple):
    """A NumPyro model as pure functions of a flat unconstrained vector ``x`` and its data.

    ``data`` is ``(arrays, fixed)`` throughout: the model's dynamic array inputs (see
    :func:`split_inputs`) and the values of its ``param``/``mutable`` sites (returned by
    ``initial``).

    Attributes
    ----------
    latent : tuple of str
        The latent sample sites.
    names : list of str
        A label for each entry of the flat vector, e.g. ``'kappa'``, ``'b[1]'``.
    initial : callable
        ``(key, arrays, values) -> (x, fixed)``: a flat initial vector (float) from the
        init strategy, given constrained ``values`` by site name, and the ``fixed`` values.
    potential : callable
        ``(x, data) -> -(loglik + log_prior + log_jacobian)``, NumPyro's potential energy
        (what NUTS samples from).
    log_parts : callable
        ``(x, data) -> (loglik, log_prior, log_jacobian)``, each a scalar: the summed log
        densities of the observed (and factor) sites, of the latent sites' priors, and
        the log absolute Jacobian determinant of the unconstrained-to-constrained map.
    constrain : callable
        ``(x, data) -> dict`` of constrained latent and deterministic site values.
    """

    latent: tuple[str, ...]
    names: list[str]
    initial: Callable[..., tuple[jax.Array, dict]]
    potential: Callable[[jax.Array, tuple], jax.Array]
    log_parts: Callable[[jax.Array, tuple], tuple[jax.Array, jax.Array, jax.Array]]
    constrain: Callable[[jax.Array, tuple], dict[str, jax.Array]]


def build_potential(model: Callable[..., Any], rebuild: Callable[[list], tuple[tuple, dict]],
                    arrays: list, init_shapes: Mapping[str, tuple[int, ...]], *,
                    init_strategy: str = "uniform") -> FlatPotential:
    """Build the flat potential of ``model`` (call inside ``noisycal._util.jax.x64()``).

    Parameters
    ----------
    model : callable
        A NumPyro model with continuous latent sites.
    rebuild : callable
        ``arrays -> (model_args, model_kwargs)``, from :func:`split_inputs`.
    arrays : list of jax.Array
        The model's dynamic array inputs (only their shapes and dtypes are used here).
    init_shapes : mapping of str to tuple of int
        Shapes of the constrained initial values that ``initial`` will be given, by site
        name (names that are not latent sites are refused).
    init_strategy : {'uniform', 'center'}, default='uniform'
        Where ``initial`` places the sites without a given value: ``'uniform'``
        uniformly in (-2, 2) on the unconstrained scale (NumPyro's MCMC default),
        ``'center'`` at the prior mean (the median where the mean is not finite).

    Returns
    -------
    FlatPotential

    Raises
    ------
    ValueError
        If the model has discrete latent sites or ``init_shapes`` names an unknown site.
    """
    # (over 80 lines with its docstring: the closures below share the traced site
    # metadata and ``unravel``, so they are built together)
    from jax.flatten_util import ravel_pytree
    from numpyro.handlers import seed, substitute
    from numpyro.infer import init_to_uniform
    from numpyro.infer.util import compute_log_probs, constrain_fn, potential_energy

    check_choice(init_strategy, "init_strategy", ("uniform", "center"))
    fallback = {"center": _init_to_prior_center, "uniform": init_to_uniform}[init_strategy]
    sites: dict[str, tuple[str, bool, bool]] = {}

    def traced(key: jax.Array, dyn: list, values: dict) -> tuple[dict, dict]:
        args, kwargs = rebuild(dyn)
        return trace_initial(model, key, args, kwargs, _init_to_values(values, fallback), sites)

    # tracing once (without compiling) records the sites and the latent shapes
    dummy = {k: jnp.zeros(s) for k, s in init_shapes.items()}
    z_shape, _ = jax.eval_shape(traced, jax.random.key(0), arrays, dummy)
    latent = tuple(k for k, (kind, obs, _) in sites.items() if kind == "sample" and not obs)
    unknown = sorted(set(init_shapes) - set(latent))
    if unknown:
        raise ValueError(
            f"init_params has unknown site name(s) {unknown}; latent sites are {list(latent)}"
        )
    _, unravel = ravel_pytree(jax.tree_util.tree_map(
        lambda s: jnp.zeros(s.shape, s.dtype), z_shape))
    names = [label for name in sorted(z_shape)
             for label in entry_names(name, tuple(z_shape[name].shape))]
    latent_set = set(latent)

    def model_of(data: tuple) -> tuple[Callable, tuple, dict]:
        dyn, fixed = data
        args, kwargs = rebuild(dyn)
        return seed(substitute(model, data=fixed), rng_seed=0), args, kwargs

    def initial(key: jax.Array, dyn: list, values: dict) -> tuple[jax.Array, dict]:
        z, fixed = traced(key, dyn, values)
        return jnp.asarray(ravel_pytree(z)[0], dtype=jnp.result_type(float)), fixed

    def potential(x: jax.Array, data: tuple) -> jax.Array:
        m, args, kwargs = model_of(data)
        return potential_energy(m, args, kwargs, unravel(x))

    def constrain(x: jax.Array, data: tuple) -> dict:
        m, args, kwargs = model_of(data)
        return constrain_fn(m, args, kwargs, unravel(x), return_deterministic=True)

    def log_parts(x: jax.Array, data: tuple) -> tuple[jax.Array, jax.Array, jax.Array]:
        m, args, kwargs = model_of(data)
        values = {k: v for k, v in constrain(x, data).items() if k in latent_set}
        log_probs, tr = compute_log_probs(m, args, kwargs, values)
        loglik = jnp.zeros(())
        log_prior = jnp.zeros(())
        for name, lp in log_probs.items():
            if tr[name]["is_observed"]:
                loglik = loglik + lp
            else:
                log_prior = log_prior + lp
        # potential = -(loglik + log_prior + log|J|)
        log_jac = -potential(x, data) - loglik - log_prior
        return loglik, log_prior, log_jac

    return FlatPotential(latent, names, initial, potential, log_parts, constrain)
