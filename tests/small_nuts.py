"""The NUTS settings shared by the test files that fit a small two-class Dawid–Skene model.

A design of two classes and three annotators has at most eight rating patterns, padded to
the smallest bucket of pattern counts, so the compiled sampler of every such fit has the
same shapes and depends only on the sampler settings (chains, warm-up, draws). The test
files that only need *some* short NUTS fit of such a design use these settings: the sampler
programs of noisycal's own models are kept, so the program compiles once per test process
(again only after ``conftest.py`` dropped JAX's caches), where each NUTS compilation costs
about 7 s on the 2-core CI machine. Files that test the sampler's lengths themselves
(extension, continuation, the progress bar's chunks) keep their own.
"""

from __future__ import annotations

#: Two short chains: enough draws for credible intervals and posterior checks, not for
#: strict R-hat thresholds (the files that use it loosen the threshold or ignore it).
TWO_CHAINS = {"num_chains": 2, "num_warmup": 150, "num_samples": 100}
#: One chain (no between-chain R-hat: the status is ``diagnostics_unavailable``).
ONE_CHAIN = {"num_chains": 1, "num_warmup": 50, "num_samples": 50}
