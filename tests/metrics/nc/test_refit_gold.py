"""Channel refits of EM fits with gold labels (``fit.refit``, ``interval=Refit()``): the
gold items' posteriors stay clamped at their classes in every refit."""

import numpy as np
import pytest

import noisycal as nc

N = 400
EM = nc.engines.EM(tol=1e-13)


def _data():
    """400 items rated by 3 annotators, every second item's class known; the ratings are
    given in shuffled order, so the fit's item order is not the order of ``t``'s rows."""
    t = nc.simulate.gaussian_toy(N, truth="shifted", seed=3)
    ids = np.array([f"i{i}" for i in range(N)])
    J = t.annotations.shape[1]
    shuffle = np.random.default_rng(5).permutation(N * J)
    ann = nc.Annotations.from_long({"item": np.repeat(ids, J)[shuffle],
                                    "annotator": np.tile(np.arange(J), N)[shuffle],
                                    "label": t.annotations.ravel()[shuffle]},
                                   classes=[0, 1], annotators=np.arange(J))
    assert not np.array_equal(ann.items, ids)
    gold = {ids[i]: int(t.y[i]) for i in range(0, N, 2)}
    return t, ids, ann, gold


def _fit_order(ann, ids, x):
    """``x``, one value per row of ``t``, in the fit's item order."""
    pos = {v: i for i, v in enumerate(ann.items.tolist())}
    out = np.empty_like(x)
    out[[pos[v] for v in ids]] = x
    return out


@pytest.mark.parametrize("model", [nc.DawidSkene, nc.annotators.OneCoinDawidSkene])
def test_equal_weights_reproduce_a_gold_fit(model):
    t, ids, ann, gold = _data()
    fit = model(2).fit(ann, gold=gold, method=EM)
    assert fit.status == "ok" and fit.details["gold"]
    same = fit.refit(np.ones(fit.n_items))
    np.testing.assert_allclose(same.confusion, fit.confusion, atol=1e-7)
    np.testing.assert_allclose(same.prevalence, fit.prevalence, atol=1e-7)


def test_gold_refit_equals_a_fresh_gold_fit_on_the_resampled_items():
    """A resampled gold item keeps its class, once per copy; gold and non-gold items
    sharing a rating pattern stay apart (3 binary annotators: 8 patterns)."""
    t, ids, ann, gold = _data()
    fit = nc.DawidSkene(2).fit(ann, gold=gold, method=EM)
    rows = np.random.default_rng(1).integers(0, N, N)         # resampled rows of t
    res = fit.refit(_fit_order(ann, ids, np.bincount(rows, minlength=N).astype(float)))
    # the same resample written out, duplicates renamed ('i7', 'i7#1', ...)
    seen: dict[str, int] = {}
    new_ids, new_gold = [], {}
    for r in rows:
        k = seen.get(ids[r], 0)
        seen[ids[r]] = k + 1
        new = ids[r] if k == 0 else f"{ids[r]}#{k}"
        new_ids.append(new)
        if ids[r] in gold:
            new_gold[new] = gold[ids[r]]
    ann_b = nc.Annotations.from_wide(t.annotations[rows], classes=[0, 1], items=new_ids)
    fresh = nc.DawidSkene(2).fit(ann_b, gold=new_gold, method=EM)
    np.testing.assert_allclose(res.confusion, fresh.confusion, atol=1e-6)
    np.testing.assert_allclose(res.prevalence, fresh.prevalence, atol=1e-6)
    assert res.converged


def test_refit_interval_of_a_gold_fit_is_ok():
    t, ids, ann, gold = _data()
    fit = nc.DawidSkene(2).fit(ann, gold=gold, method=EM)
    est = nc.ece(_fit_order(ann, ids, t.z), nc.targets.corrected(ann, fit), n_bins=10, seed=1,
                 interval=nc.intervals.Refit(n_boot=100))
    assert est.status == "ok" and est.details["refit_channels"]
    assert est.details["n_failed"] == 0 and est.details["n_not_converged"] == 0
    lo, hi = est.interval
    assert 0 <= lo < float(est) < hi
    assert (lo, hi) == pytest.approx((0.0457, 0.1338), abs=1e-4)


def test_gold_labels_shrink_the_refit_spread_of_the_channels():
    """Half the items with known classes: the bootstrap spread of the refitted channels
    (the same 100 resamples) is 0.88 of the spread without gold labels, on average over
    the channel entries."""
    t, ids, ann, gold = _data()
    W = np.random.default_rng(0).multinomial(N, np.full(N, 1 / N), size=100).astype(float)
    fit = nc.DawidSkene(2).fit(ann, gold=gold, method=EM)
    free = nc.DawidSkene(2).fit(ann, method=EM)
    sd_gold, sd_free = (f.refit(W).confusion.std(0) for f in (fit, free))
    ratio = sd_gold[:, :, 1].mean() / sd_free[:, :, 1].mean()
    assert ratio == pytest.approx(0.883, abs=0.005)
    assert np.all(sd_gold[:, 1, 1] < sd_free[:, 1, 1])
