"""Running a vignette headless at tiny sizes (``--small``) and checking what it writes:
used by test_vignettes.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
        "noise_check.csv",
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
    "06_annotation_model_workflow": [
        "ds1979_bic.csv",
        "ds1979_loo.csv",
        "model_comparison.csv",
        "ppc.csv",
        "elpd_comparison.png",
        "ppc_unanimity.png",
        "sbc_ranks.png",
    ],
}

#: Vignettes that can also run on the shared real data (``--data cifar10``).
REAL_DATA = {"01_calibration_report": ["--data", "cifar10"],
             "02_noisy_label_calibration": ["--data", "cifar10n"],
             "03_ambiguous_ground_truth": ["--data", "cifar10h"],
             "04_cumulative_mass_calibration": ["--data", "cifar10"],
             "06_annotation_model_workflow": ["--data", "cifar10n"]}


def has_cifar10() -> bool:
    root = data_dir()
    return root is not None and (root / "cifar10_logits" / "densenet40_c10.npz").is_file() \
        and (root / "cifar10h" / "cifar10h.npz").is_file() \
        and (root / "cifar10n" / "cifar10n.npz").is_file()


#: The vignettes that keep compiled programs in nc.user_cache_folder() (05 runs its grid in
#: worker processes).
CACHING = {"01_calibration_report", "02_noisy_label_calibration", "03_ambiguous_ground_truth",
           "04_cumulative_mass_calibration", "06_annotation_model_workflow"}


def run_vignette(script: Path, out: Path, *extra: str, cache: Path | None = None
                 ) -> subprocess.CompletedProcess:
    """Run ``script --small --out out``; its compilation cache in ``cache`` (None: off,
    never the user's folder)."""
    env = {**os.environ, "MPLBACKEND": "Agg",
           "NOISYCAL_CACHE_DIR": "" if cache is None else str(cache)}
    return subprocess.run(
        [sys.executable, "-W", "error::UserWarning", str(script), "--small", "--out",
         str(out), *extra],
        capture_output=True, text=True, timeout=600, env=env, cwd=script.parents[1])


def check_output(res: subprocess.CompletedProcess, script: Path, out: Path) -> None:
    assert res.returncode == 0, f"{script.name} failed:\n{res.stdout}\n{res.stderr}"
    expected = EXPECTED.get(script.stem)
    if expected is None:
        assert any(out.iterdir()), f"{script.name} wrote nothing into --out"
        return
    for name in expected:
        path = out / name
        assert path.is_file() and path.stat().st_size > 0, f"{script.name}: no {name}"
        assert str(path) in res.stdout  # the vignette says where it wrote
