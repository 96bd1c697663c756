"""Inductive Venn-Abers predictors: the precomputed tables against a brute-force refit of
the isotonic regression, a hand case, the aggregations, one-vs-rest, the calibrator
protocol, and the ``venn-abers`` package when it is installed."""

import pickle
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.calibrators.venn_abers import ivap_tables

VA = nc.calibrators.VennAbers


def _pava_at(x, y, s, label):
    """Brute force: the isotonic regression of the data plus (s, label), read at s
    (equal scores pooled into one weighted point, then the stack PAV)."""
    xs, ys = np.append(x, s), np.append(y, label)
    u, inv = np.unique(xs, return_inverse=True)
    w = np.bincount(inv).astype(float)
    c = np.bincount(inv, weights=ys)
    blocks = []  # [label sum, weight, number of distinct scores]
    for i in range(u.size):
        blocks.append([c[i], w[i], 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            a = blocks.pop()
            blocks[-1] = [blocks[-1][0] + a[0], blocks[-1][1] + a[1], blocks[-1][2] + a[2]]
    fitted = np.concatenate([[b[0] / b[1]] * b[2] for b in blocks])
    return fitted[np.searchsorted(u, s)]


def _lookup(tables, s):
    u, p0, p1 = tables
    return p0[np.searchsorted(u, s, side="right")], p1[np.searchsorted(u, s, side="left")]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("soft", [False, True])
def test_tables_equal_a_brute_force_refit(ties, soft):
    rng = np.random.default_rng(7 + 2 * ties + soft)
    worst = 0.0
    for _ in range(150):
        n = int(rng.integers(1, 25))
        x = rng.integers(0, 6, n).astype(float) if ties else rng.normal(size=n)
        y = rng.random(n) if soft else (rng.random(n) < 0.5).astype(float)
        tables = ivap_tables(x, y)
        u = tables[0]
        # every distinct score, every gap, both ends
        tests = np.concatenate([u, (u[:-1] + u[1:]) / 2, [u[0] - 1.0, u[-1] + 1.0]])
        for s in tests:
            p0, p1 = _lookup(tables, s)
            worst = max(worst, abs(p0 - _pava_at(x, y, s, 0.0)),
                        abs(p1 - _pava_at(x, y, s, 1.0)))
    assert worst <= 1e-12


def test_tables_on_a_larger_sample_equal_the_refit():
    rng = np.random.default_rng(3)
    x = np.round(rng.random(3000), 3)  # many ties
    y = (rng.random(3000) < x**2).astype(float)
    tables = ivap_tables(x, y)
    for s in rng.random(25):
        p0, p1 = _lookup(tables, s)
        assert abs(p0 - _pava_at(x, y, s, 0.0)) <= 1e-12
        assert abs(p1 - _pava_at(x, y, s, 1.0)) <= 1e-12


def test_hand_case():
    # data (1, 0), (2, 1), (3, 0); the test score 2.5:
    #   label 1: 0, 1, [1], 0 -> PAV pools (1, 1, 0) -> p1 = 2/3
    #   label 0: 0, 1, [0], 0 -> PAV pools (1, 0, 0) -> p0 = 1/3
    # at 0.05: [1], 0, 1, 0 -> p1 = 1/2, [0], 0, 1, 0 -> p0 = 0; at 0.35: 0, 1, 0, [1]
    # -> p1 = 1, 0, 1, 0, [0] -> p0 = 1/3
    va = VA().fit(probs=np.array([0.1, 0.2, 0.3]), target=np.array([0, 1, 0]))
    p0, p1 = va.predict_interval(probs=np.array([0.25, 0.05, 0.35]))
    np.testing.assert_allclose(p0, [1 / 3, 0.0, 1 / 3], atol=1e-15)
    np.testing.assert_allclose(p1, [2 / 3, 0.5, 1.0], atol=1e-15)
    # log-loss aggregation p1 / (1 - p0 + p1) = (2/3) / (4/3)
    np.testing.assert_allclose(va.predict_proba(probs=np.array([0.25])), [0.5], atol=1e-15)
    brier = VA(aggregation="brier").fit(probs=np.array([0.1, 0.2, 0.3]),
                                        target=np.array([0, 1, 0]))
    np.testing.assert_allclose(brier.predict_proba(probs=np.array([0.25])),
                               [2 / 3 + (1 / 9 - 4 / 9) / 2], atol=1e-15)
    mean = VA(aggregation="mean").fit(probs=np.array([0.1, 0.2, 0.3]),
                                      target=np.array([0, 1, 0]))
    np.testing.assert_allclose(mean.predict_proba(probs=np.array([0.25])), [0.5], atol=1e-15)


def test_interval_is_ordered_and_monotone_in_the_score():
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    va = VA().fit(probs=s, target=y)
    grid = np.linspace(0, 1, 501)
    p0, p1 = va.predict_interval(probs=grid)
    assert np.all(p0 <= p1) and np.all(np.diff(p0) >= 0) and np.all(np.diff(p1) >= 0)
    assert np.all((p0 >= 0) & (p1 <= 1)) and np.all(p1 > 0)
    # the interval narrows like 1/n: its width is at most 1 / (size of the pooled block)
    assert np.median(p1 - p0) < 0.05


def test_recalibrates_a_miscalibrated_score():
    # P(y = 1 | s) = s^2: the raw score is off by up to 0.25, Venn-Abers is close
    rng = np.random.default_rng(11)
    s_cal, s_test = rng.random(4000), rng.random(20000)
    y_cal = (rng.random(4000) < s_cal**2).astype(int)
    q = VA().fit(probs=s_cal, target=y_cal).predict_proba(probs=s_test)
    assert np.max(np.abs(s_test - s_test**2)) > 0.24
    assert np.mean(np.abs(q - s_test**2)) < 0.02


def test_one_vs_rest_is_per_class_ivap_then_renormalised():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(600, 4)) * 2
    P = np.exp(Z) / np.exp(Z).sum(1, keepdims=True)
    y = (P.cumsum(1) > rng.random((600, 1))).argmax(1)
    va = VA().fit(logits=Z[:400], target=y[:400])
    assert va.status_ == "ok" and va.n_classes_ == 4 and not va.binary_
    out = va.predict_proba(logits=Z[400:])
    q = np.empty((200, 4))
    for k in range(4):
        p0, p1 = _lookup(ivap_tables(P[:400, k], (y[:400] == k).astype(float)), P[400:, k])
        q[:, k] = p1 / (1 - p0 + p1)
    np.testing.assert_allclose(out, q / q.sum(1, keepdims=True), rtol=0, atol=1e-15)
    np.testing.assert_allclose(out.sum(1), 1.0, atol=1e-15)
    p0, p1 = va.predict_interval(logits=Z[400:])
    assert p0.shape == (200, 4) and np.all(p0 <= p1)
    # probs= of the same rows gives the same maps (they act on the softmax probability)
    np.testing.assert_allclose(VA().fit(probs=P[:400], target=y[:400])
                               .predict_proba(probs=P[400:]), out, atol=1e-12)


def test_binary_logits_and_probs_agree():
    rng = np.random.default_rng(2)
    z = rng.normal(size=300)
    y = (rng.random(300) < 1 / (1 + np.exp(-2 * z))).astype(int)
    a = VA().fit(logits=z, target=y).predict_proba(logits=z)
    b = VA().fit(probs=1 / (1 + np.exp(-z)), target=y).predict_proba(probs=1 / (1 + np.exp(-z)))
    assert a.shape == (300,)
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_absent_class_is_reported_and_predictions_stay_defined():
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(300, 3))
    y = rng.integers(0, 2, 300)  # class 2 never occurs
    with pytest.warns(nc.IdentifiabilityWarning, match="1 of 3 class fits"):
        va = VA().fit(logits=Z, target=y)
    assert va.status_ == "class_not_ok" and va.class_status_ == ["ok", "ok", "no_positive"]
    p0, p1 = va.predict_interval(logits=Z)
    assert np.all(p0[:, 2] == 0) and np.all(p1[:, 2] > 0)
    P = va.predict_proba(logits=Z)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(1), 1.0)


def test_target_status_travels():
    rng = np.random.default_rng(1)
    z = rng.random(40)
    y = (rng.random(40) < z).astype(int)
    bad = nc.targets.Target(np.eye(2)[y], "posterior", status="not_converged",
                            message="EM stopped early")
    with pytest.warns(nc.IdentifiabilityWarning, match="EM stopped early"):
        va = VA().fit(probs=z, target=bad)
    assert va.status_ == "target_not_ok"


def test_soft_targets_are_accepted_and_corrected_ones_outside_01_refused():
    rng = np.random.default_rng(6)
    z = rng.random(50)
    soft = np.column_stack([1 - z**2, z**2])
    va = VA().fit(probs=z, target=soft)
    u, p0, p1 = ivap_tables(z, z**2)
    np.testing.assert_array_equal(va.p1_[0], p1)
    T = soft.copy()
    T[0] = [1.2, -0.2]
    with pytest.raises(ValueError, match="target must lie in \\[0, 1\\]"):
        VA().fit(probs=z, target=T)


def test_bad_inputs_raise_value_errors_naming_the_argument():
    z, y = np.linspace(0.1, 0.9, 9), np.array([0, 1] * 4 + [1])
    with pytest.raises(ValueError, match="aggregation"):
        VA(aggregation="geometric").fit(probs=z, target=y)
    with pytest.raises(ValueError, match="eps"):
        VA(eps=0.0).fit(probs=z, target=y)
    with pytest.raises(ValueError, match="probs"):
        VA().fit(probs=z + 1, target=y)
    with pytest.raises(ValueError, match="target"):
        VA().fit(probs=z, target=y[:5])
    with pytest.raises(nc.calibrators.NotFittedError):
        VA().predict_proba(probs=z)
    va = VA().fit(probs=z, target=y)
    with pytest.raises(ValueError, match="probs must have the shape"):
        va.predict_proba(probs=np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="scores must be finite"):
        ivap_tables(np.array([0.0, np.nan]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="labels must lie in"):
        ivap_tables(np.array([0.0, 1.0]), np.array([0.0, 2.0]))


def test_follows_the_estimator_protocol():
    sk_base = pytest.importorskip("sklearn.base")
    rng = np.random.default_rng(9)
    Z = rng.normal(size=(200, 3))
    y = rng.integers(0, 3, 200)
    est = VA(aggregation="brier")
    assert est.get_params() == {"aggregation": "brier", "eps": 1e-6}
    assert repr(est) == "VennAbers(aggregation='brier')"
    P = est.fit(logits=Z, target=y).predict_proba(logits=Z)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(logits=Z), P)
    np.testing.assert_array_equal(sk_base.clone(est).fit(logits=Z, target=y)
                                  .predict_proba(logits=Z), P)
    assert est.__sklearn_tags__().input_tags.two_d_array


def test_agrees_with_the_venn_abers_package():
    va_pkg = pytest.importorskip("venn_abers")
    rng = np.random.default_rng(12)
    # binary, with ties
    s = np.round(rng.random(500), 2)
    y = (rng.random(500) < s).astype(int)
    t = np.concatenate([rng.random(300), s[:50]])
    ref = va_pkg.VennAbers().fit(np.column_stack([1 - s, s]), y)
    p_ref, p01 = ref.predict_proba(np.column_stack([1 - t, t]))
    ours = VA().fit(probs=s, target=y)
    p0, p1 = ours.predict_interval(probs=t)
    np.testing.assert_allclose(p0, p01[:, 0], atol=1e-12)
    np.testing.assert_allclose(p1, p01[:, 1], atol=1e-12)
    np.testing.assert_allclose(ours.predict_proba(probs=t), p_ref[:, 1], atol=1e-12)
    # one-vs-rest on pre-fitted probabilities
    Z = rng.normal(size=(900, 5)) * 1.5
    P = np.exp(Z) / np.exp(Z).sum(1, keepdims=True)
    lab = (P.cumsum(1) > rng.random((900, 1))).argmax(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package's own numpy warnings
        p_pkg, _ = va_pkg.venn_abers.predict_proba_prefitted_va(P[:500], lab[:500], P[500:],
                                                                va_tpe="one_vs_rest")
    np.testing.assert_allclose(VA().fit(probs=P[:500], target=lab[:500])
                               .predict_proba(probs=P[500:]), p_pkg, atol=1e-12)
