"""Bad-input catalogue, CMCE and conformal area: nc.cmce, coverage_window, hpr_sets,
SplitConformal (APS, RAPS, class-conditional), evaluate_sets, MassRescaling,
ConformalTemperature, NaiveCMCETemperature, OneVsRestPlatt (see test_bad_inputs.py)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.calibrators.conformal import conformal_quantile
from noisycal.calibrators.conformal.evaluate import evaluate_sets

C = nc.calibrators
_RNG = np.random.default_rng(0)
Z = _RNG.normal(size=(60, 3)) * 2
P = np.exp(Z) / np.exp(Z).sum(1, keepdims=True)
Y = (P.cumsum(1) > _RNG.random((60, 1))).argmax(1)
SOFT = np.full((60, 3), 1 / 3)
IDS = [f"item{i}" for i in range(60)]


def _nan_probs():
    p = P.copy()
    p[2, 1] = np.nan
    return p


def _fit(cls, data=None, **params):
    kw = data or {"logits": Z, "target": Y}
    return lambda: getattr(C, cls)(**params).fit(**kw)


def _st(thunk):
    """The fitted calibrator's status_/message_ as the catalogue's status/message."""
    def run():
        cal = thunk()
        return SimpleNamespace(status=cal.status_, message=cal.message_)
    return run


def _absent_class_ovr():
    return C.OneVsRestPlatt().fit(logits=Z, target=np.where(Y == 2, 0, Y))


R, S, W = "raises", "status", "warns"
V = ValueError

CASES = [
    # ------------------------------------------------------------------------ cmce
    ("cmce-nan-probs", lambda: nc.cmce(_nan_probs(), Y), R, V, "probs"),
    ("cmce-unnormalised", lambda: nc.cmce(P * 1.1, Y), R, V, "probs"),
    ("cmce-both-inputs", lambda: nc.cmce(P, Y, logits=Z), R, V, "probs= or logits="),
    ("cmce-level-percent", lambda: nc.cmce(P, Y, level=90), R, V, "level"),
    ("cmce-weighted-not-bool", lambda: nc.cmce(P, Y, weighted="yes"), R, V, "weighted"),
    ("cmce-interval-bound", lambda: nc.cmce(P, Y, interval="bound"), R, V, "interval"),
    ("cmce-label-out-of-range", lambda: nc.cmce(P, np.full(60, 3)), R, V, "target"),
    ("cmce-target-wrong-shape", lambda: nc.cmce(P, np.ones((60, 4)) / 4), R, V, "target"),
    ("cmce-target-wrong-length", lambda: nc.cmce(P, Y[:50]), R, V, "target"),
    ("cmce-n-bins-zero", lambda: nc.cmce(P, Y, n_bins=0), R, V, "n_bins"),
    ("cmce-chunk-zero", lambda: nc.cmce(P, Y, chunk_size=0), R, V, "chunk_size"),
    ("cmce-cluster-length", lambda: nc.cmce(P, Y, cluster=np.arange(5)), R, V, "cluster"),
    ("cmce-one-item-degenerate", lambda: nc.cmce(P[:1], Y[:1], n_bins=10), S, None,
     "degenerate"),
    ("cmce-window-lo-above-hi", lambda: nc.coverage_window(P, Y, 0.95, 0.9), R, V, "lo"),
    ("cmce-window-percent", lambda: nc.coverage_window(P, Y, 90, 92), R, V, "lo"),
    ("cmce-window-empty-warns", lambda: nc.coverage_window(np.full((4, 2), 0.5), [0] * 4,
                                                           0.6, 0.7),
     W, nc.NumericalWarning, "no nested"),
    ("cmce-hpr-alpha-percent", lambda: nc.metrics.hpr_sets(P, 10), R, V, "alpha"),
    # ------------------------------------------------------------------- conformal
    ("conf-alpha-percent", _fit("SplitConformal", alpha=10), R, V, "alpha"),
    ("conf-alpha-zero", lambda: conformal_quantile([0.1, 0.2], 0.0), R, V, "alpha"),
    ("conf-unknown-score", _fit("SplitConformal", score="lac"), R, V, "score"),
    ("conf-raps-lam-negative", _fit("SplitConformal", score="raps", lam=-0.1), R, V, "lam"),
    ("conf-raps-k-reg-negative", _fit("SplitConformal", score="raps", k_reg=-1), R, V,
     "k_reg"),
    ("conf-raps-k-reg-float", _fit("SplitConformal", score="raps", k_reg=2.5), R, V,
     "k_reg"),
    ("conf-randomized-not-bool", _fit("SplitConformal", score="aps", randomized="yes"), R,
     V, "randomized"),
    ("conf-mondrian-not-bool", _fit("SplitConformal", mondrian=1), R, V, "mondrian"),
    ("conf-boundary-randomized", _fit("SplitConformal", score="aps",
                                      aps_include_boundary=True), R, V,
     "aps_include_boundary"),
    ("conf-mondrian-adaptive", _fit("SplitConformal", mondrian=True, threshold="adaptive"),
     R, V, "mondrian"),
    ("conf-u-wrong-length", _fit("SplitConformal", {"logits": Z, "target": Y,
                                                    "u": np.full(50, 0.5)}, score="aps"),
     R, V, "u must"),
    ("conf-u-outside-unit", _fit("SplitConformal", {"logits": Z, "target": Y,
                                                    "u": np.full(60, 1.5)}, score="aps"),
     R, V, "u must"),
    ("conf-u-for-msp", _fit("SplitConformal", {"logits": Z, "target": Y,
                                               "u": np.full(60, 0.5)}), R, V, "u is only"),
    ("conf-predict-u-length", lambda: C.SplitConformal(score="aps").fit(logits=Z, target=Y)
     .predict_sets(logits=Z, u=np.full(3, 0.5)), R, V, "u must"),
    ("conf-mondrian-infinite-class", _st(_fit("SplitConformal", {"logits": Z, "target": Y},
                                              alpha=0.04, mondrian=True)), S, None,
     "infinite_quantile"),
    ("conf-misaligned-target", lambda: C.SplitConformal().fit(
        probs=pd.DataFrame(P, index=IDS), target=pd.Series(Y, index=IDS[::-1])), R, V,
     "target"),
    ("conf-eval-not-bool", lambda: evaluate_sets(P, Y), R, V, "sets"),
    ("conf-eval-level-percent", lambda: evaluate_sets(P > 0.3, Y, level=90), R, V, "level"),
    ("conf-eval-interval", lambda: evaluate_sets(P > 0.3, Y, interval="wald"), R, V,
     "interval"),
    ("conf-eval-labels-length", lambda: evaluate_sets(P > 0.3, Y[:5]), R, V, "target"),
    ("conf-unknown-threshold", _fit("SplitConformal", threshold="flow"), R, V,
     "threshold"),
    ("conf-soft-target", _fit("SplitConformal", {"logits": Z, "target": SOFT}), R, V,
     "target"),
    ("conf-nan-probs", _fit("SplitConformal", {"probs": _nan_probs(), "target": Y}), R, V,
     "probs"),
    ("conf-no-input", lambda: C.SplitConformal().fit(target=Y), R, V, "probs= or logits="),
    ("conf-boundary-flag", _fit("SplitConformal", aps_include_boundary="yes"), R, V,
     "aps_include_boundary"),
    ("conf-ada-fraction", _fit("SplitConformal", threshold="adaptive", ada_fraction=0.0),
     R, V, "ada_fraction"),
    ("conf-infinite-quantile", _st(_fit("SplitConformal", alpha=0.01)), S, None,
     "infinite_quantile"),
    ("conf-predict-wrong-width", lambda: C.SplitConformal().fit(logits=Z, target=Y)
     .predict_sets(logits=Z[:, :2]), R, V, "logits"),
    ("conf-mr-bad-tol", _fit("MassRescaling", degenerate_tol=(0.7, 0.1)), R, V,
     "degenerate_tol"),
    ("conf-mr-tol-not-pair", _fit("MassRescaling", degenerate_tol=1e-5), R, V,
     "degenerate_tol"),
    ("conf-ts-empty-set-rule", _fit("ConformalTemperature", empty_set="drop"), R, V,
     "empty_set"),
    ("conf-ts-tau-range", _fit("ConformalTemperature", tau_min=2.0, tau_max=1.0), R, V,
     "tau_min"),
    ("conf-ts-cap-status", _st(_fit("ConformalTemperature",
                                 conformal=C.SplitConformal(alpha=0.03))), S, None, "cap"),
    ("conf-naive-grid-negative", _fit("NaiveCMCETemperature", grid=[-1.0, 1.0]), R, V,
     "grid"),
    ("conf-naive-grid-name", _fit("NaiveCMCETemperature", grid="linear"), R, V, "grid"),
    ("conf-naive-boundary", _st(_fit("NaiveCMCETemperature", grid=[5.0, 10.0, 20.0])), S, None,
     "boundary"),
    ("conf-naive-n-bins-zero", _fit("NaiveCMCETemperature", n_bins=0), R, V, "n_bins"),
    ("conf-naive-n-bins-negative", _fit("NaiveCMCETemperature", n_bins=-3), R, V,
     "n_bins"),
    ("conf-naive-n-bins-float", _fit("NaiveCMCETemperature", n_bins=2.5), R, V, "n_bins"),
    ("conf-naive-weighted-string", _fit("NaiveCMCETemperature", weighted="no"), R, V,
     "weighted"),
    ("conf-naive-eps-negative", _fit("NaiveCMCETemperature", eps=-1.0), R, V, "eps"),
    ("conf-split-eps-negative", _fit("SplitConformal", eps=-1.0), R, V, "eps"),
    ("conf-mr-eps-negative", _fit("MassRescaling", conformal=C.SplitConformal(eps=-1.0)), R,
     V, "eps"),
    ("conf-mr-degenerate-rows", _st(_fit("MassRescaling",
                                      conformal=C.SplitConformal(alpha=0.05))), S, None,
     "degenerate_rows"),
    ("conf-ovr-absent-class", _st(_absent_class_ovr), S, None, "class_not_ok"),
    ("conf-ovr-isotonic-absent-class", _st(lambda: C.OneVsRestIsotonic().fit(
        logits=Z, target=np.where(Y == 2, 0, Y))), S, None, "class_not_ok"),
    ("conf-ovr-isotonic-bad-interpolation", _fit("OneVsRestIsotonic", interpolation="cubic"),
     R, V, "interpolation"),
    ("conf-ovr-unnormalised-target", _fit("OneVsRestPlatt", {"logits": Z,
                                                             "target": SOFT * 2}),
     R, V, "target"),
]


def _shared_then(cls, **fit):
    shared = C.SplitConformal(alpha=0.3).fit(logits=Z, target=Y)
    return lambda: getattr(C, cls)(conformal=C.SplitConformal(alpha=0.3)).fit(**fit,
                                                                             prefit=shared)


CASES += [
    ("conf-shared-wrong-width", _shared_then("ConformalTemperature", logits=Z[:, :2],
                                             target=Y % 2), R, V, "logits must have the 3"),
    ("conf-shared-target-length", _shared_then("MassRescaling", logits=Z, target=Y[:50]),
     R, V, "target has 50 labels"),
    ("conf-shared-target-unknown-label", _shared_then("MassRescaling", logits=Z,
                                                      target=np.full(60, 7)), R, V, "target"),
    ("conf-shared-soft-target", _shared_then("ConformalTemperature", logits=Z, target=SOFT),
     R, V, "target must be hard labels"),
    ("conf-map-builder-not-split", _fit("MassRescaling", conformal="aps"), R, V,
     "conformal must be a SplitConformal"),
    ("conf-map-prefit-unfitted", _fit("ConformalTemperature", {"logits": Z, "target": Y,
                                                               "prefit": C.SplitConformal()}),
     R, V, "prefit must be a fitted"),
    ("conf-map-prefit-other-sets", _fit("MassRescaling", {
        "logits": Z, "target": Y,
        "prefit": C.SplitConformal(score="aps").fit(logits=Z, target=Y)}), R, V,
     "prefit was fitted with other settings"),
    ("conf-map-nested-on-default", lambda: C.MassRescaling().set_params(conformal__alpha=0.2),
     R, V, "conformal__alpha"),
]
