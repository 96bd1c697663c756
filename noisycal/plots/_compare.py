"""Plot of a model comparison: each model's criterion with its standard error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._layout import check_ax, check_title, set_title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["comparison_plot"]


def comparison_plot(result: Any, ax: Axes | None = None, *, title: str | None = None
                    ) -> Axes:
    """Each model's criterion with its standard error, best model on top.

    ``ic='loo'``: ``elpd_loo`` (dot) with ``± se`` (bar) and, for every model but the
    best, the difference to the best ``elpd_loo - elpd_diff`` (open triangle) with
    ``± dse`` (grey bar), as in ``arviz.plot_compare``; higher is better. ``ic='aic'``
    or ``'bic'``: the criterion (no standard error); lower is better. The weights are
    written beside the model names.

    Parameters
    ----------
    result : ComparisonResult
        From :func:`noisycal.annotators.compare`.
    ax : matplotlib Axes, optional
        Drawn on a new figure when None.
    title : str, optional
        Default: the criterion and how the weights were made.

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    check_ax(ax)
    check_title(title)
    table = getattr(result, "table", None)
    ic = getattr(result, "ic", None)
    if table is None or ic not in ("loo", "aic", "bic"):
        raise ValueError("result must be a ComparisonResult (noisycal.annotators.compare), "
                         f"got {type(result).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 0.6 * len(table) + 1.5))
    y = np.arange(len(table))[::-1].astype(np.float64)
    if ic == "loo":
        elpd, se = table["elpd_loo"].to_numpy(), table["se"].to_numpy()
        ax.errorbar(elpd, y, xerr=se, fmt="o", color="C0", capsize=3, label="elpd_loo ± se")
        rest = table["rank"].to_numpy() > 0
        diff = elpd[0] - table["elpd_diff"].to_numpy()
        ax.errorbar(diff[rest], y[rest] - 0.2, xerr=table["dse"].to_numpy()[rest], fmt="^",
                    mfc="none", color="0.4", capsize=3, label="difference to best ± dse")
        ax.axvline(elpd[0], color="0.7", ls="--", lw=1)
        ax.set_xlabel("elpd_loo (log score, higher is better)")
    else:
        ax.plot(table[ic].to_numpy(), y, "o", color="C0", label=ic)
        ax.set_xlabel(f"{ic.upper()} (lower is better)")
    ax.set_yticks(y, [f"{m} (w={w:.2f})" for m, w in zip(table["model"], table["weight"],
                                                           strict=True)])
    ax.set_ylim(-0.8, len(table) - 0.2)
    ax.legend(loc="best", fontsize="small")
    set_title(ax, title if title is not None else
              f"model comparison: {ic}, {getattr(result, 'weights', '')} weights")
    return ax
