"""Benchmark: metrics of a Dask array against the same call on the in-memory NumPy array.

What is compared
----------------
The same metric call, with the same seed, on n items x K classes of float32
probabilities and integer labels, given once as NumPy arrays (the baseline) and once as
Dask arrays of ``--rows`` rows per block on Dask's threaded scheduler (two threads by
default: this machine has two cores). Before timing, each pair of results is checked to be
equal (to 1e-10, or, for the Poisson bootstrap of the classwise ECE and of the Brier score,
only the point value). Each call is run once to warm up (JIT compilation) and then timed
``--reps`` times; the median is reported with the ratio Dask / NumPy (above 1: Dask is
slower). This is the cost of reading the data block by block and of the extra passes
(flags and sums for the scores, two passes for the binned bootstrap), on one machine; Dask
is for data that does not fit in memory or lives on a cluster, where the baseline cannot
run at all.

Run: ``python benchmarks/bench_dask.py [--n 1000000] [--k 10] [--rows 131072]``. Results are
printed and written to ``benchmarks/output/bench_dask.json`` (``--publish``: also
``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py

import noisycal as nc

CASES = [
    ("ece, interval=None", nc.ece, {"interval": None}, True),
    ("ece, inversion (default)", nc.ece, {}, True),
    ("ece, binned bootstrap", nc.ece, {"interval": "bootstrap"}, True),
    ("classwise ece, inversion", nc.ece, {"kind": "classwise"}, True),
    ("classwise ece, bootstrap (Dask: Poisson)", nc.ece,
     {"kind": "classwise", "interval": nc.intervals.Bootstrap(n_boot=200)}, False),
    ("brier, interval=None", nc.brier, {"interval": None}, True),
    ("brier, wald", nc.brier, {"interval": "wald"}, True),
    ("brier, bootstrap (Dask: Poisson)", nc.brier,
     {"interval": nc.intervals.Bootstrap(n_boot=200)}, False),
]


def _timed(f, *args, reps: int, **kw) -> tuple[float, object]:
    f(*args, **kw)
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = f(*args, **kw)
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rows", type=int, default=2**17)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=None, help="run the cases whose name contains this")
    add_publish_argument(ap)
    a = ap.parse_args()
    rows = []
    import dask
    import dask.array as da

    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.full(a.k, 0.5), a.n).astype(np.float32)
    P /= P.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
    y = (rng.random(a.n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1).clip(0, a.k - 1)
    dP = da.from_array(P, chunks=(a.rows, a.k))
    dy = da.from_array(y, chunks=a.rows)
    print(f"n = {a.n:,}, K = {a.k}, float32, {dP.numblocks[0]} blocks of {a.rows:,} rows, "
          f"threaded scheduler with {a.threads} threads, median of {a.reps}")
    print(f"{'case':44s} {'NumPy s':>9s} {'Dask s':>9s} {'Dask/NumPy':>10s}")
    with dask.config.set(scheduler="threads", num_workers=a.threads):
        for name, f, kw, same in CASES:
            if a.only and a.only not in name:
                continue
            t0, r0 = _timed(f, P, y, reps=a.reps, **kw)
            t1, r1 = _timed(f, dP, dy, reps=a.reps, **kw)
            assert abs(r0.value - r1.value) <= 1e-10, (name, r0.value, r1.value)
            if same and r0.interval is not None:
                assert np.allclose(r0.interval, r1.interval, rtol=0, atol=1e-10), name
            print(f"{name:44s} {t0:9.2f} {t1:9.2f} {t1 / t0:10.2f}")
            rows.append({"case": name, "numpy_s": t0, "dask_s": t1, "ratio": t1 / t0,
                         "same_interval_checked": bool(same and r0.interval is not None)})
    write_result("bench_dask", {"n": a.n, "k": a.k, "rows_per_block": a.rows,
                                "blocks": int(dP.numblocks[0]), "threads": a.threads,
                                "reps": a.reps, "dask": dask.__version__, "cases": rows},
                 publish=a.publish)


if __name__ == "__main__":
    main()
