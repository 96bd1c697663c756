"""Shared test setup: headless matplotlib, figures closed after every test, and one JAX
compilation cache per test process."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(scope="session", autouse=True)
def jax_compilation_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A persistent compilation cache in a fresh folder of this test process.

    A test that builds a program it compiled before under another Python object (a user
    model, which is not cached and is retraced on every call; a closure made anew; the
    chunked progress-bar path) reads the compiled program back instead of compiling it
    again. The folder starts empty in every run, and each xdist worker has its own, so
    no two processes write to one folder at once. Tests that need the cache off run in a
    subprocess, which does not inherit it (test_first_call.py).
    """
    import noisycal as nc

    folder = tmp_path_factory.mktemp("jax_compilation_cache")
    nc.set_compilation_cache(folder, min_compile_time=0.0)
    yield folder
    nc.set_compilation_cache(None)


@pytest.fixture(scope="module")
def study() -> object:
    """``benchmarks/coverage_study.py`` as a module (the reduced coverage study's cells)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "coverage_study.py"
    spec = importlib.util.spec_from_file_location("coverage_study", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["coverage_study"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod

