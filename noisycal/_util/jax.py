"""JAX helpers: scoped float64 and seed handling, without global side effects."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

import jax

from .types import PRNGKey, Seed
from .validation import check_seed

__all__ = ["x64", "as_key", "as_numpy_rng", "set_compilation_cache", "check_devices"]


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


def set_compilation_cache(path: str | os.PathLike[str] | None, *,
                          min_compile_time: float = 0.0) -> str | None:
    """Opt in to JAX's persistent compilation cache (off unless called).

    The programs noisycal compiles (the EM loop, the identification check's Hessians,
    bootstrap refits) are written to ``path`` and read back by later processes, so a
    fresh Python session skips most of the first call's compilation. Tracing and
    lowering still run in every process (they compute the cache key).

    Parameters
    ----------
    path : str or path-like or None
        Cache folder (created if absent); ``None`` turns the cache off again.
    min_compile_time : float, default=0.0
        Programs that compiled in less than this many seconds are not stored (JAX's own
        default, 1 s, would leave out most of noisycal's programs).

    Returns
    -------
    str or None
        The cache folder in use.

    Raises
    ------
    ValueError
        If ``path`` is not a path, is empty, or names a place that cannot be a writable
        folder (a file, a path inside a file, a read-only place), or
        ``min_compile_time`` is negative or not finite.

    Notes
    -----
    This changes JAX's process-wide configuration (``jax_compilation_cache_dir`` and
    ``jax_persistent_cache_min_compile_time_secs``), which is why noisycal never does it
    on its own: call it once at the top of a script. JAX reads the same settings from the
    environment variables ``JAX_COMPILATION_CACHE_DIR`` and
    ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``. A cache folder is trusted code: do not
    share one with users you do not trust.

    Examples
    --------
    >>> import tempfile, noisycal as nc
    >>> folder = nc.set_compilation_cache(tempfile.mkdtemp())
    >>> nc.set_compilation_cache(None) is None
    True
    """
    from jax.experimental.compilation_cache import compilation_cache

    if path is not None and not isinstance(path, str | os.PathLike):
        raise ValueError(f"path must be a folder (str or path-like) or None, got "
                         f"{type(path).__name__}")
    if isinstance(min_compile_time, bool) or not isinstance(min_compile_time, int | float) \
            or not np.isfinite(min_compile_time) or min_compile_time < 0:
        raise ValueError(f"min_compile_time must be a finite number of seconds >= 0, got "
                         f"{min_compile_time!r}")
    folder = None
    if path is not None:
        folder = os.fspath(path)
        if not folder:
            raise ValueError("path must name a folder, got an empty string")
        try:
            os.makedirs(folder, exist_ok=True)
            writable = os.access(folder, os.W_OK | os.X_OK)
        except OSError as exc:   # a file, a path inside a file, a read-only place
            raise ValueError(f"path {folder!r} cannot be the cache folder: "
                             f"{exc.strerror or exc}") from None
        if not writable:
            raise ValueError(f"path {folder!r} cannot be the cache folder: not writable")
        jax.config.update("jax_persistent_cache_min_compile_time_secs",
                          float(min_compile_time))
    jax.config.update("jax_compilation_cache_dir", folder)
    compilation_cache.reset_cache()  # a cache opened earlier in the process is re-read
    return folder


def check_devices(devices: object) -> tuple[Any, ...] | None:
    """The devices of ``devices=``: None, a count (the first that many of
    ``jax.devices()``), or a sequence of distinct jax devices.

    Raises
    ------
    ValueError
        Naming ``devices`` for anything else, a count beyond ``len(jax.devices())`` or a
        repeated device.
    """
    if devices is None:
        return None
    avail = jax.devices()
    if isinstance(devices, int | np.integer) and not isinstance(devices, bool):
        if not 1 <= int(devices) <= len(avail):
            raise ValueError(f"devices must be between 1 and {len(avail)} (the JAX devices "
                             f"available), got {devices!r}")
        return tuple(avail[:int(devices)])
    try:
        out = tuple(devices)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError("devices must be None, a number of devices or a sequence of JAX "
                         f"devices, got {devices!r}") from None
    if not out or not all(isinstance(d, jax.Device) for d in out):
        raise ValueError("devices must be None, a number of devices or a sequence of JAX "
                         f"devices, got {devices!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"devices must not repeat a device, got {devices!r}")
    return out
