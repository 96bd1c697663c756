"""BLAS thread limits for small dense linear algebra (calibrator fits, identification checks)."""

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

    The identification check of the annotator fits (:mod:`noisycal.engines.identification`)
    factorises matrices of a few hundred rows; there a multi-threaded OpenBLAS cost seconds
    on a loaded machine (CIFAR-10N, 5,000 items, 280 free parameters, load 8 on 2 cores:
    eigh 2.4 s, eigvalsh 1.3 s and Cholesky 0.8 s; benchmarks/README.md, "First call").
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
