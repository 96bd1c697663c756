"""Seeds: the NumPy split of an int seed gives JAX's keys (noisycal._util.jax)."""

import numpy as np
import pytest

import jax

import noisycal as nc
from noisycal._util.jax import as_key, as_numpy_rng, split_seed

SEEDS = [0, 1, 5, 123456789, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40 + 7, -1, -3, -2**31,
         2**62, -2**63, 2**63 - 1, *np.random.default_rng(0).integers(-2**62, 2**62, 100)]


@pytest.mark.parametrize("x64", [False, True])
def test_split_seed_gives_jax_split_keys(x64):
    with jax.enable_x64(x64):
        for seed in SEEDS:
            want = np.asarray(jax.random.key_data(jax.random.split(as_key(int(seed)), 3)))
            np.testing.assert_array_equal(split_seed(int(seed), 3), want, err_msg=str(seed))
    assert split_seed(jax.random.key(0)) is None
    with pytest.raises(ValueError, match="seed"):
        split_seed(2**63)


def test_a_key_s_data_seeds_the_same_numpy_generator_as_the_key():
    data = split_seed(11)[0]
    key = jax.random.wrap_key_data(data)
    assert as_numpy_rng(data).integers(0, 2**62) == as_numpy_rng(key).integers(0, 2**62)


def test_an_em_fit_is_the_one_seeded_through_jax(monkeypatch):
    """The fit (random starts, bootstrap refits) with the NumPy split equals the fit with
    JAX's split, number for number."""
    from noisycal._util import jax as jax_util

    conf = np.tile([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], (4, 1, 1))
    ann = nc.simulate.dawid_skene(300, [0.3, 0.3, 0.4], conf, p_rate=0.7, seed=2).annotations
    em = nc.engines.EM(n_boot=5)
    fast = nc.DawidSkene().fit(ann, method=em, seed=7)
    monkeypatch.setattr(jax_util, "split_seed", lambda seed, num=2: None)
    slow = nc.DawidSkene().fit(ann, method=em, seed=7)
    np.testing.assert_array_equal(fast.details["start_objectives"],
                                  slow.details["start_objectives"])
    np.testing.assert_array_equal(fast.confusion, slow.confusion)
    np.testing.assert_array_equal(fast.draws["confusion"], slow.draws["confusion"])
