"""Forest plot of the estimates and intervals of a calibration report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..intervals.estimate import Estimate
from ._layout import check_ax, check_title, set_title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["forest_plot", "FOREST_COLUMNS"]

#: Columns a table needs for :func:`forest_plot` (those of :func:`noisycal.report`).
FOREST_COLUMNS = ("metric", "target", "estimate", "low", "high")
#: Panels per row of a new figure.
MAX_COLUMNS = 3


def _as_table(report: Any) -> pd.DataFrame:
    if isinstance(report, pd.DataFrame):
        missing = [c for c in FOREST_COLUMNS if c not in report.columns]
        if missing:
            raise ValueError(f"report must have the columns {list(FOREST_COLUMNS)} (as "
                             f"noisycal.report gives), missing {missing}")
        return pd.DataFrame(report)
    items = list(report.items()) if isinstance(report, Mapping) else (
        [(None, e) for e in report] if isinstance(report, Sequence) else None)
    if not items or not all(isinstance(e, Estimate) for _, e in items):
        raise ValueError("report must be a table from noisycal.report, or a list or dict of "
                         f"Estimates, got {type(report).__name__}")
    return pd.DataFrame([{"metric": e.name, "target": "" if k is None else str(k),
                          "estimate": e.value, "low": e.low, "high": e.high,
                          "level": e.level, "status": e.status} for k, e in items])


def forest_plot(report: Any, *, ax: Axes | None = None, title: str | None = None
                ) -> np.ndarray:
    """Forest plot: every estimate as a point on its interval, one panel per metric.

    Rows are the targets (or the estimates' labels); metrics on different scales get
    their own panels and x-axes (three panels per row). An estimate whose status is not
    'ok' is drawn hollow and red, with its status in the row label; an estimate without
    an interval is a point alone.

    Parameters
    ----------
    report : pandas.DataFrame, or list or dict of Estimate
        The table of :func:`noisycal.report` (columns metric, target, estimate, low,
        high, and optionally level and status), or Estimates (a dict's keys label the
        rows).
    ax : matplotlib.axes.Axes, optional
        Axes to draw in when the table holds a single metric; default a new figure.
    title : str, optional
        Title of the first panel (default the metric and the interval level); ``''`` for
        none.

    Returns
    -------
    ndarray of matplotlib.axes.Axes, shape (n_metrics,)

    Raises
    ------
    ValueError
        If ``report`` is neither such a table nor Estimates, it is empty, ``ax`` is given
        for more than one metric, or ``ax``/``title`` has the wrong type.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> sim = nc.simulate.classifier(400, 3, seed=0)
    >>> table = nc.report(sim.probs, sim.labels, metrics=["brier"])
    >>> axes = nc.plots.forest_plot(table)
    >>> len(axes), axes[0].get_xlabel()
    (1, 'Brier')
    """
    table = _as_table(report)
    check_ax(ax)
    check_title(title)
    if table.empty:
        raise ValueError("report has no rows to plot")
    metrics = list(pd.unique(table["metric"]))
    if ax is not None and len(metrics) != 1:
        raise ValueError(f"ax holds one panel, but the report has {len(metrics)} metrics "
                         f"({metrics}); leave ax=None or plot one metric's rows")
    if ax is None:
        import matplotlib.pyplot as plt

        n_rows = int(table.groupby("metric").size().max())
        cols = min(len(metrics), MAX_COLUMNS)
        rows = -(-len(metrics) // cols)
        _, grid = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                               figsize=(3.6 * cols + 1.2, (0.45 * n_rows + 1.4) * rows))
        for extra in grid.ravel()[len(metrics):]:
            extra.remove()
        panels = grid.ravel()[:len(metrics)]
    else:
        panels = np.array([ax], dtype=object)
    for i, (axis, metric) in enumerate(zip(panels, metrics, strict=True)):
        rows = table[table["metric"] == metric].reset_index(drop=True)
        _panel(axis, rows)
        axis.set_xlabel(str(metric))
        if i == 0:
            levels = rows["level"].dropna().unique() if "level" in rows else []
            default = (f"{levels[0] * 100:g}% intervals" if len(levels) == 1 else "")
            set_title(axis, default if title is None else title)
    return np.asarray(panels, dtype=object)


def _panel(ax: Axes, rows: pd.DataFrame) -> None:
    y = np.arange(len(rows))[::-1].astype(np.float64)
    est = rows["estimate"].to_numpy(dtype=np.float64)
    low = rows["low"].to_numpy(dtype=np.float64)
    high = rows["high"].to_numpy(dtype=np.float64)
    status = rows["status"].astype(str).to_numpy() if "status" in rows else \
        np.full(len(rows), "ok")
    ok = status == "ok"
    has = np.isfinite(low) & np.isfinite(high)
    nan = np.full(int(has.sum()), np.nan)
    ax.plot(np.column_stack([low[has], high[has], nan]).ravel(),
            np.column_stack([y[has], y[has], nan]).ravel(), color="C0", lw=2.0,
            solid_capstyle="butt")
    ax.plot(est[ok], y[ok], "o", color="C0", ms=6, zorder=3)
    if np.any(~ok):
        ax.plot(est[~ok], y[~ok], "o", mfc="white", mec="C3", mew=1.6, ms=6, zorder=3)
    labels = [str(t) + ("" if s == "ok" else f" ({s})")
              for t, s in zip(rows["target"].astype(str), status, strict=True)]
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.grid(True, axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
