"""Every field of an engine object reaches the engine of every model; the fit keeps it."""

import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.engines.density import nuts as nuts_module

NUTS = nc.engines.NUTS(num_chains=3, num_warmup=7, num_samples=5, target_accept_prob=0.93,
                       max_tree_depth=6, dense_mass=True, chain_method="sequential")


class _Stop(Exception):
    pass


def _ann():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 30)
    A = np.where(rng.random((30, 3)) < 0.8, y[:, None], 1 - y[:, None])
    return nc.Annotations.from_wide(A, classes=[0, 1])


def _capture(monkeypatch, where, name="sample_nuts"):
    seen = {}

    def fake(*args, **kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(where, name, fake)
    return seen


def _check(seen, progress=True):
    for field in ("num_chains", "num_warmup", "num_samples", "target_accept_prob",
                  "max_tree_depth", "dense_mass", "chain_method"):
        assert seen[field] == getattr(NUTS, field), field
    assert seen["progress_bar"] is progress


@pytest.mark.parametrize("model", [nc.DawidSkene(), nc.OneCoinDawidSkene(),
                                   nc.annotators.ClassConditionalDawidSkene(),
                                   nc.annotators.MACE(),
                                   nc.annotators.HierarchicalDawidSkene()],
                         ids=lambda m: type(m).__name__)
def test_every_nuts_field_reaches_the_dawid_skene_family_sampler(monkeypatch, model):
    seen = _capture(monkeypatch, nuts_module)
    with pytest.raises(_Stop):
        model.fit(_ann(), method=NUTS, progress=True)
    _check(seen)


def test_every_nuts_field_reaches_the_item_difficulty_sampler(monkeypatch):
    from noisycal.annotators import item_difficulty

    seen = _capture(monkeypatch, item_difficulty)
    with pytest.raises(_Stop):
        nc.annotators.ItemDifficultyModel().fit(_ann(), method=NUTS)
    _check(seen, progress=False)


def test_every_nuts_field_reaches_the_soft_label_and_sbc_samplers(monkeypatch):
    from noisycal.annotators.checks import sbc

    seen = _capture(monkeypatch, nuts_module)
    probs = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]] * 5)
    with pytest.raises(_Stop):
        nc.DirichletSoftLabels().fit(probs=probs, counts=np.full((15, 2), 2), method=NUTS,
                                     progress=True)
    _check(seen)
    seen = _capture(monkeypatch, sbc)
    with pytest.raises(_Stop):
        nc.annotators.sbc(nc.DawidSkene(), n_items=10, n_annotators=3, n_classes=2,
                          n_sims=2, method=NUTS)
    _check(seen, progress=False)


def test_the_fit_keeps_its_engine_and_a_refit_reuses_it():
    ann = _ann()
    em = nc.engines.EM(n_starts=3, tol=1e-10)
    fit = nc.DawidSkene(2).fit(ann, method=em, seed=1)
    assert fit.engine is em and fit.method == "em"
    assert "engine: EM(n_starts=3, tol=1e-10)" in str(fit.summary())
    again = nc.DawidSkene(2).fit(ann, method=fit.engine, seed=1)
    np.testing.assert_array_equal(again.confusion, fit.confusion)
    assert nc.DawidSkene(2).fit(ann).engine == nc.engines.EM()  # None: the default engine
    assert nc.DawidSkene(2).fit(ann, method="mle").engine == nc.engines.MLE()
    with warnings.catch_warnings():  # groups unrelated to the class: an infeasible inverse
        warnings.simplefilter("ignore", nc.IdentifiabilityWarning)
        hw = nc.HuiWalter().fit(ann.to_wide()[:, :2], groups=np.arange(30) % 2)
    assert hw.engine == nc.engines.Moments() and hw.method == "mom"
    import pickle

    assert pickle.loads(pickle.dumps(fit)).engine == em


def test_anchor_is_an_annotator_id():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    A = np.where(rng.random((200, 3)) < [0.9, 0.8, 0.85], y[:, None], 1 - y[:, None])
    ids = np.repeat(np.arange(200), 3), np.tile(["ann", "bob", "cyd"], 200)
    ann = nc.Annotations.from_arrays(*ids, A.ravel(), classes=[0, 1])
    by_id = nc.DawidSkene(2).fit(ann, anchor="bob")
    assert by_id.details["orientation"] == "anchor"
    assert by_id.confusion[1, 1, 1] > by_id.confusion[1, 0, 1]  # bob's gap is positive
    with pytest.raises(ValueError, match=r"anchor must be the id of an annotator.*got 1"):
        nc.DawidSkene(2).fit(ann, anchor=1)  # a position is not an id
    assert nc.DawidSkene(2).fit(ann).details["orientation"] == "vote"
