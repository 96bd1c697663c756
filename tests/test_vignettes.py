"""Run every vignette headless at tiny sizes (``--small``) on its simulated data, and those
that can use the shared real data (``--data ...``) on those too (skipped when the data are
absent: set $NOISYCAL_DATA), and check what they write.

The real-data run of a vignette reads the compilation cache its simulated run wrote (the
programs of the same vignette on other data of the same shapes are not compiled again: about
a third of vignette 06's time). Both runs are in this one file so that, with
``--dist loadfile`` (the README's command) or without xdist, they run one after the other in
one test process and never write one cache folder at the same time (other xdist schedules
give each process its own folders: nothing is shared, nothing breaks).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from vignette_runs import (
    CACHING,
    REAL_DATA,
    VIGNETTES,
    check_output,
    has_cifar10,
    run_vignette,
)


@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compilation-cache folder per vignette (``caches / stem``), shared by its runs."""
    return tmp_path_factory.mktemp("vignette_caches")


def test_there_are_vignettes():
    assert VIGNETTES


@pytest.mark.parametrize("script", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_runs_small(script, tmp_path, caches):
    """Each runs end to end; those that keep their compiled programs write them into the
    folder that NOISYCAL_CACHE_DIR names."""
    out, cache = tmp_path / "out", caches / script.stem
    check_output(run_vignette(script, out, cache=cache), script, out)
    stored = list(cache.iterdir()) if cache.is_dir() else []
    assert bool(stored) == (script.stem in CACHING), (script.stem, len(stored))


@pytest.mark.data
@pytest.mark.parametrize("script", [p for p in VIGNETTES if p.stem in REAL_DATA],
                         ids=lambda p: p.stem)
def test_vignette_runs_small_on_real_data(script, tmp_path, caches):
    if not has_cifar10():
        pytest.skip("CIFAR-10 logits / CIFAR-10H not found (set $NOISYCAL_DATA)")
    check_output(run_vignette(script, tmp_path, *REAL_DATA[script.stem],
                              cache=caches / script.stem), script, tmp_path)


def test_report_vignette_without_real_data_exits_with_a_message(tmp_path):
    script = next((p for p in VIGNETTES if p.stem == "01_calibration_report"), None)
    if script is None:
        pytest.skip("no 01_calibration_report vignette")
    env = {**os.environ, "MPLBACKEND": "Agg", "NOISYCAL_DATA": str(tmp_path / "none"),
           "NOISYCAL_CACHE_DIR": ""}
    res = subprocess.run([sys.executable, str(script), "--small", "--data", "cifar10",
                          "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 2
    assert "NOISYCAL_DATA" in res.stderr
    assert not (tmp_path / "out").exists()
