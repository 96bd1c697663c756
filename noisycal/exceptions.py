"""Warning hierarchy, and the refusal of a fit asked for what it cannot offer.

Failures of statistical procedures are reported in results (``status`` and
``message``); these warnings only draw attention to them. :class:`NotOffered` is raised
by a fitted model asked for something its kind does not provide (the fit protocol,
:class:`~noisycal.targets.ChannelFit`); a metric turns it into a status or an
error naming its own option.
"""

from __future__ import annotations

__all__ = [
    "NoisycalWarning",
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "NumericalWarning",
    "NotOffered",
]


class NoisycalWarning(UserWarning):
    """Base class of every warning noisycal emits."""


class ConvergenceWarning(NoisycalWarning):
    """An iterative procedure stopped before meeting its tolerance."""


class IdentifiabilityWarning(NoisycalWarning):
    """A model is not (or only weakly) identified by the data."""


class NumericalWarning(NoisycalWarning):
    """A computation met a numerical problem (empty bins, infinite loss, ...)."""


class NotOffered(ValueError):
    """A fit's refusal of something it cannot offer; the message says why.

    Examples
    --------
    >>> from noisycal.exceptions import NotOffered
    >>> str(NotOffered("fits with gold labels are not supported"))
    'fits with gold labels are not supported'
    """
