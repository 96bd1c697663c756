"""NUTS fits rerun with longer chains until R-hat and ESS pass
(noisycal.engines.density.nuts.extended_fit, ``NUTS(extend=...)``)."""

import warnings

import numpy as np
import pytest

import noisycal as nc

CONF = np.array([[[0.85, 0.15], [0.2, 0.8]]] * 3)


@pytest.fixture(scope="module")
def ann():
    return nc.simulate.dawid_skene(200, [0.6, 0.4], CONF, seed=0).annotations


def test_when_a_fit_is_extended():
    NUTS = nc.engines.NUTS
    assert NUTS().extends and NUTS(num_chains=2).extends
    assert not NUTS(num_samples=500).extends and not NUTS(num_warmup=200).extends
    assert NUTS(num_samples=50, extend=True).extends and not NUTS(extend=False).extends
    # the extension's settings judge or repeat the run: not the sampler's arguments
    assert not {"extend", "max_extensions", "min_ess", "rhat_threshold"} & set(
        NUTS().sampler())
    assert repr(NUTS(max_extensions=3)) == "NUTS(max_extensions=3)"
    for bad, match in (({"max_extensions": -1}, "max_extensions"),
                       ({"min_ess": -1.0}, "min_ess"), ({"extend": "yes"}, "extend")):
        with pytest.raises(ValueError, match=match):
            NUTS(**bad)


def test_a_short_fit_is_rerun_with_doubled_chains(ann):
    """2 x (25 + 25) draws cannot reach a bulk ESS of 400: one extension doubles warm-up
    and draws, and the fit says what ran and that the budget ran out."""
    nuts = nc.engines.NUTS(num_chains=2, num_warmup=25, num_samples=25, extend=True,
                           max_extensions=1)
    with pytest.warns(nc.ConvergenceWarning) as rec:
        fit = nc.DawidSkene(2).fit(ann, method=nuts, seed=0)
    assert all(r.filename == __file__ for r in rec)   # the last run's warnings, at the caller
    runs = fit.details["extensions"]
    assert [(r["num_warmup"], r["num_samples"]) for r in runs] == [(25, 25), (50, 50)]
    assert fit.engine.num_warmup == 50 and fit.engine.num_samples == 50
    assert fit.draws["confusion"].shape[0] == 2 * 50
    assert runs[-1]["max_rhat"] == fit.details["max_rhat"]
    assert runs[-1]["min_ess_bulk"] == fit.details["min_ess_bulk"] < 400
    assert "after 1 extension(s) (max_extensions=1), at 50 warm-up and 50 draws" in fit.message


def test_given_settings_run_as_given(ann):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.NUTS(
            num_chains=2, num_warmup=25, num_samples=25), seed=0)
    assert "extensions" not in fit.details and fit.engine.num_samples == 25


def test_a_converged_first_run_is_kept(ann):
    """min_ess=0 and a loose R-hat threshold: the first run passes, nothing is rerun."""
    fit = nc.DawidSkene(2).fit(ann, method=nc.engines.NUTS(
        num_chains=2, num_warmup=100, num_samples=100, extend=True, min_ess=0,
        rhat_threshold=1.5), seed=0)
    assert len(fit.details["extensions"]) == 1 and fit.engine.num_samples == 100
    assert "extension" not in fit.message


def test_the_soft_label_model_refuses_extend():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=30)
    counts = rng.multinomial(5, [0.5, 0.3, 0.2], size=30)
    with pytest.raises(ValueError, match="extend=True"):
        nc.annotators.DirichletSoftLabels().fit(
            probs=p, counts=counts, method=nc.engines.NUTS(num_samples=50, extend=True))


def test_sbc_refuses_extend():
    with pytest.raises(ValueError, match="extend=True"):
        nc.annotators.sbc(nc.DawidSkene(2), n_sims=2, n_items=20, n_annotators=2, n_classes=2,
                          method=nc.engines.NUTS(num_samples=50, extend=True))
