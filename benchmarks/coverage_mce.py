"""Coverage study: do 90% intervals on the MCE cover the population MCE?

The estimand of :func:`noisycal.mce` (:mod:`noisycal.metrics.mce`): the maximum over the
bins that hold at least ``min_count`` (20) items of the sample of the bin's population gap
|E[target - confidence | bin]|. Which bins enter depends on the sample, so the population
value is computed per replication, over that replication's bins, from per-bin population
gaps:

* ``binary/*``: the designs of ``benchmarks/coverage_study.py`` (scores Beta(0.6, 0.6),
  ``P(Y = 1 | p) = expit(slope * logit(p))``, 10 equal-width bins, positive-class MCE;
  targets ``hard`` and ``soft`` (share of 3 votes)); per-bin gaps by quadrature,
  ``E[q(p) - p | bin] = int_bin (q - p) f / int_bin f``.
* ``10-class/top/*``: :func:`noisycal.simulate.classifier` with 10 classes, 15 bins,
  top-label MCE, targets ``hard`` and ``soft`` (share of 5 votes); per-bin gaps by a
  10^6-draw Monte Carlo of the exact conditional class probabilities (the draws of
  ``coverage_study._KClassPopulation``).

Cells are named by the population binned ECE (the slope or temperature solved by
``coverage_study.solve_parameter``); the table reports the mean population MCE over the
replications. Methods: ``simultaneous`` (the default interval) everywhere; ``percentile``
(the item bootstrap of the same estimand) in the hard-label scenarios for comparison.

Usage::

    python benchmarks/coverage_mce.py                       # full grid, 200 replications
    python benchmarks/coverage_mce.py --only binary --reps 100
    python benchmarks/coverage_mce.py --cells binary/soft:0:500,10-class/top/hard:0.1:2000

Writes ``benchmarks/output/coverage_mce_<tag>.json`` and prints a markdown table. A
reduced version runs in ``tests/metrics/test_mce.py``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)
from coverage_study import (
    BETA,
    NS,
    Scenario,
    _parse_cells,
    scenarios,
    solve_parameter,
)
from scipy import integrate
from scipy import stats as sps
from scipy.special import expit, logit, softmax

import noisycal as nc

ECES = (0.0, 0.015, 0.05, 0.1)
NAMES = ("binary/hard", "binary/soft", "10-class/top/hard", "10-class/top/soft")


def binary_bin_gaps(slope: float, n_bins: int = 10) -> np.ndarray:
    """Population gap E[q(p) - p | bin] of each equal-width bin, by quadrature."""
    dens = sps.beta(*BETA).pdf
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    out = np.empty(n_bins)
    for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        num = integrate.quad(lambda p: (expit(slope * logit(p)) - p) * dens(p), lo, hi,
                             limit=200, epsabs=1e-13, epsrel=1e-12)[0]
        out[b] = num / integrate.quad(dens, lo, hi, limit=200, epsabs=1e-13)[0]
    return out


def kclass_bin_gaps(kpop: object, temperature: float, n_bins: int = 15) -> np.ndarray:
    """Population top-label gap of each bin from the 10^6 draws of ``kpop``."""
    p = softmax(kpop.z / temperature, axis=1)
    rows = np.arange(p.shape[0])
    pred = np.argmax(p, axis=1)
    conf = p[rows, pred]
    b = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    count = np.bincount(b, minlength=n_bins)
    gap = np.bincount(b, weights=kpop.q[rows, pred] - conf, minlength=n_bins)
    return np.where(count > 0, gap / np.maximum(count, 1), np.nan)


def run_cell(sc: Scenario, n: int, par: float, gaps: np.ndarray, reps: int,
             methods: tuple, n_boot: int) -> list[dict]:
    rows = {m: {"hits": [], "theta": [], "width": [], "value": [], "low_above": 0,
                "high_below": 0, "outside": 0, "not_ok": 0, "in_mce": []} for m in methods}
    for r in range(reps):
        probs, target = sc.draw(n, par, r)
        for m in methods:
            interval = (nc.intervals.Simultaneous(n_boot=n_boot) if m == "simultaneous"
                        else nc.intervals.Bootstrap(n_boot=n_boot, method=m))
            with warnings.catch_warnings():  # counted by status below
                warnings.simplefilter("ignore", nc.NumericalWarning)
                e = nc.mce(probs, target, n_bins=sc.n_bins, kind=sc.kind, interval=interval,
                           seed=r)
            sel = e.bins["in_mce"].to_numpy()
            theta = float(np.max(np.abs(gaps[sel])))
            row = rows[m]
            row["not_ok"] += e.status not in ("ok", "estimate_outside_interval")
            row["outside"] += e.status == "estimate_outside_interval"
            row["hits"].append(int(e.low <= theta <= e.high))
            row["low_above"] += e.low > theta
            row["high_below"] += e.high < theta
            row["theta"].append(theta)
            row["width"].append(e.high - e.low)
            row["value"].append(e.value)
            row["in_mce"].append(int(sel.sum()))
    out = []
    for m, row in rows.items():
        c = float(np.mean(row["hits"]))
        out.append({"scenario": sc.name, "n": n, "method": m, "coverage": c,
                    "mc_se": float(np.sqrt(c * (1 - c) / reps)), "reps": reps,
                    "population_mce": float(np.mean(row["theta"])),
                    "mean_width": float(np.mean(row["width"])),
                    "mean_value": float(np.mean(row["value"])),
                    "low_above_truth": row["low_above"] / reps,
                    "high_below_truth": row["high_below"] / reps,
                    "estimate_outside": row["outside"] / reps,
                    "not_ok": row["not_ok"] / reps,
                    "mean_bins_in_mce": float(np.mean(row["in_mce"])),
                    "covered_by_seed": row["hits"]})
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--no-percentile", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated parts of scenario names")
    ap.add_argument("--cells", default="", help="scenario:ece:n[:reps],... in this order")
    ap.add_argument("--tag", default="")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    wanted = [w for w in args.only.split(",") if w] or [""]
    cells = _parse_cells(args.cells)
    names = [nm for nm in NAMES if any(w in nm for w in wanted)]
    if cells:
        names = sorted({c[0] for c in cells})
    all_sc = {sc.name: sc for sc in scenarios(
        binary_only=all(nm.startswith("binary") for nm in names))}
    kpop = None
    if any(nm.startswith("10-class") for nm in names):
        from coverage_study import _KClassPopulation
        kpop = _KClassPopulation()
    plan = ([(all_sc[nm], e, n, r or args.reps) for nm, e, n, r in cells] if cells else
            [(all_sc[nm], e, n, args.reps) for nm in names for e in ECES for n in NS])
    tag = args.tag or "_".join(w.replace("/", "-") for w in wanted if w) or "all"
    print("| scenario | n | population ECE | population MCE | method | coverage (MC s.e.) "
          "| lower end above truth | upper end below truth | mean width | mean value "
          "| bins in MCE | estimate outside | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    results, solved, t0 = [], {}, time.perf_counter()
    for sc, ece, n, reps in plan:
        if (sc.name, ece) not in solved:
            par, pop = solve_parameter(sc, ece)
            gaps = (binary_bin_gaps(par, sc.n_bins) if sc.name.startswith("binary")
                    else kclass_bin_gaps(kpop, par, sc.n_bins))
            solved[sc.name, ece] = par, pop, gaps
        par, pop, gaps = solved[sc.name, ece]
        methods = ("simultaneous", "percentile") if sc.name.endswith("hard") \
            and not args.no_percentile else ("simultaneous",)
        t1 = time.perf_counter()
        for row in run_cell(sc, n, par, gaps, reps, methods, args.n_boot):
            row.update(seconds=time.perf_counter() - t1, population_ece=pop)
            results.append(row)
            print(f"| {sc.name} | {n} | {pop:.4f} | {row['population_mce']:.4f} | "
                  f"{row['method']} | {row['coverage']:.3f} ({row['mc_se']:.3f}) | "
                  f"{row['low_above_truth']:.3f} | {row['high_below_truth']:.3f} | "
                  f"{row['mean_width']:.4f} | {row['mean_value']:.4f} | "
                  f"{row['mean_bins_in_mce']:.1f} | {row['estimate_outside']:.2f} | "
                  f"{row['seconds']:.0f} |", flush=True)
        write_result(f"coverage_mce_{tag}", {"rows": results, "reps": args.reps},
                     publish=args.publish)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return results


if __name__ == "__main__":
    main()
