r"""The inverted interval of a binned ECE from per-bin statistics streamed over row chunks.

The per-bin statistics are sufficient statistics, read over row chunks of the
predictions with no item table.

The inverted interval (:func:`noisycal.intervals.inversion.invert_norm`) of a binned ECE
with its bins held fixed needs, per bin j = (group g, bin b), only sums over the items:
the count, the sums of the confidence and the target (the point estimate), the sum of
the gaps :math:`d_{ig}` = target minus confidence (the vector of means
:math:`\hat m`), the cross sums :math:`\sum_i d_{ig} d_{ih}` of every pair of bins (the
covariance of :math:`\hat m`), the sums of :math:`c(1 - c)` (the variance floor under
calibration) and of :math:`d^2` (the per-bin bands). :class:`StreamedForm` accumulates
them one chunk of rows at a time, reading float32 or float64 probabilities in their
dtype and hard labels as class codes, and keeps only the bin index of every item and
group (one byte each for at most 256 bins). The consistency-resampling zero test
(Bröcker & Smith 2007, "Increasing the reliability of reliability diagrams") then
redraws the labels chunk by chunk from the same random stream as
:func:`~noisycal.metrics.binned.form.consistency_null`, so the interval equals the one
computed from the item table (:mod:`noisycal.metrics.binned.form`) up to the order of
floating-point summation. :class:`~noisycal.metrics.binned.form.TableForm` gives the
same interface on an item table.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_numpy_rng
from ..._util.types import Seed
from ..._util.validation import check_choice
from ...intervals.inversion import norm_of_means
from .bins import (
    Binned,
    _chunk_scores,
    quantile_inner_edges,
    uniform_edges,
)
from .form import floor_variance, gap_se_from_sums, linear_form_from_sums

__all__ = ["StreamedForm", "CHUNK_ROWS"]

#: Rows per chunk of the streamed passes (bounds every temporary).
CHUNK_ROWS = 2**14

#: Elements of simulated uniforms one block of consistency replicates spans (the blocks
#: of :func:`~noisycal.metrics.binned.form.consistency_null`, so the same replicates).
_NULL_BLOCK = 2**24

#: Uniforms drawn at once when all rows fit one chunk (several replicates per draw).
_VEC_ELEMENTS = 2**18


def _bin_dtype(n_bins: int) -> type:
    return np.uint8 if n_bins <= 256 else np.uint16 if n_bins <= 65536 else np.int32


class StreamedForm:
    """Per-bin sufficient statistics of a binned ECE, accumulated over row chunks.

    Parameters
    ----------
    P : ndarray of shape (n, K), float32 or float64
    labels : int ndarray of shape (n,) or None
        Class codes (the target is their one-hot), or None when ``T`` is given.
    T : ndarray of shape (n, K) or None
    kind : {'top_label', 'classwise', 'positive_class'}
    n_bins : int
    strategy : {'uniform', 'quantile'}
        Equal-width bins, or equal-mass bins from each group's sorted confidences (one
        float64 column of n at a time).
    with_sq : bool, default=True
        Also sum the squared targets (the debiased L2 error needs them).

    Attributes
    ----------
    sums : ndarray of shape (G, n_bins, C)
        What :func:`~noisycal.metrics.binned.bins.bin_sums` gives on the item table.
    binned : Binned
        The edges, with no items (``data`` of shape (G, 0, C)).
    """

    def __init__(self, P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
                 kind: str, n_bins: int, strategy: str, *, with_sq: bool = True) -> None:
        n, K = P.shape
        G = K if kind == "classwise" else 1
        B, J, C = n_bins, G * n_bins, 4 if with_sq else 3
        self._P, self._labels, self._T, self._kind = P, labels, T, kind
        self.n, self.G, self.n_bins = n, G, n_bins
        edges = self._edges(strategy)
        self.bins = np.empty((G, n), dtype=_bin_dtype(n_bins))
        # one group: its confidences (8 bytes an item) serve every null replicate
        self._conf = np.empty(n) if G == 1 else None
        self._kept_order: tuple = (None, None)
        sums = np.zeros((G, B, C))
        self._dsum, self._d2sum, self._calvar = np.zeros(J), np.zeros(J), np.zeros(J)
        S = np.zeros((J, J))
        one_hot = True
        offset = (np.arange(G) * B)[:, None]
        for s, e in self._chunks():
            conf, tgt = self._scores(s, e)
            b = np.stack([np.searchsorted(edges[g, 1:-1], conf[g], side="right")
                          for g in range(G)])
            self.bins[:, s:e] = b
            if G == 1:
                self._conf[s:e] = conf[0]
            key = (b + offset).ravel()
            cols = [None, conf, tgt] + ([tgt**2] if with_sq else [])
            for c, x in enumerate(cols):
                w = None if x is None else x.ravel()
                sums[:, :, c] += np.bincount(key, weights=w, minlength=J).reshape(G, B)
            d = tgt - conf
            self._dsum += np.bincount(key, weights=d.ravel(), minlength=J)
            self._d2sum += np.bincount(key, weights=(d * d).ravel(), minlength=J)
            self._calvar += np.bincount(key, weights=(conf * (1.0 - conf)).ravel(),
                                        minlength=J)
            b64 = b.astype(np.int64)
            for g in range(G):
                for h in range(g, G):
                    S[g * B:(g + 1) * B, h * B:(h + 1) * B] += np.bincount(
                        b64[g] * B + b64[h], weights=d[g] * d[h], minlength=B * B
                    ).reshape(B, B)
            one_hot = one_hot and self._chunk_one_hot(conf, tgt)
        for g in range(G):  # the lower blocks mirror the upper ones
            for h in range(g + 1, G):
                S[h * B:(h + 1) * B, g * B:(g + 1) * B] = S[g * B:(g + 1) * B,
                                                           h * B:(h + 1) * B].T
        self._S, self._one_hot, self.sums = S, bool(one_hot), sums
        self.binned = Binned(np.empty((G, 0, C)), np.empty((G, 0), np.int32), edges,
                             n_bins, 1)

    # ------------------------------------------------------------------ passes
    def _chunks(self) -> list[tuple[int, int]]:
        return [(s, min(self.n, s + CHUNK_ROWS)) for s in range(0, self.n, CHUNK_ROWS)]

    def _scores(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
        return _chunk_scores(self._P[s:e], None if self._labels is None else
                             self._labels[s:e], None if self._T is None else self._T[s:e],
                             self._kind)

    def _edges(self, strategy: str) -> np.ndarray:
        G, n, B = self.G, self.n, self.n_bins
        if strategy == "uniform":
            return np.tile(uniform_edges(B), (G, 1))
        edges = np.empty((G, B + 1))
        for g in range(G):  # one float64 column of n at a time
            if self._kind == "classwise":
                col = self._P[:, g].astype(np.float64)
            else:
                col = np.empty(n)
                for s, e in self._chunks():
                    col[s:e] = self._scores(s, e)[0][g]
            col.sort()
            with jax.enable_x64(True):
                inner = quantile_inner_edges(jnp.asarray(col), jnp.ones(n), B)
                edges[g] = np.concatenate([[0.0], np.asarray(inner), [1.0]])
            del col
        return edges

    def _chunk_one_hot(self, conf: np.ndarray, tgt: np.ndarray) -> bool:
        """:func:`~noisycal.metrics.binned.form.one_hot_target` on one chunk of items."""
        if not np.all((tgt == 0.0) | (tgt == 1.0)):
            return False
        if self.G == 1:
            return True
        # C-ordered copies: the sums over groups run in the item table's order
        return bool(np.all(np.ascontiguousarray(tgt).sum(axis=0) == 1.0)
                    and np.allclose(np.ascontiguousarray(conf).sum(axis=0), 1.0,
                                    atol=1e-9))

    # ------------------------------------------------------------------ the form
    def one_hot(self) -> bool:
        """:func:`~noisycal.metrics.binned.form.one_hot_target` of the sample."""
        return self._one_hot

    def linear_form(self, norm: str, codes: np.ndarray | None = None,
                    n_clusters: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, cov, weights)`` as :func:`~noisycal.metrics.binned.form.binned_linear_form`.

        Parameters
        ----------
        norm : {'l1', 'l2'}
        codes : None
            No clusters here (else ValueError).
        n_clusters : int, optional
            Unused.

        Returns
        -------
        mean, cov, weights
        """
        if codes is not None:
            raise ValueError("cluster: the streamed form has no clusters (items only)")
        return linear_form_from_sums(self._dsum, self._S, self.sums[:, :, 0].ravel(),
                                     self.n, self.G, norm)

    def floored_cov(self, cov: np.ndarray, variance_floor: str,
                    codes: np.ndarray | None = None) -> np.ndarray:
        """As :func:`~noisycal.metrics.binned.form.floored_cov` (``cov`` itself when no
        floor applies).

        Parameters
        ----------
        cov : ndarray of shape (G * n_bins, G * n_bins)
        variance_floor : {'none', 'calibrated'}
        codes : ndarray, optional

        Returns
        -------
        ndarray
        """
        check_choice(variance_floor, "variance_floor", ("none", "calibrated"))
        if variance_floor == "none" or codes is not None or not self._one_hot:
            return cov
        return floor_variance(cov, self._calvar / self.n ** 2)

    def gap_se(self) -> np.ndarray:
        """As :func:`~noisycal.metrics.binned.form.bin_gap_se`, shape (G, n_bins)."""
        shape = (self.G, self.n_bins)
        return gap_se_from_sums(self.sums[:, :, 0], self._dsum.reshape(shape),
                                self._d2sum.reshape(shape))

    def consistency_null(self, weights: np.ndarray, norm: str, n_sim: int,
                         seed: Seed) -> np.ndarray:
        """:func:`~noisycal.metrics.binned.form.consistency_null`, drawn chunk by chunk.

        The uniforms come from the same generator in the same order (replicate by
        replicate, items in order), so the replicates are the same; each replicate
        redraws the labels over row chunks and counts the hits per bin.

        Parameters
        ----------
        weights : ndarray of shape (G * n_bins,)
        norm : {'l1', 'l2'}
        n_sim : int
        seed : int or jax key

        Returns
        -------
        ndarray of shape (n_sim,)
        """
        rng = as_numpy_rng(seed)
        n, J = self.n, self.G * self.n_bins
        conf_sum = self.sums[:, :, 1].ravel()
        out = np.empty(n_sim)
        step = max(1, _NULL_BLOCK // n)
        for start in range(0, n_sim, step):
            r = min(step, n_sim - start)
            if self.G == 1 and n > CHUNK_ROWS:  # one replicate's n uniforms at a time
                # (the same stream as drawn chunk by chunk; 9 bytes an item)
                b, counts = self.bins[0], np.empty((r, J), dtype=np.int64)
                for j in range(r):
                    counts[j] = np.bincount(b[rng.random(n) < self._conf], minlength=J)
            elif n <= CHUNK_ROWS:  # one chunk: several replicates at once
                rv = max(1, _VEC_ELEMENTS // n)
                counts = np.concatenate([self._counts(rng.random((min(rv, r - j), n)), 0, n)
                                         for j in range(0, r, rv)])
            else:  # replicate by replicate, chunk by chunk
                counts = np.zeros((r, J), dtype=np.int64)
                for j in range(r):
                    for s, e in self._chunks():
                        counts[j] += self._counts(rng.random((1, e - s)), s, e)[0]
            m = (counts - conf_sum[None, :]) / n
            out[start:start + r] = norm_of_means(m, weights, norm)
        return out

    def _by_bin(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
        """Rows s:e of one group sorted by bin: (order, their confidences in that order,
        where each non-empty bin starts, those bins); kept for the next call with the same
        rows."""
        if self._kept_order[0] != (s, e):
            b = self.bins[0, s:e]
            order = np.argsort(b, kind="stable")
            filled = np.flatnonzero(np.bincount(b, minlength=self.n_bins))
            starts = np.searchsorted(b[order], filled)
            self._kept_order = ((s, e), (order, self._conf[s:e][order], starts, filled))
        return self._kept_order[1]

    def _counts(self, u: np.ndarray, s: int, e: int) -> np.ndarray:
        """Hits per bin, (r, J), of labels redrawn from uniforms u (r, e - s) of rows s:e."""
        r, m = u.shape
        G, B = self.G, self.n_bins
        J = G * B
        if G == 1:  # the hits' bins, counted without an (r, m) table of cells
            b = self.bins[0, s:e]
            if r == 1:
                return np.bincount(b[u[0] < self._conf[s:e]], minlength=B)[None, :]
            # the hits with the rows sorted by bin, summed over each bin's run of columns
            # (no BLAS: a product with the bins' indicator matrix was faster on an idle
            # machine and slower on a busy one); 500 x 2,000 uniforms, 15 bins: 8.8 ms,
            # against 15.8 ms for the hits' (row, bin) pairs counted by bincount
            order, conf, starts, filled = self._by_bin(s, e)
            counts = np.zeros((r, J), dtype=np.int64)
            counts[:, filled] = np.add.reduceat(u[:, order] < conf[None, :], starts, axis=1,
                                                dtype=np.int64)
            return counts
        # the label: how many cumulative confidences (summed in float64 in class order,
        # as np.cumsum) are at or below u
        Pc, c = self._P[s:e], np.zeros(m)
        y = np.zeros((r, m), dtype=np.intp)
        for k in range(G - 1):
            c += Pc[:, k]
            y += u >= c[None, :]
        cell = y * B + self.bins[y, np.arange(s, e)[None, :]]
        idx = np.arange(r)[:, None] * J + cell
        return np.bincount(idx.ravel(), minlength=r * J).reshape(r, J)
