"""Discrepancy statistics of ratings for posterior predictive checks of annotator models.

Every statistic is a function of the labels on a fixed design (which item and which
annotator each rating belongs to), computed for the observed labels and for each set of
replicated labels by one JAX function (:func:`discrepancy_values`), so observed and
replicated numbers are the same computation. Items with fewer than two ratings carry no
agreement and are left out of the agreement statistics.

The statistics (``name``: rows):

- ``'unanimity'``: share of items (with at least two ratings) whose ratings all agree.
- ``'distinct_labels'``: for m = 1, ..., min(K, largest number of ratings of an item),
  the share of those items with exactly m distinct labels.
- ``'annotator_agreement'``: per annotator, the mean over its ratings of the share of
  the item's *other* ratings that give the same label.
- ``'pairwise_agreement'``: the share of agreeing pairs among all pairs of ratings of
  one item, ``sum_i sum_k c_ik (c_ik - 1) / sum_i n_i (n_i - 1)`` (``c_ik``: ratings
  of item i with label k), and ``'kappa'``: the pooled Fleiss kappa
  ``(P_o - P_e) / (1 - P_e)`` with ``P_o`` that agreement and ``P_e = sum_k p_k^2``
  (``p_k``: share of all ratings with label k); with at most ``MAX_KAPPA_ANNOTATORS``
  annotators and no repeated (item, annotator) rating, also Cohen's kappa of every pair
  of annotators on the items both rated.
- ``'class_shares'``: share of all ratings with each label.
- ``'score_agreement'``: the pairwise agreement within each bin of a classifier score
  (equal-count bins of ``scores``).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax

from ..._util.jax import x64

__all__ = ["DISCREPANCIES", "MAX_KAPPA_ANNOTATORS", "Design", "make_design",
           "discrepancy_rows", "discrepancy_values"]

#: The discrepancy families, in table order.
DISCREPANCIES = ("unanimity", "distinct_labels", "annotator_agreement", "pairwise_agreement",
                 "kappa", "class_shares", "score_agreement")

#: Cohen's kappa is reported for every pair of annotators up to this many annotators.
MAX_KAPPA_ANNOTATORS = 10


class Design(NamedTuple):
    """The fixed part of the ratings: who rated what (and score bins).

    Attributes
    ----------
    item, annotator : int ndarray of shape (n_ratings,)
    n_items, n_annotators, n_classes : int
    n_per_item : int ndarray of shape (n_items,)
        Ratings per item.
    max_distinct : int
        min(K, largest number of ratings of an item).
    pairs : int ndarray of shape (n_pairs, 2)
        Annotator pairs for Cohen's kappa (none when not applicable).
    score_bin : int ndarray of shape (n_items,) or None
    bin_edges : ndarray of shape (n_bins + 1,) or None
    """

    item: np.ndarray
    annotator: np.ndarray
    n_items: int
    n_annotators: int
    n_classes: int
    n_per_item: np.ndarray
    max_distinct: int
    pairs: np.ndarray
    score_bin: np.ndarray | None
    bin_edges: np.ndarray | None


def make_design(item: np.ndarray, annotator: np.ndarray, *, n_items: int, n_annotators: int,
                n_classes: int, scores: np.ndarray | None = None, n_bins: int = 5) -> Design:
    """The :class:`Design` of ratings (and equal-count bins of ``scores``).

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
    n_items, n_annotators, n_classes : int
    scores : ndarray of shape (n_items,), optional
        One classifier score per item (validated by the caller).
    n_bins : int, default=5
        Equal-count bins of ``scores``: edges at the quantiles, and fewer bins when
        scores tie at the quantiles. A bin that holds no score (tied scores can leave
        one between two quantiles) is merged into the bin below, so every bin holds
        items.
    """
    item = np.asarray(item, np.int64)
    annotator = np.asarray(annotator, np.int64)
    per_item = np.bincount(item, minlength=n_items)
    pairs = np.zeros((0, 2), np.int64)
    repeated = np.unique(item * n_annotators + annotator).size < item.size
    if n_annotators <= MAX_KAPPA_ANNOTATORS and not repeated:
        a, b = np.triu_indices(n_annotators, k=1)
        pairs = np.stack([a, b], axis=1)
    score_bin = edges = None
    if scores is not None:
        edges = np.unique(np.quantile(scores, np.linspace(0.0, 1.0, n_bins + 1)))
        score_bin = _score_bins(scores, edges)
        held = np.bincount(score_bin, minlength=edges.size - 1) > 0
        if not held.all():  # drop the lower edge of each empty bin (never the first)
            edges = np.append(edges[:-1][held], edges[-1])
            score_bin = _score_bins(scores, edges)
    return Design(item, annotator, int(n_items), int(n_annotators), int(n_classes),
                  per_item, int(min(n_classes, per_item.max(initial=0))), pairs,
                  score_bin, edges)


def _score_bins(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each score: ``[e_b, e_{b+1})``, the last bin closed (0 for one edge)."""
    return np.clip(np.searchsorted(edges, scores, side="right") - 1, 0,
                   max(edges.size - 2, 0))


def discrepancy_rows(design: Design, which: tuple[str, ...], annotators: np.ndarray,
                     classes: np.ndarray) -> list[tuple[str, str]]:
    """``(discrepancy, term)`` of every value :func:`discrepancy_values` returns.

    Parameters
    ----------
    design : Design
    which : tuple of str
        Discrepancy families, a subset of :data:`DISCREPANCIES` in that order.
    annotators, classes : ndarray
        Ids used in the terms.
    """
    rows: list[tuple[str, str]] = []
    for name in which:
        if name == "unanimity":
            rows.append((name, "all ratings agree"))
        elif name == "distinct_labels":
            rows += [(name, f"{m} distinct") for m in range(1, design.max_distinct + 1)]
        elif name == "annotator_agreement":
            rows += [(name, str(a)) for a in annotators]
        elif name == "pairwise_agreement":
            rows.append((name, "all pairs"))
        elif name == "kappa":
            rows.append((name, "Fleiss (pooled)"))
            rows += [(name, f"Cohen {annotators[a]} vs {annotators[b]}")
                     for a, b in design.pairs]
        elif name == "class_shares":
            rows += [(name, str(c)) for c in classes]
        elif name == "score_agreement":
            e = design.bin_edges
            rows += [(name, f"score in [{e[b]:.3g}, {e[b + 1]:.3g}"
                      + ("]" if b == e.size - 2 else ")")) for b in range(e.size - 1)]
    return rows


@partial(jax.jit, static_argnames=("which", "n", "J", "K", "max_distinct", "n_sbins",
                                   "batch_size"))
def _kernel(labels: Any, item: Any, ann: Any, n_i: Any, pairs: Any, sbin: Any, *,
            which: tuple[str, ...], n: int, J: int, K: int, max_distinct: int, n_sbins: int,
            batch_size: int) -> Any:
    """``labels (D, n_ratings) -> (D, n_rows)``, compiled once per sizes and families."""
    import jax.numpy as jnp

    multi = n_i >= 2
    n_multi = jnp.sum(multi)
    pairs_i = n_i * (n_i - 1.0)

    def ratio(num: jax.Array, den: jax.Array) -> jax.Array:
        return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), jnp.nan)

    def one(label: jax.Array) -> jax.Array:
        onehot = jax.nn.one_hot(label, K, dtype=jnp.float64)
        c = jax.ops.segment_sum(onehot, item, num_segments=n)  # (n, K)
        agree_i = jnp.sum(c * (c - 1.0), axis=1)  # agreeing ordered pairs per item
        share = onehot.mean(0)
        p_o = ratio(jnp.sum(agree_i), jnp.sum(pairs_i))
        out = []
        for name in which:
            if name == "unanimity":
                out.append(ratio(jnp.sum(multi & (c.max(1) == n_i)), n_multi)[None])
            elif name == "distinct_labels":
                d = jnp.sum(c > 0, axis=1)
                m = jnp.arange(1, max_distinct + 1)
                out.append(ratio(jnp.sum(multi[:, None] & (d[:, None] == m), 0), n_multi))
            elif name == "annotator_agreement":
                same = (c[item, label] - 1.0) / jnp.maximum(n_i[item] - 1.0, 1.0)
                use = multi[item]
                out.append(ratio(jax.ops.segment_sum(jnp.where(use, same, 0.0), ann, J),
                                 jax.ops.segment_sum(use.astype(jnp.float64), ann, J)))
            elif name == "pairwise_agreement":
                out.append(p_o[None])
            elif name == "kappa":
                p_e = jnp.sum(share ** 2)
                out.append(ratio(p_o - p_e, 1.0 - p_e)[None])
                if pairs.shape[0]:
                    out.append(_cohen(label, item, ann, pairs, n, J, K))
            elif name == "class_shares":
                out.append(share)
            elif name == "score_agreement":
                out.append(ratio(jax.ops.segment_sum(agree_i, sbin, n_sbins),
                                 jax.ops.segment_sum(pairs_i, sbin, n_sbins)))
        return jnp.concatenate(out)

    return jax.lax.map(one, labels, batch_size=batch_size)


def _cohen(label: Any, item: Any, ann: Any, pairs: Any, n: int, J: int, K: int) -> Any:
    """Cohen's kappa of each annotator pair on the items both rated, (n_pairs,)."""
    import jax.numpy as jnp

    wide = jnp.full((n, J), -1, label.dtype).at[item, ann].set(label)
    A, B = wide[:, pairs[:, 0]], wide[:, pairs[:, 1]]  # (n, P)
    both = (A >= 0) & (B >= 0)
    n_both = jnp.sum(both, 0).astype(jnp.float64)
    p_o = jnp.sum(both & (A == B), 0) / jnp.maximum(n_both, 1.0)
    pa = jnp.sum(both[..., None] * jax.nn.one_hot(A, K), 0) / jnp.maximum(n_both, 1.0)[:, None]
    pb = jnp.sum(both[..., None] * jax.nn.one_hot(B, K), 0) / jnp.maximum(n_both, 1.0)[:, None]
    p_e = jnp.sum(pa * pb, 1)
    ok = (n_both > 0) & (p_e < 1.0)
    return jnp.where(ok, (p_o - p_e) / jnp.where(ok, 1.0 - p_e, 1.0), jnp.nan)


def discrepancy_values(labels: np.ndarray, design: Design, which: tuple[str, ...], *,
                       batch_size: int | None = None) -> np.ndarray:
    """The discrepancies of D sets of labels on one design, in float64.

    Parameters
    ----------
    labels : int array of shape (D, n_ratings)
        Class indices.
    design : Design
    which : tuple of str
        Discrepancy families (see :func:`discrepancy_rows` for the rows).
    batch_size : int, optional
        Label sets evaluated together (default: about 4 million numbers per batch).

    Returns
    -------
    ndarray of shape (D, n_rows)
        NaN where a statistic is undefined (an annotator who never shares an item, a
        score bin without items rated twice).
    """
    import jax.numpy as jnp

    labels = np.asarray(labels)
    if batch_size is None:
        batch_size = max(1, 4_000_000 // max(1, design.n_items * design.n_classes))
    n_sbins = 0 if design.bin_edges is None else design.bin_edges.size - 1
    sbin = (np.zeros(design.n_items, np.int64) if design.score_bin is None
            else design.score_bin)
    with x64():
        out = _kernel(jnp.asarray(labels, jnp.int32), jnp.asarray(design.item),
                      jnp.asarray(design.annotator),
                      jnp.asarray(design.n_per_item, jnp.float64), jnp.asarray(design.pairs),
                      jnp.asarray(sbin), which=tuple(which), n=design.n_items,
                      J=design.n_annotators, K=design.n_classes,
                      max_distinct=design.max_distinct, n_sbins=n_sbins,
                      batch_size=int(min(batch_size, labels.shape[0])))
        return np.asarray(out, np.float64)
