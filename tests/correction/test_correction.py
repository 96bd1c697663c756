"""Noise-corrected targets (paper 003) and NC-ECE as the ECE with a corrected target."""


import numpy as np
import pandas as pd
import pytest
from small_nuts import TWO_CHAINS

import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.correction import (
    corrected_from_channels,
    fit_prevalence,
    iv_weights,
    kclass_iv_weights,
    marginal_prevalence,
)

A_TOY, B_TOY = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B


def binary(t):
    return np.column_stack([1 - t, t])


@pytest.mark.parametrize("mu, expected", [
    # spec-003 section 9 (population values by quadrature)
    (0.553226, [0.31967, 0.32745, 0.35288]),  # calibrated
    (0.477939, [0.33818, 0.32803, 0.33378]),  # shifted
    (0.542015, [0.32242, 0.32762, 0.34996]),  # nonlinear
])
def test_iv_weights_match_the_spec(mu, expected):
    np.testing.assert_allclose(iv_weights(A_TOY, B_TOY, mu), expected, atol=5e-6)


def test_hand_computed_corrected_labels_and_missing_ratings():
    A = np.array([[1, 1, 0], [0, 0, 0], [1, np.nan, np.nan]])
    t = nc.targets.corrected(A, a=[0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9], weights="equal")
    # (A - .1)/.8 averaged over the rating annotators; item 3 has one rating: .9/.8
    np.testing.assert_allclose(t.values[:, 1], [(0.9 + 0.9 - 0.1) / 2.4, -0.125, 1.125])
    np.testing.assert_allclose(t.values.sum(1), 1.0)
    assert t.kind == "corrected" and not t.is_probability
    w = nc.targets.corrected(A[:2], a=[0.1, 0.2, 0.1], b=[0.9, 0.9, 0.5], weights="gap")
    np.testing.assert_allclose(w.details["weights"], np.array([0.8, 0.7, 0.4]) / 1.9)


def test_toy_reproduction_calibrated_case():
    """Soft vote -> 0.055587 and majority vote -> 0.017670 (M = 10), NC-ECE -> 0."""
    soft, maj, ncv, small_nc = [], [], [], []
    for r in range(6):
        t = nc.simulate.gaussian_toy(200_000, seed=r)
        sv = t.annotations.mean(1)
        mv = (t.annotations.sum(1) >= 2).astype(float)
        soft.append(float(nc.ece(t.z, binary(sv), n_bins=10, interval=None)))
        maj.append(float(nc.ece(t.z, binary(mv), n_bins=10, interval=None)))
        U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)
        ncv.append(float(nc.ece(t.z, U, n_bins=10, interval=None)))
        s = nc.simulate.gaussian_toy(12_500, seed=100 + r)
        Us = nc.targets.corrected(s.annotations, a=A_TOY, b=B_TOY)
        small_nc.append(float(nc.ece(s.z, Us, n_bins=10, interval=None)))
    se = lambda x: np.std(x, ddof=1) / np.sqrt(len(x))  # noqa: E731
    assert abs(np.mean(soft) - 0.055587) < 3 * se(soft) + 2e-4
    assert abs(np.mean(maj) - 0.017670) < 3 * se(maj) + 2e-4
    # NC-ECE targets the population ECE (0): small, and shrinking like n^-1/2
    assert np.mean(ncv) < 0.004
    assert np.mean(small_nc) / np.mean(ncv) > 2.5
    # the naive estimators do not shrink with n
    s = nc.simulate.gaussian_toy(12_500, seed=7)
    small_soft = float(nc.ece(s.z, binary(s.annotations.mean(1)), n_bins=10, interval=None))
    # abs 0.012 (22%): one sample of 12,500 items; the soft-vote ECE's sampling SD there
    # is about 0.004, so this is ~3 SD around the population value 0.0556
    assert small_soft == pytest.approx(0.0556, abs=0.012)


def test_shifted_case_nc_ece_tracks_clean_ece():
    t = nc.simulate.gaussian_toy(100_000, truth="shifted", seed=3)
    clean = float(nc.ece(t.z, t.y, n_bins=10, interval=None))
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)
    ncv = float(nc.ece(t.z, U, n_bins=10, interval=None))
    soft = float(nc.ece(t.z, binary(t.annotations.mean(1)), n_bins=10, interval=None))
    assert ncv == pytest.approx(0.089625, abs=0.006)   # population ECE_B, M = 10
    assert clean == pytest.approx(0.089625, abs=0.006)
    assert soft == pytest.approx(0.116529, abs=0.006)  # biased naive target


def test_corrected_target_from_a_dawid_skene_fit():
    t = nc.simulate.gaussian_toy(20_000, truth="shifted", seed=4)
    ann = nc.Annotations.from_wide(t.annotations)
    fit = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    np.testing.assert_allclose(fit.confusion[:, 0, 1], A_TOY, atol=0.02)
    np.testing.assert_allclose(fit.confusion[:, 1, 1], B_TOY, atol=0.02)
    est = nc.targets.corrected(ann, fit)
    oracle = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)
    assert est.details["prevalence"] == pytest.approx(0.4779, abs=0.02)
    e1 = float(nc.ece(t.z, est, n_bins=10, interval=None))
    e2 = float(nc.ece(t.z, oracle, n_bins=10, interval=None))
    assert e1 == pytest.approx(e2, abs=0.01)


def test_multiclass_correction_is_unbiased():
    conf = np.array([
        [[0.8, 0.1, 0.1], [0.15, 0.7, 0.15], [0.05, 0.15, 0.8]],
        [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.1, 0.7]],
        [[0.9, 0.05, 0.05], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]],
    ])
    sim = nc.simulate.dawid_skene(60_000, [0.5, 0.3, 0.2], conf, seed=5)
    # weights='iv' (the default) for K = 3: the trace-IV weights (our generalisation of
    # Lemma C.6) at the plug-in prevalence, the mean of the equally weighted target
    T = nc.targets.corrected(sim.annotations, confusion=conf)
    assert T.details["weights_rule"] == "iv" and T.details["prevalence_source"] == "plugin"
    eq = nc.targets.corrected(sim.annotations, confusion=conf, weights="equal")
    np.testing.assert_allclose(T.details["prevalence"], eq.values.mean(0), rtol=1e-12)
    np.testing.assert_allclose(T.details["prevalence"], [0.5, 0.3, 0.2], atol=0.01)
    np.testing.assert_allclose(T.details["weights"],
                               kclass_iv_weights(conf, T.details["prevalence"]), rtol=1e-12)
    for y in range(3):
        rows = T.values[sim.true_class == y]
        se = rows.std(0, ddof=1) / np.sqrt(len(rows))
        assert np.all(np.abs(rows.mean(0) - np.eye(3)[y]) < 4 * se)
    # two classes: the K-class formula reduces to (A - a) / (b - a)
    A = (np.random.default_rng(0).random((50, 3)) < 0.5).astype(float)
    c2 = np.stack([np.stack([1 - A_TOY, A_TOY], 1), np.stack([1 - B_TOY, B_TOY], 1)], 1)
    t1 = nc.targets.corrected(A, confusion=c2, weights="equal")
    t2 = nc.targets.corrected(A, a=A_TOY, b=B_TOY, weights="equal")
    np.testing.assert_allclose(t1.values, t2.values, atol=1e-12)


def test_non_identification_example_of_the_spec():
    """(a, b, m) = (.2, .8, .25 + .5z) and (.1, .9, .3125 + .375z) give the same
    P(A = 1 | z) = .35 + .3z, but ECE 1/8 versus 5/32 (Z uniform)."""
    z = np.linspace(0, 1, 2_000_001)
    m1, m2 = 0.25 + 0.5 * z, 0.3125 + 0.375 * z
    np.testing.assert_allclose(0.2 + 0.6 * m1, 0.1 + 0.8 * m2, atol=1e-12)
    assert np.mean(np.abs(m1 - z)) == pytest.approx(1 / 8, abs=1e-6)
    assert np.mean(np.abs(m2 - z)) == pytest.approx(5 / 32, abs=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(a=[0.5, 0.1, 0.1], b=[0.4, 0.9, 0.9]), "b - a"),
    (dict(a=[0.5, 0.1, 0.1], b=[0.50005, 0.9, 0.9]), "b - a"),
    (dict(a=[0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9], weights=[0.5, 0.6, -0.1]), "simplex"),
    (dict(a=[0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9], weights="inverse"), "weights"),
    (dict(a=[0.1, 0.1], b=[0.9, 0.9]), "shape"),
    (dict(confusion=np.full((3, 2, 2), 0.6)), "probability"),
    (dict(), "exactly one"),
])
def test_bad_input(kwargs, match):
    A = np.array([[1, 0, 1], [0, 0, 1]])
    with pytest.raises(ValueError, match=match):
        nc.targets.corrected(A, **kwargs)


def test_labels_outside_binary_rejected():
    with pytest.raises(ValueError, match="labels"):
        nc.targets.corrected(np.array([[1, 2, 0]]), a=[0.1] * 3, b=[0.9] * 3)


def test_bound_components_by_hand():
    t = nc.simulate.gaussian_toy(5000, truth="shifted", seed=1)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY, weights="equal")
    est = nc.ece(t.z, U, n_bins=10, interval=nc.intervals.Bound(kind="hoeffding"), level=0.95)
    B = 1 / 0.76  # equal gaps: B-hat = sum alpha_j / delta_j = 1 / 0.76
    rad = B * np.sqrt(2 * (10 * np.log(2) + np.log(2 / 0.05)) / 5000)
    assert est.details["B_hat"] == pytest.approx(B, rel=1e-12)
    assert est.details["sampling_radius"] == pytest.approx(rad, rel=1e-12)
    assert rad == pytest.approx(0.0858, abs=5e-4)  # spec-003 section 9 sanity value
    assert est.interval == (pytest.approx(max(0, float(est) - rad)),
                            pytest.approx(float(est) + rad))
    assert est.kind == "bound" and "exact channels" in est.message
    same = nc.ece(t.z, U, n_bins=10,
                  interval=nc.intervals.Bound(kind="hoeffding", same_sample=True), level=0.95)
    rad6 = B * np.sqrt(2 * (10 * np.log(2) + np.log(6 * 3 / 0.05)) / 5000)
    assert same.details["sampling_radius"] == pytest.approx(rad6, rel=1e-12)
    r = nc.ece(t.z, U, n_bins=10, interval=nc.intervals.Bound(channel_radius=0.01))
    assert r.details["channel_term"] == pytest.approx(B * 0.01)
    with pytest.raises(ValueError, match="corrected"):
        nc.ece(t.z, t.y, n_bins=10, interval="bound")
    with pytest.raises(ValueError, match="true_channels"):
        nc.ece(t.z, U, interval=nc.intervals.Bound(mode="oracle"))
    with pytest.raises(ValueError, match="interval"):
        nc.true_label_ece(binary(t.z), binary(t.z), interval="bound")


def test_theorem1_interval_covers_binned_ece():
    """Oracle channels, shifted truth, n = 5000, M = 10: coverage >= 1 - eta over 200 runs."""
    pop = 0.089625  # ECE_B, M = 10 (spec-003 section 9)
    hits = 0
    for r in range(200):
        t = nc.simulate.gaussian_toy(5000, truth="shifted", seed=2000 + r)
        U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY, weights="equal")
        est = nc.ece(t.z, U, n_bins=10, interval=nc.intervals.Bound(true_channels=(A_TOY, B_TOY)),
                     level=0.95)
        hits += est.low <= pop <= est.high
    print(f"Theorem 1 interval (eta = 0.05) covered ECE_B in {hits}/200 runs")
    assert hits / 200 >= 0.95


def test_bound_with_estimated_channels_and_oracle_channel_term():
    t = nc.simulate.gaussian_toy(20_000, truth="shifted", seed=5)
    ann = nc.Annotations.from_wide(t.annotations)
    fit = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=3))
    U = nc.targets.corrected(ann, fit)
    est = nc.ece(t.z, U, n_bins=10,
                 interval=nc.intervals.Bound(true_channels=(A_TOY, B_TOY), same_sample=True),
                 level=0.9)
    e = np.maximum(np.abs(fit.confusion[:, 0, 1] - A_TOY), np.abs(fit.confusion[:, 1, 1] - B_TOY))
    alpha = U.details["weights"]
    delta = fit.confusion[:, 1, 1] - fit.confusion[:, 0, 1]
    assert est.details["channel_term"] == pytest.approx(np.sum(alpha * e / delta), rel=1e-12)
    assert est.low <= 0.089625 <= est.high


def test_credible_interval_from_nuts_channels():
    t = nc.simulate.gaussian_toy(2000, truth="shifted", seed=9)
    ann = nc.Annotations.from_wide(t.annotations)
    fit = nc.DawidSkene().fit(ann, method=nc.engines.NUTS(**TWO_CHAINS, rhat_threshold=1.1))
    U = nc.targets.corrected(ann, fit)
    cred = nc.ece(t.z, U, n_bins=10, interval="credible", level=0.9, seed=1)
    assert cred.kind == "credible" and cred.method == "credible-eti"
    n_draws = TWO_CHAINS["num_chains"] * TWO_CHAINS["num_samples"]
    assert cred.details["n_channel_draws"] == n_draws and cred.replicates.shape == (n_draws,)
    assert cred.low < float(cred) < cred.high
    again = nc.ece(t.z, U, n_bins=10, interval="credible", level=0.9, seed=1)
    assert again.interval == cred.interval
    em = nc.targets.corrected(ann, nc.DawidSkene().fit(ann))
    with pytest.raises(ValueError, match="NUTS"):
        nc.ece(t.z, em, n_bins=10, interval="credible")


def test_cross_fitted_nc_ece():
    t = nc.simulate.gaussian_toy(20_000, truth="shifted", seed=11)
    ann = nc.Annotations.from_wide(t.annotations)
    folds = np.arange(20_000) % 3
    est = nc.workflows.nc_ece_crossfit(t.z, ann, folds=folds, level=0.9)
    # by hand: fit on two folds, correct the third, pool residuals, then absolute values
    r = np.zeros(10)
    bins = np.minimum((t.z * 10).astype(int), 9)
    for k in range(3):
        test, train = np.flatnonzero(folds == k), np.flatnonzero(folds != k)
        fit = nc.DawidSkene().fit(ann.subset(train), seed=0)
        U = nc.targets.corrected(ann.subset(test), confusion=fit.confusion,
                                 prevalence=fit.prevalence[1])
        r += np.bincount(bins[test], weights=U.values[:, 1] - t.z[test], minlength=10) / 20_000
    assert float(est) == pytest.approx(np.abs(r).sum(), rel=1e-10)
    assert float(est) == pytest.approx(0.089625, abs=0.01)
    assert est.low <= 0.089625 <= est.high
    assert est.details["n_folds"] == 3 and len(est.details["per_fold"]) == 3
    with pytest.raises(ValueError, match="probs has"):
        nc.workflows.nc_ece_crossfit(t.z[:10], ann)
    with pytest.raises(ValueError, match="n_folds"):
        nc.workflows.nc_ece_crossfit(t.z, ann, n_folds=1)


def _grouped_data(n=150, seed=0):
    """Two groups of unequal size and prevalence (100 items at 0.2, 50 at 0.8)."""
    rng = np.random.default_rng(seed)
    g = np.where(np.arange(n) < 100, "a", "b")
    y = rng.random(n) < np.where(g == "a", 0.2, 0.8)
    A = (rng.random((n, 3)) < np.where(y[:, None], [0.85, 0.8, 0.75],
                                       [0.1, 0.2, 0.15])).astype(int)
    ann = nc.Annotations.from_wide(A, classes=[0, 1])
    z = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    return ann, z, pd.Series(g, index=ann.items)


def test_fit_prevalence_weights_groups_by_size():
    ann, _, g = _grouped_data()
    fit = nc.GroupedDawidSkene(2).fit(ann, groups=g.to_numpy(), seed=0)
    gp = np.asarray(fit.group_prevalence)[:, 1]
    sizes = np.bincount(fit.details["group_index"])
    assert sizes.tolist() == [100, 50]
    assert fit_prevalence(fit) == pytest.approx(float(sizes @ gp / 150), rel=1e-12)
    assert abs(fit_prevalence(fit) - gp.mean()) > 0.05  # the unweighted mean is different
    with x64():
        on_jax = float(marginal_prevalence(jnp.asarray(gp), jnp.asarray(sizes, float), xp=jnp))
    assert on_jax == pytest.approx(fit_prevalence(fit), rel=1e-12)


def test_corrected_from_channels_is_the_corrected_labels_formula_on_numpy_and_jax():
    rng = np.random.default_rng(0)
    A = (rng.random((30, 4)) < 0.5).astype(float)
    A[rng.random((30, 4)) < 0.2] = np.nan
    A[:, 0] = np.where(np.isnan(A[:, 0]), 1.0, A[:, 0])
    a, b = np.array([0.1, 0.2, 0.3, 0.5]), np.array([0.9, 0.8, 0.7, 0.5])
    t = nc.targets.corrected(A, a=a[:3].tolist() + [0.45], b=b[:3].tolist() + [0.9],
                             informative=np.array([True, True, True, False]))
    d = t.details
    args = (d["ratings"], d["observed"], d["informative"], d["weights"], d["confusion"])
    np.testing.assert_allclose(corrected_from_channels(*args), t.values, atol=1e-14)
    with x64():
        via_jax = corrected_from_channels(*(jnp.asarray(x) for x in args), xp=jnp)
    np.testing.assert_allclose(np.asarray(via_jax), t.values, atol=1e-12)
    # the binary closed form U = sum_j alpha_j (A_ij - a_j) / (b_j - a_j)
    aa, bb = d["confusion"][:, 0, 1], d["confusion"][:, 1, 1]
    w = np.where(d["observed"] & d["informative"], d["weights"], 0.0)
    u = np.nansum(w * (np.nan_to_num(A) - aa) / (bb - aa), 1) / w.sum(1)
    np.testing.assert_allclose(t.values[:, 1], u, atol=1e-12)
