"""Dask arrays as input of the metrics (the optional ``dask`` extra).

The metrics are :func:`noisycal.ece`, :func:`noisycal.mce`, :func:`noisycal.brier` and
:func:`noisycal.nll`.

The predictions (and the target, when it is a Dask array too) are read one row block at
a time by Dask tasks, on whatever scheduler is active (threads, processes, or a
``distributed`` cluster). Each task checks its block as the in-memory call checks the
whole array (same ``ValueError`` messages) and returns sums that add up over blocks; the
client adds them up and finishes the computation with the library's own code:

* point estimates: per-bin counts and sums (:func:`~noisycal.metrics.binned.bins.bin_sums`)
  for the binned metrics, sums of per-item scores for the Brier score and the NLL; equal
  to the in-memory value up to the order of floating-point summation;
* ``interval=Inversion()`` (the binned ECE's default): the per-bin sums, cross sums and
  calibrated variances of :mod:`noisycal.metrics.binned.form`, and the
  consistency-resampling null drawn block by block from the in-memory call's random
  stream (each block jumps to its own uniforms, ``PCG64.advance``), so the interval is the
  in-memory one with the same seed;
* ``interval=Bootstrap()`` of a top-label or positive-class ECE/MCE (the binned bootstrap
  of :mod:`noisycal.metrics.binned.bootstrap`): two passes, cell counts and sums, then
  centred cross-products and the rows of small cells, give the in-memory ``CellPlan`` and
  so the same replicates with the same seed;
* ``interval=Bootstrap()`` elsewhere (classwise ECE/MCE, Brier score, NLL): the Poisson
  bootstrap (each item's replicate weight Poisson(1), Hanley & MacGibbon 2006, "Creating
  non-parametric bootstrap samples using Poisson frequencies"), drawn block by block from
  a generator seeded by the seed and the block's first row
  (``np.random.SeedSequence(entropy, spawn_key=(first_row,))``), so the interval does
  not depend on the scheduler; it is another Monte-Carlo draw than the in-memory
  multinomial bootstrap (same estimand, agreement within Monte-Carlo error), and it
  depends on the row chunking. ``details['bootstrap']`` is then ``'poisson'``.
  ``interval=Wald()`` of the scores takes a second pass (sum of squared deviations).

Not supported with Dask input (``ValueError``): ``logits=``, ``items=``, ``cluster=``,
``strategy='quantile'``, ``Bootstrap(rebin=True)``, ``Bootstrap(method='bca')``,
``Bootstrap(scheme='exact')``, ``Bootstrap(devices=...)``, and the intervals
``Bound``, ``Refit`` and ``Credible``. A target given as a NumPy
array or :class:`~noisycal.targets.Target` is split into the predictions' row blocks.
Each pass reads the input once (``persist()`` it to avoid recomputing its graph).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from scipy import sparse

from ..._util.jax import as_numpy_rng
from ..._util.types import ArrayLike, Seed
from ..._util.validation import check_choice
from ...intervals.inversion import norm_of_means
from ...intervals.options import Bootstrap, IntervalOption, Inversion
from ...targets.target import Target, as_target_matrix
from ..inputs import check_target_rows, is_dask_array, lean_inputs
from .bins import (
    Binned,
    bin_sums,
    binned_from_predictions,
    streamed_bin_sums,
    uniform_edges,
)
from .bootstrap import binary_target, cell_cross_sums, cell_sums, plan_from_cells
from .estimate import requested_scheme
from .form import (
    calibrated_bin_variance,
    consistency_counts,
    cross_sums,
    floor_variance,
    gap_se_from_sums,
    linear_form_from_sums,
    one_hot_target,
)

__all__ = ["is_dask_array", "row_blocks", "RowBlocks", "DaskForm", "gather_binned", "block_inputs",
           "poisson_sums", "refuse"]

#: Most numbers one block of simulated uniforms or Poisson weights holds in a task.
_BLOCK_ELEMENTS = 2**22


def row_blocks(probs: object, target: object, classes: ArrayLike | None, *,
               logits: object = None, items: object = None) -> RowBlocks | None:
    """:class:`RowBlocks` of the input when ``probs`` or ``target`` is a Dask array, else None.

    Parameters
    ----------
    probs, target, classes, logits, items
        As in :func:`noisycal.ece`.

    Returns
    -------
    RowBlocks or None
    """
    if is_dask_array(probs) or is_dask_array(target):
        return RowBlocks(probs, target, classes, logits=logits, items=items)
    return None


def _dask() -> tuple:
    try:
        import dask
        import dask.array as da
    except ImportError as err:  # pragma: no cover - is_dask_array was True
        raise ImportError("Dask input needs the optional 'dask' extra: "
                          "pip install 'noisycal[dask]'") from err
    return dask, da


class RowBlocks:
    """Predictions and target of a metric as aligned row blocks of Dask arrays.

    Parameters
    ----------
    probs : dask or NumPy array of shape (n,) or (n, K)
    target : dask or NumPy array, Target, or None
        A NumPy array or Target is split into the row blocks of ``probs``.
    classes : array-like, optional
        As in :func:`noisycal.ece` (label targets are encoded with it per block).
    logits, items : None
        Not supported with Dask input (ValueError when given).
    """

    def __init__(self, probs: object, target: object, classes: ArrayLike | None, *,
                 logits: object = None, items: object = None) -> None:
        refuse(logits=logits is not None, items=items is not None)
        dask, da = _dask()
        if not is_dask_array(probs):
            rows = target.chunks[0]
            arr = np.asarray(probs)
            probs = da.from_array(arr, chunks=(rows,) + arr.shape[1:])
        if probs.ndim not in (1, 2) or any(np.isnan(c) for c in probs.shape):
            raise ValueError("probs: a Dask array of known shape (n,) or (n, K) is needed "
                             "(call compute_chunk_sizes() on arrays of unknown chunks)")
        if probs.ndim == 2 and probs.numblocks[1] > 1:
            probs = probs.rechunk({1: -1})  # blocks of whole rows
        rows = probs.chunks[0]
        self.n = int(probs.shape[0])
        self.binary = probs.ndim == 1
        self.K = 2 if self.binary else int(probs.shape[1])
        self.classes = classes
        checked = isinstance(target, Target)
        if checked:
            T = as_target_matrix(target, self.n, self.K, "target", classes=classes)
            check_target_rows(T, target)  # with its kind; the blocks are not checked again
            target, self.classes = T, None  # checked against the Target's classes above
        if target is not None and not is_dask_array(target):
            target = np.asarray(target.to_numpy() if hasattr(target, "to_numpy") else target)
            if target.ndim == 2 and not checked:  # an in-memory target matrix, checked whole
                check_target_rows(target.astype(np.float64, copy=False), target)
            target = da.from_array(target, chunks=(rows,) + target.shape[1:])
        if target is not None:
            if target.shape[0] != self.n:
                raise ValueError(f"target has {target.shape[0]} rows, probs has {self.n}")
            target = target.rechunk((rows,) + tuple(-1 for _ in target.shape[1:]))
        self.starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(int).tolist()
        self._p = probs.to_delayed().ravel().tolist()
        self._t = ([None] * len(self._p) if target is None
                   else target.to_delayed().ravel().tolist())
        self._compute, self._delayed = dask.compute, dask.delayed
        #: ``(P, T, labels, binary)`` in the place of :func:`lean_inputs`' result: P is a
        #: read-only (n, K) view of one zero (the shape of the predictions, no memory).
        self.inputs = (np.broadcast_to(np.float64(0.0), (self.n, self.K)), None, None,
                       self.binary)

    def map(self, func: Callable, **kwargs: object) -> list:
        """``func(p_block, t_block, first_row, classes=..., **kwargs)`` on every block,
        computed on the active Dask scheduler; the results in row order.

        Parameters
        ----------
        func : callable
            A module-level function (pickled to the workers of a distributed cluster).
        **kwargs
            Passed to every call.

        Returns
        -------
        list
        """
        tasks = [self._delayed(func)(p, t, s, classes=self.classes, **kwargs)
                 for p, t, s in zip(self._p, self._t, self.starts, strict=True)]
        return list(self._compute(*tasks))


def block_inputs(p: np.ndarray, t: object, first: int, classes: ArrayLike | None
                  ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """:func:`lean_inputs` of one block; a row named in an error is counted from row 0
    of the whole array, as the in-memory call counts it.

    Parameters
    ----------
    p : ndarray
        A block of rows of the predictions.
    t : ndarray or None
        The same rows of the target.
    first : int
        The block's first row in the whole array.
    classes : array-like, optional

    Returns
    -------
    P, T, labels
        As :func:`lean_inputs` returns them.
    """
    try:
        P, T, labels, _ = lean_inputs(p, t, None, classes=classes, items=None,
                                      check_target=False)
    except ValueError as err:
        msg = re.sub(r"\brow (\d+) sums", lambda m: f"row {int(m.group(1)) + first} sums",
                     str(err))
        if msg == str(err):
            raise
        raise ValueError(msg) from err
    return P, T, labels


# ----------------------------------------------------------------------------- per block


def _consistency_hits(conf: np.ndarray, cells: np.ndarray, first: int, n: int, n_sim: int,
                      state: dict, n_cells: int) -> np.ndarray:
    """Hit counts (n_sim, n_cells) of this block's items under consistency resampling.

    Draw j of :func:`~noisycal.metrics.binned.form.consistency_null` uses uniforms
    ``j * n + i`` (item i) of its generator; the block jumps to its own with
    ``PCG64.advance``, so the counts summed over blocks are the in-memory ones.
    """
    bitgen = np.random.PCG64()
    bitgen.state = state
    gen = np.random.Generator(bitgen)
    m = conf.shape[1]
    out = np.zeros((n_sim, n_cells), dtype=np.int64)
    pos = 0
    step = max(1, _BLOCK_ELEMENTS // m)
    for j0 in range(0, n_sim, step):
        r = min(step, n_sim - j0)
        u = np.empty((r, m))
        for j in range(r):
            at = (j0 + j) * n + first
            bitgen.advance(at - pos)
            u[j] = gen.random(m)
            pos = at + m
        out[j0:j0 + r] = consistency_counts(u, conf, cells, n_cells)
    return out


def poisson_sums(data: np.ndarray, cells: np.ndarray, n_cells: int, first: int,
                  n_boot: int, entropy: int) -> np.ndarray:
    """Per-cell sums of ``data`` under Poisson(1) item weights, (n_boot, n_cells, C).

    Parameters
    ----------
    data : ndarray of shape (G, m, C)
        Each item's rows in its G groups.
    cells : int ndarray of shape (G, m)
        The cell of each item in each group.
    n_cells : int
    first : int
        The block's first row: with ``entropy`` it seeds the weights,
        ``SeedSequence(entropy, spawn_key=(first,))``, drawn rows in order.
    n_boot : int
    entropy : int

    Returns
    -------
    ndarray of shape (n_boot, n_cells, C)
    """
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(first,)))
    G, m, C = data.shape
    out = np.zeros((n_cells * C, n_boot))
    step = max(1, _BLOCK_ELEMENTS // n_boot)
    for a in range(0, m, step):
        b = min(m, a + step)
        w = rng.poisson(1.0, size=(b - a, n_boot)).astype(np.float64)
        rows = (cells[:, a:b, None] * C + np.arange(C)).ravel()
        cols = np.broadcast_to(np.arange(b - a)[None, :, None], (G, b - a, C)).ravel()
        X = sparse.csr_matrix((data[:, a:b, :].ravel(), (rows, cols)),
                              shape=(n_cells * C, b - a))
        out += X @ w
    return out.T.reshape(n_boot, n_cells, C)


def _binned_block(p: np.ndarray, t: object, first: int, *, classes: ArrayLike | None,
                  kind: str, n_bins: int, debias: bool, step: str, n: int, n_sim: int = 0,
                  state: dict | None = None, split: bool = False,
                  mean: np.ndarray | None = None, counts: np.ndarray | None = None,
                  n_boot: int = 0, entropy: int = 0) -> dict:
    """One row block's sums for :func:`dask_binned_metric` (``step`` says which)."""
    P, T, labels = block_inputs(p, t, first, classes)
    if step == "point":
        return {"sums": streamed_bin_sums(P, labels, T, kind, n_bins, with_sq=debias)[0]}
    binned = binned_from_predictions(P, labels, T, kind, n_bins, "uniform", with_sq=debias)
    G, m, C = binned.data.shape
    J = G * n_bins
    cells = np.arange(G)[:, None] * n_bins + binned.bins
    if step == "cells2":  # second pass of the binned bootstrap
        data, bins = binned.data[0], binned.bins[0]
        cross, small = cell_cross_sums(data, bins, split, mean, counts)
        return {"cross": cross, "small_data": data[small], "small_bins": bins[small]}
    out = {"sums": bin_sums(binned)}
    if step == "inversion":
        d = binned.data[:, :, 2] - binned.data[:, :, 1]
        out.update(dsum=np.bincount(cells.ravel(), weights=d.ravel(), minlength=J),
                   cross=cross_sums(d, binned.bins, n_bins), one_hot=one_hot_target(binned),
                   calvar=calibrated_bin_variance(binned, n_items=n))
        if out["one_hot"]:
            out["hits"] = _consistency_hits(binned.data[:, :, 1], cells, first, n, n_sim,
                                            state, J)
    elif step == "cells1":  # first pass of the binned bootstrap
        data, bins = binned.data[0], binned.bins[0]
        out["binary"] = binary_target(data)
        out["cells"] = {s: cell_sums(data, bins, s, n_bins * (2 if s else 1))
                        for s in ((False, True) if out["binary"] else (False,))}
    elif step == "poisson":
        out["reps"] = poisson_sums(binned.data, cells, J, first, n_boot, entropy)
    return out


# ----------------------------------------------------------------------------- binned


class DaskForm:
    """What the inverted interval needs of the sample, added up over row blocks.

    The interface of :class:`~noisycal.metrics.binned.form.TableForm` (items as sampling
    units: no clusters).

    Parameters
    ----------
    sums : ndarray of shape (G, B, C)
        Per-bin sums of the sample.
    parts : list of dict
        The blocks' ``dsum``, ``cross``, ``calvar``, ``one_hot`` and (one-hot targets)
        ``hits``.
    n, n_sim : int
        Sample size and consistency-resampling draws the hits were counted for.
    """

    def __init__(self, sums: np.ndarray, parts: list, n: int, n_sim: int) -> None:
        self.sums, self.n, self.n_sim = sums, n, n_sim
        self.G, self.B = sums.shape[:2]
        self._one_hot = all(q["one_hot"] for q in parts)
        self.dsum = sum(q["dsum"] for q in parts)
        self.cross = sum(q["cross"] for q in parts)
        self.calvar = sum(q["calvar"] for q in parts)
        self.hits = sum(q["hits"] for q in parts) if self._one_hot else None

    def one_hot(self) -> bool:
        """:func:`~noisycal.metrics.binned.form.one_hot_target` of the sample."""
        return self._one_hot

    def linear_form(self, norm: str, codes: np.ndarray | None = None,
                    n_clusters: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~noisycal.metrics.binned.form.binned_linear_form` (``codes`` None).

        Parameters
        ----------
        norm : {'l1', 'l2'}
        codes : ndarray of shape (n,), optional
            Cluster codes (must be None: items are the sampling units).
        n_clusters : int, optional

        Returns
        -------
        mean, cov, weights
        """
        if codes is not None:
            raise ValueError("cluster: not supported with Dask input")
        return linear_form_from_sums(self.dsum, self.cross, self.sums[:, :, 0].ravel(),
                                     self.n, self.G, norm)

    def floored_cov(self, cov: np.ndarray, variance_floor: str,
                    codes: np.ndarray | None = None) -> np.ndarray:
        """:func:`~noisycal.metrics.binned.form.floored_cov`.

        Parameters
        ----------
        cov : ndarray of shape (J, J)
        variance_floor : {'none', 'calibrated'}
        codes : ndarray of shape (n,), optional
            Cluster codes (no floor with clusters).

        Returns
        -------
        ndarray of shape (J, J)
        """
        check_choice(variance_floor, "variance_floor", ("none", "calibrated"))
        if variance_floor == "none" or codes is not None or not self._one_hot:
            return cov
        return floor_variance(cov, self.calvar)

    def gap_se(self) -> np.ndarray:
        """:func:`~noisycal.metrics.binned.form.bin_gap_se`, shape (G, B)."""
        shape = (self.G, self.B)
        return gap_se_from_sums(self.sums[:, :, 0], self.dsum.reshape(shape),
                                np.diag(self.cross).reshape(shape))

    def consistency_null(self, weights: np.ndarray, norm: str, n_sim: int,
                         seed: Seed) -> np.ndarray:
        """:func:`~noisycal.metrics.binned.form.consistency_null` from the blocks' hits.

        Parameters
        ----------
        weights : ndarray of shape (J,)
        norm : {'l1', 'l2'}
        n_sim : int
        seed : int or jax key

        Returns
        -------
        ndarray of shape (n_sim,)
        """
        if self.hits is None or n_sim != self.n_sim:
            raise ValueError("the consistency null was counted for another n_sim or target")
        m = (self.hits - self.sums[:, :, 1].ravel()[None, :]) / self.n
        return norm_of_means(m, weights, norm)


def refuse(**given: object) -> None:
    """Raise ValueError naming the first option given (True) that Dask input lacks.

    Parameters
    ----------
    **given : bool
        Option name (an argument, or an interval option's field written as
        ``"Bootstrap(method='bca')"``) -> whether it was asked for.
    """
    for name, bad in given.items():
        if bad:
            raise ValueError(f"{name}: not supported with Dask input (see "
                             "noisycal.metrics.binned.dask)")


def gather_binned(blocks: RowBlocks, kind: str, n_bins: int, *, debias: bool,
                  interval: IntervalOption | None, seed: Seed, strategy: str,
                  cluster: object) -> tuple[Binned, np.ndarray, DaskForm | None, dict | None]:
    """What :func:`~noisycal.metrics.binned.estimate.binned_estimate` needs of Dask input.

    Parameters
    ----------
    blocks : RowBlocks
    kind, n_bins, debias, seed, strategy, cluster
        As in :func:`noisycal.ece` (checked).
    interval : Inversion, Bootstrap or None
        The interval option (resolved from 'auto'). Other kinds, a Bootstrap's
        ``devices`` and the JAX Poisson bootstrap of a top-label or positive-class ECE
        are refused (the classwise bootstrap is a Poisson bootstrap per block).

    Returns
    -------
    binned : Binned
        No items: the edges only.
    sums : ndarray of shape (G, n_bins, C)
    form : DaskForm or None
        With the inverted interval.
    streamed : dict or None
        With the bootstrap: the binned bootstrap's CellPlan, or the Poisson
        replicates' per-bin sums.

    Raises
    ------
    ValueError
        An option not supported with Dask input.
    """
    G = blocks.K if kind == "classwise" else 1
    boot = interval if isinstance(interval, Bootstrap) else None
    scheme = None if boot is None else requested_scheme(boot)
    other = interval is not None and boot is None and not isinstance(interval, Inversion)
    refuse(cluster=cluster is not None, strategy=strategy == "quantile",
           **{f"interval={interval!r}": other,
              "Bootstrap(rebin=True)": boot is not None and boot.rebin,
              "Bootstrap(method='bca')": boot is not None and boot.method == "bca",
              "Bootstrap(devices=...)": boot is not None and boot.devices is not None,
              f"Bootstrap(scheme={scheme!r})": boot is not None and (
                  scheme == "exact" or (scheme == "binned" and G > 1)
                  or (scheme == "poisson" and G == 1))})
    n_boot = None if interval is None else interval.n_boot
    n, B = blocks.n, n_bins
    common = dict(kind=kind, n_bins=n_bins, debias=debias, n=n)
    form, streamed = None, None
    if interval is None:
        parts = blocks.map(_binned_block, step="point", **common)
    elif isinstance(interval, Inversion):
        rng = as_numpy_rng(seed)
        if not isinstance(rng.bit_generator, np.random.PCG64):  # pragma: no cover
            raise TypeError("the block-wise consistency null needs a PCG64 generator")
        parts = blocks.map(_binned_block, step="inversion", n_sim=n_boot,
                           state=rng.bit_generator.state, **common)
    elif G == 1:  # the binned bootstrap: cells, then cross-products and small cells
        parts = blocks.map(_binned_block, step="cells1", **common)
        split = all(q["binary"] for q in parts)
        counts = sum(q["cells"][split][0] for q in parts)
        mean = sum(q["cells"][split][1] for q in parts) / np.maximum(counts, 1)[:, None]
        second = blocks.map(_binned_block, step="cells2", split=split, mean=mean,
                            counts=counts, **common)
        plan = plan_from_cells(counts, mean, sum(q["cross"] for q in second),
                               np.concatenate([q["small_data"] for q in second]),
                               np.concatenate([q["small_bins"] for q in second]), split)
        streamed = {"plan": plan}
    else:  # classwise: the Poisson bootstrap, block by block
        entropy = int(as_numpy_rng(seed).integers(0, 2**63))
        parts = blocks.map(_binned_block, step="poisson", n_boot=n_boot, entropy=entropy,
                           **common)
        reps = sum(q["reps"] for q in parts)
        streamed = {"replicate_stats": reps.reshape(n_boot, G, B, -1), "scheme": "poisson"}
    sums = sum(q["sums"] for q in parts)
    if isinstance(interval, Inversion):
        form = DaskForm(sums, parts, n, n_boot)
    edges = np.tile(uniform_edges(B), (G, 1))
    C = sums.shape[2]
    binned = Binned(np.empty((G, 0, C)), np.empty((G, 0), np.int32), edges, B, 1)
    return binned, sums, form, streamed
