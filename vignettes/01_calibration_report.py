# %% [markdown]
# # 01 Calibration report: hard labels and human label distributions
#
# One classifier, two kinds of target. Against the **hard labels** we report the usual
# calibration metrics: top-label ECE, classwise ECE, MCE, the debiased L2 ECE, Brier
# score, NLL, and the calibration slope and intercept. Against the **soft labels** (the
# annotators' distribution over classes) we report the same metrics. Beside them sits the
# true-label ECE of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous
# Ground Truth", in two forms:
#
# - the Monte-Carlo form: draw labels from the annotator distribution and average the
#   ECEs of the draws;
# - the expected form: the ECE against the soft target itself.
#
# Every number has a 90% interval. Per-bin intervals go into the reliability diagrams.
#
# Data:
#
# - `--data simulated` (default): a 10-class classifier that is overconfident by
#   construction (temperature 0.6), with 50 simulated annotators per item. CIFAR-10H has
#   about 51.
# - `--data cifar10`: the real DenseNet-40 test logits with the CIFAR-10H human label
#   counts. These need the shared data (`$NOISYCAL_DATA` or `../shared/data`).
#
# Run: `python vignettes/01_calibration_report.py [--data cifar10] [--small]`.

# %%
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.datasets import load_cifar10_logits, load_cifar10h
from noisycal.plots import reliability_diagram

LEVEL = 0.9
N_BINS = 15  # the bin count of Tao, Luo, Dong & Xu (2026)
CLASSWISE_CLASS = 3  # "cat" in CIFAR-10, the class humans disagree about most


# %% [markdown]
# ## Data
#
# Every metric needs only logits, hard labels and annotator vote counts. The soft target
# is the vote share: `nc.targets.soft(counts=...)`.


# %%
class Data(NamedTuple):
    logits: np.ndarray  # (n, K) pre-softmax scores
    labels: np.ndarray  # (n,) hard labels
    counts: np.ndarray  # (n, K) annotator votes
    class_names: list[str]
    description: str
    true_probs: np.ndarray | None  # data-generating probabilities (simulation only)


def load_data(source: str, n_items: int, *, explicit_n: bool) -> Data:
    if source == "simulated":
        sim = nc.simulate.classifier(n_items, 10, temperature=0.6, n_annotators=50, seed=0)
        return Data(sim.logits, sim.labels, sim.counts, [f"class_{k}" for k in range(10)],
                    f"simulated: {n_items} items, 10 classes, temperature 0.6 "
                    "(overconfident), 50 annotators per item", sim.true_probs)
    logits = load_cifar10_logits("densenet40")
    human = load_cifar10h()
    n = min(n_items, logits.y_test.shape[0]) if explicit_n else logits.y_test.shape[0]
    return Data(logits.logits_test[:n], logits.y_test[:n], human.counts[:n],
                human.class_names,
                f"CIFAR-10 test set ({n} images): DenseNet-40 logits, CIFAR-10H human "
                "labels (about 51 per image)", None)


# %% [markdown]
# ## The report
#
# Each metric is called twice, once per target. The top-label ECE against the soft target
# is exactly the expected true-label ECE of Tao et al. (2026), so that cell is computed with
# `nc.true_label_ece(form="expected")`. The Monte-Carlo form draws `n_draws` label sets.
# Its bootstrap resamples items and keeps each item's draws.


# %%
def calibration_report(data: Data, *, n_boot: int, n_draws: int,
                       seed: int = 0) -> tuple[pd.DataFrame, dict[str, nc.Estimate]]:
    z, K = data.logits, data.logits.shape[1]
    hard = nc.targets.hard(data.labels, n_classes=K)
    soft = nc.targets.soft(counts=data.counts)
    # each metric's default interval kind, with n_boot replicates (or simulated draws)
    inv, sim = nc.intervals.Inversion(n_boot=n_boot), nc.intervals.Simultaneous(n_boot=n_boot)
    boot = nc.intervals.Bootstrap(n_boot=n_boot)
    common = dict(level=LEVEL, seed=seed)
    binned = dict(n_bins=N_BINS, **common)
    targets = {"hard labels": hard, "soft labels": soft}
    metrics = {
        "ECE (top-label)": lambda t: nc.ece(logits=z, target=t, interval=inv, **binned),
        "classwise ECE": lambda t: nc.ece(logits=z, target=t, kind="classwise", interval=inv,
                                          **binned),
        "MCE": lambda t: nc.mce(logits=z, target=t, interval=sim, **binned),
        "debiased L2 ECE": lambda t: nc.ece(logits=z, target=t, norm="l2", debias=True,
                                            interval=inv, **binned),
        "Brier": lambda t: nc.brier(logits=z, target=t, interval=boot, **common),
        "NLL": lambda t: nc.nll(logits=z, target=t, interval=boot, **common),
        "calibration slope": lambda t: nc.calibration_slope(logits=z, target=t, level=LEVEL),
        "calibration intercept": lambda t: nc.calibration_intercept(logits=z, target=t,
                                                                    level=LEVEL),
    }
    ests: dict[tuple[str, str], nc.Estimate] = {}
    for metric, fn in metrics.items():
        for tname, t in targets.items():
            if metric == "ECE (top-label)" and tname == "soft labels":
                continue
            ests[(metric, tname)] = fn(t)
    ests[("ECE (top-label)", "soft labels")] = nc.true_label_ece(
        logits=z, target=soft, form="expected", interval=inv, **binned)
    mc_name = f"true-label ECE (MC, {n_draws} draws)"
    ests[(mc_name, "soft labels")] = nc.true_label_ece(
        logits=z, target=soft, form="mc", n_draws=n_draws, interval=boot, **binned)

    rows = []
    for (metric, tname), est in ests.items():
        rows.append({
            "metric": metric, "target": tname, "estimator": est.name, "value": est.value,
            "low": est.low, "high": est.high, "level": est.level,
            "interval": f"{est.kind} ({est.method})" if est.kind else None,
            "n_boot": est.n_boot, "n": est.n, "status": est.status,
            "statuses": ", ".join(est.statuses),  # every status that applies, worst first
        })
    table = pd.DataFrame(rows)
    named = {
        "hard": ests[("ECE (top-label)", "hard labels")],
        "soft": ests[("ECE (top-label)", "soft labels")],
        "mc": ests[(mc_name, "soft labels")],
        "classwise": ests[("classwise ECE", "hard labels")],
    }
    return table, named


def wide(table: pd.DataFrame) -> pd.DataFrame:
    def cell(row: pd.Series) -> str:
        text = f"{row['value']:.4f}"
        if np.isfinite(row["low"]) and np.isfinite(row["high"]):
            text += f" [{row['low']:.4f}, {row['high']:.4f}]"
        elif pd.notna(row["level"]):
            text += " [no finite interval]"
        return text + ("" if row["status"] == "ok" else f" ({row['statuses']})")

    cells = table.assign(cell=table.apply(cell, axis=1))
    out = cells.pivot(index="metric", columns="target", values="cell")
    out = out.reindex(index=list(dict.fromkeys(table["metric"])),
                      columns=["hard labels", "soft labels"]).fillna("-")
    out.index.name = None
    out.columns.name = None
    return out


# %% [markdown]
# ## Figures
#
# Reliability diagrams, each with its per-bin 90% intervals (normal intervals of the bin
# means, stored by the inverted-interval estimates) and a histogram of bin counts:
#
# - against the hard labels;
# - against the soft labels (the expected true-label ECE);
# - classwise, for one class.


# %%
def make_figures(named: dict[str, nc.Estimate], data: Data, out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    paths = []
    cname = data.class_names[CLASSWISE_CLASS]
    specs = [
        ("reliability_hard.png", named["hard"], {}, "hard labels"),
        ("reliability_soft.png", named["soft"], {}, "soft labels (annotator distribution)"),
        ("reliability_classwise.png", named["classwise"], {"group": CLASSWISE_CLASS},
         f"hard labels, class {CLASSWISE_CLASS}" + (
             "" if cname == f"class_{CLASSWISE_CLASS}" else f" ({cname})")),
    ]
    for filename, est, kwargs, what in specs:
        ax = reliability_diagram(est, **kwargs)
        ax.set_title(f"{ax.get_title()}\nagainst {what}", fontsize="medium")
        path = out / filename
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(ax.figure)
        paths.append(path)
    return paths


# %% [markdown]
# ## Main


# %%
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Calibration report against hard labels and human label distributions.")
    parser.add_argument("--data", choices=["simulated", "cifar10"], default="simulated")
    parser.add_argument("--n-items", type=int, default=None,
                        help="items to simulate (default 20000), or the first n CIFAR-10 "
                             "test images (default all 10000)")
    parser.add_argument("--n-boot", type=int, default=None,
                        help="bootstrap replicates (default 1000)")
    parser.add_argument("--n-draws", type=int, default=None,
                        help="label draws of the Monte-Carlo true-label ECE (default 100)")
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes for tests (500 items, 100 replicates, 20 draws)")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "output"
                        / "01_calibration_report")
    args = parser.parse_args(argv)
    small = {"n_items": 500, "n_boot": 100, "n_draws": 20}
    full = {"n_items": 20000, "n_boot": 1000, "n_draws": 100}
    args.explicit_n = args.n_items is not None or args.small
    for key, value in (small if args.small else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # compiled programs are kept for the next run in the per-user folder (a later run
    # skips most compilation); NOISYCAL_CACHE_DIR names another, set and empty none
    nc.set_compilation_cache(nc.user_cache_folder())
    t0 = time.perf_counter()
    try:
        data = load_data(args.data, args.n_items, explicit_n=args.explicit_n)
    except FileNotFoundError as exc:
        print(f"--data {args.data} needs the shared data: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"data: {data.description}")
    print(f"settings: {N_BINS} equal-width bins, {LEVEL:.0%} intervals; ECE rows: the "
          f"inverted-test interval with the median-unbiased estimate ({args.n_boot} "
          "simulated draws); MCE, Monte-Carlo true-label ECE, Brier, NLL: item bootstrap "
          f"(percentile, n_boot={args.n_boot}); slope/intercept: Wald; Monte-Carlo "
          f"true-label ECE: {args.n_draws} label draws per item")

    table, named = calibration_report(data, n_boot=args.n_boot, n_draws=args.n_draws)
    print()
    print(f"Calibration report (value [{LEVEL:.0%} interval])")
    print(wide(table).to_string())
    print()
    print("soft labels: ECE (top-label) against the annotator distribution is the expected "
          "true-label ECE of Tao et al. (2026); the MC row averages the ECEs of labels drawn from "
          "it (its interval reflects item sampling, not Monte-Carlo error).")
    if data.true_probs is not None:
        oracle = nc.ece(logits=data.logits, target=data.true_probs, n_bins=N_BINS,
                        interval=None)
        print(f"oracle (simulation only): ECE against the data-generating probabilities "
              f"= {oracle.value:.4f}")
    for _, row in table.iterrows():
        if row["status"] != "ok":
            print(f"note: {row['metric']} against {row['target']}: "
                  f"status {row['statuses']}")
        elif pd.notna(row["level"]) and not (np.isfinite(row["low"])
                                             and np.isfinite(row["high"])):
            print(f"note: {row['metric']} against {row['target']}: the {row['interval']} "
                  "interval is not finite")

    csv = args.out / "calibration_report.csv"
    table.to_csv(csv, index=False)
    pngs = make_figures(named, data, args.out)
    print()
    print(f"wrote {csv}")
    for path in pngs:
        print(f"wrote {path}")
    print(f"total time {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    sys.exit(main())
