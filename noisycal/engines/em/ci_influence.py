"""The sandwich influence of a classifier-informed Dawid–Skene EM fit on its channels.

Offered by :meth:`noisycal.annotators.ClassifierInformedFit.influence` (its NUTS fits
take the posterior influence of :mod:`noisycal.engines.influence`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._util.jax import x64
from ..influence import (
    ChannelInfluence,
    boundary_moves,
    full_coordinates,
    full_influence,
    same_items,
    scipy_cho_solve,
)

__all__ = ["classifier_informed_influence"]


def classifier_informed_influence(fit: Any, annotations: Any = None
                                  ) -> ChannelInfluence | str:
    r"""The sandwich influence of a classifier-informed EM fit on its channels.

    Item i's marginal log-likelihood is :math:`\ell_i = \log \sum_k \pi_{ik}
    \prod_r \mathrm{confusion}[j_r, k, y_r]` with the prior
    :math:`\pi_i = \mathrm{softmax}(a z_i + c)` (Raykar et al. 2010, "Learning From
    Crowds", the classifier fixed). The priors differ from item to item, so every item
    is its own pattern. With :math:`\theta` the free confusion entries (the coordinates
    of :func:`full_coordinates`), the scale and the free biases, :math:`\phi_i = H^{-1}
    s_i` (:func:`noisycal.engines.em.classifier_informed.ci_score_information`, centred
    over the items); the influence returned is on the channels: the confusion
    coordinates of :math:`\phi_i`, the scale and the biases dropped (nuisance
    parameters, whose uncertainty is already in :math:`\phi` through :math:`H^{-1}`).
    The prevalence row of ``x0`` is the fit's prevalence-equivalent, the mean prior
    :math:`\bar\pi = \mathrm{mean}_i \pi_i`; its influence is the derivative of
    :math:`\bar\pi` in (scale, bias) times their :math:`\phi_i` plus the item's own
    term :math:`(\pi_i - \bar\pi)/n`, as the channel refits have it (the corrected
    target uses the channels only, so the NC-ECE does not depend on this row).

    Confusion entries with fewer than ``MIN_COUNT`` ratings expected
    (:mod:`noisycal.engines.free_params`; an entry fitted at 0) are held fixed, as for
    Dawid–Skene: no free coordinate, and their rule-of-three moves in
    ``boundary_moves``, which the NC-ECE turns into the status 'weak_channels' when it
    matters. A MAP fit (``beta``) is linearised as if it were the MLE (the prior's
    curvature, of order 1/n, left out).

    Parameters
    ----------
    fit : ClassifierInformedFit
        An EM fit with its annotations and ``score_probs``.
    annotations : Annotations, optional
        The data the fit was made on, when the fit does not carry them.

    Returns
    -------
    ChannelInfluence, or str
        A string says why there is none (not EM, no fitted data, no finite estimates,
        scores that underflowed to 0, too many free parameters, an observed information
        that is not positive definite).
    """
    from noisycal.models.dawid_skene import make_data

    from ..free_params import MIN_COUNT
    from .classifier_informed import ci_score_information

    ann = annotations if annotations is not None else getattr(fit, "annotations", None)
    if ann is None:
        return "the fit does not carry the annotations it was fitted on"
    if why := same_items(fit, ann):
        return why
    if fit.method != "em":
        return ("the sandwich influence of a 'classifier_informed' fit needs an EM fit; "
                f"this fit is by {fit.method!r}")
    prev = np.atleast_2d(np.asarray(fit.group_prevalence, dtype=np.float64))
    conf = np.asarray(fit.confusion, dtype=np.float64)
    bias = np.asarray(fit.bias, dtype=np.float64)
    if not (np.all(np.isfinite(prev)) and np.all(np.isfinite(conf))
            and np.all(np.isfinite(bias)) and np.isfinite(fit.scale)):
        return "the fit has no finite estimates"
    with np.errstate(divide="ignore"):
        Z = np.log(np.asarray(fit.score_probs, dtype=np.float64))
    if not np.all(np.isfinite(Z)):
        return "some of the fit's classifier probabilities underflowed to 0"
    coords = full_coordinates(prev, conf)
    if isinstance(coords, str):
        return coords
    x0, basis, cols, names = coords
    K, J, n = prev.shape[1], conf.shape[0], ann.n_items
    arr = ann.engine_arrays()
    # expected ratings behind each confusion row, and each entry's (held below MIN_COUNT)
    n_conf = np.zeros((J, K))
    np.add.at(n_conf, np.asarray(arr.annotator), np.asarray(fit.item_posterior)[arr.item])
    expected = np.concatenate([np.full(K, np.inf), (conf * n_conf[:, :, None]).ravel()])
    keep = expected[cols] >= MIN_COUNT
    basis, cols, names = basis[:, keep], cols[keep], tuple(np.asarray(names)[keep].tolist())
    on_conf = cols >= K
    pc = int(on_conf.sum())
    with x64():
        data = make_data(arr.item, arr.annotator, arr.label, n_items=n, n_annotators=J,
                         n_classes=K, slots=False)
        s, info, G = ci_score_information(conf, basis[K:, on_conf], fit.scale, bias, data, Z)
    info = 0.5 * (info + info.T)
    try:
        chol = np.linalg.cholesky(info)
    except np.linalg.LinAlgError:
        return "the observed information is not positive definite at the estimate"
    phi = scipy_cho_solve(chol, s.T).T                          # (n, pc + K)
    phi = phi - phi.mean(axis=0)
    # the mean prior's moves: through (scale, bias), plus each item's own term, as a
    # refit (which averages the refitted priors over the resampled items) has it
    from scipy.special import softmax

    pri = softmax(float(fit.scale) * Z + bias, axis=1)
    dprev = phi[:, pc:] @ G.T + (pri - pri.mean(axis=0)) / n   # (n, K): moves of the row
    out = np.concatenate([dprev[:, cols[~on_conf]], phi[:, :pc]], axis=1)
    infl = full_influence(x0, basis, names, out, np.arange(n), np.ones(n, np.int64),
                          (1, J, K))
    return infl._replace(boundary_moves=boundary_moves(x0, basis, n_conf, K, False))
