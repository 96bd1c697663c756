"""Soft-label Dirichlet calibration with annotator overdispersion.

:class:`DirichletSoftLabels` fits the Dirichlet-multinomial model of
``noisycal.models.soft_labels`` to annotator vote counts and a classifier's
predictions, by maximum likelihood, MAP or NUTS (the engine objects
:class:`~noisycal.engines.MLE`, :class:`~noisycal.engines.MAP` and
:class:`~noisycal.engines.NUTS`), and returns a :class:`SoftLabelFit`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import softmax

from .._util.progress import check_progress
from .._util.statuses import join_messages, ordered_statuses
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_int, check_seed, predictions
from ..engines.identification import WEAK_THRESHOLD
from ..engines.methods import MAP, MLE, NUTS, Method, as_method
from ..exceptions import IdentifiabilityWarning

__all__ = ["DirichletSoftLabels", "SoftLabelFit", "KAPPA_EXCESS", "fit_problems"]

#: An MLE or MAP concentration ``kappa`` is reported at the boundary of the parameter
#: space (``kappa = infinity``, the multinomial limit) when the variance of every item's
#: vote shares exceeds a multinomial draw's by less than this fraction: the
#: Dirichlet-multinomial inflates it by ``1 + (n_i - 1) / (kappa + 1)`` for ``n_i`` votes,
#: so the rule is ``(max_i n_i - 1) / (kappa + 1) < KAPPA_EXCESS`` (with 10 votes per
#: item, ``kappa > 899``).
KAPPA_EXCESS = 0.01


def fit_problems(kappa: float | None, totals: np.ndarray) -> list[tuple[str, str]]:
    """The statuses of a soft-label fit that its engine does not see.

    Parameters
    ----------
    kappa : float or None
        The MLE or MAP concentration; None for a NUTS fit (its posterior mean under a
        proper prior is not a boundary estimate).
    totals : ndarray of shape (n_items,)
        Votes per item.

    Returns
    -------
    list of (status, message)
        ``'not_identified'`` when every item has exactly one vote (one vote is a
        categorical draw whatever ``kappa``: the likelihood does not depend on it);
        ``'boundary'`` when ``kappa`` is at the multinomial limit (:data:`KAPPA_EXCESS`).
    """
    n_max = int(np.max(totals))
    if n_max == 1:
        return [("not_identified", (
            "every item has exactly one vote: a single vote is a categorical draw whatever "
            "kappa, so kappa is not identified (its value is the optimiser's start or the "
            "prior's); W and b are the one-hot cross-entropy fit. Collect at least two "
            "votes on some items to estimate the overdispersion"))]
    if kappa is not None and not np.isnan(kappa) and (n_max - 1) / (kappa + 1) < KAPPA_EXCESS:
        return [("boundary", (
            f"kappa = {kappa:.4g} is at the boundary of the parameter space (kappa = "
            f"infinity, the multinomial limit): with at most {n_max} votes per item the "
            f"vote shares' variance exceeds a multinomial draw's by less than "
            f"{100 * KAPPA_EXCESS:g}%, so the annotators vote like multinomial draws and "
            "the likelihood is flat in kappa; kappa and its standard error say only 'very "
            "large', and W and b are the multinomial-limit fit (soft-label cross-entropy)"))]
    return []


def _log_predictions(probs: ArrayLike | None, logits: ArrayLike | None) -> tuple[np.ndarray, bool]:
    """Finite log-probabilities (n, K) from the explicit probs=/logits= pair."""
    _, log_p, binary = predictions(probs, logits)
    if not np.all(np.isfinite(log_p)):
        n_zero = int(np.size(log_p) - np.count_nonzero(np.isfinite(log_p)))
        raise ValueError(
            f"probs has {n_zero} zero probabilit(ies); the calibration map needs finite "
            "log-probabilities (pass logits= instead)"
        )
    return log_p, binary


def _draw_blocks(W: np.ndarray, b: np.ndarray, idx: np.ndarray, log_p: np.ndarray,
                 budget: int = 2**24) -> Any:
    """Yield ``(start, probs)`` for chunks of the draws ``idx``: probs (chunk, n, K)."""
    chunk = max(1, int(budget // max(1, log_p.size)))
    for s in range(0, idx.size, chunk):
        sel = idx[s:s + chunk]
        z = np.einsum("skj,ij->sik", W[sel], log_p) + b[sel, None, :]
        yield s, softmax(z, axis=2)


def _check_counts(counts: ArrayLike, n_items: int, n_classes: int) -> np.ndarray:
    c = check_array(counts, "counts", ndim=2)
    if c.shape != (n_items, n_classes):
        raise ValueError(
            f"counts must have shape (n_items, n_classes) = ({n_items}, {n_classes}) to match "
            f"the predictions, got shape {c.shape}"
        )
    if np.any(c < 0):
        raise ValueError(f"counts must be non-negative, found {float(c.min()):g}")
    if np.any(c != np.round(c)):
        raise ValueError("counts must be whole numbers of votes, found non-integer values")
    totals = c.sum(axis=1)
    if np.any(totals < 1):
        i = int(np.argmin(totals))
        raise ValueError(f"every row of counts needs at least one vote; row {i} has none")
    return c


@dataclass(frozen=True, eq=False)
class SoftLabelFit:
    """A fitted soft-label Dirichlet calibration map with overdispersion.

    Attributes
    ----------
    W : ndarray of shape (n_classes, n_classes)
        Calibration matrix (output class, input class), in its identified form: every
        column sums to zero (the identity map is ``I - 11'/K``). MLE/MAP estimate, or
        posterior mean for NUTS.
    b : ndarray of shape (n_classes,)
        Intercept, summing to zero.
    kappa : float
        Concentration of the annotators' vote distribution around the calibrated
        probabilities (large: annotators vote like a multinomial draw).
    draws : dict of str to ndarray or None
        NUTS only: ``'W'`` (n_draws, K, K), ``'b'`` (n_draws, K), ``'kappa'`` (n_draws,),
        chains concatenated.
    std_errors : dict of str to ndarray
        Delta-method standard errors (MLE/MAP) or posterior standard deviations (NUTS) of
        ``W``, ``b`` and ``kappa``.
    loglik : float
        Log-likelihood at ``(W, b, kappa)``.
    status : str
        ``'ok'`` or what went wrong: the engine's (``'not_converged'``, for NUTS also
        divergent transitions; ``'nonfinite'``; ``'diagnostics_unavailable'``: NUTS R-hat
        could not be computed), ``'not_identified'`` (every item has one vote, so
        ``kappa`` is not identified) or ``'boundary'`` (MLE/MAP: ``kappa`` at the
        multinomial limit, :data:`KAPPA_EXCESS`). The most severe of ``statuses``.
    message : str
        Explanation of the non-ok statuses, the most severe first.
    method : {'mle', 'map', 'nuts'}
        How the fit was made.
    n_items, n_classes : int
        Sizes of the data.
    prior_scale : float
        The prior scale of the model that was fitted.
    engine_result : MLEResult or NUTSResult
        The engine's full result (covariance, diagnostics, samples).
    engine : MLE, MAP or NUTS
        The engine option object the fit ran, so that
        ``DirichletSoftLabels().fit(..., method=fit.engine)`` refits with the same
        settings.
    statuses : tuple of str
        Every status that applies, most severe first and without repeats (the ranking
        :data:`noisycal._util.statuses.SEVERITY`), merged with ``status``: ``('ok',)``
        when none applies, so ``status == statuses[0]`` always.
    """

    W: np.ndarray
    b: np.ndarray
    kappa: float
    draws: dict[str, np.ndarray] | None = field(repr=False)
    std_errors: dict[str, np.ndarray] = field(repr=False)
    loglik: float
    status: str
    message: str
    method: str
    n_items: int
    n_classes: int
    prior_scale: float
    engine_result: Any = field(repr=False)
    engine: Any = field(default=None, repr=False)
    statuses: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        statuses = ordered_statuses((str(self.status), *self.statuses))
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "status", statuses[0])

    def __repr__(self) -> str:
        status = (f"statuses={self.statuses!r}" if len(self.statuses) > 1
                  else f"status={self.status!r}")
        return (f"SoftLabelFit(method={self.method!r}, n_items={self.n_items}, "
                f"n_classes={self.n_classes}, kappa={self.kappa:.4g}, {status}, "
                f"loglik={self.loglik:.4f})")

    @property
    def params(self) -> dict[str, Any]:
        """``{'W': W, 'b': b, 'kappa': kappa}``."""
        return {"W": self.W, "b": self.b, "kappa": self.kappa}

    def predict_proba(self, *, logits: ArrayLike | None = None,
                      probs: ArrayLike | None = None, draws: bool = False,
                      thin: int = 1, max_draws: int | None = None) -> np.ndarray:
        """Calibrated probabilities ``softmax(W log p + b)``, or their posterior draws.

        Parameters
        ----------
        logits, probs : array-like of shape (n_items, n_classes) or (n_items,)
            The classifier's predictions; give exactly one. A 1-D input holds binary
            positive-class values.
        draws : bool, default=False
            False: one matrix (the MLE/MAP map, or for a NUTS fit the posterior mean of
            the calibrated probabilities over the draws). True (NUTS fits only): the
            calibrated probabilities under every posterior draw of ``(W, b)``.
        thin : int, default=1
            Use every ``thin``-th posterior draw (chains concatenated), for both forms;
            checked but unused for a fit without draws (MLE or MAP).
        max_draws : int, optional
            At most this many draws, evenly spaced over the thinned ones (both forms).

        Returns
        -------
        ndarray
            ``draws=False``: shape (n_items, n_classes), or (n_items,) for a 1-D input.
            ``draws=True``: shape (n_draws, n_items, n_classes), or (n_draws, n_items)
            for a 1-D input. The draws are computed in chunks of about 2**24 numbers so
            that the intermediate arrays stay bounded; the result itself holds
            ``n_draws * n_items * n_classes`` numbers (use ``thin``/``max_draws`` to
            bound it).

        Raises
        ------
        ValueError
            For ``draws=True`` on a fit without posterior draws (``method='mle'`` or
            ``'map'``), invalid ``thin``/``max_draws``, or predictions with the wrong
            number of classes.
        """
        if not isinstance(draws, bool | np.bool_):
            raise ValueError(f"draws must be True or False, got {draws!r}")
        if draws and self.draws is None:
            raise ValueError(f"draws=True needs posterior draws of the map (method='nuts'); "
                             f"this fit is method={self.method!r}")
        check_int(thin, "thin", minimum=1)  # checked for every fit (used with draws)
        if max_draws is not None:
            check_int(max_draws, "max_draws", minimum=1)
        log_p, binary = self._log_p(logits, probs)
        if self.draws is None:
            out = softmax(log_p @ self.W.T + self.b, axis=1)
            return out[:, 1] if binary else out
        idx = self.draw_index(thin=thin, max_draws=max_draws)
        if draws:
            out = np.empty((idx.size, *log_p.shape))
            for s, block in _draw_blocks(self.draws["W"], self.draws["b"], idx, log_p):
                out[s:s + block.shape[0]] = block
            return out[..., 1] if binary else out
        out = np.zeros_like(log_p)
        for _, block in _draw_blocks(self.draws["W"], self.draws["b"], idx, log_p):
            out += block.sum(axis=0)
        out /= idx.size
        return out[:, 1] if binary else out

    def draw_index(self, *, thin: int = 1, max_draws: int | None = None) -> np.ndarray:
        """Indices of the posterior draws that ``thin`` and ``max_draws`` keep.

        Parameters
        ----------
        thin : int, default=1
            Every ``thin``-th draw (chains concatenated).
        max_draws : int, optional
            At most this many, evenly spaced over the thinned draws (deterministic).

        Returns
        -------
        ndarray of int
        """
        if self.draws is None:
            raise ValueError(f"this fit has no posterior draws (method={self.method!r})")
        thin = check_int(thin, "thin", minimum=1)
        idx = np.arange(0, self.draws["W"].shape[0], thin)
        if max_draws is not None:
            max_draws = check_int(max_draws, "max_draws", minimum=1)
            if idx.size > max_draws:
                idx = idx[np.unique(np.round(np.linspace(0, idx.size - 1, max_draws))
                                    .astype(np.int64))]
        return idx

    def _log_p(self, logits: ArrayLike | None, probs: ArrayLike | None
               ) -> tuple[np.ndarray, bool]:
        log_p, binary = _log_predictions(probs, logits)
        if log_p.shape[1] != self.n_classes:
            name = "logits" if logits is not None else "probs"
            raise ValueError(f"{name} must have {self.n_classes} classes (the fitted map's), "
                             f"got {log_p.shape[1]}")
        return log_p, binary

    def summary(self) -> pd.DataFrame:
        """One row per scalar parameter (``W[k, j]``, ``b[k]``, ``kappa``).

        Columns are ``estimate`` and ``std_err`` (posterior mean and standard deviation
        for NUTS, which adds ``r_hat``, ``ess_bulk`` and ``ess_tail``).
        """
        rows = []
        for name, value in (("W", self.W), ("b", self.b), ("kappa", np.asarray(self.kappa))):
            se = np.asarray(self.std_errors[name])
            labels = [name] if value.ndim == 0 else [
                f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*value.shape)
            ]
            for label, v, s in zip(labels, np.ravel(value), np.ravel(se), strict=True):
                rows.append({"parameter": label, "estimate": float(v), "std_err": float(s)})
        table = pd.DataFrame(rows).set_index("parameter")
        if self.method == "nuts":
            diag = self.engine_result.diagnostics
            table = table.join(diag[["r_hat", "ess_bulk", "ess_tail"]], how="left")
        return table

    def conf_int(self, level: float = 0.9) -> pd.DataFrame:
        """Equal-tailed posterior credible intervals of ``W``, ``b`` and ``kappa`` (NUTS).

        Parameters
        ----------
        level : float, default=0.9
            Credible level, a fraction in (0, 1).

        Returns
        -------
        pandas.DataFrame
            One row per scalar parameter (as in ``summary()``), columns ``lower`` and
            ``upper``.

        Raises
        ------
        ValueError
            For a fit without draws (``method='mle'`` or ``'map'``: use ``std_errors``).
        """
        if self.draws is None:
            raise ValueError(f"conf_int needs posterior draws (method='nuts'); this fit is "
                             f"method={self.method!r}, see std_errors")
        from ..engines.density.nuts import draws_conf_int

        return draws_conf_int(self.draws, level)

    def to_frame(self) -> pd.DataFrame:
        """The ``summary()`` table as a tidy DataFrame (``parameter`` as a column)."""
        return self.summary().reset_index()

    def to_arviz(self, *, logits: ArrayLike | None = None, probs: ArrayLike | None = None,
                 counts: ArrayLike | None = None, seed: Seed = 0,
                 predictive: bool = True) -> Any:
        """The posterior as ``arviz.InferenceData`` (NUTS fits only).

        ``posterior`` and ``sample_stats`` always; given the data the model was fitted on
        (``counts`` and one of ``logits``/``probs``), also per-item ``log_likelihood``,
        ``observed_data`` and ``posterior_predictive`` (replicated counts), so that
        ``az.loo``, ``az.waic`` and ``az.plot_ppc`` apply
        (:func:`noisycal.engines.density.arviz_export.soft_label_inference_data`).

        Parameters
        ----------
        logits, probs : array-like of shape (n_items, n_classes) or (n_items,), optional
            The predictions the model was fitted on; give at most one.
        counts : array-like of shape (n_items, n_classes), optional
            The vote counts it was fitted on.
        seed : int or jax key, default=0
            Randomness of the replicated counts.
        predictive : bool, default=True
            Add ``posterior_predictive`` (when the data are given).
        """
        if self.method != "nuts":
            raise ValueError(f"to_arviz needs a fit with method='nuts', this one is "
                             f"method={self.method!r}")
        if not isinstance(predictive, bool | np.bool_):
            raise ValueError(f"predictive must be True or False, got {predictive!r}")
        seed = check_seed(seed)
        from ..engines.density.arviz_export import soft_label_inference_data

        if counts is None and logits is None and probs is None:
            return soft_label_inference_data(self.engine_result, None, None)
        if counts is None:
            raise ValueError("counts is required with logits= or probs= (the data the "
                             "model was fitted on)")
        log_p, _ = self._log_p(logits, probs)
        c = _check_counts(counts, *log_p.shape)
        return soft_label_inference_data(self.engine_result, log_p, c, seed=seed,
                                         predictive=bool(predictive))

    to_inference_data = to_arviz


class DirichletSoftLabels:
    """Soft-label Dirichlet calibration with an overdispersion parameter.

    Annotator vote counts ``c_i`` on item i are modelled as
    ``DirichletMultinomial(n_i, kappa * softmax(W log p_i + b))`` around the calibrated
    classifier probabilities (see ``noisycal.models.soft_labels``). The maximum
    likelihood fit is soft-label Dirichlet calibration that accounts for the
    annotators' disagreement beyond multinomial noise; NUTS gives a posterior over
    calibration maps.

    Parameters
    ----------
    prior_scale : float, default=1.0
        Standard deviation of the Normal priors ``W ~ Normal(I, prior_scale)`` and
        ``b ~ Normal(0, prior_scale)`` (elementwise); ``log kappa ~ Normal(log 10, 1.5)``.
        Used by ``method='map'`` and ``'nuts'``; a maximum likelihood fit
        (``method='mle'``) has no prior and refuses a ``prior_scale`` other than the
        default rather than ignore it.

    Examples
    --------
    >>> import numpy as np
    >>> from noisycal.annotators.soft_labels import DirichletSoftLabels
    >>> probs = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]] * 20)
    >>> counts = np.array([[6, 3, 1], [2, 6, 2], [1, 1, 8]] * 20)
    >>> fit = DirichletSoftLabels().fit(probs=probs, counts=counts, method="map")
    >>> fit.engine
    MAP()
    >>> fit.predict_proba(probs=probs).shape
    (60, 3)

    Notes
    -----
    With ``kappa -> infinity`` the likelihood becomes the multinomial one, and the
    maximum likelihood ``(W, b)`` is soft-label Dirichlet calibration (minimum soft-label
    cross-entropy), the Dirichlet-Soft of Tao, Luo, Dong & Xu (2026, Section 6); the
    overdispersion ``kappa`` and the posterior are noisycal's extension, not theirs. Two
    differences from their Dirichlet-Soft: the map acts on log-probabilities, as in Kull
    et al. (Tao et al. use logits, which a full
    ``W`` does not treat the same), and the regulariser is the Normal prior of
    ``method='map'``/``'nuts'`` (shrinking ``W`` towards the identity map) instead of
    ODIR. ``W`` and ``b`` are reported in their identified form (columns of ``W`` and
    ``b`` sum to zero; see ``noisycal.models.soft_labels``).

    References
    ----------
    .. [1] Tao, Luo, Dong & Xu, "Confidence Calibration under Ambiguous Ground Truth",
       arXiv:2603.22879 (2026).
    .. [2] Kull et al., "Beyond temperature scaling: Obtaining well-calibrated
       multiclass probabilities with Dirichlet calibration", NeurIPS 2019.
    """

    def __init__(self, prior_scale: float = 1.0) -> None:
        if (isinstance(prior_scale, bool) or not isinstance(prior_scale, int | float | np.floating)
                or not math.isfinite(prior_scale) or prior_scale <= 0):
            raise ValueError(f"prior_scale must be a positive number, got {prior_scale!r}")
        self.prior_scale = float(prior_scale)

    def __repr__(self) -> str:
        return f"DirichletSoftLabels(prior_scale={self.prior_scale:g})"

    def fit(self, *, logits: ArrayLike | None = None, probs: ArrayLike | None = None,
            counts: ArrayLike, method: Method | str | None = None,
            init_params: dict | None = None, seed: Seed = 0,
            progress: bool = False) -> SoftLabelFit:
        """Fit the calibration map and concentration.

        Parameters
        ----------
        logits, probs : array-like of shape (n_items, n_classes) or (n_items,)
            The classifier's predictions; give exactly one. 1-D inputs are binary
            positive-class values (then ``counts`` has 2 columns: negative, positive).
        counts : array-like of shape (n_items, n_classes)
            Annotator votes per item and class: non-negative whole numbers, at least one
            vote per item. This is the one annotator model whose fit is not called with
            ``target=``, for a documented reason: the Dirichlet-multinomial likelihood needs
            the raw vote counts, because the number of votes per item carries the
            information about the overdispersion ``kappa``; a target (``targets.soft``)
            holds only the normalised shares and would lose it. ``probs=``/``logits=`` are
            the classifier's predictions, as everywhere.
        method : MLE, MAP or NUTS object, or {'mle', 'map', 'nuts'}, optional
            The engine and its settings (:mod:`noisycal.engines.methods`): maximum
            likelihood (default ``MLE()``; its ``weak_threshold`` does not apply), the
            posterior mode under the Normal priors (:class:`~noisycal.engines.MAP`, with
            ``jacobian`` and ``hessian``), or NUTS posterior sampling (every
            :class:`~noisycal.engines.NUTS` field reaches the sampler,
            :func:`noisycal.engines.density.nuts.run_nuts`).
        init_params : dict, optional
            Starting values by site name (constrained scale): the optimiser's start, or
            every chain's (:func:`noisycal.engines.density.mle.fit_map`,
            :func:`~noisycal.engines.density.nuts.run_nuts`).
        seed : int or jax key, default=0
            Randomness of the engine (NUTS draws; initialisation).
        progress : bool, default=False
            A bar on stderr: L-BFGS iterations, or NUTS transitions.

        Returns
        -------
        SoftLabelFit
            ``method`` the engine's name, ``engine`` the object; ``statuses`` every
            status that applies (the engine's, ``'not_identified'`` and ``'boundary'``,
            see :func:`fit_problems`).

        Raises
        ------
        ValueError
            On invalid predictions or counts, an engine the model does not offer, a
            ``prior_scale`` other than 1 with MLE (which has no prior), or an MLE
            ``weak_threshold`` (this model has no identification check).
        """
        # (over 80 lines only because of the numpydoc docstring above; the body is short)
        engine = as_method(method, (MLE, MAP, NUTS), where="DirichletSoftLabels")
        progress = check_progress(progress)
        if isinstance(engine, MLE):
            if self.prior_scale != 1.0:
                raise ValueError(f"prior_scale={self.prior_scale:g} applies only to the MAP "
                                 "or NUTS engine (a maximum likelihood fit has no prior)")
            if engine.weak_threshold != WEAK_THRESHOLD:
                raise ValueError("weak_threshold does not apply to DirichletSoftLabels: it "
                                 "has no identification check")
        log_p, _ = _log_predictions(probs, logits)
        n_items, n_classes = log_p.shape
        c = _check_counts(counts, n_items, n_classes)

        from noisycal.models.soft_labels import dirichlet_soft_labels

        model_kwargs = {"prior_scale": self.prior_scale}
        if isinstance(engine, MLE | MAP):
            from ..engines.density.mle import fit_map

            res = fit_map(dirichlet_soft_labels, model_args=(log_p, c),
                          model_kwargs=model_kwargs, init_params=init_params, seed=seed,
                          max_iter=engine.max_iter, tol=engine.tol,
                          prior=isinstance(engine, MAP),
                          jacobian=getattr(engine, "jacobian", False),
                          hessian=engine.hessian, progress=progress)
            W = np.asarray(res.params["W"])
            b = np.asarray(res.params["b"])
            kappa = float(res.params["kappa"])
            std_errors = {k: np.asarray(res.std_errors[k]) for k in ("W", "b", "kappa")}
            status, message, statuses = _statuses(res.status, res.message,
                                                  fit_problems(kappa, c.sum(axis=1)))
            return SoftLabelFit(
                W=W, b=b, kappa=kappa, draws=None, std_errors=std_errors, loglik=res.loglik,
                status=status, message=message, method=engine.name, n_items=n_items,
                n_classes=n_classes, prior_scale=self.prior_scale, engine_result=res,
                engine=engine, statuses=statuses,
            )

        from ..engines.density.nuts import run_nuts

        if engine.extend:
            raise ValueError("method: NUTS(extend=True) reruns annotator-model fits until "
                             "they converge; the soft-label model runs the settings it is "
                             "given (num_warmup, num_samples)")
        res = run_nuts(dirichlet_soft_labels, model_args=(log_p, c), model_kwargs=model_kwargs,
                       seed=seed, progress_bar=progress, init_params=init_params,
                       rhat_threshold=engine.rhat_threshold, **engine.sampler())
        flat = res.flat_samples()
        draws = {k: np.asarray(flat[k]) for k in ("W", "b", "kappa")}
        W, b = draws["W"].mean(axis=0), draws["b"].mean(axis=0)
        kappa = float(draws["kappa"].mean())
        std_errors = {k: v.std(axis=0, ddof=1) for k, v in draws.items()}
        status, message, statuses = _statuses(res.status, res.message,
                                              fit_problems(None, c.sum(axis=1)))
        return SoftLabelFit(
            W=W, b=b, kappa=kappa, draws=draws, std_errors=std_errors,
            loglik=_loglik(W, b, kappa, log_p, c), status=status, message=message,
            method=engine.name, n_items=n_items, n_classes=n_classes,
            prior_scale=self.prior_scale, engine_result=res, engine=engine,
            statuses=statuses,
        )


def _statuses(status: str, message: str, problems: list[tuple[str, str]]
              ) -> tuple[str, str, tuple[str, ...]]:
    """The engine's status merged with the model's own problems: ``(status, message,
    statuses)``, most severe first; one IdentifiabilityWarning for ``'not_identified'``
    (the engine warned for its own)."""
    found = ([(status, message)] if status != "ok" else []) + problems
    statuses = ordered_statuses(code for code, _ in found)
    texts = dict(reversed(found))  # the first message of each status
    message = join_messages("", *(texts[code] for code in statuses if code in texts))
    if any(code == "not_identified" for code, _ in problems):
        warnings.warn(f"DirichletSoftLabels: {texts['not_identified']}",
                      IdentifiabilityWarning, stacklevel=3)
    return statuses[0], message, statuses


def _loglik(W: np.ndarray, b: np.ndarray, kappa: float, log_p: np.ndarray,
            counts: np.ndarray) -> float:
    """The model's log-likelihood at given parameters, in float64."""
    from noisycal.models.soft_labels import log_likelihood

    from .._util.jax import x64

    with x64():
        return float(log_likelihood(W, b, kappa, log_p, counts).sum())
