"""A generic NUTS runner for NumPyro models, with ArviZ convergence diagnostics.

:func:`run_nuts` runs NumPyro's ``MCMC`` with a ``NUTS`` kernel on the model's potential
energy in float64 (scoped, never process-wide) and returns a :class:`NUTSResult` whose
``status`` says whether the chains mixed (R-hat) and whether the sampler diverged.

The potential is the one :func:`noisycal.engines.mle.make_objective` builds (the same
log density that :func:`~noisycal.engines.mle.fit_map` maximises, plus the Jacobian of
the unconstraining transforms); it and the chains' starting points are jitted, which
avoids NumPyro's op-by-op model initialisation. Draws are mapped back to the constrained
scale, deterministic sites included.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._jax import as_key, x64
from .._typing import Seed
from .._validation import check_choice, check_int
from .._warnings import ConvergenceWarning
from .mle import _user_stacklevel, check_model_inputs

__all__ = ["NUTSResult", "run_nuts", "diagnostics_table"]


def _arviz() -> Any:
    """Import ArviZ lazily, without letting its once-a-day import notice escape.

    ArviZ 0.2x emits a ``FutureWarning`` about its refactor on the first import of the
    day; it says nothing about the user's analysis, so it is silenced for the import only.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning
        )
        import arviz

    return arviz


def _inference_data(samples: Mapping[str, np.ndarray],
                    sample_stats: Mapping[str, np.ndarray] | None = None) -> Any:
    az = _arviz()
    return az.from_dict(posterior=dict(samples), sample_stats=dict(sample_stats or {}))


def diagnostics_table(samples: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Per-entry posterior summaries and convergence diagnostics.

    Parameters
    ----------
    samples : dict of str to ndarray
        Draws with leading ``(chain, draw)`` axes.

    Returns
    -------
    pandas.DataFrame
        One row per scalar entry (``'W[0, 1]'``), with columns ``mean``, ``sd``,
        ``mcse_mean``, ``ess_bulk``, ``ess_tail`` and ``r_hat`` (rank-normalised split
        R-hat and ESS of Vehtari et al. 2021, computed by ArviZ). Entries that do not
        vary have NaN diagnostics; ``r_hat`` is NaN with a single chain, and every
        diagnostic is NaN with fewer than 4 draws.
    """
    az = _arviz()
    samples = {k: np.asarray(v, dtype=np.float64) for k, v in samples.items()}
    columns = ["mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]
    if not samples:
        return pd.DataFrame(columns=columns)
    n_chains, n_draws = next(iter(samples.values())).shape[:2]
    idata = az.from_dict(posterior=samples)
    stats = {}
    enough = n_draws >= 4
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        # constant entries (e.g. a fixed deterministic) give NaN diagnostics, not warnings
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        if enough:
            stats["mcse_mean"] = az.mcse(idata, method="mean")
            stats["ess_bulk"] = az.ess(idata, method="bulk")
            stats["ess_tail"] = az.ess(idata, method="tail")
        if enough and n_chains >= 2:
            stats["r_hat"] = az.rhat(idata)
    rows = []
    for name, draws in samples.items():
        shape = draws.shape[2:]
        flat = draws.reshape(n_chains * n_draws, -1)
        labels = [name] if not shape else [
            f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)
        ]
        per = {col: np.ravel(np.asarray(ds[name].values, dtype=np.float64))
               for col, ds in stats.items()}
        for j, label in enumerate(labels):
            row = {"parameter": label, "mean": float(flat[:, j].mean()),
                   "sd": float(flat[:, j].std(ddof=1)) if flat.shape[0] > 1 else math.nan}
            for col in columns[2:]:
                row[col] = float(per[col][j]) if col in per else math.nan
            rows.append(row)
    return pd.DataFrame(rows, columns=["parameter", *columns]).set_index("parameter")


@dataclass(frozen=True, eq=False)
class NUTSResult:
    """Result of :func:`run_nuts`.

    Attributes
    ----------
    samples : dict of str to ndarray
        Posterior draws of every latent and deterministic site, with leading
        ``(chain, draw)`` axes.
    diagnostics : pandas.DataFrame
        One row per scalar entry: ``mean``, ``sd``, ``mcse_mean``, ``ess_bulk``,
        ``ess_tail``, ``r_hat``.
    num_divergences : int
        Divergent transitions after warmup, all chains together.
    max_rhat : float
        Largest R-hat over entries (NaN entries ignored).
    min_ess_bulk : float
        Smallest bulk effective sample size over entries.
    status : {'ok', 'not_converged'}
        ``'not_converged'`` when ``max_rhat > rhat_threshold`` or there were divergences.
    message : str
        What went wrong, if anything.
    num_chains, num_warmup, num_samples : int
        The run's sizes.
    rhat_threshold : float
        The R-hat threshold ``status`` used.
    diverging : ndarray of shape (num_chains, num_samples)
        Which transitions diverged.
    """

    samples: dict[str, np.ndarray] = field(repr=False)
    diagnostics: pd.DataFrame = field(repr=False)
    num_divergences: int
    max_rhat: float
    min_ess_bulk: float
    status: str
    message: str
    num_chains: int
    num_warmup: int
    num_samples: int
    rhat_threshold: float = 1.01
    diverging: np.ndarray | None = field(default=None, repr=False)

    @property
    def converged(self) -> bool:
        """Whether ``status == 'ok'``."""
        return self.status == "ok"

    def flat_samples(self) -> dict[str, np.ndarray]:
        """Draws with the chain and draw axes merged: ``(num_chains * num_samples, ...)``."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def summary(self) -> pd.DataFrame:
        """The ``diagnostics`` table."""
        return self.diagnostics

    def to_arviz(self) -> Any:
        """The draws as an ``arviz.InferenceData`` (posterior and ``diverging``)."""
        stats = None if self.diverging is None else {"diverging": self.diverging}
        return _inference_data(self.samples, stats)

    to_inference_data = to_arviz


def run_nuts(
    model: Callable[..., Any],
    *,
    model_args: tuple = (),
    model_kwargs: Mapping[str, Any] | None = None,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    seed: Seed = 0,
    progress_bar: bool = True,
    init_params: Mapping[str, Any] | None = None,
    chain_method: str = "sequential",
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    dense_mass: bool = False,
    rhat_threshold: float = 1.01,
) -> NUTSResult:
    """Sample a NumPyro model's posterior with NUTS, in float64.

    Parameters
    ----------
    model : callable
        A NumPyro model with continuous latent sites.
    model_args : tuple, default=()
        Positional arguments of the model (its data).
    model_kwargs : dict or None, default=None
        Keyword arguments of the model.
    num_chains : int, default=4
        Number of chains.
    num_warmup : int, default=1000
        Warmup (adaptation) iterations per chain, discarded.
    num_samples : int, default=1000
        Kept draws per chain.
    seed : int or jax key, default=0
        Randomness of initialisation and sampling; same seed, same draws.
    progress_bar : bool, default=True
        Show NumPyro's progress bar.
    init_params : dict or None, default=None
        Initial *constrained* values by site name (the same for every chain); sites left
        out (all of them when None) start uniformly in (-2, 2) on the unconstrained
        scale, independently for each chain.
    chain_method : {'sequential', 'vectorized', 'parallel'}, default='sequential'
        How chains run. ``'parallel'`` needs as many JAX devices as chains (noisycal
        never changes the device count; set it in your own script if you want it).
    target_accept_prob : float, default=0.8
        Target acceptance probability of step-size adaptation.
    max_tree_depth : int, default=10
        Maximum NUTS tree depth.
    dense_mass : bool, default=False
        Adapt a dense mass matrix instead of a diagonal one.
    rhat_threshold : float, default=1.01
        ``status`` is ``'not_converged'`` when the largest R-hat exceeds it (R-hat needs
        at least 2 chains; with one chain it is NaN and not checked).

    Returns
    -------
    NUTSResult
        Draws, diagnostics and convergence status.

    Raises
    ------
    ValueError
        If an argument is invalid.

    Warns
    -----
    ConvergenceWarning
        When R-hat exceeds ``rhat_threshold`` or there were divergent transitions.
    """
    check_model_inputs(model, model_args, model_kwargs, init_params)
    num_chains = check_int(num_chains, "num_chains", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=0)
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    max_tree_depth = check_int(max_tree_depth, "max_tree_depth", minimum=1)
    check_choice(chain_method, "chain_method", ("sequential", "vectorized", "parallel"))
    if not isinstance(progress_bar, bool | np.bool_):
        raise ValueError(f"progress_bar must be True or False, got {progress_bar!r}")
    if not isinstance(dense_mass, bool | np.bool_):
        raise ValueError(f"dense_mass must be True or False, got {dense_mass!r}")
    if (isinstance(target_accept_prob, bool) or not isinstance(target_accept_prob, int | float)
            or not 0.0 < target_accept_prob < 1.0):
        raise ValueError(f"target_accept_prob must be in (0, 1), got {target_accept_prob!r}")
    if (isinstance(rhat_threshold, bool) or not isinstance(rhat_threshold, int | float)
            or not rhat_threshold > 1.0):
        raise ValueError(f"rhat_threshold must be a number > 1, got {rhat_threshold!r}")
    key = as_key(seed)

    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    from .mle import make_objective

    with x64():
        key_run, key_init = jax.random.split(key)
        # the model's log density on a flat unconstrained vector, built and initialised
        # with jitted functions (NumPyro's own initialisation runs op by op)
        obj = make_objective(model, model_args=model_args, model_kwargs=model_kwargs,
                             init_params=init_params, prior=True, jacobian=True,
                             rng_key=key_init, init_strategy="uniform")
        check = jax.jit(jax.value_and_grad(obj.potential))
        starts = []
        for chain_key in jax.random.split(key_init, num_chains):
            for attempt_key in jax.random.split(chain_key, 100):
                x = obj.init(attempt_key)
                pe, grad = check(x)
                if bool(jnp.isfinite(pe)) and bool(jnp.all(jnp.isfinite(grad))):
                    break
            else:
                raise ValueError(
                    "could not find initial parameters with a finite log density and "
                    "gradient in 100 attempts; check the model and its data, or pass "
                    "init_params"
                )
            starts.append(x)
        x_init = jnp.stack(starts) if num_chains > 1 else starts[0]
        kernel = NUTS(potential_fn=jax.jit(obj.potential),
                      target_accept_prob=float(target_accept_prob),
                      max_tree_depth=max_tree_depth, dense_mass=bool(dense_mass))
        mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples,
                    num_chains=num_chains, chain_method=chain_method,
                    progress_bar=bool(progress_bar))
        mcmc.run(key_run, init_params=x_init)
        flat = mcmc.get_samples(group_by_chain=True)
        constrained = jax.jit(jax.vmap(jax.vmap(obj.constrain)))(flat)
        samples = {k: np.asarray(v) for k, v in constrained.items()}
        extra = mcmc.get_extra_fields(group_by_chain=True)
        diverging = np.asarray(extra["diverging"], dtype=bool) if "diverging" in extra else None

    return _result(samples, diverging, num_chains=num_chains, num_warmup=num_warmup,
                   num_samples=num_samples, rhat_threshold=float(rhat_threshold))


def _result(samples: dict[str, np.ndarray], diverging: np.ndarray | None, *, num_chains: int,
            num_warmup: int, num_samples: int, rhat_threshold: float) -> NUTSResult:
    table = diagnostics_table(samples)
    rhat = table["r_hat"].to_numpy(dtype=np.float64)
    ess = table["ess_bulk"].to_numpy(dtype=np.float64)
    max_rhat = float(np.nanmax(rhat)) if np.any(np.isfinite(rhat)) else math.nan
    min_ess = float(np.nanmin(ess)) if np.any(np.isfinite(ess)) else math.nan
    n_div = int(diverging.sum()) if diverging is not None else 0
    problems = []
    if max_rhat > rhat_threshold:
        worst = str(table["r_hat"].idxmax())
        problems.append(f"max R-hat {max_rhat:.3f} (at {worst}) exceeds {rhat_threshold:g}")
    if n_div > 0:
        problems.append(f"{n_div} divergent transition(s) after warmup")
    status = "not_converged" if problems else "ok"
    message = "" if num_chains > 1 else "R-hat needs at least 2 chains; it was not checked"
    if problems:
        message = ("NUTS: " + "; ".join(problems)
                   + "; run longer chains, raise target_accept_prob or reparameterise")
        warnings.warn(message, ConvergenceWarning, stacklevel=_user_stacklevel())
    return NUTSResult(
        samples=samples, diagnostics=table, num_divergences=n_div, max_rhat=max_rhat,
        min_ess_bulk=min_ess, status=status, message=message, num_chains=num_chains,
        num_warmup=num_warmup, num_samples=num_samples, rhat_threshold=rhat_threshold,
        diverging=diverging,
    )
