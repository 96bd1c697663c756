"""Test metrics and the paired bootstrap over matched cells (LWCal protocol).

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels",
Eq. 7 and 8, on the *clean* test labels:

- ECE with 15 equal-width bins on the positive-class probability (Eq. 7):
  :func:`noisycal.metrics.ece` with ``n_bins=15`` and ``interval=None``, the plug-in
  estimator; bins are ``[k/15, (k+1)/15)`` with the last one closed (the library's
  convention), so an isotonic output such as 0.2 that falls on an edge goes to the bin
  above it;
- Brier and NLL (Eq. 8): :func:`noisycal.metrics.brier` and :func:`noisycal.metrics.nll`
  (plug-in means). The paper does not say how it clips the NLL; isotonic-type maps
  output exact 0s and 1s, whose NLL is infinite, so the predictions are clipped to
  ``[nll_clip, 1 - nll_clip]`` (default 1e-15, scikit-learn's classic ``log_loss``
  default) for the NLL only;
- AUC: ``sklearn.metrics.roc_auc_score`` (the library has no AUC; ties count 1/2);
- the class-conditional ECEs of Table IX (ours, the paper does not define them):
  ``ece_neg`` and ``ece_pos``, the same 15-bin ECE on the test items of each class.

:func:`paired_bootstrap` resamples matched cells with replacement, the same cells for both
methods, and reads a percentile interval off the mean difference
(:func:`noisycal.intervals.bootstrap.bootstrap`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._util.validation import check_choice, check_labels, check_real
from ..intervals.bootstrap import bootstrap
from ..intervals.estimate import Estimate
from ..metrics import brier, ece, nll
from ..metrics.scores import weighted_mean

__all__ = ["METRICS", "CELL_KEYS", "evaluate", "paired_bootstrap"]

#: Metrics of the results table (lower is better except AUC).
METRICS = ("ece", "brier", "nll", "auc")
#: Columns that identify a cell (the unit of the paired bootstrap).
CELL_KEYS = ("learner", "task", "seed", "mode", "rate")


def evaluate(p_hat: np.ndarray, y: np.ndarray, *, n_bins: int = 15,
             nll_clip: float = 1e-15) -> dict[str, float]:
    """ECE, Brier, NLL, AUC and the per-class ECEs of positive-class predictions.

    Parameters
    ----------
    p_hat : ndarray of shape (n,)
        Calibrated positive-class probabilities.
    y : ndarray of shape (n,)
        Clean 0/1 test labels (both classes present).
    n_bins : int, default=15
    nll_clip : float, default=1e-15
        Predictions are clipped to ``[nll_clip, 1 - nll_clip]`` for the NLL only.

    Returns
    -------
    dict
        ``ece``, ``brier``, ``nll``, ``auc``, ``ece_neg``, ``ece_pos``.
    """
    from sklearn.metrics import roc_auc_score

    y = check_labels(y, 2, "y")
    p = np.asarray(p_hat, dtype=np.float64)
    if p.shape != y.shape:
        raise ValueError(f"p_hat has shape {p.shape} but y has shape {y.shape}")
    if y.min() == y.max():
        raise ValueError("y must contain both classes (the AUC is undefined otherwise)")
    c = check_real(nll_clip, "nll_clip", minimum=0.0, maximum=0.5, strict=True)
    out = {"ece": float(ece(p, y, n_bins=n_bins, interval=None)),
           "brier": float(brier(p, y, interval=None)),
           "nll": float(nll(np.clip(p, c, 1.0 - c), y, interval=None)),
           "auc": float(roc_auc_score(y, p))}
    for k, name in ((0, "ece_neg"), (1, "ece_pos")):
        out[name] = float(ece(p[y == k], y[y == k], n_bins=n_bins, interval=None))
    return out


def paired_bootstrap(results: pd.DataFrame, method: str, baseline: str, metric: str, *,
                     match: tuple[str, ...] = CELL_KEYS, n_boot: int = 2000,
                     level: float = 0.95, seed: int = 0) -> Estimate:
    """Mean difference ``metric(method) - metric(baseline)`` over matched cells, with a
    paired percentile bootstrap interval.

    Each resample draws cells with replacement and uses the same cells for both methods
    (the differences are resampled), as in the paper's Table VI. Test items are not
    resampled.

    Parameters
    ----------
    results : pandas.DataFrame
        Tidy results: one row per (cell, method) with the ``match`` columns, ``method``
        and ``metric``.
    method, baseline : str
    metric : str
        A column of ``results``.
    match : tuple of str, default=CELL_KEYS
        Columns identifying a cell.
    n_boot : int, default=2000
    level : float, default=0.95
    seed : int, default=0

    Returns
    -------
    Estimate
        ``value`` the mean difference, ``interval`` its percentile interval, ``n`` the
        number of matched cells.

    Raises
    ------
    ValueError
        If a method is absent, a cell has one method but not the other, or a cell
        appears twice for a method.
    """
    if metric not in results.columns:
        raise ValueError(f"metric {metric!r} is not a column of results")
    missing = [c for c in (*match, "method") if c not in results.columns]
    if missing:
        raise ValueError(f"results lacks the columns {missing}")
    check_choice(method, "method", results["method"].unique())
    check_choice(baseline, "baseline", results["method"].unique())
    a = results[results["method"] == method].set_index(list(match))[metric]
    b = results[results["method"] == baseline].set_index(list(match))[metric]
    for s, who in ((a, method), (b, baseline)):
        if s.index.duplicated().any():
            raise ValueError(f"results has more than one row per cell for {who!r}")
    only = a.index.symmetric_difference(b.index)
    if len(only):
        raise ValueError(f"{len(only)} cell(s) have only one of {method!r} and {baseline!r}, "
                         f"e.g. {only[0]}; the bootstrap needs matched cells")
    d = (a - b.reindex(a.index)).to_numpy(dtype=np.float64)
    return bootstrap(weighted_mean, d, n_boot=n_boot, level=level, method="percentile",
                     seed=seed, name=f"{metric}: {method} - {baseline}")
