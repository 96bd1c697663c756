"""The Dawid–Skene NumPyro model under the generic engines: gradient MLE and NUTS.

:func:`fit_mle` runs :func:`noisycal.engines.density.mle.fit_map` on the model's log density (a
cross-check of EM). For NUTS, the sampler is :func:`noisycal.engines.density.nuts.sample_nuts`
on the NumPyro model :func:`noisycal.models.dawid_skene.dawid_skene` (latent class
marginalised by logsumexp). Every draw is then relabelled (:mod:`noisycal.engines.relabel`) before
R-hat and ESS are computed, so label switching between chains does not masquerade as
non-convergence.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.types import Seed
from ...exceptions import IdentifiabilityWarning
from ..em.dawid_skene import (
    BUCKET_MAX_ROWS,
    bucket,
    loglik_at,
    pad_rows,
    posteriors_at,
    vote_agreement,
)
from ..relabel import anchor_perm, hungarian_perm, relabel_draws
from .diagnostics import convergence_status

__all__ = ["ds_model_kwargs", "fit_mle", "nuts_init_params", "draw_perms", "NUTSDraws",
           "sample_dawid_skene", "padded_for_sampler", "chain_diagnostics", "chain_status"]


def ds_model_kwargs(data: Any, L: int, alpha: np.ndarray | None, beta: np.ndarray | None,
                    gold: np.ndarray | None, *, one_coin: bool | str,
                    weights: np.ndarray | None = None) -> dict:
    """Keyword arguments of the NumPyro model for packed ratings ``data``.

    Parameters
    ----------
    data : DSData
    L : int
        Number of groups (the group vector is passed only when L > 1).
    alpha, beta : ndarray, optional
        Dirichlet priors (the model's defaults when None); for 'class_conditional' and
        'mace', ``beta`` is the packed prior of :mod:`noisycal.engines.em.channels`.
    gold : int array of shape (n_items,), optional
        Known classes, ``-1`` where unknown.
    one_coin : bool or {'class_conditional', 'mace'}
        True: one-coin Dawid–Skene; a string: that model of :mod:`models.channels`.
    weights : array of shape (n_items,), optional
        Item multiplicities (rating-pattern counts when ``data`` holds one item per
        pattern).
    """
    kw = dict(n_items=data.n_items, n_annotators=data.n_annotators,
              n_classes=data.n_classes, group=data.group if L > 1 else None,
              n_groups=L, alpha=None if alpha is None else jnp.asarray(alpha),
              gold=None if gold is None else jnp.asarray(gold),
              weights=None if weights is None else np.asarray(weights, np.float64))
    beta = None if beta is None else jnp.asarray(beta)
    if one_coin == "class_conditional":  # the models of models.channels
        return {**kw, "accuracy_prior": beta}
    if one_coin == "mace":
        return {**kw, "spam_prior": None if beta is None else beta[:2],
                "strategy_prior": None if beta is None else beta[2:]}
    return {**kw, "beta": beta, "one_coin": one_coin}


def _numpyro_model(model_kwargs: dict) -> Any:
    """The NumPyro model that :func:`ds_model_kwargs` made ``model_kwargs`` for."""
    from noisycal.models.channels import class_conditional_dawid_skene, mace
    from noisycal.models.dawid_skene import dawid_skene

    if "accuracy_prior" in model_kwargs:
        return class_conditional_dawid_skene
    return mace if "spam_prior" in model_kwargs else dawid_skene


def fit_mle(data: Any, model_kwargs: dict, *, gold: np.ndarray | None, seed: Seed,
            prior: bool, max_iter: int, tol: float, hessian: bool = True,
            progress: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """Gradient MLE (or MAP with ``prior=True``) of a Dawid–Skene model.

    Parameters
    ----------
    data : DSData
    model_kwargs : dict
        From :func:`ds_model_kwargs`.
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown); their posteriors are clamped.
    seed : int or jax key
        Start of the optimiser.
    prior : bool
        Maximise the log posterior instead of the log-likelihood.
    max_iter : int
    tol : float
    hessian : bool, default=True
    progress : bool, default=False
        See :func:`noisycal.engines.density.mle.fit_map`.

    Returns
    -------
    prevalence (L, K), confusion (J, K, K), posteriors (n_items, K), MLEResult
        In the latent labelling of the optimum (not yet oriented).
    """
    from noisycal.models.dawid_skene import dawid_skene, one_coin_confusion

    from .mle import fit_map

    K, L = data.n_classes, data.n_groups
    with x64():
        res = fit_map(dawid_skene, model_args=(data.item, data.annotator, data.label),
                      model_kwargs=model_kwargs, seed=seed, prior=prior, max_iter=max_iter,
                      tol=tol, hessian=hessian, progress=progress)
        prev = np.asarray(res.params["prevalence"]).reshape(L, K)
        conf = (np.asarray(one_coin_confusion(jnp.asarray(res.params["accuracy"]), K))
                if model_kwargs["one_coin"] else np.asarray(res.params["confusion"]))
        post = np.asarray(posteriors_at(jnp.asarray(prev)[None], jnp.asarray(conf)[None],
                                        data, gold=None if gold is None else
                                        jnp.asarray(gold))[0])
    return prev, conf, post, res


def nuts_init_params(prevalence: np.ndarray, confusion: np.ndarray, *,
                     one_coin: bool | str) -> dict:
    """Chain starting values from a point estimate (the MAP-EM fit under the same priors).

    Starting all chains in the vote-aligned mode; a chain that still wanders into a
    mirrored mode is relabelled afterwards. Entries are floored at 1e-4 and
    renormalised, since NUTS starts in the interior of the simplex.

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    one_coin : bool or {'class_conditional', 'mace'}
        Start the ``accuracy`` site (the diagonal: its first entry, or all of it for
        'class_conditional'), or MACE's ``spam`` and ``strategy``, not ``confusion``.
    """
    from noisycal.models.channels import mace_parameters

    conf = np.clip(confusion, 1e-4, None)
    conf /= conf.sum(-1, keepdims=True)
    prev = np.clip(prevalence, 1e-4, None)
    prev /= prev.sum(-1, keepdims=True)
    init = {"prevalence": prev}
    if one_coin == "mace":
        spam, strategy = (np.asarray(a) for a in mace_parameters(np.asarray(confusion)))
        strategy = np.clip(strategy, 1e-4, None)
        init["spam"] = np.clip(spam, 1e-4, 1 - 1e-4)
        init["strategy"] = strategy / strategy.sum(-1, keepdims=True)
    elif one_coin:
        diag = np.diagonal(conf, axis1=1, axis2=2)
        init["accuracy"] = np.clip(diag if one_coin == "class_conditional" else diag[:, 0],
                                   1e-4, 1 - 1e-4)
    else:
        init["confusion"] = conf
    return init


def draw_perms(vote: np.ndarray, prevalence: np.ndarray, confusion: np.ndarray, data: Any,
               orientation: str, anchor: int, weights: np.ndarray | None = None
               ) -> np.ndarray:
    """One relabelling per draw (label-switching guard).

    Parameters
    ----------
    vote : int array of shape (n_items,)
        Majority vote, the reference labelling of ``orientation='vote'``.
    prevalence : (D, L, K)
    confusion : (D, J, K, K)
    data : DSData
    orientation : {'vote', 'anchor'}
        Hungarian on the agreement of each draw's posteriors with the vote, or the sign
        of annotator ``anchor``'s gap (two classes).
    anchor : int
    weights : array of shape (n_items,), optional
        Item multiplicities (rating-pattern counts).

    Returns
    -------
    perms : (D, K)
    """
    if orientation == "anchor":
        return anchor_perm(confusion, anchor)
    K = prevalence.shape[-1]
    vote1h = np.eye(K)[np.asarray(vote)]
    if weights is not None:
        vote1h = vote1h * np.asarray(weights, np.float64)[:, None]
    vote1h = jnp.asarray(vote1h)
    agree = vote_agreement(jnp.asarray(prevalence), jnp.asarray(confusion), data, vote1h)
    return hungarian_perm(np.asarray(agree))


class NUTSDraws(NamedTuple):
    """Relabelled NUTS draws of a Dawid–Skene model and their summaries.

    Attributes
    ----------
    prevalence : (C, S, L, K)
    confusion : (C, S, J, K, K)
        Draws by chain and sample, relabelled.
    diverging : (C, S) bool
    moved : (C, S) bool
        Draws relabelled away from the most common permutation.
    post : (n_items, K)
        Posteriors averaged over the draws (Rao-Blackwellised).
    loglik : float
        Log-likelihood at the posterior means.
    sample_stats : dict of str to ndarray, optional
        Every transition's statistics, (C, S) each
        (:func:`noisycal.engines.density.nuts.sample_nuts`), for the fit's ``to_arviz``.
    perms : (C, S, K) int, optional
        The relabelling of every draw (``confusion[..., perm, :]``), for models whose
        other sites carry the latent class too.
    sites : dict of str to ndarray, optional
        The draws (C, S, ...) of the model's other sites, as sampled (not relabelled).
    """

    prevalence: np.ndarray
    confusion: np.ndarray
    diverging: np.ndarray
    moved: np.ndarray
    post: np.ndarray
    loglik: float
    sample_stats: dict | None = None
    perms: np.ndarray | None = None
    sites: dict | None = None


def padded_for_sampler(data: Any, model_kwargs: dict) -> tuple[tuple, dict]:
    """The sampler's copy of weighted ``data``: ``(model_args, model_kwargs)`` padded to
    bucketed sizes, so that data sets of similar size share one compiled sampler.

    Items (rating patterns) are padded to ``bucket(n_items + 1)`` with weight 0, no gold
    class and group 0, and the ratings to ``bucket(n_ratings)`` with ratings (annotator 0,
    class 0) on the last, padded item: a weight-0 item adds exactly 0 to the log density,
    whatever its ratings, so the posterior is the unpadded one (the sums run over more
    zeros, so draws agree with an unpadded sampler to rounding, not bit for bit).
    Unweighted data (every item its own row) and more than ``BUCKET_MAX_ROWS`` items are
    returned as they are.

    Parameters
    ----------
    data : DSData
        One item per rating pattern.
    model_kwargs : dict
        From :func:`ds_model_kwargs` (or the hierarchical model's), with ``weights``.
    """
    args = (data.item, data.annotator, data.label)
    w = model_kwargs.get("weights")
    n = int(model_kwargs["n_items"])
    if w is None or n > BUCKET_MAX_ROWS:
        return args, model_kwargs
    nb, Rb = bucket(n + 1), bucket(int(np.shape(data.item)[0]))
    kw = dict(model_kwargs, n_items=nb, weights=np.asarray(pad_rows(w, nb, 0.0)))
    if kw.get("gold") is not None:
        kw["gold"] = pad_rows(kw["gold"], nb, -1)
    if kw.get("group") is not None:
        kw["group"] = pad_rows(kw["group"], nb, 0)
    return (pad_rows(data.item, Rb, nb - 1), pad_rows(data.annotator, Rb, 0),
            pad_rows(data.label, Rb, 0)), kw


def sample_dawid_skene(data: Any, vote: np.ndarray, model_kwargs: dict, init_params: dict, *,
                       gold: np.ndarray | None, num_chains: int, num_warmup: int,
                       num_samples: int, seed: Seed, progress_bar: bool, chain_method: str,
                       target_accept_prob: float, max_tree_depth: int, dense_mass: bool,
                       orientation: str, anchor: int, weights: np.ndarray | None = None,
                       pattern: np.ndarray | None = None, model: Any = None) -> NUTSDraws:
    """Sample a Dawid–Skene model with NUTS and relabel every draw.

    Parameters
    ----------
    data : DSData
        The ratings, or one item per distinct rating pattern (then ``weights`` and
        ``pattern`` are given, and the log density, the relabelling and the
        log-likelihood are those of the full data).
    vote : int array of shape (n_items,)
        Majority vote (reference labelling), one per item of ``data``.
    model_kwargs : dict
        From :func:`ds_model_kwargs`.
    init_params : dict
        Starting values of the chains (constrained space).
    gold : int array of shape (n_items,), optional
    num_chains, num_warmup, num_samples, progress_bar, chain_method
    target_accept_prob, max_tree_depth, dense_mass
        Validated NUTS settings (:meth:`noisycal.engines.methods.NUTS.sampler`).
    seed : int or jax key
    orientation, anchor
        See :func:`draw_perms`.
    weights : array of shape (n_items,), optional
        Multiplicity of each item of ``data`` (pattern counts); ``model_kwargs`` must
        carry the same weights.
    pattern : int array of shape (n_original_items,), optional
        Item of ``data`` (pattern) of every original item: the posteriors are returned
        for the original items.
    model : callable, optional
        Another NumPyro model of the Dawid–Skene family (default
        :func:`~noisycal.models.dawid_skene.dawid_skene`) with the same data arguments
        and ``prevalence`` and ``confusion`` sites (sampled or deterministic).

    Returns
    -------
    NUTSDraws
    """
    from .nuts import sample_nuts

    mk_w = model_kwargs.get("weights")
    if (weights is None) != (mk_w is None) or (
            weights is not None and not np.array_equal(np.asarray(weights),
                                                       np.asarray(mk_w))):
        raise ValueError("weights must be the item weights of model_kwargs (the sampler's "
                         "density and the relabelling must weight the items alike)")
    C, S = num_chains, num_samples
    L, J, K = data.n_groups, data.n_annotators, data.n_classes
    jgold = None if gold is None else jnp.asarray(gold)
    with x64():
        model_args, sampler_kwargs = padded_for_sampler(data, model_kwargs)
        samples, stats = sample_nuts(
            _numpyro_model(model_kwargs) if model is None else model,
            model_args=model_args,
            model_kwargs=sampler_kwargs, init_params=init_params, num_chains=C,
            num_warmup=num_warmup, num_samples=S, rng_key=as_key(seed),
            progress_bar=progress_bar, chain_method=chain_method,
            target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth,
            dense_mass=dense_mass, sample_stats=True)
        diverging = stats["diverging"]
        prev_s = np.array(samples["prevalence"]).reshape(C, S, L, K)
        conf_s = np.array(samples["confusion"]).reshape(C, S, J, K, K)
        perms = draw_perms(vote, prev_s.reshape(-1, L, K), conf_s.reshape(-1, J, K, K), data,
                           orientation, anchor, weights)
        prev_s, conf_s, moved = relabel_draws(prev_s, conf_s, perms)
        prev_d, conf_d = prev_s.reshape(-1, L, K), conf_s.reshape(-1, J, K, K)
        post = np.asarray(posteriors_at(jnp.asarray(prev_d), jnp.asarray(conf_d), data,
                                        mean=True, gold=jgold))
        loglik = float(loglik_at(jnp.asarray(prev_d.mean(0))[None],
                                 jnp.asarray(conf_d.mean(0))[None], data, gold=jgold,
                                 weights=None if weights is None
                                 else jnp.asarray(weights, jnp.float64))[0])
    if pattern is not None:
        post = post[np.asarray(pattern)]
    sites = {k: v for k, v in samples.items() if k not in ("prevalence", "confusion")}
    return NUTSDraws(prev_s, conf_s, np.asarray(diverging), moved, post, loglik, stats,
                     np.asarray(perms).reshape(C, S, K), sites)


def chain_diagnostics(draws: NUTSDraws, orientation: str, *, stacklevel: int = 2) -> dict:
    """R-hat, bulk ESS and divergences of relabelled chains.

    Warns (:class:`~noisycal.IdentifiabilityWarning`) when a chain was relabelled.

    Parameters
    ----------
    draws : NUTSDraws
    orientation : {'vote', 'anchor'}
        Named in the relabelling message.
    stacklevel : int, default=2
        Of the relabelling warning.

    Returns
    -------
    dict
        ``max_rhat``, ``min_ess_bulk``, ``num_divergences``, ``switched`` (relabelled
        chains), ``chains``, ``draws`` (per chain) and ``relabel_message``.
    """
    from .diagnostics import import_arviz

    az = import_arviz()
    idata = az.from_dict(posterior={"prevalence": draws.prevalence,
                                    "confusion": draws.confusion})
    rhat, ess = az.rhat(idata), az.ess(idata)
    names = ("prevalence", "confusion")
    moved = draws.moved
    switched = [c for c in range(moved.shape[0]) if moved[c].any()]
    message = ""
    if switched:
        message = (f"chain(s) {switched} visited a different class order; "
                   f"{int(moved.sum())} draw(s) were relabelled to the "
                   f"{'anchor' if orientation == 'anchor' else 'majority-vote'} orientation")
        warnings.warn(message, IdentifiabilityWarning, stacklevel=stacklevel + 1)
    return {"max_rhat": _finite_extreme(rhat, names, np.max),
            "min_ess_bulk": _finite_extreme(ess, names, np.min),
            "num_divergences": int(draws.diverging.sum()), "switched": switched,
            "chains": moved.shape[0], "draws": moved.shape[1],
            "relabel_message": message}


def _finite_extreme(ds: Any, names: tuple, reduce: Any) -> float:
    """Max or min over the finite entries of some ArviZ variables (NaN when none is
    finite: R-hat of a single chain)."""
    vals = np.concatenate([np.ravel(ds[v].values) for v in names])
    vals = vals[np.isfinite(vals)]
    return float(reduce(vals)) if vals.size else float("nan")


def chain_status(diag: dict, rhat_threshold: float) -> tuple[str, str]:
    """Status of relabelled chains by the one NUTS rule
    (:func:`noisycal.engines.density.diagnostics.convergence_status`): 'not_converged' when the
    largest R-hat is above ``rhat_threshold`` (several chains) or any transition diverged,
    'diagnostics_unavailable' when R-hat could not be computed (one chain, or fewer than 4
    draws per chain).

    Parameters
    ----------
    diag : dict
        From :func:`chain_diagnostics`.
    rhat_threshold : float

    Returns
    -------
    (status, message)
        The message also names relabelled chains (status stays 'ok' for those).
    """
    max_rhat = diag["max_rhat"] if diag["chains"] > 1 else float("nan")
    status, message = convergence_status(max_rhat, diag["num_divergences"], rhat_threshold,
                                         num_chains=diag["chains"], num_samples=diag["draws"])
    parts = [diag["relabel_message"]] if diag["relabel_message"] else []
    return status, "; ".join(parts + ([message] if message else []))
