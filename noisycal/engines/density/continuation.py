"""Continuing NUTS chains past their last draw, for the extension of a fit that did not converge.

:func:`noisycal.engines.density.nuts.extended_fit` opens a :class:`ChainStore` around each
run of a fit. Every call of :func:`noisycal.engines.density.nuts.sample_nuts` inside the run
keeps its chains' last states (position, adapted step size and mass matrix, random key)
and its draws there; when the next run is asked to continue, the same call (the same model
and data, the same number of chains and warm-up, more draws) resumes every chain from its
kept state without new warm-up and returns the kept draws followed by the new ones, so a
continued fit's draws begin with the earlier run's draws. New draws are taken in calls of
the first run's number of draws each, so every continuation runs the same compiled program.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .nuts_program import Program

_STORE: ContextVar[ChainStore | None] = ContextVar("noisycal_nuts_chains", default=None)


@dataclass(eq=False)
class KeptChains:
    """What one sampler call of a run leaves for its continuation."""

    key: tuple  # the model, its static inputs, the chains, warm-up and sampler settings
    arrays: list  # the model's array inputs (a continuation must see the same data)
    prog: Program
    data: tuple  # (arrays, fixed), as the program takes them
    states: Any  # the chains' last HMC states, stacked over chains
    samples: dict[str, np.ndarray]  # constrained draws so far, (chains, draws, ...)
    stats: dict[str, np.ndarray]  # transition statistics so far, (chains, draws)
    chunk: int  # draws per compiled continuation call (the first run's draws)


@dataclass(eq=False)
class ChainStore:
    """The chains of one extended fit: one entry per sampler call of a run, in call order.

    ``begin(cont)`` starts a run; ``cont`` asks its sampler calls to continue the kept
    chains. ``continued`` says, per call of the run, whether it did.
    """

    kept: list[KeptChains | None] = field(default_factory=list)
    cont: bool = False
    calls: int = 0
    continued: list[bool] = field(default_factory=list)

    def begin(self, cont: bool) -> None:
        self.cont, self.calls, self.continued = cont, 0, []

    def next_call(self) -> int:
        self.calls += 1
        return self.calls - 1

    def keep(self, index: int, chains: KeptChains, continued: bool) -> None:
        while len(self.kept) <= index:
            self.kept.append(None)
        self.kept[index] = chains
        self.continued.append(continued)

    def matching(self, index: int, key: tuple, arrays: list, num_samples: int
                 ) -> KeptChains | None:
        """The kept chains of call ``index`` when this run continues them: same model, data,
        chains, warm-up and settings, and more draws asked for than kept."""
        if not self.cont or index >= len(self.kept) or self.kept[index] is None:
            return None
        kept = self.kept[index]
        same_data = len(kept.arrays) == len(arrays) and all(
            np.shape(a) == np.shape(b) and np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(kept.arrays, arrays, strict=True))
        drawn = next(iter(kept.stats.values())).shape[1]
        if kept.key != key or not same_data or num_samples <= drawn:
            return None
        return kept


def current_store() -> ChainStore | None:
    """The store of the extended fit running now (None outside one)."""
    return _STORE.get()


@contextmanager
def chain_store() -> Iterator[ChainStore]:
    """Open a :class:`ChainStore` for the sampler calls made inside the ``with`` block."""
    store = ChainStore()
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


def continue_chains(kept: KeptChains, num_samples: int, progress_bar: bool
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Draw ``num_samples`` minus the kept draws more per chain from the kept states.

    Parameters
    ----------
    kept : KeptChains
        Updated in place: its states, draws and statistics become the continued ones.
    num_samples : int
        Draws per chain wanted in all (more than kept).
    progress_bar : bool
        Show a bar over the new draws.

    Returns
    -------
    samples, stats : dict of str to ndarray
        All draws and transition statistics, kept ones first, ``(chains, num_samples)``
        leading axes.
    """
    import jax

    drawn = next(iter(kept.stats.values())).shape[1]
    more = num_samples - drawn
    chunk = kept.chunk if more % kept.chunk == 0 else more
    samples, stats = [kept.samples], [kept.stats]
    bar = None
    if progress_bar:
        from tqdm.auto import tqdm

        bar = tqdm(total=more, desc=f"{np.shape(kept.states.z)[0]} chains continued")
    states = kept.states
    for _ in range(more // chunk):
        states, (z, st) = jax.block_until_ready(kept.prog.resume(states, kept.data, chunk))
        samples.append({k: np.asarray(v) for k, v in kept.prog.constrain(z, kept.data).items()})
        st = {k: np.asarray(v) for k, v in st.items()}
        st["diverging"] = st["diverging"].astype(bool)
        stats.append(st)
        if bar is not None:
            bar.update(chunk)
    if bar is not None:
        bar.close()
    kept.states = states
    kept.samples = {k: np.concatenate([s[k] for s in samples], axis=1) for k in kept.samples}
    kept.stats = {k: np.concatenate([s[k] for s in stats], axis=1) for k in kept.stats}
    return dict(kept.samples), dict(kept.stats)
