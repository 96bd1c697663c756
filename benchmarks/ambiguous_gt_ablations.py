"""The calibration-set-size and annotation-count ablations of "Confidence Calibration under
Ambiguous Ground Truth".

Tao, Luo, Dong & Xu (2026), Appendix E (Figs. 9b-c, 10-13: calibration-set size) and
Appendix F (Figs. 9d, 14: annotations per calibration image), rerun on CIFAR-10H with the
DenseNet-40 CIFAR-10 test logits of the shared data (``$NOISYCAL_DATA`` or
``../shared/data``; the paper used a ResNet-50 and a ViT-B/16). Every cell is one call of
:func:`noisycal.ambiguity.compare_calibrators`, the protocol of ``ambiguous_gt_tables.py``,
with the rows of its Table 2 but the oracle and the label-smoothing ablations.

One stratified 5,000 / 5,000 calibration / test split (``--split-seed``, stratified by the
voted label), fixed for the whole study, as the paper fixes its split:

- **size**: the methods fitted on stratified subsets (by voted label, seeded by the
  repetition) of ``--sizes`` calibration images, all ratings per image; the full set is
  fitted once (its repetitions would all be the same fit);
- **ratings**: the soft targets of all 5,000 calibration images rebuilt from ``m`` of each
  image's ratings (``--ratings``), drawn without replacement and seeded by the repetition
  (with one seed the subsamples are nested: the m ratings are the first m of one random
  order of the image's ratings); the voted label, LS-TS and MCTS use the subsampled
  target too; ``all`` (every rating, 47 to 63 per image) is fitted once. The paper does
  not say whether the test targets are subsampled as well: ``--test-ratings full`` (the
  default: the methods aim at the full distributions) scores every cell against the full
  test distributions, ``subsampled`` against m ratings per test image as well.

Metrics as in ``ambiguous_gt_tables.py`` (ECEs in percent, Brier in the expected form, NLL
against the test distributions). The Monte-Carlo metrics use one set of ``--n-draws``
label draws from the test distributions for every cell (common random numbers; with
``--test-ratings subsampled`` the draws come from each cell's test target, seeded by the
repetition); the repetition also seeds MCTS.

Run: ``python benchmarks/ambiguous_gt_ablations.py [--reps 4] [--quick] [--ablations size
ratings] [--test-ratings full|subsampled]``; without the data it prints a skip line and
exits 0. Results: ``benchmarks/output/ambiguous_gt_ablations.json`` and the figures
``benchmarks/output/ambiguous_gt_ablations_size.png`` and ``..._ratings.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd
from _output import OUTPUT_DIR, add_publish_argument, write_result  # benchmarks/_output.py

import noisycal as nc
from noisycal.datasets import load_cifar10_logits, load_cifar10h

A = nc.ambiguity
#: The rows of the paper's Table 2 (as ``ambiguous_gt_tables.py`` runs them) but Oracle TS,
#: which is fitted on the test split, and the LS ablations of its Table 4.
METHODS = ["Uncalibrated", "TS", "Platt", "Dirichlet-Hard", "ATS", "HB", "SLTS", "MCTS",
           "VS", "SoftPlatt", "Dirichlet-Soft", "HB-Soft", "IR-Soft", "LS-TS"]
#: 5, 10, 20, 50 and 100% of the 5,000 calibration images (the fractions of the paper's
#: Fig. 9; its Figs. 10-13 add 30 and 75%).
SIZES = [250, 500, 1000, 2500, 5000]
RATINGS: list[int | str] = [1, 2, 3, 5, 10, 20, "all"]
PERCENT = ["ece_true_mc", "ece_true_expected", "aece_true_mc", "cwece_true_mc", "ece_voted"]
KEEP = ["method", "T", *PERCENT, "brier_expected", "nll", "status"]
#: A method "has converged" at the smallest size (or m) from which the mean ECE_true of
#: every larger one is within this many points of the full-data value (ours, not the
#: paper's; the page reads it from the record).
TOLERANCE = 0.25
#: What the paper reports of its figures (the text of its Appendices E and F), as numbers
#: the page compares ours with.
PAPER = {"stable_from_size": 250, "ratings_gain_max_points": 0.3, "lsts_converged_m": 4,
         "ratings_stable_from_m": 2}


def check_ratings_arg(m: object) -> int | str:
    """``m`` as an int >= 1 or the string 'all'."""
    if isinstance(m, str) and m == "all":
        return m
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ValueError(f"m: must be an integer >= 1 or 'all', got {m!r}")
    return int(m)


def subsample_ratings(counts: np.ndarray, m: int | str, *, seed: int) -> np.ndarray:
    """Vote counts of ``m`` of each item's stored ratings, drawn without replacement.

    Parameters
    ----------
    counts : ndarray of shape (n_items, n_classes)
        Whole vote counts (every stored rating of each item).
    m : int or 'all'
        Ratings kept per item; 'all' keeps them all (a copy of ``counts``).
    seed : int
        Seeds the draw; with one seed a smaller ``m`` keeps a subset of a larger one's
        ratings (the draws of :func:`noisycal.ambiguity.mcts` with ``replace=False``).

    Returns
    -------
    ndarray of int64, shape (n_items, n_classes)
        Each row sums to ``m`` (to the item's ratings with 'all').
    """
    m = check_ratings_arg(m)
    c = np.asarray(counts)
    if c.ndim != 2 or c.size == 0 or not np.all(np.isfinite(c)) or np.any(c < 0) \
            or np.any(c != np.round(c)):
        raise ValueError("counts: must be a non-empty (n_items, n_classes) array of "
                         "non-negative whole vote counts")
    if m == "all":
        return c.astype(np.int64)
    least = int(c.sum(axis=1).min())
    if m > least:
        raise ValueError(f"m: {m} exceeds the {least} stored rating(s) of the item with "
                         f"the fewest")
    t = A.mcts(counts=c, n_samples=m, replace=False, seed=seed)
    return np.rint(t.values * m).astype(np.int64)


def label_draws(pi: np.ndarray, n_draws: int, *, seed: int) -> np.ndarray:
    """``n_draws`` labels per item drawn from its distribution, shape (n_draws, n_items)."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(pi, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random((n_draws, pi.shape[0], 1))
    return np.minimum((u > cdf[None]).sum(axis=2), pi.shape[1] - 1)


def cell(z_cal: np.ndarray, pi_cal: np.ndarray, z_test: np.ndarray, pi_test: np.ndarray,
         draws: np.ndarray, seed: int, **labels: object) -> list[dict]:
    """One call of the existing protocol; its rows with ``labels`` added."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tab = A.compare_calibrators(logits_cal=z_cal, target_cal=pi_cal, logits_test=z_test,
                                    target_test=pi_test, methods=METHODS, draws=draws,
                                    seed=seed)
    for w in caught:
        print(f"  warning ({labels}): {w.message}")
    tab[PERCENT] *= 100
    rows = tab[KEEP].to_dict("records")
    print(f"  {labels}: {time.perf_counter() - t0:.1f} s")
    return [{**labels, **r} for r in rows]


def size_ablation(z: np.ndarray, pi: np.ndarray, cal: np.ndarray, test: np.ndarray,
                  sizes: list[int], reps: int, draws: np.ndarray) -> list[dict]:
    """Methods fitted on stratified subsets of the calibration split."""
    voted = np.argmax(pi[cal], axis=1)
    rows = []
    for size in sizes:
        if not 1 <= size <= cal.size:
            raise ValueError(f"sizes: {size} is not between 1 and {cal.size}")
        for rep in range(1 if size == cal.size else reps):
            idx = cal if size == cal.size else cal[A.stratified_split(voted, size,
                                                                     seed=rep)[0]]
            rows += cell(z[idx], pi[idx], z[test], pi[test], draws, rep, ablation="size",
                         size=size, m="all", rep=rep)
    return rows


def ratings_ablation(z: np.ndarray, counts: np.ndarray, cal: np.ndarray, test: np.ndarray,
                     ratings: list[int | str], reps: int, draws: np.ndarray,
                     test_ratings: str, n_draws: int) -> list[dict]:
    """Methods refitted to soft targets of m ratings per calibration image."""
    full = counts[test] / counts[test].sum(axis=1, keepdims=True)
    rows = []
    for m in ratings:
        for rep in range(1 if m == "all" else reps):
            c = subsample_ratings(counts[cal], m, seed=rep)
            pi_test, d = full, draws
            if test_ratings == "subsampled":
                t = subsample_ratings(counts[test], m, seed=10_000 + rep)
                pi_test = t / t.sum(axis=1, keepdims=True)
                d = label_draws(pi_test, n_draws, seed=20_000 + rep)
            rows += cell(z[cal], c / c.sum(axis=1, keepdims=True), z[test], pi_test, d,
                         rep, ablation="ratings", size=int(cal.size), m=m, rep=rep)
    return rows


def summary(rows: list[dict], key: str, metric: str = "ece_true_mc") -> pd.DataFrame:
    """Mean ± SD of ``metric`` per method (rows) and ``key`` value (columns)."""
    t = pd.DataFrame(rows)
    t[key] = t[key].astype(str)
    g = t.groupby(["method", key], sort=False)[metric]
    cells = (g.mean().map("{:.2f}".format) + " ± " + g.std(ddof=1).map("{:.2f}".format))
    return cells.str.replace(" ± nan", "").unstack(key).loc[METHODS]


def figure(rows: list[dict], key: str, path: object, xlabel: str) -> None:
    """ECE_true (MC) and NLL against ``key``, one line per method (mean ± SD)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    t = pd.DataFrame(rows)
    xs = list(dict.fromkeys(t[key]))
    pos = {x: (i if key == "m" else x) for i, x in enumerate(xs)}
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    for ax, metric, label in zip(axes, ("ece_true_mc", "nll"),
                                 ("true-label ECE (MC, %)",
                                  "NLL (a mean with an infinite NLL is not drawn)"),
                                 strict=True):
        for i, method in enumerate(METHODS):
            g = t[t["method"] == method].groupby(key, sort=False)[metric]
            mean, sd = g.mean(), g.std(ddof=1).fillna(0.0)
            ax.errorbar([pos[x] for x in mean.index], mean.values, yerr=sd.values,
                        marker="o", ms=3, capsize=2, label=method, color=plt.cm.tab20(i),
                        ls="--" if method in ("TS", "Platt", "Dirichlet-Hard", "ATS", "HB",
                                              "LS-TS", "Uncalibrated") else "-")
        if key == "m":
            ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        else:
            ax.set_xscale("log")
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.set_yscale("log")
    axes[1].legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("CIFAR-10H / DenseNet-40: mean ± SD over repetitions")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ablations", nargs="+", default=["size", "ratings"],
                        choices=["size", "ratings"])
    parser.add_argument("--reps", type=int, default=4,
                        help="repetitions per subsampled cell (the full cells run once)")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--ratings", nargs="+", default=[str(m) for m in RATINGS],
                        help="ratings per calibration image: integers and/or 'all'")
    parser.add_argument("--test-ratings", default="full", choices=["full", "subsampled"],
                        help="score against the full test distributions (default) or "
                             "against m subsampled ratings per test image too")
    parser.add_argument("--n-draws", type=int, default=100)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="1 repetition, sizes 250 and 5000, m = 1, 2 and all, 20 draws")
    add_publish_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.sizes, args.ratings, args.n_draws = 1, [250, 5000], ["1", "2",
                                                                             "all"], 20
    if args.reps < 1:
        raise ValueError(f"reps: must be at least 1, got {args.reps}")
    ratings = [check_ratings_arg(r if r == "all" else int(r)) for r in args.ratings]
    try:
        z, counts = load_cifar10_logits("densenet40").logits_test, load_cifar10h().counts
    except FileNotFoundError as exc:
        print(f"skip: the CIFAR-10H ratings or the DenseNet-40 CIFAR-10 logits are not "
              f"available ({exc})")
        return 0
    pi = counts / counts.sum(axis=1, keepdims=True)
    cal, test = A.stratified_split(np.argmax(pi, axis=1), 5000, seed=args.split_seed)
    draws = label_draws(pi[test], args.n_draws, seed=args.split_seed)
    pd.set_option("display.width", 250)
    result: dict[str, object] = {
        "dataset": "CIFAR-10H / DenseNet-40", "n_cal": int(cal.size),
        "n_test": int(test.size), "split_seed": args.split_seed, "reps": args.reps,
        "n_draws": args.n_draws, "test_ratings": args.test_ratings, "methods": METHODS,
        "tolerance": TOLERANCE, "paper": PAPER,
        "ratings_per_image": [int(counts.sum(1).min()), int(counts.sum(1).max())]}
    OUTPUT_DIR.mkdir(exist_ok=True)
    if "size" in args.ablations:
        t0 = time.perf_counter()
        rows = size_ablation(z, pi, cal, test, sorted(args.sizes), args.reps, draws)
        print(summary(rows, "size").to_string())
        figure(rows, "size", OUTPUT_DIR / "ambiguous_gt_ablations_size.png",
               "calibration images")
        result.update(sizes=sorted(args.sizes), size_rows=rows,
                      size_seconds=time.perf_counter() - t0)
    if "ratings" in args.ablations:
        t0 = time.perf_counter()
        rows = ratings_ablation(z, counts, cal, test, ratings, args.reps, draws,
                                args.test_ratings, args.n_draws)
        print(summary(rows, "m").to_string())
        figure(rows, "m", OUTPUT_DIR / "ambiguous_gt_ablations_ratings.png",
               "ratings per calibration image (m)")
        result.update(ratings=ratings, ratings_rows=rows,
                      ratings_seconds=time.perf_counter() - t0)
    write_result("ambiguous_gt_ablations", result, publish=args.publish)
    return 0


if __name__ == "__main__":
    sys.exit(main())
