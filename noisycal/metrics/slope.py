"""Calibration slope and intercept (Cox 1958) with statsmodels GLM intervals."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats as sps

import jax
import jax.numpy as jnp

from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_choice,
    check_level,
    check_seed,
    user_stacklevel,
)
from ..exceptions import ConvergenceWarning, NumericalWarning
from ..intervals.bootstrap import bootstrap, cluster_codes
from ..intervals.estimate import Estimate
from ..intervals.options import Bootstrap, IntervalOption, Wald, as_interval
from .ece import resolve_inputs, with_target_status

__all__ = ["calibration_slope", "calibration_intercept", "SLOPE_INTERVALS", "SLOPE_UNUSED"]

#: The interval kinds of :func:`calibration_slope` and :func:`calibration_intercept`
#: (default: ``Wald()``).
SLOPE_INTERVALS = (Wald, Bootstrap)

#: The fields of :data:`SLOPE_INTERVALS` the slope and intercept do not use.
SLOPE_UNUSED = {Bootstrap: {
    "scheme": (("auto", "exact"), "a GLM refitted per replicate has no bins (the exact "
               "scheme)"),
    "rebin": "a GLM has no bins",
    "devices": "its bootstrap runs on one device"}}

_NEWTON_STEPS = 50


def _logit_and_target(probs: ArrayLike | None, target: object, logits: ArrayLike | None,
                      kind: str | None, classes: ArrayLike | None, items: ArrayLike | None
                      ) -> tuple[np.ndarray, np.ndarray, str]:
    P, logP, T, binary = resolve_inputs(probs, target, logits, classes=classes, items=items)
    if kind is None:
        kind = "positive_class" if binary else "top_label"
    check_choice(kind, "kind", ("top_label", "positive_class"))
    if kind == "positive_class" and P.shape[1] != 2:
        raise ValueError(f"kind='positive_class' needs 2 classes, got {P.shape[1]}")
    n = P.shape[0]
    col = np.full(n, 1) if kind == "positive_class" else np.argmax(P, axis=1)
    lp = logP[np.arange(n), col]
    with np.errstate(divide="ignore"):
        # log(p / (1 - p)) from the log-probabilities: log p - log(sum of the others)
        others = np.log(np.clip(1.0 - P[np.arange(n), col], 0.0, None))
        if logits is not None:
            L = logP.copy()
            L[np.arange(n), col] = -np.inf
            m = L.max(axis=1, keepdims=True)
            others = (m[:, 0] + np.log(np.sum(np.exp(L - m), axis=1)))
    x = lp - others
    if not np.all(np.isfinite(x)):
        raise ValueError("probs: the calibration slope needs confidences strictly inside "
                         f"(0, 1); {int(np.sum(~np.isfinite(x)))} item(s) have probability 0 "
                         "or 1 (pass logits= to keep them finite)")
    y = T[np.arange(n), col]
    if np.any(y < 0) or np.any(y > 1):
        raise ValueError("target values for the calibration slope must lie in [0, 1]; "
                         "noise-corrected targets are not supported here yet")
    return x, y, kind


def _newton_logistic(weights: jax.Array, X: jax.Array, y: jax.Array,
                     offset: jax.Array) -> jax.Array:
    """Weighted logistic regression by Newton's method (fixed number of steps)."""

    def step(beta: jax.Array, _: None) -> tuple[jax.Array, None]:
        eta = X @ beta + offset
        mu = jax.nn.sigmoid(eta)
        grad = X.T @ (weights * (y - mu))
        H = (X * (weights * mu * (1 - mu))[:, None]).T @ X
        return beta + jnp.linalg.solve(H + 1e-12 * jnp.eye(X.shape[1]), grad), None

    beta, _ = jax.lax.scan(step, jnp.zeros(X.shape[1]), None, length=_NEWTON_STEPS)
    return beta


def _slope_stat(weights: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    X = jnp.stack([jnp.ones_like(x), x], axis=1)
    return _newton_logistic(weights, X, y, jnp.zeros_like(x))[1]


def _intercept_stat(weights: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    return _newton_logistic(weights, jnp.ones((x.shape[0], 1)), y, x)[0]


def _fit(x: np.ndarray, y: np.ndarray, which: str, cov_type: str) -> tuple:
    """Fit the GLM (statsmodels IRLS); return (results, params, covariance)."""
    import statsmodels.api as sm
    from scipy.special import expit

    if which == "slope":
        X = np.column_stack([np.ones_like(x), x])
        offset = np.zeros_like(x)
        model = sm.GLM(y, X, family=sm.families.Binomial())
    else:
        X = np.ones((x.shape[0], 1))
        offset = x
        model = sm.GLM(y, X, family=sm.families.Binomial(), offset=x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns on non-integer binomial counts
        res = model.fit()
    params = np.asarray(res.params)
    if cov_type == "nonrobust":
        return res, params, np.asarray(res.cov_params())
    # HC0 sandwich, written without dividing by mu (1 - mu), so items whose fitted
    # probability rounds to 0 or 1 contribute 0 to the bread instead of NaN.
    mu = expit(X @ params + offset)
    try:
        bread = np.linalg.inv((X * (mu * (1.0 - mu))[:, None]).T @ X)
    except np.linalg.LinAlgError:
        return res, params, np.full((X.shape[1], X.shape[1]), np.nan)
    score = X * (y - mu)[:, None]
    return res, params, bread @ (score.T @ score) @ bread


def _undefined(x: np.ndarray, y: np.ndarray, which: str, hard: bool) -> str:
    """Why the logistic fit has no finite estimate ('' when it has one)."""
    if np.all(y == 0) or np.all(y == 1):
        return (f"every target is {int(y[0])}: the calibration {which} is not defined "
                "(its maximum-likelihood estimate is infinite)")
    if which == "slope" and hard and (np.max(x[y == 0]) <= np.min(x[y == 1])
                                      or np.max(x[y == 1]) <= np.min(x[y == 0])):
        return ("the targets are separated by the scores (every 0 on one side of every "
                "1): the calibration slope is infinite, not estimable")
    return ""


#: How the slope and intercept are estimated: binomial GLM by IRLS (statsmodels); for soft
#: targets a quasi-likelihood fit.
ESTIMATOR = "MLE (GLM)"


def estimand_text(which: str, kind: str) -> str:
    """The population quantity of :func:`calibration_slope` / :func:`calibration_intercept`.

    Parameters
    ----------
    which : {'slope', 'intercept'}
    kind : {'positive_class', 'top_label'}

    Returns
    -------
    str
    """
    score = ("the positive-class probability" if kind == "positive_class"
             else "the top-label confidence")
    model = ("logit E[T | p] = a + b logit(p)" if which == "slope"
             else "logit E[T | p] = a + logit(p) (slope fixed at 1)")
    coef = "b" if which == "slope" else "a"
    return (f"calibration {which}: {coef} of the population logistic fit {model}, p "
            f"{score} and T the target's value there (the binomial-GLM projection when "
            "the curve is not logistic)")


def _estimate(which: str, probs: ArrayLike | None, target: object, logits: ArrayLike | None,
              kind: str | None, interval: object, level: float, seed: Seed,
              cluster: ArrayLike | None, classes: ArrayLike | None = None,
              items: ArrayLike | None = None) -> Estimate:
    option = as_interval(interval, SLOPE_INTERVALS, default=Wald(),
                         where=f"calibration_{which}", unused=SLOPE_UNUSED)
    level = check_level(level)
    # the Wald interval's covariance; the other intervals report the 'auto' one
    cov_type = option.cov_type if isinstance(option, Wald) else "auto"
    check_seed(seed)
    x, y, kind = _logit_and_target(probs, target, logits, kind, classes, items)
    cluster_codes(cluster, x.shape[0])  # checked whatever the interval, as in nc.ece
    named = {"estimand": estimand_text(which, kind), "estimator": ESTIMATOR}
    hard = bool(np.all((y == 0) | (y == 1)))
    why = _undefined(x, y, which, hard)
    if why:
        warnings.warn(f"calibration {which}: {why}", NumericalWarning,
                      stacklevel=user_stacklevel())
        status = "separation" if "separated" in why else "undefined"
        return with_target_status(Estimate(f"calibration {which}", float("nan"), n=x.shape[0],
                                           status=status, message=why,
                                           details={"kind": kind}, **named), target, probs, logits)
    ct = ("nonrobust" if hard else "HC0") if cov_type == "auto" else cov_type
    res, params, cov = _fit(x, y, which, ct)
    idx = 1 if which == "slope" else 0
    value = float(params[idx])
    with np.errstate(invalid="ignore"):
        bse = np.sqrt(np.diag(cov))
    converged = bool(getattr(res, "converged", True))
    status, message = "ok", ""
    if not converged or not np.isfinite(value):
        status, message = "not_converged", "the GLM fit (IRLS) did not converge"
        warnings.warn(f"calibration {which}: {message}", ConvergenceWarning,
                      stacklevel=user_stacklevel())
    elif isinstance(option, Wald) and not np.isfinite(bse[idx]):
        status = "nonfinite_se"
        message = "the standard error is not finite; try interval=Bootstrap()"
        warnings.warn(f"calibration {which}: {message}", NumericalWarning,
                      stacklevel=user_stacklevel())
    name = f"calibration {which}"
    details = {"kind": kind, "cov_type": ct, "params": params, "bse": bse}
    if option is None or status != "ok":
        return with_target_status(Estimate(name, value, n=x.shape[0], status=status,
                                           message=message, details=details, **named),
                                  target, probs, logits)
    if isinstance(option, Wald):
        if cluster is not None:
            raise ValueError("interval=Wald() treats items as independent; use "
                             "interval=Bootstrap() with cluster=")
        z = sps.norm.ppf(0.5 + level / 2.0)
        lo, hi = value - z * bse[idx], value + z * bse[idx]
        return with_target_status(Estimate(name, value, (lo, hi), level, "wald", "wald",
                                           n=x.shape[0], details=details, **named),
                                  target, probs, logits)
    stat = _slope_stat if which == "slope" else _intercept_stat
    n_boot, method = option.n_boot, option.method
    est = bootstrap(stat, x, y, cluster=cluster, n_boot=n_boot, level=level, method=method,
                    seed=seed, batch_size=option.batch_size, name=name)
    return with_target_status(Estimate(
        name, value, est.interval, level, "bootstrap", method, n=x.shape[0], n_boot=n_boot,
        status=est.status, message=est.message, details=details,
        replicates=est.replicates, **named), target, probs, logits)


def calibration_slope(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    items: ArrayLike | None = None,
    kind: str | None = None,
    interval: IntervalOption | str | None = "auto",
    level: float = 0.9,
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
) -> Estimate:
    r"""Calibration slope: b in logit P(Y = 1) = a + b * logit(p) (Cox 1958).

    A slope of 1 means the log-odds are neither too extreme (b < 1, overconfident) nor too
    timid (b > 1). Fitted by a binomial GLM (statsmodels) of the target on the logit of the
    confidence: the positive-class probability for binary input, the top-label confidence
    (target: the target's value at the predicted class) otherwise.

    Parameters
    ----------
    probs, logits, target, classes, items : see :func:`noisycal.ece`
        Targets must lie in [0, 1]; soft targets give a quasi-likelihood fit.
    kind : {'positive_class', 'top_label'}, optional
    interval : Wald, Bootstrap, str or None, default='auto'
        An option object of :mod:`noisycal.intervals` or its name. 'auto': ``Wald()``,
        the GLM's Wald interval with the covariance of its ``cov_type`` ('auto':
        model-based for 0/1 targets, the HC0 sandwich for soft targets, whose binomial
        variance is not the model's; ``details['cov_type']`` says which, and the other
        intervals report the 'auto' one). ``Bootstrap()``: refits by weighted Newton
        steps in JAX for every one of its ``n_boot`` replicates, read off with its
        ``method`` (``method=`` means only this in every metric), ``batch_size``
        replicates per vectorised chunk; the exact scheme, no ``rebin`` or ``devices``.
    seed, cluster : see :func:`noisycal.ece`

    Returns
    -------
    Estimate
        ``details['params']`` holds (intercept a, slope b). When every target is 0 (or
        every one 1), or the hard targets are separated by the scores, the estimate is
        not defined: value NaN, status 'undefined' or 'separation' and a
        :class:`~noisycal.NumericalWarning`.
    """
    return _estimate("slope", probs, target, logits, kind, interval, level, seed, cluster,
                     classes, items)


def calibration_intercept(
    probs: ArrayLike | None = None,
    target: object = None,
    *,
    logits: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    items: ArrayLike | None = None,
    kind: str | None = None,
    interval: IntervalOption | str | None = "auto",
    level: float = 0.9,
    seed: Seed = 0,
    cluster: ArrayLike | None = None,
) -> Estimate:
    r"""Calibration intercept ("calibration in the large"): a in logit P(Y=1) = a + logit(p).

    The slope is fixed at 1 (``logit(p)`` enters as an offset), so a = 0 when the average
    predicted log-odds match the outcomes; a > 0 means the predictions are too low.

    Parameters
    ----------
    probs, logits, target, classes, items : see :func:`calibration_slope`
    kind, level : see :func:`calibration_slope`
    interval : Wald, Bootstrap, str or None, default='auto'
        As in :func:`calibration_slope` ('auto': ``Wald()``; ``Bootstrap()`` refits the
        intercept in every replicate).
    seed, cluster : see :func:`noisycal.ece`

    Returns
    -------
    Estimate
    """
    return _estimate("intercept", probs, target, logits, kind, interval, level, seed,
                     cluster, classes, items)
