"""EM's own log-likelihood against NumPyro's log density and brute-force enumeration.

The model's likelihood is written once (models/dawid_skene.py); these checks make sure
that the number EM monitors (``EMState.loglik``, ``fit.loglik``), the NumPyro model's
``log_density`` minus an independently computed log prior, and a brute-force sum over
every assignment of true classes all agree on a tiny data set with a missing rating and a
repeated rating, with and without groups, with and without gold labels. None of the
three uses another's code path, so a wrong E-step, pattern weighting, group index or
gold clamping makes them disagree.
"""

import itertools
import warnings

import numpy as np
import pytest
from compiled_density import density
from scipy.stats import dirichlet

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal.models import MODELS
from noisycal.models import dawid_skene as dsm

# 4 items, 3 annotators, 3 classes; item 3 has no rating by annotator 2 (missing) and
# annotator 1 rated item 0 twice (repeated)
ITEM = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3])
ANNOT = np.array([0, 1, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1])
LABEL = np.array([0, 0, 1, 0, 1, 1, 2, 2, 2, 0, 1, 0])
GROUP = np.array([0, 1, 0, 1])
K, J, N = 3, 3, 4


def _params(seed, L):
    rng = np.random.default_rng(seed)
    prev = rng.dirichlet(np.full(K, 2.0), size=L)
    conf = np.stack([[rng.dirichlet(np.ones(K) + 3 * np.eye(K)[k]) for k in range(K)]
                     for _ in range(J)])
    return prev, conf


def brute_force_loglik(prev, conf, group=None, gold=None):
    """log sum over all true-class vectors y of p(y) p(ratings | y), by enumeration."""
    g = np.zeros(N, int) if group is None else group
    total = 0.0
    for y in itertools.product(range(K), repeat=N):
        if gold is not None and any(gold[i] >= 0 and y[i] != gold[i] for i in range(N)):
            continue
        p = np.prod([prev[g[i], y[i]] for i in range(N)])
        p *= np.prod([conf[a, y[i], lab] for i, a, lab in zip(ITEM, ANNOT, LABEL, strict=True)])
        total += p
    return np.log(total)


def _data(group):
    return dsm.make_data(ITEM, ANNOT, LABEL, n_items=N, n_annotators=J, n_classes=K,
                         group=group, n_groups=1 if group is None else 2)


def _log_prior(prev, conf, alpha, beta):
    """Dirichlet log densities by scipy (independent of NumPyro)."""
    lp = sum(dirichlet.logpdf(p, alpha) for p in prev)
    return lp + sum(dirichlet.logpdf(conf[j, k], beta[k]) for j in range(J) for k in range(K))


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("with_gold", [False, True])
def test_em_step_loglik_equals_brute_force(grouped, with_gold):
    """EMState.loglik after one EM step equals enumeration at that step's parameters."""
    from noisycal.engines.em.dawid_skene import run_em

    group = GROUP if grouped else None
    gold = np.array([-1, 2, -1, -1]) if with_gold else None
    post0 = np.random.default_rng(0).dirichlet(np.ones(K), size=N)
    with jax.enable_x64(True):
        data = _data(group)
        st = run_em(jnp.asarray(post0), data, None if gold is None else jnp.asarray(gold),
                    None, None, one_coin=False, max_iter=1, tol=1e-12)
        prev, conf = np.asarray(st.prevalence), np.asarray(st.confusion)
        ll = float(st.loglik)
    assert int(st.n_iter) == 1
    assert ll == pytest.approx(brute_force_loglik(prev, conf, group, gold), abs=1e-10)


@pytest.mark.parametrize("grouped", [False, True])
def test_fit_loglik_numpyro_and_brute_force_agree(grouped):
    """fit.loglik (EM on collapsed patterns), NumPyro log_density minus the log prior,
    and enumeration agree at the MAP-EM estimate (interior, so every log is finite)."""
    group = GROUP if grouped else None
    alpha = np.full(K, 2.0)
    beta = np.full((K, K), 2.0) + 2.0 * np.eye(K)
    model = (nc.GroupedDawidSkene if grouped else nc.DawidSkene)(K, alpha=alpha, beta=beta)
    ann = nc.Annotations.from_arrays(ITEM, ANNOT, LABEL, classes=np.arange(K))
    kw = {"groups": GROUP} if grouped else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)  # 4 items: over-parametrised
        fit = model.fit(ann, method=nc.engines.EM(n_starts=3, max_iter=5000, tol=1e-12),
                        seed=0, **kw)
    assert fit.status == "over_parametrised"
    prev, conf = fit.group_prevalence, fit.confusion
    brute = brute_force_loglik(prev, conf, group)
    assert fit.loglik == pytest.approx(brute, abs=1e-9)
    with jax.enable_x64(True):
        data = _data(group)
        lj = density(MODELS["dawid_skene"], (data.item, data.annotator, data.label),
                     dict(n_items=N, n_annotators=J, n_classes=K, n_groups=prev.shape[0],
                          group=data.group if grouped else None,
                          alpha=jnp.asarray(alpha), beta=jnp.asarray(beta)))(
            {"prevalence": jnp.asarray(prev), "confusion": jnp.asarray(conf)})
    assert float(lj) - _log_prior(prev, conf, alpha, beta) == pytest.approx(brute, abs=1e-9)


def test_numpyro_gold_likelihood_equals_brute_force():
    """With gold labels the NumPyro model (used by MLE and NUTS) conditions on them."""
    prev, conf = _params(3, 2)
    gold = np.array([1, -1, -1, 0])
    alpha, beta = dsm.default_priors(K)
    with jax.enable_x64(True):
        data = _data(GROUP)
        lj = density(dsm.dawid_skene, (data.item, data.annotator, data.label),
                     dict(n_items=N, n_annotators=J, n_classes=K, n_groups=2,
                          group=data.group, gold=jnp.asarray(gold)))(
            {"prevalence": jnp.asarray(prev), "confusion": jnp.asarray(conf)})
    brute = brute_force_loglik(prev, conf, GROUP, gold)
    assert float(lj) - _log_prior(prev, conf, alpha, beta) == pytest.approx(brute, abs=1e-10)
    assert brute < brute_force_loglik(prev, conf, GROUP)  # the gold terms do enter


def test_gold_labels_enter_mle_like_em():
    """Gold labels are honoured by method='mle' (shared likelihood), as by EM."""
    sim = nc.simulate.dawid_skene(300, [0.5, 0.3, 0.2],
                                  np.stack([np.eye(3) * 0.6 + 0.4 / 3] * 4), seed=2)
    ann = sim.annotations
    gold = {ann.items[i].item(): int(sim.true_class[i]) for i in range(0, 300, 5)}
    alpha, beta = dsm.default_priors(3)
    model = nc.DawidSkene(alpha=alpha, beta=beta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        em = model.fit(ann, gold=gold, method=nc.engines.EM(n_starts=4, max_iter=5000, tol=1e-12))
        mle = model.fit(ann, method=nc.engines.MLE(max_iter=5000, tol=1e-12), gold=gold)
        plain = model.fit(ann, method=nc.engines.MLE(max_iter=5000, tol=1e-12))
    idx = np.arange(0, 300, 5)
    np.testing.assert_array_equal(mle.item_posterior[idx], np.eye(3)[sim.true_class[idx]])
    assert mle.details["gold"] and not plain.details["gold"]
    # MAP by gradient and by EM reach the same optimum (the gold terms included)
    np.testing.assert_allclose(mle.confusion, em.confusion, atol=2e-4)
    assert np.abs(plain.confusion - mle.confusion).max() > 1e-3


# ------------------------------------------------------------------ the simulation branch
def test_models_registry_and_simulation_branch_recover_parameters():
    """MODELS names the model; its label=None branch draws ratings whose empirical
    confusion and prevalence match the parameters they were drawn with."""
    from numpyro import handlers

    assert MODELS["dawid_skene"] is dsm.dawid_skene
    assert set(MODELS) == {"dawid_skene", "class_conditional_dawid_skene", "mace",
                           "hierarchical_dawid_skene", "item_difficulty",
                           "dirichlet_soft_labels", "classifier_informed"}
    n = 6000
    prev = np.array([0.5, 0.3, 0.2])
    conf = np.stack([[[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.1, 0.1, 0.8]],
                     [[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.05, 0.15, 0.8]]])
    item = np.repeat(np.arange(n), 2)
    annot = np.tile(np.arange(2), n)
    model = handlers.condition(MODELS["dawid_skene"],
                               {"prevalence": prev[None], "confusion": conf})
    with jax.enable_x64(True):
        tr = handlers.trace(handlers.seed(model, 0)).get_trace(
            jnp.asarray(item), jnp.asarray(annot), n_items=n, n_annotators=2, n_classes=3)
    y = np.asarray(tr["y"]["value"])
    lab = np.asarray(tr["label"]["value"])
    # binomial standard errors are at most sqrt(0.25 / 1200) = 0.015 per entry; 0.04 is
    # about 2.7 of them
    np.testing.assert_allclose(np.bincount(y, minlength=3) / n, prev, atol=0.03)
    for j in range(2):
        mine = annot == j
        emp = np.array([np.bincount(lab[mine][y[item[mine]] == k], minlength=3)
                        / np.sum(y[item[mine]] == k) for k in range(3)])
        np.testing.assert_allclose(emp, conf[j], atol=0.04)
    with pytest.raises(ValueError, match="gold"):
        handlers.seed(MODELS["dawid_skene"], 0)(jnp.asarray(item), jnp.asarray(annot),
                                                n_items=n, n_annotators=2, n_classes=3,
                                                gold=jnp.zeros(n, jnp.int32))
