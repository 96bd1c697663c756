"""Bootstrap of NC-ECE that refits the annotator channels in every replicate.

The conditional bootstrap (``ece(..., interval='bootstrap')`` on a corrected target)
resamples items with the channels held at their estimates, so it ignores the channel
estimation error. This one follows the protocol of "Noisy-Label Calibration with
Multiple Unreliable Labels" (Algorithm 1) inside every replicate b:

1. draw n items with replacement (counts w_i);
2. refit the channels by EM on the resampled items (the same model, priors, iteration
   limit and tolerance as the original fit; started from the fitted posteriors, so the
   class orientation is kept; a gold item of the fit keeps its class, clamped, in every
   replicate);
3. recompute the aggregation weights from the refitted channels by the target's rule
   ('iv' with the refitted prevalence, unless the target's prevalence was given by the
   user; 'equal', 'gap', 'squared_gap'; user-given weights stay fixed):
   :func:`noisycal.correction.channel_rule_weights`;
4. recompute every corrected label (:func:`noisycal.correction.corrected_from_channels`)
   and the binned NC-ECE with weights w_i, the bins held fixed.

The paper states the protocol for two classes; with K > 2 classes (Dawid–Skene
confusion matrices) the same steps run on K x K channels, with our K-class weight
rules, and the statistic is the top-label or classwise NC-ECE (our extension).

Step 2 is the fit's own: the target hands the resample's item weights to its fit
(``fit.refit(weights)``, :class:`~noisycal.targets.ChannelFit`), which reruns EM
on the ratings it was fitted on, in its annotator and class order, started from each
item's fitted posterior; steps 3 and 4 run inside the same compiled loop (the statistic
the fit accepts), after every refit's channels are permuted to the target's order (the
target's ``annotator_index`` and ``class_index``, :func:`noisycal.correction.fit_index`).
The target may list the fit's items, annotators and classes in any order (items are
matched by id), but it must use all the fit's annotators and items (the refit
re-estimates the channels from the same data).

Items enter only through their rating pattern (which annotators said what, and the
item's group), so EM runs on the distinct patterns and step 4 is one weighted pass over
the items: a replicate costs O(n + EM on the patterns). All replicates run in one
jitted ``lax.map``.

A replicate whose refitted gap b_j - a_j of an informative annotator is at most 1e-4
(K > 2: the smallest singular value of its confusion matrix) cannot be inverted; its
value is NaN, and the interval is then reported with status
``'nonfinite'`` (never silently dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ...correction.labels import (
    channel_rule_weights,
    channels_invertible,
    corrected_from_channels,
)
from ...exceptions import NotOffered
from ...intervals.bootstrap import multinomial_counts

__all__ = ["nc_ece_refit_replicates", "check_refit_target"]

_RULES = ("iv", "equal", "gap", "squared_gap", "given")


def check_refit_target(target: Any) -> tuple[dict, Any]:
    """Check that ``target`` is a corrected target built from an annotator fit, using all
    its annotators, classes and items.

    Whether the fit can be refitted (an EM fit of the Dawid–Skene family, with or without
    gold labels, of the classifier-informed model, or of GLAD) the fit says when asked
    (``fit.refit``; see :func:`nc_ece_refit_replicates`).

    Parameters
    ----------
    target : object
        The metric's target.

    Returns
    -------
    details, fit
        The target's details and its fit.
    """
    det = getattr(target, "details", {})
    fit = det.get("fit") if getattr(target, "kind", None) == "corrected" else None
    ai, ci = det.get("annotator_index"), det.get("class_index")
    if fit is None:
        raise ValueError("interval=Refit() needs a corrected target built from an "
                         "annotator fit: nc.targets.corrected(annotations, fit)")
    J, K = len(fit.annotators), len(fit.classes)
    if ai is None or sorted(np.asarray(ai).tolist()) != list(range(J)) \
            or sorted(np.asarray(ci).tolist()) != list(range(K)):
        raise ValueError("interval=Refit() needs the corrected target built from all the "
                         "annotators its fit was fitted on (the refit re-estimates their "
                         "channels from the same ratings); this target uses a subset")
    _item_positions(target, fit)
    return det, fit


def _item_positions(target: Any, fit: Any) -> np.ndarray:
    """Index in ``fit.items`` of each target row (by item id; by position without ids)."""
    n = np.shape(target.details["ratings"])[0]
    items = getattr(target, "items", None)
    if items is None:
        if n != fit.n_items:
            raise ValueError(f"the corrected target has {n} rows and no item ids but its fit "
                             f"has {fit.n_items} items; build both from the same Annotations")
        return np.arange(n)
    pos = {v: i for i, v in enumerate(np.asarray(fit.items).tolist())}
    out = np.array([pos.get(v, -1) for v in np.asarray(items).tolist()], dtype=np.int64)
    if n != fit.n_items or np.any(out < 0):
        raise ValueError("the corrected target's items are not the items its fit was fitted "
                         "on; build both from the same Annotations")
    return out


def _fixed_prevalence(det: dict, K: int) -> np.ndarray | None:
    """The user's prevalence as a (K,) vector (None unless given by the user)."""
    if det.get("prevalence_source") != "given":
        return None
    p = det["prevalence"]
    return np.array([1.0 - p, p]) if K == 2 else np.asarray(p, np.float64)


def nc_ece_refit_replicates(target: Any, stat_args: tuple, *, n_bins: int, n_boot: int,
                            statistic: Callable[..., Any], seed: Any = 0,
                            progress: bool = False) -> tuple[np.ndarray, dict]:
    """Replicates of the binned NC-ECE with the channels refitted each time.

    Parameters
    ----------
    target : Target
        A corrected target (any number of classes) built from an EM fit of the
        Dawid–Skene family, of the classifier-informed model or of GLAD
        (``details['fit']``).
    stat_args : tuple of arrays
        Item-level arrays of the statistic (confidences, bins, target columns), in the
        order of the target's items.
    n_bins : int
        Equal-width bins.
    n_boot : int
        Replicates.
    statistic : callable
        ``statistic(weights, T, *stat_args, n_bins)``: the binned NC-ECE (or its vector of
        bin means) of the corrected target matrix ``T`` (n_items, K) under item weights,
        JAX-traceable and module-level (a static argument of the fit's compiled refit
        loop); supplied by :mod:`noisycal.metrics`.
    seed : int or jax key
    progress : bool, default=False
        A progress bar on stderr, one step per refit.

    Returns
    -------
    replicates : ndarray of shape (n_boot,) or (n_boot, ...)
        The statistic of each replicate (its shape follows the statistic's); NaN where the
        refitted channels failed the invertibility check.
    details : dict
        ``n_failed`` (invertibility check), ``n_nonfinite``, ``n_not_converged`` (EM hit
        its iteration limit), the refitted channels' spread ``confusion_sd`` (J, K, K;
        for two classes also ``a_sd``, ``b_sd``) and ``n_patterns`` (the fit's rating
        patterns EM ran on).

    Raises
    ------
    ValueError
        When the target's fit cannot be refitted (the fit's reason).
    """
    det, fit = check_refit_target(target)
    onehot = np.asarray(det["ratings"], dtype=np.float64)  # the target's order
    seen = np.asarray(det["observed"], dtype=bool)
    mask = np.asarray(det["informative"], dtype=bool)
    n, J, K = onehot.shape
    ai, ci = np.asarray(det["annotator_index"]), np.asarray(det["class_index"])
    rows = _item_positions(target, fit)
    rule = det["rule"]
    if rule not in _RULES:  # pragma: no cover - corrected_target only sets these
        raise ValueError(f"unknown weight rule {rule!r}")
    fixed_prev = _fixed_prevalence(det, K)
    # the corrected target is computed once per distinct row of ratings
    _, rep, pattern = np.unique(onehot.reshape(n, J * K), axis=0, return_index=True,
                                return_inverse=True)
    permuted = not np.array_equal(rows, np.arange(n))
    stat = _CorrectedStatistic(rule, fixed_prev is not None, int(n_bins), statistic, permuted)
    with x64():
        args = _RefitArgs(
            jnp.asarray(np.argsort(rows), jnp.int32), jnp.asarray(rows, jnp.int32),
            jnp.asarray(pattern.ravel(), jnp.int32), jnp.asarray(ai, jnp.int32),
            jnp.asarray(ci, jnp.int32), jnp.asarray(onehot[rep]), jnp.asarray(seen[rep]),
            jnp.asarray(mask), jnp.asarray(np.asarray(det["weights"], np.float64)),
            jnp.asarray(np.full(K, np.nan) if fixed_prev is None else fixed_prev),
            tuple(jnp.asarray(a) for a in stat_args))
        try:
            # replicate b resamples the target's rows with key b, drawn inside the fit's
            # compiled loop
            res = fit.refit(jax.random.split(as_key(seed), int(n_boot)),
                            draw=_Resample(n, permuted), statistic=stat, args=args,
                            progress="NC-ECE channel refits" if progress else False)
        except NotOffered as exc:
            raise ValueError(
                f"interval=Refit(): the target's fit cannot be refitted ({exc}); use the "
                "default interval, or interval='credible' for a NUTS fit") from None
    vals, ok = res.statistic
    converged = res.converged
    conf = np.ascontiguousarray(res.confusion[:, ai][:, :, ci][:, :, :, ci])  # target's order
    okv = ok.reshape(ok.shape + (1,) * (vals.ndim - 1))  # the statistic may be a vector
    vals = np.where(okv, vals, np.nan)
    finite = np.isfinite(vals).reshape(vals.shape[0], -1).all(axis=1)
    n_nonfinite = int(np.sum(ok & ~finite))
    conf = np.where(ok[:, None, None, None], conf, np.nan)
    extra = {"n_failed": int(np.sum(~ok)), "n_nonfinite": n_nonfinite,
             "n_not_converged": int(np.sum(~converged)),
             "confusion_sd": np.nanstd(conf, axis=0),
             "n_patterns": int(res.n_patterns)}
    if K == 2:
        extra["a_sd"], extra["b_sd"] = extra["confusion_sd"][:, 0, 1], \
            extra["confusion_sd"][:, 1, 1]
    return vals, extra


class _RefitArgs(NamedTuple):
    """The traced arguments of :class:`_Resample` and :class:`_CorrectedStatistic`."""

    order: jax.Array       # (n,) the target row of each fitted item
    rows: jax.Array        # (n,) the fitted item of each target row
    pattern: jax.Array     # (n,) the distinct row of ratings of each target row
    ai: jax.Array          # the target's annotators in the fit
    ci: jax.Array          # the target's classes in the fit
    ratings: jax.Array     # (P, J, K) one-hot, one per distinct row of ratings
    observed: jax.Array    # (P, J)
    mask: jax.Array        # (J,) informative annotators
    given: jax.Array       # (J,) the target's weights (kept with rule 'given')
    fixed: jax.Array       # (K,) the user's prevalence (NaN when refitted)
    stat_args: tuple       # the statistic's item arrays, in the target's order


@dataclass(frozen=True)
class _Resample:
    """One bootstrap resample of the n target rows from a key, as the fitted items'
    multiplicities (frozen: a static argument of the fit's compiled loop; ``permuted``:
    whether the target lists the fitted items in another order)."""

    n: int
    permuted: bool

    def __call__(self, key: jax.Array, args: _RefitArgs) -> jax.Array:
        w = multinomial_counts(key, self.n)
        return w[args.order] if self.permuted else w


@dataclass(frozen=True)
class _CorrectedStatistic:
    """The refit statistic: one refit's channels permuted to the target's order, the
    aggregation weights by the target's rule, the corrected target, then ``statistic``.

    Frozen (hashable by value), so the fit's compiled refit loop is reused across calls.
    """

    rule: str
    fixed_prevalence: bool
    n_bins: int
    statistic: Callable[..., Any]
    permuted: bool

    def __call__(self, w_fit: jax.Array, confusion: jax.Array, prevalence: jax.Array,
                 args: _RefitArgs) -> tuple[jax.Array, jax.Array]:
        _, rows, pattern, ai, ci, ratings, observed, mask, given, fixed, stat_args = args
        w = w_fit[rows] if self.permuted else w_fit       # the target's item order
        confusion = confusion[ai][:, ci][:, :, ci]        # the target's annotators, classes
        mu = fixed if self.fixed_prevalence else prevalence[ci]
        alpha = given if self.rule == "given" else channel_rule_weights(
            self.rule, confusion, mu, mask=mask, xp=jnp)
        ok = jnp.all(jnp.where(mask, channels_invertible(confusion, jnp), True)) \
            & jnp.all(jnp.isfinite(mu))
        # corrected target of each row of ratings (meaningless where not ok: the caller
        # sets NaN)
        T = corrected_from_channels(ratings, observed, mask, alpha, confusion, xp=jnp)
        return self.statistic(w, T[pattern], *stat_args, self.n_bins), ok
