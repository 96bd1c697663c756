"""A fit's channels meet annotations by annotator id and class name, never by position."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from small_nuts import TWO_CHAINS

import noisycal as nc
from noisycal.correction import fit_class_prevalence

CLASSES = np.array(["a", "b", "c"])
WHO = np.array(["j0", "j1", "j2"])


def _named(ann, *, classes=None, annotators=None, keep=None):
    """The same ratings with string ids, classes and annotators listed in a given order
    (``keep``: only these annotators' ratings)."""
    item, who, lab = ann.item_index, WHO[ann.annotator_index], CLASSES[ann.label_index]
    if keep is not None:
        sel = np.isin(who, keep)
        item, who, lab = item[sel], who[sel], lab[sel]
    return nc.Annotations.from_arrays(
        item, who, lab, items=np.arange(ann.n_items),
        classes=list(CLASSES[:ann.n_classes]) if classes is None else classes,
        annotators=list(WHO if keep is None else keep) if annotators is None else annotators)


@pytest.fixture(scope="module")
def three():
    """Three classes, three annotators (EM fit on string-labelled ratings)."""
    conf = np.stack([0.75 * np.eye(3) + 0.25 / 3, 0.6 * np.eye(3) + 0.4 / 3,
                     0.85 * np.eye(3) + 0.05])
    conf[1, 2] = [0.1, 0.3, 0.6]
    sim = nc.simulate.dawid_skene(600, [0.5, 0.3, 0.2], conf, seed=1)
    ann = _named(sim.annotations)
    fit = nc.DawidSkene(3).fit(ann, seed=0)
    assert fit.status == "ok"
    probs = np.random.default_rng(2).dirichlet(np.ones(3), size=ann.n_items)
    return ann, fit, probs


@pytest.fixture(scope="module")
def toy():
    """The audit's binary case: 2,000 items of the Gaussian toy, EM channels."""
    t = nc.simulate.gaussian_toy(2000, truth="shifted", seed=11)
    ann = nc.Annotations.from_wide(t.annotations, classes=[0, 1], annotators=["x", "y", "z"])
    fit = nc.DawidSkene(2).fit(ann, seed=0)
    assert fit.status == "ok"
    return t, ann, fit


def test_reordered_annotators_give_the_same_binary_target(toy):
    """The audit found 807 of 2,000 rows changed (by up to 1.0) and the NC-ECE moved from
    0.2305 to 0.1425 when the same ratings listed the annotators in another order."""
    t, ann, fit = toy
    other = nc.Annotations.from_wide(t.annotations[:, [2, 0, 1]], classes=[0, 1],
                                     annotators=["z", "x", "y"])
    T, U = nc.targets.corrected(ann, fit), nc.targets.corrected(other, fit)
    np.testing.assert_allclose(U.values, T.values, rtol=0, atol=1e-12)
    assert U.details["annotator_index"].tolist() == [2, 0, 1]
    assert U.details["class_index"].tolist() == [0, 1]
    np.testing.assert_array_equal(U.details["confusion"], fit.confusion[[2, 0, 1]])
    np.testing.assert_allclose(U.details["weights"], T.details["weights"][[2, 0, 1]],
                               rtol=1e-12)
    assert float(nc.ece(t.z, U, n_bins=10, interval=None)) == pytest.approx(
        float(nc.ece(t.z, T, n_bins=10, interval=None)), abs=1e-13)


def test_reordered_classes_permute_the_binary_target(toy):
    """Classes listed as [1, 0]: the target's columns follow that order, the values are
    the same, and the positive-class NC-ECE of class 1 is unchanged."""
    t, ann, fit = toy
    swapped = nc.Annotations.from_wide(t.annotations, classes=[1, 0],
                                       annotators=["x", "y", "z"])
    T, U = nc.targets.corrected(ann, fit), nc.targets.corrected(swapped, fit)
    assert U.classes.tolist() == [1, 0] and U.details["class_index"].tolist() == [1, 0]
    np.testing.assert_allclose(U.values, T.values[:, ::-1], rtol=0, atol=1e-12)
    assert U.details["prevalence"] == pytest.approx(1 - T.details["prevalence"], rel=1e-12)
    probs = np.column_stack([1 - t.z, t.z])
    for kind in ("top_label", "classwise"):
        assert float(nc.ece(probs[:, ::-1], U, n_bins=10, kind=kind, interval=None)) == \
            pytest.approx(float(nc.ece(probs, T, n_bins=10, kind=kind, interval=None)),
                          abs=1e-13)


def test_reordered_annotators_and_classes_give_the_same_kclass_target(three):
    ann, fit, probs = three
    order, who = ["c", "a", "b"], ["j2", "j0", "j1"]
    other = _named(ann, classes=order, annotators=who)
    T, U = nc.targets.corrected(ann, fit), nc.targets.corrected(other, fit)
    ci, ai = np.array([2, 0, 1]), np.array([2, 0, 1])
    assert U.classes.tolist() == order
    assert U.details["class_index"].tolist() == ci.tolist()
    assert U.details["annotator_index"].tolist() == ai.tolist()
    np.testing.assert_allclose(U.values, T.values[:, ci], rtol=0, atol=1e-12)
    for j in range(3):  # channels permuted on both class axes
        np.testing.assert_array_equal(U.details["confusion"][j],
                                      fit.confusion[ai[j]][np.ix_(ci, ci)])
    np.testing.assert_allclose(U.details["prevalence"], fit_class_prevalence(fit)[ci],
                               rtol=1e-12)
    for kind in ("top_label", "classwise"):
        assert float(nc.ece(probs[:, ci], U, n_bins=8, kind=kind, interval=None)) == \
            pytest.approx(float(nc.ece(probs, T, n_bins=8, kind=kind, interval=None)),
                          abs=1e-13)
    # the posterior target follows the annotations' class order too
    P, Q = nc.targets.posterior(ann, fit), nc.targets.posterior(other, fit)
    assert Q.classes.tolist() == order
    np.testing.assert_allclose(Q.values, P.values[:, ci], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fit.predict(other), fit.predict(ann), rtol=0, atol=1e-12)


def test_a_subset_of_the_fit_annotators_uses_their_channels(three):
    ann, fit, _ = three
    sub = _named(ann, keep=["j2", "j0"])
    U = nc.targets.corrected(sub, fit, weights="equal")
    assert U.details["annotator_index"].tolist() == [2, 0]
    np.testing.assert_array_equal(U.details["confusion"], fit.confusion[[2, 0]])
    # the same as the channels given by hand
    hand = nc.targets.corrected(sub, confusion=fit.confusion[[2, 0]], weights="equal")
    np.testing.assert_allclose(U.values, hand.values, rtol=0, atol=1e-12)
    iv = nc.targets.corrected(sub, fit)
    hand_iv = nc.targets.corrected(sub, confusion=fit.confusion[[2, 0]],
                                   prevalence=fit_class_prevalence(fit))
    np.testing.assert_allclose(iv.values, hand_iv.values, rtol=0, atol=1e-12)


def test_unseen_annotators_and_other_classes_are_refused(three):
    ann, fit, _ = three
    item = np.append(ann.item_index, 0)
    who = np.append(WHO[ann.annotator_index], "zed")
    lab = np.append(CLASSES[ann.label_index], "a")
    unseen = nc.Annotations.from_arrays(item, who, lab, classes=list(CLASSES))
    for build in (nc.targets.corrected, nc.targets.posterior):
        with pytest.raises(ValueError, match=r"has not seen: \['zed'\]"):
            build(unseen, fit)
    wider = nc.Annotations.from_arrays(ann.item_index, WHO[ann.annotator_index],
                                       CLASSES[ann.label_index], classes=["a", "b", "c", "d"])
    renamed = nc.Annotations.from_arrays(ann.item_index, WHO[ann.annotator_index],
                                         np.array(["a", "b", "x"])[ann.label_index])
    for bad in (wider, renamed):
        with pytest.raises(ValueError, match="but the fit has classes"):
            nc.targets.corrected(bad, fit)
        with pytest.raises(ValueError, match="but the fit has classes"):
            nc.targets.posterior(bad, fit)
    # an array has no ids: matched by position, so it needs the fit's annotators
    with pytest.raises(ValueError, match="by position"):
        nc.targets.corrected(ann.to_wide(missing=-1)[:, :2].astype(float), fit)


def test_refit_bootstrap_is_the_same_in_any_annotator_and_class_order(three):
    ann, fit, probs = three
    ci = np.array([2, 0, 1])
    other = _named(ann, classes=["c", "a", "b"], annotators=["j1", "j2", "j0"])
    T, U = nc.targets.corrected(ann, fit), nc.targets.corrected(other, fit)
    with warnings.catch_warnings():
        # three replicates: the interval is not the point (it may miss the estimate)
        warnings.simplefilter("ignore", nc.NumericalWarning)
        a = nc.ece(probs, T, n_bins=8, seed=4,
                   interval=nc.intervals.Refit(method="percentile", n_boot=3))
        b = nc.ece(probs[:, ci], U, n_bins=8, seed=4,
                   interval=nc.intervals.Refit(method="percentile", n_boot=3))
    assert a.details["n_failed"] == 0
    np.testing.assert_allclose(b.replicates, a.replicates, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="subset"):
        nc.ece(probs, nc.targets.corrected(_named(ann, keep=["j0", "j2"]), fit), n_bins=8,
               interval=nc.intervals.Refit(method="percentile", n_boot=3))


def test_refit_bootstrap_finds_items_by_id(toy):
    """Items listed in another order: each item starts from its own fitted posterior, so
    the replicates equal those of the fit's order resampled the same way."""
    t, ann, fit = toy
    n = ann.n_items
    perm = np.random.default_rng(0).permutation(n)
    shuffled = nc.Annotations.from_wide(t.annotations[perm], classes=[0, 1],
                                        annotators=["x", "y", "z"], items=perm)
    U = nc.targets.corrected(shuffled, fit)
    np.testing.assert_allclose(U.values, nc.targets.corrected(ann, fit).values[perm],
                               rtol=0, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)  # two replicates
        est = nc.ece(t.z[perm], U, n_bins=10, seed=3,
                     interval=nc.intervals.Refit(method="percentile", n_boot=2))
        base = nc.ece(t.z, nc.targets.corrected(ann, fit), n_bins=10, seed=3,
                      interval=nc.intervals.Refit(method="percentile", n_boot=2))
    assert est.details["n_failed"] == 0 and np.all(np.isfinite(est.replicates))
    part = nc.Annotations.from_wide(t.annotations[:500], classes=[0, 1],
                                    annotators=["x", "y", "z"])
    with pytest.raises(ValueError, match="not the items its fit was fitted on"):
        nc.ece(t.z[:500], nc.targets.corrected(part, fit), n_bins=10,
               interval=nc.intervals.Refit(method="percentile", n_boot=2))
    # other items are resampled (positions differ), but the replicates stay near the fit's
    assert np.all(np.abs(est.replicates - base.replicates) < 0.05)


@pytest.mark.slow
def test_credible_interval_is_the_same_in_any_annotator_and_class_order(toy):
    t, ann, _ = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: R-hat is not the point
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.NUTS(**TWO_CHAINS), seed=0)
    other = nc.Annotations.from_wide(t.annotations[:, [1, 2, 0]], classes=[1, 0],
                                     annotators=["y", "z", "x"])
    T, U = nc.targets.corrected(ann, fit), nc.targets.corrected(other, fit)
    draws = np.asarray(fit.draws["confusion"])
    np.testing.assert_array_equal(U.details["channel_draws"],
                                  draws[:, [1, 2, 0]][:, :, ::-1][:, :, :, ::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        # positive class: class 1 for T, class 0 (its second column) for U; the binned
        # gaps mirror each other (no score sits on a bin edge)
        a = nc.ece(t.z, T, n_bins=10, interval="credible", seed=1)
        b = nc.ece(1 - t.z, U, n_bins=10, interval="credible", seed=1)
    np.testing.assert_allclose(b.interval, a.interval, rtol=1e-9)
    assert float(b) == pytest.approx(float(a), abs=1e-12)


def test_the_fit_keeps_the_annotations_it_was_fitted_on(three):
    ann, fit, _ = three
    assert fit.annotations is ann and "annotations" not in repr(fit)
    for other in (copy.copy(fit), copy.deepcopy(fit)):
        assert other.annotations is ann
    back = pickle.loads(pickle.dumps(fit))
    np.testing.assert_array_equal(back.annotations.to_wide(missing=-1),
                                  ann.to_wide(missing=-1))
    assert back.annotations.classes.tolist() == list(CLASSES)
    A = np.tile([[0, 1], [1, 1], [0, 0], [1, 0], [1, 1], [0, 0]], (40, 1))
    g = np.repeat([0, 1], A.shape[0] // 2)
    A[g == 1, :] = np.tile([[1, 1], [1, 1], [1, 0], [0, 1], [1, 1], [0, 0]], (20, 1))
    hw = nc.HuiWalter().fit(A.astype(float), groups=g)
    assert hw.annotations.n_items == A.shape[0]
    np.testing.assert_array_equal(hw.annotations.to_wide(), A)
    grouped = nc.GroupedDawidSkene(3, channels="group").fit(
        ann, groups=np.arange(ann.n_items) % 2, method=nc.engines.EM(n_starts=2))
    assert grouped.annotations.annotators.tolist() == list(grouped.annotators)
