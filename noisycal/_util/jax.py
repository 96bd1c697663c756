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

__all__ = ["x64", "as_key", "as_numpy_rng", "split_seed", "split_key",
           "set_compilation_cache", "user_cache_folder", "CACHE_ENV", "check_devices"]

#: The environment variable that names the folder of :func:`user_cache_folder` (empty: no
#: cache).
CACHE_ENV = "NOISYCAL_CACHE_DIR"


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
    if isinstance(seed, jax.Array | np.ndarray):
        if isinstance(seed, jax.Array) and jax.dtypes.issubdtype(seed.dtype,
                                                                 jax.dtypes.prng_key):
            return seed
        if seed.dtype == np.uint32 and seed.shape == (2,):
            return jax.random.wrap_key_data(seed)
    raise ValueError(f"seed must be an int or a JAX PRNG key, got {type(seed).__name__}")


def as_numpy_rng(seed: Seed) -> np.random.Generator:
    """A NumPy Generator derived deterministically from ``seed`` (int, JAX key, or a
    key's data: uint32 of shape (2,), as :func:`split_seed` gives)."""
    if isinstance(seed, np.ndarray) and seed.dtype == np.uint32 and seed.shape == (2,):
        data = seed.astype(np.uint64)
    else:
        data = np.asarray(jax.random.key_data(as_key(seed))).ravel().astype(np.uint64)
    return np.random.default_rng([int(x) for x in data])


_MASK32 = 0xFFFFFFFF


def _threefry2x32(k0: int, k1: int, x0: np.ndarray, x1: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The Threefry-2x32 block cipher (Salmon et al. 2011, 20 rounds) as JAX computes it
    (``jax._src.prng.threefry_2x32``), in NumPy uint32 arithmetic."""
    def rotl(x: np.ndarray, r: int) -> np.ndarray:
        return (x << np.uint32(r)) | (x >> np.uint32(32 - r))

    ks = [np.uint32(k0), np.uint32(k1), np.uint32(k0 ^ k1 ^ 0x1BD11BDA)]
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    with np.errstate(over="ignore"):
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for i in range(5):
            for r in rotations[i % 2]:
                x0 = x0 + x1
                x1 = rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def split_seed(seed: Seed, num: int = 2) -> np.ndarray | None:
    """The key data (num, 2) of ``jax.random.split(as_key(seed), num)`` for an int seed,
    computed in NumPy: the same bits (tests/_util/test_seeds.py compares them over
    hundreds of seeds, with JAX's x64 on and off), without compiling JAX's seeding and
    splitting programs on a fresh process's first fit. None for a JAX key (split it
    with JAX) or when JAX's default PRNG is not the partitionable Threefry.

    Parameters
    ----------
    seed : int or jax key
    num : int, default=2
    """
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        return None
    check_seed(seed)
    if (jax.config.jax_default_prng_impl != "threefry2x32"
            or not jax.config.jax_threefry_partitionable):
        return None
    s = int(seed)
    if jax.config.jax_enable_x64:       # JAX seeds with the int64's two halves
        u = s % 2**64
        k0, k1 = (u >> 32) & _MASK32, u & _MASK32
    else:                               # ... or with the int32 it converts the seed to
        k0, k1 = 0, s & _MASK32
    b0, b1 = _threefry2x32(k0, k1, np.zeros(num, np.uint32), np.arange(num, dtype=np.uint32))
    return np.stack([b0, b1], axis=1)


def split_key(seed: Seed, num: int = 2) -> Any:
    """``jax.random.split(as_key(seed), num)``: in NumPy for an int seed (key data,
    :func:`split_seed`), by JAX otherwise; either form is taken by :func:`as_key` and
    :func:`as_numpy_rng`.

    Parameters
    ----------
    seed : int or jax key
    num : int, default=2
    """
    keys = split_seed(seed, num)
    return jax.random.split(as_key(seed), num) if keys is None else keys


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

    See Also
    --------
    user_cache_folder : the per-user folder, ``$NOISYCAL_CACHE_DIR`` to override it.

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


def user_cache_folder() -> str | None:
    """The per-user folder for :func:`set_compilation_cache`, as the vignettes use it.

    ``$NOISYCAL_CACHE_DIR`` when that variable is set (set and empty: ``None``, no
    cache), else ``$XDG_CACHE_HOME/noisycal/jax``, else ``~/.cache/noisycal/jax``. Nothing
    is created or changed: pass the folder to :func:`set_compilation_cache`.

    Returns
    -------
    str or None
        The folder, or None when the environment turns the cache off.

    Examples
    --------
    At the top of a script (the vignettes do this):

    >>> import noisycal as nc
    >>> folder = nc.user_cache_folder()   # ~/.cache/noisycal/jax unless the environment
    >>> folder is None or folder.endswith("jax") or folder   # names another (or none)
    True
    >>> nc.set_compilation_cache(folder)  # doctest: +SKIP
    """
    if CACHE_ENV in os.environ:
        return os.environ[CACHE_ENV] or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "noisycal", "jax")


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
