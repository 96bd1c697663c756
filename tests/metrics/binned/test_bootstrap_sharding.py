"""The Poisson bootstrap of the binned metrics, on one device and sharded over several.

JAX sees four CPU devices only when ``XLA_FLAGS=--xla_force_host_platform_device_count=4``
is set before it starts, so the sharded runs are compared with the one-device runs in a
fresh Python process (as tests/engines/test_em_sharding.py does for EM). The item counts are not
multiples of 3 or 4, so every sharded run pads. The Poisson weights are checked by hand
(Poisson(1) moments, counter-based: independent of the layout) and the Poisson interval
against the exact multinomial bootstrap within Monte-Carlo error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from forced_devices import run_on_four_host_devices
from replicate_checks import LEVEL, N_BOOT, agree, probs_labels

import jax
import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.metrics.binned.bins import group_scores, make_binned
from noisycal.metrics.binned.poisson import (
    POISSON_THRESHOLDS,
    poisson_replicate_stats,
    poisson_weights,
)

# These tests compare replicate distributions; a percentile interval of a near-calibrated
# ECE that misses its own estimate (status 'estimate_outside_interval') is not their point.
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*does not contain the estimate:noisycal.NumericalWarning")

SCRIPT = r"""
import functools, json, warnings
import numpy as np
import jax
import noisycal as nc

assert len(jax.devices()) == 4, jax.devices()
rng = np.random.default_rng(0)
n, K = 2003, 4
P = rng.dirichlet(np.ones(K) * 0.6, n)
y = np.array([rng.choice(K, p=q) for q in P ** 1.5 / (P ** 1.5).sum(1, keepdims=True)])
T = 0.6 * np.eye(K)[y] + 0.4 * rng.dirichlet(np.ones(K), n)
cases = {
    "top_label_bca_quantile": (dict(probs=P, target=y),
                               dict(method="bca", strategy="quantile")),
    "classwise_cluster": (dict(probs=P, target=y),
                          dict(kind="classwise", cluster=np.arange(n) // 3)),
    "soft_l2_debiased": (dict(probs=P, target=T), dict(norm="l2", debias=True, n_bins=10)),
}
out = {}
for name, (data, kw) in cases.items():
    method = kw.pop("method", "percentile")
    common = dict(seed=7, **kw)
    boot = functools.partial(nc.intervals.Bootstrap, n_boot=201, method=method)
    one = nc.ece(**data, interval=boot(scheme="poisson"), **common)
    runs = {"3": nc.ece(**data, interval=boot(devices=3), **common)}
    if name.startswith("top_label"):  # a list of all four devices, 'poisson' explicit
        runs["4"] = nc.ece(**data, interval=boot(devices=jax.devices(), scheme="poisson"),
                           **common)
    out[name] = {
        "reps": max(float(np.max(np.abs(r.replicates - one.replicates)))
                    for r in runs.values()),
        "interval": max(abs(a - b) for r in runs.values()
                        for a, b in zip(r.interval, one.interval)),
        "bins": max(float(np.nanmax(np.abs(r.bins[["low", "high"]].to_numpy()
                                           - one.bins[["low", "high"]].to_numpy())))
                    for r in runs.values()),
        "n_devices": [r.details["devices"] for r in runs.values()],
        "scheme": sorted({r.details["bootstrap"] for r in runs.values()}),
        "status": sorted({r.status for r in runs.values()} | {one.status}),
        "spread": float(np.std(one.replicates)),
    }
print("RESULT " + json.dumps(out))
"""


def test_bootstrap_on_three_and_four_devices_equals_one_device():
    out = run_on_four_host_devices(SCRIPT)
    assert set(out) == {"top_label_bca_quantile", "classwise_cluster", "soft_l2_debiased"}
    for name, r in out.items():
        assert r["reps"] < 1e-10, (name, r)
        assert r["interval"] < 1e-10, (name, r)
        assert r["bins"] < 1e-10, (name, r)
        assert r["n_devices"] == ([3, 4] if name.startswith("top_label") else [3]), (name, r)
        assert r["scheme"] == ["poisson"], (name, r)
        assert r["status"] == ["ok"], (name, r)
        assert r["spread"] > 1e-4, (name, r)  # the replicates vary: the check has teeth


# ----------------------------------------------------------------------------- weights


def test_thresholds_invert_the_poisson_distribution_function():
    F = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(len(POISSON_THRESHOLDS))])
    np.testing.assert_array_equal(POISSON_THRESHOLDS, np.ceil(F * 2.0**32))
    # weights 0..12: F(12) rounds to 2**32, and P(w > 12) = 6e-11 < 2**-32 is cut off
    assert len(POISSON_THRESHOLDS) == 12


def test_weights_are_poisson_one_and_independent():
    with x64():
        kp = jax.random.bits(jax.random.key(3), (2,), jnp.uint32)
        w = np.asarray(poisson_weights(kp, jnp.arange(200_000, dtype=jnp.uint32),
                                       jnp.arange(5, dtype=jnp.uint32)))
    assert w.shape == (10, 200_000)
    m = w.size
    freq = np.bincount(w.ravel(), minlength=8)[:6] / m
    pmf = np.array([math.exp(-1) / math.factorial(k) for k in range(6)])
    # each frequency within 5 binomial standard errors of its probability
    assert np.all(np.abs(freq - pmf) <= 5 * np.sqrt(pmf * (1 - pmf) / m)), (freq, pmf)
    assert abs(w.mean() - 1) <= 5 / np.sqrt(m)
    assert abs(w.var() - 1) <= 5 * np.sqrt(3 / m)  # var of (w - 1)^2 is 3 for Poisson(1)
    # the two words of one hash (replicates 2q, 2q + 1) and neighbouring items: uncorrelated
    c = np.corrcoef(w[0::2].ravel(), w[1::2].ravel())[0, 1]
    assert abs(c) <= 5 / np.sqrt(w[0::2].size)
    c_items = np.corrcoef(w[:, :-1].ravel(), w[:, 1:].ravel())[0, 1]
    assert abs(c_items) <= 5 / np.sqrt(w[:, 1:].size)


def test_weights_are_counter_based():
    with x64():
        kp = jax.random.bits(jax.random.key(0), (2,), jnp.uint32)
        units = jnp.arange(1000, dtype=jnp.uint32)
        pairs = jnp.arange(4, dtype=jnp.uint32)
        full = np.asarray(poisson_weights(kp, units, pairs))
        perm = np.random.default_rng(0).permutation(1000)
        part = np.asarray(poisson_weights(kp, units[perm[:300]], pairs[2:]))
        other = np.asarray(poisson_weights(jax.random.bits(jax.random.key(1), (2,),
                                                           jnp.uint32), units, pairs))
    np.testing.assert_array_equal(part, full[4:, perm[:300]])
    assert np.mean(other != full) > 0.5


def test_replicate_sums_by_hand():
    rng = np.random.default_rng(1)
    n, B = 777, 9
    conf = rng.random((n, 1))
    t = (rng.random((n, 1, 1)) < conf[:, :, None]).astype(float)
    binned = make_binned(conf, t, 5, "uniform", with_sq=False)
    key = jax.random.key(5)
    codes = np.arange(n) // 4
    with x64():
        for units in (None, codes):
            st = np.asarray(poisson_replicate_stats(binned.data, binned.bins, units, key,
                                                    n_bins=5, n_boot=B))
            kp = jax.random.bits(key, (2,), jnp.uint32)
            u = np.arange(n) if units is None else units
            w = np.asarray(poisson_weights(kp, jnp.asarray(u, jnp.uint32),
                                           jnp.arange(5, dtype=jnp.uint32)))[:B]
            want = np.stack([[np.bincount(binned.bins[0], weights=w[r] * binned.data[0, :, c],
                                          minlength=5) for c in range(3)] for r in range(B)])
            np.testing.assert_allclose(st[:, 0], want.transpose(0, 2, 1), rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_array_equal(st[:, 0, :, 0], np.round(st[:, 0, :, 0]))
    # with clusters, the four items of a cluster share one weight
    assert np.all(w[:, 0::4][:, :194] == w[:, 1::4][:, :194])


# ----------------------------------------------------------------------------- against exact

@pytest.mark.parametrize("case,kw", [("near_calibrated", {}), ("badly_calibrated", {}),
                                     ("near_calibrated", {"kind": "classwise"}),
                                     ("badly_calibrated", {"norm": "l2", "debias": True})])
def test_poisson_matches_exact_bootstrap(case: str, kw: dict) -> None:
    temp = {"near_calibrated": 1.0, "badly_calibrated": 2.5}[case]
    P, y = probs_labels(3000, 4, temp, seed=11)
    common = dict(level=LEVEL, n_bins=15, **kw)
    ex = nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=N_BOOT, scheme="exact"), seed=1,
                **common)
    po = nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=N_BOOT, scheme="poisson"),
                seed=2, **common)
    assert po.details["bootstrap"] == "poisson" and "devices" not in po.details
    assert po.value == ex.value
    ok, msg = agree(ex.replicates, po.replicates)
    assert ok, msg


def test_agreement_check_detects_a_too_wide_poisson_law() -> None:
    """The tolerance has teeth: weights 1.5 x Poisson(1) - 0.5 (variance 2.25) fail."""
    P, y = probs_labels(3000, 4, 2.5, seed=11)
    binned = make_binned(*group_scores(P, np.eye(4)[y], "top_label")[:2], 15, "uniform",
                         with_sq=False)
    ex = nc.ece(P, y, seed=1, interval=nc.intervals.Bootstrap(n_boot=N_BOOT, scheme="exact"),
                level=LEVEL)
    with x64():
        kp = jax.random.bits(jax.random.key(2), (2,), jnp.uint32)
        w = np.asarray(poisson_weights(kp, jnp.arange(3000, dtype=jnp.uint32),
                                       jnp.arange(N_BOOT // 2, dtype=jnp.uint32)))

    def ece_of(w: np.ndarray) -> np.ndarray:
        d, b = binned.data[0], binned.bins[0]
        s = np.stack([[np.bincount(b, weights=wr * d[:, c], minlength=15) for c in range(3)]
                      for wr in w])
        return np.abs(s[:, 2] - s[:, 1]).sum(axis=1) / s[:, 0].sum(axis=1)

    assert agree(ex.replicates, ece_of(w.astype(float)))[0]
    assert not agree(ex.replicates, ece_of(1.5 * w - 0.5))[0]


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("bad", [0, len(jax.devices()) + 1, "cpu", [1, 2], True, []])
def test_bad_devices_raise(bad):
    P, y = probs_labels(200, 3, 1.5, seed=1)
    with pytest.raises(ValueError, match="devices"):
        nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=50, devices=bad))


def test_devices_needs_the_poisson_item_bootstrap():
    P, y = probs_labels(300, 3, 1.5, seed=1)
    for scheme in ("exact", "binned"):
        with pytest.raises(ValueError, match="devices shard the Poisson scheme"):
            nc.intervals.Bootstrap(n_boot=50, scheme=scheme, devices=1)
    # devices are a field of the bootstrap option: no other interval kind can take them
    for make in (nc.intervals.Inversion, nc.intervals.Refit):
        with pytest.raises(TypeError, match="devices"):
            make(devices=1)
    with pytest.raises(ValueError, match="rebin=True"):
        nc.intervals.Bootstrap(n_boot=50, scheme="poisson", rebin=True)
    with pytest.raises(ValueError, match="rebin=True"):  # 'auto' with devices: Poisson
        nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=50, rebin=True, devices=1),
               strategy="quantile")
    est = nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=50, devices=1))
    assert est.details["bootstrap"] == "poisson" and est.details["devices"] == 1
    same = nc.ece(P, y, interval=nc.intervals.Bootstrap(n_boot=50, scheme="poisson"))
    np.testing.assert_allclose(est.replicates, same.replicates, rtol=0, atol=1e-14)


def test_a_replicate_without_items_is_nan():
    # two items: a replicate draws none with probability exp(-2); it has no ECE
    p = np.array([0.3, 0.8])
    y = np.array([0, 1])
    with pytest.warns(nc.NumericalWarning, match="not finite"):
        est = nc.ece(p, y, n_bins=2, interval=nc.intervals.Bootstrap(n_boot=300, scheme="poisson"))
    assert est.status == "nonfinite"
    frac = np.mean(np.isnan(est.replicates))
    assert abs(frac - math.exp(-2)) <= 5 * math.sqrt(math.exp(-2) / 300)
