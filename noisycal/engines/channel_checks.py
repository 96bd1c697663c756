"""Statuses of fitted annotator channels: adversarial and degenerate channels.

A fit can converge, pass the count-based design checks and the local identification
check, and still be stuck in a mode that no correction built on it can repair. Two rules
check each annotator's fitted channel ``C_j = confusion[j, true, observed]``, with the
*expected class counts* ``n_jk`` (the fitted posteriors P(Y_i = k | ratings) summed over
the items annotator j rated, one term per rating) and the expected table
``N_jko = n_jk C_j[k, o]``. Rows with ``n_jk < 1`` are left out. With the classes latent
these counts carry more information than the data do (they are complete-data counts),
which the thresholds below allow for.

``'degenerate_channel'`` (uninformative channel)
    The channel carries no evidence about the class: its rows are alike and the data
    cannot show otherwise. Both must hold: the association of true and observed labels in
    the expected table (Cramér's V, ``sqrt(X^2 / (N (m - 1)))``, ``m`` the smaller of the
    numbers of rows and labels in use; for two classes about ``|b_j - a_j|`` when the
    classes are balanced) is below :data:`DEGENERATE_ASSOCIATION` (0.1), and Pearson's test
    of equal rows (``X^2 = sum (N - E)^2 / E``, ``E_ko = n_jk cbar_o`` with ``cbar`` the
    pooled row, chi-squared with ``(rows - 1)(labels - 1)`` degrees of freedom) does not
    reject at :data:`DEGENERATE_LEVEL` (0.01). The corrected target divides by the gap, so
    such a channel makes it unbounded; and a two-class Dawid–Skene fit with such an
    annotator is identified by the others alone (three informative annotators are needed):
    with three annotators of whom one is near-random, EM drifts along a ridge to error
    rates within 0.005 of 0 or 1 that the data do not support. The association guard
    keeps an annotator with few ratings but clearly different rows from being flagged for
    the test's lack of power.

``'adversarial_channel'``
    A relabelling of annotator j's labels raises its *balanced agreement*
    ``sum_k C_j[k, sigma(k)]`` (the per-class accuracies summed; the best permutation
    sigma by Hungarian assignment) by ``D > ADVERSARIAL_MARGIN + ADVERSARIAL_Z * se(D)``
    (margin 0, z 2.33, one-sided 1%); ``se(D)`` from the multinomial rows moved (counts
    ``n_jk``, entries smoothed by half a rating so that a row at 0 or 1 keeps a variance).
    For two classes: ``b_j < a_j`` by more than noise. Either the annotator really swaps
    labels (recode or drop it and refit), or the fit is a label-swapped mode: the latent
    classes are named after the majority vote (or an anchor annotator), so when most
    annotators, or the anchor, are adversarial the honest ones come out swapped and every
    target built from the fit is reversed. Balanced rather than prevalence-weighted
    agreement: an informative annotator biased towards one label (two classes:
    ``b_j > a_j`` but ``a_j > 1/2``) is not flagged. A two-class gap below zero that is
    within noise is not flagged here, but a corrected target refuses it (b - a <= 1e-4).

A channel that is both is reported as degenerate (its orientation is noise). The fit's
status is 'adversarial_channel' when any channel is adversarial, else
'degenerate_channel' when any is degenerate; the message names the annotators.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.stats import chi2

from .._validation import check_real
from ..data import Annotations

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
        Cramér's V of the expected table.
    p_value : ndarray of shape (J,)
        Pearson test of equal rows (1 where fewer than two rows or labels are in use).
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


def channel_counts(annotations: Annotations, post: np.ndarray) -> np.ndarray:
    """Expected class counts ``n_jk``: the posteriors of the items each annotator rated.

    Parameters
    ----------
    annotations : Annotations
        The fitted ratings (one term per rating).
    post : ndarray of shape (n_items, K)
        P(Y_i = k | ratings) of their items.

    Returns
    -------
    ndarray of shape (n_annotators, K)
    """
    post = np.asarray(post, dtype=np.float64)
    out = np.zeros((annotations.n_annotators, post.shape[1]))
    np.add.at(out, annotations.annotator_index, post[annotations.item_index])
    return out


def _one(C: np.ndarray, n: np.ndarray) -> np.ndarray:
    """(gap, association, p-value, excess, se) of one channel with class counts ``n``."""
    K = C.shape[0]
    rows = n >= _MIN_ROW
    R, m = C[rows], n[rows]
    gap = 0.0
    if R.shape[0] > 1:
        gap = float(0.5 * np.abs(R[:, None, :] - R[None, :, :]).sum(-1).max())
    N = m[:, None] * R
    pooled = N.sum(0) / max(N.sum(), 1e-300)
    used = pooled > 1e-12
    df = (R.shape[0] - 1) * (int(used.sum()) - 1)
    assoc, p = 0.0, 1.0
    if df > 0:
        E = m[:, None] * pooled[None, used]
        x2 = float(np.sum((N[:, used] - E) ** 2 / E))
        p = float(chi2.sf(x2, df))
        assoc = float(np.sqrt(x2 / (N.sum() * (min(R.shape[0], int(used.sum())) - 1))))
    # the best relabelling; rows without data count as correct (identity rows)
    B = np.where(rows[:, None], C, np.eye(K))
    r, c = linear_sum_assignment(-B)
    sigma = np.empty(K, dtype=np.int64)
    sigma[r] = c
    moved = rows & (sigma != np.arange(K))
    k = np.flatnonzero(moved)
    nk = n[k]
    p_to = (nk * C[k, sigma[k]] + 0.5) / (nk + 1.0)   # smoothed by half a rating
    p_at = (nk * C[k, k] + 0.5) / (nk + 1.0)
    se = float(np.sqrt(np.sum((p_to + p_at - (p_to - p_at) ** 2) / nk)))
    return np.array([gap, assoc, p, float(B[r, c].sum() - np.trace(B)), se])


def channel_check(confusion: np.ndarray, counts: np.ndarray, *,
                  annotators: Any = None, level: float = DEGENERATE_LEVEL,
                  association: float = DEGENERATE_ASSOCIATION,
                  margin: float = ADVERSARIAL_MARGIN, z: float = ADVERSARIAL_Z
                  ) -> ChannelCheck:
    """The rules of this module on fitted channels.

    Parameters
    ----------
    confusion : ndarray of shape (J, K, K)
        ``confusion[j, true, observed]``.
    counts : ndarray of shape (J, K)
        Expected class counts of each annotator's ratings (:func:`channel_counts`).
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
    >>> check = channel_check(C, np.full((4, 2), 500.0))
    >>> check.status, check.adversarial, check.degenerate
    ('adversarial_channel', (2,), (3,))
    """
    level = check_real(level, "level", minimum=0.0, maximum=1.0)
    association = check_real(association, "association", minimum=0.0, maximum=1.0)
    margin = check_real(margin, "margin", minimum=0.0)
    z = check_real(z, "z", minimum=0.0)
    C = np.asarray(confusion, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    if C.ndim != 3 or C.shape[1] != C.shape[2] or n.shape != C.shape[:2]:
        raise ValueError(f"confusion must have shape (J, K, K) and counts (J, K), got "
                         f"{C.shape} and {n.shape}")
    gap, assoc, p, excess, se = np.array([_one(C[j], n[j]) for j in range(C.shape[0])]
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
                     f"{np.round(se[i], 3).tolist()}; two classes: b < a). Either they swap "
                     "labels (recode or drop them and refit), or the fit is a label-swapped "
                     "mode and every target built from it is reversed")
    if degenerate.any():
        i = np.flatnonzero(degenerate)
        parts.append(f"annotator(s) {who[i].tolist()} have degenerate channels: the "
                     f"association of their labels with the class is "
                     f"{np.round(assoc[i], 3).tolist()} (Cramér's V, below {association:g}; "
                     f"largest row difference {np.round(gap[i], 3).tolist()}) and the test "
                     f"of equal rows does not reject (p = {np.round(p[i], 3).tolist()}, "
                     f"above {level:g}): their labels carry no evidence about the class, "
                     "their channels cannot be inverted and the fit is identified by the "
                     "other annotators alone; drop them and refit")
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
    check = channel_check(confusion, channel_counts(annotations, post),
                          annotators=annotations.annotators)
    if check.status != "ok":
        also = f"; also {message}" if status == "boundary" else ""
        status, message = check.status, check.message + also
    return status, message, check.as_details()
