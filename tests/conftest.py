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

