"""Benchmark: bootstrap interval of the top-label ECE, noisycal against plain NumPy.

What is compared
----------------
``nc.ece(probs, labels, n_bins=15, interval=nc.intervals.Bootstrap(n_boot=B), level=0.9)`` at
n = 1,000,000 items and K = 10 classes (float64), against the straightforward NumPy
loop a competent user would write on the same data in the same process::

    for each replicate:
        idx = rng.integers(0, n, n)              # resample items
        P, y = probs[idx], labels[idx]           # recompute from the probability matrix
        conf, pred = P.max(1), P.argmax(1)
        bins = min(floor(conf * 15), 14)         # equal-width bins, last closed
        ECE = sum_b |sum_{i in b} (correct_i - conf_i)| / n   (np.bincount)

Both compute the same estimator: top-label ECE with 15 equal-width bins and a
percentile bootstrap over items (90% interval: the 5% and 95% quantiles of the
replicates). Before timing, the NumPy ECE on the full sample is checked against
noisycal's point estimate (to 1e-10), so the comparison is like for like.

noisycal runs its default scheme, the binned bootstrap (``bootstrap='auto'``, see
``nc.ece``); it is timed at every ``--n-boot`` (default 50 and 1000: the fixed costs
weigh most at 50), and at the largest one the exact item bootstrap
(``bootstrap='exact'``) is also run once and the two 90% intervals printed side by side
(``--no-exact`` skips it). The targets are 10x at 50 replicates and 30x at 1000.

The NumPy loop costs about the same for every replicate, so by default it is timed
on ``--baseline-boot`` replicates (20) and its per-replicate time is multiplied by
``--n-boot``; pass ``--baseline-boot 1000`` to run the whole loop (then its
interval can be compared with noisycal's). noisycal is run once to compile (JIT)
and warm up on the same shapes, reported separately, then timed on a second full
run. It returns NumPy values, so the JAX computation has finished when the clock
stops.

Beside the binned scheme, the Poisson bootstrap (``bootstrap='poisson'``: a Poisson(1)
weight per item and replicate, the scheme ``devices=`` shards over items) is timed at
every ``--n-boot`` on one device (in this process, against the same NumPy loop) and,
for each count in ``--poisson-devices`` above 1 (default 2), on that many forced host
devices (``XLA_FLAGS=--xla_force_host_platform_device_count``, which JAX reads at
start, so in a fresh process on the same data; its ratio uses this process's NumPy
loop). The sharded run's interval is checked equal to the one-device run's (same seed)
to 1e-10. ``--no-poisson`` skips these lines.

If ``uncertainty-calibration`` (import name ``calibration``, Kumar et al. 2019) is
installed, its bootstrap (``calibration.bootstrap_uncertainty``, with its Guo et al.
equal-width ``get_ece`` as the functional) is timed per replicate at n = 10,000,
K = 10 and compared with noisycal's per-replicate time at the same n.

``--memory`` measures memory instead: for ``nc.ece`` (no interval, and the bootstrap),
classwise ECE (no interval, and its default inverted interval), ``nc.brier`` and
``nc.nll`` (no interval, and their default bootstrap), ``nc.cmce`` (no interval, and its
default inverted interval), ``nc.ece(logits=...)`` (float32 log-probabilities) and
``nc.true_label_ece`` (label vector; no interval) on n = 1e7, K = 10 float32
probabilities and integer labels (``--memory-cases`` picks cases; ``--memory-boot`` is
the replicates of every interval, at least 100 for the inverted ones). The inputs are
built chunk by chunk (so building them adds no peak; the logits case takes the logarithm
in place before measuring), each case runs in a fresh process, after a warm-up call on
20,000 items (so compilation is not counted). It reports the peak of NumPy allocations
during the call (``tracemalloc``) and the growth of the peak resident set size
(``VmHWM``, reset through ``/proc/self/clear_refs``, which also sees JAX's buffers),
both as multiples of the probability matrix's size.

Results are printed and written to ``benchmarks/output/bench_metrics.json``
(``bench_metrics_memory.json`` for ``--memory``).

Usage::

    python benchmarks/bench_metrics.py            # n = 1e6, K = 10, 1000 replicates
    python benchmarks/bench_metrics.py --quick    # n = 1e5, 200 replicates (smoke run)
    python benchmarks/bench_metrics.py --baseline-boot 1000   # full NumPy loop (minutes)
    python benchmarks/bench_metrics.py --memory   # peak memory at n = 1e7, K = 10 float32
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from _output import add_publish_argument, proc_kib, write_result  # benchmarks/_output.py

import jax

import noisycal as nc

N_BINS = 15
LEVEL = 0.9
#: Speed-up targets (numpy loop / noisycal) by number of replicates.
TARGETS = {50: 10.0, 1000: 30.0}


def simulate(n: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident float64 probabilities and labels drawn from the 'true' probabilities.

    Logits are scaled Gaussians; the model reports softmax(2 z) while the labels come
    from softmax(z), so confidences are systematically too high.
    """
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.standard_normal((n, n_classes))

    def softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    probs = softmax(2.0 * z)
    cum = np.cumsum(softmax(z), axis=1)
    u = rng.random(n) * cum[:, -1]
    labels = np.minimum((u[:, None] >= cum).sum(axis=1), n_classes - 1)
    return probs, labels.astype(np.int64)


def ece_numpy(probs: np.ndarray, labels: np.ndarray, n_bins: int = N_BINS) -> float:
    """Top-label ECE with equal-width bins, the way a NumPy user would write it."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    bins = np.minimum((conf * n_bins).astype(np.intp), n_bins - 1)
    sum_conf = np.bincount(bins, weights=conf, minlength=n_bins)
    sum_correct = np.bincount(bins, weights=correct, minlength=n_bins)
    # sum_b |B_b|/n * |acc_b - conf_b| = sum_b |sum_correct_b - sum_conf_b| / n
    return float(np.abs(sum_correct - sum_conf).sum() / labels.shape[0])


def bootstrap_numpy(probs: np.ndarray, labels: np.ndarray, n_boot: int,
                    seed: int) -> np.ndarray:
    """The straightforward replicate loop: resample indices, recompute the ECE."""
    rng = np.random.default_rng(seed)
    n = labels.shape[0]
    reps = np.empty(n_boot)
    for b in range(n_boot):
        idx = rng.integers(0, n, n)
        reps[b] = ece_numpy(probs[idx], labels[idx])
    return reps


def percentile_interval(reps: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [a, 1.0 - a])
    return float(lo), float(hi)


def time_noisycal(probs: np.ndarray, labels: np.ndarray, n_boot: int,
                  seed: int, scheme: str = "auto", devices: int | None = None
                  ) -> tuple[float, float, nc.Estimate]:
    """(compile + first run seconds, second run seconds, estimate of the second run)."""

    def run() -> nc.Estimate:
        boot = nc.intervals.Bootstrap(n_boot=n_boot, scheme=scheme, devices=devices)
        return nc.ece(probs, labels, n_bins=N_BINS, interval=boot, level=LEVEL, seed=seed)

    t0 = time.perf_counter()
    run()
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = run()
    t_run = time.perf_counter() - t0
    return t_first, t_run, est


def poisson_case(n: int, n_classes: int, n_boot: int, n_devices: int, seed: int) -> dict:
    """One timed Poisson-bootstrap call on ``n_devices`` devices (compile run first)."""
    probs, labels = simulate(n, n_classes, seed)
    devices = None if n_devices == 1 else n_devices
    t_first, t_run, est = time_noisycal(probs, labels, n_boot, seed, "poisson", devices)
    return {"devices": n_devices, "n_boot": n_boot, "compile_first_s": t_first,
            "total_s": t_run, "interval": list(est.interval),
            "jax_devices": len(jax.devices())}


def poisson_sharded(args: argparse.Namespace, n_devices: int, n_boot: int) -> dict:
    """:func:`poisson_case` in a fresh process that sees ``n_devices`` host devices."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n_devices}",
               JAX_PLATFORMS="cpu")
    cmd = [sys.executable, __file__, "--poisson-case", str(n_devices), str(n_boot),
           "--n", str(args.n), "--n-classes", str(args.n_classes), "--seed", str(args.seed)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return {"devices": n_devices, "n_boot": n_boot, "failed": res.stderr[-2000:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def bench_uncertainty_calibration(n: int, n_classes: int, n_boot_ucal: int, n_boot_nc: int,
                                  seed: int) -> dict:
    """Per-replicate time of uncertainty-calibration's bootstrap vs noisycal's at size n."""
    try:
        import calibration
    except ImportError:
        return {"installed": False}
    from importlib.metadata import PackageNotFoundError, version

    try:
        ucal_version = version("uncertainty-calibration")
    except PackageNotFoundError:
        ucal_version = "unknown"
    probs, labels = simulate(n, n_classes, seed + 1)

    def functional(data: list) -> float:
        p, y = zip(*data, strict=True)
        return calibration.get_ece(np.array(p), np.array(y), num_bins=N_BINS,
                                   mode="top-label")

    # its data layout: a list of (probability row, label) pairs, resampled by index
    data = list(zip(probs, labels, strict=True))
    point_ucal = functional(data)
    np.random.seed(seed)  # the package draws from NumPy's global generator
    t0 = time.perf_counter()
    # alpha is in percent here: 10 -> a 90% interval (basic bootstrap)
    lo, _, hi = calibration.bootstrap_uncertainty(data, functional, alpha=100 * (1 - LEVEL),
                                                  num_samples=n_boot_ucal)
    t_ucal = time.perf_counter() - t0
    # bootstrap_uncertainty evaluates the functional twice on the full sample first
    per_rep_ucal = t_ucal / (n_boot_ucal + 2)

    t_first, t_nc, est = time_noisycal(probs, labels, n_boot_nc, seed)
    per_rep_nc = t_nc / n_boot_nc
    return {
        "installed": True,
        "version": ucal_version,
        "n": n,
        "n_classes": n_classes,
        "ucal_n_boot": n_boot_ucal,
        "ucal_total_s": t_ucal,
        "ucal_per_replicate_s": per_rep_ucal,
        "ucal_point": float(point_ucal),
        "ucal_interval_basic": [float(lo), float(hi)],
        "noisycal_n_boot": n_boot_nc,
        "noisycal_compile_first_s": t_first,
        "noisycal_total_s": t_nc,
        "noisycal_per_replicate_s": per_rep_nc,
        "noisycal_point": float(est),
        "noisycal_interval": list(est.interval),
        "ratio": per_rep_ucal / per_rep_nc,
    }


def simulate_float32(n: int, n_classes: int, seed: int, chunk: int = 2**18
                     ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`simulate` chunk by chunk into a float32 matrix (no full float64 copy)."""
    probs = np.empty((n, n_classes), dtype=np.float32)
    labels = np.empty(n, dtype=np.int64)
    for i, s in enumerate(range(0, n, chunk)):
        e = min(n, s + chunk)
        p, y = simulate(e - s, n_classes, seed * 100_003 + i)
        probs[s:e], labels[s:e] = p, y
    return probs, labels


MEMORY_CASES = ("ece", "ece_bootstrap", "ece_classwise", "brier", "nll",
                "ece_classwise_interval", "brier_bootstrap", "nll_bootstrap", "cmce",
                "cmce_interval", "ece_logits", "true_label_ece")


def _memory_call(case: str, probs: np.ndarray, labels: np.ndarray, n_boot: int) -> object:
    if case == "ece":
        return nc.ece(probs, labels, n_bins=N_BINS, interval=None)
    if case == "ece_bootstrap":
        return nc.ece(probs, labels, n_bins=N_BINS,
                      interval=nc.intervals.Bootstrap(n_boot=n_boot))
    if case == "ece_classwise":
        return nc.ece(probs, labels, n_bins=N_BINS, kind="classwise", interval=None)
    if case == "brier":
        return nc.brier(probs, labels, interval=None)
    if case == "nll":
        return nc.nll(probs, labels, interval=None)
    # the default interval of each (n_boot replicates / simulated draws)
    if case == "ece_classwise_interval":
        return nc.ece(probs, labels, n_bins=N_BINS, kind="classwise",
                      interval=nc.intervals.Inversion(n_boot=max(n_boot, 100)))
    if case == "brier_bootstrap":
        return nc.brier(probs, labels, interval=nc.intervals.Bootstrap(n_boot=n_boot))
    if case == "nll_bootstrap":
        return nc.nll(probs, labels, interval=nc.intervals.Bootstrap(n_boot=n_boot))
    if case == "cmce":
        return nc.cmce(probs, labels, interval=None)
    if case == "cmce_interval":
        return nc.cmce(probs, labels, interval=nc.intervals.Inversion(n_boot=max(n_boot, 100)))
    if case == "ece_logits":
        # logits= (float32 log-probabilities, taken in place by memory_case)
        return nc.ece(logits=probs, target=labels, n_bins=N_BINS, interval=None)
    if case == "true_label_ece":
        return nc.true_label_ece(probs, labels, n_bins=N_BINS, interval=None)
    raise ValueError(f"unknown memory case {case!r}")


def memory_case(case: str, n: int, n_classes: int, n_boot: int, seed: int) -> dict:
    """One memory measurement (run in a fresh process by :func:`bench_memory`)."""
    warm_p, warm_y = simulate_float32(20_000, n_classes, seed + 1)
    probs, labels = simulate_float32(n, n_classes, seed)
    if case == "ece_logits":
        np.log(warm_p, out=warm_p)
        np.log(probs, out=probs)
    _memory_call(case, warm_p, warm_y, n_boot)  # compile on small data first
    gc.collect()
    rss0 = proc_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:  # reset the peak RSS to now
        f.write("5")
    tracemalloc.start()
    t0 = time.perf_counter()
    out = _memory_call(case, probs, labels, n_boot)
    seconds = time.perf_counter() - t0
    _, tm_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    hwm = proc_kib("VmHWM")
    return {"case": case, "n": n, "n_classes": n_classes, "input_bytes": probs.nbytes,
            "labels_bytes": labels.nbytes, "tracemalloc_peak_bytes": tm_peak,
            "rss_peak_growth_bytes": 1024 * (hwm - rss0), "seconds": seconds,
            "value": float(out)}


def bench_memory(args: argparse.Namespace) -> dict:
    """Every memory case in its own process; a table of peaks as multiples of the input."""
    load = os.getloadavg()
    print("noisycal metrics: peak additional memory")
    print(f"  noisycal {nc.__version__} ({os.path.dirname(nc.__file__)}), jax "
          f"{jax.__version__}, numpy {np.__version__}, {os.cpu_count()} CPUs, load avg "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  n = {args.n:,}, K = {args.n_classes}, float32 probabilities "
          f"({args.n * args.n_classes * 4 / 2**20:.0f} MiB), int64 labels; bootstrap "
          f"n_boot = {args.memory_boot}")
    rows = []
    for case in args.memory_cases:
        cmd = [sys.executable, __file__, "--memory-case", case, "--n", str(args.n),
               "--n-classes", str(args.n_classes), "--memory-boot", str(args.memory_boot),
               "--seed", str(args.seed)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            print(f"  {case}: failed\n{res.stderr[-2000:]}")
            rows.append({"case": case, "failed": res.stderr[-2000:]})
            continue
        row = json.loads(res.stdout.strip().splitlines()[-1])
        inp = row["input_bytes"]
        print(f"  {case:14s} numpy peak {row['tracemalloc_peak_bytes'] / 2**20:7.0f} MiB "
              f"({row['tracemalloc_peak_bytes'] / inp:4.2f}x input); peak RSS growth "
              f"{row['rss_peak_growth_bytes'] / 2**20:7.0f} MiB "
              f"({row['rss_peak_growth_bytes'] / inp:4.2f}x); {row['seconds']:.2f} s")
        rows.append(row)
    result = {"n": args.n, "n_classes": args.n_classes, "memory_boot": args.memory_boot,
              "load_avg_at_start": list(load), "noisycal": nc.__version__,
              "noisycal_path": os.path.dirname(nc.__file__), "cases": rows}
    write_result("bench_metrics_memory", result, publish=args.publish)
    return result


def bench_poisson(args: argparse.Namespace, per_rep_np: float, probs: np.ndarray,
                  labels: np.ndarray) -> list[dict]:
    """The Poisson-bootstrap lines: each --n-boot on each --poisson-devices count."""
    rows = []
    for B in args.n_boot:
        one = None
        for D in sorted(set(args.poisson_devices)):
            load = os.getloadavg()[0]
            if D == 1:
                t_first, t_run, est = time_noisycal(probs, labels, B, args.seed, "poisson")
                row = {"devices": 1, "n_boot": B, "compile_first_s": t_first,
                       "total_s": t_run, "interval": list(est.interval)}
                one = row
            else:
                row = poisson_sharded(args, D, B)
            row["load_avg_at_start"] = load
            rows.append(row)
            if "failed" in row:
                print(f"n_boot = {B}: noisycal (poisson, {D} devices) failed:\n"
                      f"{row['failed']}")
                continue
            row["speedup"] = per_rep_np * B / row["total_s"]
            same = ""
            if one is not None and D > 1:
                row["interval_diff_vs_1"] = max(abs(a - b) for a, b in
                                                zip(row["interval"], one["interval"], strict=True))
                same = f"; interval - 1-device interval: {row['interval_diff_vs_1']:.1e}"
            print(f"n_boot = {B}: noisycal (poisson, {D} device{'s' if D > 1 else ''}"
                  f"{', forced host, own process' if D > 1 else ''}) compile + first run "
                  f"{row['compile_first_s']:.2f} s, timed run {row['total_s']:.3f} s; "
                  f"speed-up vs numpy loop {row['speedup']:.1f}x (load {load:.1f}){same}")
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=None,
                    help="items (default 1,000,000; 10,000,000 with --memory)")
    ap.add_argument("--n-classes", type=int, default=10, help="classes K (default 10)")
    ap.add_argument("--n-boot", type=int, nargs="+", default=[50, 1000],
                    help="bootstrap replicates, one timed run each (default 50 1000)")
    ap.add_argument("--baseline-boot", type=int, default=20,
                    help="replicates the NumPy loop actually runs; its per-replicate time "
                         "is extrapolated to each --n-boot (default 20; 1000 runs it all)")
    ap.add_argument("--no-exact", action="store_true",
                    help="skip the exact-bootstrap run at the largest --n-boot")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ucal-n", type=int, default=10_000,
                    help="items for the uncertainty-calibration comparison (10,000)")
    ap.add_argument("--ucal-boot", type=int, default=20,
                    help="replicates uncertainty-calibration runs (default 20)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: n = 100,000 and n_boot = 50 200 (overrides --n, --n-boot)")
    ap.add_argument("--memory", action="store_true",
                    help="measure peak memory (n = 1e7, K = 10 float32) instead of time")
    ap.add_argument("--memory-cases", nargs="+", default=list(MEMORY_CASES),
                    choices=MEMORY_CASES)
    ap.add_argument("--memory-boot", type=int, default=1000,
                    help="replicates of the bootstrap memory case (default 1000)")
    ap.add_argument("--memory-case", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--no-poisson", action="store_true",
                    help="skip the Poisson-bootstrap lines")
    ap.add_argument("--poisson-devices", type=int, nargs="+", default=[1, 2],
                    help="device counts of the Poisson bootstrap (1: this process; more: "
                         "forced host devices in a fresh process; default 1 2)")
    ap.add_argument("--poisson-case", type=int, nargs=2, default=None, help=argparse.SUPPRESS)
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    if args.n is None:
        args.n = 10_000_000 if args.memory or args.memory_case else 1_000_000
    if args.quick:
        args.n, args.n_boot = 100_000, [50, 200]
    args.n_boot = sorted(set(args.n_boot))
    args.baseline_boot = min(args.baseline_boot, max(args.n_boot))
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.poisson_case:
        print(json.dumps(poisson_case(args.n, args.n_classes, args.poisson_case[1],
                                      args.poisson_case[0], args.seed)))
        return {}
    if args.memory_case:
        print(json.dumps(memory_case(args.memory_case, args.n, args.n_classes,
                                     args.memory_boot, args.seed)))
        return {}
    if args.memory:
        return bench_memory(args)
    n, K, Bb = args.n, args.n_classes, args.baseline_boot
    B_max = max(args.n_boot)
    load = os.getloadavg()
    print("noisycal ECE bootstrap benchmark")
    print(f"  noisycal {nc.__version__}, jax {jax.__version__}, numpy {np.__version__}, "
          f"device {jax.devices()[0].platform}, {os.cpu_count()} CPUs, "
          f"load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  n = {n:,}, K = {K}, n_boot = {args.n_boot}, {N_BINS} equal-width bins, "
          f"{LEVEL:.0%} percentile interval, seed = {args.seed}")

    probs, labels = simulate(n, K, args.seed)

    # like for like: same estimator on the full sample
    point_np = ece_numpy(probs, labels)
    point_nc = float(nc.ece(probs, labels, n_bins=N_BINS, interval=None))
    assert abs(point_np - point_nc) <= 1e-10, (point_np, point_nc)
    print(f"  point ECE: noisycal {point_nc:.10f}, numpy {point_np:.10f} "
          f"(|diff| = {abs(point_np - point_nc):.1e})")

    t0 = time.perf_counter()
    reps_np = bootstrap_numpy(probs, labels, Bb, args.seed)
    t_np_run = time.perf_counter() - t0
    per_rep_np = t_np_run / Bb
    print(f"numpy loop: {1e3 * per_rep_np:.1f} ms per replicate ({Bb} replicates run in "
          f"{t_np_run:.2f} s; extrapolated to larger n_boot)")

    runs = {}
    for B in args.n_boot:
        t_first, t_nc, est = time_noisycal(probs, labels, B, args.seed)
        t_np = per_rep_np * B
        ratio = t_np / t_nc
        target = TARGETS.get(B)
        verdict = ("" if target is None else
                   f" -> {'meets' if ratio >= target else 'MISSES'} the {target:.0f}x target")
        print(f"n_boot = {B}: noisycal ({est.details['bootstrap']}) compile + first run "
              f"{t_first:.2f} s, timed run {t_nc:.3f} s; numpy loop {t_np:.1f} s; "
              f"speed-up {ratio:.1f}x{verdict}")
        runs[str(B)] = {"scheme": est.details["bootstrap"], "compile_first_s": t_first,
                        "total_s": t_nc, "numpy_total_s": t_np, "speedup": ratio,
                        "target": target,
                        "meets_target": None if target is None else bool(ratio >= target),
                        "interval": list(est.interval)}
    poisson = [] if args.no_poisson else bench_poisson(args, per_rep_np, probs, labels)
    est_max = runs[str(B_max)]
    print(f"interval noisycal binned ({B_max} reps): [{est_max['interval'][0]:.6f}, "
          f"{est_max['interval'][1]:.6f}]")
    exact = None
    if not args.no_exact:
        t0 = time.perf_counter()
        ex = nc.ece(probs, labels, n_bins=N_BINS,
                    interval=nc.intervals.Bootstrap(n_boot=B_max, scheme="exact"), level=LEVEL,
                    seed=args.seed + 1)
        t_ex = time.perf_counter() - t0
        exact = {"total_s_with_compile": t_ex, "interval": list(ex.interval)}
        print(f"interval noisycal exact  ({B_max} reps): [{ex.interval[0]:.6f}, "
              f"{ex.interval[1]:.6f}] ({t_ex:.1f} s with compilation)")
    ci_np = percentile_interval(reps_np)
    note = (f"  (only {Bb} replicates: rough; use --baseline-boot {B_max} to compare)"
            if Bb < B_max else "")
    print(f"interval numpy           ({Bb} reps): [{ci_np[0]:.6f}, {ci_np[1]:.6f}]{note}")

    ucal = bench_uncertainty_calibration(args.ucal_n, K, args.ucal_boot, B_max, args.seed)
    if not ucal["installed"]:
        print("uncertainty-calibration: not installed (pip install uncertainty-calibration); "
              "skipped")
    else:
        print(f"uncertainty-calibration {ucal['version']} at n = {ucal['n']:,}, K = {K}: "
              f"{1e3 * ucal['ucal_per_replicate_s']:.1f} ms per replicate "
              f"({ucal['ucal_n_boot']} replicates, {ucal['ucal_total_s']:.2f} s); "
              f"noisycal {1e3 * ucal['noisycal_per_replicate_s']:.3f} ms per replicate "
              f"({ucal['noisycal_n_boot']} replicates, {ucal['noisycal_total_s']:.2f} s "
              f"after {ucal['noisycal_compile_first_s']:.2f} s compile + first run); "
              f"ratio {ucal['ratio']:.0f}x")
        print(f"  point ECE: uncertainty-calibration {ucal['ucal_point']:.10f}, "
              f"noisycal {ucal['noisycal_point']:.10f}")

    result = {
        "n": n,
        "n_classes": K,
        "n_boot": args.n_boot,
        "n_bins": N_BINS,
        "level": LEVEL,
        "seed": args.seed,
        "quick": args.quick,
        "environment": {
            "noisycal": nc.__version__,
            "jax": jax.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "device": str(jax.devices()[0]),
            "cpu_count": os.cpu_count(),
            "load_avg_at_start": list(load),
        },
        "point_ece": {"noisycal": point_nc, "numpy": point_np},
        "noisycal": runs,
        "noisycal_exact": exact,
        "noisycal_poisson": poisson,
        "numpy_loop": {"replicates_run": Bb, "run_s": t_np_run, "per_replicate_s": per_rep_np,
                       "interval": list(ci_np)},
        "targets": {str(k): v for k, v in TARGETS.items()},
        "uncertainty_calibration": ucal,
    }
    write_result("bench_metrics", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
