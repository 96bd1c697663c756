"""Bayesian calibration maps: posterior draws of the calibrated probabilities and the
true-label ECE after a NUTS map, with a credible interval carrying the map's uncertainty."""

import dataclasses

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

import jax
from numpyro.handlers import seed as np_seed
from numpyro.handlers import substitute, trace

import noisycal as nc
from noisycal._util.jax import as_numpy_rng, x64
from noisycal.ambiguity import posterior_true_label_ece
from noisycal.annotators.soft_labels import DirichletSoftLabels
from noisycal.models.soft_labels import dirichlet_soft_labels, identified_map, identity_map

K = 3
W_TRUE = 0.6 * np.eye(K) + np.array([[0.0, 0.1, -0.05], [0.05, 0.0, 0.1], [-0.1, 0.05, 0.0]])
B_TRUE = np.array([0.2, -0.1, -0.1])
KAPPA_TRUE = 20.0
N_CAL, N_TEST, VOTES = 100, 1000, 10


def _simulate(n, rng, rng_seed):
    """Logits of an overconfident classifier and votes from the model at the known map."""
    logits = rng.normal(0.0, 1.5, size=(n, K)) + 1.5 * np.eye(K)[rng.integers(0, K, n)]
    Wc, bc = identified_map(W_TRUE, B_TRUE)
    values = {"W_dev": (Wc - identity_map(K)).T, "b": bc, "kappa": KAPPA_TRUE}
    with x64():
        model = np_seed(substitute(dirichlet_soft_labels, data=values), rng_seed)
        tr = trace(model).get_trace(log_softmax(logits, axis=1), None,
                                    n_totals=np.full(n, VOTES))
    return logits, np.asarray(tr["counts"]["value"])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    z_cal, c_cal = _simulate(N_CAL, rng, 0)
    z_test, c_test = _simulate(N_TEST, rng, 1)
    return z_cal, c_cal, z_test, c_test / c_test.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def nuts_fit(data):
    z_cal, c_cal, _, _ = data
    # one chain: no R-hat, so the status is 'diagnostics_unavailable' (the draws are
    # what these tests use)
    with pytest.warns(nc.ConvergenceWarning, match="one chain"):
        return DirichletSoftLabels().fit(logits=z_cal, counts=c_cal,
                                         method=nc.engines.NUTS(num_chains=1, num_warmup=150,
                                                                num_samples=150),
                                         seed=jax.random.key(0))


@pytest.fixture(scope="module")
def map_fit(nuts_fit):
    """A fit without posterior draws, as method='map' returns it (no optimiser run: the
    refusals below depend only on the missing draws)."""
    return dataclasses.replace(nuts_fit, draws=None, method="map")


def _hand_weighted_ece(P, S, w, n_bins):
    """Top-label sum_b |sum_{i in b} w_i (S[i, c_i] - conf_i)| / sum w, by hand."""
    c = np.argmax(P, axis=1)
    conf = P[np.arange(len(P)), c]
    b = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    r = w * (S[np.arange(len(P)), c] - conf)
    return sum(abs(r[b == j].sum()) for j in range(n_bins)) / w.sum()


# ------------------------------------------------------------------ predict_proba(draws=True)


def test_draws_shape_and_posterior_mean(nuts_fit, data):
    z_test = data[2]
    assert nuts_fit.status == "diagnostics_unavailable", nuts_fit.message
    D = nuts_fit.predict_proba(logits=z_test, draws=True)
    assert D.shape == (150, N_TEST, K)
    np.testing.assert_allclose(D.sum(axis=2), 1.0, rtol=0, atol=1e-12)
    # the posterior-mean predictions are the mean of the per-draw predictions
    np.testing.assert_allclose(nuts_fit.predict_proba(logits=z_test), D.mean(axis=0),
                               rtol=0, atol=1e-12)
    # draw s is softmax(W_s log p + b_s), by hand
    s = 17
    hand = softmax(log_softmax(z_test, 1) @ nuts_fit.draws["W"][s].T + nuts_fit.draws["b"][s],
                   axis=1)
    np.testing.assert_allclose(D[s], hand, rtol=0, atol=1e-12)
    # thinning and a cap: evenly spaced draws, the same rows as the full array
    Dt = nuts_fit.predict_proba(logits=z_test, draws=True, thin=3)
    np.testing.assert_array_equal(Dt, D[::3])
    Dm = nuts_fit.predict_proba(logits=z_test, draws=True, max_draws=4)
    np.testing.assert_array_equal(Dm, D[[0, 50, 99, 149]])
    np.testing.assert_allclose(nuts_fit.predict_proba(logits=z_test, thin=3), D[::3].mean(0),
                               rtol=0, atol=1e-12)


def test_draws_chunking_matches_one_block(nuts_fit, data, monkeypatch):
    """A tiny memory budget (one draw per chunk) gives the same numbers."""
    import noisycal.annotators.soft_labels as sl

    z_test = data[2][:50]
    full = nuts_fit.predict_proba(logits=z_test, draws=True)
    orig = sl._draw_blocks
    monkeypatch.setattr(sl, "_draw_blocks",
                        lambda W, b, idx, log_p: orig(W, b, idx, log_p, budget=1))
    np.testing.assert_array_equal(nuts_fit.predict_proba(logits=z_test, draws=True), full)


def test_draws_refused_without_posterior(map_fit, nuts_fit, data):
    z_test = data[2]
    with pytest.raises(ValueError, match="draws=True needs posterior draws.*method='map'"):
        map_fit.predict_proba(logits=z_test, draws=True)
    with pytest.raises(ValueError, match="draws must be True or False"):
        nuts_fit.predict_proba(logits=z_test, draws="yes")
    with pytest.raises(ValueError, match="thin must be >= 1"):
        nuts_fit.predict_proba(logits=z_test, draws=True, thin=0)
    with pytest.raises(ValueError, match="max_draws must be >= 1"):
        nuts_fit.predict_proba(logits=z_test, draws=True, max_draws=0)
    with pytest.raises(ValueError, match="logits must have 3 classes"):
        nuts_fit.predict_proba(logits=z_test[:, :2], draws=True)


# ------------------------------------------------------------------ posterior_true_label_ece


def test_value_is_true_label_ece_of_posterior_mean(nuts_fit, data):
    _, _, z_test, pi_test = data
    est = posterior_true_label_ece(nuts_fit, pi_test, logits=z_test, seed=1)
    P = nuts_fit.predict_proba(logits=z_test)
    plug = nc.true_label_ece(P, pi_test, form="expected", interval=None)
    assert est.value == pytest.approx(float(plug), rel=1e-12)
    # the one-chain fit has no R-hat: its status (not 'ok') is passed on to the estimate
    assert est.kind == "credible" and est.status != "ok" and "one chain" in est.message
    assert est.details["n_map_draws"] == 150 and est.details["n_failed"] == 0
    lo, hi = est.interval
    assert lo < hi
    assert np.quantile(est.replicates, 0.05) == pytest.approx(lo)
    # the map at the truth gives a smaller true-label ECE than the identity map
    uncal = nc.true_label_ece(softmax(z_test, 1), pi_test, form="expected", interval=None)
    assert hi < float(uncal)


def test_replicates_by_hand(nuts_fit, data):
    """Each replicate: draw d's calibrated probabilities, Bayesian-bootstrap weights from
    the seeded generator (a subsample of 20 draws first), the weighted binned ECE."""
    _, _, z_test, pi_test = data
    est = posterior_true_label_ece(nuts_fit, pi_test, logits=z_test, max_draws=20, seed=5)
    rng = as_numpy_rng(5)
    idx = rng.choice(150, 20, replace=False)
    log_p = log_softmax(z_test, axis=1)
    for j, d in enumerate(idx[:3]):
        w = rng.exponential(size=N_TEST)
        P = softmax(log_p @ nuts_fit.draws["W"][d].T + nuts_fit.draws["b"][d], axis=1)
        assert est.replicates[j] == pytest.approx(_hand_weighted_ece(P, pi_test, w, 15),
                                                  rel=1e-10)


def test_credible_wider_than_fixed_map(nuts_fit, data):
    """The map's posterior uncertainty widens the interval beyond the data's alone."""
    _, _, z_test, pi_test = data
    est = posterior_true_label_ece(nuts_fit, pi_test, logits=z_test, seed=2)
    # the same construction with the map fixed at the posterior mean (every draw equal)
    S = nuts_fit.draws["W"].shape[0]
    fixed = dataclasses.replace(nuts_fit, draws={
        "W": np.repeat(nuts_fit.draws["W"].mean(0)[None], S, axis=0),
        "b": np.repeat(nuts_fit.draws["b"].mean(0)[None], S, axis=0),
        "kappa": nuts_fit.draws["kappa"]})
    est_fixed = posterior_true_label_ece(fixed, pi_test, logits=z_test, seed=2)
    # and the plug-in bootstrap of the posterior-mean predictions
    boot = nc.true_label_ece(nuts_fit.predict_proba(logits=z_test), pi_test, form="expected",
                             interval=nc.intervals.Bootstrap(n_boot=300), seed=2)

    def width(e):
        return e.interval[1] - e.interval[0]

    assert width(est) > 1.2 * width(est_fixed), (est.interval, est_fixed.interval)
    assert width(est) > 1.2 * width(boot), (est.interval, boot.interval)


def test_status_carried_from_fit(nuts_fit, data):
    _, _, z_test, pi_test = data
    bad = dataclasses.replace(nuts_fit, status="not_converged", message="max R-hat 1.31")
    est = posterior_true_label_ece(bad, pi_test, logits=z_test, max_draws=10)
    assert est.status == "not_converged"
    assert "max R-hat 1.31" in est.message


def test_bad_inputs(map_fit, nuts_fit, data):
    _, _, z_test, pi_test = data
    with pytest.raises(ValueError, match="fit must be a NUTS fit.*method='map'"):
        posterior_true_label_ece(map_fit, pi_test, logits=z_test)
    with pytest.raises(ValueError, match="fit must be a SoftLabelFit"):
        posterior_true_label_ece(object(), pi_test, logits=z_test)
    with pytest.raises(ValueError, match="max_draws must be >= 1"):
        posterior_true_label_ece(nuts_fit, pi_test, logits=z_test, max_draws=0)
    with pytest.raises(ValueError, match="level"):
        posterior_true_label_ece(nuts_fit, pi_test, logits=z_test, level=1.5)
    with pytest.raises(ValueError, match="logits must have 3 classes"):
        posterior_true_label_ece(nuts_fit, pi_test[:, :2], logits=z_test[:, :2])
    # the shared target check (issue 23) refuses the rows before the map's own check
    with pytest.raises(ValueError, match="rows of target must sum to 1"):
        posterior_true_label_ece(nuts_fit, 2 * pi_test, logits=z_test)
    with pytest.raises(ValueError, match="thin must be >= 1"):
        posterior_true_label_ece(nuts_fit, pi_test, logits=z_test, thin=0)
