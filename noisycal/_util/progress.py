"""A small text progress bar on stderr, and the JAX callbacks that move it from compiled loops.

``progress=True`` on a long run (EM starts and bootstrap refits, the NC-ECE refit bootstrap,
the noise check) opens a :class:`ProgressBar`; compiled loops report through
:func:`tick` (one unit done) and :func:`reach` (a count reached), ``jax.debug.callback``
calls traced only when the bar is on, so a run without it compiles exactly as before. The
bar only displays: results never depend on it (the tests compare runs with and without).
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

import numpy as np

__all__ = ["ProgressBar", "check_progress", "tick", "reach"]

#: Bars open now, innermost last; the compiled loops' callbacks move the innermost.
_OPEN: list[ProgressBar] = []


def check_progress(value: object, name: str = "progress") -> bool:
    """``value`` as a bool; ``ValueError`` naming ``name`` unless it is True or False."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


class ProgressBar:
    """``label [#####.....] done/total elapsed`` on one line of ``stream`` (stderr).

    Parameters
    ----------
    total : int
        Units of work (refits, EM iterations at most, ...).
    label : str
        What is counted.
    enabled : bool, default=True
        When False nothing is written and the bar is not registered.
    stream : file-like, optional
        Default ``sys.stderr`` (looked up when the bar opens).
    min_interval : float, default=0.1
        Seconds between redraws (the last state is always drawn on close).
    """

    def __init__(self, total: int, label: str, *, enabled: bool = True,
                 stream: IO[str] | None = None, min_interval: float = 0.1) -> None:
        self.total, self.label, self.enabled = max(int(total), 1), label, enabled
        self.stream, self.min_interval = stream, min_interval
        self.done, self._start, self._drawn = 0, 0.0, -np.inf

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self.stream = self.stream or sys.stderr
            # a process without a stderr (a GUI, a service) has nowhere to draw: no bar
            self.enabled = self.stream is not None
        if self.enabled:
            self._start = time.perf_counter()
            _OPEN.append(self)
            self._draw(force=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            _OPEN.remove(self)
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()

    def wait(self, result: Any) -> Any:
        """``result`` once computed (JAX dispatches asynchronously; the bar must stay open
        while the compiled loop moves it)."""
        if self.enabled:
            import jax

            jax.block_until_ready(result)
        return result

    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        self.set(self.done + n)

    def set(self, done: int) -> None:
        """``done`` units done (never more than ``total``)."""
        self.done = min(int(done), self.total)
        self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (not force and now - self._drawn < self.min_interval):
            return
        self._drawn = now
        width = 30
        full = int(width * self.done / self.total)
        self.stream.write(f"\r{self.label} [{'#' * full}{'.' * (width - full)}] "
                          f"{self.done}/{self.total} {now - self._start:.1f} s")
        self.stream.flush()


def _tick_host(after: Any) -> None:
    if _OPEN:  # one call per unit, or one per vmapped batch of units
        _OPEN[-1].update(max(int(np.size(after)), 1))


def _reach_host(count: Any) -> None:
    if _OPEN:
        bar = _OPEN[-1]
        bar.set(max(bar.done, int(np.max(np.asarray(count)))))


def tick(after: Any) -> None:
    """Traced code: one unit done once ``after`` (a scalar of that unit) is computed."""
    import jax

    jax.debug.callback(_tick_host, after)


def reach(count: Any) -> None:
    """Traced code: ``count`` units done (the largest over a vmapped batch)."""
    import jax

    jax.debug.callback(_reach_host, count)
