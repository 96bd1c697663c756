r"""Per-item influence of a GLAD EM fit on its item-averaged channels and prevalence.

GLAD ("Whose Vote Should Count More: Optimal Integration of Labels from Labelers of
Unknown Expertise", Whitehill et al. 2009) has annotator abilities :math:`\alpha_j`, item
log-easiness :math:`b_i` (normal prior) and the prevalence :math:`\pi`. Its corrected
target uses each annotator's one-coin channel with accuracy

.. math:: A_j = \frac{1}{n_j}\sum_{r:\,j(r) = j} a(\alpha_j, b_{i(r)}), \qquad
          a(\alpha, b) = \mathrm{sigmoid}(\alpha e^{b}),

the mean over annotator j's :math:`n_j` ratings (``averaged_confusion``). The derivation
of the items' influence on :math:`(\pi, A)`:

1. **Profile.** Write :math:`\theta = (\alpha, t)`, t the free prevalence coordinates
   (:func:`noisycal.engines.influence.full_coordinates`: each entry but the largest,
   which moves against them; none when the prevalence is held fixed). EM maximises
   :math:`\sum_i [\ell_i(\theta, b_i) + \log p(b_i)] + \log p(\alpha)`, :math:`\ell_i`
   item i's marginal log-likelihood (its class summed out; for an item with a gold
   label :math:`g_i`, as GLAD's EM clamps its posterior to that class, the likelihood
   of its ratings at it, :math:`\ell_i = \log\pi_{g_i} + \sum_{r \in i}
   \log p(y_r \mid g_i, \alpha, b_i)`, its easiness still profiled out). Each
   :math:`b_i` enters item i only, so at the estimate :math:`\hat b_i(\theta)`
   maximises item i's own criterion
   :math:`\tilde\ell_i(\theta) = \max_b [\ell_i(\theta, b) + \log p(b)]`, and
   :math:`\hat\theta` maximises :math:`\sum_i \tilde\ell_i(\theta) + \log p(\alpha)`:
   an M-estimator whose criterion is a sum of independent per-item terms.
2. **Score and information.** By the envelope theorem the profile score of item i is
   the partial score at :math:`\hat b_i`, :math:`s_i = \partial_\theta \ell_i`, and the
   profile information is, with :math:`H_{\cdot\cdot,i}` item i's second derivatives of
   :math:`\ell_i + \log p(b_i)` (scalars in b),

   .. math:: I = -\nabla^2 \log p(\alpha) - \sum_i \big[H_{\theta\theta,i}
             - H_{\theta b,i} H_{bb,i}^{-1} H_{b\theta,i}\big].

   Then :math:`\hat\theta - \theta^* \approx \sum_i \phi_i`, :math:`\phi_i = I^{-1}
   (s_i - \bar s)` (centred: the scores sum to minus the ability prior's gradient), the
   convention of :func:`~noisycal.engines.influence.dawid_skene_influence`.
3. **Averaged channels.** :math:`\hat A_j` is a mean over ratings of
   :math:`a(\hat\alpha_j, \hat b_i(\hat\theta))`, with
   :math:`d\hat b_i/d\theta = -H_{bb,i}^{-1} H_{b\theta,i}`. Item i's influence on it
   is its own term plus the parameters' move,

   .. math:: \psi_{ij} = \frac{1}{n_j}\sum_{r \in i,\, j(r)=j} (a_r - \hat A_j)
             + D_j\,\phi_i, \qquad D_j = \frac{1}{n_j}\sum_{r:\,j(r)=j}
             \Big[\partial_\theta a_r + \partial_b a_r\,\frac{d\hat b_{i(r)}}
             {d\theta}\Big],

   and on the prevalence it is :math:`\phi_i`'s t part. A move :math:`dA_j` moves row
   k of channel j by :math:`dA_j (e_k - (1 - e_k)/(K - 1))`: the averaged channel is
   one-coin, so the influence is kept in one-coin coordinates (the prevalence's free
   entries, then one accuracy per annotator: J + K - 1 of them, not the J K (K - 1) of
   full confusion matrices).

What it carries, and what not: the sandwich :math:`\sum_i \psi_i\psi_i^T` is the
sampling variance of :math:`(\hat\pi, \hat A)` about the value they converge to when
items are drawn independently (the :math:`\hat b_i` are noisy, per-item estimates from
a few ratings: the own term's spread over items includes that noise, which is right,
since :math:`\hat A_j` averages the same noisy values). It does not carry the
incidental-parameter bias (with few ratings per item, :math:`\hat\theta` and
:math:`\hat A` converge to a value other than the true one, as any fixed-effects
estimate does) nor the approximation of the item-dependent channels by their average
(the target's status 'averaged_channels'): the interval covers the NC-ECE against the
averaged channels' limit.

Checked by simulation: the influence's variance of :math:`\hat A_j` against the spread
of refitted values over replications (tests/annotators/test_glad_influence.py; it
overstates the spread for weak annotators at a few hundred items). The averaged
accuracies are biased upward with few ratings per item (the incidental-parameter bias),
so the NC-ECE against a GLAD target can be biased, and its interval carries the
sampling error only: in the coverage study of the NC-ECE under each annotator model
(benchmarks/coverage_nc_ece_models.py, its ``em_glad`` rows, where GLAD is also
misspecified) it did not cover the true-label ECE.

Items with equal rating patterns (the same multiset of (annotator, label)) and the same
gold class (or none) have the same :math:`\hat b_i`, scores and own terms, so one row is
kept per pattern (:func:`noisycal.engines.patterns.collapse_patterns`, the gold class an
extra key). No array is n x n: the per-item
quantities are (n, J + K) and the rows kept (n_patterns, p).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import x64
from .glad import class_log_likelihood

__all__ = ["accuracy_jacobian", "glad_influence", "glad_profile"]


@partial(jax.jit, static_argnames=("n_items", "n_classes"))
def _profile(alpha: jax.Array, t: jax.Array, b: jax.Array, prev0: jax.Array,
             pbasis: jax.Array, priors: jax.Array, item: jax.Array, annotator: jax.Array,
             label: jax.Array, gold: jax.Array, *, n_items: int, n_classes: int) -> tuple:
    """Per-item scores, the cross and b-curvatures, and the summed theta Hessian."""
    J = alpha.shape[0]
    known = gold >= 0

    def item_ll(theta: jax.Array, b: jax.Array) -> jax.Array:
        a, tt = theta[:J], theta[J:]
        prev = prev0 + pbasis @ tt
        cll = class_log_likelihood(a, b, item, annotator, label, n_items, n_classes)
        joint = jnp.log(prev)[None, :] + cll
        at_gold = jnp.take_along_axis(joint, jnp.maximum(gold, 0)[:, None], axis=1)[:, 0]
        ll = jnp.where(known, at_gold, jax.scipy.special.logsumexp(joint, axis=1))
        return ll - 0.5 * priors[1, 0] * ((b - priors[1, 1]) / priors[1, 2]) ** 2

    theta0 = jnp.concatenate([alpha, t])
    scores = jax.jacfwd(lambda th: item_ll(th, b))(theta0)               # (n, p)
    grad_b = jax.grad(lambda th, bb: jnp.sum(item_ll(th, bb)), argnums=1)
    h_bb = jax.jvp(lambda bb: grad_b(theta0, bb), (b,), (jnp.ones_like(b),))[1]   # (n,)
    h_bt = jax.jacfwd(lambda th: grad_b(th, b))(theta0)                   # (n, p)
    h_tt = jax.hessian(lambda th: jnp.sum(item_ll(th, b)))(theta0)        # (p, p)
    prior_a = jnp.zeros_like(theta0).at[:J].set(priors[0, 0] / priors[0, 2] ** 2)
    return scores, h_bb, h_bt, h_tt - jnp.diag(prior_a)


def glad_profile(alpha: np.ndarray, b: np.ndarray, prevalence: np.ndarray,
                 fixed_prevalence: bool, ability_prior: tuple | None,
                 easiness_prior: tuple | None, item: np.ndarray, annotator: np.ndarray,
                 label: np.ndarray, n_items: int,
                 gold: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """GLAD's profile scores and information at a fit, and the easiness' derivatives.

    Parameters
    ----------
    alpha, b : ndarray
        Abilities (J,) and log-easiness (n_items,) at the estimate.
    prevalence : ndarray of shape (K,)
    fixed_prevalence : bool
        The prevalence was held fixed (no prevalence coordinates).
    ability_prior, easiness_prior : (mean, sd) or None
        The fit's priors.
    item, annotator, label : ndarray of int
        Each rating's codes.
    n_items : int
    gold : ndarray of int of shape (n_items,), optional
        Known class codes, -1 where unknown (the fit's ``details['gold_index']``): a gold
        item's likelihood is that of its ratings at its class, ``log pi_g + sum_r log
        p(y_r | g)``, as GLAD's EM clamps its posterior; the others' is summed over
        the classes.

    Returns
    -------
    dict
        ``scores`` (n_items, p) the partial scores ``s_i`` in theta = (alpha, t);
        ``information`` (p, p) the profile information ``I``; ``db`` (n_items, p) the
        derivative of each item's fitted log-easiness in theta; ``h_bb`` (n_items,) each
        item's second derivative in its own b (negative at a maximum); ``pbasis``
        (K, K - 1 or 0) the prevalence moves of t.
    """
    from ..influence import full_coordinates
    from .glad import _prior_array

    K = prevalence.shape[0]
    coords = full_coordinates(prevalence[None, :], np.zeros((0, K, K)))
    pbasis = np.zeros((K, 0)) if fixed_prevalence else coords[1]
    gold = np.full(n_items, -1) if gold is None else np.asarray(gold)
    with x64():
        out = _profile(jnp.asarray(alpha, jnp.float64),
                       jnp.zeros(pbasis.shape[1], jnp.float64),
                       jnp.asarray(b, jnp.float64), jnp.asarray(prevalence, jnp.float64),
                       jnp.asarray(pbasis, jnp.float64),
                       jnp.asarray(_prior_array(ability_prior, easiness_prior)),
                       *(jnp.asarray(x, jnp.int32) for x in (item, annotator, label, gold)),
                       n_items=n_items, n_classes=K)
    scores, h_bb, h_bt, h_tt = (np.asarray(x, np.float64) for x in out)
    info = -(h_tt - (h_bt / h_bb[:, None]).T @ h_bt)
    return {"scores": scores, "information": 0.5 * (info + info.T),
            "db": -h_bt / h_bb[:, None], "h_bb": h_bb, "pbasis": pbasis}


def accuracy_jacobian(alpha: np.ndarray, b: np.ndarray, db: np.ndarray, item: np.ndarray,
                      annotator: np.ndarray) -> np.ndarray:
    """``D``: the derivative of each averaged accuracy ``A_j`` in theta, (J, p).

    Parameters
    ----------
    alpha, b : ndarray
        Abilities (J,) and log-easiness (n_items,) at the estimate.
    db : ndarray of shape (n_items, p)
        Each fitted log-easiness' derivative in theta (:func:`glad_profile`).
    item, annotator : ndarray of int
        Each rating's codes.

    Returns
    -------
    ndarray of shape (J, p)
        ``mean over j's ratings of d sigmoid(alpha_j exp(b_i(theta))) / d theta``: through
        ``alpha_j`` (theta's coordinate j) and through ``b_i(theta)``.
    """
    J = alpha.shape[0]
    z = alpha[annotator] * np.exp(b[item])
    a = 1.0 / (1.0 + np.exp(-z))
    v = a * (1.0 - a)
    grad = (v * z)[:, None] * db[item]                                   # via b_i(theta)
    grad[np.arange(item.size), annotator] += v * np.exp(b[item])         # via alpha_j
    D = np.zeros((J, db.shape[1]))
    np.add.at(D, annotator, grad)
    return D / np.maximum(np.bincount(annotator, minlength=J), 1)[:, None]


def glad_influence(fit: Any, annotations: Any = None) -> Any:
    """The per-item influence of a GLAD EM fit on its prevalence and averaged channels.

    See the module docstring for the derivation.

    Parameters
    ----------
    fit : GLADFit
        A GLAD fit by EM with its ``annotations``.
    annotations : Annotations, optional
        The data the fit was made on, when the fit does not carry them.

    Returns
    -------
    ChannelInfluence, or str
        In one-coin coordinates (``one_coin=True``: the prevalence row's free entries,
        as :func:`noisycal.engines.influence.full_coordinates` has them, then the J
        averaged accuracies); one row per rating
        pattern (and gold class), centred over the items. A string says why there is
        none: no fitted data, a gold fit without its gold labels, estimates at the
        boundary or not finite, an information that is not positive definite, more than
        ``MAX_FREE`` free parameters (J + K - 1).
    """
    from scipy.linalg import cho_solve

    from ..identification import MAX_FREE
    from ..influence import full_coordinates, full_influence, same_items
    from ..patterns import collapse_patterns

    ann = annotations if annotations is not None else getattr(fit, "annotations", None)
    if ann is None:
        return "the fit does not carry the annotations it was fitted on"
    if why := same_items(fit, ann):
        return why
    det = fit.details
    gold = det.get("gold_index") if det.get("gold") else None
    if det.get("gold") and gold is None:
        return "the fit used gold labels but does not carry them"
    if "boundary" in fit.statuses:
        return ("a GLAD fit with status 'boundary': an ability, easiness or prevalence at "
                "the boundary has no normal sampling distribution")
    alpha = np.asarray(det["ability"], np.float64)
    b = np.asarray(det["log_easiness"], np.float64)
    prev = np.asarray(fit.group_prevalence, np.float64)[0]
    conf = np.asarray(fit.confusion, np.float64)
    if not all(np.all(np.isfinite(x)) for x in (alpha, b, prev, conf)):
        return "the fit has no finite estimates"
    arr = ann.engine_arrays()
    item, an, lab = (np.asarray(x, np.int64) for x in (arr.item, arr.annotator, arr.label))
    n, J, K = ann.n_items, alpha.shape[0], prev.shape[0]
    gold = np.full(n, -1, np.int64) if gold is None else np.asarray(gold, np.int64)
    prof = glad_profile(alpha, b, prev, det.get("fixed_prevalence") is not None,
                        det["ability_prior"], det["easiness_prior"], item, an, lab, n, gold)
    if not np.all(prof["h_bb"] < 0):
        return "an item's easiness is not at a strict maximum of its own likelihood"
    try:
        chol = np.linalg.cholesky(prof["information"])
    except np.linalg.LinAlgError:
        return "the profile information is not positive definite at the estimate"
    # a gold item shares its pattern only with gold items of its class (its likelihood
    # is at that class), a non-gold item only with non-gold items
    pattern, rep, counts = collapse_patterns(item, an * K + lab, n, extra=(gold,))
    s = prof["scores"]
    phi_t = cho_solve((chol, True), (s[rep] - s.mean(axis=0)).T).T    # (n_patterns, p_th)
    # the averaged accuracies: own terms and their derivative D in theta
    a = 1.0 / (1.0 + np.exp(-alpha[an] * np.exp(b[item])))
    n_j = np.bincount(an, minlength=J).astype(np.float64)
    acc = np.bincount(an, weights=a, minlength=J) / np.maximum(n_j, 1.0)
    D = accuracy_jacobian(alpha, b, prof["db"], item, an)
    pos = np.full(n, -1, np.int64)
    pos[rep] = np.arange(rep.size)
    keep = pos[item] >= 0
    own = np.zeros((rep.size, J))
    np.add.at(own, (pos[item[keep]], an[keep]), (a - acc[an])[keep] / n_j[an[keep]])
    psi = own + phi_t @ D.T                                             # (n_patterns, J)
    # one-coin coordinates (the averaged channel of annotator j is one-coin at A_j):
    # the prevalence's free entries (against its largest), then the J accuracies
    pcoords = full_coordinates(prev[None, :], np.zeros((0, K, K)))
    if isinstance(pcoords, str) or pcoords[2].size + J > MAX_FREE:
        return f"more than MAX_FREE={MAX_FREE} free parameters"
    px0, pbasis, _, pnames = pcoords
    x0 = np.concatenate([px0, conf[:, 0, 0]])   # the fit's own averaged accuracies
    basis = np.zeros((K + J, pbasis.shape[1] + J))
    basis[:K, :pbasis.shape[1]] = pbasis
    basis[K:, pbasis.shape[1]:] = np.eye(J)
    names = (*pnames, *(f"accuracy[{j}]" for j in range(J)))
    phi = np.zeros((rep.size, basis.shape[1]))
    n_t = prof["pbasis"].shape[1]
    if n_t:
        phi[:, :n_t] = phi_t[:, J:]           # the prevalence's free entries come first
    phi[:, pbasis.shape[1]:] = psi
    w = counts.astype(np.float64)
    phi -= (w @ phi) / w.sum()
    return full_influence(x0, basis, names, phi, pattern, counts, (1, J, K),
                          one_coin=True)
