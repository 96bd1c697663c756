"""Coverage study: the cross-fitted K-class NC-ECE and its finite-sample interval.

:func:`noisycal.workflows.nc_ece_crossfit` with K-class probabilities: F = 5 seeded folds,
Dawid–Skene EM channels fitted on the other folds, the corrected labels of each fold
built from them, the binned statistic (10 equal-width bins) of the whole sample, and the
Hoeffding radius with a union over the folds and the estimand's score groups (its Notes).
The interval is a 90% finite-sample bound that assumes exact channels.

Designs (``--cells`` picks some):

* classifiers from :func:`noisycal.simulate.classifier` with K = 3 or 10 classes,
  temperature 1 ('calibrated': the reported probabilities are the true ones, so the
  population error is 0 for either estimand) or 0.6 ('overconfident': population error
  by Monte Carlo on ``--mc-items`` items, from the known true probabilities);
* true labels drawn from the true probabilities; three annotators with known confusion
  matrices (accuracies 0.85, 0.80, 0.70, errors spread evenly over the other classes),
  their labels drawn by :func:`noisycal.simulate.dawid_skene` for the items of each true
  class;
* n = 2,000 and 5,000; estimands 'top_label' (the default) and 'classwise'.

Reported per cell: coverage of the population binned error, misses by side, mean width,
mean value, and the Estimates' statuses. Not a timing.

Usage::

    python benchmarks/coverage_crossfit_kclass.py --reps 40 --publish
    python benchmarks/coverage_crossfit_kclass.py --cells K3/overconfident/2000 --reps 5
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import noisycal as nc
from noisycal.metrics.binned.bins import equal_width_bins

N_BINS = 10
LEVEL = 0.9
N_FOLDS = 5
ACCURACIES = (0.85, 0.80, 0.70)
DESIGNS = [f"K{K}/{c}" for K in (3, 10) for c in ("calibrated", "overconfident")]
SIZES = (2000, 5000)
KINDS = ("top_label", "classwise")


def channels(K: int) -> np.ndarray:
    """The three annotators' confusion matrices ``[j, true, observed]``."""
    C = np.zeros((len(ACCURACIES), K, K))
    for j, acc in enumerate(ACCURACIES):
        C[j] = (1 - acc) / (K - 1)
        np.fill_diagonal(C[j], acc)
    return C


def temperature(calibrated: bool) -> float:
    return 1.0 if calibrated else 0.6


def draw(K: int, calibrated: bool, n: int, seed: int
         ) -> tuple[np.ndarray, np.ndarray, nc.Annotations]:
    """Predicted probabilities (n, K), true labels (n,) and three annotators' labels."""
    sim = nc.simulate.classifier(n, K, temperature=temperature(calibrated), n_annotators=1,
                                 seed=seed)
    C = channels(K)
    lab = np.empty((n, C.shape[0]), dtype=np.int64)
    for k in range(K):  # the items of true class k, rated through the known channels
        idx = np.flatnonzero(sim.labels == k)
        if idx.size:
            lab[idx] = nc.simulate.dawid_skene(idx.size, np.eye(K)[k], C,
                                               seed=1_000_003 * (seed + 1) + k
                                               ).annotations.to_wide()
    return sim.probs, sim.labels, nc.Annotations.from_wide(lab, classes=list(range(K)))


def population(K: int, calibrated: bool, kind: str, n_items: int = 2_000_000,
               n_bins: int = N_BINS) -> float:
    """The population binned error of the estimand ``kind`` against the true labels.

    Exactly 0 when calibrated; else Monte Carlo with the true probabilities as targets
    (``sum_l |E[(q_k - p_k) 1(p_k in B_l)]|``, k the predicted class or each class,
    classwise averaged over the classes), in chunks of 200,000 items.
    """
    if calibrated:  # temperature 1 reports the true probabilities: every gap is 0
        return 0.0
    G = K if kind == "classwise" else 1
    tot, N, chunk = np.zeros((G, n_bins)), 0, 200_000
    for s in range(max(1, n_items // chunk)):
        sim = nc.simulate.classifier(chunk, K, temperature=temperature(calibrated),
                                     n_annotators=1, seed=10_000 + s)
        P, Q = sim.probs, sim.true_probs
        if kind == "top_label":
            top = P.argmax(1)
            c, q = P[np.arange(chunk), top][None], Q[np.arange(chunk), top][None]
        else:
            c, q = P.T, Q.T
        for g in range(G):
            tot[g] += np.bincount(equal_width_bins(c[g], n_bins), weights=q[g] - c[g],
                                  minlength=n_bins)
        N += chunk
    return float(np.abs(tot / N).sum(axis=1).mean())


def one_run(K: int, calibrated: bool, n: int, seed: int, kinds: tuple) -> dict:
    """{kind: (low, high, value, status)} of one replication."""
    P, _, ann = draw(K, calibrated, n, seed)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in kinds:
            try:
                e = nc.workflows.nc_ece_crossfit(P, ann, kind=kind, n_folds=N_FOLDS,
                                                 n_bins=N_BINS, level=LEVEL, seed=seed)
                out[kind] = (e.low, e.high, float(e), e.status)
            except ValueError as exc:
                out[kind] = (np.nan, np.nan, np.nan, f"refused: {exc}"[:80])
    return out


def summarise(rows: list, pop: float) -> dict:
    """Coverage, misses by side, width, value and statuses of one cell's runs."""
    lo, hi, val = (np.array([r[i] for r in rows], float) for i in range(3))
    has = np.isfinite(lo) & np.isfinite(hi)
    cover = has & (lo <= pop) & (pop <= hi)
    statuses: dict = {}
    for r in rows:
        statuses[r[3]] = statuses.get(r[3], 0) + 1
    return {"runs": len(rows), "coverage": float(cover.mean()),
            "mc_se": float(np.sqrt(max(cover.mean() * (1 - cover.mean()), 1e-12)
                                   / len(rows))),
            "low_above": float(np.mean(has & (lo > pop))),
            "high_below": float(np.mean(has & (hi < pop))),
            "mean_width": float(np.nanmean(np.where(has, hi - lo, np.nan))),
            "mean_value": float(np.nanmean(val)),
            "mean_abs_error": float(np.nanmean(np.abs(val - pop))),
            "statuses": statuses}


def main(argv: list[str] | None = None) -> dict:
    from _output import add_publish_argument, write_result  # benchmarks/_output.py

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--cells", default="", help="comma-separated design/n, e.g. "
                    "K3/overconfident/2000 (default: every design at every n)")
    ap.add_argument("--mc-items", type=int, default=2_000_000,
                    help="Monte Carlo items of the population error")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    cells = ([c.rsplit("/", 1) for c in args.cells.split(",")] if args.cells
             else [(d, str(n)) for d in DESIGNS for n in SIZES])
    result: dict = {"reps": args.reps, "level": LEVEL, "n_folds": N_FOLDS,
                    "n_bins": N_BINS, "accuracies": list(ACCURACIES),
                    "mc_items": args.mc_items, "kinds": list(KINDS), "cells": {}}
    pops: dict = {}
    for design, n in cells:
        K, cal = int(design.split("/")[0][1:]), design.split("/")[1] == "calibrated"
        for kind in KINDS:
            if (K, cal, kind) not in pops:
                pops[(K, cal, kind)] = population(K, cal, kind, args.mc_items)
        t0 = time.perf_counter()
        runs = [one_run(K, cal, int(n), r, KINDS) for r in range(args.reps)]
        cell = {"K": K, "calibrated": cal, "n": int(n),
                "seconds": time.perf_counter() - t0}
        for kind in KINDS:
            cell[kind] = {**summarise([r[kind] for r in runs], pops[(K, cal, kind)]),
                          "population": pops[(K, cal, kind)]}
            s = cell[kind]
            print(f"{design} n={n} {kind}: pop {s['population']:.4f} cover "
                  f"{s['coverage']:.3f} width {s['mean_width']:.3f} value "
                  f"{s['mean_value']:.4f} {s['statuses']}", flush=True)
        result["cells"][f"{design}/{n}"] = cell
        write_result("coverage_crossfit_kclass", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
