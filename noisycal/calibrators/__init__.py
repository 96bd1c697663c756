"""Recalibration maps fitted to any target (naive, soft or noise-corrected)."""

from .joint import JointMap
from .scaling import HistogramBinning, PlattScaling, TemperatureScaling

__all__ = ["TemperatureScaling", "PlattScaling", "HistogramBinning", "JointMap"]
