"""Interval kinds as option objects: each holds and checks the settings of one kind.

A metric's ``interval=`` takes one of these objects, or a string that names one with its
defaults (``interval="bootstrap"`` is ``Bootstrap()``). An option belongs to the object
that uses it, so a setting of one interval kind cannot reach another: the bootstrap's
``n_boot`` lives in :class:`Bootstrap`, the bound's ``channel_radius`` in :class:`Bound`.
Each object validates its own fields when it is made (a ``ValueError`` naming the field);
a metric that does not offer a kind refuses it by name (:func:`as_interval`).

The kinds:

- :class:`Inversion`: invert a parametric bootstrap test of each candidate value (the
  default of the binned ECE; it covers near perfect calibration too).
- :class:`Bootstrap`: the item (or cluster) bootstrap of the plug-in, read off by
  percentile, basic or BCa.
- :class:`Bound`: the finite-sample bound of the noise-corrected ECE ("Noisy-Label
  Calibration with Multiple Unreliable Labels", Theorem 1 and Proposition 1).
- :class:`Refit`: for a noise-corrected target whose channels were fitted, refit the
  channels in every bootstrap replicate.
- :class:`Credible`: for a noise-corrected target built from a NUTS fit, the posterior of
  the plug-in over channel draws and a Bayesian bootstrap of the items.
- :class:`Simultaneous`: the simultaneous interval of the maximum calibration error.
- :class:`Wald`: the normal interval, estimate plus or minus z standard errors (the
  proper scores, and the calibration slope and intercept with their GLM covariance).

A metric that does not use a field of an offered kind (``rebin`` of a metric without
bins, say) refuses it by name too, when the field is not at its default
(:func:`refuse_fields`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from .._util.validation import check_array, check_batch_size, check_choice, check_int
from .bootstrap import BOOTSTRAP_METHODS

__all__ = ["Inversion", "Bootstrap", "Bound", "Refit", "Credible", "Simultaneous", "Wald",
           "IntervalOption", "as_interval", "refuse_fields", "SHORTHANDS",
           "BOOTSTRAP_SCHEMES", "BOUND_MODES", "BOUND_KINDS", "REFIT_METHODS",
           "WALD_COV_TYPES", "check_true_channels"]

#: How :class:`Bootstrap` draws its replicates (see its docstring).
BOOTSTRAP_SCHEMES = ("auto", "exact", "binned", "poisson")
#: How the channel term enters :class:`Bound`.
BOUND_MODES = ("binned_only", "oracle", "radius")
#: The concentration inequality of :class:`Bound`'s sampling radius.
BOUND_KINDS = ("auto", "bernstein", "hoeffding")
#: How :class:`Refit` reads its replicates.
REFIT_METHODS = ("inversion", "percentile")
#: The covariance of a GLM fit's :class:`Wald` interval.
WALD_COV_TYPES = ("auto", "nonrobust", "HC0")


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_true_channels(true_channels: object) -> np.ndarray:
    """(J, K, K) confusion matrices from a pair ``(a, b)`` of binary rates or a 3-D array.

    Parameters
    ----------
    true_channels : (a, b) or array-like of shape (J, K, K)
        Binary channels as two rate arrays (``a = P(A = 1 | Y = 0)``, ``b = P(A = 1 |
        Y = 1)``), or confusion matrices whose rows are probability vectors.

    Returns
    -------
    ndarray of shape (J, K, K)

    Raises
    ------
    ValueError
        Naming ``true_channels``.
    """
    msg = "true_channels must be a pair (a, b) of rates or (J, K, K) confusion matrices, got "
    if isinstance(true_channels, str | bytes) or not hasattr(true_channels, "__len__") \
            or (np.ndim(true_channels) != 3 and len(true_channels) != 2):
        raise ValueError(msg + repr(true_channels))
    if np.ndim(true_channels) == 3:
        C = check_array(true_channels, "true_channels", ndim=3)
        if C.shape[1] != C.shape[2] or C.shape[1] < 2 or np.any(C < 0) \
                or np.any(np.abs(C.sum(axis=2) - 1) > 1e-6):
            raise ValueError(msg + f"an array of shape {C.shape} whose rows are not all "
                             "probability vectors")
        return C
    a, b = (check_array(x, "true_channels", ndim=1) for x in true_channels)
    if a.shape != b.shape or np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)):
        raise ValueError("true_channels must be two rate arrays (a, b) of equal length in "
                         "[0, 1]")
    return np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)


class IntervalOption:
    """Base of the interval option objects: a kind name, a repr, and field checks."""

    #: The kind's name: its string shorthand.
    name: ClassVar[str] = ""

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "true_channels" and value is not None:
                shown.append(f"true_channels=<{value.shape[0]} channels>")
            elif value != f.default:
                shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


@dataclass(frozen=True, repr=False)
class Inversion(IntervalOption):
    """Invert a parametric bootstrap test of each candidate value of the metric.

    The interval of :func:`noisycal.intervals.inversion.invert_norm`: the set of values a
    test at level ``1 - level`` does not reject, each tested by ``n_boot`` Gaussian draws
    of the bin means (bins held fixed). It covers the population binned ECE near 0 as well
    as far from it, and its median-unbiased point estimate lies inside it.

    Parameters
    ----------
    n_boot : int, default=1000
        Gaussian draws per tested value (at least 100).

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Inversion(n_boot=2000)
    Inversion(n_boot=2000)
    """

    name: ClassVar[str] = "inversion"
    n_boot: int = 1000

    def __post_init__(self) -> None:
        self._set("n_boot", check_int(self.n_boot, "n_boot", minimum=100))


@dataclass(frozen=True, repr=False)
class Bootstrap(IntervalOption):
    """The item (or cluster) bootstrap of the plug-in estimate.

    It inherits the plug-in's upward bias near perfect calibration, so it covers poorly
    for nearly calibrated models (the measured coverage is in the documentation's
    intervals guide); with a noise-corrected target it holds the channels fixed.

    Parameters
    ----------
    n_boot : int, default=1000
        Replicates (at least 2).
    method : {'percentile', 'basic', 'bca'}, default='percentile'
        How the interval is read off the replicates (BCa's acceleration uses the exact
        leave-one-item-out jackknife).
    scheme : {'auto', 'exact', 'binned', 'poisson'}, default='auto'
        How the replicates of a binned metric are drawn. 'exact': n items drawn with
        replacement per replicate. 'poisson': an independent Poisson(1) weight per item
        (or cluster) and replicate, shardable over ``devices``. 'binned': the same
        bootstrap drawn from per-cell statistics (cost independent of n; cells of at least
        200 items get their resampled sums from the exact conditional normal, smaller
        cells are drawn item by item). 'auto': 'binned' where it applies, else 'exact'
        ('poisson' with ``devices``). Metrics without bins use the exact scheme and refuse
        another.
    rebin : bool, default=False
        With equal-mass bins (``strategy='quantile'``): re-estimate the edges in every
        replicate.
    batch_size : int, optional
        Replicates per vectorised chunk of the exact scheme (default: 1 on CPU, about
        2**25 numbers per chunk on accelerators).
    devices : int or sequence of jax devices, optional
        Shard the items of the Poisson scheme over these devices (an int: the first that
        many of ``jax.devices()``).

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Bootstrap(n_boot=200, method="bca")
    Bootstrap(n_boot=200, method='bca')
    """

    name: ClassVar[str] = "bootstrap"
    n_boot: int = 1000
    method: str = "percentile"
    scheme: str = "auto"
    rebin: bool = False
    batch_size: int | None = None
    devices: Any = None

    def __post_init__(self) -> None:
        from .._util.jax import check_devices

        self._set("n_boot", check_int(self.n_boot, "n_boot", minimum=2))
        check_choice(self.method, "method", BOOTSTRAP_METHODS)
        check_choice(self.scheme, "scheme", BOOTSTRAP_SCHEMES)
        self._set("rebin", _check_flag(self.rebin, "rebin"))
        self._set("batch_size", check_batch_size(self.batch_size))
        self._set("devices", check_devices(self.devices))
        if self.devices is not None and self.scheme not in ("auto", "poisson"):
            raise ValueError(f"devices shard the Poisson scheme; scheme={self.scheme!r} "
                             "runs on one device")
        if self.rebin and self.scheme in ("binned", "poisson"):
            raise ValueError(f"rebin=True re-estimates the edges per replicate, which "
                             f"scheme={self.scheme!r} does not do; use scheme='exact'")


@dataclass(frozen=True, repr=False, eq=False)
class Bound(IntervalOption):
    """The finite-sample bound of the noise-corrected ECE.

    Theorem 1 (Eq. C.11) of "Noisy-Label Calibration with Multiple Unreliable Labels" for
    channels fitted on other items, its Proposition 1 for channels fitted on the evaluated
    items, generalised to K classes by :func:`noisycal.metrics.nc.bound.nc_ece_bound`. It
    holds with probability at least ``level`` whatever the calibration, at several times
    the width of the inverted interval.

    Parameters
    ----------
    mode : {'binned_only', 'oracle', 'radius'}, optional
        How the channel term enters: left out ('binned_only': the bound then covers the
        binned error against the fitted channels only), exact from ``true_channels``
        ('oracle'), or ``B * channel_radius`` ('radius'). Default: 'radius' when
        ``channel_radius`` is given, 'oracle' when ``true_channels`` is, else
        'binned_only'.
    kind : {'auto', 'bernstein', 'hoeffding'}, default='auto'
        The inequality of the sampling radius: Hoeffding (the paper's), the empirical
        Bernstein radius (Maurer & Pontil 2009, Theorem 4), or the smaller of the two at
        half the error probability each.
    channel_radius : float, optional
        A bound on the total-variation distance between a true and a fitted confusion row
        (``mode='radius'``).
    true_channels : (a, b) or array-like of shape (J, K, K), optional
        The true channels (``mode='oracle'``): two rate arrays for two classes, or
        confusion matrices.
    same_sample : bool, optional
        Whether the channels were fitted on the evaluated items (Proposition 1) or not
        (Theorem 1). None: read from the target's provenance
        (:func:`noisycal.metrics.nc.bound.infer_same_sample`).

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Bound(channel_radius=0.02)
    Bound(mode='radius', channel_radius=0.02)
    """

    name: ClassVar[str] = "bound"
    mode: str | None = None
    kind: str = "auto"
    channel_radius: float | None = None
    true_channels: Any = None
    same_sample: bool | None = None

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", BOUND_KINDS)
        if self.channel_radius is not None:
            r = self.channel_radius
            if isinstance(r, bool) or not isinstance(r, numbers.Real) or not r >= 0 \
                    or not math.isfinite(r):
                raise ValueError(f"channel_radius must be a finite number >= 0, got {r!r}")
            self._set("channel_radius", float(r))
        if self.true_channels is not None:
            self._set("true_channels", check_true_channels(self.true_channels))
        if self.same_sample is not None:
            self._set("same_sample", _check_flag(self.same_sample, "same_sample"))
        given = [m for m, v in (("radius", self.channel_radius), ("oracle", self.true_channels))
                 if v is not None]
        if len(given) == 2:
            raise ValueError("give channel_radius (mode='radius') or true_channels "
                             "(mode='oracle'), not both")
        mode = self.mode
        if mode is None:
            mode = given[0] if given else "binned_only"
        check_choice(mode, "mode", BOUND_MODES)
        need = {"radius": "channel_radius", "oracle": "true_channels"}
        if mode in need and mode not in given:
            raise ValueError(f"mode={mode!r} needs {need[mode]}")
        if given and given[0] != mode:
            raise ValueError(f"{need[given[0]]} belongs to mode={given[0]!r}, not "
                             f"mode={mode!r}")
        self._set("mode", mode)

    def __repr__(self) -> str:
        shown = [f"mode={self.mode!r}"] if self.mode != "binned_only" else []
        if self.kind != "auto":
            shown.append(f"kind={self.kind!r}")
        if self.channel_radius is not None:
            shown.append(f"channel_radius={self.channel_radius!r}")
        if self.true_channels is not None:
            shown.append(f"true_channels=<{self.true_channels.shape[0]} channels>")
        if self.same_sample is not None:
            shown.append(f"same_sample={self.same_sample!r}")
        return f"Bound({', '.join(shown)})"


@dataclass(frozen=True, repr=False)
class Refit(IntervalOption):
    """Refit the annotator channels on the items of every bootstrap replicate.

    For a noise-corrected target whose channels were fitted by EM: the channels (and the
    aggregation weights) are refitted on each replicate's items, so the replicates carry
    the channels' estimation error without a delta-method approximation.

    Parameters
    ----------
    n_boot : int, default=1000
        Refit replicates (at least 2; at least 100 with ``method='inversion'``).
    method : {'inversion', 'percentile'}, default='inversion'
        'inversion': the replicates' covariance of the bin means replaces the delta
        method's in the inverted test (:class:`Inversion`); 'percentile': the percentile
        interval of the replicates' plug-in (biased upward near 0, like every bootstrap of
        the plug-in).
    progress : bool, default=False
        A progress bar on stderr over the refits.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Refit(n_boot=200, method="percentile")
    Refit(n_boot=200, method='percentile')
    """

    name: ClassVar[str] = "refit"
    n_boot: int = 1000
    method: str = "inversion"
    progress: bool = False

    def __post_init__(self) -> None:
        check_choice(self.method, "method", REFIT_METHODS)
        minimum = 100 if self.method == "inversion" else 2
        self._set("n_boot", check_int(self.n_boot, "n_boot", minimum=minimum))
        self._set("progress", _check_flag(self.progress, "progress"))


@dataclass(frozen=True, repr=False)
class Credible(IntervalOption):
    """The equal-tailed credible interval over a NUTS fit's channel draws.

    For a noise-corrected target built from a NUTS fit: the distribution of the binned
    plug-in over the posterior draws of the channels times a Bayesian bootstrap of the
    items. Like the percentile bootstraps it is the distribution of the plug-in, biased
    upward near 0.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Credible()
    Credible()
    """

    name: ClassVar[str] = "credible"


@dataclass(frozen=True, repr=False)
class Simultaneous(IntervalOption):
    """The simultaneous interval of the maximum calibration error.

    Bootstrap-t within bins, simultaneous over the bins that enter the MCE
    (:mod:`noisycal.metrics.mce`); it covers near and far from calibration.

    Parameters
    ----------
    n_boot : int, default=1000
        Replicates (at least 2).

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Simultaneous(n_boot=500)
    Simultaneous(n_boot=500)
    """

    name: ClassVar[str] = "simultaneous"
    n_boot: int = 1000

    def __post_init__(self) -> None:
        self._set("n_boot", check_int(self.n_boot, "n_boot", minimum=2))


@dataclass(frozen=True, repr=False)
class Wald(IntervalOption):
    """The normal (Wald) interval: the estimate plus or minus z standard errors.

    For a mean of per-item scores (:func:`noisycal.brier`, :func:`noisycal.nll`) the
    standard error is the items' standard deviation over the square root of n; for the
    calibration slope and intercept it is the GLM fit's, from the covariance
    ``cov_type``. It treats the items as independent (no ``cluster``).

    Parameters
    ----------
    cov_type : {'auto', 'nonrobust', 'HC0'}, default='auto'
        The covariance of a GLM fit (:func:`noisycal.calibration_slope`): model-based
        ('nonrobust'), the HC0 sandwich, or 'auto': model-based for 0/1 targets, the
        sandwich for soft targets (whose binomial variance is not the model's). A mean of
        scores has one standard error and refuses any other than 'auto'.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.intervals.Wald(cov_type="HC0")
    Wald(cov_type='HC0')
    """

    name: ClassVar[str] = "wald"
    cov_type: str = "auto"

    def __post_init__(self) -> None:
        check_choice(self.cov_type, "cov_type", WALD_COV_TYPES)


#: The string shorthands: ``interval="bootstrap"`` is ``Bootstrap()``.
SHORTHANDS: dict[str, type[IntervalOption]] = {
    cls.name: cls for cls in (Inversion, Bootstrap, Bound, Refit, Credible, Simultaneous,
                              Wald)}

#: What a metric says of the fields it does not use: a reason (the field must keep its
#: default), or the values it accepts and a reason.
Unused = Mapping[type, Mapping[str, "str | tuple[tuple, str]"]]


def refuse_fields(option: IntervalOption | None, where: str, unused: Unused) -> None:
    """Refuse, by name, a field of ``option`` that the metric ``where`` does not use.

    Parameters
    ----------
    option : IntervalOption or None
    where : str
        The metric's name, for messages.
    unused : mapping
        Option class -> {field name: reason} for the fields the metric does not use (a
        field is refused unless it is at its default), or {field name: (accepted values,
        reason)} for a field of which it accepts some values.

    Raises
    ------
    ValueError
        Naming the kind, the field and its value.

    Examples
    --------
    >>> refuse_fields(Bootstrap(rebin=True), "cmce",
    ...               {Bootstrap: {"rebin": "its mass bins are equal-width"}})
    Traceback (most recent call last):
    ...
    ValueError: cmce does not use Bootstrap(rebin=True): its mass bins are equal-width
    """
    if option is None:
        return
    reasons = unused.get(type(option), {})
    for f in fields(option):  # type: ignore[arg-type]
        if f.name not in reasons:
            continue
        value, why = getattr(option, f.name), reasons[f.name]
        if isinstance(why, tuple):
            accepted, why = why
            refused = value not in accepted
        else:
            refused = value is not f.default and value != f.default
        if refused:
            shown = "<devices>" if f.name == "devices" else repr(value)
            raise ValueError(f"{where} does not use {type(option).__name__}({f.name}={shown})"
                             f": {why}")


def as_interval(interval: object, offered: tuple[type[IntervalOption], ...], *,
                default: IntervalOption | None, where: str,
                unused: Unused | None = None) -> IntervalOption | None:
    """The interval option object a metric runs, from what the user gave.

    Parameters
    ----------
    interval : IntervalOption, str or None
        An option object, a string shorthand (the kind's name, with its defaults), 'auto'
        (the metric's default) or None (no interval).
    offered : tuple of IntervalOption classes
        The kinds the metric offers.
    default : IntervalOption or None
        What 'auto' means for this metric.
    where : str
        The metric's name, for messages.
    unused : mapping, optional
        The fields of the offered kinds that the metric does not use
        (:func:`refuse_fields`).

    Returns
    -------
    IntervalOption or None

    Raises
    ------
    ValueError
        Naming ``interval`` for an unknown string or a kind the metric does not offer, or
        naming a field the metric does not use.

    Examples
    --------
    >>> as_interval("bootstrap", (Inversion, Bootstrap), default=Inversion(), where="ece")
    Bootstrap()
    >>> as_interval("auto", (Inversion, Bootstrap), default=Inversion(), where="ece")
    Inversion()
    """
    if interval is None:
        return None
    names = ", ".join(repr(c.name) for c in offered)
    if isinstance(interval, str):
        if interval == "auto":
            return default
        if interval not in SHORTHANDS:
            raise ValueError(f"interval must be one of 'auto', {names}, None or an option "
                             f"object of noisycal.intervals, got {interval!r}")
        interval = SHORTHANDS[interval]()
    if isinstance(interval, type) and issubclass(interval, IntervalOption):
        raise ValueError(f"interval must be an option object, not a class: write "
                         f"{interval.__name__}() to use its defaults")
    if not isinstance(interval, IntervalOption):
        raise ValueError(f"interval must be one of 'auto', {names}, None or an option object "
                         f"of noisycal.intervals, got {type(interval).__name__}")
    if not isinstance(interval, offered):
        raise ValueError(f"{where} does not offer interval={interval!r}; it offers "
                         f"{names}")
    refuse_fields(interval, where, unused or {})
    return interval
