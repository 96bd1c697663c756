r"""Intervals for a norm of a vector of means, by inverting a parametric bootstrap test.

Every ECE-type metric of noisycal is, with the bins (or the kernel bandwidth) held fixed,
a norm of a vector of sample means: with :math:`d_i` = target minus confidence and
:math:`x_{ij} = d_i\,1\{i \in \text{bin } j\}`, the binned L1 ECE is
:math:`\hat\theta = \sum_j a_j |\hat m_j|` with :math:`\hat m_j = \frac1n\sum_i x_{ij}` and
:math:`a_j = 1` (classwise: 1/K), and the binned L2 ECE is
:math:`(\sum_j a_j \hat m_j^2)^{1/2}` with :math:`a_j = 1/(K\,\hat p_j)`, :math:`\hat p_j`
the bin's share of items. Its population value replaces :math:`\hat m` by
:math:`m = \mathrm E\,x`.

The plug-in :math:`\hat\theta` is biased upward, most where :math:`\theta` is near 0
(no regular estimator of :math:`|m_j|` is unbiased at 0), and every bootstrap that
resamples it inherits the bias: percentile intervals then miss a well-calibrated model's
true error most of the time. This module inverts a test instead. For a candidate value
:math:`\theta_0` it takes the *restricted estimate* :math:`m(\theta_0)`, the vector
closest to :math:`\hat m` in the metric :math:`\mathrm{diag}(\hat v)^{-1}` (the
variances of the means) among vectors whose norm is :math:`\theta_0`, and simulates the
statistic under :math:`\hat m^* \sim N(m(\theta_0), \hat V)`, :math:`\hat V` the
estimated covariance of :math:`\hat m` (a parametric bootstrap at the null; common
random numbers across :math:`\theta_0`). The confidence set is every :math:`\theta_0`
whose simulated distribution puts :math:`\hat\theta` between its
:math:`\alpha_{lo}(\theta_0)` and :math:`1 - \alpha_{hi}(\theta_0)` quantiles.

The tail split is our choice (Feldman & Cousins 1998 order by likelihood ratio to the
same end): :math:`\alpha_{lo} = \frac\alpha2\rho(\theta_0)`,
:math:`\alpha_{hi} = \alpha - \alpha_{lo}`, where
:math:`\rho = (\pi(\theta_0) - \alpha)/(1 - \alpha)` clipped to [0, 1] and
:math:`\pi(\theta_0)` is the power of the level-:math:`\alpha` test of
:math:`\theta = 0` against :math:`\theta_0`. At :math:`\theta_0 = 0` the test is
one-sided (a small statistic is no evidence against perfect calibration), so the
interval starts at 0 exactly when that test does not reject; once :math:`\theta_0` is
clearly distinguishable from 0 the tails are equal. The point estimate offered beside
the plug-in is the *median-unbiased* one, the :math:`\theta_0` whose simulated median
is :math:`\hat\theta` (0 when even :math:`\theta_0 = 0` has a larger median); it always
lies inside the interval.

Two refinements are arguments of :func:`invert_norm` (the binned ECE uses both).
``upper_null='least-favourable'``: the soft-threshold restricted estimate zeroes small
means, where the folding excess :math:`\mathrm E|m_j + e_j| - |m_j|` is largest, so
with many small nonzero means its simulated statistic is stochastically larger than
under the truth and the upper end comes out too low; the upper end's test then also
accepts :math:`\theta_0` when a blend (half and half by default) of the restricted
estimate and :math:`\hat m` rescaled to norm :math:`\theta_0` accepts it.
``zero_null``: exact draws under perfect calibration (consistency resampling for one-hot
targets) for the test of :math:`\theta = 0`, since sparsely filled bins make the
Gaussian null too light-tailed. The binned ECE also floors each bin mean's variance at its
value under calibration for one-hot targets
(:func:`noisycal.metrics.binned.form.floored_cov`): a sparse bin without a positive label
has a sample variance near 0, which makes the simulated statistic too light in its upper
tail and puts the lower end above the truth.

Coverage, measured by ``benchmarks/coverage_study.py``, is reported in
``benchmarks/README.md``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from .._util.jax import as_numpy_rng
from .._util.types import Seed
from .._util.validation import check_choice, check_int, check_level, user_stacklevel
from ..exceptions import NumericalWarning

__all__ = ["Inversion", "invert_norm", "norm_of_means", "simulate_noise", "gaussian_null",
           "covariance_factor", "upper_p_value", "inversion_report", "no_variation",
           "NullTails", "recording_tails", "mixture_inversion", "quantile_of_draws"]

_BISECT = 48

#: The list :func:`invert_norm` appends its :class:`NullTails` to, inside
#: :func:`recording_tails`.
_RECORDER: ContextVar[list | None] = ContextVar("noisycal_inversion_tails", default=None)


@dataclass(frozen=True)
class Inversion:
    """What :func:`invert_norm` found.

    Parameters
    ----------
    plugin : float
        The plug-in statistic :math:`\\hat\\theta`.
    estimate : float
        The median-unbiased estimate.
    low, high : float
        The interval.
    p_value : float
        P-value of the test of :math:`\\theta = 0` (perfect calibration, one-sided).
    lower_is_zero : bool
        True when the interval starts at 0: the data cannot exclude perfect calibration
        at this level.
    n_sim : int
        Number of simulated draws.
    """

    plugin: float
    estimate: float
    low: float
    high: float
    p_value: float
    lower_is_zero: bool
    n_sim: int


def norm_of_means(m: np.ndarray, weights: np.ndarray, norm: str) -> np.ndarray:
    """The statistic: ``sum(a |m|)`` (l1) or ``sqrt(sum(a m^2))`` (l2) over the last axis.

    Parameters
    ----------
    m : ndarray of shape (..., J)
        Means (or simulated means).
    weights : ndarray of shape (J,)
        Non-negative weights :math:`a_j`.
    norm : {'l1', 'l2'}

    Returns
    -------
    ndarray of shape (...)
    """
    if norm == "l1":
        return np.abs(m) @ weights
    return np.sqrt((m * m) @ weights)


def covariance_factor(cov: np.ndarray) -> np.ndarray:
    """A factor F with F F^T = V of a symmetric positive semi-definite V (eigenvalues < 0,
    rounding errors, clipped to 0).

    Parameters
    ----------
    cov : ndarray of shape (J, J)

    Returns
    -------
    ndarray of shape (J, J)
    """
    w, U = np.linalg.eigh(0.5 * (cov + cov.T))
    return U * np.sqrt(np.clip(w, 0.0, None))


def simulate_noise(factor: np.ndarray, n_sim: int, seed: Seed) -> np.ndarray:
    """``n_sim`` draws from :math:`N(0, F F^T)`.

    Parameters
    ----------
    factor : ndarray of shape (J, r)
        A covariance factor (:func:`covariance_factor`, or any F with F F^T = V).
    n_sim : int
        Number of draws.
    seed : int or jax key

    Returns
    -------
    ndarray of shape (n_sim, J)
    """
    z = as_numpy_rng(seed).standard_normal((n_sim, factor.shape[1]))
    return z @ factor.T


def upper_p_value(null: np.ndarray, statistic: float) -> float:
    """``(1 + #{null >= statistic}) / (1 + len(null))``, the Monte-Carlo p-value.

    Parameters
    ----------
    null : ndarray of shape (n_sim,)
        Draws of the statistic under the null.
    statistic : float
        The observed value.

    Returns
    -------
    float
    """
    return float((1 + np.sum(null >= statistic)) / (1 + null.size))


def inversion_report(inv: Inversion, plugin: float, level: float,
                     estimator: str) -> tuple[float, tuple[float, float], dict]:
    """What an Estimate reports from an inversion: value, interval and details.

    Parameters
    ----------
    inv : Inversion
    plugin : float
        The metric's plug-in value.
    level : float
    estimator : {'median-unbiased', 'plug-in', 'debiased'}
        'median-unbiased' reports ``inv.estimate``, anything else ``plugin``.

    Returns
    -------
    value, (low, high), details
    """
    det = {"plugin": plugin, "median_unbiased": inv.estimate, "p_value_zero": inv.p_value,
           "lower_is_zero": inv.lower_is_zero, "n_sim": inv.n_sim}
    if inv.lower_is_zero:
        det["note"] = ("the interval starts at 0: perfect calibration (error 0) is not "
                       f"excluded at the {level:g} level (one-sided at 0)")
    elif 0.0 < inv.low < 1e-300:
        det["note"] = ("the interval is open at 0: perfect calibration is excluded at the "
                       f"{level:g} level, arbitrarily small errors are not")
    value = inv.estimate if estimator == "median-unbiased" else plugin
    return value, (inv.low, inv.high), det


def no_variation(what: str) -> tuple[str, str]:
    """Warn that there is no sampling variation to invert; the status and message.

    Parameters
    ----------
    what : str
        Where the data lack variation, for the message.

    Returns
    -------
    status, message
    """
    message = (f"no variation between items ({what}): the data say nothing about "
               "sampling error, so no interval is reported")
    warnings.warn(f"inverted interval: {message}", NumericalWarning,
                  stacklevel=user_stacklevel())
    return "degenerate", message


def gaussian_null(cov: np.ndarray, weights: np.ndarray, norm: str, n_sim: int,
                  seed: Seed) -> np.ndarray:
    """The statistic's null distribution (all means 0), the draws :func:`invert_norm` uses.

    Parameters
    ----------
    cov : ndarray of shape (J, J)
        Covariance of the means.
    weights : ndarray of shape (J,)
    norm : {'l1', 'l2'}
    n_sim : int
    seed : int or jax key

    Returns
    -------
    ndarray of shape (n_sim,)
    """
    return norm_of_means(simulate_noise(covariance_factor(cov), n_sim, seed), weights, norm)


def _restricted(mhat: np.ndarray, av: np.ndarray, weights: np.ndarray, norm: str,
                theta0: float) -> np.ndarray:
    """The vector closest to ``mhat`` (metric diag(v)^-1) whose norm is ``theta0``.

    Lagrange: l1 soft-thresholds (or expands) every component by lambda * a_j * v_j;
    l2 divides it by 1 + lambda * a_j * v_j. The norm decreases in lambda: in closed
    form for l1 (:func:`_l1_multiplier`), by bisection for l2. Components with v_j = 0
    stay at mhat_j.
    """
    if theta0 <= 0.0:
        return np.zeros_like(mhat)
    T = float(norm_of_means(mhat, weights, norm))
    free = (av > 0) & (mhat != 0)
    if T == 0.0 or not np.any(free):
        # No direction to follow: spread theta0 in proportion to the standard errors.
        s = np.sqrt(np.where(weights > 0, av / np.where(weights > 0, weights, 1.0), 0.0))
        base = float(norm_of_means(s, weights, norm))
        return s * (theta0 / base) if base > 0 else np.zeros_like(mhat)
    if norm == "l1":
        return np.sign(mhat) * np.maximum(np.abs(mhat) - _l1_multiplier(
            mhat, av, weights, free, theta0, T) * av, 0.0)

    def m_of(lam: float) -> np.ndarray:
        return mhat / (1.0 + lam * av)

    floor = -1.0 / float(np.max(av[free]))
    lo, hi = (0.0, 1.0) if theta0 < T else (floor * 0.5, 0.0)
    for _ in range(200):           # widen the bracket (expansion is unbounded)
        if theta0 < T and float(norm_of_means(m_of(hi), weights, norm)) > theta0:
            lo, hi = hi, hi * 2.0
        elif theta0 >= T and float(norm_of_means(m_of(lo), weights, norm)) < theta0:
            hi, lo = lo, 0.5 * (lo + floor)
        else:
            break
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        if float(norm_of_means(m_of(mid), weights, norm)) > theta0:
            lo = mid
        else:
            hi = mid
    return m_of(0.5 * (lo + hi))


def _l1_multiplier(mhat: np.ndarray, av: np.ndarray, weights: np.ndarray,
                   free: np.ndarray, theta0: float, T: float) -> float:
    """The Lagrange multiplier of the l1 restriction, in closed form.

    The restricted l1 norm ``f(lam) = C + sum_free a_j max(|m_j| - lam v_j, 0)``
    (``C``: components with ``v_j = 0``) is piecewise linear and decreasing in lambda,
    with a kink where each free component reaches 0 (``lam = |m_j| / v_j``): expansion
    (``theta0 >= T``) is its linear part below 0; shrinkage solves the linear piece that
    crosses ``theta0``, found from suffix sums over the sorted kinks.
    """
    a, fa, fv = np.abs(mhat[free]), weights[free], av[free]
    if theta0 >= T:
        return -(theta0 - T) / float(np.sum(fa * fv))
    const = T - float(a @ fa)
    kinks = a / fv
    order = np.argsort(kinks)
    kinks = kinks[order]
    # active set at lam in (kinks[k-1], kinks[k]): components k.. of the sorted order
    sc = np.cumsum((fa * a)[order][::-1])[::-1]    # sum of a_j |m_j| over components k..
    sd = np.cumsum((fa * fv)[order][::-1])[::-1]   # sum of a_j v_j over components k..
    at_kink = const + np.append(sc[1:], 0.0) - kinks * np.append(sd[1:], 0.0)
    k = int(np.searchsorted(-at_kink, -theta0, side="left"))  # first kink with f <= theta0
    k = min(k, kinks.size - 1)
    lam = (const + float(sc[k]) - theta0) / float(sd[k])
    # one Newton step on the piece (exact there) removes the suffix sums' rounding
    f = const + float(np.maximum(a - lam * fv, 0.0) @ fa)
    return lam + (f - theta0) / float(sd[k])


def _checked_form(mean: np.ndarray, cov: np.ndarray | None, weights: np.ndarray,
                  cov_factor: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(mean, weights, covariance factor)`` of :func:`invert_norm`."""
    if (cov is None) == (cov_factor is None):
        raise ValueError("give exactly one of cov and cov_factor")
    mean, weights = (np.asarray(x, dtype=np.float64) for x in (mean, weights))
    J = mean.shape[0]
    factor = np.asarray(cov_factor if cov is None else cov, dtype=np.float64)
    if factor.ndim != 2 or factor.shape[0] != J or (cov is not None and factor.shape[1] != J) \
            or weights.shape != (J,):
        raise ValueError(f"cov must be ({J}, {J}) (cov_factor ({J}, r)) and weights ({J},), "
                         f"got {factor.shape} and {weights.shape}")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(factor))
            and np.all(np.isfinite(weights))) or np.any(weights < 0):
        raise ValueError("mean, cov and weights must be finite, weights non-negative")
    return mean, weights, covariance_factor(factor) if cov is not None else factor


def invert_norm(mean: np.ndarray, cov: np.ndarray | None, weights: np.ndarray, *,
                norm: str = "l1", level: float = 0.9, n_sim: int = 2000,
                seed: Seed = 0, cov_factor: np.ndarray | None = None,
                upper_null: str = "soft-threshold", upper_mix: float = 0.5,
                zero_null: np.ndarray | None = None,
                upper_cov: np.ndarray | None = None,
                noise: np.ndarray | None = None) -> Inversion:
    """Confidence interval, median-unbiased estimate and zero-test for a norm of means.

    See the module docstring for the construction.

    Parameters
    ----------
    mean : ndarray of shape (J,)
        The estimated means :math:`\\hat m`.
    cov : ndarray of shape (J, J) or None
        Estimated covariance of ``mean`` (not of one item's contribution); None when
        ``cov_factor`` is given instead.
    weights : ndarray of shape (J,)
        Non-negative weights :math:`a_j` of the norm.
    norm : {'l1', 'l2'}, default='l1'
    level : float, default=0.9
        Coverage fraction.
    n_sim : int, default=2000
        Draws from the Gaussian null (common random numbers for every candidate).
    seed : int or jax key, default=0
    cov_factor : ndarray of shape (J, r), optional
        A factor F of the covariance (F F^T = cov), instead of ``cov``: cheaper when the
        means are linear in fewer than J underlying means (e.g. the smooth ECE's grid).
    upper_null : {'soft-threshold', 'least-favourable'}, default='soft-threshold'
        The null configuration of the test that sets the upper end (the one that rejects
        :math:`\\theta_0` when :math:`\\hat\\theta` is too small). 'soft-threshold': the
        restricted estimate, as for the lower end. 'least-favourable' (our choice, the
        default of the binned ECE): keep :math:`\\theta_0` when either the restricted
        estimate or a blend of it with :math:`\\hat m` rescaled to norm
        :math:`\\theta_0` (weight ``upper_mix`` on the rescaled vector) accepts it. The
        soft threshold sets the small components to exactly 0, where the excess
        :math:`\\mathrm E|m_j + e_j| - |m_j|` is largest, so with many small but nonzero
        true means (the classwise ECE's 150 bins) its simulated statistic is larger
        than under the truth and the upper end falls too low; the blend keeps every
        component away from 0. A union of acceptance regions over two configurations
        can only widen the interval.
    upper_mix : float, default=0.5
        Weight in [0, 1] of the rescaled :math:`\\hat m` in the blend of
        ``upper_null='least-favourable'`` (1: the rescaled vector alone, which
        over-covers the 10-class classwise ECE; 0: the soft threshold alone). Measured
        in ``benchmarks/README.md``.
    zero_null : ndarray of shape (n_null,), optional
        Draws of the statistic under perfect calibration from an exact null (consistency
        resampling, :func:`noisycal.metrics.binned.form.consistency_null`). When given,
        the test of :math:`\\theta = 0` and ``p_value`` use these draws instead of the
        Gaussian null, and the interval starts at 0 whenever that test does not reject
        at level ``1 - level``: with sparsely filled bins the Gaussian null with the
        sample covariance is too light-tailed (a bin without a single positive label has
        an estimated variance near 0). The Gaussian null still sets the tail split.
        When that test rejects while the Gaussian tests accept every small
        :math:`\\theta_0 > 0`, the interval is open at 0: ``low`` is the smallest
        positive float, so that the interval covers 0 exactly when the exact test does
        not reject.
    upper_cov : ndarray of shape (J, J), optional
        A second covariance of ``mean`` for the upper end's test only: the upper end's
        test then accepts :math:`\\theta_0` when it does so under either covariance
        (the restricted estimate, the tail split, the lower end and the median keep
        ``cov``), so the upper end is the larger of the two. The binned ECE passes its
        variance-floored covariance as ``cov`` and the sample covariance here (our
        choice): a larger variance always lowers the lower end (a heavier upper tail)
        but moves the upper end either way (more spread raises it, more folding
        :math:`\\mathrm E|m_j + e_j| - |m_j|` lowers it), so the floor must not be
        able to lower the upper end below the sample covariance's.

    noise : ndarray of shape (n_sim, J), optional
        Draws of the estimation error of ``mean`` to use instead of Gaussian draws with
        covariance ``cov`` (which still sets the restricted estimate's metric and the
        scale of the search); entries may be inf (a draw whose statistic is unbounded).
        The NC-ECE with fitted channels passes draws whose channel part is the exact,
        nonlinear image of Gaussian channel draws
        (:func:`noisycal.metrics.nc.delta.channel_noise`).

    Returns
    -------
    Inversion
    """
    check_choice(norm, "norm", ("l1", "l2"))
    check_choice(upper_null, "upper_null", ("soft-threshold", "least-favourable"))
    upper_mix = float(upper_mix)
    if not 0.0 <= upper_mix <= 1.0:
        raise ValueError(f"upper_mix must lie in [0, 1], got {upper_mix}")
    level = check_level(level)
    n_sim = check_int(n_sim, "n_sim", minimum=100)
    # long: the closures below share the common random numbers E and the tail split
    mean, weights, factor = _checked_form(mean, cov, weights, cov_factor)
    alpha = 1.0 - level
    if noise is None:
        E = simulate_noise(factor, n_sim, seed)
    else:
        E = np.asarray(noise, dtype=np.float64)
        if E.shape != (n_sim, mean.shape[0]) or np.any(np.isnan(E)):
            raise ValueError(f"noise must be an ({n_sim}, {mean.shape[0]}) array without "
                             f"NaN, got shape {E.shape}")
    if upper_cov is not None:
        E_up = simulate_noise(_checked_form(mean, upper_cov, weights, None)[2], n_sim, seed)
    else:
        E_up = E
    av = weights * np.sum(factor * factor, axis=1)
    T = float(norm_of_means(mean, weights, norm))

    last: list = [None, None]   # the last (theta0, restricted estimate): one per theta0

    def restricted(theta0: float) -> np.ndarray:
        """:func:`_restricted` at ``theta0``, computed once per candidate (the upper end's
        configurations ask for it up to four times)."""
        if last[0] != theta0:
            last[:] = [theta0, _restricted(mean, av, weights, norm, theta0)]
        return last[1]

    def sims(theta0: float, noise: np.ndarray = E) -> np.ndarray:
        return norm_of_means(restricted(theta0) + noise, weights, norm)

    def blend_sims(theta0: float, E_up: np.ndarray) -> np.ndarray:
        """The statistic simulated around the blend of the restricted estimate and mhat
        rescaled, brought to norm theta0."""
        if T == 0.0 or theta0 <= 0.0:
            return sims(theta0, E_up)
        m0 = ((1.0 - upper_mix) * restricted(theta0)
              + upper_mix * mean * (theta0 / T))
        size = float(norm_of_means(m0, weights, norm))
        return norm_of_means(m0 * (theta0 / size) + E_up, weights, norm) if size > 0 \
            else sims(theta0, E_up)

    null = sims(0.0)
    c0 = float(np.quantile(null, 1.0 - alpha))
    if zero_null is not None:
        zero_null = np.asarray(zero_null, dtype=np.float64).ravel()
        if zero_null.size == 0 or not np.all(np.isfinite(zero_null)):
            raise ValueError("zero_null must be a non-empty array of finite draws")
    p_value = upper_p_value(null if zero_null is None else zero_null, T)

    def lower_tail(s: np.ndarray) -> float:
        """The lower tail's share of alpha at a null whose draws are ``s``."""
        rho = float(np.clip((np.mean(s > c0) - alpha) / (1.0 - alpha), 0.0, 1.0))
        return 0.5 * alpha * rho if rho * n_sim >= 0.5 else 0.0   # below one draw: none

    def upper_configurations(theta0: float, s: np.ndarray) -> list[np.ndarray]:
        """The null draws whose lower tails set the upper end (any may keep theta0);
        ``s`` = ``sims(theta0)``."""
        noises = (E,) if E_up is E else (E, E_up)
        out = [s] + ([sims(theta0, E_up)] if E_up is not E else [])
        if upper_null == "least-favourable":
            out += [blend_sims(theta0, e) for e in noises]
        return out

    def quantile_at(theta0: float, which: str) -> float:
        s = sims(theta0)
        if which == "median":
            return quantile_of_draws(s, 0.5)
        a_lo = lower_tail(s)
        if which == "high":
            # A lower tail of probability 0 rejects nothing (not even a statistic below
            # every simulated draw).
            if a_lo <= 0:
                return -np.inf
            return min(quantile_of_draws(x, a_lo) for x in upper_configurations(theta0, s))
        return quantile_of_draws(s, 1.0 - (alpha - a_lo))

    sd = float(np.sqrt(np.sum(weights * av))) if norm == "l1" else float(
        np.sqrt(np.max(av, initial=0.0)))
    top = T + 8.0 * sd + 1e-12

    def solve(which: str) -> float:
        """Smallest theta0 whose chosen quantile passes T (quantiles rise with theta0):
        reaches it for the lower end and the median, exceeds it for the upper end."""
        def passed(theta0: float) -> bool:
            q = quantile_at(theta0, which)
            return q > T if which == "high" else q >= T

        return _smallest_passing(passed, top)

    recorder = _RECORDER.get()
    if recorder is not None:
        def tails(theta0: float) -> tuple[float, float, float]:
            s = sims(theta0)
            p_le = max(float(np.mean(x <= T)) for x in upper_configurations(theta0, s))
            return float(np.mean(s >= T)), p_le, lower_tail(s)

        recorder.append(NullTails(statistic=T, level=level, n_sim=n_sim, p_value=p_value,
                                  exact_zero=zero_null is not None, top=top, tails=tails))
    low, high, est = solve("low"), solve("high"), solve("median")
    low = _exact_zero_end(low, p_value, alpha, zero_null is not None)
    est = min(max(est, low), high)
    return Inversion(plugin=T, estimate=est, low=low, high=high, p_value=p_value,
                     lower_is_zero=low == 0.0, n_sim=n_sim)


def quantile_of_draws(x: np.ndarray, q: float) -> float:
    """``float(np.quantile(x, q))`` (NumPy's default 'linear' method) of one 1-D float64
    array and a float ``q``, computed the same way, to the bit, without NumPy's general
    machinery. (For an integer ``q`` NumPy picks a value without interpolating.)

    The search of :func:`invert_norm` takes about 250 quantiles of 2,000 draws per
    interval; ``np.quantile`` spent about 70 microseconds on each, most of it outside the
    partition (``tests/intervals/test_inversion.py`` compares the two on ties, infinities,
    NaN and the ends of [0, 1]).

    Parameters
    ----------
    x : ndarray of shape (n,)
    q : float
        In [0, 1].

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``q`` is not in [0, 1].
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must lie in [0, 1], got {q}")
    n = x.shape[0]
    v = (n - 1) * q                 # NumPy's virtual index of the 'linear' method
    if v >= n - 1:                  # NumPy's neighbours: the last value twice, else
        i = j = -1                  # floor(v) and the next
    else:
        i = math.floor(v)
        j = i + 1
    part = np.partition(x, sorted({0, n - 1, i % n, j % n}))
    if np.isnan(part[-1]):          # NaN sorts last: NumPy's quantile is that NaN
        return float(part[-1])
    a, b = part[i], part[j]
    t = v - i                       # NumPy's gamma (with the index as set above)
    d = b - a                       # NumPy's _lerp
    return float(b - d * (1 - t) if t >= 0.5 else a + d * t)


def _smallest_passing(passed: Callable[[float], bool], top: float) -> float:
    """The smallest theta0 >= 0 where ``passed`` turns true (it is monotone in theta0):
    0 if it passes there, else the bracket doubled from ``top`` and bisected."""
    if passed(0.0):
        return 0.0
    lo, hi = 0.0, top
    for _ in range(60):
        if passed(hi):
            break
        lo, hi = hi, 2.0 * hi
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        if not passed(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _exact_zero_end(low: float, p_value: float, alpha: float, exact: bool) -> float:
    """The lower end under an exact test of 0: 0 when it does not reject; when it
    rejects but the Gaussian tests accept every small theta0 > 0, the confidence set is
    open at 0 (the smallest positive float)."""
    if not exact:
        return low
    if p_value > alpha:
        return 0.0
    return float(np.nextafter(0.0, 1.0)) if low == 0.0 else low


@dataclass(frozen=True)
class NullTails:
    """The tail probabilities of one inverted test, for a mixture of tests.

    Parameters
    ----------
    statistic : float
        The observed statistic T.
    level : float
    n_sim : int
    p_value : float
        The test of 0's p-value.
    exact_zero : bool
        Whether that test used exact null draws (``zero_null``).
    top : float
        A value of theta0 beyond which every test rejects (the search's first bracket).
    tails : callable
        ``tails(theta0) -> (P(S >= T), P(S <= T), a_lo)`` at the null of theta0: the
        probability the lower end's and the median's tests compare, the largest
        probability over the upper end's null configurations, and the lower tail's share
        of alpha (the tail split).
    """

    statistic: float
    level: float
    n_sim: int
    p_value: float
    exact_zero: bool
    top: float
    tails: Callable[[float], tuple[float, float, float]] = field(repr=False, compare=False)


@contextmanager
def recording_tails() -> Iterator[list[NullTails]]:
    """Collect the :class:`NullTails` of every :func:`invert_norm` run inside the block.

    Yields
    ------
    list of NullTails
        Filled as the inversions run (context-local: other threads and tasks are not
        recorded).
    """
    out: list[NullTails] = []
    token = _RECORDER.set(out)
    try:
        yield out
    finally:
        _RECORDER.reset(token)


def mixture_inversion(tests: Sequence[NullTails], weights: np.ndarray) -> Inversion:
    r"""The inversion of a weighted mixture of inverted tests (model averaging).

    Each test m (one per model, each with its own statistic :math:`T_m` and null
    :math:`S_m(\theta_0)`) is replaced by the weighted mixture of their tail
    probabilities, the model-averaged tail area (MATA) construction of Turek and Fletcher
    ("Model-averaged Wald confidence intervals", 2012): the lower end is the smallest
    :math:`\theta_0` with :math:`\sum_m w_m P(S_m \ge T_m) \ge \alpha - \bar a_{lo}`,
    the upper end the smallest with :math:`\sum_m w_m P(S_m \le T_m) < \bar a_{lo}`,
    the median-unbiased value the smallest with :math:`\sum_m w_m P(S_m \ge T_m) \ge
    1/2`, where :math:`\bar a_{lo}(\theta_0) = \sum_m w_m a_{lo,m}(\theta_0)` is the
    weighted tail split of :func:`invert_norm`. The test of 0 takes the weighted p-value;
    when any test's p-value is exact (``zero_null``), the mixture's lower end follows the
    exact rule of :func:`invert_norm` with that weighted p-value.
    One test with weight 1 gives back its own inversion (up to one simulated draw: its
    criteria compare quantiles, these probabilities).

    Because every :math:`P(S_m(\theta_0) \ge T_m)` rises with :math:`\theta_0`, the
    mixture's median-unbiased value lies between the smallest and the largest of the
    tests' own; its interval keeps each model's sampling uncertainty and adds their
    disagreement.

    Parameters
    ----------
    tests : sequence of NullTails
        One per model, at one level (:func:`recording_tails`).
    weights : array-like of shape (len(tests),)
        Non-negative, with a positive sum (normalised here).

    Returns
    -------
    Inversion
        ``plugin`` is the weighted mean of the statistics.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(tests),) or not np.all(np.isfinite(w)) or np.any(w < 0) \
            or w.sum() <= 0:
        raise ValueError(f"weights must be {len(tests)} non-negative numbers with a "
                         f"positive sum, got {weights!r}")
    levels = {t.level for t in tests}
    if len(levels) != 1:
        raise ValueError(f"the tests were inverted at different levels: {sorted(levels)}")
    w = w / w.sum()
    use = [(wm, t) for wm, t in zip(w, tests, strict=True) if wm > 0]
    alpha = 1.0 - levels.pop()
    n_sim = min(t.n_sim for _, t in use)

    def mixed(theta0: float) -> np.ndarray:
        return np.sum([wm * np.asarray(t.tails(theta0)) for wm, t in use], axis=0)

    def passed(theta0: float, which: str) -> bool:
        p_ge, p_le, a_lo = mixed(theta0)
        if which == "median":
            return bool(p_ge >= 0.5)
        if which == "low":
            return bool(p_ge >= alpha - a_lo)
        return bool(a_lo > 0 and p_le < a_lo)

    top = max(t.top for _, t in use)
    p_value = float(sum(wm * t.p_value for wm, t in use))
    low, high, est = (_smallest_passing(lambda x, w=which: passed(x, w), top)
                      for which in ("low", "high", "median"))
    low = _exact_zero_end(low, p_value, alpha, any(t.exact_zero for _, t in use))
    est = min(max(est, low), high)
    plugin = float(sum(wm * t.statistic for wm, t in use))
    return Inversion(plugin=plugin, estimate=est, low=low, high=high, p_value=p_value,
                     lower_is_zero=low == 0.0, n_sim=n_sim)
