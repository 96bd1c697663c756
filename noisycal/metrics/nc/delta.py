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
from ...correction.labels import masked_inverses
from ...exceptions import NotOffered

__all__ = ["ChannelTerm", "LinearForm", "linear_form", "channel_term", "channel_noise",
           "UNBOUNDED", "LINEARITY_Z", "LINEARITY_DIRECTIONS", "NOISE_CHUNK",
           "NOISE_ENTRIES"]


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
    bin_means: BinMeans
    used_channels: UsedChannels
    boundary_effect: float
    n_entries: int = 0


def _aligned(conf: jax.Array, annotator_index: jax.Array, class_index: jax.Array
             ) -> jax.Array:
    """The fit's channels in the target's annotator and class order."""
    return conf[annotator_index][:, class_index][:, :, class_index]


@partial(jax.jit, static_argnames=("params",))
def _used_channels(thetas: jax.Array, x0: jax.Array, basis: jax.Array,
                   annotator_index: jax.Array, class_index: jax.Array, mask: jax.Array, *,
                   params: Any) -> jax.Array:
    """The informative annotators' aligned channels (r, J_used, K, K) at each row of
    ``thetas`` (r, p); one compiled program instead of every operation compiled alone."""
    def one(theta: jax.Array) -> jax.Array:
        return _aligned(params(theta, x0, basis)["confusion"], annotator_index,
                        class_index)[mask]

    return jax.vmap(one)(thetas)


class UsedChannels(NamedTuple):
    """``used_channels(theta) -> (J_used, K, K)``: the informative annotators' channels
    in the target's order at free coordinates ``theta``; :meth:`many` evaluates rows of
    coordinates together.

    Attributes
    ----------
    params : callable
        The influence's hashable parametrisation ``params(theta, x0, basis)``.
    x0, basis, annotator_index, class_index, mask : jax.Array
        Its arguments, the target's annotator and class order and the informative
        annotators' positions.
    """

    params: Any
    x0: jax.Array
    basis: jax.Array
    annotator_index: jax.Array
    class_index: jax.Array
    mask: jax.Array

    def many(self, thetas: Any) -> jax.Array:
        """The channels at each row of ``thetas`` (r, p): (r, J_used, K, K)."""
        return _used_channels(jnp.asarray(thetas), self.x0, self.basis, self.annotator_index,
                              self.class_index, self.mask, params=self.params)

    def __call__(self, theta: Any) -> jax.Array:
        return self.many(jnp.asarray(theta)[None])[0]


class LinearForm(NamedTuple):
    r"""The bin means as a linear function of the inverse channels.

    A corrected label is a weighted sum of rows of the inverse channels,
    :math:`T_i[c] = \sum_j w_{ij}\,(C_j^{-1})_{A_{ij} c}` (weights renormalised over
    each item's observed informative raters, held fixed), so each bin mean is
    :math:`m_b(\theta) = \sum_{j,a,c} S_{b j a c}\,(C_j(\theta)^{-1})_{ac} - \bar
    c_b` with :math:`S_{bjac} = \frac1n\sum_{i \in b} w_{ij} 1\{A_{ij} = a,\ c_{g(i)} =
    c\}`. ``S`` has at most ``n_cells * J * K * K`` nonzero entries whatever n is: a
    channel draw costs O(J K^3 + nnz), not the O(n J K) of recomputing every
    corrected label, and nothing of size n is kept (:func:`linear_form`).

    Attributes
    ----------
    index : ndarray of int, shape (nnz,)
        Flat position ``(j * K + a) * K + c`` in the inverse channels.
    weight : ndarray of shape (nnz,)
        The entries of S (zero in the padding).
    cell : ndarray of int, shape (nnz,)
        Bin cell of each entry.
    offset : ndarray of shape (n_cells,)
        :math:`\bar c_b`, the summed confidences of each cell over n.
    """

    index: np.ndarray
    weight: np.ndarray
    cell: np.ndarray
    offset: np.ndarray


#: The nonzero entries of a :class:`LinearForm` are padded to a power of two, at least
#: this many, so that data sets of similar size reuse one compiled program.
FORM_MIN_ENTRIES = 256


def linear_form(ratings: np.ndarray, observed: np.ndarray, mask: np.ndarray,
                alpha: np.ndarray, conf: np.ndarray, cols: np.ndarray,
                cells: np.ndarray, n_cells: int) -> LinearForm:
    """The corrected target's bin means as a :class:`LinearForm` of the inverse channels.

    Parameters
    ----------
    ratings : ndarray of shape (n, J, K)
        One-hot ratings (zero rows where missing), as the corrected target stores them.
    observed : ndarray of bool, shape (n, J)
    mask : ndarray of bool, shape (J,)
        Informative annotators.
    alpha : ndarray of shape (J,)
        Aggregation weights.
    conf, cols, cells : ndarray of shape (G, n)
        Confidences, target columns and bin cells (``g * B + bin``) per score group.
    n_cells : int

    Returns
    -------
    LinearForm
        Equal, up to rounding, to the bin means of
        :func:`noisycal.correction.corrected_from_channels` at every channel.
    """
    G, n = conf.shape
    J, K = ratings.shape[1:]
    label = np.argmax(ratings, axis=2)                                    # (n, J)
    w = np.where(np.asarray(observed) & np.asarray(mask)[None, :],
                 np.asarray(alpha, dtype=float)[None, :], 0.0)
    w = w / w.sum(axis=1, keepdims=True) * ratings.sum(axis=2) / n        # (n, J)
    item, ann = np.nonzero(w)
    base = ann * K + label[item, ann]                                     # (m,)
    w_rated = w[item, ann]
    keys, weights = [], []
    for g in range(G):   # one group at a time: m keys, never G x m
        key = (cells[g, item].astype(np.int64) * (J * K) + base) * K + cols[g, item]
        u, inverse = np.unique(key, return_inverse=True)
        keys.append(u)
        weights.append(np.bincount(inverse, weights=w_rated, minlength=u.size))
    key = np.concatenate(keys)
    u, inverse = np.unique(key, return_inverse=True)
    weight = np.bincount(inverse, weights=np.concatenate(weights), minlength=u.size)
    pad = max(FORM_MIN_ENTRIES, 1 << int(np.ceil(np.log2(max(u.size, 1)))))
    index = np.zeros(pad, dtype=np.int64)
    cell = np.zeros(pad, dtype=np.int64)
    wpad = np.zeros(pad)
    index[:u.size] = u % (J * K * K)
    cell[:u.size] = u // (J * K * K)
    wpad[:u.size] = weight
    offset = np.bincount(cells.ravel(), weights=np.asarray(conf, float).ravel(),
                         minlength=n_cells) / n
    return LinearForm(index, wpad, cell, offset)


@partial(jax.jit, static_argnames=("params", "n_cells"))
def _bin_means(theta: jax.Array, x0: jax.Array, basis: jax.Array, index: jax.Array,
               weight: jax.Array, cell: jax.Array, offset: jax.Array, mask: jax.Array,
               annotator_index: jax.Array, class_index: jax.Array, *, params: Any,
               n_cells: int) -> jax.Array:
    """Bin means (G * B,) of the corrected target at free channel coordinates theta
    (``params(theta, x0, basis)``: the influence's hashable parametrisation), from the
    :class:`LinearForm` ``(index, weight, cell, offset)``; the inverse channels as
    :func:`noisycal.correction.corrected_from_channels` takes them (zero outside the
    informative ``mask``)."""
    p = params(theta, x0, basis)
    C = _aligned(p["confusion"], annotator_index, class_index)
    inv = masked_inverses(C, mask, jnp).ravel()
    terms = jnp.where(weight != 0, weight * inv[index], 0.0)      # padding stays 0
    return jax.ops.segment_sum(terms, cell, num_segments=n_cells) - offset


_jacobian = jax.jit(jax.jacfwd(_bin_means), static_argnames=("params", "n_cells"))


@partial(jax.jit, static_argnames=("params", "n_cells"))
def _bin_means_rows(thetas: jax.Array, *args: jax.Array, params: Any, n_cells: int
                    ) -> jax.Array:
    """:func:`_bin_means` at each row of ``thetas`` (r, p): (r, G * B)."""
    return jax.vmap(lambda t: _bin_means(t, *args, params=params, n_cells=n_cells))(thetas)


class BinMeans(NamedTuple):
    """``bin_means(theta) -> (G * B,)``: the exact bin means at free channel coordinates
    theta (vmappable; theta = 0 at the estimate). Every evaluation runs one compiled
    program on ``rows`` coordinates at once (zero rows pad the last block), so the
    estimate, the linearity check's moves and :func:`channel_noise`'s draws share one
    program instead of compiling one for a single point and one per chunk size.

    Attributes
    ----------
    args : tuple of jax.Array
        :func:`_bin_means`' arguments after ``theta``.
    params : callable
        The influence's hashable parametrisation.
    n_cells : int
        G * B.
    rows : int
        Coordinates per evaluation (:func:`noise_chunk`).
    """

    args: tuple
    params: Any
    n_cells: int
    rows: int

    def many(self, thetas: Any) -> np.ndarray:
        """The bin means at each row of ``thetas`` (r, p): (r, G * B)."""
        thetas = np.asarray(thetas, dtype=np.float64)
        out = []
        for i in range(0, thetas.shape[0], self.rows):
            block = thetas[i:i + self.rows]
            padded = np.zeros((self.rows, thetas.shape[1]))
            padded[:block.shape[0]] = block
            out.append(np.asarray(_bin_means_rows(jnp.asarray(padded), *self.args,
                                                  params=self.params,
                                                  n_cells=self.n_cells))[:block.shape[0]])
        return np.concatenate(out)

    def __call__(self, theta: Any) -> Any:
        if isinstance(theta, jax.core.Tracer):   # under a transformation: one point
            return _bin_means(theta, *self.args, params=self.params, n_cells=self.n_cells)
        return self.many(np.asarray(theta)[None])[0]


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
    ratings = np.asarray(det["ratings"])
    J, K = ratings.shape[1:]
    ai = det.get("annotator_index")
    ci = det.get("class_index")
    cells = np.arange(G)[:, None] * B + bins
    form = linear_form(ratings, np.asarray(det["observed"]), np.asarray(det["informative"]),
                       np.asarray(det["weights"]), conf, cols, cells, G * B)
    with x64():
        args = (jnp.asarray(influence.x0), jnp.asarray(influence.basis),
                jnp.asarray(form.index), jnp.asarray(form.weight), jnp.asarray(form.cell),
                jnp.asarray(form.offset), jnp.asarray(det["informative"]),
                jnp.asarray(np.arange(J) if ai is None else ai),
                jnp.asarray(np.arange(K) if ci is None else ci))
        static = {"params": influence.parametrisation, "n_cells": G * B}
        theta0 = jnp.zeros(influence.basis.shape[1], dtype=jnp.float64)
        D = np.asarray(_jacobian(theta0, *args, **static))        # (J, p)
        means = BinMeans(args, influence.parametrisation, G * B,
                         noise_chunk(int(form.index.size)))
        mhat = np.asarray(means(theta0))

    T0 = np.asarray(target.values)
    fit_items = np.asarray(getattr(getattr(fit, "annotations", None) or annotations,
                                   "items", fit.items))
    pos, how = _match(target, fit_items)
    common = pos >= 0
    t = np.take_along_axis(T0, cols.T, axis=1).T
    fitted = influence.pattern[pos[common]]
    phi_sum = np.bincount(fitted, minlength=influence.influence.shape[0]) @ influence.influence
    Cx = (_cell_influence(t - conf, cells, G * B, influence.influence, fitted, common)
          - np.outer(mhat, phi_sum)) / n
    cross = Cx @ D.T
    cross = cross + cross.T
    channel = D @ influence.covariance @ D.T
    mask = np.flatnonzero(np.asarray(det["informative"]))

    used_channels = UsedChannels(influence.parametrisation, args[0], args[1], args[7],
                                 args[8], jnp.asarray(mask))

    with x64():
        curv = _curvature(means, D, influence.covariance, used_channels)
        effect = 0.0
        if influence.boundary_moves.shape[0]:
            moved = jax.vmap(lambda x: _bin_means(theta0, x, *args[1:], **static))(
                jnp.asarray(influence.x0 + influence.boundary_moves))
            effect = float(np.max(np.abs(np.asarray(moved) - mhat).sum(axis=1)) / G)
    return ChannelTerm(cross + channel, channel, cross, D, int(common.sum()), how,
                       int(influence.basis.shape[1]), curv, Cx, influence.covariance, means,
                       used_channels, effect, int(form.index.size))


def _cell_influence(d: np.ndarray, cells: np.ndarray, n_cells: int, influence: np.ndarray,
                    fitted: np.ndarray, common: np.ndarray) -> np.ndarray:
    """``sum_g sum_i d_gi 1{i in cell} phi_i`` (n_cells, p), phi_i the influence of the
    item's rating pattern (zero for items the channels were not fitted on): a sparse
    (cell x pattern) sum of d times the patterns' influence, never an (n, p) array."""
    from scipy import sparse

    G = d.shape[0]
    rows = cells[:, common].ravel()
    colidx = np.tile(fitted, G)
    W = sparse.csr_matrix((d[:, common].ravel(), (rows, colidx)),
                          shape=(n_cells, influence.shape[0]))
    return np.asarray(W @ influence)


#: Standard errors of the channel move in the linearity check.
LINEARITY_Z = 2.0
#: Leading channel directions the linearity check evaluates.
LINEARITY_DIRECTIONS = 3


def _curvature(means: BinMeans, D: np.ndarray, Sigma: np.ndarray,
               used_channels: UsedChannels) -> float:
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
        up, down = np.asarray(means.many(np.stack([step, -step])))
        slope = np.linalg.norm(up - down)
        if slope > 0:
            worst = max(worst, float(np.linalg.norm(up + down - 2 * m0) / slope))
    return worst


def _singular(used_channels: UsedChannels, thetas: np.ndarray) -> np.ndarray:
    """Which rows of ``thetas`` (r, p) make a used channel singular: not invertible
    (:func:`noisycal.correction.channels_invertible`) or of the other determinant sign
    than at the estimate. Bool array (r,)."""
    from ...correction.labels import channels_invertible

    # the estimate and the moves in one call
    both = np.asarray(used_channels.many(np.vstack([np.zeros((1, thetas.shape[1])),
                                                     thetas])))
    at0, C = both[0], both[1:]
    r, J, K, _ = C.shape
    ok = np.asarray(channels_invertible(C.reshape(r * J, K, K))).reshape(r, J)
    same = np.sign(np.linalg.det(C)) == np.sign(np.linalg.det(at0))[None, :]
    return ~np.all(ok & same, axis=1)


#: Channel draws evaluated per vectorised chunk by :func:`channel_noise` (fewer when a
#: chunk would hold more than ``NOISE_ENTRIES`` entries of the linear form).
NOISE_CHUNK = 250
#: Entries of the bin means' linear form held at once by :func:`channel_noise` (8 bytes
#: each): bounds its memory whatever the number of items and classes.
NOISE_ENTRIES = 2 ** 23


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
        moved = np.asarray(term.bin_means.many(u))   # in chunks of its compiled size
        singular = _singular(term.used_channels, u)
    out = u @ B.T + e + (moved - m0)
    bad = ~np.all(np.isfinite(out), axis=1) | singular
    out[bad] = UNBOUNDED
    return out


def noise_chunk(n_entries: int) -> int:
    """Channel draws evaluated per vectorised chunk for a linear form of ``n_entries``
    entries: ``NOISE_CHUNK``, fewer when a chunk would hold more than ``NOISE_ENTRIES``."""
    return max(1, min(NOISE_CHUNK, NOISE_ENTRIES // max(n_entries, 1)))


#: The value of every bin mean's error in a null draw whose channels are singular (an
#: unbounded corrected target); finite, so that the test's quantiles stay defined.
UNBOUNDED = 1e300
