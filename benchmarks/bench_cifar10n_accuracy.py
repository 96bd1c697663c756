"""Benchmark: accuracy of label aggregation on CIFAR-10N, noisycal's models and crowd-kit's.

Data: the first ``--n`` (5,000) CIFAR-10N training images that have DenseNet-40 logits
(``nc.datasets.load_cifar10_logits("densenet40").val_train_idx``, the rows of
``logits_val`` in order), with their three human labels (``random_label1..3`` of
``nc.datasets.load_cifar10n()``, taken as three annotators) and their clean labels, against
which every method is scored. Needs ``NOISYCAL_DATA``; without the data the script writes
a record that says why and exits.

Methods, in this order in one process (the first fit of each model is its first in the
process, so it carries whatever compilation the models before it did not share; the
second fit is the same fit again):

* majority vote of the three labels, ties (three different labels) broken towards the
  lowest class index (:func:`majority_vote`);
* ``DawidSkene``, ``OneCoinDawidSkene``, ``MACE``, ``ClassConditionalDawidSkene`` of
  ``nc.annotators`` with ``n_classes=10`` and their defaults, fitted by their default
  ``EM()`` (seed 0);
* ``nc.annotators.GLAD(10)`` with its defaults (EM, prevalence fitted);
* ``nc.annotators.ClassifierInformedDawidSkene(10).fit(ann, logits=...)`` (EM; the
  DenseNet-40 logits as the fixed classifier);
* the classifier alone: the argmax of the logits.

Accuracy is the share of images whose argmax of the item posterior (or label) is the clean
label. crowd-kit's ``MajorityVote``, ``DawidSkene``, ``GLAD`` and ``MACE`` (defaults) are
fitted twice each on the same ratings in a subprocess of ``--ck-python`` (default
``/tmp/ck/bin/python``), as in ``bench_glad.py``; skipped, with a note, when it cannot
import crowdkit. Also recorded: the classifier-informed fit's ``annotator_quality``
against each annotator's accuracy on the clean labels.

Usage::

    NOISYCAL_DATA=/path/to/data python benchmarks/bench_cifar10n_accuracy.py [--n 5000]
        [--publish]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

_CK = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd
warnings.simplefilter("ignore")
import crowdkit
from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote
d = np.load(sys.argv[1])
df = pd.DataFrame({"task": d["item"], "worker": d["annotator"], "label": d["label"]})
n = int(d["n"])
out = {}
for name, make in [("MajorityVote", MajorityVote), ("DawidSkene", lambda: DawidSkene(100)),
                   ("GLAD", GLAD), ("MACE", MACE)]:
    times = []
    for _ in range(2):
        t = time.perf_counter()
        m = make().fit(df)
        times.append(time.perf_counter() - t)
    lab = m.labels_.reindex(np.arange(n)).to_numpy()
    out[name] = {"first_fit_s": times[0], "fit_s": times[1], "labels": lab.tolist()}
print(json.dumps({"version": crowdkit.__version__, "methods": out}))
"""

#: The crowd-kit aggregators run, in order.
CK_METHODS = ("MajorityVote", "DawidSkene", "GLAD", "MACE")


def majority_vote(labels: np.ndarray, n_classes: int) -> tuple[np.ndarray, int]:
    """The most frequent label of each row, ties broken towards the lowest class index.

    Parameters
    ----------
    labels : array of shape (n_items, n_raters)
        Class indices ``0 .. n_classes - 1``, every cell rated.
    n_classes : int
        Number of classes.

    Returns
    -------
    votes : array of shape (n_items,)
        The majority label of each item.
    n_ties : int
        Items whose largest count is shared by two or more classes.

    Raises
    ------
    ValueError
        ``labels`` not a 2-D integer array of indices in ``[0, n_classes)``.
    """
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[1] == 0 or not np.issubdtype(labels.dtype,
                                                                        np.integer):
        raise ValueError(f"labels: a 2-D integer array with a column per rater, got dtype "
                         f"{labels.dtype} and shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"labels: class indices must lie in [0, {n_classes}), got "
                         f"{labels.min()} .. {labels.max()}")
    counts = (labels[:, :, None] == np.arange(n_classes)).sum(axis=1)
    top = counts.max(axis=1, keepdims=True)
    n_ties = int(np.sum((counts == top).sum(axis=1) > 1))
    return counts.argmax(axis=1), n_ties  # argmax: the first (lowest) of the tied classes


def crowdkit(python: str, A: np.ndarray, y: np.ndarray) -> dict | None:
    """crowd-kit's aggregators on the ratings ``A`` (items x annotators), scored on ``y``."""
    n, m = A.shape
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.npz")
        np.savez(src, item=np.repeat(np.arange(n), m), annotator=np.tile(np.arange(m), n),
                 label=A.ravel(), n=n)
        run = subprocess.run([python, "-c", _CK, src], capture_output=True, text=True)
    if run.returncode:
        print(f"crowd-kit failed: {run.stderr.strip().splitlines()[-1:]}")
        return None
    out = json.loads(run.stdout.strip().splitlines()[-1])
    for r in out["methods"].values():
        r["accuracy"] = float(np.mean(np.asarray(r.pop("labels")) == y))
    return out


def _timed(fit: callable) -> tuple[object, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        fit()
        first = time.perf_counter() - t
        t = time.perf_counter()
        res = fit()
        second = time.perf_counter() - t
    return res, first, second


def noisycal_rows(A: np.ndarray, logits: np.ndarray, y: np.ndarray) -> tuple[list, object]:
    """The table's noisycal rows, and the classifier-informed fit."""
    import noisycal as nc

    K = logits.shape[1]
    rows = []
    votes, first, second = _timed(lambda: majority_vote(A, K))
    rows.append({"method": "majority vote", "library": "noisycal",
                 "accuracy": float(np.mean(votes[0] == y)), "first_fit_s": first,
                 "fit_s": second, "status": None, "n_ties": votes[1]})
    ann = nc.Annotations.from_wide(A, classes=np.arange(K))
    models = [("DawidSkene EM", lambda: nc.annotators.DawidSkene(K).fit(ann, seed=0)),
              ("OneCoinDawidSkene EM",
               lambda: nc.annotators.OneCoinDawidSkene(K).fit(ann, seed=0)),
              ("MACE EM", lambda: nc.annotators.MACE(K).fit(ann, seed=0)),
              ("ClassConditionalDawidSkene EM",
               lambda: nc.annotators.ClassConditionalDawidSkene(K).fit(ann, seed=0)),
              ("GLAD EM", lambda: nc.annotators.GLAD(K).fit(ann)),
              ("ClassifierInformedDawidSkene EM",
               lambda: nc.annotators.ClassifierInformedDawidSkene(K).fit(ann,
                                                                          logits=logits))]
    fit = None
    for name, run in models:
        fit, first, second = _timed(run)
        rows.append({"method": name, "library": "noisycal",
                     "accuracy": float(np.mean(fit.item_posterior.argmax(1) == y)),
                     "first_fit_s": first, "fit_s": second, "status": fit.status,
                     "message": fit.message or None})
        print(json.dumps(rows[-1]))
    rows.append({"method": "classifier alone (argmax of the logits)", "library": "-",
                 "accuracy": float(np.mean(logits.argmax(1) == y)), "first_fit_s": None,
                 "fit_s": None, "status": None})
    return rows, fit


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5_000, help="images (those with logits)")
    ap.add_argument("--ck-python", default="/tmp/ck/bin/python",
                    help="a Python that imports crowdkit ('' to skip crowd-kit)")
    ap.add_argument("--name", default="bench_cifar10n_accuracy")
    add_publish_argument(ap)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import noisycal as nc

    result: dict = {"n": args.n, "load_1min": os.getloadavg()[0], "cpus": os.cpu_count(),
                    "reference": {"CROWDLAB": 0.963, "crowd-kit GLAD": 0.9128}}
    try:
        lg = nc.datasets.load_cifar10_logits("densenet40")
        c10n = nc.datasets.load_cifar10n()
    except (FileNotFoundError, ValueError) as exc:
        print(f"CIFAR-10N skipped: {exc}")
        result["skipped"] = str(exc).splitlines()[0]
        write_result(args.name, result, publish=args.publish)
        return result
    idx = lg.val_train_idx[:args.n]
    A, y, logits = c10n.labels[idx], c10n.clean[idx], lg.logits_val[:args.n]
    result["n"] = int(idx.size)
    rows, fit = noisycal_rows(A, logits, y)
    quality = fit.annotator_quality
    result["annotator_quality"] = [
        {"annotator": f"random_label{j + 1}",
         "fitted_accuracy": float(quality["accuracy"].iloc[j]),
         "clean_accuracy": float(np.mean(A[:, j] == y)),
         "n_ratings": int(quality["n_ratings"].iloc[j])} for j in range(A.shape[1])]
    ck = args.ck_python or None
    if ck and subprocess.run([ck, "-c", "import crowdkit"], capture_output=True).returncode:
        ck = None
    out = crowdkit(ck, A, y) if ck else None
    if out is None:
        result["crowdkit_skipped"] = (f"crowd-kit not importable from {args.ck_python!r}"
                                      if args.ck_python else "crowd-kit not asked for")
    else:
        result["crowdkit_version"] = out["version"]
        rows += [{"method": name, "library": "crowd-kit", "status": None,
                  **out["methods"][name]} for name in CK_METHODS]
    result["rows"] = rows
    result["load_1min_end"] = os.getloadavg()[0]
    write_result(args.name, result, publish=args.publish)
    return result


if __name__ == "__main__":
    sys.exit(main() and 0)
