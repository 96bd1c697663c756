"""Run every vignette headless at tiny sizes (``--small``) on its simulated data and check
what it writes (the real-data runs are in test_vignettes_real_data.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from vignette_runs import CACHING, VIGNETTES, check_output, run_vignette


def test_there_are_vignettes():
    assert VIGNETTES


@pytest.mark.parametrize("script", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_runs_small(script, tmp_path):
    """Each runs end to end; those that keep their compiled programs write them into the
    folder that NOISYCAL_CACHE_DIR names."""
    out, cache = tmp_path / "out", tmp_path / "cache"
    check_output(run_vignette(script, out, cache=cache), script, out)
    stored = list(cache.iterdir()) if cache.is_dir() else []
    assert bool(stored) == (script.stem in CACHING), (script.stem, len(stored))


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
