"""Binned metrics.

This package holds bins and per-bin statistics, the estimate and its bootstraps, the
inverted-interval form, and the table, streamed and Dask backends behind one interface
(:mod:`noisycal.metrics.binned.backend`)."""

__all__: list[str] = []
