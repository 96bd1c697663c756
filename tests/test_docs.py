"""The documentation's contracts: every status the code can set is explained in the user
guide, every public name is in the generated API reference, the gallery is rendered for
every vignette, and the pages cite papers by title. The Sphinx build itself runs in CI
(``.ci/run``) with warnings as errors."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
GUIDE_STATUSES = DOCS / "guide" / "statuses.md"

# -- statuses: collected from the code by reading it (AST), never by running it -----------

STATUSY = re.compile(r"(^|_)status_?$")
VALUE = re.compile(r"^[a-z][a-z0-9_]*(<status>)?$")
DOCSET = re.compile(r"\bstatus_?\s*:\s*\{([^}]*)\}")


def _name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _strings(node, consts):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Name):
        return {consts[node.id]} if node.id in consts else set()
    if isinstance(node, ast.JoinedStr):
        return {"".join(v.value if isinstance(v, ast.Constant) else "<status>"
                        for v in node.values)}
    if isinstance(node, ast.IfExp):
        kids = [node.body, node.orelse]
    elif isinstance(node, ast.BoolOp):
        kids = node.values
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        kids = node.elts
    else:  # a call, an attribute, arithmetic: not a literal status
        return set()
    return set().union(*(_strings(k, consts) for k in kids))


def _first(node, consts):
    if isinstance(node, ast.Tuple) and node.elts:
        node = node.elts[0]
    literal = (ast.Constant, ast.Name, ast.JoinedStr, ast.IfExp, ast.BoolOp)
    return _strings(node, consts) if isinstance(node, literal) else set()


def _status_message_pair(node):
    """A ``(status, message)`` tuple: an identifier-like string, then a sentence."""
    if not (isinstance(node, ast.Tuple) and len(node.elts) == 2):
        return False
    first, second = node.elts
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return False
    if isinstance(second, (ast.JoinedStr, ast.BinOp)):
        return True
    return (isinstance(second, ast.Constant) and isinstance(second.value, str)
            and (second.value == "" or " " in second.value))


def statuses_in(tree, consts):
    vals = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for tg in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(tg, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(tg.elts, node.value.elts, strict=False):
                        if STATUSY.search(_name(t)):
                            vals |= _strings(v, consts)
                elif STATUSY.search(_name(tg)):
                    vals |= _strings(node.value, consts)
        elif isinstance(node, ast.keyword) and node.arg and STATUSY.search(node.arg):
            vals |= _strings(node.value, consts)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if (isinstance(k, ast.Constant) and isinstance(k.value, str)
                        and STATUSY.search(k.value)):
                    vals |= _strings(v, consts)
        elif isinstance(node, ast.Compare) and STATUSY.search(_name(node.left)):
            for c in node.comparators:
                vals |= _strings(c, consts)
        elif isinstance(node, ast.Call) and "status" in _name(node.func) and node.args:
            vals |= _first(node.args[0], consts)
        elif (isinstance(node, ast.Call) and _name(node.func) == "__setattr__"
              and len(node.args) == 3 and isinstance(node.args[1], ast.Constant)
              and STATUSY.search(str(node.args[1].value))):
            vals |= _strings(node.args[2], consts)
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            # return status, message  /  return value, details, (status, message)
            for pair in [node.value, *node.value.elts]:
                if _status_message_pair(pair):
                    vals |= _strings(pair.elts[0], consts)
        elif isinstance(node, (ast.FunctionDef,)) and "status" in node.name:
            for r in ast.walk(node):
                if isinstance(r, ast.Return) and r.value is not None:
                    vals |= _first(r.value, consts)
    return vals


def code_statuses(roots=(REPO / "noisycal", REPO / "models")):
    """{status: files} for every status string the code sets, compares or documents.

    A status is a string assigned to (or compared with) a name ending in ``status`` or
    ``status_``, passed as ``status=``, stored under a ``'status'`` key, given to a
    ``*status*(...)`` call or returned by a ``*status*`` function, the first of a returned
    ``(status, message)`` pair (or of such a pair inside a returned tuple), or listed in a
    docstring's ``status : {...}``; f-strings give patterns such as ``target_<status>``.
    """
    found = {}
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            text = path.read_text()
            tree = ast.parse(text)
            consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                      and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                      for t in n.targets if isinstance(t, ast.Name)}
            vals = statuses_in(tree, consts)
            for m in DOCSET.finditer(text):
                vals |= set(re.findall(r"'([^']*)'", m.group(1)))
            for v in vals:
                if VALUE.match(v) and not STATUSY.search(v):
                    found.setdefault(v, set()).add(path.name)
    return found


def documented_statuses() -> set[str]:
    """The statuses the guide explains: every `code` span in a table row's first cell."""
    out = set()
    for line in GUIDE_STATUSES.read_text().splitlines():
        if line.startswith("| `"):
            out |= set(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return out


def test_the_collector_finds_statuses_set_in_every_way():
    found = code_statuses()
    # assigned, status=, _set_status(...), (status, message) returns, module constants,
    # object.__setattr__(self, "status", ...), f-string patterns, docstring sets
    assert {"ok", "weakly_identified", "separable", "target_not_ok", "channels_fixed",
            "noise_depends_on_score", "estimate_outside_interval", "too_few_items",
            "diagnostics_unavailable", "target_<status>", "not_tested",
            "infeasible_mom"} <= set(found)
    assert not {"status", "fit_status", "details", "message"} & set(found)


def test_the_collector_sees_a_new_status(tmp_path):
    (tmp_path / "m.py").write_text(
        'NEW = "brand_new"\n'
        'def f(x):\n'
        '    status = "first_new" if x else NEW\n'
        '    x._set_status("second_new", "why")\n'
        '    return "third_new", f"because {x}"\n'
        'def g(est):\n'
        '    return est.replace(status=f"fold_{est.status}")\n')
    assert set(code_statuses([tmp_path])) == {"brand_new", "first_new", "second_new",
                                              "third_new", "fold_<status>"}


def test_every_status_in_the_code_is_explained_in_the_guide():
    missing = {s: sorted(files) for s, files in code_statuses().items()
               if s not in documented_statuses()}
    assert not missing, f"statuses set in the code but not in {GUIDE_STATUSES}: {missing}"


def test_the_guide_reads_its_status_table_rows():
    documented = documented_statuses()
    assert {"ok", "cap", "unreachable", "cap_and_unreachable", "target_<status>"} <= documented
    assert len(documented) >= 40


# -- the API reference: generated from __all__ at build time -----------------------------

def _api_reference():
    spec = importlib.util.spec_from_file_location("api_reference", DOCS / "api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_covers_noisycal_and_every_public_subpackage():
    api = _api_reference()
    import noisycal

    modules = api.public_modules()
    assert modules[0] == "noisycal"
    submodules = {f"noisycal.{n}" for n in noisycal.__all__
                  if isinstance(getattr(noisycal, n), types.ModuleType)}
    assert submodules | {"noisycal.engines", "noisycal.models", "noisycal.workflows"} \
        <= set(modules)
    assert not [m for m in modules if any(p.startswith("_") for p in m.split("."))]


def _entries(page: str) -> set[str]:
    """Names a generated page lists: autosummary rows, py:data directives, module links."""
    out = set(re.findall(r"^   ([\w.]+)$", page, re.M))
    out |= set(re.findall(r"^\.\. py:data:: (\w+)$", page, re.M))
    out |= {m.rsplit(".", 1)[-1] for m in re.findall(r"``(noisycal[\w.]*)``", page)}
    return out


def test_every_public_name_is_in_the_generated_reference(tmp_path):
    api = _api_reference()
    pages = api.write(tmp_path)
    assert pages[0].name == "index.rst"
    index = pages[0].read_text()
    missing = []
    for module_name in api.public_modules():
        assert f"   {module_name}\n" in index
        module = importlib.import_module(module_name)
        page = (tmp_path / f"{module_name}.rst").read_text()
        assert f".. automodule:: {module_name}" in page
        entries = _entries(page)
        for name in module.__all__ if hasattr(module, "__all__") else []:
            obj = getattr(module, name)
            # listed by its own name, or (re-exported) under the name of the page that
            # documents it, which must be the same object
            here = name in entries
            there = [e for e in entries if "." in e and e.rsplit(".", 1)[-1] == name
                     and _resolve(e) is obj]
            if not (here or there):
                missing.append(f"{module_name}.{name}")
    assert not missing, missing


def _resolve(dotted: str):
    module_name, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


def test_each_public_object_gets_one_generated_page(tmp_path):
    api = _api_reference()
    owner = api.owners()
    import noisycal

    # nc.DawidSkene and nc.annotators.DawidSkene: one page, on the first module listing it
    assert owner[id(noisycal.DawidSkene)] == "noisycal.DawidSkene"
    assert owner[id(noisycal.metrics.hpr_sets)] == "noisycal.metrics.hpr_sets"
    api.write(tmp_path)
    page = (tmp_path / "noisycal.annotators.rst").read_text()
    own = page.split("Also here")[0]
    assert "   DawidSkene\n" not in own and "   noisycal.DawidSkene\n" in page
    assert "   noise_check\n" in page
    # the module noisycal.workflows.report and the function nc.workflows.report: a page of
    # the module would not be indexed
    assert api._shadowed("noisycal.workflows.report")
    assert not api._shadowed("noisycal.metrics")
    assert ":no-index:" not in (tmp_path / "noisycal.metrics.rst").read_text()


def test_a_name_added_to_all_appears_without_editing_the_docs(tmp_path, monkeypatch):
    api = _api_reference()
    import noisycal.metrics as metrics

    def brand_new_metric(probs, target):
        """A metric another helper adds this session."""

    monkeypatch.setattr(metrics, "brand_new_metric", brand_new_metric, raising=False)
    monkeypatch.setattr(metrics, "__all__", [*metrics.__all__, "brand_new_metric"])
    api.write(tmp_path)
    assert "   brand_new_metric\n" in (tmp_path / "noisycal.metrics.rst").read_text()


def test_stale_generated_pages_are_removed(tmp_path):
    api = _api_reference()
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "noisycal.gone.rst").write_text("old")
    (tmp_path / "noisycal.gone.rst").write_text("old")
    api.write(tmp_path)
    assert not (tmp_path / "generated" / "noisycal.gone.rst").exists()
    assert not (tmp_path / "noisycal.gone.rst").exists()


def test_the_build_is_offline_and_writes_the_reference_first():
    conf = (DOCS / "conf.py").read_text()
    assert "sphinx.ext.intersphinx" not in conf  # no inventories downloaded
    assert "\napi_reference.write()\n" in conf  # at import: before the source files are found
    assert "numpydoc" in conf and "sphinx.ext.autosummary" in conf


# -- the gallery and the pages -----------------------------------------------------------

VIGNETTES = sorted((REPO / "vignettes").glob("[0-9]*.py"))


@pytest.mark.parametrize("script", VIGNETTES, ids=lambda p: p.stem)
def test_every_vignette_has_a_rendered_gallery_page(script):
    page = DOCS / "gallery" / f"{script.stem}.md"
    out = DOCS / "gallery" / script.stem
    assert page.is_file(), f"run: python docs/render_vignettes.py {script.stem}"
    text = page.read_text()
    assert (out / "output.txt").is_file() and (out / "output.txt").stat().st_size > 0
    for figure in re.findall(r"\{figure\} (\S+)", text):
        assert (DOCS / "gallery" / figure).is_file(), figure
    assert f"../../vignettes/{script.name}" in text
    assert f"   {script.stem}\n" in (DOCS / "gallery" / "index.md").read_text() \
        or f"\n{script.stem}\n" in (DOCS / "gallery" / "index.md").read_text()


def test_markdown_cells_of_a_percent_script():
    spec = importlib.util.spec_from_file_location("render", DOCS / "render_vignettes.py")
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    source = ("# %% [markdown]\n# # Title\n#\n# Text.\n\n# %%\nx = 1\n# a comment\n"
              "# %% [markdown]\n# ## Step\n")
    assert render.markdown_cells(source) == ["# Title\n\nText.", "## Step"]


_INTERNAL = re.compile(r"paper[ _-]?00\d|spec[- ]?0\d\d|spec §|§ ?\d|\[GAP\]", re.I)
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_pages_cite_papers_by_title(page):
    assert not _INTERNAL.search(page.read_text())


def test_the_guide_pages_exist_and_are_in_the_toctree():
    index = (DOCS / "guide" / "index.md").read_text()
    for name in ("targets", "intervals", "statuses", "annotators", "recalibration",
                 "scale", "capabilities", "conventions"):
        assert (DOCS / "guide" / f"{name}.md").is_file() and f"\n{name}\n" in index
    papers = (DOCS / "papers" / "index.md").read_text()
    assert len(re.findall(r"^\w+$", papers, re.M)) == 4


def test_object_pages_document_methods_and_stay_out_of_the_navigation(tmp_path):
    """A class page documents its public methods (DawidSkene.fit was once only listed),
    inherited ones from noisycal's bases too, not tuple's or pandas'; object pages are
    orphans, linked from the module tables (no autosummary toctree)."""
    api = _api_reference()
    api.write(tmp_path)
    page = (tmp_path / "generated" / "noisycal.DawidSkene.rst").read_text()
    assert page.startswith(":orphan:\n")
    assert ".. autoclass:: DawidSkene\n   :members:\n   :inherited-members: object\n" in page
    import noisycal

    tuples = [full for full in api.owners().values()
              if isinstance(_resolve(full), type) and issubclass(_resolve(full), tuple)]
    assert tuples
    for full in tuples:
        text = (tmp_path / "generated" / f"{full}.rst").read_text()
        assert "tuple" in text.split(":inherited-members:")[1].splitlines()[0]
    fn = (tmp_path / "generated" / "noisycal.ece.rst").read_text()
    assert ".. autofunction:: ece" in fn and noisycal.ece.__doc__
    for module_page in tmp_path.glob("noisycal*.rst"):
        assert ":toctree:" not in module_page.read_text()
