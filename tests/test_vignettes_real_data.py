"""Run the vignettes that can use the shared real data (``--data ...``) headless at tiny
sizes; skipped when the data are absent (set $NOISYCAL_DATA)."""

from __future__ import annotations

import pytest
from vignette_runs import REAL_DATA, VIGNETTES, check_output, has_cifar10, run_vignette


@pytest.mark.data
@pytest.mark.parametrize("script", [p for p in VIGNETTES if p.stem in REAL_DATA],
                         ids=lambda p: p.stem)
def test_vignette_runs_small_on_real_data(script, tmp_path):
    if not has_cifar10():
        pytest.skip("CIFAR-10 logits / CIFAR-10H not found (set $NOISYCAL_DATA)")
    check_output(run_vignette(script, tmp_path, *REAL_DATA[script.stem]), script, tmp_path)
