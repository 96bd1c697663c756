"""Where a fit meets annotations: annotators by id, classes by name, items by id.

Every function that takes a fitted annotator model and annotations (corrected and
posterior targets, ``predict``, posterior predictive checks, model comparison) reads the
ratings through :func:`match_ratings`, so they all follow one rule:

- **annotators** are matched to the fit's channels by id, in any order, a subset of them
  allowed; an annotator the fit has not seen is refused by name. A fit with channels per
  (annotator, group) (``GroupedDawidSkene(channels='group')``) also reads ratings by the
  original annotator ids: each rating takes the channel of its annotator in its item's
  group.
- **classes** are matched by name: the annotations must have the fit's class set (in any
  order); a class the fit does not have, or one it has that the annotations lack, is
  refused by name.
- **items** are matched by id where a function needs them (a grouped fit reads each
  item's group from the items it was fitted on): an unknown item is refused by name.

The fit is given as plain arrays (:class:`FitIds`), so this module knows nothing of the
engines: :meth:`noisycal.engines.results.AnnotatorFit.match` builds them.
:func:`same_ratings` compares the ratings themselves, who gave each included
(vectorised: one sorted integer code per rating, no Python tuples).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._util.types import ArrayLike
from .core import Annotations
from .encoding import show

__all__ = ["FitIds", "RatingMatch", "ITEM_RULES", "positions", "match_ratings",
           "same_ratings", "rating_codes", "with_classes"]

#: How :func:`match_ratings` treats items the fit was not fitted on.
ITEM_RULES = ("any", "fitted")


def positions(ids: ArrayLike, reference: ArrayLike) -> np.ndarray:
    """The position of each id in ``reference`` (-1 where absent), vectorised.

    Ids are compared as Python compares them (``1 == 1.0``, ``'1' != 1``).

    Parameters
    ----------
    ids : array-like of shape (n,)
    reference : array-like of shape (m,)
        Unique ids.

    Returns
    -------
    ndarray of shape (n,), int64

    Examples
    --------
    >>> positions(["b", "x", "a"], ["a", "b"]).tolist()
    [1, -1, 0]
    """
    ref = pd.Index(np.asarray(reference))
    return np.asarray(ref.get_indexer(pd.Index(np.asarray(ids))), dtype=np.int64)


def _ids(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of ids, got shape {arr.shape}")
    if pd.Index(arr).has_duplicates:
        raise ValueError(f"{name} must not repeat an id")
    return arr


def _codes(values: Any, name: str, size: int | None, n: int) -> np.ndarray:
    """``n`` integer codes in 0..size-1 (``size`` None: any non-negative code)."""
    arr = np.asarray(values)
    if arr.shape != (n,) or arr.dtype.kind not in "iu" or (arr.size and (
            arr.min() < 0 or (size is not None and arr.max() >= size))):
        upto = "non-negative" if size is None else f"in 0..{size - 1}"
        raise ValueError(f"{name} must be {n} integer codes {upto}, got dtype {arr.dtype} "
                         f"and shape {arr.shape}")
    return arr.astype(np.int64)


@dataclass(frozen=True)
class FitIds:
    """What a fit knows of the data it was fitted on, as plain arrays.

    Parameters
    ----------
    annotators : array-like of shape (n_channels,)
        Ids of the fit's channels (its ``annotators``).
    classes : array-like of shape (n_classes,)
        The fit's class labels, in its order.
    items : array-like of shape (n_items,), optional
        The fitted items' ids.
    item_groups : int array-like of shape (n_items,), optional
        The group code of each fitted item (None: one group).
    channel_annotators : array-like of shape (n_channels,), optional
        With channels per (annotator, group): the annotator id behind each channel.
    channel_groups : int array-like of shape (n_channels,), optional
        With channels per (annotator, group): the group code of each channel.
    ratings : tuple of three int arrays of shape (n_ratings,), optional
        The fitted ratings as (item, channel, class) codes into ``items``,
        ``annotators`` and ``classes`` (for :func:`same_ratings`).
    """

    annotators: Any
    classes: Any
    items: Any = None
    item_groups: Any = None
    channel_annotators: Any = None
    channel_groups: Any = None
    ratings: Any = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "annotators", _ids(self.annotators, "annotators"))
        set_(self, "classes", _ids(self.classes, "classes"))
        if self.items is not None:
            set_(self, "items", _ids(self.items, "items"))
        if self.item_groups is not None:
            if self.items is None:
                raise ValueError("item_groups needs items")
            set_(self, "item_groups", _codes(self.item_groups, "item_groups", None,
                                             self.items.size))
        if (self.channel_annotators is None) != (self.channel_groups is None):
            raise ValueError("give both channel_annotators and channel_groups, or neither")
        if self.channel_annotators is not None:
            J = self.annotators.size
            who = np.asarray(self.channel_annotators)
            if who.shape != (J,):
                raise ValueError(f"channel_annotators must name one annotator per channel "
                                 f"({J}), got shape {who.shape}")
            set_(self, "channel_annotators", who)
            set_(self, "channel_groups", _codes(self.channel_groups, "channel_groups",
                                                None, J))
            if self.item_groups is None:
                raise ValueError("channels per group need item_groups")
        if self.ratings is not None:
            if self.items is None or len(self.ratings) != 3:
                raise ValueError("ratings must be three code arrays (item, channel, class), "
                                 "and need items")
            item, chan, label = self.ratings
            n = np.asarray(item).size
            set_(self, "ratings", (_codes(item, "ratings (items)", self.items.size, n),
                                   _codes(chan, "ratings (channels)", self.annotators.size, n),
                                   _codes(label, "ratings (classes)", self.classes.size, n)))

    @property
    def grouped_channels(self) -> bool:
        """Whether the fit has channels per (annotator, group)."""
        return self.channel_annotators is not None


@dataclass(frozen=True)
class RatingMatch:
    """The annotations' ratings in the fit's codes (:func:`match_ratings`).

    Attributes
    ----------
    channel : ndarray of shape (n_ratings,), int64
        The fit's channel of each rating (an index into ``fit.annotators``).
    label : ndarray of shape (n_ratings,), int64
        The fit's class code of each rating.
    item : ndarray of shape (n_ratings,), int64
        The annotations' item index of each rating (``annotations.item_index``).
    annotator_index : ndarray of shape (n_annotators,), int64, or None
        The fit's channel of each annotator of the annotations; None when the channel
        depends on the item's group.
    class_index : ndarray of shape (n_classes,), int64
        The fit's position of each class of the annotations.
    item_index : ndarray of shape (n_items,), int64, or None
        The fit's position of each item of the annotations, -1 for an item it was not
        fitted on; None when the fit has no item ids.
    groups : ndarray of shape (n_items,), int64, or None
        The group code of each item of the annotations, where known (given, or read from
        the fitted items; -1 for an item whose group is unknown).
    """

    channel: np.ndarray
    label: np.ndarray
    item: np.ndarray
    annotator_index: np.ndarray | None
    class_index: np.ndarray
    item_index: np.ndarray | None
    groups: np.ndarray | None


def _named(values: np.ndarray, what: str) -> str:
    more = f" ({values.size} in all)" if values.size > 5 else ""
    return f"{what}: {show(values)}{more}"


def _class_index(annotations: Annotations, fit: FitIds, what: str) -> np.ndarray:
    ci = positions(annotations.classes, fit.classes)
    lacking = fit.classes[positions(fit.classes, annotations.classes) < 0]
    if np.any(ci < 0) or lacking.size or annotations.n_classes != fit.classes.size:
        parts = []
        if np.any(ci < 0):
            parts.append(_named(annotations.classes[ci < 0], f"not classes of {what}"))
        if lacking.size:
            parts.append(_named(lacking, "missing from the annotations"))
        raise ValueError(f"annotations have classes {annotations.classes.tolist()} but "
                         f"{what} has classes {fit.classes.tolist()} ({'; '.join(parts)}): "
                         f"the ratings need {what}'s class set (in any order)")
    return ci


def _item_groups(annotations: Annotations, fit: FitIds, item_index: np.ndarray | None,
                 groups: ArrayLike | None) -> np.ndarray | None:
    if groups is not None:
        g = np.asarray(groups)
        if g.shape != (annotations.n_items,) or g.dtype.kind not in "iu" or (g.size and g.min()
                                                                            < 0):
            raise ValueError(f"groups must give each of the {annotations.n_items} items a "
                             f"non-negative integer group code, got {g.dtype} values of "
                             f"shape {g.shape}")
        return g.astype(np.int64)
    if fit.item_groups is None or item_index is None:
        return None
    return np.where(item_index >= 0, fit.item_groups[np.maximum(item_index, 0)], -1)


def _grouped_channels(annotations: Annotations, fit: FitIds, groups: np.ndarray | None,
                      what: str) -> np.ndarray:
    """The channel of each rating of a fit with channels per (annotator, group)."""
    source = pd.unique(pd.Index(fit.channel_annotators)).to_numpy()
    who = positions(annotations.annotators, source)
    if np.any(who < 0):
        raise ValueError("annotations name " + _named(
            annotations.annotators[who < 0], f"annotator(s) {what} has not seen") + "; "
            "their channels are unknown (fit a model that includes them, or leave their "
            "ratings out)")
    g_item = annotations.item_index
    if groups is None or np.any(groups[g_item] < 0):
        unknown = annotations.items if groups is None else annotations.items[groups < 0]
        raise ValueError(f"{what} has channels per (annotator, group), so each rating's "
                         "channel depends on its item's group: " + _named(
                             unknown, f"items {what} was not fitted on") + "; pass groups= "
                         "(each item's group code) or the fitted items")
    L = int(max(fit.channel_groups.max(), groups.max())) + 1
    table = np.full((source.size, L), -1, dtype=np.int64)
    table[positions(fit.channel_annotators, source), fit.channel_groups] = \
        np.arange(fit.annotators.size)
    channel = table[who[annotations.annotator_index], groups[g_item]]
    if np.any(channel < 0):
        r = np.flatnonzero(channel < 0)[0]
        raise ValueError(f"annotations: annotator "
                         f"{annotations.annotators[annotations.annotator_index[r]]!r} "
                         f"has no channel in group {int(groups[g_item[r]])} of {what} "
                         f"(item {annotations.items[g_item[r]]!r}; "
                         f"{int(np.sum(channel < 0))} such rating(s)): it rated no item of "
                         "that group when the model was fitted")
    return channel


def match_ratings(annotations: Annotations, fit: FitIds, *, items: str = "any",
                  groups: ArrayLike | None = None, what: str = "the fit") -> RatingMatch:
    """The annotations' ratings in a fit's codes: annotators by id, classes by name.

    Parameters
    ----------
    annotations : Annotations
    fit : FitIds
        The fit's ids.
    items : {'any', 'fitted'}, default='any'
        'fitted': every item must be one the fit was fitted on (refused by name
        otherwise); 'any': other items are allowed where the fit does not need them.
    groups : int array-like of shape (n_items,), optional
        Each item's group code, for items whose group the fit does not know (a fit with
        channels per group reads each rating's channel from it).
    what : str, default='the fit'
        How messages name the fit.

    Returns
    -------
    RatingMatch

    Raises
    ------
    ValueError
        For annotations that are not :class:`~noisycal.Annotations` (naming
        ``annotations``), an annotator, class or item the fit does not know (named), or a
        class of the fit the annotations lack.

    Examples
    --------
    >>> from noisycal.annotations.core import Annotations
    >>> fit = FitIds(annotators=["x", "y", "z"], classes=["no", "yes"])
    >>> ann = Annotations.from_arrays([0, 0], ["z", "x"], ["yes", "no"],
    ...                               classes=["yes", "no"])
    >>> m = match_ratings(ann, fit)
    >>> m.annotator_index.tolist(), m.class_index.tolist(), m.channel.tolist()
    ([2, 0], [1, 0], [2, 0])
    """
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations, got "
                         f"{type(annotations).__name__}")
    if items not in ITEM_RULES:
        raise ValueError(f"items must be one of {ITEM_RULES}, got {items!r}")
    ci = _class_index(annotations, fit, what)
    item_index = None if fit.items is None else positions(annotations.items, fit.items)
    if items == "fitted":
        if item_index is None:
            raise ValueError(f"{what} carries no item ids, so its items cannot be matched")
        if np.any(item_index < 0):
            raise ValueError("annotations have " + _named(
                annotations.items[item_index < 0], f"items {what} was not fitted on"))
    g = _item_groups(annotations, fit, item_index, groups)
    direct = positions(annotations.annotators, fit.annotators)
    if np.all(direct >= 0):
        ai = direct
        channel = direct[annotations.annotator_index]
    elif fit.grouped_channels:
        ai = None
        channel = _grouped_channels(annotations, fit, g, what)
    else:
        raise ValueError("annotations name " + _named(
            annotations.annotators[direct < 0], f"annotator(s) {what} has not seen")
            + "; their channels are unknown (fit a model that includes them, or leave "
            "their ratings out)")
    return RatingMatch(channel=channel, label=ci[annotations.label_index],
                       item=np.asarray(annotations.item_index, dtype=np.int64),
                       annotator_index=ai, class_index=ci, item_index=item_index, groups=g)


def rating_codes(item: ArrayLike, channel: ArrayLike, label: ArrayLike, n_channels: int,
                 n_classes: int) -> np.ndarray:
    """One sorted int64 code per rating, ``(item * n_channels + channel) * n_classes + label``.

    Two rating sets in the same codes are the same multiset of (item, annotator, label)
    exactly when their sorted codes are equal.

    Parameters
    ----------
    item, channel, label : int array-like of shape (n_ratings,)
    n_channels, n_classes : int

    Returns
    -------
    ndarray of shape (n_ratings,), int64

    Examples
    --------
    >>> rating_codes([1, 0], [0, 1], [1, 0], 2, 2).tolist()
    [2, 5]
    """
    code = (np.asarray(item, np.int64) * n_channels + np.asarray(channel, np.int64)) \
        * n_classes + np.asarray(label, np.int64)
    return np.sort(code)


def same_ratings(match: RatingMatch, fit: FitIds, what: str = "the fit") -> str | None:
    """Why matched annotations are not the ratings a fit was fitted on (None if they are).

    The same ratings means the same items (as a set), and for every item the same
    ratings by the same annotators (who gave each rating counts: ratings swapped
    between two annotators are other data), as a multiset.

    Parameters
    ----------
    match : RatingMatch
        The annotations matched to ``fit`` (:func:`match_ratings`).
    fit : FitIds
        With ``ratings`` and ``items``.
    what : str, default='the fit'

    Returns
    -------
    str or None
        A sentence naming the first difference found.
    """
    if fit.ratings is None or fit.items is None or match.item_index is None:
        return f"{what} does not carry the ratings it was fitted on"
    n_fit = fit.items.size
    new = match.item_index < 0
    if np.any(new):
        return f"the annotations have {int(new.sum())} item(s) {what} was not fitted on"
    if match.item_index.size != n_fit:
        return (f"{what} was fitted on {n_fit} items, the annotations have "
                f"{match.item_index.size}")
    f_item, f_chan, f_label = fit.ratings
    if f_item.size != match.channel.size:
        return (f"{what} was fitted on {f_item.size} ratings, the annotations have "
                f"{match.channel.size}")
    J, K = fit.annotators.size, fit.classes.size
    mine = rating_codes(match.item_index[match.item], match.channel, match.label, J, K)
    theirs = rating_codes(f_item, f_chan, f_label, J, K)
    if not np.array_equal(mine, theirs):
        differ = int(np.sum(mine != theirs))
        return (f"the ratings differ ({differ} of {mine.size} in sorted order): the same "
                "items, but other annotators or labels")
    return None


def with_classes(annotations: Annotations, classes: ArrayLike) -> Annotations:
    """The same ratings with the classes listed in another order.

    Parameters
    ----------
    annotations : Annotations
    classes : array-like
        The annotations' class labels, each once, in the new order.

    Returns
    -------
    Annotations
        ``annotations`` itself when the order is unchanged.

    Raises
    ------
    ValueError
        If ``classes`` is not the annotations' class set.

    Examples
    --------
    >>> from noisycal.annotations.core import Annotations
    >>> ann = Annotations.from_arrays([0, 1], [0, 0], ["b", "a"])
    >>> with_classes(ann, ["b", "a"]).label_index.tolist()
    [0, 1]
    """
    new = _ids(classes, "classes")
    pos = positions(annotations.classes, new)
    if new.size != annotations.n_classes or np.any(pos < 0):
        raise ValueError(f"classes must list the annotations' classes "
                         f"{annotations.classes.tolist()} in some order, got {new.tolist()}")
    if np.array_equal(pos, np.arange(new.size)):
        return annotations
    return Annotations(annotations.item_index, annotations.annotator_index,
                       pos[annotations.label_index], items=annotations.items,
                       annotators=annotations.annotators, classes=new,
                       annotators_known=annotations.annotators_known)
