"""A reduced ``benchmarks/gaussian_toy_table1.py`` (the Gaussian toy of "Noisy-Label
Calibration with Multiple Unreliable Labels", Table 1 design): the population references
by quadrature, the Gaussian Oracle ECE on a hand case, and three seeded repetitions of the
shifted truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from benchmark_scripts import load_benchmark

import noisycal as nc

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("gaussian_toy_table1")


def test_oracle_ece_is_the_bin_moments_of_m_minus_z(bench):
    z = np.array([0.05, 0.15, 0.12, 0.55, 0.95])   # bins 0, 1, 1, 5, 9 of ten
    m = np.array([0.00, 0.25, 0.07, 0.45, 1.00])
    # (|-0.05| + |0.10 - 0.05| + |-0.10| + |0.05|) / 5: bin 1's gaps partly cancel
    assert bench.oracle_ece(z, m, 10) == pytest.approx(0.05, abs=1e-12)
    assert np.mean(np.abs(m - z)) == pytest.approx(0.07)   # unbinned: larger
    assert bench.oracle_ece(z, m, 1) == pytest.approx(abs(np.sum(m - z)) / 5, abs=1e-12)


def test_population_references_by_quadrature(bench):
    assert bench.population("calibrated", 10) == {"ece": 0.0, "ece_binned": 0.0}
    pop = bench.population("shifted", 10)
    assert pop["ece"] == pytest.approx(0.0896264, abs=1e-7)
    assert pop["ece_binned"] == pytest.approx(0.0896248, abs=1e-7)
    t = nc.simulate.gaussian_toy(200_000, truth="shifted", seed=5)
    assert np.mean(np.abs(t.m - t.z)) == pytest.approx(pop["ece"], abs=1e-3)


def test_shifted_nc_ece_with_true_channels_beats_the_majority_vote(bench):
    pop = bench.population("shifted", 10)
    reps = [bench.replicate("shifted", r, n_ev=5000, n_ch=5000, n_bins=10, weights="iv",
                            level=0.9, em=False) for r in range(3)]
    s = bench.summarise(reps, pop)
    rows = s["rows"]
    assert rows["nc_true"]["mae"] < rows["majority_vote"]["mae"] / 2   # 0.0032 < 0.0102
    assert rows["majority_vote"]["bias"] > 0.005   # majority vote overstates the error
    np.testing.assert_allclose([reps[r]["majority_vote"] for r in range(3)],
                               [0.096785, 0.104640, 0.097992], atol=1e-6)
    np.testing.assert_allclose([reps[r]["nc_true"]["plugin"] for r in range(3)],
                               [0.088973, 0.098287, 0.089329], atol=1e-6)
    assert rows["oracle"]["mae"] < rows["nc_true"]["mae"]
    assert rows["nc_true"]["statuses"] == {"ok": 3}
    assert set(rows) == set(bench.ESTIMATORS) - {"nc_em"} and "fit_statuses" not in s


def test_an_unknown_truth_is_refused(bench, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    with pytest.raises(ValueError, match="--truths: 'linear'"):
        bench.main(["--truths", "shifted,linear", "--reps", "1"])
