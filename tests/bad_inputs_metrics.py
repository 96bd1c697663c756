"""Bad-input catalogue, metrics area: ece, mce, brier, nll, calibration slope/intercept,
true_label_ece, nc_ece_crossfit, targets.*, bootstrap and Estimate (see test_bad_inputs.py)."""

import numpy as np
import pandas as pd

import noisycal as nc
from noisycal.correction import correction_range, iv_weights
from noisycal.intervals import bootstrap, equal_tailed
from noisycal.intervals.bounds import hoeffding_radius
from noisycal.metrics.scores import weighted_mean

_P = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]])
_Y = np.array([0, 1, 1, 1])
_Z = np.array([0.2, 0.7, 0.4, 0.9])
_A = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]])
_AB = dict(a=[0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9])


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    return z, (rng.random(n) < z).astype(int)


def _ann(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    A = (rng.random((n, 3)) < np.where(y[:, None], 0.85, 0.15)).astype(int)
    return nc.Annotations.from_wide(A, classes=[0, 1])


def _failed_fit_target():
    one = nc.Annotations.from_arrays(np.arange(10), np.zeros(10), np.arange(10) % 2)
    fit = nc.DawidSkene().fit(one)
    return fit


class _FakeFit:
    """A fit-like object whose status is not ok (duck-typed, as targets accept)."""

    def __init__(self, status="not_converged"):
        self.confusion = np.array([[[0.9, 0.1], [0.1, 0.9]]] * 3)
        self.group_prevalence = np.array([[0.5, 0.5]])
        self.n_items = 4
        self.details = {}
        self.status = status
        self.message = "EM hit max_iter"
        self.method = "em"


def _corrected_from_failed_fit():
    return nc.targets.corrected(_A, _FakeFit())


_P3 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3]])
_C3 = np.stack([0.7 * np.eye(3) + 0.1] * 3)


def _k3_target(weights="equal", **kw):
    return nc.targets.corrected(np.array([[0, 1, 0], [1, 1, 2], [2, 2, 2], [0, 1, 1]]),
                                confusion=_C3, weights=weights, **kw)


def _simplex_logits():
    return nc.ece(logits=_P, target=_Y, interval=None)


def _swapped():
    return nc.ece(_Y, _P)


def _swapped_float():
    return nc.ece(_Y.astype(float), _Z, interval=None)


V = ValueError
W = nc.NumericalWarning

CASES = [
    # ---- predictions
    ("metrics-ece-no-predictions", lambda: nc.ece(target=_Y), "raises", V, r"probs= or logits="),
    ("metrics-ece-both-predictions", lambda: nc.ece(_P, _Y, logits=_P), "raises", V,
     r"probs= or logits="),
    ("metrics-ece-probs-nan", lambda: nc.ece(np.array([[np.nan, 1.0], [0.5, 0.5]]),
                                             [0, 1]), "raises", V, r"probs"),
    ("metrics-ece-probs-negative", lambda: nc.ece(np.array([[-0.1, 1.1], [0.5, 0.5]]),
                                                  [0, 1]), "raises", V, r"probs"),
    ("metrics-ece-probs-rows-not-sum-1", lambda: nc.ece(np.array([[0.5, 0.6], [0.5, 0.5]]),
                                                        [0, 1]), "raises", V, r"probs"),
    ("metrics-ece-probs-3d", lambda: nc.ece(np.ones((2, 2, 2)) / 2, [0, 1]), "raises", V,
     r"probs"),
    ("metrics-ece-probs-one-column", lambda: nc.ece(np.ones((2, 1)), [0, 0]), "raises", V,
     r"probs"),
    ("metrics-ece-probs-empty", lambda: nc.ece(np.zeros((0, 2)), np.zeros(0, int)), "raises",
     V, r"probs"),
    ("metrics-ece-probs-strings", lambda: nc.ece(np.array(["a", "b"]), [0, 1]), "raises", V,
     r"probs"),
    ("metrics-ece-swapped-int-labels", _swapped, "raises", V, r"probs"),
    ("metrics-ece-swapped-float-labels", _swapped_float, "raises", V, r"swapped"),
    ("metrics-ece-logits-look-like-probs", _simplex_logits, "warns", W, r"logits"),
    ("metrics-ece-logits-inf", lambda: nc.ece(logits=np.array([[np.inf, 0.0], [0, 1.0]]),
                                              target=[0, 1]), "raises", V, r"logits"),
    # ---- targets given to metrics
    ("metrics-ece-target-missing", lambda: nc.ece(_P), "raises", V, r"target"),
    ("metrics-ece-target-wrong-length", lambda: nc.ece(_P, [0, 1]), "raises", V, r"target"),
    ("metrics-ece-target-label-out-of-range", lambda: nc.ece(_P, [0, 1, 2, 1]), "raises", V,
     r"target"),
    ("metrics-ece-target-nan", lambda: nc.ece(_P, np.array([[np.nan, 1], [0, 1], [0, 1],
                                                             [0, 1]])), "raises", V, r"target"),
    ("metrics-ece-target-wrong-shape", lambda: nc.ece(_P, np.ones((4, 3))), "raises", V,
     r"target"),
    ("metrics-ece-target-strings-no-classes", lambda: nc.ece(_P, ["a", "b", "a", "b"]),
     "raises", V, r"classes="),
    ("metrics-ece-target-label-not-in-classes",
     lambda: nc.ece(_P, ["a", "b", "c", "b"], classes=["a", "b"]), "raises", V, r"classes"),
    ("metrics-ece-classes-repeated",
     lambda: nc.ece(_P, ["a", "a", "a", "a"], classes=["a", "a"]), "raises", V, r"classes"),
    ("metrics-ece-classes-mismatch-target",
     lambda: nc.ece(_P, nc.targets.hard(["a", "b", "a", "b"], classes=["a", "b"]),
                    classes=["b", "a"]), "raises", V, r"classes"),
    ("metrics-ece-items-mismatch",
     lambda: nc.ece(_Z, nc.targets.hard(pd.Series(_Y, index=list("abcd")), n_classes=2),
                    items=list("abdc")), "raises", V, r"items"),
    ("metrics-ece-items-wrong-length", lambda: nc.ece(_Z, _Y, items=["a", "b"]), "raises", V,
     r"items"),
    ("metrics-ece-items-repeated", lambda: nc.ece(_Z, _Y, items=["a", "a", "b", "c"]),
     "raises", V, r"items"),
    ("metrics-ece-series-index-mismatch",
     lambda: nc.ece(pd.Series(_Z, index=list("dcba")),
                    nc.targets.hard(pd.Series(_Y, index=list("abcd")), n_classes=2),
                    interval=None), "raises", V, r"items"),
    # ---- bins and interval settings
    ("metrics-ece-n-bins-zero", lambda: nc.ece(_Z, _Y, n_bins=0), "raises", V, r"n_bins"),
    ("metrics-ece-n-bins-float", lambda: nc.ece(_Z, _Y, n_bins=10.0), "raises", V, r"n_bins"),
    ("metrics-ece-n-bins-huge", lambda: nc.ece(*_data(200), n_bins=10**6), "raises", V,
     r"n_bins"),
    ("metrics-mce-n-bins-huge", lambda: nc.mce(*_data(200), n_bins=10**6), "raises", V,
     r"n_bins"),
    ("metrics-ece-strategy", lambda: nc.ece(_Z, _Y, strategy="equal"), "raises", V,
     r"strategy"),
    ("metrics-ece-norm", lambda: nc.ece(_Z, _Y, norm="l3"), "raises", V, r"norm"),
    ("metrics-ece-debias-l1", lambda: nc.ece(_Z, _Y, debias=True), "raises", V, r"debias"),
    ("metrics-ece-debias-string", lambda: nc.ece(_Z, _Y, norm="l2", debias="yes"), "raises",
     V, r"debias"),
    ("metrics-ece-kind", lambda: nc.ece(_Z, _Y, kind="top"), "raises", V, r"kind"),
    ("metrics-ece-positive-class-3", lambda: nc.ece(np.full((2, 3), 1 / 3), [0, 1],
                                                    kind="positive_class"), "raises", V,
     r"positive_class"),
    ("metrics-ece-interval", lambda: nc.ece(_Z, _Y, interval="wald"), "raises", V,
     r"interval"),
    ("metrics-ece-level-percent", lambda: nc.ece(_Z, _Y, level=90), "raises", V, r"level"),
    ("metrics-ece-level-string", lambda: nc.ece(_Z, _Y, level="0.9"), "raises", V, r"level"),
    ("metrics-ece-level-one", lambda: nc.ece(_Z, _Y, level=1.0), "raises", V, r"level"),
    ("metrics-ece-n-boot-zero", lambda: nc.ece(_Z, _Y, n_boot=0), "raises", V, r"n_boot"),
    ("metrics-ece-n-boot-float", lambda: nc.ece(_Z, _Y, n_boot=100.0), "raises", V,
     r"n_boot"),
    ("metrics-ece-method", lambda: nc.ece(_Z, _Y, method="student"), "raises", V, r"method"),
    ("metrics-ece-seed-overflow", lambda: nc.ece(_Z, _Y, seed=2**64), "raises", V, r"seed"),
    ("metrics-ece-seed-none", lambda: nc.ece(_Z, _Y, seed=None), "raises", V, r"seed"),
    ("metrics-ece-seed-string", lambda: nc.ece(_Z, _Y, seed="0"), "raises", V, r"seed"),
    ("metrics-ece-batch-size-negative", lambda: nc.ece(_Z, _Y, batch_size=-3), "raises", V,
     r"batch_size"),
    ("metrics-ece-rebin-uniform", lambda: nc.ece(_Z, _Y, rebin=True), "raises", V, r"rebin"),
    ("metrics-ece-cluster-nan", lambda: nc.ece(_Z, _Y, cluster=[0, 1, np.nan, 1]), "raises",
     V, r"cluster"),
    ("metrics-ece-cluster-length", lambda: nc.ece(_Z, _Y, cluster=[0, 1]), "raises", V,
     r"cluster"),
    ("metrics-ece-refit-string", lambda: nc.ece(_Z, _Y, refit_channels="yes"), "raises", V,
     r"refit_channels"),
    ("metrics-ece-bound-hard-target", lambda: nc.ece(_Z, _Y, interval="bound"), "raises", V,
     r"interval='bound'"),
    ("metrics-ece-bound-top-label",
     lambda: nc.ece(_P, nc.targets.corrected(_A, **_AB), interval="bound",
                    kind="top_label"), "raises", V, r"positive_class"),
    ("metrics-ece-bound-mode", lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB),
                                              interval="bound", bound_mode="exact"),
     "raises", V, r"bound_mode"),
    ("metrics-ece-bound-radius-negative",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound",
                    bound_mode="radius", channel_radius=-0.1), "raises", V, r"channel_radius"),
    ("metrics-ece-bound-oracle-no-channels",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound",
                    bound_mode="oracle"), "raises", V, r"true_channels"),
    # bound options are validated whatever the interval, and belong to interval='bound'
    ("metrics-ece-bound-mode-without-bound", lambda: nc.ece(_Z, _Y, bound_mode="bogus"),
     "raises", V, r"bound_mode must be one of"),
    ("metrics-ece-bound-mode-given-without-bound",
     lambda: nc.ece(_Z, _Y, interval=None, bound_mode="radius"), "raises", V,
     r"bound_mode applies only to interval='bound'"),
    ("metrics-ece-radius-negative-without-bound", lambda: nc.ece(_Z, _Y, channel_radius=-1),
     "raises", V, r"channel_radius must be a finite number >= 0"),
    ("metrics-ece-radius-without-bound", lambda: nc.ece(_Z, _Y, channel_radius=0.1),
     "raises", V, r"channel_radius applies only to interval='bound'"),
    ("metrics-ece-true-channels-string", lambda: nc.ece(_Z, _Y, true_channels="x"),
     "raises", V, r"true_channels must be a pair"),
    ("metrics-ece-true-channels-without-bound",
     lambda: nc.ece(_Z, _Y, true_channels=([0.1] * 3, [0.9] * 3)), "raises", V,
     r"true_channels applies only to interval='bound'"),
    ("metrics-ece-same-sample-string", lambda: nc.ece(_Z, _Y, same_sample="no"),
     "raises", V, r"same_sample must be True or False"),
    ("metrics-ece-same-sample-without-bound", lambda: nc.ece(_Z, _Y, same_sample=True),
     "raises", V, r"same_sample applies only to interval='bound'"),
    ("metrics-ece-bound-same-sample-string",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound", same_sample="no"),
     "raises", V, r"same_sample must be True or False"),
    ("metrics-ece-bound-binned-only-radius",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound",
                    channel_radius=0.1), "raises", V,
     r"channel_radius applies only to bound_mode='radius', not bound_mode='binned_only'"),
    ("metrics-ece-bound-binned-only-true-channels",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound",
                    true_channels=([0.1] * 3, [0.9] * 3)), "raises", V,
     r"true_channels applies only to bound_mode='oracle', not bound_mode='binned_only'"),
    ("metrics-ece-bound-oracle-radius",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound",
                    bound_mode="oracle", true_channels=([0.1] * 3, [0.9] * 3),
                    channel_radius=0.1), "raises", V,
     r"channel_radius applies only to bound_mode='radius', not bound_mode='oracle'"),
    ("metrics-ece-bound-radius-true-channels",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="bound",
                    bound_mode="radius", channel_radius=0.1,
                    true_channels=([0.1] * 3, [0.9] * 3)), "raises", V,
     r"true_channels applies only to bound_mode='oracle', not bound_mode='radius'"),
    ("metrics-targets-posterior-groups-without-annotations",
     lambda: nc.targets.posterior(None, nc.DawidSkene().fit(_ann(), seed=0),
                                  groups=np.zeros(60)), "raises", V,
     r"groups applies only to new annotations"),
    ("metrics-ece-credible-em-target",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), interval="credible"), "raises", V,
     r"interval='credible'"),
    ("metrics-ece-refit-no-fit",
     lambda: nc.ece(_Z, nc.targets.corrected(_A, **_AB), refit_channels=True, n_boot=10),
     "raises", V, r"refit_channels"),
    # ---- statuses
    ("metrics-ece-n1-degenerate", lambda: nc.ece(np.array([0.3]), np.array([1]), n_boot=20,
                                    n_bins=10),
     "status", None, r"degenerate"),
    ("metrics-mce-n1-degenerate", lambda: nc.mce(np.array([0.3]), np.array([1]), n_boot=20,
                                    n_bins=10),
     "status", None, r"degenerate"),
    ("metrics-brier-n1-degenerate", lambda: nc.brier(np.array([0.3]), np.array([1]),
                                                     n_boot=20), "status", None, r"degenerate"),
    ("metrics-ece-constant-degenerate",
     lambda: nc.ece(np.full(5, 0.5), np.array([1, 1, 1, 1, 1]), n_boot=20), "status", None,
     r"replicates are equal"),
    ("metrics-ece-n1-degenerate-warns", lambda: nc.ece(np.array([0.3]), np.array([1]),
                                                       n_boot=20, n_bins=10),
     "warns", W, r"equal"),
    ("metrics-brier-wald-n1", lambda: nc.brier(np.array([0.3]), np.array([1]),
                                               interval="wald"), "status", None,
     r"standard error"),
    ("metrics-nll-wald-n1", lambda: nc.nll(np.array([0.3]), np.array([1]), interval="wald"),
     "status", None, r"nonfinite_se"),
    ("metrics-nll-infinite", lambda: nc.nll(np.array([0.0, 0.5]), np.array([1, 1])),
     "status", None, r"infinite"),
    ("metrics-slope-all-zero", lambda: nc.calibration_slope(np.array([0.2, 0.4, 0.6, 0.8]),
                                                            np.zeros(4, int)),
     "status", None, r"not defined"),
    ("metrics-slope-separated", lambda: nc.calibration_slope(np.array([0.2, 0.8]),
                                                             np.array([0, 1])),
     "status", None, r"separat"),
    ("metrics-slope-separated-warns", lambda: nc.calibration_slope(np.array([0.2, 0.8]),
                                                                   np.array([0, 1])),
     "warns", W, r"separated"),
    ("metrics-intercept-all-one", lambda: nc.calibration_intercept(
        np.array([0.2, 0.4, 0.6]), np.ones(3, int)), "status", None, r"undefined"),
    ("metrics-slope-probability-one", lambda: nc.calibration_slope(np.array([1.0, 0.5]),
                                                                   np.array([1, 0])),
     "raises", V, r"probs"),
    ("metrics-slope-cov-type", lambda: nc.calibration_slope(_Z, _Y, cov_type="HC3"), "raises",
     V, r"cov_type"),
    ("metrics-slope-seed-overflow", lambda: nc.calibration_slope(_Z, _Y, seed=2**64),
     "raises", V, r"seed"),
    ("metrics-ece-failed-fit-target", lambda: nc.ece(_Z, _corrected_from_failed_fit(),
                                                     interval=None),
     "status", None, r"not_converged"),
    ("metrics-brier-failed-fit-target", lambda: nc.brier(_Z, _corrected_from_failed_fit(),
                                                         interval=None),
     "status", None, r"target_not_converged"),
    ("metrics-target-failed-fit-status", _corrected_from_failed_fit, "status", None,
     r"not_converged"),
    # ---- brier / nll / true_label_ece
    ("metrics-brier-variant", lambda: nc.brier(_Z, _Y, variant="soft"), "raises", V,
     r"variant"),
    ("metrics-brier-expected-rows-not-summing-to-1",
     lambda: nc.brier(_Z, np.array([[1.3, 0.0]] * len(_Z)), variant="expected"), "raises",
     V, r"target"),
    ("metrics-brier-interval", lambda: nc.brier(_Z, _Y, interval="bound"), "raises", V,
     r"interval"),
    ("metrics-brier-wald-cluster", lambda: nc.brier(_Z, _Y, interval="wald",
                                                    cluster=[0, 0, 1, 1]), "raises", V,
     r"cluster"),
    ("metrics-nll-n-boot", lambda: nc.nll(_Z, _Y, n_boot=1), "raises", V, r"n_boot"),
    ("metrics-tlece-not-distribution", lambda: nc.true_label_ece(
        _P, np.array([[0.5, 0.6]] * 4), interval=None), "raises", V, r"target"),
    ("metrics-tlece-form", lambda: nc.true_label_ece(_P, _P, form="exact"), "raises", V,
     r"form"),
    ("metrics-tlece-n-draws", lambda: nc.true_label_ece(_P, _P, n_draws=0), "raises", V,
     r"n_draws"),
    ("metrics-tlece-interval", lambda: nc.true_label_ece(_P, _P, interval="bound"), "raises",
     V, r"interval"),
    # ---- targets.*
    ("metrics-targets-hard-no-classes", lambda: nc.targets.hard([0, 1]), "raises", V,
     r"n_classes"),
    ("metrics-targets-hard-n-classes-1", lambda: nc.targets.hard([0, 0], n_classes=1),
     "raises", V, r"n_classes"),
    ("metrics-targets-hard-out-of-range", lambda: nc.targets.hard([0, 3], n_classes=3),
     "raises", V, r"labels"),
    ("metrics-targets-hard-strings", lambda: nc.targets.hard(["a", "b"], n_classes=2),
     "raises", V, r"classes="),
    ("metrics-targets-hard-unknown-label", lambda: nc.targets.hard(["a", "z"],
                                                                   classes=["a", "b"]),
     "raises", V, r"classes"),
    ("metrics-targets-hard-n-classes-vs-classes",
     lambda: nc.targets.hard(["a"], classes=["a", "b"], n_classes=3), "raises", V,
     r"n_classes"),
    ("metrics-targets-soft-none", lambda: nc.targets.soft(), "raises", V, r"exactly one"),
    ("metrics-targets-soft-negative-counts",
     lambda: nc.targets.soft(counts=np.array([[1, -1], [1, 1]])), "raises", V, r"counts"),
    ("metrics-targets-soft-empty-row", lambda: nc.targets.soft(counts=np.array([[0, 0]])),
     "raises", V, r"counts"),
    ("metrics-targets-soft-distribution", lambda: nc.targets.soft(
        distribution=np.array([[0.5, 0.6]])), "raises", V, r"distribution"),
    ("metrics-targets-soft-probs-keyword", lambda: nc.targets.soft(
        probs=np.array([[0.5, 0.5]])), "raises", TypeError, r"probs"),
    ("metrics-targets-voted-array", lambda: nc.targets.voted(_A), "raises", V,
     r"annotations"),
    ("metrics-targets-corrected-prevalence-high",
     lambda: nc.targets.corrected(_A, **_AB, prevalence=1.5), "raises", V, r"prevalence"),
    ("metrics-targets-corrected-prevalence-string",
     lambda: nc.targets.corrected(_A, **_AB, prevalence="0.3"), "raises", V, r"prevalence"),
    ("metrics-targets-corrected-prevalence-nan",
     lambda: nc.targets.corrected(_A, **_AB, prevalence=float("nan")), "raises", V,
     r"prevalence"),
    ("metrics-targets-corrected-informative-indices",
     lambda: nc.targets.corrected(_A, **_AB, informative=[0, 1, 2]), "raises", V,
     r"informative"),
    ("metrics-targets-corrected-informative-none",
     lambda: nc.targets.corrected(_A, **_AB, informative=[False] * 3), "raises", V,
     r"informative"),
    ("metrics-targets-corrected-informative-length",
     lambda: nc.targets.corrected(_A, **_AB, informative=[True, False]), "raises", V,
     r"informative"),
    ("metrics-targets-corrected-no-channels", lambda: nc.targets.corrected(_A), "raises", V,
     r"exactly one"),
    ("metrics-targets-corrected-small-gap",
     lambda: nc.targets.corrected(_A, a=[0.5, 0.1, 0.1], b=[0.50005, 0.9, 0.9]), "raises",
     V, r"b - a"),
    ("metrics-targets-corrected-rates-out-of-range",
     lambda: nc.targets.corrected(_A, a=[-0.1, 0.1, 0.1], b=[0.9, 0.9, 0.9]), "raises", V,
     r"a and b"),
    ("metrics-targets-corrected-weights-simplex",
     lambda: nc.targets.corrected(_A, **_AB, weights=[0.5, 0.6, -0.1]), "raises", V,
     r"weights"),
    ("metrics-targets-corrected-weights-rule",
     lambda: nc.targets.corrected(_A, **_AB, weights="inverse"), "raises", V, r"weights"),
    ("metrics-targets-corrected-labels-out-of-range",
     lambda: nc.targets.corrected(np.array([[1, 2, 0]]), **_AB), "raises", V,
     r"annotations"),
    ("metrics-targets-corrected-confusion-rows",
     lambda: nc.targets.corrected(_A, confusion=np.full((3, 2, 2), 0.6)), "raises", V,
     r"confusion"),
    ("metrics-targets-corrected-confusion-singular",
     lambda: nc.targets.corrected(_A, confusion=np.full((3, 2, 2), 0.5)), "raises", V,
     r"confusion|b - a"),
    ("metrics-targets-corrected-fit-not-a-fit",
     lambda: nc.targets.corrected(_A, fit=object()), "raises", V, r"fit"),
    ("metrics-targets-posterior-not-a-fit",
     lambda: nc.targets.posterior(None, np.ones((3, 2))), "raises", V, r"fit"),
    ("metrics-targets-from-matrix-1d", lambda: nc.targets.from_matrix([0.1, 0.2]), "raises",
     V, r"values"),
    ("metrics-targets-from-matrix-kind", lambda: nc.targets.from_matrix(np.eye(2),
                                                                        kind="guess"),
     "raises", V, r"kind"),
    ("metrics-targets-items-length", lambda: nc.targets.from_matrix(np.eye(2),
                                                                    items=["a"]),
     "raises", V, r"items"),
    # ---- correction helpers
    ("metrics-iv-weights-prevalence-string", lambda: iv_weights([0.1], [0.9], "0.3"),
     "raises", V, r"prevalence"),
    ("metrics-iv-weights-length", lambda: iv_weights([0.1, 0.2], [0.9], 0.3), "raises", V,
     r"a and b"),
    ("metrics-hoeffding-level", lambda: hoeffding_radius(1.0, 100, 10, 95), "raises", V,
     r"level"),
    ("metrics-hoeffding-n", lambda: hoeffding_radius(1.0, 0, 10, 0.9), "raises", V, r"\bn\b"),
    ("metrics-equal-tailed-level", lambda: equal_tailed([1.0, 2.0], 90), "raises", V,
     r"level"),
    # ---- cross-fitted NC-ECE
    ("metrics-crossfit-nan-folds", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(),
        folds=np.where(np.arange(60) < 5, np.nan, np.arange(60) % 3)), "raises", V, r"folds"),
    ("metrics-crossfit-one-fold", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), folds=np.zeros(60)), "raises", V,
     r"folds"),
    ("metrics-crossfit-folds-length", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), folds=[0, 1]), "raises", V, r"folds"),
    ("metrics-crossfit-n-folds", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), n_folds=1), "raises", V, r"n_folds"),
    ("metrics-crossfit-probs-length", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(10), _ann()), "raises", V, r"probs"),
    ("metrics-crossfit-probs-range", lambda: nc.metrics.nc_ece_crossfit(
        np.linspace(-1, 1, 60), _ann()), "raises", V, r"probs"),
    ("metrics-crossfit-array-annotations", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(4), _A), "raises", V, r"annotations"),
    ("metrics-crossfit-level", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), level=90), "raises", V, r"level"),
    ("metrics-crossfit-seed", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), seed=2**64), "raises", V, r"seed"),
    ("metrics-crossfit-n-bins", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), n_bins=10**6), "raises", V, r"n_bins"),
    ("metrics-crossfit-n-folds-and-folds", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), n_folds=3, folds=np.arange(60) % 2),
     "raises", V, r"give n_folds or folds, not both"),
    ("metrics-crossfit-series-misaligned", lambda: nc.metrics.nc_ece_crossfit(
        pd.Series(np.random.default_rng(0).random(60), index=np.arange(60)[::-1]), _ann()),
     "raises", V, r"probs: the predictions' item ids do not match"),
    ("metrics-crossfit-items-misaligned", lambda: nc.metrics.nc_ece_crossfit(
        np.random.default_rng(0).random(60), _ann(), items=np.arange(1, 61)),
     "raises", V, r"items: the predictions' item ids do not match"),
    # ---- generic bootstrap and Estimate
    ("metrics-bootstrap-no-arrays", lambda: bootstrap(weighted_mean), "raises", V,
     r"arrays"),
    ("metrics-bootstrap-rows", lambda: bootstrap(weighted_mean, np.ones(3), np.ones(4)),
     "raises", V, r"arrays\[1\]"),
    ("metrics-bootstrap-n-boot", lambda: bootstrap(weighted_mean, np.ones(3), n_boot=0),
     "raises", V, r"n_boot"),
    ("metrics-bootstrap-level", lambda: bootstrap(weighted_mean, np.ones(3), level=90),
     "raises", V, r"level"),
    ("metrics-bootstrap-seed", lambda: bootstrap(weighted_mean, np.ones(3), seed=2**64),
     "raises", V, r"seed"),
    ("metrics-bootstrap-batch-size", lambda: bootstrap(weighted_mean, np.ones(3),
                                                       batch_size=-3), "raises", V,
     r"batch_size"),
    ("metrics-bootstrap-constant", lambda: bootstrap(weighted_mean, np.ones(5), n_boot=20),
     "status", None, r"degenerate"),
    ("metrics-bootstrap-nonfinite", lambda: bootstrap(weighted_mean, np.array([1.0, np.inf]),
                                                      n_boot=20), "raises", V, r"arrays"),
    ("metrics-correction-range-empty", lambda: correction_range([1.0], [0.1, 0.2], [0.9]),
     "raises", V, r"weights"),
    ("metrics-correction-range-observed-shape",
     lambda: correction_range([0.5, 0.5], [0.1, 0.2], [0.9, 0.8], np.ones((4, 3), bool)),
     "raises", V, r"observed must be a boolean \(n_items, 2\) mask"),
    # ---- bounds need identified channels and two classes; K > 2 intervals need their fits
    ("metrics-ece-bound-fit-not-ok",
     lambda: nc.ece(_Z, _corrected_from_failed_fit(), interval="bound", n_bins=2),
     "raises", V, r"interval='bound' needs identified channels.*'not_converged'"),
    ("metrics-ece-credible-k3", lambda: nc.ece(_P3, _k3_target(), interval="credible",
                                               n_bins=2),
     "raises", V, r"interval='credible' needs a corrected target built from a NUTS fit"),
    ("metrics-ece-bound-k3", lambda: nc.ece(_P3, _k3_target(), interval="bound", n_bins=2),
     "raises", V, r"interval='bound' is implemented for two classes only: the "
                  r"finite-sample bound .* is stated for two classes"),
    ("metrics-ece-refit-k3", lambda: nc.ece(_P3, _k3_target(), refit_channels=True,
                                            n_boot=10, n_bins=2),
     "raises", V, r"refit_channels=True needs a corrected target built from an annotator"),
    ("metrics-ece-refit-k3-debiased", lambda: nc.ece(_P3, _k3_target(), refit_channels=True,
                                                     n_boot=10, n_bins=2, norm="l2"),
     "raises", V, r"with 3 classes it needs the L1 top-label or classwise ECE"),
    ("metrics-targets-corrected-iv-k3-scalar-prevalence",
     lambda: _k3_target("iv", prevalence=0.3), "raises", V,
     r"prevalence for K = 3 classes must be a length-3 probability vector"),
]
