"""Class-conditional Dawid–Skene and MACE: likelihood, EM, recovery, NUTS, downstream."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from compiled_density import density

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.annotators import MACE, ClassConditionalDawidSkene
from noisycal.models.channels import (
    class_conditional_confusion,
    class_conditional_dawid_skene,
    mace,
    mace_confusion,
    mace_parameters,
)


def simulate(prevalence, confusion, n_items, seed, per_item=None):
    """Every annotator rates every item (or ``per_item`` random annotators per item)."""
    rng = np.random.default_rng(seed)
    confusion = np.asarray(confusion, np.float64)  # maps made outside x64 are float32:
    confusion = confusion / confusion.sum(-1, keepdims=True)  # rows must sum to 1
    J, K = confusion.shape[0], confusion.shape[1]
    y = rng.choice(K, size=n_items, p=prevalence)
    items, who, labels = [], [], []
    for i in range(n_items):
        raters = range(J) if per_item is None else rng.choice(J, per_item, replace=False)
        for j in raters:
            items.append(i)
            who.append(j)
            labels.append(rng.choice(K, p=confusion[j, y[i]]))
    return nc.Annotations.from_arrays(np.array(items), np.array(who), np.array(labels),
                                      classes=np.arange(K)), y


# ---------------------------------------------------------------- channel maps
def test_channel_maps_by_hand():
    conf = np.asarray(class_conditional_confusion(np.array([[0.9, 0.6, 0.8]]), 3))[0]
    np.testing.assert_allclose(conf, [[0.9, 0.05, 0.05], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]],
                               rtol=1e-6)
    conf = np.asarray(mace_confusion(np.array([0.4]), np.array([[0.5, 0.25, 0.25]])))[0]
    # (1 - s) I + s 1 xi^T
    np.testing.assert_allclose(conf, [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.2, 0.1, 0.7]],
                               rtol=1e-6)
    spam, strategy = mace_parameters(np.array([[[0.8, 0.1, 0.1], [0.2, 0.7, 0.1],
                                                [0.2, 0.1, 0.7]]]))
    np.testing.assert_allclose(spam, [0.4], rtol=1e-12)
    np.testing.assert_allclose(strategy, [[0.5, 0.25, 0.25]], rtol=1e-12)
    assert isinstance(spam, np.ndarray)  # NumPy in, NumPy out


# ---------------------------------------------------------------- one likelihood
def _tiny():
    item = np.repeat(np.arange(7), 3)
    who = np.tile(np.arange(3), 7)
    lab = np.array([0, 0, 1, 2, 2, 2, 1, 1, 0, 2, 1, 2, 0, 0, 0, 1, 2, 1, 2, 0, 2])
    return item, who, lab


def _enumerate(prev, conf, item, who, lab):
    """log sum over every joint assignment of the true classes (brute force)."""
    n, K = item.max() + 1, prev.size
    total = 0.0
    for ys in itertools.product(range(K), repeat=n):
        p = np.prod([prev[y] for y in ys])
        p *= np.prod([conf[j, ys[i], o] for i, j, o in zip(item, who, lab, strict=True)])
        total += p
    return np.log(total)


# a likelihood identity: the tiny fit's status (weakly identified) is beside the point
@pytest.mark.filterwarnings("ignore::noisycal.IdentifiabilityWarning")
@pytest.mark.parametrize("model", ["class_conditional", "mace"])
def test_em_loglik_equals_numpyro_density_and_enumeration(model):
    import numpyro.distributions as dist

    item, who, lab = _tiny()
    ann = nc.Annotations.from_arrays(item, who, lab, classes=np.arange(3))
    M = ClassConditionalDawidSkene() if model == "class_conditional" else MACE()
    fit = M.fit(ann, method=nc.engines.EM(n_starts=2, max_iter=50))
    prev, conf = fit.prevalence, fit.confusion
    brute = _enumerate(prev, conf, item, who, lab)
    np.testing.assert_allclose(fit.loglik, brute, rtol=1e-10)
    kw = dict(n_items=7, n_annotators=3, n_classes=3)
    alpha = np.array([2.0, 3.0, 4.0])
    with x64():
        eps = 1e-9  # keep boundary estimates inside the support of the priors
        prev_i = np.clip(prev, eps, None) / np.clip(prev, eps, None).sum()
        if model == "class_conditional":
            acc = np.clip(fit.details["accuracy"], eps, 1 - eps)
            ab = np.array([[2.0, 3.0, 4.0], [1.5, 1.5, 2.5]])
            params = {"prevalence": prev_i[None], "accuracy": acc}
            lp = density(class_conditional_dawid_skene, (item, who, lab),
                         dict(kw, alpha=alpha, accuracy_prior=ab))(params)
            prior = (dist.Dirichlet(alpha).log_prob(prev_i)
                     + dist.Beta(ab[0], ab[1]).log_prob(acc).sum())
            conf_i = np.asarray(class_conditional_confusion(acc, 3))
        else:
            spam = np.clip(fit.details["spam"], eps, 1 - eps)
            strat = np.clip(fit.details["strategy"], eps, None)
            strat = strat / strat.sum(1, keepdims=True)
            sp, xp = np.array([2.0, 0.7]), np.array([1.2, 1.0, 3.0])
            params = {"prevalence": prev_i[None], "spam": spam, "strategy": strat}
            lp = density(mace, (item, who, lab),
                         dict(kw, alpha=alpha, spam_prior=sp, strategy_prior=xp))(params)
            prior = (dist.Dirichlet(alpha).log_prob(prev_i)
                     + dist.Beta(sp[0], sp[1]).log_prob(spam).sum()
                     + dist.Dirichlet(xp).log_prob(strat).sum())
            conf_i = np.asarray(mace_confusion(spam, strat))
        np.testing.assert_allclose(float(lp - prior), _enumerate(prev_i, conf_i, item, who,
                                                                 lab), rtol=1e-10)


# ---------------------------------------------------------------- EM
def test_mace_generalised_em_never_decreases_the_loglik():
    from noisycal.engines.em.dawid_skene import e_step, m_step
    from noisycal.models.dawid_skene import make_data

    K, J = 3, 5
    spam = np.array([0.1, 0.8, 0.3, 0.05, 0.5])
    strat = np.array([[0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [1 / 3] * 3, [0.2, 0.5, 0.3],
                      [0.9, 0.05, 0.05]])
    ann, _ = simulate(np.array([0.5, 0.3, 0.2]), np.asarray(mace_confusion(spam, strat)),
                      300, seed=3, per_item=3)
    arr = ann.engine_arrays()
    with x64():
        data = make_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                         n_annotators=J, n_classes=K)
        prior = jnp.array([1.5, 1.2, 2.0, 1.0, 1.0])

        @jax.jit
        def step(post, conf):
            prev, conf = m_step(post, data, None, prior, "mace", None, conf)
            post, lse = e_step(prev, conf, data, None)
            sp, xi = mace_parameters(conf)
            lp = 0.5 * jnp.log(sp).sum() + 0.2 * jnp.log(1 - sp).sum() + jnp.log(xi[:, 0]).sum()
            return post, conf, lse.sum() + lp

        post = jnp.asarray(np.random.default_rng(0).dirichlet(np.ones(K), ann.n_items))
        conf = jnp.full((J, K, K), 1.0 / K)
        objective = []
        for _ in range(60):
            post, conf, obj = step(post, conf)
            objective.append(float(obj))
    diffs = np.diff(objective)
    assert diffs.min() > -1e-9 * abs(objective[-1]), diffs.min()
    assert objective[-1] - objective[0] > 1.0  # it did move


def test_class_conditional_recovers_known_accuracies():
    K, J, n = 3, 5, 1500
    prev = np.array([0.5, 0.3, 0.2])
    acc = np.array([[0.9, 0.7, 0.6], [0.8, 0.8, 0.8], [0.6, 0.9, 0.7], [0.75, 0.6, 0.9],
                    [0.85, 0.65, 0.55]])
    ann, _ = simulate(prev, np.asarray(class_conditional_confusion(acc, K)), n, seed=1)
    fit = ClassConditionalDawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    assert fit.model == "class_conditional" and fit.status == "ok", fit.message
    assert fit.n_params == J * K + K - 1
    est = fit.details["accuracy"]
    se = np.sqrt(acc * (1 - acc) / (n * prev))  # binomial error of each accuracy
    assert np.all(np.abs(est - acc) < 4 * se), (est - acc) / se
    with x64():
        np.testing.assert_allclose(fit.confusion, class_conditional_confusion(est, K),
                                   atol=1e-12)
    se_p = np.sqrt(prev * (1 - prev) / n)
    assert np.all(np.abs(fit.prevalence - prev) < 4 * se_p)
    ident = fit.details["identification"]
    # free: 2 prevalences and all 15 accuracies (none near 0 or 1)
    assert ident["checked"] and ident["n_free"] == K - 1 + J * K, ident


def test_mace_finds_the_spammers():
    K, J, n = 3, 6, 800
    spam = np.array([0.9, 0.1, 0.05, 0.95, 0.15, 0.1])
    strat = np.array([[0.7, 0.2, 0.1], [1 / 3] * 3, [0.2, 0.2, 0.6], [0.1, 0.1, 0.8],
                      [0.5, 0.25, 0.25], [0.3, 0.4, 0.3]])
    ann, y = simulate(np.array([0.4, 0.35, 0.25]), np.asarray(mace_confusion(spam, strat)),
                      n, seed=7)
    with pytest.warns(nc.IdentifiabilityWarning, match="degenerate"):
        fit = MACE().fit(ann, method=nc.engines.EM(n_starts=4))
    assert fit.model == "mace" and fit.n_params == J * K + K - 1
    # annotator 3 (spam 0.95) carries almost no information about the class
    assert fit.status == "degenerate_channel"
    assert 3 in fit.details["channels"]["degenerate"]
    s_hat = fit.details["spam"]
    assert np.all(s_hat[[0, 3]] > 0.7) and np.all(s_hat[[1, 2, 4, 5]] < 0.2), s_hat
    se = np.sqrt(spam * (1 - spam) / n)
    assert np.all(np.abs(s_hat - spam) < 5 * se + 0.01), (s_hat - spam) / se
    # the spammers' strategies are seen in ~0.9 n labels each
    se_x = np.sqrt(strat * (1 - strat) / (spam[:, None] * n))
    assert np.all(np.abs(fit.details["strategy"][[0, 3]] - strat[[0, 3]])
                  < 4 * se_x[[0, 3]])
    assert np.mean(fit.item_posterior.argmax(1) == y) > 0.9


def test_class_conditional_against_full_dawid_skene():
    K, J, n = 3, 4, 600
    prev = np.array([0.4, 0.35, 0.25])
    # full DS truth: errors of class 0 go mostly to class 1 (not spread evenly)
    conf = np.tile(np.array([[0.7, 0.28, 0.02], [0.1, 0.8, 0.1], [0.02, 0.18, 0.8]]),
                   (J, 1, 1))
    ann, _ = simulate(prev, conf, n, seed=11)
    ds = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    cc = ClassConditionalDawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    assert cc.loglik < ds.loglik - 20  # the constraint costs likelihood
    assert cc.bic > ds.bic  # and here the full model's extra parameters pay off
    # class-conditional truth: the smaller model wins on BIC though its loglik is lower
    acc = np.array([[0.8, 0.7, 0.9], [0.7, 0.85, 0.6], [0.9, 0.6, 0.75], [0.65, 0.8, 0.8]])
    ann, _ = simulate(prev, np.asarray(class_conditional_confusion(acc, K)), n, seed=12)
    ds = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    cc = ClassConditionalDawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    assert cc.loglik <= ds.loglik + 1e-6
    assert cc.bic < ds.bic
    assert ds.n_params - cc.n_params == J * K * (K - 1) - J * K


def test_map_em_uses_the_priors():
    ann, _ = simulate(np.array([0.5, 0.5]), np.tile([[0.8, 0.2], [0.3, 0.7]], (3, 1, 1)),
                      40, seed=2)
    ml = ClassConditionalDawidSkene().fit(ann, method=nc.engines.EM(n_starts=2))
    fit = ClassConditionalDawidSkene(accuracy_prior=(20.0, 2.0)).fit(ann,
                                                                     method=nc.engines.EM(n_starts=2,
                                                                                          tol=1e-12))
    assert fit.details["map"] and not ml.details["map"]
    # at the MAP-EM fixed point, accuracy = (expected correct + a - 1) / (expected + a + b - 2)
    arr = ann.engine_arrays()
    counts = np.zeros((3, 2, 2))
    np.add.at(counts, (arr.annotator, slice(None), arr.label),
              fit.item_posterior[arr.item])
    want = (np.diagonal(counts, axis1=1, axis2=2) + 19.0) / (counts.sum(2) + 20.0)
    np.testing.assert_allclose(fit.details["accuracy"], want, rtol=1e-6)
    assert fit.details["accuracy"].mean() > ml.details["accuracy"].mean()
    m = MACE(spam_prior=(1.0, 400.0)).fit(ann, method=nc.engines.EM(n_starts=2))
    assert np.all(m.details["spam"] < 0.1)


def test_bad_arguments_name_themselves():
    ann, _ = simulate(np.array([0.5, 0.5]), np.tile([[0.8, 0.2], [0.3, 0.7]], (3, 1, 1)),
                      30, seed=2)
    with pytest.raises(ValueError, match="method"):
        MACE().fit(ann, method="mle")
    with pytest.raises(ValueError, match="accuracy_prior"):
        ClassConditionalDawidSkene(accuracy_prior=(0.5, 0.5)).fit(ann)
    with pytest.raises(ValueError, match="accuracy_prior"):
        ClassConditionalDawidSkene(accuracy_prior=np.ones((3, 2))).fit(ann)
    with pytest.raises(ValueError, match="strategy_prior"):
        MACE(strategy_prior=np.ones(3)).fit(ann)
    with pytest.raises(ValueError, match="spam_prior"):
        MACE(spam_prior=(0.5, 1.0)).fit(ann)
    with pytest.raises(ValueError, match="groups"):
        MACE().fit(ann, groups=np.zeros(30))


# ---------------------------------------------------------------- NUTS and downstream
@pytest.mark.slow
@pytest.mark.parametrize("model", ["class_conditional", "mace"])
def test_nuts_agrees_with_map_em(model):
    import arviz as az

    K, n = 3, 200
    prev = np.array([0.45, 0.35, 0.2])
    if model == "class_conditional":
        acc = np.array([[0.85, 0.7, 0.8], [0.7, 0.8, 0.75], [0.9, 0.75, 0.7],
                        [0.8, 0.85, 0.65]])
        conf = np.asarray(class_conditional_confusion(acc, K))
        M = ClassConditionalDawidSkene(alpha=np.full(K, 2.0), accuracy_prior=(2.0, 2.0))
        key = "accuracy"
    else:
        conf = np.asarray(mace_confusion(np.array([0.2, 0.7, 0.3, 0.1]),
                                         np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6],
                                                   [1 / 3] * 3, [0.4, 0.4, 0.2]])))
        M = MACE(alpha=np.full(K, 2.0), spam_prior=(2.0, 2.0), strategy_prior=np.full(K, 2.0))
        key = "spam"
    ann, _ = simulate(prev, conf, n, seed=5)
    em = M.fit(ann, method=nc.engines.EM(n_starts=3))
    with warnings.catch_warnings():  # short chains: R-hat may exceed 1.01
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        nuts = M.fit(ann, method=nc.engines.NUTS(num_chains=2, num_warmup=150, num_samples=150),
                     seed=1)
    assert nuts.status in ("ok", "not_converged"), nuts.message
    draws = nuts.draws["confusion"]
    nat = (np.diagonal(draws, axis1=-2, axis2=-1) if model == "class_conditional"
           else mace_parameters(draws)[0])
    sd = nat.std(0)
    np.testing.assert_allclose(nuts.details[key], nat.mean(0), rtol=1e-12)
    # posterior mean and MAP differ by O(1/n); both well inside one posterior sd here
    assert np.all(np.abs(nat.mean(0) - em.details[key]) < sd), (nat.mean(0)
                                                                 - em.details[key]) / sd
    idata = nuts.to_arviz()
    with warnings.catch_warnings():  # Pareto k warnings of a small data set
        warnings.simplefilter("ignore", UserWarning)
        loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo) and loo.n_data_points == n
    az.plot_energy(idata)  # sample_stats carry the energy
    assert np.size(az.plot_ppc(idata, num_pp_samples=10, random_seed=0)) >= 1
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.mark.parametrize("cls", [ClassConditionalDawidSkene, MACE])
def test_targets_and_ppc_work_on_the_fits(cls):
    K = 3
    acc = np.array([[0.85, 0.7, 0.8], [0.7, 0.8, 0.75], [0.9, 0.75, 0.7]])
    ann, y = simulate(np.array([0.4, 0.35, 0.25]),
                      np.asarray(class_conditional_confusion(acc, K)), 300, seed=9)
    fit = cls().fit(ann, method=nc.engines.EM(n_starts=2))
    post = nc.targets.posterior(ann, fit)
    np.testing.assert_allclose(np.asarray(post.values), fit.item_posterior, rtol=1e-12)
    assert np.mean(fit.item_posterior.argmax(1) == y) > 0.8
    corr = nc.targets.corrected(ann, fit)
    assert np.asarray(corr.values).shape == (300, K)
    res = nc.annotators.ppc(fit, ann, n_rep=50, seed=0)  # EM refits of the model's own
    assert len(res.table) > 0 and res.method == "bootstrap_refits" and res.message == ""
