"""Split conformal sets, mass rescaling and conformal temperature scaling ("Adaptive
Set-Mass Calibration with Conformal Prediction", Section 3, Eq. 6, Appendix A): finite-
sample coverage k/(n+1), exact in-set mass, KL optimality, order preservation and the
MR / TS identity on singleton sets."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

import noisycal as nc
from noisycal.calibrators.conformal import (
    conformal_quantile,
    conformal_rank,
    label_scores,
    nonconformity,
    prediction_sets,
)
from noisycal.calibrators.conformal.maps import conformal_temperatures, mass_rescale

CAL = nc.calibrators


def _setup(n=3000, K=49, seed=0):
    """Spec recipe (b): the Gaussian grid with an over-confident noisy model."""
    g = nc.simulate.gaussian_grid(n, K, seed=seed)
    rng = np.random.default_rng(seed + 1000)
    z = 2.5 * g.true_logits + rng.normal(size=g.true_logits.shape)
    return z[:600], g.labels[:600], z[600:], g.labels[600:]


def test_quantile_by_hand():
    s = [0.3, 0.1, 0.2, 0.5]
    assert conformal_quantile(s, 0.4) == 0.3  # k = ceil(0.6 * 5) = 3
    assert conformal_quantile(s, 0.2) == 0.5  # k = 4
    assert conformal_quantile(s, 0.19) == math.inf  # k = ceil(0.81 * 5) = 5 > 4
    # k = ceil(0.9 * 20) = 18 exactly, not 19 from rounding 0.9 * 20 = 18.000000000000004
    assert conformal_quantile(np.arange(1, 20) / 20, 0.1) == 18 / 20
    assert conformal_rank(19, 0.1) == 18 and conformal_rank(4, 0.19) == 5
    # the fitted builder's k_ is the same rule (k = 18 of the 19 scores)
    yy = np.zeros(19, dtype=int)
    PP = np.column_stack([np.arange(1, 20) / 20, 1 - np.arange(1, 20) / 20])
    sc = CAL.SplitConformal(alpha=0.1).fit(probs=PP, target=yy)
    assert sc.k_ == 18 and sc.quantile_ == pytest.approx(1 - 2 / 20, abs=1e-15)


@pytest.mark.parametrize(("n", "alpha"), [(19, 0.1), (9, 0.15), (50, 0.05)])
def test_marginal_coverage_is_k_over_n_plus_1(n, alpha):
    # spec recipe (a): exchangeable continuous scores, coverage exactly k / (n + 1)
    R = 20000
    rng = np.random.default_rng(n)
    s = rng.random((R, n + 1))
    q = np.array([conformal_quantile(row[:n], alpha) for row in s])
    cover = np.mean(s[:, n] <= q)
    k = math.ceil((1 - alpha) * (n + 1) - 1e-12)
    c = k / (n + 1)
    assert abs(cover - c) <= 4 * math.sqrt(c * (1 - c) / R)


def test_conditional_coverage_is_beta():
    # given the calibration set the coverage of U(0, 1) scores is F(q) = q ~ Beta(k, n+1-k)
    n, alpha = 30, 0.1
    rng = np.random.default_rng(7)
    q = np.array([conformal_quantile(rng.random(n), alpha) for _ in range(3000)])
    k = math.ceil((1 - alpha) * (n + 1))
    assert sps.kstest(q, sps.beta(k, n + 1 - k).cdf).pvalue > 0.01


def test_split_conformal_coverage_on_classifier():
    # 12 seeds of the Gaussian grid: every score, randomised or not, covers k / (n + 1)
    settings = {"msp": dict(score="msp"), "aps": dict(score="aps", randomized=False),
                "aps_b": dict(score="aps", randomized=False, aps_include_boundary=True),
                "aps_rand": dict(score="aps"), "raps": dict(score="raps", lam=0.01, k_reg=3)}
    covers = {k: [] for k in settings}
    for r in range(12):
        zc, yc, zt, yt = _setup(seed=r)
        for key, kw in settings.items():
            cp = CAL.SplitConformal(alpha=0.1, seed=r, **kw)
            S = cp.fit(logits=zc, target=yc).predict_sets(logits=zt)
            covers[key].append(S[np.arange(yt.size), yt].mean())
    c = 541 / 601  # k / (n + 1), k = ceil(0.9 * 601)
    se = math.sqrt(c * (1 - c) / 601 / 12 + c * (1 - c) / 2400 / 12)
    for key in ("msp", "aps", "aps_rand", "raps"):
        assert abs(np.mean(covers[key]) - c) < 4 * se, key
    # the boundary-inclusive rule is a superset: conservative (spec: about 0.99)
    assert np.mean(covers["aps_b"]) > 0.97


def test_set_rules_by_hand():
    P = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    np.testing.assert_allclose(label_scores(P, "aps"), [[0.5, 0.8, 1.0], [0.8, 1.0, 0.6]])
    np.testing.assert_allclose(nonconformity(P, np.array([1, 0]), "msp"), [0.7, 0.8])
    lit = prediction_sets(P, 0.75, "aps")
    inc = prediction_sets(P, 0.75, "aps", aps_include_boundary=True)
    assert lit.tolist() == [[True, False, False], [False, False, True]]
    assert inc.tolist() == [[True, True, False], [True, False, True]]
    assert prediction_sets(P, 0.45, "aps").sum() == 0  # the literal rule may be empty
    assert prediction_sets(P, 0.6, "msp").tolist() == [[True, False, False],
                                                      [False, False, True]]
    assert prediction_sets(P, math.inf, "msp").all()
    assert prediction_sets(P, math.inf, "aps", aps_include_boundary=True).all()


def _kl(a, b):
    m = a > 0
    return float(np.sum(a[m] * np.log(a[m] / b[m])))


def test_mass_rescaling_exact_mass_ratios_and_kl_optimality():
    rng = np.random.default_rng(3)
    K, alpha = 8, 0.1
    P = rng.dirichlet(np.ones(K), size=200)
    C = rng.random((200, K)) < 0.4
    C[:, 0] |= ~C.any(axis=1)
    C[:, 1] &= C.sum(axis=1) < K
    Q, deg = mass_rescale(P, C, alpha)
    assert not deg.any()
    np.testing.assert_allclose(np.sum(np.where(C, Q, 0), axis=1), 1 - alpha, atol=1e-12)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    ratio = Q / P
    for i in range(20):
        assert np.ptp(ratio[i, C[i]]) < 1e-12 and np.ptp(ratio[i, ~C[i]]) < 1e-12
    for i in range(30):
        A = P[i, C[i]].sum()
        kl_mr = _kl(Q[i], P[i])
        # the closed form of the projection (Appendix A)
        closed = (1 - alpha) * math.log((1 - alpha) / A) + alpha * math.log(alpha / (1 - A))
        assert kl_mr == pytest.approx(closed, abs=1e-12)
        # random feasible points: Dirichlet draws rescaled to meet the constraint
        D = rng.dirichlet(np.ones(K), size=500)
        din = np.sum(np.where(C[i], D, 0), axis=1, keepdims=True)
        F = np.where(C[i], (1 - alpha) * D / din, alpha * D / (1 - din))
        assert all(_kl(f, P[i]) >= kl_mr - 1e-12 for f in F)
        # and small feasible perturbations of MR itself
        for _ in range(50):
            d = rng.normal(size=K) * 1e-3
            d[C[i]] -= d[C[i]].mean()
            d[~C[i]] -= d[~C[i]].mean()
            f = Q[i] + d
            if np.all(f > 0):
                assert _kl(f, P[i]) >= kl_mr - 1e-15


def test_mass_rescaling_degenerate_rows_unchanged():
    P = np.array([[0.999995, 0.000005, 0.0], [0.6, 0.3, 0.1], [0.6, 0.3, 0.1]])
    C = np.array([[True, False, False], [False, False, False], [True, True, True]])
    Q, deg = mass_rescale(P, C, 0.1)
    assert deg.tolist() == [True, True, True]
    np.testing.assert_array_equal(Q, P)
    Q2, deg2 = mass_rescale(P, C, 0.1, degenerate_tol=(1e-8, 0.0))
    assert deg2.tolist() == [False, True, True]
    assert Q2[0, 0] == pytest.approx(0.9, abs=1e-15)


def test_conformal_temperature_properties_and_hpr_identity():
    zc, yc, zt, yt = _setup(seed=5)
    ts = CAL.ConformalTemperature(conformal=CAL.SplitConformal(alpha=0.1)).fit(logits=zc,
                                                                            target=yc)
    sets = ts.predict_sets(logits=zt)
    sol = ts.temperatures(logits=zt)
    Q = ts.predict_proba(logits=zt)
    ok = sol.status == "ok"
    assert ok.mean() > 0.9
    mass = np.sum(np.where(sets, Q, 0), axis=1)
    assert np.all(mass[ok] >= 0.9 - 1e-12) and np.all(mass[ok] <= 0.9 + 1e-8)
    # order (hence argmax and accuracy) preserved
    np.testing.assert_array_equal(np.argsort(-Q, axis=1, kind="stable"),
                                  np.argsort(-zt, axis=1, kind="stable"))
    # HPR_{0.9} of the tempered prediction is the conformal set on solvable rows (G4), so
    # the alpha-suffix coverage equals the conformal coverage there
    hpr = nc.metrics.hpr_sets(Q, 0.1)
    np.testing.assert_array_equal(hpr[ok], sets[ok])
    # empty sets: unchanged by default, one-hot-like with 'sharpen'
    assert np.all(sol.tau[sol.status == "empty"] == 1.0)
    S = np.array([[2.0, 1.0, 0.0]])
    none = np.zeros((1, 3), dtype=bool)
    assert conformal_temperatures(S, none, 0.1).tau[0] == 1.0
    assert conformal_temperatures(S, none, 0.1, empty_set="sharpen").tau[0] == 1e-4
    # cap: |C| / K >= 1 - alpha holds at every temperature
    full = np.ones((1, 3), dtype=bool)
    cap = conformal_temperatures(S, full, 0.1)
    assert cap.status[0] == "cap" and cap.tau[0] == 1e6
    # solvable: the exact temperature by hand, softmax(s / tau)_0 = 0.9 for s = (2, 1, 0)
    one = np.array([[True, False, False]])
    tau = conformal_temperatures(S, one, 0.1).tau[0]
    e = np.exp(S[0] / tau)
    assert e[0] / e.sum() == pytest.approx(0.9, abs=1e-12)


def test_mr_and_ts_identical_on_singleton_msp_sets():
    # alpha large enough that the MSP threshold is below 0.5: every set has at most one
    # class, both maps put exactly 1 - alpha on it and leave empty sets alone
    zc, yc, zt, yt = _setup(seed=2)
    # the empty sets are MR's degenerate rows (left unchanged, reported)
    with pytest.warns(nc.NumericalWarning, match="degenerate"):
        mr = CAL.MassRescaling(conformal=CAL.SplitConformal(alpha=0.3),
                               degenerate_tol=(1e-8, 0.0)).fit(logits=zc, target=yc)
    ts = CAL.ConformalTemperature(conformal=CAL.SplitConformal(alpha=0.3)).fit(logits=zc,
                                                                            target=yc)
    n_empty = int(np.sum(mr.predict_sets(logits=zc).sum(axis=1) == 0))
    assert mr.row_status_counts_ == {"ok": 600 - n_empty, "degenerate": n_empty}
    assert ts.row_status_counts_["empty"] == n_empty
    sets = mr.predict_sets(logits=zt)
    assert sets.sum(axis=1).max() == 1 and mr.conformal_.quantile_ < 0.5
    with pytest.warns(nc.NumericalWarning, match="degenerate"):
        Qm = mr.predict_proba(logits=zt)
    Qt = ts.predict_proba(logits=zt)
    np.testing.assert_allclose(Qm.max(axis=1), Qt.max(axis=1), atol=1e-10)
    np.testing.assert_array_equal(Qm.argmax(axis=1), Qt.argmax(axis=1))
    for metric in (nc.ece, nc.mce):
        a = metric(Qm, yt, n_bins=25, interval=None)
        b = metric(Qt, yt, n_bins=25, interval=None)
        assert float(a) == pytest.approx(float(b), abs=1e-9)


def test_mr_can_reorder_but_ts_cannot():
    # MR's remark: with P_in > 1 - alpha an out-of-set class can overtake an in-set one
    P = np.array([[0.5, 0.46, 0.04]])
    C = np.array([[True, True, False]])
    Q, _ = mass_rescale(P, C, 0.5)
    assert Q[0, 2] > Q[0, 1]


def test_adaptive_threshold_keeps_marginal_coverage():
    covers = []
    for r in range(3):
        zc, yc, zt, yt = _setup(n=2600, K=16, seed=20 + r)
        cp = CAL.SplitConformal(alpha=0.2, threshold="adaptive", ada_hidden=(16, 16),
                                ada_steps=300, seed=r).fit(logits=zc, target=yc)
        assert cp.status_ == "ok" and cp.n_quantile_ == 300
        S = cp.predict_sets(logits=zt)
        covers.append(S[np.arange(yt.size), yt].mean())
    c = math.ceil(0.8 * 301) / 301
    assert abs(np.mean(covers) - c) < 4 * math.sqrt(c * (1 - c) / 301 / 3 + 0.16 / 6000)


def test_naive_cmce_temperature_and_accuracy():
    zc, yc, zt, yt = _setup(seed=4)
    nv = CAL.NaiveCMCETemperature(grid="log").fit(logits=zc, target=yc)
    # independently of fit's loop: the public CMCE at the chosen temperature is the
    # recorded minimum, and no other tried temperature (every 10th) does better
    def cmce_at(t):
        Q = np.exp(zc / t - (zc / t).max(axis=1, keepdims=True))
        return float(nc.cmce(Q / Q.sum(axis=1, keepdims=True), yc, interval=None))

    best = cmce_at(nv.temperature_)
    assert best == pytest.approx(nv.cmce_.min(), abs=1e-12)
    assert all(cmce_at(t) >= best for t in nv.grid_[::10])
    # it divides the over-confident logits roughly by their factor 2.5
    assert 1.5 < nv.temperature_ < 4
    Q = nv.predict_proba(logits=zt)
    np.testing.assert_array_equal(Q.argmax(1), zt.argmax(1))
    base = float(nc.cmce(logits=zt, target=yt, interval=None))
    assert float(nc.cmce(Q, yt, interval=None)) < base
    ref = CAL.NaiveCMCETemperature().fit(logits=zc, target=yc)
    assert ref.grid_.size == 100 and ref.grid_[1] == pytest.approx(1.0111, abs=1e-4)


def test_one_vs_rest_platt():
    rng = np.random.default_rng(9)
    Z = rng.normal(size=(600, 4)) * 2
    y = (np.exp(Z).cumsum(1) / np.exp(Z).sum(1, keepdims=True) > rng.random((600, 1))).argmax(1)
    cal = CAL.OneVsRestPlatt().fit(logits=Z, target=y)
    P = cal.predict_proba(logits=Z)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    # each class map is the binary Platt fit of 1{y = k} on z_k
    b = CAL.PlattScaling().fit(logits=Z[:, 2], target=(y == 2).astype(int))
    assert cal.slope_[2] == pytest.approx(b.slope_, rel=1e-6)
    # a class absent from the calibration data is reported
    y3 = np.where(y == 3, 0, y)
    with pytest.warns(nc.IdentifiabilityWarning):
        bad = CAL.OneVsRestPlatt().fit(logits=Z, target=y3)
    assert bad.status_ == "class_not_ok" and bad.class_status_[3] != "ok"


def test_soft_target_refused_for_conformal():
    P = np.full((10, 3), 1 / 3)
    with pytest.raises(ValueError, match="target"):
        CAL.SplitConformal().fit(probs=P, target=np.full((10, 3), 1 / 3))


def test_infinite_quantile_status():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cp = CAL.SplitConformal(alpha=0.05).fit(probs=np.array([[0.6, 0.4]] * 5),
                                                target=[0, 1, 0, 0, 1])
    assert cp.status_ == "infinite_quantile" and cp.quantile_ == math.inf
    assert cp.predict_sets(probs=np.array([[0.9, 0.1]])).all()


@pytest.mark.filterwarnings("ignore:MassRescaling.*degenerate:noisycal.NumericalWarning")
def test_shared_set_builder_at_another_alpha():
    zc, yc, zt, yt = _setup(seed=6)
    shared = CAL.SplitConformal(alpha=0.3).fit(logits=zc, target=yc)
    for alpha in (0.05, 0.1):
        sets = CAL.SplitConformal(alpha=alpha)
        direct = CAL.MassRescaling(conformal=sets).fit(logits=zc, target=yc)
        reused = CAL.MassRescaling(conformal=sets).fit(logits=zc, target=yc, prefit=shared)
        assert reused.conformal_.quantile_ == direct.conformal_.quantile_
        assert reused.row_status_counts_ == direct.row_status_counts_
        np.testing.assert_array_equal(reused.predict_proba(logits=zt),
                                      direct.predict_proba(logits=zt))
    assert shared.alpha_ == 0.3  # the shared builder is not modified
    assert not hasattr(sets, "quantile_")  # nor the map's builder (a copy is fitted)
    with pytest.raises(ValueError, match="other settings"):
        CAL.ConformalTemperature(conformal=CAL.SplitConformal(score="aps")).fit(
            logits=zc, target=yc, prefit=shared)


def test_one_vs_rest_isotonic():
    rng = np.random.default_rng(10)
    Z = rng.normal(size=(500, 3)) * 2
    P0 = np.exp(Z) / np.exp(Z).sum(1, keepdims=True)
    y = (P0.cumsum(1) > rng.random((500, 1))).argmax(1)
    cal = CAL.OneVsRestIsotonic().fit(logits=Z, target=y)
    P = cal.predict_proba(logits=Z)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    # before renormalising, class k's column is the binary isotonic fit of 1{y = k} on p_k
    b = CAL.IsotonicCalibration().fit(probs=P0[:, 1], target=(y == 1).astype(float))
    np.testing.assert_allclose(cal.maps_[1].predict_proba(probs=P0[:, 1]),
                               b.predict_proba(probs=P0[:, 1]))
    with pytest.warns(nc.IdentifiabilityWarning):
        bad = CAL.OneVsRestIsotonic().fit(logits=Z, target=np.where(y == 2, 0, y))
    assert bad.status_ == "class_not_ok" and bad.class_status_[2] == "constant"


def test_mass_rescaling_reports_degenerate_rows():
    # at alpha = 0.01 on the 49-class toy most calibration sets hold (almost) all the
    # mass, so mass_rescale leaves those rows unchanged: fit says so, predict warns
    zc, yc, zt, _ = _setup(seed=5)
    with pytest.warns(nc.NumericalWarning, match=r"rows are degenerate"):
        mr = CAL.MassRescaling(conformal=CAL.SplitConformal(alpha=0.01)).fit(logits=zc,
                                                                              target=yc)
    sets = mr.predict_sets(logits=zc)
    P = np.exp(zc - zc.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    p_in = np.where(sets, P, 0).sum(axis=1)
    expect = int(np.sum((p_in <= 1e-8) | (1 - p_in <= 1e-5 + 1e-8)))
    assert expect > 0
    assert mr.row_status_counts_ == {"ok": 600 - expect, "degenerate": expect}
    assert mr.status_ == "degenerate_rows" and f"{expect} of 600 rows" in mr.message_
    with pytest.warns(nc.NumericalWarning, match=rf"MassRescaling: {expect} of 600 rows"):
        mr.predict_proba(logits=zc)
    # a level at which no row is degenerate: status 'ok', no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = CAL.MassRescaling(conformal=CAL.SplitConformal(alpha=0.1),
                               degenerate_tol=(0.0, 0.0)).fit(logits=zc, target=yc)
    assert ok.status_ == "ok" and ok.row_status_counts_ == {"ok": 600}


def test_run_protocol_builds_each_methods_own_set_builder():
    # the shared set builder takes each method's own settings: methods with a non-default
    # ada_steps run (they were refused with "other settings" before), and the reused
    # builder gives the method's direct fit on the same split
    from noisycal.experiments.set_mass import default_methods, run_protocol, splits

    zc, yc, _, _ = _setup(n=900, K=5, seed=7)
    methods = default_methods(alphas=(0.1, 0.3), thresholds=("adaptive",), baselines=False,
                              ada_steps=4)
    df = run_protocol(zc, yc, methods, n_splits=1, cal_fraction=0.5)
    assert sorted(df["method"]) == sorted(methods)
    ic, it = next(splits(yc.size, n_splits=1, cal_fraction=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = CAL.ConformalTemperature(conformal=CAL.SplitConformal(
            alpha=0.3, threshold="adaptive", ada_steps=4, seed=0)).fit(logits=zc[ic],
                                                                      target=yc[ic])
        P = direct.predict_proba(logits=zc[it])
    row = df[df["method"] == "TS (ours) a=0.3 MSP Ada"].iloc[0]
    from noisycal.experiments.set_mass import evaluate

    assert row["HPR coverage"] == evaluate(P, yc[it], alpha=0.3)["HPR coverage"]


@pytest.mark.parametrize("score", ["msp", "aps"])
def test_probs_and_log_probs_give_the_same_sets(score):
    # K = 5000 classes, most probabilities below the floor eps = 1e-6: the sets and the
    # quantile are built on P itself, so probs=P and logits=log P agree (to rounding of
    # softmax(log P)); a floor renormalising P would move the APS scores by ~K * eps
    rng = np.random.default_rng(11)
    n, K = 300, 5000
    z = rng.normal(size=(n, K)) * 3.0
    z[np.arange(n), rng.integers(0, K, n)] += 30.0
    P = np.exp(z - z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    assert np.mean(P < 1e-6) > 0.9
    y = np.array([rng.choice(K, p=p) for p in P])
    a = CAL.SplitConformal(alpha=0.1, score=score).fit(probs=P, target=y)
    b = CAL.SplitConformal(alpha=0.1, score=score).fit(logits=np.log(P), target=y)
    assert a.quantile_ == pytest.approx(b.quantile_, abs=1e-12)
    np.testing.assert_allclose(a.scores_, nonconformity(P, y, score, u=a.u_), atol=0, rtol=0)
    assert (a.u_ is None) == (score == "msp")
    np.testing.assert_array_equal(a.predict_sets(probs=P), b.predict_sets(logits=np.log(P)))
    # MR rescales exactly the P its sets were built on: in-set mass is 1 - alpha
    mr = CAL.MassRescaling(conformal=CAL.SplitConformal(alpha=0.1, score=score,
                                                        randomized=False),
                           degenerate_tol=(0.0, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        Q = mr.fit(probs=P, target=y).predict_proba(probs=P)
    sets = mr.predict_sets(probs=P)
    ok = sets.any(axis=1) & ~sets.all(axis=1)
    np.testing.assert_allclose(np.where(sets, Q, 0).sum(axis=1)[ok], 0.9, atol=1e-12)


def test_conformal_temperature_names_cap_and_unreachable_rows():
    from noisycal.calibrators.conformal.maps import _unsolved_rows

    # row 0: the full set holds 1 - alpha at every temperature (cap); row 1: class 0 is
    # in the set but tied with class 1 outside it, so its mass never exceeds 1/2 < 0.9
    # (unreachable); row 2 solvable
    S = np.array([[2.0, 1.0, 0.0], [1.0, 1.0, 0.0], [2.0, 1.0, 0.0]])
    sets = np.array([[True, True, True], [True, False, False], [True, False, False]])
    sol = conformal_temperatures(S, sets, 0.1)
    assert sol.status.tolist() == ["cap", "unreachable", "ok"]
    assert sol.tau[0] == 1e6 and sol.tau[1] == 1e-4
    kind, why = _unsolved_rows(sol.status)
    assert kind == "cap_and_unreachable"
    assert "1 hold at least 1 - alpha" in why and "1 never reach 1 - alpha" in why
    assert _unsolved_rows(sol.status[1:])[0] == "unreachable"
    assert _unsolved_rows(sol.status[2:]) == ("ok", "")
    # a fitted map warns with the counts of its cap rows (3 classes, alpha = 0.03: many
    # full sets)
    rng = np.random.default_rng(0)
    zc = rng.normal(size=(60, 3)) * 2
    yc = rng.integers(0, 3, 60)
    with pytest.warns(nc.IdentifiabilityWarning, match="calibration rows"):
        ts = CAL.ConformalTemperature(conformal=CAL.SplitConformal(alpha=0.03)).fit(
            logits=zc, target=yc)
    n_cap = ts.row_status_counts_.get("cap", 0)
    assert n_cap > 0 and ts.status_.startswith("cap")
    assert f"{n_cap} hold at least 1 - alpha" in ts.message_
    with pytest.warns(nc.NumericalWarning, match=rf"of 60 rows, {n_cap} hold at least"):
        ts.predict_proba(logits=zc)
