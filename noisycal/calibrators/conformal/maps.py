r"""Recalibration with conformal sets: mass rescaling and conformal temperature scaling.

The maps are mass rescaling ("MR") and conformal temperature scaling ("TS (ours)"), from
"Adaptive Set-Mass Calibration with Conformal Prediction" (Sections 3 and 3.2, Eq. 6,
Appendix A).

Both conformal maps compose one
:class:`~noisycal.calibrators.conformal.SplitConformal` (their ``conformal=`` parameter,
which holds every setting of the sets, alpha included), build its set C(x) on the
*uncalibrated* probabilities and then move the mass so that C(x) holds exactly
1 - alpha:

- :class:`MassRescaling` multiplies the in-set probabilities by
  :math:`(1-\alpha)/P_{in}` and the others by :math:`\alpha/P_{out}` (Eq. 6). This is the
  KL projection of p onto :math:`\{\pi \in \Delta_K : \sum_{y \in C} \pi_y = 1 - \alpha\}`
  (Appendix A); ratios inside each group are kept, the overall order need not be.
- :class:`ConformalTemperature` finds, per row, the largest temperature with in-set
  mass at least 1 - alpha (the in-set mass of a top-k set decreases in the
  temperature), by bisection in :math:`\beta = 1/\tau` over all rows at once; the order
  of the classes, hence argmax and accuracy, never changes.

Without ``conformal=`` a map builds :func:`default_conformal`, whose sets are
deterministic (``randomized=False``, unlike ``SplitConformal``'s own default): the
set-mass paper defines the maps on deterministic sets, and a map's output for a row
then depends on that row alone (randomised sets of new rows draw their uniforms by row
position).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.special import softmax

from ..._util.types import ArrayLike
from ..._util.validation import check_choice, user_stacklevel
from ...exceptions import IdentifiabilityWarning, NumericalWarning
from .._base import Calibrator
from .._inputs import ScoreInput, base_probs, score_matrix
from .solver import TemperatureSolution, _unsolved_rows, conformal_temperatures
from .split import MatrixInput, SplitConformal, hard_labels, set_settings

__all__ = ["MassRescaling", "ConformalTemperature", "mass_rescale", "conformal_temperatures",
           "TemperatureSolution", "default_conformal"]


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


def default_conformal() -> SplitConformal:
    """The set builder of a conformal map given ``conformal=None``.

    ``SplitConformal(alpha=0.1, score='msp', randomized=False)``: the set-mass paper's
    deterministic sets at alpha = 0.1 with MSP scores and one threshold. The sets are
    deterministic, unlike :class:`SplitConformal`'s own default, because the paper
    defines the maps on them and because a map's output for a row should depend on that
    row alone (a randomised set of a new row depends on the uniform drawn for its
    position). With MSP scores ``randomized`` has no effect; it is stated so that the
    default says what it is.

    Returns
    -------
    SplitConformal
        A new, unfitted builder.

    Examples
    --------
    >>> from noisycal.calibrators.conformal.maps import default_conformal
    >>> default_conformal()
    SplitConformal(randomized=False)
    """
    return SplitConformal(alpha=0.1, score="msp", randomized=False)


class _ConformalMap(MatrixInput):
    _fitted_attr = "conformal_"

    def set_params(self, **params: object) -> Calibrator:
        """Set parameters (no validation here: ``fit`` validates them).

        Parameters
        ----------
        **params
            New values by parameter name; ``conformal__<name>`` sets a parameter of the
            map's :class:`SplitConformal` (``conformal`` must then be one, not None).

        Returns
        -------
        self
        """
        nested = sorted(k for k in params if k.startswith("conformal__"))
        if nested and params.get("conformal", getattr(self, "conformal", None)) is None:
            raise ValueError(f"{nested[0]} sets a parameter of conformal, which is None (the "
                             f"default {default_conformal()!r}); pass "
                             "conformal=SplitConformal(...) with the settings instead")
        return super().set_params(**params)

    def _builder(self) -> SplitConformal:
        """An unfitted copy of ``conformal`` (the parameter itself is never fitted), or
        :func:`default_conformal`."""
        given = self.conformal
        if given is None:
            return default_conformal()
        if not isinstance(given, SplitConformal):
            raise ValueError(f"conformal must be a SplitConformal or None, got "
                             f"{type(given).__name__}")
        return type(given)(**given.get_params(deep=False))

    def _fit_sets(self, probs: ArrayLike | None, logits: ArrayLike | None,
                  target: object, prefit: SplitConformal | None) -> None:
        builder = self._builder()
        if prefit is None:
            self.conformal_ = builder.fit(probs=probs, logits=logits, target=target)
        else:
            if not isinstance(prefit, SplitConformal) or not prefit.__sklearn_is_fitted__():
                raise ValueError("prefit must be a fitted SplitConformal")
            mine, theirs = set_settings(builder.get_params()), set_settings(prefit.get_params())
            diff = sorted(k for k in mine.keys() | theirs.keys()
                          if k not in mine or k not in theirs or mine[k] != theirs[k])
            if diff:
                raise ValueError(f"prefit was fitted with other settings ({diff}) than this "
                                 f"map's conformal={builder!r}")
            self.conformal_ = prefit.at_alpha(builder.alpha)
            # the calibration rows (their per-row outcomes are counted by fit): the width
            # of the fitted builder, and hard labels of the same length
            x = score_matrix(probs, logits, self.conformal_.eps)
            n, K = x.S.shape
            if K != prefit.n_classes_:
                raise ValueError(f"{x.given} must have the {prefit.n_classes_} columns "
                                 f"prefit was fitted on, got {K}")
            hard_labels(target, n, K)
        self.alpha_ = self.conformal_.alpha_
        self.n_classes_ = self.conformal_.n_classes_

    def _prepare(self, probs: ArrayLike | None, logits: ArrayLike | None
                 ) -> tuple[ScoreInput, np.ndarray]:
        self._check_fitted()
        x = score_matrix(probs, logits, self.conformal_.eps)
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
    conformal : SplitConformal or None, default=None
        The split-conformal set builder, which holds every setting of the sets
        (``alpha``, ``score``, ``threshold``, ``mondrian``, ...); the map's level is
        its ``alpha``. ``fit`` fits a copy of it on the calibration rows
        (``conformal_``; the parameter itself stays unfitted). Any builder works; with
        randomised APS or RAPS scores the sets of new rows, hence the map's output,
        depend on the uniforms drawn for their positions. None:
        :func:`default_conformal`, deterministic MSP sets at alpha = 0.1
        (``randomized=False``, unlike ``SplitConformal()``; see there why).
    degenerate_tol : (float, float), default=(1e-8, 1e-5 + 1e-8)
        See :func:`mass_rescale`.

    Attributes
    ----------
    conformal_ : SplitConformal
        The fitted set builder (a fitted copy of ``conformal``, or ``prefit`` at its
        level).
    alpha_ : float
        Its level.
    n_classes_ : int
    row_status_counts_ : dict
        Per-row outcomes on the calibration rows: 'ok' (rescaled) and 'degenerate'
        (left unchanged).
    status_, message_ : str
        The conformal fit's status if not 'ok'; else 'degenerate_rows' (with a
        :class:`~noisycal.NumericalWarning`) when some calibration rows are degenerate,
        else 'ok'. ``predict_proba`` warns likewise when some of its rows are degenerate.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import noisycal as nc
    >>> g = nc.simulate.gaussian_grid(2000, 10, seed=0)
    >>> z = g.true_logits
    >>> sets = nc.calibrators.SplitConformal(alpha=0.1, score="aps", seed=0)
    >>> mr = nc.calibrators.MassRescaling(conformal=sets)
    >>> with warnings.catch_warnings():  # rows whose set holds no mass or all of it
    ...     warnings.simplefilter("ignore", nc.NumericalWarning)
    ...     mr = mr.fit(logits=z[:1000], target=g.labels[:1000])
    ...     Q = mr.predict_proba(logits=z[1000:])
    >>> mr.status_, mr.row_status_counts_
    ('degenerate_rows', {'ok': 985, 'degenerate': 15})
    >>> S = mr.predict_sets(logits=z[1000:])
    >>> P = np.exp(z[1000:]) / np.exp(z[1000:]).sum(axis=1, keepdims=True)
    >>> in_set = np.where(S, P, 0.0).sum(axis=1)
    >>> ok = (in_set > 1e-8) & (1 - in_set > 1e-5 + 1e-8)
    >>> float(np.abs(np.where(S, Q, 0.0).sum(axis=1)[ok] - 0.9).max()) < 1e-12
    True
    """

    def __init__(self, *, conformal: SplitConformal | None = None,
                 degenerate_tol: tuple[float, float] = (1e-8, 1e-5 + 1e-8)) -> None:
        self.conformal = conformal
        self.degenerate_tol = degenerate_tol

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object, prefit: SplitConformal | None = None) -> MassRescaling:
        """Fit the conformal threshold on calibration predictions and hard labels.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).
        target : labels (n,), or one-hot rows / a hard Target
        prefit : SplitConformal, optional
            An already fitted set builder to use instead of fitting ``conformal``: one
            fit then serves every level (an adaptive transform is trained once). It must
            build the sets of ``conformal`` (or of :func:`default_conformal`) up to
            alpha, as :func:`~noisycal.calibrators.conformal.split.set_settings` compares
            them (ValueError naming the settings that differ); its quantile is
            recomputed at ``conformal.alpha`` (``prefit`` is not modified). Its
            threshold comes from the data it was fitted on; ``probs``/``logits`` and
            ``target`` should be those calibration rows: they must have its number of
            columns and valid hard labels (checked), and the per-row outcomes
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
        self._fit_sets(probs, logits, target, prefit)
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
    conformal : SplitConformal or None, default=None
        The split-conformal set builder, which holds every setting of the sets
        (``alpha``, ``score``, ``threshold``, ``mondrian``, ...); the map's level is
        its ``alpha``. ``fit`` fits a copy of it on the calibration rows
        (``conformal_``; the parameter itself stays unfitted). Any builder works; with
        randomised APS or RAPS scores the sets of new rows, hence the map's output,
        depend on the uniforms drawn for their positions. None:
        :func:`default_conformal`, deterministic MSP sets at alpha = 0.1
        (``randomized=False``, unlike ``SplitConformal()``; see there why).
    empty_set : {'unchanged', 'sharpen'}, default='unchanged'
    tau_min, tau_max : float, default=1e-4, 1e6
    tol : float, default=1e-12
        Relative bracket width in log(1/tau) at which the bisection stops.

    Attributes
    ----------
    conformal_ : SplitConformal
        The fitted set builder (a fitted copy of ``conformal``, or ``prefit`` at its
        level).
    alpha_ : float
        Its level.
    n_classes_ : int
    row_status_counts_ : dict
        Per-row outcomes ('ok', 'cap', 'empty', 'unreachable') on the calibration rows.
    status_, message_ : str

    Examples
    --------
    >>> import numpy as np
    >>> import noisycal as nc
    >>> g = nc.simulate.gaussian_grid(2000, 10, seed=0)
    >>> z = 2.5 * g.true_logits
    >>> sets = nc.calibrators.SplitConformal(alpha=0.2)  # MSP scores
    >>> ts = nc.calibrators.ConformalTemperature(conformal=sets)
    >>> ts = ts.fit(logits=z[:1000], target=g.labels[:1000])
    >>> Q = ts.predict_proba(logits=z[1000:])
    >>> bool(np.array_equal(Q.argmax(axis=1), z[1000:].argmax(axis=1)))
    True
    """

    def __init__(self, *, conformal: SplitConformal | None = None,
                 empty_set: str = "unchanged", tau_min: float = 1e-4, tau_max: float = 1e6,
                 tol: float = 1e-12) -> None:
        self.conformal = conformal
        self.empty_set = empty_set
        self.tau_min = tau_min
        self.tau_max = tau_max
        self.tol = tol

    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object, prefit: SplitConformal | None = None) -> ConformalTemperature:
        """Fit the conformal threshold; report the per-row outcomes on the calibration rows.

        Parameters
        ----------
        probs, logits : array-like of shape (n, n_classes)
            Base predictions (exactly one).
        target : labels (n,), or one-hot rows / a hard Target
        prefit : SplitConformal, optional
            A fitted set builder to use instead of fitting ``conformal``, as for
            :meth:`MassRescaling.fit`.

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
        self._fit_sets(probs, logits, target, prefit)
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
