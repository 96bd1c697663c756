"""Odd input to the metrics, targets and their validation: no silent wrong numbers.

Each case was measured on the code before this file: a misaligned or mislabelled pandas
input, an off-simplex target, a categorical target, probabilities passed as logits, sizes
that would exhaust memory and float16 probabilities all gave a number (or a crash) where a
clear ValueError, a warning or the right number is due.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

import noisycal as nc

# two items, three classes: top-label confidences 0.6 and 0.5, both predicted class 0
_P = np.array([[0.6, 0.3, 0.1], [0.5, 0.2, 0.3]])


def _data(n: int = 300, K: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(K, 2.0), size=n)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)[:, :-1]).sum(axis=1)
    return P, y


# ----------------------------------------------------------------------------- item 1


def test_cmce_checks_a_label_series_index_against_the_predictions_items():
    P, y = _data()
    items = np.array([f"i{i}" for i in range(len(y))])
    probs = pd.DataFrame(P, index=items)
    ref = float(nc.cmce(probs, pd.Series(y, index=items), interval=None))
    assert ref == float(nc.cmce(P, y, interval=None))
    with pytest.raises(ValueError, match="items"):
        nc.cmce(probs, pd.Series(y, index=items[::-1]), interval=None)
    with pytest.raises(ValueError, match="items"):
        nc.metrics.hpr_coverage(probs, pd.Series(y, index=items[::-1]))


def test_dataframe_columns_are_matched_to_the_classes_by_label():
    # hand-computed: labels a, b; top-label confidences 0.6 (class a, right) and 0.5
    # (class a, wrong) fall in different bins of 10: ECE = (|1 - 0.6| + |0 - 0.5|) / 2
    t = nc.targets.hard(["a", "b"], classes=["a", "b", "c"])
    df = pd.DataFrame(_P, columns=["a", "b", "c"])
    assert float(nc.ece(df, t, n_bins=10, interval=None)) == pytest.approx(0.45, abs=1e-15)
    shuffled = df[["c", "a", "b"]]
    assert float(nc.ece(shuffled, t, n_bins=10, interval=None)) == pytest.approx(0.45,
                                                                                 abs=1e-15)
    # by position the shuffled columns predict class b twice, once right:
    # (|0 - 0.6| + |1 - 0.5|) / 2 = 0.55 (the number measured before the fix)
    assert float(nc.ece(shuffled.to_numpy(), t, n_bins=10, interval=None)) == \
        pytest.approx(0.55, abs=1e-15)
    # classes= names them too, and cmce and brier match them the same way
    labels = np.array(["a", "b"])
    for f in (lambda x: nc.cmce(x, labels, classes=["a", "b", "c"], n_bins=4,
                                interval=None),
              lambda x: nc.brier(x, labels, classes=["a", "b", "c"], interval=None)):
        assert float(f(shuffled)) == float(f(df))
    with pytest.raises(ValueError, match=r"probs: the DataFrame's column labels"):
        nc.ece(df.rename(columns={"a": "z"}), t, interval=None)
    with pytest.raises(ValueError, match=r"logits: the DataFrame's column labels"):
        nc.brier(logits=np.log(df.rename(columns={"a": "z"})), target=t, interval=None)
    # default columns 0..K-1 carry no labels: positional, as a plain array
    assert float(nc.ece(pd.DataFrame(_P), t, n_bins=10, interval=None)) == \
        pytest.approx(0.45, abs=1e-15)


def test_item_ids_must_be_present_and_distinct():
    P, y = _data(20)
    dup = np.array([f"i{i}" for i in range(19)] + ["i0"])
    with pytest.raises(ValueError, match=r"items must not repeat an id; 'i0'"):
        nc.ece(P, y, items=dup, interval=None)
    with pytest.raises(ValueError, match=r"items has 20 missing id\(s\)"):
        nc.ece(P, y, items=np.full(20, np.nan), interval=None)
    with pytest.raises(ValueError, match=r"items \(the index of the predictions\) has 1 missing"):
        nc.brier(pd.DataFrame(P, index=[None] + list(range(19))), y, interval=None)
    with pytest.raises(ValueError, match=r"items must not repeat an id"):
        nc.targets.hard(y, n_classes=3, items=dup)
    with pytest.raises(ValueError, match=r"items has 20 missing id"):
        nc.targets.from_matrix(np.eye(3)[y], items=[np.nan] * 20)


def test_an_empty_target_cannot_be_built():
    with pytest.raises(ValueError, match=r"values must have at least 1 row and 2 columns"):
        nc.targets.from_matrix(np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"^labels must contain at least one label"):
        nc.targets.hard(np.zeros(0, dtype=int), n_classes=3)
    with pytest.raises(ValueError, match=r"2 columns"):
        nc.targets.from_matrix(np.zeros((4, 0)))


# ----------------------------------------------------------------------------- item 2


def test_targets_off_the_simplex_are_refused():
    P, y = _data(40)
    one_hot = np.eye(3)[y]
    with pytest.raises(ValueError, match=r"rows of target must sum to 1.*row 0 sums to 2"):
        nc.cmce(P, 2 * one_hot, interval=None)
    with pytest.raises(ValueError, match=r"rows of target must sum to 1.*sums to 0.5"):
        nc.calibration_slope(P, 0.5 * one_hot)
    negative = one_hot.copy()
    negative[0] = [-0.2, 0.6, 0.6]  # sums to 1, leaves [0, 1]
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\], got values in "
                                         r"\[-0.2, 1\]"):
        nc.brier(P, negative, variant="expected", interval=None)
    for f in (lambda t: nc.ece(P, t, interval=None), lambda t: nc.smooth_ece(P, t),
              lambda t: nc.calibration_test(P, t), lambda t: nc.nll(P, t, interval=None)):
        with pytest.raises(ValueError, match="target"):
            f(negative)
        with pytest.raises(ValueError, match="target"):
            f(2 * one_hot)


def test_a_corrected_target_may_leave_the_unit_interval():
    P, y = _data(200, K=2)
    rng = np.random.default_rng(3)
    t1 = np.where(y == 1, 1.25, -0.25) + rng.normal(0, 0.1, y.size)  # unbiased-looking
    T = np.column_stack([1 - t1, t1])
    corr = nc.targets.from_matrix(T, kind="corrected")
    ref_brier = np.mean(np.sum(P**2, axis=1) - 2 * np.sum(P * T, axis=1) + 1)
    assert float(nc.brier(P, corr, variant="expected", interval=None)) == \
        pytest.approx(ref_brier, rel=1e-12)
    # the metrics that accept a noise-corrected target all give a number
    for est in (nc.ece(P, corr, interval=None), nc.cmce(P, corr, interval=None),
                nc.mce(P, corr, min_count=1, interval=None),
                nc.smooth_ece(P, corr, interval=None)):
        assert np.isfinite(float(est))
    with pytest.raises(ValueError, match="noise-corrected targets are not supported"):
        nc.calibration_slope(P, corr)  # its own refusal: a logistic fit needs [0, 1]
    # the same matrix as a plain array is not declared corrected: refused
    with pytest.raises(ValueError, match=r"only a noise-corrected target may leave it"):
        nc.ece(P, T, interval=None)
    # rows of a corrected target must still sum to 1
    with pytest.raises(ValueError, match="rows of target must sum to 1"):
        nc.ece(P, nc.targets.from_matrix(T * 2, kind="corrected"), interval=None)


# ----------------------------------------------------------------------------- item 3


def test_a_categorical_target_needs_classes_as_a_string_array_does():
    # the categories' order is not taken as the column order: without classes= a
    # Categorical is refused as a string array is (issue "nothing silent", case 4; this
    # test read the declared categories as the columns before)
    cat = pd.Categorical(["b", "a"], categories=["b", "a", "c"])
    for t in (cat, pd.Series(cat), np.array(["b", "a"])):
        with pytest.raises(ValueError, match="classes"):
            nc.ece(_P, t, n_bins=10, interval=None)
    # with classes= (column 0 of the predictions is class 'b'): codes 0 and 1, the
    # hand-computed 0.45 of the test above
    abc = ["b", "a", "c"]
    assert float(nc.ece(_P, cat, classes=abc, n_bins=10, interval=None)) == \
        pytest.approx(0.45, abs=1e-15)
    assert float(nc.ece(_P, pd.Series(cat), classes=abc, n_bins=10, interval=None)) == \
        pytest.approx(0.45, abs=1e-15)
    # a DataFrame's columns are matched to the categories by label: nothing is guessed
    df = pd.DataFrame(_P, columns=["b", "a", "c"])[["a", "c", "b"]]
    assert float(nc.ece(df, cat, n_bins=10, interval=None)) == pytest.approx(0.45, abs=1e-15)
    # pandas sorts the categories of a plain Categorical: (a, b); refused without classes=
    plain = pd.Categorical(["b", "a"])
    assert list(plain.categories) == ["a", "b"]
    P2 = _P[:, :2] / _P[:, :2].sum(1, keepdims=True)
    with pytest.raises(ValueError, match=r"categories \['a', 'b'\].*give classes="):
        nc.ece(P2, plain, n_bins=2, interval=None)
    got = float(nc.ece(P2, plain, classes=["a", "b"], n_bins=2, interval=None))
    # confidences 2/3 (class a predicted, label b) and 5/7 (class a, label a) share bin 2
    assert got == pytest.approx(abs((0 + 1) / 2 - (2 / 3 + 5 / 7) / 2), abs=1e-15)


def test_one_dimensional_probabilities_given_as_logits_warn():
    z = np.array([0.2, 0.9, 0.4, 0.7])
    with pytest.warns(nc.NumericalWarning, match=r"every value of logits lies in \[0, 1\]"):
        nc.ece(logits=z, target=[0, 1, 0, 1], interval=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nc.ece(logits=z - 0.5, target=[0, 1, 0, 1], interval=None)  # real logits: quiet


# ----------------------------------------------------------------------------- item 4


def test_dask_logits_are_a_value_error_as_the_readme_says():
    da = pytest.importorskip("dask.array")
    z = da.from_array(np.log(_data(20)[0]), chunks=10)
    y = _data(20)[1]
    for f in (nc.ece, nc.mce, nc.brier, nc.nll):
        with pytest.raises(ValueError, match=r"logits: Dask arrays are read as probs= only"):
            f(logits=z, target=y, interval=None)


def test_smooth_ece_refuses_a_vanishing_bandwidth_up_front():
    P, y = _data(30)
    for bw in (1e-300, 1e-320):
        with pytest.raises(ValueError, match=r"^bandwidth: .* more memory than exists"):
            nc.smooth_ece(P, y, bandwidth=bw)


# ----------------------------------------------------------------------------- item 5


def test_sizes_beyond_memory_are_refused_with_their_size():
    P, y = _data(30)
    with pytest.raises(ValueError, match=r"^n_grid: .*1e\+09 points would need 14.9 GiB"):
        nc.smooth_ece(P, y, n_grid=10**9)
    rng = np.random.default_rng(0)
    wide = rng.dirichlet(np.ones(10**5), size=3)
    labels = np.array([0, 1, 2])
    # (1.5e6)^2 float64 = 1.68e4 GiB (16 TiB)
    with pytest.raises(ValueError, match=r"^probs: kind='classwise' with 100000 classes "
                                         r"and 15 bins.*1\.68e\+04 GiB"):
        nc.ece(wide, labels, kind="classwise", n_bins=15)
    with pytest.raises(ValueError, match=r"^probs: kind='classwise'.*GiB of memory"):
        nc.calibration_test(wide, labels, kind="classwise", n_bins=15)
    with pytest.raises(ValueError, match=r"^bandwidth: the smoothed curves of 100000 "
                                         r"group\(s\).*GiB of memory"):
        nc.smooth_ece(wide, labels, kind="classwise", bandwidth=0.01)
    # a grid that fits, but the inverted interval's covariance of 100000 x 33 cosine
    # coefficients would not: (3.3e6)^2 float64, 79 TiB
    with pytest.raises(ValueError, match=r"^probs: the inverted interval's covariance of "
                                         r"3300000 cosine coefficients"):
        nc.smooth_ece(wide, labels, kind="classwise", bandwidth=0.1)
    # without the covariance the classwise ECE is cheap, and so is the top-label one
    assert np.isfinite(float(nc.ece(wide, labels, kind="classwise", n_bins=15,
                                    interval=None)))
    assert np.isfinite(float(nc.ece(wide, labels, n_bins=15)))


def test_classwise_bootstrap_replicates_beyond_memory_are_refused_with_their_size():
    # 1000 replicates of 100000 classes x 15 bins of float64 bin means: 11.2 GiB
    rng = np.random.default_rng(0)
    wide, labels = rng.dirichlet(np.ones(10**5), size=3), np.array([0, 1, 2])
    with pytest.raises(ValueError, match=r"^n_boot: 1000 bootstrap replicates of 100000 "
                                         r"score group\(s\) x 15 bins .*11\.2 GiB"):
        nc.ece(wide, labels, kind="classwise", n_bins=15,
               interval=nc.intervals.Bootstrap(n_boot=1000))


@pytest.mark.filterwarnings("ignore:.*does not contain the estimate:noisycal.NumericalWarning")
def test_the_replicate_cap_is_the_shared_cap(monkeypatch):
    # 10 classes x 15 bins x 8 bytes = 1200 bytes per replicate: a 1 MiB cap admits 873
    import noisycal._util.validation as v

    monkeypatch.setattr(v, "MAX_WORK_BYTES", 2**20)
    P, y = _data(60, K=10)
    ok = nc.ece(P, y, kind="classwise", n_bins=15, interval=nc.intervals.Bootstrap(n_boot=873))
    assert ok.interval[0] <= ok.interval[1]
    with pytest.raises(ValueError, match=r"^n_boot: 874 bootstrap replicates of 10 score "
                                         r"group\(s\) x 15 bins"):
        nc.ece(P, y, kind="classwise", n_bins=15, interval=nc.intervals.Bootstrap(n_boot=874))
    # the Poisson scheme keeps each replicate's per-bin sums (count, confidence, target)
    with pytest.raises(ValueError, match=r"^n_boot: 300 bootstrap.*x 15 bins x 3 sums"):
        nc.ece(P, y, kind="classwise", n_bins=15,
               interval=nc.intervals.Bootstrap(n_boot=300, scheme="poisson"))
    boot = nc.intervals.Bootstrap(n_boot=291, scheme="poisson")
    assert np.isfinite(float(nc.ece(P, y, kind="classwise", n_bins=15, interval=boot)))


@pytest.mark.filterwarnings("ignore:.*does not contain the estimate:noisycal.NumericalWarning")
@pytest.mark.parametrize(("binary", "kw"), [
    (False, {}),
    (False, {"norm": "l2", "debias": True}),
    (False, {"strategy": "quantile", "n_bins": 6}),
    (True, {}),
])
def test_streamed_top_label_inversion_equals_the_item_table(monkeypatch, binary, kw):
    """The top-label and positive-class inverted intervals now come from per-bin sums
    over row chunks (as the classwise one): the same numbers as the item table, with
    several chunks and a ragged last one (n > the chunk rows)."""
    import importlib

    backend = importlib.import_module("noisycal.metrics.binned.backend")
    streamed_form = importlib.import_module("noisycal.metrics.binned.streamed")
    P, y = _data(3000, K=2 if binary else 4, seed=4)
    x = P[:, 1] if binary else P.astype(np.float32)
    monkeypatch.setattr(streamed_form, "CHUNK_ROWS", 700)
    inv = nc.intervals.Inversion(n_boot=200)
    a = nc.ece(x, y, interval=inv, seed=3, **kw)
    with monkeypatch.context() as m:  # the item table instead of the streamed sums
        m.setattr(backend.StreamedSums, "serves", staticmethod(lambda request: False))
        b = nc.ece(x, y, interval=inv, seed=3, **kw)
    assert a.kind == b.kind == "inversion" and a.status == b.status
    assert a.value == pytest.approx(b.value, rel=1e-10, abs=1e-14)
    assert a.interval == pytest.approx(b.interval, rel=1e-9, abs=1e-14)
    assert a.details["zero_test"] == b.details["zero_test"]
    pd.testing.assert_frame_equal(a.bins, b.bins, rtol=1e-10, atol=1e-14)


def test_top_label_ece_default_interval_peak_below_twice_input():
    """Top-label ECE, default (inverted) interval, float32 input: NumPy's peak under 2x
    the input (it was 5.1x at 2e6 x 10, about 200 bytes an item, from the item table and
    the consistency null; now the per-bin sums are streamed as for the classwise ECE).
    Run in a subprocess so the other tests' allocations do not count."""
    code = textwrap.dedent("""
        import tracemalloc, numpy as np, noisycal as nc
        rng = np.random.default_rng(5)
        n, K = 400_000, 10
        P = rng.dirichlet(np.ones(K), size=n).astype(np.float32)
        P /= P.sum(axis=1, keepdims=True)
        y = rng.integers(0, K, n)
        inv = nc.intervals.Inversion(n_boot=100)
        nc.ece(P[:5000], y[:5000], interval=inv)  # compile first
        tracemalloc.start()
        est = nc.ece(P, y, interval=inv)
        _, peak = tracemalloc.get_traced_memory()
        assert est.kind == "inversion" and est.status == "ok", est
        print(peak / P.nbytes)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    ratio = float(out.stdout.split()[-1])
    assert ratio < 2.0, ratio


# ----------------------------------------------------------------------------- item 6


def test_float16_probabilities_use_a_dtype_aware_tolerance():
    P, y = _data(200)
    P16 = P.astype(np.float16)
    dev = np.abs(P16.astype(np.float64).sum(axis=1) - 1.0).max()
    assert 1e-6 < dev < 3 * float(np.finfo(np.float16).eps)  # rounding only
    # the textbook top-label ECE of the float16 values, 15 equal-width bins
    Q = P16.astype(np.float64)
    conf, hit = Q.max(axis=1), (Q.argmax(axis=1) == y).astype(float)
    b = np.minimum((conf * 15).astype(int), 14)
    ref = sum(abs(hit[b == k].mean() - conf[b == k].mean()) * np.sum(b == k)
              for k in np.unique(b)) / len(y)
    assert float(nc.ece(P16, y, interval=None)) == pytest.approx(ref, rel=1e-12)
    assert np.isfinite(float(nc.cmce(P16, y, interval=None)))
    bad = P16.copy()
    bad[7] = np.array([0.5, 0.3, 0.1], dtype=np.float16)  # sums to 0.9
    with pytest.raises(ValueError, match=r"rows of probs must sum to 1 within 0.00292969; row 7"):
        nc.ece(bad, y, interval=None)
    with pytest.raises(ValueError, match=r"row 7"):
        nc.cmce(bad, y, interval=None)
    # float64 keeps the 1e-6 tolerance
    with pytest.raises(ValueError, match=r"within 1e-06"):
        nc.ece(P + np.array([1e-5, 0, 0]), y, interval=None)
