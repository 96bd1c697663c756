"""Faults of the environment get a ValueError naming what is wrong, or a quiet fallback
where there is nothing to report to (noisycal._util.jax, noisycal._util.progress,
noisycal.datasets)."""

import os
import sys

import numpy as np
import pytest

import noisycal as nc


def test_a_compilation_cache_that_cannot_be_a_folder(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for bad, why in ((afile, "File exists"), (afile / "inside", "Not a directory"),
                     ("", "empty string")):
        with pytest.raises(ValueError, match=why):
            nc.set_compilation_cache(bad)
    assert nc.set_compilation_cache(None) is None


def test_progress_without_a_stderr(monkeypatch):
    """A process without a stderr (a GUI, a service): no bar, the same fit."""
    conf = np.array([[[0.85, 0.15], [0.2, 0.8]]] * 3)
    ann = nc.simulate.dawid_skene(100, [0.6, 0.4], conf, seed=0).annotations
    ref = nc.DawidSkene(2).fit(ann)
    monkeypatch.setattr(sys, "stderr", None)
    fit = nc.DawidSkene(2).fit(ann, progress=True)
    np.testing.assert_array_equal(fit.confusion, ref.confusion)


def test_damaged_data_files_name_the_path(tmp_path):
    folder = tmp_path / "a" / "cifar10n"
    (folder / "cifar10n.npz").mkdir(parents=True)
    with pytest.raises(ValueError, match="is not a regular file"):
        nc.datasets.load_cifar10n(tmp_path / "a")
    loop = tmp_path / "b" / "cifar10n"
    loop.mkdir(parents=True)
    os.symlink(loop / "cifar10n.npz", loop / "cifar10n.npz")
    with pytest.raises(ValueError, match="cannot be read"):
        nc.datasets.load_cifar10n(tmp_path / "b")
    cut = tmp_path / "c" / "cifar10n"
    cut.mkdir(parents=True)
    np.savez(cut / "whole.npz", labels=np.zeros((100, 3), int), clean=np.zeros(100, int))
    data = (cut / "whole.npz").read_bytes()
    (cut / "cifar10n.npz").write_bytes(data[:-200])          # truncated
    with pytest.raises(ValueError, match="not a readable .npz archive"):
        nc.datasets.load_cifar10n(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="not found"):
        nc.datasets.load_cifar10n(tmp_path / "none")


def test_a_header_claiming_more_than_the_file_holds_is_refused(tmp_path):
    """An .npy member whose header claims shape (10^12, 10) (8e13 bytes of float64) in a data
    folder: refused from the header, naming the file, the array and the claimed size,
    before NumPy allocates it."""
    import io
    import zipfile

    from numpy.lib import format as npy_format

    folder = tmp_path / "cifar10n"
    folder.mkdir()
    forged = io.BytesIO()
    npy_format.write_array_header_1_0(forged, {"descr": "<f8", "fortran_order": False,
                                               "shape": (10**12, 10)})
    forged.write(b"\0" * 64)
    with zipfile.ZipFile(folder / "cifar10n.npz", "w") as z:
        z.writestr("random_label1.npy", forged.getvalue())
        for key in ("random_label2", "random_label3", "clean_label", "aggre_label"):
            buf = io.BytesIO()
            np.save(buf, np.zeros(3, np.int64))
            z.writestr(key + ".npy", buf.getvalue())
    with pytest.raises(ValueError, match=r"cifar10n.npz: the array 'random_label1' claims shape "
                                         r"\(1000000000000, 10\) \(7.45e\+04 GiB of "
                                         r"float64\) but its member holds 192 bytes"):
        nc.datasets.load_cifar10n(tmp_path)


def test_sizes_are_checked_before_allocating():
    conf = np.array([[[0.85, 0.15], [0.2, 0.8]]] * 3)
    ann = nc.simulate.dawid_skene(100, [0.6, 0.4], conf, seed=0).annotations
    fit = nc.DawidSkene(2).fit(ann)
    with pytest.raises(ValueError, match=r"n_rep=100000000 replicates of 300 ratings need "
                                         r"about 223.5 GiB"):
        nc.annotators.ppc(fit, ann, n_rep=10**8)
    rep = nc.report(np.linspace(0.05, 0.95, 100), np.arange(100) % 2,
                    metrics=[nc.ece], interval=None)
    with pytest.raises(ValueError, match=r"digits must be an integer in \[0, 17\]"):
        rep.to_latex(digits=10**8)
    assert "ECE" in rep.to_latex(digits=17)


@pytest.mark.parametrize("model", [nc.DawidSkene, nc.annotators.MACE,
                                   nc.annotators.ClassConditionalDawidSkene,
                                   nc.annotators.HierarchicalDawidSkene])
def test_a_fit_with_absurdly_many_classes_is_refused_up_front(model):
    """3 items, 10^5 classes: the channels alone would take 240 GB per start; refused
    before anything is allocated, naming the classes."""
    ann = nc.Annotations.from_wide(np.array([[0, 1, 1], [1, 1, 0], [0, 0, 0]]),
                                   classes=range(10**5))
    method = "nuts" if model is nc.annotators.HierarchicalDawidSkene else None
    with pytest.raises(ValueError, match=r"100,000 classes and 3 annotators .* GiB"):
        model().fit(ann, method=method)


def test_an_sbc_study_too_large_is_refused_before_the_design():
    """sbc(n_items=10^8) would draw a 10^8-row design and fit it; sbc(n_sims=10^9) would
    keep 10^9 rows of ranks: both refused up front, naming the argument and the memory
    (n_items: 10^8 x 3 x (2 + 3) + 10^8 x 2 float64 + 2 x 500 x 14 draws = 12.7 GiB;
    n_sims: 10^9 x 14 parameters x 8 bytes = 104.3 GiB)."""
    with pytest.raises(ValueError, match=r"^n_items: one simulation of 100,000,000 items .*"
                                         r"about 12.7 GiB"):
        nc.annotators.sbc(nc.DawidSkene(), n_items=10**8, n_annotators=3, n_classes=2)
    with pytest.raises(ValueError, match=r"^n_sims: 1,000,000,000 simulations of 14 "
                                         r"parameters .* about 104.3 GiB"):
        nc.annotators.sbc(nc.DawidSkene(), n_items=30, n_annotators=3, n_classes=2,
                          n_sims=10**9)
