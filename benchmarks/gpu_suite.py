"""GPU suite: the three heavy workloads at the sizes users bring, on JAX's default device,
each beside the same workload on the CPU where that is feasible, in one command.

1. **Dawid–Skene EM on 5e7 ratings**: 1e7 items, 5 ratings each from 50 annotators,
   K = 5, exactly 20 iterations from the soft vote (``bench_em.py``'s simulation and
   call). The ``Annotations`` construction is timed on its own line.
2. **ECE bootstrap on n = 1e7, K = 10**: ``nc.ece(probs, labels, n_bins=15,
   interval=nc.intervals.Bootstrap(n_boot=1000))`` on float32 probabilities
   (``bench_metrics.py``'s simulation). Beside it, the same data with the Poisson
   bootstrap sharded over all of JAX's devices (``Bootstrap(scheme="poisson",
   devices=jax.devices())``; with one GPU a mesh of one, and on the ``--cpu`` line the
   one default CPU device).
3. **10-class Dawid–Skene NUTS on CIFAR-10N's 5,000 DenseNet-40 validation images**
   (simulated data of the same size when ``../shared/data`` is absent): the public
   ``fit(method="nuts")``, 4 chains x (1000 + 1000).

Each workload runs once to compile ("cold") and once more ("warm") on the default
device. With ``--cpu`` the warm run is repeated on the host CPU (``jax.default_device``)
at ``--cpu-scale`` of the size (default 0.1) and the CPU time is scaled linearly to the
full size: the line says so. Nothing in noisycal forces a device; on a machine without
a GPU the "device" column is the CPU itself.

::

    pip install -e ".[gpu]"            # a CUDA build of JAX
    python benchmarks/gpu_suite.py --cpu          # about 8 minutes on one GPU
    python benchmarks/gpu_suite.py --quick        # sizes / 100: a smoke run anywhere

Results are also written to ``benchmarks/output/gpu_suite.json`` (git-ignored).
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
from bench_em import simulate as simulate_ratings  # noqa: E402
from bench_em import true_parameters  # noqa: E402
from bench_metrics import simulate as simulate_probs  # noqa: E402
from bench_nuts_patterns import load as load_cifar10n  # noqa: E402


def _timed(fn: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    jax.effects_barrier()
    return time.perf_counter() - t0, out


def em_workload(n: int, seed: int) -> tuple[float, object]:
    prev, conf = true_parameters(5, 50, seed)
    item, ann, lab = simulate_ratings(n, prev, conf, seed, per_item=5)
    t_build, a = _timed(lambda: nc.Annotations.from_arrays(item, ann, lab))

    def fit() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nc.DawidSkene(5).fit(a, method=nc.engines.EM(init="soft_vote", n_starts=1,
                                                                max_iter=20, tol=1e-300),
                                        seed=seed)
    return t_build, fit


def ece_workload(n: int, seed: int) -> tuple[float, object]:
    P, y = simulate_probs(n, 10, seed)
    P = P.astype(np.float32)

    def fit() -> object:
        return nc.ece(P, y, n_bins=15, interval=nc.intervals.Bootstrap(n_boot=1000), level=0.9)
    return 0.0, fit


def ece_sharded_workload(n: int, seed: int) -> tuple[float, object]:
    P, y = simulate_probs(n, 10, seed)
    P = P.astype(np.float32)
    # every device of the default backend; inside jax.default_device (the --cpu line)
    # that one device
    dev = jax.config.jax_default_device
    devices = jax.devices() if dev is None else [dev]

    def fit() -> object:
        boot = nc.intervals.Bootstrap(n_boot=1000, scheme="poisson", devices=devices)
        return nc.ece(P, y, n_bins=15, interval=boot, level=0.9)
    return 0.0, fit


def nuts_workload(scale: float, seed: int) -> tuple[float, object]:
    labels, _ = load_cifar10n(5000, seed)
    labels = labels[: max(50, int(round(scale * labels.shape[0])))]
    a = nc.Annotations.from_wide(labels, classes=np.arange(10))

    def fit() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nc.DawidSkene(10).fit(a, method=nc.engines.NUTS(num_chains=4, num_warmup=1000,
                                                                   num_samples=1000), seed=seed)
    return 0.0, fit


def run(name: str, make: object, size: float, cpu_scale: float | None, seed: int) -> dict:
    t_build, fit = make(size, seed)
    cold, _ = _timed(fit)
    warm, _ = _timed(fit)
    row = {"workload": name, "device": str(jax.devices()[0]), "build_s": t_build,
           "cold_s": cold, "warm_s": warm}
    line = f"{name:<34} {row['device']:<16} cold {cold:8.2f} s  warm {warm:8.2f} s"
    if t_build:
        line += f"  (Annotations built in {t_build:.2f} s)"
    if cpu_scale is not None:
        cpu = jax.devices("cpu")[0]
        with jax.default_device(cpu):
            _, fit_c = make(size * cpu_scale, seed)
            _timed(fit_c)
            t_cpu, _ = _timed(fit_c)
        row.update(cpu_s_at_scale=t_cpu, cpu_scale=cpu_scale,
                   cpu_s_scaled=t_cpu / cpu_scale, ratio_cpu_over_device=t_cpu / cpu_scale
                   / warm)
        line += (f"  | CPU at {cpu_scale:g} of the size: {t_cpu:.2f} s, scaled linearly "
                 f"{t_cpu / cpu_scale:.1f} s ({t_cpu / cpu_scale / warm:.1f}x)")
    print(line, flush=True)
    return row


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="also time each workload on the CPU")
    ap.add_argument("--cpu-scale", type=float, default=0.1)
    ap.add_argument("--quick", action="store_true", help="sizes / 100 (smoke run)")
    ap.add_argument("--only", nargs="+", default=["em", "ece", "ece_sharded", "nuts"],
                    choices=["em", "ece", "ece_sharded", "nuts"])
    ap.add_argument("--seed", type=int, default=0)
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    f = 0.01 if args.quick else 1.0
    print(f"gpu_suite: jax {jax.__version__}, backend {jax.default_backend()}, devices "
          f"{jax.devices()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
          flush=True)
    rows = []
    cs = args.cpu_scale if args.cpu else None
    if "em" in args.only:
        rows.append(run("EM, 5e7 ratings (1e7 x 5, J=50)",
                        lambda s, seed: em_workload(int(1e7 * s), seed), f, cs, args.seed))
    if "ece" in args.only:
        rows.append(run("ECE bootstrap, n=1e7, K=10, B=1000",
                        lambda s, seed: ece_workload(int(1e7 * s), seed), f, cs, args.seed))
    if "ece_sharded" in args.only:
        rows.append(run(f"ECE Poisson bootstrap on {len(jax.devices())} dev.",
                        lambda s, seed: ece_sharded_workload(int(1e7 * s), seed), f, cs,
                        args.seed))
    if "nuts" in args.only:
        rows.append(run("NUTS DS K=10, CIFAR-10N 5,000",
                        lambda s, seed: nuts_workload(s, seed), f, cs, args.seed))
    write_result("gpu_suite", {"rows": rows, "quick": args.quick,
                               "backend": jax.default_backend()}, publish=args.publish)
    return {"rows": rows}


if __name__ == "__main__":
    main()
