"""Target constructors."""

import numpy as np
import pytest

import noisycal as nc


def test_hard_soft_voted():
    h = nc.targets.hard([0, 2, 1], n_classes=3)
    np.testing.assert_array_equal(np.asarray(h), np.eye(3)[[0, 2, 1]])
    assert h.kind == "hard" and h.shape == (3, 3) and len(h) == 3 and h.is_probability
    ann = nc.Annotations.from_wide(np.array([[0, 0, 1], [1, 1, 1], [0, 1, -1]]), missing=-1)
    s = nc.targets.soft(ann)
    np.testing.assert_allclose(s.values, [[2 / 3, 1 / 3], [0, 1], [0.5, 0.5]])
    v = nc.targets.voted(ann)
    np.testing.assert_array_equal(v.values, [[1, 0], [0, 1], [1, 0]])  # tie -> lowest
    assert v.details["n_ties"] == 1 and v.details["tie"] == "lowest"
    with pytest.raises(ValueError, match="tie"):
        nc.targets.voted(ann, tie="raise")
    c = nc.targets.soft(counts=ann.counts())
    np.testing.assert_allclose(c.values, s.values)


def test_targets_are_read_only_and_validated():
    t = nc.targets.from_matrix(np.array([[1.2, -0.2], [0.5, 0.5]]), kind="corrected")
    assert not t.is_probability
    with pytest.raises(ValueError):
        t.values[0, 0] = 3.0
    with pytest.raises(ValueError, match="n_classes"):
        nc.targets.hard([0, 1], n_classes=1)
    with pytest.raises(ValueError, match="labels"):
        nc.targets.hard([0, 3], n_classes=3)
    with pytest.raises(ValueError, match="exactly one"):
        nc.targets.soft()
    with pytest.raises(ValueError, match="counts"):
        nc.targets.soft(counts=np.array([[1, -1], [1, 1]]))
    with pytest.raises(ValueError, match="no votes"):
        nc.targets.soft(counts=np.array([[0, 0], [1, 1]]))
    with pytest.raises(ValueError, match="sum to 1"):
        nc.targets.soft(distribution=np.array([[0.5, 0.6]]))
    with pytest.raises(ValueError, match="kind"):
        nc.Target(np.eye(2), "guess")


def test_posterior_target_from_a_fit():
    """The posterior target is the fit's item posteriors (EM) or their mean over draws
    (NUTS); new items go through predict; a non-identified fit is refused."""
    ds = nc.datasets.load_dawid_skene_1979()
    fit = nc.DawidSkene(4).fit(ds)
    T = nc.targets.posterior(None, fit)
    assert T.kind == "posterior" and T.is_probability
    np.testing.assert_array_equal(T.values, fit.item_posterior)
    np.testing.assert_array_equal(T.classes, fit.classes)
    assert T.details["method"] == "em" and T.details["status"] == "ok"
    new = nc.targets.posterior(ds, fit)
    np.testing.assert_allclose(new.values, fit.item_posterior, atol=1e-10)
    # an ECE against it is the same ECE on that matrix
    probs = np.full((ds.n_items, 4), 0.25)
    assert float(nc.ece(probs, T, interval=None)) == pytest.approx(
        float(nc.ece(probs, T.values, interval=None)), abs=1e-15)
    one = nc.Annotations.from_arrays(np.arange(10), np.zeros(10), np.arange(10) % 2)
    with pytest.warns(nc.IdentifiabilityWarning):
        bad = nc.DawidSkene().fit(one)
    with pytest.raises(ValueError, match="not finite"):
        nc.targets.posterior(None, bad)
    with pytest.raises(ValueError, match="fitted annotator model"):
        nc.targets.posterior(None, np.ones((3, 2)))
