"""Simulation-based calibration: the uniformity tests, the design, and SBC runs of
Dawid–Skene that pass with the right prior and fail with a wrong one."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import noisycal as nc
from noisycal.annotators.checks.sbc import SBC_MODELS, _design, rank_uniformity
from noisycal.engines.density import nuts_program

SIZES = dict(n_items=30, n_annotators=3, n_classes=2, n_sims=50, thin=3,
             method=nc.engines.NUTS(num_chains=2, num_warmup=150, num_samples=150,
                                    rhat_threshold=1.05))


def test_chi_square_by_hand_and_exactly_uniform_ranks():
    # L = 3 (ranks 0..3), 2 bins {0, 1} and {2, 3}; 8 simulations
    ranks = np.array([[0, 0], [1, 1], [2, 2], [3, 3], [0, 3], [1, 2], [2, 1], [3, 0]])
    t = rank_uniformity(ranks, 3, n_bins=2, seed=0)
    assert t["chi2"].tolist() == [0.0, 0.0]  # 4 and 4 in each column
    ranks = np.array([[0], [1], [0], [1], [0], [1], [2], [3]])  # 6 low, 2 high
    t = rank_uniformity(ranks, 3, n_bins=2, seed=0)
    assert t.loc[0, "chi2"] == pytest.approx(2.0)  # (6-4)^2/4 + (2-4)^2/4
    assert t.loc[0, "chi2_p"] == pytest.approx(stats.chi2.sf(2.0, 1))


def test_uneven_bins_get_exact_expected_counts():
    # L = 4: five rank values in 2 bins -> widths 3 (0, 1, 2) and 2 (3, 4)
    ranks = np.repeat(np.arange(5), 20)[:, None]  # exactly uniform, 100 simulations
    t = rank_uniformity(ranks, 4, n_bins=2, seed=0)
    assert t.loc[0, "chi2"] == pytest.approx(0.0, abs=1e-12)


def test_ecdf_p_value_is_uniform_under_the_null_and_small_for_piled_ranks():
    rng = np.random.default_rng(0)
    ranks = rng.integers(0, 51, (40, 200))  # 200 parameters with uniform ranks, L = 50
    t = rank_uniformity(ranks, 50, seed=1)
    # p-values of true nulls: about uniform (a level-0.05 test rejects ~5%)
    assert 0.01 <= np.mean(t["ecdf_p"] < 0.05) <= 0.10
    assert 0.01 <= np.mean(t["chi2_p"] < 0.05) <= 0.10
    piled = np.minimum(rng.integers(0, 51, (40, 1)), 10)  # ranks piled low
    t = rank_uniformity(piled, 50, seed=1)
    assert t.loc[0, "ecdf_p"] < 1e-3 and t.loc[0, "chi2_p"] < 1e-6


def test_design_rates_each_item_by_distinct_annotators():
    rng = np.random.default_rng(0)
    item, ann = _design(10, 5, 3, None, rng)
    assert item.tolist() == np.repeat(np.arange(10), 3).tolist()
    assert all(np.unique(ann[item == i]).size == 3 for i in range(10))
    with pytest.raises(ValueError, match="ratings_per_item"):
        _design(10, 5, 6, None, rng)
    with pytest.raises(ValueError, match="design"):
        _design(3, 2, None, (np.array([0, 1]), np.array([0, 1])), rng)  # item 2 unrated


@pytest.fixture(scope="module")
def runs():  # noqa: ANN201
    right = nc.annotators.sbc(nc.DawidSkene(), seed=0, **SIZES)
    before = len(nuts_program.PROGRAMS)
    wrong = nc.annotators.sbc(nc.DawidSkene(), seed=1,
                              prior_model=nc.DawidSkene(alpha=[12.0, 1.0]), **SIZES)
    return right, wrong, before, len(nuts_program.PROGRAMS)


def test_sbc_of_dawid_skene_passes_uniformity(runs):
    right = runs[0]
    # uniform ranks; short chains leave a few fits above R-hat 1.05 (3 of 50 at seed 0),
    # which the status says (any failed fit: 'fits_failed')
    assert "non_uniform" not in right.statuses, right.message
    assert right.statuses == (("fits_failed",) if right.n_failed else ("ok",))
    assert right.ranks.shape == (50, 14) and right.n_draws == 100
    assert right.ranks.to_numpy().min() >= 0 and right.ranks.to_numpy().max() <= 100
    assert right.tests["chi2_p"].min() > 0.01 / 28
    assert right.tests["ecdf_p"].min() > 0.01 / 28
    assert right.n_failed <= 5  # short chains: a few fits above R-hat 1.05


def test_a_wrong_prior_is_flagged_non_uniform(runs):
    wrong = runs[1]
    assert wrong.status == "non_uniform"
    assert "prevalence[0, 0]" in wrong.message
    assert wrong.tests.loc["prevalence[0, 0]", "chi2_p"] < 1e-6
    # the truth's prevalence of class 0 sits above most posterior draws
    assert wrong.ranks["prevalence[0, 0]"].mean() > 0.7 * wrong.n_draws


def test_repeated_fits_reuse_one_compiled_program(runs):
    right, wrong, before, after = runs
    assert after == before  # the second study compiled nothing new
    sec = right.diagnostics["seconds"].to_numpy()
    assert np.median(sec[1:]) < 5.0


def test_rank_histogram_plot(runs):
    axes = runs[0].plot(["prevalence[0, 0]", "confusion[0, 0, 0]"])
    assert len(axes) == 2
    assert len(axes[0].patches) == runs[0].tests["chi2_df"].iloc[0] + 1
    with pytest.raises(ValueError, match="params names unknown"):
        runs[0].plot(["nope"])


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match="SBC_MODELS"):
        nc.annotators.sbc(nc.GroupedDawidSkene(), n_items=5, n_annotators=2, n_classes=2)
    with pytest.raises(ValueError, match="prior_model"):
        nc.annotators.sbc(nc.DawidSkene(), n_items=5, n_annotators=2, n_classes=2,
                          prior_model=nc.OneCoinDawidSkene())
    assert {c.__name__ for c in SBC_MODELS} >= {"DawidSkene", "OneCoinDawidSkene",
                                                "ItemDifficultyModel"}


def test_the_dawid_skene_guard_relabels_a_mirrored_draw():
    from noisycal.annotators.checks.sbc import _ds_relabel

    # 4 items x 2 annotators, votes 0, 0, 1, 1; draw 0 vote-aligned, draw 1 its mirror
    item, ann = np.repeat(np.arange(4), 2), np.tile(np.arange(2), 4)
    label = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    good = np.array([[0.9, 0.1], [0.2, 0.8]])
    mirror = good[::-1]  # latent classes swapped: the rows
    conf = np.stack([np.stack([good, good]), np.stack([mirror, mirror])])
    prev = np.array([[[0.7, 0.3]], [[0.3, 0.7]]])
    out, moved = _ds_relabel({"prevalence": prev, "confusion": conf}, item, ann, label,
                             {"n_items": 4, "n_annotators": 2, "n_classes": 2})
    assert moved == 1
    np.testing.assert_allclose(out["prevalence"], [[[0.7, 0.3]], [[0.7, 0.3]]])
    np.testing.assert_allclose(out["confusion"][1], np.stack([good, good]))


def test_a_small_sbc_of_the_hierarchical_model_passes(monkeypatch):
    """A reduced run (20 simulations, its chains often visiting the mirrored labelling,
    which the guard relabels): it catches gross inconsistencies between the simulating
    and the fitted model only. Every simulation reuses one compiled sampler (the prior
    constants are static inputs, as in a fit), so after the first a fit costs well under
    a second."""
    builds = []
    build = nuts_program._build_program
    monkeypatch.setattr(nuts_program, "_build_program",
                        lambda *a, **k: builds.append(1) or build(*a, **k))
    sizes = dict(SIZES, n_sims=20)
    right = nc.annotators.sbc(nc.annotators.HierarchicalDawidSkene(), seed=0, **sizes)
    assert len(builds) <= 1
    # uniform ranks; short chains leave some fits above R-hat 1.05, and then the study
    # is not 'ok': the status says its fits failed their diagnostics
    assert "non_uniform" not in right.statuses, right.message
    assert right.statuses == (("fits_failed",) if right.n_failed else ("ok",))
    # prevalence (2) + confusion (3 x 2 x 2) + sigma (2) scalar entries, 100 kept draws
    assert right.ranks.shape == (20, 16) and right.n_draws == 100
    assert right.tests["chi2_p"].min() > 0.01 / 32
