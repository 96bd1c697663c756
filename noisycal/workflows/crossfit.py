"""Cross-fitted NC-ECE ("Noisy-Label Calibration with Multiple Unreliable Labels")."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._util.jax import as_numpy_rng, x64
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_array,
    check_int,
    check_items,
    check_level,
    check_n_bins,
    check_seed,
    prediction_items,
)
from ..annotations.core import Annotations
from ..correction.labels import fit_prevalence
from ..engines.methods import Method
from ..exceptions import IdentifiabilityWarning
from ..intervals.estimate import Estimate
from ..metrics.binned.bins import equal_width_bins, residual_ece, segment_stats
from ..metrics.nc.bound import hoeffding_radius, target_range
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
                  n_bins: int, level: float, seed: Seed) -> tuple[np.ndarray, int, float]:
    level = check_level(level)
    check_seed(seed)
    z = check_array(probs, "probs", ndim=1)
    if not isinstance(annotations, Annotations) or annotations.n_classes != 2:
        raise ValueError("annotations must be two-class noisycal.Annotations")
    n = annotations.n_items
    if z.shape[0] != n:
        raise ValueError(f"probs has {z.shape[0]} items, annotations have {n}")
    check_items(annotations.items, prediction_items(probs, None, items),
                "probs" if items is None else "items")
    if np.any((z < 0) | (z > 1)):
        raise ValueError("probs must lie in [0, 1]")
    return z, check_n_bins(n_bins, n), level


def _fold_target(model: Any, annotations: Annotations, train: np.ndarray, test: np.ndarray,
                 k: int, weights: str, method: Method | str | None, seed: Seed) -> Any:
    """Corrected target of the test fold from channels fitted on the other folds."""
    fit = model.fit(annotations.subset(train), method=method, seed=seed)
    if fit.status not in ("ok", "boundary"):
        raise ValueError(f"the channel fit on the folds other than {k} failed: "
                         f"{fit.status} ({fit.message})")
    U = corrected(annotations.subset(test), confusion=fit.confusion, weights=weights,
                  prevalence=fit_prevalence(fit))
    return U, fit.status, fit.message


def nc_ece_crossfit(probs: ArrayLike, annotations: Annotations, *, model: Any = None,
                    method: Method | str | None = None, n_folds: int | None = None,
                    folds: ArrayLike | None = None, n_bins: int = 10, weights: str = "iv",
                    level: float = 0.9, seed: Seed = 0,
                    items: ArrayLike | None = None) -> Estimate:
    r"""Cross-fitted NC-ECE with its finite-sample interval (binary).

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
    with Multiple Unreliable Labels" (its Theorem 1 applied per fold).

    Parameters
    ----------
    probs : array-like of shape (n_items,)
        Positive-class scores, in the order of ``annotations.items``; a pandas Series'
        index (or ``items=``) must list those items in that order (else ValueError).
    annotations : Annotations
        Two-class ratings.
    model : annotator model, optional
        Fitted on every training fold; default ``DawidSkene()``.
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
    (:func:`~noisycal.correction.fit_prevalence`).

    Returns
    -------
    Estimate
        ``details['per_fold']`` holds each fold's B-hat, radius, channels and fit status.
        A fold fit with status 'boundary' gives the Estimate status
        ``'channels_boundary'`` with a message and an IdentifiabilityWarning (other
        non-ok fits raise).
    """
    from ..annotators import DawidSkene

    z, M, level = _check_inputs(probs, annotations, items, n_bins, level, seed)
    n = z.shape[0]
    fold, F = _fold_ids(folds, n_folds, n, seed)
    model = DawidSkene() if model is None else model
    u = np.empty(n)
    radius, per_fold = 0.0, []
    for k in range(F):
        test = np.flatnonzero(fold == k)
        U, fit_status, fit_message = _fold_target(model, annotations,
                                                  np.flatnonzero(fold != k), test, k, weights,
                                                  method, seed)
        u[test] = U.values[:, 1]
        C = U.details["confusion"]
        B = target_range(U.details)
        rad_k = hoeffding_radius(B, test.size, M, level, union=2.0 * F)
        radius += test.size / n * rad_k
        per_fold.append({"fold": k, "n": test.size, "B_hat": B, "radius": rad_k,
                         "a": C[:, 0, 1], "b": C[:, 1, 1], "fit_status": fit_status,
                         "fit_message": fit_message})
    bins = equal_width_bins(z, M)
    with x64():
        value = float(residual_ece(np.ones(n), u, z, bins, M))
        stats = np.asarray(segment_stats(np.stack([np.ones(n), z, u], 1)[None], bins[None],
                                         None, M))[0]
    r = (stats[:, 2] - stats[:, 1]) / n  # the per-bin residuals r_l, from the bin sums
    status, message = "ok", "assumes exact channels (the channel term is not included)"
    weak = [f for f in per_fold if f["fit_status"] != "ok"]
    if weak:
        status = f"channels_{weak[0]['fit_status']}"
        message = (f"the channel fits of fold(s) {[f['fold'] for f in weak]} have status "
                   f"{weak[0]['fit_status']!r} ({weak[0]['fit_message']}); the bound assumes "
                   f"identified channels; {message}")
        warnings.warn(message, IdentifiabilityWarning, stacklevel=2)
    return Estimate("cross-fitted NC-ECE", value, (max(0.0, value - radius), value + radius),
                    level, "bound", "hoeffding-union-crossfit", n=n, status=status,
                    message=message,
                    details={"n_folds": F, "per_fold": per_fold, "sampling_radius": radius,
                             "residuals": r, "n_bins": M})
