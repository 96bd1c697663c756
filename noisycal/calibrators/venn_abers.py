"""Inductive Venn–Abers predictors (IVAP): binary, and one-vs-rest for K classes.

Vovk, Petej & Fedorova (2015), "Large-scale probabilistic predictors with and without
guarantees of validity" (NeurIPS; arXiv:1511.00213): for a test score ``s`` and
calibration pairs ``(s_i, y_i)``,

- ``p0(s)`` is the isotonic regression of the calibration labels **and (s, 0)**, read
  at ``s``; ``p1(s)`` the same with ``(s, 1)``;
- ``[p0, p1]`` is the multiprobability prediction (``p0 <= p1``); one of the two is
  perfectly calibrated in the sense of Venn predictors, whatever the distribution.

Computing the two isotonic fits afresh for every test score costs O(n) per score. The
fits only depend on where ``s`` falls among the distinct calibration scores
``u_1 < ... < u_k``: with label 1 the test point pools with the block to its right (so
every ``s`` in ``(u_{j-1}, u_j]`` gives the same ``p1``), with label 0 with the block to
its left (every ``s`` in ``[u_j, u_{j+1})`` gives the same ``p0``). Both tables of
``k + 1`` values come from one scan each over the cumulative sum diagram (CSD)
``P_j = (sum of weights, sum of labels)`` of the first j blocks:

- the fitted value of the test point is the slope of the greatest convex minorant (GCM)
  of the CSD with the test point added, over the test point's block (Barlow et al. 1972);
- adding ``(s, 1)`` at position j shifts ``P_j, ..., P_k`` by (1, 1), equivalently
  ``P_0, ..., P_{j-1}`` by (-1, -1); the slope over the test block is the slope of the
  lower common tangent of the shifted prefix and the suffix;
- scanning j = 1, ..., k + 1, the prefix gains one shifted point and the suffix loses
  one: the lower hull is kept on a stack whose top is the leftmost point that can still
  matter (a new shifted point below the current tangent becomes the new start and pops
  the hull vertices it hides; one above it changes nothing, because every slope from
  the shifted prefix to the suffix is at most 1), as the corner stacks of the paper's
  algorithms for F_0 and F_1 do (its Algorithms 1-4; 5-6 are the look-ups below).
  Each point is pushed and popped at most once: O(k) after the sort.
- ``p0`` is the mirror image: ``1 - p1`` of the reversed scores with labels ``1 - y``.

Prediction is then a binary search per test score, O(log k). The tables agree with a
brute-force refit of the isotonic regression (tests: 1e-12 on random cases with ties).

One probability per score (Vovk & Petej (2014), "Venn-Abers predictors", UAI):
``aggregation='log'`` gives ``p1 / (1 - p0 + p1)``, the minimax-regret choice under log
loss (the "standard" aggregation of "Adaptive Set-Mass Calibration with Conformal
Prediction", Appendix F, which does not name its formula); ``'brier'``
``p1 + (p0^2 - p1^2) / 2`` (the same under the Brier loss); ``'mean'`` ``(p0 + p1) / 2``.

K classes: one IVAP per class on its softmax probability ``p_k`` (one-vs-rest, as the
isotonic baseline of that paper; its Eq. 8 renormalisation), then ``q_k / sum_j q_j``.
The aggregated ``q_k`` is always positive (``p1 > 0``: the pooled block holds the
label-1 test point), so every row sum is positive.
"""

from __future__ import annotations

import numpy as np

from .._util.types import ArrayLike
from .._util.validation import check_choice
from ._base import check_eps, record_fit_target
from ._inputs import EPS, ScoreInput, base_probs, fit_target, score_matrix
from .conformal.split import MatrixInput
from .ovr import _class_status, _renormalise

__all__ = ["VennAbers", "ivap_tables", "AGGREGATIONS"]

#: The aggregations of ``(p0, p1)`` into one probability.
AGGREGATIONS = ("log", "brier", "mean")


def _upper_tables(X: list[float], Y: list[float]) -> np.ndarray:
    """``p1`` at the k + 1 positions of a label-1 test point, from the CSD ``(X, Y)``.

    ``X[j], Y[j]`` (j = 0..k, ``X[0] = Y[0] = 0``) are the cumulative weights and label
    sums of the first j distinct scores. Position j = 1..k: the test point shares block
    j (or falls just before it); position k + 1: after the last block. Returns the k + 1
    slopes in position order.
    """
    k = len(X) - 1
    # lower hull of Q_0 = P_0 - (1, 1), P_1, ..., P_k, stored right to left (top = left)
    hx, hy = [X[k]], [Y[k]]

    def add_left(ax: float, ay: float) -> None:
        # pop while (a, top, second) is not a strict left turn (top is not below a-second)
        while len(hx) >= 2:
            bx, by, cx, cy = hx[-1], hy[-1], hx[-2], hy[-2]
            if (bx - ax) * (cy - by) - (by - ay) * (cx - bx) > 0:
                break
            hx.pop()
            hy.pop()
        hx.append(ax)
        hy.append(ay)

    for i in range(k - 1, 0, -1):
        add_left(X[i], Y[i])
    add_left(X[0] - 1.0, Y[0] - 1.0)
    out = np.empty(k + 1)
    for j in range(1, k + 2):
        out[j - 1] = (hy[-2] - hy[-1]) / (hx[-2] - hx[-1])
        if j > k:
            break
        qx, qy = X[j] - 1.0, Y[j] - 1.0
        ax, ay, bx, by = hx[-1], hy[-1], hx[-2], hy[-2]
        if (bx - ax) * (qy - ay) - (by - ay) * (qx - ax) < 0:  # below the current tangent
            hx.pop()
            hy.pop()
            add_left(qx, qy)
    return out


def ivap_tables(scores: ArrayLike, labels: ArrayLike
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The IVAP's tables of ``p0`` and ``p1`` for every position of a test score.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite calibration scores (ties allowed: equal scores form one block).
    labels : array-like of shape (n,)
        Calibration labels in [0, 1] (0/1, or soft positive-class targets).

    Returns
    -------
    u : ndarray of shape (k,)
        The distinct scores, increasing.
    p0, p1 : ndarray of shape (k + 1,)
        ``p0[searchsorted(u, s, 'right')]`` and ``p1[searchsorted(u, s, 'left')]`` are
        the two isotonic fits at a test score ``s`` (see the module docstring).
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.ndim != 1 or y.shape != s.shape or s.size < 1:
        raise ValueError(f"scores and labels must be 1-D of the same non-zero length, got "
                         f"shapes {s.shape} and {y.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    if not np.all((y >= 0) & (y <= 1)):
        raise ValueError("labels must lie in [0, 1] (the hypothetical labels of the test "
                         "point are 0 and 1)")
    u, inv = np.unique(s, return_inverse=True)
    w = np.bincount(inv, minlength=u.size).astype(np.float64)
    c = np.bincount(inv, weights=y, minlength=u.size)
    zero = [0.0]
    X = zero + np.cumsum(w).tolist()
    p1 = _upper_tables(X, zero + np.cumsum(c).tolist())
    # label 0 is the mirror image: reversed scores, labels 1 - y, 1 - p1
    mirror = _upper_tables(zero + np.cumsum(w[::-1]).tolist(),
                           zero + np.cumsum((w - c)[::-1]).tolist())
    return u, 1.0 - mirror[::-1], p1


def _aggregate(p0: np.ndarray, p1: np.ndarray, how: str) -> np.ndarray:
    if how == "log":
        return p1 / (1.0 - p0 + p1)
    if how == "brier":
        return p1 + 0.5 * (p0 * p0 - p1 * p1)
    return 0.5 * (p0 + p1)


class VennAbers(MatrixInput):
    """Inductive Venn–Abers predictor: binary, or one-vs-rest with renormalisation.

    Vovk, Petej & Fedorova (2015), "Large-scale probabilistic predictors with and
    without guarantees of validity", with both isotonic fits precomputed
    for every position of a test score (O(n log n) fit, O(log n) per test score; module
    docstring). Binary (1-D) scores get one IVAP on the positive-class probability; an
    (n, K) input gets one IVAP per class on its softmax probability ``p_k``, each
    aggregated to one probability, renormalised over the classes ("Adaptive Set-Mass
    Calibration with Conformal Prediction", Appendix F, Eq. 8).

    Parameters
    ----------
    aggregation : {'log', 'brier', 'mean'}, default='log'
        How ``(p0, p1)`` becomes one probability: ``p1 / (1 - p0 + p1)`` (the
        log-loss minimax choice of Vovk & Petej (2014), "Venn-Abers predictors", the
        usual "standard" aggregation), ``p1 + (p0^2 - p1^2) / 2`` (Brier-loss minimax),
        or ``(p0 + p1) / 2``. "Adaptive Set-Mass Calibration with Conformal
        Prediction" leaves it open ("standard aggregation"); this is our choice of
        default.
    eps : float, default=1e-6
        Has no effect on the predictions: the maps act on the probabilities (never
        floored). It is validated and kept only because every calibrator reads
        ``probs=`` through the same score format.

    Attributes
    ----------
    scores_ : list of ndarray
        Per class (one entry for a binary fit), the distinct calibration scores.
    p0_, p1_ : list of ndarray
        Per class, the tables of ``p0`` and ``p1`` (:func:`ivap_tables`).
    class_status_ : list of str
        'ok', 'no_positive' (the class never occurs in the target) or 'no_negative'.
    n_classes_, binary_, input_ : int, bool, str
    status_, message_ : str
        'ok', 'class_not_ok' when some classes have no positive or no negative
        calibration item (warns once; the predictions are still defined), or
        'target_not_ok' when the target comes from a failed annotator fit.

    Notes
    -----
    The target may be labels, soft rows or any Target whose values lie in [0, 1]; a
    noise-corrected target leaving [0, 1] raises ``ValueError`` (the IVAP adds the
    hypothetical labels 0 and 1, so its guarantee concerns labels in [0, 1]). With soft
    targets the isotonic fits are those of the soft labels (our extension; the validity
    guarantee is for hard labels).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(500)
    >>> y = (rng.random(500) < s**2).astype(int)
    >>> va = nc.calibrators.VennAbers().fit(probs=s, target=y)
    >>> p0, p1 = va.predict_interval(probs=np.array([0.1, 0.5, 0.9]))
    >>> bool(np.all(p0 <= p1)), va.predict_proba(probs=np.array([0.5])).round(2)
    (True, array([0.32]))
    """

    _fitted_attr = "p1_"

    def __init__(self, *, aggregation: str = "log", eps: float = EPS) -> None:
        self.aggregation = aggregation
        self.eps = eps

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> VennAbers:
        """Precompute the two isotonic fits of every class.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)
            Exactly one: calibration probabilities or logits.
        target : Target, matrix or labels
            The calibration target (values in [0, 1]).

        Returns
        -------
        self
        """
        check_choice(self.aggregation, "aggregation", AGGREGATIONS)
        eps = check_eps(self.eps)
        x = score_matrix(probs, logits, eps)
        T = fit_target(target, x)
        record_fit_target(self, target)
        if not np.all((T >= 0.0) & (T <= 1.0)):
            raise ValueError(f"target must lie in [0, 1] for Venn-Abers (the test point is "
                             f"added with the labels 0 and 1), got values in "
                             f"[{T.min():g}, {T.max():g}]")
        P = base_probs(x)
        cols = [1] if x.binary else range(P.shape[1])
        u, p0, p1, st = [], [], [], []
        for k in cols:
            uk, a, b = ivap_tables(P[:, k], T[:, k])
            u.append(uk)
            p0.append(a)
            p1.append(b)
            st.append("no_positive" if not np.any(T[:, k] > 0) else
                      "no_negative" if not np.any(T[:, k] < 1) else "ok")
        self.scores_, self.p0_, self.p1_, self.class_status_ = u, p0, p1, st
        self.n_classes_, self.binary_, self.input_, self.eps_ = P.shape[1], x.binary, \
            x.given, eps
        _class_status(self, st)
        return self

    def _probs(self, probs: ArrayLike | None, logits: ArrayLike | None) -> np.ndarray:
        self._check_fitted()
        x: ScoreInput = score_matrix(probs, logits, self.eps_)
        if x.S.shape[1] != self.n_classes_ or x.binary != self.binary_:
            raise ValueError(f"{x.given} must have the shape the map was fitted on "
                             f"({'(n,)' if self.binary_ else f'(n, {self.n_classes_})'}), "
                             f"got shape {np.shape(x.raw)}")
        P = base_probs(x)
        return P[:, 1:] if self.binary_ else P

    def predict_interval(self, *, probs: ArrayLike | None = None,
                         logits: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The multiprobability prediction ``(p0, p1)`` of every class.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)
            Exactly one, of the kind and shape the map was fitted on.

        Returns
        -------
        p0, p1 : ndarray of shape (n,) (binary 1-D fit) or (n, n_classes)
            The isotonic fits with the test point labelled 0 and 1 (``p0 <= p1``), per
            class and before any aggregation or renormalisation.
        """
        P = self._probs(probs, logits)
        p0, p1 = np.empty_like(P), np.empty_like(P)
        for k, (u, a, b) in enumerate(zip(self.scores_, self.p0_, self.p1_, strict=True)):
            s = P[:, k]
            p0[:, k] = a[np.searchsorted(u, s, side="right")]
            p1[:, k] = b[np.searchsorted(u, s, side="left")]
        if self.binary_:
            return p0[:, 0], p1[:, 0]
        return p0, p1

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Aggregated (and, for K classes, renormalised) probabilities.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes)
            Exactly one, of the kind and shape the map was fitted on.

        Returns
        -------
        ndarray of shape (n,) (binary 1-D fit) or (n, n_classes)
        """
        p0, p1 = self.predict_interval(probs=probs, logits=logits)
        q = _aggregate(p0, p1, self.aggregation)
        return q if self.binary_ else _renormalise(q)
