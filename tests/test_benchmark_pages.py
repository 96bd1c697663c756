"""The benchmark results pages: every number comes from a benchmark's published output.

``docs/benchmark_pages.py`` writes ``docs/benchmarks/<name>.md`` for every script of
``benchmarks/`` from its template (``docs/benchmark_templates/<name>.md.in``) and the
committed records ``benchmarks/results/*.json``. Checked here: every script has a page;
the committed pages, the index and ``benchmarks/README.md`` are what the generator gives
(so a changed record or template must be regenerated); templates type no measured number
outside the sections that say they were typed; a page changes when its record's numbers
change; every published record is read by a page and says how it was measured.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


@pytest.fixture(scope="module")
def bp():
    spec = importlib.util.spec_from_file_location("benchmark_pages",
                                                  DOCS / "benchmark_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names() -> list[str]:
    return sorted(p.stem for p in (REPO / "benchmarks").glob("*.py")
                  if not p.name.startswith("_"))


# measured-looking numbers: decimals, decimal ratios, durations; citations of the papers'
# sections, tables, equations and figures are not measurements
DECIMAL = re.compile(r"\d+\.\d+x?|\b\d+(\.\d+)? (ms|s|min|minutes|seconds|hours)\b")
CITATION = re.compile(r"\b(Sections?|Appendix|Tables?|Eq\.|Fig\.) \d+(\.\d+)*")


def test_every_script_has_a_template_a_renderer_and_a_page(bp):
    names = _names()
    assert names == bp.scripts() and len(names) >= 20
    for name in names:
        assert (DOCS / "benchmark_templates" / f"{name}.md.in").is_file(), name
        assert name in bp.benchmark_tables.RENDERERS, name
        assert (DOCS / "benchmarks" / f"{name}.md").is_file(), name
    assert sorted(p.stem for p in (DOCS / "benchmarks").glob("*.md")) == names
    assert set(bp.benchmark_tables.RENDERERS) == set(names)


@pytest.mark.parametrize("name", _names())
def test_the_committed_page_is_the_generated_one(bp, name):
    committed = (DOCS / "benchmarks" / f"{name}.md").read_text()
    assert committed == bp.page(name), (
        f"docs/benchmarks/{name}.md is stale: run python docs/benchmark_pages.py")


def test_the_index_and_the_readme_are_generated_and_list_every_page(bp):
    index, readme = (DOCS / "benchmarks.md").read_text(), (REPO / "benchmarks" /
                                                           "README.md").read_text()
    assert index == bp.index() and readme == bp.readme(), "run python docs/benchmark_pages.py"
    for name in _names():
        assert f"(benchmarks/{name}.md)" in index and f"\nbenchmarks/{name}\n" in index
        assert f"**`{name}.py`**" in readme and f"(../docs/benchmarks/{name}.md)" in readme
    assert len(readme.splitlines()) < 60


@pytest.mark.parametrize("name", _names())
def test_templates_type_no_measured_number(bp, name):
    header, body = bp.template(name)
    generated, typed = bp.split_typed(body)
    for line in generated.splitlines():
        if line.startswith("|"):
            assert not re.search(r"\d", line), f"{name}: a typed table row: {line}"
    text = CITATION.sub("", bp.prose("\n".join([generated, header["summary"],
                                                header["title"]])))
    found = [m.group(0) for m in DECIMAL.finditer(text)]
    assert not found, f"{name}: numbers typed in the prose: {found}"
    for heading in re.findall(r"^#+ (.*)$", typed, re.M):
        if heading.startswith(bp.TYPED):
            assert re.search(r"\d{4}-\d{2}", heading), f"{name}: typed section without a date"


def test_a_typed_section_ends_at_the_next_heading_of_its_level(bp):
    body = ("## What\n\n| a | b |\n\n## Last measured (typed from an earlier run, not "
            "regenerated; 2026-12-01)\n\n| 1.5 | 2 |\n\n### History\n\n0.3\n\n## Next\n\n"
            "prose\n")
    generated, typed = bp.split_typed(body)
    assert "1.5" in typed and "0.3" in typed and "## Next" in generated
    assert "1.5" not in generated and "prose" in generated


FORMATTED = re.compile(r"-?\d+\.\d+( ± -?\d+\.\d+)?")


def _scaled(value: object, ints: bool = False) -> object:
    """Every float of a JSON value times 1.37, numbers a script wrote as text
    (``'0.0096 ± 0.0002'``) too, and with ``ints`` every int (not bool) times 3 (other
    strings, booleans and keys kept)."""
    if isinstance(value, float):
        return value * 1.37
    if isinstance(value, str) and FORMATTED.fullmatch(value):
        return re.sub(r"\d+\.\d+", lambda m: f"{1.37 * float(m.group()):.4f}", value)
    if ints and isinstance(value, int) and not isinstance(value, bool):
        return value * 3
    if isinstance(value, dict):
        return {k: _scaled(v, ints) for k, v in value.items()}
    if isinstance(value, list):
        return [_scaled(v, ints) for v in value]
    return value


@pytest.mark.parametrize("name", _names())
def test_a_page_follows_its_records_numbers(bp, name, tmp_path):
    header, _ = bp.template(name)
    empty = tmp_path / "empty"
    empty.mkdir()
    # without its records a page says they are not published
    assert "Not published yet" in bp.page(name, results=empty)
    if all(bp.load(r) is None for r in header["results"]):
        return  # a study not rerun since the pages exist: its typed section keeps it
    pages = []
    for ints in (False, True):  # the floats; then the counts too (pages of counts only)
        for r in header["results"]:
            rec = bp.load(r)
            if rec is not None:
                rec = copy.deepcopy(rec)
                rec["result"] = _scaled(rec["result"], ints)
                (tmp_path / f"{r}.json").write_text(json.dumps(rec))
        pages.append(bp.page(name, results=tmp_path))
    assert pages[1] != bp.page(name)
    # a record whose only floats are its run time is a page of counts (bad_modes_study,
    # layout_census); any other float a record holds, its page shows
    measured = [{k: v for k, v in rec["result"].items() if k != "seconds"}
                for rec in map(bp.load, header["results"]) if rec is not None]
    if any(_scaled(m) != m for m in measured):
        assert pages[0] != bp.page(name)


def test_every_published_record_is_read_by_a_page_and_says_how_it_was_measured(bp):
    read = {r for n in _names() for r in bp.template(n)[0]["results"]}
    for path in sorted((REPO / "benchmarks" / "results").glob("*.json")):
        assert path.stem in read, f"{path.name} is read by no page"
        rec = json.loads(path.read_text())
        assert rec["benchmark"] == path.stem
        run = rec["run"]
        assert run["command"].startswith("python benchmarks/") and "--publish" in run[
            "command"]
        assert re.match(r"\d{4}-\d{2}-\d{2}T", run["started"])
        assert len(run["load_average"]["start"]) == 3 and run["machine"]["cpu_count"]
        assert run["versions"]["noisycal"] and run["versions"]["python"]
        assert re.fullmatch(r"[0-9a-f]{40}", run["commit"]["sha"])
        assert rec["result"]


def test_run_line_names_the_machine_load_versions_and_commit(bp):
    rec = {"run": {"command": "python benchmarks/x.py --publish",
                   "started": "2026-12-06T12:00:00+00:00",
                   "finished": "2026-12-06T12:05:00+00:00", "wall_s": 300.0,
                   "machine": {"platform": "Linux", "cpu_count": 2, "cpu": "AMD EPYC"},
                   "load_average": {"start": [3.5, 3.0, 2.0], "end": [4.25, 3.0, 2.0]},
                   "versions": {"python": "3.11.7", "noisycal": "0.1", "jax": "0.10.2"},
                   "commit": {"sha": "a" * 40, "dirty": True}},
           "result": {}}
    line = bp.benchmark_tables.run_line("x", rec)
    for part in ("2026-12-06, 12:00-12:05 UTC", "`python benchmarks/x.py --publish`",
                 "2 CPUs (AMD EPYC)", "load average 3.5 at the start and 4.2 at the end",
                 "noisycal 0.1 at commit aaaaaaa with local changes", "jax 0.10.2",
                 "`benchmarks/results/x.json`"):
        assert part in line, part
    assert "Not published yet" in bp.benchmark_tables.run_line("x", None)


def test_the_build_writes_the_pages_first():
    conf = (DOCS / "conf.py").read_text()
    assert "\nbenchmark_pages.write()\n" in conf
