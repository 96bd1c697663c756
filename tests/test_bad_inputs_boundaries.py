"""Input boundaries found by the property layer (tests/properties/): 0-d and ragged
predictions, DataFrame columns labelled 0..K-1 out of order, calibrator targets outside
[0, 1], empty target sources, cluster= of the wrong length, mixed-type classes= and pandas
nullable predictions. Each is refused naming its argument, or read as its plain form."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import noisycal as nc

METRICS = [nc.ece, nc.mce, nc.cmce, nc.smooth_ece, nc.brier, nc.nll, nc.calibration_slope,
           nc.true_label_ece]
P4 = np.array([[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.5, .3, .2]])
Y4 = np.array([0, 1, 2, 2])


def _binary(n: int = 30) -> tuple[np.ndarray, np.ndarray]:
    p = np.linspace(0.1, 0.9, n)
    return np.c_[1 - p, p], np.arange(n) % 2


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.__name__)
def test_0d_and_ragged_probs_are_refused_naming_probs(metric):
    with pytest.raises(ValueError, match=r"^probs must have 1 or 2 dimensions, got shape \(\)"):
        metric(np.float64(0.5), [1, 1], interval=None)
    with pytest.raises(ValueError, match=r"^probs must be a rectangular numeric array "
                                         r"\(every row of the same length\)"):
        metric([[.5, .5], [1.0]], [0, 1], interval=None)


def test_frame_columns_labelled_out_of_order_are_refused_without_classes():
    df = pd.DataFrame(P4[:, [2, 0, 1]], columns=[2, 0, 1])
    with pytest.raises(ValueError, match=r"^probs is a DataFrame whose columns are labelled "
                                         r"\[2, 0, 1\]: the class indices 0..2 out of order"):
        nc.ece(df, Y4, n_bins=5, interval=None)
    with pytest.raises(ValueError, match="^logits is a DataFrame whose columns"):
        nc.ece(logits=np.log(df), target=Y4, n_bins=5, interval=None)
    # with classes= the columns are matched by label: the value of the ordered matrix
    assert float(nc.ece(P4, Y4, n_bins=5, interval=None)) == pytest.approx(0.4, abs=1e-12)
    assert float(nc.ece(df, Y4, n_bins=5, classes=[2, 0, 1], interval=None)) == \
        pytest.approx(0.4, abs=1e-12)
    # columns 0..K-1 in order, and non-integer column names, are read by position
    assert float(nc.ece(pd.DataFrame(P4), Y4, n_bins=5, interval=None)) == \
        pytest.approx(0.4, abs=1e-12)
    named = pd.DataFrame(P4, columns=["c", "a", "b"])
    assert float(nc.ece(named, Y4, n_bins=5, interval=None)) == pytest.approx(0.4, abs=1e-12)


@pytest.mark.parametrize("name", ["PlattScaling", "TemperatureScaling", "BetaCalibration",
                                  "IsotonicCalibration", "HistogramBinning"])
def test_binary_calibrators_refuse_a_float_target_outside_the_unit_interval(name):
    cls = getattr(nc.calibrators, name)
    q = np.array([.2, .7, .4, .9, .3, .6])
    for bad in (2.0, -1.0, 1.5):
        t = np.array([0, 1, 0, 1, 0, bad])
        with pytest.raises(ValueError, match=r"^target must lie in \[0, 1\]"):
            cls().fit(probs=q, target=t)
        with pytest.raises(ValueError, match=r"^target must lie in \[0, 1\]"):
            cls().fit(probs=q, target=np.c_[1 - t, t])  # the same as an (n, 2) matrix
        with pytest.raises(ValueError, match=r"^target must lie in "):
            nc.ece(q, t, interval=None)  # (integral floats are read there as labels)
        with pytest.raises(ValueError, match=r"^target must lie in \[0, 1\]"):
            nc.ece(q, np.c_[1 - t, t], interval=None)  # the metrics' check, same message


def test_multiclass_calibrators_refuse_a_matrix_outside_the_unit_interval():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), 40)
    T = np.eye(3)[rng.integers(0, 3, 40)]
    T[0] = [1.5, -0.5, 0.0]  # sums to 1, leaves [0, 1]
    with pytest.raises(ValueError, match=r"^target must lie in \[0, 1\], got values in "
                                         r"\[-0.5, 1.5\]"):
        nc.calibrators.TemperatureScaling().fit(probs=p, target=T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nc.calibrators.TemperatureScaling().fit(
            probs=p, target=nc.targets.from_matrix(T, kind="corrected"))
    assert fit.loss_ == "brier"  # declared corrected: the affine Brier loss


def test_empty_target_sources_name_the_argument():
    with pytest.raises(ValueError, match=r"^labels must contain at least one label, got "
                                         r"shape \(0,\)"):
        nc.targets.hard(np.array([], int), n_classes=2)
    with pytest.raises(ValueError, match=r"^counts must have at least 1 row and 2 columns, "
                                         r"got \(0, 2\)"):
        nc.targets.soft(counts=np.zeros((0, 2), int))
    with pytest.raises(ValueError, match=r"^distribution must have at least 1 row"):
        nc.targets.soft(distribution=np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"^values must have at least 1 row"):
        nc.targets.from_matrix(np.zeros((0, 2)))


@pytest.mark.parametrize("metric", [nc.brier, nc.nll, nc.calibration_slope],
                         ids=lambda m: m.__name__)
def test_cluster_of_the_wrong_length_is_refused_without_an_interval(metric):
    P, y = _binary()
    with pytest.raises(ValueError, match=r"^cluster must be a 1-D array of length 30"):
        metric(P, y, interval=None, cluster=np.arange(29))
    ok = metric(P, y, interval=None, cluster=np.arange(30) // 3)
    assert ok.status == "ok" and float(ok) == float(metric(P, y, interval=None))


def test_mixed_type_classes_are_refused_naming_classes():
    P, y = _binary()
    labels = np.array(["a", 1], dtype=object)[y]
    msg = r"^classes mixes strings and other labels, got \['a', 1\]"
    with pytest.raises(ValueError, match=msg):
        nc.ece(P, labels, classes=["a", 1], interval=None)
    with pytest.raises(ValueError, match=msg):
        nc.ece(pd.DataFrame(P, columns=["a", 1]), labels, classes=["a", 1], interval=None)
    with pytest.raises(ValueError, match=msg):
        nc.targets.hard(labels, classes=np.array(["a", 1], dtype=object))
    # one type: read as before
    assert float(nc.ece(P, np.array(["a", "b"])[y], classes=["a", "b"], interval=None)) == \
        float(nc.ece(P, y, interval=None))


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.__name__)
def test_nullable_float_predictions_are_read_and_missing_values_refused(metric):
    P, y = _binary()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = metric(pd.DataFrame(P).astype("Float64"), y, interval=None)
        want = metric(P, y, interval=None)
    assert got.status == want.status
    np.testing.assert_equal(float(got), float(want))  # NaN (mce's status) equal too
    frame = pd.DataFrame(P).astype("Float64")
    frame.iloc[3, 1] = pd.NA
    with pytest.raises(ValueError, match=r"^probs contains 1 missing value\(s\) \(pd.NA\)"):
        metric(frame, y, interval=None)
