"""The reduced coverage study of the NC-ECE under the annotator models' fits and
model-averaged (``benchmarks/coverage_nc_ece_models.py``; the full grid's table is in
benchmarks/README.md)."""


import numpy as np
import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def models_study():
    return load_benchmark("coverage_nc_ece_models")  # it imports coverage_nc_ece beside it


@pytest.mark.parametrize("design", ["calibrated/strong", "overconfident/weak"])
def test_reduced_cell_em_constrained_channels_and_model_average(models_study, design):
    """Six seeded runs of two cells: the default interval under EM fits of the
    class-conditional model and MACE, and the model average of EM Dawid–Skene and
    one-coin fits (ic='bic'), against the population ECE. Each covers in at least 4 of
    6 runs (P(Binomial(6, 0.9) < 4) = 0.016; measured 5 of 6 each at
    calibrated/strong; the full grid, 40 runs per cell: benchmarks/README.md), and every
    value lies in its interval."""
    m = models_study
    fits = ("em_class_conditional", "em_mace", "averaged_bic")
    pop = m.population(m.K, design.startswith("calibrated"), m.N_BINS)
    if design.startswith("calibrated"):   # the classifier reports the true probabilities
        sim = m.nc.simulate.classifier(1000, m.K, temperature=1.0, seed=0)
        np.testing.assert_array_equal(sim.probs, sim.true_probs)
        assert pop == 0.0
    runs = [m.one_run(design, seed, fits) for seed in range(6)]
    summary = m.summarise(runs, pop, fits)
    for f in fits:
        covered = round(summary[f]["coverage"] * 6)
        assert covered >= 4, (f, summary[f])
    for r in runs:
        low, high, value, status = r["averaged_bic"]
        assert np.isfinite(value) and low <= value <= high

