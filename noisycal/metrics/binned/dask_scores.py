"""The Brier score and the NLL of Dask input (:mod:`noisycal.metrics.binned.dask`).

They take a pass over the row blocks for the target's flags (whether it leaves [0, 1],
which fixes the form of the Brier score), one for the sum of the per-item scores, and,
for an interval, one for the sum of squared deviations (Wald) and the Poisson bootstrap
replicates."""

from __future__ import annotations

import dataclasses
import warnings
from types import SimpleNamespace

import numpy as np
from scipy import stats as sps

from ..._util.jax import as_numpy_rng
from ..._util.types import ArrayLike, Seed
from ..._util.validation import (
    PROB_ATOL,
    check_choice,
    check_level,
    check_seed,
    user_stacklevel,
)
from ...exceptions import NumericalWarning
from ...intervals.bootstrap import interval_from_replicates
from ...intervals.estimate import Estimate
from ...intervals.options import Bootstrap, Wald
from ..inputs import resolve_inputs, with_target_status
from ..score_losses import (
    AFFINE_IN_TARGET,
    brier_form,
    brier_losses,
    leaves_unit_interval,
    nll_high_variance,
    nll_losses,
    score_floor,
    with_floor_status,
)
from .dask import RowBlocks, block_inputs, poisson_sums, refuse

__all__ = ["dask_score"]

def _score_block(p: np.ndarray, t: object, first: int, *, classes: ArrayLike | None,
                 score: str, corrected: bool, step: str, affine: bool = False,
                 mean: float = 0.0, n_boot: int = 0, entropy: int = 0) -> dict:
    """One row block of :func:`dask_score`: flags and loss sums, or the second pass."""
    P, T, labels = block_inputs(p, t, first, classes)
    binary = np.ndim(p) == 1
    if step == "flags":
        if labels is not None:
            return {"outside": False, "rows_off": False, "negative": False}
        return {"outside": leaves_unit_interval(T, SimpleNamespace(
                    kind="corrected" if corrected else None)),
                "rows_off": bool(np.any(np.abs(T.sum(1) - 1) > PROB_ATOL)),
                "negative": bool(np.any(T < -PROB_ATOL))}
    logP = None
    if score == "brier":
        losses = brier_losses(P, T, labels, binary, affine)
    elif labels is not None:
        losses = nll_losses(P, None, None, labels)
    else:
        _, logP, T, _ = resolve_inputs(p, t, None, classes=classes, items=None,
                                       check_target=False)
        losses = nll_losses(P, logP, T, None)
    if step == "sum":
        floor = 0.0 if labels is not None else score_floor(P, logP, score, binary) * len(P)
        return {"sum": float(np.sum(losses)), "n": losses.shape[0],
                "n_inf": int(np.sum(~np.isfinite(losses))), "floor": floor}
    out = {"m2": float(np.sum((losses - mean) ** 2))}
    if n_boot:
        data = np.stack([np.ones_like(losses), losses], axis=1)[None]
        out["reps"] = poisson_sums(data, np.zeros((1, losses.shape[0]), np.int64), 1,
                                    first, n_boot, entropy)[:, 0, :]
    return out


def dask_score(score: str, probs: object, target: object, *, logits: object,
               classes: ArrayLike | None, items: object, variant: str,
               interval: Bootstrap | Wald | None, level: float, seed: Seed,
               cluster: object) -> Estimate:
    """:func:`noisycal.brier` (``score='brier'``) or :func:`noisycal.nll` of Dask input.

    Parameters
    ----------
    score : {'brier', 'nll'}
    probs, target, logits, classes, items, variant, level, seed, cluster
        As in :func:`noisycal.brier` / :func:`noisycal.nll` (``variant`` 'plain' for the
        NLL).
    interval : Bootstrap, Wald or None
        The interval option (checked by the score; the bootstrap is the Poisson one).

    Returns
    -------
    Estimate
    """
    check_choice(variant, "variant", ("plain", "expected"))
    level = check_level(level)
    check_seed(seed)
    boot = interval if isinstance(interval, Bootstrap) else None
    refuse(cluster=cluster is not None,
           **{"Bootstrap(method='bca')": boot is not None and boot.method == "bca",
              "Bootstrap(scheme='exact')": boot is not None and boot.scheme == "exact"})
    blocks = RowBlocks(probs, target, classes, logits=logits, items=items)
    corrected = getattr(target, "kind", None) == "corrected"
    flags = blocks.map(_score_block, score=score, corrected=corrected, step="flags")
    outside, rows_off, negative = (any(q[k] for q in flags)
                                   for k in ("outside", "rows_off", "negative"))
    if score == "brier":
        affine, name, details = brier_form(variant, blocks.binary, outside, rows_off,
                                           negative)
    else:
        affine, name = False, "NLL"
        details = {"affine_in_target": AFFINE_IN_TARGET["NLL"], "high_variance": outside}
    parts = blocks.map(_score_block, score=score, corrected=corrected, step="sum",
                       affine=affine)
    n = sum(q["n"] for q in parts)
    value = sum(q["sum"] for q in parts) / n
    n_inf = sum(q["n_inf"] for q in parts)
    est = _mean_estimate(blocks, value, n, n_inf, name, details, score=score,
                         corrected=corrected,
                         affine=affine, interval=interval, level=level, seed=seed)
    if score == "nll" and outside:
        est = nll_high_variance(est)
    elif outside and variant == "plain" and est.status == "ok":
        est = dataclasses.replace(est, message=(
            "the target leaves [0, 1] (noise-corrected), so the plain ||p - T||^2, quadratic "
            "in T and biased, was replaced by its affine form ||p||^2 - 2 p.T + 1, unbiased "
            "for the Brier score against the clean labels"))
    if outside:  # the smallest mean score against any clean labels, from the block sums
        est = with_floor_status(est, sum(q["floor"] for q in parts) / n)
    return with_target_status(est, target, probs, logits)


def _mean_estimate(blocks: RowBlocks, value: float, n: int, n_inf: int, name: str,
                   details: dict, *,
                   score: str, corrected: bool, affine: bool,
                   interval: Bootstrap | Wald | None, level: float, seed: Seed) -> Estimate:
    """:func:`~noisycal.metrics.scores.mean_estimate` from block sums."""
    if not np.isfinite(value):
        return Estimate(name, value, n=n, status="nonfinite", details=details, message=(
            f"{n_inf} item(s) have an infinite loss (probability 0 on a class with positive "
            "target)"))
    if interval is None:
        return Estimate(name, value, n=n, details=details)
    entropy = int(as_numpy_rng(seed).integers(0, 2**63))
    n_boot = interval.n_boot if isinstance(interval, Bootstrap) else 0
    parts = blocks.map(_score_block, score=score, corrected=corrected, step="spread",
                       affine=affine, mean=value, n_boot=n_boot, entropy=entropy)
    if isinstance(interval, Wald):
        se = float(np.sqrt(sum(q["m2"] for q in parts) / (n - 1)) / np.sqrt(n)) if n > 1 \
            else float("nan")
        if not np.isfinite(se):
            msg = f"the standard error needs at least 2 items (n = {n}); no Wald interval"
            warnings.warn(f"{name}: {msg}", NumericalWarning, stacklevel=user_stacklevel())
            return Estimate(name, value, n=n, status="nonfinite_se", message=msg,
                            details={**details, "se": se})
        z = sps.norm.ppf(0.5 + level / 2.0)
        return Estimate(name, value, (value - z * se, value + z * se), level, "wald", "wald",
                        n=n, details={**details, "se": se})
    sums = sum(q["reps"] for q in parts)
    reps = sums[:, 1] / sums[:, 0]
    method = interval.method
    ci, status, message = interval_from_replicates(value, reps, level, method)
    return Estimate(name, value, ci, level, "bootstrap", method, n=n, n_boot=n_boot,
                    status=status, message=message, details={**details,
                                                             "bootstrap": "poisson"},
                    replicates=reps)
