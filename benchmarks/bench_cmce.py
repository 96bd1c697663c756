"""Benchmark: CMCE and conformal temperature scaling at n = 50,000 items, K = 1,000 classes.

What is compared (ratios in one run, float64, one process)
----------------------------------------------------------
1. ``nc.cmce(P, y, n_bins=25, interval=None)`` against ``np.sort(P, axis=1)`` of the same
   matrix: every nested set's mass needs the sorted rows, so a sort is the floor of any
   exact CMCE. Target: within 3x.
2. Peak memory of the CMCE call (``tracemalloc``, which sees NumPy's allocations) against
   the size of the input matrix. The sets are processed in row chunks and reduced to
   per-item, per-bin sums, so memory is O(chunk x K + n x n_bins). Target: below 2x.
3. The conformal temperature bisection (``conformal_temperatures`` on MSP sets at
   alpha = 0.1, every row at once, tolerance 1e-12 in log(1/tau)) against one
   ``scipy.special.softmax`` of the same logits per bisection step (its number of in-set
   mass evaluations). Target: within 5x.

Each timing is the best of ``--repeat`` runs. Results are printed and written to
``benchmarks/output/bench_cmce.json``.

Usage::

    python benchmarks/bench_cmce.py            # n = 50,000, K = 1,000
    python benchmarks/bench_cmce.py --quick    # n = 5,000
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)
from scipy.special import softmax

import noisycal as nc
from noisycal.calibrators.conformal import conformal_quantile, nonconformity, prediction_sets
from noisycal.calibrators.conformal.maps import conformal_temperatures


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    n, K = args.n or (5000 if args.quick else 50000), args.k
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(n, K)) * 3.0
    P = softmax(Z, axis=1)
    y = (P.cumsum(1) > rng.random((n, 1))).argmax(1)
    print(f"n = {n}, K = {K}; input {P.nbytes / 2**20:.0f} MiB")

    nc.cmce(P[:100], y[:100], interval=None)  # warm up
    t_sort = best(lambda: np.sort(P, axis=1), args.repeat)
    t_cmce = best(lambda: nc.cmce(P, y, interval=None), args.repeat)
    tracemalloc.start()
    value = float(nc.cmce(P, y, interval=None))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"CMCE = {value:.6f}: {t_cmce:.3f} s; np.sort {t_sort:.3f} s; "
          f"ratio {t_cmce / t_sort:.2f} (target <= 3)")
    print(f"CMCE peak memory {peak / 2**20:.0f} MiB = {peak / P.nbytes:.2f} x the input "
          "(target < 2)")

    n_cal = min(5000, n // 2)
    q = conformal_quantile(nonconformity(P[:n_cal], y[:n_cal], "msp"), 0.1)
    sets = prediction_sets(P, q, "msp")
    sol = conformal_temperatures(Z, sets, 0.1)
    t_ts = best(lambda: conformal_temperatures(Z, sets, 0.1), args.repeat)
    t_sm = best(lambda: softmax(Z, axis=1), args.repeat)
    steps = sol.n_evaluations
    ratio_ts = t_ts / (steps * t_sm)
    print(f"conformal TS: {t_ts:.3f} s for {steps} in-set mass evaluations; one softmax "
          f"{t_sm:.4f} s; ratio per step {ratio_ts:.2f} (target <= 5); rows: "
          f"{dict(zip(*np.unique(sol.status, return_counts=True), strict=True))}")
    write_result("bench_cmce", {
        "n": n, "K": K, "repeat": args.repeat, "cmce": value, "t_cmce": t_cmce,
        "t_sort": t_sort, "ratio_cmce_sort": t_cmce / t_sort,
        "peak_bytes": peak, "input_bytes": P.nbytes, "ratio_memory": peak / P.nbytes,
        "t_ts": t_ts, "t_softmax": t_sm, "ts_evaluations": steps,
        "ratio_ts_per_step": ratio_ts}, publish=args.publish)
    return 0


if __name__ == "__main__":
    sys.exit(main())
