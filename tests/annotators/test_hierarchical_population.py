"""Hierarchical Dawid–Skene: the population in to_arviz and summary, centred or not."""

import pickle

import numpy as np
import pytest
from scipy.special import softmax

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.annotators.hierarchical import CENTERED_MIN_RATINGS_PER_CLASS
from noisycal.models.hierarchical import hierarchical_dawid_skene, sum_to_zero_basis

HDS = nc.annotators.HierarchicalDawidSkene

# the population the annotators are drawn from (K = 2): log-odds in the sum-to-zero basis
# and the spread of each row across annotators
K, J, N = 2, 5, 1000
MU_FREE = np.array([[1.6], [-1.2]])
SIGMA = np.array([0.5, 0.5])
MU = MU_FREE @ sum_to_zero_basis(K).T  # the centred population log-odds (K, K)


@pytest.fixture(scope="module")
def sim():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(J, K, K - 1))
    conf = softmax((MU_FREE[None] + SIGMA[None, :, None] * z) @ sum_to_zero_basis(K).T,
                   axis=-1)
    return nc.simulate.dawid_skene(N, np.array([0.6, 0.4]), conf, seed=1)


def _nuts():
    return nc.engines.NUTS(num_chains=2, num_warmup=200, num_samples=200,
                           rhat_threshold=1.05)


@pytest.fixture(scope="module")
def fits(sim):
    """The same data fitted non-centred (the default) and with 'auto' (every annotator
    has 1000 ratings, 500 per class: all centred). Five annotators rating every item
    give at most 2^5 rating patterns, so the items cost nothing."""
    return HDS().fit(sim.annotations, method=_nuts(), seed=0), \
        HDS(centered="auto").fit(sim.annotations, method=_nuts(), seed=0)


def test_to_arviz_posterior_holds_the_population(fits):
    fit, _ = fits
    post = fit.to_arviz(predictive=False).posterior
    for name, dims in (("population_mu", ("true", "observed")),
                       ("population_sigma", ("true",)),
                       ("population_confusion", ("true", "observed"))):
        assert post[name].dims == ("chain", "draw", *dims), name
        assert post[name].shape == (2, 200, *(K,) * len(dims)), name
    np.testing.assert_array_equal(post["true"].values, fit.classes)
    np.testing.assert_array_equal(post["observed"].values, fit.classes)
    pop = fit.details["population"]  # the same draws, chains in order
    np.testing.assert_array_equal(post["population_mu"].values.reshape(-1, K, K), pop["mu"])
    np.testing.assert_allclose(post["population_confusion"].values,
                               softmax(post["population_mu"].values, axis=-1), rtol=1e-12)
    assert post["prevalence"].dims == ("chain", "draw", "group", "class")  # unchanged
    again = pickle.loads(pickle.dumps(fit)).to_arviz(predictive=False).posterior
    np.testing.assert_array_equal(again["population_sigma"], post["population_sigma"])


def test_summary_lists_the_population_with_mcmc_columns(fits):
    fit, _ = fits
    table = fit.summary().table("population")
    assert list(table.columns) == ["parameter", "true", "observed", "estimate", "sd", "low",
                                   "high", "r_hat", "ess_bulk", "ess_tail"]
    assert table["parameter"].tolist() == ["mu"] * 4 + ["sigma"] * 2 + ["confusion"] * 4
    assert table["observed"].tolist()[4:6] == [None, None]  # sigma is one per row
    pop = fit.details["population"]
    np.testing.assert_allclose(table["estimate"][:4], pop["mu"].mean(0).ravel(), rtol=1e-12)
    np.testing.assert_allclose(table["sd"][4:6], pop["sigma"].std(0, ddof=1), rtol=1e-12)
    assert np.all(table["low"] < table["estimate"]) and np.all(table["estimate"] < table["high"])
    assert np.all(table["r_hat"] < 1.05) and np.all(table["ess_bulk"] > 50)
    # the fit's convergence check saw the population: its extremes are the table's
    det = fit.details
    assert det["population_max_rhat"] == pytest.approx(table["r_hat"][:6].max(), rel=1e-6)
    assert det["max_rhat"] >= det["population_max_rhat"]
    assert det["min_ess_bulk"] <= det["population_min_ess_bulk"]
    assert "population" in str(fit.summary())


def test_population_mean_posterior_covers_the_simulated_value(fits):
    """The 90% interval of every population log-odds (and of the typical annotator's
    channel) covers the value the annotators were simulated from."""
    for fit in fits:
        assert fit.status == "ok", fit.message
        t = fit.summary(level=0.9).table("population")
        mu, conf = t[t.parameter == "mu"], t[t.parameter == "confusion"]
        assert np.all((mu["low"] < MU.ravel()) & (MU.ravel() < mu["high"])), mu
        truth = softmax(MU, axis=-1).ravel()
        assert np.all((conf["low"] < truth) & (truth < conf["high"])), conf


def test_centred_and_non_centred_agree_within_monte_carlo_error(fits):
    nc_fit, c_fit = fits
    assert c_fit.details["parametrisation"]["centered"].all()
    assert not nc_fit.details["parametrisation"]["centered"].any()
    for name in ("confusion",):
        a, b = nc_fit.draws[name], c_fit.draws[name]
        ess = min(nc_fit.details["min_ess_bulk"], c_fit.details["min_ess_bulk"])
        se = np.sqrt(a.var(0) / ess + b.var(0) / ess)
        assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * se + 1e-12)
    a, b = nc_fit.details["population"]["mu"], c_fit.details["population"]["mu"]
    se = np.sqrt(a.var(0) / nc_fit.details["population_min_ess_bulk"]
                 + b.var(0) / c_fit.details["population_min_ess_bulk"])
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * se)


def test_auto_follows_the_rule_and_the_fit_says_so(fits):
    threshold = CENTERED_MIN_RATINGS_PER_CLASS * 3
    counts = [threshold, threshold - 1, 1, threshold + 5]
    items = np.concatenate([np.arange(c) for c in counts])
    annot = np.repeat(np.array(["a", "b", "c", "d"]), counts)
    label = np.arange(items.size) % 3
    ann = nc.Annotations.from_arrays(items, annot, label)
    np.testing.assert_array_equal(HDS(centered="auto").centered_annotators(ann),
                                  [True, False, False, True])
    np.testing.assert_array_equal(HDS(centered=True).centered_annotators(ann), [True] * 4)
    np.testing.assert_array_equal(HDS().centered_annotators(ann), [False] * 4)
    param = fits[1].details["parametrisation"]
    assert param["option"] == "auto"
    assert param["min_ratings"] == K * CENTERED_MIN_RATINGS_PER_CLASS
    np.testing.assert_array_equal(param["ratings"], [N] * J)
    assert str(CENTERED_MIN_RATINGS_PER_CLASS) in param["rule"]


@pytest.mark.parametrize("bad", ["yes", "centred", 1, None, [True, False]])
def test_centered_is_validated(sim, bad):
    with pytest.raises(ValueError, match="centered must be False, True or 'auto'"):
        HDS(centered=bad).fit(sim.annotations, method=_nuts())


def test_centred_density_is_the_non_centred_one_changed_variables():
    """Annotators 0 and 2 centred: ``e = mu_free + sigma z``, so the log density differs
    from the non-centred one at the matching ``z`` by the Jacobian ``-(K-1) sum_k
    log sigma_k`` of each centred annotator, and the channels are the same."""
    from numpyro.infer.util import log_density

    k, j = 3, 3
    item = np.array([0, 0, 1, 1, 2, 2])
    annot = np.array([0, 1, 1, 2, 0, 2])
    label = np.array([0, 1, 2, 2, 0, 1])
    rng = np.random.default_rng(0)
    base = {"prevalence": rng.dirichlet(np.ones(k))[None],
            "mu_free": rng.normal(size=(k, k - 1)), "sigma": rng.uniform(0.2, 2.0, k)}
    z = rng.normal(size=(j, k, k - 1))
    mask = np.array([True, False, True])
    e = np.where(mask[:, None, None], base["mu_free"] + base["sigma"][:, None] * z, z)
    kw = dict(n_items=3, n_annotators=j, n_classes=k)
    with x64():
        ld_nc, tr_nc = log_density(hierarchical_dawid_skene, (item, annot, label), kw,
                                   {**base, "z": z})
        ld_c, tr_c = log_density(hierarchical_dawid_skene, (item, annot, label),
                                 {**kw, "centered": tuple(mask.tolist())}, {**base, "z": e})
    np.testing.assert_allclose(np.asarray(tr_c["confusion"]["value"]),
                               np.asarray(tr_nc["confusion"]["value"]), rtol=1e-12)
    jac = mask.sum() * (k - 1) * np.log(base["sigma"]).sum()
    assert float(ld_c) == pytest.approx(float(ld_nc) - jac, rel=1e-12)
    with pytest.raises(ValueError, match="one entry per annotator"):
        log_density(hierarchical_dawid_skene, (item, annot, label),
                    {**kw, "centered": (True, False)}, {**base, "z": e})


def test_population_r_hat_decides_the_status():
    """Channels that mixed but population chains that disagree: the fit's largest
    R-hat is the population's, and the one NUTS rule calls it not converged."""
    from noisycal.annotators.hierarchical import _with_population_diagnostics
    from noisycal.engines.density.dawid_skene import chain_status

    rng = np.random.default_rng(0)
    diag = {"max_rhat": 1.002, "min_ess_bulk": 350.0, "num_divergences": 0, "chains": 2,
            "draws": 200, "relabel_message": ""}
    mu = rng.normal(size=(2, 200, K, K))
    mu[1] += 3.0  # chain 1 sits elsewhere
    out = _with_population_diagnostics(diag, {"mu": mu, "sigma": rng.gamma(2.0, size=(2, 200, K))})
    assert out["population_max_rhat"] > 1.5 and out["max_rhat"] == out["population_max_rhat"]
    assert out["min_ess_bulk"] == out["population_min_ess_bulk"] < 50
    assert chain_status(out, 1.01)[0] == "not_converged"
    assert chain_status(diag, 1.01)[0] == "ok"
