"""Warning hierarchy.

Failures of statistical procedures are reported in results (``status`` and
``message``); these warnings only draw attention to them.
"""

from __future__ import annotations

__all__ = [
    "NoisycalWarning",
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "NumericalWarning",
]


class NoisycalWarning(UserWarning):
    """Base class of every warning noisycal emits."""


class ConvergenceWarning(NoisycalWarning):
    """An iterative procedure stopped before meeting its tolerance."""


class IdentifiabilityWarning(NoisycalWarning):
    """A model is not (or only weakly) identified by the data."""


class NumericalWarning(NoisycalWarning):
    """A computation met a numerical problem (empty bins, infinite loss, ...)."""
