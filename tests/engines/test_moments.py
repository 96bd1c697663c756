"""The engines' shared pieces: the one model-to-potential builder, the one NUTS convergence
rule, and the moment/GMM estimators of ``noisycal.engines.moments``."""


import inspect
import math

import numpy as np
import pytest
import scipy.stats
from scipy.stats import chi2

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

import noisycal as nc
from noisycal._util.jax import x64
from noisycal._util.validation import check_seed
from noisycal.engines import gmm
from noisycal.engines import moments as mom
from noisycal.engines.density import mle, nuts, nuts_program
from noisycal.engines.density.potential import build_potential, split_inputs

Y = np.array([0.3, -0.2, 1.1, 0.4, 0.9, 1.6, -0.4])


def normal_scale(y):
    mu = numpyro.sample("mu", dist.Normal(1.0, 3.0))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    with numpyro.plate("obs", y.shape[0], dim=-1):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def test_potential_splits_into_loglik_prior_and_jacobian():
    """potential = -(loglik + log_prior + log|J|), each part checked against SciPy."""
    with x64():
        _, arrays, rebuild = split_inputs((Y,), {})
        pot = build_potential(normal_scale, rebuild, arrays, {}, init_strategy="center")
        assert pot.latent == ("mu", "sigma") and pot.names == ["mu", "sigma"]
        x, fixed = pot.initial(jax.random.key(0), arrays, {})
        data = (arrays, fixed)
        # the prior means: mu = 1, sigma = exp(1/2) (log-normal mean), i.e. log sigma = 1/2
        np.testing.assert_allclose(np.asarray(x), [1.0, 0.5], atol=1e-12)
        x = jnp.array([0.4, math.log(0.8)])  # sigma = exp(x[1]) on the unconstrained scale
        loglik, log_prior, log_jac = (float(v) for v in pot.log_parts(x, data))
        assert pot.constrain(x, data)["sigma"] == pytest.approx(0.8, rel=1e-12)
        assert loglik == pytest.approx(scipy.stats.norm.logpdf(Y, 0.4, 0.8).sum(), rel=1e-12)
        assert log_prior == pytest.approx(scipy.stats.norm.logpdf(0.4, 1.0, 3.0)
                                          + scipy.stats.lognorm.logpdf(0.8, 1.0), rel=1e-12)
        assert log_jac == pytest.approx(math.log(0.8), rel=1e-10)
        assert float(pot.potential(x, data)) == pytest.approx(-(loglik + log_prior + log_jac),
                                                              rel=1e-12)


def test_mle_and_nuts_use_the_one_builder(monkeypatch):
    calls = []

    def counting(*args, **kwargs):
        calls.append(kwargs.get("init_strategy"))
        return build_potential(*args, **kwargs)

    monkeypatch.setattr(mle, "build_potential", counting)
    monkeypatch.setattr(nuts_program, "build_potential", counting)
    fit = mle.fit_map(normal_scale, model_args=(Y,), prior=False)
    assert fit.status == "ok"
    assert fit.params["mu"] == pytest.approx(Y.mean(), abs=1e-6)
    assert fit.params["sigma"] == pytest.approx(Y.std(), rel=1e-5)  # the MLE uses ddof=0
    with pytest.warns(nc.ConvergenceWarning, match="one chain"):
        nuts.run_nuts(normal_scale, model_args=(Y,), num_chains=1, num_warmup=20,
                      num_samples=20, progress_bar=False, cache=False)
    assert calls == ["center", "uniform"]


def test_objective_has_no_unread_fields():
    assert mle.Objective._fields == ("x0", "constrain", "log_parts", "objective", "names")


@pytest.mark.parametrize(("max_rhat", "n_div", "expected"), [
    (1.005, 0, "ok"),
    (1.01, 0, "ok"),  # strictly above the threshold is flagged, equal is not
    (1.0100001, 0, "not_converged"),
    (math.nan, 0, "diagnostics_unavailable"),  # one chain: R-hat unchecked, so not ok
    (1.0, 1, "not_converged"),
])
def test_convergence_status_is_one_strict_rule(max_rhat, n_div, expected):
    status, message = nuts.convergence_status(max_rhat, n_div, 1.01)
    assert status == expected
    assert (message == "") == (expected == "ok")
    if n_div:
        assert "1 divergent" in message
    if expected != "ok" and not n_div:
        assert "R-hat" in message


def test_run_nuts_defaults_to_vectorized_chains():
    assert inspect.signature(nuts.run_nuts).parameters["chain_method"].default == "vectorized"
    kw = dict(model_args=(Y,), num_chains=2, num_warmup=50, num_samples=50, seed=4,
              progress_bar=False, rhat_threshold=2.0)
    default = nuts.run_nuts(normal_scale, **kw)
    explicit = nuts.run_nuts(normal_scale, chain_method="vectorized", **kw)
    np.testing.assert_array_equal(default.samples["mu"], explicit.samples["mu"])


def test_check_seed_range():
    assert check_seed(2**63 - 1) == 2**63 - 1
    assert check_seed(-(2**63)) == -(2**63)
    for bad in (2**63, 2**64, -(2**63) - 1):
        with pytest.raises(ValueError, match="seed"):
            check_seed(bad)


def test_public_arviz_helpers():
    idata = nuts.to_inference_data({"mu": np.zeros((2, 5))}, {"diverging": np.zeros((2, 5))})
    assert idata.posterior["mu"].shape == (2, 5)
    assert nuts.import_arviz().__name__ == "arviz"


def test_j_test_matches_chi_squared():
    j, df, p = gmm.j_test(7.5, 5)
    assert (j, df) == (7.5, 6) and p == pytest.approx(chi2.sf(7.5, 6), rel=1e-12)
    j, df, p = gmm.j_test(0.1, 2)
    assert df == 0 and math.isnan(p)


def test_two_step_gmm_on_exact_population_moments():
    """Exact moments of four groups: both weights recover theta, and J is 0."""
    a, b, mu = np.array([0.1, 0.2]), np.array([0.85, 0.7]), np.array([0.15, 0.4, 0.6, 0.85])
    theta = np.r_[a[0], b[0], a[1], b[1], mu]
    with x64():
        q = np.asarray(mom.grouped_moments(jnp.asarray(theta), 4))
    # covariance of the group means of (A1, A2, A1 A2) at n_g = 1000 items per group
    cov, counts = [], np.full(4, 1000)
    for g in range(4):
        p11, p1, p2 = q[3 * g + 2], q[3 * g], q[3 * g + 1]
        EX = np.array([p1, p2, p11])
        EXX = np.array([[p1, p11, p11], [p11, p2, p11], [p11, p11, p11]])
        cov.append((EXX - np.outer(EX, EX)) / 1000)
    cov = np.array(cov)
    for weight in ("identity", "efficient"):
        sol, details = gmm.two_step_gmm(q, cov, counts, weight=weight)
        np.testing.assert_allclose(sol.theta, theta, atol=1e-6)
        assert sol.objective < 1e-12
    assert details["j_df"] == 4 and details["j_pvalue"] == pytest.approx(1.0, abs=1e-6)
    assert details["weight_ridge_groups"] == []
    with pytest.raises(ValueError, match="weight"):
        gmm.two_step_gmm(q, cov, counts, weight="optimal")


def test_triple_core_and_re_export():
    assert nc.annotators.moment_triple is mom.moment_triple
    rng = np.random.default_rng(0)
    X = (rng.random((500, 3)) < 0.5).astype(float)
    X[:, 0] = 1.0  # an anchor that never varies: C12 = C13 = 0, nothing is identified
    assert mom.triple_core(X) is None
    X[:, 0] = X[:, 1]  # now C12 C13 C23 = Var(A2) Cov(A2, A3)^2 > 0
    mu, d1, C12, C13 = mom.triple_core(X)
    assert 0 < mu < 1 and d1 > 0 and C12 == pytest.approx(X[:, 1].var())


def test_hui_walter_refuses_missing_groups_and_mom_only_options():
    A = np.tile([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], (3, 1))
    g = np.repeat([0.0, 1.0], 6)
    g_nan = g.copy()
    g_nan[3] = np.nan
    with pytest.raises(ValueError, match="groups must be finite numbers or labels"):
        nc.HuiWalter().fit(A, groups=g_nan)
    with pytest.raises(ValueError, match="groups must be finite numbers or labels"):
        nc.HuiWalter().fit(A, groups=np.array(["a"] * 11 + [None], dtype=object))
    for seed in ("0", False, 3):  # the closed-form inverse takes no seed
        with pytest.raises(ValueError, match="seed applies only to the GMM engine"):
            nc.HuiWalter().fit(A, groups=g, seed=seed)
    # GMM's settings live on its option object, which checks them; fit has no such keyword
    with pytest.raises(ValueError, match="n_starts must be an integer, got 5.5"):
        nc.engines.GMM(n_starts=5.5)
    with pytest.raises(TypeError, match="weight"):
        nc.HuiWalter().fit(A, groups=g, weight="efficient")
    # string group labels are fine for the two-group closed form (these data are not
    # informative: the status says so)
    with pytest.warns(nc.IdentifiabilityWarning, match="same mean"):
        fit = nc.HuiWalter().fit(A, groups=np.repeat(["low", "high"], 6))
    assert list(fit.details["groups"]) == ["high", "low"] and fit.status == "infeasible_mom"


def test_unchecked_r_hat_is_said_in_the_message():
    kw = dict(model_args=(Y,), num_warmup=20, progress_bar=False, cache=False)
    with pytest.warns(nc.ConvergenceWarning, match="one chain gives no between-chain"):
        one = nuts.run_nuts(normal_scale, num_chains=1, num_samples=20, **kw)
    with pytest.warns(nc.ConvergenceWarning, match="at least 4 draws per chain, got 3"):
        few = nuts.run_nuts(normal_scale, num_chains=2, num_samples=3, **kw)
    for res in (one, few):
        assert math.isnan(res.max_rhat)
        assert res.status == "diagnostics_unavailable"
        assert "convergence was not checked" in res.message


def test_nuts_conf_int_is_the_equal_tailed_quantiles():
    res = nuts.run_nuts(normal_scale, model_args=(Y,), num_chains=2, num_warmup=50,
                        num_samples=50, progress_bar=False, rhat_threshold=2.0)
    ci = res.conf_int(level=0.8)
    flat = res.flat_samples()["sigma"]
    assert list(ci.index) == ["mu", "sigma"]
    assert ci.loc["sigma", "lower"] == pytest.approx(np.quantile(flat, 0.1), rel=1e-12)
    assert ci.loc["sigma", "upper"] == pytest.approx(np.quantile(flat, 0.9), rel=1e-12)
    with pytest.raises(ValueError, match="level"):
        res.conf_int(level=90)


def test_moment_start_uses_the_one_proposition_d2_helper(monkeypatch):
    """moment_start takes its channels from moments.triple_channels (the helper
    moment_triple uses), and the result is the formula written out."""
    from noisycal.engines import moments
    from noisycal.engines.em import starts

    rng = np.random.default_rng(3)
    y = rng.random(4000) < 0.4
    a, b = np.array([0.1, 0.2, 0.15, 0.3]), np.array([0.85, 0.75, 0.9, 0.8])
    A = (rng.random((4000, 4)) < np.where(y[:, None], b, a)).astype(int)
    ann = nc.Annotations.from_wide(A, classes=[0, 1])
    calls = []

    def spy(*args, **kw):
        calls.append(args)
        return moments.triple_channels(*args, **kw)

    monkeypatch.setattr(starts, "triple_channels", spy)
    prev, conf, note = starts.moment_start(ann, None, 1, 0)
    assert note == "" and len(calls) == 1
    # the formula written out: delta_j = C_0j / (mu (1 - mu) delta_0), a = q - mu delta
    X = A.astype(float)
    mu, d0, _, _ = moments.triple_core(X[:, [0, 1, 2]])
    D = X - X.mean(0)
    delta = np.array([d0] + [np.mean(D[:, 0] * D[:, j]) / (mu * (1 - mu) * d0)
                             for j in (1, 2, 3)])
    a_hat = np.clip(X.mean(0) - mu * delta, 0.01, 0.99)
    np.testing.assert_allclose(conf[:, 0, 1], a_hat, atol=1e-12)
    np.testing.assert_allclose(conf[:, 1, 1], np.clip(a_hat + delta, 0.01, 0.99), atol=1e-12)


def test_triple_channels_is_moment_triple():
    from noisycal.engines.moments import moment_triple, triple_channels, triple_core

    rng = np.random.default_rng(0)
    y = rng.random(5000) < 0.3
    A = np.column_stack([np.where(y, rng.random(5000) < b, rng.random(5000) < a)
                         for a, b in [(0.1, 0.9), (0.2, 0.8), (0.05, 0.7)]]).astype(float)
    mu, d1, C12, C13 = triple_core(A)
    a, b, delta = triple_channels(mu, d1, np.array([0.0, C12, C13]), A.mean(0), 0)
    ref = moment_triple(A)
    np.testing.assert_array_equal(a, ref["a"])
    np.testing.assert_array_equal(b, ref["b"])
    np.testing.assert_allclose(b - a, delta, atol=1e-15)
