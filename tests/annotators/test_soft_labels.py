"""Dirichlet soft-label model: simulation recovery (MLE, NUTS), the multinomial limit, misuse."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

import jax
from numpyro.handlers import seed, substitute, trace
from numpyro.infer.util import log_density

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.annotators.soft_labels import DirichletSoftLabels, SoftLabelFit
from noisycal.models.soft_labels import (
    MODELS,
    dirichlet_soft_labels,
    identified_map,
    identity_map,
    log_likelihood,
)

K = 3
W_TRUE = 0.6 * np.eye(K) + np.array([[0.0, 0.1, -0.05], [0.05, 0.0, 0.1], [-0.1, 0.05, 0.0]])
B_TRUE = np.array([0.2, -0.1, -0.1])
KAPPA_TRUE = 20.0


def classifier_logits(n, rng):
    """Overconfident-ish classifier logits: a noisy one-hot signal."""
    return rng.normal(0.0, 1.5, size=(n, K)) + 1.5 * np.eye(K)[rng.integers(0, K, n)]


def simulate_counts(log_probs, n_totals, W, b, kappa, rng_seed):
    """Vote counts drawn from the model itself at the given (identified) parameters."""
    Wc, bc = identified_map(W, b)
    values = {"W_dev": (Wc - identity_map(K)).T, "b": bc, "kappa": kappa}
    with x64():
        model = seed(substitute(dirichlet_soft_labels, data=values), rng_seed)
        tr = trace(model).get_trace(log_probs, None, n_totals=n_totals)
        return np.asarray(tr["counts"]["value"])


@pytest.fixture(scope="module")
def recovery_data():
    rng = np.random.default_rng(1)
    logits = classifier_logits(3000, rng)
    log_p = log_softmax(logits, axis=1)
    counts = simulate_counts(log_p, np.full(3000, 10), W_TRUE, B_TRUE, KAPPA_TRUE, rng_seed=0)
    return logits, counts


@pytest.fixture(scope="module")
def mle_fit(recovery_data):
    logits, counts = recovery_data
    return DirichletSoftLabels().fit(logits=logits, counts=counts, method="mle")


def test_registry_and_shared_likelihood():
    assert MODELS == {"dirichlet_soft_labels": dirichlet_soft_labels}
    rng = np.random.default_rng(0)
    log_p = log_softmax(classifier_logits(20, rng), axis=1)
    counts = rng.multinomial(5, np.ones(K) / K, size=20)
    Wc, bc = identified_map(W_TRUE, B_TRUE)
    params = {"W_dev": (Wc - identity_map(K)).T, "b": bc, "kappa": 7.0}

    def counts_and_map(p):   # one compiled program, not one per operation
        _, tr = log_density(dirichlet_soft_labels, (log_p, counts), {}, p)
        site = tr["counts"]
        return site["fn"].log_prob(site["value"]).sum(), tr["W"]["value"]

    with x64():
        from_model, W = jax.jit(counts_and_map)(params)
        from_model = float(from_model)
        direct = float(log_likelihood(Wc, bc, 7.0, log_p, counts).sum())
        np.testing.assert_allclose(np.asarray(W), Wc, atol=1e-12)
    assert from_model == pytest.approx(direct, rel=1e-12)


def test_identified_map_keeps_probabilities():
    rng = np.random.default_rng(3)
    log_p = log_softmax(classifier_logits(10, rng), axis=1)
    Wc, bc = identified_map(W_TRUE, B_TRUE)
    np.testing.assert_allclose(Wc.sum(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(bc.sum(), 0.0, atol=1e-12)
    np.testing.assert_allclose(softmax(log_p @ Wc.T + bc, axis=1),
                               softmax(log_p @ W_TRUE.T + B_TRUE, axis=1), rtol=1e-12)
    # the centred identity is the identity map
    np.testing.assert_allclose(softmax(log_p @ np.asarray(identity_map(K)).T, axis=1),
                               np.exp(log_p), rtol=1e-12)


def test_mle_recovers_parameters(mle_fit):
    fit = mle_fit
    Wc, bc = identified_map(W_TRUE, B_TRUE)
    assert isinstance(fit, SoftLabelFit)
    assert fit.status == "ok" and fit.method == "mle" and fit.draws is None
    assert fit.W.shape == (K, K) and fit.b.shape == (K,)
    np.testing.assert_allclose(fit.W.sum(axis=0), 0.0, atol=1e-10)
    se_W, se_b = fit.std_errors["W"], fit.std_errors["b"]
    assert np.all(np.isfinite(se_W)) and np.all(se_W > 0)
    assert np.all(np.abs(fit.W - Wc) < 4 * se_W), (fit.W - Wc) / se_W
    assert np.all(np.abs(fit.b - bc) < 4 * se_b), (fit.b - bc) / se_b
    # kappa's standard error here is about 1.4 (7% of 20): rel=0.25 is about 3.5 standard
    # errors; the 4-standard-error check below is the sharp one
    assert fit.kappa == pytest.approx(KAPPA_TRUE, rel=0.25)
    assert abs(fit.kappa - KAPPA_TRUE) < 4 * fit.std_errors["kappa"]
    assert fit.loglik == pytest.approx(fit.engine_result.loglik)


def test_summary_and_predict_proba(recovery_data, mle_fit):
    logits, _ = recovery_data
    fit = mle_fit
    table = fit.summary()
    assert list(table.columns) == ["estimate", "std_err"]
    assert len(table) == K * K + K + 1
    assert table.loc["W[0, 1]", "estimate"] == pytest.approx(fit.W[0, 1])
    assert table.loc["kappa", "std_err"] == pytest.approx(fit.std_errors["kappa"])
    assert list(fit.to_frame().columns) == ["parameter", "estimate", "std_err"]
    p = fit.predict_proba(logits=logits[:50])
    np.testing.assert_allclose(p, softmax(log_softmax(logits[:50], 1) @ fit.W.T + fit.b, 1))
    # probs= and logits= give the same calibrated probabilities
    np.testing.assert_allclose(fit.predict_proba(probs=softmax(logits[:50], 1)), p, rtol=1e-10)
    with pytest.raises(ValueError, match="to_arviz"):
        fit.to_arviz()


def test_multinomial_limit_is_soft_label_cross_entropy_fit():
    """kappa -> infinity: the MLE of (W, b) is the soft-label cross-entropy fit."""
    rng = np.random.default_rng(2)
    n = 3000
    logits = classifier_logits(n, rng)
    log_p = log_softmax(logits, axis=1)
    p = softmax(log_p @ W_TRUE.T + B_TRUE, axis=1)
    counts = np.stack([rng.multinomial(10, pi) for pi in p])

    def soft_ce(theta):
        W, b = theta[: K * K].reshape(K, K), theta[K * K:]
        log_q = log_softmax(log_p @ W.T + b, axis=1)
        resid = counts - counts.sum(1, keepdims=True) * np.exp(log_q)
        grad = np.concatenate([-(resid.T @ log_p).ravel(), -resid.sum(0)])
        return -(counts * log_q).sum(), grad

    opt = minimize(soft_ce, np.concatenate([np.eye(K).ravel(), np.zeros(K)]), jac=True,
                   method="BFGS", options={"gtol": 1e-6})
    W_ce, b_ce = identified_map(opt.x[: K * K].reshape(K, K), opt.x[K * K:])

    fit = DirichletSoftLabels().fit(logits=logits, counts=counts, method="mle")
    assert fit.status == "ok"
    assert fit.kappa > 100  # no overdispersion: the concentration runs off
    np.testing.assert_allclose(fit.W, W_ce, atol=0.02)
    np.testing.assert_allclose(fit.b, b_ce, atol=0.02)


def test_map_prior_shrinks_to_identity_map(recovery_data):
    logits, counts = (a[:200] for a in recovery_data)
    fit = DirichletSoftLabels(prior_scale=1e-3).fit(logits=logits, counts=counts, method="map")
    assert fit.status == "ok" and fit.method == "map"
    np.testing.assert_allclose(fit.W, identity_map(K), atol=1e-3)
    np.testing.assert_allclose(fit.b, 0.0, atol=1e-3)
    assert fit.engine_result.prior is True


def test_binary_positive_class_probabilities():
    rng = np.random.default_rng(5)
    z = rng.normal(0.0, 2.0, size=400)
    p_true = 1 / (1 + np.exp(-(0.5 * z + 0.3)))  # an overconfident classifier
    counts1 = rng.binomial(6, p_true)
    counts = np.column_stack([6 - counts1, counts1])
    fit = DirichletSoftLabels().fit(logits=z, counts=counts, method="map")
    assert fit.W.shape == (2, 2) and fit.status == "ok"
    out = fit.predict_proba(logits=z[:5])
    assert out.shape == (5,)
    # on the logit scale the map is (W[1] - W[0]) @ (log(1 - p), log p) + b[1] - b[0]; the
    # truth 0.5 z + 0.3 = 0.5 log p - 0.5 log(1 - p) + 0.3 lies in that family
    coef = fit.W[1] - fit.W[0]
    # wide relative to 0.5 and 0.3 only because 400 items with 6 votes each say little:
    # the standard errors are about 0.09 (coef) and 0.15 (intercept difference), and the
    # MAP prior shrinks towards the identity map; 0.15 is about 1.7 and 1 standard errors
    np.testing.assert_allclose(coef, [-0.5, 0.5], atol=0.15)
    assert fit.b[1] - fit.b[0] == pytest.approx(0.3, abs=0.15)
    np.testing.assert_allclose(out, fit.predict_proba(probs=1 / (1 + np.exp(-z[:5]))), rtol=1e-9)


@pytest.mark.slow
def test_nuts_posterior_recovers_parameters(recovery_data):
    logits, counts = (a[:300] for a in recovery_data)
    fit = DirichletSoftLabels().fit(
        logits=logits, counts=counts, seed=jax.random.key(0),
        method=nc.engines.NUTS(
            num_chains=2, num_warmup=300, num_samples=300, rhat_threshold=1.05,
            chain_method="sequential",  # the draws this test was written for (run_nuts'
            # default is now 'vectorized', whose floating-point path differs: R-hat 1.056
            # on this seed)
        ),
    )
    assert fit.status == "ok", fit.message
    assert fit.draws["W"].shape == (600, K, K)
    assert fit.draws["b"].shape == (600, K)
    assert fit.draws["kappa"].shape == (600,)
    Wc, bc = identified_map(W_TRUE, B_TRUE)
    sd = fit.std_errors
    assert np.all(np.abs(fit.W - Wc) < 4 * sd["W"]), (fit.W - Wc) / sd["W"]
    assert np.all(np.abs(fit.b - bc) < 4 * sd["b"]), (fit.b - bc) / sd["b"]
    assert abs(fit.kappa - KAPPA_TRUE) < 4 * sd["kappa"]
    table = fit.summary()
    assert {"estimate", "std_err", "r_hat", "ess_bulk"} <= set(table.columns)
    assert table["r_hat"].max() < 1.05
    assert fit.engine_result.num_divergences == 0
    idata = fit.to_arviz()
    assert idata.posterior["W"].shape == (2, 300, K, K)
    ci = fit.conf_int(level=0.9)
    assert ci.loc["kappa", "lower"] == pytest.approx(np.quantile(fit.draws["kappa"], 0.05))
    assert ci.loc["kappa", "lower"] < fit.kappa < ci.loc["kappa", "upper"]
    assert list(ci.index) == list(fit.summary().index)
    p = fit.predict_proba(logits=logits[:7])
    assert p.shape == (7, K)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    # the posterior-mean predictive is the average of the per-draw maps
    z = np.einsum("skj,ij->sik", fit.draws["W"], log_softmax(logits[:7], 1))
    np.testing.assert_allclose(p, softmax(z + fit.draws["b"][:, None], axis=2).mean(0))


# ---------------------------------------------------------------- misuse


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(7)
    probs = softmax(classifier_logits(6, rng), axis=1)
    counts = rng.multinomial(4, np.ones(K) / K, size=6)
    return probs, counts


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda p, c: (p, c[:, :2]), "counts must have shape"),
        (lambda p, c: (p, c[:5]), "counts must have shape"),
        (lambda p, c: (p, c - 5), "non-negative"),
        (lambda p, c: (p, c + 0.5), "whole numbers"),
        (lambda p, c: (p, np.vstack([c[:5], np.zeros((1, K))])), "at least one vote"),
        (lambda p, c: (p, np.where(c == c, np.nan, 0)), "counts contains"),
        (lambda p, c: (np.eye(K)[[0, 1, 2, 0, 1, 2]], c), "zero probabilit"),
        (lambda p, c: (p * 2, c), "probs"),
    ],
)
def test_fit_rejects_bad_data(small, change, match):
    probs, counts = change(*small)
    with pytest.raises(ValueError, match=match):
        DirichletSoftLabels().fit(probs=probs, counts=counts, method="map")


def test_fit_rejects_bad_options(small):
    probs, counts = small
    model = DirichletSoftLabels()
    with pytest.raises(ValueError, match="DirichletSoftLabels has no EM engine"):
        model.fit(probs=probs, counts=counts, method="em")
    with pytest.raises(TypeError, match="num_chains"):
        model.fit(probs=probs, counts=counts, method=nc.engines.MLE(num_chains=2))
    with pytest.raises(TypeError, match="jacobian"):
        model.fit(probs=probs, counts=counts, method=nc.engines.MLE(jacobian=True))
    with pytest.raises(ValueError, match="weak_threshold does not apply"):
        model.fit(probs=probs, counts=counts, method=nc.engines.MLE(weak_threshold=0.1))
    with pytest.raises(ValueError, match="progress"):
        model.fit(probs=probs, counts=counts, progress="yes")
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        model.fit(probs=probs, logits=np.log(probs), counts=counts)
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        model.fit(counts=counts)
    with pytest.raises(ValueError, match="seed"):
        model.fit(probs=probs, counts=counts, seed=None)
    for bad in (0.0, -1.0, float("nan"), "1", True):
        with pytest.raises(ValueError, match="prior_scale"):
            DirichletSoftLabels(prior_scale=bad)


def test_predict_proba_checks_classes(mle_fit):
    with pytest.raises(ValueError, match="3 classes"):
        mle_fit.predict_proba(probs=np.array([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="exactly one"):
        mle_fit.predict_proba()


def test_conf_int_needs_draws(mle_fit):
    with pytest.raises(ValueError, match="conf_int needs posterior draws"):
        mle_fit.conf_int()
