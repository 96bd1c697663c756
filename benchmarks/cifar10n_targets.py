"""Which target should a multi-class recalibration be fitted to? CIFAR-10N with DenseNet-40.

The question of "Confidence Calibration under Ambiguous Ground Truth" (fit to the annotator
distribution, not the vote) meets the noise-corrected target of "Noisy-Label Calibration
with Multiple Unreliable Labels": with three crowd labels per image, fit the same maps to

- ``clean``: the original CIFAR-10 labels (the oracle a user does not have);
- ``voted``: the majority vote of the three labels (ties to the lowest class);
- ``soft``: the share of the three labels on each class;
- ``corrected``: the noise-corrected target with Dawid-Skene EM channels (IV weights);
  it leaves the simplex, so the maps use the bounded affine Brier loss (``loss='auto'``);
- ``posterior``: the Dawid-Skene item posteriors,

and evaluate every fitted map against the **clean** labels of held-out images.

Data: the 5,000 DenseNet-40 validation images of the shared folder (CIFAR-10 training
images, so they carry CIFAR-10N labels). Each seed splits them at random into 2,500
calibration / 2,500 test images; the Dawid-Skene channels are fitted on the calibration
half's ratings only. Metrics on the test half against the clean labels: top-label ECE
(15 equal-width bins, plug-in), NLL and Brier (sum over classes), and the fitted
temperature for TS.

Run: ``python benchmarks/cifar10n_targets.py [--seeds 5] [--maps TS,VS,Dirichlet]``;
without the data it prints a skip line and exits 0. Results:
``benchmarks/output/cifar10n_targets.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)
from scipy.special import softmax

import noisycal as nc

TARGETS = ["clean", "voted", "soft", "corrected", "posterior"]
MAPS = {
    "uncalibrated": None,
    "TS": lambda: nc.calibrators.TemperatureScaling(),
    "VS": lambda: nc.calibrators.VectorScaling(),
    "Dirichlet": lambda: nc.calibrators.DirichletCalibration(max_iter=10_000),
}


def load() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = nc.datasets.load_cifar10n()
    lg = nc.datasets.load_cifar10_logits("densenet40")
    idx = lg.val_train_idx
    return lg.logits_val, d.labels[idx], d.clean[idx]


def targets_for(ratings: np.ndarray, clean: np.ndarray, seed: int) -> tuple[dict, str]:
    ann = nc.Annotations.from_wide(ratings, classes=np.arange(10))
    fit = nc.DawidSkene(n_classes=10).fit(ann, method=nc.engines.EM(n_starts=3), seed=seed)
    out = {
        "clean": nc.targets.hard(clean, n_classes=10),
        "voted": nc.targets.voted(ann),
        "soft": nc.targets.soft(ann),
        "corrected": nc.targets.corrected(ann, fit),
        "posterior": nc.targets.posterior(ann, fit),
    }
    return out, fit.status


def scores(P: np.ndarray, y: np.ndarray) -> dict:
    return {
        "ece": float(nc.ece(P, y, n_bins=15, interval=None)),
        "nll": float(nc.nll(P, y, interval=None)),
        "brier": float(nc.brier(P, y, interval=None)),
    }


def run_seed(z: np.ndarray, ratings: np.ndarray, clean: np.ndarray, seed: int,
             maps: list[str]) -> list[dict]:
    perm = np.random.default_rng(seed).permutation(len(z))
    cal, test = perm[: len(z) // 2], perm[len(z) // 2:]
    tgt, ds_status = targets_for(ratings[cal], clean[cal], seed)
    zt = z[test]
    rows = []
    P0 = softmax(zt, axis=1)
    rows.append({"seed": seed, "map": "uncalibrated", "target": "-", "status": "ok",
                 **scores(P0, clean[test])})
    for m in maps:
        for t in TARGETS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cal_map = MAPS[m]().fit(logits=z[cal], target=tgt[t])
            row = {"seed": seed, "map": m, "target": t, "status": cal_map.status_,
                   "ds_status": ds_status,
                   **scores(cal_map.predict_proba(logits=zt), clean[test])}
            if m == "TS":
                row["T"] = float(cal_map.temperature_)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--maps", default="TS,VS,Dirichlet")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    maps = [m for m in args.maps.split(",") if m]
    for m in maps:
        if m not in MAPS or MAPS[m] is None:
            ap.error(f"--maps: unknown map {m!r}; choose from TS, VS, Dirichlet")
    try:
        z, ratings, clean = load()
    except FileNotFoundError as exc:
        print(f"skip: {exc}")
        return {}
    t0 = time.perf_counter()
    rows = []
    for seed in range(args.seeds):
        rows += run_seed(z, ratings, clean, seed, maps)
        print(f"seed {seed} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    df = pd.DataFrame(rows)
    bad = df[df.status != "ok"]
    if len(bad):
        print("non-ok fits:\n" + bad[["seed", "map", "target", "status"]].to_string())
    cols = ["ece", "nll", "brier"] + (["T"] if "T" in df else [])
    agg = df.groupby(["map", "target"], sort=False)[cols].agg(["mean", "std"])
    pd.set_option("display.width", 160)
    print(f"\nCIFAR-10N x DenseNet-40, 2,500 / 2,500 splits, {args.seeds} seeds; metrics "
          "against the clean test labels (mean, sd over seeds)")
    print(agg.round(4).to_string())
    best = {c: df[df["map"] != "uncalibrated"].groupby(["map", "target"])[c].mean().idxmin()
            for c in ("ece", "nll")}
    print(f"\nlowest mean clean ECE: {best['ece']}; lowest mean clean NLL: {best['nll']}")
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    result = {"seeds": args.seeds, "rows": rows,
              "best": {k: list(v) for k, v in best.items()}}
    write_result("cifar10n_targets", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
