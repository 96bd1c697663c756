"""A test of the null hypothesis that the predictions are calibrated against the target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._util.statuses import ordered_statuses
from .._util.types import ArrayLike, Seed
from .._util.validation import check_choice, check_int, check_seed
from ..intervals.bootstrap import cluster_codes
from ..intervals.inversion import gaussian_null, norm_of_means, upper_p_value
from .binned.bins import BIN_STRATEGIES, group_scores, make_binned
from .binned.form import binned_linear_form, consistency_null, one_hot_target
from .ece import _resolve_kind as resolve_kind
from .ece import check_binning, resolve_inputs, with_target_status
from .inputs import check_covariance_memory

__all__ = ["CalibrationTest", "calibration_test", "TEST_METHODS", "MIN_TEST_ITEMS"]

#: Ways :func:`calibration_test` obtains the null distribution.
TEST_METHODS = ("auto", "consistency", "gaussian")

#: Fewest items (or clusters) for which :func:`calibration_test` reports status 'ok'.
MIN_TEST_ITEMS = 20


@dataclass(frozen=True)
class CalibrationTest:
    """Result of :func:`calibration_test`.

    Parameters
    ----------
    statistic : float
        The plug-in binned ECE (L1 or L2) of the sample.
    p_value : float
        ``(1 + #{null draws >= statistic}) / (1 + n_boot)``.
    method : str
        'consistency' or 'gaussian'.
    n : int
        Number of items.
    n_boot : int
        Number of null draws.
    null_quantiles : mapping
        The 0.5, 0.9, 0.95 and 0.99 quantiles of the null distribution of the statistic.
    status, message : str
        'ok', or what went wrong: 'too_few_items' (fewer than ``MIN_TEST_ITEMS``
        items or clusters), or a status carried from the target (``'target_<s>'``,
        which outranks the test's own): the first of ``statuses``.
    details : mapping
        Settings (kind, n_bins, norm, strategy, target_kind).
    statuses : tuple of str
        Every status that applies, most severe first, without repeats
        (:data:`noisycal._util.statuses.SEVERITY`); ``('ok',)`` when none does, so
        ``status == statuses[0]`` always.
    """

    statistic: float
    p_value: float
    method: str
    n: int
    n_boot: int
    null_quantiles: Mapping[str, float] = field(default_factory=dict)
    status: str = "ok"
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict, repr=False)
    statuses: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])
        object.__setattr__(self, "null_quantiles", MappingProxyType(dict(self.null_quantiles)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def __repr__(self) -> str:
        text = (f"calibration test ({self.method}): statistic {self.statistic:.4f}, "
                f"p = {self.p_value:.4g}, n = {self.n}")
        if len(self.statuses) > 1:
            return text + f", statuses={self.statuses!r}"
        return text + (f", status={self.status!r}" if self.status != "ok" else "")

    __str__ = __repr__


def calibration_test(probs: ArrayLike | None = None, target: object = None, *,
                     logits: ArrayLike | None = None, classes: ArrayLike | None = None,
                     items: ArrayLike | None = None, n_bins: int = 15,
                     kind: str | None = None, strategy: str = "uniform", norm: str = "l1",
                     method: str = "auto", n_boot: int = 2000, seed: Seed = 0,
                     cluster: ArrayLike | None = None) -> CalibrationTest:
    """Test the null hypothesis that the predictions are calibrated against the target.

    The statistic is the plug-in binned ECE (bins held fixed). Its null distribution comes
    from one of:

    - ``'consistency'``: consistency resampling (Bröcker & Smith 2007, "Increasing the
      reliability of reliability diagrams"): labels are redrawn from the predicted
      probabilities and the statistic recomputed. Exact up to Monte-Carlo error for
      one-hot (hard or voted) targets, which it requires.
    - ``'gaussian'``: the bin means drawn from a normal with mean 0 and their estimated
      covariance (the null of :func:`noisycal.intervals.inversion.invert_norm`, whose
      ``p_value`` it equals). Asymptotic; works for any target (soft, corrected,
      posterior), and with ``cluster=``.

    Parameters
    ----------
    probs, target, logits, classes, items
        As in :func:`noisycal.ece`.
    n_bins : int, default=15
    kind : {'top_label', 'classwise', 'positive_class'}, optional
        Default: 'positive_class' for 1-D binary input, else 'top_label'.
    strategy : {'uniform', 'quantile'}, default='uniform'
    norm : {'l1', 'l2'}, default='l1'
    method : {'auto', 'consistency', 'gaussian'}, default='auto'
        'auto': 'consistency' for one-hot targets without clusters, else 'gaussian'.
    n_boot : int, default=2000
        Number of null draws (at least 100).
    seed : int or jax key, default=0
    cluster : array-like of shape (n_items,), optional
        Cluster ids (the 'gaussian' null then uses the cluster-robust covariance).

    Returns
    -------
    CalibrationTest
        Its status is 'too_few_items' with fewer than ``MIN_TEST_ITEMS`` (20) items or
        clusters: a handful of items, each alone in its bin, gives a p-value that
        reflects one or two predictions (the Gaussian null is not even approximately
        right), not the calibration of a classifier. It carries a target built from a
        fit whose status is not 'ok'.

    Examples
    --------
    >>> import noisycal as nc
    >>> sim = nc.simulate.binary_scores(2000, slope=0.6, seed=1)   # overconfident
    >>> nc.calibration_test(sim.p, sim.y, n_bins=10).p_value < 0.01
    True
    """
    check_choice(method, "method", TEST_METHODS)
    check_choice(norm, "norm", ("l1", "l2"))
    check_choice(strategy, "strategy", BIN_STRATEGIES)
    n_boot = check_int(n_boot, "n_boot", minimum=100)
    check_seed(seed)
    P, _, T, binary = resolve_inputs(probs, target, logits, classes=classes, items=items)
    n_bins = check_binning(n_bins, P.shape[0], strategy, norm, False)
    kind = resolve_kind(kind, binary, P.shape[1])
    check_covariance_memory(kind, P.shape[1], n_bins)
    conf, tgt, _ = group_scores(P, T, kind)
    binned = make_binned(conf, tgt, n_bins, strategy, with_sq=False)
    one_hot = one_hot_target(binned)
    if method == "auto":
        method = "consistency" if one_hot and cluster is None else "gaussian"
    if method == "consistency" and (not one_hot or cluster is not None):
        raise ValueError("method='consistency' redraws labels from the predictions: it needs "
                         "a one-hot (hard or voted) target and no cluster; use "
                         "method='gaussian' for soft, corrected or clustered data")
    codes, n_clusters = cluster_codes(cluster, P.shape[0])
    mean, cov, weights = binned_linear_form(binned, norm, codes, n_clusters)
    stat = float(norm_of_means(mean, weights, norm))
    if method == "consistency":
        null = consistency_null(binned, weights, norm, n_boot, seed)
    else:
        null = gaussian_null(cov, weights, norm, n_boot, seed)
    p = upper_p_value(null, stat)
    qs = {f"{q:g}": float(np.quantile(null, q)) for q in (0.5, 0.9, 0.95, 0.99)}
    status, message = "ok", ""
    if n_clusters < MIN_TEST_ITEMS:
        unit = "clusters" if codes is not None else "items"
        status, message = "too_few_items", (
            f"only {n_clusters} {unit} (at least {MIN_TEST_ITEMS} are needed): the "
            f"p-value {p:.3g} reflects a few single predictions, not the calibration of "
            "the classifier")
    res = CalibrationTest(stat, p, method, P.shape[0], n_boot, qs, status, message, details={
        "kind": kind, "n_bins": n_bins, "norm": norm, "strategy": strategy})
    return with_target_status(res, target, probs, logits)
