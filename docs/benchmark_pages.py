"""Write the benchmark results pages from the benchmarks' own published output.

A number in the documentation is generated from a benchmark's output, never typed. Each
script ``benchmarks/<name>.py`` has a page ``docs/benchmarks/<name>.md``, made of

- its template ``docs/benchmark_templates/<name>.md.in``: a header (``title``,
  ``summary``, ``command``, ``results``: the JSON files the page reads), then the prose
  (what is measured, how, the commands) with placeholders ``{{ key }}``;
- the values of those placeholders, computed by ``benchmark_tables.RENDERERS[<name>]``
  from the committed records ``benchmarks/results/<file>.json`` that the scripts write
  with ``--publish`` (``benchmarks/_output.py``): every table, every measured number and
  the line saying when, where, at what load and with which versions it was measured.

Templates hold no measured number: a Markdown table in a template has no digit, and its
prose no decimal, ratio or duration outside code, except under a heading
``Last measured (typed from an earlier run, not regenerated; <date>)``, which keeps the
tables of the long studies that were not rerun, typed as they were, and says so.
``tests/test_benchmark_pages.py`` checks all of this and that the committed pages are the
ones these files give.

``docs/benchmarks.md`` (the index of the pages) is written with them, by ``conf.py`` at
the start of every documentation build. By hand, ``python docs/benchmark_pages.py``
writes the pages, the index and the short ``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TEMPLATES = HERE / "benchmark_templates"
OUT = HERE / "benchmarks"
INDEX = HERE / "benchmarks.md"
RESULTS = REPO / "benchmarks" / "results"
SCRIPTS = REPO / "benchmarks"
README = SCRIPTS / "README.md"

sys.path.insert(0, str(HERE))
import benchmark_tables  # noqa: E402  (the renderers, beside this file)

PLACEHOLDER = re.compile(r"\{\{\s*([a-z0-9_]+)\s*\}\}")
#: The heading that keeps a typed table (with its date); see the module docstring.
TYPED = "Last measured (typed from an earlier run, not regenerated;"
HEADER_KEYS = ("title", "summary", "command", "results")


def split_typed(body: str) -> tuple[str, str]:
    """A template body as (its generated part, its typed sections).

    A typed section starts at a heading that begins with :data:`TYPED` (after the hashes)
    and runs to the next heading of the same or a higher level.
    """
    gen, typed, level = [], [], 0
    for line in body.splitlines():
        m = re.match(r"(#+) (.*)", line)
        if m and level and len(m.group(1)) <= level:
            level = 0
        if m and m.group(2).startswith(TYPED):
            level = len(m.group(1))
        (typed if level else gen).append(line)
    return "\n".join(gen), "\n".join(typed)


def prose(text: str) -> str:
    """``text`` without fenced code blocks, inline code, placeholders and table rows."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = PLACEHOLDER.sub("", text)
    return "\n".join(line for line in text.splitlines() if not line.startswith("|"))


def scripts() -> list[str]:
    """The benchmark scripts: ``benchmarks/*.py`` but the private helpers, sorted."""
    return sorted(p.stem for p in SCRIPTS.glob("*.py") if not p.name.startswith("_"))


def template(name: str) -> tuple[dict[str, object], str]:
    """The header and the body of ``<name>.md.in``.

    Parameters
    ----------
    name : str
        The script's name without ``.py``.

    Returns
    -------
    header : dict
        ``title``, ``summary``, ``command`` (str) and ``results`` (list of str).
    body : str
        The Markdown after the header's ``---`` line.
    """
    text = (TEMPLATES / f"{name}.md.in").read_text()
    head, sep, body = text.partition("\n---\n")
    if not sep:
        raise ValueError(f"{name}.md.in: no '---' line after the header")
    header: dict[str, object] = {}
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        if not colon or key.strip() not in HEADER_KEYS:
            raise ValueError(f"{name}.md.in: header line {line!r}")
        header[key.strip()] = value.strip()
    missing = [k for k in HEADER_KEYS if k not in header]
    if missing:
        raise ValueError(f"{name}.md.in: header lacks {missing}")
    header["results"] = str(header["results"]).split()
    return header, body.lstrip("\n")


def load(result: str, results: Path = RESULTS) -> dict | None:
    """The published record ``<results>/<result>.json``, or None when there is none."""
    path = results / f"{result}.json"
    return json.loads(path.read_text()) if path.exists() else None


def page(name: str, results: Path = RESULTS) -> str:
    """The Markdown of ``docs/benchmarks/<name>.md``.

    Parameters
    ----------
    name : str
        The script's name without ``.py``.
    results : Path, default=benchmarks/results
        Where the records are read.

    Returns
    -------
    str
    """
    header, body = template(name)
    records = {r: load(r, results) for r in header["results"]}
    values = benchmark_tables.RENDERERS[name](records)
    used = set(PLACEHOLDER.findall(body))
    unknown, unused = used - set(values), set(values) - used
    if unknown or unused:
        raise ValueError(f"{name}: placeholders without a value {sorted(unknown)}, values "
                         f"without a placeholder {sorted(unused)}")
    filled = PLACEHOLDER.sub(lambda m: str(values[m.group(1)]).rstrip("\n"), body)
    sources = ", ".join(f"`benchmarks/results/{r}.json`" for r in header["results"])
    lead = (f"# {header['title']}\n\n{header['summary']}\n\n"
            f"```\n{header['command']}\n```\n\n"
            f"*This page is generated by `docs/benchmark_pages.py` from its template "
            f"`docs/benchmark_templates/{name}.md.in` and the published results "
            f"({sources}): edit those, not this file.*\n\n")
    return re.sub(r"\n{3,}", "\n\n", lead + filled).rstrip("\n") + "\n"


def index() -> str:
    """``docs/benchmarks.md``: one line per page, then the pages' table of contents."""
    lines = ["# Benchmarks", "",
             "One page per script of `benchmarks/`: what it measures, how, the command, "
             "and its latest published results. Every table is generated from the JSON "
             "the script wrote with `--publish` (`benchmarks/results/`), with the "
             "machine, load and versions of that run; the long studies that were not "
             "rerun keep their last tables under a heading that says they were typed "
             "from an earlier run. Timings on a shared 2-core machine are noisy: read "
             "the ratios measured in one run, not absolute seconds.", ""]
    names = scripts()
    for name in names:
        header, _ = template(name)
        lines.append(f"- [{header['title']}](benchmarks/{name}.md): {header['summary']}")
    lines += ["", "```{toctree}", ":hidden:", ""] + [f"benchmarks/{n}" for n in names]
    lines += ["```", ""]
    return "\n".join(lines)


def readme() -> str:
    """``benchmarks/README.md``: the short index, one line per script."""
    lines = ["# Benchmarks", "",
             "One line per script: what it measures, the command, and its results page "
             "(generated from the script's published JSON, `benchmarks/results/`). Every "
             "script writes `benchmarks/output/<name>.json` (git-ignored); `--publish` "
             "also writes the committed `benchmarks/results/<name>.json`, and "
             "`python docs/benchmark_pages.py` then regenerates the pages, the "
             "documentation's index and this file.", ""]
    for name in scripts():
        header, _ = template(name)
        lines.append(f"- **`{name}.py`**: {header['summary']} `{header['command']}`; "
                     f"[results](../docs/benchmarks/{name}.md)")
    return "\n".join(lines) + "\n"


def write(out: Path = OUT, *, with_readme: bool = False) -> list[Path]:
    """Write every page into ``out`` and the index ``docs/benchmarks.md``.

    Parameters
    ----------
    out : Path, default=docs/benchmarks
        The folder of the pages (created; pages of scripts that no longer exist are
        removed).
    with_readme : bool, default=False
        Also write ``benchmarks/README.md``.

    Returns
    -------
    list of Path
        The files written or already up to date, pages first.
    """
    out.mkdir(parents=True, exist_ok=True)
    names = scripts()
    for stale in out.glob("*.md"):
        if stale.stem not in names:
            stale.unlink()
    paths = []
    for name in names:
        paths.append(out / f"{name}.md")
        _write_if_changed(paths[-1], page(name))
    if out == OUT:
        paths.append(INDEX)
        _write_if_changed(INDEX, index())
    if with_readme:
        paths.append(README)
        _write_if_changed(README, readme())
    return paths


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


if __name__ == "__main__":
    for p in write(with_readme=True):
        print(p.relative_to(REPO))
