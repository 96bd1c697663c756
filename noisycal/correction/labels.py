"""Noise-corrected labels: the corrected-label arithmetic (no Target type here).

With annotator channels ``confusion[j, true, observed]`` (for two classes: false-positive
rate ``a_j = confusion[j, 0, 1]`` and true-positive rate ``b_j = confusion[j, 1, 1]``)
the corrected label of item i is

    U_i = sum_j alpha_j (A_ij - a_j) / (b_j - a_j)                      (two classes)
    T_i = sum_j alpha_j e_{A_ij} C_j^{-1}                               (K classes)

so that ``E[U_i | Y_i, Z_i] = Y_i`` (and ``E[T_i | Y_i] = e_{Y_i}``) under class-conditional
noise ("Noisy-Label Calibration with Multiple Unreliable Labels", Section 2). For two
classes the K-class formula reduces to the binary one (its second column is U_i). The
corrected targets may leave [0, 1]; they are never clipped.

Weights ``alpha`` lie on the simplex (:mod:`noisycal.correction.weights`, re-exported
here): inverse-variance ('iv': Lemma C.6 of that paper for two classes, with its plug-in
rule for the prevalence; for K > 2 our generalisation, :func:`kclass_iv_weights`), 'equal',
'gap' (alpha_j proportional to delta_j; for K > 2 the smallest singular value of C_j, our
generalisation) or 'squared_gap'. :func:`correction_range` is B-hat, max_i sum_j w_ij /
delta_j with w_ij renormalised over item i's raters, the scale of the finite-sample bounds.

The :class:`~noisycal.targets.Target` is built in :mod:`noisycal.targets`
(:func:`noisycal.targets.corrected`); this module returns arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.types import ArrayLike
from .._util.validation import check_array, check_choice
from ..annotations.core import Annotations
from ..annotations.matching import FitIds, match_ratings
from .weights import (
    GAP_THRESHOLD,
    PREVALENCE_CLIP,
    VARIANCE_FLOOR,
    WEIGHT_RULES,
    channel_rule_weights,
    channel_weights,
    channels_invertible,
    check_binary_channels,
    check_class_prevalence,
    check_prevalence,
    gap_invertible,
    iv_weights,
    kclass_iv_weights,
    noise_covariance,
    rule_weights,
)

__all__ = ["iv_weights", "kclass_iv_weights", "noise_covariance", "rule_weights",
           "channel_rule_weights", "channel_weights", "correction_range",
           "check_binary_channels", "check_prevalence", "check_class_prevalence",
           "one_hot_ratings", "corrected_labels", "corrected_from_channels", "masked_inverses",
           "gap_invertible", "channels_invertible", "marginal_prevalence",
           "fit_prevalence", "fit_class_prevalence", "fit_index",
           "WEIGHT_RULES", "GAP_THRESHOLD", "PREVALENCE_CLIP", "VARIANCE_FLOOR"]


def correction_range(weights: ArrayLike, a: ArrayLike, b: ArrayLike,
                     observed: ArrayLike | None = None) -> float:
    r"""B-hat, the range of the two-class corrected labels: :math:`\max_i \sum_j w_{ij}/\delta_j`.

    w_ij: alpha_j renormalised over item i's raters, so ``|U_i - Z_i| <= sum_j w_ij/delta_j``.
    It scales the bounds of "Noisy-Label Calibration with Multiple Unreliable Labels"
    (Theorem 1, Eq. C.11, Propositions 1 and 2, cross-fitting); the paper's
    sum_j alpha_j / delta_j with every item fully rated, the maximum over items our
    generalisation for missing ratings (where the paper's value is not a bound).

    Parameters
    ----------
    weights : array-like of shape (n_annotators,)
        The aggregation weights alpha (annotators with weight 0 are left out).
    a, b : array-like of shape (n_annotators,)
        False-positive and true-positive rates, delta_j = b_j - a_j.
    observed : array-like of bool, shape (n_items, n_annotators), optional
        Which annotator rated which item. None: every item rated by every annotator.

    Returns
    -------
    float

    Examples
    --------
    >>> round(correction_range([0.5, 0.5, 0.0], [0.1, 0.2, 0.5], [0.9, 0.7, 0.5]), 12)
    1.625
    """
    alpha = check_array(weights, "weights", ndim=1)
    a, b = check_array(a, "a", ndim=1), check_array(b, "b", ndim=1)
    if not alpha.shape == a.shape == b.shape:
        raise ValueError(f"weights, a and b must have the same length, got {alpha.shape}, "
                         f"{a.shape} and {b.shape}")
    use = alpha > 0
    inv = np.where(use, alpha / np.where(use, b - a, 1.0), 0.0)  # alpha_j / delta_j
    if observed is None:
        return float(np.sum(inv))
    obs = np.asarray(observed)
    if obs.dtype.kind != "b" or obs.ndim != 2 or obs.shape[1] != alpha.size:
        raise ValueError(f"observed must be a boolean (n_items, {alpha.size}) mask, got "
                         f"dtype {obs.dtype} and shape {obs.shape}")
    tot = (obs * alpha).sum(axis=1)
    rated = tot > 0  # items without a weighted rating are refused by corrected_labels
    return float(np.max((obs[rated] * inv).sum(axis=1) / tot[rated], initial=0.0))


def one_hot_ratings(annotations: Annotations | ArrayLike, n_classes: int | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One-hot ratings (n_items, n_annotators, K), the observed mask, classes and item ids.

    Parameters
    ----------
    annotations : Annotations or array-like of shape (n_items, n_annotators)
        In an array, labels are class indices and NaN marks a missing rating.
    n_classes : int, optional
        K for an array (default 2); ignored for Annotations.

    Returns
    -------
    ratings, observed, classes, items
        ``items`` is None for an array.
    """
    if isinstance(annotations, Annotations):
        K = annotations.n_classes
        n, J = annotations.n_items, annotations.n_annotators
        counts = np.zeros((n, J, K))
        np.add.at(counts, (annotations.item_index, annotations.annotator_index,
                           annotations.label_index), 1.0)
        if np.any(counts.sum(2) > 1):
            raise ValueError("annotations: corrected targets need at most one rating per "
                             "(item, annotator); repeated ratings are not supported")
        return counts, counts.sum(2) > 0, np.asarray(annotations.classes), \
            np.asarray(annotations.items)
    A = check_array(annotations, "annotations", finite=False)
    if A.ndim != 2:
        raise ValueError(f"annotations must be Annotations or an (n_items, n_annotators) "
                         f"array of labels, got shape {A.shape}")
    K = 2 if n_classes is None else int(n_classes)
    seen = ~np.isnan(A)
    vals = A[seen]
    if np.any(~np.isfinite(vals)) or np.any(vals != np.round(vals)) \
            or np.any((vals < 0) | (vals >= K)):
        raise ValueError(f"annotations must be labels in 0..{K - 1} (NaN for missing)")
    onehot = np.zeros(A.shape + (K,))
    idx = np.nonzero(seen)
    onehot[idx + (A[seen].astype(int),)] = 1.0
    return onehot, seen, np.arange(K), None


def marginal_prevalence(group_prevalence: Any, sizes: Any, xp: Any = np) -> Any:
    r"""The marginal prevalence of a grouped model: :math:`\sum_g n_g \mu_g / \sum_g n_g`.

    Parameters
    ----------
    group_prevalence : array of shape (n_groups,) or (n_groups, K)
        P(Y = 1), or every class's probability, in each group.
    sizes : array of shape (n_groups,)
        Items (or item weights) per group.
    xp : module, default=numpy
        ``numpy`` or ``jax.numpy`` (jit-safe).

    Returns
    -------
    float or 0-d array, or array of shape (K,)
    """
    if group_prevalence.ndim == 1:
        return xp.sum(sizes * group_prevalence) / xp.sum(sizes)
    return xp.sum(sizes[:, None] * group_prevalence, axis=0) / xp.sum(sizes)


def fit_class_prevalence(fit: Any) -> np.ndarray:
    """The marginal class prevalence of a (grouped) fit, groups weighted by their sizes.

    Parameters
    ----------
    fit : fitted annotator model
        With ``group_prevalence`` (n_groups, K) and, for several groups,
        ``details['group_index']`` (the group of each fitted item).

    Returns
    -------
    ndarray of shape (K,)
    """
    gp = np.atleast_2d(np.asarray(fit.group_prevalence, dtype=np.float64))
    return marginal_prevalence(gp, _group_sizes(fit, gp.shape[0]))


def _group_sizes(fit: Any, L: int) -> np.ndarray:
    gi = getattr(fit, "details", {}).get("group_index")
    if gi is not None and len(gi) == fit.n_items:
        return np.bincount(np.asarray(gi), minlength=L)
    if L == 1:
        return np.ones(1)
    raise ValueError(f"fit has {L} groups but no group index of its {fit.n_items} items; "
                     "its marginal prevalence is not defined")


def fit_prevalence(fit: Any) -> float:
    """The marginal prevalence P(Y = 1) of a (grouped) two-class fit, groups weighted by size.

    Parameters
    ----------
    fit : fitted annotator model
        With ``group_prevalence`` (n_groups, 2) and, for several groups,
        ``details['group_index']`` (the group of each fitted item).

    Returns
    -------
    float
    """
    gp = np.atleast_2d(np.asarray(fit.group_prevalence, dtype=np.float64))[:, 1]
    return float(marginal_prevalence(gp, _group_sizes(fit, gp.size)))


def _channels(fit: Any, confusion: ArrayLike | None, a: ArrayLike | None,
              b: ArrayLike | None) -> np.ndarray:
    given = sum(x is not None for x in (fit, confusion)) + (a is not None or b is not None)
    if given != 1:
        raise ValueError("give exactly one of fit, confusion, or the rates a and b")
    if fit is not None:
        if not hasattr(fit, "confusion"):
            raise ValueError("fit must be a fitted annotator model with a confusion "
                             f"attribute, got {type(fit).__name__}")
        C = np.asarray(fit.confusion, dtype=np.float64)
        if C.ndim != 3 or not np.all(np.isfinite(C)):
            raise ValueError(f"fit has no finite confusion matrices (status "
                             f"{getattr(fit, 'status', '?')!r}); it cannot correct labels")
        return C
    if confusion is not None:
        return check_array(confusion, "confusion", ndim=3)
    if a is None or b is None:
        raise ValueError("give both a and b")
    aa, bb = check_binary_channels(a, b)
    return np.stack([np.stack([1 - aa, aa], 1), np.stack([1 - bb, bb], 1)], 1)


def fit_index(annotations: Annotations | ArrayLike, fit: Any, n_annotators: int,
              n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each annotator and class of the ratings sits in a fit: matched by id and name.

    Annotations are matched to the fit's ``annotators`` by annotator id and to its
    ``classes`` by class label, whatever order either lists them in; a subset of the
    fit's annotators is allowed (the one boundary,
    :func:`noisycal.annotations.matching.match_ratings`, through the fit's own ``match``
    method when it has one). An array of ratings (no ids), or a fit that carries no ids,
    is matched by position and must have the fit's numbers of annotators and classes.

    Parameters
    ----------
    annotations : Annotations or array-like of shape (n_items, n_annotators)
    fit : fitted annotator model
        With ``confusion`` (n_fit_annotators, K, K) and, to match by id, ``annotators``
        and ``classes``.
    n_annotators, n_classes : int
        The ratings' numbers of annotator columns and classes.

    Returns
    -------
    annotator_index : int ndarray of shape (n_annotators,)
        For each annotator column of the ratings, its index in ``fit.annotators``.
    class_index : int ndarray of shape (n_classes,)
        For each class of the ratings, its index in ``fit.classes``.

    Raises
    ------
    ValueError
        For an annotator the fit has not seen (named), a class set that differs from
        the fit's (the classes named), channels per (annotator, group), or (matched by
        position) numbers that differ from the fit's.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> from types import SimpleNamespace
    >>> fit = SimpleNamespace(confusion=np.zeros((3, 2, 2)),
    ...                       annotators=np.array(["x", "y", "z"]),
    ...                       classes=np.array(["no", "yes"]))
    >>> ann = nc.Annotations.from_arrays([0, 0], ["z", "x"], ["yes", "no"],
    ...                                  classes=["yes", "no"])
    >>> [v.tolist() for v in fit_index(ann, fit, 2, 2)]
    [[2, 0], [1, 0]]
    """
    J_fit, K_fit = np.shape(fit.confusion)[0], np.shape(fit.confusion)[-1]
    if not (isinstance(annotations, Annotations) and hasattr(fit, "annotators")
            and hasattr(fit, "classes")):
        if (n_annotators, n_classes) != (J_fit, K_fit):
            raise ValueError(f"annotations without annotator ids (an array, or a fit that "
                             f"carries none) are matched to the fit's channels by position, "
                             f"so they need its {J_fit} annotators and {K_fit} classes, got "
                             f"{n_annotators} and {n_classes}; pass Annotations to match "
                             "annotators by id")
        return np.arange(J_fit), np.arange(K_fit)
    match = getattr(fit, "match", None)  # an AnnotatorFit matches for itself
    m = match(annotations) if callable(match) else match_ratings(
        annotations, FitIds(fit.annotators, fit.classes))
    if m.annotator_index is None:
        raise ValueError("fit has channels per (annotator, group), and corrected labels need "
                         "one channel per annotator: pass the ratings by channel "
                         "(fit.annotations), or fit shared channels")
    return m.annotator_index, m.class_index


def _aligned(C: np.ndarray, ai: np.ndarray, ci: np.ndarray) -> np.ndarray:
    """Channels (..., J_fit, K, K) in the ratings' annotator and class order."""
    return np.take(np.take(np.take(C, ai, axis=-3), ci, axis=-2), ci, axis=-1)


def _informative_mask(informative: ArrayLike | None, J: int) -> np.ndarray:
    if informative is None:
        return np.ones(J, dtype=bool)
    m = np.asarray(informative)
    if m.dtype.kind != "b":
        # integers would be ambiguous: [1, 0, 1] reads as a mask or as indices
        raise ValueError(f"informative must be a boolean mask of length {J} (dtype bool), "
                         f"got dtype {m.dtype}; for annotator indices idx pass "
                         "np.isin(np.arange(n_annotators), idx)")
    if m.shape != (J,) or not m.any():
        raise ValueError(f"informative must be a boolean mask of length {J} with at least "
                         "one True")
    return m


def _plugin_prevalence(per: np.ndarray, seen: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean over items of the equally weighted corrected target (the paper's plug-in
    rule, Appendix F.4; for K > 2 every class at once): shape (K,), not clipped."""
    eq = np.where((seen & mask)[:, :, None], per, np.nan)
    return np.nanmean(np.nanmean(eq, axis=1), axis=0)


def _alpha(weights: str | ArrayLike, C: np.ndarray, mask: np.ndarray, per: np.ndarray,
           seen: np.ndarray, prevalence: Any) -> tuple[np.ndarray, str, Any, str | None]:
    """Weights alpha, the rule used, and the prevalence (with its source) for 'iv'."""
    J, K = C.shape[0], C.shape[1]
    source = None
    if not isinstance(weights, str):
        alpha = check_array(weights, "weights", ndim=1)
        if alpha.shape != (J,) or np.any(alpha < 0) or abs(alpha.sum() - 1) > 1e-8:
            raise ValueError(f"weights must be a length-{J} vector on the simplex "
                             "(non-negative, summing to 1)")
        return alpha, "given", prevalence, None
    rule = check_choice(weights, "weights", WEIGHT_RULES)
    if rule == "iv" and prevalence is None:
        plug = _plugin_prevalence(per, seen, mask)
        prevalence = float(plug[1]) if K == 2 else plug
        source = "plugin"
    if K > 2:  # our generalisations (correction_weights): trace-IV, smallest singular value
        alpha = channel_rule_weights(rule, C, prevalence, mask=mask)
        return alpha, rule, prevalence, source
    alpha = np.zeros(J)
    alpha[mask] = channel_weights(rule, C[mask, 0, 1], C[mask, 1, 1],
                                  None if prevalence is None
                                  else float(np.clip(prevalence, 0.0, 1.0)))
    return alpha, rule, prevalence, source


def corrected_labels(annotations: Annotations | ArrayLike, fit: Any = None, *,
                     confusion: ArrayLike | None = None, a: ArrayLike | None = None,
                     b: ArrayLike | None = None, weights: str | ArrayLike = "iv",
                     prevalence: float | ArrayLike | None = None,
                     informative: ArrayLike | None = None
                     ) -> tuple[np.ndarray, dict]:
    """The noise-corrected target matrix and its provenance, as arrays.

    The arguments are those of :func:`noisycal.targets.corrected`, which wraps the
    result in a :class:`~noisycal.targets.Target` (see there for their meaning).

    Parameters
    ----------
    annotations : Annotations or array-like of shape (n_items, n_annotators)
    fit : fitted annotator model, optional
    confusion : array-like of shape (n_annotators, K, K), optional
    a, b : array-like of shape (n_annotators,), optional
    weights : {'iv', 'equal', 'gap', 'squared_gap'} or array-like, default='iv'
    prevalence : float or array-like of shape (K,), optional
        P(Y = 1) for two classes; the class probabilities for K > 2.
    informative : array-like of bool, optional

    Returns
    -------
    values : ndarray of shape (n_items, K)
    details : dict
        weights, rule, weights_rule (the rule applied), confusion, prevalence (a float
        P(Y = 1) for two classes, a (K,) vector for K > 2; and its source), informative
        mask, ratings, observed mask, channel draws of a NUTS fit, the fit, classes, items,
        and with a fit ``annotator_index`` and ``class_index`` (:func:`fit_index`; None
        without a fit). Everything is in the ratings' annotator and class order:
        ``confusion`` (and the channel draws) are the fit's channels permuted to it,
        ``confusion[j] = fit.confusion[annotator_index[j]]`` with both class axes taken
        at ``class_index``.

    Notes
    -----
    A fit's channels are matched to the ratings by annotator id and class name
    (:func:`fit_index`): listing the annotators or the classes in another order
    permutes the target's columns with the classes and changes nothing else, and a
    subset of the fit's annotators uses their channels.
    """
    C = _channels(fit, confusion, a, b)
    onehot, seen, classes, items = one_hot_ratings(annotations, C.shape[-1])
    n, J, K = onehot.shape
    ai = ci = None
    if fit is not None:  # the fit's channels by annotator id and class name
        ai, ci = fit_index(annotations, fit, J, K)
        C = _aligned(C, ai, ci)
    if C.shape != (J, K, K):
        raise ValueError(f"confusion must have shape ({J}, {K}, {K}) for these annotations, "
                         f"got {C.shape}")
    if np.any(np.abs(C.sum(2) - 1) > 1e-6) or np.any(C < 0):
        raise ValueError("confusion rows must be probability distributions")
    if prevalence is not None:
        prevalence = check_class_prevalence(prevalence, K)
    source = "given" if prevalence is not None else None
    if fit is not None and prevalence is None:
        prevalence = fit_class_prevalence(fit)[ci]  # in the ratings' class order
        prevalence = float(prevalence[1]) if K == 2 else prevalence
        source = "fit"
    mask = _informative_mask(informative, J)
    if K == 2:
        check_binary_channels(C[mask, 0, 1], C[mask, 1, 1])
    sv = np.linalg.svd(C[mask], compute_uv=False).min(axis=1)  # channels_invertible, K > 2
    if np.any(sv <= GAP_THRESHOLD):
        raise ValueError("confusion: a confusion matrix is (nearly) singular and cannot be "
                         "inverted; exclude that annotator with informative=")
    per = _per_annotator(onehot, C, mask, np)  # e_{A_ij} C_j^{-1}, (n, J, K)
    alpha, rule, prevalence, plug = _alpha(weights, C, mask, per, seen, prevalence)
    source = plug or source
    tot = np.where(seen & mask, alpha[None, :], 0.0).sum(axis=1)
    if np.any(tot <= 0):
        raise ValueError(f"annotations: {int(np.sum(tot <= 0))} item(s) have no rating from "
                         "an informative annotator with positive weight")
    draws = None
    if fit is not None and getattr(fit, "method", None) == "nuts" \
            and getattr(fit, "draws", None) is not None:
        draws = _aligned(np.asarray(fit.draws["confusion"]), ai, ci)
    return _combine(per, seen, mask, alpha, np), {
        "weights": alpha, "rule": rule, "confusion": C, "prevalence": prevalence,
        "prevalence_source": source, "informative": mask, "ratings": onehot,
        "observed": seen, "channel_draws": draws, "fit": fit, "classes": classes,
        "items": items, "weights_rule": rule, "annotator_index": ai, "class_index": ci}


def masked_inverses(confusion: Any, mask: Any, xp: Any = np) -> Any:
    """The inverse of each informative annotator's channel, zero for the others.

    Parameters
    ----------
    confusion : array of shape (J, K, K)
    mask : array of bool, shape (J,)
        Informative annotators (the others' channels are not inverted).
    xp : module, default=numpy
        ``numpy`` or ``jax.numpy`` (jit-safe).

    Returns
    -------
    array of shape (J, K, K)
    """
    eye = xp.eye(confusion.shape[-1])
    inv = xp.linalg.inv(xp.where(mask[:, None, None], confusion, eye))
    return xp.where(mask[:, None, None], inv, 0.0)


def _per_annotator(ratings: Any, confusion: Any, mask: Any, xp: Any) -> Any:
    """e_{A_ij} C_j^{-1} for every (item, annotator), zero for annotators outside ``mask``
    and for missing ratings (zero rows of ``ratings``).

    The ratings are one-hot, so the product is a row lookup: row ``A_ij`` of
    ``C_j^{-1}`` (n J K numbers, not the n J K^2 of a matrix product)."""
    inv = masked_inverses(confusion, mask, xp)
    label = xp.argmax(ratings, axis=2)                               # (n, J)
    rows = inv[xp.arange(inv.shape[0])[None, :], label]              # (n, J, K)
    return rows * ratings.sum(axis=2)[:, :, None]


def _combine(per: Any, observed: Any, mask: Any, alpha: Any, xp: Any) -> Any:
    """Weights alpha renormalised over each item's observed informative raters."""
    w = xp.where(observed & mask, alpha[None, :], 0.0)
    return xp.einsum("nj,njk->nk", w / w.sum(axis=1, keepdims=True), per)


def corrected_from_channels(ratings: Any, observed: Any, mask: Any, alpha: Any,
                            confusion: Any, *, xp: Any = np) -> Any:
    """Corrected target (n, K) for given one-hot ratings, weights and channels.

    The formula of :func:`corrected_labels` (which uses the same two steps), without
    validation: used to recompute the target for every posterior draw of the channels
    and, on JAX arrays, for every channel refit of the bootstrap. The caller checks that
    the informative channels are invertible (:func:`gap_invertible` for two classes).

    Parameters
    ----------
    ratings : array of shape (n_items, n_annotators, K)
        One-hot ratings (zero rows where missing).
    observed : array of bool, shape (n_items, n_annotators)
    mask : array of bool, shape (n_annotators,)
        Informative annotators.
    alpha : array of shape (n_annotators,)
        Weights.
    confusion : array of shape (n_annotators, K, K)
    xp : module, default=numpy
        ``numpy`` or ``jax.numpy`` (jit-safe).

    Returns
    -------
    array of shape (n_items, K)
    """
    return _combine(_per_annotator(ratings, confusion, mask, xp), observed, mask, alpha, xp)
