"""Annotator models: Dawid–Skene, one-coin Dawid–Skene and grouped Dawid–Skene.

Model object -> ``fit(annotations, *, method=...)`` ->
:class:`~noisycal.engines.results.AnnotatorFit` (statsmodels style). ``method`` is an
engine option object of :mod:`noisycal.engines.methods` (:class:`~noisycal.engines.EM`,
the default; :class:`~noisycal.engines.MLE`, a cross-check of EM;
:class:`~noisycal.engines.NUTS`) or its string. This module validates the arguments,
dispatches to an engine and builds the result; the inference lives in
:mod:`noisycal.engines` (EM and its starts in ``em``, relabelling in ``relabel``, gradient
MLE and NUTS on the NumPyro model in ``density.dawid_skene``, the checks of fitted
channels in ``checks``).

References
----------
Dawid, A. P. and Skene, A. M. (1979). Maximum likelihood estimation of observer
error-rates using the EM algorithm. Applied Statistics 28(1), 20-28.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._util.jax import as_key, split_key, x64
from .._util.progress import check_progress
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_choice, check_int, check_seed
from ..annotations.core import Annotations
from ..correction.labels import GAP_THRESHOLD
from ..engines.checks import channel_status
from ..engines.density.dawid_skene import (
    chain_diagnostics,
    chain_status,
    ds_model_kwargs,
    fit_mle,
    nuts_init_params,
    sample_dawid_skene,
)
from ..engines.density.nuts import extended_fit
from ..engines.em.starts import multistart_em, orient
from ..engines.identification import NUTS_NOTE
from ..engines.identification import dawid_skene_identification as ds_identification
from ..engines.methods import EM, MLE, NUTS, Method, as_method
from ..engines.patterns import pattern_data
from ..engines.results import (
    AnnotatorFit,
    checked_status,
    design_problems,
    estimate_problems,
    every_status,
    first_status,
    predict,
)
from ..exceptions import ConvergenceWarning, IdentifiabilityWarning

__all__ = ["DawidSkene", "OneCoinDawidSkene", "GroupedDawidSkene", "predict",
           "annotator_index"]


def annotator_index(annotations: Annotations, anchor: object) -> int:
    """The position of the annotator with id ``anchor`` in ``annotations.annotators``.

    Parameters
    ----------
    annotations : Annotations
    anchor : object
        An annotator id, as in the annotations.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Naming ``anchor`` when no annotator has that id.

    Examples
    --------
    >>> import noisycal as nc
    >>> ann = nc.Annotations.from_long({"item": [0, 0, 1], "annotator": ["a", "b", "a"],
    ...                                 "label": [0, 1, 1]})
    >>> annotator_index(ann, "b")
    1
    """
    ids = np.asarray(annotations.annotators).tolist()
    if isinstance(anchor, bool | np.bool_) or np.ndim(anchor) != 0 or anchor not in ids:
        shown = ids if len(ids) <= 10 else [*ids[:10], "..."]
        raise ValueError(f"anchor must be the id of an annotator of the annotations "
                         f"{shown}, got {anchor!r}")
    return ids.index(anchor)


def _ds_data(ann: Annotations, group: np.ndarray | None, n_groups: int) -> Any:
    from noisycal.models.dawid_skene import make_data

    arr = ann.engine_arrays()
    return make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                     n_annotators=arr.n_annotators, n_classes=arr.n_classes, group=group,
                     n_groups=n_groups)


def _group_index(group: np.ndarray | None, n_items: int) -> np.ndarray:
    """Each item's group code (zeros for a marginal model), as stored in fit details."""
    return np.zeros(n_items, np.int64) if group is None else np.asarray(group, np.int64)


def _check_groups(groups: ArrayLike, n_items: int) -> tuple[np.ndarray, int]:
    """Codes 0..L-1 of the item groups (first-seen order is not needed: sorted levels)."""
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n_items:
        raise ValueError(f"groups must have one entry per item ({n_items}), got shape {g.shape}")
    missing = pd.isna(g)
    if missing.any():
        raise ValueError(f"groups contains {int(missing.sum())} missing value(s) (NaN/None); "
                         "give every item a group")
    try:
        levels, codes = np.unique(g, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"groups must be sortable labels of one type: {exc}") from exc
    if levels.size < 2:
        raise ValueError("groups must contain at least two distinct groups")
    return codes.astype(np.int32), int(levels.size)


class DawidSkene:
    """Dawid–Skene model: K classes, one confusion matrix per annotator.

    The model of Dawid and Skene (1979), "Maximum likelihood estimation of observer
    error-rates using the EM algorithm" (their Eq. 2.4): each item has a latent true
    class drawn from the prevalence, and each rating is drawn from its annotator's
    confusion row for that class.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes K; checked against the annotations' class set when given.
    alpha : array-like of shape (K,), optional
        Dirichlet prior on the prevalence. With EM, giving ``alpha`` or ``beta`` turns
        the fit into MAP-EM (pseudo-counts ``alpha - 1``); with NUTS the default is the
        Stan User's Guide prior (alpha = 3).
    beta : array-like of shape (K, K) or (n_annotators, K, K), optional
        Dirichlet prior on each confusion row (per annotator when 3-D: prior confusion
        counts); NUTS default 2.5 K on the diagonal and 1 elsewhere.

    Examples
    --------
    >>> import noisycal as nc
    >>> ann = nc.datasets.load_dawid_skene_1979()
    >>> fit = nc.DawidSkene(n_classes=4).fit(
    ...     ann, method=nc.engines.EM(init="soft_vote", n_starts=1))
    >>> fit.prevalence.round(2)
    array([0.4 , 0.42, 0.11, 0.07])
    """

    _model = "dawid_skene"
    _one_coin = False
    #: The engines ``fit`` offers, its default first.
    _engines: tuple[type[Method], ...] = (EM, MLE, NUTS)

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 beta: ArrayLike | None = None) -> None:
        self.n_classes = n_classes
        self.alpha = alpha
        self.beta = beta

    # ------------------------------------------------------------------ validation
    def _check(self, ann: object, groups: ArrayLike | None
               ) -> tuple[Annotations, np.ndarray | None, int]:
        if not isinstance(ann, Annotations):
            raise ValueError("annotations must be a noisycal.Annotations "
                             f"(got {type(ann).__name__}); build one with "
                             "Annotations.from_long / from_wide / from_arrays")
        if not ann.annotators_known:
            raise ValueError("annotations were built by Annotations.from_counts, so annotator "
                             "identities are unknown; a per-annotator model needs who rated "
                             "what (use from_long / from_wide / from_arrays)")
        K = ann.n_classes
        if self.n_classes is not None:
            k = check_int(self.n_classes, "n_classes", minimum=2)
            if k != K:
                raise ValueError(f"n_classes={k} but the annotations have {K} classes "
                                 f"{list(ann.classes)}; pass classes= to the Annotations")
        if ann.n_items < 2:
            raise ValueError(f"annotations must cover at least 2 items, got {ann.n_items}")
        if groups is None:
            return ann, None, 1
        codes, L = _check_groups(groups, ann.n_items)
        return ann, codes, L

    def _priors(self, K: int, J: int, method: str) -> tuple[np.ndarray | None, ...]:
        from noisycal.models.dawid_skene import default_priors

        alpha, beta = self.alpha, self.beta
        if method == "nuts":
            a0, b0 = default_priors(K)
            alpha = a0 if alpha is None else alpha
            beta = b0 if beta is None else beta
        if alpha is not None:
            alpha = check_array(alpha, "alpha", ndim=1)
            if alpha.shape != (K,) or np.any(alpha <= 0):
                raise ValueError(f"alpha must be positive with shape ({K},), got "
                                 f"{alpha.shape} with min {alpha.min():g}")
        if beta is not None:
            beta = check_array(beta, "beta", ndim=(2, 3))
            ok = beta.shape == (K, K) or (beta.shape == (J, K, K) and not self._one_coin)
            if not ok or np.any(beta <= 0):
                want = f"({K}, {K})" + ("" if self._one_coin else f" or ({J}, {K}, {K})")
                raise ValueError(f"beta must be positive with shape {want}, got {beta.shape}")
            if self._one_coin and method != "nuts" and not np.allclose(
                    beta - np.diag(np.diag(beta)), beta[0, 1] * (1 - np.eye(K))):
                raise ValueError("beta for the one-coin model must have one diagonal and one "
                                 "off-diagonal value")
        return alpha, beta

    def _gold(self, ann: Annotations, gold: object) -> np.ndarray | None:
        if gold is None:
            return None
        if not isinstance(gold, dict):
            raise ValueError("gold must be a dict {item id: class label}, got "
                             f"{type(gold).__name__}")
        out = np.full(ann.n_items, -1, dtype=np.int32)
        pos = {v: i for i, v in enumerate(ann.items.tolist())}
        cls = {v: i for i, v in enumerate(ann.classes.tolist())}
        for item, label in gold.items():
            if item not in pos:
                raise ValueError(f"gold names item {item!r}, which has no ratings")
            if label not in cls:
                raise ValueError(f"gold label {label!r} of item {item!r} is not a class "
                                 f"{list(ann.classes)}")
            out[pos[item]] = cls[label]
        return out

    # ------------------------------------------------------------------ fit
    def fit(self, annotations: Annotations, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None,
            anchor: object = None, seed: Seed = 0, progress: bool = False) -> AnnotatorFit:
        """Fit the model.

        Parameters
        ----------
        annotations : Annotations
        method : EM, MLE or NUTS object, or {'em', 'mle', 'nuts'}, optional
            The inference engine and its settings (:mod:`noisycal.engines.methods`); a
            string is the engine with its defaults. Default ``EM()`` (MAP-EM when the
            model has priors).
        groups : array-like of shape (n_items,), optional
            Group of each item (:class:`GroupedDawidSkene` only, which needs it); no
            missing values.
        gold : dict, optional
            Known true classes ``{item id: class label}`` (every engine): those items
            enter the likelihood with their class, and their posteriors are clamped.
        anchor : annotator id, optional
            Two classes: name the latent classes so that this annotator (an id of
            ``annotations.annotators``) has a positive gap ``b - a``; None (default):
            match them to the majority vote (Hungarian). The anchor is also the annotator
            of EM's moment start (``EM(init='moments')``) and gap screen
            (``EM(screen_gaps=True)``), which use the first annotator when it is None.
        seed : int or jax key, default=0
            Random EM starts and bootstrap refits, the MLE start, the NUTS chains.
        progress : bool, default=False
            A bar on stderr: EM starts and refits, L-BFGS iterations, NUTS transitions.

        Returns
        -------
        AnnotatorFit
            ``engine`` holds the option object that ran. Its status also checks every
            fitted channel: 'adversarial_channel', 'degenerate_channel'
            (:mod:`noisycal.engines.checks`). NUTS fits: 'not_converged' when the largest
            R-hat (after relabelling) exceeds the engine's ``rhat_threshold`` (is
            strictly greater than it) or a transition diverged; 'diagnostics_unavailable'
            without R-hat (one chain, fewer than 4 draws); they are not checked for
            weak identification (EM and MLE fits are, see ``EM.weak_threshold``).

        Raises
        ------
        ValueError
            Naming the argument: an engine the model does not offer, ``groups`` for a
            model without groups, an unknown ``anchor`` id, and other invalid input.
        """
        engine = as_method(method, self._engines, where=type(self).__name__)
        progress = check_progress(progress)
        if groups is not None and self._model != "grouped":
            raise ValueError(f"groups= is for GroupedDawidSkene, not {type(self).__name__} "
                             "(one prevalence for every item)")
        if self._model == "grouped" and groups is None:
            raise ValueError("GroupedDawidSkene needs groups= (one group per item)")
        ann, group, L = self._check(annotations, groups)
        K, J = ann.n_classes, ann.n_annotators
        check_fit_size(ann, engine)
        orientation, anchor = self._anchor(ann, anchor, engine)
        seed = check_seed(seed)
        alpha, beta = self._priors(K, J, engine.name)
        gold_idx = self._gold(ann, gold)
        if J == 1 and L == 1:
            return self._not_identified(ann, engine, "one annotator and no groups: the "
                                        "channel and the prevalence are not identified")
        run = {"em": self._fit_em, "mle": self._fit_mle, "nuts": self._fit_nuts}[engine.name]
        if engine.name == "nuts":   # rerun with longer chains until it converges
            return extended_fit(lambda nuts: run(
                ann, group, L, alpha, beta, gold_idx, nuts, seed=seed,
                orientation=orientation, anchor=anchor, progress=progress), engine)
        return run(ann, group, L, alpha, beta, gold_idx, engine, seed=seed,
                   orientation=orientation, anchor=anchor, progress=progress)

    @staticmethod
    def _anchor(ann: Annotations, anchor: object, engine: Method) -> tuple[str, int]:
        """``(orientation, anchor index)``: 'anchor' and its index when ``anchor`` is given,
        else 'vote' and 0 (the anchor of the moment start and the gap screen)."""
        K, J = ann.n_classes, ann.n_annotators
        if getattr(engine, "init", None) == "moments" and (K != 2 or J < 3):
            raise ValueError("init='moments' needs two classes and at least 3 annotators, "
                             f"got {K} classes and {J} annotators")
        if getattr(engine, "screen_gaps", False) and K != 2:
            raise ValueError("screen_gaps=True is the binary acceptance rule; it needs "
                             f"two classes, got {K}")
        if anchor is None:
            return "vote", 0
        if K != 2:
            raise ValueError(f"anchor orients the latent classes by an annotator's gap b - a, "
                             f"defined for two classes, got {K}; leave anchor=None (the "
                             "majority-vote orientation)")
        return "anchor", annotator_index(ann, anchor)

    # ------------------------------------------------------------------ helpers
    def _n_params(self, K: int, J: int, L: int) -> int:
        return L * (K - 1) + (J if self._one_coin else J * K * (K - 1))

    def _not_identified(self, ann: Annotations, engine: Method, message: str) -> AnnotatorFit:
        warnings.warn(message, IdentifiabilityWarning, stacklevel=3)
        K, J = ann.n_classes, ann.n_annotators
        return AnnotatorFit(self._model, engine.name, ann.classes, ann.annotators, ann.items,
                            np.full((1, K), np.nan), np.full((J, K, K), np.nan),
                            np.full((ann.n_items, K), np.nan), float("nan"),
                            self._n_params(K, J, 1), "not_identified", message, False, 0,
                            annotations=ann, engine=engine)

    def _design_problems(self, ann: Annotations, L: int) -> list[tuple[str, str]]:
        """Identification problems of the data design, whatever the estimates."""
        K, J = ann.n_classes, ann.n_annotators
        seen = np.bincount(ann.engine_arrays().label, minlength=K)
        return design_problems(seen, ann.classes, self._n_params(K, J, L), ann.n_ratings,
                               J=J, L=L, n_items=ann.n_items)

    def _status(self, ann: Annotations, prev: np.ndarray, conf: np.ndarray, post: np.ndarray,
                converged: bool, L: int, screened: np.ndarray | None = None
                ) -> tuple[str, str, dict, list[tuple[str, str]]]:
        """Status, message, ``details['channels']`` and the other statuses found:
        estimates, design, gap screen, channels."""
        finite = bool(np.all(np.isfinite(prev)) and np.all(np.isfinite(conf)))
        found = [] if finite else [("nonfinite", "the estimates are not finite")]
        found += self._design_problems(ann, L)
        if screened is not None and not screened.any():
            found.append(("small_gap", (f"no EM start passed the gap screen (every "
                                        f"oriented gap > {GAP_THRESHOLD:g})")))
        if finite:
            found += estimate_problems(prev, conf, converged)
        first, rest = first_status(found)
        status, message, chan = channel_status(*first, conf, ann, post)
        return status, message, chan, [*rest, first]

    def _nuts_status(self, ann: Annotations, L: int, diag: dict, nuts: NUTS,
                     conf: np.ndarray, post: np.ndarray
                     ) -> tuple[str, str, dict, tuple[str, ...]]:
        """Status, message, ``details['channels']`` and statuses of a NUTS fit: design,
        chains, channels; one warning for a non-ok status."""
        chains = chain_status(diag, nuts.rhat_threshold)  # its message names relabelling
        found = self._design_problems(ann, L) + ([chains] if chains[0] != "ok" else [])
        first, rest = first_status(found)
        first = chains if first[0] == "ok" else first
        status, message, chan = channel_status(*first, conf, ann, post)
        self._warn("NUTS", status, message)
        status, message, statuses = every_status(status, message, *rest, first, chains)
        return status, message, chan, statuses

    def _warn(self, engine: str, status: str, message: str) -> None:
        """One warning for a non-ok status (stacklevel points at the user's fit call)."""
        if status in ("ok", "boundary"):
            return
        slow = status in ("not_converged", "diagnostics_unavailable")  # the sampler's
        cls = ConvergenceWarning if slow else IdentifiabilityWarning
        warnings.warn(f"{self._model} {engine}: {message}", cls, stacklevel=4)

    def _result(self, ann: Annotations, method: str, prev: np.ndarray, conf: np.ndarray,
                post: np.ndarray, loglik: float, status: str, message: str, converged: bool,
                n_iter: int, draws: dict | None, details: dict, **extra: Any) -> AnnotatorFit:
        K, J, L = ann.n_classes, ann.n_annotators, prev.shape[0]
        return AnnotatorFit(self._model, method, ann.classes, ann.annotators, ann.items, prev,
                            conf, post, loglik, self._n_params(K, J, L), status, message,
                            converged, n_iter, draws, details, annotations=ann, **extra)

    def _fit_em(self, ann: Annotations, group: np.ndarray | None, L: int,
                alpha: np.ndarray | None, beta: np.ndarray | None, gold: np.ndarray | None,
                em: EM, *, seed: Seed, orientation: str, anchor: int,
                progress: bool) -> AnnotatorFit:
        k_init, k_boot = split_key(seed)     # NumPy for an int: no compiled seeding
        ms = multistart_em(ann, group, L, alpha, beta, gold, one_coin=self._one_coin,
                           init=em.init, n_starts=em.n_starts, max_iter=em.max_iter,
                           tol=em.tol, rng_key=k_init, orientation=orientation, anchor=anchor,
                           screen_gaps=em.screen_gaps, devices=em.devices, progress=progress)
        draws, boot_info = (ms.refits(as_key(k_boot), em.n_boot, progress) if em.n_boot
                            else (None, {}))
        status, message, chan, seen = self._status(ann, ms.prevalence, ms.confusion,
                                                   ms.post, ms.converged, L, ms.screened)
        seen.append((status, message))
        status, message, ident = checked_status(status, message, lambda: ds_identification(
            ann, ms.prevalence, ms.confusion, group=group, gold=gold,
            one_coin=self._one_coin, threshold=em.weak_threshold))
        self._warn("EM", status, message)
        status, message, statuses = every_status(status, message, *seen)
        details = {"start_objectives": ms.objective, "best_start": ms.best,
                   "n_patterns": ms.n_patterns, "map": alpha is not None or beta is not None,
                   "orientation": orientation, "groups": L,
                   "group_index": _group_index(group, ann.n_items), "prior_alpha": alpha,
                   "prior_beta": beta, "latent_perm": ms.perm, "gold": gold is not None,
                   "gold_index": gold,
                   "max_iter": em.max_iter, "tol": em.tol, "identification": ident,
                   "channels": chan, **boot_info}
        if em.init == "moments":
            details["moment_start"] = ms.moment_note
        if em.screen_gaps:
            details["screened_starts"] = ms.screened
        return self._result(ann, "em", ms.prevalence, ms.confusion, ms.post, ms.loglik,
                            status, message, ms.converged, ms.n_iter, draws, details,
                            bootstrap_refits=ms.refits, engine=em, statuses=statuses)

    def _fit_mle(self, ann: Annotations, group: np.ndarray | None, L: int,
                 alpha: np.ndarray | None, beta: np.ndarray | None, gold: np.ndarray | None,
                 mle: MLE, *, seed: Seed, orientation: str, anchor: int,
                 progress: bool) -> AnnotatorFit:
        use_prior = alpha is not None or beta is not None
        with x64():
            data = _ds_data(ann, group, L)
        prev, conf, post, res = fit_mle(
            data, ds_model_kwargs(data, L, alpha, beta, gold, one_coin=self._one_coin),
            gold=gold, seed=seed, prior=use_prior, max_iter=mle.max_iter, tol=mle.tol,
            hessian=mle.hessian, progress=progress)
        perm = orient(post, conf, np.asarray(ann.majority_vote(tie="lowest")), orientation, anchor)
        post, prev, conf = post[:, perm], prev[:, perm], conf[:, perm, :]
        status, message, chan, seen = self._status(ann, prev, conf, post, res.converged, L)
        if res.status != "ok" and status == "ok":
            status, message = res.status, res.message
        seen += [(status, message), (res.status, res.message if res.status != "ok" else "")]
        status, message, ident = checked_status(status, message, lambda: ds_identification(
            ann, prev, conf, group=group, gold=gold, one_coin=self._one_coin,
            threshold=mle.weak_threshold))
        if status in ("unobserved_class", "not_identified", "over_parametrised",
                      "weakly_identified", "adversarial_channel", "degenerate_channel"):
            self._warn("MLE", status, message)
        status, message, statuses = every_status(status, message, *seen)
        return self._result(ann, "mle", prev, conf, post, float(res.loglik), status, message,
                            bool(res.converged), int(res.n_iter), None,
                            {"map": use_prior, "orientation": orientation, "groups": L,
                             "group_index": _group_index(group, ann.n_items),
                             "gold": gold is not None, "gold_index": gold,
                             "max_iter": mle.max_iter,
                             "tol": mle.tol, "identification": ident, "channels": chan},
                            engine=mle, statuses=statuses)

    def _fit_nuts(self, ann: Annotations, group: np.ndarray | None, L: int,
                  alpha: np.ndarray, beta: np.ndarray, gold: np.ndarray | None, nuts: NUTS, *,
                  seed: Seed, orientation: str, anchor: int, progress: bool) -> AnnotatorFit:
        K, J = ann.n_classes, ann.n_annotators
        # every chain starts at the MAP-EM estimate under the same priors (4 starts)
        em = multistart_em(ann, group, L, alpha, beta, gold, one_coin=self._one_coin,
                           init="mixed", n_starts=4, max_iter=1000, tol=1e-8,
                           rng_key=split_key(seed)[0],
                           orientation=orientation, anchor=anchor)
        init_params = nuts_init_params(em.prevalence, em.confusion, one_coin=self._one_coin)
        # one item per distinct rating pattern, weighted by its count: the same density
        arr = ann.engine_arrays()
        with x64():
            pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                               n_annotators=J, n_classes=K, group=group, n_groups=L, gold=gold)
        vote = np.asarray(ann.majority_vote(tie="lowest"))[pd_.representative]
        nd = sample_dawid_skene(
            pd_.data, vote,
            ds_model_kwargs(pd_.data, L, alpha, beta, pd_.gold, one_coin=self._one_coin,
                            weights=pd_.counts),
            init_params, gold=pd_.gold, seed=seed, progress_bar=progress, **nuts.sampler(),
            orientation=orientation, anchor=anchor, weights=pd_.counts, pattern=pd_.pattern)
        diag = chain_diagnostics(nd, orientation, stacklevel=4)
        prev_d, conf_d = nd.prevalence.reshape(-1, L, K), nd.confusion.reshape(-1, J, K, K)
        status, message, chan, statuses = self._nuts_status(ann, L, diag, nuts,
                                                            conf_d.mean(0), nd.post)
        return self._result(ann, "nuts", prev_d.mean(0), conf_d.mean(0), nd.post, nd.loglik,
                            status, message, status == "ok", nuts.num_warmup + nuts.num_samples,
                            {"prevalence": prev_d, "confusion": conf_d},
                            {"chains": nuts.num_chains, "max_rhat": diag["max_rhat"],
                             "min_ess_bulk": diag["min_ess_bulk"],
                             "num_divergences": diag["num_divergences"],
                             "relabelled_chains": diag["switched"], "groups": L,
                             "group_index": _group_index(group, ann.n_items),
                             "gold": gold is not None, "gold_index": gold, "channels": chan,
                             "sample_stats": nd.sample_stats,
                             "identification": {"checked": False, "reason": NUTS_NOTE}},
                            engine=nuts, statuses=statuses)


#: The most memory the copies of an annotator fit's parameters and item posteriors may
#: take (checked before anything is allocated).
MAX_FIT_BYTES = 8 * 2**30


def check_fit_size(ann: Annotations, engine: Method) -> None:
    """Refuse a fit whose parameter copies would not fit in memory, before allocating.

    The copies, in float64: EM's starts and bootstrap refits, each with its channels
    (J x K x K) and item posteriors (n_items x K); NUTS's kept draws (chains x samples)
    of the channels, and one set of item posteriors; for MLE a handful of channel copies.

    Parameters
    ----------
    ann : Annotations
    engine : Method

    Raises
    ------
    ValueError
        Naming the classes, annotators and the engine's setting that set the size.
    """
    K, J, n = ann.n_classes, ann.n_annotators, ann.n_items
    name = getattr(engine, "name", "")
    if name == "em":   # every start and refit keeps its channels and item posteriors
        copies = int(engine.n_starts) + int(engine.n_boot)
        need = 8.0 * copies * (J * K * K + n * K)
        what = f"n_starts={engine.n_starts}, n_boot={engine.n_boot}"
    elif name == "nuts":   # every kept draw its channels; one set of item posteriors
        copies = int(engine.num_chains) * int(engine.num_samples)
        need = 8.0 * (copies * J * K * K + n * K)
        what = f"{engine.num_chains} chains x {engine.num_samples} draws kept"
    else:
        need = 8.0 * (4 * J * K * K + n * K)
        what = f"{name or 'the engine'}'s working copies"
    if need > MAX_FIT_BYTES:
        raise ValueError(f"annotations: {K:,} classes and {J:,} annotators make {J:,} x "
                         f"{K:,} x {K:,} channels; with {what} the fit needs about "
                         f"{need / 2**30:,.1f} GiB (more than "
                         f"{MAX_FIT_BYTES / 2**30:.0f} GiB). Are the classes right "
                         "(classes= lists every label a rating may take)?")


class OneCoinDawidSkene(DawidSkene):
    """One-coin Dawid–Skene: one accuracy per annotator, errors uniform over other classes.

    ``confusion[j]`` has ``accuracy_j`` on the diagonal and ``(1 - accuracy_j) / (K - 1)``
    elsewhere. Priors: ``beta`` (K, K) with one diagonal and one off-diagonal value gives
    the accuracy a Beta(beta_kk, (K - 1) beta_kk') prior.

    Parameters
    ----------
    n_classes : int, optional
        K; checked against the annotations' classes when given.
    alpha, beta : array-like, optional
        Dirichlet priors on the prevalence (K,) and the confusion rows (K, K), as in
        :class:`DawidSkene` (with EM, giving either makes the fit MAP-EM).
    """

    _model = "one_coin"
    _one_coin = True


class GroupedDawidSkene(DawidSkene):
    """Dawid–Skene with observed item groups: a prevalence per group.

    Groups are, for example, bins of a classifier's score (the joint score-bin EM of
    "Noisy-Label Calibration with Multiple Unreliable Labels"). With two annotators, two
    groups and two classes and shared channels this is the Hui–Walter (1980) model.

    Parameters
    ----------
    n_classes, alpha, beta : see :class:`DawidSkene`
    channels : {'shared', 'group'}, default='shared'
        'shared': one confusion matrix per annotator, pooled over groups. 'group': one
        per annotator and group (marginal Dawid–Skene within each group, with one common
        orientation); the fit's annotators are then ``"<annotator>|<group>"`` labels
        and ``confusion`` has one matrix per (annotator, group) pair that has ratings;
        ``details['channel_annotators']`` and ``details['channel_groups']`` name the
        annotator and group code behind each, so the fit reads ratings by their own
        annotator ids (:meth:`~noisycal.engines.results.AnnotatorFit.match`).
        (``fit(anchor=...)`` takes the annotator's id and anchors its first pair).
    """

    _model = "grouped"

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 beta: ArrayLike | None = None, channels: str = "shared") -> None:
        super().__init__(n_classes, alpha=alpha, beta=beta)
        self.channels = channels

    def fit(self, annotations: Annotations, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None,
            anchor: object = None, seed: Seed = 0,
            progress: bool = False) -> AnnotatorFit:  # noqa: D102
        check_choice(self.channels, "channels", ("shared", "group"))
        behind = None
        if self.channels == "group" and isinstance(annotations, Annotations):
            ann, codes, L = self._check(annotations, groups)
            if codes is not None:
                levels = np.unique(np.asarray(groups))
                arr = ann.engine_arrays()
                who = np.array([f"{ann.annotators[a]}|{levels[g]}" for a, g in
                                zip(arr.annotator, codes[arr.item], strict=True)])
                seen = set(who)  # annotator x group pairs, annotator-major, as they occur
                pairs = [(a, f"{a}|{lv}") for a in ann.annotators for lv in levels
                         if f"{a}|{lv}" in seen]
                if anchor is not None:  # the anchor's first (annotator, group) pair
                    j = annotator_index(ann, anchor)
                    anchor = next((p for a, p in pairs if a == ann.annotators[j]), None)
                    if anchor is None:
                        raise ValueError(f"anchor {ann.annotators[j]!r} has no ratings")
                annotations = Annotations.from_arrays(ann.items[arr.item], who,
                                                      ann.classes[arr.label],
                                                      classes=ann.classes, items=ann.items,
                                                      annotators=[p for _, p in pairs])
                # the annotator and group behind each channel, in that same order, so
                # the fit reads ratings by their own annotator ids (AnnotatorFit.match)
                pair = np.unique(arr.annotator.astype(np.int64) * L + codes[arr.item])
                behind = {"channel_annotators": ann.annotators[pair // L],
                          "channel_groups": pair % L}
        fit = super().fit(annotations, method=method, groups=groups, gold=gold,
                          anchor=anchor, seed=seed, progress=progress)
        if behind is None:
            return fit
        return dataclasses.replace(fit, details={**fit.details, **behind})

    fit.__doc__ = DawidSkene.fit.__doc__
