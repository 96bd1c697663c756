"""Smooth ECE against any target: kernel-smoothed residuals, no bins."""

from typing import TYPE_CHECKING

from ..._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .ece import (
        GRID_PER_BANDWIDTH,
        MIN_BANDWIDTH,
        MIN_GRID,
        grid_size,
        n_terms,
        smooth_ece,
        smooth_ece_linear_form,
        trapezoid_weights,
    )

__all__ = [
    "GRID_PER_BANDWIDTH", "MIN_BANDWIDTH", "MIN_GRID", "grid_size", "n_terms", "smooth_ece",
    "smooth_ece_linear_form", "trapezoid_weights",
]

__getattr__, __dir__ = attach(__name__, __file__)
