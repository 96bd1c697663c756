"""fit.refit() of GLAD EM fits: the weighted EM (weights all one reproduce the fit; integer
weights equal a fit on duplicated items), and the refit NC-ECE (interval=Refit()) against
a GLAD-corrected target, whose spread of the averaged channels matches the sandwich of
fit.influence()."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import noisycal as nc
from noisycal.engines.em.glad import fit_glad
from noisycal.exceptions import NotOffered

sys.path.insert(0, str(Path(__file__).parent))
from test_glad import _sim  # noqa: E402

N, J, K = 300, 4, 3
#: A tolerance tight enough that two EM runs from different starts meet to ~1e-8.
TIGHT = nc.engines.EM(tol=1e-14, max_iter=5000)


@pytest.fixture(scope="module")
def world():
    """300 items, four annotators, K = 3 (the data of test_glad_influence.py), fitted at
    EM's default tolerance and at TIGHT."""
    ann, _, _, y = _sim(N, J, K, seed=2)
    fit = nc.annotators.GLAD().fit(ann)
    tight = nc.annotators.GLAD().fit(ann, method=TIGHT)
    assert fit.status == tight.status == "ok" and tight.converged
    return ann, y, fit, tight


def test_weights_all_one_reproduce_the_fit(world):
    """fit_glad with weights all one takes the unweighted fit's iterations to its
    estimates to 1e-7 (the weighted objective's sums differ from the unweighted ones by
    rounding only, which L-BFGS's steps carry to 1.5e-8 here, 3e-12 at 200 items);
    fit.refit(ones), started from the fitted estimates,
    stays at the fit: one EM iteration, within 1e-7 of the TIGHT fit's averaged channels
    and prevalence (measured 7e-9), within 1e-4 of the default-tolerance fit's."""
    ann, _, fit, tight = world
    arr = ann.engine_arrays()
    kw = {"n_items": N, "n_annotators": J, "n_classes": K, "ability_prior": (1.0, 1.0),
          "easiness_prior": (1.0, 1.0), "prevalence": None, "max_iter": TIGHT.max_iter,
          "tol": TIGHT.tol}
    ones = fit_glad(arr.item, arr.annotator, arr.label, weights=np.ones(N), **kw)
    assert ones.n_iter == tight.n_iter and ones.converged          # tight: the same EM
    np.testing.assert_allclose(ones.ability, tight.ability, rtol=0, atol=1e-7)
    np.testing.assert_allclose(ones.log_easiness, tight.details["log_easiness"], rtol=0,
                               atol=1e-7)
    np.testing.assert_allclose(ones.prevalence, tight.prevalence, rtol=0, atol=1e-7)
    assert ones.loglik == pytest.approx(tight.loglik, abs=1e-6)   # 300 items: 6e-8
    same = tight.refit(np.ones(N))
    assert same.confusion.shape == (J, K, K) and same.group_prevalence.shape == (1, K)
    assert bool(same.converged) and int(same.n_iter) == 1 and same.n_patterns == N
    assert same.statistic is None
    np.testing.assert_allclose(same.confusion, tight.confusion, rtol=0, atol=1e-7)
    np.testing.assert_allclose(same.prevalence, tight.prevalence, rtol=0, atol=1e-7)
    loose = fit.refit(np.ones((2, N)))
    assert loose.confusion.shape == (2, J, K, K)
    np.testing.assert_allclose(loose.confusion[1], fit.confusion, rtol=0, atol=1e-4)


def test_integer_weights_equal_a_fit_on_duplicated_items(world):
    """Weights 0, 1 or 2 per item (as many 2 as 0): the refit equals a fresh fit (from
    crowd-kit's start) on the data with the weight-2 items duplicated under new ids and
    the weight-0 items dropped, to 1e-6 (measured 2e-8 at 200 items). A weight scales
    an item's ratings and its easiness prior together, so the duplicated item's two
    easiness parameters, each maximising the same criterion, equal the weighted item's
    one; its averaged channel weighs each rating by its item's weight."""
    ann, _, _, tight = world
    arr = ann.engine_arrays()
    w = np.ones(N, np.int64)
    pick = np.random.default_rng(0).permutation(N)
    w[pick[:60]], w[pick[60:120]] = 2, 0
    res = tight.refit(w[None].astype(float))
    assert res.confusion.shape == (1, J, K, K) and res.converged.all()
    keep = np.repeat(np.arange(arr.item.size), w[arr.item])        # each rating w times
    copy = np.concatenate([np.arange(c) for c in w[arr.item]])
    ids = np.array([f"{i}-{c}" for i, c in zip(arr.item[keep], copy, strict=True)])
    dup_ann = nc.Annotations.from_arrays(ids, arr.annotator[keep], arr.label[keep],
                                         classes=np.arange(K))
    dup = nc.annotators.GLAD().fit(dup_ann, method=TIGHT)
    assert dup_ann.n_items == N and dup.converged
    assert np.abs(res.confusion[0] - tight.confusion).max() > 0.005   # it moved
    np.testing.assert_allclose(res.confusion[0], dup.confusion, rtol=0, atol=1e-6)
    np.testing.assert_allclose(res.prevalence[0], dup.prevalence, rtol=0, atol=1e-6)
    np.testing.assert_allclose(res.group_prevalence[0], dup.group_prevalence, atol=1e-6)


def test_refit_nc_ece_has_an_interval_and_the_sandwich_spread(world):
    """nc.ece with interval=Refit(n_boot=50, method='percentile') (the default
    'inversion' needs at least 100 replicates, twice the time) of a GLAD-corrected
    target: an interval around the estimate, statuses ('target_averaged_channels',
    'plugin_bias'), no failed or unconverged refit. The variance of the refitted
    averaged channels' entries over the 50 replicates, summed, is 0.815 of the
    sandwich's (fit.influence().covariance mapped to the entries). Over seeds 0-5 of the
    simulator, 400 replicates gave 0.97-1.08 (per annotator 0.84-1.13), 50 replicates
    0.74-1.11. The entries are four accuracies times fixed vectors, so the sum is about
    four nearly independent variances, each with relative standard error 0.2 from 50
    replicates (about 0.12 for their sum with unequal shares): [0.6, 1.5] allows about
    three standard errors below 1 and four above."""
    ann, y, fit, _ = world
    P = np.full((N, K), 0.1) + 0.7 * np.eye(K)[y]
    target = nc.targets.corrected(ann, fit)
    e = nc.ece(P, target, interval=nc.intervals.Refit(n_boot=50, method="percentile"))
    assert e.statuses == ("target_averaged_channels", "plugin_bias")
    assert 0 <= e.low <= e.value <= e.high < 1 and e.high > e.low
    assert e.details["n_failed"] == 0 and e.details["n_not_converged"] == 0
    infl = fit.influence()
    # the averaged channels are one-coin: accuracy j moves annotator j's K diagonal
    # entries by 1 and its K (K - 1) others by -1 / (K - 1)
    assert infl.one_coin is True
    acc_var = np.diag(infl.basis[K:] @ infl.covariance @ infl.basis[K:].T)
    sandwich = acc_var.sum() * (K + K / (K - 1))
    refit = np.sum(e.details["confusion_sd"] ** 2)
    assert 0.6 < refit / sandwich < 1.5, refit / sandwich


def test_refit_is_refused_without_its_data_and_checks_weights(world):
    """A fit without its annotations raises NotOffered saying why; weights of the wrong
    shape, negative or with a zero row are a ValueError naming weights; a statistic that
    is not callable one naming statistic."""
    fit = world[2]
    with pytest.raises(NotOffered, match="does not carry the annotations"):
        dataclasses.replace(fit, annotations=None).refit(np.ones(N))
    for bad in (np.ones(N - 1), -np.ones(N), np.zeros((2, N))):
        with pytest.raises(ValueError, match="weights"):
            fit.refit(bad)
    with pytest.raises(ValueError, match="statistic must be callable"):
        fit.refit(np.ones(N), statistic=1)


def test_refit_keeps_gold_labels_and_a_fixed_prevalence(world):
    """A fit with 20 gold items: refit(ones) stays within 1e-7 of it (measured 1e-8),
    where the gold moves the averaged channels by 1.8e-4 (a refit without the gold would
    drift that far); a fit with the prevalence held uniform keeps it in every refit."""
    ann, y, _, tight = world
    gold = {ann.items[i]: ann.classes[y[i]] for i in range(20)}
    fit = nc.annotators.GLAD().fit(ann, gold=gold, method=TIGHT)
    assert np.abs(fit.confusion - tight.confusion).max() > 1e-4
    same = fit.refit(np.ones(N))
    np.testing.assert_allclose(same.confusion, fit.confusion, rtol=0, atol=1e-7)
    held = nc.annotators.GLAD(prevalence=np.ones(K) / K).fit(ann)
    w = np.random.default_rng(1).multinomial(N, np.full(N, 1.0 / N), size=2).astype(float)
    res = held.refit(w)
    np.testing.assert_array_equal(res.prevalence, np.full((2, K), 1.0 / K))
    assert np.abs(res.confusion - held.confusion).max() > 0.005 and res.converged.all()
