"""Bootstrap of NC-ECE that refits the annotator channels in every replicate.

The conditional bootstrap (``ece(..., interval='bootstrap')`` on a corrected target)
resamples items with the channels held at their estimates, so it ignores the channel
estimation error. This one follows the protocol of "Noisy-Label Calibration with
Multiple Unreliable Labels" (Algorithm 1) inside every replicate b:

1. draw n items with replacement (counts w_i);
2. refit the channels by EM on the resampled items (the same model, priors, iteration
   limit and tolerance as the original fit; started from the fitted posteriors, so the
   class orientation is kept);
3. recompute the aggregation weights from the refitted channels by the target's rule
   ('iv' with the refitted prevalence, unless the target's prevalence was given by the
   user; 'equal', 'gap', 'squared_gap'; user-given weights stay fixed):
   :func:`noisycal.correction.channel_rule_weights`;
4. recompute every corrected label (:func:`noisycal.correction.corrected_from_channels`)
   and the binned NC-ECE with weights w_i, the bins held fixed.

The paper states the protocol for two classes; with K > 2 classes (Dawid–Skene
confusion matrices) the same steps run on K x K channels, with our K-class weight
rules, and the statistic is the top-label or classwise NC-ECE (our extension).

The target may list the fit's items, annotators and classes in any order: EM runs in the
fit's annotator and class order (the target's ``annotator_index`` and ``class_index``,
:func:`noisycal.correction.fit_index`), started from each item's fitted posterior found
by item id, and every refit's channels are permuted to the target's order before the
correction. The target must use all the fit's annotators and items (the refit
re-estimates the channels from the same data).

Items enter only through their rating pattern (which annotators said what, and the
item's group), so step 2 runs on the distinct patterns and step 4 is one weighted pass
over the items: a replicate costs O(n + EM on the patterns). All replicates run in one
jitted ``lax.map``.

A replicate whose refitted gap b_j - a_j of an informative annotator is at most 1e-4
(K > 2: the smallest singular value of its confusion matrix) cannot be inverted; its
value is NaN, and the interval is then reported with status
``'nonfinite'`` (never silently dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.progress import ProgressBar, tick
from ...correction.labels import (
    channel_rule_weights,
    channels_invertible,
    corrected_from_channels,
    marginal_prevalence,
)

__all__ = ["nc_ece_refit_replicates", "check_refit_target"]

_RULES = ("iv", "equal", "gap", "squared_gap", "given")


def check_refit_target(target: Any) -> tuple[dict, Any]:
    """Check that ``target`` is a corrected target from an EM fit of the Dawid–Skene family.

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
        raise ValueError("refit_channels=True needs a corrected target built from an "
                         "annotator fit: nc.targets.corrected(annotations, fit)")
    if fit.method != "em" or fit.model not in ("dawid_skene", "one_coin", "grouped"):
        raise ValueError("refit_channels=True refits Dawid-Skene-family channels by EM; the "
                         f"target's fit is {fit.model!r} by {fit.method!r} (use the "
                         "conditional bootstrap, or interval='credible' for a NUTS fit)")
    if fit.details.get("gold"):
        raise ValueError("refit_channels=True does not support fits with gold labels yet; "
                         "use the conditional bootstrap")
    J, K = len(fit.annotators), len(fit.classes)
    if ai is None or sorted(np.asarray(ai).tolist()) != list(range(J)) \
            or sorted(np.asarray(ci).tolist()) != list(range(K)):
        raise ValueError("refit_channels=True needs the corrected target built from all the "
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
        Dawid–Skene family (``details['fit']``).
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
        JAX-traceable and
        module-level (a static argument of the jitted kernel); supplied by
        :mod:`noisycal.metrics`.
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
        for two classes also ``a_sd``, ``b_sd``) and ``n_patterns``.
    """
    # (long: most of it is the argument list of the one jitted kernel call below)
    from ...engines.em.dawid_skene import collapse_patterns, split_data
    from ...models.dawid_skene import make_data

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
    L = int(fit.details.get("groups", 1))
    group = fit.details.get("group_index")
    group = np.zeros(n, np.int64) if group is None else np.asarray(group, np.int64)[rows]
    label = ci[np.argmax(onehot, axis=2)]  # EM data: the fit's annotator and class order
    item, col = np.nonzero(seen)
    annotator = ai[col]
    pattern, rep, _ = collapse_patterns(item, annotator * K + label[item, col], n,
                                        extra=(group,))
    P = rep.size
    keep = np.isin(item, rep)
    pos = np.full(n, -1, np.int64)
    pos[rep] = np.arange(P)
    alpha_p = fit.details.get("prior_alpha")
    beta_p = fit.details.get("prior_beta")
    fixed_prev = _fixed_prevalence(det, K)
    # EM runs in the latent labelling of the original fit (where its priors apply); the
    # fit's classes are that labelling permuted by ``latent_perm``
    perm = np.asarray(fit.details.get("latent_perm", np.arange(K)))
    post0 = np.asarray(fit.item_posterior)[rows[rep]][:, np.argsort(perm)]
    with x64():
        data = make_data(pos[item[keep]], annotator[keep], label[item[keep], col[keep]],
                         n_items=P, n_annotators=J, n_classes=K, group=group[rep], n_groups=L)
        arrays, sizes = split_data(data)
        with ProgressBar(n_boot, "NC-ECE channel refits", enabled=progress) as bar:
            out = bar.wait(_replicates(
                as_key(seed), jnp.asarray(post0), jnp.asarray(perm, jnp.int32), arrays,
                None if alpha_p is None else jnp.asarray(alpha_p),
                None if beta_p is None else jnp.asarray(beta_p),
                jnp.asarray(pattern, jnp.int32), jnp.asarray(group, jnp.int32),
                jnp.asarray(ai, jnp.int32), jnp.asarray(ci, jnp.int32),
                jnp.asarray(onehot[rep]), jnp.asarray(seen[rep]), jnp.asarray(mask),
                jnp.asarray(np.asarray(det["weights"], np.float64)),
                jnp.asarray(np.full(K, np.nan) if fixed_prev is None else fixed_prev),
                tuple(jnp.asarray(a) for a in stat_args),
                sizes=sizes, one_coin=fit.model == "one_coin",
                max_iter=int(fit.details.get("max_iter", 1000)),
                tol=float(fit.details.get("tol", 1e-8)), rule=rule,
                fixed_prevalence=fixed_prev is not None, n_bins=int(n_bins),
                n_boot=int(n_boot), statistic=statistic, progress=progress))
        vals, ok, converged, conf = (np.asarray(x) for x in out)
    okv = ok.reshape(ok.shape + (1,) * (vals.ndim - 1))  # the statistic may be a vector
    vals = np.where(okv, vals, np.nan)
    finite = np.isfinite(vals).reshape(vals.shape[0], -1).all(axis=1)
    n_nonfinite = int(np.sum(ok & ~finite))
    conf = np.where(ok[:, None, None, None], conf, np.nan)
    extra = {"n_failed": int(np.sum(~ok)), "n_nonfinite": n_nonfinite,
             "n_not_converged": int(np.sum(~converged)),
             "confusion_sd": np.nanstd(conf, axis=0), "n_patterns": int(P)}
    if K == 2:
        extra["a_sd"], extra["b_sd"] = extra["confusion_sd"][:, 0, 1], \
            extra["confusion_sd"][:, 1, 1]
    return vals, extra


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol", "rule",
                                   "fixed_prevalence", "n_bins", "n_boot",
                                   "statistic", "progress"))
def _replicates(rng_key: jax.Array, post0: jax.Array, perm: jax.Array, arrays: tuple,
                alpha_p: Any, beta_p: Any, pattern: jax.Array, group: jax.Array,
                ai: jax.Array, ci: jax.Array, ratings: jax.Array,
                observed: jax.Array, mask: jax.Array, given: jax.Array, prevalence: jax.Array,
                stat_args: tuple, *, sizes: tuple, one_coin: bool,
                max_iter: int, tol: float, rule: str, fixed_prevalence: bool, n_bins: int,
                n_boot: int, statistic: Callable[..., Any], progress: bool = False) -> tuple:
    from ...engines.em.dawid_skene import join_data
    from ...engines.em.resample import resample_refit

    data = join_data(arrays, sizes)
    L = sizes[3]

    def one(key: jax.Array) -> tuple:
        w, st = resample_refit(key, post0, data, None, alpha_p, beta_p, pattern,
                               one_coin=one_coin, max_iter=max_iter, tol=tol)
        # the fit's class names (perm), then the target's annotator and class order
        confusion = st.confusion[:, perm, :][ai][:, ci][:, :, ci]
        group_prev = st.prevalence[:, perm][:, ci]
        if fixed_prevalence:
            mu = prevalence
        else:
            # groups the resample missed have weight 0 here
            wg = jax.ops.segment_sum(w, group, num_segments=L)
            mu = marginal_prevalence(group_prev, wg, xp=jnp)
        alpha = given if rule == "given" else channel_rule_weights(rule, confusion, mu,
                                                                   mask=mask, xp=jnp)
        ok = jnp.all(jnp.where(mask, channels_invertible(confusion, jnp), True)) \
            & jnp.all(jnp.isfinite(mu))
        # corrected target of each pattern (meaningless where not ok: the caller sets NaN)
        T = corrected_from_channels(ratings, observed, mask, alpha, confusion, xp=jnp)
        if progress:
            tick(st.n_iter)
        return statistic(w, T[pattern], *stat_args, n_bins), ok, st.converged, confusion

    return jax.lax.map(one, jax.random.split(rng_key, n_boot))
