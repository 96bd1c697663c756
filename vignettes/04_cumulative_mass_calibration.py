# %% [markdown]
# # 04 Cumulative mass calibration and conformal recalibration
#
# A classifier is *cumulative-mass calibrated* when its highest-probability sets cover
# the label as often as their mass says: the smallest set of top classes holding 90% of
# the probability should contain the label 90% of the time, and so on for every level
# ("Adaptive Set-Mass Calibration with Conformal Prediction", Definitions 4 and 5). The
# cumulative mass calibration error (CMCE, Eq. 4) bins all n x K nested top-t sets by
# their mass and averages |coverage - mass|; the cumulative mass curve plots coverage
# against mass.
#
# We compare the base model with four recalibrations fitted on a 20% calibration split:
#
# - temperature scaling (one temperature, maximum likelihood);
# - the naive CMCE temperature (one temperature, chosen on a grid to minimise CMCE);
# - mass rescaling (MR): the split-conformal set at alpha = 0.1 gets exactly 90% of the
#   mass (Eq. 6);
# - conformal temperature scaling ("TS (ours)"): a temperature per item, the largest that
#   keeps 90% of the mass in the conformal set (Section 3.2); it never changes the
#   ranking.
#
# Data:
#
# - `--data simulated` (default): the paper's 2-D Gaussian-grid classes (K = 49; exact
#   p(y | x)) with an over-confident noisy model, logits 2.5 x the true log-odds + N(0, 1).
# - `--data cifar10`: the DenseNet-40 CIFAR-10 test logits of the shared data
#   (`$NOISYCAL_DATA` or `../shared/data`).
#
# Run: `python vignettes/04_cumulative_mass_calibration.py [--data cifar10] [--small]`.

# %%
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.datasets import load_cifar10_logits
from noisycal.experiments.set_mass import evaluate, splits
from noisycal.plots import cumulative_mass_curve, reliability_diagram

ALPHA = 0.1
N_BINS = 25  # the paper's figures and the authors' code


# %% [markdown]
# ## Data


# %%
class Data(NamedTuple):
    logits: np.ndarray
    labels: np.ndarray
    true_probs: np.ndarray | None
    description: str


def load_data(source: str, n_items: int, n_classes: int) -> Data:
    if source == "simulated":
        g = nc.simulate.gaussian_grid(n_items, n_classes, seed=0)
        rng = np.random.default_rng(1)
        z = 2.5 * g.true_logits + rng.normal(size=g.true_logits.shape)
        return Data(z, g.labels, g.true_probs,
                    f"simulated Gaussian grid: {n_items} items, {n_classes} classes, logits "
                    "2.5 x true + N(0, 1) (over-confident)")
    d = load_cifar10_logits("densenet40")
    n = min(n_items, d.y_test.size)
    return Data(d.logits_test[:n], d.y_test[:n], None,
                f"CIFAR-10 test set ({n} images): DenseNet-40 logits")


# %% [markdown]
# ## Methods
#
# Every calibrator takes `logits=` and the calibration labels. The conformal maps compose
# a `SplitConformal`, which holds the settings of their sets (here alpha = 0.1 and MSP
# scores), and also expose those sets (`predict_sets`).


# %%
def methods() -> dict[str, nc.calibrators.Calibrator | None]:
    cal = nc.calibrators
    return {
        "Base": None,
        "Temp. scaling": cal.TemperatureScaling(),
        "Naive CMCE": cal.NaiveCMCETemperature(),
        f"MR (alpha={ALPHA}, MSP, C)": cal.MassRescaling(
            conformal=cal.SplitConformal(alpha=ALPHA)),
        f"TS (ours) (alpha={ALPHA}, MSP, C)": cal.ConformalTemperature(
            conformal=cal.SplitConformal(alpha=ALPHA)),
    }


def run(data: Data) -> tuple[pd.DataFrame, dict[str, nc.Estimate], dict[str, np.ndarray]]:
    ic, it = next(splits(data.labels.size, n_splits=1, cal_fraction=0.2, seed=0))
    zc, yc, zt, yt = data.logits[ic], data.labels[ic], data.logits[it], data.labels[it]
    rows, curves, probs = [], {}, {}
    for name, m in methods().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statuses are printed below
            if m is None:
                P = np.exp(zt - zt.max(1, keepdims=True))
                P /= P.sum(1, keepdims=True)
                status = "ok"
            else:
                P = m.fit(logits=zc, target=yc).predict_proba(logits=zt)
                status = m.status_
        est = nc.cmce(P, yt, n_bins=N_BINS, seed=0)
        row = {"method": name, "CMCE [90% interval]":
               f"{est.value:.4f} [{est.low:.4f}, {est.high:.4f}]",
               **evaluate(P, yt, alpha=ALPHA), "status": status}
        if name.startswith("MR"):
            sets = m.predict_sets(logits=zt)
            row["set coverage"] = float(sets[np.arange(yt.size), yt].mean())
        rows.append(row)
        curves[name] = est
        probs[name] = P
    return pd.DataFrame(rows).set_index("method"), curves, probs


# %% [markdown]
# ## Figures
#
# The cumulative mass curves of every method on one plot (points above the diagonal:
# under-confident sets), and the reliability diagram of the base model beside that of
# conformal temperature scaling.


# %%
def make_figures(curves: dict[str, nc.Estimate], probs: dict[str, np.ndarray],
                 labels: np.ndarray, out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5.5))
    for name, est in curves.items():
        cumulative_mass_curve(est, ax=ax, show_counts=False, title="",
                              label=f"{name}: CMCE {est.value:.4f}")
    ax.set_title(f"Cumulative mass calibration ({N_BINS} bins)", fontsize="medium")
    p1 = out / "cumulative_mass_curves.png"
    fig.savefig(p1, dpi=120, bbox_inches="tight")
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.5))
    fig.subplots_adjust(bottom=0.3)
    for ax, name in zip(axes, ["Base", f"TS (ours) (alpha={ALPHA}, MSP, C)"], strict=True):
        est = nc.ece(probs[name], labels, n_bins=N_BINS, interval="inversion", seed=0)
        reliability_diagram(est, ax=ax)
        ax.set_title(f"{name}\n{ax.get_title()}", fontsize="small")
    p2 = out / "reliability_base_vs_conformal_ts.png"
    fig.savefig(p2, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [p1, p2]


# %% [markdown]
# ## Main


# %%
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Cumulative mass calibration and conformal "
                                                 "recalibration.")
    parser.add_argument("--data", choices=["simulated", "cifar10"], default="simulated")
    parser.add_argument("--n-items", type=int, default=None,
                        help="items (default 10000; CIFAR-10: all 10000)")
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes for tests (2000 items, 16 simulated classes)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent
                        / "output" / "04_cumulative_mass_calibration")
    args = parser.parse_args(argv)
    if args.n_items is None:
        args.n_items = 2000 if args.small else 10000
    args.n_classes = 16 if args.small else 49
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # compiled programs are kept for the next run in the per-user folder (a later run
    # skips most compilation); NOISYCAL_CACHE_DIR names another, set and empty none
    nc.set_compilation_cache(nc.user_cache_folder())
    t0 = time.perf_counter()
    try:
        data = load_data(args.data, args.n_items, args.n_classes)
    except FileNotFoundError as exc:
        print(f"--data {args.data} needs the shared data: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"data: {data.description}")
    print(f"protocol: 20% calibration / 80% test (one split); {N_BINS} equal-width bins; "
          f"conformal maps at alpha = {ALPHA} with MSP scores and a constant threshold")
    table, curves, probs = run(data)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    print()
    print(table.round(4).to_string())
    print()
    print("cov[a,b]: coverage of the nested sets whose mass lies in [a, b] (calibrated: "
          "inside the window); HPR coverage: how often the label is in the smallest set "
          f"holding {1 - ALPHA:.0%} of the mass (Definition 4 asks >= {1 - ALPHA:.0%}).")
    if data.true_probs is not None:
        it = next(splits(data.labels.size, n_splits=1, cal_fraction=0.2, seed=0))[1]
        oracle = nc.cmce(data.true_probs[it], data.labels[it], n_bins=N_BINS, interval=None)
        print(f"oracle (simulation only): CMCE of the true p(y | x) = {oracle.value:.4f}")
    for name, row in table.iterrows():
        if row["status"] != "ok":
            print(f"note: {name}: status {row['status']}")
    csv = args.out / "cmce_table.csv"
    table.to_csv(csv)
    pngs = make_figures(curves, probs, data.labels[next(splits(
        data.labels.size, n_splits=1, cal_fraction=0.2, seed=0))[1]], args.out)
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
