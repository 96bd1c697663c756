"""Annotator-model comparison with the calibration of a classifier under each model.

:func:`compare_calibration` is :func:`noisycal.annotators.compare` plus the NC-ECE of a
classifier under every compared model (each model's corrected target) and the
model-averaged NC-ECE. It lives above :mod:`noisycal.metrics` and :mod:`noisycal.targets`
in the package layout, which both sit above the annotator models, so it is a top-level
module like :mod:`noisycal.report`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._util.statuses import join_messages, ordered_statuses
from .._util.types import ArrayLike, Seed
from .._util.validation import check_level
from ..annotations.core import Annotations
from ..annotations.matching import with_classes
from ..annotators.checks.compare import ComparisonResult, compare
from ..engines.results import AnnotatorFit
from ..intervals.estimate import Estimate
from ..intervals.inversion import mixture_inversion, recording_tails
from ..metrics import ece
from ..metrics.nc.assemble import PLUGIN_BIAS, clipped_upper
from ..targets.target import corrected, from_matrix

__all__ = ["compare_calibration", "mixture_interval", "AVERAGES"]

#: Estimands of the model-averaged NC-ECE (see :func:`compare_calibration`).
AVERAGES = ("inversion", "mixture", "target")


def mixture_interval(values: list[np.ndarray], weights: np.ndarray, level: float
                     ) -> tuple[float, float]:
    """Equal-tailed interval of a weighted mixture of empirical distributions.

    Parameters
    ----------
    values : list of 1-d arrays
        Draws of each component (equally weighted within it).
    weights : array-like of shape (n_components,)
        Mixture weights (non-negative, summing to a positive number).
    level : float

    Returns
    -------
    (low, high)
        The smallest draws whose mixture CDF reaches ``(1 - level) / 2`` and
        ``(1 + level) / 2``; NaN when a component with positive weight has a NaN draw.

    Examples
    --------
    >>> import numpy as np
    >>> mixture_interval([np.arange(10.0), np.arange(10.0) + 100], np.array([1.0, 0.0]),
    ...                  0.8)
    (0.0, 8.0)
    """
    w = np.asarray(weights, np.float64)
    vals = [np.asarray(v, np.float64).reshape(-1) for v in values]
    if any(wm > 0 and np.any(np.isnan(v)) for wm, v in zip(w, vals, strict=True)):
        return float("nan"), float("nan")
    v = np.concatenate(vals)
    p = np.concatenate([np.full(len(x), wm / len(x)) for wm, x in zip(w, vals, strict=True)])
    order = np.argsort(v, kind="stable")
    cdf = np.cumsum(p[order]) / p.sum()
    tails = np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    idx = np.minimum(np.searchsorted(cdf, tails - 1e-12), len(v) - 1)
    return float(v[order][idx[0]]), float(v[order][idx[1]])


def compare_calibration(fits: Mapping[str, AnnotatorFit], annotations: Annotations,
                        probs: ArrayLike | None = None, *, logits: ArrayLike | None = None,
                        ic: str = "loo", weights: str = "stacking",
                        average: str | None = None, n_bins: int = 15, kind: str | None = None,
                        level: float = 0.9, seed: Seed = 0) -> ComparisonResult:
    r"""Compare annotator models and the NC-ECE of a classifier under each.

    The comparison of :func:`noisycal.annotators.compare` (LOO with stacking weights for
    NUTS fits, AIC/BIC with Akaike weights for EM and MLE fits), and with predictions the
    binned NC-ECE under each model (:func:`noisycal.ece` on
    ``nc.targets.corrected(annotations, fit)``, with the library's default interval,
    which carries the channels' estimation error) and the model-averaged NC-ECE.

    Parameters
    ----------
    fits : dict of str to AnnotatorFit
    annotations : Annotations
        The ratings every model was fitted on (checked: :func:`noisycal.annotators.compare`);
        also the corrected targets' ratings. Its classes may be listed in any order.
    probs : array-like of shape (n_items, n_classes) or (n_items,), optional
        The classifier's predictions for the items of ``annotations`` (or ``logits``),
        tied to the fits' classes (which the fits must list in one order): a DataFrame's
        columns are matched to them by label; an array's columns are taken in the fits'
        class order (``fits[name].classes``; 1-D: the probability of the second class),
        and the corrected targets are built in that order too. A pandas index must list
        the annotations' items in order.
    logits : array-like, optional
    ic : {'loo', 'aic', 'bic'}, default='loo'
    weights : {'stacking', 'BB-pseudo-BMA', 'pseudo-BMA'}, default='stacking'
    average : {'inversion', 'mixture', 'target'}, default='inversion'
        The model-averaged estimand and estimator (Notes).
    n_bins : int, default=15
    kind : {'top_label', 'classwise', 'positive_class'}, optional
        Passed to :func:`noisycal.ece` (its default: 'positive_class' for 1-D
        predictions, else 'top_label'). With ``average='mixture'`` and two classes the
        kind is 'positive_class' for 1-D and (n, 2) predictions alike (the credible
        NC-ECE of two classes; another kind is refused).
    level : float, default=0.9
    seed : int or jax key, default=0

    Returns
    -------
    ComparisonResult
        With ``nc_ece`` (per model: ``value``, ``plugin``, ``low``, ``high``, ``kind``,
        ``status``) and ``averaged`` (an Estimate) when predictions are given.

    Raises
    ------
    ValueError
        As :func:`noisycal.annotators.compare`; ``average='mixture'`` for fits without
        posterior draws; fits that list their classes in different orders, or a
        DataFrame of predictions whose columns are not the classes; ``kind`` other than
        'positive_class' with ``average='mixture'`` and two classes.

    Notes
    -----
    With weights :math:`w_m` (stacking or Akaike), three model averages are offered.

    ``average='inversion'`` (the default): the per-model table's own estimator averaged
    over the models. Each model's NC-ECE inverts a test (:func:`noisycal.ece`'s default
    interval: statistic :math:`T_m`, null :math:`S_m(\theta_0)` carrying the model's
    channel error); the average inverts the weighted mixture of their tail probabilities,
    :math:`\sum_m w_m P(S_m(\theta_0) \ge T_m)` (the model-averaged tail area
    construction of Turek and Fletcher, "Model-averaged Wald confidence intervals",
    2012; :func:`noisycal.intervals.inversion.mixture_inversion`). The value is the
    mixture's median-unbiased estimate, which lies between the smallest and the largest
    per-model value (clipped to that range: the Monte Carlo discreteness of one
    simulated draw can otherwise move it just outside); the interval keeps each model's
    sampling and channel uncertainty and adds the models' disagreement. The statuses of
    every model with positive weight travel with it.

    ``average='mixture'``: the stacking-weighted mixture of the models' posterior
    distributions of the NC-ECE (``interval='credible'`` of :func:`noisycal.ece`, NUTS
    fits only), value :math:`\sum_m w_m \hat\theta_m` of the plug-ins. Like every
    credible interval of the plug-in it inherits the plug-in's upward bias near 0 and
    under-covers there (benchmarks/README.md); its status is always ``'plugin_bias'``.

    ``average='target'``: the NC-ECE against the weight-averaged corrected target
    :math:`\bar T = \sum_m w_m T_m`, with :func:`noisycal.ece`'s default interval for
    a corrected matrix (the channels treated as known, so the interval is too narrow by
    their error). Because the bin means are linear in the target and the ECE is a norm
    of them, its plug-in is at most :math:`\sum_m w_m \hat\theta_m` (triangle
    inequality): disagreement between models shrinks it rather than widening an
    interval. Its status is always ``'channels_fixed'``.
    """
    level = check_level(level)
    if average is not None and average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES} or None, got {average!r}")
    result = compare(fits, annotations, ic=ic, weights=weights)
    if probs is None and logits is None:
        return result
    average = average or "inversion"
    if average == "mixture" and ic != "loo":
        raise ValueError("average='mixture' needs posterior draws of every model (NUTS fits, "
                         "ic='loo'); with ic='aic' or 'bic' use the default "
                         "average='inversion'")
    w = result.model_weights
    names = list(w)
    # the predictions' columns stand for the fits' classes: the targets are built in the
    # fits' class order (a DataFrame's columns are then matched to them by label)
    classes = _fit_classes(fits)
    ann = with_classes(annotations, classes)
    if average == "mixture":
        kind = _mixture_kind(kind, len(classes))
    targets = {n: corrected(ann, fits[n]) for n in names}
    opts = {"logits": logits, "n_bins": n_bins, "kind": kind, "level": level, "seed": seed}
    rows, ests, tails = [], {}, {}
    for n in names:
        with recording_tails() as rec:
            est = ece(probs, targets[n], **opts)
        ests[n] = est
        tails[n] = rec[-1] if len(rec) == 1 else None
        rows.append({"model": n, "value": est.value,
                     "plugin": float(est.details.get("plugin", est.value)), "low": est.low,
                     "high": est.high, "kind": est.kind, "status": est.status})
    table = pd.DataFrame(rows)
    wv = np.array([w[n] for n in names])
    if average == "inversion":
        averaged = _averaged_inversion(ests, tails, names, wv, level, annotations.n_items)
    elif average == "mixture":
        averaged = _mixture(probs, targets, names, wv, opts, annotations.n_items)
    else:
        T = sum(wm * np.asarray(targets[n]) for wm, n in zip(wv, names, strict=True))
        est = ece(probs, from_matrix(T, kind="corrected", classes=ann.classes,
                                     items=ann.items), **opts)
        models = [s for n, wm in zip(names, wv, strict=True) if wm > 0
                  for s in ests[n].statuses]
        averaged = dataclasses.replace(
            est, details={**est.details, "weights": w, "average": "target"},
            estimand="binned calibration error against the weight-averaged corrected "
            "target", status="channels_fixed",
            statuses=(*est.statuses, *models), message=join_messages(
                est.message, "the weight-averaged target's channels are treated as known: "
                "the interval leaves out their estimation error and the models' "
                "disagreement; average='inversion' carries both"))
    return dataclasses.replace(result, nc_ece=table, averaged=averaged)


def _averaged_inversion(ests: dict[str, Estimate], tails: dict[str, Any], names: list[str],
                        w: np.ndarray, level: float, n_items: int) -> Estimate:
    """The default model average of :func:`compare_calibration`: the inversion of the
    weighted mixture of the models' tests."""
    weights = dict(zip(names, w.tolist(), strict=True))
    used = [n for n in names if weights[n] > 0]
    details = {"weights": weights, "average": "inversion",
               "value_by_model": {n: ests[n].value for n in names},
               "construction": "model-averaged tail area (Turek and Fletcher 2012) of the "
                               "per-model inverted tests"}
    statuses = ordered_statuses(s for n in used for s in ests[n].statuses)
    messages = join_messages("", *(f"{n}: {ests[n].message}" for n in used
                               if ests[n].status != "ok" and ests[n].message))
    missing = [n for n in used if tails[n] is None]
    if missing:
        return Estimate(name="NC-ECE", value=float("nan"), interval=(np.nan, np.nan),
                        level=level, kind="inversion", n=n_items, status="degenerate",
                        statuses=statuses, details=details,
                        message=join_messages(messages, "no inverted test under "
                                              f"{missing} (no sampling variation to invert)"
                                              "; no model average"),
                        estimand=_AVERAGED_ESTIMAND, estimator="median-unbiased")
    inv = mixture_inversion([tails[n] for n in used], np.array([weights[n] for n in used]))
    values = [ests[n].value for n in used]
    value = min(max(inv.estimate, min(values)), max(values))
    details.update(plugin=inv.plugin, p_value_zero=inv.p_value, median_unbiased=inv.estimate,
                   lower_is_zero=inv.lower_is_zero, n_sim=inv.n_sim)
    high, clip = clipped_upper(inv.high)   # as each row's
    details.update(clip)
    return Estimate(name="NC-ECE", value=value, interval=(min(inv.low, high), high),
                    level=level,
                    kind="inversion", method="model-averaged tail area", n=n_items,
                    n_boot=inv.n_sim, statuses=statuses,
                    status=statuses[0] if statuses else "ok", message=messages,
                    details=details, estimand=_AVERAGED_ESTIMAND,
                    estimator="median-unbiased")


_AVERAGED_ESTIMAND = ("the NC-ECE (population binned calibration error against the true "
                      "labels, bins held fixed) averaged over the annotator models with "
                      "their weights")


def _fit_classes(fits: Mapping[str, AnnotatorFit]) -> np.ndarray:
    """The fits' class order, which they must share (the predictions' columns follow it)."""
    orders = {name: np.asarray(fit.classes) for name, fit in fits.items()}
    first, *rest = orders.items()
    for name, order in rest:
        if order.tolist() != first[1].tolist():
            raise ValueError(f"fits list their classes in different orders ({first[0]!r}: "
                             f"{first[1].tolist()}, {name!r}: {order.tolist()}), so the "
                             "columns of the predictions have no one meaning; fit every "
                             "model on annotations with the same classes= order")
    return first[1]


def _mixture_kind(kind: str | None, n_classes: int) -> str | None:
    """The ECE kind of ``average='mixture'``: the credible NC-ECE of two classes is the
    positive-class one (for 1-D and (n, 2) predictions alike), so ``kind=None`` means
    'positive_class' there and another kind is refused (ValueError naming ``kind``)."""
    if n_classes != 2:
        return kind
    if kind is None:
        return "positive_class"
    if kind != "positive_class":
        raise ValueError(f"kind={kind!r}: average='mixture' mixes the credible NC-ECE, which "
                         "for two classes is the positive-class ECE; give "
                         "kind='positive_class' (or None), or use average='inversion' or "
                         "'target'")
    return kind


def _mixture(probs: Any, targets: dict[str, Any], names: list[str], w: np.ndarray,
             opts: dict[str, Any], n_items: int) -> Estimate:
    """The mixture estimand of :func:`compare_calibration`."""
    creds = {n: ece(probs, targets[n], interval="credible", **opts) for n in names}
    value = float(sum(wm * creds[n].value for wm, n in zip(w, names, strict=True)))
    lo, hi = mixture_interval([creds[n].replicates for n in names], w, opts["level"])
    status, message = PLUGIN_BIAS, (
        "the mixture of credible distributions of the plug-in inherits its upward bias near "
        "0 and under-covers there; average='inversion' uses the per-model table's "
        "estimator")
    statuses = [PLUGIN_BIAS, *(s for wm, n in zip(w, names, strict=True) if wm > 0
                               for s in creds[n].statuses)]
    if not np.isfinite(lo):
        status, message = "nonfinite", join_messages(
            message, "some channel draws of a weighted model cannot be inverted; no "
            "interval")
    return Estimate(name="NC-ECE", value=value, interval=(lo, hi), level=opts["level"],
                    kind="credible", method="credible-eti", n=n_items, status=status,
                    statuses=tuple(statuses), message=message,
                    details={"weights": dict(zip(names, w.tolist(), strict=True)),
                             "average": "mixture",
                             "plugin_by_model": {n: creds[n].value for n in names}},
                    estimand="weighted mixture of the models' posterior NC-ECE "
                    "distributions", estimator="plug-in")
