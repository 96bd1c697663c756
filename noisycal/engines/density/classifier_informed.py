"""NUTS for the classifier-informed Dawid–Skene model (class prior from a fixed classifier).

The sampler is :func:`noisycal.engines.density.nuts.sample_nuts` (the core every NUTS fit
of noisycal uses) on the NumPyro model
:func:`noisycal.models.classifier_informed.classifier_informed` of Raykar et al. (2010),
"Learning From Crowds", with the classifier held fixed. The draws' summaries follow the
Dawid–Skene NUTS fit (:mod:`noisycal.engines.density.dawid_skene`): item posteriors
averaged over the draws (Rao-Blackwellised), the log-likelihood at the posterior means,
and R-hat and bulk ESS of every parameter for the one NUTS rule
(:func:`~noisycal.engines.density.dawid_skene.chain_status`).

No draw is relabelled: the prior ``softmax(scale z_i + bias)`` ties latent class k to
the classifier's column k, so permuting the latent classes changes the density (there
is no label switching to undo, and relabelling a draw would move it off the
posterior). A fit in a mirrored mode shows in its channels instead
(``'adversarial_channel'``, :mod:`noisycal.engines.checks`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.types import Seed

__all__ = ["CIDraws", "sample_classifier_informed", "ci_chain_diagnostics", "item_loglik",
           "replicate_ratings", "prior_posterior"]


class CIDraws(NamedTuple):
    """NUTS draws of the classifier-informed model and their summaries.

    Attributes
    ----------
    confusion : (C, S, J, K, K)
    scale : (C, S)
    bias : (C, S, K)
        Centred (mean 0 in every draw), as the EM fit reports it.
    diverging : (C, S) bool
    post : (n_items, K)
        Item posteriors averaged over the draws (Rao-Blackwellised).
    item_prior : (n_items, K)
        Each item's prior ``softmax(scale z_i + bias)`` averaged over the draws.
    prevalence : (C, S, K)
        Each draw's prevalence-equivalent, the mean of its item priors.
    loglik : float
        Marginal log-likelihood at the posterior means of the parameters.
    sample_stats : dict of str to ndarray
        Every transition's statistics, (C, S) each.
    """

    confusion: np.ndarray
    scale: np.ndarray
    bias: np.ndarray
    diverging: np.ndarray
    post: np.ndarray
    item_prior: np.ndarray
    prevalence: np.ndarray
    loglik: float
    sample_stats: dict


@jax.jit
def _draw_means(scale: jax.Array, bias: jax.Array, confusion: jax.Array, arrays: tuple,
                scores: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Item posteriors and item priors averaged over D draws (one draw at a time), and
    each draw's mean item prior (D, K)."""
    from noisycal.models.classifier_informed import class_log_prior
    from noisycal.models.dawid_skene import DSData, class_log_likelihood

    item, annotator, label, group = arrays
    n, K = scores.shape
    data = DSData(item, annotator, label, group, n, confusion.shape[1], K, 1)

    def add(carry: tuple, draw: tuple) -> tuple:
        s, b, c = draw
        lp = class_log_prior({"scale": s, "bias": b}, scores)
        joint = class_log_likelihood({"confusion": c}, data) + lp
        post = jnp.exp(joint - jax.nn.logsumexp(joint, axis=1, keepdims=True))
        prior = jnp.exp(lp)
        return (carry[0] + post, carry[1] + prior), jnp.mean(prior, axis=0)

    zero = jnp.zeros((n, K), scores.dtype)
    (post, prior), prev = jax.lax.scan(add, (zero, zero), (scale, bias, confusion))
    D = scale.shape[0]
    return post / D, prior / D, prev


def sample_classifier_informed(data: Any, scores: np.ndarray, beta: np.ndarray,
                               init_params: dict, *, num_chains: int, num_warmup: int,
                               num_samples: int, seed: Seed, progress_bar: bool,
                               chain_method: str, target_accept_prob: float,
                               max_tree_depth: int, dense_mass: bool) -> CIDraws:
    """Sample the classifier-informed model with NUTS and summarise the draws.

    Parameters
    ----------
    data : DSData
        The ratings (one row per item: the scores differ from item to item, so items
        with the same ratings are not pooled).
    scores : ndarray of shape (n_items, K)
        The classifier's log-probabilities.
    beta : ndarray of shape (K, K)
        Dirichlet prior of every confusion row.
    init_params : dict
        Starting values of the chains (constrained space): ``scale``, ``bias``,
        ``confusion``.
    num_chains, num_warmup, num_samples, progress_bar, chain_method
    target_accept_prob, max_tree_depth, dense_mass
        Validated NUTS settings (:meth:`noisycal.engines.methods.NUTS.sampler`).
    seed : int or jax key

    Returns
    -------
    CIDraws
    """
    from noisycal.models.classifier_informed import classifier_informed, log_likelihood

    from .nuts import sample_nuts

    C, S = num_chains, num_samples
    J, K = data.n_annotators, data.n_classes
    with x64():
        kwargs = dict(scores=jnp.asarray(scores, jnp.float64), n_items=data.n_items,
                      n_annotators=J, n_classes=K, beta=jnp.asarray(beta, jnp.float64))
        samples, stats = sample_nuts(
            classifier_informed, model_args=(data.item, data.annotator, data.label),
            model_kwargs=kwargs, init_params=init_params, num_chains=C,
            num_warmup=num_warmup, num_samples=S, rng_key=as_key(seed),
            progress_bar=progress_bar, chain_method=chain_method,
            target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth,
            dense_mass=dense_mass, sample_stats=True)
        conf = np.array(samples["confusion"], np.float64).reshape(C, S, J, K, K)
        scale = np.array(samples["scale"], np.float64).reshape(C, S)
        bias = np.array(samples["bias"], np.float64).reshape(C, S, K)
        bias = bias - bias.mean(-1, keepdims=True)
        arrays = (jnp.asarray(data.item), jnp.asarray(data.annotator),
                  jnp.asarray(data.label), jnp.asarray(data.group))
        post, prior, prev = _draw_means(
            jnp.asarray(scale.ravel()), jnp.asarray(bias.reshape(-1, K)),
            jnp.asarray(conf.reshape(-1, J, K, K)), arrays, kwargs["scores"])
        mean = {"scale": scale.mean(), "bias": bias.reshape(-1, K).mean(0),
                "confusion": conf.reshape(-1, J, K, K).mean(0)}
        loglik = float(log_likelihood({k: jnp.asarray(v) for k, v in mean.items()}, data,
                                      kwargs["scores"]))
        post, prior = np.asarray(post), np.asarray(prior)
        prev = np.asarray(prev).reshape(C, S, K)
    return CIDraws(conf, scale, bias, np.asarray(stats["diverging"], bool), post, prior,
                   prev, loglik, stats)


def ci_chain_diagnostics(draws: CIDraws) -> dict:
    """R-hat, bulk ESS and divergences of the channels, scale and (centred) bias draws.

    Parameters
    ----------
    draws : CIDraws

    Returns
    -------
    dict
        ``max_rhat``, ``min_ess_bulk``, ``num_divergences``, ``switched`` (always empty:
        no draw is relabelled), ``chains``, ``draws`` (per chain) and
        ``relabel_message`` (empty), the keys
        :func:`~noisycal.engines.density.dawid_skene.chain_status` reads.
    """
    from .dawid_skene import _finite_extreme
    from .diagnostics import import_arviz

    az = import_arviz()
    names = ("confusion", "scale", "bias")
    idata = az.from_dict(posterior={n: getattr(draws, n) for n in names})
    C, S = draws.scale.shape
    return {"max_rhat": _finite_extreme(az.rhat(idata), names, np.max),
            "min_ess_bulk": _finite_extreme(az.ess(idata), names, np.min),
            "num_divergences": int(draws.diverging.sum()), "switched": [],
            "chains": C, "draws": S, "relabel_message": ""}


def _fit_inputs(fit: Any) -> tuple[Any, jax.Array, dict]:
    """The fitted ratings, the scores (log of the fit's ``score_probs``) and the draws."""
    from noisycal.models.dawid_skene import make_data

    arr = fit.annotations.engine_arrays()
    data = make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                     n_annotators=arr.n_annotators, n_classes=arr.n_classes, slots=False)
    draws = {k: jnp.asarray(fit.draws[k], jnp.float64) for k in ("scale", "bias", "confusion")}
    return data, jnp.log(jnp.asarray(fit.score_probs, jnp.float64)), draws


def item_loglik(fit: Any) -> np.ndarray:
    """Each item's log-likelihood (its ratings, the class marginalised under its prior)
    under each posterior draw, shape (n_draws, n_items): the pointwise log-likelihood of
    ``az.loo`` (``fit.details['arviz']['log_likelihood']``).

    Parameters
    ----------
    fit : ClassifierInformedFit
        A NUTS fit with its annotations.
    """
    from noisycal.models.classifier_informed import joint_log_likelihood

    with x64():
        data, scores, draws = _fit_inputs(fit)

        def one(d: tuple) -> jax.Array:
            s, b, c = d
            joint = joint_log_likelihood({"scale": s, "bias": b, "confusion": c}, data, scores)
            return jax.nn.logsumexp(joint, axis=1)

        out = jax.jit(lambda t: jax.lax.map(one, t))((draws["scale"], draws["bias"],
                                                     draws["confusion"]))
        return np.asarray(out)


def replicate_ratings(fit: Any, rng_key: Any) -> np.ndarray:
    """Ratings replicated on the observed design, one set per draw, shape
    (n_draws, n_ratings): each item a fresh true class from its prior at the draw, each
    rating from the drawn channel (the model's simulation branch, ``label=None``).

    Parameters
    ----------
    fit : ClassifierInformedFit
    rng_key : jax key
    """
    from numpyro.infer import Predictive

    from noisycal.models.classifier_informed import classifier_informed

    arr = fit.annotations.engine_arrays()
    with x64():
        _, scores, draws = _fit_inputs(fit)
        pred = Predictive(classifier_informed, posterior_samples=draws,
                          return_sites=["label"])
        rep = pred(rng_key, jnp.asarray(arr.item), jnp.asarray(arr.annotator), None,
                   scores=scores, n_items=arr.n_items, n_annotators=arr.n_annotators,
                   n_classes=arr.n_classes)["label"]
    return np.asarray(rep)


def prior_posterior(fit: Any) -> dict:
    """The ``scale`` and ``bias`` draws for the fit's ``to_arviz`` posterior group
    (``fit.details['arviz']['posterior']``).

    Parameters
    ----------
    fit : ClassifierInformedFit
    """
    return {"scale": (np.asarray(fit.draws["scale"]), ()),
            "bias": (np.asarray(fit.draws["bias"]), ("class",))}
