"""What a fit offers the metrics (noisycal.targets.protocol.ChannelFit): influence(),
refit(weights) and posterior_draws(level) on AnnotatorFit, and their refusals."""

import dataclasses
import pickle
import warnings

import numpy as np
import pytest

import jax

import noisycal as nc
from noisycal._util.jax import as_key, x64
from noisycal.engines.influence import channel_influence
from noisycal.exceptions import NotOffered
from noisycal.intervals.bootstrap import multinomial_counts
from noisycal.metrics.binned.bins import equal_width_bins


def _toy(n, seed):
    t = nc.simulate.gaussian_toy(n, truth="shifted", seed=seed)
    return t, nc.Annotations.from_wide(t.annotations, classes=[0, 1])


@pytest.fixture(scope="module")
def toy():
    t, ann = _toy(600, seed=3)
    return t, ann, nc.DawidSkene(2).fit(ann, method=nc.engines.EM(tol=1e-15, max_iter=50_000))


@dataclasses.dataclass(frozen=True)
class _Draw:
    """Bootstrap multiplicities from a key (a hashable draw, as refit asks)."""

    n: int

    def __call__(self, key, args):
        return multinomial_counts(key, self.n)


def _count(w, confusion, prevalence, args):
    return w.sum() * args[0], prevalence[1]


def test_fits_implement_the_protocol(toy):
    t, ann, fit = toy
    assert isinstance(fit, nc.targets.ChannelFit)
    hw = nc.HuiWalter().fit(t.annotations[:, :2], groups=t.z > 0.5)
    assert isinstance(hw, nc.targets.ChannelFit)
    assert not isinstance(object(), nc.targets.ChannelFit)


def test_influence_is_the_engines_and_refusals_say_why(toy):
    t, ann, fit = toy
    mine, engines = fit.influence(), channel_influence(fit)
    for a, b in zip(mine, engines, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    # the parametrisation maps theta = 0 to the estimate
    with x64():
        p = mine.parametrisation(np.zeros(mine.basis.shape[1]), mine.x0, mine.basis)
    np.testing.assert_allclose(p["confusion"], fit.confusion, rtol=0, atol=1e-15)
    assert mine.parametrisation == type(mine.parametrisation)(mine.shape, mine.one_coin)
    hier = dataclasses.replace(fit, model="some_new_model")
    with pytest.raises(NotOffered, match="'some_new_model' fit is not implemented"):
        hier.influence()
    with pytest.raises(NotOffered, match="does not carry the annotations"):
        dataclasses.replace(fit, annotations=None).influence()
    # the metric turns the refusal into 'channels_fixed' with the fit's reason
    e = nc.ece(t.z, nc.targets.corrected(ann, hier), n_bins=10,
               interval=nc.intervals.Inversion(n_boot=200))
    assert e.status == "channels_fixed"
    assert e.details["channel_error"]["reason"] == (
        "the channel influence of a 'some_new_model' fit is not implemented")


def test_refit_equals_a_hand_refit_of_a_resample(toy):
    t, ann, fit = toy
    n = ann.n_items
    with x64():
        keys = jax.random.split(as_key(4), 2)
        W = np.stack([np.asarray(multinomial_counts(k, n)) for k in keys])
    res = fit.refit(W)
    assert res.confusion.shape == (2, 3, 2, 2) and res.group_prevalence.shape == (2, 1, 2)
    assert res.prevalence.shape == (2, 2) and res.converged.all() and res.statistic is None
    assert res.n_patterns == len({tuple(r) for r in t.annotations})
    for b in range(2):
        idx = np.repeat(np.arange(n), W[b].astype(int))
        hand = nc.DawidSkene(2).fit(nc.Annotations.from_wide(
            t.annotations[idx], classes=[0, 1]),
            method=nc.engines.EM(tol=1e-15, max_iter=50_000))
        # both stop where the objective changes by < 1e-15: the estimates agree to ~1e-7
        np.testing.assert_allclose(res.confusion[b], hand.confusion, atol=1e-6)
        np.testing.assert_allclose(res.prevalence[b], hand.prevalence, atol=1e-6)
    # equal weights give the fit back; a 1-D row gives one refit without the leading axis
    one = fit.refit(np.ones(n))
    assert one.confusion.shape == (3, 2, 2)
    np.testing.assert_allclose(one.confusion, fit.confusion, atol=1e-6)
    # weights drawn inside the loop from keys, with a statistic of each refit: the same
    drawn = fit.refit(keys, draw=_Draw(n), statistic=_count, args=(2.0,))
    np.testing.assert_array_equal(drawn.confusion, res.confusion)
    np.testing.assert_array_equal(drawn.statistic[0], 2.0 * n)
    np.testing.assert_array_equal(drawn.statistic[1], res.prevalence[:, 1])
    # a pickled fit keeps its ratings, so it still refits (its bootstrap closure is gone)
    back = pickle.loads(pickle.dumps(fit))
    np.testing.assert_array_equal(back.refit(W).confusion, res.confusion)


def test_refit_of_a_grouped_fit_weighs_the_groups_by_the_replicate():
    t, ann = _toy(800, seed=5)
    groups = equal_width_bins(t.z, 3)
    fit = nc.GroupedDawidSkene(2).fit(ann, groups=groups, method=nc.engines.EM(tol=1e-13))
    W = np.ones((1, ann.n_items))
    W[0, groups == 0] = 3.0
    res = fit.refit(W)
    sizes = np.bincount(groups, weights=W[0], minlength=3)
    np.testing.assert_allclose(res.prevalence[0],
                               sizes @ res.group_prevalence[0] / sizes.sum(), rtol=1e-12)


def test_refit_refusals_and_bad_weights(toy):
    t, ann, fit = toy
    mle = nc.DawidSkene(2).fit(ann, method="mle")
    with pytest.raises(NotOffered, match="Dawid-Skene-family channels by EM.*'mle'"):
        mle.refit(np.ones(ann.n_items))
    gold = nc.DawidSkene(2).fit(ann, gold={0: int(t.y[0])})
    gold = dataclasses.replace(gold, details={**gold.details, "gold_index": None})
    with pytest.raises(NotOffered, match="gold labels but does not carry them"):
        gold.refit(np.ones(ann.n_items))
    with pytest.raises(NotOffered, match="does not carry the annotations"):
        dataclasses.replace(fit, annotations=None).refit(np.ones(ann.n_items))
    n = ann.n_items
    for bad, msg in ((np.ones((2, n - 1)), "shape \\(B, 600\\)"), (np.ones((2, 2, n)), "shape"),
                     ("many", "shape"), (-np.ones(n), "non-negative"),
                     (np.full(n, np.nan), "finite"), (np.zeros((1, n)), "positive sum")):
        with pytest.raises(ValueError, match=f"weights.*{msg}|{msg}"):
            fit.refit(bad)
    with pytest.raises(ValueError, match="statistic must be callable"):
        fit.refit(np.ones(n), statistic=3)
    with pytest.raises(ValueError, match="with draw=, an array with one row per replicate"):
        fit.refit(3, draw=_Draw(n))
    with pytest.raises(ValueError, match="progress must be True or False"):
        fit.refit(np.ones(n), progress=1)


def test_posterior_draws_are_a_nuts_fits_and_checked_for_the_level(toy):
    t, ann, fit = toy
    with pytest.raises(NotOffered, match="posterior draws come from a NUTS fit.*'em'"):
        fit.posterior_draws()
    draws = {"prevalence": np.repeat(fit.group_prevalence[None], 30, axis=0),
             "confusion": np.repeat(fit.confusion[None], 30, axis=0)}
    nuts = dataclasses.replace(fit, method="nuts", draws=draws)
    assert nuts.posterior_draws(0.9)["confusion"].shape == (30, 3, 2, 2)
    with pytest.raises(ValueError, match="this NUTS fit has 30 posterior draw.*at least 40"):
        nuts.posterior_draws(0.95)
    with pytest.raises(ValueError, match="level"):
        nuts.posterior_draws(90)
    # the credible interval asks the fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        with pytest.raises(ValueError, match="NUTS fit has 30 posterior draw.*at least 40"):
            nc.ece(t.z, nc.targets.corrected(ann, nuts), n_bins=10, interval="credible",
                   level=0.95)
