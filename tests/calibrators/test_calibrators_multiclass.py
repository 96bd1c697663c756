"""Multi-class scaling maps fitted to any target: temperature, vector, Platt, matrix and
Dirichlet scaling.

Reference values: the exact 1-D temperature fit against scipy's minimisation of the NLL
(DenseNet-40 CIFAR-10 logits, skipped when the shared data are absent), netcal's
TemperatureScaling and scikit-learn's unregularised logistic regression (skipped when not
installed). Invariants: the TS sufficient statistic m, one-hot = hard labels, shift
invariance. Simulations with known truth: per-class temperatures, a Dirichlet calibration
map, and the corrected multi-class target recovering the clean temperature.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize
from scipy.special import log_softmax, logsumexp, softmax

import noisycal as nc

C = nc.calibrators
MAPS = [C.TemperatureScaling, C.VectorScaling, C.PlattScaling, C.MatrixScaling,
        C.DirichletCalibration]


def _draw(P, rng):
    """One class per row of the probability matrix P."""
    return (P.cumsum(1) > rng.random((P.shape[0], 1))).argmax(1)


def _logits(n=3000, K=4, T=1.7, seed=0, scale=2.5):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, K)) * scale
    return Z, _draw(softmax(Z / T, axis=1), rng)


def _scipy_temperature(Z, target):
    """argmin over log T of the mean cross-entropy -sum_k t_k log softmax(z / T)_k."""
    def nll(u):
        eta = Z * np.exp(-u)
        return np.mean(logsumexp(eta, axis=1) - np.sum(target * eta, axis=1))

    res = optimize.minimize_scalar(nll, bounds=(-4.0, 4.0), method="bounded",
                                   options={"xatol": 1e-12})
    return float(np.exp(res.x))


@pytest.fixture(scope="module")
def densenet():
    try:
        return nc.datasets.load_cifar10_logits("densenet40")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


# ----------------------------------------------------------------- temperature scaling
@pytest.mark.data
def test_densenet_temperature_equals_scipy_nll_minimum(densenet):
    # the 5000 held-out validation logits (the split the DenseNet-40 file ships for
    # calibration); scipy's bounded search on log T gives 2.882561
    Z, y = densenet.logits_val, densenet.y_val
    ts = C.TemperatureScaling().fit(logits=Z, target=y)
    assert ts.status_ == "ok" and ts.loss_ == "log"
    ref = _scipy_temperature(Z, np.eye(10)[y])
    assert ts.temperature_ == pytest.approx(ref, rel=1e-7)
    assert ts.temperature_ == pytest.approx(2.8826, abs=5e-5)
    # the objective is the NLL of the calibrated probabilities
    q = ts.predict_proba(logits=Z)
    assert ts.objective_ == pytest.approx(-np.mean(np.log(q[np.arange(y.size), y])), rel=1e-12)
    # binary cat-vs-rest on the unclipped log-odds: 3.3967 (clipping them at +-13.8, as
    # the binary maps used to, gave 2.59)
    lp = log_softmax(Z, axis=1)
    s = lp[:, 3] - logsumexp(np.delete(lp, 3, axis=1), axis=1)
    yb = (y == 3).astype(int)
    cat = C.TemperatureScaling().fit(logits=s, target=yb)
    assert cat.temperature_ == pytest.approx(_scipy_temperature(
        np.column_stack([np.zeros_like(s), s]), np.eye(2)[yb]), rel=1e-7)
    assert cat.temperature_ == pytest.approx(3.3967, abs=1e-4)
    assert np.abs(s).max() > 50  # logits far beyond the old clipping level are used as given


def test_temperature_matches_netcal():
    netcal = pytest.importorskip("netcal.scaling")
    # netcal reads probabilities (its .temperature is 1/T); give them in float64
    Z, y = _logits(2000, K=5, T=2.2, seed=3)
    ts = C.TemperatureScaling().fit(logits=Z, target=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = netcal.TemperatureScaling()
        net.fit(softmax(Z, axis=1), y, tensorboard=False)
    T_net = 1.0 / float(np.asarray(net.temperature).ravel()[0])
    assert ts.temperature_ == pytest.approx(T_net, rel=1e-3)


def test_temperature_depends_on_the_target_only_through_m():
    Z, y = _logits(2000, K=4, T=1.5, seed=1)
    n, K = Z.shape
    hard = np.eye(K)[y]
    uniform = np.full((n, K), 1.0 / K)
    rng = np.random.default_rng(5)
    soft = 0.5 * hard + 0.5 * rng.dirichlet(np.ones(K), size=n)

    def m(t):
        return float(np.mean(np.sum(t * Z, axis=1)))

    # a mixture of the hard and uniform targets with the soft target's m: another matrix
    lam = (m(soft) - m(uniform)) / (m(hard) - m(uniform))
    assert 0 < lam < 1
    twin = lam * hard + (1 - lam) * uniform
    assert np.abs(twin - soft).max() > 0.1 and m(twin) == pytest.approx(m(soft), rel=1e-12)
    a = C.TemperatureScaling().fit(logits=Z, target=soft)
    b = C.TemperatureScaling().fit(logits=Z, target=twin)
    assert a.mean_target_score_ == pytest.approx(b.mean_target_score_, rel=1e-12)
    assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-10)
    # the soft-label fit (SLTS) is the root of g: scipy's search on the soft NLL agrees
    assert a.temperature_ == pytest.approx(_scipy_temperature(Z, soft), rel=1e-7)
    # T decreases in m: hard labels (largest m here) give the smallest T
    temps = [C.TemperatureScaling().fit(logits=Z, target=w * hard + (1 - w) * uniform)
             .temperature_ for w in (0.4, 0.6, 0.8, 1.0)]
    assert np.all(np.diff(temps) < 0)
    # adding a constant to each row of logits (log-probabilities instead) changes nothing
    c = C.TemperatureScaling().fit(logits=log_softmax(Z, axis=1) - 3.0, target=soft)
    assert c.temperature_ == pytest.approx(a.temperature_, rel=1e-10)


def test_temperature_limits_are_statuses_not_clamps():
    Z, _ = _logits(300, K=3, seed=2)
    top = Z.argmax(1)
    with pytest.warns(nc.IdentifiabilityWarning, match="separate the target"):
        sep = C.TemperatureScaling().fit(logits=Z, target=top)
    assert sep.status_ == "separable" and sep.unconstrained_temperature_ == 0.0
    assert sep.temperature_ == 0.05 and sep.at_bound_
    # uniform targets: m equals the mean row mean, g(0) = 0, uniform predictions are best
    with pytest.warns(nc.IdentifiabilityWarning, match="grows without limit"):
        inf = C.TemperatureScaling().fit(logits=Z, target=np.full(Z.shape, 1 / 3))
    assert inf.status_ == "infinite_temperature" and inf.unconstrained_temperature_ == np.inf
    assert inf.temperature_ == 20.0
    # one item off the argmax is enough for a finite optimum
    y = top.copy()
    y[0] = (y[0] + 1) % 3
    fin = C.TemperatureScaling(bounds=(1e-6, 20.0)).fit(logits=Z, target=y)
    assert fin.status_ == "ok" and 0 < fin.temperature_ < 0.5
    # constant rows: T does not enter the loss
    with pytest.warns(nc.IdentifiabilityWarning, match="not identified"):
        flat = C.TemperatureScaling().fit(logits=np.ones((5, 3)), target=[0, 1, 2, 0, 1])
    assert flat.status_ == "not_identified" and flat.temperature_ == 1.0


def test_brier_temperature_equals_a_direct_search():
    Z, y = _logits(1500, K=3, T=2.0, seed=4)
    T = np.eye(3)[y]
    ts = C.TemperatureScaling(loss="brier").fit(logits=Z, target=y)

    def brier(u):
        q = softmax(Z * np.exp(-u), axis=1)
        return np.mean(np.sum(q * q - 2 * q * T + T, axis=1))

    ref = optimize.minimize_scalar(brier, bounds=(-3, 3), method="bounded",
                                   options={"xatol": 1e-10})
    assert ts.status_ == "ok" and ts.temperature_ == pytest.approx(np.exp(ref.x), rel=1e-5)
    assert ts.objective_ == pytest.approx(ref.fun, rel=1e-9)


def test_corrected_multiclass_target_recovers_the_clean_temperature():
    # truth: softmax(z / 2); three annotators with symmetric channels (accuracy 0.8, 0.7,
    # 0.75); the corrected target (rows sum to 1, entries outside [0, 1]) is fitted with
    # the affine Brier loss. Seeds 0-2 gave T 1.918 / 1.931 / 2.054 against the clean
    # Brier fit 1.921 / 1.919 / 2.026; the naive annotator share gives 4.1-4.4.
    rng = np.random.default_rng(0)
    n, K = 6000, 3
    Z = rng.normal(size=(n, K)) * 3
    y = _draw(softmax(Z / 2, axis=1), rng)
    off = [(1 - d) / (K - 1) for d in (0.8, 0.7, 0.75)]
    conf = np.array([np.full((K, K), o) + np.eye(K) * (1 - K * o) for o in off])
    A = np.stack([_draw(conf[j, y], rng) for j in range(3)], axis=1)
    U = nc.targets.corrected(A, confusion=conf, weights="equal")
    assert np.asarray(U).min() < 0
    corr = C.TemperatureScaling().fit(logits=Z, target=U)
    clean = C.TemperatureScaling(loss="brier").fit(logits=Z, target=y)
    naive = C.TemperatureScaling().fit(logits=Z, target=np.stack([(A == k).mean(1)
                                                                  for k in range(K)], 1))
    assert corr.loss_ == "brier" and corr.status_ == "ok"
    assert corr.temperature_ == pytest.approx(clean.temperature_, abs=0.1)
    assert naive.temperature_ > 3.5
    ds = C.DirichletCalibration().fit(logits=Z, target=U)
    assert ds.loss_ == "brier" and ds.status_ == "ok" and np.isfinite(ds.objective_)


# ----------------------------------------------------------------- the L-BFGS maps
@pytest.mark.parametrize("cls", MAPS, ids=lambda c: c.__name__)
def test_one_hot_soft_target_is_exactly_the_hard_fit(cls):
    Z, y = _logits(600, K=3, seed=6)
    hard = cls().fit(logits=Z, target=y)
    for other in (np.eye(3)[y], nc.targets.hard(y, n_classes=3)):
        soft = cls().fit(logits=Z, target=other)
        assert soft.loss_ == "log" and soft.objective_ == hard.objective_
        np.testing.assert_array_equal(soft.predict_proba(logits=Z), hard.predict_proba(logits=Z))
    q = hard.predict_proba(logits=Z)
    assert q.shape == Z.shape and np.allclose(q.sum(1), 1.0, atol=1e-12)
    assert hard.status_ == "ok" and hard.n_classes_ == 3 and not hard.binary_


def test_vector_scaling_recovers_per_class_temperatures():
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(8000, 3)) * 3
    truth = np.array([1.0, 2.0, 3.0])
    y = _draw(softmax(Z / truth, axis=1), rng)
    vs = C.VectorScaling().fit(logits=Z, target=y)
    # sd of each T_k at n = 8000 is below 0.05 (20 seeds); 0.15 is > 3 sd
    np.testing.assert_allclose(vs.temperatures_, truth, atol=0.15)
    assert vs.status_ == "ok" and vs.loss_ == "log"
    # the true class probabilities as a soft target give the truth exactly
    ex = C.VectorScaling().fit(logits=Z, target=softmax(Z / truth, axis=1))
    np.testing.assert_allclose(ex.temperatures_, truth, rtol=1e-6)


def test_platt_recovers_weights_and_biases():
    rng = np.random.default_rng(8)
    Z = rng.normal(size=(8000, 3)) * 2
    w, b = np.array([0.5, 1.0, 1.5]), np.array([0.3, -0.2, -0.1])
    y = _draw(softmax(Z * w + b, axis=1), rng)
    pl = C.PlattScaling().fit(logits=Z, target=y)
    np.testing.assert_allclose(pl.slope_, w, atol=0.1)
    np.testing.assert_allclose(pl.intercept_, b - b.mean(), atol=0.1)
    assert pl.intercept_.sum() == pytest.approx(0.0, abs=1e-12)
    # SoftPlatt on the true class probabilities recovers the map exactly
    ex = C.PlattScaling().fit(logits=Z, target=softmax(Z * w + b, axis=1))
    np.testing.assert_allclose(ex.slope_, w, atol=1e-6)
    np.testing.assert_allclose(ex.intercept_, b - b.mean(), atol=1e-6)


def test_binary_platt_equals_unregularised_logistic_regression():
    lm = pytest.importorskip("sklearn.linear_model")
    b = nc.simulate.binary_scores(3000, slope=0.7, intercept=0.2, seed=1)
    s = np.log(b.p) - np.log1p(-b.p)
    s[:5] *= 40  # logits beyond +-13.8 are used as given
    pl = C.PlattScaling().fit(logits=s, target=b.y)
    lr = lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(s[:, None], b.y)
    assert pl.slope_ == pytest.approx(float(lr.coef_[0, 0]), abs=1e-6)
    assert pl.intercept_ == pytest.approx(float(lr.intercept_[0]), abs=1e-6)


def test_dirichlet_calibration_recovers_its_map():
    rng = np.random.default_rng(9)
    P = rng.dirichlet(np.ones(3) * 0.8, size=20_000)
    W = np.array([[1.4, 0.2, 0.0], [0.0, 0.8, -0.1], [-0.2, 0.1, 1.1]])
    b = np.array([0.2, -0.1, -0.1])
    q = softmax(np.log(P) @ W.T + b, axis=1)
    y = _draw(q, rng)
    dc = C.DirichletCalibration(reg_lambda=0.0).fit(probs=P, target=y)
    # W is identified up to adding a common row (softmax ignores c^T log p added to every
    # class): compare differences between rows, the identified part. Errors at n = 20000
    # were <= 0.06 on two seeds (the intercepts vary more, sd ~0.07, and are checked
    # below against the exact soft-target fit instead)
    np.testing.assert_allclose(np.diff(dc.coef_, axis=0), np.diff(W, axis=0), atol=0.1)
    # fitted to the true class probabilities as a soft target, the well-specified map is
    # recovered exactly (the cross-entropy is minimised at the truth for any n)
    ex = C.DirichletCalibration(reg_lambda=0.0, eps=1e-300).fit(probs=P, target=q)
    np.testing.assert_allclose(np.diff(ex.coef_, axis=0), np.diff(W, axis=0), atol=1e-5)
    np.testing.assert_allclose(np.diff(ex.intercept_), np.diff(b), atol=1e-5)
    # logits enter as log_softmax(logits), the same log-probabilities: the same fit (eps
    # is set tiny above because the floor log(max(p, eps)) would move the smallest p)
    lg = C.DirichletCalibration(reg_lambda=0.0).fit(logits=np.log(P) + 5.0, target=q)
    np.testing.assert_allclose(lg.predict_proba(logits=np.log(P)), ex.predict_proba(probs=P),
                               atol=1e-6)


def test_matrix_scaling_with_odir_equals_a_direct_minimisation():
    Z, y = _logits(400, K=3, seed=10)
    T, K, lam, mu = np.eye(3)[y], 3, 0.05, 0.02
    ms = C.MatrixScaling(reg_lambda=lam, reg_mu=mu).fit(logits=Z, target=y)

    def objective(theta):
        W, b = theta[:9].reshape(3, 3), theta[9:]
        eta = Z @ W.T + b
        nll = np.mean(logsumexp(eta, axis=1) - np.sum(T * eta, axis=1))
        off = np.sum(W**2) - np.sum(np.diag(W) ** 2)
        return nll + lam * off / (K * (K - 1)) + mu * np.sum(b**2) / K

    ref = optimize.minimize(objective, np.concatenate([np.eye(3).ravel(), np.zeros(3)]),
                            method="BFGS", options={"gtol": 1e-9})
    theta = np.concatenate([ms.coef_.ravel(), ms.intercept_])
    assert ms.objective_ == pytest.approx(ref.fun, rel=1e-9)
    assert ms.objective_ == pytest.approx(objective(theta), rel=1e-12)
    np.testing.assert_allclose(theta, ref.x, atol=1e-4)
    assert ms.reg_lambda_ == lam and ms.reg_mu_ == mu
    # reg_mu=None uses reg_lambda for the intercepts
    assert C.MatrixScaling(reg_lambda=lam).fit(logits=Z, target=y).reg_mu_ == lam


def test_maps_fitted_on_logits_refuse_probabilities_unless_shift_invariant():
    Z, y = _logits(300, K=3, seed=11)
    P = softmax(Z, axis=1)
    for cls in (C.VectorScaling, C.PlattScaling, C.MatrixScaling):
        with pytest.raises(ValueError, match="fitted on logits="):
            cls().fit(logits=Z, target=y).predict_proba(probs=P)
    for cls in (C.TemperatureScaling, C.DirichletCalibration):
        cal = cls().fit(logits=Z, target=y)
        np.testing.assert_allclose(cal.predict_proba(probs=P), cal.predict_proba(logits=Z),
                                   atol=1e-9)
    with pytest.raises(ValueError, match=r"shape the map was fitted on, \(n, 3\)"):
        C.TemperatureScaling().fit(logits=Z, target=y).predict_proba(logits=Z[:, :2])
    with pytest.raises(ValueError, match=r"shape the map was fitted on, \(n,\) binary"):
        C.VectorScaling().fit(probs=P[:, 1], target=y == 1).predict_proba(probs=P)


def test_binary_inputs_give_binary_outputs_for_every_map():
    b = nc.simulate.binary_scores(2000, slope=0.6, seed=12)
    for cls in MAPS:
        cal = cls().fit(probs=b.p, target=b.y)
        out = cal.predict_proba(probs=b.p)
        assert cal.binary_ and cal.n_classes_ == 2 and out.shape == (2000,)
        assert cal.status_ == "ok"
        # calibrated against the labels it was fitted to
        assert float(nc.ece(out, b.y, n_bins=10, interval=None)) < 0.03
    # binary TS is sigmoid(logit / T) on the unclipped logit
    ts = C.TemperatureScaling().fit(probs=b.p, target=b.y)
    s = np.log(b.p) - np.log1p(-b.p)
    np.testing.assert_allclose(ts.predict_proba(logits=s),
                               1 / (1 + np.exp(-s / ts.temperature_)), rtol=1e-12)


def test_non_convergence_and_boundary_are_reported():
    Z, y = _logits(300, K=3, seed=13)
    with pytest.warns(nc.ConvergenceWarning, match="not_converged"):
        bad = C.MatrixScaling(max_iter=1).fit(logits=Z, target=y)
    assert bad.status_ == "not_converged" and "optimiser" in bad.message_
    with pytest.warns(nc.IdentifiabilityWarning, match="boundary"):
        sep = C.PlattScaling().fit(logits=Z, target=Z.argmax(1))
    assert sep.status_ == "boundary" and sep.at_bound_
    # the warnings point at the caller's line, not into noisycal
    with pytest.warns(nc.IdentifiabilityWarning) as rec:
        C.TemperatureScaling().fit(logits=Z, target=Z.argmax(1))
    with pytest.warns(nc.ConvergenceWarning) as rec2:
        C.DirichletCalibration(max_iter=1).fit(logits=Z, target=y)
    assert rec[0].filename == rec2[0].filename == __file__


@pytest.mark.parametrize("bounds", [(0.05, 20.0), (3.0, 20.0)])  # the second clips T
def test_temperature_objective_is_the_log_loss_at_the_fitted_temperature(bounds):
    # the objective comes from the row maxima and m in one pass; it must equal the log
    # loss of softmax(s / T) against the target at the reported (possibly clipped) T
    rng = np.random.default_rng(3)
    Z = rng.normal(0.0, 3.0, size=(500, 7))
    y = (softmax(Z / 1.5, axis=1).cumsum(1) > rng.random((500, 1))).argmax(1)  # T* ~ 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = nc.calibrators.TemperatureScaling(bounds=bounds).fit(logits=Z, target=y)
    direct = -np.mean(log_softmax(Z / ts.temperature_, axis=1)[np.arange(500), y])
    np.testing.assert_allclose(ts.objective_, direct, rtol=1e-12)
    assert (ts.status_ == "boundary") == (bounds[0] == 3.0)
