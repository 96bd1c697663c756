"""Dask arrays as metric input (noisycal.metrics.binned.dask): the same numbers as the
in-memory call, block by block on Dask's threaded scheduler and on a two-worker
``distributed.LocalCluster``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import noisycal as nc

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N, K = 3000, 4


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _data(seed: int = 0, n: int = N, k: int = K):
    rng = np.random.default_rng(seed)
    # overconfident predictions: top-label confidences spread over the bins
    P = rng.dirichlet(np.full(k, 0.7), n)
    y = np.array([rng.choice(k, p=0.6 * p + 0.4 / k) for p in P])
    S = rng.dirichlet(np.ones(k), n)
    return P, y, S


def _chunked(x: np.ndarray, rows: int = 700):
    return da.from_array(x, chunks=(rows,) + x.shape[1:])


def _same(a, b, tol: float) -> None:
    assert a.status == b.status and a.name == b.name and a.n == b.n
    assert abs(a.value - b.value) <= tol
    if a.interval is None:
        assert b.interval is None
    else:
        np.testing.assert_allclose(b.interval, a.interval, rtol=0, atol=tol)
    cols = ["count", "mean_conf", "mean_target"] + (["low", "high"] if "low" in a.bins else [])
    np.testing.assert_allclose(b.bins[cols].to_numpy(float), a.bins[cols].to_numpy(float),
                               rtol=0, atol=1e-12)


CASES = [("top_label", "hard"), ("top_label", "soft"), ("classwise", "hard"),
         ("classwise", "soft"), ("positive_class", "hard"), ("positive_class", "soft")]


def _inputs(kind: str, target: str, seed: int = 0):
    P, y, S = _data(seed, k=2 if kind == "positive_class" else K)
    T = y if target == "hard" else S
    return P, T, _chunked(P), _chunked(T, 900)  # row blocks of the target: not the same


@pytest.mark.parametrize("kind,target", CASES)
@pytest.mark.parametrize("norm,debias", [("l1", False), ("l2", False), ("l2", True)])
def test_point_estimate_equals_in_memory(kind, target, norm, debias):
    P, T, dP, dT = _inputs(kind, target)
    a = nc.ece(P, T, kind=kind, norm=norm, debias=debias, interval=None)
    b = nc.ece(dP, dT, kind=kind, norm=norm, debias=debias, interval=None)
    _same(a, b, 1e-12)
    # float32 predictions, target as a NumPy array split into the blocks
    a = nc.ece(P.astype(np.float32), T, kind=kind, interval=None)
    b = nc.ece(_chunked(P.astype(np.float32)), T, kind=kind, interval=None)
    _same(a, b, 1e-12)


@pytest.mark.parametrize("kind,target", CASES)
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_inverted_interval_equals_in_memory(kind, target, norm):
    P, T, dP, dT = _inputs(kind, target, seed=1)
    a = nc.ece(P, T, kind=kind, norm=norm, interval=nc.intervals.Inversion(n_boot=300), seed=5)
    b = nc.ece(dP, dT, kind=kind, norm=norm, interval=nc.intervals.Inversion(n_boot=300), seed=5)
    assert a.kind == b.kind == "inversion"
    # the ends are crossings of flat Monte Carlo test curves: the chunked sums' last-digit
    # differences (4e-16 in the bin means) move the upper end by 7e-11 alone and 1.7e-10
    # within the suite (l2 classwise hard), so ends are compared to 1e-8, the rest to 1e-10
    assert abs(a.value - b.value) <= 1e-10
    _same(a, b, 1e-8)
    assert abs(a.details["plugin"] - b.details["plugin"]) <= 1e-12
    assert a.details["zero_test"] == b.details["zero_test"]
    assert a.details["zero_test"] == ("consistency" if target == "hard" else "gaussian")
    assert abs(a.details["p_value_zero"] - b.details["p_value_zero"]) <= 1e-12


def test_consistency_null_block_by_block_is_the_in_memory_stream():
    # near calibration, where the zero test decides the lower end: p-values must agree
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(3), 2000)
    y = np.array([rng.choice(3, p=p) for p in P])
    for rows in (1, 333, 2000):  # one row per block too (uniforms jump item by item)
        dP = da.from_array(P, chunks=(rows if rows > 1 else 250, 3))
        a = nc.ece(P, y, interval=nc.intervals.Inversion(n_boot=200), seed=11)
        b = nc.ece(dP, y, interval=nc.intervals.Inversion(n_boot=200), seed=11)
        assert a.details["p_value_zero"] == b.details["p_value_zero"]
        _same(a, b, 1e-10)


@pytest.mark.parametrize("kind", ["top_label", "positive_class"])
@pytest.mark.parametrize("target", ["hard", "soft"])
@pytest.mark.parametrize("metric", ["ece", "mce"])
def test_binned_bootstrap_equals_in_memory(kind, target, metric):
    P, T, dP, dT = _inputs(kind, target, seed=2)
    f = getattr(nc, metric)
    a = f(P, T, kind=kind, interval=nc.intervals.Bootstrap(n_boot=300), seed=7)
    b = f(dP, dT, kind=kind, interval=nc.intervals.Bootstrap(n_boot=300), seed=7)
    assert a.details["bootstrap"] == b.details["bootstrap"] == "binned"
    _same(a, b, 1e-10)
    np.testing.assert_allclose(b.replicates, a.replicates, rtol=0, atol=1e-10)


def test_binned_bootstrap_plan_has_small_and_large_cells():
    # the equality above covers both kinds of cells: check that the data has both
    from noisycal.metrics.binned.bootstrap import NORMAL_FROM
    P, T, _, _ = _inputs("top_label", "hard", seed=2)
    counts = nc.ece(P, T, interval=None).bins["count"].to_numpy()
    assert np.any((counts > 0) & (counts < NORMAL_FROM)) and np.any(counts >= 2 * NORMAL_FROM)


def _sd_ratio(a, b) -> float:
    return float(np.std(b.replicates) / np.std(a.replicates))


def test_classwise_bootstrap_is_poisson_per_block_and_scheduler_free():
    P, T, dP, dT = _inputs("classwise", "hard", seed=4)
    b = nc.ece(dP, dT, kind="classwise", interval=nc.intervals.Bootstrap(n_boot=400), seed=3)
    with dask.config.set(scheduler="synchronous"):
        c = nc.ece(dP, dT, kind="classwise", interval=nc.intervals.Bootstrap(n_boot=400), seed=3)
    assert b.details["bootstrap"] == "poisson"
    np.testing.assert_array_equal(b.replicates, c.replicates)
    a = nc.ece(P, T, kind="classwise", interval=nc.intervals.Bootstrap(n_boot=400), seed=3)
    assert abs(a.value - b.value) <= 1e-12
    # same estimand: replicate spread within Monte-Carlo error (SE of an SD ratio ~5%)
    assert 0.85 < _sd_ratio(a, b) < 1.15
    assert abs(np.mean(b.replicates) - np.mean(a.replicates)) < 4 * np.std(a.replicates) \
        / np.sqrt(400) * np.sqrt(2)


SCORE_TARGETS = ["hard", "soft", "corrected", "binary"]


def _score_inputs(target: str):
    P, y, S = _data(6, n=2000, k=3)
    if target == "hard":
        return P, y
    if target == "soft":
        return P, S
    if target == "corrected":
        # rows sum to 1, entries outside [0, 1]: declared noise-corrected (issue 23)
        return P, nc.targets.from_matrix(1.6 * S - 0.2, kind="corrected")
    rng = np.random.default_rng(1)
    return P[:, 0], rng.random(P.shape[0])


@pytest.mark.parametrize("score", ["brier", "nll"])
@pytest.mark.parametrize("target", SCORE_TARGETS)
def test_scores_point_and_wald_equal_in_memory(score, target):
    P, T = _score_inputs(target)
    f = getattr(nc, score)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        for interval in (None, "wald"):
            a = f(P, T, interval=interval)
            b = f(_chunked(P, 450), _chunked(np.asarray(T), 450), interval=interval)
            assert a.name == b.name and a.status == b.status and a.message == b.message
            assert abs(a.value - b.value) <= 1e-12
            if interval == "wald":
                np.testing.assert_allclose(b.interval, a.interval, rtol=0, atol=1e-12)
    if score == "brier" and target == "soft":
        a = nc.brier(P, T, variant="expected", interval=None)
        b = nc.brier(_chunked(P), T, variant="expected", interval=None)
        assert a.name == b.name == "expected Brier" and abs(a.value - b.value) <= 1e-12


@pytest.mark.parametrize("score", ["brier", "nll"])
def test_a_score_below_its_floor_has_the_same_status_in_row_blocks(score):
    rng = np.random.default_rng(3)
    p = rng.uniform(0.6, 0.95, 900)
    P = np.column_stack([p, 1.0 - p])
    T = nc.targets.from_matrix(np.tile([1.3, -0.3], (900, 1)), kind="corrected")
    f = getattr(nc, score)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NumericalWarning)
        a = f(P, T, interval="wald")
        b = f(_chunked(P, 250), T, interval="wald")
    assert a.statuses == b.statuses == ("outside_parameter_space",)
    assert abs(a.details["floor"] - b.details["floor"]) <= 1e-12
    top = np.maximum(p, 1.0 - p)
    floor = np.mean(-np.log(top)) if score == "nll" else np.mean(2 * (1 - top) ** 2)
    assert a.details["floor"] == pytest.approx(floor, rel=1e-12)
    assert a.message == b.message


@pytest.mark.parametrize("score", ["brier", "nll"])
def test_scores_poisson_bootstrap(score):
    P, T = _score_inputs("hard")
    f = getattr(nc, score)
    boot = nc.intervals.Bootstrap(n_boot=1000)
    b = f(_chunked(P, 450), T, interval=boot, seed=2)
    with dask.config.set(scheduler="synchronous"):
        c = f(_chunked(P, 450), T, interval=boot, seed=2)
    np.testing.assert_array_equal(b.replicates, c.replicates)
    assert b.details["bootstrap"] == "poisson" and b.kind == "bootstrap"
    # the bootstrap SD of a mean is its standard error: compare with the Wald one
    se = f(P, T, interval="wald").details["se"]
    assert abs(np.std(b.replicates) / se - 1.0) < 0.1  # SE of an SD with 1000 reps: 2.2%
    a = f(P, T, interval=boot, seed=2)
    assert 0.88 < _sd_ratio(a, b) < 1.12


def test_same_error_messages_as_in_memory():
    P, y, _ = _data(0)
    bad = P.copy()
    bad[2100, 0] += 0.1
    nan = P.copy()
    nan[2500, 1] = np.nan
    y7 = y.copy()
    y7[1800] = 7
    for probs, target in ((bad, y), (nan, y), (P, y7)):
        with pytest.raises(ValueError) as mem:
            nc.ece(probs, target, interval=None)
        for f in (nc.ece, nc.brier):
            with pytest.raises(ValueError) as dsk:
                f(_chunked(probs), _chunked(target), interval=None)
            assert str(dsk.value) == str(mem.value)
    assert "row 2100" in str(mem.value) or "label 7" in str(mem.value)


@pytest.mark.parametrize("kwargs,name", [
    ({"logits": "x"}, "logits"), ({"cluster": np.arange(N) // 3}, "cluster"),
    ({"strategy": "quantile"}, "strategy"),
    ({"interval": nc.intervals.Bootstrap(method="bca")}, r"Bootstrap\(method='bca'\)"),
    ({"interval": nc.intervals.Bootstrap(scheme="exact")}, r"Bootstrap\(scheme='exact'\)"),
    ({"interval": nc.intervals.Bootstrap(scheme="poisson")},
     r"Bootstrap\(scheme='poisson'\)"),
    ({"interval": nc.intervals.Bootstrap(devices=1)}, r"Bootstrap\(devices=\.\.\.\)"),
    ({"interval": "bound"}, r"interval=Bound\(\)"),
    ({"items": np.arange(N)}, "items")])
def test_unsupported_options_are_refused(kwargs, name):
    P, y, _ = _data(0)
    kwargs = dict(kwargs)
    probs = None if "logits" in kwargs else _chunked(P)
    if "logits" in kwargs:
        kwargs["logits"] = _chunked(np.log(P))
    with pytest.raises(ValueError, match=f"^{name}: not supported with Dask input"):
        nc.ece(probs, _chunked(y), **kwargs)


def test_target_object_and_numpy_probs():
    P, y, S = _data(0)
    target = nc.targets.from_matrix(S, kind="soft")
    a = nc.ece(P, target, interval=nc.intervals.Inversion(n_boot=200))
    b = nc.ece(_chunked(P), target, interval=nc.intervals.Inversion(n_boot=200))
    _same(a, b, 1e-10)
    # NumPy probs split into the target's blocks
    b = nc.ece(P, _chunked(S), interval=nc.intervals.Inversion(n_boot=200))
    _same(a, b, 1e-10)


def test_two_worker_local_cluster():
    distributed = pytest.importorskip("distributed")
    P, y, S = _data(8)
    dP, dy = _chunked(P, 600), _chunked(y, 600)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        b = [nc.ece(dP, dy, interval=nc.intervals.Inversion(n_boot=200), seed=1),
             nc.ece(dP, dy, interval=nc.intervals.Bootstrap(n_boot=200), seed=1),
             nc.brier(dP, dy, interval="wald"),
             nc.ece(dP, dy, kind="classwise", interval=nc.intervals.Bootstrap(n_boot=200), seed=1)]
    a = [nc.ece(P, y, interval=nc.intervals.Inversion(n_boot=200), seed=1),
         nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=200), seed=1),
         nc.brier(P, y, interval="wald")]
    for x, z in zip(a, b, strict=False):
        _same(x, z, 1e-10) if x.bins is not None else None
        assert abs(x.value - z.value) <= 1e-10
        np.testing.assert_allclose(z.interval, x.interval, rtol=0, atol=1e-10)
    c = nc.ece(dP, dy, kind="classwise", interval=nc.intervals.Bootstrap(n_boot=200), seed=1)
    np.testing.assert_array_equal(b[3].replicates, c.replicates)  # threads: same draws


def test_other_metrics_refuse_dask_input_instead_of_computing_it():
    P, y, S = _data(0)
    for call in (lambda: nc.smooth_ece(_chunked(P), y),
                 lambda: nc.true_label_ece(_chunked(P), S),
                 lambda: nc.calibration_test(P, _chunked(y))):
        with pytest.raises(TypeError, match="Dask arrays are read block by block"):
            call()
