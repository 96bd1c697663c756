"""noisycal's private toolbox.

It holds validation at the boundary, JAX helpers, lazy names, progress, threads, types,
HTML and the status ranking, and imports nothing else of noisycal but the warning classes of
:mod:`noisycal.exceptions`."""

__all__: list[str] = []
