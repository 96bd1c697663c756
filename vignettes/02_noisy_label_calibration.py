# %% [markdown]
# # Calibration against labels nobody observed
#
# After "Noisy-Label Calibration with Multiple Unreliable Labels".
#
# Three annotators label every item with their own false-positive and false-negative
# rates; the true label is never seen. We fit the annotator channels three ways
# (Hui–Walter moments and constrained GMM, Dawid–Skene EM, NUTS), test the
# class-conditional noise assumption behind the correction against channels that change
# with the classifier's score, build the noise-corrected target, and compare the naive
# calibration errors (soft vote, majority vote) with the noise-corrected ECE. Its default
# interval inverts a test whose null carries the fitted channels' estimation error
# (delta method, or refits of the channels in every bootstrap replicate); beside it the
# same test with the channels treated as known (too narrow when they were fitted), the
# credible interval (posterior of the plug-in, biased upward near 0) and the
# finite-sample bound of Theorem 1. Every row prints its status. Then we recalibrate on a
# split with naive and with corrected targets, and with the auxiliary Joint map.
#
# Default data: the paper's Gaussian toy (shifted truth, population binned ECE 0.0896).
# `--data cifar10n`: DenseNet-40 validation scores (animal vs vehicle) with the three
# CIFAR-10N human labels (needs the shared data).
#
# Run: `python vignettes/02_noisy_label_calibration.py [--small] [--data cifar10n]`.

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

POPULATION_ECE_B = 0.089625  # shifted toy, M = 10 (population binned ECE, by quadrature)
ANIMALS = [2, 3, 4, 5, 6, 7]  # bird, cat, deer, dog, frog, horse


def load(source: str, n: int, seed: int) -> dict:
    """Scores z, 0/1 annotations A (n, 3), clean labels y (for checking only)."""
    if source == "toy":
        t = nc.simulate.gaussian_toy(n, truth="shifted", seed=seed)
        return {"z": t.z, "A": t.annotations, "y": t.y, "name": "Gaussian toy (shifted)"}
    try:
        logits = nc.datasets.load_cifar10_logits("densenet40")
        c10n = nc.datasets.load_cifar10n()
    except FileNotFoundError as exc:
        print(f"--data cifar10n needs the shared data: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    from scipy.special import expit, logsumexp

    vehicles = [k for k in range(10) if k not in ANIMALS]
    # P(animal) = sigmoid(logsumexp(animal logits) - logsumexp(vehicle logits)), in [0, 1]
    z = expit(logsumexp(logits.logits_val[:, ANIMALS], axis=1)
              - logsumexp(logits.logits_val[:, vehicles], axis=1))
    idx = logits.val_train_idx
    A = np.isin(c10n.labels[idx], ANIMALS).astype(int)
    y = np.isin(c10n.clean[idx], ANIMALS).astype(int)
    m = min(n, z.size)
    return {"z": z[:m], "A": A[:m], "y": y[:m], "name": "CIFAR-10N animal vs vehicle"}


def fit_channels(d: dict, *, num_samples: int, seed: int) -> dict:
    ann = nc.Annotations.from_wide(d["A"])
    groups = (d["z"] >= np.median(d["z"])).astype(int)
    ranks = nc.annotators.equal_count_groups(d["z"], 4)
    fits = {
        "Hui-Walter MoM (annotators 1-2)": nc.HuiWalter().fit(d["A"][:, :2], groups=groups),
        "Hui-Walter GMM (1-2, 4 rank groups)": nc.HuiWalter().fit(
            d["A"][:, :2], groups=ranks, method=nc.engines.GMM(weight="efficient"), seed=seed),
        "Dawid-Skene EM": nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=10), seed=seed),
        "Dawid-Skene NUTS": nc.DawidSkene().fit(
            ann, method=nc.engines.NUTS(num_chains=2, num_warmup=num_samples,
                                        num_samples=num_samples, rhat_threshold=1.05), seed=seed),
    }
    rows = []
    for name, f in fits.items():
        a, b = f.confusion[:, 0, 1], f.confusion[:, 1, 1]
        rows.append({"estimator": name, "status": f.status,
                     "a (false positive)": np.round(a, 3).tolist(),
                     "b (true positive)": np.round(b, 3).tolist()})
    return {"ann": ann, "fits": fits, "table": pd.DataFrame(rows)}


def noise_table(d: dict, ch: dict, *, seed: int) -> tuple[pd.DataFrame, object]:
    """The test of class-conditional noise: channels shared by five score groups or not."""
    check = nc.annotators.noise_check(ch["ann"], d["z"], seed=seed)
    row = {"statistic (LR)": check.statistic, "df": check.df, "p-value": check.p_value,
           "reference": check.method, "status": check.status}
    return pd.DataFrame([row]), check


def ece_table(d: dict, ch: dict, *, n_boot: int, seed: int) -> tuple[pd.DataFrame, dict]:
    z, A = d["z"], d["A"]
    soft = A.mean(1)
    maj = (A.sum(1) >= 2).astype(float)
    em, nuts = ch["fits"]["Dawid-Skene EM"], ch["fits"]["Dawid-Skene NUTS"]
    gmm = ch["fits"]["Hui-Walter GMM (1-2, 4 rank groups)"]
    U_em = nc.targets.corrected(ch["ann"], em)
    U_nuts = nc.targets.corrected(ch["ann"], nuts)
    U_known = nc.targets.corrected(ch["ann"], confusion=em.confusion)
    U_gmm = nc.targets.corrected(A[:, :2], gmm)
    two = lambda t: np.column_stack([1 - t, t])  # noqa: E731
    # the default interval (inverted test) with n_boot simulated draws
    kw = dict(n_bins=10, level=0.9, seed=seed, interval=nc.intervals.Inversion(n_boot=n_boot))
    refit = dict(kw, interval=nc.intervals.Refit(n_boot=n_boot))  # channels refitted
    est = {
        "clean labels (unobserved; check)": nc.ece(z, d["y"], **kw),
        "soft vote (naive)": nc.ece(z, two(soft), **kw),
        "majority vote (naive)": nc.ece(z, two(maj), **kw),
        "NC-ECE, EM channels, channel error carried (default)": nc.ece(z, U_em, **kw),
        "NC-ECE, EM channels refitted in every replicate": nc.ece(z, U_em, **refit),
        "NC-ECE, NUTS channels, channel error carried": nc.ece(z, U_nuts, **kw),
        "NC-ECE, Hui-Walter GMM channels (annotators 1-2)": nc.ece(z, U_gmm, **kw),
        "NC-ECE, EM channels treated as known (too narrow)": nc.ece(z, U_known, **kw),
        "NC-ECE, credible (NUTS; posterior of the plug-in)": nc.ece(
            z, U_nuts, interval="credible", n_bins=10, level=0.9, seed=seed),
        "NC-ECE, bound (same sample, binned only)": nc.ece(
            z, U_em, interval=nc.intervals.Bound(same_sample=True), n_bins=10, level=0.9,
            seed=seed),
    }
    rows = [{"estimate": k, "value": float(e), "low": e.low, "high": e.high,
             "interval": f"{e.kind} ({e.method})", "status": e.status}
            for k, e in est.items()]
    return pd.DataFrame(rows), {"U_em": U_em, "U_nuts": U_nuts, "est": est}


def recalibration(d: dict, U: nc.Target, *, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = d["z"].size
    fit_idx = rng.permutation(n)[: n // 2]
    test = np.setdiff1d(np.arange(n), fit_idx)
    soft = d["A"].mean(1)
    targets = {"naive (soft vote)": np.column_stack([1 - soft, soft]), "corrected": U.values}
    maps = {"temperature": nc.calibrators.TemperatureScaling,
            "Platt": nc.calibrators.PlattScaling,
            "histogram (J = 10)": nc.calibrators.HistogramBinning}
    # the test items' corrected rows, declared noise-corrected (a plain array outside
    # [0, 1] is refused by the metrics)
    Ut = nc.targets.from_matrix(U.values[test], kind="corrected")
    rows = []
    for mname, cls in maps.items():
        for tname, T in targets.items():
            # the corrected rows leave [0, 1]: declared noise-corrected, as below
            Tf = (nc.targets.from_matrix(T[fit_idx], kind="corrected")
                  if tname == "corrected" else T[fit_idx])
            cal = cls().fit(probs=d["z"][fit_idx], target=Tf)
            g = np.clip(cal.predict_proba(probs=d["z"][test]), 0.0, 1.0)
            rows.append({
                "map": mname, "fitted to": tname,
                "clean-label ECE": float(nc.ece(g, d["y"][test], n_bins=10, interval=None)),
                "soft-vote ECE": float(nc.ece(g, np.column_stack([1 - soft[test],
                                                                  soft[test]]),
                                              n_bins=10, interval=None)),
                "NC-ECE": float(nc.ece(g, Ut, n_bins=10, interval=None)),
            })
    joint = nc.calibrators.JointMap(n_bins=10, seed=seed).fit(probs=d["z"][fit_idx],
                                                               annotations=d["A"][fit_idx])
    g = joint.predict_proba(probs=d["z"][test])
    rows.append({
        "map": "Joint map (10 bins)", "fitted to": "annotations (joint EM)",
        "clean-label ECE": float(nc.ece(g, d["y"][test], n_bins=10, interval=None)),
        "soft-vote ECE": float(nc.ece(g, np.column_stack([1 - soft[test], soft[test]]),
                                      n_bins=10, interval=None)),
        "NC-ECE": float(nc.ece(g, Ut, n_bins=10, interval=None)),
    })
    base = {"map": "none", "fitted to": "-",
            "clean-label ECE": float(nc.ece(d["z"][test], d["y"][test], n_bins=10,
                                            interval=None)),
            "soft-vote ECE": float(nc.ece(d["z"][test], np.column_stack(
                [1 - soft[test], soft[test]]), n_bins=10, interval=None)),
            "NC-ECE": float(nc.ece(d["z"][test], Ut, n_bins=10, interval=None))}
    return pd.DataFrame([base] + rows)


def figures(d: dict, ch: dict, res: dict, out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    nc.plots.reliability_diagram(res["est"]["NC-ECE, EM channels, channel error carried "
                                         "(default)"],
                                 ax=axes[0], title="against the corrected target")
    nc.plots.reliability_diagram(res["est"]["soft vote (naive)"], ax=axes[1],
                                 title="against the soft vote (naive)")
    fig.tight_layout()
    paths.append(out / "reliability_corrected_vs_soft.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    nuts = ch["fits"]["Dawid-Skene NUTS"]
    conf = nuts.draws["confusion"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for j in range(conf.shape[1]):
        ax.hist(conf[:, j, 0, 1], bins=30, alpha=0.5, label=f"a_{j + 1}")
        ax.hist(conf[:, j, 1, 1], bins=30, alpha=0.5, label=f"b_{j + 1}")
    ax.set_xlabel("channel rate")
    ax.set_ylabel("posterior draws")
    ax.set_title("NUTS posterior of the annotator channels")
    ax.legend(ncol=3, fontsize=8)
    fig.tight_layout()
    paths.append(out / "channel_posterior.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", choices=["toy", "cifar10n"], default="toy")
    p.add_argument("--n-items", type=int, default=None, help="items (default 5000)")
    p.add_argument("--n-boot", type=int, default=None, help="bootstrap replicates (1000)")
    p.add_argument("--num-samples", type=int, default=None, help="NUTS draws per chain (500)")
    p.add_argument("--small", action="store_true", help="tiny sizes for tests")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=here / "output" / "02_noisy_label_calibration")
    a = p.parse_args(argv)
    a.n_items = a.n_items or (1500 if a.small else 5000)
    a.n_boot = a.n_boot or (100 if a.small else 1000)
    a.num_samples = a.num_samples or (150 if a.small else 500)
    return a


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # compiled programs are kept for the next run in the per-user folder (a later run
    # skips most compilation); NOISYCAL_CACHE_DIR names another, set and empty none
    nc.set_compilation_cache(nc.user_cache_folder())
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    d = load(args.data, args.n_items, args.seed)
    print(f"data: {d['name']}, {d['z'].size} items, 3 annotators")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
        ch = fit_channels(d, num_samples=args.num_samples, seed=args.seed)
    print("\nannotator channels\n" + ch["table"].to_string(index=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)  # a rejection is in the table
        noise, check = noise_table(d, ch, seed=args.seed)
    print("\nclass-conditional noise: channels shared by 5 score groups (the assumption) "
          "or not\n" + noise.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if check.rejected:
        print(f"  {check.message}")
    table, res = ece_table(d, ch, n_boot=args.n_boot, seed=args.seed)
    if args.data == "toy":
        print(f"\npopulation binned ECE (10 bins): {POPULATION_ECE_B}")
    print("\ncalibration error, 10 equal-width bins, 90% intervals\n"
          + table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    recal = recalibration(d, res["U_em"], seed=args.seed)
    print("\nrecalibration on half the items, evaluated on the other half\n"
          + recal.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    paths = [args.out / "nc_ece_table.csv", args.out / "recalibration.csv",
             args.out / "noise_check.csv"]
    table.to_csv(paths[0], index=False)
    recal.to_csv(paths[1], index=False)
    noise.to_csv(paths[2], index=False)
    paths += figures(d, ch, res, args.out)
    print("\nwrote:\n" + "\n".join(f"  {p}" for p in paths))
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    raise SystemExit(main())
