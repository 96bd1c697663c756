"""MLP temperature scaling, the Ada-TS of "Adaptive Set-Mass Calibration with Conformal
Prediction" (Appendix F).

A seeded two-cluster simulation whose true temperature depends on the input (one cluster
over-confident, T = 3, the other under-confident, T = 0.6): held out, the MLP lowers the
NLL and the ECE more than one temperature and finds the two temperatures; calibrated
scores keep T near 1; a seed gives identical fits; the padded last batch has weight 0
and the epoch compiles once; one-hot targets are the hard fit; divergence and bad inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

import noisycal as nc
from noisycal.calibrators.scaling import mlp_temperature
from noisycal.exceptions import ConvergenceWarning

C = nc.calibrators
# most tests share these shapes (3000 items), so the training epoch compiles once for them
SMALL = {"hidden": (16, 8), "epochs": 30, "batch_size": 128}


def _two_clusters(n, seed, K=4):
    """Cluster 1: logits of scale 4 with true temperature 3 (over-confident); cluster 0:
    scale 1 with temperature 0.6 (under-confident); labels from softmax(z / T)."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    Z = rng.normal(size=(n, K)) * np.where(c == 1, 4.0, 1.0)[:, None]
    T = np.where(c == 1, 3.0, 0.6)
    y = (softmax(Z / T[:, None], axis=1).cumsum(1) > rng.random((n, 1))).argmax(1)
    return Z, y, c


def _nll(P, y):
    return float(-np.mean(np.log(P[np.arange(y.size), y])))


def _ece(P, y, bins=15):
    conf, hit = P.max(1), (P.argmax(1) == y).astype(float)
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    return float(sum(abs(np.sum(hit[idx == b] - conf[idx == b])) for b in range(bins)) / y.size)


def test_input_dependent_temperature_beats_one_temperature():
    Z, y, _ = _two_clusters(3000, seed=0)
    Zt, yt, ct = _two_clusters(3000, seed=1)
    mlp = C.MLPTemperatureScaling().fit(logits=Z, target=y)  # the paper's settings
    ts = C.TemperatureScaling().fit(logits=Z, target=y)
    assert mlp.status_ == "ok" and mlp.epochs_run_ == 100
    Pm, Pt = mlp.predict_proba(logits=Zt), ts.predict_proba(logits=Zt)
    # measured: NLL 0.9996 (MLP) vs 1.0662 (one temperature); ECE 0.0235 vs 0.1380
    assert _nll(Pm, yt) < _nll(Pt, yt) - 0.05
    assert _ece(Pm, yt) < _ece(Pt, yt) - 0.1
    Tt = mlp.predict_temperature(logits=Zt)
    # measured medians 2.51 (true 3) and 0.64 (true 0.6); the one temperature is 2.13
    assert np.median(Tt[ct == 1]) == pytest.approx(2.5, abs=0.3)
    assert np.median(Tt[ct == 0]) == pytest.approx(0.64, abs=0.1)
    np.testing.assert_allclose(Pm, softmax(Zt / Tt[:, None], axis=1), atol=1e-12)
    assert mlp.loss_history_.shape == (100,)
    assert mlp.loss_history_[-1] < mlp.loss_history_[0]


def test_calibrated_scores_keep_temperature_near_one():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(3000, 4)) * 2.5
    y = (softmax(Z, axis=1).cumsum(1) > rng.random((3000, 1))).argmax(1)
    mlp = C.MLPTemperatureScaling(**SMALL).fit(logits=Z, target=y)
    assert mlp.status_ == "ok"
    # measured: mean 0.986, middle 90% of the temperatures in [0.846, 1.163]
    assert mlp.mean_temperature_ == pytest.approx(1.0, abs=0.05)
    lo, hi = np.percentile(mlp.predict_temperature(logits=Z), [5, 95])
    assert 0.8 < lo and hi < 1.2


def test_seed_gives_identical_fits_and_another_seed_differs():
    Z, y, _ = _two_clusters(3000, seed=3)  # the shapes of the test above: no new compile
    kw = {**SMALL, "epochs": 5}
    a = C.MLPTemperatureScaling(**kw, seed=7).fit(logits=Z, target=y)
    b = C.MLPTemperatureScaling(**kw, seed=7).fit(logits=Z, target=y)
    c = C.MLPTemperatureScaling(**kw, seed=8).fit(logits=Z, target=y)
    for (Wa, ba), (Wb, bb) in zip(a.params_, b.params_, strict=True):
        np.testing.assert_array_equal(Wa, Wb)
        np.testing.assert_array_equal(ba, bb)
    np.testing.assert_array_equal(a.loss_history_, b.loss_history_)
    assert not np.array_equal(a.params_[0][0], c.params_[0][0])
    assert a.params_[0][0].dtype == np.float64


def test_padded_rows_have_weight_zero_and_the_epoch_compiles_once():
    Z, y, _ = _two_clusters(700, seed=4)
    kw = {"hidden": (4,), "epochs": 3}
    # one batch per epoch either way: all 700 items, or the 700 items and 9 weight-0 rows
    whole = C.MLPTemperatureScaling(**kw, batch_size=700).fit(logits=Z, target=y)
    padded = C.MLPTemperatureScaling(**kw, batch_size=709).fit(logits=Z, target=y)
    for (Wa, ba), (Wb, bb) in zip(whole.params_, padded.params_, strict=True):
        np.testing.assert_allclose(Wa, Wb, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ba, bb, rtol=1e-9, atol=1e-12)
    before = mlp_temperature._epoch._cache_size()
    # 650 items (a size no other test uses) in batches of 128: five whole batches and a
    # last one of 10, 6 epochs
    C.MLPTemperatureScaling(hidden=(4,), epochs=6, batch_size=128, seed=5).fit(
        logits=Z[:650], target=y[:650])
    assert mlp_temperature._epoch._cache_size() == before + 1


def test_one_hot_and_soft_targets():
    Z, y, _ = _two_clusters(3000, seed=6)
    kw = {**SMALL, "epochs": 3}
    hard = C.MLPTemperatureScaling(**kw).fit(logits=Z, target=y)
    onehot = C.MLPTemperatureScaling(**kw).fit(logits=Z, target=np.eye(4)[y])
    np.testing.assert_array_equal(hard.predict_proba(logits=Z), onehot.predict_proba(logits=Z))
    soft = 0.7 * np.eye(4)[y] + 0.3 / 4
    fit = C.MLPTemperatureScaling(**kw).fit(logits=Z, target=soft)
    assert fit.status_ == "ok" and fit.loss_ == "log"
    # the soft cross-entropy of the final map
    P = fit.predict_proba(logits=Z)
    assert fit.objective_ == pytest.approx(-np.mean(np.sum(soft * np.log(P), axis=1)),
                                           rel=1e-12)


def test_divergence_is_status_nonfinite():
    Z, y, _ = _two_clusters(3000, seed=7)
    with pytest.warns(ConvergenceWarning, match="training diverged"):
        fit = C.MLPTemperatureScaling(**{**SMALL, "epochs": 3}, lr=1e300).fit(
            logits=Z, target=y)
    assert fit.status_ == "nonfinite" and fit.statuses_ == ("nonfinite",)
    assert fit.epochs_run_ == 0 and "the initial parameters" in fit.message_
    assert np.all(np.isfinite(fit.predict_proba(logits=Z)))


@pytest.mark.parametrize(("params", "match"), [
    ({"hidden": ()}, "hidden"), ({"hidden": (16, 0)}, "hidden"), ({"hidden": 16}, "hidden"),
    ({"lr": 0.0}, "lr"), ({"lr": float("nan")}, "lr"), ({"epochs": 0}, "epochs"),
    ({"epochs": 2.5}, "epochs"), ({"batch_size": 0}, "batch_size"),
    ({"weight_decay": -1.0}, "weight_decay"), ({"seed": None}, "seed"), ({"eps": 0.0}, "eps"),
    ({"loss": "hinge"}, "loss"),
])
def test_bad_parameters_name_the_argument(params, match):
    Z, y, _ = _two_clusters(50, seed=8)
    with pytest.raises(ValueError, match=match):
        C.MLPTemperatureScaling(**params).fit(logits=Z, target=y)


def test_bad_inputs_name_the_argument():
    Z, y, _ = _two_clusters(3000, seed=9)
    cal = C.MLPTemperatureScaling(**{**SMALL, "epochs": 1})
    bad = Z.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="logits"):
        cal.fit(logits=bad, target=y)
    with pytest.raises(ValueError, match="target"):
        cal.fit(logits=Z, target=y[:-1])
    with pytest.raises(C.NotFittedError):
        cal.predict_proba(logits=Z)
    cal.fit(logits=Z, target=y)
    with pytest.raises(ValueError, match="logits"):
        cal.predict_proba(logits=Z[:, :3])
    with pytest.raises(ValueError, match="probs"):
        cal.predict_temperature(probs=softmax(Z, axis=1))
    assert cal.get_params()["hidden"] == (16, 8)


def test_brier_loss_objective_is_the_brier_score_of_the_final_map():
    Z, y, _ = _two_clusters(3000, seed=10)
    fit = C.MLPTemperatureScaling(**{**SMALL, "epochs": 2}, loss="brier").fit(
        logits=Z, target=y)
    assert fit.status_ == "ok" and fit.loss_ == "brier"
    P = fit.predict_proba(logits=Z)
    brier = np.mean(np.sum((P - np.eye(4)[y]) ** 2, axis=1))
    assert fit.objective_ == pytest.approx(brier, rel=1e-12)


def test_first_adam_step_moves_every_live_parameter_by_lr():
    # Adam's first step is lr * g / (|g| + 1e-8): each parameter with a gradient moves by
    # lr; lr = 1e-300 leaves the (seeded) initial parameters as they are. One batch of the
    # 700 items: the shapes of the padding test, so nothing new compiles
    Z, y, _ = _two_clusters(700, seed=4)
    kw = {"hidden": (4,), "epochs": 1, "batch_size": 700}
    init = C.MLPTemperatureScaling(**kw, lr=1e-300).fit(logits=Z, target=y)
    step = C.MLPTemperatureScaling(**kw, lr=1e-3).fit(logits=Z, target=y)
    moves = np.concatenate([np.abs(a - b).ravel() for pa, pb in zip(
        init.params_, step.params_, strict=True) for a, b in zip(pa, pb, strict=True)])
    live = moves > 1e-12
    # 4 x 4 + 4 + 4 + 1 = 25 parameters; measured: all 25 move (no dead ReLU unit here)
    assert moves.size == 25 and live.sum() == 25
    np.testing.assert_allclose(moves[live], 1e-3, rtol=1e-4)
