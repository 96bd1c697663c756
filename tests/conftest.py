"""Shared test setup: headless matplotlib, figures closed after every test, and XLA's
quick compilation for the test processes."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import matplotlib
import pytest

matplotlib.use("Agg")

#: XLA's CPU backend compiles the test processes' programs (and those of the vignettes and
#: scripts they start) without LLVM's optimisation passes, unless ``XLA_FLAGS`` is set when
#: pytest starts (``XLA_FLAGS= pytest`` tests at XLA's default level, as users run).
#: Most of the suite's time is compilation: in the fresh-clone runs about 1,700 of 2,700 s
#: of test time, thousands of small programs each run a few times. Measured on the 2-core
#: machine (2026-12-07, whole suite with ``--dist loadfile``): 1,719 s of compilation at
#: the default level, 1,176 s at level 0; test time 2,678 s -> 2,161 s, although the files
#: whose time is computation got slower (``tests/metrics/nc/test_nc_ece_refit.py``
#: 35.5 s -> 51.3 s). The optimisation level changes machine code, not the program XLA
#: computes (its HLO passes run as before): the EM, MLE and metric values of a check
#: script agreed to the bit, while NUTS trajectories, which amplify the last bit, differ,
#: as they do between processors with other vector widths. What the tests assert holds at
#: either level (tests/annotators/test_hierarchical_ds.py was made robust to it).
#: ``--xla_cpu_use_fusion_emitters=false`` has XLA emit its fused loops with its older CPU
#: code generator. Measured on the 2-core machine (2026-12-08, the same commit, whole suite
#: with ``--dist loadfile``): compilation 1,224 s -> 753 s, test time 2,090 s -> 1,645 s,
#: pytest 17:52 -> 14:05. On a check script (a NUTS fit, an EM fit and a binned ECE with
#: its interval) the EM and ECE values were equal to the bit with and without it; at the
#: default optimisation level all 2,415 values, NUTS draws included, were.
#: The second flag is added only when the installed jaxlib knows it (an XLA built before or
#: after it aborts the process on an unknown flag in ``XLA_FLAGS``).
FUSION_FLAG = "--xla_cpu_use_fusion_emitters=false"


def _jaxlib_knows(flag: str) -> bool:
    """Whether the flag's name occurs in the installed jaxlib's shared libraries (read
    without importing JAX, which must not see ``XLA_FLAGS`` before it is set)."""
    import importlib.util
    import mmap
    from pathlib import Path

    spec = importlib.util.find_spec("jaxlib")
    name = flag.lstrip("-").split("=")[0].encode()
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for lib in sorted(Path(folder).glob("*.so")):
            try:
                with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0,
                                                     access=mmap.ACCESS_READ) as m:
                    if m.find(name) >= 0:
                        return True
            except (OSError, ValueError):
                continue
    return False


QUICK_COMPILATION = "--xla_backend_optimization_level=0" + (
    " " + FUSION_FLAG if _jaxlib_knows(FUSION_FLAG) else "")
os.environ.setdefault("XLA_FLAGS", QUICK_COMPILATION)


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    """Close every matplotlib figure a test opened (only if pyplot was imported)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs() -> Iterator[None]:
    """Drop JAX's compiled programs after each test module.

    A test process that compiles thousands of programs (an xdist worker running dozens of
    files) keeps each executable's memory mappings; in the fresh-clone CI run of
    2026-12-03 a worker reached 27,700 mappings at 81% of the suite and crashed with a
    segmentation fault inside XLA's compiler near the end (Linux's default
    vm.max_map_count is 65,530). Clearing the caches between modules released about 60%
    of the mappings of a process after six fits (3,223 -> 1,450). The caches are cleared
    only once a process holds more than :data:`MAX_MAPPINGS` mappings, so that the
    modules in between reuse each other's programs (the metrics' and the engines' shared
    programs, one fit's shape in several files) instead of recompiling them.
    """
    yield
    jax = sys.modules.get("jax")
    if jax is not None and _n_mappings() > MAX_MAPPINGS:
        import gc

        jax.clear_caches()
        gc.collect()


#: Memory mappings of a test process above which its compiled programs are dropped
#: (a quarter of Linux's default vm.max_map_count, 65,530).
MAX_MAPPINGS = 16_000


def _n_mappings() -> int:
    """Memory mappings of this process (Linux); elsewhere a count above the limit, so that
    the caches are cleared after every module as before."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return MAX_MAPPINGS + 1


@pytest.fixture(scope="module")
def cifar() -> tuple:
    """CIFAR-10N's human labels and the CIFAR-10 DenseNet-40 logits (the test skips when
    either is absent)."""
    import noisycal as nc

    try:
        return nc.datasets.load_cifar10n(), nc.datasets.load_cifar10_logits()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def study() -> object:
    """``benchmarks/coverage_study.py`` as a module (the reduced coverage study's cells)."""
    from benchmark_scripts import load_benchmark

    return load_benchmark("coverage_study", register=True)  # dataclasses look it up



#: Test files that each took half a minute or more in the fresh-clone CI runs (the
#: vignettes about three minutes): handed to the xdist workers first, so that the two
#: workers finish together instead of one idling while the other runs a long file last.
#: (pytest-xdist's own order is by the number of tests in a file, which put the
#: vignettes, a handful of long tests, near the end.) A stale entry only changes the order.
HEAVY_FIRST = (
    "tests/test_vignettes.py",
    "tests/intervals/test_inversion_coverage_binary.py",
    "tests/intervals/test_inversion_coverage_kclass.py",
    "tests/engines/test_posterior_influence.py",
    "tests/annotators/test_channel_models.py",
    "tests/annotators/test_hierarchical_ds.py",
    "tests/annotators/checks/test_compare.py",
    "tests/metrics/nc/test_coverage_models.py",
    "tests/annotators/checks/test_sbc.py",
    "tests/test_readme.py",
    "tests/engines/test_arviz_export.py",
    "tests/engines/test_engines_generic.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # the controller keeps the collection's order (below) instead of re-sorting the
    # files by their number of tests
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Files in :data:`HEAVY_FIRST` first, the others by their number of tests (most
    first, as pytest-xdist orders them); a file's tests stay together and in order."""
    def path(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    sizes: dict[str, int] = {}
    for item in items:
        sizes[path(item)] = sizes.get(path(item), 0) + 1
    rank = {p: i for i, p in enumerate(HEAVY_FIRST)}
    first = {p: i for i, p in enumerate(dict.fromkeys(path(it) for it in items))}
    items.sort(key=lambda it: (rank.get(path(it), len(rank)), -sizes[path(it)],
                               first[path(it)]))


#: Seconds per test file (setup, call and teardown of its tests, summed over workers),
#: printed at the end of the session beside the seconds its tests spent compiling with
#: JAX (tracing, lowering and XLA compilation): the measurements that say which files to
#: trim and whether compilation or computation is what costs (``--durations`` lists
#: single tests only).
_FILE_SECONDS: dict[str, float] = {}
_COMPILE_SECONDS: dict[str, float] = {}
_CURRENT_FILE = ["(collection)"]
#: The JAX events whose durations are counted as compilation.
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")
#: Files listed in the summary.
SLOWEST_FILES = 25


def _on_jax_event(event: str, seconds: float, **kwargs: object) -> None:
    if event in COMPILE_EVENTS:
        f = _CURRENT_FILE[0]
        _COMPILE_SECONDS[f] = _COMPILE_SECONDS.get(f, 0.0) + seconds


def pytest_sessionstart(session: pytest.Session) -> None:
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_on_jax_event)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    _CURRENT_FILE[0] = nodeid.split("::", 1)[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    f = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[f] = _FILE_SECONDS.get(f, 0.0) + float(report.duration)


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = getattr(session.config, "workeroutput", None)
    if out is not None:   # an xdist worker hands its compile seconds to the controller
        out["compile_seconds"] = dict(_COMPILE_SECONDS)


def pytest_testnodedown(node: object, error: object) -> None:
    for f, s in getattr(node, "workeroutput", {}).get("compile_seconds", {}).items():
        _COMPILE_SECONDS[f] = _COMPILE_SECONDS.get(f, 0.0) + s


def pytest_terminal_summary(terminalreporter: object, exitstatus: int,
                            config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not _FILE_SECONDS:
        return
    total = sum(_FILE_SECONDS.values())
    compiled = sum(_COMPILE_SECONDS.values())
    rows = sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1])[:SLOWEST_FILES]
    tr = terminalreporter
    tr.write_sep("=", f"slowest {len(rows)} test files (of {len(_FILE_SECONDS)}; "
                      f"{total:.0f} s of test time in all, {compiled:.0f} s of it compiling)")
    for f, s in rows:
        tr.write_line(f"{s:8.1f}s {100 * s / total:5.1f}%  compiling "
                      f"{_COMPILE_SECONDS.get(f, 0.0):6.1f}s  {f}")
