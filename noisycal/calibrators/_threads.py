"""BLAS thread limits for the L-BFGS-B fits of the calibrators."""

from __future__ import annotations

import contextlib

__all__ = ["single_thread_blas"]


def single_thread_blas() -> contextlib.AbstractContextManager:
    """A context that limits BLAS to one thread (threadpoolctl when installed).

    scipy's L-BFGS-B calls BLAS on vectors of the parameters' length for its
    limited-memory updates; a multi-threaded OpenBLAS turns each of these small calls into
    a thread hand-off. Measured on the 2-core machine of benchmarks/README.md under load
    (``bench_calibrators.py``, 2026-12-02): 100 L-BFGS-B iterations on a 10,100-parameter
    quadratic took 54 s with 2 OpenBLAS threads and 1.2 s with 1. The gradients are
    computed by JAX (XLA's own thread pool), which this does not touch. Without
    ``threadpoolctl`` (a dependency of scikit-learn, not of noisycal) this is a no-op;
    ``OPENBLAS_NUM_THREADS=1`` has the same effect.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
