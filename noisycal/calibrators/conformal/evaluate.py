r"""Evaluation of prediction sets on labelled test rows: coverage and size with intervals.

Given fitted sets, test rows are independent draws, so the number of covered rows is
binomial with the conditional coverage :math:`P(Y \in C(X) \mid \text{calibration data})`
as its probability: :func:`evaluate_sets` gives that coverage with a Wilson score or
Clopper–Pearson interval, the mean set size with a Student t interval, the share of
empty sets, and the coverage of each true class (the class-conditional coverage that
Mondrian thresholds target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..._util.items import aligned_values, classes_of, item_ids_of
from ..._util.validation import check_choice
from ...intervals.estimate import Estimate
from .scores import hard_labels

__all__ = ["SetEvaluation", "evaluate_sets", "PROPORTION_INTERVALS"]

#: Interval rules of the binomial proportions (statsmodels ``proportion_confint`` names:
#: 'wilson' and 'beta', the Clopper–Pearson interval).
PROPORTION_INTERVALS = ("wilson", "clopper-pearson")


def _check_level(level: object) -> float:
    if isinstance(level, bool) or not isinstance(level, int | float | np.floating) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a fraction with 0 < level < 1 (0.9, not 90), got "
                         f"{level!r}")
    return float(level)


def _proportion(k: np.ndarray, n: np.ndarray, level: float, interval: str
                ) -> tuple[np.ndarray, np.ndarray]:
    from statsmodels.stats.proportion import proportion_confint

    method = "beta" if interval == "clopper-pearson" else "wilson"
    lo, hi = proportion_confint(k, np.maximum(n, 1), alpha=1.0 - level, method=method)
    bad = n == 0
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


@dataclass(frozen=True)
class SetEvaluation:
    """Coverage and size of prediction sets on labelled rows (:func:`evaluate_sets`).

    Attributes
    ----------
    coverage : Estimate
        Share of rows whose set holds the label, with a binomial interval.
    size : Estimate
        Mean number of classes per set, with a Student t interval.
    empty : Estimate
        Share of empty sets, with a binomial interval.
    per_class : pandas.DataFrame
        One row per true class: ``class`` (the target's class label: a Target's
        ``classes``, else the index 0..K-1), ``n``, ``coverage``, ``low``, ``high``,
        ``mean_size`` (NaN for a class without test rows).
    """

    coverage: Estimate
    size: Estimate
    empty: Estimate
    per_class: pd.DataFrame = field(repr=False)

    def summary(self) -> pd.DataFrame:
        """One row per estimate (coverage, mean size, empty share) with its interval."""
        return pd.concat([e.summary() for e in (self.coverage, self.size, self.empty)],
                         ignore_index=True)


def evaluate_sets(sets: object, target: object, *, level: float = 0.9,
                  interval: str = "wilson") -> SetEvaluation:
    r"""Coverage, mean size and empty share of prediction sets, with intervals.

    Parameters
    ----------
    sets : bool array-like of shape (n_items, n_classes)
        The sets, e.g. from ``SplitConformal.predict_sets``. A DataFrame's index must
        list the target's items in order (its index, or a Target's ``items``) and its
        columns are matched to the target's classes by label.
    target : labels of shape (n_items,), or one-hot rows / a hard Target
        A pandas index must hold one id per row, none repeated.
    level : float, default=0.9
        Level of every interval, a fraction.
    interval : {'wilson', 'clopper-pearson'}, default='wilson'
        Interval of the proportions (coverage, empty share, per-class coverage).

    Returns
    -------
    SetEvaluation

    Notes
    -----
    The estimand of ``coverage`` is the coverage of these sets on the population of
    test rows, :math:`P(Y \in C(X) \mid \text{calibration})`; its estimator is the share
    :math:`\hat c = m / n` of the n rows covered and the interval is the binomial one of
    m in n. The mean size :math:`\bar s` gets :math:`\bar s \pm t_{n-1} s_d / \sqrt n`
    (absent with fewer than two rows).

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal.calibrators.conformal.evaluate import evaluate_sets
    >>> sets = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [0, 1, 1]], dtype=bool)
    >>> ev = evaluate_sets(sets, [0, 1, 2, 2])
    >>> float(ev.coverage), float(ev.size), float(ev.empty)
    (0.75, 1.25, 0.25)
    """
    # a pandas index must list the target's items, a DataFrame's columns its classes
    labels = classes_of(target)
    S = np.asarray(aligned_values(sets, "sets", items=item_ids_of(target, "target"),
                                  classes=labels))
    if S.ndim != 2 or S.shape[0] < 1 or S.shape[1] < 2 or S.dtype != np.bool_:
        raise ValueError(f"sets must be a boolean (n_items, n_classes) mask with n_items >= 1 "
                         f"and n_classes >= 2, got dtype {S.dtype} and shape {S.shape}")
    level = _check_level(level)
    check_choice(interval, "interval", PROPORTION_INTERVALS)
    n, K = S.shape
    y = hard_labels(target, n, K)
    hit = S[np.arange(n), y]
    size = S.sum(axis=1).astype(np.float64)
    (c_lo, e_lo), (c_hi, e_hi) = _proportion(
        np.array([hit.sum(), np.sum(size == 0)]), np.array([n, n]), level, interval)
    common = dict(level=level, kind="binomial", method=interval, n=n, estimator="plug-in")
    coverage = Estimate("set coverage", float(hit.mean()), (c_lo, c_hi),
                        estimand="P(Y in C(X)) given the fitted sets", **common)
    empty = Estimate("empty set share", float(np.mean(size == 0)), (e_lo, e_hi),
                     estimand="P(C(X) is empty) given the fitted sets", **common)
    mean = float(size.mean())
    if n >= 2:
        from scipy import stats

        half = stats.t.ppf(0.5 + level / 2, n - 1) * float(size.std(ddof=1)) / math.sqrt(n)
        size_est = Estimate("mean set size", mean, (mean - half, mean + half), level=level,
                            kind="wald", method="t", n=n, estimator="plug-in",
                            estimand="E|C(X)| given the fitted sets")
    else:
        size_est = Estimate("mean set size", mean, None, n=n, status="too_few_rows",
                            message="a t interval needs at least two rows",
                            estimand="E|C(X)| given the fitted sets", estimator="plug-in")
    # the per-class rows carry a Target's class labels (a categorical target reaches
    # here only with the categories 0..K-1: hard_labels refuses any other)
    names = labels if labels is not None and len(labels) == K else np.arange(K)
    n_k = np.bincount(y, minlength=K)
    cov_k = np.bincount(y, weights=hit, minlength=K)
    size_k = np.bincount(y, weights=size, minlength=K)
    lo_k, hi_k = _proportion(cov_k, n_k, level, interval)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = pd.DataFrame({"class": names, "n": n_k,
                                  "coverage": cov_k / n_k, "low": lo_k, "high": hi_k,
                                  "mean_size": size_k / n_k})
    return SetEvaluation(coverage, size_est, empty, per_class)
