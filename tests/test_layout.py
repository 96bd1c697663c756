"""The layout is the architecture: imports flow one way, folders hold one topic each.

The import graph is read from the source (``ast``), so imports inside functions count too:
a circle hidden in a lazy import is still a circle.
"""

import ast
from pathlib import Path

import pytest

import noisycal

PACKAGE_ROOT = Path(noisycal.__file__).parent
MODELS_ROOT = PACKAGE_ROOT.parent / "models"


def _module_files():
    files = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        rel = path.relative_to(PACKAGE_ROOT).with_suffix("")
        parts = ("noisycal",) + rel.parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    for path in sorted(MODELS_ROOT.glob("*.py")):
        name = "noisycal.models" if path.stem == "__init__" else f"noisycal.models.{path.stem}"
        files[name] = path
    return files


MODULES = _module_files()


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    names = []
    for alias in node.names:  # "from . import metrics" imports a submodule, not the package
        sub = f"{target}.{alias.name}"
        names.append(sub if sub in MODULES else target)
    return [n for n in dict.fromkeys(names) if n in MODULES]


def _resolve_base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            out.update(_resolve(module, path.name == "__init__.py", node))
    out.discard(module)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _unit(module: str) -> str:
    """The layout unit of a module: the top-level file or folder it lives in."""
    parts = module.split(".")
    if len(parts) >= 3:
        return ".".join(parts[:2])
    return module


def _unit_edges() -> dict[str, dict[str, list[tuple[str, str]]]]:
    """{unit: {imported unit: [(module, imported module), ...]}} (the package root aside)."""
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for module, deps in GRAPH.items():
        u = _unit(module)
        for d in deps:
            if _unit(d) not in (u, "noisycal"):
                out.setdefault(u, {}).setdefault(_unit(d), []).append((module, d))
    return out


UNITS = {_unit(m) for m in MODULES}

#: The floors of the house, bottom first: a unit imports only units on lower floors.
LAYERS = [
    "noisycal.exceptions",
    "noisycal._util",
    "noisycal.annotations",
    "noisycal.intervals",
    "noisycal.plots",
    "noisycal.correction",
    "noisycal.models",
    "noisycal.simulate",
    "noisycal.datasets",
    "noisycal.targets",
    "noisycal.engines",
    "noisycal.annotators",
    "noisycal.metrics",
    "noisycal.calibrators",
    "noisycal.workflows",
    "noisycal.ambiguity",
    "noisycal.experiments",
    "noisycal",
]

#: Units a unit must never import, whatever the floors say (DESIGN.md's rules).
FORBIDDEN = {
    "noisycal._util": set(UNITS) - {"noisycal._util", "noisycal.exceptions"},
    "noisycal.intervals": set(UNITS) - {"noisycal.intervals", "noisycal._util",
                                        "noisycal.exceptions"},
    "noisycal.metrics": {"noisycal.engines", "noisycal.models", "noisycal.annotators"},
    "noisycal.targets": {"noisycal.engines", "noisycal.annotators"},
    "noisycal.correction": {"noisycal.targets"},
    "noisycal.engines": {"noisycal.annotators"},
}

#: Edges that break the rules today and are being removed (module, imported module).
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()

#: Top-level files and folders of the package (the import graph's units), at most.
MAX_UNITS = 25
#: Modules in one folder (``__init__`` aside), at most.
MAX_FOLDER_MODULES = 12
#: A module above this many lines is reviewed: it is split by meaning or listed here with
#: the reason it is one topic.
REVIEW_LINES = 900
REVIEWED_LONG_MODULES: dict[str, str] = {}


def test_graph_sees_known_edges():
    # guards the walker itself: these imports exist, so a walker that found nothing would fail
    assert "noisycal.annotators" in GRAPH["noisycal"]
    assert any(m.startswith("noisycal.engines") for m in GRAPH["noisycal.annotators.dawid_skene"])
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle_between_modules():
    # every edge counts, a module importing its own package (``import noisycal`` inside
    # noisycal.engines.density.mle) included: with the package's __init__ importing its
    # submodules that closes a circle
    assert _find_cycle(GRAPH) is None


def test_no_import_circle_between_units():
    units = {u: set(deps) for u, deps in _unit_edges().items() if u != "noisycal"}
    assert _find_cycle(units) is None


def test_every_unit_has_a_floor_and_few_units():
    assert UNITS <= set(LAYERS), sorted(UNITS - set(LAYERS))
    assert len(UNITS) <= MAX_UNITS, sorted(UNITS)


def test_no_upward_edge():
    floor = {u: i for i, u in enumerate(LAYERS)}
    upward = [(m, d) for u, deps in _unit_edges().items() for du, pairs in deps.items()
              for m, d in pairs if floor[du] >= floor[u] and (m, d) not in KNOWN_VIOLATIONS]
    assert not upward, upward


def test_forbidden_edges():
    bad = [(m, d) for u, deps in _unit_edges().items() for du, pairs in deps.items()
           for m, d in pairs if du in FORBIDDEN.get(u, ()) and (m, d) not in KNOWN_VIOLATIONS]
    assert not bad, bad


def test_known_violations_still_exist():
    # an edge removed from the code must leave the list too, so the list only shrinks
    edges = {(m, d) for m, deps in GRAPH.items() for d in deps}
    assert KNOWN_VIOLATIONS <= edges, sorted(KNOWN_VIOLATIONS - edges)


def test_the_rules_catch_a_forbidden_edge():
    graph = dict(GRAPH)
    try:
        GRAPH["noisycal.intervals.estimate"] = GRAPH["noisycal.intervals.estimate"] | {
            "noisycal.metrics.ece"}
        with pytest.raises(AssertionError):
            test_forbidden_edges()
        with pytest.raises(AssertionError):
            test_no_upward_edge()
    finally:
        GRAPH.clear()
        GRAPH.update(graph)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_docstring_names_one_topic_in_one_line(module):
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text()), clean=False)
    assert doc, f"{module} has no docstring"
    lines = doc.strip("\n").split("\n")
    assert len(lines) == 1 or not lines[1].strip(), f"{module}: summary runs over one line"
    assert lines[0].rstrip().endswith("."), f"{module}: summary is not one sentence"


def test_long_modules_are_reviewed():
    long = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    unreviewed = {m: n for m, n in long.items()
                  if n > REVIEW_LINES and m not in REVIEWED_LONG_MODULES}
    assert not unreviewed, unreviewed


def test_folders_hold_few_modules():
    folders: dict[Path, int] = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            folders[path.parent] = folders.get(path.parent, 0) + 1
    crowded = {str(f): n for f, n in folders.items() if n > MAX_FOLDER_MODULES}
    assert not crowded, crowded


def test_correction_imports_no_target():
    assert not any(d.startswith("noisycal.targets") for m, deps in GRAPH.items()
                   if m.startswith("noisycal.correction") for d in deps)


def test_private_names_not_imported_across_packages():
    offenders = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            targets = _resolve(module, path.name == "__init__.py", node)
            if not targets:
                continue
            src = _resolve_base(module, path.name == "__init__.py", node)
            if _unit(src) == _unit(module) or any(p.startswith("_") for p in src.split(".")):
                continue  # same package, or a private module such as noisycal._util
            offenders += [f"{module}: {alias.name} from {src}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")
                          and f"{src}.{alias.name}" not in MODULES]  # a private module is fine
    assert not offenders, offenders


MAX_FUNCTION_LINES = 80


def _code_lines(node: ast.FunctionDef) -> int:
    """Lines of a function without its docstring (numpydoc sections are documentation)."""
    n_lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
            and isinstance(first.value.value, str):
        n_lines -= first.end_lineno - first.lineno + 1
    return n_lines


def test_long_functions_say_why():
    # a function whose code (docstring aside) is over MAX_FUNCTION_LINES lines carries a
    # comment "# long: <reason>"
    offenders = []
    for module, path in MODULES.items():
        source = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(source))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n_lines = _code_lines(node)
                body = source[node.lineno - 1:node.end_lineno]
                if n_lines > MAX_FUNCTION_LINES and not any(
                        line.strip().startswith("# long:") for line in body):
                    offenders.append(f"{module}.{node.name} ({n_lines} lines)")
    assert not offenders, offenders


def test_code_lines_leave_out_the_docstring():
    tree = ast.parse('def f():\n    """Doc.\n\n    More.\n    """\n    x = 1\n    return x\n')
    assert _code_lines(tree.body[0]) == 3


def test_a_lazy_import_of_the_package_would_be_seen():
    # ``import noisycal`` inside an engine (as mle.py once did) closes a circle through the
    # package __init__; the walker must report it
    graph = dict(GRAPH)
    graph["noisycal.engines.density.mle"] = GRAPH["noisycal.engines.density.mle"] | {"noisycal"}
    assert _find_cycle(graph) is not None


def test_tests_mirror_the_package_folders():
    # a test module lives in the folder of what it tests (tests/metrics/nc/ for
    # noisycal/metrics/nc/); tests of the whole package stay at tests/, or in
    # tests/properties/ (the property layer over every public entry point)
    tests_root = Path(__file__).resolve().parent
    folders = {p.relative_to(tests_root) for p in tests_root.rglob("test_*.py")
               if p.parent not in (tests_root, tests_root / "properties")}
    package_dirs = {p.parent.relative_to(PACKAGE_ROOT) for p in PACKAGE_ROOT.rglob("*.py")}
    stray = sorted(str(f) for f in folders if f.parent not in package_dirs)
    assert folders and not stray, stray
