"""Shared by the benchmark scripts: where results go and how they are written."""

from __future__ import annotations

import json
from pathlib import Path

#: Results of the benchmark scripts (git-ignored).
OUTPUT_DIR = Path(__file__).resolve().parent / "output"


def write_result(name: str, result: dict) -> Path:
    """Write ``result`` as ``benchmarks/output/<name>.json`` and say where."""
    path = OUTPUT_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    return path
