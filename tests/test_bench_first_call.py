"""A reduced ``benchmarks/bench_first_call.py``: the simulated design (every item rated by
each of 3 annotators, 10 classes) at 2,000 items, in one fresh ``cold`` process and, when
its interpreter is there, crowd-kit's; and its page with and without the design."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
CROWDKIT = "/tmp/ck/bin/python"
ACCURACY_2000 = 1683 / 2000  # MAP accuracy of the seeded 2,000-item design


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bench():
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(BENCH))  # the script imports benchmarks/_output.py
        return _load("bench_first_call", BENCH / "bench_first_call.py")


@pytest.fixture(scope="module")
def reduced(bench):
    """The design at 2,000 items: one ``cold`` process (no cache rows), crowd-kit's."""
    args = bench.parse_args(["--sim-items", "2000", "--crowdkit-python", CROWDKIT])
    return bench.simulated(args, bench._env(None), has_cache=False)


def test_the_design_is_every_annotator_rating_every_item(bench, tmp_path):
    path = str(tmp_path / "r.npz")
    sim = bench.simulate_design(300, path)
    assert sim == {"n_items": 300, "n_annotators": 3, "n_classes": 10, "accuracy": 0.7,
                   "off_diagonal": pytest.approx(0.3 / 9), "prevalence": "uniform",
                   "seed": 0, "n_ratings": 900}
    f = np.load(path)
    pairs = sorted(zip(f["item"].tolist(), f["annotator"].tolist(), strict=True))
    assert pairs == [(i, j) for i in range(300) for j in range(3)]
    agree = np.mean(f["label"] == f["true_class"][f["item"]])
    assert agree == pytest.approx(0.7, abs=0.05)   # accuracy 0.7 per rating
    assert bench.parse_args([]).sim_items == 20000


def test_reduced_run_measures_the_design_and_the_fit(reduced):
    assert reduced["n_items"] == 2000 and reduced["n_ratings"] == 6000
    cold = reduced["cold"]
    assert "map_labels" not in cold and "cache-warm" not in reduced
    assert cold["status"] == "ok" and cold["first_fit_s"] > 0
    assert set(cold["first_fit_phases_s"]) == {"multistart_em", "ds_identification"}
    # the seeded design's MAP accuracy (3 annotators of accuracy 0.7, 10 classes)
    assert cold["map_accuracy"] == pytest.approx(ACCURACY_2000, abs=1e-12)


@pytest.mark.skipif(not os.path.exists(CROWDKIT), reason="no crowd-kit interpreter")
def test_reduced_run_agrees_with_crowdkit(reduced):
    ck, cold = reduced["crowdkit"], reduced["cold"]
    assert ck is not None and "map_labels" not in ck
    assert cold["ratio_to_crowdkit"] == pytest.approx(cold["first_fit_s"] / ck["first_fit_s"])
    assert abs(ck["map_accuracy"] - cold["map_accuracy"]) <= 0.005
    assert cold["map_agreement_crowdkit"] >= 0.99


def test_the_page_renders_with_and_without_the_design(reduced, tmp_path):
    bp = _load("benchmark_pages", REPO / "docs" / "benchmark_pages.py")
    rec = copy.deepcopy(bp.load("bench_first_call_before"))
    assert rec is not None
    rec["result"].pop("simulated", None)  # a record from before the design was added
    without = bp.benchmark_tables._first_call_one("bench_first_call_before", rec)
    assert without["simulated"] == ""
    rec["result"]["simulated"] = reduced
    page = bp.benchmark_tables._first_call_one("bench_first_call", rec)["simulated"]
    assert "2,000 items, 3 annotators" in page and "6,000 ratings" in page
    assert f"{reduced['cold']['map_accuracy']:.4f} (`ok`" in page
    (tmp_path / "bench_first_call_before.json").write_text(json.dumps(rec))
    assert "2,000 items" in bp.page("bench_first_call", results=tmp_path)
