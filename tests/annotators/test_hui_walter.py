"""Hui–Walter method of moments and grouped GMM (Hui & Walter, 1980; Definition D.1 of
"Noisy-Label Calibration with Multiple Unreliable Labels")."""

import warnings

import numpy as np
import pytest
from scipy.stats import chi2

import jax
import jax.numpy as jnp

import noisycal as nc
import noisycal.engines.gmm as gmm_engine
from noisycal.annotators.hui_walter import equal_count_groups
from noisycal.engines.gmm import gmm_fit_moments
from noisycal.engines.moments import (
    grouped_moments,
    hui_walter_inverse,
    hui_walter_moments,
)


@pytest.mark.parametrize("theta", [
    [0.08, 0.84, 0.13, 0.89, 0.30, 0.70],
    [0.20, 0.95, 0.01, 0.60, 0.65, 0.10],
    [0.45, 0.55, 0.30, 0.99, 0.05, 0.95],
])
def test_inverse_is_exact_on_population_moments(theta):
    theta = np.asarray(theta)
    with jax.enable_x64(True):
        q = np.asarray(hui_walter_moments(jnp.asarray(theta)))
        jac = np.asarray(jax.jacfwd(hui_walter_moments)(jnp.asarray(theta)))
    est, status, _ = hui_walter_inverse(q)
    assert status == "ok"
    np.testing.assert_allclose(est, theta, atol=1e-12)
    a1, b1, a2, b2, mu0, mu1 = theta
    expected_det = (b1 - a1) ** 2 * (b2 - a2) ** 2 * (mu1 - mu0) ** 2
    assert abs(np.linalg.det(jac)) == pytest.approx(expected_det, rel=1e-10)


def test_recovers_toy_channels_at_the_median_split():
    t = nc.simulate.gaussian_toy(200_000, truth="shifted", seed=0)
    g = (t.z >= np.median(t.z)).astype(int)
    fit = nc.HuiWalter().fit(t.annotations[:, :2], groups=g)
    assert fit.status == "ok"
    np.testing.assert_allclose(fit.confusion[:, 0, 1], [0.08, 0.13], atol=0.01)
    np.testing.assert_allclose(fit.confusion[:, 1, 1], [0.84, 0.89], atol=0.01)
    d = fit.details
    a, b = fit.confusion[:, 0, 1], fit.confusion[:, 1, 1]
    mu = fit.prevalence[:, 1]
    assert abs(d["jacobian_det"]) == pytest.approx(
        np.prod((b - a) ** 2) * (mu[1] - mu[0]) ** 2, rel=1e-8)
    np.testing.assert_allclose(fit.item_posterior.sum(1), 1.0)
    # the same data through Annotations
    ann = nc.Annotations.from_wide(t.annotations[:5000, :2])
    assert nc.HuiWalter().fit(ann, groups=g[:5000]).status == "ok"


def test_equal_groups_are_reported_not_identified():
    rng = np.random.default_rng(1)
    y = rng.random(4000) < 0.4
    A = np.column_stack([(rng.random(4000) < np.where(y, 0.9, 0.1)),
                         (rng.random(4000) < np.where(y, 0.8, 0.2))]).astype(float)
    g = rng.integers(0, 2, 4000)  # groups unrelated to the class: mu_0 = mu_1
    with pytest.warns(nc.IdentifiabilityWarning):
        fits = [nc.HuiWalter().fit(A, groups=rng.permutation(g)) for _ in range(5)]
    # with mu_0 = mu_1 the inverse is ill-posed: most draws fail outright, and the
    # Jacobian diagnostic is near zero whenever they do not
    assert any(f.status == "infeasible_mom" for f in fits)
    for f in fits:
        if f.status == "ok":
            assert f.details["jacobian_min_sv"] < 0.05


@pytest.mark.parametrize("A, groups, match", [
    (np.zeros((4, 3)), [0, 0, 1, 1], "shape"),
    (np.full((4, 2), 2.0), [0, 0, 1, 1], "0/1"),
    (np.zeros((4, 2)), [0, 0, 0, 0], "two groups"),
    (np.zeros((4, 2)), [0, 1, 2, 0], "two groups"),
    (np.zeros((4, 2)), [0, 1], "one entry per item"),
])
def test_bad_input(A, groups, match):
    with pytest.raises(ValueError, match=match):
        nc.HuiWalter().fit(A, groups=np.asarray(groups))


def test_moment_triple_is_exact_on_population_frequencies():
    from itertools import product

    from noisycal.annotators import moment_triple

    mu, a, b = 0.25, np.array([0.10, 0.15, 0.20]), np.array([0.80, 0.90, 0.85])
    rows, N = [], 32_000  # every pattern probability is a multiple of 1/32000
    for s in product([0, 1], repeat=3):
        s = np.array(s)
        p = (1 - mu) * np.prod(np.where(s == 1, a, 1 - a)) + mu * np.prod(np.where(s == 1, b,
                                                                                  1 - b))
        rows += [s] * int(round(p * N))
    res = moment_triple(np.array(rows))
    assert len(rows) == N and res["status"] == "ok"
    np.testing.assert_allclose(res["a"], a, atol=1e-10)
    np.testing.assert_allclose(res["b"], b, atol=1e-10)
    assert res["prevalence"] == pytest.approx(mu, abs=1e-10)
    # anchor choice does not change the answer; recovery on the toy
    again = moment_triple(np.array(rows), anchor=2)
    np.testing.assert_allclose(again["a"], a, atol=1e-10)
    t = nc.simulate.gaussian_toy(200_000, truth="shifted", seed=0)
    toy = moment_triple(t.annotations)
    np.testing.assert_allclose(toy["a"], [0.08, 0.13, 0.18], atol=0.01)
    np.testing.assert_allclose(toy["b"], [0.84, 0.89, 0.94], atol=0.01)
    assert toy["prevalence"] == pytest.approx(0.477939, abs=0.01)
    with pytest.raises(ValueError, match="0/1"):
        moment_triple(np.zeros((5, 2)))


# ----------------------------------------------------------------------------------------
# grouped GMM (spec 3.3)
# ----------------------------------------------------------------------------------------

# truth of the L = 4 simulation (the design)
A4, B4, MU4 = np.array([0.10, 0.20]), np.array([0.85, 0.70]), np.array([0.15, 0.40, 0.60, 0.85])
THETA4 = np.r_[A4[0], B4[0], A4[1], B4[1], MU4]


def _simulate(n, a, b, mu, seed):
    """n items in len(mu) equal groups 0..L-1; annotators independent given Y."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(mu)), n // len(mu))
    y = rng.random(g.size) < np.asarray(mu)[g]
    A = (rng.random((g.size, 2)) < np.where(y[:, None], b, a)).astype(float)
    return A, g


def _theta_of(fit):
    return np.r_[fit.confusion[0, :, 1], fit.confusion[1, :, 1], fit.prevalence[:, 1]]


def _exact_dataset(theta, n_per_group):
    """Rows whose group cell frequencies equal the model probabilities exactly."""
    a, b, mu = np.asarray(theta)[[0, 2]], np.asarray(theta)[[1, 3]], np.asarray(theta)[4:]
    rows, groups = [], []
    for g, m in enumerate(mu):
        for s in ([0, 0], [0, 1], [1, 0], [1, 1]):
            s = np.array(s)
            p = (1 - m) * np.prod(np.where(s == 1, a, 1 - a)) + m * np.prod(
                np.where(s == 1, b, 1 - b))
            k = int(round(p * n_per_group))
            assert k == pytest.approx(p * n_per_group, abs=1e-9)  # exact frequencies
            rows += [s] * k
            groups += [g] * k
    return np.array(rows, dtype=float), np.array(groups)


def test_grouped_moments_generalise_the_two_group_moments():
    theta = np.array([0.08, 0.84, 0.13, 0.89, 0.30, 0.70])
    with jax.enable_x64(True):
        np.testing.assert_array_equal(np.asarray(grouped_moments(theta, 2)),
                                      np.asarray(hui_walter_moments(jnp.asarray(theta))))
        q4 = np.asarray(grouped_moments(THETA4, 4)).reshape(4, 3)
    np.testing.assert_allclose(q4[:, 0], A4[0] + (B4[0] - A4[0]) * MU4, rtol=1e-15)
    np.testing.assert_allclose(q4[:, 2], (1 - MU4) * A4[0] * A4[1] + MU4 * B4[0] * B4[1],
                               rtol=1e-15)
    with pytest.raises(ValueError, match="theta must have shape"):
        grouped_moments(theta, 3)


def test_gmm_equals_mom_on_exact_population_moments_two_groups():
    theta = np.array([0.10, 0.80, 0.20, 0.70, 0.20, 0.60])
    with jax.enable_x64(True):
        q = np.asarray(grouped_moments(theta, 2))
    sol = gmm_fit_moments(q, 2)
    mom, status, _ = hui_walter_inverse(q)
    assert status == "ok" and sol.success
    np.testing.assert_allclose(sol.theta, mom, atol=1e-6)
    np.testing.assert_allclose(sol.theta, theta, atol=1e-6)
    assert 0 <= sol.objective < 1e-20
    # the same moments as data: MoM and both GMM weights recover theta
    A, g = _exact_dataset(theta, 1000)
    assert A.shape == (2000, 2)
    fits = [nc.HuiWalter().fit(A, groups=g),
            nc.HuiWalter().fit(A, groups=g, method="gmm"),
            nc.HuiWalter().fit(A, groups=g, method=nc.engines.GMM(weight="efficient"))]
    for fit in fits:
        assert fit.status == "ok"
        np.testing.assert_allclose(_theta_of(fit), theta, atol=1e-6)
    assert fits[2].details["objective"] < 1e-12
    assert fits[1].details["jacobian_det"] == pytest.approx(fits[0].details["jacobian_det"],
                                                            rel=1e-6)


@pytest.mark.parametrize("weight", ["identity", "efficient"])
def test_gmm_equals_mom_on_a_two_group_sample(weight):
    # L = 2 is exactly identified: GMM = MoM whenever MoM is feasible, whatever W
    A, g = _simulate(20_000, A4, B4, MU4[[0, 3]], seed=0)
    mom = nc.HuiWalter().fit(A, groups=g)
    gmm = nc.HuiWalter().fit(A, groups=g, method=nc.engines.GMM(weight=weight))
    assert mom.status == gmm.status == "ok"
    np.testing.assert_allclose(_theta_of(gmm), _theta_of(mom), atol=1e-5)
    assert gmm.loglik == pytest.approx(mom.loglik, rel=1e-8)
    assert gmm.details["objective"] < 1e-20
    assert gmm.details["start_kinds"][0 if weight == "identity" else 1] == "mom"
    assert gmm.n_params == 6 and gmm.method == "gmm"


def test_gmm_recovers_exact_population_moments_four_groups(monkeypatch):
    with jax.enable_x64(True):
        q = np.asarray(grouped_moments(THETA4, 4))
    rng = np.random.default_rng(0)
    M = rng.normal(size=(12, 12))
    for W in (None, M @ M.T + 0.1 * np.eye(12)):
        sol = gmm_fit_moments(q, 4, weight_matrix=W)
        assert sol.success
        np.testing.assert_allclose(sol.theta, THETA4, atol=1e-6)
        assert 0 <= sol.objective < 1e-14
    # the random starts alone get there too (no closed-form start)
    monkeypatch.setattr(gmm_engine, "_mom_start", lambda moments, n_groups: None)
    sol = gmm_fit_moments(q, 4, n_starts=3, seed=1)
    assert sol.start_kinds == ("random",) * 3
    np.testing.assert_allclose(sol.theta, THETA4, atol=1e-6)
    assert np.all(sol.start_objectives < 1e-14)


def test_gmm_four_groups_on_a_sample():
    A, g = _simulate(20_000, A4, B4, MU4, seed=0)
    ident = nc.HuiWalter().fit(A, groups=g, method="gmm")
    eff = nc.HuiWalter().fit(A, groups=g, method=nc.engines.GMM(weight="efficient"))
    # Monte Carlo sd over 200 samples of this design: rates <= 0.0083, mu <= 0.012;
    # the tolerances are about 4 sd
    for fit in (ident, eff):
        assert fit.status == "ok" and fit.converged
        est = _theta_of(fit)
        np.testing.assert_allclose(est[:4], THETA4[:4], atol=0.03)
        np.testing.assert_allclose(est[4:], MU4, atol=0.045)
        assert fit.prevalence.shape == (4, 2) and fit.n_params == 8
        np.testing.assert_allclose(fit.item_posterior.sum(1), 1.0)
        d = fit.details
        assert d["method"] == "gmm" and d["n_starts"] == 5 and "not certified" in d["note"]
        assert np.all(d["start_objectives"] >= d["objective"] * (1 - 1e-9))
        assert d["jacobian_det"] is None and d["jacobian_min_sv"] > 0.1
        np.testing.assert_allclose(d["group_mean_diff"],
                                   (d["moments"][9] - d["moments"][0],
                                    d["moments"][10] - d["moments"][1]))
    np.testing.assert_allclose(_theta_of(eff), _theta_of(ident), atol=0.01)
    # identity: Q_n is a squared moment residual, O(1/n)
    assert 0 <= ident.details["objective"] < 1e-3
    # efficient: Q_n is Hansen's J, asymptotically chi2 with 2L - 4 = 4 df
    J = eff.details["objective"]
    assert eff.details["j_statistic"] == J and eff.details["j_df"] == 4
    assert 0 <= J < chi2.ppf(0.999, 4)
    assert eff.details["j_pvalue"] == pytest.approx(chi2.sf(J, 4), rel=1e-12)
    # the weight is the inverse covariance of the group means: n_g-scaled
    W = eff.details["weight_matrix"]
    assert W.shape == (12, 12) and np.all(W[:3, 3:] == 0)
    assert W[0, 0] > 5000  # >= n_g / Var(A1) with n_g = 5000


def test_gmm_identity_agrees_with_statsmodels_gmm():
    """Peer check: statsmodels' (unconstrained) one-step GMM on the same moment
    conditions and identity weight reaches the same interior minimum."""
    from statsmodels.sandbox.regression.gmm import GMM

    from noisycal.engines.moments import grouped_moments

    A, g = _simulate(20_000, A4, B4, MU4, seed=1)
    L, n = 4, g.size
    X = np.column_stack([A, A[:, 0] * A[:, 1]])
    n_g = np.bincount(g)

    class GroupedMoments(GMM):
        # per item: its group's block is (n / n_g) (x_i - Gamma_g(theta)), so the mean
        # over items is the stacked sample-minus-model moment vector
        def momcond(self, params):
            model = np.asarray(grouped_moments(params, L)).reshape(L, 3)
            out = np.zeros((n, 3 * L))
            for k in range(L):
                rows = g == k
                out[rows, 3 * k:3 * k + 3] = (n / n_g[k]) * (X[rows] - model[k])
            return out

    ours = nc.HuiWalter().fit(A, groups=g, method="gmm")
    mod = GroupedMoments(X, None, None, k_moms=3 * L, k_params=L + 4)
    mod.set_param_names(["a1", "b1", "a2", "b2", "mu1", "mu2", "mu3", "mu4"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' sandbox warnings are not ours
        # W = 1e6 I: the same minimiser, with gradients large enough for BFGS's gtol
        sm = mod.fit(start_params=np.r_[0.2, 0.8, 0.2, 0.8, 0.2, 0.4, 0.6, 0.8], maxiter=0,
                     inv_weights=1e-6 * np.eye(3 * L), optim_method="nm",
                     optim_args={"xtol": 1e-10, "ftol": 1e-14, "maxiter": 50_000,
                                 "maxfun": 50_000, "disp": 0})
    assert ours.status == "ok"
    np.testing.assert_allclose(_theta_of(ours), sm.params, atol=2e-5)
    assert ours.details["objective"] == pytest.approx(
        float(mod.gmmobjective(sm.params, np.eye(3 * L))), rel=1e-4, abs=1e-12)


def test_efficient_weight_ridges_an_empty_cell_and_j_flags_misspecification():
    A, g = _simulate(20_000, A4, B4, MU4, seed=0)
    keep = ~((g == 0) & (A[:, 0] == 1) & (A[:, 1] == 0))  # empty (1, 0) cell in group 0
    fit = nc.HuiWalter().fit(A[keep], groups=g[keep], method=nc.engines.GMM(weight="efficient"))
    d = fit.details
    assert d["weight_ridge_groups"] == [0]
    assert np.all(np.isfinite(d["weight_matrix"]))
    # deleting a cell breaks the model in group 0, and J sees it
    assert d["j_statistic"] > 100 and d["j_pvalue"] < 1e-12
    np.testing.assert_allclose(d["start_objectives"], d["objective"], rtol=1e-6)
    assert fit.status in ("ok", "boundary")


def test_gmm_is_invariant_to_item_order_and_group_coding():
    A, g = _simulate(8_000, A4, B4, MU4, seed=3)
    base = _theta_of(nc.HuiWalter().fit(A, groups=g, method="gmm"))
    perm = np.random.default_rng(0).permutation(g.size)
    np.testing.assert_allclose(
        _theta_of(nc.HuiWalter().fit(A[perm], groups=g[perm], method="gmm")), base, atol=1e-7)
    recoded = np.array([-5.0, 0.0, 2.5, 10.0])[g]  # same order, other labels
    np.testing.assert_allclose(
        _theta_of(nc.HuiWalter().fit(A, groups=recoded, method="gmm")), base, atol=1e-12)


@pytest.mark.parametrize("mu", [MU4[[0, 3]], MU4])
def test_gmm_reports_an_inverted_annotator_at_the_boundary(mu):
    # annotator 2 labels against the class (b2 < a2): the unconstrained minimiser has a
    # negative gap, so the constrained one sits at the gap bound
    A, g = _simulate(20_000, np.array([0.1, 0.6]), np.array([0.85, 0.4]), mu, seed=0)
    with pytest.warns(nc.IdentifiabilityWarning, match="boundary"):
        fit = nc.HuiWalter().fit(A, groups=g, method=nc.engines.GMM(min_gap=1e-3))
    # its labels run against the class the other annotator and the groups imply: the
    # channel check reports it first, the boundary after it
    assert fit.status == "adversarial_channel" and "gap b2 - a2 at min_gap" in fit.message
    assert fit.details["channels"]["adversarial"] == (1,)
    gap2 = fit.confusion[1, 1, 1] - fit.confusion[1, 0, 1]
    assert gap2 == pytest.approx(1e-3, abs=1e-8)
    assert "gap b2 - a2 at min_gap" in fit.details["active_constraints"]


def test_gmm_reports_not_identified_and_not_converged():
    A, g = _simulate(8_000, A4, B4, MU4, seed=0)
    # the last group repeats the first group's ratings: equal extreme-group means
    A2 = np.concatenate([A[g < 3], A[g == 0]])
    g2 = np.r_[g[g < 3], np.full((g == 0).sum(), 3)]
    with pytest.warns(nc.IdentifiabilityWarning, match="same mean"):
        fit = nc.HuiWalter().fit(A2, groups=g2, method="gmm")
    assert fit.status == "not_identified"
    assert fit.details["group_mean_diff"] == (0.0, 0.0)
    with pytest.warns(nc.ConvergenceWarning, match="Iteration limit"):
        fit = nc.HuiWalter().fit(A, groups=g, method=nc.engines.GMM(max_iter=2))
    assert fit.status == "not_converged" and not fit.converged


def test_equal_count_groups_hand_cases():
    z = [0.5, 0.1, 0.5, 0.3, 0.5]
    # stable sort by (score, index): 1, 3, 0, 2, 4; floor(5/2) = 2 go low
    assert equal_count_groups(z).tolist() == [1, 0, 1, 0, 1]
    assert equal_count_groups(z, odd="low").tolist() == [0, 0, 1, 0, 1]
    # ties are split by index, never by chance
    assert equal_count_groups([0.5] * 4).tolist() == [0, 0, 1, 1]
    assert equal_count_groups([0.5] * 5).tolist() == [0, 0, 1, 1, 1]
    # L = 3, n = 7: sizes (2, 2, 3) or (3, 2, 2)
    z7 = [0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    assert equal_count_groups(z7, 3).tolist() == [2, 2, 2, 1, 1, 0, 0]
    assert equal_count_groups(z7, 3, odd="low").tolist() == [2, 2, 1, 1, 0, 0, 0]
    assert equal_count_groups(z7, 7).tolist() == list(range(7))[::-1]


def test_equal_count_groups_are_ordered_and_balanced():
    z = np.round(np.random.default_rng(0).random(1001), 2)  # many ties
    for L in (2, 3, 4, 10):
        g = equal_count_groups(z, L)
        sizes = np.bincount(g)
        assert sizes.max() - sizes.min() <= 1 and sizes.sum() == z.size
        assert sizes[-1] == sizes.max()
        for k in range(L - 1):
            assert z[g == k].max() <= z[g == k + 1].min()


@pytest.mark.parametrize("kwargs, match", [
    ({"scores": np.zeros((3, 2))}, "scores"),
    ({"scores": [0.1, np.nan]}, "scores"),
    ({"scores": [0.1, 0.2], "n_groups": 1}, "n_groups"),
    ({"scores": [0.1, 0.2], "n_groups": 2.0}, "n_groups"),
    ({"scores": [0.1, 0.2], "n_groups": 3}, "n_groups"),
    ({"scores": [0.1, 0.2], "odd": "middle"}, "odd"),
])
def test_equal_count_groups_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        equal_count_groups(**kwargs)


@pytest.mark.parametrize("groups, fields, match", [
    ([0] * 8, {}, "at least two groups"),
    (list("aabbccdd"), {}, "groups must be finite numbers"),
    ([0, 0, 1, 1, 2, 2, np.nan, 3], {}, "groups must be finite numbers"),
    ([0, 1] * 4, {"weight": "optimal"}, "weight"),
    ([0, 1] * 4, {"min_gap": 0.0}, "min_gap"),
    ([0, 1] * 4, {"min_gap": -1e-3}, "min_gap"),
    ([0, 1] * 4, {"min_separation": 1.5}, "min_separation"),
    ([0, 1] * 4, {"n_starts": 0}, "n_starts"),
    ([0, 1] * 4, {"max_iter": 0}, "max_iter"),
])
def test_gmm_bad_input(groups, fields, match):
    A = np.tile([[0.0, 1.0], [1.0, 1.0]], (4, 1))
    with pytest.raises(ValueError, match=match):
        nc.HuiWalter().fit(A, groups=np.asarray(groups), method=nc.engines.GMM(**fields))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"method": "em"}, ValueError, "HuiWalter has no EM engine"),
    ({"method": "mom", "seed": 2}, ValueError, "seed applies only to the GMM engine"),
    ({"gold": {0: 1}}, ValueError, "gold does not apply"),
    ({"anchor": 0}, ValueError, "anchor does not apply"),
    ({"progress": True}, ValueError, "progress=True does not apply"),
])
def test_refused_arguments_are_named(kwargs, error, match):
    A = np.tile([[0.0, 1.0], [1.0, 1.0]], (4, 1))
    with pytest.raises(error, match=match):
        nc.HuiWalter().fit(A, groups=np.asarray([0, 1] * 4), **kwargs)
    with pytest.raises(TypeError, match="weight"):
        nc.engines.Moments(weight="efficient")  # a GMM option cannot reach the moments


def test_gmm_fit_moments_bad_input():
    q = np.full(6, 0.3)
    with pytest.raises(ValueError, match="moments must have shape"):
        gmm_fit_moments(q, 3)
    with pytest.raises(ValueError, match="weight_matrix must be positive definite"):
        gmm_fit_moments(q, 2, weight_matrix=-np.eye(6))
    with pytest.raises(ValueError, match="weight_matrix must be symmetric"):
        gmm_fit_moments(q, 2, weight_matrix=np.eye(6) + np.triu(np.ones((6, 6)), 1))
    with pytest.raises(ValueError, match="init"):
        gmm_fit_moments(q, 2, init=np.zeros(5))
