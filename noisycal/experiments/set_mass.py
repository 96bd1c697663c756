"""The evaluation protocol of "Adaptive Set-Mass Calibration with Conformal Prediction".

The protocol (Section 5.2, Appendix D): random calibration/test splits of a model's
logits, every method fitted on the calibration part, the table's metrics on the test
part.

Metrics (25 equal-width bins throughout, the authors' code): CMCE (Eq. 4), top-label ECE,
MCE, classwise ECE (mean over classes), NLL, Brier (summed over classes), coverage of the
nested sets with mass in [0.9, 0.92] and [0.99, 0.995], accuracy, and the HPR coverage at
the method's alpha (Definition 4).

Splits: ``n_splits`` random permutations from ``numpy.random.default_rng(seed + s)``;
the authors use scikit-learn's ``train_test_split(random_state=s)``, so the split members
differ (not the protocol).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

from .. import calibrators as cal
from .._util.types import ArrayLike
from ..calibrators.conformal.maps import default_conformal
from ..metrics import brier, cmce, coverage_window, ece, hpr_coverage, mce, nll
from .noise import check_splits

__all__ = ["evaluate", "default_methods", "splits", "run_protocol", "WINDOWS", "N_BINS"]

N_BINS = 25
WINDOWS = ((0.9, 0.92), (0.99, 0.995))


def evaluate(P: np.ndarray, y: np.ndarray, *, alpha: float | None = None,
             n_bins: int = N_BINS) -> dict[str, float]:
    """The table's metrics of test probabilities ``P`` against labels ``y``.

    Parameters
    ----------
    P : ndarray of shape (n, K)
    y : int ndarray of shape (n,)
    alpha : float, optional
        Also report the HPR coverage at this alpha.
    n_bins : int, default=25

    Returns
    -------
    dict
    """
    out = {
        "CMCE": float(cmce(P, y, n_bins=n_bins, interval=None)),
        "ECE": float(ece(P, y, n_bins=n_bins, interval=None)),
        "MCE": float(mce(P, y, n_bins=n_bins, interval=None)),
        "cwECE": float(ece(P, y, n_bins=n_bins, kind="classwise", interval=None)),
        "NLL": float(nll(P, y, interval=None)),
        "Brier": float(brier(P, y, interval=None)),
        "accuracy": float(np.mean(np.argmax(P, axis=1) == y)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an empty window gives NaN, reported as such
        for lo, hi in WINDOWS:
            out[f"cov[{lo:g},{hi:g}]"] = coverage_window(P, y, lo, hi)
    if alpha is not None:
        out["HPR coverage"] = hpr_coverage(P, y, alpha)
    return out


class _Base:
    status_ = "ok"

    def fit(self, **_: object) -> _Base:
        return self

    def predict_proba(self, *, logits: np.ndarray) -> np.ndarray:
        return softmax(logits, axis=1)


class _DiagonalDirichlet:
    """``softmax(w_k log p_k + b_k)``: per-class Platt maps on the log-probabilities, i.e.
    the diagonal Dirichlet map (no regulariser) of the authors' CIFAR configuration."""

    def __init__(self) -> None:
        self.inner = cal.PlattScaling(eps=1e-12, bounds=(-50.0, 50.0))

    def fit(self, *, logits: np.ndarray, target: object) -> _DiagonalDirichlet:
        self.inner.fit(probs=softmax(logits, axis=1), target=target)
        self.status_ = self.inner.status_
        return self

    def predict_proba(self, *, logits: np.ndarray) -> np.ndarray:
        return self.inner.predict_proba(probs=softmax(logits, axis=1))


def default_methods(alphas: tuple[float, ...] = (0.01, 0.1, 0.3),
                    scores: tuple[str, ...] = ("msp",),
                    thresholds: tuple[str, ...] = ("constant",), *,
                    baselines: bool = True, ada_steps: int = 3000,
                    mr_degenerate_tol: tuple[float, float] = (1e-8, 1e-5 + 1e-8)
                    ) -> dict[str, tuple[Callable[[], object], float | None, tuple | None]]:
    """Method name -> (factory of an unfitted calibrator, its alpha, its set settings).

    Each conformal map composes its own :class:`~noisycal.calibrators.SplitConformal`
    (deterministic sets, ``randomized=False``, as the maps' default builder); its set
    settings ``(score, threshold)`` are listed so that :func:`run_protocol` fits one
    builder per split and settings and passes it as ``prefit`` (the adaptive transform
    does not depend on alpha).

    Parameters
    ----------
    alphas, scores, thresholds : tuple
        The grid of the conformal maps (MR and TS (ours)).
    baselines : bool, default=True
        Also Base, temperature scaling, Dirichlet, one-vs-rest Platt and the naive CMCE
        temperature.
    ada_steps : int, default=3000
    mr_degenerate_tol : (float, float)
        :class:`~noisycal.calibrators.MassRescaling`'s ``degenerate_tol``.

    Returns
    -------
    dict
    """
    methods: dict[str, tuple[Callable[[], object], float | None, tuple | None]] = {}
    if baselines:
        methods.update({
            "Base": (_Base, None, None),
            "Temp. scaling": (cal.TemperatureScaling, None, None),
            "Dirichlet (diag.)": (_DiagonalDirichlet, None, None),
            "Platt (OvR)": (cal.OneVsRestPlatt, None, None),
            "Naive CMCE": (cal.NaiveCMCETemperature, None, None),
        })
    short = {"constant": "C", "adaptive": "Ada"}
    for a in alphas:
        for s in scores:
            for t in thresholds:
                # the set-mass paper's deterministic sets (as the maps' default builder)
                kw = dict(alpha=a, score=s, threshold=t, ada_steps=ada_steps,
                          randomized=False)
                tag = f"a={a:g} {s.upper()} {short[t]}"
                methods[f"MR {tag}"] = (lambda kw=kw: cal.MassRescaling(
                    conformal=cal.SplitConformal(**kw), degenerate_tol=mr_degenerate_tol),
                    a, (s, t))
                methods[f"TS (ours) {tag}"] = (lambda kw=kw: cal.ConformalTemperature(
                    conformal=cal.SplitConformal(**kw)), a, (s, t))
    return methods


def splits(n: int, *, n_splits: int = 10, cal_fraction: float = 0.2,
           seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Random (calibration, test) index splits.

    Parameters
    ----------
    n : int
    n_splits : int, default=10
    cal_fraction : float, default=0.2
    seed : int, default=0

    Yields
    ------
    (ndarray, ndarray)
    """
    n_cal = int(round(cal_fraction * n))
    for s in range(n_splits):
        perm = np.random.default_rng(seed + s).permutation(n)
        yield perm[:n_cal], perm[n_cal:]


_seeded_splits = splits  # run_protocol's ``splits=`` argument shadows the function


def _given_splits(given: object, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """User-given (calibration, test) pairs, each checked by :func:`check_splits`."""
    if isinstance(given, str | bytes | dict) or not isinstance(given, Sequence) \
            or len(given) == 0:
        raise ValueError("splits must be a non-empty sequence of (calibration, test) index "
                         f"pairs, got {type(given).__name__}")
    pairs = []
    for s, pair in enumerate(given):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"splits[{s}] must be a (calibration, test) pair of index "
                             "arrays")
        parts = check_splits({"cal": pair[0], "test": pair[1]}, n, ("cal", "test"),
                             name=f"splits[{s}]")
        pairs.append((parts["cal"], parts["test"]))
    return pairs


def run_protocol(logits: np.ndarray, y: np.ndarray, methods: dict, *, n_splits: int = 10,
                 cal_fraction: float = 0.2, seed: int = 0,
                 progress: Callable[[str], None] | None = None,
                 splits: Sequence[tuple[ArrayLike, ArrayLike]] | None = None
                 ) -> pd.DataFrame:
    """Fit every method on each calibration split and evaluate it on the test split.

    Parameters
    ----------
    logits : ndarray of shape (n, K)
    y : int ndarray of shape (n,)
    methods : dict
        From :func:`default_methods`: name -> (factory, alpha, set settings); a
        conformal map (settings not None) gets seed ``s`` on split ``s`` and the
        fitted builder of its settings as ``prefit``.
    n_splits, cal_fraction, seed
        See :func:`splits`; ignored when ``splits`` is given.
    splits : sequence of (array-like, array-like), optional
        Given ``(calibration, test)`` index pairs instead of the seeded random ones (for
        example the authors' published splits): each part a non-empty 1-D array of
        distinct item indices in ``0 .. n - 1``, the two parts disjoint. Split ``s``
        (its position) also seeds the methods as the seeded splits do.
    progress : callable, optional
        Called with a line of text after each split.

    Returns
    -------
    pandas.DataFrame
        One row per (split, method): the metrics, the fit's status and the seconds taken.
    """
    if splits is None:
        pairs = list(_seeded_splits(y.size, n_splits=n_splits, cal_fraction=cal_fraction,
                                    seed=seed))
    else:
        pairs = _given_splits(splits, y.size)
    n_splits = len(pairs)
    rows = []
    for s, (ic, it) in enumerate(pairs):
        shared: dict[tuple, cal.SplitConformal] = {}  # set settings -> fitted builder
        for name, (factory, alpha, key) in methods.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = factory()
                if key is None:
                    m.fit(logits=logits[ic], target=y[ic])
                else:
                    # the set builder of this method's own settings (all but alpha), one
                    # per split and settings
                    if m.conformal is None:
                        m.set_params(conformal=default_conformal())
                    m.set_params(conformal__seed=s)
                    kw = m.conformal.get_params()
                    same = tuple((k, repr(v)) for k, v in kw.items() if k != "alpha")
                    if same not in shared:
                        shared[same] = cal.SplitConformal(**kw).fit(logits=logits[ic],
                                                                    target=y[ic])
                    m.fit(logits=logits[ic], target=y[ic], prefit=shared[same])
                P = m.predict_proba(logits=logits[it])
            rows.append({"split": s, "method": name, "alpha": alpha,
                         **evaluate(P, y[it], alpha=alpha),
                         "status": getattr(m, "status_", "ok"),
                         "seconds": time.perf_counter() - t0})
        if progress is not None:
            progress(f"split {s + 1}/{n_splits} done")
    return pd.DataFrame(rows)
