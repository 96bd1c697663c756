"""JAX helpers: scoped float64 and seed handling, without global side effects."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

import jax

from ._typing import PRNGKey, Seed
from ._validation import check_seed

__all__ = ["x64", "as_key", "as_numpy_rng"]


@contextlib.contextmanager
def x64(enabled: bool = True) -> Iterator[None]:
    """Run the enclosed JAX code in float64 (scoped, never process-wide).

    noisycal computes in float64 by default; the user's global JAX setting is
    left untouched (``jax.enable_x64`` is used as a context manager).
    """
    with jax.enable_x64(enabled):
        yield


def as_key(seed: Seed) -> PRNGKey:
    """Turn ``seed`` (an int or a JAX key) into a JAX PRNG key.

    Raises
    ------
    ValueError
        If ``seed`` is None, a bool, or neither an int nor a JAX key.
    """
    if seed is None or isinstance(seed, bool):
        raise ValueError(
            f"seed must be an int or a JAX PRNG key, got {seed!r}; "
            "pass seed=0 (or any int) for a reproducible result"
        )
    if isinstance(seed, int | np.integer):
        return jax.random.key(int(check_seed(seed)))
    if isinstance(seed, jax.Array):
        if jax.dtypes.issubdtype(seed.dtype, jax.dtypes.prng_key):
            return seed
        if seed.dtype == np.uint32 and seed.shape == (2,):
            return jax.random.wrap_key_data(seed)
    raise ValueError(f"seed must be an int or a JAX PRNG key, got {type(seed).__name__}")


def as_numpy_rng(seed: Seed) -> np.random.Generator:
    """A NumPy Generator derived deterministically from ``seed`` (int or JAX key)."""
    key = as_key(seed)
    data = np.asarray(jax.random.key_data(key)).ravel().astype(np.uint64)
    return np.random.default_rng([int(x) for x in data])
