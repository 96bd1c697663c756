"""Coverage study: the NC-ECE under each annotator model's fit, and model-averaged.

The estimand is the population top-label binned ECE against the *true* labels (15
equal-width bins, the library's default) of a three-class classifier
(:func:`noisycal.simulate.classifier`, temperature 1 'calibrated' or 0.6
'overconfident'), which the noise-corrected target estimates from three annotators' labels
of the same n = 400 items, the channels fitted on those items. Each design draws the
annotators' labels from the model that is fitted, 'strong' or 'weak':

* ``ds``: full Dawid–Skene channels (accuracies 0.85/0.75/0.80 'strong', 0.65/0.55/0.60
  'weak', by true class; the errors split 2:1 between the other two classes, the larger
  share on the lower class for annotators 1 and 3, on the higher for annotator 2);
* ``class_conditional``: one accuracy per annotator and class (errors split evenly);
* ``mace``: MACE channels (spamming probabilities 0.2/0.3/0.25 'strong', 0.45/0.5/0.4
  'weak', and a spamming strategy per annotator).

The intervals (90%), one column each (``--fits`` picks some):

* ``nuts_ds``, ``nuts_hierarchical``: the default interval under a NUTS fit of
  Dawid–Skene / the hierarchical model (2 chains x (300 + 500) draws) of the ``ds``
  labels: the inverted test whose null carries the channel error through the influence of
  the items on the posterior mean (:func:`noisycal.engines.influence.posterior_influence`);
* ``credible_ds``: ``interval='credible'`` under the NUTS Dawid–Skene fit (status
  'plugin_bias' always);
* ``em_class_conditional``, ``em_mace``: the default interval under EM fits of the
  class-conditional model to the ``class_conditional`` labels and of MACE to the ``mace``
  labels (the sandwich influence);
* ``averaged_bic``: :func:`noisycal.compare_calibration` of EM fits of Dawid–Skene and
  one-coin to the ``ds`` labels, ``ic='bic'`` (Akaike weights), its default
  model-averaged NC-ECE (the mixture of the per-model inverted tests);
* ``averaged_loo``: the same for the NUTS fits of Dawid–Skene and the hierarchical model,
  ``ic='loo'`` (stacking weights);
* ``em_glad``: the default interval under an EM fit of GLAD to the ``class_conditional``
  labels (errors spread evenly, as GLAD has them, but accuracies that differ by class
  and no item effects, so GLAD is misspecified here): the corrected target uses GLAD's
  item-averaged channels (status 'averaged_channels' always) and the interval carries
  their sampling error (the profile sandwich);
* ``em_classifier_informed``: the default interval under an EM fit of the
  classifier-informed Dawid–Skene model to the ``ds`` labels, its item priors from a
  second, held-out classifier's logits on the same items (``2 * onehot(y) + N(0, 1)``),
  so the target is not circular for the classifier whose ECE is estimated;
* ``averaged_mixture``: ``average='mixture'`` of the NUTS fits (the earlier default:
  the mixture of credible distributions; status 'plugin_bias' always; not in the
  default ``--fits``).

Usage::

    python benchmarks/coverage_nc_ece_models.py --reps 40
    python benchmarks/coverage_nc_ece_models.py --reps 40 --cells calibrated/strong

Writes ``benchmarks/output/coverage_nc_ece_models_<tag>.json`` after every cell. Not a
timing.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import noisycal as nc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coverage_nc_ece import population, summarise  # noqa: E402  (benchmarks/)

K = 3
N_ITEMS = 400
N_BINS = 15
DESIGNS = [f"{c}/{s}" for c in ("calibrated", "overconfident") for s in ("strong", "weak")]
FITS = ("nuts_ds", "nuts_hierarchical", "credible_ds", "em_class_conditional", "em_mace",
        "averaged_bic", "averaged_loo", "averaged_mixture", "em_glad",
        "em_classifier_informed")
#: Not in the default ``--fits``.
EXTRA = ("averaged_mixture", "em_glad", "em_classifier_informed")
NUTS = nc.engines.NUTS(num_chains=2, num_warmup=300, num_samples=500)


def channels(family: str, strength: str) -> np.ndarray:
    """Three annotators' confusion matrices ``[j, true, observed]`` of one family."""
    strong = strength == "strong"
    C = np.zeros((3, K, K))
    if family == "ds":
        acc = np.array([[0.85, 0.75, 0.80], [0.80, 0.85, 0.75], [0.75, 0.80, 0.85]])
        acc = acc if strong else acc - 0.2
        for j in range(3):
            for t in range(K):
                a, b = [c for c in range(K) if c != t][::1 if j % 2 == 0 else -1]
                C[j, t, t] = acc[j, t]
                C[j, t, a], C[j, t, b] = 2 * (1 - acc[j, t]) / 3, (1 - acc[j, t]) / 3
        return C
    if family == "class_conditional":
        acc = np.array([[0.85, 0.70, 0.80], [0.75, 0.80, 0.70], [0.90, 0.65, 0.75]])
        acc = acc if strong else acc - 0.2
        for j in range(3):
            C[j] = (1 - acc[j])[:, None] / (K - 1)
            np.fill_diagonal(C[j], acc[j])
        return C
    spam = np.array([0.2, 0.3, 0.25]) if strong else np.array([0.45, 0.5, 0.4])
    strategy = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.4, 0.4, 0.2]])
    return spam[:, None, None] * strategy[:, None, :] + (1 - spam)[:, None, None] * np.eye(K)


def annotate(y: np.ndarray, C: np.ndarray, seed: int) -> nc.Annotations:
    """Every annotator's label of every item, drawn from their channels."""
    rng = np.random.default_rng(seed)
    cum = np.cumsum(C[:, y, :], axis=2)
    lab = np.minimum((rng.random((C.shape[0], y.size, 1)) >= cum).sum(2), K - 1)
    return nc.Annotations.from_wide(lab.T, classes=list(range(K)))


def _row(e: nc.intervals.Estimate) -> tuple:
    return (e.low, e.high, float(e), e.status)


def one_run(design: str, seed: int, fits: tuple) -> dict:
    """Every requested interval of one replication: {fit: (low, high, value, status)}."""
    cal, strength = design.split("/")
    sim = nc.simulate.classifier(N_ITEMS, K, temperature=1.0 if cal == "calibrated" else 0.6,
                                 seed=seed)
    P, y = sim.probs, sim.labels
    kw = {"n_bins": N_BINS, "seed": seed}
    out: dict = {"fit_status": "ok"}
    ann = {f: annotate(y, channels(f, strength), seed + 1_000_003 * (i + 1))
           for i, f in enumerate(("ds", "class_conditional", "mace"))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuts: dict = {}
        if {"nuts_ds", "credible_ds", "averaged_loo", "averaged_mixture"} & set(fits):
            nuts["ds"] = nc.DawidSkene(K).fit(ann["ds"], method=NUTS, seed=seed)
        if {"nuts_hierarchical", "averaged_loo", "averaged_mixture"} & set(fits):
            nuts["hierarchical"] = nc.annotators.HierarchicalDawidSkene(K).fit(
                ann["ds"], method=NUTS, seed=seed)
        for f in fits:
            try:
                if f == "nuts_ds":
                    e = nc.ece(P, nc.targets.corrected(ann["ds"], nuts["ds"]), **kw)
                elif f == "nuts_hierarchical":
                    e = nc.ece(P, nc.targets.corrected(ann["ds"], nuts["hierarchical"]), **kw)
                elif f == "credible_ds":
                    e = nc.ece(P, nc.targets.corrected(ann["ds"], nuts["ds"]),
                               interval="credible", **kw)
                elif f in ("em_class_conditional", "em_mace"):
                    family = f[3:]
                    model = (nc.annotators.ClassConditionalDawidSkene(K)
                             if family == "class_conditional" else nc.annotators.MACE(K))
                    fit = model.fit(ann[family], seed=seed)
                    e = nc.ece(P, nc.targets.corrected(ann[family], fit), **kw)
                elif f == "em_glad":
                    fit = nc.annotators.GLAD(K).fit(ann["class_conditional"], seed=seed)
                    e = nc.ece(P, nc.targets.corrected(ann["class_conditional"], fit), **kw)
                elif f == "em_classifier_informed":
                    rng = np.random.default_rng(seed + 7_000_001)
                    Z = 2.0 * np.eye(K)[y] + rng.normal(size=(y.size, K))
                    fit = nc.annotators.ClassifierInformedDawidSkene(K).fit(
                        ann["ds"], logits=Z, seed=seed)
                    e = nc.ece(P, nc.targets.corrected(ann["ds"], fit), **kw)
                elif f == "averaged_bic":
                    em = {"ds": nc.DawidSkene(K).fit(ann["ds"], seed=seed),
                          "one_coin": nc.OneCoinDawidSkene(K).fit(ann["ds"], seed=seed)}
                    e = nc.compare_calibration(em, ann["ds"], P, ic="bic", **kw).averaged
                else:
                    average = "mixture" if f == "averaged_mixture" else "inversion"
                    e = nc.compare_calibration(nuts, ann["ds"], P, average=average,
                                               **kw).averaged
                out[f] = _row(e)
            except ValueError as exc:
                out[f] = (np.nan, np.nan, np.nan, f"refused: {exc}"[:80])
    return out


def main(argv: list[str] | None = None) -> dict:
    from _output import add_publish_argument, write_result  # benchmarks/_output.py

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--cells", default="", help="comma-separated designs, e.g. "
                    "calibrated/strong (default: all four)")
    ap.add_argument("--fits", default=",".join(f for f in FITS if f not in EXTRA),
                    help=f"comma-separated, of {', '.join(FITS)}")
    ap.add_argument("--tag", default="grid")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    fits = tuple(f for f in args.fits.split(",") if f)
    unknown = set(fits) - set(FITS)
    if unknown:
        ap.error(f"unknown fits {sorted(unknown)}")
    cells = args.cells.split(",") if args.cells else DESIGNS
    result: dict = {"reps": args.reps, "fits": fits, "n_items": N_ITEMS, "n_bins": N_BINS,
                    "cells": {}}
    for design in cells:
        pop = population(K, design.startswith("calibrated"), N_BINS)
        t0 = time.perf_counter()
        runs = [one_run(design, r, fits) for r in range(args.reps)]
        summ = summarise(runs, pop, fits)
        summ.pop("fit_statuses", None)
        for f in fits:
            if f in summ:
                summ[f]["statuses"] = {}
                for r in runs:
                    st = r[f][3]
                    summ[f]["statuses"][st] = summ[f]["statuses"].get(st, 0) + 1
        summ.update(population_ece=pop, seconds=time.perf_counter() - t0)
        result["cells"][design] = summ
        print(f"{design} n={N_ITEMS} ECE={pop:.4f} ({summ['seconds']:.0f} s)", flush=True)
        for f in fits:
            s = summ.get(f)
            if s:
                print(f"   {f:22s} cover {s['coverage']:.3f} (ok-only {s['coverage_ok']}, "
                      f"ok {s['share_ok']:.2f}) lo>pop {s['low_above']:.2f} "
                      f"hi<pop {s['high_below']:.2f} width {s['mean_width']:.4f} "
                      f"value {s['mean_value']:.4f}", flush=True)
        write_result(f"coverage_nc_ece_models_{args.tag}", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
