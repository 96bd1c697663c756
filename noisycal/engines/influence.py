r"""Per-item influence of a Dawid–Skene-family fit on its parameters (the sandwich).

A maximum-likelihood estimate :math:`\hat\theta` of the free parameters (the free
parametrisation of :mod:`noisycal.engines.free_params`: interior entries of each
probability row moved against the row's largest entry; for a constrained channel its own
coordinates, a one-coin accuracy, a class-conditional accuracy per annotator and class,
or MACE's spamming probability and strategy rows) satisfies, to first order,

.. math:: \hat\theta - \theta_0 \approx \sum_i \phi_i, \qquad
          \phi_i = H^{-1} s_i, \quad s_i = \nabla_\theta \ell_i(\hat\theta), \quad
          H = -\nabla^2_\theta \sum_i \ell_i(\hat\theta),

with :math:`\ell_i` item i's marginal log-likelihood (the latent class summed out). The
:math:`\phi_i` are the items' *influence* on the estimate; :math:`\sum_i \phi_i\phi_i^T`
is the sandwich covariance :math:`H^{-1}(\sum_i s_i s_i^T)H^{-1}` (White 1982, "Maximum
likelihood estimation of misspecified models"), which equals the inverse observed
information when the model holds. A statistic computed from the same items and the
estimated channels then has the influence ``own term + D phi_i`` (D its derivative in
theta), which is how :mod:`noisycal.metrics.nc.delta` carries the channel
estimation error, and its correlation with the items' own terms, into NC-ECE.

One path serves every channel of the family (Dawid–Skene, one-coin, grouped,
class-conditional, MACE): the per-item marginal log-likelihood of
:func:`noisycal.models.dawid_skene.item_log_likelihood` at the confusion that
:func:`~noisycal.engines.free_params.channel_from_flat` makes of the model's own
coordinates, differentiated by JAX.

Items with identical rating patterns have identical scores, so everything is computed
once per pattern (:func:`noisycal.engines.patterns.pattern_data`). Entries held fixed by
the free parametrisation (fewer than one item or rating expected on a side) contribute
no uncertainty: with so few events a rate's sampling distribution is not normal, and a
rate fitted at the boundary has no score there.

A NUTS fit's influence is that of its posterior mean, from its draws
(:func:`posterior_influence`, the Bayesian infinitesimal jackknife): one path for every
model fitted by NUTS, the hierarchical, item-difficulty and classifier-informed models
included. The classifier-informed model's EM fit, whose items' priors come from a
classifier's scores, has its own sandwich
(:func:`noisycal.engines.em.ci_influence.classifier_informed_influence`, offered by the
fit's ``influence``).

A fit offers its influence as :meth:`~noisycal.engines.results.AnnotatorFit.influence`
(the fit protocol, :class:`~noisycal.targets.ChannelFit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from .._util.jax import x64

__all__ = ["ChannelInfluence", "FreeParameters", "channel_influence", "dawid_skene_influence",
           "hui_walter_influence", "posterior_influence", "params_from_free",
           "boundary_moves", "RULE_OF_THREE", "CHANNELS", "MIN_INFLUENCE_DRAWS",
           "MAX_NOISE_SHARE", "POSTERIOR_MODELS", "full_coordinates", "full_influence",
           "same_items"]

#: The channel of each model whose influence is its marginal likelihood's sandwich: the
#: ``one_coin`` switch of :mod:`noisycal.engines.free_params` (False: full confusion
#: matrices; True: one-coin accuracies; or the constrained channel's name).
CHANNELS = {"dawid_skene": False, "grouped": False, "one_coin": True,
            "class_conditional": "class_conditional", "mace": "mace"}
#: Models of :data:`CHANNELS` whose sandwich is offered for EM fits only (their NUTS fits
#: get :func:`posterior_influence`).
EM_ONLY = ("class_conditional", "mace")


class ChannelInfluence(NamedTuple):
    """The influence of each fitted item on a Dawid–Skene-family fit's free parameters.

    Attributes
    ----------
    x0 : ndarray of shape (L * K + m,)
        The flat parameters at the estimate: group prevalence rows, then the channel's
        coordinates (:func:`~noisycal.engines.free_params.channel_flat`: the confusion
        matrices, m = J K K; one-coin accuracies, m = J; class-conditional accuracies,
        m = J K; MACE's spamming probabilities then strategy rows, m = J + J K).
    basis : ndarray of shape (x0.size, p)
        The free directions: ``x = x0 + basis @ theta`` (theta = 0 at the estimate).
    names : tuple of str
        The free parameters.
    influence : ndarray of shape (n_patterns, p)
        ``phi`` of one item of each rating pattern.
    pattern : ndarray of shape (n_items,)
        The rating pattern of each fitted item (in the fit's item order).
    counts : ndarray of shape (n_patterns,)
        Items per pattern.
    information : ndarray of shape (p, p)
        The observed information ``H`` (negative Hessian of the log-likelihood).
    covariance : ndarray of shape (p, p)
        The sandwich ``sum_i phi_i phi_i^T``.
    one_coin : bool or {'class_conditional', 'mace'}
        The channel the confusion part of ``x0`` parametrises (False: the confusion
        matrices; True: one accuracy per annotator; see :data:`CHANNELS`).
    shape : tuple of int
        ``(L, J, K)``.
    boundary_moves : ndarray of shape (r, x0.size)
        One row per channel entry held fixed at the boundary (:func:`boundary_moves`):
        the move of ``x0`` that takes it to the upper 95% bound of a rate with no
        observed event, ``3 / N`` (the rule of three), N the expected items behind its
        row; what the delta method cannot see.
    """

    x0: np.ndarray
    basis: np.ndarray
    names: tuple[str, ...]
    influence: np.ndarray
    pattern: np.ndarray
    counts: np.ndarray
    information: np.ndarray
    covariance: np.ndarray
    one_coin: bool | str
    shape: tuple[int, int, int]
    boundary_moves: np.ndarray

    @property
    def parametrisation(self) -> FreeParameters:
        """The map from free coordinates to the parameters (:class:`FreeParameters`)."""
        channel = self.one_coin if isinstance(self.one_coin, str) else bool(self.one_coin)
        return FreeParameters(tuple(int(v) for v in self.shape), channel)


@dataclass(frozen=True)
class FreeParameters:
    """The parameters at free coordinates, as a hashable callable.

    ``FreeParameters(shape, one_coin)(theta, x0, basis)`` is
    :func:`params_from_free`; equal settings compare and hash equal, so a compiled
    function that takes it as a static argument is compiled once per model shape.

    Parameters
    ----------
    shape : tuple of int
        ``(L, J, K)``.
    one_coin : bool or {'class_conditional', 'mace'}

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal.engines.influence import FreeParameters
    >>> x0 = np.array([0.6, 0.4, 0.9, 0.1, 0.2, 0.8])          # L = J = 1, K = 2
    >>> basis = np.array([[-1.0], [1.0], [0], [0], [0], [0]])  # the prevalence moves
    >>> p = FreeParameters((1, 1, 2), False)(np.array([0.1]), x0, basis)
    >>> np.round(np.asarray(p["prevalence"]), 3).tolist()
    [[0.5, 0.5]]
    """

    shape: tuple[int, int, int]
    one_coin: bool | str

    def __call__(self, theta: jax.Array, x0: jax.Array, basis: jax.Array) -> dict:
        """``{'prevalence', 'confusion'}`` at ``theta`` (JAX-traceable)."""
        return params_from_free(theta, x0, basis, self.shape, self.one_coin)


def params_from_free(theta: jax.Array, x0: jax.Array, basis: jax.Array, shape: tuple,
                     one_coin: bool | str) -> dict:
    """The model parameters ``{'prevalence', 'confusion'}`` at free coordinates ``theta``.

    Entries that no free direction moves stay at ``x0`` exactly (a select, so a zero entry
    keeps a finite derivative of ``log``).

    Parameters
    ----------
    theta : array of shape (p,)
    x0, basis : arrays
        As in :class:`ChannelInfluence`.
    shape : tuple of int
        ``(L, J, K)``.
    one_coin : bool or {'class_conditional', 'mace'}
        The channel (:func:`~noisycal.engines.free_params.channel_from_flat`).

    Returns
    -------
    dict
        ``prevalence`` (L, K) and ``confusion`` (J, K, K).
    """
    from .free_params import channel_from_flat

    L, J, K = shape
    moved = jnp.any(basis != 0, axis=1)
    x = jnp.where(moved, x0 + basis @ theta, x0)
    prev = x[:L * K].reshape(L, K)
    return {"prevalence": prev, "confusion": channel_from_flat(x[L * K:], one_coin, J, K)}


@partial(jax.jit, static_argnames=("sizes", "shape", "one_coin"))
def _scores_and_hessian(x0: jax.Array, basis: jax.Array, weights: jax.Array, arrays: tuple,
                        gold: jax.Array | None = None, *, sizes: tuple, shape: tuple,
                        one_coin: bool | str) -> tuple[jax.Array, jax.Array]:
    from noisycal.models.dawid_skene import item_log_likelihood, joint_log_likelihood

    from .em.dawid_skene import join_data

    data = join_data(arrays, sizes)

    def per_pattern(theta: jax.Array) -> jax.Array:
        params = params_from_free(theta, x0, basis, shape, one_coin)
        return item_log_likelihood(joint_log_likelihood(params, data), gold)

    def total(theta: jax.Array) -> jax.Array:
        return jnp.sum(weights * per_pattern(theta))

    theta0 = jnp.zeros(basis.shape[1], dtype=x0.dtype)
    scores = jax.jacfwd(per_pattern)(theta0)                      # (n_patterns, p)
    hvp = lambda v: jax.jvp(jax.grad(total), (theta0,), (v,))[1]  # noqa: E731
    hess = jax.lax.map(hvp, jnp.eye(basis.shape[1], dtype=x0.dtype), batch_size=16)
    return scores, -hess


def dawid_skene_influence(fit: Any, annotations: Any = None) -> ChannelInfluence | str:
    """The per-item influence of a Dawid–Skene-family fit (see the module docstring).

    Dawid–Skene, one-coin and grouped fits (EM, MLE; also a NUTS fit linearised at
    its posterior mean, though :func:`channel_influence` gives NUTS fits
    :func:`posterior_influence`) and EM fits of the class-conditional and MACE channels
    (:data:`CHANNELS`), each in its own free coordinates: the scores and the Hessian are
    those of the same marginal likelihood at the confusion the coordinates make.

    Parameters
    ----------
    fit : AnnotatorFit
        A fit of the Dawid–Skene family with finite estimates and its ``annotations``
        (the data it was fitted on).
    annotations : Annotations, optional
        The data the fit was made on, when the fit does not carry them.

    Returns
    -------
    ChannelInfluence, or str
        A string says why no influence could be computed (no fitted data,
        a model or engine not covered, too many free parameters, an information matrix
        that is not positive definite).

    Notes
    -----
    A coordinate within :data:`~noisycal.engines.free_params.MIN_COUNT` expected events
    of 0 or 1 (a MACE annotator fitted never to spam, an accuracy fitted at 1) is held
    fixed, as for Dawid–Skene: its sandwich variance is 0 and its rule-of-three move is
    in ``boundary_moves``, which the NC-ECE turns into a status when it matters.
    """
    from .em.dawid_skene import bucketed, split_data
    from .free_params import channel_flat, free_parameters
    from .identification import MAX_FREE
    from .patterns import pattern_data

    ann = annotations if annotations is not None else getattr(fit, "annotations", None)
    if ann is None:
        return "the fit does not carry the annotations it was fitted on"
    gold = fit.details.get("gold_index") if fit.details.get("gold") else None
    if fit.details.get("gold") and gold is None:
        return "the fit used gold labels but does not carry them"
    if fit.model == "item_difficulty":
        return ("an 'item_difficulty' fit has no sandwich influence: the model has no "
                "maximum-likelihood fit (NUTS only; its joint mode is degenerate) and its "
                "channels vary by item, so a sandwich would need the likelihood with each "
                "item's difficulty integrated out; its NUTS fit's influence comes from the "
                "posterior draws")
    if fit.model not in CHANNELS:
        return f"the channel influence of a {fit.model!r} fit is not implemented"
    if fit.model in EM_ONLY and fit.method != "em":
        return (f"the channel influence of a {fit.model!r} fit is offered for EM fits; "
                f"this fit is by {fit.method!r}")
    prev = np.atleast_2d(np.asarray(fit.group_prevalence, dtype=np.float64))
    conf = np.asarray(fit.confusion, dtype=np.float64)
    if not (np.all(np.isfinite(prev)) and np.all(np.isfinite(conf))):
        return "the fit has no finite estimates"
    L, K = prev.shape
    J = conf.shape[0]
    one_coin = CHANNELS[fit.model]
    group = np.asarray(fit.details.get("group_index", np.zeros(ann.n_items, np.int64)))
    arr = ann.engine_arrays()
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                           n_annotators=J, n_classes=K, group=group if L > 1 else None,
                           n_groups=L, gold=None if gold is None else np.asarray(gold))
    w = np.asarray(pd_.counts, dtype=np.float64)
    labels = {"prevalence": [f"prevalence[{g}, {k}]" for g in range(L) for k in range(K)],
              "confusion": [f"confusion[{j}, {t}, {o}]" for j in range(J) for t in range(K)
                            for o in range(K)],
              "accuracy": [f"accuracy[{j}]" for j in range(J)],
              "class_accuracy": [f"accuracy[{j}, {k}]" for j in range(J) for k in range(K)],
              "spam": [f"spam[{j}]" for j in range(J)],
              "strategy": [f"strategy[{j}, {k}]" for j in range(J) for k in range(K)]}
    _, B, names, n_conf = free_parameters(prev, conf, pd_.data, w, pd_.gold,
                                          one_coin=one_coin, labels=labels)
    if len(names) > MAX_FREE:
        return f"more than MAX_FREE={MAX_FREE} free parameters"
    x0 = np.concatenate([prev.ravel(), channel_flat(conf, one_coin)])
    n_pat = w.shape[0]
    with x64():
        # patterns of weight 0 up to a bucketed size, as for EM and the identification
        # Hessians: new data of a similar size reuse the compiled scores and Hessian (the
        # padded patterns add nothing to the Hessian; their scores are dropped)
        data, _, jgold, jw = bucketed(pd_.data, np.zeros((n_pat, K)), pd_.gold, w)
        arrays, sizes = split_data(data)
        scores, info = _scores_and_hessian(jnp.asarray(x0), jnp.asarray(B), jnp.asarray(jw),
                                           arrays, None if jgold is None
                                           else jnp.asarray(jgold), sizes=sizes,
                                           shape=(L, J, K), one_coin=one_coin)
    scores, info = np.asarray(scores)[:n_pat], np.asarray(info)
    info = 0.5 * (info + info.T)
    try:
        chol = np.linalg.cholesky(info)
    except np.linalg.LinAlgError:
        return "the observed information is not positive definite at the estimate"
    phi = scipy_cho_solve(chol, scores.T).T                   # (n_patterns, p)
    cov = (phi * w[:, None]).T @ phi
    moves = boundary_moves(x0, B, n_conf, L * K, one_coin)
    return ChannelInfluence(x0, B, tuple(names), phi, np.asarray(pd_.pattern), pd_.counts,
                            info, cov, one_coin, (L, J, K), moves)


#: The rule of three: 3 / N is the upper 95% bound of a rate with no event in N trials.
RULE_OF_THREE = 3.0


def boundary_moves(x0: np.ndarray, basis: np.ndarray, totals: np.ndarray, offset: int,
                   one_coin: bool | str) -> np.ndarray:
    """Moves of the channel entries the free parametrisation holds fixed at the boundary.

    Each confusion entry that no free direction moves and that lies on the small side of
    its row (an entry other than the row's largest) is moved to ``RULE_OF_THREE / N`` (N
    the row's expected items, capped at half the room to the reference entry), the mass
    taken from the row's largest entry. A held accuracy (one-coin: N the annotator's
    expected ratings; class-conditional: those of items of the class) above 0.5 is moved
    down by ``RULE_OF_THREE / N`` (capped at half its distance to chance, 1 / K), one
    below 0.5 up by as much (capped at half its distance to 0.5). A held MACE spamming
    probability is moved away from its boundary by ``RULE_OF_THREE / N`` (N the
    annotator's ratings, capped at a quarter), and a held strategy entry of an annotator
    who spams like a row's small entry (N its expected spam ratings).

    Parameters
    ----------
    x0 : ndarray
        Flat parameters (prevalence rows, then the channel's coordinates).
    basis : ndarray of shape (x0.size, p)
    totals : ndarray of shape (J, K)
        Expected items behind each confusion row.
    offset : int
        Where the channels start in ``x0`` (L * K).
    one_coin : bool or {'class_conditional', 'mace'}

    Returns
    -------
    ndarray of shape (r, x0.size)
    """
    moved = np.any(basis != 0, axis=1)
    out = []
    J, K = totals.shape

    def accuracy_move(i: int, N: float, x: float) -> None:
        if moved[i] or N <= 0:
            return
        step = (-min(RULE_OF_THREE / N, 0.5 * (x - 1.0 / K)) if x > 0.5
                else min(RULE_OF_THREE / N, 0.5 * (0.5 - x)))
        if step != 0:
            out.append(np.zeros_like(x0))
            out[-1][i] = step

    if one_coin is True:
        for j in range(J):
            i, N = offset + j, float(totals[j].sum())
            # as before: only an accuracy near 1 (a one-coin fit is above chance)
            if not moved[i] and N > 0 and x0[i] > 0.5:
                out.append(np.zeros_like(x0))
                out[-1][i] = -min(RULE_OF_THREE / N, 0.5 * (x0[i] - 1.0 / K))
        return np.array(out).reshape(-1, x0.size)
    if one_coin == "class_conditional":
        for r in range(J * K):
            accuracy_move(offset + r, float(totals.ravel()[r]), float(x0[offset + r]))
        return np.array(out).reshape(-1, x0.size)
    if one_coin == "mace":
        spam_free = np.zeros(J, bool)
        for j in range(J):
            i, N = offset + j, float(totals[j].sum())
            spam_free[j] = moved[i]
            if moved[i] or N <= 0:
                continue
            out.append(np.zeros_like(x0))
            step = min(RULE_OF_THREE / N, 0.25)
            out[-1][i] = step if x0[i] < 0.5 else -step
        # strategy rows: entries held on the small side, of annotators whose spam is free
        rows = x0[offset + J:].reshape(J, K)
        n_spam = x0[offset:offset + J] * totals.sum(axis=1)
        out += _row_moves(x0, moved, rows, n_spam, offset + J, spam_free)
        return np.array(out).reshape(-1, x0.size)
    out += _row_moves(x0, moved, x0[offset:].reshape(J * K, K), totals.ravel(), offset,
                      np.ones(J * K, bool))
    return np.array(out).reshape(-1, x0.size)


def _row_moves(x0: np.ndarray, moved: np.ndarray, rows: np.ndarray, totals: np.ndarray,
               offset: int, use: np.ndarray) -> list[np.ndarray]:
    """Rule-of-three moves of the held small entries of probability rows (R, K) starting
    at ``offset`` in ``x0`` (rows with ``use[r]`` False skipped)."""
    out = []
    R, K = rows.shape
    for r in range(R):
        N = float(totals[r])
        if not use[r] or N <= 0:
            continue
        ref = int(np.argmax(rows[r]))
        for k in range(K):
            i = offset + r * K + k
            if k == ref or moved[i]:
                continue
            step = min(RULE_OF_THREE / N, 0.5 * (rows[r, ref] - rows[r, k]))
            if step <= 0:
                continue
            v = np.zeros_like(x0)
            v[i], v[offset + r * K + ref] = step, -step
            out.append(v)
    return out


def scipy_cho_solve(chol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve ``(L L^T) x = rhs`` given the lower Cholesky factor ``L``."""
    import scipy.linalg

    return scipy.linalg.cho_solve((chol, True), rhs)


#: Hui–Walter rates or prevalences within this distance of 0 or 1 are held fixed.
HW_BOUNDARY = 1e-6


def hui_walter_influence(fit: Any, annotations: Any = None) -> ChannelInfluence | str:
    r"""The per-item influence of a Hui–Walter moment or GMM fit.

    The estimate minimises :math:`(\hat q - \Gamma(\theta))^T W (\hat q - \Gamma(\theta))`
    over :math:`\theta = (a_1, b_1, a_2, b_2, \mu_1, \dots, \mu_L)`, with :math:`\hat q`
    the stacked group means of :math:`X_i = (A_{i1}, A_{i2}, A_{i1}A_{i2})`
    (:func:`noisycal.engines.moments.sample_moments`); to first order
    :math:`\hat\theta - \theta_0 \approx (G^T W G)^{-1} G^T W (\hat q - q_0)`, G the moment
    Jacobian, so item i in group g has influence
    :math:`\phi_i = (G^T W G)^{-1} G^T W\,e_g \otimes (X_i - \hat q_g)/n_g`. Parameters
    within ``HW_BOUNDARY`` of 0 or 1 are held fixed (their columns of G dropped). The
    method of moments (two groups) is the exactly identified case, W = I.

    Parameters
    ----------
    fit : AnnotatorFit
        A ``'hui_walter'`` fit with its ``annotations``.
    annotations : Annotations, optional
        The fitted data, when the fit does not carry them.

    Returns
    -------
    ChannelInfluence, or str
    """
    from .moments import moment_jacobian

    ann = annotations if annotations is not None else getattr(fit, "annotations", None)
    if ann is None:
        return "the fit does not carry the annotations it was fitted on"
    theta = fit.details.get("theta")
    prev = np.atleast_2d(np.asarray(fit.group_prevalence, dtype=np.float64))
    conf = np.asarray(fit.confusion, dtype=np.float64)
    if theta is None:
        theta = np.concatenate([[conf[0, 0, 1], conf[0, 1, 1], conf[1, 0, 1], conf[1, 1, 1]],
                                prev[:, 1]])
    theta = np.asarray(theta, dtype=np.float64)
    if not np.all(np.isfinite(theta)):
        return "the fit has no finite estimates"
    L = prev.shape[0]
    A = ann.to_wide(missing=-1) if hasattr(ann, "to_wide") else np.asarray(ann)
    gi = np.asarray(fit.details["group_index"], dtype=np.int64)
    X = np.column_stack([A[:, 0], A[:, 1], A[:, 0] * A[:, 1]]).astype(np.float64)
    counts = np.bincount(gi, minlength=L).astype(np.float64)
    q = np.stack([X[gi == g].mean(axis=0) for g in range(L)])
    free = np.flatnonzero(np.minimum(theta, 1 - theta) > HW_BOUNDARY)
    G = moment_jacobian(theta, L)[:, free]
    W = np.asarray(fit.details.get("weight_matrix", np.eye(3 * L)), dtype=np.float64)
    bread = G.T @ W @ G
    if np.linalg.matrix_rank(bread) < free.size:
        return "the moment Jacobian is singular at the estimate"
    M = np.linalg.solve(bread, G.T @ W)                      # (p, 3L)
    # one pattern per (group, A1, A2): X_i - q_g depends on nothing else
    pattern = gi * 4 + (A[:, 0] * 2 + A[:, 1]).astype(np.int64)
    n_pat = 4 * L
    phi = np.zeros((n_pat, free.size))
    cnt = np.bincount(pattern, minlength=n_pat)
    for g in range(L):
        for a1 in (0, 1):
            for a2 in (0, 1):
                dev = np.array([a1, a2, a1 * a2], float) - q[g]
                phi[g * 4 + a1 * 2 + a2] = M[:, 3 * g:3 * g + 3] @ dev / counts[g]
    # theta = (a1, b1, a2, b2, mu...) as moves of the flat (prevalence, confusion) layout
    K, J = 2, 2
    x0 = np.concatenate([prev.ravel(), conf.ravel()])
    full = np.zeros((x0.size, theta.size))
    for j in range(2):
        for r, col in ((0, 2 * j), (1, 2 * j + 1)):           # a_j: true class 0; b_j: 1
            base = L * K + j * K * K + r * K
            full[base, col], full[base + 1, col] = -1.0, 1.0
    for g in range(L):
        full[g * K, 4 + g], full[g * K + 1, 4 + g] = -1.0, 1.0
    names = [f"{r}[{a}]" for a in np.asarray(fit.annotators).tolist() for r in "ab"]
    names += [f"mu[{g}]" for g in range(L)]
    cov = (phi * cnt[:, None]).T @ phi
    n1 = float(np.sum(counts * theta[4:]))
    moves = []
    for c in np.setdiff1d(np.arange(4), free):   # a rate held at 0 or 1
        N = n1 if c % 2 else counts.sum() - n1
        if N > 0:
            v = np.zeros(theta.size)
            v[c] = RULE_OF_THREE / N if theta[c] < 0.5 else -RULE_OF_THREE / N
            moves.append(full @ v)
    return ChannelInfluence(x0, full[:, free], tuple(names[i] for i in free), phi, pattern,
                            cnt, np.linalg.pinv(cov), cov, False, (L, J, K),
                            np.array(moves).reshape(-1, x0.size))


def channel_influence(fit: Any, annotations: Any = None) -> ChannelInfluence | str:
    """The per-item influence of any supported annotator fit.

    NUTS fits of every model: the Bayesian infinitesimal jackknife from the draws
    (:func:`posterior_influence`); EM and MLE fits of the Dawid–Skene family: the
    sandwich of the marginal likelihood (:func:`dawid_skene_influence`); Hui–Walter moment
    and GMM fits: the GMM sandwich (:func:`hui_walter_influence`). Classifier-informed EM
    fits have their own (their ``influence`` method,
    :func:`noisycal.engines.em.ci_influence.classifier_informed_influence`); here they
    get the reason.

    Parameters
    ----------
    fit : AnnotatorFit
    annotations : Annotations, optional
        The fitted data, when the fit does not carry them.

    Returns
    -------
    ChannelInfluence, or str (why there is none)
    """
    if getattr(fit, "model", None) == "hui_walter":
        return hui_walter_influence(fit, annotations)
    if getattr(fit, "method", None) == "nuts":
        return posterior_influence(fit, annotations)
    if getattr(fit, "model", None) == "classifier_informed":
        return ("a classifier-informed EM fit's influence is its own (fit.influence(), "
                "noisycal.engines.em.ci_influence), not the Dawid–Skene sandwich")
    return dawid_skene_influence(fit, annotations)


def _draw_logliks(fit: Any, ann: Any, prev_d: np.ndarray, conf_d: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each rating pattern's log-likelihood at each draw (S, n_patterns), each item's
    pattern and the patterns' counts: the model's own per-item likelihood when it has one
    (``details['arviz']['log_likelihood']``: one pattern per item), else the Dawid–Skene
    family's given the channels, once per distinct rating pattern."""
    import dataclasses

    from .density.arviz_export import item_loglik_draws
    from .patterns import pattern_data

    hook = (fit.details.get("arviz") or {}).get("log_likelihood")
    if hook is not None:
        ll = np.asarray(hook(dataclasses.replace(fit, annotations=ann)), np.float64)
        return ll, np.arange(ll.shape[1]), np.ones(ll.shape[1], np.int64)
    L, K = prev_d.shape[1:]
    arr = ann.engine_arrays()
    group = np.asarray(fit.details.get("group_index", np.zeros(ann.n_items, np.int64)))
    gold = fit.details.get("gold_index") if fit.details.get("gold") else None
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                           n_annotators=conf_d.shape[1], n_classes=K,
                           group=group if L > 1 else None, n_groups=L,
                           gold=None if gold is None else np.asarray(gold))
        ll = item_loglik_draws(prev_d, conf_d, pd_.data, pd_.gold)
    return ll, np.asarray(pd_.pattern), np.asarray(pd_.counts)


def _smallest_ess(theta: np.ndarray, chains: int) -> float:
    """The smallest bulk effective sample size over the columns of ``theta`` (draws of
    ``chains`` chains concatenated); the number of draws when it cannot be computed."""
    from numpyro.diagnostics import effective_sample_size

    S = theta.shape[0]
    if chains < 1 or S % chains or S // chains < 4:
        return float(S)
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = np.asarray(effective_sample_size(theta.reshape(chains, S // chains, -1)))
    ess = ess[np.isfinite(ess)]
    return float(min(np.min(ess), S)) if ess.size else float(S)


#: The fewest posterior draws :func:`posterior_influence` accepts.
MIN_INFLUENCE_DRAWS = 100
#: The largest share p / ESS (free parameters over effective draws) by which the draws'
#: Monte Carlo error may inflate the influence's covariance.
MAX_NOISE_SHARE = 0.5
#: The models whose per-item likelihood :func:`posterior_influence` knows: the
#: Dawid–Skene family's given the channels, or the model's own
#: (``details['arviz']['log_likelihood']``, item difficulty).
POSTERIOR_MODELS = (*CHANNELS, "hierarchical_dawid_skene", "item_difficulty",
                    "classifier_informed")


def posterior_influence(fit: Any, annotations: Any = None) -> ChannelInfluence | str:
    r"""The per-item influence of a NUTS fit on its posterior mean, from its draws.

    The Bayesian infinitesimal jackknife (Giordano and Broderick, "The Bayesian
    infinitesimal jackknife for variance"): weighting item i's likelihood by
    :math:`w_i` moves the posterior mean of the parameters :math:`\theta` at
    :math:`w = 1` by

    .. math:: \frac{\partial E_w[\theta]}{\partial w_i} =
              \mathrm{Cov}_{\text{post}}(\theta, \ell_i(\theta)),

    :math:`\ell_i` item i's log-likelihood, so the posterior mean has the influence
    :math:`\phi_i = \mathrm{Cov}(\theta, \ell_i)` (centred over the items) and the
    frequentist covariance :math:`\sum_i \phi_i\phi_i^T` (the bootstrap's, to first
    order), both estimated from the draws. This holds for every model whose likelihood
    is a product over items: Dawid–Skene, one-coin, grouped, class-conditional, MACE,
    the hierarchical model (the annotators' channels are the parameters; the population
    parameters only shrink them), item difficulty (the population-averaged channels,
    each item's log-likelihood under its own difficulty,
    ``fit.details['arviz']['log_likelihood']``) and the classifier-informed model (each
    item's log-likelihood under its own prior at the draw's scale, bias and channels,
    the same hook; its prevalence row is each draw's mean item prior). Under a prior
    that shrinks, the influence is that of the shrunk posterior mean, not of an MLE.

    The parameters are the prevalence rows and full confusion matrices in the
    coordinates of :func:`dawid_skene_influence` with ``one_coin=False``: every entry of
    a row moved against the row's largest entry at the posterior mean (a constrained
    channel's draws stay in its family; the covariance then lies in it). No entry is
    held fixed: the posterior has spread at the boundary (``boundary_moves`` is empty).

    Parameters
    ----------
    fit : AnnotatorFit
        A fit with ``method='nuts'``, its draws and its ``annotations``.
    annotations : Annotations, optional
        The data the fit was made on, when the fit does not carry them.

    Returns
    -------
    ChannelInfluence, or str
        A string says why there is none (no draws, no fitted data, a model
        outside :data:`POSTERIOR_MODELS`, fewer than :data:`MIN_INFLUENCE_DRAWS` draws,
        too few effective draws for the parameters (:data:`MAX_NOISE_SHARE`), more than
        ``MAX_FREE`` parameters).

    Notes
    -----
    Each :math:`\phi_i` carries Monte Carlo error of relative size about
    :math:`1/\sqrt{S}` (S the effective number of draws: the smallest bulk ESS of the
    parameters' coordinates);
    summed over the items this inflates the covariance by about p / S (p free
    parameters), upward: the interval is wider, not narrower. Above
    :data:`MAX_NOISE_SHARE` the influence is refused (the covariance would be mostly
    noise). ``information`` is the inverse of the covariance (pseudo-inverse).
    """
    ann = annotations if annotations is not None else getattr(fit, "annotations", None)
    if ann is None:
        return "the fit does not carry the annotations it was fitted on"
    if fit.details.get("gold") and fit.details.get("gold_index") is None:
        return "the fit used gold labels but does not carry them"
    draws = fit.draws
    if fit.method != "nuts":
        return f"the posterior influence needs a NUTS fit; this fit is by {fit.method!r}"
    if fit.model not in POSTERIOR_MODELS:
        return (f"the posterior influence of a {fit.model!r} fit is not implemented (its "
                "per-item likelihood is not the Dawid–Skene family's)")
    if draws is None or "confusion" not in draws:
        return "this NUTS fit keeps no posterior draws of the channels"
    conf_d = np.asarray(draws["confusion"], np.float64)
    prev = np.atleast_2d(np.asarray(fit.group_prevalence, dtype=np.float64))
    L, K = prev.shape
    prev_d = np.asarray(draws["prevalence"], np.float64).reshape(len(conf_d), L, K)
    S, J = conf_d.shape[:2]
    if S < MIN_INFLUENCE_DRAWS:
        return (f"{S} posterior draws; the influence from draws needs at least "
                f"{MIN_INFLUENCE_DRAWS}")
    conf = np.asarray(fit.confusion, dtype=np.float64)
    if not (np.all(np.isfinite(prev)) and np.all(np.isfinite(conf))
            and np.all(np.isfinite(conf_d)) and np.all(np.isfinite(prev_d))):
        return "the fit has no finite estimates"
    coords = full_coordinates(prev, conf)
    if isinstance(coords, str):
        return coords
    x0, basis, cols, names = coords
    p = cols.size
    # a draw's coordinates: its free entries' moves (a row's moves sum to zero)
    x = np.concatenate([prev_d.reshape(S, -1), conf_d.reshape(S, -1)], axis=1)
    theta = (x - x0)[:, cols]
    ess = _smallest_ess(theta, int(fit.details.get("chains", 1)))
    if p > MAX_NOISE_SHARE * ess:
        return (f"{p} free parameters and an effective sample size of {ess:.0f} draws: the "
                "draws' Monte Carlo error would inflate the covariance by about "
                f"{p / ess:.2f} of itself (more than {MAX_NOISE_SHARE:g}); run longer "
                "chains")
    ll, pattern, counts = _draw_logliks(fit, ann, prev_d, conf_d)
    if not np.all(np.isfinite(ll)):
        return "an item's log-likelihood is not finite at a posterior draw"
    tc = theta - theta.mean(axis=0)
    phi = (ll - ll.mean(axis=0)).T @ tc / (S - 1)              # (n_patterns, p)
    w = counts.astype(np.float64)
    phi = phi - (w @ phi) / w.sum()                              # centred over the items
    return full_influence(x0, basis, names, phi, pattern, counts, (L, J, K))


def same_items(fit: Any, ann: Any) -> str:
    """'' when ``ann`` holds the fit's items in the fit's order, else why not: the
    influences that index the fit's per-item arrays (item posteriors, scores,
    easiness) by the data's item codes need the two aligned.

    Parameters
    ----------
    fit : AnnotatorFit
    ann : Annotations

    Returns
    -------
    str
    """
    items = getattr(fit, "items", None)
    if items is None or ann is getattr(fit, "annotations", None):
        return ""
    if not np.array_equal(np.asarray(ann.items), np.asarray(items)):
        return ("annotations: not the fit's items in the fit's order (the influence "
                "indexes the fit's per-item estimates by item); pass the annotations the "
                "fit was made on")
    return ""


def full_coordinates(prev: np.ndarray, conf: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]] | str:
    """The free coordinates of prevalence rows and full confusion matrices.

    Every entry of a probability row is free except the row's largest, which moves
    against the others (the row keeps summing to one): ``x = x0 + basis @ theta``. No
    entry is held fixed at the boundary. The coordinates of :func:`posterior_influence`
    and of the models whose influence is computed on their channels directly (GLAD's
    item-averaged channels, the classifier-informed model's channels).

    Parameters
    ----------
    prev : ndarray of shape (L, K)
    conf : ndarray of shape (J, K, K)

    Returns
    -------
    x0 : ndarray of shape (L * K + J * K * K,)
        ``prev`` then ``conf``, flattened.
    basis : ndarray of shape (x0.size, p)
    cols : ndarray of shape (p,)
        The flat index of each free entry: a move ``dx`` of ``x`` whose rows sum to
        zero has the coordinates ``dx[cols]``.
    names : tuple of str
        The free parameters.

    Or a str saying why there are none (more than ``MAX_FREE`` free parameters).
    """
    from .identification import MAX_FREE

    K = prev.shape[1]
    J = conf.shape[0]
    L = prev.shape[0]
    x0 = np.concatenate([prev.ravel(), conf.ravel()])
    rows = x0.reshape(-1, K)
    ref = np.argmax(rows, axis=1)
    free = np.ones(rows.shape, bool)
    free[np.arange(rows.shape[0]), ref] = False
    free = free.ravel()
    p = int(free.sum())
    if p > MAX_FREE:
        return f"more than MAX_FREE={MAX_FREE} free parameters"
    basis = np.zeros((x0.size, p))
    cols = np.flatnonzero(free)
    basis[cols, np.arange(p)] = 1.0
    basis[(cols // K) * K + ref[cols // K], np.arange(p)] = -1.0
    names = ([f"prevalence[{g}, {k}]" for g in range(L) for k in range(K)]
             + [f"confusion[{j}, {t}, {o}]" for j in range(J) for t in range(K)
                for o in range(K)])
    return x0, basis, cols, tuple(names[i] for i in cols)


def full_influence(x0: np.ndarray, basis: np.ndarray, names: tuple[str, ...],
                   phi: np.ndarray, pattern: np.ndarray, counts: np.ndarray,
                   shape: tuple[int, int, int], *, one_coin: bool = False
                   ) -> ChannelInfluence:
    """A :class:`ChannelInfluence` in the coordinates of :func:`full_coordinates`.

    Parameters
    ----------
    x0, basis, names
        From :func:`full_coordinates`.
    phi : ndarray of shape (n_patterns, p)
        The influence of one item of each pattern, in the free coordinates (centred over
        the items by the caller).
    pattern : ndarray of shape (n_items,)
    counts : ndarray of shape (n_patterns,)
    shape : (L, J, K)
    one_coin : bool, default=False
        Whether the channel part of ``x0`` holds one accuracy per annotator (one-coin
        channels, :func:`~noisycal.engines.free_params.channel_from_flat`) instead of the
        full confusion matrices.

    Returns
    -------
    ChannelInfluence
        Its covariance ``sum_i phi_i phi_i^T``, its information the covariance's
        pseudo-inverse, no boundary moves.
    """
    w = np.asarray(counts, dtype=np.float64)
    cov = (phi * w[:, None]).T @ phi
    return ChannelInfluence(x0, basis, names, phi, pattern, counts, np.linalg.pinv(cov), cov,
                            one_coin, shape, np.zeros((0, x0.size)))

