"""Benchmark: the first NUTS fit of each annotator model, and its first ``to_arviz()``, in a
fresh Python process.

Every figure comes from a new subprocess per model, so nothing of that model is compiled
beforehand. The data are the Dawid & Skene (1979) anaesthetist ratings embedded in the
package (45 patients, 5 observers, K = 4), so the times are dominated by tracing and
compiling, not by sampling. Each process runs, for one model:

* ``import noisycal``;
* the first fit, ``model.fit(ann, method=nc.engines.NUTS(num_chains=2, num_warmup=500,
  num_samples=500), seed=0)`` on the patients without the first ``--drop`` (5: 40
  patients, 25 distinct rating patterns);
* the first ``fit.to_arviz()`` (posterior, sample statistics, pointwise log-likelihood,
  replicated ratings);
* a fit of new data of a similar size: the patients without the first ``--new-drop`` (2:
  43 patients, 27 patterns; a sampler compiled per exact shape would compile again, one
  compiled per bucketed size, here 28 patterns and 192 ratings for both, is reused).

Three modes: ``cold`` (no compilation cache), ``cache-fill`` (the first process with
:func:`noisycal.set_compilation_cache` pointing at an empty folder) and ``cache-warm``
(the next process with the same folder: the user's second run of a script). The goal of
the scale issue: the first NUTS fit of each model and the first ``to_arviz()`` under 10 s
with a warm cache.

The noisycal under test is the one importable in this process's environment
(``PYTHONPATH``); ``--pythonpath`` points the children at another checkout (the "before"
figures). Results go to ``benchmarks/output/bench_first_nuts.json``.

Usage::

    python benchmarks/bench_first_nuts.py [--models dawid_skene,hierarchical] [--drop 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

_CODE = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import noisycal as nc
t_import = time.perf_counter() - t0
name, cache, drop, new_drop = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if cache != "none":
    nc.set_compilation_cache(cache)
models = {"dawid_skene": nc.DawidSkene(), "one_coin": nc.OneCoinDawidSkene(),
          "class_conditional": nc.annotators.ClassConditionalDawidSkene(),
          "mace": nc.annotators.MACE(), "hierarchical": nc.annotators.HierarchicalDawidSkene()}
full = nc.datasets.load_dawid_skene_1979()
ann = full.subset(list(range(drop, full.n_items)))
nuts = nc.engines.NUTS(num_chains=2, num_warmup=500, num_samples=500)
warnings.simplefilter("ignore", nc.NoisycalWarning)  # the statuses are recorded


def patterns(a):
    from noisycal.engines.patterns import pattern_data
    r = a.engine_arrays()
    return int(pattern_data(r.item, r.annotator, r.label, n_items=a.n_items,
                            n_annotators=a.n_annotators, n_classes=a.n_classes, group=None,
                            n_groups=1).data.n_items)

t = time.perf_counter()
fit = models[name].fit(ann, method=nuts, seed=0)
t_fit = time.perf_counter() - t
t = time.perf_counter()
idata = fit.to_arviz()
t_arviz = time.perf_counter() - t
sub = full.subset(list(range(new_drop, full.n_items)))
t = time.perf_counter()
fit2 = models[name].fit(sub, method=nuts, seed=1)
t_new = time.perf_counter() - t
print(json.dumps({"import_s": t_import, "first_fit_s": t_fit, "first_to_arviz_s": t_arviz,
                  "new_data_fit_s": t_new, "status": fit.status,
                  "max_rhat": fit.details.get("max_rhat"),
                  "groups": sorted(idata.groups()),
                  "n_items": [ann.n_items, sub.n_items],
                  "n_patterns": [patterns(ann), patterns(sub)],
                  "noisycal_file": nc.__file__}))
"""

MODELS = ("dawid_skene", "one_coin", "class_conditional", "mace", "hierarchical")

#: The children's working folder: not the checkout, whose ``noisycal/`` would shadow the
#: ``--pythonpath`` one (``python -c`` puts the working folder first on ``sys.path``).
CHILD_CWD = tempfile.gettempdir()


def one(model: str, cache: str, drop: int, new_drop: int, env: dict) -> dict:
    """One fresh process: import, first fit, first to_arviz, a fit of new data."""
    out = subprocess.run([sys.executable, "-c", _CODE, model, cache, str(drop), str(new_drop)],
                         check=True,
                         env=env, capture_output=True, text=True, cwd=CHILD_CWD)
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--drop", type=int, default=5,
                    help="patients left out of the first fit (the first ones)")
    ap.add_argument("--new-drop", type=int, default=2,
                    help="patients left out of the new-data fit")
    ap.add_argument("--pythonpath", default=None,
                    help="PYTHONPATH of the child processes (default: inherited)")
    ap.add_argument("--name", default="bench_first_nuts")
    add_publish_argument(ap)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    models = [m for m in args.models.split(",") if m]
    unknown = set(models) - set(MODELS)
    if unknown:
        raise SystemExit(f"--models: unknown {sorted(unknown)}; choose from {MODELS}")
    load = os.getloadavg()[0]
    print(f"first NUTS fits: {len(models)} models, Dawid & Skene (1979) data, load "
          f"{load:.1f} on {os.cpu_count()} CPUs")
    result: dict = {"models": models, "drop": args.drop, "new_drop": args.new_drop,
                    "num_chains": 2, "num_warmup": 500, "num_samples": 500, "goal_s": 10.0,
                    "load_1min": load,
                    "cpus": os.cpu_count()}
    for model in models:
        with tempfile.TemporaryDirectory() as folder:
            for mode, cache in (("cold", "none"), ("cache-fill", folder),
                                ("cache-warm", folder)):
                r = one(model, cache, args.drop, args.new_drop, env)
                result.setdefault(model, {})[mode] = r
                print(f"{model:18s} {mode:10s}: import {r['import_s']:.2f} s, first fit "
                      f"{r['first_fit_s']:.2f} s ({r['status']}), to_arviz "
                      f"{r['first_to_arviz_s']:.2f} s, new data {r['new_data_fit_s']:.2f} s")
    result["load_1min_end"] = os.getloadavg()[0]
    write_result(args.name, result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
