"""fit.refit() of ClassifierInformedDawidSkene EM fits: the weighted EM (weights all one
reproduce the fit; integer weights equal a fit on duplicated items), and the refit
NC-ECE (interval=Refit()) through it, whose spread of the channels matches the sandwich
of fit.influence()."""

import dataclasses

import numpy as np
import pytest

import noisycal as nc
from noisycal.annotators import ClassifierInformedDawidSkene
from noisycal.exceptions import NotOffered

K = 3
BIAS = np.array([0.3, -0.2, -0.1])
STRONG = np.array([[[0.75, 0.15, 0.10], [0.10, 0.70, 0.20], [0.10, 0.15, 0.75]],
                   [[0.60, 0.30, 0.10], [0.20, 0.60, 0.20], [0.05, 0.15, 0.80]],
                   [[0.80, 0.10, 0.10], [0.10, 0.80, 0.10], [0.15, 0.10, 0.75]]])
#: One size for every data set of the file: the refit loop compiles once per size.
N = 300
#: A tolerance tight enough that two EM runs from different starts meet to ~1e-7 (at
#: 1e-12 they are 1.3e-6 apart).
TIGHT = nc.engines.EM(tol=1e-14, max_iter=5000)


def _world(seed, n=N, scale=2.0):
    """Scores z, true classes from softmax(scale z + BIAS) (returned: the calibrated
    probabilities p), three annotators with the STRONG channels (the simulator of
    test_classifier_informed_influence.py)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K))
    e = np.exp(scale * z + BIAS)
    p = e / e.sum(1, keepdims=True)
    y = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    u = rng.random((n, 3, 1))
    labels = (STRONG[np.arange(3)[None, :], y[:, None]].cumsum(-1) > u).argmax(-1)
    return z, p, labels


def _fit(labels, z, items=None):
    ann = nc.Annotations.from_wide(labels, classes=[0, 1, 2], items=items)
    return ann, ClassifierInformedDawidSkene().fit(ann, logits=z, items=items, method=TIGHT)


@pytest.fixture(scope="module")
def world():
    """One data set and its EM fit for the whole file (EM and the refit loop compile once
    per size)."""
    z, p, labels = _world(1)
    ann, fit = _fit(labels, z)
    assert fit.status == "ok" and fit.converged
    return z, p, labels, ann, fit


def test_weights_all_one_reproduce_the_fit(world):
    """The compiled weighted EM with weights all one, from the start the fit kept (its
    best of the soft vote and the classifier's probabilities, scale 1, bias 0), takes the
    fit's iterations and ends at its channels, scale and bias to 1e-8 (not bit for bit:
    once the prior's Newton steps have converged they move it by ~1e-12, accepted or not
    by rounding that differs between the two compiled programs, and EM carries that to
    ~1e-9). fit.refit(ones), started from the fitted posteriors, stays within 1e-6 of the
    fit (EM's tolerance 1e-14)."""
    from noisycal._util.jax import x64
    from noisycal.annotators.dawid_skene import _ds_data
    from noisycal.engines.em.classifier_informed import ci_weighted_refits

    _, _, _, ann, fit = world
    start = [ann.soft_labels(), fit.score_probs][fit.details["best_start"]]
    with x64():
        out = ci_weighted_refits(np.ones((1, N)), start, 1.0, np.zeros(K),
                                 _ds_data(ann, None, 1), np.log(fit.score_probs), None,
                                 max_iter=TIGHT.max_iter, tol=TIGHT.tol)
    _, converged, conf, n_iter, prev, _, scale, bias = (np.asarray(x) for x in out)
    assert converged[0] and n_iter[0] == fit.n_iter
    np.testing.assert_allclose(conf[0], fit.confusion, rtol=0, atol=1e-8)
    np.testing.assert_allclose(scale[0], fit.scale, rtol=0, atol=1e-8)
    np.testing.assert_allclose(bias[0], fit.bias, rtol=0, atol=1e-8)
    np.testing.assert_allclose(prev[0], fit.prevalence, rtol=0, atol=1e-8)
    same = fit.refit(np.ones(N))
    assert same.confusion.shape == (3, K, K) and same.group_prevalence.shape == (1, K)
    assert bool(same.converged) and same.n_patterns == N and same.statistic is None
    np.testing.assert_allclose(same.confusion, fit.confusion, rtol=0, atol=1e-6)
    np.testing.assert_allclose(same.prevalence, fit.prevalence, rtol=0, atol=1e-6)


def test_integer_weights_equal_a_fit_on_duplicated_items(world):
    """Weights 0, 1 or 2 per item (as many 2 as 0, so the data keep their size): the
    refit equals a fresh fit (both starts, scale 1, bias 0) on the data with the weight-2
    items duplicated (new ids, their score rows duplicated too) and the weight-0 items
    dropped, to 1e-6 (both EM runs stop at the tolerance 1e-14, from different starts);
    its prevalence is the mean prior over the duplicated items."""
    z, _, labels, _, fit = world
    w = np.ones(N, np.int64)
    pick = np.random.default_rng(0).permutation(N)
    w[pick[:60]], w[pick[60:120]] = 2, 0
    res = fit.refit(w[None].astype(float))
    assert res.confusion.shape == (1, 3, K, K) and res.converged.all()
    idx = np.repeat(np.arange(N), w)
    copy = np.concatenate([np.arange(c) for c in w])
    ids = [f"{i}-{c}" for i, c in zip(idx, copy, strict=True)]
    _, dup = _fit(labels[idx], z[idx], items=ids)
    assert np.abs(res.confusion[0] - fit.confusion).max() > 0.01   # it moved
    np.testing.assert_allclose(res.confusion[0], dup.confusion, rtol=0, atol=1e-6)
    np.testing.assert_allclose(res.prevalence[0], dup.prevalence, rtol=0, atol=1e-6)
    np.testing.assert_allclose(res.group_prevalence[0], dup.group_prevalence, atol=1e-6)


def test_refit_nc_ece_has_an_interval_and_the_sandwich_spread(world):
    """nc.ece with interval=Refit(n_boot=100) of a corrected target from an EM fit (the
    default tolerance: at 1e-14 some refits run to the iteration limit): with
    held-out calibrated probabilities the status is 'ok' with a finite interval around
    the estimate; with the fit's own scores 'circular_target'. The variance of the
    refitted confusion entries over the 100 replicates, summed, is 1.05 of the
    sandwich's (fit.influence().covariance mapped to the entries; 0.95-1.14 over seeds
    0-3 of the simulator with other resamples). One variance from 100 replicates has a
    relative standard error of 0.14, the sum of 27 less (the entries of different
    annotators are nearly independent), so [0.75, 1.3] allows about two of the larger
    either way."""
    z, p, _, ann, _ = world
    fit = ClassifierInformedDawidSkene().fit(ann, logits=z)   # EM's default tolerance
    target = nc.targets.corrected(ann, fit)
    e = nc.ece(p, target, interval=nc.intervals.Refit(n_boot=100))
    assert e.statuses == ("ok",)
    assert 0 <= e.low <= e.value <= e.high < 1 and e.high > e.low
    assert e.details["n_failed"] == 0 and e.details["n_not_converged"] == 0
    own = nc.ece(logits=z, target=target, interval=nc.intervals.Refit(n_boot=100))
    assert own.status == "circular_target"
    infl = fit.influence()
    on_conf = infl.basis[K:]                       # the confusion entries' rows of x0
    sandwich = np.trace(on_conf @ infl.covariance @ on_conf.T)
    refit = np.sum(e.details["confusion_sd"] ** 2)
    assert 0.75 < refit / sandwich < 1.3, refit / sandwich


def test_refit_is_refused_without_an_em_fit_or_its_data_and_checks_weights(world):
    """A NUTS fit (here a copy of an EM fit marked so) and a fit without its annotations
    raise NotOffered saying why; weights of the wrong shape, negative or with a zero
    row are a ValueError naming weights."""
    fit = world[-1]
    with pytest.raises(NotOffered, match="'classifier_informed' by 'nuts'"):
        dataclasses.replace(fit, method="nuts").refit(np.ones(N))
    with pytest.raises(NotOffered, match="does not carry the annotations"):
        dataclasses.replace(fit, annotations=None).refit(np.ones(N))
    for bad in (np.ones(N - 1), -np.ones(N), np.zeros((2, N))):
        with pytest.raises(ValueError, match="weights"):
            fit.refit(bad)
    with pytest.raises(ValueError, match="statistic must be callable"):
        fit.refit(np.ones(N), statistic=1)
