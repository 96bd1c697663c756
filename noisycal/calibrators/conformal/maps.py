r"""Recalibration with conformal sets: mass rescaling and conformal temperature scaling.

The maps are mass rescaling ("MR") and conformal temperature scaling ("TS (ours)"), from
"Adaptive Set-Mass Calibration with Conformal Prediction" (Sections 3 and 3.2, Eq. 6,
Appendix A).

Both conformal maps build the split-conformal set C(x) of
:class:`~noisycal.calibrators.conformal.SplitConformal` on the *uncalibrated*
probabilities and then move the mass so that C(x) holds exactly 1 - alpha:

- :class:`MassRescaling` multiplies the in-set probabilities by
  :math:`(1-\alpha)/P_{in}` and the others by :math:`\alpha/P_{out}` (Eq. 6). This is the
  KL projection of p onto :math:`\{\pi \in \Delta_K : \sum_{y \in C} \pi_y = 1 - \alpha\}`
  (Appendix A); ratios inside each group are kept, the overall order need not be.
- :class:`ConformalTemperature` finds, per row, the largest temperature with in-set
  mass at least 1 - alpha (the in-set mass of a top-k set decreases in the
  temperature), by bisection in :math:`\beta = 1/\tau` over all rows at once; the order
  of the classes, hence argmax and accuracy, never changes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.special import softmax

from ..._util.types import ArrayLike
from ..._util.validation import check_choice, user_stacklevel
from ...exceptions import IdentifiabilityWarning, NumericalWarning
from .._base import check_eps
from .._inputs import EPS, ScoreInput, base_probs, score_matrix
from .solver import TemperatureSolution, _unsolved_rows, conformal_temperatures
from .split import MatrixInput, SplitConformal, hard_labels, set_settings

__all__ = ["MassRescaling", "ConformalTemperature", "mass_rescale", "conformal_temperatures",
           "TemperatureSolution"]


def mass_rescale(P: np.ndarray, sets: np.ndarray, alpha: float,
                 degenerate_tol: tuple[float, float] = (1e-8, 1e-5 + 1e-8)
                 ) -> tuple[np.ndarray, np.ndarray]:
    r"""Eq. 6: in-set mass to exactly 1 - alpha, out-of-set mass to alpha, ratios kept.

    Parameters
    ----------
    P : ndarray of shape (n, K)
    sets : bool ndarray of shape (n, K)
    alpha : float
    degenerate_tol : (float, float), default=(1e-8, 1e-5 + 1e-8)
        Rows with :math:`P_{in} \le` the first value (an empty set, or one holding no
        mass) or :math:`P_{out} \le` the second (a full set, or one holding all the mass)
        are returned unchanged: the rescaling divides by these masses. The default is
        ``np.isclose``'s, as in the authors' code (so rows with :math:`P_{in} \ge
        0.99999` stay as they are).

    Returns
    -------
    Q : ndarray of shape (n, K)
    degenerate : bool ndarray of shape (n,)
    """
    p_in = np.sum(np.where(sets, P, 0.0), axis=1)
    p_out = np.sum(np.where(sets, 0.0, P), axis=1)
    deg = (p_in <= degenerate_tol[0]) | (p_out <= degenerate_tol[1])
    safe_in = np.where(deg, 1.0, p_in)[:, None]
    safe_out = np.where(deg, 1.0, p_out)[:, None]
    Q = np.where(sets, (1.0 - alpha) / safe_in * P, alpha / safe_out * P)
    return np.where(deg[:, None], P, Q), deg


_SET_PARAMS = """alpha : float, default=0.1
        Miscoverage level of the conformal sets, a fraction in (0, 1).
    score : {'msp', 'aps'}, default='msp'
    threshold : {'constant', 'adaptive'}, default='constant'
    aps_include_boundary, ada_fraction, ada_hidden, ada_steps, ada_lr, eps, seed
    randomized, lam, k_reg, tune_fraction, mondrian
        As for :class:`~noisycal.calibrators.conformal.SplitConformal`, which builds the
        sets (its fitted threshold is ``conformal_``)."""


def _doc(cls: type) -> type:
    cls.__doc__ = cls.__doc__.replace("{set_params}", _SET_PARAMS)
    return cls


class _ConformalMap(MatrixInput):
    _fitted_attr = "conformal_"

    def _set_args(self) -> dict:
        return {k: getattr(self, k) for k in SplitConformal._get_param_names()}

    def _fit_sets(self, probs: ArrayLike | None, logits: ArrayLike | None,
                  target: object, conformal: SplitConformal | None = None) -> None:
        if conformal is None:
            self.conformal_ = SplitConformal(**self._set_args()).fit(
                probs=probs, logits=logits, target=target)
        else:
            if not isinstance(conformal, SplitConformal) or not hasattr(conformal,
                                                                         "quantile_"):
                raise ValueError("conformal must be a fitted SplitConformal")
            mine, theirs = set_settings(self._set_args()), set_settings(conformal.get_params())
            diff = sorted(k for k in mine.keys() | theirs.keys()
                          if k not in mine or k not in theirs or mine[k] != theirs[k])
            if diff:
                raise ValueError(f"conformal was fitted with other settings ({diff}) than "
                                 "this map's parameters")
            self.conformal_ = conformal.at_alpha(self.alpha)
            # the calibration rows (their per-row outcomes are counted by fit): the width
            # of the fitted builder, and hard labels of the same length
            x = score_matrix(probs, logits, check_eps(self.eps))
            n, K = x.S.shape
            if K != conformal.n_classes_:
                raise ValueError(f"{x.given} must have the {conformal.n_classes_} columns "
                                 f"conformal was fitted on, got {K}")
            hard_labels(target, n, K)
        self.alpha_ = self.conformal_.alpha_
        self.n_classes_ = self.conformal_.n_classes_

    def _prepare(self, probs: ArrayLike | None, logits: ArrayLike | None
                 ) -> tuple[ScoreInput, np.ndarray]:
        self._check_fitted()
        x = score_matrix(probs, logits, self.eps)
        return x, self.conformal_.sets_of(x)

    def predict_sets(self, *, probs: ArrayLike | None = None,
                     logits: ArrayLike | None = None) -> np.ndarray:
        """The conformal sets of new rows (boolean mask (n, n_classes)).

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)

        Returns
        -------
        bool ndarray
        """
        return self._prepare(probs, logits)[1]


@_doc
class MassRescaling(_ConformalMap):
    r"""Mass rescaling ("MR"): the conformal set gets exactly 1 - alpha of the mass.

    "Adaptive Set-Mass Calibration with Conformal Prediction", Eq. 6 and Appendix A:
    :math:`\tilde p_y = \frac{1-\alpha}{P_{in}} p_y` for y in C(x), else
    :math:`\frac{\alpha}{P_{out}} p_y`, the KL projection of p onto the predictions
    whose set mass is 1 - alpha. The paper leaves empty and full sets open; rows whose
    in-set or out-of-set mass is within ``degenerate_tol`` of 0 are left unchanged (the
    authors' code, see :func:`mass_rescale`).

    Parameters
    ----------
    {set_params}
    degenerate_tol : (float, float), default=(1e-8, 1e-5 + 1e-8)
        See :func:`mass_rescale`.

    Attributes
    ----------
    conformal_ : SplitConformal
    alpha_ : float
    n_classes_ : int
    row_status_counts_ : dict
        Per-row outcomes on the calibration rows: 'ok' (rescaled) and 'degenerate'
        (left unchanged).
    status_, message_ : str
        The conformal fit's status if not 'ok'; else 'degenerate_rows' (with a
        :class:`~noisycal.NumericalWarning`) when some calibration rows are degenerate,
        else 'ok'. ``predict_proba`` warns likewise when some of its rows are degenerate.
    """

    def __init__(self, *, alpha: float = 0.1, score: str = "msp", randomized: bool = False,
                 lam: float | str = 0.01, k_reg: int | str = 5, tune_fraction: float = 0.3,
                 mondrian: bool = False,
                 threshold: str = "constant", aps_include_boundary: bool = False,
                 ada_fraction: float = 0.5,
                 ada_hidden: tuple[int, ...] = (100,) * 6, ada_steps: int = 3000,
                 ada_lr: float = 0.01, eps: float = EPS, seed: int = 0,
                 degenerate_tol: tuple[float, float] = (1e-8, 1e-5 + 1e-8)) -> None:
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
        self.degenerate_tol = degenerate_tol

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object, conformal: SplitConformal | None = None) -> MassRescaling:
        """Fit the conformal threshold on calibration predictions and hard labels.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).
        target : labels (n,), or one-hot rows / a hard Target
        conformal : SplitConformal, optional
            A fitted set builder with this map's settings (its quantile is recomputed at
            this map's alpha): reuses an adaptive transform across levels. Its threshold
            comes from the data it was fitted on; ``probs``/``logits`` and ``target``
            should be those calibration rows: they must have its number of columns and
            valid hard labels (checked), and the per-row outcomes
            (``row_status_counts_``) are counted on them.

        Returns
        -------
        self
        """
        tol = self.degenerate_tol
        try:
            t0, t1 = (float(v) for v in tol)
        except (TypeError, ValueError):
            raise ValueError(f"degenerate_tol must be a pair of numbers in [0, 0.5), got "
                             f"{tol!r}") from None
        if not (0.0 <= t0 < 0.5 and 0.0 <= t1 < 0.5):
            raise ValueError(f"degenerate_tol must be a pair of numbers in [0, 0.5), got "
                             f"{tol!r}")
        self.degenerate_tol_ = (t0, t1)
        self._fit_sets(probs, logits, target, conformal)
        x, sets = self._prepare(probs, logits)
        _, deg = mass_rescale(base_probs(x), sets, self.alpha_, self.degenerate_tol_)
        n_deg = int(np.sum(deg))
        self.row_status_counts_ = {k: c for k, c in (("ok", deg.size - n_deg),
                                                     ("degenerate", n_deg)) if c}
        if self.conformal_.status_ != "ok":
            self._set_status(self.conformal_.status_, self.conformal_.message_, None)
        elif n_deg:
            self._set_status("degenerate_rows", f"{_degenerate_message(n_deg, deg.size)}; "
                             "see row_status_counts_", NumericalWarning)
        else:
            self._set_status("ok", "", None)
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Rescaled probabilities (rows with degenerate sets unchanged).

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)

        Returns
        -------
        ndarray of shape (n, n_classes), or (n,) positive-class probabilities for 1-D
        binary scores
        """
        x, sets = self._prepare(probs, logits)
        Q, deg = mass_rescale(base_probs(x), sets, self.alpha_, self.degenerate_tol_)
        n_deg = int(np.sum(deg))
        if n_deg:
            warnings.warn(f"MassRescaling: {_degenerate_message(n_deg, deg.size)}",
                          NumericalWarning, stacklevel=user_stacklevel())
        return Q[:, 1] if x.binary else Q


def _degenerate_message(n_deg: int, n: int) -> str:
    return (f"{n_deg} of {n} rows are degenerate (their set holds no mass or all of it, "
            "within degenerate_tol) and are returned unchanged, not rescaled to set mass "
            "1 - alpha")


@_doc
class ConformalTemperature(_ConformalMap):
    r"""Conformal temperature scaling ("TS (ours)"): a temperature per row, the largest
    with in-set mass at least 1 - alpha.

    "Adaptive Set-Mass Calibration with Conformal Prediction", Section 3.2 (its
    constraint omits the sum over C(x); the per-row reading follows the authors' code
    and their tables, where MR and this map agree on singleton sets). The order of the
    classes is kept, so argmax and accuracy are unchanged. Where the paper is silent:
    empty sets are left unchanged by default (``empty_set='sharpen'`` gives
    ``tau_min``, the authors' code), and a set holding at least 1 - alpha at every
    temperature (``|C|/K >= 1 - alpha``) gets the cap ``tau_max`` (near uniform); both
    are counted in ``row_status_counts_`` on the calibration rows and a cap or
    unreachable row makes ``status_`` 'cap', 'unreachable' or 'cap_and_unreachable' (with a
    warning counting each; ``predict_proba`` warns likewise for its rows).

    Parameters
    ----------
    {set_params}
    empty_set : {'unchanged', 'sharpen'}, default='unchanged'
    tau_min, tau_max : float, default=1e-4, 1e6
    tol : float, default=1e-12
        Relative bracket width in log(1/tau) at which the bisection stops.

    Attributes
    ----------
    conformal_ : SplitConformal
    alpha_ : float
    n_classes_ : int
    row_status_counts_ : dict
        Per-row outcomes ('ok', 'cap', 'empty', 'unreachable') on the calibration rows.
    status_, message_ : str
    """

    def __init__(self, *, alpha: float = 0.1, score: str = "msp", randomized: bool = False,
                 lam: float | str = 0.01, k_reg: int | str = 5, tune_fraction: float = 0.3,
                 mondrian: bool = False,
                 threshold: str = "constant", aps_include_boundary: bool = False,
                 ada_fraction: float = 0.5,
                 ada_hidden: tuple[int, ...] = (100,) * 6, ada_steps: int = 3000,
                 ada_lr: float = 0.01, eps: float = EPS, seed: int = 0,
                 empty_set: str = "unchanged", tau_min: float = 1e-4, tau_max: float = 1e6,
                 tol: float = 1e-12) -> None:
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
        self.empty_set = empty_set
        self.tau_min = tau_min
        self.tau_max = tau_max
        self.tol = tol

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object, conformal: SplitConformal | None = None) -> ConformalTemperature:
        """Fit the conformal threshold; report the per-row outcomes on the calibration rows.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).
        target : labels (n,), or one-hot rows / a hard Target
        conformal : SplitConformal, optional
            As for :meth:`MassRescaling.fit`.

        Returns
        -------
        self
        """
        check_choice(self.empty_set, "empty_set", ("unchanged", "sharpen"))
        lo, hi = (float(v) if not isinstance(v, bool) else math.nan
                  for v in (self.tau_min, self.tau_max))
        if not (0.0 < lo < hi < math.inf):
            raise ValueError(f"tau_min and tau_max must satisfy 0 < tau_min < tau_max < inf, "
                             f"got {self.tau_min!r}, {self.tau_max!r}")
        if isinstance(self.tol, bool) or not 0.0 < float(self.tol) < 1e-3:
            raise ValueError(f"tol must lie in (0, 1e-3), got {self.tol!r}")
        self._fit_sets(probs, logits, target, conformal)
        sol = self.temperatures(probs=probs, logits=logits)
        kinds, counts = np.unique(sol.status, return_counts=True)
        self.row_status_counts_ = {str(k): int(c) for k, c in zip(kinds, counts, strict=True)}
        status, why = _unsolved_rows(sol.status)
        if self.conformal_.status_ != "ok":
            self._set_status(self.conformal_.status_, self.conformal_.message_, None)
        elif status != "ok":
            self._set_status(status, f"of {sol.tau.size} calibration rows, {why}; see "
                             "row_status_counts_", IdentifiabilityWarning)
        else:
            self._set_status("ok", "", None)
        return self

    def temperatures(self, *, probs: ArrayLike | None = None,
                     logits: ArrayLike | None = None) -> TemperatureSolution:
        """Per-row temperatures and outcomes for new rows.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)

        Returns
        -------
        TemperatureSolution
        """
        x, sets = self._prepare(probs, logits)
        return conformal_temperatures(x.S, sets, self.alpha_, empty_set=self.empty_set,
                                      tau_min=float(self.tau_min), tau_max=float(self.tau_max),
                                      tol=float(self.tol))

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """Tempered probabilities ``softmax(s / tau(x))``, one temperature per row.

        Rows whose set holds at least 1 - alpha at every temperature (status 'cap', tau
        is ``tau_max``) or never reaches it (status 'unreachable', tau is ``tau_min``)
        give a :class:`~noisycal.NumericalWarning` counting each kind.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)

        Returns
        -------
        ndarray of shape (n, n_classes), or (n,) positive-class probabilities for 1-D
        binary scores
        """
        x, sets = self._prepare(probs, logits)
        sol = conformal_temperatures(x.S, sets, self.alpha_, empty_set=self.empty_set,
                                     tau_min=float(self.tau_min), tau_max=float(self.tau_max),
                                     tol=float(self.tol))
        status, why = _unsolved_rows(sol.status)
        if status != "ok":
            warnings.warn(f"ConformalTemperature: of {sol.tau.size} rows, {why}",
                          NumericalWarning, stacklevel=user_stacklevel())
        Q = softmax(x.S / sol.tau[:, None], axis=1)
        return Q[:, 1] if x.binary else Q
