"""ArviZ export in full: sample_stats, per-item log_likelihood, posterior_predictive,
observed_data of NUTS annotator fits, and ArviZ's model checks on them (Agg backend)."""

from __future__ import annotations

import dataclasses

import matplotlib
import numpy as np
import pytest
from small_nuts import TWO_CHAINS

import noisycal as nc
from noisycal.engines.density import nuts as nuts_engine
from noisycal.engines.density.arviz_export import arviz_sample_stats
from noisycal.engines.density.diagnostics import import_arviz

matplotlib.use("Agg")
az = import_arviz()

CONF = np.array([[[0.85, 0.15], [0.25, 0.75]],
                 [[0.9, 0.1], [0.2, 0.8]],
                 [[0.75, 0.25], [0.1, 0.9]]])
NUTS = nc.engines.NUTS(**TWO_CHAINS, rhat_threshold=1.2)


def _ann():
    sim = nc.simulate.dawid_skene(40, [0.4, 0.6], CONF, seed=3)
    # ids that are not positions, so the coordinates are seen to carry them
    frame = sim.annotations.to_long()
    frame = frame.assign(item="img" + frame["item"].astype(str),
                         annotator="rater" + frame["annotator"].astype(str),
                         label=np.where(frame["label"] == 0, "cat", "dog"))
    return nc.Annotations.from_long(frame, item="item", annotator="annotator", label="label")


def _fit_capturing_stats(model, ann):
    """A NUTS fit whose details carry the sampler's transition statistics, as
    ``DawidSkene._fit_nuts`` stores them once it passes ``nd.sample_stats`` on."""
    from noisycal.annotators import dawid_skene as ds_module

    seen = {}
    real = ds_module.sample_dawid_skene

    def capture(*args, **kwargs):
        seen["nd"] = real(*args, **kwargs)
        return seen["nd"]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ds_module, "sample_dawid_skene", capture)
        fit = model.fit(ann, method=NUTS, seed=1)
    if "sample_stats" not in fit.details:
        fit = dataclasses.replace(fit, details={**fit.details,
                                                "sample_stats": seen["nd"].sample_stats})
    return fit


@pytest.fixture(scope="module")
def ann():
    return _ann()


@pytest.fixture(scope="module")
def ds_fit(ann):
    return _fit_capturing_stats(nc.DawidSkene(), ann)


@pytest.fixture(scope="module")
def idata(ds_fit):
    return ds_fit.to_arviz(seed=0)


def test_every_group_with_named_dims_and_coords(ds_fit, idata, ann):
    for group in ("posterior", "sample_stats", "log_likelihood", "posterior_predictive",
                  "observed_data", "constant_data"):
        assert group in idata.groups(), group
    post = idata.posterior
    assert post["confusion"].dims == ("chain", "draw", "annotator", "true", "observed")
    assert post["confusion"].shape == (2, 100, 3, 2, 2)
    assert list(post["annotator"].values) == list(ds_fit.annotators)
    assert list(post["true"].values) == list(ds_fit.classes)
    ll = idata.log_likelihood["label"]
    assert ll.dims == ("chain", "draw", "item") and ll.shape == (2, 100, ann.n_items)
    assert list(ll["item"].values) == list(ann.items)
    pp = idata.posterior_predictive["label"]
    assert pp.dims == ("chain", "draw", "rating") and pp.shape == (2, 100, ann.n_ratings)
    obs = idata.observed_data["label"].values
    arr = ann.engine_arrays()
    np.testing.assert_array_equal(obs, arr.label)
    # the replicated ratings sit on the observed design
    np.testing.assert_array_equal(idata.constant_data["rating_item"].values,
                                  np.asarray(ann.items)[arr.item])
    np.testing.assert_array_equal(idata.constant_data["rating_annotator"].values,
                                  np.asarray(ann.annotators)[arr.annotator])
    assert set(np.unique(pp.values)) <= {0, 1}


def test_sample_stats_are_the_samplers(idata):
    st = idata.sample_stats
    for name in ("energy", "diverging", "tree_depth", "n_steps", "step_size",
                 "acceptance_rate", "lp"):
        assert st[name].shape == (2, 100), name
    assert np.all(np.isfinite(st["energy"].values))
    a = st["acceptance_rate"].values
    assert np.all((a >= 0) & (a <= 1))
    n, depth = st["n_steps"].values, st["tree_depth"].values
    # a tree of depth d has at most 2^d - 1 leapfrog steps and more than 2^(d-1) - 1
    assert np.all(n >= 1) and np.all(n <= 2 ** depth - 1) and np.all(n > 2 ** (depth - 1) - 1)
    # the step size is fixed after warmup, one per chain
    s = st["step_size"].values
    np.testing.assert_array_equal(s, np.broadcast_to(s[:, :1], s.shape))
    # energy = potential + kinetic >= potential = -lp
    assert np.all(st["energy"].values >= -st["lp"].values - 1e-12)


def test_pointwise_loglik_equals_em_per_item_loglik(ds_fit, idata, ann):
    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.engines.em.dawid_skene import e_step
    from noisycal.models.dawid_skene import make_data

    arr = ann.engine_arrays()
    ll = idata.log_likelihood["label"].values.reshape(-1, ann.n_items)
    prev, conf = ds_fit.draws["prevalence"], ds_fit.draws["confusion"]
    with x64():
        data = make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                         n_annotators=arr.n_annotators, n_classes=arr.n_classes)
        for d in (0, 57, 199):
            _, em_ll = e_step(jnp.asarray(prev[d]), jnp.asarray(conf[d]), data, None)
            np.testing.assert_allclose(ll[d], np.asarray(em_ll), rtol=0, atol=1e-10)
    # and by hand: log sum_k pi_k prod_r theta[j_r, k, y_r], in plain NumPy
    d = 123
    by_hand = np.zeros(ann.n_items)
    for i in range(ann.n_items):
        r = arr.item == i
        lik = prev[d, 0] * np.prod(conf[d][arr.annotator[r], :, arr.label[r]], axis=0)
        by_hand[i] = np.log(lik.sum())
    np.testing.assert_allclose(ll[d], by_hand, rtol=0, atol=1e-10)


#: ArviZ warns when a Pareto k exceeds 1 - 1/log10(n_draws) (0.57 for the 200 draws of
#: these small fits); that is a diagnostic of the fit, not a failure of the export
PARETO = r"ignore:Estimated shape parameter of Pareto:UserWarning"


@pytest.mark.filterwarnings(PARETO)
@pytest.mark.filterwarnings(r"ignore:For one or more samples the posterior variance:UserWarning")
def test_arviz_checks_run_on_the_export(ds_fit, idata, ann):
    loo = az.loo(idata)
    waic = az.waic(idata)
    # elpd is the sum of n_items pointwise terms, each below 0 for discrete ratings
    assert loo.n_data_points == ann.n_items
    assert -3 * ann.n_items * np.log(2) < loo.elpd_loo < 0
    assert abs(loo.elpd_loo - waic.elpd_waic) < 1.0
    one_coin = _fit_capturing_stats(nc.OneCoinDawidSkene(), ann).to_arviz(seed=0)
    assert one_coin.posterior["confusion"].shape == (2, 100, 3, 2, 2)
    table = az.compare({"dawid_skene": idata, "one_coin": one_coin})
    assert set(table.index) == {"dawid_skene", "one_coin"}
    assert np.all(np.isfinite(table["elpd_loo"]))
    ax = az.plot_energy(idata)
    assert ax is not None
    axes = az.plot_ppc(idata, num_pp_samples=20, random_seed=0)
    assert np.size(axes) >= 1
    matplotlib.pyplot.close("all")


def test_replicated_ratings_follow_the_model(ds_fit, idata, ann):
    """Replicated label shares match the model's implied shares under each draw."""
    pp = idata.posterior_predictive["label"].values.reshape(200, -1)
    arr = ann.engine_arrays()
    prev, conf = ds_fit.draws["prevalence"][:, 0], ds_fit.draws["confusion"]
    # P(label = 1) of each rating, averaged over draws and ratings
    implied = np.mean([prev[d] @ conf[d][arr.annotator, :, 1].T for d in range(200)])
    # 200 x 120 ratings, correlated within item: SE about 0.006
    assert abs(pp.mean() - implied) < 0.03


def test_to_arviz_without_predictive_and_seeded(ds_fit):
    a = ds_fit.to_arviz(predictive=False)
    assert "posterior_predictive" not in a.groups()
    b1, b2 = ds_fit.to_arviz(seed=5), ds_fit.to_arviz(seed=5)
    np.testing.assert_array_equal(b1.posterior_predictive["label"].values,
                                  b2.posterior_predictive["label"].values)
    with pytest.raises(ValueError, match="predictive"):
        ds_fit.to_arviz(predictive="yes")


def test_run_nuts_result_exports_sample_stats():
    import numpyro
    import numpyro.distributions as dist

    def normal(y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    y = np.random.default_rng(0).normal(1.0, 1.0, 30)
    res = nuts_engine.run_nuts(normal, model_args=(y,), num_chains=2, num_warmup=100,
                               num_samples=100, progress_bar=False, rhat_threshold=1.2)
    idata = res.to_arviz()
    st = idata.sample_stats
    assert set(st.data_vars) >= {"energy", "diverging", "tree_depth", "step_size",
                                 "acceptance_rate", "lp", "n_steps"}
    np.testing.assert_array_equal(st["diverging"].values, res.diverging)
    # lp is the log density (unconstrained scale = constrained: mu is real) up to a constant
    mu = res.samples["mu"]
    logp = (-0.5 * (mu / 10.0) ** 2 - 0.5 * ((y[None, None, :] - mu[..., None]) ** 2).sum(-1))
    diff = st["lp"].values - logp
    np.testing.assert_allclose(diff, diff.flat[0], rtol=0, atol=1e-8)
    assert az.plot_energy(idata) is not None
    matplotlib.pyplot.close("all")


def test_arviz_sample_stats_names_and_tree_depth():
    stats = {"diverging": np.array([[False, True]]), "energy": np.array([[1.0, 2.0]]),
             "potential_energy": np.array([[0.5, 1.5]]), "num_steps": np.array([[1, 7]]),
             "accept_prob": np.array([[0.9, 0.1]]), "step_size": np.array([[0.3, 0.3]])}
    out = arviz_sample_stats(stats)
    np.testing.assert_array_equal(out["tree_depth"], [[1, 3]])
    np.testing.assert_array_equal(out["lp"], [[-0.5, -1.5]])
    np.testing.assert_array_equal(out["acceptance_rate"], [[0.9, 0.1]])
    assert arviz_sample_stats(None) == {}
    assert set(arviz_sample_stats({"diverging": stats["diverging"]})) == {"diverging"}


def test_em_fit_keeps_its_posterior_only_export(ann):
    fit = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=1))
    idata = fit.to_arviz()
    assert idata.groups() == ["posterior"]
    assert idata.posterior["confusion"].shape == (1, 1, 3, 2, 2)


@pytest.mark.filterwarnings(PARETO)
def test_soft_label_nuts_fit_exports_loglik_and_replicated_counts():
    from scipy.special import log_softmax

    from noisycal.models.soft_labels import log_likelihood

    rng = np.random.default_rng(0)
    n, K, votes = 40, 3, 5
    logits = rng.normal(0.0, 1.5, size=(n, K))
    p = np.exp(log_softmax(logits, axis=1))
    counts = np.stack([rng.multinomial(votes, row) for row in p])
    fit = nc.annotators.DirichletSoftLabels().fit(
        logits=logits, counts=counts,
        method=nc.engines.NUTS(num_chains=2, num_warmup=100, num_samples=100, rhat_threshold=1.5),
        seed=0)
    bare = fit.to_arviz()
    assert set(bare.groups()) == {"posterior", "sample_stats"}
    idata = fit.to_arviz(logits=logits, counts=counts, seed=0)
    for group in ("posterior", "sample_stats", "log_likelihood", "posterior_predictive",
                  "observed_data"):
        assert group in idata.groups(), group
    ll = idata.log_likelihood["counts"]
    assert ll.dims == ("chain", "draw", "item") and ll.shape == (2, 100, n)
    # the pointwise terms are the model's one likelihood at each draw, and sum to the
    # fit's log-likelihood at the posterior mean when evaluated there
    W, b, kappa = (fit.engine_result.samples[k] for k in ("W", "b", "kappa"))
    from noisycal._util.jax import x64

    with x64():
        direct = np.asarray(log_likelihood(W[1, 7], b[1, 7], kappa[1, 7],
                                           log_softmax(logits, axis=1), counts))
    np.testing.assert_allclose(ll.values[1, 7], direct, rtol=0, atol=1e-10)
    rep = idata.posterior_predictive["counts"]
    assert rep.shape == (2, 100, n, K)
    np.testing.assert_array_equal(rep.values.sum(-1), np.broadcast_to(counts.sum(1),
                                                                       (2, 100, n)))
    assert az.loo(idata).n_data_points == n
    assert az.plot_energy(idata) is not None
    assert np.size(az.plot_ppc(idata, num_pp_samples=10, random_seed=0)) >= 1
    matplotlib.pyplot.close("all")
    with pytest.raises(ValueError, match="counts"):
        fit.to_arviz(logits=logits)
