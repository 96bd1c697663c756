"""The scripts of ``benchmarks/`` loaded as modules, for their reduced versions here."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str, *, register: bool = False) -> types.ModuleType:
    """``benchmarks/<name>.py`` as a module.

    ``benchmarks/`` is on ``sys.path`` while it loads (the scripts import
    ``benchmarks/_output.py`` and their sibling studies); ``register`` also puts the module
    in ``sys.modules`` under ``name`` (dataclasses and pickling look it up there).
    """
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = mod
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod
