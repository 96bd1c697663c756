"""Benchmark: the CPU time of the vignettes, on a first run and on the next run.

Each case runs one vignette (``python vignettes/<name>.py [--small] --out <folder>``) as a
fresh process, twice, with ``NOISYCAL_CACHE_DIR`` naming a new empty folder: the first run
compiles everything and fills the folder (what a user's first run of the script costs),
the second reads it back (every later run; see :func:`noisycal.user_cache_folder`). A
run's CPU time is the child's user plus system time (``resource.getrusage`` of the
children, before and after), its wall time is measured beside it. The two runs' printed
outputs are compared, less the lines that report a time in seconds.

The goals of the scale issue: vignette 02 (``--small`` and full) under 20 s of CPU,
vignette 06 ``--small`` under 90 s of CPU (``GOALS``).

The noisycal under test is the one importable in this process's environment
(``PYTHONPATH``; the vignettes are this checkout's). Results go to
``benchmarks/output/bench_vignettes.json``.

Usage::

    python benchmarks/bench_vignettes.py [--cases 02_noisy_label_calibration:small,...]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

REPO = Path(__file__).resolve().parents[1]

#: CPU seconds each vignette should stay under (the scale issue's goals).
GOALS = {"02_noisy_label_calibration": 20.0, "06_annotation_model_workflow": 90.0}

CASES = ("02_noisy_label_calibration:small", "02_noisy_label_calibration:full",
         "06_annotation_model_workflow:small")

#: A printed time ("total 19.5 s", "fit 0.3 s"): such lines differ between runs.
_TIMED = re.compile(r"\b\d+(\.\d+)?\s?s\b")


def run_once(argv: list[str], env: dict) -> tuple[dict, str]:
    """One child process: its CPU (user, system), wall time, return code, and its
    stdout less the lines that print a time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    kept = "\n".join(line for line in res.stdout.splitlines() if not _TIMED.search(line))
    return ({"cpu_s": user + system, "user_s": user, "sys_s": system, "wall_s": wall,
             "returncode": res.returncode,
             "stderr_tail": res.stderr[-400:] if res.returncode else ""}, kept)


def run_case(argv: list[str], env: dict) -> dict:
    """The first run (empty cache) and the second (the cache it filled) of one command,
    and whether they printed the same."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(env, NOISYCAL_CACHE_DIR=cache, MPLBACKEND="Agg")
        first, out1 = run_once(argv, env)
        n_files = len(os.listdir(cache))
        second, out2 = run_once(argv, env)
    return {"first": first, "second": second, "cache_files": n_files,
            "same_output": out1 == out2}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated <vignette>:<small|full>")
    ap.add_argument("--name", default="bench_vignettes")
    add_publish_argument(ap)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    load = os.getloadavg()[0]
    print(f"vignettes, first and second run: load {load:.1f} on {os.cpu_count()} CPUs")
    result: dict = {"cases": [], "load_1min": load, "cpus": os.cpu_count()}
    for case in (c for c in args.cases.split(",") if c):
        vignette, _, size = case.partition(":")
        script = REPO / "vignettes" / f"{vignette}.py"
        if size not in ("small", "full") or not script.is_file():
            raise SystemExit(f"--cases: {case!r} is not <vignette>:<small|full>")
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, str(script), "--out", out] + (
                ["--small"] if size == "small" else [])
            r = run_case(cmd, dict(os.environ))
        r.update(vignette=vignette, size=size, goal_cpu_s=GOALS.get(vignette))
        result["cases"].append(r)
        print(f"{vignette} {size}: first run {r['first']['cpu_s']:.1f} s CPU "
              f"({r['first']['wall_s']:.1f} s wall), second {r['second']['cpu_s']:.1f} s "
              f"CPU ({r['second']['wall_s']:.1f} s wall), same output {r['same_output']}, "
              f"exit {r['first']['returncode']}/{r['second']['returncode']}")
    result["load_1min_end"] = os.getloadavg()[0]
    write_result(args.name, result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
