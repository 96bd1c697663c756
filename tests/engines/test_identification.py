"""Local identification after the fit: the status 'weakly_identified'.

The rule (``noisycal.engines.identification``): the relative information r, the smallest
eigenvalue of the observed over the complete-data information, below ``weak_threshold``
(default 0.005). The default comes from ``benchmarks/identification_threshold.py``; the
numbers quoted below are from its 30-seed run.

The weak design is the failure of the issue: three binary annotators, two of them nearly
uninformative (b - a = 0.03) beside a good one (a, b) = (0.10, 0.85).
"""

import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.engines.em.dawid_skene import pattern_data
from noisycal.engines.identification import (
    WEAK_THRESHOLD,
    Identification,
    dawid_skene_identification,
    dawid_skene_information,
    hui_walter_identification,
    relative_information,
)
from noisycal.engines.moments import moment_jacobian
from noisycal.engines.results import checked_status

WEAK_A, WEAK_B = [0.10, 0.30, 0.45], [0.85, 0.33, 0.48]


def _binary(a, b):
    return np.stack([[[1 - x, x], [1 - y, y]] for x, y in zip(a, b, strict=True)])


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def weak_toy():
    """The Gaussian toy of "Noisy-Label Calibration with Multiple Unreliable Labels" with
    the weak channels; seed 0 is a fit that EM reports as converged and that every
    earlier check passed."""
    toy = nc.simulate.gaussian_toy(1000, a=WEAK_A, b=WEAK_B, seed=0)
    return toy, nc.Annotations.from_wide(toy.annotations, classes=[0, 1])


# ---------------------------------------------------------------------- the weak design
def test_weak_design_end_to_end(weak_toy):
    toy, ann = weak_toy
    with pytest.warns(nc.IdentifiabilityWarning, match="weakly identified"):
        fit = nc.DawidSkene(2).fit(ann)
    assert fit.status == "weakly_identified"
    ident = fit.details["identification"]
    # measured r = 3.9e-4: the ratings carry 1/2500 of the complete-data information
    # along a direction that mixes the prevalence with annotator 0's channel
    assert ident["checked"] and ident["relative_information"] < 1e-3
    assert ident["loading"][0] == "prevalence[1]"
    assert {"confusion[0, 0, 1]", "confusion[0, 1, 0]"} <= set(ident["loading"])
    assert "near-null direction loads on prevalence[1]" in fit.message
    # the failure it reports: annotator 0 fitted at a = 0.35 against a true 0.10
    assert abs(fit.confusion[0, 0, 1] - 0.10) > 0.2
    # without the check the same estimates look fine: the check changes only the status
    unchecked = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(weak_threshold=0.0))
    assert unchecked.status == "ok"
    np.testing.assert_array_equal(unchecked.confusion, fit.confusion)
    assert unchecked.details["identification"]["relative_information"] == pytest.approx(
        ident["relative_information"], rel=1e-12)
    # ... and the status travels: target, Estimate, refusal of the bound
    target = nc.targets.corrected(ann, fit)
    assert target.status == "weakly_identified"
    est = nc.ece(toy.z, target, n_bins=10)
    assert est.status == "target_weakly_identified"
    assert "weakly identified" in est.message
    with pytest.raises(ValueError, match="status 'weakly_identified'"):
        nc.ece(toy.z, target, n_bins=10, interval="bound")
    # with the check switched off the fit is 'ok', but the NC-ECE's channel-error check
    # still refuses to call its interval ok (the weak channels turn singular within two
    # standard errors, or sit at a boundary that matters)
    weak = nc.ece(toy.z, nc.targets.corrected(ann, unchecked), n_bins=10)
    assert weak.status == "weak_channels"


def test_weak_design_simulated_dawid_skene():
    """The issue's design simulated directly (n = 500, seed 2: EM status 'ok' before)."""
    sim = nc.simulate.dawid_skene(500, [0.5, 0.5], _binary(WEAK_A, WEAK_B), seed=2)
    fit = _quiet(nc.DawidSkene(2).fit, sim.annotations)
    assert fit.status == "weakly_identified"
    assert fit.details["identification"]["relative_information"] < 1e-3  # 3.1e-4


# ---------------------------------------------------------------------- no false alarms
def _well_identified():
    good = _binary([0.10, 0.20, 0.15], [0.85, 0.80, 0.70])
    three = np.stack([np.full((3, 3), (1 - p) / 2) + (1.5 * p - 0.5) * np.eye(3)
                      for p in (0.7, 0.75, 0.8, 0.75)])
    for seed in range(4):
        sim = nc.simulate.dawid_skene(500, [0.5, 0.5], good, seed=seed)
        yield f"binary-{seed}", nc.DawidSkene(2), sim.annotations, {}
    for seed in range(2):
        t = nc.simulate.gaussian_toy(500, seed=seed)
        yield (f"toy-{seed}", nc.DawidSkene(2),
               nc.Annotations.from_wide(t.annotations, classes=[0, 1]), {})
    sim = nc.simulate.dawid_skene(300, [0.5, 0.3, 0.2], three, p_rate=0.7, seed=0)
    yield "K3-missing", nc.DawidSkene(3), sim.annotations, {}
    yield "one-coin", nc.OneCoinDawidSkene(3), sim.annotations, {}
    sim = nc.simulate.dawid_skene(1000, [[0.8, 0.2], [0.2, 0.8]], good[:2],
                                  group_probs=[0.5, 0.5], seed=0)
    yield "grouped", nc.GroupedDawidSkene(2), sim.annotations, {"groups": sim.group}


@pytest.mark.parametrize(("name", "model", "ann", "kw"),
                         [pytest.param(*c, id=c[0]) for c in _well_identified()])
def test_well_identified_designs_stay_ok(name, model, ann, kw):
    # 30-seed study: the smallest r of these designs was 0.015 (K = 3 with missing
    # ratings) to 0.21 (the toy); 0 of 270 well-identified fits fell below 0.005
    fit = model.fit(ann, **kw)
    assert fit.status == "ok", fit.message
    assert fit.details["identification"]["relative_information"] > WEAK_THRESHOLD


def test_dawid_skene_1979_is_not_flagged():
    ann = nc.datasets.load_dawid_skene_1979()
    fit = nc.DawidSkene(4).fit(ann)
    assert fit.status == "ok"
    assert fit.details["identification"]["relative_information"] > 0.5  # measured 0.99


# ---------------------------------------------------------------------- hand cases
def _two_annotators():
    """Two binary annotators with counts exactly proportional to the model's pattern
    probabilities at prevalence 0.5 and (a, b) = (0.2, 0.8) for both: P(00) = P(11) =
    0.5 * 0.8^2 + 0.5 * 0.2^2 = 0.34 and P(01) = P(10) = 0.16, so 170/80/80/170 of 500."""
    wide = np.repeat([[0, 0], [0, 1], [1, 0], [1, 1]], [170, 80, 80, 170], axis=0)
    return nc.Annotations.from_wide(wide, classes=[0, 1])


def test_two_annotators_exactly_singular_information():
    ann = _two_annotators()
    fit = _quiet(nc.DawidSkene(2).fit, ann)
    assert fit.status == "not_identified"  # the design check still answers first
    assert fit.details["identification"]["checked"] is False
    # at a point where the model reproduces the four pattern frequencies, the
    # log-likelihood depends on the 5 free parameters only through 3 frequencies: its
    # Hessian has rank 3 exactly (the score terms cancel because sum_c p_c = 1)
    prev, conf = np.array([[0.5, 0.5]]), _binary([0.2, 0.2], [0.8, 0.8])
    arr = ann.engine_arrays()
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=500,
                           n_annotators=2, n_classes=2, group=None, n_groups=1)
    labels = {"prevalence": ["p0", "p1"], "accuracy": ["s0", "s1"],
              "confusion": [f"c{i}" for i in range(8)]}
    info, complete, names, _ = dawid_skene_information(
        prev, conf, pd_.data, pd_.counts, None, one_coin=False, labels=labels)
    assert len(names) == 5
    ev = np.linalg.eigvalsh(info)
    assert np.all(np.abs(ev[:2]) < 1e-9 * ev[-1]) and ev[2] > 1e-3 * ev[-1]
    assert np.all(np.linalg.eigvalsh(complete) > 0)
    ident = dawid_skene_identification(ann, prev, conf)
    assert ident.status == "weakly_identified"
    assert abs(ident.relative_information) < 1e-9


def test_complete_data_information_by_hand():
    """With every class known (gold) the observed information is the complete one: r = 1.
    At the complete-data MLE a binary proportion p estimated from N items has
    information N / (p (1 - p))."""
    y = np.array([0] * 6 + [1] * 4)
    r0 = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 0])  # annotator 0: a = 1/6, b = 3/4
    r1 = np.array([0, 0, 0, 1, 1, 0, 1, 1, 0, 1])  # annotator 1: a = 2/6, b = 3/4
    ann = nc.Annotations.from_wide(np.column_stack([r0, r1]), classes=[0, 1])
    prev = np.array([[0.6, 0.4]])
    conf = _binary([1 / 6, 2 / 6], [3 / 4, 3 / 4])
    arr = ann.engine_arrays()
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=10,
                           n_annotators=2, n_classes=2, group=None, n_groups=1, gold=y)
    labels = {"prevalence": ["p0", "p1"], "accuracy": ["s0", "s1"],
              "confusion": [f"conf{i}" for i in range(8)]}
    info, complete, names, _ = dawid_skene_information(
        prev, conf, pd_.data, pd_.counts, pd_.gold, one_coin=False, labels=labels)
    np.testing.assert_allclose(info, complete, rtol=1e-12, atol=1e-9)
    by_name = dict(zip(names, np.diag(info), strict=True))
    np.testing.assert_allclose(by_name["p1"], 10 / (0.6 * 0.4), rtol=1e-12)
    np.testing.assert_allclose(by_name["conf1"], 6 / (1 / 6 * 5 / 6), rtol=1e-12)  # a_0
    np.testing.assert_allclose(by_name["conf6"], 4 / (3 / 4 * 1 / 4), rtol=1e-12)  # 1 - b_1
    ident = dawid_skene_identification(ann, prev, conf, gold=y)
    np.testing.assert_allclose(ident.relative_information, 1.0, rtol=1e-10)
    assert ident.condition_number == pytest.approx(1.0, rel=1e-10)


def test_relative_information_is_scale_invariant():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    info, complete = X.T @ X, np.diag([50.0, 40.0, 30.0, 60.0])
    names = ["w", "x", "y", "z"]
    base = relative_information(info, complete, names, threshold=0.02)
    D = np.diag([1.0, 10.0, 0.1, 3.0])
    scaled = relative_information(D @ info @ D, D @ complete @ D, names, threshold=0.02)
    np.testing.assert_allclose(scaled.relative_information, base.relative_information,
                               rtol=1e-10)
    # the same number from the covariance (the inverse information)
    cov = relative_information(np.linalg.inv(info), complete, names, threshold=0.02,
                               covariance=True)
    np.testing.assert_allclose(cov.relative_information, base.relative_information,
                               rtol=1e-10)
    np.testing.assert_allclose(np.abs(cov.null_direction), np.abs(base.null_direction),
                               atol=1e-8)
    direct = np.linalg.eigvals(np.linalg.solve(complete, info)).real.min()
    np.testing.assert_allclose(base.relative_information, direct, rtol=1e-10)


def test_boundary_status_gives_way_and_keeps_its_message():
    weak = Identification("weakly_identified", "weakly identified: x", 1e-4, 1e4, 2.0, 0.02,
                          ("p",), np.ones(1), ("p",))
    status, message, det = checked_status("boundary", "a1 at 0", lambda: weak)
    assert status == "weakly_identified" and message.endswith("; also a1 at 0")
    assert det["checked"] and det["relative_information"] == 1e-4
    status, message, det = checked_status("not_converged", "limit", lambda: weak)
    assert (status, message, det["checked"]) == ("not_converged", "limit", False)


# ---------------------------------------------------------------------- Hui–Walter
def _hw_sample(mus, a, b, seed, n=1000):
    prev = np.array([[1 - m, m] for m in mus])
    return nc.simulate.dawid_skene(n, prev, _binary(a, b), group_probs=[0.5, 0.5],
                                   seed=seed)


def test_hui_walter_well_identified_mom_equals_gmm():
    sim = _hw_sample([0.2, 0.8], [0.1, 0.2], [0.85, 0.75], seed=0)
    mom = nc.HuiWalter().fit(sim.annotations, groups=sim.group, method="mom")
    gmm = nc.HuiWalter().fit(sim.annotations, groups=sim.group, method="gmm")
    assert mom.status == gmm.status == "ok"
    r_mom = mom.details["identification"]["relative_information"]
    # exactly identified (L = 2): the same estimate and the same sandwich G^-1 S G^-T
    np.testing.assert_allclose(gmm.details["identification"]["relative_information"], r_mom,
                               rtol=1e-8)
    assert r_mom > 0.05  # measured 0.080


def test_hui_walter_weak_groups_end_to_end():
    """Group prevalences 0.4 and 0.5: det of the moment Jacobian is
    delta_1^2 delta_2^2 (mu_1 - mu_0)^2, small; measured r = 2.4e-4 (mom and GMM)."""
    sim = _hw_sample([0.4, 0.5], [0.1, 0.2], [0.85, 0.75], seed=0)
    with pytest.warns(nc.IdentifiabilityWarning, match="weakly identified"):
        fit = nc.HuiWalter().fit(sim.annotations, groups=sim.group, method="gmm")
    assert fit.status == "weakly_identified"
    assert fit.details["identification"]["relative_information"] < 1e-3
    assert "moment Jacobian" in fit.message
    target = nc.targets.corrected(sim.annotations, fit)
    assert target.status == "weakly_identified"
    z = np.where(sim.group == 1, 0.5, 0.4) + 0.0
    assert nc.ece(z, target, n_bins=10).status == "target_weakly_identified"


def test_hui_walter_boundary_travels_end_to_end():
    """Annotator 0 without false positives (a = 0): the GMM estimate has a1 at 0, status
    'boundary' (not weak: measured r = 0.14 with a1 held fixed)."""
    sim = _hw_sample([0.2, 0.8], [0.0, 0.2], [0.85, 0.75], seed=0)
    fit = nc.HuiWalter().fit(sim.annotations, groups=sim.group, method="gmm")
    assert fit.status == "boundary" and "a1 at 0" in fit.message
    assert fit.details["identification"]["relative_information"] > WEAK_THRESHOLD
    target = nc.targets.corrected(sim.annotations, fit)
    assert target.status == "boundary"
    z = np.where(sim.group == 1, 0.8, 0.2)
    est = nc.ece(z, target, n_bins=10)
    assert est.status == "target_boundary"
    with pytest.raises(ValueError, match="status 'boundary'"):
        nc.ece(z, target, n_bins=10, interval="bound")


def test_hui_walter_singular_jacobian_by_hand():
    """Annotator 2 with a = b carries nothing: det D Gamma = delta_1^2 delta_2^2 (mu_1 -
    mu_0)^2 = 0 (Eq. D.6 of "Noisy-Label Calibration with Multiple Unreliable Labels")."""
    theta = np.array([0.1, 0.8, 0.3, 0.3, 0.2, 0.7])
    G = moment_jacobian(theta, 2)
    assert abs(np.linalg.det(G)) < 1e-15
    cov = np.stack([np.eye(3) * 1e-3, np.eye(3) * 1e-3])
    ident = hui_walter_identification(theta, G, np.eye(6), cov, np.array([500, 500]),
                                      annotators=["x", "y"])
    assert ident.status == "weakly_identified"
    assert abs(ident.relative_information) < 1e-9
    assert "moment Jacobian" in ident.message
