"""Benchmark: the 10-class Dawid–Skene NUTS fit on CIFAR-10N, rating patterns collapsed
against the full data, in one run.

What is compared
----------------
``nc.DawidSkene(10).fit(ann, method="nuts")`` hands NUTS one item per distinct rating
pattern, weighted by its count (same log density as the full data). The baseline is the
sampler as it ran before that change: the same engine call
(``noisycal.engines.density.dawid_skene.sample_dawid_skene``) on the full, uncollapsed ratings,
started from the same MAP-EM point with the same seed and settings. Both timed parts
are the sampler call alone (compilation included on the first call of each, reported
separately as "cold"; the "warm" call is an identical second call). The public fit is
timed once too, start included.

Data: the three CIFAR-10N labels (``random_label1..3``) of the 5,000 DenseNet-40
validation images (the images of ``cifar10_logits/densenet40_c10.npz``'s
``val_train_idx``) when ``../shared/data`` (or ``$NOISYCAL_DATA``) is present; otherwise
a simulation of the same size (3 one-coin-like annotators of accuracy 0.82 with errors
spread unevenly, uniform classes), and the output says so.

Agreement: the posterior means of every confusion entry and prevalence of the two runs,
their difference divided by sqrt(mcse_a^2 + mcse_b^2) (ArviZ ``mcse(method="mean")``),
maximum over entries; below about 4 the two agree within Monte-Carlo error.

::

    python benchmarks/bench_nuts_patterns.py                    # 4 x (500 + 500)
    python benchmarks/bench_nuts_patterns.py --num-warmup 1000 --num-samples 1000
    python benchmarks/bench_nuts_patterns.py --quick            # 2 x (100 + 100)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import jax

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.engines.density.dawid_skene import (
    ds_model_kwargs,
    nuts_init_params,
    sample_dawid_skene,
)
from noisycal.engines.em.starts import multistart_em
from noisycal.engines.patterns import pattern_data
from noisycal.models.dawid_skene import default_priors, make_data

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _output import add_publish_argument, write_result  # noqa: E402

K = 10


def load(n_sim: int, seed: int) -> tuple[np.ndarray, str]:
    """(n, 3) labels: CIFAR-10N on the DenseNet-40 validation images, else simulated."""
    try:
        c10n = nc.datasets.load_cifar10n()
        lg = nc.datasets.load_cifar10_logits()
        return c10n.labels[np.asarray(lg.val_train_idx)], "CIFAR-10N (DenseNet-40 val images)"
    except (FileNotFoundError, AttributeError):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, K, n_sim)
        conf = np.full((K, K), 0.0)
        for k in range(K):
            w = rng.dirichlet(np.ones(K - 1) * 0.5)
            conf[k, np.arange(K) != k] = 0.18 * w
            conf[k, k] = 0.82
        lab = np.stack([[rng.choice(K, p=conf[c]) for c in y] for _ in range(3)], axis=1)
        return lab, f"simulated ({n_sim} items, 3 annotators, accuracy 0.82)"


def mcse_mean(draws: np.ndarray) -> np.ndarray:
    """ArviZ MCSE of the mean for draws of shape (chains, samples, ...)."""
    import arviz as az

    flat = draws.reshape(draws.shape[0], draws.shape[1], -1)
    return np.array([float(az.mcse(flat[:, :, i], method="mean")) for i in
                     range(flat.shape[2])])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--num-chains", type=int, default=4)
    ap.add_argument("--num-warmup", type=int, default=500)
    ap.add_argument("--num-samples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="2 chains x (100 + 100)")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.num_chains, args.num_warmup, args.num_samples = 2, 100, 100
    print(f"bench_nuts_patterns: {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; jax {jax.__version__}")
    labels, source = load(5000, args.seed)
    n = labels.shape[0]
    ann = nc.Annotations.from_wide(labels, classes=np.arange(K))
    arr = ann.engine_arrays()
    alpha, beta = default_priors(K)
    em = multistart_em(ann, None, 1, alpha, beta, None, one_coin=False, init="mixed",
                       n_starts=4, max_iter=1000, tol=1e-8,
                       rng_key=jax.random.split(jax.random.PRNGKey(args.seed))[0],
                       orientation="vote", anchor=0)
    init = nuts_init_params(em.prevalence, em.confusion, one_coin=False)
    vote = np.asarray(ann.majority_vote(tie="lowest"))
    with x64():
        full = make_data(arr.item, arr.annotator, arr.label, n_items=n, n_annotators=3,
                         n_classes=K, slots=False)
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=n, n_annotators=3,
                           n_classes=K, group=None, n_groups=1)
    print(f"data: {source}; {n} items, {pd_.data.n_items} distinct rating patterns "
          f"({n / pd_.data.n_items:.1f} items per pattern)")
    settings = dict(num_chains=args.num_chains, num_warmup=args.num_warmup,
                    num_samples=args.num_samples, seed=args.seed, progress_bar=False,
                    chain_method="vectorized", target_accept_prob=0.8, max_tree_depth=10,
                    dense_mass=False, orientation="vote", anchor=0, gold=None)

    def run(collapsed: bool) -> tuple[float, object]:
        t0 = time.perf_counter()
        if collapsed:
            nd = sample_dawid_skene(
                pd_.data, vote[pd_.representative],
                ds_model_kwargs(pd_.data, 1, alpha, beta, None, one_coin=False,
                                weights=pd_.counts),
                init, weights=pd_.counts, pattern=pd_.pattern, **settings)
        else:
            nd = sample_dawid_skene(full, vote, ds_model_kwargs(full, 1, alpha, beta, None,
                                                                one_coin=False),
                                    init, **settings)
        return time.perf_counter() - t0, nd

    res = {"source": source, "n_items": n, "n_patterns": int(pd_.data.n_items),
           "chains": args.num_chains, "warmup": args.num_warmup,
           "samples": args.num_samples}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = {}
        for label, collapsed in (("patterns", True), ("full", False)):
            cold, _ = run(collapsed)
            warm, nd = run(collapsed)
            times[label] = (cold, warm, nd)
            print(f"{label:>8}: cold {cold:8.2f} s   warm {warm:8.2f} s")
        t0 = time.perf_counter()
        fit = nc.DawidSkene(K).fit(ann, method=nc.engines.NUTS(num_chains=args.num_chains,
                                                               num_warmup=args.num_warmup,
                                                               num_samples=args.num_samples),
                                   seed=args.seed)
        t_public = time.perf_counter() - t0
    (pc, pw, a), (fc, fw, b) = times["patterns"], times["full"]
    print(f"public fit (MAP-EM start + NUTS + summaries, warm program): {t_public:.2f} s; "
          f"status {fit.status}")
    print(f"ratio full / patterns: cold {fc / pc:.2f}x, warm {fw / pw:.2f}x (target >= 3x)")
    z = []
    for name in ("prevalence", "confusion"):
        da, db = getattr(a, name), getattr(b, name)
        se = np.sqrt(mcse_mean(da) ** 2 + mcse_mean(db) ** 2)
        diff = np.abs(da.mean(axis=(0, 1)) - db.mean(axis=(0, 1))).ravel()
        z.append(diff / np.where(se > 0, se, np.inf))
    z = np.concatenate(z)
    post_diff = float(np.max(np.abs(a.post - b.post)))
    print(f"posterior means: max |difference| / MCSE = {z.max():.2f} over {z.size} entries "
          f"(below about 4: agreement within Monte-Carlo error); item posteriors max "
          f"|difference| {post_diff:.2e}")
    res.update(patterns_cold_s=pc, patterns_warm_s=pw, full_cold_s=fc, full_warm_s=fw,
               ratio_cold=fc / pc, ratio_warm=fw / pw, public_fit_s=t_public,
               public_status=fit.status, max_z=float(z.max()), n_entries=int(z.size),
               max_item_posterior_diff=post_diff, load=os.getloadavg())
    write_result("bench_nuts_patterns", res, publish=args.publish)
    return res


if __name__ == "__main__":
    main()
