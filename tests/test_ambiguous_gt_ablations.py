"""``benchmarks/ambiguous_gt_ablations.py``: the rating subsampler without data, and one
reduced cell of the annotation-count ablation on CIFAR-10H (skipped without the data)."""

from __future__ import annotations

import numpy as np
import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("ambiguous_gt_ablations")


def test_subsample_ratings_keeps_m_of_each_items_ratings_nested_across_m(bench):
    counts = np.array([[3, 0, 2], [0, 5, 0], [1, 1, 3], [3, 2, 0]])
    prev = np.zeros_like(counts)
    for m in (1, 2, 3, 4, 5):
        c = bench.subsample_ratings(counts, m, seed=7)
        np.testing.assert_array_equal(c.sum(axis=1), [m] * 4)
        assert np.all(c <= counts) and np.all(c >= prev)  # one seed: nested draws
        prev = c
    np.testing.assert_array_equal(prev, counts)  # m = every rating: the counts back
    np.testing.assert_array_equal(bench.subsample_ratings(counts, "all", seed=0), counts)
    np.testing.assert_array_equal(bench.subsample_ratings(counts, 1, seed=3)[1], [0, 1, 0])
    many = np.tile([[30, 10]], (4000, 1))  # the share of class 0 in 2 of 40 ratings
    assert bench.subsample_ratings(many, 2, seed=0)[:, 0].mean() == pytest.approx(1.5,
                                                                                 abs=0.03)


@pytest.mark.parametrize("counts, m, arg", [
    ([[3, 0, 2], [0, 5, 0]], 6, "m"),          # more than the 5 ratings of each item
    ([[3, 0, 2]], 0, "m"),
    ([[3, 0, 2]], 2.0, "m"),
    ([[3, 0, 2]], True, "m"),
    ([[3, 0, 2]], "some", "m"),
    ([[3, -1, 2]], 1, "counts"),
    ([[3, 0.5, 2]], 1, "counts"),
    ([3, 0, 2], 1, "counts"),
])
def test_subsample_ratings_rejects_bad_input(bench, counts, m, arg):
    with pytest.raises(ValueError, match=f"^{arg}:"):
        bench.subsample_ratings(np.array(counts), m, seed=0)


def test_size_ablation_rejects_a_size_beyond_the_calibration_set(bench):
    z, pi = np.zeros((20, 3)), np.full((20, 3), 1 / 3)
    with pytest.raises(ValueError, match="sizes"):
        bench.size_ablation(z, pi, np.arange(10), np.arange(10, 20), [11], 1,
                            np.zeros((2, 10), dtype=int))


@pytest.mark.data
def test_one_cell_of_the_annotation_count_ablation_on_cifar10h(bench, monkeypatch):
    from noisycal.datasets import load_cifar10_logits, load_cifar10h

    try:
        z, counts = load_cifar10_logits("densenet40").logits_test, load_cifar10h().counts
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    monkeypatch.setattr(bench, "METHODS", ["TS", "SLTS", "IR-Soft"])
    cal, test = np.arange(0, 600), np.arange(600, 1200)
    sub = bench.subsample_ratings(counts[cal], 3, seed=0)
    np.testing.assert_array_equal(sub.sum(axis=1), np.full(600, 3))
    assert np.all(sub <= counts[cal])
    pi = counts / counts.sum(axis=1, keepdims=True)
    draws = bench.label_draws(pi[test], 20, seed=0)
    rows = bench.ratings_ablation(z, counts, cal, test, [1, 3], 1, draws, "full", 20)
    assert [(r["m"], r["method"]) for r in rows] == [
        (m, k) for m in (1, 3) for k in ("TS", "SLTS", "IR-Soft")]
    by = {(r["m"], r["method"]): r for r in rows}
    for r in rows:
        assert np.isfinite(r["ece_true_mc"]) and 0 < r["ece_true_mc"] < 100
        assert np.isfinite(r["nll"]) and r["status"] == "ok"
    # one rating per image: the soft target is the one-hot voted one, so TS is SLTS
    assert by[(1, "TS")]["T"] == by[(1, "SLTS")]["T"]
    assert by[(1, "TS")]["ece_true_mc"] == by[(1, "SLTS")]["ece_true_mc"]
    assert by[(3, "TS")]["T"] != by[(3, "SLTS")]["T"]
