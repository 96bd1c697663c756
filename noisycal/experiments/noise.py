"""Stratified splits and label noise for the LWCal protocol.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"
(Section IV): each task and seed is split, stratified, into training, calibration and
test parts; the training and calibration labels are corrupted *independently*, the test
labels never. The paper leaves open, and we choose (each an argument):

- the split fractions: 50/25/25 (:func:`split_indices`; the test quarter first, then the
  rest 2:1, both stratified on the clean labels; the split depends on the task and seed
  only, so every noise mode and rate shares it);
- the asymmetric law: positives flip with probability ``rate`` and negatives with
  ``neg_ratio * rate`` (``neg_ratio=0.5``; the paper says only that positives flip more
  often, modelling missed positives);
- nesting: one uniform draw ``u_i`` per item and part, flipped when ``u_i`` is below the
  item's flip probability, so the flips at rate 0.1 are a subset of those at 0.2 (lower
  variance between rates);
- the streams: ``numpy.random.SeedSequence`` keyed by (seed, task, mode, part), so the
  training and calibration draws are independent, and each mode has its own draws.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np

from .._util.validation import check_choice, check_int, check_labels, check_real

__all__ = ["MODES", "RATES", "PARTS", "split_indices", "check_splits", "flip_probabilities",
           "uniforms", "corrupt", "noisy_labels"]

#: Noise mechanisms.
MODES = ("symmetric", "asymmetric")
#: Noise rates of the paper (0 is the clean row, kept but left out of headline means).
RATES = (0.0, 0.1, 0.2, 0.3, 0.4)
#: The parts whose labels are corrupted.
PARTS = ("train", "cal")


def _key(text: str) -> int:
    return zlib.crc32(text.encode())


def split_indices(y: np.ndarray, seed: int, *, test_size: float = 0.25,
                  cal_share: float = 1.0 / 3.0) -> dict[str, np.ndarray]:
    """Stratified train / calibration / test indices (50/25/25 by default).

    Parameters
    ----------
    y : ndarray of shape (n,)
        Clean 0/1 labels (the strata).
    seed : int
        ``random_state`` of both ``train_test_split`` calls.
    test_size : float, default=0.25
        Share of the items in the test part.
    cal_share : float, default=1/3
        Share of the remaining items in the calibration part.

    Returns
    -------
    dict
        ``{'train': idx, 'cal': idx, 'test': idx}``, sorted integer indices.
    """
    from sklearn.model_selection import train_test_split

    y = check_labels(y, 2, "y")
    seed = check_int(seed, "seed", minimum=0)
    check_real(test_size, "test_size", minimum=0.0, maximum=1.0, strict=True)
    check_real(cal_share, "cal_share", minimum=0.0, maximum=1.0, strict=True)
    idx = np.arange(y.size)
    rest, test = train_test_split(idx, test_size=test_size, stratify=y, random_state=seed)
    train, cal = train_test_split(rest, test_size=cal_share, stratify=y[rest],
                                  random_state=seed)
    return {"train": np.sort(train), "cal": np.sort(cal), "test": np.sort(test)}


def check_splits(parts: Mapping[str, object], n: int, names: Sequence[str],
                 name: str = "splits") -> dict[str, np.ndarray]:
    """User-given index parts of one split, checked: disjoint, in range, non-empty.

    Parameters
    ----------
    parts : mapping of str to array-like
        The parts (for example ``{'train': ..., 'cal': ..., 'test': ...}``), each a 1-D
        array of integer item indices.
    n : int
        Number of items; every index must lie in ``0 .. n - 1``.
    names : sequence of str
        The parts required, exactly.
    name : str, default='splits'
        The argument's name in error messages.

    Returns
    -------
    dict of str to ndarray
        The parts as int64 arrays, in the order given (not sorted).

    Raises
    ------
    ValueError
        If ``parts`` is not a mapping with exactly the keys ``names``, a part is empty,
        not 1-D, not integer, out of range or repeats an index, or two parts share an
        index.
    """
    if not isinstance(parts, Mapping) or set(parts) != set(names):
        got = sorted(map(str, parts)) if isinstance(parts, Mapping) else type(parts).__name__
        raise ValueError(f"{name} must map exactly the parts {list(names)} to index "
                         f"arrays, got {got}")
    out: dict[str, np.ndarray] = {}
    for part in names:
        a = np.asarray(parts[part])
        where = f"{name}[{part!r}]"
        if a.ndim != 1 or a.size == 0:
            raise ValueError(f"{where} must be a non-empty 1-D array of item indices, got "
                             f"shape {a.shape}")
        if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{where} must hold integer item indices, got dtype {a.dtype}")
        if a.min() < 0 or a.max() >= n:
            raise ValueError(f"{where} must hold indices in 0..{n - 1}, got values in "
                             f"{int(a.min())}..{int(a.max())}")
        if np.unique(a).size != a.size:
            raise ValueError(f"{where} repeats an index")
        out[part] = a.astype(np.int64)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = np.intersect1d(out[a], out[b])
            if shared.size:
                raise ValueError(f"{name}: the parts {a!r} and {b!r} must be disjoint, but "
                                 f"share {shared.size} item(s) (first: {int(shared[0])})")
    return out


def flip_probabilities(y: np.ndarray, mode: str, rate: float, *,
                       neg_ratio: float = 0.5) -> np.ndarray:
    """Per-item flip probability.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Clean 0/1 labels.
    mode : {'symmetric', 'asymmetric'}
        'symmetric': every label flips with probability ``rate``. 'asymmetric':
        positives with ``rate``, negatives with ``neg_ratio * rate``.
    rate : float
        In [0, 0.5).
    neg_ratio : float, default=0.5
        In [0, 1].

    Returns
    -------
    ndarray of shape (n,)
    """
    y = check_labels(y, 2, "y")
    check_choice(mode, "mode", MODES)
    rate = check_real(rate, "rate", minimum=0.0, maximum=0.5)
    if rate == 0.5:
        raise ValueError("rate must be below 0.5 (at 0.5 the labels carry no information); "
                         "give a fraction such as 0.2, not a percent")
    neg_ratio = check_real(neg_ratio, "neg_ratio", minimum=0.0, maximum=1.0)
    if mode == "symmetric":
        return np.full(y.size, rate)
    return np.where(y == 1, rate, neg_ratio * rate)


def uniforms(n: int, *, seed: int, task: str, mode: str, part: str) -> np.ndarray:
    """The uniform draws behind the flips of one (seed, task, mode, part).

    Parameters
    ----------
    n : int
    seed : int
    task : str
    mode : {'symmetric', 'asymmetric'}
    part : {'train', 'cal'}

    Returns
    -------
    ndarray of shape (n,)
    """
    check_choice(mode, "mode", MODES)
    check_choice(part, "part", PARTS)
    seed = check_int(seed, "seed", minimum=0)
    ss = np.random.SeedSequence([seed, _key(task), _key(mode), _key(part)])
    return np.random.default_rng(ss).uniform(size=check_int(n, "n", minimum=0))


def corrupt(y: np.ndarray, u: np.ndarray, mode: str, rate: float, *,
            neg_ratio: float = 0.5) -> np.ndarray:
    """Flip label i when ``u_i`` is below its flip probability (nested across rates).

    Parameters
    ----------
    y : ndarray of shape (n,)
        Clean 0/1 labels.
    u : ndarray of shape (n,)
        Uniform draws in [0, 1) (:func:`uniforms`).
    mode, rate, neg_ratio
        As in :func:`flip_probabilities`.

    Returns
    -------
    ndarray of shape (n,), int
    """
    y = check_labels(y, 2, "y")
    u = np.asarray(u, dtype=np.float64)
    if u.shape != y.shape:
        raise ValueError(f"u has shape {u.shape} but y has shape {y.shape}")
    flip = u < flip_probabilities(y, mode, rate, neg_ratio=neg_ratio)
    return np.where(flip, 1 - y, y)


def noisy_labels(y: np.ndarray, *, seed: int, task: str, mode: str, rate: float, part: str,
                 neg_ratio: float = 0.5) -> np.ndarray:
    """Noisy labels of one part: :func:`corrupt` with the part's own stream.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Clean 0/1 labels of the part (in the order of its indices).
    seed, task, mode, part
        As in :func:`uniforms`.
    rate, neg_ratio
        As in :func:`flip_probabilities`.

    Returns
    -------
    ndarray of shape (n,), int
    """
    u = uniforms(np.size(y), seed=seed, task=task, mode=mode, part=part)
    return corrupt(y, u, mode, rate, neg_ratio=neg_ratio)
