"""The Estimate type: a number with its interval, how it was made, and its per-bin table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Estimate"]


@dataclass(frozen=True, eq=False)
class Estimate:
    """A point estimate with an interval, returned by every metric.

    Parameters
    ----------
    name : str
        What was estimated, e.g. ``'ECE'``, ``'classwise ECE'``, ``'Brier'``.
    value : float
        The point estimate.
    interval : tuple of float or None
        ``(low, high)``; None when no interval was requested.
    level : float or None
        Nominal coverage of the interval, a fraction (0.9 means 90%).
    kind : str or None
        How uncertainty entered: ``'bootstrap'``, ``'wald'``, ``'credible'``, ``'bound'``.
    method : str or None
        How the interval was computed within its kind: ``'percentile'``, ``'basic'``,
        ``'bca'``, ``'wald'``, ``'profile'``, ...
    n : int
        Number of items (rows) the estimate is based on.
    n_boot : int or None
        Number of bootstrap replicates, for bootstrap intervals.
    bins : pandas.DataFrame or None
        Per-bin table (binned metrics): group, bin, lo, hi, count, mean_conf,
        mean_target, gap and per-bin interval columns ``low``/``high``.
    status : str
        ``'ok'`` or a short code saying what went wrong (e.g. ``'nonfinite'``).
    message : str
        Human-readable explanation of a non-ok status.
    details : mapping
        Extra components (per-class values, settings such as ``n_bins``).
    replicates : ndarray or None
        The bootstrap replicate values, kept for inspection.
    estimand : str
        The population quantity the value and interval are about (empty when the metric
        does not name one).
    estimator : str
        How ``value`` was computed from the sample, e.g. ``'plug-in'`` or
        ``'median-unbiased'`` (empty when there is only one way).
    """

    name: str
    value: float
    interval: tuple[float, float] | None = None
    level: float | None = None
    kind: str | None = None
    method: str | None = None
    n: int = 0
    n_boot: int | None = None
    bins: pd.DataFrame | None = field(default=None, repr=False)
    status: str = "ok"
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict, repr=False)
    replicates: np.ndarray | None = field(default=None, repr=False)
    estimand: str = ""
    estimator: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))
        if self.interval is not None:
            lo, hi = self.interval
            object.__setattr__(self, "interval", (float(lo), float(hi)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def low(self) -> float:
        """Lower end of the interval (NaN when there is none)."""
        return self.interval[0] if self.interval is not None else float("nan")

    @property
    def high(self) -> float:
        """Upper end of the interval (NaN when there is none)."""
        return self.interval[1] if self.interval is not None else float("nan")

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        text = f"{self.name} {self.value:.4f}"
        if self.interval is not None and self.level is not None:
            text += f" [{self.low:.4f}, {self.high:.4f}] {self.level * 100:g}%"
            if self.kind:
                text += f" {self.kind}"
            if self.method and self.method != self.kind:
                text += f" ({self.method})"
        if self.estimator and self.estimator != "plug-in":
            text += f", {self.estimator} estimate"
        if self.status != "ok":
            text += f" status={self.status!r}"
        return text

    __str__ = __repr__

    def to_frame(self) -> pd.DataFrame:
        """The per-bin table for binned metrics, otherwise a one-row summary."""
        if self.bins is not None:
            return self.bins.copy()
        return pd.DataFrame([{
            "name": self.name, "value": self.value, "low": self.low, "high": self.high,
            "level": self.level, "kind": self.kind, "method": self.method, "n": self.n,
            "status": self.status,
        }])

    def summary(self) -> pd.DataFrame:
        """A one-row table of the estimate (name, value, interval, level, method, n, status)."""
        return pd.DataFrame([{
            "name": self.name, "value": self.value, "low": self.low, "high": self.high,
            "level": self.level, "kind": self.kind, "method": self.method, "n": self.n,
            "n_boot": self.n_boot, "estimator": self.estimator, "status": self.status,
        }])
