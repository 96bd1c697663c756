"""Study: LWCal's weights from a single noisy label vs from an annotator model, CIFAR-10N.

The binary task animal vs vehicle (classes 2-7 vs 0, 1, 8, 9) on the DenseNet-40 CIFAR-10
logits: the score is the softmax mass on the animal classes. The calibration set is the
5,000 held-out training images of the logits file, whose CIFAR-10N human labels (three per
image) are joined by ``val_train_idx``; the test set is the 10,000 CIFAR-10 test images
with their clean labels. Every method sees only the calibration scores and human labels
(the oracle excepted); the clean-label ECE (15 bins, positive class), Brier score and NLL
on the test set are printed:

- raw score; isotonic on annotator 1's label; LWCal on annotator 1's label (the paper);
- LWCal(weights='posterior') on annotator 1's label, weights from the Dawid-Skene
  posterior of all three labels (ours);
- isotonic on the majority vote, on the Dawid-Skene posterior target, and on the
  noise-corrected target of "Noisy-Label Calibration with Multiple Unreliable Labels";
- the oracle: isotonic on the clean calibration labels.

Needs the shared data (``$NOISYCAL_DATA`` or ``../shared/data``).

Usage::

    python benchmarks/lwcal_cifar10n.py [--publish]

Results are printed and written to ``benchmarks/output/lwcal_cifar10n.json``
(``--publish``: also ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py
from scipy.special import softmax

import noisycal as nc

ANIMAL = np.array([2, 3, 4, 5, 6, 7])


def _data_dir() -> Path:
    env = os.environ.get("NOISYCAL_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_publish_argument(ap)
    args = ap.parse_args()
    d = _data_dir()
    logits = np.load(d / "cifar10_logits" / "densenet40_c10.npz")
    c10n = np.load(d / "cifar10n" / "cifar10n.npz")
    idx = logits["val_train_idx"]

    def score(z):
        # the sum of six softmax entries can exceed 1 by round-off
        return np.minimum(softmax(np.asarray(z, np.float64), axis=1)[:, ANIMAL].sum(1), 1.0)

    p_cal, p_test = score(logits["logits_val"]), score(logits["logits_test"])
    y_test = np.isin(logits["y_test"], ANIMAL).astype(int)
    clean = np.isin(c10n["clean_label"][idx], ANIMAL).astype(int)
    A = np.column_stack([np.isin(c10n[f"random_label{j}"][idx], ANIMAL).astype(int)
                         for j in (1, 2, 3)])
    ann = nc.Annotations.from_wide(A)
    fit = nc.DawidSkene(n_classes=2).fit(ann, method="em", seed=0)
    post = nc.targets.posterior(None, fit)
    corr = nc.targets.corrected(ann, fit)
    voted = (A.sum(1) >= 2).astype(int)
    print(f"calibration items {len(p_cal)}, human label error rates "
          f"{[round(float(np.mean(A[:, j] != clean)), 4) for j in range(3)]}, "
          f"DS status {fit.status}")
    C = nc.calibrators
    methods = {
        "raw": None,
        "isotonic, annotator 1": C.IsotonicCalibration().fit(probs=p_cal, target=A[:, 0]),
        "LWCal, annotator 1": C.LWCal().fit(probs=p_cal, target=A[:, 0]),
        "GatedLWCal, annotator 1": C.GatedLWCal().fit(probs=p_cal, target=A[:, 0]),
        "LWCal posterior weights, annotator 1": C.LWCal(weights="posterior").fit(
            probs=p_cal, target=A[:, 0], posterior=post),
        "isotonic, majority vote": C.IsotonicCalibration().fit(probs=p_cal, target=voted),
        "isotonic, DS posterior target": C.IsotonicCalibration().fit(probs=p_cal,
                                                                     target=post),
        "isotonic, corrected target": C.IsotonicCalibration().fit(probs=p_cal, target=corr),
        "oracle isotonic, clean labels": C.IsotonicCalibration().fit(probs=p_cal,
                                                                     target=clean),
    }
    error_rates = [float(np.mean(A[:, j] != clean)) for j in range(3)]
    rows = []
    print(f"{'method':40s} {'ECE':>7s} {'Brier':>7s} {'NLL':>7s}")
    for name, cal in methods.items():
        q = p_test if cal is None else cal.predict_proba(probs=p_test)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ece = float(nc.ece(q, y_test, n_bins=15, interval=None))
        qc = np.clip(q, 1e-15, 1 - 1e-15)
        brier = float(np.mean((q - y_test) ** 2))
        nll = float(-np.mean(y_test * np.log(qc) + (1 - y_test) * np.log(1 - qc)))
        print(f"{name:40s} {100 * ece:7.3f} {brier:7.4f} {nll:7.4f}")
        rows.append({"method": name, "ece": ece, "brier": brier, "nll": nll})
    write_result("lwcal_cifar10n", {
        "n_calibration": int(len(p_cal)), "n_test": int(len(p_test)),
        "annotator_error_rates": error_rates, "ds_status": fit.status,
        "gated_rho": float(methods["GatedLWCal, annotator 1"].rho_),
        "gated_disagreement": float(methods["GatedLWCal, annotator 1"].disagreement_),
        "rows": rows}, publish=args.publish)


if __name__ == "__main__":
    main()
