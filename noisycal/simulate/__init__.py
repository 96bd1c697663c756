"""Seeded simulators with known truth, for tests, coverage studies and vignettes."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .known_truth import (
        GAUSSIAN_TOY_A,
        GAUSSIAN_TOY_B,
        BinaryScores,
        GaussianGrid,
        GaussianToy,
        GridClassifier,
        SimulatedAnnotations,
        SimulatedClassifier,
        binary_scores,
        classifier,
        dawid_skene,
        gaussian_grid,
        gaussian_toy,
        gaussian_toy_truth,
        grid_classifier,
        population_binned_ece,
    )

__all__ = [
    "GAUSSIAN_TOY_A", "GAUSSIAN_TOY_B", "binary_scores", "BinaryScores", "classifier",
    "dawid_skene", "gaussian_grid", "gaussian_toy", "gaussian_toy_truth", "GaussianGrid",
    "GaussianToy", "grid_classifier", "GridClassifier", "population_binned_ece",
    "SimulatedAnnotations", "SimulatedClassifier",
]

__getattr__, __dir__ = attach(__name__, __file__)
