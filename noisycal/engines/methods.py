"""Inference engines as option objects: :class:`EM`, :class:`MLE` and :class:`NUTS`.

Every annotator model's ``fit(annotations, *, method=...)`` takes one of these objects, or
a string naming one with its defaults (``method="nuts"`` is ``NUTS()``); each object
checks its own fields when it is made, so a setting of one engine cannot reach another.
A model that has no such engine refuses it by name (:func:`as_method`).

(Transition: :func:`method_options` still reads the old keyword arguments of
``DawidSkene.fit``.)

``DawidSkene.fit`` takes the arguments of three engines; :func:`method_options` rejects
the ones that do not apply to the chosen method (a ``ValueError`` naming them) and fills
in and validates the ones that do.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from .._util.jax import check_devices
from .._util.progress import check_progress
from .._util.validation import check_choice, check_int, check_real
from .density.nuts import check_sampler_options
from .identification import WEAK_THRESHOLD, check_weak_threshold

__all__ = ["EM", "MLE", "NUTS", "Method", "as_method", "EM_INITS", "CHAIN_METHODS",
           "EM_DEFAULTS", "ITER_DEFAULTS", "NUTS_DEFAULTS", "check_anchor", "method_options"]

#: EM-only arguments of ``fit`` and their defaults.
EM_DEFAULTS = {"init": "mixed", "n_starts": 10, "n_boot": 0, "screen_gaps": False,
               "devices": None}
#: Arguments of EM and gradient MLE (defaults by method).
ITER_DEFAULTS = {"em": {"max_iter": 1000, "tol": 1e-8, "weak_threshold": WEAK_THRESHOLD},
                 "mle": {"max_iter": 1000, "tol": 1e-9, "weak_threshold": WEAK_THRESHOLD}}
#: NUTS-only arguments of ``fit`` and their defaults.
NUTS_DEFAULTS = {"num_chains": 4, "num_warmup": 1000, "num_samples": 1000,
                 "progress_bar": True, "rhat_threshold": 1.01, "chain_method": "vectorized"}


def method_options(method: str, given: dict[str, Any]) -> dict[str, Any]:
    """Reject the arguments of other methods, fill in and validate this method's.

    Parameters
    ----------
    method : {'em', 'mle', 'nuts'}
    given : dict
        Every method-specific argument of ``fit`` by name, ``None`` when not given, and
        optionally ``progress`` (every method): EM gets it as ``progress``, NUTS as the
        default of ``progress_bar``; MLE shows no bar.

    Returns
    -------
    dict
        This method's arguments, defaults filled in, validated.

    Raises
    ------
    ValueError
        Naming an argument given for a method it does not apply to, or a bad value.

    Examples
    --------
    >>> method_options("mle", {"n_starts": None, "max_iter": 50, "tol": None,
    ...                        "weak_threshold": None})
    {'max_iter': 50, 'tol': 1e-09, 'weak_threshold': 0.005}
    """
    given = dict(given)
    progress = given.pop("progress", None)
    progress = check_progress(False if progress is None else progress)
    if method == "nuts" and given.get("progress_bar") is None:
        given["progress_bar"] = progress
    owners = {**{k: "'em'" for k in EM_DEFAULTS},
              **{k: "'em' or 'mle'" for k in ITER_DEFAULTS["em"]},
              **{k: "'nuts'" for k in NUTS_DEFAULTS}}
    allowed = {"em": {**EM_DEFAULTS, **ITER_DEFAULTS["em"]}, "mle": ITER_DEFAULTS["mle"],
               "nuts": NUTS_DEFAULTS}[method]
    for name, value in given.items():
        if value is not None and name not in allowed:
            raise ValueError(f"{name} applies to method={owners[name]} only; it has no "
                             f"effect with method={method!r}")
    opts = {k: (d if given[k] is None else given[k]) for k, d in allowed.items()}
    if "max_iter" in opts:
        opts["max_iter"] = check_int(opts["max_iter"], "max_iter", minimum=1)
        opts["tol"] = check_real(opts["tol"], "tol", minimum=0.0, strict=True)
        opts["weak_threshold"] = check_weak_threshold(opts["weak_threshold"])
    if method == "em":
        check_choice(opts["init"], "init", ("mixed", "soft_vote", "moments"))
        opts["n_starts"] = check_int(opts["n_starts"], "n_starts", minimum=1)
        opts["n_boot"] = check_int(opts["n_boot"], "n_boot", minimum=0)
        if not isinstance(opts["screen_gaps"], bool | np.bool_):
            raise ValueError("screen_gaps must be True or False, got "
                             f"{opts['screen_gaps']!r}")
        opts["screen_gaps"] = bool(opts["screen_gaps"])
        opts["devices"] = check_devices(opts["devices"])
        opts["progress"] = progress
    if method == "nuts":
        c, w, s = check_sampler_options(
            opts["num_chains"], opts["num_warmup"], opts["num_samples"],
            opts["chain_method"], opts["progress_bar"], opts["rhat_threshold"],
            min_warmup=1)
        opts.update(num_chains=c, num_warmup=w, num_samples=s)
    return opts


def check_anchor(orientation: str, anchor: object, opts: dict, K: int, J: int) -> int:
    """The anchor annotator where it is used (else ``anchor`` must not be given).

    Parameters
    ----------
    orientation : {'vote', 'anchor'}
        How latent classes are named.
    anchor : object
        The ``anchor`` argument of ``fit`` (None when not given).
    opts : dict
        The method's options (:func:`method_options`); ``init`` and ``screen_gaps``
        decide whether an anchor is used.
    K, J : int
        Classes and annotators.

    Returns
    -------
    int
        The anchor's index (0 where no anchor is used).
    """
    check_choice(orientation, "orientation", ("vote", "anchor"))
    init, screen = opts.get("init"), opts.get("screen_gaps", False)
    if orientation == "anchor" and K != 2:
        raise ValueError(f"orientation='anchor' is defined for two classes, got {K}")
    if init == "moments" and (K != 2 or J < 3):
        raise ValueError("init='moments' needs two classes and at least 3 annotators, "
                         f"got {K} classes and {J} annotators")
    if screen and K != 2:
        raise ValueError("screen_gaps=True is the binary acceptance rule; it needs "
                         f"two classes, got {K}")
    if not (orientation == "anchor" or init == "moments" or screen):
        if anchor is not None:
            raise ValueError("anchor applies only with orientation='anchor', "
                             "init='moments' or screen_gaps=True")
        return 0
    anchor = check_int(0 if anchor is None else anchor, "anchor", minimum=0)
    if anchor >= J:
        raise ValueError(f"anchor must index an annotator (0..{J - 1}), got {anchor}")
    return anchor


#: How EM starts (see :class:`EM`).
EM_INITS = ("mixed", "soft_vote", "moments")
#: How NUTS runs several chains.
CHAIN_METHODS = ("vectorized", "sequential", "parallel")


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
        with Multiple Unreliable Labels" (Proposition D.2) first, then the soft vote, then
        random starts.
    n_starts : int, default=10
        Starts (at least 1).
    max_iter : int, default=1000
        Iterations per start.
    tol : float, default=1e-8
        EM stops when the mean log-likelihood per item changes by less than ``tol``.
    n_boot : int, default=0
        Bootstrap refits over items for ``conf_int`` (0: none; the intervals then come
        from the observed information).
    screen_gaps : bool, default=False
        Two classes: choose among the starts that pass the binary acceptance rule of the
        gaps ``b_j - a_j``.
    weak_threshold : float, default=0.005
        The status is 'weakly_identified' when the relative information of the fit is
        below it (:mod:`noisycal.engines.identification`).
    devices : int or sequence of jax devices, optional
        Shard the rating patterns over these devices.

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
        if not isinstance(self.screen_gaps, bool | np.bool_):
            raise ValueError(f"screen_gaps must be True or False, got {self.screen_gaps!r}")
        self._set("screen_gaps", bool(self.screen_gaps))
        self._set("weak_threshold", check_weak_threshold(self.weak_threshold))
        self._set("devices", check_devices(self.devices))


@dataclass(frozen=True, repr=False)
class MLE(Method):
    """Gradient maximum likelihood (or MAP with the model's priors) on the NumPyro log density.

    L-BFGS on the model's unconstrained parameters (:mod:`noisycal.engines.density.mle`); a
    cross-check of EM, and the point fit of models without a closed-form M-step.

    Parameters
    ----------
    max_iter : int, default=1000
        L-BFGS iterations.
    tol : float, default=1e-9
        Gradient tolerance.
    weak_threshold : float, default=0.005
        As in :class:`EM`.

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

    def __post_init__(self) -> None:
        self._set("max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        self._set("tol", check_real(self.tol, "tol", minimum=0.0, strict=True))
        self._set("weak_threshold", check_weak_threshold(self.weak_threshold))


@dataclass(frozen=True, repr=False)
class NUTS(Method):
    """The No-U-Turn sampler on the model's NumPyro log density (float64).

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
        How the chains run.
    rhat_threshold : float, default=1.01
        The fit's status is 'not_converged' when the largest R-hat exceeds it (or a
        transition diverged).

    Examples
    --------
    >>> import noisycal as nc
    >>> nc.engines.NUTS(num_chains=2, target_accept_prob=0.95)
    NUTS(num_chains=2, target_accept_prob=0.95)
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
        if not isinstance(self.dense_mass, bool | np.bool_):
            raise ValueError(f"dense_mass must be True or False, got {self.dense_mass!r}")
        self._set("dense_mass", bool(self.dense_mass))
        self._set("rhat_threshold", float(self.rhat_threshold))


_SHORTHANDS: dict[str, type[Method]] = {cls.name: cls for cls in (EM, MLE, NUTS)}


def as_method(method: object, offered: tuple[type[Method], ...], *, where: str) -> Method:
    """The engine option object a model's ``fit`` runs, from what the user gave.

    Parameters
    ----------
    method : Method or str or None
        An option object, or a string naming one with its defaults ('em', 'mle',
        'nuts'); None: the model's first offered engine with its defaults.
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
    if not isinstance(method, offered):
        raise ValueError(f"{where} has no {type(method).__name__} engine; it offers {names}")
    return method
