"""The README's quickstart runs as written and prints the numbers it says it prints, and its
commands are the ones CI runs."""

import re
from pathlib import Path

import matplotlib
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _quickstart() -> str:
    section = README.read_text().split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _printed(code: str, call: str) -> tuple[float, float, float]:
    """The '# value [low, high]' comment the README writes after ``call``."""
    line = next(ln for ln in code.splitlines() if ln.startswith(call))
    m = re.search(r"#\s*([0-9.]+) \[([0-9.]+), ([0-9.]+)\]", line)
    assert m, f"no printed number after {call!r}"
    return tuple(float(x) for x in m.groups())


def _bash_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)]


def test_the_readme_commands_are_what_ci_runs():
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    setup, tests, docs = _bash_blocks()
    assert setup.endswith(".venv/bin/python vignettes/02_noisy_label_calibration.py")
    assert (README.parent / "vignettes" / "02_noisy_label_calibration.py").is_file()
    assert tests in ci and tests.endswith(".venv/bin/pytest -n 2 --dist loadfile")
    assert docs in ci and ci.index(docs) > ci.index(tests)  # the docs build after the tests
    assert '-e ".[docs]"' in docs and "sphinx -W --keep-going -b html docs" in docs


def test_the_readme_prints_what_the_test_checks():
    code = _quickstart()
    assert _printed(code, "nc.ece(toy.z, U, n_bins=10) ") == (0.0854, 0.0732, 0.0993)
    assert ("# ECE 0.18... (plug-in 0.18...) [0.17..., 0.19...] 90% inversion (parametric), "
            "median-unbiased estimate") in code


@pytest.mark.slow
def test_readme_quickstart_runs_and_its_numbers_hold(monkeypatch):
    code = _quickstart()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
    nc = namespace["nc"]
    est = namespace["est"]
    # "ECE 0.18... (plug-in 0.18...) [0.17..., 0.19...] 90% inversion (parametric),
    # median-unbiased estimate"
    assert repr(est).startswith("ECE 0.18") and est.level == 0.9 and est.kind == "inversion"
    assert f"(plug-in {est.details['plugin']:.4f}) [" in repr(est)
    assert repr(est).startswith("ECE 0.18") and "(plug-in 0.18" in repr(est)
    assert est.estimator == "median-unbiased" and repr(est).endswith("median-unbiased estimate")
    assert 0.17 <= est.low < float(est) < est.high < 0.2 and est.status == "ok"
    U = namespace["U"]
    assert U.kind == "corrected" and U.status == "ok"
    # "0.0854 [0.0732, 0.0993], channel error carried" (rounded to 4 decimals as printed)
    value, low, high = _printed(code, "nc.ece(toy.z, U, n_bins=10) ")
    nc_est = nc.ece(namespace["toy"].z, U, n_bins=10)
    assert (round(float(nc_est), 4), round(nc_est.low, 4), round(nc_est.high, 4)) == (
        value, low, high)
    plt.close("all")
