"""Issue "nothing silent": workflow, report and message cases.

Each case is now a ValueError naming the argument or the right answer: the per-class
table of evaluate_sets carries the target's class labels (1); the Markdown export escapes
HTML and pipes and every export writes the plug-in value and n (2); compare_calibration's
mixture average reads (n, 2) binary predictions as their second column (3); a pandas
Categorical target needs classes= as a string array does (4); the data-not-found message
lists each place once (5).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from small_nuts import ONE_CHAIN

import noisycal as nc
from noisycal.calibrators.conformal.evaluate import evaluate_sets
from noisycal.datasets import _loaders
from noisycal.workflows.comparison import compare_calibration


# ----------------------------------------------------------------------------- case 1
def test_per_class_table_carries_the_targets_class_labels():
    sets = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [0, 1, 1]], dtype=bool)
    ev = evaluate_sets(sets, nc.targets.hard(["c", "a", "b", "b"], classes=["c", "a", "b"]))
    assert ev.per_class["class"].tolist() == ["c", "a", "b"]
    assert ev.per_class["n"].tolist() == [1, 1, 2]
    assert ev.per_class["coverage"].tolist() == [1.0, 1.0, 0.5]
    # integer labels keep the class indices
    assert evaluate_sets(sets, [0, 1, 2, 2]).per_class["class"].tolist() == [0, 1, 2]


# ----------------------------------------------------------------------------- case 2
def _md_cells(line):
    """Cells of a Markdown table row, split at pipes no backslash escapes."""
    cells, cur, i = [], "", 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            cur += line[i:i + 2]
            i += 2
            continue
        if line[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += line[i]
        i += 1
    return cells[1:]  # the text before the leading pipe is empty


def test_markdown_export_escapes_html_and_pipes_and_keeps_plugin_and_n():
    sim = nc.simulate.classifier(200, 3, seed=0)
    names = ["<script>alert(1)</script>", "a|b", "c\\", "x\\|y & z"]
    table = nc.report(sim.probs, dict.fromkeys(names, sim.labels), metrics=["brier"])
    md = table.to_markdown().splitlines()
    header = ["target", "metric", "estimate", "plugin", "low", "high", "level", "interval",
              "estimator", "n", "statuses", "message"]
    assert _md_cells(md[0]) == header
    assert [len(_md_cells(line)) for line in md] == [12] * (2 + len(names))
    assert [_md_cells(line)[0] for line in md[2:]] == [
        "&lt;script&gt;alert(1)&lt;/script&gt;", "a\\|b", "c\\\\", "x\\\\\\|y &amp; z"]
    assert "<script>" not in "\n".join(md)
    row = _md_cells(md[2])
    assert row[3] == f"{table['plugin'].iloc[0]:.4f}" and row[9] == "200"
    # the other exports write them too
    html, latex = table.to_html(), table.to_latex()
    assert ">plugin</th>" in html and ">n</th>" in html and ">200</td>" in html
    assert "estimate & plugin & low" in latex and "estimator & n & statuses" in latex
    assert "&lt;script&gt;" in html


# ----------------------------------------------------------------------------- case 3
@pytest.fixture(scope="module")
def binary_nuts():
    # two tiny NUTS fits of one model (two seeds: one compiled program, about 30 s cold)
    conf = np.tile(np.array([[0.85, 0.15], [0.2, 0.8]]), (3, 1, 1))
    sim = nc.simulate.dawid_skene(40, [0.6, 0.4], conf, seed=0)
    nuts = nc.engines.NUTS(**ONE_CHAIN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)  # one short chain
        fits = {f"seed {s}": nc.DawidSkene(2).fit(sim.annotations, method=nuts, seed=s)
                for s in (0, 1)}
    rng = np.random.default_rng(0)
    p1 = np.clip(0.3 + 0.4 * sim.true_class + rng.normal(0.0, 0.1, 40), 0.01, 0.99)
    return sim, fits, p1


@pytest.mark.slow  # the NUTS compilation of its fixture
def test_mixture_average_reads_two_binary_columns_as_the_second(binary_nuts):
    sim, fits, p1 = binary_nuts
    P = np.column_stack([1.0 - p1, p1])
    one = compare_calibration(fits, sim.annotations, p1, n_bins=5, average="mixture")
    two = compare_calibration(fits, sim.annotations, P, n_bins=5, average="mixture")
    pd.testing.assert_frame_equal(one.nc_ece, two.nc_ece)
    assert two.averaged.value == one.averaged.value
    assert np.all(np.isfinite(one.averaged.interval))
    np.testing.assert_array_equal(two.averaged.interval, one.averaged.interval)
    assert two.averaged.statuses == one.averaged.statuses
    # a kind the credible NC-ECE of two classes is not: refused, naming kind
    with pytest.raises(ValueError, match=r"kind='top_label': average='mixture'"):
        compare_calibration(fits, sim.annotations, P, n_bins=5, average="mixture",
                            kind="top_label")


# ----------------------------------------------------------------------------- case 4
def test_a_categorical_target_needs_classes_as_a_string_array_does():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), 30)
    y = np.arange(30) % 3
    labels = np.array(["dog", "cat", "bird"], dtype=object)[y]
    ref = float(nc.ece(P, y, interval=None))
    for target in (pd.Categorical(labels), pd.Series(pd.Categorical(labels)), labels):
        for metric in (nc.ece, nc.brier, nc.cmce):
            with pytest.raises(ValueError, match="classes"):
                metric(P, target, interval=None)
    cat = pd.Categorical(labels)
    classes = ["dog", "cat", "bird"]
    assert float(nc.ece(P, cat, classes=classes, interval=None)) == ref
    # categories 0..K-1 in order are read as integer labels; in another order refused
    assert float(nc.ece(P, pd.Categorical(y), interval=None)) == ref
    with pytest.raises(ValueError, match=r"categories \[2, 0, 1\].*give classes="):
        nc.ece(P, pd.Categorical(y, categories=[2, 0, 1]), interval=None)
    # a DataFrame naming the categories as its columns is matched by label
    df = pd.DataFrame(P, columns=classes)[["bird", "cat", "dog"]]
    assert float(nc.ece(df, cat, interval=None)) == ref
    # prediction sets too
    sets = P > 0.3
    with pytest.raises(ValueError, match="classes"):
        evaluate_sets(sets, pd.Categorical(labels))


# ----------------------------------------------------------------------------- case 5
def test_data_not_found_lists_each_place_once(tmp_path, monkeypatch):
    # cwd/../shared/data and <checkout>/../shared/data are one folder here
    checkout = tmp_path / "checkout"
    (checkout / "noisycal" / "datasets").mkdir(parents=True)
    monkeypatch.setenv(_loaders.ENV_VAR, "")  # empty: not set
    monkeypatch.setattr(_loaders, "__file__",
                        str(checkout / "noisycal" / "datasets" / "_loaders.py"))
    monkeypatch.chdir(checkout)
    with pytest.raises(FileNotFoundError) as err:
        nc.datasets.load_cifar10n()
    want = (tmp_path / "shared" / "data" / "cifar10n" / "cifar10n.npz").resolve()
    assert str(err.value).startswith(f"CIFAR-10N not found; looked for {want}. Set $")
    assert str(err.value).count("cifar10n.npz") == 1
