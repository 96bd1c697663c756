"""Benchmark: Dawid–Skene NUTS on DS-1979, noisycal against NumPyro's enumerated model.

What is compared
----------------
Both sides sample the posterior of the full Dawid–Skene model (one 4 x 4 confusion
matrix per observer, one class prevalence) on the Dawid & Skene (1979) anaesthetist
ratings: 45 patients, 5 observers, observer 1 rating every patient three times
(315 ratings, K = 4). Both use the Stan User's Guide priors that noisycal uses
(``noisycal.models.dawid_skene.default_priors``): prevalence ~ Dirichlet(3, 3, 3, 3),
each confusion row k ~ Dirichlet(beta[k]) with beta[k, k] = 2.5 K = 10 and 1 elsewhere.
Both run NUTS in float64 with the same chains, warmup and draws (default 4 chains run
one after another, 1000 warmup + 1000 draws each) and seed.

* noisycal: ``nc.DawidSkene(n_classes=4).fit(ann, method=nc.engines.NUTS(num_chains=4,
  num_warmup=1000, num_samples=1000, chain_method="sequential"), seed=seed)``. Its model
  marginalises the true class with ``logsumexp``. The timed call is the whole public
  ``fit``: a short MAP-EM (4 starts) that gives the chains their starting point, the
  jitted potential, NUTS, relabelling every draw to the majority-vote class order,
  the Rao-Blackwellised item posteriors, the log-likelihood at the posterior mean and
  ArviZ R-hat/ESS. It returns NumPy arrays.
* baseline: the Dawid–Skene model of NumPyro's ``examples/annotation.py`` written
  out here (with the priors above instead of the example's flat Dirichlet(1) priors):
  the class of each item is a discrete site
  ``numpyro.sample("c", dist.Categorical(prevalence), infer={"enumerate": "parallel"})``
  in an item plate, each rating is ``Categorical(confusion[observer, c, :])`` in a
  position plate, and NUTS sums ``c`` out by funsor enumeration (``pip install funsor``).
  Data are laid out as in the example: a 45 x 7 matrix of ratings and the observer of
  each of the 7 positions, (1, 1, 1, 2, 3, 4, 5). It runs as
  ``MCMC(NUTS(model), num_warmup=..., num_samples=..., num_chains=...,
  chain_method="sequential", progress_bar=False).run(PRNGKey(seed), ...)`` inside
  ``jax.enable_x64(True)`` (scoped), with NumPyro's default initialisation
  (uniform in (-2, 2) on the unconstrained scale). The timed part is building the
  ``MCMC`` object, ``run`` (model tracing, funsor set-up, compilation, sampling) and
  ``get_samples`` converted to NumPy. The example has no label-switching guard.

Each side is run twice in the same process with identical arguments, interleaved
(noisycal, baseline, noisycal, baseline): the first ("cold") includes tracing and
compilation, the second ("warm") reuses whatever each library caches within the
process: noisycal keeps its compiled sampler (keyed by the model and the shapes of its
data) and passes the data as arguments, so a warm fit compiles nothing; the baseline
builds a new ``MCMC`` object, which traces and compiles again. The
speed-up (baseline time / noisycal time) is reported for both; the target is at
least 2x.

Agreement
---------
The posterior means are compared on the warm runs. Each baseline chain is oriented to
noisycal's class order by the Hungarian method on its mean confusion rows and mean
prevalence (the script reports how many chains needed a permutation). ArviZ's
``mcse(method="mean")`` gives each side's Monte-Carlo standard error of every mean;
the script reports max |difference| and max |difference| / sqrt(mcse_nc^2 + mcse_base^2)
over the 4 + 80 entries (below about 4 means agreement within Monte-Carlo error).

Usage::

    python benchmarks/bench_nuts.py              # 4 chains x (1000 + 1000)
    python benchmarks/bench_nuts.py --quick      # 4 chains x (200 + 200)

Results are printed and written to ``benchmarks/output/bench_nuts.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from importlib.metadata import PackageNotFoundError, version

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)
from scipy.optimize import linear_sum_assignment

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal.datasets._dawid_skene_1979 import POSITIONS_OBSERVER, RATINGS
from noisycal.engines.density.nuts import import_arviz
from noisycal.models.dawid_skene import default_priors

TARGET_SPEEDUP = 2.0
AGREEMENT_Z = 4.0
N_CLASSES = 4


def pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


# ---------------------------------------------------------------- noisycal
def fit_noisycal(ann: nc.Annotations, args: argparse.Namespace) -> tuple[float, dict]:
    """Time the public NUTS fit; return (seconds, draws grouped by chain and summary)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        fit = nc.DawidSkene(n_classes=N_CLASSES).fit(
            ann, method=nc.engines.NUTS(num_chains=args.num_chains, num_warmup=args.num_warmup,
                                        num_samples=args.num_samples, chain_method="sequential"),
            seed=args.seed)
        seconds = time.perf_counter() - t0
    C, S = int(fit.details["chains"]), args.num_samples
    prev = np.asarray(fit.draws["prevalence"])[:, 0, :].reshape(C, S, N_CLASSES)
    conf = np.asarray(fit.draws["confusion"]).reshape(C, S, *fit.confusion.shape)
    out = {
        "prevalence": prev, "confusion": conf,
        "mean_prevalence": np.asarray(fit.prevalence), "mean_confusion": np.asarray(fit.confusion),
        "status": fit.status, "message": fit.message,
        "max_rhat": float(fit.details["max_rhat"]),
        "min_ess_bulk": float(fit.details["min_ess_bulk"]),
        "num_divergences": int(fit.details["num_divergences"]),
        "relabelled_chains": list(fit.details["relabelled_chains"]),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    }
    return seconds, out


# ---------------------------------------------------------------- baseline
def enumerated_dawid_skene(positions: np.ndarray, ratings: np.ndarray, alpha: jax.Array,
                           beta: jax.Array) -> None:
    """Dawid–Skene with the item class as an enumerated discrete site (funsor).

    positions : (P,) observer index (0-based) of each rating position
    ratings : (I, P) observed class index (0-based) of each item at each position
    alpha : (K,) Dirichlet prior of the prevalence; beta : (K, K) of each confusion row
    """
    import numpyro
    import numpyro.distributions as dist
    from numpyro.ops.indexing import Vindex

    n_observers = int(np.max(positions)) + 1
    n_classes = alpha.shape[0]
    n_items, n_positions = ratings.shape
    prevalence = numpyro.sample("prevalence", dist.Dirichlet(alpha))
    with numpyro.plate("observer", n_observers, dim=-2), \
            numpyro.plate("true_class", n_classes, dim=-1):
        confusion = numpyro.sample("confusion", dist.Dirichlet(beta))  # (J, K, K)
    with numpyro.plate("item", n_items, dim=-2):
        c = numpyro.sample("c", dist.Categorical(prevalence),
                           infer={"enumerate": "parallel"})
        with numpyro.plate("position", n_positions, dim=-1):
            # Vindex broadcasts the enumerated c (K, 1, 1) against positions (P,)
            probs = Vindex(confusion)[positions, c, :]
            numpyro.sample("y", dist.Categorical(probs), obs=ratings)


def fit_baseline(positions: np.ndarray, ratings: np.ndarray, alpha: np.ndarray,
                 beta: np.ndarray, args: argparse.Namespace) -> tuple[float, dict]:
    from numpyro.infer import MCMC, NUTS

    with jax.enable_x64(True):
        t0 = time.perf_counter()
        mcmc = MCMC(NUTS(enumerated_dawid_skene), num_warmup=args.num_warmup,
                    num_samples=args.num_samples, num_chains=args.num_chains,
                    chain_method="sequential", progress_bar=False)
        mcmc.run(jax.random.PRNGKey(args.seed), positions, ratings, jnp.asarray(alpha),
                 jnp.asarray(beta), extra_fields=("diverging",))
        samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
        seconds = time.perf_counter() - t0
        diverging = np.asarray(mcmc.get_extra_fields()["diverging"])
    return seconds, {"prevalence": samples["prevalence"], "confusion": samples["confusion"],
                     "dtype": str(samples["confusion"].dtype),
                     "num_divergences": int(diverging.sum())}


# ---------------------------------------------------------------- agreement
def orient_chains(prev: np.ndarray, conf: np.ndarray, ref_prev: np.ndarray,
                  ref_conf: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Permute each chain's latent classes to match the reference means (Hungarian).

    prev (C, S, K), conf (C, S, J, K, K) with conf[..., j, true, observed]; a class
    permutation moves prevalence entries and the *true* (row) axis of every confusion.
    """
    prev, conf = prev.copy(), conf.copy()
    perms = []
    for ch in range(prev.shape[0]):
        m_prev, m_conf = prev[ch].mean(0), conf[ch].mean(0)
        # cost[a, b]: chain class a taken as reference class b
        cost = (((m_conf[:, :, None, :] - ref_conf[:, None, :, :]) ** 2).sum(axis=(0, 3))
                + (m_prev[:, None] - ref_prev[None, :]) ** 2)
        rows, cols = linear_sum_assignment(cost)
        perm = np.empty(len(rows), dtype=int)
        perm[cols] = rows  # reference class b <- chain class perm[b]
        prev[ch] = prev[ch][:, perm]
        conf[ch] = conf[ch][:, :, perm, :]
        perms.append(perm.tolist())
    return prev, conf, perms


def compare(nc_res: dict, base_res: dict) -> dict:
    az = import_arviz()
    b_prev, b_conf, perms = orient_chains(base_res["prevalence"], base_res["confusion"],
                                          nc_res["prevalence"].mean((0, 1)),
                                          nc_res["confusion"].mean((0, 1)))
    identity = list(range(N_CLASSES))
    relabelled = [ch for ch, p in enumerate(perms) if p != identity]
    sides = {"noisycal": {"prevalence": nc_res["prevalence"], "confusion": nc_res["confusion"]},
             "baseline": {"prevalence": b_prev, "confusion": b_conf}}
    mcse, rhat = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for side, draws in sides.items():
            idata = az.from_dict(posterior=draws)
            m = az.mcse(idata, method="mean")
            r = az.rhat(idata)
            mcse[side] = {v: np.asarray(m[v].values) for v in draws}
            rhat[side] = float(max(np.nanmax(r[v].values) for v in draws))
    out: dict = {"baseline_chain_permutations": perms, "baseline_relabelled_chains": relabelled,
                 "max_rhat_after_orientation": rhat}
    z_all = []
    for v in ("prevalence", "confusion"):
        mean_nc = sides["noisycal"][v].mean((0, 1))
        mean_b = sides["baseline"][v].mean((0, 1))
        diff = np.abs(mean_nc - mean_b)
        se = np.sqrt(mcse["noisycal"][v] ** 2 + mcse["baseline"][v] ** 2)
        z = diff / se
        z_all.append(z.ravel())
        out[v] = {"max_abs_diff": float(diff.max()), "max_z": float(z.max()),
                  "median_combined_mcse": float(np.median(se)),
                  "max_combined_mcse": float(se.max()),
                  "mean_noisycal": mean_nc.tolist(), "mean_baseline": mean_b.tolist()}
    z_all = np.concatenate(z_all)
    out["max_z"] = float(z_all.max())
    out["n_entries"] = int(z_all.size)
    out["n_entries_z_above_2"] = int((z_all > 2).sum())
    out["agree"] = bool(out["max_z"] < AGREEMENT_Z)
    return out


# ---------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-samples", type=int, default=1000, help="draws per chain (1000)")
    ap.add_argument("--num-warmup", type=int, default=1000, help="warmup per chain (1000)")
    ap.add_argument("--num-chains", type=int, default=4, help="chains, run sequentially (4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="smoke run: 200 warmup + 200 draws")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.num_samples, args.num_warmup = 200, 200
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import numpyro

    funsor_version = pkg_version("funsor")
    arviz_version = pkg_version("arviz")
    load = os.getloadavg()
    print("noisycal Dawid-Skene NUTS benchmark on DS-1979 (vs NumPyro + funsor enumeration)")
    print(f"  noisycal {nc.__version__}, jax {jax.__version__}, numpyro {numpyro.__version__}, "
          f"funsor {funsor_version or 'not installed'}, arviz {arviz_version}, "
          f"numpy {np.__version__}, python {platform.python_version()}")
    print(f"  device {jax.devices()[0].platform}, {os.cpu_count()} CPUs, "
          f"load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  {args.num_chains} chains (sequential) x ({args.num_warmup} warmup + "
          f"{args.num_samples} draws), seed {args.seed}, float64 on both sides")

    ann = nc.datasets.load_dawid_skene_1979()
    positions = np.asarray(POSITIONS_OBSERVER) - 1
    ratings = np.asarray(RATINGS) - 1
    if ann.n_ratings != ratings.size or ann.n_items != ratings.shape[0]:
        raise RuntimeError("the loaded dataset and the raw table disagree")
    alpha, beta = default_priors(N_CLASSES)
    print(f"  data: {ratings.shape[0]} items x {ratings.shape[1]} positions "
          f"(observers {POSITIONS_OBSERVER}), {ratings.size} ratings, K = {N_CLASSES}; "
          f"priors alpha = {alpha[0]:g}, beta diag = {beta[0, 0]:g}, off = {beta[0, 1]:g}")

    # initialise the JAX backend outside the timings
    with jax.enable_x64(True):
        jnp.zeros(1).block_until_ready()

    have_funsor = funsor_version is not None
    baseline_error = None
    if not have_funsor:
        baseline_error = "funsor is not installed (pip install funsor); baseline skipped"
        print(f"baseline: {baseline_error}")

    times: dict = {"noisycal": [], "baseline": []}
    nc_res = base_res = None
    for run in ("cold", "warm"):
        t, nc_res = fit_noisycal(ann, args)
        times["noisycal"].append(t)
        print(f"noisycal {run}: {t:.2f} s (status {nc_res['status']}, max R-hat "
              f"{nc_res['max_rhat']:.3f}, min bulk ESS {nc_res['min_ess_bulk']:.0f}, "
              f"{nc_res['num_divergences']} divergences, relabelled chains "
              f"{nc_res['relabelled_chains']})")
        if have_funsor and baseline_error is None:
            try:
                t, base_res = fit_baseline(positions, ratings, alpha, beta, args)
            except Exception as exc:  # report why the enumerated model failed
                baseline_error = f"{type(exc).__name__}: {exc}"
                print(f"baseline: FAILED: {baseline_error}")
                continue
            times["baseline"].append(t)
            print(f"baseline {run}: {t:.2f} s ({base_res['dtype']}, "
                  f"{base_res['num_divergences']} divergences)")
    for w in sorted(set(nc_res["warnings"])):
        print(f"  noisycal warning: {w}")

    result: dict = {
        "num_chains": args.num_chains, "num_warmup": args.num_warmup,
        "num_samples": args.num_samples, "seed": args.seed, "quick": args.quick,
        "target_speedup": TARGET_SPEEDUP,
        "environment": {
            "noisycal": nc.__version__, "jax": jax.__version__,
            "jaxlib": pkg_version("jaxlib"), "numpyro": numpyro.__version__,
            "funsor": funsor_version, "arviz": arviz_version, "numpy": np.__version__,
            "python": platform.python_version(), "device": str(jax.devices()[0]),
            "cpu_count": os.cpu_count(), "load_avg_at_start": list(load),
        },
        "noisycal": {"cold_s": times["noisycal"][0], "warm_s": times["noisycal"][1],
                     **{k: v for k, v in nc_res.items()
                        if k not in ("prevalence", "confusion", "mean_prevalence",
                                     "mean_confusion")}},
        "baseline": None, "baseline_error": baseline_error,
    }
    if base_res is not None and len(times["baseline"]) == 2:
        cold = times["baseline"][0] / times["noisycal"][0]
        warm = times["baseline"][1] / times["noisycal"][1]
        print(f"speed-up (baseline / noisycal): cold {cold:.2f}x "
              f"({times['baseline'][0]:.2f} s / {times['noisycal'][0]:.2f} s), warm {warm:.2f}x "
              f"({times['baseline'][1]:.2f} s / {times['noisycal'][1]:.2f} s)")
        verdict = {run: ("meets" if r >= TARGET_SPEEDUP else "MISSES")
                   for run, r in (("cold", cold), ("warm", warm))}
        print(f"  {TARGET_SPEEDUP:g}x target: cold {verdict['cold']}, warm {verdict['warm']}")
        agr = compare(nc_res, base_res)
        print(f"agreement (warm runs): baseline chains relabelled "
              f"{len(agr['baseline_relabelled_chains'])} of {args.num_chains} "
              f"(permutations {agr['baseline_chain_permutations']}); max R-hat after "
              f"orientation: noisycal {agr['max_rhat_after_orientation']['noisycal']:.3f}, "
              f"baseline {agr['max_rhat_after_orientation']['baseline']:.3f}")
        for v in ("prevalence", "confusion"):
            a = agr[v]
            print(f"  {v}: max |d mean| {a['max_abs_diff']:.2e}, combined MCSE median "
                  f"{a['median_combined_mcse']:.2e} (max {a['max_combined_mcse']:.2e}), "
                  f"max |d| / MCSE {a['max_z']:.2f}")
        print(f"  over all {agr['n_entries']} entries: max |d| / MCSE {agr['max_z']:.2f} "
              f"({agr['n_entries_z_above_2']} above 2) -> "
              + ("agree within Monte-Carlo error" if agr["agree"]
                 else f"DISAGREE (threshold {AGREEMENT_Z:g})"))
        print("  posterior mean prevalence: noisycal "
              f"{np.round(agr['prevalence']['mean_noisycal'], 3).tolist()}, baseline "
              f"{np.round(agr['prevalence']['mean_baseline'], 3).tolist()}")
        result["baseline"] = {"cold_s": times["baseline"][0], "warm_s": times["baseline"][1],
                              "num_divergences": base_res["num_divergences"],
                              "dtype": base_res["dtype"]}
        result["speedup"] = {"cold": cold, "warm": warm}
        result["meets_target"] = {"cold": cold >= TARGET_SPEEDUP, "warm": warm >= TARGET_SPEEDUP}
        result["agreement"] = agr
    write_result("bench_nuts", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
