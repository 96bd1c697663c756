"""EM for the Dawid–Skene and one-coin models in NumPy, where compiling would dominate.

The compiled EM program (:func:`noisycal.engines.em.dawid_skene.fit_em`) costs 1.5-3 s to
trace and compile in a fresh process, more than a whole fit of a few thousand rating
patterns takes in NumPy (the crowd-sourcing tools' first fits take well under a second).
:func:`fit_em_numpy` runs the same iteration, step for step, on NumPy arrays: the M-step
of Dawid and Skene (1979, their Eq. 2.3-2.4; MAP with Dirichlet pseudo-counts), the
log-scale E-step (their Eq. 2.5) on the model's likelihood
(:func:`noisycal.models.dawid_skene.joint_log_likelihood`: the same floored log table,
one row per rating code), the same objective (mean log-likelihood per weighted item plus
the mean log prior) and the same stopping rule, start by start. The numbers are those of
the compiled program to round-off (checked in tests/engines/test_first_call.py).
:func:`numpy_applies` says when :func:`~noisycal.engines.em.dawid_skene.fit_em` takes this
path: the full and one-coin channels (the constrained channels of MACE and the
class-conditional model stay compiled), no sharding, and at most
:data:`NUMPY_EM_MAX_CELLS` (rows x classes x starts).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from noisycal.models.dawid_skene import LOG_FLOOR, DSData

__all__ = ["NUMPY_EM_MAX_CELLS", "numpy_applies", "fit_em_numpy"]

#: The NumPy path is taken up to this many (rows x classes x starts): at 2^20 an iteration
#: of every start costs about as much as the compiled program's iteration, and a fit of
#: some tens of iterations less than compiling it.
NUMPY_EM_MAX_CELLS = 2 ** 20


def numpy_applies(data: DSData, n_starts: int, one_coin: bool | str) -> bool:
    """Whether :func:`fit_em_numpy` runs this fit (see the module docstring).

    Parameters
    ----------
    data : DSData
    n_starts : int
    one_coin : bool or str
        The channel: only ``False`` (full) and ``True`` (one-coin) run in NumPy.
    """
    return (one_coin is False or one_coin is True) and (
        data.n_items * data.n_classes * n_starts <= NUMPY_EM_MAX_CELLS)


def _log(x: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(x, LOG_FLOOR))


class _Data:
    """The ratings as a sparse (rating code x row) count matrix, and the groups."""

    def __init__(self, data: DSData) -> None:
        from scipy import sparse

        self.n, self.J, self.K, self.L = (data.n_items, data.n_annotators, data.n_classes,
                                          data.n_groups)
        code = np.asarray(data.annotator, np.int64) * self.K + np.asarray(data.label)
        self.codes = sparse.csr_matrix(
            (np.ones(code.size), (code, np.asarray(data.item, np.int64))),
            shape=(self.J * self.K, self.n))
        self.rows = self.codes.T.tocsr()
        self.group = np.asarray(data.group, np.int64)


def _m_step(post: np.ndarray, d: _Data, w: np.ndarray, alpha: np.ndarray | None,
            beta: np.ndarray | None, one_coin: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`noisycal.engines.em.dawid_skene.m_step` for the full and one-coin channels."""
    K = d.K
    pw = post * w[:, None]
    if d.L == 1:
        n_g = pw.sum(axis=0, keepdims=True)
    else:
        n_g = np.zeros((d.L, K))
        np.add.at(n_g, d.group, pw)
    if alpha is not None:
        n_g = n_g + (alpha - 1.0)
    tot = n_g.sum(axis=1, keepdims=True)
    prevalence = np.where(tot > 0, n_g / np.where(tot > 0, tot, 1.0), 1.0 / K)
    # counts[j, true, observed]: the weighted posteriors summed over each code's ratings
    counts = np.asarray(d.codes @ pw).reshape(d.J, K, K).transpose(0, 2, 1)
    if one_coin:
        correct = np.trace(counts, axis1=1, axis2=2)
        total = counts.sum(axis=(1, 2))
        if beta is not None:
            a, b = beta[0, 0], (K - 1) * beta[0, 1]
            acc = (correct + a - 1.0) / (total + a + b - 2.0)
        else:
            acc = correct / np.maximum(total, LOG_FLOOR)
        eye = np.eye(K)
        off = (1.0 - acc) / (K - 1)
        return prevalence, acc[:, None, None] * eye + off[:, None, None] * (1.0 - eye)
    if beta is not None:
        counts = counts + (beta - 1.0)
    rows = counts.sum(axis=2, keepdims=True)
    return prevalence, np.where(rows > 0, counts / np.where(rows > 0, rows, 1.0), 1.0 / K)


def _e_step(prevalence: np.ndarray, confusion: np.ndarray, d: _Data,
            gold: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`noisycal.engines.em.dawid_skene.e_step`: posteriors and each row's
    log-likelihood (at the gold class for gold rows)."""
    K = d.K
    table = _log(confusion).transpose(0, 2, 1).reshape(d.J * K, K)
    joint = np.asarray(d.rows @ table) + _log(prevalence)[d.group]
    top = joint.max(axis=1, keepdims=True)
    lse = np.log(np.exp(joint - top).sum(axis=1)) + top[:, 0]
    post = np.exp(joint - lse[:, None])
    if gold is not None:
        known = gold >= 0
        at = np.take_along_axis(joint, np.where(known, gold, 0)[:, None], axis=1)[:, 0]
        lse = np.where(known, at, lse)
        post[known] = np.eye(K)[gold[known]]
    return post, lse


def _log_prior(prevalence: np.ndarray, confusion: np.ndarray, alpha: np.ndarray | None,
               beta: np.ndarray | None, one_coin: bool) -> float:
    """:func:`noisycal.engines.em.dawid_skene.log_prior` for the two channels."""
    lp = 0.0
    if alpha is not None:
        lp += float(np.sum((alpha - 1.0) * _log(prevalence)))
    if beta is not None:
        if one_coin:
            K = confusion.shape[-1]
            acc, a, b = confusion[:, 0, 0], beta[0, 0], (K - 1) * beta[0, 1]
            lp += float(np.sum((a - 1.0) * _log(acc) + (b - 1.0) * _log(1.0 - acc)))
        else:
            lp += float(np.sum((beta - 1.0) * _log(confusion)))
    return lp


def fit_em_numpy(post0: Any, data: DSData, gold: Any, alpha: Any, beta: Any, *,
                 one_coin: bool, max_iter: int, tol: float, weights: Any = None,
                 progress: bool = False) -> Any:
    """:func:`noisycal.engines.em.dawid_skene.fit_em` in NumPy, start by start.

    Parameters
    ----------
    post0, data, gold, alpha, beta, one_coin, max_iter, tol, weights, progress
        As in :func:`~noisycal.engines.em.dawid_skene.fit_em` (``one_coin``: True or
        False only).

    Returns
    -------
    tuple of ndarray
        The fields of :class:`~noisycal.engines.em.dawid_skene.EMState` (post, prevalence,
        confusion, objective, loglik, n_iter, converged), stacked over the starts.
    """
    from ..._util.progress import _reach_host as reach_host

    d = _Data(data)
    post0 = np.asarray(post0, np.float64)
    g = None if gold is None else np.asarray(gold, np.int64)
    a = None if alpha is None else np.asarray(alpha, np.float64)
    b = None if beta is None else np.asarray(beta, np.float64)
    w = np.ones(d.n) if weights is None else np.asarray(weights, np.float64)
    n_w = float(d.n) if weights is None else float(np.sum(w))
    out = []
    for start in post0:
        post = start
        if g is not None:
            known = g >= 0
            post = np.where(known[:, None], np.eye(d.K)[np.where(known, g, 0)], post)
        obj_prev, n_iter, converged = -np.inf, 0, False
        while True:
            prev, conf = _m_step(post, d, w, a, b, one_coin)
            post, lse = _e_step(prev, conf, d, g)
            loglik = float(np.sum(np.where(w > 0, w * lse, 0.0)))
            obj = (loglik + _log_prior(prev, conf, a, b, one_coin)) / n_w
            converged = bool(abs(obj - obj_prev) < tol)
            obj_prev, n_iter = obj, n_iter + 1
            if progress:
                reach_host(n_iter)
            if not (n_iter < max_iter and not converged and np.isfinite(obj)):
                break
        out.append((post, prev, conf, obj, loglik, n_iter, converged))
    return tuple(np.asarray(x) for x in zip(*out, strict=True))
