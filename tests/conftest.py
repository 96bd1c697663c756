"""Shared test setup: headless matplotlib, and figures closed after every test."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    """Close every matplotlib figure a test opened (only if pyplot was imported)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs() -> Iterator[None]:
    """Drop JAX's compiled programs after each test module.

    A test process that compiles thousands of programs (an xdist worker running dozens of
    files) keeps each executable's memory mappings; in the fresh-clone CI run of
    2026-12-03 a worker reached 27,700 mappings at 81% of the suite and crashed with a
    segmentation fault inside XLA's compiler near the end (Linux's default
    vm.max_map_count is 65,530). Clearing the caches between modules released about 60%
    of the mappings of a process after six fits (3,223 -> 1,450); programs are reused
    within a module as before.
    """
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        import gc

        jax.clear_caches()
        gc.collect()


@pytest.fixture(scope="module")
def study() -> object:
    """``benchmarks/coverage_study.py`` as a module (the reduced coverage study's cells)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "coverage_study.py"
    spec = importlib.util.spec_from_file_location("coverage_study", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["coverage_study"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod

