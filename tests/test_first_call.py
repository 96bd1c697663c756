"""First-call cost: a lazy ``import noisycal``, the opt-in compilation cache, progress bars."""

import subprocess
import sys

import pytest

import noisycal as nc

HEAVY = ("jax", "numpyro", "arviz", "statsmodels", "matplotlib", "pandas", "scipy")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return out.stdout.strip()


def test_import_loads_no_heavy_dependency():
    loaded = _run("import sys, noisycal; "
                  f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    assert loaded == "[]"


def test_a_public_name_loads_only_what_it_needs():
    # a metric or an annotator model brings JAX in, not the plotting or PPL stack
    code = ("import sys, noisycal as nc; nc.ece, nc.DawidSkene, nc.calibrators.TemperatureScaling;"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'jax', 'numpyro', 'arviz', 'statsmodels', 'matplotlib'}))")
    assert _run(code) == "['jax']"


@pytest.mark.parametrize("package", ["noisycal", "noisycal.metrics", "noisycal.intervals",
                                     "noisycal.annotators", "noisycal.calibrators",
                                     "noisycal.datasets", "noisycal.engines",
                                     "noisycal.ambiguity"])
def test_every_public_name_resolves_and_is_listed(package):
    import importlib

    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, (package, name)
        assert name in dir(mod), (package, name)


def test_a_function_keeps_its_name_when_its_module_is_imported():
    # metrics/ece.py defines ece and mce, and metrics/mce.py exists: importing the modules
    # must not turn the public functions into modules (as an eager import never did)
    code = ("import noisycal.metrics.mce, noisycal.metrics.ece, noisycal.intervals.bootstrap;"
            "import noisycal as nc, types;"
            "print([isinstance(f, types.FunctionType) for f in "
            "(nc.mce, nc.metrics.mce, nc.metrics.ece, nc.intervals.bootstrap, nc.bootstrap)])")
    assert _run(code) == "[True, True, True, True, True]"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        nc.no_such_thing  # noqa: B018
    assert not hasattr(nc.metrics, "no_such_metric")


def test_a_submodule_not_listed_is_imported_on_access():
    assert _run("import noisycal as nc; print(nc.engines.em.__name__)") == "noisycal.engines.em"
