"""Dawid–Skene annotator models: full confusion, one-coin, and score-group prevalences.

One likelihood, written once: :func:`class_log_likelihood` gives, for every item i and
true class k, ``sum over item i's ratings r of log confusion[annotator_r, k, label_r]``.
The NumPyro model marginalises the latent class with ``logsumexp`` (no enumeration,
no funsor) and the EM engine (:mod:`noisycal.engines.em.dawid_skene`) uses the same function in
its E-step, so both optimise the same objective.

Parameters (probability scale)
------------------------------
prevalence : (n_groups, K)
    Class proportions of each group of items (one group: the marginal model).
confusion : (n_annotators, K, K)
    ``confusion[j, true, observed]``; rows sum to 1.
accuracy : (n_annotators,)
    One-coin model only: ``confusion[j] = accuracy_j`` on the diagonal and
    ``(1 - accuracy_j) / (K - 1)`` elsewhere.

References
----------
Dawid, A. P. and Skene, A. M. (1979). Maximum likelihood estimation of observer
error-rates using the EM algorithm. Applied Statistics 28(1), 20-28 (Eq. 2.4).
"Noisy-Label Calibration with Multiple Unreliable Labels": the annotator-channel
likelihood and its version with a prevalence per score group. Priors: Stan User's Guide,
"Data coding and diagnostic accuracy models" (alpha = 3, beta_kk = 2.5 K, beta_kk' = 1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

__all__ = [
    "DSData",
    "Slots",
    "make_data",
    "make_slots",
    "class_log_likelihood",
    "joint_log_likelihood",
    "item_log_likelihood",
    "log_likelihood",
    "one_coin_confusion",
    "default_priors",
    "rate_given_channel",
    "dawid_skene",
    "MODELS",
]

#: Probabilities are floored at this value inside logarithms (log 0 would be -inf).
LOG_FLOOR = 1e-300


class Slots(NamedTuple):
    """Ratings laid out item by item in a fixed number of slots (a faster layout).

    Each item's first ``S`` ratings fill row ``i`` of ``code`` (``annotator * K + label``,
    padded with the code ``J * K``, which stands for "no rating"); the ratings of items
    with more than ``S`` ratings go to the overflow arrays. The likelihood is then ``S``
    dense row gathers of a (J K + 1, K) log-confusion table plus a segment sum over the
    overflow, and the M-step ``S`` scatter-adds of the posteriors themselves, instead of
    gathers and scatters over one (n_ratings, K) intermediate.

    Attributes
    ----------
    code : int32 array of shape (n_items, S)
    over_item, over_code : int32 arrays of shape (n_overflow,)
        Ratings beyond the slots, sorted by item (usually empty).
    """

    code: jax.Array
    over_item: jax.Array
    over_code: jax.Array


class DSData(NamedTuple):
    """Ratings in the form the likelihood needs (int arrays plus static sizes; NumPy
    arrays from :func:`make_data`, which JAX takes as they are).

    Attributes
    ----------
    item, annotator, label : int32 arrays of shape (n_ratings,)
    group : int32 array of shape (n_items,)
        Group of each item (all zeros for the marginal model).
    n_items, n_annotators, n_classes, n_groups : int
    slots : Slots, optional
        The same ratings in the slot layout (:func:`make_slots`); when given, the
        likelihood and the EM M-step use it (same numbers, summed in another order).
    """

    item: jax.Array
    annotator: jax.Array
    label: jax.Array
    group: jax.Array
    n_items: int
    n_annotators: int
    n_classes: int
    n_groups: int
    slots: Slots | None = None


#: A slot is kept while at least this share of the items fills it (see :func:`make_slots`).
SLOT_MIN_FILL = 0.25


def make_slots(item: np.ndarray, code: np.ndarray, n_items: int, pad: int, *,
               min_fill: float = SLOT_MIN_FILL) -> Slots:
    """Slot layout of ratings sorted by item (see :class:`Slots`).

    Slot ``s`` (0-based) is kept while at least ``min_fill * n_items`` items have more
    than ``s`` ratings: a slot costs one dense pass over all items, an overflow rating a
    gather and a scatter of its own, about four times as much per rating. With every item
    rated the same number of times there is no overflow and no padding.

    Parameters
    ----------
    item : int array of shape (n_ratings,)
        Sorted (non-decreasing).
    code : int array of shape (n_ratings,)
        ``annotator * K + label`` of each rating.
    n_items : int
    pad : int
        Code of an empty slot (``J * K``).
    min_fill : float, default=0.25
        In (0, 1]: the share of items that must fill a slot for it to be kept.
    """
    if not 0.0 < min_fill <= 1.0:
        raise ValueError(f"min_fill must be in (0, 1], got {min_fill!r}")
    item = np.asarray(item, np.int64)
    per_item = np.bincount(item, minlength=n_items)
    filled = np.bincount(per_item, minlength=1)[::-1].cumsum()[::-1]  # items with >= s
    S = int(np.sum(filled[1:] >= min_fill * n_items))
    code = np.asarray(code)
    empty = np.zeros(0, np.int32)
    if n_items and per_item.min() == per_item.max() == S:  # every item fills every slot
        return Slots(code.astype(np.int32).reshape(n_items, S), empty, empty)
    first = np.concatenate([[0], np.cumsum(per_item)[:-1]])
    pos = np.arange(item.size) - first[item]
    in_slot = pos < S
    codes = np.full(n_items * S, pad, np.int32)
    codes[(item * S + pos)[in_slot]] = code[in_slot]
    if in_slot.all():
        return Slots(codes.reshape(n_items, S), empty, empty)
    return Slots(codes.reshape(n_items, S), item[~in_slot].astype(np.int32),
                 code[~in_slot].astype(np.int32))


def make_data(item: np.ndarray, annotator: np.ndarray, label: np.ndarray, *, n_items: int,
              n_annotators: int, n_classes: int, group: np.ndarray | None = None,
              n_groups: int = 1, slots: bool = True) -> DSData:
    """Pack index arrays (ratings sorted by item for fast segment sums).

    Parameters
    ----------
    item, annotator, label : int arrays of shape (n_ratings,)
    n_items, n_annotators, n_classes : int
    group : int array of shape (n_items,), optional
        Group of each item (zeros when not given).
    n_groups : int, default=1
    slots : bool, default=True
        Also build the slot layout (:func:`make_slots`, 4 bytes per item and slot), which
        the EM engine uses for speed; ``False`` keeps only the rating arrays.
    """
    item = np.asarray(item, dtype=np.int32)
    order = None if item.size == 0 or np.all(item[1:] >= item[:-1]) else np.argsort(
        item, kind="stable")
    ann = np.asarray(annotator, np.int32)
    lab = np.asarray(label, np.int32)
    if order is not None:
        item, ann, lab = item[order], ann[order], lab[order]
    g = np.zeros(n_items, dtype=np.int32) if group is None else np.asarray(group, np.int32)
    sl = None
    if slots:
        sl = make_slots(item, ann.astype(np.int64) * n_classes + lab, n_items,
                        n_annotators * n_classes)
    # NumPy arrays: JAX takes them as they are (a jitted call transfers them), and a
    # NumPy EM never stages them (each new shape would cost a small compiled program)
    return DSData(item, ann, lab, g,
                  int(n_items), int(n_annotators), int(n_classes), int(n_groups), sl)


def one_coin_confusion(accuracy: jax.Array, n_classes: int) -> jax.Array:
    """Confusion matrices (J, K, K) of one-coin annotators with the given accuracies.

    Parameters
    ----------
    accuracy : (J,)
        Probability of the true class; the rest is spread evenly over the others.
    n_classes : int
    """
    K = n_classes
    off = (1.0 - accuracy) / (K - 1)
    eye = jnp.eye(K)
    return accuracy[:, None, None] * eye + off[:, None, None] * (1.0 - eye)


def class_log_likelihood(params: dict, data: DSData) -> jax.Array:
    """Log-likelihood of each item's ratings under each true class, shape (n_items, K).

    ``ll[i, k] = sum_{r: item_r = i} log confusion[annotator_r, k, label_r]``.
    Repeated ratings of one item by one annotator enter as independent ratings.

    Parameters
    ----------
    params : dict
        ``confusion`` (J, K, K).
    data : DSData
    """
    conf = params["confusion"]
    J, K = conf.shape[0], conf.shape[-1]
    # rows of a (J * K_observed, K_true) table, looked up by one code per rating
    table = jnp.log(jnp.maximum(conf, LOG_FLOOR)).transpose(0, 2, 1).reshape(J * K, K)
    if data.slots is None:
        per_rating = table[data.annotator * K + data.label]  # (R, K)
        return jax.ops.segment_sum(per_rating, data.item, num_segments=data.n_items,
                                   indices_are_sorted=True)
    sl = data.slots
    table = jnp.concatenate([table, jnp.zeros((1, K), table.dtype)])  # row J K: no rating
    # one (n_items, K) row gather per slot: XLA fuses these, a (n, S, K) gather it does not
    ll = jnp.zeros((data.n_items, K), table.dtype)
    for s in range(sl.code.shape[1]):
        ll = ll + table[sl.code[:, s]]
    if sl.over_code.shape[0]:
        ll = ll + jax.ops.segment_sum(table[sl.over_code], sl.over_item,
                                      num_segments=data.n_items, indices_are_sorted=True)
    return ll


def joint_log_likelihood(params: dict, data: DSData) -> jax.Array:
    """``log prevalence[g_i, k] + ll[i, k]``: each item's ratings and class k, (n_items, K).

    Parameters
    ----------
    params : dict
        ``prevalence`` (n_groups, K) and ``confusion`` (J, K, K).
    data : DSData
    """
    log_prev = jnp.log(jnp.maximum(params["prevalence"], LOG_FLOOR))[data.group]
    return class_log_likelihood(params, data) + log_prev


def item_log_likelihood(joint: jax.Array, gold: jax.Array | None = None) -> jax.Array:
    """Each item's log-likelihood (n_items,) from its joint (n_items, K).

    ``logsumexp`` over the latent class; an item with a known class (``gold[i] >= 0``)
    contributes the joint log-probability of that class and its ratings instead.

    Parameters
    ----------
    joint : (n_items, K)
        From :func:`joint_log_likelihood`.
    gold : int array of shape (n_items,), optional
    """
    lse = jax.nn.logsumexp(joint, axis=1)
    if gold is None:
        return lse
    known = gold >= 0
    at_gold = jnp.take_along_axis(joint, jnp.where(known, gold, 0)[:, None], axis=1)[:, 0]
    return jnp.where(known, at_gold, lse)


def log_likelihood(params: dict, data: DSData, gold: jax.Array | None = None,
                   weights: jax.Array | None = None) -> jax.Array:
    """Marginal log-likelihood ``sum_i w_i log sum_k prevalence[g_i, k] exp(ll[i, k])``.

    Parameters
    ----------
    params : dict
        ``prevalence`` (n_groups, K) and ``confusion`` (J, K, K).
    data : DSData
    gold : int array of shape (n_items,), optional
        Known classes (``-1`` where unknown); see :func:`item_log_likelihood`.
    weights : array of shape (n_items,), optional
        Item multiplicities ``w_i`` (1 when not given): with the items of ``data`` the
        distinct rating patterns and ``weights`` their counts
        (:func:`noisycal.engines.patterns.pattern_data`), this is the log-likelihood of
        the full data, computed once per pattern.
    """
    item_ll = item_log_likelihood(joint_log_likelihood(params, data), gold)
    return jnp.sum(item_ll) if weights is None else jnp.sum(weights * item_ll)


def default_priors(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Stan User's Guide weakly informative Dirichlet priors (alpha, beta).

    alpha = 3 for every class; beta[k, k] = 2.5 K and beta[k, k'] = 1.
    """
    K = n_classes
    alpha = np.full(K, 3.0)
    beta = np.ones((K, K)) + (2.5 * K - 1.0) * np.eye(K)
    return alpha, beta


def rate_given_channel(item: jax.Array, annotator: jax.Array, label: jax.Array | None,
                       prevalence: jax.Array, confusion: jax.Array, g: jax.Array, *,
                       n_items: int, n_groups: int, gold: jax.Array | None,
                       weights: jax.Array | None) -> None:
    """The ratings given the channel: simulated (``label=None``) or observed (a factor with
    the Dawid–Skene log-likelihood, the true class marginalised).

    The tail every channel model shares (:func:`dawid_skene`, the class-conditional, MACE
    and hierarchical models): with ``label=None`` it samples the true classes (site
    ``"y"``, from ``prevalence[g]``) and the ratings (site ``"label"``); otherwise it adds
    :func:`log_likelihood` as a factor.

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
    label : int array of shape (n_ratings,) or None
    prevalence : array of shape (n_groups, K)
    confusion : array of shape (J, K, K)
    g : int array of shape (n_items,)
        Each item's group.
    n_items, n_groups : int
    gold, weights : arrays of shape (n_items,) or None
        Observed data only (see :func:`dawid_skene`).
    """
    import numpyro
    import numpyro.distributions as dist

    J, K = confusion.shape[0], confusion.shape[-1]
    if label is None:
        if gold is not None or weights is not None:
            raise ValueError("gold and weights apply to observed labels; simulation "
                             "(label=None) draws the true classes")
        with numpyro.plate("item", n_items, dim=-1):
            y = numpyro.sample("y", dist.Categorical(prevalence[g]))
        with numpyro.plate("rating", item.shape[0], dim=-1):
            numpyro.sample("label", dist.Categorical(confusion[annotator, y[item]]))
        return
    if weights is not None and tuple(jnp.shape(weights)) != (n_items,):
        raise ValueError(f"weights must have shape (n_items,) = ({n_items},), got "
                         f"{tuple(jnp.shape(weights))}")
    data = DSData(item, annotator, label, g, n_items, J, K, n_groups)
    numpyro.factor("loglik", log_likelihood({"prevalence": prevalence,
                                             "confusion": confusion}, data, gold, weights))


def dawid_skene(item: jax.Array, annotator: jax.Array, label: jax.Array | None = None, *,
                n_items: int, n_annotators: int, n_classes: int, group: jax.Array | None = None,
                n_groups: int = 1, alpha: jax.Array | None = None,
                beta: jax.Array | None = None, one_coin: bool = False,
                gold: jax.Array | None = None, weights: jax.Array | None = None) -> None:
    """NumPyro Dawid–Skene model with the true class marginalised by logsumexp.

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
        Which item and which annotator each rating belongs to (ratings sorted by item).
    label : int array of shape (n_ratings,), optional
        Observed class index of each rating; ``None`` simulates labels (and the true
        classes, site ``"y"``) from the priors.
    group : int array of shape (n_items,), optional
        Score group of each item; each group has its own prevalence, channels are shared.
    alpha : array of shape (K,), optional
        Dirichlet prior on each group's prevalence (default 3).
    beta : array of shape (K, K), optional
        Dirichlet prior on each confusion row (default 2.5 K on the diagonal, 1 off it).
        With ``one_coin=True`` the accuracy prior is Beta(beta[0, 0], (K - 1) beta[0, 1]),
        the marginal law of a diagonal entry under that Dirichlet.
    one_coin : bool, default=False
        One accuracy per annotator (site ``"accuracy"``) instead of full confusion rows.
    gold : int array of shape (n_items,), optional
        Known true classes (``-1`` where unknown): those items enter the likelihood with
        their class instead of the mixture (observed data only).
    weights : array of shape (n_items,), optional
        Item multiplicities (observed data only), finite and >= 0 (not checked inside
        the model, which runs traced; its shape is): each item's log-likelihood enters
        ``weights[i]`` times. With one item per distinct rating pattern and its count as
        weight, the log density is the full data's, at a fraction of the cost
        (:func:`noisycal.engines.patterns.pattern_data`).

    Examples
    --------
    Simulate ratings from the prior (``label=None``):

    >>> import jax, numpy as np
    >>> from numpyro.handlers import seed, trace
    >>> item = np.repeat(np.arange(4), 3); annotator = np.tile(np.arange(3), 4)
    >>> tr = trace(seed(dawid_skene, 0)).get_trace(item, annotator, n_items=4,
    ...                                             n_annotators=3, n_classes=2)
    >>> tr["label"]["value"].shape, tr["y"]["value"].shape
    ((12,), (4,))
    """
    import numpyro  # imported here so that `import noisycal` stays light
    import numpyro.distributions as dist

    # priors are validated at the Python boundary (DawidSkene.fit); numpyro's own
    # argument validation would compile small kernels on every trace
    K, J = n_classes, n_annotators
    a0, b0 = default_priors(K)
    alpha = jnp.asarray(a0 if alpha is None else alpha)
    beta = jnp.asarray(b0 if beta is None else beta)
    g = jnp.zeros(n_items, dtype=jnp.int32) if group is None else group
    with numpyro.plate("group", n_groups, dim=-1):
        prevalence = numpyro.sample("prevalence", dist.Dirichlet(alpha, validate_args=False))
    if one_coin:
        with numpyro.plate("annotator", J, dim=-1):
            accuracy = numpyro.sample("accuracy", dist.Beta(beta[0, 0], (K - 1) * beta[0, 1],
                                                            validate_args=False))
        confusion = numpyro.deterministic("confusion", one_coin_confusion(accuracy, K))
    else:
        with numpyro.plate("annotator", J, dim=-2), numpyro.plate("class", K, dim=-1):
            confusion = numpyro.sample("confusion", dist.Dirichlet(beta, validate_args=False))
    rate_given_channel(item, annotator, label, prevalence, confusion, g, n_items=n_items,
                       n_groups=n_groups, gold=gold, weights=weights)

MODELS = {"dawid_skene": dawid_skene}
