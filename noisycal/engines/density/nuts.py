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
The potential comes from :func:`noisycal.engines.density.potential.build_potential`, the
builder the MLE/MAP engine uses too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._util.jax import as_key, x64
from ..._util.statuses import join_messages
from ..._util.types import Seed
from ..._util.validation import check_choice, check_int, check_seed
from ...exceptions import ConvergenceWarning
from .continuation import KeptChains, chain_store, continue_chains, current_store
from .diagnostics import (
    convergence_status,
    diagnostics_table,
    draws_conf_int,
    import_arviz,
    to_inference_data,
)
from .nuts_program import (
    INIT_ATTEMPTS,
    Program,
    get_program,
    parallel_runner,
)
from .potential import (
    check_model_inputs,
    concrete_errors,
    initial_values,
    is_own_model,
    split_inputs,
    user_stacklevel,
)

__all__ = [
    "extended_fit",
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
    status : {'ok', 'not_converged', 'diagnostics_unavailable'}
        ``'not_converged'`` when ``max_rhat > rhat_threshold`` or there were divergences,
        ``'diagnostics_unavailable'`` when R-hat could not be computed (one chain, fewer
        than 4 draws per chain): convergence was not checked (the rule of
        :func:`convergence_status`).
    message : str
        What went wrong, if anything.
    num_chains, num_warmup, num_samples : int
        The run's sizes.
    rhat_threshold : float
        The R-hat threshold ``status`` used.
    diverging : ndarray of shape (num_chains, num_samples)
        Which transitions diverged.
    sample_stats : dict of str to ndarray or None
        Every transition's statistics, each of shape (num_chains, num_samples)
        (see :func:`sample_nuts`).
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
    sample_stats: Mapping[str, np.ndarray] | None = field(default=None, repr=False)

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

    def to_frame(self) -> pd.DataFrame:
        """Tidy table of every scalar entry: ``parameter``, posterior ``mean``, ``sd``,
        ``mcse_mean``, ``ess_bulk``, ``ess_tail``, ``r_hat``."""
        return self.diagnostics.reset_index()

    def to_arviz(self) -> Any:
        """The draws as an ``arviz.InferenceData``: ``posterior`` and ``sample_stats``
        (energy, divergences, tree depth, step size, acceptance rate, log density; see
        :func:`noisycal.engines.density.arviz_export.arviz_sample_stats`)."""
        from .arviz_export import arviz_sample_stats

        stats = self.sample_stats if self.sample_stats is not None else (
            None if self.diverging is None else {"diverging": self.diverging})
        return to_inference_data(self.samples, arviz_sample_stats(stats))

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
        chains of at least 4 draws; otherwise it is NaN, not checked, and ``status`` is
        ``'diagnostics_unavailable'``.
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
        When R-hat exceeds ``rhat_threshold``, there were divergent transitions, or
        R-hat could not be computed.

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
    samples, stats = sample_nuts(
        model, model_args=model_args, model_kwargs=model_kwargs, init_params=init_params,
        num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples,
        rng_key=as_key(check_seed(seed)), progress_bar=bool(progress_bar),
        chain_method=chain_method,
        target_accept_prob=float(target_accept_prob), max_tree_depth=max_tree_depth,
        dense_mass=bool(dense_mass), cache=cache, sample_stats=True)
    return _result(samples, stats["diverging"], num_chains=num_chains, num_warmup=num_warmup,
                   num_samples=num_samples, rhat_threshold=float(rhat_threshold),
                   sample_stats=stats)


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
                max_tree_depth: int, dense_mass: bool, cache: bool | None = None,
                sample_stats: bool = False
                ) -> tuple[dict[str, np.ndarray], Any]:
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
    sample_stats : bool, default=False
        Return every transition's statistics instead of the divergence flags alone.

    Returns
    -------
    samples : dict of str to ndarray
        Constrained draws by site, each of shape (num_chains, num_samples, ...).
    diverging : ndarray of shape (num_chains, num_samples), or dict
        Divergence flags; with ``sample_stats=True`` a dict of arrays of that shape:
        ``diverging``, ``energy``, ``potential_energy``, ``num_steps``, ``accept_prob``
        and ``step_size`` (:func:`noisycal.engines.density.nuts_program.transition_stats`).
    """
    # long: one entry for every chain method, with and without a progress bar, and the
    # keeping and continuing of an extended fit's chains
    import jax
    import jax.numpy as jnp

    settings = {"target_accept_prob": float(target_accept_prob),
                "max_tree_depth": max_tree_depth, "dense_mass": bool(dense_mass)}
    store = current_store()  # inside an extended fit: keep the chains, or continue them
    call = store.next_call() if store is not None else 0
    with x64():
        signature, arrays, rebuild = split_inputs(tuple(model_args), dict(model_kwargs or {}))
        run_key = (model, signature, num_chains, num_warmup, chain_method,
                   tuple(sorted(settings.items())))
        kept = store.matching(call, run_key, arrays, num_samples) if store else None
        if kept is not None:
            samples, stats = continue_chains(kept, num_samples, progress_bar)
            store.keep(call, kept, continued=True)
            return samples, (stats if sample_stats else stats["diverging"])
        values = initial_values(init_params)
        if cache is None:
            cache = is_own_model(model)
        shapes = {k: tuple(v.shape) for k, v in values.items()}
        try:
            prog = get_program(model, signature, rebuild, arrays, shapes, cache=cache,
                            **settings)
        except concrete_errors():
            # the model needs concrete values of an array input (a plate size held in a
            # 0-d array, Python control flow on data): bake the arrays in, uncached
            signature, arrays, rebuild = split_inputs(tuple(model_args),
                                                       dict(model_kwargs or {}),
                                                       arrays_static=True)
            store = None  # data baked into the program: not continued
            prog = get_program(model, signature, rebuild, arrays, shapes, cache=False,
                            **settings)
        import sys

        progress_bar = progress_bar and sys.stderr is not None  # nowhere to draw: no bar
        if chain_method == "parallel" or progress_bar:
            key_run, key_init = jax.random.split(rng_key)
            x_init, fixed, ok = prog.init_chains(key_init, arrays, values, num_chains)
            _check_start(ok)
            data = (arrays, fixed)
            keys = jax.random.split(key_run, num_chains)
            if chain_method == "parallel":
                z, div, *states = parallel_runner(prog, num_warmup, num_samples,
                                                  store is not None)(keys, x_init, data)
                states = states[0] if states else None
            elif chain_method == "vectorized":
                z, div, states = _run_chain(prog, keys, x_init, data, num_warmup, num_samples,
                                            f"{num_chains} chains", vectorized=True)
            else:
                z, div, states = zip(*(_run_chain(prog, keys[c], x_init[c], data, num_warmup,
                                                  num_samples, f"chain {c + 1}")
                                       for c in range(num_chains)), strict=True)
                z, div, states = (jnp.stack(z),) + tuple(
                    jax.tree_util.tree_map(lambda *v: jnp.stack(v), *t) for t in (div, states))
            constrained = prog.constrain(z, data)
        else:
            # initialisation, all chains, and the constrained draws in one compiled call
            # (inside an extended fit, a program that returns the chains' last states too)
            out = (prog.sample if store is None else prog.sample_keep)(
                rng_key, arrays, values, num_chains, num_warmup, num_samples,
                chain_method == "vectorized")
            constrained, div, ok = out[:3]
            _check_start(ok)
            if store is not None:
                states, fixed = out[3]
                data = (arrays, fixed)
        samples = {k: np.asarray(v) for k, v in constrained.items()}
        stats = {k: np.asarray(v) for k, v in div.items()}
        stats["diverging"] = stats["diverging"].astype(bool)
        if store is not None:
            store.keep(call, KeptChains(
                run_key, list(arrays), prog, data, states,
                {k: v.copy() for k, v in samples.items()},
                {k: v.copy() for k, v in stats.items()}, num_samples), continued=False)
    return samples, (stats if sample_stats else stats["diverging"])


def _check_start(ok: Any) -> None:
    if not bool(np.all(np.asarray(ok))):
        raise ValueError(
            "could not find initial parameters with a finite log density and "
            f"gradient in {INIT_ATTEMPTS} attempts; check the model and its data, or "
            "pass init_params"
        )


def _chunks(n: int) -> list[int]:
    """Transition counts per compiled call between progress-bar updates (about 20)."""
    if n <= 20:
        return [n] if n else []
    size = -(-n // 20)
    return [size] * (n // size) + ([n % size] if n % size else [])


def _run_chain(prog: Program, key: Any, x: Any, data: tuple, num_warmup: int,
               num_samples: int, label: str, *, vectorized: bool = False
               ) -> tuple[Any, Any, Any]:
    """One chain (or, ``vectorized``, all chains in lockstep) with a progress bar: it
    advances in compiled chunks between updates. Returns the draws, their statistics and
    the last state."""
    from tqdm.auto import tqdm

    import jax
    import jax.numpy as jnp

    start, advance, collect = ((prog.start_all, prog.advance_all, prog.collect_all)
                               if vectorized else (prog.start, prog.advance, prog.collect))
    state = start(key, x, data, num_warmup)
    zs, divs = [], []
    with tqdm(total=num_warmup + num_samples, desc=f"{label} warmup", leave=True) as bar:
        for n in _chunks(num_warmup):
            state = jax.block_until_ready(advance(state, data, n, num_warmup))
            bar.update(n)
        bar.set_description(f"{label} sample")
        for n in _chunks(num_samples):
            state, (z, div) = jax.block_until_ready(collect(state, data, n, num_warmup))
            zs.append(z)
            divs.append(div)
            bar.update(n)
    axis = 1 if vectorized else 0
    return (jnp.concatenate(zs, axis=axis),
            jax.tree_util.tree_map(lambda *v: jnp.concatenate(v, axis=axis), *divs), state)


def _result(samples: dict[str, np.ndarray], diverging: np.ndarray | None, *, num_chains: int,
            num_warmup: int, num_samples: int, rhat_threshold: float,
            sample_stats: Mapping[str, np.ndarray] | None = None) -> NUTSResult:
    table = diagnostics_table(samples)
    rhat = table["r_hat"].to_numpy(dtype=np.float64)
    ess = table["ess_bulk"].to_numpy(dtype=np.float64)
    max_rhat = float(np.nanmax(rhat)) if np.any(np.isfinite(rhat)) else math.nan
    min_ess = float(np.nanmin(ess)) if np.any(np.isfinite(ess)) else math.nan
    n_div = int(diverging.sum()) if diverging is not None else 0
    worst = str(table["r_hat"].idxmax()) if np.any(np.isfinite(rhat)) else None
    status, message = convergence_status(max_rhat, n_div, rhat_threshold, worst=worst,
                                         num_chains=num_chains, num_samples=num_samples)
    if status != "ok":
        warnings.warn(message, ConvergenceWarning, stacklevel=user_stacklevel())
    return NUTSResult(
        samples=samples, diagnostics=table, num_divergences=n_div, max_rhat=max_rhat,
        min_ess_bulk=min_ess, status=status, message=message, num_chains=num_chains,
        num_warmup=num_warmup, num_samples=num_samples, rhat_threshold=rhat_threshold,
        diverging=diverging, sample_stats=sample_stats,
    )


def extended_fit(run: Callable[[Any], Any], engine: Any) -> Any:
    """A NUTS fit, extended until it converges (the budget of ``engine.extend``,
    :class:`noisycal.engines.NUTS`): its chains are continued, or rerun with warm-up and
    draws doubled when continuing cannot help.

    A run whose largest R-hat is above ``engine.rhat_threshold`` or whose smallest bulk ESS
    is below ``engine.min_ess`` is followed by another, at most ``engine.max_extensions``
    times. The next run **continues** the chains: every chain resumes from its last state
    with the step size and mass matrix its warm-up adapted, draws as many draws again as
    it holds (so the draws per chain double) without new warm-up, and the fit is computed
    from the earlier draws followed by the new ones. It **restarts** instead (a fresh run
    from the same seed with the last run's warm-up and draws per chain both doubled, the
    schedule of a fit that is never continued) when

    * the last run had divergent transitions (continuing keeps the step size that
      diverged; a longer warm-up adapts a new one), or
    * the last run was a continuation whose largest R-hat is above the threshold and whose
      excess over 1 is not below 3/4 of the run's before it (the chains' means agree
      better as draws accumulate, so with mixing chains the excess about halves when the
      draws double): more draws did not bring the chains together, so one is likely
      stuck in another mode, or
    * the last run kept no chains to continue (a model whose data are baked into its
      sampler).

    Parameters
    ----------
    run : callable
        ``run(engine) -> AnnotatorFit``: the model's NUTS fit with these settings; its
        calls of :func:`sample_nuts` keep and continue the chains.
    engine : NUTS

    Returns
    -------
    AnnotatorFit
        The last run's fit, with ``details['extensions']`` (one entry per run:
        ``num_warmup``, ``num_samples`` (draws per chain in all, continued ones included),
        ``max_rhat``, ``min_ess_bulk``, ``continued`` (whether the run continued the
        previous run's chains) and ``restart_reason`` (why a run after the first started
        afresh; None for the first run and continued ones)) and, when the budget ran out
        before R-hat and ESS passed, a message saying so. Only the last run's warnings are
        shown.
    """
    import dataclasses

    from ..._util.validation import user_stacklevel

    if not engine.extends:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = run(engine)
        _reissue(caught, user_stacklevel())
        return fit
    runs: list[dict] = []
    current, reason = engine, None
    with chain_store() as store:
        for k in range(engine.max_extensions + 1):
            store.begin(cont=k > 0 and reason is None)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fit = run(current)
            continued = bool(store.continued) and all(store.continued)
            if k > 0 and reason is None and not continued:
                reason = "the previous run's chains could not be continued"
            rhat, ess = _worst_diagnostics(fit.details)
            runs.append({"num_warmup": current.num_warmup, "num_samples": current.num_samples,
                         "max_rhat": rhat, "min_ess_bulk": ess, "continued": continued,
                         "restart_reason": reason})
            # NaN diagnostics (one chain) or divergences alone: longer chains do not help
            enough = not (rhat > engine.rhat_threshold or ess < engine.min_ess)
            if enough or k == engine.max_extensions:
                break
            reason = _restart_reason(fit.details, runs, engine.rhat_threshold,
                                     bool(store.continued))
            current = dataclasses.replace(
                current, num_samples=2 * current.num_samples, extend=False,
                num_warmup=current.num_warmup * (1 if reason is None else 2))
    _reissue(caught, user_stacklevel())
    message = fit.message
    if not enough:
        message = join_messages(message, (
            f"after {len(runs) - 1} extension(s) (max_extensions={engine.max_extensions}), "
            f"at {current.num_warmup} warm-up and {current.num_samples} draws per chain, "
            f"the largest R-hat is {rhat:.3g} and the smallest bulk ESS {ess:.0f} "
            f"(targets: rhat_threshold={engine.rhat_threshold:g}, "
            f"min_ess={engine.min_ess:g})"))
    return dataclasses.replace(fit, message=message,
                               details={**fit.details, "extensions": tuple(runs)})


#: A continuation must bring R-hat's excess over 1 below this fraction of the run's before
#: it (when R-hat is still above the threshold), or the next run restarts.
RHAT_SHRINK = 0.75


def _restart_reason(details: Mapping[str, Any], runs: list[dict], rhat_threshold: float,
                    kept: bool) -> str | None:
    """Why the run after ``runs[-1]`` must start afresh instead of continuing its chains
    (the rule of :func:`extended_fit`); None: continue."""
    if not kept:
        return "the run kept no chains to continue"
    n_div = details.get("num_divergences")
    if n_div:
        return (f"{int(n_div)} divergent transition(s): continuing would keep the step "
                "size that diverged")
    last = runs[-1]
    if len(runs) > 1 and last["continued"] and last["max_rhat"] > rhat_threshold \
            and not last["max_rhat"] - 1 < RHAT_SHRINK * (runs[-2]["max_rhat"] - 1):
        return (f"R-hat {last['max_rhat']:.3g} did not improve enough on "
                f"{runs[-2]['max_rhat']:.3g} after a continuation (its excess over 1 did "
                f"not fall below {RHAT_SHRINK:g} of the previous): a chain may be stuck in "
                "another mode")
    return None


def _reissue(caught: list, stacklevel: int) -> None:
    """Warn again what a fit warned: noisycal's own warnings at the caller of the fit
    (``stacklevel``), any other at the place that raised it."""
    from ...exceptions import NoisycalWarning

    for w in caught:
        if issubclass(w.category, NoisycalWarning):
            warnings.warn(w.message, w.category, stacklevel=stacklevel + 1)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _worst_diagnostics(details: Mapping[str, Any]) -> tuple[float, float]:
    """The largest R-hat and smallest bulk ESS a fit reports (its own parameters and a
    hierarchical model's population ones); NaN when none is finite."""
    rhats = [float(details[k]) for k in ("max_rhat", "population_max_rhat")
             if details.get(k) is not None and np.isfinite(details[k])]
    ess = [float(details[k]) for k in ("min_ess_bulk", "population_min_ess_bulk")
           if details.get(k) is not None and np.isfinite(details[k])]
    return (max(rhats) if rhats else math.nan), (min(ess) if ess else math.nan)
