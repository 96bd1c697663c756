"""Size and power of ``nc.annotators.noise_check``, the test of class-conditional noise.

Cells (each run draws fresh items, classifier scores and ratings from a seeded generator):

- ``binary``: the Gaussian toy of "Noisy-Label Calibration with Multiple Unreliable
  Labels" (``nc.simulate.gaussian_toy`` scores and true labels), 3 annotators with the
  published rates a = (0.08, 0.13, 0.18), 1 - b = (0.16, 0.11, 0.06), whose error rates
  rise by ``slope * (h_i - mean h)`` with the item's hardness h_i = 1 - |2 z_i - 1|
  (slope 0: class-conditional noise, the null); grouped by the score z.
- ``kclass``: ``nc.simulate.classifier`` (K = 4) probabilities and true labels, 3
  one-coin annotators with accuracies (0.75, 0.8, 0.85) that fall by
  ``slope * (h_i - mean h)`` with h_i = 1 - top-label confidence; grouped by the
  confidence.
- ``cifar10n``: the null at CIFAR-10N scale: the shared-channel grouped Dawid–Skene fit
  of the 5,000 DenseNet-40 validation images (3 CIFAR-10N labels each, 5 confidence
  groups) is the truth, and every run redraws the true classes and the labels from it
  with the real design and scores (K = 10).

Each binary and K-class null run (slope 0) calls ``noise_check(test='bootstrap',
n_boot=99)`` and reads three p-values off the one call: the bootstrap p-value, the
chi-square p-value of the same statistic, and the Bartlett-corrected p-value from the
first 19 bootstrap statistics (what ``test='bartlett'`` computes with its default
``n_boot``). The runs with slope > 0 and the CIFAR-10N cell call ``test='bartlett'``
(19 data sets) and add the chi-square p-value of the same statistic.
Printed: rejection rates at 0.01, 0.05 and 0.10 with their binomial standard errors,
and seconds per run.

Run: ``nice -n 10 python benchmarks/noise_check_study.py [--cells binary,kclass,cifar10n]
[--runs 100] [--cifar-runs 30] [--slopes 0,0.1,0.2] [--out noise_check_study]``.
Results: ``benchmarks/output/<out>.json``, rewritten after every cell.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from scipy.special import softmax
from scipy.stats import chi2

import noisycal as nc
from noisycal.annotators import noise_check, score_groups

LEVELS = (0.01, 0.05, 0.10)
BINARY_A = np.array([0.08, 0.13, 0.18])
BINARY_MISS = np.array([0.16, 0.11, 0.06])
KCLASS_ACC = np.array([0.75, 0.80, 0.85])


def binary_data(n: int, slope: float, seed: int) -> tuple[nc.Annotations, np.ndarray]:
    """Gaussian-toy scores and labels; error rates rising with hardness by ``slope``."""
    toy = nc.simulate.gaussian_toy(n, seed=seed)
    rng = np.random.default_rng([seed, 7])
    hard = 1.0 - np.abs(2.0 * toy.z - 1.0)
    base = np.where(toy.y[:, None] == 1, BINARY_MISS, BINARY_A)
    err = np.clip(base + slope * (hard - hard.mean())[:, None], 0.01, 0.49)
    flip = rng.random(base.shape) < err
    labels = np.where(flip, 1 - toy.y[:, None], toy.y[:, None])
    return nc.Annotations.from_wide(labels, classes=[0, 1]), toy.z


def kclass_data(n: int, slope: float, seed: int, n_classes: int = 4
                ) -> tuple[nc.Annotations, np.ndarray]:
    """Simulated K-class scores and labels; one-coin accuracies falling with hardness."""
    sim = nc.simulate.classifier(n, n_classes, seed=seed)
    rng = np.random.default_rng([seed, 11])
    hard = 1.0 - sim.probs.max(axis=1)
    acc = np.clip(KCLASS_ACC - slope * (hard - hard.mean())[:, None], 0.05, 0.99)
    correct = rng.random(acc.shape) < acc
    other = (sim.labels[:, None] + rng.integers(1, n_classes, acc.shape)) % n_classes
    labels = np.where(correct, sim.labels[:, None], other)
    return nc.Annotations.from_wide(labels, classes=np.arange(n_classes)), sim.probs


def cifar10n_truth(n_groups: int = 5) -> tuple[np.ndarray, np.ndarray, object, np.ndarray]:
    """The CIFAR-10N design (ratings, scores) and its shared-channel fit (the null truth)."""
    d = nc.datasets.load_cifar10n()
    lg = nc.datasets.load_cifar10_logits("densenet40")
    probs = softmax(lg.logits_val, axis=1)
    ratings = d.labels[lg.val_train_idx]
    ann = nc.Annotations.from_wide(ratings, classes=np.arange(10))
    groups = score_groups(probs, n_groups)
    fit = nc.GroupedDawidSkene(10).fit(ann, groups=groups, method=nc.engines.EM(n_starts=5),
                                       seed=0)
    return ratings, probs, fit, groups


def cifar10n_null(fit: object, groups: np.ndarray, shape: tuple[int, int], seed: int
                  ) -> nc.Annotations:
    """Ratings redrawn from the shared fit: true class per group, labels per annotator."""
    rng = np.random.default_rng([seed, 13])
    prev, conf = fit.group_prevalence, fit.confusion
    u = rng.random(shape[0])[:, None]
    y = np.minimum((u >= np.cumsum(prev[groups], axis=1)).sum(1), 9)
    cum = np.cumsum(conf[np.arange(shape[1])[None, :], y[:, None]], axis=2)
    labels = np.minimum((rng.random(shape)[:, :, None] >= cum).sum(2), 9)
    return nc.Annotations.from_wide(labels, classes=np.arange(10))


def three_p_values(res: object) -> dict:
    """Bootstrap, chi-square and 19-set Bartlett p-values of one bootstrap check."""
    boot = res.details["boot_statistics"]
    factor = boot[:19].mean() / res.df
    return {"p_bootstrap": res.p_value, "p_chi2": float(chi2.sf(res.statistic, res.df)),
            "p_bartlett": float(chi2.sf(res.statistic / factor, res.df)),
            "boot_mean": float(boot.mean()), "statistic": res.statistic, "df": res.df}


def run_cell(cell: str, slope: float, runs: int, n: int, truth: object = None) -> dict:
    rows, times = [], []
    for seed in range(runs):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rejections warn; fits at a boundary warn
            if cell == "cifar10n":
                ratings, probs, fit, groups = truth
                ann = cifar10n_null(fit, groups, ratings.shape, seed)
                res = noise_check(ann, probs, test="bartlett", seed=seed)
                row = {"p_bartlett": res.p_value, "statistic": res.statistic, "df": res.df,
                       "p_chi2": float(chi2.sf(res.statistic, res.df)),
                       "boot_mean": float(res.details["boot_statistics"].mean())}
            else:
                data = binary_data if cell == "binary" else kclass_data
                ann, scores = data(n, slope, seed)
                if slope == 0:
                    res = noise_check(ann, scores, test="bootstrap", n_boot=99, seed=seed)
                    row = three_p_values(res)
                else:
                    res = noise_check(ann, scores, test="bartlett", seed=seed)
                    row = {"p_bartlett": res.p_value, "statistic": res.statistic,
                           "df": res.df, "p_chi2": float(chi2.sf(res.statistic, res.df)),
                           "boot_mean": float(res.details["boot_statistics"].mean())}
        row.update(status=res.status, min_expected_count=res.details["min_expected_count"],
                   not_converged=res.details["n_boot_not_converged"])
        rows.append(row)
        times.append(time.perf_counter() - t0)
    summary = {}
    for key in ("p_chi2", "p_bartlett", "p_bootstrap"):
        if key not in rows[0]:
            continue
        p = np.array([r[key] for r in rows])
        summary[key] = {f"{lv:g}": float(np.mean(p <= lv)) for lv in LEVELS}
    return {"cell": cell, "slope": slope, "runs": runs, "n_items": n, "rows": rows,
            "rates": summary, "mean_statistic": float(np.mean([r["statistic"] for r in rows])),
            "mean_boot_mean": float(np.mean([r["boot_mean"] for r in rows])),
            "df": rows[0]["df"], "seconds_per_run": float(np.median(times[1:] or times)),
            "first_run_seconds": times[0]}


def print_cell(res: dict) -> None:
    print(f"\n{res['cell']} slope={res['slope']:g} n={res['n_items']} runs={res['runs']}: "
          f"mean LR {res['mean_statistic']:.1f} (df {res['df']}, mean bootstrap LR "
          f"{res['mean_boot_mean']:.1f}); {res['seconds_per_run']:.2f} s/run "
          f"(first {res['first_run_seconds']:.1f} s)")
    for key, rates in res["rates"].items():
        se = {lv: np.sqrt(lv * (1 - lv) / res["runs"]) for lv in LEVELS}
        cells = "  ".join(f"{lv:g}: {rates[f'{lv:g}']:.3f} (null s.e. {se[lv]:.3f})"
                          for lv in LEVELS)
        print(f"  {key:12s} {cells}")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="binary,kclass,cifar10n")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--cifar-runs", type=int, default=30)
    ap.add_argument("--slopes", default="0,0.1,0.2")
    ap.add_argument("--n-binary", type=int, default=2000)
    ap.add_argument("--n-kclass", type=int, default=2000)
    ap.add_argument("--out", default="noise_check_study")
    ap.add_argument("--publish", action="store_true",
                    help="also write benchmarks/results/<out>.json (committed)")
    args = ap.parse_args(argv)
    cells = [c for c in args.cells.split(",") if c]
    slopes = [float(s) for s in args.slopes.split(",") if s]
    out, t0 = [], time.perf_counter()
    for cell in cells:
        if cell == "cifar10n":
            try:
                truth = cifar10n_truth()
            except FileNotFoundError as exc:
                print(f"skip cifar10n: {exc}")
                continue
            out.append(run_cell(cell, 0.0, args.cifar_runs, truth[0].shape[0], truth))
            print_cell(out[-1])
            save(args.out, out, args.publish)
            continue
        n = args.n_binary if cell == "binary" else args.n_kclass
        for slope in slopes:
            out.append(run_cell(cell, slope, args.runs, n))
            print_cell(out[-1])
            save(args.out, out, args.publish)
    print(f"\nwall time {time.perf_counter() - t0:.0f} s")
    return {"cells": out}


def save(name: str, cells: list[dict], publish: bool = False) -> None:
    from _output import write_result  # benchmarks/_output.py (run as a script)

    write_result(name, {"cells": cells}, publish=publish)


if __name__ == "__main__":
    main(sys.argv[1:])
