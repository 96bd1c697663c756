"""Binned binary recalibration maps, and where the scaling maps live.

The scaling maps (temperature, vector, Platt, matrix and Dirichlet scaling), fitted to
any target, are in :mod:`noisycal.calibrators.temperature` and
:mod:`noisycal.calibrators.multiclass`.

The projected histogram (Zadrozny & Elkan, 2001; J equal-width bins, bin value
``clip(mean target, 0, 1)``, empty bins the projected overall mean) carries the
Proposition 2 bound of "Noisy-Label Calibration with Multiple Unreliable Labels"
(Section 5).

References
----------
Zadrozny, B. & Elkan, C. (2001). Obtaining calibrated probability estimates from decision
trees and naive Bayesian classifiers. ICML.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._typing import ArrayLike
from .._validation import MAX_BINS_PER_ITEM, check_int, check_level, check_n_bins
from ..intervals.bounds import hoeffding_radius, target_range
from ..metrics.binning import equal_width_bins
from ._base import (
    Calibrator,
    check_alignment,
    check_same_target,
    check_unit_scores,
    positive_target,
    target_record,
)

__all__ = ["HistogramBinning", "MAX_BINS_PER_ITEM"]


class _BinnedMap(Calibrator):
    """A map constant on equal-width score bins: shared ``predict_proba`` (``values_``)."""

    _fitted_attr = "values_"
    _map_name: str  # the class's name in predict_proba's error

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """The map's value at each score: ``values_`` of the score's bin.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1].
        logits : None
            Not accepted (the bins are on the probability scale); present to give a
            clear error.

        Returns
        -------
        ndarray of shape (n,)

        Raises
        ------
        NotFittedError
            If called before ``fit``.
        ValueError
            If ``logits`` is given, or ``probs`` is missing, not 1-D, not finite or
            outside [0, 1].
        """
        self._check_fitted()
        if logits is not None:
            raise ValueError(f"logits= is not accepted: {self._map_name} bins probabilities; "
                             "pass probs= (scores in [0, 1])")
        if probs is None:
            raise ValueError("probs is required (scores in [0, 1])")
        z = check_unit_scores(probs, "probs")
        return self.values_[equal_width_bins(z, len(self.values_))]


class HistogramBinning(_BinnedMap):
    """Fixed-bin projected histogram binning.

    Histogram binning (Zadrozny & Elkan, 2001) in the projected form of "Noisy-Label
    Calibration with Multiple Unreliable Labels" (Section 5), which carries its
    Proposition 2 bound: J equal-width bins on the original score; each bin's value is the
    mean target of its fitting items projected onto [0, 1]; empty bins get the projected
    mean of all fitting targets.

    Parameters
    ----------
    n_bins : int, default=10
        Number J of equal-width bins, ``[h/J, (h+1)/J)`` with the last bin closed; at
        least 1 and at most ``MAX_BINS_PER_ITEM`` (10) times the number of fitting items.

    Attributes
    ----------
    values_ : ndarray of shape (n_bins,)
        Projected bin values.
    raw_means_ : ndarray of shape (n_bins,)
        Unprojected bin means (NaN for empty bins).
    counts_ : ndarray of shape (n_bins,)
        Fitting items in each bin.
    objective_ : float
        Mass-weighted distance moved by the projection, ``sum_h (n_h / n) |raw - value|``.
    status_ : str
        Always ``'ok'`` (empty bins are part of the method, not a failure).
    message_ : str
        ``''``.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> z = np.array([0.05, 0.55, 0.58, 0.95])
    >>> h = nc.calibrators.HistogramBinning(n_bins=2).fit(probs=z, target=np.array([0, 1, 0, 1]))
    >>> h.values_.tolist(), h.predict_proba(probs=np.array([0.2, 0.9])).tolist()
    ([0.0, 0.6666666666666666], [0.0, 0.6666666666666666])
    """

    _map_name = "HistogramBinning"

    def __init__(self, *, n_bins: int = 10) -> None:
        self.n_bins = n_bins

    def fit(self, *, probs: ArrayLike, target: object) -> HistogramBinning:
        """Fit the bin values.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1] (the bins are on the probability scale, so
            there is no ``logits=``).
        target : Target, array-like of shape (n, 2) or (n,)
            A Target or (n, 2) matrix (column 1 is used), 0/1 labels, or a 1-D float
            positive-class target (any finite real values).

        Returns
        -------
        self : HistogramBinning

        Raises
        ------
        ValueError
            If ``probs`` is empty, not 1-D, not finite or outside [0, 1], ``target`` does
            not match it (length, or the items of a pandas ``probs``' index), or
            ``n_bins`` is not an integer in [1, 10 n].
        """
        J = check_int(self.n_bins, "n_bins", minimum=1)
        z = check_unit_scores(probs, "probs")
        check_n_bins(J, z.size)
        y = positive_target(target, z.shape[0])
        check_alignment(probs, "probs", target, "target")
        b = equal_width_bins(z, J)
        counts = np.bincount(b, minlength=J)
        sums = np.bincount(b, weights=y, minlength=J)
        with np.errstate(invalid="ignore", divide="ignore"):
            raw = np.where(counts > 0, sums / counts, np.nan)
        fill = float(np.clip(y.mean(), 0.0, 1.0))
        self.raw_means_ = raw
        self.counts_ = counts
        self.values_ = np.where(counts > 0, np.clip(raw, 0.0, 1.0), fill)
        self.objective_ = float(np.sum(counts / z.size * np.abs(np.nan_to_num(raw) -
                                                                  self.values_)))
        self._fit_target = target_record(target, y)  # what bound() checks its target by
        self._set_status("ok", "", None)
        return self

    def bound(self, target: object, *, level: float = 0.9, channel_term: float = 0.0) -> float:
        """Proposition 2: ECE(g o f) <= d_ch + (B + 1) sqrt(2 (J log 2 + log(4/eta)) / n_rec).

        B is B-hat of the fitted target (:func:`noisycal.intervals.bounds.target_range`;
        with missing ratings the maximum over items of sum_j w_ij / delta_j, our
        generalisation).

        The finite-sample bound on the calibration error of the fitted histogram of
        "Noisy-Label Calibration with Multiple Unreliable Labels" (Proposition 2), with
        ``eta = 1 - level``.

        Parameters
        ----------
        target : Target
            The corrected target the histogram was fitted to (its weights and channels
            give B); ``fit`` records its values, weights and channels, and any other
            target is an error.
        level : float, default=0.9
            Probability ``1 - eta`` with which the bound holds, a fraction in (0, 1).
        channel_term : float, default=0.0
            The channel-error term d_ch (0 assumes exact channels); finite and >= 0.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``level`` or ``channel_term`` is invalid, ``target`` is not the
            corrected Target the histogram was fitted to (same values, weights and
            channels), or its channel fit's status is not 'ok'.
        """
        self._check_fitted()
        level = check_level(level)
        if isinstance(channel_term, bool) or not isinstance(channel_term, numbers.Real) \
                or not math.isfinite(channel_term) or channel_term < 0:
            raise ValueError(f"channel_term must be a finite number >= 0, got {channel_term!r}")
        det = getattr(target, "details", {})
        if "weights" not in det:
            raise ValueError("target must be the corrected Target the histogram was fitted to "
                             "(nc.targets.corrected): bound() needs its weights and channels")
        record = check_same_target(target, self._fit_target, "the histogram")
        if record["fit_status"] not in (None, "ok"):
            raise ValueError(f"target: bound() needs identified channels, but the channel "
                             f"fit the target was built from has status "
                             f"{record['fit_status']!r} (Proposition 2 assumes its channels "
                             "are identified and consistent)")
        B = target_range(record)  # max over items of sum_j w_ij / delta_j
        # the same Hoeffding term as the NC-ECE bound, for a range of B + 1 and 4 events
        return channel_term + hoeffding_radius(B + 1.0, int(self.counts_.sum()),
                                               len(self.values_), level, union=4.0)
