"""Weighted isotonic regression and IsotonicCalibration (binary and top-label IR-Soft).

References: hand-computed PAV cases; scikit-learn's ``IsotonicRegression(out_of_bounds=
"clip")`` with ``sample_weight`` (the test extra, skipped when absent) and scipy's
``optimize.isotonic_regression`` as peers; IR-Soft of "Confidence Calibration under
Ambiguous Ground Truth" (Section 6) and its one-hot reduction.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy.special import softmax

import noisycal as nc
from noisycal.calibrators.isotonic import (
    isotonic_predict,
    isotonic_regression,
    pool_adjacent_violators,
)

C = nc.calibrators


def _pav(y, w=None):
    y = np.asarray(y, float)
    return pool_adjacent_violators(y, np.ones_like(y) if w is None else np.asarray(w, float))


# ------------------------------------------------------------------ PAV by hand
@pytest.mark.parametrize(("y", "w", "expected"), [
    ([1, 3, 2, 4], None, [1, 2.5, 2.5, 4]),
    ([3, 1], [1, 3], [1.5, 1.5]),                     # (3 * 1 + 1 * 3) / 4
    ([4, 3, 2, 1], None, [2.5, 2.5, 2.5, 2.5]),       # one decreasing run
    ([1, 2, 3, 0], None, [1, 5 / 3, 5 / 3, 5 / 3]),   # the pooled block absorbs leftwards
    ([0, 1, 0, 1], None, [0, 0.5, 0.5, 1]),
    ([0, 1, 0, 1], [1, 1, 3, 1], [0, 0.25, 0.25, 1]),
    ([2.0], None, [2.0]),
    ([1, 1, 1], [1, 2, 3], [1, 1, 1]),
])
def test_pav_hand_cases(y, w, expected):
    np.testing.assert_allclose(_pav(y, w), expected, rtol=0, atol=1e-15)


def test_ties_are_merged_first_with_summed_weights():
    # x = 0.2 twice: mean (1 * 1 + 0 * 1) / 2 = 0.5 with weight 2, then pooled with
    # (0.5, 0, weight 2): (0.5 * 2 + 0 * 2) / 4 = 0.25
    f = isotonic_regression([0.2, 0.2, 0.5], [1, 0, 0], [1, 1, 2])
    assert f.x_unique.tolist() == [0.2, 0.5]
    assert f.y_unique.tolist() == [0.25, 0.25]
    # the tie's weights decide its value: (3 * 1 + 1 * 0) / 4 = 0.75 < 1, no pooling
    f = isotonic_regression([0.5, 0.2, 0.2], [1, 1, 0], [1, 3, 1])
    assert f.y_unique.tolist() == [0.75, 1.0]


def test_knots_and_prediction_rules_by_hand():
    f = isotonic_regression([0.1, 0.3, 0.5, 0.7, 0.9], [0, 1, 0, 1, 1])
    # the flat run [0.3, 0.5] keeps both ends; the run [0.7, 0.9] at 1 keeps both ends
    assert f.x_thresholds.tolist() == [0.1, 0.3, 0.5, 0.7, 0.9]
    x = np.array([-1.0, 0.1, 0.2, 0.4, 0.6, 0.8, 2.0])
    np.testing.assert_allclose(isotonic_predict(f.x_thresholds, f.y_thresholds, x),
                               [0, 0, 0.25, 0.5, 0.75, 1, 1], rtol=0, atol=1e-15)
    assert isotonic_predict(f.x_thresholds, f.y_thresholds, x, "step").tolist() == \
        [0, 0, 0, 0.5, 0.5, 1, 1]
    # interior points of a flat run are dropped (same function)
    g = isotonic_regression([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    assert g.x_thresholds.tolist() == [0.1, 0.2, 0.3, 0.4]
    h = isotonic_regression([0.1, 0.2, 0.3, 0.4, 0.5], [1, 1, 0, 1, 1])
    assert h.x_thresholds.tolist() == [0.1, 0.3, 0.4, 0.5]


def test_pav_long_adversarial_run_uses_the_stack_finish():
    # an increasing run followed by a huge drop: every vectorised pass pools one block,
    # so the stack PAV finishes; the answer is the mean of everything from the drop back
    y = np.concatenate([np.linspace(0.0, 1.0, 2000), [-1e4]])
    out = _pav(y)
    assert np.all(np.diff(out) >= 0)
    np.testing.assert_allclose(out, np.full(y.size, y.mean()), rtol=1e-12)


def test_pav_matches_scipy_isotonic_regression():
    optimize = pytest.importorskip("scipy.optimize")
    if not hasattr(optimize, "isotonic_regression"):
        pytest.skip("scipy < 1.12 has no isotonic_regression")
    rng = np.random.default_rng(5)
    for n in (1, 2, 17, 500, 5000):
        y = rng.normal(size=n) + np.linspace(0, 2, n)
        w = rng.uniform(0.05, 3.0, n)
        ref = optimize.isotonic_regression(y, weights=w).x
        np.testing.assert_allclose(_pav(y, w), ref, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ scikit-learn peer
def _random_case(rng, n):
    x = np.round(rng.uniform(0, 1, n), int(rng.integers(1, 4)))  # many ties
    y = (rng.random(n) < x).astype(float)
    w = rng.uniform(0.05, 1.0, n)
    return x, y, w


@pytest.mark.parametrize("seed", range(6))
def test_weighted_isotonic_equals_sklearn(seed):
    isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(seed)
    x, y, w = _random_case(rng, int(rng.integers(2, 2000)))
    if seed == 5:
        y = rng.normal(size=x.size)  # real-valued targets too
    ref = isotonic.IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w)
    f = isotonic_regression(x, y, w)
    grid = np.concatenate([x, rng.uniform(-0.5, 1.5, 500), np.linspace(0, 1, 1001)])
    np.testing.assert_allclose(isotonic_predict(f.x_thresholds, f.y_thresholds, grid),
                               ref.predict(grid), rtol=0, atol=1e-12)
    np.testing.assert_allclose(isotonic_predict(f.x_thresholds, f.y_thresholds, ref.X_thresholds_),
                               ref.y_thresholds_, rtol=0, atol=1e-12)
    # the calibrator, binary 0/1 target
    if seed != 5:
        cal = C.IsotonicCalibration().fit(probs=x, target=y.astype(int), sample_weight=w)
        np.testing.assert_allclose(cal.predict_proba(probs=np.clip(grid, 0, 1)),
                                   ref.predict(np.clip(grid, 0, 1)), rtol=0, atol=1e-12)
        assert (cal.X_min_, cal.X_max_) == (ref.X_min_, ref.X_max_)


def test_order_and_weight_scale_invariance():
    rng = np.random.default_rng(3)
    x, y, w = _random_case(rng, 800)
    f = isotonic_regression(x, y, w)
    perm = rng.permutation(x.size)
    g = isotonic_regression(x[perm], y[perm], w[perm])
    assert np.array_equal(f.x_thresholds, g.x_thresholds)
    assert np.array_equal(f.y_thresholds, g.y_thresholds)       # bitwise, ties included
    h = isotonic_regression(x, y, 4.0 * w)                      # power of two: exact
    assert np.array_equal(f.y_thresholds, h.y_thresholds)
    k = isotonic_regression(x, y, 3.7 * w)
    np.testing.assert_allclose(k.y_thresholds, f.y_thresholds, rtol=0, atol=1e-14)
    assert np.all(np.diff(f.y_thresholds) >= 0) and np.all(np.diff(f.x_thresholds) > 0)


# ------------------------------------------------------------------ binary calibrator
def test_binary_calibrator_on_logits_acts_on_the_scale_given():
    rng = np.random.default_rng(4)
    z = rng.normal(0, 2, 300)
    y = (rng.random(300) < 1 / (1 + np.exp(-z))).astype(int)
    cal_z = C.IsotonicCalibration().fit(logits=z, target=y)
    cal_p = C.IsotonicCalibration().fit(probs=1 / (1 + np.exp(-z)), target=y)
    # the fitted values at the fitting scores agree (a monotone change of scale)...
    np.testing.assert_allclose(cal_z.y_thresholds_, cal_p.y_thresholds_, atol=1e-15)
    # ...the linear interpolation between them does not; the step rule does
    zt = rng.normal(0, 2, 200)
    a = cal_z.predict_proba(logits=zt)
    b = cal_p.predict_proba(probs=1 / (1 + np.exp(-zt)))
    assert np.max(np.abs(a - b)) > 1e-4
    assert np.array_equal(a, np.interp(zt, cal_z.X_thresholds_, cal_z.y_thresholds_))
    cal_z.set_params(interpolation="step")
    cal_p.set_params(interpolation="step")
    np.testing.assert_allclose(cal_z.predict_proba(logits=zt),
                               cal_p.predict_proba(probs=1 / (1 + np.exp(-zt))), atol=1e-15)
    with pytest.raises(ValueError, match="fitted on logits="):
        cal_z.predict_proba(probs=np.full(3, 0.5))


def test_corrected_target_is_fitted_by_least_squares_then_clipped():
    isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 1, 400)
    # a noise-corrected target: unbiased for the label, outside [0, 1]
    y = (rng.random(400) < x).astype(float)
    t = (np.where(rng.random(400) < 0.2, 1 - y, y) - 0.2) / 0.6
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        C.IsotonicCalibration().fit(probs=x, target=t)  # not declared corrected: refused
    corrected = nc.targets.from_matrix(np.c_[1 - t, t], kind="corrected")
    cal = C.IsotonicCalibration().fit(probs=x, target=corrected)
    ref = isotonic.IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(x, t)
    np.testing.assert_allclose(cal.predict_proba(probs=x), ref.predict(x), rtol=0, atol=1e-12)
    free = isotonic.IsotonicRegression(out_of_bounds="clip").fit(x, t).predict(x)
    assert cal.n_clipped_ == np.count_nonzero((free < 0) | (free > 1)) > 0
    assert cal.status_ == "ok" and 0.0 <= cal.predict_proba(probs=x).min()
    # the objective is the weighted mean squared error of the clipped fit
    g = cal.predict_proba(probs=x)
    assert cal.objective_ == pytest.approx(np.mean((g - t) ** 2), rel=1e-12)


def test_constant_map_is_reported():
    z = np.linspace(0.1, 0.9, 20)
    with pytest.warns(nc.IdentifiabilityWarning, match="one class"):
        cal = C.IsotonicCalibration().fit(probs=z, target=np.ones(20, int))
    assert cal.status_ == "constant"
    assert np.all(cal.predict_proba(probs=z) == 1.0)
    with pytest.warns(nc.IdentifiabilityWarning, match="never increases"):
        cal = C.IsotonicCalibration().fit(probs=z, target=(z < 0.5).astype(int))
    assert cal.predict_proba(probs=z) == pytest.approx(np.full(20, 0.5))


# ------------------------------------------------------------------ IR-Soft (n, K)
def _mc(seed=0, n=600, K=4):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K)) * 2.5
    P = softmax(z, axis=1)
    pi = rng.dirichlet(np.ones(K) * 0.7, size=n) * 0.5 + 0.5 * softmax(z / 3, axis=1)
    labels = np.array([rng.choice(K, p=row) for row in pi])
    return z, P, pi, labels


def test_ir_soft_is_isotonic_of_top_confidence_on_target_mass():
    isotonic = pytest.importorskip("sklearn.isotonic")
    z, P, pi, _ = _mc()
    cal = C.IsotonicCalibration().fit(probs=P, target=pi)
    top = P.argmax(1)
    conf, mass = P.max(1), pi[np.arange(len(top)), top]
    ref = isotonic.IsotonicRegression(out_of_bounds="clip").fit(conf, mass)
    z2, P2, _, _ = _mc(1)
    Q = cal.predict_proba(probs=P2)
    g = ref.predict(P2.max(1))
    np.testing.assert_allclose(Q[np.arange(len(P2)), P2.argmax(1)], g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cal.predict_confidence(probs=P2), g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(Q.sum(1), 1.0, rtol=0, atol=1e-12)
    # the other classes keep their ratios: q_k = p_k (1 - g) / (1 - p_c)
    k = (P2.argmax(1) + 1) % P2.shape[1]
    rows = np.arange(len(P2))
    np.testing.assert_allclose(Q[rows, k], P2[rows, k] * (1 - g) / (1 - P2.max(1)),
                               rtol=1e-10)
    # logits and probabilities give the same (n, K) map, fitted or predicted either way
    cal_z = C.IsotonicCalibration().fit(logits=z, target=nc.targets.from_matrix(pi,
                                                                               kind="soft"))
    np.testing.assert_allclose(cal_z.predict_proba(logits=z2), Q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cal.predict_proba(logits=z2), Q, rtol=0, atol=1e-12)


def test_ir_soft_with_one_hot_target_is_ir_hard():
    isotonic = pytest.importorskip("sklearn.isotonic")
    z, P, _, labels = _mc(2)
    one_hot = np.eye(P.shape[1])[labels]
    soft = C.IsotonicCalibration().fit(probs=P, target=nc.targets.from_matrix(one_hot,
                                                                             kind="soft"))
    hard = C.IsotonicCalibration().fit(probs=P, target=labels)
    voted = C.IsotonicCalibration().fit(probs=P, target=nc.targets.hard(labels,
                                                                        n_classes=P.shape[1]))
    _, P2, _, _ = _mc(3)
    for other in (hard, voted):
        assert np.array_equal(soft.predict_proba(probs=P2), other.predict_proba(probs=P2))
    # IR-Hard: isotonic of the top confidence on the correctness indicator
    ref = isotonic.IsotonicRegression(out_of_bounds="clip").fit(
        P.max(1), (P.argmax(1) == labels).astype(float))
    np.testing.assert_allclose(hard.predict_confidence(probs=P2), ref.predict(P2.max(1)),
                               rtol=0, atol=1e-12)


def test_ir_soft_lowers_the_soft_label_ece():
    z, P, pi, _ = _mc(4, n=3000)
    cal = C.IsotonicCalibration().fit(probs=P[:1500], target=pi[:1500])
    before = float(nc.ece(P[1500:], pi[1500:], n_bins=15, interval=None))
    after = float(nc.ece(cal.predict_proba(probs=P[1500:]), pi[1500:], n_bins=15,
                         interval=None))
    assert after < 0.5 * before


# ------------------------------------------------------------------ estimator protocol
def test_pickle_and_refit_are_exact():
    z, P, pi, _ = _mc(5, n=200)
    cal = C.IsotonicCalibration(interpolation="step").fit(probs=P, target=pi)
    again = pickle.loads(pickle.dumps(cal))
    assert np.array_equal(again.predict_proba(probs=P), cal.predict_proba(probs=P))
    ref = cal.predict_proba(probs=P)
    cal.fit(probs=P, target=pi)
    assert np.array_equal(cal.predict_proba(probs=P), ref)


@pytest.mark.parametrize("est", [
    C.IsotonicCalibration(interpolation="step"),
    C.LWCal(weights="posterior", floor=0.1, eps=1e-9, loss_clip=1e-9, interpolation="step"),
    C.GatedLWCal(gate_center=0.25, gate_width=0.16, mad_scale=1.0),
    C.TrimCal(retain=0.8, rule="quantile", calibrator=C.IsotonicCalibration(
        interpolation="step")),
], ids=lambda e: type(e).__name__)
def test_sklearn_estimator_checks(est):
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.utils import estimator_checks as ec

    for name in ("check_estimator_cloneable", "check_estimator_repr",
                 "check_no_attributes_set_in_init", "check_parameters_default_constructible",
                 "check_get_params_invariance", "check_set_params",
                 "check_do_not_raise_errors_in_init_or_set_params"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(ec, name)(type(est).__name__, est)
    copy = clone(est)
    assert repr(copy) == repr(est) and copy is not est


def test_ir_with_a_target_outside_the_simplex_is_clipped_least_squares():
    isotonic = pytest.importorskip("sklearn.isotonic")
    z, P, pi, labels = _mc(6, n=800, K=3)
    rng = np.random.default_rng(6)
    # rows summing to 1 with entries outside [0, 1], like a noise-corrected target
    noise = rng.normal(0, 0.6, size=P.shape)
    T = np.eye(3)[labels] + noise - noise.mean(1, keepdims=True)
    cal = C.IsotonicCalibration().fit(probs=P, target=nc.targets.from_matrix(
        T, kind="corrected"))
    top = P.argmax(1)
    mass = T[np.arange(len(top)), top]
    ref = isotonic.IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
        P.max(1), mass)
    np.testing.assert_allclose(cal.predict_confidence(probs=P), ref.predict(P.max(1)),
                               rtol=0, atol=1e-12)
    free = isotonic.IsotonicRegression(out_of_bounds="clip").fit(P.max(1), mass)
    moved = free.predict(P.max(1))
    assert cal.n_clipped_ == np.count_nonzero((moved < 0) | (moved > 1)) > 0
    Q = cal.predict_proba(probs=P)
    assert Q.min() >= 0 and np.allclose(Q.sum(1), 1.0, atol=1e-12)
