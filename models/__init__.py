"""NumPyro annotator models (importable as ``noisycal.models``).

Each module writes its likelihood once; :data:`MODELS` lists the models by name.
"""

from .channels import MODELS as _CHANNEL_MODELS
from .classifier_informed import MODELS as _CI_MODELS
from .dawid_skene import MODELS as _DS_MODELS
from .hierarchical import MODELS as _HIER_MODELS
from .item_difficulty import MODELS as _ID_MODELS
from .soft_labels import MODELS as _SOFT_MODELS

MODELS: dict = {**_DS_MODELS, **_CHANNEL_MODELS, **_HIER_MODELS, **_ID_MODELS,
                 **_SOFT_MODELS, **_CI_MODELS}

__all__ = ["MODELS"]
