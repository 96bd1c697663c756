"""Smooth ECE (Błasiok & Nakkiran 2023): hand and quadrature checks, relplot cross-checks,
the linear form, the bootstrap with the bandwidth held fixed, any target."""

import warnings

import numpy as np
import pytest
from scipy import integrate

import noisycal as nc
from noisycal.metrics.smooth import smooth_ece, smooth_ece_linear_form
from noisycal.metrics.smooth.intervals import _value_jax
from noisycal.metrics.smooth.kernel import (
    _damping,
    _item_cosines,
    grid_size,
    n_terms,
    trapezoid_weights,
)


def _kernel(u, f, sigma, images=4):
    """Reflected Gaussian kernel K_sigma(u, f) as an explicit image sum (independent of the
    cosine series the module uses)."""
    u = np.asarray(u, dtype=float)[..., None]
    out = 0.0
    for k in range(-images, images + 1):
        for z in (f + 2 * k, -f + 2 * k):
            out = out + np.exp(-0.5 * ((u - z) / sigma) ** 2)
    return (out / (np.sqrt(2 * np.pi) * sigma)).squeeze(-1) if np.ndim(f) == 0 else \
        out / (np.sqrt(2 * np.pi) * sigma)


def _smece_quad(f, d, sigma):
    """int_0^1 |(1/n) sum_i K(u, f_i) d_i| du by adaptive quadrature, split at sign changes."""
    def r(u):
        return float(_kernel(u, f, sigma) @ d) / len(f)

    grid = np.linspace(0, 1, 4001)
    vals = _kernel(grid, f, sigma) @ d / len(f)
    cuts = [0.0]
    for k in np.nonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))[0]:
        from scipy.optimize import brentq
        cuts.append(brentq(r, grid[k], grid[k + 1], xtol=1e-15))
    cuts.append(1.0)
    return sum(abs(integrate.quad(r, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)[0])
               for a, b in zip(cuts[:-1], cuts[1:], strict=True))


# ----------------------------------------------------------------------------- hand checks


def test_one_item_gives_its_residual_at_every_bandwidth():
    # r(u) = 0.7 K(u, 0.3) >= 0 and K integrates to 1: smECE_sigma = 0.7 for every sigma,
    # so the fixed point is 0.7 too
    for bw in (0.01, 0.2, 3.0):
        assert float(smooth_ece([0.3], [1], bandwidth=bw, interval=None)) == pytest.approx(
            0.7, abs=1e-12)
    est = smooth_ece([0.3], [1], interval=None)
    assert est.value == pytest.approx(0.7, abs=1e-12)
    assert est.details["bandwidth"] == pytest.approx(0.7, abs=1e-12)


def test_constant_miscalibration_is_the_shift():
    # f = q + 0.1 against the true probability q (a soft target): every residual is -0.1,
    # so smECE_sigma = 0.1 for every sigma and sigma* = 0.1
    rng = np.random.default_rng(1)
    q = rng.uniform(0.1, 0.8, 20000)
    est = smooth_ece(q + 0.1, q, interval=None)
    assert est.value == pytest.approx(0.1, abs=1e-12)
    assert est.details["bandwidth"] == pytest.approx(0.1, abs=1e-12)
    # against labels drawn from q: 0.1 up to sampling noise (sd of mean residual ~0.0035)
    y = (rng.random(q.size) < q).astype(int)
    assert float(smooth_ece(q + 0.1, y, interval=None)) == pytest.approx(0.1, abs=0.01)


def test_quadrature_matches_adaptive_integration_for_any_target():
    # seven items, residuals from a target outside [0, 1] (a corrected target may leave it)
    rng = np.random.default_rng(5)
    f = rng.uniform(0, 1, 7)
    t = rng.normal(0.5, 1.0, 7)
    T = nc.targets.from_matrix(np.column_stack([1 - t, t]), kind="corrected")
    for bw in (0.03, 0.07, 0.3):
        ref = _smece_quad(f, t - f, bw)
        assert float(smooth_ece(f, T, bandwidth=bw, interval=None)) == pytest.approx(
            ref, rel=1e-6)
    # the fixed point: smECE at sigma* is sigma*, by the independent quadrature too
    est = smooth_ece(f, T, interval=None)
    assert _smece_quad(f, t - f, est.details["bandwidth"]) == pytest.approx(
        est.details["bandwidth"], rel=1e-6)
    assert abs(est.details["fixed_point_gap"]) < 1e-6 * est.value


def test_calibrated_population_shrinks_like_n_to_the_minus_one_third():
    # calibrated: the value is pure noise, smECE_sigma ~ 1/sqrt(n sigma) and the fixed
    # point sigma* ~ n**(-1/3)
    means = []
    for n in (250, 2500, 25000):
        vals = []
        for s in range(3):
            rng = np.random.default_rng(s)
            f = rng.uniform(0, 1, n)
            vals.append(float(smooth_ece(f, (rng.random(n) < f).astype(int), interval=None)))
        means.append(np.mean(vals))
    assert means[0] > means[1] > means[2]
    slope = np.log(means[2] / means[0]) / np.log(100)
    assert slope == pytest.approx(-1 / 3, abs=0.08)


def test_all_zero_residuals_are_degenerate():
    p = np.array([0.2, 0.6, 0.9])
    est = smooth_ece(p, p)
    assert est.value == 0.0 and est.status == "degenerate" and est.interval is None
    assert float(smooth_ece(p, p, bandwidth=0.1, interval=None)) == 0.0


# ----------------------------------------------------------------------------- relplot
#
# Reference values from relplot 1.0.3 (apple/ml-calibration; `pip install relplot==1.0.3`,
# numpy 2.4), on the seeded cases of `_relplot_cases()`:
#   default = relplot.smECE(f, y, return_width=True)    -> (value, width)
#   sigma05 = relplot.smECE_sigma(f, y, 0.05)
#   fine05  = relplot's own kernel at a fine resolution, see `_relplot_fine`:
#             ReflectedGaussianKernel(0.05).apply(..., eval_points=20001) on a 100001-point
#             mesh, trapezoid rule, ratio of integrals (as relplot.metrics.smooth_ece does)
# relplot's defaults discretise: the kernel on a 1001-point linearly binned grid truncated
# at +-0.5, a 200-point Riemann sum with the two ends at full weight, a 10-step bisection
# for the bandwidth (resolution 2**-10) returning the upper end of its last interval.
RELPLOT_VERSION = "1.0.3"
RELPLOT = {  # case: (default value, default width, sigma05, fine05)
    "calibrated": (0.020407811579438797, 0.021484375, 0.011037380528660322,
                   0.011056236209902447),
    "overconfident": (0.13349862384777592, 0.1337890625, 0.13968418341367667,
                      0.1394030038627836),
    "badly_miscalibrated": (0.24914084279858198, 0.25, 0.2484395827387457,
                            0.24923625510125005),
    "top_label": (0.16067492916138548, 0.1611328125, 0.16334129859527177,
                  0.16303292261122437),
}


def _relplot_cases():
    rng = np.random.default_rng(20230921)
    n = 2000
    f = rng.uniform(0, 1, n)
    yield "calibrated", f, (rng.random(n) < f).astype(int)
    f = rng.beta(5, 2, n)
    yield "overconfident", f, (rng.random(n) < 0.5 + 0.4 * (f - 0.5)).astype(int)
    f = rng.uniform(0, 1, n)
    yield "badly_miscalibrated", f, (rng.random(n) < f**3).astype(int)
    z = rng.normal(size=(n, 4)) * 2.5
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(4, p=np.sqrt(r) / np.sqrt(r).sum()) for r in p])
    yield "top_label", p, y


def _binary_view(p, y):
    """relplot's (confidence, correct) pairs: the top label for a probability matrix."""
    if p.ndim == 1:
        return p, y
    pred = p.argmax(1)
    return p.max(1), (pred == y).astype(int)


def _check_against_relplot(name, p, y, ref):
    value, width, sigma05, fine05 = ref
    est = smooth_ece(p, y, interval=None)
    mine05 = float(smooth_ece(p, y, bandwidth=0.05, interval=None))
    # 1. same kernel, same bandwidth, relplot at fine resolution: agreement to 1e-6
    #    (measured: at most 2e-8)
    assert mine05 == pytest.approx(fine05, abs=1e-6), name
    # 2. relplot's default discretisation: its 200-point Riemann sum gives the two ends a
    #    full weight, which moves a ratio of integrals by up to ~1/199 relative (measured:
    #    0.17% to 0.32% at sigma = 0.05, 0.04% to 0.31% at relplot's width)
    assert mine05 == pytest.approx(sigma05, rel=1 / 199), name
    at_width = float(smooth_ece(p, y, bandwidth=width, interval=None))
    assert at_width == pytest.approx(value, rel=1 / 199), name
    # 3. the bandwidth: relplot returns the upper end of a bisection interval of length
    #    2**-10 holding its (discretised) fixed point; its smECE is off by < 1/199 relative,
    #    which moves the root by less than that times sigma
    gap = width - est.details["bandwidth"]
    slack = est.details["bandwidth"] / 199
    assert -slack <= gap <= 2**-10 + slack, (name, gap)


@pytest.mark.parametrize("case", list(RELPLOT))
def test_embedded_relplot_reference_values(case):
    p, y = next((p, y) for name, p, y in _relplot_cases() if name == case)
    _check_against_relplot(case, p, y, RELPLOT[case])


def _relplot_fine(relplot, f, y, sigma, eval_points=20001, mesh=100001):
    ker = relplot.kernels.ReflectedGaussianKernel(sigma)
    u = np.linspace(0, 1, mesh)
    a = ker.apply(f, f - y, u, eval_points=eval_points)
    dens = ker.apply(f, np.ones_like(f), u, eval_points=eval_points)
    return np.trapezoid(np.abs(a), u) / np.trapezoid(dens, u)


def test_live_relplot_comparison():
    from importlib.metadata import version

    relplot = pytest.importorskip("relplot")
    pytest.importorskip("relplot.kernels")

    same_version = version("relplot") == RELPLOT_VERSION
    for name, p, y in _relplot_cases():
        f, c = _binary_view(p, y)
        value, width = relplot.smECE(f, c.astype(float), return_width=True)
        sigma05 = relplot.smECE_sigma(f, c.astype(float), 0.05)
        fine05 = (_relplot_fine(relplot, f, c.astype(float), 0.05)
                  if name in ("calibrated", "overconfident") else RELPLOT[name][3])
        if same_version:  # the embedded values are reproducible
            np.testing.assert_allclose([value, width, sigma05, fine05], RELPLOT[name],
                                       rtol=1e-10, atol=0)
        _check_against_relplot(name, p, y, (value, width, sigma05, fine05))


# ----------------------------------------------------------------------------- targets


def test_every_kind_and_target_form():
    rng = np.random.default_rng(2)
    n = 300
    P = rng.dirichlet(np.ones(3) * 2, n)
    Y = rng.integers(0, 3, n)
    ref = float(smooth_ece(P, Y, interval=None))
    assert float(smooth_ece(P, nc.targets.hard(Y, n_classes=3), interval=None)) == ref
    assert float(smooth_ece(P, np.eye(3)[Y], interval=None)) == ref
    assert float(smooth_ece(logits=np.log(P), target=Y, interval=None)) == pytest.approx(
        ref, rel=1e-12)
    # top label by hand: the confidence and the target of the predicted class
    conf = P.max(1)
    hit = (P.argmax(1) == Y).astype(int)
    assert float(smooth_ece(conf, hit, interval=None)) == pytest.approx(ref, rel=1e-12)
    # classwise: one shared bandwidth, the mean of the K per-class values
    est = smooth_ece(P, Y, kind="classwise", interval=None)
    bw = est.details["bandwidth"]
    per = [float(smooth_ece(P[:, k], (Y == k).astype(int), bandwidth=bw,
                            n_grid=est.details["n_grid"], interval=None)) for k in range(3)]
    assert est.value == pytest.approx(np.mean(per), rel=1e-12)
    assert list(est.details["per_group"].values()) == pytest.approx(per, rel=1e-12)
    assert est.value == pytest.approx(bw, rel=1e-6)  # the fixed point of the class mean
    assert est.details["residual"].shape == (3, est.details["n_grid"])
    # positive class of a two-column matrix equals the 1-D input
    P2 = np.column_stack([1 - P[:, 0], P[:, 0]])
    y2 = (Y == 0).astype(int)
    assert float(smooth_ece(P2, y2, kind="positive_class", interval=None)) == pytest.approx(
        float(smooth_ece(P[:, 0], y2, interval=None)), rel=1e-12)
    # a soft target: the residual is target - confidence, whatever the target's range
    soft = rng.dirichlet(np.ones(3), n)
    est = smooth_ece(P, soft, kind="classwise", bandwidth=0.1, interval=None)
    f, d = P[:, 1], soft[:, 1] - P[:, 1]
    assert est.details["per_group"]["class_1"] == pytest.approx(_smece_quad(f, d, 0.1),
                                                                rel=1e-6)


def test_a_target_from_a_failed_fit_is_flagged():
    class Fit:  # a fit-like object whose status is not ok
        confusion = np.array([[[0.9, 0.1], [0.1, 0.9]]] * 3)
        group_prevalence = np.array([[0.5, 0.5]])
        n_items, details, status, message, method = 4, {}, "not_converged", "EM hit max_iter", "em"

    A = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]])
    est = smooth_ece(np.array([0.2, 0.7, 0.4, 0.9]), nc.targets.corrected(A, Fit()),
                     interval=None)
    assert est.status == "target_not_converged" and np.isfinite(est.value)


# ----------------------------------------------------------------------------- linear form


@pytest.mark.parametrize("kind", ["top_label", "classwise"])
def test_linear_form_identity_mean_and_covariance(kind):
    rng = np.random.default_rng(3)
    n = 120
    P = rng.dirichlet(np.ones(3) * 2, n)
    Y = rng.integers(0, 3, n)
    m = 61
    est = smooth_ece(P, Y, kind=kind, n_grid=m, interval=None)
    bw = est.details["bandwidth"]
    mean, cov, w = smooth_ece_linear_form(P, Y, kind=kind, n_grid=m)
    assert w @ np.abs(mean) == pytest.approx(est.value, rel=1e-12)
    # brute force with the explicit image-sum kernel
    u = np.linspace(0, 1, m)
    if kind == "top_label":
        conf, d = P.max(1)[:, None], ((P.argmax(1) == Y) - P.max(1))[:, None]
    else:
        conf, d = P, np.eye(3)[Y] - P
    x = np.concatenate([_kernel(u, conf[:, g], bw).T * d[:, g:g + 1]
                        for g in range(conf.shape[1])], axis=1)  # (n, G m)
    np.testing.assert_allclose(mean, x.mean(0), rtol=0, atol=1e-10)
    np.testing.assert_allclose(cov, np.cov(x, rowvar=False) / n, rtol=0, atol=1e-10)
    assert w.sum() == pytest.approx(1.0)  # trapezoid weights divided by G, stacked G times
    # clusters: C / n**2 times the sample covariance of the cluster totals
    cl = np.arange(n) // 3
    _, cov_c, _ = smooth_ece_linear_form(P, Y, kind=kind, n_grid=m, cluster=cl)
    tot = np.add.reduceat(x, np.arange(0, n, 3), axis=0)
    np.testing.assert_allclose(cov_c, np.cov(tot, rowvar=False) * len(tot) / n**2,
                               rtol=0, atol=1e-10)
    _, cov_1, _ = smooth_ece_linear_form(P, Y, kind=kind, n_grid=m, cluster=np.arange(n))
    np.testing.assert_allclose(cov_1, cov, rtol=0, atol=1e-13)


def test_linear_form_default_grid_matches_the_metric():
    rng = np.random.default_rng(4)
    f = rng.uniform(0, 1, 200)
    y = (rng.random(200) < f**2).astype(int)
    est = smooth_ece(f, y, interval=None)
    mean, cov, w = smooth_ece_linear_form(f, y)
    assert mean.shape == (est.details["n_grid"],) and cov.shape == (mean.size,) * 2
    assert w @ np.abs(mean) == pytest.approx(est.value, rel=1e-12)
    np.testing.assert_allclose(mean, est.details["residual"], rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- bootstrap


def test_replicate_statistic_is_the_metric_on_the_resample():
    # the jitted statistic under bootstrap counts W equals the metric on the rows repeated
    # W times, at the sample's bandwidth and grid
    rng = np.random.default_rng(6)
    n = 80
    P = rng.dirichlet(np.ones(3), n)
    Y = rng.integers(0, 3, n)
    est = smooth_ece(P, Y, kind="classwise", interval=None)
    bw, m = est.details["bandwidth"], est.details["n_grid"]
    W = rng.multinomial(n, np.ones(n) / n).astype(float)
    rows = np.repeat(np.arange(n), W.astype(int))
    direct = float(smooth_ece(P[rows], Y[rows], kind="classwise", bandwidth=bw, n_grid=m,
                              interval=None))
    J = n_terms(bw)
    dc = _item_cosines(P, J) * (np.eye(3)[Y] - P).T[:, :, None]
    import jax
    import jax.numpy as jnp
    with jax.enable_x64(True):
        val = float(_value_jax(jnp.asarray(W), jnp.asarray(dc), jnp.asarray(_damping(bw, J)),
                               jnp.asarray(trapezoid_weights(m)), m))
        one = float(_value_jax(jnp.ones(n), jnp.asarray(dc), jnp.asarray(_damping(bw, J)),
                               jnp.asarray(trapezoid_weights(m)), m))
    assert val == pytest.approx(direct, rel=1e-12)
    assert one == pytest.approx(est.value, rel=1e-12)
    assert m == grid_size(bw)


def test_bootstrap_spread_matches_the_sampling_sd():
    # population f ~ U(0, 1), P(y = 1 | f) = f**2: the residual curve is one-signed, so the
    # smooth ECE is |mean(y - f)|, whose sd is sqrt(0.138889 / n) (= 0.01863 at n = 400)
    rng = np.random.default_rng(7)
    n = 400
    f = rng.uniform(0, 1, n)
    y = (rng.random(n) < f**2).astype(int)
    est = smooth_ece(f, y, interval=nc.intervals.Bootstrap(n_boot=400), seed=1)
    assert est.status == "ok" and est.low <= est.value <= est.high
    assert np.std(est.replicates, ddof=1) == pytest.approx(np.sqrt(0.138889 / n), rel=0.15)
    assert "bandwidth held" in est.details["bootstrap"]
    again = smooth_ece(f, y, interval=nc.intervals.Bootstrap(n_boot=400), seed=1)
    np.testing.assert_array_equal(again.replicates, est.replicates)
    for method in ("basic", "bca"):
        other = smooth_ece(f, y, interval=nc.intervals.Bootstrap(n_boot=400, method=method),
                           seed=1)
        assert other.status == "ok" and other.method == method
        assert other.low < other.value < other.high


def test_cluster_bootstrap_and_single_item():
    rng = np.random.default_rng(8)
    f = rng.uniform(0, 1, 90)
    y = (rng.random(90) < f**2).astype(int)
    est = smooth_ece(f, y, interval=nc.intervals.Bootstrap(n_boot=200), cluster=np.arange(90) // 3)
    assert est.status == "ok" and "by cluster" in est.details["bootstrap"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = smooth_ece([0.3], [1], interval=nc.intervals.Bootstrap(n_boot=20))
    assert one.status == "degenerate" and one.value == pytest.approx(0.7)


def test_an_interval_away_from_the_estimate_is_flagged():
    # calibrated: the value is noise, every replicate adds more, the percentile interval
    # sits above the estimate; the Estimate says so instead of reporting 'ok'
    rng = np.random.default_rng(0)
    f = rng.uniform(0, 1, 2000)
    y = (rng.random(2000) < f).astype(int)
    with pytest.warns(nc.NumericalWarning, match="does not contain the estimate"):
        est = smooth_ece(f, y, interval=nc.intervals.Bootstrap(n_boot=200))
    assert est.status == "estimate_outside_interval"
    assert est.value < est.low and np.median(est.replicates) > 1.2 * est.value
