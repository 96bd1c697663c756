"""The public surface and the promise of no import-time side effects."""

import subprocess
import sys

import numpy as np
import pytest

import noisycal as nc


def test_public_names_exist():
    for name in nc.__all__:
        assert hasattr(nc, name), name
    for mod in (nc.metrics, nc.intervals, nc.targets, nc.simulate):
        for name in mod.__all__:
            assert hasattr(mod, name), (mod.__name__, name)


def test_models_package_maps_to_noisycal_models():
    import noisycal.models

    assert isinstance(noisycal.models.MODELS, dict)


def test_import_has_no_global_side_effects():
    code = (
        # third-party dependencies install their own filters; import them first
        "import warnings, jax, scipy.special, scipy.stats, pandas, numpy;"
        "before = list(warnings.filters); x64 = jax.config.jax_enable_x64;"
        "import noisycal as nc, numpy as np;"
        "assert jax.config.jax_enable_x64 == x64;"
        "assert list(warnings.filters) == before;"
        "import sys; assert 'matplotlib' not in sys.modules;"
        "nc.ece(np.array([[0.6, 0.4], [0.3, 0.7]]), [0, 1], n_bins=5,"
        " interval=nc.intervals.Inversion(n_boot=100));"
        "assert jax.config.jax_enable_x64 == x64;"
        "import jax.numpy as jnp; assert (jnp.ones(1).dtype == jnp.float64) == x64"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_float64_inside_without_global_x64():
    # a difference below float32 resolution is still seen
    p = np.array([0.5 + 1e-9, 0.5])
    est = nc.ece(p, np.array([1, 1]), n_bins=1, interval=None)
    assert float(est) == pytest.approx(0.5 - 0.5e-9, abs=1e-15)
