"""Ragged simulated ratings shared by the EM layout tests (test_em_slots.py,
test_em_prob.py)."""

from __future__ import annotations

import numpy as np


def ragged(seed=3, n=400, J=7, K=3):
    """(item, annotator, label, n, J, K): 1-6 ratings per item (repeats allowed),
    shuffled rating order."""
    rng = np.random.default_rng(seed)
    per = rng.choice([1, 2, 3, 6], size=n, p=[0.2, 0.3, 0.4, 0.1])
    item = np.repeat(np.arange(n), per)
    annot = rng.integers(0, J, item.size)
    label = rng.integers(0, K, item.size)
    order = rng.permutation(item.size)
    return item[order], annot[order], label[order], n, J, K
