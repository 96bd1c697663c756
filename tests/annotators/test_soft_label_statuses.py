"""SoftLabelFit.statuses: the engine's status with the model's own (kappa at the
multinomial boundary, kappa not identified), carried to the Estimates built from a fit."""

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

import noisycal as nc
from noisycal.annotators.soft_labels import (
    KAPPA_EXCESS,
    DirichletSoftLabels,
    SoftLabelFit,
    fit_problems,
)
from noisycal.exceptions import IdentifiabilityWarning

K = 3
W_TRUE = 0.6 * np.eye(K) + np.array([[0.0, 0.1, -0.05], [0.05, 0.0, 0.1], [-0.1, 0.05, 0.0]])
B_TRUE = np.array([0.2, -0.1, -0.1])


def multinomial_votes(seed, n=300, votes=10):
    """Votes drawn as multinomial draws (no overdispersion) around the calibrated map."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 1.5, size=(n, K)) + 1.5 * np.eye(K)[rng.integers(0, K, n)]
    p = softmax(log_softmax(logits, axis=1) @ W_TRUE.T + B_TRUE, axis=1)
    return logits, np.stack([rng.multinomial(votes, pi) for pi in p])


def test_kappa_running_off_is_a_boundary_estimate():
    logits, counts = multinomial_votes(1)
    fit = DirichletSoftLabels().fit(logits=logits, counts=counts,
                                    method=nc.engines.MLE(hessian=False))
    assert fit.kappa > 1e5
    assert (fit.status, fit.statuses) == ("boundary", ("boundary",))
    assert fit.message.startswith(f"kappa = {fit.kappa:.4g} is at the boundary")
    assert "at most 10 votes" in fit.message
    assert repr(fit).endswith("status='boundary', loglik=-877.5220)")


def test_boundary_rule_and_one_vote_per_item():
    # (n_max - 1) / (kappa + 1) < KAPPA_EXCESS: with 10 votes, kappa > 899; an interior
    # MLE of multinomial votes (seed 0 of multinomial_votes: kappa 128) stays ok
    assert KAPPA_EXCESS == 0.01
    assert fit_problems(898.0, np.array([10, 3])) == []
    assert fit_problems(900.0, np.array([10, 3]))[0][0] == "boundary"
    assert fit_problems(np.inf, np.array([10, 3]))[0][0] == "boundary"  # the limit itself
    assert fit_problems(np.nan, np.array([10, 3])) == []   # the engine says 'nonfinite'
    assert fit_problems(None, np.array([10, 3])) == []           # NUTS: no boundary rule
    assert fit_problems(None, np.array([1, 1]))[0][0] == "not_identified"


def test_one_vote_per_item_does_not_identify_kappa():
    logits, counts = multinomial_votes(2, n=200, votes=1)
    with pytest.warns(IdentifiabilityWarning, match="kappa is not identified"):
        fit = DirichletSoftLabels().fit(logits=logits, counts=counts,
                                        method=nc.engines.MLE(hessian=False))
    assert fit.statuses == ("not_identified",)
    assert fit.message.startswith("every item has exactly one vote")


def _nuts_fit(statuses):
    rng = np.random.default_rng(0)
    draws = {"W": np.eye(K) - 1 / K + 0.01 * rng.normal(size=(40, K, K)),
             "b": 0.01 * rng.normal(size=(40, K)), "kappa": np.full(40, 5.0)}
    return SoftLabelFit(W=draws["W"].mean(0), b=draws["b"].mean(0), kappa=5.0, draws=draws,
                        std_errors={}, loglik=-1.0, status=statuses[-1],
                        message="max R-hat 1.2 exceeds 1.01; every item has exactly one vote",
                        method="nuts", n_items=30, n_classes=K, prior_scale=1.0,
                        engine_result=None, statuses=statuses)


def test_statuses_merge_order_and_repr():
    fit = _nuts_fit(("diagnostics_unavailable", "not_identified"))
    assert fit.statuses == ("not_identified", "diagnostics_unavailable")
    assert fit.status == "not_identified"
    assert "statuses=('not_identified', 'diagnostics_unavailable')" in repr(fit)


def test_every_status_of_the_map_travels_to_the_estimate():
    fit = _nuts_fit(("not_converged", "not_identified"))
    rng = np.random.default_rng(1)
    probs = softmax(rng.normal(0, 1.5, size=(30, K)), axis=1)
    target = rng.dirichlet(np.ones(K), size=30)  # annotator distributions
    est = nc.ambiguity.posterior_true_label_ece(fit, target, probs=probs, n_bins=5,
                                                max_draws=20)
    assert est.statuses == ("not_identified", "not_converged")
    assert est.message.startswith("the calibration map's NUTS fit: max R-hat")
