"""A sampler program traces its model once per data shapes: the potential, its start and
the constraining map are jitted functions of their own inside every NUTS program
(noisycal.engines.density.nuts_program), so a second sampler setting of the same model
(another warm-up length, the progress bar's chunks) compiles without tracing the NumPyro
model again. Before, each of the five places that evaluate the potential's gradient
traced it anew: 11 model calls for the first run, 9 for a second warm-up length and 12
for the progress bar's chunks."""

import warnings

import numpy as np

import numpyro
import numpyro.distributions as dist

import noisycal as nc


def _counting_model():
    calls = []

    def model(y):
        calls.append(1)
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    return model, calls


def _run(model, y, warmup, bar=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # 2 x 20 draws do not converge
        return nc.engines.run_nuts(model, model_args=(y,), num_chains=2, num_warmup=warmup,
                                   num_samples=20, progress_bar=bar, cache=True)


def test_a_cached_sampler_traces_its_model_once():
    model, calls = _counting_model()
    y = np.random.default_rng(0).normal(size=20)
    _run(model, y, 20)
    assert 0 < len(calls) <= 7           # site discovery, start, potential, constraining
    calls.clear()
    _run(model, y, 30)                   # another warm-up length: a new program
    assert len(calls) == 0
    _run(model, y, 30, bar=True)         # the progress bar's chunk programs
    assert len(calls) == 0
