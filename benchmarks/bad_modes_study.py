"""False alarms and detections of the channel checks (noisycal.engines.checks).

Good designs (annotators of accuracy 0.7-0.9, the Gaussian toy, the 1979 Dawid & Skene
data) must stay 'ok'; bad ones (an adversarial annotator, a near-random one, fits in a
label-swapped mode) must not. For each design and seed the script fits Dawid-Skene by EM
(NUTS for two designs with --nuts) and records the fit's status; for the binary designs
also the status of the ECE against the posterior target from the same fit (the chain
fit -> target -> Estimate).

Run: ``python benchmarks/bad_modes_study.py --seeds 30`` (about 5 minutes on 2 cores).
Results are printed and written to ``benchmarks/output/bad_modes_study.json``
(``--publish``: also ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py

import noisycal as nc

CHANNEL_CODES = ("adversarial_channel", "degenerate_channel")


def binary_design(name: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """False-positive rates a, true-positive rates b and fit options of a binary design."""
    designs = {
        # good: accuracies 0.7-0.9
        "good J=3": ([0.1, 0.15, 0.2], [0.85, 0.9, 0.8], {}),
        "good J=5": ([0.1, 0.15, 0.2, 0.3, 0.25], [0.85, 0.9, 0.8, 0.7, 0.75], {}),
        "toy (published rates)": (list(nc.simulate.GAUSSIAN_TOY_A),
                                  list(nc.simulate.GAUSSIAN_TOY_B), {}),
        # weak but honest: the channel codes must not fire (other statuses may)
        "weak J=3 (acc 0.65)": ([0.35] * 3, [0.65] * 3, {}),
        "weak J=5 (acc 0.65)": ([0.35] * 5, [0.65] * 5, {}),
        "weak J=5 (acc 0.6-0.7)": ([0.4, 0.3, 0.35, 0.3, 0.4], [0.6, 0.7, 0.65, 0.7, 0.6],
                                   {}),
        # bad
        "adversarial (3rd swapped)": ([0.1, 0.15, 0.8], [0.85, 0.9, 0.2], {}),
        "near-random J=3 (a=b=0.5)": ([0.1, 0.15, 0.5], [0.85, 0.9, 0.5], {}),
        "near-random J=4 (a=b=0.5)": ([0.1, 0.15, 0.2, 0.5], [0.85, 0.9, 0.8, 0.5], {}),
        "swapped mode: anchor adversarial": ([0.8, 0.1, 0.15], [0.2, 0.85, 0.9],
                                             {"anchor": 0}),
        "swapped mode: moment start on adversarial anchor": (
            [0.8, 0.1, 0.15], [0.2, 0.85, 0.9],
            {"anchor": 0, "init": "moments"}),
        "swapped mode: majority adversarial": ([0.1, 0.85, 0.8], [0.85, 0.15, 0.2], {}),
    }
    a, b, opts = designs[name]
    return np.asarray(a), np.asarray(b), opts


BINARY_GOOD = ("good J=3", "good J=5", "toy (published rates)", "weak J=3 (acc 0.65)",
               "weak J=5 (acc 0.65)", "weak J=5 (acc 0.6-0.7)")
BINARY_BAD = ("adversarial (3rd swapped)", "near-random J=3 (a=b=0.5)",
              "near-random J=4 (a=b=0.5)", "swapped mode: anchor adversarial",
              "swapped mode: moment start on adversarial anchor",
              "swapped mode: majority adversarial")


def kclass_channels(acc: list[float], rng: np.random.Generator, K: int = 4) -> np.ndarray:
    C = np.empty((len(acc), K, K))
    for j, a in enumerate(acc):
        off = rng.dirichlet(np.ones(K - 1), size=K) * (1 - a)
        for k in range(K):
            C[j, k, k] = a
            C[j, k, np.arange(K) != k] = off[k]
    return C


def run_binary(name: str, seed: int, n: int, method: str) -> tuple[str, str]:
    a, b, opts = binary_design(name)
    toy = nc.simulate.gaussian_toy(n, a=a, b=b, seed=seed)
    ann = nc.Annotations.from_wide(toy.annotations, classes=[0, 1])
    anchor = opts.get("anchor")
    if method == "nuts":
        engine = nc.engines.NUTS(num_chains=2, num_warmup=300, num_samples=300)
    else:
        engine = nc.engines.EM(**{k: v for k, v in opts.items() if k != "anchor"})
    fit = nc.DawidSkene(2).fit(ann, method=engine, anchor=anchor, seed=seed)
    est = nc.ece(toy.z, nc.targets.posterior(None, fit), n_bins=10,
                 interval=nc.intervals.Bootstrap(n_boot=50), seed=seed)
    return fit.status, est.status


def run_kclass(name: str, seed: int, n: int) -> str:
    rng = np.random.default_rng(seed)
    C = kclass_channels([0.5, 0.6, 0.55, 0.5] if "weak" in name else [0.7, 0.8, 0.9, 0.75],
                        rng)
    if name == "K=4 adversarial (4th permuted)":
        C[3] = C[3][:, [1, 0, 3, 2]]
    elif name == "K=4 near-random 4th":
        C[3] = 0.25
    sim = nc.simulate.dawid_skene(n, [0.4, 0.3, 0.2, 0.1], C, seed=seed)
    return nc.DawidSkene(4).fit(sim.annotations, seed=seed).status


def summary(name: str, statuses: list[str], bad: bool, extra: str = "") -> dict:
    counts = Counter(statuses)
    flagged = sum(counts[c] for c in CHANNEL_CODES)
    non_ok = sum(v for k, v in counts.items() if k != "ok")
    rate = non_ok / len(statuses)
    label = "detection (non-ok)" if bad else "false alarm (channel codes)"
    value = rate if bad else flagged / len(statuses)
    print(f"| {name} | {len(statuses)} | {label} {value:.2f} | "
          f"{', '.join(f'{k} {v}' for k, v in counts.most_common())} |{extra}")
    return {"design": name, "runs": len(statuses), "bad": bad,
            "statuses": dict(counts.most_common()), "channel_flags": flagged,
            "non_ok": non_ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--n-items", type=int, default=2000)
    parser.add_argument("--nuts", action="store_true", help="also NUTS on two designs")
    parser.add_argument("--only", default="", help="run the designs whose name has this")
    add_publish_argument(parser)
    args = parser.parse_args()
    rows = []
    warnings.simplefilter("ignore")
    t0 = time.time()
    print("| design | runs | rate | fit statuses | ECE vs posterior target |")
    print("|---|---|---|---|---|")
    for name in (d for d in BINARY_GOOD + BINARY_BAD if args.only in d):
        fits, ests = zip(*(run_binary(name, s, args.n_items, "em")
                           for s in range(args.seeds)), strict=True)
        ok_est = sum(e == "ok" for e in ests)
        rows.append(summary(name, list(fits), name in BINARY_BAD, f" {ok_est} ok Estimates |")
                    | {"method": "em", "ok_estimates": ok_est})
    for name in (d for d in ("K=4 good (acc 0.7-0.9)", "K=4 weak (acc 0.5-0.6)",
                             "K=4 adversarial (4th permuted)", "K=4 near-random 4th")
                 if args.only in d):
        fits = [run_kclass(name, s, args.n_items // 2) for s in range(args.seeds)]
        rows.append(summary(name, fits, "good" not in name and "weak" not in name, " |")
                    | {"method": "em", "ok_estimates": None})
    ds = nc.datasets.load_dawid_skene_1979()
    for model in () if args.only else (nc.DawidSkene(4), nc.OneCoinDawidSkene(4)):
        fit = model.fit(ds)
        print(f"| 1979 data, {type(model).__name__} EM | 1 | | {fit.status} | |")
        rows.append({"design": f"1979 data, {type(model).__name__}", "runs": 1, "bad": False,
                     "statuses": {fit.status: 1}, "method": "em", "ok_estimates": None})
    if args.nuts:
        for name in (d for d in ("good J=3", "adversarial (3rd swapped)") if args.only in d):
            k = max(3, args.seeds // 5)
            fits, ests = zip(*(run_binary(name, s, args.n_items, "nuts") for s in range(k)),
                             strict=True)
            ok_est = sum(e == "ok" for e in ests)
            rows.append(summary(f"NUTS: {name}", list(fits), name in BINARY_BAD,
                                f" {ok_est} ok Estimates |")
                        | {"method": "nuts", "ok_estimates": ok_est})
    print(f"\n{time.time() - t0:.0f} s")
    write_result("bad_modes_study", {"seeds": args.seeds, "n_items": args.n_items,
                                     "nuts": args.nuts, "only": args.only, "rows": rows,
                                     "seconds": time.time() - t0}, publish=args.publish)


if __name__ == "__main__":
    main()
