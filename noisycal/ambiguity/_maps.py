"""The true-label ECE after a Bayesian calibration map, with the map's uncertainty.

A NUTS fit of :class:`~noisycal.annotators.soft_labels.DirichletSoftLabels` is a posterior
over Dirichlet-calibration maps ``(W, b)``. :func:`posterior_true_label_ece` compares the
calibrated predictions with a soft target (the annotator distributions) and gives a
credible interval whose spread carries both the map's posterior uncertainty and the
sampling of the evaluation items.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.special import softmax

from .._util.statuses import join_messages
from .._util.types import ArrayLike, Seed
from .._util.validation import check_int, check_level, prediction_items, predictions
from ..intervals.estimate import Estimate
from ..metrics.ece import resolve_inputs, with_target_status
from ..metrics.nc.credible import bayesian_bootstrap_draws, equal_tailed
from ..metrics.nc.intervals import credible_stat, nc_ece_items
from ..metrics.true_label import true_label_ece

__all__ = ["posterior_true_label_ece"]


def posterior_true_label_ece(fit: Any, target: object, *, logits: ArrayLike | None = None,
                             probs: ArrayLike | None = None, kind: str | None = None,
                             n_bins: int = 15, level: float = 0.9, thin: int = 1,
                             max_draws: int = 1000, classes: ArrayLike | None = None,
                             items: ArrayLike | None = None, seed: Seed = 0) -> Estimate:
    r"""True-label ECE after a posterior calibration map, with a credible interval.

    The value is the expected-form true-label ECE of Tao, Luo, Dong & Xu (2026),
    "Confidence Calibration under Ambiguous Ground Truth" (Section 3.2: the binned gap
    between the confidence and the annotator distribution's mass on the predicted class,
    15 equal-width bins by default), of the posterior-mean calibrated probabilities
    ``fit.predict_proba(...)`` against ``target``; it equals
    ``true_label_ece(fit.predict_proba(...), target, form='expected')``.

    The credible interval: for each posterior draw d of the map (at most ``max_draws``,
    a seeded subsample), the calibrated probabilities :math:`\mathrm{softmax}(W_d \log
    \hat p_i + b_d)` are binned afresh and their true-label ECE against the soft target is
    computed under Bayesian-bootstrap item weights :math:`w \sim \mathrm{Dirichlet}(1,
    \dots, 1)` (Rubin 1981), one weight vector per draw; the interval is the
    equal-tailed quantile range of these values. This is the construction of the
    credible interval of the NC-ECE (:func:`noisycal.metrics.nc.credible.nc_ece_credible`,
    the same loop), with posterior draws of the calibration map in place of draws of the
    annotator channels. A choice, documented because the paper has no Bayesian map: the
    interval describes the posterior predictive spread of the ECE a drawn map would have
    on a re-weighted evaluation set; since each draw's map is noisier than their mean,
    the per-draw values tend to lie above the posterior-mean value (reported in
    ``details['mean_of_draws']``), as the binned ECE is biased upward by noise.

    Parameters
    ----------
    fit : SoftLabelFit
        A ``DirichletSoftLabels().fit(..., method='nuts')`` result (with posterior draws).
    target : Target, array-like of shape (n_items, n_classes), or labels (n_items,)
        The annotator distributions of the evaluation items (rows on the simplex), e.g.
        :func:`noisycal.targets.soft`.
    logits, probs : array-like of shape (n_items, n_classes) or (n_items,)
        The classifier's uncalibrated predictions of the evaluation items (give one),
        as passed to ``fit.predict_proba``.
    kind : {'top_label', 'classwise', 'positive_class'}, optional
        As in :func:`noisycal.true_label_ece` (default 'top_label'; 'positive_class' for
        1-D binary input).
    n_bins : int, default=15
        Equal-width bins.
    level : float, default=0.9
        Credible level, a fraction in (0, 1).
    thin : int, default=1
        Use every ``thin``-th posterior draw (for the point value and the interval).
    max_draws : int, default=1000
        At most this many draws of the map in the interval (a seeded subsample).
    classes, items : array-like, optional
        As in :func:`noisycal.true_label_ece`.
    seed : int or jax key, default=0
        Seeds the draw subsample and the Bayesian-bootstrap weights.

    Returns
    -------
    Estimate
        ``kind='credible'``, ``method='credible-eti'``; ``replicates`` holds the per-draw
        values, ``details`` adds ``n_map_draws``, ``n_failed`` and ``mean_of_draws``.
        ``statuses`` holds every status of the fit when it is not 'ok' (e.g.
        'not_converged' when R-hat is too large, 'not_identified' when every item had one
        vote), with the fit's message, ``'target_...'`` when the target was built from a
        failed fit, and 'nonfinite' (no interval) when some draw gives non-finite
        probabilities; ``status`` is the most severe.

    Raises
    ------
    ValueError
        When ``fit`` has no posterior draws (not a NUTS fit), on predictions whose number
        of classes is not the map's, on a target whose rows are not distributions, and on
        invalid ``thin``, ``max_draws``, ``level`` or ``n_bins``.
    """
    draws = getattr(fit, "draws", None)
    if not hasattr(fit, "predict_proba") or not hasattr(fit, "draw_index"):
        raise ValueError(f"fit must be a SoftLabelFit (DirichletSoftLabels().fit(...)), got "
                         f"{type(fit).__name__}")
    if draws is None:
        raise ValueError(f"fit must be a NUTS fit with posterior draws of the map "
                         f"(method='nuts'); this fit is method={getattr(fit, 'method', None)!r}")
    max_draws = check_int(max_draws, "max_draws", minimum=1)
    level = check_level(level)
    P_mean = fit.predict_proba(logits=logits, probs=probs, thin=thin)
    # the item ids of the predictions (a pandas index, or items=) travel with P_mean, so
    # a target in another item order is aligned or refused as true_label_ece does
    ids = prediction_items(probs, logits, items)
    est = true_label_ece(P_mean, target, classes=classes, items=ids, form="expected",
                         n_bins=n_bins, kind=kind, interval=None)
    S = resolve_inputs(P_mean, target, None, classes=classes, items=ids)[2]
    _, log_p, _ = predictions(probs, logits)
    idx = fit.draw_index(thin=thin)
    kind, M = est.details["kind"], int(n_bins)
    Ws, bs = draws["W"], draws["b"]

    def one(d: int, w: np.ndarray) -> float:
        P = softmax(log_p @ Ws[idx[d]].T + bs[idx[d]], axis=1)
        if not np.all(np.isfinite(P)):
            return float("nan")
        conf, bins, cols = nc_ece_items(P, kind, M)
        return credible_stat(w, S, conf=conf, bins=bins, cols=cols, n_bins=M)

    _, vals = bayesian_bootstrap_draws(idx.size, S.shape[0], one, seed=seed,
                                       max_draws=max_draws)
    n_failed = int(np.sum(np.isnan(vals)))
    status, message = "ok", ""
    if n_failed:
        ci = (float("nan"), float("nan"))
        status, message = "nonfinite", (f"{n_failed} of {vals.size} draws of the map gave "
                                        "non-finite probabilities; no interval")
    else:
        ci = equal_tailed(vals, level)
    statuses = (*est.statuses, status)
    if fit.status != "ok":  # every status of the map's fit, beside the draws' own
        statuses = (*getattr(fit, "statuses", (fit.status,)), *statuses)
        message = f"the calibration map's NUTS fit: {fit.message}" + (
            f"; {message}" if message else "")
    message = join_messages(est.message, message)  # the point estimate's own message too
    out = dataclasses.replace(
        est, interval=ci, level=level, kind="credible", method="credible-eti",
        status=status, statuses=statuses, message=message, replicates=vals,
        details={**est.details, "n_map_draws": int(vals.size), "n_failed": n_failed,
                 "mean_of_draws": float(np.nanmean(vals)) if vals.size > n_failed
                 else float("nan"), "interval_source": "map posterior x Bayesian bootstrap"})
    return with_target_status(out, target)
