"""NUTS on collapsed rating patterns: the same log density, relabelling and
log-likelihood as the full data.

``DawidSkene.fit(method='nuts')`` hands the sampler one item per distinct rating pattern
with its count as a weight. The log density (prior + weighted likelihood, through
NumPyro's own ``log_density``), its gradient, the log-likelihood at a parameter set and
the vote agreement used for relabelling must equal those of the uncollapsed data at
arbitrary parameters; with groups and gold items too (patterns never mix groups or gold
classes).
"""

import warnings

import numpy as np
import pytest
from compiled_density import density

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.engines.density.dawid_skene import draw_perms
from noisycal.engines.em.dawid_skene import loglik_at, posteriors_at
from noisycal.engines.patterns import pattern_data
from noisycal.models import dawid_skene as dsm


def _ratings(seed, n=400, J=4, K=3, L=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    conf = 0.7 * np.eye(K) + 0.3 / K
    item, ann, lab = [], [], []
    for i in range(n):
        for j in rng.choice(J, size=rng.integers(1, J + 1), replace=False):
            item.append(i)
            ann.append(j)
            lab.append(rng.choice(K, p=conf[y[i]]))
    group = rng.integers(0, L, n)
    gold = np.where(rng.random(n) < 0.1, y, -1)
    return (np.array(item), np.array(ann), np.array(lab), group, gold, n, J, K, L)


def _annotations(item, ann, lab, n, J, K):
    return nc.Annotations.from_long({"item": item, "annotator": ann, "label": lab},
                                    classes=np.arange(K), items=np.arange(n),
                                    annotators=np.arange(J))


def _params(seed, J, K, L):
    rng = np.random.default_rng(seed)
    return {"prevalence": rng.dirichlet(np.ones(K), size=L),
            "confusion": rng.dirichlet(np.ones(K) * 2, size=(J, K))}


@pytest.mark.parametrize("with_gold", [False, True])
def test_weighted_pattern_log_density_equals_full_data(with_gold):
    item, ann, lab, group, gold, n, J, K, L = _ratings(0)
    gold = gold if with_gold else None
    with x64():
        full = dsm.make_data(item, ann, lab, n_items=n, n_annotators=J, n_classes=K,
                             group=group, n_groups=L, slots=False)
        pd_ = pattern_data(item, ann, lab, n_items=n, n_annotators=J, n_classes=K,
                           group=group, n_groups=L, gold=gold)
        assert pd_.data.n_items < 0.75 * n  # the collapse does something on this design
        params = _params(1, J, K, L)

        def dens(data, g, w):
            kw = dict(n_items=data.n_items, n_annotators=J, n_classes=K, group=data.group,
                      n_groups=L, gold=None if g is None else jnp.asarray(g),
                      weights=None if w is None else jnp.asarray(w, jnp.float64))
            return density(dsm.dawid_skene, (data.item, data.annotator, data.label), kw)

        p = {k: jnp.asarray(v) for k, v in params.items()}
        f_full, f_pat = dens(full, gold, None), dens(pd_.data, pd_.gold, pd_.counts)
        d_full, d_pat = f_full(p), f_pat(p)
        assert np.isfinite(float(d_full))
        np.testing.assert_allclose(float(d_pat), float(d_full), rtol=1e-12)
        g_full, g_pat = jax.jit(jax.grad(f_full))(p), jax.jit(jax.grad(f_pat))(p)
        for k in p:
            np.testing.assert_allclose(np.asarray(g_pat[k]), np.asarray(g_full[k]),
                                       rtol=1e-10, atol=1e-9)
        # the log-likelihood at D parameter sets
        prev = jnp.stack([p["prevalence"], jnp.asarray(_params(2, J, K, L)["prevalence"])])
        conf = jnp.stack([p["confusion"], jnp.asarray(_params(2, J, K, L)["confusion"])])
        jg_full = None if gold is None else jnp.asarray(gold)
        jg_pat = None if pd_.gold is None else jnp.asarray(pd_.gold)
        np.testing.assert_allclose(
            np.asarray(loglik_at(prev, conf, pd_.data, jg_pat,
                                 weights=jnp.asarray(pd_.counts, jnp.float64))),
            np.asarray(loglik_at(prev, conf, full, jg_full)), rtol=1e-12)
        # item posteriors: the pattern's, expanded, are the items'
        post_pat = np.asarray(posteriors_at(prev, conf, pd_.data, gold=jg_pat))
        post_full = np.asarray(posteriors_at(prev, conf, full, gold=jg_full))
        np.testing.assert_allclose(post_pat[:, pd_.pattern], post_full, atol=1e-12)


def test_weighted_vote_agreement_gives_the_full_data_relabelling():
    item, ann, lab, group, gold, n, J, K, L = _ratings(3)
    rng = np.random.default_rng(4)
    with x64():
        full = dsm.make_data(item, ann, lab, n_items=n, n_annotators=J, n_classes=K,
                             slots=False)
        pd_ = pattern_data(item, ann, lab, n_items=n, n_annotators=J, n_classes=K,
                           group=None, n_groups=1)
        vote = _annotations(item, ann, lab, n, J, K).majority_vote(
            tie="lowest")
        vote = np.asarray(vote)
        # every pattern's items share one vote (the vote depends only on the labels)
        assert all(np.unique(vote[pd_.pattern == p]).size == 1
                   for p in range(pd_.data.n_items))
        # draws whose classes are permuted at random: the relabelling must undo them
        D = 6
        base = _params(5, J, K, 1)
        perms = np.array([rng.permutation(K) for _ in range(D)])
        prev = np.stack([base["prevalence"][:, q] for q in perms])
        conf = np.stack([base["confusion"][:, q][:, :, q] for q in perms])
        p_full = draw_perms(vote, prev, conf, full, "vote", 0)
        p_pat = draw_perms(vote[pd_.representative], prev, conf, pd_.data, "vote", 0,
                           weights=pd_.counts)
    np.testing.assert_array_equal(p_pat, p_full)


def test_nuts_fit_on_patterns_reports_every_item():
    # a small fit end to end: posteriors for the original items, rows on the simplex,
    # the log-likelihood the full data's
    item, ann, lab, group, gold, n, J, K, L = _ratings(6, n=150, J=3, K=2)
    a = _annotations(item, ann, lab, n, J, K)
    fit = nc.DawidSkene(K).fit(a, method=nc.engines.NUTS(num_chains=2, num_warmup=100,
                                                         num_samples=100, rhat_threshold=1.5),
                               seed=0)  # short chains: structure, not mixing
    post = np.asarray(fit.item_posterior)
    assert post.shape == (n, K)
    np.testing.assert_allclose(post.sum(axis=1), 1.0, atol=1e-12)
    # the reported log-likelihood is the full data's at the posterior means
    with x64():
        full = dsm.make_data(item, ann, lab, n_items=n, n_annotators=J, n_classes=K,
                             slots=False)
        ll = float(loglik_at(jnp.asarray(fit.group_prevalence)[None],
                             jnp.asarray(fit.confusion)[None], full)[0])
    np.testing.assert_allclose(fit.loglik, ll, rtol=1e-10)
    # the item posteriors are the full data's E-step averaged over the draws
    with x64():
        rb = np.asarray(posteriors_at(jnp.asarray(fit.draws["prevalence"]),
                                      jnp.asarray(fit.draws["confusion"]), full, mean=True))
    np.testing.assert_allclose(post, rb, atol=1e-12)


@pytest.mark.parametrize("with_gold", [False, True])
def test_the_samplers_padded_copy_has_the_same_log_density(with_gold):
    """NUTS sees the patterns padded to bucketed sizes (weight-0 items carrying the
    padded ratings): the log density and its gradient are the unpadded ones."""
    from noisycal.engines.density.dawid_skene import ds_model_kwargs, padded_for_sampler
    from noisycal.engines.em.dawid_skene import bucket

    item, ann, lab, group, gold, n, J, K, L = _ratings(6)
    gold = gold if with_gold else None
    with x64():
        pd_ = pattern_data(item, ann, lab, n_items=n, n_annotators=J, n_classes=K,
                           group=group, n_groups=L, gold=gold)
        kw = ds_model_kwargs(pd_.data, L, None, None, pd_.gold, one_coin=False,
                             weights=pd_.counts)
        args = (pd_.data.item, pd_.data.annotator, pd_.data.label)
        pargs, pkw = padded_for_sampler(pd_.data, kw)
        m = pd_.data.n_items
        assert pkw["n_items"] == bucket(m + 1) > m
        assert pargs[0].shape[0] == bucket(args[0].shape[0])
        assert np.all(np.asarray(pkw["weights"])[m:] == 0)
        p = {k: jnp.asarray(v) for k, v in _params(7, J, K, L).items()}

        f0, f1 = density(dsm.dawid_skene, args, kw), density(dsm.dawid_skene, pargs, pkw)
        np.testing.assert_allclose(float(f1(p)), float(f0(p)), rtol=1e-13)
        g0, g1 = jax.jit(jax.grad(f0))(p), jax.jit(jax.grad(f1))(p)
        for k in p:
            np.testing.assert_allclose(np.asarray(g1[k]), np.asarray(g0[k]), rtol=1e-11,
                                       atol=1e-11)


def test_nuts_fits_of_new_data_of_similar_size_reuse_the_compiled_sampler():
    """Two data sets whose pattern counts differ fall in one bucket: the second fit
    compiles no new NUTS program (the hierarchical model; the Dawid-Skene family shares
    the same padding)."""
    from noisycal.engines.density import nuts_program

    nuts = nc.engines.NUTS(num_chains=2, num_warmup=30, num_samples=30, rhat_threshold=2.0)
    sizes, patterns = [], []
    for seed in (0, 1):
        item, ann, lab, *_ = _ratings(10 + seed, n=120, J=3, K=2)
        a = _annotations(item, ann, lab, 120, 3, 2)
        patterns.append(pattern_data(item, ann, lab, n_items=120, n_annotators=3,
                                     n_classes=2, group=None, n_groups=1).data.n_items)
        with warnings.catch_warnings():  # short chains: their statuses are not the point
            warnings.simplefilter("ignore", nc.NoisycalWarning)
            fit = nc.annotators.HierarchicalDawidSkene().fit(a, method=nuts, seed=0)
        sizes.append(len(nuts_program.PROGRAMS))
        assert np.isfinite(fit.loglik) and fit.item_posterior.shape == (120, 2)
        assert np.allclose(fit.item_posterior.sum(1), 1.0)
    assert patterns[0] != patterns[1]
    assert sizes[1] == sizes[0]
