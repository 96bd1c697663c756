"""Cross-fitted NC-ECE of two or K classes, with its finite-sample interval.

After "Noisy-Label Calibration with Multiple Unreliable Labels" (Theorem 1 per fold).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._util.items import match_columns
from .._util.jax import as_numpy_rng, x64
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_array,
    check_int,
    check_items,
    check_level,
    check_n_bins,
    check_probs,
    check_seed,
    prediction_items,
)
from ..annotations.core import Annotations
from ..correction.labels import fit_class_prevalence, fit_prevalence
from ..engines.methods import Method
from ..exceptions import IdentifiabilityWarning
from ..intervals.estimate import Estimate
from ..metrics.binned.bins import (
    Binned,
    bin_sums,
    residual_ece,
    segment_stats,
    uniform_edges,
)
from ..metrics.binned.outside import with_outside_bins
from ..metrics.inputs import resolve_kind
from ..metrics.nc.bound import class_ranges, hoeffding_radius
from ..metrics.nc.intervals import nc_ece_items
from ..targets.target import corrected

__all__ = ["nc_ece_crossfit"]


def _fold_ids(folds: ArrayLike | None, n_folds: int | None, n: int, seed: Seed
              ) -> tuple[np.ndarray, int]:
    """Fold index 0..F-1 of every item (seeded, or from the user's fold ids)."""
    if folds is not None and n_folds is not None:
        raise ValueError("give n_folds or folds, not both (folds fixes the number of folds)")
    if folds is None:
        F = check_int(5 if n_folds is None else n_folds, "n_folds", minimum=2)
        if F > n:
            raise ValueError(f"n_folds={F} exceeds the number of items ({n})")
        return as_numpy_rng(seed).permutation(np.arange(n) % F), F
    raw = np.asarray(folds)
    if raw.ndim != 1 or raw.shape[0] != n:
        raise ValueError(f"folds must have one entry per item ({n}), got shape {raw.shape}")
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw)):
        raise ValueError("folds contains NaN or infinite fold ids")
    if raw.dtype == object and any(v is None or (isinstance(v, float) and v != v)
                                   for v in raw.tolist()):
        raise ValueError("folds contains missing fold ids (None or NaN)")
    fold = np.unique(raw, return_inverse=True)[1].ravel()
    F = int(fold.max()) + 1
    if F < 2:
        raise ValueError("folds must contain at least two folds")
    return fold, F


def _check_inputs(probs: ArrayLike, annotations: Annotations, items: ArrayLike | None,
                  kind: str | None, n_bins: int, level: float, seed: Seed
                  ) -> tuple[np.ndarray, str, int, float]:
    """Checked predictions (positive-class scores or an (n, K) matrix), kind, M and level."""
    level = check_level(level)
    check_seed(seed)
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be noisycal.Annotations (two or K classes)")
    K, n = annotations.n_classes, annotations.n_items
    if getattr(probs, "columns", None) is not None and hasattr(probs, "to_numpy"):
        probs = match_columns(probs, annotations.classes, "probs")
    z = check_array(probs, "probs", ndim=(1, 2), finite=False)
    if z.ndim == 1:
        if K != 2:
            raise ValueError(f"probs: 1-D positive-class scores are for two classes, but "
                             f"the annotations have {K} classes; give probabilities of "
                             f"shape (n_items, {K}) (columns in the annotations' class "
                             "order)")
        z = check_array(probs, "probs", ndim=1)
    else:
        z = check_probs(probs, "probs")
        if z.shape[1] != K:
            raise ValueError(f"probs has {z.shape[1]} columns (classes), the annotations "
                             f"have {K} classes")
    if z.shape[0] != n:
        raise ValueError(f"probs has {z.shape[0]} items, annotations have {n}")
    check_items(annotations.items, prediction_items(probs, None, items),
                "probs" if items is None else "items")
    if np.any((z < 0) | (z > 1)):
        raise ValueError("probs must lie in [0, 1]")
    kind = resolve_kind(kind, z.ndim == 1, K)
    if z.ndim == 1 and kind != "positive_class":
        z = np.stack([1.0 - z, z], axis=1)  # the two-column form of the binary scores
    return z, kind, check_n_bins(n_bins, n), level


def _fold_target(model: Any, annotations: Annotations, train: np.ndarray, test: np.ndarray,
                 k: int, weights: str, method: Method | str | None, seed: Seed) -> Any:
    """Corrected target of the test fold from channels fitted on the other folds."""
    fit = model.fit(annotations.subset(train), method=method, seed=seed)
    if fit.status not in ("ok", "boundary"):
        raise ValueError(f"the channel fit on the folds other than {k} failed: "
                         f"{fit.status} ({fit.message})")
    if getattr(fit, "averaged_channels", False) is True:
        raise ValueError(f"model: the cross-fitted NC-ECE needs class-conditional channels; "
                         f"the fits of {type(model).__name__} average item-dependent "
                         "channels over items (item-dependent channels are not supported)")
    K = annotations.n_classes
    C = getattr(fit, "confusion", None)
    if C is None or np.shape(C) != (annotations.n_annotators, K, K):
        raise ValueError(f"model: the cross-fitted NC-ECE needs class-conditional channels, "
                         f"a confusion matrix per annotator (shape ({annotations.n_annotators}"
                         f", {K}, {K})); the fits of {type(model).__name__} have "
                         f"{'none' if C is None else f'shape {np.shape(C)}'} (item-dependent "
                         "channels are not supported)")
    prevalence = fit_prevalence(fit) if K == 2 else fit_class_prevalence(fit)
    U = corrected(annotations.subset(test), confusion=C, weights=weights,
                  prevalence=prevalence)
    return U, fit.status, fit.message


def _group_ranges(details: Any, kind: str) -> np.ndarray:
    """B-hat of every score group of a fold's target: the largest over the classes
    (positive class: both are equal; top label: any class can be predicted) or each
    class's (classwise)."""
    Bk = class_ranges(details)
    return Bk if kind == "classwise" else np.array([Bk.max()])


def _binned(T: np.ndarray, conf: np.ndarray, bins: np.ndarray, cols: np.ndarray, M: int
            ) -> tuple[float, np.ndarray]:
    """The NC-ECE (mean over score groups of sum_l |r_gl|) and the residuals r (G, M)."""
    n = T.shape[0]
    values, r = [], []
    with x64():
        for g in range(conf.shape[0]):
            t = T[np.arange(n), cols[g]]
            values.append(float(residual_ece(np.ones(n), t, conf[g], bins[g], M)))
            stats = np.asarray(segment_stats(np.stack([np.ones(n), conf[g], t], 1)[None],
                                             bins[g][None], None, M))[0]
            r.append((stats[:, 2] - stats[:, 1]) / n)  # r_gl, from the bin sums
    return float(np.mean(values)) if len(values) > 1 else values[0], np.array(r)


def nc_ece_crossfit(probs: ArrayLike, annotations: Annotations, *, kind: str | None = None,
                    model: Any = None, method: Method | str | None = None,
                    n_folds: int | None = None, folds: ArrayLike | None = None,
                    n_bins: int = 10, weights: str = "iv", level: float = 0.9,
                    seed: Seed = 0, items: ArrayLike | None = None) -> Estimate:
    r"""Cross-fitted NC-ECE with its finite-sample interval (two or K classes).

    Items are split into F folds fixed before looking at the data (seeded, or given). For
    each fold k the channels (and weights) are fitted on the other folds and the
    corrected labels of fold k are built from them; the NC-ECE of these labels is then
    the binned statistic of the whole sample (:func:`~noisycal.metrics.binned.bins.residual_ece`):

    .. math:: \hat r^{cf}_\ell = \frac1n \sum_i (\hat U^{(-k(i))}_i - Z_i) 1(Z_i \in B_\ell),
              \qquad \mathrm{NC\text{-}ECE}^{cf} = \sum_\ell |\hat r^{cf}_\ell|

    (absolute values after pooling). The interval adds and subtracts
    :math:`\sum_k (n_k/n) \hat B^{(-k)} \sqrt{2 (M \log 2 + \log(2F/\eta)) / n_k}`
    (:func:`~noisycal.metrics.nc.bound.hoeffding_radius` with c = 2F, B-hat from
    :func:`~noisycal.metrics.nc.bound.target_range`: with missing ratings the maximum
    over the fold's items of sum_j w_ij / delta_j) and, like
    ``bound_mode='binned_only'``, assumes exact channels. After "Noisy-Label Calibration
    with Multiple Unreliable Labels" (its Theorem 1 applied per fold). With K classes
    the same holds per score group of the estimand ``kind`` (as :func:`noisycal.ece`),
    with a union over the groups (Notes).

    Parameters
    ----------
    probs : array-like of shape (n_items,) or (n_items, K)
        Positive-class scores (two classes) or class probabilities (rows summing to 1,
        columns in the order of ``annotations.classes``; a DataFrame's columns are
        matched to them by label), in the order of ``annotations.items``; a pandas
        index (or ``items=``) must list those items in that order (else ValueError).
    annotations : Annotations
        Ratings of two or K classes (as many as the columns of ``probs``).
    kind : {'positive_class', 'top_label', 'classwise'}, optional
        The estimand, as in :func:`noisycal.ece`: default 'positive_class' for 1-D
        scores, else 'top_label' (the error of the predicted class's confidence);
        'classwise' is the mean over the K classes of each class's binned error.
    model : annotator model, optional
        Fitted on every training fold; default ``DawidSkene()``. Its fits must have a
        confusion matrix per annotator (class-conditional channels): ``GLAD`` (whose
        confusion averages item-dependent channels over items) is refused.
    method : engine object or str, optional
        The engine of every fold's fit (``model.fit(..., method=method)``, an object of
        :mod:`noisycal.engines.methods` or its string); default the model's own (EM for
        the Dawid–Skene family).
    n_folds : int, optional
        F, the number of seeded folds (default 5); not together with ``folds``.
    folds : array-like of shape (n_items,), optional
        Fold id of each item (no missing ids); not together with ``n_folds``.
    n_bins : int, default=10
        Equal-width bins M.
    weights : str, default='iv'
        Aggregation weights of :func:`noisycal.targets.corrected`.
    level : float, default=0.9
        1 - eta.
    seed : int or jax key, default=0
        Seeds the fold assignment (and the fits).
    items : array-like of shape (n_items,), optional
        Item ids of ``probs`` (default: a pandas index), checked against
        ``annotations.items``.

    Notes
    -----
    The corrected labels of a fold use the IV weights with the marginal prevalence of
    the fold's fit, its groups weighted by their sizes
    (:func:`~noisycal.correction.fit_prevalence`; K classes:
    :func:`~noisycal.correction.fit_class_prevalence`).

    K classes (our generalisation of Theorem 1). Score group g (one for the positive
    class and the top label, K for 'classwise') gives item i a confidence :math:`c_{gi}`
    and a target column :math:`k_{gi}` (as :func:`~noisycal.metrics.nc.bound.nc_ece_bound`);
    the statistic is :math:`\frac1G \sum_g \sum_\ell |\hat r_{g\ell}|`. Conditionally
    on the other folds, fold k's channels and weights are fixed and its items i.i.d.;
    with exact channels :math:`E[\hat U_i \mid Y_i, Z_i] = e_{Y_i}`, so the fold's own
    residuals :math:`\hat r^{(k)}_{g\ell}` have the population binned residuals
    :math:`q_{g\ell}` of :math:`\mathrm{ECE}_{\mathcal B}` as mean. Pooling,
    :math:`\hat r_{g\ell} = \sum_k (n_k/n) \hat r^{(k)}_{g\ell}`, and
    :math:`|\sum_\ell |\hat r_{g\ell}| - \sum_\ell |q_{g\ell}|| \le \sum_k (n_k/n)
    \max_{s \in \{\pm1\}^M} \sum_\ell s_\ell (\hat r^{(k)}_{g\ell} - q_{g\ell})`.
    Each summand :math:`s_{\ell(c)} (\hat U_i[k_{gi}] - c_{gi})` lies in
    :math:`[-B^{(-k)}_g, B^{(-k)}_g]` (Lemma 1 of ``nc_ece_bound``: :math:`B_g` is
    class k's :func:`~noisycal.metrics.nc.bound.class_ranges` for 'classwise', the
    largest of them for the top label), so Hoeffding gives, for one (fold, group, sign
    vector, side), a deviation above :math:`B\sqrt{2(M\log 2 + \log(c/\eta))/n_k}`
    with probability :math:`\eta / (c\,2^M)`. A union over the :math:`2^M` sign
    vectors, the two sides, the F folds and the G groups (c = 2GF: eta split over the
    folds and the classes) gives, with probability at least 1 - eta, every group's
    deviation at most :math:`\rho_g = \sum_k (n_k/n) \rho_{gk}` at once, hence
    :math:`|\mathrm{NC}^{cf} - \mathrm{ECE}_{\mathcal B}| \le \frac1G\sum_g\rho_g`
    (the radius is the mean over the classes, as the estimand is). Two classes (one
    group, c = 2F) is the binary radius above, and the same numbers. What it assumes:
    exact channels (as ``bound_mode='binned_only'``; the channel fits' error is left
    out, so with fitted channels the interval can be too narrow), class-conditional
    noise, i.i.d. items and weights fixed by the other folds.

    Returns
    -------
    Estimate
        ``details['per_fold']`` holds each fold's B-hat (K classes: and each group's,
        ``B_groups``), radius, channels and fit status; ``details['kind']`` the estimand,
        ``details['residuals']`` the pooled residuals (M,) (K classes: (G, M)).
        A fold fit with status 'boundary' gives the Estimate status
        ``'channels_boundary'`` with a message and an IdentifiabilityWarning (other
        non-ok fits raise). The status is otherwise 'ok', with the message that the
        interval assumes exact channels (for two and K classes alike). The pooled
        cross-fitted target goes through the check of every binned metric
        (:func:`~noisycal.metrics.binned.outside.with_outside_bins`): a bin whose mean
        of it lies outside [0, 1] beyond its sampling noise adds the status
        ``'outside_parameter_space'`` (``details['outside_bins']``; value and interval
        kept).
    """
    from ..annotators import GLAD, DawidSkene

    if isinstance(model, GLAD):
        raise ValueError("model: the cross-fitted NC-ECE needs class-conditional channels; "
                         "GLAD's channels depend on the item (its confusion averages them "
                         "over items, so the fold targets would be unbiased only on average "
                         "over items): item-dependent channels are not supported")
    z, kind, M, level = _check_inputs(probs, annotations, items, kind, n_bins, level, seed)
    n = z.shape[0]
    fold, F = _fold_ids(folds, n_folds, n, seed)
    model = DawidSkene() if model is None else model
    P = np.stack([1.0 - z, z], axis=1) if z.ndim == 1 else z
    conf, bins, cols = nc_ece_items(P, kind, M)  # binary: conf[0] is z, bins its bins
    G = conf.shape[0]
    T = np.empty((n, annotations.n_classes))
    radius, per_fold = np.zeros(G), []
    for k in range(F):
        test = np.flatnonzero(fold == k)
        U, fit_status, fit_message = _fold_target(model, annotations,
                                                  np.flatnonzero(fold != k), test, k, weights,
                                                  method, seed)
        T[test] = U.values
        C = U.details["confusion"]
        B = _group_ranges(U.details, kind)
        rad_k = np.array([hoeffding_radius(b, test.size, M, level, union=2.0 * G * F)
                          for b in B])
        radius += test.size / n * rad_k
        per_fold.append({"fold": k, "n": test.size, "B_hat": float(B.max()),
                         "radius": float(np.mean(rad_k)), "fit_status": fit_status,
                         "fit_message": fit_message,
                         **({"a": C[:, 0, 1], "b": C[:, 1, 1]} if C.shape[1] == 2 else {}),
                         **({"B_groups": B} if G > 1 else {}), "confusion": C})
    value, r = _binned(T, conf, bins, cols, M)
    radius = float(np.mean(radius))
    status, message = "ok", "assumes exact channels (the channel term is not included)"
    weak = [f for f in per_fold if f["fit_status"] != "ok"]
    if weak:
        status = f"channels_{weak[0]['fit_status']}"
        message = (f"the channel fits of fold(s) {[f['fold'] for f in weak]} have status "
                   f"{weak[0]['fit_status']!r} ({weak[0]['fit_message']}); the bound assumes "
                   f"identified channels; {message}")
        warnings.warn(message, IdentifiabilityWarning, stacklevel=2)
    name = {"positive_class": "cross-fitted NC-ECE", "top_label": "cross-fitted top-label "
            "NC-ECE", "classwise": "cross-fitted classwise NC-ECE"}[kind]
    est = Estimate(name, value, (max(0.0, value - radius), value + radius),
                   level, "bound", "hoeffding-union-crossfit", n=n, status=status,
                   message=message,
                   details={"n_folds": F, "per_fold": per_fold, "sampling_radius": radius,
                            "residuals": r[0] if G == 1 else r, "n_bins": M, "kind": kind})
    return _outside(est, T, conf, bins, cols, M, kind)


def _outside(est: Estimate, T: np.ndarray, conf: np.ndarray, bins: np.ndarray,
             cols: np.ndarray, M: int, kind: str) -> Estimate:
    """``est`` through the bin-mean-outside-[0, 1] check of every binned metric
    (:func:`~noisycal.metrics.binned.outside.with_outside_bins`), on the pooled
    cross-fitted target in the statistic's own bins and score groups."""
    n, G = T.shape[0], conf.shape[0]
    t = np.stack([T[np.arange(n), cols[g]] for g in range(G)])  # (G, n)
    data = np.stack([np.ones((G, n)), conf, t, t**2], axis=2)
    binned = Binned(data, bins, np.tile(uniform_edges(M), (G, 1)), M, 1)
    groups = [f"class_{k}" for k in range(G)] if kind == "classwise" else [kind]
    return with_outside_bins(est, binned, bin_sums(binned), groups)
