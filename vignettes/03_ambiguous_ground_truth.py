# %% [markdown]
# # 03 Calibration when the ground truth is ambiguous
#
# After Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth".
#
# When annotators disagree about an item, its "label" is a distribution: the share of
# annotators choosing each class. A recalibrator fitted to the majority vote learns to be
# confident where humans are not. The true-label ECE, which scores predictions against
# labels drawn from the annotator distribution, shows it; the voted-label ECE does not.
#
# We fit every post-hoc method of the paper on a calibration half and score it on the
# other half:
#
# - voted-label maps: temperature scaling (TS), Platt, Dirichlet-Hard;
# - soft-label maps: SLTS, MCTS with one sampled annotation per item, VS, SoftPlatt,
#   Dirichlet-Soft;
# - the annotation-free LS-TS and its ablations (Fixed-, Ent-, C-LS);
# - Oracle TS (SLTS fitted on the test half) and, in the simulation, Oracle (TS fitted to
#   the true distribution).
#
# The single-temperature methods are one map fitted to different *targets*
# (`nc.ambiguity`). Then reliability diagrams against the soft target show where the
# voted-label fit stays overconfident.
#
# Data:
#
# - `--data simulated` (default): a 10-class classifier that is overconfident by
#   construction (temperature 0.6), with 50 simulated annotators per item drawing their
#   labels from the true class probabilities (mean top-class probability 0.59). The
#   classifier ranks the classes exactly as the truth does, so the majority vote nearly
#   always equals its top class: TS on the voted labels then *sharpens* it (T < 1), the
#   extreme case of the paper's Proposition 1.
# - `--data cifar10h`: the real DenseNet-40 CIFAR-10 test logits with the CIFAR-10H human
#   label distributions (about 51 labels per image). It needs the shared data
#   (`$NOISYCAL_DATA` or `../shared/data`).
#
# Run: `python vignettes/03_ambiguous_ground_truth.py [--data cifar10h] [--small]`.

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
from scipy.special import softmax

import noisycal as nc
from noisycal.datasets import load_cifar10_logits, load_cifar10h
from noisycal.plots import reliability_diagram

A = nc.ambiguity
N_BINS = 15  # the bin count of Tao et al. (2026)


# %% [markdown]
# ## Data
#
# Logits, annotator vote counts and, in the simulation, the true class probabilities.
# The split is stratified by the voted label, half for calibration, half for test.


# %%
class Data(NamedTuple):
    logits: np.ndarray  # (n, K) uncalibrated logits
    counts: np.ndarray  # (n, K) annotator votes
    true_probs: np.ndarray | None  # (n, K) data-generating probabilities (simulation)
    description: str


def load_data(source: str, n_items: int) -> Data:
    if source == "simulated":
        sim = nc.simulate.classifier(n_items, 10, temperature=0.6, signal=3.0,
                                     n_annotators=50, seed=0)
        return Data(sim.logits, sim.counts, sim.true_probs,
                    f"simulated: {n_items} items, 10 classes, signal 3, temperature 0.6 "
                    "(overconfident), 50 annotators per item")
    logits = load_cifar10_logits("densenet40").logits_test
    counts = load_cifar10h().counts
    n = min(n_items, logits.shape[0])
    return Data(logits[:n], counts[:n], None,
                f"CIFAR-10 test set ({n} images): DenseNet-40 logits, CIFAR-10H human "
                "labels (about 51 per image)")


# %% [markdown]
# ## The targets
#
# One calibration half, every target of the paper. TS depends on a target only through
# its mean logit score `m = mean_i <t_i, z_i>`, and T falls as m grows, so the targets'
# order in m is the order of their temperatures.


# %%
def targets_table(z: np.ndarray, counts: np.ndarray, true_probs: np.ndarray | None,
                  seed: int) -> pd.DataFrame:
    targets = A.paper_targets(logits=z, counts=counts, true_distribution=true_probs,
                              seed=seed)
    fits = A.fit_temperatures(targets, logits=z)
    rows = [{"target": name, "kind": t.kind,
             "mean score m": float(np.mean(np.sum(t.values * z, axis=1))),
             "T": fits[name].temperature_, "status": fits[name].status_}
            for name, t in targets.items()]
    return pd.DataFrame(rows).sort_values("mean score m", ascending=False)


# %% [markdown]
# ## Figures
#
# Reliability diagrams of the test half against the soft target (the expected true-label
# ECE, with its per-bin intervals): uncalibrated, TS on voted labels, and SLTS.


# %%
def make_figures(data: Data, cal: np.ndarray, test: np.ndarray, out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    z, soft = data.logits, nc.targets.soft(counts=data.counts)
    soft_test = soft.values[test]
    voted_cal = A.voted_from(soft.values[cal])
    TS = nc.calibrators.TemperatureScaling
    preds = {
        "uncalibrated": softmax(z[test], axis=1),
        "TS (voted labels)": TS().fit(logits=z[cal], target=voted_cal)
        .predict_proba(logits=z[test]),
        "SLTS (soft labels)": TS().fit(logits=z[cal], target=soft.values[cal])
        .predict_proba(logits=z[test]),
    }
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.8))
    for ax, (name, P) in zip(axes, preds.items(), strict=True):
        est = nc.true_label_ece(P, soft_test, form="expected", n_bins=N_BINS, seed=0)
        title = (f"{name}\ntrue-label ECE {est.value:.4f} (median-unbiased; "
                 f"plug-in {est.details['plugin']:.4f})")
        reliability_diagram(est, ax=ax, title=title)
    fig.subplots_adjust(bottom=0.3, wspace=0.3)
    path = out / "reliability_soft_target.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [path]


# %% [markdown]
# ## Main


# %%
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Post-hoc calibration against voted and soft targets.")
    parser.add_argument("--data", choices=["simulated", "cifar10h"], default="simulated")
    parser.add_argument("--n-items", type=int, default=None,
                        help="items to simulate (default 6000), or the first n CIFAR-10 "
                             "test images (default all 10000)")
    parser.add_argument("--n-draws", type=int, default=None,
                        help="label draws of the Monte-Carlo true-label ECEs (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="split and draws")
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes for tests (1000 items, 20 draws)")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "output"
                        / "03_ambiguous_ground_truth")
    args = parser.parse_args(argv)
    small = {"n_items": 1000, "n_draws": 20}
    full = {"n_items": 6000 if args.data == "simulated" else 10000, "n_draws": 100}
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
        data = load_data(args.data, args.n_items)
    except FileNotFoundError as exc:
        print(f"--data {args.data} needs the shared data: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 200)
    z, pi = data.logits, data.counts / data.counts.sum(1, keepdims=True)
    cal, test = A.stratified_split(np.argmax(pi, axis=1), z.shape[0] // 2, seed=args.seed)
    print(f"data: {data.description}")
    print(f"split: {cal.size} calibration / {test.size} test items (stratified by the voted "
          f"label); {N_BINS} equal-width bins; {args.n_draws} label draws per item")

    print("\nTargets on the calibration half (TS fitted to each):")
    true_cal = None if data.true_probs is None else data.true_probs[cal]
    print(targets_table(z[cal], data.counts[cal], true_cal, args.seed)
          .to_string(index=False, float_format=lambda v: f"{v:.4f}"))

    # a fit whose status is not 'ok' warns; the table keeps its status and message, which
    # are printed as notes below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        table = A.compare_calibrators(logits_cal=z[cal], target_cal=pi[cal],
                                      logits_test=z[test], target_test=pi[test],
                                      true_cal=true_cal, n_draws=args.n_draws,
                                      n_bins=N_BINS, seed=args.seed)
    shown = table.drop(columns=["message"]).copy()
    ece_cols = ["ece_true_mc", "ece_true_expected", "aece_true_mc", "cwece_true_mc",
                "ece_voted"]
    shown[ece_cols] *= 100
    print("\nTest half (ECEs in percent; Brier = expected Brier against a sampled label; "
          "NLL = cross-entropy against the annotator distribution):")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    voted = table.set_index("method").loc[["TS", "Platt", "Dirichlet-Hard"], "ece_true_mc"]
    soft = table.set_index("method").loc[["SLTS", "MCTS", "VS", "SoftPlatt",
                                          "Dirichlet-Soft"], "ece_true_mc"]
    print("(the MC form averages the ECEs of label draws: by Jensen's inequality its "
          "expectation is at least the expected form, more so when bins hold few items)")
    print(f"\nbest voted-label map: true-label ECE {100 * voted.min():.2f}%; worst soft-label "
          f"map: {100 * soft.max():.2f}% (every soft map better: {soft.max() < voted.min()})")
    for _, row in table[table["status"] != "ok"].iterrows():
        print(f"note: {row['method']}: status {row['status']}: {row['message']}")

    csv = args.out / "ambiguity_table.csv"
    table.to_csv(csv, index=False)
    pngs = make_figures(data, cal, test, args.out)
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
