r"""The numerics of the smooth ECE (:mod:`noisycal.metrics.smooth`).

How it is computed (exactly, not by binning the items):

- The reflected kernel is the Neumann heat kernel of [0, 1], so
  :math:`K_\sigma(u, f) = 1 + 2\sum_{j \ge 1} e^{-(j\pi\sigma)^2/2}\cos(j\pi u)\cos(j\pi f)`
  (Poisson summation of the image sum) and :math:`\hat r_\sigma(u) = \sum_j \lambda_j a_j
  \cos(j\pi u)` with the item averages :math:`a_j = \frac1n\sum_i d_i\cos(j\pi f_i)`.
  Terms up to :math:`J \ge 3/\sigma` are kept (rounded up to a multiple of 32, so that
  nearby bandwidths share compiled bootstrap kernels): the first dropped factor is below
  :math:`e^{-(3\pi)^2/2} \approx 5\cdot 10^{-20}`.
- :math:`\hat r_\sigma` is evaluated on the uniform grid :math:`u_k = k/(m-1)` (a DCT-I,
  done with a real FFT) and integrated with the trapezoid rule. The default grid has
  :math:`m - 1 = 2000 \cdot 2^k` intervals, k the least integer >= 0 giving at least
  100 intervals per bandwidth: the error comes only from the kinks of :math:`|\hat r|` at
  its sign changes and measured below :math:`10^{-6}` relative against a 400001-point grid
  (bandwidths 0.01 to 0.1, n 300 to 20000); ``n_grid`` sets m.
- :math:`\sigma^*`: the bracket :math:`[|\bar d|, \overline{|d|}]` always holds it
  (:math:`\mathrm{smECE}_\sigma` lies between these); sigma is halved from the upper end
  until :math:`\mathrm{smECE}_\sigma \ge \sigma`, then Brent's method finds the root in
  the last halving interval (``xtol`` 1e-14, grid and terms held fixed during the search),
  and the value is recomputed on the grid of :math:`\sigma^*`. Classwise, one bandwidth
  serves all K classes: the fixed point of the class average.

relplot (apple/ml-calibration) computes the same quantity with a 1001-point linearly
binned kernel truncated at +-0.5, a 200-point Riemann sum and a 10-step bisection for the
bandwidth; ``tests/metrics/test_smooth_ece.py`` compares the two.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from ..._util.types import ArrayLike
from ..._util.validation import check_work_bytes

__all__ = ["grid_size", "n_terms", "trapezoid_weights", "MIN_GRID", "GRID_PER_BANDWIDTH",
           "TERMS_PER_INV_BANDWIDTH", "MIN_BANDWIDTH", "check_grid_memory"]

#: Least number of grid intervals (the grid has ``MIN_GRID + 1`` points).
MIN_GRID = 2000
#: Grid intervals per unit of 1 / bandwidth (100 grid steps per bandwidth).
GRID_PER_BANDWIDTH = 100
#: Cosine terms per unit of 1 / bandwidth (the dropped factors are below 5e-20).
TERMS_PER_INV_BANDWIDTH = 3.0
#: The fixed-point search stops here: a smaller sigma* is reported, not resolved.
MIN_BANDWIDTH = 1e-4
#: The number of cosine terms is a multiple of this (fewer distinct compiled shapes).
_TERM_BLOCK = 32

# ----------------------------------------------------------------------------- numerics


def grid_size(bandwidth: float, n_grid: int | None = None) -> int:
    """Number of grid points m: ``n_grid`` if given, else ``2000 * 2**k + 1``.

    k is the least integer >= 0 with at least 100 grid intervals per bandwidth sigma.

    Parameters
    ----------
    bandwidth : float
        sigma > 0.
    n_grid : int, optional
        An explicit grid size.

    Returns
    -------
    int
    """
    if n_grid is not None:
        return int(n_grid)
    need = GRID_PER_BANDWIDTH / bandwidth
    k = max(0, int(np.ceil(np.log2(need / MIN_GRID)))) if need > MIN_GRID else 0
    return MIN_GRID * 2**k + 1


def check_grid_memory(n_groups: int, bandwidth: float | None, n_grid: int | None,
                      name: str) -> None:
    """Refuse a grid whose curves would take more than ``MAX_WORK_BYTES`` (4 GiB).

    The estimate is the smallest the computation holds: two float64 curves of every group
    on the grid and two of its cosine coefficients, ``8 G (2 m + 2 (J + 1))`` bytes, with m
    from :func:`grid_size` and J from :func:`n_terms`, computed in floating point so that a
    tiny bandwidth gives an infinite size instead of an overflow.

    Parameters
    ----------
    n_groups : int
        G: 1, or the number of classes of a classwise smooth ECE.
    bandwidth : float or None
        sigma (None: only the grid ``n_grid`` is checked).
    n_grid : int or None
    name : str
        The argument named in the error.
    """
    with np.errstate(over="ignore", divide="ignore"):
        m = float(n_grid) if n_grid is not None else (
            max(float(MIN_GRID), GRID_PER_BANDWIDTH / bandwidth) + 1.0)
        J = 0.0 if bandwidth is None else TERMS_PER_INV_BANDWIDTH / bandwidth + _TERM_BLOCK
        size = 8.0 * n_groups * (2.0 * m + 2.0 * (J + 1.0))
    what = (f"the smoothed curves of {n_groups} group(s) on a grid of {m:.4g} points"
            + (f" with {J:.4g} cosine terms (bandwidth {bandwidth:g})" if J else ""))
    check_work_bytes(size, name, what)


def n_terms(bandwidth: float) -> int:
    """Highest cosine frequency J kept for bandwidth sigma: 3 / sigma, rounded up to 32k."""
    return int(_TERM_BLOCK * max(1, np.ceil(TERMS_PER_INV_BANDWIDTH / bandwidth / _TERM_BLOCK)))


def trapezoid_weights(m: int) -> np.ndarray:
    """Trapezoid weights (m,) of the grid ``k / (m - 1)``, k = 0..m-1; they sum to 1."""
    w = np.full(m, 1.0 / (m - 1))
    w[[0, -1]] *= 0.5
    return w


def _damping(bandwidth: float, J: int) -> np.ndarray:
    """lambda_j = 2 exp(-(j pi sigma)^2 / 2), lambda_0 = 1: the kernel's cosine weights."""
    j = np.arange(J + 1)
    lam = 2.0 * np.exp(-0.5 * (j * np.pi * bandwidth) ** 2)
    lam[0] = 1.0
    return lam


def _on_grid(c: ArrayLike, m: int, xp: object = np) -> ArrayLike:
    """``sum_j c[..., j] cos(j pi k / (m - 1))`` for k = 0..m-1 (DCT-I by a real FFT).

    Frequencies at or above 2(m - 1) are folded onto their aliases first (the grid cannot
    tell them apart), so any number of terms is exact on the grid."""
    N = 2 * (m - 1)
    J1 = c.shape[-1]
    c = xp.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, (-J1) % N)])
    c = c.reshape(c.shape[:-1] + (-1, N)).sum(axis=-2)
    return xp.real(xp.fft.rfft(c, axis=-1))


def _item_cosines(conf: np.ndarray, J: int) -> np.ndarray:
    """cos(j pi f_ig) as an array (G, n, J + 1)."""
    return np.cos(np.pi * conf.T[:, :, None] * np.arange(J + 1))


def _coefficients(conf: np.ndarray, resid: np.ndarray, J: int) -> np.ndarray:
    """a_gj = mean_i d_ig cos(j pi f_ig), shape (G, J + 1), in item chunks of bounded size."""
    G, n = conf.shape[1], conf.shape[0]
    out = np.zeros((G, J + 1))
    step = max(1, 2**22 // (G * (J + 1)))
    for s in range(0, n, step):
        cos = _item_cosines(conf[s:s + step], J)
        out += np.einsum("gij,ig->gj", cos, resid[s:s + step])
    return out / n


class _Curves:
    """The smoothed residual of every group at any bandwidth, from cached coefficients."""

    def __init__(self, conf: np.ndarray, resid: np.ndarray) -> None:
        self.conf, self.resid = conf, resid
        self.J = 0
        self.a = np.zeros((conf.shape[1], 1))

    def coefficients(self, J: int) -> np.ndarray:
        if J > self.J:
            self.J = max(J, 2 * self.J)
            self.a = _coefficients(self.conf, self.resid, self.J)
        return self.a[:, :J + 1]

    def residual(self, bandwidth: float, m: int, J: int | None = None) -> np.ndarray:
        """r(u_k) of every group, shape (G, m)."""
        check_grid_memory(self.conf.shape[1], bandwidth, m, "bandwidth")
        J = n_terms(bandwidth) if J is None else J
        return _on_grid(self.coefficients(J) * _damping(bandwidth, J), m)

    def value(self, bandwidth: float, m: int, J: int | None = None) -> tuple[float, np.ndarray]:
        per_group = np.abs(self.residual(bandwidth, m, J)) @ trapezoid_weights(m)
        return float(np.mean(per_group)), per_group


def _fixed_point(curves: _Curves, upper: float, n_grid: int | None
                 ) -> tuple[float, str, str]:
    """sigma* with smECE_sigma* = sigma*; ``(sigma, status, message)``."""
    def gap(s: float, m: int, J: int | None = None) -> float:
        return s - curves.value(s, m, J)[0]

    if gap(upper, grid_size(upper, n_grid)) <= 0.0:
        return upper, "ok", ""  # residuals of one sign: smECE_sigma = |mean d| for all sigma
    lo = upper
    while True:
        lo, hi = lo / 2.0, lo
        if lo < MIN_BANDWIDTH:
            return MIN_BANDWIDTH, "bandwidth_floor", (
                f"the fixed-point bandwidth lies below {MIN_BANDWIDTH:g} (smECE_sigma < sigma "
                f"at sigma = {MIN_BANDWIDTH:g}); the value is smECE at that bandwidth, which "
                f"bounds the fixed-point smooth ECE from below (and {MIN_BANDWIDTH:g} from "
                "above); pass bandwidth= to choose one")
        if gap(lo, grid_size(lo, n_grid)) <= 0.0:
            break
    m, J = grid_size(lo, n_grid), n_terms(lo)
    if gap(lo, m, J) > 0.0 or gap(hi, m, J) <= 0.0:  # the end's sign flipped with the grid
        return (lo if gap(lo, m, J) > 0.0 else hi), "ok", ""
    root = brentq(gap, lo, hi, args=(m, J), xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return float(root), "ok", ""
