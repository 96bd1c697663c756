"""Paper fidelity and reproducibility arguments (issue 23).

- Top-label maps (HB-Hard, HB-Soft, IR-Soft of "Confidence Calibration under Ambiguous
  Ground Truth") keep the uncalibrated predicted class and recalibrate its confidence;
  the comparison table scores that class by default.
- ``true_label_ece(predicted=, draws=)`` and ``compare_calibrators(draws=)`` take a
  given scored class and given label draws.
- ``HistogramBinning`` fitted on fewer items than bins says so in its status.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

import noisycal as nc

C = nc.calibrators
A = nc.ambiguity

# four items, three classes: the hand-computed cases below
P4 = np.array([[0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6], [0.45, 0.1, 0.45]])
PI4 = np.array([[0.2, 0.7, 0.1], [0.1, 0.8, 0.1], [0.5, 0.25, 0.25], [0.3, 0.3, 0.4]])


# ------------------------------------------------------ true_label_ece(predicted=, draws=)

def test_true_label_ece_scores_a_given_predicted_class_by_hand():
    # argmax (ties to the lowest index): classes 0, 1, 2, 0, confidences .5 .6 .6 .45,
    # targets .2 .8 .25 .3; one bin: |1.55/4 - 2.15/4| = 0.15
    kw = dict(form="expected", n_bins=1, interval=None)
    assert float(nc.true_label_ece(P4, PI4, **kw)) == pytest.approx(0.15, abs=1e-15)
    # scored classes 1, 1, 0, 2: confidences .3 .6 .1 .45, targets .7 .8 .5 .4
    pred = np.array([1, 1, 0, 2])
    assert float(nc.true_label_ece(P4, PI4, predicted=pred, **kw)) == pytest.approx(
        abs(2.4 / 4 - 1.45 / 4), abs=1e-15)
    # two bins [0, .5), [.5, 1]: items 0, 2, 3 (gap 1.6/3 - .85/3) and item 1 (gap .2)
    two = float(nc.true_label_ece(P4, PI4, predicted=pred, form="expected", n_bins=2,
                                  interval=None))
    assert two == pytest.approx(3 / 4 * (1.6 - 0.85) / 3 + 1 / 4 * 0.2, abs=1e-15)
    # the argmax given explicitly is the default
    same = nc.true_label_ece(P4, PI4, predicted=P4.argmax(1), **kw)
    assert float(same) == float(nc.true_label_ece(P4, PI4, **kw))
    assert same.details["predicted"] == "given"


def test_true_label_ece_takes_given_draws_by_hand():
    draws = np.array([[1, 1, 0, 2], [0, 1, 2, 2]])
    kw = dict(n_bins=1, interval=None)
    # argmax classes 0, 1, 2, 0 (mean confidence .5375): draw 1 hits 1 of 4, draw 2 3 of 4
    est = nc.true_label_ece(P4, PI4, draws=draws, **kw)
    assert float(est) == pytest.approx((0.2875 + 0.2125) / 2, abs=1e-15)
    assert est.details["n_draws"] == 2 and est.details["given_draws"] is True
    # given classes 1, 1, 0, 2 (mean confidence .3625): draw 1 hits all, draw 2 half
    both = nc.true_label_ece(P4, PI4, draws=draws, predicted=[1, 1, 0, 2], **kw)
    assert float(both) == pytest.approx((0.6375 + 0.1375) / 2, abs=1e-15)
    # the seed no longer changes the value, and n_draws is ignored
    for seed in (0, 7):
        again = nc.true_label_ece(P4, PI4, draws=draws, seed=seed, n_draws=5, **kw)
        assert float(again) == float(est)


def test_one_given_draw_is_the_expected_ece_against_its_one_hot_labels():
    rng = np.random.default_rng(3)
    P = softmax(rng.normal(0, 2, size=(300, 4)), axis=1)
    pi = rng.dirichlet(np.ones(4), size=300)
    d = rng.integers(0, 4, size=300)
    for kind in ("top_label", "classwise"):
        mc = nc.true_label_ece(P, pi, draws=d[None, :], kind=kind, interval=None)
        hard = nc.true_label_ece(P, np.eye(4)[d], form="expected", kind=kind, interval=None)
        assert float(mc) == pytest.approx(float(hard), abs=1e-15)


@pytest.mark.parametrize("kw, match", [
    (dict(draws=np.zeros((2, 3), int)), r"draws must have shape \(2, 4\)"),
    (dict(draws=np.zeros(4, int)), r"draws must have shape \(S, 4\)"),
    (dict(draws=np.zeros((0, 4), int)), r"S >= 1"),
    (dict(draws=np.full((2, 4), 3)), r"draws must hold class indices in 0..2"),
    (dict(draws=np.full((2, 4), -1)), r"draws must hold class indices in 0..2"),
    (dict(draws=np.full((2, 4), 0.5)), r"draws must hold class indices \(integers\)"),
    (dict(draws=np.zeros((2, 4), bool)), r"draws must hold class indices \(integers\)"),
    (dict(draws=np.zeros((2, 4), int), form="expected"), r"draws= are label draws"),
    (dict(predicted=[0, 1, 2]), r"predicted must have shape \(4,\)"),
    (dict(predicted=[0, 1, 2, 3]), r"predicted must hold class indices in 0..2"),
    (dict(predicted=[0, 1, 2, 0], kind="classwise"), r"predicted= is the scored class"),
])
def test_given_draws_and_classes_are_checked(kw, match):
    with pytest.raises(ValueError, match=match):
        nc.true_label_ece(P4, PI4, n_bins=1, interval=None, **kw)


# ----------------------------------------------- top-label maps keep the predicted class

def _ambiguous_problem(n: int, seed: int):
    """Low-confidence logits whose annotators rarely pick the predicted class: the
    recalibrated confidence falls below the rebuilt mass of another class."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.5, size=(n, 3))
    p = softmax(z, axis=1)
    c = p.argmax(1)
    pi = 0.6 * softmax(1.5 * z, axis=1) + 0.4 * rng.dirichlet(np.ones(3), size=n)
    low = p.max(1) < 0.55  # at low confidence the annotators move off the predicted class
    pi[low] = 0.3 * pi[low] + 0.7 * np.eye(3)[(c[low] + 1) % 3]
    return z, pi


def _by_hand_top_label_ece(conf, t, n_bins=15):
    b = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    gaps = [abs(t[b == h].mean() - conf[b == h].mean()) * np.mean(b == h)
            for h in range(n_bins) if np.any(b == h)]
    return float(np.sum(gaps))


def test_compare_calibrators_scores_the_uncalibrated_class_of_top_label_maps():
    z, pi = _ambiguous_problem(2000, seed=0)
    zc, zt, pc, pt = z[:1000], z[1000:], pi[:1000], pi[1000:]
    c = softmax(zt, axis=1).argmax(1)
    rows = np.arange(zt.shape[0])
    kw = dict(logits_cal=zc, target_cal=pc, logits_test=zt, target_test=pt,
              methods=["TS", "HB", "HB-Soft", "IR-Soft"], n_draws=5, seed=0)
    paper = A.compare_calibrators(**kw).set_index("method")
    rebuilt = A.compare_calibrators(**kw, predicted_class="recalibrated").set_index("method")
    maps = {"HB": C.HistogramBinning(n_bins=15).fit(logits=zc, target=A.voted_from(pc)),
            "HB-Soft": C.HistogramBinning(n_bins=15).fit(logits=zc, target=pc),
            "IR-Soft": C.IsotonicCalibration().fit(logits=zc, target=pc)}
    for name, cal in maps.items():
        Q = cal.predict_proba(logits=zt)
        moved = np.mean(Q.argmax(1) != c)
        assert moved > 0.05, (name, moved)  # the rebuilt argmax leaves c on some items
        g = cal.predict_confidence(logits=zt)
        np.testing.assert_array_equal(Q[rows, c], g)
        # the paper's ECE_true (expected form): confidence g of c against pi_c, by hand
        hand = _by_hand_top_label_ece(g, pt[rows, c])
        assert paper.loc[name, "ece_true_expected"] == pytest.approx(hand, abs=1e-12)
        voted_hand = _by_hand_top_label_ece(g, (pt.argmax(1) == c).astype(float))
        assert paper.loc[name, "ece_voted"] == pytest.approx(voted_hand, abs=1e-12)
        # the other option scores argmax Q (the behaviour before this change)
        k = Q.argmax(1)
        assert rebuilt.loc[name, "ece_true_expected"] == pytest.approx(
            _by_hand_top_label_ece(Q[rows, k], pt[rows, k]), abs=1e-12)
        assert paper.loc[name, "ece_true_expected"] != pytest.approx(
            rebuilt.loc[name, "ece_true_expected"], abs=1e-3)
        # Brier, NLL and the classwise ECE use the whole vector: the same either way
        for col in ("brier_expected", "nll", "cwece_true_mc"):
            assert paper.loc[name, col] == rebuilt.loc[name, col]
    # rows that are not top-label maps are unchanged
    assert paper.loc["TS"].equals(rebuilt.loc["TS"])
    with pytest.raises(ValueError, match="predicted_class"):
        A.compare_calibrators(**kw, predicted_class="argmax")


def test_compare_calibrators_takes_given_test_draws():
    z, pi = _ambiguous_problem(400, seed=1)
    rng = np.random.default_rng(2)
    draws = np.stack([(rng.random((200, 1)) > pi[200:].cumsum(1)).sum(1) for _ in range(3)])
    kw = dict(logits_cal=z[:200], target_cal=pi[:200], logits_test=z[200:],
              target_test=pi[200:], methods=["Uncalibrated", "TS"], draws=draws)
    a = A.compare_calibrators(**kw, seed=0).set_index("method")
    b = A.compare_calibrators(**kw, seed=5, n_draws=2).set_index("method")
    np.testing.assert_array_equal(a["ece_true_mc"], b["ece_true_mc"])
    P = softmax(z[200:], axis=1)
    assert a.loc["Uncalibrated", "ece_true_mc"] == float(
        nc.true_label_ece(P, pi[200:], draws=draws, interval=None))
    with pytest.raises(ValueError, match=r"draws must have shape \(3, 200\)"):
        A.compare_calibrators(**{**kw, "draws": draws[:, :-1]})


# ------------------------------------------------ HistogramBinning on too few items

@pytest.mark.parametrize("n", [1, 3])
def test_histogram_on_fewer_items_than_bins_is_not_ok(n):
    rng = np.random.default_rng(n)
    z, y = rng.uniform(0, 1, n), rng.integers(0, 2, n)
    with pytest.warns(nc.IdentifiabilityWarning, match=f"only {n} fitting item"):
        h = C.HistogramBinning().fit(probs=z, target=y)
    assert h.status_ == "too_few_items"
    assert f"{10 - np.count_nonzero(h.counts_)} bin(s) are empty" in h.message_
    P = softmax(rng.normal(size=(n, 3)), axis=1)
    with pytest.warns(nc.IdentifiabilityWarning, match="too_few_items"):
        top = C.HistogramBinning(n_bins=5).fit(probs=P, target=rng.integers(0, 3, n))
    assert top.status_ == "too_few_items"


def test_histogram_with_as_many_items_as_bins_is_ok():
    z = np.linspace(0.05, 0.95, 10)
    h = C.HistogramBinning(n_bins=10).fit(probs=z, target=np.arange(10) % 2)
    assert h.status_ == "ok" and h.message_ == ""
    one = C.HistogramBinning(n_bins=1).fit(probs=z[:2], target=np.array([0, 1]))
    assert one.status_ == "ok"
    with pytest.warns(nc.IdentifiabilityWarning, match="only 1 fitting item"):
        assert C.HistogramBinning(n_bins=1).fit(probs=z[:1], target=[1]).status_ \
            == "too_few_items"


# ------------------------------------------------------- protocol runners take splits=

def test_check_splits_refuses_overlapping_out_of_range_and_malformed_parts():
    from noisycal.experiments.noise import check_splits

    names = ("cal", "test")
    ok = check_splits({"cal": [3, 1], "test": np.array([0, 2])}, 4, names)
    assert ok["cal"].tolist() == [3, 1] and ok["test"].dtype == np.int64
    for parts, match in [
        ({"cal": [0, 1], "test": [1, 2]}, r"'cal' and 'test' must be disjoint, but share 1"),
        ({"cal": [0, 4], "test": [1]}, r"splits\['cal'\] must hold indices in 0..3"),
        ({"cal": [-1], "test": [1]}, r"splits\['cal'\] must hold indices in 0..3"),
        ({"cal": [0, 0], "test": [1]}, r"splits\['cal'\] repeats an index"),
        ({"cal": [], "test": [1]}, r"non-empty 1-D array"),
        ({"cal": [0.0], "test": [1]}, r"integer item indices"),
        ({"cal": [0]}, r"must map exactly the parts \['cal', 'test'\]"),
        ([[0], [1]], r"must map exactly the parts"),
    ]:
        with pytest.raises(ValueError, match=match):
            check_splits(parts, 4, names)


def test_set_mass_protocol_takes_given_splits():
    from noisycal.experiments.set_mass import run_protocol, splits

    rng = np.random.default_rng(4)
    z = rng.normal(0, 2, size=(300, 4))
    y = (rng.random((300, 1)) > softmax(z, axis=1).cumsum(1)).sum(1)
    methods = {"TS": (C.TemperatureScaling, None, None)}
    seeded = run_protocol(z, y, methods, n_splits=2, cal_fraction=0.3, seed=5)
    given = run_protocol(z, y, methods, splits=list(splits(300, n_splits=2,
                                                           cal_fraction=0.3, seed=5)))
    cols = [c for c in seeded.columns if c != "seconds"]
    pd_equal = seeded[cols].reset_index(drop=True).equals(given[cols].reset_index(drop=True))
    assert pd_equal
    # a split of our own: the first 100 items calibrate, the last 200 test
    own = run_protocol(z, y, methods, splits=[(np.arange(100), np.arange(100, 300))])
    ts = C.TemperatureScaling().fit(logits=z[:100], target=y[:100])
    from noisycal.experiments.set_mass import evaluate

    want = evaluate(ts.predict_proba(logits=z[100:]), y[100:])
    assert own.loc[0, "ECE"] == want["ECE"] and len(own) == 1
    for bad, match in [([(np.arange(100), np.arange(50, 300))], r"splits\[0\]: the parts "
                        "'cal' and 'test' must be disjoint"),
                       ([(np.arange(100), np.arange(100, 301))], r"splits\[0\]\['test'\] "
                        "must hold indices in 0..299"),
                       ([np.arange(10)], r"splits\[0\] must be a \(calibration, test\)"),
                       ([], "non-empty sequence"), ("abc", "non-empty sequence")]:
        with pytest.raises(ValueError, match=match):
            run_protocol(z, y, methods, splits=bad)


def test_lwcal_cell_takes_given_splits():
    pytest.importorskip("sklearn")
    from noisycal.experiments.grid import run_cell
    from noisycal.experiments.noise import split_indices
    from noisycal.experiments.tasks import load_task

    cell = ("rf", "iris_versicolor", 1, "symmetric", 0.3)
    _, y = load_task("iris_versicolor")
    seeded = run_cell(cell, gate_grid=False, methods=["raw", "lwcal"])
    given = run_cell(cell, gate_grid=False, methods=["raw", "lwcal"],
                     splits=split_indices(y, 1))
    for a, b in zip(seeded, given, strict=True):
        assert {k: v for k, v in a.items() if k != "seconds"} == \
            {k: v for k, v in b.items() if k != "seconds"}
    own = split_indices(y, 2)  # another seed's split under this cell's noise and learner
    rows = run_cell(cell, gate_grid=False, methods=["raw"], splits=own)
    assert rows[0]["n_test"] == own["test"].size
    assert rows[0]["n_pos_test"] == int(y[own["test"]].sum())
    clash = {**own, "test": np.concatenate([own["test"], own["cal"][:1]])}
    with pytest.raises(ValueError, match="'cal' and 'test' must be disjoint"):
        run_cell(cell, gate_grid=False, methods=["raw"], splits=clash)
    with pytest.raises(ValueError, match=r"must map exactly the parts"):
        run_cell(cell, gate_grid=False, methods=["raw"], splits={"train": own["train"]})


def test_isotonic_merges_exact_ties_only_where_scikit_learn_merges_within_1e_15():
    # the tie rule stated in benchmarks/README.md: scores 5.6e-17 apart stay two points
    # here, one point (at the first score) in scikit-learn; merged by hand, they agree
    sk = pytest.importorskip("sklearn.isotonic")
    a = 0.3
    b = np.nextafter(a, 1.0)  # a distinct float within 1e-15 of a
    x = np.array([0.1, a, b, 0.6])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    t = np.array([0.2, 0.45])
    ours = C.IsotonicCalibration().fit(probs=x, target=y)
    ref = sk.IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(x, y)
    # ours: 0 up to a, 1 from b on; scikit-learn: one point (a, 0.5) between 0 and 1
    np.testing.assert_allclose(ours.predict_proba(probs=t), [0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(ref.predict(t), [0.25, 0.75], atol=1e-15)
    merged = C.IsotonicCalibration().fit(probs=np.where(x == b, a, x), target=y)
    np.testing.assert_allclose(merged.predict_proba(probs=t), ref.predict(t), atol=1e-15)


def test_compare_calibrators_takes_given_mcts_labels():
    z, pi = _ambiguous_problem(400, seed=3)
    rng = np.random.default_rng(4)
    labels = (rng.random((200, 2, 1)) > pi[:200, None, :].cumsum(2)).sum(2)  # S = 2
    kw = dict(logits_cal=z[:200], target_cal=pi[:200], logits_test=z[200:],
              target_test=pi[200:], methods=["MCTS"], n_draws=3)
    a = A.compare_calibrators(**kw, mcts_labels=labels, seed=0)
    b = A.compare_calibrators(**kw, mcts_labels=labels, seed=1, n_samples=7)
    shares = np.stack([np.bincount(r, minlength=3) / 2 for r in labels])
    T = C.TemperatureScaling().fit(logits=z[:200], target=shares).temperature_
    assert a.loc[0, "T"] == b.loc[0, "T"] == pytest.approx(T, rel=1e-12)
    for bad, match in [(labels[:, :0], r"shape \(200, S\) with S >= 1"),
                       (labels[:-1], r"shape \(200, S\)"), (labels + 3, "class indices 0..2"),
                       (labels.astype(float), "class indices 0..2")]:
        with pytest.raises(ValueError, match=match):
            A.compare_calibrators(**kw, mcts_labels=bad)
