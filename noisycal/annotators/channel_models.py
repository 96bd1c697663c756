"""Constrained-channel annotator models: class-conditional Dawid–Skene and MACE.

Both subclass :class:`~noisycal.annotators.DawidSkene` (same likelihood, starts,
statuses and result type) and only constrain each annotator's confusion matrix:

- :class:`ClassConditionalDawidSkene`: one accuracy per annotator and true class, errors
  spread evenly over the other classes (the ``class_conditional_dawid_skene`` model of the
  R package rater);
- :class:`MACE`: each annotator spams with probability ``spam[j]``, drawing a label from
  its own strategy, and otherwise reports the true class ("Learning Whom to Trust with
  MACE", Hovy, Berg-Kirkpatrick, Vaswani and Hovy 2013).

EM updates are in :mod:`noisycal.engines.em.channels`; the NumPyro models for NUTS in
:mod:`models.channels`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.types import ArrayLike, Seed
from .._util.validation import check_array
from ..annotations.core import Annotations
from ..engines.methods import EM, NUTS, Method
from ..engines.results import AnnotatorFit
from .dawid_skene import DawidSkene

__all__ = ["ClassConditionalDawidSkene", "MACE"]


def _positive(value: ArrayLike, name: str, shape: tuple, method: str) -> np.ndarray:
    """A prior array of ``shape`` (a scalar is broadcast): positive, and >= 1 for EM
    (``method``: the engine's name)."""
    arr = check_array(value, name, ndim=(0, len(shape)))
    if arr.ndim == 0:
        arr = np.full(shape, float(arr))
    if arr.shape != shape:
        raise ValueError(f"{name} must be a number or have shape {shape}, got {arr.shape}")
    if np.any(arr <= 0) or (method == "em" and np.any(arr < 1)):
        low = ("positive" if method != "em" else ">= 1 with the EM engine (MAP-EM adds the "
               "pseudo-counts prior - 1; NUTS accepts any positive values)")
        raise ValueError(f"{name} must be {low}, got min {arr.min():g}")
    return arr.astype(np.float64)


class _ChannelModel(DawidSkene):
    """Shared fit wrapper: EM and NUTS only, natural parameters in ``details``."""

    _model = "constrained"
    _engines = (EM, NUTS)

    def _n_params(self, K: int, J: int, L: int) -> int:
        return L * (K - 1) + J * K

    def fit(self, annotations: Annotations, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None,
            anchor: object = None, seed: Seed = 0,
            progress: bool = False) -> AnnotatorFit:  # noqa: D102
        return super().fit(annotations, method=method, groups=groups, gold=gold,
                           anchor=anchor, seed=seed, progress=progress)

    fit.__doc__ = (DawidSkene.fit.__doc__ or "").replace(
        "method : EM, MLE or NUTS object, or {'em', 'mle', 'nuts'}, optional",
        "method : EM or NUTS object, or {'em', 'nuts'}, optional")

    def _natural(self, confusion: np.ndarray) -> dict:
        raise NotImplementedError

    def _result(self, ann: Annotations, method: str, prev: np.ndarray, conf: np.ndarray,
                post: np.ndarray, loglik: float, status: str, message: str, converged: bool,
                n_iter: int, draws: dict | None, details: dict, **extra: Any) -> AnnotatorFit:
        if method == "nuts" and draws is not None:  # posterior means of the draws
            nat = {k: v.mean(0) for k, v in self._natural(draws["confusion"]).items()}
        else:
            nat = self._natural(conf)
        return super()._result(ann, method, prev, conf, post, loglik, status, message,
                               converged, n_iter, draws, {**details, **nat}, **extra)


class ClassConditionalDawidSkene(_ChannelModel):
    """Class-conditional Dawid–Skene: one accuracy per annotator and true class.

    ``confusion[j, k, k] = accuracy[j, k]`` and ``confusion[j, k, l] = (1 - accuracy[j, k])
    / (K - 1)`` for ``l != k``: annotators may be better on some classes than on others,
    but their errors carry no pattern. J K + K - 1 free parameters (the full model has
    J K (K - 1) + K - 1); with two classes it is the full Dawid–Skene model.

    Parameters
    ----------
    n_classes : int, optional
        K; checked against the annotations' classes when given.
    alpha : array-like of shape (K,), optional
        Dirichlet prior on the prevalence, as in :class:`DawidSkene`.
    accuracy_prior : array-like of shape (2,) or (2, K), optional
        Beta parameters ``(a, b)`` of every accuracy (per true class when (2, K)). With EM,
        giving it (or ``alpha``) makes the fit MAP-EM (entries >= 1); NUTS default
        Beta(2.5 K, K - 1), the law of a diagonal entry under :class:`DawidSkene`'s
        default Dirichlet row prior (:func:`models.channels.class_conditional_priors`).

    Notes
    -----
    The EM update of ``accuracy[j, k]`` is closed form: the expected correct ratings of
    annotator j on class-k items over all its expected ratings of class-k items (plus
    ``a - 1`` and ``a + b - 2`` with a prior). ``fit(...).details['accuracy']`` holds the
    (J, K) accuracies (posterior means for NUTS).

    Examples
    --------
    >>> import noisycal as nc
    >>> ann = nc.datasets.load_dawid_skene_1979()
    >>> fit = nc.annotators.ClassConditionalDawidSkene().fit(ann, method=nc.engines.EM(n_starts=2))
    >>> fit.model, fit.details["accuracy"].shape, fit.n_params
    ('class_conditional', (5, 4), 23)
    """

    _model = "class_conditional"
    _one_coin = "class_conditional"

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 accuracy_prior: ArrayLike | None = None) -> None:
        super().__init__(n_classes, alpha=alpha)
        self.accuracy_prior = accuracy_prior

    def _priors(self, K: int, J: int, method: str) -> tuple[np.ndarray | None, ...]:
        from noisycal.models.channels import class_conditional_priors

        alpha, _ = super()._priors(K, J, method)
        prior = self.accuracy_prior
        if prior is None:
            return alpha, (class_conditional_priors(K) if method == "nuts" else None)
        arr = check_array(prior, "accuracy_prior", ndim=(1, 2))
        if arr.shape == (2,):
            arr = np.repeat(arr[:, None], K, axis=1)
        return alpha, _positive(arr, "accuracy_prior", (2, K), method)

    def _natural(self, confusion: np.ndarray) -> dict:
        return {"accuracy": np.diagonal(confusion, axis1=-2, axis2=-1).copy()}


class MACE(_ChannelModel):
    """MACE: each annotator spams with some probability, else reports the true class.

    The model of Hovy, Berg-Kirkpatrick, Vaswani and Hovy (2013), "Learning Whom to Trust
    with MACE": annotator j ignores the item with probability ``spam[j]`` and draws a
    label from its strategy ``strategy[j]`` (a distribution over the classes); otherwise
    it gives the true class. So ``confusion[j] = (1 - spam[j]) I + spam[j] 1 strategy[j]^T``
    and there are J K + K - 1 free parameters. The prevalence is estimated (the paper
    takes it uniform).

    Parameters
    ----------
    n_classes : int, optional
        K; checked against the annotations' classes when given.
    alpha : array-like of shape (K,), optional
        Dirichlet prior on the prevalence, as in :class:`DawidSkene`.
    spam_prior : array-like of shape (2,), optional
        Beta parameters of each spamming probability; NUTS default (0.5, 0.5), the
        default of the MACE software.
    strategy_prior : float or array-like of shape (K,), optional
        Dirichlet parameters of each strategy; NUTS default 1 (flat). With EM, giving a
        prior makes the fit MAP-EM (entries >= 1; an unset one is then flat, 1).

    Notes
    -----
    EM treats each rating's spam indicator as a second latent variable: given the
    expected counts of the class E-step, exact EM updates of ``spam`` and ``strategy``
    are iterated (:func:`noisycal.engines.em.channels.mace_m_step`), a generalised EM
    whose log-likelihood never decreases. ``fit(...).details`` holds ``'spam'`` (J,) and
    ``'strategy'`` (J, K) (posterior means for NUTS); an annotator that never spams has
    an undetermined strategy, reported uniform.

    Examples
    --------
    >>> import noisycal as nc
    >>> ann = nc.datasets.load_dawid_skene_1979()
    >>> fit = nc.annotators.MACE().fit(ann, method=nc.engines.EM(n_starts=2))
    >>> fit.model, fit.details["spam"].shape, fit.details["strategy"].shape
    ('mace', (5,), (5, 4))
    """

    _model = "mace"
    _one_coin = "mace"

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 spam_prior: ArrayLike | None = None,
                 strategy_prior: ArrayLike | None = None) -> None:
        super().__init__(n_classes, alpha=alpha)
        self.spam_prior = spam_prior
        self.strategy_prior = strategy_prior

    def _priors(self, K: int, J: int, method: str) -> tuple[np.ndarray | None, ...]:
        from noisycal.models.channels import mace_priors

        alpha, _ = super()._priors(K, J, method)
        if self.spam_prior is None and self.strategy_prior is None and method != "nuts":
            return alpha, None
        s0, x0 = mace_priors(K) if method == "nuts" else (np.ones(2), np.ones(K))
        sp = s0 if self.spam_prior is None else _positive(self.spam_prior, "spam_prior",
                                                          (2,), method)
        xp = x0 if self.strategy_prior is None else _positive(
            self.strategy_prior, "strategy_prior", (K,), method)
        return alpha, np.concatenate([sp, xp])

    def _natural(self, confusion: np.ndarray) -> dict:
        from noisycal.models.channels import mace_parameters

        spam, strategy = mace_parameters(np.asarray(confusion, dtype=np.float64))
        return {"spam": np.asarray(spam), "strategy": np.asarray(strategy)}
