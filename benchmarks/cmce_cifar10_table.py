"""The CIFAR-10 table of "Adaptive Set-Mass Calibration with Conformal Prediction" on the
shared DenseNet-40 logits (not a timing).

Protocol (Section 5.2, Appendix D): the 10,000 CIFAR-10 test logits of DenseNet-40
(``../shared/data/cifar10_logits``), 20% calibration / 80% test, 10 random splits; every
method fitted on the calibration part (hard labels), evaluated on the test part with
25 equal-width bins: CMCE, ECE, MCE, cwECE, NLL, Brier, coverage of the nested sets with
mass in [0.9, 0.92] and [0.99, 0.995], accuracy, and the HPR coverage at the method's
alpha. Methods: Base, temperature scaling, diagonal Dirichlet, one-vs-rest Platt,
one-vs-rest isotonic, Venn-Abers (one-vs-rest IVAP, log-loss aggregation, renormalised),
adaptive temperature scaling (ATS, :class:`~noisycal.calibrators.AdaptiveTemperatureScaling`:
a linear map of four score features, not the authors' MLP on the logits; README), the
naive CMCE temperature (reference grid), and MR and TS (ours) for alpha in
{0.01, 0.1, 0.3} x score {MSP, APS} x threshold {C, Ada} (the grid of the paper's full
tables). Cells are mean +- standard deviation over the splits.

The paper's CIFAR-10 models are ResNet-20 and ResNet-56 (Tables 4-7); the shared data
hold DenseNet-40, so numbers are compared in kind, not digit by digit (README).

Usage::

    python benchmarks/cmce_cifar10_table.py              # 10 splits, full grid
    python benchmarks/cmce_cifar10_table.py --quick      # 2 splits, MSP C only
    python benchmarks/cmce_cifar10_table.py --baselines  # 10 splits, baselines only
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd
from _output import OUTPUT_DIR, add_publish_argument, write_result  # benchmarks/_output.py

from noisycal import calibrators as cal
from noisycal.datasets import load_cifar10_logits
from noisycal.experiments.set_mass import default_methods, run_protocol, splits

COLUMNS = ["CMCE", "ECE", "MCE", "cwECE", "NLL", "Brier", "cov[0.9,0.92]", "cov[0.99,0.995]",
           "accuracy", "HPR coverage"]


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby("method", sort=False)
    cols = [c for c in COLUMNS if c in df.columns]
    mean, sd = g[cols].mean(), g[cols].std(ddof=1)
    out = mean.map(lambda v: f"{v:.4f}") + " ± " + sd.map(lambda v: f"{v:.4f}")
    out["status"] = g["status"].agg(lambda s: ",".join(sorted(set(s))))
    return out


#: Baselines of the paper's Appendix F beyond those of ``default_methods``, placed after
#: "Platt (OvR)" (the paper's names in brackets: Isotonic, V.-Abers (OvA), Ada-TS).
EXTRA_BASELINES = {
    "Isotonic (OvR)": (cal.OneVsRestIsotonic, None, None),
    "V.-Abers (OvR)": (cal.VennAbers, None, None),
    "Ada-TS (ATS)": (cal.AdaptiveTemperatureScaling, None, None),
}


def floored_nll(logits: np.ndarray, y: np.ndarray, factory: object, *, n_splits: int,
                eps: float = 1e-12) -> np.ndarray:
    """Per split, ``-mean log(p_y + eps)`` of the method ``factory`` on the test part (the
    authors' code adds 1e-12 inside the logarithm; ``nc.nll`` reports an exact 0 as
    infinite instead). The same splits as ``run_protocol``."""
    import warnings

    out = []
    for ic, it in splits(y.size, n_splits=n_splits):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            P = factory().fit(logits=logits[ic], target=y[ic]).predict_proba(logits=logits[it])
        out.append(-np.mean(np.log(P[np.arange(it.size), y[it]] + eps)))
    return np.array(out)


def with_extra_baselines(methods: dict) -> dict:
    """``methods`` with :data:`EXTRA_BASELINES` inserted after "Platt (OvR)"."""
    out = {}
    for name, spec in methods.items():
        out[name] = spec
        if name == "Platt (OvR)":
            out.update(EXTRA_BASELINES)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--splits", type=int, default=None)
    ap.add_argument("--ada-steps", type=int, default=3000)
    ap.add_argument("--baselines", action="store_true",
                    help="only the baselines (Base, TS, Dirichlet, OvR Platt and isotonic, "
                         "Venn-Abers, ATS, naive CMCE)")
    ap.add_argument("--mr-tight", action="store_true",
                    help="only MR (MSP, C) with degenerate_tol=(1e-12, 1e-12) at every alpha "
                         "(rows with in-set mass above 0.99999 rescaled too)")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    try:
        d = load_cifar10_logits("densenet40")
    except FileNotFoundError as exc:
        print(f"needs the shared data: {exc}", file=sys.stderr)
        return 2
    n_splits = args.splits or (2 if args.quick else 10)
    grid = dict(scores=("msp",), thresholds=("constant",)) if args.quick else dict(
        scores=("msp", "aps"), thresholds=("constant", "adaptive"))
    methods = with_extra_baselines(default_methods(ada_steps=args.ada_steps, **grid))
    name = "cmce_cifar10_table"
    if args.baselines:
        methods = {k: v for k, v in methods.items() if v[2] is None}
        name += "_baselines"
    if args.mr_tight:
        methods = {k.replace("MR", "MR tight-tol"): v for k, v in default_methods(
            scores=("msp",), thresholds=("constant",), baselines=False,
            mr_degenerate_tol=(1e-12, 1e-12)).items() if k.startswith("MR")}
        name += "_mr_tight"
    t0 = time.perf_counter()
    df = run_protocol(d.logits_test, d.y_test, methods,
                      n_splits=n_splits,
                      progress=lambda s: print(s, f"({time.perf_counter() - t0:.0f} s)",
                                               flush=True))
    table = summarise(df)
    # the isotonic maps give 0 below a class's lowest calibration score: NLL = inf where a
    # test item's own class gets 0; the paper's convention (+1e-12 in the log) beside it
    table["NLL (+1e-12)"] = ""
    for m in ("Isotonic (OvR)",):
        if m in methods:
            v = floored_nll(d.logits_test, d.y_test, methods[m][0], n_splits=n_splits)
            table.loc[m, "NLL (+1e-12)"] = f"{v.mean():.4f} ± {v.std(ddof=1):.4f}"
            n_inf = int(np.sum(~np.isfinite(df.loc[df.method == m, "NLL"])))
            table.loc[m, "status"] += f" (NLL inf in {n_inf} of {n_splits} splits)"
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    print(table.to_string())
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    raw = OUTPUT_DIR / f"{name}_raw.csv"
    df.to_csv(raw, index=False)
    print(f"wrote {raw}")
    write_result(name, {
        "n_splits": n_splits, "ada_steps": args.ada_steps,
        "seconds": time.perf_counter() - t0, "table": table.reset_index().to_dict("records"),
        "accuracy_base": float(np.mean(d.logits_test.argmax(1) == d.y_test))},
        publish=args.publish)
    (OUTPUT_DIR / f"{name}.txt").write_text(table.to_string() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
