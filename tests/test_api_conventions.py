"""The API conventions table of the README, one test per row (metrics and targets)."""

import inspect

import numpy as np
import pandas as pd
import pytest

import noisycal as nc
from noisycal.engines.summary import Summary

METRICS = [nc.ece, nc.mce, nc.true_label_ece, nc.brier, nc.nll, nc.calibration_slope,
           nc.calibration_intercept, nc.smooth_ece]


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
def test_seed_level_interval_everywhere(metric):
    params = inspect.signature(metric).parameters
    assert {"seed", "level", "interval"} <= set(params)
    # the interval's own settings live in its option object (nc.intervals)
    assert not {"n_boot", "method", "bootstrap", "rebin", "batch_size", "devices"} & set(params)
    assert not {"random_state", "alpha", "n_resamples", "confidence"} & set(params)
    z, y = _binary(50)
    with pytest.raises(ValueError, match="level"):
        metric(z, y, level=90)


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_method_names_the_bootstrap_interval_rule_only(metric):
    z, y = _binary(50)
    with pytest.raises(ValueError, match=r"method must be one of \('percentile', 'basic', "
                                         r"'bca'\)"):
        metric(z, y, interval=nc.intervals.Bootstrap(method="wald"))
    other = nc.intervals.Wald() if metric is nc.ece else nc.intervals.Credible()
    with pytest.raises(ValueError, match=r"does not offer interval=(Wald|Credible)\(\)"):
        metric(z, y, interval=other)
    doc = inspect.getdoc(metric)
    assert "Bootstrap" in doc


def test_a_1d_float_target_is_read_like_a_1d_probability():
    z, y = _binary()
    t = np.clip(y * 0.8 + 0.1 + np.random.default_rng(1).normal(0, 0.05, y.size), 0, 1)
    T = np.column_stack([1 - t, t])
    for metric in (nc.ece, nc.mce, nc.brier, nc.nll):
        a = float(metric(z, t, interval=None))
        b = float(metric(z, T, interval=None))
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)
    # corrected (outside [0, 1]) targets are declared by kind='corrected' (issue 23): a
    # plain vector or matrix outside [0, 1] is refused
    u = t * 1.4 - 0.2
    U = nc.targets.from_matrix(np.column_stack([1 - u, u]), kind="corrected")
    assert np.isfinite(float(nc.ece(z, U, interval=None)))
    for raw in (u, np.column_stack([1 - u, u])):
        with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
            nc.ece(z, raw, interval=None)
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
    assert float(nc.ece(logits=logits, target=cat, classes=classes, interval=None)) == \
        pytest.approx(ref, rel=1e-12)
    # without classes= a Categorical is refused as the string array is: its categories'
    # order is not taken as the column order (it was before the "nothing silent" issue)
    for unordered in (cat, labels):
        with pytest.raises(ValueError, match="classes"):
            nc.ece(logits=logits, target=unordered, interval=None)
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


# ---------------------------------------------------------------- results
def _results():
    """One of every fitted result type, as small as will fit."""
    import numpyro
    import numpyro.distributions as dist

    from noisycal.engines.density.mle import fit_map
    from noisycal.engines.density.nuts import run_nuts

    ds = nc.datasets.load_dawid_skene_1979()
    em = nc.DawidSkene(4).fit(ds, method=nc.engines.EM(n_starts=2, n_boot=20), seed=0)
    nuts = nc.DawidSkene(4).fit(ds, method=nc.engines.NUTS(num_chains=2, num_warmup=60,
                                                           num_samples=60), seed=0)
    y = np.random.default_rng(0).normal(1.0, 2.0, 40)

    def normal(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    mle = fit_map(normal, model_args=(y,), seed=0)
    engine_nuts = run_nuts(normal, model_args=(y,), num_chains=2, num_warmup=60,
                           num_samples=60, progress_bar=False, seed=0, rhat_threshold=2.0)
    z, t = _binary(200)
    est = nc.ece(z, t, interval=nc.intervals.Inversion(n_boot=200))
    return {"em": em, "nuts": nuts, "mle": mle, "engine_nuts": engine_nuts, "estimate": est}


@pytest.fixture(scope="module")
def results():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains may warn; the API is what is tested
        return _results()


@pytest.mark.parametrize("name", ["em", "nuts", "mle", "engine_nuts", "estimate"])
def test_summary_returns_tables_and_never_prints(results, name, capsys):
    summary = results[name].summary()
    if name in ("em", "nuts"):  # annotator fits: a printable Summary of compact tables
        assert isinstance(summary, Summary)
        assert len(summary.tables) > 0 and "status" in summary.header
        assert all(isinstance(t, pd.DataFrame) and len(t) > 0 for t in summary.tables)
    else:
        assert isinstance(summary, pd.DataFrame) and len(summary) > 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("name", ["em", "nuts", "mle", "engine_nuts", "estimate"])
def test_every_fitted_result_has_a_tidy_frame(results, name):
    frame = results[name].to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) > 0
    assert isinstance(frame.index, pd.RangeIndex)  # tidy: identifiers are columns


@pytest.mark.parametrize("name", ["nuts", "engine_nuts"])
def test_bayesian_results_convert_to_arviz(results, name):
    idata = results[name].to_arviz()
    assert "posterior" in idata.groups()


@pytest.mark.parametrize("name", ["em", "nuts", "engine_nuts"])
def test_conf_int_wherever_draws_exist(results, name):
    narrow = results[name].conf_int(level=0.5)
    wide = results[name].conf_int(level=0.9)
    lo = [c for c in wide.columns if c in ("low", "lower")][0]
    hi = [c for c in wide.columns if c in ("high", "upper")][0]
    assert np.all(wide[lo].to_numpy() <= narrow[lo].to_numpy() + 1e-12)
    assert np.all(wide[hi].to_numpy() >= narrow[hi].to_numpy() - 1e-12)
    assert np.any(wide[hi].to_numpy() - wide[lo].to_numpy() > 0)
    with pytest.raises(ValueError, match="level"):
        results[name].conf_int(level=90)


def test_targets_have_a_frame_with_item_ids_and_classes():
    ann = nc.Annotations.from_long(pd.DataFrame({"item": ["b", "b", "a"], "annotator": [1, 2, 1],
                                                 "label": ["cat", "dog", "dog"]}),
                                   item="item", annotator="annotator", label="label",
                                   classes=["dog", "cat"])
    frame = nc.targets.soft(ann).to_frame()
    assert list(frame.index) == ["b", "a"] and list(frame.columns) == ["dog", "cat"]
    np.testing.assert_allclose(frame.to_numpy(), [[0.5, 0.5], [1.0, 0.0]])


def test_warnings_point_at_the_caller_from_any_depth_of_the_package():
    # user_stacklevel counts the frames inside noisycal (and noisycal.models) from the
    # package's root, wherever the warning is raised (a metric here, several folders deep)
    import warnings

    import numpy as np

    import noisycal as nc

    p = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    t = nc.targets.from_matrix(np.array([[1.2, -0.2], [0.0, 1.0], [-0.1, 1.1]]),
                               kind="corrected")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        nc.nll(p, t, interval=None)
    assert rec and all(r.filename == __file__ for r in rec), [r.filename for r in rec]
