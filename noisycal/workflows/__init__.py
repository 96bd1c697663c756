"""Workflows over several results.

This package holds the calibration report, annotator-model comparison with the
calibration under each model, cross-fitted NC-ECE, and annotation-budget planning."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .comparison import AVERAGES, compare_calibration, mixture_interval
    from .crossfit import nc_ece_crossfit
    from .planning import AnnotationPlan, BudgetChoice, plan_annotations
    from .report import (
        COLUMNS,
        DEFAULT_METRICS,
        EXPORT_COLUMNS,
        METRICS,
        Report,
        report,
        to_html,
        to_latex,
        to_markdown,
    )

__all__ = [
    "COLUMNS", "DEFAULT_METRICS", "EXPORT_COLUMNS", "METRICS", "report", "Report", "to_html",
    "to_latex", "to_markdown", "AVERAGES", "compare_calibration", "mixture_interval",
    "nc_ece_crossfit", "AnnotationPlan", "BudgetChoice", "plan_annotations",
]

__getattr__, __dir__ = attach(__name__, __file__)
