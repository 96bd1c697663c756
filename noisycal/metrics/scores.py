"""Proper scores against any target: Brier score and negative log-likelihood (cross-entropy)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats as sps

import jax
import jax.numpy as jnp

from .._typing import ArrayLike, Seed
from .._validation import (
    PROB_ATOL,
    check_choice,
    check_int,
    check_level,
    check_seed,
    user_stacklevel,
)
from .._warnings import NumericalWarning
from ..intervals.bootstrap import BOOTSTRAP_METHODS, bootstrap
from ..intervals.estimate import Estimate
from .ece import resolve_inputs, with_target_status

__all__ = ["brier", "nll", "mean_estimate", "weighted_mean"]


def weighted_mean(weights: jax.Array, values: jax.Array) -> jax.Array:
    """``sum(w * x) / sum(w)``: the statistic of a mean under bootstrap weights.

    Parameters
    ----------
    weights : jax.Array of shape (n,)
    values : jax.Array of shape (n,)

    Returns
    -------
    jax.Array (scalar)
    """
    return jnp.sum(weights * values) / jnp.sum(weights)


def mean_estimate(losses: np.ndarray, name: str, *, interval: str | None, level: float,
                  n_boot: int, method: str, seed: Seed, cluster: ArrayLike | None,
                  details: dict) -> Estimate:
    """Estimate of a mean of per-item values with a bootstrap or Wald (normal) interval.

    Parameters
    ----------
    losses : ndarray of shape (n_items,)
        Per-item values.
    name : str
        Name of the estimate.
    interval : {'bootstrap', 'wald', None}
        A Wald interval needs at least two items (else status 'nonfinite_se').
    level, n_boot, method, seed, cluster
        As in :func:`noisycal.brier`.
    details : dict
        Extra details.

    Returns
    -------
    Estimate
    """
    check_choice(interval, "interval", (None, "bootstrap", "wald"))
    level = check_level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    check_choice(method, "method", BOOTSTRAP_METHODS)
    check_seed(seed)
    n = losses.shape[0]
    value = float(np.mean(losses))
    status, message = "ok", ""
    if not np.isfinite(value):
        status = "nonfinite"
        message = (f"{int(np.sum(~np.isfinite(losses)))} item(s) have an infinite loss "
                   "(probability 0 on a class with positive target)")
    if interval is None or status != "ok":
        return Estimate(name, value, n=n, status=status, message=message, details=details)
    if interval == "wald":
        if cluster is not None:
            raise ValueError("interval='wald' treats items as independent; use "
                             "interval='bootstrap' with cluster=")
        se = float(np.std(losses, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        if not np.isfinite(se):
            msg = (f"the standard error needs at least 2 items (n = {n}); no Wald interval")
            warnings.warn(f"{name}: {msg}", NumericalWarning, stacklevel=user_stacklevel())
            return Estimate(name, value, n=n, status="nonfinite_se", message=msg,
                            details={**details, "se": se})
        z = sps.norm.ppf(0.5 + level / 2.0)
        return Estimate(name, value, (value - z * se, value + z * se), level, "wald", "wald",
                        n=n, details={**details, "se": se})
    est = bootstrap(weighted_mean, losses, cluster=cluster, n_boot=n_boot, level=level,
                    method=method, seed=seed, name=name)
    return Estimate(name, value, est.interval, level, "bootstrap", method, n=n, n_boot=n_boot,
                    status=est.status, message=est.message, details=details,
                    replicates=est.replicates)


def brier(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    items: ArrayLike | None = None,
    variant: str = "plain",
    interval: str | None = "bootstrap",
    level: float = 0.9,
    n_boot: int = 1000,
    method: str = "percentile",
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
) -> Estimate:
    r"""Brier score against a target, averaged over items.

    Parameters
    ----------
    probs, logits : see :func:`noisycal.ece`
        A 1-D binary input gives the binary Brier score :math:`(p_i - T_{i1})^2`;
        a matrix gives the multi-class score :math:`\sum_k (p_{ik} - T_{ik})^2`
        (twice the binary one when K = 2).
    target : Target, array-like of shape (n_items, n_classes) or labels
    classes, items : see :func:`noisycal.ece`
    variant : {'plain', 'expected'}, default='plain'
        'plain': squared distance to the target row (the soft Brier score of
        Tao, Luo, Dong & Xu (2026) for soft targets). 'expected': the Brier score
        against a label drawn from the
        target row, :math:`\|p_i - T_i\|^2 + 1 - \|T_i\|^2` (needs probability rows;
        for binary 1-D input the analogue :math:`(p-t)^2 + t(1-t)`). The two differ
        by a per-item constant, so rankings of predictors agree.
    interval : {'bootstrap', 'wald', None}, default='bootstrap'
    method : {'percentile', 'basic', 'bca'}, default='percentile'
        How the bootstrap interval is read off the replicates (``method=`` means only
        this in every metric).
    level, n_boot, seed, cluster : see :func:`noisycal.ece`

    Returns
    -------
    Estimate

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> round(float(nc.brier(np.array([[0.8, 0.2], [0.4, 0.6]]), np.array([0, 0]),
    ...                      interval=None)), 12)
    0.4
    """
    check_choice(variant, "variant", ("plain", "expected"))
    P, _, T, binary = resolve_inputs(probs, target, logits, classes=classes, items=items)
    if variant == "expected" and (np.any(T < -PROB_ATOL)
                                  or np.any(np.abs(T.sum(1) - 1) > PROB_ATOL)):
        raise ValueError("variant='expected' needs target rows that are probability "
                         "distributions")
    if binary:
        t = T[:, 1]
        losses = (P[:, 1] - t) ** 2
        if variant == "expected":
            losses = losses + t * (1.0 - t)
    else:
        losses = np.sum((P - T) ** 2, axis=1)
        if variant == "expected":
            losses = losses + 1.0 - np.sum(T**2, axis=1)
    est = mean_estimate(losses, "Brier" if variant == "plain" else "expected Brier",
                        interval=interval, level=level, n_boot=n_boot, method=method,
                        seed=seed, cluster=cluster,
                        details={"variant": variant, "binary": binary})
    return with_target_status(est, target)


def nll(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    items: ArrayLike | None = None,
    interval: str | None = "bootstrap",
    level: float = 0.9,
    n_boot: int = 1000,
    method: str = "percentile",
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
) -> Estimate:
    r"""Negative log-likelihood: the cross-entropy :math:`-\sum_k T_{ik}\log p_{ik}`, averaged.

    With hard labels this is the usual NLL; with soft labels the soft cross-entropy of
    Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth"
    (Eq. 5), bounded below by the mean entropy of the target rows. Terms with
    :math:`T_{ik} = 0` contribute 0 even where :math:`p_{ik} = 0`. When ``logits`` are
    given, log-probabilities come from a stable log-softmax. A probability of exactly 0
    on a class with non-zero target gives an infinite value and ``status='nonfinite'``
    (no interval).

    Parameters
    ----------
    probs, logits, target, classes, items : see :func:`noisycal.ece`
    interval : {'bootstrap', 'wald', None}, default='bootstrap'
    method : {'percentile', 'basic', 'bca'}, default='percentile'
        How the bootstrap interval is read off the replicates (``method=`` means only
        this in every metric).
    level, n_boot, seed, cluster : see :func:`noisycal.ece`

    Returns
    -------
    Estimate

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> round(float(nc.nll(np.array([[0.5, 0.5], [0.25, 0.75]]), np.array([0, 1]),
    ...                    interval=None)), 6)
    0.490415
    """
    P, logP, T, _ = resolve_inputs(probs, target, logits, classes=classes, items=items)
    with np.errstate(invalid="ignore"):
        terms = np.where(T != 0.0, -T * logP, 0.0)
    losses = terms.sum(axis=1)
    est = mean_estimate(losses, "NLL", interval=interval, level=level, n_boot=n_boot,
                        method=method, seed=seed, cluster=cluster, details={})
    return with_target_status(est, target)
