"""Dawid–Skene fitted by gradient MLE and by NUTS."""

import warnings

import numpy as np
import pytest

import noisycal as nc

CONF = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.15, 0.85]],
                 [[0.85, 0.15], [0.25, 0.75]]])


def test_gradient_mle_agrees_with_em_away_from_the_boundary():
    sim = nc.simulate.dawid_skene(1500, [0.4, 0.6], CONF, seed=1)
    em = nc.DawidSkene().fit(sim.annotations,
                             method=nc.engines.EM(n_starts=3, max_iter=5000, tol=1e-12))
    mle = nc.DawidSkene().fit(sim.annotations, method="mle", seed=0)
    assert mle.method == "mle" and mle.status == "ok"
    assert mle.loglik == pytest.approx(em.loglik, abs=1e-5)
    np.testing.assert_allclose(mle.confusion, em.confusion, atol=1e-4)
    np.testing.assert_allclose(mle.prevalence, em.prevalence, atol=1e-4)


def test_gradient_map_agrees_with_map_em():
    sim = nc.simulate.dawid_skene(300, [0.4, 0.6], CONF, seed=2)
    alpha, beta = np.full(2, 3.0), np.array([[5.0, 1.0], [1.0, 5.0]])
    model = nc.DawidSkene(alpha=alpha, beta=beta)
    em = model.fit(sim.annotations, method=nc.engines.EM(n_starts=2, max_iter=10000, tol=1e-13))
    mle = model.fit(sim.annotations, method="mle")
    # both maximise log-likelihood + log prior density on the probability scale
    np.testing.assert_allclose(mle.confusion, em.confusion, atol=1e-4)


def test_nuts_small_recovers_simulated_channels():
    sim = nc.simulate.dawid_skene(400, [0.4, 0.6], CONF, seed=3)
    with warnings.catch_warnings():
        # a chain may land in the mirrored mode; the guard relabels it (and says so)
        warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
        fit = nc.DawidSkene().fit(sim.annotations,
                                  method=nc.engines.NUTS(num_chains=2, num_warmup=300,
                                                         num_samples=300, rhat_threshold=1.05),
                                  seed=0)  # short chains
    assert fit.status == "ok", fit.message
    assert fit.method == "nuts" and fit.draws["confusion"].shape == (600, 3, 2, 2)
    sd = fit.draws["confusion"].std(0)
    assert np.all(np.abs(fit.confusion - CONF) < 4 * sd + 1e-3)
    # Rao-Blackwellised posteriors are probabilities
    np.testing.assert_allclose(fit.item_posterior.sum(1), 1.0, atol=1e-10)
    ci = fit.conf_int(0.9)
    assert ci.attrs["kind"] == "credible-eti"
    idata = fit.to_arviz()
    assert idata.posterior["confusion"].shape == (2, 300, 3, 2, 2)


def test_nuts_label_switching_guard_relabels_a_flipped_chain(monkeypatch):
    """A chain started in the mirrored mode is relabelled and a warning is issued."""
    from noisycal.engines.density import nuts as nuts_engine

    sim = nc.simulate.dawid_skene(300, [0.3, 0.7], CONF, seed=4)
    real = nuts_engine.sample_nuts

    seen = {}

    def flipped(*args, **kwargs):
        samples, diverging = real(*args, **kwargs)
        s = {k: np.array(v) for k, v in samples.items()}
        s["prevalence"][1] = s["prevalence"][1][..., ::-1]
        s["confusion"][1] = s["confusion"][1][..., ::-1, :]
        seen["prevalence"] = s["prevalence"]
        return s, diverging

    monkeypatch.setattr(nuts_engine, "sample_nuts", flipped)
    # 2 chains x 200 draws: the R-hat of two chains in one mode varies up to about 1.07
    # (1.063 was seen after a change of the EM start in the 16th digit), a chain left in
    # the mirrored mode gives far more; the threshold separates the two
    with pytest.warns(nc.IdentifiabilityWarning, match="relabelled"):
        fit = nc.DawidSkene().fit(sim.annotations,
                                  method=nc.engines.NUTS(num_chains=2, num_warmup=200,
                                                         num_samples=200, rhat_threshold=1.1))
    assert fit.details["relabelled_chains"] == [1]
    assert fit.details["max_rhat"] < 1.1
    import arviz as az

    draws = seen["prevalence"]                     # (chains, draws, ...) as sampled
    first = draws.reshape(draws.shape[0], draws.shape[1], -1)[..., 0]
    unguarded = float(az.rhat(az.convert_to_dataset({"p": first}))["p"])
    assert unguarded > 1.5     # the draws as sampled, before the guard relabelled them
    # 200 draws per chain on a small simulation: the posterior mean is within about two
    # posterior SDs (~0.035) of the truth; 0.08 is 0.27 relative on the 0.3 class
    np.testing.assert_allclose(fit.prevalence, [0.3, 0.7], atol=0.08)


@pytest.mark.slow
def test_nuts_ds1979_stan_priors():
    """Posterior mean prevalence within 0.03 of (0.37, 0.41, 0.15, 0.07); R-hat < 1.01."""
    ann = nc.datasets.load_dawid_skene_1979()
    fit = nc.DawidSkene(n_classes=4).fit(ann, method=nc.engines.NUTS(num_chains=4, num_warmup=1000,
                                                                     num_samples=1000), seed=0)
    print("DS-1979 NUTS prevalence", fit.prevalence.round(3), "max R-hat",
          round(fit.details["max_rhat"], 4), "min ESS", round(fit.details["min_ess_bulk"]))
    np.testing.assert_allclose(fit.prevalence, [0.37, 0.41, 0.15, 0.07], atol=0.03)
    assert fit.details["relabelled_chains"] == []
    assert fit.details["max_rhat"] < 1.01
    assert fit.status == "ok"


@pytest.mark.slow
def test_nuts_credible_interval_coverage():
    """90% credible intervals (Stan priors) cover the simulated channel entries.

    40 seeded data sets of 300 items; 2 chains of 300 draws each. Coverage of a
    credible interval is not guaranteed to be nominal (prior and small samples); the
    test asserts the issue's 0.85-0.95 band and prints the measured figure.
    """
    hits, total = 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        for r in range(40):
            sim = nc.simulate.dawid_skene(300, [0.4, 0.6], CONF, seed=900 + r)
            fit = nc.DawidSkene().fit(sim.annotations,
                                      method=nc.engines.NUTS(num_chains=2, num_warmup=300,
                                                             num_samples=300), seed=r)
            ci = fit.conf_int(level=0.9)
            c = ci[ci["parameter"] == "confusion"]
            truth = CONF.reshape(-1)
            hits += int(np.sum((c["low"].to_numpy() <= truth)
                               & (truth <= c["high"].to_numpy())))
            total += truth.size
    coverage = hits / total
    print(f"NUTS 90% credible coverage of confusion entries: {coverage:.3f} ({total} checks)")
    assert 0.85 <= coverage <= 0.95


def test_nuts_honours_gold_labels():
    """Gold labels enter the NUTS likelihood (the model's own) and clamp posteriors."""
    sim = nc.simulate.dawid_skene(120, [0.4, 0.6], CONF, seed=5)
    ann = sim.annotations
    idx = np.arange(0, 120, 4)
    gold = {ann.items[i].item(): int(sim.true_class[i]) for i in idx}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        fit = nc.DawidSkene().fit(ann, method=nc.engines.NUTS(num_chains=1, num_warmup=150,
                                                              num_samples=150), gold=gold)
    assert fit.details["gold"]
    np.testing.assert_array_equal(fit.item_posterior[idx], np.eye(2)[sim.true_class[idx]])
    free = np.setdiff1d(np.arange(120), idx)
    assert np.all(fit.item_posterior[free].max(1) < 1.0)
