"""The compiled NUTS programs: one per model, data shapes and sampler settings, cached.

A fit's data enter the compiled functions as arguments, never as constants baked into a
closure, so a second fit of the same model with data of the same shapes (a warm refit, a
simulation study, a bootstrap) reuses the compiled sampler instead of tracing and
compiling it again. Programs are cached by the model function, the static (non-array) part
of its inputs, the shapes and dtypes of the array part and the sampler settings.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any, NamedTuple

from .potential import (
    FlatPotential,
    build_potential,
    cached_program,
)

#: Compiled samplers kept for reuse (least recently used dropped first).
MAX_PROGRAMS = 16


#: Initial points tried per chain before giving up (finite log density and gradient).
INIT_ATTEMPTS = 100


PROGRAMS: OrderedDict[Any, Program] = OrderedDict()


@lru_cache(maxsize=MAX_PROGRAMS)
def parallel_runner(prog: Program, num_warmup: int, num_samples: int,
                    keep: bool = False) -> Callable:
    """The chains on one device each: ``(keys, x, data) -> (z, stats)``, and the last
    states with ``keep``."""
    import jax

    return jax.pmap(lambda k, x, d: prog.run(k, x, d, num_warmup, num_samples)[:3 if keep
                                                                               else 2],
                    in_axes=(0, 0, None))


class Program(NamedTuple):
    """The jitted pieces of NUTS on one model; ``data`` is ``(arrays, fixed)`` throughout.

    ``arrays`` are the model's array inputs and ``fixed`` its ``param`` sites' values.
    """

    names: tuple[str, ...]  # latent sites
    init_chains: Callable  # (key, arrays, init_values, C) -> (x (C, d), fixed, ok (C,))
    start: Callable  # (key, x, data, num_warmup) -> HMCState
    advance: Callable  # (state, data, n, num_warmup) -> state after n transitions
    collect: Callable  # (state, data, n, num_warmup) -> (state, (z (n, d), stats))
    run: Callable  # (key, x, data, num_warmup, num_samples) -> (z, stats, last state)
    run_chains: Callable  # (keys, x (C, d), data, W, S, vectorized) -> (z, stats, states)
    start_all: Callable  # start, advance and collect vmapped over chains (progress bar)
    advance_all: Callable
    collect_all: Callable
    constrain: Callable  # (z (chains, draws, d), data) -> dict of constrained values
    sample: Callable  # (key, arrays, init_values, C, W, S, vectorized) -> all of it
    sample_keep: Callable  # the same, with the chains' last states and the param sites'
    #                        values (a separate program: ``sample`` stays as it was)
    resume: Callable  # (states (C, ...), data, n) -> (states, (z (C, n, d), stats)), no warm-up


def _initialiser(pot: FlatPotential) -> Callable:
    """``(key, arrays, values, C) -> (x (C, d), fixed, ok (C,))``: a start for each chain.

    Sites without given values start uniformly in (-2, 2) (unconstrained); each chain
    retries up to ``INIT_ATTEMPTS`` times until the potential and its gradient are finite.
    """
    import jax
    import jax.numpy as jnp

    def attempt(key: jax.Array, dyn: list, values: dict) -> tuple:
        x, fixed = pot.initial(key, dyn, values)
        pe, grad = jax.value_and_grad(pot.potential)(x, (dyn, fixed))
        return x, fixed, jnp.isfinite(pe) & jnp.all(jnp.isfinite(grad))

    def find_start(key: jax.Array, dyn: list, values: dict) -> tuple:
        keys = jax.random.split(key, INIT_ATTEMPTS)
        x, fixed, ok = attempt(keys[0], dyn, values)

        def body(c: tuple) -> tuple:
            return (c[0] + 1, *attempt(keys[c[0]], dyn, values))

        _, x, fixed, ok = jax.lax.while_loop(lambda c: ~c[3] & (c[0] < INIT_ATTEMPTS),
                                             body, (1, x, fixed, ok))
        return x, fixed, ok

    def init_chains(key: jax.Array, dyn: list, values: dict, num_chains: int) -> tuple:
        x, fixed, ok = jax.vmap(find_start, (0, None, None))(
            jax.random.split(key, num_chains), dyn, values)
        return x, jax.tree_util.tree_map(lambda v: v[0], fixed), ok

    return init_chains


def transition_stats(state: Any) -> dict[str, Any]:
    """The statistics of one NUTS transition that ArviZ's ``sample_stats`` holds.

    ``diverging``; ``energy`` (the Hamiltonian, potential plus kinetic energy, of the
    trajectory the draw came from); ``potential_energy`` (minus the unnormalised log
    density on the unconstrained scale); ``num_steps`` (leapfrog steps); ``accept_prob``
    (mean acceptance probability over the trajectory); ``step_size`` (adapted). Six
    numbers per draw: the cost is negligible next to the draws themselves.
    """
    return {"diverging": state.diverging, "energy": state.energy,
            "potential_energy": state.potential_energy, "num_steps": state.num_steps,
            "accept_prob": state.accept_prob, "step_size": state.adapt_state.step_size}


class _Kernels(NamedTuple):
    """NUTS on a potential, unjitted: start, advance/collect in chunks, or run at once."""

    start: Callable  # (key, x, data, num_warmup) -> HMCState
    advance: Callable  # (state, data, n, num_warmup) -> state after n transitions
    collect: Callable  # (state, data, n, num_warmup) -> (state, (z (n, d), stats))
    run: Callable  # (key, x, data, num_warmup, num_samples) -> (z, stats, last state)
    resume: Callable  # (state, data, n) -> (state, (z (n, d), stats)), past warm-up


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

    def settings(state: Any, data: tuple, num_warmup: int) -> None:
        # NumPyro's sample kernel reads the warm-up length and adaptation schedule its
        # init kernel last set, when a program is traced: a chunk traced after another
        # run's start would keep that run's schedule, so every chunk sets its own (the
        # chunks are compiled per warm-up length; the init kernel's result is unused)
        start(state.rng_key, state.z, data, num_warmup)

    def advance(state: Any, data: tuple, n: int, num_warmup: int) -> Any:
        settings(state, data, num_warmup)
        return jax.lax.fori_loop(0, n, lambda _, s: sample_kernel(s, model_args=(data,)),
                                 state)

    def collect(state: Any, data: tuple, n: int, num_warmup: int) -> tuple[Any, tuple]:
        settings(state, data, num_warmup)

        def body(s: Any, _: None) -> tuple[Any, tuple]:
            s = sample_kernel(s, model_args=(data,))
            return s, (s.z, transition_stats(s))

        return jax.lax.scan(body, state, None, length=n)

    def run(key: jax.Array, x: jax.Array, data: tuple, num_warmup: int,
            num_samples: int) -> tuple:
        # one loop over warmup and sampling (one copy of the kernel to compile); draw
        # i is written at row max(i - num_warmup, 0), so warmup rows are overwritten
        state = start(key, x, data, num_warmup)

        def body(i: jax.Array, carry: tuple) -> tuple:
            s, zs, stats = carry
            s = sample_kernel(s, model_args=(data,))
            j = jnp.maximum(i - num_warmup, 0)
            stats = jax.tree_util.tree_map(lambda a, v: a.at[j].set(v), stats,
                                           transition_stats(s))
            return s, zs.at[j].set(s.z), stats

        zs = jnp.zeros((num_samples, x.shape[0]), x.dtype)
        stats = jax.tree_util.tree_map(lambda v: jnp.zeros((num_samples,), jnp.result_type(v)),
                                       transition_stats(state))
        state, zs, stats = jax.lax.fori_loop(0, num_warmup + num_samples, body,
                                             (state, zs, stats))
        return zs, stats, state

    # a second kernel pair for continuing chains: NumPyro's sample kernel reads the warm-up
    # length its init kernel last set (a Python value fixed when a program is traced), so
    # continuation gets its own pair, set to no warm-up: the kept state's adapted step size
    # and mass matrix are used as they are and nothing adapts any more
    init_more, sample_more = hmc(
        potential_fn_gen=lambda data: partial(pot.potential, data=data), algo="NUTS")

    def resume(state: Any, data: tuple, n: int) -> tuple[Any, tuple]:
        init_more(state.z, 0, dense_mass=dense_mass, target_accept_prob=target_accept_prob,
                  max_tree_depth=max_tree_depth, model_args=(data,),
                  rng_key=state.rng_key)  # sets the kernel's settings; the result is unused

        def body(s: Any, _: None) -> tuple[Any, tuple]:
            s = sample_more(s, model_args=(data,))
            return s, (s.z, transition_stats(s))

        return jax.lax.scan(body, state, None, length=n)

    return _Kernels(start, advance, collect, run, resume)


def _build_program(model: Callable, rebuild: Callable, arrays: list,
                   init_shapes: dict[str, tuple], *, target_accept_prob: float,
                   max_tree_depth: int, dense_mass: bool) -> Program:
    import jax

    pot = build_potential(model, rebuild, arrays, init_shapes, init_strategy="uniform")
    # the potential, the start and the constraining map as jitted functions of their own:
    # a sampler program evaluates the potential's gradient in several places (the start's
    # checks, the initial and the window-end step-size searches, the trajectory), each of
    # which traced the NumPyro model through its handlers again, and so did every other
    # sampler setting and progress-bar chunk of the same program; a nested jit is traced
    # once per shapes and inlined by XLA, so the draws are the same bit for bit
    # (tests/engines/test_nuts_tracing.py counts the traces)
    pot = pot._replace(potential=jax.jit(pot.potential), constrain=jax.jit(pot.constrain),
                       initial=jax.jit(pot.initial))
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

    def sample_keep(key: jax.Array, dyn: list, values: dict, num_chains: int,
                    num_warmup: int, num_samples: int, vectorized: bool) -> tuple:
        key_run, key_init = jax.random.split(key)
        x, fixed, ok = init_chains(key_init, dyn, values, num_chains)
        data = (dyn, fixed)
        z, stats, states = run_chains(jax.random.split(key_run, num_chains), x, data,
                                      num_warmup, num_samples, vectorized)
        return constrain_draws(z, data), stats, ok, (states, fixed)

    def sample(*args: Any) -> tuple:
        return sample_keep(*args)[:3]

    def resume(states: Any, data: tuple, n: int) -> tuple:
        states, (z, stats) = jax.vmap(lambda s: k.resume(s, data, n))(states)
        return states, (z, stats)

    return Program(
        names=pot.latent,
        init_chains=jax.jit(init_chains, static_argnums=3),
        start=jax.jit(k.start, static_argnums=3),
        advance=jax.jit(k.advance, static_argnums=(2, 3)),
        collect=jax.jit(k.collect, static_argnums=(2, 3)),
        run=jax.jit(k.run, static_argnums=(3, 4)),
        run_chains=jax.jit(run_chains, static_argnums=(3, 4, 5)),
        start_all=jax.jit(lambda key, x, d, w: jax.vmap(
            lambda ki, xi: k.start(ki, xi, d, w))(key, x), static_argnums=3),
        advance_all=jax.jit(lambda st, d, n, w: jax.vmap(
            lambda si: k.advance(si, d, n, w))(st), static_argnums=(2, 3)),
        collect_all=jax.jit(lambda st, d, n, w: jax.vmap(
            lambda si: k.collect(si, d, n, w))(st), static_argnums=(2, 3)),
        constrain=jax.jit(constrain_draws),
        sample=jax.jit(sample, static_argnums=(3, 4, 5, 6)),
        sample_keep=jax.jit(sample_keep, static_argnums=(3, 4, 5, 6)),
        resume=jax.jit(resume, static_argnums=2),
    )


def get_program(model: Callable, signature: Any, rebuild: Callable, arrays: list,
             init_shapes: dict[str, tuple], *, cache: bool, **settings: Any) -> Program:
    return cached_program(
        PROGRAMS, model, signature, init_shapes, settings,
        lambda: _build_program(model, rebuild, arrays, init_shapes, **settings),
        cache=cache, maxsize=MAX_PROGRAMS)
