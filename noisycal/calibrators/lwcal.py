"""Loss-weighted isotonic calibration under noisy calibration labels: LWCal, Gated-LWCal, TrimCal.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"
fits a binary recalibration map on a calibration set whose labels ``y_i`` are themselves
noisy, from the frozen classifier's positive-class scores ``p_i``:

- Eq. 1, the per-point noisy-label loss ``l_i = -log(y_i p_i + (1 - y_i)(1 - p_i))``
  (:func:`noisy_label_loss`; ``p`` is clipped to ``[loss_clip, 1 - loss_clip]`` inside the
  loss only, since tree ensembles output exact 0s and 1s; the paper does not say);
- Eq. 2, bounded reliability weights from the median ``m`` and the raw (unscaled) median
  absolute deviation ``s`` of the losses,
  ``w_i = clip(sigmoid(-(l_i - m) / (1.4826 s + eps)), 0.05, 1)`` (:func:`lwcal_weights`;
  the paper's "small constant" eps is ours, 1e-12);
- Eq. 5, the weighted isotonic regression of the labels on the scores
  (:func:`noisycal.calibrators.isotonic.isotonic_regression`, ties merged, linear
  interpolation by default, clipped outside the calibration range): LWCal;
- Eq. 6, the apparent disagreement ``d = mean_i 1{(p_i >= 0.5) != (y_i = 1)}``
  (:func:`disagreement`; a score of exactly 0.5 counts as positive), and Eq. 3, the gate
  ``rho = clip((d - 0.29) / 0.12, 0, 1)`` (:func:`gate`) and the blend
  ``(1 - rho) g(p) + rho p``: Gated-LWCal;
- the hard-trimming baseline (Section V-G) is :class:`noisycal.calibrators.trimcal.TrimCal`.

Edge cases follow the formula exactly: with ``s = 0`` (more than half the losses equal)
the weights become almost hard (1 below the median loss, 0.5 at it, 0.05 above), and when
every loss is equal every weight is 0.5, so LWCal is exactly the unweighted isotonic fit.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from .._util.types import ArrayLike
from .._util.validation import PROB_ATOL, check_array, check_choice, check_real
from ..targets.target import Target, as_target_matrix
from ._base import Calibrator, check_alignment, check_unit_scores, positive_target
from ._inputs import check_float_scores
from .isotonic import (
    INTERPOLATIONS,
    isotonic_predict,
    isotonic_regression,
    set_isotonic_status,
)

__all__ = ["LWCal", "GatedLWCal", "noisy_label_loss", "lwcal_weights", "disagreement", "gate",
           "WEIGHTS"]

#: Where LWCal's weights come from.
WEIGHTS = ("loss", "posterior")


def noisy_label_loss(p: np.ndarray, y: np.ndarray, *, loss_clip: float = 1e-12) -> np.ndarray:
    """Eq. 1 of the LWCal paper: ``l_i = -log(y_i p_i + (1 - y_i)(1 - p_i))``.

    Parameters
    ----------
    p : ndarray of shape (n,)
        Positive-class scores in [0, 1], clipped to ``[loss_clip, 1 - loss_clip]`` here
        only (the loss of a score of exactly 0 or 1 against the other label is infinite).
    y : ndarray of shape (n,)
        0/1 labels.
    loss_clip : float, default=1e-12

    Returns
    -------
    ndarray of shape (n,)
    """
    pc = np.clip(p, loss_clip, 1.0 - loss_clip)
    return -np.log(y * pc + (1.0 - y) * (1.0 - pc))


def lwcal_weights(losses: np.ndarray, *, floor: float = 0.05, mad_scale: float = 1.4826,
                  eps: float = 1e-12) -> tuple[np.ndarray, float, float]:
    """Eq. 2 of the LWCal paper: ``w_i = clip(sigmoid(-(l_i - m) / (c s + eps)), floor, 1)``.

    ``m`` is the median of the losses (``numpy.median``: the mean of the two middle
    values for even n) and ``s`` the raw median absolute deviation
    ``median |l_i - m|`` (the constant ``c = 1.4826`` appears once, here). A loss equal
    to the median gets weight 0.5; the floor binds from ``l >= m + ln(19) c s``.

    Parameters
    ----------
    losses : ndarray of shape (n,)
    floor : float, default=0.05
    mad_scale : float, default=1.4826
    eps : float, default=1e-12

    Returns
    -------
    weights : ndarray of shape (n,)
    median : float
    mad : float
    """
    m = float(np.median(losses))
    s = float(np.median(np.abs(losses - m)))
    w = np.clip(expit(-(losses - m) / (mad_scale * s + eps)), floor, 1.0)
    return w, m, s


def disagreement(p: np.ndarray, y: np.ndarray) -> float:
    """Eq. 6 of the LWCal paper: the share of items whose thresholded score differs from
    the label.

    Parameters
    ----------
    p : ndarray of shape (n,)
        Positive-class scores; ``p >= 0.5`` is a positive decision (0.5 included).
    y : ndarray of shape (n,)
        0/1 labels.

    Returns
    -------
    float
    """
    return float(np.mean((p >= 0.5) != (y == 1)))


def gate(d: float, *, center: float = 0.29, width: float = 0.12) -> float:
    """Eq. 3 of the LWCal paper: ``rho = clip((d - center) / width, 0, 1)``.

    Parameters
    ----------
    d : float
        The disagreement of Eq. 6.
    center : float, default=0.29
    width : float, default=0.12

    Returns
    -------
    float
        0 for ``d <= center``, 1 for ``d >= center + width``, linear in between.
    """
    return float(np.clip((d - center) / width, 0.0, 1.0))


def _binary_labels(target: object, n: int, who: str) -> np.ndarray:
    y = positive_target(target, n)
    if not np.all((y == 0.0) | (y == 1.0)):
        bad = y[(y != 0.0) & (y != 1.0)][0]
        raise ValueError(f"target must be one 0/1 label per item for {who} (Eq. 1 is the "
                         f"loss of a single noisy label), got the value {bad:g}; for a "
                         "soft, posterior or corrected target use IsotonicCalibration, or "
                         "LWCal(weights='posterior') with posterior=")
    return y


def _posterior_probs(posterior: object, n: int) -> np.ndarray:
    """P(Y_i = 1 | annotations) from a Target, an (n, 2) matrix or an (n,) vector."""
    if isinstance(posterior, Target) or np.ndim(posterior) == 2:
        P = as_target_matrix(posterior, n, 2, "posterior")
        if np.any(np.abs(P.sum(1) - 1.0) > PROB_ATOL) or np.any(P < -PROB_ATOL):
            raise ValueError("posterior rows must be probabilities (non-negative, summing "
                             "to 1): a noise-corrected target is not a posterior")
        pi = P[:, 1]
    else:
        pi = check_array(posterior, "posterior", ndim=1)
        if pi.size != n:
            raise ValueError(f"posterior has {pi.size} values but the scores have {n} items")
    if np.any((pi < -PROB_ATOL) | (pi > 1.0 + PROB_ATOL)):
        raise ValueError(f"posterior must lie in [0, 1], got values in [{pi.min():g}, "
                         f"{pi.max():g}]")
    return np.clip(pi, 0.0, 1.0)


def _no_logits(logits: object, name: str) -> None:
    if logits is not None:
        raise ValueError(f"logits= is not accepted: {name} works on positive-class "
                         "probabilities (its loss and gate are on that scale); pass probs=")


class LWCal(Calibrator):
    """LWCal: loss-weighted isotonic calibration for noisy calibration labels.

    "LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration
    Labels", Eq. 1, 2 and 5 (module docstring): points whose noisy label the raw score
    contradicts get less weight in the isotonic fit, which pulls the map back from the
    compression toward 0.5 that label noise causes.

    ``weights='posterior'`` (ours, for items with several annotations): the weight of
    item i is the probability, under a fitted annotator model, that its label is right,
    ``a_i = P(Y_i = y_i | annotations)``, bounded below by ``floor``:
    ``w_i = clip(a_i, floor, 1)``. The model posterior replaces the classifier score as the
    judge of each label, so the weights no longer depend on the scores being fitted. The
    posterior is already a probability, so no median/MAD rescaling is applied (it would
    turn the few distinct posterior values of a small number of annotators into hard
    weights); ``losses_`` (``-log a_i``), ``median_loss_`` and ``mad_`` are still
    recorded for the audit.

    Parameters
    ----------
    weights : {'loss', 'posterior'}, default='loss'
        'loss': Eq. 2 of the paper. 'posterior': the annotator-model agreement (above);
        ``fit`` then needs ``posterior=``.
    floor : float, default=0.05
        Lower bound of the weights (Eq. 2), in (0, 1].
    mad_scale : float, default=1.4826
        The constant multiplying the raw MAD in Eq. 2 (> 0).
    eps : float, default=1e-12
        The small constant of Eq. 2 (> 0; the paper gives no value).
    loss_clip : float, default=1e-12
        Scores are clipped to ``[loss_clip, 1 - loss_clip]`` inside the loss (Eq. 1)
        only; in (0, 0.5).
    interpolation : {'linear', 'step'}, default='linear'
        Prediction between the isotonic knots (scikit-learn's linear interpolation, or
        the value of the nearest knot below).

    Attributes
    ----------
    losses_ : ndarray of shape (n,)
        Per-point noisy-label losses (posterior mode: ``-log a_i``).
    median_loss_ : float
        Median loss ``m``.
    mad_ : float
        Raw median absolute deviation ``s`` of the losses.
    weights_ : ndarray of shape (n,)
        Per-point weights, in the input order.
    disagreement_ : float
        Eq. 6 on the calibration set (logged; used by :class:`GatedLWCal`).
    n_cal_ : int
        Calibration items.
    X_thresholds_, y_thresholds_ : ndarray of shape (n_knots,)
        Knots of the weighted isotonic map.
    X_min_, X_max_ : float
        The calibration score range.
    status_ : {'ok', 'constant', 'target_not_ok', 'posterior_not_ok'}
        'constant' when the map takes one value (for example all labels in one class);
        'target_not_ok' / 'posterior_not_ok' when the target or posterior is a Target
        built from a fit whose status is not 'ok'. A warning says so.
    message_ : str

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([0.1, 0.2, 0.4, 0.6, 0.8, 0.9])
    >>> lw = nc.calibrators.LWCal().fit(probs=p, target=np.array([0, 1, 0, 1, 0, 1]))
    >>> lw.weights_.round(3).tolist()
    [0.663, 0.139, 0.5, 0.5, 0.139, 0.663]
    """

    _fitted_attr = "y_thresholds_"

    def __init__(self, *, weights: str = "loss", floor: float = 0.05,
                 mad_scale: float = 1.4826, eps: float = 1e-12, loss_clip: float = 1e-12,
                 interpolation: str = "linear") -> None:
        self.weights = weights
        self.floor = floor
        self.mad_scale = mad_scale
        self.eps = eps
        self.loss_clip = loss_clip
        self.interpolation = interpolation

    def _check_params(self) -> None:
        check_choice(self.weights, "weights", WEIGHTS)
        check_real(self.floor, "floor", minimum=0.0, maximum=1.0)
        if self.floor == 0:
            raise ValueError("floor must satisfy 0 < floor <= 1, got 0 (a zero weight "
                             "would drop items)")
        check_real(self.mad_scale, "mad_scale", minimum=0.0, strict=True)
        check_real(self.eps, "eps", minimum=0.0, strict=True)
        check_real(self.loss_clip, "loss_clip", minimum=0.0, maximum=0.5, strict=True)
        check_choice(self.interpolation, "interpolation", INTERPOLATIONS)

    def fit(self, *, probs: ArrayLike | None = None, target: object = None,
            posterior: object = None, logits: ArrayLike | None = None) -> LWCal:
        """Fit the weighted isotonic map to noisy 0/1 calibration labels.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class calibration scores in [0, 1].
        target : Target, array-like of shape (n,) or (n, 2)
            One 0/1 (noisy) label per item: labels, a one-hot matrix or a hard/voted
            Target.
        posterior : Target, array-like of shape (n, 2) or (n,), optional
            Only with ``weights='posterior'``: P(Y_i = 1 | annotations) from an
            annotator model (``nc.targets.posterior(fit)``, or its positive column).
        logits : None
            Not accepted (present to give a clear error).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On invalid parameters; scores missing, not 1-D, not finite or outside
            [0, 1]; a target that is not one 0/1 label per item or does not match the
            scores; ``posterior`` missing with ``weights='posterior'``, given otherwise,
            or not probabilities.
        """
        self._check_params()
        _no_logits(logits, type(self).__name__)
        if probs is None:
            raise ValueError("probs is required (positive-class scores in [0, 1])")
        check_float_scores(probs, "probs")
        p = check_unit_scores(probs, "probs")
        n = p.size
        y = _binary_labels(target, n, type(self).__name__)
        check_alignment(probs, "probs", target, "target")
        if self.weights == "loss":
            if posterior is not None:
                raise ValueError("posterior is used only with weights='posterior' (the "
                                 "paper's weights come from the scores' loss)")
            losses = noisy_label_loss(p, y, loss_clip=self.loss_clip)
            w, m, s = lwcal_weights(losses, floor=self.floor, mad_scale=self.mad_scale,
                                    eps=self.eps)
        else:
            if posterior is None:
                raise ValueError("posterior is required with weights='posterior' (a "
                                 "posterior Target of an annotator model, or P(Y=1) per "
                                 "item)")
            pi = _posterior_probs(posterior, n)
            check_alignment(probs, "probs", posterior, "posterior")
            losses = noisy_label_loss(pi, y, loss_clip=self.loss_clip)
            m = float(np.median(losses))
            s = float(np.median(np.abs(losses - m)))
            w = np.clip(y * pi + (1.0 - y) * (1.0 - pi), self.floor, 1.0)
        fit = isotonic_regression(p, y, w, y_min=0.0, y_max=1.0)
        self.losses_, self.median_loss_, self.mad_, self.weights_ = losses, m, s, w
        self.disagreement_ = disagreement(p, y)
        self.n_cal_ = int(n)
        self.X_thresholds_, self.y_thresholds_ = fit.x_thresholds, fit.y_thresholds
        self.X_min_, self.X_max_ = float(fit.x_unique[0]), float(fit.x_unique[-1])
        set_isotonic_status(self, fit, y, {"target": target, "posterior": posterior})
        self._fit_extra(p, y)
        return self

    def _fit_extra(self, p: np.ndarray, y: np.ndarray) -> None:
        """Hook for subclasses (the gate)."""

    def _map(self, probs: ArrayLike | None, logits: ArrayLike | None
             ) -> tuple[np.ndarray, np.ndarray]:
        self._check_fitted()
        _no_logits(logits, type(self).__name__)
        if probs is None:
            raise ValueError("probs is required (positive-class scores in [0, 1])")
        check_float_scores(probs, "probs")
        p = check_unit_scores(probs, "probs")
        return p, isotonic_predict(self.X_thresholds_, self.y_thresholds_, p,
                                   self.interpolation)

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """The calibrated positive-class probability ``g(p)``.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1]; outside the calibration range the map's
            end values are used.
        logits : None
            Not accepted.

        Returns
        -------
        ndarray of shape (n,)

        Raises
        ------
        NotFittedError, ValueError
            Before ``fit``; if ``logits`` is given or ``probs`` is missing, not 1-D, not
            finite or outside [0, 1].
        """
        return self._map(probs, logits)[1]


class GatedLWCal(LWCal):
    """Gated-LWCal: LWCal blended with the raw score when the labels look very noisy.

    "LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration
    Labels", Eq. 6 and 3: ``rho = clip((d - gate_center) / gate_width, 0, 1)`` from the
    calibration disagreement ``d`` (a score of exactly 0.5 counts as positive), fixed at
    fit time, and the output ``(1 - rho) g(p) + rho p`` in probability space. ``d <=
    0.29`` gives exactly LWCal, ``d >= 0.41`` exactly the raw score (the paper's operator
    rule, its Table XI: below 0.29 use LWCal; from 0.41 audit the labels).

    Parameters
    ----------
    gate_center : float, default=0.29
        The gate's centre (the paper's fixed value; its sensitivity grid is 0.25-0.35).
    gate_width : float, default=0.12
        The gate's width (> 0; grid 0.08-0.16).
    weights, floor, mad_scale, eps, loss_clip, interpolation
        As in :class:`LWCal`.

    Attributes
    ----------
    rho_ : float
        The gate, in [0, 1].
    losses_, median_loss_, mad_, weights_, disagreement_, n_cal_, X_thresholds_, \
y_thresholds_, X_min_, X_max_, status_, message_
        As in :class:`LWCal`.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([0.1, 0.2, 0.4, 0.6, 0.8, 0.9])
    >>> g = nc.calibrators.GatedLWCal().fit(probs=p, target=np.array([0, 1, 0, 1, 0, 1]))
    >>> g.disagreement_, g.rho_
    (0.3333333333333333, 0.36111111111111116)
    """

    def __init__(self, *, gate_center: float = 0.29, gate_width: float = 0.12,
                 weights: str = "loss", floor: float = 0.05, mad_scale: float = 1.4826,
                 eps: float = 1e-12, loss_clip: float = 1e-12,
                 interpolation: str = "linear") -> None:
        self.gate_center = gate_center
        self.gate_width = gate_width
        super().__init__(weights=weights, floor=floor, mad_scale=mad_scale, eps=eps,
                         loss_clip=loss_clip, interpolation=interpolation)

    def _check_params(self) -> None:
        super()._check_params()
        check_real(self.gate_center, "gate_center")
        check_real(self.gate_width, "gate_width", minimum=0.0, strict=True)

    def _fit_extra(self, p: np.ndarray, y: np.ndarray) -> None:
        self.rho_ = gate(self.disagreement_, center=float(self.gate_center),
                         width=float(self.gate_width))

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """The gated probability ``(1 - rho_) g(p) + rho_ p``.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Positive-class scores in [0, 1].
        logits : None
            Not accepted.

        Returns
        -------
        ndarray of shape (n,)

        Raises
        ------
        NotFittedError, ValueError
            As :meth:`LWCal.predict_proba`.
        """
        p, g = self._map(probs, logits)
        return (1.0 - self.rho_) * g + self.rho_ * p
