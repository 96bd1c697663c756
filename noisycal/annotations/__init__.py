"""Multi-annotator ratings.

This package holds the one :class:`Annotations` container, its readers, encoding and
agreement statistics."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .core import TIE_OPTIONS, Annotations, EngineArrays

__all__ = ["TIE_OPTIONS", "Annotations", "EngineArrays"]

__getattr__, __dir__ = attach(__name__, __file__)
