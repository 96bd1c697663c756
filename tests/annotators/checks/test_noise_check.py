"""The test of class-conditional noise (``nc.annotators.noise_check``) and its Target status.

Simulations use the generators of ``benchmarks/noise_check_study.py`` (its measured size
and power table is in benchmarks/README.md); the CIFAR-10N test needs the shared data.
"""

import dataclasses
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax
from scipy.stats import chi2

import noisycal as nc
from noisycal.annotators import noise_check, score_groups, with_noise_check
from noisycal.annotators.checks.noise_check import REJECTED, NoiseCheck


def _study():
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "noise_check_study.py"
    spec = importlib.util.spec_from_file_location("noise_check_study", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["noise_check_study"] = mod
    spec.loader.exec_module(mod)
    return mod


STUDY = _study()


def _check(*args, **kwargs):
    """noise_check with its warnings (a rejection, a fit at a boundary) recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = noise_check(*args, **kwargs)
    return res, caught


@pytest.fixture(scope="module")
def binary_null():
    return STUDY.binary_data(1000, 0.0, 0)


# ----------------------------------------------------------------------- the groups
def test_score_groups_cut_positive_class_probabilities_by_value():
    # sorted: 0.1 (item 1), 0.3 (item 3) | 0.5 (item 2), 0.9 (item 0)
    assert score_groups([0.9, 0.1, 0.5, 0.3], 2).tolist() == [1, 0, 1, 0]


def test_score_groups_rank_confidences_that_round_to_one_by_the_mass_outside():
    # the top probabilities of rows 0, 1 and 3 are all exactly 1.0 in float64; the mass
    # outside the top class orders them 0 (row 0) < 1e-20 (row 3) < 1e-17 (row 1), so the
    # least confident are row 2 (0.6) and row 1; ranking the rounded maxima would break the
    # tie by position and put rows 2 and 0 in the low group
    probs = np.array([[1.0, 0.0], [1.0, 1e-17], [0.6, 0.4], [1.0, 1e-20]])
    assert probs.max(1).tolist() == [1.0, 1.0, 0.6, 1.0]
    assert score_groups(probs, 2).tolist() == [1, 0, 0, 1]


# ----------------------------------------------------------------------- the statistic
def test_statistic_df_and_p_value_against_the_public_fits(binary_null):
    ann, z = binary_null
    res, caught = _check(ann, z, test="chi2")
    g = score_groups(z, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared = nc.GroupedDawidSkene(2).fit(ann, groups=g, method=nc.engines.EM(n_starts=5),
                                             seed=1)
        free = nc.GroupedDawidSkene(2, channels="group").fit(ann, groups=g,
                                                             method=nc.engines.EM(n_starts=10),
                                                             seed=1)
    d = res.details
    # df: 3 annotators x 5 groups minus 3 shared channels, 2 free entries each
    assert res.df == (15 - 3) * 2 * 1 == free.n_params - shared.n_params
    assert res.statistic == pytest.approx(2 * (d["loglik_group"] - d["loglik_shared"]),
                                          rel=1e-12)
    assert d["loglik_shared"] == pytest.approx(shared.loglik, abs=1e-4)
    # the per-group EM started at the shared fit's posteriors reaches the multistart MLE
    assert d["loglik_group"] == pytest.approx(free.loglik, abs=1e-3)
    assert res.groups["lr"].sum() == pytest.approx(res.statistic, rel=1e-9)
    assert res.p_value == pytest.approx(chi2.sf(res.statistic, 24), rel=1e-12)
    # chi-square forced on tables 'auto' finds sparse: run as asked, status sparse_tables
    assert (res.method, res.n_boot, res.status) == ("chi2", 0, "sparse_tables")
    assert any(issubclass(w.category, nc.NumericalWarning) for w in caught)
    assert res.groups["n_items"].tolist() == [200] * 5
    assert d["confusion_group"].shape == (5, 3, 2, 2)


def test_auto_uses_chi_square_only_for_dense_tables(binary_null):
    ann, z = binary_null
    res, _ = _check(ann, z, n_groups=5)  # extreme groups: a class with prevalence ~ 0.05
    assert res.details["min_expected_count"] < 5 and res.method == "bartlett"
    assert res.n_boot == 19 and res.details["boot_statistics"].shape == (19,)
    factor = res.details["bartlett_factor"]
    assert factor == pytest.approx(res.details["boot_statistics"].mean() / res.df)
    assert res.p_value == pytest.approx(chi2.sf(res.statistic / factor, res.df))
    # accurate annotators on balanced groups: every expected cell count >= 5
    conf = np.tile([[0.8, 0.2], [0.25, 0.75]], (3, 1, 1))
    sim = nc.simulate.dawid_skene(1500, [0.5, 0.5], conf, seed=3)
    scores = np.random.default_rng(3).random(1500)
    dense, _ = _check(sim.annotations, scores, n_groups=3)
    assert dense.details["min_expected_count"] >= 5 and dense.method == "chi2"


def test_bootstrap_p_value_counts_the_replicates(binary_null):
    ann, z = binary_null
    res, _ = _check(ann, z, test="bootstrap", n_boot=39, seed=4)
    boot = res.details["boot_statistics"]
    assert res.p_value == (1 + np.sum(boot >= res.statistic)) / 40
    assert np.all(boot >= 0) and res.details["n_boot_failed"] == 0
    # the null distribution of LR is close to chi-square(24) in the binary toy
    assert abs(boot.mean() - 24) < 3 * np.sqrt(48 / 39)


def test_same_seed_same_result_and_fit_reuse(binary_null):
    ann, z = binary_null
    a, _ = _check(ann, z, test="bartlett", seed=7)
    b, _ = _check(ann, z, test="bartlett", seed=7)
    assert a.p_value == b.p_value and a.statistic == b.statistic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nc.GroupedDawidSkene(2).fit(ann, groups=score_groups(z, 5),
                                          method=nc.engines.EM(n_starts=5), seed=0)
    c, _ = _check(ann, z, fit=fit, test="bartlett", seed=7)
    assert c.statistic == pytest.approx(a.statistic, abs=1e-4)
    assert c.p_value == pytest.approx(a.p_value, rel=1e-3)


# ----------------------------------------------------------------------- size and power
@pytest.mark.slow
def test_size_under_class_conditional_noise():
    # 60 seeded null data sets (the benchmark's binary cell at n = 1000): p-values are
    # uniform when the reference is right; tolerances are 3 binomial / uniform s.e.
    runs = 60
    p_chi2, p_bart = [], []
    for seed in range(runs):
        ann, z = STUDY.binary_data(1000, 0.0, 100 + seed)
        res, _ = _check(ann, z, test="bartlett", seed=seed)
        p_bart.append(res.p_value)
        p_chi2.append(chi2.sf(res.statistic, res.df))
    for p in (np.array(p_bart), np.array(p_chi2)):
        rate = np.mean(p <= 0.10)
        assert rate <= 0.10 + 3 * np.sqrt(0.10 * 0.90 / runs)
        assert abs(p.mean() - 0.5) <= 3 * np.sqrt(1 / 12 / runs)


@pytest.mark.slow
def test_power_against_noise_that_rises_on_hard_items():
    # error rates +- 0.1 around the published ones, higher near z = 0.5 (slope 0.2)
    for seed in range(3):
        ann, z = STUDY.binary_data(2000, 0.2, seed)
        res, caught = _check(ann, z, seed=seed)
        assert res.status == REJECTED and res.p_value < 1e-4
        assert any(issubclass(w.category, nc.NoisycalWarning)
                   and "class-conditional noise" in str(w.message) for w in caught)
        # the middle groups (z near 0.5, the hardest items) are labelled worse than the
        # extreme ones, and worse than the shared channels say (measured 0.80-0.84 vs
        # 0.87-0.88 in group 2)
        acc = res.groups["accuracy_group"].to_numpy()
        assert acc[1:3].max() < acc[[0, 4]].min()
        assert acc[2] < res.groups["accuracy_shared"][2] - 0.03


@pytest.mark.slow
def test_kclass_null_and_alternative():
    ann, probs = STUDY.kclass_data(2000, 0.0, 0)
    null, _ = _check(ann, probs, test="bartlett", seed=0)
    assert null.df == (15 - 3) * 4 * 3 and null.status == "ok" and null.p_value > 0.01
    assert null.details["grouping"] == "confidence"
    ann, probs = STUDY.kclass_data(2000, 0.6, 0)
    alt, _ = _check(ann, probs, test="bartlett", seed=0)
    assert alt.status == REJECTED and alt.p_value < 1e-3
    acc = alt.groups["accuracy_group"].to_numpy()
    assert acc[0] < acc[-1] - 0.05  # the least confident group is labelled worst


# ----------------------------------------------------------------------- statuses
def test_not_tested_when_the_shared_fit_is_not_identified():
    toy = nc.simulate.gaussian_toy(300, seed=0)
    ann = nc.Annotations.from_wide(toy.annotations[:, :1], classes=[0, 1])
    res, caught = _check(ann, toy.z, test="chi2")
    assert res.status == "not_tested" and np.isnan(res.p_value) and res.method == "none"
    assert "not_identified" in res.message
    assert res.details["fit_status"] == "not_identified"


def test_not_tested_when_no_annotator_spans_two_groups():
    # annotators 0-2 rate only the low-score items, 3-5 only the high-score ones
    rng = np.random.default_rng(0)
    n = 400
    z = np.sort(rng.random(n))
    y = (rng.random(n) < z).astype(int)
    A = np.full((n, 6), -1)
    flip = rng.random((n, 3)) < 0.15
    A[: n // 2, :3] = np.where(flip[: n // 2], 1 - y[: n // 2, None], y[: n // 2, None])
    A[n // 2:, 3:] = np.where(flip[n // 2:], 1 - y[n // 2:, None], y[n // 2:, None])
    ann = nc.Annotations.from_wide(A, missing=-1, classes=[0, 1])
    res, _ = _check(ann, z, n_groups=2)
    assert res.df == 0 and res.status == "not_tested"
    assert "no annotator rated items in two" in res.message


# ----------------------------------------------------------------------- the Target
def _rejecting_check(ann, z):
    return NoiseCheck(50.0, 24, 1e-5, "chi2", 0.01, REJECTED, "the noise check rejects: x",
                      pd.DataFrame(), 0, {"items": ann.items})


def test_with_noise_check_sets_the_status_every_estimate_carries(binary_null):
    ann, z = binary_null
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=3), seed=0)
    target = nc.targets.corrected(ann, fit)
    assert target.status == "ok"
    ok, _ = _check(ann, z, test="chi2")
    assert with_noise_check(target, ok) is target
    flagged = with_noise_check(target, _rejecting_check(ann, z))
    assert flagged.status == REJECTED
    assert flagged.message == ("built under class-conditional noise, which the noise check "
                               "rejects: x")
    assert flagged.details["noise_check"]["p_value"] == 1e-5
    np.testing.assert_array_equal(flagged.values, target.values)
    est = nc.ece(z, flagged, n_bins=10, interval=None)
    assert est.status == "target_" + REJECTED
    assert "class-conditional noise" in est.message


def test_with_noise_check_keeps_an_earlier_status_and_checks_items(binary_null):
    ann, z = binary_null
    t = nc.targets.from_matrix(np.tile([0.5, 0.5], (ann.n_items, 1)))
    failed = dataclasses.replace(t, status="not_converged",
                                 message="built from a fit that did not")
    out = with_noise_check(failed, _rejecting_check(ann, z))
    assert out.status == "not_converged"
    assert out.message.startswith("built from a fit that did not; it was also built under")
    other = dataclasses.replace(t, items=np.arange(ann.n_items) + 10**6)
    with pytest.raises(ValueError, match="check: its items differ"):
        with_noise_check(other, _rejecting_check(ann, z))
    with pytest.raises(ValueError, match="target must be"):
        with_noise_check(np.zeros((3, 2)), _rejecting_check(ann, z))
    with pytest.raises(ValueError, match="check must be"):
        with_noise_check(t, "rejected")


# ----------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("kwargs, match", [
    ({"n_groups": 1}, "n_groups must be >= 2"),
    ({"test": "lr"}, "test must be one of"),
    ({"p_threshold": 0.0}, "p_threshold must satisfy"),
    ({"p_threshold": 5}, "p_threshold must satisfy"),
    ({"n_boot": 1}, "n_boot must be >= 2"),
    ({"batch_size": 0}, "batch_size must be >= 1"),
    ({"method": "mle"}, "noise_check has no MLE engine"),
    ({"seed": None}, "seed must be"),
])
def test_bad_settings_name_the_argument(binary_null, kwargs, match):
    ann, z = binary_null
    with pytest.raises(ValueError, match=match):
        noise_check(ann, z, **kwargs)


def test_bad_data_name_the_argument(binary_null):
    ann, z = binary_null
    with pytest.raises(ValueError, match="annotations must be a noisycal.Annotations"):
        noise_check(np.zeros((10, 3)), z)
    with pytest.raises(ValueError, match="scores must have one row per annotated item"):
        noise_check(ann, z[:-1])
    with pytest.raises(ValueError, match="scores must lie in"):
        noise_check(ann, z * 3)
    with pytest.raises(ValueError, match="scores has 3 columns"):
        noise_check(ann, np.full((ann.n_items, 3), 1 / 3))
    ann3, probs = STUDY.kclass_data(50, 0.0, 0, n_classes=3)
    with pytest.raises(ValueError, match=r"scores of shape \(n_items,\)"):
        noise_check(ann3, probs[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        marginal = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=1), seed=0)
    with pytest.raises(ValueError, match="fit must be a maximum-likelihood GroupedDawidSkene"):
        noise_check(ann, z, fit=marginal)


# ----------------------------------------------------------------------- CIFAR-10N
@pytest.fixture(scope="module")
def cifar10n():
    try:
        d = nc.datasets.load_cifar10n()
        lg = nc.datasets.load_cifar10_logits("densenet40")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    probs = softmax(lg.logits_val, axis=1)
    return d.labels[lg.val_train_idx], d.clean[lg.val_train_idx], probs


@pytest.mark.data
def test_cifar10n_check_flags_the_misfit_of_the_corrected_target(cifar10n):
    ratings, clean, probs = cifar10n
    ann = nc.Annotations.from_wide(ratings, classes=np.arange(10))
    with pytest.warns(nc.NoisycalWarning, match="class-conditional noise"):
        res = noise_check(ann, probs, seed=0)
    # measured 2026-12 (seed 0): LR 1472.1 on 1080 df; the 19 bootstrap LRs average 1130.6
    # (factor 1.047; Monte Carlo s.e. of the factor ~0.008), Bartlett-corrected p ~ 1e-10
    assert res.status == REJECTED and res.method == "bartlett" and res.df == 1080
    assert res.statistic == pytest.approx(1472.1, abs=1.0)
    assert res.p_value < 1e-8
    assert res.details["bartlett_factor"] == pytest.approx(1.047, abs=0.03)
    # the annotators' accuracy rises with the classifier's confidence (0.77 -> 0.90)
    acc = res.groups["accuracy_group"].to_numpy()
    assert np.all(np.diff(acc) > 0) and acc[-1] - acc[0] > 0.1
    # the audit's target: NC-ECE with channels from the clean labels; the check's status
    # travels to the Estimate
    emp = np.zeros((3, 10, 10))
    for j in range(3):
        np.add.at(emp[j], (clean, ratings[:, j]), 1)
    emp /= emp.sum(2, keepdims=True)
    target = with_noise_check(nc.targets.corrected(ann, confusion=emp), res)
    est = nc.ece(probs, target, n_bins=15, interval=None)
    assert est.status == "target_" + REJECTED


def test_checked_target_runs_the_check(binary_null):
    """nc.annotators.checked_target(target, ann, scores) tests the assumption: under
    class-conditional noise the target stays ok (with the test in its details); with
    error rates that rise on hard items (slope 0.4: power 1 in the study) it carries
    the rejection, and so does the NC-ECE."""
    ann, z = binary_null
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=3), seed=0)
        ok = nc.annotators.checked_target(nc.targets.corrected(ann, fit), ann, z)
    direct, _ = _check(ann, z)
    assert ok.status == "ok"
    assert ok.details["noise_check"]["p_value"] == pytest.approx(direct.p_value)
    bad_ann, bad_z = STUDY.binary_data(1000, 0.4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad_fit = nc.DawidSkene(2).fit(bad_ann, method=nc.engines.EM(n_starts=3), seed=0)
        flagged = nc.annotators.checked_target(nc.targets.corrected(bad_ann, bad_fit),
                                               bad_ann, bad_z)
        est = nc.ece(bad_z, flagged, n_bins=10)
    assert flagged.status == REJECTED
    assert flagged.details["noise_check"]["p_value"] <= 0.01
    assert est.status == "target_" + REJECTED
