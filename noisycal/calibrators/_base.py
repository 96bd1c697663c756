"""Shared plumbing of the recalibrators: scikit-learn's estimator protocol without sklearn.

Every calibrator follows scikit-learn's conventions (``sklearn.base.BaseEstimator``)
while scikit-learn stays an optional test dependency:

- ``__init__`` takes keyword-only parameters and only stores them; validation happens
  in ``fit``;
- :meth:`Calibrator.get_params` / :meth:`Calibrator.set_params` introspect the
  signature of ``__init__``, so ``sklearn.base.clone`` works;
- ``fit`` returns ``self`` and every fitted attribute ends in ``_``;
- ``predict_proba`` before ``fit`` raises :class:`NotFittedError` (a ``ValueError``
  and ``AttributeError`` subclass, like scikit-learn's own ``NotFittedError``).

Unlike scikit-learn, the inputs are keywords (``fit(probs=p, target=y)`` or
``fit(logits=z, target=y)``), because probabilities and logits are never guessed: a
positional call such as ``fit(X, y)`` raises a ``TypeError`` that spells out the keyword
call (:func:`keyword_inputs`, applied to every subclass's public keyword-only methods).

The private validators below check the calibrators' inputs; each raises ``ValueError``
naming the argument.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from .._util.items import checked_index, first_difference, item_ids_of
from .._util.statuses import ordered_statuses
from .._util.types import ArrayLike
from .._util.validation import check_array, check_labels, user_stacklevel
from ..exceptions import IdentifiabilityWarning
from ..metrics.inputs import check_target_rows
from ..targets.target import Target, as_target_matrix

__all__ = ["Calibrator", "NotFittedError"]


class NotFittedError(ValueError, AttributeError):
    """A calibrator was used before ``fit``.

    Subclasses ``ValueError`` and ``AttributeError``, as scikit-learn's
    ``sklearn.exceptions.NotFittedError`` does, so ``except ValueError`` catches it.
    """


class Calibrator:
    """Base class of the recalibrators: parameters, fitted state and status.

    Subclasses define ``__init__`` with keyword-only parameters that it stores unchanged,
    and set ``_fitted_attr`` to an attribute that ``fit`` always sets.
    """

    #: An attribute that exists exactly when the calibrator is fitted.
    _fitted_attr: ClassVar[str] = "status_"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give the subclass's public keyword-only methods (``fit``, ``predict_proba``, ...)
        the positional-call message of :func:`keyword_inputs`."""
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(member) \
                    and _takes_keywords_only(member):
                setattr(cls, name, keyword_inputs(member))

    # ----------------------------------------------------------------- parameters
    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The keyword-only parameters of ``__init__``, in signature order."""
        init = cls.__init__
        if init is object.__init__:
            return []
        names = []
        for p in inspect.signature(init).parameters.values():
            if p.name == "self":
                continue
            if p.kind is not p.KEYWORD_ONLY:
                raise RuntimeError(f"{cls.__name__}.__init__ must take keyword-only "
                                   f"parameters only; {p.name!r} is {p.kind.description}")
            names.append(p.name)
        return names

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of this calibrator (the arguments of ``__init__``).

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of parameters that are estimators themselves,
            as ``'<name>__<parameter>'`` (scikit-learn's protocol; e.g. ``conformal__alpha``
            of the conformal maps' ``SplitConformal``).

        Returns
        -------
        dict
            Parameter names mapped to their values, exactly as stored.
        """
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> Calibrator:
        """Set parameters (no validation here: ``fit`` validates them).

        Parameters
        ----------
        **params
            New values by parameter name; ``'<name>__<parameter>'`` sets a parameter of
            a nested estimator.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If a name is not a parameter of this calibrator (the message lists them).
        """
        valid = self._get_param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"unknown parameter {name!r} for {type(self).__name__}; "
                                 f"parameters are {tuple(valid)}")
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        """``Name(param=value, ...)`` listing the parameters that differ from defaults."""
        sig = inspect.signature(type(self).__init__).parameters
        shown = []
        for name in self._get_param_names():
            value = getattr(self, name, None)
            default = sig[name].default
            try:
                same = bool(value == default) if not isinstance(value, np.ndarray) else False
            except Exception:  # noqa: BLE001 - objects whose == does not give a bool
                same = False
            if not same or type(value) is not type(default):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    # ----------------------------------------------------------------- fitted state
    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has run (read by ``sklearn.utils.validation.check_is_fitted``)."""
        return hasattr(self, self._fitted_attr)

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit "
                                 "before predict_proba")

    def __sklearn_tags__(self) -> Any:  # noqa: ANN401 - sklearn.utils.Tags, sklearn optional
        """scikit-learn's estimator tags (called by scikit-learn only, so it imports it).

        The inputs are keyword-only 1-D scores (``probs=`` or ``logits=``) and a required
        target; no 2-D feature matrix ``X`` is accepted.
        """
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True),
                    input_tags=InputTags(one_d_array=True, two_d_array=False),
                    requires_fit=True)

    def _set_status(self, status: str, message: str, category: type[Warning] | None,
                    stacklevel: int | None = None) -> None:
        """Store ``status_``/``message_`` and warn (``category``) when the status is not ok;
        the warning points at the first frame outside noisycal unless ``stacklevel`` is
        given.

        A fitting target recorded by :func:`record_fit_target` whose status is not 'ok'
        takes precedence: the calibrator then gets ``'target_not_ok'`` (see
        :func:`inherit_target_status`) whatever its own fit's outcome. ``statuses_``
        keeps every status that applies, most severe first: the target's and each
        non-ok status the fit set since it began (or since it last set 'ok').
        """
        # the fit's own statuses since it began (an 'ok' clears them): kept in statuses_
        # beside a failed target's, which takes precedence as status_
        own = self.__dict__.setdefault("_own_statuses", {})
        if not status.endswith("_not_ok"):
            if status == "ok":
                own.clear()
            else:
                own[status] = message
            if inherit_target_status(self, {"target": self.__dict__.get("_fit_target_obj")}):
                self.statuses_ = ordered_statuses([self.status_, *own])
                return
        self.status_ = status
        self.message_ = message
        self.statuses_ = ordered_statuses([status, *own])
        if status != "ok" and category is not None:
            level = user_stacklevel() if stacklevel is None else stacklevel
            warnings.warn(f"{type(self).__name__}: {message} (status_={status!r})", category,
                          stacklevel=level)


_INPUTS = ("probs", "logits", "target", "annotations")


def _takes_keywords_only(method: Callable) -> bool:
    params = list(inspect.signature(method).parameters.values())[1:]  # after self
    return any(p.kind is p.KEYWORD_ONLY for p in params) and all(
        p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params)


def keyword_inputs(method: Callable) -> Callable:
    """Wrap a keyword-only method so that a positional call says how to call it.

    ``cal.fit(p, y)`` would otherwise fail with Python's bare "takes 1 positional
    argument but 3 were given"; the wrapper raises a ``TypeError`` naming the keyword
    call instead, e.g. ``TemperatureScaling.fit takes its inputs by keyword ...: call
    fit(probs=..., target=...) or fit(logits=..., target=...)``. Keyword calls go
    straight through.

    Parameters
    ----------
    method : callable
        A method whose parameters after ``self`` are keyword-only.

    Returns
    -------
    callable
        The wrapped method (``__wrapped__`` keeps the original and its signature).
    """
    if getattr(method, "_keyword_inputs", False):
        return method
    params = list(inspect.signature(method).parameters.values())[1:]
    names = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    shown = [n for n in _INPUTS if n in names] or [
        p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    variants = [shown]
    if "probs" in shown and "logits" in shown:  # one of the two, never both
        variants = [[n for n in shown if n != "logits"], [n for n in shown if n != "probs"]]

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            calls = " or ".join(f"{method.__name__}(" + ", ".join(f"{n}=..." for n in v) + ")"
                                for v in variants)
            raise TypeError(
                f"{type(self).__name__}.{method.__name__} takes its inputs by keyword "
                f"(probabilities and logits are never guessed), got {len(args)} positional "
                f"argument(s): call {calls}; its keywords are {', '.join(names)}")
        return method(self, **kwargs)

    wrapper._keyword_inputs = True  # type: ignore[attr-defined]
    return wrapper


def record_fit_target(cal: Calibrator, target: object) -> None:
    """Remember the target ``fit`` was given, so that the status ``fit`` sets inherits a
    failed target's status (``'target_not_ok'``; see :meth:`Calibrator._set_status`).
    Called by the shared input preparation of each fit, before any status is set."""
    cal._fit_target_obj = target if isinstance(target, Target) else None
    cal._own_statuses = {}


def inherit_target_status(cal: Calibrator, inputs: Mapping[str, object]) -> bool:
    """Give ``cal`` the status ``'<name>_not_ok'`` (and warn) when an input is a Target
    built from a fit whose status is not 'ok'; return whether it did.

    Parameters
    ----------
    cal : Calibrator
        The fitted calibrator.
    inputs : mapping
        Argument name to the value given to ``fit`` (only Targets are looked at).
    """
    for name, value in inputs.items():
        status = getattr(value, "status", "ok") if isinstance(value, Target) else "ok"
        if status != "ok":
            cal._set_status(f"{name}_not_ok", f"the {name} comes from an annotator fit "
                            f"with status {status!r}: {getattr(value, 'message', '')}",
                            IdentifiabilityWarning)
            return True
    return False


# --------------------------------------------------------------------- validators
def check_eps(eps: object) -> float:
    """The probability floor: a real number with 0 < eps < 0.5."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not math.isfinite(eps) \
            or not 0.0 < float(eps) < 0.5:
        raise ValueError(f"eps must be a number with 0 < eps < 0.5 (probabilities are "
                         f"floored at eps before the logarithm), got {eps!r}")
    return float(eps)


def check_box(bounds: object, *, positive: bool) -> tuple[float, float]:
    """A box ``(low, high)`` of finite reals with low < high (and low > 0 if ``positive``)."""
    try:
        lo, hi = bounds  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (low, high), got {bounds!r}") from None
    ok = all(not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v)
             for v in (lo, hi))
    if not ok or not lo < hi or (positive and not lo > 0):
        rule = "0 < low < high" if positive else "low < high"
        raise ValueError(f"bounds must be finite numbers with {rule}, got {bounds!r}")
    return float(lo), float(hi)


def as_1d(x: ArrayLike, name: str) -> np.ndarray:
    """A finite float64 vector of shape (n,) (binary calibrators take 1-D scores); a pandas
    index must hold one id per row, none missing or repeated."""
    checked_index(x, name)
    arr = check_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D positive-class scores of shape (n,) (binary "
                         f"calibrators; for an (n, 2) matrix pass its column 1), got shape "
                         f"{arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError(f"{name} must contain at least one score, got shape (0,)")
    return arr


def check_unit_scores(probs: ArrayLike, name: str = "probs") -> np.ndarray:
    """Non-empty 1-D positive-class probabilities in [0, 1]."""
    z = as_1d(probs, name)
    if np.any((z < 0) | (z > 1)):
        raise ValueError(f"{name} must lie in [0, 1], got values in [{z.min():g}, "
                         f"{z.max():g}] (pass logits= if these are logits)")
    return z


def positive_target(target: object, n: int) -> np.ndarray:
    """The positive-class column of a binary target, shape (n,).

    A Target or an (n, 2) matrix gives its column 1; a 1-D integer or boolean vector is
    read as 0/1 labels; a 1-D float vector is the positive-class target itself (for a
    binary problem 0/1 labels and positive-class values coincide, so nothing is guessed),
    whose values must lie in [0, 1]. Every target is checked as the metrics check it
    (:func:`~noisycal.metrics.inputs.check_target_rows`): rows on the simplex, and only
    a Target of kind 'corrected' may leave [0, 1].
    """
    if target is None:
        raise ValueError("target is required (labels, an (n, 2) matrix or a Target)")
    if not isinstance(target, Target):
        arr = np.asarray(target)
        if arr.ndim == 1 and arr.dtype.kind == "f":
            y = check_array(arr, "target", ndim=1)
            if y.shape[0] != n:
                raise ValueError(f"target has {y.shape[0]} values but the scores have {n} "
                                 "items")
            check_target_rows(np.column_stack([1.0 - y, y]), arr, "target")
            return y
        if arr.ndim == 1:
            y = check_labels(arr, 2, "target")
            if y.shape[0] != n:
                raise ValueError(f"target has {y.shape[0]} labels but the scores have {n} "
                                 "items")
            return y.astype(np.float64)
    T = as_target_matrix(target, n, 2)
    check_target_rows(T, target, "target")
    return T[:, 1]


def check_alignment(pred: object, pred_name: str, other: object, other_name: str) -> None:
    """Predictions given with a pandas index must list the items of ``other`` in order.

    The one pandas alignment (:func:`noisycal._util.items.aligned_values`, the metrics'
    rule): a pandas index of ``pred``, the default ``RangeIndex(n)`` included, must hold
    one id per row, none missing or repeated, and ``other``'s item ids in their order
    when ``other`` carries them (a pandas index, checked the same way, or the ``items``
    of a Target or Annotations). Plain arrays are aligned by position.
    """
    given = checked_index(pred, pred_name)
    ids = item_ids_of(other, other_name)
    if given is None or ids is None:
        return
    ids, given = np.asarray(ids).tolist(), given.tolist()
    if given != ids:
        if len(given) != len(ids):
            where = f"{pred_name} has {len(given)} items, {other_name} {len(ids)}"
        else:
            i = first_difference(given, ids)
            where = f"first difference at position {i}: {given[i]!r} vs {ids[i]!r}"
        raise ValueError(f"{other_name} is not aligned with {pred_name}: the index of "
                         f"{pred_name} and the items of {other_name} differ ({where}); "
                         "reorder one of them")


def target_record(target: object, y: np.ndarray) -> dict:
    """What identifies a fitting target: its positive-class values ``y``, and the weights
    and channels of a corrected Target (None otherwise); with them, what its B-hat and
    bound need: the rating mask ``observed``, the ``informative`` mask and the channel
    fit's status ``fit_status`` (None where the target does not record them)."""
    det = getattr(target, "details", None)
    det = det if isinstance(det, Mapping) else {}
    has = "weights" in det and "confusion" in det
    extra = {k: (np.array(det[k], dtype=bool) if has and det.get(k) is not None else None)
             for k in ("observed", "informative")}
    return {"values": np.array(y, dtype=np.float64),
            "weights": np.array(det["weights"], dtype=np.float64) if has else None,
            "confusion": np.array(det["confusion"], dtype=np.float64) if has else None,
            **extra, "fit_status": det.get("fit_status") if has else None}


def check_same_target(target: object, fitted: dict, fitted_name: str) -> dict:
    """The :func:`target_record` of a corrected ``target``, which must equal ``fitted``
    (the record of the target ``fitted_name`` was fitted to) in values, weights and
    channels."""
    record = target_record(target, positive_target(target, fitted["values"].size))
    for key, what in (("values", "positive-class values"), ("weights", "weights"),
                      ("confusion", "channels")):
        if fitted[key] is None or record[key] is None \
                or record[key].shape != fitted[key].shape \
                or not np.array_equal(record[key], fitted[key]):
            raise ValueError(f"target must be the corrected Target {fitted_name} was fitted "
                             f"to, but its {what} differ from the fitted target's (refit "
                             "to this target)")
    return record


def minimise_from_starts(f: Any, starts: list[np.ndarray],
                         box: list[tuple[float | None, float | None]],
                         options: Mapping[str, Any] | None = None) -> Any:
    """L-BFGS-B from each start in the box; the smallest objective wins (first on ties).

    Parameters
    ----------
    f : callable
        Objective returning ``(value, gradient)``.
    starts : list of ndarray
        Starting points.
    box : list of (low, high)
        Bounds of every coordinate (None: unbounded on that side).
    options : mapping, optional
        L-BFGS-B options (``maxiter``, ``ftol``, ``gtol``; scipy's defaults otherwise).

    Returns
    -------
    scipy.optimize.OptimizeResult
    """
    from scipy import optimize

    fits = [optimize.minimize(f, x, jac=True, method="L-BFGS-B", bounds=box,
                              options=dict(options or {})) for x in starts]
    return min(fits, key=lambda r: r.fun)
