"""Noise-corrected labels (paper 003): unbiased targets from annotations and channels.

With annotator channels ``confusion[j, true, observed]`` (for two classes: false-positive
rate ``a_j = confusion[j, 0, 1]`` and true-positive rate ``b_j = confusion[j, 1, 1]``)
the corrected label of item i is

    U_i = sum_j alpha_j (A_ij - a_j) / (b_j - a_j)                      (two classes)
    T_i = sum_j alpha_j e_{A_ij} C_j^{-1}                               (K classes)

so that ``E[U_i | Y_i, Z_i] = Y_i`` (and ``E[T_i | Y_i] = e_{Y_i}``) under class-conditional
noise (paper 003, section 2.1 of its spec). For two classes the K-class formula reduces to
the binary one (its second column is U_i). The corrected targets may leave [0, 1]; they
are never clipped.

Weights ``alpha`` lie on the simplex: inverse-variance ('iv', Lemma C.6 with the plug-in
rule of Appendix F.4), 'equal', 'gap' (alpha_j proportional to delta_j) or 'squared_gap'.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._typing import ArrayLike
from ._validation import check_array, check_choice
from .data import Annotations
from .targets import Target

__all__ = ["iv_weights", "channel_weights", "corrected_target", "corrected_from_channels",
           "WEIGHT_RULES",
           "GAP_THRESHOLD", "PREVALENCE_CLIP", "VARIANCE_FLOOR"]

WEIGHT_RULES = ("iv", "equal", "gap", "squared_gap")
#: Channels with b_j - a_j <= this are rejected (spec-003 acceptance rule).
GAP_THRESHOLD = 1e-4
#: The plug-in prevalence of the IV weights is clipped to [1e-4, 1 - 1e-4] (Main rule).
PREVALENCE_CLIP = 1e-4
#: Per-annotator variances are floored at 1e-8 before inverting (Main rule).
VARIANCE_FLOOR = 1e-8


def _binary_channels(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a = check_array(a, "a", ndim=1)
    b = check_array(b, "b", ndim=1)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.shape} and {b.shape}")
    if np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)):
        raise ValueError("channel rates a and b must lie in [0, 1]")
    gap = b - a
    if np.any(gap <= GAP_THRESHOLD):
        bad = np.flatnonzero(gap <= GAP_THRESHOLD).tolist()
        raise ValueError(f"annotator(s) {bad} have b - a <= {GAP_THRESHOLD:g}: their channel "
                         "cannot be inverted (exclude them with informative=, or check the "
                         "orientation)")
    return a, b


def iv_weights(a: ArrayLike, b: ArrayLike, prevalence: float, *,
               floor: float = VARIANCE_FLOOR) -> np.ndarray:
    r"""Inverse-variance weights of the corrected labels (paper 003, Lemma C.6).

    .. math:: \bar v_j = \frac{(1-\mu) a_j (1-a_j) + \mu b_j (1-b_j)}{(b_j - a_j)^2},\qquad
              \alpha_j = \bar v_j^{-1} / \textstyle\sum_k \bar v_k^{-1}

    Parameters
    ----------
    a, b : array-like of shape (n_annotators,)
        False-positive rates and true-positive rates (b_j - a_j > 1e-4).
    prevalence : float
        P(Y = 1), clipped to [1e-4, 1 - 1e-4] (the paper's Main plug-in rule).
    floor : float, default=1e-8
        Variances are floored here before inverting.
    """
    a, b = _binary_channels(a, b)
    return rule_weights("iv", a, b, float(prevalence), floor=floor)


def rule_weights(rule: str, a: Any, b: Any, prevalence: Any = None, *, mask: Any = None,
                 floor: float = VARIANCE_FLOOR, xp: Any = np) -> Any:
    """The weight formulas without validation, on NumPy (``xp=np``) or JAX
    (``xp=jax.numpy``, jit-safe) arrays.

    Raw weights by ``rule`` ('iv': inverse variances with the prevalence clipped to
    [1e-4, 1 - 1e-4] and variances floored at ``floor``; 'equal'; 'gap';
    'squared_gap'), set to 0 outside ``mask``, normalised to sum to 1.
    """
    gap = b - a
    if rule == "iv":
        mu = xp.clip(prevalence, PREVALENCE_CLIP, 1.0 - PREVALENCE_CLIP)
        v = ((1.0 - mu) * a * (1.0 - a) + mu * b * (1.0 - b)) / gap**2
        raw = 1.0 / xp.maximum(v, floor)
    else:
        raw = {"equal": xp.ones_like(a), "gap": gap, "squared_gap": gap**2}[rule]
    if mask is not None:
        raw = xp.where(mask, raw, 0.0)
    return raw / raw.sum()


def channel_weights(rule: str, a: ArrayLike, b: ArrayLike, prevalence: float | None = None
                    ) -> np.ndarray:
    """Aggregation weights on the simplex by rule ('iv', 'equal', 'gap', 'squared_gap')."""
    check_choice(rule, "weights", WEIGHT_RULES)
    a, b = _binary_channels(a, b)
    if rule == "iv" and prevalence is None:
        raise ValueError("weights='iv' needs the prevalence P(Y = 1)")
    return rule_weights(rule, a, b, prevalence)


def _one_hot_matrix(annotations: Annotations | ArrayLike, n_classes: int | None
                    ) -> tuple[np.ndarray, np.ndarray, Any]:
    """(n_items, n_annotators, K) one-hot ratings and the observed mask."""
    if isinstance(annotations, Annotations):
        K = annotations.n_classes
        n, J = annotations.n_items, annotations.n_annotators
        counts = np.zeros((n, J, K))
        np.add.at(counts, (annotations.item_index, annotations.annotator_index,
                           annotations.label_index), 1.0)
        if np.any(counts.sum(2) > 1):
            raise ValueError("corrected targets need at most one rating per (item, annotator); "
                             "repeated ratings are not supported")
        return counts, counts.sum(2) > 0, annotations.classes
    A = np.asarray(annotations, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"annotations must be Annotations or an (n_items, n_annotators) "
                         f"array of labels, got shape {A.shape}")
    K = 2 if n_classes is None else int(n_classes)
    seen = np.isfinite(A)
    vals = A[seen]
    if np.any(vals != np.round(vals)) or np.any((vals < 0) | (vals >= K)):
        raise ValueError(f"annotations must be labels in 0..{K - 1} (NaN for missing)")
    onehot = np.zeros(A.shape + (K,))
    idx = np.nonzero(seen)
    onehot[idx + (A[seen].astype(int),)] = 1.0
    return onehot, seen, np.arange(K)


def corrected_target(annotations: Annotations | ArrayLike, fit: Any = None, *,
                     confusion: ArrayLike | None = None, a: ArrayLike | None = None,
                     b: ArrayLike | None = None, weights: str | ArrayLike = "iv",
                     prevalence: float | None = None, informative: ArrayLike | None = None
                     ) -> Target:
    """Noise-corrected target matrix from annotations and annotator channels.

    Parameters
    ----------
    annotations : Annotations or array-like of shape (n_items, n_annotators)
        Ratings; in an array, labels are class indices and NaN marks a missing rating.
    fit : AnnotatorFit, optional
        A fitted annotator model supplying ``confusion`` (and the prevalence for IV
        weights). Give ``fit``, ``confusion``, or the binary rates ``a`` and ``b``.
    confusion : array-like of shape (n_annotators, K, K), optional
        ``confusion[j, true, observed]``.
    a, b : array-like of shape (n_annotators,), optional
        Two classes: false-positive and true-positive rates.
    weights : {'iv', 'equal', 'gap', 'squared_gap'} or array-like, default='iv'
        Aggregation weights (on the simplex). 'iv' (two classes only) uses the prevalence
        from ``prevalence``, else from ``fit`` (for a grouped fit the group-size-weighted
        mean of the group prevalences), else the mean of the equally weighted
        corrected labels (the paper's Main rule), clipped to [1e-4, 1 - 1e-4]. For more
        than two classes the default falls back to 'equal'.
    prevalence : float, optional
        P(Y = 1) for IV weights.
    informative : array-like of bool, shape (n_annotators,), optional
        Annotators to use; the others get weight 0.

    Returns
    -------
    Target
        ``kind='corrected'``; ``details`` holds the weights and the channels used.

    Notes
    -----
    Missing ratings are allowed: each item's weights are renormalised over the
    annotators who rated it. This keeps the target unbiased only when whether an
    annotator rated an item is unrelated to the item's true class (missing at random
    given the class-conditional noise model); the paper's guarantees assume complete
    ratings.
    """
    onehot, seen, classes = _one_hot_matrix(
        annotations, None if confusion is None else np.shape(confusion)[-1])
    n, J, K = onehot.shape
    given = sum(x is not None for x in (fit, confusion)) + (a is not None or b is not None)
    if given != 1:
        raise ValueError("give exactly one of fit, confusion, or the rates a and b")
    prevalence_source = "given" if prevalence is not None else None
    if fit is not None:
        C = np.asarray(fit.confusion, dtype=np.float64)
        if prevalence is None and K == 2:
            # grouped fits: the marginal prevalence sum_g (n_g / n) mu_g
            gp = np.atleast_2d(fit.group_prevalence)[:, 1]
            gi = fit.details.get("group_index")
            sizes = (np.bincount(gi, minlength=gp.size) if gi is not None
                     and len(gi) == fit.n_items else np.ones(gp.size))
            prevalence = float(np.sum(sizes * gp) / np.sum(sizes))
            prevalence_source = "fit"
    elif confusion is not None:
        C = check_array(confusion, "confusion", ndim=3)
    else:
        if a is None or b is None:
            raise ValueError("give both a and b")
        aa, bb = _binary_channels(a, b)
        C = np.stack([np.stack([1 - aa, aa], 1), np.stack([1 - bb, bb], 1)], 1)
    if C.shape != (J, K, K):
        raise ValueError(f"confusion must have shape ({J}, {K}, {K}) for these annotations, "
                         f"got {C.shape}")
    if np.any(np.abs(C.sum(2) - 1) > 1e-6) or np.any(C < 0):
        raise ValueError("confusion rows must be probability distributions")
    mask = np.ones(J, dtype=bool) if informative is None else np.asarray(informative, bool)
    if mask.shape != (J,) or not mask.any():
        raise ValueError(f"informative must be a boolean mask of length {J} with at least "
                         "one True")
    if K == 2:
        _binary_channels(C[mask, 0, 1], C[mask, 1, 1])
    sv = np.linalg.svd(C[mask], compute_uv=False).min(axis=1)
    if np.any(sv <= GAP_THRESHOLD):
        raise ValueError("a confusion matrix is (nearly) singular and cannot be inverted; "
                         "exclude that annotator with informative=")
    inv = np.zeros_like(C)
    inv[mask] = np.linalg.inv(C[mask])
    per = np.einsum("njk,jkl->njl", onehot, inv)  # e_{A_ij} C_j^{-1}, (n, J, K)
    if isinstance(weights, str):
        rule = weights if (weights != "iv" or K == 2) else "equal"
        check_choice(weights, "weights", WEIGHT_RULES)
        if K == 2:
            aa, bb = C[:, 0, 1], C[:, 1, 1]
            if rule == "iv" and prevalence is None:
                eq = np.where(seen & mask, per[:, :, 1], np.nan)
                prevalence = float(np.nanmean(np.nanmean(eq, axis=1)))
                prevalence_source = "plugin"
            alpha = np.zeros(J)
            alpha[mask] = channel_weights(rule, aa[mask], bb[mask], prevalence)
        else:
            alpha = mask / mask.sum()
            if rule != "equal":
                gaps = np.linalg.svd(C, compute_uv=False).min(axis=1)
                raw = {"gap": gaps, "squared_gap": gaps**2}[rule] * mask
                alpha = raw / raw.sum()
    else:
        alpha = check_array(weights, "weights", ndim=1)
        if alpha.shape != (J,) or np.any(alpha < 0) or abs(alpha.sum() - 1) > 1e-8:
            raise ValueError(f"weights must be a length-{J} vector on the simplex "
                             "(non-negative, summing to 1)")
        rule = "given"
    w = np.where(seen & mask, alpha[None, :], 0.0)
    tot = w.sum(axis=1, keepdims=True)
    if np.any(tot <= 0):
        raise ValueError(f"{int(np.sum(tot <= 0))} item(s) have no rating from an "
                         "informative annotator with positive weight")
    T = np.einsum("nj,njk->nk", w / tot, per)
    draws = None
    if fit is not None and getattr(fit, "method", None) == "nuts" and fit.draws is not None:
        draws = np.asarray(fit.draws["confusion"])
    return Target(T, "corrected", classes=np.asarray(classes),
                  details={"weights": alpha, "rule": rule, "confusion": C,
                           "prevalence": prevalence, "prevalence_source": prevalence_source,
                           "informative": mask, "ratings": onehot, "observed": seen,
                           "channel_draws": draws, "fit": fit})


def corrected_from_channels(ratings: np.ndarray, observed: np.ndarray, mask: np.ndarray,
                            alpha: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """Corrected target (n, K) for given one-hot ratings, weights and channels.

    The same formula as :func:`corrected_target`, without validation: used to recompute
    the target for every posterior draw of the channels.
    """
    inv = np.zeros_like(confusion)
    inv[mask] = np.linalg.inv(confusion[mask])
    per = np.einsum("njk,jkl->njl", ratings, inv)
    w = np.where(observed & mask, alpha[None, :], 0.0)
    return np.einsum("nj,njk->nk", w / w.sum(axis=1, keepdims=True), per)
