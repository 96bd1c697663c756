"""Engines on a NumPyro log density.

This package holds gradient MLE/MAP, NUTS, their compiled programs, diagnostics and the
ArviZ export."""

__all__: list[str] = []
