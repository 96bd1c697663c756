"""Adaptive temperature scaling (ATS) in the form of "Confidence Calibration under Ambiguous
Ground Truth" (Appendix L).

Hand-computed features; a seeded simulation where the per-item temperature is known
(labels drawn from softmax(z / T_i) with T_i of the ATS form) is recovered; with one
true temperature ATS stays at temperature scaling; the fit never does worse than its
temperature-scaling start; one-hot soft targets are the hard fit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax, softplus

import noisycal as nc
from noisycal.calibrators.scaling import ats_features

C = nc.calibrators


def _simulate(n, K, w, b, seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, K)) * 3
    phi = ats_features(Z)
    Ti = softplus((phi - phi.mean(0)) / phi.std(0) @ np.asarray(w) + b) + 0.1
    y = (softmax(Z / Ti[:, None], axis=1).cumsum(1) > rng.random((n, 1))).argmax(1)
    return Z, y, Ti


def test_features_by_hand():
    z = np.array([[2.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    e = np.exp(2.0)
    p = np.array([e, 1.0, 1.0]) / (e + 2.0)
    H = -np.sum(p * np.log(p))
    np.testing.assert_allclose(ats_features(z), [[2.0, H / np.log(3), p[0] - p[1], p[0]],
                                                 [1.0, 1.0, 0.0, 1 / 3]], atol=1e-15)


def test_recovers_a_known_per_item_temperature():
    Z, y, Ti = _simulate(20_000, 5, [0.0, 0.8, 0.0, -0.5], 0.5, seed=0)
    assert Ti.min() < 0.4 and Ti.max() > 3.5  # temperatures from 0.3 to 4
    ats = C.AdaptiveTemperatureScaling(reg_lambda=0.0).fit(logits=Z, target=y)
    assert ats.status_ == "ok"
    T_hat = ats.predict_temperature(logits=Z)
    # measured: mean |error| 0.021, max 0.094, correlation 0.9998
    assert np.mean(np.abs(T_hat - Ti)) < 0.04
    assert np.corrcoef(T_hat, Ti)[0, 1] > 0.999
    assert ats.intercept_ == pytest.approx(0.5, abs=0.1)
    assert ats.coef_[1] == pytest.approx(0.8, abs=0.2)  # the entropy weight
    np.testing.assert_allclose(ats.predict_proba(logits=Z), softmax(Z / T_hat[:, None], axis=1),
                               atol=1e-12)
    # held out, ATS beats one temperature on the NLL
    Zt, yt, _ = _simulate(20_000, 5, [0.0, 0.8, 0.0, -0.5], 0.5, seed=1)
    ts = C.TemperatureScaling().fit(logits=Z, target=y)

    def nll(P):
        return -np.mean(np.log(P[np.arange(yt.size), yt]))

    assert nll(ats.predict_proba(logits=Zt)) < nll(ts.predict_proba(logits=Zt)) - 0.02


def test_one_true_temperature_stays_at_temperature_scaling():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(10_000, 4)) * 3
    y = (softmax(Z / 2.0, axis=1).cumsum(1) > rng.random((10_000, 1))).argmax(1)
    ts = C.TemperatureScaling().fit(logits=Z, target=y)
    ats = C.AdaptiveTemperatureScaling().fit(logits=Z, target=y)
    # the temperature-scaling start finds the true temperature 2 (2.033 measured; 0.1
    # as for the mean temperature below, a few sampling sd at n = 10000)
    assert abs(ats.ts_temperature_ - 2.0) < 0.1
    T_hat = ats.predict_temperature(logits=Z)
    assert np.std(T_hat) < 0.1 and abs(ats.mean_temperature_ - 2.0) < 0.1
    # the start is the TS fit with w = 0 (no penalty), and L-BFGS-B never goes uphill
    assert ats.objective_ <= ts.objective_ + 1e-12


def test_one_hot_soft_target_is_the_hard_fit():
    Z, y, _ = _simulate(3000, 4, [0.0, 0.5, 0.0, 0.0], 0.3, seed=3)
    hard = C.AdaptiveTemperatureScaling().fit(logits=Z, target=y)
    soft = C.AdaptiveTemperatureScaling().fit(logits=Z, target=np.eye(4)[y])
    np.testing.assert_array_equal(soft.coef_, hard.coef_)
    assert soft.intercept_ == hard.intercept_


def test_probs_input_and_input_kind_at_prediction():
    Z, y, _ = _simulate(2000, 3, [0.0, 0.5, 0.0, 0.0], 0.3, seed=4)
    P = softmax(Z, axis=1)
    ats = C.AdaptiveTemperatureScaling().fit(probs=P, target=y)
    assert ats.status_ == "ok" and ats.input_ == "probs"
    assert ats.predict_proba(probs=P).shape == (2000, 3)
    with pytest.raises(ValueError, match=r"map was fitted on \(probs="):
        ats.predict_temperature(logits=Z)
    with pytest.raises(ValueError, match="pass probs="):
        ats.predict_proba(logits=Z)
