"""Inference engines: EM / MAP-EM (:mod:`~noisycal.engines.em`), gradient MLE/MAP
(:mod:`~noisycal.engines.mle`), NUTS (:mod:`~noisycal.engines.nuts`), the one
NumPyro-model-to-flat-potential builder both of the last two use
(:mod:`~noisycal.engines.potential`), moment and GMM estimators of binary annotator channels
(:mod:`~noisycal.engines.moments`), and the fit result type
(:mod:`~noisycal.engines.results`)."""

from .mle import MLEResult, fit_map
from .nuts import NUTSResult, convergence_status, run_nuts
from .results import AnnotatorFit

__all__ = ["AnnotatorFit", "MLEResult", "fit_map", "NUTSResult", "run_nuts",
           "convergence_status"]
