"""Multi-annotator ratings.

This package holds the one :class:`Annotations` container, its readers, encoding and
agreement statistics, and the one boundary where a fitted model meets ratings
(:mod:`noisycal.annotations.matching`)."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .core import TIE_OPTIONS, Annotations, EngineArrays
    from .matching import FitIds, RatingMatch, match_ratings, same_ratings, with_classes

__all__ = ["TIE_OPTIONS", "Annotations", "EngineArrays", "FitIds", "RatingMatch",
           "match_ratings", "same_ratings", "with_classes"]

__getattr__, __dir__ = attach(__name__, __file__)
