"""Coverage study: do 90% intervals on the binned ECE cover the population ECE?

Scenarios (population binned ECE with the bins held fixed, known by quadrature or by a
10^6-draw Monte Carlo of the exact conditional class probabilities):

* ``binary/*``: positive-class ECE, 10 equal-width bins; scores ``p ~ Beta(0.6, 0.6)``
  (U-shaped) and ``P(Y = 1 | p) = expit(slope * logit(p))``
  (:func:`noisycal.simulate.binary_scores`), the slope solved for each population ECE.
  Targets: ``hard`` (the label), ``soft`` (the share of 3 annotator votes drawn from the
  same probability), ``corrected`` (three annotators with known channels
  (a, b) = (0.10, 0.80), (0.20, 0.90), (0.15, 0.75), the noise-corrected target of
  "Noisy-Label Calibration with Multiple Unreliable Labels" with the true channels and
  equal weights).
* ``binary/hard/smooth``: the smooth ECE of Błasiok & Nakkiran (2023) at the fixed
  bandwidth 0.05 on the binary/hard data (population value by a 4e5-draw Monte Carlo
  against the exact conditional probability), n <= 2000, largest cell 0.08 (slope
  bracket).
* ``10-class/*``: :func:`noisycal.simulate.classifier` with 10 classes, 15 bins, the
  temperature solved for each population ECE. ``top/hard``, ``top/soft`` (share of 5
  votes) and ``classwise/hard`` (whose ECE saturates near 0.098 as the temperature goes
  to 0, so its largest cell is 0.08 instead of 0.1).

Methods: ``inversion`` (the default interval of :func:`noisycal.ece`, with its
median-unbiased estimate) everywhere; ``percentile`` (the item bootstrap) in the hard-label
scenarios for comparison. Each cell reports coverage with its Monte-Carlo standard error
sqrt(c(1 - c)/reps), the share of intervals that start at 0, the mean width, and the mean
plug-in and median-unbiased estimates.

Usage::

    python benchmarks/coverage_study.py                  # full grid, 200 replications
    python benchmarks/coverage_study.py --quick          # 60 replications, n <= 2000
    python benchmarks/coverage_study.py --no-percentile --reps 100 \
        --cells 10-class/classwise/hard:0.08:500,binary/hard:0.05:500   # chosen cells

Writes ``benchmarks/output/coverage_study.json`` and prints a markdown table. A reduced
version runs in ``tests/intervals/test_inversion_coverage_binary.py`` and
``tests/intervals/test_inversion_coverage_kclass.py``.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.special import expit, logit, softmax

import noisycal as nc

ECES = (0.0, 0.005, 0.015, 0.05, 0.1)
NS = (500, 2000, 20000)
BETA = (0.6, 0.6)
CHANNELS = (np.array([0.10, 0.20, 0.15]), np.array([0.80, 0.90, 0.75]))
#: Fixed bandwidth of the smooth-ECE scenario (a fixed estimand; the fixed-point
#: bandwidth depends on the sample).
SMOOTH_BANDWIDTH = 0.05


@dataclass
class Scenario:
    name: str
    n_bins: int
    kind: str
    population: Callable[[float], float]   # parameter -> population ECE
    bracket: tuple[float, float]           # parameter range (calibrated at the right end)
    draw: Callable[[int, float, int], tuple[np.ndarray, object]]
    eces: tuple = ECES
    smooth: bool = False          # the smooth ECE at SMOOTH_BANDWIDTH instead of binned


# ----------------------------------------------------------------------------- binary


def _binary_pop(slope: float) -> float:
    return nc.simulate.population_binned_ece(10, slope=slope, a=BETA[0], b=BETA[1])


def _binary_smooth_pop(slope: float) -> float:
    """Population smooth ECE at SMOOTH_BANDWIDTH: the smooth ECE of 4e5 scores against
    their exact conditional probability (no label noise; Monte-Carlo error ~1e-4)."""
    p = _BIG_P.get("p")
    if p is None:
        p = _BIG_P["p"] = np.random.default_rng(99).beta(BETA[0], BETA[1], 400_000).clip(
            1e-12, 1 - 1e-12)
    q = expit(slope * logit(p))
    return float(nc.smooth_ece(p, q, bandwidth=SMOOTH_BANDWIDTH, interval=None))


_BIG_P: dict = {}


def _binary_draw(target: str) -> Callable:
    def draw(n: int, slope: float, seed: int) -> tuple[np.ndarray, object]:
        s = nc.simulate.binary_scores(n, slope=slope, a=BETA[0], b=BETA[1], seed=seed)
        rng = np.random.default_rng(10_000 + seed)
        if target == "hard":
            return s.p, s.y
        if target == "soft":
            return s.p, (rng.random((n, 3)) < s.true_prob[:, None]).mean(axis=1)
        a, b = CHANNELS
        ratings = (rng.random((n, 3)) < np.where(s.y[:, None] == 1, b, a)).astype(int)
        return s.p, nc.targets.corrected(ratings, a=a, b=b, weights="equal")
    return draw


# ----------------------------------------------------------------------------- 10-class


class _KClassPopulation:
    """Population top-label / classwise ECE of simulate.classifier by a 10^6-draw Monte Carlo.

    The classifier's argmax and the truth softmax(z) do not depend on the temperature, so
    one draw of z serves every temperature; the expectation over labels is exact.
    """

    def __init__(self, n_classes: int = 10, n_bins: int = 15, size: int = 1_000_000):
        sim = nc.simulate.classifier(size, n_classes, temperature=1.0, n_annotators=1,
                                     seed=20_261_201)
        self.z, self.q, self.n_bins = sim.logits, sim.true_probs, n_bins
        for a in (self.z, self.q):   # one population is shared (_kclass_population)
            a.setflags(write=False)

    def __call__(self, temperature: float, kind: str) -> float:
        p = softmax(self.z / temperature, axis=1)
        B = self.n_bins
        if kind == "top_label":
            pred = np.argmax(p, axis=1)
            conf = p[np.arange(p.shape[0]), pred]
            gap = self.q[np.arange(p.shape[0]), pred] - conf
            b = np.minimum((conf * B).astype(int), B - 1)
            return float(np.abs(np.bincount(b, weights=gap, minlength=B)).sum() / p.shape[0])
        # every class's bins in one pass over the (n, K) table: cell k * B + bin gathers
        # class k's items in item order, so each cell's sum is the per-class loop's
        K = p.shape[1]
        cells = np.minimum((p * B).astype(int), B - 1) + np.arange(K) * B
        sums = np.bincount(cells.ravel(), weights=(self.q - p).ravel(),
                           minlength=K * B).reshape(K, B)
        total = 0.0
        for k in range(K):
            total += np.abs(sums[k]).sum()
        return float(total / (p.shape[0] * p.shape[1]))


@functools.lru_cache(maxsize=1)
def _kclass_population() -> _KClassPopulation:
    """The one 10^6-draw population (about 2 s to draw), shared by every call of
    :func:`scenarios` in a process."""
    return _KClassPopulation()


def _kclass_draw(target: str) -> Callable:
    def draw(n: int, temperature: float, seed: int) -> tuple[np.ndarray, object]:
        sim = nc.simulate.classifier(n, 10, temperature=temperature, n_annotators=5,
                                     seed=seed)
        return sim.probs, sim.labels if target == "hard" else sim.counts / 5.0
    return draw


def scenarios(binary_only: bool = False) -> list[Scenario]:
    out = [Scenario(f"binary/{t}", 10, "positive_class", _binary_pop, (0.2, 1.0),
                    _binary_draw(t)) for t in ("hard", "soft", "corrected")]
    out.append(Scenario("binary/hard/smooth", 0, "positive_class", _binary_smooth_pop,
                        (0.2, 1.0), _binary_draw("hard"), ECES[:-1] + (0.08,), smooth=True))
    if binary_only:
        return out
    kpop = _kclass_population()
    for name, kind, target in (("10-class/top/hard", "top_label", "hard"),
                               ("10-class/top/soft", "top_label", "soft"),
                               ("10-class/classwise/hard", "classwise", "hard")):
        # The classwise ECE of this model saturates near 0.098 as the temperature -> 0,
        # so its largest cell is 0.08.
        eces = ECES if kind == "top_label" else ECES[:-1] + (0.08,)
        out.append(Scenario(name, 15, kind, lambda t, k=kind: kpop(t, k), (0.05, 1.0),
                            _kclass_draw(target), eces))
    return out


def solve_parameter(sc: Scenario, ece: float) -> tuple[float, float]:
    """The parameter giving population ECE ``ece`` (calibrated: the bracket's right end)."""
    lo, hi = sc.bracket
    if ece == 0.0:
        return hi, sc.population(hi)
    par = optimize.brentq(lambda x: sc.population(x) - ece, lo, hi, xtol=1e-10)
    return par, sc.population(par)


def run_cell(sc: Scenario, n: int, par: float, pop: float, reps: int, methods: tuple,
             n_boot: int) -> list[dict]:
    rows = {m: {"cover": 0, "zero": 0, "width": [], "value": [], "plugin": [], "hits": [],
                "low_above": 0, "high_below": 0} for m in methods}
    for r in range(reps):
        probs, target = sc.draw(n, par, r)
        for m in methods:
            interval = (nc.intervals.Inversion(n_boot=n_boot) if m == "inversion"
                        else nc.intervals.Bootstrap(n_boot=n_boot, method=m))
            if sc.smooth:
                e = nc.smooth_ece(probs, target, bandwidth=SMOOTH_BANDWIDTH, kind=sc.kind,
                                  interval=interval, seed=r)
            else:
                e = nc.ece(probs, target, n_bins=sc.n_bins, kind=sc.kind, interval=interval,
                           seed=r)
            row = rows[m]
            row["cover"] += e.low <= pop <= e.high
            row["hits"].append(int(e.low <= pop <= e.high))
            row["low_above"] += e.low > pop
            row["high_below"] += e.high < pop
            row["zero"] += e.low == 0.0
            row["width"].append(e.high - e.low)
            row["value"].append(e.value)
            row["plugin"].append(e.details.get("plugin", e.value))
    out = []
    for m, row in rows.items():
        c = row["cover"] / reps
        out.append({"scenario": sc.name, "n": n, "population_ece": pop, "method": m,
                    "coverage": c, "mc_se": float(np.sqrt(c * (1 - c) / reps)),
                    "starts_at_zero": row["zero"] / reps,
                    "mean_width": float(np.mean(row["width"])),
                    "mean_value": float(np.mean(row["value"])),
                    "mean_plugin": float(np.mean(row["plugin"])), "reps": reps,
                    "low_above_truth": row["low_above"] / reps,
                    "high_below_truth": row["high_below"] / reps,
                    "covered_by_seed": row["hits"]})
    return out


def _parse_cells(spec: str) -> list[tuple[str, float, int, int | None]]:
    """``'scenario:ece:n[:reps],...'`` -> [(scenario, ece, n, reps or None), ...] in order."""
    out = []
    for item in (c for c in spec.split(",") if c):
        name, rest = item.split(":", 1)
        parts = rest.split(":")
        out.append((name, float(parts[0]), int(parts[1]),
                    int(parts[2]) if len(parts) > 2 else None))
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="60 replications, n <= 2000")
    ap.add_argument("--no-percentile", action="store_true",
                    help="the default interval only (the percentile bootstrap is slow)")
    ap.add_argument("--only", default="",
                    help="comma-separated: run scenarios whose name contains one of these")
    ap.add_argument("--cells", default="",
                    help="comma-separated scenario:ece:n[:reps] (e.g. "
                         "10-class/classwise/hard:0.08:500:200), run in this order instead "
                         "of the grid; reps defaults to --reps")
    ap.add_argument("--tag", default="", help="name of the json output (default from --only)")
    _publish_argument(ap)
    args = ap.parse_args(argv)
    reps = 60 if args.quick else args.reps
    ns = tuple(n for n in NS if n <= 2000) if args.quick else NS
    wanted = [w for w in args.only.split(",") if w] or [""]
    cells = _parse_cells(args.cells)
    if cells:
        wanted = sorted({c[0] for c in cells})
    tag = args.tag or "_".join(w.replace("/", "-") for w in wanted if w) or "all"
    all_sc = {sc.name: sc for sc in scenarios(
        binary_only=all(w.startswith("binary") for w in wanted))}
    if cells:
        missing = [c[0] for c in cells if c[0] not in all_sc]
        if missing:
            raise SystemExit(f"unknown scenario(s): {missing}")
        plan = [(all_sc[name], ece, n, r or reps) for name, ece, n, r in cells]
    else:
        plan = []
        for sc in all_sc.values():
            if not any(w in sc.name for w in wanted):
                continue
            ns_sc = tuple(n for n in ns if n <= 2000) if sc.smooth else ns
            plan += [(sc, ece, n, reps) for ece in sc.eces for n in ns_sc]
    results = []
    t0 = time.perf_counter()
    print("| scenario | n | population ECE | method | coverage (MC s.e.) | starts at 0 "
          "| mean width | mean value | mean plug-in | seconds | reps | lower end above truth "
          "| upper end below truth |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    solved: dict = {}
    for sc, ece, n, reps_cell in plan:
        methods = ("inversion", "percentile") if sc.name.endswith("hard") \
            and not args.no_percentile else ("inversion",)
        if (sc.name, ece) not in solved:
            solved[sc.name, ece] = solve_parameter(sc, ece)
        par, pop = solved[sc.name, ece]
        t1 = time.perf_counter()
        for row in run_cell(sc, n, par, pop, reps_cell, methods, args.n_boot):
            row["seconds"] = time.perf_counter() - t1
            results.append(row)
            print(f"| {row['scenario']} | {n} | {pop:.4f} | {row['method']} | "
                  f"{row['coverage']:.3f} ({row['mc_se']:.3f}) | "
                  f"{row['starts_at_zero']:.2f} | {row['mean_width']:.4f} | "
                  f"{row['mean_value']:.4f} | {row['mean_plugin']:.4f} | "
                  f"{row['seconds']:.0f} | {row['reps']} | {row['low_above_truth']:.3f} | "
                  f"{row['high_below_truth']:.3f} |", flush=True)
        # after every cell: a partial run keeps its rows
        _write(tag, results, reps, getattr(args, "publish", False))
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return results


def _publish_argument(ap: argparse.ArgumentParser) -> None:
    try:
        from _output import add_publish_argument  # benchmarks/_output.py (run as a script)
    except ImportError:  # imported as a module by the tests
        return
    add_publish_argument(ap)


def _write(tag: str, results: list, reps: int, publish: bool = False) -> None:
    try:
        from _output import write_result  # benchmarks/_output.py (run as a script)
    except ImportError:
        return
    write_result(f"coverage_study_{tag}", {"rows": results, "reps": reps}, publish=publish)


if __name__ == "__main__":
    main()
