"""Fits stuck in bad modes are not 'ok' (noisycal.engines.checks), and the status
travels to every target and Estimate built from them; legitimate fits stay 'ok'."""

import warnings

import numpy as np
import pytest
from scipy.stats import chi2
from small_nuts import TWO_CHAINS

import noisycal as nc
from noisycal.engines.checks import channel_check, channel_counts
from noisycal.engines.results import estimate_status


def _chan(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)


def _toy_fit(a, b, seed, n=1500, **kw):
    """Gaussian-toy ratings with the given rates, an EM fit (warnings recorded)."""
    toy = nc.simulate.gaussian_toy(n, a=a, b=b, seed=seed)
    ann = nc.Annotations.from_wide(toy.annotations, classes=[0, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = nc.DawidSkene(2).fit(ann, seed=seed, **kw)
    return toy, ann, fit, caught


# ---------------------------------------------------------------------- the rules by hand
def test_degenerate_rule_by_hand():
    """a = 0.49, b = 0.51 on 500 items per class: the expected table is
    [[255, 245], [245, 255]], X^2 = 4 * 5^2 / 250 = 0.4, V = sqrt(0.4 / 1000)."""
    C = _chan([0.1, 0.49], [0.9, 0.51])
    check = channel_check(C, 500 * C)
    assert check.status == "degenerate_channel" and check.degenerate == (1,)
    assert check.p_value[1] == pytest.approx(chi2.sf(0.4, 1), rel=1e-12)
    assert check.association[1] == pytest.approx(np.sqrt(0.4 / 1000), rel=1e-12)
    assert check.gap[1] == pytest.approx(0.02, abs=1e-12)
    assert "annotator(s) [1] have degenerate channels" in check.message
    # the same rows from 20,000 items per class are significantly different
    assert channel_check(C[1:], 20_000 * C[1:]).status == "ok"
    # few ratings, clearly different rows: not flagged for the test's lack of power
    few = channel_check(_chan([0.2], [0.8]), 4 * _chan([0.2], [0.8]))
    assert few.p_value[0] > 0.01 and few.association[0] > 0.1 and few.status == "ok"


def test_adversarial_rule_by_hand():
    """b < a: the swap raises the balanced agreement by 2 (a - b) = 1.2; its standard error
    from the two rows with entries smoothed by half a rating."""
    n = 500.0
    C = _chan([0.1, 0.8], [0.9, 0.2])
    check = channel_check(C, n * C, annotators=["x", "y"])
    assert check.status == "adversarial_channel" and check.adversarial == (1,)
    assert check.excess.tolist() == pytest.approx([0.0, 1.2], abs=1e-12)
    hi, lo = (n * 0.8 + 0.5) / (n + 1), (n * 0.2 + 0.5) / (n + 1)
    se = np.sqrt(2 * (hi + lo - (hi - lo) ** 2) / n)
    assert check.excess_se[1] == pytest.approx(se, rel=1e-12)
    assert "annotator(s) ['y'] have adversarial channels" in check.message
    # biased but informative (b > a, a > 1/2) is not adversarial, nor is a negative gap
    # within noise (a corrected target refuses that one by itself)
    assert channel_check(_chan([0.6], [0.95]), n * _chan([0.6], [0.95])).status == "ok"
    noisy = channel_check(_chan([0.45], [0.15]), 6 * _chan([0.45], [0.15]))
    assert noisy.excess[0] == pytest.approx(0.6) and noisy.status == "ok"
    # K = 3: annotator 1 swaps classes 1 and 2
    C = np.stack([0.8 * np.eye(3) + 0.2 / 3] * 2)
    C[1] = C[1][:, [0, 2, 1]]
    k3 = channel_check(C, 300 * C)
    assert k3.adversarial == (1,) and k3.excess[1] == pytest.approx(2 * (0.8 + 0.2 / 3 - 0.2 / 3))
    # rows without data count as correct; one row in use is not checked for degeneracy
    one = channel_check(C[1:], np.array([300.0, 0.5, 0.5])[None, :, None] * C[1:])
    assert one.status == "ok" and one.excess[0] == 0 and np.isnan(one.p_value[0])


def test_channel_check_validates_its_arguments():
    C = _chan([0.1], [0.9])
    with pytest.raises(ValueError, match="level"):
        channel_check(C, 10 * C, level=1.5)
    with pytest.raises(ValueError, match="association"):
        channel_check(C, 10 * C, association=-0.1)
    with pytest.raises(ValueError, match="table"):
        channel_check(C, np.ones((1, 2)))
    with pytest.raises(ValueError, match="table"):
        channel_check(C, -C)


def test_the_table_divides_out_each_annotators_own_rating():
    """Two raters of one item: each row of the table is the posterior given the *other*
    rating (prevalence 1/2, accuracy 0.8); a missing rating leaves the posterior as is."""
    ann = nc.Annotations.from_wide(np.array([[1, 1], [0, -1]]), missing=-1)
    C = np.array([[[0.8, 0.2], [0.2, 0.8]]] * 2)
    joint = np.array([[0.2 * 0.2, 0.8 * 0.8], [0.8, 0.2]])
    post = joint / joint.sum(1, keepdims=True)
    table = channel_counts(ann, post, C)
    # item 0, label 1 from each: P(Y | other says 1) = (0.2, 0.8); item 1 rated by
    # annotator 0 alone: its own rating divided out leaves the prevalence (1/2, 1/2)
    np.testing.assert_allclose(table[0], [[0.5, 0.2], [0.5, 0.8]], rtol=1e-12)
    np.testing.assert_allclose(table[1], [[0.0, 0.2], [0.0, 0.8]], rtol=1e-12)


# ---------------------------------------------------------------------- fits
def test_good_designs_stay_ok():
    for seed in range(2):
        _, _, fit, _ = _toy_fit([0.1, 0.15, 0.2], [0.85, 0.9, 0.8], seed)
        assert fit.status == "ok", fit.message
        assert fit.details["channels"]["checked"]
        _, _, fit, _ = _toy_fit(nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B, seed)
        assert fit.status == "ok", fit.message
    ds = nc.datasets.load_dawid_skene_1979()
    fit = nc.DawidSkene(4).fit(ds)
    assert fit.status == "ok", fit.message
    assert nc.OneCoinDawidSkene(4).fit(ds).status == "ok"
    # a fitted row on 4 patients that prefers another label is noise, not an adversary
    check = fit.details["channels"]
    assert check["excess"][2] == pytest.approx(0.25, abs=1e-4) and check["adversarial"] == ()


def test_an_adversarial_annotator_is_flagged():
    for seed in range(3):
        _, _, fit, caught = _toy_fit([0.1, 0.15, 0.8], [0.85, 0.9, 0.2], seed)
        assert fit.status == "adversarial_channel"
        assert fit.details["channels"]["adversarial"] == (2,)
        assert any(issubclass(w.category, nc.IdentifiabilityWarning)
                   and "adversarial" in str(w.message) for w in caught)
    toy = nc.simulate.gaussian_toy(1500, a=[0.1, 0.15, 0.8], b=[0.85, 0.9, 0.2], seed=0)
    with pytest.warns(nc.IdentifiabilityWarning, match="adversarial"):
        mle = nc.DawidSkene(2).fit(nc.Annotations.from_wide(toy.annotations), method="mle")
    assert mle.status == "adversarial_channel"


@pytest.mark.parametrize("orientation", ["anchor", "majority"])
def test_label_swapped_modes_are_flagged(orientation):
    """The latent classes are named after an adversarial anchor, or after a vote that
    two adversarial annotators of three win: the fit is the mirror image of the truth
    (its prevalence 1 - mu) and the honest annotators come out adversarial."""
    if orientation == "anchor":
        a, b, kw, honest = [0.8, 0.1, 0.15], [0.2, 0.85, 0.9], dict(anchor=0), (1, 2)
    else:
        a, b, kw, honest = [0.1, 0.85, 0.8], [0.85, 0.15, 0.2], {}, (0,)
    toy, _, fit, _ = _toy_fit(a, b, seed=3, **kw)
    assert fit.status == "adversarial_channel"
    assert fit.details["channels"]["adversarial"] == honest
    assert abs(fit.prevalence[1] - (1 - toy.y.mean())) < 0.05  # reversed


def test_the_advice_for_a_swapped_majority_leads_to_the_answer():
    """Two of three annotators swap labels: EM takes the majority's orientation and flags
    the one good annotator. The message offers the orientation first (anchor= an
    annotator you trust), and following it recovers the truth: the refit flags the two
    swappers, its prevalence is the truth's, and its NC-ECE is near the true-label ECE
    (dropping the flagged annotator, the advice before, gave 0.50-0.57 against 0.054)."""
    a, b = [0.1, 0.85, 0.8], [0.85, 0.15, 0.2]
    toy, ann, fit, _ = _toy_fit(a, b, seed=3)
    assert fit.details["channels"]["adversarial"] == (0,)
    msg = fit.message
    assert "anchor=" in msg and "gold=" in msg and "majority" in msg
    assert msg.index("anchor=") < msg.index("drop")
    _, _, oriented, _ = _toy_fit(a, b, seed=3, anchor=0)
    assert oriented.status == "adversarial_channel"
    assert oriented.details["channels"]["adversarial"] == (1, 2)
    assert abs(oriented.prevalence[1] - toy.y.mean()) < 0.05
    ref = float(nc.ece(toy.z, toy.y, n_bins=10, interval=None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a corrected target inverts channels with b > a only: the swappers are left out
        nc_ece = float(nc.ece(toy.z, nc.targets.corrected(
            ann, oriented, informative=[True, False, False]), n_bins=10, interval=None))
        wrong = float(nc.ece(toy.z, nc.targets.corrected(
            ann, fit, informative=[False, True, True]), n_bins=10, interval=None))
    assert abs(nc_ece - ref) < 0.03 and wrong > ref + 0.2, (nc_ece, ref, wrong)


def test_near_random_annotators_are_flagged():
    """With three annotators of whom one is near-random the model is identified by two
    only: EM drifts to error rates near 0 or 1 (the audit found 'ok' in 3 of 30 runs)."""
    C = _chan([0.1, 0.15, 0.5], [0.85, 0.9, 0.5])
    statuses = []
    for seed in range(8):
        sim = nc.simulate.dawid_skene(2000, [0.6, 0.4], C, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            statuses.append(nc.DawidSkene(2).fit(sim.annotations, seed=seed).status)
    assert "ok" not in statuses and statuses.count("degenerate_channel") >= 4, statuses
    C4 = _chan([0.1, 0.15, 0.2, 0.5], [0.85, 0.9, 0.8, 0.5])
    for seed in range(3):
        sim = nc.simulate.dawid_skene(2000, [0.6, 0.4], C4, seed=seed)
        with pytest.warns(nc.IdentifiabilityWarning, match=r"\[3\] have degenerate"):
            fit = nc.DawidSkene(2).fit(sim.annotations, seed=seed)
        assert fit.status == "degenerate_channel" and fit.details["channels"]["degenerate"] == (3,)


def _kclass(seed, bad=None, n=800):
    rng = np.random.default_rng(seed)
    C = np.empty((4, 4, 4))
    for j, acc in enumerate([0.7, 0.8, 0.9, 0.75]):
        off = rng.dirichlet(np.ones(3), size=4) * (1 - acc)
        for k in range(4):
            C[j, k] = np.insert(off[k], k, acc)
    if bad == "adversarial":
        C[3] = C[3][:, [1, 0, 3, 2]]
    elif bad == "random":
        C[3] = 0.25
    return nc.simulate.dawid_skene(n, [0.4, 0.3, 0.2, 0.1], C, seed=seed).annotations


def test_kclass_good_adversarial_and_random():
    assert nc.DawidSkene(4).fit(_kclass(1), seed=1).status == "ok"
    with pytest.warns(nc.IdentifiabilityWarning, match=r"\[3\] have degenerate"):
        fit = nc.DawidSkene(4).fit(_kclass(1, "random"), seed=1)
    assert fit.status == "degenerate_channel"


# ---------------------------------------------------------------------- the chain
def test_the_status_travels_to_targets_and_estimates():
    toy, ann, fit, _ = _toy_fit([0.1, 0.15, 0.8], [0.85, 0.9, 0.2], seed=1)
    assert fit.status == "adversarial_channel"
    post = nc.targets.posterior(None, fit)
    assert post.status == "adversarial_channel" and "adversarial" in post.message
    assert nc.targets.posterior(ann, fit).status == "adversarial_channel"
    # the corrected target refuses the negative gap; without that annotator it is built,
    # and keeps the fit's status (the fit as a whole may be in a bad mode)
    with pytest.raises(ValueError, match=r"annotator\(s\) \[2\] have b - a"):
        nc.targets.corrected(ann, fit)
    corr = nc.targets.corrected(ann, fit, informative=np.array([True, True, False]))
    assert corr.status == "adversarial_channel"
    for target in (post, corr):
        for interval in (None, nc.intervals.Bootstrap(n_boot=30)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", nc.NumericalWarning)
                est = nc.ece(toy.z, target, n_bins=10, interval=interval)
            assert est.status == "target_adversarial_channel"
    # K = 4: the permuted channel can be inverted, so the corrected target is built
    ann4 = _kclass(0, "adversarial")
    with pytest.warns(nc.IdentifiabilityWarning):
        fit4 = nc.DawidSkene(4).fit(ann4)
    T = nc.targets.corrected(ann4, fit4)
    assert T.status == "adversarial_channel"
    probs = np.random.default_rng(0).dirichlet(np.ones(4), size=ann4.n_items)
    assert nc.ece(probs, T, interval=None).status == "target_adversarial_channel"


def test_the_posterior_target_refuses_what_the_corrected_target_refuses():
    """K = 3, an annotator who always says 'a': its channel is singular. The corrected
    target refuses it (ValueError) and the posterior target is not silently 'ok'."""
    C = np.stack([0.8 * np.eye(3) + 0.2 / 3] * 3)
    C[2] = [[1.0, 0.0, 0.0]] * 3
    ann = nc.simulate.dawid_skene(600, [0.5, 0.3, 0.2], C, seed=0).annotations
    with pytest.warns(nc.IdentifiabilityWarning, match="smallest singular value"):
        fit = nc.DawidSkene(3).fit(ann)
    assert fit.status == "small_gap"
    with pytest.raises(ValueError, match="singular"):
        nc.targets.corrected(ann, fit)
    assert nc.targets.posterior(None, fit).status == "small_gap"
    # excluding that annotator the corrected target checked every channel it uses
    assert nc.targets.corrected(ann, fit, informative=np.array([True, True, False])
                                ).status == "ok"
    status, message = estimate_status(np.full((1, 3), 1 / 3), C, True)
    assert status == "small_gap" and "annotator(s) [2]" in message


@pytest.mark.slow
def test_a_nuts_fit_of_an_adversarial_design_is_flagged():
    toy = nc.simulate.gaussian_toy(1000, a=[0.1, 0.15, 0.8], b=[0.85, 0.9, 0.2], seed=2)
    ann = nc.Annotations.from_wide(toy.annotations, classes=[0, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # short chains: a loose R-hat threshold (convergence is not what is tested)
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.NUTS(**TWO_CHAINS,
                                                               rhat_threshold=1.1), seed=0)
    assert fit.status == "adversarial_channel", fit.message
    assert any("adversarial" in str(w.message) for w in caught)
    assert nc.targets.posterior(None, fit).status == "adversarial_channel"
