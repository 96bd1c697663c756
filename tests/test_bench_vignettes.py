"""A reduced ``benchmarks/bench_vignettes.py``: one small script instead of a vignette, run
twice through the benchmark's own ``run_case``: the first run fills the cache folder that
``NOISYCAL_CACHE_DIR`` names, the second reads it; CPU is counted and the printed times
are left out of the output comparison."""

from __future__ import annotations

import os
import sys

import pytest
from benchmark_scripts import load_benchmark

SCRIPT = """
import time
t0 = time.perf_counter()
import jax, jax.numpy as jnp, noisycal as nc
nc.set_compilation_cache(nc.user_cache_folder())
print("value", float(jax.jit(lambda x: jnp.sin(x) @ x)(jnp.arange(64.0))))
print(f"took {time.perf_counter() - t0:.4f} s")
"""


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_vignettes")


def test_a_case_fills_the_cache_then_reads_it_and_compares_outputs(bench):
    r = bench.run_case([sys.executable, "-c", SCRIPT], dict(os.environ))
    assert r["first"]["returncode"] == 0 and r["second"]["returncode"] == 0
    assert r["cache_files"] >= 1          # the jitted program was stored
    assert r["same_output"]               # the "took ... s" lines differ and are left out
    for run in ("first", "second"):
        x = r[run]
        assert x["cpu_s"] == pytest.approx(x["user_s"] + x["sys_s"]) and x["cpu_s"] > 0
        assert x["wall_s"] > 0


def test_a_failing_case_keeps_its_exit_code_and_stderr(bench):
    r = bench.run_case([sys.executable, "-c", "import sys; sys.exit('no data here')"],
                         dict(os.environ))
    assert r["first"]["returncode"] == 1 and "no data here" in r["first"]["stderr_tail"]


def test_the_goals_are_the_issue_s(bench):
    assert bench.GOALS == {"02_noisy_label_calibration": 20.0,
                           "06_annotation_model_workflow": 90.0}
    with pytest.raises(SystemExit, match="--cases"):
        bench.main(["--cases", "02_noisy_label_calibration:huge"])
