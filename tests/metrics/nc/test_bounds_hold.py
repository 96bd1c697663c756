"""Bounds that hold: B-hat with missing ratings, same_sample from the target's provenance,
bounds refused for fits that are not ok, and the K > 2 messages (issue 9); the default
radius is the smaller of Hoeffding and empirical Bernstein (issue 22)."""

import math

import numpy as np
import pytest

import noisycal as nc
from noisycal.correction import correction_range
from noisycal.metrics.nc.bound import infer_same_sample, nc_ece_bound, target_range
from noisycal.metrics.nc.intervals import nc_ece_items

A_TOY, B_TOY = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B
WEAK_A, WEAK_B = [0.05, 0.1, 0.3], [0.95, 0.9, 0.6]  # annotator 2: gap 0.3


def _hoeffding(z, U, n_bins=10, level=0.9, **kw):
    """The 'hoeffding' bound of the positive-class NC-ECE (ece() gives the default)."""
    items = nc_ece_items(np.c_[1 - z, z], "positive_class", n_bins)
    counts = np.bincount(items[1][0], minlength=n_bins)
    value = float(nc.ece(z, U, n_bins=n_bins, interval=None))
    return nc_ece_bound(value, U, counts, level, bound_kind="hoeffding", items=items, **kw)


def _masked_toy(n, seed, a, b, p_rate, fallback):
    """Gaussian toy with ratings missing at random; items left unrated get annotator
    ``fallback``'s rating."""
    t = nc.simulate.gaussian_toy(n, a=a, b=b, seed=seed)
    rng = np.random.default_rng(1000 + seed)
    A = t.annotations.astype(float)
    keep = rng.random(A.shape) < np.asarray(p_rate)
    keep[~keep.any(1), fallback] = True
    A[~keep] = np.nan
    return t, A


def test_correction_range_by_hand():
    # full ratings: sum_j alpha_j / delta_j = .5/.8 + .5/.5
    assert correction_range([0.5, 0.5, 0.0], [0.1, 0.2, 0.5], [0.9, 0.7, 0.5]) == \
        pytest.approx(1.625)
    obs = np.array([[True, True, True], [False, True, True], [True, False, False]])
    # item 2: only annotator 1 (weight .5, renormalised to 1): 1/.5 = 2; item 3: 1/.8
    assert correction_range([0.5, 0.5, 0.0], [0.1, 0.2, 0.5], [0.9, 0.7, 0.5], obs) == \
        pytest.approx(2.0)
    assert correction_range([0.5, 0.5, 0.0], [0.1, 0.2, 0.5], [0.9, 0.7, 0.5],
                            np.ones((4, 3), bool)) == pytest.approx(1.625)
    with pytest.raises(ValueError, match="observed"):
        correction_range([0.5, 0.5], [0.1, 0.2], [0.9, 0.7], np.ones((3, 3), bool))


def test_b_hat_holds_with_missing_ratings_in_every_run():
    """100 seeded runs, n = 200, ratings missing at random (annotators rate with
    probability .7, .7, .9; the weak one is the fallback): max |U - Z| <= B-hat in every
    run. The paper's sum_j alpha_j / delta_j (1.187) is exceeded in all 100 runs
    (max |U - Z| = 2.30 against it); the item maximum is 1/0.3 = 3.33."""
    old_exceed = new_exceed = 0
    worst = 0.0
    for seed in range(100):
        t, A = _masked_toy(200, seed, WEAK_A, WEAK_B, [0.7, 0.7, 0.9], fallback=2)
        U = nc.targets.corrected(A, a=WEAK_A, b=WEAK_B)
        dev = float(np.max(np.abs(U.values[:, 1] - t.z)))
        worst = max(worst, dev)
        old = correction_range(U.details["weights"], WEAK_A, WEAK_B)
        new_exceed += dev > target_range(U.details) + 1e-12
        old_exceed += dev > old + 1e-12
    assert new_exceed == 0
    assert old_exceed == 100 and worst == pytest.approx(2.295, abs=0.01)
    assert target_range(U.details) == pytest.approx(1 / 0.3)


def test_b_hat_unchanged_with_full_ratings_and_toy_channels():
    """Every item rated: B-hat is the paper's sum_j alpha_j / delta_j (1/0.76 for the toy);
    100 seeded runs at n = 300 with toy channels and ratings missing at rate .5 stay
    within it too (all gaps equal)."""
    t = nc.simulate.gaussian_toy(500, seed=0)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY)
    assert target_range(U.details) == pytest.approx(
        correction_range(U.details["weights"], A_TOY, B_TOY), abs=1e-12)
    assert target_range(U.details) == pytest.approx(1 / 0.76)
    for seed in range(100):
        t, A = _masked_toy(300, seed, A_TOY, B_TOY, [0.5] * 3, fallback=0)
        U = nc.targets.corrected(A, a=A_TOY, b=B_TOY)
        assert np.max(np.abs(U.values[:, 1] - t.z)) <= target_range(U.details) + 1e-12


def test_nc_ece_bound_uses_the_item_maximum():
    t, A = _masked_toy(2000, 3, WEAK_A, WEAK_B, [0.7, 0.7, 0.9], fallback=2)
    U = nc.targets.corrected(A, a=WEAK_A, b=WEAK_B)
    est = nc.ece(t.z, U, n_bins=10, interval="bound", level=0.9)
    assert est.details["B_hat"] == pytest.approx(1 / 0.3)
    rad = (1 / 0.3) * math.sqrt(2 * (10 * math.log(2) + math.log(2 / 0.1)) / 2000)
    assert _hoeffding(t.z, U)[1]["sampling_radius"] == pytest.approx(rad)
    # the default keeps the smaller of Hoeffding and Bernstein (here Bernstein)
    assert est.details["inequality"] == "bernstein" and est.method == "bernstein-union"
    assert est.details["sampling_radius"] < rad
    # the oracle channel term is the item maximum of sum_j w_ij e_j / delta_j
    e = np.array([0.01, 0.0, 0.02])
    oracle = nc.intervals.Bound(true_channels=(np.array(WEAK_A) + e, np.array(WEAK_B)))
    ora = nc.ece(t.z, U, n_bins=10, interval=oracle)
    assert ora.details["channel_term"] == pytest.approx(0.02 / 0.3)


def test_histogram_bound_uses_the_item_maximum():
    t, A = _masked_toy(3000, 4, WEAK_A, WEAK_B, [0.7, 0.7, 0.9], fallback=2)
    U = nc.targets.corrected(A, a=WEAK_A, b=WEAK_B)
    h = nc.calibrators.HistogramBinning(n_bins=5).fit(probs=t.z, target=U)
    B = 1 / 0.3
    want = (B + 1) * math.sqrt(2 * (5 * math.log(2) + math.log(4 / 0.1)) / 3000)
    assert h.bound(U, level=0.9) == pytest.approx(want)


def test_same_sample_inferred_from_provenance_and_overridden():
    sim = nc.simulate.dawid_skene(600, [0.6, 0.4], np.array(
        [[[0.9, 0.1], [0.2, 0.8]], [[0.85, 0.15], [0.1, 0.9]], [[0.8, 0.2], [0.15, 0.85]]]),
        seed=1)
    ann = sim.annotations
    z = np.clip(sim.true_class * 0.6 + 0.2 + np.random.default_rng(0).normal(0, 0.1, 600),
                0, 1)
    fit = nc.DawidSkene().fit(ann, seed=0)
    assert fit.status == "ok"
    same = nc.targets.corrected(ann, fit)
    assert infer_same_sample(same)[0] is True
    est = nc.ece(z, same, n_bins=10, interval="bound", level=0.9)
    assert est.details["statement"] == "Proposition 1" and est.details["same_sample"]
    assert "Proposition 1" in est.message
    B = est.details["B_hat"]
    assert est.details["log_union"] == pytest.approx(math.log(6 * 3))
    assert _hoeffding(z, same)[1]["sampling_radius"] == pytest.approx(
        B * math.sqrt(2 * (10 * math.log(2) + math.log(6 * 3 / 0.1)) / 600))
    forced = nc.ece(z, same, n_bins=10, interval=nc.intervals.Bound(same_sample=False), level=0.9)
    assert forced.details["statement"] == "Theorem 1 / Eq. C.11"
    assert forced.details["same_sample_reason"] == "given by the caller"
    assert forced.details["log_union"] == pytest.approx(math.log(2))
    assert _hoeffding(z, same, same_sample=False)[1]["sampling_radius"] == pytest.approx(
        B * math.sqrt(2 * (10 * math.log(2) + math.log(2 / 0.1)) / 600))
    # channels given directly: Theorem 1
    given = nc.targets.corrected(ann, confusion=fit.confusion)
    assert nc.ece(z, given, interval="bound", n_bins=10).details["statement"] == \
        "Theorem 1 / Eq. C.11"
    # a fit on other items: Theorem 1
    items = np.asarray(ann.items)
    train = nc.DawidSkene().fit(ann.subset(items[:300]), seed=0)
    other = nc.targets.corrected(ann.subset(items[300:]), train)
    assert infer_same_sample(other) == (False, "channels fitted on items disjoint from the "
                                                "evaluated ones")


class _Fit:
    """A fit-like object with a given status."""

    def __init__(self, status):
        self.confusion = np.array([[[0.9, 0.1], [0.1, 0.9]]] * 3)
        self.group_prevalence = np.array([[0.5, 0.5]])
        self.n_items, self.details, self.method = 40, {}, "em"
        self.status, self.message = status, "a test status"


@pytest.mark.parametrize("status", ["boundary", "not_converged", "weakly_identified"])
def test_bound_refused_for_a_fit_that_is_not_ok(status):
    A = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]] * 10)
    z = np.linspace(0.05, 0.95, 40)
    T = nc.targets.corrected(A, _Fit(status))
    assert T.status != "ok" and T.details["fit_status"] == status
    with pytest.raises(ValueError, match=f"needs identified channels.*{status}"):
        nc.ece(z, T, interval="bound", n_bins=5)
    # the histogram fitted to that target inherits its status (and warns)
    with pytest.warns(nc.IdentifiabilityWarning, match=status):
        h = nc.calibrators.HistogramBinning(n_bins=5).fit(probs=z, target=T)
    assert h.status_ == "target_not_ok"
    with pytest.raises(ValueError, match=f"needs identified channels.*{status}"):
        h.bound(T)
    ok = nc.targets.corrected(A, _Fit("ok"))
    assert nc.ece(z, ok, interval="bound", n_bins=5).details["statement"] == "Proposition 1"


@pytest.mark.parametrize("kw, match", [
    (dict(interval="credible"), "interval='credible' needs a corrected target built from a "
                                "NUTS fit"),
    (dict(interval="bound"), None),
    (dict(interval="bound", kind="classwise"), None),
    (dict(interval=nc.intervals.Refit(method="percentile", n_boot=20)),
     r"interval=Refit\(\) needs a corrected target built from an annotator fit"),
])
def test_k3_nc_ece_intervals_refuse_what_they_cannot_do(kw, match):
    """K = 3: the bound holds for K classes (top-label and classwise, channels given:
    the K-class Theorem 1); the credible and refit intervals need a NUTS / EM fit."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 90)
    A = np.where(rng.random((90, 3)) < 0.8, y[:, None], rng.integers(0, 3, (90, 3)))
    C = np.stack([0.7 * np.eye(3) + 0.1] * 3)
    T = nc.targets.corrected(A.astype(float), confusion=C, weights="equal")
    assert T.details["weights_rule"] == "equal"
    p = rng.dirichlet(np.ones(3), 90)
    if match is None:
        est = nc.ece(p, T, n_bins=5, **kw)
        assert est.details["statement"] == "Theorem 1 / Eq. C.11, generalised to K classes"
        assert est.details["B_hat"] == pytest.approx(1 / 0.7)  # columns of (I - .1 11')/.7
        assert est.low <= float(est) <= est.high
        return
    with pytest.raises(ValueError, match=match):
        nc.ece(p, T, **kw)


def test_k3_gap_weights_use_the_smallest_singular_value():
    C = np.stack([0.7 * np.eye(3) + 0.1, 0.4 * np.eye(3) + 0.2, 0.9 * np.eye(3) + 0.1 / 3])
    A = np.array([[0, 1, 2], [1, 1, 1], [2, 0, 2]], dtype=float)
    T = nc.targets.corrected(A, confusion=C, weights="gap")
    s = np.array([0.7, 0.4, 0.9])  # sigma_min(c I + d 11') = c for these matrices
    np.testing.assert_allclose(T.details["weights"], s / s.sum(), atol=1e-12)
    assert T.details["weights_rule"] == "gap"


class _StubModel:
    """An annotator model whose fits have fixed channels and a given status."""

    def __init__(self, a, b, status="ok"):
        self.a, self.b, self.status = np.asarray(a), np.asarray(b), status

    def fit(self, annotations, **kw):
        fit = _Fit(self.status)
        fit.confusion = np.stack([np.stack([1 - self.a, self.a], 1),
                                  np.stack([1 - self.b, self.b], 1)], 1)
        fit.n_items = annotations.n_items
        return fit


def test_crossfit_uses_the_item_maximum_and_flags_boundary_fits():
    t, A = _masked_toy(900, 5, WEAK_A, WEAK_B, [0.7, 0.7, 0.9], fallback=2)
    ann = nc.Annotations.from_wide(A, classes=[0, 1])
    folds = np.arange(900) % 3
    est = nc.workflows.nc_ece_crossfit(t.z, ann, model=_StubModel(WEAK_A, WEAK_B),
                                     folds=folds, n_bins=10, level=0.9)
    assert est.status == "ok"
    rad = 0.0
    for f in est.details["per_fold"]:
        assert f["B_hat"] == pytest.approx(1 / 0.3)  # some item in each fold has only the weak
        rad += f["n"] / 900 * (1 / 0.3) * math.sqrt(
            2 * (10 * math.log(2) + math.log(6 / 0.1)) / f["n"])
    assert est.details["sampling_radius"] == pytest.approx(rad)
    with pytest.warns(nc.IdentifiabilityWarning, match="status 'boundary'"):
        weak = nc.workflows.nc_ece_crossfit(t.z, ann, model=_StubModel(WEAK_A, WEAK_B,
                                                                     "boundary"),
                                          folds=folds, n_bins=10)
    assert weak.status == "channels_boundary" and "identified channels" in weak.message
    assert float(weak) == pytest.approx(float(est))


def test_b_hat_holds_for_dawid_skene_ratings_missing_at_random():
    """simulate.dawid_skene with p_rate = 0.6 (gaps .8, .7, .4), scores uniform, n = 500,
    100 seeded runs: max |U - Z| <= B-hat (= 1/0.4) in every run; the paper's
    sum_j alpha_j / delta_j (1.39) is exceeded in every run."""
    a, b = np.array([0.1, 0.15, 0.3]), np.array([0.9, 0.85, 0.7])
    conf = np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)
    old = new = 0
    for seed in range(100):
        sim = nc.simulate.dawid_skene(500, [0.6, 0.4], conf, p_rate=0.6, seed=seed)
        z = np.random.default_rng(seed).uniform(0, 1, sim.annotations.n_items)
        U = nc.targets.corrected(sim.annotations, confusion=conf)
        dev = np.max(np.abs(U.values[:, 1] - z))
        old += dev > correction_range(U.details["weights"], a, b) + 1e-12
        new += dev > target_range(U.details) + 1e-12
    assert new == 0 and old == 100
    assert target_range(U.details) == pytest.approx(2.5)
    assert correction_range(U.details["weights"], a, b) == pytest.approx(1.39, abs=0.01)


def test_a_bound_without_the_channel_term_for_fitted_channels_is_not_ok():
    """Fitted channels and mode='binned_only' (the default without a radius): the bound
    holds for the error against the fitted channels, not for the NC-ECE, so its status is
    'channels_fixed'; with a channel radius, or with given channels, it is ok."""
    conf = np.array([[[0.85, 0.15], [0.2, 0.8]]] * 3)
    ann = nc.simulate.dawid_skene(400, [0.6, 0.4], conf, seed=0).annotations
    p = np.random.default_rng(0).uniform(size=400)
    fit = nc.DawidSkene(2).fit(ann)
    fitted = nc.targets.corrected(ann, fit)
    e = nc.ece(p, fitted, n_bins=10, interval="bound")
    assert e.statuses == ("channels_fixed",) and "channel_radius" in e.message
    assert e.details["bound_mode"] == "binned_only"
    radius = nc.ece(p, fitted, n_bins=10, interval=nc.intervals.Bound(channel_radius=0.05))
    assert radius.statuses == ("ok",) and radius.high > e.high
    given = nc.ece(p, nc.targets.corrected(ann, confusion=conf), n_bins=10, interval="bound")
    assert given.statuses == ("ok",)
