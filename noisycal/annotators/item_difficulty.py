"""The item-difficulty annotator model, fitted by NUTS.

Model object -> ``fit(annotations, method=NUTS(...))`` ->
:class:`~noisycal.engines.results.AnnotatorFit` with ``model='item_difficulty'``. The
NumPyro model and its likelihood are :mod:`noisycal.models.item_difficulty`; the sampler
is :func:`noisycal.engines.density.nuts.sample_nuts` (its compiled programs are cached, so refits
on data of the same shapes compile nothing).

References
----------
Paun, S., Carpenter, B., Chamberlain, J., Hovy, D., Kruschwitz, U. and Poesio, M.
(2018). "Comparing Bayesian Models of Annotation". Transactions of the ACL 6, 571-585.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._util.jax import as_key, x64
from .._util.progress import check_progress
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_real, check_seed
from ..annotations.core import Annotations
from ..engines.checks import channel_status
from ..engines.density.diagnostics import convergence_status, diagnostics_table
from ..engines.density.nuts import extended_fit, sample_nuts
from ..engines.identification import NUTS_NOTE
from ..engines.methods import NUTS, Method, as_method
from ..engines.relabel import hungarian_perm
from ..engines.results import AnnotatorFit, every_status
from ..exceptions import ConvergenceWarning, IdentifiabilityWarning
from .dawid_skene import DawidSkene, check_fit_size

__all__ = ["ItemDifficultyModel", "item_loglik", "replicate_item_ratings"]

#: Sites whose R-hat and ESS decide convergence (the per-item difficulties included).
DIAGNOSED = ("prevalence", "mu_ability", "sigma_ability", "sigma_difficulty", "ability",
             "difficulty")


def _data(ann: Annotations) -> Any:
    from noisycal.models.dawid_skene import make_data

    arr = ann.engine_arrays()
    with x64():
        return make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                         n_annotators=arr.n_annotators, n_classes=arr.n_classes,
                         slots=False)


def _per_draw(fn: Any, draws: dict, data: Any, batch_size: int = 64) -> np.ndarray:
    """``fn(params, data)`` mapped over D draws of prevalence, ability and difficulty."""
    with x64():
        xs = tuple(jnp.asarray(np.asarray(draws[k]), jnp.float64)
                   for k in ("prevalence", "ability", "difficulty"))
        out = jax.lax.map(lambda p: fn({"prevalence": p[0], "ability": p[1],
                                        "difficulty": p[2]}, data), xs,
                          batch_size=batch_size)
        return np.asarray(out)


def _posteriors(params: dict, data: Any, gold: np.ndarray | None = None) -> jax.Array:
    """Item posteriors; an item with a known class (``gold >= 0``) is clamped to it."""
    from noisycal.models.item_difficulty import joint_log_likelihood

    post = jax.nn.softmax(joint_log_likelihood(params, data), axis=1)
    if gold is None:
        return post
    known = jnp.asarray(gold) >= 0
    onehot = jax.nn.one_hot(jnp.where(known, jnp.asarray(gold), 0), data.n_classes,
                            dtype=post.dtype)
    return jnp.where(known[:, None], onehot, post)


def _item_ll(params: dict, data: Any, gold: np.ndarray | None = None) -> jax.Array:
    from noisycal.models.dawid_skene import item_log_likelihood
    from noisycal.models.item_difficulty import joint_log_likelihood

    return item_log_likelihood(joint_log_likelihood(params, data),
                               None if gold is None else jnp.asarray(gold))


def _flat_draws(fit: AnnotatorFit) -> dict:
    d = fit.details
    return {"prevalence": np.asarray(fit.draws["prevalence"])[:, 0],
            "ability": d["ability_draws"], "difficulty": d["difficulty_draws"]}


def item_loglik(fit: AnnotatorFit) -> np.ndarray:
    """Each item's log-likelihood under each posterior draw, shape (n_draws, n_items).

    The true class is marginalised (taken at its known class for a gold item) and the
    item's own difficulty draw used (the pointwise log-likelihood of ``az.loo``: one
    item, all its ratings, left out).

    Parameters
    ----------
    fit : AnnotatorFit
        A NUTS fit of :class:`ItemDifficultyModel`, with its annotations.
    """
    return _per_draw(partial(_item_ll, gold=fit.details.get("gold_index")), _flat_draws(fit),
                     _data(fit.annotations))


def replicate_item_ratings(fit: AnnotatorFit, rng_key: Any) -> np.ndarray:
    """Ratings replicated on the observed design, one set per draw, shape (D, n_ratings).

    Each item keeps its difficulty draw and gets a fresh true class; each rating is
    drawn from the model's simulation branch (``label=None``) at the draw.

    Parameters
    ----------
    fit : AnnotatorFit
    rng_key : jax key
    """
    from numpyro.infer import Predictive

    from noisycal.models.item_difficulty import item_difficulty

    d, arr = fit.details, fit.annotations.engine_arrays()
    # the drawn abilities and difficulties through the model's non-centred sites:
    # ability = 0 + sigma_ability * raw, difficulty = sigma_difficulty * raw
    sa = np.asarray(d["sigma_ability_draws"])[:, None]
    sd = np.asarray(d["sigma_difficulty_draws"])[:, None]
    post = {"prevalence": np.asarray(fit.draws["prevalence"])[:, 0],
            "mu_ability": np.zeros(sa.shape[0]), "sigma_ability": sa[:, 0],
            "sigma_difficulty": sd[:, 0], "ability_raw": np.asarray(d["ability_draws"]) / sa,
            "difficulty_raw": np.asarray(d["difficulty_draws"]) / sd}
    with x64():
        pred = Predictive(item_difficulty, posterior_samples={
            k: jnp.asarray(v, jnp.float64) for k, v in post.items()}, return_sites=["label"])
        rep = pred(rng_key, jnp.asarray(arr.item), jnp.asarray(arr.annotator), None,
                   n_items=arr.n_items, n_annotators=arr.n_annotators,
                   n_classes=arr.n_classes)["label"]
    return np.asarray(rep)


class ItemDifficultyModel:
    """Item-difficulty annotator model: correct with ``1/K + (1 - 1/K) logistic(a_j - d_i)``.

    For item i with true class k, annotator j gives label k with probability
    ``p_ij = 1/K + (1 - 1/K) logistic(ability_j - difficulty_i)`` and each other class
    with probability ``(1 - p_ij) / (K - 1)`` (the hardest items are guesses);
    ``ability_j ~ N(mu_ability, sigma_ability)``,
    ``difficulty_i ~ N(0, sigma_difficulty)`` (non-centred),
    ``mu_ability ~ N(ability_loc, ability_scale)``, both scales half-normal
    (``sigma_scale``), ``prevalence ~ Dirichlet(alpha)``. The model of "Comparing Bayesian
    Models of Annotation" (item-difficulty / logistic random effects), with errors spread
    evenly over the other classes; see :mod:`noisycal.models.item_difficulty` for why.

    Parameters
    ----------
    n_classes : int, optional
        K; checked against the annotations' classes when given.
    alpha : array-like of shape (K,), optional
        Dirichlet prior on the prevalence (default 3 for every class).
    ability_loc, ability_scale : float, default=1.0, 1.0
        Normal prior on the mean ability (logit scale).
    sigma_scale : float, default=1.0
        Half-normal prior scale of the ability and difficulty spreads.

    Notes
    -----
    The fit's ``confusion`` is each annotator's *population-averaged* channel: one-coin
    with accuracy ``1/K + (1 - 1/K) E_d[logistic(ability_j - d)]``,
    ``d ~ N(0, sigma_difficulty)``,
    averaged over the posterior draws (``draws['confusion']`` holds it per draw). It is
    the class-conditional channel of a rating of a random item, so
    ``nc.targets.corrected(ann, fit)`` accepts it: the corrected labels are unbiased for
    the truth on average over items. Calibration metrics, though, compare the target with
    a classifier's score item by item, which is valid only if difficulty is unrelated to
    the score given the true class (hard items often get middling scores): test that
    with :func:`noisycal.annotators.checked_target` (which runs
    :func:`noisycal.annotators.noise_check` and puts its verdict on the target), or use
    ``nc.targets.posterior(ann, fit)``,
    whose item posteriors come from the full model (each item's own difficulty).
    ``fit.predict`` on new items uses the averaged channel, treating an item's ratings
    as independent given its class (an approximation for this model).

    Examples
    --------
    The NumPyro model's arguments under the default priors (``fit(annotations)`` samples
    them with NUTS):

    >>> kw = ItemDifficultyModel().model_kwargs(n_items=40, n_annotators=3, n_classes=2)
    >>> kw["alpha"].tolist(), kw["ability_loc"], kw["sigma_scale"]
    ([3.0, 3.0], 1.0, 1.0)
    """

    _model = "item_difficulty"

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 ability_loc: float = 1.0, ability_scale: float = 1.0,
                 sigma_scale: float = 1.0) -> None:
        self.n_classes = n_classes
        self.alpha = alpha
        self.ability_loc = ability_loc
        self.ability_scale = ability_scale
        self.sigma_scale = sigma_scale

    def model_kwargs(self, n_items: int, n_annotators: int, n_classes: int) -> dict:
        """Keyword arguments of the NumPyro model
        :func:`noisycal.models.item_difficulty.item_difficulty` under this object's
        priors (validated), for data of the given sizes.

        Parameters
        ----------
        n_items, n_annotators, n_classes : int
        """
        K = n_classes
        alpha = np.full(K, 3.0) if self.alpha is None else check_array(self.alpha, "alpha",
                                                                       ndim=1)
        if alpha.shape != (K,) or np.any(alpha <= 0):
            raise ValueError(f"alpha must be positive with shape ({K},), got {alpha.shape}")
        loc = check_real(self.ability_loc, "ability_loc")
        scale = check_real(self.ability_scale, "ability_scale", minimum=0.0, strict=True)
        sigma = check_real(self.sigma_scale, "sigma_scale", minimum=0.0, strict=True)
        return {"n_items": int(n_items), "n_annotators": int(n_annotators), "n_classes": K,
                "alpha": alpha, "ability_loc": loc, "ability_scale": scale,
                "sigma_scale": sigma}

    def fit(self, annotations: Annotations, *, method: Method | str | None = None,
            groups: ArrayLike | None = None, gold: dict | None = None,
            anchor: object = None, seed: Seed = 0, progress: bool = False) -> AnnotatorFit:
        """Sample the posterior with NUTS.

        Parameters
        ----------
        annotations : Annotations
        method : NUTS object or 'nuts', optional
            The only engine, with its settings (default ``NUTS()``): the joint mode of a
            model with one random effect per item is degenerate (``sigma_difficulty -> 0``
            with every difficulty at 0 has unbounded density), so there is no MAP or EM
            fit to offer. Its ``rhat_threshold`` judges every site, per-item difficulties
            included.
        groups : None
            Refused: the model has one prevalence for every item.
        gold : dict, optional
            Known true classes ``{item id: class label}``: those items enter the
            likelihood with their class (as in the other models), and their posteriors
            are clamped.
        anchor : None
            Refused: the model names the classes itself (every annotator's accuracy is
            above chance, so no labelling of the classes mirrors another).
        seed : int or jax key, default=0
        progress : bool, default=False
            A bar on stderr over the NUTS transitions.

        Returns
        -------
        AnnotatorFit
            ``model='item_difficulty'``, ``engine`` the NUTS object; ``item_posterior``
            from the full model averaged over draws; ``confusion`` the population-averaged
            channels (class Notes); ``details``: ``channel`` (what ``confusion`` is), the
            draws of ``ability_draws`` (D, J), ``difficulty_draws`` (D, n_items),
            ``mu_ability_draws``, ``sigma_ability_draws``, ``sigma_difficulty_draws``,
            posterior means ``ability`` and ``difficulty``, ``max_rhat``,
            ``min_ess_bulk``, ``num_divergences``, ``gold_index`` (each item's known class
            index, -1 where unknown; None without gold), ``flipped_draws``: the
            label-switching guard counts draws whose item posteriors match the majority
            vote (the gold class where known) better under a permutation of the classes.
            The model has no relabelling symmetry (every accuracy is above chance), so
            such draws sit in a poor mode rather than a mirror image: they are not
            relabelled, and they make the status 'not_converged' (as do an R-hat above
            the threshold and a divergent transition).
        """
        try:
            nuts = as_method(method, (NUTS,), where=type(self).__name__)
        except ValueError as exc:
            raise ValueError(f"{exc}: the joint mode of a model with one random effect per "
                             "item is degenerate (sigma_difficulty -> 0), so there is no EM "
                             "or MAP fit") from None
        progress = check_progress(progress)
        if groups is not None:
            raise ValueError("groups= is for GroupedDawidSkene; ItemDifficultyModel has one "
                             "prevalence for every item")
        if anchor is not None:
            raise ValueError("anchor does not apply to ItemDifficultyModel: the model names "
                             "the classes itself (every accuracy is above chance, so no "
                             "other labelling of the classes fits as well)")
        check_seed(seed)
        ds = DawidSkene(self.n_classes)
        ann, _, _ = ds._check(annotations, None)
        check_fit_size(ann, nuts)
        gold_idx = ds._gold(ann, gold)
        return extended_fit(lambda engine: self._sample(ann, gold_idx, engine, seed=seed,
                                                        progress=progress), nuts)

    def _sample(self, ann: Annotations, gold_idx: np.ndarray | None, nuts: NUTS, *,
                seed: Seed, progress: bool) -> AnnotatorFit:
        """The NUTS fit with these settings (:meth:`fit` extends it)."""
        K, J, n = ann.n_classes, ann.n_annotators, ann.n_items
        C, W, S = nuts.num_chains, nuts.num_warmup, nuts.num_samples
        from noisycal.models.item_difficulty import item_difficulty, population_confusion

        mk = self.model_kwargs(n, J, K)
        if gold_idx is not None:
            mk["gold"] = gold_idx
        data = _data(ann)
        vote = np.asarray(ann.majority_vote(tie="lowest"))
        if gold_idx is not None:
            vote = np.where(gold_idx >= 0, gold_idx, vote)
        samples, stats = sample_nuts(
            item_difficulty, model_args=(data.item, data.annotator, data.label),
            model_kwargs=mk, init_params=self._init(ann, vote), rng_key=as_key(seed),
            progress_bar=progress, **nuts.sampler(), sample_stats=True)
        flat = {k: v.reshape(C * S, *v.shape[2:]) for k, v in samples.items()}
        post_d = _per_draw(partial(_posteriors, gold=gold_idx), flat, data)
        flipped = self._flipped(post_d, vote, K)
        with x64():
            conf_d = np.asarray(population_confusion(jnp.asarray(flat["ability"]),
                                                     jnp.asarray(flat["sigma_difficulty"]), K))
        post = post_d.mean(0)
        status, message, diag = self._status(samples, stats, flipped, C, S,
                                             nuts.rhat_threshold)
        before = (status, message)
        status, message, chan = channel_status(status, message, conf_d.mean(0), ann, post)
        status, message, statuses = every_status(status, message, before)
        if status not in ("ok", "boundary"):
            cls = ConvergenceWarning if status in ("not_converged", "diagnostics_unavailable") \
                else IdentifiabilityWarning
            warnings.warn(f"item_difficulty NUTS: {message}", cls, stacklevel=4)
        mean = {k: flat[k].mean(0) for k in ("prevalence", "ability", "difficulty")}
        loglik = float(np.sum(_per_draw(partial(_item_ll, gold=gold_idx),
                                        {k: v[None] for k, v in mean.items()}, data)))
        details = {"chains": C, **diag, "flipped_draws": int(flipped.sum()),
                   "relabelled_chains": [], "groups": 1,
                   "group_index": np.zeros(n, np.int64), "gold": gold_idx is not None,
                   "gold_index": gold_idx, "channels": chan,
                   "channel": "population-averaged: one-coin with accuracy 1/K + "
                              "(1 - 1/K) E_d[logistic(ability_j - d)], "
                              "d ~ N(0, sigma_difficulty)",
                   "sample_stats": stats, "ability": mean["ability"],
                   "difficulty": mean["difficulty"],
                   "ability_draws": flat["ability"], "difficulty_draws": flat["difficulty"],
                   "mu_ability_draws": flat["mu_ability"],
                   "sigma_ability_draws": flat["sigma_ability"],
                   "sigma_difficulty_draws": flat["sigma_difficulty"],
                   "arviz": {"log_likelihood": item_loglik,
                             "replicate": replicate_item_ratings},
                   "identification": {"checked": False, "reason": NUTS_NOTE}}
        return AnnotatorFit(self._model, "nuts", ann.classes, ann.annotators, ann.items,
                            flat["prevalence"].mean(0)[None], conf_d.mean(0), post, loglik,
                            (K - 1) + J + n + 3, status, message, status == "ok", W + S,
                            {"prevalence": flat["prevalence"][:, None], "confusion": conf_d},
                            details, annotations=ann, engine=nuts, statuses=statuses)

    @staticmethod
    def _init(ann: Annotations, vote: np.ndarray) -> dict:
        """Chain starts in the majority-vote labelling: prevalence from the vote, each
        ability from the annotator's agreement with it, every difficulty 0 (spread 0.5)."""
        K = ann.n_classes
        arr = ann.engine_arrays()
        agree = np.bincount(arr.annotator, weights=(arr.label == vote[arr.item]),
                            minlength=ann.n_annotators)
        agree = (agree + 1.0) / (np.bincount(arr.annotator, minlength=ann.n_annotators) + 2.0)
        above = np.clip((agree - 1.0 / K) / (1.0 - 1.0 / K), 0.02, 0.98)  # the floor off
        logit = np.log(above) - np.log1p(-above)
        prev = np.bincount(vote, minlength=K) + 1.0
        mu = float(logit.mean())
        return {"prevalence": prev / prev.sum(), "mu_ability": mu, "sigma_ability": 0.5,
                "ability_raw": np.clip((logit - mu) / 0.5, -3.0, 3.0),
                "sigma_difficulty": 0.5, "difficulty_raw": np.zeros(ann.n_items)}

    @staticmethod
    def _flipped(post_d: np.ndarray, vote: np.ndarray, K: int) -> np.ndarray:
        """Draws whose best match with the vote (Hungarian) is not the identity."""
        agree = np.einsum("dik,im->dkm", post_d, np.eye(K)[vote])
        perms = hungarian_perm(agree)
        return np.any(perms != np.arange(K), axis=1)

    @staticmethod
    def _status(samples: dict, stats: dict, flipped: np.ndarray, C: int, S: int,
                rhat_threshold: float) -> tuple[str, str, dict]:
        table = diagnostics_table({k: samples[k] for k in DIAGNOSED})
        rhat = table["r_hat"].to_numpy(np.float64)
        ess = table["ess_bulk"].to_numpy(np.float64)
        max_rhat = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else float("nan")
        min_ess = float(np.nanmin(ess)) if np.isfinite(ess).any() else float("nan")
        n_div = int(np.asarray(stats["diverging"]).sum())
        worst = str(table["r_hat"].idxmax()) if np.isfinite(rhat).any() else None
        status, message = convergence_status(max_rhat, n_div, rhat_threshold, worst=worst,
                                             num_chains=C, num_samples=S)
        if flipped.any():
            chains = sorted({int(c) for c in np.nonzero(flipped.reshape(C, S))[0]})
            note = (f"{int(flipped.sum())} draw(s) in chain(s) {chains} sit in a permuted "
                    "class labelling (their item posteriors match the majority vote better "
                    "under another class order); they are not relabelled")
            status, message = "not_converged", "; ".join(m for m in (note, message) if m)
        return status, message, {"max_rhat": max_rhat, "min_ess_bulk": min_ess,
                                 "num_divergences": n_div}
