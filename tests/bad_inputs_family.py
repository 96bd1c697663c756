"""Bad-input catalogue: BetaCalibration (and the other maps of the multi-class family added
with it). Collected by tests/test_bad_inputs.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import noisycal as nc
from noisycal.calibrators import NotFittedError

C = nc.calibrators
_RNG = np.random.default_rng(5)
Z = _RNG.uniform(0.02, 0.98, 60)
Y = (_RNG.random(60) < Z).astype(np.int64)

ZM = _RNG.normal(size=(60, 3)) * 2
PM = np.exp(ZM) / np.exp(ZM).sum(1, keepdims=True)
YM = PM.argmax(1)

R, S, W = "raises", "status", "warns"
V = ValueError


def _status(cal):
    return SimpleNamespace(status=cal.status_, message=cal.message_)


def _hb(**params):
    return lambda **fit: C.HistogramBinning(**params).fit(**fit)


def _ats(**params):
    return lambda **fit: C.AdaptiveTemperatureScaling(**params).fit(**fit)


def _beta(**params):
    return lambda **fit: C.BetaCalibration(**params).fit(**fit)


CASES = [
    # ------------------------------------------------------------ BetaCalibration
    ("beta-parameters-unknown", lambda: _beta(parameters="abc")(probs=Z, target=Y), R, V,
     r"parameters must be one of"),
    ("beta-parameters-upper", lambda: _beta(parameters="ABM")(probs=Z, target=Y), R, V,
     r"parameters"),
    ("beta-monotone-string", lambda: _beta(monotone="yes")(probs=Z, target=Y), R, V,
     r"monotone must be True or False"),
    ("beta-eps-zero", lambda: _beta(eps=0.0)(probs=Z, target=Y), R, V, r"eps"),
    ("beta-bounds-reversed", lambda: _beta(bounds=(5.0, -5.0))(probs=Z, target=Y), R, V,
     r"bounds"),
    ("beta-loss-unknown", lambda: _beta(loss="l1")(probs=Z, target=Y), R, V, r"loss"),
    ("beta-max-iter-zero", lambda: _beta(max_iter=0)(probs=Z, target=Y), R, V, r"max_iter"),
    ("beta-probs-and-logits", lambda: _beta()(probs=Z, logits=Z, target=Y), R, V,
     r"probs= or logits="),
    ("beta-no-input", lambda: _beta()(target=Y), R, V, r"probs= or logits="),
    ("beta-probs-percent", lambda: _beta()(probs=100 * Z, target=Y), R, V,
     r"probs must lie in \[0, 1\]"),
    ("beta-probs-nan", lambda: _beta()(probs=np.where(Z > 0.9, np.nan, Z), target=Y), R, V,
     r"probs.*NaN"),
    ("beta-logits-inf", lambda: _beta()(logits=np.array([0.1, -np.inf, 2.0]),
                                        target=np.array([0, 1, 1])), R, V,
     r"logits.*infinite"),
    ("beta-probs-matrix", lambda: _beta()(probs=np.column_stack([1 - Z, Z]), target=Y),
     R, V, r"probs must be 1-D .*beta calibration is binary"),
    ("beta-target-length", lambda: _beta()(probs=Z, target=Y[:-2]), R, V, r"target has 58"),
    ("beta-target-label-3", lambda: _beta()(probs=Z, target=np.where(Y == 1, 3, 0)), R, V,
     r"target must lie in 0\.\.1"),
    ("beta-target-nan", lambda: _beta()(probs=Z[:2], target=np.array([0.2, np.nan])), R, V,
     r"target.*NaN"),
    ("beta-predict-unfitted", lambda: C.BetaCalibration().predict_proba(probs=Z), R,
     NotFittedError, r"not fitted"),
    ("beta-predict-matrix", lambda: _beta()(probs=Z, target=Y).predict_proba(
        probs=np.column_stack([1 - Z, Z])), R, V, r"probs must have the shape"),
    ("beta-two-scores-abm", lambda: _status(_beta()(probs=np.repeat([0.2, 0.7], 10),
                                                    target=np.tile([0, 1], 10))),
     S, None, r"not_identified.*2 distinct"),
    ("beta-decreasing-target", lambda: _status(_beta()(probs=Z, target=(Z < 0.5).astype(int))),
     S, None, r"degenerate.*constant"),
    ("beta-separable", lambda: _status(_beta(parameters="am")(
        probs=Z, target=(Z > 0.5).astype(int))), S, None, r"separation.*separate the target"),
    # ------------------------------------------------ HistogramBinning, top-label
    ("hb-empty-bins-unknown", lambda: _hb(empty_bins="zero")(probs=PM, target=YM), R, V,
     r"empty_bins must be one of"),
    ("hb-binary-logits", lambda: _hb()(logits=ZM[:, 0], target=Y), R, V,
     r"logits= is not accepted for binary"),
    ("hb-no-scores", lambda: _hb()(target=YM), R, V, r"probs= or logits="),
    ("hb-probs-and-logits", lambda: _hb()(probs=PM, logits=ZM, target=YM), R, V,
     r"probs= or logits="),
    ("hb-matrix-rows-not-normalised", lambda: _hb()(probs=PM * 0.9, target=YM), R, V,
     r"rows of probs must sum to 1"),
    ("hb-matrix-percent", lambda: _hb()(probs=100 * PM, target=YM), R, V,
     r"probs must lie in \[0, 1\]"),
    ("hb-logits-nan", lambda: _hb()(logits=np.where(ZM > 3, np.nan, ZM), target=YM), R, V,
     r"logits.*NaN"),
    ("hb-target-label-out-of-range", lambda: _hb()(probs=PM, target=YM + 1), R, V,
     r"target"),
    ("hb-target-wrong-classes", lambda: _hb()(probs=PM, target=np.eye(4)[YM % 4]), R, V,
     r"target must have shape \(60, 3\)"),
    ("hb-target-soft-not-normalised", lambda: _hb()(probs=PM, target=PM * 0.5), R, V,
     r"target rows must sum to 1"),
    ("hb-too-many-bins", lambda: _hb(n_bins=700)(probs=PM, target=YM), R, V, r"n_bins"),
    ("hb-predict-wrong-classes", lambda: _hb()(probs=PM, target=YM).predict_proba(
        probs=np.full((2, 4), 0.25)), R, V, r"probs must have the shape .*\(n, 3\)"),
    ("hb-predict-binary-on-matrix-fit", lambda: _hb()(probs=PM, target=YM).predict_proba(
        probs=Z), R, V, r"probs must have the shape"),
    ("hb-predict-matrix-on-binary-fit", lambda: _hb()(probs=Z, target=Y).predict_proba(
        probs=PM), R, V, r"probs must have the shape .*\(n,\) binary"),
    ("hb-bound-multiclass", lambda: _hb()(probs=PM, target=YM).bound(PM), R, V,
     r"bound\(\) holds for the binary"),
    ("hb-target-not-ok", lambda: _status(_hb()(probs=PM, target=nc.targets.Target(
        np.eye(3)[YM], "posterior", status="not_identified", message="no channels"))),
     S, None, r"target_not_ok.*not_identified"),
    # ------------------------------------------------ AdaptiveTemperatureScaling
    ("ats-reg-negative", lambda: _ats(reg_lambda=-1e-3)(logits=ZM, target=YM), R, V,
     r"reg_lambda"),
    ("ats-reg-string", lambda: _ats(reg_lambda="1e-3")(logits=ZM, target=YM), R, V,
     r"reg_lambda"),
    ("ats-bounds-reversed", lambda: _ats(bounds=(1.0, -1.0))(logits=ZM, target=YM), R, V,
     r"bounds"),
    ("ats-max-iter-zero", lambda: _ats(max_iter=0)(logits=ZM, target=YM), R, V,
     r"max_iter"),
    ("ats-logits-inf", lambda: _ats()(logits=np.where(ZM > 3, np.inf, ZM), target=YM), R, V,
     r"logits.*infinite"),
    ("ats-probs-percent", lambda: _ats()(probs=100 * PM, target=YM), R, V,
     r"probs must lie in \[0, 1\]"),
    ("ats-target-wrong-length", lambda: _ats()(logits=ZM, target=YM[:-1]), R, V,
     r"target"),
    ("ats-predict-unfitted", lambda: C.AdaptiveTemperatureScaling().predict_proba(logits=ZM),
     R, NotFittedError, r"not fitted"),
    ("ats-temperature-wrong-kind", lambda: _ats()(logits=ZM, target=YM).predict_temperature(
        probs=PM), R, V, r"fitted on \(logits="),
    ("ats-constant-rows", lambda: _status(_ats()(logits=np.ones((20, 3)),
                                                 target=np.arange(20) % 3)),
     S, None, r"not_identified.*constant"),
    ("ats-uniform-target-start", lambda: _status(_ats()(logits=ZM,
                                                        target=np.full((60, 3), 1 / 3))),
     S, None, r"boundary.*box"),
]
