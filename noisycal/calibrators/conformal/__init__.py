"""Split conformal prediction sets.

This package holds the sets, their scores, the maps that recalibrate with them (each
composing one :class:`SplitConformal`), and their evaluation."""

from typing import TYPE_CHECKING

from ..._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .evaluate import PROPORTION_INTERVALS, SetEvaluation, evaluate_sets
    from .maps import (
        ConformalTemperature,
        MassRescaling,
        TemperatureSolution,
        conformal_temperatures,
        default_conformal,
        mass_rescale,
    )
    from .split import (
        SCORES,
        THRESHOLDS,
        MatrixInput,
        SplitConformal,
        adaptive_scale,
        check_alpha,
        conformal_quantile,
        conformal_rank,
        fit_adaptive,
        hard_labels,
        label_scores,
        nonconformity,
        prediction_sets,
        set_settings,
    )

__all__ = [
    "SCORES", "THRESHOLDS", "adaptive_scale", "check_alpha", "conformal_quantile",
    "conformal_rank", "fit_adaptive", "hard_labels", "label_scores", "MatrixInput",
    "nonconformity", "prediction_sets", "set_settings", "SplitConformal",
    "conformal_temperatures", "ConformalTemperature", "mass_rescale", "MassRescaling",
    "TemperatureSolution", "default_conformal", "PROPORTION_INTERVALS", "evaluate_sets",
    "SetEvaluation",
]

__getattr__, __dir__ = attach(__name__, __file__)
