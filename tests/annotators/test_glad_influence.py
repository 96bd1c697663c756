"""GLAD's influence on its averaged channels: the profile score, information and easiness
derivatives against finite differences (with and without gold labels), the spread of
refitted channels over simulated replications, and the NC-ECE interval that now carries
the channel error."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import noisycal as nc
from noisycal.engines.em.glad_influence import accuracy_jacobian, glad_profile

sys.path.insert(0, str(Path(__file__).parent))
from test_glad import _sim  # noqa: E402


def _item_crit(alpha, b, prev, item, ann, lab, n, K, gold=None):
    """Each item's log-likelihood plus its easiness prior N(1, 1), in plain NumPy; an item
    with a gold class (``gold`` >= 0) at that class, not summed over the classes."""
    z = alpha[ann] * np.exp(b[item])
    right, wrong = -np.logaddexp(0, -z), -np.logaddexp(0, z) - np.log(K - 1)
    c = np.zeros((n, K))
    np.add.at(c, item, wrong[:, None] * np.ones(K))
    np.add.at(c, (item, lab), right - wrong)
    m = np.log(prev)[None] + c
    top = m.max(axis=1)
    ll = top + np.log(np.exp(m - top[:, None]).sum(axis=1))
    if gold is not None:
        ll = np.where(gold >= 0, m[np.arange(n), np.maximum(gold, 0)], ll)
    return ll - 0.5 * (b - 1.0) ** 2


def _b_hat(alpha, prev, data, b):
    """Every item's easiness maximised by Newton steps on central differences (the items
    are separate, so all at once)."""
    h = 1e-4
    for _ in range(10):
        f0, fp, fm = (_item_crit(alpha, b + d, prev, *data) for d in (0.0, h, -h))
        b = b - ((fp - fm) / (2 * h)) / ((fp - 2 * f0 + fm) / h ** 2)
    return b


@pytest.fixture(scope="module")
def glad300():
    """300 items, four annotators, K = 3, a GLAD fit (status ok) and scores."""
    ann, _, _, y = _sim(300, 4, 3, seed=2)
    fit = nc.annotators.GLAD().fit(ann)
    P = np.full((300, 3), 0.1) + 0.7 * np.eye(3)[y]
    return ann, fit, P


@pytest.fixture(scope="module")
def glad300_gold(glad300):
    """The same ratings with the true class of every third item given as gold."""
    ann, _, _, y = _sim(300, 4, 3, seed=2)
    gold = {ann.items[i].item(): ann.classes[y[i]].item() for i in range(0, 300, 3)}
    return ann, nc.annotators.GLAD().fit(ann, gold=gold), glad300[2]


def test_profile_score_information_and_easiness_derivative_match_finite_differences(glad300):
    _check_profile(*glad300[:2])


def test_gold_profile_matches_finite_differences_of_the_gold_likelihood(glad300_gold):
    # the gold items' likelihood is at their class (log pi_g + their ratings' log-
    # likelihood at g), as EM clamps them: the EM fit maximises it, and its profile
    # scores, information and easiness derivatives are those of that criterion
    ann, fit, _ = glad300_gold
    gold = fit.details["gold_index"]
    assert fit.details["gold"] and np.sum(gold >= 0) == 100 and np.all(gold[1::3] == -1)
    _check_profile(ann, fit, gold)


def _check_profile(ann, fit, gold=None):
    n, J, K = 300, 4, 3
    arr = ann.engine_arrays()
    data = (arr.item, arr.annotator, arr.label, n, K, gold)
    a0, prev0 = fit.ability, fit.prevalence.ravel()
    b0 = _b_hat(a0, prev0, data, fit.details["log_easiness"])
    assert np.abs(b0 - fit.details["log_easiness"]).max() < 1e-4       # EM's own maximum
    pr = glad_profile(a0, b0, prev0, False, (1.0, 1.0), (1.0, 1.0), arr.item, arr.annotator,
                      arr.label, n, gold)
    P = pr["pbasis"]
    p = J + P.shape[1]
    assert pr["scores"].shape == pr["db"].shape == (n, p) and P.shape == (K, K - 1)

    def profile(th):        # each item's criterion with its easiness maximised out
        prev = prev0 + P @ th[J:]
        b = _b_hat(th[:J], prev, data, b0)
        return _item_crit(th[:J], b, prev, *data), b

    def accuracy(th, b):    # each annotator's accuracy averaged over its ratings
        acc = 1 / (1 + np.exp(-th[arr.annotator] * np.exp(b[arr.item])))
        return np.bincount(arr.annotator, weights=acc) / np.bincount(arr.annotator)

    th0 = np.r_[a0, np.zeros(p - J)]
    D = accuracy_jacobian(a0, b0, pr["db"], arr.item, arr.annotator)
    h = 1e-5
    for k in range(p):
        e = np.eye(p)[k] * h
        (vp, bp), (vm, bm) = profile(th0 + e), profile(th0 - e)
        # the envelope theorem: the profile score is the partial score at b_hat
        np.testing.assert_allclose(pr["scores"][:, k], (vp - vm) / (2 * h), atol=1e-7)
        np.testing.assert_allclose(pr["db"][:, k], (bp - bm) / (2 * h), atol=1e-5)
        # the averaged accuracies move with alpha_j and through every b_i(theta)
        np.testing.assert_allclose(D[:, k], (accuracy(th0 + e, bp) - accuracy(th0 - e, bm))
                                   / (2 * h), atol=1e-6)

    def total(th):          # the profile objective, the ability prior N(1, 1) included
        return profile(th)[0].sum() - 0.5 * np.sum((th[:J] - 1.0) ** 2)

    h = 1e-3
    hess = np.zeros((p, p))
    for k in range(p):
        for m in range(k, p):
            ek, em = np.eye(p)[k] * h, np.eye(p)[m] * h
            hess[k, m] = hess[m, k] = (total(th0 + ek + em) - total(th0 + ek - em)
                                       - total(th0 - ek + em) + total(th0 - ek - em)) / (
                4 * h * h)
    np.testing.assert_allclose(pr["information"], -hess, rtol=1e-4,
                               atol=1e-4 * np.abs(hess).max())


def test_influence_is_in_the_full_coordinates_and_centred(glad300):
    ann, fit, _ = glad300
    inf = fit.influence()
    J, K = 4, 3
    # the prevalence's 2 free entries, then one accuracy per annotator (the averaged
    # channels are one-coin): K - 1 + J coordinates, all of them moved by the data
    assert inf.basis.shape == (K + J, (K - 1) + J) and inf.one_coin is True
    assert inf.shape == (1, J, K) and inf.boundary_moves.shape == (0, K + J)
    assert inf.counts.sum() == ann.n_items and inf.pattern.shape == (ann.n_items,)
    # the parametrisation gives back the fit's averaged channels at theta = 0
    from noisycal._util.jax import x64

    with x64():   # as the NC-ECE's channel term evaluates it
        at0 = inf.parametrisation(np.zeros(inf.basis.shape[1]), inf.x0, inf.basis)
    np.testing.assert_allclose(at0["confusion"], fit.confusion, rtol=0, atol=1e-15)
    np.testing.assert_allclose(at0["prevalence"][0], fit.prevalence, rtol=0, atol=1e-15)
    assert np.linalg.matrix_rank(inf.covariance, tol=1e-12) == K - 1 + J
    # equal rating patterns, equal influence: the items of a pattern are counted once
    assert inf.influence.shape[0] == inf.counts.size < ann.n_items


def test_nc_ece_carries_the_averaged_channels_error(glad300):
    ann, fit, P = glad300
    T = nc.targets.corrected(ann, fit)
    e = nc.ece(P, T)
    assert e.statuses == ("target_averaged_channels",), e.message
    det = e.details["channel_error"]
    assert det["method"] == "delta (sandwich)"
    assert det["n_common"] == 300 and det["n_free"] == 2 + 4
    assert np.all(det["channel_variance"] >= 0) and det["channel_variance"].sum() > 0
    held = nc.ece(P, nc.targets.corrected(ann, dataclasses.replace(fit, annotations=None)))
    assert held.statuses == ("target_averaged_channels", "channels_fixed")
    # the plug-in is the same; the median-unbiased estimates differ with the null
    assert e.details["plugin"] == held.details["plugin"]
    # scores that are a function of the true class (0.8 on it): the channel's own
    # variance (4.2e-5 summed over bins) is outweighed by its negative covariance with
    # the items' corrected labels (-8.6e-5: the averaged accuracies are means over the
    # same items' agreement), so the interval is narrower than with the channels held
    # (0.0130 against 0.0250; a one-coin Dawid-Skene fit of these ratings: 0.0221
    # against 0.0234)
    width, held_width = np.diff(e.interval)[0], np.diff(held.interval)[0]
    assert det["cross_covariance"].sum() < -det["channel_variance"].sum() < 0
    assert width == pytest.approx(0.01303, abs=1e-4) and held_width == pytest.approx(
        0.02500, abs=1e-4)
    # noisy scores: the channel term's own variance is again outweighed by its negative
    # covariance with the items' terms (1.7e-7 against -9.6e-7); the widths with and
    # without it differ by less than their Monte Carlo spread over seeds (0.070-0.077
    # against 0.073-0.083 on seeds 0-5), so no width is compared
    Z = np.random.default_rng(0).normal(size=(300, 3)) + 1.5 * P.round()
    Q = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    e, held = (nc.ece(Q, nc.targets.corrected(ann, f))
               for f in (fit, dataclasses.replace(fit, annotations=None)))
    assert e.statuses == ("target_averaged_channels",)
    det = e.details["channel_error"]
    assert det["cross_covariance"].sum() < -det["channel_variance"].sum() < 0


def test_nc_ece_under_a_gold_fit_carries_the_channel_error(glad300, glad300_gold):
    # a gold fit's influence is offered: the default NC-ECE interval carries the channel
    # error (no 'channels_fixed'), and the 100 gold items, whose classes are known, shrink
    # the channels' variance summed over bins (2.35e-5 against 4.24e-5 without gold)
    ann, fit, P = glad300_gold
    inf = fit.influence()
    # a gold item shares no pattern row with a non-gold item or one of another class:
    # 69 rows against 45 for the same ratings without gold
    gold = fit.details["gold_index"]
    first = np.unique(inf.pattern, return_index=True)[1]
    assert np.array_equal(gold[first][inf.pattern], gold)
    assert inf.counts.size == 69 and glad300[1].influence().counts.size == 45
    np.testing.assert_allclose(inf.counts @ inf.influence, 0.0, atol=1e-15)
    e = nc.ece(P, nc.targets.corrected(ann, fit))
    assert e.statuses == ("target_averaged_channels",), e.message
    var = e.details["channel_error"]["channel_variance"].sum()
    plain = nc.ece(P, nc.targets.corrected(ann, glad300[1]))
    assert var == pytest.approx(2.348e-5, rel=1e-3)
    assert plain.details["channel_error"]["channel_variance"].sum() == pytest.approx(
        4.240e-5, rel=1e-3)


def test_gold_boundary_and_unfitted_fits_offer_no_influence(glad300):
    fit = glad300[1]
    gold = dataclasses.replace(fit, details={**fit.details, "gold": True, "gold_index": None})
    with pytest.raises(nc.exceptions.NotOffered, match="used gold labels but does not carry"):
        gold.influence()
    edge = dataclasses.replace(fit, status="boundary", statuses=("boundary",))
    with pytest.raises(nc.exceptions.NotOffered, match="status 'boundary'"):
        edge.influence()
    with pytest.raises(nc.exceptions.NotOffered, match="does not carry the annotations"):
        dataclasses.replace(fit, annotations=None).influence()


@pytest.mark.slow
def test_influence_covariance_matches_the_spread_over_replications():
    # 30 GLAD data sets (150 items, three annotators, K = 2) from one truth: the variance
    # of the fitted averaged accuracies and prevalence over the replications against the
    # mean of the influence's variance. Under normality (R - 1) s^2 / sigma^2 is
    # chi-square with R - 1 = 29 degrees of freedom, so each ratio lies in the central
    # 99.9% interval [0.35, 2.09] but with probability 0.001 (measured: 0.71, 1.37, 1.41
    # for the accuracies, 0.99 for the prevalence)
    R, n, alpha = 30, 150, np.array([1.0, 1.5, 2.0])
    est, pred = [], []
    for seed in range(R):
        ann = _sim(n, 3, 2, seed=seed, alpha=alpha)[0]
        fit = nc.annotators.GLAD().fit(ann)
        inf = fit.influence()
        var = np.einsum("ij,jk,ik->i", inf.basis, inf.covariance, inf.basis)
        est.append(np.r_[fit.confusion[:, 0, 0], fit.prevalence.ravel()[0]])
        pred.append(var[[2, 3, 4, 0]])        # accuracy[j] at K + j; prevalence[0]
    ratio = np.var(est, axis=0, ddof=1) / np.mean(pred, axis=0)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], R - 1) / (R - 1)
    assert lo == pytest.approx(0.353, abs=1e-3) and hi == pytest.approx(2.094, abs=1e-3)
    assert np.all((ratio > lo) & (ratio < hi)), ratio
    np.testing.assert_allclose(ratio, [0.712, 1.369, 1.415, 0.994], atol=0.005)


def test_many_annotators_are_within_the_parameter_limit():
    """200 annotators, K = 3, each item rated by 3 of them: the influence has J + K - 1 =
    202 one-coin coordinates (in full confusion coordinates it would have had
    J K (K - 1) + K - 1 = 1,202, over MAX_FREE = 1,000, and was refused), and the NC-ECE
    under the fit carries it."""
    from noisycal.engines.identification import MAX_FREE

    rng = np.random.default_rng(7)
    n, J, K = 400, 200, 3
    alpha, b, y = rng.uniform(1.5, 3.0, J), rng.normal(0.8, 0.6, n), rng.integers(0, K, n)
    item = np.repeat(np.arange(n), 3)
    an = np.concatenate([rng.choice(J, 3, replace=False) for _ in range(n)])
    ok = rng.random(item.size) < 1.0 / (1.0 + np.exp(-alpha[an] * np.exp(b[item])))
    lab = np.where(ok, y[item], (y[item] + rng.integers(1, K, item.size)) % K)
    ann = nc.Annotations.from_arrays(item, an, lab, classes=np.arange(K))
    fit = nc.annotators.GLAD().fit(ann)
    inf = fit.influence()
    assert inf.basis.shape[1] == J + K - 1 < MAX_FREE < J * K * (K - 1) + K - 1
    P = np.full((n, K), 0.1) + 0.7 * np.eye(K)[y]
    e = nc.ece(P, nc.targets.corrected(ann, fit))
    assert "channels_fixed" not in e.statuses
    assert e.details["channel_error"]["n_free"] == J + K - 1


def test_annotations_in_another_item_order_are_refused(glad300):
    """The influence indexes the fit's per-item easiness by the data's item codes: the
    same ratings with the items in another order are refused, naming annotations."""
    ann, fit, _ = glad300
    arr = ann.engine_arrays()
    ids = np.asarray(ann.items)[::-1]
    other = nc.Annotations.from_arrays(ids[arr.item], arr.annotator, arr.label,
                                       classes=ann.classes)
    assert not np.array_equal(np.asarray(other.items), np.asarray(fit.items))
    with pytest.raises(nc.exceptions.NotOffered, match="annotations: not the fit's items"):
        fit.influence(other)
    assert fit.influence(ann).covariance.shape == (6, 6)
