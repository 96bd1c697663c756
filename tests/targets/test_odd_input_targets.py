"""DataFrames given to the target constructors: columns matched to the classes by label,
the index to the item ids, as the metrics do for prediction DataFrames.

Before this file a DataFrame target was read by position: its column labels and index
were dropped, so a DataFrame with its columns in another order than ``classes=`` gave a
target whose columns meant other classes, silently.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import noisycal as nc

_V = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]])
_DF = pd.DataFrame(_V, columns=["a", "b", "c"], index=["i1", "i2"])


def test_from_matrix_reads_classes_and_items_off_a_dataframe():
    t = nc.targets.from_matrix(_DF)
    assert t.classes.tolist() == ["a", "b", "c"] and t.items.tolist() == ["i1", "i2"]
    np.testing.assert_array_equal(t.values, _V)


def test_from_matrix_matches_columns_to_classes_and_rows_to_items_by_label():
    t = nc.targets.from_matrix(_DF[["c", "a", "b"]].iloc[::-1], classes=["a", "b", "c"],
                               items=["i1", "i2"])
    np.testing.assert_array_equal(t.values, _V)  # by position it was [[.3, .1, .6], ...]
    assert t.classes.tolist() == ["a", "b", "c"] and t.items.tolist() == ["i1", "i2"]
    t = nc.targets.from_matrix(_DF, classes=["b", "c", "a"], items=["i2", "i1"])
    np.testing.assert_array_equal(t.values, [[0.6, 0.3, 0.1], [0.2, 0.1, 0.7]])


def test_an_unlabelled_axis_keeps_its_position():
    plain = pd.DataFrame(_V)  # RangeIndex columns and index
    t = nc.targets.from_matrix(plain, classes=["x", "y", "z"], items=["u", "v"])
    np.testing.assert_array_equal(t.values, _V)
    assert t.items.tolist() == ["u", "v"]
    assert nc.targets.from_matrix(plain).classes is None
    assert nc.targets.from_matrix(plain).items is None


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"classes": ["a", "b", "d"]}, r"^values: the DataFrame's column labels \['a', 'b', "
                                   r"'c'\] are not the classes \['a', 'b', 'd'\]"),
    ({"classes": ["a", "b"]}, r"^values: the DataFrame's column labels"),
    ({"items": ["i1", "i9"]}, r"^values: the DataFrame's index does not hold the items "
                              r"\(item 'i9' is not in it\)"),
    ({"items": ["i1"]}, r"^items must be a 1-D array with one id per row \(2\)"),
])
def test_a_dataframe_that_does_not_match_is_refused_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nc.targets.from_matrix(_DF, **kwargs)


def test_a_repeated_index_is_refused():
    with pytest.raises(ValueError, match=r"^values \(its index\) must not repeat an id; "
                                         r"'i1'"):
        nc.targets.from_matrix(_DF.set_axis(["i1", "i1"]))


@pytest.mark.parametrize("arg", ["counts", "distribution"])
def test_soft_from_a_dataframe_carries_its_classes_and_items(arg):
    df = _DF * 4 if arg == "counts" else _DF
    t = nc.targets.soft(**{arg: df})
    np.testing.assert_allclose(t.values, _V, rtol=0, atol=1e-15)
    assert t.classes.tolist() == ["a", "b", "c"] and t.items.tolist() == ["i1", "i2"]
    with pytest.raises(ValueError, match=rf"^{arg} \(its index\) must not repeat"):
        nc.targets.soft(**{arg: df.set_axis(["i1", "i1"])})


def test_the_items_of_a_dataframe_target_are_checked_by_the_metrics():
    # hand-computed: confidences 0.6 (class a, target row a: right) and 0.5 (class b,
    # target row b: right) in bins of 10: ECE = (0.4 + 0.5) / 2 = 0.45
    probs = pd.DataFrame([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], columns=["a", "b", "c"],
                         index=["i1", "i2"])
    t = nc.targets.from_matrix(pd.DataFrame(np.eye(3)[[0, 1]], columns=["a", "b", "c"],
                                            index=["i1", "i2"]))
    assert float(nc.ece(probs, t, n_bins=10, interval=None)) == pytest.approx(0.45,
                                                                              abs=1e-15)
    with pytest.raises(ValueError, match="items"):
        nc.ece(probs.iloc[::-1], t, n_bins=10, interval=None)


def test_a_raw_dataframe_target_has_its_columns_matched_to_the_classes():
    probs = pd.DataFrame([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], columns=["a", "b", "c"])
    target = pd.DataFrame(np.eye(3)[[0, 1]], columns=["a", "b", "c"])
    ref = float(nc.ece(probs, target, classes=["a", "b", "c"], n_bins=10, interval=None))
    assert ref == pytest.approx(0.45, abs=1e-15)
    # by position the shuffled target says class c, then a: (0.6 + 0.5) / 2 = 0.55
    shuffled = target[["c", "a", "b"]]
    assert float(nc.ece(probs, shuffled.to_numpy(), classes=["a", "b", "c"], n_bins=10,
                        interval=None)) == pytest.approx(0.55, abs=1e-15)
    assert float(nc.ece(probs, shuffled, classes=["a", "b", "c"], n_bins=10,
                        interval=None)) == pytest.approx(0.45, abs=1e-15)
    with pytest.raises(ValueError, match=r"^target: the DataFrame's column labels"):
        nc.ece(probs, target.set_axis(["a", "b", "z"], axis=1), classes=["a", "b", "c"],
               n_bins=10, interval=None)
