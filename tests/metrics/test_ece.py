"""Binned metrics: hand-computed cases, edge cases, peers, invariances, bad input."""


import inspect

import numpy as np
import pytest

import noisycal as nc
from noisycal.intervals.bootstrap import replicate_weights
from noisycal.metrics.binned import estimate as binned_estimate

ATOL = 1e-12


def value(est):
    return float(est)


# ------------------------------------------------------------------ hand-computed cases
# Case A: probs [[.9,.1],[.8,.2],[.3,.7]], labels [0,1,1], 10 bins.
# top-label confidences .9 (correct), .8 (wrong), .7 (correct) fall in bins 9, 8, 7:
# ECE = (|1-.9| + |0-.8| + |1-.7|) / 3 = 1.2 / 3 = 0.4; MCE = 0.8.
PA = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
YA = np.array([0, 1, 1])

# Case B: binary p = [.2,.25,.8,.85], soft positive target [0, 1, .5, 1], 2 bins.
# bin 0: mean conf .225, mean target .5, gap .275; bin 1: .825 vs .75, gap -.075.
# ECE = .5*.275 + .5*.075 = .175; L2 = sqrt(.5*.275^2 + .5*.075^2) = sqrt(.040625);
# MCE = .275. Debiased L2: within-bin target variances .25 and .0625, each over
# (n_b - 1) = 1: .075625 - .25 < 0 and .005625 - .0625 < 0, so the estimate clamps to 0.
PB = np.array([0.2, 0.25, 0.8, 0.85])
TB = np.column_stack([1 - np.array([0, 1, 0.5, 1]), np.array([0, 1, 0.5, 1])])

# Case C: K = 3, probs [.6,.3,.1], [.2,.5,.3], [.1,.1,.8], labels [0,2,2], 2 bins.
# class 0: bin0 {.2,.1} gap .15 (w 2/3), bin1 {.6} gap .4 (w 1/3) -> 7/30
# class 1: bin0 {.3,.1} gap .2, bin1 {.5} gap .5 -> .3
# class 2: bin0 {.1,.3} targets {0,1}: gap .3, bin1 {.8} gap .2 -> 8/30
# classwise ECE = (7/30 + 9/30 + 8/30) / 3 = 24/90
# top-label (conf .6, .5, .8; correct 1, 0, 1): 2 bins -> all in bin 1:
#   |2/3 - 1.9/3| = 0.1/3; 10 bins -> (.4 + .5 + .2)/3 = 1.1/3, MCE .5
PC = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
YC = np.array([0, 2, 2])


def test_hand_case_a():
    assert value(nc.ece(PA, YA, n_bins=10, interval=None)) == pytest.approx(0.4, abs=ATOL)
    assert value(nc.mce(PA, YA, n_bins=10, min_count=1, interval=None)) == pytest.approx(
        0.8, abs=ATOL)
    est = nc.ece(PA, YA, n_bins=10, interval=None)
    b = est.bins
    assert list(b.loc[b["count"] > 0, "bin"]) == [7, 8, 9]
    np.testing.assert_allclose(b.loc[b["count"] > 0, "mean_conf"], [0.7, 0.8, 0.9], atol=ATOL)
    np.testing.assert_allclose(b.loc[b["count"] > 0, "mean_target"], [1, 0, 1], atol=ATOL)
    assert est.details["n_empty_bins"] == 7


def test_hand_case_b_soft_binary():
    assert value(nc.ece(PB, TB, n_bins=2, interval=None)) == pytest.approx(0.175, abs=ATOL)
    assert value(nc.ece(PB, TB, n_bins=2, norm="l2", interval=None)) == pytest.approx(
        np.sqrt(0.040625), abs=ATOL)
    assert value(nc.mce(PB, TB, n_bins=2, min_count=1, interval=None)) == pytest.approx(
        0.275, abs=ATOL)
    assert value(nc.ece(PB, TB, n_bins=2, norm="l2", debias=True, interval=None)) == 0.0
    # default kind for 1-D input is the positive class
    est = nc.ece(PB, TB, n_bins=2, interval=None)
    assert est.details["kind"] == "positive_class"


def test_hand_case_c_classwise_and_top():
    cw = nc.ece(PC, YC, n_bins=2, kind="classwise", interval=None)
    assert value(cw) == pytest.approx(24 / 90, abs=ATOL)
    np.testing.assert_allclose(list(cw.details["per_group"].values()),
                               [7 / 30, 9 / 30, 8 / 30], atol=ATOL)
    assert value(nc.ece(PC, YC, n_bins=2, interval=None)) == pytest.approx(0.1 / 3, abs=ATOL)
    assert value(nc.ece(PC, YC, n_bins=10, interval=None)) == pytest.approx(1.1 / 3, abs=ATOL)
    assert value(nc.mce(PC, YC, n_bins=10, min_count=1, interval=None)) == pytest.approx(
        0.5, abs=ATOL)
    # classwise MCE: the largest gap over classes and bins (class 1, bin 1: .5)
    assert value(nc.mce(PC, YC, n_bins=2, kind="classwise", min_count=1,
                       interval=None)) == pytest.approx(
        0.5, abs=ATOL)


def test_classwise_l2_is_root_mean_square_of_classes():
    # per class L2 errors: class 0 sqrt(2/3*.15^2 + 1/3*.4^2), etc.
    sq = [2 / 3 * 0.15**2 + 1 / 3 * 0.4**2, 2 / 3 * 0.2**2 + 1 / 3 * 0.5**2,
          2 / 3 * 0.3**2 + 1 / 3 * 0.2**2]
    est = nc.ece(PC, YC, n_bins=2, kind="classwise", norm="l2", interval=None)
    assert value(est) == pytest.approx(np.sqrt(np.mean(sq)), abs=ATOL)


def test_debiased_l2_hand_case():
    # binary hard labels, 1 bin: p = [.5,.5,.5,.5,.6,.6], y = [1,1,1,0,1,1]
    # mean p = 3.2/6, mean y = 5/6, gap = .3; var = 5/6*1/6; corr = var / 5
    p = np.array([0.5, 0.5, 0.5, 0.5, 0.6, 0.6])
    y = np.array([1, 1, 1, 0, 1, 1])
    expect = np.sqrt(0.3**2 - (5 / 36) / 5)
    got = nc.ece(p, y, n_bins=1, norm="l2", debias=True, interval=None)
    assert value(got) == pytest.approx(expect, abs=ATOL)


def test_debiased_l2_matches_kumar_formula_on_random_data():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p**1.3).astype(int)
    B = 8
    b = np.minimum((p * B).astype(int), B - 1)
    total = 0.0
    for k in range(B):
        m = b == k
        nb = m.sum()
        if nb < 2:
            continue
        ybar = y[m].mean()
        total += nb / 500 * ((p[m].mean() - ybar) ** 2 - ybar * (1 - ybar) / (nb - 1))
    got = nc.ece(p, y, n_bins=B, norm="l2", debias=True, interval=None)
    assert value(got) == pytest.approx(np.sqrt(max(total, 0.0)), rel=1e-10)


# ------------------------------------------------------------------ edges
def test_confidence_exactly_zero_and_one():
    p = np.array([0.0, 1.0])
    est = nc.ece(p, np.array([0, 1]), n_bins=10, interval=None)
    assert value(est) == 0.0
    counts = est.bins["count"].to_numpy()
    assert counts[0] == 1 and counts[-1] == 1 and counts.sum() == 2
    assert value(nc.ece(p, np.array([1, 0]), n_bins=10, interval=None)) == 1.0


def test_bin_edges_are_left_closed():
    # 0.7 lies exactly on an edge of 10 equal bins and belongs to [0.7, 0.8)
    est = nc.ece(np.array([0.7, 0.2]), np.array([1, 0]), n_bins=10, interval=None)
    b = est.bins
    assert b.loc[b["bin"] == 7, "count"].item() == 1
    assert b.loc[b["bin"] == 2, "count"].item() == 1


def test_empty_bins_one_class_n1_one_bin():
    # one class present, every prediction in one bin
    p = np.full((5, 3), 0.2)
    p[:, 0] = 0.6
    est = nc.ece(p, np.zeros(5, dtype=int), n_bins=15, interval=None)
    assert value(est) == pytest.approx(0.4, abs=ATOL)
    assert int((est.bins["count"] > 0).sum()) == 1
    assert np.isnan(est.bins.loc[est.bins["count"] == 0, "mean_target"]).all()
    # n = 1
    # a single item: every replicate equals the estimate, so the bootstrap says nothing
    # about sampling error; the interval is absent (NaN) and the status says why
    with pytest.warns(nc.NumericalWarning, match="replicates are equal"):
        one = nc.ece(np.array([[0.25, 0.75]]), np.array([1]), n_bins=4,
                     interval=nc.intervals.Bootstrap(n_boot=20))
    assert value(one) == pytest.approx(0.25, abs=ATOL)
    assert one.status == "degenerate" and np.isnan(one.low) and np.isnan(one.high)


def test_n_bins_one_is_calibration_in_the_large():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < 0.5).astype(int)
    assert value(nc.ece(p, y, n_bins=1, interval=None)) == pytest.approx(
        abs(y.mean() - p.mean()), abs=1e-12)


def test_logits_and_probs_agree():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(200, 4)) * 2
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = rng.integers(0, 4, 200)
    a = nc.ece(p, y, interval=None)
    b = nc.ece(logits=z, target=y, interval=None)
    assert value(a) == pytest.approx(value(b), abs=1e-12)
    zb = rng.normal(size=200)
    yb = rng.integers(0, 2, 200)
    assert value(nc.ece(logits=zb, target=yb, interval=None)) == pytest.approx(
        value(nc.ece(1 / (1 + np.exp(-zb)), yb, interval=None)), abs=1e-12)


# ------------------------------------------------------------------ peers and invariances
def test_agrees_with_sklearn_calibration_curve():
    calibration = pytest.importorskip("sklearn.calibration")
    rng = np.random.default_rng(7)
    p = rng.beta(2, 2, size=3000)
    y = (rng.uniform(size=3000) < p**0.8).astype(int)
    prob_true, prob_pred = calibration.calibration_curve(y, p, n_bins=10, strategy="uniform")
    b = nc.ece(p, y, n_bins=10, interval=None).bins
    ne = b[b["count"] > 0]
    np.testing.assert_allclose(ne["mean_target"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(ne["mean_conf"], prob_pred, rtol=1e-12)


def test_item_permutation_invariance():
    sim = nc.simulate.classifier(500, 5, seed=2)
    perm = np.random.default_rng(0).permutation(500)
    for kind in ("top_label", "classwise"):
        a = nc.ece(sim.probs, sim.labels, kind=kind, interval=None)
        b = nc.ece(sim.probs[perm], sim.labels[perm], kind=kind, interval=None)
        assert value(a) == pytest.approx(value(b), abs=1e-12)


def test_class_relabelling_invariance():
    sim = nc.simulate.classifier(500, 5, seed=4)
    perm = np.array([3, 0, 4, 1, 2])  # new column j holds old class perm[j]
    inv = np.argsort(perm)
    P2 = sim.probs[:, perm]
    y2 = inv[sim.labels]
    for kind in ("top_label", "classwise"):
        a = nc.ece(sim.probs, sim.labels, kind=kind, interval=None)
        b = nc.ece(P2, y2, kind=kind, interval=None)
        assert value(a) == pytest.approx(value(b), abs=1e-12)


def test_one_hot_soft_labels_equal_hard_labels():
    sim = nc.simulate.classifier(400, 3, seed=5)
    onehot = nc.targets.hard(sim.labels, n_classes=3)
    soft = nc.targets.soft(distribution=onehot.values)
    for kind in ("top_label", "classwise"):
        h = nc.ece(sim.probs, sim.labels, kind=kind, interval=nc.intervals.Bootstrap(n_boot=50),
                   seed=1)
        s = nc.ece(sim.probs, soft, kind=kind, interval=nc.intervals.Bootstrap(n_boot=50), seed=1)
        assert value(h) == value(s)
        assert h.interval == s.interval
    mc = nc.true_label_ece(sim.probs, soft, n_draws=7, interval=None)
    assert value(mc) == pytest.approx(value(nc.ece(sim.probs, sim.labels, interval=None)),
                                      abs=1e-12)


def test_calibrated_oracle_has_small_ece_and_debiased_near_zero():
    b = nc.simulate.binary_scores(200_000, seed=0)  # calibrated: slope 1, intercept 0
    est = nc.ece(b.p, b.y, n_bins=10, interval=None)
    assert value(est) < 0.005  # upper bounds near 0, not tolerances around a value
    deb = nc.ece(b.p, b.y, n_bins=10, norm="l2", debias=True, interval=None)
    assert value(deb) < 0.003
    # the true probabilities as a soft target: ECE is the binning error only
    exact = nc.ece(b.p, np.column_stack([1 - b.true_prob, b.true_prob]), n_bins=10,
                   interval=None)
    assert value(exact) < 1e-12


def test_population_ece_recovered():
    kw = dict(intercept=0.6, slope=1.0)
    pop = nc.simulate.population_binned_ece(10, **kw)
    b = nc.simulate.binary_scores(400_000, seed=11, **kw)
    est = nc.ece(b.p, b.y, n_bins=10, interval=None)
    assert value(est) == pytest.approx(pop, abs=0.003)


# ------------------------------------------------------------------ equal-mass bins
def test_quantile_bins_have_equal_counts():
    rng = np.random.default_rng(8)
    p = rng.uniform(size=1000)
    y = rng.integers(0, 2, 1000)
    est = nc.ece(p, y, n_bins=10, strategy="quantile", interval=None)
    assert (est.bins["count"] == 100).all()
    edges = est.details["edges"][0]
    s = np.sort(p)
    np.testing.assert_allclose(edges[1:-1], 0.5 * (s[99:900:100] + s[100:901:100]))
    assert edges[0] == 0.0 and edges[-1] == 1.0


def test_quantile_rebin_option():
    sim = nc.simulate.binary_scores(800, slope=0.7, seed=2)
    fixed = nc.ece(sim.p, sim.y, strategy="quantile", interval=nc.intervals.Bootstrap(n_boot=200),
                   seed=3)
    rebinned = nc.ece(sim.p, sim.y, strategy="quantile",
                      interval=nc.intervals.Bootstrap(n_boot=200, rebin=True), seed=3)
    assert value(fixed) == value(rebinned)
    assert not np.allclose(fixed.replicates, rebinned.replicates)
    # re-estimated edges track the resample: widths similar, centres close
    assert abs(np.median(fixed.replicates) - np.median(rebinned.replicates)) < 0.02


# ------------------------------------------------------------------ true-label ECE (paper 000)
def test_true_label_ece_mc_exact_expectation_tiny_case():
    # 2 items, 1 bin: conf .7, .6 (both predict class 0); pi-hat_0 = .5, .8.
    # acc in {1, .5, 0} with prob .4, .5, .1 -> E[ECE] = .4*.35 + .5*.15 + .1*.65 = .28.
    # Per-draw sd = sqrt(.0241); with 20000 draws the MC standard error is .0011.
    P = np.array([[0.7, 0.3], [0.6, 0.4]])
    S = np.array([[0.5, 0.5], [0.8, 0.2]])
    mc = nc.true_label_ece(P, S, n_draws=20000, n_bins=1, interval=None, seed=0)
    assert value(mc) == pytest.approx(0.28, abs=3 * np.sqrt(0.0241 / 20000))
    expected = nc.true_label_ece(P, S, form="expected", n_bins=1, interval=None)
    assert value(expected) == pytest.approx(0.0, abs=1e-12)


def test_true_label_ece_mc_converges_to_its_expectation():
    sim = nc.simulate.classifier(300, 3, seed=6, n_annotators=5)
    S = nc.targets.soft(counts=sim.counts)
    big = value(nc.true_label_ece(sim.probs, S, n_draws=4000, interval=None, seed=1))
    small = [value(nc.true_label_ece(sim.probs, S, n_draws=25, interval=None, seed=s))
             for s in range(8)]
    tiny = [value(nc.true_label_ece(sim.probs, S, n_draws=1, interval=None, seed=s))
            for s in range(8)]
    # the spread of the MC average shrinks like 1/sqrt(S) and centres on the expectation
    assert np.std(small) < np.std(tiny) / 2.5
    assert abs(np.mean(small) - big) < 4 * np.std(tiny) / np.sqrt(25 * 8)
    # Jensen: the MC form's expectation is at least the deterministic form
    exp = value(nc.true_label_ece(sim.probs, S, form="expected", interval=None))
    assert big >= exp - 1e-3


def test_true_label_ece_expected_form_is_ece_with_soft_target():
    sim = nc.simulate.classifier(300, 4, seed=9)
    S = nc.targets.soft(counts=sim.counts)
    a = nc.true_label_ece(sim.probs, S, form="expected",
                          interval=nc.intervals.Bootstrap(n_boot=50), seed=2)
    b = nc.ece(sim.probs, S, interval=nc.intervals.Bootstrap(n_boot=50), seed=jax_split_second(2))
    assert value(a) == value(b)


def jax_split_second(seed):
    import jax

    return jax.random.split(jax.random.key(seed))[1]


def test_true_label_ece_large_bins_close_to_expected_form():
    sim = nc.simulate.classifier(20000, 3, seed=10, n_annotators=7)
    S = nc.targets.soft(counts=sim.counts)
    mc = value(nc.true_label_ece(sim.probs, S, n_draws=20, n_bins=10, interval=None))
    ex = value(nc.true_label_ece(sim.probs, S, form="expected", n_bins=10, interval=None))
    assert mc == pytest.approx(ex, abs=0.004)


# ------------------------------------------------------------------ bad input
BAD_P = np.array([[0.6, 0.4], [0.3, 0.7]])


@pytest.mark.parametrize("probs, match", [
    (np.array([[np.nan, 1.0], [0.5, 0.5]]), "probs"),
    (np.array([[np.inf, 0.0], [0.5, 0.5]]), "probs"),
    (np.array([[0.6, 0.5], [0.5, 0.5]]), "sum to 1"),
    (np.array([[1.2, -0.2], [0.5, 0.5]]), r"\[0, 1\]"),
    (np.array([1.5, 0.5]), r"\[0, 1\]"),
    (np.ones((2, 2, 2)) / 2, "dimensions"),
    (np.ones((2, 1)), "columns"),
])
def test_bad_probs(probs, match):
    with pytest.raises(ValueError, match=match):
        nc.ece(probs, np.array([0, 1]), interval=None)


def test_row_sum_tolerance_is_1e6():
    p = BAD_P.copy()
    p[0] += [5e-7, 0.0]
    nc.ece(p, np.array([0, 1]), interval=None)  # within 1e-6: accepted
    p[0] += [2e-6, 0.0]
    with pytest.raises(ValueError, match="sum to 1 within 1e-06"):
        nc.ece(p, np.array([0, 1]), interval=None)


def test_bad_logits():
    with pytest.raises(ValueError, match="logits"):
        nc.ece(logits=np.array([[np.nan, 0.0], [1.0, 2.0]]), target=np.array([0, 1]))
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        nc.ece(BAD_P, np.array([0, 1]), logits=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        nc.ece(target=np.array([0, 1]))


@pytest.mark.parametrize("target, match", [
    (np.array([0, 1, 1]), "target has 3 labels"),
    (np.array([0, 2]), r"target must lie in 0..1"),
    (np.array([-1, 0]), r"target must lie in 0..1"),
    (np.array(["a", "b"]), "classes="),  # string labels need classes=
    (np.ones((2, 3)), r"shape \(2, 2\)"),
    (np.array([[np.nan, 1.0], [0.0, 1.0]]), "target"),
    (None, "target is required"),
])
def test_bad_target(target, match):
    with pytest.raises(ValueError, match=match):
        nc.ece(BAD_P, target, interval=None)


@pytest.mark.parametrize("kwargs, match", [
    (dict(level=90), r"level.*0.9"),
    (dict(level=0.0), "level"),
    (dict(level=1.0), "level"),
    (dict(level=True), "level"),
    (dict(n_bins=0), "n_bins"),
    (dict(n_bins=2.5), "n_bins"),
    (dict(interval="wald"), "interval"),
    (dict(kind="top"), "kind"),
    (dict(strategy="equal"), "strategy"),
    (dict(interval="credible"), "interval"),
    (dict(interval=nc.intervals.Simultaneous()), "interval"),
    (dict(norm="l3"), "norm"),
    (dict(debias=True), "debias"),
    (dict(interval=nc.intervals.Bootstrap(rebin=True)), "rebin"),
    (dict(seed=None), "seed"),
    (dict(cluster=[0, 1, 2]), "cluster"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nc.ece(BAD_P, np.array([0, 1]), **kwargs)


@pytest.mark.parametrize("make, field", [
    (lambda: nc.intervals.Bootstrap(n_boot=1), "n_boot"),
    (lambda: nc.intervals.Bootstrap(method="student"), "method"),
    (lambda: nc.intervals.Inversion(n_boot=50), "n_boot"),
])
def test_bad_interval_settings_are_refused_by_their_option(make, field):
    with pytest.raises(ValueError, match=field):
        nc.ece(BAD_P, np.array([0, 1]), interval=make())


@pytest.mark.parametrize("old", ["n_boot", "method", "rebin", "batch_size", "bootstrap",
                                 "devices", "bound_mode", "channel_radius", "refit_channels",
                                 "progress"])
def test_interval_settings_are_no_keywords_of_the_metric(old):
    with pytest.raises(TypeError, match=old):
        nc.ece(BAD_P, np.array([0, 1]), **{old: 1})


def test_positive_class_needs_two_classes():
    with pytest.raises(ValueError, match="positive_class"):
        nc.ece(np.full((2, 3), 1 / 3), np.array([0, 1]), kind="positive_class", interval=None)


def test_true_label_ece_rejects_non_distributions():
    with pytest.raises(ValueError, match="rows of target must sum to 1"):
        nc.true_label_ece(BAD_P, np.array([[0.5, 0.6], [0.5, 0.5]]), interval=None)
    with pytest.raises(ValueError, match="form"):
        nc.true_label_ece(BAD_P, np.array([[0.5, 0.5], [0.5, 0.5]]), form="exact")


def test_targets_outside_unit_interval_are_accepted():
    # corrected targets may leave [0, 1] (declared by kind='corrected'; issue 23)
    T = nc.targets.from_matrix([[1.3, -0.3], [-0.2, 1.2]], kind="corrected")
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        nc.ece(BAD_P, T.values, n_bins=2, interval=None)
    est = nc.ece(BAD_P, T, n_bins=2, interval=None)
    # bin 1 holds both items (conf .6, .7): mean conf .65, mean target (1.3 + 1.2)/2
    assert value(est) == pytest.approx(abs(1.25 - 0.65), abs=ATOL)


def test_unused_parameters_are_gone():
    assert "n" not in inspect.signature(replicate_weights).parameters
    assert "n_bins" not in inspect.signature(binned_estimate._jackknife_items).parameters


def test_paper_bin_counts_are_keyed_by_readable_names():
    assert nc.metrics.PAPER_N_BINS == {"ambiguous_ground_truth": 15, "set_mass_conformal": 25,
                                       "lwcal": 15, "noisy_label_calibration": 10}
    doc = " ".join(nc.ece.__doc__.split())
    assert "Confidence Calibration under Ambiguous Ground Truth" in doc
    assert "LWCal" in doc and "Adaptive Set-Mass Calibration" in doc


def test_bound_options_are_checked_and_belong_to_their_mode():
    opts = nc.intervals.Bound(same_sample=False)
    assert (opts.mode, opts.channel_radius, opts.true_channels, opts.same_sample,
            opts.kind) == ("binned_only", None, None, False, "auto")
    with pytest.raises(ValueError, match="same_sample must be True or False"):
        nc.intervals.Bound(same_sample="no")
    with pytest.raises(ValueError, match="mode='radius' needs"):
        nc.intervals.Bound(mode="radius", same_sample=False)
    A = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]] * 10)
    t = nc.targets.corrected(A, a=[0.1] * 3, b=[0.9] * 3)
    z = np.linspace(0.05, 0.95, 40)
    wide = nc.ece(z, t, interval=nc.intervals.Bound(same_sample=True))
    narrow = nc.ece(z, t, interval=nc.intervals.Bound(same_sample=False))
    assert wide.details["sampling_radius"] > narrow.details["sampling_radius"]
    assert wide.details["same_sample"] is True


def test_one_n_bins_rule_for_metrics_and_calibrators():
    z, y = np.array([0.2, 0.8]), np.array([0, 1])
    assert nc.ece(z, y, n_bins=20, interval=None).details["n_bins"] == 20
    for call in (lambda: nc.ece(z, y, n_bins=21, interval=None),  # was allowed up to 100
                 lambda: nc.calibrators.HistogramBinning(n_bins=21).fit(probs=z, target=y)):
        with pytest.raises(ValueError, match="n_bins=21 is far above the 2 item"):
            call()


def test_slope_and_bootstrap_messages_name_their_arguments():
    with pytest.raises(ValueError, match=r"^probs: "):
        nc.calibration_slope(np.array([1.0, 0.5]), np.array([1, 0]))
    from noisycal.intervals import bootstrap
    from noisycal.metrics.scores import weighted_mean
    with pytest.raises(ValueError, match=r"^arrays: "):
        bootstrap(weighted_mean)
