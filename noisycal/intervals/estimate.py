"""The Estimate type: a number with its interval, how it was made, and its per-bin table."""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._util.html import estimate_html, plugin_value
from .._util.statuses import join_messages, ordered_statuses
from ..exceptions import NumericalWarning

__all__ = ["Estimate", "outside_interval", "OUTSIDE_RTOL", "OUTSIDE_ATOL"]

#: An estimate counts as inside its interval when it is within
#: ``OUTSIDE_ATOL + OUTSIDE_RTOL * max(|value|, |low|, |high|)`` of it (rounding).
OUTSIDE_RTOL = 1e-9
OUTSIDE_ATOL = 1e-12


def outside_interval(value: float, interval: tuple[float, float] | None) -> float:
    """How far ``value`` lies outside ``interval``: 0 inside, NaN when either is not finite.

    Signed: negative below the interval, positive above it. An end equal to the value up
    to rounding (``OUTSIDE_ATOL + OUTSIDE_RTOL * max(|value|, |low|, |high|)``) counts as
    inside.

    Parameters
    ----------
    value : float
    interval : tuple of float or None
        ``(low, high)``.

    Returns
    -------
    float
    """
    if interval is None:
        return float("nan")
    lo, hi = (float(x) for x in interval)
    if not (math.isfinite(value) and math.isfinite(lo) and math.isfinite(hi)):
        return float("nan")
    tol = OUTSIDE_ATOL + OUTSIDE_RTOL * max(abs(value), abs(lo), abs(hi))
    if value < lo - tol:
        return value - lo
    if value > hi + tol:
        return value - hi
    return 0.0


def _outside_message(name: str, value: float, lo: float, hi: float, distance: float,
                     kind: str | None, method: str | None) -> str:
    how = " ".join(x for x in (kind, f"({method})" if method and method != kind else "")
                   if x) or "its"
    where = "below" if distance < 0 else "above"
    text = (f"{name}: the {how} interval [{lo:.4g}, {hi:.4g}] does not contain the estimate "
            f"{value:.4g}, which lies {abs(distance):.3g} {where} it")
    if kind == "bootstrap":
        return text + (": the replicates are shifted away from the estimate, as for a "
                       "statistic biased near a boundary (an absolute gap near 0 grows in "
                       "every resample) or with a skewed replicate distribution, so the "
                       "interval is not a reliable statement about this estimate")
    if kind == "inversion":
        return text + (": the plug-in is biased upward (most where the error is near 0) "
                       "and the inverted interval corrects for that bias; the "
                       "median-unbiased estimate lies inside it by construction")
    return text + (": the interval and the point estimate come from different "
                   "constructions and disagree here; read the interval as a statement "
                   "about the estimand, not as a band around this estimate")


def _user_stacklevel() -> int:
    """The stacklevel of a warning from ``__post_init__`` that points past noisycal and the
    dataclass machinery (the generated ``__init__``, ``dataclasses.replace``)."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith("<") or os.path.abspath(name).startswith(pkg)
                or os.path.basename(name) == "dataclasses.py"):
            break
        frame, level = frame.f_back, level + 1
    return level


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
        ``'ok'`` or a short code saying what went wrong (e.g. ``'nonfinite'``): the most
        severe of ``statuses``. An Estimate whose value lies outside its own interval
        (beyond rounding, :func:`outside_interval`) gets ``'estimate_outside_interval'``
        in ``statuses`` and a message saying by how much; when it is the only status, it
        is ``status`` too and a :class:`~noisycal.NumericalWarning` is raised.
    message : str
        Human-readable explanation of the non-ok statuses, the most severe first.
    details : mapping
        Extra components (per-class values, settings such as ``n_bins``).
    replicates : ndarray or None
        The bootstrap replicate values, kept for inspection.
    estimand : str
        The population quantity the value and interval are about, in words.
    estimator : str
        How ``value`` was computed from the sample, e.g. ``'plug-in'``,
        ``'median-unbiased'`` or ``'MLE (GLM)'``.
    statuses : tuple of str
        Every status that applies, most severe first (the ranking
        :data:`noisycal._util.statuses.SEVERITY`), without repeats: ``('ok',)`` when
        none does, so ``status == statuses[0]`` always. Given statuses are merged with
        ``status`` (and an estimate outside its interval), so
        ``dataclasses.replace(est, status=...)`` keeps the ones already there.

    Examples
    --------
    >>> from noisycal.intervals import Estimate
    >>> Estimate("ECE", 0.02, (0.01, 0.04), 0.9, "bootstrap", n=100).statuses
    ('ok',)
    >>> est = Estimate("ECE", 0.05, (0.01, 0.04), 0.9, "bootstrap", n=100,
    ...                status="target_not_converged", message="the target is not reliable")
    >>> est.status
    'target_not_converged'
    >>> est.statuses
    ('target_not_converged', 'estimate_outside_interval')
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
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))
        if self.interval is not None:
            lo, hi = self.interval
            object.__setattr__(self, "interval", (float(lo), float(hi)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        given = (str(self.status), *self.statuses)
        distance = outside_interval(self.value, self.interval)
        outside = distance != 0.0 and not math.isnan(distance)
        outside_status = "estimate_outside_interval"
        if outside and outside_status not in given:
            message = _outside_message(self.name, self.value, *self.interval, distance,
                                       self.kind, self.method)
            object.__setattr__(self, "message", join_messages(self.message, message))
            if ordered_statuses(given) == ("ok",):  # the only status: warn (failures did)
                warnings.warn(message, NumericalWarning, stacklevel=_user_stacklevel())
            given += (outside_status,)
        statuses = ordered_statuses(given)
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])

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
        plugin = plugin_value(self)  # the median-unbiased value is shown with its plug-in
        if plugin is not None:
            text += f" (plug-in {plugin:.4f})"
        if self.interval is not None and self.level is not None:
            text += f" [{self.low:.4f}, {self.high:.4f}] {self.level * 100:g}%"
            if self.kind:
                text += f" {self.kind}"
            if self.method and self.method != self.kind:
                text += f" ({self.method})"
            channels = self.details.get("channel_error", {})
            if self.details.get("refit_channels"):
                text += ", channels refitted"
            elif isinstance(channels, Mapping) and channels.get("method", "").startswith(
                    "delta"):
                text += ", channel error carried"
        if self.estimator and self.estimator != "plug-in":
            text += f", {self.estimator} estimate"
        if len(self.statuses) > 1:
            text += f" statuses={self.statuses!r}"
        elif self.status != "ok":
            text += f" status={self.status!r}"
        return text

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """HTML view for notebooks: value, plug-in, interval, estimand, status, bins."""
        return estimate_html(self)

    def to_frame(self) -> pd.DataFrame:
        """The per-bin table for binned metrics, otherwise a one-row summary."""
        if self.bins is not None:
            return self.bins.copy()
        return pd.DataFrame([{
            "name": self.name, "value": self.value, "low": self.low, "high": self.high,
            "level": self.level, "kind": self.kind, "method": self.method, "n": self.n,
            "status": self.status, "statuses": ", ".join(self.statuses),
        }])

    def summary(self) -> pd.DataFrame:
        """A one-row table of the estimate (name, value, interval, level, method, n, status
        and every status that applies, joined by ``', '``)."""
        return pd.DataFrame([{
            "name": self.name, "value": self.value, "low": self.low, "high": self.high,
            "level": self.level, "kind": self.kind, "method": self.method, "n": self.n,
            "n_boot": self.n_boot, "estimator": self.estimator, "status": self.status,
            "statuses": ", ".join(self.statuses),
        }])
