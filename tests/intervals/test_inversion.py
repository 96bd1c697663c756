"""The inverted-test interval of the binned ECE (noisycal.intervals.inversion) and the
calibration test: hand cases, the linear form of the ECE and p-values by simulation with
known population values (the reduced coverage study is in
test_inversion_coverage_binary.py and test_inversion_coverage_kclass.py)."""

import numpy as np
import pytest
from scipy import stats as sps

import noisycal as nc
from noisycal.intervals.inversion import invert_norm, norm_of_means, quantile_of_draws
from noisycal.metrics.binned.bins import group_scores, make_binned
from noisycal.metrics.binned.form import binned_linear_form

# ----------------------------------------------------------------------------- hand cases


def test_quantile_of_draws_is_numpys_quantile_to_the_bit():
    """The search's quantile equals np.quantile (method 'linear') exactly: continuous
    draws, ties, +-inf (where NumPy's interpolation gives NaN or inf), NaN, the ends of
    [0, 1], one draw and levels a hair from 0 and 1."""
    rng = np.random.default_rng(0)
    results = []
    with np.errstate(invalid="ignore"):  # inf - inf inside the interpolation, both ways
        for trial in range(600):
            n = int(rng.integers(1, 40)) if trial % 2 else int(rng.integers(100, 2500))
            x = rng.normal(size=n) * 10.0 ** rng.integers(-5, 5)
            if trial % 5 == 0:
                x = np.round(x, 1)
            if trial % 7 == 0:
                x[rng.integers(0, n, 1 + n // 10)] = np.inf
            if trial % 11 == 0:
                x[rng.integers(0, n)] = -np.inf
            if trial % 13 == 0:
                x[rng.integers(0, n)] = np.nan
            for q in (0.0, 1.0, 0.5, 0.05, 0.95, rng.random(), 1e-3 * rng.random(),
                      1.0 - 1e-3 * rng.random()):
                want, got = float(np.quantile(x, q)), quantile_of_draws(x, float(q))
                assert got == want or (np.isnan(got) and np.isnan(want)), (n, q, got, want)
                results.append(got)
    # the cases reached NumPy's NaN and infinite results, not only finite interpolations
    assert np.isnan(results).sum() > 50 and np.isposinf(results).sum() > 0
    assert np.isneginf(results).sum() > 0


def test_one_mean_far_from_zero_gives_the_normal_interval():
    # J = 1, |m-hat| = 5 standard errors: folding is negligible, so the 90% interval is
    # 5 +- 1.645 and the median-unbiased estimate is 5.
    inv = invert_norm(np.array([5.0]), np.array([[1.0]]), np.array([1.0]), n_sim=40_000)
    z = sps.norm.ppf(0.95)
    assert inv.low == pytest.approx(5 - z, abs=0.03)
    assert inv.high == pytest.approx(5 + z, abs=0.03)
    assert inv.estimate == pytest.approx(5.0, abs=0.03)
    assert inv.p_value < 1e-3 and not inv.lower_is_zero


def test_one_mean_near_zero_gives_a_one_sided_interval_from_zero():
    # m-hat = 0.01 standard errors: the zero test does not reject, so the interval is
    # [0, U]. U is where the lower tail alpha_lo(U) = (alpha/2) rho(U) first exceeds
    # P(|N(U, 1)| <= 0.01), with rho(U) = (power(U) - alpha) / (1 - alpha) and power(U)
    # the power of the level-alpha zero test, P(|N(U, 1)| > z_{0.95}) (J = 1).
    from scipy.optimize import brentq
    T, a, z = 0.01, 0.1, sps.norm.ppf(0.95)

    def gap(u):
        power = sps.norm.sf(z - u) + sps.norm.cdf(-z - u)
        a_lo = a / 2 * (power - a) / (1 - a)
        return a_lo - (sps.norm.cdf(T - u) - sps.norm.cdf(-T - u))
    U = brentq(gap, 0.3, 3.0)
    inv = invert_norm(np.array([T]), np.array([[1.0]]), np.array([1.0]), n_sim=40_000)
    assert inv.low == 0.0 and inv.lower_is_zero and inv.estimate == 0.0
    assert inv.p_value > 0.95
    assert inv.high == pytest.approx(U, abs=0.06)


def test_the_folded_normal_median_unbiased_estimate():
    # |m-hat| = 1 with unit variance: the median-unbiased estimate solves
    # median |N(theta, 1)| = 1, i.e. Phi(1 - theta) - Phi(-1 - theta) = 1/2.
    from scipy.optimize import brentq
    theta = brentq(lambda t: sps.norm.cdf(1 - t) - sps.norm.cdf(-1 - t) - 0.5, 0.0, 1.0)
    inv = invert_norm(np.array([1.0]), np.array([[1.0]]), np.array([1.0]), n_sim=40_000)
    assert inv.estimate == pytest.approx(theta, abs=0.02)
    assert inv.low <= inv.estimate <= inv.high


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_estimate_inside_interval_and_interval_monotone_in_level(norm):
    rng = np.random.default_rng(3)
    for _ in range(5):
        J = 6
        m = rng.normal(0, 0.02, J)
        A = rng.normal(size=(J, J)) * 0.01
        cov = A @ A.T / J + np.diag(np.full(J, 1e-4))
        w = rng.uniform(0.5, 2.0, J)
        i80 = invert_norm(m, cov, w, norm=norm, level=0.8, n_sim=2000, seed=1)
        i95 = invert_norm(m, cov, w, norm=norm, level=0.95, n_sim=2000, seed=1)
        assert i80.low <= i80.estimate <= i80.high
        assert i95.low <= i80.low + 1e-9 and i95.high >= i80.high - 1e-9
        assert i80.plugin == pytest.approx(float(norm_of_means(m, w, norm)))


@pytest.mark.parametrize("theta0,expected", [
    # f(lam) = max(3 - lam, 0) + max(1 - lam, 0) + max(0.5 - lam, 0) + 2 (the last
    # component has no variance and stays): T = 6.5
    (4.0, [2.0, 0.0, 0.0, 2.0]),            # lam = 1: the second and third reach 0
    (5.5, [8 / 3, -2 / 3, 1 / 6, 2.0]),     # lam = 1/3, all three still active
    (3.0, [1.0, 0.0, 0.0, 2.0]),            # lam = 2, past the last kink but one
    (8.0, [3.5, -1.5, 1.0, 2.0]),           # expansion: lam = -1/2
    (1.0, [0.0, 0.0, 0.0, 2.0]),            # below the fixed part: every free one at 0
])
def test_the_l1_restriction_by_hand(theta0, expected):
    from noisycal.intervals.inversion import _restricted

    m, w, av = np.array([3.0, -1.0, 0.5, 2.0]), np.ones(4), np.array([1.0, 1.0, 1.0, 0.0])
    got = _restricted(m, av, w, "l1", theta0)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    if theta0 >= 2.0:
        assert norm_of_means(got, w, "l1") == pytest.approx(theta0, rel=1e-14)


def test_the_l1_restriction_is_the_closest_vector_of_that_norm():
    # against the bisection on the Lagrange multiplier (48 halvings), over random sizes,
    # zero means, zero weights and zero variances
    from noisycal.intervals.inversion import _restricted

    rng = np.random.default_rng(3)
    for _ in range(200):
        J = int(rng.integers(1, 60))
        m = rng.normal(size=J) * (rng.random(J) < 0.8)
        w = rng.random(J) * (rng.random(J) < 0.9)
        av = w * rng.random(J) * (rng.random(J) < 0.9)
        free = (av > 0) & (m != 0)
        if not free.any():
            continue
        T = float(norm_of_means(m, w, "l1"))
        fixed = T - float(np.abs(m[free]) @ w[free])   # the part that cannot shrink
        top = 2.0 * float(np.max(np.abs(m[free]) / av[free]))  # every free one at 0
        for theta0 in (rng.uniform(fixed, T), T * rng.uniform(1.0, 2.0)):
            lo, hi = (0.0, top) if theta0 < T else (-10.0 * top, 0.0)
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                f = norm_of_means(np.sign(m) * np.maximum(np.abs(m) - mid * av, 0.0), w,
                                  "l1")
                lo, hi = (mid, hi) if f > theta0 else (lo, mid)
            ref = np.sign(m) * np.maximum(np.abs(m) - 0.5 * (lo + hi) * av, 0.0)
            np.testing.assert_allclose(_restricted(m, av, w, "l1", theta0), ref,
                                       rtol=1e-9, atol=1e-12)


def test_bad_engine_inputs_name_the_argument():
    with pytest.raises(ValueError, match="norm"):
        invert_norm(np.zeros(2), np.eye(2), np.ones(2), norm="l3")
    with pytest.raises(ValueError, match="cov"):
        invert_norm(np.zeros(2), np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="finite"):
        invert_norm(np.array([np.nan, 0.0]), np.eye(2), np.ones(2))
    with pytest.raises(ValueError, match="level"):
        invert_norm(np.zeros(2), np.eye(2), np.ones(2), level=90)
    with pytest.raises(ValueError, match="upper_null"):
        invert_norm(np.zeros(2), np.eye(2), np.ones(2), upper_null="rescaled")
    with pytest.raises(ValueError, match="upper_mix"):
        invert_norm(np.zeros(2), np.eye(2), np.ones(2), upper_mix=50)
    with pytest.raises(ValueError, match="zero_null"):
        invert_norm(np.zeros(2), np.eye(2), np.ones(2), zero_null=np.array([np.nan, 1.0]))


def test_least_favourable_upper_end_only_widens():
    # Many small nonzero means: the restricted estimate zeroes most of them, the blend
    # keeps them; the lower end and the zero test are untouched, the upper end rises.
    rng = np.random.default_rng(3)
    J = 60
    mh = 0.4 * np.sign(rng.standard_normal(J)) + rng.standard_normal(J)
    w = np.full(J, 1.0 / J)
    soft = invert_norm(mh, np.eye(J), w, n_sim=500, seed=1)
    lf = invert_norm(mh, np.eye(J), w, n_sim=500, seed=1, upper_null="least-favourable")
    full = invert_norm(mh, np.eye(J), w, n_sim=500, seed=1, upper_null="least-favourable",
                       upper_mix=1.0)
    none = invert_norm(mh, np.eye(J), w, n_sim=500, seed=1, upper_null="least-favourable",
                       upper_mix=0.0)
    assert lf.low == soft.low and lf.p_value == soft.p_value and lf.plugin == soft.plugin
    assert soft.high < lf.high < full.high
    assert none.high == soft.high


def test_upper_cov_gives_the_larger_upper_end():
    # Lower end, p-value and estimate from cov; the upper end is the larger of the two
    # covariances' upper ends (here the larger variance's: the spread dominates).
    m, w = np.array([0.3, -0.2, 0.25]), np.full(3, 1 / 3)
    small, big = 0.01 * np.eye(3), 0.04 * np.eye(3)
    kw = dict(n_sim=2000, seed=4, upper_null="least-favourable")
    a, b = invert_norm(m, small, w, **kw), invert_norm(m, big, w, **kw)
    assert b.low < a.low and b.high > a.high
    assert invert_norm(m, big, w, upper_cov=small, **kw).high == b.high
    c = invert_norm(m, small, w, upper_cov=big, **kw)
    assert c.low == a.low and c.p_value == a.p_value and c.estimate == a.estimate
    # The tail split still comes from cov, so the upper end is close to b's, not equal.
    assert a.high < c.high and c.high == pytest.approx(b.high, abs=0.01)
    with pytest.raises(ValueError, match="cov"):
        invert_norm(m, big, w, upper_cov=np.eye(2))


def test_zero_null_rejecting_opens_the_interval_at_zero():
    # The exact null's draws all lie below the statistic (p-value 1/100), while the
    # Gaussian null with unit variances accepts 0: the interval is (0, high].
    m, cov, w = np.full(4, 0.3), np.eye(4), np.full(4, 0.25)
    gauss = invert_norm(m, cov, w, n_sim=500, seed=0)
    assert gauss.low == 0.0
    exact = invert_norm(m, cov, w, n_sim=500, seed=0, zero_null=np.zeros(99))
    assert exact.p_value == 0.01 and 0.0 < exact.low < 1e-300 and not exact.lower_is_zero
    assert exact.high == gauss.high


def test_zero_null_sets_the_zero_test():
    # An exact null whose draws all exceed the statistic: the test cannot reject, so the
    # interval starts at 0 even where the Gaussian null rejects.
    m, cov, w = np.full(4, 3.0), np.eye(4), np.full(4, 0.25)
    gauss = invert_norm(m, cov, w, n_sim=500, seed=0)
    assert gauss.low > 0 and gauss.p_value < 0.01
    exact = invert_norm(m, cov, w, n_sim=500, seed=0, zero_null=np.full(99, 10.0))
    assert exact.p_value == 1.0 and exact.low == 0.0 and exact.lower_is_zero
    assert exact.high == gauss.high


# ----------------------------------------------------------------------------- linear form


@pytest.mark.parametrize("kind,norm", [("top_label", "l1"), ("classwise", "l1"),
                                       ("top_label", "l2"), ("classwise", "l2")])
def test_the_linear_form_reproduces_the_plug_in_ece(kind, norm):
    sim = nc.simulate.classifier(800, 4, temperature=0.7, seed=2)
    plug = nc.ece(sim.probs, sim.labels, kind=kind, norm=norm, n_bins=10, interval=None)
    conf, tgt, _ = group_scores(sim.probs, np.eye(4)[sim.labels], kind)
    binned = make_binned(conf, tgt, 10, "uniform", with_sq=False)
    mean, cov, w = binned_linear_form(binned, norm)
    assert float(norm_of_means(mean, w, norm)) == pytest.approx(plug.value, rel=1e-12)
    # The covariance of the means: its diagonal is each bin's sum of squared gaps over n^2
    # less the mean squared, with the n - 1 divisor (top-label block checked by hand).
    d = binned.data[0, :, 2] - binned.data[0, :, 1]
    b = binned.bins[0]
    n = d.size
    j = int(np.argmax(np.bincount(b, minlength=10)))
    x = np.where(b == j, d, 0.0)
    assert cov[j, j] == pytest.approx(np.var(x, ddof=1) / n, rel=1e-10)


def test_cluster_covariance_equals_item_covariance_for_singleton_clusters():
    sim = nc.simulate.binary_scores(400, slope=0.8, seed=4)
    conf, tgt, _ = group_scores(np.column_stack([1 - sim.p, sim.p]),
                                np.eye(2)[sim.y], "positive_class")
    binned = make_binned(conf, tgt, 10, "uniform", with_sq=False)
    _, cov_items, _ = binned_linear_form(binned, "l1")
    _, cov_clusters, _ = binned_linear_form(binned, "l1", np.arange(400), 400)
    np.testing.assert_allclose(cov_clusters, cov_items, rtol=1e-10, atol=1e-16)


def _two_bins(p, y):
    """Positive-class layout of scores p and hard labels y in 2 equal-width bins."""
    p = np.asarray(p, dtype=float)
    return make_binned(p[:, None], np.asarray(y, dtype=float)[:, None, None], 2, "uniform",
                       with_sq=False)


def test_variance_floor_by_hand():
    # Bin 0 holds p = 0.1, 0.2 with labels 0, 0; bin 1 holds p = 0.7, 0.9 with labels 1, 0;
    # n = 4. Contributions x_i0 = (-0.1, -0.2, 0, 0), x_i1 = (0, 0, 0.3, -0.9).
    # Sample covariance of the means (n - 1 divisor, over n): var_0 = 0.0275 / 12,
    # var_1 = 0.81 / 12, cov_01 = -0.045 / 12. Under calibration the bin means have
    # variances (0.1 * 0.9 + 0.2 * 0.8) / 16 = 0.015625 (above var_0 = 0.00229: the floor
    # binds) and (0.7 * 0.3 + 0.9 * 0.1) / 16 = 0.01875 (below var_1 = 0.0675: it does not).
    from noisycal.metrics.binned.form import calibrated_bin_variance
    binned = _two_bins([0.1, 0.2, 0.7, 0.9], [0, 0, 1, 0])
    np.testing.assert_allclose(calibrated_bin_variance(binned), [0.015625, 0.01875],
                               rtol=1e-12)
    mean, raw, _ = binned_linear_form(binned, "l1")
    np.testing.assert_allclose(mean, [-0.075, -0.15], rtol=1e-12)
    np.testing.assert_allclose(raw, np.array([[0.0275, -0.045], [-0.045, 0.81]]) / 12,
                               rtol=1e-12)
    _, floored, _ = binned_linear_form(binned, "l1", variance_floor="calibrated")
    np.testing.assert_allclose(floored, np.array([[0.015625, -0.045 / 12],
                                                  [-0.045 / 12, 0.81 / 12]]), rtol=1e-12)
    with pytest.raises(ValueError, match="variance_floor"):
        binned_linear_form(binned, "l1", variance_floor="bernoulli")


def test_variance_floor_classwise_and_where_it_does_not_apply():
    # Classwise: item i adds p_ik (1 - p_ik) / n^2 to the floor of class k's bin.
    from noisycal.metrics.binned.form import calibrated_bin_variance
    P = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])
    conf, tgt, _ = group_scores(P, np.eye(3)[[0, 1, 2]], "classwise")
    binned = make_binned(conf, tgt, 2, "uniform", with_sq=False)
    floor = calibrated_bin_variance(binned).reshape(3, 2)
    v = P * (1 - P) / 9
    np.testing.assert_allclose(floor, [[v[2, 0], v[0, 0] + v[1, 0]],
                                       [v[:, 1].sum(), 0.0],
                                       [v[0, 2] + v[1, 2], v[2, 2]]], rtol=1e-12)
    # Soft targets and clustered data keep the sample covariance.
    soft = make_binned(np.array([[0.1], [0.2], [0.7], [0.9]]),
                       np.array([0.0, 1 / 3, 2 / 3, 1.0])[:, None, None], 2, "uniform",
                       with_sq=False)
    for b, codes in ((soft, None), (_two_bins([0.1, 0.2, 0.7, 0.9], [0, 0, 1, 0]),
                                    np.array([0, 0, 1, 1]))):
        a = binned_linear_form(b, "l1", codes, None if codes is None else 2)[1]
        f = binned_linear_form(b, "l1", codes, None if codes is None else 2,
                               variance_floor="calibrated")[1]
        np.testing.assert_array_equal(a, f)


def test_default_interval_uses_the_variance_floor_for_hard_labels_only():
    s = nc.simulate.binary_scores(300, slope=0.9, seed=2)
    hard = nc.ece(s.p, s.y, n_bins=10, interval=nc.intervals.Inversion(n_boot=300), seed=1)
    soft = nc.ece(s.p, s.true_prob, n_bins=10, interval=nc.intervals.Inversion(n_boot=300), seed=1)
    assert hard.details["variance_floor"].startswith("calibrated")
    assert soft.details["variance_floor"] == "none"


# ----------------------------------------------------------------------------- ece API


def test_default_ece_reports_the_median_unbiased_value_with_the_plug_in_in_details():
    sim = nc.simulate.binary_scores(1500, seed=5)          # calibrated
    est = nc.ece(sim.p, sim.y, n_bins=10)
    plug = nc.ece(sim.p, sim.y, n_bins=10, interval=None)
    assert est.kind == "inversion" and est.estimator == "median-unbiased"
    assert est.details["plugin"] == pytest.approx(plug.value, rel=1e-12)
    assert plug.estimator == "plug-in"
    assert est.low <= est.value <= est.high
    assert est.value < plug.value                             # the plug-in's upward bias
    assert "held fixed" in est.estimand
    forced = nc.ece(sim.p, sim.y, n_bins=10, estimator="plug-in")
    assert forced.value == pytest.approx(plug.value) and forced.interval == est.interval


def test_estimator_and_interval_options_are_checked():
    sim = nc.simulate.binary_scores(200, seed=6)
    with pytest.raises(ValueError, match="estimator"):
        nc.ece(sim.p, sim.y, estimator="mean")
    with pytest.raises(ValueError, match="needs interval='inversion'"):
        nc.ece(sim.p, sim.y, interval="bootstrap", estimator="median-unbiased")
    with pytest.raises(ValueError, match="n_boot"):
        nc.ece(sim.p, sim.y, interval=nc.intervals.Inversion(n_boot=50))
    with pytest.raises(ValueError, match="MCE"):
        nc.mce(sim.p, sim.y, interval="inversion")
    with pytest.raises(ValueError, match="two different"):
        nc.ece(sim.p, sim.y, norm="l2", debias=True, estimator="median-unbiased")


def test_a_clearly_miscalibrated_model_excludes_zero():
    sim = nc.simulate.binary_scores(3000, slope=0.5, seed=7)
    est = nc.ece(sim.p, sim.y, n_bins=10)
    pop = nc.simulate.population_binned_ece(10, slope=0.5)
    assert est.low > 0 and not est.details["lower_is_zero"] and "note" not in est.details
    assert est.low <= pop <= est.high


# ----------------------------------------------------------------------------- the test


def test_calibration_test_p_values_are_uniform_under_the_null():
    p = []
    for r in range(200):
        s = nc.simulate.binary_scores(400, a=0.6, b=0.6, seed=100 + r)
        p.append(nc.calibration_test(s.p, s.y, n_bins=10, n_boot=200, seed=r).p_value)
    p = np.array(p)
    assert 0.05 <= np.mean(p <= 0.1) <= 0.16
    assert sps.kstest(p, "uniform").pvalue > 0.01


def test_calibration_test_has_power_against_overconfidence():
    rejections = []
    for r in range(40):
        s = nc.simulate.binary_scores(2000, slope=0.75, seed=300 + r)
        rejections.append(nc.calibration_test(s.p, s.y, n_bins=10, n_boot=200,
                                              seed=r).p_value <= 0.1)
    assert np.mean(rejections) >= 0.9


def test_gaussian_null_equals_the_inverted_interval_p_value():
    # A soft target: the inverted interval's zero test is the Gaussian null.
    s = nc.simulate.binary_scores(1000, slope=0.9, seed=8)
    soft = np.clip(s.true_prob + 0.05 * (s.y - 0.5), 0.0, 1.0)
    t = nc.calibration_test(s.p, soft, n_bins=10, method="gaussian", n_boot=1000, seed=3)
    est = nc.ece(s.p, soft, n_bins=10, interval=nc.intervals.Inversion(n_boot=1000), seed=3)
    assert est.details["zero_test"] == "gaussian"
    assert t.p_value == pytest.approx(est.details["p_value_zero"])
    assert t.statistic == pytest.approx(est.details["plugin"])


@pytest.mark.parametrize("kind", ["positive_class", "classwise", "top_label"])
def test_consistency_null_is_the_inverted_interval_zero_test_for_hard_labels(kind):
    # One-hot targets: the zero test of the default interval is the calibration test
    # by consistency resampling (the same draws for the same seed).
    if kind == "positive_class":
        s = nc.simulate.binary_scores(600, slope=0.9, seed=8)
        probs, y = s.p, s.y
    else:
        sim = nc.simulate.classifier(400, 4, temperature=1.3, n_annotators=1, seed=8)
        probs, y = sim.probs, sim.labels
    t = nc.calibration_test(probs, y, n_bins=8, kind=kind, n_boot=500, seed=3)
    est = nc.ece(probs, y, n_bins=8, kind=kind, interval=nc.intervals.Inversion(n_boot=500),
                 seed=3)
    assert t.method == "consistency" and est.details["zero_test"] == "consistency"
    assert t.p_value == est.details["p_value_zero"]
    assert est.details["lower_is_zero"] == (est.low == 0.0)
    if t.p_value > 0.1:
        assert est.low == 0.0


def test_consistency_null_matches_its_exact_distribution():
    # 1000 items of confidence 0.2 in one bin: under redrawn labels the statistic is
    # |K/1000 - 0.2| with K ~ Binomial(1000, 0.2), whose law is known exactly.
    from noisycal.metrics.binned.bins import make_binned
    from noisycal.metrics.binned.form import consistency_null
    binned = make_binned(np.full((1000, 1), 0.2), np.zeros((1000, 1, 1)), 1, "uniform",
                         with_sq=False)
    null = consistency_null(binned, np.ones(1), "l1", 4000, 0)
    k = np.arange(1001)
    pmf = sps.binom.pmf(k, 1000, 0.2)
    exact_mean = float(np.sum(pmf * np.abs(k / 1000 - 0.2)))
    assert np.mean(null) == pytest.approx(exact_mean, abs=4 * np.std(null) / np.sqrt(4000))
    assert np.allclose(null * 1000, np.round(null * 1000))          # on the lattice k/1000
    tail = float(np.sum(pmf[np.abs(k / 1000 - 0.2) >= 0.02 - 1e-12]))
    assert np.mean(null >= 0.02 - 1e-12) == pytest.approx(tail, abs=0.025)



def test_consistency_needs_one_hot_targets():
    s = nc.simulate.binary_scores(300, seed=9)
    with pytest.raises(ValueError, match="one-hot"):
        nc.calibration_test(s.p, s.true_prob, method="consistency")
    soft = nc.calibration_test(s.p, s.true_prob, n_bins=10)       # auto: gaussian
    assert soft.method == "gaussian" and soft.p_value > 0.1
