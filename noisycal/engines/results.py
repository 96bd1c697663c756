"""One result type for every annotator-model fit (EM, MLE, NUTS)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from .._util.html import fit_html
from .._util.jax import x64
from .._util.statuses import ordered_statuses
from .._util.types import ArrayLike, Seed
from .._util.validation import check_level, check_seed
from ..annotations.core import Annotations
from ..annotations.matching import FitIds, RatingMatch, match_ratings, positions
from ..exceptions import NotOffered
from .density.diagnostics import check_credible_draws
from .status import (
    BOUNDARY,
    checked_status,
    design_problems,
    design_status,
    estimate_problems,
    estimate_status,
    every_status,
    first_status,
)
from .summary import Summary, fit_summary, parameter_frame, parameter_intervals

if TYPE_CHECKING:
    from .influence import ChannelInfluence

# the statuses live in .status and are re-exported here, where the fitters import them
__all__ = ["AnnotatorFit", "ChannelRefits", "predict", "check_fit", "fit_ids",
           "design_status", "estimate_status", "checked_status", "BOUNDARY",
           "design_problems", "estimate_problems", "every_status", "first_status",
           "check_refit_inputs", "refit_result"]


class ChannelRefits(NamedTuple):
    """A fit's channels and prevalences refitted under item weights, one row per replicate.

    What :meth:`AnnotatorFit.refit` returns; everything is in the fit's class and
    annotator order (``fit.classes``, ``fit.annotators``).

    Attributes
    ----------
    group_prevalence : ndarray of shape (B, L, K)
        The refitted class proportions of each group.
    prevalence : ndarray of shape (B, K)
        The marginal class proportions: the groups' weighted by the replicate's item
        weights in each group.
    confusion : ndarray of shape (B, J, K, K)
        The refitted channels, ``confusion[b, j, true, observed]``.
    converged : ndarray of bool, shape (B,)
        Whether the refit met its tolerance within its iteration limit.
    n_iter : ndarray of int, shape (B,)
        Iterations of each refit.
    statistic : pytree of ndarrays, or None
        What the ``statistic`` given to ``refit`` returned, stacked over the replicates.
    n_patterns : int
        The distinct rating patterns (within groups) EM ran on.
    """

    group_prevalence: np.ndarray
    prevalence: np.ndarray
    confusion: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    statistic: Any
    n_patterns: int


@dataclass(frozen=True, eq=False)
class AnnotatorFit:
    """A fitted annotator model.

    Attributes
    ----------
    model : str
        ``'dawid_skene'``, ``'one_coin'`` or ``'grouped'``.
    method : str
        ``'em'`` (MLE or MAP-EM), ``'mle'`` (gradient) or ``'nuts'``.
    classes, annotators, items : ndarray
        Labels of the classes (in the annotations' class order), annotators and items.
    group_prevalence : ndarray of shape (n_groups, K)
        Class proportions per group (one row for the marginal model).
    confusion : ndarray of shape (n_annotators, K, K)
        ``confusion[j, true, observed]``.
    item_posterior : ndarray of shape (n_items, K)
        P(true class | ratings); for NUTS averaged over draws (Rao-Blackwellised).
    loglik : float
        Log-likelihood at the point estimate.
    n_params : int
        Free parameters.
    status : str
        ``'ok'``, ``'not_converged'``, ``'diagnostics_unavailable'`` (NUTS: R-hat could
        not be computed), ``'nonfinite'``, ``'small_gap'``, ``'boundary'``,
        ``'not_identified'``, ``'unobserved_class'``, ``'over_parametrised'``
        (see :func:`design_status` and :func:`estimate_status`),
        ``'adversarial_channel'``, ``'degenerate_channel'``
        (:mod:`noisycal.engines.checks`: an annotator's channel is better read
        with its labels permuted, or carries no evidence about the class;
        ``details['channels']`` holds the numbers), ``'weakly_identified'``
        (:func:`checked_status`: the information is nearly singular at the estimate;
        ``details['identification']`` holds the numbers). The most severe of
        ``statuses``.
    message : str
        Why the statuses are not 'ok', the most severe first.
    converged : bool
    n_iter : int
    draws : mapping or None
        ``{'prevalence': (n_draws, n_groups, K), 'confusion': (n_draws, J, K, K)}``:
        bootstrap refits (EM) or posterior draws (NUTS, chains concatenated).
    details : mapping
        Engine-specific extras (start objectives, diagnostics, settings).
    bootstrap_refits : callable or None
        EM fits: bootstrap refits on demand (:meth:`bootstrap_draws`); not pickled.
    annotations : Annotations or None
        The ratings the model was fitted on (for a grouped fit with channels per group,
        the ``"<annotator>|<group>"`` ratings), shared by copies and pickled with the fit.
    engine : Method or None
        The engine option object the fit ran (:mod:`noisycal.engines.methods`), so that
        ``model.fit(annotations, method=fit.engine)`` refits with the same settings.
    statuses : tuple of str
        Every status that applies, most severe first and without repeats (the ranking
        :data:`noisycal._util.statuses.SEVERITY`; for example ``('not_converged',
        'boundary')``), merged with ``status``: ``('ok',)`` when none applies, so
        ``status == statuses[0]`` always. The channel and identification checks run
        only on a fit whose other statuses are at most ``'boundary'``.

    Notes
    -----
    A fit answers for itself what the noise-corrected metrics need of it (the protocol
    :class:`~noisycal.targets.ChannelFit`): :meth:`influence`, :meth:`refit`
    and :meth:`posterior_draws`, each refusing with
    :class:`~noisycal.exceptions.NotOffered` what this fit cannot offer.
    """

    model: str
    method: str
    classes: np.ndarray
    annotators: np.ndarray
    items: np.ndarray
    group_prevalence: np.ndarray
    confusion: np.ndarray
    item_posterior: np.ndarray
    loglik: float
    n_params: int
    status: str
    message: str
    converged: bool
    n_iter: int
    draws: Mapping[str, np.ndarray] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    bootstrap_refits: Callable[..., tuple[dict, dict]] | None = field(
        default=None, repr=False, compare=False)
    annotations: Any = field(default=None, repr=False, compare=False)
    engine: Any = field(default=None, repr=False, compare=False)
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.draws is not None:
            object.__setattr__(self, "draws", MappingProxyType(dict(self.draws)))
        object.__setattr__(self, "_boot", {})

    def __reduce__(self) -> tuple:
        # the read-only mapping proxies do not pickle; rebuild from plain dicts. The
        # bootstrap refit closure (it holds the data) is not pickled.
        values = self._values()
        values["bootstrap_refits"] = None
        return (type(self), tuple(values.values()))

    def _values(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["draws"] = None if self.draws is None else dict(self.draws)
        values["details"] = dict(self.details)
        return values

    def __copy__(self) -> AnnotatorFit:
        return type(self)(**self._values())

    def __deepcopy__(self, memo: dict) -> AnnotatorFit:
        import copy

        # the bootstrap refit closure and the (immutable) annotations are shared
        values = {k: (v if k in ("bootstrap_refits", "annotations")
                      else copy.deepcopy(v, memo))
                  for k, v in self._values().items()}
        return type(self)(**values)

    def bootstrap_draws(self, n_boot: int = 1000, *, seed: Seed = 0) -> Mapping[str, Any]:
        """Bootstrap refits over items of an EM fit, computed on demand (and cached).

        The same refits as ``fit(..., method=EM(n_boot=n_boot))`` would store in ``draws``:
        EM on resampled items, started from the fitted posteriors (vmapped, seeded).

        Parameters
        ----------
        n_boot : int, default=1000
            Number of refits (at least 1).
        seed : int or jax key, default=0

        Returns
        -------
        mapping
            ``{'prevalence', 'confusion', 'n_boot', 'boot_converged'}``.
        """
        from .._util.jax import as_key
        from .._util.validation import check_int

        n_boot = check_int(n_boot, "n_boot", minimum=1)
        check_seed(seed)
        if self.bootstrap_refits is None:
            raise ValueError("bootstrap refits need an EM fit made in this session (the "
                             "refit is not kept when a fit is pickled); this fit is "
                             f"{self.method!r}")
        key = (n_boot, repr(seed))
        if key not in self._boot:
            draws, info = self.bootstrap_refits(as_key(seed), n_boot)
            self._boot[key] = MappingProxyType({**draws, **info})
        return self._boot[key]

    # ------------------------------------------------------------------ the fit protocol
    def influence(self, annotations: Any = None) -> ChannelInfluence:
        """The per-item influence of the fitted items on the free parameters.

        To first order the estimate moves by ``sum_i phi_i`` when the items are drawn
        again; ``phi_i`` (one row per rating pattern) and the sandwich covariance
        ``sum_i phi_i phi_i^T`` are what the default interval of a noise-corrected ECE
        propagates (:mod:`noisycal.metrics.nc.delta`). NUTS fits of every model: the
        influence on the posterior mean, from the draws (the Bayesian infinitesimal
        jackknife, :func:`noisycal.engines.influence.posterior_influence`); EM and MLE
        fits of Dawid–Skene, one-coin and grouped channels and EM fits of the
        class-conditional and MACE channels: the sandwich of the marginal likelihood in
        the model's own free coordinates
        (:func:`noisycal.engines.influence.dawid_skene_influence`);
        Hui–Walter moment and GMM fits: the GMM sandwich
        (:func:`noisycal.engines.influence.hui_walter_influence`); classifier-informed EM
        fits: the sandwich of the marginal likelihood given the scores, on the channels,
        the prior's scale and bias as nuisance parameters
        (:func:`noisycal.engines.em.ci_influence.classifier_informed_influence`);
        GLAD EM fits override this with the influence on their item-averaged channels
        (:func:`noisycal.engines.em.glad_influence.glad_influence`).

        Parameters
        ----------
        annotations : Annotations, optional
            The data the fit was made on, when the fit does not carry them.

        Returns
        -------
        ChannelInfluence
            See :class:`~noisycal.engines.influence.ChannelInfluence`.

        Raises
        ------
        NotOffered
            Saying why there is none: no fitted data, gold labels, too few posterior
            draws (or effective draws for the parameters), too many free parameters, an
            information matrix that is not positive definite.

        Examples
        --------
        >>> import numpy as np, noisycal as nc
        >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 3)
        >>> ann = nc.simulate.dawid_skene(300, [0.6, 0.4], conf, seed=0).annotations
        >>> infl = nc.DawidSkene(2).fit(ann).influence()
        >>> infl.covariance.shape == (len(infl.names),) * 2
        True
        """
        from .influence import channel_influence

        out = channel_influence(self, annotations)
        if isinstance(out, str):
            raise NotOffered(out)
        return out

    def refit(self, weights: ArrayLike, *, draw: Callable[..., Any] | None = None,
              statistic: Callable[..., Any] | None = None, args: Any = (),
              progress: bool | str = False) -> ChannelRefits:
        """The channels and prevalences refitted under item weights, one refit per row.

        Each row of ``weights`` weighs the fitted items (``fit.items`` order; a bootstrap
        resample is its multiplicities) and EM is run again on the fit's own ratings
        under those weights: the same model, priors, iteration limit and tolerance, started
        from the fitted posteriors so the class labelling is kept. All rows run in one
        compiled loop. Offered by EM fits of the Dawid–Skene family (Dawid–Skene,
        one-coin, grouped, class-conditional, MACE), and by classifier-informed EM fits
        through their own weighted EM
        (:meth:`noisycal.annotators.ClassifierInformedFit.refit`), and by GLAD fits
        through theirs (:meth:`noisycal.annotators.GLADFit.refit`: each item's ratings
        and easiness prior weighted, the item-averaged channels refitted; a Python loop
        of jitted fits, not one compiled loop). A fit with gold
        labels is refitted with its gold items' posteriors clamped at their classes, as
        in the fit: a gold item keeps its class in every replicate and weighs its weight
        (a resample's multiplicity).

        Parameters
        ----------
        weights : array-like of shape (B, n_items) or (n_items,)
            Non-negative item weights, one replicate per row, each with a positive sum;
            with ``draw``, an array of shape (B, ...) of what ``draw`` makes them from.
        draw : callable, optional
            ``draw(x, args) -> (n_items,)``: one replicate's item weights from its row
            ``x`` of ``weights`` (a random key: the bootstrap's resample), drawn inside
            the compiled loop, so that the (B, n_items) weights are never stored (on CPU
            this is also faster than drawing them beforehand). The weights must be
            non-negative with a positive sum (not checked). Hashable with a stable hash,
            like ``statistic``.
        statistic : callable, optional
            ``statistic(w, confusion, prevalence, args) -> pytree of arrays``, evaluated
            on every refit inside the compiled loop (so a caller needs no second pass
            over the replicates): ``w`` the replicate's item weights (n_items,),
            ``confusion`` (J, K, K) and ``prevalence`` (K,) the refitted channels and
            marginal prevalence in the fit's order. It must be JAX-traceable and
            hashable with a stable hash (a module-level function or a frozen dataclass:
            it is a static argument of the compiled loop, which a new closure per call
            would compile again).
        args : pytree of arrays, default=()
            Passed to ``draw`` and ``statistic`` (traced, so new values do not compile
            again).
        progress : bool or str, default=False
            A progress bar on stderr, one step per refit; a string is its label
            (default 'EM refits').

        Returns
        -------
        ChannelRefits
            ``group_prevalence`` (B, L, K), ``prevalence`` (B, K), ``confusion``
            (B, J, K, K), ``converged`` (B,), ``n_iter`` (B,) and ``statistic`` (stacked
            over the replicates, or None), without the leading axis for 1-D ``weights``;
            ``n_patterns``, the rating patterns EM ran on.

        Raises
        ------
        NotOffered
            For a fit that cannot be refitted (not EM, not of the Dawid–Skene family, no
            fitted ratings, or gold labels it does not carry in
            ``details['gold_index']``).
        ValueError
            Naming ``weights``.

        Examples
        --------
        >>> import numpy as np, noisycal as nc
        >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 3)
        >>> ann = nc.simulate.dawid_skene(300, [0.6, 0.4], conf, seed=0).annotations
        >>> fit = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(tol=1e-12))
        >>> same = fit.refit(np.ones(fit.n_items))  # equal weights: the same data again
        >>> bool(np.abs(same.confusion - fit.confusion).max() < 1e-5)  # EM's tolerance
        True
        >>> fit.refit(np.ones((3, fit.n_items))).confusion.shape  # 3 replicates
        (3, 3, 2, 2)
        """
        from .._util.progress import ProgressBar
        from .em.resample import weighted_refits
        from .influence import CHANNELS

        refusal = self._refit_refusal()
        if refusal:
            raise NotOffered(refusal)
        import jax
        import jax.numpy as jnp

        with x64():
            W, label, progress = check_refit_inputs(weights, self.n_items, draw, statistic,
                                                    progress)
            post0, perm, data, pattern, group, gold = self._refit_data()
            alpha, beta = (None if self.details.get(k) is None
                           else jnp.asarray(self.details[k])
                           for k in ("prior_alpha", "prior_beta"))
            with ProgressBar(W.shape[0], label, enabled=progress):
                out = weighted_refits(
                    W, jnp.asarray(post0), jnp.asarray(perm, jnp.int32), data, alpha, beta,
                    jnp.asarray(pattern, jnp.int32), jnp.asarray(group, jnp.int32),
                    one_coin=CHANNELS[self.model],
                    max_iter=int(self.details.get("max_iter", 1000)),
                    tol=float(self.details.get("tol", 1e-8)), draw=draw,
                    statistic=statistic, args=jax.tree.map(jnp.asarray, args),
                    progress=progress,
                    gold=None if gold is None else jnp.asarray(gold, jnp.int32))
                out = jax.tree.map(np.asarray, out)
        return refit_result(out, weights, draw, int(data.n_items))

    def _refit_refusal(self) -> str:
        """Why this fit cannot be refitted ('' when it can)."""
        from .influence import CHANNELS

        if self.method != "em" or self.model not in CHANNELS:
            return ("refit refits Dawid-Skene-family channels by EM (dawid_skene, one_coin, "
                    f"grouped, class_conditional, mace); this fit is {self.model!r} by "
                    f"{self.method!r}")
        if self.details.get("gold") and self.details.get("gold_index") is None:
            return "the fit used gold labels but does not carry them (details['gold_index'])"
        if self.annotations is None:
            return "the fit does not carry the annotations it was fitted on"
        return ""

    def _refit_data(self) -> tuple:
        """The start (fitted posteriors in EM's latent labelling), ``latent_perm``, the EM
        data of the fit's ratings collapsed to rating patterns (within groups and gold
        classes: a gold item never shares a pattern with an item of another or no gold
        class), each item's pattern and group, and each pattern's gold class (-1: none;
        None for a fit without gold labels). Ratings sorted by item, then annotator."""
        from noisycal.models.dawid_skene import make_data

        from .patterns import collapse_patterns

        arr = self.annotations.engine_arrays()
        n, J, K = self.n_items, len(self.annotators), len(self.classes)
        L = int(self.details.get("groups", 1))
        group = self.details.get("group_index")
        group = np.zeros(n, np.int64) if group is None else np.asarray(group, np.int64)
        order = np.lexsort((arr.annotator, arr.item))
        item, annotator, label = (np.asarray(x, np.int64)[order]
                                  for x in (arr.item, arr.annotator, arr.label))
        # gold classes index the fit's classes as given to EM (the latent labelling the
        # original fit clamped them in), in the fit's item order
        gold = self.details.get("gold_index") if self.details.get("gold") else None
        gold = None if gold is None else np.asarray(gold, np.int64)
        extra = (group,) if gold is None else (group, gold)
        pattern, rep, _ = collapse_patterns(item, annotator * K + label, n, extra=extra)
        keep = np.isin(item, rep)
        pos = np.full(n, -1, np.int64)
        pos[rep] = np.arange(rep.size)
        # EM runs in the latent labelling of the original fit (where its priors apply); the
        # fit's classes are that labelling permuted by ``latent_perm``
        perm = np.asarray(self.details.get("latent_perm", np.arange(K)))
        post0 = np.asarray(self.item_posterior)[rep][:, np.argsort(perm)]
        data = make_data(pos[item[keep]], annotator[keep], label[keep], n_items=rep.size,
                         n_annotators=J, n_classes=K, group=group[rep], n_groups=L)
        return post0, perm, data, pattern, group, None if gold is None else gold[rep]

    def posterior_draws(self, level: float | None = None) -> Mapping[str, np.ndarray]:
        """The posterior draws of a NUTS fit, checked for an interval at ``level``.

        Parameters
        ----------
        level : float, optional
            An equal-tailed interval's level: refuse fewer draws than
            :func:`~noisycal.engines.density.diagnostics.min_credible_draws` at it (20
            at 0.9: each tail must hold a draw).

        Returns
        -------
        mapping
            ``draws``: ``{'prevalence': (n_draws, L, K), 'confusion': (n_draws, J, K,
            K), ...}``, chains concatenated.

        Raises
        ------
        NotOffered
            For a fit without posterior draws (EM's stored draws are bootstrap refits).
        ValueError
            With too few draws for ``level``.

        Examples
        --------
        >>> import numpy as np, noisycal as nc
        >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 3)
        >>> ann = nc.simulate.dawid_skene(300, [0.6, 0.4], conf, seed=0).annotations
        >>> try:
        ...     nc.DawidSkene(2).fit(ann).posterior_draws()
        ... except nc.exceptions.NotOffered as exc:
        ...     print(exc)
        posterior draws come from a NUTS fit; this fit is 'dawid_skene' by 'em'
        """
        if self.method != "nuts" or self.draws is None:
            raise NotOffered(f"posterior draws come from a NUTS fit; this fit is "
                             f"{self.model!r} by {self.method!r}")
        if level is not None:
            check_credible_draws(len(self.draws["confusion"]), check_level(level),
                                 "this NUTS fit")
        return self.draws

    # ------------------------------------------------------------------ derived
    @property
    def prevalence(self) -> np.ndarray:
        """Class proportions: (K,) for a marginal model, (n_groups, K) for a grouped one."""
        gp = self.group_prevalence
        return gp[0] if gp.shape[0] == 1 else gp

    @property
    def n_items(self) -> int:
        """Number of items fitted."""
        return int(self.item_posterior.shape[0])

    @property
    def aic(self) -> float:
        """Akaike information criterion, 2 p - 2 loglik."""
        return 2.0 * self.n_params - 2.0 * self.loglik

    @property
    def bic(self) -> float:
        """Bayesian information criterion, p log(n_items) - 2 loglik."""
        return self.n_params * np.log(self.n_items) - 2.0 * self.loglik

    @property
    def params(self) -> dict[str, np.ndarray]:
        """The point estimates by name (the same names for every method)."""
        return {"prevalence": self.group_prevalence, "confusion": self.confusion}

    # ------------------------------------------------------------------ tables
    def to_frame(self) -> pd.DataFrame:
        """Tidy table of every parameter entry.

        Columns: parameter, group, annotator, true, observed, value.
        """
        return parameter_frame(self)

    def conf_int(self, level: float = 0.9, *, n_boot: int | None = None,
                 seed: Seed | None = None) -> pd.DataFrame:
        """Equal-tailed intervals of every parameter.

        NUTS fits: credible intervals from the posterior draws. EM fits: percentile
        bootstrap intervals from ``draws`` when the fit stored them
        (``fit(..., method=EM(n_boot=...))``), else from ``n_boot`` refits computed now
        with ``seed`` (:meth:`bootstrap_draws`).

        Parameters
        ----------
        level : float, default=0.9
            A fraction in (0, 1).
        n_boot : int, default=1000
            Refits computed now; only for an EM fit without stored draws.
        seed : int or jax key, default=0
            Seed of those refits; only for an EM fit without stored draws.

        Returns
        -------
        DataFrame
            The ``to_frame`` columns plus ``low`` and ``high``; ``attrs`` hold the
            ``level`` and the interval ``kind``.

        Raises
        ------
        ValueError
            For a NUTS fit with fewer draws than
            :func:`~noisycal.engines.density.diagnostics.min_credible_draws` at ``level``.
        """
        level = check_level(level)
        draws = self.draws
        if draws is not None:
            for name, value in (("n_boot", n_boot), ("seed", seed)):
                if value is not None:
                    raise ValueError(f"{name} applies to refits computed now; this fit has "
                                     "stored draws, which conf_int uses")
        else:
            if self.bootstrap_refits is None:
                if self.method == "em":
                    raise ValueError("this EM fit has no stored draws and no refit (the "
                                     "refit is not kept when a fit is pickled): fit with "
                                     "n_boot > 0 to store bootstrap draws")
                raise ValueError(f"this {self.method!r} fit has no draws: use method='em' "
                                 "(bootstrap) or method='nuts' (posterior) for intervals")
            draws = self.bootstrap_draws(1000 if n_boot is None else n_boot,
                                         seed=0 if seed is None else seed)
        if self.method == "nuts":
            self.posterior_draws(level)  # enough draws for an interval at this level
        return parameter_intervals(self, draws, level)

    def summary(self, *, level: float = 0.9, loo: bool | None = None) -> Summary:
        """A statsmodels-like summary (never prints; ``print(fit.summary())`` does).

        Parameters
        ----------
        level : float, default=0.9
            Interval level of the tables (intervals only when the fit has draws).
        loo : bool, optional
            NUTS fits: compute ``elpd_loo`` when True; None shows it when it was
            computed already (:func:`noisycal.annotators.compare`); False never. True
            on a fit without posterior draws is a ``ValueError`` naming ``loo``.

        Returns
        -------
        Summary
            ``.header`` (dict: model, method, sizes, loglik, AIC/BIC or elpd_loo,
            status, message), ``.tables`` (prevalence and per-annotator accuracy, with
            intervals and, for NUTS, R-hat and ESS), ``str()`` the printed report; see
            :func:`noisycal.engines.summary.fit_summary`. The full parameter table is
            :meth:`to_frame` (:meth:`conf_int` with intervals).
        """
        return fit_summary(self, level=level, loo=loo)

    def to_arviz(self, *, seed: Seed = 0, predictive: bool = True) -> Any:
        """ArviZ InferenceData with the same parameter names as every other method.

        NUTS fits keep (chain, draw) and fill every group ArviZ's checks need
        (``sample_stats``, per-item ``log_likelihood``, ``posterior_predictive``,
        ``observed_data``; see :mod:`noisycal.engines.density.arviz_export`), so ``az.loo``,
        ``az.waic``, ``az.compare``, ``az.plot_energy`` and ``az.plot_ppc`` apply. EM
        fits give the posterior group only: one chain of the bootstrap refits (or a
        single draw of the point estimate when there are none).

        Parameters
        ----------
        seed : int or jax key, default=0
            NUTS fits: randomness of the replicated ratings.
        predictive : bool, default=True
            NUTS fits: add ``posterior_predictive`` (``n_draws * n_ratings`` integers).
        """
        if not isinstance(predictive, bool | np.bool_):
            raise ValueError(f"predictive must be True or False, got {predictive!r}")
        seed = check_seed(seed)
        from .density.arviz_export import annotator_inference_data, em_inference_data

        if self.method == "nuts" and "chains" in self.details:
            return annotator_inference_data(self, seed=seed, predictive=bool(predictive))
        return em_inference_data(self)

    def predict(self, annotations: Any, groups: Any = None) -> np.ndarray:
        """P(true class | ratings) for new items under the point estimates.

        Parameters
        ----------
        annotations : Annotations
            Ratings of the new items (see :func:`predict`).
        groups : array-like of int, optional
            Group index of each new item; required for grouped fits (more than one
            group).
        """
        return predict(self, annotations, groups)

    def match(self, annotations: Any, *, items: str = "any",
              groups: ArrayLike | None = None) -> RatingMatch:
        """Where the ratings of ``annotations`` sit in this fit (the one boundary).

        Annotators are matched to the fit's channels by id (a subset allowed; with
        channels per group, each rating takes its annotator's channel in its item's
        group), classes by name (the fit's class set, any order), items by id; anything
        unknown is refused by name (:func:`noisycal.annotations.matching.match_ratings`).

        Parameters
        ----------
        annotations : Annotations
        items : {'any', 'fitted'}, default='any'
            'fitted': every item must be one the fit was fitted on.
        groups : array-like of int, optional
            Each item's group code, for items the fit was not fitted on.

        Returns
        -------
        RatingMatch
            Each rating's channel and class code in the fit, and where the annotations'
            annotators, classes and items sit in it.
        """
        return match_ratings(annotations, fit_ids(self), items=items, groups=groups)

    def __repr__(self) -> str:
        status = (f"statuses={self.statuses!r}" if len(self.statuses) > 1
                  else f"status={self.status!r}")
        return (f"AnnotatorFit(model={self.model!r}, method={self.method!r}, "
                f"n_items={self.n_items}, {status}, loglik={self.loglik:.4f})")

    def _repr_html_(self) -> str:
        """HTML view for notebooks: sizes, fit statistics, status, prevalence, channels."""
        return fit_html(self)


def predict(fit: AnnotatorFit, annotations: Any, groups: ArrayLike | None = None
            ) -> np.ndarray:
    """P(true class | ratings) for new items, using a fit's point estimates.

    Parameters
    ----------
    fit : AnnotatorFit
        A Dawid–Skene family fit with finite estimates.
    annotations : Annotations
        Ratings of the new items, read by :meth:`AnnotatorFit.match`: the fit's classes
        (in any order: labels are matched by name) and a subset of its annotators
        (matched by id; for channels per group, each rating takes its annotator's
        channel in its item's group).
    groups : array-like of int, optional
        Grouped fits: each new item's group as an index into the fitted groups;
        required when the fit has more than one group.

    Returns
    -------
    ndarray of shape (n_new_items, K)
        Columns in the fit's class order (``fit.classes``).

    Raises
    ------
    ValueError
        Naming ``fit`` (no finite estimates), ``annotations`` (an annotator or class the
        fit does not know) or ``groups``.
    """
    import jax.numpy as jnp

    from noisycal.models.dawid_skene import make_data

    from .em.dawid_skene import e_step

    check_fit(fit, "predict")
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations, got "
                         f"{type(annotations).__name__}")
    L = fit.group_prevalence.shape[0]
    g = _group_codes(groups, annotations.n_items, L)
    m = fit.match(annotations, groups=g if L > 1 else None)
    with x64():
        data = make_data(m.item, m.channel, m.label, n_items=annotations.n_items,
                         n_annotators=len(fit.annotators), n_classes=len(fit.classes),
                         group=g, n_groups=L)
        post, _ = e_step(jnp.asarray(fit.group_prevalence), jnp.asarray(fit.confusion),
                         data, None)
        return np.asarray(post)


def check_fit(fit: Any, purpose: str) -> AnnotatorFit:
    """``fit`` when it is an :class:`AnnotatorFit` with finite estimates.

    Parameters
    ----------
    fit : AnnotatorFit
    purpose : str
        What the fit is checked for, named in the error (``'predict'``).

    Returns
    -------
    AnnotatorFit

    Raises
    ------
    ValueError
        Naming ``fit``.
    """
    if not isinstance(fit, AnnotatorFit):
        raise ValueError(f"fit must be an AnnotatorFit, got {type(fit).__name__}")
    if not (np.all(np.isfinite(fit.group_prevalence)) and np.all(np.isfinite(fit.confusion))):
        raise ValueError(f"fit has no finite estimates (status {fit.status!r}); it cannot "
                         f"{purpose}")
    return fit


def fit_ids(fit: AnnotatorFit) -> FitIds:
    """What a fit knows of its data, as the plain arrays :func:`match_ratings` reads.

    Parameters
    ----------
    fit : AnnotatorFit

    Returns
    -------
    FitIds
        The fit's annotators (channels), classes and items; each item's group
        (``details['group_index']``) for a fit with several groups; for channels per
        (annotator, group) the annotator and group behind each channel
        (``details['channel_annotators']``, ``details['channel_groups']``); and the
        fitted ratings in these codes when the fit carries its annotations.
    """
    det = fit.details
    n = len(fit.items)
    gi = det.get("group_index")
    several = fit.group_prevalence.shape[0] > 1 or "channel_groups" in det
    groups = np.asarray(gi) if several and gi is not None and len(gi) == n else None
    ratings = None
    own = fit.annotations
    if own is not None:  # in the fit's codes (the same id arrays, unless rebuilt)
        mapped = [index if np.array_equal(ids, ref) else positions(ids, ref)[index]
                  for ids, ref, index in ((own.items, fit.items, own.item_index),
                                          (own.annotators, fit.annotators,
                                           own.annotator_index),
                                          (own.classes, fit.classes, own.label_index))]
        if all(np.all(m >= 0) for m in mapped):
            ratings = tuple(mapped)
    chan = "channel_annotators" in det and "channel_groups" in det
    return FitIds(fit.annotators, fit.classes, fit.items, item_groups=groups,
                  channel_annotators=det["channel_annotators"] if chan else None,
                  channel_groups=det["channel_groups"] if chan else None, ratings=ratings)


def _group_codes(groups: ArrayLike | None, n_items: int, L: int) -> np.ndarray:
    """Validated group indices 0..L-1 of new items (zeros when not given and L == 1)."""
    if groups is None:
        if L > 1:
            raise ValueError(f"groups is required: the fit has {L} groups, so each of the "
                             f"{n_items} new items needs its group index in 0..{L - 1}")
        return np.zeros(n_items, np.int32)
    g = np.asarray(groups)
    if g.shape != (n_items,) or g.dtype.kind not in "iu" or g.min() < 0 or g.max() >= L:
        raise ValueError(f"groups must give each of the {n_items} new items an integer group "
                         f"index in 0..{L - 1}, got {g.dtype} values of shape {g.shape}")
    return g.astype(np.int32)


def _check_weights(weights: ArrayLike, n_items: int) -> Any:
    """Refit weights as a float64 (B, n_items) array, a JAX array left on its device;
    ValueError naming ``weights``."""
    import jax
    import jax.numpy as jnp

    xp = jnp if isinstance(weights, jax.Array) else np
    try:
        W = xp.asarray(weights, dtype=xp.float64)
    except (TypeError, ValueError):
        W = None
    if W is None or W.ndim not in (1, 2) or W.shape[-1] != n_items or W.size == 0:
        raise ValueError(f"weights must be an array of item weights of shape (B, {n_items}) "
                         f"or ({n_items},), got {getattr(weights, 'shape', type(weights))}")
    W = xp.atleast_2d(W)
    if not bool(xp.all(xp.isfinite(W)) & xp.all(W >= 0)):
        raise ValueError("weights must be finite and non-negative")
    if not bool(xp.all(W.sum(axis=1) > 0)):
        raise ValueError("weights: every replicate (row) needs a positive sum")
    return W


def check_refit_inputs(weights: ArrayLike, n_items: int, draw: Any, statistic: Any,
                       progress: bool | str) -> tuple[Any, str, bool]:
    """The checks of :meth:`AnnotatorFit.refit` on its arguments, made there and by the
    fit classes that run their own refit loop
    (:meth:`noisycal.annotators.ClassifierInformedFit.refit`,
    :meth:`noisycal.annotators.GLADFit.refit`).

    Call it under ``x64``.

    Parameters
    ----------
    weights : array-like
        ``refit``'s ``weights``.
    n_items : int
        The fitted items.
    draw, statistic : callable or None
    progress : bool or str

    Returns
    -------
    weights, label, progress
        The weights as (B, n_items) float64 (without ``draw``; as given with it), the
        progress bar's label and whether to show it.

    Raises
    ------
    ValueError
        Naming ``weights``, ``draw``, ``statistic`` or ``progress``.
    """
    from .._util.progress import check_progress

    label = progress if isinstance(progress, str) else "EM refits"
    progress = bool(progress) if isinstance(progress, str) else check_progress(progress)
    for name, f in (("draw", draw), ("statistic", statistic)):
        if f is not None and not callable(f):
            raise ValueError(f"{name} must be callable, got {type(f).__name__}")
    if draw is None:
        return _check_weights(weights, n_items), label, progress
    if not getattr(weights, "shape", None) or weights.shape[0] < 1:
        raise ValueError("weights: with draw=, an array with one row per replicate "
                         f"(what draw makes the weights from), got {weights!r}")
    return weights, label, progress


def refit_result(out: tuple, weights: Any, draw: Any, n_patterns: int) -> ChannelRefits:
    """The :class:`ChannelRefits` of a refit loop's stacked output, without the leading
    axis for 1-D ``weights`` (as :meth:`AnnotatorFit.refit` promises).

    Parameters
    ----------
    out : tuple
        ``(statistic, converged, confusion, n_iter, prevalence, group_prevalence)``,
        stacked over the replicates (NumPy arrays; ``statistic`` a pytree or None).
    weights : array-like
        ``refit``'s ``weights``.
    draw : callable or None
        ``refit``'s ``draw``.
    n_patterns : int
        The rating patterns (or items) the refits ran on.

    Returns
    -------
    ChannelRefits
    """
    import jax

    if draw is None and np.ndim(weights) == 1:
        out = jax.tree.map(lambda x: x[0], out)
    stat, converged, confusion, n_iter, prevalence, group_prevalence = out
    return ChannelRefits(group_prevalence, prevalence, confusion, converged, n_iter, stat,
                         n_patterns)
