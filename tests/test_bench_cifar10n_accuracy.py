"""The majority vote of ``benchmarks/bench_cifar10n_accuracy.py``: ties go to the lowest
class index, and they are counted."""

from __future__ import annotations

import numpy as np
import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_cifar10n_accuracy")


def test_majority_vote_breaks_ties_towards_the_lowest_class(bench):
    labels = np.array([[2, 2, 1],    # majority 2
                       [3, 1, 2],    # three-way tie: 1
                       [0, 4, 4],    # majority 4
                       [4, 3, 4],    # majority 4
                       [2, 0, 1],    # tie: 0
                       [1, 3, 1]])   # majority 1
    votes, ties = bench.majority_vote(labels, 5)
    np.testing.assert_array_equal(votes, [2, 1, 4, 4, 0, 1])
    assert ties == 2


def test_majority_vote_two_way_tie_with_four_raters(bench):
    votes, ties = bench.majority_vote(np.array([[3, 1, 3, 1], [2, 2, 2, 0]]), 4)
    np.testing.assert_array_equal(votes, [1, 2])
    assert ties == 1


@pytest.mark.parametrize("labels, k", [(np.array([[0, 5, 1]]), 5),
                                       (np.array([[0, -1, 1]]), 5),
                                       (np.array([0, 1, 1]), 5),
                                       (np.array([[0.0, 1.0, 1.0]]), 5)])
def test_majority_vote_rejects_bad_labels(bench, labels, k):
    with pytest.raises(ValueError, match="labels"):
        bench.majority_vote(labels, k)
