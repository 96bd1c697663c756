"""Command line of the LWCal tabular protocol.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"
(Section IV, Tables III-X)::

    python -m noisycal.experiments.lwcal_protocol --small --out results.csv
    python -m noisycal.experiments.lwcal_protocol --full --out results.csv --jobs 2
    python -m noisycal.experiments.lwcal_protocol --report-only --out results.csv

``--small`` runs the quick grid (3 tasks x 2 seeds x 2 modes x 2 rates, random forest);
``--full`` the 432 noisy + 54 clean cells of the main study and then the robustness grid
(extra trees and gradient boosting; 324 cells with the shared random-forest ones);
``--report-only`` prints the tables of an existing results file. A run resumes from
``--out``: cells already in it are skipped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .grid import main_cells, read_results, robustness_cells, run_grid, small_cells
from .report import render

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m noisycal.experiments.lwcal_protocol",
                                 description=__doc__.split("\n\n")[1])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--small", action="store_true", help="the quick grid (24 cells)")
    mode.add_argument("--full", action="store_true", help="main study, then robustness")
    mode.add_argument("--report-only", action="store_true", help="tables of --out only")
    ap.add_argument("--out", required=True, help="results CSV (appended to; resumable)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--study", choices=("main", "robustness", "both"), default="both",
                    help="with --full: which grid (default both)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="with --full: seeds of the main study (default 0-5)")
    ap.add_argument("--no-gate-grid", action="store_true",
                    help="skip the twelve gate-sensitivity variants")
    ap.add_argument("--n-boot", type=int, default=2000, help="paired bootstrap resamples")
    ap.add_argument("--report", default=None, help="also write the tables to this file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    a = _parser().parse_args(argv)
    kw = dict(jobs=a.jobs, progress=not a.quiet, gate_grid=not a.no_gate_grid)
    if a.small:
        df = run_grid(small_cells(), a.out, **kw)
    elif a.full:
        if a.study in ("main", "both"):
            seeds = tuple(a.seeds) if a.seeds else (0, 1, 2, 3, 4, 5)
            df = run_grid(main_cells(seeds=seeds), a.out, **kw)
        if a.study in ("robustness", "both"):
            df = run_grid(robustness_cells(), a.out, **kw)
    else:
        df = read_results(a.out)
        if df.empty:
            print(f"{a.out}: no results", file=sys.stderr)
            return 1
    text = render(df, n_boot=a.n_boot)
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
