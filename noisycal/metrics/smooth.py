r"""Smooth ECE against any target: kernel-smoothed residuals, no bins.

Błasiok & Nakkiran (2023), "Smooth ECE: Principled Reliability Diagrams via Kernel
Smoothing". With confidences :math:`f_i \in [0, 1]` and residuals
:math:`d_i = t_i - f_i` (``t_i`` the target value, see :mod:`noisycal.targets`),

.. math:: \hat r_\sigma(u) = \frac1n \sum_i K_\sigma(u, f_i)\, d_i, \qquad
          \mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(u)|\, du,

with the reflected Gaussian kernel :math:`K_\sigma(u, f) = \sum_{k \in \mathbb Z}
\phi_\sigma(u - f - 2k) + \phi_\sigma(u + f - 2k)` (a Gaussian folded into [0, 1] by
reflections at 0 and 1, so it integrates to 1 in u). The paper's default bandwidth is
the fixed point :math:`\sigma^*` with :math:`\mathrm{smECE}_{\sigma^*} = \sigma^*`; it is
unique because :math:`\mathrm{smECE}_\sigma` does not increase with sigma.

How it is computed (exactly, not by binning the items):

- The reflected kernel is the Neumann heat kernel of [0, 1], so
  :math:`K_\sigma(u, f) = 1 + 2\sum_{j \ge 1} e^{-(j\pi\sigma)^2/2}\cos(j\pi u)\cos(j\pi f)`
  (Poisson summation of the image sum) and :math:`\hat r_\sigma(u) = \sum_j \lambda_j a_j
  \cos(j\pi u)` with the item averages :math:`a_j = \frac1n\sum_i d_i\cos(j\pi f_i)`.
  Terms up to :math:`J \ge 3/\sigma` are kept (rounded up to a multiple of 32, so that
  nearby bandwidths share compiled bootstrap kernels): the first dropped factor is below
  :math:`e^{-(3\pi)^2/2} \approx 5\cdot 10^{-20}`.
- :math:`\hat r_\sigma` is evaluated on the uniform grid :math:`u_k = k/(m-1)` (a DCT-I,
  done with a real FFT) and integrated with the trapezoid rule. The default grid has
  :math:`m - 1 = 2000 \cdot 2^k` intervals, k the least integer >= 0 giving at least
  100 intervals per bandwidth: the error comes only from the kinks of :math:`|\hat r|` at
  its sign changes and measured below :math:`10^{-6}` relative against a 400001-point grid
  (bandwidths 0.01 to 0.1, n 300 to 20000); ``n_grid`` sets m.
- :math:`\sigma^*`: the bracket :math:`[|\bar d|, \overline{|d|}]` always holds it
  (:math:`\mathrm{smECE}_\sigma` lies between these); sigma is halved from the upper end
  until :math:`\mathrm{smECE}_\sigma \ge \sigma`, then Brent's method finds the root in
  the last halving interval (``xtol`` 1e-14, grid and terms held fixed during the search),
  and the value is recomputed on the grid of :math:`\sigma^*`. Classwise, one bandwidth
  serves all K classes: the fixed point of the class average.

relplot (apple/ml-calibration) computes the same quantity with a 1001-point linearly
binned kernel truncated at +-0.5, a 200-point Riemann sum and a 10-step bisection for the
bandwidth; ``tests/test_smooth_ece.py`` compares the two.
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
from scipy.optimize import brentq

import jax
import jax.numpy as jnp

from .._jax import as_key, x64
from .._typing import ArrayLike, Seed
from .._validation import (
    check_batch_size,
    check_choice,
    check_int,
    check_level,
    check_real,
    check_seed,
    user_stacklevel,
)
from .._warnings import NumericalWarning
from ..intervals.bootstrap import (
    BOOTSTRAP_METHODS,
    cluster_codes,
    default_batch_size,
    interval_from_replicates,
    replicate_weights,
)
from ..intervals.estimate import Estimate
from .binning import group_scores
from .ece import _resolve_kind, _target_kind, resolve_inputs, with_target_status

__all__ = ["smooth_ece", "smooth_ece_linear_form", "grid_size", "n_terms",
           "trapezoid_weights", "MIN_GRID", "GRID_PER_BANDWIDTH", "MIN_BANDWIDTH"]

#: Least number of grid intervals (the grid has ``MIN_GRID + 1`` points).
MIN_GRID = 2000
#: Grid intervals per unit of 1 / bandwidth (100 grid steps per bandwidth).
GRID_PER_BANDWIDTH = 100
#: Cosine terms per unit of 1 / bandwidth (the dropped factors are below 5e-20).
TERMS_PER_INV_BANDWIDTH = 3.0
#: The fixed-point search stops here: a smaller sigma* is reported, not resolved.
MIN_BANDWIDTH = 1e-4
#: The number of cosine terms is a multiple of this (fewer distinct compiled shapes).
_TERM_BLOCK = 32
#: Leave-one-block-out groups at most, for BCa's acceleration.
_MAX_JACKKNIFE_GROUPS = 1000


# ----------------------------------------------------------------------------- numerics


def grid_size(bandwidth: float, n_grid: int | None = None) -> int:
    """Number of grid points m: ``n_grid`` if given, else ``2000 * 2**k + 1``.

    k is the least integer >= 0 with at least 100 grid intervals per bandwidth sigma.

    Parameters
    ----------
    bandwidth : float
        sigma > 0.
    n_grid : int, optional
        An explicit grid size.

    Returns
    -------
    int
    """
    if n_grid is not None:
        return int(n_grid)
    need = GRID_PER_BANDWIDTH / bandwidth
    k = max(0, int(np.ceil(np.log2(need / MIN_GRID)))) if need > MIN_GRID else 0
    return MIN_GRID * 2**k + 1


def n_terms(bandwidth: float) -> int:
    """Highest cosine frequency J kept for bandwidth sigma: 3 / sigma, rounded up to 32k."""
    return int(_TERM_BLOCK * max(1, np.ceil(TERMS_PER_INV_BANDWIDTH / bandwidth / _TERM_BLOCK)))


def trapezoid_weights(m: int) -> np.ndarray:
    """Trapezoid weights (m,) of the grid ``k / (m - 1)``, k = 0..m-1; they sum to 1."""
    w = np.full(m, 1.0 / (m - 1))
    w[[0, -1]] *= 0.5
    return w


def _damping(bandwidth: float, J: int) -> np.ndarray:
    """lambda_j = 2 exp(-(j pi sigma)^2 / 2), lambda_0 = 1: the kernel's cosine weights."""
    j = np.arange(J + 1)
    lam = 2.0 * np.exp(-0.5 * (j * np.pi * bandwidth) ** 2)
    lam[0] = 1.0
    return lam


def _on_grid(c: ArrayLike, m: int, xp: object = np) -> ArrayLike:
    """``sum_j c[..., j] cos(j pi k / (m - 1))`` for k = 0..m-1 (DCT-I by a real FFT).

    Frequencies at or above 2(m - 1) are folded onto their aliases first (the grid cannot
    tell them apart), so any number of terms is exact on the grid."""
    N = 2 * (m - 1)
    J1 = c.shape[-1]
    c = xp.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, (-J1) % N)])
    c = c.reshape(c.shape[:-1] + (-1, N)).sum(axis=-2)
    return xp.real(xp.fft.rfft(c, axis=-1))


def _item_cosines(conf: np.ndarray, J: int) -> np.ndarray:
    """cos(j pi f_ig) as an array (G, n, J + 1)."""
    return np.cos(np.pi * conf.T[:, :, None] * np.arange(J + 1))


def _coefficients(conf: np.ndarray, resid: np.ndarray, J: int) -> np.ndarray:
    """a_gj = mean_i d_ig cos(j pi f_ig), shape (G, J + 1), in item chunks of bounded size."""
    G, n = conf.shape[1], conf.shape[0]
    out = np.zeros((G, J + 1))
    step = max(1, 2**22 // (G * (J + 1)))
    for s in range(0, n, step):
        cos = _item_cosines(conf[s:s + step], J)
        out += np.einsum("gij,ig->gj", cos, resid[s:s + step])
    return out / n


class _Curves:
    """The smoothed residual of every group at any bandwidth, from cached coefficients."""

    def __init__(self, conf: np.ndarray, resid: np.ndarray) -> None:
        self.conf, self.resid = conf, resid
        self.J = 0
        self.a = np.zeros((conf.shape[1], 1))

    def coefficients(self, J: int) -> np.ndarray:
        if J > self.J:
            self.J = max(J, 2 * self.J)
            self.a = _coefficients(self.conf, self.resid, self.J)
        return self.a[:, :J + 1]

    def residual(self, bandwidth: float, m: int, J: int | None = None) -> np.ndarray:
        """r(u_k) of every group, shape (G, m)."""
        J = n_terms(bandwidth) if J is None else J
        return _on_grid(self.coefficients(J) * _damping(bandwidth, J), m)

    def value(self, bandwidth: float, m: int, J: int | None = None) -> tuple[float, np.ndarray]:
        per_group = np.abs(self.residual(bandwidth, m, J)) @ trapezoid_weights(m)
        return float(np.mean(per_group)), per_group


def _fixed_point(curves: _Curves, upper: float, n_grid: int | None
                 ) -> tuple[float, str, str]:
    """sigma* with smECE_sigma* = sigma*; ``(sigma, status, message)``."""
    def gap(s: float, m: int, J: int | None = None) -> float:
        return s - curves.value(s, m, J)[0]

    if gap(upper, grid_size(upper, n_grid)) <= 0.0:
        return upper, "ok", ""  # residuals of one sign: smECE_sigma = |mean d| for all sigma
    lo = upper
    while True:
        lo, hi = lo / 2.0, lo
        if lo < MIN_BANDWIDTH:
            return MIN_BANDWIDTH, "bandwidth_floor", (
                f"the fixed-point bandwidth lies below {MIN_BANDWIDTH:g} (smECE_sigma < sigma "
                f"at sigma = {MIN_BANDWIDTH:g}); the value is smECE at that bandwidth, which "
                f"bounds the fixed-point smooth ECE from below (and {MIN_BANDWIDTH:g} from "
                "above); pass bandwidth= to choose one")
        if gap(lo, grid_size(lo, n_grid)) <= 0.0:
            break
    m, J = grid_size(lo, n_grid), n_terms(lo)
    if gap(lo, m, J) > 0.0 or gap(hi, m, J) <= 0.0:  # the end's sign flipped with the grid
        return (lo if gap(lo, m, J) > 0.0 else hi), "ok", ""
    root = brentq(gap, lo, hi, args=(m, J), xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return float(root), "ok", ""


# ----------------------------------------------------------------------------- bootstrap


def _value_jax(weights: jax.Array, dc: jax.Array, lam: jax.Array, wq: jax.Array,
               m: int) -> jax.Array:
    """The smooth ECE under item weights: mean over groups of sum_k wq_k |r_w(u_k)|."""
    a = jnp.einsum("n,gnj->gj", weights, dc) / jnp.sum(weights)
    return jnp.mean(jnp.abs(_on_grid(a * lam, m, jnp)) @ wq)


@partial(jax.jit, static_argnames=("m", "n_boot", "batch_size", "n_clusters"))
def _replicates(rng_key: jax.Array, dc: jax.Array, lam: jax.Array, wq: jax.Array,
                codes: jax.Array | None, *, m: int, n_boot: int, batch_size: int,
                n_clusters: int) -> jax.Array:
    keys = jax.random.split(rng_key, n_boot)

    def one(key: jax.Array) -> jax.Array:
        return _value_jax(replicate_weights(key, codes, n_clusters), dc, lam, wq, m)

    return jax.lax.map(one, keys, batch_size=batch_size)


@partial(jax.jit, static_argnames=("m", "n_groups"))
def _jackknife(dc: jax.Array, lam: jax.Array, wq: jax.Array, group: jax.Array, *, m: int,
               n_groups: int) -> jax.Array:
    def loo(g: jax.Array) -> jax.Array:
        return _value_jax(jnp.where(group == g, 0.0, 1.0), dc, lam, wq, m)

    return jax.lax.map(loo, jnp.arange(n_groups), batch_size=min(n_groups, 64))


def _bootstrap(conf: np.ndarray, resid: np.ndarray, bandwidth: float, m: int, value: float,
               *, level: float, n_boot: int, method: str, seed: Seed,
               cluster: ArrayLike | None, batch_size: int | None
               ) -> tuple[tuple[float, float], str, str, np.ndarray]:
    """Replicates with the bandwidth (and grid) held fixed; interval, status, message, reps."""
    n, G = conf.shape
    J = n_terms(bandwidth)
    codes, n_clusters = cluster_codes(cluster, n)
    dc = _item_cosines(conf, J) * resid.T[:, :, None]
    # on CPU, chunks of 64 replicates measured fastest (n 5000 to 20000)
    bs = batch_size or (min(n_boot, 64) if jax.default_backend() == "cpu"
                        else default_batch_size(n_boot, n + 4 * G * m))
    with x64():
        args = (jnp.asarray(dc), jnp.asarray(_damping(bandwidth, J)),
                jnp.asarray(trapezoid_weights(m)))
        reps = np.asarray(_replicates(as_key(seed), *args,
                                      None if codes is None else jnp.asarray(codes), m=m,
                                      n_boot=n_boot, batch_size=bs, n_clusters=n_clusters))
        jack = None
        if method == "bca":
            unit = np.arange(n) if codes is None else codes
            n_groups = min(n_clusters, _MAX_JACKKNIFE_GROUPS)
            group = ((np.arange(n_clusters) * n_groups) // n_clusters)[unit]
            jack = np.asarray(_jackknife(*args, jnp.asarray(group, jnp.int32), m=m,
                                         n_groups=n_groups))
    interval, status, message = interval_from_replicates(value, reps, level, method, jack)
    if status == "ok" and not interval[0] <= value <= interval[1]:
        status, message = "estimate_outside_interval", (
            f"the {method} bootstrap interval [{interval[0]:.4g}, {interval[1]:.4g}] does not "
            f"contain the estimate {value:.4g} (replicate median {np.median(reps):.4g}): the "
            "value is mostly sampling noise here, and the bootstrap of an absolute residual "
            "is biased upward, so the interval is not reliable")
        warnings.warn(f"smooth ECE: {message}", NumericalWarning, stacklevel=user_stacklevel())
    return interval, status, message, reps


# ----------------------------------------------------------------------------- public


def _prepare(probs: ArrayLike | None, target: object, logits: ArrayLike | None,
             classes: ArrayLike | None, items: ArrayLike | None, kind: str | None,
             bandwidth: object, n_grid: object
             ) -> tuple[np.ndarray, np.ndarray, list, str, float | None, int | None]:
    """Confidences (n, G), residuals target - confidence (n, G), groups, kind, options."""
    P, _, T, binary = resolve_inputs(probs, target, logits, classes=classes, items=items)
    kind = _resolve_kind(kind, binary, P.shape[1])
    if bandwidth is not None:
        bandwidth = check_real(bandwidth, "bandwidth", minimum=0.0, strict=True)
    if n_grid is not None:
        n_grid = check_int(n_grid, "n_grid", minimum=3)
    conf, tgt, groups = group_scores(P, T, kind)
    return conf, tgt[:, 0, :] - conf, groups, kind, bandwidth, n_grid


def _choose_bandwidth(curves: _Curves, resid: np.ndarray, bandwidth: float | None,
                      n_grid: int | None) -> tuple[float, str, str]:
    if bandwidth is not None:
        return bandwidth, "ok", ""
    upper = float(np.mean(np.abs(resid)))
    if upper == 0.0:
        return 0.0, "degenerate", (
            "every residual target - confidence is zero: the smooth ECE is 0 at every "
            "bandwidth and the fixed-point bandwidth is 0 (no kernel, no interval)")
    return _fixed_point(curves, upper, n_grid)


_PARAMS = """probs : array-like of shape (n_items, n_classes) or (n_items,)
        Predicted probabilities (rows sum to 1); a 1-D array holds positive-class
        probabilities of a binary problem. Give ``probs`` or ``logits``.
    target : Target, array-like of shape (n_items, n_classes), or labels (n_items,)
        What the predictions are compared with: hard labels, soft, voted, corrected
        (may leave [0, 1]) or posterior targets, exactly as in :func:`noisycal.ece`.
    logits : array-like, optional
        Pre-softmax scores instead of ``probs``.
    classes, items : array-like, optional
        Class labels of the prediction columns and item ids of its rows, as in
        :func:`noisycal.ece`.
    kind : {'top_label', 'classwise', 'positive_class'}, optional
        Default: 'positive_class' for 1-D binary input, else 'top_label'. Classwise
        averages the K per-class smooth ECEs at one common bandwidth.
    bandwidth : float, optional
        Kernel bandwidth sigma > 0; default the fixed point sigma* with
        smECE_sigma* = sigma* (the paper's choice; classwise: of the class average).
    n_grid : int, optional
        Grid points of the trapezoid rule on [0, 1] (at least 3); default
        ``2000 * 2**k + 1`` with at least 100 grid intervals per bandwidth
        (:func:`~noisycal.metrics.smooth.grid_size`)."""


def smooth_ece(probs: ArrayLike | None = None, target: object = None, *,
               logits: ArrayLike | None = None, classes: ArrayLike | None = None,
               items: ArrayLike | None = None, kind: str | None = None,
               bandwidth: float | None = None, interval: str | None = "bootstrap",
               level: float = 0.9, n_boot: int = 1000, method: str = "percentile",
               seed: Seed = 0, cluster: ArrayLike | None = None,
               batch_size: int | None = None, n_grid: int | None = None) -> Estimate:
    r"""Smooth ECE (Błasiok & Nakkiran 2023) against any target, with a bootstrap interval.

    Błasiok & Nakkiran (2023), "Smooth ECE: Principled Reliability Diagrams via Kernel
    Smoothing": :math:`\int_0^1 |\frac1n\sum_i K_\sigma(u, f_i)(t_i - f_i)|\,du` with the
    reflected Gaussian kernel and, by default, the fixed-point bandwidth
    :math:`\sigma^* = \mathrm{smECE}_{\sigma^*}`. No bin count to choose. See
    :mod:`noisycal.metrics.smooth` for how it is computed.

    Parameters
    ----------
    {params}
    interval : {'bootstrap', None}, default='bootstrap'
        The item (or cluster) bootstrap; the bandwidth is held at the sample's value
        (sigma* or the given one) in every replicate, and the grid with it.
    level : float, default=0.9
        Interval coverage, a fraction in (0, 1).
    n_boot : int, default=1000
        Bootstrap replicates (at least 2).
    method : {'percentile', 'basic', 'bca'}, default='percentile'
        How the bootstrap interval is read off the replicates (BCa's acceleration from a
        leave-one-unit-out jackknife, in at most 1000 blocks).
    seed : int or jax key, default=0
        Seeds the bootstrap.
    cluster : array-like of shape (n_items,), optional
        Cluster ids; clusters are resampled whole.
    batch_size : int, optional
        Replicates per vectorised chunk (default: 64 on CPU, else as many as fit ~2**25
        numbers).

    Returns
    -------
    Estimate
        ``details``: ``bandwidth``, ``bandwidth_rule`` ('fixed_point' or 'given'),
        ``grid`` (m,), ``residual`` (the smoothed residual target - confidence on the
        grid: (m,), or (K, m) classwise), ``density`` (the smoothed density of the
        confidences, same shape), ``n_grid``, ``n_terms``, ``kind``, ``target_kind``,
        ``per_group`` (classwise) and ``bootstrap`` (how the interval was made). The
        status is not 'ok' when all residuals are zero ('degenerate'), sigma* is below
        1e-4 ('bandwidth_floor'), the bootstrap is degenerate, the interval does not
        contain the estimate ('estimate_outside_interval': typical near calibration,
        where the value is mostly noise and the bootstrap is biased upward), or the target
        was built from a fit whose status is not 'ok'.

    Notes
    -----
    The bootstrap holds an (n_items, K, ~3/sigma) array of cosines; memory grows as
    n / sigma.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> f = np.array([0.2, 0.4, 0.6, 0.8])
    >>> round(float(nc.smooth_ece(f, f - 0.1, interval=None)), 12)  # every residual -0.1
    0.1
    """
    check_choice(interval, "interval", (None, "bootstrap"))
    level = check_level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    check_choice(method, "method", BOOTSTRAP_METHODS)
    check_seed(seed)
    batch_size = check_batch_size(batch_size)
    conf, resid, groups, kind, bandwidth, n_grid = _prepare(
        probs, target, logits, classes, items, kind, bandwidth, n_grid)
    cluster_codes(cluster, conf.shape[0])  # checked whatever the interval
    rule = "fixed_point" if bandwidth is None else "given"
    curves = _Curves(conf, resid)
    sigma, status, message = _choose_bandwidth(curves, resid, bandwidth, n_grid)
    label = {"top_label": "smooth ECE", "positive_class": "positive-class smooth ECE",
             "classwise": "classwise smooth ECE"}[kind]
    details = {"kind": kind, "target_kind": _target_kind(target), "bandwidth": sigma,
               "bandwidth_rule": rule}
    n = conf.shape[0]
    if status == "degenerate":
        return with_target_status(Estimate(label, 0.0, n=n, status=status, message=message,
                                           details=details), target)
    m = grid_size(sigma, n_grid)
    value, per_group = curves.value(sigma, m)
    single = len(groups) == 1
    dens = _on_grid(_Curves(conf, np.ones_like(resid)).coefficients(n_terms(sigma))
                    * _damping(sigma, n_terms(sigma)), m)
    resid_curve = curves.residual(sigma, m)
    details.update(grid=np.linspace(0.0, 1.0, m), residual=resid_curve[0] if single
                   else resid_curve, density=dens[0] if single else dens, n_grid=m,
                   n_terms=n_terms(sigma))
    if rule == "fixed_point":
        details["fixed_point_gap"] = value - sigma
    if not single:
        details["per_group"] = dict(zip(groups, per_group.tolist(), strict=True))
    if interval is None or status != "ok":
        return with_target_status(Estimate(label, value, n=n, status=status, message=message,
                                           details=details), target)
    ci, status, message, reps = _bootstrap(
        conf, resid, sigma, m, value, level=level, n_boot=n_boot, method=method, seed=seed,
        cluster=cluster, batch_size=batch_size)
    details["bootstrap"] = (f"items resampled{' by cluster' if cluster is not None else ''}"
                            f" with the bandwidth held at the sample's {rule.replace('_', '-')}"
                            f" value sigma = {sigma:.6g} and the grid fixed")
    est = Estimate(label, value, ci, level, "bootstrap", method, n=n, n_boot=n_boot,
                   status=status, message=message, details=details, replicates=reps)
    return with_target_status(est, target)


smooth_ece.__doc__ = smooth_ece.__doc__.replace("{params}", _PARAMS)


def smooth_ece_linear_form(probs: ArrayLike | None = None, target: object = None, *,
                           logits: ArrayLike | None = None, classes: ArrayLike | None = None,
                           items: ArrayLike | None = None, kind: str | None = None,
                           bandwidth: float | None = None, cluster: ArrayLike | None = None,
                           n_grid: int | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The smooth ECE as a weighted L1 norm of a mean vector, with that mean's covariance.

    On the grid :math:`u_k`, ``mean[k]`` :math:`= \frac1n\sum_i K_\sigma(u_k, f_i)\,d_i`
    (d the residual target - confidence), and ``weights @ abs(mean)`` equals
    :func:`smooth_ece` at the same bandwidth and grid (Błasiok & Nakkiran 2023,
    "Smooth ECE: Principled Reliability Diagrams via Kernel Smoothing"). ``cov`` is the
    covariance matrix of ``mean`` estimated from the items: the sample covariance
    (ddof 1) of the per-item vectors :math:`K_\sigma(u_k, f_i) d_i` divided by n; with
    ``cluster=``, C / n**2 times the sample covariance of the C cluster totals.
    Classwise, the K classes' vectors are stacked (class-major) and the weights divided
    by K. A base for test-inversion intervals.

    Parameters
    ----------
    {params}
    cluster : array-like of shape (n_items,), optional
        Cluster ids (the covariance uses cluster totals).

    Returns
    -------
    mean : ndarray of shape (G * m,)
        G = 1, or K classwise; m grid points.
    cov : ndarray of shape (G * m, G * m)
        NaN with a single unit (item or cluster).
    weights : ndarray of shape (G * m,)
        Trapezoid weights (divided by G).

    Notes
    -----
    ``cov`` has (G m)**2 entries (32 MB for the default m = 2001 and G = 1); pass a
    smaller ``n_grid`` (and the same to :func:`smooth_ece`) for classwise forms.
    """
    conf, resid, groups, kind, bandwidth, n_grid = _prepare(
        probs, target, logits, classes, items, kind, bandwidth, n_grid)
    n, G = conf.shape
    codes, n_units = cluster_codes(cluster, n)
    curves = _Curves(conf, resid)
    sigma, status, message = _choose_bandwidth(curves, resid, bandwidth, n_grid)
    if status != "ok":
        raise ValueError(f"bandwidth: no fixed point to build the linear form at ({message})")
    m, J = grid_size(sigma, n_grid), n_terms(sigma)
    lam = _damping(sigma, J)
    basis = np.cos(np.pi * np.outer(np.linspace(0.0, 1.0, m), np.arange(J + 1))) * lam
    coef = (_item_cosines(conf, J) * resid.T[:, :, None]).transpose(1, 0, 2).reshape(n, -1)
    if codes is not None:
        totals = np.zeros((n_units, coef.shape[1]))
        np.add.at(totals, codes, coef)
        coef = totals
    mean = (coef.sum(axis=0) / n).reshape(G, J + 1) @ basis.T
    if n_units < 2:
        cov = np.full((G * m, G * m), np.nan)
    else:
        S = np.cov(coef, rowvar=False, ddof=1).reshape(G, J + 1, G, J + 1) * n_units / n**2
        half = np.einsum("kj,gjhl->gkhl", basis, S, optimize=True)  # two matrix products
        cov = np.einsum("gkhl,pl->gkhp", half, basis, optimize=True).reshape(G * m, G * m)
    return mean.ravel(), cov, np.tile(trapezoid_weights(m), G) / G


smooth_ece_linear_form.__doc__ = smooth_ece_linear_form.__doc__.replace("{params}", _PARAMS)
