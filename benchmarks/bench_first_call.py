"""Benchmark: the cost of a first call in a fresh Python process.

Every figure comes from a new subprocess, so nothing is imported or compiled beforehand:

* ``import noisycal``: wall time of ``--repeats`` fresh processes (less an empty
  interpreter's start-up, measured the same way), and the package's cumulative time from
  ``python -X importtime``;
* the first Dawid–Skene EM fit on CIFAR-10N (the first ``--n-items`` images, three
  annotators, ten classes; ``nc.DawidSkene(n_classes=10).fit(ann, method='em', seed=0)``):
  ``cold`` with no compilation cache, ``cache-fill`` the first process with
  :func:`noisycal.set_compilation_cache` pointing at an empty folder, ``cache-warm`` the
  next process with the same folder, ``cache-warm-blas1`` the same with
  ``OPENBLAS_NUM_THREADS=1`` (a diagnostic: before the check limited BLAS to one thread
  itself, OpenBLAS's threads made its small Cholesky and eigh take up to seconds on a
  loaded machine); each reports
  ``import noisycal``, the import of what the fit needs (``modules``: JAX, pandas and
  parts of SciPy; ``noisycal.models.dawid_skene`` loads NumPyro only when a NumPyro
  model is run, which an EM fit does not), the first fit with its two phases
  (multi-start EM; the identification check), and a second fit of the same data in the
  same process (compiled);
* crowd-kit's first ``DawidSkene(n_iter=100).fit(df)`` in a fresh process of
  ``--crowdkit-python`` (a scratch venv: ``python3 -m venv /tmp/ck &&
  /tmp/ck/bin/pip install crowd-kit``), skipped when that interpreter is absent;
* the same on a simulated design (``--sim-items``, default 20,000; 0 skips it): every
  item rated by each of 3 annotators, 10 classes, simulated with
  :func:`noisycal.simulate.dawid_skene` (seed 0; each annotator's accuracy 0.7, the rest
  of its confusion row spread evenly; uniform prevalence) and written to a temporary
  file that every child, noisycal's and crowd-kit's, reads; each side's MAP labels'
  accuracy against the simulated truth, and the share of items where the two agree.
  Without CIFAR-10N's data (or with ``--n-items 0``) only this design is measured.

The BLAS the children load is recorded (threadpoolctl's kernel, threads, and the
``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` of the environment, which some machines set
and which slow a current NumPy; the benchmark leaves them as they are).

The noisycal under test is the one importable in this process's environment
(``PYTHONPATH``); ``--pythonpath`` points the children at another checkout (the
"before" figures). Results go to ``benchmarks/output/bench_first_call.json``.

Usage::

    python benchmarks/bench_first_call.py [--n-items 5000] [--sim-items 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

_FIT_CODE = r"""
import json, sys, time
t0 = time.perf_counter()
import noisycal as nc
t_import = time.perf_counter() - t0
cache = sys.argv[2]
if cache != "none":
    nc.set_compilation_cache(cache)
t0 = time.perf_counter()
import noisycal.annotators.dawid_skene as dsm  # what the fit needs: JAX, pandas, SciPy
import noisycal.models.dawid_skene  # the likelihood (NumPyro only for sampling)
t_modules = time.perf_counter() - t0
phases = {}
for name in ("multistart_em", "ds_identification"):  # where the first fit's time goes
    def timed(*a, _f=getattr(dsm, name), _n=name, **k):
        t = time.perf_counter()
        out = _f(*a, **k)
        phases.setdefault(_n, time.perf_counter() - t)
        return out
    setattr(dsm, name, timed)
source = sys.argv[1]
if source.endswith(".npz"):  # the simulated design: ratings written by the parent
    import numpy as np
    f = np.load(source)
    n_sim = f["true_class"].size
    ann = nc.Annotations.from_arrays(f["item"], f["annotator"], f["label"],
                                     classes=np.arange(int(f["n_classes"])),
                                     items=np.arange(n_sim),
                                     annotators=np.arange(int(f["n_annotators"])))
else:
    labels = nc.datasets.load_cifar10n().labels[:int(source)]
    ann = nc.Annotations.from_wide(labels)
t1 = time.perf_counter()
fit = nc.DawidSkene(n_classes=10).fit(ann, method="em", seed=0)
t_first = time.perf_counter() - t1
t2 = time.perf_counter()
again = nc.DawidSkene(n_classes=10).fit(ann, method="em", seed=0)
t_again = time.perf_counter() - t2
out = {"import_s": t_import, "modules_s": t_modules, "first_fit_s": t_first,
       "second_fit_s": t_again, "first_fit_phases_s": phases,
       "loglik": fit.loglik, "n_iter": fit.n_iter, "status": fit.status,
       "n_patterns": fit.details["n_patterns"], "noisycal_file": nc.__file__}
if source.endswith(".npz"):  # MAP labels of the fitted items, in item order
    order = np.argsort(np.asarray(fit.items, dtype=np.int64))
    map_labels = np.asarray(fit.classes)[np.argmax(fit.item_posterior, axis=1)][order]
    out["map_accuracy"] = float(np.mean(map_labels == f["true_class"]))
    out["map_labels"] = [int(v) for v in map_labels]
print(json.dumps(out))
"""

_REPLICATION_CODE = r"""
import json, sys, time
import numpy as np
import noisycal as nc
n, reps = int(sys.argv[1]), int(sys.argv[2])
J, K = 5, 3
conf = np.full((J, K, K), 0.15 / (K - 1)) + np.eye(K) * (0.85 - 0.15 / (K - 1))
secs, n_patterns = {"dawid_skene": [], "mace": [], "dawid_skene_mle_complete": []}, []
for r in range(reps):
    # each item rated by 2 to 4 of the 5 annotators, a new data set each replication
    rng = np.random.default_rng(r)
    y = rng.integers(0, K, n)
    who = np.argsort(rng.random((n, J)), axis=1)
    per = rng.integers(2, 5, n)
    item = np.concatenate([np.full(per[i], i) for i in range(n)])
    ann_ = np.concatenate([who[i, :per[i]] for i in range(n)])
    lab = np.array([rng.choice(K, p=conf[a, y[i]]) for i, a in zip(item, ann_)])
    data = nc.Annotations.from_arrays(item, ann_, lab, classes=np.arange(K))
    for name, model in (("dawid_skene", nc.DawidSkene()), ("mace", nc.annotators.MACE())):
        t = time.perf_counter()
        fit = model.fit(data, seed=r)
        secs[name].append(time.perf_counter() - t)
    n_patterns.append(int(fit.details["n_patterns"]))
# then gradient MLE on complete designs (every annotator rates every item: the same shapes
# each replication), whose compiled programs are kept; after the loop above, so that its
# programs do not warm those fits
for r in range(reps):
    rng = np.random.default_rng(1000 + r)
    y = rng.integers(0, K, n)
    complete = nc.Annotations.from_wide(np.stack(
        [[rng.choice(K, p=conf[a, y[i]]) for a in range(J)] for i in range(n)]))
    t = time.perf_counter()
    nc.DawidSkene().fit(complete, method="mle", seed=r)
    secs["dawid_skene_mle_complete"].append(time.perf_counter() - t)
print(json.dumps({"seconds": secs, "n_patterns": n_patterns, "noisycal_file": nc.__file__}))
"""

_CROWDKIT_CODE = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import pandas as pd
from crowdkit.aggregation import DawidSkene
t_import = time.perf_counter() - t0
f = np.load(sys.argv[2])
if "true_class" in f:  # the simulated design: the ratings noisycal's children fit
    df = pd.DataFrame({"task": f["item"], "worker": f["annotator"], "label": f["label"]})
else:
    lab = np.stack([f[f"random_label{j}"] for j in (1, 2, 3)], axis=1)[:int(sys.argv[1])]
    n, J = lab.shape
    df = pd.DataFrame({"task": np.repeat(np.arange(n), J),
                       "worker": np.tile(np.arange(J), n), "label": lab.ravel()})
t1 = time.perf_counter()
ds = DawidSkene(n_iter=100).fit(df)
t_first = time.perf_counter() - t1
out = {"import_s": t_import, "first_fit_s": t_first, "n_iter": len(ds.loss_history_)}
if "true_class" in f:
    map_labels = ds.labels_.reindex(np.arange(f["true_class"].size)).to_numpy()
    out["map_accuracy"] = float(np.mean(map_labels == f["true_class"]))
    out["map_labels"] = [int(v) for v in map_labels]
print(json.dumps(out))
"""


#: The simulated design: annotators (each rates every item), classes, each annotator's
#: accuracy (the diagonal of its confusion matrix; the rest spread evenly over the other
#: classes), the simulator's seed; the prevalence is uniform.
SIM_ANNOTATORS, SIM_CLASSES, SIM_ACCURACY, SIM_SEED = 3, 10, 0.7, 0

#: The children's working folder: not the checkout, whose ``noisycal/`` would shadow the
#: ``--pythonpath`` one (``python -c`` puts the working folder first on ``sys.path``).
CHILD_CWD = tempfile.gettempdir()


def _env(pythonpath: str | None) -> dict:
    import noisycal as nc

    env = dict(os.environ)
    if nc.datasets.data_dir() is not None:
        env.setdefault("NOISYCAL_DATA", str(nc.datasets.data_dir()))  # for any checkout
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _wall(argv: list[str], env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, env=env, capture_output=True, cwd=CHILD_CWD)
    return time.perf_counter() - t


def import_times(repeats: int, env: dict) -> dict:
    """Wall seconds of fresh ``import noisycal`` processes and ``-X importtime``'s total."""
    empty = [_wall([sys.executable, "-c", "pass"], env) for _ in range(repeats)]
    full = [_wall([sys.executable, "-c", "import noisycal"], env) for _ in range(repeats)]
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import noisycal"],
                         check=True, env=env, capture_output=True, text=True,
                         cwd=CHILD_CWD).stderr
    cumulative = [int(line.split("|")[1]) for line in out.splitlines()
                  if line.rstrip().endswith("| noisycal")]
    return {"wall_s": full, "wall_median_s": statistics.median(full),
            "empty_interpreter_median_s": statistics.median(empty),
            "import_median_s": statistics.median(full) - statistics.median(empty),
            "importtime_cumulative_s": cumulative[0] / 1e6 if cumulative else None}


def first_fit(source: int | str, cache: str, env: dict) -> dict:
    """One fresh process: import, first EM fit, second EM fit, on CIFAR-10N's first
    ``source`` images or (a path ending ``.npz``) the simulated design's ratings."""
    out = subprocess.run([sys.executable, "-c", _FIT_CODE, str(source), cache], check=True,
                         env=env, capture_output=True, text=True, cwd=CHILD_CWD)
    return json.loads(out.stdout.strip().splitlines()[-1])


def simulate_design(n_items: int, path: str) -> dict:
    """Simulate the design's ratings with :func:`noisycal.simulate.dawid_skene` and write
    them (item, annotator, label codes and the true classes) to ``path`` (``.npz``), for
    both noisycal's and crowd-kit's children to read; returns the design's parameters."""
    import numpy as np

    import noisycal as nc

    J, K, acc = SIM_ANNOTATORS, SIM_CLASSES, SIM_ACCURACY
    conf = np.full((J, K, K), (1 - acc) / (K - 1))
    conf[:, np.arange(K), np.arange(K)] = acc
    sim = nc.simulate.dawid_skene(n_items, np.full(K, 1 / K), conf, seed=SIM_SEED)
    a = sim.annotations
    np.savez(path, item=np.asarray(a.items)[a.item_index],
             annotator=np.asarray(a.annotators)[a.annotator_index],
             label=np.asarray(a.classes)[a.label_index], true_class=sim.true_class,
             n_classes=K, n_annotators=J)
    return {"n_items": n_items, "n_annotators": J, "n_classes": K, "accuracy": acc,
            "off_diagonal": (1 - acc) / (K - 1), "prevalence": "uniform",
            "seed": SIM_SEED, "n_ratings": int(a.item_index.size)}


def replications(n_items: int, reps: int, env: dict) -> dict:
    """One fresh process fitting ``reps`` new simulated data sets in turn (a simulation
    study with missing ratings): seconds of each fit."""
    out = subprocess.run([sys.executable, "-c", _REPLICATION_CODE, str(n_items), str(reps)],
                         check=True, env=env, capture_output=True, text=True, cwd=CHILD_CWD)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["n_items"] = n_items
    for name, secs in r["seconds"].items():
        later = secs[1:]
        r[name] = {"first_s": secs[0],
                   "later_median_s": statistics.median(later) if later else None,
                   "later_total_s": sum(later)}
    return r


def cifar10n_path() -> str | None:
    """CIFAR-10N's ``.npz`` under the data folder, or None when it is not there."""
    import noisycal as nc

    folder = nc.datasets.data_dir()
    path = os.path.join(folder, "cifar10n", "cifar10n.npz") if folder else None
    return path if path and os.path.isfile(path) else None


def crowdkit_first_fit(python: str, n_items: int, env: dict,
                       path: str | None = None) -> dict | None:
    """crowd-kit's first fit in a fresh process of ``python`` on CIFAR-10N's first
    ``n_items`` images, or on the simulated design's ratings at ``path``; None without
    crowd-kit."""
    if not os.path.exists(python):
        return None
    probe = subprocess.run([python, "-c", "import crowdkit"], capture_output=True)
    if probe.returncode:
        return None
    path = path or cifar10n_path()
    out = subprocess.run([python, "-c", _CROWDKIT_CODE, str(n_items), path], check=True,
                         capture_output=True, text=True, env={
                             k: v for k, v in env.items() if k != "PYTHONPATH"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def blas_note(env: dict) -> dict:
    """The BLAS a child process loads (threadpoolctl) and the OpenBLAS variables set."""
    code = ("import json, numpy; from threadpoolctl import threadpool_info; print(json.dumps("
            "[{k: d.get(k) for k in ('internal_api', 'version', 'architecture', "
            "'num_threads')} for d in threadpool_info()]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         cwd=CHILD_CWD,
                         text=True)
    return {"threadpool": json.loads(out.stdout) if out.returncode == 0 else None,
            **{k: env.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                       "OPENBLAS_NUM_THREADS")}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-items", type=int, default=5000,
                    help="CIFAR-10N's first images (0: skip CIFAR-10N)")
    ap.add_argument("--sim-items", type=int, default=20000,
                    help="items of the simulated design (0: skip it)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pythonpath", default=None,
                    help="PYTHONPATH of the child processes (default: inherited)")
    ap.add_argument("--crowdkit-python", default="/tmp/ck/bin/python")
    ap.add_argument("--name", default="bench_first_call")
    ap.add_argument("--replications", type=int, default=10,
                    help="new simulated data sets fitted in one process (0: skip)")
    ap.add_argument("--replication-items", type=int, default=500)
    add_publish_argument(ap)
    return ap.parse_args(argv)


def fit_modes(source: int | str, env: dict, has_cache: bool) -> dict:
    """The first-fit processes of one design (``cold``, then with a compilation cache in a
    new empty folder: ``cache-fill``, ``cache-warm``, ``cache-warm-blas1``), printed."""
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        modes = {"cold": ("none", env)}
        if has_cache:
            modes.update({"cache-fill": (folder, env), "cache-warm": (folder, env),
                          # diagnostic: the same with single-threaded OpenBLAS (the
                          # identification check's small Cholesky and eigh)
                          "cache-warm-blas1": (folder, {**env, "OPENBLAS_NUM_THREADS": "1"})})
        for mode, (cache, mode_env) in modes.items():
            out[mode] = r = first_fit(source, cache, mode_env)
            ph = r["first_fit_phases_s"]
            acc = f", MAP accuracy {r['map_accuracy']:.4f}" if "map_accuracy" in r else ""
            print(f"{mode:16s}: import {r['import_s']:.2f} s, modules {r['modules_s']:.2f} s, "
                  f"first fit {r['first_fit_s']:.2f} s (EM {ph['multistart_em']:.2f} s, "
                  f"identification {ph['ds_identification']:.2f} s), second fit "
                  f"{r['second_fit_s']:.2f} s (loglik {r['loglik']:.6f}, {r['n_iter']} "
                  f"iterations, {r['n_patterns']} patterns, {r['status']}{acc})")
    return out


def against_crowdkit(fits: dict, ck: dict | None, python: str) -> None:
    """Print crowd-kit's first fit and store each process's first fit / crowd-kit's."""
    if ck is None:
        print(f"crowd-kit: not available at {python}")
        return
    acc = f", MAP accuracy {ck['map_accuracy']:.4f}" if "map_accuracy" in ck else ""
    print(f"crowd-kit : import {ck['import_s']:.2f} s, first fit {ck['first_fit_s']:.2f} s"
          f" ({ck['n_iter']} iterations{acc})")
    for mode, r in fits.items():
        ratio = r["first_fit_s"] / ck["first_fit_s"]
        print(f"  noisycal {mode} first fit / crowd-kit first fit: {ratio:.1f}x")
        r["ratio_to_crowdkit"] = ratio


def simulated(args: argparse.Namespace, env: dict, has_cache: bool) -> dict:
    """The simulated design, measured as CIFAR-10N: the same ratings (a temporary file)
    for every noisycal process and for crowd-kit's; their MAP labels' accuracy against
    the simulated truth, and the share of items where the two MAP labels agree."""
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ratings.npz")
        sim = simulate_design(args.sim_items, path)
        print(f"simulated design: {sim}")
        fits = fit_modes(path, env, has_cache)
        ck = crowdkit_first_fit(args.crowdkit_python, args.sim_items, env, path=path)
    labels = {mode: np.array(r.pop("map_labels")) for mode, r in fits.items()}
    sim.update(fits)
    against_crowdkit(fits, ck, args.crowdkit_python)
    sim["crowdkit"] = ck
    if ck is not None:
        ck_labels = np.array(ck.pop("map_labels"))
        for mode, lab in labels.items():
            fits[mode]["map_agreement_crowdkit"] = float(np.mean(lab == ck_labels))
        print("  MAP labels equal to crowd-kit's: " + ", ".join(
            f"{mode} {r['map_agreement_crowdkit']:.4f}" for mode, r in fits.items()))
    return sim


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    env = _env(args.pythonpath)
    load = os.getloadavg()[0]
    cifar = args.n_items if args.n_items and cifar10n_path() else 0
    print(f"first-call benchmark: {cifar} CIFAR-10N items (asked {args.n_items}; "
          f"data {'found' if cifar10n_path() else 'absent'}), {args.sim_items} simulated "
          f"items, load {load:.1f} on {os.cpu_count()} CPUs")
    result: dict = {"n_items": cifar, "load_1min": load, "cpus": os.cpu_count(),
                    "blas": blas_note(env)}
    print(f"BLAS: {result['blas']}")
    result["import"] = imp = import_times(args.repeats, env)
    print(f"import noisycal: {imp['import_median_s']:.2f} s (median of {args.repeats} fresh "
          f"processes, less {imp['empty_interpreter_median_s']:.2f} s of an empty "
          f"interpreter); -X importtime {imp['importtime_cumulative_s']:.2f} s")
    has_cache = subprocess.run(
        [sys.executable, "-c", "import noisycal as nc; nc.set_compilation_cache"],
        env=env, capture_output=True, cwd=CHILD_CWD).returncode == 0
    if cifar:
        fits = fit_modes(cifar, env, has_cache)
        result.update(fits)
        result["crowdkit"] = ck = crowdkit_first_fit(args.crowdkit_python, cifar, env)
        against_crowdkit(fits, ck, args.crowdkit_python)
    if args.sim_items:
        result["simulated"] = simulated(args, env, has_cache)
    if args.replications:
        result["replications"] = rep = replications(args.replication_items,
                                                    args.replications, env)
        print(f"replications: {args.replications} new data sets of {rep['n_items']} items "
              f"(5 annotators, 2-4 ratings each, 3 classes) in one process; patterns "
              f"{rep['n_patterns']}")
        for name in ("dawid_skene", "mace"):
            x = rep[name]
            print(f"  {name}: first fit {x['first_s']:.2f} s, later fits median "
                  f"{x['later_median_s']:.3f} s (total {x['later_total_s']:.2f} s)")
    result["load_1min_end"] = os.getloadavg()[0]
    write_result(args.name, result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
