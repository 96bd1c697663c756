"""ChaosNLI (Nie, Zhou & Bansal, 2020): 100 crowd labels per NLI item, with model logits."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from .._util.validation import check_choice
from ..annotations.core import Annotations
from ._loaders import (
    check_counts,
    check_finite_scores,
    check_label_codes,
    check_unique,
    read_npz,
    resolve,
)

__all__ = ["CHAOSNLI_SUBSETS", "ChaosNLI", "load_chaosnli"]

#: The subsets :func:`load_chaosnli` can load.
CHAOSNLI_SUBSETS = ("snli", "mnli", "alphanli")


class ChaosNLI(NamedTuple):
    """One ChaosNLI subset. Every class axis is in the order of ``class_names``.

    Attributes
    ----------
    uid : ndarray of shape (n,), str
        ChaosNLI item ids (SNLI/MNLI pair ids, alphaNLI story ids).
    class_names : list of str
        ``['entailment', 'neutral', 'contradiction']`` for SNLI and MNLI,
        ``['hyp1', 'hyp2']`` for alphaNLI.
    counts : ndarray of shape (n, n_classes), int64
        The 100 ChaosNLI labels of each item.
    majority_label : ndarray of shape (n,), int64
        ChaosNLI's majority label (index into ``class_names``).
    old_label : ndarray of shape (n,), int64
        The original dataset's gold label (index into ``class_names``).
    logits : dict of str to ndarray of shape (n, n_classes), float64
        Fine-tuned transformer logits (Baan et al., 2022), keyed by model and seed (e.g.
        ``'roberta_base_seed0'``); empty for alphaNLI. NaN rows: items with no prediction.
    split : ndarray of shape (n,), int64 or None
        Half of the original dev set the prediction came from (0 or 1; -1: none); None
        for alphaNLI.
    """

    uid: np.ndarray
    class_names: list[str]
    counts: np.ndarray
    majority_label: np.ndarray
    old_label: np.ndarray
    logits: dict[str, np.ndarray]
    split: np.ndarray | None

    def annotations(self) -> Annotations:
        """The counts as :class:`~noisycal.annotations.core.Annotations`.

        Items are ``uid`` in file order and classes ``class_names`` in their order (not
        sorted), so targets built from them line up with the columns of ``logits``.
        The annotators are anonymous (:attr:`~noisycal.Annotations.annotators_known`
        is False).

        Returns
        -------
        Annotations
        """
        return Annotations.from_counts(self.counts, classes=self.class_names, items=self.uid)


def load_chaosnli(subset: str = "snli",
                  data: str | os.PathLike[str] | None = None) -> ChaosNLI:
    """Load a ChaosNLI subset from ``<data>/chaosnli/chaosnli_<subset>.npz``.

    Parameters
    ----------
    subset : {'snli', 'mnli', 'alphanli'}, default='snli'
        Which ChaosNLI subset (1,514, 1,599 or 1,532 items).
    data : path-like, optional
        The data folder; default :func:`~noisycal.datasets.data_dir`.

    Returns
    -------
    ChaosNLI

    Raises
    ------
    ValueError
        If ``subset`` is not an option, ``data`` is not a path, or the file is not the
        expected archive (naming it): counts that are not non-negative whole numbers or
        an item without a vote, labels outside the classes, logits that are not finite
        (NaN only as whole rows: items without a prediction), repeated item ids or class
        names, arrays whose shapes disagree.
    FileNotFoundError
        When the file is absent; the message says where it looked.

    Notes
    -----
    License: CC BY-NC 4.0 for ChaosNLI (see the folder's README). Nie, Zhou & Bansal
    (2020), "What Can We Learn from Collective Human Opinions on Natural Language
    Inference Data?", EMNLP. Logits: Baan et al. (2022), "Stop Measuring Calibration
    When Humans Disagree", EMNLP.
    """
    check_choice(subset, "subset", CHAOSNLI_SUBSETS)
    what = f"ChaosNLI ({subset})"
    path = resolve(data, "chaosnli", f"chaosnli_{subset}.npz", what)
    arrays = read_npz(path, ("uid", "class_names", "counts", "majority_label", "old_label"),
                      what)
    with np.load(path, allow_pickle=False) as f:  # a readable archive (read_npz checked)
        extra = tuple(k for k in f.files if k.startswith("logits_") or k == "dd_split")
        arrays.update({key: np.asarray(f[key]) for key in extra})
    if arrays["counts"].ndim != 2:
        raise ValueError(f"{what} file {path}: array 'counts' must be (n, n_classes), got "
                         f"shape {arrays['counts'].shape}")
    n, k = arrays["counts"].shape
    shapes = {"uid": (n,), "class_names": (k,), "majority_label": (n,), "old_label": (n,),
              "dd_split": (n,), **{key: (n, k) for key in extra if key.startswith("logits_")}}
    for key, shape in shapes.items():
        if key in arrays and arrays[key].shape != shape:
            raise ValueError(f"{what} file {path}: array {key!r} has shape "
                             f"{arrays[key].shape}, expected {shape} to match counts of shape "
                             f"{(n, k)}")
    counts = check_counts(arrays["counts"], "counts", path, what)
    labels = {key: check_label_codes(arrays[key], key, k, path, what)
              for key in ("majority_label", "old_label")}
    logits = {key[len("logits_"):]: check_finite_scores(arrays[key], key, path, what,
                                                        missing_rows=True)
              for key in extra if key.startswith("logits_")}
    split = None if "dd_split" not in arrays else check_label_codes(
        arrays["dd_split"], "dd_split", 2, path, what, allowed=(-1,))
    uid = check_unique(arrays["uid"].astype(str), "uid", path, what)
    names = check_unique(arrays["class_names"].astype(str), "class_names", path, what)
    return ChaosNLI(uid, [str(x) for x in names], counts, labels["majority_label"],
                    labels["old_label"], logits, split)
