r"""NC-ECE with estimated channels: the bin means' covariance with the channel error.

The corrected target :math:`T_i(\hat\theta)` of :func:`noisycal.targets.corrected` uses
channels :math:`\hat\theta` estimated from annotations, usually of the same items. With
the bins held fixed the binned NC-ECE is a norm of the bin means
:math:`\hat m_j(\hat\theta) = \frac1n\sum_i x_{ij}(\hat\theta)`,
:math:`x_{ij} = (T_i[c_g(i)] - \text{conf}_{ig})\,1\{i \in j\}`, and to first order

.. math:: \hat m(\hat\theta) - m(\theta_0) \approx \sum_i \Big[\frac{x_i - \hat m}{n}
          + D\,\phi_i\Big], \qquad D = \partial \hat m / \partial\theta,

with :math:`\phi_i` the item's influence on :math:`\hat\theta`
(:mod:`noisycal.engines.influence`; zero for items the channels were not fitted on).
The covariance of the bin means is then

.. math:: V = \hat V_x + C D^T + D C^T + D\,\Sigma_\theta D^T, \qquad
          C = \sum_i \frac{x_i - \hat m}{n}\phi_i^T, \quad
          \Sigma_\theta = \sum_k \phi_k\phi_k^T,

:math:`\hat V_x` the sample covariance with the channels held fixed. The aggregation
weights are held at their values: every annotator's corrected label is unbiased, so the
weights move the population bin means only at second order.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import x64
from ..correction import corrected_from_channels
from ..engines.influence import ChannelInfluence, channel_influence, params_from_free

__all__ = ["ChannelTerm", "channel_term"]


class ChannelTerm(NamedTuple):
    """What the estimated channels add to the covariance of the bin means.

    Attributes
    ----------
    added : ndarray of shape (J, J)
        ``C D^T + D C^T + D Sigma D^T``.
    channel : ndarray of shape (J, J)
        ``D Sigma D^T`` alone.
    cross : ndarray of shape (J, J)
        ``C D^T + D C^T``.
    jacobian : ndarray of shape (J, p)
        ``D``.
    n_common : int
        Items both in the target and in the fit (their influence enters ``C``).
    matched_by : str
        How target rows were matched to fitted items.
    n_free : int
        Free channel parameters.
    cross_factor : ndarray of shape (J, p)
        ``C``, the covariance of the items' own terms of the bin means with the channel
        error ``sum_i phi_i``.
    covariance : ndarray of shape (p, p)
        ``Sigma``, the channels' sandwich covariance.
    bin_means : callable
        ``bin_means(theta) -> (J,)``, the exact bin means at free channel coordinates
        theta (vmappable; theta = 0 at the estimate).
    used_channels : callable
        ``used_channels(theta) -> (J_used, K, K)``, the informative annotators' channels in
        the target's order at theta.
    boundary_effect : float
        The largest change of the NC-ECE's norm of bin-mean changes,
        ``sum_j w_j |m_j(moved) - m_j|``, over the channel entries held fixed at the
        boundary moved to their rule-of-three bound (``ChannelInfluence.boundary_moves``;
        0 when there are none).
    curvature : float
        The largest relative curvature of the bin means along the leading channel
        directions (:func:`_curvature`); inf when a move of ``LINEARITY_Z`` standard
        errors makes a used channel singular.
    """

    added: np.ndarray
    channel: np.ndarray
    cross: np.ndarray
    jacobian: np.ndarray
    n_common: int
    matched_by: str
    n_free: int
    curvature: float
    cross_factor: np.ndarray
    covariance: np.ndarray
    bin_means: Any
    used_channels: Any
    boundary_effect: float


def _aligned(conf: jax.Array, annotator_index: jax.Array, class_index: jax.Array
             ) -> jax.Array:
    """The fit's channels in the target's annotator and class order."""
    return conf[annotator_index][:, class_index][:, :, class_index]


@partial(jax.jit, static_argnames=("shape", "one_coin", "n_cells"))
def _bin_means(theta: jax.Array, x0: jax.Array, basis: jax.Array, ratings: jax.Array,
               observed: jax.Array, mask: jax.Array, alpha: jax.Array,
               annotator_index: jax.Array, class_index: jax.Array, conf: jax.Array,
               cols: jax.Array, flat: jax.Array, *, shape: tuple, one_coin: bool,
               n_cells: int) -> jax.Array:
    """Bin means (G * B,) of the corrected target at free channel coordinates theta."""
    p = params_from_free(theta, x0, basis, shape, one_coin)
    T = corrected_from_channels(ratings, observed, mask, alpha,
                                _aligned(p["confusion"], annotator_index, class_index),
                                xp=jnp)
    t = jnp.take_along_axis(T, cols.T, axis=1).T                     # (G, n)
    return jax.ops.segment_sum((t - conf).ravel(), flat, num_segments=n_cells) / conf.shape[1]


_jacobian = jax.jit(jax.jacfwd(_bin_means), static_argnames=("shape", "one_coin", "n_cells"))


def _match(target: Any, fit_items: np.ndarray) -> tuple[np.ndarray, str]:
    """Position in the fit of each target row (-1: not fitted)."""
    items = getattr(target, "items", None)
    if items is None:
        if fit_items.size == target.n_items:
            return np.arange(target.n_items), "position (the target has no item ids)"
        return np.full(target.n_items, -1), "none (the target has no item ids)"
    pos = {v: i for i, v in enumerate(np.asarray(fit_items).tolist())}
    out = np.array([pos.get(v, -1) for v in np.asarray(items).tolist()], dtype=np.int64)
    return out, "item id"


def channel_term(target: Any, conf: np.ndarray, bins: np.ndarray, cols: np.ndarray,
                 n_bins: int, *, annotations: Any = None,
                 influence: ChannelInfluence | None = None) -> ChannelTerm | str:
    """The channel error's share of the covariance of the NC-ECE's bin means.

    Parameters
    ----------
    target : Target
        A corrected target built from a Dawid–Skene-family fit (``details['fit']``).
    conf, bins, cols : ndarray of shape (G, n)
        Confidences, bin indices and target columns per score group
        (:func:`noisycal.metrics.nc_ece.nc_ece_items`).
    n_bins : int
    annotations : Annotations, optional
        The fitted data, when the fit does not carry them.
    influence : ChannelInfluence, optional
        Precomputed :func:`noisycal.engines.influence.dawid_skene_influence`.

    Returns
    -------
    ChannelTerm, or str
        A string says why the channel error could not be computed.
    """
    det = target.details
    fit = det.get("fit")
    if fit is None:
        return "the target's channels were given, not fitted"
    if influence is None:
        influence = channel_influence(fit, annotations)
    if isinstance(influence, str):
        return influence
    G, n = conf.shape
    B = n_bins
    J, K = np.shape(det["ratings"])[1:]
    ai = det.get("annotator_index")
    ci = det.get("class_index")
    with x64():
        args = (jnp.asarray(influence.x0), jnp.asarray(influence.basis),
                jnp.asarray(det["ratings"]), jnp.asarray(det["observed"]),
                jnp.asarray(det["informative"]), jnp.asarray(det["weights"]),
                jnp.asarray(np.arange(J) if ai is None else ai),
                jnp.asarray(np.arange(K) if ci is None else ci),
                jnp.asarray(conf, jnp.float64), jnp.asarray(cols),
                jnp.asarray((np.arange(G)[:, None] * B + bins).ravel()))
        static = {"shape": influence.shape, "one_coin": influence.one_coin,
                  "n_cells": G * B}
        theta0 = jnp.zeros(influence.basis.shape[1], dtype=jnp.float64)
        D = np.asarray(_jacobian(theta0, *args, **static))        # (J, p)
        mhat = np.asarray(_bin_means(theta0, *args, **static))

        def means(theta: jax.Array) -> jax.Array:
            return _bin_means(theta, *args, **static)

    T0 = np.asarray(target.values)
    fit_items = np.asarray(getattr(getattr(fit, "annotations", None) or annotations,
                                   "items", fit.items))
    pos, how = _match(target, fit_items)
    common = pos >= 0
    phi = np.zeros((n, influence.basis.shape[1]))
    phi[common] = influence.influence[influence.pattern[pos[common]]]
    t = np.take_along_axis(T0, cols.T, axis=1).T
    d = t - conf                                                 # (G, n)
    xs = np.zeros((G * B, phi.shape[1]))
    for g in range(G):
        np.add.at(xs, g * B + bins[g], d[g][:, None] * phi)
    Cx = (xs - np.outer(mhat, phi.sum(axis=0))) / n
    cross = Cx @ D.T
    cross = cross + cross.T
    channel = D @ influence.covariance @ D.T
    mask = np.flatnonzero(np.asarray(det["informative"]))

    def used_channels(theta: jax.Array) -> jax.Array:
        p = params_from_free(theta, args[0], args[1], influence.shape, influence.one_coin)
        return _aligned(p["confusion"], args[6], args[7])[mask]

    with x64():
        curv = _curvature(means, D, influence.covariance, used_channels)
        effect = 0.0
        if influence.boundary_moves.shape[0]:
            moved = jax.vmap(lambda x: _bin_means(theta0, x, *args[1:], **static))(
                jnp.asarray(influence.x0 + influence.boundary_moves))
            effect = float(np.max(np.abs(np.asarray(moved) - mhat).sum(axis=1)) / G)
    return ChannelTerm(cross + channel, channel, cross, D, int(common.sum()), how,
                       int(influence.basis.shape[1]), curv, Cx, influence.covariance, means,
                       used_channels, effect)


#: Standard errors of the channel move in the linearity check.
LINEARITY_Z = 2.0
#: Leading channel directions the linearity check evaluates.
LINEARITY_DIRECTIONS = 3


def _curvature(means: Any, D: np.ndarray, Sigma: np.ndarray, used_channels: Any) -> float:
    r"""How far the bin means are from linear in the channels over their uncertainty.

    Along each of the leading directions :math:`\delta_k` of the channel error (the
    right singular vectors of :math:`D\Sigma^{1/2}`, scaled to one standard error), the
    bin means are evaluated exactly at :math:`\pm z\delta_k` (z = ``LINEARITY_Z``); the
    relative curvature is :math:`\|m(z\delta) + m(-z\delta) - 2m(0)\| /
    \|m(z\delta) - m(-z\delta)\|` (for a quadratic, the ratio of the second-order to
    the first-order change at z). inf when a move makes an informative channel singular
    (:func:`_singular`).
    """
    w, U = np.linalg.eigh(0.5 * (Sigma + Sigma.T))
    root = U * np.sqrt(np.clip(w, 0.0, None))                    # Sigma^{1/2}
    _, s, vt = np.linalg.svd(D @ root, full_matrices=False)
    worst = 0.0
    m0 = np.asarray(means(jnp.zeros(Sigma.shape[0])))
    for k in range(min(LINEARITY_DIRECTIONS, s.size)):
        if s[k] <= 1e-3 * s[0]:
            break
        step = LINEARITY_Z * (root @ vt[k])
        if np.any(_singular(used_channels, np.stack([step, -step]))):
            return float("inf")
        up, down = (np.asarray(means(jnp.asarray(x))) for x in (step, -step))
        slope = np.linalg.norm(up - down)
        if slope > 0:
            worst = max(worst, float(np.linalg.norm(up + down - 2 * m0) / slope))
    return worst


def _singular(used_channels: Any, thetas: np.ndarray) -> np.ndarray:
    """Which rows of ``thetas`` (r, p) make a used channel singular: not invertible
    (:func:`noisycal.correction.channels_invertible`) or of the other determinant sign
    than at the estimate. Bool array (r,)."""
    from ..correction import channels_invertible

    at0 = np.asarray(used_channels(jnp.zeros(thetas.shape[1])))
    C = np.asarray(jax.vmap(used_channels)(jnp.asarray(thetas)))   # (r, J, K, K)
    r, J, K, _ = C.shape
    ok = np.asarray(channels_invertible(C.reshape(r * J, K, K))).reshape(r, J)
    same = np.sign(np.linalg.det(C)) == np.sign(np.linalg.det(at0))[None, :]
    return ~np.all(ok & same, axis=1)


def target_columns(P: np.ndarray, kind: str) -> np.ndarray:
    """The target column of each item in each score group, int array (G, n).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    kind : {'positive_class', 'top_label', 'classwise'}
        Top label: the lowest index on ties (as :func:`~noisycal.metrics.binning.group_scores`).

    Returns
    -------
    ndarray of shape (G, n)
    """
    n, K = P.shape
    if kind == "top_label":
        return np.argmax(P, axis=1)[None, :].astype(np.int32)
    if kind == "positive_class":
        return np.ones((1, n), np.int32)
    return np.repeat(np.arange(K, dtype=np.int32)[:, None], n, axis=1)


def fitted_channels(target: Any) -> bool:
    """Whether ``target`` is a corrected target whose channels were fitted (not given).

    Parameters
    ----------
    target : object

    Returns
    -------
    bool
    """
    return (getattr(target, "kind", None) == "corrected"
            and getattr(target, "details", {}).get("fit") is not None)


#: A boundary channel entry whose rule-of-three move changes the bin means (summed) by
#: more than this many standard errors makes the interval 'weak_channels'. Measured
#: (benchmarks/README.md): two classes, weak annotators, n = 500, the fits with such an
#: entry covered 0.22-0.33, the others 1.00.
BOUNDARY_EFFECT = 0.1

#: The default inverted NC-ECE interval: the channel error by the delta method.
CHANNEL_ERROR = "delta (sandwich)"


def delta_cov_hook(target: Any, P: np.ndarray, conf: np.ndarray, bins: np.ndarray,
                   kind: str, n_bins: int, *, draws: str = "nonlinear"
                   ) -> tuple[Any, dict, tuple[str, str]]:
    """What the inverted interval of a corrected target from a fit adds to its null.

    Parameters
    ----------
    target : Target
        A corrected target with fitted channels (:func:`fitted_channels`).
    P : ndarray of shape (n, K)
        The predictions.
    conf, bins : ndarray of shape (G, n)
        The metric's confidences and bins per score group.
    kind : str
    n_bins : int
    draws : {'nonlinear', 'linear'}, default='nonlinear'
        How the test's null draws the channel error: through the exact bin means at
        Gaussian channel draws (:func:`channel_noise`, our default), or as Gaussian draws
        with the delta method's covariance.

    Returns
    -------
    hook : callable or None
        ``hook(cov, n_sim, seed) -> (cov, noise)`` for
        :func:`~noisycal.metrics.binned_estimate.binned_estimate`: the covariance with
        the delta method's terms added, and the null draws (None: Gaussian). None when
        the channel error could not be computed.
    details : dict
        ``details['channel_error']`` of the Estimate.
    status : (str, str)
        ``('ok', '')``, or a status and message: 'channels_fixed' when the channel error
        could not be computed (the interval then holds the channels at their estimates
        and can under-cover), 'weak_channels' when a move of ``LINEARITY_Z`` standard
        errors along a leading direction of the channel error makes a used channel
        singular (the normal approximation behind the interval does not hold).
    """
    term = channel_term(target, conf, bins, target_columns(P, kind), n_bins)
    if isinstance(term, str):
        return None, {"method": "none: channels held at their estimates",
                      "reason": term}, (
            "channels_fixed", "the channel estimation error could not be propagated ("
            f"{term}); the interval holds the channels at their estimates and can "
            "under-cover")
    det = {"method": CHANNEL_ERROR, "draws": draws, "n_free": term.n_free,
           "matched_by": term.matched_by, "n_common": term.n_common,
           "curvature": term.curvature,
           "channel_variance": np.diag(term.channel).copy(),
           "cross_covariance": np.diag(term.cross).copy()}
    status = ("ok", "")
    if not np.isfinite(term.curvature):
        status = ("weak_channels", f"the fitted channels are too uncertain for the normal "
                  f"approximation behind this interval: a move of {LINEARITY_Z:g} standard "
                  "errors along a leading direction of their error makes a used channel "
                  "singular (the corrected target is then unbounded)")
    det["boundary_effect"] = term.boundary_effect

    def boundary(cov: np.ndarray) -> None:
        G = conf.shape[0]
        se = float(np.sqrt(np.sum(np.diag(cov))) / G)
        det["boundary_se"] = se
        if term.boundary_effect > BOUNDARY_EFFECT * se and status[0] == "ok":
            det["status"] = ("weak_channels", (
                "a fitted channel entry lies at the boundary, where its uncertainty is not "
                "normal: moved to the upper 95% bound of a rate with no observed event "
                f"(3 / N) it changes the bin means by {term.boundary_effect:.3g} (summed), "
                f"more than {BOUNDARY_EFFECT:g} times their standard error {se:.3g}; the "
                "interval does not carry this and can under-cover"))

    def hook(cov: np.ndarray, n_sim: int, seed: Any) -> tuple[np.ndarray, Any]:
        noise = channel_noise(term, cov, n_sim, seed) if draws == "nonlinear" else None
        if noise is not None:
            det["n_singular_draws"] = int(np.sum(noise[:, 0] >= UNBOUNDED))
        boundary(cov + term.added)
        return cov + term.added, noise

    return hook, det, status


def with_channel_error(est: Any, details: dict, status: tuple[str, str]) -> Any:
    """``est`` with ``details['channel_error']`` and the channel status (when not ok).

    Parameters
    ----------
    est : Estimate
    details : dict
    status : (str, str)

    Returns
    -------
    Estimate
    """
    import dataclasses

    details = dict(details)
    code, message = status
    late = details.pop("status", None)            # set by the hook (boundary check)
    if code == "ok" and late is not None:
        code, message = late
    singular = details.get("n_singular_draws", 0)
    if code == "ok" and est.level is not None and est.n_boot and \
            singular > 0.5 * (1.0 - est.level) * est.n_boot:
        code, message = "weak_channels", (
            f"the fitted channels are too uncertain: {singular} of the test's {est.n_boot} "
            "channel draws make a used channel singular (an unbounded corrected target), "
            "more than the upper tail the interval may leave out")
    new = {**est.details, "channel_error": details}
    if code == "ok" or est.status != "ok":
        return dataclasses.replace(est, details=new)
    return dataclasses.replace(est, details=new, status=code,
                               message=message + (f"; {est.message}" if est.message else ""))


def bin_means_statistic(weights: jax.Array, target: jax.Array, conf: jax.Array,
                        bins: jax.Array, cols: jax.Array, n_bins: int) -> jax.Array:
    r"""Weighted bin means of target minus confidence, (G * n_bins,) (JAX-traceable).

    :math:`\hat m_{gb} = \sum_{i \in b} w_i (T_i[c_g(i)] - \text{conf}_{gi}) / \sum_i w_i`,
    the vector whose norm is the binned NC-ECE (the statistic of the channel-refit
    replicates of :func:`refit_inversion`; same arguments as
    :func:`noisycal.metrics.nc_ece.nc_ece_statistic`).

    Parameters
    ----------
    weights : array of shape (n_items,)
    target : array of shape (n_items, K)
    conf, bins, cols : arrays of shape (G, n_items)
    n_bins : int

    Returns
    -------
    array of shape (G * n_bins,)
    """
    t = jnp.take_along_axis(target, cols.T, axis=1).T
    sums = jax.vmap(lambda tg, cg, bg: jax.ops.segment_sum(weights * (tg - cg), bg,
                                                           num_segments=n_bins))(t, conf, bins)
    return sums.ravel() / jnp.sum(weights)


def refit_covariance(target: Any, items: tuple, n_bins: int, n_boot: int, seed: Any
                     ) -> tuple[np.ndarray, np.ndarray, dict]:
    """Covariance of the bin means over channel-refit bootstrap replicates.

    Parameters
    ----------
    target : Target
        A corrected target from an EM fit of the Dawid–Skene family.
    items : tuple of ndarray
        ``(conf, bins, cols)``, each (G, n_items).
    n_bins, n_boot : int
    seed : int or jax key

    Returns
    -------
    cov : ndarray of shape (J, J)
        Over the replicates whose refitted channels could be inverted.
    replicate_means : ndarray of shape (n_boot, J)
        NaN rows where they could not.
    details : dict
        The refit bootstrap's details (:func:`noisycal.intervals.refit.nc_ece_refit_replicates`).
    """
    from ..intervals.refit import nc_ece_refit_replicates

    means, extra = nc_ece_refit_replicates(target, items, n_bins=n_bins, n_boot=n_boot,
                                           statistic=bin_means_statistic, seed=seed)
    good = np.all(np.isfinite(means), axis=1)
    cov = np.cov(means[good].T) if good.sum() > 1 else np.full((means.shape[1],) * 2, np.nan)
    return np.atleast_2d(cov), means, extra


def refit_inversion(est: Any, target: Any, items: tuple, *, n_bins: int, n_boot: int,
                    level: float, seed: Any, estimator: str) -> Any:
    """The inverted NC-ECE interval with the bin means' covariance from channel refits.

    The binned NC-ECE is inverted as the default interval is
    (:func:`noisycal.intervals.inversion.invert_norm`, least-favourable upper null), with
    the test's null draws the centred replicates of the channel-refit bootstrap
    (:mod:`noisycal.intervals.refit`) instead of the delta method's: they carry the
    channel error and its correlation with the items' own terms, nonlinearity included
    (a refit whose channel cannot be inverted is an unbounded draw), their covariance
    sets the restricted estimate's metric, and the reported value is median-unbiased.
    Status 'weak_channels' when more refits fail than the upper tail the interval may
    leave out, ``(1 - level) / 2``.

    Parameters
    ----------
    est : Estimate
        The point estimate (binned L1 NC-ECE, no interval).
    target : Target
    items : tuple of ndarray
        ``(conf, bins, cols)`` of the metric, each (G, n).
    n_bins, n_boot : int
    level : float
    seed : int or jax key
    estimator : {'median-unbiased', 'plug-in'}

    Returns
    -------
    Estimate
    """
    import dataclasses

    from ..intervals.inversion import inversion_report, invert_norm

    conf, bins, cols = items
    with x64():
        mean = np.asarray(bin_means_statistic(jnp.ones(conf.shape[1]),
                                              jnp.asarray(target.values), jnp.asarray(conf),
                                              jnp.asarray(bins), jnp.asarray(cols), n_bins))
    cov, reps, extra = refit_covariance(target, items, n_bins, n_boot, seed)
    G = conf.shape[0]
    w = np.full(mean.size, 1.0 / G)
    det = {**est.details, **extra, "refit_channels": True,
           "channel_error": {"method": "channel-refit bootstrap covariance",
                             "n_boot": n_boot}}
    if not np.all(np.isfinite(cov)) or not np.any(np.diag(cov) > 0):
        return dataclasses.replace(est, interval=(float("nan"), float("nan")), level=level,
                                   kind="inversion", method="refit replicates",
                                   status="nonfinite", details=det, message=(
                                       "fewer than two channel refits could be inverted; "
                                       "no interval"))
    good = np.all(np.isfinite(reps), axis=1)
    noise = np.where(good[:, None], reps - reps[good].mean(axis=0), UNBOUNDED)
    inv = invert_norm(mean, cov, w, norm="l1", level=level, n_sim=n_boot, seed=seed,
                      upper_null="least-favourable", noise=noise)
    value, ci, rep = inversion_report(inv, float(est), level, estimator)
    det.update(rep, upper_null="least-favourable", zero_test="refit replicates")
    status, message = est.status, est.message
    if extra["n_failed"]:
        message = (f"{extra['n_failed']} of {n_boot} refits gave a channel that cannot be "
                   "inverted (an unbounded corrected target in the test's draws)")
        if extra["n_failed"] > 0.5 * (1.0 - level) * n_boot and status == "ok":
            status, message = "weak_channels", (
                "the fitted channels are too uncertain: " + message + ", more than the "
                "upper tail the interval may leave out")
    return dataclasses.replace(est, value=value, interval=ci, level=level, kind="inversion",
                               method="refit replicates", n_boot=n_boot, details=det,
                               status=status, message=message, estimator=estimator,
                               replicates=None)



def nc_ece_named(est: Any) -> Any:
    """``est`` (an ECE against a corrected target) naming its estimand and estimator.

    The estimand is the binned calibration error against the *true* label, which the
    corrected target estimates without bias under class-conditional noise ("Noisy-Label
    Calibration with Multiple Unreliable Labels", Section 2). It is at most 1, so an
    upper end beyond 1 (noisy corrected targets on few items) is reported as 1, with the
    computed value in ``details['upper_clipped']`` (intersecting a confidence set with
    the parameter space keeps its coverage).

    Parameters
    ----------
    est : Estimate

    Returns
    -------
    Estimate
    """
    import dataclasses

    from .binned_estimate import estimand_text

    det = est.details
    groups = det.get("per_group")
    text = estimand_text(det.get("norm", "l1"), len(groups) if groups else 1,
                         det.get("kind") == "classwise")
    text = text.replace("E[target - confidence", "E[1{true label} - confidence")
    text += (" (the NC-ECE; the corrected target estimates the true label's one-hot "
             "without bias under class-conditional annotator noise)")
    out = dataclasses.replace(est, estimand=text, estimator=est.estimator or "plug-in")
    if est.interval is not None and est.high > 1.0:
        # the estimand is a calibration error against a true label: at most 1
        out = dataclasses.replace(out, interval=(min(est.low, 1.0), 1.0), details={
            **est.details, "upper_clipped": est.high,
            "note_upper": f"the upper end {est.high:.4g} exceeds 1, the largest possible "
                          "calibration error against a true label; reported as 1"})
    return out


#: Channel draws evaluated per vectorised chunk by :func:`channel_noise`.
NOISE_CHUNK = 250


def channel_noise(term: ChannelTerm, sample_cov: np.ndarray, n_sim: int, seed: Any
                  ) -> np.ndarray:
    r"""Draws of the bin means' error with the channel part pushed through exactly.

    With the channel error :math:`u = \sum_i \phi_i \sim N(0, \Sigma)` and the items'
    own terms :math:`s` (covariance :math:`\hat V_x`, covariance with u equal to C),
    :math:`s \mid u \sim N(C\Sigma^+ u,\ \hat V_x - C\Sigma^+C^T)`; a draw of the
    error is :math:`s + \hat m(\hat\theta + u) - \hat m(\hat\theta)`, the exact bin
    means at the moved channels instead of the linear :math:`D u`. Its covariance is the
    delta method's to first order; its shape follows the correction's nonlinearity (the
    inverse of a confusion matrix, or 1 / (b - a), is skewed when the channels are
    uncertain). A draw that makes a used channel singular has an unbounded corrected
    target: its row is inf.

    Parameters
    ----------
    term : ChannelTerm
    sample_cov : ndarray of shape (J, J)
        :math:`\hat V_x`, the covariance of the bin means with the channels fixed.
    n_sim : int
    seed : int or jax key

    Returns
    -------
    ndarray of shape (n_sim, J)
    """
    from .._jax import as_numpy_rng
    from ..intervals.inversion import covariance_factor

    rng = as_numpy_rng(seed)
    Sigma = 0.5 * (term.covariance + term.covariance.T)
    root = covariance_factor(Sigma)
    u = rng.standard_normal((n_sim, root.shape[1])) @ root.T     # (n_sim, p)
    B = term.cross_factor @ np.linalg.pinv(Sigma)                  # (J, p)
    resid = sample_cov - B @ Sigma @ B.T
    e = rng.standard_normal((n_sim, sample_cov.shape[0])) @ covariance_factor(resid).T
    with x64():
        m0 = np.asarray(term.bin_means(jnp.zeros(Sigma.shape[0])))
        moved = np.concatenate([
            np.asarray(jax.vmap(term.bin_means)(jnp.asarray(u[i:i + NOISE_CHUNK])))
            for i in range(0, n_sim, NOISE_CHUNK)])
        singular = _singular(term.used_channels, u)
    out = u @ B.T + e + (moved - m0)
    bad = ~np.all(np.isfinite(out), axis=1) | singular
    out[bad] = UNBOUNDED
    return out


#: The value of every bin mean's error in a null draw whose channels are singular (an
#: unbounded corrected target); finite, so that the test's quantiles stay defined.
UNBOUNDED = 1e300
