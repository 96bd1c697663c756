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
        nc.targets.soft(probs=np.array([[0.5, 0.6]]))
    with pytest.raises(ValueError, match="kind"):
        nc.Target(np.eye(2), "guess")
