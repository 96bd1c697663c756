"""The progress-bar path of NUTS compiles its chunks per warm-up length: NumPyro's sample
kernel reads the warm-up length and adaptation schedule its init kernel last set when a
program is traced, so a chunk compiled for one warm-up must not be reused for another."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from noisycal.engines.density.nuts import run_nuts
from noisycal.exceptions import ConvergenceWarning


def normal_mean(y):
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@pytest.mark.parametrize("chain_method", ["sequential", "vectorized"])
def test_a_second_warmup_of_the_same_chunk_size_adapts_as_without_a_bar(chain_method):
    y = np.random.default_rng(0).normal(1.0, 1.0, 40)
    kw = dict(model_args=(y,), num_chains=2, num_samples=20, seed=3,
              chain_method=chain_method, rhat_threshold=1.5, cache=True)
    # warm-ups 60 and 43 advance in chunks of 3 (ceil(n / 20)): the second run's chunks
    # must not be the first run's programs, whose adaptation ends at 60
    with warnings.catch_warnings():   # short chains: their statuses are not the point
        warnings.simplefilter("ignore", ConvergenceWarning)
        run_nuts(normal_mean, num_warmup=60, progress_bar=True, **kw)
        shown = run_nuts(normal_mean, num_warmup=43, progress_bar=True, **kw)
        quiet = run_nuts(normal_mean, num_warmup=43, progress_bar=False, **kw)
    np.testing.assert_allclose(shown.samples["mu"], quiet.samples["mu"], rtol=1e-9)
