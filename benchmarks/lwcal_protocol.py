"""Study: the tabular protocol of the LWCal paper, its tables written as one JSON record.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels",
Section IV, re-created by :mod:`noisycal.experiments` (needs scikit-learn). This script
runs the cells of the grid that are not yet in ``--csv`` (resumable: the per-cell results
file of ``python -m noisycal.experiments.lwcal_protocol``, whose format it shares) and
writes every table of :mod:`noisycal.experiments.report` beside the paper's values,
the status counts of each method's fits and the paper's orderings to
``benchmarks/output/lwcal_protocol.json`` (``--publish``: also ``benchmarks/results/``).

Usage::

    python benchmarks/lwcal_protocol.py --study main             # 432 noisy + 54 clean cells
    python benchmarks/lwcal_protocol.py --study both             # and the robustness grid
    python benchmarks/lwcal_protocol.py --study none --csv results.csv   # tables only
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

import pandas as pd
from _output import OUTPUT_DIR, add_publish_argument, write_result  # benchmarks/_output.py

from noisycal.experiments import report
from noisycal.experiments.grid import main_cells, read_results, robustness_cells, run_grid
from noisycal.experiments.methods import METHOD_TITLES


def _records(t: pd.DataFrame, index: bool = True) -> list[dict]:
    t = t.reset_index() if index else t
    return [{str(k): (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in t.to_dict("records")]


def statuses(df: pd.DataFrame) -> dict:
    """Per method: how many fits had each status, over noisy and over clean cells."""
    out = {}
    for part, d in (("noisy", df[df["rate"] > 0]), ("clean", df[df["rate"] == 0])):
        d = d[(d["learner"] == "rf") & d["method"].isin(METHOD_TITLES)]
        out[part] = {m: dict(Counter(g["status"].fillna("ok")).most_common())
                     for m, g in d.groupby("method")}
    return out


def tables(df: pd.DataFrame, n_boot: int) -> dict:
    """Every table of the report, as records (the paper's values in ``paper_*`` columns)."""
    noisy = df[df["rate"] > 0]
    rf = noisy[noisy["learner"] == "rf"]
    out = {
        "cells": {"noisy_rf": int(rf[["task", "seed", "mode", "rate"]].drop_duplicates()
                                  .shape[0]),
                  "clean_rf": int(df[(df["rate"] == 0) & (df["learner"] == "rf")]
                                  [["task", "seed"]].drop_duplicates().shape[0]),
                  "learners": sorted(set(df["learner"]))},
        "method": _records(report.method_table(df)),
        "rate": _records(report.rate_table(df)),
        "mode": _records(report.mode_table(df)),
        "gate": _records(report.gate_table(df), index=False),
        "task": _records(report.dataset_table(df)),
        "class": _records(report.class_table(df)),
        "bootstrap_main": _records(report.bootstrap_table(rf, n_boot=n_boot), index=False),
        "orderings": report.pattern_checks(df),
        "statuses": statuses(df),
        "seconds_per_cell": float(df.groupby(["learner", "task", "seed", "mode", "rate"])
                                  ["seconds"].first().mean()),
    }
    if set(df["learner"]) - {"rf"}:
        rob = noisy[noisy["seed"].isin((0, 1, 2)) & noisy["rate"].isin((0.2, 0.3))]
        out["robustness"] = _records(report.robustness_table(df))
        out["bootstrap_robustness"] = _records(report.bootstrap_table(rob, n_boot=n_boot),
                                               index=False)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--study", choices=("main", "robustness", "both", "none"), default="main",
                    help="cells to run before the tables ('none': tables of --csv only)")
    ap.add_argument("--csv", default=str(OUTPUT_DIR / "lwcal_protocol.csv"),
                    help="per-cell results (appended to; resumable)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--no-gate-grid", action="store_true",
                    help="skip the twelve gate-sensitivity variants")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--n-boot", type=int, default=2000)
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    kw = dict(jobs=args.jobs, gate_grid=not args.no_gate_grid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.study in ("main", "both"):
            run_grid(main_cells(seeds=tuple(args.seeds)), args.csv, **kw)
        if args.study in ("robustness", "both"):
            run_grid(robustness_cells(), args.csv, **kw)
    df = read_results(args.csv)
    result = {"study": args.study, "seeds": args.seeds, "gate_grid": not args.no_gate_grid,
              "n_boot": args.n_boot, "seconds": time.perf_counter() - t0,
              **tables(df, args.n_boot)}
    print(report.render(df, n_boot=args.n_boot))
    write_result("lwcal_protocol", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
