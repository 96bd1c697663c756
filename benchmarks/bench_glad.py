"""Benchmark: noisycal's GLAD (EM) against crowd-kit's GLAD on the same ratings.

Two data sets, each fitted by both:

* ``simulated``: ``--n`` items (default 20,000), each rated by 3 of 50 annotators drawn at
  random, K = 10, under GLAD itself (abilities uniform on [0.3, 2.5], log-easiness
  N(0.8, 0.6), uniform classes; seed 0);
* ``cifar10n``: the first ``--cifar-n`` (5,000) CIFAR-10N training images with their three
  human labels (annotators ``random_label1..3``), when ``NOISYCAL_DATA`` holds CIFAR-10N;
  skipped otherwise.

noisycal: ``nc.annotators.GLAD(prevalence=uniform).fit(ann)`` (crowd-kit holds the
prevalence uniform; the priors ``alpha ~ N(1, 1)``, ``b ~ N(1, 1)`` and the start are
crowd-kit's own) with the default ``EM()`` (tol 1e-8 on the log posterior per item).
crowd-kit: ``crowdkit.aggregation.GLAD()`` with its defaults (at most 100 EM iterations,
25 conjugate-gradient steps per M-step, stop when the loss per rating and class changes by
less than 1e-5), run in a subprocess of ``--ck-python`` (default ``/tmp/ck/bin/python``;
skipped when it cannot import crowdkit). Both times are the fit alone, on data already in
each library's input format, after one warm-up fit of noisycal on the same data (its
compilation is then cached; the first fit's time is reported too).

Reported per data set: accuracy of the posterior's argmax against the truth (simulated) or
the clean labels (CIFAR-10N), the abilities' correlation and largest absolute difference
between the two fits (crowd-kit stops early, so they agree to its stopping rule, not to
1e-8), the log-easiness' largest difference, EM iterations, and crowd-kit time / noisycal
time (goal: at least 10).

Usage::

    python benchmarks/bench_glad.py [--n 20000] [--cifar-n 5000] [--publish]
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
from crowdkit.aggregation import GLAD
d = np.load(sys.argv[1])
df = pd.DataFrame({"task": d["item"], "worker": d["annotator"], "label": d["label"]})
t = time.perf_counter()
g = GLAD().fit(df)
wall = time.perf_counter() - t
n, J, K = int(d["n"]), int(d["J"]), int(d["K"])
post = g.probas_.reindex(index=np.arange(n), columns=np.arange(K)).fillna(0.0).to_numpy()
np.savez(sys.argv[2], post=post, alpha=g.alphas_.reindex(np.arange(J)).to_numpy(),
         b=g.betas_.reindex(np.arange(n)).to_numpy(), n_iter=len(g.loss_history_))
print(json.dumps({"fit_s": wall}))
"""


def simulate(n: int, J: int, K: int, per: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.3, 2.5, J)
    b = rng.normal(0.8, 0.6, n)
    y = rng.integers(0, K, n)
    item = np.repeat(np.arange(n), per)
    ann = np.argsort(rng.random((n, J)), axis=1)[:, :per].ravel()
    p = 1.0 / (1.0 + np.exp(-alpha[ann] * np.exp(b[item])))
    ok = rng.random(item.size) < p
    lab = np.where(ok, y[item], (y[item] + rng.integers(1, K, item.size)) % K)
    return item, ann, lab, y, alpha


def crowdkit(python: str, item: np.ndarray, ann: np.ndarray, lab: np.ndarray, n: int,
             J: int, K: int) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(src, item=item, annotator=ann, label=lab, n=n, J=J, K=K)
        run = subprocess.run([python, "-c", _CK, src, out], capture_output=True, text=True)
        if run.returncode:
            print(f"crowd-kit failed: {run.stderr.strip().splitlines()[-1:]}")
            return None
        r = json.loads(run.stdout.strip().splitlines()[-1])
        with np.load(out) as f:
            r.update({k: f[k] for k in ("post", "alpha", "b")}, n_iter=int(f["n_iter"]))
        return r


def one(name: str, item: np.ndarray, ann: np.ndarray, lab: np.ndarray, truth: np.ndarray,
        K: int, ck_python: str | None) -> dict:
    import noisycal as nc

    n, J = int(item.max()) + 1, int(ann.max()) + 1
    a = nc.Annotations.from_arrays(item, ann, lab, classes=np.arange(K),
                                   items=np.arange(n), annotators=np.arange(J))
    model = nc.annotators.GLAD(prevalence=np.full(K, 1.0 / K))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        t = time.perf_counter()
        model.fit(a)
        first = time.perf_counter() - t
        t = time.perf_counter()
        fit = model.fit(a)
        ours = time.perf_counter() - t
    r = {"data": name, "n_items": n, "n_annotators": J, "n_classes": K,
         "n_ratings": int(item.size), "noisycal_first_fit_s": first, "noisycal_fit_s": ours,
         "noisycal_n_iter": fit.n_iter, "noisycal_status": fit.status,
         "noisycal_accuracy": float(np.mean(fit.item_posterior.argmax(1) == truth))}
    ck = crowdkit(ck_python, item, ann, lab, n, J, K) if ck_python else None
    if ck is not None:
        r.update({"crowdkit_fit_s": ck["fit_s"], "crowdkit_n_iter": ck["n_iter"],
                  "crowdkit_accuracy": float(np.mean(ck["post"].argmax(1) == truth)),
                  "ability_corr": float(np.corrcoef(fit.ability, ck["alpha"])[0, 1]),
                  "ability_max_abs_diff": float(np.abs(fit.ability - ck["alpha"]).max()),
                  "log_easiness_max_abs_diff": float(np.abs(np.log(fit.easiness)
                                                            - ck["b"]).max()),
                  "posterior_max_abs_diff": float(np.abs(fit.item_posterior
                                                         - ck["post"]).max()),
                  "speedup": ck["fit_s"] / ours})
    print(json.dumps({k: v for k, v in r.items()}, default=str))
    return r


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="simulated items")
    ap.add_argument("--cifar-n", type=int, default=5_000, help="CIFAR-10N images")
    ap.add_argument("--ck-python", default="/tmp/ck/bin/python",
                    help="a Python that imports crowdkit ('' to skip crowd-kit)")
    ap.add_argument("--name", default="bench_glad")
    add_publish_argument(ap)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    ck = args.ck_python or None
    if ck and subprocess.run([ck, "-c", "import crowdkit"], capture_output=True).returncode:
        print(f"crowd-kit not importable from {ck}: skipped")
        ck = None
    result: dict = {"n": args.n, "cifar_n": args.cifar_n, "crowdkit": ck is not None,
                    "goal_speedup": 10.0, "load_1min": os.getloadavg()[0],
                    "cpus": os.cpu_count(), "cases": []}
    item, ann, lab, y, _ = simulate(args.n, 50, 10, 3, seed=0)
    result["cases"].append(one("simulated", item, ann, lab, y, 10, ck))
    try:
        import noisycal as nc

        c10n = nc.datasets.load_cifar10n()
    except (FileNotFoundError, ValueError) as exc:
        print(f"CIFAR-10N skipped: {exc}")
        result["cifar10n_skipped"] = str(exc).splitlines()[0]
    else:
        labels = c10n.labels[:args.cifar_n]
        n = labels.shape[0]
        result["cases"].append(one("cifar10n", np.repeat(np.arange(n), 3),
                                   np.tile(np.arange(3), n), labels.ravel(),
                                   c10n.clean[:n], 10, ck))
    result["load_1min_end"] = os.getloadavg()[0]
    write_result(args.name, result, publish=args.publish)
    return result


if __name__ == "__main__":
    sys.exit(main() and 0)
