"""Lazy public names of a package (PEP 562), so that ``import noisycal`` stays fast.

A package ``__init__`` writes its re-exports once, as ordinary imports inside an
``if TYPE_CHECKING:`` block (type checkers, IDEs and the import-graph test read them), and
ends with ``__getattr__, __dir__ = attach(__name__, __file__)``. :func:`attach` reads that
block from the source and imports a name's module the first time the name is looked up
(``nc.ece`` imports :mod:`noisycal.metrics.ece`, and with it JAX); the value is then bound
on the package, so later look-ups cost nothing. A submodule that the block does not name
(``noisycal.engines``) is imported on first attribute access, as ``import`` would.

Importing a module never changes a public name: where a public object and a submodule
share a name (:func:`noisycal.metrics.ece` and ``noisycal/metrics/ece.py``,
:func:`noisycal.metrics.mce` and ``noisycal/metrics/mce.py``), the import system's binding
of the module on the package is skipped, so the name gives the object, as an eager
``from .ece import ece, mce`` left it.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["attach"]


def _lazy_table(name: str, path: str) -> dict[str, tuple[str, str | None]]:
    """{public name: (absolute module, attribute or None for the module itself)}."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    base = name.split(".")
    table: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom):
                raise ValueError(f"{path}: only 'from ... import ...' is read lazily, "
                                 f"line {stmt.lineno}")
            pkg = ".".join(base[:len(base) - stmt.level + 1]) if stmt.level else ""
            module = ".".join(p for p in (pkg, stmt.module) if p)
            for alias in stmt.names:
                public = alias.asname or alias.name
                if stmt.module is None:  # "from . import metrics": a submodule
                    table[public] = (f"{module}.{alias.name}", None)
                else:
                    table[public] = (module, alias.name)
    return table


class _LazyPackage(types.ModuleType):
    """A package whose names shadowing its own submodules keep their public value."""

    def __setattr__(self, attr: str, value: Any) -> None:
        spec = self.__dict__.get("_lazy_table", {}).get(attr)
        if spec is not None and spec[1] is not None and isinstance(value, types.ModuleType):
            return  # a submodule named like a public object: the object is looked up instead
        super().__setattr__(attr, value)


def attach(name: str, path: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of package ``name`` whose ``__init__`` is ``path``.

    Parameters
    ----------
    name : str
        The package's ``__name__``.
    path : str
        The package's ``__file__``; its ``if TYPE_CHECKING:`` block lists the names.

    Returns
    -------
    getattr, dir : callable
        To be bound as the module's ``__getattr__`` and ``__dir__`` (PEP 562).
    """
    table = _lazy_table(name, path)
    package = sys.modules[name]
    package.__dict__["_lazy_table"] = table
    package.__class__ = _LazyPackage

    def __getattr__(attr: str) -> Any:  # noqa: N807
        if attr in table:
            module, obj = table[attr]
            value = importlib.import_module(module)
            if obj is not None:
                value = getattr(value, obj)
            setattr(package, attr, value)
            return value
        if not attr.startswith("__"):
            full = f"{name}.{attr}"
            try:
                return importlib.import_module(full)
            except ModuleNotFoundError as exc:
                if exc.name != full:
                    raise
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    def __dir__() -> list[str]:  # noqa: N807
        # the public names, dunders and imported public submodules; not the helpers of
        # the lazy block itself (TYPE_CHECKING, attach)
        shown = set(table) | set(package.__dict__.get("__all__", ()))
        shown |= {n for n, v in package.__dict__.items() if n.startswith("__")
                  or (isinstance(v, types.ModuleType) and not n.startswith("_"))}
        return sorted(shown)

    return __getattr__, __dir__
