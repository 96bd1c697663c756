"""The item-difficulty annotator model: likelihood, simulation, NUTS recovery, targets."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.annotators.item_difficulty import ItemDifficultyModel
from noisycal.models.dawid_skene import make_data
from noisycal.models.item_difficulty import (
    class_log_likelihood,
    item_difficulty,
    log_likelihood,
    population_accuracy,
    population_confusion,
)

# a tiny design: 3 items, 2 annotators, 3 classes, one item rated twice by annotator 0
ITEM = np.array([0, 0, 0, 1, 2, 2])
ANN = np.array([0, 0, 1, 1, 0, 1])
LAB = np.array([2, 2, 0, 1, 1, 0])
PARAMS = {"prevalence": np.array([0.5, 0.3, 0.2]), "ability": np.array([1.2, -0.3]),
          "difficulty": np.array([0.4, -1.0, 0.0])}


def _sigmoid(x: float) -> float:
    from scipy.special import expit

    return expit(x)


def _brute_class_ll(K: int = 3) -> np.ndarray:
    ll = np.zeros((3, K))
    for r in range(ITEM.size):
        p = 1 / K + (1 - 1 / K) * _sigmoid(PARAMS["ability"][ANN[r]]
                                           - PARAMS["difficulty"][ITEM[r]])
        for k in range(K):
            ll[ITEM[r], k] += np.log(p if LAB[r] == k else (1 - p) / (K - 1))
    return ll


def _tiny_data():  # noqa: ANN202
    with x64():
        return make_data(ITEM, ANN, LAB, n_items=3, n_annotators=2, n_classes=3, slots=False)


def test_class_log_likelihood_matches_a_hand_loop():
    with x64():
        ll = np.asarray(class_log_likelihood({k: jnp.asarray(v) for k, v in PARAMS.items()},
                                             _tiny_data()))
    np.testing.assert_allclose(ll, _brute_class_ll(), rtol=1e-12)


def test_numpyro_log_density_minus_prior_is_the_enumerated_likelihood():
    from numpyro.handlers import substitute, trace
    from numpyro.infer.util import log_density

    # brute force: sum over all 3^3 true-class assignments
    cll = _brute_class_ll()
    total = 0.0
    for ys in itertools.product(range(3), repeat=3):
        total += np.exp(sum(np.log(PARAMS["prevalence"][y]) + cll[i, y]
                            for i, y in enumerate(ys)))
    mu, sa, sd = 0.2, 0.7, 0.9
    values = {"prevalence": PARAMS["prevalence"], "mu_ability": mu, "sigma_ability": sa,
              "sigma_difficulty": sd, "ability_raw": (PARAMS["ability"] - mu) / sa,
              "difficulty_raw": PARAMS["difficulty"] / sd}
    kw = dict(n_items=3, n_annotators=2, n_classes=3)

    def joint_and_prior(v):   # one compiled program, not one per operation
        joint = log_density(item_difficulty, args, kw, v)[0]
        tr = trace(substitute(item_difficulty, data=v)).get_trace(*args, **kw)
        return joint, sum(jnp.sum(s["fn"].log_prob(s["value"])) for name, s in tr.items()
                          if s["type"] == "sample" and name != "loglik")

    with x64():
        args = (jnp.asarray(ITEM), jnp.asarray(ANN), jnp.asarray(LAB))
        joint, prior = jax.jit(joint_and_prior)(values)
        prior = float(prior)
        direct = float(log_likelihood({k: jnp.asarray(v) for k, v in PARAMS.items()},
                                      _tiny_data()))
    np.testing.assert_allclose(float(joint) - prior, np.log(total), rtol=1e-10)
    np.testing.assert_allclose(direct, np.log(total), rtol=1e-10)


def test_simulation_branch_labels_are_correct_at_the_logistic_rate():
    from numpyro.handlers import condition, seed, trace

    n, J = 4000, 2
    item, ann = np.repeat(np.arange(n), J), np.tile(np.arange(J), n)
    fixed = {"mu_ability": 1.0, "sigma_ability": 1e-9, "sigma_difficulty": 1e-9,
             "ability_raw": np.zeros(J)}
    with x64():
        tr = trace(seed(condition(item_difficulty, fixed), 3)).get_trace(
            jnp.asarray(item), jnp.asarray(ann), n_items=n, n_annotators=J, n_classes=3)
    y, lab = np.asarray(tr["y"]["value"]), np.asarray(tr["label"]["value"])
    right = lab == y[item]
    # P(correct) = 1/3 + 2/3 logistic(1) = 0.8207; errors even over the other classes
    assert abs(right.mean() - (1 / 3 + 2 / 3 * _sigmoid(1.0))) < 0.015
    wrong = (lab[~right] - y[item][~right]) % 3
    assert abs(np.mean(wrong == 1) - 0.5) < 0.03


def test_population_accuracy_is_the_difficulty_integral():
    a, s = np.array([1.5, -0.5]), 1.3
    want = [1 / 3 + 2 / 3 * integrate.quad(
        lambda d, ai=ai: _sigmoid(ai - d) * stats.norm.pdf(d, 0, s), -np.inf, np.inf)[0]
        for ai in a]
    with x64():
        got = np.asarray(population_accuracy(jnp.asarray(a), jnp.asarray(s), 3))
        at0 = np.asarray(population_accuracy(jnp.asarray(a), jnp.asarray(0.0), 3))
        conf = np.asarray(population_confusion(jnp.asarray(a)[None], jnp.asarray([s]), 3))
    np.testing.assert_allclose(got, want, rtol=1e-9)
    # no difficulty: the one-coin Dawid–Skene channel
    np.testing.assert_allclose(at0, 1 / 3 + 2 / 3 * _sigmoid(a), rtol=1e-12)
    np.testing.assert_allclose(conf[0, :, 0, 0], want, rtol=1e-9)
    np.testing.assert_allclose(conf[0, :, 0, 1], (1 - np.asarray(want)) / 2, rtol=1e-9)
    np.testing.assert_allclose(conf.sum(-1), 1.0, rtol=1e-12)


TRUE_ABILITY = np.array([2.5, 2.0, 1.75, 1.5, 1.0, 0.75, 0.5, 0.0])
TRUE_SIGMA_D = 1.2
TRUE_PREV = 0.35


@pytest.fixture(scope="module")
def simulated():  # noqa: ANN201
    rng = np.random.default_rng(11)
    n, J = 200, TRUE_ABILITY.size
    y = (rng.random(n) < TRUE_PREV).astype(int)
    d = rng.normal(0.0, TRUE_SIGMA_D, n)
    p = 0.5 + 0.5 * _sigmoid(TRUE_ABILITY[None] - d[:, None])
    A = np.where(rng.random((n, J)) < p, y[:, None], 1 - y[:, None])
    ann = nc.Annotations.from_wide(A)
    fit = ItemDifficultyModel().fit(ann, method=nc.engines.NUTS(num_chains=2, num_warmup=300,
                                                                num_samples=300,
                                                                rhat_threshold=1.05), seed=0)
    return ann, fit, y, d


def test_fit_recovers_abilities_spread_and_prevalence(simulated):
    ann, fit, y, d = simulated
    assert fit.model == "item_difficulty" and fit.method == "nuts"
    assert fit.status == "ok", fit.message
    assert fit.details["flipped_draws"] == 0
    rho = stats.spearmanr(fit.details["ability"], TRUE_ABILITY).statistic
    assert rho >= 0.85
    sd = np.asarray(fit.details["sigma_difficulty_draws"])
    lo, hi = np.quantile(sd, [0.05, 0.95])
    assert lo < TRUE_SIGMA_D < hi
    assert abs(fit.prevalence[1] - y.mean()) < 0.05  # the realised share of class 1
    # the averaged channel is the population accuracy of the posterior draws
    assert fit.confusion.shape == (8, 2, 2)
    assert np.all(np.diff(fit.confusion[:, 0, 0]) < 0.05)  # abilities decrease
    np.testing.assert_allclose(fit.confusion.sum(-1), 1.0, rtol=1e-12)


def test_hard_items_get_larger_difficulty_than_easy_ones(simulated):
    _, fit, _, d = simulated
    est = np.asarray(fit.details["difficulty"])
    easy, hard = d < np.quantile(d, 0.25), d > np.quantile(d, 0.75)
    assert est[hard].mean() > est[easy].mean() + 0.3
    assert stats.spearmanr(est, d).statistic > 0.3


def test_posterior_target_and_corrected_target(simulated):
    ann, fit, y, _ = simulated
    t = nc.targets.posterior(ann, fit)
    P = np.asarray(t)
    assert t.status == "ok" and P.shape == (ann.n_items, 2)
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-12)
    assert np.mean(P.argmax(1) == y) > 0.9
    # the averaged channel is accepted: corrected labels unbiased on average over items
    c = nc.targets.corrected(ann, fit)
    assert c.status == "ok"
    assert abs(np.asarray(c)[:, 1].mean() - y.mean()) < 0.08


def test_loo_runs_on_the_items_own_likelihood(simulated):
    import arviz as az

    ann, fit, _, _ = simulated
    idata = fit.to_arviz(seed=1)
    ll = idata.log_likelihood["label"].values
    assert ll.shape == (2, 300, ann.n_items)
    # draw 0's pointwise values are the model's own likelihood at that draw
    with x64():
        from noisycal.models.dawid_skene import item_log_likelihood
        from noisycal.models.item_difficulty import joint_log_likelihood

        arr = ann.engine_arrays()
        data = make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                         n_annotators=arr.n_annotators, n_classes=2, slots=False)
        p0 = {"prevalence": jnp.asarray(fit.draws["prevalence"][0, 0]),
              "ability": jnp.asarray(fit.details["ability_draws"][0]),
              "difficulty": jnp.asarray(fit.details["difficulty_draws"][0])}
        want = np.asarray(item_log_likelihood(joint_log_likelihood(p0, data)))
    np.testing.assert_allclose(ll[0, 0], want, rtol=1e-10)
    rep = idata.posterior_predictive["label"].values
    assert rep.shape == (2, 300, ann.n_ratings) and set(np.unique(rep)) <= {0, 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto-k notes of PSIS itself
        loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo) and loo.elpd_loo < 0
    az.plot_energy(idata)  # sample_stats carry the energy
    assert np.size(az.plot_ppc(idata, num_pp_samples=10, random_seed=0)) >= 1
    import matplotlib.pyplot as plt

    plt.close("all")


def test_other_methods_are_refused_with_the_reason():
    A = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="ItemDifficultyModel has no EM engine.*degenerate"):
        ItemDifficultyModel().fit(nc.Annotations.from_wide(A), method="em")
    with pytest.raises(ValueError, match="anchor does not apply.*names the classes itself"):
        ItemDifficultyModel().fit(nc.Annotations.from_wide(A), anchor=0)
    with pytest.raises(ValueError, match="groups"):
        ItemDifficultyModel().fit(nc.Annotations.from_wide(A), groups=[0, 1, 0])
    with pytest.raises(ValueError, match="sigma_scale"):
        ItemDifficultyModel(sigma_scale=-1.0).fit(nc.Annotations.from_wide(A))


def test_gold_items_enter_the_likelihood_with_their_class():
    """As in the Dawid-Skene models: a gold item adds log prevalence[k] + ll[i, k] at its
    known class k instead of the log of the sum over classes, in the NumPyro model too."""
    from numpyro.infer.util import log_density

    gold = np.array([-1, 2, -1])
    with x64():
        data, params = _tiny_data(), {k: jnp.asarray(v) for k, v in PARAMS.items()}
        with_gold = float(log_likelihood(params, data, jnp.asarray(gold)))
        joint = np.log(PARAMS["prevalence"]) + _brute_class_ll()
        hand = (np.logaddexp.reduce(joint[0]) + joint[1, 2] + np.logaddexp.reduce(joint[2]))
        assert with_gold == pytest.approx(hand, rel=1e-12)
        kw = dict(n_items=3, n_annotators=2, n_classes=3)
        sites = {"prevalence": PARAMS["prevalence"], "mu_ability": 0.2, "sigma_ability": 1.0,
                 "sigma_difficulty": 1.0, "ability_raw": PARAMS["ability"] - 0.2,
                 "difficulty_raw": PARAMS["difficulty"]}
        lp = {g is None: float(log_density(item_difficulty, (ITEM, ANN, LAB),
                                           {**kw, "gold": g}, sites)[0])
              for g in (None, gold)}
    no_gold = float(np.sum(np.logaddexp.reduce(joint, axis=1)))
    assert lp[False] - lp[True] == pytest.approx(with_gold - no_gold, rel=1e-10)


def test_a_nuts_fit_with_gold_clamps_the_gold_posteriors():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 40)
    A = np.where(rng.random((40, 4)) < 0.8, y[:, None], 1 - y[:, None])
    ann = nc.Annotations.from_wide(A)
    gold = {0: int(y[0]), 5: int(1 - y[5])}  # one gold class against the ratings
    nuts = nc.engines.NUTS(num_chains=1, num_warmup=60, num_samples=30)
    with pytest.warns(nc.ConvergenceWarning, match="one chain"):
        fit = ItemDifficultyModel().fit(ann, method=nuts, gold=gold, seed=0)
    assert fit.details["gold"] and fit.engine == nuts
    np.testing.assert_array_equal(fit.item_posterior[[0, 5]], np.eye(2)[[y[0], 1 - y[5]]])
    assert fit.details["gold_index"][[0, 5]].tolist() == [y[0], 1 - y[5]]
    assert (fit.details["gold_index"] >= 0).sum() == 2


def test_flipped_draws_are_counted():
    vote = np.array([0, 0, 1, 1])
    same = np.eye(2)[vote] * 0.9 + 0.05
    mirrored = same[:, ::-1]
    flipped = ItemDifficultyModel._flipped(np.stack([same, mirrored, same]), vote, 2)
    assert flipped.tolist() == [False, True, False]



@pytest.mark.slow  # the noise check's refits: about 15-30 s on the shared machine
def test_checked_target_flags_difficulty_that_tracks_the_score(simulated):
    from scipy.special import expit

    from noisycal.exceptions import NoisycalWarning

    ann, fit, y, d = simulated
    # hard items get scores near 0.5 or on the wrong side: noise depends on the score
    tied = expit((2 * y - 1) * (1.5 - d))
    with pytest.warns(NoisycalWarning, match="noise check rejects"):
        t = nc.annotators.checked_target(nc.targets.corrected(ann, fit), ann, tied, seed=0)
    assert t.status == "noise_depends_on_score"
    # scores unrelated to difficulty given the class: the averaged channel passes
    free = expit((2 * y - 1) * (1.5 - np.random.default_rng(5).normal(0, 1.2, y.size)))
    assert nc.annotators.checked_target(nc.targets.corrected(ann, fit), ann, free,
                                        seed=0).status == "ok"
