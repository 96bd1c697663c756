"""Hui–Walter method of moments (paper 003, spec section 3.2)."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal.hui_walter import hui_walter_inverse, hui_walter_moments


@pytest.mark.parametrize("theta", [
    [0.08, 0.84, 0.13, 0.89, 0.30, 0.70],
    [0.20, 0.95, 0.01, 0.60, 0.65, 0.10],
    [0.45, 0.55, 0.30, 0.99, 0.05, 0.95],
])
def test_inverse_is_exact_on_population_moments(theta):
    theta = np.asarray(theta)
    with jax.enable_x64(True):
        q = np.asarray(hui_walter_moments(jnp.asarray(theta)))
        jac = np.asarray(jax.jacfwd(hui_walter_moments)(jnp.asarray(theta)))
    est, status, _ = hui_walter_inverse(q)
    assert status == "ok"
    np.testing.assert_allclose(est, theta, atol=1e-12)
    a1, b1, a2, b2, mu0, mu1 = theta
    expected_det = (b1 - a1) ** 2 * (b2 - a2) ** 2 * (mu1 - mu0) ** 2
    assert abs(np.linalg.det(jac)) == pytest.approx(expected_det, rel=1e-10)


def test_recovers_toy_channels_at_the_median_split():
    t = nc.simulate.gaussian_toy(200_000, truth="shifted", seed=0)
    g = (t.z >= np.median(t.z)).astype(int)
    fit = nc.HuiWalter().fit(t.annotations[:, :2], groups=g)
    assert fit.status == "ok"
    np.testing.assert_allclose(fit.confusion[:, 0, 1], [0.08, 0.13], atol=0.01)
    np.testing.assert_allclose(fit.confusion[:, 1, 1], [0.84, 0.89], atol=0.01)
    d = fit.details
    a, b = fit.confusion[:, 0, 1], fit.confusion[:, 1, 1]
    mu = fit.prevalence[:, 1]
    assert abs(d["jacobian_det"]) == pytest.approx(
        np.prod((b - a) ** 2) * (mu[1] - mu[0]) ** 2, rel=1e-8)
    np.testing.assert_allclose(fit.item_posterior.sum(1), 1.0)
    # the same data through Annotations
    ann = nc.Annotations.from_wide(t.annotations[:5000, :2])
    assert nc.HuiWalter().fit(ann, groups=g[:5000]).status == "ok"


def test_equal_groups_are_reported_not_identified():
    rng = np.random.default_rng(1)
    y = rng.random(4000) < 0.4
    A = np.column_stack([(rng.random(4000) < np.where(y, 0.9, 0.1)),
                         (rng.random(4000) < np.where(y, 0.8, 0.2))]).astype(float)
    g = rng.integers(0, 2, 4000)  # groups unrelated to the class: mu_0 = mu_1
    with pytest.warns(nc.IdentifiabilityWarning):
        fits = [nc.HuiWalter().fit(A, groups=rng.permutation(g)) for _ in range(5)]
    # with mu_0 = mu_1 the inverse is ill-posed: most draws fail outright, and the
    # Jacobian diagnostic is near zero whenever they do not
    assert any(f.status == "infeasible_mom" for f in fits)
    for f in fits:
        if f.status == "ok":
            assert f.details["jacobian_min_sv"] < 0.05


@pytest.mark.parametrize("A, groups, match", [
    (np.zeros((4, 3)), [0, 0, 1, 1], "shape"),
    (np.full((4, 2), 2.0), [0, 0, 1, 1], "0/1"),
    (np.zeros((4, 2)), [0, 0, 0, 0], "two groups"),
    (np.zeros((4, 2)), [0, 1, 2, 0], "two groups"),
    (np.zeros((4, 2)), [0, 1], "one entry per item"),
])
def test_bad_input(A, groups, match):
    with pytest.raises(ValueError, match=match):
        nc.HuiWalter().fit(A, groups=np.asarray(groups))


def test_moment_triple_is_exact_on_population_frequencies():
    from itertools import product

    from noisycal.hui_walter import moment_triple

    mu, a, b = 0.25, np.array([0.10, 0.15, 0.20]), np.array([0.80, 0.90, 0.85])
    rows, N = [], 32_000  # every pattern probability is a multiple of 1/32000
    for s in product([0, 1], repeat=3):
        s = np.array(s)
        p = (1 - mu) * np.prod(np.where(s == 1, a, 1 - a)) + mu * np.prod(np.where(s == 1, b,
                                                                                  1 - b))
        rows += [s] * int(round(p * N))
    res = moment_triple(np.array(rows))
    assert len(rows) == N and res["status"] == "ok"
    np.testing.assert_allclose(res["a"], a, atol=1e-10)
    np.testing.assert_allclose(res["b"], b, atol=1e-10)
    assert res["prevalence"] == pytest.approx(mu, abs=1e-10)
    # anchor choice does not change the answer; recovery on the toy
    again = moment_triple(np.array(rows), anchor=2)
    np.testing.assert_allclose(again["a"], a, atol=1e-10)
    t = nc.simulate.gaussian_toy(200_000, truth="shifted", seed=0)
    toy = moment_triple(t.annotations)
    np.testing.assert_allclose(toy["a"], [0.08, 0.13, 0.18], atol=0.01)
    np.testing.assert_allclose(toy["b"], [0.84, 0.89, 0.94], atol=0.01)
    assert toy["prevalence"] == pytest.approx(0.477939, abs=0.01)
    with pytest.raises(ValueError, match="0/1"):
        moment_triple(np.zeros((5, 2)))
