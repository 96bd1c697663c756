"""Benchmark: memory and time of the default NC-ECE with fitted channels, and of
``nc.annotators.compare(ic='bic')``, as the number of items grows.

What is measured
----------------
Each case runs in a fresh process (``--case``), after a warm-up call of the same
function on a small design with the same number of classes and annotators (so
compilation is not counted), and reports the growth of the peak resident set size during
the call (``VmHWM``, reset through ``/proc/self/clear_refs``; it sees JAX's and NumPy's
buffers alike) and its wall time.

- ``simulated``: a Dawid–Skene design (``nc.simulate.dawid_skene``: ``--n-classes``
  classes, three annotators of accuracy 0.8 with errors spread evenly, uniform classes)
  and an over-confident classifier (latent logits ``2.5 e_y + N(0, I)`` at temperature
  0.7); the channels fitted by EM (``nc.DawidSkene().fit``, timed apart), the corrected
  target ``nc.targets.corrected(ann, fit)``; measured: the default
  ``nc.ece(P, target)`` (top label, 15 bins, inverted interval carrying the channel
  error). One row per ``--sizes`` entry; the memory is given as a multiple of the
  probability matrix (n K float64).
- ``cifar10n``: Dawid–Skene EM on all 50,000 CIFAR-10N images (three human labels
  each), the corrected target on the 5,000 DenseNet-40 validation images (the
  classifier's scores exist only there; ``val_train_idx`` places them in the training
  set), and the default NC-ECE of the DenseNet-40 probabilities against it; the fit, the
  target and the NC-ECE are timed (skipped when the data are absent).
- ``compare``: ``nc.annotators.compare({'ds': ..., 'one_coin': ...}, ann, ic='bic')`` on
  ``--compare-ratings`` ratings (three annotators per item, four classes); the memory is
  given as a multiple of the ratings' arrays (item, annotator and label codes, int64).

``--pythonpath`` points the children at another checkout, to measure a "before" on the
same machine (``--name`` names its record).

Goals (issue "Scale, latency and limits"): extra peak at most 1 GB at 50,000 items x 10
classes; NC-ECE on the full CIFAR-10N in under a minute; a 10^6-item NC-ECE runs;
``compare(ic='bic')`` within 2x its input.

Usage::

    python benchmarks/bench_nc_memory.py                       # 50,000 and 200,000 items
    python benchmarks/bench_nc_memory.py --sizes 50000 1000000 # the 10^6 case (minutes)
    python benchmarks/bench_nc_memory.py --pythonpath ../before --name bench_nc_memory_before
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _output import add_publish_argument, proc_kib, write_result  # benchmarks/_output.py

N_ANNOTATORS = 3
ACCURACY = 0.8
TEMPERATURE = 0.7
SIGNAL = 2.5
WARM_ITEMS = 2000
#: Goals of the issue, in bytes and seconds.
GOAL_PEAK_BYTES = 10**9
GOAL_CIFAR10N_S = 60.0
GOAL_COMPARE_RATIO = 2.0


def _measure(call):
    """(result, peak RSS growth in bytes, seconds) of ``call()``."""
    gc.collect()
    rss0 = proc_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:   # reset the peak RSS to now
        f.write("5")
    t0 = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - t0
    return out, 1024 * (proc_kib("VmHWM") - rss0), seconds


def simulate(n: int, K: int, seed: int):
    """Annotations, probabilities (n, K) of an over-confident classifier, true classes."""
    import noisycal as nc

    conf = np.full((N_ANNOTATORS, K, K), (1 - ACCURACY) / (K - 1))
    for j in range(N_ANNOTATORS):
        np.fill_diagonal(conf[j], ACCURACY)
    sim = nc.simulate.dawid_skene(n, np.full(K, 1 / K), conf, seed=seed)
    rng = np.random.default_rng(seed + 1)
    z = rng.normal(size=(n, K))
    z[np.arange(n), sim.true_class] += SIGNAL
    z /= TEMPERATURE
    z -= z.max(axis=1, keepdims=True)
    P = np.exp(z)
    P /= P.sum(axis=1, keepdims=True)
    return sim.annotations, P


def case_simulated(n: int, K: int, seed: int) -> dict:
    import noisycal as nc

    def run(ann, P):
        fit = nc.DawidSkene().fit(ann, seed=0)
        return fit, nc.targets.corrected(ann, fit)

    ann, P = simulate(WARM_ITEMS, K, seed + 7)
    _, T = run(ann, P)
    nc.ece(P, T)                                           # compile on small data
    ann, P = simulate(n, K, seed)
    t0 = time.perf_counter()
    fit, T = run(ann, P)
    fit_s = time.perf_counter() - t0
    est, peak, seconds = _measure(lambda: nc.ece(P, T))
    return {"case": "simulated", "n": n, "n_classes": K, "input_bytes": P.nbytes,
            "fit_and_target_s": fit_s, "fit_status": fit.status,
            "peak_growth_bytes": peak, "seconds": seconds, "value": float(est),
            "interval": [float(est.low), float(est.high)], "status": est.status,
            "channel_error": est.details.get("channel_error", {}).get("method")}


def case_cifar10n(seed: int) -> dict:
    import noisycal as nc

    labels = nc.datasets.load_cifar10n().labels
    dn = nc.datasets.load_cifar10_logits("densenet40")
    n = labels.shape[0]
    ann = nc.Annotations.from_wide(labels, classes=np.arange(10), items=np.arange(n))
    idx = np.asarray(dn.val_train_idx)
    z = np.array(dn.logits_val, np.float64)
    z -= z.max(axis=1, keepdims=True)
    P = np.exp(z)
    P /= P.sum(axis=1, keepdims=True)
    warm = ann.subset(np.arange(WARM_ITEMS))            # compile on small data
    wfit = nc.DawidSkene().fit(warm, seed=0)
    nc.ece(P[:WARM_ITEMS], nc.targets.corrected(warm, wfit))   # (any rows: compiling)
    t0 = time.perf_counter()
    fit = nc.DawidSkene().fit(ann, seed=0)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    T = nc.targets.corrected(ann.subset(idx), fit)
    target_s = time.perf_counter() - t0
    row = np.empty(n, np.int64)
    row[idx] = np.arange(idx.size)
    P = P[row[np.asarray(T.items)]]     # subset() keeps the items' order; P is in idx's
    est, peak, seconds = _measure(lambda: nc.ece(P, T))
    return {"case": "cifar10n", "n_fitted": n, "n_scored": int(idx.size),
            "fit_s": fit_s, "target_s": target_s, "seconds": seconds,
            "total_s": fit_s + target_s + seconds, "peak_growth_bytes": peak,
            "fit_status": fit.status, "value": float(est),
            "interval": [float(est.low), float(est.high)], "status": est.status,
            "channel_error": est.details.get("channel_error", {}).get("method")}


def case_compare(n_ratings: int, seed: int) -> dict:
    import noisycal as nc

    K = 4

    def fits(n):
        ann, _ = simulate(n, K, seed)
        em = nc.engines.EM(n_starts=2)
        return ann, {"ds": nc.DawidSkene().fit(ann, method=em, seed=0),
                     "one_coin": nc.OneCoinDawidSkene().fit(ann, method=em, seed=0)}

    ann, f = fits(WARM_ITEMS)
    nc.annotators.compare(f, ann, ic="bic")
    ann, f = fits(n_ratings // N_ANNOTATORS)
    arr = ann.engine_arrays()
    inp = sum(np.asarray(a).astype(np.int64).nbytes for a in (arr.item, arr.annotator,
                                                               arr.label))
    res, peak, seconds = _measure(lambda: nc.annotators.compare(f, ann, ic="bic"))
    return {"case": "compare", "n_ratings": int(np.asarray(arr.item).size),
            "input_bytes": inp, "peak_growth_bytes": peak, "seconds": seconds,
            "best": str(res.table["model"].iloc[0])}


def _child(args: argparse.Namespace, case: str, *extra: str) -> dict:
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([args.pythonpath, env.get("PYTHONPATH", "")])
    cmd = [sys.executable, __file__, "--case", case, "--seed", str(args.seed), *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return {"case": case, "failed": res.stderr[-3000:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def _mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000])
    p.add_argument("--n-classes", type=int, default=10)
    p.add_argument("--compare-ratings", type=int, default=1_000_000)
    p.add_argument("--no-cifar10n", action="store_true")
    p.add_argument("--pythonpath", default=None)
    p.add_argument("--name", default="bench_nc_memory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--case", default=None, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=None, help=argparse.SUPPRESS)
    add_publish_argument(p)
    args = p.parse_args(argv)
    if args.case is not None:                              # a child process
        out = {"simulated": lambda: case_simulated(args.n, args.n_classes, args.seed),
               "cifar10n": lambda: case_cifar10n(args.seed),
               "compare": lambda: case_compare(args.n, args.seed)}[args.case]()
        print(json.dumps(out))
        return out
    import noisycal as nc

    print(f"noisycal NC-ECE memory ({args.name}): noisycal from "
          f"{args.pythonpath or os.path.dirname(nc.__file__)}; load "
          f"{os.getloadavg()[0]:.1f}")
    rows = []
    for n in args.sizes:
        r = _child(args, "simulated", "--n", str(n), "--n-classes", str(args.n_classes))
        rows.append(r)
        if "failed" in r:
            print(f"  simulated n={n:,}: failed\n{r['failed']}")
            continue
        print(f"  simulated n={n:,} K={args.n_classes}: NC-ECE peak growth "
              f"{_mib(r['peak_growth_bytes'])} ({r['peak_growth_bytes'] / r['input_bytes']:.1f}x "
              f"the probabilities), {r['seconds']:.1f} s (fit + target "
              f"{r['fit_and_target_s']:.1f} s); {r['value']:.4f} {r['interval']} {r['status']}")
    if not args.no_cifar10n:
        root = nc.datasets.data_dir()
        if root is not None and (Path(root) / "cifar10n" / "cifar10n.npz").exists():
            r = _child(args, "cifar10n")
            rows.append(r)
            if "failed" in r:
                print(f"  cifar10n: failed\n{r['failed']}")
            else:
                print(f"  CIFAR-10N: DS fit on {r['n_fitted']:,} images {r['fit_s']:.1f} s, "
                      f"target {r['target_s']:.1f} s, NC-ECE on {r['n_scored']:,} "
                      f"{r['seconds']:.1f} s (total {r['total_s']:.1f} s), peak growth "
                      f"{_mib(r['peak_growth_bytes'])}; {r['value']:.4f} {r['interval']}")
        else:
            print("  cifar10n: data absent, skipped")
    if args.compare_ratings:
        r = _child(args, "compare", "--n", str(args.compare_ratings))
        rows.append(r)
        if "failed" in r:
            print(f"  compare: failed\n{r['failed']}")
        else:
            x = r["peak_growth_bytes"] / r["input_bytes"]
            print(f"  compare(ic='bic') on {r['n_ratings']:,} ratings: peak growth "
                  f"{_mib(r['peak_growth_bytes'])} ({x:.2f}x the ratings' arrays), "
                  f"{r['seconds']:.2f} s")
    result = {"n_classes": args.n_classes, "n_annotators": N_ANNOTATORS,
              "pythonpath": args.pythonpath, "goal_peak_bytes": GOAL_PEAK_BYTES,
              "goal_cifar10n_s": GOAL_CIFAR10N_S, "goal_compare_ratio": GOAL_COMPARE_RATIO,
              "cases": rows}
    write_result(args.name, result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
