"""The comparison protocol of the ambiguous-ground-truth calibration paper.

The protocol of "Confidence Calibration under Ambiguous Ground Truth": fit every
post-hoc map to its target on calibration items, score it on test items."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import softmax

from .._util.types import ArrayLike, Seed
from .._util.validation import check_choice, check_int, check_logits, check_real, check_seed
from ..calibrators import (
    AdaptiveTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)
from ..metrics import brier, nll, true_label_ece
from ..targets.target import Target, soft
from ._targets import LS_RULES, label_smoothed, mcts, oracle, voted_from

__all__ = ["METHODS", "compare_calibrators", "evaluate_predictions"]

#: Rows :func:`compare_calibrators` can produce: the map and the target it is fitted to
#: ('voted', 'soft', 'mcts', a label-smoothing rule, 'test soft' or 'truth').
METHODS = {
    "Uncalibrated": (None, None),
    "TS": ("temperature", "voted"),
    "Platt": ("platt", "voted"),
    "Dirichlet-Hard": ("matrix", "voted"),
    "ATS": ("adaptive", "voted"),
    "HB": ("histogram", "voted"),
    "SLTS": ("temperature", "soft"),
    "MCTS": ("temperature", "mcts"),
    "VS": ("vector", "soft"),
    "SoftPlatt": ("platt", "soft"),
    "Dirichlet-Soft": ("matrix", "soft"),
    "HB-Soft": ("histogram", "soft"),
    "IR-Soft": ("isotonic", "soft"),
    "LS-TS": ("temperature", "global"),
    "Fixed-LS": ("temperature", "fixed"),
    "Ent-LS": ("temperature", "entropy"),
    "C-LS": ("temperature", "classwise"),
    "Oracle TS": ("temperature", "test soft"),
    "Oracle": ("temperature", "truth"),
}

#: Rows fitted by a top-label map (a new confidence for the predicted class).
TOP_LABEL_KINDS = ("histogram", "isotonic")
#: How :func:`compare_calibrators` picks the scored class of the top-label maps.
PREDICTED_CLASSES = ("uncalibrated", "recalibrated")

#: The metric columns of the table (fractions, not percent).
METRIC_COLUMNS = ("ece_true_mc", "ece_true_expected", "aece_true_mc", "cwece_true_mc",
                  "ece_voted", "brier_expected", "brier_soft", "nll")


def evaluate_predictions(probs: ArrayLike, target: object, *, n_bins: int = 15,
                         n_draws: int = 100, seed: Seed = 0, interval: str | None = None,
                         level: float = 0.9, predicted: ArrayLike | None = None,
                         draws: ArrayLike | None = None) -> dict[str, float]:
    """The paper's metrics of one prediction matrix against annotator distributions.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_classes)
        Calibrated probabilities of the test items.
    target : Target or array-like of shape (n_items, n_classes)
        Their annotator distributions.
    n_bins : int, default=15
    n_draws : int, default=100
        Label draws of the Monte-Carlo true-label ECEs.
    seed : int or jax key, default=0
        Seeds the draws (use one seed for every method: common random numbers).
    predicted : array-like of shape (n_items,), optional
        The class the top-label metrics (``ece_true_*``, ``aece_true_mc``,
        ``ece_voted``) score for each item, with confidence ``probs[i, predicted[i]]``;
        default ``argmax probs``. A top-label map (HB, HB-Soft, IR-Soft) keeps the
        uncalibrated predicted class (``predicted=`` of :func:`noisycal.true_label_ece`).
    draws : array-like of shape (S, n_items), optional
        Given label draws (class indices) for the Monte-Carlo ECEs instead of seeded
        ones; ``n_draws`` is then ignored (``draws=`` of :func:`noisycal.true_label_ece`).
    interval : str, optional
        When given, the within-split interval of the expected-form true-label ECE
        (``interval=`` of :func:`noisycal.true_label_ece`, e.g. 'auto' for its default
        inverted interval or 'bootstrap'), at ``level``, as two more entries.
    level : float, default=0.9

    Returns
    -------
    dict of str to float
        ``ece_true_mc``, ``ece_true_expected`` (:func:`noisycal.true_label_ece`, top-label,
        equal-width bins), ``aece_true_mc`` (equal-mass bins), ``cwece_true_mc``
        (classwise), ``ece_voted`` (the plug-in ECE against the voted labels, ties to
        the lowest class; equal to :func:`noisycal.ece`'s), ``brier_expected`` and ``brier_soft``
        (:func:`noisycal.brier`, ``variant='expected'`` and ``'plain'``) and ``nll`` (the
        cross-entropy against the distributions), plug-in values; with ``interval``
        also ``ece_true_expected_lo`` and ``ece_true_expected_hi``.
    """
    P = np.asarray(probs, dtype=np.float64)
    mc = dict(form="mc", n_draws=n_draws, draws=draws, seed=seed, n_bins=n_bins,
              interval=None)
    top = dict(predicted=predicted)
    extra = {}
    if interval is not None:  # the point values stay the plug-in ones
        lo, hi = true_label_ece(P, target, form="expected", n_bins=n_bins, **top,
                                interval=interval, level=level, seed=seed).interval
        extra = {"ece_true_expected_lo": float(lo), "ece_true_expected_hi": float(hi)}
    return {
        "ece_true_mc": float(true_label_ece(P, target, **mc, **top)),
        "ece_true_expected": float(true_label_ece(P, target, form="expected", **top,
                                                  n_bins=n_bins, interval=None)),
        **extra,
        "aece_true_mc": float(true_label_ece(P, target, strategy="quantile", **mc, **top)),
        "cwece_true_mc": float(true_label_ece(P, target, kind="classwise", **mc)),
        # the plug-in ECE against the one-hot voted labels (equal to nc.ece's), with the
        # same scored class as the other top-label columns
        "ece_voted": float(true_label_ece(P, voted_from(target), form="expected", **top,
                                          n_bins=n_bins, interval=None)),
        "brier_expected": float(brier(P, target, variant="expected", interval=None)),
        "brier_soft": float(brier(P, target, interval=None)),
        "nll": float(nll(P, target, interval=None)),
    }


def _calibrator(kind: str, reg_lambda: float, max_iter: int, n_bins: int) -> Any:
    return {"temperature": lambda: TemperatureScaling(),
            "platt": lambda: PlattScaling(max_iter=max_iter),
            "vector": lambda: VectorScaling(max_iter=max_iter),
            "matrix": lambda: MatrixScaling(reg_lambda=reg_lambda, max_iter=max_iter),
            "adaptive": lambda: AdaptiveTemperatureScaling(max_iter=max_iter),
            "histogram": lambda: HistogramBinning(n_bins=n_bins),
            "isotonic": lambda: IsotonicCalibration(),
            }[kind]()


def _soft_rows(target: object, name: str, n: int, K: int) -> Target:
    if isinstance(target, Target):
        arr = target.values
    else:
        arr = np.asarray(target, dtype=np.float64)
    if arr.shape != (n, K):
        raise ValueError(f"{name} must have shape ({n}, {K}) to match the logits, got "
                         f"{arr.shape}")
    return soft(distribution=arr)


def compare_calibrators(*, logits_cal: ArrayLike, target_cal: object, logits_test: ArrayLike,
                        target_test: object, methods: Sequence[str] | None = None,
                        true_cal: ArrayLike | None = None, n_samples: int = 1,
                        reg_lambda: float = 1e-3, max_iter: int = 10000, n_bins: int = 15,
                        n_draws: int = 100, seed: Seed = 0, interval: str | None = None,
                        level: float = 0.9, predicted_class: str = "uncalibrated",
                        draws: ArrayLike | None = None,
                        mcts_labels: ArrayLike | None = None) -> Any:
    """Fit each method on calibration items and score it on test items (one table row each).

    The protocol of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous
    Ground Truth" (Section 7): every map acts on the logits. Voted-label rows fit to
    ``argmax`` of the calibration distributions (ties to the lowest class); soft rows to
    the distributions themselves (SoftPlatt, VS and Dirichlet-Soft are
    ``PlattScaling``, ``VectorScaling`` and ``MatrixScaling`` with a soft target; the
    paper's Dirichlet maps act on logits, so they are ``MatrixScaling`` with ODIR);
    the single-temperature rows are ``TemperatureScaling`` fitted to the targets of
    :mod:`noisycal.ambiguity`. ATS is ``AdaptiveTemperatureScaling`` on voted labels;
    HB and HB-Soft are the top-label ``HistogramBinning`` with ``n_bins`` bins (the
    paper's B = 15) on voted labels and on the distributions; IR-Soft is the top-label
    ``IsotonicCalibration`` on the distributions. These three top-label maps recalibrate
    the confidence of the uncalibrated predicted class ``c = argmax p`` and rebuild the
    other classes proportionally; the paper keeps ``c`` as the predicted class, so by
    default (``predicted_class``) their top-label metrics score ``c`` with the new
    confidence, even where the rebuilt vector's largest entry is another class. MCTS
    draws ``n_samples`` labels per item from the distributions with replacement.
    'Oracle TS' is SLTS fitted on the *test* items (the
    paper's reference); 'Oracle' fits TS to ``true_cal``, the true distributions of the
    calibration items (simulations only).

    Parameters
    ----------
    logits_cal, logits_test : array-like of shape (n, n_classes)
        Uncalibrated logits of the calibration and test items.
    target_cal, target_test : Target or array-like of shape (n, n_classes)
        Their annotator distributions (rows on the simplex).
    methods : sequence of str, optional
        Rows, from :data:`METHODS`; default all (without 'Oracle' when ``true_cal`` is
        None).
    true_cal : array-like of shape (n_cal, n_classes), optional
        True distributions of the calibration items, for 'Oracle'.
    n_samples : int, default=1
        S of MCTS.
    reg_lambda : float, default=1e-3
        ODIR weight of the Dirichlet rows (the paper's 1e-3, also on the intercepts).
    max_iter : int, default=10000
        L-BFGS-B iteration limit of the vector, Platt and Dirichlet maps (their default
        2000 stops short of convergence on some real logits).
    n_bins, n_draws : int, default=15, 100
        Of the metrics (:func:`evaluate_predictions`).
    seed : int or jax key, default=0
        Seeds MCTS and the metrics' label draws.
    interval : str, optional
        Also the within-split interval of the expected-form true-label ECE of every row
        (columns ``ece_true_expected_lo``/``_hi``; :func:`evaluate_predictions`).
    level : float, default=0.9
    predicted_class : {'uncalibrated', 'recalibrated'}, default='uncalibrated'
        The class the top-label metrics score for the top-label maps (HB, HB-Soft,
        IR-Soft): the uncalibrated predicted class ``argmax softmax(logits_test)``, whose
        confidence the map recalibrated (the paper's procedure), or ``argmax`` of the
        rebuilt vector. Other rows always score the argmax of their calibrated vector
        (for TS-family rows the two coincide).
    draws : array-like of shape (S, n_test), optional
        Given label draws of the test items (class indices) for the Monte-Carlo metrics
        of every row, instead of draws seeded by ``seed`` (``draws=`` of
        :func:`noisycal.true_label_ece`); ``n_draws`` is then ignored.
    mcts_labels : array-like of shape (n_cal, S), optional
        Given sampled annotations of the calibration items for MCTS (class indices,
        S per item, e.g. the stored single annotations the paper used): MCTS is then
        fitted to their shares and ``n_samples`` is ignored.

    Returns
    -------
    pandas.DataFrame
        One row per method: ``method``, ``fitted_to``, ``T`` (the temperature of the
        single-temperature rows, the mean per-item temperature on the test items for
        ATS, else NaN), the metric columns of
        :func:`evaluate_predictions`, and the calibrator's ``status`` and ``message``
        (a fit whose status is not 'ok' has also warned).
    """
    import pandas as pd

    Zc, Zt = check_logits(logits_cal, "logits_cal"), check_logits(logits_test, "logits_test")
    if Zc.ndim != 2 or Zt.ndim != 2 or Zc.shape[1] != Zt.shape[1]:
        raise ValueError("logits_cal and logits_test must be (n, n_classes) matrices with "
                         f"the same number of classes, got {Zc.shape} and {Zt.shape}")
    K = Zc.shape[1]
    Sc = _soft_rows(target_cal, "target_cal", Zc.shape[0], K)
    St = _soft_rows(target_test, "target_test", Zt.shape[0], K)
    default = [m for m in METHODS if m != "Oracle" or true_cal is not None]
    methods = list(default if methods is None else methods)
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"methods: unknown method {m!r}; choose from {list(METHODS)}")
    if "Oracle" in methods and true_cal is None:
        raise ValueError("method 'Oracle' needs true_cal= (the true distributions)")
    reg_lambda = check_real(reg_lambda, "reg_lambda", minimum=0.0)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    check_seed(seed)
    predicted_class = check_choice(predicted_class, "predicted_class", PREDICTED_CLASSES)
    if draws is not None:  # checked once here, so a bad array fails before any fit
        true_label_ece(softmax(Zt, axis=1), St, draws=draws, n_bins=n_bins, interval=None)
    Vc = voted_from(Sc)
    if mcts_labels is not None:  # the shares of the given labels: all S "stored" ratings
        lab = np.asarray(mcts_labels)
        if lab.ndim != 2 or lab.shape[0] != Zc.shape[0] or lab.shape[1] < 1:
            raise ValueError(f"mcts_labels must have shape ({Zc.shape[0]}, S) with S >= 1, "
                             f"got {lab.shape}")
        if not np.issubdtype(lab.dtype, np.integer) or lab.min() < 0 or lab.max() >= K:
            raise ValueError(f"mcts_labels must hold class indices 0..{K - 1}")
        n_samples = lab.shape[1]
        given = np.stack([np.bincount(r, minlength=K) for r in lab])
    targets: dict[str, Callable[[], object]] = {
        "voted": lambda: Vc, "soft": lambda: Sc,
        "mcts": lambda: mcts(distribution=Sc.values, n_samples=n_samples, seed=seed)
        if mcts_labels is None else mcts(counts=given, n_samples=n_samples, replace=False),
        "truth": lambda: oracle(true_cal), "test soft": lambda: St}
    for rule in LS_RULES:
        targets[rule] = lambda rule=rule: label_smoothed(logits=Zc, target=Vc, rule=rule)
    rows = []
    for m in methods:
        kind, fitted_to = METHODS[m]
        row: dict[str, Any] = {"method": m, "fitted_to": fitted_to, "T": np.nan,
                               "status": "ok", "message": ""}
        keep = kind in TOP_LABEL_KINDS and predicted_class == "uncalibrated"
        # the maps' own predicted class: argmax of softmax(logits), lowest index on ties
        predicted = np.argmax(softmax(Zt, axis=1), axis=1) if keep else None
        if kind is None:
            P = softmax(Zt, axis=1)
        else:
            cal = _calibrator(kind, reg_lambda, max_iter, n_bins)
            on_test = fitted_to == "test soft"
            cal.fit(logits=Zt if on_test else Zc, target=targets[fitted_to]())
            P = cal.predict_proba(logits=Zt)
            temp = getattr(cal, "temperature_", np.nan)
            if kind == "adaptive":  # the paper's ATS "T": the mean T_i on the test items
                temp = float(np.mean(cal.predict_temperature(logits=Zt)))
            row.update(status=cal.status_, message=cal.message_, T=temp)
        row.update(evaluate_predictions(P, St, n_bins=n_bins, n_draws=n_draws, seed=seed,
                                        interval=interval, level=level,
                                        predicted=predicted, draws=draws))
        rows.append(row)
    bounds = [] if interval is None else ["ece_true_expected_lo", "ece_true_expected_hi"]
    columns = ["method", "fitted_to", "T", *METRIC_COLUMNS, *bounds, "status", "message"]
    return pd.DataFrame(rows, columns=columns)
