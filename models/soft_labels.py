"""Dirichlet-multinomial model of annotator vote counts around a calibrated classifier.

The annotators' votes on item i are overdispersed draws around the classifier's
*calibrated* probabilities,

.. math::

    p_i = \\operatorname{softmax}(W \\log \\hat p_i + b), \\qquad
    c_i \\mid p_i, \\kappa \\sim \\operatorname{DirMult}(n_i, \\kappa p_i),

where :math:`\\log \\hat p_i` are the classifier's log-probabilities, :math:`(W, b)` is
the full-matrix-plus-intercept calibration map of Dirichlet calibration (Kull et al.,
2019), :math:`c_i` the vote counts of item i with total :math:`n_i`, and :math:`\\kappa`
the concentration of the annotator distribution around :math:`p_i` (small kappa: the
annotators disagree more than a multinomial would).

The likelihood is defined once, in :func:`log_likelihood`; :func:`dirichlet_soft_labels`
is the NumPyro model (priors plus that likelihood as an observed
``DirichletMultinomial`` site) used by both the gradient MLE/MAP engine and NUTS.

Identification
--------------
The softmax is unchanged when the same number is added to every output logit, so
``W`` is identified only up to adding one row vector to every row, and ``b`` only up to
adding a constant. The model therefore parameterises the identified representative:
every column of ``W`` and the vector ``b`` sum to zero over the output classes.
The identity map is then ``C = I - 11'/K`` (``softmax(C l) = softmax(l)``), and
``W = C + W_dev.T`` with the latent site ``W_dev`` (rows = columns of ``W - C``).
With the prior ``W ~ Normal(I, prior_scale)`` and ``b ~ Normal(0, prior_scale)``
elementwise on an *unconstrained* ``(W, b)``, the identified part ``(C W, C b)`` has
exactly the ``ZeroSumNormal(prior_scale)`` distributions used here, and the likelihood
depends on nothing else; so this model gives the same posterior over calibration maps as
the over-parameterised one, and a maximum likelihood estimate with a regular Hessian.
Use :func:`identified_map` to bring any ``(W, b)`` to this representative.

Log-probabilities, not logits
-----------------------------
The map acts on log-probabilities, as in Kull et al. (2019). Tao, Luo, Dong & Xu's (2026)
Dirichlet-Soft applies ``W`` to logits instead (their Section 6); for a full ``W`` the two
differ, and a map on logits is not even defined by the probabilities alone (logits are
determined only up to a per-item constant, which a full ``W`` does not ignore), so
noisycal uses the canonical representative ``log p``.

References
----------
.. [000] L. Tao, H. Luo, M. Dong, C. Xu. "Confidence Calibration under Ambiguous Ground
   Truth", arXiv:2603.22879, 2026: Dirichlet-Soft (Section 6), calibration against the
   annotator distribution.
.. [Kull2019] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song,
   P. Flach. "Beyond temperature scaling: Obtaining well-calibrated multiclass
   probabilities with Dirichlet calibration." NeurIPS 2019.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

__all__ = [
    "MODELS",
    "dirichlet_soft_labels",
    "calibration_map",
    "log_likelihood",
    "identified_map",
    "identity_map",
]

#: Prior of the concentration: log(kappa) ~ Normal(log 10, 1.5), a 90% prior range of
#: about 0.85 to 118 votes' worth of concentration.
KAPPA_LOC = float(np.log(10.0))
KAPPA_SCALE = 1.5


def identity_map(n_classes):
    """The centred identity ``C = I - 11'/K``: the identity calibration map's representative."""
    return np.eye(n_classes) - 1.0 / n_classes


def identified_map(W, b):
    """The identified representative of a calibration map ``(W, b)``.

    Subtracts from every row of ``W`` the mean row and from ``b`` its mean, so that the
    columns of ``W`` and ``b`` sum to zero over the output classes. The calibrated
    probabilities ``softmax(W l + b)`` are unchanged.

    Works on NumPy and JAX arrays, with any leading batch axes (e.g. posterior draws).

    Parameters
    ----------
    W : array of shape (..., n_classes, n_classes)
        Calibration matrix (output class, input class).
    b : array of shape (..., n_classes)
        Intercept.

    Returns
    -------
    tuple of arrays
        ``(W, b)`` with columns of ``W`` and ``b`` summing to zero.
    """
    xp = jnp if isinstance(W, jax.Array) or isinstance(b, jax.Array) else np
    W = xp.asarray(W)
    b = xp.asarray(b)
    return W - W.mean(axis=-2, keepdims=True), b - b.mean(axis=-1, keepdims=True)


def calibration_map(W, b, log_probs):
    """Calibrated log-probabilities ``log_softmax(W @ log_probs_i + b)``.

    Parameters
    ----------
    W : array of shape (n_classes, n_classes)
        Calibration matrix (output class, input class).
    b : array of shape (n_classes,)
        Intercept.
    log_probs : array of shape (n_items, n_classes)
        The classifier's log-probabilities.

    Returns
    -------
    jax.Array of shape (n_items, n_classes)
    """
    logits = jnp.einsum("kj,ij->ik", W, log_probs) + b
    return jax.nn.log_softmax(logits, axis=-1)


def log_likelihood(W, b, kappa, log_probs, counts):
    """Per-item Dirichlet-multinomial log-likelihood, shape (n_items,).

    Parameters
    ----------
    W : array of shape (n_classes, n_classes)
        Calibration matrix (output class, input class).
    b : array of shape (n_classes,)
        Intercept.
    kappa : float
        Concentration of the annotator distribution around the calibrated probabilities.
    log_probs : array of shape (n_items, n_classes)
        The classifier's log-probabilities.
    counts : array of shape (n_items, n_classes)
        Annotator vote counts per item.
    """
    import numpyro.distributions as dist  # lazy: `import noisycal` stays light

    p = jnp.exp(calibration_map(W, b, log_probs))
    counts = jnp.asarray(counts)
    return dist.DirichletMultinomial(kappa * p, total_count=counts.sum(-1)).log_prob(counts)


def dirichlet_soft_labels(log_probs, counts=None, *, n_totals=None, prior_scale=1.0):
    """Dirichlet-multinomial soft-label model with a Dirichlet-calibration map.

    Parameters
    ----------
    log_probs : array of shape (n_items, n_classes)
        The classifier's log-probabilities (finite). Data, not a parameter.
    counts : array of shape (n_items, n_classes) or None, default=None
        Annotator vote counts per item. None simulates them, and then ``n_totals``
        gives the number of votes per item.
    n_totals : array of shape (n_items,) or None, default=None
        Votes per item, used only when ``counts`` is None.
    prior_scale : float, default=1.0
        Standard deviation of the elementwise Normal priors ``W ~ Normal(I, prior_scale)``
        and ``b ~ Normal(0, prior_scale)`` (of which the model keeps the identified,
        zero-sum part; see the module docstring).

    Returns
    -------
    array of shape (n_items, n_classes)
        The observed (or simulated) counts.

    Notes
    -----
    As ``kappa -> infinity`` the Dirichlet-multinomial tends to the multinomial
    ``Mult(n_i, p_i)``, whose log-likelihood in ``(W, b)`` is, up to a constant, minus
    the soft-label cross-entropy ``-sum_i sum_k c_ik log p_ik``: the maximum likelihood
    fit then is soft-label Dirichlet calibration ([000]_, [Kull2019]_). A finite kappa
    adds the annotators' overdispersion, and NUTS gives a posterior over calibration
    maps.

    Sites: ``W_dev`` (n_classes, n_classes), latent, ``ZeroSumNormal(prior_scale)`` per
    row, ``W_dev[j]`` being column j of ``W - C``; ``b`` (n_classes,), latent,
    ``ZeroSumNormal(prior_scale)``; ``kappa``, latent, ``LogNormal(log 10, 1.5)``;
    ``W`` (n_classes, n_classes), deterministic, ``C + W_dev.T`` (columns sum to zero);
    ``counts`` (n_items, n_classes), observed, ``DirichletMultinomial(kappa * p_i, n_i)``
    in the plate ``"item"`` (dim=-1), with ``p_i = softmax(W log_probs_i + b)``.

    References
    ----------
    .. [000] Tao, Luo, Dong & Xu, "Confidence Calibration under Ambiguous Ground Truth",
       arXiv:2603.22879 (2026), Dirichlet-Soft (Section 6).
    .. [Kull2019] Kull et al., "Beyond temperature scaling", NeurIPS 2019.
    """
    import numpyro
    import numpyro.distributions as dist

    log_probs = jnp.asarray(log_probs)
    n_items, n_classes = log_probs.shape
    if counts is None:
        if n_totals is None:
            raise ValueError("n_totals is required when counts is None (simulation)")
        totals = jnp.asarray(n_totals)
    else:
        counts = jnp.asarray(counts)
        totals = counts.sum(-1)

    W_dev = numpyro.sample(
        "W_dev",
        dist.ZeroSumNormal(prior_scale, event_shape=(n_classes,)).expand([n_classes]).to_event(1),
    )
    b = numpyro.sample("b", dist.ZeroSumNormal(prior_scale, event_shape=(n_classes,)))
    kappa = numpyro.sample("kappa", dist.LogNormal(KAPPA_LOC, KAPPA_SCALE))
    W = numpyro.deterministic("W", identity_map(n_classes) + W_dev.T)

    p = jnp.exp(calibration_map(W, b, log_probs))
    with numpyro.plate("item", n_items, dim=-1):
        return numpyro.sample(
            "counts", dist.DirichletMultinomial(kappa * p, total_count=totals), obs=counts
        )


MODELS = {"dirichlet_soft_labels": dirichlet_soft_labels}
