"""Coverage study: 90% intervals on NC-ECE with fitted annotator channels.

The estimand is the population binned ECE against the *true* labels (10 equal-width
bins; positive-class for two classes, top-label for four), which the noise-corrected
target of "Noisy-Label Calibration with Multiple Unreliable Labels" estimates from three
annotators' labels, the annotators' channels fitted by Dawid–Skene EM on the same items.

Designs (``--cells`` picks some; every design at n = 500, 2,000 and 10,000):

* ``K2``: binary scores p ~ U(0, 1) with true curve ``expit(slope * logit(p))``
  (:func:`noisycal.simulate.binary_scores`): slope 1 ('calibrated', ECE 0) or 0.5
  ('overconfident', ECE 0.0966, by quadrature);
* ``K4``: :func:`noisycal.simulate.classifier` with four classes, temperature 1
  ('calibrated') or 0.6 ('overconfident'; ECE by Monte Carlo on 4,000,000 items);
* annotators: three Dawid–Skene channels, 'strong' (two classes: false-positive rates
  0.10/0.15/0.20, true-positive rates 0.85/0.90/0.80; four classes: accuracy 0.8,
  errors uniform) or 'weak' (0.30/0.35/0.30 and 0.70/0.70/0.65; accuracy 0.55).

Intervals per replication (``--kinds``):

* ``default``: ``nc.ece(p, nc.targets.corrected(ann, fit))``: the inverted test with the
  channel error carried by the delta method (:mod:`noisycal.metrics.nc.delta`);
* ``fixed``: the same inversion with the fitted channels given as known
  (``nc.targets.corrected(ann, confusion=fit.confusion)``: the default before 2026-12-03);
* ``true``: the inversion with the true channels given (a reference);
* ``refit``: ``interval='refit'`` (``Refit()``: the inverted test with the channel-refit
  bootstrap's covariance);
* ``refit_percentile``: ``interval=Refit(method='percentile')``;
* ``bootstrap``: ``interval='bootstrap'`` (percentile, channels fixed);
* ``credible``: a NUTS fit (2 chains x (300 + 300)) and ``interval='credible'`` (slow);
* ``bound``: ``interval='bound'`` (the finite-sample bound).

Usage::

    python benchmarks/coverage_nc_ece.py --reps 100                       # every cell
    python benchmarks/coverage_nc_ece.py --cells K2/calibrated/weak/2000 --reps 40

Writes ``benchmarks/output/coverage_nc_ece_<tag>.json`` after every cell. Not a timing.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import noisycal as nc
from noisycal.metrics.binned.bins import equal_width_bins

N_BINS = 10
DESIGNS = [f"K{K}/{c}/{s}" for K in (2, 4) for c in ("calibrated", "overconfident")
           for s in ("strong", "weak")]
SIZES = (500, 2000, 10_000)
KINDS = ("default", "fixed", "true", "refit", "refit_percentile", "bootstrap", "credible",
         "bound")


def channels(K: int, strength: str) -> np.ndarray:
    """The three annotators' confusion matrices ``[j, true, observed]``."""
    if K == 2:
        a, b = ((np.array([0.10, 0.15, 0.20]), np.array([0.85, 0.90, 0.80]))
                if strength == "strong" else
                (np.array([0.30, 0.35, 0.30]), np.array([0.70, 0.70, 0.65])))
        return np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)
    acc = 0.8 if strength == "strong" else 0.55
    C = np.full((3, K, K), (1 - acc) / (K - 1))
    for j in range(3):
        np.fill_diagonal(C[j], acc)
    return C


def draw(K: int, calibrated: bool, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Predicted probabilities (n, K) and true labels (n,)."""
    if K == 2:
        s = nc.simulate.binary_scores(n, slope=1.0 if calibrated else 0.5, seed=seed)
        return np.column_stack([1 - s.p, s.p]), s.y
    sim = nc.simulate.classifier(n, K, temperature=1.0 if calibrated else 0.6, seed=seed)
    return sim.probs, sim.labels


def population(K: int, calibrated: bool, n_bins: int = N_BINS) -> float:
    """The population binned ECE against the true labels (``n_bins`` equal-width bins)."""
    if K == 2:
        return nc.simulate.population_binned_ece(n_bins, slope=1.0 if calibrated else 0.5)
    if calibrated:   # temperature 1 reports the true probabilities: every gap is 0
        return 0.0
    tot, N = np.zeros(n_bins), 0
    for s in range(10):
        sim = nc.simulate.classifier(400_000, K, temperature=1.0 if calibrated else 0.6,
                                     seed=10_000 + s)
        top, c = sim.probs.argmax(1), sim.probs.max(1)
        tot += np.bincount(equal_width_bins(c, n_bins),
                           weights=sim.true_probs[np.arange(c.size), top] - c,
                           minlength=n_bins)
        N += c.size
    return float(np.abs(tot / N).sum())


def annotate(y: np.ndarray, C: np.ndarray, seed: int) -> nc.Annotations:
    """Three annotators' labels of every item, drawn from their channels."""
    rng = np.random.default_rng(seed)
    J, K, _ = C.shape
    cum = np.cumsum(C[:, y, :], axis=2)
    lab = np.minimum((rng.random((J, y.size, 1)) >= cum).sum(2), K - 1)
    return nc.Annotations.from_wide(lab.T, classes=list(range(K)))


def one_run(design: str, n: int, seed: int, kinds: tuple) -> dict:
    """Every requested interval of one replication: {kind: (low, high, value, status)}."""
    Ks, cal, strength = design.split("/")
    K = int(Ks[1:])
    P, y = draw(K, cal == "calibrated", n, seed)
    C = channels(K, strength)
    ann = annotate(y, C, seed + 1_000_003)
    p = P[:, 1] if K == 2 else P
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nc.DawidSkene(K).fit(ann, seed=seed)
        out["fit_status"] = fit.status
        try:
            U = nc.targets.corrected(ann, fit)
        except ValueError as exc:  # a fitted channel that cannot be inverted
            out["refused"] = str(exc)
            return out
        kw = {"n_bins": N_BINS, "seed": seed}
        calls = {
            "default": lambda: nc.ece(p, U, **kw),
            "fixed": lambda: nc.ece(p, nc.targets.corrected(ann, confusion=fit.confusion),
                                    **kw),
            "true": lambda: nc.ece(p, nc.targets.corrected(ann, confusion=C), **kw),
            "refit": lambda: nc.ece(p, U, interval="refit", **kw),
            "refit_percentile": lambda: nc.ece(
                p, U, interval=nc.intervals.Refit(method="percentile"), **kw),
            "bootstrap": lambda: nc.ece(p, U, interval="bootstrap", **kw),
            "bound": lambda: nc.ece(p, U, interval="bound", **kw),
        }
        for k in kinds:
            if k == "credible":
                nuts = nc.DawidSkene(K).fit(ann,
                                            method=nc.engines.NUTS(num_chains=2, num_warmup=300,
                                                                   num_samples=300), seed=seed)
                calls[k] = lambda nuts=nuts: nc.ece(p, nc.targets.corrected(ann, nuts),
                                                    interval="credible", **kw)
            try:
                e = calls[k]()
                out[k] = (e.low, e.high, float(e), e.status)
            except ValueError as exc:
                out[k] = (np.nan, np.nan, np.nan, f"refused: {exc}"[:80])
    return out


def summarise(runs: list, pop: float, kinds: tuple) -> dict:
    """Coverage (all runs, and runs with status ok), width, misses by side."""
    res = {}
    for k in kinds:
        rows = [r[k] for r in runs if k in r]
        if not rows:
            continue
        lo, hi, val = (np.array([r[i] for r in rows], float) for i in range(3))
        ok = np.array([r[3] == "ok" for r in rows])
        has = np.isfinite(lo) & np.isfinite(hi)
        cover = has & (lo <= pop) & (pop <= hi)
        res[k] = {"runs": len(rows), "coverage": float(cover.mean()),
                  "coverage_ok": float(cover[ok].mean()) if ok.any() else None,
                  "share_ok": float(ok.mean()),
                  "low_above": float(np.mean(has & (lo > pop))),
                  "high_below": float(np.mean(has & (hi < pop))),
                  "mean_width": float(np.nanmean(np.where(has, hi - lo, np.nan)))
                  if has.any() else None,
                  "mean_value": float(np.nanmean(val)),
                  "outside_own": float(np.mean(has & ((val < lo) | (val > hi))))}
    statuses: dict = {}
    for r in runs:
        statuses[r["fit_status"]] = statuses.get(r["fit_status"], 0) + 1
    res["fit_statuses"] = statuses
    res["refused"] = sum("refused" in r for r in runs)
    return res


def main(argv: list[str] | None = None) -> dict:
    from _output import add_publish_argument, write_result  # benchmarks/_output.py

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--cells", default="", help="comma-separated design/n, e.g. "
                    "K2/calibrated/weak/2000 (default: every design at every n)")
    ap.add_argument("--kinds", default="default,fixed,true,refit,bootstrap,bound",
                    help=f"comma-separated, of {', '.join(KINDS)}")
    ap.add_argument("--tag", default="grid")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    cells = ([c.rsplit("/", 1) for c in args.cells.split(",")] if args.cells
             else [(d, str(n)) for n in SIZES for d in DESIGNS])
    pops: dict = {}
    result: dict = {"reps": args.reps, "kinds": kinds, "cells": {}}
    for design, n in cells:
        K, cal = int(design.split("/")[0][1:]), design.split("/")[1] == "calibrated"
        if (K, cal) not in pops:
            pops[(K, cal)] = population(K, cal)
        pop = pops[(K, cal)]
        t0 = time.perf_counter()
        runs = [one_run(design, int(n), r, kinds) for r in range(args.reps)]
        summ = summarise(runs, pop, kinds)
        summ.update(population_ece=pop, seconds=time.perf_counter() - t0)
        result["cells"][f"{design}/{n}"] = summ
        print(f"{design} n={n} ECE={pop:.4f} fits {summ['fit_statuses']} "
              f"refused {summ['refused']} ({summ['seconds']:.0f} s)", flush=True)
        for k in kinds:
            if k in summ:
                s = summ[k]
                print(f"   {k:17s} cover {s['coverage']:.3f} (ok-only {s['coverage_ok']}, "
                      f"ok {s['share_ok']:.2f}) lo>pop {s['low_above']:.2f} "
                      f"hi<pop {s['high_below']:.2f} width {s['mean_width']} "
                      f"outside-own {s['outside_own']:.2f}", flush=True)
        write_result(f"coverage_nc_ece_{args.tag}", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
