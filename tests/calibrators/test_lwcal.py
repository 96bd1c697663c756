"""LWCal, Gated-LWCal and TrimCal ("LWCal: Loss-Weighted Calibration for Tabular Classifiers
with Noisy Calibration Labels", Eq. 1-3, 5-6).

References: the weight formula's properties (w = 0.5 at the median loss, floor from
l >= m + ln(19) 1.4826 s, order invariance, the s = 0 and all-equal cases), hand-computed
weights and gates, the paper's reference pipeline with scikit-learn's weighted
``IsotonicRegression`` as peer, and seeded simulations with clean labels known.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import noisycal as nc
from noisycal.calibrators.lwcal import disagreement, gate, lwcal_weights, noisy_label_loss

C = nc.calibrators


def _noisy(seed, n=600, eta=0.2):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, n)
    p = 1 / (1 + np.exp(-0.6 * z))                   # under-confident scores
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    return p, y, np.where(rng.random(n) < eta, 1 - y, y)


# ------------------------------------------------------------------ Eq. 1 and Eq. 2
def test_loss_and_weights_by_hand():
    p = np.array([0.9, 0.8, 0.3, 0.6, 0.1])
    y = np.array([1, 1, 1, 0, 0])
    losses = noisy_label_loss(p, y)
    np.testing.assert_allclose(losses, [-math.log(0.9), -math.log(0.8), -math.log(0.3),
                                        -math.log(0.4), -math.log(0.9)], rtol=1e-15)
    w, m, s = lwcal_weights(losses)
    m_ref = -math.log(0.8)                                          # the middle value
    s_ref = sorted(abs(v - m_ref) for v in losses)[2]               # raw MAD
    assert m == pytest.approx(m_ref, rel=1e-15) and s == pytest.approx(s_ref, rel=1e-15)
    ref = [min(1.0, max(0.05, 1 / (1 + math.exp((v - m_ref) / (1.4826 * s_ref + 1e-12)))))
           for v in losses]
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-12)
    assert w[1] == 0.5                                              # at the median loss
    # the loss is clipped inside the log only: exact 0/1 scores give a finite loss
    assert noisy_label_loss(np.array([0.0, 1.0]), np.array([1, 0])) == \
        pytest.approx([-math.log(1e-12)] * 2)


def test_weight_floor_binds_from_m_plus_4_365_s():
    base = np.array([0.0, 1.0, 2.0, 3.0, 4.0])        # m = 2, raw MAD s = 1
    c = math.log(19) * 1.4826                          # 4.3654...
    assert c == pytest.approx(4.365, abs=5e-4)
    below = lwcal_weights(np.concatenate([base, [2.0 + 0.999 * c, 2.0 - 1.0]]))[0]
    above = lwcal_weights(np.concatenate([base, [2.0 + 1.001 * c, 2.0 - 1.0]]))[0]
    assert below[5] > 0.05 and above[5] == 0.05
    w = lwcal_weights(np.concatenate([base, [50.0, -50.0]]))[0]
    assert w.min() >= 0.05 and w.max() <= 1.0
    assert w[5] == 0.05 and 0.5 < w[6] < 1.0


def test_mad_zero_gives_hard_weights():
    # more than half the losses equal: s = 0, weights 1 below m, 0.5 at m, 0.05 above
    p = np.array([0.125] * 6 + [0.875] * 6 + [0.9375, 0.0625, 0.3, 0.8])
    y = np.array([0] * 6 + [1] * 6 + [1, 0, 1, 0])
    cal = C.LWCal().fit(probs=p, target=y)
    assert cal.mad_ == 0.0 and np.all(np.isfinite(cal.weights_))
    assert cal.weights_.tolist() == [0.5] * 12 + [1.0, 1.0, 0.05, 0.05]
    assert cal.status_ == "ok"


def test_all_equal_losses_reduce_to_plain_isotonic_exactly():
    # every label agrees with its score with probability 0.875 (1 - 0.125 is exact):
    # equal losses, s = 0, every weight exactly 0.5, so the fit is the unweighted one
    rng = np.random.default_rng(0)
    pos = rng.random(200) < 0.5
    p = np.where(pos, 0.875, 0.125)
    y = pos.astype(int)
    grid = np.linspace(0, 1, 101)
    lw = C.LWCal().fit(probs=p, target=y)
    assert np.all(lw.losses_ == lw.losses_[0]) and lw.mad_ == 0.0
    assert np.all(lw.weights_ == 0.5)
    iso = C.IsotonicCalibration().fit(probs=p, target=y)
    assert np.array_equal(lw.predict_proba(probs=grid), iso.predict_proba(probs=grid))
    # every label contradicts its score equally: still weights 0.5, and the same
    # (constant) map as plain isotonic, reported as such by both
    with pytest.warns(nc.IdentifiabilityWarning, match="never increases"):
        lw = C.LWCal().fit(probs=1 - p, target=y)
    with pytest.warns(nc.IdentifiabilityWarning, match="never increases"):
        iso = C.IsotonicCalibration().fit(probs=1 - p, target=y)
    assert np.all(lw.weights_ == 0.5) and lw.status_ == iso.status_ == "constant"
    assert np.array_equal(lw.predict_proba(probs=grid), iso.predict_proba(probs=grid))
    # floor = 1: every weight is 1 on any data
    q, _, yn = _noisy(1)
    lw = C.LWCal(floor=1.0).fit(probs=q, target=yn)
    iso = C.IsotonicCalibration().fit(probs=q, target=yn)
    assert np.all(lw.weights_ == 1.0)
    assert np.array_equal(lw.y_thresholds_, iso.y_thresholds_)


def test_order_invariance_and_determinism():
    p, _, yn = _noisy(2)
    p = np.round(p, 2)                                   # ties
    a = C.GatedLWCal().fit(probs=p, target=yn)
    perm = np.random.default_rng(0).permutation(p.size)
    b = C.GatedLWCal().fit(probs=p[perm], target=yn[perm])
    assert np.array_equal(b.weights_, a.weights_[perm])
    assert (a.median_loss_, a.mad_, a.disagreement_, a.rho_) == \
        (b.median_loss_, b.mad_, b.disagreement_, b.rho_)
    grid = np.linspace(0, 1, 201)
    assert np.array_equal(a.predict_proba(probs=grid), b.predict_proba(probs=grid))
    c = C.GatedLWCal().fit(probs=p, target=yn)
    assert np.array_equal(a.predict_proba(probs=grid), c.predict_proba(probs=grid))


def test_equals_the_reference_pipeline_with_sklearn():
    isotonic = pytest.importorskip("sklearn.isotonic")
    from scipy.special import expit

    for seed in range(3):
        p, _, yn = _noisy(seed, n=900)
        p = np.round(p, 3)
        # the spec's reference pseudocode, verbatim
        pc = np.clip(p, 1e-12, 1 - 1e-12)
        loss = -np.log(yn * pc + (1 - yn) * (1 - pc))
        m = np.median(loss)
        s = np.median(np.abs(loss - m))
        w = np.clip(expit(-(loss - m) / (1.4826 * s + 1e-12)), 0.05, 1.0)
        iso = isotonic.IsotonicRegression(increasing=True, y_min=0.0, y_max=1.0,
                                          out_of_bounds="clip").fit(p, yn, sample_weight=w)
        lw = C.LWCal().fit(probs=p, target=yn)
        np.testing.assert_allclose(lw.weights_, w, rtol=0, atol=1e-12)
        assert lw.median_loss_ == pytest.approx(m, rel=1e-14)
        grid = np.concatenate([p, np.linspace(0, 1, 501)])
        np.testing.assert_allclose(lw.predict_proba(probs=grid), iso.predict(grid),
                                   rtol=0, atol=1e-12)
        g = lw.predict_proba(probs=grid)
        assert np.all(np.diff(g[np.argsort(grid, kind="stable")]) >= 0)
        assert g.min() >= 0 and g.max() <= 1


# ------------------------------------------------------------------ Eq. 6 and Eq. 3
def test_disagreement_counts_half_as_positive():
    p = np.array([0.5, 0.5, 0.49, 0.7, 0.2])
    y = np.array([1, 0, 0, 0, 1])
    assert disagreement(p, y) == 3 / 5        # 0.5 vs 0, 0.7 vs 0, 0.2 vs 1


@pytest.mark.parametrize(("d", "rho"), [(0.0, 0.0), (0.2, 0.0), (0.29, 0.0), (0.32, 0.25),
                                        (0.35, 0.5), (0.38, 0.75), (0.41, 1.0), (0.6, 1.0)])
def test_gate_hand_cases(d, rho):
    assert gate(d) == pytest.approx(rho, abs=1e-12)


def test_gate_with_other_centre_and_width():
    assert gate(0.33, center=0.25, width=0.16) == pytest.approx(0.5, abs=1e-12)
    assert gate(0.25, center=0.25, width=0.08) == 0.0


def test_gated_output_is_lwcal_below_and_raw_above_the_gate():
    p, _, yn = _noisy(3, eta=0.05)
    lw = C.LWCal().fit(probs=p, target=yn)
    g = C.GatedLWCal().fit(probs=p, target=yn)
    assert g.disagreement_ <= 0.29 and g.rho_ == 0.0
    grid = np.linspace(0, 1, 301)
    assert np.array_equal(g.predict_proba(probs=grid), lw.predict_proba(probs=grid))
    rng = np.random.default_rng(0)
    noisy = np.where(rng.random(p.size) < 0.45, 1 - yn, yn)
    g = C.GatedLWCal().fit(probs=p, target=noisy)
    assert g.disagreement_ >= 0.41 and g.rho_ == 1.0
    assert np.array_equal(g.predict_proba(probs=grid), grid)
    # in between: the blend with the rho fixed at fit time (not recomputed on new data)
    g = C.GatedLWCal(gate_center=g.disagreement_ - 0.06).fit(probs=p, target=noisy)
    assert g.rho_ == pytest.approx(0.5, abs=1e-12)
    lw = C.LWCal().fit(probs=p, target=noisy)
    for test in (grid, np.full(10, 0.9)):
        np.testing.assert_allclose(g.predict_proba(probs=test),
                                   0.5 * lw.predict_proba(probs=test) + 0.5 * test,
                                   rtol=0, atol=1e-12)


# ------------------------------------------------------------------ behaviour under noise
def _clean_ece(cal, seed):
    rng = np.random.default_rng(100 + seed)
    z = rng.normal(0, 2, 20000)
    y = (rng.random(z.size) < 1 / (1 + np.exp(-z))).astype(int)
    q = cal.predict_proba(probs=1 / (1 + np.exp(-0.6 * z)))
    return float(nc.ece(q, y, n_bins=15, interval=None))


@pytest.mark.parametrize("seed", [0, 1])
def test_lwcal_beats_isotonic_on_clean_labels_under_symmetric_noise(seed):
    # symmetric noise at 30% compresses the noisy-label curve toward 0.5; plain isotonic
    # learns the compression, LWCal pulls it back (the paper's Section III argument)
    p, _, yn = _noisy(seed, n=4000, eta=0.3)
    iso = _clean_ece(C.IsotonicCalibration().fit(probs=p, target=yn), seed)
    lw = _clean_ece(C.LWCal().fit(probs=p, target=yn), seed)
    assert lw < iso - 0.05


def test_posterior_weights_by_hand_and_under_noise():
    p = np.array([0.2, 0.4, 0.6, 0.8])
    y = np.array([0, 1, 0, 1])
    post = nc.targets.from_matrix(np.column_stack([1 - np.array([0.1, 0.3, 0.99, 0.97]),
                                                   [0.1, 0.3, 0.99, 0.97]]), kind="posterior")
    cal = C.LWCal(weights="posterior").fit(probs=p, target=y, posterior=post)
    np.testing.assert_allclose(cal.weights_, [0.9, 0.3, 0.05, 0.97], rtol=0, atol=1e-15)
    np.testing.assert_allclose(cal.losses_, -np.log([0.9, 0.3, 0.01, 0.97]), rtol=1e-12)
    # three annotators at 10% noise, known channels: the exact posterior of the truth
    rng = np.random.default_rng(7)
    n, eta = 4000, 0.1
    z = rng.normal(0, 2, n)
    p = 1 / (1 + np.exp(-0.6 * z))
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    A = np.column_stack([np.where(rng.random(n) < eta, 1 - y, y) for _ in range(3)])
    l1 = np.prod(np.where(A == 1, 1 - eta, eta), axis=1) * y.mean()
    l0 = np.prod(np.where(A == 0, 1 - eta, eta), axis=1) * (1 - y.mean())
    pi = l1 / (l1 + l0)
    cal = C.LWCal(weights="posterior").fit(probs=p, target=A[:, 0], posterior=pi)
    wrong = A[:, 0] != y
    assert cal.weights_[wrong].mean() < 0.5 < cal.weights_[~wrong].mean()
    iso = C.IsotonicCalibration().fit(probs=p, target=A[:, 0])
    assert _clean_ece(cal, 0) < _clean_ece(iso, 0) - 0.01


# ------------------------------------------------------------------ TrimCal
def test_trimcal_keeps_the_lowest_losses():
    isotonic = pytest.importorskip("sklearn.isotonic")
    p, _, yn = _noisy(4, n=500)
    t = C.TrimCal(retain=0.85).fit(probs=p, target=yn)
    assert t.n_kept_ == math.ceil(0.85 * 500) == 425
    assert t.losses_[t.kept_].max() <= t.losses_[~t.kept_].min()
    ref = isotonic.IsotonicRegression(out_of_bounds="clip").fit(p[t.kept_], yn[t.kept_])
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(t.predict_proba(probs=grid), ref.predict(grid), atol=1e-12)
    # the count is exact despite 0.7 * 10 = 7.000000000000001 in floating point
    assert C.TrimCal(retain=0.7).fit(probs=p[:10], target=yn[:10]).n_kept_ == 7
    # quantile rule: every loss up to the quantile
    q = C.TrimCal(retain=0.85, rule="quantile").fit(probs=p, target=yn)
    assert np.array_equal(q.kept_, q.losses_ <= np.quantile(q.losses_, 0.85))
    # retain = 1 is plain isotonic; the calibrator is copied, not fitted in place
    base = C.IsotonicCalibration(interpolation="step")
    full = C.TrimCal(retain=1.0, calibrator=base).fit(probs=p, target=yn)
    assert not hasattr(base, "y_thresholds_")
    iso = C.IsotonicCalibration(interpolation="step").fit(probs=p, target=yn)
    assert np.array_equal(full.predict_proba(probs=grid), iso.predict_proba(probs=grid))
    assert full.get_params()["calibrator__interpolation"] == "step"
