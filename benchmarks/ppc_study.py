"""Posterior predictive checks under the true model, and EM against NUTS on CIFAR-10N.

Two parts (``--parts``):

* ``sim``: how often :func:`noisycal.annotators.ppc` rejects a model that is true.
  Ratings of n = 300 items by three annotators are drawn from a Dawid–Skene model (three
  classes, prevalence 0.5/0.3/0.2, accuracies 0.80/0.70/0.75 with the errors split
  evenly) and the same model is fitted by EM (the check's default for EM fits:
  replicates from EM refits on bootstrap resamples, ``parameters='refits'``), by EM with
  the plug-in replicates (``parameters='plug-in'``) and by NUTS (2 chains x (300 + 500)
  draws: replicates from the posterior). For every discrepancy family the ppp of each
  row (``P(T(y_rep) >= T(y))``) is pooled over rows and runs: the share below 0.025 or
  above 0.975 (a two-sided rejection at 0.05), the mean and the standard deviation
  (0.5 and 0.289 for a uniform ppp). Posterior predictive p-values are not uniform
  under the true model in general: they concentrate near 0.5 because the data are used
  twice (Meng 1994, "Posterior predictive p-values"), so a rejection rate below 0.05
  is expected of the posterior and refit checks, and above it of the plug-in check.
* ``cifar10n``: Dawid–Skene fitted by EM and by NUTS (2 chains x (1000 + 1000)) to the
  first 5,000 CIFAR-10N images (three human labels each, ``../shared/data``; skipped
  when absent), and the unanimity and distinct-labels ppp of the plug-in, refit and
  posterior checks side by side; and the plug-in check of a MAP-EM fit under the NUTS
  fit's default priors (Stan's weakly informative Dirichlet priors, plus one
  pseudo-count so that the mode is the posterior mean's): the prior, not the parameter
  uncertainty, is what separates the EM and NUTS checks there.

Usage::

    python benchmarks/ppc_study.py --reps 40
    python benchmarks/ppc_study.py --parts cifar10n

Writes ``benchmarks/output/ppc_study.json``. Not a timing.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import noisycal as nc
from noisycal.models.dawid_skene import default_priors

K = 3
N_ITEMS = 300
PREVALENCE = [0.5, 0.3, 0.2]
ACCURACY = [0.80, 0.70, 0.75]
NUTS_SIM = nc.engines.NUTS(num_chains=2, num_warmup=300, num_samples=500)
NUTS_REAL = nc.engines.NUTS(num_chains=2, num_warmup=1000, num_samples=1000)
N_REP = 500
CHECKS = ("em_refits", "em_plugin", "nuts")


def channels() -> np.ndarray:
    """The three annotators' confusion matrices (errors split evenly)."""
    C = np.zeros((3, K, K))
    for j, a in enumerate(ACCURACY):
        C[j] = (1 - a) / (K - 1)
        np.fill_diagonal(C[j], a)
    return C


def one_run(seed: int, checks: tuple = CHECKS) -> dict:
    """The ppp of every table row under each check: {check: {(family, term): ppp}}."""
    ann = nc.simulate.dawid_skene(N_ITEMS, PREVALENCE, channels(), seed=seed).annotations
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = nc.DawidSkene(K).fit(ann, seed=seed)
        nuts = (nc.DawidSkene(K).fit(ann, method=NUTS_SIM, seed=seed)
                if "nuts" in checks else None)
        for c in checks:
            fit, parameters = ((nuts, "auto") if c == "nuts" else
                               (em, "refits" if c == "em_refits" else "plug-in"))
            res = nc.annotators.ppc(fit, ann, n_rep=N_REP, seed=seed, parameters=parameters)
            t = res.table
            out[c] = {"method": res.method, "fit_status": fit.status,
                      "ppp": {f"{d}|{term}": float(p) for d, term, p in
                              zip(t["discrepancy"], t["term"], t["ppp"], strict=True)}}
    return out


def summarise(runs: list[dict], checks: tuple) -> list[dict]:
    """Per check and discrepancy family: rejection rates, mean and sd of the ppp."""
    rows = []
    for c in checks:
        fams: dict = {}
        for r in runs:
            for key, p in r[c]["ppp"].items():
                fams.setdefault(key.split("|")[0], []).append(p)
        for fam, ps in fams.items():
            p = np.asarray(ps, float)
            p = p[np.isfinite(p)]
            rows.append({"check": c, "method": runs[0][c]["method"], "discrepancy": fam,
                         "n_ppp": int(p.size),
                         "reject_two_sided": float(np.mean((p < 0.025) | (p > 0.975))),
                         "below_0.05": float(np.mean(p < 0.05)),
                         "above_0.95": float(np.mean(p > 0.95)),
                         "mean": float(np.mean(p)), "sd": float(np.std(p, ddof=1))})
    return rows


def cifar10n(n: int = 5000, seed: int = 0) -> dict | None:
    """EM and NUTS Dawid–Skene on CIFAR-10N's first ``n`` images: unanimity and
    distinct-labels ppp of the plug-in, refit and posterior checks; None without data."""
    try:
        c10n = nc.datasets.load_cifar10n()
    except FileNotFoundError:
        return None
    ann = nc.Annotations.from_wide(c10n.labels[:n])
    fams = ["unanimity", "distinct_labels"]
    out: dict = {"n_items": ann.n_items}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = nc.DawidSkene(10).fit(ann, seed=seed)
        nuts = nc.DawidSkene(10).fit(ann, method=NUTS_REAL, seed=seed)
        out["fit_status"] = {"em": em.status, "nuts": nuts.status}
        for name, fit, par in (("em_plugin", em, "plug-in"), ("em_refits", em, "refits"),
                               ("nuts", nuts, "auto")):
            res = nc.annotators.ppc(fit, ann, n_rep=N_REP, seed=seed, discrepancies=fams,
                                    parameters=par)
            t = res.table
            out[name] = [{"discrepancy": d, "term": str(term), "observed": float(o),
                          "replicated_mean": float(m), "low": float(lo), "high": float(hi),
                          "ppp": float(p)}
                         for d, term, o, m, lo, hi, p in zip(
                             t["discrepancy"], t["term"], t["observed"],
                             t["replicated_mean"], t["low"], t["high"], t["ppp"],
                             strict=True)]
        # the prior: MAP-EM under NUTS's default Dirichlet priors plus one pseudo-count
        # (its mode is the posterior mean's), checked at its estimate
        a, b = default_priors(10)
        map_em = nc.DawidSkene(10, alpha=a + 1, beta=b + 1).fit(ann, seed=seed)
        res = nc.annotators.ppc(map_em, ann, n_rep=N_REP, seed=seed, discrepancies=fams,
                                parameters="plug-in")
        t = res.table
        out["map_em_prior_plugin"] = [
            {"discrepancy": d, "term": str(term), "observed": float(o),
             "replicated_mean": float(m), "low": float(lo), "high": float(hi), "ppp": float(p)}
            for d, term, o, m, lo, hi, p in zip(t["discrepancy"], t["term"], t["observed"],
                                                t["replicated_mean"], t["low"], t["high"],
                                                t["ppp"], strict=True)]
        out["mean_accuracy"] = {
            name: float(np.mean(np.diagonal(f.confusion, axis1=1, axis2=2)))
            for name, f in (("em", em), ("nuts", nuts), ("map_em_prior", map_em))}
    # the parameters behind the two fits' replicates: how far apart they are
    out["max_abs_confusion_diff"] = float(np.max(np.abs(em.confusion - nuts.confusion)))
    out["max_abs_prevalence_diff"] = float(np.max(np.abs(em.prevalence - nuts.prevalence)))
    return out


def main(argv: list[str] | None = None) -> dict:
    from _output import add_publish_argument, write_result  # benchmarks/_output.py

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--parts", default="sim,cifar10n")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    parts = args.parts.split(",")
    result: dict = {}
    if "sim" in parts:
        t0 = time.perf_counter()
        runs = [one_run(r) for r in range(args.reps)]
        rows = summarise(runs, CHECKS)
        result["sim"] = {"reps": args.reps, "n_items": N_ITEMS, "n_rep": N_REP, "rows": rows,
                         "fit_status": {c: sorted({r[c]["fit_status"] for r in runs})
                                        for c in CHECKS},
                         "seconds": time.perf_counter() - t0}
        for r in rows:
            print(f"{r['check']:10s} {r['discrepancy']:20s} reject {r['reject_two_sided']:.3f}"
                  f" (<0.05 {r['below_0.05']:.3f}, >0.95 {r['above_0.95']:.3f}) "
                  f"mean {r['mean']:.3f} sd {r['sd']:.3f}", flush=True)
    if "cifar10n" in parts:
        result["cifar10n"] = cifar10n()
        print(result["cifar10n"], flush=True)
    write_result("ppc_study", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
