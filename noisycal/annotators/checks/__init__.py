"""Checks of fitted annotator models.

This package holds posterior predictive checks, simulation-based calibration, model
comparison and the class-conditional noise check."""

__all__: list[str] = []
