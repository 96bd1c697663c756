"""Bad-input catalogue: calibrators (TemperatureScaling, PlattScaling, HistogramBinning,
JointMap) and plots.reliability_diagram. Collected by tests/test_bad_inputs.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.calibrators import NotFittedError

C = nc.calibrators
_RNG = np.random.default_rng(0)
Z = _RNG.uniform(0.02, 0.98, 60)
Y = (_RNG.random(60) < Z).astype(np.int64)
A = np.where(_RNG.random((60, 3)) < 0.85, Y[:, None], 1 - Y[:, None])


def _status(cal: C.Calibrator) -> SimpleNamespace:
    """The fitted calibrator's status_/message_ as the catalogue's status/message."""
    return SimpleNamespace(status=cal.status_, message=cal.message_)


def _ts(**params):
    return lambda **fit: C.TemperatureScaling(**params).fit(**fit)


def _platt(**params):
    return lambda **fit: C.PlattScaling(**params).fit(**fit)


def _hist(**params):
    return lambda **fit: C.HistogramBinning(**params).fit(**fit)


def _joint(**params):
    return C.JointMap(n_bins=3, n_starts=2, **params).fit(probs=Z, annotations=A)


def _fitted_hist():
    return C.HistogramBinning(n_bins=5).fit(probs=Z, target=Y)


def _corrected(weights="iv", b=(0.9, 0.85, 0.8)):
    ann = nc.Annotations.from_wide(A)
    return nc.targets.corrected(ann, a=[0.1, 0.15, 0.2], b=list(b), weights=weights)


def _hist_on_corrected():
    return C.HistogramBinning(n_bins=5).fit(probs=Z, target=_corrected())


def _est(**kw):
    return nc.ece(Z, Y, n_bins=5, interval=None, **kw)


def _diagram(est=None, **kw):
    from noisycal.plots import reliability_diagram

    return reliability_diagram(_est() if est is None else est, **kw)


# multi-class scaling maps: 60 items, 3 classes
ZM = _RNG.normal(size=(60, 3)) * 2
YM = (np.exp(ZM).cumsum(1) / np.exp(ZM).sum(1, keepdims=True) > _RNG.random((60, 1))).argmax(1)
PM = np.exp(ZM) / np.exp(ZM).sum(1, keepdims=True)


def _mc(cls, **params):
    return lambda **fit: getattr(C, cls)(**params).fit(**fit)


R, S, W = "raises", "status", "warns"
V = ValueError

CASES = [
    # ------------------------------------------------------------ TemperatureScaling
    ("calib-ts-constant-half-scores", lambda: _status(_ts()(probs=np.full(10, 0.5),
                                                          target=Y[:10])),
     S, None, r"not_identified.*does not depend on T"),
    ("calib-ts-constant-zero-logits", lambda: _status(_ts()(logits=np.zeros(8),
                                                          target=Y[:8])),
     S, None, r"not_identified"),
    ("calib-ts-constant-warns", lambda: _ts()(probs=np.full(10, 0.5), target=Y[:10]),
     W, nc.IdentifiabilityWarning, r"not identified"),
    # labels separated by the scores: T -> 0, its own status (was 'boundary' before the
    # exact solve)
    ("calib-ts-separable", lambda: _status(_ts()(probs=Z, target=(Z > 0.5).astype(int))),
     S, None, r"separable.*T -> 0.*bounds"),
    ("calib-ts-eps-zero", lambda: _ts(eps=0)(probs=Z, target=Y), R, V, r"eps"),
    ("calib-ts-eps-0.7", lambda: _ts(eps=0.7)(probs=Z, target=Y), R, V, r"eps .*0\.5"),
    ("calib-ts-eps-half", lambda: _ts(eps=0.5)(probs=Z, target=Y), R, V, r"eps"),
    ("calib-ts-eps-string", lambda: _ts(eps="1e-6")(probs=Z, target=Y), R, V, r"eps"),
    ("calib-ts-eps-nan", lambda: _ts(eps=float("nan"))(probs=Z, target=Y), R, V, r"eps"),
    ("calib-ts-bounds-reversed", lambda: _ts(bounds=(2.0, 1.0))(probs=Z, target=Y),
     R, V, r"bounds"),
    ("calib-ts-bounds-nonpositive", lambda: _ts(bounds=(0.0, 5.0))(probs=Z, target=Y),
     R, V, r"bounds.*0 < low"),
    ("calib-ts-bounds-not-a-pair", lambda: _ts(bounds=5.0)(probs=Z, target=Y),
     R, V, r"bounds"),
    ("calib-ts-bounds-infinite", lambda: _ts(bounds=(0.1, np.inf))(probs=Z, target=Y),
     R, V, r"bounds"),
    ("calib-ts-probs-and-logits", lambda: _ts()(probs=Z, logits=Z, target=Y),
     R, V, r"probs= or logits="),
    ("calib-ts-no-input", lambda: _ts()(target=Y), R, V, r"probs= or logits="),
    ("calib-ts-probs-nan", lambda: _ts()(probs=np.where(Z > 0.9, np.nan, Z), target=Y),
     R, V, r"probs.*NaN"),
    ("calib-ts-logits-inf", lambda: _ts()(logits=np.array([0.1, np.inf]),
                                          target=np.array([0, 1])),
     R, V, r"logits.*infinite"),
    ("calib-ts-probs-above-one", lambda: _ts()(probs=Z + 0.5, target=Y),
     R, V, r"probs must lie in \[0, 1\]"),
    # (n, 2) probabilities are a two-class problem now; three dimensions are refused
    ("calib-ts-probs-3d", lambda: _ts()(probs=np.full((4, 2, 2), 0.5), target=Y[:4]),
     R, V, r"probs must be 1-D .* or an \(n, n_classes\) matrix"),
    ("calib-ts-probs-empty", lambda: _ts()(probs=np.zeros(0), target=np.zeros(0, int)),
     R, V, r"probs must contain at least one"),
    ("calib-ts-probs-strings", lambda: _ts()(probs=["0.2", "0.4"], target=[0, 1]),
     R, V, r"probs must be numeric"),
    ("calib-ts-target-length", lambda: _ts()(probs=Z, target=Y[:-1]),
     R, V, r"target has 59"),
    ("calib-ts-target-none", lambda: _ts()(probs=Z, target=None), R, V, r"target"),
    ("calib-ts-target-label-2", lambda: _ts()(probs=Z, target=np.where(Y == 1, 2, 0)),
     R, V, r"target must lie in 0\.\.1"),
    ("calib-ts-target-nan-matrix", lambda: _ts()(probs=Z[:2],
                                                 target=np.array([[0.5, 0.5],
                                                                  [np.nan, 1.0]])),
     R, V, r"target.*NaN"),
    ("calib-ts-target-float-nan", lambda: _ts()(probs=Z[:2], target=np.array([0.3, np.nan])),
     R, V, r"target.*NaN"),
    ("calib-ts-target-3-columns", lambda: _ts()(probs=Z[:2], target=np.eye(3)[:2]),
     R, V, r"target must have shape \(2, 2\)"),
    ("calib-ts-target-strings", lambda: _ts()(probs=Z[:2], target=np.array(["a", "b"])),
     R, V, r"target must be integer class labels"),
    ("calib-ts-misaligned-series", lambda: _ts()(
        probs=pd.Series(Z[:3], index=["a", "b", "c"]),
        target=pd.Series(Y[:3], index=["c", "b", "a"])),
     R, V, r"target is not aligned with probs"),
    ("calib-ts-predict-unfitted", lambda: C.TemperatureScaling().predict_proba(probs=Z),
     R, NotFittedError, r"not fitted.*fit"),
    ("calib-ts-predict-both", lambda: _ts()(probs=Z, target=Y).predict_proba(probs=Z,
                                                                            logits=Z),
     R, V, r"probs= or logits="),
    # predict_proba clips with the fit's eps_, so an invalid eps set after fit is caught
    # by the next fit
    ("calib-ts-refit-eps-changed", lambda: _ts()(probs=Z, target=Y).set_params(eps=0)
     .fit(probs=Z, target=Y), R, V, r"eps"),
    ("calib-ts-set-unknown-param", lambda: C.TemperatureScaling().set_params(temp=2.0),
     R, V, r"unknown parameter 'temp'"),
    ("calib-ts-loss-unknown", lambda: _ts(loss="l2")(probs=Z, target=Y), R, V, r"loss"),
    ("calib-ts-loss-none", lambda: _ts(loss=None)(probs=Z, target=Y), R, V, r"loss"),
    # the log loss is unbounded below for a target outside [0, 1]: the fit runs to the
    # box, and the status says to use the affine Brier loss
    ("calib-ts-log-loss-outside-boundary", lambda: _status(_ts(loss="log")(
        probs=Z, target=nc.targets.from_matrix(np.where(Z > 0.5, 1.5, -0.5)[:, None]
                                               * [-1, 1] + [1, 0], kind="corrected"))),
     S, None,
     r"boundary.*loss='brier'"),
    # the same values undeclared: refused as the metrics refuse them
    ("calib-ts-plain-target-outside", lambda: _ts()(probs=Z, target=np.where(Z > 0.5, 1.5,
                                                                             -0.5)),
     R, V, r"target must lie in \[0, 1\].*only a noise-corrected target"),
    # ----------------------------------------------------------------- PlattScaling
    ("calib-platt-one-item", lambda: _status(_platt()(probs=np.array([0.3]),
                                                      target=np.array([1]))),
     S, None, r"not_identified.*slope"),
    ("calib-platt-constant-scores", lambda: _status(_platt()(probs=np.full(12, 0.8),
                                                             target=Y[:12])),
     S, None, r"not_identified"),
    ("calib-platt-one-item-warns", lambda: _platt()(probs=np.array([0.3]),
                                                    target=np.array([1])),
     W, nc.IdentifiabilityWarning, r"only u s \+ v is identified"),
    ("calib-platt-all-zero-target", lambda: _status(_platt()(probs=Z,
                                                             target=np.zeros(60, int))),
     S, None, r"boundary"),
    ("calib-platt-separable-warns", lambda: _platt()(probs=Z, target=(Z > 0.5).astype(int)),
     W, nc.IdentifiabilityWarning, r"status_='separation'"),
    ("calib-platt-bool-scores", lambda: _platt()(probs=Z > 0.5, target=Y), R, V,
     r"probs must be floating probabilities or logits, got an array of dtype bool"),
    ("calib-ts-int-logits", lambda: _ts()(logits=np.round(Z * 4).astype(int), target=Y), R, V,
     r"logits must be floating probabilities or logits.*dtype int"),
    ("calib-platt-eps-0.7", lambda: _platt(eps=0.7)(probs=Z, target=Y), R, V, r"eps"),
    ("calib-platt-eps-negative", lambda: _platt(eps=-1e-3)(probs=Z, target=Y), R, V, r"eps"),
    ("calib-platt-bounds-equal", lambda: _platt(bounds=(1.0, 1.0))(probs=Z, target=Y),
     R, V, r"bounds"),
    ("calib-platt-bounds-strings", lambda: _platt(bounds=("a", "b"))(probs=Z, target=Y),
     R, V, r"bounds"),
    # (n, K) logits are multi-class Platt; constant columns do not identify w_k and b_k
    ("calib-platt-logits-2d-constant", lambda: _status(_platt()(logits=np.zeros((4, 2)),
                                                                target=Y[:4])),
     S, None, r"not_identified.*constant"),
    ("calib-platt-logits-scalar", lambda: _platt()(logits=0.3, target=Y[:1]),
     R, V, r"logits must be 1-D"),
    ("calib-platt-probs-negative", lambda: _platt()(probs=Z - 0.5, target=Y),
     R, V, r"probs must lie in \[0, 1\]"),
    ("calib-platt-predict-out-of-range", lambda: _platt()(probs=Z, target=Y)
     .predict_proba(probs=np.array([1.2])), R, V, r"probs must lie in \[0, 1\]"),
    ("calib-platt-predict-unfitted", lambda: C.PlattScaling().predict_proba(logits=Z),
     R, NotFittedError, r"not fitted"),
    ("calib-platt-loss-unknown", lambda: _platt(loss="Brier")(probs=Z, target=Y),
     R, V, r"loss"),
    # ------------------------------------------------------------- HistogramBinning
    ("calib-hist-empty", lambda: _hist()(probs=np.zeros(0), target=np.zeros(0, int)),
     R, V, r"probs must contain at least one"),
    ("calib-hist-probs-above-one", lambda: _hist()(probs=Z * 2, target=Y),
     R, V, r"probs must lie in \[0, 1\]"),
    ("calib-hist-probs-nan", lambda: _hist()(probs=np.where(Z < 0.1, np.nan, Z), target=Y),
     R, V, r"probs.*NaN"),
    ("calib-hist-probs-2d", lambda: _hist()(probs=Z[:, None], target=Y), R, V, r"probs"),
    ("calib-hist-predict-out-of-range", lambda: _fitted_hist().predict_proba(
        probs=np.array([-0.1, 0.5, 1.3])), R, V, r"probs must lie in \[0, 1\]"),
    ("calib-hist-predict-inf", lambda: _fitted_hist().predict_proba(
        probs=np.array([0.5, np.inf])), R, V, r"probs.*infinite"),
    ("calib-hist-predict-logits", lambda: _fitted_hist().predict_proba(logits=Z),
     R, V, r"logits= is not accepted"),
    ("calib-hist-predict-nothing", lambda: _fitted_hist().predict_proba(),
     R, V, r"probs is required"),
    ("calib-hist-predict-unfitted", lambda: C.HistogramBinning().predict_proba(probs=Z),
     R, NotFittedError, r"not fitted"),
    ("calib-hist-n_bins-zero", lambda: _hist(n_bins=0)(probs=Z, target=Y),
     R, V, r"n_bins must be >= 1"),
    ("calib-hist-n_bins-float", lambda: _hist(n_bins=10.0)(probs=Z, target=Y),
     R, V, r"n_bins must be an integer"),
    ("calib-hist-n_bins-bool", lambda: _hist(n_bins=True)(probs=Z, target=Y),
     R, V, r"n_bins must be an integer"),
    ("calib-hist-n_bins-far-above-n", lambda: _hist(n_bins=10**6)(probs=Z, target=Y),
     R, V, r"n_bins=1000000 is far above"),
    ("calib-hist-target-length", lambda: _hist()(probs=Z, target=Y[:10]),
     R, V, r"target has 10"),
    ("calib-hist-target-inf", lambda: _hist()(probs=Z[:2], target=np.array([np.inf, 0.2])),
     R, V, r"target.*infinite"),
    ("calib-hist-bound-level-percent", lambda: _fitted_hist().bound(None, level=90),
     R, V, r"level"),
    ("calib-hist-bound-channel-term", lambda: _fitted_hist().bound(None, channel_term=-0.1),
     R, V, r"channel_term"),
    ("calib-hist-bound-not-corrected", lambda: _fitted_hist().bound(Y),
     R, V, r"target must be the corrected Target"),
    ("calib-hist-bound-fitted-to-labels", lambda: _fitted_hist().bound(_corrected()),
     R, V, r"target must be the corrected Target the histogram was fitted to, but its "
     r"positive-class values differ"),
    ("calib-hist-bound-other-weights",
     lambda: _hist_on_corrected().bound(_corrected(weights="equal")),
     R, V, r"target must be the corrected Target the histogram was fitted to"),
    ("calib-hist-bound-other-channels",
     lambda: _hist_on_corrected().bound(_corrected(b=(0.9, 0.85, 0.7))),
     R, V, r"target must be the corrected Target the histogram was fitted to"),
    # --------------------------------------------------------------------- JointMap
    ("calib-joint-n_bins-zero", lambda: C.JointMap(n_bins=0).fit(probs=Z, annotations=A),
     R, V, r"n_bins must be >= 1"),
    ("calib-joint-n_bins-far-above-n", lambda: C.JointMap(n_bins=10**6).fit(
        probs=Z, annotations=A), R, V, r"n_bins=1000000 is far above"),
    ("calib-joint-n_starts-zero", lambda: C.JointMap(n_starts=0).fit(probs=Z, annotations=A),
     R, V, r"n_starts"),
    ("calib-joint-max_iter-float", lambda: C.JointMap(max_iter=10.5).fit(
        probs=Z, annotations=A), R, V, r"max_iter"),
    ("calib-joint-tol-string", lambda: C.JointMap(tol="1e-8").fit(probs=Z, annotations=A),
     R, V, r"tol"),
    ("calib-joint-tol-negative", lambda: C.JointMap(tol=-1.0).fit(probs=Z, annotations=A),
     R, V, r"tol"),
    ("calib-joint-seed-overflow", lambda: C.JointMap(seed=2**64).fit(probs=Z, annotations=A),
     R, V, r"seed"),
    ("calib-joint-seed-bool", lambda: C.JointMap(seed=True).fit(probs=Z, annotations=A),
     R, V, r"seed"),
    ("calib-joint-orientation", lambda: C.JointMap(orientation="up").fit(
        probs=Z, annotations=A), R, V, r"orientation"),
    ("calib-joint-anchor-out-of-range", lambda: C.JointMap(anchor=5).fit(
        probs=Z, annotations=A), R, V, r"anchor"),
    ("calib-joint-one-annotator", lambda: C.JointMap().fit(probs=Z, annotations=A[:, :1]),
     R, V, r"annotations must have at least 2 annotators"),
    ("calib-joint-length-mismatch", lambda: C.JointMap().fit(probs=Z[:-1], annotations=A),
     R, V, r"annotations must cover the items of probs"),
    ("calib-joint-labels-not-binary", lambda: C.JointMap().fit(
        probs=Z, annotations=np.where(A == 1, 2, A)), R, V, r"annotations"),
    ("calib-joint-annotations-1d", lambda: C.JointMap().fit(probs=Z, annotations=Y),
     R, V, r"annotations must be"),
    ("calib-joint-probs-above-one", lambda: C.JointMap().fit(probs=Z + 1, annotations=A),
     R, V, r"probs must lie in \[0, 1\]"),
    ("calib-joint-probs-nan", lambda: C.JointMap().fit(probs=np.full(60, np.nan),
                                                       annotations=A),
     R, V, r"probs.*NaN"),
    ("calib-joint-misaligned-series", lambda: C.JointMap().fit(
        probs=pd.Series(Z, index=[f"x{i}" for i in range(60)]), annotations=A),
     R, V, r"annotations is not aligned with probs"),
    ("calib-joint-predict-unfitted", lambda: C.JointMap().predict_proba(probs=Z),
     R, NotFittedError, r"not fitted"),
    ("calib-joint-not-converged", lambda: _status(_joint(max_iter=2)),
     S, None, r"not_converged"),
    ("calib-joint-two-annotators-one-bin", lambda: _status(C.JointMap(n_bins=2, n_starts=2)
                                                           .fit(probs=Z * 0.4,
                                                                annotations=A[:, :2])),
     S, None, r"not_identified"),
    ("calib-joint-not-converged-warns", lambda: _joint(max_iter=2),
     W, nc.ConvergenceWarning, r"not_converged"),
    # ---------------------------------------------------------- reliability_diagram
    ("calib-plot-not-an-estimate", lambda: _diagram(est=Z), R, TypeError, r"est must be"),
    ("calib-plot-no-bins", lambda: _diagram(est=nc.brier(Z, Y, interval=None)),
     R, V, r"est must come from a binned metric"),
    ("calib-plot-ax-not-axes", lambda: _diagram(ax="left"), R, V, r"ax must be"),
    ("calib-plot-level-percent", lambda: _diagram(level=90), R, V, r"level"),
    ("calib-plot-level-nan", lambda: _diagram(level=float("nan")), R, V, r"level"),
    ("calib-plot-interval-unknown", lambda: _diagram(interval="credible"),
     R, V, r"interval must be one of"),
    ("calib-plot-bootstrap-missing", lambda: _diagram(interval="bootstrap"),
     R, V, r"interval='bootstrap'"),
    ("calib-plot-wilson-soft-target", lambda: _diagram(
        est=nc.ece(Z, np.column_stack([1 - Z, Z]) * 0.999 + 0.0005, n_bins=5,
                   interval=None), interval="wilson"),
     R, V, r"interval='wilson'"),
    ("calib-plot-group-unknown", lambda: _diagram(group="class_9"), R, V, r"group"),
    ("calib-plot-group-index", lambda: _diagram(group=3), R, V, r"group"),
    ("calib-plot-hard-string", lambda: _diagram(hard="yes"), R, V, r"hard"),
    ("calib-plot-hard-with-bootstrap-bars",
     lambda: _diagram(est=nc.ece(Z, Y, n_bins=5, seed=0,
                                 interval=nc.intervals.Bootstrap(n_boot=20)),
                      hard=True),
     R, V, r"hard=True does not apply to bootstrap bars"),
    ("calib-plot-bands-soft-target", lambda: _diagram(
        est=nc.ece(Z, np.column_stack([1 - Z, Z]) * 0.999 + 0.0005, n_bins=5,
                   interval=None), bands=True),
     R, V, r"bands=True .* needs 0/1 targets"),
    ("calib-plot-bands-string", lambda: _diagram(bands="yes"), R, V, r"bands"),
    ("calib-plot-level-without-bars",
     lambda: _diagram(hard=False, level=0.8), R, V, r"level=0.8 does not apply"),
    ("calib-plot-hard-true-soft-successes", lambda: _diagram(
        est=nc.ece(Z, np.column_stack([1 - Z, Z]), n_bins=5, interval=None), hard=True),
     R, V, r"hard=True, but the bins' successes"),
    ("calib-plot-show-counts-string", lambda: _diagram(show_counts="no"),
     R, V, r"show_counts"),
    ("calib-plot-title-int", lambda: _diagram(title=3), R, V, r"title"),
    # ------------------------------------------------- multi-class scaling maps (n, K)
    ("calib-mc-probs-rows-not-normalised", lambda: _mc("TemperatureScaling")(
        probs=PM * 0.9, target=YM), R, V, r"rows of probs must sum to 1"),
    ("calib-mc-probs-negative", lambda: _mc("VectorScaling")(probs=ZM, target=YM),
     R, V, r"probs must lie in \[0, 1\].*logits="),
    ("calib-mc-logits-nan", lambda: _mc("PlattScaling")(
        logits=np.where(ZM > 3, np.nan, ZM), target=YM), R, V, r"logits contains .*NaN"),
    ("calib-mc-logits-one-column", lambda: _mc("MatrixScaling")(logits=ZM[:, :1], target=YM),
     R, V, r"logits must have at least 2 columns"),
    ("calib-mc-logits-look-like-probs", lambda: _mc("TemperatureScaling")(logits=PM,
                                                                          target=YM),
     W, nc.NumericalWarning, r"look like probabilities"),
    ("calib-mc-target-rows-not-summing-to-one", lambda: _mc("TemperatureScaling")(
        logits=ZM, target=np.eye(3)[YM] * 0.5), R, V, r"target rows must sum to 1"),
    ("calib-mc-target-wrong-columns", lambda: _mc("VectorScaling")(
        logits=ZM, target=np.eye(4)[YM]), R, V, r"target must have shape \(60, 3\)"),
    ("calib-mc-target-label-out-of-range", lambda: _mc("PlattScaling")(
        logits=ZM, target=np.where(YM == 2, 3, YM)), R, V, r"target"),
    ("calib-mc-target-length", lambda: _mc("DirichletCalibration")(logits=ZM, target=YM[:-1]),
     R, V, r"target has 59 labels"),
    ("calib-mc-target-nan", lambda: _mc("MatrixScaling")(
        logits=ZM, target=np.where(np.eye(3)[YM] == 1, np.nan, 0.0)), R, V, r"target.*NaN"),
    ("calib-mc-no-target", lambda: _mc("VectorScaling")(logits=ZM, target=None),
     R, V, r"target is required"),
    ("calib-mc-reg-lambda-negative", lambda: _mc("MatrixScaling", reg_lambda=-1e-3)(
        logits=ZM, target=YM), R, V, r"reg_lambda"),
    ("calib-mc-reg-mu-string", lambda: _mc("DirichletCalibration", reg_mu="0.1")(
        logits=ZM, target=YM), R, V, r"reg_mu must be a real number"),
    ("calib-mc-reg-lambda-inf", lambda: _mc("MatrixScaling", reg_lambda=np.inf)(
        logits=ZM, target=YM), R, V, r"reg_lambda must be finite"),
    ("calib-mc-max-iter-zero", lambda: _mc("VectorScaling", max_iter=0)(logits=ZM, target=YM),
     R, V, r"max_iter must be >= 1"),
    ("calib-mc-max-iter-float", lambda: _mc("PlattScaling", max_iter=10.0)(
        logits=ZM, target=YM), R, V, r"max_iter must be an integer"),
    ("calib-mc-vector-bounds-nonpositive", lambda: _mc("VectorScaling", bounds=(0.0, 5.0))(
        logits=ZM, target=YM), R, V, r"bounds.*0 < low"),
    ("calib-mc-matrix-bounds-reversed", lambda: _mc("MatrixScaling", bounds=(5.0, -5.0))(
        logits=ZM, target=YM), R, V, r"bounds"),
    ("calib-mc-loss-unknown", lambda: _mc("DirichletCalibration", loss="nll")(
        logits=ZM, target=YM), R, V, r"loss must be one of"),
    ("calib-mc-eps-zero", lambda: _mc("DirichletCalibration", eps=0.0)(probs=PM, target=YM),
     R, V, r"eps must be a number with 0 < eps < 0\.5"),
    ("calib-mc-predict-unfitted", lambda: C.MatrixScaling().predict_proba(logits=ZM),
     R, NotFittedError, r"not fitted"),
    ("calib-mc-predict-other-k", lambda: _mc("TemperatureScaling")(logits=ZM, target=YM)
     .predict_proba(logits=ZM[:, :2]), R, V, r"shape the map was fitted on, \(n, 3\)"),
    ("calib-mc-predict-binary-after-matrix", lambda: _mc("VectorScaling")(
        logits=ZM, target=YM).predict_proba(logits=ZM[:, 0]), R, V, r"logits must have the "
     r"shape the map was fitted on"),
    ("calib-mc-predict-probs-after-logits", lambda: _mc("MatrixScaling")(
        logits=ZM, target=YM).predict_proba(probs=PM), R, V, r"fitted on logits="),
    ("calib-mc-predict-both", lambda: _mc("PlattScaling")(logits=ZM, target=YM)
     .predict_proba(logits=ZM, probs=PM), R, V, r"exactly one of probs= or logits="),
    ("calib-mc-ts-separable", lambda: _status(_mc("TemperatureScaling")(
        logits=ZM, target=ZM.argmax(1))), S, None, r"separable.*T -> 0"),
    ("calib-mc-ts-separable-warns", lambda: _mc("TemperatureScaling")(
        logits=ZM, target=ZM.argmax(1)), W, nc.IdentifiabilityWarning, r"separable"),
    ("calib-mc-ts-uniform-target", lambda: _status(_mc("TemperatureScaling")(
        logits=ZM, target=np.full((60, 3), 1 / 3))), S, None,
     r"infinite_temperature.*grows without limit"),
    ("calib-mc-ts-constant-rows", lambda: _status(_mc("TemperatureScaling")(
        logits=np.zeros((60, 3)), target=YM)), S, None, r"not_identified"),
    # the log loss is unbounded below for rows that leave [0, 1] and favour the top logit
    ("calib-mc-ts-log-loss-corrected-rows", lambda: _status(_mc("TemperatureScaling",
                                                                loss="log")(
        logits=ZM, target=nc.targets.from_matrix(1.75 * np.eye(3)[ZM.argmax(1)] - 0.25,
                                                 kind="corrected"))), S, None,
     r"boundary.*unbounded below.*loss='brier'"),
    ("calib-mc-matrix-not-converged", lambda: _status(_mc("MatrixScaling", max_iter=1)(
        logits=ZM, target=YM)), S, None, r"not_converged.*optimiser"),
    ("calib-mc-matrix-not-converged-warns", lambda: _mc("MatrixScaling", max_iter=1)(
        logits=ZM, target=YM), W, nc.ConvergenceWarning, r"not_converged"),
    ("calib-mc-platt-separable-boundary", lambda: _status(_mc("PlattScaling")(
        logits=ZM, target=ZM.argmax(1))), S, None, r"boundary.*bounds"),
    ("calib-mc-vector-zero-column", lambda: _status(_mc("VectorScaling")(
        logits=np.column_stack([ZM[:, :2], np.zeros(60)]), target=YM)), S, None,
     r"not_identified.*\[2\]"),
    ("calib-mc-dirichlet-identical-items", lambda: _status(_mc("DirichletCalibration")(
        probs=np.tile(PM[:1], (60, 1)), target=YM)), S, None, r"not_identified.*same scores"),
]
