"""fit() takes engine objects whose fields cannot reach another engine; design statuses."""

import warnings

import numpy as np
import pytest

import noisycal as nc


@pytest.fixture(scope="module")
def ann():
    sim = nc.simulate.dawid_skene(200, [0.6, 0.4], np.array(
        [[[0.9, 0.1], [0.2, 0.8]], [[0.85, 0.15], [0.1, 0.9]], [[0.8, 0.2], [0.3, 0.7]]]),
        seed=0)
    return sim.annotations


MODELS = [nc.DawidSkene, nc.OneCoinDawidSkene, nc.GroupedDawidSkene,
          nc.annotators.ClassConditionalDawidSkene, nc.annotators.MACE,
          nc.annotators.HierarchicalDawidSkene, nc.annotators.ItemDifficultyModel,
          nc.HuiWalter]


def test_every_model_has_one_fit_shape():
    """The issue's goal: one ``fit`` signature, at most 8 parameters, for all eight models."""
    import inspect

    shape = ["self", "annotations", "method", "groups", "gold", "anchor", "seed", "progress"]
    for model in MODELS:
        params = inspect.signature(model.fit).parameters
        assert list(params) == shape, model.__name__
        assert all(p.kind is p.KEYWORD_ONLY for p in list(params.values())[2:])
        assert params["seed"].default == 0 and params["progress"].default is False


def test_issue_example_is_rejected(ann):
    """The call from the issue, EM options under MLE: an option cannot reach another engine
    (the MLE object has no such field), and a model refuses an engine it does not offer."""
    with pytest.raises(TypeError, match="n_starts"):
        nc.engines.MLE(n_starts=-5)
    with pytest.raises(ValueError,
                       match=r"MACE has no MLE engine \(method=MLE\(\)\); it offers 'em', 'nuts'"):
        nc.annotators.MACE().fit(ann, method=nc.engines.MLE())
    with pytest.raises(ValueError, match="method must be an engine object, not a class"):
        nc.DawidSkene().fit(ann, method=nc.engines.MLE)


@pytest.mark.parametrize("engine, name, value", [
    ("MLE", "init", "soft_vote"), ("MLE", "num_chains", 2), ("NUTS", "max_iter", 5),
    ("NUTS", "tol", 1e-3), ("NUTS", "n_boot", 5), ("EM", "num_samples", 10),
    ("EM", "progress_bar", False), ("EM", "chain_method", "sequential"),
])
def test_arguments_of_other_methods_are_rejected(engine, name, value):
    with pytest.raises(TypeError, match=name):
        getattr(nc.engines, engine)(**{name: value})


@pytest.mark.parametrize("kwargs, name", [
    (dict(seed=2**64), "seed"), (dict(method=nc.engines.EM(tol=1e-8), anchor="x"), "anchor"),
    (dict(anchor="nobody"), "anchor"), (dict(progress=1), "progress"),
])
def test_bad_values_name_the_argument(ann, kwargs, name):
    with pytest.raises(ValueError, match=name):
        nc.DawidSkene().fit(ann, **kwargs)


@pytest.mark.parametrize("make, name", [
    (lambda: nc.engines.EM(tol="1e-8"), "tol"), (lambda: nc.engines.EM(max_iter=0), "max_iter"),
    (lambda: nc.engines.EM(n_starts=0), "n_starts"),
    (lambda: nc.engines.MLE(tol=float("inf")), "tol"),
])
def test_bad_engine_values_name_the_field(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_mle_honours_max_iter(ann):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        fit = nc.DawidSkene().fit(ann, method=nc.engines.MLE(max_iter=2))
    assert fit.n_iter <= 2 and fit.details["max_iter"] == 2
    assert fit.status != "ok"


def test_unobserved_class_is_not_ok(ann):
    three = nc.Annotations.from_arrays(ann.item_index, ann.annotator_index, ann.label_index,
                                       classes=[0, 1, 2])
    with pytest.warns(nc.IdentifiabilityWarning, match=r"\[2\] never occur"):
        fit = nc.DawidSkene(3).fit(three, method=nc.engines.EM(n_starts=2))
    assert fit.status == "unobserved_class"
    ok = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2))
    assert ok.status == "ok"


def test_saturated_and_non_identified_designs(ann):
    two_items = nc.Annotations.from_wide(np.array([[0, 1, 1], [1, 1, 0]]))
    with pytest.warns(nc.IdentifiabilityWarning, match="saturated"):
        fit = nc.DawidSkene(2).fit(two_items, method=nc.engines.EM(n_starts=2))
    assert fit.status == "over_parametrised" and fit.n_params == 7
    # two binary annotators, no groups: 5 free parameters, 3 free pattern frequencies
    wide = ann.to_wide()[:, :2]
    with pytest.warns(nc.IdentifiabilityWarning, match="pattern frequencies"):
        fit2 = nc.DawidSkene(2).fit(nc.Annotations.from_wide(wide),
                                    method=nc.engines.EM(n_starts=2))
    assert fit2.status == "not_identified"
    # the same two annotators with two score groups is Hui-Walter: just identified
    groups = np.arange(ann.n_items) % 2
    fit3 = nc.GroupedDawidSkene(2).fit(nc.Annotations.from_wide(wide), groups=groups,
                                       method=nc.engines.EM(n_starts=2))
    assert fit3.status != "not_identified"


def test_summary_returns_the_table_and_never_prints(ann, capsys):
    fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2))
    summary = fit.summary()
    assert capsys.readouterr().out == ""
    assert summary.header["loglik"] == fit.loglik and summary.header["status"] == fit.status
    assert summary.header["aic"] == pytest.approx(fit.aic)
    assert len(summary.table("prevalence")) == 2
    assert len(summary.table("accuracy")) == 3 * ann.n_annotators  # two classes and the mean


def test_conf_int_rejects_refit_arguments_for_stored_draws(ann):
    fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2, n_boot=20))
    with pytest.raises(ValueError, match="n_boot applies"):
        fit.conf_int(0.9, n_boot=50)
    with pytest.raises(ValueError, match="seed applies"):
        fit.conf_int(0.9, seed=3)
    assert fit.conf_int(0.9).attrs["level"] == 0.9
