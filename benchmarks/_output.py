"""Shared by the benchmark scripts: where results go and how they are written.

Every script writes ``benchmarks/output/<name>.json`` (git-ignored); with ``--publish`` it
also writes ``benchmarks/results/<name>.json``, which is committed: the documentation's
benchmark pages (``docs/benchmark_pages.py``) are generated from those files and nothing
else. Both files hold the same record::

    {"benchmark": name,
     "run": {"command", "started", "finished", "wall_s", "machine", "load_average",
             "versions", "commit"},
     "result": <what the script measured>}

``run`` says where the numbers come from: the exact command, the UTC start and end, the
machine (platform, CPU count and model), the 1/5/15-minute load averages when the script
started and when it wrote the file (on a shared machine the load moves every timing), the
versions of noisycal and of every other measured package the process imported, and the git
commit of the checkout when the script started (``dirty`` when ``noisycal/``, ``models/``
or ``benchmarks/`` had uncommitted changes). The start (time, load, commit) is read when
the script imports this module: at its start for every script but the coverage studies,
which import it lazily.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

__all__ = ["OUTPUT_DIR", "RESULTS_DIR", "add_publish_argument", "run_record", "write_result",
           "proc_kib"]

HERE = Path(__file__).resolve().parent
#: Results of every run (git-ignored).
OUTPUT_DIR = HERE / "output"
#: Published results (committed; the documentation's benchmark pages are made from them).
RESULTS_DIR = HERE / "results"

#: Distributions whose version is recorded when the process imported them.
PACKAGES = {"jax": "jax", "jaxlib": "jaxlib", "numpy": "numpy", "scipy": "scipy",
            "pandas": "pandas", "numpyro": "numpyro", "arviz": "arviz",
            "statsmodels": "statsmodels", "sklearn": "scikit-learn", "crowdkit": "crowd-kit",
            "funsor": "funsor", "calibration": "uncertainty-calibration", "dask": "dask",
            "netcal": "netcal", "torch": "torch", "mapie": "mapie",
            "venn_abers": "venn-abers", "threadpoolctl": "threadpoolctl"}

# the script's start: this module is imported by the script's first lines
_STARTED = datetime.datetime.now(datetime.UTC)
_STARTED_PERF = time.perf_counter()
_LOAD_AT_START = [round(v, 2) for v in os.getloadavg()]


def proc_kib(field: str) -> int:
    """A KiB field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``): the memory studies
    read the peak resident set size there (reset through ``/proc/self/clear_refs``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def add_publish_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--publish`` (also write the committed ``benchmarks/results/<name>.json``)."""
    parser.add_argument("--publish", action="store_true",
                        help="also write benchmarks/results/<name>.json (committed; the "
                             "documentation's benchmark page is generated from it)")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _commit() -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        # the measured code only: edits elsewhere (docs, published results) do not count
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", "noisycal",
                         "models", "benchmarks", ":(exclude)benchmarks/results"))
    except (OSError, subprocess.CalledProcessError):
        return {"sha": None, "dirty": None}
    return {"sha": sha, "dirty": dirty}


# the checkout the script started from (read once, when the script imports this module)
_COMMIT_AT_START = _commit()


def _command(argv: list[str]) -> str:
    script = Path(argv[0])
    try:
        script = script.resolve().relative_to(HERE.parent)
    except ValueError:
        pass
    return shlex.join(["python", str(script), *argv[1:]])


def run_record(argv: list[str] | None = None) -> dict:
    """Where the numbers come from: command, times, machine, load, versions, commit.

    Parameters
    ----------
    argv : list of str, optional
        The command line (default ``sys.argv``).

    Returns
    -------
    dict
    """
    argv = sys.argv if argv is None else argv
    versions = {"python": platform.python_version(), "noisycal": _version("noisycal")}
    for module, dist in PACKAGES.items():
        if module in sys.modules:
            versions[dist] = _version(dist)
    finished = datetime.datetime.now(datetime.UTC)
    return {
        "command": _command(argv),
        "started": _STARTED.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - _STARTED_PERF, 1),
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "cpu": _cpu_model()},
        "load_average": {"start": _LOAD_AT_START,
                         "end": [round(v, 2) for v in os.getloadavg()]},
        "versions": versions,
        "commit": _COMMIT_AT_START,
    }


def write_result(name: str, result: dict, *, publish: bool = False) -> Path:
    """Write ``benchmarks/output/<name>.json`` (and, to publish, ``results/<name>.json``).

    Parameters
    ----------
    name : str
        File name without ``.json``.
    result : dict
        What the script measured (JSON values or NumPy scalars and arrays; NaN and
        infinity are written as ``NaN`` and ``Infinity``, which Python's ``json`` reads).
    publish : bool, default=False
        Also write the committed copy under ``benchmarks/results/``.

    Returns
    -------
    pathlib.Path
        The file written last.
    """
    record = {"benchmark": name, "run": run_record(), "result": result}
    text = json.dumps(record, indent=1, default=_jsonable) + "\n"
    dirs = [OUTPUT_DIR, RESULTS_DIR] if publish else [OUTPUT_DIR]
    for folder in dirs:
        path = folder / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return path


def _jsonable(obj: object) -> object:
    """NumPy scalars and arrays as JSON values; anything else is an error."""
    if hasattr(obj, "tolist") and hasattr(obj, "dtype"):
        return obj.tolist()
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")
