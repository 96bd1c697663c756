"""Calibration metrics against any target."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .cmce import cmce, coverage_window, hpr_coverage, hpr_sets
    from .ece import ESTIMATORS, INTERVALS, PAPER_N_BINS, ece, mce
    from .scores import brier, nll
    from .significance import CalibrationTest, calibration_test
    from .slope import calibration_intercept, calibration_slope
    from .smooth.ece import smooth_ece, smooth_ece_linear_form
    from .true_label import true_label_ece

__all__ = [
    "ece",
    "cmce",
    "coverage_window",
    "hpr_sets",
    "hpr_coverage",
    "mce",
    "true_label_ece",
    "brier",
    "nll",
    "calibration_slope",
    "calibration_intercept",
    "calibration_test",
    "CalibrationTest",
    "ESTIMATORS",
    "smooth_ece",
    "smooth_ece_linear_form",
    "PAPER_N_BINS",
    "INTERVALS",
]

__getattr__, __dir__ = attach(__name__, __file__)
