"""The API conventions table of the README, one test per row (metrics and targets)."""

import inspect

import numpy as np
import pandas as pd
import pytest

import noisycal as nc

METRICS = [nc.ece, nc.mce, nc.true_label_ece, nc.brier, nc.nll, nc.calibration_slope,
           nc.calibration_intercept]


def _binary(n=300, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.05, 0.95, n)
    return z, (rng.random(n) < z).astype(int)


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_predictions_are_probs_or_logits_and_the_target_is_target(metric):
    params = inspect.signature(metric).parameters
    names = list(params)
    assert names[:2] == ["probs", "target"]
    assert "logits" in params and params["logits"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "soft_labels" not in params and "labels" not in params


def test_soft_targets_take_counts_or_distribution_not_probs():
    params = inspect.signature(nc.targets.soft).parameters
    assert {"counts", "distribution"} <= set(params) and "probs" not in params
    d = np.array([[0.25, 0.75], [1.0, 0.0]])
    np.testing.assert_array_equal(nc.targets.soft(distribution=d).values, d)
    with pytest.raises(TypeError):
        nc.targets.soft(probs=d)


@pytest.mark.parametrize("ctor", [nc.targets.soft, nc.targets.voted, nc.targets.corrected,
                                  nc.targets.posterior], ids=lambda f: f.__name__)
def test_target_constructors_take_the_annotations_first(ctor):
    assert next(iter(inspect.signature(ctor).parameters)) == "annotations"


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_seed_level_n_boot_everywhere(metric):
    params = inspect.signature(metric).parameters
    assert {"seed", "level", "n_boot", "method"} <= set(params)
    assert not {"random_state", "alpha", "n_resamples", "confidence"} & set(params)
    z, y = _binary(50)
    with pytest.raises(ValueError, match="level"):
        metric(z, y, level=90)


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_method_names_the_bootstrap_interval_rule_only(metric):
    z, y = _binary(50)
    with pytest.raises(ValueError, match=r"method must be one of \('percentile', 'basic', "
                                         r"'bca'\)"):
        metric(z, y, method="wald")
    doc = inspect.getdoc(metric)
    assert "percentile" in doc and "basic" in doc


def test_a_1d_float_target_is_read_like_a_1d_probability():
    z, y = _binary()
    t = np.clip(y * 0.8 + 0.1 + np.random.default_rng(1).normal(0, 0.05, y.size), 0, 1)
    T = np.column_stack([1 - t, t])
    for metric in (nc.ece, nc.mce, nc.brier, nc.nll):
        a = float(metric(z, t, interval=None))
        b = float(metric(z, T, interval=None))
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)
    # corrected (outside [0, 1]) targets too
    u = t * 1.4 - 0.2
    assert float(nc.ece(z, u, interval=None)) == pytest.approx(
        float(nc.ece(z, np.column_stack([1 - u, u]), interval=None)), rel=1e-12)
    # integral floats are labels, as before
    assert float(nc.ece(z, y.astype(float), interval=None)) == pytest.approx(
        float(nc.ece(z, y, interval=None)), rel=1e-12)


def test_string_and_categorical_labels_keep_the_given_class_order():
    rng = np.random.default_rng(3)
    classes = ["dog", "cat", "bird"]  # not sorted: the order of the logits' columns
    logits = rng.normal(size=(120, 3)) * 2
    y = rng.integers(0, 3, 120)
    labels = np.array(classes, dtype=object)[y]
    ref = float(nc.ece(logits=logits, target=y, interval=None))
    assert float(nc.ece(logits=logits, target=labels, classes=classes,
                        interval=None)) == pytest.approx(ref, rel=1e-12)
    cat = pd.Categorical(labels, categories=classes)
    assert float(nc.ece(logits=logits, target=cat, interval=None)) == pytest.approx(
        ref, rel=1e-12)
    h = nc.targets.hard(labels, classes=classes)
    assert list(h.classes) == classes
    np.testing.assert_array_equal(h.values, np.eye(3)[y])
    # a Categorical's declared (unused) categories are kept, in their order
    hc = nc.targets.hard(pd.Categorical(["b", "b"], categories=["c", "b", "a"]))
    assert list(hc.classes) == ["c", "b", "a"] and hc.values.tolist() == [[0, 1, 0]] * 2
    for metric in (nc.brier, nc.nll):
        assert float(metric(logits=logits, target=labels, classes=classes,
                            interval=None)) == pytest.approx(
            float(metric(logits=logits, target=y, interval=None)), rel=1e-12)
    with pytest.raises(ValueError, match="classes"):
        nc.ece(logits=logits, target=h, classes=["cat", "dog", "bird"], interval=None)


def test_voted_targets_from_string_labels():
    df = pd.DataFrame({"item": [1, 1, 1, 2, 2, 2], "annotator": list("abcabc"),
                       "label": ["yes", "yes", "no", "no", "no", "yes"]})
    ann = nc.Annotations.from_long(df)
    v = nc.targets.voted(ann)
    yes = list(ann.classes).index("yes")
    assert v.values[0, yes] == 1.0 and v.values[1, yes] == 0.0
    assert list(v.classes) == list(ann.classes)
