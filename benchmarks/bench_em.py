"""Benchmark: Dawid–Skene EM, noisycal against crowd-kit's ``DawidSkene``.

What is compared
----------------
Both libraries fit the full Dawid–Skene model (one K x K confusion matrix per
annotator, one class prevalence) by EM on the same simulated ratings: n items, each
rated once by every one of J annotators (default n = 1,000,000, J = 5, K = 5, so
5,000,000 ratings), for exactly ``--iters`` (20) EM iterations from one start, the
soft majority vote (each item's share of ratings in each class):

* noisycal: ``nc.DawidSkene(n_classes=K).fit(ann, method=nc.engines.EM(init="soft_vote",
  n_starts=1, max_iter=20, tol=1e-300), seed=seed)``. ``tol=1e-300`` makes it run all 20 iterations
  (``fit.n_iter`` is checked); the ``not_converged`` ConvergenceWarning this gives is
  expected and silenced. The timed call is the whole public ``fit``: soft-vote start,
  packing the index arrays, the jitted EM loop, orientation of the classes and the
  result object. It returns NumPy arrays, so the JAX work has finished when the clock
  stops. It is run once first on the same data to compile (reported separately), then
  ``--reps`` (3) times: the median is the headline, and the CPU (process) time is
  printed as well (its ratio is less sensitive to other jobs on a shared machine).
* crowd-kit: ``DawidSkene(n_iter=20, tol=-inf).fit(df)`` on a DataFrame with columns
  ``task``, ``worker``, ``label``. crowd-kit stops when ``new_loss - loss < tol``, so
  ``tol=-inf`` never stops early (``len(loss_history_)`` is checked). Its fit starts
  from ``MajorityVote().fit_predict_proba`` (the same soft vote), does one M-step and
  then 20 (E-step, M-step) pairs, computing its ELBO every iteration.

Building the inputs is not part of either fit time: ``nc.Annotations.from_arrays`` and
``pd.DataFrame`` are timed and reported on their own.

Agreement
---------
After 20 iterations noisycal's ``item_posterior`` is the 20th E-step, as is crowd-kit's
``probas_``; noisycal's ``prevalence``/``confusion`` come from the M-step before that
E-step, while crowd-kit's ``priors_``/``errors_`` come from one more M-step after it.
The script reports the maximum absolute difference of the posteriors, of the
parameters as each library reports them, and of the parameters after applying that
one extra M-step (in NumPy) to noisycal's posteriors (like for like). Latent classes
are matched by the Hungarian method on the posteriors (crowd-kit's ``errors_`` is
indexed ``[(worker, observed), true]`` and is transposed to ``[worker, true, observed]``).

The target is a speed-up (crowd-kit fit time / noisycal fit time) of at least 30x at
n = 1,000,000. Several sizes can be run at once (``--n 100000 200000``); per-item
per-iteration times and the ratio are reported at each measured size, nothing is
extrapolated. Results are printed and written to ``benchmarks/output/bench_em.json``.

Designs (``--design``, several run one after another in the same process): ``dense``
(the default: J = 5 annotators rate every item, at most 5^5 distinct rating patterns),
``j50`` (5 distinct random annotators of 50 per item) and ``sparse`` (5 of 1,000 per
item: nearly every item has its own pattern, so collapsing patterns gains nothing and
the EM loop over 5e6 ratings is what is measured). Each design line prints the load
average (the machine may be shared), the ``Annotations`` construction time on its own
line and the engine's memory per rating.

Usage::

    python benchmarks/bench_em.py --design all       # dense, j50 and sparse at n = 1e6
    python benchmarks/bench_em.py                    # n = 1e6, J = 5, K = 5, 20 iterations
    python benchmarks/bench_em.py --quick            # n = 1e5
    python benchmarks/bench_em.py --n 100000 200000  # several sizes
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pandas as pd
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

import jax

import noisycal as nc
from noisycal.engines.relabel import hungarian_perm

TARGET_SPEEDUP = 30.0
TARGET_N = 1_000_000


def true_parameters(n_classes: int, n_annotators: int, seed: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Prevalence (K,) and confusion (J, K, K) ``[annotator, true, observed]``.

    Unequal prevalences; accuracies from 0.55 to 0.85 across annotators, errors spread
    unevenly over the other classes (a full, not one-coin, confusion matrix).
    """
    K, J = n_classes, n_annotators
    rng = np.random.default_rng(seed + 1000)
    prevalence = np.linspace(2.0, 1.0, K)
    prevalence /= prevalence.sum()
    accuracy = np.linspace(0.55, 0.85, J)
    confusion = np.empty((J, K, K))
    for j in range(J):
        for k in range(K):
            off = rng.dirichlet(np.full(K - 1, 2.0)) * (1.0 - accuracy[j])
            confusion[j, k] = np.insert(off, k, accuracy[j])
    return prevalence, confusion


#: Rating designs: (annotators J, ratings per item). "dense": every one of 5 annotators
#: rates every item; "j50": 5 random annotators of 50 per item; "sparse": 5 random
#: annotators of 1,000 per item (almost every item has its own rating pattern).
DESIGNS = {"dense": (5, 5), "j50": (50, 5), "sparse": (1000, 5)}


def random_annotators(rng: np.random.Generator, n: int, n_annotators: int, per_item: int
                      ) -> np.ndarray:
    """(n, per_item) distinct annotators per item, uniformly at random."""
    J, S = n_annotators, per_item
    if S == J:
        return np.broadcast_to(np.arange(J), (n, J)).copy()
    who = rng.integers(0, J, size=(n, S))
    while True:  # redraw the rows with a repeated annotator (few: S^2 / 2J of them)
        srt = np.sort(who, axis=1)
        dup = np.any(srt[:, 1:] == srt[:, :-1], axis=1)
        if not dup.any():
            return who
        who[dup] = rng.integers(0, J, size=(int(dup.sum()), S))


def simulate(n: int, prevalence: np.ndarray, confusion: np.ndarray, seed: int,
             per_item: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Long item/annotator/label arrays: ``per_item`` distinct random annotators rate each
    item once (all J of them when ``per_item`` is None)."""
    rng = np.random.default_rng(seed)
    J, K, _ = confusion.shape
    S = J if per_item is None else per_item
    y = rng.choice(K, size=n, p=prevalence)
    who = random_annotators(rng, n, J, S)  # (n, S)
    cum = np.cumsum(confusion, axis=2)  # (J, K, K)
    u = rng.random((n, S))
    rows = cum[who, y[:, None]]  # (n, S, K)
    label = np.minimum((u[:, :, None] >= rows).sum(axis=2), K - 1)
    item = np.repeat(np.arange(n, dtype=np.int64), S)
    return item, who.reshape(-1).astype(np.int64), label.reshape(-1).astype(np.int64)


def fit_noisycal(ann: nc.Annotations, n_classes: int, iters: int, seed: int
                 ) -> tuple[float, object, float]:
    """(wall seconds, fit, CPU seconds) of one public ``DawidSkene.fit`` call with exactly
    ``iters`` steps."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        c0, t0 = time.process_time(), time.perf_counter()
        fit = nc.DawidSkene(n_classes=n_classes).fit(
            ann, method=nc.engines.EM(init="soft_vote", n_starts=1, max_iter=iters, tol=1e-300),
            seed=seed)
        t, c = time.perf_counter() - t0, time.process_time() - c0
    if fit.n_iter != iters:
        raise RuntimeError(f"noisycal ran {fit.n_iter} iterations, not {iters}")
    return t, fit, c


def _best_of(f: object, *args: object, reps: int = 3) -> tuple[float, float]:
    """(wall s, CPU s) of the run with the least CPU time, after one warm-up call."""
    jax.block_until_ready(f(*args))  # compile
    best = (float("inf"), float("inf"))
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(f(*args))
        c, t = time.process_time() - c0, time.perf_counter() - t0
        if c < best[1]:
            best = (t, c)
    return best


def engine_breakdown(ann: nc.Annotations, fit: object, iters: int, reps: int = 3) -> dict:
    """Where noisycal's fit time goes, phase by phase (best of ``reps`` by CPU time, wall
    and CPU seconds): the collapse test and packing, the soft-vote start, the jitted EM
    loop (``iters`` and 1 iteration, so the per-iteration cost is their difference),
    one E-step on the probability and on the log scale, one M-step, the orientation;
    and, as the same-run baseline, the loop with the log-scale E-step and the starts
    vmapped (the engine before the probability-scale E-step). Uses engine internals, so
    it reports an error instead of failing if they change."""
    try:
        import jax.numpy as jnp

        from noisycal.engines.em.dawid_skene import e_step, fit_em, m_step, run_em
        from noisycal.engines.em.estep import code_weights, prob_e_step
        from noisycal.engines.em.starts import orient
        from noisycal.engines.patterns import collapse_pays, pattern_data

        out: dict = {}

        def timed(name: str, f: object, *args: object) -> object:
            out[name] = _best_of(f, *args, reps=reps)
            return f(*args)

        arr = ann.engine_arrays()
        K = arr.n_classes
        with jax.enable_x64(True):
            timed("collapse_test", lambda: collapse_pays(
                arr.item.astype(np.int64), arr.annotator.astype(np.int64) * K + arr.label,
                arr.n_items))
            pd_ = timed("pattern_data", lambda: pattern_data(
                arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                n_annotators=arr.n_annotators, n_classes=K, group=None, n_groups=1,
                collapse="auto"))
            data = pd_.data
            w = jnp.asarray(pd_.counts, jnp.float64) if pd_.collapsed else None

            def start() -> jax.Array:
                c = ann.counts().astype(np.float64)
                soft = c / c.sum(axis=1, keepdims=True)
                return jnp.asarray((soft[pd_.representative] if pd_.collapsed else soft)[None])

            post0 = timed("soft_vote_start", start)

            def loop(p: jax.Array, it: int = iters) -> jax.Array:
                return fit_em(p, data, None, None, None, one_coin=False, max_iter=it,
                              tol=1e-300, weights=w).post

            timed("em_loop", loop, post0)
            timed("em_loop_1_iter", lambda p: loop(p, 1), post0)
            old = jax.jit(jax.vmap(lambda p: run_em(p, data, None, None, None,
                                                    one_coin=False, max_iter=iters,
                                                    tol=1e-300, weights=w)))
            timed("em_loop_log_scale_vmapped", lambda p: old(p).post, post0)
            diff = float(jnp.abs(loop(post0) - old(post0).post).max())
            prev = jnp.asarray(fit.group_prevalence)
            conf = jnp.asarray(fit.confusion)
            post = loop(post0)[0]
            cw = code_weights(data, w)
            timed("e_step_prob", jax.jit(lambda p, c: prob_e_step(p, c, data, None, w, cw)),
                  prev, conf)
            timed("e_step_log", jax.jit(lambda p, c: e_step(p, c, data, None)), prev, conf)
            timed("m_step", jax.jit(lambda q: m_step(q, data, None, None, False, w)), post)
            post_items = np.asarray(post)[pd_.pattern] if pd_.collapsed else np.asarray(post)
            vote = ann.counts().argmax(axis=1)
            timed("orientation", lambda: orient(post_items, np.asarray(fit.confusion), vote,
                                                "vote", 0))
        out = {k: {"wall_s": v[0], "cpu_s": v[1]} for k, v in out.items()}
        out["collapsed"] = bool(pd_.collapsed)
        out["per_iter_cpu_s"] = ((out["em_loop"]["cpu_s"] - out["em_loop_1_iter"]["cpu_s"])
                                 / max(iters - 1, 1))
        out["log_scale_max_abs_posterior_difference"] = diff
        return out
    except Exception as exc:  # noqa: BLE001 - a diagnostic, never the benchmark itself
        return {"error": f"{type(exc).__name__}: {exc}"}


def crowdkit_version() -> str | None:
    try:
        import crowdkit.aggregation  # noqa: F401
    except ImportError:
        return None
    try:
        return version("crowd-kit")
    except PackageNotFoundError:
        return "unknown"


def fit_crowdkit(df: pd.DataFrame, iters: int) -> tuple[float, object, float]:
    """(wall seconds, fitted model, CPU seconds) of one crowd-kit fit."""
    from crowdkit.aggregation import DawidSkene

    c0, t0 = time.process_time(), time.perf_counter()
    ds = DawidSkene(n_iter=iters, tol=float("-inf")).fit(df)
    t, c = time.perf_counter() - t0, time.process_time() - c0
    if len(ds.loss_history_) != iters:
        raise RuntimeError(f"crowd-kit ran {len(ds.loss_history_)} iterations, not {iters}")
    return t, ds, c


def one_m_step(post: np.ndarray, item_pos: np.ndarray, annotator_pos: np.ndarray,
               label_pos: np.ndarray, n_annotators: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain NumPy M-step (maximum likelihood) from item posteriors."""
    K = post.shape[1]
    code = annotator_pos * K + label_pos
    counts = np.stack([np.bincount(code, weights=post[item_pos, k],
                                   minlength=n_annotators * K) for k in range(K)])
    counts = counts.reshape(K, n_annotators, K).transpose(1, 0, 2)  # [j, true, observed]
    conf = counts / counts.sum(axis=2, keepdims=True)
    return post.mean(axis=0), conf


def compare(fit: object, ds: object, item: np.ndarray, annotator: np.ndarray,
            label: np.ndarray) -> dict:
    """Max |difference| between the two fits after matching latent classes."""
    classes = np.asarray(fit.classes)
    annotators = np.asarray(fit.annotators)
    K, J = classes.size, annotators.size
    post_nc = np.asarray(fit.item_posterior)
    post_ck = ds.probas_.reindex(index=fit.items, columns=classes).to_numpy(dtype=float)
    # perm[c] = crowd-kit class matched to noisycal class c
    perm = hungarian_perm(post_ck.T @ post_nc)
    post_ck = post_ck[:, perm]
    prev_ck = ds.priors_.reindex(classes).to_numpy(dtype=float)[perm]
    idx = pd.MultiIndex.from_product([annotators, classes])
    err = ds.errors_.reindex(index=idx, columns=classes).to_numpy(dtype=float)
    conf_ck = err.reshape(J, K, K).transpose(0, 2, 1)  # [j, true, observed]
    conf_ck = conf_ck[:, perm][:, :, perm]
    # positions in the fit's own orders (which need not be sorted: no searchsorted)
    item_pos = pd.Index(fit.items).get_indexer(item)
    annotator_pos = pd.Index(annotators).get_indexer(annotator)
    label_pos = pd.Index(classes).get_indexer(label)
    if min(item_pos.min(), annotator_pos.min(), label_pos.min()) < 0:
        raise RuntimeError("a rating's item, annotator or label is not in the fit")
    prev_next, conf_next = one_m_step(post_nc, item_pos, annotator_pos, label_pos, J)
    return {
        "class_match": perm.tolist(),
        "posterior": float(np.abs(post_nc - post_ck).max()),
        "prevalence_as_reported": float(np.abs(fit.prevalence - prev_ck).max()),
        "confusion_as_reported": float(np.abs(fit.confusion - conf_ck).max()),
        "prevalence_after_extra_m_step": float(np.abs(prev_next - prev_ck).max()),
        "confusion_after_extra_m_step": float(np.abs(conf_next - conf_ck).max()),
    }


def engine_memory(ann: nc.Annotations) -> dict:
    """Bytes the EM engine holds for the ratings: the packed index arrays of the
    distinct rating patterns (rating arrays and slot layout) and the per-pattern float64
    arrays of one EM run (start posteriors, posteriors, weights when collapsed), per
    original rating."""
    from noisycal.engines.em.dawid_skene import pattern_data

    arr = ann.engine_arrays()
    with jax.enable_x64(True):
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                           n_annotators=arr.n_annotators, n_classes=arr.n_classes,
                           group=None, n_groups=1, collapse="auto")  # as the fit does
    d = pd_.data
    index = sum(int(a.nbytes) for a in (d.item, d.annotator, d.label, d.group))
    slots = 0 if d.slots is None else sum(int(a.nbytes) for a in d.slots)
    floats = (3 * arr.n_classes + int(pd_.collapsed)) * 8 * d.n_items
    R = arr.item.size
    return {"n_patterns": d.n_items, "collapsed": bool(pd_.collapsed),
            "n_slots": 0 if d.slots is None else int(d.slots.code.shape[1]),
            "index_bytes_per_rating": index / R,
            "slot_bytes_per_rating": slots / R, "float_bytes_per_rating": floats / R,
            "bytes_per_rating": (index + slots + floats) / R}


def run_size(n: int, design: str, args: argparse.Namespace, ck_version: str | None) -> dict:
    K, iters, seed = args.k, args.iters, args.seed
    J, S = DESIGNS[design] if design != "custom" else (args.j, args.j)
    prevalence, confusion = true_parameters(K, J, seed)
    item, annotator, label = simulate(n, prevalence, confusion, seed, per_item=S)
    R = item.size
    load_start = list(os.getloadavg())
    print(f"\n== design {design}: n = {n:,} items x {S} ratings from {J} annotators = "
          f"{R:,} ratings, K = {K}, {iters} iterations; load avg "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    t0 = time.perf_counter()
    ann = nc.Annotations.from_arrays(item, annotator, label, classes=np.arange(K))
    t_build = time.perf_counter() - t0
    t_first, _, _ = fit_noisycal(ann, K, iters, seed)
    runs = [fit_noisycal(ann, K, iters, seed) for _ in range(args.reps)]
    fit = runs[-1][1]
    walls = sorted(r[0] for r in runs)
    t_nc = float(np.median(walls))  # the headline: median of the timed fits
    c_nc = float(np.median([r[2] for r in runs]))
    per_nc = t_nc / (n * iters)
    print(f"noisycal: Annotations.from_arrays {t_build:.2f} s (separate, not in the fit)")
    print(f"noisycal: compile + first fit {t_first:.2f} s; {args.reps} timed fits "
          f"{', '.join(f'{t:.2f}' for t in walls)} s: median {t_nc:.2f} s, CPU {c_nc:.2f} s "
          f"({1e9 * per_nc:.1f} ns per item-iteration); n_iter = {fit.n_iter}")
    mem = engine_memory(ann)
    print(f"  engine memory: {mem['bytes_per_rating']:.1f} bytes per rating "
          f"({mem['index_bytes_per_rating']:.1f} rating index arrays, "
          f"{mem['slot_bytes_per_rating']:.1f} slot layout with {mem['n_slots']} slots, "
          f"{mem['float_bytes_per_rating']:.1f} float64 per-pattern arrays); "
          f"EM on {mem['n_patterns']:,} rows ("
          + ("distinct rating patterns)" if mem["collapsed"] else
             "every item: collapsing patterns would not pay)"))
    err_truth = {"prevalence": float(np.abs(fit.prevalence - prevalence).max()),
                 "confusion": float(np.abs(fit.confusion - confusion).max())}
    print(f"  noisycal vs the simulation truth: max |d prevalence| "
          f"{err_truth['prevalence']:.1e}, max |d confusion| {err_truth['confusion']:.1e}")

    out: dict = {
        "load_avg_start": load_start,
        "design": design, "n": n, "n_annotators": J, "ratings_per_item": S, "n_ratings": R,
        "noisycal": {"build_annotations_s": t_build, "compile_first_fit_s": t_first,
                     "memory": mem,
                     "fit_s": t_nc, "fit_cpu_s": c_nc, "fit_runs_s": walls,
                     "per_item_iteration_s": per_nc, "n_iter": fit.n_iter,
                     "max_abs_error_vs_truth": err_truth},
    }
    if args.breakdown:
        bd = engine_breakdown(ann, fit, iters)
        out["noisycal"]["breakdown"] = bd
        if "error" in bd:
            print(f"  breakdown unavailable: {bd['error']}")
        else:
            def ms(k: str) -> str:
                return f"{1e3 * bd[k]['wall_s']:.0f} ({1e3 * bd[k]['cpu_s']:.0f})"

            print("  breakdown, ms wall (CPU), best of 3 by CPU each, not additive with the "
                  f"timed fit: collapse test {ms('collapse_test')}; pattern_data "
                  f"{ms('pattern_data')} (collapsed: {bd['collapsed']}); soft-vote start "
                  f"{ms('soft_vote_start')}; EM loop {ms('em_loop')}, 1 iteration "
                  f"{ms('em_loop_1_iter')}: {1e3 * bd['per_iter_cpu_s']:.1f} ms CPU per "
                  f"iteration; E-step probability scale {ms('e_step_prob')}, log scale "
                  f"{ms('e_step_log')}; M-step {ms('m_step')}; orientation "
                  f"{ms('orientation')}")
            old = bd["em_loop_log_scale_vmapped"]
            print(f"  same-run baseline, the loop before (log-scale E-step, vmapped starts): "
                  f"{ms('em_loop_log_scale_vmapped')} ms, "
                  f"{old['cpu_s'] / bd['em_loop']['cpu_s']:.2f}x the loop's CPU time; "
                  f"posteriors agree to {bd['log_scale_max_abs_posterior_difference']:.1e}")

    if ck_version is None:
        out["crowdkit"] = None
        return out
    t0 = time.perf_counter()
    df = pd.DataFrame({"task": item, "worker": annotator, "label": label})
    t_df = time.perf_counter() - t0
    t_ck, ds, c_ck = fit_crowdkit(df, iters)
    per_ck = t_ck / (n * iters)
    ratio = t_ck / t_nc
    print(f"crowd-kit: DataFrame {t_df:.2f} s (not timed in the fit); fit {t_ck:.2f} s, "
          f"CPU {c_ck:.2f} s ({1e9 * per_ck:.1f} ns per item-iteration); iterations = "
          f"{len(ds.loss_history_)}; load avg now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    met = ratio >= TARGET_SPEEDUP
    at_target = n == TARGET_N
    verdict = (("meets" if met else "MISSES") + f" the {TARGET_SPEEDUP:.0f}x target"
               + ("" if at_target else f" (the target is set at n = {TARGET_N:,}; "
                                       "this size is a different measurement)"))
    print(f"speed-up (crowd-kit / noisycal fit): {ratio:.1f}x -> {verdict}; "
          f"counting the input build on both sides: {(t_ck + t_df) / (t_nc + t_build):.1f}x")
    diff = compare(fit, ds, item, annotator, label)
    print(f"agreement (classes matched {diff['class_match']}): max |d posterior| "
          f"{diff['posterior']:.1e}; as reported: prevalence {diff['prevalence_as_reported']:.1e}"
          f", confusion {diff['confusion_as_reported']:.1e}; after one extra M-step on "
          f"noisycal's posteriors: prevalence {diff['prevalence_after_extra_m_step']:.1e}, "
          f"confusion {diff['confusion_after_extra_m_step']:.1e}")
    out["crowdkit"] = {"build_dataframe_s": t_df, "fit_s": t_ck, "fit_cpu_s": c_ck,
                       "per_item_iteration_s": per_ck, "n_iter": len(ds.loss_history_)}
    out["speedup"] = ratio
    out["speedup_cpu"] = c_ck / c_nc
    out["load_avg_end"] = list(os.getloadavg())
    out["speedup_including_build"] = (t_ck + t_df) / (t_nc + t_build)
    out["meets_target"] = bool(met) if at_target else None
    out["max_abs_difference"] = diff
    return out


def print_summary(results: list[dict]) -> None:
    """One line per design and size: the clean summary to compare runs by."""
    print("\nsummary (wall: noisycal median of the timed fits, crowd-kit one fit; CPU: "
          "process time, less sensitive to other jobs on the machine)")
    print(f"  {'design':8s} {'n':>10s} {'noisycal s':>11s} {'crowd-kit s':>12s} "
          f"{'ratio':>7s} {'CPU ratio':>10s} {'posterior diff':>15s}  load avg (start, end)")
    for r in results:
        ck = r.get("crowdkit")
        nc_s = r["noisycal"]["fit_s"]
        if not ck:
            print(f"  {r['design']:8s} {r['n']:>10,} {nc_s:>11.2f} {'-':>12s}")
            continue
        print(f"  {r['design']:8s} {r['n']:>10,} {nc_s:>11.2f} {ck['fit_s']:>12.2f} "
              f"{r['speedup']:>6.1f}x {r['speedup_cpu']:>9.1f}x "
              f"{r['max_abs_difference']['posterior']:>15.1e}  "
              f"{r['load_avg_start'][0]:.1f}, {r['load_avg_end'][0]:.1f}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[TARGET_N],
                    help="items; several sizes run one after another (default 1,000,000)")
    ap.add_argument("--k", type=int, default=5, help="classes K (default 5)")
    ap.add_argument("--design", nargs="+", default=["dense"],
                    choices=[*DESIGNS, "custom", "all"],
                    help="rating designs, run one after another: dense (5 annotators rate "
                         "every item, the default), j50 (5 random of 50 per item), sparse "
                         "(5 random of 1,000 per item), all, or custom (--j annotators "
                         "rating every item)")
    ap.add_argument("--j", type=int, default=5,
                    help="annotators of the custom design, each rating every item")
    ap.add_argument("--iters", type=int, default=20, help="EM iterations (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="smoke run: n = 100,000")
    ap.add_argument("--reps", type=int, default=3,
                    help="timed noisycal fits after the compiling one; the median is the "
                         "headline (crowd-kit runs once: 30-60 s per fit)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also time noisycal's jitted EM loop, E-step and M-step alone")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.n = [100_000]
    if "all" in args.design:
        args.design = list(DESIGNS)
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    ck_version = crowdkit_version()
    load = os.getloadavg()
    print("noisycal Dawid-Skene EM benchmark (vs crowd-kit)")
    print(f"  noisycal {nc.__version__}, jax {jax.__version__}, numpy {np.__version__}, "
          f"pandas {pd.__version__}, crowd-kit {ck_version or 'not installed'}, "
          f"device {jax.devices()[0].platform}, {os.cpu_count()} CPUs, "
          f"load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  sizes n = {', '.join(f'{n:,}' for n in args.n)}; designs "
          f"{', '.join(args.design)}; K = {args.k}; {args.iters} iterations, one soft-vote "
          f"start; seed = {args.seed}")
    if ck_version is None:
        print("crowd-kit: not installed (pip install crowd-kit, or the 'bench' extra); "
              "only noisycal is timed")
    results = [run_size(n, d, args, ck_version) for d in args.design for n in args.n]
    print_summary(results)
    if TARGET_N not in args.n:
        print(f"\nnote: n = {TARGET_N:,} was not measured in this run; the "
              f"{TARGET_SPEEDUP:.0f}x target is not assessed (ratios above are at the "
              "sizes measured only)")

    result = {
        "k": args.k, "designs": args.design, "iters": args.iters, "seed": args.seed,
        "quick": args.quick, "target_speedup": TARGET_SPEEDUP, "target_n": TARGET_N,
        "environment": {
            "noisycal": nc.__version__, "jax": jax.__version__, "numpy": np.__version__,
            "pandas": pd.__version__, "crowd-kit": ck_version,
            "python": platform.python_version(), "device": str(jax.devices()[0]),
            "cpu_count": os.cpu_count(), "load_avg_at_start": list(load),
        },
        "sizes": results,
    }
    write_result("bench_em", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
