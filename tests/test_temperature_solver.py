"""The exact temperature-scaling solve: Halley passes over cache-sized blocks and the
objective read off the last pass."""

import numpy as np
import pytest
from scipy import optimize
from scipy.special import logsumexp, softmax

import noisycal as nc
from noisycal.calibrators import temperature_solver as tm


def _data(n, K, seed, scale=3.0, temp=1.8):
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, scale, (n, K))
    p = softmax(z / temp, axis=1)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, y


def _g(beta, z, T):
    """d/dbeta of the mean log loss of softmax(beta z) against T, directly."""
    q = softmax(beta * z, axis=1)
    return float(np.mean(np.sum(q * z, axis=1) * T.sum(axis=1) - np.sum(T * z, axis=1)))


def _brentq_beta(z, T):
    return optimize.brentq(lambda b: _g(b, z, T), 1e-3, 50.0, xtol=1e-15, rtol=1e-15)


@pytest.mark.parametrize("seed,scale,temp", [(0, 3.0, 1.8), (1, 1.0, 0.5), (2, 5.0, 4.0),
                                             (3, 0.3, 1.0)])
def test_root_to_machine_precision_in_at_most_three_passes(seed, scale, temp):
    z, y = _data(5000, 20, seed, scale, temp)
    ts = nc.calibrators.TemperatureScaling(bounds=(1e-3, 1e3)).fit(logits=z, target=y)
    ref = 1.0 / _brentq_beta(z, np.eye(20)[y])
    assert ts.status_ == "ok"
    assert ts.temperature_ == pytest.approx(ref, rel=1e-13)
    # from the subset's start, Halley's cubic convergence needs two or three passes
    assert 1 <= ts.n_iter_ <= 3


def test_one_single_and_one_double_precision_full_pass_and_none_for_the_objective(
        monkeypatch):
    z, y = _data(10000, 100, 0)
    calls = []
    real = tm._pass_rows

    def spy(*args):
        calls.append((args[1].shape[0], args[6] if len(args) > 6 else False))
        return real(*args)

    monkeypatch.setattr(tm, "_pass_rows", spy)
    ts = nc.calibrators.TemperatureScaling().fit(logits=z, target=y)
    # every 100th item (three passes), every 10th (one Halley step within START_STEP),
    # then all items: one single-precision pass refines the start, one double-precision
    # pass ends the iteration, none for the loss
    assert ts.n_iter_ == 1
    assert calls == [(100, False)] * 3 + [(1000, False), (10000, True), (10000, False)]
    ref = 1.0 / _brentq_beta(z, np.eye(100)[y])
    assert ts.temperature_ == pytest.approx(ref, rel=1e-13)


@pytest.mark.parametrize("offset,scale,shifted", [
    (0.0, 3.0, False), (20.0, 3.0, False), (500.0, 3.0, True), (-40.0, 0.5, True),
    (0.0, 200.0, None)])
def test_single_precision_start_and_unshifted_passes_keep_the_exact_root(
        offset, scale, shifted, monkeypatch):
    # 20,000 x 20 scores take the single-precision start. Offsets of 500 and -40 against
    # mean row spreads of about 5 and 1 force shifted passes (raw moments about 0 would
    # cancel); a scale of 200 puts beta * max|s| beyond the exponential's safe range at
    # the start beta = 1 only.
    z, y = _data(20000, 20, 4, scale, temp=scale / 2.0)
    z = z + offset
    seen = []
    real = tm._pass_rows

    def spy(*args):
        seen.append((args[0] * float(np.max(np.abs(z.max(axis=1)))), args[2] is not None))
        return real(*args)

    monkeypatch.setattr(tm, "_pass_rows", spy)
    ts = nc.calibrators.TemperatureScaling(bounds=(1e-3, 1e4)).fit(logits=z, target=y)
    monkeypatch.setattr(tm, "_pass_rows", real)
    if shifted is None:  # shifted exactly where beta * max|s| exceeds 600 (60 in float32)
        assert any(sh for _, sh in seen) and not all(sh for _, sh in seen)
        assert all(sh == (bt > 60.0) for bt, sh in seen if bt <= 60.0 or bt > 600.0)
    else:
        assert all(sh == shifted for _, sh in seen)
    ref = 1.0 / _brentq_beta(z, np.eye(20)[y])
    assert ts.status_ == "ok" and ts.n_iter_ <= 2
    assert ts.temperature_ == pytest.approx(ref, rel=1e-13)
    eta = z / ts.temperature_
    direct = float(np.mean(logsumexp(eta, axis=1) - eta[np.arange(len(y)), y]))
    assert ts.objective_ == pytest.approx(direct, rel=1e-13)


def test_constant_rows_are_not_identified_whatever_their_offsets():
    c = np.linspace(-3.0, 1e6, 30000)
    z = np.repeat(c[:, None], 12, axis=1)
    ts = nc.calibrators.TemperatureScaling()
    with pytest.warns(nc.IdentifiabilityWarning):
        ts.fit(logits=z, target=np.arange(30000) % 12)
    assert ts.status_ == "not_identified" and ts.temperature_ == 1.0


def test_label_vectors_give_the_one_hot_fit_without_the_matrix():
    z, y = _data(3000, 12, 11)
    a = nc.calibrators.TemperatureScaling().fit(logits=z, target=y)
    b = nc.calibrators.TemperatureScaling().fit(logits=z, target=np.eye(12)[y])
    c = nc.calibrators.TemperatureScaling().fit(logits=z, target=list(y))
    assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-14)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-14)
    assert a.mean_target_score_ == pytest.approx(b.mean_target_score_, rel=1e-14)
    assert c.temperature_ == a.temperature_ and a.loss_ == "log" and a.status_ == "ok"
    with pytest.raises(ValueError, match="target must lie in 0..11, found label 12"):
        nc.calibrators.TemperatureScaling().fit(logits=z, target=np.where(y == 3, 12, y))
    with pytest.raises(ValueError, match="target has 2999 labels"):
        nc.calibrators.TemperatureScaling().fit(logits=z, target=y[1:])
    flat = nc.calibrators.TemperatureScaling()
    with pytest.warns(nc.IdentifiabilityWarning):
        flat.fit(logits=np.zeros((5, 3)), target=np.array([0, 1, 2, 0, 1]))
    assert flat.status_ == "not_identified" and flat.objective_ == pytest.approx(np.log(3))


def test_objective_read_off_the_last_pass_equals_the_direct_loss():
    z, y = _data(4000, 10, 5)
    ts = nc.calibrators.TemperatureScaling().fit(logits=z, target=y)
    eta = z / ts.temperature_
    direct = float(np.mean(logsumexp(eta, axis=1) - eta[np.arange(len(y)), y]))
    assert ts.objective_ == pytest.approx(direct, rel=1e-13)


def test_soft_rows_not_summing_exactly_to_one_use_their_row_sums():
    z, y = _data(3000, 5, 6)
    rng = np.random.default_rng(1)
    T = 0.8 * softmax(z / 2.0, axis=1) + 0.2 * rng.dirichlet(np.ones(5), size=3000)
    T *= (1.0 + rng.uniform(-5e-7, 5e-7, (3000, 1)))  # within the rows' tolerance
    ts = nc.calibrators.TemperatureScaling().fit(logits=z, target=T)
    assert ts.temperature_ == pytest.approx(1.0 / _brentq_beta(z, T), rel=1e-12)
    beta, kind, _ = tm.solve_inverse_temperature(z, T)
    assert kind == "root" and 1.0 / beta == pytest.approx(ts.temperature_, rel=1e-14)


def test_newton_pass_matches_direct_moments():
    z, y = _data(700, 7, 7)
    T = np.eye(7)[y]
    smax = z.max(axis=1)
    beta = 0.7
    m = float(np.mean(z[np.arange(700), y]))
    p = tm.newton_pass(beta, z, smax, None, m)
    u = tm.newton_pass(beta, z, smax, None, m, shift=False)
    assert np.allclose(u, p, rtol=1e-12, atol=0)
    q = softmax(beta * z, axis=1)
    mean = np.sum(q * z, axis=1)
    var = np.sum(q * (z - mean[:, None]) ** 2, axis=1)
    third = np.sum(q * (z - mean[:, None]) ** 3, axis=1)
    assert p.g == pytest.approx(_g(beta, z, T), rel=1e-12)
    assert p.slope == pytest.approx(np.mean(var), rel=1e-12)
    assert p.curvature == pytest.approx(np.mean(third), rel=1e-10)
    loss = float(np.mean(logsumexp(beta * z, axis=1) - beta * z[np.arange(700), y]))
    assert p.lse - beta * m == pytest.approx(loss, rel=1e-13)
