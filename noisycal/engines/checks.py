"""Statuses of fitted annotator channels: adversarial and degenerate channels.

A fit can converge, pass the count-based design checks and the local identification
check, and still be stuck in a mode that no correction built on it can repair. Two rules
check each annotator j, on the table ``N_jko`` of its labels o against the class k that
the *other* ratings of the same items imply (:func:`channel_counts`: the fitted posterior
with j's own rating divided out); its row sums ``n_jk`` are j's expected class counts.
Rows with ``n_jk < 1`` are left out (a channel with fewer than two rows left is not
checked for degeneracy). The table is a cross-tabulation of j's labels against what the
rest of the data say, so j's own pull on the posteriors cannot make a random annotator
look informative; the soft counts stand for more items than the data carry, which the
thresholds below allow for.

``'degenerate_channel'`` (uninformative channel)
    The channel carries no evidence about the class. Both must hold: the *effect* is
    small, the association of class and label in the fitted channel at the expected class
    counts (Cramér's V of ``n_jk C_j[k, o]``, ``sqrt(X^2 / (N (m - 1)))``, ``m`` the
    smaller of the numbers of rows and labels in use; for two balanced classes about
    ``|b_j - a_j|``, the gap the corrected target divides by) is below
    :data:`DEGENERATE_ASSOCIATION` (0.1); and there is no *evidence* of one, Pearson's
    test of equal rows of the table (``X^2 = sum (N - E)^2 / E``, ``E_ko = n_jk cbar_o``
    with ``cbar`` the pooled row, chi-squared with ``(rows - 1)(labels - 1)`` degrees of
    freedom) does not reject at :data:`DEGENERATE_LEVEL` (0.01). The effect is read off
    the fitted channel because the table is attenuated when the other annotators are weak
    (an honest annotator of accuracy 0.65 among two others like it shows little
    association with their soft verdict); the evidence is read off the table because the
    fitted rows of a near-random annotator drift apart under its own pull. Such a channel
    makes the corrected target unbounded, and a two-class Dawid–Skene fit with such an
    annotator is identified by the others alone (three informative annotators are
    needed): with three annotators of whom one is near-random, EM drifts along a ridge to
    error rates within 0.005 of 0 or 1 that the data do not support.

``'adversarial_channel'``
    A relabelling of annotator j's labels raises its *balanced agreement* with the class
    the other ratings imply, ``sum_k N_jk,sigma(k) / n_jk`` (the per-class accuracies
    summed; the best permutation sigma by Hungarian assignment), by
    ``D > ADVERSARIAL_MARGIN + ADVERSARIAL_Z * se(D)`` (margin 0, z 2.33, one-sided 1%);
    ``se(D)`` from the multinomial rows moved (entries smoothed by half a rating, so that
    a row at 0 or 1 keeps a variance). For two classes: ``b_j < a_j`` by more than noise.
    Either the annotator really swaps labels (recode or drop it and refit), or the fit is
    a label-swapped mode: the latent classes are named after the majority vote (or an
    anchor annotator), so when most annotators, or the anchor, are adversarial the honest
    ones come out swapped and every target built from the fit is reversed. Balanced
    rather than prevalence-weighted agreement: an informative annotator biased towards
    one label (two classes: ``b_j > a_j`` but ``a_j > 1/2``) is not flagged. A two-class
    gap below zero that is within noise is not flagged here, but a corrected target
    refuses it (b - a <= 1e-4).

A channel that is both is reported as degenerate (its orientation is noise). The fit's
status is 'adversarial_channel' when any channel is adversarial, else
'degenerate_channel' when any is degenerate; the message names the annotators.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import chdtrc  # chi2.sf(x, df) without importing scipy.stats

from .._util.validation import check_real
from ..annotations.core import Annotations

__all__ = ["ADVERSARIAL_MARGIN", "ADVERSARIAL_Z", "DEGENERATE_ASSOCIATION", "DEGENERATE_LEVEL",
           "ChannelCheck", "channel_check", "channel_counts", "channel_status"]

#: A channel is adversarial when a relabelling raises its balanced agreement by more
#: than this plus ADVERSARIAL_Z standard errors.
ADVERSARIAL_MARGIN = 0.0
ADVERSARIAL_Z = 2.33
#: A channel is degenerate when its association (Cramér's V) is below this and ...
DEGENERATE_ASSOCIATION = 0.1
#: ... the test of equal rows does not reject at this level.
DEGENERATE_LEVEL = 0.01
#: Rows with fewer expected items than this are left out of the checks.
_MIN_ROW = 1.0


class ChannelCheck(NamedTuple):
    """The channel checks of one fit.

    Attributes
    ----------
    status, message : str
        'ok', 'degenerate_channel' or 'adversarial_channel', and why.
    degenerate, adversarial : tuple of int
        Indices of the annotators flagged by each rule.
    gap : ndarray of shape (J,)
        Largest total-variation distance between two rows in use (two classes:
        ``|b - a|``).
    association : ndarray of shape (J,)
        Cramér's V of the fitted channel at the expected class counts.
    p_value : ndarray of shape (J,)
        Pearson test of equal rows of the table (1 where one label is in use; NaN, with
        ``association``, where fewer than two rows are: then the channel is not checked
        for degeneracy).
    excess, excess_se : ndarray of shape (J,)
        Balanced agreement of the best relabelling minus that of the fitted labelling,
        and its standard error.
    """

    status: str
    message: str
    degenerate: tuple[int, ...]
    adversarial: tuple[int, ...]
    gap: np.ndarray
    association: np.ndarray
    p_value: np.ndarray
    excess: np.ndarray
    excess_se: np.ndarray

    def as_details(self) -> dict[str, Any]:
        """The numbers as a plain dict (for a fit's ``details['channels']``)."""
        return {"checked": True, **{k: getattr(self, k) for k in self._fields
                                    if k != "message"}}


def channel_counts(annotations: Annotations, post: np.ndarray, confusion: np.ndarray
                   ) -> np.ndarray:
    """The table of each annotator's labels against the class its *other* ratings imply.

    ``N_jko`` sums, over annotator j's ratings with label o, the fitted posterior of the
    item with that rating's own likelihood factor divided out,
    ``P(Y_i = k | ratings) / C_j[k, o]`` normalised over k. Whether j's labels agree with
    what the rest of the data say is then a plain cross-tabulation, free of j's pull on
    its own posteriors (with which a near-random annotator's fitted rows drift apart).

    Parameters
    ----------
    annotations : Annotations
        The fitted ratings (one term per rating).
    post : ndarray of shape (n_items, K)
        P(Y_i = k | ratings) of their items.
    confusion : ndarray of shape (n_annotators, K, K)
        The fitted channels.

    Returns
    -------
    ndarray of shape (n_annotators, K, K)
        ``[annotator, class, label]``; its row sums are the expected class counts.

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal.annotations.core import Annotations
    >>> ann = Annotations.from_wide(np.array([[1, 1]]), classes=[0, 1])
    >>> C = np.array([[[0.8, 0.2], [0.2, 0.8]]] * 2)
    >>> post = np.array([[0.2 * 0.2, 0.8 * 0.8]]) / 0.68   # prevalence 1/2
    >>> channel_counts(ann, post, C)[0].round(3).tolist()   # the other rater alone
    [[0.0, 0.2], [0.0, 0.8]]
    """
    post = np.asarray(post, dtype=np.float64)
    C = np.asarray(confusion, dtype=np.float64)
    i, j, o = annotations.item_index, annotations.annotator_index, annotations.label_index
    lik = C[j, :, o]                                         # C_j[k, o] of each rating
    w = np.where(lik > 0, post[i] / np.where(lik > 0, lik, 1.0), 0.0)
    tot = w.sum(axis=1, keepdims=True)
    w = np.where(tot > 0, w / np.where(tot > 0, tot, 1.0), post[i])
    K = post.shape[1]
    out = np.zeros((annotations.n_annotators, K, K))
    np.add.at(out, (j[:, None], np.arange(K)[None, :], o[:, None]), w)
    return out


def _pearson(N: np.ndarray) -> tuple[float, float, float]:
    """Pearson's X^2 of equal rows of a table, its p-value and Cramér's V (NaN for fewer
    than two rows; X^2 = 0, p = 1 for a single label in use)."""
    if N.shape[0] < 2:
        return np.nan, np.nan, np.nan
    m = N.sum(axis=1)
    pooled = N.sum(0) / max(N.sum(), 1e-300)
    used = pooled > 1e-12
    df = (N.shape[0] - 1) * (int(used.sum()) - 1)
    if df == 0:
        return 0.0, 1.0, 0.0
    E = m[:, None] * pooled[None, used]
    x2 = float(np.sum((N[:, used] - E) ** 2 / E))
    v = np.sqrt(x2 / (N.sum() * (min(N.shape[0], int(used.sum())) - 1)))
    return x2, float(chdtrc(df, x2)), float(v)


def _one(C: np.ndarray, table: np.ndarray) -> np.ndarray:
    """(gap, association, p-value, excess, se) of one channel and its table."""
    K = C.shape[0]
    n = table.sum(axis=1)
    rows = n >= _MIN_ROW
    R = C[rows]
    gap = 0.0
    if R.shape[0] > 1:
        gap = float(0.5 * np.abs(R[:, None, :] - R[None, :, :]).sum(-1).max())
    # the effect: the fitted channel at the expected class counts; the evidence: the
    # table of the annotator's labels against the class the other ratings imply
    assoc = _pearson(n[rows, None] * R)[2]
    p = _pearson(table[rows])[1]
    # the best relabelling of the table's rows; rows without data count as correct
    B = np.eye(K)
    B[rows] = table[rows] / n[rows, None]
    r, c = linear_sum_assignment(-B)
    sigma = np.empty(K, dtype=np.int64)
    sigma[r] = c
    k = np.flatnonzero(rows & (sigma != np.arange(K)))
    p_to = (table[k, sigma[k]] + 0.5) / (n[k] + 1.0)   # smoothed by half a rating
    p_at = (table[k, k] + 0.5) / (n[k] + 1.0)
    se = float(np.sqrt(np.sum((p_to + p_at - (p_to - p_at) ** 2) / n[k])))
    return np.array([gap, assoc, p, float(B[r, c].sum() - np.trace(B)), se])


def channel_check(confusion: np.ndarray, table: np.ndarray, *,
                  annotators: Any = None, level: float = DEGENERATE_LEVEL,
                  association: float = DEGENERATE_ASSOCIATION,
                  margin: float = ADVERSARIAL_MARGIN, z: float = ADVERSARIAL_Z
                  ) -> ChannelCheck:
    """The rules of this module on fitted channels.

    Parameters
    ----------
    confusion : ndarray of shape (J, K, K)
        ``confusion[j, true, observed]``.
    table : ndarray of shape (J, K, K)
        Each annotator's labels against the class (:func:`channel_counts`), or any
        (expected) counts ``[annotator, class, label]``.
    annotators : array-like of shape (J,), optional
        Annotator ids, for the message (default: indices).
    level : float, default=DEGENERATE_LEVEL
        A channel is degenerate when the test of equal rows has a p-value above it ...
    association : float, default=DEGENERATE_ASSOCIATION
        ... and its Cramér's V is below this.
    margin, z : float, default=ADVERSARIAL_MARGIN, ADVERSARIAL_Z
        Adversarial when a relabelling raises the balanced agreement by more than
        ``margin + z * se``.

    Returns
    -------
    ChannelCheck

    Examples
    --------
    >>> import numpy as np
    >>> def chan(a, b):
    ...     return np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)
    >>> C = chan(np.array([0.1, 0.2, 0.8, 0.49]), np.array([0.9, 0.8, 0.2, 0.51]))
    >>> check = channel_check(C, 500 * C)   # 500 items of each class
    >>> check.status, check.adversarial, check.degenerate
    ('adversarial_channel', (2,), (3,))
    """
    level = check_real(level, "level", minimum=0.0, maximum=1.0)
    association = check_real(association, "association", minimum=0.0, maximum=1.0)
    margin = check_real(margin, "margin", minimum=0.0)
    z = check_real(z, "z", minimum=0.0)
    C = np.asarray(confusion, dtype=np.float64)
    T = np.asarray(table, dtype=np.float64)
    if C.ndim != 3 or C.shape[1] != C.shape[2] or T.shape != C.shape or np.any(T < 0):
        raise ValueError(f"confusion and table must have the same shape (J, K, K) and the "
                         f"table non-negative counts, got {C.shape} and {T.shape}")
    gap, assoc, p, excess, se = np.array([_one(C[j], T[j]) for j in range(C.shape[0])]
                                         ).reshape(-1, 5).T
    degenerate = (assoc < association) & (p > level)
    adversarial = (excess > margin + z * se + 1e-12) & ~degenerate
    who = np.arange(C.shape[0]) if annotators is None else np.asarray(annotators)
    parts = []
    if adversarial.any():
        i = np.flatnonzero(adversarial)
        parts.append(f"annotator(s) {who[i].tolist()} have adversarial channels: relabelling "
                     f"their labels raises their balanced agreement by "
                     f"{np.round(excess[i], 3).tolist()} (standard error "
                     f"{np.round(se[i], 3).tolist()}; two classes: b < a). The ratings "
                     "alone cannot say which side is right: the fit took the orientation "
                     "of the majority of annotators, so either the flagged annotators swap "
                     "labels, or most annotators do and the flagged ones are the good ones "
                     "(every target built from this fit is then reversed). Choose the "
                     "orientation with what you know and refit: anchor= an annotator you "
                     "trust (two classes) or gold= items whose classes are known; recode "
                     "or drop the flagged annotators only when you know that they swap")
    if degenerate.any():
        i = np.flatnonzero(degenerate)
        parts.append(f"annotator(s) {who[i].tolist()} have degenerate channels: their "
                     f"fitted channels associate label and class by "
                     f"{np.round(assoc[i], 3).tolist()} (Cramér's V, below {association:g}; "
                     f"largest row difference {np.round(gap[i], 3).tolist()}) and their "
                     "labels are not shown to depend on the class the other ratings imply "
                     f"(p = {np.round(p[i], 3).tolist()}, above {level:g}): their channels "
                     "cannot be inverted stably and the fit is identified by the other "
                     "annotators alone; drop them and refit")
    status = ("adversarial_channel" if adversarial.any() else
              "degenerate_channel" if degenerate.any() else "ok")
    return ChannelCheck(status, "; ".join(parts), tuple(np.flatnonzero(degenerate).tolist()),
                        tuple(np.flatnonzero(adversarial).tolist()), gap, assoc, p, excess,
                        se)


def channel_status(status: str, message: str, confusion: np.ndarray,
                   annotations: Annotations, post: np.ndarray
                   ) -> tuple[str, str, dict[str, Any]]:
    """Run :func:`channel_check` on a fit whose status is 'ok' or 'boundary'.

    A failed check replaces the status (a 'boundary' message is kept after it); other
    statuses are returned unchanged and nothing is checked.

    Parameters
    ----------
    status, message : str
        The fit's status and message so far.
    confusion : ndarray of shape (J, K, K)
        The fitted channels.
    annotations : Annotations
        The fitted ratings (their annotator ids name the annotators in the message).
    post : ndarray of shape (n_items, K)
        The fitted item posteriors (:func:`channel_counts`).

    Returns
    -------
    (status, message, details)
        ``details`` (for the fit's ``details['channels']``) holds
        :meth:`ChannelCheck.as_details`, or ``checked=False`` and the reason.
    """
    if status not in ("ok", "boundary"):
        return status, message, {"checked": False,
                                 "reason": f"not checked: the fit's status is {status!r}"}
    check = channel_check(confusion, channel_counts(annotations, post, confusion),
                          annotators=annotations.annotators)
    if check.status != "ok":
        also = f"; also {message}" if status == "boundary" else ""
        status, message = check.status, check.message + also
    return status, message, check.as_details()
