"""The LWCal tabular protocol (noisycal.experiments): tasks, noise, metrics, bootstrap, grid.

Reference: "LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration
Labels", Table II (the tasks), Section IV (splits, noise, metrics, paired bootstrap).
"""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")

from noisycal.calibrators import GatedLWCal, LWCal  # noqa: E402
from noisycal.experiments import evaluate as ev  # noqa: E402
from noisycal.experiments import noise  # noqa: E402
from noisycal.experiments.grid import (  # noqa: E402
    COLUMNS,
    main_cells,
    read_results,
    robustness_cells,
    run_cell,
    run_grid,
    small_cells,
)
from noisycal.experiments.lwcal_protocol import main as cli  # noqa: E402
from noisycal.experiments.methods import make_learner, method_specs  # noqa: E402
from noisycal.experiments.tasks import TASK_NAMES, TASKS, load_task, task_table  # noqa: E402

# Table II of the paper: n, d, positive rate (three decimals).
TABLE_II = {
    "breast_cancer": (569, 30, 0.627), "wine_class0": (178, 13, 0.331),
    "wine_class2": (178, 13, 0.270), "digits_high": (1797, 64, 0.499),
    "digits_even": (1797, 64, 0.496), "iris_versicolor": (150, 4, 0.333),
    "synthetic_overlap": (1800, 24, 0.496), "synthetic_sparse": (1900, 72, 0.503),
    "synthetic_imbalance": (2200, 30, 0.225),
}


# ----------------------------------------------------------------------------- tasks
def test_dataset_table_equals_table_ii():
    t = task_table().set_index("task")
    assert tuple(t.index) == tuple(TABLE_II)
    for name, (n, d, pos) in TABLE_II.items():
        assert (t.loc[name, "n"], t.loc[name, "d"]) == (n, d), name
        if TASKS[name].source == "sklearn":
            assert round(t.loc[name, "pos_rate"], 3) == pos, name
        else:
            # make_classification's output may change between scikit-learn versions; with
            # 1.9.1 the chosen random_state reproduces the third decimal as well
            assert abs(t.loc[name, "pos_rate"] - pos) < 0.01, name
        assert t.loc[name, "paper_pos_rate"] == pos


def test_task_labels_are_binary_and_read_only():
    X, y = load_task("wine_class2")
    assert set(np.unique(y)) == {0, 1} and int(y.sum()) == 48
    with pytest.raises(ValueError):
        y[0] = 1
    with pytest.raises(ValueError, match="name"):
        load_task("wine")


# ----------------------------------------------------------------------------- noise
def test_splits_are_stratified_50_25_25_and_disjoint():
    _, y = load_task("breast_cancer")
    s = noise.split_indices(y, 3)
    allidx = np.concatenate([s["train"], s["cal"], s["test"]])
    assert np.array_equal(np.sort(allidx), np.arange(y.size))
    assert (s["train"].size, s["cal"].size, s["test"].size) == (284, 142, 143)
    for part in s.values():
        assert abs(y[part].mean() - y.mean()) < 0.01
    again = noise.split_indices(y, 3)
    assert all(np.array_equal(s[k], again[k]) for k in s)


@pytest.mark.parametrize("rate", [0.1, 0.2, 0.3, 0.4])
def test_realised_noise_rates_within_binomial_error(rate):
    n = 20000
    y = (np.arange(n) % 3 == 0).astype(int)  # a third positive
    for mode in noise.MODES:
        y_noisy = noise.noisy_labels(y, seed=0, task="t", mode=mode, rate=rate, part="cal")
        for k, n_k in ((1, int(y.sum())), (0, int((1 - y).sum()))):
            flip = np.mean(y_noisy[y == k] != k)
            want = rate if (mode == "symmetric" or k == 1) else 0.5 * rate
            se = np.sqrt(want * (1 - want) / n_k)
            assert abs(flip - want) < 4 * se, (mode, k, flip, want)


def test_noise_is_nested_across_rates_and_follows_the_asymmetric_law():
    y = np.array([0, 1] * 500)
    u = noise.uniforms(y.size, seed=1, task="t", mode="asymmetric", part="train")
    prev = np.zeros(y.size, bool)
    for r in noise.RATES:
        flipped = noise.corrupt(y, u, "asymmetric", r) != y
        assert np.all(flipped[prev])  # every earlier flip stays flipped
        assert np.array_equal(flipped, u < np.where(y == 1, r, r / 2))
        prev = flipped
    assert 0.25 < prev[y == 1].mean() < 0.55 and 0.12 < prev[y == 0].mean() < 0.28  # 0.4, 0.2
    assert np.array_equal(noise.corrupt(y, u, "symmetric", 0.0), y)


def test_train_and_calibration_streams_are_independent():
    kw = dict(seed=0, task="digits_high", mode="symmetric")
    a = noise.uniforms(5000, part="train", **kw)
    b = noise.uniforms(5000, part="cal", **kw)
    c = noise.uniforms(5000, part="train", **{**kw, "mode": "asymmetric"})
    for other in (b, c):
        assert abs(np.corrcoef(a, other)[0, 1]) < 4 / np.sqrt(5000)
    assert np.array_equal(a, noise.uniforms(5000, part="train", **kw))


@pytest.mark.parametrize("kwargs, arg", [
    (dict(mode="symmetric", rate=40), "rate"), (dict(mode="symmetric", rate=0.5), "rate"),
    (dict(mode="sym", rate=0.2), "mode"),
    (dict(mode="asymmetric", rate=0.2, neg_ratio=2), "neg_ratio"),
])
def test_bad_noise_arguments_raise_naming_them(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        noise.flip_probabilities(np.array([0, 1]), **kwargs)


def test_labels_outside_0_1_are_rejected():
    with pytest.raises(ValueError, match="y"):
        noise.flip_probabilities(np.array([0, 2]), "symmetric", 0.1)


# ----------------------------------------------------------------------------- metrics
def test_metrics_on_a_hand_case():
    p = np.array([0.1, 0.1, 0.5, 0.9, 0.9, 1.0])
    y = np.array([0, 1, 0, 1, 1, 0])
    m = ev.evaluate(p, y)
    # 15 bins: {0.1, 0.1} in bin 1, {0.5} in bin 7, {0.9, 0.9} in bin 13, {1.0} in bin 14
    want_ece = (2 * abs(0.5 - 0.1) + abs(0 - 0.5) + 2 * abs(1 - 0.9) + abs(0 - 1.0)) / 6
    assert m["ece"] == pytest.approx(want_ece, abs=1e-12)
    want_brier = (0.01 + 0.81 + 0.25 + 0.01 + 0.01 + 1.0) / 6
    assert m["brier"] == pytest.approx(want_brier, abs=1e-12)
    # 1.0 on a negative: clipped at 1 - 1e-15, whose complement in float64 is 9.992e-16
    want_nll = -(np.log(0.9) + np.log(0.1) + np.log(0.5) + 2 * np.log(0.9)
                 + np.log(1.0 - (1.0 - 1e-15))) / 6
    assert m["nll"] == pytest.approx(want_nll, rel=1e-12)
    # AUC: 3 positives x 3 negatives; pairs (pos score > neg score) + ties / 2
    pos, neg = p[y == 1], p[y == 0]
    want_auc = np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])
    assert m["auc"] == pytest.approx(want_auc, abs=1e-12)
    assert m["ece_pos"] == pytest.approx((abs(1 - 0.1) + 2 * abs(1 - 0.9)) / 3, abs=1e-12)


def test_metrics_agree_with_sklearn():
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    rng = np.random.default_rng(4)
    p = rng.uniform(0.01, 0.99, size=400)
    y = (rng.uniform(size=400) < p).astype(int)
    m = ev.evaluate(p, y)
    assert m["brier"] == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert m["nll"] == pytest.approx(log_loss(y, p), abs=1e-12)
    assert m["auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)


def _results(values_a, values_b):
    n = len(values_a)
    base = dict(learner="rf", task="t", mode="symmetric", rate=0.2)
    rows = [{**base, "seed": i, "method": "a", "ece": v} for i, v in enumerate(values_a)]
    rows += [{**base, "seed": i, "method": "b", "ece": v} for i, v in enumerate(values_b)]
    assert len(rows) == 2 * n
    return pd.DataFrame(rows)


def test_paired_bootstrap_hand_case():
    # differences 0 and 1: resampled means are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4,
    # so the 2.5% and 97.5% percentiles of 2000 replicates are 0 and 1
    est = ev.paired_bootstrap(_results([0.3, 1.3], [0.3, 0.3]), "a", "b", "ece")
    assert est.value == pytest.approx(0.5, abs=1e-12)
    assert est.interval == (pytest.approx(0.0, abs=1e-12), pytest.approx(1.0, abs=1e-12))
    assert (est.level, est.n_boot, est.n, est.method) == (0.95, 2000, 2, "percentile")
    assert est.replicates.size == 2000
    share = np.mean(np.isclose(est.replicates, 0.5))
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / 2000)


def test_paired_bootstrap_pairs_the_cells():
    # a constant difference between methods over very different cells: the paired interval
    # is the constant itself (an unpaired one would span the spread of the cells)
    rng = np.random.default_rng(0)
    b = rng.uniform(0, 1, size=50)
    est = ev.paired_bootstrap(_results(b + 0.01, b), "a", "b", "ece", n_boot=500)
    assert est.value == pytest.approx(0.01, abs=1e-12)
    assert est.interval[0] == pytest.approx(0.01, abs=1e-12)
    assert est.interval[1] == pytest.approx(0.01, abs=1e-12)


def test_paired_bootstrap_refuses_unmatched_cells():
    df = _results([0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ValueError, match="matched"):
        ev.paired_bootstrap(df.iloc[:-1], "a", "b", "ece")
    with pytest.raises(ValueError, match="baseline"):
        ev.paired_bootstrap(df, "a", "zzz", "ece")


# ----------------------------------------------------------------------------- grid
def test_grid_sizes_match_the_paper():
    cells = main_cells(clean=False)
    assert len(cells) == 432 and len(set(cells)) == 432
    assert len(main_cells()) == 432 + 54
    rob = robustness_cells()
    assert len(rob) == 324 and {c[0] for c in rob} == {"rf", "et", "gb"}
    assert set(c for c in rob if c[0] == "rf") <= set(cells)  # the RF cells are shared
    assert len(small_cells()) == 24
    assert [c[2] for c in cells[:72]] == [0] * 72  # seed first


def test_a_cell_is_the_library_pipeline_on_noisy_labels():
    cell = ("rf", "iris_versicolor", 1, "symmetric", 0.3)
    rows = {r["method"]: r for r in run_cell(cell, gate_grid=False)}
    assert set(rows) == set(method_specs())
    # rebuild the cell by hand: split, noisy train and calibration labels, clean test
    X, y = load_task("iris_versicolor")
    s = noise.split_indices(y, 1)
    kw = dict(seed=1, task="iris_versicolor", mode="symmetric", rate=0.3)
    y_tr = noise.noisy_labels(y[s["train"]], part="train", **kw)
    y_cal = noise.noisy_labels(y[s["cal"]], part="cal", **kw)
    rf = make_learner("rf", 1).fit(X[s["train"]], y_tr)
    p_cal, p_te = (rf.predict_proba(X[s[k]])[:, 1] for k in ("cal", "test"))
    for name, cal in (("lwcal", LWCal()), ("gated_lwcal", GatedLWCal())):
        p_hat = cal.fit(probs=p_cal, target=y_cal).predict_proba(probs=p_te)
        want = ev.evaluate(p_hat, y[s["test"]])
        assert rows[name]["ece"] == pytest.approx(want["ece"], abs=1e-12)
        assert rows[name]["nll"] == pytest.approx(want["nll"], abs=1e-12)
    assert rows["raw"]["auc"] == pytest.approx(ev.evaluate(p_te, y[s["test"]])["auc"])
    r = rows["raw"]
    assert r["flip_cal"] == pytest.approx(np.mean(y_cal != y[s["cal"]]))
    assert r["n_test"] == s["test"].size and r["n_pos_test"] == int(y[s["test"]].sum())


def test_grid_resumes_from_its_results_file(tmp_path):
    out = tmp_path / "results.csv"
    cells = [("rf", "iris_versicolor", 0, "symmetric", 0.2),
             ("rf", "iris_versicolor", 0, "asymmetric", 0.2)]
    df = run_grid(cells, out, jobs=1, progress=False, gate_grid=False)
    n_methods = len(method_specs())
    assert len(df) == 2 * n_methods and list(df.columns) == list(COLUMNS)
    mtime = out.stat().st_mtime_ns
    again = run_grid(cells, out, jobs=1, progress=False, gate_grid=False)
    assert out.stat().st_mtime_ns == mtime and len(again) == len(df)
    # drop the second cell's rows: only that cell is run again, with the same numbers
    df[df["mode"] == "symmetric"].to_csv(out, index=False)
    third = run_grid(cells, out, jobs=1, progress=False, gate_grid=False)
    assert len(third) == 2 * n_methods
    key = ["mode", "method"]
    a = df.sort_values(key).reset_index(drop=True)
    b = third.sort_values(key).reset_index(drop=True)
    np.testing.assert_allclose(a["ece"], b["ece"], rtol=0, atol=1e-12)
    # a method missing from a stored cell (e.g. added to the registry later) is added alone
    third[third["method"] != "lwcal"].to_csv(out, index=False)
    fourth = run_grid(cells, out, jobs=1, progress=False, gate_grid=False)
    assert len(fourth) == 2 * n_methods
    c = fourth.sort_values(key).reset_index(drop=True)
    np.testing.assert_allclose(c["nll"], b["nll"], rtol=0, atol=1e-12)
    assert list(fourth["method"].iloc[-2:]) == ["lwcal", "lwcal"]
    with pytest.raises(ValueError, match="unknown keyword"):
        run_grid(cells, out, jobs=1, gate_gird=False)


def test_report_only_prints_the_method_table(tmp_path, capsys):
    out = tmp_path / "r.csv"
    cells = [("rf", "wine_class2", s, m, 0.2) for s in (0, 1) for m in noise.MODES]
    run_grid(cells, out, jobs=1, progress=False, gate_grid=False)
    assert cli(["--report-only", "--out", str(out), "--n-boot", "200"]) == 0
    text = capsys.readouterr().out
    assert "Table III" in text and "lwcal" in text and "Paired bootstrap" in text
    assert len(read_results(out)) == 4 * len(method_specs())
    assert cli(["--report-only", "--out", str(tmp_path / "none.csv")]) == 1


def test_task_names_cover_table_ii():
    assert TASK_NAMES == tuple(TABLE_II)
