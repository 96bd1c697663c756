"""Dawid–Skene on real noisy labels (CIFAR-10N); skipped when the data are absent."""

import numpy as np
import pytest

import noisycal as nc


@pytest.fixture(scope="module")
def cifar10n():
    try:
        return nc.datasets.load_cifar10n()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.data
def test_dawid_skene_on_cifar10n(cifar10n):
    d = cifar10n
    ann = nc.Annotations.from_wide(d.labels, classes=np.arange(10))  # 3 annotator slots
    fit = nc.DawidSkene(n_classes=10).fit(ann, method=nc.engines.EM(n_starts=10), seed=0)
    assert fit.status == "ok"
    emp = np.zeros((3, 10, 10))
    for j in range(3):
        np.add.at(emp[j], (d.clean, d.labels[:, j]), 1)
    emp /= emp.sum(2, keepdims=True)
    err = np.abs(fit.confusion - emp)
    post_acc = np.mean(fit.item_posterior.argmax(1) == d.clean)
    vote_acc = np.mean(ann.majority_vote() == d.clean)
    print(f"CIFAR-10N: max |confusion - empirical| {err.max():.4f}, mean {err.mean():.5f}; "
          f"posterior accuracy {post_acc:.4f}, majority vote {vote_acc:.4f}, "
          f"source aggregate {np.mean(d.aggregate == d.clean):.4f}")
    # the source's aggregate label noise is 9.01%
    assert np.mean(d.aggregate != d.clean) == pytest.approx(0.0901, abs=1e-4)
    # measured on 2026-11-30: max error 0.0598, mean 0.0048; posterior 0.9195, vote 0.9118
    assert err.max() < 0.08 and err.mean() < 0.01
    assert post_acc > vote_acc
