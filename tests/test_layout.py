"""The layout is the architecture: imports flow one way, modules stay small.

The import graph is read from the source (``ast``), so imports inside functions count too:
a circle hidden in a lazy import is still a circle.
"""

import ast
from pathlib import Path

import pytest

import noisycal

PACKAGE_ROOT = Path(noisycal.__file__).parent
MODELS_ROOT = PACKAGE_ROOT.parent / "models"
MAX_MODULE_LINES = 520


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
    """The layout unit of a module: its subpackage (``noisycal.metrics``) or itself."""
    parts = module.split(".")
    if len(parts) >= 3:
        return ".".join(parts[:2])
    return module


def test_graph_sees_known_edges():
    # guards the walker itself: these imports exist, so a walker that found nothing would fail
    assert "noisycal.annotators" in GRAPH["noisycal"]
    assert any(m.startswith("noisycal.engines") for m in GRAPH["noisycal.annotators.dawid_skene"])
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle_between_modules():
    # every edge counts, a module importing its own package (``import noisycal`` inside
    # noisycal.engines.mle) included: with the package's __init__ importing its submodules
    # that closes a circle
    assert _find_cycle(GRAPH) is None


def test_no_import_circle_between_packages():
    units: dict[str, set[str]] = {}
    for module, deps in GRAPH.items():
        if module == "noisycal":
            continue
        u = _unit(module)
        units.setdefault(u, set()).update(_unit(d) for d in deps if _unit(d) != u)
    units = {u: {d for d in deps if d != "noisycal"} for u, deps in units.items()}
    assert _find_cycle(units) is None


def test_intervals_never_import_metrics():
    for module, deps in GRAPH.items():
        if module.startswith("noisycal.intervals"):
            assert not any(d.startswith("noisycal.metrics") for d in deps), module


def test_correction_imports_no_target():
    assert "noisycal.targets" not in GRAPH["noisycal.correction"]


def test_engines_do_not_import_user_facing_models():
    for module, deps in GRAPH.items():
        if module.startswith("noisycal.engines"):
            assert not any(d.startswith("noisycal.annotators") for d in deps), module


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    n_lines = len(MODULES[module].read_text().splitlines())
    assert n_lines <= MAX_MODULE_LINES, f"{module} has {n_lines} lines"


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
            if _unit(src) == _unit(module) or src.rsplit(".", 1)[-1].startswith("_"):
                continue  # same package, or a private module such as noisycal._validation
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
    graph["noisycal.engines.mle"] = GRAPH["noisycal.engines.mle"] | {"noisycal"}
    assert _find_cycle(graph) is not None
