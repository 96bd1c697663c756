"""Intervals: the Estimate type, bootstrap resampling, equal-tailed and credible intervals,
finite-sample bounds. Intervals receive statistics or bin indices; they never import
:mod:`noisycal.metrics`."""

from .bootstrap import BOOTSTRAP_METHODS, bootstrap, interval_from_replicates
from .bounds import hoeffding_radius
from .credible import equal_tailed
from .estimate import Estimate

__all__ = ["Estimate", "bootstrap", "interval_from_replicates", "equal_tailed",
           "hoeffding_radius", "BOOTSTRAP_METHODS"]
