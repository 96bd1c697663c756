"""The synthetic experiment of "Adaptive Set-Mass Calibration with Conformal Prediction"
(Section 5.1, Appendix E, Fig. 1) at K = 1,000 classes (not a timing).

Data: the 2-D Gaussian-grid classes with exact p(y | x)
(:func:`noisycal.simulate.gaussian_grid`, spacing 1, sigma 0.35). Model: random Fourier
features and a small network trained with label-smoothed cross-entropy and AdamW
(:func:`noisycal.simulate.grid_classifier`, the authors' sizes and schedule) on 50,000
training and 10,000 validation draws. Evaluation: a fresh sample of 10,000 draws, split
20% calibration / 80% test, ``--splits`` random splits (the splits of
``noisycal.experiments.set_mass.splits``). Every baseline of the paper's tables that the
library has, and MR and TS (ours) with MSP sets and the constant threshold at alpha 0.1
(the configuration of the paper's Fig. 1) and 0.01. Metrics on the test part:

- NLL and Brier against the true p (the paper's Fig. 1: cross-entropy
  ``-sum_k p_k log(q_k + 1e-12)`` and ``sum_k (q_k - p_k)^2``, the authors' formulas);
- CMCE with the sampled labels (the paper's) and against the true p (the expected
  coverage indicator, our extension: the same quantity without the label noise);
- top-label ECE and accuracy (labels), 25 equal-width bins throughout.

The paper prints no numbers for this experiment (Fig. 1 only); its claim is that MR
(MSP, C, alpha = 0.1) "achieves the lowest NLL and Brier scores, and substantially
reduces CMCE", more so as K grows. Cells are mean +- standard deviation over splits of
the one trained model.

Usage::

    python benchmarks/cmce_synthetic.py                  # K = 1,000, 10 splits
    python benchmarks/cmce_synthetic.py --splits 3 --K 100
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd
from _output import OUTPUT_DIR, add_publish_argument, write_result  # benchmarks/_output.py
from cmce_cifar10_table import with_extra_baselines  # benchmarks/ (run as a script)
from scipy.special import softmax

import noisycal as nc
from noisycal.experiments.set_mass import default_methods, splits

COLUMNS = ["NLL (true p)", "Brier (true p)", "CMCE", "CMCE (true p)", "ECE", "accuracy"]


def metrics(P: np.ndarray, y: np.ndarray, p_true: np.ndarray) -> dict[str, float]:
    """The experiment's metrics of test probabilities ``P`` (module docstring)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "NLL (true p)": float(-np.mean(np.sum(p_true * np.log(P + 1e-12), axis=1))),
            "Brier (true p)": float(np.mean(np.sum((P - p_true) ** 2, axis=1))),
            "CMCE": float(nc.cmce(P, y, n_bins=25, interval=None)),
            "CMCE (true p)": float(nc.cmce(P, p_true, n_bins=25, interval=None)),
            "ECE": float(nc.ece(P, y, n_bins=25, interval=None)),
            "accuracy": float(np.mean(P.argmax(1) == y)),
        }


def model_logits(args: argparse.Namespace) -> tuple[np.ndarray, nc.simulate.GaussianGrid,
                                                      dict]:
    """Train the classifier (or read the cached run of the same settings) and return its
    test logits, the test draw and the training record."""
    tag = (f"K{args.K}_n{args.n_train}_{args.n_valid}_{args.n_test}_e{args.epochs}_"
           f"s{args.seed}")
    cache = OUTPUT_DIR / f"cmce_synthetic_logits_{tag}.npz"
    test = nc.simulate.gaussian_grid(args.n_test, args.K, seed=3 * args.seed + 3)
    if cache.exists() and not args.retrain:
        d = np.load(cache)
        return d["logits"], test, {"valid_accuracy": d["valid_accuracy"].tolist(),
                                   "best_epoch": int(d["best_epoch"]), "cached": True}
    t0 = time.perf_counter()
    train = nc.simulate.gaussian_grid(args.n_train, args.K, seed=3 * args.seed + 1)
    valid = nc.simulate.gaussian_grid(args.n_valid, args.K, seed=3 * args.seed + 2)
    model = nc.simulate.grid_classifier(train.x, train.labels, args.K, x_valid=valid.x,
                                        labels_valid=valid.labels, epochs=args.epochs,
                                        seed=args.seed)
    z = model.logits(test.x)
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(cache, logits=z, valid_accuracy=model.valid_accuracy,
             best_epoch=model.best_epoch)
    print(f"trained in {time.perf_counter() - t0:.0f} s; validation accuracy per epoch "
          f"{np.round(model.valid_accuracy, 4).tolist()}, kept epoch {model.best_epoch}",
          flush=True)
    return z, test, {"valid_accuracy": model.valid_accuracy.tolist(),
                     "best_epoch": model.best_epoch, "cached": False,
                     "train_seconds": time.perf_counter() - t0}


def run(z: np.ndarray, test: nc.simulate.GaussianGrid, methods: dict, n_splits: int
        ) -> pd.DataFrame:
    y, p = test.labels, test.true_probs
    rows = []
    t_start = time.perf_counter()
    for s, (ic, it) in enumerate(splits(y.size, n_splits=n_splits)):
        rows.append({"split": s, "method": "True p", **metrics(p[it], y[it], p[it]),
                     "status": "ok", "seconds": 0.0})
        for name, (factory, _alpha, key) in methods.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = factory()
                if key is not None:
                    m.set_params(conformal__seed=s)
                m.fit(logits=z[ic], target=y[ic])
                P = m.predict_proba(logits=z[it])
            rows.append({"split": s, "method": name, **metrics(P, y[it], p[it]),
                         "status": getattr(m, "status_", "ok"),
                         "seconds": time.perf_counter() - t0})
            if s == 0:
                print(f"  {name}: {rows[-1]['seconds']:.1f} s", flush=True)
        print(f"split {s + 1}/{n_splits} done ({time.perf_counter() - t_start:.0f} s)",
              flush=True)
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby("method", sort=False)
    mean, sd = g[COLUMNS].mean(), g[COLUMNS].std(ddof=1)
    out = mean.map(lambda v: f"{v:.4f}") + " ± " + sd.map(lambda v: f"{v:.4f}")
    out["status"] = g["status"].agg(lambda s: ",".join(sorted(set(s))))
    out["seconds/split"] = g["seconds"].mean().map(lambda v: f"{v:.1f}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=1000)
    ap.add_argument("--n-train", type=int, default=50_000)
    ap.add_argument("--n-valid", type=int, default=10_000)
    ap.add_argument("--n-test", type=int, default=10_000)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--retrain", action="store_true", help="ignore the cached logits")
    ap.add_argument("--skip", action="append", default=[], metavar="METHOD",
                    help="leave out a method (repeatable), e.g. --skip 'Platt (OvR)'")
    ap.add_argument("--only", action="append", default=[], metavar="METHOD",
                    help="run only these methods (repeatable)")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    z, test, record = model_logits(args)
    base = softmax(z, axis=1)
    print(f"K = {args.K}: Bayes accuracy {np.mean(test.true_probs.argmax(1) == test.labels):.4f}"
          f", model accuracy {np.mean(base.argmax(1) == test.labels):.4f}", flush=True)
    methods = with_extra_baselines(default_methods(alphas=(0.1, 0.01), scores=("msp",),
                                                   thresholds=("constant",)))
    # the reference grid cannot pick a temperature in (0.001, 1.011); the log grid can
    methods = {**{k: v for k, v in methods.items() if not k.startswith(("MR", "TS (ours)"))},
               "Naive CMCE (log grid)": (lambda: nc.calibrators.NaiveCMCETemperature(
                   grid="log"), None, None),
               **{k: v for k, v in methods.items() if k.startswith(("MR", "TS (ours)"))}}
    methods = {k: v for k, v in methods.items()
               if k not in args.skip and (not args.only or k in args.only)}
    df = run(z, test, methods, args.splits)
    table = summarise(df)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    print(table.to_string())
    name = f"cmce_synthetic_K{args.K}" + ("_only" if args.only else "")
    df.to_csv(OUTPUT_DIR / f"{name}_raw.csv", index=False)
    (OUTPUT_DIR / f"{name}.txt").write_text(table.to_string() + "\n")
    write_result(name, {"args": vars(args), "model": record,
                        "seconds": time.perf_counter() - t0,
                        "table": table.reset_index().to_dict("records")},
                 publish=args.publish)
    return 0


if __name__ == "__main__":
    sys.exit(main())
