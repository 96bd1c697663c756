"""A noise check's verdict on a target (:func:`with_noise_check`, :func:`checked_target`).

Corrected and posterior targets assume class-conditional noise; a target built from
annotations whose check (:func:`noisycal.annotators.noise_check`) rejects carries the
status ``'noise_depends_on_score'``, and so does every Estimate built from it. The
verdict is attached here, above the targets (which never import the annotator models).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._util.types import ArrayLike, Seed
from ...annotations.core import Annotations
from .noise_check import REJECTED, NoiseCheck, noise_check

__all__ = ["with_noise_check", "checked_target"]


def with_noise_check(target: Any, check: NoiseCheck) -> Any:
    """``target`` carrying the status of a noise check that rejects (unchanged otherwise).

    Corrected and posterior targets assume class-conditional noise; when
    :func:`noise_check` rejects it, the copy returned here has status
    ``'noise_depends_on_score'`` and a message saying why, so every Estimate built from it
    carries status ``'target_noise_depends_on_score'``. A target whose status is
    already not 'ok' keeps its status; the check's message is appended.

    Parameters
    ----------
    target : Target
        Built from the same annotations as the check (item ids are compared when both
        are known).
    check : NoiseCheck

    Returns
    -------
    Target
        With ``details['noise_check']`` holding the statistic, df, p-value and method.

    Raises
    ------
    ValueError
        If ``target`` or ``check`` has the wrong type, or their item ids differ.
    """
    # a Target (not imported: noisycal.targets calls this module)
    if not (dataclasses.is_dataclass(target) and hasattr(target, "status")
            and hasattr(target, "kind")):
        raise ValueError(f"target must be a noisycal Target, got {type(target).__name__}")
    if not isinstance(check, NoiseCheck):
        raise ValueError(f"check must be a NoiseCheck, got {type(check).__name__}")
    items = check.details.get("items")
    if target.items is not None and items is not None and not np.array_equal(
            np.asarray(target.items), np.asarray(items)):
        raise ValueError("check: its items differ from the target's items (build both from "
                         "the same annotations)")
    if not check.rejected:  # a rejection beside another status (sparse_tables) counts
        return target
    text = f"built under class-conditional noise, which {check.message}"
    note = {"statistic": check.statistic, "df": check.df, "p_value": check.p_value,
            "method": check.method, "status": check.status}
    details = {**target.details, "noise_check": note}
    if target.status != "ok":  # the fit's statuses rank first, the rejection beside
        return dataclasses.replace(target, message=f"{target.message}; it was also {text}",
                                   details=details, statuses=(*target.statuses, REJECTED))
    return dataclasses.replace(target, status=REJECTED, message=text, details=details)


def checked_target(target: Any, annotations: Any, scores: ArrayLike, *, seed: Seed = 0
                   ) -> Any:
    """``target`` after :func:`noise_check` of its annotations against ``scores``.

    The check with its defaults (seconds to a minute), its rejection put on the target
    (:func:`with_noise_check`: status 'noise_depends_on_score', which every Estimate
    built from the target carries), and the test's numbers in ``details['noise_check']``
    whatever its outcome. Targets do not run the check themselves (they sit below the
    annotator models): ``checked_target(nc.targets.corrected(ann, fit), ann, scores)``
    replaces ``nc.targets.corrected(ann, fit, scores=scores)``.

    Parameters
    ----------
    target : Target
        Built from ``annotations`` (item ids are compared when both are known).
    annotations : Annotations or array-like of shape (n_items, n_annotators)
        The target's ratings (an array holds class indices, NaN for a missing rating).
    scores : array-like of shape (n_items,) or (n_items, n_classes)
        The classifier's scores of the items, in their order (a pandas index must list
        the items; a DataFrame's columns are matched to the classes by label).
    seed : int or jax key, default=0
        Seeds the check (its shared fit's starts and bootstrap).

    Returns
    -------
    Target

    Examples
    --------
    >>> import noisycal as nc
    >>> toy = nc.simulate.gaussian_toy(300, seed=0)
    >>> ann = nc.Annotations.from_wide(toy.annotations, classes=[0, 1])
    >>> t = nc.targets.corrected(ann, a=[0.1] * 3, b=[0.9] * 3)
    >>> checked = nc.annotators.checked_target(t, ann, toy.z)
    >>> checked.status, sorted(checked.details["noise_check"])[:2]
    ('ok', ['df', 'method'])
    """
    ann = annotations if isinstance(annotations, Annotations) else Annotations.from_wide(
        np.asarray(annotations, dtype=np.float64), classes=np.arange(target.n_classes))
    check = noise_check(ann, scores, seed=seed)
    out = with_noise_check(target, check)
    return dataclasses.replace(out, details={**out.details, "noise_check": {
        "statistic": check.statistic, "df": check.df, "p_value": check.p_value,
        "method": check.method, "status": check.status}})
