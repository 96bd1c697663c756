"""Statuses of annotator fits: what the design cannot identify, what the estimates show.

:func:`design_status` (identification problems of a data design), :func:`estimate_status`
(convergence, small gaps, boundary) and :func:`checked_status` (the local identification
check), re-exported by :mod:`noisycal.engines.results`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["design_status", "estimate_status", "checked_status", "BOUNDARY"]

#: A marginal prevalence below this is reported as a boundary estimate.
BOUNDARY = 1e-6


def design_status(label_counts: np.ndarray, classes: np.ndarray, n_params: int,
                  n_ratings: int, *, J: int, L: int, n_items: int | None = None
                  ) -> tuple[str, str]:
    """Identification problems of a Dawid–Skene data design, whatever the estimates.

    Parameters
    ----------
    label_counts : (K,) int
        Ratings per observed class.
    classes : (K,)
        Class labels (named in the message).
    n_params : int
        Free parameters of the model.
    n_ratings : int
        Ratings fitted.
    J, L : int
        Annotators and groups.
    n_items : int, optional
        Items rated; with it the saturation count leaves out one rating per item.

    Returns
    -------
    (status, message)
        'unobserved_class' when a class is never rated (its prevalence and channel rows
        are then set by the starts or the prior, not the data); 'not_identified' when
        the model has more free parameters than the L (K^J - 1) free frequencies of
        complete rating patterns; 'over_parametrised' when it has more free
        parameters than ratings, or (``n_items`` given) at least as many as the ratings
        beyond each item's first (a saturated fit: one rating per item is spent on
        locating the item's class, and only agreement among the others informs the
        channels); else ('ok', '').
    """
    K = len(classes)
    absent = np.asarray(classes)[np.asarray(label_counts) == 0].tolist()
    if absent:
        return "unobserved_class", (f"class(es) {absent} never occur in the ratings: "
                                    "their prevalence and channels are not identified")
    # J log K can be large: the count is then effectively infinite
    cells = L * (K ** J - 1) if J * np.log(K) < 60 else np.inf
    if n_params > cells:
        return "not_identified", (f"{n_params} free parameters but only {cells} free "
                                  "pattern frequencies: the model is over-parametrised")
    if n_params > n_ratings:
        return "over_parametrised", (f"{n_params} free parameters from {n_ratings} "
                                     "ratings: the fit is saturated, its estimates are "
                                     "not determined by the data")
    if n_items is not None and n_params >= n_ratings - n_items:
        return "over_parametrised", (
            f"{n_params} free parameters from {n_ratings} ratings of {n_items} items: "
            f"beyond one rating per item (which locates the item's class) only "
            f"{n_ratings - n_items} ratings inform the channels, so the fit is saturated "
            "and its estimates are not determined by the data")
    return "ok", ""


def estimate_status(prevalence: np.ndarray, confusion: np.ndarray, converged: bool
                    ) -> tuple[str, str]:
    """Status of finite point estimates: convergence, small binary gaps, boundary.

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    converged : bool

    Returns
    -------
    (status, message)
        'not_converged'; 'small_gap' when a binary annotator's gap
        ``|confusion[j, 1, 1] - confusion[j, 0, 1]|`` is at most 1e-4, or for K > 2 the
        smallest singular value of its confusion matrix is (the channel cannot be
        inverted, so a corrected target refuses it); 'boundary' when a marginal model's
        prevalence is below :data:`BOUNDARY`; else ('ok', '').
    """
    from ..correction.labels import GAP_THRESHOLD

    if not converged:
        return "not_converged", "the iteration limit was reached before the tolerance"
    if confusion.shape[1] == 2:
        size = np.abs(confusion[:, 1, 1] - confusion[:, 0, 1])
    else:
        size = np.linalg.svd(confusion, compute_uv=False).min(axis=-1)
    small = np.flatnonzero(size <= GAP_THRESHOLD)
    if small.size:
        what = "|gap|" if confusion.shape[1] == 2 else "smallest singular value"
        return "small_gap", (f"annotator(s) {small.tolist()} have {what} <= "
                             f"{GAP_THRESHOLD:g}: their channel carries (nearly) no "
                             "information about the class and cannot be inverted")
    if prevalence.shape[0] == 1 and np.min(prevalence) < BOUNDARY:
        return "boundary", (f"a class prevalence is below {BOUNDARY:g}: the estimate "
                            "is on the boundary of the parameter space")
    return "ok", ""


def checked_status(status: str, message: str, check: Callable[[], Any]
                   ) -> tuple[str, str, dict[str, Any]]:
    """Run ``check`` on a fit whose status is 'ok' or 'boundary'; update status and message.

    ``'weakly_identified'`` replaces 'ok' or 'boundary' (whose message is kept after it);
    other statuses are returned unchanged and nothing is checked.

    Parameters
    ----------
    status, message : str
        The fit's status and message so far.
    check : callable
        ``() -> Identification`` (:mod:`noisycal.engines.identification`), or a string
        saying why nothing could be checked.

    Returns
    -------
    (status, message, details)
        ``details`` (for the fit's ``details['identification']``) holds
        :meth:`Identification.as_details` and ``checked=True``, or ``checked=False`` and
        the reason.
    """
    if status not in ("ok", "boundary"):
        return status, message, {"checked": False,
                                 "reason": f"not checked: the fit's status is {status!r}"}
    ident = check()
    if isinstance(ident, str):
        return status, message, {"checked": False, "reason": ident}
    if ident.status != "ok":
        also = f"; also {message}" if status == "boundary" else ""
        status, message = ident.status, ident.message + also
    return status, message, {"checked": True, **ident.as_details()}
