"""The Ada-TS baseline of "Adaptive Set-Mass Calibration with Conformal Prediction" in its
MLP form on the shared DenseNet-40 CIFAR-10 logits (not a timing).

The protocol of ``cmce_cifar10_table.py`` (Section 5.2, Appendix D: 20% calibration /
80% test, 10 random splits, 25 equal-width bins, hard labels) for four methods: Base,
temperature scaling, the feature-based ATS of that table
(:class:`~noisycal.calibrators.AdaptiveTemperatureScaling`) and the paper's Ada-TS, an MLP
temperature on the logits (:class:`~noisycal.calibrators.MLPTemperatureScaling` with its
defaults, the paper's settings: hidden 128 and 64, ReLU, softplus + 1e-6, Adam lr 5e-4,
100 epochs, batch 256, NLL; seeded by the split). Per split it also records the MLP's mean
and spread of temperatures on the test part, its status, its final training loss, and
temperature scaling's temperature, and the NLL with the authors' +1e-12 inside the
logarithm (an item whose own class gets probability 0 makes our NLL infinite). The
paper's Ada-TS rows (ResNet-20 and ResNet-56) are set beside ours on the page.

Usage::

    python benchmarks/ada_ts_mlp.py               # 10 splits
    python benchmarks/ada_ts_mlp.py --splits 2    # a quick look
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py
from cmce_cifar10_table import summarise  # benchmarks/cmce_cifar10_table.py

from noisycal import calibrators as cal
from noisycal.datasets import load_cifar10_logits
from noisycal.experiments.set_mass import default_methods, run_protocol, splits


class _SplitSeeded:
    """An MLPTemperatureScaling factory whose seed is the split's (0, 1, ...)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> cal.MLPTemperatureScaling:
        self.calls += 1
        return cal.MLPTemperatureScaling(seed=self.calls - 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=10)
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    try:
        d = load_cifar10_logits("densenet40")
    except FileNotFoundError as exc:
        print(f"needs the shared data: {exc}", file=sys.stderr)
        return 2
    base = default_methods(alphas=())
    methods = {"Base": base["Base"], "Temp. scaling": base["Temp. scaling"],
               "Ada-TS (ATS)": (cal.AdaptiveTemperatureScaling, None, None),
               "Ada-TS (MLP)": (_SplitSeeded(), None, None)}
    t0 = time.perf_counter()
    df = run_protocol(d.logits_test, d.y_test, methods, n_splits=args.splits,
                      progress=lambda s: print(s, f"({time.perf_counter() - t0:.0f} s)",
                                               flush=True))
    table = summarise(df)
    print(table.to_string())
    fits = []
    for s, (ic, it) in enumerate(splits(d.y_test.size, n_splits=args.splits)):
        Z, y = d.logits_test, d.y_test
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statuses are recorded
            mlp = cal.MLPTemperatureScaling(seed=s).fit(logits=Z[ic], target=y[ic])
            ts = cal.TemperatureScaling().fit(logits=Z[ic], target=y[ic])
        T = mlp.predict_temperature(logits=Z[it])
        py = mlp.predict_proba(logits=Z[it])[np.arange(it.size), y[it]]
        fits.append({"split": s, "status": mlp.status_, "epochs_run": mlp.epochs_run_,
                     "final_training_loss": float(mlp.loss_history_[-1]),
                     "fitting_nll": mlp.objective_, "ts_fitting_nll": ts.objective_,
                     "ts_temperature": float(ts.temperature_),
                     "mlp_T_mean": float(T.mean()),
                     "mlp_T_q05": float(np.quantile(T, 0.05)),
                     "mlp_T_q95": float(np.quantile(T, 0.95)),
                     # the authors' NLL convention (+1e-12 inside the logarithm), and the
                     # test items whose own class gets probability exactly 0
                     "nll_floored": float(-np.mean(np.log(py + 1e-12))),
                     "n_zero_probability": int(np.sum(py == 0.0)),
                     "n_test": int(it.size)})
        print(fits[-1], flush=True)
    seconds = df.groupby("method", sort=False)["seconds"].mean().to_dict() \
        if "seconds" in df.columns else {}
    write_result("ada_ts_mlp", {
        "n_splits": args.splits, "seconds": time.perf_counter() - t0,
        "table": table.reset_index().to_dict("records"), "fits": fits,
        "fit_seconds_mean": {k: float(v) for k, v in seconds.items()},
        "n_calibration": int(round(0.2 * d.y_test.size))}, publish=args.publish)
    return 0


if __name__ == "__main__":
    sys.exit(main())
