"""The target constructions of "Confidence Calibration under Ambiguous Ground Truth".

Each method of Tao, Luo, Dong & Xu (2026) that fits one temperature is temperature
scaling (:class:`~noisycal.calibrators.TemperatureScaling`) fitted to a different target;
only the target is built here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._util.jax import as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import (
    check_choice,
    check_int,
    check_real,
    check_seed,
    predictions,
)
from ..annotations.core import Annotations
from ..calibrators import TemperatureScaling
from ..targets.target import Target, as_target_matrix, soft, voted

__all__ = ["LS_RULES", "slts", "mcts", "label_smoothed", "oracle", "voted_from",
           "paper_targets", "fit_temperatures", "stratified_split"]

#: Label-smoothing rules of :func:`label_smoothed`, keyed by the paper's method names.
LS_RULES = {"global": "LS-TS", "fixed": "Fixed-LS", "entropy": "Ent-LS",
            "classwise": "C-LS"}

_PAPER = ('Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground '
          'Truth", arXiv:2603.22879')


def _with(target: Target, kind: str | None = None, **details: Any) -> Target:
    """``target`` with more provenance (and optionally another kind)."""
    return dataclasses.replace(target, kind=kind or target.kind,
                               details={**dict(target.details), **details})


def _records(annotations: Annotations | None, counts: ArrayLike | None,
             distribution: ArrayLike | None) -> tuple[Target, np.ndarray | None]:
    """The soft target and, for annotations or counts, the integer vote counts."""
    t = soft(annotations, counts=counts, distribution=distribution)
    if annotations is not None:
        return t, np.asarray(annotations.counts(), dtype=np.int64)
    if counts is not None:
        return t, np.asarray(counts, dtype=np.float64)
    return t, None


def slts(annotations: Annotations | None = None, *, counts: ArrayLike | None = None,
         distribution: ArrayLike | None = None) -> Target:
    """The target of soft-label temperature scaling (SLTS): the annotator distribution.

    Exactly :func:`noisycal.targets.soft` (Eq. 3 of Tao, Luo, Dong & Xu (2026),
    "Confidence Calibration under Ambiguous Ground Truth"), with
    ``details['construction'] = 'slts'``. Fitted by ``TemperatureScaling`` it is SLTS;
    fitted on the test items it is the paper's Oracle TS; by ``PlattScaling``,
    ``VectorScaling`` and ``MatrixScaling`` on logits, SoftPlatt, VS and Dirichlet-Soft.

    Parameters
    ----------
    annotations : Annotations, optional
        Ratings. Give exactly one of ``annotations``, ``counts`` and ``distribution``.
    counts : array-like of shape (n_items, n_classes), optional
        Vote counts.
    distribution : array-like of shape (n_items, n_classes), optional
        Rows on the simplex.

    Returns
    -------
    Target
        ``kind='soft'``.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.ambiguity.slts(counts=[[3, 1], [0, 4]]).values
    array([[0.75, 0.25],
           [0.  , 1.  ]])
    """
    return _with(soft(annotations, counts=counts, distribution=distribution),
                 construction="slts")


def mcts(annotations: Annotations | None = None, *, counts: ArrayLike | None = None,
         distribution: ArrayLike | None = None, n_samples: int = 1,
         replace: bool | None = None, seed: Seed = 0) -> Target:
    r"""The target of Monte-Carlo temperature scaling (MCTS): S sampled annotations per item.

    Row i is :math:`\frac1S\sum_{s} e_{a_{is}}`, so temperature scaling fitted to it
    minimises :math:`-\frac{1}{nS}\sum_i\sum_s \log \mathrm{softmax}(z_i/T)_{a_{is}}`, the
    MCTS loss of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous
    Ground Truth" (Appendix D). Its expectation is the annotator distribution, so the fit
    tends to SLTS as S grows, with a spread shrinking like :math:`1/\sqrt S`.

    Parameters
    ----------
    annotations : Annotations, optional
        Stored ratings to sample from. Give exactly one of ``annotations``, ``counts``
        and ``distribution``.
    counts : array-like of shape (n_items, n_classes), optional
        Whole vote counts (the stored annotations of each item).
    distribution : array-like of shape (n_items, n_classes), optional
        Annotator distributions; labels are drawn from them with replacement.
    n_samples : int, default=1
        S, annotations per item (the paper's headline setting is 1).
    replace : bool, optional
        The paper does not say how the S annotations are drawn. With stored annotations
        (``annotations`` or ``counts``) the default is ``False``: S distinct stored
        ratings per item (S must not exceed any item's number of ratings; S equal to it
        gives the soft target exactly); ``True`` draws from the vote shares with
        replacement. With ``distribution`` only ``True`` (the default) is possible. For
        S = 1 both rules give the same distribution.
    seed : int or jax key, default=0
        Randomness of the draws.

    Returns
    -------
    Target
        ``kind='soft'`` with ``details`` ``construction='mcts'``, ``n_samples``,
        ``replace``.

    Examples
    --------
    >>> import noisycal as nc
    >>> t = nc.ambiguity.mcts(counts=[[3, 1], [0, 4]], n_samples=4)
    >>> t.values  # all four stored ratings: the soft target
    array([[0.75, 0.25],
           [0.  , 1.  ]])
    """
    S = check_int(n_samples, "n_samples", minimum=1)
    check_seed(seed)
    if replace is not None and not isinstance(replace, bool | np.bool_):
        raise ValueError(f"replace must be True, False or None, got {replace!r}")
    base, votes = _records(annotations, counts, distribution)
    if votes is None and replace is False:
        raise ValueError("replace=False samples stored annotations: give annotations= or "
                         "counts=, not distribution=")
    replace = votes is None if replace is None else bool(replace)
    rng = as_numpy_rng(seed)
    if replace:
        P = np.clip(base.values, 0.0, None)
        drawn = rng.multinomial(S, P / P.sum(axis=1, keepdims=True))
    else:
        drawn = _without_replacement(votes, S, rng)
    return Target(drawn / S, "soft", classes=base.classes, items=base.items,
                  details={"construction": "mcts", "n_samples": S, "replace": replace})


def _without_replacement(votes: np.ndarray, S: int, rng: np.random.Generator) -> np.ndarray:
    """Class counts of S stored ratings per item drawn without replacement."""
    if np.any(votes != np.round(votes)):
        raise ValueError("counts must be whole numbers of stored ratings to draw without "
                         "replacement; use replace=True for vote shares")
    votes = votes.astype(np.int64)
    n, K = votes.shape
    m = votes.sum(axis=1)
    if np.any(m < S):
        i = int(np.argmin(m))
        raise ValueError(f"n_samples={S} exceeds the {int(m[i])} stored rating(s) of item "
                         f"{i}; use replace=True or a smaller n_samples")
    item = np.repeat(np.repeat(np.arange(n), K), votes.ravel())
    label = np.repeat(np.tile(np.arange(K), n), votes.ravel())
    order = np.lexsort((rng.random(item.size), item))
    rank = np.arange(item.size) - np.repeat(np.cumsum(m) - m, m)
    keep = order[rank < S]
    out = np.zeros((n, K), dtype=np.int64)
    np.add.at(out, (item[keep], label[keep]), 1)
    return out


def voted_from(target: object, *, tie: str = "lowest", n_classes: int | None = None) -> Target:
    """The one-hot voted target y* = argmax of an annotator distribution.

    Parameters
    ----------
    target : Target or array-like of shape (n_items, n_classes)
        Annotator distributions (a soft target, vote counts or shares).
    tie : {'lowest', 'raise'}, default='lowest'
        Items whose top share is tied: the lowest class index (NumPy's argmax; the paper
        leaves ties open), or a ``ValueError``. :func:`noisycal.targets.voted` also offers
        a seeded random choice for ``Annotations``.
    n_classes : int, optional
        Checked against the number of columns when given.

    Returns
    -------
    Target
        ``kind='voted'`` with ``details['tie']`` and ``details['n_ties']``.
    """
    check_choice(tie, "tie", ("lowest", "raise"))
    arr = np.asarray(target, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"target must be an (n_items, n_classes) matrix, got shape "
                         f"{arr.shape}")
    K = arr.shape[1] if n_classes is None else check_int(n_classes, "n_classes", minimum=2)
    T = as_target_matrix(target, arr.shape[0], K, "target")
    top = np.isclose(T, T.max(axis=1, keepdims=True), rtol=0.0, atol=1e-12)
    n_ties = int(np.sum(top.sum(axis=1) > 1))
    if n_ties and tie == "raise":
        raise ValueError(f"target: {n_ties} item(s) have tied top shares (tie='raise')")
    y = np.argmax(top, axis=1)
    out = np.zeros_like(T)
    out[np.arange(T.shape[0]), y] = 1.0
    return Target(out, "voted", classes=getattr(target, "classes", None),
                  items=getattr(target, "items", None),
                  details={"tie": tie, "n_ties": n_ties})


def _one_hot_labels(target: object, n: int, K: int) -> np.ndarray:
    T = as_target_matrix(target, n, K, "target")
    if not np.all((T == 0.0) | (T == 1.0)) or not np.all(T.sum(axis=1) == 1.0):
        raise ValueError("target must hold voted labels (class indices or one-hot rows); "
                         "build it with noisycal.targets.voted or "
                         "noisycal.ambiguity.voted_from")
    return np.argmax(T, axis=1)


def label_smoothed(probs: ArrayLike | None = None, target: object = None, *,
                   logits: ArrayLike | None = None, rule: str = "global",
                   eps: float | None = None, spread: str = "all") -> Target:
    r"""Label-smoothed voted targets: LS-TS (Eq. 4) and its ablations Fixed-, Ent- and C-LS.

    Row i is :math:`(1-\varepsilon_i)\,e_{y^*_i} + \frac{\varepsilon_i}{K}\mathbf 1`
    (Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth",
    Eq. 4 and Appendix K), built from the voted labels and the *uncalibrated*
    predictions :math:`\hat p_i` (T = 1) of the calibration items only: no annotator
    distribution is needed. The rules for :math:`\varepsilon_i`:

    - ``'global'`` (LS-TS): :math:`\bar\varepsilon = \frac1n\sum_i(1-\hat p_{i y^*_i})`,
      the mean complement of the confidence on the *voted* class (not the predicted one);
    - ``'fixed'`` (Fixed-LS): a given :math:`\varepsilon` (``eps``, default 0.1);
    - ``'entropy'`` (Ent-LS): :math:`H(\hat p_i)/\log K`;
    - ``'classwise'`` (C-LS): :math:`\varepsilon_k = \mathrm{mean}_{i: y^*_i=k}
      (1-\hat p_{i y^*_i})`, item i using :math:`\varepsilon_{y^*_i}`.

    Temperature scaling fitted to the target is the paper's LS-TS (or ablation). Its
    T exceeds voted-label TS's exactly when
    :math:`\frac1n\sum_i \varepsilon_i(z_{i y^*_i} - \langle u_i, z_i\rangle) > 0`, with
    :math:`u_i` the smoothing row (uniform for ``spread='all'``): the fit depends on the
    target only through :math:`\frac1n\sum_i\langle t_i, z_i\rangle`.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_classes), optional
        Uncalibrated probabilities. Give ``probs`` or ``logits``.
    target : Target or array-like
        Voted labels: class indices (n_items,) or one-hot rows (for example
        :func:`noisycal.targets.voted`); ties were broken when it was built.
    logits : array-like of shape (n_items, n_classes), optional
        Uncalibrated logits.
    rule : {'global', 'fixed', 'entropy', 'classwise'}, default='global'
    eps : float, optional
        The smoothing weight of ``rule='fixed'``, a fraction in [0, 1] (default 0.1);
        refused with the other rules, whose weights come from the predictions.
    spread : {'all', 'others'}, default='all'
        Where the weight goes. 'all': Eq. 4 as printed, :math:`\varepsilon_i/K` to every
        class (the voted class keeps :math:`1-\varepsilon_i+\varepsilon_i/K`). 'others':
        :math:`\varepsilon_i/(K-1)` to each other class, so the voted class keeps exactly
        :math:`1-\varepsilon_i`, which is what the paper's moment-matching remark
        (mean target on y* = mean confidence on y*) needs; Eq. 4 misses it by
        :math:`\bar\varepsilon/K`.

    Returns
    -------
    Target
        ``kind='matrix'`` (a pseudo-target, rows on the simplex); ``details`` holds
        ``construction`` (the paper's name), ``rule``, ``spread``, ``eps`` (the global
        or fixed weight, else the mean weight), ``eps_items`` and, for 'classwise',
        ``eps_classes`` (NaN for a class no item is voted into).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([[0.9, 0.1], [0.3, 0.7]])
    >>> t = nc.ambiguity.label_smoothed(p, [0, 1])   # eps = (0.1 + 0.3) / 2 = 0.2
    >>> t.values
    array([[0.9, 0.1],
           [0.1, 0.9]])
    """
    check_choice(rule, "rule", tuple(LS_RULES))
    check_choice(spread, "spread", ("all", "others"))
    if eps is not None and rule != "fixed":
        raise ValueError(f"eps applies only to rule='fixed'; rule={rule!r} computes its "
                         "smoothing weights from the predictions")
    P, logP, binary = predictions(probs, logits)
    if binary:
        raise ValueError("probs/logits must be an (n_items, n_classes) matrix")
    n, K = P.shape
    y = _one_hot_labels(target, n, K)
    miss = 1.0 - P[np.arange(n), y]
    details: dict[str, Any] = {}
    if rule == "global":
        e = np.full(n, miss.mean())
    elif rule == "fixed":
        e = np.full(n, check_real(0.1 if eps is None else eps, "eps", minimum=0.0,
                                  maximum=1.0))
    elif rule == "entropy":
        with np.errstate(invalid="ignore"):
            H = -np.sum(np.where(P > 0, P * logP, 0.0), axis=1)
        e = np.clip(H / np.log(K), 0.0, 1.0)  # rounding only: H <= log K
    else:
        per = np.bincount(y, weights=miss, minlength=K)
        size = np.bincount(y, minlength=K)
        with np.errstate(invalid="ignore", divide="ignore"):
            details["eps_classes"] = np.where(size > 0, per / size, np.nan)
        e = details["eps_classes"][y]
    if spread == "all":
        values = np.repeat((e / K)[:, None], K, axis=1)
        values[np.arange(n), y] += 1.0 - e
    else:
        values = np.repeat((e / (K - 1))[:, None], K, axis=1)
        values[np.arange(n), y] = 1.0 - e
    details.update(construction=LS_RULES[rule], rule=rule, spread=spread,
                   eps=float(e.mean()), eps_items=e)
    return Target(values, "matrix", classes=getattr(target, "classes", None),
                  items=getattr(target, "items", None), details=details)


def oracle(distribution: ArrayLike, *, classes: ArrayLike | None = None,
           items: ArrayLike | None = None) -> Target:
    """The true label distribution, where a simulation knows it (an oracle target).

    Temperature scaling fitted to it is the best one temperature can do against the
    truth. On real data the truth is unknown; the paper's "Oracle TS" is SLTS fitted
    on the test items (:func:`slts` on them), a reference, not a method.

    Parameters
    ----------
    distribution : array-like of shape (n_items, n_classes)
        True class probabilities, rows on the simplex.
    classes, items : array-like, optional
        Column labels and row ids.

    Returns
    -------
    Target
        ``kind='soft'``, ``details['construction'] = 'oracle'``.
    """
    t = soft(distribution=distribution)
    return _with(dataclasses.replace(t, classes=None if classes is None
                                     else np.asarray(classes),
                                     items=None if items is None else np.asarray(items)),
                 construction="oracle")


def paper_targets(probs: ArrayLike | None = None, *, logits: ArrayLike | None = None,
                  annotations: Annotations | None = None, counts: ArrayLike | None = None,
                  distribution: ArrayLike | None = None, n_samples: int = 1,
                  replace: bool | None = None, spread: str = "all",
                  true_distribution: ArrayLike | None = None, seed: Seed = 0
                  ) -> dict[str, Target]:
    """Every single-temperature target of the paper for one set of calibration items.

    Parameters
    ----------
    probs, logits : array-like of shape (n_items, n_classes)
        Uncalibrated predictions of the calibration items (give one); the label-smoothed
        targets need them.
    annotations, counts, distribution :
        The calibration items' ratings (give exactly one), as for :func:`mcts`.
    n_samples : int, default=1
        S of MCTS.
    replace : bool, optional
        How MCTS draws (see :func:`mcts`).
    spread : {'all', 'others'}, default='all'
        Of the label-smoothed targets (see :func:`label_smoothed`).
    true_distribution : array-like of shape (n_items, n_classes), optional
        The truth, when known: adds ``'Oracle'``.
    seed : int or jax key, default=0
        Seeds MCTS.

    Returns
    -------
    dict of str to Target
        Keys ``'TS'`` (voted, ties to the lowest class), ``'SLTS'``, ``'MCTS S=<S>'``,
        ``'LS-TS'``, ``'Fixed-LS'``, ``'Ent-LS'``, ``'C-LS'`` and optionally ``'Oracle'``.
    """
    given = dict(annotations=annotations, counts=counts, distribution=distribution)
    s = slts(**given)
    v = voted(annotations) if annotations is not None else voted_from(s)
    out = {"TS": v, "SLTS": s,
           f"MCTS S={n_samples}": mcts(**given, n_samples=n_samples, replace=replace,
                                       seed=seed)}
    for rule, name in LS_RULES.items():
        out[name] = label_smoothed(probs, v, logits=logits, rule=rule, spread=spread)
    if true_distribution is not None:
        out["Oracle"] = oracle(true_distribution)
    return out


def fit_temperatures(targets: Mapping[str, object], *, probs: ArrayLike | None = None,
                     logits: ArrayLike | None = None, **options: Any
                     ) -> dict[str, TemperatureScaling]:
    """Fit one :class:`~noisycal.calibrators.TemperatureScaling` to each target.

    Parameters
    ----------
    targets : mapping of str to Target or array-like
        For example :func:`paper_targets`.
    probs, logits : array-like of shape (n_items, n_classes)
        The calibration items' predictions (give one).
    **options
        Passed to ``TemperatureScaling``: ``eps``, ``bounds``, ``loss`` (anything else is
        refused).

    Returns
    -------
    dict of str to TemperatureScaling
        Fitted, in the order of ``targets``; each carries its ``status_``.
    """
    if not isinstance(targets, Mapping):
        raise ValueError(f"targets must be a mapping of names to targets, got "
                         f"{type(targets).__name__}")
    unknown = sorted(set(options) - {"eps", "bounds", "loss"})
    if unknown:
        raise ValueError(f"options: TemperatureScaling takes eps, bounds and loss, got "
                         f"{unknown}")
    return {name: TemperatureScaling(**options).fit(probs=probs, logits=logits, target=t)
            for name, t in targets.items()}


def stratified_split(labels: ArrayLike, n_first: int, *, seed: Seed = 0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Split items into two parts stratified by class (the paper's calibration/test split).

    Each class is shuffled and cut in the proportion ``n_first / n``; largest remainders
    fix the total, so the first part has exactly ``n_first`` items.

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Integer class of each item (the paper stratifies CIFAR-10H and ChaosNLI; which
        label it uses is not stated, the voted one is the natural choice).
    n_first : int
        Size of the first part, 1 <= n_first < n_items.
    seed : int or jax key, default=0

    Returns
    -------
    first, second : ndarray of int
        Sorted item indices of the two parts.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(f"labels must be a 1-D integer array, got shape {y.shape} and "
                         f"dtype {y.dtype}")
    n = y.size
    n_first = check_int(n_first, "n_first", minimum=1)
    if n_first >= n:
        raise ValueError(f"n_first must be smaller than the number of items ({n}), got "
                         f"{n_first}")
    rng = as_numpy_rng(check_seed(seed))
    classes, size = np.unique(y, return_counts=True)
    quota = size * n_first / n
    take = np.floor(quota).astype(np.int64)
    extra = np.argsort(-(quota - take), kind="stable")[: n_first - int(take.sum())]
    take[extra] += 1
    first = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:k]
                            for c, k in zip(classes, take, strict=True)])
    mask = np.zeros(n, dtype=bool)
    mask[first] = True
    return np.flatnonzero(mask), np.flatnonzero(~mask)
