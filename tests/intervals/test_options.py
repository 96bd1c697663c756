"""The option objects: interval kinds (noisycal.intervals) and engines (noisycal.engines)
check their own fields, strings are shorthands for the defaults, and a kind a function
does not offer is refused by name."""

import numpy as np
import pytest

import noisycal as nc
from noisycal.engines.methods import as_method
from noisycal.intervals.options import as_interval

IV = nc.intervals
E = nc.engines


def test_string_shorthands_are_the_defaults():
    offered = (IV.Inversion, IV.Bootstrap, IV.Bound, IV.Refit, IV.Credible)
    for name, cls in (("inversion", IV.Inversion), ("bootstrap", IV.Bootstrap),
                      ("bound", IV.Bound), ("refit", IV.Refit), ("credible", IV.Credible)):
        got = as_interval(name, offered, default=IV.Inversion(), where="ece")
        assert type(got) is cls and repr(got) == f"{cls.__name__}()"
    assert as_interval("auto", offered, default=IV.Inversion(n_boot=500), where="ece") \
        == IV.Inversion(n_boot=500)
    assert as_interval(None, offered, default=IV.Inversion(), where="ece") is None
    for name, cls in (("em", E.EM), ("mle", E.MLE), ("nuts", E.NUTS)):
        assert as_method(name, (E.EM, E.MLE, E.NUTS), where="DawidSkene") == cls()
    assert as_method(None, (E.NUTS,), where="HierarchicalDawidSkene") == E.NUTS()


@pytest.mark.parametrize("make, field", [
    (lambda: IV.Inversion(n_boot=99), "n_boot"),
    (lambda: IV.Bootstrap(n_boot=1), "n_boot"),
    (lambda: IV.Bootstrap(method="studentized"), "method"),
    (lambda: IV.Bootstrap(scheme="fast"), "scheme"),
    (lambda: IV.Bootstrap(rebin=1), "rebin"),
    (lambda: IV.Bootstrap(batch_size=0), "batch_size"),
    (lambda: IV.Bootstrap(devices=10**6), "devices"),
    (lambda: IV.Bootstrap(scheme="binned", rebin=True), "rebin"),
    (lambda: IV.Bound(kind="chernoff"), "kind"),
    (lambda: IV.Bound(mode="radius"), "channel_radius"),
    (lambda: IV.Bound(mode="oracle"), "true_channels"),
    (lambda: IV.Bound(channel_radius=float("nan")), "channel_radius"),
    (lambda: IV.Bound(true_channels=[[0.1, 2.0], [0.9, 0.8]]), "true_channels"),
    (lambda: IV.Bound(channel_radius=0.1, true_channels=([0.1], [0.9])), "channel_radius"),
    (lambda: IV.Bound(same_sample="yes"), "same_sample"),
    (lambda: IV.Refit(method="bca"), "method"),
    (lambda: IV.Refit(n_boot=50), "n_boot"),
    (lambda: IV.Refit(progress=None), "progress"),
    (lambda: IV.Simultaneous(n_boot=0), "n_boot"),
    (lambda: E.EM(init="kmeans"), "init"),
    (lambda: E.EM(n_starts=0), "n_starts"),
    (lambda: E.EM(tol=0), "tol"),
    (lambda: E.EM(n_boot=-1), "n_boot"),
    (lambda: E.EM(screen_gaps="no"), "screen_gaps"),
    (lambda: E.EM(weak_threshold=1.5), "weak_threshold"),
    (lambda: E.MLE(max_iter=0), "max_iter"),
    (lambda: E.NUTS(num_chains=0), "num_chains"),
    (lambda: E.NUTS(num_warmup=0), "num_warmup"),
    (lambda: E.NUTS(target_accept_prob=95), "target_accept_prob"),
    (lambda: E.NUTS(max_tree_depth=0), "max_tree_depth"),
    (lambda: E.NUTS(dense_mass="yes"), "dense_mass"),
    (lambda: E.NUTS(chain_method="threads"), "chain_method"),
    (lambda: E.NUTS(rhat_threshold=1.0), "rhat_threshold"),
])
def test_each_object_checks_its_own_fields(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_a_kind_not_offered_is_refused_by_name():
    with pytest.raises(ValueError, match=r"mce does not offer interval=Bound\(mode='radius'"):
        as_interval(IV.Bound(channel_radius=0.1), (IV.Simultaneous, IV.Bootstrap),
                    default=IV.Simultaneous(), where="mce")
    with pytest.raises(ValueError, match="not a class"):
        as_interval(IV.Bootstrap, (IV.Bootstrap,), default=None, where="ece")
    with pytest.raises(ValueError, match="interval must be one of"):
        as_interval("wilson", (IV.Bootstrap,), default=None, where="ece")
    with pytest.raises(ValueError, match="HierarchicalDawidSkene has no EM engine"):
        as_method(E.EM(), (E.NUTS,), where="HierarchicalDawidSkene")
    with pytest.raises(ValueError, match="method must be one of 'nuts'"):
        as_method("gibbs", (E.NUTS,), where="HierarchicalDawidSkene")


def test_bound_mode_follows_the_option_given():
    assert IV.Bound().mode == "binned_only"
    assert IV.Bound(channel_radius=0.05).mode == "radius"
    oracle = IV.Bound(true_channels=([0.1, 0.2], [0.8, 0.9]))
    assert oracle.mode == "oracle" and oracle.true_channels.shape == (2, 2, 2)
    np.testing.assert_allclose(oracle.true_channels[0], [[0.9, 0.1], [0.2, 0.8]],
                               rtol=0, atol=1e-15)


def test_objects_are_frozen_and_compare_by_value():
    b = IV.Bootstrap(n_boot=200)
    with pytest.raises(AttributeError):
        b.n_boot = 10
    assert b == IV.Bootstrap(n_boot=200) and b != IV.Bootstrap(n_boot=300)
    assert E.NUTS(num_chains=2) == E.NUTS(num_chains=2)
    assert repr(E.EM(n_starts=20, n_boot=200)) == "EM(n_starts=20, n_boot=200)"


def test_wald_checks_its_covariance_and_is_a_shorthand():
    assert as_interval("wald", (IV.Wald, IV.Bootstrap), default=IV.Wald(), where="brier") \
        == IV.Wald()
    assert repr(IV.Wald(cov_type="HC0")) == "Wald(cov_type='HC0')"
    with pytest.raises(ValueError, match="cov_type must be one of"):
        IV.Wald(cov_type="HC3")


def test_a_field_the_metric_does_not_use_is_refused_by_name():
    from noisycal.intervals.options import refuse_fields

    unused = {IV.Bootstrap: {"rebin": "no bins", "scheme": (("auto", "exact"), "exact only")}}
    refuse_fields(IV.Bootstrap(scheme="exact"), "cmce", unused)  # accepted values pass
    refuse_fields(IV.Inversion(n_boot=500), "cmce", unused)  # another kind: nothing to refuse
    with pytest.raises(ValueError, match=r"^cmce does not use Bootstrap\(rebin=True\): no bins"):
        refuse_fields(IV.Bootstrap(rebin=True), "cmce", unused)
    with pytest.raises(ValueError, match=r"cmce does not use Bootstrap\(scheme='binned'\)"):
        as_interval(IV.Bootstrap(scheme="binned"), (IV.Bootstrap,), default=None, where="cmce",
                    unused=unused)
