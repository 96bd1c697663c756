"""Histogram binning fitted to any target: binary, and top-label (HB-Hard and HB-Soft).

The projected histogram (Zadrozny & Elkan, 2001): J equal-width bins on the score, each
bin's value the mean target of its fitting items projected onto [0, 1]. On binary
scores it carries the Proposition 2 bound of "Noisy-Label Calibration with Multiple
Unreliable Labels" (Section 5). On (n, K) scores it is the top-label histogram of Tao,
Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth" (Sections 4
and 6: HB-Hard with voted labels, HB-Soft with the annotator distribution): the bins are
on the top-class confidence ``p_c`` (``c = argmax p``), the bin value is the mean of
``t_{i,c}``, and the full vector is the proportional rebuild of
:mod:`noisycal.calibrators._toplabel`. One-hot targets make the soft fit the hard one
exactly (same code path).

References
----------
Zadrozny, B. & Elkan, C. (2001). Obtaining calibrated probability estimates from decision
trees and naive Bayesian classifiers. ICML.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._util.types import ArrayLike
from .._util.validation import (
    MAX_BINS_PER_ITEM,
    check_choice,
    check_int,
    check_level,
    check_n_bins,
)
from ..exceptions import IdentifiabilityWarning
from ..metrics.binned.bins import equal_width_bins
from ..metrics.nc.bound import hoeffding_radius, target_range
from ._base import (
    Calibrator,
    check_alignment,
    check_same_target,
    check_unit_scores,
    inherit_target_status,
    positive_target,
    target_record,
)
from ._inputs import ScoreInput, fit_target
from ._toplabel import top_label_inputs, top_label_rebuild

__all__ = ["HistogramBinning", "MAX_BINS_PER_ITEM", "EMPTY_BINS", "histogram_values"]

#: What an empty bin maps to.
EMPTY_BINS = ("mean", "center", "identity")


def histogram_values(score: np.ndarray, t: np.ndarray, n_bins: int, empty_bins: str
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin means of ``t`` over equal-width bins of ``score`` and the projected values.

    Parameters
    ----------
    score : ndarray of shape (n,)
        Scores in [0, 1].
    t : ndarray of shape (n,)
        Targets (any real values).
    n_bins : int
        J.
    empty_bins : {'mean', 'center', 'identity'}
        Value of an empty bin: the projected mean of all ``t``, the bin's midpoint, or
        NaN (the map then leaves the score unchanged there).

    Returns
    -------
    values : ndarray of shape (n_bins,)
        ``clip(bin mean, 0, 1)``, and the empty-bin rule elsewhere.
    raw : ndarray of shape (n_bins,)
        Unprojected bin means (NaN for empty bins).
    counts : int ndarray of shape (n_bins,)
    """
    b = equal_width_bins(score, n_bins)
    counts = np.bincount(b, minlength=n_bins)
    sums = np.bincount(b, weights=t, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(counts > 0, sums / counts, np.nan)
    fill = {"mean": np.full(n_bins, float(np.clip(t.mean(), 0.0, 1.0))),
            "center": (np.arange(n_bins) + 0.5) / n_bins,
            "identity": np.full(n_bins, np.nan)}[empty_bins]
    return np.where(counts > 0, np.clip(raw, 0.0, 1.0), fill), raw, counts


def _item_status(n: int, n_bins: int, counts: np.ndarray) -> tuple[str, str]:
    """``('too_few_items', why)`` when fewer items than bins (or one item) were fitted."""
    if n >= max(n_bins, 2):
        return "ok", ""
    empty = int(np.count_nonzero(counts == 0))
    return "too_few_items", (f"only {n} fitting item(s) for {n_bins} bin(s): {empty} "
                             f"bin(s) are empty and take the empty-bin value, and each "
                             f"other bin's value rests on very few items; use fewer bins "
                             f"or more fitting items")


def _apply(values: np.ndarray, score: np.ndarray) -> np.ndarray:
    """The histogram's value at each score (an empty 'identity' bin keeps the score)."""
    v = values[equal_width_bins(score, len(values))]
    return np.where(np.isnan(v), score, v)


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
        z = self._binary_scores(probs, logits)
        return self.values_[equal_width_bins(z, len(self.values_))]

    def _binary_scores(self, probs: ArrayLike | None, logits: ArrayLike | None
                       ) -> np.ndarray:
        """The checked binary scores of ``predict_proba`` (``logits=`` refused)."""
        if logits is not None:
            raise ValueError(f"logits= is not accepted: {self._map_name} bins probabilities; "
                             "pass probs= (scores in [0, 1])")
        if probs is None:
            raise ValueError("probs is required (scores in [0, 1])")
        return check_unit_scores(probs, "probs")


class HistogramBinning(_BinnedMap):
    """Fixed-bin projected histogram binning, binary or top-label (HB-Hard / HB-Soft).

    - **Binary** scores of shape (n,) (``probs=`` positive-class probabilities): histogram
      binning (Zadrozny & Elkan, 2001) in the projected form of "Noisy-Label Calibration
      with Multiple Unreliable Labels" (Section 5), which carries its Proposition 2 bound
      (:meth:`bound`): J equal-width bins on the score; each bin's value is the mean
      target of its fitting items projected onto [0, 1].
    - **Multi-class** scores of shape (n, K) (``probs=`` rows summing to 1, or
      ``logits=``, which enter as ``softmax(logits)``): the top-label histogram of Tao,
      Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth"
      (Sections 4 and 6). The bins are on the top-class confidence ``p_c``
      (``c = argmax p``, lowest index on ties) and the bin value is the mean of the
      target's mass on the predicted class, ``t_{i,c}``: with voted (one-hot) labels this
      is HB-Hard (the mean of ``1[y* = c]``), with the annotator distribution HB-Soft
      (the mean of ``pi_c``); a one-hot soft target gives exactly the hard fit. The
      paper describes neither; the full vector is the proportional rebuild
      ``q_c = h(p_c)``, ``q_k = p_k (1 - h(p_c)) / (1 - p_c)``
      (:func:`noisycal.calibrators._toplabel.top_label_rebuild`), and ``c`` stays the
      predicted class even where another ``q_k`` exceeds ``q_c``: the paper recalibrates
      the confidence of the uncalibrated predicted class, so score the map's output with
      that class, ``nc.true_label_ece(q, target, predicted=p.argmax(1))`` (what
      :func:`noisycal.ambiguity.compare_calibrators` does by default), not with
      ``argmax q``.

    Empty bins are a gap in both papers' descriptions (``empty_bins``): the projected
    mean of all fitting targets (default; the form the Proposition 2 bound is stated
    for), the bin's midpoint, or the score left unchanged.

    Parameters
    ----------
    n_bins : int, default=10
        Number J of equal-width bins, ``[h/J, (h+1)/J)`` with the last bin closed; at
        least 1 and at most ``MAX_BINS_PER_ITEM`` (10) times the number of fitting items.
        "Confidence Calibration under Ambiguous Ground Truth" uses 15.
    empty_bins : {'mean', 'center', 'identity'}, default='mean'
        The value of a bin with no fitting item: the projected mean target, the bin's
        midpoint ``(h + 1/2) / J``, or the score itself.

    Attributes
    ----------
    values_ : ndarray of shape (n_bins,)
        Projected bin values (NaN for an empty bin under ``empty_bins='identity'``).
    raw_means_ : ndarray of shape (n_bins,)
        Unprojected bin means (NaN for empty bins).
    counts_ : ndarray of shape (n_bins,)
        Fitting items in each bin.
    binary_ : bool
        Whether the fit was on 1-D binary scores.
    n_classes_ : int
        2 for binary scores, else K.
    empty_bins_ : str
        The empty-bin rule of the fit.
    objective_ : float
        Mass-weighted distance moved by the projection, ``sum_h (n_h / n) |raw - value|``.
    status_ : str
        ``'ok'`` (empty bins among enough fitting items are part of the method, not a
        failure); ``'too_few_items'`` (with an :class:`~noisycal.IdentifiabilityWarning`)
        when there are fewer fitting items than bins, or a single item: then at least
        ``n_bins - n`` bins are empty whatever the scores, and the histogram is mostly
        its empty-bin rule; or ``'target_not_ok'`` when the target is a Target built
        from a fit whose status is not 'ok' (with a warning).
    message_ : str
        Why the status is not 'ok' (``''`` otherwise).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> z = np.array([0.05, 0.55, 0.58, 0.95])
    >>> h = nc.calibrators.HistogramBinning(n_bins=2).fit(probs=z, target=np.array([0, 1, 0, 1]))
    >>> h.values_.tolist(), h.predict_proba(probs=np.array([0.2, 0.9])).tolist()
    ([0.0, 0.6666666666666666], [0.0, 0.6666666666666666])

    Top-label on three classes, fitted to a soft target (HB-Soft):

    >>> p = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]])
    >>> pi = np.array([[0.5, 0.5, 0.0], [0.1, 0.6, 0.3], [0.0, 0.3, 0.7], [0.2, 0.4, 0.4]])
    >>> hs = nc.calibrators.HistogramBinning(n_bins=2).fit(probs=p, target=pi)
    >>> hs.values_.tolist()
    [0.4, 0.6]
    >>> hs.predict_proba(probs=p[:1]).round(3).tolist()
    [[0.6, 0.3, 0.1]]
    """

    _map_name = "HistogramBinning"

    def __init__(self, *, n_bins: int = 10, empty_bins: str = "mean") -> None:
        self.n_bins = n_bins
        self.empty_bins = empty_bins

    def __sklearn_tags__(self) -> object:
        """scikit-learn's estimator tags: keyword inputs of shape (n,) or (n, K)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> HistogramBinning:
        """Fit the bin values.

        Parameters
        ----------
        probs : array-like of shape (n,) or (n, n_classes), optional
            Positive-class scores in [0, 1], or a probability matrix (rows summing to 1).
        logits : array-like of shape (n, n_classes), optional
            Multi-class logits (binned as ``softmax(logits)``). Binary (n,) logits are
            refused: the binary bins are on the probability scale. Give exactly one of
            ``probs`` and ``logits``.
        target : Target, array-like of shape (n, n_classes) or (n,)
            Any target: labels, a matrix or a Target (hard, soft, voted, corrected,
            posterior). Binary: a Target or (n, 2) matrix (column 1 is used), 0/1
            labels, or a 1-D float positive-class target (any finite real values).

        Returns
        -------
        self : HistogramBinning

        Raises
        ------
        ValueError
            If the scores are missing, both given, empty, not finite, of the wrong shape,
            outside [0, 1] or (matrix) not summing to 1, binary logits are given,
            ``target`` does not match them (length, or the items of a pandas index),
            ``n_bins`` is not an integer in [1, 10 n], or ``empty_bins`` is unknown.
        """
        J = check_int(self.n_bins, "n_bins", minimum=1)
        empty = check_choice(self.empty_bins, "empty_bins", EMPTY_BINS)
        if logits is not None and probs is None and np.ndim(logits) == 1:
            raise ValueError("logits= is not accepted for binary (n,) scores: "
                             "HistogramBinning bins probabilities; pass probs= (scores in "
                             "[0, 1])")
        if probs is None and logits is None:
            raise ValueError("give exactly one of probs= or logits= (the scores to bin)")
        if logits is None and np.ndim(probs) == 1:
            z = check_unit_scores(probs, "probs")
            check_n_bins(J, z.size)
            y = positive_target(target, z.shape[0])
            check_alignment(probs, "probs", target, "target")
            self.binary_, self.n_classes_ = True, 2
            self._fit_target = target_record(target, y)  # what bound() checks its target by
        else:
            x, P, top = top_label_inputs(probs, logits)
            T = fit_target(target, ScoreInput(x.S, False, x.given, x.raw))
            rows = np.arange(P.shape[0])
            z, y = P[rows, top], T[rows, top]
            check_n_bins(J, z.size)
            self.binary_, self.n_classes_ = False, int(P.shape[1])
            self._fit_target = None
        self.values_, self.raw_means_, self.counts_ = histogram_values(z, y, J, empty)
        self.empty_bins_ = empty
        moved = np.where(self.counts_ > 0, np.abs(np.nan_to_num(self.raw_means_)
                                                  - np.nan_to_num(self.values_)), 0.0)
        self.objective_ = float(np.sum(self.counts_ / z.size * moved))
        if not inherit_target_status(self, {"target": target}):
            self._set_status(*_item_status(z.size, J, self.counts_), IdentifiabilityWarning)
        return self

    def predict_confidence(self, *, probs: ArrayLike | None = None,
                           logits: ArrayLike | None = None) -> np.ndarray:
        """The calibrated top-class confidence ``h(p_c)`` (binary: ``h`` of the score).

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes), optional
            Exactly one, of the shape the map was fitted on (binary: ``probs=`` only).

        Returns
        -------
        ndarray of shape (n,)
        """
        return self._predict(probs, logits)[0]

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Calibrated probabilities.

        Parameters
        ----------
        probs : array-like of shape (n,) or (n, n_classes), optional
            Positive-class scores in [0, 1], or a probability matrix (rows sum to 1).
        logits : array-like of shape (n, n_classes), optional
            Multi-class logits (a top-label map acts on ``softmax(logits)``, so either
            input works). Give exactly one, of the shape the map was fitted on.

        Returns
        -------
        ndarray of shape (n,) or (n, n_classes)
            Positive-class probabilities (binary), or the rebuilt probability vectors
            (rows sum to 1, the predicted class keeps the calibrated confidence).

        Raises
        ------
        NotFittedError, ValueError
            Before ``fit``; on missing, doubled, non-finite or mis-shaped scores, and on
            binary logits.
        """
        conf, P, top = self._predict(probs, logits)
        return conf if P is None else top_label_rebuild(P, top, conf)

    def _predict(self, probs: ArrayLike | None, logits: ArrayLike | None
                 ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        self._check_fitted()
        if self.binary_:
            if probs is not None and np.ndim(probs) == 2:
                raise ValueError(f"probs must have the shape the map was fitted on, (n,) "
                                 f"binary scores; got shape {np.shape(probs)}")
            return _apply(self.values_, self._binary_scores(probs, logits)), None, None
        x, P, top = top_label_inputs(probs, logits)
        if x.binary or P.shape[1] != self.n_classes_:
            raise ValueError(f"{x.given} must have the shape the map was fitted on, "
                             f"(n, {self.n_classes_}) scores; got shape {np.shape(x.raw)}")
        return _apply(self.values_, P[np.arange(P.shape[0]), top]), P, top

    def bound(self, target: object, *, level: float = 0.9, channel_term: float = 0.0) -> float:
        """Proposition 2: ECE(g o f) <= d_ch + (B + 1) sqrt(2 (J log 2 + log(4/eta)) / n_rec).

        B is B-hat of the fitted target (:func:`noisycal.metrics.nc.bound.target_range`;
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
        if not self.binary_ or self.empty_bins_ != "mean":
            raise ValueError("bound() holds for the binary projected histogram with "
                             "empty_bins='mean' (Proposition 2); this histogram was fitted "
                             + ("to (n, K) scores" if not self.binary_ else
                                f"with empty_bins={self.empty_bins_!r}"))
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
