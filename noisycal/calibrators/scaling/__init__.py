"""Scaling maps fitted to any target.

The maps are temperature, vector, Platt, matrix, Dirichlet, beta and adaptive
temperature scaling, the naive CMCE temperature and MLP temperature scaling."""

from typing import TYPE_CHECKING

from ..._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .beta_ats import (
        ATS_MAX_LOGIT,
        BETA_PARAMETERS,
        AdaptiveTemperatureScaling,
        BetaCalibration,
        ats_features,
    )
    from .mlp_temperature import MLP_MIN_TEMPERATURE, MLPTemperatureScaling
    from .multiclass import (
        DirichletCalibration,
        MatrixScaling,
        PlattScaling,
        VectorScaling,
        fit_softmax_map,
    )
    from .naive_cmce import REFERENCE_TAU_GRID, NaiveCMCETemperature
    from .temperature import NewtonPass, TemperatureScaling, newton_pass, solve_inverse_temperature

__all__ = [
    "newton_pass", "NewtonPass", "solve_inverse_temperature", "TemperatureScaling",
    "DirichletCalibration", "fit_softmax_map", "MatrixScaling", "PlattScaling",
    "VectorScaling", "ATS_MAX_LOGIT", "BETA_PARAMETERS", "AdaptiveTemperatureScaling",
    "ats_features", "BetaCalibration", "REFERENCE_TAU_GRID", "NaiveCMCETemperature",
    "MLPTemperatureScaling", "MLP_MIN_TEMPERATURE",
]

__getattr__, __dir__ = attach(__name__, __file__)
