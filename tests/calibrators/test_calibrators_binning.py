"""Top-label histogram binning, hard and soft (HB-Hard, HB-Soft of "Confidence Calibration
under Ambiguous Ground Truth").

Exact checks: HB-Soft on one-hot targets is HB-Hard; bin values are the per-bin means of
the target's mass on the predicted class, computed here by a plain loop; the rebuilt
vector keeps the other classes' ratios; logits and their softmax give the same map; the
empty-bin rules. Simulation with known truth: HB-Hard on labels drawn from the soft
target agrees with HB-Soft within binomial error. Statuses: a failed target travels.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

import noisycal as nc

C = nc.calibrators


def _problem(n=3000, K=5, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, K)) * 2.5
    pi = rng.dirichlet(np.ones(K) * 0.7, size=n)  # soft targets
    y = (pi.cumsum(1) > rng.random((n, 1))).argmax(1)  # labels drawn from them
    return Z, pi, y


def test_soft_on_one_hot_targets_is_exactly_the_hard_fit():
    Z, _, y = _problem()
    hard = C.HistogramBinning(n_bins=15).fit(logits=Z, target=y)
    soft = C.HistogramBinning(n_bins=15).fit(logits=Z, target=np.eye(5)[y])
    np.testing.assert_array_equal(soft.values_, hard.values_)
    np.testing.assert_array_equal(soft.counts_, hard.counts_)
    np.testing.assert_array_equal(soft.predict_proba(logits=Z), hard.predict_proba(logits=Z))
    # a one-hot Target of kind 'soft' as well
    t = nc.targets.from_matrix(np.eye(5)[y], kind="soft")
    np.testing.assert_array_equal(C.HistogramBinning(n_bins=15).fit(logits=Z, target=t)
                                  .values_, hard.values_)


def test_bin_values_are_the_mean_target_mass_on_the_predicted_class():
    Z, pi, _ = _problem(n=500, K=4, seed=1)
    P = softmax(Z, axis=1)
    J = 8
    h = C.HistogramBinning(n_bins=J).fit(probs=P, target=pi)
    c = P.argmax(1)
    conf = P.max(1)
    for j in range(J):  # bins [j/J, (j+1)/J), the last one closed
        inside = (conf >= j / J) & ((conf < (j + 1) / J) | (j == J - 1))
        assert h.counts_[j] == inside.sum()
        if inside.any():
            assert h.values_[j] == pytest.approx(pi[inside, c[inside]].mean(), abs=1e-15)
        else:
            assert h.values_[j] == pytest.approx(pi[np.arange(500), c].mean(), abs=1e-15)
    assert h.status_ == "ok" and not h.binary_ and h.n_classes_ == 4


def test_rebuilt_vector_keeps_the_predicted_class_and_the_other_ratios():
    Z, pi, _ = _problem(n=400, K=4, seed=2)
    P = softmax(Z, axis=1)
    h = C.HistogramBinning(n_bins=10).fit(probs=P, target=pi)
    Q = h.predict_proba(probs=P)
    rows, c = np.arange(400), P.argmax(1)
    g = h.predict_confidence(probs=P)
    np.testing.assert_allclose(Q.sum(1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(Q[rows, c], g)
    other = np.ones_like(P, dtype=bool)
    other[rows, c] = False
    ratio = (Q[other] / P[other]).reshape(400, 3)
    np.testing.assert_allclose(ratio, ((1 - g) / (1 - P[rows, c]))[:, None] * np.ones(3),
                               rtol=1e-12)
    # logits and their softmax give the same map and the same predictions
    by_logits = C.HistogramBinning(n_bins=10).fit(logits=Z, target=pi)
    np.testing.assert_allclose(by_logits.values_, h.values_, atol=1e-15)
    np.testing.assert_allclose(by_logits.predict_proba(logits=Z), Q, atol=1e-12)


def test_hard_labels_drawn_from_the_soft_target_agree_with_hb_soft():
    # E[1(y = c) | x] = pi_c, so each HB-Hard bin estimates the HB-Soft bin value; the
    # difference is within 4 binomial standard errors in every populated bin
    Z, pi, y = _problem(n=40_000, K=3, seed=3)
    hard = C.HistogramBinning(n_bins=15).fit(logits=Z, target=y)
    soft = C.HistogramBinning(n_bins=15).fit(logits=Z, target=pi)
    ok = hard.counts_ >= 30
    assert ok.sum() >= 8
    se = np.sqrt(soft.values_ * (1 - soft.values_) / np.maximum(hard.counts_, 1))
    assert np.all(np.abs(hard.values_ - soft.values_)[ok] <= 4 * se[ok] + 1e-12)


def test_top_label_hb_calibrates_the_confidence_to_the_soft_target():
    # an overconfident model of a soft target: pi = softmax(z / 2). After HB-Soft, every
    # HB bin maps to the mean pi_c of its items, so the gap between the calibrated
    # confidence of the kept class c and pi_c, grouped by calibrated value, is exactly 0
    Z, _, _ = _problem(n=20_000, K=4, seed=4)
    pi = softmax(Z / 2, axis=1)
    h = C.HistogramBinning(n_bins=15).fit(logits=Z, target=pi)
    Q = h.predict_proba(logits=Z)
    rows, c = np.arange(Z.shape[0]), Z.argmax(1)
    g = Q[rows, c]
    gaps = [abs(g[g == v].mean() - pi[rows, c][g == v].mean()) for v in np.unique(g)]
    assert max(gaps) < 1e-12
    # nc.ece takes the argmax of the rebuilt vector, which leaves c where the runner-up
    # gets more than g (18 % of items here): the measured top-label ECE against pi still
    # falls from 16.7 % to 2.2 %
    before = float(nc.ece(softmax(Z, axis=1), pi, n_bins=15, interval=None))
    after = float(nc.ece(Q, pi, n_bins=15, interval=None))
    assert before == pytest.approx(0.1667, abs=5e-4)
    assert after == pytest.approx(0.0224, abs=5e-4)


def test_empty_bin_rules():
    P = np.array([[0.9, 0.05, 0.05], [0.95, 0.03, 0.02], [0.4, 0.35, 0.25]])
    y = np.array([0, 1, 0])
    with pytest.warns(nc.IdentifiabilityWarning, match="only 3 fitting item"):
        mean = C.HistogramBinning(n_bins=4).fit(probs=P, target=y)
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        center = C.HistogramBinning(n_bins=4, empty_bins="center").fit(probs=P, target=y)
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        ident = C.HistogramBinning(n_bins=4, empty_bins="identity").fit(probs=P, target=y)
    # populated bins: [0.25, 0.5) holds 0.4 (correct), [0.75, 1] holds 0.9 and 0.95 (1 of 2)
    for h in (mean, center, ident):
        assert h.values_[1] == 1.0 and h.values_[3] == 0.5
        np.testing.assert_array_equal(h.counts_, [0, 1, 0, 2])
    assert mean.values_[0] == mean.values_[2] == pytest.approx(2 / 3)
    assert center.values_[[0, 2]].tolist() == [0.125, 0.625]
    assert np.isnan(ident.values_[[0, 2]]).all()
    q = np.array([[0.6, 0.3, 0.1]])  # confidence 0.6, an empty bin
    assert ident.predict_confidence(probs=q)[0] == 0.6
    np.testing.assert_allclose(ident.predict_proba(probs=q), q, atol=1e-15)
    assert center.predict_confidence(probs=q)[0] == 0.625
    # binary histogram with the identity rule keeps scores in empty bins
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        hb = C.HistogramBinning(n_bins=4, empty_bins="identity").fit(
            probs=np.array([0.1, 0.2, 0.9]), target=np.array([0, 1, 1]))
    np.testing.assert_array_equal(hb.predict_proba(probs=np.array([0.15, 0.6, 0.8])),
                                  [0.5, 0.6, 1.0])


def test_failed_target_status_travels_into_the_histogram():
    Z, pi, _ = _problem(n=300, K=3, seed=5)
    bad = nc.targets.Target(pi, "posterior", status="not_converged",
                            message="EM stopped early")
    with pytest.warns(nc.IdentifiabilityWarning, match="not_converged"):
        h = C.HistogramBinning().fit(logits=Z, target=bad)
    assert h.status_ == "target_not_ok" and "EM stopped early" in h.message_


def test_bound_is_for_the_binary_histogram_only():
    Z, pi, _ = _problem(n=300, K=3, seed=6)
    h = C.HistogramBinning().fit(logits=Z, target=pi)
    with pytest.raises(ValueError, match="bound\\(\\) holds for the binary"):
        h.bound(pi)


def test_comparison_table_has_the_hb_ats_and_ir_soft_rows():
    # the three-Gaussian toy of the paper (Section 4), logits of the voted-label Bayes
    # classifier scaled by 0.6 (underconfident, as the paper's MLP): the soft top-label
    # maps fix the true-label ECE that the voted ones leave high. Measured: expected
    # true-label ECE TS 9.7 %, ATS 10.2 %, HB 10.2 %, HB-Soft 1.4 %, IR-Soft 1.3 %
    A = nc.ambiguity
    cal, test = A.three_gaussians(500, seed=1), A.three_gaussians(500, seed=2)
    tab = A.compare_calibrators(
        logits_cal=0.6 * cal.log_density, target_cal=cal.distribution,
        logits_test=0.6 * test.log_density, target_test=test.distribution,
        methods=["TS", "ATS", "HB", "HB-Soft", "IR-Soft"], n_draws=20, seed=0,
    ).set_index("method")
    assert (tab["status"] == "ok").all()
    ece = tab["ece_true_expected"]
    assert max(ece["HB-Soft"], ece["IR-Soft"]) < min(ece["HB"], ece["ATS"], ece["TS"]) / 3
    # the voted maps calibrate against the voted labels instead
    assert max(tab.loc[["TS", "ATS", "HB"], "ece_voted"]) < 0.03
    # ATS reports the mean per-item temperature on the test items, close to TS here
    assert abs(tab.loc["ATS", "T"] - tab.loc["TS", "T"]) < 0.1
    assert np.isnan(tab.loc["HB", "T"])


def test_top_label_rebuild_sums_to_one_when_the_top_mass_rounds_near_one():
    # 1 - p_top is 1.1e-16 while the other classes hold 3e-16 (the row sums to 1 within
    # rounding): the remainder must be the others' own sum, or the row sums to 1.0085 here.
    from noisycal.calibrators._toplabel import top_label_rebuild
    P = np.array([[1.0 - 2.0**-53, 1e-16, 2e-16, 0.0],
                  [0.7, 0.2, 0.1, 0.0]])
    Q = top_label_rebuild(P, np.array([0, 0]), np.array([0.995, 0.8]))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(Q[0, 1:3], [0.005 / 3, 0.010 / 3], rtol=1e-12)
    np.testing.assert_allclose(Q[1], [0.8, 0.2 * 2 / 3, 0.1 * 2 / 3, 0.0], rtol=1e-12)
