"""NumPyro's ``log_density`` evaluated as one compiled program in the tests.

Evaluated op by op (outside ``jax.jit``), a model's log density and its gradient compile
one small XLA program per operation and shape: several hundred programs, 1-6 s of a test,
for a handful of numbers. Under ``jax.jit`` they are one program each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
from numpyro.infer.util import log_density


def density(model: Callable, args: tuple, kwargs: Mapping[str, Any]
            ) -> Callable[[dict], Any]:
    """``params -> log density`` of ``model`` on fixed inputs, compiled once."""
    return jax.jit(lambda p: log_density(model, args, dict(kwargs), p)[0])


def density_and_sites(model: Callable, args: tuple, kwargs: Mapping[str, Any],
                      params: dict) -> tuple[Any, dict[str, Any]]:
    """``(log density, {site: value})`` of ``model`` at ``params``, compiled once (the
    values of the sample and deterministic sites, as ``log_density``'s trace has them)."""
    def f(p: dict) -> tuple[Any, dict[str, Any]]:
        ld, tr = log_density(model, args, dict(kwargs), p)
        return ld, {k: s["value"] for k, s in tr.items()
                    if s["type"] in ("sample", "deterministic")}

    return jax.jit(f)(params)
