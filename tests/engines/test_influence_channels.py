"""The sandwich influence of EM fits of the constrained channels (class-conditional
Dawid–Skene and MACE): agreement with the bootstrap, the score equation, the boundary,
and what is refused (noisycal.engines.influence)."""

import dataclasses
import warnings

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import as_key, x64
from noisycal.engines.identification import dawid_skene_information
from noisycal.engines.influence import channel_influence
from noisycal.engines.patterns import pattern_data
from noisycal.exceptions import NotOffered
from noisycal.intervals.bootstrap import multinomial_counts
from noisycal.models.channels import class_conditional_confusion, mace_confusion

K = 3
PREVALENCE = [0.5, 0.3, 0.2]
ACCURACY = np.array([[0.85, 0.7, 0.8], [0.75, 0.8, 0.7], [0.9, 0.65, 0.75]])
SPAM = np.array([0.3, 0.4, 0.25])
STRATEGY = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.4, 0.4, 0.2]])
#: EM run to the MLE: the score equation holds to ~1e-8 in the parameters
TIGHT = nc.engines.EM(n_starts=3, tol=1e-15, max_iter=100_000)


def _design(name, n=600, seed=11):
    if name == "class_conditional":
        model = nc.annotators.ClassConditionalDawidSkene(K)
        conf = np.asarray(class_conditional_confusion(ACCURACY, K), dtype=np.float64)
    else:
        model = nc.annotators.MACE(K)
        conf = np.asarray(mace_confusion(SPAM, STRATEGY), dtype=np.float64)
    ann = nc.simulate.dawid_skene(n, PREVALENCE, conf, seed=seed).annotations
    return model, ann


@pytest.fixture(scope="module", params=["class_conditional", "mace"])
def fitted(request):
    model, ann = _design(request.param)
    fit = model.fit(ann, method=TIGHT)
    assert fit.model == request.param and fit.status == "ok"
    return model, ann, fit, fit.influence()


def _channel_se(infl):
    """Sandwich standard errors of the confusion entries (J, K, K) (delta method)."""
    with x64():
        jac = jax.jacfwd(lambda th: infl.parametrisation(
            th, jnp.asarray(infl.x0), jnp.asarray(infl.basis))["confusion"])(
            jnp.zeros(infl.basis.shape[1], dtype=jnp.float64))
    jac = np.asarray(jac).reshape(-1, infl.basis.shape[1])
    var = np.einsum("ip,pq,iq->i", jac, infl.covariance, jac)
    return np.sqrt(var).reshape(infl.shape[1], K, K)


def test_sandwich_standard_errors_agree_with_the_bootstrap(fitted):
    """Sandwich SEs of every confusion entry against the SD of 200 nonparametric bootstrap
    EM refits (n = 600 items, 3 annotators, K = 3). The bootstrap SD of B = 200 refits
    has a Monte Carlo relative error of about 1 / sqrt(2 (B - 1)) = 5%, so each entry
    must agree within 25% (5 Monte Carlo SEs, with room for the finite-n departure from
    the first-order approximation), and their geometric mean within 8% (entries of one
    row share their error, so fewer than 27 independent ratios; measured 0.98 and 1.00).
    Measured ratios: 0.88-1.08 (class-conditional), 0.92-1.05 (MACE)."""
    _, _, fit, infl = fitted
    sandwich = _channel_se(infl)
    boot = np.asarray(fit.bootstrap_draws(200, seed=1)["confusion"]).std(axis=0, ddof=1)
    ratio = sandwich / boot
    assert np.all(np.abs(ratio - 1) < 0.25), ratio.round(3)
    assert abs(np.exp(np.mean(np.log(ratio))) - 1) < 0.08


def test_influence_sums_to_zero_at_the_mle(fitted):
    """The score equation: at the MLE the items' influence sums to 0 (EM run to 1e-15),
    and the parametrisation gives the fit back at theta = 0."""
    model, ann, fit, infl = fitted
    total = (infl.influence * infl.counts[:, None]).sum(axis=0)
    assert np.max(np.abs(total)) < 1e-6
    assert infl.influence.shape == (infl.counts.size, len(infl.names))
    assert infl.pattern.shape == (ann.n_items,) and infl.counts.sum() == ann.n_items
    np.testing.assert_allclose(infl.covariance,
                               (infl.influence * infl.counts[:, None]).T @ infl.influence,
                               rtol=1e-12)
    with x64():
        p = infl.parametrisation(np.zeros(infl.basis.shape[1]), infl.x0, infl.basis)
    np.testing.assert_allclose(p["confusion"], fit.confusion, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p["prevalence"][0], fit.prevalence, rtol=0, atol=1e-12)
    assert infl.one_coin == fit.model and infl.boundary_moves.shape[0] == 0
    # the free parameters are the model's own: L (K - 1) + J K
    assert len(infl.names) == (K - 1) + 3 * K
    key = "accuracy[" if fit.model == "class_conditional" else "spam["
    assert sum(name.startswith(key) for name in infl.names) == (
        3 * K if fit.model == "class_conditional" else 3)


def test_information_is_the_identification_checks(fitted):
    """The observed information equals the identification check's (the same free
    parametrisation, computed there by the same autodiff of the same likelihood)."""
    _, ann, fit, infl = fitted
    arr = ann.engine_arrays()
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                           n_annotators=3, n_classes=K, group=None, n_groups=1)
        labels = {"prevalence": list("abc"), "confusion": [""] * 27, "accuracy": [""] * 3,
                  "class_accuracy": [""] * 9, "spam": [""] * 3, "strategy": [""] * 9}
        info, _, names, _ = dawid_skene_information(
            fit.prevalence[None], fit.confusion, pd_.data, pd_.counts, None,
            one_coin=fit.model, labels=labels)
    assert len(names) == len(infl.names)
    np.testing.assert_allclose(infl.information, info, rtol=1e-9, atol=1e-9)


def test_a_mace_annotator_who_never_spams_is_held_at_the_boundary():
    """spam[0] = 0: EM fits it at (nearly) 0, the free parametrisation holds it (and its
    undetermined strategy) fixed, and its rule-of-three move is offered to the NC-ECE
    (never a silent zero variance)."""
    spam = np.array([0.0, 0.4, 0.3])
    conf = np.asarray(mace_confusion(spam, STRATEGY), dtype=np.float64)
    # a seed whose fit has spam[0] within one expected rating of 0 (most seeds fit it a
    # little above, 0.003-0.05, where it is free)
    ann = nc.simulate.dawid_skene(500, PREVALENCE, conf, seed=3).annotations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
        fit = nc.annotators.MACE(K).fit(ann, method=nc.engines.EM(n_starts=3, tol=1e-12))
    infl = fit.influence()
    assert fit.details["spam"][0] * 500 < 1.0   # fewer than MIN_COUNT spam ratings
    assert "spam[0]" not in infl.names and not any(n.startswith("strategy[0")
                                                   for n in infl.names)
    L = 1
    spam_move = infl.boundary_moves[:, L * K]
    assert np.count_nonzero(spam_move) == 1
    np.testing.assert_allclose(spam_move.max(), 3.0 / 500, rtol=0.01)
    assert infl.boundary_moves.shape[0] == 1


def test_refusals_say_why():
    model, ann = _design("mace", n=200)
    fit = model.fit(ann, method=nc.engines.EM(n_starts=1))
    with pytest.raises(NotOffered, match="offered for EM fits; this fit is by 'map'"):
        dataclasses.replace(fit, method="map").influence()
    with pytest.raises(NotOffered, match="keeps no posterior draws"):
        dataclasses.replace(fit, method="nuts").influence()
    reason = channel_influence(dataclasses.replace(fit, model="item_difficulty"))
    assert "no maximum-likelihood fit" in reason and "integrated out" in reason
    gold = model.fit(ann, method=nc.engines.EM(n_starts=1), gold={ann.items[0]: ann.classes[0]})
    assert gold.influence().counts.sum() == ann.n_items  # gold items at their class
    lost = dataclasses.replace(gold, details={**gold.details, "gold_index": None})
    with pytest.raises(NotOffered, match="used gold labels but does not carry them"):
        lost.influence()


@pytest.mark.parametrize("name", ["class_conditional", "mace"])
def test_refit_equals_a_hand_refit_of_a_resample(name):
    """fit.refit(weights) refits the constrained channel by EM: a bootstrap resample's
    refit equals an EM fit of the resampled items; equal weights give the fit back."""
    model, ann = _design(name, n=400, seed=3)
    em = nc.engines.EM(n_starts=2, tol=1e-14, max_iter=100_000)
    fit = model.fit(ann, method=em)
    n = ann.n_items
    with x64():
        W = np.asarray(multinomial_counts(as_key(4), n))
    res = fit.refit(W[None])
    assert res.converged.all() and res.confusion.shape == (1, 3, K, K)
    idx = np.repeat(np.arange(n), W.astype(int))
    hand = model.fit(nc.Annotations.from_wide(ann.to_wide(missing=-1)[idx],
                                              classes=list(ann.classes)), method=em)
    # both stop where the objective changes by < 1e-14, from different starts; EM's
    # linear rate leaves the estimates that far apart as ~1e-6 (measured 1.3e-6)
    np.testing.assert_allclose(res.confusion[0], hand.confusion, atol=1e-5)
    np.testing.assert_allclose(res.prevalence[0], hand.prevalence, atol=1e-5)
    # the refit stays in the model: class-conditional rows / MACE's rank-one errors
    c = res.confusion[0]
    if name == "mace":
        spam = np.asarray(fit.details["spam"])
        assert spam.shape == (3,)
        off = c - np.eye(K) * np.diagonal(c, axis1=1, axis2=2)[:, :, None]
        np.testing.assert_allclose(off[:, 0, 1], off[:, 2, 1], atol=1e-12)
    else:
        off = (1 - np.diagonal(c, axis1=1, axis2=2)) / (K - 1)
        np.testing.assert_allclose(c[:, 0, 1], off[:, 0], atol=1e-12)
    np.testing.assert_allclose(fit.refit(np.ones(n)).confusion, fit.confusion, atol=1e-5)


def test_a_class_conditional_accuracy_fitted_at_one_is_held_at_the_boundary():
    """accuracy[0, 0] = 1: EM fits it at 1, it is held fixed, and its move is the rule of
    three down from 1, 3 / N with N the expected class-0 items annotator 0 rated."""
    acc = ACCURACY.copy()
    acc[0, 0] = 1.0
    conf = np.asarray(class_conditional_confusion(acc, K), dtype=np.float64)
    ann = nc.simulate.dawid_skene(600, PREVALENCE, conf, seed=11).annotations
    fit = nc.annotators.ClassConditionalDawidSkene(K).fit(
        ann, method=nc.engines.EM(n_starts=3, tol=1e-12))
    infl = fit.influence()
    assert fit.details["accuracy"][0, 0] > 1 - 1e-6
    assert "accuracy[0, 0]" not in infl.names and len(infl.names) == (K - 1) + 3 * K - 1
    L = 1
    assert infl.boundary_moves.shape == (1, L * K + 3 * K)
    N = fit.item_posterior[:, 0].sum()          # annotator 0 rated every item once
    np.testing.assert_allclose(infl.boundary_moves[0, L * K], -3.0 / N, rtol=1e-9)
    assert np.count_nonzero(infl.boundary_moves) == 1
