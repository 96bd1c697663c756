"""The exact temperature-scaling solve: the root of the log loss's derivative in beta = 1/T.

With target rows ``t_i`` (row sums ``r_i``) and scores ``s_i``, the derivative of the
mean log loss of ``softmax(beta s_i)`` is ``g(beta) = mean_i r_i E[s_i] - m``,
``m = mean_i <t_i, s_i>``, non-decreasing in beta (:mod:`noisycal.calibrators.scaling.temperature`
for the model and the two limits ``g(0) >= 0`` and ``g(infinity) <= 0``, which are
decided here before any pass). Each pass over the scores (:func:`newton_pass`) gives
``g``, its slope ``g'`` (the mean variance) and ``g''`` (the mean third central moment);
Halley's step is kept inside a bracket of the root, else Newton's, else bisection.

How the passes are kept few and cheap:

- the start is the root on an evenly spaced subset of about 1,000 items (itself started
  from 100), found only to a few per cent, its sampling error;
- from ``SINGLE_MIN_SCORES`` scores on, one single-precision pass over all items takes a
  Halley step from there (error about 1e-5), so that usually one double-precision pass
  ends the iteration: the error its Halley step leaves, estimated from the derivatives
  (:func:`_halley_error`), must be below 1e-14, relative;
- every pass runs over row blocks of about ``BLOCK_SCORES`` scores in reused buffers,
  and the four class sums of a block are one matrix-vector product;
- when the rows' offsets are small against their spread, the scores are exponentiated
  without subtracting the row maxima (:func:`_unshifted_ok`);
- the log loss at the fitted beta is read off the last pass by a Taylor step.

A slope of 0 (every softmax row one-hot at the current beta) makes the iteration bisect;
a sum of the scores that overflows is rescaled. Scores beyond ``2^+-500`` are solved on a
power-of-2 rescaling (:func:`solve_with_loss`), since the moments would over- or
underflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["NewtonPass", "newton_pass", "solve_inverse_temperature", "solve_with_loss"]

#: Relative tolerance of the two limit tests g(0) >= 0 and g(infinity) <= 0.
LIMIT_RTOL = 1e-12
#: Larger fits start Halley from the root on every k-th item, about this many items (the
#: start only saves passes over the full data; the root is that of the full data).
WARM_START_ITEMS = 1000
#: The subset's root is a start only (it differs from the full data's root by the
#: subset's sampling error, a few per cent at 1,000 items): a Halley or Newton step at
#: most this size (relative) ends its iteration.
START_STEP = 0.05
#: From this many scores on, the start is refined by one single-precision pass over all
#: items (a Halley step from the subset's root, error about 1e-5) before the
#: double-precision passes (about 35% cheaper than one of them).
SINGLE_MIN_SCORES = 1 << 18
#: A Newton step at most this size relative to beta ends the iteration (the error left,
#: of the order of the step squared times the scores' scale, is below machine precision).
NEWTON_STEP = 1e-9
#: A Halley step ends the iteration when the error it leaves, predicted from the pass's
#: derivatives as ``|C| step^3`` (:func:`_halley_error`), is below ``HALLEY_RTOL``
#: (relative) and the step is at most ``HALLEY_RTOL ** 0.25`` (relative; the asymptotic
#: prediction holds). Usually one double-precision pass after the refined start.
HALLEY_RTOL = 1e-14
#: Passes exponentiate the unshifted scores (one operation fewer per score) when every
#: row maximum is at most this many times the mean row spread in absolute value (and
#: within the exponential's range at beta, :func:`_unshifted_ok`).
UNSHIFTED_OFFSET = 16.0
#: Relative errors assumed for a pass's curvature in single and double precision (they
#: widen the difference quotient that estimates the third derivative of g in
#: :func:`_halley_error`).
SINGLE_RERR, DOUBLE_RERR = 1e-3, 1e-10
#: The log loss at the fitted beta is read off the last pass by a Taylor step up to this
#: size (relative; :func:`_log_loss`).
TAYLOR_STEP = 1e-4
#: Passes of the safeguarded iteration (bisection alone needs about 1100 from a bracket
#: [0, 2^1023] down to machine precision).
MAX_ITER = 2000
#: Scores per block of a pass: the passes run over row blocks of about this many scores
#: (256 KiB of float64) in reused buffers, which stay in cache, instead of whole-matrix
#: temporaries (about 4x faster at n = 10,000, K = 100).
BLOCK_SCORES = 32768


class NewtonPass(NamedTuple):
    """What one pass over the scores at ``beta`` gives (means over items, rows weighted
    by their target sums ``r_i``; the moments are those of ``s_i`` under
    ``softmax(beta s_i)``).

    Attributes
    ----------
    g : float
        The derivative of the log loss in beta, ``mean_i r_i E[s_i] - m``.
    slope : float
        Its derivative, ``mean_i r_i Var[s_i]``.
    curvature : float
        The next derivative, ``mean_i r_i E[(s_i - E[s_i])^3]`` (for Halley's step).
    loss : float
        The mean log loss at beta, ``mean_i r_i log sum_k exp(beta s_ik) - beta m``.
    """

    g: float
    slope: float
    curvature: float
    loss: float


def newton_pass(beta: float, S: np.ndarray, smax: np.ndarray, r: np.ndarray | None,
                m: float, *, single: bool = False, shift: bool = True) -> NewtonPass:
    """One pass over the scores at ``beta`` (:class:`NewtonPass`), by cache-sized blocks.

    Parameters
    ----------
    beta : float
        The inverse temperature, ``> 0``.
    S : ndarray of shape (n, K)
        Scores.
    smax : ndarray of shape (n,)
        Their row maxima.
    r : ndarray of shape (n,) or None
        Target row sums (None: all 1).
    m : float
        ``mean_i <t_i, s_i>``, the target's statistic.
    single : bool, default=False
        Compute the exponentials and class sums in single precision (relative error
        about 1e-6 in the result; for a start only).
    shift : bool, default=True
        Exponentiate ``beta (s_ik - max_k s_ik)`` (every exponential at most 1) rather
        than ``beta s_ik``, which saves one operation per score but may overflow or lose
        precision (:func:`_unshifted_ok` says when it does not). Either way g and the
        loss are formed from the shifted means (``m - mean_i r_i max_k s_ik`` when
        shifted), so that large row offsets do not cancel.
    """
    n = S.shape[0]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        mean, slope, curvature, lse = _pass_rows(beta, S, smax if shift else None, r,
                                                 single) / n
    m_shift = m - (_weighted_mean(smax, r) if shift else 0.0)
    return NewtonPass(float(mean - m_shift), float(slope), float(curvature),
                      float(lse - beta * m_shift))


def solve_inverse_temperature(S: np.ndarray, T: np.ndarray, *,
                              smax: np.ndarray | None = None) -> tuple[float, str, int]:
    """The minimiser beta* = 1/T* of the temperature-scaling log loss, exactly.

    Parameters
    ----------
    S : ndarray of shape (n, K)
        Scores (logits or log-probabilities).
    T : ndarray of shape (n, K)
        Target rows, each summing to 1 (any real entries).
    smax : ndarray of shape (n,), optional
        The row maxima of ``S`` when already computed.

    Returns
    -------
    beta : float
        The root of g (``0.0`` when T* is infinite, ``inf`` when T* = 0).
    kind : {'root', 'infinite_temperature', 'zero_temperature', 'not_converged'}
        Which case the fit is in (module docstring).
    n_iter : int
        Double-precision passes of the Halley iteration over all the scores (0 in the
        limit cases).

    Notes
    -----
    The test ``g(0) >= 0`` uses the tolerance ``LIMIT_RTOL`` times the (target-weighted)
    mean row spread ``mean_i r_i (max_k s_ik - mean_k s_ik)``; the test
    ``g(infinity) <= 0`` uses ``LIMIT_RTOL`` times the larger of ``mean_i |max_k s_ik|``
    and ``|m|`` (rounding in the two means it compares; a masked class at -1e16 does not
    widen it). ``g(infinity)`` needs no pass of its own: the mean of ``s_i`` over its
    argmax classes is the row maximum.
    """
    r = T.sum(axis=1)
    beta, kind, n_iter, _ = solve_with_loss(S, None if np.all(r == 1.0) else r,
                                            np.einsum("ij,ij->i", T, S),
                                            S.max(axis=1) if smax is None else smax)
    return beta, kind, n_iter


def solve_with_loss(S: np.ndarray, r: np.ndarray | None, ts: np.ndarray, smax: np.ndarray,
                    *, total: float | None = None
                    ) -> tuple[float, str, int, Callable[[float], float]]:
    """The root beta*, with the mean log loss as a function of beta.

    Scores whose largest ``|max_k s_ik|`` lies beyond ``2^+-500`` would over- or
    underflow the moments (Var[s] ~ s^2): they are solved times a power of 2, c (exact),
    whose root is beta* / c, with the same loss.

    Parameters
    ----------
    S : ndarray of shape (n, K)
        Scores.
    r : ndarray of shape (n,) or None
        Target row sums (None: all 1).
    ts : ndarray of shape (n,)
        Item scores ``<t_i, s_i>``.
    smax : ndarray of shape (n,)
        Row maxima of ``S``.
    total : float, optional
        ``S.sum()`` when already computed.

    Returns
    -------
    beta, kind, n_iter
        As :func:`solve_inverse_temperature`.
    loss_at : callable
        The mean log loss at a given beta (read off the last pass near beta*,
        :func:`_log_loss`).
    """
    top = float(np.max(np.abs(smax)))
    c = 1.0 if 2.0 ** -500 <= top <= 2.0 ** 500 or top == 0.0 else 2.0 ** -round(math.log2(top))
    Sc, smc = (S, smax) if c == 1.0 else (S * c, smax * c)
    tot = None if total is None or not math.isfinite(total * c) else total * c
    beta, kind, n_iter, last = _solve(Sc, r, ts * c, smc, total=tot)
    m = float(np.mean(ts * c))
    return beta * c, kind, n_iter, lambda b: _log_loss(Sc, smc, r, m, b / c, last)


def _weighted_mean(v: np.ndarray, r: np.ndarray | None) -> float:
    """``mean_i r_i v_i`` (``r=None``: the plain mean)."""
    return float(np.mean(v)) if r is None else float(r @ v) / len(v)


def _pass_rows(beta: float, S: np.ndarray, smax: np.ndarray | None,
               r: np.ndarray | None, single: bool = False) -> np.ndarray:
    """The sums over rows of ``r_i`` times ``E[s_i] - shift_i``, ``Var[s_i]``, the third
    central moment and ``log sum_k exp(x_ik)``, with ``x = beta (s - shift)`` and the
    shift the row maximum (``smax=None``: no shift).

    A block's powers ``e, e x, e x^2, e x^3`` (``e = exp(x)``) are written one after
    another into one buffer and summed over classes by one matrix-vector product; the
    per-row moments follow after the loop."""
    n, K = S.shape
    dtype = np.float32 if single else np.float64
    rows = max(1, min(n, BLOCK_SCORES // K))
    bufs = (np.empty((rows, K), dtype), np.empty((4, rows, K), dtype))
    ones = np.ones(K, dtype)
    sums = np.empty((4, n))  # per row: sum_k e, e x, e x^2, e x^3
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        if i1 - i0 < rows:  # the last block: buffers of its size (P must be contiguous)
            bufs = (np.empty((i1 - i0, K), dtype), np.empty((4, i1 - i0, K), dtype))
        x, P = bufs
        if smax is None:
            np.multiply(S[i0:i1], beta, out=x, casting="same_kind")
        else:
            np.subtract(S[i0:i1], smax[i0:i1, None], out=x, casting="same_kind")
            x *= dtype(beta)
        np.exp(x, out=P[0])
        for j in (1, 2, 3):
            np.multiply(P[j - 1], x, out=P[j])
        sums[:, i0:i1] = (P.reshape(-1, K) @ ones).reshape(4, -1)
    w = sums[0]
    mean, second, third = sums[1] / w, sums[2] / w, sums[3] / w
    var = np.maximum(second - mean * mean, 0.0)
    cube = third - mean * (3.0 * second - 2.0 * mean * mean)  # central, from raw moments
    # moments of s - shift = x / beta, divided one power at a time: beta ** 3 overflows
    # (an OverflowError for a Python float) at the betas of rescaled scores near 1e300
    b = np.float64(beta)
    rows_ = np.stack([mean / b, var / b / b, cube / b / b / b, np.log(w)])
    return rows_.sum(axis=1) if r is None else rows_ @ r


def _unshifted_ok(beta: float, top: float, single: bool) -> bool:
    """Whether a pass at ``beta`` may exponentiate the unshifted scores: ``top`` is the
    largest ``|max_k s_ik|`` over rows, or ``inf`` when the rows' offsets are large against
    their spread (raw moments about 0 would then cancel). ``beta * top`` must stay well
    inside the exponential's range (60 in single, 600 in double precision), so that no row
    overflows or loses its largest terms."""
    return beta * top <= (60.0 if single else 600.0)


def _step(beta: float, p: NewtonPass, lo: float, hi: float) -> tuple[float, int]:
    """The next beta and the order of its step: Halley's step (order 3) when it stays
    inside the bracket (lo, hi), else Newton's (2), else doubling or bisection (0; also
    when the slope is 0, as when every softmax row is one-hot at this beta)."""
    g, d1, d2 = p.g, p.slope, p.curvature
    if d1 > 0:
        den = 2.0 * d1 * d1 - g * d2
        for order, step in ((3, 2.0 * g * d1 / den if den != 0 else math.nan),
                            (2, g / d1)):
            nxt = beta - step
            if lo < nxt < hi and math.isfinite(nxt):
                return nxt, order
    return (2.0 * beta if math.isinf(hi) else 0.5 * (lo + hi)), 0


def _halley_error(beta: float, p: NewtonPass, step: float,
                  prev: tuple[float, float, float] | None) -> float:
    """An estimate of the error in beta that a Halley step of size ``step`` from ``beta``
    leaves: ``|C| step^3`` with Halley's constant ``C = (g''/(2 g'))^2 - g'''/(6 g')``,
    taken at its largest, ``(g''/(2 g'))^2 + |g'''|/(6 g')`` (the error before the step
    is the step itself to first order). ``g' = slope`` and ``g'' = curvature`` come from
    the pass; ``|g'''|`` is estimated by the difference quotient of the curvature against
    the previous pass ``prev = (beta, curvature, its relative error)``, widened by that
    error (the quotient is the mean of g''' over the interval, which can underestimate
    its value at beta). Infinite without a previous pass."""
    if prev is None or prev[0] == beta:
        return math.inf
    b0, c0, err = prev
    g3 = (abs(p.curvature - c0) + err * max(abs(c0), abs(p.curvature))) / abs(beta - b0)
    d1 = p.slope
    return ((p.curvature / (2.0 * d1)) ** 2 + g3 / (6.0 * d1)) * abs(step) ** 3


def _grand_mean(S: np.ndarray, r: np.ndarray | None, total: float | None) -> float:
    """``mean_i r_i mean_k s_ik`` (``total``: ``S.sum()`` when already computed), scaled
    down first when the plain sum overflows although every score is finite."""
    n, K = S.shape
    if r is None:
        sbar = (float(S.sum()) if total is None else total) / (n * K)
    else:
        sbar = float((r @ S).sum()) / (n * K)
    if not math.isfinite(sbar):
        scale = float(np.max(np.abs(S)))
        sbar = _grand_mean(S / scale, r, None) * scale
    return sbar


def _solve(S: np.ndarray, r: np.ndarray | None, ts: np.ndarray, smax: np.ndarray,
           warm: int = WARM_START_ITEMS, start_step: float = 0.0,
           total: float | None = None
           ) -> tuple[float, str, int, tuple[float, NewtonPass] | None]:
    """:func:`solve_inverse_temperature` on the target's row sums ``r`` (None: all 1) and
    item scores ``ts_i = <t_i, s_i>``; also returns the last pass and its beta (None in
    the limit cases). ``start_step > 0`` solves for a start only: a Halley or Newton step
    at most that size (relative) ends the iteration. Above ``2 warm`` items it starts
    from the root on every k-th item (about ``warm`` of them, to ``START_STEP``), itself
    started from a subset a tenth that size (down to 100 items), and from
    ``SINGLE_MIN_SCORES`` scores on refines that start by a single-precision pass.
    ``total`` is ``S.sum()`` when already computed."""
    n, K = S.shape
    m = float(np.mean(ts))
    sbar = _grand_mean(S, r, total)  # g(0) needs only the grand mean, not the row means
    m_top = _weighted_mean(smax, r)
    if sbar - m >= -LIMIT_RTOL * ((m_top - sbar) or 1.0):  # g(0): the uniform mean
        return 0.0, "infinite_temperature", 0, None
    top = float(np.max(np.abs(smax)))
    if m_top - m <= LIMIT_RTOL * max(float(np.mean(np.abs(smax))), abs(m)):  # g(infinity)
        return math.inf, "zero_temperature", 0, None
    # g(0) < 0 < g(inf) and g is non-decreasing: Halley inside the bracket (lo, hi).
    # Raw moments about 0 (unshifted passes) only for rows whose offsets are at most
    # UNSHIFTED_OFFSET times the mean spread.
    top = top if top <= UNSHIFTED_OFFSET * (m_top - sbar) else math.inf
    lo, hi, beta = 0.0, math.inf, 1.0
    prev = None  # (beta, curvature, its relative error) of the previous pass
    if warm >= 100 and n > 2 * warm:  # start from the root on an evenly spaced subset
        k = n // warm
        sub, kind, _, _ = _solve(S[::k], None if r is None else r[::k], ts[::k],
                                 smax[::k], warm // 10, START_STEP)
        beta = sub if kind == "root" else beta
        if not start_step and n * K >= SINGLE_MIN_SCORES and 1e-30 < beta < 1e30:
            # one Halley step on a single-precision pass (no bracket from an inexact g)
            p = newton_pass(beta, S, smax, r, m, single=True,
                            shift=not _unshifted_ok(beta, top, True))
            nxt, order = _step(beta, p, lo, hi)
            if order and 0.5 * beta <= nxt <= 2.0 * beta and math.isfinite(p.curvature):
                beta, prev = nxt, (beta, p.curvature, SINGLE_RERR)
    eps4 = 4 * np.finfo(float).eps
    for it in range(1, MAX_ITER + 1):
        p = newton_pass(beta, S, smax, r, m, shift=not _unshifted_ok(beta, top, False))
        if not math.isfinite(p.g):  # the scores overflow the pass (|s| near 1e308)
            return beta, "not_converged", it, None
        if p.g == 0.0:
            return beta, "root", it, (beta, p)
        if p.g < 0:
            lo = beta
        else:
            hi = beta
        nxt, order = _step(beta, p, lo, hi)
        d = abs(nxt - beta)
        if (d <= eps4 * beta or (order == 2 and d <= NEWTON_STEP * beta)
                or (start_step and order and d <= start_step * beta)
                or (order == 3 and d <= HALLEY_RTOL ** 0.25 * beta
                    and _halley_error(beta, p, d, prev) <= HALLEY_RTOL * nxt)
                or (math.isfinite(hi) and hi - lo <= eps4 * hi)):
            return nxt, "root", it, (beta, p)
        prev = (beta, p.curvature, DOUBLE_RERR)
        beta = nxt
    return beta, "not_converged", MAX_ITER, None


def _log_loss(S: np.ndarray, smax: np.ndarray, r: np.ndarray | None, m: float,
              beta: float, last: tuple[float, NewtonPass] | None) -> float:
    """Mean log loss of ``softmax(beta S)`` against the target (:class:`NewtonPass`).

    ``last`` is the solver's last pass and its beta: within ``TAYLOR_STEP`` (relative)
    of ``beta`` the loss is its third-order Taylor expansion from there (the error, of
    the order of the fourth cumulant of the scores times the step to the fourth, about
    1e-17 for steps of 1e-4, is below machine precision) and needs no pass of its own."""
    if last is not None and abs(beta - last[0]) <= TAYLOR_STEP * last[0]:
        b, p = last
        d = beta - b
        return p.loss + d * (p.g + d * (0.5 * p.slope + d * p.curvature / 6.0))
    return newton_pass(beta, S, smax, r, m).loss
