"""The influence of a NUTS fit from its draws, the Bayesian infinitesimal jackknife
(noisycal.engines.influence.posterior_influence): agreement with the EM fit's sandwich
and the posterior spread, and the NC-ECE's channel error under a NUTS fit of every
model (no 'channels_fixed')."""

import dataclasses
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.engines.influence import MIN_INFLUENCE_DRAWS, posterior_influence
from noisycal.exceptions import NotOffered

K = 3
PREVALENCE = [0.5, 0.3, 0.2]
CONF = np.array([[[0.8, 0.1, 0.1], [0.15, 0.7, 0.15], [0.1, 0.2, 0.7]]] * 3)


def _nuts(samples, warmup=300):
    return nc.engines.NUTS(num_warmup=warmup, num_samples=samples, num_chains=2)


@pytest.fixture(scope="module")
def ds_pair():
    ann = nc.simulate.dawid_skene(1000, PREVALENCE, CONF, seed=1).annotations
    em = nc.DawidSkene(K).fit(ann, seed=0)
    nuts = nc.DawidSkene(K).fit(ann, method=_nuts(1000), seed=0)
    assert em.status == "ok" and nuts.status == "ok"
    return ann, em, nuts


def _entry_sd(infl):
    """Standard deviations of every flat (prevalence, confusion) entry."""
    return np.sqrt(np.diag(infl.basis @ infl.covariance @ infl.basis.T))


def test_posterior_influence_agrees_with_the_sandwich_and_the_posterior(ds_pair):
    """Dawid–Skene, 1,000 items, 3 annotators, K = 3, 2 x 1,000 draws. Under a
    well-specified model with a weak prior the frequentist covariance of the posterior
    mean (the jackknife's), the posterior covariance and the MLE's sandwich agree to
    first order (Bernstein–von Mises). Measured SD ratios: against the posterior SD
    0.93-1.04 (geometric mean 0.998), against the EM fit's sandwich 0.85-1.06 (0.975;
    the sandwich is the MLE's, a different estimator from the posterior mean under the
    prior, and the jackknife carries Monte Carlo error of about p / S = 20 / 2000 on the
    variance). Asserted: within 12% of the posterior SD and 20% of the sandwich per
    entry, geometric means within 5%."""
    ann, em, nuts = ds_pair
    bij, sandwich = posterior_influence(nuts), em.influence()
    # the influence of a NUTS fit is the jackknife's, the fit protocol's answer
    np.testing.assert_array_equal(nuts.influence().covariance, bij.covariance)
    assert bij.boundary_moves.shape == (0, bij.x0.size)
    assert len(bij.names) == 2 + 3 * K * (K - 1)
    # the parametrisation gives the fit back at theta = 0; the influence is centred
    np.testing.assert_allclose(bij.x0[K:].reshape(3, K, K), nuts.confusion, atol=0)
    np.testing.assert_allclose(bij.counts @ bij.influence, 0.0, atol=1e-12)
    sd_bij, sd_em = _entry_sd(bij), _entry_sd(sandwich)
    draws = np.concatenate([np.asarray(nuts.draws["prevalence"]).reshape(2000, -1),
                            np.asarray(nuts.draws["confusion"]).reshape(2000, -1)], axis=1)
    sd_post = draws.std(axis=0, ddof=1)
    for ref, tol in ((sd_em, 0.20), (sd_post, 0.12)):
        ratio = sd_bij / ref
        assert np.all(np.abs(ratio - 1) < tol), ratio.round(3)
        assert abs(np.exp(np.mean(np.log(ratio))) - 1) < 0.05


def test_nc_ece_under_nuts_fits_carries_the_channel_error(ds_pair):
    """The default NC-ECE under a NUTS fit propagates the jackknife's channel error: the
    interval is wider than with the channels held fixed, and its status is ok."""
    ann, em, nuts = ds_pair
    rng = np.random.default_rng(0)
    P = rng.dirichlet(2 * np.ones(K), size=ann.n_items)
    e = nc.ece(P, nc.targets.corrected(ann, nuts), n_bins=10)
    bare = dataclasses.replace(nuts, annotations=None)        # offers no influence
    held = nc.ece(P, nc.targets.corrected(ann, bare), n_bins=10)
    assert e.statuses == ("ok",) and held.status == "channels_fixed"
    det = e.details["channel_error"]
    assert det["method"] == "delta (posterior influence)" and det["n_free"] == 20
    assert np.sum(det["channel_variance"] > 0) >= 6        # the bins that hold items
    assert e.interval[1] - e.interval[0] > held.interval[1] - held.interval[0]
    # the same plug-in: the channels' uncertainty enters the null (the interval and the
    # median-unbiased value), not the point estimate
    assert e.details["plugin"] == held.details["plugin"]


@pytest.mark.parametrize("model", ["hierarchical", "class_conditional", "mace",
                                   "item_difficulty"])
def test_every_nuts_model_offers_its_influence(model):
    """NUTS fits of the models without a sandwich (300 items, 2 x 150 draws): the
    influence is offered, and the NC-ECE under them is not 'channels_fixed'."""
    make = {"hierarchical": nc.annotators.HierarchicalDawidSkene,
            "class_conditional": nc.annotators.ClassConditionalDawidSkene,
            "mace": nc.annotators.MACE, "item_difficulty": nc.annotators.ItemDifficultyModel}
    ann = nc.simulate.dawid_skene(300, PREVALENCE, CONF, seed=3).annotations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = make[model](K).fit(ann, method=_nuts(150, warmup=150), seed=0)
    infl = fit.influence()
    assert infl.covariance.shape == (len(infl.names),) * 2
    assert np.all(np.isfinite(infl.covariance))
    # item difficulty: one pattern per item (each item's own difficulty)
    n_pat = infl.influence.shape[0]
    assert (n_pat == ann.n_items) == (model == "item_difficulty")
    P = np.random.default_rng(1).dirichlet(2 * np.ones(K), size=ann.n_items)
    e = nc.ece(P, nc.targets.corrected(ann, fit), n_bins=8)
    assert "channels_fixed" not in e.statuses
    assert e.details["channel_error"]["method"] == "delta (posterior influence)"


def test_refusals_say_why(ds_pair):
    ann, em, nuts = ds_pair
    few = dataclasses.replace(nuts, draws={k: v[:MIN_INFLUENCE_DRAWS - 1]
                                           for k, v in nuts.draws.items()})
    with pytest.raises(NotOffered, match="needs at least 100"):
        few.influence()
    assert "needs a NUTS fit; this fit is by 'em'" in posterior_influence(em)
    with pytest.raises(NotOffered, match="keeps no posterior draws"):
        dataclasses.replace(nuts, draws=None).influence()
    with pytest.raises(NotOffered, match="does not carry the annotations"):
        dataclasses.replace(nuts, annotations=None).influence()
    # 20 free parameters against 2 x 20 draws of one value each, repeated (about 2
    # effective draws per chain): mostly Monte Carlo noise
    rep = {k: np.repeat(v[::100], 50, axis=0) for k, v in nuts.draws.items()}
    with pytest.raises(NotOffered, match="free parameters and an effective sample size"):
        dataclasses.replace(nuts, draws=rep).influence()
    assert "is not implemented" in posterior_influence(
        dataclasses.replace(nuts, model="some_new_model"))
