"""Finite-sample NC-ECE bounds: how often they hold and how wide they are (not a timing).

Each cell draws ``--reps`` seeded replications and records, for the three sampling
inequalities of :func:`noisycal.metrics.nc.bound.nc_ece_bound` ('hoeffding',
'bernstein' and the default 'auto', the smaller of the two at eta / 2), whether
``[max(0, NC-ECE - rad), NC-ECE + rad]`` contains the population binned ECE, and the
mean unclipped width 2 rad against the oracle width: the central ``level`` range of the
NC-ECE over the same replications with the true channels.

* K = 2: the Gaussian toy of "Noisy-Label Calibration with Multiple Unreliable Labels"
  (shifted truth, three annotators with its published channels); positive-class NC-ECE.
* K = 4: ``nc.simulate.classifier`` (temperature 0.6, overconfident) with labels drawn
  from its true class probabilities and three Dawid-Skene annotators whose confusion
  matrices have diagonals 0.85, 0.75, 0.65 and seeded Dirichlet off-diagonal rows;
  top-label and classwise NC-ECE.

Channels: 'true' (the true channels given, equal weights; Theorem 1 and its K-class
form, channel term 0) and 'EM' (``nc.DawidSkene(K).fit`` on the evaluated items, 'iv'
weights; Proposition 1 and its K-class form, oracle channel term from the true channels;
the column 'binned_only' is the coverage of the default inequality without the channel
term). 10 equal-width bins, level 0.9.

Usage::

    python benchmarks/bound_study.py --reps 200 --K 2
    python benchmarks/bound_study.py --reps 100 --K 4 --n 500 --out bound_study_k4_500

Prints a Markdown table (each row as soon as its cell is done) and writes
``benchmarks/output/<out>.json``. Each K = 4 EM fit compiles anew when its number of
distinct rating patterns is new (seconds each), so the K = 4 cells are run one n at a
time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

import noisycal as nc
from noisycal.metrics.binned.bins import equal_width_bins
from noisycal.metrics.nc.bound import nc_ece_bound
from noisycal.metrics.nc.intervals import nc_ece_items

A_TOY, B_TOY = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B
KINDS = ("hoeffding", "bernstein", "auto")


def k4_channels(K: int = 4) -> np.ndarray:
    """Three K x K confusion matrices: diagonals .85, .75, .65, Dirichlet(2) off-diagonal."""
    rng = np.random.default_rng(7)
    out = []
    for d in (0.85, 0.75, 0.65):
        C = np.zeros((K, K))
        for y in range(K):
            off = rng.dirichlet(2.0 * np.ones(K - 1))
            C[y, np.arange(K) != y] = (1 - d) * off
            C[y, y] = d
        out.append(C)
    return np.stack(out)


def _group_ece(conf: np.ndarray, truth: np.ndarray, M: int) -> float:
    b = equal_width_bins(conf, M)
    return float(np.abs(np.bincount(b, weights=truth - conf, minlength=M)).sum() / conf.size)


def populations(M: int, big: int) -> dict:
    """Population binned ECEs by Monte Carlo on ``big`` draws."""
    toy = nc.simulate.gaussian_toy(big, truth="shifted", seed=999)
    sim = nc.simulate.classifier(big, 4, seed=999)
    p, q = sim.probs, sim.true_probs
    k = np.argmax(p, axis=1)
    top = _group_ece(p.max(axis=1), q[np.arange(big), k], M)
    cw = float(np.mean([_group_ece(p[:, c], q[:, c], M) for c in range(4)]))
    return {"positive_class": _group_ece(toy.z, toy.m, M), "top_label": top, "classwise": cw}


def _bounds(value: float, target: object, probs: np.ndarray, kind: str, M: int,
            level: float, **kw: object) -> dict:
    items = nc_ece_items(probs, kind, M)
    counts = np.stack([np.bincount(b, minlength=M) for b in items[1]])
    return {bk: nc_ece_bound(value, target, counts, level, bound_kind=bk, items=items,
                             **kw) for bk in KINDS}


def replicate(K: int, n: int, r: int, M: int, level: float, C4: np.ndarray) -> dict:
    """One replication: {(kind, channels): {value, bounds...}} (None for a failed fit)."""
    if K == 2:
        t = nc.simulate.gaussian_toy(n, truth="shifted", seed=r)
        probs, A = np.c_[1 - t.z, t.z], t.annotations
        true_kw = dict(a=A_TOY, b=B_TOY)
        truth = (A_TOY, B_TOY)
        kinds = ("positive_class",)
    else:
        sim = nc.simulate.classifier(n, K, seed=r)
        rng = np.random.default_rng(10_000 + r)
        cum = np.cumsum(C4[:, sim.labels], axis=2)  # (J, n, K)
        A = (rng.random((C4.shape[0], n))[:, :, None] >= cum).sum(axis=2).clip(0, K - 1).T
        probs = sim.probs
        true_kw, truth = dict(confusion=C4), C4
        kinds = ("top_label", "classwise")
    ann = nc.Annotations.from_wide(A, classes=np.arange(K))
    fit = nc.DawidSkene(K).fit(ann, seed=r)
    targets = {"true": nc.targets.corrected(A.astype(float), weights="equal", **true_kw)}
    if fit.status == "ok":
        targets["EM"] = nc.targets.corrected(ann, fit)
    out = {}
    for kind in kinds:
        for ch, T in targets.items():
            x = probs[:, 1] if K == 2 else probs
            value = float(nc.ece(x, T, n_bins=M, kind=kind, interval=None))
            res = {"value": value}
            if ch == "true":
                res.update(_bounds(value, T, probs, kind, M, level))
            else:
                res.update(_bounds(value, T, probs, kind, M, level, mode="oracle",
                                   true_channels=truth))
                res["binned_only"] = _bounds(value, T, probs, kind, M, level)["auto"]
            out[(kind, ch)] = res
    return out


def summarise(reps: list, pop: dict, level: float) -> list:
    rows = []
    keys = sorted({k for rep in reps for k in rep})
    for kind, ch in keys:
        pe = pop[kind]
        got = [rep[(kind, ch)] for rep in reps if (kind, ch) in rep]
        vals_true = np.array([rep[(kind, "true")]["value"] for rep in reps])
        lo, hi = np.quantile(vals_true, [(1 - level) / 2, (1 + level) / 2])
        row = {"kind": kind, "channels": ch, "reps": len(got), "ece_b": pe,
               "oracle_width": float(hi - lo)}
        for bk in KINDS + (("binned_only",) if ch == "EM" else ()):
            ci = [g[bk][0] for g in got]
            rad = [g[bk][1]["sampling_radius"] + g[bk][1]["channel_term"] for g in got]
            row[f"{bk}_cover"] = float(np.mean([a <= pe <= b for a, b in ci]))
            row[f"{bk}_width"] = float(np.mean(rad) * 2)
            row[f"{bk}_ratio"] = row[f"{bk}_width"] / row["oracle_width"]
        worst = [abs(g["value"] - pe) / (g["auto"][1]["sampling_radius"]
                                         + g["auto"][1]["channel_term"]) for g in got]
        row["auto_worst_share"] = float(np.max(worst))  # largest |NC - ECE_B| / radius
        row["auto_bernstein_share"] = float(np.mean(
            [g["auto"][1]["inequality"] == "bernstein" for g in got]))
        row["statement"] = got[0]["auto"][1]["statement"]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--n", type=int, nargs="+", default=[500, 2000, 10_000])
    ap.add_argument("--K", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--n-bins", type=int, default=10)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--big", type=int, default=2_000_000, help="Monte Carlo draws of ECE_B")
    ap.add_argument("--out", default="bound_study", help="name of the JSON result")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pop = populations(args.n_bins, args.big)
    C4 = k4_channels()
    print(f"population binned ECE (M = {args.n_bins}): "
          + ", ".join(f"{k} {v:.4f}" for k, v in pop.items()))
    print("| K | ECE | channels | n | reps | oracle width | Hoeffding: cover, width x oracle "
          "| Bernstein | auto (default) | auto picks Bernstein | largest error / auto radius "
          "| EM binned_only cover |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    table, failed = [], {}
    for K in args.K:
        for n in args.n:
            reps = [replicate(K, n, r, args.n_bins, args.level, C4) for r in range(args.reps)]
            failed[f"K={K}, n={n}"] = sum(not any(c == "EM" for _, c in rep) for rep in reps)
            for r in summarise(reps, pop, args.level):
                table.append({"K": K, "n": n, **r})
                cells = [f"{r[f'{bk}_cover']:.3f}, {r[f'{bk}_ratio']:.1f}x" for bk in KINDS]
                bo = f"{r['binned_only_cover']:.3f}" if r["channels"] == "EM" else "-"
                print(f"| {K} | {r['kind']} | {r['channels']} | {n} | {r['reps']} | "
                      f"{r['oracle_width']:.4f} | " + " | ".join(cells)
                      + f" | {r['auto_bernstein_share']:.2f} | {r['auto_worst_share']:.2f} "
                      f"| {bo} |", flush=True)
            print(f"(K = {K}, n = {n} done at {time.perf_counter() - t0:.0f} s; "
                  f"{failed[f'K={K}, n={n}']} EM fits not ok)", flush=True)
    result = {"args": vars(args), "population": pop, "failed_fits": failed,
              "table": table, "seconds": time.perf_counter() - t0}
    write_result(args.out, result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
