"""ClassifierInformedDawidSkene: Raykar et al. (2010) with the classifier fixed, and the
circular-target status of targets built from it."""

import re

import numpy as np
import pytest

import noisycal as nc
from noisycal.annotators import ClassifierInformedDawidSkene

K = 3
CONF = np.array([[[0.75, 0.15, 0.10], [0.10, 0.70, 0.20], [0.10, 0.15, 0.75]],
                 [[0.60, 0.30, 0.10], [0.20, 0.60, 0.20], [0.05, 0.15, 0.80]],
                 [[0.80, 0.10, 0.10], [0.10, 0.80, 0.10], [0.15, 0.10, 0.75]]])
SCALE, BIAS = 2.0, np.array([0.3, -0.2, -0.1])


def _world(n, seed):
    """Scores z, true classes drawn from softmax(SCALE z + BIAS), three annotators."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.0, size=(n, K))
    eta = SCALE * z + BIAS
    p = np.exp(eta - eta.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    u = rng.random((n, 3, 1))
    labels = (CONF[np.arange(3)[None, :], y[:, None]].cumsum(-1) > u).argmax(-1)
    return z, y, nc.Annotations.from_wide(labels, classes=[0, 1, 2])


@pytest.fixture(scope="module")
def world():
    z, y, ann = _world(3000, 0)
    return z, y, ann, ClassifierInformedDawidSkene().fit(ann, logits=z)


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_recovers_channels_and_the_prior_temperature(world):
    """Known truth: channels within 0.02 of the oracle channels (read off the true
    classes; 0.014 measured) and 0.06 of the population's (sampling error of ~1000 items
    per class), scale 2.0 within 0.15, bias within 0.1; the posterior beats both the
    classifier and Dawid-Skene EM."""
    z, y, ann, fit = world
    assert fit.status == "ok" and fit.converged
    lab = ann.to_wide()
    oracle = np.stack([[np.bincount(lab[y == k, j], minlength=K) / np.sum(y == k)
                        for k in range(K)] for j in range(3)])
    assert np.abs(fit.confusion - oracle).max() < 0.02
    assert np.abs(fit.confusion - CONF).max() < 0.06
    assert fit.scale == pytest.approx(SCALE, abs=0.15)
    np.testing.assert_allclose(fit.bias, BIAS - BIAS.mean(), atol=0.1)
    assert fit.bias.sum() == pytest.approx(0.0, abs=1e-12)
    acc = (fit.item_posterior.argmax(1) == y).mean()
    ds = nc.DawidSkene(K).fit(ann, seed=0)
    assert acc > (z.argmax(1) == y).mean() + 0.02
    assert acc > (ds.item_posterior.argmax(1) == y).mean() + 0.02
    np.testing.assert_allclose(fit.group_prevalence[0], fit.item_prior.mean(0))
    assert fit.n_params == K + 3 * K * (K - 1)


def test_loglik_is_the_models_likelihood_and_brute_force_enumeration(world):
    """fit.loglik equals the marginal likelihood from the fitted prior and channels (in
    NumPy), and models.classifier_informed.log_likelihood on 4 items equals the sum over
    every latent class sequence."""
    import itertools

    from scipy.special import log_softmax, logsumexp

    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.models.classifier_informed import log_likelihood
    from noisycal.models.dawid_skene import make_data

    z, _, ann, fit = world
    lab = ann.to_wide()
    Z = log_softmax(z, axis=1)
    prior = log_softmax(fit.scale * Z + fit.bias, axis=1)
    np.testing.assert_allclose(np.exp(prior), fit.item_prior, rtol=1e-12)
    joint = prior + sum(np.log(fit.confusion[j][:, lab[:, j]].T) for j in range(3))
    assert logsumexp(joint, axis=1).sum() == pytest.approx(fit.loglik, rel=1e-10)
    terms = [sum(joint[i, ys[i]] for i in range(4))
             for ys in itertools.product(range(K), repeat=4)]
    arr = ann.engine_arrays()
    with x64():
        d4 = make_data(arr.item[:12], arr.annotator[:12], arr.label[:12], n_items=4,
                       n_annotators=3, n_classes=K)
        ll4 = float(log_likelihood({"scale": fit.scale, "bias": jnp.asarray(fit.bias),
                                    "confusion": jnp.asarray(fit.confusion)}, d4,
                                   jnp.asarray(Z[:4])))
    assert logsumexp(terms) == pytest.approx(ll4, rel=1e-12)


def test_quality_scores_read_the_posterior_and_the_channels(world):
    _, _, ann, fit = world
    vote = ann.majority_vote(tie="lowest")
    lq = fit.label_quality
    np.testing.assert_array_equal(lq.index, ann.items)
    np.testing.assert_allclose(lq["quality"], fit.item_posterior[np.arange(3000), vote])
    rq = fit.rating_quality
    assert len(rq) == ann.n_ratings
    arr = ann.engine_arrays()
    np.testing.assert_allclose(rq["quality"], fit.item_posterior[arr.item, arr.label])
    aq = fit.annotator_quality
    want = [fit.group_prevalence[0] @ np.diag(c) for c in fit.confusion]
    np.testing.assert_allclose(aq["accuracy"], want)
    assert aq["n_ratings"].tolist() == [3000, 3000, 3000]
    s = fit.summary()
    assert s.header["scale"] == pytest.approx(fit.scale)
    assert s.tables[-1].attrs["title"] == "prior"
    assert repr(fit).startswith("ClassifierInformedFit(method='em', n_items=3000")


def test_scores_are_matched_by_item_id(world):
    """Rows in another order with items= give the same fit; probs= and logits= of the
    same scores give the same fit."""
    z, _, ann, fit = world
    perm = np.random.default_rng(1).permutation(3000)
    again = ClassifierInformedDawidSkene().fit(ann, logits=z[perm], items=ann.items[perm])
    np.testing.assert_allclose(again.confusion, fit.confusion, atol=1e-10)
    by_probs = ClassifierInformedDawidSkene().fit(ann, probs=_softmax(z))
    np.testing.assert_allclose(by_probs.item_posterior, fit.item_posterior, atol=1e-8)
    assert by_probs.scale == pytest.approx(fit.scale, rel=1e-8)


def test_same_scores_give_a_circular_target_status(world):
    """Posterior and corrected targets of the fit, compared with the same scores (logits,
    float64 or float32 probabilities): 'circular_target'; other scores: no status."""
    z, _, ann, fit = world
    post = nc.targets.posterior(None, fit)
    U = nc.targets.corrected(ann, fit)
    P = _softmax(z)
    for est in (nc.ece(P, post), nc.ece(logits=z, target=post),
                nc.ece(P.astype(np.float32), post), nc.brier(P, U), nc.nll(P, post),
                nc.smooth_ece(P, post, interval=None)):
        assert est.status == "circular_target", est
        assert est.statuses == ("circular_target",)
        assert "same classifier scores" in est.message
    other = z + np.random.default_rng(5).normal(size=z.shape)   # a held-out classifier
    for est in (nc.ece(logits=other, target=post), nc.brier(_softmax(other), U)):
        assert est.status == "ok" and est.statuses == ("ok",)
    sub = nc.targets.posterior(ann.subset(np.arange(100)), fit)   # fitted items, by id
    assert nc.ece(P[:100], sub, interval=None).status == "circular_target"
    assert nc.ece(P[100:200], nc.targets.from_matrix(sub.values), interval=None
                  ).status == "ok"


def test_cross_fitted_targets_are_not_circular():
    """The honest route: fit on one half's items and scores, build the other half's
    corrected target from its own ratings; the classifier's scores on that half get no
    status (no item's target used its own score)."""
    z, _, ann = _world(600, 3)
    half = np.arange(600) < 300
    fit = ClassifierInformedDawidSkene().fit(ann.subset(half), logits=z[half])
    U = nc.targets.corrected(ann.subset(~half), fit)
    assert "scores_fingerprint" not in U.details
    assert nc.ece(_softmax(z[~half]), U, interval=None).status == "ok"
    U_in = nc.targets.corrected(ann.subset(half), fit)
    assert nc.ece(_softmax(z[half]), U_in, interval=None).status == "circular_target"


def test_bad_inputs_name_the_argument(world):
    z, _, ann, fit = world
    model = ClassifierInformedDawidSkene()
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        model.fit(ann, logits=z, probs=_softmax(z))
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        model.fit(ann)
    with pytest.raises(ValueError, match="logits must have 3 columns"):
        model.fit(ann, logits=z[:, :2])
    with pytest.raises(ValueError, match="logits must have one row per annotated item"):
        model.fit(ann, logits=z[:10])
    P0 = _softmax(z)
    P0[0] = [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="probs: some probabilities are 0"):
        model.fit(ann, probs=P0)
    with pytest.raises(ValueError, match="items: 1 rated item"):
        model.fit(ann, logits=z[1:], items=ann.items[1:])
    with pytest.raises(ValueError, match="logits: 1 scored item"):
        model.fit(ann, logits=np.vstack([z, z[:1]]),
                  items=np.r_[ann.items, 99999])
    with pytest.raises(ValueError, match="method"):
        model.fit(ann, logits=z, method=nc.engines.EM(n_boot=10))
    with pytest.raises(ValueError, match="method"):
        model.fit(ann, logits=z, method="mle")
    new = nc.Annotations.from_long({"item": [-1], "annotator": [0], "label": [1]},
                                   classes=[0, 1, 2])
    with pytest.raises(ValueError, match="annotations"):
        fit.predict(new)


# ------------------------------------------------------------------------ real data

@pytest.mark.data
def test_cifar10n_beats_dawid_skene_and_the_classifier(cifar):
    """CIFAR-10N, the 5,000 validation images of DenseNet-40, three human labels each;
    accuracy against the clean labels. Measured: this model 0.9696, Dawid-Skene EM
    0.9206, the classifier alone 0.9382 (CROWDLAB, annotators + classifier: 0.963)."""
    d, lg = cifar
    idx = lg.val_train_idx
    y = d.clean[idx]
    ann = nc.Annotations.from_wide(d.labels[idx], classes=np.arange(10))
    fit = ClassifierInformedDawidSkene(10).fit(ann, logits=lg.logits_val)
    ds = nc.DawidSkene(n_classes=10).fit(ann, seed=0)
    acc = float(np.mean(fit.item_posterior.argmax(1) == y))
    acc_ds = float(np.mean(ds.item_posterior.argmax(1) == y))
    acc_clf = float(np.mean(lg.logits_val.argmax(1) == y))
    print(f"CIFAR-10N accuracy: classifier-informed {acc:.4f}, Dawid-Skene EM {acc_ds:.4f}, "
          f"classifier {acc_clf:.4f}")
    assert fit.status == "ok"
    assert acc == pytest.approx(0.9696, abs=1e-3)
    assert acc > max(acc_ds, acc_clf) and acc >= 0.963
    assert acc_ds == pytest.approx(0.9206, abs=1e-3)
    assert acc_clf == pytest.approx(0.9382, abs=1e-4)


# ------------------------------------------------------------------ review fixes

@pytest.fixture(scope="module")
def small():
    z, y, ann = _world(400, 7)
    return z, ann, ClassifierInformedDawidSkene().fit(ann, logits=z)


@pytest.mark.parametrize("em, field", [
    (nc.engines.EM(init="soft_vote"), "init='soft_vote'"),
    (nc.engines.EM(weak_threshold=0.01), "weak_threshold=0.01"),
    (nc.engines.EM(screen_gaps=True), "screen_gaps=True"),
    (nc.engines.EM(n_boot=10), "n_boot=10"),
    (nc.engines.EM(n_starts=3), "n_starts=3"),
])
def test_em_fields_it_does_not_read_are_refused(small, em, field):
    z, ann, _ = small
    with pytest.raises(ValueError, match=f"method: .*{re.escape(field)} does not apply"):
        ClassifierInformedDawidSkene().fit(ann, logits=z, method=em)


def test_n_starts_one_or_two_and_a_progress_bar_of_em_iterations(small, capsys):
    """n_starts=2 is the default fit (both starts); n_starts=1 runs the soft vote only;
    progress=True draws a bar of EM iterations on stderr and changes nothing."""
    z, ann, fit = small
    two = ClassifierInformedDawidSkene().fit(ann, logits=z, method=nc.engines.EM(n_starts=2))
    np.testing.assert_array_equal(two.confusion, fit.confusion)
    assert fit.details["start_objectives"].shape == (2,)
    one = ClassifierInformedDawidSkene().fit(ann, logits=z, method=nc.engines.EM(n_starts=1))
    assert one.details["start_objectives"].shape == (1,)
    assert one.details["start_objectives"][0] == fit.details["start_objectives"][0]
    capsys.readouterr()
    shown = ClassifierInformedDawidSkene().fit(ann, logits=z, progress=True)
    err = capsys.readouterr().err
    assert err.count("EM iterations [") >= 2 and f"{fit.n_iter}/1000" in err
    np.testing.assert_array_equal(shown.confusion, fit.confusion)
    with pytest.raises(ValueError, match="progress"):
        ClassifierInformedDawidSkene().fit(ann, logits=z, progress="yes")


def test_predict_is_the_engines_e_step_and_checks_the_fit(small):
    """predict of the fitted ratings is the fit's own item posterior (the engine's E-step
    at the fitted prior), on a subset too; a fit without finite estimates is refused."""
    import dataclasses

    _, ann, fit = small
    np.testing.assert_allclose(fit.predict(ann), fit.item_posterior, rtol=0, atol=1e-12)
    sub = ann.subset(np.arange(50, 80))
    np.testing.assert_allclose(fit.predict(sub), fit.item_posterior[50:80], rtol=0,
                               atol=1e-12)
    bad = dataclasses.replace(fit, confusion=np.full_like(fit.confusion, np.nan))
    with pytest.raises(ValueError, match="fit has no finite estimates"):
        bad.predict(ann)


def test_selected_rows_keep_the_circular_status(small):
    """target[m] keeps the scores of its rows: nc.ece(P[m], T[m]) is circular, and so is
    a mask or a permutation; other rows' scores against T[m] are not."""
    z, ann, fit = small
    P = _softmax(z)
    m = np.arange(400) % 3 == 0
    for T in (nc.targets.posterior(None, fit), nc.targets.corrected(ann, fit)):
        assert nc.ece(P[m], T[m], interval=None).status == "circular_target"
        perm = np.random.default_rng(2).permutation(400)[:50]
        assert nc.brier(P[perm], T[perm]).status == "circular_target"
        assert nc.ece(P[:100], T[100:200], interval=None).status == "ok"


def test_every_row_is_compared_and_unfitted_rows_are_skipped():
    """One row of 400 moved by 1e-4 is another set of scores ('ok'; float32 rounding is
    still recognised); a target over fitted and unfitted items keeps the fitted rows'
    scores (NaN for the others) and is circular for the same scores."""
    z, _, ann = _world(400, 11)
    half = np.arange(400) < 200
    fit = ClassifierInformedDawidSkene().fit(ann.subset(half), logits=z[half])
    P = _softmax(z)
    U = nc.targets.corrected(ann, fit)
    fp = U.details["scores_fingerprint"]
    assert fp.shape == (400, 3) and int(fp.fitted.sum()) == 200
    np.testing.assert_array_equal(fp.fitted, half)
    est = nc.ece(P, U, interval=None)
    assert est.status == "circular_target"
    assert "(200 of the 400 rows are items the fit scored)" in est.message
    moved = P.copy()
    moved[150] = [moved[150, 0] + 1e-4, moved[150, 1] - 1e-4, moved[150, 2]]
    assert nc.ece(moved, U, interval=None).status == "ok"
    assert nc.ece(P.astype(np.float32), U, interval=None).status == "circular_target"


def test_posterior_and_corrected_targets_have_their_own_wording(small):
    z, ann, fit = small
    P = _softmax(z)
    post = nc.ece(P, nc.targets.posterior(None, fit), interval=None)
    corr = nc.ece(P, nc.targets.corrected(ann, fit), interval=None)
    assert post.status == corr.status == "circular_target"
    assert "each item's posterior used that item's own score" in post.message
    assert "uses the scores only through those channels" in corr.message
    assert "own score" not in corr.message.split(";")[0]


def test_fingerprint_matches_prediction_rows_by_item_id(small):
    """Predictions with item ids are matched to the target's rows by id (any order)."""
    from noisycal.targets.circular import same_scores

    z, ann, fit = small
    P = _softmax(z)
    fp = nc.targets.posterior(None, fit).details["scores_fingerprint"]
    perm = np.random.default_rng(3).permutation(400)
    assert same_scores(fp, P[perm], ann.items[perm]) == 400
    assert same_scores(fp, P[perm]) == 0          # by position: not the same rows
    assert same_scores(fp, P[perm[:10]], ann.items[perm[:10]]) == 10
