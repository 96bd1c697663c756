"""Targets: what we believe the label of each item is, as an (n_items, n_classes) matrix.

Every calibration metric in noisycal compares predictions with a target ``T``;
row ``i`` of ``T`` says what we believe the label of item ``i`` is. The kinds:

=========  ===============================================  =====================
kind       row i                                            constructor
=========  ===============================================  =====================
hard       one-hot e_y of a clean label                     :func:`hard`
soft       annotator distribution pi_i (vote shares)        :func:`soft`
voted      one-hot of the majority vote                     :func:`voted`
corrected  unbiased estimate of e_Y (may leave [0, 1])      :func:`corrected`
posterior  P(Y_i = k | ratings) under a fitted model        :func:`posterior`
matrix     any real matrix the caller supplies              :func:`from_matrix`
=========  ===============================================  =====================

Constructors take the annotations first. A target built from annotations carries their
item ids (``Target.items``, in the annotations' item order) and class labels; metrics
check predictions with an index (or ``items=``) against them. A target built from a fit
whose status is not ``'ok'`` carries that status, and so does every Estimate made from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.statuses import join_messages, ordered_statuses
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    PROB_ATOL,
    check_array,
    check_choice,
    check_item_ids,
    check_items,
    encode_labels,
)
from ..annotations.matching import positions
from ..correction.labels import corrected_labels
from .circular import score_fingerprint
from .frame import frame_matrix, one_hot, vector_target
from .view import select_rows, target_html, target_repr

if TYPE_CHECKING:  # pragma: no cover
    from ..annotations.core import Annotations

__all__ = ["Target", "hard", "soft", "voted", "corrected", "posterior", "from_matrix",
           "as_target_matrix"]

_KINDS = ("hard", "soft", "voted", "corrected", "posterior", "matrix")


@dataclass(frozen=True, eq=False)
class Target:
    """An (n_items, n_classes) target matrix with its provenance.

    Parameters
    ----------
    values : ndarray of shape (n_items, n_classes)
        The target matrix, float64, read-only.
    kind : {'hard', 'soft', 'voted', 'corrected', 'posterior', 'matrix'}
        Where the rows come from.
    classes : ndarray of shape (n_classes,) or None
        Class labels of the columns, when known.
    details : mapping
        Provenance (for example the tie rule of a voted target).
    items : ndarray of shape (n_items,) or None
        Item ids of the rows (the annotations' item order), when known.
    status : str, default='ok'
        Status of the fit the target was built from; not 'ok' when that fit failed. The
        most severe of ``statuses``.
    message : str, default=''
        Why the status is not 'ok'.
    statuses : tuple of str, default=()
        Every status that applies (those of the fit, a rejected noise check), most
        severe first and without repeats (:data:`noisycal._util.statuses.SEVERITY`);
        merged with ``status``, and ``('ok',)`` when none applies, so ``status ==
        statuses[0]`` always.

    Notes
    -----
    ``np.asarray(target)`` gives the matrix, so a Target can be passed wherever an
    array is expected.
    """

    values: np.ndarray
    kind: str
    classes: np.ndarray | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    items: np.ndarray | None = None
    status: str = "ok"
    message: str = ""
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", _KINDS)
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])
        v = check_array(self.values, "values", ndim=2)
        _check_size(v.shape, "values")
        v = v.copy()
        v.setflags(write=False)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.classes is not None:
            object.__setattr__(self, "classes", np.asarray(self.classes))
            if len(self.classes) != v.shape[1]:
                raise ValueError(f"classes has {len(self.classes)} entries but values has "
                                 f"{v.shape[1]} columns")
        if self.items is not None:  # one id per row, none missing, none repeated
            object.__setattr__(self, "items", check_item_ids(self.items, v.shape[0]))

    @property
    def shape(self) -> tuple[int, int]:
        """(n_items, n_classes)."""
        return self.values.shape  # type: ignore[return-value]

    @property
    def n_items(self) -> int:
        """Number of items (rows)."""
        return int(self.values.shape[0])

    def to_frame(self) -> Any:
        """The target matrix as a pandas DataFrame: one row per item (indexed by the item
        ids when the target has them), one column per class."""
        import pandas as pd

        columns = list(self.classes) if self.classes is not None else None
        index = pd.Index(self.items, name="item") if self.items is not None else None
        return pd.DataFrame(self.values, index=index, columns=columns)

    @property
    def n_classes(self) -> int:
        """Number of classes (columns)."""
        return int(self.values.shape[1])

    @property
    def is_probability(self) -> bool:
        """Whether every row lies on the probability simplex (within 1e-6)."""
        v = self.values
        return bool(np.all(v >= -PROB_ATOL) and np.all(np.abs(v.sum(1) - 1.0) <= PROB_ATOL))

    def __len__(self) -> int:
        return self.n_items

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.values if dtype is None else self.values.astype(dtype)
        return np.array(out, copy=True) if copy else out

    # target[idx]: rows by integer array, boolean mask or slice (noisycal.targets.view)
    __getitem__, __repr__, _repr_html_ = select_rows, target_repr, target_html


def _check_size(shape: tuple[int, ...], name: str) -> None:
    """Refuse an empty target source: a label vector (1-D ``shape``) without a label, or a
    matrix without a row or with fewer than 2 columns; the message names ``name``, the
    argument the caller gave.

    Parameters
    ----------
    shape : tuple of int
    name : str
    """
    if len(shape) == 1 and shape[0] < 1:
        raise ValueError(f"{name} must contain at least one label, got shape {shape}")
    if len(shape) == 2 and (shape[0] < 1 or shape[1] < 2):
        raise ValueError(f"{name} must have at least 1 row and 2 columns, got {shape}")


def hard(labels: ArrayLike, *, n_classes: int | None = None, classes: ArrayLike | None = None,
         items: ArrayLike | None = None) -> Target:
    """One-hot target from clean labels.

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Class indices in ``0 .. n_classes - 1``, or any labels with ``classes=``
        (strings, a pandas Categorical).
    n_classes : int, optional
        Number of classes K (at least 2), for integer labels.
    classes : array-like, optional
        Class labels in the order of the target's columns (kept as given).
    items : array-like of shape (n_items,), optional
        Item ids of the rows (default: the index of a pandas ``labels``).

    Returns
    -------
    Target
        ``kind='hard'``, row i equal to e_{labels[i]}.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.targets.hard([0, 2], n_classes=3).values
    array([[1., 0., 0.],
           [0., 0., 1.]])
    >>> nc.targets.hard(["b", "a"], classes=["b", "a"]).values
    array([[1., 0.],
           [0., 1.]])
    """
    if items is None and hasattr(labels, "index") and hasattr(labels, "to_numpy"):
        items = np.asarray(labels.index)
    y, c = encode_labels(labels, classes=classes, n_classes=n_classes)
    _check_size(y.shape, "labels")
    return Target(one_hot(y, c.size), "hard", classes=c if classes is not None
                  or not np.array_equal(c, np.arange(c.size)) else None, items=items)


def soft(annotations: Annotations | None = None, *, counts: ArrayLike | None = None,
         distribution: ArrayLike | None = None) -> Target:
    """The annotator distribution pi-hat_i (share of ratings in each class).

    Give exactly one of ``annotations``, ``counts`` or ``distribution``.

    Parameters
    ----------
    annotations : Annotations, optional
        Ratings; row i of the target is the share of item i's ratings in each class.
    counts : array-like of shape (n_items, n_classes), optional
        Non-negative vote counts; rows are normalised by their totals.
    distribution : array-like of shape (n_items, n_classes), optional
        Annotator distributions whose rows already sum to 1 (within 1e-6). (``probs=``
        is reserved for classifier predictions.) A DataFrame given as ``counts`` or
        ``distribution`` gives the target its classes (column labels) and item ids
        (index), as in :func:`from_matrix`.

    Returns
    -------
    Target
        ``kind='soft'``.

    References
    ----------
    Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth",
    arXiv:2603.22879, Section 3.1.
    """
    given = sum(x is not None for x in (annotations, counts, distribution))
    if given != 1:
        raise ValueError("give exactly one of annotations, counts= or distribution=")
    if annotations is not None:
        return Target(annotations.soft_labels(), "soft",
                      classes=np.asarray(annotations.classes),
                      items=np.asarray(annotations.items))
    if counts is not None:
        counts, classes, items = frame_matrix(counts, "counts")
        c = check_array(counts, "counts", ndim=2)
        _check_size(c.shape, "counts")
        if np.any(c < 0):
            raise ValueError("counts must be non-negative")
        tot = c.sum(axis=1)
        if np.any(tot <= 0):
            raise ValueError(f"counts has {int(np.sum(tot <= 0))} row(s) with no votes")
        return Target(c / tot[:, None], "soft", classes=classes, items=items)
    distribution, classes, items = frame_matrix(distribution, "distribution")
    p = check_array(distribution, "distribution", ndim=2)
    _check_size(p.shape, "distribution")
    if np.any(p < 0) or np.any(p > 1):
        raise ValueError("distribution must lie in [0, 1]")
    dev = np.abs(p.sum(1) - 1.0)
    if np.any(dev > PROB_ATOL):
        i = int(np.argmax(dev))
        raise ValueError(f"rows of distribution must sum to 1 within {PROB_ATOL:g}; row "
                         f"{i} sums to {p[i].sum():.8g}")
    return Target(p, "soft", classes=classes, items=items)


def voted(annotations: Annotations, *, tie: str = "lowest", seed: Seed = None) -> Target:
    """One-hot target of the majority vote.

    Parameters
    ----------
    annotations : Annotations
        Ratings (labels of any kind; the columns follow ``annotations.classes``).
    tie : {'lowest', 'random', 'raise'}, default='lowest'
        Rule for items whose top count is shared: the lowest class index (NumPy's
        argmax convention), a seeded uniform choice among the tied classes, or a
        ``ValueError``.
    seed : int or jax key, optional
        Required with ``tie='random'``; refused with the other rules.

    Returns
    -------
    Target
        ``kind='voted'`` with ``details['tie']`` and ``details['n_ties']``.
    """
    if not hasattr(annotations, "majority_vote"):
        raise ValueError("annotations must be noisycal.Annotations, got "
                         f"{type(annotations).__name__}")
    y = annotations.majority_vote(tie=tie, seed=seed)
    n_ties = int(np.sum(annotations.ties()))
    return Target(one_hot(np.asarray(y), annotations.n_classes), "voted",
                  classes=np.asarray(annotations.classes), items=np.asarray(annotations.items),
                  details={"tie": tie, "n_ties": n_ties})


#: The status of a corrected target whose channels are a model's item-dependent channels
#: averaged over items (GLAD's ``confusion``).
AVERAGED_STATUS = "averaged_channels"

_AVERAGED_MESSAGE = (
    "built from an annotator fit whose channels are item-dependent channels averaged "
    "over each annotator's items (a GLAD fit's confusion): the corrected target is "
    "unbiased only on average over items, not per item or per score bin, and with few "
    "ratings per item the fitted item easiness overfits, which pushes the averaged "
    "accuracies up, so a metric against this target can be biased (its interval carries "
    "only the channels' sampling error); use "
    "nc.targets.posterior(annotations, fit) for the model's own posteriors, or a "
    "class-conditional model (DawidSkene) for a corrected target")


def _fit_status(fit: Any, *, informative_checked: bool = False
                ) -> tuple[str, str, tuple[str, ...]]:
    """The target's status, message and statuses from those of ``fit``."""
    status = str(getattr(fit, "status", "ok"))
    if fit is None or status == "ok":
        return "ok", "", ("ok",)
    statuses = ordered_statuses(getattr(fit, "statuses", None) or (status,))
    if informative_checked:
        # the corrected target has already checked every channel it uses (gap b - a, for
        # K > 2 the smallest singular value, > 1e-4, else ValueError): the fit's small
        # gaps are in annotators it excludes. Adversarial and degenerate channels are not
        # cleared so: the fit they come from may be in a bad mode as a whole
        statuses = ordered_statuses(s for s in statuses if s != "small_gap")
        if statuses == ("ok",):
            return "ok", "", statuses
    fit_statuses = ordered_statuses(getattr(fit, "statuses", None) or (status,))
    described = (f"status {status!r}" if len(fit_statuses) < 2
                 else f"statuses {', '.join(repr(s) for s in fit_statuses)}")
    return statuses[0], (f"built from an annotator fit whose {described}: "
                         f"{getattr(fit, 'message', '') or 'no message'}"), statuses


def _scores_details(fit: Any, items: ArrayLike | None, source: str) -> dict:
    """``{'scores_fingerprint': ...}`` of the target's rows when ``fit`` used classifier
    scores (``fit.score_probs``, :mod:`noisycal.targets.circular`) and some row is a
    fitted item (rows of other items get NaN scores); ``{}`` otherwise."""
    probs = getattr(fit, "score_probs", None)
    if probs is None:
        return {}
    probs = np.asarray(probs, dtype=np.float64)
    if items is None:
        return ({"scores_fingerprint": score_fingerprint(probs, fit.items, source)}
                if len(probs) == len(fit.items) else {})
    idx = positions(items, fit.items)
    if not np.any(idx >= 0):
        return {}
    rows = np.where((idx >= 0)[:, None], probs[np.maximum(idx, 0)], np.nan)
    return {"scores_fingerprint": score_fingerprint(rows, items, source)}


def corrected(annotations: Annotations | ArrayLike, fit: Any = None, *,
              confusion: ArrayLike | None = None, a: ArrayLike | None = None,
              b: ArrayLike | None = None, weights: str | ArrayLike = "iv",
              prevalence: float | None = None, informative: ArrayLike | None = None
              ) -> Target:
    """Noise-corrected target matrix from annotations and annotator channels.

    Row i is an unbiased estimate of the one-hot truth e_{Y_i} under class-conditional
    noise, so it may leave [0, 1] ("Noisy-Label Calibration with Multiple Unreliable
    Labels", Section 2; the arithmetic is :func:`noisycal.correction.corrected_labels`).

    Parameters
    ----------
    annotations : Annotations or array-like of shape (n_items, n_annotators)
        Ratings; in an array, labels are class indices and NaN marks a missing rating.
    fit : fitted annotator model, optional
        Supplies ``confusion`` (and the prevalence for IV weights); give ``fit``,
        ``confusion``, or the rates ``a`` and ``b``. A fit whose status is not 'ok'
        gives a target with that status; a fit whose channels are averaged over items
        (``fit.averaged_channels``, a GLAD fit) gives the status 'averaged_channels'
        (the target is unbiased only on average over items). Its channels are matched
        to Annotations by annotator id and class name (any order, a subset of its
        annotators allowed; an unseen annotator or another class set is a
        ``ValueError``), to an array by position.
    confusion : array-like of shape (n_annotators, K, K), optional
        ``confusion[j, true, observed]``.
    a, b : array-like of shape (n_annotators,), optional
        Two classes: false-positive and true-positive rates.
    weights : {'iv', 'equal', 'gap', 'squared_gap'} or array-like, default='iv'
        Aggregation weights (on the simplex). 'iv' uses the prevalence
        from ``prevalence``, else from ``fit`` (for a grouped fit the group-size-weighted
        mean of the group prevalences), else the mean of the equally weighted
        corrected labels (the paper's plug-in rule), clipped to [1e-4, 1 - 1e-4]. For
        more than two classes 'iv' and 'gap' are our generalisations
        (:func:`noisycal.correction.kclass_iv_weights`, the smallest singular value).
    prevalence : float or array-like of shape (K,), optional
        For IV weights: P(Y = 1) in [0, 1] for two classes, the class probabilities
        for K > 2.
    informative : array-like of bool, shape (n_annotators,), optional
        Boolean mask of the annotators to use; the others get weight 0. Integer
        indices are refused (``[1, 0, 1]`` would be ambiguous).

    Returns
    -------
    Target
        ``kind='corrected'``, columns in the annotations' class order, rows in their
        item order. ``details``: the weights, the channels used in the ratings' order
        (``confusion``, a NUTS fit's ``channel_draws``) and where they sit in the fit
        (``annotator_index``, ``class_index``, :func:`noisycal.correction.fit_index`):
        the same ratings give the same target whatever order annotators and classes
        are listed in.
        A fit that used a classifier's scores adds ``scores_fingerprint``
        (:mod:`noisycal.targets.circular`): a metric of the same scores against the
        target gets the status 'circular_target'.

    Notes
    -----
    Missing ratings are allowed: each item's weights are renormalised over the
    annotators who rated it (unbiased only when whether an annotator rated an item is
    unrelated to its true class; the paper's guarantees assume complete ratings).

    The target assumes class-conditional noise; to test it against the classifier's
    scores and carry a rejection as the target's status, pass the target to
    :func:`noisycal.annotators.checked_target`.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> A = np.array([[1, 1, 0], [0, 0, 0]])
    >>> t = nc.targets.corrected(A, a=[0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9], weights="equal")
    >>> t.values[:, 1].round(4)   # (A - a) / (b - a) averaged: (2*.9/.8 - .1/.8) / 3
    array([ 0.7083, -0.125 ])
    """
    values, det = corrected_labels(annotations, fit, confusion=confusion, a=a, b=b,
                                   weights=weights, prevalence=prevalence,
                                   informative=informative)
    status, message, statuses = _fit_status(fit, informative_checked=True)
    if getattr(fit, "averaged_channels", False) is True:
        statuses = ordered_statuses((*statuses, AVERAGED_STATUS))
        status, message = statuses[0], join_messages(message, _AVERAGED_MESSAGE)
    det["fit_status"] = getattr(fit, "status", None)
    classes, items = det.pop("classes"), det.pop("items")
    det.update(_scores_details(fit, items, "corrected"))
    return Target(values, "corrected", classes=classes, details=det, items=items,
                  status=status, message=message, statuses=statuses)


def posterior(annotations: Annotations | None, fit: Any, *,
              groups: ArrayLike | None = None) -> Target:
    """Item posteriors of a fitted annotator model, P(Y_i = k | ratings of item i).

    An extension of the papers' targets. For an EM or MLE fit these are the posteriors
    at the point estimate; for a NUTS fit (``annotations=None``) they are averaged over
    the posterior draws, so channel uncertainty is integrated out.

    Parameters
    ----------
    annotations : Annotations or None
        Items to score under the fitted model (:meth:`AnnotatorFit.predict`), rows in
        their item order and columns in their class order (annotators matched by id,
        classes by name, as in :func:`corrected`); None: the items the model was fitted
        to, in the order of the annotations it was fitted to (``fit.items``), columns in
        the fit's class order.
    fit : AnnotatorFit
        A fitted :class:`~noisycal.DawidSkene` (or one-coin, grouped, Hui–Walter) model.
        A fit whose status is not 'ok' gives a target with that status.
    groups : array-like, optional
        Groups of the new items, for grouped models (only with ``annotations``); required
        when the fit has more than one group.

    Returns
    -------
    Target
        ``kind='posterior'``; ``details`` holds the fit's model, method and status, and
        for a fit that used a classifier's scores their ``scores_fingerprint`` (a metric
        of the same scores against the target gets the status 'circular_target').

    Raises
    ------
    ValueError
        If the posteriors are not finite (for example a fit reported as not
        identified).

    Notes
    -----
    Unlike the corrected target, the posterior is not an unbiased estimate of the
    one-hot truth given the scores: it shrinks each item toward the model's prevalence,
    so a calibration error against it measures agreement with the model's belief.
    """
    if not hasattr(fit, "item_posterior") or not hasattr(fit, "confusion"):
        raise ValueError("fit must be a fitted annotator model (an AnnotatorFit), got "
                         f"{type(fit).__name__}")
    if annotations is None:
        if groups is not None:
            raise ValueError("groups applies only to new annotations: with annotations=None "
                             "the fitted items keep the groups they were fitted with")
        post = np.asarray(fit.item_posterior, dtype=np.float64)
        items, classes = getattr(fit, "items", None), np.asarray(fit.classes)
    else:
        post = np.asarray(fit.predict(annotations, groups), dtype=np.float64)
        ci = fit.match(annotations, groups=groups).class_index  # the fit's class order
        post, items, classes = post[:, ci], annotations.items, annotations.classes
    if not np.all(np.isfinite(post)):
        raise ValueError(f"fit: the item posteriors are not finite (status "
                         f"{fit.status!r}: {fit.message or 'no message'})")
    status, message, statuses = _fit_status(fit)
    return Target(post, "posterior", classes=np.asarray(classes), items=items,
                  details={"model": fit.model, "method": fit.method, "status": fit.status,
                           **_scores_details(fit, items, "posterior")},
                  status=status, message=message, statuses=statuses)


def from_matrix(values: ArrayLike, *, kind: str = "matrix", classes: ArrayLike | None = None,
                items: ArrayLike | None = None) -> Target:
    """Wrap a real (n_items, n_classes) matrix as a target (metrics accept entries outside
    [0, 1] only with ``kind='corrected'``).

    Parameters
    ----------
    values : array-like or DataFrame of shape (n_items, n_classes)
        A DataFrame's columns are matched to ``classes`` by label (without ``classes``
        its column labels are the classes) and its index to ``items`` (without
        ``items`` the index is the item ids); a default ``RangeIndex`` axis is read by
        position.
    kind : str, default='matrix'
        One of the target kinds.
    classes, items : array-like, optional
        Column labels and row ids.

    Returns
    -------
    Target

    Raises
    ------
    ValueError
        A DataFrame whose column labels are not ``classes`` or whose index does not hold
        ``items`` (naming ``values``).
    """
    values, classes, items = frame_matrix(values, "values", classes, items)
    return Target(check_array(values, "values", ndim=2), kind, classes=classes, items=items)


def as_target_matrix(target: object, n_items: int, n_classes: int, name: str = "target", *,
                     classes: ArrayLike | None = None, items: ArrayLike | None = None
                     ) -> np.ndarray:
    """Resolve a metric's ``target`` argument to a float64 (n_items, n_classes) matrix.

    Parameters
    ----------
    target : Target, array-like of shape (n_items, n_classes) or (n_items,)
        A Target or 2-D array is used as is (finite; the metrics check its rows). A 1-D
        array is read as class labels (integers, or any labels with ``classes=``) and
        one-hot encoded; with two classes, a 1-D float vector that is not all integers
        is the positive-class target t (the matrix ``[1 - t, t]``).
    n_items, n_classes : int
        The predictions' shape.
    name : str, default='target'
        Argument name for error messages.
    classes : array-like, optional
        Class labels of the predictions' columns, in the user's order.
    items : array-like, optional
        Item ids of the predictions' rows, checked against a Target's ``items``.

    Returns
    -------
    ndarray of shape (n_items, n_classes)
    """
    if target is None:
        raise ValueError(f"{name} is required")
    if isinstance(target, Target):
        check_items(target.items, items, "items")
        if classes is not None and target.classes is not None and (
                len(classes) != target.n_classes
                or list(np.asarray(classes).tolist()) != list(target.classes.tolist())):
            raise ValueError(f"classes={list(classes)} do not match the {name}'s classes "
                             f"{target.classes.tolist()} (same labels, same order)")
        T = target.values
    else:
        if items is not None and hasattr(target, "index") and hasattr(target, "to_numpy"):
            check_items(np.asarray(target.index), items, "items")
        if getattr(target, "ndim", 1) == 2:  # a DataFrame's columns, matched by label
            target = frame_matrix(target, name, classes)[0]
        arr = np.asarray(target.to_numpy() if hasattr(target, "to_numpy")
                         and getattr(target, "cat", None) is None else target)
        if arr.ndim == 1 or getattr(target, "cat", None) is not None:
            return vector_target(target, arr, n_items, n_classes, name, classes)
        T = check_array(arr, name, ndim=2)
    if T.shape != (n_items, n_classes):
        raise ValueError(f"{name} must have shape ({n_items}, {n_classes}) to match the "
                         f"predictions, got {T.shape}")
    if not np.all(np.isfinite(T)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.asarray(T, dtype=np.float64)
