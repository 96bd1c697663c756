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
        self.groups = np.eye(self.L)[self.group] if self.L > 1 else None   # (n, L)

    def rows_times(self, table: np.ndarray) -> np.ndarray:
        """``rows @ table[s]`` for every start: (S, J K, K) -> (S, n, K)."""
        S, JK, K = table.shape
        out = self.rows @ table.transpose(1, 0, 2).reshape(JK, S * K)
        return np.asarray(out).reshape(self.n, S, K).transpose(1, 0, 2)

    def codes_times(self, pw: np.ndarray) -> np.ndarray:
        """``codes @ pw[s]`` for every start: (S, n, K) -> (S, J K, K)."""
        S, n, K = pw.shape
        out = self.codes @ pw.transpose(1, 0, 2).reshape(n, S * K)
        return np.asarray(out).reshape(self.J * K, S, K).transpose(1, 0, 2)


def _m_step(post: np.ndarray, d: _Data, w: np.ndarray, alpha: np.ndarray | None,
            beta: np.ndarray | None, one_coin: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`noisycal.engines.em.dawid_skene.m_step` for the full and one-coin channels,
    for S starts at once: posteriors (S, n, K) -> prevalence (S, L, K), confusion
    (S, J, K, K)."""
    K, S = d.K, post.shape[0]
    pw = post * w[None, :, None]
    if d.L == 1:
        n_g = pw.sum(axis=1, keepdims=True)
    else:
        n_g = np.einsum("snk,nl->slk", pw, d.groups)
    if alpha is not None:
        n_g = n_g + (alpha - 1.0)
    tot = n_g.sum(axis=2, keepdims=True)
    prevalence = np.where(tot > 0, n_g / np.where(tot > 0, tot, 1.0), 1.0 / K)
    # counts[s, j, true, observed]: the weighted posteriors summed over each code's ratings
    counts = d.codes_times(pw).reshape(S, d.J, K, K).transpose(0, 1, 3, 2)
    if one_coin:
        correct = np.trace(counts, axis1=2, axis2=3)
        total = counts.sum(axis=(2, 3))
        if beta is not None:
            a, b = beta[0, 0], (K - 1) * beta[0, 1]
            acc = (correct + a - 1.0) / (total + a + b - 2.0)
        else:
            acc = correct / np.maximum(total, LOG_FLOOR)
        eye = np.eye(K)
        off = (1.0 - acc) / (K - 1)
        return prevalence, acc[..., None, None] * eye + off[..., None, None] * (1.0 - eye)
    if beta is not None:
        counts = counts + (beta - 1.0)
    rows = counts.sum(axis=3, keepdims=True)
    return prevalence, np.where(rows > 0, counts / np.where(rows > 0, rows, 1.0), 1.0 / K)


def _e_step(prevalence: np.ndarray, confusion: np.ndarray, d: _Data,
            gold: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`noisycal.engines.em.dawid_skene.e_step` for S starts: posteriors
    (S, n, K) and each row's log-likelihood (S, n) (at the gold class for gold rows)."""
    K, S = d.K, prevalence.shape[0]
    table = _log(confusion).transpose(0, 1, 3, 2).reshape(S, d.J * K, K)
    joint = d.rows_times(table) + _log(prevalence)[:, d.group]
    top = joint.max(axis=2, keepdims=True)
    lse = np.log(np.exp(joint - top).sum(axis=2)) + top[..., 0]
    post = np.exp(joint - lse[..., None])
    if gold is not None:
        known = gold >= 0
        at = np.take_along_axis(joint, np.where(known, gold, 0)[None, :, None], axis=2)
        lse = np.where(known[None, :], at[..., 0], lse)
        post[:, known] = np.eye(K)[gold[known]]
    return post, lse


def _log_prior(prevalence: np.ndarray, confusion: np.ndarray, alpha: np.ndarray | None,
               beta: np.ndarray | None, one_coin: bool) -> np.ndarray:
    """:func:`noisycal.engines.em.dawid_skene.log_prior` for the two channels, per start
    (S,)."""
    lp = np.zeros(prevalence.shape[0])
    if alpha is not None:
        lp += np.sum((alpha - 1.0) * _log(prevalence), axis=(1, 2))
    if beta is not None:
        if one_coin:
            K = confusion.shape[-1]
            acc, a, b = confusion[:, :, 0, 0], beta[0, 0], (K - 1) * beta[0, 1]
            lp += np.sum((a - 1.0) * _log(acc) + (b - 1.0) * _log(1.0 - acc), axis=1)
        else:
            lp += np.sum((beta - 1.0) * _log(confusion), axis=(1, 2, 3))
    return lp


def fit_em_numpy(post0: Any, data: DSData, gold: Any, alpha: Any, beta: Any, *,
                 one_coin: bool, max_iter: int, tol: float, weights: Any = None,
                 progress: bool = False) -> tuple:
    """:func:`noisycal.engines.em.dawid_skene.fit_em` in NumPy.

    The starts run together, each until its own stopping rule holds (as the compiled
    program's vmapped loop runs them): an iteration updates only the starts still
    running.

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
    post = np.array(post0, np.float64)
    S = post.shape[0]
    g = None if gold is None else np.asarray(gold, np.int64)
    a = None if alpha is None else np.asarray(alpha, np.float64)
    b = None if beta is None else np.asarray(beta, np.float64)
    w = np.ones(d.n) if weights is None else np.asarray(weights, np.float64)
    n_w = float(d.n) if weights is None else float(np.sum(w))
    if g is not None:
        known = g >= 0
        post[:, known] = np.eye(d.K)[g[known]]
    prev = np.full((S, d.L, d.K), 1.0 / d.K)
    conf = np.full((S, d.J, d.K, d.K), 1.0 / d.K)
    obj, loglik = np.full(S, -np.inf), np.full(S, -np.inf)
    n_iter, converged = np.zeros(S, np.int64), np.zeros(S, bool)
    run = np.ones(S, bool)      # the first step always runs
    while run.any():
        i = np.flatnonzero(run)
        p_i, c_i = _m_step(post[i], d, w, a, b, one_coin)
        post_i, lse = _e_step(p_i, c_i, d, g)
        ll = np.sum(np.where(w > 0, w * lse, 0.0), axis=1)
        o = (ll + _log_prior(p_i, c_i, a, b, one_coin)) / n_w
        converged[i] = np.abs(o - obj[i]) < tol
        post[i], prev[i], conf[i], obj[i], loglik[i] = post_i, p_i, c_i, o, ll
        n_iter[i] += 1
        if progress:
            reach_host(int(n_iter.max()))
        run = (n_iter < max_iter) & ~converged & np.isfinite(obj)
    return post, prev, conf, obj, loglik, n_iter, converged
