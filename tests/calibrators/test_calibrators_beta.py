"""Beta calibration (Kull, Silva Filho & Flach, 2017), fitted to any binary target.

Reference values: the ``betacal`` package (skipped when not installed), whose fits are
scikit-learn logistic regressions at their default tolerance, and scikit-learn's
unregularised logistic regression on the beta features ``[ln s, -ln(1 - s)]`` at a tight
tolerance. Exact reductions: 'am' is binary Platt scaling on the log-odds; a soft target
is the hard fit on items duplicated with weights t and 1 - t. Simulations with known
truth recover (a, b, c). Statuses: the monotone constraint, a constant map, too few
distinct scores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import noisycal as nc

C = nc.calibrators


def _beta_data(n=20000, a=2.0, b=0.5, c=0.3, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 2, n)
    mu = 1 / (1 + np.exp(-(a * np.log(s) - b * np.log1p(-s) + c)))
    return s, (rng.random(n) < mu).astype(np.int64), mu


def _lr(X, y, w=None, intercept=True):
    lm = pytest.importorskip("sklearn.linear_model")
    return lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000,
                                 fit_intercept=intercept).fit(X, y, sample_weight=w)


def test_recovers_known_parameters():
    s, y, _ = _beta_data(n=200_000, seed=3)
    bc = C.BetaCalibration().fit(probs=s, target=y)
    assert bc.status_ == "ok" and bc.constrained_ == ()
    # truth (2.0, 0.5, 0.3); standard errors at n = 2e5 are about 0.02, 0.02, 0.03
    assert bc.a_ == pytest.approx(2.0, abs=0.08)
    assert bc.b_ == pytest.approx(0.5, abs=0.08)
    assert bc.c_ == pytest.approx(0.3, abs=0.12)
    # the midpoint solves a ln m - b ln(1 - m) + c = 0
    m = bc.m_
    assert bc.a_ * np.log(m) - bc.b_ * np.log1p(-m) + bc.c_ == pytest.approx(0.0, abs=1e-10)
    assert bc.predict_proba(probs=np.array([m]))[0] == pytest.approx(0.5, abs=1e-10)


def test_abm_equals_unregularised_logistic_regression_on_beta_features():
    s, y, _ = _beta_data(n=5000, seed=1)
    bc = C.BetaCalibration().fit(probs=s, target=y)
    lr = _lr(np.column_stack([np.log(s), -np.log1p(-s)]), y)
    np.testing.assert_allclose([bc.a_, bc.b_, bc.c_],
                               [*lr.coef_[0], lr.intercept_[0]], atol=1e-6)
    assert bc.n_iter_ > 0


def test_ab_fixes_the_midpoint_at_one_half():
    s, y, _ = _beta_data(n=5000, a=1.5, b=1.0, c=0.0, seed=2)
    bc = C.BetaCalibration(parameters="ab").fit(probs=s, target=y)
    assert bc.m_ == pytest.approx(0.5, abs=1e-12)
    assert bc.c_ == pytest.approx((bc.a_ - bc.b_) * np.log(2.0), abs=1e-14)
    lr = _lr(np.column_stack([np.log(2 * s), -np.log(2 * (1 - s))]), y, intercept=False)
    np.testing.assert_allclose([bc.a_, bc.b_], lr.coef_[0], atol=1e-6)


def test_am_is_platt_scaling_on_the_log_odds():
    s, y, _ = _beta_data(n=5000, seed=4)
    z = np.log(s) - np.log1p(-s)
    z[:5] *= 30  # logits beyond +-13.8 are used as given, never clipped
    bc = C.BetaCalibration(parameters="am").fit(logits=z, target=y)
    pl = C.PlattScaling().fit(logits=z, target=y)
    assert bc.a_ == bc.b_
    assert bc.a_ == pytest.approx(pl.slope_, abs=1e-8)
    assert bc.c_ == pytest.approx(pl.intercept_, abs=1e-8)
    np.testing.assert_allclose(bc.predict_proba(logits=z), pl.predict_proba(logits=z),
                               atol=1e-9)
    lr = _lr(z[:, None], y)
    assert bc.a_ == pytest.approx(float(lr.coef_[0, 0]), abs=1e-6)
    assert bc.c_ == pytest.approx(float(lr.intercept_[0]), abs=1e-6)
    assert bc.m_ == pytest.approx(1 / (1 + np.exp(bc.c_ / bc.a_)), rel=1e-12)


def test_logits_give_the_exact_log_features():
    # logits= uses ln s = log_sigmoid(z) exactly: the fit equals the probs= fit wherever
    # the scores are not floored, and extreme logits stay informative
    s, y, _ = _beta_data(n=4000, seed=5)
    z = np.log(s) - np.log1p(-s)
    by_probs = C.BetaCalibration().fit(probs=s, target=y)
    by_logits = C.BetaCalibration().fit(logits=z, target=y)
    np.testing.assert_allclose([by_logits.a_, by_logits.b_, by_logits.c_],
                               [by_probs.a_, by_probs.b_, by_probs.c_], atol=1e-7)
    zz = np.array([-40.0, 40.0])
    q = by_logits.predict_proba(logits=zz)
    # z = 40: ln s = -log(1 + e^-40), ln(1 - s) = -log(1 + e^40), not the eps floor
    u = (by_logits.a_ * -np.logaddexp(0, -40.0) + by_logits.b_ * np.logaddexp(0, 40.0)
         + by_logits.c_)
    assert q[1] == pytest.approx(1 / (1 + np.exp(-u)), rel=1e-12)
    floored = C.BetaCalibration(eps=1e-6).fit(probs=s, target=y).predict_proba(
        probs=1 / (1 + np.exp(-zz)))
    assert floored[1] < q[1]  # probs= with eps=1e-6 floors 1 - s at 1e-6


def test_soft_target_is_the_hard_fit_on_weighted_duplicates():
    s, _, mu = _beta_data(n=3000, seed=6)
    rng = np.random.default_rng(7)
    t = np.clip(mu + rng.normal(0, 0.05, mu.size), 0, 1)  # a soft target in [0, 1]
    soft = C.BetaCalibration().fit(probs=s, target=t)
    assert soft.loss_ == "log" and soft.status_ == "ok"
    X = np.column_stack([np.log(s), -np.log1p(-s)])
    lr = _lr(np.vstack([X, X]), np.r_[np.ones(s.size), np.zeros(s.size)], np.r_[t, 1 - t])
    np.testing.assert_allclose([soft.a_, soft.b_, soft.c_],
                               [*lr.coef_[0], lr.intercept_[0]], atol=1e-6)
    # an (n, 2) matrix target gives the same fit
    twin = C.BetaCalibration().fit(probs=s, target=np.column_stack([1 - t, t]))
    np.testing.assert_array_equal([twin.a_, twin.b_, twin.c_], [soft.a_, soft.b_, soft.c_])


def test_target_outside_the_unit_interval_uses_the_affine_brier_loss():
    s, y, _ = _beta_data(n=3000, seed=8)
    t = 1.4 * y - 0.2  # values -0.2 and 1.2, as a corrected target may have
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        C.BetaCalibration().fit(probs=s, target=t)  # not declared corrected: refused
    corrected = nc.targets.from_matrix(np.c_[1 - t, t], kind="corrected")
    bc = C.BetaCalibration().fit(probs=s, target=corrected)
    assert bc.loss_ == "brier" and bc.status_ == "ok"
    # the affine Brier loss is affine in the target: same minimiser as (q - t)^2
    q = bc.predict_proba(probs=s)
    assert bc.objective_ == pytest.approx(0.5 * np.mean(2 * (q * q - 2 * q * t + t)), rel=1e-9)


def test_monotone_constraint_holds_a_slope_at_zero():
    # truth a = -0.5 < 0: the monotone fit holds a at 0, which is the model, not a failure
    s, y, _ = _beta_data(n=20000, a=-0.5, b=1.5, c=-0.5, seed=9)
    bc = C.BetaCalibration().fit(probs=s, target=y)
    assert bc.a_ == 0.0 and bc.constrained_ == ("a",) and bc.status_ == "ok"
    lr = _lr(-np.log1p(-s)[:, None], y)  # the fit with a = 0 (betacal's refit)
    assert bc.b_ == pytest.approx(float(lr.coef_[0, 0]), abs=1e-6)
    assert bc.c_ == pytest.approx(float(lr.intercept_[0]), abs=1e-6)
    free = C.BetaCalibration(monotone=False).fit(probs=s, target=y)
    assert free.a_ < -0.3 and free.constrained_ == ()
    assert free.objective_ < bc.objective_


def test_a_constant_map_is_reported_as_degenerate():
    s, _, _ = _beta_data(n=2000, seed=10)
    y = (np.random.default_rng(0).random(s.size) < 0.8 - 0.6 * s).astype(int)  # decreasing
    with pytest.warns(nc.IdentifiabilityWarning, match="constant"):
        bc = C.BetaCalibration().fit(probs=s, target=y)
    assert bc.status_ == "degenerate" and bc.constrained_ == ("a", "b")
    assert bc.predict_proba(probs=s) == pytest.approx(np.full(s.size, y.mean()), abs=1e-7)
    assert np.isnan(bc.m_)


def test_too_few_distinct_scores_are_not_identified():
    s = np.repeat([0.2, 0.7], 50)
    y = np.tile([0, 1], 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bc = C.BetaCalibration().fit(probs=s, target=y)
        assert bc.status_ == "not_identified"
        assert C.BetaCalibration(parameters="am").fit(probs=s, target=y).status_ == "ok"


def test_matrix_scores_are_refused():
    with pytest.raises(ValueError, match="probs must be 1-D"):
        C.BetaCalibration().fit(probs=np.full((4, 2), 0.5), target=[0, 1, 0, 1])


@pytest.mark.parametrize("parameters", ["abm", "am"])
def test_agrees_with_betacal(parameters):
    betacal = pytest.importorskip("betacal")
    s, y, _ = _beta_data(n=20000, seed=0)
    ours = C.BetaCalibration(parameters=parameters).fit(probs=s, target=y)
    ref = betacal.BetaCalibration(parameters=parameters).fit(s, y)
    a, b, m = ref.calibrator_.map_
    # betacal's logistic regression stops at scikit-learn's default tol=1e-4
    np.testing.assert_allclose([ours.a_, ours.b_, ours.m_], [a, b, m], atol=2e-3)
    np.testing.assert_allclose(ours.predict_proba(probs=s), ref.predict(s), atol=1e-3)


def test_agrees_with_betacal_ab_without_the_monotone_constraint():
    betacal = pytest.importorskip("betacal")
    s, y, _ = _beta_data(n=20000, seed=0)
    ours = C.BetaCalibration(parameters="ab", monotone=False).fit(probs=s, target=y)
    ref = betacal.BetaCalibration(parameters="ab").fit(s, y)
    a, b, _ = ref.calibrator_.map_
    assert b < 0  # betacal's 'ab' does not constrain b; this data set needs b < 0
    np.testing.assert_allclose([ours.a_, ours.b_], [a, b], atol=2e-3)
    np.testing.assert_allclose(ours.predict_proba(probs=s), ref.predict(s), atol=1e-3)
    mono = C.BetaCalibration(parameters="ab").fit(probs=s, target=y)
    assert mono.b_ == 0.0 and mono.constrained_ == ("b",) and mono.status_ == "ok"
