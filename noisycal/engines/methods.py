"""Inference engines as option objects, each holding and checking its own settings.

Every annotator model's ``fit(annotations, *, method=...)`` takes one of these objects, or
a string naming one with its defaults (``method="nuts"`` is ``NUTS()``); each object
checks its own fields when it is made, so a setting of one engine cannot reach another.
A model that has no such engine refuses it by name (:func:`as_method`). The fit keeps the
object it ran (``fit.engine``), so ``model.fit(other, method=fit.engine)`` refits with the
same settings.

- :class:`EM`: multi-start EM or MAP-EM (the Dawid–Skene family).
- :class:`MLE`: gradient maximum likelihood (MAP where the model object has priors) on the
  NumPyro log density.
- :class:`MAP`: the posterior mode under the model's priors, for the models whose priors
  are always on (:class:`~noisycal.annotators.DirichletSoftLabels`).
- :class:`NUTS`: the No-U-Turn sampler.
- :class:`Moments` and :class:`GMM`: Hui–Walter's closed-form method of moments and the
  constrained grouped GMM (:class:`~noisycal.annotators.HuiWalter`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from .._util.jax import check_devices
from .._util.validation import check_choice, check_int, check_real
from .density.nuts import check_sampler_options
from .gmm import check_open_unit
from .identification import WEAK_THRESHOLD, check_weak_threshold

__all__ = ["EM", "MLE", "MAP", "NUTS", "Moments", "GMM", "Method", "as_method", "EM_INITS",
           "CHAIN_METHODS", "GMM_WEIGHTS"]


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


#: How EM starts (see :class:`EM`).
EM_INITS = ("mixed", "soft_vote", "moments")
#: How NUTS runs several chains.
CHAIN_METHODS = ("vectorized", "sequential", "parallel")
#: The weight matrices of :class:`GMM`.
GMM_WEIGHTS = ("identity", "efficient")


class Method:
    """Base of the engine option objects: a name, a repr showing non-default fields."""

    #: The engine's name: its string shorthand and ``fit.method``.
    name: ClassVar[str] = ""

    def _set(self, field_name: str, value: Any) -> None:
        object.__setattr__(self, field_name, value)

    def __repr__(self) -> str:
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)  # type: ignore
                 if getattr(self, f.name) != f.default]
        return f"{type(self).__name__}({', '.join(shown)})"

    def changed(self) -> list[str]:
        """The names of the fields that differ from their defaults.

        Returns
        -------
        list of str

        Examples
        --------
        >>> EM(n_starts=3).changed()
        ['n_starts']
        """
        return [f.name for f in fields(self)  # type: ignore[arg-type]
                if getattr(self, f.name) != f.default]


@dataclass(frozen=True, repr=False)
class EM(Method):
    """Expectation-maximisation: the maximum-likelihood fit, or MAP-EM with the model's priors.

    Multi-start EM of Dawid and Skene (1979), "Maximum likelihood estimation of observer
    error-rates using the EM algorithm" (their Section 2), the starts run vmapped in one
    compiled call and the best log-likelihood kept.

    Parameters
    ----------
    init : {'mixed', 'soft_vote', 'moments'}, default='mixed'
        The starts. 'soft_vote': each item's share of ratings as its posterior (Dawid &
        Skene's own start); 'mixed': the soft vote first, then random diagonal-dominant
        channels (rows ~ Dirichlet(1 + 4 e_k)); 'moments' (two classes, at least 3
        annotators): the closed-form triple-moment estimate of "Noisy-Label Calibration
        with Multiple Unreliable Labels" (Proposition D.2, anchored on the fit's
        ``anchor`` annotator, else the first) first, then the soft vote, then random
        starts; when the moment solution does not exist it is left out and
        ``details['moment_start']`` says why.
    n_starts : int, default=10
        Starts (at least 1).
    max_iter : int, default=1000
        Iterations per start.
    tol : float, default=1e-8
        EM stops when the mean log-likelihood per item changes by less than ``tol``.
    n_boot : int, default=0
        Bootstrap refits over items (started from the fit), stored as ``draws`` for
        ``conf_int`` (0: none; ``fit.bootstrap_draws`` computes them on demand).
    screen_gaps : bool, default=False
        Two classes: the acceptance rule of "Noisy-Label Calibration with Multiple
        Unreliable Labels": orient every start by the anchor annotator's gap (the fit's
        ``anchor``, else the first annotator) and choose the largest likelihood among
        the starts whose every gap exceeds 1e-4; when no start passes, the best start is
        returned with status 'small_gap'. ``details['screened_starts']`` records which
        starts passed.
    weak_threshold : float, default=0.005
        The status is 'weakly_identified' when the relative information of the fit
        (observed over complete-data information, smallest eigenvalue) is below it;
        ``details['identification']`` holds the numbers
        (:mod:`noisycal.engines.identification`).
    devices : int or sequence of jax devices, optional
        Shard the rating patterns over these devices (or the first ``devices`` of
        ``jax.devices()``); the same fit up to the order of sums. Bootstrap refits use
        one device.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.EM(n_starts=20, n_boot=200)
    EM(n_starts=20, n_boot=200)
    """

    name: ClassVar[str] = "em"
    init: str = "mixed"
    n_starts: int = 10
    max_iter: int = 1000
    tol: float = 1e-8
    n_boot: int = 0
    screen_gaps: bool = False
    weak_threshold: float = WEAK_THRESHOLD
    devices: Any = None

    def __post_init__(self) -> None:
        check_choice(self.init, "init", EM_INITS)
        self._set("n_starts", check_int(self.n_starts, "n_starts", minimum=1))
        self._set("max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        self._set("tol", check_real(self.tol, "tol", minimum=0.0, strict=True))
        self._set("n_boot", check_int(self.n_boot, "n_boot", minimum=0))
        self._set("screen_gaps", _check_flag(self.screen_gaps, "screen_gaps"))
        self._set("weak_threshold", check_weak_threshold(self.weak_threshold))
        self._set("devices", check_devices(self.devices))


@dataclass(frozen=True, repr=False)
class MLE(Method):
    """Gradient maximum likelihood (or MAP with the model's priors) on the NumPyro log density.

    L-BFGS on the model's unconstrained parameters (:func:`noisycal.engines.density.mle.fit_map`);
    a cross-check of EM, and the point fit of models without a closed-form M-step. With
    the Dawid–Skene family it is MAP when the model object has priors (``alpha`` or
    ``beta``); :class:`~noisycal.annotators.DirichletSoftLabels`, whose prior is always
    set, takes :class:`MAP` for its posterior mode.

    Parameters
    ----------
    max_iter : int, default=1000
        L-BFGS iterations.
    tol : float, default=1e-9
        Relative tolerance on the objective.
    weak_threshold : float, default=0.005
        As in :class:`EM` (models with an identification check).
    hessian : bool, default=True
        Compute the Hessian at the optimum (standard errors, and the Newton-decrement
        acceptance of an optimum L-BFGS stopped short of).

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.MLE(max_iter=200)
    MLE(max_iter=200)
    """

    name: ClassVar[str] = "mle"
    max_iter: int = 1000
    tol: float = 1e-9
    weak_threshold: float = WEAK_THRESHOLD
    hessian: bool = True

    def __post_init__(self) -> None:
        self._set("max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        self._set("tol", check_real(self.tol, "tol", minimum=0.0, strict=True))
        self._set("weak_threshold", check_weak_threshold(self.weak_threshold))
        self._set("hessian", _check_flag(self.hessian, "hessian"))


@dataclass(frozen=True, repr=False)
class MAP(Method):
    """The posterior mode under the model's priors, by L-BFGS on the NumPyro log density.

    The same optimiser as :class:`MLE` (:func:`noisycal.engines.density.mle.fit_map` with
    ``prior=True``), for a model whose priors are part of its definition
    (:class:`~noisycal.annotators.DirichletSoftLabels`' ``prior_scale``); its own object,
    not an option of :class:`MLE`, so that a fit says which estimate it is
    (``fit.method == 'map'``).

    Parameters
    ----------
    max_iter : int, default=1000
        L-BFGS iterations.
    tol : float, default=1e-9
        Relative tolerance on the objective.
    jacobian : bool, default=False
        Add the log Jacobian of the unconstrained-to-constrained map: the mode of the
        posterior density of the unconstrained parameters (what NUTS explores) instead of
        the usual mode on the constrained scale.
    hessian : bool, default=True
        As in :class:`MLE`.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.MAP(jacobian=True)
    MAP(jacobian=True)
    """

    name: ClassVar[str] = "map"
    max_iter: int = 1000
    tol: float = 1e-9
    jacobian: bool = False
    hessian: bool = True

    def __post_init__(self) -> None:
        self._set("max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        self._set("tol", check_real(self.tol, "tol", minimum=0.0, strict=True))
        self._set("jacobian", _check_flag(self.jacobian, "jacobian"))
        self._set("hessian", _check_flag(self.hessian, "hessian"))


@dataclass(frozen=True, repr=False)
class NUTS(Method):
    """The No-U-Turn sampler on the model's NumPyro log density (float64).

    Every field reaches the sampler of every model
    (:func:`noisycal.engines.density.nuts.sample_nuts`).

    Parameters
    ----------
    num_chains : int, default=4
    num_warmup : int, default=1000
        Adaptation steps per chain (at least 1).
    num_samples : int, default=1000
        Kept draws per chain.
    target_accept_prob : float, default=0.8
        The step-size adaptation's target acceptance probability, in (0, 1); raise it
        (0.9, 0.95) when transitions diverge.
    max_tree_depth : int, default=10
        At most ``2**max_tree_depth`` leapfrog steps per transition.
    dense_mass : bool, default=False
        Adapt a dense mass matrix instead of a diagonal one.
    chain_method : {'vectorized', 'sequential', 'parallel'}, default='vectorized'
        How the chains run: 'vectorized' compiles the sampler once for all chains
        (measured fastest on CPU for these small models); 'parallel' needs one JAX
        device per chain.
    rhat_threshold : float, default=1.01
        The fit's status is 'not_converged' when the largest R-hat exceeds it (or a
        transition diverged); 'diagnostics_unavailable' without R-hat (one chain, fewer
        than 4 draws per chain).
    extend : bool, optional
        Extend the fit while its largest R-hat exceeds ``rhat_threshold`` or its
        smallest bulk ESS is below ``min_ess``, at most ``max_extensions`` times. An
        extension **continues** the chains: each resumes from its last state with its
        adapted step size and mass matrix, without new warm-up, and draws as many draws
        again as it holds, so the draws per chain double and the fit uses the earlier
        draws followed by the new ones (one compiled continuation program serves every
        extension). It **restarts** instead, from the same seed with the last run's
        warm-up and draws both doubled, after a run with divergent transitions, or after
        a continuation whose R-hat is still above the threshold and whose excess over 1
        did not fall below 3/4 of the run's before (a chain stuck in another mode), or
        when the chains could not be kept (:func:`noisycal.engines.density.nuts.extended_fit`).
        The budget: at most ``2**max_extensions`` times the first run's draws per chain
        in the last run. Divergences alone do not extend (longer chains do not remove
        them; raise ``target_accept_prob``). Default (None): extend when ``num_warmup``
        and ``num_samples`` are at their defaults, run exactly the given numbers
        otherwise. The fit's ``details['extensions']`` lists every run's warm-up, draws
        per chain (in all), R-hat, ESS, whether it ``continued`` and any
        ``restart_reason``; ``fit.engine`` is the settings of the last run (its
        ``num_samples`` counts every draw of the continued chains). Annotator models
        only (the soft-label model refuses ``extend=True``).
    max_extensions : int, default=2
        The most extensions (continuations or restarts).
    min_ess : float, default=400
        The smallest bulk ESS (of every parameter) that stops the extension.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.NUTS(num_chains=2, target_accept_prob=0.95)
    NUTS(num_chains=2, target_accept_prob=0.95)
    >>> nc.engines.NUTS().extends, nc.engines.NUTS(num_samples=500).extends
    (True, False)
    """

    name: ClassVar[str] = "nuts"
    num_chains: int = 4
    num_warmup: int = 1000
    num_samples: int = 1000
    target_accept_prob: float = 0.8
    max_tree_depth: int = 10
    dense_mass: bool = False
    chain_method: str = "vectorized"
    rhat_threshold: float = 1.01
    extend: bool | None = None
    max_extensions: int = 2
    min_ess: float = 400.0

    #: Sampler settings that judge or repeat the run rather than run it.
    _NOT_SAMPLER: ClassVar[tuple[str, ...]] = ("rhat_threshold", "extend", "max_extensions",
                                               "min_ess")

    @property
    def extends(self) -> bool:
        """Whether a fit with these settings is extended (``extend``; None: when
        ``num_warmup`` and ``num_samples`` are at their defaults)."""
        if self.extend is not None:
            return bool(self.extend)
        defaults = {f.name: f.default for f in fields(self)}
        return (self.num_warmup == defaults["num_warmup"]
                and self.num_samples == defaults["num_samples"])

    def __post_init__(self) -> None:
        c, w, n = check_sampler_options(self.num_chains, self.num_warmup, self.num_samples,
                                        self.chain_method, False, self.rhat_threshold,
                                        min_warmup=1)
        self._set("num_chains", c)
        self._set("num_warmup", w)
        self._set("num_samples", n)
        p = self.target_accept_prob
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 < p < 1.0:
            raise ValueError(f"target_accept_prob must be a number in (0, 1), got {p!r}")
        self._set("target_accept_prob", float(p))
        self._set("max_tree_depth", check_int(self.max_tree_depth, "max_tree_depth",
                                              minimum=1))
        self._set("dense_mass", _check_flag(self.dense_mass, "dense_mass"))
        self._set("rhat_threshold", float(self.rhat_threshold))
        if self.extend is not None:
            self._set("extend", _check_flag(self.extend, "extend"))
        self._set("max_extensions", check_int(self.max_extensions, "max_extensions",
                                              minimum=0))
        self._set("min_ess", check_real(self.min_ess, "min_ess", minimum=0.0))

    def sampler(self) -> dict[str, Any]:
        """The keyword arguments of :func:`noisycal.engines.density.nuts.sample_nuts` this
        object sets (every field but ``rhat_threshold``, which judges the draws, and the
        extension's ``extend``, ``max_extensions`` and ``min_ess``).

        Returns
        -------
        dict

        Examples
        --------
        >>> sorted(NUTS().sampler())  # doctest: +NORMALIZE_WHITESPACE
        ['chain_method', 'dense_mass', 'max_tree_depth', 'num_chains', 'num_samples',
         'num_warmup', 'target_accept_prob']
        """
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in self._NOT_SAMPLER}


@dataclass(frozen=True, repr=False)
class Moments(Method):
    """Hui–Walter's closed-form method of moments: two annotators, two groups.

    Inverts the six group moments (Hui & Walter, 1980; Eqs. 13, D.3 and D.5 of
    "Noisy-Label Calibration with Multiple Unreliable Labels",
    :func:`noisycal.engines.moments.hui_walter_inverse`); an infeasible inverse is a
    status, never numbers that look fine.

    Parameters
    ----------
    weak_threshold : float, default=0.005
        The status is 'weakly_identified' when the relative information (the inverse GMM
        sandwich covariance from the moment Jacobian over the complete-data information,
        smallest eigenvalue) is below it.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.Moments()
    Moments()
    """

    name: ClassVar[str] = "mom"
    weak_threshold: float = WEAK_THRESHOLD

    def __post_init__(self) -> None:
        self._set("weak_threshold", check_weak_threshold(self.weak_threshold))


@dataclass(frozen=True, repr=False)
class GMM(Method):
    """The constrained grouped GMM of Hui–Walter on L >= 2 ordered score groups.

    Definition D.1 of "Noisy-Label Calibration with Multiple Unreliable Labels": a
    quadratic form in the 3L group moments minimised over a compact constraint set by
    SLSQP from a closed-form start and ``n_starts`` seeded random starts
    (:func:`noisycal.engines.gmm.two_step_gmm`).

    Parameters
    ----------
    weight : {'identity', 'efficient'}, default='identity'
        The identity weight, or the two-step weight: a first step with the identity, then
        the inverse of the estimated covariance of the moment vector (block diagonal over
        groups, a small ridge where a block is singular). With it the objective at the
        estimate is Hansen's J statistic, asymptotically chi-squared with 2L - 4 degrees
        of freedom at an interior point.
    min_gap : float, default=1e-4
        Lower bound on each gap b_j - a_j; in (0, 1).
    min_separation : float, default=1e-5
        Lower bound on mu_L - mu_1; in (0, 1).
    n_starts : int, default=5
        Seeded random starts besides the closed-form start (the fit's ``seed``).
    max_iter : int, default=500
        SLSQP iterations per start.
    weak_threshold : float, default=0.005
        As in :class:`Moments`.

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.GMM(weight="efficient", n_starts=3)
    GMM(weight='efficient', n_starts=3)
    """

    name: ClassVar[str] = "gmm"
    weight: str = "identity"
    min_gap: float = 1e-4
    min_separation: float = 1e-5
    n_starts: int = 5
    max_iter: int = 500
    weak_threshold: float = WEAK_THRESHOLD

    def __post_init__(self) -> None:
        check_choice(self.weight, "weight", GMM_WEIGHTS)
        self._set("min_gap", check_open_unit(self.min_gap, "min_gap"))
        self._set("min_separation", check_open_unit(self.min_separation, "min_separation"))
        self._set("n_starts", check_int(self.n_starts, "n_starts", minimum=1))
        self._set("max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        self._set("weak_threshold", check_weak_threshold(self.weak_threshold))


_SHORTHANDS: dict[str, type[Method]] = {cls.name: cls for cls in (EM, MLE, MAP, NUTS, Moments,
                                                                    GMM)}


def as_method(method: object, offered: tuple[type[Method], ...], *, where: str) -> Method:
    """The engine option object a model's ``fit`` runs, from what the user gave.

    Parameters
    ----------
    method : Method or str or None
        An option object, or a string naming one with its defaults ('em', 'mle', 'map',
        'nuts', 'mom', 'gmm'); None: the model's first offered engine with its defaults.
    offered : tuple of Method classes
        The engines the model offers, its default first.
    where : str
        The model's name, for messages.

    Returns
    -------
    Method

    Raises
    ------
    ValueError
        Naming ``method`` for an unknown string or an engine the model does not offer.

    Examples
    --------
    >>> as_method("nuts", (EM, MLE, NUTS), where="DawidSkene")
    NUTS()
    >>> as_method(None, (NUTS,), where="HierarchicalDawidSkene")
    NUTS()
    """
    names = ", ".join(repr(c.name) for c in offered)
    if method is None:
        return offered[0]()
    if isinstance(method, str):
        if method not in _SHORTHANDS:
            raise ValueError(f"method must be one of {names} or an engine object of "
                             f"noisycal.engines, got {method!r}")
        method = _SHORTHANDS[method]()
    if isinstance(method, type) and issubclass(method, Method):
        raise ValueError(f"method must be an engine object, not a class: write "
                         f"{method.__name__}() to use its defaults")
    if not isinstance(method, Method):
        raise ValueError(f"method must be one of {names} or an engine object of "
                         f"noisycal.engines, got {type(method).__name__}")
    if type(method) not in offered:
        raise ValueError(f"{where} has no {type(method).__name__} engine (method={method!r}); "
                         f"it offers {names}")
    return method
