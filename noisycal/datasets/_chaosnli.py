"""ChaosNLI (Nie, Zhou & Bansal, 2020): 100 crowd labels per NLI item, with model logits."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from .._util.validation import check_choice
from ..annotations.core import Annotations
from ._loaders import read_npz, resolve

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
        expected archive.
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
    n, k = arrays["counts"].shape
    if arrays["uid"].shape != (n,) or arrays["class_names"].shape != (k,):
        raise ValueError(f"{what} file {path}: uid/class_names do not match counts of shape "
                         f"{(n, k)}")
    logits = {key[len("logits_"):]: arrays[key].astype(np.float64)
              for key in extra if key.startswith("logits_")}
    split = arrays["dd_split"].astype(np.int64) if "dd_split" in arrays else None
    return ChaosNLI(arrays["uid"].astype(str), [str(x) for x in arrays["class_names"]],
                    arrays["counts"].astype(np.int64),
                    arrays["majority_label"].astype(np.int64),
                    arrays["old_label"].astype(np.int64), logits, split)
