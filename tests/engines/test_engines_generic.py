"""Generic engines on conjugate models with closed-form answers: gradient MLE/MAP and NUTS."""

import warnings

import numpy as np
import pytest
import scipy.stats

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from noisycal.engines.density.mle import MLEResult, fit_map
from noisycal.engines.density.nuts import NUTSResult, diagnostics_table, run_nuts
from noisycal.exceptions import ConvergenceWarning, IdentifiabilityWarning

SIGMA, MU0, TAU = 2.0, 1.0, 3.0


def normal_mean(y, sigma=SIGMA, mu0=MU0, tau=TAU):
    """y_i ~ Normal(mu, sigma) with sigma known, mu ~ Normal(mu0, tau)."""
    mu = numpyro.sample("mu", dist.Normal(mu0, tau))
    numpyro.deterministic("mu_plus_one", mu + 1.0)
    with numpyro.plate("obs", y.shape[0], dim=-1):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def beta_binomial(k, n, a=2.0, b=3.0):
    """k ~ Binomial(n, p), p ~ Beta(a, b)."""
    p = numpyro.sample("p", dist.Beta(a, b))
    numpyro.sample("k", dist.Binomial(n, p), obs=k)


@pytest.fixture(scope="module")
def y():
    return np.random.default_rng(0).normal(0.5, SIGMA, size=50)


def normal_posterior(y):
    prec = y.size / SIGMA**2 + 1 / TAU**2
    return (y.sum() / SIGMA**2 + MU0 / TAU**2) / prec, 1 / prec


# ---------------------------------------------------------------- MLE / MAP


def test_normal_mean_mle_and_map_closed_form(y):
    mle = fit_map(normal_mean, model_args=(y,), prior=False)
    assert isinstance(mle, MLEResult)
    assert mle.status == "ok" and mle.converged and mle.message == ""
    assert mle.params["mu"] == pytest.approx(y.mean(), abs=1e-6)
    # observed information: var(mu_hat) = sigma^2 / n; mu is unconstrained
    assert mle.cov_unconstrained.shape == (1, 1)
    assert mle.cov_unconstrained[0, 0] == pytest.approx(SIGMA**2 / y.size, rel=1e-6)
    assert mle.std_errors["mu"] == pytest.approx(SIGMA / np.sqrt(y.size), rel=1e-6)
    # deterministic sites are reported, with delta-method standard errors
    assert mle.params["mu_plus_one"] == pytest.approx(y.mean() + 1, abs=1e-6)
    assert mle.std_errors["mu_plus_one"] == pytest.approx(mle.std_errors["mu"], rel=1e-9)
    # log-likelihood excludes the prior; log_joint adds it
    ll = scipy.stats.norm.logpdf(y, y.mean(), SIGMA).sum()
    assert mle.loglik == pytest.approx(ll, rel=1e-10)
    assert mle.objective == pytest.approx(ll, rel=1e-10)
    lp = scipy.stats.norm.logpdf(y.mean(), MU0, TAU)
    assert mle.log_prior == pytest.approx(lp, rel=1e-8)
    assert mle.log_joint == pytest.approx(ll + lp, rel=1e-10)
    assert mle.n_params == 1 and mle.names == ["mu"]

    post_mean, post_var = normal_posterior(y)
    mp = fit_map(normal_mean, model_args=(y,), prior=True)
    assert mp.params["mu"] == pytest.approx(post_mean, abs=1e-6)
    assert mp.cov_unconstrained[0, 0] == pytest.approx(post_var, rel=1e-6)
    # the prior shrinks towards mu0, by exactly the precision weights
    assert abs(mp.params["mu"] - MU0) < abs(mle.params["mu"] - MU0)
    assert mp.objective == pytest.approx(mp.log_joint, rel=1e-12)
    assert mp.loglik < mle.loglik
    assert mp.log_joint > mle.log_joint


def test_beta_binomial_mle_map_and_jacobian():
    k, n, a, b = 7, 20, 2.0, 3.0
    mle = fit_map(beta_binomial, model_args=(k, n), prior=False)
    assert mle.params["p"] == pytest.approx(k / n, abs=1e-6)
    p = k / n
    # p lives on the logit scale: var(logit p_hat) = 1 / (n p (1 - p))
    assert mle.cov_unconstrained[0, 0] == pytest.approx(1 / (n * p * (1 - p)), rel=1e-5)
    assert mle.std_errors["p"] == pytest.approx(np.sqrt(p * (1 - p) / n), rel=1e-5)
    assert mle.loglik == pytest.approx(scipy.stats.binom.logpmf(k, n, p), rel=1e-10)

    # the usual MAP is the posterior mode of p: (a + k - 1) / (a + b + n - 2)
    mp = fit_map(beta_binomial, model_args=(k, n))
    assert mp.params["p"] == pytest.approx((a + k - 1) / (a + b + n - 2), abs=1e-6)
    assert mp.jacobian is False and mp.prior is True
    # with the Jacobian, the mode of logit(p): (a + k) / (a + b + n)
    mj = fit_map(beta_binomial, model_args=(k, n), jacobian=True)
    assert mj.params["p"] == pytest.approx((a + k) / (a + b + n), abs=1e-6)
    # loglik never includes priors or Jacobians
    assert mj.loglik == pytest.approx(scipy.stats.binom.logpmf(k, n, mj.params["p"]), rel=1e-10)
    table = mp.summary()
    assert list(table.columns) == ["estimate", "std_err"]
    assert table.loc["p", "estimate"] == pytest.approx(mp.params["p"])


def test_factor_sites_count_as_likelihood():
    def model():
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.factor("f", -2.0 * (mu - 3.0) ** 2)

    mle = fit_map(model, prior=False)
    assert mle.params["mu"] == pytest.approx(3.0, abs=1e-6)
    assert mle.loglik == pytest.approx(0.0, abs=1e-10)
    mp = fit_map(model)
    # -mu^2/2 - 2 (mu - 3)^2 is maximised at mu = 12 / 5
    assert mp.params["mu"] == pytest.approx(2.4, abs=1e-6)


def test_init_params_and_seed_reproducible(y):
    r1 = fit_map(normal_mean, model_args=(y,), seed=3)
    r2 = fit_map(normal_mean, model_args=(y,), seed=3)
    np.testing.assert_array_equal(r1.unconstrained, r2.unconstrained)
    r3 = fit_map(normal_mean, model_args=(y,), init_params={"mu": r1.params["mu"]})
    assert r3.n_iter <= 2
    assert r3.params["mu"] == pytest.approx(r1.params["mu"], abs=1e-8)


def test_not_converged_is_reported_and_warns_at_caller():
    def model(x):
        a = numpyro.sample("a", dist.Normal(0.0, 10.0).expand([3]).to_event(1))
        s = numpyro.sample("s", dist.LogNormal(0.0, 1.0))
        numpyro.sample("x", dist.Normal(a[0] + a[1] * x + a[2] * x**2, s), obs=3 * x**2 - x)

    x = np.linspace(-2, 2, 40)
    with pytest.warns(ConvergenceWarning, match="did not converge") as record:
        res = fit_map(model, model_args=(x,), max_iter=1)
    assert record[0].filename == __file__
    assert res.status == "not_converged" and not res.converged
    assert "max_iter=1" in res.message


def test_nonfinite_objective_is_reported():
    def model():
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.factor("bad", jnp.nan * mu)

    with pytest.warns(ConvergenceWarning, match="not finite"):
        res = fit_map(model)
    assert res.status == "nonfinite" and not res.converged
    assert np.all(np.isnan(res.cov_unconstrained))


def test_non_identified_model_has_nan_covariance():
    def model(y):
        a = numpyro.sample("a", dist.Normal(0.0, 1.0))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(a + b, 1.0).expand([y.shape[0]]).to_event(1), obs=y)

    y = np.array([0.3, 1.1, 0.8])
    with pytest.warns(IdentifiabilityWarning, match="not positive definite"):
        res = fit_map(model, model_args=(y,), prior=False)
    assert res.params["a"] + res.params["b"] == pytest.approx(y.mean(), abs=1e-6)
    assert np.all(np.isnan(res.cov_unconstrained))
    assert np.isnan(res.std_errors["a"])
    # the prior identifies it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mp = fit_map(model, model_args=(y,))
    assert np.all(np.isfinite(mp.cov_unconstrained))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_iter": 0}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"tol": -1.0}, "tol"),
        ({"prior": "yes"}, "prior"),
        ({"prior": False, "jacobian": True}, "jacobian"),
        ({"model_args": [1.0]}, "model_args"),
        ({"model_kwargs": 3}, "model_kwargs"),
        ({"init_params": {"nope": 1.0}}, "init_params"),
        ({"seed": None}, "seed"),
    ],
)
def test_fit_map_rejects_bad_arguments(y, kwargs, match):
    kwargs.setdefault("model_args", (y,))
    with pytest.raises(ValueError, match=match):
        fit_map(normal_mean, **kwargs)


def test_fit_map_rejects_discrete_latent_sites():
    def model():
        numpyro.sample("z", dist.Bernoulli(0.5))

    with pytest.raises(ValueError, match="discrete latent"):
        fit_map(model)


# ---------------------------------------------------------------- NUTS


@pytest.fixture(scope="module")
def nuts_fit(y):
    return run_nuts(normal_mean, model_args=(y,), num_chains=2, num_warmup=300,
                    num_samples=500, seed=1, progress_bar=False, rhat_threshold=1.05)


def test_nuts_matches_conjugate_posterior(y, nuts_fit):
    res = nuts_fit
    assert isinstance(res, NUTSResult)
    assert res.status == "ok" and res.converged and res.num_divergences == 0
    assert res.samples["mu"].shape == (2, 500)
    assert res.samples["mu_plus_one"].shape == (2, 500)
    np.testing.assert_allclose(res.samples["mu_plus_one"], res.samples["mu"] + 1, atol=1e-12)
    post_mean, post_var = normal_posterior(y)
    row = res.diagnostics.loc["mu"]
    assert abs(row["mean"] - post_mean) < 4 * row["mcse_mean"]
    assert row["sd"] == pytest.approx(np.sqrt(post_var), rel=0.15)
    assert row["r_hat"] < 1.05 and row["ess_bulk"] > 100
    assert res.max_rhat == pytest.approx(res.diagnostics["r_hat"].max())
    assert res.min_ess_bulk == pytest.approx(res.diagnostics["ess_bulk"].min())
    assert res.samples["mu"].dtype == np.float64


def test_nuts_diagnostics_and_arviz(nuts_fit):
    res = nuts_fit
    table = res.diagnostics
    assert {"mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"} <= set(table.columns)
    assert list(table.index) == ["mu", "mu_plus_one"]
    assert res.summary() is table
    idata = res.to_arviz()
    assert idata.posterior["mu"].shape == (2, 500)
    assert idata.sample_stats["diverging"].shape == (2, 500)
    assert res.flat_samples()["mu"].shape == (1000,)


def test_nuts_reproducible_and_flags_poor_mixing(y):
    kw = dict(model_args=(y,), num_chains=2, num_warmup=20, num_samples=20, seed=5,
              progress_bar=False)
    with pytest.warns(ConvergenceWarning, match="R-hat") as record:
        r1 = run_nuts(normal_mean, rhat_threshold=1.000001, **kw)
    assert record[0].filename == __file__
    assert r1.status == "not_converged" and "R-hat" in r1.message
    with pytest.warns(ConvergenceWarning):
        r2 = run_nuts(normal_mean, rhat_threshold=1.000001, **kw)
    np.testing.assert_array_equal(r1.samples["mu"], r2.samples["mu"])


def test_nuts_reuses_its_compiled_sampler_with_data_as_arguments(y):
    """A second fit on new data of the same shape compiles nothing and samples the new data."""
    from noisycal.engines.density import nuts_program

    kw = dict(num_chains=2, num_warmup=150, num_samples=200, seed=3, progress_bar=False,
              rhat_threshold=1.2, cache=True)
    y2 = y[::-1] + 1.0
    run_nuts(normal_mean, model_args=(y,), **kw)
    n_programs = len(nuts_program.PROGRAMS)
    prog = next(reversed(nuts_program.PROGRAMS.values()))
    compiled = prog.sample._cache_size()
    r2 = run_nuts(normal_mean, model_args=(y2,), **kw)
    assert len(nuts_program.PROGRAMS) == n_programs
    assert prog.sample._cache_size() == compiled
    # the cached program gives exactly what a freshly built one gives for y2 ...
    nuts_program.PROGRAMS.clear()
    r3 = run_nuts(normal_mean, model_args=(y2,), **kw)
    np.testing.assert_array_equal(r2.samples["mu"], r3.samples["mu"])
    # ... which is y2's posterior (its mean is 1 above y's; posterior sd 0.28)
    m1, _ = normal_posterior(y)
    m2, _ = normal_posterior(y2)
    assert abs(r2.samples["mu"].mean() - m2) < 0.1 < 0.9 < abs(r2.samples["mu"].mean() - m1)


PRIOR_SCALE = {"tau": 0.01}


def prior_from_a_global(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, PRIOR_SCALE["tau"]))
    with numpyro.plate("obs", y.shape[0], dim=-1):
        numpyro.sample("y", dist.Normal(mu, SIGMA), obs=y)


def plate_size_from_data(y, n):
    """A model that needs a concrete value of an array input (the plate size)."""
    mu = numpyro.sample("mu", dist.Normal(MU0, TAU))
    with numpyro.plate("obs", int(n), dim=-1):
        numpyro.sample("y", dist.Normal(mu, SIGMA), obs=y)


@pytest.mark.filterwarnings("ignore:NUTS. R-hat compares chains:noisycal.ConvergenceWarning")
def test_user_models_are_not_cached_by_default_and_concrete_inputs_work(y):
    """A user model reading a global is retraced on every call (no stale program), and a
    model that needs a concrete array input falls back to baking its data in."""
    kw = dict(model_args=(y,), num_chains=1, num_warmup=150, num_samples=200, seed=0,
              progress_bar=False)
    with pytest.warns(ConvergenceWarning, match="one chain gives no between-chain R-hat"):
        tight = run_nuts(prior_from_a_global, **kw)
    PRIOR_SCALE["tau"] = 100.0
    try:
        with pytest.warns(ConvergenceWarning, match="one chain"):
            loose = run_nuts(prior_from_a_global, **kw)
    finally:
        PRIOR_SCALE["tau"] = 0.01
    # 200 draws of one chain: the Monte Carlo error of a posterior mean is about 0.03 (posterior
    # sd 0.28) with the loose prior, so 0.2 and 0.15 are 5-6 Monte Carlo errors; with the
    # tight prior the posterior sd is 0.01 and 0.05 is 5 of them
    assert abs(tight.samples["mu"].mean()) < 0.05  # prior sd 0.01 dominates
    assert abs(loose.samples["mu"].mean() - y.mean()) < 0.2  # the data dominate
    with pytest.warns(ConvergenceWarning, match="one chain"):
        res = run_nuts(plate_size_from_data, model_args=(y, np.asarray(y.size)),
                       num_chains=1, num_warmup=150, num_samples=200, seed=0,
                       progress_bar=False)
    post_mean, _ = normal_posterior(y)
    assert abs(res.samples["mu"].mean() - post_mean) < 0.15
    with pytest.raises(ValueError, match="cache must be"):
        run_nuts(normal_mean, model_args=(y,), cache="yes")


def test_a_user_model_is_retraced_by_every_map_fit(y):
    """fit_map keeps no program of a user's model: one that reads a global gives the
    estimate of the global's current value (and so does a model needing a concrete input)."""
    tight = fit_map(prior_from_a_global, model_args=(y,))
    PRIOR_SCALE["tau"] = 100.0
    try:
        loose = fit_map(prior_from_a_global, model_args=(y,))
    finally:
        PRIOR_SCALE["tau"] = 0.01
    # MAP of a normal mean: the posterior mean, shrunk to 0 by the prior of sd tau
    for fit, tau in ((tight, 0.01), (loose, 100.0)):
        precision = y.size / SIGMA**2 + 1 / tau**2
        assert fit.params["mu"] == pytest.approx(y.sum() / SIGMA**2 / precision, rel=1e-6)
    res = fit_map(plate_size_from_data, model_args=(y, np.asarray(y.size)))
    assert res.status == "ok"
    assert res.params["mu"] == pytest.approx(normal_posterior(y)[0], rel=1e-6)


def test_an_own_model_needing_a_concrete_input_is_fitted_with_it_compiled_in(y, monkeypatch):
    """noisycal's own models take their arrays as arguments of kept programs; one whose
    plate size comes from an array input cannot be traced so and falls back to compiling
    its inputs in, uncached, with the same estimate."""
    from noisycal.engines.density import mle

    monkeypatch.setattr(plate_size_from_data, "__module__", "noisycal.models.stand_in")
    before = dict(mle.PROGRAMS)
    res = fit_map(plate_size_from_data, model_args=(y, np.asarray(y.size)))
    assert res.status == "ok"
    assert res.params["mu"] == pytest.approx(normal_posterior(y)[0], rel=1e-6)
    assert dict(mle.PROGRAMS) == before
    # the same model without the plate size from data is kept
    monkeypatch.setattr(normal_mean, "__module__", "noisycal.models.stand_in")
    fit_map(normal_mean, model_args=(y,))
    assert len(mle.PROGRAMS) == min(len(before) + 1, mle.MAX_PROGRAMS)


@pytest.mark.parametrize("chain_method", ["sequential", "vectorized"])
def test_nuts_progress_bar_path_gives_the_same_draws(y, chain_method):
    """With a progress bar the chains advance in chunks; the draws are the same."""
    kw = dict(model_args=(y,), num_chains=2, num_warmup=60, num_samples=50, seed=4,
              chain_method=chain_method, rhat_threshold=1.5)
    quiet = run_nuts(normal_mean, progress_bar=False, **kw)
    shown = run_nuts(normal_mean, progress_bar=True, **kw)
    np.testing.assert_allclose(shown.samples["mu"], quiet.samples["mu"], rtol=1e-9)
    np.testing.assert_array_equal(shown.diverging, quiet.diverging)


def test_nuts_single_chain_from_init_params(y):
    post_mean, post_var = normal_posterior(y)
    with pytest.warns(ConvergenceWarning, match="one chain"):
        res = run_nuts(normal_mean, model_args=(y,), num_chains=1, num_warmup=200,
                       num_samples=400, seed=2, progress_bar=False, init_params={"mu": 0.7})
    assert res.samples["mu"].shape == (1, 400)
    # one chain: no between-chain R-hat, so convergence is unchecked and not 'ok'
    assert res.status == "diagnostics_unavailable" and "num_chains >= 2" in res.message
    assert np.isnan(res.max_rhat)
    row = res.diagnostics.loc["mu"]
    assert abs(row["mean"] - post_mean) < 4 * row["mcse_mean"]


def test_diagnostics_table_constant_entries_are_nan():
    draws = np.random.default_rng(0).normal(size=(2, 50))
    table = diagnostics_table({"a": draws, "c": np.ones((2, 50, 2))})
    assert list(table.index) == ["a", "c[0]", "c[1]"]
    assert np.isfinite(table.loc["a", "r_hat"])
    assert np.isnan(table.loc["c[0]", "r_hat"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_chains": 0}, "num_chains"),
        ({"num_samples": 0}, "num_samples"),
        ({"num_warmup": -1}, "num_warmup"),
        ({"chain_method": "threads"}, "chain_method"),
        ({"rhat_threshold": 0.9}, "rhat_threshold"),
        ({"target_accept_prob": 1.5}, "target_accept_prob"),
        ({"progress_bar": "no"}, "progress_bar"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_run_nuts_rejects_bad_arguments(y, kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_nuts(normal_mean, model_args=(y,), **kwargs)
