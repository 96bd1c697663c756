"""The loaders behind :mod:`noisycal.datasets` (see its docstring)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..annotations.core import Annotations
from ._dawid_skene_1979 import POSITIONS_OBSERVER, RATINGS

__all__ = [
    "load_dawid_skene_1979",
    "load_cifar10n",
    "CIFAR10N",
    "CIFAR10H",
    "CIFAR10Logits",
    "data_dir",
    "load_cifar10h",
    "load_cifar10_logits",
    "LOGIT_MODELS",
    "ENV_VAR",
    "resolve",
    "read_npz",
    "whole_numbers",
    "check_counts",
    "check_label_codes",
    "check_finite_scores",
    "check_unique",
]

#: Environment variable naming the data folder.
ENV_VAR = "NOISYCAL_DATA"

#: Models whose CIFAR-10 outputs :func:`load_cifar10_logits` can load (the shared data's
#: ``cifar10_logits/README.md`` gives their provenance and accuracy).
LOGIT_MODELS = ("densenet40", "vgg16", "resnet110", "preresnet110", "densenet_bc_l190_k40")

#: (file, array of test probabilities) of the models stored as softmax outputs only.
_PROB_FILES = {
    "vgg16": ("vgg16_c10_test_probs.npz", "probs_test"),
    "resnet110": ("pytorch_classification_c10_test_probs.npz", "probs_resnet110"),
    "preresnet110": ("pytorch_classification_c10_test_probs.npz", "probs_preresnet110"),
    "densenet_bc_l190_k40": ("pytorch_classification_c10_test_probs.npz",
                             "probs_densenet_bc_l190_k40"),
}
_LOGIT_FILES = {"densenet40": "densenet40_c10.npz",
                **{m: f for m, (f, _) in _PROB_FILES.items()}}


def _candidates() -> list[Path]:
    """The folders :func:`data_dir` tries after ``$NOISYCAL_DATA``, in order, resolved and
    each once (run from the checkout, the two are one folder)."""
    paths = [
        (Path.cwd() / ".." / "shared" / "data").resolve(),
        (Path(__file__).resolve().parents[2] / ".." / "shared" / "data").resolve(),
    ]
    return list(dict.fromkeys(paths))


def data_dir() -> Path | None:
    """The folder holding noisycal's real data, or None when none is found.

    Returns
    -------
    pathlib.Path or None
        ``$NOISYCAL_DATA`` when the variable is set and non-empty (returned as given,
        even if the folder does not exist, so errors say where it looked); otherwise
        the first existing folder of ``<cwd>/../shared/data`` and
        ``<checkout>/../shared/data`` (the checkout being the folder above the
        ``noisycal`` package, as in an editable install); otherwise None.
    """
    env = os.environ.get(ENV_VAR, "")
    if env:
        return Path(env).expanduser()
    for path in _candidates():
        if path.is_dir():
            return path.resolve()
    return None


def resolve(data: str | os.PathLike[str] | None, subdir: str, filename: str,
             what: str) -> Path:
    """Path of ``<data>/<subdir>/<filename>``, or a FileNotFoundError saying where it looked
    (a ValueError naming the path when something that is not a readable file is there: a
    folder, a symlink loop).

    Parameters
    ----------
    data : path-like or None
        The user's ``data=`` (None: :func:`data_dir`, then the default places).
    subdir, filename : str
        Where the file lies inside the data folder.
    what : str
        The data set's name, for messages.

    Returns
    -------
    pathlib.Path
    """
    if data is not None:
        if isinstance(data, bytes) or not isinstance(data, str | os.PathLike):
            raise ValueError(f"data must be a path to the data folder (str or path-like), "
                             f"got {type(data).__name__}")
        if not str(data):
            raise ValueError("data must be a path to the data folder, got an empty string")
        roots = [Path(data).expanduser()]
    else:
        found = data_dir()
        roots = [found] if found is not None else _candidates()
    for root in roots:
        path = root / subdir / filename
        if path.is_file():
            return path
        try:
            path.stat()
        except FileNotFoundError:
            continue
        except OSError as exc:   # a symlink loop, a permission error: something is there
            raise ValueError(f"{what} file {path} cannot be read: {exc.strerror or exc}"
                             ) from None
        raise ValueError(f"{what} file {path} is not a regular file (a folder?); it should "
                         f"be the data set's {filename}")
    looked = ", ".join(str(root / subdir / filename) for root in roots)
    raise FileNotFoundError(
        f"{what} not found; looked for {looked}. Set ${ENV_VAR} to the folder that holds "
        f"'{subdir}/' (for example ../shared/data) or pass data=. noisycal itself does not "
        "need these data; only the vignettes and data tests do."
    )


def read_npz(path: Path, keys: tuple[str, ...], what: str) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of the ``.npz`` file ``path``.

    Parameters
    ----------
    path : pathlib.Path
        The archive.
    keys : tuple of str
        The arrays to read.
    what : str
        The data set's name, for messages.

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    ValueError
        Naming the file, if it is not a readable npz archive or lacks a key.
    """
    import zipfile

    unreadable = (OSError, EOFError, ValueError, zipfile.BadZipFile)
    # our own handle: numpy leaves its file open when the archive cannot be read
    with open(path, "rb") as fh:
        try:
            archive = np.load(fh, allow_pickle=False)
        except unreadable as exc:
            raise ValueError(f"{what} file {path} is not a readable .npz archive: "
                             f"{exc}") from exc
        if not isinstance(archive, np.lib.npyio.NpzFile):  # a plain .npy array
            raise ValueError(f"{what} file {path} is not an .npz archive")
        with archive as f:
            absent = [k for k in keys if k not in f.files]
            if absent:
                raise ValueError(f"{what} file {path} lacks the array(s) {absent} "
                                 f"(it holds {sorted(f.files)}); is it the right file?")
            for k in keys:
                _check_member_size(f, k, path, what)
            try:   # a truncated archive fails only when its members are read
                return {k: np.asarray(f[k]) for k in keys}
            except unreadable as exc:
                raise ValueError(f"{what} file {path} is not a readable .npz archive (a "
                                 f"damaged or truncated member): {exc}") from exc


def _check_member_size(archive: Any, key: str, path: Path, what: str) -> None:
    """Refuse a member whose ``.npy`` header claims more data than the member holds, before
    NumPy allocates the claimed shape (a damaged or forged header)."""
    from numpy.lib import format as npy_format

    name = key + ".npy"
    try:
        info = archive.zip.getinfo(name)
        with archive.zip.open(info) as member:
            version = npy_format.read_magic(member)
            read = {(1, 0): npy_format.read_array_header_1_0,
                    (2, 0): npy_format.read_array_header_2_0}.get(version)
            if read is None:      # a newer header: NumPy's own checks apply
                return
            shape, _, dtype = read(member)
    except (KeyError, OSError, EOFError, ValueError) as exc:
        raise ValueError(f"{what} file {path} is not a readable .npz archive (the header "
                         f"of {key!r}): {exc}") from exc
    claimed = float(np.prod(shape, dtype=float)) * dtype.itemsize
    if claimed > info.file_size:
        raise ValueError(f"{what} file {path}: the array {key!r} claims shape {shape} "
                         f"({claimed / 2**30:,.3g} GiB of {dtype}) but its member holds "
                         f"{info.file_size:,} bytes; the file is damaged")


def _check_rows(arrays: dict[str, np.ndarray], shapes: dict[str, tuple[int | None, ...]],
                path: Path, what: str) -> None:
    """Each array has the rank and fixed sizes given in ``shapes`` (None: any size)."""
    for key, shape in shapes.items():
        got = arrays[key].shape
        if len(got) != len(shape) or any(s is not None and g != s
                                         for g, s in zip(got, shape, strict=True)):
            raise ValueError(f"{what} file {path}: array {key!r} has shape {got}, "
                             f"expected {shape} (None: any size)")


def _bad(path: Path, what: str, key: str, why: str, where: np.ndarray) -> ValueError:
    """A ValueError naming the file, the array and the first offending entries."""
    idx = np.argwhere(where)[:3].tolist()
    at = ", ".join(str(tuple(i) if len(i) > 1 else i[0]) for i in idx)
    return ValueError(f"{what} file {path}: array {key!r} {why} ({int(where.sum())} "
                      f"entr{'y' if where.sum() == 1 else 'ies'}, first at {at})")


def whole_numbers(arr: np.ndarray, key: str, path: Path, what: str) -> np.ndarray:
    """``arr`` as int64 when every entry is a finite whole number, else a ValueError."""
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind not in "fb":
        raise ValueError(f"{what} file {path}: array {key!r} must hold whole numbers, got "
                         f"dtype {arr.dtype}")
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
    if bad.any():
        raise _bad(path, what, key, "must hold whole numbers", bad)
    return arr.astype(np.int64)


def check_counts(arr: np.ndarray, key: str, path: Path, what: str, *,
                 rated: bool = True) -> np.ndarray:
    """Vote counts: non-negative whole numbers (int64), every row with a vote (``rated``).

    Parameters
    ----------
    arr : ndarray of shape (n, n_classes)
    key : str
        The array's name in the file.
    path : pathlib.Path
    what : str
        The data set's name.
    rated : bool, default=True
        Refuse rows without a vote.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        Naming the file and the array.
    """
    c = whole_numbers(arr, key, path, what)
    if np.any(c < 0):
        raise _bad(path, what, key, "must hold non-negative counts", c < 0)
    if rated and c.ndim == 2 and np.any(c.sum(axis=1) == 0):
        raise _bad(path, what, key, "has rows without a vote", c.sum(axis=1) == 0)
    return c


def check_label_codes(arr: np.ndarray, key: str, n_classes: int, path: Path, what: str, *,
                      allowed: tuple[int, ...] = ()) -> np.ndarray:
    """Class codes inside ``0..n_classes - 1`` (or one of ``allowed``), as int64.

    Parameters
    ----------
    arr : ndarray
    key : str
    n_classes : int
    path : pathlib.Path
    what : str
    allowed : tuple of int, default=()
        Other codes with a documented meaning (a missing-value code).

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        Naming the file and the array.
    """
    y = whole_numbers(arr, key, path, what)
    bad = ((y < 0) | (y >= n_classes)) & ~np.isin(y, allowed)
    if bad.any():
        extra = f" or {list(allowed)}" if allowed else ""
        raise _bad(path, what, key, f"must hold class codes in 0..{n_classes - 1}{extra}",
                   bad)
    return y


def check_finite_scores(arr: np.ndarray, key: str, path: Path, what: str, *,
                        missing_rows: bool = False) -> np.ndarray:
    """Finite float64 scores (logits); with ``missing_rows``, whole NaN rows mark items
    without a prediction and are kept.

    Parameters
    ----------
    arr : ndarray of shape (n, n_classes)
    key : str
    path : pathlib.Path
    what : str
    missing_rows : bool, default=False

    Returns
    -------
    ndarray of float64

    Raises
    ------
    ValueError
        Naming the file and the array.
    """
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"{what} file {path}: array {key!r} must hold numbers, got dtype "
                         f"{arr.dtype}")
    z = arr.astype(np.float64)
    bad = ~np.isfinite(z)
    if missing_rows and z.ndim == 2:
        bad &= ~np.isnan(z).all(axis=1, keepdims=True)
    if bad.any():
        why = "must be finite" + (" (NaN only as whole rows)" if missing_rows else "")
        raise _bad(path, what, key, why, bad)
    return z


def check_unique(arr: np.ndarray, key: str, path: Path, what: str) -> np.ndarray:
    """Ids that are not repeated.

    Parameters
    ----------
    arr : ndarray of shape (n,)
    key : str
    path : pathlib.Path
    what : str

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        Naming the file, the array and a repeated id.
    """
    values, counts = np.unique(arr, return_counts=True)
    if np.any(counts > 1):
        raise ValueError(f"{what} file {path}: array {key!r} must not repeat an id; "
                         f"{values[counts > 1][0]!r} appears {int(counts.max())} times "
                         f"({int(np.sum(counts > 1))} repeated id(s))")
    return arr


class CIFAR10H(NamedTuple):
    """CIFAR-10H: about 51 human labels for each of the 10,000 CIFAR-10 test images.

    Attributes
    ----------
    counts : ndarray of shape (10000, 10), int64
        Number of annotators who chose each class (row sums 47 to 63).
    probs : ndarray of shape (10000, 10), float64
        Annotator distributions, ``counts / counts.sum(1)`` computed in float64 (the
        stored float32 copy differs by at most 3e-8).
    labels : ndarray of shape (10000,), int64
        The original CIFAR-10 test labels, same order.
    class_names : list of str
        airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
    """

    counts: np.ndarray
    probs: np.ndarray
    labels: np.ndarray
    class_names: list[str]


class CIFAR10Logits(NamedTuple):
    """Logits of a trained CNN on CIFAR-10, test set in standard order, and (DenseNet-40
    only) a validation split.

    Attributes
    ----------
    logits_test : ndarray of shape (10000, 10), float64
        Pre-softmax scores on the CIFAR-10 test set (rows line up with CIFAR-10H). For
        the models stored as softmax outputs (all but DenseNet-40) these are the logs of
        the stored probabilities, which ``softmax`` maps back to them (up to their
        float32 rounding).
    y_test : ndarray of shape (10000,), int64
        CIFAR-10 test labels.
    logits_val : ndarray of shape (5000, 10), float64, or None
        Pre-softmax scores on 5,000 held-out CIFAR-10 training images (DenseNet-40; None
        for the test-only models).
    y_val : ndarray of shape (5000,), int64, or None
        Their labels.
    val_train_idx : ndarray of shape (5000,), int64, or None
        Index of each validation row in the standard CIFAR-10 training set.
    """

    logits_test: np.ndarray
    y_test: np.ndarray
    logits_val: np.ndarray | None
    y_val: np.ndarray | None
    val_train_idx: np.ndarray | None


def load_cifar10h(data: str | os.PathLike[str] | None = None) -> CIFAR10H:
    """Load CIFAR-10H (Peterson et al. 2019) from ``<data>/cifar10h/cifar10h.npz``.

    Parameters
    ----------
    data : path-like, optional
        The data folder; default :func:`data_dir`.

    Returns
    -------
    CIFAR10H
        ``(counts, probs, labels, class_names)``.

    Raises
    ------
    FileNotFoundError
        When the file is absent; the message says where it looked.
    ValueError
        If ``data`` is not a path, or the file is not the expected archive (naming it):
        counts that are not non-negative whole numbers or a row without a vote, labels
        outside the 10 classes, repeated class names.

    Notes
    -----
    License: CC BY-NC-SA 4.0 (see the folder's README). Peterson, Battleday, Griffiths &
    Russakovsky (2019), "Human uncertainty makes classification more robust", ICCV.
    """
    path = resolve(data, "cifar10h", "cifar10h.npz", "CIFAR-10H")
    f = read_npz(path, ("counts", "cifar10_test_labels", "class_names"), "CIFAR-10H")
    _check_rows(f, {"counts": (None, 10), "cifar10_test_labels": (f["counts"].shape[0],),
                    "class_names": (10,)}, path, "CIFAR-10H")
    counts = check_counts(f["counts"], "counts", path, "CIFAR-10H")
    labels = check_label_codes(f["cifar10_test_labels"], "cifar10_test_labels", 10, path,
                               "CIFAR-10H")
    names = [str(x) for x in check_unique(f["class_names"], "class_names", path, "CIFAR-10H")]
    probs = counts / counts.sum(axis=1, keepdims=True)
    return CIFAR10H(counts, probs, labels, names)


def load_cifar10_logits(model: str = "densenet40",
                        data: str | os.PathLike[str] | None = None) -> CIFAR10Logits:
    """Load a CNN's CIFAR-10 logits from ``<data>/cifar10_logits/``.

    Parameters
    ----------
    model : str, default='densenet40'
        One of :data:`LOGIT_MODELS` (test accuracies against the CIFAR-10 labels):

        - 'densenet40': DenseNet-40 (Kängsepp, markus93/NN_calibration; MIT license),
          0.9242; logits, with a 5,000-image validation split;
        - 'vgg16': VGG-16 (p-lambda/verified_calibration; MIT license), 0.9359;
        - 'resnet110', 'preresnet110', 'densenet_bc_l190_k40': ResNet-110,
          PreResNet-110 and DenseNet-BC (L = 190, k = 40) of Kerrigan, Smyth & Steyvers
          (2021) (no license stated), 0.9389, 0.9506 and 0.9668.

        The last four are stored as test-set softmax outputs only: ``logits_test`` is
        their log and the validation fields are None.
    data : path-like, optional
        The data folder; default :func:`data_dir`.

    Returns
    -------
    CIFAR10Logits
        ``(logits_test, y_test, logits_val, y_val, val_train_idx)``, logits as float64.

    Raises
    ------
    ValueError
        If ``model`` is not one of ``LOGIT_MODELS`` (the message lists them), ``data`` is
        not a path, or the file is not the expected archive (naming it): logits that are
        not finite, probabilities that are not positive, labels outside the 10 classes,
        repeated or negative validation indices, arrays whose lengths disagree.
    FileNotFoundError
        When the file is absent; the message says where it looked.
    """
    if not isinstance(model, str) or model not in LOGIT_MODELS:
        raise ValueError(f"model must be one of the available models "
                         f"{', '.join(LOGIT_MODELS)}; got {model!r}")
    what = f"CIFAR-10 logits ({model})"
    path = resolve(data, "cifar10_logits", _LOGIT_FILES[model], what)
    if model in _PROB_FILES:
        key = _PROB_FILES[model][1]
        f = read_npz(path, (key, "y_test"), what)
        _check_rows(f, {key: (None, 10), "y_test": (None,)}, path, what)
        probs = f[key].astype(np.float64)
        if np.any(probs <= 0) or not np.all(np.isfinite(probs)):
            raise ValueError(f"{what} file {path}: array {key!r} must hold positive "
                             "probabilities (their log is the logit)")
        y = check_label_codes(f["y_test"].ravel(), "y_test", 10, path, what)
        if y.size != probs.shape[0]:
            raise ValueError(f"{what} file {path}: array 'y_test' has {y.size} labels for "
                             f"{probs.shape[0]} rows of {key!r}")
        return CIFAR10Logits(logits_test=np.log(probs), y_test=y,
                             logits_val=None, y_val=None, val_train_idx=None)
    f = read_npz(path, CIFAR10Logits._fields, what)
    flat = {k: f[k].ravel() for k in ("y_test", "y_val", "val_train_idx")}
    _check_rows({**f, **flat}, {"logits_test": (None, 10), "logits_val": (None, 10),
                                "y_test": (f["logits_test"].shape[0],),
                                "y_val": (f["logits_val"].shape[0],),
                                "val_train_idx": (f["logits_val"].shape[0],)}, path, what)
    idx = check_counts(flat["val_train_idx"], "val_train_idx", path, what, rated=False)
    return CIFAR10Logits(
        logits_test=check_finite_scores(f["logits_test"], "logits_test", path, what),
        y_test=check_label_codes(flat["y_test"], "y_test", 10, path, what),
        logits_val=check_finite_scores(f["logits_val"], "logits_val", path, what),
        y_val=check_label_codes(flat["y_val"], "y_val", 10, path, what),
        val_train_idx=check_unique(idx, "val_train_idx", path, what),
    )


def load_dawid_skene_1979() -> Annotations:
    """The Dawid & Skene (1979) anaesthetist data, shipped with noisycal.

    45 patients (items 1..45), 5 observers (annotators 1..5), ratings 1..4; observer 1
    rated every patient three times (repeated ratings), so there are 315 ratings.

    Returns
    -------
    Annotations
        Items, annotators and classes in the order of the paper's Table 1.

    Examples
    --------
    >>> from noisycal.datasets import load_dawid_skene_1979
    >>> ann = load_dawid_skene_1979()
    >>> ann.n_items, ann.n_annotators, ann.n_ratings, ann.classes.tolist()
    (45, 5, 315, [1, 2, 3, 4])
    """
    ratings = np.asarray(RATINGS)
    n, p = ratings.shape
    item = np.repeat(np.arange(1, n + 1), p)
    annotator = np.tile(np.asarray(POSITIONS_OBSERVER), n)
    return Annotations.from_arrays(item, annotator, ratings.ravel(), classes=[1, 2, 3, 4])


class CIFAR10N(NamedTuple):
    """CIFAR-10N: three human labels per CIFAR-10 training image, and the clean labels.

    Attributes
    ----------
    labels : ndarray of shape (50000, 3)
        ``random_label1..3``.
    clean : ndarray of shape (50000,)
    aggregate : ndarray of shape (50000,)
        The source's majority vote (``aggre_label``).
    """

    labels: np.ndarray
    clean: np.ndarray
    aggregate: np.ndarray


def load_cifar10n(data: str | os.PathLike[str] | None = None) -> CIFAR10N:
    """Load CIFAR-10N from ``<data>/cifar10n/cifar10n.npz`` (CC BY-NC 4.0, see its README).

    Parameters
    ----------
    data : path-like, optional
        The data folder; default :func:`data_dir`.

    Returns
    -------
    CIFAR10N
        ``(labels, clean, aggregate)``.

    Raises
    ------
    FileNotFoundError
        When the file is absent; the message says where it looked.
    ValueError
        If ``data`` is not a path, or the file is not the expected archive (naming it):
        labels outside the 10 classes, arrays whose lengths disagree.
    """
    path = resolve(data, "cifar10n", "cifar10n.npz", "CIFAR-10N")
    keys = ("random_label1", "random_label2", "random_label3", "clean_label", "aggre_label")
    f = read_npz(path, keys, "CIFAR-10N")
    _check_rows(f, {k: (f["clean_label"].shape[0],) for k in keys}, path, "CIFAR-10N")
    y = {k: check_label_codes(f[k], k, 10, path, "CIFAR-10N") for k in keys}
    labels = np.stack([y[f"random_label{j}"] for j in (1, 2, 3)], axis=1)
    return CIFAR10N(labels, y["clean_label"], y["aggre_label"])
