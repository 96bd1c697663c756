"""Classifier-informed Dawid–Skene: each item's class prior from a fixed classifier's scores.

The model of Raykar et al. (2010), "Learning From Crowds", with the classifier held
fixed: item i's true class has the prior ``softmax(scale * z_i + bias)``, where ``z_i``
are the classifier's log-probabilities (or logits), ``scale > 0`` a fitted
temperature-like factor and ``bias`` a fitted class bias (so a miscalibrated
classifier does not dominate the annotators); each rating is drawn from its annotator's
confusion row for that class, as in Dawid–Skene. The ratings' likelihood given the class
is :func:`models.dawid_skene.class_log_likelihood`, written once there; this module adds
the prior (:func:`class_log_prior`), and the EM engine
(:mod:`noisycal.engines.em.classifier_informed`) uses the same two functions.

Parameters (probability scale)
------------------------------
scale : scalar > 0
bias : (K,)
    Identified up to a constant: the fits report it centred (mean 0).
confusion : (n_annotators, K, K)
    ``confusion[j, true, observed]``; rows sum to 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .dawid_skene import DSData, class_log_likelihood, default_priors

__all__ = ["class_log_prior", "joint_log_likelihood", "log_likelihood",
           "classifier_informed", "MODELS"]


def class_log_prior(params: dict, scores: jax.Array) -> jax.Array:
    """Each item's log prior over the true class, ``log softmax(scale * z_i + bias)``.

    Parameters
    ----------
    params : dict
        ``scale`` (scalar > 0) and ``bias`` (K,).
    scores : array of shape (n_items, K)
        The classifier's log-probabilities (or logits) ``z``.

    Returns
    -------
    array of shape (n_items, K)
    """
    return jax.nn.log_softmax(params["scale"] * scores + params["bias"], axis=1)


def joint_log_likelihood(params: dict, data: DSData, scores: jax.Array) -> jax.Array:
    """``log prior_i(k) + sum of item i's ratings' log confusion``: (n_items, K).

    Parameters
    ----------
    params : dict
        ``scale``, ``bias`` and ``confusion`` (J, K, K).
    data : DSData
    scores : array of shape (n_items, K)
    """
    return class_log_likelihood(params, data) + class_log_prior(params, scores)


def log_likelihood(params: dict, data: DSData, scores: jax.Array) -> jax.Array:
    """Marginal log-likelihood of the ratings given the scores, the class marginalised.

    Parameters
    ----------
    params : dict
        ``scale``, ``bias`` and ``confusion``.
    data : DSData
    scores : array of shape (n_items, K)
    """
    return jnp.sum(jax.nn.logsumexp(joint_log_likelihood(params, data, scores), axis=1))


def classifier_informed(item: jax.Array, annotator: jax.Array, label: jax.Array | None = None,
                        *, scores: jax.Array, n_items: int, n_annotators: int,
                        n_classes: int, beta: jax.Array | None = None) -> None:
    """NumPyro model: class prior ``softmax(scale z_i + bias)``, Dawid–Skene channels.

    Raykar et al. (2010), "Learning From Crowds" (their multiclass model with the
    classifier fixed); the true class is marginalised with ``logsumexp``.

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
        Ratings sorted by item.
    label : int array of shape (n_ratings,), optional
        Observed classes; ``None`` simulates the true classes (site ``"y"``) and labels.
    scores : array of shape (n_items, K)
        The classifier's log-probabilities.
    n_items, n_annotators, n_classes : int
    beta : array of shape (K, K), optional
        Dirichlet prior of each confusion row (default: the Stan User's Guide prior of
        :func:`models.dawid_skene.default_priors`). ``log scale ~ Normal(0, 1)``,
        ``bias ~ Normal(0, 1)``.
    """
    import numpyro
    import numpyro.distributions as dist

    K, J = n_classes, n_annotators
    beta = jnp.asarray(default_priors(K)[1] if beta is None else beta)
    scale = numpyro.sample("scale", dist.LogNormal(0.0, 1.0))
    with numpyro.plate("class", K, dim=-1):
        bias = numpyro.sample("bias", dist.Normal(0.0, 1.0))
    with numpyro.plate("annotator", J, dim=-2), numpyro.plate("class", K, dim=-1):
        confusion = numpyro.sample("confusion", dist.Dirichlet(beta, validate_args=False))
    params = {"scale": scale, "bias": bias, "confusion": confusion}
    if label is None:
        with numpyro.plate("item", n_items, dim=-1):
            y = numpyro.sample("y", dist.Categorical(logits=class_log_prior(params, scores)))
        with numpyro.plate("rating", item.shape[0], dim=-1):
            numpyro.sample("label", dist.Categorical(confusion[annotator, y[item]]))
        return
    data = DSData(item, annotator, label, jnp.zeros(n_items, jnp.int32), n_items, J, K, 1)
    numpyro.factor("loglik", log_likelihood(params, data, scores))


MODELS = {"classifier_informed": classifier_informed}
