"""Annotation-budget planning: the NC-ECE interval width each (items x ratings) budget reaches.

:func:`plan_annotations` answers, by simulation, how many items and how many ratings per
item bring the library's default NC-ECE interval ("Noisy-Label Calibration with Multiple
Unreliable Labels") to a given width for a classifier and assumed annotator channels.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._util.jax import as_numpy_rng
from .._util.statuses import join_messages, ordered_statuses
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_array,
    check_int,
    check_level,
    check_n_bins,
    check_probs,
    check_seed,
)
from ..annotations.core import Annotations
from ..annotators.dawid_skene import DawidSkene
from ..metrics import ece
from ..targets.target import corrected, from_matrix

__all__ = ["AnnotationPlan", "BudgetChoice", "plan_annotations", "TRUTHS"]

#: The named truth models of :func:`plan_annotations` (an array of class probabilities
#: is the other choice).
TRUTHS = ("probs",)

#: Width quantiles of the plan's table (besides the median).
QUANTILES = (0.1, 0.9)

#: Tolerance of a channel row's sum and of a truth row's sum.
ROW_ATOL = 1e-6

#: Default of :meth:`AnnotationPlan.smallest_budget`'s ``max_share_not_ok``: a cell is
#: chosen only when every one of its simulated analyses had status 'ok'.
MAX_SHARE_NOT_OK = 0.0


@dataclasses.dataclass(frozen=True)
class BudgetChoice:
    """The cheapest budget of a plan whose median interval width reaches a target width.

    Attributes
    ----------
    n_items, ratings_per_item, n_ratings : int or None
        The chosen cell (``n_ratings = n_items * ratings_per_item``, the cost); None when
        no cell reaches the width with at most ``max_share_not_ok`` non-ok simulations.
    median_width : float
        The chosen cell's median width (NaN when none is chosen).
    width : float
        The target width.
    status : str
        ``statuses[0]``: 'ok'; 'width_not_reached' or 'share_not_ok_exceeded' (no cell
        chosen); ``'channels_<s>'`` when the plan's channels came from a fit with status
        ``s``; or the most severe status of the chosen cell's simulated Estimates (e.g.
        'weak_channels') when any of them was not ok.
    message : str
    statuses : tuple of str
        Every status that applies, without repeats: the channel fit's (prefixed) first,
        then the choice's own, then the chosen cell's simulations' statuses, most severe
        first; ``('ok',)`` when none.
    share_not_ok : float
        The chosen cell's share of simulations whose status is not 'ok' (NaN when none is
        chosen).
    """

    n_items: int | None
    ratings_per_item: int | None
    n_ratings: int | None
    median_width: float
    width: float
    status: str
    message: str
    statuses: tuple[str, ...] = ("ok",)
    share_not_ok: float = float("nan")


@dataclasses.dataclass(frozen=True)
class AnnotationPlan:
    """Simulated NC-ECE interval widths over a grid of annotation budgets.

    Attributes
    ----------
    n_items, ratings_per_item : ndarray of shape (n_cells,)
        The budget of each cell (all pairs of the two grids, items-major).
    lower, upper : ndarray of shape (n_cells, n_sims)
        The interval of each simulated data set.
    statuses : tuple of tuple of str
        Each simulation's Estimate status, per cell.
    population : float
        The truth-based population binned ECE on the pool (the estimand's value).
    width : float
        The target width given to :func:`plan_annotations`.
    level : float
    truth : str
        The truth model ('probs' or 'given').
    status : str
        ``'channels_<s>'`` when the assumed channels came from a fit (``channels=``) whose
        status ``s`` is not 'ok' (its first status), else 'ok'. It concerns the channels
        only: the simulations' statuses are in :attr:`statuses` and in every
        :class:`BudgetChoice`.
    message : str
        The fit's message when :attr:`status` is not 'ok'.
    channel_statuses : tuple of str
        The fit's statuses (``('ok',)`` for channels given as an array); each travels,
        prefixed ``'channels_'``, into every :class:`BudgetChoice`.
    """

    n_items: np.ndarray
    ratings_per_item: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    statuses: tuple[tuple[str, ...], ...]
    population: float
    width: float
    level: float
    truth: str
    status: str = "ok"
    message: str = ""
    channel_statuses: tuple[str, ...] = ("ok",)

    @property
    def widths(self) -> np.ndarray:
        """Interval widths ``upper - lower``, shape (n_cells, n_sims)."""
        return self.upper - self.lower

    @property
    def covered(self) -> np.ndarray:
        """Whether each interval holds :attr:`population`, shape (n_cells, n_sims)."""
        return (self.lower <= self.population) & (self.population <= self.upper)

    def to_frame(self) -> pd.DataFrame:
        """One row per budget cell.

        Returns
        -------
        pandas.DataFrame
            Columns n_items, ratings_per_item, n_ratings, median_width, width_q10,
            width_q90, share_not_ok (simulations whose Estimate status is not 'ok'),
            coverage (share of intervals holding :attr:`population`) and n_sims.
        """
        w = self.widths
        q = np.quantile(w, QUANTILES, axis=1)
        return pd.DataFrame({
            "n_items": self.n_items, "ratings_per_item": self.ratings_per_item,
            "n_ratings": self.n_items * self.ratings_per_item,
            "median_width": np.median(w, axis=1), "width_q10": q[0], "width_q90": q[1],
            "share_not_ok": [np.mean([s != "ok" for s in row]) for row in self.statuses],
            "coverage": self.covered.mean(axis=1), "n_sims": w.shape[1],
        })

    def smallest_budget(self, width: float | None = None, *,
                        max_share_not_ok: float = MAX_SHARE_NOT_OK) -> BudgetChoice:
        """The cheapest cell whose median width is at most ``width`` and whose analyses are ok.

        Cost is the number of ratings, ``n_items * ratings_per_item``; ties go to the
        smaller median width, then to fewer ratings per item. A cell whose share of
        simulations with a non-ok Estimate status exceeds ``max_share_not_ok`` is not
        chosen: its width is that of an interval the analysis itself would flag.

        Parameters
        ----------
        width : float, optional
            Positive target width; default the plan's :attr:`width`.
        max_share_not_ok : float, default=0.0
            Largest share of a cell's simulations whose status is not 'ok' that still lets
            the cell be chosen, in [0, 1]. The default 0 asks that every simulated analysis
            of the chosen budget be ok, so that an 'ok' choice means the planned width is
            one the analysis reported without a flag; a flag in a few simulations out of
            ``n_sims`` may be chance, so raise it (e.g. 0.1) to accept such cells: the
            choice then carries their statuses.

        Returns
        -------
        BudgetChoice
            Status 'width_not_reached' (cell None) when no cell's median width reaches
            ``width``, the message naming the narrowest cell; 'share_not_ok_exceeded'
            (cell None) when the cells that reach it all have more non-ok simulations than
            ``max_share_not_ok``, the message naming the cheapest of them, its share and
            its statuses; else the chosen cell, with the most severe status of its
            simulations when any was not ok (the message gives their share). A non-ok
            :attr:`status` of the plan (its channels' fit) comes first.
        """
        width = self.width if width is None else _check_width(width)
        limit = _check_share(max_share_not_ok)
        t = self.to_frame()
        t["cell"] = np.arange(len(t))
        reach = t[t["median_width"] <= width].sort_values(
            ["n_ratings", "median_width", "ratings_per_item"])
        ours = tuple(f"channels_{s}" for s in self.channel_statuses if s != "ok")
        if reach.empty:
            best = t.loc[t["median_width"].idxmin()] if t["median_width"].notna().any() \
                else None
            where = "no cell has a finite median width" if best is None else (
                f"the narrowest median width is {best['median_width']:.4g} at "
                f"{int(best['n_items'])} items x {int(best['ratings_per_item'])} ratings")
            return self._no_choice(width, ours, status="width_not_reached",
                                   message=f"no budget of the grid reaches a median width of "
                                   f"{width:.4g}: {where}; extend the grid")
        fine = reach[reach["share_not_ok"] <= limit]
        if fine.empty:
            row = reach.iloc[0]
            return self._no_choice(
                width, ours, status="share_not_ok_exceeded",
                message=f"every budget that reaches a median width of {width:.4g} has a "
                f"share of non-ok simulations above max_share_not_ok={limit:g}: the cheapest, "
                f"{_cell_text(row, self.statuses[int(row['cell'])])}; raise "
                "max_share_not_ok to accept it, or extend the grid")
        row = fine.iloc[0]
        cell = self.statuses[int(row["cell"])]
        own = tuple(s for s in ordered_statuses(cell) if s != "ok")
        message = "" if not own else (
            f"{_cell_text(row, cell)}: the analysis flags the planned width in that share "
            "of data sets")
        statuses = ours + own or ("ok",)
        return BudgetChoice(int(row["n_items"]), int(row["ratings_per_item"]),
                            int(row["n_ratings"]), float(row["median_width"]), width,
                            statuses[0], join_messages(self.message, message), statuses,
                            float(row["share_not_ok"]))

    def _no_choice(self, width: float, ours: tuple[str, ...], status: str, message: str
                   ) -> BudgetChoice:
        """A choice of no cell, with the channel fit's statuses first."""
        statuses = (*ours, status)
        return BudgetChoice(None, None, None, float("nan"), width, statuses[0],
                            join_messages(self.message, message), statuses)

    def plot(self, ax: Any = None) -> Any:
        """Median width (with the 10%-90% band) against the number of items.

        One line per ratings-per-item value; a dashed line marks the target width.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        matplotlib Axes
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        t = self.to_frame()
        for r, g in t.groupby("ratings_per_item"):
            g = g.sort_values("n_items")
            line, = ax.plot(g["n_items"], g["median_width"], marker="o",
                            label=f"{r} ratings per item")
            ax.fill_between(g["n_items"], g["width_q10"], g["width_q90"], alpha=0.2,
                            color=line.get_color())
        ax.axhline(self.width, color="k", ls="--", lw=1, label="target width")
        ax.set_xlabel("items")
        ax.set_ylabel(f"NC-ECE interval width (level {self.level:g})")
        ax.legend()
        return ax


def _check_width(width: object) -> float:
    if isinstance(width, bool) or not isinstance(width, numbers.Real) \
            or not np.isfinite(float(width)) or float(width) <= 0:
        raise ValueError(f"width: the target interval width must be a positive finite "
                         f"number, got {width!r}")
    return float(width)


def _check_share(share: object) -> float:
    if isinstance(share, bool) or not isinstance(share, numbers.Real) \
            or not 0.0 <= float(share) <= 1.0:
        raise ValueError(f"max_share_not_ok: a share in [0, 1] is needed, got {share!r}")
    return float(share)


def _cell_text(row: pd.Series, cell: tuple[str, ...]) -> str:
    """A cell, its share of non-ok simulations and their statuses, in words."""
    bad = [s for s in cell if s != "ok"]
    which = ", ".join(f"{s} ({bad.count(s)})" for s in ordered_statuses(bad)) or "none"
    return (f"{int(row['n_items'])} items x {int(row['ratings_per_item'])} ratings, had "
            f"{len(bad)} of {len(cell)} simulations ({len(bad) / len(cell):.0%}) not ok: "
            f"{which}")


def _channel_status(channels: object) -> tuple[str, str, tuple[str, ...]]:
    """The plan's status and message from the fit whose channels it assumes, its statuses."""
    status = getattr(channels, "status", "ok")
    if not isinstance(status, str) or status == "ok":
        return "ok", "", ("ok",)
    statuses = tuple(getattr(channels, "statuses", (status,)) or (status,))
    message = getattr(channels, "message", "") or ""
    text = (f"the channels come from a fit with status {', '.join(statuses)}"
            + (f" ({message})" if message else "") + ": the plan assumes them as the truth")
    return f"channels_{status}", text, statuses


def _check_grid(values: object, name: str, minimum: int, maximum: int | None = None
                ) -> np.ndarray:
    vals = np.atleast_1d(np.asarray(values, dtype=object))
    if vals.ndim != 1 or vals.size == 0:
        raise ValueError(f"{name}: the grid must be a non-empty list of integers, got "
                         f"{values!r}")
    out = np.array([check_int(v, name, minimum=minimum) for v in vals], dtype=np.int64)
    if maximum is not None and out.max() > maximum:
        raise ValueError(f"{name}: {out.max()} ratings per item exceed the {maximum} "
                         "annotators of channels (each item is rated by distinct annotators)")
    if np.unique(out).size != out.size:
        raise ValueError(f"{name}: the grid repeats a value ({out.tolist()})")
    return out


def _check_channels(channels: object, K: int) -> np.ndarray:
    conf = getattr(channels, "confusion", channels)
    if conf is None:
        raise ValueError(f"channels: {type(channels).__name__} has no confusion matrices")
    C = check_array(conf, "channels", ndim=3)
    if C.shape[1] != C.shape[2] or C.shape[0] < 1:
        raise ValueError(f"channels must have shape (n_annotators, K, K), got {C.shape}")
    if C.shape[1] != K:
        raise ValueError(f"channels have {C.shape[1]} classes, probs has {K} columns")
    if np.any(C < 0) or not np.allclose(C.sum(axis=2), 1.0, atol=ROW_ATOL, rtol=0):
        raise ValueError("channels: each confusion row must be non-negative and sum to 1 "
                         "(row-stochastic confusion[j, true, observed])")
    return C


def _check_truth(truth: object, probs: np.ndarray) -> tuple[np.ndarray, str]:
    if isinstance(truth, str):
        if truth not in TRUTHS:
            raise ValueError(f"truth must be one of {TRUTHS} or an array of class "
                             f"probabilities, got {truth!r}")
        return probs, truth
    q = check_array(truth, "truth", ndim=2)
    if q.shape != probs.shape:
        raise ValueError(f"truth has shape {q.shape}, probs has {probs.shape}")
    if np.any(q < 0) or not np.allclose(q.sum(axis=1), 1.0, atol=ROW_ATOL, rtol=0):
        raise ValueError("truth: each row must be non-negative and sum to 1")
    return q, "given"


def _draw(cum: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One class per row of the cumulative probabilities ``cum``."""
    return np.minimum((rng.random(cum.shape[0])[:, None] >= cum).sum(axis=1),
                      cum.shape[1] - 1)


def _simulate_once(probs: np.ndarray, truth: np.ndarray, C: np.ndarray, n: int, r: int,
                   n_bins: int, level: float, interval: Any, seed: int
                   ) -> tuple[float, float, str]:
    """The default NC-ECE interval of one simulated annotation data set."""
    rng = np.random.default_rng(seed)
    J, K, _ = C.shape
    idx = rng.integers(0, probs.shape[0], n)
    y = _draw(np.cumsum(truth[idx], axis=1), rng)
    who = np.argsort(rng.random((n, J)), axis=1)[:, :r].ravel()
    item = np.repeat(np.arange(n), r)
    label = _draw(np.cumsum(C[who, y[item]], axis=1), rng)
    ann = Annotations.from_arrays(item, who, label, classes=np.arange(K), items=np.arange(n))
    with warnings.catch_warnings():  # a fit's warnings are carried by the Estimate status
        warnings.simplefilter("ignore")
        fit = DawidSkene().fit(ann, seed=seed)
        est = ece(probs[idx], corrected(ann, fit), n_bins=n_bins, level=level,
                  interval=interval, seed=seed)
    if est.interval is None:
        raise ValueError(f"interval: {interval!r} gave no interval (the NC-ECE Estimate had "
                         f"status {est.status}); the planner needs an interval option")
    lo, hi = est.interval
    return float(lo), float(hi), est.status


def plan_annotations(probs: ArrayLike, channels: Any, *, n_items: ArrayLike,
                     ratings_per_item: ArrayLike, width: float, level: float = 0.9,
                     truth: str | ArrayLike = "probs", n_sims: int = 20, n_bins: int = 15,
                     interval: Any = "auto", seed: Seed = 0) -> AnnotationPlan:
    """Plan an annotation budget: the NC-ECE interval width of each (items x ratings) cell.

    The estimand is the width of the library's default NC-ECE interval: the top-label
    binned ECE against the noise-corrected target of a Dawid–Skene fit,
    ``nc.ece(probs, nc.targets.corrected(annotations, DawidSkene().fit(annotations)))``
    (NC-ECE of "Noisy-Label Calibration with Multiple Unreliable Labels"; the default
    interval inverts a parametric bootstrap test). For each cell of the grid, ``n_sims``
    data sets are simulated and analysed exactly so; the plan reports the widths'
    median and quantiles, the share of non-ok statuses and the coverage of the
    truth-based population value.

    What the planner assumes: (1) the items to be annotated are like the pool (each data
    set draws ``n_items`` items from the pool with replacement); (2) each item's true
    class is drawn from ``truth``; (3) each item is rated by ``ratings_per_item``
    distinct annotators drawn at random from those of ``channels``, each rating drawn from
    that annotator's confusion row of the true class (class-conditional noise, as the
    correction itself assumes); (4) the channels are then treated as unknown and fitted
    by EM. The widths are only as good as these assumptions; a pilot's fitted channels
    carry their own estimation error, which the plan does not propagate.

    Parameters
    ----------
    probs : array-like of shape (n_pool, K)
        The classifier's probabilities on a pool of items like those to be annotated
        (e.g. the unlabelled items, or a pilot's).
    channels : array-like of shape (n_annotators, K, K) or fitted annotator model
        Assumed channels ``confusion[j, true, observed]`` (rows non-negative, summing to
        1), or a fit (e.g. Dawid–Skene on pilot annotations) whose ``confusion`` is used.
        The fit's prevalence is not used: true classes come from ``truth``. A fit whose
        status is not 'ok' gives the plan status ``'channels_<status>'``, and each of its
        statuses, prefixed ``'channels_'``, travels into every :class:`BudgetChoice`.
    n_items : sequence of int
        Grid of item counts (each at least 2 and at least ``n_bins / 10``).
    ratings_per_item : sequence of int
        Grid of ratings per item (each from 1 to the number of annotators).
    width : float
        Target interval width (positive), used by :meth:`AnnotationPlan.smallest_budget`.
    level : float, default=0.9
        Interval level, a fraction in (0, 1).
    truth : {'probs'} or array-like of shape (n_pool, K), default='probs'
        The true class probabilities of the pool's items. 'probs': drawn from the
        classifier's probabilities as given, i.e. the classifier is assumed calibrated
        (population ECE 0; the widths are those of a calibrated classifier). An array:
        the class probabilities you believe, e.g. a recalibrator's output fitted on pilot
        annotations, to plan for the miscalibration the pilot shows.
    n_sims : int, default=20
        Simulated data sets per cell (at least 1). 20 gives the median width to within
        roughly 10% for the default interval; each simulation costs one EM fit and one
        interval (about a second), so the plan's cost is cells x ``n_sims`` of those.
    n_bins : int, default=15
        Bins of the ECE.
    interval : str or interval option, default='auto'
        The ``interval`` of :func:`noisycal.ece` (the default is the planned estimand;
        e.g. ``Inversion(n_boot=200)`` trades precision of the ends for speed). None (no
        interval) is refused.
    seed : int, default=0
        Randomness of the simulations; the same seed gives the same plan.

    Returns
    -------
    AnnotationPlan
        ``to_frame()``, ``smallest_budget()`` and ``plot()``.

    Raises
    ------
    ValueError
        Naming the argument: an empty or non-integer grid, a width that is not positive, a
        level given in percent, channels that are not row-stochastic or whose class count
        differs from ``probs``, ratings per item above the number of annotators, an
        ``interval`` that gives no interval (None).

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal.workflows import plan_annotations
    >>> probs = np.random.default_rng(0).dirichlet([1, 1, 1], size=500)
    >>> C = np.tile(np.full((3, 3), 0.1) + 0.7 * np.eye(3), (4, 1, 1))
    >>> plan = plan_annotations(probs, C, n_items=[300], ratings_per_item=[3],
    ...                         width=0.1, n_sims=2)  # doctest: +SKIP
    >>> plan.smallest_budget().status  # doctest: +SKIP
    """
    p = check_probs(probs, "probs")
    if p.ndim != 2 or p.shape[0] < 1:
        raise ValueError(f"probs must have shape (n_pool, K), got {p.shape}")
    K = p.shape[1]
    C = _check_channels(channels, K)
    if interval is None:
        raise ValueError("interval: None gives no interval, and the plan is of interval "
                         "widths; give 'auto' (the default) or an interval option")
    n_grid = _check_grid(n_items, "n_items", 2)
    r_grid = _check_grid(ratings_per_item, "ratings_per_item", 1, C.shape[0])
    width = _check_width(width)
    level = check_level(level)
    q, truth_name = _check_truth(truth, p)
    n_sims = check_int(n_sims, "n_sims", minimum=1)
    n_bins = check_n_bins(n_bins, int(n_grid.min()))
    check_seed(seed)
    population = ece(p, from_matrix(q), n_bins=n_bins, interval=None,
                     estimator="plug-in").value
    cells = [(n, r) for n in n_grid for r in r_grid]
    seeds = as_numpy_rng(seed).integers(0, 2**31 - 1, size=(len(cells), n_sims))
    out = [[_simulate_once(p, q, C, int(n), int(r), n_bins, level, interval, int(s))
            for s in row] for (n, r), row in zip(cells, seeds, strict=True)]
    lower = np.array([[o[0] for o in row] for row in out])
    upper = np.array([[o[1] for o in row] for row in out])
    statuses = tuple(tuple(o[2] for o in row) for row in out)
    status, message, fit_statuses = _channel_status(channels)
    return AnnotationPlan(np.array([c[0] for c in cells]), np.array([c[1] for c in cells]),
                          lower, upper, statuses, float(population), width, level, truth_name,
                          status, message, fit_statuses)
