"""The reduced coverage study's cell runner, shared by the two coverage test files (the
``study`` fixture in conftest.py loads ``benchmarks/coverage_study.py``)."""

import pytest


def coverage_cell(study: object, scenario: str, ece: float, n: int, reps: int) -> dict:
    """One cell of the reduced coverage study: the default 90% interval over ``reps``
    seeded runs at population ECE ``ece`` (asserts the parameter reproduces it)."""
    sc = next(s for s in study.scenarios(binary_only=scenario.startswith("binary"))
              if s.name == scenario)
    par, pop = study.solve_parameter(sc, ece)
    assert pop == pytest.approx(ece, abs=1e-8)
    return study.run_cell(sc, n, par, pop, reps, ("inversion",), 1000)[0]
