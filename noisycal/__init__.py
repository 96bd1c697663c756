"""noisycal: calibration under noisy and ambiguous labels.

Every calibration metric compares predictions with a *target* matrix (see
:mod:`noisycal.targets`); every metric returns an :class:`Estimate` with an interval.
"""

from typing import TYPE_CHECKING

from ._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from . import (
        ambiguity,
        annotators,
        calibrators,
        datasets,
        intervals,
        metrics,
        plots,
        simulate,
        targets,
    )
    from ._util.jax import set_compilation_cache, user_cache_folder
    from .annotations.core import Annotations
    from .annotators import (
        DawidSkene,
        DirichletSoftLabels,
        GroupedDawidSkene,
        HuiWalter,
        OneCoinDawidSkene,
        SoftLabelFit,
    )
    from .engines.results import AnnotatorFit
    from .exceptions import (
        ConvergenceWarning,
        IdentifiabilityWarning,
        NoisycalWarning,
        NumericalWarning,
    )
    from .intervals import Estimate, bootstrap
    from .metrics import (
        brier,
        calibration_intercept,
        calibration_slope,
        calibration_test,
        cmce,
        coverage_window,
        ece,
        mce,
        nll,
        smooth_ece,
        true_label_ece,
    )
    from .targets.target import Target
    from .workflows.comparison import compare_calibration
    from .workflows.report import report

__version__ = "0.1.0.dev0"

__all__ = [
    "Annotations",
    "DawidSkene",
    "OneCoinDawidSkene",
    "GroupedDawidSkene",
    "HuiWalter",
    "AnnotatorFit",
    "DirichletSoftLabels",
    "SoftLabelFit",
    "Target",
    "Estimate",
    "targets",
    "ambiguity",
    "annotators",
    "calibrators",
    "metrics",
    "intervals",
    "simulate",
    "plots",
    "datasets",
    "ece",
    "cmce",
    "coverage_window",
    "mce",
    "true_label_ece",
    "smooth_ece",
    "brier",
    "nll",
    "calibration_slope",
    "calibration_intercept",
    "calibration_test",
    "report",
    "compare_calibration",
    "bootstrap",
    "set_compilation_cache",
    "user_cache_folder",
    "NoisycalWarning",
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "NumericalWarning",
    "__version__",
]

__getattr__, __dir__ = attach(__name__, __file__)
