"""Properties of the metric entry points: references, corrupted inputs, labels, class orders,
pandas indexes and confidence levels (the oracle is in ``prop_support``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from prop_support import (
    NO_REFERENCE,
    argument_names,
    check_outcome,
    class_names,
    labels_for,
    one_hot,
    prob_matrices,
    props,
    ref_brier,
    ref_ece,
    ref_nll,
    run_property,
    with_defects,
)

import noisycal as nc

# the public metrics, each as (name, function, fixed keyword arguments); interval=None keeps
# every call one cheap pass
METRICS = {
    "ece": (nc.ece, {}),
    "ece_classwise": (nc.ece, {"kind": "classwise"}),
    "ece_l2": (nc.ece, {"norm": "l2"}),
    "mce": (nc.mce, {"min_count": 1}),
    "cmce": (nc.cmce, {}),
    "smooth_ece": (nc.smooth_ece, {}),
    "brier": (nc.brier, {}),
    "nll": (nc.nll, {}),
    "calibration_slope": (nc.calibration_slope, {}),
    "true_label_ece": (nc.true_label_ece, {}),
}
N_BINS = {"ece", "ece_classwise", "ece_l2", "mce", "cmce", "true_label_ece"}


def _call(name: str, probs, target, **kw):
    fn, fixed = METRICS[name]
    kwargs = {"interval": None, **fixed, **kw}
    if name in N_BINS and "n_bins" not in kwargs:
        kwargs["n_bins"] = 5
    return fn(probs, target, **kwargs)


def _canonical(name: str, p: np.ndarray, y, **kw):
    """The reference: the same metric on the float64 array and integer labels (or matrix),
    as a callable; NO_REFERENCE when that call is refused, not ok or not finite."""
    def run():
        try:
            est = _call(name, np.asarray(p, dtype=np.float64), y, **kw)
        except ValueError:
            return NO_REFERENCE
        value = float(est)
        return value if est.status == "ok" and np.isfinite(value) else NO_REFERENCE
    return run


def _outcome(name: str, call, reference=NO_REFERENCE, **kw):
    return check_outcome(call, METRICS[name][0], reference, **kw)


# ---------------------------------------------------------------- (1) reference values


@st.composite
def _valid_case(draw):
    p, style = draw(prob_matrices(n_max=40, k_max=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    how = draw(st.sampled_from(["random", "single", "all"]))
    y = labels_for(rng, p.shape[0], p.shape[1], how)
    n_bins = draw(st.sampled_from([1, 2, 5, 10, 15]))
    return p, y, n_bins


@st.composite
def _target_case(draw):
    """Valid probs, a target in one of its forms, and the target matrix it stands for."""
    p, y, n_bins = draw(_valid_case())
    n, k = p.shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    form = draw(st.sampled_from(["labels", "soft_matrix", "soft_target", "corrected"]))
    if form == "labels":
        return p, y, one_hot(y, k), n_bins
    t = rng.dirichlet(np.full(k, 0.5), size=n)
    if form == "soft_matrix":
        return p, t, t, n_bins
    if form == "soft_target":
        return p, nc.targets.soft(distribution=t), t, n_bins
    # a corrected target may leave [0, 1] (rows still sum to 1)
    c = t + rng.normal(0, 0.3, (n, k))
    c -= (c.sum(axis=1, keepdims=True) - 1) / k
    return p, nc.targets.from_matrix(c, kind="corrected"), c, n_bins


@pytest.mark.parametrize("kind", ["top_label", "classwise", "positive_class"])
@props(40)
@given(case=_target_case())
def test_binned_ece_equals_the_reference(kind, case):
    # valid inputs, degenerate ones included (one item, one class only, one-hot and tied
    # rows), against labels, soft and corrected targets: the ECE is the textbook binned
    # ECE of the target matrix, or the call says why not
    p, target, t, n_bins = case
    if kind == "positive_class":
        assume(p.shape[1] == 2)
    ref = ref_ece(p, t, n_bins, kind)
    check_outcome(lambda: nc.ece(p, target, n_bins=n_bins, kind=kind, interval=None),
                  nc.ece, ref)


@props(40)
@given(case=_valid_case(), min_count=st.sampled_from([1, 3, 20]))
def test_mce_equals_the_reference(case, min_count):
    # the largest gap over bins holding at least min_count items; none such: a status
    p, y, n_bins = case
    t = one_hot(y, p.shape[1])
    try:
        ref = ref_ece(p, t, n_bins, reduce="mce", min_count=min_count)
    except ValueError:  # no bin holds min_count items: the MCE is undefined
        ref = NO_REFERENCE
    check_outcome(lambda: nc.mce(p, y, n_bins=n_bins, min_count=min_count, interval=None),
                  nc.mce, ref)


@props(40)
@given(case=_target_case())
def test_brier_and_nll_equal_the_reference(case):
    # (against a corrected target the Brier score is the affine form
    # ||p||^2 - 2 p.T + 1, unbiased for the clean-label score: the docstring's choice)
    p, target, t, _ = case
    affine = getattr(target, "kind", None) == "corrected"
    check_outcome(lambda: nc.brier(p, target, interval=None), nc.brier,
                  ref_brier(p, t, affine=affine))
    nll = ref_nll(p, t)
    check_outcome(lambda: nc.nll(p, target, interval=None), nc.nll,
                  nll if np.isfinite(nll) else NO_REFERENCE)


LOGIT_FORMS = ["shifted", "binary", "both_given", "neither", "nan", "probs_as_logits"]


@pytest.mark.parametrize("form", LOGIT_FORMS)
def test_logits(form):
    # logits (rows shifted by any constant; binary: the log-odds) give the value of their
    # softmax probabilities; both or neither of probs/logits, or NaN logits, are refused
    def body(data):
        metric = data.draw(st.sampled_from(sorted(METRICS)), label="metric")
        p, _ = data.draw(prob_matrices(n_min=2, n_max=40, k_max=4, styles=("dirichlet",)))
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        y = labels_for(rng, p.shape[0], p.shape[1], "random")
        z = np.log(p) + rng.normal(0, 5, (p.shape[0], 1))
        kw, ref = {"logits": z}, _canonical(metric, p, y)
        if form == "binary":
            p1 = p[:, 0]
            y = (y == 0).astype(int)
            kw, ref = {"logits": np.log(p1 / (1 - p1))}, _canonical(metric, p1, y)
        elif form == "both_given":
            kw, ref = {"probs": p, "logits": z}, NO_REFERENCE
        elif form == "neither":
            kw, ref = {}, NO_REFERENCE
        elif form == "nan":
            z[0, 0] = np.nan
            ref = NO_REFERENCE
        elif form == "probs_as_logits":  # a warning, and the softmax of the numbers given
            e = np.exp(p) / np.exp(p).sum(axis=1, keepdims=True)
            kw, ref = {"logits": p}, _canonical(metric, e, y)
        fn, fixed = METRICS[metric]
        extra = {"n_bins": 5} if metric in N_BINS else {}
        check_outcome(lambda: fn(target=y, interval=None, **fixed, **extra, **kw), fn, ref,
                      rtol=1e-7, atol=1e-9)

    run_property(body, 10, key=form)


# bad values of the scalar arguments: each is refused naming its argument
BAD_ARGUMENTS = {
    "n_bins": [0, -1, 2.5, "5", True, None, 10_000],
    "kind": ["bogus", "topLabel", "positive"],
    "strategy": ["bogus", "equal_mass"],
    "norm": ["l3", 2, "L1x"],
    "debias": ["yes", 2],
    "estimator": ["bogus", "plugin"],
    "interval": ["bogus", 3, "bootstrapp"],
    "seed": ["x", 1.5, [1, 2, 3]],
    "cluster": ["length"],
    "items": ["length", "duplicates"],
    "classes": ["length", "duplicates"],
    "min_count": [0, -3, 2.5],
    "bandwidth": [-1.0, 0.0, float("nan")],
    "n_grid": [0, 1, -5],
    "variant": ["bogus"],
    "eps": [-1.0, 2.0, float("nan")],
    "weighted": ["yes"],
    "chunk_size": [0, -1],
    "form": ["bogus"],
    "n_draws": [0, -1],
}
_SCORES = ("brier", "nll", "calibration_slope")
# a parameter 'arg@m1,m2' tries the argument on those metrics only
ARGUMENT_PARAMS = sorted(BAD_ARGUMENTS) + [f"cluster@{','.join(_SCORES)}"]
ARGUMENT_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("param", with_defects(ARGUMENT_PARAMS, ARGUMENT_DEFECTS))
def test_bad_scalar_arguments(param):
    # a bad value of any scalar argument is refused naming that argument
    arg, _, only = param.partition("@")

    def body(data):
        takes = [m for m in sorted(METRICS)
                 if arg in argument_names(METRICS[m][0])
                 and (m in only.split(",") if only else not (arg == "cluster" and m in _SCORES))]
        metric = data.draw(st.sampled_from(takes), label="metric")
        bad = data.draw(st.sampled_from(BAD_ARGUMENTS[arg]), label="value")
        n = _P30.shape[0]
        if arg in ("cluster", "items"):
            bad = np.arange(n - 1) if bad == "length" else np.r_[np.arange(n - 1), 0]
        elif arg == "classes":
            bad = ["a", "b"] if bad == "length" else ["a", "a", "b"]
        if arg == "interval":
            call = lambda: METRICS[metric][0](_P30, _Y30, interval=bad)  # noqa: E731
        else:
            call = lambda: _call(metric, _P30, _Y30, **{arg: bad})  # noqa: E731
        check_outcome(call, {arg}, NO_REFERENCE)

    run_property(body, 8, key=param, shrink=param not in ARGUMENT_DEFECTS)


# ---------------------------------------------------------------- (2) corrupted predictions

INVALID_PROBS = ["nan", "inf", "neg_inf", "negative", "row_sum", "ndim3", "scalar", "empty",
                 "fewer_rows", "k_mismatch", "one_column", "strings", "complex", "ragged"]
VALID_PROBS = ["float32", "float16", "int_onehot", "bool_onehot", "list", "object", "fortran",
               "readonly", "unused_column", "jax"]


def _corrupt(kind: str, p: np.ndarray, y: np.ndarray, rng: np.random.Generator):
    """(probs, target, reference probs or None) for one corruption of a valid ``p``."""
    n, k = p.shape
    i, j = int(rng.integers(0, n)), int(rng.integers(0, k))
    q = p.copy()
    if kind in ("nan", "inf", "neg_inf"):
        q[i, j] = {"nan": np.nan, "inf": np.inf, "neg_inf": -np.inf}[kind]
        return q, y, None
    if kind == "negative":
        q[i] = 0.0
        q[i, j], q[i, (j + 1) % k] = -0.25, 1.25
        return q, y, None
    if kind == "row_sum":
        q[i] = q[i] * 1.05 if q[i].sum() > 0 else q[i] + 0.1
        return q, y, None
    if kind == "ndim3":
        return q[:, :, None], y, None
    if kind == "scalar":
        return np.float64(0.5), y, None
    if kind == "empty":
        return q[:0], y[:0], None
    if kind == "fewer_rows":
        return (q[:-1], y, None) if n > 1 else (q, np.r_[y, y], None)
    if kind == "k_mismatch":  # a target of K + 1 classes
        return q, nc.targets.hard(y, n_classes=k + 1), None
    if kind == "unused_column":  # a class no item is predicted or labelled as
        wide = np.hstack([q, np.zeros((n, 1))])
        return wide, y, wide
    if kind == "one_column":
        return np.ones((n, 1)), np.zeros(n, dtype=int), None
    if kind == "strings":
        return q.astype(str), y, None
    if kind == "complex":
        return q + 1e-3j, y, None
    if kind == "ragged":
        rows = [list(r) for r in q]
        rows[i] = rows[i][:-1]
        return rows, y, None
    # valid encodings of the same numbers
    if kind == "float32":
        q32 = q.astype(np.float32)
        return q32, y, q32.astype(np.float64)
    if kind == "float16":  # (only exact numbers are drawn for it)
        return q.astype(np.float16), y, q
    if kind == "int_onehot":
        oh = np.eye(k, dtype=np.int64)[y]
        return oh, y, oh.astype(np.float64)
    if kind == "bool_onehot":
        oh = np.eye(k, dtype=bool)[y]
        return oh, y, oh.astype(np.float64)
    if kind == "list":
        return q.tolist(), y, q
    if kind == "object":
        return q.astype(object), y, q
    if kind == "fortran":
        return np.asfortranarray(q), y, q
    if kind == "jax":
        import jax.numpy as jnp

        z = jnp.asarray(q)  # float32 unless JAX runs in 64-bit mode
        return z, y, np.asarray(z).astype(np.float64)
    if kind == "readonly":
        q.setflags(write=False)
        return q, y, p
    raise AssertionError(kind)


@st.composite
def _corruption_case(draw, kind):
    styles = ("grid", "onehot") if kind == "float16" else ("grid", "dirichlet", "onehot")
    p, style = draw(prob_matrices(n_min=2, n_max=40, k_max=5, styles=styles))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = labels_for(rng, p.shape[0], p.shape[1], "random")
    return p, y, kind, rng


PROBS_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(INVALID_PROBS + VALID_PROBS, PROBS_DEFECTS))
def test_corrupted_predictions(kind):
    # an invalid prediction matrix is refused by name or gets a non-ok status; a valid
    # re-encoding (dtype, list, layout, an unused class) gives the value of the float64 array
    def body(data):
        metric = data.draw(st.sampled_from(sorted(METRICS)), label="metric")
        p, y, _, rng = data.draw(_corruption_case(kind), label="case")
        probs, target, ref_p = _corrupt(kind, p, y, rng)
        ref = NO_REFERENCE if ref_p is None else _canonical(metric, ref_p, y)
        _outcome(metric, lambda: _call(metric, probs, target), ref)

    run_property(body, 12, key=kind, shrink=kind not in PROBS_DEFECTS)


# ---------------------------------------------------------------- (3) label encodings

LABEL_VARIANTS = ["float_int", "object_int", "int32", "uint8", "bool", "high", "negative",
                  "nan", "inf", "fraction", "strings_no_classes", "strings_with_classes",
                  "string_unknown", "categorical_declared", "categorical_undeclared",
                  "categorical_nan", "categorical_with_classes", "onehot_matrix",
                  "target_hard", "shorter", "column_vector", "int_classes",
                  "int_classes_permuted", "none", "nullable_int", "nullable_int_na",
                  "string_dtype", "categorical_extra_category", "list"]


def _label_variant(kind: str, p: np.ndarray, y: np.ndarray, names: np.ndarray, perm,
                   rng: np.random.Generator):
    """(target, extra kwargs, reference (probs, labels) or None) for a label encoding."""
    n, k = p.shape
    i = int(rng.integers(0, n))
    yn = names[y]
    if kind == "float_int":
        return y.astype(float), {}, (p, y)
    if kind == "object_int":
        return y.astype(object), {}, (p, y)
    if kind == "int32":
        return y.astype(np.int32), {}, (p, y)
    if kind == "uint8":
        return y.astype(np.uint8), {}, (p, y)
    if kind == "bool":  # False/True read as classes 0 and 1
        return y.astype(bool), {}, (p, y.astype(bool).astype(int))
    if kind in ("high", "negative"):
        z = y.copy()
        z[i] = k if kind == "high" else -1
        return z, {}, None
    if kind in ("nan", "inf"):
        z = y.astype(float)
        z[i] = np.nan if kind == "nan" else np.inf
        return z, {}, None
    if kind == "fraction":
        z = y.astype(float)
        z[i] = 0.5
        if k == 2:  # a binary float vector that is not all integers is the target t
            return z, {}, (p, np.c_[1 - z, z])
        return z, {}, None
    if kind == "strings_no_classes":
        present = sorted(set(yn))
        if len(present) == k:  # sorted unique labels are the classes
            order = np.array(sorted(names))
            return yn, {}, (p, np.searchsorted(order, yn))
        return yn, {}, None
    if kind == "strings_with_classes":
        return yn, {"classes": names}, (p, y)
    if kind == "string_unknown":
        z = yn.copy()
        z[i] = "not-a-class"
        return z, {"classes": names}, None
    if kind == "categorical_declared":
        return pd.Categorical(yn, categories=list(names)), {}, (p, y)
    if kind == "categorical_undeclared":
        cat = pd.Categorical(yn)
        if len(cat.categories) == k:
            return cat, {}, (p, np.searchsorted(np.array(sorted(names)), yn))
        return cat, {}, None
    if kind == "categorical_nan":
        z = yn.copy()
        z[i] = None
        return pd.Categorical(z, categories=list(names)), {}, None
    if kind == "categorical_with_classes":
        cat = pd.Categorical(yn, categories=list(names[perm]))
        return cat, {"classes": names}, (p, y)
    if kind == "onehot_matrix":
        return one_hot(y, k), {}, (p, y)
    if kind == "target_hard":
        return nc.targets.hard(y, n_classes=k), {}, (p, y)
    if kind == "shorter":
        return (y[:-1], {}, None) if n > 1 else (np.r_[y, y], {}, None)
    if kind == "column_vector":
        return y[:, None], {}, None
    if kind == "int_classes":
        ints = np.array([10, 3, 7, 42, 5, 8][:k])
        return ints[y], {"classes": ints}, (p, y)
    if kind == "int_classes_permuted":
        # classes are a permutation of 0..K-1: labels are class names, not column indices
        cls = np.asarray(perm)
        return cls[y], {"classes": cls}, (p, y)
    if kind == "none":
        return None, {}, None
    if kind == "nullable_int":
        return pd.array(y, dtype="Int64"), {}, (p, y)
    if kind == "nullable_int_na":
        z = pd.array(y, dtype="Int64")
        z[i] = pd.NA
        return z, {}, None
    if kind == "string_dtype":
        return pd.array(yn.astype(str), dtype="string"), {"classes": names}, (p, y)
    if kind == "categorical_extra_category":  # K + 1 categories for K columns
        return pd.Categorical(yn, categories=[*names, "extra"]), {}, None
    if kind == "list":
        return y.tolist(), {}, (p, y)
    raise AssertionError(kind)


@st.composite
def _label_case(draw, kind):
    p, _ = draw(prob_matrices(n_min=2, n_max=40, k_max=5, styles=("dirichlet",)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = p.shape[1]
    y = labels_for(rng, p.shape[0], k, draw(st.sampled_from(["random", "all"])))
    names = class_names(draw, k)
    perm = draw(st.permutations(range(k)))
    return p, y, names, perm, kind, rng


LABEL_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(LABEL_VARIANTS, LABEL_DEFECTS))
def test_label_encodings(kind):
    # labels as floats, objects, strings, categoricals, one-hot rows or a Target give the
    # value of the integer labels; labels outside the class set, NaN, a wrong length or
    # shape are refused by name
    def body(data):
        metric = data.draw(st.sampled_from(sorted(METRICS)), label="metric")
        p, y, names, perm, _, rng = data.draw(_label_case(kind), label="case")
        target, kw, ref_in = _label_variant(kind, p, y, names, perm, rng)
        ref = NO_REFERENCE if ref_in is None else _canonical(metric, ref_in[0], ref_in[1])
        _outcome(metric, lambda: _call(metric, p, target, **kw), ref)

    run_property(body, 12, key=kind, shrink=kind not in LABEL_DEFECTS)


# ---------------------------------------------------------------- (4) class orders

CLASS_ORDER_VARIANTS = ["array_classes", "frame_classes", "frame_target", "frame_categorical",
                        "frame_int_columns", "frame_renamed", "target_other_order"]
# metrics whose value does not depend on the order of the columns (positive-class metrics
# of two classes do: their positive class is the second)
ORDER_FREE = ["ece", "ece_classwise", "ece_l2", "mce", "cmce", "brier", "nll", "smooth_ece",
              "true_label_ece"]


@st.composite
def _order_case(draw, kind):
    p, _ = draw(prob_matrices(n_min=2, n_max=40, k_min=3, k_max=6, styles=("dirichlet",)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = p.shape[1]
    y = labels_for(rng, p.shape[0], k, draw(st.sampled_from(["random", "all"])))
    names = class_names(draw, k)
    perm = np.array(draw(st.permutations(range(k)).filter(lambda q: list(q) != sorted(q))))
    return p, y, names, perm, kind


ORDER_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(CLASS_ORDER_VARIANTS, ORDER_DEFECTS))
def test_class_orders(kind):
    # the columns in another order, with the order said (classes=, a DataFrame's column
    # labels, a Target's or a Categorical's classes), give the value of the original order
    def body(data):
        metric = data.draw(st.sampled_from(ORDER_FREE), label="metric")
        case = data.draw(_order_case(kind), label="case")
        p, y, names, perm, _ = case
        yn = names[y]
        q = p[:, perm]
        ref = _canonical(metric, p, y)
        if kind == "array_classes":
            call = lambda: _call(metric, q, yn, classes=names[perm])  # noqa: E731
        elif kind == "frame_classes":
            df = pd.DataFrame(q, columns=list(names[perm]))
            call = lambda: _call(metric, df, yn, classes=names)  # noqa: E731
        elif kind == "frame_target":
            df = pd.DataFrame(q, columns=list(names[perm]))
            call = lambda: _call(metric, df, nc.targets.hard(yn, classes=names))  # noqa: E731
        elif kind == "frame_categorical":
            df = pd.DataFrame(q, columns=list(names[perm]))
            cat = pd.Categorical(yn, categories=list(names))
            call = lambda: _call(metric, df, cat)  # noqa: E731
        elif kind == "frame_int_columns":
            # integer column labels 0..K-1 in another order, integer labels and no classes=:
            # refused naming probs (read by position, each column would be taken as a class
            # other than its label); with classes= the labels match them, in any order
            df = pd.DataFrame(q, columns=list(perm))
            out = _outcome(metric, lambda: _call(metric, df, y), NO_REFERENCE)
            assert out.kind == "error" and "probs" in str(out.error), out
            call = lambda: _call(metric, df, y, classes=list(perm))  # noqa: E731
        elif kind == "frame_renamed":
            cols = list(names[perm])
            cols[0] = "renamed"
            df = pd.DataFrame(q, columns=cols)
            ref = NO_REFERENCE
            call = lambda: _call(metric, df, yn, classes=names)  # noqa: E731
        else:  # a Target whose class order differs from classes=: aligned or refused
            call = lambda: _call(metric, q, nc.targets.hard(yn, classes=names),  # noqa: E731
                                 classes=names[perm])
        _outcome(metric, call, ref)

    run_property(body, 12, key=kind, shrink=kind not in ORDER_DEFECTS)


# ---------------------------------------------------------------- (5) pandas indexes

INDEX_VARIANTS = ["same", "target_shuffled", "probs_shuffled", "mismatch", "duplicated",
                  "target_array", "probs_array", "items_shuffled", "target_object_shuffled",
                  "target_range_index"]


@st.composite
def _index_case(draw, kind):
    p, _ = draw(prob_matrices(n_min=2, n_max=40, k_max=4, styles=("dirichlet", "grid")))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, k = p.shape
    y = labels_for(rng, n, k, "random")
    if draw(st.booleans()):
        ids = np.array([f"item{v}" for v in rng.permutation(10 * n)[:n]], dtype=object)
    else:
        ids = rng.permutation(10 * n)[:n] + 100
    shuffle = rng.permutation(n)
    assume(not np.array_equal(shuffle, np.arange(n)))
    return p, y, ids, shuffle, kind


INDEX_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(INDEX_VARIANTS, INDEX_DEFECTS))
def test_pandas_indexes(kind):
    # predictions and target with item ids: the same ids in another order are aligned by id
    # or refused by name, never paired by position; different ids are refused
    def body(data):
        metric = data.draw(st.sampled_from(sorted(METRICS)), label="metric")
        p, y, ids, s, _ = data.draw(_index_case(kind), label="case")
        ref = _canonical(metric, p, y)
        df = pd.DataFrame(p, index=pd.Index(ids))
        ser = pd.Series(y, index=pd.Index(ids))
        kw = {}
        if kind == "same":
            probs, target = df, ser
        elif kind == "target_shuffled":
            probs, target = df, ser.iloc[s]
        elif kind == "probs_shuffled":
            probs, target = df.iloc[s], ser
        elif kind == "mismatch":
            other = ids.copy()
            other[0] = "unknown" if other.dtype == object else -1
            probs, target, ref = df, pd.Series(y, index=pd.Index(other)), NO_REFERENCE
        elif kind == "duplicated":
            dup = ids.copy()
            dup[-1] = dup[0]
            probs, target = pd.DataFrame(p, index=dup), pd.Series(y, index=dup)
        elif kind == "target_array":
            probs, target = df, y
        elif kind == "probs_array":
            probs, target = p, ser
        elif kind == "items_shuffled":
            # items= in another order than the Target's ids
            probs, target = p[s], nc.targets.hard(ser, n_classes=p.shape[1])
            kw = {"items": ids[s]}
        elif kind == "target_object_shuffled":
            probs, target = df, nc.targets.hard(ser.iloc[s], n_classes=p.shape[1])
        else:  # a target with a default RangeIndex is read by position
            probs, target = df, pd.Series(y)
        _outcome(metric, lambda: _call(metric, probs, target, **kw), ref)

    run_property(body, 12, key=kind, shrink=kind not in INDEX_DEFECTS)


# ---------------------------------------------------------------- (6) confidence levels

INVALID_LEVELS = [95, 90.0, 1.0, 0.0, -0.1, 1.5, float("nan"), float("inf"), "0.9", None,
                  True, [0.9]]
VALID_LEVELS = [0.5, 0.8, 0.9, 0.95, 0.99]
_P30 = np.random.default_rng(3).dirichlet(np.ones(3), size=30)
_Y30 = np.random.default_rng(4).integers(0, 3, 30)


CHEAP_INTERVALS = {  # metric -> an interval that computes in milliseconds at n = 30
    "ece": nc.intervals.Bootstrap(n_boot=20, scheme="binned"),
    "ece_l2": nc.intervals.Bootstrap(n_boot=20, scheme="binned"),
    "mce": nc.intervals.Bootstrap(n_boot=20, scheme="binned"),
    "brier": "auto",
    "nll": "auto",
}
LEVEL_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("level", with_defects(
    [repr(v) for v in INVALID_LEVELS] + ["valid"], LEVEL_DEFECTS))
def test_confidence_levels(level):
    # a level is a fraction in (0, 1): 95 for 'percent', 0, 1, NaN and non-numbers are
    # refused naming level (before any interval is computed); a valid level leaves the
    # point estimate as it is and gives a finite interval
    def body(data):
        if level == "valid":
            metric = data.draw(st.sampled_from(sorted(CHEAP_INTERVALS)), label="metric")
            value = data.draw(st.sampled_from(VALID_LEVELS), label="level")
            interval = CHEAP_INTERVALS[metric]
            ref, names = _canonical(metric, _P30, _Y30), METRICS[metric][0]
        else:
            metric = data.draw(st.sampled_from(sorted(METRICS)), label="metric")
            value = INVALID_LEVELS[[repr(v) for v in INVALID_LEVELS].index(level)]
            interval = data.draw(st.sampled_from(["auto", nc.intervals.Bootstrap(n_boot=20)]))
            ref, names = NO_REFERENCE, {"level"}
        out = check_outcome(
            lambda: _call(metric, _P30, _Y30, interval=interval, level=value), names, ref)
        if out.kind == "value":
            lo, hi = out.result.interval
            assert np.isfinite(lo) and np.isfinite(hi) and lo <= hi, out.result.interval

    run_property(body, 6, key=level, shrink=level not in LEVEL_DEFECTS)


# ---------------------------------------------------------------- (7) report

_REPORTED = ("ece", "mce", "brier", "nll", "calibration_slope")


@pytest.mark.parametrize("kind", ["nan", "negative", "row_sum", "empty", "fewer_rows",
                                  "float32", "list", "int_onehot"])
def test_report_rows(kind):
    # every row of a report is the metric's own value, or carries a non-ok status; an
    # invalid input is refused by name or leaves no row ok
    def body(data):
        p, y, _, rng = data.draw(_corruption_case(kind), label="case")
        probs, target, ref_p = _corrupt(kind, p, y, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rep = nc.report(probs, target, metrics=_REPORTED, interval=None)
            except ValueError as exc:
                assert any(a in str(exc) for a in ("probs", "target", "logits")), str(exc)
                return
        assert len(rep) == len(_REPORTED)
        for name, (_, row) in zip(_REPORTED, rep.iterrows(), strict=True):
            if row["status"] != "ok":
                assert str(row["message"]).strip()
                continue
            assert ref_p is not None, f"report row {row['metric']} ok on invalid probs ({kind})"
            want = float(getattr(nc, name)(ref_p, y, interval=None))
            assert np.isclose(row["estimate"], want, rtol=1e-9, atol=1e-12), (row, want)

    run_property(body, 4, key=kind)
