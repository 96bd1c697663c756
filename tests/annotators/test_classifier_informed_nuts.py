"""ClassifierInformedDawidSkene by NUTS: the NumPyro model's density against the EM code,
the posterior against MAP-EM on simulated data, the circular-target status and the
one NUTS rule for convergence."""

import dataclasses
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.annotators import ClassifierInformedDawidSkene
from noisycal.exceptions import ConvergenceWarning

K = 3
CONF = np.array([[[0.75, 0.15, 0.10], [0.10, 0.70, 0.20], [0.10, 0.15, 0.75]],
                 [[0.60, 0.30, 0.10], [0.20, 0.60, 0.20], [0.05, 0.15, 0.80]],
                 [[0.80, 0.10, 0.10], [0.10, 0.80, 0.10], [0.15, 0.10, 0.75]]])
SCALE, BIAS = 2.0, np.array([0.3, -0.2, -0.1])
#: 2 chains x 200 draws are short for the default R-hat threshold 1.01 (this fit's
#: largest R-hat is 1.033); the tests judge the posterior with 1.1.
SHORT = dict(num_chains=2, num_warmup=200, num_samples=200)


def _world(n, seed):
    """Scores z, true classes drawn from softmax(SCALE z + BIAS), three annotators (the
    design of test_classifier_informed.py)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.0, size=(n, K))
    p = _softmax(SCALE * z + BIAS)
    y = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    u = rng.random((n, 3, 1))
    labels = (CONF[np.arange(3)[None, :], y[:, None]].cumsum(-1) > u).argmax(-1)
    return z, y, nc.Annotations.from_wide(labels, classes=[0, 1, 2])


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def fits():
    from noisycal.models.dawid_skene import default_priors

    z, y, ann = _world(200, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ClassifierInformedDawidSkene().fit(
            ann, logits=z, method=nc.engines.NUTS(**SHORT, rhat_threshold=1.1), seed=0)
    # MAP-EM under the same channel prior (EM has no prior on scale and bias)
    em = ClassifierInformedDawidSkene(beta=default_priors(K)[1]).fit(ann, logits=z)
    return z, y, ann, fit, em


def test_log_density_is_the_em_likelihood_plus_the_priors():
    """At a point: numpyro's log density of models.classifier_informed equals the EM
    code's marginal log-likelihood (ci_e_step) plus log LogNormal(0, 1) of the scale,
    log Normal(0, 1) of the bias and the Dirichlet log densities of the channel rows
    (scipy), to 1e-9."""
    from compiled_density import density
    from scipy import stats
    from scipy.special import log_softmax

    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.engines.em.classifier_informed import ci_e_step
    from noisycal.models.classifier_informed import classifier_informed
    from noisycal.models.dawid_skene import default_priors, make_data

    z, _, ann = _world(200, 1)   # the fixture's data: the E-step compiles once
    Z = log_softmax(z, axis=1)
    arr = ann.engine_arrays()
    scale, bias = 1.7, np.array([0.2, -0.5, 0.1])
    conf = 0.6 * CONF + 0.4 / K
    beta = default_priors(K)[1]
    with x64():
        data = make_data(arr.item, arr.annotator, arr.label, n_items=200, n_annotators=3,
                         n_classes=K)
        lp = density(classifier_informed, (arr.item, arr.annotator, arr.label),
                     dict(scores=jnp.asarray(Z), n_items=200, n_annotators=3, n_classes=K,
                          beta=jnp.asarray(beta)))(
            {"scale": jnp.asarray(scale), "bias": jnp.asarray(bias),
             "confusion": jnp.asarray(conf)})
        _, ll = ci_e_step(scale, bias, conf, data, Z)
    prior = (stats.lognorm(s=1.0).logpdf(scale) + stats.norm.logpdf(bias).sum()
             + sum(stats.dirichlet(beta[k]).logpdf(conf[j, k]) for j in range(3)
                   for k in range(K)))
    assert float(lp) == pytest.approx(float(ll) + prior, abs=1e-9)


def test_posterior_mean_is_near_map_em_and_the_truth(fits):
    """200 items, K = 3, 2 x 200 draws. The posterior means against MAP-EM under the same
    channel prior: channels within 0.07 (0.054 measured; posterior sds up to 0.073),
    scale within 0.1 (1.694 vs 1.675; posterior sd 0.28), item posteriors within 0.05 in
    mean total variation (0.026) and of the same class wherever MAP-EM is decided (its
    largest posterior >= 0.6; the 3 items that differ have 0.35-0.57 under both, and
    which of them flip changes with the last digits of the draws); against the truth:
    channels within 0.13 (0.107, as EM's 0.107) and the scale 2.0 inside the 95%
    interval of its draws."""
    z, y, ann, fit, em = fits
    assert fit.method == "nuts" and fit.status == "ok" and fit.statuses == ("ok",)
    assert 1.0 < fit.details["max_rhat"] < 1.1 and fit.details["num_divergences"] == 0
    d = fit.draws
    assert d["confusion"].shape == (400, 3, K, K) and d["scale"].shape == (400,)
    assert d["bias"].shape == (400, K) and d["prevalence"].shape == (400, 1, K)
    np.testing.assert_allclose(fit.confusion, d["confusion"].mean(0))
    assert fit.scale == pytest.approx(d["scale"].mean())
    np.testing.assert_allclose(d["bias"].sum(1), 0.0, atol=1e-12)
    assert np.abs(fit.confusion - em.confusion).max() < 0.07
    assert fit.scale == pytest.approx(em.scale, abs=0.1)
    tv = 0.5 * np.abs(fit.item_posterior - em.item_posterior).sum(1)
    assert tv.mean() < 0.05
    decided = em.item_posterior.max(1) >= 0.6
    assert decided.sum() >= 180
    np.testing.assert_array_equal(fit.item_posterior[decided].argmax(1),
                                  em.item_posterior[decided].argmax(1))
    np.testing.assert_allclose(fit.item_posterior.sum(1), 1.0)
    np.testing.assert_allclose(fit.group_prevalence[0], fit.item_prior.mean(0))
    assert np.abs(fit.confusion - CONF).max() < 0.13
    lo, hi = np.quantile(d["scale"], [0.025, 0.975])
    assert lo < SCALE < hi
    assert fit.loglik == pytest.approx(em.loglik, abs=1.0)
    idata = fit.to_arviz()       # the model's own pointwise likelihood and replicates
    assert idata.log_likelihood["label"].shape == (2, 200, 200)
    assert idata.posterior["scale"].shape == (2, 200)
    assert idata.posterior_predictive["label"].shape == (2, 200, ann.n_ratings)
    header = fit.summary(loo=True).header    # 21 parameters: p_loo 18.3 measured
    assert 15 < header["p_loo"] < 21 and header["pareto_k_high"] == 0


def test_nuts_targets_are_circular_against_the_same_scores(fits):
    """Posterior and corrected targets of the NUTS fit carry the scores' fingerprint: the
    same scores get 'circular_target', a held-out classifier's do not; NC-ECE's default
    interval of the held-out scores carries the channel error by the posterior influence
    (status 'ok'), wider than the same target's with the channels held fixed."""
    z, _, ann, fit, _ = fits
    post = nc.targets.posterior(None, fit)
    U = nc.targets.corrected(ann, fit)
    P = _softmax(z)
    for est in (nc.ece(P, post, interval=None), nc.brier(P, U, interval=None)):
        assert est.status == "circular_target", est
        assert "same classifier scores" in est.message
    other = _softmax(z + np.random.default_rng(5).normal(size=z.shape))
    assert nc.ece(other, post, interval=None).status == "ok"
    est = nc.ece(other, U, seed=0)   # the default interval: the posterior influence
    assert est.statuses == ("ok",)
    ce = est.details["channel_error"]
    assert ce["method"] == "delta (posterior influence)" and ce["n_free"] == 20
    assert ce["channel_variance"].sum() > -ce["cross_covariance"].sum() > 0
    bare = dataclasses.replace(fit, annotations=None)
    fixed = nc.ece(other, nc.targets.corrected(ann, bare), seed=0)
    assert fixed.statuses == ("channels_fixed",)
    # upper ends 0.1765 and 0.1740 (both lower ends at 0)
    assert est.high - est.low > 1.01 * (fixed.high - fixed.low)


def test_not_converged_by_the_one_nuts_rule(fits):
    """The same chains (same seed, settings and compiled sampler) judged with
    rhat_threshold=1.01: largest R-hat 1.033 > 1.01 gives 'not_converged' and a
    ConvergenceWarning; its posterior influence is that of the same draws (the status
    reaches NC-ECE through the target, not through the influence)."""
    z, _, ann, ok, _ = fits
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        fit = ClassifierInformedDawidSkene().fit(
            ann, logits=z, method=nc.engines.NUTS(**SHORT, rhat_threshold=1.01), seed=0)
    assert fit.status == "not_converged" and fit.statuses == ("not_converged",)
    assert not fit.converged and "exceeds 1.01" in fit.message
    assert fit.details["max_rhat"] == ok.details["max_rhat"] > 1.01
    infl = fit.influence()      # the same draws: the same posterior influence
    assert infl.covariance.shape == (20, 20)
    np.testing.assert_allclose(infl.covariance, ok.influence().covariance, rtol=1e-12)


def test_engines_offered_and_refused(fits):
    z, _, ann, _, _ = fits
    model = ClassifierInformedDawidSkene()
    with pytest.raises(ValueError, match="method"):
        model.fit(ann, logits=z, method="mle")
    with pytest.raises(ValueError, match="num_samples"):
        model.fit(ann, logits=z, method=nc.engines.NUTS(num_samples=0))
