"""fit() validates every method-specific argument for its method; design statuses."""

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


def test_issue_example_is_rejected(ann):
    """The call from the issue: every EM-only argument is named under method='mle'."""
    kw = dict(method="mle", gold={ann.items[0].item(): 0}, n_starts=-5, n_boot=-1,
              screen_gaps="yes")
    with pytest.raises(ValueError, match="n_starts applies to method='em' only"):
        nc.DawidSkene().fit(ann, **kw)
    del kw["n_starts"]
    with pytest.raises(ValueError, match="n_boot applies to method='em' only"):
        nc.DawidSkene().fit(ann, **kw)
    del kw["n_boot"]
    with pytest.raises(ValueError, match="screen_gaps applies to method='em' only"):
        nc.DawidSkene().fit(ann, **kw)


@pytest.mark.parametrize("method, name, value", [
    ("mle", "init", "soft_vote"), ("mle", "num_chains", 2), ("nuts", "max_iter", 5),
    ("nuts", "tol", 1e-3), ("nuts", "n_boot", 5), ("em", "num_samples", 10),
    ("em", "progress_bar", False), ("em", "chain_method", "sequential"),
])
def test_arguments_of_other_methods_are_rejected(ann, method, name, value):
    with pytest.raises(ValueError, match=f"^{name} applies to method="):
        nc.DawidSkene().fit(ann, method=method, **{name: value})


@pytest.mark.parametrize("kwargs, name", [
    (dict(seed=2**64), "seed"), (dict(tol="1e-8"), "tol"), (dict(max_iter=0), "max_iter"),
    (dict(n_starts=0), "n_starts"), (dict(anchor=1), "anchor"),
    (dict(method="mle", tol=float("inf")), "tol"),
])
def test_bad_values_name_the_argument(ann, kwargs, name):
    with pytest.raises(ValueError, match=name):
        nc.DawidSkene().fit(ann, **kwargs)


def test_mle_honours_max_iter(ann):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        fit = nc.DawidSkene().fit(ann, method="mle", max_iter=2)
    assert fit.n_iter <= 2 and fit.details["max_iter"] == 2
    assert fit.status != "ok"


def test_unobserved_class_is_not_ok(ann):
    three = nc.Annotations.from_arrays(ann.item_index, ann.annotator_index, ann.label_index,
                                       classes=[0, 1, 2])
    with pytest.warns(nc.IdentifiabilityWarning, match=r"\[2\] never occur"):
        fit = nc.DawidSkene(3).fit(three, n_starts=2)
    assert fit.status == "unobserved_class"
    ok = nc.DawidSkene(2).fit(ann, n_starts=2)
    assert ok.status == "ok"


def test_saturated_and_non_identified_designs(ann):
    two_items = nc.Annotations.from_wide(np.array([[0, 1, 1], [1, 1, 0]]))
    with pytest.warns(nc.IdentifiabilityWarning, match="saturated"):
        fit = nc.DawidSkene(2).fit(two_items, n_starts=2)
    assert fit.status == "over_parametrised" and fit.n_params == 7
    # two binary annotators, no groups: 5 free parameters, 3 free pattern frequencies
    wide = ann.to_wide()[:, :2]
    with pytest.warns(nc.IdentifiabilityWarning, match="pattern frequencies"):
        fit2 = nc.DawidSkene(2).fit(nc.Annotations.from_wide(wide), n_starts=2)
    assert fit2.status == "not_identified"
    # the same two annotators with two score groups is Hui-Walter: just identified
    groups = np.arange(ann.n_items) % 2
    fit3 = nc.GroupedDawidSkene(2).fit(nc.Annotations.from_wide(wide), groups=groups,
                                       n_starts=2)
    assert fit3.status != "not_identified"


def test_summary_returns_the_table_and_never_prints(ann, capsys):
    fit = nc.DawidSkene(2).fit(ann, n_starts=2)
    summary = fit.summary()
    assert capsys.readouterr().out == ""
    assert summary.header["loglik"] == fit.loglik and summary.header["status"] == fit.status
    assert summary.header["aic"] == pytest.approx(fit.aic)
    assert len(summary.table("prevalence")) == 2
    assert len(summary.table("accuracy")) == 3 * ann.n_annotators  # two classes and the mean


def test_conf_int_rejects_refit_arguments_for_stored_draws(ann):
    fit = nc.DawidSkene(2).fit(ann, n_starts=2, n_boot=20)
    with pytest.raises(ValueError, match="n_boot applies"):
        fit.conf_int(0.9, n_boot=50)
    with pytest.raises(ValueError, match="seed applies"):
        fit.conf_int(0.9, seed=3)
    assert fit.conf_int(0.9).attrs["level"] == 0.9
