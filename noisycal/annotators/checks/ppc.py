"""Posterior predictive checks of Dawid–Skene family fits: :func:`ppc`.

Ratings are replicated on the observed design (the same item and annotator for every
rating, a fresh true class for every item) from the fitted model, and discrepancies
that annotation modellers look at (unanimity, number of distinct labels, agreement of
each annotator with the others, pairwise agreement and kappa, class shares, agreement by
classifier score) are compared between the observed ratings and the replicates
(:mod:`noisycal.annotators.checks.discrepancies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._util.items import aligned_values
from ..._util.jax import as_key, as_numpy_rng
from ..._util.statuses import join_messages, ordered_statuses
from ..._util.types import ArrayLike, Seed
from ..._util.validation import check_choice, check_int, check_level, check_seed
from ...annotations.core import Annotations
from ...engines.density.arviz_export import replicate_ratings
from ...engines.results import AnnotatorFit, check_fit
from ...exceptions import NotOffered
from .discrepancies import (
    DISCREPANCIES,
    discrepancy_rows,
    discrepancy_values,
    make_design,
)

__all__ = ["ppc", "PPCResult"]

#: Replicated ratings generated per chunk (bounds memory on large data).
CHUNK_RATINGS = 20_000_000


@dataclass(frozen=True, eq=False)
class PPCResult:
    """Result of :func:`ppc`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per discrepancy term: ``discrepancy`` (family), ``term`` (which
        annotator, class, pair, score bin...), ``observed``, ``replicated_mean``,
        ``low`` and ``high`` (the equal-tailed ``level`` range of the replicates) and
        ``ppp`` (the posterior predictive p-value ``P(T(y_rep) >= T(y))``: near 0 the
        model replicates too little of the statistic, near 1 too much; NaN where
        the statistic is undefined). ``attrs`` hold ``level`` and ``method``.
    replicated : ndarray of shape (n_rep, n_rows)
        The discrepancies of every replicate, rows as in ``table``.
    level : float
    method : {'posterior', 'bootstrap_refits', 'parametric_bootstrap'}
        ``'posterior'``: one replicate per posterior draw (NUTS fits);
        ``'bootstrap_refits'``: one replicate per EM refit on a bootstrap resample of the
        items (EM fits that offer :meth:`~noisycal.engines.results.AnnotatorFit.refit`),
        so the parameters vary from replicate to replicate as posterior draws do;
        ``'parametric_bootstrap'``: every replicate drawn at the point estimate (a
        plug-in check: parameter uncertainty is ignored and the replicated range is
        narrower than a posterior one).
    n_rep : int
    status : str
        The fit's status: a check of a fit whose status is not ``'ok'`` is reported
        with that status (``'boundary'`` is reported as ``'ok'``).
    message : str
    statuses : tuple of str
        The fit's statuses (but ``'boundary'``), most severe first; ``('ok',)`` when
        none applies, so ``status == statuses[0]`` always.
    """

    table: pd.DataFrame
    replicated: np.ndarray = field(repr=False)
    level: float
    method: str
    n_rep: int
    status: str = "ok"
    message: str = ""
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])

    def to_frame(self) -> pd.DataFrame:
        """The tidy ``table`` (a copy, with its ``attrs``)."""
        return self.table.copy()

    def summary(self) -> pd.DataFrame:
        """The ``table``; ``attrs`` also hold ``method``, ``n_rep``, ``status`` and
        ``message`` (never prints)."""
        table = self.table.copy()
        table.attrs.update(n_rep=self.n_rep, status=self.status, message=self.message)
        return table

    def plot(self, ax: Any = None, *, discrepancy: str | None = None) -> Any:
        """Observed discrepancies against their replicated ranges.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Drawn on a new figure when None.
        discrepancy : str, optional
            One family only (a value of ``table['discrepancy']``).

        Returns
        -------
        matplotlib Axes
            One line per term: the replicated ``level`` range (bar), the replicated mean
            (tick) and the observed value (dot, red when ``ppp`` is below
            ``(1 - level) / 2`` or above ``(1 + level) / 2``).
        """
        import matplotlib.pyplot as plt

        t = self.table
        if discrepancy is not None:
            if discrepancy not in set(t["discrepancy"]):
                raise ValueError(f"discrepancy must be one of {sorted(set(t['discrepancy']))}"
                                 f", got {discrepancy!r}")
            t = t[t["discrepancy"] == discrepancy]
        if ax is None:
            _, ax = plt.subplots(figsize=(6.0, 0.35 * len(t) + 1.0))
        y = np.arange(len(t))[::-1]
        ax.hlines(y, t["low"], t["high"], color="0.6", lw=4, label=f"replicated {self.level:g}")
        ax.plot(t["replicated_mean"], y, "|", color="0.2", ms=10, label="replicated mean")
        tail = (1.0 - self.level) / 2.0
        far = ((t["ppp"] < tail) | (t["ppp"] > 1.0 - tail)).to_numpy()
        ax.plot(t["observed"].to_numpy()[~far], y[~far], "o", color="C0", label="observed")
        ax.plot(t["observed"].to_numpy()[far], y[far], "o", color="C3",
                label="observed (extreme ppp)")
        ax.set_yticks(y, [f"{d}: {s}" for d, s in zip(t["discrepancy"], t["term"],
                                                       strict=True)])
        ax.set_xlabel("value")
        ax.set_title(f"posterior predictive check ({self.method}, {self.n_rep} replicates)")
        ax.legend(loc="best", fontsize="small")
        return ax


def _check_scores(scores: ArrayLike | None, ann: Annotations) -> np.ndarray | None:
    if scores is None:
        return None
    n_items = ann.n_items  # a pandas index must hold the items, columns the classes
    s = np.asarray(aligned_values(scores, "scores", items=ann.items, classes=ann.classes,
                                  whose="the annotations'"), dtype=np.float64)
    if s.ndim == 2:  # probabilities: the top-label confidence
        s = s.max(axis=1)
    if s.shape != (n_items,) or not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be finite with shape (n_items,) = ({n_items},) or "
                         f"(n_items, n_classes), one per item of annotations, got shape "
                         f"{np.shape(scores)}")
    return s


def _check_which(discrepancies: Any, scores: np.ndarray | None) -> tuple[str, ...]:
    if discrepancies is None:
        return tuple(d for d in DISCREPANCIES if d != "score_agreement" or scores is not None)
    names = [discrepancies] if isinstance(discrepancies, str) else list(discrepancies)
    bad = [d for d in names if d not in DISCREPANCIES]
    if bad or not names:
        raise ValueError(f"discrepancies must be names from {list(DISCREPANCIES)}, got "
                         f"{discrepancies!r}")
    if "score_agreement" in names and scores is None:
        raise ValueError("discrepancies 'score_agreement' needs scores=")
    return tuple(d for d in DISCREPANCIES if d in names)


def _fit_codes(fit: AnnotatorFit, ann: Annotations) -> tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """Ratings as the fit's channel and class codes (:meth:`AnnotatorFit.match`), and
    each item's group (a grouped fit checks the items it was fitted on)."""
    check_fit(fit, "replicate ratings")
    grouped = fit.group_prevalence.shape[0] > 1
    m = fit.match(ann, items="fitted" if grouped else "any")
    group = m.groups if grouped else np.zeros(ann.n_items, np.int64)
    return m.channel, m.label, group


#: What ``parameters=`` of :func:`ppc` may name.
PARAMETERS = ("auto", "refits", "plug-in")


#: The most memory the replicated ratings of :func:`ppc` may take (checked before they
#: are drawn).
MAX_REPLICATE_BYTES = 4 * 2**30


def _params(fit: AnnotatorFit, n_rep: int, parameters: str,
            seed: Any) -> tuple[np.ndarray, np.ndarray, str, str]:
    """``n_rep`` parameter sets and the method: evenly spaced posterior draws, EM refits on
    bootstrap resamples of the items, or the estimate repeated; and a note for the
    message ('' when there is none)."""
    if fit.method == "nuts":
        prev, conf = np.asarray(fit.draws["prevalence"]), np.asarray(fit.draws["confusion"])
        idx = np.unique(np.round(np.linspace(0, prev.shape[0] - 1, min(n_rep, prev.shape[0])))
                        .astype(np.int64))
        return prev[idx], conf[idx], "posterior", ""
    refits, refusal = None, ""
    if parameters != "plug-in":  # the fit's own refit, or its reason for refusing one
        import jax

        n = fit.n_items
        rng = as_numpy_rng(jax.random.fold_in(seed, 2**20))  # apart from the replicates'
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_rep).astype(np.float64)
        try:
            refits = fit.refit(weights)
        except NotOffered as exc:
            if parameters == "refits":
                raise ValueError(f"parameters='refits': {exc}; use parameters='plug-in'") \
                    from None
            refusal = str(exc)
    if refits is None:
        prev = np.broadcast_to(fit.group_prevalence, (n_rep, *fit.group_prevalence.shape))
        conf = np.broadcast_to(fit.confusion, (n_rep, *fit.confusion.shape))
        note = "" if parameters == "plug-in" else (
            "a plug-in check (every replicate at the point estimate, parameter uncertainty "
            f"ignored, so its p-values are more extreme than a posterior check's): {refusal}")
        return prev, conf, "parametric_bootstrap", note
    bad = int(np.sum(~np.asarray(refits.converged)))
    note = (f"{bad} of {n_rep} bootstrap refits stopped at EM's iteration limit before its "
            "tolerance; their replicates are kept") if bad else ""
    return (np.asarray(refits.group_prevalence), np.asarray(refits.confusion),
            "bootstrap_refits", note)


def ppc(fit: AnnotatorFit, annotations: Annotations, *,
        discrepancies: str | list[str] | None = None, n_rep: int = 500, level: float = 0.9,
        seed: Seed = 0, scores: ArrayLike | None = None, n_bins: int = 5,
        parameters: str = "auto") -> PPCResult:
    """Posterior predictive check of a Dawid–Skene family fit.

    Replicates the ratings on the observed design from the fitted model: for each
    replicate, every item gets a true class drawn from its group's prevalence and every
    observed (item, annotator) pair a label drawn from that annotator's confusion row.
    NUTS fits replicate once per posterior draw (a posterior predictive check). EM fits
    replicate once per EM refit on a bootstrap resample of the items (``parameters=
    'refits'``, the default where the fit offers :meth:`AnnotatorFit.refit`): the
    bootstrap distribution of the estimate stands in for the posterior, so the check asks
    the question a NUTS fit's check asks and the two can be compared (EM fits with gold
    labels too: their refits keep the gold items at their classes, but the replicated
    ratings draw every item's class from the prevalence, gold items included). Other
    fits (MLE)
    and ``parameters='plug-in'`` replicate ``n_rep`` times at the point estimate (a
    plug-in parametric bootstrap, which ignores parameter uncertainty, so its replicated
    ranges are narrower and its p-values more extreme than a posterior check's; the
    result's ``method`` and message say so).

    A NUTS fit's check judges the model *with its prior*. With many classes the default
    weakly informative Dirichlet priors put pseudo-counts on every error cell of every
    confusion row and lower the fitted accuracies, so the replicated agreement falls and
    the check can reject where the EM fit's does not: on CIFAR-10N the unanimity checks
    of EM and NUTS fits part for this reason, and a MAP-EM fit under the same priors
    checks like the NUTS fit (``benchmarks/ppc_study.py``). Under the true model the
    ppp concentrate near 0.5 (the data are used twice), so a check rejects less often
    than its nominal level (the same study).

    Parameters
    ----------
    fit : AnnotatorFit
        A fit of :class:`~noisycal.DawidSkene`, :class:`~noisycal.OneCoinDawidSkene` or
        :class:`~noisycal.GroupedDawidSkene` with finite estimates.
    annotations : Annotations
        The ratings the model was fitted on, read by :meth:`AnnotatorFit.match`
        (annotators by id, classes by name; a grouped fit reads each item's group from
        the items it was fitted on). An annotator, class or (grouped fit) item the fit
        does not know is a ``ValueError`` naming it.
    discrepancies : str or list of str, optional
        Families from ``'unanimity'``, ``'distinct_labels'``, ``'annotator_agreement'``,
        ``'pairwise_agreement'``, ``'kappa'``, ``'class_shares'``,
        ``'score_agreement'`` (defined in :mod:`noisycal.annotators.checks.discrepancies`);
        default all of them (``'score_agreement'`` only when ``scores`` is given).
    n_rep : int, default=500
        Replicates; a NUTS fit uses at most its number of draws (evenly spaced).
    level : float, default=0.9
        Width of the replicated range in the table, a fraction in (0, 1).
    seed : int or jax key, default=0
        Randomness of the replicates.
    scores : array-like of shape (n_items,) or (n_items, n_classes), optional
        A classifier's score for each item of ``annotations`` (probabilities: their
        maximum is used), for agreement by score bin. A pandas index must list the
        annotations' items in order; a DataFrame's columns are matched to the classes by
        label.
    n_bins : int, default=5
        Equal-count score bins (with ``scores``), at most the number of items: edges at
        the score quantiles, fewer bins where tied scores meet at a quantile, and a bin
        that would hold no item merged into the one below, so every bin holds items.
    parameters : {'auto', 'refits', 'plug-in'}, default='auto'
        Where the replicates' parameters come from for a fit without posterior draws:
        ``'refits'``, ``n_rep`` EM refits on multinomial bootstrap resamples of the
        fitted items (seeded by ``seed``); ``'plug-in'``, the point estimate every time;
        ``'auto'``, refits where the fit offers them, else the plug-in (with a message).
        NUTS fits always use their posterior draws.

    Returns
    -------
    PPCResult
        The table (discrepancy, term, observed, replicated_mean, low, high, ppp) and a
        ``plot`` method.

    Raises
    ------
    ValueError
        If an argument is invalid (the message names it) or the fit has no finite
        estimates.

    References
    ----------
    Gelman, Meng & Stern (1996), "Posterior predictive assessment of model fitness via
    realized discrepancies", Statistica Sinica 6, 733-807.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 3)
    >>> sim = nc.simulate.dawid_skene(200, [0.5, 0.5], conf, seed=0)
    >>> fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=2))
    >>> check = nc.annotators.ppc(fit, sim.annotations, discrepancies="unanimity",
    ...                           n_rep=100, seed=0)
    >>> list(check.table.columns)
    ['discrepancy', 'term', 'observed', 'replicated_mean', 'low', 'high', 'ppp']
    """
    a_idx, labels, group = _fit_codes(fit, annotations)
    ann = annotations
    n_rep = check_int(n_rep, "n_rep", minimum=2)
    level = check_level(level)
    key = as_key(check_seed(seed))
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    s = _check_scores(scores, annotations)
    if s is not None and n_bins > ann.n_items:
        raise ValueError(f"n_bins: {n_bins} score bins of {ann.n_items} items would leave "
                         f"bins without items; n_bins must be at most the number of items "
                         f"({ann.n_items})")
    which = _check_which(discrepancies, s)
    item = ann.engine_arrays().item
    need = 8 * n_rep * max(item.size, ann.n_items)
    if need > MAX_REPLICATE_BYTES:   # replicated ratings (and refit weights) per replicate
        raise ValueError(f"n_rep={n_rep} replicates of {item.size:,} ratings need about "
                         f"{need / 2**30:.1f} GiB (more than "
                         f"{MAX_REPLICATE_BYTES / 2**30:.0f} GiB); use fewer replicates")
    J, K = fit.confusion.shape[0], fit.confusion.shape[-1]
    design = make_design(item, a_idx, n_items=ann.n_items, n_annotators=J, n_classes=K,
                         scores=s, n_bins=n_bins)
    observed = discrepancy_values(labels[None], design, which)[0]
    check_choice(parameters, "parameters", PARAMETERS)
    prev, conf, method, note = _params(fit, n_rep, parameters, key)
    rep = _replicated(key, prev, conf, item, a_idx, ann.n_items, group, design, which)
    rows = discrepancy_rows(design, which, np.asarray(fit.annotators), np.asarray(fit.classes))
    lo, hi = _ranges(rep, level)
    valid = np.isfinite(rep) & np.isfinite(observed)
    ppp = np.where(valid.any(0), np.sum((rep >= observed) & valid, 0)
                   / np.maximum(valid.sum(0), 1), np.nan)
    table = pd.DataFrame({"discrepancy": [r[0] for r in rows], "term": [r[1] for r in rows],
                          "observed": observed, "replicated_mean": _nanmean(rep),
                          "low": lo, "high": hi, "ppp": ppp})
    table.attrs.update(level=level, method=method)
    status = "ok" if fit.status in ("ok", "boundary") else fit.status
    message = "" if status == "ok" else f"the fit's status is {fit.status!r}: {fit.message}"
    message = join_messages(message, note)
    statuses = tuple(s for s in getattr(fit, "statuses", (fit.status,)) if s != "boundary")
    return PPCResult(table, rep, level, method, rep.shape[0], status, message, statuses)


def _ranges(rep: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed ``level`` range of each column's finite values (NaN when none)."""
    lo, hi = np.full(rep.shape[1], np.nan), np.full(rep.shape[1], np.nan)
    for j in range(rep.shape[1]):
        v = rep[:, j][np.isfinite(rep[:, j])]
        if v.size:
            lo[j], hi[j] = np.quantile(v, [(1 - level) / 2, (1 + level) / 2])
    return lo, hi


def _nanmean(x: np.ndarray) -> np.ndarray:
    n = np.isfinite(x).sum(0)
    return np.where(n > 0, np.nansum(x, 0) / np.maximum(n, 1), np.nan)


def _replicated(key: Any, prev: np.ndarray, conf: np.ndarray, item: np.ndarray,
                annotator: np.ndarray, n_items: int, group: np.ndarray, design: Any,
                which: tuple[str, ...]) -> np.ndarray:
    """Discrepancies of replicates drawn in chunks of at most ``CHUNK_RATINGS`` ratings
    (the last chunk padded to the same size, so one compiled program serves all)."""
    import jax

    D = prev.shape[0]
    size = int(min(D, max(1, CHUNK_RATINGS // max(1, item.size))))
    out = []
    for c, start in enumerate(range(0, D, size)):
        idx = np.minimum(np.arange(start, start + size), D - 1)
        labels = replicate_ratings(jax.random.fold_in(key, c), prev[idx], conf[idx], item,
                                   annotator, n_items=n_items, group=group)
        out.append(discrepancy_values(labels, design, which)[: min(size, D - start)])
    return np.concatenate(out, axis=0)
