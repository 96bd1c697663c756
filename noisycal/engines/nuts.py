"""A generic NUTS runner for NumPyro models, with ArviZ convergence diagnostics.

:func:`run_nuts` samples a model's posterior with NumPyro's NUTS kernel (the functional
``numpyro.infer.hmc.hmc`` API) on the model's potential energy in float64 (scoped, never
process-wide) and returns a :class:`NUTSResult` whose ``status`` says whether the chains
mixed (R-hat) and whether the sampler diverged.

Compilation happens once per model, data shapes and sampler settings: the model's
array inputs enter the compiled functions as arguments (never as constants baked into a
closure), and for noisycal's own models (or with ``cache=True``) the compiled program is
kept, so a refit on new data of the same shape (a simulation study, a warm refit)
compiles nothing. Without a progress bar, the
initialisation of every chain, all chains and the constrained draws are one compiled
call. Draws are mapped back to the constrained scale, deterministic sites included.
The potential comes from :func:`noisycal.engines.potential.build_potential`, the
builder the MLE/MAP engine uses too.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._jax import as_key, x64
from .._typing import Seed
from .._validation import check_choice, check_int, check_level
from .._warnings import ConvergenceWarning
from .potential import (
    FlatPotential,
    build_potential,
    check_model_inputs,
    check_seed,
    entry_names,
    split_inputs,
    user_stacklevel,
)

__all__ = [
    "NUTSResult",
    "check_sampler_options",
    "convergence_status",
    "diagnostics_table",
    "draws_conf_int",
    "import_arviz",
    "run_nuts",
    "sample_nuts",
    "to_inference_data",
]

#: Compiled samplers kept for reuse (least recently used dropped first).
_MAX_PROGRAMS = 16
#: Initial points tried per chain before giving up (finite log density and gradient).
_INIT_ATTEMPTS = 100
_PROGRAMS: OrderedDict[Any, _Program] = OrderedDict()


def _concrete_errors() -> tuple[type[Exception], ...]:
    import jax

    return (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError)


def import_arviz() -> Any:
    """Import ArviZ lazily, without letting its once-a-day import notice escape.

    ArviZ 0.2x emits a ``FutureWarning`` about its refactor on the first import of the
    day; it says nothing about the user's analysis, so it is silenced for the import only.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning
        )
        import arviz

    return arviz


def to_inference_data(samples: Mapping[str, np.ndarray],
                      sample_stats: Mapping[str, np.ndarray] | None = None) -> Any:
    """Draws as an ``arviz.InferenceData``.

    Parameters
    ----------
    samples : dict of str to ndarray
        Posterior draws with leading ``(chain, draw)`` axes.
    sample_stats : dict of str to ndarray or None, default=None
        Per-transition statistics (``diverging``, say) of shape ``(chain, draw)``.

    Returns
    -------
    arviz.InferenceData
    """
    az = import_arviz()
    return az.from_dict(posterior=dict(samples), sample_stats=dict(sample_stats or {}))


def draws_conf_int(draws: Mapping[str, np.ndarray], level: float) -> pd.DataFrame:
    """Equal-tailed intervals of draws with one leading draw axis, one row per entry.

    Parameters
    ----------
    draws : dict of str to ndarray
        Draws of each site, shape ``(n_draws, ...)``.
    level : float
        Credible level, a fraction in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Index ``parameter`` (``'W[0, 1]'``), columns ``lower`` and ``upper``.
    """
    level = check_level(level)
    rows = []
    for name, d in draws.items():
        d = np.asarray(d, dtype=np.float64)
        lo, hi = np.quantile(d.reshape(d.shape[0], -1), [(1 - level) / 2, (1 + level) / 2],
                             axis=0)
        labels = entry_names(name, d.shape[1:])
        rows += [{"parameter": lab, "lower": float(a), "upper": float(b)}
                 for lab, a, b in zip(labels, lo, hi, strict=True)]
    return pd.DataFrame(rows, columns=["parameter", "lower", "upper"]).set_index("parameter")


def diagnostics_table(samples: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Per-entry posterior summaries and convergence diagnostics.

    Parameters
    ----------
    samples : dict of str to ndarray
        Draws with leading ``(chain, draw)`` axes.

    Returns
    -------
    pandas.DataFrame
        One row per scalar entry (``'W[0, 1]'``), with columns ``mean``, ``sd``,
        ``mcse_mean``, ``ess_bulk``, ``ess_tail`` and ``r_hat`` (rank-normalised split
        R-hat and ESS of Vehtari et al. 2021, computed by ArviZ). Entries that do not
        vary have NaN diagnostics; ``r_hat`` is NaN with a single chain, and every
        diagnostic is NaN with fewer than 4 draws.
    """
    az = import_arviz()
    samples = {k: np.asarray(v, dtype=np.float64) for k, v in samples.items()}
    columns = ["mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]
    if not samples:
        return pd.DataFrame(columns=columns)
    n_chains, n_draws = next(iter(samples.values())).shape[:2]
    idata = az.from_dict(posterior=samples)
    stats = {}
    enough = n_draws >= 4
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        # constant entries (e.g. a fixed deterministic) give NaN diagnostics, not warnings
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        if enough:
            stats["mcse_mean"] = az.mcse(idata, method="mean")
            stats["ess_bulk"] = az.ess(idata, method="bulk")
            stats["ess_tail"] = az.ess(idata, method="tail")
        if enough and n_chains >= 2:
            stats["r_hat"] = az.rhat(idata)
    rows = []
    for name, draws in samples.items():
        shape = draws.shape[2:]
        flat = draws.reshape(n_chains * n_draws, -1)
        labels = [name] if not shape else [
            f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)
        ]
        per = {col: np.ravel(np.asarray(ds[name].values, dtype=np.float64))
               for col, ds in stats.items()}
        for j, label in enumerate(labels):
            row = {"parameter": label, "mean": float(flat[:, j].mean()),
                   "sd": float(flat[:, j].std(ddof=1)) if flat.shape[0] > 1 else math.nan}
            for col in columns[2:]:
                row[col] = float(per[col][j]) if col in per else math.nan
            rows.append(row)
    return pd.DataFrame(rows, columns=["parameter", *columns]).set_index("parameter")


@dataclass(frozen=True, eq=False)
class NUTSResult:
    """Result of :func:`run_nuts`.

    Attributes
    ----------
    samples : dict of str to ndarray
        Posterior draws of every latent and deterministic site, with leading
        ``(chain, draw)`` axes.
    diagnostics : pandas.DataFrame
        One row per scalar entry: ``mean``, ``sd``, ``mcse_mean``, ``ess_bulk``,
        ``ess_tail``, ``r_hat``.
    num_divergences : int
        Divergent transitions after warmup, all chains together.
    max_rhat : float
        Largest R-hat over entries (NaN entries ignored).
    min_ess_bulk : float
        Smallest bulk effective sample size over entries.
    status : {'ok', 'not_converged'}
        ``'not_converged'`` when ``max_rhat > rhat_threshold`` or there were divergences
        (the rule of :func:`convergence_status`).
    message : str
        What went wrong, if anything.
    num_chains, num_warmup, num_samples : int
        The run's sizes.
    rhat_threshold : float
        The R-hat threshold ``status`` used.
    diverging : ndarray of shape (num_chains, num_samples)
        Which transitions diverged.
    """

    samples: dict[str, np.ndarray] = field(repr=False)
    diagnostics: pd.DataFrame = field(repr=False)
    num_divergences: int
    max_rhat: float
    min_ess_bulk: float
    status: str
    message: str
    num_chains: int
    num_warmup: int
    num_samples: int
    rhat_threshold: float = 1.01
    diverging: np.ndarray | None = field(default=None, repr=False)

    @property
    def converged(self) -> bool:
        """Whether ``status == 'ok'``."""
        return self.status == "ok"

    def flat_samples(self) -> dict[str, np.ndarray]:
        """Draws with the chain and draw axes merged: ``(num_chains * num_samples, ...)``."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def conf_int(self, level: float = 0.9) -> pd.DataFrame:
        """Equal-tailed posterior credible intervals of every scalar entry.

        Parameters
        ----------
        level : float, default=0.9
            Credible level, a fraction in (0, 1).

        Returns
        -------
        pandas.DataFrame
            Index ``parameter`` (as in ``diagnostics``), columns ``lower`` and ``upper``:
            the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the draws, all
            chains together.
        """
        return draws_conf_int(self.flat_samples(), level)

    def summary(self) -> pd.DataFrame:
        """The ``diagnostics`` table."""
        return self.diagnostics

    def to_arviz(self) -> Any:
        """The draws as an ``arviz.InferenceData`` (posterior and ``diverging``)."""
        stats = None if self.diverging is None else {"diverging": self.diverging}
        return to_inference_data(self.samples, stats)

    to_inference_data = to_arviz


def run_nuts(
    model: Callable[..., Any],
    *,
    model_args: tuple = (),
    model_kwargs: Mapping[str, Any] | None = None,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    seed: Seed = 0,
    progress_bar: bool = True,
    init_params: Mapping[str, Any] | None = None,
    chain_method: str = "vectorized",
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    dense_mass: bool = False,
    rhat_threshold: float = 1.01,
    cache: bool | None = None,
) -> NUTSResult:
    """Sample a NumPyro model's posterior with NUTS, in float64.

    Parameters
    ----------
    model : callable
        A NumPyro model with continuous latent sites.
    model_args : tuple, default=()
        Positional arguments of the model (its data).
    model_kwargs : dict or None, default=None
        Keyword arguments of the model.
    num_chains : int, default=4
        Number of chains.
    num_warmup : int, default=1000
        Warmup (adaptation) iterations per chain, discarded.
    num_samples : int, default=1000
        Kept draws per chain.
    seed : int or jax key, default=0
        Randomness of initialisation and sampling; same seed, same draws.
    progress_bar : bool, default=True
        Show a progress bar (one per chain when chains run sequentially, one for all
        vectorized chains); the chains then advance in about 20 compiled chunks.
        Parallel chains run without one.
    init_params : dict or None, default=None
        Initial *constrained* values by site name (the same for every chain); sites left
        out (all of them when None) start uniformly in (-2, 2) on the unconstrained
        scale, independently for each chain.
    chain_method : {'vectorized', 'sequential', 'parallel'}, default='vectorized'
        How chains run (the default of the annotator models' ``fit(method='nuts')``
        too): ``'vectorized'`` advances all chains in lockstep in one compiled loop,
        ``'sequential'`` one after another. ``'parallel'`` needs as many JAX devices as
        chains (noisycal never changes the device count; set it in your own script if you want it).
    target_accept_prob : float, default=0.8
        Target acceptance probability of step-size adaptation.
    max_tree_depth : int, default=10
        Maximum NUTS tree depth.
    dense_mass : bool, default=False
        Adapt a dense mass matrix instead of a diagonal one.
    rhat_threshold : float, default=1.01
        ``status`` is ``'not_converged'`` when the largest R-hat exceeds it (strictly;
        see :func:`convergence_status`). Must be a number > 1. R-hat needs at least 2
        chains; with one chain it is NaN and not checked.
    cache : bool or None, default=None
        Keep the compiled sampler for later calls, keyed by the model function, its
        non-array inputs, the shapes and dtypes of its array inputs and the sampler
        settings (array inputs are arguments of the compiled code, so new data of the
        same shapes reuse it). None: only for noisycal's own models. A model that
        reads global or closure variables must not be cached: a later call would get
        the program compiled with their old values.

    Returns
    -------
    NUTSResult
        Draws, diagnostics and convergence status.

    Raises
    ------
    ValueError
        If an argument is invalid (the message names it).

    Warns
    -----
    ConvergenceWarning
        When R-hat exceeds ``rhat_threshold`` or there were divergent transitions.

    Examples
    --------
    >>> import numpyro, numpyro.distributions as dist
    >>> def model():
    ...     numpyro.sample("mu", dist.Normal(0.0, 1.0))
    >>> res = run_nuts(model, num_chains=2, num_warmup=500, num_samples=1000,
    ...                progress_bar=False, rhat_threshold=1.05)
    >>> res.status, res.samples["mu"].shape
    ('ok', (2, 1000))
    """
    # (over 80 lines only because of the numpydoc docstring above; the body is short)
    check_model_inputs(model, model_args, model_kwargs, init_params)
    num_chains, num_warmup, num_samples = check_sampler_options(
        num_chains, num_warmup, num_samples, chain_method, progress_bar, rhat_threshold)
    max_tree_depth = check_int(max_tree_depth, "max_tree_depth", minimum=1)
    if cache is not None and not isinstance(cache, bool | np.bool_):
        raise ValueError(f"cache must be True, False or None, got {cache!r}")
    if not isinstance(dense_mass, bool | np.bool_):
        raise ValueError(f"dense_mass must be True or False, got {dense_mass!r}")
    if (isinstance(target_accept_prob, bool) or not isinstance(target_accept_prob, int | float)
            or not 0.0 < target_accept_prob < 1.0):
        raise ValueError(f"target_accept_prob must be in (0, 1), got {target_accept_prob!r}")
    samples, diverging = sample_nuts(
        model, model_args=model_args, model_kwargs=model_kwargs, init_params=init_params,
        num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples,
        rng_key=as_key(check_seed(seed)), progress_bar=bool(progress_bar),
        chain_method=chain_method,
        target_accept_prob=float(target_accept_prob), max_tree_depth=max_tree_depth,
        dense_mass=bool(dense_mass), cache=cache)
    return _result(samples, diverging, num_chains=num_chains, num_warmup=num_warmup,
                   num_samples=num_samples, rhat_threshold=float(rhat_threshold))


def check_sampler_options(num_chains: object, num_warmup: object, num_samples: object,
                          chain_method: object, progress_bar: object, rhat_threshold: object,
                          *, min_warmup: int = 0) -> tuple[int, int, int]:
    """Validate the NUTS settings shared by :func:`run_nuts` and the annotator models.

    Parameters
    ----------
    num_chains, num_warmup, num_samples : object
        Integers >= 1 (``num_warmup`` >= ``min_warmup``).
    chain_method : object
        One of 'vectorized', 'sequential', 'parallel'.
    progress_bar : object
        True or False.
    rhat_threshold : object
        A finite number > 1.
    min_warmup : int, default=0
        Smallest allowed ``num_warmup``.

    Returns
    -------
    tuple of int
        ``(num_chains, num_warmup, num_samples)``.

    Raises
    ------
    ValueError
        Naming the first invalid setting.
    """
    num_chains = check_int(num_chains, "num_chains", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=min_warmup)
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    check_choice(chain_method, "chain_method", ("vectorized", "sequential", "parallel"))
    if not isinstance(progress_bar, bool | np.bool_):
        raise ValueError(f"progress_bar must be True or False, got {progress_bar!r}")
    if (isinstance(rhat_threshold, bool) or not isinstance(rhat_threshold, int | float)
            or not 1.0 < rhat_threshold < math.inf):
        raise ValueError(f"rhat_threshold must be a finite number > 1, got {rhat_threshold!r}")
    return num_chains, num_warmup, num_samples


def sample_nuts(model: Callable[..., Any], *, model_args: tuple,
                model_kwargs: Mapping[str, Any] | None, init_params: Mapping[str, Any] | None,
                num_chains: int, num_warmup: int, num_samples: int, rng_key: Any,
                progress_bar: bool, chain_method: str, target_accept_prob: float,
                max_tree_depth: int, dense_mass: bool, cache: bool | None = None
                ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The sampling core of :func:`run_nuts` on validated arguments, without diagnostics.

    Engines that post-process the draws (relabelling, say) use it and compute their
    diagnostics afterwards.

    Parameters
    ----------
    model : callable
        A NumPyro model with continuous latent sites.
    model_args, model_kwargs, init_params
        As in :func:`run_nuts` (already checked by :func:`check_model_inputs`).
    num_chains, num_warmup, num_samples : int
        As returned by :func:`check_sampler_options`.
    rng_key : jax key
        The run's key (``as_key(seed)``).
    progress_bar, chain_method, target_accept_prob, max_tree_depth, dense_mass, cache
        As in :func:`run_nuts`, validated.

    Returns
    -------
    samples : dict of str to ndarray
        Constrained draws by site, each of shape (num_chains, num_samples, ...).
    diverging : ndarray of shape (num_chains, num_samples)
        Divergence flags.
    """
    import jax
    import jax.numpy as jnp

    settings = {"target_accept_prob": float(target_accept_prob),
                "max_tree_depth": max_tree_depth, "dense_mass": bool(dense_mass)}
    with x64():
        signature, arrays, rebuild = split_inputs(tuple(model_args), dict(model_kwargs or {}))
        values = {k: jnp.asarray(v, dtype=jnp.result_type(float))
                  for k, v in (init_params or {}).items()}
        if cache is None:
            cache = getattr(model, "__module__", "").startswith("noisycal.")
        shapes = {k: tuple(v.shape) for k, v in values.items()}
        try:
            prog = _program(model, signature, rebuild, arrays, shapes, cache=cache,
                            **settings)
        except _concrete_errors():
            # the model needs concrete values of an array input (a plate size held in a
            # 0-d array, Python control flow on data): bake the arrays in, uncached
            signature, arrays, rebuild = split_inputs(tuple(model_args),
                                                       dict(model_kwargs or {}),
                                                       arrays_static=True)
            prog = _program(model, signature, rebuild, arrays, shapes, cache=False,
                            **settings)
        if chain_method == "parallel" or progress_bar:
            key_run, key_init = jax.random.split(rng_key)
            x_init, fixed, ok = prog.init_chains(key_init, arrays, values, num_chains)
            _check_start(ok)
            data = (arrays, fixed)
            keys = jax.random.split(key_run, num_chains)
            if chain_method == "parallel":
                z, div = _parallel(prog, num_warmup, num_samples)(keys, x_init, data)
            elif chain_method == "vectorized":
                z, div = _run_chain(prog, keys, x_init, data, num_warmup, num_samples,
                                    f"{num_chains} chains", vectorized=True)
            else:
                z, div = zip(*(_run_chain(prog, keys[c], x_init[c], data, num_warmup,
                                          num_samples, f"chain {c + 1}")
                               for c in range(num_chains)), strict=True)
                z, div = jnp.stack(z), jnp.stack(div)
            constrained = prog.constrain(z, data)
        else:
            # initialisation, all chains, and the constrained draws in one compiled call
            constrained, div, ok = prog.sample(rng_key, arrays, values, num_chains,
                                               num_warmup, num_samples,
                                               chain_method == "vectorized")
            _check_start(ok)
        samples = {k: np.asarray(v) for k, v in constrained.items()}
        diverging = np.asarray(div, dtype=bool)
    return samples, diverging


def _check_start(ok: Any) -> None:
    if not bool(np.all(np.asarray(ok))):
        raise ValueError(
            "could not find initial parameters with a finite log density and "
            f"gradient in {_INIT_ATTEMPTS} attempts; check the model and its data, or "
            "pass init_params"
        )


def _chunks(n: int) -> list[int]:
    """Transition counts per compiled call between progress-bar updates (about 20)."""
    if n <= 20:
        return [n] if n else []
    size = -(-n // 20)
    return [size] * (n // size) + ([n % size] if n % size else [])


def _run_chain(prog: _Program, key: Any, x: Any, data: tuple, num_warmup: int,
               num_samples: int, label: str, *, vectorized: bool = False
               ) -> tuple[Any, Any]:
    """One chain (or, ``vectorized``, all chains in lockstep) with a progress bar: it
    advances in compiled chunks between updates."""
    from tqdm.auto import tqdm

    import jax
    import jax.numpy as jnp

    start, advance, collect = ((prog.start_all, prog.advance_all, prog.collect_all)
                               if vectorized else (prog.start, prog.advance, prog.collect))
    state = start(key, x, data, num_warmup)
    zs, divs = [], []
    with tqdm(total=num_warmup + num_samples, desc=f"{label} warmup", leave=True) as bar:
        for n in _chunks(num_warmup):
            state = jax.block_until_ready(advance(state, data, n))
            bar.update(n)
        bar.set_description(f"{label} sample")
        for n in _chunks(num_samples):
            state, (z, div) = jax.block_until_ready(collect(state, data, n))
            zs.append(z)
            divs.append(div)
            bar.update(n)
    axis = 1 if vectorized else 0
    return jnp.concatenate(zs, axis=axis), jnp.concatenate(divs, axis=axis)


@lru_cache(maxsize=_MAX_PROGRAMS)
def _parallel(prog: _Program, num_warmup: int, num_samples: int) -> Callable:
    import jax

    return jax.pmap(lambda k, x, d: prog.run(k, x, d, num_warmup, num_samples),
                    in_axes=(0, 0, None))


def _result(samples: dict[str, np.ndarray], diverging: np.ndarray | None, *, num_chains: int,
            num_warmup: int, num_samples: int, rhat_threshold: float) -> NUTSResult:
    table = diagnostics_table(samples)
    rhat = table["r_hat"].to_numpy(dtype=np.float64)
    ess = table["ess_bulk"].to_numpy(dtype=np.float64)
    max_rhat = float(np.nanmax(rhat)) if np.any(np.isfinite(rhat)) else math.nan
    min_ess = float(np.nanmin(ess)) if np.any(np.isfinite(ess)) else math.nan
    n_div = int(diverging.sum()) if diverging is not None else 0
    worst = str(table["r_hat"].idxmax()) if np.any(np.isfinite(rhat)) else None
    status, message = convergence_status(max_rhat, n_div, rhat_threshold, worst=worst)
    if status != "ok":
        warnings.warn(message, ConvergenceWarning, stacklevel=user_stacklevel())
    elif not math.isfinite(max_rhat):
        message = ("R-hat needs at least 2 chains and 4 draws per chain; it was not checked"
                   if num_chains == 1 or num_samples < 4 else
                   "R-hat is undefined (no parameter varies); it was not checked")
    return NUTSResult(
        samples=samples, diagnostics=table, num_divergences=n_div, max_rhat=max_rhat,
        min_ess_bulk=min_ess, status=status, message=message, num_chains=num_chains,
        num_warmup=num_warmup, num_samples=num_samples, rhat_threshold=rhat_threshold,
        diverging=diverging,
    )



def convergence_status(max_rhat: float, n_divergent: int, rhat_threshold: float, *,
                       worst: str | None = None) -> tuple[str, str]:
    """The one NUTS convergence rule: R-hat strictly above the threshold, or divergences.

    Parameters
    ----------
    max_rhat : float
        Largest R-hat over the parameters; NaN (one chain, or too few draws) is not
        checked.
    n_divergent : int
        Divergent transitions after warmup, all chains together.
    rhat_threshold : float
        The run is flagged when ``max_rhat > rhat_threshold`` (strictly).
    worst : str or None, default=None
        Name of the parameter with the largest R-hat, for the message.

    Returns
    -------
    tuple of str
        ``('ok', '')`` or ``('not_converged', message)``.

    Examples
    --------
    >>> convergence_status(1.005, 0, 1.01)
    ('ok', '')
    >>> convergence_status(1.01, 0, 1.01)
    ('ok', '')
    >>> convergence_status(1.2, 3, 1.01)[0]
    'not_converged'
    """
    problems = []
    if max_rhat > rhat_threshold:
        where = f" (at {worst})" if worst else ""
        problems.append(f"max R-hat {max_rhat:.3f}{where} exceeds {rhat_threshold:g}")
    if n_divergent > 0:
        problems.append(f"{int(n_divergent)} divergent transition(s) after warmup")
    if not problems:
        return "ok", ""
    return "not_converged", ("NUTS: " + "; ".join(problems)
                             + "; run longer chains, raise target_accept_prob or reparameterise")


# ---------------------------------------------------------------- compiled programs
#
# A fit's data enter the compiled functions as arguments, never as constants baked into
# a closure, so a second fit of the same model with data of the same shapes (a warm
# refit, a simulation study, a bootstrap) reuses the compiled sampler instead of
# tracing and compiling it again. Programs are cached by the model function, the
# static (non-array) part of its inputs, the shapes and dtypes of the array part and
# the sampler settings.



class _Program(NamedTuple):
    """The jitted pieces of NUTS on one model; ``data`` is ``(arrays, fixed)`` throughout.

    ``arrays`` are the model's array inputs and ``fixed`` its ``param`` sites' values.
    """

    names: tuple[str, ...]  # latent sites
    init_chains: Callable  # (key, arrays, init_values, C) -> (x (C, d), fixed, ok (C,))
    start: Callable  # (key, x, data, num_warmup) -> HMCState
    advance: Callable  # (state, data, n) -> state after n transitions
    collect: Callable  # (state, data, n) -> (state, (z (n, d), diverging (n,)))
    run: Callable  # (key, x, data, num_warmup, num_samples) -> (z, diverging)
    run_chains: Callable  # (keys, x (C, d), data, W, S, vectorized) -> (z, diverging)
    start_all: Callable  # start, advance and collect vmapped over chains (progress bar)
    advance_all: Callable
    collect_all: Callable
    constrain: Callable  # (z (chains, draws, d), data) -> dict of constrained values
    sample: Callable  # (key, arrays, init_values, C, W, S, vectorized) -> all of it


def _initialiser(pot: FlatPotential) -> Callable:
    """``(key, arrays, values, C) -> (x (C, d), fixed, ok (C,))``: a start for each chain.

    Sites without given values start uniformly in (-2, 2) (unconstrained); each chain
    retries up to ``_INIT_ATTEMPTS`` times until the potential and its gradient are finite.
    """
    import jax
    import jax.numpy as jnp

    def attempt(key: jax.Array, dyn: list, values: dict) -> tuple:
        x, fixed = pot.initial(key, dyn, values)
        pe, grad = jax.value_and_grad(pot.potential)(x, (dyn, fixed))
        return x, fixed, jnp.isfinite(pe) & jnp.all(jnp.isfinite(grad))

    def find_start(key: jax.Array, dyn: list, values: dict) -> tuple:
        keys = jax.random.split(key, _INIT_ATTEMPTS)
        x, fixed, ok = attempt(keys[0], dyn, values)

        def body(c: tuple) -> tuple:
            return (c[0] + 1, *attempt(keys[c[0]], dyn, values))

        _, x, fixed, ok = jax.lax.while_loop(lambda c: ~c[3] & (c[0] < _INIT_ATTEMPTS),
                                             body, (1, x, fixed, ok))
        return x, fixed, ok

    def init_chains(key: jax.Array, dyn: list, values: dict, num_chains: int) -> tuple:
        x, fixed, ok = jax.vmap(find_start, (0, None, None))(
            jax.random.split(key, num_chains), dyn, values)
        return x, jax.tree_util.tree_map(lambda v: v[0], fixed), ok

    return init_chains


class _Kernels(NamedTuple):
    """NUTS on a potential, unjitted: start, advance/collect in chunks, or run at once."""

    start: Callable  # (key, x, data, num_warmup) -> HMCState
    advance: Callable  # (state, data, n) -> state after n transitions
    collect: Callable  # (state, data, n) -> (state, (z (n, d), diverging (n,)))
    run: Callable  # (key, x, data, num_warmup, num_samples) -> (z, diverging)


def _kernels(pot: FlatPotential, *, target_accept_prob: float, max_tree_depth: int,
             dense_mass: bool) -> _Kernels:
    import jax
    import jax.numpy as jnp
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(
        potential_fn_gen=lambda data: partial(pot.potential, data=data), algo="NUTS")

    def start(key: jax.Array, x: jax.Array, data: tuple, num_warmup: int) -> Any:
        return init_kernel(x, num_warmup, dense_mass=dense_mass,
                           target_accept_prob=target_accept_prob,
                           max_tree_depth=max_tree_depth, model_args=(data,), rng_key=key)

    def advance(state: Any, data: tuple, n: int) -> Any:
        return jax.lax.fori_loop(0, n, lambda _, s: sample_kernel(s, model_args=(data,)),
                                 state)

    def collect(state: Any, data: tuple, n: int) -> tuple[Any, tuple]:
        def body(s: Any, _: None) -> tuple[Any, tuple]:
            s = sample_kernel(s, model_args=(data,))
            return s, (s.z, s.diverging)

        return jax.lax.scan(body, state, None, length=n)

    def run(key: jax.Array, x: jax.Array, data: tuple, num_warmup: int,
            num_samples: int) -> tuple:
        # one loop over warmup and sampling (one copy of the kernel to compile); draw
        # i is written at row max(i - num_warmup, 0), so warmup rows are overwritten
        state = start(key, x, data, num_warmup)

        def body(i: jax.Array, carry: tuple) -> tuple:
            s, zs, divs = carry
            s = sample_kernel(s, model_args=(data,))
            j = jnp.maximum(i - num_warmup, 0)
            return s, zs.at[j].set(s.z), divs.at[j].set(s.diverging)

        zs = jnp.zeros((num_samples, x.shape[0]), x.dtype)
        divs = jnp.zeros(num_samples, bool)
        _, zs, divs = jax.lax.fori_loop(0, num_warmup + num_samples, body,
                                        (state, zs, divs))
        return zs, divs

    return _Kernels(start, advance, collect, run)


def _build_program(model: Callable, rebuild: Callable, arrays: list,
                   init_shapes: dict[str, tuple], *, target_accept_prob: float,
                   max_tree_depth: int, dense_mass: bool) -> _Program:
    import jax

    pot = build_potential(model, rebuild, arrays, init_shapes, init_strategy="uniform")
    init_chains = _initialiser(pot)
    k = _kernels(pot, target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth,
                 dense_mass=dense_mass)

    def run_chains(keys: jax.Array, x: jax.Array, data: tuple, num_warmup: int,
                   num_samples: int, vectorized: bool) -> tuple:
        def one(key: jax.Array, x0: jax.Array) -> tuple:
            return k.run(key, x0, data, num_warmup, num_samples)

        if vectorized:
            return jax.vmap(one)(keys, x)
        return jax.lax.map(lambda kx: one(*kx), (keys, x))  # one chain after another

    def constrain_draws(z: jax.Array, data: tuple) -> dict:
        return jax.vmap(jax.vmap(pot.constrain, (0, None)), (0, None))(z, data)

    def sample(key: jax.Array, dyn: list, values: dict, num_chains: int, num_warmup: int,
               num_samples: int, vectorized: bool) -> tuple:
        key_run, key_init = jax.random.split(key)
        x, fixed, ok = init_chains(key_init, dyn, values, num_chains)
        data = (dyn, fixed)
        z, div = run_chains(jax.random.split(key_run, num_chains), x, data, num_warmup,
                            num_samples, vectorized)
        return constrain_draws(z, data), div, ok

    return _Program(
        names=pot.latent,
        init_chains=jax.jit(init_chains, static_argnums=3),
        start=jax.jit(k.start, static_argnums=3),
        advance=jax.jit(k.advance, static_argnums=2),
        collect=jax.jit(k.collect, static_argnums=2),
        run=jax.jit(k.run, static_argnums=(3, 4)),
        run_chains=jax.jit(run_chains, static_argnums=(3, 4, 5)),
        start_all=jax.jit(lambda key, x, d, w: jax.vmap(
            lambda ki, xi: k.start(ki, xi, d, w))(key, x), static_argnums=3),
        advance_all=jax.jit(lambda st, d, n: jax.vmap(lambda si: k.advance(si, d, n))(st),
                            static_argnums=2),
        collect_all=jax.jit(lambda st, d, n: jax.vmap(lambda si: k.collect(si, d, n))(st),
                            static_argnums=2),
        constrain=jax.jit(constrain_draws),
        sample=jax.jit(sample, static_argnums=(3, 4, 5, 6)),
    )


def _program(model: Callable, signature: Any, rebuild: Callable, arrays: list,
             init_shapes: dict[str, tuple], *, cache: bool, **settings: Any) -> _Program:
    key = (model, signature, tuple(sorted(init_shapes.items())),
           tuple(sorted(settings.items())))
    if not cache:
        return _build_program(model, rebuild, arrays, init_shapes, **settings)
    try:
        hash(key)
    except TypeError:  # an unhashable static input: build without caching
        return _build_program(model, rebuild, arrays, init_shapes, **settings)
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _build_program(model, rebuild, arrays, init_shapes, **settings)
        _PROGRAMS[key] = prog
        while len(_PROGRAMS) > _MAX_PROGRAMS:
            _PROGRAMS.popitem(last=False)
    else:
        _PROGRAMS.move_to_end(key)
    return prog
