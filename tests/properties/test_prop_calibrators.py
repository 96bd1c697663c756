"""Properties of the recalibrators' ``fit`` / ``predict_proba`` (oracle in ``prop_support``):
corrupted inputs, degenerate targets, item order, class order and logits against probs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import strategies as st
from prop_support import (
    NO_REFERENCE,
    argument_names,
    check_outcome,
    one_hot,
    run_property,
    with_defects,
)

import noisycal as nc

cal = nc.calibrators
# name -> (class, binary only: 1-D positive-class scores)
CALIBRATORS = {
    "TemperatureScaling": (cal.TemperatureScaling, False),
    "VectorScaling": (cal.VectorScaling, False),
    "DirichletCalibration": (cal.DirichletCalibration, False),
    "MatrixScaling": (cal.MatrixScaling, False),
    "PlattScaling": (cal.PlattScaling, True),
    "BetaCalibration": (cal.BetaCalibration, True),
    "HistogramBinning": (cal.HistogramBinning, False),
    "IsotonicCalibration": (cal.IsotonicCalibration, False),
    "OneVsRestPlatt": (cal.OneVsRestPlatt, False),
    "OneVsRestIsotonic": (cal.OneVsRestIsotonic, False),
}
# sizes are few so the JAX-fitted calibrators compile a handful of programs
SIZES = (30,)


def _names(name: str) -> set[str]:
    cls = CALIBRATORS[name][0]
    return argument_names(cls) | argument_names(cls.fit) | argument_names(cls.predict_proba)


@st.composite
def _fit_case(draw, binary: bool, k_max: int = 3):
    """Calibration probs (n, K) (or (n,) for binary calibrators), labels, and test probs."""
    n = draw(st.sampled_from(SIZES))
    k = 2 if binary else draw(st.integers(2, k_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sharp = draw(st.sampled_from([0.3, 1.0, 3.0]))
    p = rng.dirichlet(np.full(k, sharp), size=n)
    p = np.clip(p, 1e-4, None)
    p /= p.sum(axis=1, keepdims=True)
    # labels drawn from the probabilities raised to 1/temperature: informative (every fit
    # has a finite optimum), over- or under-confident
    temp = draw(st.sampled_from([0.5, 1.0, 2.0]))
    w = p ** (1 / temp)
    w /= w.sum(axis=1, keepdims=True)
    y = (rng.random((n, 1)) > np.cumsum(w, axis=1)).sum(axis=1)
    y[:k] = np.arange(k)  # every class seen
    test = rng.dirichlet(np.ones(k), size=10)
    if binary:
        return p[:, 1], y, test[:, 1], rng
    return p, y, test, rng


@dataclass
class Fitted:
    """A fit and its predictions on the test scores, with the fit's status."""

    status_: str
    message_: str
    pred: np.ndarray


def _fit_predict(name: str, probs=None, target=None, test=None, logits=None,
                 test_logits=None) -> Fitted:
    cls = CALIBRATORS[name][0]
    if logits is not None:
        fitted = cls().fit(logits=logits, target=target)
        pred = fitted.predict_proba(logits=test_logits)
    else:
        fitted = cls().fit(probs=probs, target=target)
        pred = fitted.predict_proba(probs=test)
    return Fitted(fitted.status_, fitted.message_, np.asarray(pred))


def _reference(name: str, *args, transform=None, **kw):
    """The reference predictions (a zero-argument callable), NO_REFERENCE if not ok."""
    def run():
        try:
            fit = _fit_predict(name, *args, **kw)
        except ValueError:
            return NO_REFERENCE
        if fit.status_ != "ok":
            return NO_REFERENCE
        return fit.pred if transform is None else transform(fit.pred)
    return run


def _pred(fit: Fitted) -> np.ndarray:
    return fit.pred


def _is_probability(got) -> bool:
    got = np.asarray(got, dtype=float)
    if not np.all(np.isfinite(got)) or got.min() < -1e-12 or got.max() > 1 + 1e-12:
        return False
    return got.ndim == 1 or bool(np.allclose(got.sum(axis=1), 1.0, atol=1e-9))


FIT_VARIANTS = ["nan", "inf", "negative", "row_sum", "ndim3", "empty", "fewer_rows",
                "target_high", "target_nan", "target_fraction_k3", "binary_float_target_outside",
                "target_k_mismatch",
                "strings", "predict_nan", "predict_k_mismatch", "float32", "list",
                "target_onehot", "target_float_int", "single_class", "one_hot_probs",
                "two_items"]
FIT_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(FIT_VARIANTS, FIT_DEFECTS))
def test_calibrator_inputs(kind):
    # bad fit or predict inputs are refused by name; a valid re-encoding gives the same
    # predictions; a degenerate but valid target (one class, two items, one-hot scores)
    # gives finite probabilities or a refusal by name
    def body(data):
        name = data.draw(st.sampled_from(sorted(CALIBRATORS)), label="calibrator")
        binary = CALIBRATORS[name][1]
        p, y, test, rng = data.draw(_fit_case(binary), label="case")
        n = p.shape[0]
        i = int(rng.integers(0, n))
        probs, target, tst = p, y, test
        ref = _reference(name, p, y, test)
        equal = None
        if kind in ("nan", "inf", "negative", "row_sum", "ndim3", "strings"):
            probs = p.astype(float).copy()
            if kind == "ndim3":
                probs = probs[..., None]
            elif kind == "strings":
                probs = probs.astype(str)
            elif binary:
                probs[i] = {"nan": np.nan, "inf": np.inf, "negative": -0.2,
                            "row_sum": 1.2}[kind]
            else:
                if kind == "negative":
                    probs[i] = 0.0
                    probs[i, 0], probs[i, 1] = -0.25, 1.25
                else:
                    probs[i, 0] = {"nan": np.nan, "inf": np.inf, "row_sum": probs[i, 0] + 0.1
                                   }[kind]
            ref = NO_REFERENCE
        elif kind == "empty":
            probs, target, ref = p[:0], y[:0], NO_REFERENCE
        elif kind == "fewer_rows":
            probs, ref = p[:-1], NO_REFERENCE
        elif kind == "target_high":
            target = y.copy()
            target[i] = 2 if binary else p.shape[1]
            ref = NO_REFERENCE
        elif kind in ("target_nan", "target_fraction_k3"):
            target = y.astype(float)
            if kind == "target_fraction_k3" and (binary or p.shape[1] == 2):
                return  # a binary fraction is a soft target: valid
            target[i] = np.nan if kind == "target_nan" else 0.5
            ref = NO_REFERENCE
        elif kind == "binary_float_target_outside":
            # 1-D scores with a 1-D float target (the positive-class target t) that leaves
            # [0, 1] without being a corrected Target
            probs = p if binary else p[:, 1]
            tst = test if binary else test[:, 1]
            target = y.astype(float) if binary else (y == 1).astype(float)
            target[i] = data.draw(st.sampled_from([2.0, -1.0, 1.5]), label="outside")
            ref = NO_REFERENCE
        elif kind == "target_k_mismatch":
            k = 2 if binary else p.shape[1]
            target, ref = nc.targets.hard(y, n_classes=k + 1), NO_REFERENCE
        elif kind == "predict_nan":
            tst = test.copy()
            tst[0] = np.nan
            ref = NO_REFERENCE
        elif kind == "predict_k_mismatch":
            if binary:
                tst = np.c_[1 - test, test]  # a matrix where scores were fitted
            else:
                tst = np.hstack([test, np.zeros((test.shape[0], 1))])
            ref = NO_REFERENCE
        elif kind == "float32":
            probs = p.astype(np.float32)
            ref = _reference(name, probs.astype(np.float64), y, test)
            equal = lambda g, w: np.allclose(g, w, rtol=1e-5, atol=1e-7)  # noqa: E731
        elif kind == "list":
            probs = p.tolist()
        elif kind == "target_onehot":
            target = one_hot(y, 2 if binary else p.shape[1])
        elif kind == "target_float_int":
            target = y.astype(float)
        else:  # degenerate, valid: any probability output is acceptable
            if kind == "single_class":
                target = np.full(n, int(y[0]))
            elif kind == "two_items":
                probs, target = p[:2], np.array([0, 1])
            elif kind == "one_hot_probs":
                k = 2 if binary else p.shape[1]
                oh = one_hot(y, k) if not binary else y.astype(float)
                probs = oh
            ref = 0.0
            equal = lambda g, w: _is_probability(g)  # noqa: E731
        check_outcome(lambda: _fit_predict(name, probs, target, tst), _names(name), ref,
                      value=_pred, equal=equal or _close)

    run_property(body, 12, key=kind, shrink=kind not in FIT_DEFECTS)


def _close(got, want) -> bool:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return (got.shape == want.shape and bool(np.all(np.isfinite(got)))
            and np.allclose(got, want, rtol=1e-6, atol=1e-8))


# optimisers stop within their tolerance: a reordered sum may move the fit by that much
_FIT_TOL = {"rtol": 1e-4, "atol": 1e-5}
ORDER_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("name", with_defects(sorted(CALIBRATORS), ORDER_DEFECTS))
def test_calibrator_item_order(name):
    # the items' order does not change the fitted map
    def body(data):
        p, y, test, rng = data.draw(_fit_case(CALIBRATORS[name][1]), label="case")
        s = rng.permutation(p.shape[0])
        check_outcome(lambda: _fit_predict(name, p[s], y[s], test), _names(name),
                      _reference(name, p, y, test), value=_pred,
                      equal=lambda g, w: np.allclose(g, w, **_FIT_TOL))

    run_property(body, 5, key=name, shrink=name not in ORDER_DEFECTS)


MULTICLASS = sorted(k for k, (_, binary) in CALIBRATORS.items() if not binary)
CLASS_ORDER_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("name", with_defects(MULTICLASS, CLASS_ORDER_DEFECTS))
def test_calibrator_class_order(name):
    # renaming the classes (columns and labels permuted together) permutes the predictions
    def body(data):
        p, y, test, _ = data.draw(_fit_case(False), label="case")
        k = p.shape[1]
        perm = np.array(data.draw(st.permutations(range(k)), label="perm"))
        inv = np.argsort(perm)
        check_outcome(lambda: _fit_predict(name, p[:, perm], inv[y], test[:, perm]),
                      _names(name),
                      _reference(name, p, y, test, transform=lambda q: q[:, perm]),
                      value=_pred, equal=lambda g, w: np.allclose(g, w, **_FIT_TOL))

    run_property(body, 5, key=name, shrink=name not in CLASS_ORDER_DEFECTS)


LOGIT_DEFECTS: dict[str, str] = {}
# maps of softmax(logits) (or of logits / T) ignore a constant added to a row of logits
SHIFT_FREE = {"TemperatureScaling", "HistogramBinning", "IsotonicCalibration"}


@pytest.mark.parametrize("name", with_defects(sorted(CALIBRATORS), LOGIT_DEFECTS))
def test_calibrator_logits_equal_probs(name):
    # logits = log(probs) (binary: the log-odds) carry the same scores: the fitted map
    # predicts the same (or logits are refused by name); maps of softmax(logits) or of
    # logits / T also ignore a constant added to each row
    def body(data):
        binary = CALIBRATORS[name][1]
        p, y, test, rng = data.draw(_fit_case(binary), label="case")
        if binary:
            z, zt = np.log(p / (1 - p)), np.log(test / (1 - test))
        else:
            shift = 3.0 if name in SHIFT_FREE else 0.0
            z = np.log(p) + rng.normal(0, shift, (p.shape[0], 1))
            zt = np.log(test) + rng.normal(0, shift, (test.shape[0], 1))
        check_outcome(lambda: _fit_predict(name, target=y, logits=z, test_logits=zt),
                      _names(name), _reference(name, p, y, test), value=_pred,
                      equal=lambda g, w: np.allclose(g, w, **_FIT_TOL))

    run_property(body, 4, key=name, shrink=name not in LOGIT_DEFECTS)


BAD_SETTINGS = {
    "eps": [-1.0, 1.5, float("nan")],
    "bounds": [(5.0, 1.0), (1.0,), (1.0, float("inf"))],
    "loss": ["bogus"],
    "max_iter": [0, -1, 2.5],
    "n_bins": [0, -1, 2.5],
    "empty_bins": ["bogus"],
    "interpolation": ["bogus"],
    "reg_lambda": [-1.0, float("nan")],
    "reg_mu": [-1.0],
    "parameters": ["bogus"],
    "monotone": ["yes"],
}
SETTING_DEFECTS: dict[str, str] = {}
_P = np.random.default_rng(5).dirichlet(np.ones(3), size=30)
_Y = np.random.default_rng(6).integers(0, 3, 30)


@pytest.mark.parametrize("setting", with_defects(sorted(BAD_SETTINGS), SETTING_DEFECTS))
def test_calibrator_settings(setting):
    # a bad constructor setting is refused naming it (at construction or at fit)
    def body(data):
        takes = [m for m in sorted(CALIBRATORS)
                 if setting in argument_names(CALIBRATORS[m][0])]
        name = data.draw(st.sampled_from(takes), label="calibrator")
        bad = data.draw(st.sampled_from(BAD_SETTINGS[setting]), label="value")
        cls, binary = CALIBRATORS[name]
        p, y = (_P[:, 1], (_Y == 1).astype(int)) if binary else (_P, _Y)

        def call():
            fitted = cls(**{setting: bad}).fit(probs=p, target=y)
            return Fitted(fitted.status_, fitted.message_, fitted.predict_proba(probs=p))

        check_outcome(call, {setting}, NO_REFERENCE, value=_pred)

    run_property(body, 6, key=setting, shrink=setting not in SETTING_DEFECTS)
