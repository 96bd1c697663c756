"""The Poisson bootstrap of the binned metrics, sharded over items across devices.

It is ``interval=Bootstrap(scheme='poisson')`` and ``Bootstrap(devices=...)`` of
:func:`noisycal.ece` (:class:`noisycal.intervals.Bootstrap`).

Every resampling unit (an item, or a cluster with ``cluster=``) gets an independent
Poisson(1) weight in every replicate, instead of the multinomial counts of n draws
with replacement (Hanley & MacGibbon 2006, "Creating non-parametric bootstrap samples
using Poisson frequencies": Multinomial(n, 1/n) counts are independent Poisson(1)
counts conditioned on summing to n, and for large n the two bootstraps agree). A
replicate's per-bin sums are then sums of weight x item statistics over the items, so
each device sums its own items and the devices' sums are added (one ``psum`` over the
mesh axis): nothing is gathered across devices, unlike the exact bootstrap's
per-replicate index draw.

Replicate totals are random under Poisson weights (their sum is Poisson(n), not n). Our
choice: a replicate's bin means are weighted means (sum w x / sum w) and the ECE's bin
fractions use the replicate's own weighted total as denominator (what
:func:`~noisycal.metrics.binned.bins.metric_from_stats` does with the weighted count
column), so a replicate is the plug-in ECE of a sample of sum(w) items. The weights are
integers, so the debiased L2 error's n_b - 1 counts drawn items as in the exact
bootstrap. A replicate that draws no item (probability exp(-n), exp(-n_clusters) with
clusters) has no value: it is NaN, and the interval's status is then 'nonfinite'.

The weights are counter-based, so the replicates do not depend on how the items are
laid out over devices: the weight of unit u in replicate r is read off the Threefry-2x32
hash (Salmon, Moraes, Dror & Shaw 2011, "Parallel Random Numbers: As Easy as 1, 2, 3";
JAX's ``threefry_2x32``) of the counter pair (u, floor(r / 2)) under a key drawn from
``seed``, word r mod 2 of its output, by inverting the Poisson(1) distribution function
F on the 32-bit word: w = #{k : word >= ceil(2^32 F(k))}. That is the Poisson(1) law up
to the 2^-32 resolution of the word (weights 0 to 12; P(w > 12) = 6e-11 < 2^-32 is cut
off). A run on one device and one on D devices draw the same weights, and their
replicates differ only by the order of floating-point summation (at most 1.3e-16 in
``tests/metrics/binned/test_bootstrap_sharding.py``, which requires 1e-10).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.extend.random import threefry_2x32

__all__ = ["POISSON_THRESHOLDS", "poisson_weights", "poisson_replicate_stats"]


def _thresholds() -> np.ndarray:
    cdf, pmf, out = 0.0, math.exp(-1.0), []
    for k in range(40):
        cdf += pmf / math.factorial(k)
        t = math.ceil(cdf * 2.0**32)
        if t >= 2**32:
            break
        out.append(t)
    return np.array(out, dtype=np.uint32)


#: ceil(2^32 F(k)) for the Poisson(1) distribution function F, k = 0, 1, ... while below
#: 2^32: a 32-bit word w maps to the weight #{k : w >= POISSON_THRESHOLDS[k]}.
POISSON_THRESHOLDS = _thresholds()

#: Items per step of the per-device loop (fewer for small samples).
_CHUNK = 2**13
#: Hash outputs (replicates x items) per step.
_BLOCK = 2**20


def poisson_weights(keypair: jax.Array, units: jax.Array, pairs: jax.Array) -> jax.Array:
    """Poisson(1) weights of ``units`` in the replicates 2q and 2q + 1 of each pair q.

    Parameters
    ----------
    keypair : uint32 jax.Array of shape (2,)
    units : uint32 jax.Array of shape (m,)
        Global unit indices (the counters: a weight never depends on the layout).
    pairs : uint32 jax.Array of shape (P,)
        Replicate-pair indices.

    Returns
    -------
    jax.Array of shape (2P, m)
        Row 2p + j: replicate 2 pairs[p] + j.
    """
    P, m = pairs.shape[0], units.shape[0]
    u = jnp.broadcast_to(units[None, :], (P, m)).ravel()
    q = jnp.broadcast_to(pairs[:, None], (P, m)).ravel()
    # threefry_2x32 hashes the pairs (count[k], count[L + k]): word 0 comes back in the
    # first half, word 1 in the second
    words = threefry_2x32((keypair[0], keypair[1]), jnp.concatenate([u, q]))
    words = words.reshape(2, P, m).transpose(1, 0, 2).reshape(2 * P, m)
    thr = jnp.asarray(POISSON_THRESHOLDS)
    return jnp.sum(words[:, :, None] >= thr, axis=2, dtype=jnp.int32)


def _local_sums(keypair: jax.Array, data: jax.Array, bins: jax.Array, units: jax.Array, *,
                n_bins: int, n_blocks: int, pair_block: int, chunk: int,
                axis: str | None) -> jax.Array:
    """Per-bin weighted sums of this device's items for every replicate, summed over
    the devices when ``axis`` names the mesh axis: shape (2 n_blocks pair_block, G, B, C)."""
    G, nl, C = data.shape
    nch = nl // chunk
    d = data.reshape(G, nch, chunk, C).transpose(1, 0, 2, 3)
    b = bins.reshape(G, nch, chunk).transpose(1, 0, 2)
    cu = units.reshape(nch, chunk)
    R = 2 * pair_block

    def block(q0: jax.Array) -> jax.Array:
        pairs = q0 + jnp.arange(pair_block, dtype=jnp.uint32)

        def step(acc: jax.Array, xs: tuple) -> tuple[jax.Array, None]:
            dc, bc, uc = xs
            w = poisson_weights(keypair, uc, pairs).astype(data.dtype)  # (R, chunk)
            onehot = (bc[:, :, None] == jnp.arange(n_bins)).astype(data.dtype)
            x = onehot[:, :, :, None] * dc[:, :, None, :]  # (G, chunk, B, C)
            return acc + jnp.einsum("rm,gmbc->rgbc", w, x), None

        acc0 = jnp.zeros((R, G, n_bins, C), data.dtype)
        if axis is not None:  # the carry varies over the devices like the items
            acc0 = jax.lax.pcast(acc0, (axis,), to="varying")
        acc, _ = jax.lax.scan(step, acc0, (d, b, cu))
        return acc

    starts = jnp.arange(n_blocks, dtype=jnp.uint32) * jnp.uint32(pair_block)
    out = jax.lax.map(block, starts).reshape(n_blocks * R, G, n_bins, C)
    return out if axis is None else jax.lax.psum(out, axis)


_STATIC = ("n_bins", "n_blocks", "pair_block", "chunk")


@partial(jax.jit, static_argnames=_STATIC)
def _sums_one(keypair: jax.Array, data: jax.Array, bins: jax.Array, units: jax.Array, *,
              n_bins: int, n_blocks: int, pair_block: int, chunk: int) -> jax.Array:
    return _local_sums(keypair, data, bins, units, n_bins=n_bins, n_blocks=n_blocks,
                       pair_block=pair_block, chunk=chunk, axis=None)


@partial(jax.jit, static_argnames=_STATIC + ("mesh",))
def _sums_sharded(keypair: jax.Array, data: jax.Array, bins: jax.Array, units: jax.Array,
                  *, n_bins: int, n_blocks: int, pair_block: int, chunk: int,
                  mesh: Any) -> jax.Array:
    from jax.sharding import PartitionSpec as P

    f = partial(_local_sums, n_bins=n_bins, n_blocks=n_blocks, pair_block=pair_block,
                chunk=chunk, axis="items")
    return jax.shard_map(f, mesh=mesh, in_specs=(P(), P(None, "items", None),
                                                 P(None, "items"), P("items")),
                         out_specs=P())(keypair, data, bins, units)


def poisson_replicate_stats(data: np.ndarray, bins: np.ndarray, units: np.ndarray | None,
                            key: jax.Array, *, n_bins: int, n_boot: int,
                            devices: Sequence[Any] | None = None) -> jax.Array:
    """Per-bin sums of ``n_boot`` Poisson-bootstrap replicates, shape (n_boot, G, B, C).

    Parameters
    ----------
    data : ndarray of shape (G, n, C)
        Per-item statistics (:class:`~noisycal.metrics.binned.bins.Binned`), float64.
    bins : int ndarray of shape (G, n)
    units : int ndarray of shape (n,) or None
        Resampling unit of each item (cluster codes: a cluster's items share its
        weight); None: the items themselves.
    key : jax key
    n_bins, n_boot : int
    devices : sequence of jax devices, optional
        Shard the items over these devices (a one-axis mesh; the items are padded with
        zero rows to a multiple of the device count times the step size). None: one
        device, no mesh.

    Returns
    -------
    jax.Array of shape (n_boot, G, n_bins, C)
    """
    G, n, C = data.shape
    if n >= 2**32:
        raise ValueError(f"the Poisson bootstrap counts items in 32 bits; got {n} items")
    D = 1 if devices is None else len(devices)
    per = -(-n // D)
    chunk = min(_CHUNK, -(-per // 8) * 8)
    n_pad = D * chunk * -(-per // chunk)
    u = np.arange(n) if units is None else np.asarray(units)
    data_p = np.zeros((G, n_pad, C), data.dtype)
    data_p[:, :n] = data
    bins_p = np.zeros((G, n_pad), np.int32)
    bins_p[:, :n] = bins
    units_p = np.zeros(n_pad, np.uint32)
    units_p[:n] = u
    n_pairs = -(-n_boot // 2)
    n_blocks = -(-n_pairs // max(1, _BLOCK // (2 * chunk)))
    pair_block = -(-n_pairs // n_blocks)
    keypair = jax.random.bits(key, (2,), jnp.uint32)
    cfg = dict(n_bins=n_bins, n_blocks=n_blocks, pair_block=pair_block, chunk=chunk)
    if devices is None:
        out = _sums_one(keypair, jnp.asarray(data_p), jnp.asarray(bins_p),
                        jnp.asarray(units_p), **cfg)
    else:
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = Mesh(np.asarray(devices), ("items",))

        def put(x: np.ndarray, spec: Any) -> jax.Array:
            return jax.device_put(x, NamedSharding(mesh, spec))

        out = _sums_sharded(put(np.asarray(keypair), P()), put(data_p, P(None, "items", None)),
                            put(bins_p, P(None, "items")), put(units_p, P("items")),
                            mesh=mesh, **cfg)
    return out[:n_boot]
