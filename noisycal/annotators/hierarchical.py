"""Hierarchical Dawid–Skene: annotator channels partially pooled, fitted by NUTS.

Model object -> ``fit(annotations, method=NUTS(...))`` ->
:class:`~noisycal.engines.results.AnnotatorFit`, like :class:`~noisycal.DawidSkene`. The
NumPyro model is :func:`noisycal.models.hierarchical.hierarchical_dawid_skene`; the
sampler, the rating-pattern collapsing, the label-switching guard and the chain
diagnostics are those of Dawid–Skene NUTS (:mod:`noisycal.engines.density.dawid_skene`).

References
----------
Pullin, J., Gurrin, L. and Vukcevic, D. (2023). "Statistical Models of Repeated
Categorical Ratings: The R Package rater". The R Journal 15(3).
Paun, S. et al. (2018). "Comparing Bayesian Models of Annotation". TACL 6, 571-585.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

import jax

from .._util.jax import as_key, x64
from .._util.progress import check_progress
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_real, check_seed
from ..annotations.core import Annotations
from ..engines.density.dawid_skene import (
    NUTSDraws,
    chain_diagnostics,
    sample_dawid_skene,
)
from ..engines.density.diagnostics import import_arviz
from ..engines.density.nuts import extended_fit
from ..engines.em.starts import multistart_em
from ..engines.identification import NUTS_NOTE
from ..engines.methods import NUTS, Method, as_method
from ..engines.patterns import pattern_data
from ..engines.results import AnnotatorFit
from .dawid_skene import DawidSkene, check_fit_size

__all__ = ["HierarchicalDawidSkene", "CENTERED_MIN_RATINGS_PER_CLASS"]

#: ``centered='auto'``: an annotator with at least this many ratings per class (``n_j >=
#: CENTERED_MIN_RATINGS_PER_CLASS * K`` ratings) is centred, the others non-centred
#: (measured, see :class:`HierarchicalDawidSkene`'s Notes).
CENTERED_MIN_RATINGS_PER_CLASS = 500


class HierarchicalDawidSkene(DawidSkene):
    """Hierarchical Dawid–Skene: confusion rows partially pooled around a population.

    Each annotator's confusion row ``k`` is ``softmax(mu[k] + sigma[k] * dev[j, k])``:
    population log-odds ``mu[k]``, a spread ``sigma[k]`` of that row across annotators
    and a standardised deviation of each annotator (non-centred, softmax identified by a
    sum-to-zero constraint; see :mod:`noisycal.models.hierarchical`). An annotator with
    few ratings is shrunk toward the population channel instead of toward a fixed prior,
    as in the hierarchical model of "Statistical Models of Repeated Categorical Ratings:
    The R Package rater" and "Comparing Bayesian Models of Annotation". Fitted by NUTS
    only.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes K; checked against the annotations' class set when given.
    alpha : array-like of shape (K,), optional
        Dirichlet prior on the prevalence (default 3 for every class).
    mu_diag, mu_off : float, default=2.0, 0.0
        Prior means of the population log-odds of a correct and of a wrong label
        (before centring each row); rater's values.
    mu_scale : float, default=1.0
        Prior sd of the population log-odds.
    sigma_scale : float, default=1.0
        Scale of the half-normal prior on each row's spread across annotators.
    centered : {False, True, 'auto'}, default=False
        How NUTS sees the annotator deviations; the model (and so the posterior) is the
        same. False: non-centred, ``softmax(mu[k] + sigma[k] * dev[j, k])`` with
        standardised ``dev``, which suits annotators with few ratings. True: centred,
        each annotator's log-odds drawn around ``mu[k]`` with sd ``sigma[k]``, which
        suits annotators with many ratings (the likelihood then pins them down and the
        non-centred form couples ``dev`` and ``sigma``). 'auto': annotator by
        annotator, centred when it has at least
        ``CENTERED_MIN_RATINGS_PER_CLASS * K`` ratings (500 per class), non-centred
        otherwise ("A General Framework for the Parametrization of Hierarchical
        Models"; "Hamiltonian Monte Carlo for Hierarchical Models"). The choice and the
        threshold are in the fit's ``details['parametrisation']``.

    Notes
    -----
    The 'auto' threshold is measured, not derived: K = 2, 5 annotators rating every
    item, population spread 0.5, 2 chains of 300 + 300 draws, 2-3 seeds per size. With
    40 to 200 ratings per annotator the centred form diverged (16 to 101 divergent
    transitions) and had a lower bulk ESS than the non-centred one; with 400 it won on
    one seed and diverged on the other; with 1000 and 2000 it had 2 to 4 times the
    smallest bulk ESS (290-440 against 65-170) in 3 to 9 times fewer leapfrog steps per
    draw. A centred annotator needs a likelihood much sharper than the population
    spread, and a row's log-odds are only as sharp as its ratings are many.

    Examples
    --------
    >>> import noisycal as nc
    >>> ann = nc.datasets.load_dawid_skene_1979()
    >>> model = nc.annotators.HierarchicalDawidSkene(n_classes=4, centered="auto")
    >>> model.centered_annotators(ann)  # 45 patients, 5 annotators: too few ratings
    array([False, False, False, False, False])
    >>> fit = model.fit(
    ...     ann, method=nc.engines.NUTS(num_chains=2, num_warmup=100, num_samples=100),
    ...     seed=0)  # doctest: +SKIP
    >>> fit.to_arviz().posterior["population_confusion"].dims  # doctest: +SKIP
    ('chain', 'draw', 'true', 'observed')
    >>> fit.summary().table("population")  # doctest: +SKIP
    """

    _model = "hierarchical_dawid_skene"
    _engines = (NUTS,)

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 mu_diag: float = 2.0, mu_off: float = 0.0, mu_scale: float = 1.0,
                 sigma_scale: float = 1.0, centered: bool | str = False) -> None:
        self.n_classes = n_classes
        self.alpha = alpha
        self.beta = None
        self.mu_diag = mu_diag
        self.mu_off = mu_off
        self.mu_scale = mu_scale
        self.sigma_scale = sigma_scale
        self.centered = centered

    def _n_params(self, K: int, J: int, L: int) -> int:
        # population parameters: prevalence, population log-odds, row spreads (the
        # annotator deviations are random effects, not counted)
        return L * (K - 1) + K * (K - 1) + K

    def _prior_kwargs(self, K: int) -> dict:
        """The validated prior constants as model keyword arguments."""
        alpha = np.full(K, 3.0) if self.alpha is None else check_array(self.alpha, "alpha",
                                                                      ndim=1)
        if alpha.shape != (K,) or np.any(alpha <= 0):
            raise ValueError(f"alpha must be positive with shape ({K},), got {alpha.shape} "
                             f"with min {alpha.min():g}")
        return {"alpha": alpha, "mu_diag": check_real(self.mu_diag, "mu_diag"),
                "mu_off": check_real(self.mu_off, "mu_off"),
                "mu_scale": check_real(self.mu_scale, "mu_scale", minimum=0.0, strict=True),
                "sigma_scale": check_real(self.sigma_scale, "sigma_scale", minimum=0.0,
                                          strict=True)}

    def centered_annotators(self, annotations: Annotations) -> np.ndarray:
        """Which annotators the ``centered`` option samples in the centred form.

        Parameters
        ----------
        annotations : Annotations

        Returns
        -------
        ndarray of bool, shape (n_annotators,)
            In the annotations' annotator order: all False (``centered=False``), all
            True (``centered=True``), or, for 'auto', True where the annotator has at
            least ``CENTERED_MIN_RATINGS_PER_CLASS * n_classes`` ratings.

        Raises
        ------
        ValueError
            When ``centered`` is not False, True or 'auto'.

        Examples
        --------
        >>> import numpy as np
        >>> import noisycal as nc
        >>> items = np.r_[np.arange(1000), 0]  # annotator 'a' rates 1000 items, 'b' one
        >>> ann = nc.Annotations.from_arrays(items, ["a"] * 1000 + ["b"], items % 2)
        >>> nc.annotators.HierarchicalDawidSkene(centered="auto").centered_annotators(ann)
        array([ True, False])
        """
        c = self.centered
        if not (isinstance(c, bool | np.bool_) or (isinstance(c, str) and c == "auto")):
            raise ValueError(f"centered must be False, True or 'auto', got {c!r}")
        if not isinstance(annotations, Annotations):
            raise ValueError("annotations must be an Annotations object, got "
                             f"{type(annotations).__name__}")
        J = annotations.n_annotators
        if c != "auto":
            return np.full(J, bool(c))
        n_j = np.bincount(annotations.engine_arrays().annotator, minlength=J)
        return n_j >= CENTERED_MIN_RATINGS_PER_CLASS * annotations.n_classes

    def fit(self, annotations: Annotations, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None,
            anchor: object = None, seed: Seed = 0, progress: bool = False) -> AnnotatorFit:
        """Sample the posterior with NUTS.

        Parameters
        ----------
        annotations : Annotations
        method : NUTS object or 'nuts', optional
            The only engine (a point estimate of a hierarchical model's joint mode is
            not a useful summary), with its settings; default ``NUTS()``. Its
            ``rhat_threshold`` judges every site (prevalence, channels, population
            log-odds and spreads, after relabelling).
        groups : None
            Refused: the model has one prevalence for every item (use
            :class:`~noisycal.GroupedDawidSkene` for item groups).
        gold : dict, optional
            Known true classes ``{item id: class label}``: those items enter the
            likelihood with their class, and their posteriors are clamped.
        anchor : annotator id, optional
            Two classes: name the latent classes (the starting fit and every draw) so
            that this annotator has a positive gap ``b - a``; None (default): by the
            majority vote.
        seed : int or jax key, default=0
            The starting fit (MAP-EM of plain Dawid–Skene) and the chains.
        progress : bool, default=False
            A bar on stderr over the NUTS transitions.

        Returns
        -------
        AnnotatorFit
            ``model='hierarchical_dawid_skene'``, ``method='nuts'``, ``engine`` the NUTS
            object; ``draws`` hold ``prevalence`` and ``confusion`` (every annotator's
            channel); the population is in ``details['population']``: ``mu`` (n_draws,
            K, K), the centred population log-odds, ``sigma`` (n_draws, K), the row
            spreads, and ``confusion`` (n_draws, K, K), ``softmax(mu[k])``, the channel of
            an annotator with zero deviation (a typical annotator, not the mean of the
            annotators' channels). The population draws are in ``to_arviz()``'s
            posterior as ``population_mu`` (true, observed), ``population_sigma`` (true)
            and ``population_confusion`` (true, observed), and in ``summary()``'s
            'population' table (mean, sd, interval, R-hat, ESS);
            ``details['population_max_rhat']`` and ``details['population_min_ess_bulk']``
            are theirs, and ``max_rhat``/``min_ess_bulk`` (hence the status) include
            them. ``details['parametrisation']``: ``centered`` (bool per annotator),
            ``option`` (the ``centered`` argument), ``ratings`` per annotator,
            ``min_ratings`` (the 'auto' threshold for this K) and ``rule``.
            ``n_params`` counts the population parameters only.
            The status is 'not_converged' when the largest R-hat is above the threshold
            or a transition diverged; 'diagnostics_unavailable' without R-hat.
        """
        try:
            nuts = as_method(method, self._engines, where=type(self).__name__)
        except ValueError as exc:
            raise ValueError(f"{exc}: a point estimate of a hierarchical model's joint mode "
                             "is not a useful summary") from None
        progress = check_progress(progress)
        if groups is not None:
            raise ValueError("groups= is for GroupedDawidSkene; HierarchicalDawidSkene has "
                             "one prevalence for every item")
        ann, _, _ = self._check(annotations, None)
        K, J = ann.n_classes, ann.n_annotators
        check_fit_size(ann, nuts)
        centered = self.centered_annotators(ann)
        orientation, anchor = self._anchor(ann, anchor, nuts)
        seed = check_seed(seed)
        priors = self._prior_kwargs(K)
        gold_idx = self._gold(ann, gold)
        if J == 1:
            return self._not_identified(ann, nuts, "one annotator: the channel and the "
                                        "prevalence are not identified")
        return extended_fit(lambda engine: self._fit_hierarchical(
            ann, priors, gold_idx, engine, seed=seed, orientation=orientation, anchor=anchor,
            progress=progress, centered=centered), nuts)

    def _fit_hierarchical(self, ann: Annotations, priors: dict, gold: np.ndarray | None,
                          nuts: NUTS, *, seed: Seed, orientation: str, anchor: int,
                          progress: bool, centered: np.ndarray) -> AnnotatorFit:
        from noisycal.models.dawid_skene import default_priors
        from noisycal.models.hierarchical import hierarchical_dawid_skene

        K, J = ann.n_classes, ann.n_annotators
        k_em, k_nuts = jax.random.split(as_key(seed))
        # chains start at plain Dawid–Skene MAP-EM (Stan User's Guide priors), mapped
        # to the hierarchical parameters
        em = multistart_em(ann, None, 1, priors["alpha"], default_priors(K)[1], gold,
                           one_coin=False, init="mixed", n_starts=4, max_iter=1000,
                           tol=1e-8, rng_key=k_em, orientation=orientation, anchor=anchor)
        arr = ann.engine_arrays()
        with x64():
            pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                               n_annotators=J, n_classes=K, group=None, n_groups=1,
                               gold=gold)
        vote = np.asarray(ann.majority_vote(tie="lowest"))[pd_.representative]
        data = pd_.data
        mk = dict(n_items=data.n_items, n_annotators=J, n_classes=K,
                  alpha=np.asarray(priors["alpha"]),
                  **{k: v for k, v in priors.items() if k != "alpha"},
                  gold=None if pd_.gold is None else np.asarray(pd_.gold),
                  weights=np.asarray(pd_.counts, np.float64))
        if centered.any():  # a tuple of bools: a static input of the compiled sampler
            mk["centered"] = tuple(bool(c) for c in centered)
        nd = sample_dawid_skene(
            data, vote, mk, _init_params(em.prevalence, em.confusion, centered),
            gold=pd_.gold,
            seed=k_nuts, progress_bar=progress, **nuts.sampler(), orientation=orientation,
            anchor=anchor, weights=pd_.counts, pattern=pd_.pattern,
            model=hierarchical_dawid_skene)
        diag = chain_diagnostics(nd, orientation, stacklevel=4)
        population = _relabelled_population(nd)
        diag = _with_population_diagnostics(diag, population)
        n_j = np.bincount(arr.annotator, minlength=J)
        param = {"centered": centered, "option": self.centered, "ratings": n_j,
                 "min_ratings": CENTERED_MIN_RATINGS_PER_CLASS * K,
                 "rule": f"'auto' centres an annotator with at least "
                         f"{CENTERED_MIN_RATINGS_PER_CLASS} ratings per class "
                         f"({CENTERED_MIN_RATINGS_PER_CLASS * K} for K={K})"}
        prev_d, conf_d = nd.prevalence.reshape(-1, 1, K), nd.confusion.reshape(-1, J, K, K)
        status, message, chan, statuses = self._nuts_status(ann, 1, diag, nuts,
                                                            conf_d.mean(0), nd.post)
        flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in population.items()}
        flat["confusion"] = softmax(flat["mu"], axis=-1)  # float64, on the host
        return self._result(
            ann, "nuts", prev_d.mean(0), conf_d.mean(0), nd.post, nd.loglik, status,
            message, status == "ok", nuts.num_warmup + nuts.num_samples,
            {"prevalence": prev_d, "confusion": conf_d},
            {"chains": nuts.num_chains, "max_rhat": diag["max_rhat"],
             "min_ess_bulk": diag["min_ess_bulk"],
             "population_max_rhat": diag["population_max_rhat"],
             "population_min_ess_bulk": diag["population_min_ess_bulk"],
             "num_divergences": diag["num_divergences"],
             "relabelled_chains": diag["switched"], "groups": 1,
             "group_index": np.zeros(ann.n_items, np.int64), "gold": gold is not None,
             "channels": chan, "sample_stats": nd.sample_stats, "population": flat,
             "priors": priors, "n_patterns": int(data.n_items), "parametrisation": param,
             "arviz": {"posterior": _population_posterior},
             "identification": {"checked": False, "reason": NUTS_NOTE}}, engine=nuts,
            statuses=statuses)


def _init_params(prevalence: np.ndarray, confusion: np.ndarray,
                 centered: np.ndarray | None = None) -> dict:
    """Starting values of the hierarchical model's sites from Dawid–Skene channels.

    The channels are floored at 1e-4 and renormalised; their log-odds, written in the
    sum-to-zero basis, give ``mu_free`` (their mean over annotators), ``sigma`` (the
    root mean square deviation of each row, at least 0.1) and ``z`` (the standardised
    deviations, clipped to [-4, 4]; for a centred annotator the log-odds themselves,
    ``mu_free + sigma * z``).

    Parameters
    ----------
    prevalence : (1, K)
    confusion : (J, K, K)
    centered : bool array of shape (J,), optional
        The centred annotators (none by default).

    Returns
    -------
    dict
        ``prevalence``, ``mu_free``, ``sigma``, ``z`` (constrained values).
    """
    from noisycal.models.hierarchical import sum_to_zero_basis

    K = confusion.shape[-1]
    conf = np.clip(confusion, 1e-4, None)
    conf /= conf.sum(-1, keepdims=True)
    prev = np.clip(prevalence, 1e-4, None)
    prev /= prev.sum(-1, keepdims=True)
    e = np.log(conf) @ sum_to_zero_basis(K)  # (J, K, K-1); B^T 1 = 0 drops the constant
    mu_free = e.mean(0)
    dev = e - mu_free
    sigma = np.maximum(np.sqrt((dev ** 2).mean(axis=(0, 2))), 0.1)
    z = np.clip(dev / sigma[None, :, None], -4.0, 4.0)
    if centered is not None and np.any(centered):
        z = np.where(np.asarray(centered)[:, None, None], mu_free + sigma[:, None] * z, z)
    return {"prevalence": prev, "mu_free": mu_free, "sigma": sigma, "z": z}


def _relabelled_population(nd: NUTSDraws) -> dict:
    """The population draws (C, S, ...) under the relabelling of the channel draws.

    A relabelling renames the latent (true) class: rows of ``mu`` and entries of
    ``sigma`` move with it, the observed-label columns do not.
    """
    perms = nd.perms  # (C, S, K)
    mu = np.take_along_axis(nd.sites["mu"], perms[..., None], axis=2)
    sigma = np.take_along_axis(nd.sites["sigma"], perms, axis=2)
    return {"mu": mu, "sigma": sigma}


def _with_population_diagnostics(diag: dict, population: dict) -> dict:
    """R-hat and bulk ESS over the population draws too (the spreads mix slowest)."""
    az = import_arviz()
    idata = az.from_dict(posterior=population)
    rhat = np.concatenate([np.ravel(v.values) for v in az.rhat(idata).data_vars.values()])
    ess = np.concatenate([np.ravel(v.values) for v in az.ess(idata).data_vars.values()])
    out = dict(diag)
    rhat, ess = rhat[np.isfinite(rhat)], ess[np.isfinite(ess)]
    out["population_max_rhat"] = float(rhat.max()) if rhat.size else float("nan")
    out["population_min_ess_bulk"] = float(ess.min()) if ess.size else float("nan")
    r = np.append(rhat, diag["max_rhat"])
    e = np.append(ess, diag["min_ess_bulk"])
    out["max_rhat"] = float(np.nanmax(r)) if np.any(np.isfinite(r)) else float("nan")
    out["min_ess_bulk"] = float(np.nanmin(e)) if np.any(np.isfinite(e)) else float("nan")
    return out


def _population_posterior(fit: AnnotatorFit) -> dict:
    """The population draws of a hierarchical fit as extra ArviZ posterior variables.

    The ``details['arviz']['posterior']`` hook of the fit
    (:func:`noisycal.engines.density.arviz_export.annotator_inference_data` and the
    summary's 'population' table read it).

    Parameters
    ----------
    fit : AnnotatorFit
        A NUTS fit of :class:`HierarchicalDawidSkene`.

    Returns
    -------
    dict of str to (ndarray, tuple of str)
        ``population_mu`` (n_draws, K, K), the centred population log-odds, dims
        ('true', 'observed'); ``population_sigma`` (n_draws, K), each row's spread
        across annotators, dims ('true',); ``population_confusion`` (n_draws, K, K),
        ``softmax(population_mu)``, dims ('true', 'observed').
    """
    pop = fit.details["population"]
    return {"population_mu": (pop["mu"], ("true", "observed")),
            "population_sigma": (pop["sigma"], ("true",)),
            "population_confusion": (pop["confusion"], ("true", "observed"))}

