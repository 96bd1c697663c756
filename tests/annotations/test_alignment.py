"""Alignment: targets built from annotations carry their item ids; metrics check them."""

import numpy as np
import pandas as pd
import pytest

import noisycal as nc


def _annotations(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    A = (rng.random((n, 3)) < np.where(y[:, None], 0.85, 0.15)).astype(int)
    items = np.array([f"item{i}" for i in rng.permutation(n)])
    return nc.Annotations.from_wide(A, classes=[0, 1], items=items), rng.uniform(0.05, 0.95, n)


def test_targets_from_annotations_carry_the_annotations_item_ids():
    ann, _ = _annotations()
    ab = dict(a=[0.15] * 3, b=[0.85] * 3)
    for t in (nc.targets.soft(ann), nc.targets.voted(ann),
              nc.targets.corrected(ann, **ab, weights="equal")):
        np.testing.assert_array_equal(t.items, ann.items)
    assert nc.targets.soft(counts=np.ones((3, 2))).items is None
    h = nc.targets.hard(pd.Series([0, 1], index=["x", "y"]), n_classes=2)
    assert list(h.items) == ["x", "y"]


def test_metrics_check_predictions_against_the_target_items():
    ann, z = _annotations()
    t = nc.targets.soft(ann)
    ref = float(nc.ece(z, t, interval=None))
    # aligned: a Series with the same index, or items= in the same order
    assert float(nc.ece(pd.Series(z, index=ann.items), t, interval=None)) == ref
    assert float(nc.ece(z, t, items=ann.items, interval=None)) == ref
    assert float(nc.brier(z, t, items=ann.items, interval=None)) == pytest.approx(
        float(nc.brier(z, t, interval=None)), rel=1e-15)
    # a permuted index: refused, not silently misaligned
    perm = ann.items[::-1]
    with pytest.raises(ValueError, match="items"):
        nc.ece(pd.Series(z, index=perm), t, interval=None)
    with pytest.raises(ValueError, match="items"):
        nc.nll(z, t, items=perm, interval=None)
    with pytest.raises(ValueError, match="items"):
        nc.calibration_slope(z, t, items=perm)
    # realigning by the target's items gives the reference value back
    s = pd.Series(z, index=ann.items).sample(frac=1.0, random_state=0)
    assert float(nc.ece(s.loc[t.items], t, interval=None)) == ref


def test_posterior_rows_follow_the_annotations_item_order():
    wide, _ = _annotations(60, seed=2)
    rng = np.random.default_rng(5)
    long = pd.DataFrame({"item": wide.items[wide.item_index],
                         "annotator": wide.annotators[wide.annotator_index],
                         "label": wide.classes[wide.label_index]})
    long = long.iloc[rng.permutation(len(long))].reset_index(drop=True)
    first_seen = pd.unique(long["item"])  # the order the rows introduce the items
    assert not np.array_equal(first_seen, np.sort(first_seen))
    ann = nc.Annotations.from_long(long, item="item", annotator="annotator", label="label")
    fit = nc.DawidSkene(2).fit(ann, seed=0)
    post = nc.targets.posterior(None, fit)
    np.testing.assert_array_equal(fit.items, first_seen)
    np.testing.assert_array_equal(post.items, first_seen)
    new = nc.targets.posterior(ann, fit)
    np.testing.assert_array_equal(new.items, first_seen)
    np.testing.assert_allclose(new.values, fit.item_posterior, atol=1e-10)


def test_a_failed_fit_passes_its_status_to_targets_and_estimates():
    one = nc.Annotations.from_arrays(np.arange(10), np.zeros(10), np.arange(10) % 2)
    with pytest.warns(nc.IdentifiabilityWarning):
        bad = nc.DawidSkene().fit(one)
    assert bad.status != "ok"

    class Stub:  # a fit-like object with finite channels and a failed status
        confusion = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 2)
        group_prevalence = np.array([[0.5, 0.5]])
        n_items, details, method = 4, {}, "em"
        status, message = "not_converged", "EM stopped at max_iter"

    A = np.array([[1, 1], [0, 0], [1, 0], [0, 1]])
    T = nc.targets.corrected(A, Stub())
    assert T.status == "not_converged" and "max_iter" in T.message
    z = np.array([0.7, 0.2, 0.6, 0.4])
    for est in (nc.ece(z, T, interval=None), nc.brier(z, T, interval=None),
                nc.mce(z, T, min_count=1, interval=None)):
        assert est.status == "target_not_converged" and "max_iter" in est.message
    ok = nc.targets.corrected(A, confusion=Stub.confusion)
    assert ok.status == "ok" and nc.ece(z, ok, interval=None).status == "ok"
