"""Plots of calibration estimates, conformal sets and annotator channels.

- :func:`reliability_diagram`: per-bin mean target against mean confidence, with
  interval bars and the bin counts;
- :func:`cumulative_mass_curve`: the cumulative-mass calibration curve of
  :func:`noisycal.cmce`;
- :func:`set_size_plot`: the distribution of the sizes of conformal prediction sets;
- :func:`confusion_heatmap`: the confusion matrices of a fitted annotator model;
- :func:`forest_plot`: the intervals of a calibration report (:func:`noisycal.report`);
- :func:`comparison_plot`: the criteria of a model comparison
  (:func:`noisycal.annotators.compare`) with their standard errors.
- :func:`sbc_rank_histogram`: the rank histograms of a simulation-based calibration
  (:func:`noisycal.annotators.sbc`).

Every function returns the matplotlib Axes it drew in (an array of them for several
panels). matplotlib is imported inside the plotting functions, so ``import noisycal``
does not import it.
"""

from ._channels import confusion_heatmap, set_size_plot
from ._compare import comparison_plot
from ._forest import forest_plot
from ._reliability import cumulative_mass_curve, reliability_diagram
from ._sbc import sbc_rank_histogram

__all__ = ["reliability_diagram", "cumulative_mass_curve", "set_size_plot",
           "confusion_heatmap", "forest_plot", "comparison_plot", "sbc_rank_histogram"]
