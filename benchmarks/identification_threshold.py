"""Simulation study behind the default ``weak_threshold`` of the identification check.

For each design, ``--seeds`` seeded data sets are simulated, fitted by Dawid–Skene EM
(or the Hui–Walter GMM) and the relative information ``r`` of
:mod:`noisycal.engines.identification` is computed at the estimate, whatever the fit's
status (``weak_threshold=0`` so that only the number is recorded). The designs:

* ``well``: identified designs that must stay 'ok' (binary and multi-class, missing
  ratings, imbalanced prevalence, one-coin, score groups, the Gaussian toy of
  "Noisy-Label Calibration with Multiple Unreliable Labels"), at small and moderate n;
* ``weak``: the failure of the issue (three binary annotators, two with gap 0.03 beside
  a good one) and the Hui–Walter model with nearly equal group prevalences;
* ``between``: the same three annotators with gaps 0.1 and 0.2.

``--population`` also prints r at the EM estimate on n = 200,000 items of some designs
(the design's own value, nearly free of sampling noise).

Usage::

    python benchmarks/identification_threshold.py --seeds 30 [--population]

Prints, per design, the minimum, median and maximum of r and the number of seeds below
each candidate threshold, and writes ``benchmarks/output/identification_threshold.json``.

Measured (30 seeds, about 25 minutes on the shared 2-core machine):

* well-identified, smallest r per design: binary J=3 n=100 0.042, n=500 0.061, prevalence
  0.1 0.026, five 70%-accurate annotators rating 60% of 200 items 0.0089, K=3 with
  missing ratings 0.015, one-coin 0.095, Gaussian toy 0.21, grouped DS and Hui–Walter
  GMM 0.070. Fits below 0.005 / 0.01 / 0.02: 0 / 1 / 9 of 270.
* weak designs, fits that every earlier check passed ('ok') and that r < 0.005 flags:
  issue design n = 500 9 of 14 (16 of 30 did not converge), n = 2000 12 of 13;
  Hui–Walter with mu 0.45 / 0.5 5 of 5, mu 0.4 / 0.5 9 of 14; gaps 0.1 8 of 13. The
  Hui–Walter and gaps-0.1 misses lie just above the threshold (r 0.005-0.009); the issue
  design's six misses (r 0.018-0.92) are degenerate boundary solutions, a latent class of
  2-5% whose channel rates sit at 0 or 1: held fixed, the rest looks identified.
* population r (n = 200,000): issue design 2.4e-5, gaps 0.1 2.0e-4, gaps 0.2 1.6e-3,
  five 70% annotators 0.017, prevalence 0.1 0.058, binary J=3 0.10, K=3 0.12, Gaussian
  toy 0.29. The default 0.005 sits between the gap-0.2 design and the crowd of five
  70%-accurate annotators (their geometric mean is 0.0052).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

import noisycal as nc
from noisycal.engines.identification import dawid_skene_identification

CANDIDATES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)


def binary(a: list[float], b: list[float]) -> np.ndarray:
    return np.stack([np.array([[1 - x, x], [1 - y, y]]) for x, y in zip(a, b, strict=True)])


def diag_conf(acc: list[float], K: int) -> np.ndarray:
    return np.stack([np.full((K, K), (1 - p) / (K - 1)) + (p - (1 - p) / (K - 1)) * np.eye(K)
                     for p in acc])


def ds_case(n: int, prev: list[float], conf: np.ndarray, *, p_rate: float = 1.0,
            model: str = "ds") -> callable:
    def run(seed: int) -> tuple[float, str]:
        sim = nc.simulate.dawid_skene(n, prev, conf, p_rate=p_rate, seed=seed)
        one = model == "one_coin"
        cls = nc.OneCoinDawidSkene if one else nc.DawidSkene
        fit = cls(len(prev)).fit(sim.annotations, seed=seed,
                                 method=nc.engines.EM(weak_threshold=0.0))
        idf = dawid_skene_identification(sim.annotations, fit.group_prevalence,
                                         fit.confusion, one_coin=one, threshold=0.0)
        return idf.relative_information, fit.status
    return run


def grouped_case(n: int, mus: list[float], conf: np.ndarray, method: str) -> callable:
    prev = np.array([[1 - m, m] for m in mus])
    gp = np.full(len(mus), 1 / len(mus))

    def run(seed: int) -> tuple[float, str]:
        sim = nc.simulate.dawid_skene(n, prev, conf, group_probs=gp, seed=seed)
        if method == "gmm":
            fit = nc.HuiWalter().fit(sim.annotations, groups=sim.group,
                                     method=nc.engines.GMM(weak_threshold=0.0))
        else:
            fit = nc.GroupedDawidSkene(2).fit(sim.annotations, groups=sim.group, seed=seed,
                                              method=nc.engines.EM(weak_threshold=0.0))
        ident = fit.details["identification"]
        r = ident.get("relative_information", np.nan)
        if method != "gmm" and not ident["checked"]:
            r = dawid_skene_identification(sim.annotations, fit.group_prevalence,
                                           fit.confusion, group=sim.group,
                                           threshold=0.0).relative_information
        return r, fit.status
    return run


def toy_case(n: int) -> callable:
    def run(seed: int) -> tuple[float, str]:
        t = nc.simulate.gaussian_toy(n, seed=seed)
        ann = nc.Annotations.from_wide(t.annotations, classes=[0, 1])
        fit = nc.DawidSkene(2).fit(ann, seed=seed, method=nc.engines.EM(weak_threshold=0.0))
        idf = dawid_skene_identification(ann, fit.group_prevalence, fit.confusion,
                                         threshold=0.0)
        return idf.relative_information, fit.status
    return run


GOOD3 = binary([0.10, 0.20, 0.15], [0.85, 0.80, 0.70])
WEAK3 = binary([0.10, 0.30, 0.45], [0.85, 0.33, 0.48])
HW = binary([0.10, 0.20], [0.85, 0.75])
DESIGNS = {
    "well": {
        "binary J=3 n=100": ds_case(100, [0.5, 0.5], GOOD3),
        "binary J=3 n=500": ds_case(500, [0.5, 0.5], GOOD3),
        "binary J=3 prev 0.1 n=500": ds_case(500, [0.9, 0.1], GOOD3),
        "binary J=5 gaps 0.4 p_rate 0.6 n=200": ds_case(
            200, [0.6, 0.4], binary([0.3] * 5, [0.7] * 5), p_rate=0.6),
        "K=3 J=4 acc 0.75 p_rate 0.7 n=300": ds_case(
            300, [0.5, 0.3, 0.2], diag_conf([0.7, 0.75, 0.8, 0.75], 3), p_rate=0.7),
        "one-coin K=3 J=3 acc 0.7 n=200": ds_case(
            200, [0.4, 0.35, 0.25], diag_conf([0.7, 0.7, 0.7], 3), model="one_coin"),
        "gaussian toy n=500": toy_case(500),
        "grouped DS J=2 mu 0.2/0.8 n=1000": grouped_case(1000, [0.2, 0.8], HW, "em"),
        "Hui-Walter GMM mu 0.2/0.8 n=1000": grouped_case(1000, [0.2, 0.8], HW, "gmm"),
    },
    "weak": {
        "issue design n=500": ds_case(500, [0.5, 0.5], WEAK3),
        "issue design n=2000": ds_case(2000, [0.5, 0.5], WEAK3),
        "Hui-Walter GMM mu 0.45/0.5 n=1000": grouped_case(1000, [0.45, 0.5], HW, "gmm"),
        "Hui-Walter GMM mu 0.4/0.5 n=1000": grouped_case(1000, [0.4, 0.5], HW, "gmm"),
    },
    "between": {
        "gaps 0.85-0.1, 0.1, 0.1 n=500": ds_case(
            500, [0.5, 0.5], binary([0.10, 0.30, 0.45], [0.85, 0.40, 0.55])),
        "gaps 0.85-0.1, 0.2, 0.2 n=500": ds_case(
            500, [0.5, 0.5], binary([0.10, 0.30, 0.45], [0.85, 0.50, 0.65])),
    },
}


POPULATION = {
    "issue design": ([0.5, 0.5], WEAK3, 1.0),
    "gaps 0.1": ([0.5, 0.5], binary([0.10, 0.30, 0.45], [0.85, 0.40, 0.55]), 1.0),
    "gaps 0.2": ([0.5, 0.5], binary([0.10, 0.30, 0.45], [0.85, 0.50, 0.65]), 1.0),
    "five 70% annotators, p_rate 0.6": ([0.6, 0.4], binary([0.3] * 5, [0.7] * 5), 0.6),
    "binary J=3 prev 0.1": ([0.9, 0.1], GOOD3, 1.0),
    "binary J=3": ([0.5, 0.5], GOOD3, 1.0),
    "K=3 J=4 p_rate 0.7": ([0.5, 0.3, 0.2], diag_conf([0.7, 0.75, 0.8, 0.75], 3), 0.7),
}


def population(n: int = 200_000) -> dict:
    out = {}
    for name, (prev, conf, p_rate) in POPULATION.items():
        sim = nc.simulate.dawid_skene(n, prev, conf, p_rate=p_rate, seed=0)
        fit = nc.DawidSkene(len(prev)).fit(sim.annotations,
                                           method=nc.engines.EM(n_starts=3, weak_threshold=0.0))
        r = dawid_skene_identification(sim.annotations, fit.group_prevalence,
                                       fit.confusion, threshold=0.0).relative_information
        out[name] = r
        print(f"population {name:36s} r {r:.2e} ({fit.status})")
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=30, help="data sets per design")
    ap.add_argument("--population", action="store_true", help="r on 200,000 items")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    out: dict = {"seeds": args.seeds, "candidates": CANDIDATES, "designs": {}}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, cases in DESIGNS.items():
            for name, run in cases.items():
                rs, statuses = zip(*(run(s) for s in range(args.seeds)), strict=True)
                r = np.asarray(rs, dtype=float)
                below = {str(c): int(np.sum(~(r >= c))) for c in CANDIDATES}
                out["designs"][name] = {"kind": kind, "r": r.tolist(),
                                        "statuses": list(statuses), "below": below}
                print(f"{kind:8s} {name:40s} r min {np.nanmin(r):.2e} median "
                      f"{np.nanmedian(r):.2e} max {np.nanmax(r):.2e}  below: "
                      + " ".join(f"{c:g}:{below[str(c)]}" for c in CANDIDATES))
        if args.population:
            out["population"] = population()
    out["seconds"] = time.perf_counter() - t0
    write_result("identification_threshold", out, publish=args.publish)
    return out


if __name__ == "__main__":
    main()
