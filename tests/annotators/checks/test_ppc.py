"""Posterior predictive checks of annotator models: nc.annotators.ppc.

Hand-computed discrepancies on a tiny design; simulations with known truth (a correctly
specified Dawid–Skene model gives ppp-values away from 0 and 1, item-difficulty data
fitted by Dawid–Skene an extreme unanimity ppp); the CIFAR-10N unanimity misfit (data
tests skip when the shared data are absent).
"""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest
from small_nuts import TWO_CHAINS

import noisycal as nc
from noisycal.annotators.checks.discrepancies import (
    DISCREPANCIES,
    discrepancy_rows,
    discrepancy_values,
    make_design,
)

matplotlib.use("Agg")


# ---------------------------------------------------------------- hand-computed values
# items 0..3, annotators 0..2, classes 0..2:
#   item 0: 0 0 0      item 1: 0 1 1      item 2: 2 1 -      item 3: - - 1
ITEM = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
ANNOTATOR = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
LABEL = np.array([0, 0, 0, 0, 1, 1, 2, 1, 1])
SCORES = np.array([0.1, 0.2, 0.8, 0.9])


def _hand_design():
    return make_design(ITEM, ANNOTATOR, n_items=4, n_annotators=3, n_classes=3,
                       scores=SCORES, n_bins=2)


def test_discrepancies_by_hand():
    design = _hand_design()
    rows = discrepancy_rows(design, DISCREPANCIES, np.array(["x", "y", "z"]),
                            np.array(["a", "b", "c"]))
    values = discrepancy_values(LABEL[None], design, DISCREPANCIES)[0]
    got = {f"{d}: {t}": v for (d, t), v in zip(rows, values, strict=True)}
    expected = {
        # items 0, 1 and 2 have two or more ratings; only item 0 is unanimous
        "unanimity: all ratings agree": 1 / 3,
        "distinct_labels: 1 distinct": 1 / 3,
        "distinct_labels: 2 distinct": 2 / 3,
        "distinct_labels: 3 distinct": 0.0,
        # x: 1, 0, 0; y: 1, 1/2, 0; z: 1, 1/2 (item 3 has no other rating)
        "annotator_agreement: x": 1 / 3,
        "annotator_agreement: y": 1 / 2,
        "annotator_agreement: z": 3 / 4,
        # agreeing ordered pairs 6 + 2 + 0 of 6 + 6 + 2
        "pairwise_agreement: all pairs": 8 / 14,
        # P_e = (4/9)^2 + (4/9)^2 + (1/9)^2 = 11/27: (4/7 - 11/27) / (16/27) = 31/112
        "kappa: Fleiss (pooled)": 31 / 112,
        # x, y on items 0-2: p_o = 1/3, p_e = 2/3 1/3 + 1/3 0 = 2/9 -> 1/7
        "kappa: Cohen x vs y": 1 / 7,
        # x, z on items 0-1: p_o = 1/2, p_e = 1 1/2 = 1/2 -> 0
        "kappa: Cohen x vs z": 0.0,
        # y, z on items 0-1: identical labels -> 1
        "kappa: Cohen y vs z": 1.0,
        "class_shares: a": 4 / 9,
        "class_shares: b": 4 / 9,
        "class_shares: c": 1 / 9,
        # bins [0.1, 0.5) (items 0, 1) and [0.5, 0.9] (items 2, 3)
        "score_agreement: score in [0.1, 0.5)": 8 / 12,
        "score_agreement: score in [0.5, 0.9]": 0.0,
    }
    assert list(got) == list(expected)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-14), name


def test_undefined_statistics_are_nan_not_numbers():
    # annotator 2 rates only item 3, which nobody else rates; repeated ratings turn the
    # Cohen kappas off (a pair is not one rating each)
    item = np.array([0, 0, 1, 1, 1, 2])
    ann = np.array([0, 1, 0, 1, 1, 2])
    design = make_design(item, ann, n_items=3, n_annotators=3, n_classes=2)
    assert design.pairs.shape == (0, 2)
    v = discrepancy_values(np.array([[0, 0, 1, 0, 1, 1]]), design,
                           ("annotator_agreement", "kappa"))[0]
    assert np.isnan(v[2]) and np.isfinite(v[:2]).all()
    assert v.shape == (4,)  # three annotators and the pooled kappa


# ---------------------------------------------------------------- simulations
CONF3 = np.array([[[0.8, 0.1, 0.1], [0.15, 0.7, 0.15], [0.1, 0.2, 0.7]],
                  [[0.75, 0.15, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]],
                  [[0.85, 0.1, 0.05], [0.2, 0.65, 0.15], [0.05, 0.15, 0.8]],
                  [[0.7, 0.2, 0.1], [0.1, 0.75, 0.15], [0.15, 0.1, 0.75]]])
PREV3 = [0.3, 0.3, 0.4]


def _difficulty_annotations(n_items, n_annotators, seed):
    """Item-difficulty ratings: half the items easy (every annotator right with
    probability 0.95), half hard (0.4, errors uniform): no Dawid–Skene channel fits both."""
    rng = np.random.default_rng(seed)
    K = 3
    y = rng.choice(K, size=n_items, p=PREV3)
    acc = np.where(rng.random(n_items) < 0.5, 0.95, 0.4)
    right = rng.random((n_items, n_annotators)) < acc[:, None]
    wrong = (y[:, None] + rng.integers(1, K, size=(n_items, n_annotators))) % K
    return nc.Annotations.from_wide(np.where(right, y[:, None], wrong))


def test_correct_model_gives_ppp_away_from_0_and_1():
    ppps = []
    for seed in (0, 1, 2):
        sim = nc.simulate.dawid_skene(400, PREV3, CONF3, seed=seed)
        fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=2), seed=seed)
        check = nc.annotators.ppc(fit, sim.annotations, n_rep=200, seed=seed,
                                  discrepancies=["unanimity", "pairwise_agreement",
                                                 "kappa"])
        assert check.method == "bootstrap_refits" and check.n_rep == 200
        ppps.append(check.table["ppp"].to_numpy())
    ppps = np.array(ppps)
    assert np.all((ppps > 0.025) & (ppps < 0.975)), ppps


def test_em_replicates_carry_the_parameters_uncertainty_or_say_they_do_not():
    sim = nc.simulate.dawid_skene(300, PREV3, CONF3, seed=4)
    fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=2))
    which = ["unanimity", "class_shares"]
    refits = nc.annotators.ppc(fit, sim.annotations, n_rep=300, seed=1, discrepancies=which)
    plug = nc.annotators.ppc(fit, sim.annotations, n_rep=300, seed=1, discrepancies=which,
                             parameters="plug-in")
    assert (refits.method, plug.method) == ("bootstrap_refits", "parametric_bootstrap")
    # class shares: the plug-in replicates vary only by sampling the true classes and
    # labels; the refits add the prevalence's and channels' estimation error, which for a
    # share is of the same order, so the replicated spread grows markedly
    sd_r = refits.replicated.std(axis=0)
    sd_p = plug.replicated.std(axis=0)
    assert np.all(sd_r > 1.1 * sd_p), (sd_r, sd_p)
    # the refits are EM refits on multinomial resamples: the same seed gives the same check
    again = nc.annotators.ppc(fit, sim.annotations, n_rep=300, seed=1, discrepancies=which)
    np.testing.assert_array_equal(again.replicated, refits.replicated)
    with pytest.raises(ValueError, match="parameters must be one of"):
        nc.annotators.ppc(fit, sim.annotations, parameters="bootstrap")
    # a fit that cannot be refitted: 'auto' falls back to the plug-in and says so,
    # 'refits' refuses by name
    mle = nc.DawidSkene().fit(sim.annotations, method="mle")
    auto = nc.annotators.ppc(mle, sim.annotations, n_rep=50, discrepancies="unanimity")
    assert auto.method == "parametric_bootstrap" and "a plug-in check" in auto.message
    with pytest.raises(ValueError, match="parameters='refits'"):
        nc.annotators.ppc(mle, sim.annotations, n_rep=50, parameters="refits")


def test_item_difficulty_misfit_gives_an_extreme_unanimity_ppp():
    ann = _difficulty_annotations(400, 4, seed=0)
    fit = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=2))
    check = nc.annotators.ppc(fit, ann, n_rep=200, seed=0, discrepancies="unanimity")
    row = check.table.iloc[0]
    # easy items are unanimous far more often than one channel per annotator predicts
    assert row["observed"] > row["high"]
    assert row["ppp"] <= 0.01


def test_replicated_shares_match_the_model_and_observed_is_the_data():
    sim = nc.simulate.dawid_skene(300, PREV3, CONF3, seed=5)
    fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=2))
    check = nc.annotators.ppc(fit, sim.annotations, n_rep=300, seed=1,
                              discrepancies="class_shares")
    # class shares implied by the fitted model: prevalence @ mean channel (equal numbers
    # of ratings per annotator)
    implied = fit.group_prevalence[0] @ fit.confusion.mean(0)
    # replicated mean of 300 replicates of 1200 ratings: SE about 0.001
    np.testing.assert_allclose(check.table["replicated_mean"], implied, rtol=0, atol=0.006)
    counts = np.bincount(sim.annotations.engine_arrays().label, minlength=3)
    np.testing.assert_allclose(check.table["observed"], counts / counts.sum(), rtol=0,
                               atol=1e-14)
    assert np.all(check.table["low"] <= check.table["replicated_mean"])
    assert np.all(check.table["replicated_mean"] <= check.table["high"])


def test_same_seed_same_check_and_plot():
    sim = nc.simulate.dawid_skene(150, PREV3, CONF3, seed=2)
    fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=1))
    scores = np.random.default_rng(0).dirichlet(np.ones(3), size=150)
    a = nc.annotators.ppc(fit, sim.annotations, n_rep=50, seed=3, scores=scores)
    b = nc.annotators.ppc(fit, sim.annotations, n_rep=50, seed=3, scores=scores)
    np.testing.assert_array_equal(a.replicated, b.replicated)
    assert a.replicated.shape == (50, len(a.table))
    assert set(a.table["discrepancy"]) == set(DISCREPANCIES)
    assert a.table.attrs["level"] == 0.9
    assert a.summary().attrs["n_rep"] == 50 and a.summary().attrs["status"] == "ok"
    assert a.to_frame().equals(a.table)
    ax = a.plot()
    assert len(ax.get_yticklabels()) == len(a.table)
    ax = a.plot(discrepancy="kappa")
    assert len(ax.get_yticklabels()) == 1 + 6  # Fleiss and the 6 pairs of 4 annotators
    matplotlib.pyplot.close("all")


def test_grouped_fit_replicates_with_each_groups_prevalence():
    sim = nc.simulate.dawid_skene(300, PREV3, CONF3, seed=7)
    groups = np.arange(300) % 2
    fit = nc.GroupedDawidSkene().fit(sim.annotations, groups=groups,
                                     method=nc.engines.EM(n_starts=2))
    check = nc.annotators.ppc(fit, sim.annotations, n_rep=100, seed=0,
                              discrepancies="class_shares")
    implied = fit.group_prevalence.mean(0) @ fit.confusion.mean(0)  # equal group sizes
    np.testing.assert_allclose(check.table["replicated_mean"], implied, rtol=0, atol=0.01)
    per_group = nc.GroupedDawidSkene(channels="group").fit(sim.annotations, groups=groups,
                                                           method=nc.engines.EM(n_starts=2))
    check = nc.annotators.ppc(per_group, sim.annotations, n_rep=50, seed=0,
                              discrepancies="annotator_agreement")
    assert len(check.table) == per_group.confusion.shape[0]  # one per annotator|group


def test_nuts_fit_uses_its_posterior_draws():
    sim = nc.simulate.dawid_skene(40, [0.4, 0.6], CONF3[:3, :2, :2] / CONF3[:3, :2, :2].sum(
        -1, keepdims=True), seed=3)
    with warnings.catch_warnings():  # short chains: the check needs draws, not convergence
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.NUTS(**TWO_CHAINS))
    check = nc.annotators.ppc(fit, sim.annotations, n_rep=500, seed=0,
                              discrepancies="unanimity")
    assert check.method == "posterior"
    # at most one replicate per draw
    assert check.n_rep == TWO_CHAINS["num_chains"] * TWO_CHAINS["num_samples"] < 500
    assert 0.0 < check.table["ppp"].iloc[0] < 1.0


@pytest.mark.parametrize("kwargs, match", [
    ({"discrepancies": "unanimty"}, "discrepancies"),
    ({"discrepancies": []}, "discrepancies"),
    ({"discrepancies": "score_agreement"}, "scores"),
    ({"scores": np.ones(3)}, "scores"),
    ({"scores": np.full(60, np.nan)}, "scores"),
    ({"n_rep": 1}, "n_rep"),
    ({"level": 90}, "level"),
    ({"n_bins": 0}, "n_bins"),
    ({"seed": None}, "seed"),
])
def test_bad_arguments_name_themselves(kwargs, match):
    sim = nc.simulate.dawid_skene(60, PREV3, CONF3, seed=0)
    fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=1))
    with pytest.raises(ValueError, match=match):
        nc.annotators.ppc(fit, sim.annotations, **kwargs)


def test_bad_fit_or_annotations():
    sim = nc.simulate.dawid_skene(60, PREV3, CONF3, seed=0)
    fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=1))
    with pytest.raises(ValueError, match="fit"):
        nc.annotators.ppc("fit", sim.annotations)
    with pytest.raises(ValueError, match="annotations"):
        nc.annotators.ppc(fit, sim.annotations.to_wide())


# ---------------------------------------------------------------- CIFAR-10N
@pytest.fixture(scope="module")
def cifar10n():
    try:
        return nc.datasets.load_cifar10n()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.data
@pytest.mark.slow
def test_cifar10n_unanimity_misfit(cifar10n):
    """Dawid–Skene under-predicts unanimous CIFAR-10N items (3 ratings each).

    Measured (EM, parametric bootstrap, 500 replicates, seed 0): observed 0.60356,
    replicated mean 0.59644, 90% range [0.59274, 0.59978], ppp 0.002.
    """
    ann = nc.Annotations.from_wide(cifar10n.labels)
    fit = nc.DawidSkene(n_classes=10).fit(ann, method=nc.engines.EM(n_starts=1), seed=0)
    check = nc.annotators.ppc(fit, ann, n_rep=200, seed=0,
                              discrepancies=["unanimity", "distinct_labels"])
    t = check.table.set_index("term")
    unanimous = t.loc["all ratings agree"]
    assert unanimous["observed"] == pytest.approx(30178 / 50000, abs=0)
    assert unanimous["observed"] > unanimous["high"]
    assert unanimous["ppp"] <= 0.01
    # the other tail too: three different labels are more common than replicated
    assert t.loc["3 distinct", "ppp"] <= 0.01
