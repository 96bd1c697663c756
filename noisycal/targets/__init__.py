"""Targets: what we believe the label of each item is, as an (n_items, n_classes) matrix."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .protocol import ChannelFit
    from .target import (
        Target,
        as_target_matrix,
        corrected,
        from_matrix,
        hard,
        posterior,
        soft,
        voted,
    )

__all__ = [
    "as_target_matrix", "ChannelFit", "corrected", "from_matrix", "hard", "posterior", "soft",
    "Target", "voted",
]

__getattr__, __dir__ = attach(__name__, __file__)
