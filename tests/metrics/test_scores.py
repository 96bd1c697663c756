"""Brier, NLL, calibration slope and intercept."""

import numpy as np
import pytest

import noisycal as nc

P = np.array([[0.8, 0.2], [0.4, 0.6], [0.5, 0.5]])
Y = np.array([0, 0, 1])


def test_brier_hand_cases():
    # (.04 + .04) + (.36 + .36) + (.25 + .25) = 1.3 over 3
    assert float(nc.brier(P, Y, interval=None)) == pytest.approx(1.3 / 3, abs=1e-12)
    # binary 1-D input: (.2)^2 + (.6)^2 + (.5)^2 = .65 over 3
    assert float(nc.brier(P[:, 1], Y, interval=None)) == pytest.approx(0.65 / 3, abs=1e-12)
    # soft target [.5,.5] on every row: (.09+.09) + (.01+.01) + 0 = .2 over 3
    S = np.full((3, 2), 0.5)
    assert float(nc.brier(P, S, interval=None)) == pytest.approx(0.2 / 3, abs=1e-12)
    # expected variant adds 1 - ||t||^2 = .5 per item
    assert float(nc.brier(P, S, variant="expected", interval=None)) == pytest.approx(
        0.2 / 3 + 0.5, abs=1e-12)
    # expected Brier equals the average Brier against labels drawn from the target
    rng = np.random.default_rng(0)
    T = rng.dirichlet(np.ones(3), size=50)
    Q = rng.dirichlet(np.ones(3), size=50)
    exact = np.mean([sum(T[i, k] * np.sum((Q[i] - np.eye(3)[k]) ** 2) for k in range(3))
                     for i in range(50)])
    assert float(nc.brier(Q, T, variant="expected", interval=None)) == pytest.approx(
        exact, rel=1e-12)


def test_brier_expected_equals_plain_for_one_hot():
    assert float(nc.brier(P, Y, variant="expected", interval=None)) == pytest.approx(
        float(nc.brier(P, Y, interval=None)), abs=1e-12)


def test_nll_hand_cases():
    # -(log .8 + log .4 + log .5) / 3
    expect = -(np.log(0.8) + np.log(0.4) + np.log(0.5)) / 3
    assert float(nc.nll(P, Y, interval=None)) == pytest.approx(expect, rel=1e-12)
    # soft: cross-entropy, >= mean entropy of the target, equal when p = target
    T = np.array([[0.7, 0.3], [0.5, 0.5], [0.1, 0.9]])
    H = -np.sum(T * np.log(T), axis=1).mean()
    assert float(nc.nll(T, T, interval=None)) == pytest.approx(H, rel=1e-12)
    assert float(nc.nll(P, T, interval=None)) > H
    # zero target entries contribute nothing even where p = 0
    assert float(nc.nll(np.array([[1.0, 0.0]]), np.array([0]), interval=None)) == 0.0


def test_nll_from_logits_is_stable():
    z = np.array([[800.0, 0.0], [0.0, 1.0]])
    est = nc.nll(logits=z, target=np.array([1, 1]), interval=None)
    assert float(est) == pytest.approx((800.0 + np.log1p(np.exp(-1.0))) / 2, rel=1e-12)


def test_nll_infinite_reports_status():
    est = nc.nll(np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([1, 0]))
    assert est.status == "nonfinite" and np.isinf(float(est)) and est.interval is None
    assert "infinite" in est.message


def test_score_intervals():
    sim = nc.simulate.classifier(2000, 3, seed=0)
    w = nc.brier(sim.probs, sim.labels, interval="wald")
    b = nc.brier(sim.probs, sim.labels, interval=nc.intervals.Bootstrap(n_boot=1000), seed=1)
    assert w.kind == "wald" and b.kind == "bootstrap"
    assert float(w) == float(b)
    assert (b.high - b.low) == pytest.approx(w.high - w.low, rel=0.15)
    with pytest.raises(ValueError, match="interval"):
        nc.nll(sim.probs, sim.labels, interval="bound")
    with pytest.raises(ValueError, match="cluster"):
        nc.nll(sim.probs, sim.labels, interval="wald", cluster=np.arange(2000))


def test_calibration_slope_recovers_truth():
    b = nc.simulate.binary_scores(20000, intercept=0.3, slope=0.7, seed=1)
    s = nc.calibration_slope(b.p, b.y, level=0.95)
    assert float(s) == pytest.approx(0.7, abs=3 * (s.high - s.low) / (2 * 1.96))
    # abs 0.06 (20%): about 3 standard errors of the intercept at n = 20,000
    assert s.details["params"][0] == pytest.approx(0.3, abs=0.06)
    calibrated = nc.simulate.binary_scores(20000, seed=2)
    a = nc.calibration_intercept(calibrated.p, calibrated.y, level=0.95)
    assert a.low <= 0.0 <= a.high


def test_calibration_slope_matches_statsmodels_and_bootstrap():
    sm = pytest.importorskip("statsmodels.api")
    b = nc.simulate.binary_scores(3000, intercept=-0.2, slope=1.4, seed=3)
    x = np.log(b.p / (1 - b.p))
    ref = sm.GLM(b.y, sm.add_constant(x), family=sm.families.Binomial()).fit()
    s = nc.calibration_slope(b.p, b.y, level=0.9)
    assert float(s) == pytest.approx(ref.params[1], rel=1e-8)
    np.testing.assert_allclose(s.interval, ref.conf_int(alpha=0.1)[1], rtol=1e-8)
    boot = nc.calibration_slope(b.p, b.y, interval=nc.intervals.Bootstrap(n_boot=400), seed=0)
    assert np.median(boot.replicates) == pytest.approx(float(s), rel=0.03)
    # rel 0.2: bootstrap (400 replicates) and Wald widths agree only asymptotically
    assert (boot.high - boot.low) == pytest.approx(s.high - s.low, rel=0.2)
    # intercept: offset model by hand
    ref_a = sm.GLM(b.y, np.ones((3000, 1)), family=sm.families.Binomial(), offset=x).fit()
    assert float(nc.calibration_intercept(b.p, b.y)) == pytest.approx(ref_a.params[0],
                                                                      rel=1e-8)


def test_calibration_slope_top_label_and_logits():
    sim = nc.simulate.classifier(3000, 4, temperature=0.5, seed=4)
    a = nc.calibration_slope(sim.probs, sim.labels)
    b = nc.calibration_slope(logits=sim.logits, target=sim.labels)
    assert float(a) == pytest.approx(float(b), rel=1e-8)
    assert float(a) < 1.0  # overconfident
    # soft targets use the sandwich covariance
    s = nc.calibration_slope(sim.probs, nc.targets.soft(counts=sim.counts))
    assert s.details["cov_type"] == "HC0"


def test_calibration_slope_rejects_bad_input():
    with pytest.raises(ValueError, match="strictly inside"):
        nc.calibration_slope(np.array([0.0, 0.4, 0.7]), np.array([0, 0, 1]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nc.calibration_slope(np.array([0.2, 0.4]), np.array([[-0.2, 1.2], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="cov_type"):
        nc.calibration_slope(np.array([0.2, 0.4]), np.array([0, 1]),
                             interval=nc.intervals.Wald(cov_type="HC3"))
    with pytest.raises(ValueError, match="level"):
        nc.calibration_slope(np.array([0.2, 0.4]), np.array([0, 1]), level=95)


def test_hc0_sandwich_by_hand_and_saturated_items():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 500)
    t = np.clip(p + rng.normal(0, 0.1, 500), 0, 1)  # soft targets
    T = np.column_stack([1 - t, t])
    s = nc.calibration_slope(p, T, interval=nc.intervals.Wald(cov_type="HC0"))
    x = np.log(p / (1 - p))
    ref = sm.GLM(t, sm.add_constant(x), family=sm.families.Binomial()).fit(cov_type="HC0")
    np.testing.assert_allclose(s.details["bse"], ref.bse, rtol=1e-6)
    # logits so large that mu (1 - mu) is ~1e-13: the sandwich stays finite
    z = np.concatenate([rng.normal(0, 1, 300), np.full(20, 30.0)])
    tt = np.concatenate([rng.uniform(0.2, 0.8, 300), np.ones(20)])
    a = nc.calibration_intercept(logits=z, target=np.column_stack([1 - tt, tt]))
    assert a.status == "ok" and np.all(np.isfinite(a.interval))
