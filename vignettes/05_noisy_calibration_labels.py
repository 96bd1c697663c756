# %% [markdown]
# # 05 Calibrating with noisy calibration labels: the LWCal tabular protocol
#
# After "LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration
# Labels" (Section IV, Tables III-V).
#
# A random forest is trained on noisy labels and frozen; a recalibration map is then fitted
# on a calibration split whose labels are *also* noisy, and judged on clean test labels.
# Label noise compresses the label-conditional probability toward 0.5, so a plain
# isotonic fit learns an under-confident map. LWCal (Eq. 1, 2 and 5) down-weights the
# calibration points whose label the score contradicts; Gated-LWCal (Eq. 6 and 3) blends
# back toward the raw score when the apparent disagreement is high.
#
# By default (`--small`) this runs the quick grid: Breast Cancer, Digits High and
# Synthetic Imbalance (Table II) x seeds 0, 1 x symmetric and asymmetric noise x rates
# 0.2, 0.3, that is 24 cells, each fitting one random forest (160 trees) and every method
# of `noisycal.experiments.methods`. `--full` runs the paper's 432-cell main study (plus
# the clean cells) and the robustness grid: about 47 minutes on a shared 2-core machine,
# where `--small` took 2 min 58 s (51.6 s of CPU; `benchmarks/README.md` has the measured
# tables). The same runs are available as
# `python -m noisycal.experiments.lwcal_protocol --small|--full --out results.csv`.
#
# Run: `python vignettes/05_noisy_calibration_labels.py [--small|--full] [--jobs 2]
# [--out DIR]`. It needs scikit-learn (`pip install noisycal[experiments]`).

# %%
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from noisycal.experiments.grid import main_cells, robustness_cells, run_grid, small_cells
from noisycal.experiments.report import (
    method_table,
    mode_table,
    pattern_checks,
    rate_table,
    render,
)

# %% [markdown]
# ## The grid
#
# Each cell writes one row per method to `results.csv` (resumable: rerunning skips the
# cells already there). Metrics are on the clean test labels: ECE with 15 equal-width
# bins (plug-in), Brier, NLL (predictions clipped to [1e-15, 1 - 1e-15]) and AUC.


# %%
def run(out: Path, full: bool, jobs: int) -> object:
    path = out / "results.csv"
    if full:
        run_grid(main_cells(), path, jobs=jobs)
        return run_grid(robustness_cells(), path, jobs=jobs)
    return run_grid(small_cells(), path, jobs=jobs)


# %% [markdown]
# ## The method table
#
# Means over the noisy cells, sorted by NLL, with Table III of the paper beside them
# (`paper_*`). The paper's seeds, split fractions, asymmetric noise law and synthetic
# generators are not published, so only the orderings are expected to carry over.


# %%
def show(df: object, out: Path) -> None:
    cols = ["ece", "brier", "nll", "auc", "cells", "not_ok", "paper_ece", "paper_nll"]
    print(method_table(df)[cols].round(3).to_string())
    print("\nBy noise rate (ECE, NLL):")
    print(rate_table(df).iloc[:, :8].round(3).to_string())
    print("\nBy noise mechanism (ECE, NLL):")
    print(mode_table(df).iloc[:, :8].round(3).to_string())
    print("\nThe paper's orderings on these cells:")
    for claim, ok in pattern_checks(df).items():
        print(f"  {'holds' if ok else 'does NOT hold'}: {claim}")
    report = out / "lwcal_report.md"
    report.write_text(render(df))
    print(f"\nwrote {out / 'results.csv'}\nwrote {report}")


# %%
if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true", help="the quick grid (default)")
    size.add_argument("--full", action="store_true", help="main study and robustness grid")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="vignette_output/05")
    args = ap.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("this vignette needs scikit-learn: pip install noisycal[experiments]")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    df = run(out, args.full, args.jobs)
    print(f"grid: {time.perf_counter() - t0:.0f} s with {args.jobs} worker(s)\n")
    show(df, out)
