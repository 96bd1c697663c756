"""HTML views of noisycal's results for notebooks (``_repr_html_``) and reports.

Plain HTML tables written here, so that neither jinja2 (which pandas' ``Styler`` needs)
nor any other templating package is a dependency. Every text is escaped.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["fmt", "escape", "frame_html", "estimate_html", "fit_html", "target_html",
           "plugin_value"]

#: Rows of a per-item or per-annotator table shown before it is cut.
MAX_ROWS = 20

_STYLE = ("border-collapse:collapse;font-family:monospace;font-size:0.9em;"
          "margin:0.2em 0")
_CELL = "border:1px solid #ccc;padding:2px 6px;text-align:{align}"
_WARN = "color:#a00;font-weight:bold"


def fmt(value: object, digits: int = 4) -> str:
    """A value as text: reals with ``digits`` decimals (``'nan'`` kept), others ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.{digits}f}" if math.isfinite(value) else str(float(value))
    return str(value)


def escape(value: object, digits: int = 4) -> str:
    """:func:`fmt`, HTML-escaped."""
    return html.escape(fmt(value, digits))


def _cell(value: object, tag: str = "td", digits: int = 4) -> str:
    align = "right" if isinstance(value, numbers.Number) else "left"
    return f'<{tag} style="{_CELL.format(align=align)}">{escape(value, digits)}</{tag}>'


def _table(header: Sequence[object] | None, rows: Iterable[Sequence[object]],
           digits: int = 4, index_header: bool = False) -> str:
    head = ""
    if header is not None:
        head = "<thead><tr>" + "".join(_cell(h, "th") for h in header) + "</tr></thead>"
    body = "".join("<tr>" + "".join(_cell(v, "th" if index_header and i == 0 else "td",
                                          digits) for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<table style="{_STYLE}">{head}<tbody>{body}</tbody></table>'


def frame_html(frame: Any, *, digits: int = 4, index: bool = False) -> str:
    """A pandas DataFrame as an HTML table (no jinja2), numbers with ``digits`` decimals.

    Parameters
    ----------
    frame : pandas.DataFrame
    digits : int, default=4
    index : bool, default=False
        Also write the index as the first column.

    Returns
    -------
    str
    """
    header = ([frame.index.name or ""] if index else []) + [str(c) for c in frame.columns]
    rows = [([idx] if index else []) + list(vals)
            for idx, vals in zip(frame.index, frame.itertuples(index=False), strict=True)]
    return _table(header, rows, digits, index_header=index)


def _status_html(status: str, message: str, statuses: Sequence[str] = ()) -> str:
    if status == "ok":
        return "status <b>ok</b>"
    if len(statuses) > 1:  # every status that applies, most severe first
        text = (f'<span style="{_WARN}">statuses '
                f'{html.escape(", ".join(statuses))}</span>')
    else:
        text = f'<span style="{_WARN}">status {html.escape(status)}</span>'
    return text + (f": {html.escape(message)}" if message else "")


def _block(title: str, parts: Sequence[str]) -> str:
    return (f'<div class="noisycal"><div><b>{html.escape(title)}</b></div>'
            + "".join(f"<div>{p}</div>" for p in parts if p) + "</div>")


def plugin_value(est: Any) -> float | None:
    """The plug-in value an Estimate carries beside another reported value, or None.

    Metrics that report the median-unbiased estimate keep the plug-in in
    ``details['plugin']``; None when the estimator is the plug-in itself or no finite
    plug-in is stored.
    """
    plugin = getattr(est, "details", {}).get("plugin")
    if not est.estimator or est.estimator == "plug-in" or plugin is None \
            or isinstance(plugin, bool) or not isinstance(plugin, numbers.Real) \
            or not math.isfinite(plugin):
        return None
    return float(plugin)


def estimate_html(est: Any) -> str:
    """An Estimate as an HTML block: value, plug-in, interval, estimand, status, bins."""
    plugin = plugin_value(est)
    rows: list[tuple[str, object]] = [("value", est.value)]
    if plugin is not None:
        rows.append(("plug-in", plugin))
    if est.interval is not None:
        rows.append(("interval", f"[{fmt(est.low)}, {fmt(est.high)}]"))
        rows.append(("level", f"{est.level * 100:g}%" if est.level is not None else ""))
        how = est.kind or ""
        if est.method and est.method != est.kind:
            how += f" ({est.method})"
        rows.append(("interval kind", how))
    rows += [(k, v) for k, v in (("estimator", est.estimator), ("estimand", est.estimand),
                                 ("n", est.n), ("n_boot", est.n_boot)) if v not in ("", None)]
    parts = [_table(None, rows, index_header=True), _status_html(est.status, est.message,
                             getattr(est, "statuses", ()))]
    if est.bins is not None:
        parts.append(f"<details><summary>per-bin table ({len(est.bins)} rows)</summary>"
                     f"{frame_html(est.bins)}</details>")
    return _block(est.name, parts)


def _cut(rows: list[list[object]], what: str) -> tuple[list[list[object]], str]:
    if len(rows) <= MAX_ROWS:
        return rows, ""
    return rows[:MAX_ROWS], f"... {len(rows) - MAX_ROWS} more {what}"


def fit_html(fit: Any) -> str:
    """An annotator fit as an HTML block: sizes, fit statistics, status, prevalence, and
    each annotator's probability of reporting the true class (the confusion diagonals)."""
    classes = [fmt(c) for c in np.asarray(fit.classes).tolist()]
    head = (f"{len(fit.items)} items, {len(fit.annotators)} annotators, "
            f"{len(classes)} classes; loglik {fmt(fit.loglik)}, AIC {fmt(fit.aic, 2)}, "
            f"BIC {fmt(fit.bic, 2)}, {fit.n_iter} iterations")
    prev = [[f"group {g}" if len(fit.group_prevalence) > 1 else "prevalence", *row]
            for g, row in enumerate(np.asarray(fit.group_prevalence).tolist())]
    diag = [[fmt(a), *np.diagonal(c).tolist()] for a, c in
            zip(np.asarray(fit.annotators).tolist(), np.asarray(fit.confusion), strict=True)]
    diag, more = _cut(diag, "annotators")
    parts = [html.escape(head), _status_html(fit.status, fit.message,
                             getattr(fit, "statuses", ())),
             _table(["", *classes], prev, index_header=True),
             "P(observed = true), confusion[j, k, k]:",
             _table(["annotator", *classes], diag, index_header=True), html.escape(more)]
    return _block(f"{fit.model} fit by {fit.method}", parts)


def target_html(target: Any) -> str:
    """A Target as an HTML block: kind, shape, status, and its first rows."""
    frame = target.to_frame()
    rows = [[fmt(i), *vals] for i, vals in
            zip(frame.index.tolist(), frame.itertuples(index=False), strict=True)]
    rows, more = _cut(rows, "items")
    head = (f"{target.n_items} items, {target.n_classes} classes"
            + ("" if target.is_probability else "; rows leave the probability simplex"))
    parts = [html.escape(head), _status_html(target.status, target.message,
                             getattr(target, "statuses", ())),
             _table(["item", *[fmt(c) for c in frame.columns]], rows, index_header=True),
             html.escape(more)]
    return _block(f"Target ({target.kind})", parts)
