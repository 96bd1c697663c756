"""Run every vignette headless at tiny sizes (``--small``) and check what it writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from noisycal.datasets import data_dir

VIGNETTES = sorted((Path(__file__).resolve().parents[1] / "vignettes").glob("*.py"))

#: Files each vignette must write into --out (vignettes not listed must write some file).
EXPECTED = {
    "01_calibration_report": [
        "calibration_report.csv",
        "reliability_hard.png",
        "reliability_soft.png",
        "reliability_classwise.png",
    ],
    "02_noisy_label_calibration": [
        "nc_ece_table.csv",
        "recalibration.csv",
        "reliability_corrected_vs_soft.png",
        "channel_posterior.png",
    ],
    "03_ambiguous_ground_truth": [
        "ambiguity_table.csv",
        "reliability_soft_target.png",
    ],
    "04_cumulative_mass_calibration": [
        "cmce_table.csv",
        "cumulative_mass_curves.png",
        "reliability_base_vs_conformal_ts.png",
    ],
    "05_noisy_calibration_labels": [
        "results.csv",
        "lwcal_report.md",
    ],
}

#: Vignettes that can also run on the shared real data (``--data cifar10``).
REAL_DATA = {"01_calibration_report": ["--data", "cifar10"],
             "02_noisy_label_calibration": ["--data", "cifar10n"],
             "03_ambiguous_ground_truth": ["--data", "cifar10h"],
             "04_cumulative_mass_calibration": ["--data", "cifar10"]}


def _has_cifar10() -> bool:
    root = data_dir()
    return root is not None and (root / "cifar10_logits" / "densenet40_c10.npz").is_file() \
        and (root / "cifar10h" / "cifar10h.npz").is_file() \
        and (root / "cifar10n" / "cifar10n.npz").is_file()


def _run(script: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-W", "error::UserWarning", str(script), "--small", "--out",
         str(out), *extra],
        capture_output=True, text=True, timeout=600, env=env, cwd=script.parents[1])


def _check(res: subprocess.CompletedProcess, script: Path, out: Path) -> None:
    assert res.returncode == 0, f"{script.name} failed:\n{res.stdout}\n{res.stderr}"
    expected = EXPECTED.get(script.stem)
    if expected is None:
        assert any(out.iterdir()), f"{script.name} wrote nothing into --out"
        return
    for name in expected:
        path = out / name
        assert path.is_file() and path.stat().st_size > 0, f"{script.name}: no {name}"
        assert str(path) in res.stdout  # the vignette says where it wrote


def test_there_are_vignettes():
    assert VIGNETTES


@pytest.mark.parametrize("script", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_runs_small(script, tmp_path):
    _check(_run(script, tmp_path), script, tmp_path)


@pytest.mark.data
@pytest.mark.parametrize("script", [p for p in VIGNETTES if p.stem in REAL_DATA],
                         ids=lambda p: p.stem)
def test_vignette_runs_small_on_real_data(script, tmp_path):
    if not _has_cifar10():
        pytest.skip("CIFAR-10 logits / CIFAR-10H not found (set $NOISYCAL_DATA)")
    _check(_run(script, tmp_path, *REAL_DATA[script.stem]), script, tmp_path)


def test_report_vignette_without_real_data_exits_with_a_message(tmp_path):
    script = next((p for p in VIGNETTES if p.stem == "01_calibration_report"), None)
    if script is None:
        pytest.skip("no 01_calibration_report vignette")
    env = {**os.environ, "MPLBACKEND": "Agg", "NOISYCAL_DATA": str(tmp_path / "none")}
    res = subprocess.run([sys.executable, str(script), "--small", "--data", "cifar10",
                          "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 2
    assert "NOISYCAL_DATA" in res.stderr
    assert not (tmp_path / "out").exists()
