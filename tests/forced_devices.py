"""Running a test script in a subprocess with four forced XLA host devices (the device
count is fixed when JAX starts, so a sharding test cannot set it in-process): shared by
test_bootstrap_sharding.py and test_em_sharding.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run_on_four_host_devices(script: str) -> dict:
    """Run ``script`` (which prints a line ``RESULT <json>``) on four forced CPU devices
    and return the parsed JSON of its last such line."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])
