"""Dawid–Skene family fitted by EM: reference values, likelihood identity, recovery."""


import numpy as np
import pytest

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal.models import dawid_skene as dsm

CONF3 = np.array([
    [[0.85, 0.10, 0.05], [0.10, 0.80, 0.10], [0.05, 0.15, 0.80]],
    [[0.70, 0.20, 0.10], [0.15, 0.75, 0.10], [0.10, 0.10, 0.80]],
    [[0.90, 0.05, 0.05], [0.05, 0.90, 0.05], [0.20, 0.10, 0.70]],
    [[0.60, 0.30, 0.10], [0.20, 0.60, 0.20], [0.10, 0.20, 0.70]],
])
PREV3 = np.array([0.5, 0.3, 0.2])


@pytest.fixture(scope="module")
def ds1979():
    return nc.datasets.load_dawid_skene_1979()


# ------------------------------------------------------------------ reference: DS (1979)
def test_ds1979_reproduces_the_paper(ds1979):
    """Dawid & Skene's own start (per-patient response proportions) reproduces Table 2/3."""
    fit = nc.DawidSkene(n_classes=4).fit(ds1979,
                                         method=nc.engines.EM(init="soft_vote", n_starts=1))
    np.testing.assert_array_equal(fit.prevalence.round(2), [0.40, 0.42, 0.11, 0.07])
    expected_obs1 = [[0.89, 0.11, 0.00, 0.00], [0.07, 0.88, 0.05, 0.00],
                     [0.00, 0.34, 0.66, 0.00], [0.00, 0.00, 0.56, 0.44]]
    np.testing.assert_allclose(fit.confusion[0].round(2), expected_obs1, atol=1e-12)
    np.testing.assert_array_equal(fit.item_posterior.argmax(1)[:6] + 1, [1, 4, 2, 2, 2, 2])
    assert fit.status == "ok" and fit.converged
    np.testing.assert_allclose(fit.confusion.sum(2), 1.0, atol=1e-12)
    assert fit.n_params == 3 + 5 * 4 * 3
    assert fit.aic == pytest.approx(2 * fit.n_params - 2 * fit.loglik)


def test_multistart_finds_at_least_the_papers_likelihood(ds1979):
    single = nc.DawidSkene().fit(ds1979, method=nc.engines.EM(init="soft_vote", n_starts=1))
    multi = nc.DawidSkene().fit(ds1979, method=nc.engines.EM(n_starts=10), seed=0)
    assert multi.loglik >= single.loglik - 1e-9
    assert len(multi.details["start_objectives"]) == 10


# the likelihood identity (EM, NumPyro, enumeration) is tested in test_em_likelihood.py


# ------------------------------------------------------------------ simulation recovery
def _rmse(n, seed):
    sim = nc.simulate.dawid_skene(n, PREV3, CONF3, seed=seed)
    fit = nc.DawidSkene(n_classes=3).fit(sim.annotations, method=nc.engines.EM(n_starts=3),
                                         seed=seed)
    assert fit.status == "ok"
    return np.sqrt(np.mean((fit.confusion - CONF3) ** 2))


def test_confusion_rmse_shrinks_like_root_n():
    small = np.mean([_rmse(500, s) for s in range(6)])
    large = np.mean([_rmse(2000, s) for s in range(6)])
    # root-n scaling predicts 0.5 for 4x the items; six replicates of each leave about
    # +-0.1 Monte-Carlo spread in the ratio of averaged RMSEs (wider than 0.2 relative)
    assert 0.4 <= large / small <= 0.6


def test_prevalence_and_posterior_recovered():
    sim = nc.simulate.dawid_skene(4000, PREV3, CONF3, seed=11)
    fit = nc.DawidSkene().fit(sim.annotations, seed=1)
    np.testing.assert_allclose(fit.prevalence, PREV3, atol=0.03)
    acc = np.mean(fit.item_posterior.argmax(1) == sim.true_class)
    vote = np.mean(sim.annotations.majority_vote() == sim.true_class)
    assert acc >= vote


def test_gold_labels_are_clamped():
    sim = nc.simulate.dawid_skene(300, PREV3, CONF3, seed=2)
    ann = sim.annotations
    gold = {int(ann.items[i]): int(sim.true_class[i]) for i in range(0, 300, 10)}
    fit = nc.DawidSkene().fit(ann, gold=gold, method=nc.engines.EM(n_starts=2))
    idx = np.arange(0, 300, 10)
    np.testing.assert_array_equal(fit.item_posterior[idx], np.eye(3)[sim.true_class[idx]])
    with pytest.raises(ValueError, match="gold"):
        nc.DawidSkene().fit(ann, gold={10_000: 0})
    with pytest.raises(ValueError, match="gold label"):
        nc.DawidSkene().fit(ann, gold={0: 7})


def test_map_em_is_a_fixed_point_and_flat_prior_is_mle(ds1979):
    mle = nc.DawidSkene().fit(ds1979, method=nc.engines.EM(init="soft_vote", n_starts=1))
    flat = nc.DawidSkene(alpha=np.ones(4), beta=np.ones((4, 4))).fit(
        ds1979, method=nc.engines.EM(init="soft_vote", n_starts=1))
    np.testing.assert_allclose(flat.confusion, mle.confusion, atol=1e-10)
    alpha, beta = dsm.default_priors(4)
    m = nc.DawidSkene(alpha=alpha, beta=beta).fit(ds1979,
                                                  method=nc.engines.EM(init="soft_vote",
                                                                       n_starts=1, max_iter=5000,
                                                                       tol=1e-12))
    assert m.details["map"] and m.status == "ok"
    # the diagonal pseudo-counts (2.5 K - 1 = 9) pull the diagonal up on average
    assert np.mean(np.diagonal(m.confusion, axis1=1, axis2=2)) > np.mean(
        np.diagonal(mle.confusion, axis1=1, axis2=2))
    # MAP fixed point: the M-step of its own E-step returns it
    from noisycal.engines.em.dawid_skene import e_step, m_step

    arr = ds1979.engine_arrays()
    with jax.enable_x64(True):
        data = dsm.make_data(arr.item, arr.annotator, arr.label, n_items=45, n_annotators=5,
                             n_classes=4)
        post, _ = e_step(jnp.asarray(m.group_prevalence), jnp.asarray(m.confusion), data, None)
        prev2, conf2 = m_step(post, data, jnp.asarray(alpha), jnp.asarray(beta), False)
    np.testing.assert_allclose(np.asarray(conf2), m.confusion, atol=1e-6)
    np.testing.assert_allclose(np.asarray(prev2), m.group_prevalence, atol=1e-6)


def test_one_coin_recovery():
    acc = np.array([0.9, 0.75, 0.6, 0.8])
    K = 4
    conf = np.stack([a * np.eye(K) + (1 - a) / (K - 1) * (1 - np.eye(K)) for a in acc])
    sim = nc.simulate.dawid_skene(3000, np.full(K, 0.25), conf, seed=3)
    fit = nc.OneCoinDawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=3))
    np.testing.assert_allclose(np.diagonal(fit.confusion, axis1=1, axis2=2)[:, 0], acc,
                               atol=0.025)
    assert fit.n_params == 3 + 4
    off = fit.confusion[0][~np.eye(K, dtype=bool)]
    np.testing.assert_allclose(off, off[0], atol=1e-12)


def test_grouped_hui_walter_case_recovers_group_prevalences():
    conf = np.array([[[0.92, 0.08], [0.16, 0.84]], [[0.87, 0.13], [0.11, 0.89]]])
    prev = np.array([[0.8, 0.2], [0.3, 0.7]])
    sim = nc.simulate.dawid_skene(6000, prev, conf, group_probs=[0.5, 0.5], seed=4)
    fit = nc.GroupedDawidSkene(n_classes=2).fit(sim.annotations, groups=sim.group,
                                                method=nc.engines.EM(n_starts=4))
    assert fit.status == "ok"
    # absolute 0.05 (relative up to 0.6 on the 0.08 entries): with 3000 items per group
    # and two annotators the standard errors of the Hui-Walter estimates reach ~0.015,
    # and the tolerance is about three of them for every entry at once
    np.testing.assert_allclose(fit.prevalence, prev, atol=0.05)
    np.testing.assert_allclose(fit.confusion, conf, atol=0.05)
    with pytest.raises(ValueError, match="groups"):
        nc.GroupedDawidSkene().fit(sim.annotations)
    with pytest.raises(ValueError, match="groups"):
        nc.DawidSkene().fit(sim.annotations, groups=sim.group)


def test_relabelling_classes_permutes_confusion():
    sim = nc.simulate.dawid_skene(2000, PREV3, CONF3, seed=5)
    ann = sim.annotations
    perm = np.array([2, 0, 1])  # old class k is called perm[k]
    relab = nc.Annotations.from_arrays(ann.item_index, ann.annotator_index,
                                       perm[ann.label_index], classes=np.arange(3))
    # the soft-vote start is equivariant under relabelling, so both runs follow the
    # same path up to the permutation
    em = nc.engines.EM(init="soft_vote", n_starts=1, tol=1e-13, max_iter=5000)
    a = nc.DawidSkene().fit(ann, method=em)
    b = nc.DawidSkene().fit(relab, method=em)
    np.testing.assert_allclose(b.confusion[:, perm][:, :, perm], a.confusion, atol=1e-9)
    np.testing.assert_allclose(b.prevalence[perm], a.prevalence, atol=1e-9)


def test_predict_matches_fitted_posteriors(ds1979):
    fit = nc.DawidSkene().fit(ds1979, method=nc.engines.EM(init="soft_vote", n_starts=1))
    from noisycal.annotators import predict

    np.testing.assert_allclose(predict(fit, ds1979), fit.item_posterior, atol=1e-10)


def test_results_tables_and_arviz(ds1979):
    fit = nc.DawidSkene().fit(ds1979,
                              method=nc.engines.EM(init="soft_vote", n_starts=1, n_boot=50),
                              seed=1)
    frame = fit.to_frame()
    assert len(frame) == 4 + 5 * 16
    ci = fit.conf_int(level=0.8)
    assert ((ci["low"] <= ci["value"] + 1e-9) | (ci["high"] >= ci["value"] - 1e-9)).all()
    assert ci.attrs["level"] == 0.8
    idata = fit.to_arviz()
    assert idata.posterior["confusion"].shape == (1, 50, 5, 4, 4)
    assert list(idata.posterior["confusion"].dims[-3:]) == ["annotator", "true", "observed"]
    with pytest.warns(nc.IdentifiabilityWarning, match="Hessian"):  # zero cells
        mle = nc.DawidSkene().fit(ds1979, method="mle")
    with pytest.raises(ValueError, match="no draws"):  # gradient MLE keeps no refits
        mle.conf_int()


# ------------------------------------------------------------------ honest failures
def test_one_annotator_is_not_identified():
    ann = nc.Annotations.from_arrays(np.arange(10), np.zeros(10), np.arange(10) % 2)
    with pytest.warns(nc.IdentifiabilityWarning):
        fit = nc.DawidSkene().fit(ann)
    assert fit.status == "not_identified" and np.isnan(fit.confusion).all()


def test_zero_gap_binary_channel_is_reported():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.85, 0.15], [0.1, 0.9]],
                     [[0.5, 0.5], [0.5, 0.5]], [[0.8, 0.2], [0.2, 0.8]]])
    sim = nc.simulate.dawid_skene(400, [0.5, 0.5], conf, seed=6)
    ann = sim.annotations
    # make annotator 2's labels exactly independent of everything: all ones
    lab = np.where(ann.annotator_index == 2, 1, ann.label_index)
    ann2 = nc.Annotations.from_arrays(ann.item_index, ann.annotator_index, lab)
    with pytest.warns(nc.IdentifiabilityWarning, match="gap"):
        fit = nc.DawidSkene().fit(ann2, method=nc.engines.EM(n_starts=2))
    assert fit.status == "small_gap"


def test_not_converged_is_reported(ds1979):
    with pytest.warns(nc.ConvergenceWarning):
        fit = nc.DawidSkene().fit(ds1979, method=nc.engines.EM(n_starts=1, max_iter=3))
    assert fit.status == "not_converged" and not fit.converged and fit.n_iter == 3


@pytest.mark.parametrize("kwargs, match", [
    (lambda: dict(method="gibbs"), "method"),
    (lambda: dict(method=nc.engines.EM(init="random")), "init"),
    (lambda: dict(method=nc.engines.EM(n_starts=0)), "n_starts"),
    (lambda: dict(method=nc.engines.EM(max_iter=0)), "max_iter"),
    (lambda: dict(method=nc.engines.EM(tol=0.0)), "tol"),
    (lambda: dict(anchor=1), "two classes"),  # ds1979's annotators are 1..5
])
def test_bad_fit_options(ds1979, kwargs, match):
    with pytest.raises(ValueError, match=match):
        nc.DawidSkene().fit(ds1979, **kwargs())


def test_bad_model_input(ds1979):
    with pytest.raises(ValueError, match="n_classes"):
        nc.DawidSkene(n_classes=3).fit(ds1979)
    with pytest.raises(ValueError, match="alpha"):
        nc.DawidSkene(alpha=np.ones(3)).fit(ds1979)
    with pytest.raises(ValueError, match="alpha"):
        nc.DawidSkene(alpha=np.array([1, 1, 0, 1.0])).fit(ds1979)
    with pytest.raises(ValueError, match="beta"):
        nc.DawidSkene(beta=np.ones((4, 3))).fit(ds1979)
    with pytest.raises(ValueError, match="beta"):
        nc.DawidSkene(beta=-np.ones((4, 4))).fit(ds1979)
    with pytest.raises(ValueError, match="annotations"):
        nc.DawidSkene().fit(np.zeros((3, 3)))
    one = nc.Annotations.from_arrays([0, 0], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="at least 2 items"):
        nc.DawidSkene().fit(one)


def test_anchor_orientation_binary():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.85, 0.15], [0.1, 0.9]],
                     [[0.8, 0.2], [0.3, 0.7]]])
    sim = nc.simulate.dawid_skene(1000, [0.4, 0.6], conf, seed=7)
    fit = nc.DawidSkene().fit(sim.annotations, anchor=1)
    assert fit.confusion[1, 1, 1] - fit.confusion[1, 0, 1] > 0
    np.testing.assert_allclose(fit.prevalence, [0.4, 0.6], atol=0.05)


@pytest.mark.slow
def test_bootstrap_interval_coverage_of_channel_entries():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.15, 0.85]],
                     [[0.85, 0.15], [0.25, 0.75]]])
    hits, total = 0, 0
    for r in range(100):
        sim = nc.simulate.dawid_skene(400, [0.4, 0.6], conf, seed=500 + r)
        fit = nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(n_starts=2, n_boot=200),
                                  seed=r)
        ci = fit.conf_int(level=0.9)
        c = ci[ci["parameter"] == "confusion"]
        truth = conf.reshape(-1)
        hits += int(np.sum((c["low"].to_numpy() <= truth) & (truth <= c["high"].to_numpy())))
        total += truth.size
    coverage = hits / total
    print(f"bootstrap 90% coverage of confusion entries: {coverage:.3f} ({total} checks)")
    assert 0.85 <= coverage <= 0.95


def test_pattern_collapsing_gives_the_same_fit_as_full_em():
    from noisycal.engines.em.dawid_skene import collapse_patterns, fit_em

    sim = nc.simulate.dawid_skene(3000, PREV3, CONF3, p_rate=0.7, seed=12)
    ann = sim.annotations
    arr = ann.engine_arrays()
    pattern, rep, counts = collapse_patterns(arr.item.astype(np.int64),
                                             arr.annotator.astype(np.int64) * 3 + arr.label,
                                             ann.n_items)
    assert counts.sum() == ann.n_items and rep.size < ann.n_items
    # items in one pattern have identical rating multisets
    cnt = np.zeros((ann.n_items, 4 * 3), int)
    np.add.at(cnt, (arr.item, arr.annotator * 3 + arr.label), 1)
    np.testing.assert_array_equal(cnt, cnt[rep][pattern])
    fit = nc.DawidSkene().fit(ann, method=nc.engines.EM(init="soft_vote", n_starts=1,
                                                        max_iter=3000, tol=1e-12))
    assert fit.details["n_patterns"] == rep.size
    with jax.enable_x64(True):
        data = dsm.make_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                             n_annotators=4, n_classes=3)
        st = fit_em(jnp.asarray(ann.soft_labels())[None], data, None, None, None,
                    one_coin=False, max_iter=3000, tol=1e-12)
    np.testing.assert_allclose(np.asarray(st.confusion[0]), fit.confusion, atol=1e-9)
    np.testing.assert_allclose(np.asarray(st.post[0]), fit.item_posterior, atol=1e-9)
    assert float(st.loglik[0]) == pytest.approx(fit.loglik, abs=1e-7)


def test_group_specific_channels():
    conf_a = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.85, 0.15], [0.1, 0.9]],
                       [[0.8, 0.2], [0.2, 0.8]]])
    conf_b = np.array([[[0.7, 0.3], [0.1, 0.9]], [[0.95, 0.05], [0.3, 0.7]],
                       [[0.8, 0.2], [0.25, 0.75]]])
    sa = nc.simulate.dawid_skene(3000, [0.3, 0.7], conf_a, seed=20)
    sb = nc.simulate.dawid_skene(3000, [0.6, 0.4], conf_b, seed=21)
    la, lb = sa.annotations.to_long(), sb.annotations.to_long()
    lb["item"] = lb["item"] + 3000
    import pandas as pd

    ann = nc.Annotations.from_long(pd.concat([la, lb]))
    groups = np.repeat([0, 1], 3000)
    fit = nc.GroupedDawidSkene(channels="group").fit(ann, groups=groups,
                                                     method=nc.engines.EM(n_starts=4))
    assert list(fit.annotators) == ["0|0", "0|1", "1|0", "1|1", "2|0", "2|1"]
    # absolute tolerances (relative up to 1.0 on the 0.05 entry): each group's channels
    # come from 3000 items only, standard errors ~0.01-0.015, about three of them
    np.testing.assert_allclose(fit.confusion[0::2], conf_a, atol=0.05)
    np.testing.assert_allclose(fit.confusion[1::2], conf_b, atol=0.05)
    np.testing.assert_allclose(fit.prevalence, [[0.3, 0.7], [0.6, 0.4]], atol=0.04)
    shared = nc.GroupedDawidSkene().fit(ann, groups=groups, method=nc.engines.EM(n_starts=4))
    assert fit.loglik > shared.loglik and fit.n_params > shared.n_params
    with pytest.raises(ValueError, match="channels"):
        nc.GroupedDawidSkene(channels="per").fit(ann, groups=groups)
    # predict on the result object
    np.testing.assert_allclose(shared.predict(ann, groups=groups), shared.item_posterior,
                               atol=1e-10)


# ---------------------------------------------------------------- triple-moment EM start


def _binary_annotations(n, a, b, mu, seed, groups=None):
    rng = np.random.default_rng(seed)
    m = np.asarray(mu)[groups] if groups is not None else mu
    y = rng.random(n) < m
    A = (rng.random((n, len(a))) < np.where(y[:, None], b, a)).astype(int)
    return A, nc.Annotations.from_wide(A, classes=[0, 1])


def test_moment_start_is_proposition_d2():
    """The start's channels equal moment_triple's on three complete annotators; a fourth
    annotator's gap comes from its covariance with the anchor (checked against truth)."""
    from noisycal.engines.em.starts import moment_start as _moment_start

    a, b = np.array([0.08, 0.13, 0.18, 0.25]), np.array([0.84, 0.89, 0.94, 0.7])
    A, ann = _binary_annotations(200_000, a, b, 0.35, seed=0)
    _, ann3 = _binary_annotations(200_000, a[:3], b[:3], 0.35, seed=0)
    prev, conf, note = _moment_start(ann3, None, 1, 0)
    ref = nc.annotators.moment_triple(ann3.to_wide())
    assert note == ""
    np.testing.assert_allclose(conf[:, 0, 1], ref["a"], atol=1e-12)
    np.testing.assert_allclose(conf[:, 1, 1], ref["b"], atol=1e-12)
    assert prev[0, 1] == pytest.approx(ref["prevalence"], abs=1e-12)
    prev4, conf4, _ = _moment_start(ann, None, 1, 0)
    # n = 200,000: moment estimates within ~4 sd (about 0.01)
    np.testing.assert_allclose(conf4[:, 0, 1], a, atol=0.015)
    np.testing.assert_allclose(conf4[:, 1, 1], b, atol=0.015)
    assert prev4[0, 1] == pytest.approx(0.35, abs=0.01)


def test_moments_init_reaches_the_same_mle_and_reports_the_start():
    a, b = np.array([0.1, 0.2, 0.15]), np.array([0.85, 0.75, 0.9])
    groups = np.repeat([0, 1, 2], 2000)
    _, ann = _binary_annotations(6000, a, b, [0.2, 0.5, 0.8], seed=1, groups=groups)
    ref = nc.GroupedDawidSkene(2).fit(ann, groups=groups, method=nc.engines.EM(tol=1e-12))
    fit = nc.GroupedDawidSkene(2).fit(ann, groups=groups,
                                      method=nc.engines.EM(init="moments", n_starts=1, tol=1e-12))
    assert fit.details["moment_start"] == "used as start 0" and fit.status == "ok"
    # EM stops on the change of the mean log-likelihood (1e-12); the parameters of two
    # starts then agree to about 1e-6
    np.testing.assert_allclose(fit.confusion, ref.confusion, atol=1e-5)
    np.testing.assert_allclose(fit.prevalence, ref.prevalence, atol=1e-5)
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    # group prevalences of the moment start itself are close to the truth
    from noisycal.engines.em.starts import moment_start as _moment_start

    prev0, _, _ = _moment_start(ann, groups, 3, 0)
    # a clipped closed-form start from 2000 items per group, not an estimate: absolute
    # 0.05 (0.25 relative on the 0.2 group) is what the moment noise allows
    np.testing.assert_allclose(prev0[:, 1], [0.2, 0.5, 0.8], atol=0.05)


def test_moments_init_falls_back_and_rejects_bad_designs():
    rng = np.random.default_rng(2)
    A = rng.integers(0, 2, size=(500, 3))  # independent coins: no informative triple
    ann = nc.Annotations.from_wide(A, classes=[0, 1])
    from noisycal.engines.em.starts import moment_start as _moment_start

    C = np.cov(A.T)
    if C[0, 1] * C[0, 2] * C[1, 2] <= 0:
        fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(init="moments", n_starts=3))
        assert "not informative" in fit.details["moment_start"]
    else:  # pragma: no cover - depends on the draw
        assert _moment_start(ann, None, 1, 0)[2] == ""
    with pytest.raises(ValueError, match="init='moments' needs two classes and at least 3"):
        nc.DawidSkene(2).fit(nc.Annotations.from_wide(A[:, :2], classes=[0, 1]),
                             method=nc.engines.EM(init="moments"))
    sim = nc.simulate.dawid_skene(200, [0.3, 0.3, 0.4], np.tile(np.eye(3) * 0.7 + 0.1,
                                                                (3, 1, 1)), seed=0)
    with pytest.raises(ValueError, match="init='moments'"):
        nc.DawidSkene().fit(sim.annotations, method=nc.engines.EM(init="moments"))
    with pytest.raises(ValueError, match="init must be one of"):
        nc.DawidSkene(2).fit(ann, method=nc.engines.EM(init="triple"))


def test_gap_screen_of_starts():
    """spec-003 section 3.7: starts whose oriented gaps are not all > 1e-4 are screened
    out; an adversarial annotator (b < a) fails every start and the fit says so."""
    a, b = np.array([0.1, 0.2, 0.15]), np.array([0.85, 0.75, 0.9])
    _, ann = _binary_annotations(3000, a, b, 0.4, seed=3)
    plain = nc.DawidSkene(2).fit(ann, anchor=0)
    screened = nc.DawidSkene(2).fit(ann, anchor=0, method=nc.engines.EM(screen_gaps=True))
    assert screened.status == "ok" and screened.details["screened_starts"].sum() >= 1
    np.testing.assert_allclose(screened.confusion, plain.confusion, atol=1e-6)
    a2, b2 = np.array([0.1, 0.2, 0.6]), np.array([0.85, 0.75, 0.3])  # annotator 3 flips
    _, ann2 = _binary_annotations(3000, a2, b2, 0.4, seed=4)
    with pytest.warns(nc.IdentifiabilityWarning, match="gap screen"):
        fit = nc.DawidSkene(2).fit(ann2, anchor=0, method=nc.engines.EM(screen_gaps=True))
    assert not fit.details["screened_starts"].any()
    assert fit.status == "small_gap" and "gap screen" in fit.message
    assert fit.confusion[2, 1, 1] - fit.confusion[2, 0, 1] < -0.2
    with pytest.raises(ValueError, match="screen_gaps must be True or False"):
        nc.DawidSkene(2).fit(ann, method=nc.engines.EM(screen_gaps=1))


def test_conf_int_bootstraps_on_demand(ds1979):
    """conf_int on an EM fit without stored draws runs the item bootstrap now (cached per
    n_boot and seed); a pickled fit cannot, and says so."""
    import pickle

    fit = nc.DawidSkene(4).fit(ds1979)
    assert fit.draws is None
    ci = fit.conf_int(0.9, n_boot=200, seed=1)
    assert np.all(np.isfinite(ci[["low", "high"]].to_numpy()))
    inside = (ci["low"] <= ci["value"] + 1e-9) & (ci["value"] <= ci["high"] + 1e-9)
    assert inside.mean() > 0.9
    again = fit.conf_int(0.9, n_boot=200, seed=1)
    np.testing.assert_array_equal(ci["low"], again["low"])
    assert len(fit._boot) == 1
    other = fit.conf_int(0.9, n_boot=200, seed=2)
    assert not np.array_equal(ci["high"], other["high"])
    stored = nc.DawidSkene(4).fit(ds1979, method=nc.engines.EM(n_boot=200)).conf_int(0.9)
    width = (ci["high"] - ci["low"]).to_numpy()
    width_stored = (stored["high"] - stored["low"]).to_numpy()
    # same bootstrap, other random draws: average widths agree within Monte-Carlo error
    assert width.mean() == pytest.approx(width_stored.mean(), rel=0.15)
    assert fit.bootstrap_draws(200, seed=1)["n_boot"] == 200
    clone = pickle.loads(pickle.dumps(fit))
    np.testing.assert_array_equal(clone.confusion, fit.confusion)
    with pytest.raises(ValueError, match="no stored draws"):
        clone.conf_int()
    import copy

    for dup in (copy.copy(fit), copy.deepcopy(fit)):  # copies keep the refit
        np.testing.assert_array_equal(dup.conf_int(0.9, n_boot=200, seed=1)["low"],
                                      ci["low"])


def test_grouped_fit_predict_needs_groups():
    A = np.array([[0, 0, 0], [1, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 0, 0],
                  [1, 1, 1], [0, 1, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]])
    ann = nc.Annotations.from_wide(A)
    groups = np.array([0, 1] * 6)
    fit = nc.GroupedDawidSkene(2).fit(ann, groups=groups, method=nc.engines.EM(n_starts=2), seed=0)
    with pytest.raises(ValueError, match="groups is required"):
        fit.predict(ann)
    with pytest.raises(ValueError, match="groups is required"):
        nc.targets.posterior(ann, fit)
    np.testing.assert_allclose(fit.predict(ann, groups), fit.item_posterior, atol=1e-8)
    # one group: groups may be left out
    one = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2), seed=0)
    np.testing.assert_allclose(one.predict(ann), one.item_posterior, atol=1e-8)
