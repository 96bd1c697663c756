"""The nine binary tabular tasks of Table II of the LWCal paper.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels",
Table II: six tasks built from the data sets bundled with scikit-learn (no download) and
three synthetic ones. The paper does not give the synthetic generators' arguments; ours
are ``sklearn.datasets.make_classification`` calls with one fixed ``random_state`` per
task (the data set does not change with the experiment seed, since Table II reports one
positive rate per task), chosen so that n, d and the positive rate match Table II to
three decimals with scikit-learn 1.9.1. The generator's output can change between
scikit-learn versions; :func:`task_table` reports what was actually built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pandas as pd

from .._util.validation import check_choice

__all__ = ["Task", "TASKS", "TASK_NAMES", "SYNTHETIC_KWARGS", "load_task", "task_table"]


@dataclass(frozen=True)
class Task:
    """One binary task of Table II.

    Parameters
    ----------
    name : str
        Identifier used in the results table.
    title : str
        The name printed in the paper's tables.
    n, d : int
        Items and features (Table II).
    pos_rate : float
        Share of positives (Table II, three decimals).
    source : str
        ``'sklearn'`` (a bundled loader) or ``'synthetic'`` (``make_classification``).
    recipe : str
        How the positive class is defined, in words.
    kwargs : dict
        ``make_classification`` arguments (synthetic tasks only).
    """

    name: str
    title: str
    n: int
    d: int
    pos_rate: float
    source: str
    recipe: str
    kwargs: dict = field(default_factory=dict)


#: make_classification arguments of the synthetic tasks (ours; the paper gives none).
SYNTHETIC_KWARGS = {
    "synthetic_overlap": dict(n_samples=1800, n_features=24, n_informative=6, n_redundant=4,
                              class_sep=0.6, flip_y=0.03, random_state=21),
    "synthetic_sparse": dict(n_samples=1900, n_features=72, n_informative=8, n_redundant=0,
                             class_sep=0.8, flip_y=0.02, random_state=2),
    "synthetic_imbalance": dict(n_samples=2200, n_features=30, n_informative=8,
                                n_redundant=4, weights=[0.775], flip_y=0.01,
                                random_state=10),
}

TASKS: dict[str, Task] = {t.name: t for t in [
    Task("breast_cancer", "Breast Cancer", 569, 30, 0.627, "sklearn",
         "load_breast_cancer(); y = target (1 = benign)"),
    Task("wine_class0", "Wine Class 0", 178, 13, 0.331, "sklearn",
         "load_wine(); y = (target == 0)"),
    Task("wine_class2", "Wine Class 2", 178, 13, 0.270, "sklearn",
         "load_wine(); y = (target == 2)"),
    Task("digits_high", "Digits High", 1797, 64, 0.499, "sklearn",
         "load_digits(); y = (target >= 5)"),
    Task("digits_even", "Digits Even", 1797, 64, 0.496, "sklearn",
         "load_digits(); y = (target % 2 == 0)"),
    Task("iris_versicolor", "Iris Versicolor", 150, 4, 0.333, "sklearn",
         "load_iris(); y = (target == 1)"),
    Task("synthetic_overlap", "Synthetic Overlap", 1800, 24, 0.496, "synthetic",
         "make_classification (class overlap)", SYNTHETIC_KWARGS["synthetic_overlap"]),
    Task("synthetic_sparse", "Synthetic Sparse", 1900, 72, 0.503, "synthetic",
         "make_classification (many weakly informative features)",
         SYNTHETIC_KWARGS["synthetic_sparse"]),
    Task("synthetic_imbalance", "Synthetic Imbalance", 2200, 30, 0.225, "synthetic",
         "make_classification (22.5% positives)", SYNTHETIC_KWARGS["synthetic_imbalance"]),
]}

#: Task names in the order of Table II.
TASK_NAMES = tuple(TASKS)


@cache
def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    if name == "breast_cancer":
        X, t = datasets.load_breast_cancer(return_X_y=True)
        y = t
    elif name.startswith("wine_class"):
        X, t = datasets.load_wine(return_X_y=True)
        y = t == int(name[-1])
    elif name == "digits_high":
        X, t = datasets.load_digits(return_X_y=True)
        y = t >= 5
    elif name == "digits_even":
        X, t = datasets.load_digits(return_X_y=True)
        y = t % 2 == 0
    elif name == "iris_versicolor":
        X, t = datasets.load_iris(return_X_y=True)
        y = t == 1
    else:
        X, y = datasets.make_classification(**SYNTHETIC_KWARGS[name])
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def load_task(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features and clean 0/1 labels of one task of Table II.

    Parameters
    ----------
    name : str
        One of :data:`TASK_NAMES`.

    Returns
    -------
    X : ndarray of shape (n, d), read-only
    y : ndarray of shape (n,), read-only, 0/1

    Raises
    ------
    ValueError
        If ``name`` is not a task.
    """
    check_choice(name, "name", TASK_NAMES)
    return _load(name)


def task_table(names: tuple[str, ...] = TASK_NAMES) -> pd.DataFrame:
    """The data sets as built here, beside Table II.

    Parameters
    ----------
    names : tuple of str, default=all nine

    Returns
    -------
    pandas.DataFrame
        One row per task: ``task``, ``title``, ``n``, ``d``, ``pos_rate`` (built here,
        unrounded), ``paper_n``, ``paper_d``, ``paper_pos_rate`` (Table II).
    """
    rows = []
    for name in names:
        X, y = load_task(name)
        t = TASKS[name]
        rows.append(dict(task=name, title=t.title, n=X.shape[0], d=X.shape[1],
                         pos_rate=float(y.mean()), paper_n=t.n, paper_d=t.d,
                         paper_pos_rate=t.pos_rate))
    return pd.DataFrame(rows)
