"""Binary recalibration maps fitted to naive, clean and corrected targets."""

import numpy as np
import pytest

import noisycal as nc

A_TOY, B_TOY = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B


def test_temperature_and_platt_recover_the_logistic_curve():
    b = nc.simulate.binary_scores(40_000, slope=0.7, intercept=0.2, seed=1)
    p = nc.calibrators.PlattScaling().fit(probs=b.p, target=b.y)
    assert p.slope_ == pytest.approx(0.7, abs=0.03)
    assert p.intercept_ == pytest.approx(0.2, abs=0.04)
    t = nc.calibrators.TemperatureScaling().fit(probs=b.p, target=b.y)
    assert 1.2 < t.temperature_ < 1.6 and not t.at_bound_
    # calibrated output: small ECE
    out = p.predict_proba(probs=b.p)
    assert float(nc.ece(out, b.y, n_bins=10, interval=None)) < 0.01
    # logits give the same fit as probabilities
    z = np.log(b.p / (1 - b.p))
    p2 = nc.calibrators.PlattScaling().fit(logits=z, target=b.y)
    assert p2.slope_ == pytest.approx(p.slope_, abs=1e-6)


def test_corrected_targets_recover_the_clean_fit_naive_do_not():
    t = nc.simulate.gaussian_toy(100_000, truth="shifted", seed=2)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)
    soft = t.annotations.mean(1)
    clean = nc.calibrators.PlattScaling().fit(probs=t.z, target=t.y)
    corr = nc.calibrators.PlattScaling().fit(probs=t.z, target=U)
    naive = nc.calibrators.PlattScaling().fit(probs=t.z, target=np.column_stack([1 - soft,
                                                                                  soft]))
    # shifted truth: m(z) = sigmoid(0.65 logit z - 0.3)
    assert clean.slope_ == pytest.approx(0.65, abs=0.03)
    assert corr.slope_ == pytest.approx(0.65, abs=0.05)
    assert corr.intercept_ == pytest.approx(-0.3, abs=0.05)
    assert abs(naive.slope_ - 0.65) > 0.1  # the naive target shrinks the slope
    # the corrected objective is finite although U leaves [0, 1]
    assert U.values[:, 1].min() < 0 and np.isfinite(corr.objective_)


def test_projected_histogram_by_hand_and_its_bound():
    z = np.array([0.05, 0.07, 0.55, 0.58, 0.95])
    y = np.array([-0.2, 0.0, 0.9, 1.5, 1.2])  # corrected targets may leave [0, 1]
    h = nc.calibrators.HistogramBinning(n_bins=10).fit(probs=z, target=np.column_stack([1 - y,
                                                                                         y]))
    # bin 0: mean -0.1 -> 0; bin 5: mean 1.2 -> 1; bin 9: 1.2 -> 1; empty: clip(mean 0.68)
    np.testing.assert_allclose(h.values_[[0, 5, 9]], [0.0, 1.0, 1.0])
    np.testing.assert_allclose(h.values_[[1, 2, 3, 4, 6, 7, 8]], 0.68)
    np.testing.assert_allclose(h.predict_proba(probs=np.array([0.0, 0.56, 1.0, 0.3])),
                               [0.0, 1.0, 1.0, 0.68])
    t = nc.simulate.gaussian_toy(10_000, truth="nonlinear", seed=3)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY, weights="equal")
    hb = nc.calibrators.HistogramBinning().fit(probs=t.z, target=U)
    B = 1 / 0.76
    expected = (B + 1) * np.sqrt(2 * (10 * np.log(2) + np.log(4 / 0.1)) / 10_000)
    assert hb.bound(U, level=0.9) == pytest.approx(expected, rel=1e-12)
    # the recalibrated scores are close to calibrated against the clean labels
    out = hb.predict_proba(probs=t.z)
    assert float(nc.ece(out, t.y, n_bins=10, interval=None)) < hb.bound(U, level=0.9)


def test_calibrator_bad_input_and_params():
    cal = nc.calibrators.TemperatureScaling()
    with pytest.raises(ValueError, match="not fitted"):
        cal.predict_proba(probs=np.array([0.5]))
    with pytest.raises(ValueError, match="exactly one"):
        cal.fit(probs=np.array([0.5]), logits=np.array([0.0]), target=np.array([1]))
    with pytest.raises(ValueError, match="probs"):
        cal.fit(probs=np.array([1.5]), target=np.array([1]))
    with pytest.raises(ValueError, match="bounds"):
        nc.calibrators.TemperatureScaling(bounds=(2.0, 1.0)).fit(
            probs=np.array([0.2, 0.7]), target=np.array([0, 1]))
    assert cal.get_params() == {"eps": 1e-6, "bounds": (0.05, 20.0)}
    with pytest.raises(ValueError, match="unknown parameter"):
        cal.set_params(temperature=2.0)
    with pytest.raises(ValueError, match="corrected"):
        h = nc.calibrators.HistogramBinning().fit(probs=np.array([0.2, 0.7]),
                                                  target=np.array([0, 1]))
        h.bound(np.array([0, 1]))
