"""Intervals: the Estimate type and bootstrap resampling."""

from .bootstrap import BOOTSTRAP_METHODS, bootstrap, interval_from_replicates
from .estimate import Estimate

__all__ = ["Estimate", "bootstrap", "interval_from_replicates", "BOOTSTRAP_METHODS"]
