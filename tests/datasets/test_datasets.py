"""Tests for noisycal.datasets: locating the shared data, loading it, README reference values.

The data tests are marked ``data`` and skip cleanly when the files are absent. Reference
values come from ../shared/data/cifar10h/README.md and cifar10_logits/README.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import noisycal as nc
from noisycal.datasets import data_dir, load_cifar10_logits, load_cifar10h

# ---------------------------------------------------------------------------- always run


def test_env_var_is_respected(monkeypatch, tmp_path):
    monkeypatch.setenv("NOISYCAL_DATA", str(tmp_path))
    assert data_dir() == tmp_path


def test_missing_files_raise_file_not_found_naming_the_place(monkeypatch, tmp_path):
    monkeypatch.setenv("NOISYCAL_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="NOISYCAL_DATA") as info:
        load_cifar10h()
    assert str(tmp_path / "cifar10h" / "cifar10h.npz") in str(info.value)
    with pytest.raises(FileNotFoundError, match="cifar10_logits"):
        load_cifar10_logits(data=tmp_path / "elsewhere")


def test_cwd_fallback_without_env_var(monkeypatch, tmp_path):
    monkeypatch.delenv("NOISYCAL_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    assert data_dir() == (tmp_path / "shared" / "data").resolve()


def test_unknown_model_raises_listing_the_available_ones():
    with pytest.raises(ValueError, match="model must be one of the available models "
                       "densenet40, vgg16, resnet110, preresnet110, densenet_bc_l190_k40; "
                       "got 'resnet50'"):
        load_cifar10_logits("resnet50")
    with pytest.raises(ValueError, match="available models"):
        load_cifar10_logits(["vgg16"])


@pytest.mark.data
@pytest.mark.parametrize("model, acc", [("vgg16", 0.9359), ("resnet110", 0.9389),
                                        ("preresnet110", 0.9506),
                                        ("densenet_bc_l190_k40", 0.9668)])
def test_every_shared_cifar10_model_loads(model, acc):
    # the accuracies of the data README; softmax of the logs gives the stored probabilities
    try:
        d = load_cifar10_logits(model)
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    assert d.logits_test.shape == (10000, 10) and d.logits_test.dtype == np.float64
    assert d.logits_val is None and d.y_val is None and d.val_train_idx is None
    assert d.y_test[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    assert np.mean(d.logits_test.argmax(1) == d.y_test) == pytest.approx(acc, abs=5e-5)
    P = np.exp(d.logits_test)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-6)


def test_a_probability_file_is_checked(tmp_path):
    (tmp_path / "cifar10_logits").mkdir()
    np.savez(tmp_path / "cifar10_logits" / "vgg16_c10_test_probs.npz",
             probs_test=np.zeros((3, 10)), y_test=np.zeros(3, int))
    with pytest.raises(ValueError, match="must hold positive probabilities"):
        load_cifar10_logits("vgg16", data=tmp_path)
    np.savez(tmp_path / "cifar10_logits" / "vgg16_c10_test_probs.npz",
             probs_test=np.full((3, 4), 0.25), y_test=np.zeros(3, int))
    with pytest.raises(ValueError, match=r"'probs_test' has shape \(3, 4\)"):
        load_cifar10_logits("vgg16", data=tmp_path)


# ---------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def cifar10h():
    try:
        return load_cifar10h()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def densenet():
    try:
        return load_cifar10_logits("densenet40")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.data
def test_cifar10h_shapes_and_alignment(cifar10h):
    assert cifar10h.counts.shape == (10000, 10) and cifar10h.counts.dtype == np.int64
    assert cifar10h.probs.shape == (10000, 10) and cifar10h.probs.dtype == np.float64
    assert cifar10h.labels.shape == (10000,) and cifar10h.labels.dtype == np.int64
    assert cifar10h.class_names[:3] == ["airplane", "automobile", "bird"]
    assert len(cifar10h.class_names) == 10
    assert cifar10h.counts.sum() == 511_000
    np.testing.assert_allclose(cifar10h.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert cifar10h.labels[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    # README: the argmax of the human distribution equals the label on 99.21% of images
    agree = np.mean(np.argmax(cifar10h.probs, axis=1) == cifar10h.labels)
    assert agree == pytest.approx(0.9921, abs=0)


@pytest.mark.data
def test_densenet40_shapes_and_accuracy(densenet, cifar10h):
    assert densenet.logits_test.shape == (10000, 10)
    assert densenet.logits_test.dtype == np.float64
    assert densenet.logits_val.shape == (5000, 10)
    assert densenet.y_val.shape == densenet.val_train_idx.shape == (5000,)
    np.testing.assert_array_equal(densenet.y_test, cifar10h.labels)
    acc = np.mean(np.argmax(densenet.logits_test, axis=1) == densenet.y_test)
    assert acc == pytest.approx(0.9242, abs=0)  # README: 9242 of 10000


@pytest.mark.data
def test_densenet40_ece_matches_readme(densenet):
    # README: ECE15 0.0550 with (lo, hi] bins; noisycal's bins are [lo, hi). Measured
    # value with noisycal: 0.0550027 (no confidence sits exactly on an edge here).
    est = nc.ece(logits=densenet.logits_test, target=densenet.y_test, n_bins=15, interval=None)
    print(f"DenseNet-40 CIFAR-10 test ECE15 = {est.value:.7f}")
    assert est.value == pytest.approx(0.0550, abs=5e-4)


@pytest.mark.data
def test_densenet40_true_label_ece(densenet, cifar10h):
    est = nc.true_label_ece(logits=densenet.logits_test, target=cifar10h.probs,
                            form="expected", n_bins=15, interval=None)
    print(f"DenseNet-40 CIFAR-10H true-label ECE (expected form) = {est.value:.7f}")
    # no published reference value: a smoke check that the soft-label ECE is a finite,
    # positive calibration error of the order of the hard-label ECE (0.055), hence wide
    assert np.isfinite(est.value) and 0.0 < est.value < 0.2


def test_data_dir_default_points_at_shared_data_in_this_checkout(monkeypatch):
    # In a source checkout whose ../shared/data exists, the package-relative fallback finds
    # it from any working directory.
    monkeypatch.delenv("NOISYCAL_DATA", raising=False)
    shared = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    if not shared.is_dir():
        pytest.skip("no ../shared/data next to this checkout")
    monkeypatch.chdir("/")
    assert data_dir() == shared.resolve()


# ---------------------------------------------------------------------------- shipped data


def test_dawid_skene_1979_keeps_table_order():
    from noisycal.datasets import load_dawid_skene_1979
    from noisycal.datasets._dawid_skene_1979 import RATINGS

    ann = load_dawid_skene_1979()
    assert (ann.n_items, ann.n_annotators, ann.n_classes, ann.n_ratings) == (45, 5, 4, 315)
    assert ann.items.tolist() == list(range(1, 46))
    assert ann.annotators.tolist() == [1, 2, 3, 4, 5]
    assert ann.classes.tolist() == [1, 2, 3, 4]
    assert ann.annotators_known
    # patient 2 (row 1): ratings 3, 3, 3, 4, 3, 3, 4 -> counts of classes 1..4
    assert ann.counts()[1].tolist() == [0, 0, 5, 2]
    assert ann.counts().sum() == np.asarray(RATINGS).size
    # observer 1 rated every patient three times
    assert ann.annotator_summary()["n_ratings"].tolist() == [135, 45, 45, 45, 45]


# ---------------------------------------------------------------------------- explicit data=


def _fake_cifar10h(root: Path, n: int = 4) -> np.ndarray:
    counts = np.arange(n * 10).reshape(n, 10) % 7 + 1
    (root / "cifar10h").mkdir()
    np.savez(root / "cifar10h" / "cifar10h.npz", counts=counts.astype(np.int16),
             cifar10_test_labels=np.arange(n), class_names=np.array([f"c{k}" for k in range(10)]))
    return counts


def test_loaders_read_an_explicit_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("NOISYCAL_DATA", str(tmp_path / "not-this-one"))
    counts = _fake_cifar10h(tmp_path)
    got = load_cifar10h(data=tmp_path)
    np.testing.assert_array_equal(got.counts, counts)
    assert got.counts.dtype == np.int64 and got.probs.dtype == np.float64
    np.testing.assert_allclose(got.probs, counts / counts.sum(1, keepdims=True), rtol=1e-15)
    assert got.class_names[:2] == ["c0", "c1"]
    (tmp_path / "cifar10n").mkdir()
    n = 3
    np.savez(tmp_path / "cifar10n" / "cifar10n.npz",
             **{f"random_label{j}": np.full(n, j) for j in (1, 2, 3)},
             clean_label=np.zeros(n), aggre_label=np.ones(n))
    cn = nc.datasets.load_cifar10n(data=str(tmp_path))
    assert cn.labels.tolist() == [[1, 2, 3]] * n
    assert cn.clean.dtype == np.int64 and cn.aggregate.tolist() == [1] * n


def test_bad_archives_raise_value_error_naming_the_file(tmp_path):
    _fake_cifar10h(tmp_path)
    path = tmp_path / "cifar10h" / "cifar10h.npz"
    np.savez(path, counts=np.ones((2, 10)))
    with pytest.raises(ValueError, match=r"cifar10h\.npz lacks the array\(s\)"):
        load_cifar10h(data=tmp_path)
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"cifar10h\.npz is not a readable \.npz archive"):
        load_cifar10h(data=tmp_path)
    with pytest.raises(ValueError, match="data must be a path"):
        load_cifar10h(data=1.5)
