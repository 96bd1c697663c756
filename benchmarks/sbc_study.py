"""Simulation-based calibration of the Dawid–Skene NUTS fits: a larger study.

Cells (``nc.annotators.sbc``; each simulation draws parameters and ratings from the
model's prior, fits with NUTS under the same priors, and ranks the truth among the
thinned draws):

- ``ds_k2``: ``DawidSkene()`` with two classes, 30 items x 3 annotators (every annotator
  rates every item), 2 chains x (200 warmup + 200 draws), thinned by 4 (L = 100).
- ``ds_k3``: ``DawidSkene()`` with three classes, 40 items x 4 annotators, 3 ratings per
  item (the design drawn once), same sampler settings.
- ``one_coin_k3``: ``OneCoinDawidSkene()``, the ``ds_k3`` design.
- ``item_difficulty_k2``: ``ItemDifficultyModel()`` with two classes, 30 items x 4
  annotators (every annotator rates every item); ranks of the prevalence, the ability
  hyperparameters, the difficulty spread and each ability.
- ``wrong_prior_k2``: the ``ds_k2`` cell simulated from ``DawidSkene(alpha=[12, 1])``
  while the fit keeps the default prior: it must come out ``non_uniform``.

Printed per cell: status, the smallest chi-square and ECDF p-values with the parameter,
failed fits (R-hat > 1.05 or divergences), simulations with relabelled draws, the
compile (first simulation) and median per-simulation seconds.

Run: ``nice -n 10 python benchmarks/sbc_study.py [--cells ds_k2,ds_k3,one_coin_k3,
item_difficulty_k2,wrong_prior_k2] [--n-sims 200] [--out sbc_study]``. Results:
``benchmarks/output/<out>.json``, rewritten after every cell.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import noisycal as nc

try:
    from _output import add_publish_argument, write_result
except ImportError:  # run from the repository root as a module
    from benchmarks._output import add_publish_argument, write_result

SAMPLER = dict(num_chains=2, num_warmup=200, num_samples=200)
THIN = 4
CELLS = {
    "ds_k2": (lambda: nc.DawidSkene(), None,
              dict(n_items=30, n_annotators=3, n_classes=2)),
    "ds_k3": (lambda: nc.DawidSkene(), None,
              dict(n_items=40, n_annotators=4, n_classes=3, ratings_per_item=3)),
    "one_coin_k3": (lambda: nc.OneCoinDawidSkene(), None,
                    dict(n_items=40, n_annotators=4, n_classes=3, ratings_per_item=3)),
    "item_difficulty_k2": (lambda: nc.annotators.ItemDifficultyModel(), None,
                           dict(n_items=30, n_annotators=4, n_classes=2)),
    "wrong_prior_k2": (lambda: nc.DawidSkene(), lambda: nc.DawidSkene(alpha=[12.0, 1.0]),
                       dict(n_items=30, n_annotators=3, n_classes=2)),
}


def run_cell(name: str, n_sims: int, seed: int) -> dict:
    model, prior, sizes = CELLS[name]
    t0 = time.perf_counter()
    res = nc.annotators.sbc(model(), n_sims=n_sims, seed=seed,
                            prior_model=None if prior is None else prior(), **sizes,
                            thin=THIN, method=nc.engines.NUTS(**SAMPLER, rhat_threshold=1.05))
    sec = res.diagnostics["seconds"].to_numpy()
    tests = res.tests
    out = {"status": res.status, "message": res.message, "n_sims": n_sims,
           "n_draws": res.n_draws, "n_params": int(tests.shape[0]),
           "min_chi2_p": float(tests["chi2_p"].min()),
           "min_chi2_p_param": str(tests["chi2_p"].idxmin()),
           "min_ecdf_p": float(tests["ecdf_p"].min()),
           "min_ecdf_p_param": str(tests["ecdf_p"].idxmin()),
           "failed_fits": res.n_failed,
           "sims_relabelled": int((res.diagnostics["relabelled_draws"] > 0).sum()),
           "first_sim_s": float(sec[0]), "median_sim_s": float(np.median(sec[1:])),
           "total_s": time.perf_counter() - t0, **sizes, **SAMPLER, "thin": THIN,
           "tests": {p: {k: float(v) for k, v in row.items()}
                     for p, row in tests.iterrows()}}
    print(f"{name}: {res.status} | min chi2 p {out['min_chi2_p']:.3g} "
          f"({out['min_chi2_p_param']}) | min ECDF p {out['min_ecdf_p']:.3g} "
          f"({out['min_ecdf_p_param']}) | failed fits {res.n_failed}/{n_sims} | "
          f"relabelled sims {out['sims_relabelled']} | first {sec[0]:.1f} s, median "
          f"{out['median_sim_s']:.3f} s/sim, total {out['total_s']:.0f} s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", default=",".join(CELLS))
    parser.add_argument("--n-sims", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="sbc_study")
    add_publish_argument(parser)
    args = parser.parse_args()
    results: dict = {}
    for name in args.cells.split(","):
        results[name] = run_cell(name, args.n_sims, args.seed)
        write_result(args.out, results, publish=args.publish)


if __name__ == "__main__":
    main()
