"""Inference engines, model-agnostic where possible.

- :mod:`~noisycal.engines.em`: vmapped multi-start EM / MAP-EM on distinct rating patterns
  (:mod:`~noisycal.engines.em.dawid_skene`), its starts
  (:mod:`~noisycal.engines.em.starts`: soft-vote, random and triple-moment starts,
  orientation, the gap screen), :mod:`~noisycal.engines.relabel` (the one Hungarian
  relabelling) and :mod:`~noisycal.engines.em.resample` (the one EM resample step of every
  bootstrap refit).
- :mod:`~noisycal.engines.density`: the one NumPyro-model-to-flat-potential builder
  (:mod:`~noisycal.engines.density.potential`), used by gradient MLE/MAP
  (:mod:`~noisycal.engines.density.mle`) and NUTS (:mod:`~noisycal.engines.density.nuts`,
  compiled programs in :mod:`~noisycal.engines.density.nuts_program`, diagnostics and the one
  convergence rule in :mod:`~noisycal.engines.density.diagnostics`);
  :mod:`~noisycal.engines.density.dawid_skene` drives both for the Dawid–Skene family.
- :mod:`~noisycal.engines.moments` (Hui–Walter moments and inverse, the three-annotator
  moment estimator) and :mod:`~noisycal.engines.gmm` (the constrained grouped GMM, J test).
- :mod:`~noisycal.engines.methods` (the engines as option objects: :class:`EM`, :class:`MLE`,
  :class:`MAP`, :class:`NUTS`, :class:`Moments`, :class:`GMM`, taken by every model's
  ``fit(method=...)``) and
  :mod:`~noisycal.engines.results` (the fit result type, :class:`AnnotatorFit`; its
  statuses in :mod:`~noisycal.engines.status`, its printable summary in
  :mod:`~noisycal.engines.summary`).
"""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .density.mle import MLEResult, fit_map
    from .density.nuts import NUTSResult, convergence_status, run_nuts
    from .methods import EM, GMM, MAP, MLE, NUTS, Moments
    from .results import AnnotatorFit

__all__ = ["EM", "MLE", "MAP", "NUTS", "Moments", "GMM", "AnnotatorFit", "MLEResult",
           "fit_map", "NUTSResult", "run_nuts", "convergence_status"]

__getattr__, __dir__ = attach(__name__, __file__)
