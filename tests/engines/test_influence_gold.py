"""The sandwich and posterior influence of fits with gold labels: items of known class
enter the per-item likelihood at that class (as in the fit), so the channel error of a
gold fit is propagated like any other fit's instead of being held fixed."""

import warnings

import numpy as np
import pytest

import noisycal as nc

K = 3
PREVALENCE = [0.5, 0.3, 0.2]
CONF = np.stack([0.75 * np.eye(K) + 0.25 / K, 0.65 * np.eye(K) + 0.35 / K,
                 0.55 * np.eye(K) + 0.45 / K])
TIGHT = nc.engines.EM(n_starts=2, tol=1e-14, max_iter=100_000)
N, GOLD_SHARE = 1000, 0.3


def _data(seed):
    sim = nc.simulate.dawid_skene(N, PREVALENCE, CONF, seed=seed)
    ann = sim.annotations
    rng = np.random.default_rng(seed + 1000)
    known = np.flatnonzero(rng.random(N) < GOLD_SHARE)
    gold = {ann.items[i]: ann.classes[int(sim.true_class[i])] for i in known}
    return ann, gold


def _se(infl):
    """Sandwich standard errors of the confusion entries (every entry of a full
    Dawid-Skene fit is its own coordinate or its row's reference entry)."""
    var = np.einsum("ip,pq,iq->i", infl.basis, infl.covariance, infl.basis)
    L, J, _ = infl.shape
    return np.sqrt(np.maximum(var[L * K:], 0)).reshape(J, K, K)


@pytest.fixture(scope="module")
def fitted():
    ann, gold = _data(0)
    fit = nc.DawidSkene().fit(ann, method=TIGHT, gold=gold)
    return ann, gold, fit, fit.influence()


def test_gold_items_enter_the_score_equation(fitted):
    """At the gold fit's MLE the items' influence (gold items at their class) sums to 0;
    the same fit without its gold labels' likelihood would not be at a zero."""
    ann, gold, fit, infl = fitted
    assert fit.status == "ok"
    total = (infl.influence * infl.counts[:, None]).sum(axis=0)
    assert np.max(np.abs(total)) < 1e-6
    assert infl.counts.sum() == ann.n_items
    # gold items never share a pattern with unknown items of the same ratings
    assert infl.pattern.shape == (ann.n_items,)


def test_gold_fit_sandwich_agrees_with_the_spread_over_replications(fitted):
    """Sandwich SEs of the confusion entries against the SD of the MLE over 150
    simulated data sets (1,000 items, 3 annotators, K = 3, a fresh 30% gold share each
    time). The SD of R = 150 replications has a Monte Carlo relative error of about 6%:
    each of the 27 entries within 30%, their geometric mean within 10% (measured:
    0.79-1.14, geometric mean 0.975). Gold labels carry information, so the SEs are
    smaller than those of the same data fitted without them."""
    ann, gold, fit, infl = fitted
    sandwich = _se(infl)
    reps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        for r in range(150):
            a, g = _data(100 + r)
            reps.append(nc.DawidSkene().fit(a, method=TIGHT, gold=g).confusion)
    sd = np.std(reps, axis=0, ddof=1)
    ratio = sandwich / sd
    assert np.all(np.abs(ratio - 1) < 0.3), ratio.round(3)
    assert abs(np.exp(np.mean(np.log(ratio))) - 1) < 0.10
    plain = nc.DawidSkene().fit(ann, method=TIGHT).influence()
    assert np.exp(np.mean(np.log(sandwich / _se(plain)))) < 0.97


def test_nc_ece_under_a_gold_fit_carries_the_channel_error(fitted):
    """The default NC-ECE under a gold fit propagates the channel error (before, it
    said 'channels_fixed')."""
    ann, gold, fit, infl = fitted
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(K) * 2, size=ann.n_items)
    target = nc.targets.corrected(ann, fit)
    est = nc.ece(P, target, n_bins=5, seed=0)
    assert "channels_fixed" not in est.statuses, est.message
    assert np.isfinite(est.low) and np.isfinite(est.high)


def test_pointwise_loglik_draws_take_gold_items_at_their_class():
    """The per-item log-likelihood at posterior draws (PSIS-LOO's and the posterior
    influence's) sums to the model's log-likelihood with the gold labels at each draw."""
    from noisycal._util.jax import x64
    from noisycal.engines.density.arviz_export import item_loglik_draws
    from noisycal.models.dawid_skene import log_likelihood, make_data

    ann, gold = _data(3)
    arr = ann.engine_arrays()
    g = np.full(ann.n_items, -1)
    pos = {it: i for i, it in enumerate(ann.items)}
    cls = {c: k for k, c in enumerate(ann.classes)}
    for it, c in gold.items():
        g[pos[it]] = cls[c]
    rng = np.random.default_rng(4)
    prev = rng.dirichlet(np.ones(K), size=(4, 1))
    conf = rng.dirichlet(np.ones(K) * 3, size=(4, 3, K))
    with x64():
        data = make_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                         n_annotators=3, n_classes=K)
        ll = item_loglik_draws(prev, conf, data, g)
        for d in range(4):
            full = float(log_likelihood({"prevalence": prev[d], "confusion": conf[d]},
                                        data, g))
            np.testing.assert_allclose(ll[d].sum(), full, rtol=1e-12)
        assert not np.allclose(ll, item_loglik_draws(prev, conf, data))
