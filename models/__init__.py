"""NumPyro annotator models (importable as ``noisycal.models``).

The registry is filled by the annotator-model issue.
"""

MODELS: dict = {}

__all__ = ["MODELS"]
