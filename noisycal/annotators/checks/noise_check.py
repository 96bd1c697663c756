"""A test of the class-conditional noise assumption.

It asks: do the channels change with the score?

Noise-corrected targets (:func:`noisycal.targets.corrected`), the NC-ECE of "Noisy-Label
Calibration with Multiple Unreliable Labels" and Dawid–Skene posteriors assume
*class-conditional* noise: given the true class, an annotator's label does not depend on
the classifier's score. When annotators err more on the items the classifier finds hard,
a pooled channel over-corrects the confident items and the corrected calibration error is
biased (CIFAR-10N with DenseNet-40: NC-ECE 0.025 against a clean-label ECE of 0.043).

- :func:`noise_check`: a likelihood-ratio test of grouped Dawid–Skene with channels per
  score group against shared channels; returns a :class:`NoiseCheck` with a status.
- :func:`with_noise_check`: a Target carrying a rejection, so every Estimate built from it
  carries it too.
- :func:`score_groups`: the check's equal-count score groups (tied scores kept together).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import chi2

import jax
import jax.numpy as jnp

from noisycal.models.dawid_skene import DSData, make_data

from ..._util.items import aligned_values
from ..._util.jax import as_key, x64
from ..._util.progress import ProgressBar, check_progress, tick
from ..._util.statuses import join_messages, ordered_statuses
from ..._util.types import ArrayLike, Seed
from ..._util.validation import (
    check_choice,
    check_int,
    check_probs,
    check_real,
    check_seed,
    user_stacklevel,
)
from ...annotations.core import Annotations
from ...engines.em.dawid_skene import e_step, fit_em, join_data, m_step, run_em, split_data
from ...engines.methods import EM, as_method
from ...engines.results import AnnotatorFit
from ...exceptions import NoisycalWarning, NumericalWarning
from ..dawid_skene import GroupedDawidSkene
from ..hui_walter import equal_count_groups

__all__ = ["NoiseCheck", "noise_check", "score_groups", "REJECTED", "SPARSE",
           "MIN_EXPECTED_COUNT", "MIN_GROUP_ITEMS_PER_CLASS", "PSEUDOCOUNT"]

#: Status of a check that rejects class-conditional noise.
REJECTED = "noise_depends_on_score"
#: Status of a check whose chi-square reference was forced (``test='chi2'``) on tables
#: that ``test='auto'`` judges too sparse for it.
SPARSE = "sparse_tables"
#: ``n_groups`` may be at most ``n_items / (MIN_GROUP_ITEMS_PER_CLASS * n_classes)``: each
#: score group gets its own K x K channel per annotator, so a group needs items of every
#: class (on average five per class, the expected count of Cochran's rule); with fewer
#: the per-group channels fit each group's few ratings almost exactly and the likelihood
#: ratio has no usable reference distribution (one item per group gave p = 1.0).
MIN_GROUP_ITEMS_PER_CLASS = 5
#: ``test='auto'`` uses the chi-square reference only when every expected count of the
#: (annotator, group, true class, observed label) table under the shared fit is at least
#: this (Cochran's rule); otherwise the parametric bootstrap.
MIN_EXPECTED_COUNT = 5.0
#: Bootstrap data sets come from the shared fit re-estimated with this added to every
#: (true, observed) and (group, class) count, so no unseen confusion is exactly 0.
PSEUDOCOUNT = 0.5
_USABLE_FIT = ("ok", "boundary")  # null-fit statuses the test can start from


@dataclass(frozen=True, eq=False)
class NoiseCheck:
    """Result of :func:`noise_check`.

    Attributes
    ----------
    statistic : float
        The likelihood-ratio statistic ``2 (loglik_group - loglik_shared)`` (NaN when not
        tested).
    df : int
        Its nominal degrees of freedom: the difference of free parameters.
    p_value : float
        From ``method`` (NaN when not tested).
    method : {'chi2', 'bartlett', 'bootstrap', 'none'}
        The reference distribution used ('none' when not tested).
    p_threshold : float
        The status is :data:`REJECTED` when ``p_value <= p_threshold``.
    status : {'ok', 'noise_depends_on_score', 'sparse_tables', 'not_tested'}
        The first of ``statuses``.
    message : str
        Why the status is not 'ok' (a sentence that reads after "built under class-
        conditional noise, which ").
    groups : pandas.DataFrame
        One row per score group (fewer than ``n_groups`` when tied scores fill more than
        one group's share: tied scores are never split): ``group``, ``n_items``,
        ``score_low``, ``score_high``, ``lr`` (the group's share of the statistic),
        ``accuracy_shared`` and ``accuracy_group`` (the annotators' rating-weighted mean
        probability of labelling an item of the group correctly, under shared and
        per-group channels).
    n_boot : int
        Bootstrap data sets drawn (0 with the chi-square reference).
    details : mapping
        ``loglik_shared``, ``loglik_group``, ``min_expected_count``, ``grouping``
        ('probability' or 'confidence'), ``group_index``, ``items``, ``fit_status``,
        ``confusion_shared`` (J, K, K), ``confusion_group`` (L, J, K, K; NaN where an
        annotator has no rating in a group), ``n_groups_requested``; with a bootstrap
        ``boot_statistics``, ``n_boot_failed``, ``n_boot_not_converged``,
        ``bartlett_factor`` (mean LR* / df).
    statuses : tuple of str
        Every status that applies, most severe first (:data:`SPARSE` before
        :data:`REJECTED`: a rejection on a chi-square reference that is unreliable);
        ``('ok',)`` when none does, so ``status == statuses[0]`` always.

    ``repr`` and ``str`` are a short summary; the tables stay in ``groups`` and
    ``details``.
    """

    statistic: float
    df: int
    p_value: float
    method: str
    p_threshold: float
    status: str
    message: str
    groups: pd.DataFrame
    n_boot: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def rejected(self) -> bool:
        """Whether the check rejects class-conditional noise (whatever else applies)."""
        return REJECTED in self.statuses

    @property
    def n_groups(self) -> int:
        """Score groups the items were cut into (0 when unknown)."""
        index = self.details.get("group_index")
        return int(np.max(index)) + 1 if index is not None and len(index) else 0

    def __repr__(self) -> str:
        asked = self.details.get("n_groups_requested")
        L = self.n_groups
        groups = f"{L} score group" + ("" if L == 1 else "s")
        if asked is not None and asked != L:
            groups += f" ({asked} requested; tied scores are kept together)"
        test = ("  not tested" if self.method == "none" else
                f"  test {self.method}: LR {self.statistic:.4g} on {self.df} df, "
                f"p = {self.p_value:.4g}"
                + (f" ({self.n_boot} bootstrap data sets)" if self.n_boot else ""))
        lines = [f"NoiseCheck: class-conditional noise, {groups}", test]
        status = (f"statuses={self.statuses!r}" if len(self.statuses) > 1
                  else f"status={self.status!r}")
        lines.append(f"  {status}")
        if self.message:
            lines.append(f"  message: {self.message}")
        return "\n".join(lines)

    __str__ = __repr__

    def to_frame(self) -> pd.DataFrame:
        """The per-group table (a copy of :attr:`groups`)."""
        return self.groups.copy()


def score_groups(scores: ArrayLike, n_groups: int = 5) -> np.ndarray:
    """Equal-count groups of a classifier's scores, the groups :func:`noise_check` uses.

    The items sorted by score are cut into ``n_groups`` blocks of equal count
    (:func:`~noisycal.annotators.equal_count_groups`: sizes differ by at most one, the
    larger at the high end); a cut that falls inside a run of tied scores moves to the
    nearest change of score (the lower one when both are as near), so tied items always
    share a group and never depend on the row order. Cuts that meet are merged: with
    ties there can be fewer groups than asked, and one when every score is tied.

    Parameters
    ----------
    scores : array-like of shape (n_items,) or (n_items, n_classes)
        Positive-class probabilities (grouped by the probability itself) or class
        probabilities (grouped by the top-label confidence, ranked by the mass outside
        the top class, so that confidences that round to 1.0 keep their order).
    n_groups : int, default=5
        L >= 2, at most the number of items.

    Returns
    -------
    ndarray of shape (n_items,), dtype int64
        0 (lowest score) to at most L - 1, every label in use.

    Examples
    --------
    >>> score_groups([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8], [0.6, 0.4]], 2).tolist()
    [1, 0, 1, 0]
    >>> score_groups([0.1, 0.5, 0.5, 0.5, 0.9, 0.5], 2).tolist()  # 0.5 is not split
    [0, 1, 1, 1, 1, 1]
    """
    p = check_probs(scores, "scores")
    key = p if p.ndim == 1 else -np.sort(p, axis=1)[:, :-1].sum(axis=1)
    blocks = equal_count_groups(key, n_groups)  # checks n_groups
    order = np.argsort(key, kind="stable")
    s = key[order]
    cuts = np.flatnonzero(np.diff(blocks[order])) + 1   # first sorted position of a block
    changes = np.flatnonzero(np.diff(s)) + 1            # first sorted position of a value
    out = np.empty(key.size, dtype=np.int64)
    if changes.size == 0:
        out[order] = 0
        return out
    at = np.searchsorted(changes, cuts)
    lo = changes[np.maximum(at - 1, 0)]
    hi = changes[np.minimum(at, changes.size - 1)]
    moved = np.where(np.abs(hi - cuts) < np.abs(cuts - lo), hi, lo)
    out[order] = np.searchsorted(np.unique(moved), np.arange(key.size), side="right")
    return out


def _check_inputs(annotations: object, scores: ArrayLike) -> tuple[Annotations, np.ndarray]:
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations (got "
                         f"{type(annotations).__name__})")
    if not annotations.annotators_known:
        raise ValueError("annotations were built by Annotations.from_counts; the check needs "
                         "who rated what (from_long / from_wide / from_arrays)")
    # a pandas index must list the items, a DataFrame's columns are matched to the classes
    p = check_probs(aligned_values(scores, "scores", items=annotations.items,
                                   classes=annotations.classes, whose="the annotations'"),
                    "scores")
    K, n = annotations.n_classes, annotations.n_items
    if p.shape[0] != n:
        raise ValueError(f"scores must have one row per annotated item ({n}, in the "
                         f"annotations' item order), got {p.shape[0]}")
    if p.ndim == 1 and K != 2:
        raise ValueError(f"scores of shape (n_items,) are positive-class probabilities, but "
                         f"the annotations have {K} classes; pass (n_items, {K}) scores")
    if p.ndim == 2 and p.shape[1] != K:
        raise ValueError(f"scores has {p.shape[1]} columns but the annotations have {K} "
                         "classes")
    return annotations, p


def _null_fit(ann: Annotations, groups: np.ndarray, L: int, fit: object, em: EM,
              seed: Seed, progress: bool = False) -> AnnotatorFit:
    """The shared-channel fit: ``fit`` checked, or a new multistart EM fit."""
    if fit is None:
        return GroupedDawidSkene(ann.n_classes, channels="shared").fit(
            ann, groups=groups, method=em, seed=seed, progress=progress)
    ok = (isinstance(fit, AnnotatorFit) and fit.model == "grouped" and fit.method == "em"
          and not fit.details.get("map", True) and fit.group_prevalence.shape[0] == L
          and all(np.array_equal(a, b) for a, b in (
              (fit.annotators, ann.annotators), (fit.classes, ann.classes),
              (fit.items, ann.items), (fit.details.get("group_index"), groups))))
    if not ok:
        raise ValueError("fit must be a maximum-likelihood GroupedDawidSkene(channels="
                         "'shared') EM fit of these annotations with groups=score_groups("
                         "scores, n_groups) (no priors); omit it to fit one here")
    return fit


def _alt_data(data: DSData, n_groups: int) -> DSData:
    """The same ratings with one pseudo-annotator per (annotator, group): ``j L + g``."""
    ann = data.annotator * n_groups + data.group[data.item]
    return data._replace(annotator=ann, n_annotators=data.n_annotators * n_groups, slots=None)


@partial(jax.jit, static_argnames=("n_boot", "sizes", "max_iter", "tol", "batch_size",
                                   "progress"))
def _bootstrap_lr(key: jax.Array, prevalence: jax.Array, confusion: jax.Array,
                  item: jax.Array, annotator: jax.Array, group: jax.Array, *, n_boot: int,
                  sizes: tuple, max_iter: int, tol: float, batch_size: int,
                  progress: bool = False) -> tuple[jax.Array, ...]:
    """(loglik_shared, loglik_group, converged) on ``n_boot`` data sets drawn from the
    shared fit, one per key of ``jax.random.split(key, n_boot)`` (split here: no program
    compiled for the split alone)."""
    keys = jax.random.split(key, n_boot)
    n_items, J, K, L = sizes
    base = DSData(item, annotator, jnp.zeros_like(annotator), group, n_items, J, K, L, None)
    log_prev, log_conf = jnp.log(prevalence), jnp.log(confusion)

    def one(key: jax.Array) -> tuple[jax.Array, ...]:
        k_class, k_label = jax.random.split(key)
        y = jax.random.categorical(k_class, log_prev[group])
        label = jax.random.categorical(k_label, log_conf[annotator, y[item]])
        null = base._replace(label=label)
        post0, _ = e_step(prevalence, confusion, null, None)  # start at the truth
        s0 = run_em(post0, null, None, None, None, one_coin=False, max_iter=max_iter, tol=tol)
        s1 = run_em(s0.post, _alt_data(null, L), None, None, None, one_coin=False,
                    max_iter=max_iter, tol=tol)
        if progress:
            tick(s1.n_iter)
        return s0.loglik, s1.loglik, s0.converged & s1.converged

    return jax.lax.map(one, keys, batch_size=batch_size)


# one compiled program per data size each instead of every operation compiled on its own
@partial(jax.jit, static_argnames=("sizes",))
def _loglik_jit(prevalence: jax.Array, confusion: jax.Array, arrays: tuple,
                sizes: tuple) -> jax.Array:
    """Each item's log-likelihood (:func:`e_step`) on ``join_data(arrays, sizes)``."""
    return e_step(prevalence, confusion, join_data(arrays, sizes), None)[1]


@partial(jax.jit, static_argnames=("sizes",))
def _m_step_jit(post: jax.Array, arrays: tuple, alpha: jax.Array, beta: jax.Array, *,
                sizes: tuple) -> tuple[jax.Array, jax.Array]:
    """:func:`m_step` (full channels) on ``join_data(arrays, sizes)``."""
    return m_step(post, join_data(arrays, sizes), alpha, beta, False)


def _expected_counts_min(prev: np.ndarray, conf: np.ndarray, n_rated: np.ndarray) -> float:
    """Smallest expected (annotator, group, true, observed) count under the shared fit."""
    # n_rated (J, L): ratings of annotator j in group g; E = n_jg prev_gk conf_jkl
    exp = n_rated[:, :, None, None] * prev[None, :, :, None] * conf[:, None, :, :]
    return float(exp[n_rated > 0].min())


def _group_table(groups: np.ndarray, L: int, s: np.ndarray, ll0: np.ndarray, ll1: np.ndarray,
                 fit0: AnnotatorFit, prev1: np.ndarray, conf1: np.ndarray,
                 n_rated: np.ndarray) -> pd.DataFrame:
    """The per-group rows of :attr:`NoiseCheck.groups`."""
    acc0 = np.einsum("gk,jkk->jg", fit0.group_prevalence, fit0.confusion)
    acc1 = np.einsum("gk,jgkk->jg", prev1, np.nan_to_num(conf1.transpose(1, 0, 2, 3)))
    w = n_rated / np.maximum(n_rated.sum(0, keepdims=True), 1)
    return pd.DataFrame({
        "group": np.arange(L),
        "n_items": np.bincount(groups, minlength=L),
        "score_low": [s[groups == g].min() for g in range(L)],
        "score_high": [s[groups == g].max() for g in range(L)],
        "lr": 2 * (np.bincount(groups, ll1, L) - np.bincount(groups, ll0, L)),
        "accuracy_shared": (w * acc0).sum(0),
        "accuracy_group": (w * acc1).sum(0),
    })


def _not_tested(p_threshold: float, df: int, details: dict, why: str) -> NoiseCheck:
    return NoiseCheck(float("nan"), df, float("nan"), "none", p_threshold, "not_tested",
                      f"was not tested: {why}", pd.DataFrame(), 0, details)


def _bootstrap(key: jax.Array, post: np.ndarray, data: DSData, n_boot: int, max_iter: int,
               tol: float, batch_size: int, progress: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap LR statistics (n_boot,) and whether both refits converged.

    The data sets are drawn from one add-half M-step at the shared fit's posteriors ``post``.
    """
    K = data.n_classes
    with x64(), ProgressBar(n_boot, "noise check bootstrap", enabled=progress) as bar:
        arrays, sizes = split_data(data)
        prev, conf = _m_step_jit(jnp.asarray(post), arrays, jnp.full(K, 1.0 + PSEUDOCOUNT),
                                 jnp.full((K, K), 1.0 + PSEUDOCOUNT), sizes=sizes)
        l0, l1, conv = bar.wait(_bootstrap_lr(
            key, prev, conf, data.item, data.annotator, data.group, n_boot=n_boot,
            sizes=(data.n_items, data.n_annotators, data.n_classes, data.n_groups),
            max_iter=max_iter, tol=tol, batch_size=min(batch_size, n_boot),
            progress=progress))
    return np.maximum(2.0 * (np.asarray(l1) - np.asarray(l0)), 0.0), np.asarray(conv)


def _observed(ann: Annotations, fit0: AnnotatorFit, groups: np.ndarray, L: int,
              max_iter: int, tol: float) -> tuple[Any, ...]:
    """The data, each item's log-likelihood under both fits and the per-group fit."""
    arr = ann.engine_arrays()
    with x64():
        data0 = make_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                          n_annotators=ann.n_annotators, n_classes=ann.n_classes,
                          group=groups, n_groups=L, slots=False)
        data1 = _alt_data(data0, L)
        ll0 = np.asarray(_loglik_jit(jnp.asarray(fit0.group_prevalence),
                                     jnp.asarray(fit0.confusion), *split_data(data0)))
        alt = fit_em(jnp.asarray(fit0.item_posterior)[None], data1, None, None, None,
                     one_coin=False, max_iter=max_iter, tol=tol)
        prev1, conf1 = np.asarray(alt.prevalence[0]), np.asarray(alt.confusion[0])
        ll1 = np.asarray(_loglik_jit(jnp.asarray(prev1), jnp.asarray(conf1),
                                     *split_data(data1)))
    return data0, ll0, ll1, prev1, conf1


def noise_check(annotations: Annotations, scores: ArrayLike, *, fit: AnnotatorFit | None = None,
                n_groups: int = 5, test: str = "auto", p_threshold: float = 0.01,
                n_boot: int | None = None, method: EM | str | None = None,
                batch_size: int = 1, seed: Seed = 0, progress: bool = False) -> NoiseCheck:
    """Test whether annotator channels depend on a classifier's score.

    Class-conditional noise means that an annotator's label is independent of the
    classifier's score given the item's true class. The check cuts the items into
    ``n_groups`` equal-count score groups (:func:`score_groups`) and compares two grouped
    Dawid–Skene models by their likelihood ratio: channels shared by the groups (the
    assumption) against one confusion matrix per annotator and group.

    Parameters
    ----------
    annotations : Annotations
        The ratings, with annotator identities.
    scores : array-like of shape (n_items,) or (n_items, n_classes)
        The classifier's positive-class probabilities (two classes; grouped by the
        probability) or class probabilities (grouped by the top-label confidence), one
        row per item in the annotations' item order (a pandas index must list the items
        in that order; a DataFrame's columns are matched to the classes by label).
    fit : AnnotatorFit, optional
        A maximum-likelihood ``GroupedDawidSkene(channels='shared')`` EM fit of these
        annotations with ``groups=score_groups(scores, n_groups)``, reused as the
        shared-channel fit; by default one is fitted here.
    n_groups : int, default=5
        Score groups L >= 2 (:func:`score_groups`: tied scores are never split, so ties
        can leave fewer groups, and a single one when every score is tied, which is not
        tested), at most ``n_items / (5 n_classes)``
        (:data:`MIN_GROUP_ITEMS_PER_CLASS` items per class per group on average).
    test : {'auto', 'chi2', 'bartlett', 'bootstrap'}, default='auto'
        The reference distribution of the statistic (see Notes): chi-square with ``df``
        degrees of freedom; chi-square after a bootstrap Bartlett correction; the
        parametric bootstrap itself; or 'chi2' when the tables are dense (every expected
        count at least :data:`MIN_EXPECTED_COUNT` and three or more annotators in every
        group) and 'bartlett' otherwise. 'chi2' on tables that are not dense is run as
        asked, with status ``'sparse_tables'`` (and a
        :class:`~noisycal.NumericalWarning`).
    p_threshold : float, default=0.01
        The status is ``'noise_depends_on_score'`` when the p-value is at most this.
    n_boot : int, optional
        Bootstrap data sets: default 19 for 'bartlett' and 99 for 'bootstrap' (whose
        smallest p-value is 1 / (n_boot + 1)); unused by 'chi2'.
    method : EM object or 'em', optional
        The EM settings (:class:`~noisycal.engines.EM`): the shared-channel fit (when
        ``fit`` is not given) runs it whole, and its ``max_iter`` and ``tol`` (on the
        mean log-likelihood per item) bound every refit. Default ``EM(n_starts=5)``
        (``'em'`` is ``EM()``, with 10 starts).
    batch_size : int, default=1
        Bootstrap data sets refitted at once under ``vmap``; one at a time is the
        fastest on CPU (the EM steps are scatter-adds), raise it on a GPU.
    seed : int or jax key, default=0
        The shared fit's EM starts and the bootstrap draws.
    progress : bool, default=False
        A progress bar on stderr over the bootstrap refits (and the shared fit's starts).

    Returns
    -------
    NoiseCheck
        Status ``'noise_depends_on_score'`` when the check rejects (with a
        :class:`~noisycal.NoisycalWarning`), ``'sparse_tables'`` for a chi-square reference
        forced on sparse tables (both can apply: ``statuses``), ``'not_tested'`` when the
        scores do not vary, no annotator rates two groups or the shared fit is not usable.

    Raises
    ------
    ValueError
        For annotations without annotator identities, scores that are not probabilities
        with one row per item, more score groups than :data:`MIN_GROUP_ITEMS_PER_CLASS`
        allows, or invalid settings (the message names the argument).

    Notes
    -----
    The null hypothesis is the grouped Dawid–Skene model with a prevalence pi_g per score
    group and one confusion matrix C_j per annotator,
    P(ratings | g) = sum_k pi_gk prod_r C_{j_r}[k, a_r]; under class-conditional noise it
    holds exactly, whatever the grouping. The alternative gives every annotator a
    confusion matrix C_jg per group. The statistic is LR = 2 (l_1 - l_0): l_0 from the
    multistart EM fit of the null, l_1 from EM on the alternative started at the null
    fit's item posteriors (so LR >= 0, and the same computation runs on the data and on
    every bootstrap data set). Its nominal degrees of freedom are
    df = (P - J) K (K - 1), P being the (annotator, group) pairs with ratings.

    Reference distributions. 'chi2': Wilks' theorem, valid when the null parameters are
    interior and each group identifies its own channels (three or more annotators). With
    K classes every annotator and group has a K x K table, so for K >= 3 (and for accurate
    annotators or extreme groups when K = 2) cells are sparse, entries of C sit at 0 and
    the chi-square law is off. 'bootstrap': ``n_boot`` data sets drawn under the null
    with the observed design (the same items, annotators and groups), both models refitted
    by EM, p = (1 + #{LR* >= LR}) / (n_boot + 1). 'bartlett': the bootstrap Bartlett
    correction (Rocke, 1989): LR is rescaled by df / mean(LR*) and referred to
    chi-square(df), which needs far fewer data sets than a bootstrap p-value and reaches
    p-values below 1 / (n_boot + 1); it corrects the mean, not the shape.

    The bootstrap data sets are drawn from one M-step at the null fit's item posteriors
    with :data:`PSEUDOCOUNT` (1/2) added to every count, (n_jkl + 1/2) / (n_jk + K/2), not
    from the fit itself: the fit puts every confusion the data did not show at exactly 0,
    data drawn from it show fewer distinct confusions, and their LR is smaller (a boundary
    effect: on CIFAR-10N-sized data the mean bootstrap LR was 5.4% below the true null
    mean without the pseudo-counts, 1.3% below with them; see benchmarks/README.md).

    A rejection says the ratings depend on the score given the true class, which biases
    targets and metrics built on class-conditional channels; it can also come from other
    misfit that varies with the score (annotators dependent given the class). Acceptance
    does not prove the assumption: the power grows with the items and annotators and
    falls with the number of classes.

    References
    ----------
    Rocke, D. M. (1989). Bootstrap Bartlett adjustment in seemingly unrelated regression.
    Journal of the American Statistical Association 84(406), 598-601.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> conf = np.tile([[0.8, 0.2], [0.25, 0.75]], (3, 1, 1))
    >>> sim = nc.simulate.dawid_skene(1500, [0.5, 0.5], conf, seed=3)
    >>> scores = np.random.default_rng(3).random(1500)
    >>> res = nc.annotators.noise_check(sim.annotations, scores, n_groups=3)
    >>> res.method, res.status, res.df   # dense tables: 'auto' uses the chi-square
    ('chi2', 'ok', 12)
    """
    ann, p = _check_inputs(annotations, scores)
    L = _check_n_groups(n_groups, ann)
    check_choice(test, "test", ("auto", "chi2", "bartlett", "bootstrap"))
    p_threshold = check_real(p_threshold, "p_threshold", minimum=0.0, maximum=1.0, strict=True)
    n_boot = None if n_boot is None else check_int(n_boot, "n_boot", minimum=2)
    em = EM(n_starts=5) if method is None else as_method(method, (EM,), where="noise_check")
    max_iter, tol = em.max_iter, em.tol
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    k_fit, k_boot = jax.random.split(as_key(check_seed(seed)))
    groups = score_groups(p, L)
    details = {"grouping": "probability" if p.ndim == 1 else "confidence",
               "group_index": groups, "items": ann.items, "n_groups_requested": L}
    L = int(groups.max()) + 1
    if L < 2:
        return _not_tested(p_threshold, 0, details, "every item has the same score, so "
                           "the scores do not vary and there is one score group")
    K, J = ann.n_classes, ann.n_annotators
    arr = ann.engine_arrays()
    n_rated = np.zeros((J, L))
    np.add.at(n_rated, (arr.annotator, groups[arr.item]), 1)
    df = int(((n_rated > 0).sum() - (n_rated.sum(1) > 0).sum()) * K * (K - 1))
    progress = check_progress(progress)
    fit0 = _null_fit(ann, groups, L, fit, em, k_fit, progress)
    details["fit_status"] = fit0.status
    if fit0.status not in _USABLE_FIT:
        return _not_tested(p_threshold, df, details, f"the shared-channel fit's status is "
                           f"{fit0.status!r} ({fit0.message or 'no message'})")
    if df == 0:
        return _not_tested(p_threshold, df, details, "no annotator rated items in two "
                           "score groups, so shared and per-group channels are one model")
    data0, ll0, ll1, prev1, conf1 = _observed(ann, fit0, groups, L, max_iter, tol)
    stat = max(2.0 * (float(ll1.sum()) - float(ll0.sum())), 0.0)
    min_count = _expected_counts_min(fit0.group_prevalence, fit0.confusion, n_rated)
    few = int(((n_rated > 0).sum(0) < 3).sum())  # groups with fewer than three annotators
    dense = min_count >= MIN_EXPECTED_COUNT and few == 0
    ref = test if test != "auto" else ("chi2" if dense else "bartlett")
    conf1 = conf1.reshape(J, L, K, K).transpose(1, 0, 2, 3).copy()
    conf1[(n_rated == 0).T] = np.nan
    details.update(loglik_shared=float(ll0.sum()), loglik_group=float(ll1.sum()),
                   min_expected_count=min_count, confusion_shared=fit0.confusion,
                   confusion_group=conf1)
    if ref == "chi2":
        p_value, n_boot = float(chi2.sf(stat, df)), 0
    else:
        n_boot = n_boot if n_boot is not None else (19 if ref == "bartlett" else 99)
        boot, conv = _bootstrap(k_boot, fit0.item_posterior, data0, n_boot, max_iter, tol,
                                batch_size, progress)
        ok = np.isfinite(boot)
        if ref == "bartlett":
            details["bartlett_factor"] = float(boot[ok].mean()) / df
            p_value = float(chi2.sf(stat / details["bartlett_factor"], df))
        else:
            p_value = float((1 + np.sum(boot[ok] >= stat)) / (ok.sum() + 1))
        details.update(boot_statistics=boot, n_boot_failed=int((~ok).sum()),
                       n_boot_not_converged=int((~conv).sum()))
    s = p if p.ndim == 1 else p.max(axis=1)
    table = _group_table(groups, L, s, ll0, ll1, fit0, prev1, conf1, n_rated)
    statuses, message = [], ""
    if p_value <= p_threshold:
        statuses.append(REJECTED)
        message = _reject_message(stat, df, ref, p_value, p_threshold, details["grouping"],
                                  table)
        warnings.warn("class-conditional noise: " + message, NoisycalWarning,
                      stacklevel=user_stacklevel())
    if ref == "chi2" and not dense:  # forced by test='chi2' on sparse tables
        statuses.append(SPARSE)
        note = _sparse_note(min_count, few)
        message = (join_messages(message, "its p-value comes from " + note) if message
                   else "was tested against " + note)
        warnings.warn("noise check: " + note, NumericalWarning, stacklevel=user_stacklevel())
    statuses = ordered_statuses(statuses)
    return NoiseCheck(stat, df, p_value, ref, p_threshold, statuses[0], message, table,
                      n_boot, details, statuses)


def _check_n_groups(n_groups: int, ann: Annotations) -> int:
    """``n_groups`` checked against :data:`MIN_GROUP_ITEMS_PER_CLASS`."""
    L = check_int(n_groups, "n_groups", minimum=2)
    n, K = ann.n_items, ann.n_classes
    most = n // (MIN_GROUP_ITEMS_PER_CLASS * K)
    if L > most:
        raise ValueError(f"n_groups: {L} score groups of {n} items leave {n / L:.3g} item(s) "
                         f"per group; the check needs at least {MIN_GROUP_ITEMS_PER_CLASS} "
                         f"items per class per group on average (n_items >= "
                         f"{MIN_GROUP_ITEMS_PER_CLASS} x n_classes x n_groups), so at most "
                         f"{most} groups of these {n} items and {K} classes"
                         + (" (too few items for any test)" if most < 2 else ""))
    return L


def _sparse_note(min_count: float, few: int) -> str:
    """Why a forced chi-square reference is unreliable (:data:`SPARSE`)."""
    why = []
    if min_count < MIN_EXPECTED_COUNT:
        why.append(f"the smallest expected (annotator, group, true, observed) count is "
                   f"{min_count:.3g}, below {MIN_EXPECTED_COUNT:g}")
    if few:
        why.append(f"{few} score group(s) have fewer than three annotators")
    return ("a chi-square reference that is unreliable on these sparse tables ("
            + "; ".join(why) + "), so its p-value can be far off; test='auto' would use "
            "the bootstrap Bartlett correction here (test='bartlett'), or use the "
            "parametric bootstrap (test='bootstrap')")


def _reject_message(stat: float, df: int, ref: str, p_value: float, p_threshold: float,
                    grouping: str, table: pd.DataFrame) -> str:
    gap = (table["accuracy_group"] - table["accuracy_shared"]).abs()
    worst = table.loc[gap.idxmax()]
    return (f"the noise check rejects: LR {stat:.1f} on {df} df, {ref} p = {p_value:.3g} "
            f"<= {p_threshold:g}; the annotators' channels vary with the classifier's "
            f"{grouping} (score group {int(worst['group'])}, scores {worst['score_low']:.4g} "
            f"to {worst['score_high']:.4g}: accuracy {worst['accuracy_group']:.3f} with its "
            f"own channels, {worst['accuracy_shared']:.3f} shared)")
