"""Noise-corrected labels: the corrected-label arithmetic and its aggregation weights.

No Target type lives here."""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from .labels import (
        GAP_THRESHOLD,
        PREVALENCE_CLIP,
        VARIANCE_FLOOR,
        WEIGHT_RULES,
        channel_rule_weights,
        channel_weights,
        channels_invertible,
        check_binary_channels,
        check_class_prevalence,
        check_prevalence,
        corrected_from_channels,
        corrected_labels,
        correction_range,
        fit_class_prevalence,
        fit_index,
        fit_prevalence,
        gap_invertible,
        iv_weights,
        kclass_iv_weights,
        marginal_prevalence,
        noise_covariance,
        one_hot_ratings,
        rule_weights,
    )

__all__ = [
    "GAP_THRESHOLD", "PREVALENCE_CLIP", "VARIANCE_FLOOR", "WEIGHT_RULES",
    "channel_rule_weights", "channel_weights", "channels_invertible", "check_binary_channels",
    "check_class_prevalence", "check_prevalence", "corrected_from_channels",
    "corrected_labels", "correction_range", "fit_class_prevalence", "fit_index",
    "fit_prevalence", "gap_invertible", "iv_weights", "kclass_iv_weights",
    "marginal_prevalence", "noise_covariance", "one_hot_ratings", "rule_weights",
]

__getattr__, __dir__ = attach(__name__, __file__)
