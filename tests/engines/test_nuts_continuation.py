"""An extended NUTS fit continues its chains (no new warm-up, the earlier draws kept) and
restarts with doubled warm-up only when continuing cannot help
(noisycal.engines.density.nuts.extended_fit, noisycal.engines.density.continuation)."""

import dataclasses
import warnings

import numpy as np
import pytest

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

import noisycal as nc
from noisycal.engines.density import nuts_program
from noisycal.engines.density.nuts import _restart_reason, extended_fit, run_nuts

CONF = np.array([[[0.85, 0.15], [0.2, 0.8]]] * 3)


def _nuts(max_extensions):
    # 2 chains x 25 draws after 50 warm-up steps: R-hat 1.18 and bulk ESS 24, short of
    # the targets; the continued chains reach them
    return nc.engines.NUTS(num_chains=2, num_warmup=50, num_samples=25, extend=True,
                           max_extensions=max_extensions, min_ess=100, rhat_threshold=1.05)


@pytest.fixture(scope="module")
def fits():
    ann = nc.simulate.dawid_skene(150, [0.6, 0.4], CONF, seed=0).annotations
    # fresh programs: another file's fits in this process (test_nuts_extension.py) may
    # have compiled the same sampler with other settings, which the counts below would
    # include
    nuts_program.PROGRAMS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        first = nc.DawidSkene(2).fit(ann, method=_nuts(0), seed=0)
        fit = nc.DawidSkene(2).fit(ann, method=_nuts(2), seed=0)
    compiled = [(p.sample_keep._cache_size(), p.resume._cache_size(), p.constrain._cache_size())
                for p in nuts_program.PROGRAMS.values() if p.resume._cache_size()]
    return first, fit, compiled


def test_the_chains_are_continued_until_rhat_and_ess_pass(fits):
    first, fit, _ = fits
    runs = fit.details["extensions"]
    assert [(r["num_warmup"], r["num_samples"], r["continued"], r["restart_reason"])
            for r in runs] == [(50, 25, False, None), (50, 50, True, None),
                               (50, 100, True, None)]
    # the short run failed the check, the continued chains pass it
    assert runs[0]["max_rhat"] == first.details["max_rhat"]
    assert runs[0]["max_rhat"] > 1.05 and runs[0]["min_ess_bulk"] < 100
    assert fit.details["max_rhat"] <= 1.05 and fit.details["min_ess_bulk"] >= 100
    assert fit.status == "ok" and "extension" not in fit.message
    # no new warm-up: 50 + 100 transitions per chain, the draws of all runs together
    assert (fit.engine.num_warmup, fit.engine.num_samples) == (50, 100)
    assert fit.n_iter == 150 and fit.draws["confusion"].shape == (2 * 100, 3, 2, 2)
    assert fit.details["sample_stats"]["diverging"].shape == (2, 100)


def test_the_continued_draws_begin_with_the_first_runs_draws(fits):
    first, fit, _ = fits
    for site in ("confusion", "prevalence"):
        cont = fit.draws[site].reshape(2, 100, *fit.draws[site].shape[1:])
        short = first.draws[site].reshape(2, 25, *first.draws[site].shape[1:])
        np.testing.assert_array_equal(cont[:, :25], short)
        assert not np.array_equal(cont[:, 25:50], short)


def test_every_continuation_runs_one_compiled_program(fits):
    """The continuations drew 25 + 50 more per chain in 3 compiled calls of 25 (the first
    run's draws): the second continuation compiled nothing new (one sampler, one
    continuation and one constraining program in all)."""
    assert fits[2] == [(1, 1, 1)]


@dataclasses.dataclass(frozen=True)
class _Fit:
    result: object
    message: str
    details: dict


def _runner(model, log, seed=0):
    def run(engine):
        res = run_nuts(model, seed=seed, progress_bar=False, cache=True, **engine.sampler())
        log.append(res)
        return _Fit(res, res.message, {"max_rhat": res.max_rhat,
                                       "min_ess_bulk": res.min_ess_bulk,
                                       "num_divergences": res.num_divergences})
    return run


def _two_modes():
    x = numpyro.sample("x", dist.Normal(0.0, 10.0))
    numpyro.factor("modes", logsumexp(jnp.stack([dist.Normal(-4.0, 0.5).log_prob(x),
                                                 dist.Normal(4.0, 0.5).log_prob(x)])))


def test_a_chain_stuck_in_another_mode_restarts_with_doubled_warmup():
    """4 chains on two far-apart modes: doubling the draws leaves R-hat at 1.6, so the
    next run starts afresh with warm-up and draws doubled."""
    log = []
    engine = nc.engines.NUTS(num_chains=4, num_warmup=100, num_samples=50, extend=True,
                             max_extensions=2, min_ess=0, rhat_threshold=1.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        fit = extended_fit(_runner(_two_modes, log), engine)
    runs = fit.details["extensions"]
    assert [(r["num_warmup"], r["num_samples"], r["continued"]) for r in runs] == [
        (100, 50, False), (100, 100, True), (200, 200, False)]
    assert runs[1]["max_rhat"] - 1 >= 0.75 * (runs[0]["max_rhat"] - 1)
    assert runs[0]["max_rhat"] > 1.5 and runs[1]["max_rhat"] > 1.5
    assert "a chain may be stuck in another mode" in runs[2]["restart_reason"]
    np.testing.assert_array_equal(log[1].samples["x"][:, :50], log[0].samples["x"])
    assert log[2].samples["x"].shape == (4, 200)
    assert "after 2 extension(s) (max_extensions=2), at 200 warm-up and 200 draws" \
        in fit.message


def test_the_restart_rule():
    runs = [{"max_rhat": 1.2, "continued": False}, {"max_rhat": 1.16, "continued": True}]
    # the excess 0.16 is not below 3/4 of 0.2: restart; 0.14 is: continue
    assert _restart_reason({}, runs, 1.01, True) == (
        "R-hat 1.16 did not improve enough on 1.2 after a continuation (its excess over 1 "
        "did not fall below 0.75 of the previous): a chain may be stuck in another mode")
    runs[1]["max_rhat"] = 1.14
    assert _restart_reason({"num_divergences": 0}, runs, 1.01, True) is None
    # R-hat already below the threshold (only the ESS is short): continue
    assert _restart_reason({}, [runs[0], {"max_rhat": 1.009, "continued": True}],
                           1.01, True) is None
    # divergences: the adapted step size is bad, a longer warm-up adapts a new one
    assert _restart_reason({"num_divergences": 3}, runs[:1], 1.01, True) == (
        "3 divergent transition(s): continuing would keep the step size that diverged")
    assert _restart_reason({}, runs[:1], 1.01, False) == "the run kept no chains to continue"


def test_a_fit_that_keeps_no_chains_is_rerun_as_before():
    """A run that never calls the sampler keeps nothing to continue: warm-up and draws
    double, as before continuation existed."""
    def run(engine):
        return _Fit(None, "", {"max_rhat": 1.5, "min_ess_bulk": 10.0})

    fit = extended_fit(run, nc.engines.NUTS(num_warmup=10, num_samples=20, extend=True))
    assert [(r["num_warmup"], r["num_samples"], r["continued"], r["restart_reason"])
            for r in fit.details["extensions"]] == [
        (10, 20, False, None), (20, 40, False, "the run kept no chains to continue"),
        (40, 80, False, "the run kept no chains to continue")]
