"""Tests for noisycal.simulate: reproducibility, known truth recovered, argument checks."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, logit, softmax

from noisycal import simulate
from noisycal.annotations.core import Annotations

CONF3 = np.array([[[0.8, 0.1, 0.1], [0.1, 0.7, 0.2], [0.05, 0.15, 0.8]],
                  [[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]]])


# ---------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("fn", [
    lambda seed: simulate.binary_scores(50, seed=seed).y,
    lambda seed: simulate.classifier(30, 3, seed=seed).counts,
    lambda seed: simulate.dawid_skene(30, [0.3, 0.3, 0.4], CONF3, seed=seed).annotations
    .label_index,
    lambda seed: simulate.gaussian_toy(50, seed=seed).annotations,
])
def test_same_seed_same_draw_and_jax_keys(fn):
    import jax

    assert_array_equal(fn(3), fn(3))
    assert_array_equal(fn(jax.random.key(3)), fn(3))
    assert not np.array_equal(fn(3), fn(4))


@pytest.mark.parametrize("seed", [2**64, 2**63, -(2**63) - 1, True, "0", 1.5, None])
def test_bad_seed_raises_naming_seed(seed):
    with pytest.raises(ValueError, match="seed"):
        simulate.binary_scores(5, seed=seed)


def test_int64_extreme_seeds_work():
    assert simulate.binary_scores(3, seed=2**63 - 1).p.shape == (3,)
    assert simulate.binary_scores(3, seed=-(2**63)).p.shape == (3,)


# ---------------------------------------------------------------------------- binary scores


def test_binary_scores_follow_their_curve():
    s = simulate.binary_scores(40_000, intercept=0.2, slope=0.7, a=2.0, b=3.0, seed=1)
    assert s.p.shape == s.y.shape == s.true_prob.shape == (40_000,)
    assert set(np.unique(s.y)) == {0, 1}
    assert_allclose(s.true_prob, expit(0.2 + 0.7 * logit(s.p)), rtol=1e-12)
    # Beta(2, 3) mean 0.4; sd of the mean 0.2 / sqrt(40000) = 0.001: 5 sd
    assert abs(s.p.mean() - 0.4) < 0.005
    # E[y] = E[true_prob]; binomial sd <= 0.5 / sqrt(40000) = 0.0025: 4 sd
    assert abs(s.y.mean() - s.true_prob.mean()) < 0.01


def test_population_binned_ece_matches_a_large_sample():
    kw = {"intercept": -0.3, "slope": 0.5, "a": 1.5, "b": 1.0}
    pop = simulate.population_binned_ece(10, **kw)
    s = simulate.binary_scores(400_000, seed=5, **kw)
    bins = np.minimum((s.p * 10).astype(int), 9)
    gaps = np.bincount(bins, weights=s.true_prob - s.p, minlength=10) / s.p.size
    # sampling error of a bin's mean gap ~ 1e-3 / sqrt(n_bin): far below 2e-3
    assert abs(np.abs(gaps).sum() - pop) < 2e-3
    assert pop > 0.05
    assert simulate.population_binned_ece(10) < 1e-12


# ---------------------------------------------------------------------------- classifier


def test_classifier_truth_and_votes():
    sim = simulate.classifier(500, 3, temperature=0.5, n_annotators=7, seed=2)
    assert sim.logits.shape == sim.probs.shape == sim.true_probs.shape == sim.counts.shape
    assert_array_equal(sim.counts.sum(axis=1), 7)
    assert_allclose(sim.probs, softmax(sim.logits, axis=1), rtol=1e-12)
    # temperature 0.5: logits are twice the latent z, and softmax(z) is the truth
    assert_allclose(sim.true_probs, softmax(sim.logits * 0.5, axis=1), rtol=1e-12)
    assert sim.labels.min() >= 0 and sim.labels.max() <= 2
    calibrated = simulate.classifier(50, 4, temperature=1.0, seed=2)
    assert_allclose(calibrated.probs, calibrated.true_probs, rtol=1e-12)


# ---------------------------------------------------------------------------- Dawid-Skene


def test_dawid_skene_recovers_its_channels_and_keeps_order():
    sim = simulate.dawid_skene(20_000, [0.3, 0.3, 0.4], CONF3, p_rate=0.6, seed=7)
    ann = sim.annotations
    assert isinstance(ann, Annotations) and ann.annotators_known
    # with p_rate < 1 annotator 1 may be seen before annotator 0: the order is pinned
    assert_array_equal(ann.annotators, [0, 1])
    assert_array_equal(ann.items, np.arange(20_000))
    assert_array_equal(ann.classes, [0, 1, 2])
    y = sim.true_class
    for j in range(2):
        rows = ann.annotator_index == j
        t, o = y[ann.item_index[rows]], ann.label_index[rows]
        emp = np.array([np.bincount(o[t == k], minlength=3) / np.sum(t == k)
                        for k in range(3)])
        # about 4000 ratings per true class: sd of a rate <= 0.008; 5 sd
        assert_allclose(emp, CONF3[j], atol=0.04)
    assert_allclose(np.bincount(y, minlength=3) / y.size, [0.3, 0.3, 0.4], atol=0.02)
    # p_rate: share of (item, annotator) cells rated, plus the forced one per item
    assert 0.58 < ann.n_ratings / (2 * 20_000) < 0.7


def test_dawid_skene_groups():
    conf = np.tile(np.eye(2) * 0.8 + 0.1, (3, 1, 1))
    sim = simulate.dawid_skene(4000, [[0.2, 0.8], [0.7, 0.3]], conf, group_probs=[0.5, 0.5],
                               seed=4)
    for g, mu in ((0, 0.8), (1, 0.3)):
        # about 2000 items per group: sd 0.01; 5 sd
        assert abs(sim.true_class[sim.group == g].mean() - mu) < 0.05
    assert abs(sim.group.mean() - 0.5) < 0.04


# ---------------------------------------------------------------------------- Gaussian toy


def test_gaussian_toy_channels_and_truths():
    t = simulate.gaussian_toy(60_000, truth="shifted", seed=3)
    assert t.annotations.shape == (60_000, 3)
    assert_allclose(t.m, simulate.gaussian_toy_truth(t.z, "shifted"), rtol=1e-12)
    for j in range(3):
        fp = t.annotations[t.y == 0, j].mean()
        tp = t.annotations[t.y == 1, j].mean()
        # about 30000 items per class: sd <= 0.003; 5 sd
        assert abs(fp - simulate.GAUSSIAN_TOY_A[j]) < 0.015
        assert abs(tp - simulate.GAUSSIAN_TOY_B[j]) < 0.015
    z = np.array([0.0, 0.25, 0.5, 1.0])
    assert_allclose(simulate.gaussian_toy_truth(z, "calibrated"), z)
    assert_allclose(simulate.gaussian_toy_truth(z, "nonlinear"), [0.02, 0.37, 0.5, 0.98],
                    atol=1e-12)
    assert_allclose(simulate.gaussian_toy_truth([0.5], "shifted"), expit([-0.3]))
    custom = simulate.gaussian_toy(10, a=[0.0], b=[1.0], seed=1)
    assert_array_equal(custom.annotations[:, 0], custom.y)


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("call", "match"), [
    (lambda: simulate.dawid_skene(10, [0.5, 0.6], np.tile(np.eye(2), (2, 1, 1))),
     "prevalence"),
    (lambda: simulate.dawid_skene(10, [1.2, -0.2], np.tile(np.eye(2), (2, 1, 1))),
     "prevalence"),
    (lambda: simulate.dawid_skene(10, [0.5, 0.5], np.tile([[0.9, 0.2], [0.1, 0.9]],
                                                          (2, 1, 1))), "confusion"),
    (lambda: simulate.dawid_skene(10, [0.5, 0.5], np.tile([[1.1, -0.1], [0.1, 0.9]],
                                                          (2, 1, 1))), "confusion"),
    (lambda: simulate.dawid_skene(10, [0.5, 0.5], np.eye(2)), "confusion"),
    (lambda: simulate.dawid_skene(10, [0.3, 0.3, 0.4], np.tile(np.eye(2), (2, 1, 1))),
     "prevalence"),
    (lambda: simulate.dawid_skene(10, [0.5, 0.5], np.tile(np.eye(2), (2, 1, 1)),
                                  group_probs=[1.0]), "group_probs"),
    (lambda: simulate.dawid_skene(10, [[0.5, 0.5], [0.2, 0.8]],
                                  np.tile(np.eye(2), (2, 1, 1))), "group_probs"),
    (lambda: simulate.dawid_skene(10, [[0.5, 0.5], [0.2, 0.8]],
                                  np.tile(np.eye(2), (2, 1, 1)), group_probs=[0.6, 0.6]),
     "group_probs"),
    (lambda: simulate.dawid_skene(10, [0.5, 0.5], np.tile(np.eye(2), (2, 1, 1)),
                                  p_rate=0.0), "p_rate"),
    (lambda: simulate.binary_scores(10, a=0.0), "a must be positive"),
    (lambda: simulate.binary_scores(10, slope=np.inf), "slope must be finite"),
    (lambda: simulate.classifier(10, temperature=-1.0), "temperature"),
    (lambda: simulate.classifier(10, n_classes=1), "n_classes"),
    (lambda: simulate.gaussian_toy(10, truth="linear"), "truth"),
    (lambda: simulate.gaussian_toy(10, a=[0.1, 0.2], b=[0.9]), "a and b"),
    (lambda: simulate.gaussian_toy(10, b=[1.5, 0.9, 0.9]), "b must be"),
    (lambda: simulate.gaussian_toy_truth([1.2], "calibrated"), "z must lie in"),
])
def test_bad_arguments_raise_naming_them(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("fn", [
    lambda n: simulate.binary_scores(n),
    lambda n: simulate.classifier(n),
    lambda n: simulate.dawid_skene(n, [0.5, 0.5], np.tile(np.eye(2), (2, 1, 1))),
    lambda n: simulate.gaussian_toy(n),
    lambda n: simulate.population_binned_ece(n),
])
@pytest.mark.parametrize("n", [0, -3, 2.0, "5"])
def test_sizes_must_be_positive_integers(fn, n):
    with pytest.raises(ValueError, match=r"n_items|n_bins"):
        fn(n)
