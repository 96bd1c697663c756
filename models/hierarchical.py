"""Hierarchical Dawid–Skene: annotator confusion rows partially pooled around a population.

Each annotator's confusion row is a softmax of log-odds drawn around population log-odds
(non-centred):

.. math::

    \\eta_{jk} = \\mu_k + \\sigma_k B z_{jk}, \\qquad
    \\text{confusion}_{jk} = \\operatorname{softmax}(\\eta_{jk}),

with ``mu[k]`` the population log-odds of row k, ``sigma[k] ~ HalfNormal(sigma_scale)``
the spread of that row across annotators, and ``z[j, k] ~ N(0, I_{K-1})``. The softmax
is identified by a sum-to-zero constraint: ``B`` (:func:`sum_to_zero_basis`) is a
K x (K-1) orthonormal basis of the vectors whose entries sum to zero, ``mu[k] = B
mu_free[k]`` and the deviations are ``B z[j, k]``. With ``mu_free[k] ~ N(B^T m_k,
mu_scale^2 I)``, ``m_k = mu_diag e_k + mu_off (1 - e_k)``, the centred log-odds ``B
mu_free[k]`` have exactly the law of ``P v`` with ``v ~ N(m_k, mu_scale^2 I_K)`` and
``P`` the centring projection; since ``softmax(v) = softmax(P v)``, the model puts the
same distribution on every confusion matrix as the unconstrained parametrisation of the
R package rater (``mu[k, k] ~ N(2, 1)``, ``mu[k, k'] ~ N(0, 1)``, ``z ~ N(0, 1)`` on all
K entries) with one scale per row, without its K + J K directions that the likelihood
never sees. Defaults follow rater: ``mu_diag = 2``, ``mu_off = 0``, ``mu_scale = 1``,
``sigma_scale = 1``. Where rater has one scale per (row, column) entry, this model has
one per row (K scales), which is what keeps the sum-to-zero form exact.

The centred parametrisation samples each annotator's log-odds ``e[j, k] ~ N(mu_free[k],
sigma[k]^2 I)`` directly (``confusion[j, k] = softmax(B e[j, k])``): the same model, a
different geometry. Non-centred suits annotators with few ratings (the likelihood leaves
the deviations near their prior, a funnel in the centred form), centred suits annotators
with many ("A General Framework for the Parametrization of Hierarchical Models";
"Hamiltonian Monte Carlo for Hierarchical Models"); ``centered=`` of
:func:`hierarchical_dawid_skene` picks it annotator by annotator.

The latent class is marginalised by the one Dawid–Skene likelihood
(:func:`noisycal.models.dawid_skene.log_likelihood`), so item weights (rating-pattern
counts) and gold classes work as in :func:`~noisycal.models.dawid_skene.dawid_skene`.

References
----------
Pullin, J., Gurrin, L. and Vukcevic, D. (2023). "Statistical Models of Repeated
Categorical Ratings: The R Package rater". The R Journal 15(3).
Paun, S., Carpenter, B., Chamberlain, J., Hovy, D., Kruschwitz, U. and Poesio, M.
(2018). "Comparing Bayesian Models of Annotation". Transactions of the Association for
Computational Linguistics 6, 571-585 (the hierarchical Dawid–Skene model, Sec. 2).
Papaspiliopoulos, O., Roberts, G. O. and Sköld, M. (2007). "A General Framework for the
Parametrization of Hierarchical Models". Statistical Science 22(1), 59-73.
Betancourt, M. and Girolami, M. (2015). "Hamiltonian Monte Carlo for Hierarchical
Models". In Current Trends in Bayesian Methodology with Applications, CRC Press.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

from .dawid_skene import default_priors, rate_given_channel

__all__ = ["HIERARCHICAL_PRIORS", "sum_to_zero_basis", "population_log_odds",
           "hierarchical_confusion", "hierarchical_dawid_skene", "MODELS"]

#: Prior constants of :func:`hierarchical_dawid_skene` (those of the R package rater).
HIERARCHICAL_PRIORS = {"mu_diag": 2.0, "mu_off": 0.0, "mu_scale": 1.0, "sigma_scale": 1.0}


def sum_to_zero_basis(n_classes: int) -> np.ndarray:
    """Orthonormal basis (K, K-1) of the vectors of length K whose entries sum to zero.

    Column ``c`` is the Helmert contrast ``(1, ..., 1, -(c+1), 0, ..., 0) /
    sqrt((c+1)(c+2))`` (``c + 1`` ones), so ``B.T @ B = I`` and ``B @ B.T = I - 11^T/K``.

    Parameters
    ----------
    n_classes : int
        K >= 2.

    Examples
    --------
    >>> B = sum_to_zero_basis(3)
    >>> np.allclose(B.T @ B, np.eye(2)), np.allclose(B.sum(0), 0)
    (True, True)
    """
    K = int(n_classes)
    B = np.zeros((K, K - 1))
    for c in range(K - 1):
        B[: c + 1, c] = 1.0
        B[c + 1, c] = -(c + 1.0)
        B[:, c] /= np.sqrt((c + 1.0) * (c + 2.0))
    return B


def population_log_odds(n_classes: int, mu_diag: float, mu_off: float) -> np.ndarray:
    """Prior means ``m`` (K, K) of the population log-odds, before centring.

    Parameters
    ----------
    n_classes : int
        K.
    mu_diag : float
        Mean of the diagonal entries (log-odds of a correct label).
    mu_off : float
        Mean of the off-diagonal entries.
    """
    K = int(n_classes)
    return np.full((K, K), float(mu_off)) + (float(mu_diag) - float(mu_off)) * np.eye(K)


def hierarchical_confusion(mu_free: jax.Array, sigma: jax.Array, z: jax.Array) -> jax.Array:
    """Confusion matrices (J, K, K) from the model's free parameters.

    Parameters
    ----------
    mu_free : (K, K-1)
        Population log-odds in the sum-to-zero basis.
    sigma : (K,)
        Spread of each row across annotators.
    z : (J, K, K-1)
        Standardised annotator deviations in the basis.

    Returns
    -------
    ``confusion[j, k] = softmax(B mu_free[k] + sigma[k] B z[j, k])``.
    """
    B = jnp.asarray(sum_to_zero_basis(mu_free.shape[0]), dtype=mu_free.dtype)
    eta = (mu_free[None] + sigma[None, :, None] * z) @ B.T
    return jax.nn.softmax(eta, axis=-1)


def hierarchical_dawid_skene(item: jax.Array, annotator: jax.Array,
                             label: jax.Array | None = None, *, n_items: int,
                             n_annotators: int, n_classes: int,
                             alpha: jax.Array | None = None, mu_diag: float = 2.0,
                             mu_off: float = 0.0, mu_scale: float = 1.0,
                             sigma_scale: float = 1.0, gold: jax.Array | None = None,
                             weights: jax.Array | None = None,
                             centered: tuple[bool, ...] | None = None) -> None:
    """NumPyro hierarchical Dawid–Skene model, latent class marginalised by logsumexp.

    Sites: ``prevalence`` (1, K) ~ Dirichlet(alpha); ``mu_free`` (K, K-1) ~ N(B^T m_k,
    mu_scale^2); ``sigma`` (K,) ~ HalfNormal(sigma_scale); ``z`` (J, K, K-1) ~ N(0, 1);
    deterministic ``mu`` (K, K), the centred population log-odds ``B mu_free[k]``, and
    ``confusion`` (J, K, K) (:func:`hierarchical_confusion`). See the module docstring
    for the parametrisation and its relation to the R package rater.

    With ``centered``, annotator j's row of ``z`` is instead its own log-odds in the
    basis where ``centered[j]`` is True, ``z[j, k] ~ N(mu_free[k], sigma[k]^2 I)`` and
    ``confusion[j, k] = softmax(B z[j, k])`` (the centred parametrisation); the model
    puts the same distribution on every confusion matrix either way, only the geometry
    NUTS samples differs ("Hamiltonian Monte Carlo for Hierarchical Models").

    Parameters
    ----------
    item, annotator : int arrays of shape (n_ratings,)
        Which item and which annotator each rating belongs to (ratings sorted by item).
    label : int array of shape (n_ratings,), optional
        Observed class index of each rating; ``None`` simulates labels (site
        ``"label"``) and the true classes (site ``"y"``) from the prior.
    n_items, n_annotators, n_classes : int
    alpha : array of shape (K,), optional
        Dirichlet prior on the prevalence (default 3, as in
        :func:`~noisycal.models.dawid_skene.dawid_skene`).
    mu_diag, mu_off : float, default=2.0, 0.0
        Prior means of the population log-odds: diagonal (correct label) and
        off-diagonal entries, before centring.
    mu_scale : float, default=1.0
        Prior sd of the population log-odds.
    sigma_scale : float, default=1.0
        Scale of the half-normal prior on each row's spread across annotators.
    gold : int array of shape (n_items,), optional
        Known true classes (``-1`` where unknown), observed data only.
    weights : array of shape (n_items,), optional
        Item multiplicities (rating-pattern counts), observed data only.
    centered : tuple of bool of length n_annotators, optional
        Which annotators are centred (a tuple, so that it is a static input of the
        compiled sampler); None (default): none, the non-centred model.

    Examples
    --------
    >>> import numpy as np
    >>> from numpyro.handlers import seed, trace
    >>> item = np.repeat(np.arange(4), 3); annotator = np.tile(np.arange(3), 4)
    >>> tr = trace(seed(hierarchical_dawid_skene, 0)).get_trace(
    ...     item, annotator, n_items=4, n_annotators=3, n_classes=3)
    >>> tr["confusion"]["value"].shape, tr["label"]["value"].shape
    ((3, 3, 3), (12,))
    """
    import numpyro  # imported here so that `import noisycal` stays light
    import numpyro.distributions as dist

    K, J = n_classes, n_annotators
    alpha = jnp.asarray(default_priors(K)[0] if alpha is None else alpha)
    B = sum_to_zero_basis(K)
    loc = jnp.asarray(population_log_odds(K, mu_diag, mu_off) @ B)  # (K, K-1)
    with numpyro.plate("group", 1, dim=-1):
        prevalence = numpyro.sample("prevalence", dist.Dirichlet(alpha, validate_args=False))
    mu_free = numpyro.sample("mu_free", dist.Normal(loc, mu_scale).to_event(2))
    with numpyro.plate("class", K, dim=-1):
        sigma = numpyro.sample("sigma", dist.HalfNormal(sigma_scale))
    if centered is None or not any(centered):  # non-centred: every annotator
        with numpyro.plate("annotator", J, dim=-1):
            z = numpyro.sample("z", dist.Normal(jnp.zeros((K, K - 1)), 1.0).to_event(2))
        confusion = hierarchical_confusion(mu_free, sigma, z)
    else:
        if len(centered) != J:
            raise ValueError(f"centered must have one entry per annotator ({J}), got "
                             f"{len(centered)}")
        c = np.asarray(centered, bool)[:, None, None]  # (J, 1, 1), a constant
        scale = jnp.broadcast_to(sigma[:, None], (K, K - 1))
        loc = jnp.where(c, mu_free[None], 0.0)
        with numpyro.plate("annotator", J, dim=-1):
            z = numpyro.sample("z", dist.Normal(loc, jnp.where(c, scale[None], 1.0))
                               .to_event(2))
        eta = jnp.where(c, z, mu_free[None] + sigma[None, :, None] * z)
        confusion = jax.nn.softmax(eta @ jnp.asarray(B.T, dtype=eta.dtype), axis=-1)
    numpyro.deterministic("mu", mu_free @ jnp.asarray(B.T))
    confusion = numpyro.deterministic("confusion", confusion)
    rate_given_channel(item, annotator, label, prevalence, confusion,
                       jnp.zeros(n_items, jnp.int32), n_items=n_items, n_groups=1, gold=gold,
                       weights=weights)


MODELS = {"hierarchical_dawid_skene": hierarchical_dawid_skene}
