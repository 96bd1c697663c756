"""The NC-ECE intervals with fitted channels, assembled for :func:`noisycal.ece`.

- :func:`delta_cov_hook`: the default inverted interval's null, the sample covariance
  of the bin means plus the channel error by the delta method, with draws whose channel
  part is pushed through the exact corrected target
  (:mod:`noisycal.metrics.nc.delta`), and the statuses 'weak_channels' and
  'channels_fixed';
- :func:`refit_inversion`: the same inversion with the channel-refit bootstrap's
  replicates as the null draws (``interval=Refit()``);
- :func:`nc_ece_named`: the estimand every Estimate against a corrected target names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import x64
from ..._util.statuses import join_messages
from .delta import LINEARITY_Z, UNBOUNDED, channel_noise, channel_term

__all__ = ["target_columns", "fitted_channels", "carries_channel_error", "delta_cov_hook",
           "with_channel_error",
           "bin_means_statistic", "refit_covariance", "refit_inversion", "nc_ece_named",
           "BOUNDARY_EFFECT", "CHANNEL_ERROR", "POSTERIOR_CHANNEL_ERROR", "PLUGIN_BIAS",
           "PLUGIN_BIASED", "clipped_upper"]


def target_columns(P: np.ndarray, kind: str) -> np.ndarray:
    """The target column of each item in each score group, int array (G, n).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    kind : {'positive_class', 'top_label', 'classwise'}
        Top label: the lowest index on ties (as
        :func:`~noisycal.metrics.binned.bins.group_scores`).

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


def carries_channel_error(target: Any, interval: str | None, reduce: str,
                          refit_channels: bool, dask: bool) -> bool:
    """Whether a binned metric's inverted interval carries the target's channel error.

    For the ECE (not the MCE) with ``interval='inversion'`` against a corrected target
    whose channels were fitted, unless ``refit_channels`` (which estimates the same
    error by refitting).

    Parameters
    ----------
    target : object
    interval : str or None
    reduce : {'ece', 'mce'}
    refit_channels : bool
    dask : bool
        Whether the predictions are a Dask array (refused: the channel error is built
        item by item).

    Returns
    -------
    bool
    """
    carries = (interval == "inversion" and reduce == "ece" and not refit_channels
               and fitted_channels(target))
    if carries and dask:
        raise ValueError("a corrected target with fitted channels needs in-memory "
                         "predictions (its interval carries the channel error item by item)")
    return carries


#: A boundary channel entry whose rule-of-three move changes the bin means (summed) by
#: more than this many standard errors makes the interval 'weak_channels'. Measured
#: (benchmarks/README.md): two classes, weak annotators, n = 500, the fits with such an
#: entry covered 0.22-0.33, the others 1.00.
BOUNDARY_EFFECT = 0.1

#: The status of an NC-ECE interval read off the plug-in's own distribution (interval
#: kinds in :data:`PLUGIN_BIASED`): the plug-in is biased upward near 0, and so are they.
PLUGIN_BIAS = "plugin_bias"
PLUGIN_BIASED = ("bootstrap", "credible")

#: The default inverted NC-ECE interval: the channel error by the delta method.
CHANNEL_ERROR = "delta (sandwich)"
#: The same under a NUTS fit: the influence on the posterior mean from its draws
#: (:func:`noisycal.engines.influence.posterior_influence`).
POSTERIOR_CHANNEL_ERROR = "delta (posterior influence)"


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
        Gaussian channel draws (our default,
        :func:`~noisycal.metrics.nc.delta.channel_noise`), or as Gaussian draws
        with the delta method's covariance.

    Returns
    -------
    hook : callable or None
        ``hook(cov, n_sim, seed) -> (cov, noise)`` for
        :func:`~noisycal.metrics.binned.estimate.binned_estimate`: the covariance with
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
    fit = target.details["fit"]
    det = {"method": POSTERIOR_CHANNEL_ERROR if getattr(fit, "method", None) == "nuts"
           else CHANNEL_ERROR, "draws": draws, "n_free": term.n_free,
           "matched_by": term.matched_by, "n_common": term.n_common,
           "curvature": term.curvature,
           "channel_variance": np.diag(term.channel).copy(),
           "cross_covariance": np.diag(term.cross).copy()}
    status = ("ok", "")

    def hook(cov: np.ndarray, n_sim: int, seed: Any) -> tuple[np.ndarray, Any]:
        noise = channel_noise(term, cov, n_sim, seed) if draws == "nonlinear" else None
        if noise is not None:
            det["n_singular_draws"] = int(np.sum(noise[:, 0] >= UNBOUNDED))
        weak = weak_channels(term, cov + term.added, conf.shape[0], det)
        if weak is not None:
            det["status"] = weak
        return cov + term.added, noise

    return hook, det, status


def weak_channels(term: Any, cov: np.ndarray, n_groups: int, details: dict
                  ) -> tuple[str, str] | None:
    """Status 'weak_channels' and its message when the normal approximation of the
    channel error fails, else None.

    Two rules: a move of ``LINEARITY_Z`` standard errors along a leading direction of the
    channel error makes a used channel singular (``term.curvature`` is inf); or a channel
    entry held at the boundary, moved to its rule-of-three bound, changes the bin means
    (summed over bins, divided by the number of score groups) by more than
    ``BOUNDARY_EFFECT`` times their standard error ``sqrt(trace(cov)) / n_groups``.

    Parameters
    ----------
    term : ChannelTerm
    cov : ndarray of shape (J, J)
        The bin means' covariance with the channel error.
    n_groups : int
    details : dict
        Receives ``boundary_effect`` and ``boundary_se``.

    Returns
    -------
    (str, str) or None
    """
    se = float(np.sqrt(np.sum(np.diag(cov))) / n_groups)
    details.update(boundary_effect=term.boundary_effect, boundary_se=se)
    if not np.isfinite(term.curvature):
        return ("weak_channels", "the fitted channels are too uncertain for the normal "
                f"approximation behind this interval: a move of {LINEARITY_Z:g} standard "
                "errors along a leading direction of their error makes a used channel "
                "singular (the corrected target is then unbounded)")
    if term.boundary_effect > BOUNDARY_EFFECT * se:
        return ("weak_channels", (
            "a fitted channel entry lies at the boundary, where its uncertainty is not "
            "normal: moved to the upper 95% bound of a rate with no observed event "
            f"(3 / N) it changes the bin means by {term.boundary_effect:.3g} (summed), "
            f"more than {BOUNDARY_EFFECT:g} times their standard error {se:.3g}; the "
            "interval does not carry this and can under-cover"))
    return None


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
    if code == "ok":
        return dataclasses.replace(est, details=new)
    if est.status != "ok":  # the Estimate's own statuses come first, the channels' beside
        return dataclasses.replace(est, details=new, statuses=est.statuses + (code,),
                                   message=join_messages(est.message, message))
    return dataclasses.replace(est, details=new, status=code,
                               message=message + (f"; {est.message}" if est.message else ""))


def bin_means_statistic(weights: jax.Array, target: jax.Array, conf: jax.Array,
                        bins: jax.Array, cols: jax.Array, n_bins: int) -> jax.Array:
    r"""Weighted bin means of target minus confidence, (G * n_bins,) (JAX-traceable).

    :math:`\hat m_{gb} = \sum_{i \in b} w_i (T_i[c_g(i)] - \text{conf}_{gi}) / \sum_i w_i`,
    the vector whose norm is the binned NC-ECE (the statistic of the channel-refit
    replicates of :func:`refit_inversion`; same arguments as
    :func:`noisycal.metrics.nc.intervals.nc_ece_statistic`).

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


# one compiled program, not every operation compiled on its own
_bin_means_statistic_jit = jax.jit(bin_means_statistic, static_argnames=("n_bins",))


def refit_covariance(target: Any, items: tuple, n_bins: int, n_boot: int, seed: Any,
                     progress: bool = False) -> tuple[np.ndarray, np.ndarray, dict]:
    """Covariance of the bin means over channel-refit bootstrap replicates.

    Parameters
    ----------
    target : Target
        A corrected target from an EM fit of the Dawid–Skene family.
    items : tuple of ndarray
        ``(conf, bins, cols)``, each (G, n_items).
    n_bins, n_boot : int
    seed : int or jax key
    progress : bool, default=False
        A progress bar on stderr over the refits.

    Returns
    -------
    cov : ndarray of shape (J, J)
        Over the replicates whose refitted channels could be inverted.
    replicate_means : ndarray of shape (n_boot, J)
        NaN rows where they could not.
    details : dict
        The refit bootstrap's details (:func:`noisycal.metrics.nc.refit.nc_ece_refit_replicates`).
    """
    from .refit import nc_ece_refit_replicates

    means, extra = nc_ece_refit_replicates(target, items, n_bins=n_bins, n_boot=n_boot,
                                           statistic=bin_means_statistic, seed=seed,
                                           progress=progress)
    good = np.all(np.isfinite(means), axis=1)
    cov = np.cov(means[good].T) if good.sum() > 1 else np.full((means.shape[1],) * 2, np.nan)
    return np.atleast_2d(cov), means, extra


def refit_inversion(est: Any, target: Any, items: tuple, *, n_bins: int, n_boot: int,
                    level: float, seed: Any, estimator: str, progress: bool = False) -> Any:
    """The inverted NC-ECE interval with the bin means' covariance from channel refits.

    The binned NC-ECE is inverted as the default interval is
    (:func:`noisycal.intervals.inversion.invert_norm`, least-favourable upper null), with
    the test's null draws the centred replicates of the channel-refit bootstrap
    (:mod:`noisycal.metrics.nc.refit`) instead of the delta method's: they carry the
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
    progress : bool, default=False
        A progress bar on stderr over the refits.

    Returns
    -------
    Estimate
    """
    import dataclasses

    from ...intervals.inversion import inversion_report, invert_norm

    conf, bins, cols = items
    with x64():
        mean = np.asarray(_bin_means_statistic_jit(
            jnp.ones(conf.shape[1]), jnp.asarray(target.values), jnp.asarray(conf),
            jnp.asarray(bins), jnp.asarray(cols), n_bins=n_bins))
    cov, reps, extra = refit_covariance(target, items, n_bins, n_boot, seed, progress)
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
    term = channel_term(target, conf, bins, cols, n_bins)
    weak = None if isinstance(term, str) else weak_channels(term, cov, G,
                                                            det["channel_error"])
    failed = (f"{extra['n_failed']} of {n_boot} refits gave a channel that cannot be "
              "inverted (an unbounded corrected target in the test's draws)"
              if extra["n_failed"] else "")
    status, message, also = est.status, est.message, ()
    if weak is not None:
        if status == "ok":
            status, message = weak
        else:  # kept beside the Estimate's own statuses
            also, message = (weak[0],), join_messages(message, weak[1])
    if status == "ok" and extra["n_failed"] > 0.5 * (1.0 - level) * n_boot:
        status, message = "weak_channels", ("the fitted channels are too uncertain: "
                                            f"{failed}, more than the upper tail the "
                                            "interval may leave out")
    else:
        if extra["n_failed"] > 0.5 * (1.0 - level) * n_boot:
            also += ("weak_channels",)
        message = "; ".join(m for m in (message, failed) if m)
    return dataclasses.replace(est, value=value, interval=ci, level=level, kind="inversion",
                               method="refit replicates", n_boot=n_boot, details=det,
                               status=status, message=message, estimator=estimator,
                               replicates=None, statuses=est.statuses + also)


def nc_ece_named(est: Any) -> Any:
    """``est`` (an ECE against a corrected target) naming its estimand and estimator.

    The estimand is the binned calibration error against the *true* label, which the
    corrected target estimates without bias under class-conditional noise ("Noisy-Label
    Calibration with Multiple Unreliable Labels", Section 2). It is at most 1, so an
    upper end beyond 1 (noisy corrected targets on few items) is reported as 1, with the
    computed value in ``details['upper_clipped']`` (intersecting a confidence set with
    the parameter space keeps its coverage).

    An interval of the plug-in's own distribution (a bootstrap, including
    ``Refit(method='percentile')``, or a credible interval) gets the status
    ``'plugin_bias'`` (:data:`PLUGIN_BIAS`), whatever else applies: near 0 it misses from
    above (benchmarks/README.md).

    Parameters
    ----------
    est : Estimate

    Returns
    -------
    Estimate
    """
    import dataclasses

    from ..binned.estimate import estimand_text

    det = est.details
    groups = det.get("per_group")
    text = estimand_text(det.get("norm", "l1"), len(groups) if groups else 1,
                         det.get("kind") == "classwise")
    text = text.replace("E[target - confidence", "E[1{true label} - confidence")
    text += (" (the NC-ECE; the corrected target estimates the true label's one-hot "
             "without bias under class-conditional annotator noise)")
    out = dataclasses.replace(est, estimand=text, estimator=est.estimator or "plug-in")
    if est.kind in PLUGIN_BIASED:
        out = dataclasses.replace(out, status=PLUGIN_BIAS, message=join_messages(
            out.message, f"a {est.kind} interval is the distribution of the plug-in NC-ECE, "
            "which is biased upward near 0: it misses a nearly calibrated classifier's "
            "error from above most of the time (measured coverage: benchmarks/README.md); "
            "the default inverted interval (interval='auto') covers"))
    if est.interval is not None and est.high > 1.0:
        high, clip = clipped_upper(est.high)
        out = dataclasses.replace(out, interval=(min(est.low, high), high),
                                  details={**est.details, **clip})
    return out


def clipped_upper(high: float) -> tuple[float, dict]:
    """An NC-ECE interval's upper end at most 1 (the estimand is a calibration error
    against a true label), and the details that say so (empty when not clipped).

    Parameters
    ----------
    high : float

    Returns
    -------
    (float, dict)
    """
    if not high > 1.0:
        return high, {}
    return 1.0, {"upper_clipped": high,
                 "note_upper": f"the upper end {high:.4g} exceeds 1, the largest possible "
                               "calibration error against a true label; reported as 1"}
