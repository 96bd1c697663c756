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
