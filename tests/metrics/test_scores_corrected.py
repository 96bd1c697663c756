"""Proper scores and recalibration losses against targets that leave [0, 1] (corrected)."""

import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.metrics.scores import AFFINE_IN_TARGET, logit_loss

P3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]])


def test_affine_brier_equals_the_usual_one_for_one_hot_targets():
    y = np.array([0, 2])
    usual = np.mean(np.sum((P3 - np.eye(3)[y]) ** 2, axis=1))  # (0.14 + 0.86) / 2
    assert usual == pytest.approx(0.5, abs=1e-12)
    for variant in ("plain", "expected"):
        est = nc.brier(P3, y, variant=variant, interval=None)
        assert float(est) == pytest.approx(0.5, abs=1e-12)
    assert nc.brier(P3, y, interval=None).details["form"] == "plain"
    assert nc.brier(P3, y, variant="expected", interval=None).details["form"] == "affine"
    # binary 1-D input: p^2 - 2 p y + y equals (p - y)^2 for y in {0, 1}
    p = np.array([0.2, 0.9, 0.6])
    b = np.array([0, 1, 1])
    assert float(nc.brier(p, b, variant="expected", interval=None)) == pytest.approx(
        np.mean((p - b) ** 2), abs=1e-12)


def test_affine_brier_is_the_expected_brier_for_soft_targets_by_hand():
    S = np.array([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]])
    # expected Brier = sum over labels k of S_k ||p - e_k||^2, by hand
    by_hand = np.mean([sum(S[i, k] * np.sum((P3[i] - np.eye(3)[k]) ** 2) for k in range(3))
                       for i in range(2)])
    est = nc.brier(P3, S, variant="expected", interval=None)
    assert float(est) == pytest.approx(by_hand, abs=1e-12)
    assert est.details["affine_in_target"] is True
    # the plain soft score is a different number, quadratic in the target
    plain = nc.brier(P3, S, interval=None)
    assert plain.details["affine_in_target"] is False and float(plain) < float(est)


def test_brier_against_a_target_outside_unit_interval_uses_the_affine_form():
    T = nc.targets.from_matrix([[1.3, -0.2, -0.1], [0.2, 0.5, 0.3]], kind="corrected")
    # row 1: 0.54 - 2 * 0.86 + 1 = -0.18; row 2: 0.46 - 2 * 0.41 + 1 = 0.64
    for variant in ("plain", "expected"):
        est = nc.brier(P3, T, variant=variant, interval=None)
        assert float(est) == pytest.approx(0.23, abs=1e-12)
        assert est.details["form"] == "affine" and est.details["affine_in_target"]
    est = nc.brier(P3, T, interval=None)
    assert est.name == "affine Brier" and "affine form" in est.message
    assert AFFINE_IN_TARGET == {"Brier": False, "expected Brier": True,
                                "affine Brier": True, "NLL": True}
    with pytest.raises(ValueError, match="target.*sum to 1"):
        nc.brier(P3, np.array([[1.3, 0.0, 0.0], [0.2, 0.5, 0.3]]), interval=None)
    # the same matrix not declared noise-corrected is refused
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        nc.brier(P3, T.values, interval=None)


def test_nll_against_a_corrected_target_warns_high_variance():
    T = nc.targets.from_matrix([[1.3, -0.2, -0.1], [0.2, 0.5, 0.3]], kind="corrected")
    by_hand = np.mean(-np.sum(T.values * np.log(P3), axis=1))
    with pytest.warns(nc.NumericalWarning, match="high variance"):
        est = nc.nll(P3, T, interval=None)
    assert float(est) == pytest.approx(by_hand, abs=1e-12)
    assert est.details == {"affine_in_target": True, "high_variance": True}
    assert "unbiased" in est.message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nc.nll(P3, np.array([0, 1]), interval=None).details["high_variance"] is False


def test_a_score_below_its_floor_is_outside_the_parameter_space():
    P = np.array([[0.9, 0.1], [0.8, 0.2]])
    # floor: each item labelled with its most probable class
    # Brier (0.82 - 1.8 + 1 + 0.68 - 1.6 + 1) / 2 = 0.05; NLL -(log 0.9 + log 0.8) / 2
    low = nc.targets.from_matrix([[1.3, -0.3], [1.3, -0.3]], kind="corrected")
    est = nc.brier(P, low, interval=None)
    # (0.82 - 2 * 1.14 + 1 + 0.68 - 2 * 0.98 + 1) / 2
    assert float(est) == pytest.approx(-0.37, abs=1e-12)
    assert est.statuses == ("outside_parameter_space",)
    assert est.details["floor"] == pytest.approx(0.05, abs=1e-12)
    assert "noise_check" in est.message and "outside the parameter space" in est.message
    with pytest.warns(nc.NumericalWarning, match="high variance"):
        est = nc.nll(P, low, interval=None)
    assert float(est) == pytest.approx(-(1.3 * np.log(0.9) - 0.3 * np.log(0.1)
                                         + 1.3 * np.log(0.8) - 0.3 * np.log(0.2)) / 2,
                                       abs=1e-12)
    assert est.status == "outside_parameter_space"
    assert est.details["floor"] == pytest.approx(-(np.log(0.9) + np.log(0.8)) / 2, abs=1e-12)
    # a corrected target whose score stays above the floor: no status
    fine = nc.targets.from_matrix([[1.1, -0.1], [0.2, 0.8]], kind="corrected")
    est = nc.brier(P, fine, interval=None)
    assert float(est) == pytest.approx(0.45, abs=1e-12) and est.statuses == ("ok",)
    assert "floor" not in est.details
    # the message says whether the interval lies below the floor as well
    rng = np.random.default_rng(0)
    n = 400
    Pn = np.column_stack([np.full(n, 0.9), np.full(n, 0.1)])
    Tn = nc.targets.from_matrix(np.tile([1.3, -0.3], (n, 1)) + rng.normal(0, 0.05, (n, 1))
                                * np.array([1.0, -1.0]), kind="corrected")
    est = nc.brier(Pn, Tn, interval="wald")
    assert est.status == "outside_parameter_space" and est.high < est.details["floor"]
    assert "chance alone is an unlikely explanation" in est.message
    # clean labels can never fall below the floor
    y = np.array([0, 1])
    assert nc.brier(P, y, interval=None).statuses == ("ok",)
    assert float(nc.brier(P, y, interval=None)) >= 0.05


def _k3_draw(seed, n=1500):
    conf = np.array([[[0.8, 0.1, 0.1], [0.15, 0.7, 0.15], [0.1, 0.2, 0.7]],
                     [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.1, 0.7]],
                     [[0.75, 0.15, 0.1], [0.1, 0.75, 0.15], [0.15, 0.1, 0.75]]])
    sim = nc.simulate.dawid_skene(n, [0.5, 0.3, 0.2], conf, seed=seed)
    rng = np.random.default_rng(1000 + seed)
    logits = 1.5 * np.eye(3)[sim.true_class] + rng.normal(0.0, 1.2, (n, 3))
    P = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    U = nc.targets.corrected(sim.annotations, confusion=conf, weights="equal")
    return P, sim.true_class, U


def test_affine_brier_against_corrected_target_is_unbiased_k3():
    d_affine, d_plain = [], []
    for seed in range(40):
        P, y, U = _k3_draw(seed)
        clean = float(nc.brier(P, y, interval=None))
        d_affine.append(float(nc.brier(P, U, interval=None)) - clean)
        d_plain.append(np.mean(np.sum((P - U.values) ** 2, axis=1)) - clean)
    d_affine, d_plain = np.array(d_affine), np.array(d_plain)
    se = d_affine.std(ddof=1) / np.sqrt(d_affine.size)
    print(f"K=3: affine - clean {d_affine.mean():.5f} (MC se {se:.5f}); "
          f"plain - clean {d_plain.mean():.4f}")
    assert abs(d_affine.mean()) < 3 * se
    # the plain (plug-in) squared distance to the corrected rows is biased upward
    se_p = d_plain.std(ddof=1) / np.sqrt(d_plain.size)
    assert d_plain.mean() > 0.2 and d_plain.mean() > 20 * se_p


def test_logit_loss_values_and_gradients_by_hand():
    eta, y = np.array([0.0, 2.0]), np.array([1.4, -0.3])
    q = 1 / (1 + np.exp(-eta))
    val, d = logit_loss(eta, y, "brier")
    assert val == pytest.approx(np.mean(q**2 - 2 * q * y + y), abs=1e-12)
    h = 1e-6
    num = (np.array([logit_loss(eta + h * e, y, "brier")[0] for e in np.eye(2)]) - val) / h
    np.testing.assert_allclose(d / 2, num, atol=1e-5)  # d is per item; the mean halves it
    val, d = logit_loss(eta, y, "log")
    assert val == pytest.approx(np.mean(np.log1p(np.exp(eta)) - y * eta), abs=1e-12)
    np.testing.assert_allclose(d, q - y, atol=1e-12)


def test_temperature_with_brier_loss_on_corrected_toy_matches_clean_fit():
    t = nc.simulate.gaussian_toy(20_000, truth="shifted", seed=0)
    ann = nc.Annotations.from_wide(t.annotations, missing=-1, classes=[0, 1])
    U = nc.targets.corrected(ann, nc.DawidSkene(2).fit(ann))
    clean = nc.calibrators.TemperatureScaling().fit(probs=t.z, target=t.y)
    corr = nc.calibrators.TemperatureScaling().fit(probs=t.z, target=U)
    assert clean.loss_ == "log" and corr.loss_ == "brier"  # 'auto'
    assert corr.status_ == "ok" and not corr.at_bound_
    ece = [float(nc.ece(c.predict_proba(probs=t.z), t.y, n_bins=15, interval=None))
           for c in (clean, corr)]
    print(f"toy: T clean {clean.temperature_:.3f} ECE {ece[0]:.4f}; "
          f"T corrected/brier {corr.temperature_:.3f} ECE {ece[1]:.4f}")
    # measured: T 1.672 vs 1.662, clean-label ECE 0.0601 vs 0.0603
    assert corr.temperature_ == pytest.approx(clean.temperature_, abs=0.05)
    assert abs(ece[1] - ece[0]) < 0.005
    platt = nc.calibrators.PlattScaling().fit(probs=t.z, target=U)
    assert platt.loss_ == "brier" and platt.status_ == "ok"
    assert platt.slope_ == pytest.approx(0.65, abs=0.06)
    log = nc.calibrators.TemperatureScaling(loss="log").fit(probs=t.z, target=U)
    assert log.loss_ == "log" and log.temperature_ == pytest.approx(clean.temperature_,
                                                                     abs=0.05)


def test_log_loss_on_a_target_outside_unit_interval_runs_to_the_box_and_says_so():
    z = np.linspace(0.05, 0.95, 40)
    t = np.where(z > 0.5, 1.5, -0.5)  # unbounded below in T for the log loss
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        nc.calibrators.TemperatureScaling(loss="log").fit(probs=z, target=t)  # undeclared
    y = nc.targets.from_matrix(np.c_[1 - t, t], kind="corrected")
    with pytest.warns(nc.IdentifiabilityWarning, match="loss='brier'"):
        log = nc.calibrators.TemperatureScaling(loss="log").fit(probs=z, target=y)
    assert log.status_ == "boundary" and log.temperature_ == pytest.approx(0.05)
    # the affine Brier loss stays bounded below: objective >= mean over items of
    # min_{q in [0, 1]} q^2 - 2 q y + y = mean(-0.5, -0.5) here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        br = nc.calibrators.TemperatureScaling().fit(probs=z, target=y)
    assert br.loss_ == "brier" and br.objective_ >= -0.5 - 1e-12


@pytest.mark.data
def test_cifar10n_densenet_brier_against_corrected_target(cifar):
    d, lg = cifar
    idx = lg.val_train_idx
    z = lg.logits_val - lg.logits_val.max(1, keepdims=True)
    P = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    ann = nc.Annotations.from_wide(d.labels[idx], classes=np.arange(10))
    U = nc.targets.corrected(ann, nc.DawidSkene(n_classes=10).fit(ann,
                                                                  method=nc.engines.EM(n_starts=3),
                                                                  seed=0),
                             weights="equal")  # the weights these numbers were pinned with
    clean = float(nc.brier(P, d.clean[idx], interval=None))
    est = nc.brier(P, U, interval=None)
    plain = np.mean(np.sum((P - U.values) ** 2, axis=1))
    with pytest.warns(nc.NumericalWarning, match="high variance"):
        nll = nc.nll(P, U, interval=None)
    print(f"CIFAR-10N: clean {clean:.4f}, affine {float(est):.4f}, plain {plain:.4f}, "
          f"NLL {float(nll):.3f}")
    # measured: clean 0.1036, affine 0.1044, plain 0.2551, NLL -0.44
    assert clean == pytest.approx(0.1036, abs=5e-4)
    assert float(est) == pytest.approx(0.1044, abs=2e-3) and est.name == "affine Brier"
    assert plain == pytest.approx(0.2551, abs=5e-3)
    assert float(nll) < 0 and nll.details["high_variance"]


def test_binary_affine_brier_on_the_toy_and_its_interval():
    A, B = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B
    diffs = []
    for seed in range(20):
        t = nc.simulate.gaussian_toy(4000, truth="shifted", seed=seed)
        U = nc.targets.corrected(t.annotations, a=A, b=B)
        one_d = float(nc.brier(t.z, U, interval=None))
        two_col = float(nc.brier(np.column_stack([1 - t.z, t.z]), U, interval=None))
        assert two_col == pytest.approx(2 * one_d, rel=1e-12)  # K = 2 is twice the binary
        diffs.append(one_d - float(nc.brier(t.z, t.y, interval=None)))
    diffs = np.array(diffs)
    se = diffs.std(ddof=1) / np.sqrt(diffs.size)
    print(f"binary toy: affine - clean {diffs.mean():.5f} (MC se {se:.5f})")
    assert abs(diffs.mean()) < 3 * se
    est = nc.brier(t.z, U, interval=nc.intervals.Bootstrap(n_boot=200), seed=0)
    assert est.status == "ok" and est.interval[0] <= float(est) <= est.interval[1]
