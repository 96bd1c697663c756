"""Inference engines: EM / MAP-EM, gradient MLE/MAP, NUTS, and the fit result type."""

from .mle import MLEResult, fit_map
from .nuts import NUTSResult, run_nuts
from .results import AnnotatorFit

__all__ = ["AnnotatorFit", "MLEResult", "fit_map", "NUTSResult", "run_nuts"]
