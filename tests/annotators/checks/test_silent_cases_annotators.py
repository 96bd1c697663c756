"""Nothing silent in the annotator checks: tied scores, too many groups or bins, a forced
chi-square on sparse tables, failed SBC fits, a thinning beyond the chains, flagged fits
in a comparison, LOO without draws, counts without annotators, and short reprs."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

import noisycal as nc
from noisycal.annotators import noise_check, score_groups, with_noise_check
from noisycal.annotators.checks import sbc as sbc_module
from noisycal.annotators.checks.discrepancies import make_design
from noisycal.annotators.checks.noise_check import REJECTED, SPARSE, NoiseCheck

CONF = np.tile([[0.8, 0.2], [0.25, 0.75]], (3, 1, 1))


@pytest.fixture(scope="module")
def sim150():
    return nc.simulate.dawid_skene(150, [0.5, 0.5], CONF, seed=0).annotations


@pytest.fixture(scope="module")
def sparse_chi2(sim150):
    """test='chi2' forced on 150 items in 5 groups (tables 'auto' finds too sparse)."""
    scores = np.random.default_rng(0).random(150)
    with pytest.warns(nc.NumericalWarning, match="chi-square reference that is unreliable"):
        res = noise_check(sim150, scores, test="chi2", method=nc.engines.EM(n_starts=2))
    return res


# ----------------------------------------------------------------- 1. noise_check
def test_tied_scores_are_never_split_by_row_order():
    # sorted 0.1 | 0.5 x 4 | 0.9: the equal-count cut after 3 items falls inside the
    # tied 0.5s and moves to the nearer change of score (both 2 away: the lower one)
    assert score_groups([0.1, 0.5, 0.5, 0.5, 0.9, 0.5], 2).tolist() == [0, 1, 1, 1, 1, 1]
    z = np.round(np.random.default_rng(1).random(200), 1)  # 11 values, many ties
    g = score_groups(z, 5)
    for value in np.unique(z):
        assert np.unique(g[z == value]).size == 1  # each tie in one group
    perm = np.random.default_rng(2).permutation(200)
    np.testing.assert_array_equal(score_groups(z[perm], 5), g[perm])  # order-free
    # untied scores: exactly the equal-count groups
    u = np.random.default_rng(3).random(101)
    np.testing.assert_array_equal(score_groups(u, 5), nc.annotators.equal_count_groups(u, 5))
    assert score_groups(np.full(9, 0.3), 3).tolist() == [0] * 9


def test_constant_scores_are_not_tested(sim150):
    res = noise_check(sim150, np.full(150, 0.5), test="chi2")
    assert (res.status, res.method, res.df, res.n_groups) == ("not_tested", "none", 0, 1)
    assert np.isnan(res.p_value) and np.isnan(res.statistic)
    assert res.message == ("was not tested: every item has the same score, so the scores "
                           "do not vary and there is one score group")
    assert res.details["n_groups_requested"] == 5 and res.statuses == ("not_tested",)


def test_too_many_groups_for_the_items_are_refused(sim150):
    scores = np.random.default_rng(0).random(150)
    with pytest.raises(ValueError, match=r"^n_groups: 150 score groups of 150 items leave 1 "
                                         r"item\(s\) per group; .* so at most 15 groups"):
        noise_check(sim150, scores, n_groups=150)
    with pytest.raises(ValueError, match=r"^n_groups: 16 score groups"):
        noise_check(sim150, scores, n_groups=16)  # 150 < 5 x 2 x 16


def test_forced_chi_square_on_sparse_tables_keeps_the_choice_with_a_status(sparse_chi2):
    res = sparse_chi2
    assert res.method == "chi2" and res.details["min_expected_count"] < 5
    assert res.p_value == pytest.approx(chi2.sf(res.statistic, res.df), rel=1e-12)
    assert (res.status, res.statuses) == (SPARSE, (SPARSE,)) and not res.rejected
    assert res.message.startswith("was tested against a chi-square reference that is "
                                  "unreliable on these sparse tables (the smallest expected")
    assert "test='auto' would use the bootstrap Bartlett correction here (test='bartlett')" \
        in res.message and "test='bootstrap'" in res.message


def test_a_rejection_on_sparse_tables_keeps_both_statuses(sim150):
    check = NoiseCheck(50.0, 24, 1e-5, "chi2", 0.01, REJECTED, "the noise check rejects: x",
                       pd.DataFrame(), 0, {"items": sim150.items}, (SPARSE,))
    assert check.statuses == (SPARSE, REJECTED) and check.status == SPARSE
    assert check.rejected  # and the target still carries the rejection
    target = nc.targets.from_matrix(np.full((150, 2), 0.5), items=sim150.items)
    assert with_noise_check(target, check).status == REJECTED


def test_tied_scores_give_fewer_groups_with_disjoint_score_ranges(sim150, sparse_chi2):
    z = np.repeat([0.1, 0.3, 0.5, 0.7, 0.9], 30)  # five values for seven groups
    with warnings.catch_warnings():  # a chi-square on these tables is flagged sparse
        warnings.simplefilter("ignore", nc.NumericalWarning)
        res = noise_check(sim150, z, n_groups=7, test="chi2", method=nc.engines.EM(n_starts=2))
    assert res.n_groups == 5 and res.details["n_groups_requested"] == 7
    assert res.groups["n_items"].tolist() == [30] * 5
    assert res.groups["score_low"].tolist() == res.groups["score_high"].tolist() \
        == [0.1, 0.3, 0.5, 0.7, 0.9]
    assert "5 score groups (7 requested; tied scores are kept together)" in repr(res)


def test_noise_check_prints_a_short_summary(sparse_chi2):
    text = repr(sparse_chi2)
    assert str(sparse_chi2) == text and len(text) < 700 and text.count("\n") == 3
    lines = text.splitlines()
    assert lines[0] == "NoiseCheck: class-conditional noise, 5 score groups"
    assert lines[1] == (f"  test chi2: LR {sparse_chi2.statistic:.4g} on 24 df, "
                        f"p = {sparse_chi2.p_value:.4g}")
    assert lines[2] == "  status='sparse_tables'"
    # the tables are still there
    assert sparse_chi2.groups.shape == (5, 7)
    assert sparse_chi2.details["confusion_group"].shape == (5, 3, 2, 2)


# ----------------------------------------------------------------- 2. sbc
TINY = dict(n_items=4, n_annotators=2, n_classes=2)


def _no_fitting(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("simulated or fitted before the settings were checked")

    monkeypatch.setattr(sbc_module, "sample_nuts", boom)
    monkeypatch.setattr(sbc_module, "_simulate", boom)


def test_sbc_refuses_thin_above_num_samples_before_fitting(monkeypatch):
    _no_fitting(monkeypatch)
    nuts = nc.engines.NUTS(num_chains=2, num_warmup=3, num_samples=10)
    with pytest.raises(ValueError, match=r"^thin: keeping every 11-th draw of chains of "
                                         r"num_samples=10 keeps only the first draw of each "
                                         r"chain \(ranks in 0\.\.2\)"):
        nc.annotators.sbc(nc.DawidSkene(), n_sims=2, thin=11, method=nuts, **TINY)


def _fake_fits(monkeypatch, fit_statuses, ranks):
    """sbc with each simulation's prior draw and NUTS fit replaced: the given status and
    rank of every parameter (prevalence (1, 2) and confusion (2, 2, 2): 10 entries)."""
    calls = iter(zip(fit_statuses, ranks, strict=True))
    truth = {"prevalence": np.full((1, 2), 0.5), "confusion": np.full((2, 2, 2), 0.5),
             "label": np.zeros(8, np.int64)}
    monkeypatch.setattr(sbc_module, "_simulate", lambda *args: truth)

    def fake(spec, truth, item, annotator, fit_kw, key, nuts, thin):
        status, rank = next(calls)
        names, _ = sbc_module._entries(truth, spec.params, 0)
        return {"ranks": np.full(len(names), rank), "names": names,
                "max_rhat": 1.0 if status == "ok" else 1.3, "num_divergences": 0,
                "relabelled_draws": 0, "status": status}

    monkeypatch.setattr(sbc_module, "_one_fit", fake)


def test_sbc_with_a_failed_fit_is_not_ok(monkeypatch):
    nuts = nc.engines.NUTS(num_chains=2, num_warmup=3, num_samples=10, rhat_threshold=1.05)
    _fake_fits(monkeypatch, ["ok", "not_converged", "ok", "ok"], [0, 7, 14, 20])
    res = nc.annotators.sbc(nc.DawidSkene(), n_sims=4, thin=1, method=nuts, **TINY)
    assert res.n_draws == 20 and res.n_failed == 1
    assert (res.status, res.statuses) == ("fits_failed", ("fits_failed",))
    assert res.message.startswith("1 of 4 fits failed their diagnostics (R-hat > 1.05, "
                                  "divergences or R-hat unavailable: simulations [1])")


def test_sbc_keeps_non_uniform_ranks_and_failed_fits_together(monkeypatch):
    nuts = nc.engines.NUTS(num_chains=2, num_warmup=3, num_samples=10, rhat_threshold=1.05)
    _fake_fits(monkeypatch, ["not_converged"] + ["ok"] * 39, [0] * 40)  # ranks piled at 0
    res = nc.annotators.sbc(nc.DawidSkene(), n_sims=40, thin=1, method=nuts, **TINY)
    assert res.statuses == ("non_uniform", "fits_failed") and res.status == "non_uniform"
    assert "ranks not uniform" in res.message and "1 of 40 fits failed" in res.message


# ----------------------------------------------------------------- 3. compare
@pytest.fixture(scope="module")
def em_pair(sim150):
    em = nc.engines.EM(n_starts=2)
    with pytest.warns(nc.ConvergenceWarning):
        stopped = nc.DawidSkene(2).fit(sim150, method=nc.engines.EM(n_starts=1, max_iter=2),
                                       seed=0)
    return stopped, nc.OneCoinDawidSkene(2).fit(sim150, method=em, seed=0)


def test_a_comparison_with_a_not_converged_fit_is_not_ok(sim150, em_pair):
    stopped, good = em_pair
    assert stopped.status == "not_converged" and good.status == "ok"
    res = nc.annotators.compare({"ds": stopped, "one_coin": good}, sim150, ic="bic")
    assert (res.status, res.statuses) == ("not_converged", ("not_converged",))
    assert res.message.startswith("model 'ds': the fit's status is not_converged (")
    assert "status='not_converged'" in repr(res).splitlines()[0]
    # every flagged fit's statuses, most severe first; a boundary fit is usable
    weak = dataclasses.replace(good, status="weakly_identified",
                               statuses=("weakly_identified", "boundary"))
    both = nc.annotators.compare({"ds": stopped, "one_coin": weak}, sim150, ic="aic")
    assert both.statuses == ("not_converged", "weakly_identified")
    assert "statuses=('not_converged', 'weakly_identified')" in repr(both).splitlines()[0]
    edge = dataclasses.replace(good, status="boundary", statuses=("boundary",))
    assert nc.annotators.compare({"a": good, "b": edge}, sim150, ic="bic").statuses == ("ok",)


# ----------------------------------------------------------------- 4. ppc
def test_ppc_refuses_more_score_bins_than_items(sim150, em_pair):
    fit = em_pair[1]
    scores = np.random.default_rng(0).random(150)
    with pytest.raises(ValueError, match=r"^n_bins: 1000 score bins of 150 items .* at most "
                                         r"the number of items \(150\)"):
        nc.annotators.ppc(fit, sim150, scores=scores, n_bins=1000)


def test_ppc_score_bins_without_items_are_merged():
    # quantile edges 0, 1.5, 2, 3.5, 5: [1.5, 2) holds nothing (the 2s start the next bin)
    z = np.array([0.0, 1.0, 2.0, 2.0, 3.0, 4.0, 5.0])
    d = make_design(np.arange(7), np.zeros(7, int), n_items=7, n_annotators=1, n_classes=2,
                    scores=z, n_bins=4)
    np.testing.assert_array_equal(d.bin_edges, [0.0, 2.0, 3.5, 5.0])
    assert d.score_bin.tolist() == [0, 0, 1, 1, 1, 2, 2]


def test_as_many_score_bins_as_tied_items_leave_no_bin_empty():
    # 72 distinct values: the quantile edges alone made 120 bins, 48 of them empty
    z = np.round(np.random.default_rng(4).random(150), 2)
    d = make_design(np.arange(150), np.zeros(150, int), n_items=150, n_annotators=1,
                    n_classes=2, scores=z, n_bins=150)
    held = np.bincount(d.score_bin, minlength=d.bin_edges.size - 1)
    assert held.size == d.bin_edges.size - 1 == np.unique(z).size and held.min() >= 1


# ----------------------------------------------------------------- 5. summary(loo=True)
def test_summary_loo_on_an_em_fit_is_refused(em_pair):
    fit = em_pair[1]
    with pytest.raises(ValueError, match=r"^loo: PSIS-LOO \(elpd_loo\) needs posterior "
                                         r"draws, and this is an 'em' fit without them"):
        fit.summary(loo=True)
    assert fit.summary(loo=False).header["aic"] == pytest.approx(fit.aic)
    assert "elpd_loo" not in fit.summary().header


# ----------------------------------------------------------------- 6. from_counts
def test_counts_do_not_claim_annotators():
    ann = nc.Annotations.from_counts(np.array([[40, 23], [10, 5]]))
    assert repr(ann) == ("Annotations(n_items=2, n_classes=2, n_ratings=78, counts per "
                         "item: no annotator ids)")
    assert "n_annotators" not in repr(ann)
    wide = nc.Annotations.from_wide(np.array([[0, 1], [1, 1]]))
    assert repr(wide) == "Annotations(n_items=2, n_annotators=2, n_classes=2, n_ratings=4)"

