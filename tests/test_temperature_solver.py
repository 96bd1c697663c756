"""The exact temperature-scaling solve: Halley passes over cache-sized blocks and the
objective read off the last pass."""

import numpy as np
import pytest
from scipy import optimize
from scipy.special import logsumexp, softmax

import noisycal as nc
from noisycal.calibrators import temperature as tm


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


def test_two_full_passes_and_no_pass_for_the_objective(monkeypatch):
    z, y = _data(10000, 100, 0)
    calls = []
    real = tm._pass_rows

    def spy(*args):
        calls.append(args[1].shape[0])
        return real(*args)

    monkeypatch.setattr(tm, "_pass_rows", spy)
    ts = nc.calibrators.TemperatureScaling().fit(logits=z, target=y)
    # every 100th item, every 10th (started from the former: two passes), then the full
    # data: two passes, none for the loss
    assert ts.n_iter_ == 2 and calls.count(10000) == 2 and calls.count(1000) == 2
    assert set(calls) == {100, 1000, 10000}


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
    m_top = float(np.mean(smax))
    mc = float(np.mean(z[np.arange(700), y])) - m_top
    beta = 0.7
    p = tm.newton_pass(beta, z, smax, None, mc)
    q = softmax(beta * z, axis=1)
    mean = np.sum(q * z, axis=1)
    var = np.sum(q * (z - mean[:, None]) ** 2, axis=1)
    third = np.sum(q * (z - mean[:, None]) ** 3, axis=1)
    assert p.g == pytest.approx(_g(beta, z, T), rel=1e-12)
    assert p.slope == pytest.approx(np.mean(var), rel=1e-12)
    assert p.curvature == pytest.approx(np.mean(third), rel=1e-10)
    loss = float(np.mean(logsumexp(beta * z, axis=1) - beta * z[np.arange(700), y]))
    assert p.lse - beta * mc == pytest.approx(loss, rel=1e-13)
