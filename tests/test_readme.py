"""The README's quickstart runs as written (the README tells the truth about main)."""

import re
from pathlib import Path

import matplotlib
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_quickstart_runs(monkeypatch):
    text = README.read_text()
    section = text.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
    est = namespace["est"]
    assert 0.05 < float(est) < 0.3 and est.low < float(est) < est.high
    U = namespace["U"]
    assert U.kind == "corrected"
    plt.close("all")
