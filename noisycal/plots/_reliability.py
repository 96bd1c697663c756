"""Reliability diagrams and the cumulative-mass calibration curve.

The diagrams carry per-bin interval bars; the curve is that of :func:`noisycal.cmce`.
Both are re-exported by :mod:`noisycal.plots`.

matplotlib is imported inside the plotting functions, so ``import noisycal`` does not
import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._util.validation import check_choice, check_level
from ..intervals.estimate import Estimate
from ._layout import check_ax, check_title, new_axes, set_title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["reliability_diagram", "cumulative_mass_curve"]

#: Interval kinds for the per-bin bars (None picks one, see :func:`reliability_diagram`).
BAR_INTERVALS = (None, "stored", "bootstrap", "wilson")

_HARD_ATOL = 1e-6
#: Target kinds whose entries lie in [0, 1] (``Estimate.details['target_kind']``); the
#: per-bin bars of their bin means are clipped to [0, 1].
UNIT_TARGETS = ("hard", "soft", "voted", "posterior", "sampled")
_WHOLE_ATOL = 1e-9  # per item: how far count * mean_target may be from a whole number


def _select_group(table: pd.DataFrame, group: str | int | None) -> tuple[str, pd.DataFrame]:
    names = [str(g) for g in pd.unique(table["group"])]
    if group is None:
        name = names[0]
    elif isinstance(group, int | np.integer) and not isinstance(group, bool):
        if not 0 <= int(group) < len(names):
            raise ValueError(f"group must be one of {names} (or an index below {len(names)}), "
                             f"got {group!r}")
        name = names[int(group)]
    elif isinstance(group, str) and group in names:
        name = group
    else:
        raise ValueError(f"group must be one of {names}, got {group!r}")
    rows = table[table["group"].astype(str) == name].reset_index(drop=True)
    return name, rows


def _looks_hard(est: Estimate, rows: pd.DataFrame) -> bool:
    """Whether the bins are consistent with 0/1 targets (integer successes in every bin)."""
    if est.details.get("form") is not None:  # true-label ECE: soft labels by construction
        return False
    cnt = rows["count"].to_numpy(dtype=np.float64)
    mt = rows["mean_target"].to_numpy(dtype=np.float64)
    ok = cnt > 0
    if np.any((mt[ok] < -_HARD_ATOL) | (mt[ok] > 1 + _HARD_ATOL)):
        return False
    succ = mt[ok] * cnt[ok]
    return bool(np.all(np.abs(succ - np.round(succ)) <= _HARD_ATOL * np.maximum(cnt[ok], 1)))


def _has_bootstrap(rows: pd.DataFrame) -> bool:
    return ("low" in rows.columns and "high" in rows.columns
            and bool(np.any(np.isfinite(rows["low"].to_numpy(dtype=np.float64)))))


def _wilson(count: np.ndarray, mean_target: np.ndarray,
            level: float) -> tuple[np.ndarray, np.ndarray]:
    from statsmodels.stats.proportion import proportion_confint

    successes = np.round(mean_target * count)
    low, high = proportion_confint(successes, count, alpha=1.0 - level, method="wilson")
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _default_title(est: Estimate, group: str, n_groups: int) -> str:
    text = f"{est.name} {est.value:.4f}"
    if est.interval is not None and est.level is not None:
        how = est.kind or "interval"
        if est.method and est.method not in (est.kind, "percentile"):
            how += f", {est.method}"
        text += f" [{est.low:.4f}, {est.high:.4f}] ({est.level * 100:g}% {how})"
    per_group = est.details.get("per_group")
    if n_groups > 1 or (per_group and group in per_group):
        value = per_group.get(group) if per_group else None
        text += f"\n{group}" + (f": {value:.4f}" if value is not None else "")
    return text


def reliability_diagram(
    est: Estimate,
    *,
    ax: Axes | None = None,
    group: str | int | None = None,
    show_counts: bool = True,
    interval: str | None = None,
    level: float | None = None,
    hard: bool | None = None,
    title: str | None = None,
    bands: bool = False,
) -> Axes:
    r"""Reliability diagram of a binned calibration estimate, with per-bin interval bars.

    For every non-empty bin, a point at (mean confidence, mean target) with a vertical
    interval bar; the identity line (perfect calibration); and, below the diagram, a
    histogram of the bin counts sharing the x-axis.

    Parameters
    ----------
    est : Estimate
        Result of a binned metric (:func:`noisycal.ece`, :func:`noisycal.mce`,
        :func:`noisycal.true_label_ece`), whose ``bins`` holds the per-bin table.
    ax : matplotlib.axes.Axes, optional
        Axes to draw in; default a new figure. The count histogram is an inset placed
        just below ``ax`` (``ax.inset_axes``), so leave room under it in a grid.
    group : str or int, optional
        Which group of a classwise estimate to draw, by name (``'class_3'``) or position;
        default the first. Single-group estimates have one group (``'top_label'`` or
        ``'positive_class'``).
    show_counts : bool, default=True
        Draw the histogram of bin counts.
    interval : {'stored', 'bootstrap', 'wilson', None}, default=None
        The per-bin bars. 'stored' (or its older name 'bootstrap'): the intervals of the
        bin's mean target stored in ``est.bins`` (``low``/``high``): bootstrap percentile
        intervals when the estimate was made with ``interval='bootstrap'``, normal
        intervals (mean target +- z times its standard error) with the default
        ``interval='inversion'``; the legend says which. 'wilson': Wilson score
        intervals for a binomial proportion, from the bin's count and its number of
        positive targets (0/1 targets only). None: 'stored' when the table has those
        columns, else 'wilson' when the targets are 0/1 (see ``hard``), else no bars.
    level : float, optional
        Coverage of the Wilson bars, a fraction in (0, 1); default ``est.level``, else
        0.9. The bootstrap bars have the estimate's level; another ``level`` is an error,
        and so is any ``level`` when no bars are drawn.
    hard : bool, optional
        Whether the target values are 0/1 (hard or voted labels), which Wilson intervals
        need. None: inferred from the table: true when every non-empty bin's
        ``count * mean_target`` is a whole number within [0, count] and the estimate is
        not a true-label ECE. ``True`` does not round: the successes must still be whole
        numbers (within 1e-9 per item). Only for Wilson bars or none: with bootstrap bars
        it is an error.
    bands : bool, default=False
        Also shade consistency bands (Bröcker & Smith 2007, "Increasing the reliability
        of reliability diagrams"): for every bin, the central ``level`` range of the mean
        of 0/1 labels that a perfectly calibrated model would show, approximated by
        Binomial(count, mean confidence) / count (slightly wider than the exact
        consistency resampling band when confidences vary within the bin). A bin mean
        outside its band is evidence of miscalibration at that bin. Needs 0/1 targets
        (see ``hard``); :func:`noisycal.calibration_test` is the corresponding test.
    title : str, optional
        Axes title; default the estimate with its interval, e.g.
        ``'ECE 0.0412 [0.0351, 0.0488] (90% bootstrap)'`` (plus the group and its value
        for classwise estimates). ``''`` for none.

    Returns
    -------
    matplotlib.axes.Axes
        The diagram's axes; the count histogram, when drawn, is in ``ax.child_axes``.

    Raises
    ------
    TypeError
        If ``est`` is not an Estimate.
    ValueError
        If ``est`` has no per-bin table, ``group`` is unknown (the message lists the
        names), ``ax`` is not a matplotlib Axes, ``level`` is not a fraction in (0, 1),
        ``hard`` or ``show_counts`` is not a bool, ``title`` is not a string, or the
        requested ``interval`` is unavailable (no bootstrap columns; Wilson bars for
        targets that are not 0/1) or ``level`` does not match the bootstrap bars, or
        ``hard`` is given with bootstrap bars or ``level`` with no bars.

    Notes
    -----
    Target values are drawn as they are: noise-corrected targets may give bin means
    outside [0, 1], and the y-limits then extend beyond the unit square. For targets in
    [0, 1] (hard, soft, voted or posterior labels, 0/1 bins) the bars are clipped to
    [0, 1], where the bin means lie. The title is wrapped to the axes' width. The Wilson
    interval of a bin with :math:`n` items and :math:`s` positive targets is
    :math:`\big(\hat p + \frac{z^2}{2n} \pm z\sqrt{\frac{\hat p(1-\hat p)}{n}
    + \frac{z^2}{4n^2}}\big) / (1 + \frac{z^2}{n})` with :math:`\hat p = s/n`
    (statsmodels ``proportion_confint(method='wilson')``).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> from noisycal.plots import reliability_diagram
    >>> sim = nc.simulate.classifier(500, 3, seed=0)
    >>> est = nc.ece(sim.probs, sim.labels, n_bins=10, interval=None)
    >>> ax = reliability_diagram(est)   # Wilson bars: hard labels, no bootstrap columns
    >>> ax.get_ylabel()
    'mean target'
    """
    # Long only by its docstring: the work is in the helpers below.
    level = _check_arguments(est, ax=ax, interval=interval, level=level, hard=hard,
                             show_counts=show_counts, title=title)
    if not isinstance(bands, bool | np.bool_):
        raise ValueError(f"bands must be True or False, got {bands!r}")
    table = est.bins
    name, rows = _select_group(table, group)
    n_groups = int(pd.unique(table["group"]).shape[0])
    kind, bar_level = _bar_kind(est, rows, interval, level, hard)
    if bands and not (_looks_hard(est, rows) if hard is None else bool(hard)):
        raise ValueError("bands=True draws what 0/1 labels from a calibrated model would "
                         "show: it needs 0/1 targets (hard or voted labels)")

    if ax is None:
        ax = new_axes(show_counts)
    nonempty = rows[rows["count"].to_numpy() > 0]
    if bands:
        _draw_bands(ax, nonempty, level if level is not None else (est.level or 0.9))
    values = _draw_bins(ax, nonempty, kind, bar_level, table.attrs.get("interval"),
                        clip=_in_unit_interval(est, rows))
    _decorate(ax, values, _default_title(est, name, n_groups) if title is None else title)
    if show_counts:
        _draw_counts(ax, rows)
    else:
        ax.set_xlabel("mean confidence")
    return ax


def _check_arguments(est: Estimate, *, ax: object, interval: object, level: object,
                     hard: object, show_counts: object, title: object) -> float | None:
    """Validate reliability_diagram's arguments; returns ``level`` as a float (or None)."""
    if not isinstance(est, Estimate):
        raise TypeError(f"est must be an Estimate from a binned metric, got "
                        f"{type(est).__name__}")
    if est.bins is None:
        raise ValueError(f"est must come from a binned metric (nc.ece, nc.mce, "
                         f"nc.true_label_ece) with a per-bin table; {est.name!r} has none")
    check_ax(ax)
    check_choice(interval, "interval", BAR_INTERVALS)
    if hard is not None and not isinstance(hard, bool | np.bool_):
        raise ValueError(f"hard must be True, False or None, got {hard!r}")
    if not isinstance(show_counts, bool | np.bool_):
        raise ValueError(f"show_counts must be True or False, got {show_counts!r}")
    check_title(title)
    return None if level is None else check_level(level)


def _bar_kind(est: Estimate, rows: pd.DataFrame, interval: str | None, level: float | None,
              hard: bool | None) -> tuple[str | None, float | None]:
    """The per-bin bars to draw ('bootstrap', 'wilson' or None) and their level."""
    is_hard = _looks_hard(est, rows) if hard is None else bool(hard)
    boot_level = est.bins.attrs.get("level") or est.level
    kind = interval
    if kind is None:
        kind = "stored" if _has_bootstrap(rows) else ("wilson" if is_hard else None)
    if kind in ("stored", "bootstrap"):
        if not _has_bootstrap(rows):
            raise ValueError("interval='bootstrap' needs the per-bin low/high columns; "
                             "compute the estimate with interval='bootstrap', or use "
                             "interval='wilson' for 0/1 targets")
        if hard is not None:
            raise ValueError(f"hard={hard!r} does not apply to bootstrap bars (it decides "
                             "only whether Wilson bars can be drawn); leave hard=None, or "
                             "pass interval='wilson'")
        if level is not None and boot_level is not None and abs(level - boot_level) > 1e-12:
            raise ValueError(f"level={level:g} differs from the level of the bootstrap bars "
                             f"({boot_level:g}); recompute the estimate with that level")
        return "stored", boot_level
    if kind == "wilson":
        if not is_hard:
            raise ValueError("interval='wilson' needs 0/1 targets (hard or voted labels); "
                             "these bins hold non-binary target means (pass hard=True to "
                             "override, or use interval='bootstrap')")
        _check_whole_successes(rows)
        return kind, level if level is not None else (est.level or 0.9)
    if level is not None:
        raise ValueError(f"level={level:g} does not apply: no interval bars are drawn (no "
                         "bootstrap columns, and the targets are not 0/1); leave level=None")
    return None, None


def _check_whole_successes(rows: pd.DataFrame) -> None:
    """Wilson bars need a whole number of successes ``count * mean_target`` in [0, count]
    in every non-empty bin (within 1e-9 per item); ``hard=True`` does not round them."""
    cnt = rows["count"].to_numpy(dtype=np.float64)
    ok = cnt > 0
    succ = rows["mean_target"].to_numpy(dtype=np.float64)[ok] * cnt[ok]
    tol = _WHOLE_ATOL * np.maximum(cnt[ok], 1.0)
    bad = (np.abs(succ - np.round(succ)) > tol) | (succ < -tol) | (succ > cnt[ok] + tol)
    if np.any(bad):
        raise ValueError(f"hard=True, but the bins' successes count * mean_target are not "
                         f"whole numbers in [0, count] (e.g. {succ[bad][0]:.6g}), so there "
                         "are no 0/1 targets to draw Wilson bars for; pass hard=None or "
                         "use interval='bootstrap'")


def _draw_bands(ax: Axes, sel: pd.DataFrame, level: float) -> None:
    """Consistency bands: Binomial(count, mean confidence) / count central ranges."""
    from scipy import stats as sps

    x = sel["mean_conf"].to_numpy(dtype=np.float64)
    cnt = sel["count"].to_numpy(dtype=np.float64)
    p = np.clip(x, 0.0, 1.0)
    lo = sps.binom.ppf((1.0 - level) / 2, cnt, p) / cnt
    hi = sps.binom.ppf((1.0 + level) / 2, cnt, p) / cnt
    half = 0.012
    for i in range(x.size):
        ax.fill_between([x[i] - half, x[i] + half], lo[i], hi[i], color="0.6", alpha=0.35,
                        lw=0, zorder=0.5,
                        label=f"{level * 100:g}% consistency band" if i == 0 else None)


def _in_unit_interval(est: Estimate, rows: pd.DataFrame) -> bool:
    """Whether the target's entries lie in [0, 1], so its bin means do too: a target kind
    of :data:`UNIT_TARGETS`, or 0/1 targets read from the table."""
    return est.details.get("target_kind") in UNIT_TARGETS or _looks_hard(est, rows)


def _draw_bins(ax: Axes, sel: pd.DataFrame, kind: str | None,
               bar_level: float | None, stored: str | None = None, *,
               clip: bool = False) -> np.ndarray:
    """Identity line, per-bin bars and points of the non-empty bins ``sel``; with
    ``clip`` the bars are clipped to [0, 1] (a normal interval of a bin mean of targets in
    [0, 1] may otherwise cross 0 or 1).

    Returns the finite y-values drawn (points and bar ends), for the y-limits.
    """
    x = sel["mean_conf"].to_numpy(dtype=np.float64)
    y = sel["mean_target"].to_numpy(dtype=np.float64)
    ax.plot([0.0, 1.0], [0.0, 1.0], ls="--", color="0.55", lw=1.0,
            label="perfect calibration", zorder=1)
    lows = highs = None
    if kind == "stored":
        lows = sel["low"].to_numpy(dtype=np.float64)
        highs = sel["high"].to_numpy(dtype=np.float64)
        how = "bootstrap" if stored in (None, "bootstrap") else "normal"
        bar_label = f"{bar_level * 100:g}% {how} interval"
    elif kind == "wilson":
        lows, highs = _wilson(sel["count"].to_numpy(dtype=np.float64), y, bar_level)
        bar_label = f"{bar_level * 100:g}% Wilson interval"
    if lows is not None and clip:
        lows, highs = np.clip(lows, 0.0, 1.0), np.clip(highs, 0.0, 1.0)
    if lows is not None:
        # one Line2D with NaN breaks (not vlines), so that legend(loc='best') avoids the bars
        nan = np.full_like(x, np.nan)
        ax.plot(np.column_stack([x, x, nan]).ravel(),
                np.column_stack([lows, highs, nan]).ravel(),
                color="C0", lw=1.6, alpha=0.8, label=bar_label, zorder=2)
    ax.plot(x, y, "o", color="C0", ms=5, label="bin: mean target", zorder=3)
    finite = [v[np.isfinite(v)] for v in (y, lows, highs) if v is not None]
    return np.concatenate(finite) if finite else np.zeros(0)


def _decorate(ax: Axes, values: np.ndarray, title: str) -> None:
    """Limits (the unit square, extended to every drawn value), labels, legend, title."""
    y_lo = min(0.0, float(values.min())) if values.size else 0.0
    y_hi = max(1.0, float(values.max())) if values.size else 1.0
    pad = 0.03 * (y_hi - y_lo)
    ax.set_xlim(-0.02, 1.02)  # room for points at confidence 0 or 1
    ax.set_ylim(y_lo - pad, y_hi + pad)
    ax.set_ylabel("mean target")
    ax.grid(True, color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    ax.legend(loc="best", fontsize="small", framealpha=0.85, edgecolor="none")
    set_title(ax, title)


def _draw_counts(ax: Axes, rows: pd.DataFrame) -> None:
    """Histogram of the bin counts in an inset just below ``ax``, sharing its x-axis."""
    hist = ax.inset_axes((0.0, -0.42, 1.0, 0.3), sharex=ax)
    lo = rows["lo"].to_numpy(dtype=np.float64)
    hi = rows["hi"].to_numpy(dtype=np.float64)
    cnt = rows["count"].to_numpy(dtype=np.float64)
    hist.bar(lo, cnt, width=hi - lo, align="edge", color="C0", alpha=0.45,
             edgecolor="C0", lw=0.6)
    positive = cnt[cnt > 0]
    if positive.size and positive.max() > 100 * positive.min():
        hist.set_yscale("log")
    hist.set_ylabel("count", fontsize="small")
    hist.set_xlabel("mean confidence")
    hist.tick_params(labelsize="small")
    ax.tick_params(labelbottom=False)


def cumulative_mass_curve(est: Estimate, *, ax: Axes | None = None, show_counts: bool = True,
                          title: str | None = None, label: str | None = None) -> Axes:
    """Cumulative mass calibration curve of a :func:`noisycal.cmce` estimate.

    For every non-empty mass bin, the mean mass of its nested highest-probability sets
    (x) against their coverage (y), joined by a line, with the per-bin bars stored in the
    estimate (normal bars with the default inverted interval, bootstrap percentile bars
    with ``interval='bootstrap'``); the diagonal is perfect cumulative mass calibration
    ("Adaptive Set-Mass Calibration with Conformal Prediction", Figure 2). Points above
    the diagonal are under-confident sets. Below, a histogram of the sets per bin.

    Parameters
    ----------
    est : Estimate
        The result of :func:`noisycal.cmce`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw in (several curves may share one: pass the same ``ax`` and
        ``show_counts=False`` after the first); default a new figure.
    show_counts : bool, default=True
    title : str, optional
        Default: the estimate with its interval; ``''`` for none.
    label : str, optional
        Legend label of the curve (default the estimate's name and value).

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    TypeError
        If ``est`` is not an Estimate.
    ValueError
        If ``est`` is not a CMCE estimate (no per-bin table of nested sets), or ``ax``,
        ``show_counts`` or ``title`` has the wrong type.
    """
    if not isinstance(est, Estimate):
        raise TypeError(f"est must be an Estimate, got {type(est).__name__}")
    if est.bins is None or "n_sets" not in est.details:
        raise ValueError("est must be the Estimate of noisycal.cmce (its bins hold the "
                         "nested highest-probability sets)")
    if not isinstance(show_counts, bool | np.bool_):
        raise ValueError(f"show_counts must be True or False, got {show_counts!r}")
    for value, name in ((title, "title"), (label, "label")):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a string, got {value!r}")
    if ax is None:
        ax = new_axes(show_counts)
    elif not hasattr(ax, "plot") or not hasattr(ax, "inset_axes"):
        raise ValueError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    rows = est.bins
    sel = rows[rows["count"].to_numpy() > 0]
    x = sel["mean_conf"].to_numpy(dtype=np.float64)
    y = sel["mean_target"].to_numpy(dtype=np.float64)
    if not any(ln.get_label() == "perfect calibration" for ln in ax.get_lines()):
        ax.plot([0.0, 1.0], [0.0, 1.0], ls="--", color="0.55", lw=1.0,
                label="perfect calibration", zorder=1)
    text = label if label is not None else f"{est.name} {est.value:.4f}"
    (line,) = ax.plot(x, y, "o-", ms=4, lw=1.4, label=text, zorder=3)
    drawn = [y]
    if "low" in sel and est.interval is not None:
        lo = sel["low"].to_numpy(dtype=np.float64)
        hi = sel["high"].to_numpy(dtype=np.float64)
        nan = np.full_like(x, np.nan)
        ax.plot(np.column_stack([x, x, nan]).ravel(), np.column_stack([lo, hi, nan]).ravel(),
                color=line.get_color(), lw=1.2, alpha=0.6, zorder=2)
        drawn += [lo, hi]
    values = np.concatenate([v[np.isfinite(v)] for v in drawn])
    default = f"{est.name} {est.value:.4f}" + (
        f" [{est.low:.4f}, {est.high:.4f}] ({est.level * 100:g}% {est.kind})"
        if est.interval is not None else "")
    _decorate(ax, values, default if title is None else title)
    ax.set_ylabel("coverage of the sets")
    ax.set_xlabel("mass of the nested highest-probability sets")
    if show_counts:
        _draw_counts(ax, rows)
        ax.child_axes[-1].set_xlabel("set mass")
        ax.child_axes[-1].set_ylabel("sets", fontsize="small")
    return ax
