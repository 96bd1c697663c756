"""RAPS with ``k_reg='auto'`` and ``lam='auto'``: the tuning of "Uncertainty Sets for Image
Classifiers using Conformal Prediction" (Angelopoulos, Bates, Malik and Jordan, 2021) on
the first ``tune_fraction`` of the calibration rows, which are then set aside."""

from __future__ import annotations

import numpy as np
import pytest

import noisycal as nc
from noisycal.calibrators.conformal.scores import conformal_quantile, nonconformity
from noisycal.calibrators.conformal.tuning import LAMBDA_GRID, pick_k_reg, pick_lam

SC = nc.calibrators.SplitConformal


def _softmax(z):
    p = np.exp(z - z.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def _noisy_tail(seed, n=4000, K=100, signal=3.0):
    """A 100-class classifier whose true class gets a logit boost of 3 over N(0, 1) noise
    on every class: the truth is mostly in the top few, the tail is noise (RAPS's case)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    z = rng.normal(0.0, 1.0, (n, K))
    z[np.arange(n), y] += signal
    return _softmax(z), y


def test_k_reg_is_the_higher_quantile_of_the_true_ranks():
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])
    y = np.array([0, 2, 0, 1])  # ranks 1, 2, 3, 2
    assert pick_k_reg(P, y, alpha=0.25) == 3  # 0.75 quantile, 'higher': 3
    assert pick_k_reg(P, y, alpha=0.5) == 2
    assert pick_k_reg(P, y, alpha=0.99) == 2  # the 0.01 quantile of 1, 2, 2, 3, higher
    assert pick_k_reg(P, y, alpha=0.1) == 3


def test_lam_is_the_grid_value_of_smallest_tuning_sets():
    P, y = _noisy_tail(0, n=600)
    u = np.random.default_rng(1).random(600)
    lam, sizes = pick_lam(P, y, 0.1, 6, u)
    assert sizes.shape == (len(LAMBDA_GRID),) and lam == LAMBDA_GRID[int(np.argmin(sizes))]
    # each size is that of the candidate calibrated and evaluated on the same rows
    for g, size in zip(LAMBDA_GRID, sizes, strict=True):
        q = conformal_quantile(nonconformity(P, y, "raps", u=u, lam=g, k_reg=6), 0.1)
        cp = SC(alpha=0.1, score="raps", lam=g, k_reg=6).fit(probs=P, target=y, u=u)
        assert cp.quantile_ == q
        assert cp.predict_sets(probs=P, u=u).sum(1).mean() == size


def test_the_tuning_rows_are_set_aside():
    P, y = _noisy_tail(2, n=1500)
    cp = SC(alpha=0.1, score="raps", lam="auto", k_reg="auto", seed=3).fit(probs=P, target=y)
    assert cp.n_tune_ == 450 and cp.n_quantile_ == 1050
    k = pick_k_reg(P[:450], y[:450], 0.1)
    lam, sizes = pick_lam(P[:450], y[:450], 0.1, k, cp.u_[:450])
    assert cp.penalty_ == {"lam": lam, "k_reg": k}
    np.testing.assert_array_equal(cp.tune_sizes_, sizes)
    fixed = SC(alpha=0.1, score="raps", lam=lam, k_reg=k).fit(probs=P[450:], target=y[450:],
                                                               u=cp.u_[450:])
    assert cp.quantile_ == fixed.quantile_
    # one of them given: only the other is tuned
    half = SC(alpha=0.1, score="raps", lam=0.05, k_reg="auto", tune_fraction=0.2,
              seed=3).fit(probs=P, target=y)
    assert half.penalty_ == {"lam": 0.05, "k_reg": pick_k_reg(P[:300], y[:300], 0.1)}
    assert half.n_tune_ == 300 and half.tune_sizes_ is None
    plain = SC(alpha=0.1, score="raps", seed=3).fit(probs=P, target=y)
    assert plain.n_tune_ == 0 and plain.n_quantile_ == 1500


def test_auto_raps_covers_and_gives_smaller_sets_than_aps():
    """Eight seeded splits (1,500 calibration, 2,500 test rows). Measured: coverage 0.886
    to 0.914 (mean 0.901) for auto RAPS, 0.900 to 0.914 for APS; mean set size 4.96 for
    RAPS against 5.19 for APS, smaller in 7 of 8 splits."""
    cov, size_raps, size_aps = [], [], []
    for seed in range(8):
        P, y = _noisy_tail(seed)
        cal, test = slice(0, 1500), slice(1500, None)
        raps = SC(alpha=0.1, score="raps", lam="auto", k_reg="auto", seed=seed).fit(
            probs=P[cal], target=y[cal])
        aps = SC(alpha=0.1, score="aps", seed=seed).fit(probs=P[cal], target=y[cal])
        sr, sa = raps.predict_sets(probs=P[test]), aps.predict_sets(probs=P[test])
        cov.append(sr[np.arange(2500), y[test]].mean())
        size_raps.append(sr.sum(1).mean())
        size_aps.append(sa.sum(1).mean())
    assert np.mean(cov) >= 0.9 - 0.01  # 1 - alpha less a slack of 2.5 standard errors
    assert min(cov) >= 0.9 - 0.03
    assert np.mean(size_raps) < np.mean(size_aps) - 0.1
    assert np.sum(np.array(size_raps) < np.array(size_aps)) >= 6


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"lam": "Auto"}, "lam"),
    ({"k_reg": "automatic"}, "k_reg"),
    ({"lam": "auto", "tune_fraction": 0.0}, "tune_fraction"),
    ({"lam": "auto", "tune_fraction": 1.0}, "tune_fraction"),
    ({"k_reg": "auto", "tune_fraction": 0.001}, r"tune_fraction=0.001 leaves no rows"),
])
def test_bad_tuning_settings_name_the_argument(kwargs, match):
    P, y = _noisy_tail(0, n=200, K=5)
    with pytest.raises(ValueError, match=match):
        SC(alpha=0.1, score="raps", **kwargs).fit(probs=P, target=y)


def test_auto_settings_do_not_touch_other_scores():
    P, y = _noisy_tail(0, n=300, K=5)
    a = SC(alpha=0.1, score="aps", lam="auto", k_reg="auto", seed=0).fit(probs=P, target=y)
    b = SC(alpha=0.1, score="aps", seed=0).fit(probs=P, target=y)
    assert a.quantile_ == b.quantile_ and a.n_tune_ == 0
