"""Coverage study: 90% intervals on NC-ECE against the population binned ECE.

The Gaussian toy of "Noisy-Label Calibration with Multiple Unreliable Labels" with the
shifted truth curve (population binned ECE with 10 equal-width bins 0.0896, computed here
by Monte Carlo on 4e6 draws).
In each seeded replication the three annotators' channels are fitted by Dawid–Skene EM
and by NUTS (2 chains x (300 + 300), Stan priors), and three 90% intervals on the
NC-ECE are recorded:

* ``conditional``: bootstrap over items with the EM channels held fixed;
* ``refit``: bootstrap over items refitting the EM channels in every replicate
  (``refit_channels=True``);
* ``credible``: NUTS channel draws x Bayesian bootstrap of items.

Usage::

    python benchmarks/coverage_nc_ece.py --n 2000 --reps 100

Prints the coverage counts and mean widths and writes
``benchmarks/output/coverage_nc_ece_<n>.json``. Not a speed benchmark; it reproduces the
coverage figures quoted in the issue notes.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _output import write_result  # benchmarks/_output.py (run as a script)

import noisycal as nc
from noisycal.metrics.binning import equal_width_bins


def population_ece(n_bins: int = 10) -> float:
    big = nc.simulate.gaussian_toy(4_000_000, truth="shifted", seed=999)
    b = equal_width_bins(big.z, n_bins)
    return float(np.abs(np.bincount(b, weights=big.m - big.z, minlength=n_bins)).sum()
                 / big.z.size)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="items per replication")
    ap.add_argument("--reps", type=int, default=100, help="replications")
    ap.add_argument("--n-boot", type=int, default=300)
    args = ap.parse_args(argv)
    pop = population_ece()
    kinds = ("conditional", "refit", "credible")
    cover = dict.fromkeys(kinds, 0)
    width: dict = {k: [] for k in kinds}
    not_ok = 0
    t0 = time.perf_counter()
    for r in range(args.reps):
        t = nc.simulate.gaussian_toy(args.n, truth="shifted", seed=r)
        ann = nc.Annotations.from_wide(t.annotations, classes=[0, 1])
        em = nc.DawidSkene(2).fit(ann, seed=r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nc.ConvergenceWarning)
            nuts = nc.DawidSkene(2).fit(ann, method="nuts", num_chains=2, num_warmup=300,
                                        num_samples=300, progress_bar=False, seed=r,
                                        rhat_threshold=1.1)
        not_ok += nuts.status != "ok"
        U_em, U_nuts = nc.targets.corrected(ann, em), nc.targets.corrected(ann, nuts)
        kw = dict(n_bins=10, level=0.9, seed=r)
        est = {"conditional": nc.ece(t.z, U_em, n_boot=args.n_boot, **kw),
               "refit": nc.ece(t.z, U_em, n_boot=args.n_boot, refit_channels=True, **kw),
               "credible": nc.ece(t.z, U_nuts, interval="credible", **kw)}
        for k, e in est.items():
            cover[k] += bool(e.low <= pop <= e.high)
            width[k].append(e.high - e.low)
    result = {"n": args.n, "reps": args.reps, "population_ece": pop, "coverage": cover,
              "mean_width": {k: float(np.mean(v)) for k, v in width.items()},
              "nuts_not_ok": not_ok, "seconds": time.perf_counter() - t0}
    print(f"n = {args.n}, {args.reps} replications, population binned ECE {pop:.5f}")
    for k in kinds:
        print(f"  {k:12s} coverage {cover[k]}/{args.reps} = {cover[k] / args.reps:.3f}, "
              f"mean width {result['mean_width'][k]:.4f}")
    print(f"  NUTS fits not ok: {not_ok}; {result['seconds']:.0f} s")
    write_result(f"coverage_nc_ece_{args.n}", result)
    return result


if __name__ == "__main__":
    main()
