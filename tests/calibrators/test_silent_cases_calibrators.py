"""Calibrator cases that used to pass silently ("nothing silent").

1. 1-D ``logits=`` that all lie in [0, 1] warn that they look like probabilities, with the
   metrics' own check and text (before: status 'ok' and no warning).
2. Dirichlet calibration on logits of enormous (finite) scale reports 'not_converged', as
   matrix and vector scaling do (before: 'ok' at an objective of about 1e296).
3. Beta calibration on probabilities floors only exact 0 and 1 by default, so its fit is
   the beta-family maximum-likelihood fit (before: every score below 1e-6 was floored).
4. A repeated pandas index is refused by the calibrators' fit and predict, with the
   metrics' check (``check_item_ids``), naming the argument.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit

import noisycal as nc

C = nc.calibrators

# ----------------------------------------------------------------------------- case 1

_r1 = np.random.default_rng(1)
PB = _r1.uniform(0.01, 0.99, 200)
YB = (_r1.random(200) < PB).astype(np.int64)
LOOKS = r"every value of logits lies in \[0, 1\]: these look like probabilities"


def _metric_warning():
    with pytest.warns(nc.NumericalWarning) as rec:
        nc.ece(logits=PB, target=YB)
    return [str(w.message) for w in rec if issubclass(w.category, nc.NumericalWarning)]


@pytest.mark.parametrize("make", [C.TemperatureScaling, C.PlattScaling, C.BetaCalibration,
                                  C.IsotonicCalibration, C.VennAbers])
def test_1d_logits_in_unit_interval_warn_as_the_metrics_do(make):
    expected = _metric_warning()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cal = make().fit(logits=PB, target=YB)
    got = [str(w.message) for w in rec if issubclass(w.category, nc.NumericalWarning)]
    # exactly the metrics' warning, once (TemperatureScaling read its scores twice before)
    assert got == expected and len(got) == 1
    with pytest.warns(nc.NumericalWarning, match=LOOKS):
        cal.predict_proba(logits=PB)


def test_temperature_on_probability_like_logits_still_fits_them_as_logits():
    with pytest.warns(nc.NumericalWarning, match=LOOKS):
        ts = C.TemperatureScaling().fit(logits=PB, target=YB)
    assert ts.status_ == "ok" and ts.temperature_ == pytest.approx(0.78639, abs=1e-5)
    z = np.log(PB) - np.log1p(-PB)  # the same scores as logits: no warning
    assert C.TemperatureScaling().fit(logits=z, target=YB).status_ == "ok"


def test_beta_on_probability_like_logits_says_it_stopped_short():
    # the beta features of these logits are nearly collinear; L-BFGS-B stops on its
    # relative-reduction test with a projected gradient of 4e-3 (status 'ok' before),
    # 6e-4 above the constrained minimum (a = 0, b = 8.4588, c = -8.0621: 0.5147725)
    with pytest.warns(nc.NumericalWarning, match=LOOKS), \
            pytest.warns(nc.ConvergenceWarning, match="largest projected gradient of 0.0042"):
        bc = C.BetaCalibration().fit(logits=PB, target=YB)
    assert bc.status_ == "not_converged"
    assert bc.objective_ == pytest.approx(0.515395, abs=1e-6)


# ----------------------------------------------------------------------------- case 2

_r2 = np.random.default_rng(0)
LOG = _r2.normal(size=(300, 3)) * 2
Y = np.array([_r2.choice(3, p=q) for q in np.exp(LOG) / np.exp(LOG).sum(1, keepdims=True)])


@pytest.mark.parametrize("scale", [1e150, 1e300])
def test_dirichlet_on_huge_logits_is_not_converged(scale):
    z = LOG * scale
    assert np.all(np.isfinite(z))
    with pytest.warns(nc.ConvergenceWarning, match="largest projected gradient"):
        dc = C.DirichletCalibration().fit(logits=z, target=Y)
    assert dc.status_ == "not_converged"
    assert "RELATIVE REDUCTION OF F" in dc.message_  # scipy's stop, not convergence
    assert dc.objective_ > 1e100  # far above log(3), the loss of the uniform map
    with pytest.warns(nc.ConvergenceWarning):
        ms = C.MatrixScaling().fit(logits=z, target=Y)
    assert ms.status_ == "not_converged"


def test_dirichlet_on_ordinary_logits_stays_ok():
    dc = C.DirichletCalibration().fit(logits=LOG, target=Y)
    assert dc.status_ == "ok" and dc.objective_ < np.log(3)


def test_logits_that_overflow_are_refused_naming_logits():
    with np.errstate(over="ignore"):
        z = LOG * 1e308
    assert not np.all(np.isfinite(z))
    with pytest.raises(ValueError, match=r"^logits contains \d+ NaN or infinite"):
        C.DirichletCalibration().fit(logits=z, target=Y)


# ----------------------------------------------------------------------------- case 3


def _beta_small_scores(n=2000, seed=3):
    rng = np.random.default_rng(seed)
    z = rng.normal(-8.0, 4.0, n)
    u = 0.4 * log_expit(z) - 1.0 * log_expit(-z) + 1.0  # a beta map: a=0.4, b=1, c=1
    return z, expit(z), (rng.random(n) < expit(u)).astype(np.int64)


def _log_loss(q, y):
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log1p(-q)))


def test_beta_default_fit_on_probs_is_the_mle():
    z, p, y = _beta_small_scores()
    assert np.mean(p < 1e-6) > 0.05  # many scores below the old floor
    default = C.BetaCalibration().fit(probs=p, target=y)
    exact = C.BetaCalibration().fit(logits=z, target=y)
    floored = C.BetaCalibration(eps=1e-6).fit(probs=p, target=y)
    ll = {k: _log_loss(c.predict_proba(**kw), y) for k, c, kw in (
        ("default", default, {"probs": p}), ("exact", exact, {"logits": z}),
        ("floored", floored, {"probs": p}))}
    assert default.status_ == exact.status_ == "ok"
    assert ll["default"] == pytest.approx(ll["exact"], rel=1e-6)
    np.testing.assert_allclose([default.a_, default.b_, default.c_],
                               [exact.a_, exact.b_, exact.c_], rtol=1e-5)
    assert ll["default"] < ll["floored"] - 1e-5
    assert default.eps_ == np.finfo(np.float64).tiny


def test_beta_default_still_floors_exact_zero_and_one():
    _, p, y = _beta_small_scores(n=400, seed=4)
    p = p.copy()
    p[:3], p[3:6] = 0.0, 1.0
    bc = C.BetaCalibration().fit(probs=p, target=y)
    q = bc.predict_proba(probs=p)
    assert np.all(np.isfinite(q))
    # the floors keep the order: a zero is no higher than the smallest positive score
    assert q[:3].max() <= q[6:][p[6:] == p[6:].min()].min()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_exact_one_is_floored_at_the_inputs_resolution(dtype):
    """ln(1 - s) of a score of exactly 1 is ln of the input's resolution (float64
    1.1e-16, float32 6.0e-8), not ln of the default eps (about -708); other scores keep
    their own logarithms."""
    from noisycal.calibrators._inputs import score_matrix
    from noisycal.calibrators.scaling.beta_ats import BETA_EPS

    p = np.array([0.0, 0.25, 1.0], dtype=dtype)
    S = score_matrix(p, None, BETA_EPS).S
    res = float(np.finfo(dtype).epsneg)
    np.testing.assert_allclose(S[:, 0], [0.0, np.log(0.75), np.log(res)], rtol=1e-15)
    np.testing.assert_allclose(S[:, 1], [np.log(BETA_EPS), np.log(0.25), 0.0], rtol=1e-15)
    assert score_matrix(p, None, 1e-6).S[2, 0] == np.log(1e-6)  # a larger eps as given


def test_beta_default_agrees_with_betacal():
    betacal = pytest.importorskip("betacal")
    _, p, y = _beta_small_scores()
    ours = C.BetaCalibration().fit(probs=p, target=y)
    ref = betacal.BetaCalibration(parameters="abm").fit(p, y)
    # betacal clips at 2.2e-16 (no score here is that small) and stops at
    # scikit-learn's default tolerance
    np.testing.assert_allclose(ours.predict_proba(probs=p), ref.predict(p), atol=1e-3)


# ----------------------------------------------------------------------------- case 4

_r4 = np.random.default_rng(5)
Z1 = _r4.normal(size=40)
Y1 = (_r4.random(40) < expit(Z1)).astype(np.int64)
REPEATED = [0, 0, *range(1, 39)]


@pytest.mark.parametrize("make", [C.TemperatureScaling, C.PlattScaling, C.BetaCalibration,
                                  C.IsotonicCalibration, C.VennAbers])
def test_repeated_index_is_refused_like_the_metrics(make):
    with pytest.raises(ValueError, match="must not repeat an id; 0 appears more than once"):
        nc.ece(logits=pd.Series(Z1, index=REPEATED), target=pd.Series(Y1, index=REPEATED))
    msg = r"^{} \(its index\) must not repeat an id; 0 appears more than once$"
    with pytest.raises(ValueError, match=msg.format("logits")):
        make().fit(logits=pd.Series(Z1, index=REPEATED),
                   target=pd.Series(Y1, index=REPEATED))
    with pytest.raises(ValueError, match=msg.format("target")):
        make().fit(logits=Z1, target=pd.Series(Y1, index=REPEATED))
    cal = make().fit(logits=Z1, target=Y1)
    with pytest.raises(ValueError, match=msg.format("logits")):
        cal.predict_proba(logits=pd.Series(Z1, index=REPEATED))


def test_repeated_index_of_a_score_matrix_is_refused():
    Z = _r4.normal(size=(40, 3))
    y = _r4.integers(0, 3, 40)
    msg = r"^logits \(its index\) must not repeat an id; 0 appears more than once$"
    with pytest.raises(ValueError, match=msg):
        C.TemperatureScaling().fit(logits=pd.DataFrame(Z, index=REPEATED), target=y)
    cal = C.DirichletCalibration().fit(logits=Z, target=y)
    with pytest.raises(ValueError, match=msg):
        cal.predict_proba(logits=pd.DataFrame(Z, index=REPEATED))
