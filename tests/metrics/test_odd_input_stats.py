"""Odd input to intervals, engines and calibrators: statuses and refusals, not silent
numbers (issue 23). Each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from small_nuts import ONE_CHAIN

import noisycal as nc
from noisycal.intervals.bootstrap import interval_from_replicates

# ----------------------------------------------------------------------------- BCa


def test_bca_counts_replicates_tied_with_the_estimate_half():
    # half the replicates equal the estimate, a quarter on each side: the estimate is
    # the replicates' median, so with zero acceleration BCa is the percentile interval
    reps = np.concatenate([np.full(50, 5.0), np.linspace(0.0, 4.0, 25),
                           np.linspace(6.0, 10.0, 25)])
    jack = np.ones(10)
    (lo, hi), st, _ = interval_from_replicates(5.0, reps, 0.8, "bca", jack)
    assert st == "ok"
    assert lo == pytest.approx(np.quantile(reps, 0.1), abs=1e-12)
    assert hi == pytest.approx(np.quantile(reps, 0.9), abs=1e-12)


def test_bca_beyond_the_replicates_reach_is_degenerate():
    # 2 of 1000 replicates below the estimate: z0 = -2.88 moves both BCa tail levels
    # below 1/1000, so both ends would be the smallest replicate
    reps = np.linspace(1.0, 2.0, 1000)
    with pytest.warns(nc.NumericalWarning, match="beyond what 1000 replicates resolve"):
        ci, st, msg = interval_from_replicates(float(reps[2]), reps, 0.9, "bca", np.ones(5))
    assert st == "bca_degenerate" and np.isnan(ci[0]) and np.isnan(ci[1])
    assert "percentile" in msg


def test_bca_past_the_estimate_has_its_own_status():
    # 184 replicates below the estimate and one tied (share 369/2000, z0 = -0.898), level 0.5, no
    # acceleration: the BCa levels are Phi(2 z0 -/+ 0.674) = (0.0066, 0.130), both
    # resolved by 1000 replicates, and the upper end lies below the estimate
    reps = np.linspace(0.0, 1.0, 1000)
    theta = float(reps[184])
    with pytest.warns(nc.NumericalWarning, match="BCa interval .* does not contain"):
        (lo, hi), st, _ = interval_from_replicates(theta, reps, 0.5, "bca", np.ones(5))
    assert st == "estimate_outside_interval" and hi < theta
    # the quantiles of linspace(0, 1, 1000) are the levels themselves
    z0, z = norm.ppf(369 / 2000), norm.ppf(0.75)
    assert lo == pytest.approx(norm.cdf(2 * z0 - z), rel=1e-9)
    assert hi == pytest.approx(norm.cdf(2 * z0 + z), rel=1e-9)


@pytest.mark.parametrize("scheme", ["exact", "binned", "poisson"])
def test_ece_bca_collapsing_onto_the_edge_is_not_reported(scheme):
    # calibrated, 40 sparse bins: nearly every resample's ECE exceeds the sample's, and
    # the BCa interval collapsed onto the smallest replicate (poisson: [0.0424, 0.0424]
    # around an estimate of 0.0435)
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 2000)
    y = (rng.random(2000) < p).astype(int)
    with pytest.warns(nc.NumericalWarning, match="beyond what 1000 replicates resolve"):
        est = nc.ece(p, y, n_bins=40,
                     interval=nc.intervals.Bootstrap(n_boot=1000, method="bca", scheme=scheme),
                     seed=0)
    assert est.status == "bca_degenerate" and np.isnan(est.low) and np.isnan(est.high)
    assert est.value == pytest.approx(0.0435, abs=5e-5)


# ----------------------------------------------------------------------------- NUTS


def _normal_mean(y):
    import numpyro
    import numpyro.distributions as dist
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@pytest.mark.parametrize(("chains", "draws", "why"), [
    (1, 20, "one chain gives no between-chain R-hat"),
    (2, 3, "at least 4 draws per chain, got 3")])
def test_nuts_without_r_hat_is_not_ok(chains, draws, why):
    from noisycal.engines.density.nuts import run_nuts

    y = np.random.default_rng(0).normal(1.0, 1.0, 30)
    with pytest.warns(nc.ConvergenceWarning, match=why):
        res = run_nuts(_normal_mean, model_args=(y,), num_chains=chains, num_warmup=20,
                       num_samples=draws, seed=0, progress_bar=False)
    assert np.isnan(res.max_rhat)
    assert res.status == "diagnostics_unavailable" and not res.converged
    assert "convergence was not checked" in res.message


def test_dawid_skene_nuts_with_one_chain_is_not_ok():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.15, 0.85]],
                     [[0.85, 0.15], [0.25, 0.75]]])
    ann = nc.simulate.dawid_skene(60, [0.4, 0.6], conf, seed=0).annotations
    with pytest.warns(nc.ConvergenceWarning, match="one chain gives no between-chain R-hat"):
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.NUTS(**ONE_CHAIN), seed=0)
    assert fit.status == "diagnostics_unavailable" and np.isnan(fit.details["max_rhat"])


# ----------------------------------------------------------------------------- calibration test


def test_calibration_test_on_two_items_says_too_few():
    # two confident misses: p = 0.011 with no status before
    res = nc.calibration_test(np.array([0.99, 0.02]), np.array([0, 1]), n_boot=1000, seed=0)
    assert res.status == "too_few_items" and "only 2 items" in res.message
    assert res.p_value < 0.05
    big = nc.calibration_test(np.full(20, 0.5), np.tile([0, 1], 10), n_boot=200, seed=0)
    assert big.status == "ok" and big.p_value > 0.5


# ----------------------------------------------------------------------------- one-coin design


def test_one_coin_on_two_items_is_over_parametrised_like_dawid_skene():
    # perfect agreement on two items: Dawid-Skene (7 parameters, 6 ratings) says
    # over_parametrised; one-coin (4 parameters, only 6 - 2 = 4 ratings beyond each item's
    # first) was 'ok'
    ann = nc.Annotations.from_wide(np.array([[0, 0, 0], [1, 1, 1]]))
    with pytest.warns(nc.IdentifiabilityWarning, match="saturated"):
        full = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2), seed=0)
    with pytest.warns(nc.IdentifiabilityWarning, match="only 4 ratings inform the channels"):
        one = nc.OneCoinDawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2), seed=0)
    assert full.status == one.status == "over_parametrised" and one.n_params == 4
    # a third item: 9 - 3 = 6 ratings beyond the first of each, more than 4 parameters
    more = nc.Annotations.from_wide(np.array([[0, 0, 0], [1, 1, 1], [0, 0, 1]]))
    fit = nc.OneCoinDawidSkene(2).fit(more, method=nc.engines.EM(n_starts=2), seed=0)
    assert fit.status != "over_parametrised"


# ----------------------------------------------------------------------------- calibrator inputs

C = nc.calibrators
_rng = np.random.default_rng(3)
P1 = _rng.uniform(0.05, 0.95, 80)
Y1 = (_rng.random(80) < P1).astype(np.int64)


@pytest.mark.parametrize(("make", "arg"), [
    (lambda: C.PlattScaling(), "probs"), (lambda: C.PlattScaling(), "logits"),
    (lambda: C.IsotonicCalibration(), "probs"), (lambda: C.LWCal(), "probs"),
    (lambda: C.TrimCal(), "probs"), (lambda: C.TemperatureScaling(), "logits")])
@pytest.mark.parametrize("dtype", [bool, np.int64])
def test_calibrators_refuse_boolean_and_integer_scores(make, arg, dtype):
    scores = (P1 > 0.5).astype(dtype)
    with pytest.raises(ValueError, match=f"{arg} must be floating probabilities or logits"):
        make().fit(**{arg: scores}, target=Y1)


def test_matrix_scaling_refuses_a_boolean_matrix_and_predict_checks_too():
    onehot = np.eye(3, dtype=bool)[np.arange(30) % 3]
    with pytest.raises(ValueError, match="logits must be floating .* dtype bool"):
        C.MatrixScaling().fit(logits=onehot, target=np.arange(30) % 3)
    cal = C.PlattScaling().fit(probs=P1, target=Y1)
    with pytest.raises(ValueError, match="probs must be floating"):
        cal.predict_proba(probs=(P1 > 0.5))
    # integer-valued floats are scores
    assert cal.predict_proba(probs=np.round(P1)).shape == (80,)


@pytest.mark.parametrize("make", [lambda: C.PlattScaling(), lambda: C.IsotonicCalibration(),
                                  lambda: C.LWCal(), lambda: C.TemperatureScaling()])
def test_calibrators_check_a_default_index_against_the_target_items(make):
    import pandas as pd
    t = nc.targets.from_matrix(np.eye(2)[Y1], kind="hard",
                               items=[f"i{k}" for k in range(80)])
    given = pd.Series(P1)  # RangeIndex(80); the target's items are 'i0', 'i1', ...
    arg = "logits" if isinstance(make(), C.TemperatureScaling) else "probs"
    scores = given if arg == "probs" else pd.Series(np.log(P1 / (1 - P1)))
    with pytest.raises(ValueError, match="not aligned"):
        make().fit(**{arg: scores}, target=t)
    # the same index as the target's items: fitted
    make().fit(**{arg: scores.set_axis(t.items)}, target=t)


# ----------------------------------------------------------------------------- huge logits


def test_temperature_scaling_with_logits_near_the_float_limit_fits():
    # raised OverflowError (beta ** 3 of a Python float) when the loss was read at the box
    # bound on the rescaled scores
    z = np.array([[1e300, 0.0], [0.0, 1e300], [1e300, -1e300], [0.0, 1.0]])
    y = np.array([0, 1, 1, 0])
    with pytest.warns(nc.IdentifiabilityWarning, match="infinite_temperature"):
        cal = C.TemperatureScaling().fit(logits=z, target=y)
    assert cal.temperature_ == 20.0 and cal.status_ == "infinite_temperature"
    assert np.isfinite(cal.objective_)
    q = cal.predict_proba(logits=z)
    assert np.all(np.isfinite(q)) and q[3, 1] == pytest.approx(1 / (1 + np.exp(-1 / 20)))


def test_adaptive_temperature_scaling_refuses_logits_beyond_its_limit():
    z = np.array([[1e300, 0.0], [0.0, 1e300], [1e300, -1e300], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"logits reach \|z\| = 1e\+300"):
        C.AdaptiveTemperatureScaling().fit(logits=z, target=np.array([0, 1, 1, 0]))


# ----------------------------------------------------------------------------- separation

_rs = np.random.default_rng(0)
P_SEP = np.r_[_rs.uniform(0.001, 0.1, 50), _rs.uniform(0.9, 0.999, 50)]
Y_SEP = (P_SEP > 0.5).astype(int)


@pytest.mark.parametrize("make", [
    lambda: C.BetaCalibration(), lambda: C.BetaCalibration(parameters="am"),
    lambda: C.BetaCalibration(parameters="ab"),
    lambda: C.TrimCal(calibrator=C.BetaCalibration()), lambda: C.PlattScaling()])
def test_fits_on_separated_targets_say_separation(make):
    # scores far from 0.5 on either side: the optimiser stopped inside the box with
    # status 'ok' before
    with pytest.warns(nc.IdentifiabilityWarning, match="the scores separate the target"):
        cal = make().fit(probs=P_SEP, target=Y_SEP)
    assert cal.status_ == "separation"


def test_separation_needs_a_one_hot_target_separated_by_the_fit():
    from noisycal.calibrators._inputs import separates

    T = np.eye(2)[[0, 1, 1]]
    assert separates(np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]]), T)
    assert not separates(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]), T)  # a tie
    assert not separates(np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]]),
                         np.array([[1.0, 0.0], [0.2, 0.8], [0.0, 1.0]]))  # soft row
    assert not separates(np.zeros((3, 2)) + [0.0, 1.0], np.eye(2)[[1, 1, 1]])  # one class
    # overlapping classes: not separated, status ok
    y = np.r_[Y_SEP[:95], 1 - Y_SEP[95:]]
    assert C.BetaCalibration().fit(probs=P_SEP, target=y).status_ == "ok"


# ----------------------------------------------------------------------------- nll eps


def test_nll_reports_inf_by_default_and_clips_only_when_asked():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    honest = nc.nll(p, np.array([1, 0]), interval=None)
    assert np.isinf(honest.value) and honest.status == "nonfinite"
    assert "probability 0 on a class with positive target" in honest.message
    # by hand: (-log 1e-6 + log 2) / 2
    ref = (-np.log(1e-6) + np.log(2.0)) / 2
    for target in (np.array([1, 0]), np.array([[0.0, 1.0], [1.0, 0.0]])):
        est = nc.nll(p, target, interval=None, eps=1e-6)
        assert est.status == "ok" and est.value == pytest.approx(ref, rel=1e-12)
        assert est.details["eps"] == 1e-6 and est.details["n_clipped"] == 1
    lg = nc.nll(logits=np.array([[0.0, -1000.0], [0.0, 0.0]]),
                target=np.array([[0.0, 1.0], [1.0, 0.0]]),
                interval=nc.intervals.Bootstrap(n_boot=50), eps=1e-6)
    assert lg.value == pytest.approx(ref, rel=1e-12) and lg.details["n_clipped"] == 1
    assert "eps" not in honest.details
    for bad in (0, 1.0, -1e-3, True, "1e-6"):
        with pytest.raises(ValueError, match="eps"):
            nc.nll(p, np.array([1, 0]), interval=None, eps=bad)


# ----------------------------------------------------------------------------- x64 on and off

_X64_SCRIPT = """
import json, warnings
import numpy as np
import noisycal as nc
warnings.simplefilter("ignore")
fit = nc.DawidSkene(4).fit(nc.datasets.load_dawid_skene_1979(), seed=0)
ci = fit.conf_int(level=0.9, n_boot=10, seed=0)
print(json.dumps({"low": ci["low"].tolist(), "high": ci["high"].tolist()}))
"""


def test_dawid_skene_bootstrap_is_the_same_with_jax_x64_on_and_off():
    # the refits' start was made a JAX array outside the float64 context, so with x64 off
    # it was rounded to float32 and replicate 2 of 10 converged elsewhere (a confusion
    # entry moved by 0.99999)
    import json
    import os
    import subprocess
    import sys

    out = {}
    for flag in ("0", "1"):
        env = {**os.environ, "JAX_ENABLE_X64": flag}
        res = subprocess.run([sys.executable, "-c", _X64_SCRIPT], env=env, check=True,
                             capture_output=True, text=True, timeout=300)
        out[flag] = json.loads(res.stdout.strip().splitlines()[-1])
    for end in ("low", "high"):
        np.testing.assert_allclose(out["0"][end], out["1"][end], rtol=0, atol=1e-8)


# ----------------------------------------------------------------------------- credible minimum


def test_credible_intervals_need_a_minimum_number_of_draws():
    from types import SimpleNamespace

    from noisycal.engines.density.diagnostics import draws_conf_int, min_credible_draws
    from noisycal.metrics.nc.credible import nc_ece_credible

    assert [min_credible_draws(q) for q in (0.5, 0.9, 0.95, 0.99)] == [20, 20, 40, 200]
    d = np.random.default_rng(0).normal(size=(19, 2))
    with pytest.raises(ValueError, match="has 19 posterior draw.*at least 20"):
        draws_conf_int({"mu": d}, 0.9)
    ci = draws_conf_int({"mu": np.vstack([d, d[:1]])}, 0.9)
    assert ci.shape == (2, 2)
    with pytest.raises(ValueError, match="at least 40"):
        draws_conf_int({"mu": np.vstack([d, d[:1]])}, 0.95)
    # two channel draws behind the NC-ECE credible interval: refused (by the fit)
    from noisycal.engines.results import AnnotatorFit

    eye = np.stack([np.eye(2)] * 2)
    fit = AnnotatorFit("dawid_skene", "nuts", np.arange(2), np.arange(2), np.arange(5),
                       np.full((1, 2), 0.5), eye, np.full((5, 2), 0.5), 0.0, 0, "ok", "",
                       True, 0, {"confusion": np.zeros((2, 2, 2, 2))})
    target = SimpleNamespace(kind="corrected", details={
        "ratings": np.zeros((5, 2, 2)), "channel_draws": np.zeros((2, 2, 2, 2)), "fit": fit})
    with pytest.raises(ValueError, match="NUTS fit has 2 posterior draw"):
        nc_ece_credible(target, 0.9, statistic=lambda w, T: 0.0)


def test_a_nuts_fit_with_few_draws_refuses_conf_int_but_summarises():
    import dataclasses

    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.15, 0.85]],
                     [[0.85, 0.15], [0.25, 0.75]]])
    ann = nc.simulate.dawid_skene(100, [0.4, 0.6], conf, seed=0).annotations
    em = nc.DawidSkene(2).fit(ann, seed=0)
    draws = {"prevalence": np.repeat(em.group_prevalence[None], 5, axis=0),
             "confusion": np.repeat(em.confusion[None], 5, axis=0)}
    fake = dataclasses.replace(em, method="nuts", draws=draws)
    with pytest.raises(ValueError, match="this NUTS fit has 5 posterior draw"):
        fake.conf_int(level=0.9)
    summary = fake.summary()
    assert all("low" not in t.columns for t in summary.tables)
    assert len(summary.table("prevalence")) == 2


@pytest.mark.parametrize("cls", [nc.calibrators.MatrixScaling,
                                 nc.calibrators.DirichletCalibration])
def test_affine_maps_refuse_a_parameter_matrix_beyond_the_memory_cap(cls):
    # 3 items x 10^5 classes: 10^10 parameters (the audit: a 74.5 GiB allocation)
    probs = np.full((3, 100_000), 1e-5)
    with pytest.raises(ValueError, match=r"probs: an affine map on 100000 classes "
                       r"\(10000100000 parameters\) would need 1.86e\+03 GiB"):
        cls().fit(probs=probs, target=np.array([0, 1, 2]))


def test_calibrators_take_float16_probabilities_within_their_rounding():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=200).astype(np.float16)  # rows off 1 by up to 3.7e-4
    y = rng.integers(0, 3, 200)
    assert np.abs(P.astype(np.float64).sum(1) - 1).max() > 1e-4
    iso = nc.calibrators.IsotonicCalibration().fit(probs=P, target=y)
    assert iso.status_ == "ok"
    np.testing.assert_allclose(iso.predict_proba(probs=P).sum(1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="within 1e-06"):  # the same values in float64
        nc.calibrators.IsotonicCalibration().fit(probs=P.astype(np.float64), target=y)
    bad = P.copy()
    bad[0] = np.array([0.5, 0.5, 0.1], dtype=np.float16)  # off by 0.1: refused
    with pytest.raises(ValueError, match=r"rows of probs must sum to 1 within 0.00292969; "
                       r"row 0 sums to 1.0999756"):
        nc.calibrators.IsotonicCalibration().fit(probs=bad, target=y)
