r"""NC-ECE with estimated channels: the bin means' covariance with the channel error.

The corrected target :math:`T_i(\hat\theta)` of :func:`noisycal.targets.corrected` uses
channels :math:`\hat\theta` estimated from annotations, usually of the same items. With
the bins held fixed the binned NC-ECE is a norm of the bin means
:math:`\hat m_j(\hat\theta) = \frac1n\sum_i x_{ij}(\hat\theta)`,
:math:`x_{ij} = (T_i[c_g(i)] - \text{conf}_{ig})\,1\{i \in j\}`, and to first order

.. math:: \hat m(\hat\theta) - m(\theta_0) \approx \sum_i \Big[\frac{x_i - \hat m}{n}
          + D\,\phi_i\Big], \qquad D = \partial \hat m / \partial\theta,

with :math:`\phi_i` the item's influence on :math:`\hat\theta`, which the target's fit
offers (``fit.influence()``, :class:`~noisycal.targets.ChannelFit`; zero for items
the channels were not fitted on).
The covariance of the bin means is then

.. math:: V = \hat V_x + C D^T + D C^T + D\,\Sigma_\theta D^T, \qquad
          C = \sum_i \frac{x_i - \hat m}{n}\phi_i^T, \quad
          \Sigma_\theta = \sum_k \phi_k\phi_k^T,

:math:`\hat V_x` the sample covariance with the channels held fixed. The aggregation
weights are held at their values: every annotator's corrected label is unbiased, so the
weights move the population bin means only at second order.

The inverted interval's null draws this error with its channel part pushed through the
exact corrected target (:func:`channel_noise`: the inverse of a confusion matrix is
skewed when the channels are uncertain, and unbounded where one turns singular), and
two checks say when the normal approximation of the channels fails
(:func:`noisycal.metrics.nc.assemble.weak_channels`): a channel that turns singular
within ``LINEARITY_Z`` standard errors (:func:`_curvature`), or a rate estimated at the
boundary (where no sampling variance is seen) whose rule-of-three move changes the bin
means by more than a tenth of their standard error.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import x64
from ...annotations.matching import positions
from ...correction.labels import corrected_from_channels
from ...exceptions import NotOffered

__all__ = ["ChannelTerm", "channel_term", "channel_noise", "UNBOUNDED", "LINEARITY_Z",
           "LINEARITY_DIRECTIONS", "NOISE_CHUNK"]


class ChannelTerm(NamedTuple):
    """What the estimated channels add to the covariance of the bin means.

    Attributes
    ----------
    added : ndarray of shape (J, J)
        ``C D^T + D C^T + D Sigma D^T``.
    channel : ndarray of shape (J, J)
        ``D Sigma D^T`` alone.
    cross : ndarray of shape (J, J)
        ``C D^T + D C^T``.
    jacobian : ndarray of shape (J, p)
        ``D``.
    n_common : int
        Items both in the target and in the fit (their influence enters ``C``).
    matched_by : str
        How target rows were matched to fitted items.
    n_free : int
        Free channel parameters.
    cross_factor : ndarray of shape (J, p)
        ``C``, the covariance of the items' own terms of the bin means with the channel
        error ``sum_i phi_i``.
    covariance : ndarray of shape (p, p)
        ``Sigma``, the channels' sandwich covariance.
    bin_means : callable
        ``bin_means(theta) -> (J,)``, the exact bin means at free channel coordinates
        theta (vmappable; theta = 0 at the estimate).
    used_channels : callable
        ``used_channels(theta) -> (J_used, K, K)``, the informative annotators' channels in
        the target's order at theta.
    boundary_effect : float
        The largest change of the NC-ECE's norm of bin-mean changes,
        ``sum_j w_j |m_j(moved) - m_j|``, over the channel entries held fixed at the
        boundary moved to their rule-of-three bound (``ChannelInfluence.boundary_moves``;
        0 when there are none).
    curvature : float
        The largest relative curvature of the bin means along the leading channel
        directions (:func:`_curvature`); inf when a move of ``LINEARITY_Z`` standard
        errors makes a used channel singular.
    """

    added: np.ndarray
    channel: np.ndarray
    cross: np.ndarray
    jacobian: np.ndarray
    n_common: int
    matched_by: str
    n_free: int
    curvature: float
    cross_factor: np.ndarray
    covariance: np.ndarray
    bin_means: Any
    used_channels: Any
    boundary_effect: float


def _aligned(conf: jax.Array, annotator_index: jax.Array, class_index: jax.Array
             ) -> jax.Array:
    """The fit's channels in the target's annotator and class order."""
    return conf[annotator_index][:, class_index][:, :, class_index]


@partial(jax.jit, static_argnames=("params", "n_cells"))
def _bin_means(theta: jax.Array, x0: jax.Array, basis: jax.Array, ratings: jax.Array,
               observed: jax.Array, mask: jax.Array, alpha: jax.Array,
               annotator_index: jax.Array, class_index: jax.Array, conf: jax.Array,
               cols: jax.Array, flat: jax.Array, *, params: Any, n_cells: int) -> jax.Array:
    """Bin means (G * B,) of the corrected target at free channel coordinates theta
    (``params(theta, x0, basis)``: the influence's hashable parametrisation)."""
    p = params(theta, x0, basis)
    T = corrected_from_channels(ratings, observed, mask, alpha,
                                _aligned(p["confusion"], annotator_index, class_index),
                                xp=jnp)
    t = jnp.take_along_axis(T, cols.T, axis=1).T                     # (G, n)
    return jax.ops.segment_sum((t - conf).ravel(), flat, num_segments=n_cells) / conf.shape[1]


_jacobian = jax.jit(jax.jacfwd(_bin_means), static_argnames=("params", "n_cells"))


def _match(target: Any, fit_items: np.ndarray) -> tuple[np.ndarray, str]:
    """Position in the fit of each target row (-1: not fitted)."""
    items = getattr(target, "items", None)
    if items is None:
        if fit_items.size == target.n_items:
            return np.arange(target.n_items), "position (the target has no item ids)"
        return np.full(target.n_items, -1), "none (the target has no item ids)"
    return positions(items, fit_items), "item id"


def channel_term(target: Any, conf: np.ndarray, bins: np.ndarray, cols: np.ndarray,
                 n_bins: int, *, annotations: Any = None,
                 influence: Any = None) -> ChannelTerm | str:
    """The channel error's share of the covariance of the NC-ECE's bin means.

    Parameters
    ----------
    target : Target
        A corrected target built from a Dawid–Skene-family fit (``details['fit']``).
    conf, bins, cols : ndarray of shape (G, n)
        Confidences, bin indices and target columns per score group
        (:func:`noisycal.metrics.nc.intervals.nc_ece_items`).
    n_bins : int
    annotations : Annotations, optional
        The fitted data, when the fit does not carry them.
    influence : ChannelInfluence, optional
        Precomputed ``fit.influence()``
        (:class:`~noisycal.engines.influence.ChannelInfluence`).

    Returns
    -------
    ChannelTerm, or str
        A string says why the channel error could not be computed (the fit's reason when
        it offers no influence).
    """
    det = target.details
    fit = det.get("fit")
    if fit is None:
        return "the target's channels were given, not fitted"
    if influence is None:
        try:
            influence = fit.influence(annotations)
        except NotOffered as exc:
            return str(exc)
    G, n = conf.shape
    B = n_bins
    J, K = np.shape(det["ratings"])[1:]
    ai = det.get("annotator_index")
    ci = det.get("class_index")
    with x64():
        args = (jnp.asarray(influence.x0), jnp.asarray(influence.basis),
                jnp.asarray(det["ratings"]), jnp.asarray(det["observed"]),
                jnp.asarray(det["informative"]), jnp.asarray(det["weights"]),
                jnp.asarray(np.arange(J) if ai is None else ai),
                jnp.asarray(np.arange(K) if ci is None else ci),
                jnp.asarray(conf, jnp.float64), jnp.asarray(cols),
                jnp.asarray((np.arange(G)[:, None] * B + bins).ravel()))
        static = {"params": influence.parametrisation, "n_cells": G * B}
        theta0 = jnp.zeros(influence.basis.shape[1], dtype=jnp.float64)
        D = np.asarray(_jacobian(theta0, *args, **static))        # (J, p)
        mhat = np.asarray(_bin_means(theta0, *args, **static))

        def means(theta: jax.Array) -> jax.Array:
            return _bin_means(theta, *args, **static)

    T0 = np.asarray(target.values)
    fit_items = np.asarray(getattr(getattr(fit, "annotations", None) or annotations,
                                   "items", fit.items))
    pos, how = _match(target, fit_items)
    common = pos >= 0
    phi = np.zeros((n, influence.basis.shape[1]))
    phi[common] = influence.influence[influence.pattern[pos[common]]]
    t = np.take_along_axis(T0, cols.T, axis=1).T
    d = t - conf                                                 # (G, n)
    xs = np.zeros((G * B, phi.shape[1]))
    for g in range(G):
        np.add.at(xs, g * B + bins[g], d[g][:, None] * phi)
    Cx = (xs - np.outer(mhat, phi.sum(axis=0))) / n
    cross = Cx @ D.T
    cross = cross + cross.T
    channel = D @ influence.covariance @ D.T
    mask = np.flatnonzero(np.asarray(det["informative"]))

    def used_channels(theta: jax.Array) -> jax.Array:
        p = influence.parametrisation(theta, args[0], args[1])
        return _aligned(p["confusion"], args[6], args[7])[mask]

    with x64():
        curv = _curvature(means, D, influence.covariance, used_channels)
        effect = 0.0
        if influence.boundary_moves.shape[0]:
            moved = jax.vmap(lambda x: _bin_means(theta0, x, *args[1:], **static))(
                jnp.asarray(influence.x0 + influence.boundary_moves))
            effect = float(np.max(np.abs(np.asarray(moved) - mhat).sum(axis=1)) / G)
    return ChannelTerm(cross + channel, channel, cross, D, int(common.sum()), how,
                       int(influence.basis.shape[1]), curv, Cx, influence.covariance, means,
                       used_channels, effect)


#: Standard errors of the channel move in the linearity check.
LINEARITY_Z = 2.0
#: Leading channel directions the linearity check evaluates.
LINEARITY_DIRECTIONS = 3


def _curvature(means: Any, D: np.ndarray, Sigma: np.ndarray, used_channels: Any) -> float:
    r"""How far the bin means are from linear in the channels over their uncertainty.

    Along each of the leading directions :math:`\delta_k` of the channel error (the
    right singular vectors of :math:`D\Sigma^{1/2}`, scaled to one standard error), the
    bin means are evaluated exactly at :math:`\pm z\delta_k` (z = ``LINEARITY_Z``); the
    relative curvature is :math:`\|m(z\delta) + m(-z\delta) - 2m(0)\| /
    \|m(z\delta) - m(-z\delta)\|` (for a quadratic, the ratio of the second-order to
    the first-order change at z). inf when a move makes an informative channel singular
    (:func:`_singular`).
    """
    w, U = np.linalg.eigh(0.5 * (Sigma + Sigma.T))
    root = U * np.sqrt(np.clip(w, 0.0, None))                    # Sigma^{1/2}
    _, s, vt = np.linalg.svd(D @ root, full_matrices=False)
    worst = 0.0
    m0 = np.asarray(means(jnp.zeros(Sigma.shape[0])))
    for k in range(min(LINEARITY_DIRECTIONS, s.size)):
        if s[k] <= 1e-3 * s[0]:
            break
        step = LINEARITY_Z * (root @ vt[k])
        if np.any(_singular(used_channels, np.stack([step, -step]))):
            return float("inf")
        up, down = (np.asarray(means(jnp.asarray(x))) for x in (step, -step))
        slope = np.linalg.norm(up - down)
        if slope > 0:
            worst = max(worst, float(np.linalg.norm(up + down - 2 * m0) / slope))
    return worst


def _singular(used_channels: Any, thetas: np.ndarray) -> np.ndarray:
    """Which rows of ``thetas`` (r, p) make a used channel singular: not invertible
    (:func:`noisycal.correction.channels_invertible`) or of the other determinant sign
    than at the estimate. Bool array (r,)."""
    from ...correction.labels import channels_invertible

    at0 = np.asarray(used_channels(jnp.zeros(thetas.shape[1])))
    C = np.asarray(jax.vmap(used_channels)(jnp.asarray(thetas)))   # (r, J, K, K)
    r, J, K, _ = C.shape
    ok = np.asarray(channels_invertible(C.reshape(r * J, K, K))).reshape(r, J)
    same = np.sign(np.linalg.det(C)) == np.sign(np.linalg.det(at0))[None, :]
    return ~np.all(ok & same, axis=1)


#: Channel draws evaluated per vectorised chunk by :func:`channel_noise`.
NOISE_CHUNK = 250


def channel_noise(term: ChannelTerm, sample_cov: np.ndarray, n_sim: int, seed: Any
                  ) -> np.ndarray:
    r"""Draws of the bin means' error with the channel part pushed through exactly.

    With the channel error :math:`u = \sum_i \phi_i \sim N(0, \Sigma)` and the items'
    own terms :math:`s` (covariance :math:`\hat V_x`, covariance with u equal to C),
    :math:`s \mid u \sim N(C\Sigma^+ u,\ \hat V_x - C\Sigma^+C^T)`; a draw of the
    error is :math:`s + \hat m(\hat\theta + u) - \hat m(\hat\theta)`, the exact bin
    means at the moved channels instead of the linear :math:`D u`. Its covariance is the
    delta method's to first order; its shape follows the correction's nonlinearity (the
    inverse of a confusion matrix, or 1 / (b - a), is skewed when the channels are
    uncertain). A draw that makes a used channel singular has an unbounded corrected
    target: its row is inf.

    Parameters
    ----------
    term : ChannelTerm
    sample_cov : ndarray of shape (J, J)
        :math:`\hat V_x`, the covariance of the bin means with the channels fixed.
    n_sim : int
    seed : int or jax key

    Returns
    -------
    ndarray of shape (n_sim, J)
    """
    from ..._util.jax import as_numpy_rng
    from ...intervals.inversion import covariance_factor

    rng = as_numpy_rng(seed)
    Sigma = 0.5 * (term.covariance + term.covariance.T)
    root = covariance_factor(Sigma)
    u = rng.standard_normal((n_sim, root.shape[1])) @ root.T     # (n_sim, p)
    B = term.cross_factor @ np.linalg.pinv(Sigma)                  # (J, p)
    resid = sample_cov - B @ Sigma @ B.T
    e = rng.standard_normal((n_sim, sample_cov.shape[0])) @ covariance_factor(resid).T
    with x64():
        m0 = np.asarray(term.bin_means(jnp.zeros(Sigma.shape[0])))
        moved = np.concatenate([
            np.asarray(jax.vmap(term.bin_means)(jnp.asarray(u[i:i + NOISE_CHUNK])))
            for i in range(0, n_sim, NOISE_CHUNK)])
        singular = _singular(term.used_channels, u)
    out = u @ B.T + e + (moved - m0)
    bad = ~np.all(np.isfinite(out), axis=1) | singular
    out[bad] = UNBOUNDED
    return out


#: The value of every bin mean's error in a null draw whose channels are singular (an
#: unbounded corrected target); finite, so that the test's quantiles stay defined.
UNBOUNDED = 1e300
