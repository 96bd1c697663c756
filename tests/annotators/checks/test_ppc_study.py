"""The reduced posterior predictive check study (``benchmarks/ppc_study.py``; the full
study's table is in benchmarks/README.md)."""

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def test_reduced_ppc_study_does_not_reject_the_true_model():
    """``benchmarks/ppc_study.py`` reduced to two data sets: under the true Dawid–Skene
    model no ppp of any check (EM refits, EM plug-in, NUTS) or discrepancy family falls
    outside (0.025, 0.975), and the pooled ppp centre near 0.5 (measured means
    0.47-0.55; the full study's rejection rates: benchmarks/README.md)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("ppc_study", BENCH / "ppc_study.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    runs = [mod.one_run(seed) for seed in range(2)]
    assert {r["nuts"]["method"] for r in runs} == {"posterior"}
    assert {r["em_refits"]["method"] for r in runs} == {"bootstrap_refits"}
    assert {r["em_plugin"]["method"] for r in runs} == {"parametric_bootstrap"}
    rows = mod.summarise(runs, mod.CHECKS)
    assert len(rows) == 3 * 6
    for r in rows:
        assert r["reject_two_sided"] == 0.0, r
        assert 0.35 < r["mean"] < 0.65, r
