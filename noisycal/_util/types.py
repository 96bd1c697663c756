"""Type aliases shared across noisycal."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

import jax

__all__ = ["ArrayLike", "PRNGKey", "Seed", "Params", "FloatArray"]

ArrayLike: TypeAlias = npt.ArrayLike
FloatArray: TypeAlias = np.ndarray
PRNGKey: TypeAlias = jax.Array
Seed: TypeAlias = int | jax.Array | None
Params: TypeAlias = dict[str, Any]
