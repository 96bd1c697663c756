"""The probability-scale E-step (EM speed): the same posteriors, log-likelihood and fit as
the log-scale E-step, with the log scale taking over where the products underflow; and the
cheap test that skips collapsing rating patterns when nearly every item has its own.

Reference numbers are brute-force NumPy sums of logs (``logsumexp`` by hand), not the
code under test.
"""

import numpy as np
import pytest
from ragged_ratings import ragged

import jax
import jax.numpy as jnp

from noisycal.engines.em.dawid_skene import e_step, fit_em, run_em
from noisycal.engines.em.estep import PROB_MIN_ITEMS, PROB_TINY, code_weights, prob_e_step
from noisycal.engines.patterns import collapse_pays, pattern_data
from noisycal.models import dawid_skene as dsm


def _brute(prev, conf, group, item, annot, label, n, gold=None):
    """NumPy posteriors and per-item log-likelihoods on the log scale."""
    joint = np.log(prev)[group].copy()
    np.add.at(joint, item, np.log(conf[annot, :, label]))
    m = joint.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(joint - m).sum(axis=1, keepdims=True)))[:, 0]
    post = np.exp(joint - lse[:, None])
    if gold is not None:
        known = gold >= 0
        lse = np.where(known, joint[np.arange(n), np.where(known, gold, 0)], lse)
        post[known] = np.eye(joint.shape[1])[gold[known]]
    return post, lse


@pytest.mark.parametrize("min_fill", [0.05, 0.25, 0.9])
@pytest.mark.parametrize("extras", [False, True])
def test_prob_e_step_matches_brute_force(min_fill, extras):
    # padding and overflow (min_fill 0.25 and 0.9), groups, gold items and weights
    item, annot, label, n, J, K = ragged()
    rng = np.random.default_rng(5)
    conf = rng.dirichlet(np.ones(K), size=(J, K))
    L = 2 if extras else 1
    prev = rng.dirichlet(np.ones(K), size=L)
    group = rng.integers(0, L, n)
    gold = np.where(rng.random(n) < 0.1, rng.integers(0, K, n), -1) if extras else None
    w = rng.integers(1, 5, n).astype(np.float64) if extras else np.ones(n)
    post_np, lse_np = _brute(prev, conf, group, item, annot, label, n, gold)
    with jax.enable_x64(True):
        data = dsm.make_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K,
                             group=group, n_groups=L)
        data = data._replace(slots=dsm.make_slots(
            np.sort(item), np.asarray(data.annotator) * K + np.asarray(data.label), n,
            J * K, min_fill=min_fill))
        jw = jnp.asarray(w) if extras else None
        jg = None if gold is None else jnp.asarray(gold)
        post, loglik, ok = prob_e_step(jnp.asarray(prev), jnp.asarray(conf), data, jg, jw,
                                       code_weights(data, jw))
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(post), post_np, rtol=1e-13, atol=1e-15)
    assert float(loglik) == pytest.approx(float(np.sum(w * lse_np)), rel=1e-13)


def _contradicting(n=60, J=4, K=3):
    """Items on which four annotators agree (classes 0, 1, 2 in turn), then n // 4 items
    on which they disagree (labels 0, 1, 2, 0), given weight 0: the M-step sees only the
    agreeing items, so every channel becomes the identity (zeros off the diagonal, floored
    at 1e-300), and each class of a disagreeing item meets at least two 1e-300 factors:
    the scaled products underflow and the log scale must take over."""
    agree = np.repeat(np.arange(n) % K, J)
    label = np.concatenate([agree, np.tile([0, 1, 2, 0], n // 4)])
    m = n + n // 4
    item = np.repeat(np.arange(m), J)
    annot = np.tile(np.arange(J), m)
    w = np.concatenate([np.ones(n), np.zeros(n // 4)])
    post0 = np.concatenate([np.eye(K)[np.arange(n) % K], np.full((n // 4, K), 1.0 / K)])
    return item, annot, label, m, J, K, w, post0


def test_prob_e_step_reports_underflow_and_em_falls_back():
    item, annot, label, m, J, K, w, post0 = _contradicting()
    with jax.enable_x64(True):
        data = dsm.make_data(item, annot, label, n_items=m, n_annotators=J, n_classes=K)
        jw = jnp.asarray(w)
        conf = jnp.asarray(np.stack([np.eye(K)] * J))
        prev = jnp.full((1, K), 1.0 / K)
        _, _, ok = prob_e_step(prev, conf, data, None, jw, code_weights(data, jw))
        assert not bool(ok)  # products below PROB_TINY
        post_log, _ = e_step(prev, conf, data, None)
        assert np.all(np.isfinite(np.asarray(post_log)))
        a = run_em(jnp.asarray(post0), data, None, None, None, one_coin=False, max_iter=5,
                   tol=1e-300, weights=jw, prob=True)
        b = run_em(jnp.asarray(post0), data, None, None, None, one_coin=False, max_iter=5,
                   tol=1e-300, weights=jw)
    assert float(np.asarray(a.confusion)[0, 0, 1]) == 0.0  # the channels are degenerate
    assert np.all(np.isfinite(np.asarray(a.post)))
    np.testing.assert_allclose(np.asarray(a.post), np.asarray(b.post), atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.confusion), np.asarray(b.confusion), atol=1e-12)
    assert float(a.loglik) == pytest.approx(float(b.loglik), rel=1e-12)
    assert PROB_TINY > 1e-300


def test_lax_map_prob_run_equals_vmapped_log_scale_over_many_iterations():
    item, annot, label, n, J, K = ragged(seed=8)
    rng = np.random.default_rng(9)
    with jax.enable_x64(True):
        data = dsm.make_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K)
        post0 = jnp.asarray(rng.dirichlet(np.ones(K), size=(3, n)))
        w = jnp.asarray(rng.integers(1, 4, n).astype(np.float64))

        def run(p, prob):
            return run_em(p, data, None, None, None, one_coin=False, max_iter=60,
                          tol=1e-300, weights=w, prob=prob)

        a = jax.jit(lambda p: jax.lax.map(lambda q: run(q, True), p))(post0)
        b = jax.jit(jax.vmap(lambda q: run(q, False)))(post0)
    assert np.all(np.asarray(a.n_iter) == 60)
    np.testing.assert_allclose(np.asarray(a.post), np.asarray(b.post), atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.confusion), np.asarray(b.confusion), atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.loglik), np.asarray(b.loglik), rtol=1e-12)


def test_fit_em_switches_to_the_probability_scale_at_prob_min_items():
    # the probability-scale loop is the one with the fallback lax.cond in it
    for n, expect in ((PROB_MIN_ITEMS - 1, False), (PROB_MIN_ITEMS, True)):
        item = np.arange(n)
        with jax.enable_x64(True):
            data = dsm.make_data(item, item % 3, item % 2, n_items=n, n_annotators=3,
                                 n_classes=2)
            jaxpr = str(jax.make_jaxpr(lambda p, d=data: fit_em(
                p, d, None, None, None, one_coin=False, max_iter=3, tol=1e-8))(
                    jnp.full((2, n, 2), 0.5)))
        assert ("cond[" in jaxpr) == expect, n


def _design(n, J, per_item, seed=0, K=5):
    rng = np.random.default_rng(seed)
    who = np.argsort(rng.random((n, J)), axis=1)[:, :per_item]
    item = np.repeat(np.arange(n), per_item)
    return item, who.ravel(), rng.integers(0, K, n * per_item), K


def test_collapse_pays_on_dense_not_on_sparse_designs():
    # dense: 3 annotators x 3 classes rate every item, 27 possible patterns
    item, annot, label, K = _design(60_000, 3, 3, K=3)
    assert collapse_pays(item, annot * K + label, 60_000)
    # 4 random annotators of 200 per item, 5 classes: nearly every pattern is distinct
    item, annot, label, K = _design(60_000, 200, 4)
    assert not collapse_pays(item, annot * K + label, 60_000)
    # at most `sample` items: always collapse (exact and cheap)
    assert collapse_pays(item[:400], (annot * K + label)[:400], 100)


def test_uncollapsed_pattern_data_is_the_identity():
    item, annot, label, n, J, K = ragged(seed=4)
    with jax.enable_x64(True):
        pd_ = pattern_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K,
                           group=None, n_groups=1, collapse=False)
    assert not pd_.collapsed and pd_.data.n_items == n
    np.testing.assert_array_equal(pd_.pattern, np.arange(n))
    np.testing.assert_array_equal(pd_.counts, np.ones(n))
