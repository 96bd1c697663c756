# %% [markdown]
# # 06 The annotation-model workflow: fit, check, compare, report
#
# A statistician with ratings from several fallible annotators has to choose an
# annotation model before any calibration number means anything: the noise-corrected ECE
# (NC-ECE) of "Noisy-Label Calibration with Multiple Unreliable Labels" is only as good as
# the annotator channels it inverts. This vignette follows the workflow of Paun et al.
# (2018), "Comparing Bayesian Models of Annotation" (TACL 6), with the models of the R
# package rater and MACE:
#
# 1. **fit** pooled, unpooled and partially pooled models (Dawid–Skene, one-coin,
#    class-conditional Dawid–Skene, MACE, hierarchical Dawid–Skene) by EM and by NUTS;
# 2. **check** them: statuses, a statsmodels-like summary, posterior predictive checks on
#    the agreement patterns annotators produce, and simulation-based calibration of the
#    sampler itself;
# 3. **compare** them: AIC/BIC for EM fits, leave-one-item-out cross-validation (PSIS-LOO)
#    with stacking weights for NUTS fits;
# 4. **report** the classifier's NC-ECE under each model, under the preferred one, and
#    averaged over models with the stacking weights.
#
# Part 1 uses the Dawid & Skene (1979) anaesthetists' data shipped with the package
# (45 patients, 5 observers, 4 classes, observer 1 rating each patient three times).
# Part 2 needs a classifier: by default (`--data toy`) a simulated 4-class classifier
# whose items are rated by three annotators through known channels; `--data cifar10n`
# uses 5,000 CIFAR-10 training images with their three CIFAR-10N human labels and the
# DenseNet-40 probabilities of the shared data (set `$NOISYCAL_DATA`).
#
# Run: `python vignettes/06_annotation_model_workflow.py [--data toy|cifar10n]
# [--small] [--out DIR]`.

# %%
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import noisycal as nc

FMT = {"float_format": lambda x: f"{x:.4g}"}


# %% [markdown]
# ## Part 1: the Dawid & Skene (1979) data
#
# EM fits of four channel models. `summary()` prints the statsmodels-style report (the
# header with log-likelihood, AIC/BIC and status; prevalence and per-annotator accuracy
# with bootstrap intervals on request); `nc.annotators.compare(..., ic='bic')` ranks the
# EM fits with Akaike-type weights. With 45 patients the full Dawid–Skene model's 63
# parameters are many: the statuses say so where it matters.


# %%
def em_fits(ann: nc.Annotations, seed: int) -> dict:
    models = {"Dawid-Skene": nc.DawidSkene(),
              "one-coin": nc.OneCoinDawidSkene(),
              "class-conditional": nc.annotators.ClassConditionalDawidSkene(),
              "MACE": nc.annotators.MACE()}
    return {name: m.fit(ann, method=nc.engines.EM(n_starts=10), seed=seed)
            for name, m in models.items()}


def nuts_fits(ann: nc.Annotations, names: tuple[str, ...], *, num_samples: int | None,
              seed: int) -> dict:
    # num_samples None: the library's default chains (1,000 warm-up and 1,000 draws),
    # rerun with both doubled, at most twice, until R-hat <= 1.01 and bulk ESS >= 400
    nuts = (nc.engines.NUTS(num_chains=2) if num_samples is None else
            nc.engines.NUTS(num_chains=2, num_warmup=num_samples, num_samples=num_samples))
    kw = dict(method=nuts, seed=seed)
    models = {"Dawid-Skene": nc.DawidSkene(),
              "one-coin": nc.OneCoinDawidSkene(),
              "class-conditional": nc.annotators.ClassConditionalDawidSkene(),
              "MACE": nc.annotators.MACE(),
              "hierarchical DS": nc.annotators.HierarchicalDawidSkene()}
    return {name: models[name].fit(ann, **kw) for name in names}


def status_table(fits: dict) -> pd.DataFrame:
    rows = []
    for k, f in fits.items():
        row = {"model": k, "method": f.method, "params": f.n_params, "loglik": f.loglik,
               "status": f.status}
        if f.method == "nuts":   # the chains that ran (the last of the extensions)
            row.update(warmup=f.engine.num_warmup, draws=f.engine.num_samples,
                       runs=len(f.details.get("extensions", ())) or 1,
                       max_rhat=f.details["max_rhat"], min_ess=f.details["min_ess_bulk"])
        rows.append(row)
    return pd.DataFrame(rows)


def part1(args: argparse.Namespace) -> dict:
    ann = nc.datasets.load_dawid_skene_1979()
    print(f"Dawid & Skene (1979): {ann.n_items} patients, {ann.n_annotators} observers, "
          f"{ann.n_classes} classes, {ann.n_ratings} ratings")
    em = em_fits(ann, args.seed)
    print("\nEM fits\n" + status_table(em).to_string(index=False, **FMT))
    print("\n" + str(em["Dawid-Skene"].summary()))
    bic = nc.annotators.compare(em, ann, ic="bic")
    print("\nEM fits compared by BIC\n" + bic.to_frame().to_string(index=False, **FMT))
    bayes = nuts_fits(ann, args.part1_models, num_samples=args.num_samples, seed=args.seed)
    print("\nNUTS fits\n" + status_table(bayes).to_string(index=False, **FMT))
    loo = nc.annotators.compare(bayes, ann)
    print("\nNUTS fits compared by PSIS-LOO (one left-out patient at a time), stacking "
          "weights\n" + loo.to_frame().to_string(index=False, **FMT))
    check = nc.annotators.ppc(bayes["Dawid-Skene"], ann, n_rep=args.n_rep, seed=args.seed)
    print("\nposterior predictive check of Dawid-Skene (NUTS)\n"
          + check.to_frame().to_string(index=False, **FMT))
    return {"bic": bic, "loo": loo, "ppc": check}


# %% [markdown]
# ## Part 2: a classifier judged under each annotation model
#
# The same workflow on items that a classifier has scored. The posterior predictive
# check asks whether a model reproduces the share of items on which all three annotators
# agree (on CIFAR-10N Dawid–Skene under-predicts it); the comparison ranks the models by
# held-out likelihood; `nc.compare_calibration` adds the NC-ECE under each model (default
# interval: the inverted test whose null draws carry the channels' estimation error) and
# the stacking-weighted mixture of the models' posterior NC-ECE distributions. The
# preferred model's NC-ECE closes the report; with simulated data the clean-label ECE
# (unobservable in practice) is printed beside it as a check.


# %%
def load(source: str, n: int, seed: int) -> dict:
    """Probabilities (n, K), annotations (n, 3), clean labels (for checking only)."""
    if source == "toy":
        sim = nc.simulate.classifier(n, 4, temperature=0.7, seed=seed)
        rng = np.random.default_rng(seed + 1)
        acc = np.array([0.85, 0.75, 0.65])
        K = sim.probs.shape[1]
        conf = np.array([a * np.eye(K) + (1 - a) / (K - 1) * (1 - np.eye(K)) for a in acc])
        conf[2, 0] = [0.55, 0.35, 0.05, 0.05]  # annotator 3 mistakes class 0 for class 1
        A = np.column_stack([[rng.choice(K, p=conf[j, y]) for y in sim.labels]
                             for j in range(3)])
        return {"probs": sim.probs, "A": A, "y": sim.labels,
                "name": "simulated 4-class classifier, 3 annotators with known channels"}
    try:
        logits = nc.datasets.load_cifar10_logits("densenet40")
        c10n = nc.datasets.load_cifar10n()
    except FileNotFoundError as exc:
        print(f"--data cifar10n needs the shared data: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    from scipy.special import softmax

    idx = logits.val_train_idx[:n]
    return {"probs": softmax(logits.logits_val[:n], axis=1), "A": c10n.labels[idx],
            "y": c10n.clean[idx], "name": "CIFAR-10N (DenseNet-40 probabilities)"}


def part2(args: argparse.Namespace) -> dict:
    d = load(args.data, args.n_items, args.seed)
    ann = nc.Annotations.from_wide(d["A"])
    print(f"\n\n{d['name']}: {ann.n_items} items, 3 annotators, {ann.n_classes} classes")
    fits = nuts_fits(ann, args.part2_models, num_samples=args.num_samples, seed=args.seed)
    print("\nNUTS fits\n" + status_table(fits).to_string(index=False, **FMT))
    check = nc.annotators.ppc(fits["Dawid-Skene"], ann, n_rep=args.n_rep, seed=args.seed,
                              discrepancies=["unanimity", "distinct_labels"])
    print("\nposterior predictive check of Dawid-Skene (NUTS)\n"
          + check.to_frame().to_string(index=False, **FMT))
    res = nc.compare_calibration(fits, ann, d["probs"], n_bins=15, seed=args.seed)
    cols = ["model", "rank", "elpd_loo", "se", "elpd_diff", "dse", "weight",
            "nc_ece_value", "nc_ece_low", "nc_ece_high", "nc_ece_status"]
    table = res.to_frame()
    print("\nmodels compared by PSIS-LOO, with the top-label NC-ECE (15 bins, 90%) under "
          "each\n" + table[[c for c in cols if c in table]].to_string(index=False, **FMT))
    print(f"\nmodel-averaged NC-ECE (stacking weights): {res.averaged}")
    best = min(res.ranks, key=res.ranks.get)
    target = nc.targets.corrected(ann, fits[best])
    nc_ece = nc.ece(d["probs"], target, n_bins=15, seed=args.seed)
    clean = nc.ece(d["probs"], d["y"], n_bins=15, seed=args.seed)
    print(f"\npreferred model: {best}\n  NC-ECE under it: {nc_ece}\n"
          f"  clean-label ECE (a check, unobservable in practice): {clean}")
    return {"compare": res, "table": table, "ppc": check, "best": best,
            "nc_ece": nc_ece, "clean": clean}


# %% [markdown]
# ## Checking the sampler: simulation-based calibration
#
# If NUTS and the model's priors are coded consistently, the rank of each true parameter
# among its posterior draws is uniform over simulations from the prior (Talts et al.
# 2018, "Validating Bayesian Inference Algorithms with Simulation-Based Calibration").


# %%
def sbc(args: argparse.Namespace):
    nuts = nc.engines.NUTS(num_chains=2, num_warmup=200, num_samples=200, rhat_threshold=1.05)
    res = nc.annotators.sbc(nc.DawidSkene(), n_items=30, n_annotators=3, n_classes=2,
                            n_sims=args.n_sims, method=nuts, seed=args.seed)
    print(f"\nsimulation-based calibration of Dawid-Skene NUTS ({args.n_sims} "
          f"simulations): status {res.status}")
    tests = res.tests.sort_values("chi2_p")
    print("the five smallest uniformity p-values (chi-square on binned ranks, ECDF test) "
          f"against the Bonferroni cut {res.p_threshold} / (2 x {len(tests)})\n"
          + tests.head(5).to_string(**FMT))
    return res


# %%
def figures(p1: dict, p2: dict, sb, out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), constrained_layout=True)
    nc.plots.comparison_plot(p1["loo"], ax=axes[0], title="Dawid & Skene (1979): PSIS-LOO")
    nc.plots.comparison_plot(p2["compare"], ax=axes[1], title="Part 2: PSIS-LOO")
    paths.append(out / "elpd_comparison.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    ax = p2["ppc"].plot(discrepancy="unanimity")
    paths.append(out / "ppc_unanimity.png")
    ax.figure.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close(ax.figure)
    axes = sb.plot(["prevalence[0, 0]", "confusion[0, 0, 0]", "confusion[1, 1, 1]"])
    fig = np.ravel(axes)[0].figure
    paths.append(out / "sbc_ranks.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", choices=["toy", "cifar10n"], default="toy")
    p.add_argument("--n-items", type=int, default=None, help="items in part 2 (2000)")
    p.add_argument("--num-samples", type=int, default=None,
                   help="NUTS warm-up and draws per chain (default: the library's, "
                        "extended until the chains converge)")
    p.add_argument("--n-sims", type=int, default=None, help="SBC simulations (100)")
    p.add_argument("--small", action="store_true",
                   help="tiny sizes for tests, and only Dawid-Skene and the hierarchical "
                        "model under NUTS (each further model is one more compilation)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path,
                   default=here / "output" / "06_annotation_model_workflow")
    a = p.parse_args(argv)
    default_n = 5000 if a.data == "cifar10n" else 2000
    a.n_items = a.n_items or (300 if a.small else default_n)
    a.num_samples = a.num_samples or (100 if a.small else None)
    a.n_sims = a.n_sims or (10 if a.small else 100)
    a.n_rep = 100 if a.small else 500
    # the models fitted by NUTS in parts 1 and 2 (--small: two, for the tests' time)
    few = ("Dawid-Skene", "hierarchical DS")
    a.part1_models = few if a.small else ("Dawid-Skene", "class-conditional",
                                          "hierarchical DS")
    a.part2_models = few if a.small else ("Dawid-Skene", "one-coin", "class-conditional",
                                          "hierarchical DS")
    return a


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # compiled programs are kept for the next run in the per-user folder (a later run
    # skips most compilation); NOISYCAL_CACHE_DIR names another, set and empty none
    nc.set_compilation_cache(nc.user_cache_folder())
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # statuses are in the tables; the warnings would repeat them
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        p1 = part1(args)
        p2 = part2(args)
        sb = sbc(args)
    paths = [args.out / "ds1979_bic.csv", args.out / "ds1979_loo.csv",
             args.out / "model_comparison.csv", args.out / "ppc.csv"]
    p1["bic"].to_frame().to_csv(paths[0], index=False)
    p1["loo"].to_frame().to_csv(paths[1], index=False)
    p2["table"].to_csv(paths[2], index=False)
    p2["ppc"].to_frame().to_csv(paths[3], index=False)
    paths += figures(p1, p2, sb, args.out)
    print("\nwrote:\n" + "\n".join(f"  {p}" for p in paths))
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    raise SystemExit(main())
