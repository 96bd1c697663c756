"""Hui–Walter: two binary annotators and score groups (Hui & Walter, 1980).

:class:`HuiWalter` is the user-facing model; ``fit(..., method=Moments())`` inverts the
six moments of two groups in closed form (Eqs. 13, D.3, D.5 of "Noisy-Label Calibration
with Multiple Unreliable Labels"), ``method=GMM(...)`` is that paper's grouped GMM
(Definition D.1): it minimises a quadratic form in the 3L group moments of L >= 2 ordered
score groups over a compact constraint set. The estimators live in :mod:`noisycal.engines.moments`;
this module validates the input, assembles the fit and its status, and defines
:func:`equal_count_groups`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .._util.progress import check_progress
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_choice, check_int, check_seed
from ..annotations.core import Annotations
from ..engines.checks import channel_status
from ..engines.gmm import GMM_NOTE, active_constraints, two_step_gmm
from ..engines.identification import hui_walter_identification
from ..engines.methods import GMM, Method, Moments, as_method
from ..engines.moments import hui_walter_inverse, moment_jacobian, sample_moments
from ..engines.results import AnnotatorFit, checked_status, every_status
from ..exceptions import ConvergenceWarning, IdentifiabilityWarning

__all__ = ["HuiWalter", "equal_count_groups"]


class HuiWalter:
    """Hui–Walter model: two binary annotators, L >= 2 score groups, shared channels.

    Annotator j has false-positive rate ``a_j = P(A_j = 1 | Y = 0)`` and true-positive rate
    ``b_j = P(A_j = 1 | Y = 1)`` in every group; group g has prevalence
    ``mu_g = P(Y = 1 | G = g)``; the annotators are independent given Y.

    - ``fit(annotations, groups=g, method=Moments())`` (two groups) inverts the six group
      moments in closed form (Hui & Walter, 1980; Eqs. D.3, D.5). Infeasible inverses are
      reported with status ``'infeasible_mom'``, never as numbers that look fine.
    - ``fit(annotations, groups=g, method=GMM(...))`` (L >= 2 groups ordered by score) is
      the constrained grouped GMM of Definition D.1. With L = 2 it equals the MoM solution
      whenever that is feasible (the model is exactly identified); with L > 2 it has 2L - 4
      over-identifying restrictions. statsmodels' GMM (``sandbox.regression.gmm``)
      optimises without constraints, so the same objective is minimised here with
      SciPy's SLSQP under the constraints of Definition D.1; at interior solutions the two
      agree (tested).

    The result is an :class:`~noisycal.engines.results.AnnotatorFit` with ``prevalence`` of
    shape (L, 2) (rows: groups in sorted order), ``confusion`` (2, 2, 2) and
    weak-identification diagnostics in ``details``: the group mean differences of each
    annotator (between the two extreme groups) and the smallest singular value of the
    moment Jacobian (``jax.jacfwd``), plus its determinant when L = 2 (it equals
    delta_1^2 delta_2^2 (mu_1 - mu_0)^2). For more annotators use
    :class:`~noisycal.GroupedDawidSkene`.
    """

    def fit(self, annotations: Annotations | ArrayLike, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None, anchor: object = None,
            seed: Seed = 0, progress: bool = False) -> AnnotatorFit:
        """Fit the channels and group prevalences.

        Parameters
        ----------
        annotations : Annotations or array-like of shape (n_items, 2)
            0/1 labels of two annotators who rate every item.
        method : Moments or GMM object, or {'mom', 'gmm'}, optional
            The estimator and its settings (:mod:`noisycal.engines.methods`): the
            closed-form method of moments (default ``Moments()``) or the constrained GMM
            (:class:`~noisycal.engines.GMM`: weight, bounds, starts, iterations).
        groups : array-like of shape (n_items,)
            Group of each item (required). ``Moments`` needs exactly two distinct
            values; ``GMM`` needs at least two numeric values, **ordered by score**: the
            sorted labels are the groups from lowest to highest score (for example
            :func:`equal_count_groups`), because the separation constraint compares the
            first and last.
        gold : None
            Refused: the moment estimators use no item's class.
        anchor : None
            Refused: the classes are named by the constraint that both annotators' gaps
            ``b_j - a_j`` are positive.
        seed : int or JAX key, default=0
            ``GMM`` only: seed of its random starts (the moment inverse is closed form;
            it refuses a seed other than 0).
        progress : bool, default=False
            Refused when True: the fit is a closed-form inverse or a few SLSQP starts,
            with no bar.

        Returns
        -------
        AnnotatorFit
            ``engine`` holds the option object that ran. ``status`` is, for GMM:
            ``'ok'``; ``'boundary'`` when a constraint is active at the estimate
            (``details['active_constraints']`` lists them: a gap at ``min_gap``, the
            separation at ``min_separation``, a mu_g at 0 or 1, a_j at 0 or b_j at 1);
            ``'not_converged'`` when the optimiser failed; ``'not_identified'`` when both
            annotators have exactly the same mean in the two extreme groups;
            ``'adversarial_channel'`` or ``'degenerate_channel'`` (both estimators,
            replacing 'ok' or 'boundary') when an annotator's fitted channel is worse than
            chance or carries no evidence about the class
            (:mod:`noisycal.engines.checks`); ``'weakly_identified'`` (both, replacing
            'ok' or 'boundary') when the moment Jacobian is nearly singular (see the
            engine's ``weak_threshold``). ``annotations`` holds the fitted ratings (built
            from an array: items 0..n-1, annotators and classes 0 and 1).

        Raises
        ------
        ValueError
            For invalid input, naming the argument: among others ``groups`` missing or
            with missing values (NaN, None), an engine other than Moments or GMM, and
            ``gold``, ``anchor``, ``progress=True``, or a seed other than 0 with Moments.

        Warns
        -----
        IdentifiabilityWarning
            Moments: the inverse is infeasible. GMM: status ``'not_identified'``, or
            ``'boundary'`` with a gap or the separation at its lower bound (the
            identifying conditions). A boundary at 0 or 1 alone does not warn. Both:
            an adversarial or degenerate channel, or weak identification.
        ConvergenceWarning
            GMM: the optimiser did not converge.

        Notes
        -----
        GMM (Definition D.1): ``Gamma_L(theta)`` stacks
        ``q_{j,g} = a_j + (b_j - a_j) mu_g`` and ``q_{12,g} = (1 - mu_g) a1 a2 + mu_g b1 b2``
        over groups (:func:`grouped_moments`); the estimator minimises
        ``Q_n(theta) = (Gamma_hat - Gamma_L(theta))' W_n (Gamma_hat - Gamma_L(theta))`` over
        the constraint set of :func:`gmm_fit_moments`. The final Q_n, the objective of every
        start and the optimiser's message are in ``details``; the optimisation gap
        epsilon_opt of Eq. D.15 is not certified (``details['note']``). ``n_params`` is
        L + 4. Item posteriors and the log-likelihood use the per-group prevalence.
        """
        # (over 80 lines only because of the numpydoc docstring above; the body is short)
        engine = as_method(method, (Moments, GMM), where="HuiWalter")
        if gold is not None:
            raise ValueError("gold does not apply to HuiWalter: its moment estimators use "
                             "no item's class")
        if anchor is not None:
            raise ValueError("anchor does not apply to HuiWalter: the classes are named by "
                             "the constraint that both annotators' gaps b_j - a_j are "
                             "positive")
        if check_progress(progress):
            raise ValueError("progress=True does not apply to HuiWalter: the fit is a "
                             "closed-form inverse or a few SLSQP starts, with no bar")
        if groups is None:
            raise ValueError("HuiWalter needs groups= (the group of each item)")
        if isinstance(engine, Moments) and not _same(seed, 0):
            raise ValueError("seed applies only to the GMM engine's random starts; the "
                             "moment inverse (Moments) is closed form")
        A, ann = _as_two_annotators(annotations)
        levels, gi = _group_index(groups, A.shape[0], engine.name)
        if isinstance(engine, Moments):
            return _fit_mom(A, gi, levels, ann, engine)
        return _fit_gmm(A, gi, levels, ann, engine, seed=check_seed(seed))


def _same(x: object, y: object) -> bool:
    """``x == y`` for plain values of the same type, False otherwise (``'0'`` is not 0)."""
    if isinstance(x, bool) != isinstance(y, bool) or isinstance(x, str) != isinstance(y, str):
        return False
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


def _group_index(groups: ArrayLike, n_items: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``groups``; returns the sorted group labels and each item's group index."""
    g = np.asarray(groups)
    if g.shape != (n_items,):
        raise ValueError(f"groups must have one entry per item ({n_items}), got shape "
                         f"{g.shape}")
    if g.dtype.kind in "fO" and np.any(pd.isna(g)):
        raise ValueError("groups must be finite numbers or labels, without missing values; "
                         f"found {int(np.sum(pd.isna(g)))} NaN or None")
    if g.dtype.kind == "c" or (g.dtype.kind not in "biufUS" and not np.all(
            [isinstance(v, str | int | float | np.number) for v in g.ravel()])):
        raise ValueError(f"groups must be numbers or strings, got dtype {g.dtype}")
    if g.dtype.kind == "f" and not np.all(np.isfinite(g)):
        raise ValueError("groups must be finite, found an infinite value")
    if method == "gmm" and g.dtype.kind not in "biuf":
        raise ValueError("groups must be finite numbers ordered by score for the GMM "
                         f"engine, got dtype {g.dtype}")
    try:
        levels, gi = np.unique(g, return_inverse=True)
    except TypeError as exc:  # mixed types that do not sort
        raise ValueError(f"groups must be labels of one type that sort: {exc}") from exc
    gi = gi.reshape(-1)
    if method == "mom" and levels.size != 2:
        raise ValueError(f"groups must contain exactly two groups for the Moments engine "
                         f"(GMM takes more), got {levels.size}")
    if levels.size < 2:
        raise ValueError("groups must contain at least two groups for the GMM engine, got "
                         f"{levels.size}")
    return levels, gi


def _as_two_annotators(annotations: Annotations | ArrayLike
                       ) -> tuple[np.ndarray, Annotations]:
    """Validate two fully rated binary annotators; returns the (n, 2) 0/1 matrix and the
    Annotations (built from an array with items 0..n-1, annotators and classes 0, 1)."""
    if isinstance(annotations, Annotations):
        if not annotations.annotators_known:
            raise ValueError("annotations were built by Annotations.from_counts, so annotator "
                             "identities are unknown; HuiWalter needs who rated what")
        if annotations.n_annotators != 2 or annotations.n_classes != 2:
            raise ValueError("annotations must have exactly 2 annotators and 2 classes for "
                             f"HuiWalter, got {annotations.n_annotators} and "
                             f"{annotations.n_classes}")
        wide = annotations.to_wide(missing=-1)
        if np.any(wide < 0):
            raise ValueError("annotations must have both annotators rate every item for "
                             "HuiWalter")
        return wide.astype(float), annotations
    A = check_array(annotations, "annotations", finite=False)
    if A.ndim != 2 or A.shape[1] != 2:
        raise ValueError(f"annotations must have shape (n_items, 2), got {A.shape}")
    if not np.all(np.isin(A, (0.0, 1.0))):
        raise ValueError("annotations must be 0/1 labels with no missing values")
    return A, Annotations.from_wide(A.astype(np.int64), classes=[0, 1])


def _channels(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prevalence (L, 2), confusion (2, 2, 2)) from theta = (a1, b1, a2, b2, mu...)."""
    a1, b1, a2, b2 = theta[:4]
    mu = theta[4:]
    prev = np.column_stack([1 - mu, mu])
    conf = np.array([[[1 - a1, a1], [1 - b1, b1]], [[1 - a2, a2], [1 - b2, b2]]])
    return prev, conf


def _identify(theta: np.ndarray, jac: np.ndarray, weight: np.ndarray, cov: np.ndarray,
              counts: np.ndarray, ann: Annotations, post: np.ndarray, status: str,
              message: str, threshold: float, details: dict,
              others: tuple[tuple[str, str], ...] = ()) -> tuple[str, str, tuple[str, ...]]:
    """The channel checks and the local identification check (status 'ok' or 'boundary'
    only; ``details['channels']`` and ``details['identification']``), warning if either
    fails; returns the status, message and every status (with ``others``)."""
    seen = [*others, (status, message)]
    status, message, details["channels"] = channel_status(
        status, message, _channels(theta)[1], ann, post)
    seen.append((status, message))
    status, message, details["identification"] = checked_status(status, message, lambda: (
        hui_walter_identification(theta, jac, weight, cov, counts,
                                  annotators=[str(a) for a in ann.annotators],
                                  threshold=threshold)))
    if status in ("weakly_identified", "adversarial_channel", "degenerate_channel"):
        warnings.warn(f"Hui-Walter: {message}", IdentifiabilityWarning, stacklevel=4)
    return every_status(status, message, *seen)


def _fit_mom(A: np.ndarray, gi: np.ndarray, levels: np.ndarray, ann: Annotations,
             mom: Moments) -> AnnotatorFit:
    """Closed-form Hui–Walter fit on two groups."""
    q, cov, counts = sample_moments(A, gi, 2)
    theta, status, message = hui_walter_inverse(q)
    jac = moment_jacobian(np.nan_to_num(theta, nan=0.5), 2)
    details = {"moments": q, "group_mean_diff": (q[3] - q[0], q[4] - q[1]),
               "jacobian_det": float(np.linalg.det(jac)),
               "jacobian_min_sv": float(np.linalg.svd(jac, compute_uv=False).min()),
               "groups": levels, "group_index": gi, "method": "mom"}
    prev, conf = _channels(theta)
    if status != "ok":
        warnings.warn(f"Hui-Walter: {message}", IdentifiabilityWarning, stacklevel=3)
        post = np.full((A.shape[0], 2), np.nan)
        loglik = float("nan")
    else:
        post, loglik = _posterior_loglik(A, gi, prev, theta[[0, 2]], theta[[1, 3]])
    solved = status == "ok"
    status, message, statuses = _identify(theta, jac, np.eye(6), cov, counts, ann, post,
                                          status, message, mom.weak_threshold, details)
    return AnnotatorFit("hui_walter", "mom", ann.classes, ann.annotators, ann.items, prev,
                        conf, post, loglik, 6, status, message, solved, 0, None, details,
                        annotations=ann, engine=mom, statuses=statuses)


def _fit_gmm(A: np.ndarray, gi: np.ndarray, levels: np.ndarray, ann: Annotations,
             gmm: GMM, *, seed: Seed) -> AnnotatorFit:
    """Constrained grouped GMM on L >= 2 ordered groups (Definition D.1)."""
    L = levels.size
    weight, min_gap, min_separation = gmm.weight, gmm.min_gap, gmm.min_separation
    n_starts = gmm.n_starts
    q, cov, counts = sample_moments(A, gi, L)
    sol, details = two_step_gmm(q, cov, counts, weight=weight, min_gap=min_gap,
                                min_separation=min_separation, n_starts=n_starts, seed=seed,
                                max_iter=gmm.max_iter)
    theta = sol.theta
    jac = moment_jacobian(theta, L)
    diff = (float(q[3 * L - 3] - q[0]), float(q[3 * L - 2] - q[1]))
    active = active_constraints(theta, min_gap, min_separation)
    details.update({
        "method": "gmm", "weight": weight,
        "objective": sol.objective, "n_starts": n_starts,
        "start_objectives": sol.start_objectives, "start_kinds": sol.start_kinds,
        "best_start": sol.best_start, "optimizer_message": sol.message,
        "moments": q, "group_sizes": counts, "groups": levels, "group_index": gi,
        "theta": theta,
        "group_mean_diff": diff,
        "jacobian_min_sv": float(np.linalg.svd(jac, compute_uv=False).min()),
        "jacobian_det": float(np.linalg.det(jac)) if L == 2 else None,
        "min_gap": min_gap, "min_separation": min_separation,
        "active_constraints": tuple(active), "note": GMM_NOTE})
    status, message, others = _gmm_status(sol.success, sol.message, theta, diff, active)
    prev, conf = _channels(theta)
    post, loglik = _posterior_loglik(A, gi, prev, theta[[0, 2]], theta[[1, 3]])
    status, message, statuses = _identify(theta, jac, details["weight_matrix"], cov, counts,
                                          ann, post, status, message, gmm.weak_threshold,
                                          details, others)
    return AnnotatorFit("hui_walter", "gmm", ann.classes, ann.annotators, ann.items, prev,
                        conf, post, loglik, L + 4, status, message, sol.success, sol.n_iter,
                        None, details, annotations=ann, engine=gmm, statuses=statuses)


def _gmm_status(success: bool, optimizer_message: str, theta: np.ndarray,
                diff: tuple[float, float], active: list[str]
                ) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """Status and message of a GMM fit, and the other problems found (most severe first),
    warning for the first where the identifying conditions fail."""
    found = []
    if max(abs(diff[0]), abs(diff[1])) <= 1e-12:
        found.append(("not_identified", (
            "both annotators have the same mean in the lowest and highest groups, so the "
            "prevalences of the extreme groups cannot be separated"), IdentifiabilityWarning))
    if not (success and np.all(np.isfinite(theta))):
        found.append(("not_converged", f"the optimiser failed: {optimizer_message}",
                      ConvergenceWarning))
    if active:
        gap = any("gap" in c or "separation" in c for c in active)
        found.append(("boundary", ("the estimate is on the boundary of the parameter set: "
                                   + "; ".join(active)),
                      IdentifiabilityWarning if gap else None))
    if not found:
        return "ok", "", ()
    status, message, category = found[0]
    if category is not None:
        warnings.warn(f"Hui-Walter GMM: {message}", category, stacklevel=4)
    return status, message, tuple((code, text) for code, text, _ in found[1:])


def _posterior_loglik(A: np.ndarray, gi: np.ndarray, prev: np.ndarray, a: np.ndarray,
                      b: np.ndarray) -> tuple[np.ndarray, float]:
    """Item posteriors P(Y | A, G) and the log-likelihood with per-group prevalence."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lik1 = prev[gi, 1] * np.prod(np.where(A == 1, b, 1 - b), axis=1)
        lik0 = prev[gi, 0] * np.prod(np.where(A == 1, a, 1 - a), axis=1)
        post = np.column_stack([lik0, lik1]) / (lik0 + lik1)[:, None]
        loglik = float(np.sum(np.log(lik0 + lik1)))
    return post, loglik




def equal_count_groups(scores: ArrayLike, n_groups: int = 2, *, odd: str = "high"
                       ) -> np.ndarray:
    """Equal-count score-rank groups with deterministic tie breaking.

    Items are sorted by ``(score, index)`` with a stable sort, so tied scores keep their
    input order, and the sorted sequence is cut into ``n_groups`` consecutive blocks whose
    sizes differ by at most one. With ``n = n_groups * k + r`` the ``r`` blocks of size
    ``k + 1`` are the highest-score ones (``odd='high'``) or the lowest (``odd='low'``).
    For two groups the first ``floor(n / 2)`` sorted items form the low group and the rest
    the high group, so an odd item goes to the high group (the paper fixes no tie or
    remainder rule; this one is noisycal's choice).

    Parameters
    ----------
    scores : array-like of shape (n_items,)
        Finite scores (for example predicted probabilities).
    n_groups : int, default=2
        L >= 2, at most ``n_items``.
    odd : {'high', 'low'}, default='high'
        Which end receives the remainder items when ``n_items`` is not a multiple of
        ``n_groups``.

    Returns
    -------
    ndarray of shape (n_items,), dtype int64
        Group of each item in input order, ``0`` (lowest scores) to ``n_groups - 1``; the
        labels are ordered by score, as ``HuiWalter.fit(method=GMM())`` requires.

    Raises
    ------
    ValueError
        If ``scores`` is not a finite 1-D array, ``n_groups`` is not an integer in
        ``[2, n_items]``, or ``odd`` is not 'high' or 'low'.

    Examples
    --------
    >>> from noisycal.annotators import equal_count_groups
    >>> equal_count_groups([0.5, 0.1, 0.5, 0.3, 0.5]).tolist()
    [1, 0, 1, 0, 1]
    >>> equal_count_groups([0.5, 0.1, 0.5, 0.3, 0.5], odd="low").tolist()
    [0, 0, 1, 0, 1]
    """
    z = check_array(scores, "scores", ndim=1)
    L = check_int(n_groups, "n_groups", minimum=2)
    check_choice(odd, "odd", ("high", "low"))
    n = z.size
    if L > n:
        raise ValueError(f"n_groups must be at most the number of scores ({n}) so that no "
                         f"group is empty, got {L}")
    k, r = divmod(n, L)
    sizes = np.full(L, k)
    if odd == "high":
        sizes[L - r:] += 1
    else:
        sizes[:r] += 1
    order = np.argsort(z, kind="stable")
    out = np.empty(n, dtype=np.int64)
    out[order] = np.repeat(np.arange(L), sizes)
    return out
