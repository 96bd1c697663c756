"""Write the API reference's pages from the packages' ``__all__``.

Run by ``conf.py`` at every build (``builder-inited``), so a public name added to any
``__all__`` appears in the reference without editing the docs; ``tests/test_docs.py``
checks that every public name is listed. Usage by hand: ``python docs/api_reference.py``
writes ``docs/api/`` and prints the pages.

Each module's page lists its names in autosummary tables; each class and function gets a
page of its own (``api/generated/``), written here rather than by autosummary: a class
page documents the public methods and properties, inherited ones included, and the
object pages are orphans, outside the navigation tree. (In the navigation, the 189
object pages made the theme rebuild and re-parse a 270-entry tree for every page, about
half of the build.)
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "api"

#: One line under each page's title (the module docstring's first line is used otherwise).
LEADS = {
    "noisycal": "The flat public surface: ``import noisycal as nc``.",
}


def public_modules() -> list[str]:
    """``noisycal``, each public module or subpackage directly under it, and ``noisycal.models``.

    Returns
    -------
    list of str
        Module names, ``noisycal`` first, the rest sorted.
    """
    import noisycal

    names = [m.name for m in pkgutil.iter_modules(noisycal.__path__)
             if not m.name.startswith("_")]
    return ["noisycal"] + sorted(f"noisycal.{n}" for n in set(names) | {"models"})


def public_names(module_name: str) -> list[str]:
    """The names in ``module_name.__all__``, in their declared order.

    Parameters
    ----------
    module_name : str
        A module such as ``'noisycal.metrics'``.

    Returns
    -------
    list of str
        Its ``__all__`` (empty when it declares none).
    """
    return list(getattr(importlib.import_module(module_name), "__all__", []))


def _kind(obj: object) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "data"


def owners() -> dict[int, str]:
    """Which page documents each public object: the first public module listing it.

    Returns
    -------
    dict
        ``{id(object): 'module.name'}``; a name re-exported elsewhere (``nc.DawidSkene`` is
        also ``nc.annotators.DawidSkene``) is documented once and linked from the others.
    """
    out: dict[int, str] = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if _kind(obj) in ("class", "function"):
                out.setdefault(id(obj), f"{module_name}.{name}")
    return out


def _shadowed(module_name: str) -> bool:
    """True when the parent exports another object under the module's own name."""
    parent, _, leaf = module_name.rpartition(".")
    if not parent or leaf not in public_names(parent):
        return False
    return not isinstance(getattr(importlib.import_module(parent), leaf), types.ModuleType)


def module_page(module_name: str, owner: dict[int, str] | None = None) -> str:
    """The reStructuredText page of one module: its docstring and an autosummary table.

    Parameters
    ----------
    module_name : str
        The module to document.
    owner : dict, optional
        :func:`owners`, computed when not given.

    Returns
    -------
    str
        The page's text; classes and functions get their own generated pages (on the
        first module that lists them; later modules' tables link there), public
        submodules link to their page, constants are documented inline.
    """
    owner = owners() if owner is None else owner
    module = importlib.import_module(module_name)
    title = f"``{module_name}``"
    lines = [title, "=" * len(title), ""]
    if module_name in LEADS:
        lines += [LEADS[module_name], ""]
    lines += [f".. automodule:: {module_name}", "   :no-members:"]
    # nc.report is a function and noisycal.report a module: one object description each
    lines += ["   :no-index:", ""] if _shadowed(module_name) else [""]
    groups: dict[str, list[str]] = {"module": [], "class": [], "function": [], "data": []}
    for name in public_names(module_name):
        groups[_kind(getattr(module, name))].append(name)
    if groups["module"]:
        lines += ["Modules", "-------", ""]
        lines += [f"* :doc:`{module.__name__}.{n}` (``{module_name}.{n}``)"
                  if f"{module_name}.{n}" in public_modules() else
                  f"* ``{module_name}.{n}``: see :doc:`{getattr(module, n).__name__}`"
                  for n in groups["module"]]
        lines += [""]
    for kind, heading in (("class", "Classes"), ("function", "Functions")):
        if groups[kind]:
            lines += [heading, "-" * len(heading), "", f".. currentmodule:: {module_name}", ""]
            own = [n for n in groups[kind]
                   if owner.get(id(getattr(module, n))) == f"{module_name}.{n}"]
            linked = [owner[id(getattr(module, n))] for n in groups[kind] if n not in own]
            if own:
                lines += [".. autosummary::", "   :nosignatures:",
                          ""] + [f"   {n}" for n in own] + [""]
            if linked:
                lines += ["Also here, documented under the name shown:", "",
                          ".. autosummary::", "   :nosignatures:", ""]
                lines += [f"   {full}" for full in linked] + [""]
    if groups["data"]:
        lines += ["Constants", "---------", "", f".. currentmodule:: {module_name}", ""]
        for n in groups["data"]:
            value = repr(getattr(module, n))
            value = value if len(value) <= 70 else value[:67] + "..."
            lines += [f".. py:data:: {n}", f"   :value: {value}", ""]
    if not any(groups.values()):
        lines += ["This module exports no names (``__all__`` is empty); run it as a script "
                  "or import its submodules.", ""]
    return "\n".join(lines)


def object_page(full: str) -> str:
    """The page of one class or function (an orphan: linked from the module tables).

    Parameters
    ----------
    full : str
        Its documented name, such as ``'noisycal.DawidSkene'`` (see :func:`owners`).

    Returns
    -------
    str
        The page's text: ``autofunction``, or ``autoclass`` with its public members,
        those inherited from noisycal's own bases included (not those of ``object``,
        ``tuple``, exceptions or pandas).
    """
    module_name, _, name = full.rpartition(".")
    obj = getattr(importlib.import_module(module_name), name)
    title = full.replace("_", r"\_")
    lines = [":orphan:", "", title, "=" * len(title), "", f".. currentmodule:: {module_name}",
             ""]
    if inspect.isclass(obj):
        outside = sorted({b.__name__ for b in obj.__mro__[1:]
                          if not b.__module__.startswith("noisycal")})
        lines += [f".. autoclass:: {name}", "   :members:",
                  f"   :inherited-members: {', '.join(outside)}", ""]
    else:
        lines += [f".. autofunction:: {name}", ""]
    return "\n".join(lines)


def write(out: Path = OUT) -> list[Path]:
    """Write ``index.rst``, one page per public module and one per class or function
    (``generated/``) into ``out``.

    Parameters
    ----------
    out : Path, default=docs/api
        The folder (created; stale pages of modules that no longer exist are removed).

    Returns
    -------
    list of Path
        The pages written, index first.
    """
    out.mkdir(parents=True, exist_ok=True)
    modules = public_modules()
    for stale in out.glob("noisycal*.rst"):
        if stale.stem not in modules:
            stale.unlink()
    index = ["API reference", "=============", "",
             "Generated at build time from each module's ``__all__``: every public name "
             "of :mod:`noisycal` and of its public modules.", "",
             ".. toctree::", "   :maxdepth: 1", ""] + [f"   {m}" for m in modules] + [""]
    pages = [out / "index.rst"]
    _write_if_changed(pages[0], "\n".join(index))
    owner = owners()
    keep = {f"{full}.rst" for full in owner.values()}
    (out / "generated").mkdir(exist_ok=True)
    for stale in (out / "generated").glob("*.rst"):
        if stale.name not in keep:  # a name that left every __all__
            stale.unlink()
    for full in owner.values():
        _write_if_changed(out / "generated" / f"{full}.rst", object_page(full))
    for m in modules:
        pages.append(out / f"{m}.rst")
        _write_if_changed(pages[-1], module_page(m, owner))
    return pages


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


if __name__ == "__main__":
    for page in write():
        print(page)
