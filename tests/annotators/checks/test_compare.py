"""Model comparison of annotator fits: nc.annotators.compare and compare_calibration."""

import dataclasses
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.annotators.checks.compare import ComparisonResult
from noisycal.workflows.comparison import compare_calibration, mixture_interval

NUTS = dict(method=nc.engines.NUTS(num_chains=2, num_warmup=150, num_samples=150,
                                   rhat_threshold=1.2), seed=0)

# full Dawid-Skene channels: class-specific, asymmetric confusions (one-coin cannot fit)
DS_CONF = np.array([[[0.92, 0.06, 0.02], [0.40, 0.55, 0.05], [0.03, 0.30, 0.67]],
                    [[0.88, 0.10, 0.02], [0.35, 0.60, 0.05], [0.05, 0.25, 0.70]],
                    [[0.90, 0.05, 0.05], [0.30, 0.65, 0.05], [0.02, 0.35, 0.63]],
                    [[0.85, 0.10, 0.05], [0.45, 0.50, 0.05], [0.05, 0.20, 0.75]]])
# one-coin channels: accuracy 0.75, errors spread evenly
ONE_COIN = np.tile(np.full((3, 3), 0.125) + np.eye(3) * 0.625, (4, 1, 1))
PREV = [0.5, 0.3, 0.2]


def _probs(true_class, seed):
    rng = np.random.default_rng(seed)
    z = 1.5 * np.eye(3)[true_class] + rng.normal(0.0, 1.0, (true_class.size, 3))
    p = np.exp(z)
    return p / p.sum(1, keepdims=True)


def _nuts_fits(ann):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)  # short chains
        return {"ds": nc.DawidSkene(3).fit(ann, **NUTS),
                "one_coin": nc.OneCoinDawidSkene(3).fit(ann, **NUTS)}


@pytest.fixture(scope="module")
def ds_data():
    sim = nc.simulate.dawid_skene(250, PREV, DS_CONF, seed=1)
    return sim, _nuts_fits(sim.annotations)


@pytest.fixture(scope="module")
def one_coin_data():
    sim = nc.simulate.dawid_skene(250, PREV, ONE_COIN, seed=2)
    return sim, _nuts_fits(sim.annotations)


@pytest.fixture(scope="module")
def em_fits():
    sim = nc.simulate.dawid_skene(300, PREV, DS_CONF, seed=3)
    ann = sim.annotations
    return ann, {"ds": nc.DawidSkene(3).fit(ann, method=nc.engines.EM(n_starts=2), seed=0),
                 "one_coin": nc.OneCoinDawidSkene(3).fit(ann, method=nc.engines.EM(n_starts=2),
                                                         seed=0)}


def test_loo_ranks_full_ds_first_on_ds_data(ds_data):
    sim, fits = ds_data
    res = nc.annotators.compare(fits, sim.annotations)
    assert isinstance(res, ComparisonResult) and res.ic == "loo"
    assert res.ranks == {"ds": 0, "one_coin": 1}
    row = res.table.set_index("model").loc["one_coin"]
    assert row["elpd_diff"] > 2 * row["dse"]
    assert sum(res.model_weights.values()) == pytest.approx(1.0, abs=1e-9)
    assert {"elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse", "warning",
            "pareto_k_high", "n_items"} <= set(res.table.columns)
    assert (res.table["n_items"] == 250).all()
    # the elpd is the sum of the items' pointwise values, cached on the fit for summary()
    loo = nc.engines.summary.fit_loo(fits["ds"])
    assert res.table.set_index("model").loc["ds", "elpd_loo"] == pytest.approx(
        float(np.sum(loo.loo_i)), rel=1e-12)
    assert fits["ds"].summary().header["elpd_loo"] == pytest.approx(float(loo["elpd_loo"]))
    high = int(np.sum(np.asarray(loo["pareto_k"]) > 0.7))
    assert res.table.set_index("model").loc["ds", "pareto_k_high"] == high
    assert res.status == ("pareto_k_high" if res.table["pareto_k_high"].sum() else "ok")


def test_loo_favours_one_coin_or_ties_on_one_coin_data(one_coin_data):
    sim, fits = one_coin_data
    res = nc.annotators.compare(fits, sim.annotations)
    row = res.table.set_index("model")
    diff_within_se = abs(row.loc["ds", "elpd_loo"] - row.loc["one_coin", "elpd_loo"]) \
        < row.loc["ds", "dse"] + row.loc["one_coin", "dse"]
    assert res.model_weights["one_coin"] > 0.5 or diff_within_se
    assert sum(res.model_weights.values()) == pytest.approx(1.0, abs=1e-9)


def test_model_averaged_nc_ece_is_the_tables_estimator_averaged(ds_data):
    """The default model average inverts the weighted mixture of the per-model tests: its
    value lies between the per-model (median-unbiased) values, and with all the weight
    on one model it gives that model's row back (up to one simulated draw)."""
    sim, fits = ds_data
    probs = _probs(sim.true_class, 0)
    res = compare_calibration(fits, sim.annotations, probs, n_bins=5, seed=0)
    t = res.nc_ece.set_index("model")
    assert list(t.index) == ["ds", "one_coin"]  # best first
    avg = res.averaged
    assert avg.details["average"] == "inversion" and avg.kind == "inversion"
    assert avg.estimator == "median-unbiased" and avg.method == "model-averaged tail area"
    assert t["value"].min() <= avg.value <= t["value"].max()
    assert t["low"].min() - 1e-3 <= avg.low <= t["low"].max() + 1e-3
    assert t["high"].min() - 1e-3 <= avg.high <= t["high"].max() + 1e-3
    assert avg.details["value_by_model"] == dict(t["value"])
    # each model's plug-in is the ECE of its corrected target without an interval
    for m, fit in fits.items():
        ref = float(nc.ece(probs, nc.targets.corrected(sim.annotations, fit), n_bins=5,
                           interval=None))
        assert t.loc[m, "plugin"] == pytest.approx(ref, rel=1e-12)
    # the statuses of the weighted models travel: a component flagged 'boundary'
    flagged = {**fits, "ds": dataclasses.replace(fits["ds"], status="boundary",
                                                 statuses=("boundary",))}
    res2 = compare_calibration(flagged, sim.annotations, probs, n_bins=5, seed=0)
    assert res2.model_weights["ds"] > 0 and "target_boundary" in res2.averaged.statuses
    assert {"nc_ece_value", "nc_ece_low", "nc_ece_high"} <= set(res.to_frame().columns)
    assert "elpd_loo" in res._repr_html_() and "model-averaged" in repr(res)


def test_mixture_inversion_with_one_model_is_that_models_row(ds_data):
    """All the weight on one model: the mixture's criteria compare tail probabilities
    where the row compares quantiles, so they agree to about one draw's share of the
    null (n_sim = 1,000) in the bisection's terms."""
    from noisycal.intervals.inversion import mixture_inversion, recording_tails

    sim, fits = ds_data
    probs = _probs(sim.true_class, 0)
    with recording_tails() as rec:
        row = nc.ece(probs, nc.targets.corrected(sim.annotations, fits["ds"]), n_bins=5)
    assert len(rec) == 1
    one = mixture_inversion(rec, np.array([1.0]))
    assert one.plugin == pytest.approx(row.details["plugin"], rel=1e-12)
    assert one.p_value == row.details["p_value_zero"]
    for a, b in ((one.low, row.low), (one.high, row.high), (one.estimate, row.value)):
        assert a == pytest.approx(b, rel=0.02, abs=1e-3)


def test_model_averaged_nc_ece_mixture_of_credible_distributions(ds_data):
    sim, fits = ds_data
    probs = _probs(sim.true_class, 0)
    res = compare_calibration(fits, sim.annotations, probs, n_bins=5, seed=0,
                              average="mixture")
    w = res.model_weights
    per_model = res.averaged.details["plugin_by_model"]
    assert res.averaged.value == pytest.approx(sum(w[m] * per_model[m] for m in w), rel=1e-12)
    assert min(per_model.values()) <= res.averaged.value <= max(per_model.values())
    lo, hi = res.averaged.interval
    assert 0.0 <= lo < hi and res.averaged.method == "credible-eti"
    # not the table's estimator, and biased upward near 0: never status ok
    assert res.averaged.status == "plugin_bias" and "upward bias" in res.averaged.message


def test_model_averaged_nc_ece_target_is_at_most_the_weighted_mean(ds_data):
    sim, fits = ds_data
    probs = _probs(sim.true_class, 0)
    res = compare_calibration(fits, sim.annotations, probs, n_bins=5, average="target")
    w = res.model_weights
    plug = res.nc_ece.set_index("model")["plugin"]
    T = sum(w[m] * np.asarray(nc.targets.corrected(sim.annotations, fits[m])) for m in w)
    ref = float(nc.ece(probs, nc.targets.from_matrix(T, kind="corrected"), n_bins=5,
                       interval=None))
    assert res.averaged.details["plugin"] == pytest.approx(ref, rel=1e-12)
    assert ref <= sum(w[m] * plug[m] for m in w) + 1e-12  # triangle inequality
    assert "channels_fixed" in res.averaged.statuses


def test_aic_bic_comparison_of_em_fits(em_fits):
    ann, fits = em_fits
    for ic in ("aic", "bic"):
        res = nc.annotators.compare(fits, ann, ic=ic)
        value = {m: getattr(f, ic) for m, f in fits.items()}
        best = min(value, key=value.get)
        assert res.ranks[best] == 0 and res.weights == "akaike"
        d = {m: v - value[best] for m, v in value.items()}
        raw = {m: np.exp(-x / 2) for m, x in d.items()}
        for m in fits:
            assert res.model_weights[m] == pytest.approx(raw[m] / sum(raw.values()),
                                                         rel=1e-12, abs=1e-300)
            assert res.table.set_index("model").loc[m, f"{ic}_diff"] == pytest.approx(
                d[m], rel=1e-12, abs=1e-12)
    assert nc.annotators.compare(fits, ann, ic="bic").ranks["ds"] == 0  # DS data, n = 300
    probs = _probs(nc.simulate.dawid_skene(300, PREV, DS_CONF, seed=3).true_class, 1)
    res = compare_calibration(fits, ann, probs, ic="aic", n_bins=5)
    assert res.averaged.details["average"] == "inversion"
    values = res.nc_ece["value"]
    assert values.min() <= res.averaged.value <= values.max()
    with pytest.raises(ValueError, match="average='mixture' needs posterior draws"):
        compare_calibration(fits, ann, probs, ic="aic", average="mixture")


def test_refusals(em_fits, ds_data):
    ann, fits = em_fits
    with pytest.raises(ValueError, match="LOO needs posterior draws"):
        nc.annotators.compare(fits, ann)
    with pytest.raises(ValueError, match="fits must be a dict of at least two"):
        nc.annotators.compare({"ds": fits["ds"]}, ann, ic="aic")
    with pytest.raises(ValueError, match="fits must map str names to AnnotatorFit"):
        nc.annotators.compare({"ds": fits["ds"], "x": 1}, ann, ic="aic")
    with pytest.raises(ValueError, match="ic must be one of"):
        nc.annotators.compare(fits, ann, ic="waic")
    with pytest.raises(ValueError, match="weights must be one of"):
        nc.annotators.compare(fits, ann, ic="aic", weights="bma")
    sim, nuts = ds_data
    # fits of different items or ratings
    with pytest.raises(ValueError, match="fits must all be fitted on annotations: 'ds'"):
        nc.annotators.compare({"ds": nuts["ds"], "one_coin": fits["one_coin"]}, ann,
                              ic="aic")
    with pytest.raises(ValueError, match="fits: ic='aic' compares maximised likelihoods"):
        nc.annotators.compare(nuts, sim.annotations, ic="aic")
    with pytest.raises(ValueError, match="average must be one of"):
        compare_calibration(nuts, sim.annotations, average="bma")


def test_comparison_plot(ds_data, em_fits):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sim, fits = ds_data
    res = nc.annotators.compare(fits, sim.annotations)
    ax = nc.plots.comparison_plot(res)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0].startswith("ds (w=") or labels[-1].startswith("ds (w=")
    assert len(ax.lines) + len(ax.collections) > 0 and "elpd_loo" in ax.get_xlabel()
    ann, em = em_fits
    ax2 = nc.plots.comparison_plot(nc.annotators.compare(em, ann, ic="bic"))
    assert "BIC" in ax2.get_xlabel()
    with pytest.raises(ValueError, match="result must be a ComparisonResult"):
        nc.plots.comparison_plot(res.table)
    plt.close("all")


def test_mixture_interval_by_hand():
    # two equally weighted components 0..9 and 10..19: the 0.8 interval of 0..19
    lo, hi = mixture_interval([np.arange(10.0), np.arange(10.0, 20.0)], np.array([0.5, 0.5]),
                              0.8)
    assert (lo, hi) == (1.0, 17.0)  # CDF reaches 0.1 at 1 (2/20), 0.9 at 17 (18/20)
    lo, hi = mixture_interval([np.arange(10.0), np.array([np.nan])], np.array([1.0, 0.0]), 0.8)
    assert (lo, hi) == (0.0, 8.0)  # a zero-weight component is ignored
    assert np.isnan(mixture_interval([np.array([np.nan, 1.0])], np.ones(1), 0.9)[0])
