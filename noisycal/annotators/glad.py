"""GLAD: annotator ability times item easiness, fitted by EM.

Model object -> ``fit(annotations, method=EM(...))`` -> :class:`GLADFit` (an
:class:`~noisycal.engines.results.AnnotatorFit` with ``model='glad'`` that also answers for
its abilities and easiness). The EM loop is :func:`noisycal.engines.em.glad.fit_glad`.

References
----------
Whitehill, J., Ruvolo, P., Wu, T., Bergsma, J. and Movellan, J. (2009). "Whose Vote
Should Count More: Optimal Integration of Labels from Labelers of Unknown Expertise".
Advances in Neural Information Processing Systems 22.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import jax.numpy as jnp

from noisycal.models.dawid_skene import one_coin_confusion

from .._util.jax import x64
from .._util.progress import check_progress
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_real, check_seed
from ..annotations.core import Annotations
from ..engines.checks import channel_status
from ..engines.em.glad import LOGIT_LIMIT, fit_glad, saturated
from ..engines.influence import ChannelInfluence
from ..engines.methods import EM, Method, as_method
from ..engines.results import (
    AnnotatorFit,
    ChannelRefits,
    check_refit_inputs,
    design_problems,
    estimate_problems,
    every_status,
    first_status,
    refit_result,
)
from ..engines.summary import Summary
from ..exceptions import ConvergenceWarning, IdentifiabilityWarning, NotOffered
from .dawid_skene import DawidSkene

__all__ = ["GLAD", "GLADFit"]

#: The EM fields GLAD reads; every other field must keep its default.
_EM_FIELDS = ("max_iter", "tol")


def _prior(value: object, name: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be a (mean, sd) pair or None, got {value!r}")
    return (check_real(value[0], f"{name}[0]"),
            check_real(value[1], f"{name}[1]", minimum=0.0, strict=True))


class GLAD:
    """GLAD: annotator ``a`` labels item ``i`` correctly with ``sigmoid(alpha_a beta_i)``.

    The model of "Whose Vote Should Count More: Optimal Integration of Labels from
    Labelers of Unknown Expertise" (Whitehill et al., 2009): ``alpha_a`` is a real
    ability (negative: worse than a coin toss between the true class and the rest),
    ``beta_i = exp(b_i) > 0`` the item's easiness, a wrong label is uniform over the other
    ``K - 1`` classes, and the true class is drawn from the prevalence. Fitted by EM
    (exact E-step; the M-step maximises the expected complete-data log-likelihood plus the
    log-priors by L-BFGS over all abilities and log-easiness at once, and sets the
    prevalence to the mean posterior), from the start and under the priors of the
    authors' code and crowd-kit: ``alpha ~ N(1, 1)``, ``b ~ N(1, 1)``, every ``alpha`` at
    1 and ``b`` at 1.

    Parameters
    ----------
    n_classes : int, optional
        K; checked against the annotations' classes when given.
    ability_prior : (mean, sd) or None, default=(1.0, 1.0)
        Normal prior on each ``alpha``; None: flat.
    easiness_prior : (mean, sd) or None, default=(1.0, 1.0)
        Normal prior on each ``b = log beta``; None: flat. The likelihood depends on
        ``alpha_a beta_i`` only, so at least one of the two priors is needed (it fixes
        the scale).
    prevalence : array-like of shape (K,), optional
        Hold the prevalence fixed at these values (crowd-kit's GLAD holds it uniform);
        default: fitted.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> conf = np.array([[[0.85, 0.15], [0.2, 0.8]]] * 4)
    >>> ann = nc.simulate.dawid_skene(300, [0.5, 0.5], conf, seed=0).annotations
    >>> fit = nc.annotators.GLAD().fit(ann)
    >>> fit.ability.shape, fit.easiness.shape, fit.status
    ((4,), (300,), 'ok')
    """

    _model = "glad"

    def __init__(self, n_classes: int | None = None, *,
                 ability_prior: tuple[float, float] | None = (1.0, 1.0),
                 easiness_prior: tuple[float, float] | None = (1.0, 1.0),
                 prevalence: ArrayLike | None = None) -> None:
        self.n_classes = n_classes
        self.ability_prior = ability_prior
        self.easiness_prior = easiness_prior
        self.prevalence = prevalence

    def _settings(self, K: int) -> tuple:
        ap = _prior(self.ability_prior, "ability_prior")
        ep = _prior(self.easiness_prior, "easiness_prior")
        if ap is None and ep is None:
            raise ValueError("ability_prior and easiness_prior are both None: the likelihood "
                             "depends on alpha * beta only, so its scale needs a prior on "
                             "one of them")
        prev = self.prevalence
        if prev is not None:
            prev = check_array(prev, "prevalence", ndim=1)
            if prev.shape != (K,) or np.any(prev <= 0) or abs(prev.sum() - 1.0) > 1e-9:
                raise ValueError(f"prevalence must be positive with shape ({K},) and sum to "
                                 f"1, got shape {prev.shape} summing to {prev.sum():g}")
        return ap, ep, prev

    def fit(self, annotations: Annotations, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None,
            anchor: object = None, seed: Seed = 0, progress: bool = False) -> GLADFit:
        """Fit the model by EM.

        Parameters
        ----------
        annotations : Annotations
        method : EM object or 'em', optional
            The only engine (default ``EM()``): GLAD reads its ``max_iter`` (EM iterations
            at most) and ``tol`` (EM stops when the log posterior per item changes by
            less than it); the other fields (starts, bootstrap, devices) do not apply and
            must keep their defaults.
        groups : None
            Refused: the model has one prevalence for every item.
        gold : dict, optional
            Known true classes ``{item id: class label}``: those items enter the
            likelihood with their class, and their posteriors are clamped.
        anchor : None
            Refused: the classes are named by the model (abilities start positive).
        seed : int or jax key, default=0
            Checked only: the fit is deterministic (one start).
        progress : bool, default=False
            A bar of EM iterations on stderr.

        Returns
        -------
        GLADFit
            ``model='glad'``, ``method='em'``; ``confusion`` each annotator's one-coin
            channel averaged over the items it rated (see :class:`GLADFit`). Statuses:
            'not_converged' when EM stops at ``max_iter``; 'boundary' when every rating of
            an annotator (its ability) or of an item (its easiness) has a fitted log-odds
            ``|alpha_a beta_i|`` above :data:`~noisycal.engines.em.glad.LOGIT_LIMIT`
            (13.8, an accuracy within 1e-6 of 0 or 1: the likelihood is flat there) or a
            fitted prevalence is below 1e-6; 'unobserved_class' and 'not_identified' (one
            annotator) from the design; 'small_gap', 'adversarial_channel' and
            'degenerate_channel' from the averaged channels, as for Dawid–Skene.

        Raises
        ------
        ValueError
            Naming the argument: another engine, an EM field GLAD does not read,
            ``groups``, ``anchor``, the priors, ``prevalence``, ``gold``.
        """
        engine = as_method(method, (EM,), where=type(self).__name__)
        for f in dataclasses.fields(EM):
            if f.name not in _EM_FIELDS and getattr(engine, f.name) != getattr(EM(), f.name):
                raise ValueError(f"method: GLAD's EM reads only max_iter and tol; {f.name}="
                                 f"{getattr(engine, f.name)!r} does not apply (one "
                                 "deterministic start, no bootstrap)")
        check_seed(seed)
        if groups is not None:
            raise ValueError("groups= is for GroupedDawidSkene; GLAD has one prevalence for "
                             "every item")
        if anchor is not None:
            raise ValueError("anchor does not apply to GLAD: the abilities start positive, "
                             "which names the classes")
        ds = DawidSkene(self.n_classes)
        ann, _, _ = ds._check(annotations, None)
        K, J, n = ann.n_classes, ann.n_annotators, ann.n_items
        ap, ep, fixed = self._settings(K)
        gold_idx = ds._gold(ann, gold)
        arr = ann.engine_arrays()
        em = fit_glad(arr.item, arr.annotator, arr.label, n_items=n, n_annotators=J,
                      n_classes=K, ability_prior=ap, easiness_prior=ep, prevalence=fixed,
                      gold=gold_idx, max_iter=engine.max_iter, tol=engine.tol,
                      progress=check_progress(progress))
        conf = averaged_confusion(em.ability, em.log_easiness, arr.item, arr.annotator, K)
        found = design_problems(np.bincount(arr.label, minlength=K), ann.classes,
                                J + (K - 1) * (fixed is None), arr.item.size, J=J, L=1)
        found = [p for p in found if p[0] in ("unobserved_class", "not_identified")]
        found += estimate_problems(em.prevalence[None], conf, em.converged)
        bad_a, bad_i = saturated(em.ability, em.log_easiness, arr.item, arr.annotator, n)
        if bad_a.any() or bad_i.any():
            found.append(("boundary", (
                f"{int(bad_a.sum())} annotator(s) {ann.annotators[bad_a][:5].tolist()} and "
                f"{int(bad_i.sum())} item(s) {ann.items[bad_i][:5].tolist()} have every "
                f"rating's fitted log-odds |alpha * beta| above {LOGIT_LIMIT:.1f}: their "
                "ability or easiness ran off to where the likelihood is flat (a weaker "
                "prior lets it)")))
        (status, message), rest = first_status(found)
        status, message, chan = channel_status(status, message, conf, ann, em.posterior)
        status, message, statuses = every_status(status, message, *rest)
        if status not in ("ok", "boundary"):
            cls = ConvergenceWarning if status == "not_converged" else IdentifiabilityWarning
            warnings.warn(f"glad em: {message}", cls, stacklevel=2)
        details = {
            "ability": em.ability, "log_easiness": em.log_easiness,
            "easiness": np.exp(em.log_easiness), "ability_prior": ap,
            "easiness_prior": ep, "fixed_prevalence": fixed, "objective": em.objective,
            "max_iter": engine.max_iter, "tol": engine.tol, "groups": 1,
            "group_index": np.zeros(n, np.int64), "gold": gold_idx is not None,
            "gold_index": gold_idx, "channels": chan,
            "boundary_annotators": ann.annotators[bad_a], "boundary_items": ann.items[bad_i],
            "channel": "averaged: one-coin with accuracy the mean of sigmoid(alpha_a "
                       "beta_i) over the items annotator a rated",
            "identification": {"checked": False,
                               "reason": "GLAD fits are not checked for weak "
                                         "identification"}}
        n_params = J + n + (K - 1) * (fixed is None)
        return GLADFit(self._model, "em", ann.classes, ann.annotators, ann.items,
                       em.prevalence[None], conf, em.posterior, em.loglik, n_params, status,
                       message, em.converged, em.n_iter, None, details, annotations=ann,
                       engine=engine, statuses=statuses)


def averaged_confusion(alpha: np.ndarray, b: np.ndarray, item: np.ndarray,
                       annotator: np.ndarray, K: int,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """Each annotator's one-coin channel averaged over the items it rated, (J, K, K).

    Parameters
    ----------
    alpha, b : ndarray
        Abilities (J,) and log-easiness (n_items,).
    item, annotator : ndarray of int
        Each rating's codes.
    K : int
    weights : ndarray of shape (n_items,), optional
        Item weights (a refit's): each rating weighs its item's weight in the mean; an
        annotator whose ratings all weigh 0 gets NaN (its channel is not estimated).

    Returns
    -------
    ndarray
        ``confusion[a, k, k]`` the mean of ``sigmoid(alpha_a beta_i)`` over annotator a's
        ratings, the rest of each row ``(1 - that) / (K - 1)``.
    """
    J = alpha.shape[0]
    acc = 1.0 / (1.0 + np.exp(-alpha[annotator] * np.exp(b[item])))
    if weights is None:
        count = np.bincount(annotator, minlength=J)
        mean = np.bincount(annotator, weights=acc, minlength=J) / np.maximum(count, 1)
    else:
        rw = np.asarray(weights, np.float64)[item]
        total = np.bincount(annotator, weights=rw, minlength=J)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(total > 0, np.bincount(annotator, weights=rw * acc,
                                                   minlength=J) / total, np.nan)
    with x64():
        return np.asarray(one_coin_confusion(jnp.asarray(mean), K))


@dataclasses.dataclass(frozen=True, eq=False)
class GLADFit(AnnotatorFit):
    """A GLAD fit: an :class:`~noisycal.engines.results.AnnotatorFit` with ``model='glad'``.

    ``item_posterior`` is the model's own (each item's easiness used); ``confusion``
    is each annotator's one-coin channel averaged over the items it rated, so
    ``nc.targets.corrected(ann, fit)`` accepts it as an approximation: the corrected label
    is then unbiased only on average over items, and the target carries the status
    'averaged_channels' (an Estimate against it ``'target_averaged_channels'``; the
    cross-fitted NC-ECE refuses GLAD); ``nc.targets.posterior(ann, fit)`` uses the model
    itself. :attr:`ability` and :attr:`easiness` are the fitted parameters;
    :meth:`predict` scores new items with the fitted abilities and prevalence held, each
    new item's easiness fitted by EM. :meth:`influence` is the items' influence on the
    prevalence and the averaged channels (so the default NC-ECE interval carries their
    estimation error); :meth:`refit` reruns the EM under item weights (so
    ``interval=nc.intervals.Refit()`` applies to a corrected target from the fit);
    posterior draws are not offered (:class:`~noisycal.exceptions.NotOffered`).

    Parameters
    ----------
    model, method, classes, annotators, items, group_prevalence, confusion, item_posterior,
    loglik, n_params, status, message, converged, n_iter, draws, details, bootstrap_refits,
    annotations, engine, statuses
        As for :class:`~noisycal.engines.results.AnnotatorFit`; ``details`` holds
        ``ability``, ``log_easiness`` and ``easiness`` (made by :meth:`GLAD.fit`).
    """

    def __repr__(self) -> str:
        status = (f"statuses={self.statuses!r}" if len(self.statuses) > 1
                  else f"status={self.status!r}")
        return (f"GLADFit(n_items={self.n_items}, n_annotators={len(self.annotators)}, "
                f"n_classes={len(self.classes)}, {status}, loglik={self.loglik:.4f}, "
                f"n_iter={self.n_iter})")

    @property
    def averaged_channels(self) -> bool:
        """True: ``confusion`` averages item-dependent channels over items, so a corrected
        target built from it gets the status 'averaged_channels' and the cross-fitted
        NC-ECE refuses the model."""
        return True

    def influence(self, annotations: Any = None) -> ChannelInfluence:
        """The per-item influence of the fitted items on the prevalence and the averaged
        channels (``confusion``).

        The abilities and prevalence by the profile sandwich (each item's easiness
        maximised out, the envelope theorem), pushed through the average of
        ``sigmoid(alpha_a beta_i)`` over annotator a's ratings together with each item's
        own term: :func:`noisycal.engines.em.glad_influence.glad_influence`, whose
        docstring has the derivation. Items with gold labels enter at their class (their
        ratings' likelihood at it, their easiness still maximised out). The default
        NC-ECE interval against a corrected target from this fit then carries the
        channels' estimation error (the target still has the status
        'averaged_channels': the influence carries the sampling error of the averaged
        channels, not the error of averaging).

        Parameters
        ----------
        annotations : Annotations, optional
            The data the fit was made on, when the fit does not carry them.

        Returns
        -------
        ChannelInfluence
            In one-coin coordinates: the prevalence's free entries, then one averaged
            accuracy per annotator (the averaged channels are one-coin).

        Raises
        ------
        NotOffered
            Saying why there is none: no fitted data, a gold fit without its gold
            labels (``details['gold_index']``), the status
            'boundary', an item's easiness not at a strict maximum of its own likelihood,
            a profile information that is not positive definite, more than ``MAX_FREE``
            free parameters (J + K - 1).
        """
        from ..engines.em.glad_influence import glad_influence

        out = glad_influence(self, annotations)
        if isinstance(out, str):
            raise NotOffered(out)
        return out

    def refit(self, weights: ArrayLike, *, draw: Callable[..., Any] | None = None,
              statistic: Callable[..., Any] | None = None, args: Any = (),
              progress: bool | str = False) -> ChannelRefits:
        """The averaged channels and prevalence refitted under item weights, one refit per
        row: :meth:`AnnotatorFit.refit` for GLAD.

        Each refit is GLAD's EM (:func:`noisycal.engines.em.glad.fit_glad`) with every
        item's log-likelihood and easiness prior multiplied by its weight (the abilities'
        prior counted once; the module docstring of :mod:`noisycal.engines.em.glad`),
        started from the fit's abilities, log-easiness and prevalence, under its priors,
        fixed prevalence, gold labels, ``max_iter`` and ``tol``. A weight of 2 is the
        item counted twice sharing one easiness, which fits what two copies of it fit
        (each copy's easiness maximises the same criterion). ``confusion`` is the
        refitted item-averaged channel
        (:func:`~noisycal.annotators.glad.averaged_confusion`, each rating weighing its
        item's weight; NaN for an annotator whose ratings all weigh 0), the one a
        corrected target from GLAD uses. The M-step is scipy's L-BFGS on a jitted
        objective, so the refits run in a Python loop (each a jitted weighted EM;
        ``draw`` and ``statistic`` are compiled once and called per refit), not in one
        compiled loop as for the Dawid–Skene family: about 0.05 s a refit at 300 items
        and four annotators (BLAS held to one thread meanwhile).

        Parameters
        ----------
        weights : array-like of shape (B, n_items) or (n_items,)
            As :meth:`AnnotatorFit.refit`.
        draw : callable, optional
            ``draw(x, args) -> (n_items,)``, as :meth:`AnnotatorFit.refit`.
        statistic : callable, optional
            ``statistic(w, confusion, prevalence, args)``, as :meth:`AnnotatorFit.refit`,
            on the refitted averaged channels and prevalence.
        args : pytree of arrays, default=()
            Passed to ``draw`` and ``statistic``.
        progress : bool or str, default=False
            A progress bar on stderr, one step per refit; a string is its label.

        Returns
        -------
        ChannelRefits
            As :meth:`AnnotatorFit.refit` (``group_prevalence`` (B, 1, K));
            ``n_patterns`` is the number of items (each item has its own easiness).

        Raises
        ------
        NotOffered
            For a fit without its annotations or without finite estimates.
        ValueError
            Naming ``weights``, ``draw``, ``statistic`` or ``progress``.
        """
        import jax
        import jax.numpy as jnp

        from .._util.progress import ProgressBar
        from .._util.threads import single_thread_blas
        from ..engines.em.glad import call_draw, call_statistic

        refusal = self._refit_refusal()
        if refusal:
            raise NotOffered(refusal)
        arr = self.annotations.engine_arrays()
        K, J = len(self.classes), len(self.annotators)
        fixed = self.details.get("fixed_prevalence")
        rows = []
        with x64():
            W, label, progress = check_refit_inputs(weights, self.n_items, draw, statistic,
                                                    progress)
            jargs = jax.tree.map(jnp.asarray, args)
            # one BLAS thread: scipy's L-BFGS-B makes small BLAS calls, which a threaded
            # OpenBLAS slowed tenfold on a loaded 2-core machine (0.5 s a refit, not 0.05)
            with ProgressBar(W.shape[0], label, enabled=progress) as bar, \
                    single_thread_blas():
                for x in W:
                    w = np.asarray(x if draw is None else call_draw(x, jargs, draw=draw),
                                   np.float64)
                    em = fit_glad(
                        arr.item, arr.annotator, arr.label, n_items=self.n_items,
                        n_annotators=J, n_classes=K, ability_prior=self.details[
                            "ability_prior"], easiness_prior=self.details["easiness_prior"],
                        prevalence=fixed, gold=self.details.get("gold_index"),
                        max_iter=int(self.details["max_iter"]),
                        tol=float(self.details["tol"]), ability=self.ability,
                        log_easiness=self.details["log_easiness"],
                        start_prevalence=self.prevalence, weights=w)
                    conf = averaged_confusion(em.ability, em.log_easiness, arr.item,
                                              arr.annotator, K, w)
                    stat = None if statistic is None else jax.tree.map(
                        np.asarray, call_statistic(jnp.asarray(w), jnp.asarray(conf),
                                                   jnp.asarray(em.prevalence), jargs,
                                                   statistic=statistic))
                    rows.append((stat, em.converged, conf, em.n_iter, em.prevalence))
                    bar.update()
        stat = (None if statistic is None
                else jax.tree.map(lambda *xs: np.stack(xs), *[r[0] for r in rows]))
        conv, conf, n_iter, prev = (np.stack([r[i] for r in rows]) for i in range(1, 5))
        return refit_result((stat, conv, conf, n_iter, prev, prev[:, None]), weights, draw,
                            self.n_items)

    def _refit_refusal(self) -> str:
        """Why this fit cannot be refitted ('' when it can)."""
        if self.method != "em":
            return ("refit reruns GLAD's EM under item weights; this fit is "
                    f"{self.model!r} by {self.method!r}")
        if self.annotations is None:
            return "the fit does not carry the annotations it was fitted on"
        if not (np.all(np.isfinite(self.ability))
                and np.all(np.isfinite(self.details["log_easiness"]))
                and np.all(np.isfinite(self.prevalence))):
            return "the fit has no finite estimates"
        return ""

    @property
    def ability(self) -> np.ndarray:
        """``alpha``, one per annotator in ``annotators`` order."""
        return np.asarray(self.details["ability"])

    @property
    def easiness(self) -> np.ndarray:
        """``beta = exp(b)``, one per item in ``items`` order."""
        return np.asarray(self.details["easiness"])

    @property
    def params(self) -> dict[str, np.ndarray]:
        """The point estimates by name: prevalence, confusion, ability, easiness."""
        return {**super().params, "ability": self.ability, "easiness": self.easiness}

    def predict(self, annotations: Any, groups: Any = None) -> np.ndarray:
        """P(true class | ratings) for new items: abilities and prevalence held at the
        fit, each item's easiness fitted by EM under the fit's easiness prior.

        Parameters
        ----------
        annotations : Annotations
            Ratings of the new items (annotators matched by id, classes by name).
        groups : None
            Refused: GLAD has no groups.

        Returns
        -------
        ndarray of shape (n_new_items, K)
            Columns in the fit's class order. A ConvergenceWarning when the EM of the new
            items stops at the fit's ``max_iter`` before ``tol`` (as :meth:`GLAD.fit`).
        """
        if groups is not None:
            raise ValueError("groups: GLAD has one prevalence for every item")
        if not isinstance(annotations, Annotations):
            raise ValueError("annotations must be a noisycal.Annotations, got "
                             f"{type(annotations).__name__}")
        m = self.match(annotations)
        ep = self.details["easiness_prior"]
        em = fit_glad(m.item, m.channel, m.label, n_items=annotations.n_items,
                      n_annotators=len(self.annotators), n_classes=len(self.classes),
                      ability_prior=self.details["ability_prior"],
                      easiness_prior=ep, prevalence=self.prevalence,
                      max_iter=int(self.details["max_iter"]), tol=float(self.details["tol"]),
                      ability=self.ability, free_ability=False)
        if not em.converged:
            warnings.warn(f"glad predict: the EM of the new items' easiness stopped at "
                          f"max_iter={int(self.details['max_iter'])} before its change per "
                          f"item fell below tol={float(self.details['tol']):g}; the "
                          "posteriors are those of its last iteration", ConvergenceWarning,
                          stacklevel=2)
        return em.posterior

    def summary(self, *, level: float = 0.9, loo: bool | None = None) -> Summary:
        """:meth:`AnnotatorFit.summary` with an ``ability`` table: each annotator's
        ``alpha``, its ratings and its averaged accuracy; the header adds the easiness
        quantiles (``easiness_q10``, ``easiness_median``, ``easiness_q90``).

        Parameters
        ----------
        level : float, default=0.9
        loo : bool, optional
            Refused when True (no posterior draws), as for every EM fit.
        """
        base = super().summary(level=level, loo=loo)
        count = (np.bincount(self.annotations.annotator_index,
                             minlength=len(self.annotators))
                 if self.annotations is not None else None)
        table = pd.DataFrame({"annotator": self.annotators, "ability": self.ability,
                              "ratings": count,
                              "accuracy": np.diagonal(self.confusion, axis1=1,
                                                      axis2=2)[:, 0]})
        table.attrs["title"] = "ability"
        q = np.quantile(self.easiness, [0.1, 0.5, 0.9])
        header = {**base.header, "easiness_q10": float(q[0]),
                  "easiness_median": float(q[1]), "easiness_q90": float(q[2])}
        return Summary(base.title, header, (*base.tables, table))
