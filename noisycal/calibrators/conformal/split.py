r"""Split conformal prediction sets (:class:`SplitConformal`).

The sets use MSP, APS and RAPS scores, randomised or not, and one threshold,
class-conditional (Mondrian) thresholds, or the adaptive ("Ada") threshold of "Adaptive
Set-Mass Calibration with Conformal Prediction" (Sections 3.1 and 3.3).

The scores, the quantile and the set rule are those of
:mod:`noisycal.calibrators.conformal.scores` (equations there), always computed on the
*base* predictions. Deterministic APS sets (``randomized=False``) are the longest prefix
of the decreasing order with mass at most :math:`\hat q` (the set-mass paper's rule,
which may be empty), or with ``aps_include_boundary=True`` the shortest prefix with mass
at least :math:`\hat q` (the set-mass authors' code: the highest-probability region
:math:`HPR_{\hat q}`, never empty and conservative).

The adaptive threshold learns :math:`\tilde s = s / (\gamma + w(x))` with
:math:`w(x) = |\mathrm{MLP}(z(x))|` on the base logits, fitted by least squares of
:math:`w(x)` to the score on the first part of the calibration data; the quantile is
taken on the transformed scores of the rest, and the threshold of x is
:math:`\hat q\,(\gamma + w(x))`. The paper only says "a normalizing-flow
transformation"; this architecture and loss follow the authors' code, and marginal
validity holds because the transform is monotone in s and fitted on data disjoint from
the quantile's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._util.types import ArrayLike, Seed
from ..._util.validation import check_choice, check_int, check_real, check_seed
from .._base import Calibrator, check_alignment, check_eps
from .._inputs import EPS, ScoreInput, base_probs, score_matrix
from .adaptive import adaptive_scale, fit_adaptive
from .scores import (
    SCORES,
    check_alpha,
    class_quantiles,
    conformal_quantile,
    conformal_rank,
    hard_labels,
    label_scores,
    nonconformity,
    prediction_sets,
    uniforms,
)
from .tuning import TUNE_FRACTION, pick_k_reg, pick_lam

__all__ = ["conformal_quantile", "nonconformity", "label_scores", "prediction_sets",
           "SplitConformal", "MatrixInput", "check_alpha", "hard_labels", "fit_adaptive",
           "adaptive_scale", "conformal_rank", "set_settings",
           "SCORES", "THRESHOLDS"]

THRESHOLDS = ("constant", "adaptive")


class MatrixInput(Calibrator):
    """A calibrator of (n, K) score matrices (binary (n,) scores also accepted)."""

    def __sklearn_tags__(self) -> Any:  # noqa: ANN401 - sklearn.utils.Tags, sklearn optional
        """scikit-learn's estimator tags: keyword inputs of shape (n,) or (n, K)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags


def _is_auto(value: object) -> bool:
    return isinstance(value, str) and value == "auto"


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def set_settings(params: dict) -> dict:
    """The parameters of a set builder that change its sets, other than ``alpha``.

    ``randomized``, ``lam``, ``k_reg`` and ``tune_fraction`` are dropped for 'msp' scores
    and the last three for 'aps' (they have no effect there), so builders differing only in them
    are interchangeable.

    Parameters
    ----------
    params : dict
        ``SplitConformal.get_params()`` or a conformal map's parameters.

    Returns
    -------
    dict
    """
    raps = {"lam", "k_reg", "tune_fraction"}
    drop = {"alpha"} | ({"randomized", *raps} if params.get("score") == "msp" else
                        raps if params.get("score") == "aps" else set())
    return {k: v for k, v in params.items() if k not in drop}


class SplitConformal(MatrixInput):
    r"""Split conformal prediction sets on a classifier's base probabilities.

    Parameters
    ----------
    alpha : float, default=0.1
        Miscoverage level, a fraction in (0, 1).
    score : {'msp', 'aps', 'raps'}, default='msp'
        Nonconformity score (:mod:`noisycal.calibrators.conformal.scores`): 1 - p_y; APS
        of "Classification with Valid and Adaptive Coverage"; or RAPS of "Uncertainty Sets
        for Image Classifiers using Conformal Prediction" (APS plus the rank penalty
        :math:`\lambda (r - k_{reg})^+`).
    randomized : bool, default=True
        APS and RAPS: the randomised score :math:`\sum_{j<r} p_{\pi(j)} + U p_y` with one
        :math:`U \sim \mathrm{Unif}(0, 1)` per row, as both papers define it (MAPIE's
        ``include_last_label='randomized'``): coverage exactly k/(n+1) and sets of about
        the size the coverage needs. False gives U = 1, the deterministic inclusive mass
        of the set-mass paper, whose sets on a confident classifier are far too large
        or empty (benchmarks/README.md, section on ``conformal_sets.py``). No effect for
        'msp'.
    lam : float or 'auto', default=0.01
        RAPS: the penalty per rank beyond ``k_reg`` (>= 0). 'auto': the RAPS paper's
        choice on a tuning split (:mod:`noisycal.calibrators.conformal.tuning`): the
        value of the grid (0.001, 0.01, 0.1, 0.2, 0.5) whose sets, calibrated on the
        tuning rows, are smallest on average there.
    k_reg : int or 'auto', default=5
        RAPS: the ranks 1..k_reg carry no penalty (>= 0). 'auto': the paper's
        ``1 - alpha`` quantile of the true label's rank on the tuning rows.
    tune_fraction : float, default=0.3
        RAPS with ``lam`` or ``k_reg`` 'auto': the share of the calibration rows (the
        first ones, in the order given) that tunes them and is then set aside (the
        conformal quantile comes from the rest, so coverage holds); 0.3 as in the
        authors' code.
    mondrian : bool, default=False
        Class-conditional thresholds: :math:`\hat q_y` from the calibration items of
        class y only, and the set :math:`\{y : s(x, y, U) \le \hat q_y\}`, so the
        coverage is at least 1 - alpha given each true class. Not with the adaptive
        threshold.
    threshold : {'constant', 'adaptive'}, default='constant'
        One threshold for every x ("C"), or the adaptive threshold ("Ada").
    aps_include_boundary : bool, default=False
        Deterministic APS only (``score='aps', randomized=False``): the sets as the
        highest-probability region of the threshold (the set-mass authors' code)
        instead of the classes with score at most the threshold.
    ada_fraction : float, default=0.5
        With ``threshold='adaptive'``: the share of the calibration rows (the first ones,
        in the order given) that trains the transform; the rest give the quantile.
    ada_hidden : tuple of int, default=(100,) * 6
        Hidden layer widths of the MLP w(x) (ReLU).
    ada_steps : int, default=3000
    ada_lr : float, default=0.01
        Adam steps and learning rate (minibatches of a fifth of the training rows).
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (the MLP's features are logits or
        log-probabilities).
    seed : int or jax key, default=0
        The adaptive transform's initialisation and the uniforms U of randomised scores:
        ``fit`` draws the calibration rows' U from stream 0 of the seed, and every
        ``predict_sets`` call the new rows' U from stream 1, in row order (so a call is
        reproducible, and a row's U depends on its position unless ``u=`` is given).

    Attributes
    ----------
    quantile_ : float
        The conformal threshold on the (transformed) scores; ``inf`` when k > n. With
        ``mondrian=True`` the pooled threshold, kept for reference (the sets use
        ``class_quantiles_``).
    class_quantiles_ : ndarray of shape (n_classes,) or None
        Class-conditional thresholds (``mondrian=True``), ``inf`` for a class with too
        few calibration items; ``class_n_`` and ``class_k_`` are their counts and ranks.
    k_ : int
        ``ceil((1 - alpha)(n + 1))`` with n the calibration rows used for the quantile.
    n_quantile_ : int
    scores_ : ndarray of shape ``(n_quantile_,)``
        The (transformed) calibration scores the quantile is taken of.
    labels_ : int ndarray of shape ``(n_quantile_,)``
        Their labels.
    u_ : ndarray of shape (n,) or None
        The calibration rows' uniforms (randomised APS/RAPS).
    penalty_ : dict
        RAPS: the ``lam`` and ``k_reg`` used (tuned or as given); empty otherwise.
    n_tune_ : int
        Calibration rows that tuned ``lam``/``k_reg`` (0 when nothing was tuned).
    tune_sizes_ : ndarray of shape (5,) or None
        With ``lam='auto'``: the mean set size on the tuning rows of each grid value.
    ada_params_ : list or None
        The MLP's weights (adaptive threshold).
    ada_mse_ : float or None
    status_, message_ : str
        'ok'; 'infinite_quantile' when k > n, for the pooled threshold or some class's
        (those sets hold every class, or that class; warns); 'ada_not_converged' when
        the transform's training diverged after every restart.

    Examples
    --------
    >>> import numpy as np
    >>> import noisycal as nc
    >>> g = nc.simulate.gaussian_grid(2000, 10, seed=0)
    >>> cp = nc.calibrators.SplitConformal(alpha=0.1, score="aps", seed=0)
    >>> cp = cp.fit(probs=g.true_probs[:1000], target=g.labels[:1000])
    >>> sets = cp.predict_sets(probs=g.true_probs[1000:])
    >>> from noisycal.calibrators.conformal.evaluate import evaluate_sets
    >>> ev = evaluate_sets(sets, g.labels[1000:])
    >>> 0.85 < float(ev.coverage) < 0.95
    True
    """

    _fitted_attr = "quantile_"

    def __init__(self, *, alpha: float = 0.1, score: str = "msp", randomized: bool = True,
                 lam: float | str = 0.01, k_reg: int | str = 5,
                 tune_fraction: float = TUNE_FRACTION, mondrian: bool = False,
                 threshold: str = "constant", aps_include_boundary: bool = False,
                 ada_fraction: float = 0.5, ada_hidden: tuple[int, ...] = (100,) * 6,
                 ada_steps: int = 3000, ada_lr: float = 0.01, eps: float = EPS,
                 seed: Seed = 0) -> None:
        self.alpha = alpha
        self.score = score
        self.randomized = randomized
        self.lam = lam
        self.k_reg = k_reg
        self.tune_fraction = tune_fraction
        self.mondrian = mondrian
        self.threshold = threshold
        self.aps_include_boundary = aps_include_boundary
        self.ada_fraction = ada_fraction
        self.ada_hidden = ada_hidden
        self.ada_steps = ada_steps
        self.ada_lr = ada_lr
        self.eps = eps
        self.seed = seed

    def _inputs(self, probs: ArrayLike | None, logits: ArrayLike | None) -> ScoreInput:
        return score_matrix(probs, logits, check_eps(self.eps))

    def _check_settings(self) -> None:
        self.alpha_ = check_alpha(self.alpha)
        check_choice(self.score, "score", SCORES)
        check_choice(self.threshold, "threshold", THRESHOLDS)
        rand = _flag(self.randomized, "randomized")
        mond = _flag(self.mondrian, "mondrian")
        if _flag(self.aps_include_boundary, "aps_include_boundary") and (
                mond or self.score == "raps" or (self.score == "aps" and rand)):
            raise ValueError("aps_include_boundary=True is a rule of the deterministic APS "
                             "sets with one threshold: pass score='aps', randomized=False, "
                             "mondrian=False")
        if mond and self.threshold == "adaptive":
            raise ValueError("mondrian=True (class-conditional thresholds) does not combine "
                             "with threshold='adaptive'")
        lam = self.lam if _is_auto(self.lam) else check_real(self.lam, "lam", minimum=0.0)
        k_reg = self.k_reg if _is_auto(self.k_reg) else check_int(self.k_reg, "k_reg",
                                                                  minimum=0)
        self.penalty_ = {"lam": lam, "k_reg": k_reg} if self.score == "raps" else {}
        self.randomized_ = rand and self.score != "msp"
        check_seed(self.seed)

    def _uniforms(self, u: ArrayLike | None, n: int, stream: int) -> np.ndarray | None:
        if not self.randomized_:
            if u is not None:
                raise ValueError("u is only used by randomised APS or RAPS scores "
                                 "(score='aps' or 'raps' with randomized=True)")
            return None
        if u is None:
            return uniforms(self.seed, n, stream)
        uu = np.asarray(u, dtype=np.float64)
        if uu.shape != (n,) or not np.all((uu >= 0.0) & (uu <= 1.0)):
            raise ValueError(f"u must hold one number in [0, 1] per row, shape ({n},), got "
                             f"shape {uu.shape}")
        return uu

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object, u: ArrayLike | None = None) -> SplitConformal:
        """Compute the conformal threshold from calibration predictions and hard labels.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one). With a pandas index they must list the items
            of a pandas or Target ``target`` in the same order (else ValueError).
        target : labels of shape (n,), or one-hot rows / a hard Target
        u : array-like of shape (n,), optional
            Randomised APS/RAPS: the calibration rows' uniforms (default: drawn from
            ``seed``).

        Returns
        -------
        self
        """
        self._check_settings()
        x = self._inputs(probs, logits)
        n, K = x.S.shape
        check_alignment(x.raw, x.given, target, "target")
        y = hard_labels(target, n, K)
        P = base_probs(x)
        self.u_ = self._uniforms(u, n, 0)
        n_tune = self._tune(P, y)
        if n_tune:  # the tuning rows are set aside
            P, y, n = P[n_tune:], y[n_tune:], n - n_tune
            x = ScoreInput(x.S[n_tune:], x.binary, x.given, x.raw)
        u_rest = None if self.u_ is None else self.u_[n_tune:]
        s = nonconformity(P, y, self.score, u=u_rest, **self.penalty_)
        self.n_classes_, self.input_ = K, x.given
        self.ada_params_ = self.ada_mse_ = None
        status, message = "ok", ""
        if self.threshold == "adaptive":
            frac = check_real(self.ada_fraction, "ada_fraction", minimum=0.0, maximum=1.0,
                              strict=True)
            n_tr = int(math.floor(frac * n))
            if n_tr < 1 or n - n_tr < 1:
                raise ValueError(f"ada_fraction={frac} leaves no rows for training or for the "
                                 f"quantile with {n} calibration rows")
            hidden = tuple(check_int(h, "ada_hidden", minimum=1) for h in self.ada_hidden)
            steps = check_int(self.ada_steps, "ada_steps", minimum=1)
            lr = check_real(self.ada_lr, "ada_lr", minimum=0.0, strict=True)
            self.ada_params_, self.ada_mse_, restarts = fit_adaptive(
                x.S[:n_tr], s[:n_tr], hidden=hidden, n_steps=steps, lr=lr, seed=self.seed)
            if not (math.isfinite(self.ada_mse_) and self.ada_mse_ <= 10.0):
                status, message = "ada_not_converged", (
                    f"the adaptive transform's training diverged after {restarts} restarts "
                    f"(mean squared error {self.ada_mse_:.3g})")
            s, y = s[n_tr:] / adaptive_scale(self.ada_params_, x.S[n_tr:]), y[n_tr:]
        self.scores_, self.labels_ = s, y
        self._set_quantile(status, message)
        return self

    def _tune(self, P: np.ndarray, y: np.ndarray) -> int:
        """RAPS ``'auto'`` settings from the first calibration rows; how many it used."""
        self.n_tune_, self.tune_sizes_ = 0, None
        auto = [k for k, v in self.penalty_.items() if _is_auto(v)]
        if not auto:
            return 0
        frac = check_real(self.tune_fraction, "tune_fraction", minimum=0.0, maximum=1.0,
                          strict=True)
        n_tune = int(math.floor(frac * P.shape[0]))
        if n_tune < 1 or P.shape[0] - n_tune < 1:
            raise ValueError(f"tune_fraction={frac} leaves no rows for tuning {auto} or for "
                             f"the quantile with {P.shape[0]} calibration rows")
        Pt, yt = P[:n_tune], y[:n_tune]
        ut = None if self.u_ is None else self.u_[:n_tune]
        if _is_auto(self.penalty_["k_reg"]):
            self.penalty_["k_reg"] = pick_k_reg(Pt, yt, self.alpha_)
        if _is_auto(self.penalty_["lam"]):
            self.penalty_["lam"], self.tune_sizes_ = pick_lam(Pt, yt, self.alpha_,
                                                              self.penalty_["k_reg"], ut)
        self.n_tune_ = n_tune
        return n_tune

    def _set_quantile(self, status: str, message: str) -> None:
        from ...exceptions import NumericalWarning

        s = self.scores_
        self.n_quantile_ = int(s.size)
        self.k_ = conformal_rank(s.size, self.alpha_)
        self.quantile_ = conformal_quantile(s, self.alpha_)
        self.class_quantiles_ = self.class_k_ = self.class_n_ = None
        if self.mondrian:
            self.class_quantiles_, self.class_k_, self.class_n_ = class_quantiles(
                s, self.labels_, self.n_classes_, self.alpha_)
            bad = np.flatnonzero(~np.isfinite(self.class_quantiles_))
            if status == "ok" and bad.size:
                status, message = "infinite_quantile", (
                    f"classes {bad.tolist()} have k = ceil((1 - alpha)(n_y + 1)) above "
                    f"their n_y = {self.class_n_[bad].tolist()} calibration items: their "
                    "threshold is +inf and every set holds them")
        elif status == "ok" and not math.isfinite(self.quantile_):
            status, message = "infinite_quantile", (
                f"k = ceil((1 - alpha)(n + 1)) = {self.k_} exceeds the n = {s.size} "
                "calibration scores: the threshold is +inf and every set is the full set")
        self._set_status(status, message, NumericalWarning if status != "ok" else None)

    def at_alpha(self, alpha: float) -> SplitConformal:
        """A copy with the quantile recomputed at another alpha (same scores and transform).

        The adaptive transform and the calibration uniforms do not depend on alpha, so one
        fit serves every level. RAPS settings tuned with ``'auto'`` keep the values
        tuned at the fit's alpha (and the tuning rows stay set aside).

        Parameters
        ----------
        alpha : float

        Returns
        -------
        SplitConformal
        """
        import copy

        self._check_fitted()
        out = copy.copy(self)
        out.alpha = alpha
        out.alpha_ = check_alpha(alpha)
        keep = self.status_ if self.status_ == "ada_not_converged" else "ok"
        out._set_quantile(keep, self.message_ if keep != "ok" else "")
        return out

    def thresholds(self, x: ScoreInput) -> np.ndarray:
        """The threshold of each row: ``quantile_`` or ``quantile_ * (gamma + w(x))``, or
        of each row and class (``class_quantiles_``, ``mondrian=True``).

        Parameters
        ----------
        x : ScoreInput

        Returns
        -------
        ndarray of shape (n,), or (n, n_classes) with ``mondrian=True``
        """
        n = x.S.shape[0]
        if self.class_quantiles_ is not None:
            return np.broadcast_to(self.class_quantiles_, (n, self.n_classes_))
        if self.ada_params_ is None or not math.isfinite(self.quantile_):
            return np.full(n, self.quantile_)
        return self.quantile_ * adaptive_scale(self.ada_params_, x.S)

    def sets_of(self, x: ScoreInput, u: ArrayLike | None = None) -> np.ndarray:
        """Conformal sets of checked scores (boolean mask (n, n_classes)).

        Parameters
        ----------
        x : ScoreInput
        u : array-like of shape (n,), optional
            Randomised scores: the rows' uniforms (default: stream 1 of ``seed``).

        Returns
        -------
        bool ndarray
        """
        if x.S.shape[1] != self.n_classes_:
            raise ValueError(f"{x.given} must have {self.n_classes_} columns like the fit, got "
                             f"{x.S.shape[1]}")
        uu = self._uniforms(u, x.S.shape[0], 1)
        return prediction_sets(base_probs(x), self.thresholds(x), self.score, u=uu,
                               **self.penalty_,
                               aps_include_boundary=bool(self.aps_include_boundary))

    def predict_sets(self, *, probs: ArrayLike | None = None,
                     logits: ArrayLike | None = None, u: ArrayLike | None = None
                     ) -> np.ndarray:
        """Conformal prediction sets of new rows.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).
        u : array-like of shape (n,), optional
            Randomised APS/RAPS: the new rows' uniforms (default: stream 1 of ``seed``).

        Returns
        -------
        bool ndarray of shape (n, n_classes)
        """
        self._check_fitted()
        return self.sets_of(self._inputs(probs, logits), u)
