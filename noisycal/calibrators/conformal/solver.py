r"""Per-row temperatures of conformal temperature scaling, by vectorised bisection.

Conformal temperature scaling is "TS (ours)" of "Adaptive Set-Mass Calibration with
Conformal Prediction", Section 3.2. A row's temperature is the largest temperature whose
softmax puts at least 1 - alpha on the conformal set. Used by
:class:`~noisycal.calibrators.ConformalTemperature`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...metrics.set_mass import chunk_rows

__all__ = ["conformal_temperatures", "TemperatureSolution"]


def _unsolved_rows(status: np.ndarray) -> tuple[str, str]:
    """'ok', 'cap', 'unreachable' or 'cap_and_unreachable' for per-row outcomes, and a
    phrase counting each kind of row without a temperature of in-set mass 1 - alpha."""
    n_cap, n_unr = (int(np.sum(status == k)) for k in ("cap", "unreachable"))
    parts = ([f"{n_cap} hold at least 1 - alpha in their set at every temperature and get "
              "the cap tau_max (near uniform)"] if n_cap else []) + \
        ([f"{n_unr} never reach 1 - alpha in their set, even at tau_min, and get tau_min"]
         if n_unr else [])
    kind = "_and_".join(k for k, c in (("cap", n_cap), ("unreachable", n_unr)) if c)
    return kind or "ok", "; ".join(parts)


class TemperatureSolution(NamedTuple):
    """Per-row temperatures of :func:`conformal_temperatures`.

    Attributes
    ----------
    tau : ndarray of shape (n,)
    status : ndarray of str, shape (n,)
        'ok' (in-set mass 1 - alpha within the bisection's tolerance), 'cap' (the set
        holds at least 1 - alpha for every temperature, |C|/K >= 1 - alpha: tau is the
        cap ``tau_max``), 'empty' (empty set: unchanged, tau = 1, or ``tau_min`` with
        ``empty_set='sharpen'``), 'unreachable' (even ``tau_min`` leaves less than
        1 - alpha in the set, e.g. a tie across the set boundary: tau = ``tau_min``).
    n_evaluations : int
        In-set mass evaluations of the largest chunk (each costs about one softmax of its
        rows): the two bracket ends plus the bisection steps.
    """

    tau: np.ndarray
    status: np.ndarray
    n_evaluations: int = 0


def conformal_temperatures(S: np.ndarray, sets: np.ndarray, alpha: float, *,
                           empty_set: str = "unchanged", tau_min: float = 1e-4,
                           tau_max: float = 1e6, tol: float = 1e-12,
                           max_iter: int = 200) -> TemperatureSolution:
    r"""Largest per-row temperature with in-set mass >= 1 - alpha, by vectorised bisection.

    The in-set mass :math:`r(\beta) = \sum_{y \in C} \mathrm{softmax}(\beta s)_y` of a
    top-k set is non-decreasing in :math:`\beta = 1/\tau`, so the answer is the smallest
    :math:`\beta` in :math:`[1/\tau_{max}, 1/\tau_{min}]` with :math:`r \ge 1 - \alpha`;
    every row is bisected at once in :math:`\log\beta` until the bracket is below ``tol``
    (relative), keeping the feasible end. One step costs about one softmax of the rows.

    Parameters
    ----------
    S : ndarray of shape (n, K)
        Logits (or log-probabilities).
    sets : bool ndarray of shape (n, K)
        Conformal sets (top-k sets of S).
    alpha : float
    empty_set : {'unchanged', 'sharpen'}, default='unchanged'
    tau_min, tau_max : float
        The range of temperatures (the authors' defaults).
    tol : float, default=1e-12
    max_iter : int, default=200

    Returns
    -------
    TemperatureSolution
    """
    n, K = S.shape
    target = 1.0 - alpha
    tau = np.ones(n)
    status = np.full(n, "ok", dtype=object)
    size = sets.sum(axis=1)
    step = chunk_rows(K)
    lb_lo, lb_hi = math.log(1.0 / tau_max), math.log(1.0 / tau_min)
    n_eval = 0
    for a in range(0, n, step):
        D = S[a:a + step] - S[a:a + step].max(axis=1, keepdims=True)
        M = sets[a:a + step]

        def r(log_beta: np.ndarray, D: np.ndarray = D, M: np.ndarray = M) -> np.ndarray:
            e = np.exp(np.exp(log_beta)[:, None] * D)
            return np.sum(e, axis=1, where=M) / np.sum(e, axis=1)

        m = D.shape[0]
        lo, hi = np.full(m, lb_lo), np.full(m, lb_hi)
        cap = r(lo) >= target
        unreachable = r(hi) < target
        evals = 2
        for _ in range(max_iter):
            if np.all(hi - lo <= tol * np.maximum(1.0, np.abs(hi))):
                break
            mid = 0.5 * (lo + hi)
            ok = r(mid) >= target
            evals += 1
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        t = np.exp(-hi)
        t = np.where(cap, tau_max, np.where(unreachable, tau_min, t))
        st = np.where(cap, "cap", np.where(unreachable, "unreachable", "ok"))
        tau[a:a + step] = t
        status[a:a + step] = st
        n_eval = max(n_eval, evals)
    empty = size == 0
    tau[empty] = tau_min if empty_set == "sharpen" else 1.0
    status[empty] = "empty"
    return TemperatureSolution(tau, status.astype(str), n_eval)
