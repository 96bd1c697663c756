"""Multi-start EM for the Dawid–Skene family: starts, selection, orientation, refits.

:func:`multistart_em` runs every start in one jitted, vmapped EM call
(:func:`noisycal.engines.em.dawid_skene.fit_em`) on the collapsed rating patterns, keeps the best
(optionally screened) start, names its latent classes (:mod:`noisycal.engines.relabel`)
and returns a closure for bootstrap refits (:mod:`noisycal.engines.em.resample`).

Starts: Dawid & Skene's own start (each item's share of ratings as its posterior; Dawid
and Skene 1979, "Maximum likelihood estimation of observer error-rates using the EM
algorithm", section 3), random diagonal-dominant channels, and, for two classes, the
closed-form triple-moment estimate (:func:`moment_start`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_numpy_rng, x64
from ..._util.progress import ProgressBar
from ...annotations.core import Annotations
from ...correction.labels import GAP_THRESHOLD
from ..free_params import posteriors_np
from ..moments import triple_channels, triple_core
from ..relabel import anchor_perm, hungarian_perm
from .dawid_skene import fit_em, pattern_data
from .estep import PROB_MIN_ITEMS
from .resample import bootstrap_em

__all__ = ["moment_start", "random_starts", "orient", "screen_starts",
           "MultiStartFit", "multistart_em"]

def moment_start(ann: Annotations, group: np.ndarray | None, L: int, anchor: int
                 ) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """Binary channels and group prevalences from the closed-form triple moments.

    The triple-moment solution of "Noisy-Label Calibration with Multiple Unreliable
    Labels" (Proposition D.2) on the anchor and the two annotators that co-rate most
    items with it: mu and the anchor's gap from the triple, every other annotator's gap
    from its covariance with the anchor, ``a_j = q_j - mu delta_j``, and
    ``mu_g = (q_{anchor,g} - a_anchor) / delta_anchor``. Moments use the items each pair
    or triple co-rated (valid when missingness is unrelated to the truth). Rates and
    prevalences are clipped to [0.01, 0.99]: it is a starting point, not an estimate.

    Parameters
    ----------
    ann : Annotations
        Binary annotations, at least 3 annotators, one rating per (item, annotator).
    group : int array of shape (n_items,), optional
        Group of each item.
    L : int
        Number of groups.
    anchor : int
        Index of the anchor annotator.

    Returns
    -------
    (prevalence (L, 2), confusion (J, 2, 2), '') or (None, None, reason).
    """
    try:
        wide = ann.to_wide(missing=-1)
    except ValueError:
        return None, None, "repeated ratings: the moment start needs one rating per pair"
    seen = wide >= 0
    X = np.where(seen, wide, 0).astype(np.float64)
    co = (seen[:, [anchor]] & seen).sum(0).astype(float)
    co[anchor] = -1
    j1, j2 = (int(j) for j in np.argsort(-co, kind="stable")[:2])
    both = seen[:, anchor] & seen[:, j1] & seen[:, j2]
    if both.sum() < 3:
        return None, None, "fewer than 3 items rated by the anchor triple"

    core = triple_core(X[both][:, [anchor, j1, j2]])
    if core is None:
        return None, None, "the anchor triple is not informative (C12 C13 C23 <= 0)"
    mu, d_anchor, _, _ = core
    J = ann.n_annotators
    cov = np.zeros(J)  # with the anchor, over the items both rated (0: too few, no gap)
    q = np.empty(J)
    for j in range(J):
        pair = seen[:, anchor] & seen[:, j]
        q[j] = X[seen[:, j], j].mean()
        if j != anchor and pair.sum() >= 2:
            xa, xj = X[pair, anchor], X[pair, j]
            cov[j] = np.mean((xa - xa.mean()) * (xj - xj.mean()))
    a, _, delta = triple_channels(mu, d_anchor, cov, q, anchor)
    a = np.clip(a, 0.01, 0.99)  # a start: b keeps the gap from the clipped a
    b = np.clip(a + delta, 0.01, 0.99)
    g = np.zeros(ann.n_items, np.int64) if group is None else group
    mu_g = np.empty(L)
    for k in range(L):
        rows = (g == k) & seen[:, anchor]
        mean = X[rows, anchor].mean() if rows.any() else q[anchor]
        mu_g[k] = (mean - a[anchor]) / (b[anchor] - a[anchor])
    mu_g = np.clip(np.nan_to_num(mu_g, nan=mu), 0.01, 0.99)
    prev = np.stack([1 - mu_g, mu_g], 1)
    conf = np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)
    return prev, conf, ""


def random_starts(rng: np.random.Generator, n: int, K: int, J: int, L: int, *,
                  one_coin: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Random diagonal-dominant parameters for ``n`` EM starts.

    Parameters
    ----------
    rng : numpy Generator
    n, K, J, L : int
        Starts, classes, annotators, groups.
    one_coin : bool, default=False
        One accuracy per annotator, uniform on [0.5, 0.95], instead of confusion rows
        drawn from Dirichlet(1 + 4 e_k).

    Returns
    -------
    prevalence : (n, L, K), flat Dirichlet draws
    confusion : (n, J, K, K)
    """
    prev = rng.dirichlet(np.ones(K), size=(n, L))
    conc = np.ones((K, K)) + 4.0 * np.eye(K)
    conf = np.stack([[[rng.dirichlet(conc[k]) for k in range(K)] for _ in range(J)]
                     for _ in range(n)])
    if one_coin:
        acc = rng.uniform(0.5, 0.95, size=(n, J))
        off = (1 - acc) / (K - 1)
        conf = acc[:, :, None, None] * np.eye(K) + off[:, :, None, None] * (1 - np.eye(K))
    return prev, conf


def orient(post: np.ndarray, conf: np.ndarray, vote: np.ndarray, orientation: str,
           anchor: int) -> np.ndarray:
    """The permutation naming one fit's latent classes.

    Parameters
    ----------
    post : (n_items, K)
        Item posteriors in the latent labelling.
    conf : (J, K, K)
        Channels in the latent labelling.
    vote : int array of shape (n_items,)
        Majority vote (the reference labelling of ``orientation='vote'``).
    orientation : {'vote', 'anchor'}
    anchor : int
        Anchor annotator of ``orientation='anchor'`` (two classes).

    Returns
    -------
    perm : (K,)
        See :func:`noisycal.engines.relabel.hungarian_perm`.
    """
    if orientation == "anchor":
        return anchor_perm(conf, anchor)
    K = post.shape[1]
    return hungarian_perm(post.T @ np.eye(K)[vote])


def screen_starts(confusion: np.ndarray, finite: np.ndarray, anchor: int) -> np.ndarray:
    """The binary acceptance rule: which starts have every anchor-oriented gap > 1e-4.

    Parameters
    ----------
    confusion : (n_starts, J, 2, 2)
    finite : bool array of shape (n_starts,)
        Starts whose objective is finite (the others never pass).
    anchor : int
        Each start is oriented so that this annotator's gap is non-negative.
    """
    gaps = np.asarray(confusion[:, :, 1, 1] - confusion[:, :, 0, 1])
    gaps = gaps * np.where(gaps[:, [anchor]] < 0, -1.0, 1.0)
    return np.all(gaps > GAP_THRESHOLD, axis=1) & finite


class MultiStartFit(NamedTuple):
    """The chosen EM start, relabelled (NumPy arrays).

    Attributes
    ----------
    post : (n_items, K)
    prevalence : (L, K)
    confusion : (J, K, K)
    loglik : float
    converged : bool
    n_iter : int
    objective : (n_starts,)
        Final objective of every start.
    best : int
        Index of the chosen start.
    screened : bool array of shape (n_starts,) or None
        Starts that passed the gap screen (``screen_gaps=True``).
    perm : (K,)
        Latent class renamed c is ``perm[c]``.
    moment_note : str or None
        What became of the moment start (``init='moments'``).
    n_patterns : int
    refits : callable
        ``refits(key, count) -> (draws, info)``: bootstrap refits started from the fit.
    """

    post: np.ndarray
    prevalence: np.ndarray
    confusion: np.ndarray
    loglik: float
    converged: bool
    n_iter: int
    objective: np.ndarray
    best: int
    screened: np.ndarray | None
    perm: np.ndarray
    moment_note: str | None
    n_patterns: int
    refits: Callable[..., tuple[dict, dict]]


def _initial_posteriors(ann: Annotations, pd_: Any, counts: np.ndarray,
                        group: np.ndarray | None, L: int, *, init: str, n_starts: int,
                        rng: np.random.Generator, anchor: int, one_coin: bool
                        ) -> tuple[jax.Array, str | None]:
    """Stack of start posteriors (n_starts, n_patterns, K) and the moment-start note
    (``counts``: :meth:`Annotations.counts` as float64)."""
    K, J = ann.n_classes, ann.n_annotators
    soft = counts / counts.sum(axis=1, keepdims=True)
    starts = [soft[pd_.representative] if pd_.collapsed else soft]
    note = None
    if init == "moments":
        m_prev, m_conf, note = moment_start(ann, group, L, anchor)
        if m_prev is not None:
            starts.insert(0, posteriors_np(m_prev, m_conf, pd_.data, None))
            note = "used as start 0"
    starts = starts[:n_starts]
    n_rand = n_starts - len(starts) if init != "soft_vote" else 0
    if n_rand:
        prevs, confs = random_starts(rng, n_rand, K, J, L, one_coin=one_coin)
        # NumPy, not a compiled program for one evaluation per start (first-call time)
        starts.extend(posteriors_np(p, c, pd_.data, None)
                      for p, c in zip(prevs, confs, strict=True))
    # one start: a view, not a copy of the (n_patterns, K) array
    # NumPy: the NumPy EM uses it as it is, the compiled one transfers it
    return (starts[0][None] if len(starts) == 1 else np.stack(starts)), note


def multistart_em(ann: Annotations, group: np.ndarray | None, L: int,
                  alpha: np.ndarray | None, beta: np.ndarray | None,
                  gold: np.ndarray | None, *, one_coin: bool, init: str, n_starts: int,
                  max_iter: int, tol: float, rng_key: jax.Array, orientation: str,
                  anchor: int, screen_gaps: bool = False,
                  devices: tuple | None = None, progress: bool = False) -> MultiStartFit:
    """Fit a Dawid–Skene model by (MAP-)EM from several starts.

    Parameters
    ----------
    ann : Annotations
    group : int array of shape (n_items,), optional
        Group codes 0..L-1 (grouped model).
    L : int
        Number of groups (1: marginal model).
    alpha, beta : ndarray, optional
        Dirichlet priors (MAP-EM when either is given).
    gold : int array of shape (n_items,), optional
        Known classes, ``-1`` where unknown.
    one_coin : bool
    init : {'mixed', 'soft_vote', 'moments'}
    n_starts, max_iter : int
    tol : float
    rng_key : jax key
        Random starts use it.
    orientation : {'vote', 'anchor'}
    anchor : int
    screen_gaps : bool, default=False
        Choose among the starts passing :func:`screen_starts` (two classes).
    devices : tuple of jax devices, optional
        Shard the rating patterns over these devices
        (:func:`noisycal.engines.em.dawid_skene.fit_em`).
    progress : bool, default=False
        A progress bar on stderr: EM iterations of the vmapped starts, or finished starts
        when they run one after another (large data); none with ``devices``.

    Returns
    -------
    MultiStartFit
    """
    rng = as_numpy_rng(rng_key)
    arr = ann.engine_arrays()
    counts = ann.counts().astype(np.float64)  # the soft-vote start and the vote
    with x64():
        # collapsing identical rating patterns is exact; skipped when nearly every item
        # has its own pattern (then it costs more than it saves)
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                           n_annotators=ann.n_annotators, n_classes=ann.n_classes,
                           group=group, n_groups=L, gold=gold, collapse="auto")
        post0, note = _initial_posteriors(ann, pd_, counts, group, L, init=init,
                                          n_starts=n_starts, rng=rng, anchor=anchor,
                                          one_coin=one_coin)
        # NumPy arrays (float64): no staging program per new shape; jitted calls
        # transfer them
        jgold = None if pd_.gold is None else np.asarray(pd_.gold)
        ja = None if alpha is None else np.asarray(alpha, np.float64)
        jb = None if beta is None else np.asarray(beta, np.float64)
        weights = (np.asarray(pd_.counts, dtype=np.float64) if pd_.collapsed
                   else None)
        n_run, sequential = post0.shape[0], pd_.data.n_items >= PROB_MIN_ITEMS
        bar = ProgressBar(n_run if sequential else max_iter,
                          f"EM, {n_run} starts" if sequential
                          else f"EM iterations, {n_run} starts",
                          enabled=progress and not (devices and len(devices) > 1))
        with bar:
            st = bar.wait(fit_em(post0, pd_.data, jgold, ja, jb, one_coin=one_coin,
                                 max_iter=max_iter, tol=tol, weights=weights, devices=devices,
                                 progress=bar.enabled))
    objective = np.asarray(st.objective)
    finite = np.isfinite(objective)
    screened = None
    if screen_gaps:
        screened = screen_starts(np.asarray(st.confusion), finite, anchor)
        if screened.any():
            finite = screened
    best = int(np.argmax(np.where(finite, objective, -np.inf))) if finite.any() else 0
    st = jax.tree.map(np.asarray, st)  # to NumPy once (no JAX dispatch per index)
    post_pat = st.post[best]
    post = post_pat[pd_.pattern] if pd_.collapsed else post_pat
    conf = np.asarray(st.confusion[best])
    perm = orient(post, conf, np.argmax(counts, axis=1), orientation, anchor)
    refits = _refit_closure(post_pat, pd_, jgold, ja, jb, perm, one_coin=one_coin,
                            max_iter=max_iter, tol=tol)
    return MultiStartFit(post[:, perm], np.asarray(st.prevalence[best])[:, perm],
                         conf[:, perm, :], float(st.loglik[best]), bool(st.converged[best]),
                         int(st.n_iter[best]), objective, best, screened, perm, note,
                         int(pd_.representative.size), refits)


def _refit_closure(post_pat: np.ndarray, pd_: Any, jgold: Any, ja: Any, jb: Any,
                   perm: np.ndarray, *, one_coin: bool, max_iter: int, tol: float
                   ) -> Callable[..., tuple[dict, dict]]:
    """Bootstrap refits in the latent labelling of the EM run (where the priors apply),
    relabelled afterwards like the fit itself.

    The start stays a float64 NumPy array until the refits run in float64: made a JAX
    array here, outside :func:`~noisycal._util.jax.x64`, it would be rounded to float32 when
    the user's JAX runs without x64, and some refits would converge elsewhere."""
    post_start = np.asarray(post_pat, dtype=np.float64)
    pattern = np.asarray(pd_.pattern)

    def refits(key: jax.Array, count: int, progress: bool = False) -> tuple[dict, dict]:
        """``count`` bootstrap refits over items, started from the fit (``progress``: a
        bar on stderr, one step per refit)."""
        with x64(), ProgressBar(count, "EM bootstrap refits", enabled=progress) as bar:
            bs = bar.wait(bootstrap_em(key, jnp.asarray(post_start), pd_.data, jgold, ja, jb,
                                       jnp.asarray(pattern), one_coin=one_coin,
                                       max_iter=max_iter, tol=tol, n_boot=count,
                                       progress=progress))
            return ({"prevalence": np.asarray(bs.prevalence)[:, :, perm],
                     "confusion": np.asarray(bs.confusion)[:, :, perm, :]},
                    {"n_boot": count,
                     "boot_converged": float(np.mean(np.asarray(bs.converged)))})

    return refits
