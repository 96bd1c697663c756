"""Does plan_annotations predict the NC-ECE interval width that its chosen budget reaches?

For each design, a pilot (``PILOT_ITEMS`` items, each rated by ``PILOT_RATINGS`` of
``len(ACCURACIES)`` simulated annotators) is fitted by Dawid–Skene EM; the planner gets
that fit (its channels), the classifier's probabilities on a pool of items and the pool's
true class probabilities, plans over the grid and picks the cheapest budget whose median
width reaches ``WIDTH`` and whose simulated analyses were all ok (``max_share_not_ok=0``,
the default). The plan is then checked by an independent simulation at that
budget with the true channels and other seeds: the planned median width should lie within
20% of the achieved one.

    python benchmarks/plan_annotations_validation.py --publish
    python benchmarks/plan_annotations_validation.py --designs K3/calibrated --plan-sims 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py

import noisycal as nc
from noisycal.workflows.planning import _simulate_once

ACCURACIES = (0.85, 0.8, 0.75, 0.7)
PILOT_ITEMS, PILOT_RATINGS = 300, 3
POOL = 3000
GRID_ITEMS, GRID_RATINGS = (500, 1000, 2000), (2, 3)
WIDTH = 0.05
DESIGNS = {"K3/calibrated": (3, 1.0), "K3/overconfident": (3, 0.6),
           "K10/overconfident": (10, 0.6)}


def channels(K: int) -> np.ndarray:
    """Confusion matrices with the given accuracies, errors spread evenly."""
    return np.stack([np.full((K, K), (1 - a) / (K - 1)) + (a - (1 - a) / (K - 1)) * np.eye(K)
                     for a in ACCURACIES])


def design(name: str, plan_sims: int, check_sims: int, seed: int) -> dict:
    K, temperature = DESIGNS[name]
    sim = nc.simulate.classifier(POOL, K, temperature=temperature, seed=seed)
    C = channels(K)
    rng = np.random.default_rng(seed + 1)
    idx = rng.integers(0, POOL, PILOT_ITEMS)
    y = np.array([rng.choice(K, p=q) for q in sim.true_probs[idx]])
    who = np.argsort(rng.random((PILOT_ITEMS, len(ACCURACIES))), 1)[:, :PILOT_RATINGS].ravel()
    item = np.repeat(np.arange(PILOT_ITEMS), PILOT_RATINGS)
    label = np.array([rng.choice(K, p=C[j, y[i]]) for i, j in zip(item, who, strict=True)])
    pilot = nc.Annotations.from_arrays(item, who, label, classes=np.arange(K))
    fit = nc.annotators.DawidSkene().fit(pilot, seed=seed)
    t0 = time.perf_counter()
    plan = nc.workflows.plan_annotations(
        sim.probs, fit, n_items=GRID_ITEMS, ratings_per_item=GRID_RATINGS, width=WIDTH,
        truth=sim.true_probs, n_sims=plan_sims, seed=seed)
    plan_s = time.perf_counter() - t0
    choice = plan.smallest_budget()
    out = {"K": K, "temperature": temperature, "pilot_status": fit.status,
           "pilot_max_channel_error": float(np.abs(np.asarray(fit.confusion) - C).max()),
           "population": plan.population, "plan_s": plan_s,
           "table": plan.to_frame().to_dict("list"), "choice_status": choice.status,
           "choice_statuses": list(choice.statuses), "choice_message": choice.message,
           "n_items": choice.n_items, "ratings_per_item": choice.ratings_per_item,
           "planned_median": choice.median_width}
    if choice.n_items is None:
        return out
    t0 = time.perf_counter()
    seeds = np.random.default_rng(seed + 10_000).integers(0, 2**31 - 1, check_sims)
    res = [_simulate_once(sim.probs, sim.true_probs, C, choice.n_items,
                          choice.ratings_per_item, 15, 0.9, "auto", int(s)) for s in seeds]
    widths = np.array([hi - lo for lo, hi, _ in res])
    out.update(check_s=time.perf_counter() - t0, check_sims=check_sims,
               achieved_median=float(np.median(widths)),
               achieved_widths=widths.tolist(),
               ratio=float(choice.median_width / np.median(widths)),
               check_share_not_ok=float(np.mean([s != "ok" for *_, s in res])),
               check_coverage=float(np.mean([lo <= plan.population <= hi
                                             for lo, hi, _ in res])))
    out["within_20pct"] = bool(abs(out["ratio"] - 1) <= 0.2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    ap.add_argument("--plan-sims", type=int, default=4)
    ap.add_argument("--check-sims", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    add_publish_argument(ap)
    args = ap.parse_args()
    cells = {}
    for name in args.designs:
        cells[name] = design(name, args.plan_sims, args.check_sims, args.seed)
        print(name, {k: v for k, v in cells[name].items() if k != "table"}, flush=True)
    result = {"width": WIDTH, "level": 0.9, "n_bins": 15, "accuracies": list(ACCURACIES),
              "pilot_items": PILOT_ITEMS, "pilot_ratings": PILOT_RATINGS, "pool": POOL,
              "grid_items": list(GRID_ITEMS), "grid_ratings": list(GRID_RATINGS),
              "plan_sims": args.plan_sims, "check_sims": args.check_sims, "designs": cells}
    write_result("plan_annotations_validation", result, publish=args.publish)


if __name__ == "__main__":
    main()
