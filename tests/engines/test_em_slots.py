"""The slot layout of the ratings (EM speed): same likelihood, counts and fit as the
rating layout.

Every item's first ratings sit in fixed slots (``annotator * K + label``, padded with the
code ``J * K``); items with more ratings than slots spill into overflow arrays. The
hand-built case fixes the layout itself; the ragged simulated design (1 to 6 ratings per
item, so padding and overflow both occur) checks the per-item class log-likelihood and
the expected counts against brute-force NumPy sums and the whole EM fit against the
rating layout.
"""

import numpy as np
import pytest
from ragged_ratings import ragged

import jax
import jax.numpy as jnp

from noisycal.engines.em.dawid_skene import expected_counts, fit_em, join_data, split_data
from noisycal.models import dawid_skene as dsm

# items 0 (3 ratings), 1 (1 rating), 2 (2 ratings); codes are annotator * K + label
ITEM = np.array([0, 0, 0, 1, 2, 2])
CODE = np.array([4, 0, 7, 2, 5, 1])


def test_slots_by_hand():
    # min_fill 0.25: slot 3 is filled by 1 of 3 items (>= 0.75), so 3 slots, no overflow
    sl = dsm.make_slots(ITEM, CODE, 3, pad=9)
    np.testing.assert_array_equal(np.asarray(sl.code), [[4, 0, 7], [2, 9, 9], [5, 1, 9]])
    assert sl.over_item.shape == (0,) and sl.over_code.shape == (0,)
    # min_fill 0.5: slot 3 is filled by 1 item (< 1.5), so item 0's third rating overflows
    sl = dsm.make_slots(ITEM, CODE, 3, pad=9, min_fill=0.5)
    np.testing.assert_array_equal(np.asarray(sl.code), [[4, 0], [2, 9], [5, 1]])
    np.testing.assert_array_equal(np.asarray(sl.over_item), [0])
    np.testing.assert_array_equal(np.asarray(sl.over_code), [7])
    # every item rated twice: a plain reshape, no padding
    sl = dsm.make_slots(np.repeat(np.arange(3), 2), np.arange(6), 3, pad=9)
    np.testing.assert_array_equal(np.asarray(sl.code), [[0, 1], [2, 3], [4, 5]])


@pytest.mark.parametrize("min_fill", [0.0, -0.5, 1.5, 25.0])
def test_slots_bad_min_fill(min_fill):
    with pytest.raises(ValueError, match="min_fill"):
        dsm.make_slots(ITEM, CODE, 3, pad=9, min_fill=min_fill)


@pytest.mark.parametrize("min_fill", [0.05, 0.25, 0.9])
def test_slot_likelihood_and_counts_match_brute_force(min_fill):
    item, annot, label, n, J, K = ragged()
    rng = np.random.default_rng(5)
    conf = rng.dirichlet(np.ones(K), size=(J, K))
    post = rng.dirichlet(np.ones(K), size=n)
    ll_np = np.zeros((n, K))
    np.add.at(ll_np, item, np.log(conf[annot, :, label]))
    counts_np = np.zeros((J, K, K))
    np.add.at(counts_np, (annot, slice(None), label), post[item])
    with jax.enable_x64(True):
        data = dsm.make_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K)
        srt = np.sort(item)
        data = data._replace(slots=dsm.make_slots(
            srt, np.asarray(data.annotator) * K + np.asarray(data.label), n, J * K,
            min_fill=min_fill))
        # 6 slots (padding, no overflow); 3 slots (padding and overflow); 1 slot
        n_slots = {0.05: 6, 0.25: 3, 0.9: 1}[min_fill]
        assert data.slots.code.shape == (n, n_slots)
        assert (data.slots.over_code.shape[0] > 0) == (n_slots < 6)
        for d in (data, data._replace(slots=None)):
            ll = dsm.class_log_likelihood({"confusion": jnp.asarray(conf)}, d)
            np.testing.assert_allclose(np.asarray(ll), ll_np, rtol=1e-13, atol=1e-13)
            counts = expected_counts(jnp.asarray(post), d)
            np.testing.assert_allclose(np.asarray(counts), counts_np, rtol=1e-13, atol=1e-13)


def test_split_and_join_keep_the_slots():
    item, annot, label, n, J, K = ragged()
    with jax.enable_x64(True):
        data = dsm.make_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K)
    back = join_data(*split_data(data))
    assert back.slots is data.slots and back.n_items == n and back.n_classes == K
    assert dsm.make_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K,
                         slots=False).slots is None


def test_em_fit_same_on_both_layouts():
    item, annot, label, n, J, K = ragged(seed=8)
    rng = np.random.default_rng(9)
    with jax.enable_x64(True):
        data = dsm.make_data(item, annot, label, n_items=n, n_annotators=J, n_classes=K)
        post0 = jnp.asarray(rng.dirichlet(np.ones(K), size=(2, n)))
        w = jnp.asarray(rng.integers(1, 4, n).astype(np.float64))
        a = fit_em(post0, data, None, None, None, one_coin=False, max_iter=50, tol=1e-300,
                   weights=w)
        b = fit_em(post0, data._replace(slots=None), None, None, None, one_coin=False,
                   max_iter=50, tol=1e-300, weights=w)
    assert int(a.n_iter[0]) == 50
    np.testing.assert_allclose(np.asarray(a.post), np.asarray(b.post), atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.confusion), np.asarray(b.confusion), atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.loglik), np.asarray(b.loglik), rtol=1e-12)
