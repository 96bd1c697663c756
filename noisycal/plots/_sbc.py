"""Rank histograms of simulation-based calibration (:func:`noisycal.annotators.sbc`)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sbc_rank_histogram"]

#: Most panels drawn unless ``params=`` picks them.
MAX_PANELS = 16


def sbc_rank_histogram(result: Any, params: list[str] | None = None, *,
                       n_bins: int | None = None, ax: Any = None) -> np.ndarray:
    """Histogram of the SBC ranks of each parameter, with the band uniform ranks fill.

    Each panel shows the counts of the ranks in ``n_bins`` bins, the expected count
    under uniformity (line) and its central 99% binomial band (shaded), as in Talts et
    al. (2018), "Validating Bayesian Inference Algorithms with Simulation-Based
    Calibration"; the title gives the parameter and its chi-square and ECDF p-values.

    Parameters
    ----------
    result : SBCResult
        From :func:`noisycal.annotators.sbc`.
    params : list of str, optional
        Parameters (columns of ``result.ranks``) to draw; default all, at most 16.
    n_bins : int, optional
        Default: the chi-square test's bins (``result.tests['chi2_df'] + 1``).
    ax : matplotlib Axes or array of Axes, optional
        One per parameter; default a new figure (four panels per row).

    Returns
    -------
    ndarray of matplotlib Axes
    """
    from scipy.stats import binom

    ranks = getattr(result, "ranks", None)
    if ranks is None or not hasattr(result, "n_draws"):
        raise ValueError(f"result must be an SBCResult, got {type(result).__name__}")
    names = list(ranks.columns) if params is None else list(params)
    unknown = [p for p in names if p not in ranks.columns]
    if unknown:
        raise ValueError(f"params names unknown parameters {unknown}; known: "
                         f"{list(ranks.columns)}")
    if params is None:
        names = names[:MAX_PANELS]
    L, N = int(result.n_draws), len(ranks)
    B = int(result.tests["chi2_df"].iloc[0]) + 1 if n_bins is None else int(n_bins)
    if B < 2 or B > L + 1:
        raise ValueError(f"n_bins must be in [2, {L + 1}], got {B}")
    if ax is None:
        import matplotlib.pyplot as plt

        cols = min(4, len(names))
        rows = -(-len(names) // cols)
        _, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.4 * rows), squeeze=False)
        axes = axes.ravel()
        for extra in axes[len(names):]:
            extra.set_visible(False)
    else:
        axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
        if axes.size < len(names):
            raise ValueError(f"ax must hold at least {len(names)} Axes, got {axes.size}")
    width = np.bincount(np.arange(L + 1) * B // (L + 1), minlength=B)
    for a, name in zip(axes, names, strict=False):
        counts = np.bincount(ranks[name].to_numpy() * B // (L + 1), minlength=B)
        share = width / (L + 1)
        lo, hi = binom.ppf(0.005, N, share), binom.ppf(0.995, N, share)
        x = np.arange(B)
        a.fill_between(x, lo, hi, step="mid", color="0.85", label="99% band")
        a.step(x, N * share, where="mid", color="0.4", lw=1)
        a.bar(x, counts, width=0.9, color="C0")
        p = result.tests.loc[name] if name in result.tests.index else None
        title = name if p is None else (f"{name}\nchi2 p={p['chi2_p']:.2g}, "
                                        f"ecdf p={p['ecdf_p']:.2g}")
        a.set_title(title, fontsize=8)
        a.set_xticks([])
    return axes[:len(names)]
