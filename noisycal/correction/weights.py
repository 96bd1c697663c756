r"""Aggregation weights of the corrected labels, and the channel checks they rest on.

The corrected target of :mod:`noisycal.correction` averages per-annotator corrected
labels with weights ``alpha`` on the simplex. The rules:

- ``'iv'`` (inverse variance). Two classes: Lemma C.6 of "Noisy-Label Calibration with
  Multiple Unreliable Labels" (Eq. C.28, C.29), :func:`iv_weights`. K > 2 classes: our
  generalisation, :func:`kclass_iv_weights`, from the per-annotator noise covariance of
  the corrected one-hot, :func:`noise_covariance` (derivation there). For K = 2 it gives
  the paper's weights exactly.
- ``'equal'``.
- ``'gap'`` / ``'squared_gap'``: alpha_j proportional to delta_j (or its square), with
  delta_j = b_j - a_j for two classes (the paper's comparator rules, Appendix F.4) and,
  for K > 2, delta_j = the smallest singular value of C_j (our generalisation: it is the
  distance of C_j from the singular matrices in spectral norm, and 1 / sigma_min is the
  spectral norm of C_j^{-1}, the largest amplification of an annotator's one-hot by the
  correction, as 1 / (b - a) is for two classes; sigma_min is not b - a for K = 2, so
  the binary rule keeps the paper's gap).

:func:`channel_rule_weights` is the one K-generic, jit-safe formula every caller uses
(:func:`noisycal.correction.corrected_labels`, the channel-refit bootstrap).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .._util.types import ArrayLike
from .._util.validation import check_array, check_choice

__all__ = ["WEIGHT_RULES", "GAP_THRESHOLD", "PREVALENCE_CLIP", "VARIANCE_FLOOR",
           "gap_invertible", "channels_invertible", "check_binary_channels",
           "check_prevalence", "check_class_prevalence", "iv_weights", "rule_weights",
           "channel_weights", "noise_covariance", "kclass_iv_weights",
           "channel_rule_weights"]

WEIGHT_RULES = ("iv", "equal", "gap", "squared_gap")
#: Channels with b_j - a_j (K > 2: the smallest singular value of C_j) <= this are
#: rejected (they cannot be inverted stably).
GAP_THRESHOLD = 1e-4
#: The plug-in prevalence of the IV weights is clipped to [1e-4, 1 - 1e-4].
PREVALENCE_CLIP = 1e-4
#: Per-annotator variances are floored at 1e-8 before inverting.
VARIANCE_FLOOR = 1e-8


def gap_invertible(a: Any, b: Any) -> Any:
    """Whether each two-class channel can be inverted: b_j - a_j > ``GAP_THRESHOLD``.

    Works on NumPy and JAX arrays (jit-safe).

    Parameters
    ----------
    a, b : array-like of shape (n_annotators,)
        False-positive rates P(A = 1 | Y = 0) and true-positive rates P(A = 1 | Y = 1).

    Returns
    -------
    bool array of shape (n_annotators,)
    """
    return b - a > GAP_THRESHOLD


def channels_invertible(confusion: Any, xp: Any = np) -> Any:
    """Whether each channel can be inverted, for any number of classes (jit-safe).

    Two classes: the oriented gap b_j - a_j > ``GAP_THRESHOLD`` (:func:`gap_invertible`);
    K > 2: the smallest singular value of C_j > ``GAP_THRESHOLD``.

    Parameters
    ----------
    confusion : array of shape (n_annotators, K, K)
        ``confusion[j, true, observed]``.
    xp : module, default=numpy
        ``numpy`` or ``jax.numpy``.

    Returns
    -------
    bool array of shape (n_annotators,)
    """
    if confusion.shape[-1] == 2:
        return gap_invertible(confusion[:, 0, 1], confusion[:, 1, 1])
    return xp.linalg.svd(confusion, compute_uv=False).min(axis=-1) > GAP_THRESHOLD


def check_binary_channels(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate two-class channel rates: same length, in [0, 1], gap b - a > 1e-4.

    Parameters
    ----------
    a, b : array-like of shape (n_annotators,)
        False-positive and true-positive rates.

    Returns
    -------
    a, b : ndarray
        As float64 arrays.
    """
    a, b = check_array(a, "a", ndim=1), check_array(b, "b", ndim=1)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.shape} and {b.shape}")
    if np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)):
        raise ValueError("channel rates a and b must lie in [0, 1]")
    ok = gap_invertible(a, b)
    if not np.all(ok):
        bad = np.flatnonzero(~ok).tolist()
        raise ValueError(f"annotator(s) {bad} have b - a <= {GAP_THRESHOLD:g}: their channel "
                         "cannot be inverted (exclude them with informative=, or check the "
                         "orientation)")
    return a, b


def check_prevalence(prevalence: object, name: str = "prevalence") -> float:
    """A prevalence P(Y = 1): a real number in [0, 1] (never parsed from a string).

    Parameters
    ----------
    prevalence : object
        The value to check.
    name : str, default='prevalence'
        The argument's name, for the error message.

    Returns
    -------
    float
    """
    if isinstance(prevalence, bool) or not isinstance(prevalence, numbers.Real):
        raise ValueError(f"{name} must be a number in [0, 1], got {prevalence!r}")
    value = float(prevalence)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must lie in [0, 1], got {prevalence!r}")
    return value


def check_class_prevalence(prevalence: object, n_classes: int,
                           name: str = "prevalence") -> float | np.ndarray:
    """The class prevalence for K classes: P(Y = 1) for two, a probability vector for K > 2.

    Parameters
    ----------
    prevalence : object
        Two classes: a number in [0, 1]. K > 2: array-like of shape (K,), non-negative,
        summing to 1 (within 1e-6).
    n_classes : int
        K.
    name : str, default='prevalence'

    Returns
    -------
    float or ndarray of shape (K,)
    """
    if n_classes == 2:
        return check_prevalence(prevalence, name)
    return _check_pi(prevalence, n_classes, name)


def iv_weights(a: ArrayLike, b: ArrayLike, prevalence: float, *,
               floor: float = VARIANCE_FLOOR) -> np.ndarray:
    r"""Inverse-variance weights of the two-class corrected labels.

    "Noisy-Label Calibration with Multiple Unreliable Labels", Lemma C.6:

    .. math:: \bar v_j = \frac{(1-\mu) a_j (1-a_j) + \mu b_j (1-b_j)}{(b_j - a_j)^2},\qquad
              \alpha_j = \bar v_j^{-1} / \textstyle\sum_k \bar v_k^{-1}

    Parameters
    ----------
    a, b : array-like of shape (n_annotators,)
        False-positive rates and true-positive rates (b_j - a_j > 1e-4).
    prevalence : float
        P(Y = 1) in [0, 1], clipped to [1e-4, 1 - 1e-4] (the paper's plug-in rule).
    floor : float, default=1e-8
        Variances are floored here before inverting.

    Returns
    -------
    ndarray of shape (n_annotators,)
        Weights on the simplex.

    See Also
    --------
    kclass_iv_weights : the K-class generalisation (equal to these for K = 2).
    """
    a, b = check_binary_channels(a, b)
    return rule_weights("iv", a, b, check_prevalence(prevalence), floor=floor)


def rule_weights(rule: str, a: Any, b: Any, prevalence: Any = None, *, mask: Any = None,
                 floor: float = VARIANCE_FLOOR, xp: Any = np) -> Any:
    """The two-class weight formulas without validation, on NumPy or JAX (jit-safe) arrays.

    Parameters
    ----------
    rule : {'iv', 'equal', 'gap', 'squared_gap'}
        'iv': inverse variances with the prevalence clipped to [1e-4, 1 - 1e-4] and
        variances floored at ``floor``; 'equal'; 'gap'; 'squared_gap'.
    a, b : array of shape (n_annotators,)
        False-positive and true-positive rates.
    prevalence : float or array, optional
        P(Y = 1), for 'iv'.
    mask : array of bool, optional
        Annotators outside the mask get weight 0.
    floor : float, default=1e-8
    xp : module, default=numpy
        ``numpy`` or ``jax.numpy``.

    Returns
    -------
    array of shape (n_annotators,)
        Raw weights normalised to sum to 1.
    """
    gap = b - a
    if rule == "iv":
        mu = xp.clip(prevalence, PREVALENCE_CLIP, 1.0 - PREVALENCE_CLIP)
        v = ((1.0 - mu) * a * (1.0 - a) + mu * b * (1.0 - b)) / gap**2
        raw = 1.0 / xp.maximum(v, floor)
    else:
        raw = {"equal": xp.ones_like(a), "gap": gap, "squared_gap": gap**2}[rule]
    if mask is not None:
        raw = xp.where(mask, raw, 0.0)
    return raw / raw.sum()


def channel_weights(rule: str, a: ArrayLike, b: ArrayLike, prevalence: float | None = None
                    ) -> np.ndarray:
    """Two-class aggregation weights on the simplex by rule.

    Parameters
    ----------
    rule : {'iv', 'equal', 'gap', 'squared_gap'}
    a, b : array-like of shape (n_annotators,)
        False-positive and true-positive rates.
    prevalence : float, optional
        P(Y = 1), required by 'iv'.

    Returns
    -------
    ndarray of shape (n_annotators,)
    """
    check_choice(rule, "weights", WEIGHT_RULES)
    a, b = check_binary_channels(a, b)
    if rule == "iv":
        if prevalence is None:
            raise ValueError("weights='iv' needs the prevalence P(Y = 1)")
        prevalence = check_prevalence(prevalence)
    return rule_weights(rule, a, b, prevalence)


def _check_channels(confusion: ArrayLike) -> np.ndarray:
    C = check_array(confusion, "confusion", ndim=3)
    if C.shape[1] != C.shape[2] or C.shape[1] < 2:
        raise ValueError(f"confusion must have shape (n_annotators, K, K) with K >= 2, got "
                         f"{C.shape}")
    if np.any(C < 0) or np.any(np.abs(C.sum(2) - 1) > 1e-6):
        raise ValueError("confusion rows must be probability distributions")
    ok = channels_invertible(C)
    if not np.all(ok):
        raise ValueError(f"confusion: annotator(s) {np.flatnonzero(~ok).tolist()} have a "
                         "(nearly) singular channel that cannot be inverted")
    return C


def _check_pi(prevalence: object, K: int, name: str = "prevalence") -> np.ndarray:
    """A length-K probability vector of class prevalences (for any K >= 2)."""
    if isinstance(prevalence, numbers.Real | str | bool):
        raise ValueError(f"{name} for K = {K} classes must be a length-{K} probability "
                         f"vector (P(Y = k) for each class), got {prevalence!r}")
    pi = check_array(prevalence, name, ndim=1)
    if pi.shape != (K,) or np.any(pi < 0) or abs(pi.sum() - 1.0) > 1e-6:
        raise ValueError(f"{name} must be a length-{K} probability vector "
                         f"(non-negative, summing to 1), got {pi!r}")
    return pi


def _clipped(prevalence: Any, xp: Any) -> Any:
    pi = xp.clip(prevalence, PREVALENCE_CLIP, 1.0 - PREVALENCE_CLIP)
    return pi / pi.sum()


def _covariances(confusion: Any, pi: Any, xp: Any) -> Any:
    inv = xp.linalg.inv(confusion)                      # M_j = C_j^{-1}, (J, K, K)
    q = xp.einsum("k,jkl->jl", pi, confusion)           # q_j = C_j^T pi, label distribution
    return xp.einsum("jlk,jl,jlm->jkm", inv, q, inv) - xp.diag(pi)[None]


def noise_covariance(confusion: ArrayLike, prevalence: ArrayLike) -> np.ndarray:
    r"""Noise covariance of each annotator's corrected one-hot around the true class.

    Our K-class generalisation of the variance in Lemma C.6 of "Noisy-Label Calibration
    with Multiple Unreliable Labels" (Eq. C.28). Annotator j with channel
    :math:`C_j` (``confusion[j, true, observed]``) and :math:`M_j = C_j^{-1}` reports
    label :math:`A_j`; its corrected one-hot is the row :math:`u_j = M_j^\top e_{A_j}`
    (the weighted average of these is the corrected target
    :math:`T = \sum_j \alpha_j u_j`). Given :math:`Y = y`, :math:`A_j \sim C_j[y, :]`, so
    :math:`E[u_j \mid Y = y] = M_j^\top C_j^\top e_y = e_y` and

    .. math:: \mathrm{Cov}(u_j \mid Y = y) = M_j^\top \mathrm{diag}(C_j[y, :])\, M_j
              - e_y e_y^\top .

    Averaged over :math:`Y \sim \pi`, with :math:`q_j = C_j^\top \pi` the distribution of
    annotator j's labels,

    .. math:: \bar V_j = E[(u_j - e_Y)(u_j - e_Y)^\top]
              = M_j^\top \mathrm{diag}(q_j)\, M_j - \mathrm{diag}(\pi).

    For two classes :math:`u_j = (1 - U_j, U_j)` and
    :math:`\bar V_j = \bar v_j \begin{pmatrix}1 & -1\\ -1 & 1\end{pmatrix}` with the
    paper's :math:`\bar v_j`.

    Parameters
    ----------
    confusion : array-like of shape (n_annotators, K, K)
        Invertible channels, rows on the simplex.
    prevalence : array-like of shape (K,)
        Class probabilities :math:`\pi`, non-negative and summing to 1.

    Returns
    -------
    ndarray of shape (n_annotators, K, K)
        :math:`\bar V_j`, symmetric positive semi-definite.

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[[0.9, 0.1], [0.2, 0.8]]])   # a = 0.1, b = 0.8
    >>> V = noise_covariance(C, [0.5, 0.5])
    >>> round(V[0, 1, 1], 12)   # ((1 - mu) a (1 - a) + mu b (1 - b)) / (b - a)^2
    0.255102040816
    """
    C = _check_channels(confusion)
    return _covariances(C, _check_pi(prevalence, C.shape[1]), np)


def channel_rule_weights(rule: str, confusion: Any, prevalence: Any = None, *,
                         mask: Any = None, floor: float = VARIANCE_FLOOR,
                         xp: Any = np) -> Any:
    r"""The weight rules for any number of classes, without validation (jit-safe).

    For two classes this is :func:`rule_weights` on ``a = confusion[:, 0, 1]``,
    ``b = confusion[:, 1, 1]`` and ``mu = prevalence[1]``. For K > 2: 'iv' is
    :math:`\alpha_j \propto 1 / \max(\mathrm{tr}\,\bar V_j, \text{floor})`
    (:func:`noise_covariance`, with the prevalence clipped to [1e-4, 1 - 1e-4] and
    renormalised); 'gap' / 'squared_gap' use the smallest singular value of C_j.

    Parameters
    ----------
    rule : {'iv', 'equal', 'gap', 'squared_gap'}
    confusion : array of shape (n_annotators, K, K)
    prevalence : array of shape (K,), optional
        Class probabilities, for 'iv'.
    mask : array of bool, shape (n_annotators,), optional
        Annotators outside the mask get weight 0 (their channels may be singular).
    floor : float, default=1e-8
    xp : module, default=numpy
        ``numpy`` or ``jax.numpy``.

    Returns
    -------
    array of shape (n_annotators,)
        Weights on the simplex.
    """
    K = confusion.shape[-1]
    if K == 2:
        return rule_weights(rule, confusion[:, 0, 1], confusion[:, 1, 1],
                            None if prevalence is None else prevalence[1], mask=mask,
                            floor=floor, xp=xp)
    if mask is not None:  # singular channels outside the mask must not poison the rest
        confusion = xp.where(mask[:, None, None], confusion, xp.eye(K))
    if rule == "iv":
        cov = _covariances(confusion, _clipped(prevalence, xp), xp)
        raw = 1.0 / xp.maximum(xp.trace(cov, axis1=1, axis2=2), floor)
    elif rule == "equal":
        raw = xp.ones(confusion.shape[0])
    else:
        sv = xp.linalg.svd(confusion, compute_uv=False).min(axis=-1)
        raw = sv if rule == "gap" else sv**2
    if mask is not None:
        raw = xp.where(mask, raw, 0.0)
    return raw / raw.sum()


def kclass_iv_weights(confusion: ArrayLike, prevalence: ArrayLike, *,
                      floor: float = VARIANCE_FLOOR) -> np.ndarray:
    r"""Inverse-variance weights of the K-class corrected target (our generalisation).

    The generalisation of the inverse-variance weights of "Noisy-Label Calibration with
    Multiple Unreliable Labels" (Lemma C.6, Eq. C.29) to K classes; the paper states
    them for two. With every item rated by every annotator and the annotators
    conditionally independent given the true class, the noise of the corrected target
    :math:`T = \sum_j \alpha_j u_j` has second moment

    .. math:: E[(T - e_Y)(T - e_Y)^\top] = \sum_j \alpha_j^2\, \bar V_j

    (:func:`noise_covariance`; the cross terms vanish because
    :math:`E[u_j - e_Y \mid Y] = 0`). These weights minimise its trace,
    :math:`E\lVert T - e_Y\rVert^2 = \sum_j \alpha_j^2 \mathrm{tr}\,\bar V_j`, over the
    simplex (Lagrange / Cauchy–Schwarz, as in Eq. C.29):

    .. math:: \alpha_j = \frac{1 / \mathrm{tr}\,\bar V_j}{\sum_k 1 / \mathrm{tr}\,\bar V_k},
              \qquad \mathrm{tr}\,\bar V_j = \sum_l q_{jl}\,\lVert M_j^\top e_l\rVert^2 - 1 .

    The trace is the sum of the K column variances, so (as in Proposition C.1 of that
    paper, for known channels and fixed bins) these weights minimise the summed variance
    of the classwise binned moments; for the top-label moments the relevant sum weights
    the diagonal of :math:`\bar V_j` by the predicted classes, which the target does
    not know. For two classes :math:`\mathrm{tr}\,\bar V_j = 2 \bar v_j` and the weights
    equal :func:`iv_weights`. The prevalence is clipped to [1e-4, 1 - 1e-4] and
    renormalised, the traces floored at ``floor``.

    Parameters
    ----------
    confusion : array-like of shape (n_annotators, K, K)
        Invertible channels ``confusion[j, true, observed]``.
    prevalence : array-like of shape (K,)
        Class probabilities.
    floor : float, default=1e-8

    Returns
    -------
    ndarray of shape (n_annotators,)
        Weights on the simplex.

    Examples
    --------
    >>> import numpy as np
    >>> C = np.stack([0.8 * np.eye(3) + 0.2 / 3, 0.5 * np.eye(3) + 0.5 / 3])
    >>> kclass_iv_weights(C, np.ones(3) / 3).round(4)
    array([0.8421, 0.1579])
    """
    C = _check_channels(confusion)
    cov = _covariances(C, _clipped(_check_pi(prevalence, C.shape[1]), np), np)
    raw = 1.0 / np.maximum(np.trace(cov, axis1=1, axis2=2), floor)
    return raw / raw.sum()
