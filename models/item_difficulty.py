"""Item-difficulty annotator model: logistic ability-minus-difficulty, one coin per rating.

For item i with true class k, annotator j labels it correctly with probability

    p_ij = 1/K + (1 - 1/K) logistic(ability_j - difficulty_i)

and otherwise picks one of the other K - 1 classes uniformly, each with probability
``(1 - p_ij) / (K - 1)``. The floor 1/K (a guess) makes the hardest items random, not
adversarial: with a plain ``logistic(ability - difficulty)`` a very hard item's labels
would be systematically wrong, so every item's posterior would have a mirrored mode (its
class swapped, its difficulty large), which we measured to stall NUTS (split R-hat 1.25
on single difficulties, 200 items x 8 annotators). With the floor the true class is
always an annotator's most likely label, as in the guessing floor of the models with
difficulty and guessability of Carpenter and colleagues. Priors (non-centred):

    ability_j    = mu_ability + sigma_ability * ability_raw_j,     ability_raw_j ~ N(0, 1)
    difficulty_i = sigma_difficulty * difficulty_raw_i,            difficulty_raw_i ~ N(0, 1)
    mu_ability ~ N(ability_loc, ability_scale)
    sigma_ability, sigma_difficulty ~ HalfNormal(sigma_scale)
    prevalence ~ Dirichlet(alpha)                (alpha = 3 by default, as for Dawid–Skene)

With ``sigma_difficulty = 0`` this is the one-coin Dawid–Skene model with
``accuracy_j = 1/K + (1 - 1/K) logistic(ability_j)`` (accuracies above chance). Errors
are spread evenly over the other classes (not by a per-class error distribution) so that
difficulty is the only thing that moves an annotator's channel from item to item, and
the model stays identified with a few ratings per item; the price is
that systematic confusions between particular classes are not modelled (the full
Dawid–Skene model is the one for those). The default prior on ``mu_ability`` is centred at
1 (accuracy 0.87 for an average item and two classes).

The population-averaged channel of annotator j, the difficulty integrated out over its
prior, is one-coin with accuracy ``1/K + (1 - 1/K) E_d[logistic(ability_j - d)]``, ``d ~ N(0,
sigma_difficulty)`` (:func:`population_accuracy`, Gauss–Hermite quadrature).

The likelihood is written once, :func:`class_log_likelihood`, on the rating layout of
:mod:`noisycal.models.dawid_skene` (:class:`~noisycal.models.dawid_skene.DSData`,
ratings sorted by item); the latent class is marginalised by ``logsumexp``
(:func:`~noisycal.models.dawid_skene.item_log_likelihood`).

References
----------
Paun, S., Carpenter, B., Chamberlain, J., Hovy, D., Kruschwitz, U. and Poesio, M.
(2018). "Comparing Bayesian Models of Annotation". Transactions of the ACL 6, 571-585
(the item-difficulty and logistic random-effects models).
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

from .dawid_skene import LOG_FLOOR, DSData, item_log_likelihood, one_coin_confusion

__all__ = ["DEFAULT_PRIORS", "class_log_likelihood", "joint_log_likelihood",
           "log_likelihood", "log_correct", "population_accuracy", "population_confusion",
           "item_difficulty", "MODELS"]

#: Prior settings of :func:`item_difficulty` (see the module docstring).
DEFAULT_PRIORS = {"ability_loc": 1.0, "ability_scale": 1.0, "sigma_scale": 1.0}

#: Gauss–Hermite nodes of the population-averaged channel.
N_NODES = 40


def _rating_logits(params: dict, data: DSData) -> jax.Array:
    """``ability[annotator_r] - difficulty[item_r]`` of every rating, shape (n_ratings,)."""
    return params["ability"][data.annotator] - params["difficulty"][data.item]


def log_correct(eta: jax.Array, n_classes: int) -> tuple[jax.Array, jax.Array]:
    """``log p`` and ``log((1 - p) / (K - 1))`` for ``p = 1/K + (1 - 1/K) logistic(eta)``.

    Parameters
    ----------
    eta : array
        ``ability - difficulty``.
    n_classes : int
    """
    K = n_classes
    log_rest = jnp.log1p(-1.0 / K)
    log_right = jnp.logaddexp(-jnp.log(K), log_rest + jax.nn.log_sigmoid(eta))
    log_wrong = log_rest + jax.nn.log_sigmoid(-eta) - jnp.log(K - 1.0)
    return log_right, log_wrong


def class_log_likelihood(params: dict, data: DSData) -> jax.Array:
    """Log-likelihood of each item's ratings under each true class, shape (n_items, K).

    ``ll[i, k] = sum_{r: item_r = i} [label_r = k] log p_r
    + [label_r != k] log((1 - p_r) / (K - 1))`` with
    ``p_r = 1/K + (1 - 1/K) logistic(ability[annotator_r] - difficulty[i])``.

    Parameters
    ----------
    params : dict
        ``ability`` (J,) and ``difficulty`` (n_items,), on the logit scale.
    data : DSData
        The ratings (:func:`noisycal.models.dawid_skene.make_data`; the slot layout is
        not used).
    """
    K = data.n_classes
    eta = _rating_logits(params, data)
    log_right, log_wrong = log_correct(eta, K)
    hit = jax.nn.one_hot(data.label, K, dtype=eta.dtype)
    per_rating = log_wrong[:, None] + (log_right - log_wrong)[:, None] * hit
    return jax.ops.segment_sum(per_rating, data.item, num_segments=data.n_items,
                               indices_are_sorted=True)


def joint_log_likelihood(params: dict, data: DSData) -> jax.Array:
    """``log prevalence[k] + ll[i, k]``, shape (n_items, K).

    Parameters
    ----------
    params : dict
        ``prevalence`` (K,), ``ability`` (J,), ``difficulty`` (n_items,).
    data : DSData
    """
    log_prev = jnp.log(jnp.maximum(jnp.reshape(params["prevalence"], (-1,)), LOG_FLOOR))
    return class_log_likelihood(params, data) + log_prev


def log_likelihood(params: dict, data: DSData, gold: jax.Array | None = None) -> jax.Array:
    """Marginal log-likelihood ``sum_i log sum_k prevalence[k] exp(ll[i, k])``.

    Parameters
    ----------
    params : dict
        As in :func:`joint_log_likelihood`.
    data : DSData
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown): such an item contributes
        ``log prevalence[gold] + ll[i, gold]`` instead of the sum over classes
        (:func:`~noisycal.models.dawid_skene.item_log_likelihood`).
    """
    return jnp.sum(item_log_likelihood(joint_log_likelihood(params, data), gold))


def population_accuracy(ability: jax.Array, sigma_difficulty: jax.Array, n_classes: int, *,
                        n_nodes: int = N_NODES) -> jax.Array:
    """``1/K + (1 - 1/K) E_d[logistic(ability - d)]`` with ``d ~ N(0, sigma_difficulty)``.

    Gauss–Hermite quadrature (probabilists' nodes); broadcasts over leading axes.

    Parameters
    ----------
    ability : array of shape (..., J)
    sigma_difficulty : array of shape (...)
    n_classes : int
    n_nodes : int, default=40
    """
    z, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    z, w = jnp.asarray(z), jnp.asarray(w / w.sum())
    sd = jnp.asarray(sigma_difficulty)[..., None, None]
    mean = jnp.sum(jax.nn.sigmoid(jnp.asarray(ability)[..., None] - sd * z) * w, axis=-1)
    return 1.0 / n_classes + (1.0 - 1.0 / n_classes) * mean


def population_confusion(ability: jax.Array, sigma_difficulty: jax.Array,
                         n_classes: int) -> jax.Array:
    """Population-averaged channels (..., J, K, K): one-coin with
    :func:`population_accuracy` on the diagonal.

    Parameters
    ----------
    ability : array of shape (..., J)
    sigma_difficulty : array of shape (...)
    n_classes : int
    """
    acc = population_accuracy(ability, sigma_difficulty, n_classes)
    flat = acc.reshape(-1, acc.shape[-1])
    conf = jax.vmap(lambda a: one_coin_confusion(a, n_classes))(flat)
    return conf.reshape(*acc.shape, n_classes, n_classes)


def item_difficulty(item: jax.Array, annotator: jax.Array, label: jax.Array | None = None, *,
                    n_items: int, n_annotators: int, n_classes: int,
                    alpha: jax.Array | None = None, ability_loc: float = 1.0,
                    ability_scale: float = 1.0, sigma_scale: float = 1.0,
                    gold: jax.Array | None = None) -> None:
    """NumPyro item-difficulty model with the true class marginalised by logsumexp.

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
        Which item and which annotator each rating belongs to (sorted by item).
    label : int array of shape (n_ratings,), optional
        Observed class index of each rating; ``None`` simulates the labels (site
        ``"label"``) and the true classes (site ``"y"``) from the priors.
    n_items, n_annotators, n_classes : int
    alpha : array of shape (K,), optional
        Dirichlet prior on the prevalence (default 3 for every class).
    ability_loc, ability_scale : float, default=1.0, 1.0
        Normal prior on ``mu_ability``.
    sigma_scale : float, default=1.0
        Half-normal prior scale of ``sigma_ability`` and ``sigma_difficulty``.
    gold : int array of shape (n_items,), optional
        Known true classes (``-1`` where unknown): those items enter the likelihood with
        their class (observed labels only).

    Examples
    --------
    >>> import numpy as np
    >>> from numpyro.handlers import seed, trace
    >>> item = np.repeat(np.arange(4), 3); annotator = np.tile(np.arange(3), 4)
    >>> tr = trace(seed(item_difficulty, 0)).get_trace(item, annotator, n_items=4,
    ...                                                 n_annotators=3, n_classes=2)
    >>> tr["label"]["value"].shape, tr["difficulty"]["value"].shape
    ((12,), (4,))
    """
    import numpyro
    import numpyro.distributions as dist

    K, J = n_classes, n_annotators
    alpha = jnp.full(K, 3.0) if alpha is None else jnp.asarray(alpha)
    prevalence = numpyro.sample("prevalence", dist.Dirichlet(alpha, validate_args=False))
    mu = numpyro.sample("mu_ability", dist.Normal(ability_loc, ability_scale))
    sigma_a = numpyro.sample("sigma_ability", dist.HalfNormal(sigma_scale))
    sigma_d = numpyro.sample("sigma_difficulty", dist.HalfNormal(sigma_scale))
    with numpyro.plate("annotator", J, dim=-1):
        a_raw = numpyro.sample("ability_raw", dist.Normal(0.0, 1.0))
    with numpyro.plate("item", n_items, dim=-1):
        d_raw = numpyro.sample("difficulty_raw", dist.Normal(0.0, 1.0))
    ability = numpyro.deterministic("ability", mu + sigma_a * a_raw)
    difficulty = numpyro.deterministic("difficulty", sigma_d * d_raw)
    params = {"prevalence": prevalence, "ability": ability, "difficulty": difficulty}
    if label is None:
        if gold is not None:
            raise ValueError("gold applies to observed labels; simulation (label=None) "
                             "draws every true class")
        with numpyro.plate("item", n_items, dim=-1):
            y = numpyro.sample("y", dist.Categorical(prevalence))
        p = 1.0 / K + (1.0 - 1.0 / K) * jax.nn.sigmoid(ability[annotator] - difficulty[item])
        probs = one_coin_confusion(p, K)[jnp.arange(item.shape[0]), y[item]]
        with numpyro.plate("rating", item.shape[0], dim=-1):
            numpyro.sample("label", dist.Categorical(probs))
        return
    data = DSData(item, annotator, label, jnp.zeros(n_items, jnp.int32), n_items, J, K, 1)
    numpyro.factor("loglik", log_likelihood(params, data,
                                            None if gold is None else jnp.asarray(gold)))


MODELS = {"item_difficulty": item_difficulty}
