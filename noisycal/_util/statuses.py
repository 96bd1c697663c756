"""Status severity: the one ranking that orders the statuses a result carries."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["SEVERITY", "TARGET_PREFIX", "severity", "ordered_statuses", "join_messages"]

#: Every status code whose rank matters, most severe first. A result keeps all the
#: statuses that apply (``statuses``), ordered by this ranking, and its ``status`` is the
#: first of them. The order is the precedence the fitters and metrics have always used to
#: pick one status: a failed fit (non-finite estimates, then the data design) before
#: convergence and channel problems; a metric's own failure before a problem with the
#: channels it carries; a boundary estimate, a target's rejected noise check and an
#: estimate outside its own interval last.
#: Statuses not listed here (a metric's or a calibrator's own codes, e.g. ``'no_bins'``)
#: rank together between ``'weakly_identified'`` and ``'weak_channels'``, in the order
#: given. A status ``'target_<s>'`` (an Estimate whose target was built from a fit with
#: status ``s``) ranks before every status that is not a target's, in the order of ``s``.
SEVERITY: tuple[str, ...] = (
    "nonfinite",
    "unobserved_class",
    "not_identified",
    "over_parametrised",
    "infeasible_mom",
    "not_converged",
    "diagnostics_unavailable",
    "small_gap",
    "adversarial_channel",
    "degenerate_channel",
    "weakly_identified",
    # statuses not listed rank here
    "weak_channels",
    "boundary",
    "noise_depends_on_score",  # a target's noise check, after the fit's own statuses
    "averaged_channels",  # a corrected target from channels averaged over items (GLAD)
    "estimate_outside_interval",
)

#: The prefix of an Estimate's status that comes from its target.
TARGET_PREFIX = "target_"

_RANK = {code: i for i, code in enumerate(SEVERITY)}
_UNLISTED = _RANK["weak_channels"] - 0.5


def severity(status: str) -> tuple[int, float]:
    """The sort key of ``status``: smaller is more severe; ``'ok'`` sorts last.

    Parameters
    ----------
    status : str

    Returns
    -------
    tuple of (int, float)
        ``(0, rank)`` for a target's status, ``(1, rank)`` for any other, ``(2, 0)`` for
        ``'ok'``.

    Examples
    --------
    >>> from noisycal._util.statuses import severity
    >>> severity("not_converged") < severity("boundary") < severity("ok")
    True
    >>> severity("target_boundary") < severity("nonfinite")
    True
    """
    if status == "ok":
        return (2, 0.0)
    if status.startswith(TARGET_PREFIX) and len(status) > len(TARGET_PREFIX):
        return (0, severity(status[len(TARGET_PREFIX):])[1])
    return (1, float(_RANK.get(status, _UNLISTED)))


def ordered_statuses(statuses: Iterable[str]) -> tuple[str, ...]:
    """``statuses`` without repeats and without ``'ok'``, most severe first.

    Ties (statuses not in :data:`SEVERITY`) keep their given order.

    Parameters
    ----------
    statuses : iterable of str

    Returns
    -------
    tuple of str
        ``('ok',)`` when no status but ``'ok'`` is given, so the first entry is always the
        result's ``status``.

    Examples
    --------
    >>> from noisycal._util.statuses import ordered_statuses
    >>> ordered_statuses(["boundary", "ok", "not_converged", "boundary"])
    ('not_converged', 'boundary')
    >>> ordered_statuses(["ok"])
    ('ok',)
    """
    codes = [str(s) for s in dict.fromkeys(statuses) if s and s != "ok"]
    return tuple(sorted(codes, key=severity)) or ("ok",)


def join_messages(message: str, *others: str) -> str:
    """``message`` followed by each of ``others`` that is not empty and not already in it.

    Parameters
    ----------
    message : str
    *others : str

    Returns
    -------
    str
        The parts joined by ``'; '``.

    Examples
    --------
    >>> from noisycal._util.statuses import join_messages
    >>> join_messages("the fit did not converge", "", "a prevalence is 0")
    'the fit did not converge; a prevalence is 0'
    """
    text = message
    for other in others:
        if other and other not in text:
            text = f"{text}; {other}" if text else other
    return text
