"""Rating patterns: items with identical ratings collapsed into one weighted row.

Items whose multisets of (annotator, label) are equal have identical posteriors under
every Dawid–Skene model, so EM on one representative per pattern, weighted by the
pattern's count, is the same EM (:func:`collapse_patterns`, :func:`pattern_data`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from noisycal.models.dawid_skene import DSData, make_data

__all__ = ["collapse_patterns", "PatternData", "pattern_data", "collapse_pays",
           "COLLAPSE_SAMPLE", "COLLAPSE_MIN_SAVING"]

#: Items sampled by :func:`collapse_pays` to estimate how many rows collapsing would save.
COLLAPSE_SAMPLE = 20_000
#: Collapse only when it is estimated to remove at least this share of the items.
COLLAPSE_MIN_SAVING = 0.05


def collapse_patterns(item: np.ndarray, code: np.ndarray, n_items: int,
                      extra: tuple[np.ndarray, ...] = ()) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Group items with identical rating patterns (exact sufficient statistics of EM).

    Items whose multisets of (annotator, label) codes are equal (and whose ``extra``
    keys, e.g. group and gold label, are equal) have identical posteriors under every
    Dawid–Skene model, so EM can run on one representative per pattern weighted by its
    multiplicity. A pattern is identified by two independent 64-bit multiset hashes
    (sums of fixed pseudo-random keys of its codes), so two different patterns collide
    with probability about 2**-128 per pair.

    Parameters
    ----------
    item : int array of shape (n_ratings,)
    code : int array of shape (n_ratings,)
        One code per (annotator, label) pair, e.g. ``annotator * K + label``.
    n_items : int
    extra : tuple of (n_items,) int arrays
        Item keys that must also match (group, gold class).

    Returns
    -------
    pattern : (n_items,) pattern index of each item (patterns numbered in the order of
        their first item)
    representative : (n_patterns,) the first item of each pattern (increasing)
    counts : (n_patterns,) items per pattern
    """
    keys = np.random.default_rng(20261130).integers(0, 2**63, size=(2, int(code.max()) + 1),
                                                     dtype=np.uint64)
    h = np.zeros((n_items, 2 + len(extra)), dtype=np.uint64)
    if item.size and np.all(item[1:] >= item[:-1]):  # already sorted (the usual case)
        sorted_item, sorted_code = item, code
    else:
        order = np.argsort(item, kind="stable")
        sorted_item, sorted_code = item[order], code[order]
    starts = np.searchsorted(sorted_item, np.arange(n_items))
    with np.errstate(over="ignore"):  # uint64 sums wrap around: a hash, not a count
        h[:, 0] = np.add.reduceat(keys[0][sorted_code], starts)
        h[:, 1] = np.add.reduceat(keys[1][sorted_code], starts)
    for c, e in enumerate(extra):
        h[:, 2 + c] = np.asarray(e).astype(np.int64).astype(np.uint64)
    # one fast 1-D unique on a 64-bit digest of the whole row, then a check that every
    # item agrees with its representative on all columns (else the exact 2-D unique)
    mix = np.random.default_rng(7).integers(1, 2**63, size=h.shape[1], dtype=np.uint64) | 1
    with np.errstate(over="ignore"):
        digest = (h * mix).sum(axis=1)
    _, rep, pattern, counts = np.unique(digest, return_index=True, return_inverse=True,
                                        return_counts=True)
    pattern = pattern.ravel()
    if not np.array_equal(h, h[rep][pattern]):  # a digest collision (probability ~1e-7)
        _, rep, pattern, counts = np.unique(h, axis=0, return_index=True,
                                            return_inverse=True, return_counts=True)
        pattern = pattern.ravel()
    # number the patterns by first appearance, so that items sorted by index stay sorted
    order = np.argsort(rep)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[pattern].astype(np.int32), rep[order], counts[order]


def collapse_pays(item: np.ndarray, code: np.ndarray, n_items: int, *,
                  sample: int = COLLAPSE_SAMPLE, min_saving: float = COLLAPSE_MIN_SAVING,
                  seed: int = 20261202) -> bool:
    """Whether collapsing rating patterns is estimated to remove >= ``min_saving`` of the
    items (a cheap test on a random sample of items, so that designs where nearly every
    item has its own pattern skip the collapse, which then costs more than it saves).

    With pattern probabilities p_j, the items saved by collapsing n items are about
    ``n^2 sum_j p_j^2 / 2`` while rare patterns dominate; a sample of m items saves
    ``d_m`` about ``m^2 sum_j p_j^2 / 2``, so the saved share of the n items is estimated
    by ``d_m n / m^2`` (capped at 1; an underestimate once patterns repeat often, which
    only matters far above any sensible ``min_saving``). Always True when
    ``n_items <= sample`` (the exact collapse is then cheap). The choice of ``sample``
    and ``min_saving`` is ours: a collapse costs about as much as 3 EM iterations of the
    uncollapsed items, and EM runs tens to hundreds of iterations per start.

    Parameters
    ----------
    item, code : int arrays of shape (n_ratings,)
        As in :func:`collapse_patterns`.
    n_items : int
    sample : int, default=20,000
    min_saving : float, default=0.05
    seed : int
        The sample of items (fixed: the decision is deterministic).
    """
    if n_items <= sample:
        return True
    pick = np.zeros(n_items, bool)
    pick[np.random.default_rng(seed).choice(n_items, size=sample, replace=False)] = True
    keep = pick[item]
    sub_item = np.cumsum(pick)[item[keep]] - 1  # sampled items renumbered 0..sample-1
    _, rep, _ = collapse_patterns(sub_item, code[keep], sample)
    saved = sample - rep.size
    return saved * n_items / sample**2 >= min_saving


class PatternData(NamedTuple):
    """Ratings collapsed to distinct rating patterns (see :func:`collapse_patterns`).

    Attributes
    ----------
    data : DSData
        One row per pattern (float64 context of the caller).
    pattern : (n_items,) int
        Pattern of every original item.
    representative : (n_patterns,) int
        One original item of each pattern.
    counts : (n_patterns,) int
        Items per pattern (EM weights).
    gold : (n_patterns,) int or None
        Gold class of each pattern (``-1`` when unknown).
    collapsed : bool
        False when the items were kept as they are (``collapse='auto'`` judged that
        collapsing would not pay): then ``pattern`` and ``representative`` are
        ``arange(n_items)`` and ``counts`` ones.
    """

    data: DSData
    pattern: np.ndarray
    representative: np.ndarray
    counts: np.ndarray
    gold: np.ndarray | None
    collapsed: bool = True


def pattern_data(item: np.ndarray, annotator: np.ndarray, label: np.ndarray, *,
                 n_items: int, n_annotators: int, n_classes: int, group: np.ndarray | None,
                 n_groups: int, gold: np.ndarray | None = None,
                 collapse: bool | str = True) -> PatternData:
    """Collapse ratings to distinct patterns and pack them for EM (the same EM fit).

    Parameters
    ----------
    item, annotator, label : int arrays of shape (n_ratings,)
    n_items, n_annotators, n_classes : int
    group : int array of shape (n_items,), optional
        Group of each item (patterns never mix groups).
    n_groups : int
    gold : int array of shape (n_items,), optional
        Known classes, ``-1`` where unknown (patterns never mix gold classes).
    collapse : bool or 'auto', default=True
        'auto': collapse only when :func:`collapse_pays` (the EM fit is the same either
        way, up to the order of sums); False: keep every item.

    Returns
    -------
    PatternData
    """
    K = n_classes
    g_items = np.zeros(n_items, np.int32) if group is None else np.asarray(group, np.int32)
    gold_items = np.full(n_items, -1, np.int32) if gold is None else np.asarray(gold, np.int32)
    code = np.asarray(annotator, np.int64) * K + label
    if collapse == "auto":
        collapse = collapse_pays(np.asarray(item, np.int64), code, n_items)
    if not collapse:
        data = make_data(item, annotator, label, n_items=n_items, n_annotators=n_annotators,
                         n_classes=K, group=g_items, n_groups=n_groups)
        every = np.arange(n_items)
        return PatternData(data, every, every, np.ones(n_items, np.int64),
                           None if gold is None else gold_items, False)
    pattern, rep, counts = collapse_patterns(np.asarray(item, np.int64), code, n_items,
                                             extra=(g_items, gold_items))
    keep = np.zeros(n_items, bool)
    keep[rep] = True
    keep = keep[item]
    pos = np.full(n_items, -1, np.int64)
    pos[rep] = np.arange(rep.size)
    data = make_data(pos[item[keep]], annotator[keep], label[keep], n_items=rep.size,
                     n_annotators=n_annotators, n_classes=K, group=g_items[rep],
                     n_groups=n_groups)
    return PatternData(data, pattern, rep, counts, None if gold is None else gold_items[rep])
