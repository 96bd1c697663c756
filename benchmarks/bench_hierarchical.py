"""Benchmark: hierarchical Dawid–Skene NUTS against plain Dawid–Skene NUTS on CIFAR-10N.

What is compared
----------------
Two public fits with the same chains, warmup, draws and seed, each timed as a whole
(MAP-EM start, pattern collapsing, NUTS, relabelling, Rao-Blackwellised posteriors,
diagnostics):

* ``nc.annotators.HierarchicalDawidSkene(n_classes=10).fit(ann, ...)``: the confusion
  rows partially pooled around population log-odds (rater's priors,
  :mod:`noisycal.models.hierarchical`);
* ``nc.DawidSkene(n_classes=10).fit(ann, method="nuts", ...)``: one Dirichlet row per
  annotator and class (Stan User's Guide priors).

The ratio is hierarchical time / Dawid–Skene time; the goal is at most 3. Each fit runs
twice, interleaved (DS, hierarchical, DS, hierarchical): "cold" includes compilation,
"warm" reuses the compiled sampler (same model and data shapes). The two models have
different posteriors, so agreement is not checked; the script reports each fit's
status, largest R-hat, smallest bulk ESS and divergences, and the largest difference
between the two posterior-mean channels.

Data: the three CIFAR-10N labels of the 5,000 DenseNet-40 validation images, the data
of ``bench_nuts_patterns.py`` (its loader, with its simulated stand-in when the shared
data are absent).

::

    python benchmarks/bench_hierarchical.py                 # 4 x (500 + 500)
    python benchmarks/bench_hierarchical.py --quick         # 2 x (100 + 100)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import jax

import noisycal as nc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _output import add_publish_argument, write_result  # noqa: E402
from bench_nuts_patterns import K, load  # noqa: E402

TARGET_RATIO = 3.0


def timed_fit(kind: str, ann: nc.Annotations, args: argparse.Namespace) -> tuple[float, dict]:
    """Seconds of one public fit and its summary."""
    kw = dict(method=nc.engines.NUTS(num_chains=args.num_chains, num_warmup=args.num_warmup,
                                     num_samples=args.num_samples), seed=args.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        if kind == "hierarchical":
            fit = nc.annotators.HierarchicalDawidSkene(n_classes=K).fit(ann, **kw)
        else:
            fit = nc.DawidSkene(n_classes=K).fit(ann, **kw)
        seconds = time.perf_counter() - t0
    steps = fit.details["sample_stats"]["num_steps"]
    return seconds, {"seconds": seconds, "status": fit.status, "message": fit.message,
                     "max_rhat": float(fit.details["max_rhat"]),
                     "min_ess_bulk": float(fit.details["min_ess_bulk"]),
                     "num_divergences": int(fit.details["num_divergences"]),
                     "mean_leapfrog_steps": float(np.mean(steps)),
                     "confusion": np.asarray(fit.confusion),
                     "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--num-chains", type=int, default=4)
    ap.add_argument("--num-warmup", type=int, default=500)
    ap.add_argument("--num-samples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="2 chains x (100 + 100)")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.num_chains, args.num_warmup, args.num_samples = 2, 100, 100
    print(f"bench_hierarchical: {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; jax {jax.__version__}")
    labels, source = load(5000, args.seed)
    ann = nc.Annotations.from_wide(labels, classes=np.arange(K))
    print(f"data: {source}, {ann.n_items} items, {ann.n_ratings} ratings; "
          f"{args.num_chains} chains x ({args.num_warmup} + {args.num_samples})")
    runs: dict[str, dict] = {}
    for phase in ("cold", "warm"):
        for kind in ("dawid_skene", "hierarchical"):
            sec, out = timed_fit(kind, ann, args)
            runs[f"{kind}_{phase}"] = out
            print(f"{kind:>13} {phase}: {sec:8.2f} s  status {out['status']}, max R-hat "
                  f"{out['max_rhat']:.3f}, min ESS {out['min_ess_bulk']:.0f}, "
                  f"divergences {out['num_divergences']}, mean leapfrog steps "
                  f"{out['mean_leapfrog_steps']:.1f}")
    ratio = {p: runs[f"hierarchical_{p}"]["seconds"] / runs[f"dawid_skene_{p}"]["seconds"]
             for p in ("cold", "warm")}
    diff = float(np.max(np.abs(runs["hierarchical_warm"]["confusion"]
                               - runs["dawid_skene_warm"]["confusion"])))
    print(f"ratio hierarchical / DS: cold {ratio['cold']:.2f}x, warm {ratio['warm']:.2f}x "
          f"(goal <= {TARGET_RATIO:g}x); max |mean channel difference| {diff:.4f}")
    res = {"source": source, "n_items": ann.n_items, "n_ratings": ann.n_ratings,
           "num_chains": args.num_chains, "num_warmup": args.num_warmup,
           "num_samples": args.num_samples, "seed": args.seed,
           "load_average": list(os.getloadavg()), "ratio": ratio,
           "max_mean_channel_difference": diff,
           "runs": {k: {kk: vv for kk, vv in v.items() if kk != "confusion"}
                    for k, v in runs.items()}}
    write_result("bench_hierarchical", res, publish=args.publish)
    return res


if __name__ == "__main__":
    main()
