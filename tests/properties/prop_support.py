"""Shared pieces of the property layer: the outcome oracle, input strategies, references.

Every property states one rule for a public entry point: on any generated input the call
ends in exactly one of

(a) a ``ValueError`` whose message names one of the call's arguments,
(b) a result whose ``status`` is not ``'ok'`` (with a message), or
(c) a finite value equal to the reference computed on the aligned, cleaned input.

Anything else (a ``TypeError``, ``IndexError``, ``KeyError``, a raw NumPy/JAX error, a
``ValueError`` that names no argument, an ok result on an input with no reference, an ok
value that differs from the reference) fails the property. ``NOISYCAL_PROPERTY_SCALE=20``
multiplies every property's ``max_examples`` for a long local hunt; CI runs the small
setting, derandomized.
"""

from __future__ import annotations

import inspect
import os
import warnings
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

_SCALE = int(os.environ.get("NOISYCAL_PROPERTY_SCALE", "1"))
NO_REFERENCE = object()  # the input is invalid: only (a) or (b) are acceptable


def props(max_examples: int, shrink: bool = True) -> settings:
    """Deterministic, deadline-free settings with ``max_examples`` (times the scale)."""
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    return settings(max_examples=max_examples * _SCALE, deadline=None, derandomize=True,
                    database=None, print_blob=False, phases=phases,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_property(body: Callable[[Any], None], max_examples: int, *, key: str = "",
                 shrink: bool = True) -> None:
    """Run ``body(data)`` (``data``: Hypothesis's interactive draw) as a property.

    The examples are seeded from ``body``'s name and ``key`` (the parameter), so every
    property draws its own fixed sequence. A recorded defect (a strict xfail) runs without
    shrinking: its minimal case is already written in the xfail's reason, and shrinking a
    known failure only costs time.
    """
    def prop(data):
        body(data)

    name = f"{getattr(body, '__module__', '')}.{getattr(body, '__qualname__', '')}|{key}"
    test = props(max_examples, shrink)(given(data=st.data())(prop))
    seed(zlib.crc32(name.encode()))(test)()


def with_defects(kinds: Iterable[str], defects: dict[str, str]) -> list:
    """One pytest parameter per kind; a kind with a recorded defect is a strict xfail."""
    return [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=defects[k]))
            if k in defects else k for k in kinds]


# ---------------------------------------------------------------- the oracle


@dataclass
class Outcome:
    """What a call ended in: ``'error'`` (a), ``'status'`` (b) or ``'value'`` (c)."""

    kind: str
    result: Any = None
    error: BaseException | None = None


def argument_names(fn: Callable) -> set[str]:
    """Parameter names of ``fn`` (a class: its ``__init__``), without self/args/kwargs."""
    target = fn.__init__ if inspect.isclass(fn) else fn
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return set()
    return {p.name for p in params
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _status(result: Any) -> str:
    """A result's status: ``status``, or a fitted estimator's ``status_`` (else 'ok')."""
    for attr in ("status", "status_"):
        status = getattr(result, attr, None)
        if isinstance(status, str):
            return status
    return "ok"


def _message(result: Any) -> str:
    return str(getattr(result, "message", None) or getattr(result, "message_", None) or "")


def _quietly(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def check_outcome(call: Callable[[], Any], names: Iterable[str] | Callable,
                  reference: Any = NO_REFERENCE, *, value: Callable[[Any], Any] = None,
                  equal: Callable[[Any, Any], bool] | None = None,
                  rtol: float = 1e-9, atol: float = 1e-12) -> Outcome:
    """Run ``call`` and accept exactly (a), (b) or (c) (module docstring).

    ``names``: the argument names an error may name (or the called function, whose
    signature gives them). ``reference``: the expected value of an ok result (a value or a
    zero-argument callable, evaluated only when needed, which may itself return
    ``NO_REFERENCE`` when the aligned input is refused or not ok); ``NO_REFERENCE`` for an
    invalid input. ``value`` extracts the compared value from the result (default
    ``float``); ``equal`` compares (default: finite and ``np.allclose`` with ``rtol``/``atol``).
    Warnings are silenced: they are neither required nor enough.
    """
    names = argument_names(names) if callable(names) else set(names)
    try:
        result = _quietly(call)
    except ValueError as exc:
        msg = str(exc)
        assert any(name in msg for name in names), (
            f"ValueError naming no argument of {sorted(names)}: {msg!r}")
        return Outcome("error", error=exc)
    except AssertionError:
        raise
    except Exception as exc:  # noqa: BLE001 - every other type is the defect reported
        raise AssertionError(
            f"{type(exc).__name__} instead of a ValueError naming an argument: {exc!r}"
        ) from exc
    if _status(result) != "ok":
        assert _message(result).strip(), f"status {_status(result)!r} without a message"
        return Outcome("status", result)
    got = _quietly(lambda: value(result)) if value is not None else float(result)
    assert reference is not NO_REFERENCE, f"ok result {got!r} on an input that has no reference"
    want = _quietly(reference) if callable(reference) else reference
    assert want is not NO_REFERENCE, (
        f"ok result {got!r} where the aligned reference input is refused or not ok")
    if equal is not None:
        assert equal(got, want), f"ok result {got!r} differs from the reference {want!r}"
    else:
        got_a, want_a = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
        assert got_a.shape == want_a.shape, f"shape {got_a.shape} != reference {want_a.shape}"
        assert np.all(np.isfinite(got_a)), f"ok result is not finite: {got!r}"
        assert np.allclose(got_a, want_a, rtol=rtol, atol=atol), (
            f"ok result {got!r} differs from the reference {want!r}")
    return Outcome("value", result)


# ---------------------------------------------------------------- strategies

CLASS_NAME_POOL = ("cat", "dog", "b", "a", "10", "2", "zebra", "Ant")
INT_CLASS_POOL = (0, 1, 2, 3, 7, 10, 42)


@st.composite
def prob_matrices(draw, n_min: int = 1, n_max: int = 60, k_min: int = 2, k_max: int = 6,
                  styles: tuple[str, ...] = ("grid", "dirichlet", "onehot", "uniform")):
    """A valid (n, K) float64 probability matrix and its style.

    'grid' rows are multiples of 1/64 summing exactly to 1 (exact in float16 and float32,
    confidences never on a 5-, 10- or 15-bin edge except 0.5), 'dirichlet' continuous
    rows, 'onehot' rows and 'uniform' rows (every confidence 1/K, all classes tied).
    """
    n = draw(st.integers(n_min, n_max))
    k = draw(st.integers(k_min, k_max))
    style = draw(st.sampled_from(styles))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if style == "grid":
        p = np.stack([rng.multinomial(64, rng.dirichlet(np.full(k, 0.7))) for _ in range(n)])
        p = p.reshape(n, k) / 64.0
    elif style == "dirichlet":
        p = rng.dirichlet(np.full(k, 1.0), size=n)
        p = p / p.sum(axis=1, keepdims=True)
    elif style == "onehot":
        p = np.eye(k)[rng.integers(0, k, n)]
    else:
        p = np.full((n, k), 1.0 / k)
    return p.astype(np.float64), style


def labels_for(rng: np.random.Generator, n: int, k: int, how: str = "random") -> np.ndarray:
    """Integer labels in 0..K-1: 'random', 'single' (one class only) or 'all' (each class)."""
    if how == "single":
        return np.full(n, int(rng.integers(0, k)))
    y = rng.integers(0, k, n)
    if how == "all" and n >= k:
        y[:k] = rng.permutation(k)
    return y


def class_names(draw, k: int, kind: str = "str") -> np.ndarray:
    """K distinct class names: strings, or integers that are not 0..K-1 in order."""
    pool = CLASS_NAME_POOL if kind == "str" else INT_CLASS_POOL
    names = draw(st.permutations(pool))[:k]
    return np.array(names, dtype=object if kind == "str" else np.int64)


@st.composite
def ratings(draw, n_max: int = 12, j_max: int = 4, k_max: int = 4):
    """A long table of ratings (every item rated at least once) and its reference counts.

    Returns ``(df, items, classes, counts)``: ``items`` in order of first appearance,
    ``classes`` sorted, ``counts[i, k]`` the ratings of class k for item i.
    """
    n = draw(st.integers(1, n_max))
    j = draw(st.integers(1, j_max))
    k = draw(st.integers(2, k_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    label_kind = draw(st.sampled_from(["str", "int"]))
    names = class_names(draw, k, label_kind)
    ids = (np.array([f"i{v}" for v in rng.permutation(100)[:n]], dtype=object)
           if draw(st.booleans()) else rng.permutation(100)[:n] + 1000)
    raters = np.array([f"a{v}" for v in range(j)], dtype=object)
    rated = rng.random((n, j)) < draw(st.sampled_from([0.5, 0.8, 1.0]))
    rated[np.arange(n), rng.integers(0, j, n)] = True
    ii, jj = np.nonzero(rated)
    ll = rng.integers(0, k, ii.size)
    if draw(st.booleans()):  # every class used at least once where possible
        ll[: min(k, ll.size)] = np.arange(min(k, ll.size))
    order = rng.permutation(ii.size)
    ii, jj, ll = ii[order], jj[order], ll[order]
    df = pd.DataFrame({"item": ids[ii], "annotator": raters[jj], "label": names[ll]})
    first = pd.unique(ids[ii])
    used = np.unique(ll)
    sorted_names = np.array(sorted(names[used]), dtype=names.dtype)
    pos = {v: p for p, v in enumerate(first)}
    col = {v: c for c, v in enumerate(sorted_names)}
    counts = np.zeros((n, sorted_names.size), dtype=int)
    for a, lab in zip(df["item"], df["label"], strict=True):
        counts[pos[a], col[lab]] += 1
    return df, first, sorted_names, counts, names, rng


# ---------------------------------------------------------------- references


def _binned(conf: np.ndarray, tgt: np.ndarray, n_bins: int) -> tuple[np.ndarray, ...]:
    bins = np.searchsorted(np.arange(1, n_bins) / n_bins, conf, side="right")
    count = np.bincount(bins, minlength=n_bins).astype(float)
    sc = np.bincount(bins, weights=conf, minlength=n_bins)
    st_ = np.bincount(bins, weights=tgt, minlength=n_bins)
    return count, sc, st_


def binned_error(conf: np.ndarray, tgt: np.ndarray, n_bins: int, reduce: str = "ece",
                 min_count: int = 1) -> float:
    """Equal-width binned calibration error ([lo, hi) bins, last closed)."""
    count, sc, st_ = _binned(conf, tgt, n_bins)
    used = count >= min_count
    gap = np.abs(st_[used] / count[used] - sc[used] / count[used])
    if reduce == "mce":
        return float(gap.max())
    return float(np.sum(count[used] / conf.size * gap))


def ref_ece(p: np.ndarray, t: np.ndarray, n_bins: int, kind: str = "top_label",
            reduce: str = "ece", min_count: int = 1) -> float:
    """Reference ECE/MCE of predictions ``p`` (n, K) against a target matrix ``t``."""
    p, t = np.asarray(p, dtype=float), np.asarray(t, dtype=float)
    if kind == "top_label":
        pred = np.argmax(p, axis=1)
        rows = np.arange(p.shape[0])
        return binned_error(p[rows, pred], t[rows, pred], n_bins, reduce, min_count)
    if kind == "positive_class":
        return binned_error(p[:, 1], t[:, 1], n_bins, reduce, min_count)
    per = [binned_error(p[:, k], t[:, k], n_bins, reduce, min_count) for k in range(p.shape[1])]
    return float(np.mean(per)) if reduce == "ece" else float(np.max(per))


def ref_brier(p: np.ndarray, t: np.ndarray, affine: bool = False) -> float:
    """Mean squared distance to the target rows; ``affine``: ||p||^2 - 2 p.T + 1."""
    p, t = np.asarray(p, dtype=float), np.asarray(t, dtype=float)
    if affine:
        return float(np.mean(np.sum(p**2 - 2 * p * t, axis=1) + 1.0))
    return float(np.mean(np.sum((p - t) ** 2, axis=1)))


def ref_nll(p: np.ndarray, t: np.ndarray) -> float:
    p, t = np.asarray(p, dtype=float), np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(t != 0, t * np.log(np.where(t != 0, p, 1.0)), 0.0)
        return float(-np.mean(np.sum(terms, axis=1)))


def one_hot(y: np.ndarray, k: int) -> np.ndarray:
    return np.eye(k)[np.asarray(y, dtype=int)]
