"""Intervals: the Estimate type, bootstrap resampling, equal-tailed and credible intervals,
finite-sample bounds. Intervals receive statistics or bin indices; they never import
:mod:`noisycal.metrics`."""

from typing import TYPE_CHECKING

from .._lazy import attach

# the public names, imported on first use (noisycal._lazy reads this block)
if TYPE_CHECKING:
    from .bootstrap import BOOTSTRAP_METHODS, bootstrap, interval_from_replicates
    from .bounds import hoeffding_radius
    from .credible import equal_tailed
    from .estimate import Estimate

__all__ = ["Estimate", "bootstrap", "interval_from_replicates", "equal_tailed",
           "hoeffding_radius", "BOOTSTRAP_METHODS"]

__getattr__, __dir__ = attach(__name__, __file__)
