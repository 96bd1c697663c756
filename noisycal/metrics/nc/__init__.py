"""NC-ECE with fitted channels.

This package holds the delta-method channel error, refit bootstrap, credible interval
and finite-sample bound of a noise-corrected target."""

__all__: list[str] = []
