"""ArviZ export of Bayesian annotator fits in full, and replicated ratings.

A NUTS fit of a Dawid–Skene family model becomes an ``arviz.InferenceData`` with the
groups ArviZ's model checks need:

- ``posterior``: ``prevalence`` (group, class) and ``confusion`` (annotator, true,
  observed), the same names as every other fitting method, plus a model's own variables
  (the hierarchical model's population: ``population_mu``, ``population_sigma``,
  ``population_confusion``; see :func:`extra_posterior`);
- ``sample_stats``: ``energy``, ``diverging``, ``tree_depth``, ``n_steps``,
  ``step_size``, ``acceptance_rate`` and ``lp`` of every draw (when the sampler kept
  them, see :func:`arviz_sample_stats`);
- ``log_likelihood``: ``label`` (item), each item's log-likelihood with its true class
  marginalised, ``log sum_k prevalence[g_i, k] prod_r confusion[j_r, k, y_r]`` over the
  item's ratings ``r`` (:func:`item_loglik_draws`), so ``az.loo`` and ``az.waic`` leave
  out one *item* (all its ratings) at a time;
- ``posterior_predictive``: ``label`` (rating), ratings replicated on the observed
  design, the same (item, annotator) pairs, with a fresh true class per item
  (:func:`replicate_ratings`);
- ``observed_data``: ``label`` (rating), the observed class indices; ``constant_data``
  holds each rating's ``rating_item`` and ``rating_annotator`` ids.

Labels in ``posterior_predictive`` and ``observed_data`` are class *indices* (positions
in ``fit.classes``) so that ``az.plot_ppc`` can draw them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

import jax

from ..._util.jax import as_key, x64
from ..._util.types import Seed

__all__ = ["arviz_sample_stats", "item_loglik_draws", "replicate_ratings",
           "annotator_inference_data", "em_inference_data", "soft_label_inference_data",
           "extra_posterior"]


def extra_posterior(fit: Any) -> dict[str, tuple[np.ndarray, tuple[str, ...]]]:
    """A fit's posterior variables beyond ``prevalence`` and ``confusion``.

    A model with more parameters than the channels and the prevalence (the population of
    the hierarchical model) puts a function ``fit -> {name: (draws, dims)}`` in
    ``fit.details['arviz']['posterior']``; its draws have shape (n_draws, ...) in the
    order of ``fit.draws``, and its dims name the trailing axes with the coordinates of
    :func:`annotator_inference_data` ('class', 'annotator', 'true', 'observed').

    Parameters
    ----------
    fit : AnnotatorFit

    Returns
    -------
    dict of str to (ndarray, tuple of str)
        Empty for a model without such variables.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> extra_posterior(SimpleNamespace(details={}))
    {}
    """
    hook = (fit.details.get("arviz") or {}).get("posterior")
    if hook is None:
        return {}
    return {k: (np.asarray(v, np.float64), tuple(d)) for k, (v, d) in hook(fit).items()}


def arviz_sample_stats(stats: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """NUTS transition statistics under ArviZ's ``sample_stats`` names.

    Parameters
    ----------
    stats : dict of str to ndarray, or None
        From :func:`noisycal.engines.density.nuts.sample_nuts` with ``sample_stats=True``:
        ``diverging``, ``energy``, ``potential_energy``, ``num_steps``, ``accept_prob``,
        ``step_size``, each of shape (num_chains, num_samples). A dict holding only
        ``diverging`` is allowed.

    Returns
    -------
    dict of str to ndarray
        ``diverging``, ``energy``, ``lp`` (minus the potential energy: the unnormalised
        log density on the unconstrained scale), ``n_steps``, ``tree_depth``
        (``ceil(log2(n_steps + 1))``, the depth of the trajectory's binary tree),
        ``acceptance_rate`` and ``step_size``, those that ``stats`` allows.
    """
    if not stats:
        return {}
    out = {"diverging": np.asarray(stats["diverging"], bool)}
    if "energy" in stats:
        out["energy"] = np.asarray(stats["energy"], np.float64)
    if "potential_energy" in stats:
        out["lp"] = -np.asarray(stats["potential_energy"], np.float64)
    if "num_steps" in stats:
        steps = np.asarray(stats["num_steps"], np.int64)
        out["n_steps"] = steps
        out["tree_depth"] = np.ceil(np.log2(steps + 1.0)).astype(np.int64)
    if "accept_prob" in stats:
        out["acceptance_rate"] = np.asarray(stats["accept_prob"], np.float64)
    if "step_size" in stats:
        out["step_size"] = np.asarray(stats["step_size"], np.float64)
    return out


def item_loglik_draws(prevalence: np.ndarray, confusion: np.ndarray, data: Any,
                      gold: np.ndarray | None = None, *, batch_size: int = 64) -> np.ndarray:
    """Each item's marginal log-likelihood under each of D parameter sets, in float64.

    The one likelihood of :mod:`noisycal.models.dawid_skene`
    (``item_log_likelihood(joint_log_likelihood(...))``, the per-item term of the EM
    objective), mapped over the draws in batches.

    Parameters
    ----------
    prevalence : array of shape (D, L, K)
    confusion : array of shape (D, J, K, K)
    data : DSData
        The ratings (:func:`noisycal.models.dawid_skene.make_data`).
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown): those items' log-likelihood is at their
        class, as in the fit.
    batch_size : int, default=64
        Draws evaluated together (memory: ``batch_size * n_items * K`` numbers).

    Returns
    -------
    ndarray of shape (D, n_items)
    """
    with x64():
        import jax.numpy as jnp

        known = None if gold is None else jnp.asarray(gold)
        arrays = (data.item, data.annotator, data.label, data.group, data.slots)
        sizes = (data.n_items, data.n_annotators, data.n_classes, data.n_groups)
        out = _loglik_draws(jnp.asarray(prevalence, jnp.float64),
                            jnp.asarray(confusion, jnp.float64), arrays, known, sizes=sizes,
                            batch_size=batch_size)
        return np.asarray(out)


# jitted whole: outside jit, lax.map runs the draws left over after the last full batch
# through vmap one operation at a time, each compiled on its own
@partial(jax.jit, static_argnames=("sizes", "batch_size"))
def _loglik_draws(prevalence: jax.Array, confusion: jax.Array, arrays: tuple,
                  known: jax.Array | None, *, sizes: tuple, batch_size: int) -> jax.Array:
    """:func:`item_loglik_draws` on ``DSData(*arrays[:4], *sizes, arrays[4])``."""
    from noisycal.models.dawid_skene import DSData, item_log_likelihood, joint_log_likelihood

    data = DSData(*arrays[:4], *sizes, arrays[4])

    def one(pc: tuple) -> jax.Array:
        params = {"prevalence": pc[0], "confusion": pc[1]}
        return item_log_likelihood(joint_log_likelihood(params, data), known)

    return jax.lax.map(one, (prevalence, confusion), batch_size=batch_size)


def replicate_ratings(rng_key: Any, prevalence: np.ndarray, confusion: np.ndarray,
                      item: np.ndarray, annotator: np.ndarray, *, n_items: int,
                      group: np.ndarray | None = None) -> np.ndarray:
    """Ratings replicated on an observed design, one set per parameter draw.

    For draw d, every item gets a fresh true class ``y_i ~ prevalence[d, g_i]`` and
    every observed (item, annotator) pair a fresh label
    ``~ confusion[d, annotator, y_item]``: the simulation branch of the NumPyro model
    :func:`noisycal.models.dawid_skene.dawid_skene` (``label=None``) with its
    parameters set to the draws (``numpyro.infer.Predictive``).

    Parameters
    ----------
    rng_key : jax key
    prevalence : array of shape (D, L, K)
    confusion : array of shape (D, J, K, K)
    item, annotator : int arrays of shape (n_ratings,)
        The design: which item and which annotator each rating belongs to.
    n_items : int
    group : int array of shape (n_items,), optional
        Each item's group (L > 1).

    Returns
    -------
    int ndarray of shape (D, n_ratings)
        Class indices.
    """
    import jax.numpy as jnp

    prevalence = np.asarray(prevalence, np.float64)
    confusion = np.asarray(confusion, np.float64)
    L, K = prevalence.shape[1:]
    g = np.zeros(n_items, np.int32) if group is None else np.asarray(group, np.int32)
    with x64():
        out = _replicate(rng_key, jnp.asarray(prevalence), jnp.asarray(confusion),
                         jnp.asarray(item, jnp.int32), jnp.asarray(annotator, jnp.int32),
                         jnp.asarray(g), n_items=int(n_items), n_annotators=confusion.shape[1],
                         n_classes=K, n_groups=L)
        return np.asarray(out)


@partial(jax.jit, static_argnames=("n_items", "n_annotators", "n_classes", "n_groups"))
def _replicate(rng_key: Any, prevalence: Any, confusion: Any, item: Any, annotator: Any,
               group: Any, *, n_items: int, n_annotators: int, n_classes: int,
               n_groups: int) -> Any:
    from numpyro.infer import Predictive

    from noisycal.models.dawid_skene import dawid_skene

    # full confusion rows whatever the fitted model (one-coin draws are full matrices
    # too): the prior is not used, every parameter is set to a draw
    pred = Predictive(dawid_skene, posterior_samples={"prevalence": prevalence,
                                                      "confusion": confusion},
                      return_sites=["label"])
    return pred(rng_key, item, annotator, None, n_items=n_items, n_annotators=n_annotators,
                n_classes=n_classes, group=group if n_groups > 1 else None,
                n_groups=n_groups)["label"]


def annotator_inference_data(fit: Any, *, seed: Seed = 0, predictive: bool = True) -> Any:
    """The ``arviz.InferenceData`` of a NUTS Dawid–Skene family fit, every group filled.

    Parameters
    ----------
    fit : AnnotatorFit
        A fit with ``method='nuts'`` and its ``annotations``.
    seed : int or jax key, default=0
        Randomness of the replicated ratings.
    predictive : bool, default=True
        Add ``posterior_predictive`` (one replicated label per draw and rating:
        ``n_draws * n_ratings`` integers; pass False on large data).

    Returns
    -------
    arviz.InferenceData
        The groups of the module docstring. A model whose ratings are not independent
        given the class and the channels (item difficulty) puts its own functions in
        ``fit.details['arviz']``: ``'log_likelihood'`` (fit -> (n_draws, n_items)) and
        ``'replicate'`` ((fit, key) -> (n_draws, n_ratings)) replace the Dawid–Skene ones.
        ``log_likelihood`` is left out (and
        ``attrs['log_likelihood']`` says why) for fits with gold labels, whose
        per-item likelihood needs the gold classes the fit does not keep.
    """
    from noisycal.models.dawid_skene import make_data

    from .diagnostics import import_arviz

    az = import_arviz()
    c = int(fit.details["chains"])
    prev = np.asarray(fit.draws["prevalence"], np.float64)
    conf = np.asarray(fit.draws["confusion"], np.float64)
    by_chain = {"prevalence": prev.reshape(c, -1, *prev.shape[1:]),
                "confusion": conf.reshape(c, -1, *conf.shape[1:])}
    S = by_chain["prevalence"].shape[1]
    dims = {"prevalence": ["group", "class"], "confusion": ["annotator", "true", "observed"]}
    for name, (values, vdims) in extra_posterior(fit).items():
        by_chain[name] = values.reshape(c, S, *values.shape[1:])
        dims[name] = list(vdims)
    groups: dict[str, Any] = {"posterior": by_chain}
    stats = arviz_sample_stats(fit.details.get("sample_stats"))
    if stats:
        groups["sample_stats"] = stats
    coords: dict[str, Any] = {
        "group": np.arange(prev.shape[1]), "class": fit.classes, "annotator": fit.annotators,
        "true": fit.classes, "observed": fit.classes}
    attrs: dict[str, Any] = {}
    ann = fit.annotations
    if ann is None:
        attrs["log_likelihood"] = "the fit keeps no annotations"
        return az.from_dict(**groups, dims=dims, coords=coords, attrs=attrs)
    hooks = fit.details.get("arviz") or {}
    arr = ann.engine_arrays()
    g = np.asarray(fit.details.get("group_index", np.zeros(arr.n_items)), np.int32)
    L = prev.shape[1]
    gold = fit.details.get("gold_index") if fit.details.get("gold") else None
    if fit.details.get("gold") and gold is None:
        attrs["log_likelihood"] = ("left out: the fit used gold labels, which it does not "
                                   "keep, and their items' likelihood needs them")
    elif "log_likelihood" in hooks:  # a model with its own pointwise likelihood
        groups["log_likelihood"] = {"label": hooks["log_likelihood"](fit).reshape(c, S, -1)}
    else:
        with x64():
            data = make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                             n_annotators=arr.n_annotators, n_classes=arr.n_classes,
                             group=g, n_groups=L)
        ll = item_loglik_draws(prev, conf, data, gold)
        groups["log_likelihood"] = {"label": ll.reshape(c, S, -1)}
    coords.update(item=fit.items, rating=np.arange(arr.item.size))
    groups["observed_data"] = {"label": arr.label.astype(np.int64)}
    groups["constant_data"] = {"rating_item": np.asarray(fit.items)[arr.item],
                               "rating_annotator": np.asarray(fit.annotators)[arr.annotator]}
    if predictive and "replicate" in hooks:
        groups["posterior_predictive"] = {"label": hooks["replicate"](fit, as_key(seed)).reshape(
            c, S, -1).astype(np.int64)}
    elif predictive:
        rep = replicate_ratings(as_key(seed), prev, conf, arr.item, arr.annotator,
                                n_items=arr.n_items, group=g)
        groups["posterior_predictive"] = {"label": rep.reshape(c, S, -1).astype(np.int64)}
    idata = az.from_dict(**{k: v for k, v in groups.items() if k != "log_likelihood"},
                         dims={**dims, "label": ["rating"], "rating_item": ["rating"],
                               "rating_annotator": ["rating"]},
                         coords=coords, attrs=attrs)
    if "log_likelihood" in groups:
        extra = az.from_dict(log_likelihood=groups["log_likelihood"],
                             dims={"label": ["item"]}, coords={"item": fit.items})
        idata.extend(extra)
    return idata


def soft_label_inference_data(result: Any, log_probs: np.ndarray | None,
                              counts: np.ndarray | None, *, seed: Seed = 0,
                              predictive: bool = True) -> Any:
    """The ``arviz.InferenceData`` of a NUTS fit of the Dirichlet soft-label model.

    Parameters
    ----------
    result : NUTSResult
        The engine's result (posterior draws and sample statistics).
    log_probs : ndarray of shape (n_items, n_classes) or None
        The classifier's log-probabilities the model was fitted on.
    counts : ndarray of shape (n_items, n_classes) or None
        The vote counts it was fitted on. Without data only ``posterior`` and
        ``sample_stats`` are filled.
    seed : int or jax key, default=0
        Randomness of the replicated counts.
    predictive : bool, default=True
        Add ``posterior_predictive``: ``counts`` replicated with each item's number of
        votes, one set per draw (the model's simulation branch).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` and ``sample_stats``; with data also ``log_likelihood``
        (``counts`` (item): each item's Dirichlet-multinomial log-likelihood,
        :func:`noisycal.models.soft_labels.log_likelihood`), ``observed_data`` and
        ``posterior_predictive`` (``counts`` (item, class)).
    """
    import jax.numpy as jnp
    from numpyro.infer import Predictive

    from noisycal.models.soft_labels import dirichlet_soft_labels, log_likelihood

    idata = result.to_arviz()
    if log_probs is None or counts is None:
        return idata
    az = _arviz()
    samples = result.samples
    C, S = samples["kappa"].shape[:2]
    n, K = log_probs.shape
    with x64():
        lp, c = jnp.asarray(log_probs, jnp.float64), jnp.asarray(counts, jnp.float64)
        flat = {k: jnp.asarray(np.reshape(v, (C * S, *np.shape(v)[2:])), jnp.float64)
                for k, v in samples.items()}
        ll = jax.lax.map(lambda w: log_likelihood(w[0], w[1], w[2], lp, c),
                         (flat["W"], flat["b"], flat["kappa"]), batch_size=64)
        groups: dict[str, Any] = {"observed_data": {"counts": np.asarray(counts, np.int64)}}
        if predictive:
            # every latent site is set to a draw, so the prior (scale) plays no part
            pred = Predictive(dirichlet_soft_labels, posterior_samples={
                k: flat[k] for k in ("W_dev", "b", "kappa")}, return_sites=["counts"])
            rep = pred(as_key(seed), lp, None, n_totals=c.sum(-1))
            groups["posterior_predictive"] = {
                "counts": np.asarray(rep["counts"]).reshape(C, S, n, K).astype(np.int64)}
    coords = {"item": np.arange(n), "class": np.arange(K)}
    idata.extend(az.from_dict(log_likelihood={"counts": np.asarray(ll).reshape(C, S, n)},
                              dims={"counts": ["item"]}, coords=coords))
    idata.extend(az.from_dict(**groups, dims={"counts": ["item", "class"]}, coords=coords))
    return idata


def em_inference_data(fit: Any) -> Any:
    """The ``arviz.InferenceData`` of a fit without posterior draws: the posterior group
    only, one chain of the bootstrap refits (or a single draw of the point estimate when
    there are none), with the parameter names of every other method."""
    az = _arviz()
    if fit.draws is not None:
        post = {k: np.asarray(v)[None] for k, v in fit.draws.items()}
    else:
        post = {"prevalence": fit.group_prevalence[None, None],
                "confusion": fit.confusion[None, None]}
    dims = {"prevalence": ["group", "class"], "confusion": ["annotator", "true", "observed"]}
    coords = {"group": np.arange(fit.group_prevalence.shape[0]), "class": fit.classes,
              "annotator": fit.annotators, "true": fit.classes, "observed": fit.classes}
    return az.from_dict(posterior=post, dims=dims, coords=coords)


def _arviz() -> Any:
    from .diagnostics import import_arviz

    return import_arviz()
