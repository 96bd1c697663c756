"""The binned backends behind one interface: item table, streamed sums, Dask row blocks.

A binned metric (:func:`noisycal.ece`) needs, of the sample, the per-bin statistics of
its point value and interval, in one of three shapes; each backend gathers them and
returns them as :class:`Gathered`, the input of
:func:`~noisycal.metrics.binned.estimate.binned_estimate`:

- :class:`ItemTable`: the (G, n, C) table of every item's statistics in every score
  group (:func:`~noisycal.metrics.binned.bins.binned_from_predictions`); every interval
  kind, clusters and the noise-corrected intervals that revisit the items use it;
- :class:`StreamedSums`: per-bin sums read over row chunks with no item table, for the
  point value (:func:`~noisycal.metrics.binned.bins.streamed_bin_sums`) or the inverted
  interval (:class:`~noisycal.metrics.binned.streamed.StreamedForm`);
- :class:`DaskBlocks`: sums added up over the row blocks of Dask arrays
  (:func:`~noisycal.metrics.binned.dask.gather_binned`).

:func:`choose_backend` picks the one that serves a request with the least memory; the
three give the same numbers up to the order of floating-point summation.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..._util.types import Seed
from ...intervals.options import IntervalOption, Inversion
from .bins import Binned, binned_from_predictions, streamed_bin_sums
from .dask import RowBlocks, gather_binned
from .streamed import StreamedForm

__all__ = ["BinnedRequest", "Gathered", "BinnedBackend", "ItemTable", "StreamedSums",
           "DaskBlocks", "choose_backend"]


class BinnedRequest(NamedTuple):
    """What a binned metric asks of its backend.

    Attributes
    ----------
    kind : {'top_label', 'classwise', 'positive_class'}
    n_bins : int
    strategy : {'uniform', 'quantile'}
    debias : bool
        Also gather the squared targets (the debiased L2 error).
    interval : IntervalOption or None
        The interval option the metric runs (resolved from 'auto').
    seed : int or jax key
    cluster : array-like or None
    reduce : {'ece', 'mce'}
    needs_items : bool
        Whether the caller revisits the items after the binned estimate (a
        noise-corrected interval, or the channel error of a fitted corrected target).
    """

    kind: str
    n_bins: int
    strategy: str
    debias: bool
    interval: IntervalOption | None
    seed: Seed
    cluster: Any
    reduce: str
    needs_items: bool


class Gathered(NamedTuple):
    """The per-bin statistics a backend gathered (the inputs of ``binned_estimate``).

    Attributes
    ----------
    binned : Binned
        The item table, or (streamed backends) the bin edges alone: ``data`` of shape
        (G, 0, C).
    sums : ndarray of shape (G, n_bins, C) or None
        The sample's per-bin sums when no item table is kept.
    form : object or None
        The inverted interval's per-bin statistics (the methods of
        :class:`~noisycal.metrics.binned.form.TableForm`), when gathered in passes.
    streamed : dict or None
        The bootstrap's statistics gathered over Dask row blocks.
    """

    binned: Binned
    sums: np.ndarray | None = None
    form: Any = None
    streamed: dict | None = None


@runtime_checkable
class BinnedBackend(Protocol):
    """The interface of the binned backends: a name and one method, :meth:`gather`."""

    #: The backend's name (``'items'``, ``'streamed'`` or ``'dask'``).
    name: str

    def gather(self, request: BinnedRequest) -> Gathered:
        """The per-bin statistics of the sample for ``request``.

        Parameters
        ----------
        request : BinnedRequest

        Returns
        -------
        Gathered
        """
        ...  # pragma: no cover


class ItemTable:
    """The item table (:func:`~noisycal.metrics.binned.bins.binned_from_predictions`).

    Parameters
    ----------
    P : ndarray of shape (n, K)
    labels : int ndarray of shape (n,) or None
        Class codes of a one-hot target (else ``T``).
    T : ndarray of shape (n, K) or None
    """

    name = "items"

    def __init__(self, P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None
                 ) -> None:
        self._P, self._labels, self._T = P, labels, T

    def gather(self, request: BinnedRequest) -> Gathered:
        """The item table of ``request``'s score groups and bins.

        Parameters
        ----------
        request : BinnedRequest

        Returns
        -------
        Gathered
        """
        r = request
        return Gathered(binned_from_predictions(self._P, self._labels, self._T, r.kind,
                                                r.n_bins, r.strategy, with_sq=r.debias))


class StreamedSums:
    """Per-bin sums over row chunks, no item table (see :meth:`serves`).

    Parameters
    ----------
    P, labels, T
        As for :class:`ItemTable`.
    """

    name = "streamed"

    def __init__(self, P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None
                 ) -> None:
        self._P, self._labels, self._T = P, labels, T

    @staticmethod
    def serves(request: BinnedRequest) -> bool:
        """Whether the streamed sums answer ``request``.

        The point value with equal-width bins (no interval), and the inverted interval
        of every kind of binned ECE without clusters: the item table would hold G x n x 3
        float64 numbers (K x n x 3 classwise; for the top-label ECE with its consistency
        null the peak was 5.1x a float32 (n, 10) input, under 2x streamed). Not when the
        caller revisits the items (``needs_items``).

        Parameters
        ----------
        request : BinnedRequest

        Returns
        -------
        bool
        """
        r = request
        if r.needs_items:
            return False
        if r.interval is None:
            return r.strategy == "uniform"
        return isinstance(r.interval, Inversion) and r.reduce == "ece" and r.cluster is None

    def gather(self, request: BinnedRequest) -> Gathered:
        """Per-bin sums (no interval) or the :class:`StreamedForm` (inverted interval).

        Parameters
        ----------
        request : BinnedRequest

        Returns
        -------
        Gathered
        """
        r = request
        if r.interval is None:  # the per-bin sums over row chunks (classwise: K x n)
            sums, edges = streamed_bin_sums(self._P, self._labels, self._T, r.kind,
                                            r.n_bins, with_sq=r.debias)
            G, C = sums.shape[0], sums.shape[2]
            return Gathered(Binned(np.empty((G, 0, C)), np.empty((G, 0), np.int32), edges,
                                   r.n_bins, 1), sums)
        form = StreamedForm(self._P, self._labels, self._T, r.kind, r.n_bins, r.strategy,
                            with_sq=r.debias)
        return Gathered(form.binned, form.sums, form)


class DaskBlocks:
    """Sums over the row blocks of Dask input (:mod:`noisycal.metrics.binned.dask`).

    Parameters
    ----------
    blocks : RowBlocks
    """

    name = "dask"

    def __init__(self, blocks: RowBlocks) -> None:
        self._blocks = blocks

    def gather(self, request: BinnedRequest) -> Gathered:
        """The blocks' sums, inverted-interval form or bootstrap statistics.

        Parameters
        ----------
        request : BinnedRequest

        Returns
        -------
        Gathered
        """
        r = request
        return Gathered(*gather_binned(self._blocks, r.kind, r.n_bins, debias=r.debias,
                                       interval=r.interval, seed=r.seed,
                                       strategy=r.strategy, cluster=r.cluster))


def choose_backend(P: np.ndarray, labels: np.ndarray | None, T: np.ndarray | None,
                   blocks: RowBlocks | None, request: BinnedRequest) -> BinnedBackend:
    """The backend of a binned metric: Dask blocks, streamed sums, else the item table.

    Parameters
    ----------
    P, labels, T
        The in-memory inputs (:func:`noisycal.metrics.inputs.lean_inputs`).
    blocks : RowBlocks or None
        The Dask row blocks, when the input is a Dask array.
    request : BinnedRequest

    Returns
    -------
    BinnedBackend
    """
    if blocks is not None:
        return DaskBlocks(blocks)
    if StreamedSums.serves(request):
        return StreamedSums(P, labels, T)
    return ItemTable(P, labels, T)
