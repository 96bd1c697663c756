"""Simulation-based calibration (SBC) of the annotator models' NUTS fits.

For each simulation, :func:`sbc` draws parameters and ratings from a model's prior (its
NumPyro model run with ``label=None``), samples the posterior of those ratings with NUTS
under the same priors, and records the rank of each true scalar parameter among the
(thinned) posterior draws. If the sampler and the model's code are right, every rank is
uniform on ``0..L`` (L kept draws); departures show bias (ranks piled at one end) or
over/under-dispersion (a U or a hump). The design (who rates which item) is fixed across
simulations, so every fit has the same shapes and reuses one compiled NUTS program
(:mod:`noisycal.engines.density.nuts_program`).

Models plug in through :data:`SBC_MODELS`, one :class:`SBCSpec` per model class: its
NumPyro model (which must simulate ``"label"`` when ``label=None``), the model's keyword
arguments under the object's priors, the sites to rank, and an optional label-switching
guard. A new model needs only an entry::

    SBC_MODELS[MyModel] = SBCSpec(my_numpyro_model, lambda m, n, J, K: {...},
                                  ("prevalence", "my_site"))

References
----------
Talts, S., Betancourt, M., Simpson, D., Vehtari, A. and Gelman, A. (2018). "Validating
Bayesian Inference Algorithms with Simulation-Based Calibration". arXiv:1804.06788.
Modrák, M., Moon, A. H., Kim, S., Bürkner, P., Huurre, N., Faltejsková, K., Gelman, A.
and Vehtari, A. (2023). "Simulation-Based Calibration Checking for Bayesian Computation:
The Choice of Test Quantities Shapes Sensitivity". Bayesian Analysis (ECDF-based tests,
after Säilynoja, Bürkner and Vehtari (2022), "Graphical Test for Discrete Uniformity and
its Applications in Goodness-of-Fit Evaluation and Multiple Sample Comparison").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

import jax
import jax.numpy as jnp

from noisycal.models.dawid_skene import dawid_skene
from noisycal.models.hierarchical import hierarchical_dawid_skene
from noisycal.models.item_difficulty import item_difficulty

from ..._util.jax import as_key, as_numpy_rng, x64
from ..._util.progress import ProgressBar, check_progress
from ..._util.statuses import ordered_statuses
from ..._util.types import Seed
from ..._util.validation import check_array, check_int, check_real, check_seed
from ...engines.density.diagnostics import convergence_status
from ...engines.density.nuts import sample_nuts
from ...engines.methods import NUTS, as_method
from ..dawid_skene import DawidSkene, OneCoinDawidSkene
from ..hierarchical import HierarchicalDawidSkene
from ..item_difficulty import ItemDifficultyModel

__all__ = ["SBCSpec", "SBC_MODELS", "SBCResult", "sbc", "rank_uniformity", "SBC_RHAT",
           "SBC_NUTS", "NON_UNIFORM", "FITS_FAILED"]

#: Status of a study in which some parameter's ranks are not uniform.
NON_UNIFORM = "non_uniform"
#: Status of a study in which at least one simulation's fit failed its diagnostics.
FITS_FAILED = "fits_failed"

#: R-hat above which a simulation's fit counts as a diagnostics failure (the
#: ``rhat_threshold`` of :func:`sbc`'s default engine).
SBC_RHAT = 1.05
#: The engine of :func:`sbc` when none is given: short chains, judged at :data:`SBC_RHAT`.
SBC_NUTS = NUTS(num_chains=2, num_warmup=500, num_samples=500, rhat_threshold=SBC_RHAT)
#: Null replicates of the ECDF statistic (Monte Carlo p-values).
N_NULL = 2000


class SBCSpec(NamedTuple):
    """How :func:`sbc` simulates from and fits one model class.

    Attributes
    ----------
    model : callable
        NumPyro model ``model(item, annotator, label=None, **kwargs)``; with
        ``label=None`` it samples its parameters and the site ``"label"``.
    model_kwargs : callable
        ``(model_object, n_items, n_annotators, n_classes) -> dict``: the keyword
        arguments under the object's priors (arrays, so that another prior reuses the
        compiled sampler).
    params : tuple of str
        Sites whose every scalar entry is ranked.
    relabel : callable or None
        Label-switching guard ``(samples, item, annotator, label, kwargs) -> (samples,
        moved)``: ``samples`` flat (D, ...) by site, ``moved`` the number of draws
        relabelled. None: draws are used as sampled.
    """

    model: Callable
    model_kwargs: Callable
    params: tuple[str, ...]
    relabel: Callable | None = None


def _ds_kwargs(m: DawidSkene, n: int, J: int, K: int) -> dict:
    alpha, beta = m._priors(K, J, "nuts")
    return {"n_items": n, "n_annotators": J, "n_classes": K,
            "alpha": np.asarray(alpha, np.float64), "beta": np.asarray(beta, np.float64),
            "one_coin": m._one_coin}


def _vote_perms(samples: dict, item: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                kwargs: dict) -> np.ndarray:
    """One permutation per draw relabelling it to the majority vote (Hungarian on the
    agreement of its item posteriors with the vote): the Dawid–Skene fit's guard."""
    from noisycal.models.dawid_skene import make_data

    from ...engines.density.dawid_skene import draw_perms

    n, J, K = kwargs["n_items"], kwargs["n_annotators"], kwargs["n_classes"]
    counts = np.zeros((n, K))
    np.add.at(counts, (item, label), 1.0)
    vote = counts.argmax(1)
    prev = samples["prevalence"].reshape(-1, 1, K)
    with x64():
        data = make_data(item, annotator, label, n_items=n, n_annotators=J, n_classes=K)
        return draw_perms(vote, prev, samples["confusion"], data, "vote", 0)


def _ds_relabel(samples: dict, item: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                kwargs: dict) -> tuple[dict, int]:
    """Prevalence and confusion draws relabelled by :func:`_vote_perms`; other sites
    indexed by the true class (``extra``, (D, K, ...)) move with them."""
    from ...engines.relabel import relabel_draws

    K = kwargs["n_classes"]
    perms = _vote_perms(samples, item, annotator, label, kwargs)
    prev = samples["prevalence"].reshape(-1, 1, K)
    out = dict(samples)
    prev_r, conf_r, _ = relabel_draws(prev[None], samples["confusion"][None], perms)
    out["prevalence"] = prev_r.reshape(samples["prevalence"].shape)
    out["confusion"] = conf_r[0]  # one-coin: accuracy is the diagonal, unchanged
    if "sigma" in samples:  # hierarchical: one spread per true class (row)
        out["sigma"] = np.take_along_axis(samples["sigma"], perms, axis=1)
    return out, int(np.any(perms != np.arange(K), axis=1).sum())


def _hier_kwargs(m: HierarchicalDawidSkene, n: int, J: int, K: int) -> dict:
    # as the fit passes them: alpha an array (an input of the compiled sampler), the
    # scalar constants Python floats (static: the model computes its prior location
    # from them in NumPy), so every simulation reuses one compiled program
    kw = m._prior_kwargs(K)
    return {"n_items": n, "n_annotators": J, "n_classes": K,
            "alpha": np.asarray(kw.pop("alpha"), np.float64),
            **{k: float(v) for k, v in kw.items()}}


def _id_kwargs(m: ItemDifficultyModel, n: int, J: int, K: int) -> dict:
    kw = m.model_kwargs(n, J, K)
    return {**kw, "alpha": np.asarray(kw["alpha"], np.float64)}


#: The models :func:`sbc` supports, by exact class (a subclass needs its own entry).
SBC_MODELS: dict[type, SBCSpec] = {
    DawidSkene: SBCSpec(dawid_skene, _ds_kwargs, ("prevalence", "confusion"), _ds_relabel),
    OneCoinDawidSkene: SBCSpec(dawid_skene, _ds_kwargs, ("prevalence", "accuracy"),
                               _ds_relabel),
    HierarchicalDawidSkene: SBCSpec(hierarchical_dawid_skene, _hier_kwargs,
                                    ("prevalence", "confusion", "sigma"), _ds_relabel),
    ItemDifficultyModel: SBCSpec(item_difficulty, _id_kwargs,
                                 ("prevalence", "mu_ability", "sigma_ability",
                                  "sigma_difficulty", "ability")),
}


def _spec(model: object, name: str) -> SBCSpec:
    spec = SBC_MODELS.get(type(model))
    if spec is None:
        known = sorted(c.__name__ for c in SBC_MODELS)
        raise ValueError(f"{name} must be a model object whose class has an SBC_MODELS "
                         f"entry {known}, got {type(model).__name__}")
    return spec


# ---------------------------------------------------------------------- uniformity tests
def _gamma(counts_below: np.ndarray, n_sims: int, z: np.ndarray) -> np.ndarray:
    """ECDF statistic of Säilynoja et al.: twice the smallest tail probability of the
    rank ECDF at the points ``z``; ``counts_below`` (..., len(z)) holds N F(z)."""
    from scipy.stats import binom

    lo = binom.cdf(counts_below, n_sims, z)
    hi = binom.sf(counts_below - 1, n_sims, z)
    return 2.0 * np.minimum(lo, hi).min(axis=-1)


def _below(ranks: np.ndarray, L: int) -> np.ndarray:
    """``N F(i / (L + 1))`` for i = 1..L: the ranks below i in each row of ``ranks``
    (R, N), shape (R, L)."""
    R = ranks.shape[0]
    flat = (ranks + (L + 1) * np.arange(R)[:, None]).ravel()
    hist = np.bincount(flat, minlength=R * (L + 1)).reshape(R, L + 1)
    return np.cumsum(hist, axis=1)[:, :L]


def rank_uniformity(ranks: np.ndarray, n_draws: int, *, n_bins: int | None = None,
                    n_null: int | None = None, seed: Seed = 0) -> pd.DataFrame:
    """Uniformity tests of SBC ranks on ``0..n_draws``, one row per column of ``ranks``.

    Parameters
    ----------
    ranks : int array of shape (n_sims, n_params)
    n_draws : int
        L, the number of posterior draws each rank was taken among.
    n_bins : int, optional
        Bins of the chi-square test (default ``min(20, max(2, n_sims // 5), L + 1)``,
        at least five expected ranks per bin); bin b holds the ranks r with
        ``floor(r B / (L + 1)) = b``, and its expected count is exact for uneven bins.
    n_null : int, default=2000
        Simulated uniform rank samples of the ECDF statistic's null distribution (the
        smallest p-value is ``1 / (n_null + 1)``).
    seed : int or jax key, default=0
        The Monte Carlo null distribution of the ECDF statistic.

    Returns
    -------
    pandas.DataFrame
        ``chi2``, ``chi2_df``, ``chi2_p`` (Pearson's test on the binned ranks) and
        ``gamma``, ``ecdf_p``: the ECDF statistic of Säilynoja, Bürkner and Vehtari (2022)
        (twice the smallest binomial tail probability of the rank ECDF over the points
        i / (L + 1)), its p-value from ``n_null`` simulated uniform rank samples of the
        same size.
    """
    from scipy.stats import chi2

    ranks = np.asarray(ranks, np.int64)
    N, L = ranks.shape[0], int(n_draws)
    B = min(20, max(2, N // 5), L + 1) if n_bins is None else check_int(n_bins, "n_bins",
                                                                        minimum=2)
    values = np.arange(L + 1)
    width = np.bincount(values * B // (L + 1), minlength=B)
    expected = N * width / (L + 1)
    rows = []
    z = np.arange(1, L + 1) / (L + 1)
    rng = as_numpy_rng(seed)
    n_null = N_NULL if n_null is None else check_int(n_null, "n_null", minimum=100)
    null = np.concatenate([_gamma(_below(rng.integers(0, L + 1, (m, N)), L), N, z)
                           for m in np.diff(np.r_[0:n_null:10000, n_null])])
    gam = _gamma(_below(ranks.T, L), N, z)
    for col in range(ranks.shape[1]):
        obs = np.bincount(ranks[:, col] * B // (L + 1), minlength=B)
        stat = float(np.sum((obs - expected) ** 2 / expected))
        g = float(gam[col])
        rows.append({"chi2": stat, "chi2_df": B - 1, "chi2_p": float(chi2.sf(stat, B - 1)),
                     "gamma": g, "ecdf_p": float((1 + np.sum(null <= g)) / (1 + n_null))})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- the study
def _check_size(n: int, J: int, K: int, N: int, nuts: NUTS) -> None:
    """Refuse a study whose one fit or whose ranks would not fit in memory, before
    drawing the design (``MAX_FIT_BYTES``, as for a fit).

    One simulation holds its ratings (at most n x J, as codes and one-hot, float64), its
    item posteriors (n x K) and the kept draws of the channels and prevalence (chains x
    samples x (J K K + K)); the study keeps one rank per parameter and simulation."""
    from ..dawid_skene import MAX_FIT_BYTES

    params = J * K * K + K
    fit = 8.0 * (n * J * (K + 3) + n * K
                 + int(nuts.num_chains) * int(nuts.num_samples) * params)
    if fit > MAX_FIT_BYTES:
        raise ValueError(f"n_items: one simulation of {n:,} items x {J:,} annotators x "
                         f"{K:,} classes would need about {fit / 2**30:,.1f} GiB (more than "
                         f"{MAX_FIT_BYTES / 2**30:.0f} GiB); simulate fewer items, "
                         "annotators or classes")
    ranks = 8.0 * N * params
    if ranks > MAX_FIT_BYTES:
        raise ValueError(f"n_sims: {N:,} simulations of {params:,} parameters would keep "
                         f"about {ranks / 2**30:,.1f} GiB of ranks (more than "
                         f"{MAX_FIT_BYTES / 2**30:.0f} GiB); run fewer simulations")


def _design(n_items: int, n_annotators: int, ratings_per_item: int | None,
            design: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(item, annotator) of every rating, sorted by item."""
    if design is not None:
        if ratings_per_item is not None:
            raise ValueError("give ratings_per_item or design, not both")
        if not isinstance(design, tuple) or len(design) != 2:
            raise ValueError("design must be a tuple (item, annotator) of int arrays")
        item = check_array(design[0], "design[0]", ndim=1).astype(np.int32)
        ann = check_array(design[1], "design[1]", ndim=1).astype(np.int32)
        if item.shape != ann.shape or item.min() < 0 or item.max() >= n_items \
                or ann.min() < 0 or ann.max() >= n_annotators:
            raise ValueError(f"design must hold items in [0, {n_items}) and annotators in "
                             f"[0, {n_annotators}), two arrays of one length")
        if np.unique(item).size != n_items:
            raise ValueError("design must rate every item at least once")
        order = np.argsort(item, kind="stable")
        return item[order], ann[order]
    r = n_annotators if ratings_per_item is None else check_int(
        ratings_per_item, "ratings_per_item", minimum=1)
    if r > n_annotators:
        raise ValueError(f"ratings_per_item must be at most n_annotators={n_annotators}, "
                         f"got {r}")
    ann = np.stack([np.sort(rng.permutation(n_annotators)[:r]) for _ in range(n_items)])
    return np.repeat(np.arange(n_items, dtype=np.int32), r), ann.ravel().astype(np.int32)


def _simulate(spec: SBCSpec, key: Any, item: np.ndarray, annotator: np.ndarray,
              kwargs: dict) -> dict:
    from numpyro.handlers import seed as seed_handler
    from numpyro.handlers import trace

    with x64():
        tr = trace(seed_handler(spec.model, key)).get_trace(
            jnp.asarray(item), jnp.asarray(annotator), None, **kwargs)
    return {k: np.asarray(v["value"]) for k, v in tr.items() if v["type"] in
            ("sample", "deterministic")}


def _entries(values: dict, params: tuple[str, ...], lead: int) -> tuple[list, np.ndarray]:
    """Names ``site[i, j]`` and values (..., n_entries) of every scalar entry."""
    names, cols = [], []
    for p in params:
        v = np.asarray(values[p], np.float64)
        shape = v.shape[lead:]
        for idx in np.ndindex(*shape):
            names.append(p if not idx else f"{p}[{', '.join(map(str, idx))}]")
        cols.append(v.reshape(*v.shape[:lead], -1))
    return names, np.concatenate(cols, axis=-1)


def _one_fit(spec: SBCSpec, truth: dict, item: np.ndarray, annotator: np.ndarray,
             fit_kw: dict, key: Any, nuts: NUTS, thin: int) -> dict:
    """Fit one simulated data set; ranks of the truth and the fit's diagnostics."""
    from numpyro.diagnostics import split_gelman_rubin

    C, S = nuts.num_chains, nuts.num_samples
    label = truth["label"].astype(np.int32)
    samples, div = sample_nuts(spec.model, model_args=(item, annotator, label),
                               model_kwargs=fit_kw, init_params=None, rng_key=key,
                               progress_bar=False, **nuts.sampler())
    names, by_chain = _entries(samples, spec.params, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        rhat = split_gelman_rubin(by_chain) if C > 1 and S >= 4 else np.full(1, np.nan)
    max_rhat = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else float("nan")
    flat = {k: v.reshape(C * S, *v.shape[2:]) for k, v in samples.items()}
    moved = 0
    if spec.relabel is not None:
        flat, moved = spec.relabel(flat, item, annotator, label, fit_kw)
    kept = {k: v.reshape(C, S, *v.shape[1:])[:, ::thin].reshape(-1, *v.shape[1:])
            for k, v in flat.items()}
    _, draws = _entries(kept, spec.params, 1)
    _, true = _entries(truth, spec.params, 0)
    status, _ = convergence_status(max_rhat, int(np.sum(div)), nuts.rhat_threshold,
                                   num_chains=C, num_samples=S)
    return {"ranks": (draws < true).sum(axis=0), "names": names, "max_rhat": max_rhat,
            "num_divergences": int(np.sum(div)), "relabelled_draws": moved,
            "status": status}


@dataclass(frozen=True, eq=False)
class SBCResult:
    """Result of :func:`sbc`.

    Attributes
    ----------
    ranks : pandas.DataFrame
        Simulation x parameter: the rank of the true value among the kept posterior
        draws, an integer in ``0..n_draws``.
    n_draws : int
        Kept draws per simulation (chains x samples / thin), L.
    tests : pandas.DataFrame
        Per parameter (index): :func:`rank_uniformity`'s ``chi2``, ``chi2_df``,
        ``chi2_p``, ``gamma``, ``ecdf_p``.
    status : {'ok', 'non_uniform', 'fits_failed'}
        The first of ``statuses``: 'non_uniform' when some parameter's chi-square or ECDF
        p-value is below ``p_threshold / (2 n_params)`` (Bonferroni over every test);
        'fits_failed' when any simulation's fit failed its diagnostics (``n_failed > 0``).
    message : str
        The non-uniform parameters, and how many fits (which simulations) failed their
        diagnostics.
    diagnostics : pandas.DataFrame
        Per simulation: ``max_rhat`` (split R-hat of the ranked parameters),
        ``num_divergences``, ``relabelled_draws`` (draws the label-switching guard
        moved), ``status`` (the NUTS rule with the engine's ``rhat_threshold``, 1.05 by
        default), ``seconds``.
    p_threshold : float
    settings : dict
        Sizes, seed and design of the study.
    statuses : tuple of str
        Every status that applies, most severe first (``('non_uniform', 'fits_failed')``
        when both do); ``('ok',)`` when none does, so ``status == statuses[0]`` always.
    """

    ranks: pd.DataFrame = field(repr=False)
    n_draws: int
    tests: pd.DataFrame = field(repr=False)
    status: str
    message: str
    diagnostics: pd.DataFrame = field(repr=False)
    p_threshold: float
    settings: dict = field(default_factory=dict, repr=False)
    statuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])

    @property
    def n_failed(self) -> int:
        """Simulations whose fit failed its diagnostics (status not 'ok')."""
        return int((self.diagnostics["status"] != "ok").sum())

    def plot(self, params: list[str] | None = None, *, n_bins: int | None = None,
             ax: Any = None) -> Any:
        """Rank histograms (:func:`noisycal.plots.sbc_rank_histogram`).

        Parameters
        ----------
        params : list of str, optional
            Parameters to draw (default all, at most 16).
        n_bins : int, optional
            Bins (default those of the chi-square test).
        ax : matplotlib Axes or array of Axes, optional
        """
        from ...plots._sbc import sbc_rank_histogram

        return sbc_rank_histogram(self, params, n_bins=n_bins, ax=ax)


def sbc(model: object, *, n_items: int, n_annotators: int, n_classes: int,
        ratings_per_item: int | None = None, design: tuple | None = None,
        n_sims: int = 100, method: NUTS | str | None = None, thin: int = 5, seed: Seed = 0,
        prior_model: object = None, p_threshold: float = 0.01,
        n_bins: int | None = None, progress: bool = False) -> SBCResult:
    """Simulation-based calibration of a model's NUTS fit.

    Each simulation draws parameters and ratings from ``prior_model``'s prior (default
    ``model``), samples the posterior under ``model``'s priors with NUTS (random starts;
    with vectorized chains one compiled program serves every simulation), applies the
    model's label-switching guard (Dawid–Skene: every draw relabelled to the majority
    vote by Hungarian matching, the guard of ``fit(method=NUTS())``; the number of moved
    draws is in ``diagnostics``), thins the draws and ranks the truth among them.

    Parameters
    ----------
    model : DawidSkene, OneCoinDawidSkene or ItemDifficultyModel
        A model object with an :data:`SBC_MODELS` entry; its priors are used.
    n_items, n_annotators, n_classes : int
    ratings_per_item : int, optional
        Annotators per item, chosen at random once (seeded) for the whole study;
        default every annotator rates every item.
    design : tuple (item, annotator) of int arrays, optional
        The ratings' design instead of ``ratings_per_item``.
    n_sims : int, default=100
    method : NUTS object or 'nuts', optional
        The sampler's settings, every field used but the extension's (every simulation
        runs the given lengths; ``extend=True`` is refused); its ``rhat_threshold``
        judges each simulation's fit (``diagnostics['status']``). Default :data:`SBC_NUTS`:
        ``NUTS(num_chains=2, num_warmup=500, num_samples=500, rhat_threshold=1.05)``
        (``'nuts'`` is ``NUTS()``, whose threshold is 1.01).
    thin : int, default=5
        Keep every ``thin``-th draw of each chain, against autocorrelation (Talts et al.
        thin towards independent draws; ranks of correlated draws are not uniform). At
        most ``num_samples``: a larger ``thin`` keeps no more than the first draw of each
        chain, which is ``thin=num_samples`` (ranks in ``0..num_chains``), so it is
        refused rather than silently read as that.
    seed : int or jax key, default=0
    prior_model : model object, optional
        Simulate from this model's priors instead (same NumPyro model); a prior
        different from ``model``'s makes a deliberately wrong study, which must fail.
    p_threshold : float, default=0.01
        Family-wise level of the uniformity tests (Bonferroni over parameters and the
        two tests).
    n_bins : int, optional
        Chi-square bins (see :func:`rank_uniformity`).
    progress : bool, default=False

    Returns
    -------
    SBCResult
        Status ``'non_uniform'`` when some parameter's ranks fail a uniformity test,
        ``'fits_failed'`` when any simulation's fit failed its diagnostics (the rule of
        ``method.rhat_threshold``: R-hat above it, divergences, or R-hat unavailable):
        the ranks of a fit that failed are not ranks among draws of its posterior, so
        uniform ranks do not vouch for the sampler there. Any one failed fit sets it
        (the message says how many and which simulations); ``statuses`` keeps both.

    Raises
    ------
    ValueError
        Naming the argument: a model without an :data:`SBC_MODELS` entry, sizes or a
        study too large for memory, ``NUTS(extend=True)``, ``thin`` above
        ``num_samples`` (checked before anything is simulated or fitted).

    Examples
    --------
    >>> import noisycal as nc
    >>> res = nc.annotators.sbc(nc.DawidSkene(), n_items=30, n_annotators=3, n_classes=2,
    ...                         n_sims=3, thin=3, method=nc.engines.NUTS(
    ...                             num_chains=2, num_warmup=150, num_samples=150,
    ...                             rhat_threshold=1.05))
    >>> res.ranks.shape, res.n_draws   # 2 chains x 50 kept draws: ranks in 0..100
    ((3, 14), 100)
    """
    spec = _spec(model, "model")
    sim_spec = spec if prior_model is None else _spec(prior_model, "prior_model")
    if sim_spec.model is not spec.model or sim_spec.params != spec.params:
        raise ValueError("prior_model must be of the same model as model (only its priors "
                         "may differ)")
    n = check_int(n_items, "n_items", minimum=2)
    J = check_int(n_annotators, "n_annotators", minimum=1)
    K = check_int(n_classes, "n_classes", minimum=2)
    N = check_int(n_sims, "n_sims", minimum=2)
    nuts = SBC_NUTS if method is None else as_method(method, (NUTS,), where="sbc")
    if nuts.extend:
        raise ValueError("method: NUTS(extend=True) reruns a fit until it converges; sbc "
                         "runs every simulation with the settings it is given (the ranks "
                         "of reruns chosen by convergence would not be uniform)")
    thin = check_int(thin, "thin", minimum=1)
    if thin > nuts.num_samples:
        raise ValueError(f"thin: keeping every {thin}-th draw of chains of "
                         f"num_samples={nuts.num_samples} keeps only the first draw of each "
                         f"chain (ranks in 0..{nuts.num_chains}); thin must be at most "
                         "num_samples, and much smaller for ranks that can show a "
                         "miscalibrated posterior (Talts et al. keep about 100 draws)")
    _check_size(n, J, K, N, nuts)
    p_threshold = check_real(p_threshold, "p_threshold", minimum=0.0, strict=True)
    if p_threshold >= 1:
        raise ValueError(f"p_threshold must be in (0, 1), got {p_threshold}")
    progress = check_progress(progress)
    check_seed(seed)
    k_design, k_sims, k_null = jax.random.split(as_key(seed), 3)
    item, annotator = _design(n, J, ratings_per_item, design, as_numpy_rng(k_design))
    fit_kw = spec.model_kwargs(model, n, J, K)
    sim_kw = sim_spec.model_kwargs(model if prior_model is None else prior_model, n, J, K)
    rows, ranks, names = [], [], None
    with ProgressBar(N, "SBC simulations", enabled=progress) as bar:
        for key in jax.random.split(k_sims, N):
            t0 = time.perf_counter()
            k_truth, k_fit = jax.random.split(key)
            truth = _simulate(sim_spec, k_truth, item, annotator, sim_kw)
            out = _one_fit(spec, truth, item, annotator, fit_kw, k_fit, nuts, thin)
            names = out["names"]
            ranks.append(out["ranks"])
            rows.append({k: out[k] for k in ("max_rhat", "num_divergences",
                                             "relabelled_draws", "status")}
                        | {"seconds": time.perf_counter() - t0})
            bar.update(1)
    L = nuts.num_chains * len(range(0, nuts.num_samples, thin))
    ranks = pd.DataFrame(np.asarray(ranks), columns=names)
    ranks.index.name = "simulation"
    cut = p_threshold / (2 * len(names))
    # enough null replicates that the ECDF p-value can fall below the cut
    n_null = int(min(200_000, max(N_NULL, np.ceil(10.0 / cut))))
    tests = rank_uniformity(ranks.to_numpy(), L, n_bins=n_bins, n_null=n_null, seed=k_null)
    tests.index = pd.Index(names, name="parameter")
    diag = pd.DataFrame(rows)
    bad = [p for p in names if min(tests.loc[p, "chi2_p"], tests.loc[p, "ecdf_p"]) < cut]
    message = (f"ranks not uniform (p < {cut:.2g}) for {bad}" if bad else "")
    failed_msg = _failed_message(diag, N, nuts.rhat_threshold)
    if failed_msg:
        message = "; ".join(m for m in (message, failed_msg) if m)
    statuses = ordered_statuses(([NON_UNIFORM] if bad else [])
                                + ([FITS_FAILED] if failed_msg else []))
    return SBCResult(ranks, L, tests, statuses[0], message, diag,
                     p_threshold, {"n_items": n, "n_annotators": J, "n_classes": K,
                                   "n_sims": N, "num_chains": nuts.num_chains,
                                   "num_warmup": nuts.num_warmup,
                                   "num_samples": nuts.num_samples, "engine": nuts,
                                   "thin": thin, "seed": seed,
                                   "item": item, "annotator": annotator,
                                   "model": type(model).__name__}, statuses)


def _failed_message(diag: pd.DataFrame, n_sims: int, rhat_threshold: float) -> str:
    """How many simulations' fits failed their diagnostics, and which ('' when none)."""
    failed = np.flatnonzero((diag["status"] != "ok").to_numpy())
    if failed.size == 0:
        return ""
    sims = failed[:10].tolist()
    shown = f"simulations {sims}" + (f" and {failed.size - 10} more" if failed.size > 10
                                     else "")
    return (f"{failed.size} of {n_sims} fits failed their diagnostics (R-hat > "
            f"{rhat_threshold:g}, divergences or R-hat unavailable: {shown}); their ranks "
            "are not ranks among posterior draws, so the uniformity tests do not vouch for "
            "the sampler there: run longer chains (num_warmup, num_samples)")
