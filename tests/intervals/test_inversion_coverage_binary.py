"""The reduced coverage study, binary cells: the default 90% interval of the binned ECE
(the inverted test) covers the population ECE in [0.85, 0.95] (benchmarks/coverage_study.py
runs the full grid). Split from the 10-class cells so that the two run in parallel."""

import pytest
from coverage_cells import coverage_cell


@pytest.mark.parametrize("scenario,ece,n,reps", [
    ("binary/hard", 0.0, 2000, 200),
    ("binary/hard", 0.015, 2000, 200),
    ("binary/hard", 0.05, 2000, 200),
    ("binary/corrected", 0.015, 2000, 200),
])
def test_default_interval_covers_the_population_ece(study, scenario, ece, n, reps):
    """90% default intervals cover in [0.85, 0.95] (200 runs: s.e. 0.021)."""
    row = coverage_cell(study, scenario, ece, n, reps)
    assert 0.85 <= row["coverage"] <= 0.95, row
    assert row["mean_value"] < row["mean_plugin"] + 1e-12
