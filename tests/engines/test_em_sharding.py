"""EM sharded over several devices equals the one-device fit.

JAX sees four CPU devices only when ``XLA_FLAGS=--xla_force_host_platform_device_count=4``
is set before it starts, so the comparison runs in a fresh Python process. EM runs on
the distinct rating patterns, padded to a multiple of the device count with empty
zero-weight items; the fits use 3 of the 4 devices, and the script checks that each case
needs padding (a pattern count not divisible by 3), with grouped prevalences and gold
items included.
"""


import pytest
from forced_devices import run_on_four_host_devices

import jax

import noisycal as nc

SCRIPT = r"""
import json, warnings
import numpy as np
import jax
import noisycal as nc

assert len(jax.devices()) == 4, jax.devices()
rng = np.random.default_rng(0)
n, J, K = 1003, 6, 3
y = rng.integers(0, K, n)
rows = []
for i in range(n):
    for j in rng.choice(J, size=rng.integers(2, 5), replace=False):
        p = np.full(K, 0.25 / (K - 1)); p[y[i]] = 0.75
        rows.append((i, j, rng.choice(K, p=p)))
item, ann, lab = (np.array(c) for c in zip(*rows))
a = nc.Annotations.from_arrays(item, ann, lab, items=np.arange(n), annotators=np.arange(J),
                               classes=np.arange(K))
groups = rng.integers(0, 2, n)
gold = {int(i): int(y[i]) for i in range(0, n, 37)}
out = {}
for name, model, kw in (("full", nc.DawidSkene(K), {}),
                        ("grouped", nc.GroupedDawidSkene(K), {"groups": groups}),
                        ("gold", nc.DawidSkene(K), {"gold": gold})):
    fits = [model.fit(a, method=nc.engines.EM(n_starts=2, max_iter=100, devices=d), seed=1,
                      **kw) for d in (None, 3)]
    assert fits[0].details["n_patterns"] % 3 != 0, (name, fits[0].details["n_patterns"])
    out[name] = {
        "post": max(float(np.max(np.abs(f.item_posterior - fits[0].item_posterior)))
                    for f in fits[1:]),
        "conf": max(float(np.max(np.abs(f.confusion - fits[0].confusion))) for f in fits[1:]),
        "prev": max(float(np.max(np.abs(f.group_prevalence - fits[0].group_prevalence)))
                    for f in fits[1:]),
        "loglik": max(abs(f.loglik - fits[0].loglik) / abs(fits[0].loglik) for f in fits[1:]),
        "n_iter": [int(f.n_iter) for f in fits],
        "status": [f.status for f in fits],
    }
# probability-scale E-step (n_items >= PROB_MIN_ITEMS, patterns not collapsed)
from noisycal.engines.em.estep import PROB_MIN_ITEMS
n2, J2 = PROB_MIN_ITEMS + 501, 300
y2 = rng.integers(0, K, n2)
item2 = np.repeat(np.arange(n2), 4)
ann2 = np.concatenate([rng.choice(J2, size=4, replace=False) for _ in range(n2)])
hit = rng.random(item2.size) < 0.8
lab2 = np.where(hit, y2[item2], rng.integers(0, K, item2.size))
a2 = nc.Annotations.from_arrays(item2, ann2, lab2, items=np.arange(n2),
                                annotators=np.arange(J2), classes=np.arange(K))
fits = [nc.DawidSkene(K).fit(a2, method=nc.engines.EM(n_starts=1, max_iter=30, devices=d),
                             seed=1) for d in (None, 3)]
assert fits[0].details["n_patterns"] >= PROB_MIN_ITEMS, fits[0].details["n_patterns"]
out["prob_scale"] = {
    "post": float(np.max(np.abs(fits[1].item_posterior - fits[0].item_posterior))),
    "conf": float(np.max(np.abs(fits[1].confusion - fits[0].confusion))),
    "prev": float(np.max(np.abs(fits[1].group_prevalence - fits[0].group_prevalence))),
    "loglik": abs(fits[1].loglik - fits[0].loglik) / abs(fits[0].loglik),
    "n_iter": [int(f.n_iter) for f in fits], "status": [f.status for f in fits]}
print("RESULT " + json.dumps(out))
"""


def test_em_on_three_devices_equals_one_device():
    out = run_on_four_host_devices(SCRIPT)
    for name, r in out.items():
        assert r["post"] < 1e-10, (name, r)
        assert r["conf"] < 1e-10, (name, r)
        assert r["prev"] < 1e-10, (name, r)
        assert r["loglik"] < 1e-12, (name, r)
        assert len(set(r["n_iter"])) == 1, (name, r)
        assert len(set(r["status"])) == 1, (name, r)


@pytest.mark.parametrize("bad", [0, len(jax.devices()) + 1, "cpu", [1, 2], True])
def test_bad_devices_raise(bad):
    a = nc.Annotations.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1])
    with pytest.raises(ValueError, match="devices"):
        nc.DawidSkene(2).fit(a, method=nc.engines.EM(devices=bad))


def test_devices_is_an_em_option():
    with pytest.raises(TypeError, match="devices"):
        nc.engines.MLE(devices=1)
