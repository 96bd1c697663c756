"""Comparison of annotator models fitted to the same ratings: :func:`compare`.

NUTS fits are compared by Pareto-smoothed leave-one-item-out cross-validation (each
item's ratings are left out together, its true class marginalised), through
``arviz.compare``; EM and MLE fits by AIC or BIC. The NC-ECE of a classifier under each
model, side by side and model-averaged, is added by
:func:`noisycal.workflows.comparison.compare_calibration` (the metrics sit above the annotator
models in the package layout, so this module cannot compute them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._util.html import escape, frame_html
from ..._util.statuses import join_messages, ordered_statuses
from ...annotations.core import Annotations
from ...annotations.matching import same_ratings
from ...engines.results import AnnotatorFit, check_fit, fit_ids
from ...engines.summary import fit_loo

__all__ = ["compare", "ComparisonResult", "PARETO_K_HIGH"]

#: A Pareto k above this marks an item whose leave-one-out estimate is unreliable.
PARETO_K_HIGH = 0.7

_ICS = ("loo", "aic", "bic")
_WEIGHTS = ("stacking", "BB-pseudo-BMA", "pseudo-BMA")


@dataclass(frozen=True, eq=False)
class ComparisonResult:
    """Result of :func:`compare` (and :func:`noisycal.workflows.comparison.compare_calibration`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per model, best first. ``ic='loo'``: ``model``, ``rank``, ``elpd_loo``,
        ``p_loo``, ``elpd_diff`` (to the best model), ``weight``, ``se``, ``dse`` (se of
        the difference), ``warning`` (ArviZ's), ``pareto_k_high`` (items with Pareto k
        above :data:`PARETO_K_HIGH`), ``n_items`` and ``fit_status``. ``ic='aic'`` or
        ``'bic'``: ``model``, ``rank``, the criterion, its difference to the best model
        (``aic_diff``/``bic_diff``), ``weight`` (Akaike weights
        ``exp(-diff / 2)`` normalised), ``loglik``, ``n_params`` and ``fit_status``.
    ic : {'loo', 'aic', 'bic'}
    weights : str
        How the weights were made (``'stacking'``, ``'BB-pseudo-BMA'``, ``'pseudo-BMA'``
        or ``'akaike'``).
    status : str
        The first of ``statuses``: ``'ok'``, a compared fit's status, or
        ``'pareto_k_high'`` (some model has items with Pareto k above
        :data:`PARETO_K_HIGH`: its elpd_loo is unreliable; refit, or use K-fold).
    message : str
        Why: the models whose fits are flagged, with their messages, and the Pareto k.
    nc_ece : pandas.DataFrame or None
        With predictions (:func:`noisycal.workflows.comparison.compare_calibration`): the NC-ECE
        under each model (``model``, ``value``, ``plugin``, ``low``, ``high``, ``kind``,
        ``status``).
    averaged : Estimate or None
        The model-averaged NC-ECE (its estimand in ``averaged.estimand``).
    statuses : tuple of str
        Every status that applies, most severe first: the statuses of every compared fit
        (but ``'boundary'``, a usable fit; the table's ``fit_status`` shows it) and
        ``'pareto_k_high'``; ``('ok',)`` when none does, so ``status == statuses[0]``.
        A criterion of a fit that did not converge (or is otherwise flagged) is not the
        model's, so the comparison is not 'ok'.

    See Also
    --------
    noisycal.plots.comparison_plot : the criteria with their standard errors.
    """

    table: pd.DataFrame
    ic: str
    weights: str
    status: str = "ok"
    message: str = ""
    nc_ece: pd.DataFrame | None = field(default=None, repr=False)
    averaged: Any = None
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])

    @property
    def ranks(self) -> dict[str, int]:
        """Each model's rank (0 is the best)."""
        return dict(zip(self.table["model"], self.table["rank"].astype(int), strict=True))

    @property
    def model_weights(self) -> dict[str, float]:
        """Each model's weight (they sum to 1)."""
        return dict(zip(self.table["model"], self.table["weight"].astype(float),
                        strict=True))

    def to_frame(self) -> pd.DataFrame:
        """The ``table``, joined with the per-model NC-ECE (``nc_ece_*`` columns) when
        there is one."""
        out = self.table.copy()
        if self.nc_ece is not None:
            extra = self.nc_ece.set_index("model").add_prefix("nc_ece_")
            out = out.join(extra, on="model")
        return out

    def summary(self) -> pd.DataFrame:
        """:meth:`to_frame` with ``ic``, ``weights``, ``status`` and ``message`` in
        ``attrs`` (never prints)."""
        out = self.to_frame()
        out.attrs.update(ic=self.ic, weights=self.weights, status=self.status,
                         statuses=self.statuses, message=self.message)
        return out

    def __repr__(self) -> str:
        cols = [c for c in self.table.columns if c not in ("warning", "fit_status")]
        status = (f"statuses={self.statuses!r}" if len(self.statuses) > 1
                  else f"status={self.status!r}")
        text = (f"ComparisonResult(ic={self.ic!r}, weights={self.weights!r}, {status})\n"
                + self.table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if self.averaged is not None:
            text += f"\nmodel-averaged {self.averaged!r}"
        if self.message:
            text += f"\n{self.message}"
        return text

    def _repr_html_(self) -> str:
        parts = [f"<b>model comparison ({escape(self.ic)}, weights {escape(self.weights)}"
                 f"), status {escape(', '.join(self.statuses))}</b>",
                 frame_html(self.to_frame())]
        if self.averaged is not None:
            parts.append(f"<p>model-averaged {escape(repr(self.averaged))}</p>")
        if self.message:
            parts.append(f"<p>{escape(self.message)}</p>")
        return "<div>" + "".join(parts) + "</div>"


def check_fits(fits: Any, annotations: Any) -> dict[str, AnnotatorFit]:
    """Check that ``fits`` maps names to annotator fits of the same ratings, on one scale.

    Each fit meets ``annotations`` through :meth:`AnnotatorFit.match` and must have been
    fitted on exactly these ratings: the same items, and for every item the same labels
    from the same annotators (who gave each rating counts; items, annotators and classes
    may be listed in any order). Fits with gold labels (``fit(..., gold=...)``) are not
    compared with fits without: their likelihoods include the known classes, so their
    criteria are on another scale.

    Parameters
    ----------
    fits : dict of str to AnnotatorFit
        At least two.
    annotations : Annotations
        The ratings every fit was fitted on.

    Returns
    -------
    dict of str to AnnotatorFit

    Raises
    ------
    ValueError
        Naming ``fits`` (and the fit, and the first difference found).
    """
    if not isinstance(fits, Mapping) or len(fits) < 2:
        raise ValueError("fits must be a dict of at least two names to AnnotatorFit, got "
                         f"{type(fits).__name__}"
                         + (f" of {len(fits)}" if isinstance(fits, Mapping) else ""))
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations, got "
                         f"{type(annotations).__name__}")
    out = {}
    for name, fit in fits.items():
        if not isinstance(name, str) or not isinstance(fit, AnnotatorFit):
            raise ValueError(f"fits must map str names to AnnotatorFit, got {name!r}: "
                             f"{type(fit).__name__}")
        check_fit(fit, "be compared")
        try:
            why = same_ratings(fit.match(annotations), fit_ids(fit))
        except ValueError as exc:
            why = str(exc)
        if why is not None:
            raise ValueError(f"fits must all be fitted on annotations: {name!r} was fitted "
                             f"on other items or ratings ({fit.n_items} items): {why}")
        out[name] = fit
    gold = {name: bool(fit.details.get("gold", False)) for name, fit in out.items()}
    if len(set(gold.values())) > 1:
        raise ValueError(f"fits: {[n for n, g in gold.items() if g]} were fitted with gold "
                         f"labels and {[n for n, g in gold.items() if not g]} without; their "
                         "likelihoods include the known classes or not, so their criteria "
                         "are on different scales (fit every model with the same gold=, or "
                         "none)")
    return out


def compare(fits: Mapping[str, AnnotatorFit], annotations: Annotations, *,
            ic: str = "loo", weights: str = "stacking") -> ComparisonResult:
    """Compare annotator models fitted to the same ratings.

    ``ic='loo'`` (NUTS fits of any Dawid–Skene family model): the expected log
    predictive density of a left-out *item* (all its ratings, its true class
    marginalised), estimated by Pareto-smoothed importance sampling leave-one-out
    cross-validation (``arviz.loo`` on each fit's per-item log-likelihood, cached on the
    fit) and compared with ``arviz.compare``: ``elpd_diff`` to the best model with its
    standard error ``dse``, and weights (stacking by default: the combination of the
    models' predictive distributions that maximises the leave-one-out log score).
    ``ic='aic'`` or ``'bic'`` (EM or MLE fits, point estimates): the criterion, its
    difference to the best model and Akaike weights.

    Parameters
    ----------
    fits : dict of str to AnnotatorFit
        At least two fits of the same ``annotations`` (checked: :func:`check_fits`).
    annotations : Annotations
        The ratings the models were fitted on: the same items and, for every item, the
        same labels from the same annotators (in any order).
    ic : {'loo', 'aic', 'bic'}, default='loo'
    weights : {'stacking', 'BB-pseudo-BMA', 'pseudo-BMA'}, default='stacking'
        ``ic='loo'`` only: ``arviz.compare``'s ``method``.

    Returns
    -------
    ComparisonResult
        Status ``'pareto_k_high'`` when a model has items with Pareto k above 0.7; the
        statuses of the compared fits (but ``'boundary'``) when they are not 'ok', the
        most severe first (``statuses`` keeps them all).

    Raises
    ------
    ValueError
        ``ic='loo'`` with a fit without posterior draws (LOO needs them: fit with
        ``method='nuts'``, or compare by ``ic='aic'``); ``ic='aic'``/``'bic'`` with a
        NUTS fit; fits of other ratings than ``annotations`` (another annotator behind
        a rating counts), or fits with gold labels alongside fits without (naming
        ``fits``).

    References
    ----------
    Vehtari, Gelman & Gabry (2017), "Practical Bayesian model evaluation using
    leave-one-out cross-validation and WAIC"; Yao, Vehtari, Simpson & Gelman (2018),
    "Using stacking to average Bayesian predictive distributions".

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 3)
    >>> ann = nc.simulate.dawid_skene(200, [0.5, 0.5], conf, seed=0).annotations
    >>> fits = {"ds": nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=2)),
    ...         "one_coin": nc.OneCoinDawidSkene().fit(ann, method=nc.engines.EM(n_starts=2))}
    >>> res = nc.annotators.compare(fits, ann, ic="bic")
    >>> round(sum(res.model_weights.values()), 12)
    1.0
    """
    if ic not in _ICS:
        raise ValueError(f"ic must be one of {_ICS}, got {ic!r}")
    if weights not in _WEIGHTS:
        raise ValueError(f"weights must be one of {_WEIGHTS}, got {weights!r}")
    fits = check_fits(fits, annotations)
    if ic == "loo":
        bad = [n for n, f in fits.items() if f.method != "nuts" or f.draws is None]
        if bad:
            raise ValueError(f"fits: LOO needs posterior draws, but {bad} are not NUTS fits "
                             "(fit with method='nuts', or compare EM/MLE fits with "
                             "ic='aic' or ic='bic')")
        return _loo_comparison(fits, weights)
    bad = [n for n, f in fits.items() if f.method not in ("em", "mle")]
    if bad:
        raise ValueError(f"fits: ic={ic!r} compares maximised likelihoods (EM or MLE fits), "
                         f"but {bad} are not; compare NUTS fits with ic='loo'")
    return _point_comparison(fits, ic)


def _loo_comparison(fits: dict[str, AnnotatorFit], weights: str) -> ComparisonResult:
    import warnings

    from ...engines.density.diagnostics import import_arviz

    az = import_arviz()
    loos = {name: fit_loo(fit) for name, fit in fits.items()}
    with warnings.catch_warnings():
        # high Pareto k is reported in the table and the status, not as a warning
        warnings.filterwarnings("ignore", message=r".*[Pp]areto", category=UserWarning)
        table = az.compare(loos, ic="loo", method=weights, scale="log")
    table = table.drop(columns=[c for c in ("scale",) if c in table]).rename_axis("model")
    table = table.reset_index()
    high = {n: int(np.sum(np.asarray(r["pareto_k"]) > PARETO_K_HIGH)) for n, r in loos.items()}
    table["pareto_k_high"] = table["model"].map(high).astype(int)
    table["n_items"] = table["model"].map({n: f.n_items for n, f in fits.items()})
    table["fit_status"] = table["model"].map({n: f.status for n, f in fits.items()})
    table["rank"] = table["rank"].astype(int)
    bad = {n: k for n, k in high.items() if k}
    statuses, message = _fit_statuses(fits)
    if bad:
        statuses = ordered_statuses((*statuses, "pareto_k_high"))
        message = join_messages(message, f"items with Pareto k > {PARETO_K_HIGH} ({bad}): "
                                "those models' elpd_loo is unreliable; refit them on more "
                                "data or use K-fold cross-validation")
    return ComparisonResult(table, "loo", weights, statuses[0], message, statuses=statuses)


def _fit_statuses(fits: dict[str, AnnotatorFit]) -> tuple[tuple[str, ...], str]:
    """The compared fits' statuses (but 'boundary'), most severe first, and a message
    naming each flagged model."""
    statuses, parts = [], []
    for name, fit in fits.items():
        own = [s for s in getattr(fit, "statuses", (fit.status,)) if s not in ("ok",
                                                                            "boundary")]
        if own:
            statuses += own
            parts.append(f"model {name!r}: the fit's status is {', '.join(own)}"
                         + (f" ({fit.message})" if fit.message else ""))
    if parts:
        parts.append("a flagged fit's criterion need not be its model's (a fit that did "
                     "not converge is not the model's maximum or posterior): refit before "
                     "comparing")
    return ordered_statuses(statuses), "; ".join(parts)


def _point_comparison(fits: dict[str, AnnotatorFit], ic: str) -> ComparisonResult:
    names = list(fits)
    value = np.array([getattr(fits[n], ic) for n in names], np.float64)
    diff = value - value.min()
    w = np.exp(-0.5 * diff)
    table = pd.DataFrame({"model": names, ic: value, f"{ic}_diff": diff, "weight": w / w.sum(),
                          "loglik": [fits[n].loglik for n in names],
                          "n_params": [fits[n].n_params for n in names],
                          "fit_status": [fits[n].status for n in names]})
    table = table.sort_values(ic, kind="stable").reset_index(drop=True)
    table.insert(1, "rank", np.arange(len(table)))
    statuses, message = _fit_statuses(fits)
    return ComparisonResult(table, ic, "akaike", statuses[0], message, statuses=statuses)
