"""Statuses of annotator fits: what the design cannot identify, what the estimates show.

:func:`design_status` (identification problems of a data design), :func:`estimate_status`
(convergence, small gaps, boundary), :func:`checked_status` (the local identification
check) and :func:`every_status` (all of them, for ``AnnotatorFit.statuses``), re-exported
by :mod:`noisycal.engines.results`. :func:`design_problems` and :func:`estimate_problems`
list every problem where the ``*_status`` functions give the first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._util.statuses import join_messages, ordered_statuses, severity

__all__ = ["design_status", "estimate_status", "checked_status", "BOUNDARY",
           "design_problems", "estimate_problems", "every_status", "first_status"]

#: A marginal prevalence below this is reported as a boundary estimate.
BOUNDARY = 1e-6


def design_problems(label_counts: np.ndarray, classes: np.ndarray, n_params: int,
                    n_ratings: int, *, J: int, L: int, n_items: int | None = None
                    ) -> list[tuple[str, str]]:
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
    list of (status, message)
        Every problem found, most severe first (empty when there is none):
        'unobserved_class' when a class is never rated (its prevalence and channel rows
        are then set by the starts or the prior, not the data); 'not_identified' when
        the model has more free parameters than the L (K^J - 1) free frequencies of
        complete rating patterns; 'over_parametrised' when it has more free
        parameters than ratings, or (``n_items`` given) at least as many as the ratings
        beyond each item's first (a saturated fit: one rating per item is spent on
        locating the item's class, and only agreement among the others informs the
        channels).
    """
    K = len(classes)
    found = []
    absent = np.asarray(classes)[np.asarray(label_counts) == 0].tolist()
    if absent:
        found.append(("unobserved_class", (f"class(es) {absent} never occur in the "
                                           "ratings: their prevalence and channels are "
                                           "not identified")))
    # J log K can be large: the count is then effectively infinite
    cells = L * (K ** J - 1) if J * np.log(K) < 60 else np.inf
    if n_params > cells:
        found.append(("not_identified", (f"{n_params} free parameters but only {cells} "
                                         "free pattern frequencies: the model is "
                                         "over-parametrised")))
    if n_params > n_ratings:
        found.append(("over_parametrised", (f"{n_params} free parameters from {n_ratings} "
                                            "ratings: the fit is saturated, its estimates "
                                            "are not determined by the data")))
    elif n_items is not None and n_params >= n_ratings - n_items:
        found.append(("over_parametrised", (
            f"{n_params} free parameters from {n_ratings} ratings of {n_items} items: "
            f"beyond one rating per item (which locates the item's class) only "
            f"{n_ratings - n_items} ratings inform the channels, so the fit is saturated "
            "and its estimates are not determined by the data")))
    return found


def design_status(label_counts: np.ndarray, classes: np.ndarray, n_params: int,
                  n_ratings: int, *, J: int, L: int, n_items: int | None = None
                  ) -> tuple[str, str]:
    """The most severe of :func:`design_problems`, or ('ok', '').

    Parameters
    ----------
    label_counts, classes, n_params, n_ratings, J, L, n_items
        As for :func:`design_problems`.

    Returns
    -------
    (status, message)
        The first problem :func:`design_problems` finds, else ('ok', '').
    """
    found = design_problems(label_counts, classes, n_params, n_ratings, J=J, L=L,
                            n_items=n_items)
    return found[0] if found else ("ok", "")


def estimate_problems(prevalence: np.ndarray, confusion: np.ndarray, converged: bool
                      ) -> list[tuple[str, str]]:
    """Problems of finite point estimates: convergence, small binary gaps, boundary.

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    converged : bool

    Returns
    -------
    list of (status, message)
        Every problem found, most severe first (empty when there is none):
        'not_converged'; 'small_gap' when a binary annotator's gap
        ``|confusion[j, 1, 1] - confusion[j, 0, 1]|`` is at most 1e-4, or for K > 2 the
        smallest singular value of its confusion matrix is (the channel cannot be
        inverted, so a corrected target refuses it); 'boundary' when a marginal model's
        prevalence is below :data:`BOUNDARY`.
    """
    from ..correction.labels import GAP_THRESHOLD

    found = []
    if not converged:
        found.append(("not_converged",
                      "the iteration limit was reached before the tolerance"))
    if confusion.shape[1] == 2:
        size = np.abs(confusion[:, 1, 1] - confusion[:, 0, 1])
    else:
        size = np.linalg.svd(confusion, compute_uv=False).min(axis=-1)
    small = np.flatnonzero(size <= GAP_THRESHOLD)
    if small.size:
        what = "|gap|" if confusion.shape[1] == 2 else "smallest singular value"
        found.append(("small_gap", (f"annotator(s) {small.tolist()} have {what} <= "
                                    f"{GAP_THRESHOLD:g}: their channel carries (nearly) no "
                                    "information about the class and cannot be inverted")))
    if prevalence.shape[0] == 1 and np.min(prevalence) < BOUNDARY:
        found.append(("boundary", (f"a class prevalence is below {BOUNDARY:g}: the "
                                   "estimate is on the boundary of the parameter space")))
    return found


def estimate_status(prevalence: np.ndarray, confusion: np.ndarray, converged: bool
                    ) -> tuple[str, str]:
    """The most severe of :func:`estimate_problems`, or ('ok', '').

    Parameters
    ----------
    prevalence, confusion, converged
        As for :func:`estimate_problems`.

    Returns
    -------
    (status, message)
        'not_converged', 'small_gap' or 'boundary' (the first that applies), else
        ('ok', '').
    """
    found = estimate_problems(prevalence, confusion, converged)
    return found[0] if found else ("ok", "")


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


def every_status(status: str, message: str, *others: tuple[str, str]
                 ) -> tuple[str, str, tuple[str, ...]]:
    """A fit's status and message with every other status that applies.

    Parameters
    ----------
    status, message : str
        The status the fit's checks chose and its message.
    *others : (str, str)
        Every other ``(status, message)`` met on the way (a design problem behind a
        worse one, a 'boundary' a channel check replaced); an 'ok' one adds only its
        message.

    Returns
    -------
    (status, message, statuses)
        ``statuses`` ordered most severe first (:func:`noisycal._util.statuses.
        ordered_statuses`), ``status`` its first entry, and ``message`` followed by the
        messages of the others that it does not already hold.

    Examples
    --------
    >>> from noisycal.engines.status import every_status
    >>> every_status("not_converged", "no convergence", ("boundary", "a prevalence is 0"))
    ('not_converged', 'no convergence; a prevalence is 0', ('not_converged', 'boundary'))
    """
    statuses = ordered_statuses([status, *(code for code, _ in others)])
    return statuses[0], join_messages(message, *(text for _, text in others)), statuses


def first_status(found: list[tuple[str, str]]
                 ) -> tuple[tuple[str, str], list[tuple[str, str]]]:
    """The most severe of ``found`` and the rest (stable: among equals the first given).

    Parameters
    ----------
    found : list of (status, message)

    Returns
    -------
    ((status, message), rest)
        ``('ok', '')`` and ``[]`` when ``found`` is empty.
    """
    ranked = sorted(found, key=lambda pair: severity(pair[0]))
    return (ranked[0], ranked[1:]) if ranked else (("ok", ""), [])
