"""Binary recalibration maps fitted to naive, clean and corrected targets."""

import numpy as np
import pytest

import noisycal as nc

A_TOY, B_TOY = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B


def test_temperature_and_platt_recover_the_logistic_curve():
    b = nc.simulate.binary_scores(40_000, slope=0.7, intercept=0.2, seed=1)
    p = nc.calibrators.PlattScaling().fit(probs=b.p, target=b.y)
    assert p.slope_ == pytest.approx(0.7, abs=0.03)
    # abs 0.04 is 20% of the intercept 0.2: its sampling sd at n = 40000 is ~0.012, and
    # the tolerance is sized on that sd (> 3 sd), not on the value
    assert p.intercept_ == pytest.approx(0.2, abs=0.04)
    t = nc.calibrators.TemperatureScaling().fit(probs=b.p, target=b.y)
    # the logistic curve with intercept 0.2 is not a pure temperature change, so the best
    # T is only known to lie near 1 / 0.7 = 1.43; the range brackets it
    assert 1.2 < t.temperature_ < 1.6 and not t.at_bound_
    assert t.status_ == "ok" and p.status_ == "ok" and t.message_ == ""
    # calibrated output: small ECE (an absolute bound on a quantity whose target is 0)
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
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):  # undeclared
        nc.calibrators.HistogramBinning(n_bins=10).fit(probs=z, target=np.c_[1 - y, y])
    with pytest.warns(nc.IdentifiabilityWarning, match="only 5 fitting item"):
        h = nc.calibrators.HistogramBinning(n_bins=10).fit(
            probs=z, target=nc.targets.from_matrix(np.c_[1 - y, y], kind="corrected"))
    assert h.status_ == "too_few_items"  # 5 items for 10 bins
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
    with pytest.raises(nc.calibrators.NotFittedError):
        cal.predict_proba(probs=np.array([0.5]))
    with pytest.raises(ValueError, match="exactly one"):
        cal.fit(probs=np.array([0.5]), logits=np.array([0.0]), target=np.array([1]))
    with pytest.raises(ValueError, match="probs"):
        cal.fit(probs=np.array([1.5]), target=np.array([1]))
    with pytest.raises(ValueError, match="bounds"):
        nc.calibrators.TemperatureScaling(bounds=(2.0, 1.0)).fit(
            probs=np.array([0.2, 0.7]), target=np.array([0, 1]))
    assert cal.get_params() == {"eps": 1e-6, "bounds": (0.05, 20.0), "loss": "auto"}
    with pytest.raises(ValueError, match="unknown parameter"):
        cal.set_params(temperature=2.0)
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        h = nc.calibrators.HistogramBinning().fit(probs=np.array([0.2, 0.7]),
                                                  target=np.array([0, 1]))
    with pytest.raises(ValueError, match="corrected"):
        h.bound(np.array([0, 1]))


@pytest.mark.parametrize("eps", [0, 0.5, 0.7, -1e-3, float("nan"), "1e-6", True])
def test_eps_must_lie_strictly_between_0_and_half(eps):
    b = nc.simulate.binary_scores(200, seed=0)
    for cls in (nc.calibrators.TemperatureScaling, nc.calibrators.PlattScaling):
        with pytest.raises(ValueError, match=r"eps must be a number with 0 < eps < 0\.5"):
            cls(eps=eps).fit(probs=b.p, target=b.y)
    # a valid eps near the edge gives a finite objective (eps=0 used to give NaN)
    cal = nc.calibrators.TemperatureScaling(eps=0.1).fit(probs=b.p, target=b.y)
    assert np.isfinite(cal.objective_)


def test_constant_scores_are_not_identified_and_say_so():
    y = np.array([0, 1, 1, 0, 1, 1, 0, 1])
    with pytest.warns(nc.IdentifiabilityWarning, match="does not depend on T"):
        t = nc.calibrators.TemperatureScaling().fit(probs=np.full(8, 0.5), target=y)
    assert t.status_ == "not_identified" and t.temperature_ == 1.0
    assert "not identified" in t.message_
    # a constant score other than 0.5 pins T: s / T = logit(mean target)
    t7 = nc.calibrators.TemperatureScaling().fit(probs=np.full(8, 0.7), target=y)
    assert t7.status_ == "ok"
    assert np.log(0.7 / 0.3) / t7.temperature_ == pytest.approx(np.log(5 / 3), rel=1e-5)
    with pytest.warns(nc.IdentifiabilityWarning, match=r"only u s \+ v"):
        p = nc.calibrators.PlattScaling().fit(probs=np.array([0.3]), target=np.array([1]))
    assert p.status_ == "not_identified"
    with pytest.warns(nc.IdentifiabilityWarning, match=r"only u s \+ v"):
        p = nc.calibrators.PlattScaling().fit(probs=np.full(8, 0.7), target=y)
    # the fitted value at the one score still matches the mean target
    assert p.predict_proba(probs=np.array([0.7]))[0] == pytest.approx(5 / 8, rel=1e-5)


def test_fits_on_the_box_are_flagged():
    z = np.linspace(0.05, 0.95, 40)
    # labels the scores separate: the slope runs to the box, and the cause is named
    with pytest.warns(nc.IdentifiabilityWarning, match="status_='separation'"):
        p = nc.calibrators.PlattScaling().fit(probs=z, target=(z > 0.5).astype(int))
    assert p.status_ == "separation" and p.at_bound_ and p.slope_ == 10.0
    with pytest.warns(nc.IdentifiabilityWarning, match=r"bounds=\(0.05, 20.0\)"):
        t = nc.calibrators.TemperatureScaling().fit(probs=z, target=np.ones(40, int))
    # scores symmetric about 0.5 and an all-positive target: the loss falls as T grows
    # without limit (g(0) = 0 exactly), reported as its own status, T on the upper bound
    assert t.status_ == "infinite_temperature" and t.temperature_ == 20.0
    assert t.unconstrained_temperature_ == np.inf and t.at_bound_
    # labels that the scores separate: the loss falls as T -> 0
    with pytest.warns(nc.IdentifiabilityWarning, match="status_='separable'"):
        t = nc.calibrators.TemperatureScaling().fit(probs=z, target=(z > 0.5).astype(int))
    assert t.status_ == "separable" and t.temperature_ == 0.05
    assert t.unconstrained_temperature_ == 0.0
    # a finite optimum outside the box: 'boundary', with the unconstrained T reported
    b = nc.simulate.binary_scores(5000, slope=0.5, seed=0)
    with pytest.warns(nc.IdentifiabilityWarning, match=r"unconstrained minimum T = 1\.9"):
        t = nc.calibrators.TemperatureScaling(bounds=(0.1, 1.5)).fit(probs=b.p, target=b.y)
    assert t.status_ == "boundary" and t.temperature_ == 1.5
    assert t.unconstrained_temperature_ == pytest.approx(
        nc.calibrators.TemperatureScaling().fit(probs=b.p, target=b.y).temperature_, rel=1e-12)


def test_a_1d_float_target_is_the_positive_class_column():
    t = nc.simulate.gaussian_toy(5000, truth="shifted", seed=4)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)
    for cls in (nc.calibrators.PlattScaling, nc.calibrators.TemperatureScaling,
                nc.calibrators.HistogramBinning):
        a = cls().fit(probs=t.z, target=U)
        # the corrected values as a plain 1-D float vector leave [0, 1] without saying they
        # are corrected: refused naming target, as nc.ece refuses them
        assert U.values[:, 1].min() < 0 or U.values[:, 1].max() > 1
        with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
            cls().fit(probs=t.z, target=U.values[:, 1])
        with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
            nc.ece(t.z, U.values[:, 1], interval=None)
        # declared corrected, the same values are the target U
        b = cls().fit(probs=t.z, target=nc.targets.from_matrix(U.values, kind="corrected"))
        np.testing.assert_array_equal(a.predict_proba(probs=t.z), b.predict_proba(probs=t.z))
        # 0/1 labels as ints and as floats are the same target
        c = cls().fit(probs=t.z, target=t.y)
        d = cls().fit(probs=t.z, target=t.y.astype(float))
        np.testing.assert_array_equal(c.predict_proba(probs=t.z), d.predict_proba(probs=t.z))


def test_histogram_input_checks_in_fit_and_predict():
    h = nc.calibrators.HistogramBinning(n_bins=5)
    with pytest.raises(ValueError, match="at least one score"):
        h.fit(probs=np.zeros(0), target=np.zeros(0, int))
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        h.fit(probs=np.array([0.1, 0.9]), target=np.array([0, 1]))
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        h.predict_proba(probs=np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="logits"):
        h.predict_proba(logits=np.array([0.5]))
    # up to 10 bins per item is allowed (with status 'too_few_items'), more is refused
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        nc.calibrators.HistogramBinning(n_bins=20).fit(probs=np.array([0.1, 0.9]),
                                                       target=np.array([0, 1]))
    with pytest.raises(ValueError, match="n_bins=21 is far above the 2"):
        nc.calibrators.HistogramBinning(n_bins=21).fit(probs=np.array([0.1, 0.9]),
                                                       target=np.array([0, 1]))


# ---------------------------------------------------------------- JointMap (spec 5.4)
JOINT_TRUE = np.array([0.1, 0.3, 0.5, 0.7, 0.9])  # P(Y=1 | z) on 5 equal-width bins
JOINT_FP = np.array([0.08, 0.13, 0.18])  # a_j = P(A_j = 1 | Y = 0)
JOINT_FN = np.array([0.16, 0.11, 0.06])  # 1 - b_j = P(A_j = 0 | Y = 1)


def _joint_sim(n, seed, z=None):
    """Scores, true P(Y=1|z) (piecewise constant), labels and 3 annotators' 0/1 labels."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(size=n) if z is None else z
    m = JOINT_TRUE[np.searchsorted(np.arange(1, 5) / 5, z, side="right")]
    y = (rng.random(z.size) < m).astype(np.int64)
    p1 = np.where(y[:, None] == 1, 1 - JOINT_FN, JOINT_FP)
    A = (rng.random((z.size, 3)) < p1).astype(np.int64)
    return z, m, y, A


def _ece_vs_truth(out, m):
    # spec 5.5: 10 equal-width bins of the transformed score, target the true P(Y=1|z)
    return float(nc.ece(out, np.column_stack([1 - m, m]), n_bins=10, interval=None))


def test_joint_map_recovers_bin_prevalences_and_beats_the_naive_histogram():
    z, m, y, A = _joint_sim(20_000, seed=0)
    jm = nc.calibrators.JointMap(n_bins=5).fit(probs=z, annotations=A)
    assert jm.status_ == "ok" and jm.fit_.status == "ok"
    np.testing.assert_array_equal(jm.counts_.sum(), 20_000)
    # ~4000 items per bin: sd of mu_hat_g is ~0.005-0.009 (20 seeds: max error 0.021),
    # so 0.03 is > 3 sd
    np.testing.assert_allclose(jm.values_, JOINT_TRUE, atol=0.03)
    # the shared channels are recovered too (pooled over all 20000 items); atol 0.02 is
    # 25-33% of the smallest rates (0.06, 0.08) but ~7 binomial sd (sd <= 0.003 from
    # ~10000 items per class): sized on the sd, the values are small
    np.testing.assert_allclose(jm.fit_.confusion[:, 0, 1], JOINT_FP, atol=0.02)
    np.testing.assert_allclose(jm.fit_.confusion[:, 1, 0], JOINT_FN, atol=0.02)
    assert jm.objective_ == pytest.approx(jm.fit_.loglik / z.size, rel=1e-12)
    # the naive histogram of the soft vote is biased towards the annotators' mean
    # channel: E[soft vote | bin] = mean(a) + mean(b - a) mu_g = 0.13 + 0.76 mu_g (spec 2.6)
    soft = A.mean(1)
    naive = nc.calibrators.HistogramBinning(n_bins=5).fit(
        probs=z, target=np.column_stack([1 - soft, soft]))
    np.testing.assert_allclose(naive.values_, 0.13 + 0.76 * JOINT_TRUE, atol=0.02)
    ece_joint = _ece_vs_truth(jm.predict_proba(probs=z), m)
    ece_naive = _ece_vs_truth(naive.predict_proba(probs=z), m)
    # population naive ECE = mean |0.13 - 0.24 mu_g| = 0.0596 (uniform scores);
    # over 20 seeds: joint 0.006 (max 0.012), naive 0.054-0.064
    assert ece_joint < 0.02
    assert ece_naive == pytest.approx(0.0596, abs=0.01)
    assert ece_naive > 3 * ece_joint
    # and the Joint map is close to calibrated against the true labels as well
    assert float(nc.ece(jm.predict_proba(probs=z), y, n_bins=10, interval=None)) < 0.02


def test_joint_map_empty_bins_get_the_overall_posterior_mean():
    rng = np.random.default_rng(5)
    z = np.concatenate([rng.uniform(0.0, 0.4, 1500), rng.uniform(0.6, 1.0, 1500)])
    _, _, _, A = _joint_sim(z.size, seed=6, z=z)
    ann = nc.Annotations.from_wide(A)
    jm = nc.calibrators.JointMap(n_bins=5, n_starts=3).fit(probs=z, annotations=ann)
    np.testing.assert_array_equal(jm.counts_ == 0, [False, False, True, False, False])
    fallback = jm.fit_.item_posterior[:, 1].mean()
    assert jm.values_[2] == fallback and jm.fallback_ == fallback
    assert jm.fit_.group_prevalence.shape == (4, 2)  # the non-empty bins only
    np.testing.assert_array_equal(jm.values_[[0, 1, 3, 4]], jm.fit_.group_prevalence[:, 1])
    # at the EM fixed point the fallback is the count-weighted mean of the prevalences
    # (up to the EM tolerance: 1e-8 on the mean log-likelihood allows ~1e-5 in parameters)
    w = jm.counts_[[0, 1, 3, 4]] / z.size
    assert fallback == pytest.approx(float(w @ jm.values_[[0, 1, 3, 4]]), abs=1e-4)
    np.testing.assert_array_equal(jm.predict_proba(probs=np.array([0.0, 0.5, 0.55, 1.0])),
                                  jm.values_[[0, 2, 2, 4]])
    # a wide 0/1 matrix gives the same fit as the Annotations built from it
    jw = nc.calibrators.JointMap(n_bins=5, n_starts=3).fit(probs=z, annotations=A)
    np.testing.assert_allclose(jw.values_, jm.values_, rtol=1e-12)
    # a single non-empty bin: the grouped model is the marginal Dawid-Skene
    j1 = nc.calibrators.JointMap(n_bins=2, n_starts=3).fit(probs=z[z < 0.4],
                                                           annotations=A[z < 0.4])
    np.testing.assert_array_equal(j1.counts_, [int(np.sum(z < 0.4)), 0])
    assert j1.values_[0] == j1.fit_.group_prevalence[0, 1]
    assert j1.values_[1] == j1.fit_.item_posterior[:, 1].mean()


def test_joint_map_warns_bad_input_and_params():
    import pickle

    jm = nc.calibrators.JointMap(n_bins=5)
    with pytest.raises(ValueError, match="not fitted"):
        jm.predict_proba(probs=np.array([0.5]))
    z, _, _, A = _joint_sim(600, seed=7)
    with pytest.raises(ValueError, match="probs"):
        jm.fit(probs=np.where(z > 0.5, 1.5, z), annotations=A)
    with pytest.raises(ValueError, match="probs"):
        jm.fit(probs=z[:, None], annotations=A)
    with pytest.raises(ValueError, match="annotations"):
        jm.fit(probs=z[:-1], annotations=A)
    with pytest.raises(ValueError, match="annotations"):
        jm.fit(probs=z, annotations=np.where(A == 1, 2, A))  # labels must be 0/1
    with pytest.raises(ValueError, match="annotations must be binary"):
        jm.fit(probs=z, annotations=nc.Annotations.from_wide(np.where(z[:, None] > 0.9, 2, A)))
    with pytest.raises(ValueError, match="at least 2 annotators"):
        jm.fit(probs=z, annotations=A[:, :1])
    with pytest.raises(ValueError, match="n_bins"):
        nc.calibrators.JointMap(n_bins=0).fit(probs=z, annotations=A)
    with pytest.raises(ValueError, match="orientation"):
        nc.calibrators.JointMap(orientation="up").fit(probs=z, annotations=A)
    assert jm.get_params() == {"n_bins": 5, "n_starts": 10, "max_iter": 1000, "tol": 1e-8,
                               "seed": 0, "orientation": "anchor", "anchor": 0}
    with pytest.raises(ValueError, match=r"seed must be an integer in \[-2\*\*63, 2\*\*63\)"):
        nc.calibrators.JointMap(seed=2**64).fit(probs=z, annotations=A)
    with pytest.raises(ValueError, match="tol"):
        nc.calibrators.JointMap(tol="1e-8").fit(probs=z, annotations=A)
    with pytest.raises(ValueError, match="unknown parameter"):
        jm.set_params(bins=3)
    # a fit that is not accepted is reported, never silent
    with pytest.warns(nc.ConvergenceWarning, match="not_converged"):
        bad = jm.set_params(max_iter=2, n_starts=2).fit(probs=z, annotations=A)
    assert bad.status_ == "not_converged" and not bad.fit_.converged
    assert "iteration limit" in bad.message_
    with pytest.raises(ValueError, match="probs"):
        bad.predict_proba(logits=np.array([0.0]))
    # the fitted map pickles (AnnotatorFit's read-only mappings are rebuilt)
    again = pickle.loads(pickle.dumps(bad))
    np.testing.assert_array_equal(again.predict_proba(probs=z), bad.predict_proba(probs=z))
    assert again.fit_.status == "not_converged"


def test_pandas_inputs_are_checked_for_alignment():
    import pandas as pd

    rng = np.random.default_rng(8)
    ids = [f"item{i}" for i in range(200)]
    z = pd.Series(rng.uniform(size=200), index=ids)
    y = pd.Series((rng.random(200) < z.to_numpy()).astype(int), index=ids)
    ref = nc.calibrators.PlattScaling().fit(probs=z.to_numpy(), target=y.to_numpy())
    same = nc.calibrators.PlattScaling().fit(probs=z, target=y)
    assert same.slope_ == ref.slope_ and same.intercept_ == ref.intercept_
    with pytest.raises(ValueError, match="target is not aligned with probs.*position 0"):
        nc.calibrators.PlattScaling().fit(probs=z, target=y.iloc[::-1])
    with pytest.raises(ValueError, match="target is not aligned with logits"):
        nc.calibrators.TemperatureScaling().fit(logits=np.log(z / (1 - z)),
                                                target=y.iloc[::-1])
    with pytest.raises(ValueError, match="target is not aligned"):
        nc.calibrators.HistogramBinning().fit(probs=z, target=y.sample(frac=1, random_state=0))
    # a default RangeIndex is an index too, checked against the target's as the metrics do
    # (issue 23: it was taken as positional)
    with pytest.raises(ValueError, match="target is not aligned.*0 vs 'item0'"):
        nc.calibrators.HistogramBinning().fit(probs=z.reset_index(drop=True), target=y)
    nc.calibrators.HistogramBinning().fit(probs=z.reset_index(drop=True).to_numpy(), target=y)
    # JointMap: the scores' index against the annotations' item ids
    _, _, _, A = _joint_sim(200, seed=9, z=z.to_numpy())
    long = pd.DataFrame({"item": np.repeat(ids, 3), "annotator": np.tile([0, 1, 2], 200),
                         "label": A.ravel()})
    ann = nc.Annotations.from_long(long, item="item", annotator="annotator", label="label")
    with pytest.raises(ValueError, match="annotations is not aligned with probs"):
        nc.calibrators.JointMap(n_bins=2, n_starts=2).fit(
            probs=pd.Series(z.to_numpy(), index=[f"x{i}" for i in range(200)]),
            annotations=ann)


@pytest.mark.parametrize("cls", [nc.calibrators.TemperatureScaling, nc.calibrators.PlattScaling])
def test_predict_proba_clips_with_the_eps_of_the_fit(cls):
    """set_params(eps=...) after fit does not change predictions until the next fit."""
    z = np.array([0.001, 0.2, 0.4, 0.6, 0.8, 0.999, 0.3, 0.7])
    y = np.array([0, 0, 1, 0, 1, 1, 0, 1])
    cal = cls(eps=1e-6).fit(probs=z, target=y)
    before = cal.predict_proba(probs=z)
    cal.set_params(eps=0.2)
    assert cal.eps_ == 1e-6
    np.testing.assert_array_equal(cal.predict_proba(probs=z), before)
    cal.fit(probs=z, target=y)
    assert cal.eps_ == 0.2


def test_histogram_bound_checks_its_target_is_the_fitted_one():
    t = nc.simulate.gaussian_toy(2000, truth="nonlinear", seed=4)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY, weights="equal")
    V = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)  # IV weights
    hb = nc.calibrators.HistogramBinning().fit(probs=t.z, target=U)
    same = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY, weights="equal")
    assert hb.bound(same) == hb.bound(U)
    with pytest.raises(ValueError, match="target must be the corrected Target the histogram"):
        hb.bound(V)


_FAILED_TARGET_FAMILY = [
    ("TemperatureScaling", {}), ("PlattScaling", {}), ("VectorScaling", {}),
    ("DirichletCalibration", {}), ("MatrixScaling", {}), ("BetaCalibration", {}),
    ("AdaptiveTemperatureScaling", {}), ("OneVsRestPlatt", {}),
    ("OneVsRestIsotonic", {}), ("NaiveCMCETemperature", {"grid": "log"}),
    ("HistogramBinning", {"n_bins": 5}), ("IsotonicCalibration", {}),
]


@pytest.mark.parametrize(("name", "params"), _FAILED_TARGET_FAMILY,
                         ids=[n for n, _ in _FAILED_TARGET_FAMILY])
def test_a_target_from_a_failed_fit_gives_target_not_ok(name, params):
    # the same fit to an ok Target gives the calibrator's own status ('ok' here), and to
    # a Target whose fit did not converge 'target_not_ok' with the target's message
    rng = np.random.default_rng(3)
    binary = name == "BetaCalibration"
    K = 2 if binary else 3
    y = rng.integers(0, K, 300)
    S = rng.normal(size=(300, K)) + 1.5 * np.eye(K)[y]
    P = np.exp(S) / np.exp(S).sum(axis=1, keepdims=True)
    soft = 0.8 * np.eye(K)[y] + 0.2 / K
    probs = P[:, 1] if binary else P
    cls = getattr(nc.calibrators, name)
    ok = cls(**params).fit(probs=probs, target=nc.targets.Target(soft, "posterior"))
    assert ok.status_ == "ok", ok.message_
    bad = nc.targets.Target(soft, "posterior", status="not_converged",
                            message="EM stopped early")
    with pytest.warns(nc.IdentifiabilityWarning, match="target_not_ok"):
        cal = cls(**params).fit(probs=probs, target=bad)
    assert cal.status_ == "target_not_ok"
    assert "not_converged" in cal.message_ and "EM stopped early" in cal.message_
    # refitting the same instance to the ok target clears the inherited status
    assert cal.fit(probs=probs, target=nc.targets.Target(soft, "posterior")).status_ == "ok"
