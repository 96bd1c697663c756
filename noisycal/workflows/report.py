"""A calibration report: several metrics against one or more targets, in one table.

:func:`report` computes each metric of ``metrics`` against each target and returns a
:class:`Report`, a pandas DataFrame with one row per (target, metric): the estimate,
its interval and level, the estimand, the estimator, the status (with every other status
that applies) and its message. It
exports itself to Markdown, LaTeX and HTML (written here, so that neither ``tabulate``,
which ``DataFrame.to_markdown`` needs, nor ``jinja2``, which ``DataFrame.to_latex`` and
the ``Styler`` need, is a dependency) and draws a forest plot of the intervals
(:func:`noisycal.plots.forest_plot`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._util.html import frame_html, plugin_value
from .._util.types import ArrayLike, Seed
from .._util.validation import check_level
from ..intervals.estimate import Estimate
from ..intervals.options import SHORTHANDS, IntervalOption
from ..metrics import (
    brier,
    calibration_intercept,
    calibration_slope,
    cmce,
    ece,
    mce,
    nll,
    smooth_ece,
)
from ..metrics.inputs import label_classes
from ..targets.target import Target, as_target_matrix

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["report", "Report", "METRICS", "DEFAULT_METRICS", "COLUMNS", "EXPORT_COLUMNS",
           "to_markdown", "to_latex", "to_html"]


def _classwise_ece(probs: Any = None, target: Any = None, **kw: Any) -> Estimate:
    return ece(probs, target, kind="classwise", **kw)


#: The metrics :func:`report` knows by name (each called with the report's ``interval``,
#: ``level``, ``seed`` and ``cluster``).
METRICS: Mapping[str, Callable[..., Estimate]] = {
    "ece": ece, "classwise_ece": _classwise_ece, "mce": mce, "smooth_ece": smooth_ece,
    "cmce": cmce, "brier": brier, "nll": nll, "calibration_slope": calibration_slope,
    "calibration_intercept": calibration_intercept,
}

#: The metrics of a report by default.
DEFAULT_METRICS = ("ece", "mce", "brier", "nll", "calibration_slope")

#: The columns of a report, in order.
COLUMNS = ("target", "metric", "estimate", "plugin", "low", "high", "level", "interval",
           "estimator", "estimand", "n", "status", "statuses", "message")

#: The columns the exporters write by default: every column of the table but the
#: estimand (a sentence) and ``status`` (the first entry of ``statuses``, which lists
#: every status of the row); ``plugin`` is the plug-in value beside the estimate and
#: ``n`` the number of items.
EXPORT_COLUMNS = ("target", "metric", "estimate", "plugin", "low", "high", "level",
                  "interval", "estimator", "n", "statuses", "message")

#: Status of a row whose metric refused the target (its message says why).
NOT_APPLICABLE = "not_applicable"


class Report(pd.DataFrame):
    """The table of :func:`report`: a pandas DataFrame with exporters and a forest plot.

    One row per (target, metric), with the columns of :data:`COLUMNS`. A row selection
    or any other derived table is a plain DataFrame; the module functions
    :func:`to_markdown`, :func:`to_latex` and :func:`to_html` take one.

    Parameters
    ----------
    data, index, columns, dtype, copy
        As for :class:`pandas.DataFrame` (:func:`report` builds it).
    """

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    def to_markdown(self, *, columns: Sequence[str] = EXPORT_COLUMNS,  # type: ignore[override]
                    digits: int = 4) -> str:
        """The table as Markdown, without ``tabulate`` (see :func:`to_markdown`).

        Parameters
        ----------
        columns : sequence of str, default=EXPORT_COLUMNS
        digits : int, default=4

        Returns
        -------
        str
        """
        return to_markdown(self, columns=columns, digits=digits)

    def to_latex(self, *, columns: Sequence[str] = EXPORT_COLUMNS,  # type: ignore[override]
                 digits: int = 4, caption: str | None = None, label: str | None = None
                 ) -> str:
        """The table as a LaTeX ``table``, without ``jinja2`` (see :func:`to_latex`).

        Parameters
        ----------
        columns : sequence of str, default=EXPORT_COLUMNS
        digits : int, default=4
        caption, label : str, optional

        Returns
        -------
        str
        """
        return to_latex(self, columns=columns, digits=digits, caption=caption, label=label)

    def to_html(self, *, columns: Sequence[str] = EXPORT_COLUMNS,  # type: ignore[override]
                digits: int = 4) -> str:
        """The table as an HTML ``<table>`` (see :func:`to_html`).

        Parameters
        ----------
        columns : sequence of str, default=EXPORT_COLUMNS
        digits : int, default=4

        Returns
        -------
        str
        """
        return to_html(self, columns=columns, digits=digits)

    def forest_plot(self, *, ax: Axes | None = None, title: str | None = None) -> np.ndarray:
        """Forest plot of the intervals, one panel per metric.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
        title : str, optional
            See :func:`noisycal.plots.forest_plot`.

        Returns
        -------
        ndarray of matplotlib.axes.Axes
        """
        from ..plots import forest_plot

        return forest_plot(self, ax=ax, title=title)


def _targets(target: object) -> list[tuple[str, object]]:
    if target is None:
        raise ValueError("target is required: a target, a list of targets, or a dict "
                         "from names to targets")
    if isinstance(target, Mapping):
        pairs = [(str(k), v) for k, v in target.items()]
    elif isinstance(target, list | tuple):
        pairs = [(v.kind if isinstance(v, Target) else f"target {i}", v)
                 for i, v in enumerate(target)]
    else:
        pairs = [(target.kind if isinstance(target, Target) else "target", target)]
    if not pairs:
        raise ValueError("target is empty: give at least one target")
    names = [n for n, _ in pairs]
    return [(n if names.count(n) == 1 else f"{n} {i}", v) for i, (n, v) in enumerate(pairs)]


def _metrics(metrics: object) -> list[tuple[str, Callable[..., Estimate]]]:
    if isinstance(metrics, str) or callable(metrics):
        metrics = [metrics]
    if not isinstance(metrics, Sequence) or not metrics:
        raise ValueError(f"metrics must be a non-empty list of metric names {list(METRICS)} "
                         f"or callables, got {metrics!r}")
    out = []
    for m in metrics:
        if isinstance(m, str) and m in METRICS:
            out.append((m, METRICS[m]))
        elif callable(m) and not isinstance(m, str):
            out.append((getattr(m, "__name__", "metric"), m))
        else:
            raise ValueError(f"metrics: {m!r} is not one of {list(METRICS)} nor a callable")
    return out


def _check_option(value: object, name: str) -> None:
    """Refuse what no metric takes as ``interval=``: not 'auto', None, a kind's name or an
    option object (whether a metric offers the kind is its own answer, a row)."""
    if value is None or isinstance(value, IntervalOption) or (
            isinstance(value, str) and (value == "auto" or value in SHORTHANDS)):
        return
    raise ValueError(f"{name} must be 'auto', None, one of {list(SHORTHANDS)} or an option "
                     f"object of noisycal.intervals, got {value!r}")


def _intervals(interval: object, labels: list[str]) -> dict[str, object]:
    """The ``interval=`` each metric of the report is called with."""
    if isinstance(interval, Mapping):
        unknown = [k for k in interval if k not in labels]
        if unknown:
            raise ValueError(f"interval: {unknown} are not metrics of this report "
                             f"({labels})")
        for k, v in interval.items():
            _check_option(v, f"interval[{k!r}]")
        return {label: interval.get(label, "auto") for label in labels}
    _check_option(interval, "interval")
    return dict.fromkeys(labels, interval)


def _row(name: str, metric: str, est: Estimate) -> dict[str, Any]:
    how = est.kind or ""
    if est.method and est.method != est.kind:
        how += f" ({est.method})"
    plugin = plugin_value(est)
    return {"target": name, "metric": est.name or metric, "estimate": est.value,
            "plugin": est.value if plugin is None else plugin, "low": est.low,
            "high": est.high, "level": est.level, "interval": how or None,
            "estimator": est.estimator or None, "estimand": est.estimand or None,
            "n": est.n, "status": est.status, "statuses": ", ".join(est.statuses),
            "message": est.message}


def report(probs: ArrayLike | None = None, target: object = None, *,
           logits: ArrayLike | None = None, metrics: Sequence[Any] = DEFAULT_METRICS,
           interval: object = "auto", level: float = 0.9, seed: Seed = 0,
           cluster: ArrayLike | None = None) -> Report:
    """Calibration report: each metric against each target, with intervals and statuses.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_classes) or (n_items,)
        Predicted probabilities (positive-class probabilities for (n,)); or give
        ``logits=``.
    target : target, list of targets, or dict
        One target (a :class:`~noisycal.Target`, an (n, K) matrix or a label vector), a
        list of them (rows named by the Targets' kinds, else ``'target 0'``, ...), or a
        dict from row names to targets (e.g. ``{'voted': t_v, 'corrected': t_c}``).
    logits : array-like of shape (n_items, n_classes), optional
        Logits instead of ``probs``.
    metrics : list of str or callable, default=('ece', 'mce', 'brier', 'nll', 'calibration_slope')
        Names from :data:`METRICS` (``'ece'``, ``'classwise_ece'``, ``'mce'``,
        ``'smooth_ece'``, ``'cmce'``, ``'brier'``, ``'nll'``, ``'calibration_slope'``,
        ``'calibration_intercept'``), each with its own defaults, or callables
        ``f(probs=..., target=..., interval=..., level=..., seed=..., cluster=...)`` (or
        ``logits=``) returning an :class:`~noisycal.Estimate`.
    interval : 'auto', None, IntervalOption, str or dict, default='auto'
        The ``interval=`` passed on to every metric: 'auto' (each metric's default
        kind with its defaults), None (no intervals), an option object of
        :mod:`noisycal.intervals` or its name (given to every metric; a metric that does
        not offer that kind gives a row with status ``'not_applicable'``), or a dict from
        metric names (as in ``metrics``) to any of these, the metrics left out taking
        'auto': ``{'ece': nc.intervals.Inversion(n_boot=200), 'brier':
        nc.intervals.Bootstrap(n_boot=200)}``.
    level : float, default=0.9
        Nominal coverage of every interval.
    seed : int or jax key, default=0
        The same seed for every metric and target.
    cluster : array-like of shape (n_items,), optional
        Cluster of every item, for the cluster bootstrap.

    Returns
    -------
    Report
        A DataFrame with one row per (target, metric) and the columns target, metric,
        estimate, plugin (the plug-in value, equal to the estimate unless the metric
        reports another estimator), low, high, level, interval (its kind and method),
        estimator, estimand, n, status, statuses (every status of the Estimate that
        applies, most severe first, joined by ``', '``: ``'ok'`` or, e.g.,
        ``'target_not_converged, estimate_outside_interval'``; ``status`` is the first),
        message. A metric that refuses a target (a
        ``ValueError``, e.g. a metric that needs targets in [0, 1] given a noise-corrected
        target) gives a row with status ``'not_applicable'``, NaN numbers and the error
        as message.

    Raises
    ------
    ValueError
        If a target does not match the predictions' shape, a metric is unknown, an
        ``interval`` is neither 'auto', None, a kind nor an option object (or names a
        metric not in ``metrics``), or ``level`` is not a fraction in (0, 1).

    Examples
    --------
    >>> import noisycal as nc
    >>> sim = nc.simulate.classifier(400, 3, seed=0)
    >>> table = nc.report(sim.probs, {"labels": sim.labels}, metrics=["brier", "nll"])
    >>> list(table["metric"]), list(table["status"]), list(table["statuses"])
    (['Brier', 'NLL'], ['ok', 'ok'], ['ok', 'ok'])
    >>> print(table.to_markdown(columns=["target", "metric", "level"]))
    | target | metric | level |
    | --- | --- | --- |
    | labels | Brier | 90% |
    | labels | NLL | 90% |
    >>> table = nc.report(sim.probs, sim.labels, metrics=["ece", "brier"],
    ...                   interval={"brier": nc.intervals.Wald()})
    >>> list(table["interval"])
    ['inversion (parametric)', 'wald']
    """
    level = check_level(level)
    pairs, chosen = _targets(target), _metrics(metrics)
    options = _intervals(interval, [label for label, _ in chosen])
    if (probs is None) == (logits is None):
        raise ValueError("give exactly one of probs= or logits=")
    pred = np.asarray(probs if probs is not None else logits)
    shape = (pred.shape[0], 2) if pred.ndim == 1 else pred.shape
    if len(shape) != 2:
        raise ValueError(f"{'probs' if probs is not None else 'logits'} must have shape "
                         f"(n_items, n_classes) or (n_items,), got {pred.shape}")
    for name, t in pairs:  # shapes checked up front: a mismatch is misuse, never a row
        as_target_matrix(t, *shape, f"target {name!r}",
                         classes=label_classes(probs, logits, None, t))
    inputs = {"probs": probs} if probs is not None else {"logits": logits}
    rows = []
    for name, t in pairs:
        for label, fn in chosen:
            try:
                est = fn(target=t, interval=options[label], level=level, seed=seed,
                         cluster=cluster, **inputs)
            except ValueError as err:
                rows.append({**dict.fromkeys(COLUMNS), "target": name, "metric": label,
                             "estimate": math.nan, "plugin": math.nan, "low": math.nan,
                             "high": math.nan, "n": shape[0], "status": NOT_APPLICABLE,
                             "statuses": NOT_APPLICABLE, "message": str(err)})
                continue
            if not isinstance(est, Estimate):
                raise ValueError(f"metrics: {label} returned {type(est).__name__}, not an "
                                 "Estimate")
            rows.append(_row(name, label, est))
    return Report(pd.DataFrame(rows, columns=list(COLUMNS)))


#: The most decimals a report table prints (beyond a float64's precision is noise).
MAX_DIGITS = 17


def _cell(column: str, value: object, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if column == "level" and isinstance(value, numbers.Real):
        return f"{float(value) * 100:g}%"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, numbers.Integral) or (
            column == "n" and isinstance(value, numbers.Real) and float(value).is_integer()):
        return str(int(value))  # a count, also where a missing one made the column float
    if isinstance(value, numbers.Real):
        return f"{float(value):.{digits}f}"
    return " ".join(str(value).split())  # one line


def _cells(frame: pd.DataFrame, columns: Sequence[str], digits: int) -> list[list[str]]:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"columns {missing} are not in the table (its columns: "
                         f"{list(frame.columns)})")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 0 \
            or digits > MAX_DIGITS:
        raise ValueError(f"digits must be an integer in [0, {MAX_DIGITS}] (a float64 holds "
                         f"about 17 significant digits), got {digits!r}")
    return [[_cell(c, v, int(digits)) for c, v in zip(columns, row, strict=True)]
            for row in frame[list(columns)].itertuples(index=False)]


def to_markdown(frame: pd.DataFrame, *, columns: Sequence[str] = EXPORT_COLUMNS,
                digits: int = 4) -> str:
    """A table as a Markdown (GitHub) pipe table, without ``tabulate``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`report` or any table with ``columns``.
    columns : sequence of str, default=EXPORT_COLUMNS
        Columns to write, in order.
    digits : int, default=4
        Decimals of the numbers; levels are written as percentages, missing values as
        empty cells.

    Returns
    -------
    str
        Every cell is escaped: ``<``, ``>`` and ``&`` as HTML entities (Markdown renders
        inline HTML), ``|`` and ``\\`` with a backslash (a pipe would end the cell).
    """
    cells = _cells(frame, columns, digits)
    esc = [[_markdown(c) for c in row] for row in [list(columns), *cells]]
    lines = ["| " + " | ".join(esc[0]) + " |", "| " + " | ".join("---" for _ in columns)
             + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in esc[1:]])


#: Markdown renders inline HTML and splits rows at unescaped pipes: these characters of
#: a cell are written as entities or backslash escapes (the backslash first, so that a
#: cell ending in one cannot escape the next pipe).
_MARKDOWN = {"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _markdown(text: str) -> str:
    return "".join(_MARKDOWN.get(ch, ch) for ch in text)


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}"}


def _latex(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def to_latex(frame: pd.DataFrame, *, columns: Sequence[str] = EXPORT_COLUMNS,
             digits: int = 4, caption: str | None = None, label: str | None = None) -> str:
    """A table as a LaTeX ``table`` with a booktabs ``tabular``, without ``jinja2``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`report` or any table with ``columns``.
    columns : sequence of str, default=EXPORT_COLUMNS
    digits : int, default=4
    caption, label : str, optional
        ``\\caption`` (escaped) and ``\\label`` (written as given).

    Returns
    -------
    str
        Needs ``\\usepackage{booktabs}``; every cell is escaped (``_``, ``%``, ``&``, ...).
    """
    cells = _cells(frame, columns, digits)
    numeric = [all(_is_number(r[i]) for r in cells) and any(r[i] for r in cells)
               for i in range(len(columns))]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = ["\\begin{table}[ht]", "\\centering", f"\\begin{{tabular}}{{{spec}}}",
             "\\toprule", " & ".join(_latex(c) for c in columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(_latex(c) for c in row) + " \\\\" for row in cells]
    lines += ["\\bottomrule", "\\end{tabular}"]
    if caption is not None:
        lines.append(f"\\caption{{{_latex(str(caption))}}}")
    if label is not None:
        lines.append(f"\\label{{{label}}}")
    return "\n".join(lines + ["\\end{table}"])


def _is_number(text: str) -> bool:
    try:
        float(text.rstrip("%"))
    except ValueError:
        return text == ""
    return True


def to_html(frame: pd.DataFrame, *, columns: Sequence[str] = EXPORT_COLUMNS,
            digits: int = 4) -> str:
    """A table as an HTML ``<table>`` (escaped), without ``jinja2``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`report` or any table with ``columns``.
    columns : sequence of str, default=EXPORT_COLUMNS
    digits : int, default=4

    Returns
    -------
    str
    """
    cells = _cells(frame, columns, digits)
    return frame_html(pd.DataFrame(cells, columns=list(columns)))
