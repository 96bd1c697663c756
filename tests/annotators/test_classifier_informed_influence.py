"""The channel influence of ClassifierInformedDawidSkene: the sandwich of an EM fit (scores
and information checked against finite differences, covariance against the spread over
replications), held boundary entries, and the NC-ECE's default interval that now carries
the channel error (the NUTS fit's posterior influence: test_classifier_informed_nuts.py)."""

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
WEAK = np.full((3, K, K), 0.25) + np.eye(K) * 0.25    # accuracy 0.5, chance 1/3
#: One size for every data set of the file: EM and the influence compile once per size.
N = 600


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _world(seed, conf=STRONG, n=N, scale=2.0):
    """The simulator of test_classifier_informed.py with the channels as an argument:
    scores z, true classes from softmax(scale z + BIAS) (returned: the calibrated
    probabilities), three annotators."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K))
    p = _softmax(scale * z + BIAS)
    y = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    u = rng.random((n, 3, 1))
    labels = (conf[np.arange(3)[None, :], y[:, None]].cumsum(-1) > u).argmax(-1)
    return z, p, labels


def _fit(labels, z):
    ann = nc.Annotations.from_wide(labels, classes=[0, 1, 2])
    return ann, ClassifierInformedDawidSkene().fit(ann, logits=z)


def _item_loglik_np(conf, scale, bias, labels, z):
    """Each item's marginal log-likelihood, in NumPy (every item rated by all three)."""
    eta = scale * z + bias
    lp = eta - eta.max(1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    ll = lp + sum(np.log(conf[j][:, labels[:, j]]).T for j in range(labels.shape[1]))
    m = ll.max(1)
    return m + np.log(np.exp(ll - m[:, None]).sum(1))


def test_scores_and_information_match_finite_differences():
    """At the EM estimate (600 items), the per-item scores and the observed information
    of ci_score_information equal central differences of the marginal log-likelihood
    written in NumPy, in theta = (free confusion entries against each row's largest,
    scale, bias[1:]); the summed score is ~0 at the estimate."""
    from noisycal._util.jax import x64
    from noisycal.engines.em.classifier_informed import ci_score_information
    from noisycal.engines.influence import full_coordinates
    from noisycal.models.dawid_skene import make_data

    z, _, labels = _world(1)
    ann, fit = _fit(labels, z)
    x0, basis, cols, _ = full_coordinates(fit.group_prevalence, fit.confusion)
    Bc = basis[K:, cols >= K]
    pc = Bc.shape[1]
    Z = np.log(fit.score_probs)
    arr = ann.engine_arrays()
    with x64():
        data = make_data(arr.item, arr.annotator, arr.label, n_items=N, n_annotators=3,
                         n_classes=K, slots=False)
        s, info, _ = ci_score_information(fit.confusion, Bc, fit.scale, fit.bias, data, Z)

    def f(theta):
        conf = fit.confusion + (Bc @ theta[:pc]).reshape(3, K, K)
        bias = fit.bias + np.concatenate([[0.0], theta[pc + 1:]])
        return _item_loglik_np(conf, fit.scale + theta[pc], bias, labels, Z)

    p, h = pc + K, 1e-5
    E = np.eye(p) * h
    fd = np.stack([(f(E[a]) - f(-E[a])) / (2 * h) for a in range(p)], axis=1)
    np.testing.assert_allclose(s, fd, rtol=1e-6, atol=1e-6)
    h2 = 1e-4
    E2 = np.eye(p) * h2
    H = np.array([[(f(E2[a] + E2[b]) - f(E2[a] - E2[b]) - f(-E2[a] + E2[b])
                    + f(-E2[a] - E2[b])).sum() / (4 * h2 ** 2) for b in range(p)]
                  for a in range(p)])
    np.testing.assert_allclose(info, -H, rtol=1e-4, atol=1e-3 * np.abs(H).max() * 1e-3)
    # EM stops at a tolerance: the Newton step left is under 2% of a standard error
    step = np.linalg.solve(info, s.sum(0))
    assert np.abs(step / np.sqrt(np.diag(np.linalg.inv(info)))).max() < 0.02


def test_sandwich_matches_the_spread_of_em_estimates_over_replications():
    """30 simulated data sets of 600 items: the variance of the 18 free confusion entries
    over the replications, summed, is 0.96 of the mean sandwich variance (0.97 over 40
    runs); a bootstrap over the 30 runs gives this ratio a standard error of 0.05, so
    [0.8, 1.25] is about four of them either way. The influence offers one pattern per
    item. The prevalence row (the mean prior) matches too."""
    est, var, est_p, var_p = [], [], [], []
    for seed in range(30):
        z, _, labels = _world(100 + seed)
        _, fit = _fit(labels, z)
        infl = fit.influence()
        c = np.array([nm.startswith("confusion") for nm in infl.names])
        assert c.sum() == 18 and infl.boundary_moves.shape == (0, infl.x0.size)
        est.append(infl.x0[np.flatnonzero((infl.basis[:, c] == 1).any(axis=1))])
        var.append(np.diag(infl.covariance)[c])
        est_p.append(infl.x0[np.flatnonzero((infl.basis[:, ~c] == 1).any(axis=1))])
        var_p.append(np.diag(infl.covariance)[~c])
    infl = fit.influence()
    np.testing.assert_array_equal(infl.pattern, np.arange(N))
    np.testing.assert_array_equal(infl.counts, np.ones(N))
    ratio = np.var(est, axis=0, ddof=1).sum() / np.mean(var, axis=0).sum()
    assert 0.8 < ratio < 1.25, ratio
    # the mean prior (the prevalence row): 1.23 (bootstrap s.e. over the runs 0.19); its
    # influence without the items' own term (pi_i - mean pi) / n gave 1.69
    ratio_p = np.var(est_p, axis=0, ddof=1).sum() / np.mean(var_p, axis=0).sum()
    assert 0.7 < ratio_p < 1.5, ratio_p


def test_entries_fitted_at_zero_are_held_with_rule_of_three_moves():
    """Channels with two zero entries (annotator 2 never says 2 of a true 0, annotator 0
    never says 0 of a true 2): EM fits them at ~1e-13 and 4e-17; both are held fixed (no
    coordinate, no NaN, a positive semi-definite covariance), each with a boundary move
    of 3 / N (N the expected items of its row) taken from the row's largest entry."""
    conf = STRONG.copy()
    conf[2, 0], conf[0, 2] = [0.9, 0.1, 0.0], [0.0, 0.2, 0.8]
    z, _, labels = _world(2, conf)
    ann, fit = _fit(labels, z)
    assert fit.status == "ok"
    assert fit.confusion[2, 0, 2] < 1e-15 and fit.confusion[0, 2, 0] < 1e-12
    infl = fit.influence()
    assert "confusion[2, 0, 2]" not in infl.names and "confusion[0, 2, 0]" not in infl.names
    assert len(infl.names) == 2 + 18 - 2
    assert np.all(np.isfinite(infl.covariance))
    assert np.linalg.eigvalsh(infl.covariance).min() > -1e-15
    moves = infl.boundary_moves
    assert moves.shape == (2, infl.x0.size)
    N = fit.item_posterior.sum(0)             # every annotator rated every item
    held = K + np.array([0 * K * K + 2 * K + 0, 2 * K * K + 0 * K + 2])
    np.testing.assert_allclose(moves[:, held], np.diag(3.0 / N[[2, 0]]), rtol=1e-12)
    np.testing.assert_allclose(moves.sum(1), 0.0, atol=1e-15)
    assert moves[0, K + 2 * K + 2] == -moves[0, held[0]]   # from confusion[0, 2, 2]


def test_default_nc_ece_from_an_em_fit_carries_the_channel_error():
    """Weak annotators (accuracy 0.5 of three classes), 600 items, a calibrated
    classifier (not the one the fit used): the default interval is 'ok' with the channel
    error by the delta method, and 1.51 times as wide as the same target's with the
    channels held fixed (the fit without its annotations: 'channels_fixed'). Not so in
    every data set: the channel error's covariance with the items' own terms is
    negative and can offset its variance (of seeds 300-305, four 'ok' runs: width ratios
    0.97, 1.51, 1.29, 0.97; it is so for Dawid-Skene fits too)."""
    z, p, labels = _world(302, WEAK)
    ann, fit = _fit(labels, z)
    e = nc.ece(p, nc.targets.corrected(ann, fit), seed=0)
    assert e.statuses == ("ok",)
    ce = e.details["channel_error"]
    assert ce["method"] == "delta (sandwich)" and ce["n_free"] == 20
    assert ce["n_common"] == N
    bare = dataclasses.replace(fit, annotations=None)
    f = nc.ece(p, nc.targets.corrected(ann, bare), seed=0)
    assert f.statuses == ("channels_fixed",)
    assert "does not carry the annotations" in f.message
    assert ce["channel_variance"].sum() > -ce["cross_covariance"].sum() > 0
    assert e.high - e.low > 1.3 * (f.high - f.low)     # 1.51


def test_refit_is_offered_for_em_fits_only():
    """Refitting under item weights is offered for EM fits (its numbers:
    test_classifier_informed_refit.py); a NUTS fit (here a copy of the EM fit marked so)
    is refused with a NotOffered naming the model and engine."""
    z, p, labels = _world(4)
    ann, fit = _fit(labels, z)
    assert fit._refit_refusal() == ""
    with pytest.raises(NotOffered, match="'classifier_informed' by 'nuts'"):
        dataclasses.replace(fit, method="nuts").refit(np.ones(N))
