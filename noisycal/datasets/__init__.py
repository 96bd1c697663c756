"""Loaders for the real data used by the vignettes and tests (never required by the library).

The Dawid & Skene (1979) anaesthetist data ship with the package
(:func:`load_dawid_skene_1979`). The other data live outside the package, in a folder
holding ``cifar10h/``, ``cifar10_logits/``, ``cifar10n/`` and ``chaosnli/`` (each with
its README stating provenance and license). The folder is found by :func:`data_dir`:
``$NOISYCAL_DATA`` when set, else ``../shared/data`` next to the working directory, else
``../shared/data`` next to a source checkout. Every loader also takes ``data=`` to point
at the folder explicitly.
"""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from ._chaosnli import CHAOSNLI_SUBSETS, ChaosNLI, load_chaosnli
    from ._loaders import (
        CIFAR10H,
        CIFAR10N,
        ENV_VAR,
        LOGIT_MODELS,
        CIFAR10Logits,
        data_dir,
        load_cifar10_logits,
        load_cifar10h,
        load_cifar10n,
        load_dawid_skene_1979,
    )

__all__ = [
    "load_dawid_skene_1979",
    "load_cifar10n",
    "CIFAR10N",
    "CIFAR10H",
    "CIFAR10Logits",
    "data_dir",
    "load_cifar10h",
    "load_cifar10_logits",
    "LOGIT_MODELS",
    "ENV_VAR",
    "load_chaosnli",
    "ChaosNLI",
    "CHAOSNLI_SUBSETS",
]

__getattr__, __dir__ = attach(__name__, __file__)
