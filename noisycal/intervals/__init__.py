"""Intervals: the Estimate type, bootstrap resampling, test inversion, equal-tailed intervals.

Intervals receive statistics or bin indices; they import only the private toolbox and
the warning classes."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .._util.stats import equal_tailed
    from .bootstrap import BOOTSTRAP_METHODS, bootstrap, interval_from_replicates
    from .estimate import Estimate
    from .options import Bootstrap, Bound, Credible, Inversion, Refit, Simultaneous, Wald

__all__ = ["Inversion", "Bootstrap", "Bound", "Refit", "Credible", "Simultaneous", "Wald",
           "Estimate", "bootstrap", "interval_from_replicates", "equal_tailed",
           "BOOTSTRAP_METHODS"]

__getattr__, __dir__ = attach(__name__, __file__)
