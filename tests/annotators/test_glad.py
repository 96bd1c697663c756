"""GLAD by EM: the E-step by hand, recovery of simulated abilities, statuses, crowd-kit."""

import warnings

import numpy as np
import pandas as pd
import pytest

import noisycal as nc
from noisycal.engines.em.glad import e_step


def _sim(n, J, K, seed, alpha=None):
    """Every item rated by all J annotators under GLAD with known alpha and b."""
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.3, 2.5, J) if alpha is None else np.asarray(alpha)
    b = rng.normal(0.8, 0.6, n)
    y = rng.integers(0, K, n)
    item, ann = np.repeat(np.arange(n), J), np.tile(np.arange(J), n)
    p = 1.0 / (1.0 + np.exp(-alpha[ann] * np.exp(b[item])))
    ok = rng.random(item.size) < p
    lab = np.where(ok, y[item], (y[item] + rng.integers(1, K, item.size)) % K)
    return nc.Annotations.from_arrays(item, ann, lab, classes=np.arange(K)), alpha, b, y


def test_e_step_by_hand():
    import jax.numpy as jnp

    from noisycal._util.jax import x64

    # K = 3; item 0: annotator 0 says 0, annotator 1 says 1; item 1: annotator 1 says 2.
    # alpha = (1, 2), b = (0, log 2): z = 1, 2 (item 0) and 4 (item 1).
    s1, s2, s4 = (1 / (1 + np.exp(-z)) for z in (1.0, 2.0, 4.0))
    prev = np.array([0.5, 0.3, 0.2])
    lik0 = np.array([s1 * (1 - s2) / 2, (1 - s1) / 2 * s2, (1 - s1) / 2 * (1 - s2) / 2])
    lik1 = np.array([(1 - s4) / 2, (1 - s4) / 2, s4])
    want = np.array([prev * lik0 / (prev * lik0).sum(), prev * lik1 / (prev * lik1).sum()])
    with x64():
        post, ll = e_step(jnp.array([1.0, 2.0]), jnp.array([0.0, np.log(2.0)]),
                          jnp.log(jnp.asarray(prev)), jnp.array([0, 0, 1]),
                          jnp.array([0, 1, 1]), jnp.array([0, 1, 2]), None, 2, 3)
    np.testing.assert_allclose(np.asarray(post), want, rtol=1e-12)
    assert float(ll) == pytest.approx(np.log((prev * lik0).sum() * (prev * lik1).sum()),
                                      rel=1e-12)
    # the numbers themselves: item 0 leans to class 1 (the stronger annotator)
    np.testing.assert_allclose(want[0], [0.3697, 0.6030, 0.0272], atol=1e-4)
    np.testing.assert_allclose(want[1], [0.0221, 0.0133, 0.9647], atol=1e-4)


@pytest.fixture(scope="module")
def sim500():
    return _sim(500, 8, 3, seed=1)


def test_recovers_simulated_abilities_and_easiness(sim500):
    ann, alpha, b, y = sim500
    fit = nc.annotators.GLAD().fit(ann)
    assert fit.status == "ok" and fit.converged
    assert np.corrcoef(fit.ability, alpha)[0, 1] > 0.95            # 0.985
    assert np.corrcoef(np.log(fit.easiness), b)[0, 1] > 0.5         # 0.572
    assert np.mean(fit.item_posterior.argmax(1) == y) > 0.97        # 0.998
    assert fit.item_posterior.shape == (500, 3) and fit.n_params == 500 + 8 + 2
    # the averaged channel: one-coin, its accuracy the mean fitted accuracy
    acc = 1 / (1 + np.exp(-fit.ability[:, None] * fit.easiness[None, :]))
    np.testing.assert_allclose(fit.confusion[:, 0, 0], acc.mean(1), rtol=1e-12)
    np.testing.assert_allclose(fit.confusion.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(nc.targets.posterior(None, fit).values, fit.item_posterior)
    assert fit.summary().table("ability").shape == (8, 4)
    assert repr(fit).startswith("GLADFit(n_items=500, n_annotators=8, n_classes=3, "
                                "status='ok'")


def test_not_converged_at_the_iteration_cap(sim500):
    ann = sim500[0]
    with pytest.warns(nc.exceptions.ConvergenceWarning, match="iteration limit"):
        fit = nc.annotators.GLAD().fit(ann, method=nc.engines.EM(max_iter=1))
    assert fit.status == "not_converged" and fit.n_iter == 1 and not fit.converged


def test_progress_shows_a_bar_of_em_iterations_and_the_same_fit(sim500, capsys):
    ann = sim500[0]
    with warnings.catch_warnings():      # three iterations: not converged, and it says so
        warnings.simplefilter("ignore", nc.exceptions.ConvergenceWarning)
        quiet = nc.annotators.GLAD().fit(ann, method=nc.engines.EM(max_iter=3))
        capsys.readouterr()
        shown = nc.annotators.GLAD().fit(ann, method=nc.engines.EM(max_iter=3),
                                         progress=True)
    err = capsys.readouterr().err
    assert "GLAD EM iterations" in err and "3/3" in err
    np.testing.assert_array_equal(shown.ability, quiet.ability)
    with pytest.raises(ValueError, match="progress"):
        nc.annotators.GLAD().fit(ann, progress="yes")


def _unanimous():
    rng = np.random.default_rng(0)
    item, ann = np.repeat(np.arange(40), 3), np.tile(np.arange(3), 40)
    lab = np.repeat(rng.integers(0, 2, 40), 3)
    lab[:6] = [0, 1, 0, 1, 1, 0]           # two items disagree, 38 are unanimous
    return nc.Annotations.from_arrays(item, ann, lab)


def test_boundary_when_easiness_runs_off():
    a = _unanimous()
    fit = nc.annotators.GLAD(easiness_prior=None).fit(a)
    assert fit.statuses == ("boundary",)
    assert "38 item(s)" in fit.message and len(fit.details["boundary_items"]) == 38
    fit = nc.annotators.GLAD().fit(a)
    assert fit.status == "ok"   # the default prior holds it
    # annotations scored anew (alpha and prevalence held, easiness refitted): the same
    again = nc.targets.posterior(a, fit)
    assert np.abs(again.values - fit.item_posterior).max() < 1e-4


def test_bad_inputs_name_the_argument():
    ann = _unanimous()
    with pytest.raises(ValueError, match="ability_prior and easiness_prior"):
        nc.annotators.GLAD(ability_prior=None, easiness_prior=None).fit(ann)
    with pytest.raises(ValueError, match=r"easiness_prior\[1\]"):
        nc.annotators.GLAD(easiness_prior=(1.0, 0.0)).fit(ann)
    with pytest.raises(ValueError, match="method: GLAD's EM reads only max_iter and tol; "
                                         "n_boot=5"):
        nc.annotators.GLAD().fit(ann, method=nc.engines.EM(n_boot=5))
    with pytest.raises(ValueError, match="method"):
        nc.annotators.GLAD().fit(ann, method="nuts")
    with pytest.raises(ValueError, match="groups"):
        nc.annotators.GLAD().fit(ann, groups=np.arange(40) % 2)
    with pytest.raises(ValueError, match="prevalence"):
        nc.annotators.GLAD(prevalence=[0.2, 0.2]).fit(ann)


def test_agrees_with_crowdkit():
    ck = pytest.importorskip("crowdkit.aggregation")
    ann, alpha, b, y = _sim(150, 5, 3, seed=4)
    arr = ann.engine_arrays()
    df = pd.DataFrame({"task": arr.item, "worker": arr.annotator, "label": arr.label})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ck.GLAD(n_iter=500, tol=1e-10, m_step_max_iter=100,
                          m_step_tol=1e-10).fit(df)
    # crowd-kit holds the prevalence uniform; alpha ~ N(1, 1) and b ~ N(1, 1) as ours
    fit = nc.annotators.GLAD(prevalence=np.full(3, 1 / 3)).fit(
        ann, method=nc.engines.EM(tol=1e-12))
    a_ck = theirs.alphas_.reindex(np.arange(5)).to_numpy()
    b_ck = theirs.betas_.reindex(np.arange(150)).to_numpy()
    # crowd-kit stops on a change of its loss (which may also fall), not at the optimum
    assert np.corrcoef(fit.ability, a_ck)[0, 1] > 0.999
    assert np.abs(fit.ability - a_ck).max() < 0.02
    assert np.abs(np.log(fit.easiness) - b_ck).max() < 0.05
    post_ck = theirs.probas_.reindex(np.arange(150))[[0, 1, 2]].to_numpy()
    assert np.abs(fit.item_posterior - post_ck).max() < 0.05


@pytest.fixture(scope="module")
def glad300():
    """300 items, four annotators, K = 3, a GLAD fit (status ok) and scores."""
    ann, _, _, y = _sim(300, 4, 3, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = nc.annotators.GLAD().fit(ann)
    P = np.full((300, 3), 0.1) + 0.7 * np.eye(3)[y]
    return ann, fit, P


def test_averaged_confusion_is_the_one_coin_channel_of_the_mean_accuracy(glad300):
    ann, fit, _ = glad300
    arr = ann.engine_arrays()
    acc = 1 / (1 + np.exp(-fit.ability[arr.annotator] * fit.easiness[arr.item]))
    mean = np.bincount(arr.annotator, weights=acc) / np.bincount(arr.annotator)
    want = np.where(np.eye(3, dtype=bool), mean[:, None, None],
                    (1 - mean[:, None, None]) / 2)
    np.testing.assert_allclose(fit.confusion, want, rtol=1e-14, atol=0)
    assert fit.confusion.dtype == np.float64


def test_corrected_target_from_glad_carries_averaged_channels(glad300):
    ann, fit, P = glad300
    assert fit.status == "ok"
    T = nc.targets.corrected(ann, fit)
    assert T.statuses == ("averaged_channels",) and T.status == "averaged_channels"
    assert "unbiased only on average over items" in T.message
    est = nc.ece(P, T, interval=None)
    assert est.statuses[0] == "target_averaged_channels"
    assert "unbiased only on average over items" in est.message
    # the model's own posteriors, and a Dawid-Skene fit's corrected target, are ok
    assert nc.targets.posterior(ann, fit).statuses == ("ok",)
    ds = nc.DawidSkene().fit(ann)
    assert ds.status == "ok" and nc.targets.corrected(ann, ds).statuses == ("ok",)


def test_corrected_target_keeps_a_failed_fit_status_before_averaged_channels(sim500):
    ann = sim500[0]
    with pytest.warns(nc.exceptions.ConvergenceWarning):
        fit = nc.annotators.GLAD().fit(ann, method=nc.engines.EM(max_iter=1))
    T = nc.targets.corrected(ann, fit)
    assert T.statuses == ("not_converged", "averaged_channels")


def test_predict_warns_when_the_new_items_em_does_not_converge(sim500):
    ann = sim500[0]
    new = ann.subset(np.arange(40))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = nc.annotators.GLAD().fit(ann)
        fit.predict(new)  # converged: no warning
    with pytest.warns(nc.exceptions.ConvergenceWarning):
        capped = nc.annotators.GLAD().fit(ann, method=nc.engines.EM(max_iter=1))
    with pytest.warns(nc.exceptions.ConvergenceWarning, match="glad predict: .*max_iter=1"):
        post = capped.predict(new)
    assert post.shape == (40, 3)
