"""One result type for every annotator-model fit (EM, MLE, NUTS)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._html import fit_html
from .._jax import x64
from .._stats import equal_tailed
from .._typing import ArrayLike, Seed
from .._validation import check_level, check_seed
from .diagnostics import check_credible_draws, min_credible_draws

__all__ = ["AnnotatorFit", "predict", "design_status", "estimate_status", "checked_status",
           "BOUNDARY"]

#: A marginal prevalence below this is reported as a boundary estimate.
BOUNDARY = 1e-6


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
        (:mod:`noisycal.engines.channel_checks`: an annotator's channel is better read
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
        from .._jax import as_key
        from .._validation import check_int

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
        rows = []
        for g, row in enumerate(self.group_prevalence):
            for k, v in enumerate(row):
                rows.append(("prevalence", g, None, self.classes[k], None, float(v)))
        for j, mat in enumerate(self.confusion):
            for k in range(mat.shape[0]):
                for m in range(mat.shape[1]):
                    rows.append(("confusion", None, self.annotators[j], self.classes[k],
                                 self.classes[m], float(mat[k, m])))
        frame = pd.DataFrame(rows, columns=["parameter", "group", "annotator", "true",
                                            "observed", "value"], dtype=object)
        frame["value"] = frame["value"].astype(np.float64)
        return frame

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
            :func:`~noisycal.engines.diagnostics.min_credible_draws` at ``level``.
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
        frame = self.to_frame()
        prev = np.asarray(draws["prevalence"]).reshape(len(draws["prevalence"]), -1)
        conf = np.asarray(draws["confusion"]).reshape(len(draws["confusion"]), -1)
        allv = np.concatenate([prev, conf], axis=1)
        lo, hi = equal_tailed(allv, level, axis=0)
        frame["low"], frame["high"] = lo, hi
        frame.attrs["level"] = level
        frame.attrs["kind"] = "credible-eti" if self.method == "nuts" else "bootstrap-percentile"
        return frame

    def summary(self) -> pd.DataFrame:
        """A statsmodels-like summary table (never prints).

        The parameter table (with ``low``/``high`` when the fit has draws, for a NUTS
        fit at least :func:`~noisycal.engines.diagnostics.min_credible_draws`); the
        header (model, method, sizes, loglik, AIC, BIC, status and message) is in
        ``table.attrs['header']``, the numbers also as separate ``attrs`` entries.
        """
        few = self.method == "nuts" and self.draws is not None and \
            len(self.draws["prevalence"]) < min_credible_draws(0.9)
        table = self.conf_int() if self.draws is not None and not few else self.to_frame()
        head = (f"{self.model} fit by {self.method}: {self.n_items} items, "
                f"{len(self.annotators)} annotators, {len(self.classes)} classes\n"
                f"loglik {self.loglik:.4f}  AIC {self.aic:.2f}  BIC {self.bic:.2f}  "
                f"n_params {self.n_params}  iterations {self.n_iter}  status {self.status}")
        if self.message:
            head += f"\n{self.message}"
        table.attrs.update(header=head, loglik=self.loglik, aic=self.aic, bic=self.bic,
                           n_params=self.n_params, status=self.status, message=self.message)
        return table

    def to_arviz(self, *, seed: Seed = 0, predictive: bool = True) -> Any:
        """ArviZ InferenceData with the same parameter names as every other method.

        NUTS fits keep (chain, draw) and fill every group ArviZ's checks need
        (``sample_stats``, per-item ``log_likelihood``, ``posterior_predictive``,
        ``observed_data``; see :mod:`noisycal.engines.arviz_export`), so ``az.loo``,
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
        from .arviz_export import annotator_inference_data, em_inference_data

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

    from ..correction import fit_index
    from ..data import Annotations
    from .em import e_step

    if not isinstance(fit, AnnotatorFit):
        raise ValueError(f"fit must be an AnnotatorFit, got {type(fit).__name__}")
    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations, got "
                         f"{type(annotations).__name__}")
    if not (np.all(np.isfinite(fit.group_prevalence)) and np.all(np.isfinite(fit.confusion))):
        raise ValueError(f"fit has no finite estimates (status {fit.status!r}); it cannot "
                         "predict")
    amap, cmap = fit_index(annotations, fit, annotations.n_annotators, annotations.n_classes)
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


def design_status(label_counts: np.ndarray, classes: np.ndarray, n_params: int,
                  n_ratings: int, *, J: int, L: int, n_items: int | None = None
                  ) -> tuple[str, str]:
    """Identification problems of a Dawid–Skene data design, whatever the estimates.

    Parameters
    ----------
    label_counts : (K,) int
        Ratings per observed class.
    classes : (K,)
        Class labels (named in the message).
    n_params : int
        Free parameters of the model.
    n_ratings : int
        Ratings fitted.
    J, L : int
        Annotators and groups.
    n_items : int, optional
        Items rated; with it the saturation count leaves out one rating per item.

    Returns
    -------
    (status, message)
        'unobserved_class' when a class is never rated (its prevalence and channel rows
        are then set by the starts or the prior, not the data); 'not_identified' when
        the model has more free parameters than the L (K^J - 1) free frequencies of
        complete rating patterns; 'over_parametrised' when it has more free
        parameters than ratings, or (``n_items`` given) at least as many as the ratings
        beyond each item's first (a saturated fit: one rating per item is spent on
        locating the item's class, and only agreement among the others informs the
        channels); else ('ok', '').
    """
    K = len(classes)
    absent = np.asarray(classes)[np.asarray(label_counts) == 0].tolist()
    if absent:
        return "unobserved_class", (f"class(es) {absent} never occur in the ratings: "
                                    "their prevalence and channels are not identified")
    # J log K can be large: the count is then effectively infinite
    cells = L * (K ** J - 1) if J * np.log(K) < 60 else np.inf
    if n_params > cells:
        return "not_identified", (f"{n_params} free parameters but only {cells} free "
                                  "pattern frequencies: the model is over-parametrised")
    if n_params > n_ratings:
        return "over_parametrised", (f"{n_params} free parameters from {n_ratings} "
                                     "ratings: the fit is saturated, its estimates are "
                                     "not determined by the data")
    if n_items is not None and n_params >= n_ratings - n_items:
        return "over_parametrised", (
            f"{n_params} free parameters from {n_ratings} ratings of {n_items} items: "
            f"beyond one rating per item (which locates the item's class) only "
            f"{n_ratings - n_items} ratings inform the channels, so the fit is saturated "
            "and its estimates are not determined by the data")
    return "ok", ""


def estimate_status(prevalence: np.ndarray, confusion: np.ndarray, converged: bool
                    ) -> tuple[str, str]:
    """Status of finite point estimates: convergence, small binary gaps, boundary.

    Parameters
    ----------
    prevalence : (L, K)
    confusion : (J, K, K)
    converged : bool

    Returns
    -------
    (status, message)
        'not_converged'; 'small_gap' when a binary annotator's gap
        ``|confusion[j, 1, 1] - confusion[j, 0, 1]|`` is at most 1e-4, or for K > 2 the
        smallest singular value of its confusion matrix is (the channel cannot be
        inverted, so a corrected target refuses it); 'boundary' when a marginal model's
        prevalence is below :data:`BOUNDARY`; else ('ok', '').
    """
    from ..correction import GAP_THRESHOLD

    if not converged:
        return "not_converged", "the iteration limit was reached before the tolerance"
    if confusion.shape[1] == 2:
        size = np.abs(confusion[:, 1, 1] - confusion[:, 0, 1])
    else:
        size = np.linalg.svd(confusion, compute_uv=False).min(axis=-1)
    small = np.flatnonzero(size <= GAP_THRESHOLD)
    if small.size:
        what = "|gap|" if confusion.shape[1] == 2 else "smallest singular value"
        return "small_gap", (f"annotator(s) {small.tolist()} have {what} <= "
                             f"{GAP_THRESHOLD:g}: their channel carries (nearly) no "
                             "information about the class and cannot be inverted")
    if prevalence.shape[0] == 1 and np.min(prevalence) < BOUNDARY:
        return "boundary", (f"a class prevalence is below {BOUNDARY:g}: the estimate "
                            "is on the boundary of the parameter space")
    return "ok", ""


def checked_status(status: str, message: str, check: Callable[[], Any]
                   ) -> tuple[str, str, dict[str, Any]]:
    """Run ``check`` on a fit whose status is 'ok' or 'boundary'; update status and message.

    ``'weakly_identified'`` replaces 'ok' or 'boundary' (whose message is kept after it);
    other statuses are returned unchanged and nothing is checked.

    Parameters
    ----------
    status, message : str
        The fit's status and message so far.
    check : callable
        ``() -> Identification`` (:mod:`noisycal.engines.identification`), or a string
        saying why nothing could be checked.

    Returns
    -------
    (status, message, details)
        ``details`` (for the fit's ``details['identification']``) holds
        :meth:`Identification.as_details` and ``checked=True``, or ``checked=False`` and
        the reason.
    """
    if status not in ("ok", "boundary"):
        return status, message, {"checked": False,
                                 "reason": f"not checked: the fit's status is {status!r}"}
    ident = check()
    if isinstance(ident, str):
        return status, message, {"checked": False, "reason": ident}
    if ident.status != "ok":
        also = f"; also {message}" if status == "boundary" else ""
        status, message = ident.status, ident.message + also
    return status, message, {"checked": True, **ident.as_details()}
