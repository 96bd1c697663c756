"""Cross-fitted NC-ECE (paper 003, spec sections 2.5 and 4.5)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._jax import as_numpy_rng
from .._typing import ArrayLike, Seed
from .._validation import check_array, check_int, check_level
from ..data import Annotations
from ..intervals.estimate import Estimate
from ..targets import corrected
from .binning import equal_width_bins

__all__ = ["nc_ece_crossfit"]


def nc_ece_crossfit(probs: ArrayLike, annotations: Annotations, *, model: Any = None,
                    n_folds: int = 5, folds: ArrayLike | None = None, n_bins: int = 10,
                    weights: str = "iv", level: float = 0.9, seed: Seed = 0,
                    fit_kwargs: dict | None = None) -> Estimate:
    r"""Cross-fitted NC-ECE with its finite-sample interval (binary).

    Items are split into F folds fixed before looking at the data (seeded, or given). For
    each fold k the channels (and weights) are fitted on the other folds, the corrected
    labels of fold k are built from them, and the per-bin residual sums are pooled:

    .. math:: \hat r^{cf}_\ell = \sum_k \frac{n_k}{n} \frac{1}{n_k}\sum_{i \in I_k}
              (\hat U^{(-k)}_i - Z_i) 1(Z_i \in B_\ell),\qquad
              \mathrm{NC\text{-}ECE}^{cf} = \sum_\ell |\hat r^{cf}_\ell|

    (absolute values after pooling). The interval adds and subtracts
    :math:`\sum_k (n_k/n) \hat B^{(-k)} \sqrt{2 (M \log 2 + \log(2F/\eta)) / n_k}`
    (spec section 4.5) and, like ``bound_mode='binned_only'``, assumes exact channels.

    Parameters
    ----------
    probs : array-like of shape (n_items,)
        Positive-class scores, in the order of ``annotations.items``.
    annotations : Annotations
        Two-class ratings.
    model : annotator model, optional
        Fitted on every training fold; default ``DawidSkene()`` with EM.
    n_folds : int, default=5
    folds : array-like of shape (n_items,), optional
        Fold id of each item (overrides ``n_folds``).
    n_bins : int, default=10
    weights : str, default='iv'
    level : float, default=0.9
    seed : int or jax key, default=0
        Seeds the fold assignment (and the fits).
    fit_kwargs : dict, optional
        Extra arguments of ``model.fit``.
    """
    from ..annotators import DawidSkene

    level = check_level(level)
    M = check_int(n_bins, "n_bins", minimum=1)
    z = check_array(probs, "probs", ndim=1)
    if not isinstance(annotations, Annotations) or annotations.n_classes != 2:
        raise ValueError("annotations must be two-class noisycal.Annotations")
    n = annotations.n_items
    if z.shape[0] != n:
        raise ValueError(f"probs has {z.shape[0]} items, annotations have {n}")
    if np.any((z < 0) | (z > 1)):
        raise ValueError("probs must lie in [0, 1]")
    if folds is None:
        F = check_int(n_folds, "n_folds", minimum=2)
        fold = as_numpy_rng(seed).permutation(np.arange(n) % F)
    else:
        fold = np.unique(np.asarray(folds), return_inverse=True)[1].ravel()
        if fold.shape[0] != n:
            raise ValueError(f"folds must have one entry per item ({n})")
        F = int(fold.max()) + 1
        if F < 2:
            raise ValueError("folds must contain at least two folds")
    model = DawidSkene() if model is None else model
    kw = {"seed": seed, **(fit_kwargs or {})}
    bins = equal_width_bins(z, M)
    r = np.zeros(M)
    radius = 0.0
    per_fold = []
    eta = 1.0 - level
    for k in range(F):
        test = np.flatnonzero(fold == k)
        train = np.flatnonzero(fold != k)
        fit = model.fit(annotations.subset(train), **kw)
        if fit.status not in ("ok", "boundary"):
            raise ValueError(f"the channel fit on the folds other than {k} failed: "
                             f"{fit.status} ({fit.message})")
        sub = annotations.subset(test)
        U = corrected(sub, confusion=fit.confusion, weights=weights,
                      prevalence=float(np.mean(fit.group_prevalence[:, 1])))
        nk = test.size
        r += np.bincount(bins[test], weights=U.values[:, 1] - z[test], minlength=M) / n
        alpha = U.details["weights"]
        C = U.details["confusion"]
        use = alpha > 0
        B = float(np.sum(alpha[use] / (C[use, 1, 1] - C[use, 0, 1])))
        rad_k = B * math.sqrt(2 * (M * math.log(2) + math.log(2 * F / eta)) / nk)
        radius += nk / n * rad_k
        per_fold.append({"fold": k, "n": nk, "B_hat": B, "radius": rad_k,
                         "a": C[:, 0, 1], "b": C[:, 1, 1]})
    value = float(np.abs(r).sum())
    return Estimate("cross-fitted NC-ECE", value, (max(0.0, value - radius), value + radius),
                    level, "bound", "hoeffding-union-crossfit", n=n,
                    message="assumes exact channels (the channel term is not included)",
                    details={"n_folds": F, "per_fold": per_fold, "sampling_radius": radius,
                             "residuals": r, "n_bins": M})
