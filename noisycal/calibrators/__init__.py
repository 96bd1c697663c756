"""Recalibration maps fitted to any target (naive, soft or noise-corrected).

Every calibrator is a scikit-learn style estimator (``get_params``/``set_params``,
``sklearn.base.clone``, ``fit`` returning ``self``, fitted attributes ending in ``_``)
without depending on scikit-learn; its inputs are explicit keywords (``probs=`` or
``logits=``, and ``target=``).
"""

from ._base import Calibrator, NotFittedError
from .joint import JointMap
from .scaling import HistogramBinning, PlattScaling, TemperatureScaling

__all__ = ["Calibrator", "NotFittedError", "TemperatureScaling", "PlattScaling",
           "HistogramBinning", "JointMap"]
