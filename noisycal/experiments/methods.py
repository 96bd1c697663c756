"""Base learners and the calibration methods of the LWCal protocol.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"
compares, on the scores of one frozen base learner per cell (Table III):

- ``raw``: the base learner's positive-class score, unchanged;
- ``platt``: Platt scaling, :class:`noisycal.calibrators.PlattScaling`. The paper does
  not say whether the sigmoid takes the probability or its log-odds; by default
  (``platt_input='probability'``) it takes the probability itself,
  ``sigmoid(u p + v)``, as scikit-learn's sigmoid calibration of a score does (without
  Platt's smoothed targets), with the box widened to ``[-100, 100]``; ``'logit'`` uses
  the log-odds;
- ``isotonic``: :class:`noisycal.calibrators.IsotonicCalibration`;
- ``beta``: beta calibration ("abm"), :class:`noisycal.calibrators.BetaCalibration` with
  ``eps=1e-6`` (scores clipped to ``[1e-6, 1 - 1e-6]`` before the logarithms, as the
  published tables were computed; the class's default floors only exact 0 and 1), when it
  exists in :mod:`noisycal.calibrators` (left out otherwise);
- ``trimcal_iso`` / ``trimcal_beta``: :class:`noisycal.calibrators.TrimCal` keeping the
  lowest-loss share ``trim_retain`` (default 0.9; the paper does not state it) and
  fitting isotonic or beta calibration on it;
- ``lwcal`` and ``gated_lwcal``: :class:`noisycal.calibrators.LWCal` and
  :class:`noisycal.calibrators.GatedLWCal` with the paper's constants;
- ``oracle``: isotonic calibration fitted to the *clean* calibration labels (an audit of
  the headroom, not a deployable method; the only method that sees clean labels);
- optionally the gate-sensitivity variants of Table VII,
  ``gated_c{center}_w{width}``.

Base learners (Section IV): ``rf`` (160 trees, min leaf 2, square-root feature
sampling; other settings at scikit-learn's defaults), ``et`` (extra trees with the same
settings; ours) and ``gb`` (gradient boosting at scikit-learn's defaults; ours).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._util.validation import check_choice, check_int, check_real
from ..calibrators import (
    BetaCalibration,
    Calibrator,
    GatedLWCal,
    IsotonicCalibration,
    LWCal,
    PlattScaling,
    TrimCal,
)
from ..exceptions import NoisycalWarning

__all__ = ["LEARNERS", "GATE_CENTERS", "GATE_WIDTHS", "MethodSpec", "make_learner",
           "method_specs", "gate_method_name", "MAIN_METHODS",
           "METHOD_TITLES", "fit_method"]

#: Base learners.
LEARNERS = ("rf", "et", "gb")
#: The floor of beta calibration's scores in the protocol (module docstring).
BETA_FLOOR = 1e-6
#: The gate-sensitivity grid of Table VII.
GATE_CENTERS = (0.25, 0.29, 0.33, 0.35)
GATE_WIDTHS = (0.08, 0.12, 0.16)
#: Platt inputs.
PLATT_INPUTS = ("probability", "logit")

#: The methods of Table III (plus the oracle), in the paper's order.
MAIN_METHODS = ("gated_lwcal", "lwcal", "isotonic", "raw", "trimcal_beta", "platt", "beta",
                "trimcal_iso", "oracle")

METHOD_TITLES = {"raw": "Raw", "platt": "Platt", "isotonic": "Isotonic", "beta": "Beta",
                 "trimcal_iso": "TrimCal-Iso", "trimcal_beta": "TrimCal-Beta",
                 "lwcal": "LWCal", "gated_lwcal": "Gated-LWCal",
                 "oracle": "Clean-label isotonic (oracle)"}


def make_learner(name: str, seed: int) -> object:
    """An unfitted scikit-learn base learner.

    Parameters
    ----------
    name : {'rf', 'et', 'gb'}
    seed : int
        ``random_state``.

    Returns
    -------
    sklearn estimator with ``predict_proba``
    """
    check_choice(name, "name", LEARNERS)
    seed = check_int(seed, "seed", minimum=0)
    if name == "rf":
        from sklearn.ensemble import RandomForestClassifier
        return RandomForestClassifier(n_estimators=160, min_samples_leaf=2,
                                      max_features="sqrt", random_state=seed, n_jobs=1)
    if name == "et":
        from sklearn.ensemble import ExtraTreesClassifier
        return ExtraTreesClassifier(n_estimators=160, min_samples_leaf=2,
                                    max_features="sqrt", random_state=seed, n_jobs=1)
    from sklearn.ensemble import GradientBoostingClassifier
    return GradientBoostingClassifier(random_state=seed)


def gate_method_name(center: float, width: float) -> str:
    """Name of a gate-sensitivity variant, e.g. ``'gated_c0.29_w0.12'``.

    Parameters
    ----------
    center, width : float
        The gate's centre and width (:class:`noisycal.calibrators.GatedLWCal`).

    Returns
    -------
    str
    """
    return f"gated_c{center:.2f}_w{width:.2f}"


@dataclass(frozen=True)
class MethodSpec:
    """One method of the protocol.

    Parameters
    ----------
    name : str
    make : callable or None
        Returns an unfitted calibrator; None for ``raw``.
    clean : bool
        Fitted to the clean calibration labels (the oracle).
    input : {'probs', 'logits'}
        Which keyword the calibrator receives the raw score under (Platt on the
        probability receives it as its linear score, ``logits=p``).
    """

    name: str
    make: Callable[[], Calibrator] | None
    clean: bool = False
    input: str = "probs"


def method_specs(*, trim_retain: float = 0.9, platt_input: str = "probability",
                 gate_grid: bool = False, include_beta: bool = True) -> dict[str, MethodSpec]:
    """The methods compared in each cell.

    Parameters
    ----------
    trim_retain : float, default=0.9
        TrimCal's retained share (the paper does not state the value behind Table III).
    platt_input : {'probability', 'logit'}, default='probability'
        See the module docstring.
    gate_grid : bool, default=False
        Add the twelve gate-sensitivity variants of Table VII.
    include_beta : bool, default=True
        Add ``beta`` and ``trimcal_beta`` (:class:`~noisycal.calibrators.BetaCalibration`).

    Returns
    -------
    dict
        Name to :class:`MethodSpec`, in a fixed order.
    """
    retain = check_real(trim_retain, "trim_retain", minimum=0.0, maximum=1.0, strict=False)
    check_choice(platt_input, "platt_input", PLATT_INPUTS)
    specs = [MethodSpec("raw", None)]
    if platt_input == "probability":
        specs.append(MethodSpec("platt", lambda: PlattScaling(bounds=(-100.0, 100.0)),
                                input="logits"))
    else:
        specs.append(MethodSpec("platt", PlattScaling))
    specs.append(MethodSpec("isotonic", IsotonicCalibration))
    if include_beta:
        specs.append(MethodSpec("beta", lambda: BetaCalibration(eps=BETA_FLOOR)))
    specs.append(MethodSpec("trimcal_iso", lambda: TrimCal(retain=retain)))
    if include_beta:
        specs.append(MethodSpec("trimcal_beta", lambda: TrimCal(
            retain=retain, calibrator=BetaCalibration(eps=BETA_FLOOR))))
    specs += [MethodSpec("lwcal", LWCal), MethodSpec("gated_lwcal", GatedLWCal),
              MethodSpec("oracle", IsotonicCalibration, clean=True)]
    if gate_grid:
        for c in GATE_CENTERS:
            for w in GATE_WIDTHS:
                specs.append(MethodSpec(gate_method_name(c, w),
                                        lambda c=c, w=w: GatedLWCal(gate_center=c,
                                                                    gate_width=w)))
    return {s.name: s for s in specs}


def fit_method(spec: MethodSpec, p_cal: np.ndarray, y_cal: np.ndarray, y_cal_clean: np.ndarray,
               p_test: np.ndarray) -> tuple[np.ndarray, str, str]:
    """Fit one method on the calibration scores and map the test scores.

    Only the oracle sees ``y_cal_clean``; every other method gets the noisy labels.

    Parameters
    ----------
    spec : MethodSpec
    p_cal : ndarray of shape (n_cal,)
        Calibration scores.
    y_cal : ndarray of shape (n_cal,)
        Noisy calibration labels.
    y_cal_clean : ndarray of shape (n_cal,)
        Clean calibration labels (oracle only).
    p_test : ndarray of shape (n_test,)
        Test scores.

    Returns
    -------
    p_hat : ndarray of shape (n_test,)
    status, message : str
        The calibrator's ``status_`` and ``message_`` (its warnings are recorded here,
        not re-emitted).
    """
    if spec.make is None:
        return np.asarray(p_test, dtype=np.float64), "ok", ""
    y = y_cal_clean if spec.clean else y_cal
    cal = spec.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoisycalWarning)
        cal.fit(**{spec.input: p_cal}, target=y)
        p_hat = cal.predict_proba(**{spec.input: p_test})
    return np.asarray(p_hat, dtype=np.float64), str(cal.status_), str(cal.message_)
