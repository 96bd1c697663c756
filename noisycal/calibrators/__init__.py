"""Recalibration maps fitted to any target (naive, soft or noise-corrected).

Every calibrator is a scikit-learn style estimator (``get_params``/``set_params``,
``sklearn.base.clone``, ``fit`` returning ``self``, fitted attributes ending in ``_``)
without depending on scikit-learn; its inputs are explicit keywords (``probs=`` or
``logits=``, and ``target=``). The scaling maps (temperature, vector, Platt, matrix,
Dirichlet) take binary (n,) or multi-class (n, K) scores.
"""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from ._base import Calibrator, NotFittedError
    from .binning import HistogramBinning
    from .conformal.evaluate import SetEvaluation, evaluate_sets
    from .conformal.maps import ConformalTemperature, MassRescaling
    from .conformal.split import SplitConformal
    from .isotonic import IsotonicCalibration
    from .joint import JointMap
    from .lwcal import GatedLWCal, LWCal
    from .ovr import OneVsRestIsotonic, OneVsRestPlatt
    from .scaling.beta_ats import AdaptiveTemperatureScaling, BetaCalibration
    from .scaling.mlp_temperature import MLPTemperatureScaling
    from .scaling.multiclass import (
        DirichletCalibration,
        MatrixScaling,
        PlattScaling,
        VectorScaling,
    )
    from .scaling.naive_cmce import NaiveCMCETemperature
    from .scaling.temperature import TemperatureScaling
    from .trimcal import TrimCal
    from .venn_abers import VennAbers

__all__ = ["Calibrator", "NotFittedError", "TemperatureScaling", "PlattScaling",
           "VectorScaling", "MatrixScaling", "DirichletCalibration", "BetaCalibration",
           "AdaptiveTemperatureScaling",
           "HistogramBinning",
           "JointMap", "IsotonicCalibration", "LWCal", "GatedLWCal", "TrimCal",
           "SplitConformal", "evaluate_sets", "SetEvaluation", "MassRescaling",
           "ConformalTemperature", "NaiveCMCETemperature",
           "OneVsRestPlatt", "OneVsRestIsotonic", "VennAbers", "MLPTemperatureScaling"]

__getattr__, __dir__ = attach(__name__, __file__)
