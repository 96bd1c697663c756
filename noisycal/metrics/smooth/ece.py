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

The numerics are in :mod:`noisycal.metrics.smooth.kernel`, the intervals in
:mod:`noisycal.metrics.smooth.intervals`.
"""

from __future__ import annotations

import numpy as np

from ..._util.types import ArrayLike, Seed
from ..._util.validation import (
    check_int,
    check_level,
    check_real,
    check_seed,
)
from ...intervals.bootstrap import cluster_codes
from ...intervals.estimate import Estimate
from ...intervals.options import Bootstrap, IntervalOption, Inversion, as_interval
from ..binned.bins import group_scores
from ..ece import (
    _resolve_kind,
    _target_kind,
    resolve_estimator,
    resolve_inputs,
    with_target_status,
)
from .intervals import _bootstrap, _inverted, check_factor_memory, smooth_factor
from .kernel import (
    GRID_PER_BANDWIDTH,
    MIN_BANDWIDTH,
    MIN_GRID,
    _Curves,
    _damping,
    _fixed_point,
    _on_grid,
    check_grid_memory,
    grid_size,
    n_terms,
    trapezoid_weights,
)

__all__ = ["smooth_ece", "smooth_ece_linear_form", "grid_size", "n_terms",
           "trapezoid_weights", "MIN_GRID", "GRID_PER_BANDWIDTH", "MIN_BANDWIDTH",
           "SMOOTH_INTERVALS", "SMOOTH_UNUSED"]

#: The interval kinds of :func:`smooth_ece`.
SMOOTH_INTERVALS = (Inversion, Bootstrap)

#: The fields of :data:`SMOOTH_INTERVALS` the smooth ECE does not use.
SMOOTH_UNUSED = {Bootstrap: {
    "scheme": (("auto", "exact"), "it has no bins to draw per-cell statistics from (the "
               "exact scheme)"),
    "rebin": "it has no bins",
    "devices": "its bootstrap runs on one device"}}


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
    G = P.shape[1] if kind == "classwise" else 1
    if n_grid is not None:  # the sizes asked for, refused before anything is allocated
        check_grid_memory(G, None, n_grid, "n_grid")
    if bandwidth is not None:
        check_grid_memory(G, bandwidth, n_grid, "bandwidth")
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


_ESTIMAND = ("population smooth ECE at the bandwidth held at sigma = {sigma:.6g}: the integral "
             "over [0, 1] of |E[K_sigma(u, f)(target - f)]|")

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
               bandwidth: float | None = None,
               interval: IntervalOption | str | None = "auto", level: float = 0.9,
               seed: Seed = 0, cluster: ArrayLike | None = None, n_grid: int | None = None,
               estimator: str | None = None) -> Estimate:
    r"""Smooth ECE (Błasiok & Nakkiran 2023) against any target, with a bootstrap interval.

    Błasiok & Nakkiran (2023), "Smooth ECE: Principled Reliability Diagrams via Kernel
    Smoothing": :math:`\int_0^1 |\frac1n\sum_i K_\sigma(u, f_i)(t_i - f_i)|\,du` with the
    reflected Gaussian kernel and, by default, the fixed-point bandwidth
    :math:`\sigma^* = \mathrm{smECE}_{\sigma^*}`. No bin count to choose. See
    :mod:`noisycal.metrics.smooth` for how it is computed.

    Parameters
    ----------
    {params}
    interval : Inversion, Bootstrap, str or None, default='auto'
        An option object of :mod:`noisycal.intervals` or its name. 'auto' =
        ``Inversion()``: the inverted-test interval of
        :func:`noisycal.intervals.inversion.invert_norm` on the linear form (the smoothed
        residual on a grid of at least 501 points, or 8 / sigma, as a mean vector with its
        covariance; ``n_boot`` simulated draws), the bandwidth held at the sample's
        value; it starts at 0 when perfect calibration cannot be excluded.
        ``Bootstrap()``: the item (or cluster) bootstrap with the bandwidth and grid held
        fixed in every replicate, read off with its ``method`` (BCa's acceleration from a
        leave-one-unit-out jackknife, in at most 1000 blocks) in chunks of ``batch_size``
        replicates (default: 64 on CPU, else as many as fit ~2**25 numbers); the exact
        scheme only, no ``rebin``, no ``devices``. Near calibration it inherits the
        estimate's upward bias (status 'estimate_outside_interval' when it misses its own
        estimate).
    estimator : {'plug-in', 'median-unbiased'}, optional
        The reported value; default 'median-unbiased' with the inverted interval
        (``details['plugin']`` holds the plug-in), else 'plug-in'.
    level : float, default=0.9
        Interval coverage, a fraction in (0, 1).
    seed : int or jax key, default=0
        Seeds the bootstrap.
    cluster : array-like of shape (n_items,), optional
        Cluster ids; clusters are resampled whole.

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
    option = as_interval(interval, SMOOTH_INTERVALS, default=Inversion(),
                         where="smooth_ece", unused=SMOOTH_UNUSED)
    interval = None if option is None else option.name
    estimator = resolve_estimator(estimator, interval, False)
    level = check_level(level)
    n_boot = None if option is None else option.n_boot
    check_seed(seed)
    conf, resid, groups, kind, bandwidth, n_grid = _prepare(
        probs, target, logits, classes, items, kind, bandwidth, n_grid)
    cluster_codes(cluster, conf.shape[0])  # checked whatever the interval
    if interval == "inversion" and bandwidth is not None:  # its size known up front
        check_factor_memory(conf.shape[0], conf.shape[1], n_terms(bandwidth))
    rule = "fixed_point" if bandwidth is None else "given"
    curves = _Curves(conf, resid)
    sigma, status, message = _choose_bandwidth(curves, resid, bandwidth, n_grid)
    label = {"top_label": "smooth ECE", "positive_class": "positive-class smooth ECE",
             "classwise": "classwise smooth ECE"}[kind]
    details = {"kind": kind, "target_kind": _target_kind(target), "bandwidth": sigma,
               "bandwidth_rule": rule}
    n = conf.shape[0]
    named = {"estimand": _ESTIMAND.format(sigma=sigma), "estimator": "plug-in"}
    if status == "degenerate":
        return with_target_status(Estimate(label, 0.0, n=n, status=status, message=message,
                                           details=details, **named), target, probs, logits)
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
                                           details=details, **named), target, probs, logits)
    if interval == "inversion":
        reported, ci, status, message, extra = _inverted(
            conf, resid, sigma, m, value, level=level, n_boot=n_boot, seed=seed,
            cluster=cluster, estimator=estimator)
        details.update(extra)
        est = Estimate(label, reported, ci, level, "inversion", "parametric", n=n,
                       n_boot=n_boot, status=status, message=message, details=details,
                       estimand=_ESTIMAND.format(sigma=sigma),
                       estimator=estimator if status == "ok" else "plug-in")
        return with_target_status(est, target, probs, logits)
    method = option.method
    ci, status, message, reps = _bootstrap(
        conf, resid, sigma, m, value, level=level, n_boot=n_boot, method=method, seed=seed,
        cluster=cluster, batch_size=option.batch_size)
    details["bootstrap"] = (f"items resampled{' by cluster' if cluster is not None else ''}"
                            f" with the bandwidth held at the sample's {rule.replace('_', '-')}"
                            f" value sigma = {sigma:.6g} and the grid fixed")
    est = Estimate(label, value, ci, level, "bootstrap", method, n=n, n_boot=n_boot,
                   status=status, message=message, details=details, replicates=reps,
                   estimand=_ESTIMAND.format(sigma=sigma), estimator="plug-in")
    return with_target_status(est, target, probs, logits)


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
    codes, n_units = cluster_codes(cluster, conf.shape[0])
    sigma, status, message = _choose_bandwidth(_Curves(conf, resid), resid, bandwidth, n_grid)
    if status != "ok":
        raise ValueError(f"bandwidth: no fixed point to build the linear form at ({message})")
    mean, factor, weights = smooth_factor(conf, resid, sigma, grid_size(sigma, n_grid), codes,
                                          n_units)
    cov = np.full((mean.size, mean.size), np.nan) if factor is None else factor @ factor.T
    return mean, cov, weights


smooth_ece_linear_form.__doc__ = smooth_ece_linear_form.__doc__.replace("{params}", _PARAMS)
