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
   user; 'equal', 'gap', 'squared_gap'; user-given weights stay fixed);
4. recompute every corrected label and the binned NC-ECE with weights w_i.

Items enter only through their rating pattern (which annotators said what, and the
item's group), so step 2 runs on the distinct patterns and step 4 is one weighted pass
over the items: a replicate costs O(n + EM on the patterns). All replicates run in one
jitted ``lax.map``.

A replicate whose refitted gap b_j - a_j of an informative annotator is at most 1e-4
cannot be inverted; its value is NaN, and the interval is then reported with status
``'nonfinite'`` (never silently dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import as_key, x64
from ..correction import (
    corrected_from_channels,
    gap_invertible,
    marginal_prevalence,
    rule_weights,
)

__all__ = ["nc_ece_refit_replicates"]

_RULES = ("iv", "equal", "gap", "squared_gap", "given")


def _check_target(target: Any) -> tuple[dict, Any]:
    det = getattr(target, "details", {})
    fit = det.get("fit") if getattr(target, "kind", None) == "corrected" else None
    if fit is None:
        raise ValueError("refit_channels=True needs a corrected target built from an "
                         "annotator fit: nc.targets.corrected(annotations, fit)")
    if fit.method != "em" or fit.model not in ("dawid_skene", "one_coin", "grouped"):
        raise ValueError("refit_channels=True refits Dawid-Skene-family channels by EM; the "
                         f"target's fit is {fit.model!r} by {fit.method!r} (use the "
                         "conditional bootstrap, or interval='credible' for a NUTS fit)")
    if len(fit.classes) != 2:
        raise ValueError("refit_channels=True is implemented for two classes (the NC-ECE "
                         f"of \"Noisy-Label Calibration with Multiple Unreliable Labels\"), got "
                         f"{len(fit.classes)}")
    if fit.details.get("gold"):
        raise ValueError("refit_channels=True does not support fits with gold labels yet; "
                         "use the conditional bootstrap")
    ratings = np.asarray(det["ratings"])
    if ratings.shape[0] != fit.n_items or ratings.shape[1] != len(fit.annotators):
        raise ValueError("the corrected target's annotations do not match its fit's items and "
                         "annotators; build both from the same Annotations")
    return det, fit


def nc_ece_refit_replicates(conf: np.ndarray, bins: np.ndarray, target: Any, *, n_bins: int,
                            n_boot: int, statistic: Callable[..., Any], seed: Any = 0
                            ) -> tuple[np.ndarray, dict]:
    """Replicates of the binned positive-class NC-ECE with channels refitted each time.

    Parameters
    ----------
    conf : ndarray of shape (n_items,)
        Positive-class probabilities (the items of the target, in the same order).
    bins : ndarray of int, shape (n_items,)
        Bin index of each item (from the metric's bins).
    target : Target
        A two-class corrected target built from an EM fit (``details['fit']``).
    n_bins : int
        Equal-width bins.
    n_boot : int
        Replicates.
    statistic : callable
        ``statistic(weights, u, conf, bins, n_bins)``: the binned NC-ECE of corrected
        labels ``u`` under item weights, JAX-traceable and module-level (a static
        argument of the jitted kernel); supplied by :mod:`noisycal.metrics`.
    seed : int or jax key

    Returns
    -------
    replicates : ndarray of shape (n_boot,)
        NaN where the refitted channels failed the gap check.
    details : dict
        ``n_failed`` (gap check), ``n_not_converged`` (EM hit its iteration limit), the
        refitted channels' spread (``a_sd``, ``b_sd``) and ``n_patterns``.
    """
    # (long: most of it is the argument list of the one jitted kernel call below)
    from ..engines.em import collapse_patterns, split_data
    from ..models.dawid_skene import make_data

    det, fit = _check_target(target)
    onehot = np.asarray(det["ratings"], dtype=np.float64)
    seen = np.asarray(det["observed"], dtype=bool)
    mask = np.asarray(det["informative"], dtype=bool)
    n, J, _ = onehot.shape
    rule = det["rule"]
    if rule not in _RULES:  # pragma: no cover - corrected_target only sets these
        raise ValueError(f"unknown weight rule {rule!r}")
    L = int(fit.details.get("groups", 1))
    group = fit.details.get("group_index")
    group = np.zeros(n, np.int64) if group is None else np.asarray(group, np.int64)
    # rating code per (item, annotator): 0/1 for the observed label, 2 when missing
    code = np.where(seen, onehot[:, :, 1], 2.0).astype(np.int64)
    item, annotator = np.nonzero(seen)
    pattern, rep, _ = collapse_patterns(item, annotator * 2 + code[item, annotator], n,
                                        extra=(group,))
    P = rep.size
    keep = np.isin(item, rep)
    pos = np.full(n, -1, np.int64)
    pos[rep] = np.arange(P)
    alpha_p = fit.details.get("prior_alpha")
    beta_p = fit.details.get("prior_beta")
    fixed_prev = det["prevalence"] if det.get("prevalence_source") == "given" else None
    # EM runs in the latent labelling of the original fit (where its priors apply); the
    # fit's classes are that labelling permuted by ``latent_perm``
    perm = np.asarray(fit.details.get("latent_perm", np.arange(2)))
    post0 = np.asarray(fit.item_posterior)[rep][:, np.argsort(perm)]
    with x64():
        data = make_data(pos[item[keep]], annotator[keep], code[item[keep], annotator[keep]],
                         n_items=P, n_annotators=J, n_classes=2, group=group[rep], n_groups=L)
        arrays, sizes = split_data(data)
        out = _replicates(
            as_key(seed), jnp.asarray(post0), jnp.asarray(perm, jnp.int32), arrays,
            None if alpha_p is None else jnp.asarray(alpha_p),
            None if beta_p is None else jnp.asarray(beta_p),
            jnp.asarray(pattern, jnp.int32), jnp.asarray(group, jnp.int32),
            jnp.asarray(onehot[rep]), jnp.asarray(seen[rep]), jnp.asarray(mask),
            jnp.asarray(np.asarray(det["weights"], np.float64)),
            jnp.asarray(np.nan if fixed_prev is None else float(fixed_prev)),
            jnp.asarray(conf, jnp.float64), jnp.asarray(bins, jnp.int32),
            sizes=sizes, one_coin=fit.model == "one_coin",
            max_iter=int(fit.details.get("max_iter", 1000)),
            tol=float(fit.details.get("tol", 1e-8)), rule=rule,
            fixed_prevalence=fixed_prev is not None, n_bins=int(n_bins), n_boot=int(n_boot),
            statistic=statistic)
        vals, ok, converged, a, b = (np.asarray(x) for x in out)
    vals = np.where(ok, vals, np.nan)
    n_nonfinite = int(np.sum(ok & ~np.isfinite(vals)))
    return vals, {"n_failed": int(np.sum(~ok)), "n_nonfinite": n_nonfinite,
                  "n_not_converged": int(np.sum(~converged)),
                  "a_sd": np.nanstd(a, axis=0), "b_sd": np.nanstd(b, axis=0),
                  "n_patterns": int(P)}


@partial(jax.jit, static_argnames=("sizes", "one_coin", "max_iter", "tol", "rule",
                                   "fixed_prevalence", "n_bins", "n_boot",
                                   "statistic"))
def _replicates(rng_key: jax.Array, post0: jax.Array, perm: jax.Array, arrays: tuple,
                alpha_p: Any,
                beta_p: Any, pattern: jax.Array, group: jax.Array, ratings: jax.Array,
                observed: jax.Array, mask: jax.Array, given: jax.Array, prevalence: jax.Array,
                conf: jax.Array, bins: jax.Array, *, sizes: tuple, one_coin: bool,
                max_iter: int, tol: float, rule: str, fixed_prevalence: bool, n_bins: int,
                n_boot: int, statistic: Callable[..., Any]) -> tuple:
    from ..engines.resample import resample_refit
    from ..models.dawid_skene import DSData

    data = DSData(*arrays, *sizes)
    L = sizes[3]

    def one(key: jax.Array) -> tuple:
        w, st = resample_refit(key, post0, data, None, alpha_p, beta_p, pattern,
                               one_coin=one_coin, max_iter=max_iter, tol=tol)
        confusion, group_prev = st.confusion[:, perm, :], st.prevalence[:, perm]
        a, b = confusion[:, 0, 1], confusion[:, 1, 1]
        if fixed_prevalence:
            mu = prevalence
        else:
            # groups the resample missed have weight 0 here
            wg = jax.ops.segment_sum(w, group, num_segments=L)
            mu = marginal_prevalence(group_prev[:, 1], wg, xp=jnp)
        alpha = given if rule == "given" else rule_weights(rule, a, b, mu, mask=mask,
                                                           xp=jnp)
        ok = jnp.all(jnp.where(mask, gap_invertible(a, b), True)) & jnp.isfinite(mu)
        # corrected label of each pattern (meaningless where not ok: the caller sets NaN)
        u = corrected_from_channels(ratings, observed, mask, alpha, confusion, xp=jnp)[:, 1]
        return statistic(w, u[pattern], conf, bins, n_bins), ok, st.converged, a, b

    return jax.lax.map(one, jax.random.split(rng_key, n_boot))
