"""Inference engines, model-agnostic where possible.

- :mod:`~noisycal.engines.em`: vmapped multi-start EM / MAP-EM on distinct rating patterns;
  :mod:`~noisycal.engines.starts` (soft-vote, random and triple-moment starts, orientation,
  the gap screen), :mod:`~noisycal.engines.relabel` (the one Hungarian relabelling) and
  :mod:`~noisycal.engines.resample` (the one EM resample step of every bootstrap refit).
- :mod:`~noisycal.engines.potential`: the one NumPyro-model-to-flat-potential builder, used by
  gradient MLE/MAP (:mod:`~noisycal.engines.mle`) and NUTS (:mod:`~noisycal.engines.nuts`,
  compiled programs in :mod:`~noisycal.engines.nuts_program`, diagnostics and the one
  convergence rule in :mod:`~noisycal.engines.diagnostics`);
  :mod:`~noisycal.engines.ds_numpyro` drives both for the Dawid–Skene family.
- :mod:`~noisycal.engines.moments` (Hui–Walter moments and inverse, the three-annotator
  moment estimator) and :mod:`~noisycal.engines.gmm` (the constrained grouped GMM, J test).
- :mod:`~noisycal.engines.options` (which fit argument belongs to which method) and
  :mod:`~noisycal.engines.results` (the fit result type, :class:`AnnotatorFit`; its
  statuses in :mod:`~noisycal.engines.status`, its printable summary in
  :mod:`~noisycal.engines.summary`).
"""

from typing import TYPE_CHECKING

from .._lazy import attach

# the public names, imported on first use (noisycal._lazy reads this block)
if TYPE_CHECKING:
    from .mle import MLEResult, fit_map
    from .nuts import NUTSResult, convergence_status, run_nuts
    from .results import AnnotatorFit

__all__ = ["AnnotatorFit", "MLEResult", "fit_map", "NUTSResult", "run_nuts",
           "convergence_status"]

__getattr__, __dir__ = attach(__name__, __file__)
