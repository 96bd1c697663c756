"""Benchmark: bootstrap interval of the top-label ECE, noisycal against plain NumPy.

What is compared
----------------
``nc.ece(probs, labels, n_bins=15, interval="bootstrap", n_boot=B, level=0.9)`` at
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

The NumPy loop costs about the same for every replicate, so by default it is timed
on ``--baseline-boot`` replicates (20) and its per-replicate time is multiplied by
``--n-boot``; pass ``--baseline-boot 1000`` to run the whole loop (then its
interval can be compared with noisycal's). noisycal is run once to compile (JIT)
and warm up on the same shapes, reported separately, then timed on a second full
run. It returns NumPy values, so the JAX computation has finished when the clock
stops. The target is a speed-up of at least 10x.

If ``uncertainty-calibration`` (import name ``calibration``, Kumar et al. 2019) is
installed, its bootstrap (``calibration.bootstrap_uncertainty``, with its Guo et al.
equal-width ``get_ece`` as the functional) is timed per replicate at n = 10,000,
K = 10 and compared with noisycal's per-replicate time at the same n.

Results are printed and written to ``benchmarks/output/bench_metrics.json``.

Usage::

    python benchmarks/bench_metrics.py            # n = 1e6, K = 10, 1000 replicates
    python benchmarks/bench_metrics.py --quick    # n = 1e5, 200 replicates (smoke run)
    python benchmarks/bench_metrics.py --baseline-boot 1000   # full NumPy loop (minutes)
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from _output import write_result  # benchmarks/_output.py (run as a script)

import jax

import noisycal as nc

N_BINS = 15
LEVEL = 0.9
TARGET_SPEEDUP = 10.0


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
                  seed: int) -> tuple[float, float, nc.Estimate]:
    """(compile + first run seconds, second run seconds, estimate of the second run)."""

    def run() -> nc.Estimate:
        return nc.ece(probs, labels, n_bins=N_BINS, interval="bootstrap", n_boot=n_boot,
                      level=LEVEL, seed=seed)

    t0 = time.perf_counter()
    run()
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = run()
    t_run = time.perf_counter() - t0
    return t_first, t_run, est


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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="items (default 1,000,000)")
    ap.add_argument("--n-classes", type=int, default=10, help="classes K (default 10)")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (1000)")
    ap.add_argument("--baseline-boot", type=int, default=20,
                    help="replicates the NumPy loop actually runs; its per-replicate time "
                         "is extrapolated to --n-boot (default 20; 1000 runs it all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ucal-n", type=int, default=10_000,
                    help="items for the uncertainty-calibration comparison (10,000)")
    ap.add_argument("--ucal-boot", type=int, default=20,
                    help="replicates uncertainty-calibration runs (default 20)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: n = 100,000 and n_boot = 200 (overrides --n, --n-boot)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.n_boot = 100_000, 200
    args.baseline_boot = min(args.baseline_boot, args.n_boot)
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    n, K, B, Bb = args.n, args.n_classes, args.n_boot, args.baseline_boot
    load = os.getloadavg()
    print("noisycal ECE bootstrap benchmark")
    print(f"  noisycal {nc.__version__}, jax {jax.__version__}, numpy {np.__version__}, "
          f"device {jax.devices()[0].platform}, {os.cpu_count()} CPUs, "
          f"load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  n = {n:,}, K = {K}, n_boot = {B}, {N_BINS} equal-width bins, "
          f"{LEVEL:.0%} percentile interval, seed = {args.seed}")

    probs, labels = simulate(n, K, args.seed)

    # like for like: same estimator on the full sample
    point_np = ece_numpy(probs, labels)
    point_nc = float(nc.ece(probs, labels, n_bins=N_BINS, interval=None))
    assert abs(point_np - point_nc) <= 1e-10, (point_np, point_nc)
    print(f"  point ECE: noisycal {point_nc:.10f}, numpy {point_np:.10f} "
          f"(|diff| = {abs(point_np - point_nc):.1e})")

    t_first, t_nc, est = time_noisycal(probs, labels, B, args.seed)
    print(f"noisycal: compile + first run {t_first:.2f} s; timed run {t_nc:.2f} s "
          f"({1e3 * t_nc / B:.2f} ms per replicate)")

    t0 = time.perf_counter()
    reps_np = bootstrap_numpy(probs, labels, Bb, args.seed)
    t_np_run = time.perf_counter() - t0
    per_rep_np = t_np_run / Bb
    t_np = per_rep_np * B
    extrapolated = Bb < B
    how = (f"extrapolated from {Bb} replicates run in {t_np_run:.2f} s" if extrapolated
           else f"all {B} replicates run")
    print(f"numpy loop: {1e3 * per_rep_np:.1f} ms per replicate; "
          f"{B} replicates {t_np:.1f} s ({how})")

    ratio = t_np / t_nc
    meets = ratio >= TARGET_SPEEDUP
    print(f"speed-up (numpy / noisycal): {ratio:.1f}x -> "
          f"{'meets' if meets else 'MISSES'} the {TARGET_SPEEDUP:.0f}x target")

    ci_nc = tuple(est.interval)
    ci_np = percentile_interval(reps_np)
    print(f"interval noisycal ({B} reps): [{ci_nc[0]:.6f}, {ci_nc[1]:.6f}]")
    note = (f"  (only {Bb} replicates: rough; use --baseline-boot {B} to compare)"
            if extrapolated else "")
    print(f"interval numpy    ({Bb} reps): [{ci_np[0]:.6f}, {ci_np[1]:.6f}]{note}")

    ucal = bench_uncertainty_calibration(args.ucal_n, K, args.ucal_boot, B, args.seed)
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
        "n_boot": B,
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
        "noisycal": {"compile_first_s": t_first, "total_s": t_nc, "per_replicate_s": t_nc / B,
                     "interval": list(ci_nc)},
        "numpy_loop": {"replicates_run": Bb, "run_s": t_np_run, "per_replicate_s": per_rep_np,
                       "total_s": t_np, "extrapolated": extrapolated,
                       "interval": list(ci_np)},
        "speedup": ratio,
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": bool(meets),
        "uncertainty_calibration": ucal,
    }
    write_result("bench_metrics", result)
    return result


if __name__ == "__main__":
    main()
