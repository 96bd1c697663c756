"""statsmodels-like summaries of annotator fits: :class:`Summary` and :func:`fit_summary`.

A :class:`Summary` is a header (model, method, sizes, fit statistics, status) and a few
compact tables; ``str(summary)`` is the printed report (at most 88 columns for the
usual sizes), ``_repr_html_`` the notebook view, ``.header`` and ``.tables`` the same
numbers for programs. The full long table of every parameter stays
:meth:`~noisycal.engines.results.AnnotatorFit.to_frame`.

Also here: the tidy parameter table behind ``to_frame`` and ``conf_int``
(:func:`parameter_frame`, :func:`parameter_intervals`) and the cached leave-one-item-out
cross-validation of a NUTS fit (:func:`fit_loo`), which both the summary and
:func:`noisycal.annotators.compare` read.
"""

from __future__ import annotations

import html
import textwrap
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._util.html import escape, fmt, frame_html
from .._util.stats import equal_tailed
from .._util.validation import check_level
from .density.arviz_export import extra_posterior
from .density.diagnostics import import_arviz, min_credible_draws

__all__ = ["Summary", "fit_summary", "fit_loo", "parameter_frame", "parameter_intervals",
           "WIDTH"]

#: Columns of the printed summary.
WIDTH = 88

#: Longest annotator or class label printed in a summary table (longer ones are cut).
MAX_LABEL = 18


@dataclass(frozen=True, eq=False)
class Summary:
    """A printable summary of a fit: a header and compact tables (never prints itself).

    Attributes
    ----------
    title : str
        ``'<model> fit by <method>'``.
    header : mapping
        Model, method, sizes, fit statistics, status and message by name (``None`` where
        a statistic does not apply or was not computed).
    tables : tuple of pandas.DataFrame
        Each with its title in ``attrs['title']`` (``'prevalence'``, ``'accuracy'``).
    """

    title: str
    header: Mapping[str, Any]
    tables: tuple[pd.DataFrame, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "header", MappingProxyType(dict(self.header)))
        object.__setattr__(self, "tables", tuple(self.tables))

    def table(self, title: str) -> pd.DataFrame:
        """The table whose ``attrs['title']`` is ``title``.

        Parameters
        ----------
        title : str

        Returns
        -------
        pandas.DataFrame
        """
        for t in self.tables:
            if t.attrs.get("title") == title:
                return t
        raise ValueError(f"title must be one of {[t.attrs.get('title') for t in self.tables]}"
                         f", got {title!r}")

    def __str__(self) -> str:
        rule, thin = "=" * WIDTH, "-" * WIDTH
        lines = [self.title.center(WIDTH).rstrip(), rule]
        pairs = [(k, _text(v)) for k, v in self.header.items()
                 if k not in ("message", "model", "method", "engine") and v is not None]
        half = (len(pairs) + 1) // 2
        for left, right in zip_longest(pairs[:half], pairs[half:]):
            cell = f"{left[0] + ':':<15}{left[1]:>26}"
            if right is not None:
                cell += f"    {right[0] + ':':<15}{right[1]:>26}"
            lines.append(cell)
        if self.header.get("message"):
            lines += textwrap.wrap(f"message: {self.header['message']}", WIDTH)
        if self.header.get("engine"):
            lines += textwrap.wrap(f"engine: {self.header['engine']}", WIDTH)
        for t in self.tables:
            lines += [thin, *textwrap.wrap(t.attrs.get("caption", t.attrs.get("title", "")),
                                           WIDTH)]
            lines += _frame_text(t).splitlines()
        lines.append(rule)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = [[k, v] for k, v in self.header.items() if v is not None and k != "message"]
        parts = [f"<b>{html.escape(self.title)}</b>",
                 frame_html(pd.DataFrame(head, columns=["", "value"]))]
        if self.header.get("message"):
            parts.append(f"<p>{escape(self.header['message'])}</p>")
        for t in self.tables:
            caption = t.attrs.get("caption", t.attrs.get("title", ""))
            parts += [f"<p>{html.escape(caption)}</p>", frame_html(t)]
        return "<div>" + "".join(parts) + "</div>"


def _text(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}" if abs(value) < 1e6 else f"{float(value):.4e}"
    return fmt(value)


def _frame_text(frame: pd.DataFrame) -> str:
    shown = frame.copy()
    for c in shown.columns:
        if shown[c].dtype == object:
            shown[c] = [str(v)[:MAX_LABEL] for v in shown[c]]
    formats = {c: (lambda v: f"{v:.0f}") for c in ("ess_bulk", "ess_tail")}
    formats.update({c: (lambda v: f"{v:.3f}") for c in ("r_hat",)})
    return shown.to_string(index=False, float_format=lambda v: f"{v:.4f}",
                           formatters={c: f for c, f in formats.items() if c in shown},
                           line_width=WIDTH)


# ---------------------------------------------------------------------- tables
def parameter_frame(fit: Any) -> pd.DataFrame:
    """Tidy table of every parameter entry of an annotator fit.

    Parameters
    ----------
    fit : AnnotatorFit

    Returns
    -------
    pandas.DataFrame
        Columns: parameter, group, annotator, true, observed, value.
    """
    rows = []
    for g, row in enumerate(fit.group_prevalence):
        for k, v in enumerate(row):
            rows.append(("prevalence", g, None, fit.classes[k], None, float(v)))
    for j, mat in enumerate(fit.confusion):
        for k in range(mat.shape[0]):
            for m in range(mat.shape[1]):
                rows.append(("confusion", None, fit.annotators[j], fit.classes[k],
                             fit.classes[m], float(mat[k, m])))
    frame = pd.DataFrame(rows, columns=["parameter", "group", "annotator", "true",
                                        "observed", "value"], dtype=object)
    frame["value"] = frame["value"].astype(np.float64)
    return frame


def parameter_intervals(fit: Any, draws: Mapping[str, Any], level: float) -> pd.DataFrame:
    """:func:`parameter_frame` with the equal-tailed ``level`` interval of ``draws``.

    Parameters
    ----------
    fit : AnnotatorFit
    draws : mapping
        ``{'prevalence': (D, L, K), 'confusion': (D, J, K, K)}``.
    level : float

    Returns
    -------
    pandas.DataFrame
        Also ``low`` and ``high``; ``attrs`` hold ``level`` and the interval ``kind``.
    """
    frame = parameter_frame(fit)
    prev = np.asarray(draws["prevalence"]).reshape(len(draws["prevalence"]), -1)
    conf = np.asarray(draws["confusion"]).reshape(len(draws["confusion"]), -1)
    lo, hi = equal_tailed(np.concatenate([prev, conf], axis=1), level, axis=0)
    frame["low"], frame["high"] = lo, hi
    frame.attrs["level"] = level
    frame.attrs["kind"] = "credible-eti" if fit.method == "nuts" else "bootstrap-percentile"
    return frame


# ---------------------------------------------------------------------- loo
def fit_loo(fit: Any) -> Any:
    """Pareto-smoothed leave-one-item-out cross-validation of a NUTS fit (cached on it).

    ``az.loo(fit.to_arviz(predictive=False), pointwise=True)``: each item's ratings are
    left out together (the per-item log-likelihood with the true class marginalised,
    :func:`noisycal.engines.density.arviz_export.item_loglik_draws`). Computed once per fit and
    kept with it, so :meth:`~noisycal.engines.results.AnnotatorFit.summary` shows the
    ``elpd_loo`` once :func:`noisycal.annotators.compare` (or this) has computed it.

    Parameters
    ----------
    fit : AnnotatorFit
        A NUTS fit that keeps its annotations (and used no gold labels).

    Returns
    -------
    arviz.ELPDData

    Raises
    ------
    ValueError
        For a fit without posterior draws, or without a per-item log-likelihood.
    """
    if fit.method != "nuts" or "chains" not in fit.details or fit.draws is None:
        raise ValueError(f"LOO needs posterior draws: this fit is {fit.method!r}; fit with "
                         "method='nuts'")
    cache = fit._boot
    if "loo" not in cache:
        idata = fit.to_arviz(predictive=False)
        if "log_likelihood" not in idata.groups():
            raise ValueError("LOO needs each item's log-likelihood, which this fit cannot "
                             f"give: {idata.attrs.get('log_likelihood', '')}")
        az = import_arviz()
        with warnings.catch_warnings():
            # a high Pareto k is reported in the result (``pareto_k``), not as a warning
            warnings.filterwarnings("ignore", message=r".*[Pp]areto", category=UserWarning)
            cache["loo"] = az.loo(idata, pointwise=True)
    return cache["loo"]


# ---------------------------------------------------------------------- summary
def fit_summary(fit: Any, *, level: float = 0.9, loo: bool | None = None) -> Summary:
    """The statsmodels-like :class:`Summary` of an annotator fit.

    Parameters
    ----------
    fit : AnnotatorFit
    level : float, default=0.9
        Interval level of the tables (intervals only when the fit has draws: bootstrap
        refits of an EM fit fitted with ``n_boot``, or at least
        :func:`~noisycal.engines.density.diagnostics.min_credible_draws` posterior draws).
    loo : bool, optional
        NUTS fits: compute ``elpd_loo`` (:func:`fit_loo`) when True; None shows it only
        when it was computed already; False never. True for a fit without posterior
        draws (EM, MLE, moments) is a ``ValueError``: PSIS-LOO needs them.

    Returns
    -------
    Summary
        Header: model, method, n_items, n_annotators, n_classes, n_ratings, n_params,
        loglik, then AIC and BIC (EM, MLE and moment fits) or draws, chains, max R-hat,
        divergences and elpd_loo, its se, p_loo and the number of Pareto k above 0.7
        (NUTS), iterations, converged, status, message and engine (the repr of
        ``fit.engine``, the option object that ran). Tables: ``prevalence``
        (class proportions) and ``accuracy`` (each annotator's probability of reporting
        the true class, ``confusion[j, k, k]``, per class and their unweighted mean),
        with ``low``/``high`` when there are draws and ``r_hat``, ``ess_bulk``,
        ``ess_tail`` (ArviZ, rank-normalised) for NUTS fits; a NUTS fit with posterior
        variables of its own (:func:`~noisycal.engines.density.arviz_export.extra_posterior`:
        the hierarchical model's population) adds a ``population`` table, one row per
        entry: ``parameter`` (the ArviZ name without its ``population_`` prefix), its
        coordinates (``true``, ``observed``), ``estimate``
        (the posterior mean), ``sd``, ``low``/``high``, ``r_hat``, ``ess_bulk``,
        ``ess_tail``.

    Raises
    ------
    ValueError
        For a ``level`` outside (0, 1), or ``loo=True`` on a fit without posterior draws.
    """
    level = check_level(level)
    if loo is not None and not isinstance(loo, bool | np.bool_):
        raise ValueError(f"loo must be True, False or None, got {loo!r}")
    nuts = fit.method == "nuts"
    if loo and not (nuts and "chains" in fit.details and fit.draws is not None):
        raise ValueError(f"loo: PSIS-LOO (elpd_loo) needs posterior draws, and this is "
                         f"a{'n' if fit.method[:1] in 'aeiou' else ''} {fit.method!r} fit "
                         "without them; fit with method='nuts' (a NUTS fit), or leave "
                         "loo=None and compare point fits by AIC/BIC "
                         "(nc.annotators.compare(..., ic='aic'))")
    draws = fit.draws
    if draws is not None and nuts and len(draws["prevalence"]) < min_credible_draws(level):
        draws = None
    ann = fit.annotations
    header: dict[str, Any] = {
        "model": fit.model, "method": fit.method, "n_items": fit.n_items,
        "n_annotators": len(fit.annotators), "n_classes": len(fit.classes),
        "n_ratings": None if ann is None else int(ann.n_ratings),
        "n_params": int(fit.n_params), "loglik": float(fit.loglik)}
    if nuts:
        header.update(_nuts_header(fit, loo))
    else:
        header.update(aic=float(fit.aic), bic=float(fit.bic), iterations=int(fit.n_iter))
    header.update(converged=bool(fit.converged), status=fit.status, message=fit.message,
                  engine=None if getattr(fit, "engine", None) is None else repr(fit.engine))
    kind = "credible-eti" if nuts else "bootstrap-percentile"
    caption = f" ({level * 100:g}% {kind} intervals)" if draws is not None else ""
    tables = [_prevalence_table(fit, draws, level), _accuracy_table(fit, draws, level)]
    tables[0].attrs.update(title="prevalence", caption="prevalence" + caption)
    tables[1].attrs.update(title="accuracy", caption="accuracy, P(observed = true) = "
                           "confusion[j, k, k]; 'mean' averages the classes" + caption)
    if nuts and "chains" in fit.details and fit.draws is not None:
        _add_mcmc_columns(tables, fit)
        extra = extra_posterior(fit)
        if extra:
            tables.append(_extra_table(fit, extra, level, draws is not None))
            tables[-1].attrs.update(title="population", caption="population (posterior "
                                    "mean, sd)" + caption)
    return Summary(f"{fit.model} fit by {fit.method}", header, tuple(tables))


def _nuts_header(fit: Any, loo: bool | None) -> dict[str, Any]:
    det = fit.details
    out: dict[str, Any] = {
        "draws": None if fit.draws is None else len(fit.draws["prevalence"]),
        "chains": det.get("chains"), "max_r_hat": det.get("max_rhat"),
        "divergences": det.get("num_divergences"),
        "elpd_loo": None, "elpd_loo_se": None, "p_loo": None, "pareto_k_high": None}
    if loo or (loo is None and "loo" in fit._boot):
        res = fit_loo(fit)
        out.update(elpd_loo=float(res["elpd_loo"]), elpd_loo_se=float(res["se"]),
                   p_loo=float(res["p_loo"]),
                   pareto_k_high=int(np.sum(np.asarray(res["pareto_k"]) > 0.7)))
    return out


def _with_interval(frame: pd.DataFrame, values: np.ndarray | None, level: float
                   ) -> pd.DataFrame:
    if values is not None:
        frame["low"], frame["high"] = equal_tailed(values, level, axis=0)
    return frame


def _prevalence_table(fit: Any, draws: Mapping[str, Any] | None, level: float
                      ) -> pd.DataFrame:
    gp = np.asarray(fit.group_prevalence)
    L, K = gp.shape
    frame = pd.DataFrame({"class": np.tile(np.asarray(fit.classes, dtype=object), L),
                          "estimate": gp.reshape(-1)})
    if L > 1:
        frame.insert(0, "group", np.repeat(np.arange(L), K))
    vals = None if draws is None else np.asarray(draws["prevalence"]).reshape(
        len(draws["prevalence"]), -1)
    return _with_interval(frame, vals, level)


def _accuracy_values(confusion: np.ndarray) -> np.ndarray:
    """(..., J, K, K) -> (..., J * (K + 1)): each annotator's diagonal, then its mean."""
    diag = np.diagonal(confusion, axis1=-2, axis2=-1)
    both = np.concatenate([diag, diag.mean(-1, keepdims=True)], axis=-1)
    return both.reshape(*both.shape[:-2], -1)


def _accuracy_table(fit: Any, draws: Mapping[str, Any] | None, level: float
                    ) -> pd.DataFrame:
    J, K = fit.confusion.shape[:2]
    labels = [*np.asarray(fit.classes, dtype=object).tolist(), "mean"]
    frame = pd.DataFrame({
        "annotator": np.repeat(np.asarray(fit.annotators, dtype=object), K + 1),
        "class": np.array(labels * J, dtype=object),
        "estimate": _accuracy_values(np.asarray(fit.confusion))})
    vals = None if draws is None else _accuracy_values(np.asarray(draws["confusion"]))
    return _with_interval(frame, vals, level)


def _extra_table(fit: Any, extra: Mapping[str, tuple[np.ndarray, tuple[str, ...]]],
                 level: float, intervals: bool) -> pd.DataFrame:
    """One row per entry of a model's own posterior variables, with R-hat and ESS."""
    labels = {"class": fit.classes, "true": fit.classes, "observed": fit.classes,
              "annotator": fit.annotators}
    dims = list(dict.fromkeys(d for _, vdims in extra.values() for d in vdims))
    columns: dict[str, list] = {"parameter": [], **{d: [] for d in dims}}
    flat = []
    for name, (values, vdims) in extra.items():
        for idx in np.ndindex(*values.shape[1:]):
            columns["parameter"].append(name.removeprefix("population_"))
            where = dict(zip(vdims, idx, strict=True))
            for d in dims:
                columns[d].append(labels[d][where[d]] if d in where else None)
        flat.append(values.reshape(len(values), -1))
    values = np.concatenate(flat, axis=1)
    frame = pd.DataFrame({k: np.asarray(v, dtype=object) for k, v in columns.items()})
    frame["estimate"] = values.mean(0)
    frame["sd"] = values.std(0, ddof=1) if len(values) > 1 else np.nan
    if intervals:
        _with_interval(frame, values, level)
    _mcmc_columns(frame, values, int(fit.details["chains"]))
    return frame


def _mcmc_columns(table: pd.DataFrame, values: np.ndarray, c: int) -> None:
    """R-hat and bulk/tail ESS of every column of ``values`` (n_draws, P), split by chain."""
    az = import_arviz()
    by_chain = values.reshape(c, -1, values.shape[-1])
    data = az.convert_to_dataset({"x": by_chain})
    with warnings.catch_warnings():
        # constant rows (a class no annotator confuses) give NaN R-hat: reported as NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        rhat = (np.asarray(az.rhat(data, method="rank")["x"]) if c > 1
                else np.full(values.shape[-1], np.nan))
        table["r_hat"] = rhat
        table["ess_bulk"] = np.asarray(az.ess(data, method="bulk")["x"])
        table["ess_tail"] = np.asarray(az.ess(data, method="tail")["x"])


def _add_mcmc_columns(tables: list[pd.DataFrame], fit: Any) -> None:
    """R-hat and bulk/tail ESS of every table row, from the draws split by chain."""
    c = int(fit.details["chains"])
    prev = np.asarray(fit.draws["prevalence"], np.float64)
    acc = _accuracy_values(np.asarray(fit.draws["confusion"], np.float64))
    for table, values in zip(tables, (prev.reshape(len(prev), -1), acc), strict=True):
        _mcmc_columns(table, values, c)
