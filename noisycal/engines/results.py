"""One result type for every annotator-model fit (EM, MLE, NUTS)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._util.html import fit_html
from .._util.jax import x64
from .._util.types import ArrayLike, Seed
from .._util.validation import check_level, check_seed
from .density.diagnostics import check_credible_draws
from .status import BOUNDARY, checked_status, design_status, estimate_status
from .summary import Summary, fit_summary, parameter_frame, parameter_intervals

# the statuses live in .status and are re-exported here, where the fitters import them
__all__ = ["AnnotatorFit", "predict", "fit_codes", "design_status", "estimate_status",
           "checked_status", "BOUNDARY"]

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
        ``details['identification']`` holds the numbers).
    message : str
    converged : bool
    n_iter : int
    draws : mapping or None
        ``{'prevalence': (n_draws, n_groups, K), 'confusion': (n_draws, J, K, K)}``:
        bootstrap refits (EM) or posterior draws (NUTS, chains concatenated).
    details : mapping
        Engine-specific extras (start objectives, diagnostics, settings).
    refit : callable or None
        EM fits: bootstrap refits on demand (:meth:`bootstrap_draws`); not pickled.
    annotations : Annotations or None
        The ratings the model was fitted on (for a grouped fit with channels per group,
        the ``"<annotator>|<group>"`` ratings), shared by copies and pickled with the fit.
    engine : Method or None
        The engine option object the fit ran (:mod:`noisycal.engines.methods`), so that
        ``model.fit(annotations, method=fit.engine)`` refits with the same settings.
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
    refit: Callable[[Any, int], tuple[dict, dict]] | None = field(default=None, repr=False,
                                                                  compare=False)
    annotations: Any = field(default=None, repr=False, compare=False)
    engine: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.draws is not None:
            object.__setattr__(self, "draws", MappingProxyType(dict(self.draws)))
        object.__setattr__(self, "_boot", {})

    def __reduce__(self) -> tuple:
        # the read-only mapping proxies do not pickle; rebuild from plain dicts. The
        # refit closure (it holds the data) is not pickled.
        values = self._values()
        values["refit"] = None
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

        # the refit closure and the (immutable) annotations are shared
        values = {k: (v if k in ("refit", "annotations") else copy.deepcopy(v, memo))
                  for k, v in self._values().items()}
        return type(self)(**values)

    def bootstrap_draws(self, n_boot: int = 1000, *, seed: Seed = 0) -> Mapping[str, Any]:
        """Bootstrap refits over items of an EM fit, computed on demand (and cached).

        The same refits as ``fit(..., n_boot=n_boot)`` would store in ``draws``: EM on
        resampled items, started from the fitted posteriors (vmapped, seeded).

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
        if self.refit is None:
            raise ValueError("bootstrap refits need an EM fit made in this session (the "
                             "refit is not kept when a fit is pickled); this fit is "
                             f"{self.method!r}")
        key = (n_boot, repr(seed))
        if key not in self._boot:
            draws, info = self.refit(as_key(seed), n_boot)
            self._boot[key] = MappingProxyType({**draws, **info})
        return self._boot[key]

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
        (``fit(..., n_boot=...)``), else from ``n_boot`` refits computed now with
        ``seed`` (:meth:`bootstrap_draws`).

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
            if self.refit is None:
                if self.method == "em":
                    raise ValueError("this EM fit has no stored draws and no refit (the "
                                     "refit is not kept when a fit is pickled): fit with "
                                     "n_boot > 0 to store bootstrap draws")
                raise ValueError(f"this {self.method!r} fit has no draws: use method='em' "
                                 "(bootstrap) or method='nuts' (posterior) for intervals")
            draws = self.bootstrap_draws(1000 if n_boot is None else n_boot,
                                         seed=0 if seed is None else seed)
        if self.method == "nuts":
            check_credible_draws(len(draws["prevalence"]), level, "this NUTS fit")
        return parameter_intervals(self, draws, level)

    def summary(self, *, level: float = 0.9, loo: bool | None = None) -> Summary:
        """A statsmodels-like summary (never prints; ``print(fit.summary())`` does).

        Parameters
        ----------
        level : float, default=0.9
            Interval level of the tables (intervals only when the fit has draws).
        loo : bool, optional
            NUTS fits: compute ``elpd_loo`` when True; None shows it when it was
            computed already (:func:`noisycal.annotators.compare`); False never.

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

    def __repr__(self) -> str:
        return (f"AnnotatorFit(model={self.model!r}, method={self.method!r}, "
                f"n_items={self.n_items}, status={self.status!r}, loglik={self.loglik:.4f})")

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
        Ratings of the new items: the fit's classes (in any order: labels are matched by
        name) and a subset of its annotators (matched by id).
    groups : array-like of int, optional
        Grouped fits: each new item's group as an index into the fitted groups;
        required when the fit has more than one group.

    Returns
    -------
    ndarray of shape (n_new_items, K)
        Columns in the fit's class order (``fit.classes``).
    """
    import jax.numpy as jnp

    from noisycal.models.dawid_skene import make_data

    from .em.dawid_skene import e_step

    annotations, amap, cmap = fit_codes(fit, annotations, purpose="predict")
    arr = annotations.engine_arrays()
    L = fit.group_prevalence.shape[0]
    g = _group_codes(groups, annotations.n_items, L)
    with x64():
        data = make_data(arr.item, amap[arr.annotator], cmap[arr.label], n_items=arr.n_items,
                         n_annotators=len(fit.annotators), n_classes=len(fit.classes),
                         group=g, n_groups=L)
        post, _ = e_step(jnp.asarray(fit.group_prevalence), jnp.asarray(fit.confusion),
                         data, None)
        return np.asarray(post)


def fit_codes(fit: AnnotatorFit, annotations: Any, *, purpose: str, own: bool = False
              ) -> tuple[Any, np.ndarray, np.ndarray]:
    """Check that ``annotations`` can be read by ``fit``; where its annotators and classes sit.

    The one check behind :func:`predict`, :func:`noisycal.annotators.ppc` and
    :func:`noisycal.annotators.compare`: ``fit`` is an :class:`AnnotatorFit` with finite
    estimates, ``annotations`` an :class:`~noisycal.Annotations` whose annotators and
    classes are matched to the fit's by id and name
    (:func:`noisycal.correction.fit_index`).

    Parameters
    ----------
    fit : AnnotatorFit
    annotations : Annotations
    purpose : str
        What the fit is checked for, named in the error (``'predict'``).
    own : bool, default=False
        Also accept the ratings the fit was fitted on when they cannot be matched by id
        (a grouped fit with channels per group keeps ``"<annotator>|<group>"`` ratings):
        same items and number of ratings as ``fit.annotations``, which are then used.

    Returns
    -------
    annotations : Annotations
        ``annotations``, or ``fit.annotations`` (``own=True``, see above).
    annotator_index : int ndarray of shape (n_annotators,)
        For each annotator of the returned annotations, its index in ``fit.annotators``.
    class_index : int ndarray of shape (n_classes,)
        For each class, its index in ``fit.classes``.

    Raises
    ------
    ValueError
        Naming ``fit`` or ``annotations``.
    """
    from ..annotations.core import Annotations
    from ..correction.labels import fit_index

    if not isinstance(fit, AnnotatorFit):
        raise ValueError(f"fit must be an AnnotatorFit, got {type(fit).__name__}")
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations, got "
                         f"{type(annotations).__name__}")
    if not (np.all(np.isfinite(fit.group_prevalence)) and np.all(np.isfinite(fit.confusion))):
        raise ValueError(f"fit has no finite estimates (status {fit.status!r}); it cannot "
                         f"{purpose}")
    try:
        amap, cmap = fit_index(annotations, fit, annotations.n_annotators,
                               annotations.n_classes)
    except ValueError:
        mine = fit.annotations
        if (not own or mine is None or mine.n_ratings != annotations.n_ratings
                or not np.array_equal(np.asarray(mine.items), np.asarray(annotations.items))):
            raise
        return mine, np.arange(mine.n_annotators), np.arange(mine.n_classes)
    return annotations, amap, cmap


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
