"""Targets: what we believe the label of each item is, as an (n_items, n_classes) matrix.

Every calibration metric in noisycal compares predictions with a target ``T``;
row ``i`` of ``T`` says what we believe the label of item ``i`` is. The kinds:

=========  ===============================================  =====================
kind       row i                                            constructor
=========  ===============================================  =====================
hard       one-hot e_y of a clean label                     :func:`hard`
soft       annotator distribution pi_i (vote shares)        :func:`soft`
voted      one-hot of the majority vote                     :func:`voted`
matrix     any real matrix the caller supplies              :func:`from_matrix`
=========  ===============================================  =====================

Noise-corrected and posterior targets arrive with the annotator models. The
metric core accepts any real (n, K) matrix, including entries outside [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ._typing import ArrayLike, Seed
from ._validation import PROB_ATOL, check_array, check_choice, check_int, check_labels

if TYPE_CHECKING:  # pragma: no cover
    from .data import Annotations

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

    Notes
    -----
    ``np.asarray(target)`` gives the matrix, so a Target can be passed wherever an
    array is expected.
    """

    values: np.ndarray
    kind: str
    classes: np.ndarray | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", _KINDS)
        v = check_array(self.values, "values", ndim=2)
        if v.shape[1] < 2:
            raise ValueError(f"values must have at least 2 columns, got shape {v.shape}")
        v = v.copy()
        v.setflags(write=False)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.classes is not None and len(self.classes) != v.shape[1]:
            raise ValueError(f"classes has {len(self.classes)} entries but values has "
                             f"{v.shape[1]} columns")

    @property
    def shape(self) -> tuple[int, int]:
        """(n_items, n_classes)."""
        return self.values.shape  # type: ignore[return-value]

    @property
    def n_items(self) -> int:
        """Number of items (rows)."""
        return int(self.values.shape[0])

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

    def __repr__(self) -> str:
        return f"Target(kind={self.kind!r}, n_items={self.n_items}, n_classes={self.n_classes})"


def _one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((y.shape[0], n_classes))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


def hard(labels: ArrayLike, *, n_classes: int) -> Target:
    """One-hot target from clean integer labels.

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Class indices in ``0 .. n_classes - 1``.
    n_classes : int
        Number of classes K (at least 2).

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
    """
    k = check_int(n_classes, "n_classes", minimum=2)
    y = check_labels(labels, k, "labels")
    return Target(_one_hot(y, k), "hard")


def soft(
    annotations: Annotations | None = None,
    *,
    counts: ArrayLike | None = None,
    probs: ArrayLike | None = None,
) -> Target:
    """The annotator distribution pi-hat_i (share of ratings in each class).

    Give exactly one of ``annotations``, ``counts`` or ``probs``.

    Parameters
    ----------
    annotations : Annotations, optional
        Ratings; row i of the target is the share of item i's ratings in each class.
    counts : array-like of shape (n_items, n_classes), optional
        Non-negative vote counts; rows are normalised by their totals.
    probs : array-like of shape (n_items, n_classes), optional
        Annotator distributions whose rows already sum to 1 (within 1e-6).

    Returns
    -------
    Target
        ``kind='soft'``.

    References
    ----------
    Paper 000 (Confidence calibration under ambiguous ground truth), section 3.1.
    """
    given = sum(x is not None for x in (annotations, counts, probs))
    if given != 1:
        raise ValueError("give exactly one of annotations, counts= or probs=")
    classes = None
    if annotations is not None:
        values = annotations.soft_labels()
        classes = np.asarray(annotations.classes)
    elif counts is not None:
        c = check_array(counts, "counts", ndim=2)
        if np.any(c < 0):
            raise ValueError("counts must be non-negative")
        tot = c.sum(axis=1)
        if np.any(tot <= 0):
            raise ValueError(f"counts has {int(np.sum(tot <= 0))} row(s) with no votes")
        values = c / tot[:, None]
    else:
        p = check_array(probs, "probs", ndim=2)
        if np.any(p < 0) or np.any(p > 1):
            raise ValueError("probs must lie in [0, 1]")
        dev = np.abs(p.sum(1) - 1.0)
        if np.any(dev > PROB_ATOL):
            raise ValueError(f"rows of probs must sum to 1 within {PROB_ATOL:g}; row "
                             f"{int(np.argmax(dev))} sums to {p[int(np.argmax(dev))].sum():.8g}")
        values = p
    return Target(values, "soft", classes=classes)


def voted(annotations: Annotations, *, tie: str = "lowest", seed: Seed = None) -> Target:
    """One-hot target of the majority vote.

    Parameters
    ----------
    annotations : Annotations
        Ratings.
    tie : {'lowest', 'random', 'raise'}, default='lowest'
        Rule for items whose top count is shared: the lowest class index (NumPy's
        argmax convention), a seeded uniform choice among the tied classes, or a
        ``ValueError``.
    seed : int or jax key, optional
        Required with ``tie='random'``.

    Returns
    -------
    Target
        ``kind='voted'`` with ``details['tie']`` and ``details['n_ties']``.
    """
    y = annotations.majority_vote(tie=tie, seed=seed)
    n_ties = int(np.sum(annotations.ties()))
    return Target(_one_hot(np.asarray(y), annotations.n_classes), "voted",
                  classes=np.asarray(annotations.classes),
                  details={"tie": tie, "n_ties": n_ties})


def corrected(annotations: Annotations | ArrayLike, fit: Any = None, **kwargs: Any) -> Target:
    """Noise-corrected target (paper 003): see :func:`noisycal.correction.corrected_target`.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> A = np.array([[1, 1, 0], [0, 0, 0]])
    >>> t = nc.targets.corrected(A, a=[0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9], weights="equal")
    >>> t.values[:, 1].round(4)   # (A - a) / (b - a) averaged: (2*.9/.8 - .1/.8) / 3
    array([ 0.7083, -0.125 ])
    """
    from .correction import corrected_target

    return corrected_target(annotations, fit, **kwargs)


def posterior(fit: Any, annotations: Annotations | None = None, *,
              groups: ArrayLike | None = None) -> Target:
    """Item posteriors of a fitted annotator model, P(Y_i = k | ratings of item i).

    The DESIGN's fifth target (an extension of the papers). For an EM or MLE fit these
    are the posteriors at the point estimate; for a NUTS fit they are averaged over the
    posterior draws (Rao-Blackwellised), so channel uncertainty is integrated out.

    Parameters
    ----------
    fit : AnnotatorFit
        A fitted :class:`~noisycal.DawidSkene` (or one-coin, grouped, Hui–Walter) model.
    annotations : Annotations, optional
        New items to score under the fitted model (:meth:`AnnotatorFit.predict`);
        default: the items the model was fitted to, in ``fit.items`` order.
    groups : array-like, optional
        Groups of the new items, for grouped models.

    Returns
    -------
    Target
        ``kind='posterior'``; ``details`` holds the fit's model, method and status.

    Raises
    ------
    ValueError
        If the posteriors are not finite (for example a fit reported as not
        identified).

    Notes
    -----
    Unlike the corrected target, the posterior is not an unbiased estimate of the
    one-hot truth given the scores: it shrinks each item toward the model's prevalence,
    and the classifier's score is not part of the annotator model. A calibration error
    against it measures agreement with the annotator model's belief about each item.
    """
    if not hasattr(fit, "item_posterior") or not hasattr(fit, "confusion"):
        raise ValueError("fit must be a fitted annotator model (an AnnotatorFit), got "
                         f"{type(fit).__name__}")
    post = (np.asarray(fit.item_posterior, dtype=np.float64) if annotations is None
            else np.asarray(fit.predict(annotations, groups), dtype=np.float64))
    if not np.all(np.isfinite(post)):
        raise ValueError(f"the fit's item posteriors are not finite (status "
                         f"{fit.status!r}: {fit.message or 'no message'})")
    return Target(post, "posterior", classes=np.asarray(fit.classes),
                  details={"model": fit.model, "method": fit.method, "status": fit.status})


def from_matrix(values: ArrayLike, *, kind: str = "matrix") -> Target:
    """Wrap any real (n_items, n_classes) matrix as a target (entries may leave [0, 1])."""
    return Target(check_array(values, "values", ndim=2), kind)


def as_target_matrix(target: object, n_items: int, n_classes: int,
                     name: str = "target") -> np.ndarray:
    """Resolve a metric's ``target`` argument to a float64 (n_items, n_classes) matrix.

    A Target or 2-D array is used as is (any finite real values); a 1-D array is read
    as integer class labels (floats only when integral) and one-hot encoded.
    """
    if isinstance(target, Target):
        T = target.values
    else:
        if target is None:
            raise ValueError(f"{name} is required")
        arr = np.asarray(target)
        if arr.ndim == 1:
            y = check_labels(arr, n_classes, name)
            if y.shape[0] != n_items:
                raise ValueError(f"{name} has {y.shape[0]} labels but the predictions have "
                                 f"{n_items} items")
            return _one_hot(y, n_classes)
        T = check_array(arr, name, ndim=2)
    if T.shape != (n_items, n_classes):
        raise ValueError(f"{name} must have shape ({n_items}, {n_classes}) to match the "
                         f"predictions, got {T.shape}")
    if not np.all(np.isfinite(T)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.asarray(T, dtype=np.float64)
