"""The exact temperature-scaling solve: Halley passes over cache-sized blocks and the
objective read off the last pass."""

import numpy as np
import pytest
from scipy import optimize
from scipy.special import logsumexp, softmax

import noisycal as nc
from noisycal.calibrators.scaling import temperature_solver as tm


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

    def spy(beta, S, smax, r, single=False):
        calls.append((S.shape[0], single))
        return real(beta, S, smax, r, single)

    monkeypatch.setattr(tm, "_pass_rows", spy)
    ts = nc.calibrators.TemperatureScaling().fit(logits=z, target=y)
    # every 100th item (three passes), every 10th (one Halley step within START_STEP),
    # then all items: one single-precision pass refines the start, one double-precision
    # pass ends the iteration, none for the loss
    assert ts.n_iter_ == 1
    assert calls == [(100, False)] * 3 + [(1000, False), (10000, True), (10000, False)]
    ref = 1.0 / _brentq_beta(z, np.eye(100)[y])
    assert ts.temperature_ == pytest.approx(ref, rel=1e-13)


def _spy_shifts(monkeypatch):
    """Record (beta, rows, shifted, single) of every pass."""
    seen = []
    real = tm._pass_rows

    def spy(beta, S, smax, r, single=False):
        seen.append((beta, S, smax is not None, single))
        return real(beta, S, smax, r, single)

    monkeypatch.setattr(tm, "_pass_rows", spy)
    return seen


@pytest.mark.parametrize("offset,scale,shifted", [
    (0.0, 3.0, False), (20.0, 3.0, False), (500.0, 3.0, True), (-40.0, 0.5, True)])
def test_single_precision_start_and_unshifted_passes_keep_the_exact_root(
        offset, scale, shifted, monkeypatch):
    # 20,000 x 20 scores take the single-precision start. Offsets of 500 and -40 against
    # mean row spreads of about 5 and 1 force shifted passes (raw moments about 0 would
    # cancel); offsets of 0 and 20 take unshifted ones.
    z, y = _data(20000, 20, 4, scale, temp=scale / 2.0)
    z = z + offset
    seen = _spy_shifts(monkeypatch)
    ts = nc.calibrators.TemperatureScaling(bounds=(1e-3, 1e4)).fit(logits=z, target=y)
    monkeypatch.undo()
    assert [sh for _, _, sh, _ in seen] == [shifted] * len(seen)
    full = [single for _, S, _, single in seen if len(S) == 20000]
    assert full[0] and not any(full[1:]) and ts.n_iter_ == len(full) - 1 <= 2
    ref = 1.0 / _brentq_beta(z, np.eye(20)[y])
    assert ts.status_ == "ok"
    assert ts.temperature_ == pytest.approx(ref, rel=1e-13)
    eta = z / ts.temperature_
    direct = float(np.mean(logsumexp(eta, axis=1) - eta[np.arange(len(y)), y]))
    assert ts.objective_ == pytest.approx(direct, rel=1e-13)


def test_peaked_rows_take_shifted_passes_where_unshifted_ones_would_overflow(monkeypatch):
    # two top classes at about 100, half a unit apart, labels split between them at
    # temperature 0.1: beta* is about 10, so beta * max|s| is about 1000 at the root and
    # exp(beta s) would overflow; the rows' offsets are within 16 spreads, so only the
    # exponential's range decides
    rng = np.random.default_rng(8)
    n, K = 6000, 50
    z = rng.normal(0.0, 1.0, (n, K))
    z[:, 0] = 100.0
    z[:, 1] = 100.0 - rng.uniform(0.3, 0.7, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp((z[:, 0] - z[:, 1]) / 0.1))).astype(int)
    seen = _spy_shifts(monkeypatch)
    ts = nc.calibrators.TemperatureScaling(bounds=(1e-3, 1e4)).fit(logits=z, target=y)
    monkeypatch.undo()
    limit = {True: 60.0, False: 600.0}
    assert all(sh == (b * 100.0 > limit[single]) for b, _, sh, single in seen)
    assert any(sh for _, _, sh, _ in seen) and not all(sh for _, _, sh, _ in seen)
    assert ts.temperature_ == pytest.approx(1.0 / _brentq_beta(z, np.eye(K)[y]), rel=1e-13)


@pytest.mark.parametrize("scale", [1e10, 1e-30])
def test_temperature_scales_with_the_scores(scale):
    # at scale 1e10 every softmax row is one-hot at the start beta = 1 (slope 0: the
    # iteration bisects); at 1e-30 beta* is about 5e29
    z, y = _data(3000, 100, 9)
    box = (1e-300, 1e300)
    a = nc.calibrators.TemperatureScaling(bounds=box).fit(logits=z, target=y)
    b = nc.calibrators.TemperatureScaling(bounds=box).fit(logits=z * scale, target=y)
    assert b.status_ == "ok"
    assert b.temperature_ == pytest.approx(scale * a.temperature_, rel=1e-12)


def test_scores_whose_sum_overflows():
    z, y = _data(500, 400, 10)
    c = 2.0 ** 1010  # exact scaling; the scores reach about 1.6e305
    with np.errstate(over="ignore"):
        assert np.isinf(np.sum((z + 10.0) * c))
    box = (1e-300, 1e308)
    a = nc.calibrators.TemperatureScaling(bounds=box).fit(logits=z + 10.0, target=y)
    b = nc.calibrators.TemperatureScaling(bounds=box).fit(logits=(z + 10.0) * c, target=y)
    assert b.status_ == "ok"
    assert b.temperature_ == pytest.approx(c * a.temperature_, rel=1e-12)


@pytest.mark.parametrize("mask", [-1e16, -1e300])
def test_a_masked_class_changes_nothing(mask):
    # the class never gets probability; before, its -1e16 scores widened the tolerance of
    # the g(infinity) test (scaled by the mean row spread) into a false 'separable'
    z, y = _data(3000, 100, 12)
    a = nc.calibrators.TemperatureScaling().fit(logits=z, target=y)
    b = nc.calibrators.TemperatureScaling().fit(
        logits=np.column_stack([z, np.full(3000, mask)]), target=y)
    assert b.status_ == "ok"
    assert b.temperature_ == pytest.approx(a.temperature_, rel=1e-12)


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
    z = z + 20.0  # an offset of several row spreads: unshifted raw moments still hold
    T = np.eye(7)[y]
    smax = z.max(axis=1)
    beta = 0.7
    m = float(np.mean(z[np.arange(700), y]))
    q = softmax(beta * z, axis=1)
    mean = np.sum(q * z, axis=1)
    var = np.sum(q * (z - mean[:, None]) ** 2, axis=1)
    third = np.sum(q * (z - mean[:, None]) ** 3, axis=1)
    loss = float(np.mean(logsumexp(beta * z, axis=1) - beta * z[np.arange(700), y]))
    for shift in (True, False):
        p = tm.newton_pass(beta, z, smax, None, m, shift=shift)
        assert p.g == pytest.approx(_g(beta, z, T), rel=1e-10)
        assert p.slope == pytest.approx(np.mean(var), rel=1e-11)
        assert p.curvature == pytest.approx(np.mean(third), rel=1e-9)
        assert p.loss == pytest.approx(loss, rel=1e-13)
    # single precision: good to about 1e-6 in g and the slope (a start only)
    p = tm.newton_pass(beta, z, smax, None, m)
    s = tm.newton_pass(beta, z, smax, None, m, single=True)
    assert s.g == pytest.approx(p.g, abs=1e-5 * p.slope)
    assert s.slope == pytest.approx(p.slope, rel=1e-5)
    assert s.curvature == pytest.approx(p.curvature, rel=tm.SINGLE_RERR)
