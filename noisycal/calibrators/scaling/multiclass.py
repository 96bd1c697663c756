"""Vector, Platt, matrix and Dirichlet scaling, fitted to any target.

They are fitted by L-BFGS-B on JAX gradients.

Every map here is ``q_i = softmax(eta(s_i))`` on the score matrix of
:mod:`noisycal.calibrators._inputs` (logits as given and never clipped, probabilities as
``log(max(p, eps))``, binary 1-D scores as two-column log-probabilities):

- :class:`VectorScaling`: ``eta_k = s_k / T_k`` (per-class temperatures, no bias; the VS of
  Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth",
  Section 6);
- :class:`PlattScaling`: ``eta_k = w_k s_k + b_k`` (binary 1-D scores:
  ``sigmoid(u logit + v)``; Platt, 1999); fitted to soft targets it is that paper's
  SoftPlatt;
- :class:`MatrixScaling`: ``eta = W s + b`` on the logits (Guo et al., 2017), with the
  off-diagonal and intercept regulariser (ODIR) of Kull et al. (2019),
  ``lambda / (K (K - 1)) sum_{j != l} W_jl^2 + mu / K sum_j b_j^2``;
- :class:`DirichletCalibration`: the same map on log-probabilities (Kull et al., 2019;
  logits enter as ``log_softmax(logits)``).

One code path serves every target (hard, soft, voted, corrected, posterior or any
matrix with rows summing to 1): the loss is the log loss for targets on the simplex and
the affine Brier loss for targets that leave it (``loss='auto'``; see
:mod:`noisycal.calibrators._inputs`). A one-hot target is exactly the hard-label fit.

Parameters live in a box (``bounds``); an optimum on its edge is reported (status
``'boundary'``), as are an optimiser that did not converge (``'not_converged'``) and
scores that cannot identify the parameters (``'not_identified'``).

References
----------
Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. (2017). On calibration of modern neural
networks. ICML.

Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song, H. & Flach, P. (2019).
Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
Dirichlet calibration. NeurIPS.

Platt, J. (1999). Probabilistic outputs for support vector machines and comparisons to
regularized likelihood methods. Advances in Large Margin Classifiers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import x64
from ..._util.threads import single_thread_blas
from ..._util.types import ArrayLike
from ..._util.validation import check_int, check_real, check_work_bytes
from .._base import check_box, minimise_from_starts
from .._inputs import EPS, SoftmaxMap, finish_status, score_matrix, separates

__all__ = ["VectorScaling", "PlattScaling", "MatrixScaling", "DirichletCalibration",
           "fit_softmax_map"]

#: Features of adaptive temperature scaling (appended to the scores for kind 'adaptive').
N_ATS_FEATURES = 4
#: The temperature floor of adaptive temperature scaling, T_i = softplus(.) + 0.1.
ATS_MIN_TEMPERATURE = 0.1
#: L-BFGS-B tolerances of the fits (scipy's names).
LBFGS_FTOL = 1e-13
LBFGS_GTOL = 1e-9
#: A fit whose optimiser reports failure (typically a line search at the limit of float64)
#: still counts as converged when its largest projected gradient is at most this.
ACCEPT_PGTOL = 1e-6


def _eta(theta: jax.Array, S: jax.Array, kind: str) -> jax.Array:
    """The map's linear predictor for each parameterisation."""
    K = S.shape[1]
    if kind == "vector":
        return S * theta
    if kind == "platt":
        return S * theta[:K] + theta[K:]
    if kind == "platt_binary":
        s = S[:, 1] - S[:, 0]
        return jnp.stack([jnp.zeros_like(s), theta[0] * s + theta[1]], axis=1)
    if kind == "adaptive":  # S = [scores | standardised features]; theta = (w, b)
        K = S.shape[1] - N_ATS_FEATURES
        temp = jax.nn.softplus(S[:, K:] @ theta[:N_ATS_FEATURES] + theta[N_ATS_FEATURES])
        return S[:, :K] / (temp + ATS_MIN_TEMPERATURE)[:, None]
    if kind in ("beta_abm", "beta_ab"):  # S = [log(1 - s), log s]; beta calibration
        c = theta[2] if kind == "beta_abm" else (theta[0] - theta[1]) * jnp.log(2.0)
        u = theta[0] * S[:, 1] - theta[1] * S[:, 0] + c
        return jnp.stack([jnp.zeros_like(u), u], axis=1)
    W = theta[: K * K].reshape(K, K)
    return S @ W.T + theta[K * K:]


def _objective(theta: jax.Array, S: jax.Array, T: jax.Array, lam: float, mu: float, *,
               kind: str, loss: str, binary: bool) -> jax.Array:
    """Mean loss of ``softmax(eta)`` against ``T``, plus ODIR for the affine maps."""
    logq = jax.nn.log_softmax(_eta(theta, S, kind), axis=1)
    if loss == "log":
        value = -jnp.mean(jnp.sum(T * logq, axis=1))
    else:
        q = jnp.exp(logq)
        value = jnp.mean(jnp.sum(q * q - 2.0 * q * T + T, axis=1)) * (0.5 if binary else 1.0)
    if kind == "affine":
        K = S.shape[1]
        W = theta[: K * K].reshape(K, K)
        off = jnp.sum(W * W) - jnp.sum(jnp.diag(W) ** 2)
        value = value + lam * off / (K * (K - 1)) + mu * jnp.sum(theta[K * K:] ** 2) / K
    if kind == "adaptive":
        value = value + lam * jnp.sum(theta[:N_ATS_FEATURES] ** 2)
    return value


_value_and_grad = jax.jit(jax.value_and_grad(_objective),
                          static_argnames=("kind", "loss", "binary"))


def fit_softmax_map(kind: str, S: np.ndarray, T: np.ndarray, *, loss: str, binary: bool,
                    starts: list[np.ndarray], box: list[tuple[float, float]],
                    max_iter: int, lam: float = 0.0, mu: float = 0.0
                    ) -> tuple[object, bool]:
    """Minimise the map's loss by L-BFGS-B on JAX gradients (float64), from each start.

    Parameters
    ----------
    kind : {'vector', 'platt', 'platt_binary', 'beta_abm', 'beta_ab', 'adaptive', 'affine'}
        The parameterisation (module docstring; 'adaptive' takes ``S`` with the
        ``N_ATS_FEATURES`` standardised features appended, and ``lam`` as the weight of
        the l2 penalty on its feature weights).
    S, T : ndarray of shape (n, K)
        Scores and target rows.
    loss : {'log', 'brier'}
        The fitting loss.
    binary : bool
        Halve the Brier loss (binary 1-D scores).
    starts : list of ndarray
        Starting parameter vectors.
    box : list of (low, high)
        Bounds of every parameter.
    max_iter : int
        L-BFGS-B iteration limit.
    lam, mu : float, default=0.0
        ODIR weights of the off-diagonal entries and of the intercepts (kind 'affine');
        ``lam`` is the l2 weight of kind 'adaptive'.

    Returns
    -------
    best : scipy.optimize.OptimizeResult
        The best fit over the starts.
    converged : bool
        Whether it converged: a largest projected gradient of at most ``ACCEPT_PGTOL``,
        or scipy's success with one of at most ``ACCEPT_PGTOL * max(1, |objective|)``
        (scipy's stop on a small relative reduction of a huge objective is not
        convergence).
    """
    with x64():
        Sj, Tj = jnp.asarray(S, dtype=jnp.float64), jnp.asarray(T, dtype=jnp.float64)
        fn = functools.partial(_value_and_grad, kind=kind, loss=loss, binary=binary)

        def f(theta: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad = fn(jnp.asarray(theta), Sj, Tj, lam, mu)
            return float(value), np.asarray(grad, dtype=np.float64)

        options = {"maxiter": max_iter, "ftol": LBFGS_FTOL, "gtol": LBFGS_GTOL}
        with single_thread_blas():  # L-BFGS-B's small BLAS calls (see the helper)
            best = minimise_from_starts(f, starts, box, options)
        _, grad = f(best.x)
    lo = np.array([b[0] for b in box])
    hi = np.array([b[1] for b in box])
    pg = np.where((best.x <= lo) & (grad > 0) | (best.x >= hi) & (grad < 0), 0.0, grad)
    # scipy's success includes its stop on a small reduction of f relative to |f|, which a
    # huge objective (scores of enormous scale) meets far from any minimum: a stop it calls
    # success must also pass the gradient test, relative to the objective's size
    pg_max = float(np.max(np.abs(pg)))
    converged = pg_max <= ACCEPT_PGTOL or (
        bool(best.success) and pg_max <= ACCEPT_PGTOL * max(1.0, abs(float(best.fun))))
    if best.success and not converged:
        best.message = (f"L-BFGS-B stopped ({best.message}) at the objective {best.fun:.4g} "
                        f"with a largest projected gradient of {pg_max:.4g}, far from 0")
    return best, converged


class _LbfgsMap(SoftmaxMap):
    """Shared fitting of the L-BFGS-B maps: run, record, status."""

    def _run(self, kind: str, S: np.ndarray, T: np.ndarray, starts: list[np.ndarray],
             box: list[tuple[float, float]], not_identified: str | None,
             lam: float = 0.0, mu: float = 0.0,
             model_lower: np.ndarray | None = None, eta_of: Callable | None = None) -> np.ndarray:
        """Fit and set ``objective_``, ``n_iter_``, ``at_bound_``, ``status_``, ``message_``;
        return the best parameter vector. ``model_lower`` marks coordinates whose lower
        bound is a constraint of the model (a monotone map), not an edge of the box: a
        parameter on it does not make the status 'boundary'. ``eta_of(theta)``: the (n, K)
        scores of a map linear in its parameters, for :func:`_inputs.separates`."""
        max_iter = check_int(self.max_iter, "max_iter", minimum=1)
        # the log loss of a softmax of parameters entering linearly is convex: one start
        # suffices; the affine Brier loss is not, so every start is tried
        starts = [np.clip(x, [b[0] for b in box], [b[1] for b in box])
                  for x in (starts[:1] if self.loss_ == "log" else starts)]
        best, converged = fit_softmax_map(kind, S, T, loss=self.loss_, binary=self.binary_,
                                          starts=starts, box=box, max_iter=max_iter,
                                          lam=lam, mu=mu)
        lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
        self.objective_ = float(best.fun)
        self.n_iter_ = int(best.nit)
        on_lo = np.isclose(best.x, lo)
        if model_lower is not None:
            on_lo &= ~np.asarray(model_lower, dtype=bool)
        self.at_bound_ = bool(np.any(on_lo | np.isclose(best.x, hi)))
        hint = (", or the log loss is unbounded below for this target outside [0, 1]: "
                "use loss='brier'") if self.loss_ == "log" and self._outside else ""
        separated = eta_of is not None and separates(eta_of(np.asarray(best.x)), T)
        finish_status(self, not_identified=not_identified, converged=converged,
                      optimiser=str(best.message), at_bound=self.at_bound_,
                      bounds=self.bounds, hint=hint, separated=separated)
        return np.asarray(best.x, dtype=np.float64)


_FIT_DOC = """
        Parameters
        ----------
        probs : array-like of shape (n,) or (n, n_classes), optional
            Probabilities (binary: positive-class probabilities in [0, 1]; rows of a
            matrix sum to 1), floored at ``eps`` before the logarithm.
        logits : array-like of shape (n,) or (n, n_classes), optional
            Logits, never clipped. Give exactly one of ``probs`` and ``logits``.
        target : Target, array-like of shape (n, n_classes) or (n,)
            A Target or matrix (rows summing to 1; only a corrected Target may leave [0, 1]) or
            integer labels; for binary 1-D scores also a 1-D float positive-class target.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If an input is missing, not finite, of the wrong shape or length, or not
            aligned with the target's items, target rows do not sum to 1, or a parameter
            is invalid.
"""


class _PerItemTemperature:
    """For maps that divide each item's scores by its own temperature: ``_eta`` and
    ``predict_temperature`` from the subclass's ``_temperatures(S)`` (one per row)."""

    def _eta(self, S: np.ndarray) -> np.ndarray:
        return S / self._temperatures(S)[:, None]

    def predict_temperature(self, *, probs: ArrayLike | None = None,
                            logits: ArrayLike | None = None) -> np.ndarray:
        """The per-item temperatures ``T_i``.

        Parameters
        ----------
        probs, logits : array-like of shape (n,) or (n, n_classes), optional
            Exactly one, as for :meth:`predict_proba`.

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        x = score_matrix(probs, logits, self.eps_)
        if x.binary != self.binary_ or x.S.shape[1] != self.n_classes_ \
                or x.given != self.input_:
            raise ValueError(f"{x.given} must be the input kind and shape the map was "
                             f"fitted on ({self.input_}=, {self.n_classes_} classes); got "
                             f"shape {np.shape(x.raw)}")
        return self._temperatures(x.S)


def _doc(fn: object) -> object:
    """Append the shared Parameters/Returns/Raises of ``fit`` (after a blank line)."""
    fn.__doc__ = (fn.__doc__ or "").rstrip() + "\n" + _FIT_DOC
    return fn


class VectorScaling(_LbfgsMap):
    """Vector scaling with per-class temperatures and no bias, ``softmax_k(s_k / T_k)``.

    The VS of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground
    Truth" (Section 6), fitted to any target by L-BFGS-B on ``w_k = 1 / T_k`` (the log loss
    is convex in w).

    Parameters
    ----------
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (``0 < eps < 0.5``).
    bounds : (float, float), default=(0.05, 20.0)
        The box ``(low, high)`` of every ``T_k``, ``0 < low < high``.
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.
    max_iter : int, default=2000
        L-BFGS-B iteration limit.

    Attributes
    ----------
    temperatures_ : ndarray of shape (n_classes,)
        The fitted T_k.
    n_classes_, binary_, input_, eps_, loss_ :
        As for :class:`TemperatureScaling`.
    objective_ : float
        Final mean loss.
    n_iter_ : int
        L-BFGS-B iterations of the best start.
    at_bound_ : bool
        Whether some T_k ended on the box.
    status_, message_ : str
        ``'ok'``, ``'boundary'``, ``'not_converged'`` or ``'not_identified'`` (a class
        whose scores are all 0: its temperature does not enter the map).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(4000, 3)) * 3
    >>> y = np.array([rng.choice(3, p=p) for p in np.exp(z / [1, 2, 3])
    ...               / np.exp(z / [1, 2, 3]).sum(1, keepdims=True)])
    >>> vs = nc.calibrators.VectorScaling().fit(logits=z, target=y)
    >>> np.round(vs.temperatures_, 1).tolist()
    [1.0, 2.0, 3.1]
    """

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (0.05, 20.0),
                 loss: str = "auto", max_iter: int = 2000) -> None:
        self.eps, self.bounds = eps, bounds
        self.loss = loss
        self.max_iter = max_iter

    def _eta(self, S: np.ndarray) -> np.ndarray:
        return S / self.temperatures_

    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> VectorScaling:
        """Fit the per-class temperatures to a target."""
        lo, hi = check_box(self.bounds, positive=True)
        x, T = self._prepare(probs, logits, target)
        K = self.n_classes_
        dead = [k for k in range(K) if np.all(x.S[:, k] == 0)]
        why = None if not dead else (f"the scores of class(es) {dead} are all 0, so their "
                                     "temperatures do not enter the map")
        starts = [np.full(K, c) for c in (1.0, 0.5, 2.0)]
        w = self._run("vector", x.S, T, starts, [(1.0 / hi, 1.0 / lo)] * K, why)
        self.temperatures_ = 1.0 / w
        return self


class PlattScaling(_LbfgsMap):
    """Platt scaling: ``sigmoid(u logit + v)`` (binary) or ``softmax_k(w_k s_k + b_k)``.

    Platt (1999). Binary 1-D scores fit a slope and an intercept on the log-odds (the box
    ``-10 <= u, v <= 10`` of "Noisy-Label Calibration with Multiple Unreliable Labels",
    Section 5 and Appendix E.2); (n, K) scores fit a weight and a bias per class, the
    Platt map of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous
    Ground Truth" (Section 6), which is their SoftPlatt when fitted to soft targets.

    Parameters
    ----------
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (binary: the log-odds
        ``log max(p, eps) - log max(1 - p, eps)``); ``0 < eps < 0.5``. Logits are never
        clipped.
    bounds : (float, float), default=(-10.0, 10.0)
        The box ``(low, high)`` shared by every weight and intercept, ``low < high``.
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.
    max_iter : int, default=2000
        L-BFGS-B iteration limit.

    Attributes
    ----------
    slope_, intercept_ : float or ndarray of shape (n_classes,)
        u and v (binary 1-D scores), or the weights w_k and the intercepts b_k (centred
        to sum 0: softmax ignores a common shift).
    n_classes_, binary_, input_, eps_, loss_, objective_, n_iter_, at_bound_ :
        As for :class:`VectorScaling`.
    status_, message_ : str
        ``'ok'``; ``'not_identified'`` (a constant score column; binary: all scores
        equal); ``'separation'`` (binary: the map separates a one-hot target, the loss has
        no minimum); ``'boundary'`` (a parameter on the box); ``'not_converged'``.

    Examples
    --------
    >>> import noisycal as nc
    >>> b = nc.simulate.binary_scores(20000, slope=0.7, intercept=0.2, seed=1)
    >>> cal = nc.calibrators.PlattScaling().fit(probs=b.p, target=b.y)
    >>> round(cal.slope_, 1), round(cal.intercept_, 1)
    (0.7, 0.2)
    """

    def __init__(self, *, eps: float = EPS, bounds: tuple[float, float] = (-10.0, 10.0),
                 loss: str = "auto", max_iter: int = 2000) -> None:
        self.eps = eps
        self.bounds = bounds
        self.loss = loss
        self.max_iter = max_iter

    def _eta(self, S: np.ndarray) -> np.ndarray:
        if self.binary_:
            s = S[:, 1] - S[:, 0]
            return np.column_stack([np.zeros_like(s), self.slope_ * s + self.intercept_])
        return S * self.slope_ + self.intercept_

    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> PlattScaling:
        """Fit the slopes and intercepts to a target."""
        lo, hi = check_box(self.bounds, positive=False)
        x, T = self._prepare(probs, logits, target)
        S, K = x.S, self.n_classes_
        if self.binary_:
            s = S[:, 1] - S[:, 0]
            why = None if np.ptp(s) > 0 else (
                f"all {s.size} score(s) are equal, so only u s + v is identified, not the "
                "slope u and intercept v separately")
            starts = [np.array([c, 0.0]) for c in (1.0, 0.5, 2.0)]
            u, v = self._run("platt_binary", S, T, starts, [(lo, hi)] * 2, why,
                             eta_of=lambda th: np.column_stack([0 * s, th[0] * s + th[1]]))
            self.slope_, self.intercept_ = float(u), float(v)
            return self
        flat = [k for k in range(K) if np.ptp(S[:, k]) == 0]
        why = None if not flat else (f"the scores of class(es) {flat} are constant, so their "
                                     "weights and intercepts are not identified separately")
        starts = [np.concatenate([np.full(K, c), np.zeros(K)]) for c in (1.0, 0.5, 2.0)]
        theta = self._run("platt", S, T, starts, [(lo, hi)] * (2 * K), why)
        self.slope_ = theta[:K]
        self.intercept_ = theta[K:] - theta[K:].mean()
        return self


class _AffineMap(_LbfgsMap):
    """``softmax(W s + b)`` with ODIR (shared by matrix and Dirichlet calibration)."""

    def __init__(self, *, eps: float = EPS, reg_lambda: float = 1e-3,
                 reg_mu: float | None = None, bounds: tuple[float, float] = (-100.0, 100.0),
                 loss: str = "auto", max_iter: int = 2000) -> None:
        self.eps = eps
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.bounds = bounds
        self.loss = loss
        self.max_iter = max_iter

    def _eta(self, S: np.ndarray) -> np.ndarray:
        return S @ self.coef_.T + self.intercept_

    def _fit_affine(self, probs: ArrayLike | None, logits: ArrayLike | None,
                    target: object) -> None:
        lam = check_real(self.reg_lambda, "reg_lambda", minimum=0.0)
        mu = lam if self.reg_mu is None else check_real(self.reg_mu, "reg_mu", minimum=0.0)
        lo, hi = check_box(self.bounds, positive=False)
        x, T = self._prepare(probs, logits, target)
        S, K = x.S, self.n_classes_
        # K (K + 1) parameters; L-BFGS-B keeps about 25 copies (10 history pairs and more)
        check_work_bytes(8.0 * 25 * K * (K + 1), "logits" if probs is None else "probs",
                         f"an affine map on {K} classes ({K * (K + 1)} parameters)")
        why = None if np.any(np.ptp(S, axis=0) > 0) else (
            "every item has the same scores, so only the intercepts are identified")
        starts = [np.concatenate([(c * np.eye(K)).ravel(), np.zeros(K)]) for c in (1.0, 0.5, 2.0)]
        theta = self._run("affine", S, T, starts, [(lo, hi)] * (K * K + K), why, lam, mu)
        self.coef_ = theta[: K * K].reshape(K, K)
        self.intercept_ = theta[K * K:]
        self.reg_lambda_, self.reg_mu_ = lam, mu


_AFFINE_PARAMS = """
    Parameters
    ----------
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (``0 < eps < 0.5``).
    reg_lambda : float, default=1e-3
        ODIR weight lambda of the off-diagonal entries of W (>= 0).
    reg_mu : float or None, default=None
        ODIR weight mu of the intercepts (>= 0); None uses ``reg_lambda``.
    bounds : (float, float), default=(-100.0, 100.0)
        The box ``(low, high)`` of every entry of W and b, ``low < high``.
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.
    max_iter : int, default=2000
        L-BFGS-B iteration limit.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_classes)
        W.
    intercept_ : ndarray of shape (n_classes,)
        b.
    reg_lambda_, reg_mu_ : float
        The ODIR weights the fit used.
    objective_ : float
        Final mean loss plus the ODIR penalty.
    n_classes_, binary_, input_, eps_, loss_, n_iter_, at_bound_ :
        As for :class:`VectorScaling`.
    status_, message_ : str
        ``'ok'``, ``'boundary'`` (an entry on the box, for example on scores that
        separate the target), ``'not_converged'`` or ``'not_identified'`` (all items have
        the same scores). Any status but 'ok' warns.
"""


class MatrixScaling(_AffineMap):
    __doc__ = """Matrix scaling ``softmax(W z + b)`` on the logits, with ODIR.

    Guo et al. (2017); the off-diagonal and intercept regulariser of Kull et al. (2019),
    "Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
    Dirichlet calibration", on the logits as Dirichlet-Hard and -Soft of Tao,
    Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth"
    (Section 6) use it. ``probs=`` enter as ``log(max(p, eps))``; a map fitted on
    ``logits=`` predicts only from ``logits=`` (and the reverse).
""" + _AFFINE_PARAMS + """
    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> z = np.array([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.3, 0.9], [1.0, 1.2, 0.1]])
    >>> ms = nc.calibrators.MatrixScaling(reg_lambda=1.0).fit(logits=z, target=[0, 1, 2, 0])
    >>> ms.coef_.shape, ms.predict_proba(logits=z).shape, ms.status_
    ((3, 3), (4, 3), 'ok')
"""

    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> MatrixScaling:
        """Fit W and b to a target."""
        self._fit_affine(probs, logits, target)
        return self


class DirichletCalibration(_AffineMap):
    __doc__ = """Dirichlet calibration ``softmax(W log p + b)``, with ODIR.

    Kull et al. (2019), "Beyond temperature scaling: Obtaining well-calibrated multiclass
    probabilities with Dirichlet calibration": the affine map acts on
    log-probabilities, ``log(max(p, eps))`` for ``probs=`` and ``log_softmax(logits)``
    for ``logits=`` (so either input may be used to predict). Fitted to soft targets it is
    the Dirichlet-Soft of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under
    Ambiguous Ground Truth" (Section 6), up to that paper's use of logits (see
    :class:`MatrixScaling`).
""" + _AFFINE_PARAMS + """
    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    >>> dc = nc.calibrators.DirichletCalibration(reg_lambda=1.0).fit(probs=p,
    ...                                                               target=[0, 1, 2, 1])
    >>> dc.predict_proba(probs=p).shape, dc.status_
    ((4, 3), 'ok')
"""

    _log_probs = True
    _shift_invariant = True

    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> DirichletCalibration:
        """Fit W and b to a target."""
        self._fit_affine(probs, logits, target)
        return self
