"""Loaders for the real data used by the vignettes and tests (never required by the library).

The data live outside the package, in a folder holding ``cifar10h/`` and
``cifar10_logits/`` (each with its README stating provenance and license). The folder
is found by :func:`data_dir`: ``$NOISYCAL_DATA`` when set, else ``../shared/data``
next to the working directory, else ``../shared/data`` next to a source checkout.
Every loader also takes ``data=`` to point at the folder explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .._validation import check_choice
from ..data import Annotations

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
]

#: Environment variable naming the data folder.
ENV_VAR = "NOISYCAL_DATA"

#: Models whose CIFAR-10 logits :func:`load_cifar10_logits` can load.
LOGIT_MODELS = ("densenet40",)

_LOGIT_FILES = {"densenet40": "densenet40_c10.npz"}


def _candidates() -> list[Path]:
    """The folders :func:`data_dir` tries after ``$NOISYCAL_DATA``, in order."""
    return [
        Path.cwd() / ".." / "shared" / "data",
        Path(__file__).resolve().parents[2] / ".." / "shared" / "data",
    ]


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


def _resolve(data: str | os.PathLike[str] | None, subdir: str, filename: str,
             what: str) -> Path:
    """Path of ``<data>/<subdir>/<filename>``, or a FileNotFoundError saying where it looked."""
    if data is not None:
        roots = [Path(data).expanduser()]
    else:
        found = data_dir()
        roots = [found] if found is not None else _candidates()
    for root in roots:
        path = root / subdir / filename
        if path.is_file():
            return path
    looked = ", ".join(str(root / subdir / filename) for root in roots)
    raise FileNotFoundError(
        f"{what} not found; looked for {looked}. Set ${ENV_VAR} to the folder that holds "
        f"'{subdir}/' (for example ../shared/data) or pass data=. noisycal itself does not "
        "need these data; only the vignettes and data tests do."
    )


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
    """Logits of a trained CNN on CIFAR-10, test set in standard order plus a validation split.

    Attributes
    ----------
    logits_test : ndarray of shape (10000, 10), float64
        Pre-softmax scores on the CIFAR-10 test set (rows line up with CIFAR-10H).
    y_test : ndarray of shape (10000,), int64
        CIFAR-10 test labels.
    logits_val : ndarray of shape (5000, 10), float64
        Pre-softmax scores on 5,000 held-out CIFAR-10 training images.
    y_val : ndarray of shape (5000,), int64
        Their labels.
    val_train_idx : ndarray of shape (5000,), int64
        Index of each validation row in the standard CIFAR-10 training set.
    """

    logits_test: np.ndarray
    y_test: np.ndarray
    logits_val: np.ndarray
    y_val: np.ndarray
    val_train_idx: np.ndarray


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

    Notes
    -----
    License: CC BY-NC-SA 4.0 (see the folder's README). Peterson, Battleday, Griffiths &
    Russakovsky (2019), "Human uncertainty makes classification more robust", ICCV.
    """
    path = _resolve(data, "cifar10h", "cifar10h.npz", "CIFAR-10H")
    with np.load(path, allow_pickle=False) as f:
        counts = np.asarray(f["counts"], dtype=np.int64)
        labels = np.asarray(f["cifar10_test_labels"], dtype=np.int64)
        names = [str(x) for x in f["class_names"]]
    probs = counts / counts.sum(axis=1, keepdims=True)
    return CIFAR10H(counts, probs, labels, names)


def load_cifar10_logits(model: str = "densenet40",
                        data: str | os.PathLike[str] | None = None) -> CIFAR10Logits:
    """Load a CNN's CIFAR-10 logits from ``<data>/cifar10_logits/``.

    Parameters
    ----------
    model : {'densenet40'}, default='densenet40'
        DenseNet-40 (Kängsepp, markus93/NN_calibration; MIT license): test accuracy
        0.9242.
    data : path-like, optional
        The data folder; default :func:`data_dir`.

    Returns
    -------
    CIFAR10Logits
        ``(logits_test, y_test, logits_val, y_val, val_train_idx)``, logits as float64.

    Raises
    ------
    ValueError
        If ``model`` is not one of ``LOGIT_MODELS``.
    FileNotFoundError
        When the file is absent; the message says where it looked.
    """
    check_choice(model, "model", LOGIT_MODELS)
    path = _resolve(data, "cifar10_logits", _LOGIT_FILES[model], f"CIFAR-10 logits ({model})")
    with np.load(path, allow_pickle=False) as f:
        return CIFAR10Logits(
            logits_test=np.asarray(f["logits_test"], dtype=np.float64),
            y_test=np.asarray(f["y_test"], dtype=np.int64).ravel(),
            logits_val=np.asarray(f["logits_val"], dtype=np.float64),
            y_val=np.asarray(f["y_val"], dtype=np.int64).ravel(),
            val_train_idx=np.asarray(f["val_train_idx"], dtype=np.int64).ravel(),
        )


def load_dawid_skene_1979() -> Annotations:
    """The Dawid & Skene (1979) anaesthetist data, shipped with noisycal.

    45 patients (items 1..45), 5 observers (annotators 1..5), ratings 1..4; observer 1
    rated every patient three times (repeated ratings), so there are 315 ratings.

    Returns
    -------
    Annotations
    """
    from ._dawid_skene_1979 import POSITIONS_OBSERVER, RATINGS

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
    """Load CIFAR-10N (``cifar10n/cifar10n.npz``; CC BY-NC 4.0, see its README)."""
    path = _resolve(data, "cifar10n", "cifar10n.npz", "CIFAR-10N")
    with np.load(path, allow_pickle=False) as f:
        labels = np.stack([f[f"random_label{j}"] for j in (1, 2, 3)], axis=1).astype(np.int64)
        return CIFAR10N(labels, f["clean_label"].astype(np.int64),
                        f["aggre_label"].astype(np.int64))
