"""The shape of the package: modules, lines, import units and edges, and public signatures.

Counts what the redesign issue measures (the import graph with each top-level file or
folder of the package as one unit, modules per folder, the longest modules, the parameter
counts of the metrics and of every annotator model's ``fit``), for the checkout this
script is run from, with that checkout's own interpreter (so an older checkout can be
counted the same way). ``--baseline DIR`` also counts another checkout (an older commit
in a git worktree with its own ``.venv``) for a before/after table. Writes
``benchmarks/output/layout_census.json`` (and ``benchmarks/results/`` with ``--publish``).

    python benchmarks/layout_census.py --baseline ../before --publish
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "noisycal"


def _set_root(root: Path) -> None:
    global ROOT, PKG
    ROOT, PKG = root.resolve(), root.resolve() / "noisycal"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = ("noisycal",) + path.relative_to(PKG).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    out: set[str] = set()
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m in known and m != module}


def _unit(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else module


def _floors(edges: dict[str, set[str]]) -> int:
    depth: dict[str, int] = {}

    def visit(u: str, stack: tuple = ()) -> int:
        if u in depth:
            return depth[u]
        if u in stack:
            raise ValueError(f"import circle through {u}")
        d = 1 + max((visit(v, stack + (u,)) for v in edges.get(u, ())), default=0)
        depth[u] = d
        return d

    return max(visit(u) for u in edges)


def census() -> dict:
    mods = _modules()
    known = set(mods)
    lines = {m: len(p.read_text().splitlines()) for m, p in mods.items()}
    units: dict[str, set[str]] = {}
    for m, p in mods.items():
        u = _unit(m)
        units.setdefault(u, set())
        if m == "noisycal":
            continue
        units[u] |= {_unit(d) for d in _imports(m, p, known)} - {u, "noisycal"}
    folders: dict[str, int] = {}
    for p in mods.values():
        if p.name != "__init__.py":
            key = str(p.parent.relative_to(ROOT))
            folders[key] = folders.get(key, 0) + 1
    sys.path.insert(0, str(ROOT))
    import noisycal as nc

    def n_params(f: object) -> int:
        return len(inspect.signature(f).parameters)

    metrics = {n: n_params(getattr(nc, n)) for n in (
        "ece", "mce", "cmce", "true_label_ece", "smooth_ece", "brier", "nll",
        "calibration_slope", "calibration_intercept", "calibration_test", "report")}
    models = {}
    for name in ("DawidSkene", "OneCoinDawidSkene", "GroupedDawidSkene",
                 "ClassConditionalDawidSkene", "MACE", "HierarchicalDawidSkene",
                 "ItemDifficultyModel", "HuiWalter", "DirichletSoftLabels"):
        fit = getattr(nc.annotators, name).fit
        params = [p for p in inspect.signature(fit).parameters.values() if p.name != "self"]
        models[name] = {"n": len(params), "var_keyword": any(
            p.kind is p.VAR_KEYWORD for p in params)}
    return {
        "modules": len(mods),
        "lines": sum(lines.values()),
        "units": len(units),
        "unit_edges": sum(len(v) for v in units.values()),
        "floors": _floors(units),
        "modules_455_or_more_lines": sum(n >= 455 for n in lines.values()),
        "longest_modules": sorted(((n, m) for m, n in lines.items()), reverse=True)[:5],
        "top_level_private_modules": sorted(m for m, p in mods.items()
                                            if p.parent == PKG and p.stem.startswith("_")
                                            and p.stem != "__init__"),
        "most_modules_in_a_folder": max(folders.items(), key=lambda kv: kv[1]),
        "metric_parameters": metrics,
        "fit_parameters": models,
    }


def _baseline(root: Path) -> dict:
    """The census of another checkout, with that checkout's own interpreter."""
    import subprocess

    python = root / ".venv" / "bin" / "python"
    out = subprocess.run([str(python), __file__, "--root", str(root), "--raw"],
                         capture_output=True, text=True, check=True, cwd=root).stdout
    sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True, cwd=root).stdout.strip()
    return {"commit": sha, "census": json.loads(out)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout to count beside this one (with its .venv)")
    parser.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    if "--raw" not in sys.argv:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _output import add_publish_argument, write_result

        add_publish_argument(parser)
    args = parser.parse_args()
    if args.root is not None:
        _set_root(args.root)
    if args.raw:  # the census of --root only, as JSON on stdout (for --baseline)
        print(json.dumps(census()))
    else:
        result = {"current": census()}
        if args.baseline is not None:
            result["baseline"] = _baseline(args.baseline)
        print(json.dumps(result, indent=1))
        write_result("layout_census", result, publish=args.publish)
