"""The settings of the Dawid–Skene engines: which ``fit`` argument belongs to which method.

``DawidSkene.fit`` takes the arguments of three engines; :func:`method_options` rejects
the ones that do not apply to the chosen method (a ``ValueError`` naming them) and fills
in and validates the ones that do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.progress import check_progress
from .._util.validation import check_choice, check_int, check_real
from .density.nuts import check_sampler_options
from .em.dawid_skene import check_devices
from .identification import WEAK_THRESHOLD, check_weak_threshold

__all__ = ["EM_DEFAULTS", "ITER_DEFAULTS", "NUTS_DEFAULTS", "check_anchor", "method_options"]

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
