"""TrimCal: the hard-trimming baseline of the loss-weighted calibration paper.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"
(Section V-G) compares LWCal's soft weights with hard trimming: drop the calibration points
with the highest noisy-label loss (its Eq. 1, :func:`noisycal.calibrators.lwcal.noisy_label_loss`)
and fit a standard calibrator on the rest.
"""

from __future__ import annotations

import math

import numpy as np

from .._util.types import ArrayLike
from .._util.validation import check_choice, check_real
from ..exceptions import IdentifiabilityWarning
from ..targets.target import Target
from ._base import Calibrator, check_alignment, check_unit_scores
from ._inputs import check_float_scores
from .isotonic import IsotonicCalibration
from .lwcal import _binary_labels, _no_logits, noisy_label_loss

__all__ = ["TrimCal", "TRIM_RULES"]

#: How TrimCal picks the retained points.
TRIM_RULES = ("count", "quantile")


class TrimCal(Calibrator):
    """TrimCal: drop the highest-loss calibration points, then fit a standard calibrator.

    The hard-trimming baseline of "LWCal: Loss-Weighted Calibration for Tabular
    Classifiers with Noisy Calibration Labels" (Section V-G): the noisy-label loss of
    Eq. 1, keep the lowest-loss share ``retain`` of the points, fit ``calibrator``
    (isotonic by default: TrimCal-Iso; a beta calibrator gives TrimCal-Beta) on them.
    The paper does not state the retained fraction behind its tables (its Fig. 6 finds
    80-90% better than keeping all); the default 0.9 is ours. The paper does not state
    the tie rule either: ``rule='count'`` keeps exactly ``ceil(retain n)`` points, ties at
    the cut broken by input order (stable); ``rule='quantile'`` keeps every point with
    ``l <= numpy.quantile(l, retain)`` (order invariant; may keep more on ties).

    Parameters
    ----------
    retain : float, default=0.9
        Share of points kept, in (0, 1].
    rule : {'count', 'quantile'}, default='count'
    loss_clip : float, default=1e-12
        As in :class:`LWCal`.
    calibrator : Calibrator, optional
        An unfitted binary calibrator taking ``fit(probs=, target=)``; it is copied, not
        modified. Default: ``IsotonicCalibration()``.

    Attributes
    ----------
    losses_ : ndarray of shape (n,)
    kept_ : ndarray of shape (n,), bool
        Which calibration points were kept.
    n_kept_ : int
    threshold_ : float
        The largest kept loss.
    calibrator_ : Calibrator
        The fitted calibrator.
    status_, message_ : str
        Those of ``calibrator_``, or 'target_not_ok' when the target is a Target built
        from a fit whose status is not 'ok'.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([0.1, 0.2, 0.4, 0.6, 0.8, 0.9])
    >>> t = nc.calibrators.TrimCal(retain=0.5).fit(probs=p, target=np.array([0, 1, 0, 1, 0, 1]))
    >>> t.kept_.tolist()
    [True, False, True, False, False, True]
    """

    _fitted_attr = "calibrator_"

    def __init__(self, *, retain: float = 0.9, rule: str = "count",
                 loss_clip: float = 1e-12, calibrator: Calibrator | None = None) -> None:
        self.retain = retain
        self.rule = rule
        self.loss_clip = loss_clip
        self.calibrator = calibrator

    def fit(self, *, probs: ArrayLike | None = None, target: object = None,
            logits: ArrayLike | None = None) -> TrimCal:
        """Trim the highest-loss points and fit the calibrator on the rest.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class calibration scores in [0, 1].
        target : Target, array-like of shape (n,) or (n, 2)
            One 0/1 (noisy) label per item.
        logits : None
            Not accepted.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On invalid parameters or inputs (as :meth:`LWCal.fit`).
        """
        q = check_real(self.retain, "retain", minimum=0.0, maximum=1.0)
        if q == 0:
            raise ValueError("retain must satisfy 0 < retain <= 1, got 0")
        check_choice(self.rule, "rule", TRIM_RULES)
        check_real(self.loss_clip, "loss_clip", minimum=0.0, maximum=0.5, strict=True)
        base = IsotonicCalibration() if self.calibrator is None else self.calibrator
        if not isinstance(base, Calibrator):
            raise ValueError(f"calibrator must be a noisycal Calibrator, got "
                             f"{type(base).__name__}")
        _no_logits(logits, "TrimCal")
        if probs is None:
            raise ValueError("probs is required (positive-class scores in [0, 1])")
        check_float_scores(probs, "probs")
        p = check_unit_scores(probs, "probs")
        y = _binary_labels(target, p.size, "TrimCal")
        check_alignment(probs, "probs", target, "target")
        losses = noisy_label_loss(p, y, loss_clip=float(self.loss_clip))
        if self.rule == "count":
            k = max(1, math.ceil(round(q * p.size, 9)))
            kept = np.zeros(p.size, dtype=bool)
            kept[np.argsort(losses, kind="stable")[:k]] = True
        else:
            kept = losses <= np.quantile(losses, q)
        cal = type(base)(**base.get_params(deep=False))
        cal.fit(probs=p[kept], target=y[kept])
        self.losses_, self.kept_ = losses, kept
        self.n_kept_ = int(kept.sum())
        self.threshold_ = float(losses[kept].max())
        self.calibrator_ = cal
        status = target.status if isinstance(target, Target) else "ok"
        if status != "ok":
            self._set_status("target_not_ok", f"the target comes from an annotator fit with "
                             f"status {status!r}: {target.message}", IdentifiabilityWarning)
        else:
            self._set_status(cal.status_, cal.message_, None)
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """The fitted calibrator's probabilities.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1].
        logits : None
            Not accepted.

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        _no_logits(logits, "TrimCal")
        if probs is None:
            raise ValueError("probs is required (positive-class scores in [0, 1])")
        check_float_scores(probs, "probs")
        return self.calibrator_.predict_proba(probs=check_unit_scores(probs, "probs"))
