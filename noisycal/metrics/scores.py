"""Proper scores against any target: Brier score and negative log-likelihood (cross-entropy)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from scipy import stats as sps
from scipy.special import expit, log_expit

import jax
import jax.numpy as jnp

from .._util.types import ArrayLike, Seed
from .._util.validation import (
    PROB_ATOL,
    check_choice,
    check_level,
    check_real,
    check_seed,
    user_stacklevel,
)
from ..exceptions import NumericalWarning
from ..intervals.bootstrap import cluster_codes
from ..intervals.estimate import Estimate
from ..intervals.mean_bootstrap import bootstrap_mean
from ..intervals.options import Bootstrap, IntervalOption, Wald, as_interval
from .binned.dask import is_dask_array
from .binned.dask_scores import dask_score
from .ece import lean_inputs, resolve_inputs, with_target_status
from .score_losses import (
    AFFINE_IN_TARGET,
    SCORE_ESTIMATOR,
    brier_form,
    brier_losses,
    leaves_unit_interval,
    nll_high_variance,
    nll_losses,
    score_estimand,
    score_floor,
    with_floor_status,
)

__all__ = ["brier", "nll", "mean_estimate", "weighted_mean", "AFFINE_IN_TARGET",
           "leaves_unit_interval", "logit_loss", "resolve_fit_loss", "FIT_LOSSES",
           "brier_form", "brier_losses", "nll_losses", "nll_high_variance",
           "SCORE_INTERVALS", "SCORE_UNUSED", "score_interval"]

#: The interval kinds of :func:`brier` and :func:`nll` (default: ``Bootstrap()``).
SCORE_INTERVALS = (Bootstrap, Wald)

#: The fields of :data:`SCORE_INTERVALS` the scores do not use.
SCORE_UNUSED = {
    Bootstrap: {"scheme": (("auto", "exact"), "a mean of per-item scores has no bins "
                           "(the exact scheme; Dask input draws the Poisson one)"),
                "rebin": "a mean of per-item scores has no bins",
                "batch_size": "its bootstrap draws indices in blocks of fixed memory",
                "devices": "its bootstrap runs on one device"},
    Wald: {"cov_type": "the standard error of a mean is the items' standard deviation "
                       "over sqrt(n); cov_type is the GLM covariance of the calibration "
                       "slope"}}


def score_interval(interval: object, where: str) -> Bootstrap | Wald | None:
    """The interval option of a proper score (:func:`brier`, :func:`nll`).

    Parameters
    ----------
    interval : Bootstrap, Wald, str or None
        As given to the score ('auto': ``Bootstrap()``).
    where : str
        The score's name, for messages.

    Returns
    -------
    Bootstrap, Wald or None
    """
    return as_interval(interval, SCORE_INTERVALS, default=Bootstrap(), where=where,
                       unused=SCORE_UNUSED)

def _named(est: Estimate) -> Estimate:
    """``est`` naming its estimand (from its name) and estimator."""
    return dataclasses.replace(est, estimand=score_estimand(
        est.name, bool(est.details.get("binary", False))), estimator=SCORE_ESTIMATOR)


def weighted_mean(weights: jax.Array, values: jax.Array) -> jax.Array:
    """``sum(w * x) / sum(w)``: the statistic of a mean under bootstrap weights.

    Parameters
    ----------
    weights : jax.Array of shape (n,)
    values : jax.Array of shape (n,)

    Returns
    -------
    jax.Array (scalar)
    """
    return jnp.sum(weights * values) / jnp.sum(weights)


#: The losses a binary recalibration map can be fitted with (see :func:`resolve_fit_loss`).
FIT_LOSSES = ("auto", "log", "brier")


def logit_loss(eta: np.ndarray, y: np.ndarray, loss: str) -> tuple[float, np.ndarray]:
    """Mean fitting loss of log-odds ``eta`` against a positive-class target ``y``.

    Parameters
    ----------
    eta : ndarray of shape (n,)
        Log-odds of the map.
    y : ndarray of shape (n,)
        Target (any real values).
    loss : {'log', 'brier'}
        'log': ``softplus(eta) - y eta`` (the log loss for y in [0, 1], unbounded below
        in eta otherwise); 'brier': the affine Brier loss ``q^2 - 2 q y + y`` with
        ``q = sigmoid(eta)``, bounded below for any y (q lies in [0, 1]).

    Returns
    -------
    (float, ndarray of shape (n,))
        The mean loss and the per-item derivative in ``eta``.
    """
    q = expit(eta)
    if loss == "log":
        return float(np.mean(-log_expit(-eta) - y * eta)), q - y
    return float(np.mean(q * q - 2.0 * q * y + y)), 2.0 * (q - y) * q * (1.0 - q)


def resolve_fit_loss(loss: object, y: np.ndarray, target: object) -> str:
    """The loss of a fit: ``'auto'`` is 'brier' for a target that leaves [0, 1], else 'log'.

    Parameters
    ----------
    loss : {'auto', 'log', 'brier'}
    y : ndarray of shape (n,)
        The positive-class target values.
    target : object
        The target as given (a Target of kind 'corrected' counts as leaving [0, 1]).

    Returns
    -------
    str
    """
    if not isinstance(loss, str) or loss not in FIT_LOSSES:
        raise ValueError(f"loss must be one of {FIT_LOSSES}, got {loss!r}")
    if loss != "auto":
        return loss
    outside = getattr(target, "kind", None) == "corrected" or bool(
        np.any(y < 0.0) or np.any(y > 1.0))
    return "brier" if outside else "log"


def mean_estimate(losses: np.ndarray, name: str, *, interval: Bootstrap | Wald | None,
                  level: float, seed: Seed, cluster: ArrayLike | None,
                  details: dict) -> Estimate:
    """Estimate of a mean of per-item values with a bootstrap or Wald (normal) interval.

    Parameters
    ----------
    losses : ndarray of shape (n_items,)
        Per-item values.
    name : str
        Name of the estimate.
    interval : Bootstrap, Wald or None
        A Wald interval needs at least two items (else status 'nonfinite_se'). The
        bootstrap is :func:`~noisycal.intervals.mean_bootstrap.bootstrap_mean` (the item
        or cluster bootstrap of the mean, in memory bounded by its block of draws) with
        the option's ``n_boot`` and ``method``.
    level, seed, cluster
        As in :func:`noisycal.brier`.
    details : dict
        Extra details.

    Returns
    -------
    Estimate
    """
    if interval is not None and not isinstance(interval, Bootstrap | Wald):
        raise ValueError(f"interval must be a Bootstrap or Wald option, got {interval!r}")
    level = check_level(level)
    check_seed(seed)
    n = losses.shape[0]
    cluster_codes(cluster, n)  # checked whatever the interval, as the binned metrics do
    value = float(np.mean(losses))
    status, message = "ok", ""
    if not np.isfinite(value):
        status = "nonfinite"
        message = (f"{int(np.sum(~np.isfinite(losses)))} item(s) have an infinite loss "
                   "(probability 0 on a class with positive target)")
    if interval is None or status != "ok":
        return Estimate(name, value, n=n, status=status, message=message, details=details)
    if isinstance(interval, Wald):
        if cluster is not None:
            raise ValueError("interval=Wald() treats items as independent; use "
                             "interval=Bootstrap() with cluster=")
        se = float(np.std(losses, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        if not np.isfinite(se):
            msg = (f"the standard error needs at least 2 items (n = {n}); no Wald interval")
            warnings.warn(f"{name}: {msg}", NumericalWarning, stacklevel=user_stacklevel())
            return Estimate(name, value, n=n, status="nonfinite_se", message=msg,
                            details={**details, "se": se})
        z = sps.norm.ppf(0.5 + level / 2.0)
        return Estimate(name, value, (value - z * se, value + z * se), level, "wald", "wald",
                        n=n, details={**details, "se": se})
    # the bootstrap of nc.bootstrap(weighted_mean, ...), drawn in blocks of indices
    n_boot, method = interval.n_boot, interval.method
    est = bootstrap_mean(losses, cluster=cluster, n_boot=n_boot, level=level,
                         method=method, seed=seed, name=name)
    return Estimate(name, value, est.interval, level, "bootstrap", method, n=n, n_boot=n_boot,
                    status=est.status, message=est.message, details=details,
                    replicates=est.replicates)


def brier(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    items: ArrayLike | None = None,
    variant: str = "plain",
    interval: IntervalOption | str | None = "auto",
    level: float = 0.9,
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
) -> Estimate:
    r"""Brier score against a target, averaged over items.

    Parameters
    ----------
    probs, logits : see :func:`noisycal.ece`
        A 1-D binary input gives the binary Brier score :math:`(p_i - T_{i1})^2`;
        a matrix gives the multi-class score :math:`\sum_k (p_{ik} - T_{ik})^2`
        (twice the binary one when K = 2). Dask arrays are read in row blocks
        (:mod:`noisycal.metrics.binned.dask`).
    target : Target, array-like of shape (n_items, n_classes) or labels
    classes, items : see :func:`noisycal.ece`
    variant : {'plain', 'expected'}, default='plain'
        'plain': squared distance to the target row (the soft Brier score of
        Tao, Luo, Dong & Xu (2026) for soft targets). 'expected': the Brier score
        against a label drawn from the
        target row, :math:`\|p_i - T_i\|^2 + 1 - \|T_i\|^2` (needs probability rows;
        for binary 1-D input the analogue :math:`(p-t)^2 + t(1-t)`). The two differ
        by a per-item constant, so rankings of predictors agree. 'expected' is affine
        in the target, :math:`\|p_i\|^2 - 2 p_i \cdot T_i + 1`, and accepts
        noise-corrected rows (a Target of kind 'corrected': entries outside [0, 1], rows
        summing to 1; any other target outside [0, 1] is a ValueError).

        Against a noise-corrected target (kind ``'corrected'``), 'plain' also uses this
        affine form: the squared distance is quadratic in
        the target and biased for the clean-label Brier score, while the affine form is
        unbiased for it whenever the target is unbiased for the clean one-hot labels (an
        extension of ours of the corrected target of "Noisy-Label Calibration with Multiple
        Unreliable Labels" to proper scores). For one-hot targets the affine form equals the
        usual Brier score exactly. The Estimate is then named 'affine Brier', and says so in
        its message; ``details['form']`` is ``'affine'`` or ``'plain'`` and
        ``details['affine_in_target']`` whether the score computed is affine in the target
        (see ``AFFINE_IN_TARGET``).
    interval : Bootstrap, Wald, str or None, default='auto'
        An option object of :mod:`noisycal.intervals` or its name. 'auto':
        ``Bootstrap()``, the item (or cluster) bootstrap of the mean with the option's
        ``n_boot`` replicates read off with its ``method`` (``method=`` means only this
        in every metric); the exact scheme (Dask input: the Poisson one), no ``rebin``,
        ``batch_size`` or ``devices``. ``Wald()``: the mean plus or minus z standard
        errors (the items' standard deviation over sqrt(n); no ``cluster``).
    level, seed, cluster : see :func:`noisycal.ece`

    Returns
    -------
    Estimate

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> round(float(nc.brier(np.array([[0.8, 0.2], [0.4, 0.6]]), np.array([0, 0]),
    ...                      interval=None)), 12)
    0.4
    >>> nc.brier(np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1]), interval="wald").kind
    'wald'
    """
    option = score_interval(interval, "brier")
    if is_dask_array(probs) or is_dask_array(target):  # sums over Dask row blocks
        return _named(dask_score(
            "brier", probs, target, logits=logits, classes=classes, items=items,
            variant=variant, interval=option, level=level, seed=seed, cluster=cluster))
    check_choice(variant, "variant", ("plain", "expected"))
    P, T, labels, binary = lean_inputs(probs, target, logits, classes=classes, items=items)
    outside = labels is None and leaves_unit_interval(T, target)
    rows_off = labels is None and bool(np.any(np.abs(T.sum(1) - 1) > PROB_ATOL))
    negative = labels is None and bool(np.any(T < -PROB_ATOL))
    affine, name, details = brier_form(variant, binary, outside, rows_off, negative,
                                       hard=labels is not None)
    losses = brier_losses(P, T, labels, binary, affine)
    est = mean_estimate(losses, name, interval=option, level=level, seed=seed,
                        cluster=cluster, details=details)
    if outside and variant == "plain" and est.status == "ok":
        est = dataclasses.replace(est, message=(
            "the target leaves [0, 1] (noise-corrected), so the plain ||p - T||^2, quadratic "
            "in T and biased, was replaced by its affine form ||p||^2 - 2 p.T + 1, unbiased "
            "for the Brier score against the clean labels"))
    if outside:
        est = with_floor_status(est, score_floor(P, None, "brier", binary))
    return with_target_status(_named(est), target, probs, logits)


def nll(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    items: ArrayLike | None = None,
    interval: IntervalOption | str | None = "auto",
    level: float = 0.9,
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
    eps: float | None = None,
) -> Estimate:
    r"""Negative log-likelihood: the cross-entropy :math:`-\sum_k T_{ik}\log p_{ik}`, averaged.

    With hard labels this is the usual NLL; with soft labels the soft cross-entropy of
    Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth"
    (Eq. 5), bounded below by the mean entropy of the target rows. Terms with
    :math:`T_{ik} = 0` contribute 0 even where :math:`p_{ik} = 0`. When ``logits`` are
    given, log-probabilities come from a stable log-softmax. A probability of exactly 0
    on a class with non-zero target gives an infinite value and ``status='nonfinite'``
    (no interval).

    Against a target that leaves [0, 1] (kind ``'corrected'``, or any entry outside
    [0, 1]) the cross-entropy, linear in the target, stays unbiased for the NLL against the
    clean labels (our reading of the corrected target's unbiasedness in "Noisy-Label
    Calibration with Multiple Unreliable Labels"), but it is high-variance and can be
    negative: the value and its interval are returned with a
    :class:`~noisycal.NumericalWarning`, ``details['high_variance'] = True`` and a
    message saying so. :func:`noisycal.brier` is the better-behaved score for such targets.
    A value below the smallest NLL the predictions can have against any clean labels
    (each item labelled with its most probable class) gets the status
    ``'outside_parameter_space'`` (also for :func:`noisycal.brier`), its message naming
    the likely cause.

    Parameters
    ----------
    probs, logits, target, classes, items : see :func:`noisycal.ece`
        (Dask arrays too: :mod:`noisycal.metrics.binned.dask`)
    interval : Bootstrap, Wald, str or None, default='auto'
        As in :func:`brier` ('auto': ``Bootstrap()``).
    level, seed, cluster : see :func:`noisycal.ece`
    eps : float in (0, 1), optional
        Clip the probabilities at ``eps`` before the logarithm, ``log(max(p, eps))``
        (log-softmax values of ``logits`` at ``log(eps)``), so that a zero probability on
        a class with positive target costs ``-log(eps)`` instead of infinity. Default
        None: no clipping, the honest value (infinite, status 'nonfinite'). When given,
        ``details['eps']`` records it and ``details['n_clipped']`` how many of the
        probabilities that entered the loss were raised to it.

    Returns
    -------
    Estimate

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> round(float(nc.nll(np.array([[0.5, 0.5], [0.25, 0.75]]), np.array([0, 1]),
    ...                    interval=None)), 6)
    0.490415
    >>> p = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> nc.nll(p, np.array([1, 0]), interval=None).status
    'nonfinite'
    >>> est = nc.nll(p, np.array([1, 0]), interval=None, eps=1e-6)
    >>> round(float(est), 4), est.details["n_clipped"]
    (7.2543, 1)
    """
    option = score_interval(interval, "nll")
    if eps is not None:
        eps = check_real(eps, "eps", minimum=0.0, maximum=1.0, strict=True)
    if is_dask_array(probs) or is_dask_array(target):  # sums over Dask row blocks
        if eps is not None:
            raise ValueError("eps: clipping is not available for Dask arrays; call "
                             ".compute() on them first, or leave eps=None")
        return _named(dask_score(
            "nll", probs, target, logits=logits, classes=classes, items=items,
            variant="plain", interval=option, level=level, seed=seed, cluster=cluster))
    labels = None
    if logits is None:  # logits need their stable log-softmax: resolve_inputs below
        P, T, labels, _ = lean_inputs(probs, target, logits, classes=classes, items=items)
    if labels is not None:  # one-hot targets: -log p_iy, one log per row
        clip = {}
        if eps is not None:
            clip = {"eps": eps, "n_clipped": int(np.sum(P[np.arange(P.shape[0]), labels]
                                                        < eps))}
            P = np.maximum(P, eps)
        losses = nll_losses(P, None, None, labels)
        details = {"affine_in_target": AFFINE_IN_TARGET["NLL"], "high_variance": False,
                   **clip}
        est = mean_estimate(losses, "NLL", interval=option, level=level, seed=seed,
                            cluster=cluster, details=details)
        return with_target_status(_named(est), target, probs, logits)
    P, logP, T, _ = resolve_inputs(probs, target, logits, classes=classes, items=items)
    clip = {}
    if eps is not None:
        floor = float(np.log(eps))
        clip = {"eps": eps, "n_clipped": int(np.sum((logP < floor) & (T != 0.0)))}
        logP = np.maximum(logP, floor)
    losses = nll_losses(P, logP, T, None)
    outside = leaves_unit_interval(T, target)
    details = {"affine_in_target": AFFINE_IN_TARGET["NLL"], "high_variance": outside,
               **clip}
    est = mean_estimate(losses, "NLL", interval=option, level=level, seed=seed,
                        cluster=cluster, details=details)
    if outside:
        est = with_floor_status(nll_high_variance(est), score_floor(P, logP, "nll", False))
    return with_target_status(_named(est), target, probs, logits)
