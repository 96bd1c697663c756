"""Bad-input catalogue: IsotonicCalibration, LWCal, GatedLWCal, TrimCal and the weighted
isotonic regression. Collected by tests/test_bad_inputs.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.calibrators import NotFittedError
from noisycal.calibrators.isotonic import isotonic_regression

C = nc.calibrators
_RNG = np.random.default_rng(11)
Z = _RNG.uniform(0.02, 0.98, 40)
Y = (_RNG.random(40) < Z).astype(np.int64)
PM = _RNG.dirichlet(np.ones(3), size=40)
POST = np.column_stack([1 - Z, Z])

R, S, W = "raises", "status", "warns"
V = ValueError


def _status(cal):
    return SimpleNamespace(status=cal.status_, message=cal.message_)


def _iso(**params):
    return lambda **fit: C.IsotonicCalibration(**params).fit(**fit)


def _lw(**params):
    return lambda **fit: C.LWCal(**params).fit(**fit)


def _gated(**params):
    return lambda **fit: C.GatedLWCal(**params).fit(**fit)


def _trim(**params):
    return lambda **fit: C.TrimCal(**params).fit(**fit)


def _fitted(cls=C.IsotonicCalibration, **fit):
    return cls().fit(**(fit or {"probs": Z, "target": Y}))


_BAD_POST = nc.targets.Target(POST, "posterior", status="not_identified",
                              message="channels not identified")
_BAD_VOTE = nc.targets.Target(np.eye(2)[Y], "posterior", status="not_converged",
                              message="EM stopped early")

CASES = [
    # ------------------------------------------------------------ isotonic_regression
    ("iso-reg-x-nan", lambda: isotonic_regression([0.1, np.nan], [0, 1]), R, V, r"x .*NaN"),
    ("iso-reg-y-inf", lambda: isotonic_regression([0.1, 0.2], [0, np.inf]), R, V,
     r"y .*infinite"),
    ("iso-reg-length", lambda: isotonic_regression([0.1, 0.2], [0, 1, 1]), R, V,
     r"y has 3 values but x has 2"),
    ("iso-reg-x-2d", lambda: isotonic_regression(np.zeros((3, 2)), [0, 1, 1]), R, V,
     r"x must be 1-D"),
    ("iso-reg-empty", lambda: isotonic_regression([], []), R, V, r"x must contain"),
    ("iso-reg-weight-zero", lambda: isotonic_regression([0.1, 0.2], [0, 1], [1.0, 0.0]),
     R, V, r"sample_weight must be positive"),
    ("iso-reg-weight-length", lambda: isotonic_regression([0.1, 0.2], [0, 1], [1.0]),
     R, V, r"sample_weight has 1 values"),
    # ------------------------------------------------------------ IsotonicCalibration
    ("iso-interpolation-unknown", lambda: _iso(interpolation="cubic")(probs=Z, target=Y),
     R, V, r"interpolation must be one of"),
    ("iso-probs-and-logits", lambda: _iso()(probs=Z, logits=Z, target=Y), R, V,
     r"probs= or logits="),
    ("iso-no-scores", lambda: _iso()(target=Y), R, V, r"probs= or logits="),
    ("iso-probs-nan", lambda: _iso()(probs=np.where(Z > 0.9, np.nan, Z), target=Y), R, V,
     r"probs.*NaN"),
    ("iso-probs-percent", lambda: _iso()(probs=100 * Z, target=Y), R, V,
     r"probs must lie in \[0, 1\]"),
    ("iso-probs-3d", lambda: _iso()(probs=np.full((4, 2, 2), 0.5), target=Y[:4]), R, V,
     r"probs must be 1-D"),
    ("iso-probs-rows-unnormalised", lambda: _iso()(probs=PM * 0.9, target=Y), R, V,
     r"rows of probs must sum to 1"),
    ("iso-target-missing", lambda: _iso()(probs=Z), R, V, r"target is required"),
    ("iso-target-length", lambda: _iso()(probs=Z, target=Y[:-1]), R, V, r"target has 39"),
    ("iso-target-label-2", lambda: _iso()(probs=Z, target=Y * 2), R, V,
     r"target must lie in 0\.\.1"),
    ("iso-mc-target-shape", lambda: _iso()(probs=PM, target=np.eye(2)[Y]), R, V,
     r"target must have shape \(40, 3\)"),
    ("iso-mc-target-label-3", lambda: _iso()(probs=PM, target=np.full(40, 3)), R, V,
     r"target must lie in 0\.\.2"),
    ("iso-mc-target-rows", lambda: _iso()(probs=PM, target=PM * 0.5), R, V,
     r"target rows must sum to 1"),
    ("iso-weight-negative", lambda: _iso()(probs=Z, target=Y, sample_weight=-np.ones(40)),
     R, V, r"sample_weight must be positive"),
    ("iso-weight-nan", lambda: _iso()(probs=Z, target=Y, sample_weight=np.full(40, np.nan)),
     R, V, r"sample_weight .*NaN"),
    ("iso-misaligned", lambda: _iso()(probs=pd.Series(Z[:3], index=["a", "b", "c"]),
                                      target=pd.Series(Y[:3], index=["c", "b", "a"])),
     R, V, r"target is not aligned with probs"),
    ("iso-predict-unfitted", lambda: C.IsotonicCalibration().predict_proba(probs=Z),
     R, NotFittedError, r"not fitted"),
    ("iso-predict-other-kind", lambda: _fitted().predict_proba(logits=Z), R, V,
     r"fitted on probs="),
    ("iso-predict-other-shape", lambda: _fitted().predict_proba(probs=PM), R, V,
     r"probs must have the shape the map was fitted on"),
    ("iso-predict-mc-other-k", lambda: _fitted(probs=PM, target=Y % 3).predict_proba(
        probs=np.full((2, 4), 0.25)), R, V, r"\(n, 3\) scores"),
    ("iso-predict-nan", lambda: _fitted().predict_proba(probs=np.array([0.2, np.nan])),
     R, V, r"probs.*NaN"),
    ("iso-constant-status", lambda: _status(_iso()(probs=Z, target=np.zeros(40, int))),
     S, None, r"constant.*one class"),
    ("iso-constant-warns", lambda: _iso()(probs=np.full(5, 0.3), target=Y[:5]),
     W, nc.IdentifiabilityWarning, r"every fitting score is the same"),
    # ------------------------------------------------------------ LWCal
    ("lw-weights-unknown", lambda: _lw(weights="huber")(probs=Z, target=Y), R, V,
     r"weights must be one of"),
    ("lw-floor-zero", lambda: _lw(floor=0.0)(probs=Z, target=Y), R, V, r"floor"),
    ("lw-floor-percent", lambda: _lw(floor=5)(probs=Z, target=Y), R, V,
     r"floor must satisfy"),
    ("lw-mad-scale-zero", lambda: _lw(mad_scale=0)(probs=Z, target=Y), R, V, r"mad_scale"),
    ("lw-eps-negative", lambda: _lw(eps=-1e-12)(probs=Z, target=Y), R, V, r"eps"),
    ("lw-eps-string", lambda: _lw(eps="1e-12")(probs=Z, target=Y), R, V, r"eps"),
    ("lw-loss-clip-half", lambda: _lw(loss_clip=0.5)(probs=Z, target=Y), R, V,
     r"loss_clip"),
    ("lw-interpolation-unknown", lambda: _lw(interpolation="nearest")(probs=Z, target=Y),
     R, V, r"interpolation"),
    ("lw-logits", lambda: _lw()(logits=Z, target=Y), R, V, r"logits= is not accepted"),
    ("lw-probs-missing", lambda: _lw()(target=Y), R, V, r"probs is required"),
    ("lw-probs-above-one", lambda: _lw()(probs=Z + 0.5, target=Y), R, V,
     r"probs must lie in \[0, 1\]"),
    ("lw-probs-matrix", lambda: _lw()(probs=POST, target=Y), R, V, r"probs must be 1-D"),
    ("lw-soft-target", lambda: _lw()(probs=Z, target=np.where(Y == 1, 0.8, 0.3)), R, V,
     r"target must be one 0/1 label per item"),
    ("lw-corrected-target", lambda: _lw()(probs=Z, target=nc.targets.from_matrix(
        np.c_[1 - np.where(Y == 1, 1.25, -0.25), np.where(Y == 1, 1.25, -0.25)],
        kind="corrected")), R, V, r"target must be one 0/1 label"),
    ("lw-plain-target-outside", lambda: _lw()(probs=Z, target=np.where(Y == 1, 1.25, -0.25)),
     R, V, r"target must lie in \[0, 1\]"),
    ("lw-target-length", lambda: _lw()(probs=Z, target=Y[:5]), R, V, r"target has 5"),
    ("lw-posterior-missing", lambda: _lw(weights="posterior")(probs=Z, target=Y), R, V,
     r"posterior is required"),
    ("lw-posterior-unused", lambda: _lw()(probs=Z, target=Y, posterior=POST), R, V,
     r"posterior is used only with weights='posterior'"),
    ("lw-posterior-outside", lambda: _lw(weights="posterior")(probs=Z, target=Y,
                                                               posterior=Z + 0.5),
     R, V, r"posterior must lie in \[0, 1\]"),
    ("lw-posterior-corrected-rows", lambda: _lw(weights="posterior")(
        probs=Z, target=Y, posterior=np.column_stack([-0.2 + 0 * Z, 1.2 + 0 * Z])),
     R, V, r"posterior rows must be probabilities"),
    ("lw-posterior-length", lambda: _lw(weights="posterior")(probs=Z, target=Y,
                                                              posterior=Z[:3]),
     R, V, r"posterior has 3 values"),
    ("lw-posterior-nan", lambda: _lw(weights="posterior")(
        probs=Z, target=Y, posterior=np.where(Z > 0.5, np.nan, Z)), R, V, r"posterior.*NaN"),
    ("lw-posterior-status", lambda: _status(_lw(weights="posterior")(
        probs=Z, target=Y, posterior=_BAD_POST)), S, None, r"posterior_not_ok.*not_identified"),
    ("lw-one-class-status", lambda: _status(_lw()(probs=Z, target=np.ones(40, int))),
     S, None, r"constant.*one class"),
    ("lw-one-class-warns", lambda: _lw()(probs=Z, target=np.zeros(40, int)),
     W, nc.IdentifiabilityWarning, r"LWCal: the fitted map is constant"),
    ("lw-predict-unfitted", lambda: C.LWCal().predict_proba(probs=Z), R, NotFittedError,
     r"not fitted"),
    ("lw-predict-logits", lambda: _fitted(C.LWCal).predict_proba(logits=Z), R, V,
     r"logits= is not accepted"),
    ("lw-predict-outside", lambda: _fitted(C.LWCal).predict_proba(probs=Z - 0.5), R, V,
     r"probs must lie in \[0, 1\]"),
    # ------------------------------------------------------------ GatedLWCal
    ("gated-width-zero", lambda: _gated(gate_width=0.0)(probs=Z, target=Y), R, V,
     r"gate_width"),
    ("gated-center-nan", lambda: _gated(gate_center=float("nan"))(probs=Z, target=Y), R, V,
     r"gate_center must be finite"),
    ("gated-center-string", lambda: _gated(gate_center="0.29")(probs=Z, target=Y), R, V,
     r"gate_center must be a real number"),
    ("gated-predict-unfitted", lambda: C.GatedLWCal().predict_proba(probs=Z), R,
     NotFittedError, r"not fitted"),
    # ------------------------------------------------------------ TrimCal
    ("trim-retain-zero", lambda: _trim(retain=0.0)(probs=Z, target=Y), R, V, r"retain"),
    ("trim-retain-percent", lambda: _trim(retain=90)(probs=Z, target=Y), R, V,
     r"retain must satisfy"),
    ("trim-rule-unknown", lambda: _trim(rule="median")(probs=Z, target=Y), R, V,
     r"rule must be one of"),
    ("trim-calibrator-not-ours", lambda: _trim(calibrator=object())(probs=Z, target=Y),
     R, V, r"calibrator must be a noisycal Calibrator"),
    ("trim-soft-target", lambda: _trim()(probs=Z, target=Z), R, V,
     r"target must be one 0/1 label per item for TrimCal"),
    ("trim-logits", lambda: _trim()(logits=Z, target=Y), R, V, r"logits= is not accepted"),
    ("trim-predict-unfitted", lambda: C.TrimCal().predict_proba(probs=Z), R,
     NotFittedError, r"not fitted"),
    ("iso-target-status", lambda: _status(_iso()(probs=Z, target=_BAD_POST)), S, None,
     r"target_not_ok.*not_identified"),
    ("lw-target-status", lambda: _status(_lw()(probs=Z, target=_BAD_VOTE)), S, None,
     r"target_not_ok.*not_converged"),
    ("trim-target-status", lambda: _status(_trim()(probs=Z, target=_BAD_VOTE)), S, None,
     r"target_not_ok.*EM stopped early"),
    ("trim-target-status-warns", lambda: _trim()(probs=Z, target=_BAD_VOTE),
     W, nc.IdentifiabilityWarning, r"TrimCal: the target comes from an annotator fit"),
    ("trim-one-class-status", lambda: _status(_trim()(probs=Z, target=np.ones(40, int))),
     S, None, r"constant"),
]
