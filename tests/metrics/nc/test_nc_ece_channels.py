"""NC-ECE with fitted channels: the channel error in the inverted interval
(noisycal.engines.influence, noisycal.metrics.nc.delta)."""

import dataclasses
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.engines.identification import dawid_skene_information
from noisycal.engines.influence import (
    channel_influence,
    dawid_skene_influence,
    hui_walter_influence,
)
from noisycal.engines.moments import moment_jacobian, sample_moments
from noisycal.metrics.nc.delta import channel_term
from noisycal.metrics.nc.intervals import nc_ece_items


def _toy(n, seed, truth="shifted", a=None, b=None):
    t = nc.simulate.gaussian_toy(n, truth=truth, seed=seed, a=a, b=b)
    return t, nc.Annotations.from_wide(t.annotations, classes=[0, 1])


def _items(z, n_bins=10):
    return nc_ece_items(np.column_stack([1 - z, z]), "positive_class", n_bins)


def _bin_means(z, U, n_bins=10):
    conf, bins, cols = _items(z, n_bins)
    t = np.asarray(U)[:, 1]
    return np.bincount(bins[0], weights=t - conf[0], minlength=n_bins) / z.size


def test_information_is_the_identification_checks():
    """The observed information of the influence equals the identification module's (the
    same free parametrisation), and the scores sum to 0 at the maximum."""
    from noisycal.engines.patterns import pattern_data

    t, ann = _toy(3000, seed=1)
    fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(tol=1e-13))
    infl = dawid_skene_influence(fit)
    arr = ann.engine_arrays()
    pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                       n_annotators=3, n_classes=2, group=None, n_groups=1)
    labels = {"prevalence": [f"p{k}" for k in range(2)],
              "confusion": [f"c{i}" for i in range(12)], "accuracy": []}
    info, _, names, _ = dawid_skene_information(fit.prevalence[None], fit.confusion,
                                                pd_.data, pd_.counts, None, one_coin=False,
                                                labels=labels)
    assert len(names) == infl.information.shape[0] == 7
    np.testing.assert_allclose(infl.information, info, rtol=1e-9, atol=1e-9)
    total = (infl.influence * infl.counts[:, None]).sum(axis=0)
    assert np.max(np.abs(total)) < 1e-4 * np.max(np.sqrt(np.diag(infl.covariance)))


def test_jacobian_equals_finite_differences_of_the_corrected_target():
    """D, the derivative of the bin means in the free channel coordinates, against central
    differences of the public corrected target with the moved channels given."""
    n = 2000
    t, ann = _toy(n, seed=2)
    fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(tol=1e-12))
    U = nc.targets.corrected(ann, fit)
    alpha = np.asarray(U.details["weights"])
    infl = dawid_skene_influence(fit)
    term = channel_term(U, *_items(t.z), 10)
    L, J, K = infl.shape
    h = 1e-6
    for c in range(infl.basis.shape[1]):
        moved = []
        for s in (h, -h):
            x = infl.x0 + infl.basis[:, c] * s
            conf = x[L * K:].reshape(J, K, K)
            moved.append(_bin_means(t.z, nc.targets.corrected(ann, confusion=conf,
                                                              weights=alpha)))
        fd = (moved[0] - moved[1]) / (2 * h)
        np.testing.assert_allclose(term.jacobian[:, c], fd, rtol=1e-5, atol=1e-8)


def _weak_channels():
    return np.array([0.30, 0.35, 0.30]), np.array([0.70, 0.70, 0.65])


def _replicate_means(n, reps, a=None, b=None):
    """Bin means with EM channels over seeded replications, and the covariances that the
    sample alone and sample + channel error (delta method) predict."""
    means, fixed, delta = [], [], []
    for seed in range(reps):
        t, ann = _toy(n, seed=seed, truth="calibrated", a=a, b=b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
            fit = nc.DawidSkene(2).fit(ann, seed=seed)
        U = nc.targets.corrected(ann, fit)
        conf, bins, cols = _items(t.z)
        x = np.zeros((n, 10))
        x[np.arange(n), bins[0]] = np.asarray(U)[:, 1] - conf[0]
        dev = x - x.mean(0)
        cov = dev.T @ dev / (n * (n - 1))
        means.append(x.mean(0))
        fixed.append(cov)
        delta.append(cov + channel_term(U, conf, bins, cols, 10).added)
    return np.array(means), np.mean(fixed, axis=0), np.mean(delta, axis=0)


@pytest.mark.slow
def test_delta_covariance_matches_the_spread_over_replications():
    """Weak annotators (gaps 0.35-0.4): over 80 replications the spread of the sum of the
    bin means (the direction of a shift of every bin, the channel error's main effect)
    is about 3x what the sample covariance alone predicts; the delta method predicts it
    (a variance estimated from 80 runs has a relative s.e. of 16%)."""
    a, b = _weak_channels()
    means, fixed, delta = _replicate_means(1500, 80, a=a, b=b)
    w = np.ones(10)
    emp = w @ np.cov(means.T) @ w
    assert w @ fixed @ w < 0.45 * emp
    assert 0.65 * emp < w @ delta @ w < 1.5 * emp


@pytest.mark.slow
def test_default_interval_covers_with_weak_fitted_channels():
    """Calibrated scores (population NC-ECE 0), three weak annotators, EM channels: the
    inverted interval with the channels held fixed excludes 0 most of the time (the
    corrected target's error from the fitted channels looks like miscalibration); with
    the channel error carried it covers near the nominal 90% (40 seeded runs: binomial
    s.e. 0.05)."""
    a, b = _weak_channels()
    cover = {"default": 0, "fixed": 0}
    for seed in range(40):
        t, ann = _toy(1500, seed=seed, truth="calibrated", a=a, b=b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
            fit = nc.DawidSkene(2).fit(ann, seed=seed)
        U = nc.targets.corrected(ann, fit)
        e = nc.ece(t.z, U, n_bins=10, interval=nc.intervals.Inversion(n_boot=500), seed=seed)
        assert e.details["channel_error"]["method"] == "delta (sandwich)"
        f = nc.ece(t.z, nc.targets.corrected(ann, confusion=fit.confusion), n_bins=10,
                   interval=nc.intervals.Inversion(n_boot=500), seed=seed)
        cover["default"] += e.low <= 0.0 <= e.high
        cover["fixed"] += f.low <= 0.0 <= f.high
    assert cover["default"] >= 32
    assert cover["fixed"] <= 24


def test_hui_walter_influence_is_the_gmm_sandwich():
    """Sum over items of phi phi^T equals the GMM sandwich
    (G'WG)^-1 G'W S W G (G'WG)^-1 built from the group moment covariances."""
    t, ann = _toy(4000, seed=4)
    two = nc.Annotations.from_wide(t.annotations[:, :2], classes=[0, 1])
    g = nc.annotators.equal_count_groups(t.z, 3)
    fit = nc.HuiWalter().fit(two, groups=g, method=nc.engines.GMM(weight="efficient"))
    infl = hui_walter_influence(fit)
    theta = np.asarray(fit.details["theta"])
    _, cov, _ = sample_moments(t.annotations[:, :2].astype(float),
                               np.asarray(fit.details["group_index"]), 3)
    from scipy.linalg import block_diag

    G = moment_jacobian(theta, 3)
    W = fit.details["weight_matrix"]
    bread = np.linalg.inv(G.T @ W @ G)
    V = bread @ G.T @ W @ block_diag(*cov) @ W @ G @ bread
    np.testing.assert_allclose(infl.covariance, V, rtol=1e-8, atol=1e-14)


def test_items_matched_by_id_and_new_items_get_no_cross_term():
    """A target on a subset of the fitted items pairs each row with its own influence; a
    target on other items (ids the fit never saw) has no cross term, only the channel
    variance."""
    t, ann = _toy(3000, seed=6)
    fit = nc.DawidSkene(2).fit(ann, seed=0)
    sub = ann.subset(np.arange(1000, 2500))
    U = nc.targets.corrected(sub, fit)
    term = channel_term(U, *_items(t.z[1000:2500]), 10)
    assert term.n_common == 1500 and term.matched_by == "item id"
    t2, ann2 = _toy(1500, seed=7)
    ann2 = nc.Annotations.from_wide(t2.annotations, classes=[0, 1],
                                    items=np.arange(10_000, 11_500))
    U2 = nc.targets.corrected(ann2, fit)
    term2 = channel_term(U2, *_items(t2.z), 10)
    assert term2.n_common == 0
    np.testing.assert_array_equal(term2.cross, 0.0)
    np.testing.assert_allclose(term2.added, term2.channel)


def test_statuses_when_the_channel_error_is_unavailable_or_unreliable():
    t, ann = _toy(1500, seed=8)
    fit = nc.DawidSkene(2).fit(ann, seed=0)
    bare = dataclasses.replace(fit, annotations=None)
    e = nc.ece(t.z, nc.targets.corrected(ann, bare), n_bins=10)
    assert e.status == "channels_fixed"
    assert "could not be propagated" in e.message
    # weak annotators on 400 items (population NC-ECE 0): fits at a boundary or whose
    # channel error reaches a singular channel are flagged; every ok interval covers 0
    a, b = _weak_channels()
    flagged = 0
    for seed in range(12):
        t, ann = _toy(400, seed=seed, truth="calibrated", a=a, b=b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
            fit = nc.DawidSkene(2).fit(ann, seed=seed)
        try:
            U = nc.targets.corrected(ann, fit)
        except ValueError:
            continue
        e = nc.ece(t.z, U, n_bins=10, interval=nc.intervals.Inversion(n_boot=200))
        if e.status == "weak_channels":
            flagged += 1
            ce = e.details["channel_error"]
            assert ce["curvature"] == np.inf or ce["boundary_effect"] > 0.1 * ce["boundary_se"]
        elif e.status == "ok":
            assert e.low == 0.0
    assert flagged >= 2


def test_refit_inversion_agrees_with_the_delta_method():
    """Both estimate the same covariance of the bin means: the intervals agree closely."""
    t, ann = _toy(4000, seed=9)
    fit = nc.DawidSkene(2).fit(ann, seed=0)
    U = nc.targets.corrected(ann, fit)
    d = nc.ece(t.z, U, n_bins=10, seed=1)
    r = nc.ece(t.z, U, n_bins=10, interval=nc.intervals.Refit(n_boot=400), seed=1)
    assert r.kind == "inversion" and r.method == "refit replicates"
    assert r.details["refit_channels"] and r.estimator == "median-unbiased"
    assert r.low == pytest.approx(d.low, abs=0.004)
    assert r.high == pytest.approx(d.high, abs=0.004)


def test_channel_influence_dispatches_by_model():
    t, ann = _toy(2000, seed=10)
    two = nc.Annotations.from_wide(t.annotations[:, :2], classes=[0, 1])
    hw = nc.HuiWalter().fit(two, groups=nc.annotators.equal_count_groups(t.z, 2))
    assert channel_influence(hw).names[:2] == ("a[0]", "b[0]")
    ds = nc.DawidSkene(2).fit(ann, seed=0)
    assert channel_influence(ds).shape == (1, 3, 2)


@pytest.mark.parametrize("kind", ["top_label", "classwise"])
def test_linear_form_equals_the_corrected_targets_bin_means(kind):
    """The bin means' linear form in the inverse channels gives, at any channels, the bin
    means of the corrected labels recomputed item by item (missing ratings, a
    non-informative annotator, unequal weights), to rounding."""
    from noisycal.correction import corrected_from_channels
    from noisycal.metrics.nc.delta import linear_form

    rng = np.random.default_rng(11)
    n, J, K, B = 700, 4, 4, 8
    label = rng.integers(0, K, (n, J))
    observed = rng.random((n, J)) < 0.7
    observed[:, 1] = True                                # every item has an informative rater
    ratings = np.where(observed[:, :, None], np.eye(K)[label], 0.0)
    mask = np.array([True, True, False, True])
    alpha = np.array([0.5, 1.0, 2.0, 1.5])
    probs = rng.dirichlet(np.ones(K), n)
    conf, bins, cols = nc_ece_items(probs, kind, B)
    G = conf.shape[0]
    cells = np.arange(G)[:, None] * B + bins
    form = linear_form(ratings, observed, mask, alpha, conf, cols, cells, G * B)
    assert form.index.size >= 256 and form.index.size & (form.index.size - 1) == 0
    for _ in range(3):
        C = rng.dirichlet(np.ones(K), (J, K)) + 2 * np.eye(K)
        C /= C.sum(axis=2, keepdims=True)
        T = corrected_from_channels(ratings, observed, mask, alpha, C)
        t = np.take_along_axis(T, cols.T, axis=1).T
        want = np.bincount(cells.ravel(), weights=(t - conf).ravel(),
                           minlength=G * B) / n
        inv = np.where(mask[:, None, None], np.linalg.inv(C), 0.0).ravel()
        got = np.bincount(form.cell, weights=form.weight * inv[form.index],
                          minlength=G * B) - form.offset
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_cross_factor_equals_the_item_by_item_sum():
    """C, the covariance of the items' own terms with the channel error, from the sparse
    (cell x pattern) sum equals the item-by-item sum of (t - conf) phi_i over the bins, with
    the target on a subset of the fitted items plus items the fit never saw."""
    t, ann = _toy(3000, seed=8)
    fit = nc.DawidSkene(2).fit(ann, seed=0)
    sub = ann.subset(np.arange(1000, 2500))
    U = nc.targets.corrected(sub, fit)
    conf, bins, cols = _items(t.z[1000:2500])
    term = channel_term(U, conf, bins, cols, 10)
    infl = dawid_skene_influence(fit)
    n = 1500
    phi = infl.influence[infl.pattern[np.arange(1000, 2500)]]
    T = np.asarray(U.values)
    d = np.take_along_axis(T, cols.T, axis=1).T - conf
    xs = np.zeros((10, phi.shape[1]))
    np.add.at(xs, bins[0], d[0][:, None] * phi)
    mhat = np.bincount(bins[0], weights=d[0], minlength=10) / n
    want = (xs - np.outer(mhat, phi.sum(axis=0))) / n
    np.testing.assert_allclose(term.cross_factor, want, rtol=1e-10, atol=1e-15)
