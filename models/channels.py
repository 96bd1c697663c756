"""Constrained annotator channels: class-conditional Dawid–Skene and MACE.

Both models keep the Dawid–Skene likelihood of :mod:`models.dawid_skene` and only
derive each annotator's confusion matrix from fewer parameters; the NumPyro models below
marginalise the true class with the same :func:`~models.dawid_skene.log_likelihood`.

Parameters (probability scale)
------------------------------
accuracy : (n_annotators, K)
    Class-conditional model: ``confusion[j, k, k] = accuracy[j, k]`` and
    ``confusion[j, k, l] = (1 - accuracy[j, k]) / (K - 1)`` for ``l != k`` (one accuracy
    per annotator and true class, errors spread evenly; the ``class_conditional_dawid_skene``
    model of the R package rater).
spam : (n_annotators,), strategy : (n_annotators, K)
    MACE: annotator j ignores the item with probability ``spam[j]`` and then draws a label
    from its strategy ``strategy[j]``; otherwise it reports the true class, so
    ``confusion[j] = (1 - spam[j]) I + spam[j] 1 strategy[j]^T``.

References
----------
Dawid, A. P. and Skene, A. M. (1979). Maximum likelihood estimation of observer
error-rates using the EM algorithm. Applied Statistics 28(1), 20-28.
Hovy, D., Berg-Kirkpatrick, T., Vaswani, A. and Hovy, E. (2013). Learning Whom to Trust
with MACE. Proceedings of NAACL-HLT 2013, 1120-1130.
Pullin, J., Vukcevic, D. and others: the R package rater ("rater: An R Package for
Fitting Statistical Models of Repeated Categorical Ratings").
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

from .dawid_skene import default_priors, rate_given_channel

__all__ = [
    "class_conditional_confusion",
    "mace_confusion",
    "mace_parameters",
    "class_conditional_priors",
    "mace_priors",
    "class_conditional_dawid_skene",
    "mace",
    "MODELS",
]


def class_conditional_confusion(accuracy: jax.Array, n_classes: int) -> jax.Array:
    """Confusion matrices (J, K, K) with one accuracy per annotator and true class.

    Parameters
    ----------
    accuracy : array of shape (J, K)
        ``accuracy[j, k]`` is the probability that annotator j labels an item of class k
        correctly; the rest is spread evenly over the other K - 1 classes.
    n_classes : int

    Examples
    --------
    >>> import numpy as np
    >>> class_conditional_confusion(np.array([[0.9, 0.6, 0.8]]), 3)[0].round(2)
    Array([[0.9 , 0.05, 0.05],
           [0.2 , 0.6 , 0.2 ],
           [0.1 , 0.1 , 0.8 ]], dtype=float32)
    """
    accuracy = jnp.asarray(accuracy)
    eye = jnp.eye(n_classes, dtype=accuracy.dtype)
    off = (1.0 - accuracy) / (n_classes - 1)
    return accuracy[:, :, None] * eye + off[:, :, None] * (1.0 - eye)


def mace_confusion(spam: jax.Array, strategy: jax.Array) -> jax.Array:
    """Confusion matrices (J, K, K) of MACE annotators.

    ``confusion[j] = (1 - spam[j]) I + spam[j] 1 strategy[j]^T``: with probability
    ``spam[j]`` the label is drawn from ``strategy[j]`` whatever the true class.

    Parameters
    ----------
    spam : array of shape (J,)
    strategy : array of shape (J, K)
        Rows on the simplex.

    Examples
    --------
    >>> import numpy as np
    >>> mace_confusion(np.array([0.5]), np.array([[0.8, 0.2]]))[0]
    Array([[0.9, 0.1],
           [0.4, 0.6]], dtype=float32)
    """
    spam, strategy = jnp.asarray(spam), jnp.asarray(strategy)
    K = strategy.shape[-1]
    eye = jnp.eye(K, dtype=strategy.dtype)
    return (1.0 - spam)[:, None, None] * eye + (spam[:, None] * strategy)[:, None, :]


def mace_parameters(confusion: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(spam, strategy)`` of MACE confusion matrices (the inverse of :func:`mace_confusion`).

    The off-diagonal entries give ``spam[j] * strategy[j, l] = confusion[j, k, l]`` for any
    ``k != l`` (read at ``k = l + 1 mod K``), and ``spam`` is their sum. An annotator who
    never spams (``spam = 0``) gets a uniform strategy, which its confusion does not
    determine.

    Parameters
    ----------
    confusion : array of shape (..., J, K, K)
        MACE confusion matrices (a NumPy array gives NumPy results, else JAX).

    Returns
    -------
    spam : (..., J), strategy : (..., J, K)
    """
    xp = np if isinstance(confusion, np.ndarray) else jnp  # NumPy in, NumPy out
    K = confusion.shape[-1]
    lab = np.arange(K)
    weighted = confusion[..., (lab + 1) % K, lab]  # spam * strategy, (..., J, K)
    spam = xp.sum(weighted, axis=-1)
    safe = xp.where(spam > 0, spam, 1.0)[..., None]
    strategy = xp.where(spam[..., None] > 0, weighted / safe, 1.0 / K)
    return spam, strategy


def class_conditional_priors(n_classes: int) -> np.ndarray:
    """Default Beta prior of every accuracy, shape (2, K): rows ``a`` and ``b``.

    ``Beta(2.5 K, K - 1)``: the law of a diagonal entry under the Stan User's Guide
    Dirichlet prior of a Dawid–Skene confusion row (2.5 K on the diagonal, 1 elsewhere),
    as :class:`~noisycal.annotators.OneCoinDawidSkene` uses for its accuracy.
    """
    _, beta = default_priors(n_classes)
    a = np.diag(beta)
    return np.stack([a, beta.sum(1) - a])


def mace_priors(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Default priors of MACE: ``(spam_prior (2,), strategy_prior (K,))``.

    ``Beta(0.5, 0.5)`` on the spamming probability (the default of Hovy et al.'s MACE
    software, which pushes each annotator towards always or never spamming) and a flat
    ``Dirichlet(1)`` on each strategy.
    """
    return np.array([0.5, 0.5]), np.ones(n_classes)


def _prevalence(alpha: jax.Array | None, K: int, n_groups: int) -> jax.Array:
    import numpyro
    import numpyro.distributions as dist

    alpha = jnp.asarray(default_priors(K)[0] if alpha is None else alpha)
    with numpyro.plate("group", n_groups, dim=-1):
        return numpyro.sample("prevalence", dist.Dirichlet(alpha, validate_args=False))


def class_conditional_dawid_skene(
        item: jax.Array, annotator: jax.Array, label: jax.Array | None = None, *,
        n_items: int, n_annotators: int, n_classes: int, group: jax.Array | None = None,
        n_groups: int = 1, alpha: jax.Array | None = None,
        accuracy_prior: jax.Array | None = None, gold: jax.Array | None = None,
        weights: jax.Array | None = None) -> None:
    """NumPyro class-conditional Dawid–Skene model (true class marginalised).

    ``accuracy[j, k] ~ Beta(accuracy_prior[0, k], accuracy_prior[1, k])`` (site
    ``"accuracy"``, shape (J, K)); the confusion (deterministic site ``"confusion"``) is
    :func:`class_conditional_confusion`; prevalence ``~ Dirichlet(alpha)`` per group.
    The ratings enter through :func:`models.dawid_skene.log_likelihood`.

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
        Ratings sorted by item.
    label : int array of shape (n_ratings,), optional
        Observed classes; ``None`` simulates the true classes (site ``"y"``) and labels.
    n_items, n_annotators, n_classes, n_groups : int
    group : int array of shape (n_items,), optional
    alpha : array of shape (K,), optional
        Dirichlet prior of the prevalence (default 3).
    accuracy_prior : array of shape (2, K), optional
        Beta parameters ``a`` (row 0) and ``b`` (row 1) of each class's accuracy
        (default :func:`class_conditional_priors`).
    gold, weights : optional
        Known classes (``-1`` where unknown) and item multiplicities, as in
        :func:`models.dawid_skene.dawid_skene` (observed data only).

    Examples
    --------
    >>> import numpy as np
    >>> from numpyro.handlers import seed, trace
    >>> item = np.repeat(np.arange(4), 3); annotator = np.tile(np.arange(3), 4)
    >>> tr = trace(seed(class_conditional_dawid_skene, 0)).get_trace(
    ...     item, annotator, n_items=4, n_annotators=3, n_classes=3)
    >>> tr["accuracy"]["value"].shape, tr["confusion"]["value"].shape
    ((3, 3), (3, 3, 3))
    """
    import numpyro
    import numpyro.distributions as dist

    K, J = n_classes, n_annotators
    prior = jnp.asarray(class_conditional_priors(K) if accuracy_prior is None
                        else accuracy_prior)
    g = jnp.zeros(n_items, dtype=jnp.int32) if group is None else group
    prevalence = _prevalence(alpha, K, n_groups)
    with numpyro.plate("annotator", J, dim=-2), numpyro.plate("class", K, dim=-1):
        accuracy = numpyro.sample("accuracy", dist.Beta(prior[0], prior[1],
                                                        validate_args=False))
    confusion = numpyro.deterministic("confusion", class_conditional_confusion(accuracy, K))
    rate_given_channel(item, annotator, label, prevalence, confusion, g, n_items=n_items,
          n_groups=n_groups, gold=gold, weights=weights)


def mace(item: jax.Array, annotator: jax.Array, label: jax.Array | None = None, *,
         n_items: int, n_annotators: int, n_classes: int, group: jax.Array | None = None,
         n_groups: int = 1, alpha: jax.Array | None = None,
         spam_prior: jax.Array | None = None, strategy_prior: jax.Array | None = None,
         gold: jax.Array | None = None, weights: jax.Array | None = None) -> None:
    """NumPyro MACE model (Hovy et al. 2013, "Learning Whom to Trust with MACE").

    ``spam[j] ~ Beta(spam_prior[0], spam_prior[1])`` and ``strategy[j] ~
    Dirichlet(strategy_prior)`` (sites ``"spam"`` (J,) and ``"strategy"`` (J, K)); the
    confusion (deterministic site ``"confusion"``) is :func:`mace_confusion`. The spam
    indicator of each rating is summed out inside the confusion and the true class by
    :func:`models.dawid_skene.log_likelihood`. Unlike the paper, whose true classes are
    uniform, the prevalence is a parameter (``~ Dirichlet(alpha)`` per group), as in
    every Dawid–Skene model here.

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
        Ratings sorted by item.
    label : int array of shape (n_ratings,), optional
        Observed classes; ``None`` simulates the true classes (site ``"y"``) and labels.
    n_items, n_annotators, n_classes, n_groups : int
    group : int array of shape (n_items,), optional
    alpha : array of shape (K,), optional
        Dirichlet prior of the prevalence (default 3).
    spam_prior : array of shape (2,), optional
        Beta parameters of the spamming probability (default :func:`mace_priors`).
    strategy_prior : array of shape (K,), optional
        Dirichlet parameters of each strategy (default 1).
    gold, weights : optional
        As in :func:`models.dawid_skene.dawid_skene` (observed data only).

    Examples
    --------
    >>> import numpy as np
    >>> from numpyro.handlers import seed, trace
    >>> item = np.repeat(np.arange(4), 3); annotator = np.tile(np.arange(3), 4)
    >>> tr = trace(seed(mace, 0)).get_trace(item, annotator, n_items=4, n_annotators=3,
    ...                                     n_classes=2)
    >>> tr["spam"]["value"].shape, tr["strategy"]["value"].shape
    ((3,), (3, 2))
    """
    import numpyro
    import numpyro.distributions as dist

    K, J = n_classes, n_annotators
    s0, x0 = mace_priors(K)
    sp = jnp.asarray(s0 if spam_prior is None else spam_prior)
    xp = jnp.asarray(x0 if strategy_prior is None else strategy_prior)
    g = jnp.zeros(n_items, dtype=jnp.int32) if group is None else group
    prevalence = _prevalence(alpha, K, n_groups)
    with numpyro.plate("annotator", J, dim=-1):
        spam = numpyro.sample("spam", dist.Beta(sp[0], sp[1], validate_args=False))
        strategy = numpyro.sample("strategy", dist.Dirichlet(xp, validate_args=False))
    confusion = numpyro.deterministic("confusion", mace_confusion(spam, strategy))
    rate_given_channel(item, annotator, label, prevalence, confusion, g, n_items=n_items,
          n_groups=n_groups, gold=gold, weights=weights)


MODELS = {"class_conditional_dawid_skene": class_conditional_dawid_skene, "mace": mace}
