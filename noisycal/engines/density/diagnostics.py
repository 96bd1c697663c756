"""Posterior diagnostics and conversions shared by the NUTS engines.

They are R-hat/ESS tables, the one convergence rule, equal-tailed intervals of draws and
ArviZ InferenceData.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..._util.stats import equal_tailed
from ..._util.validation import check_level
from .potential import (
    entry_names,
)


def import_arviz() -> Any:
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


def to_inference_data(samples: Mapping[str, np.ndarray],
                      sample_stats: Mapping[str, np.ndarray] | None = None) -> Any:
    """Draws as an ``arviz.InferenceData``.

    Parameters
    ----------
    samples : dict of str to ndarray
        Posterior draws with leading ``(chain, draw)`` axes.
    sample_stats : dict of str to ndarray or None, default=None
        Per-transition statistics (``diverging``, say) of shape ``(chain, draw)``.

    Returns
    -------
    arviz.InferenceData
    """
    az = import_arviz()
    return az.from_dict(posterior=dict(samples), sample_stats=dict(sample_stats or {}))


#: Fewest draws behind any equal-tailed credible interval (more at high levels, see
#: :func:`min_credible_draws`).
MIN_CREDIBLE_DRAWS = 20


def min_credible_draws(level: float) -> int:
    """Fewest posterior draws for an equal-tailed credible interval at ``level``.

    ``max(MIN_CREDIBLE_DRAWS, ceil(2 / (1 - level)))``: at least 20, and enough that
    each tail beyond the interval holds at least one draw (20 at level 0.9, 40 at 0.95,
    200 at 0.99). With fewer, the ends are the extreme draws or interpolations between
    a handful of them, and the interval can miss the posterior mean it goes with.

    Parameters
    ----------
    level : float
        Credible level, a fraction in (0, 1).

    Returns
    -------
    int

    Examples
    --------
    >>> min_credible_draws(0.9), min_credible_draws(0.95), min_credible_draws(0.99)
    (20, 40, 200)
    """
    return max(MIN_CREDIBLE_DRAWS, math.ceil(round(2.0 / (1.0 - level), 9)))


def check_credible_draws(n_draws: int, level: float, what: str) -> None:
    """Refuse a credible interval from fewer than :func:`min_credible_draws` draws.

    Parameters
    ----------
    n_draws : int
        Draws available.
    level : float
    what : str
        What holds the draws, for the message.

    Raises
    ------
    ValueError
        With fewer draws than the minimum.
    """
    need = min_credible_draws(level)
    if n_draws < need:
        raise ValueError(f"level={level:g}: {what} has {n_draws} posterior draw(s), and an "
                         f"equal-tailed credible interval at this level needs at least "
                         f"{need} (each tail must hold a draw); draw more (num_samples, "
                         "num_chains) or lower the level")


def draws_conf_int(draws: Mapping[str, np.ndarray], level: float) -> pd.DataFrame:
    """Equal-tailed intervals of draws with one leading draw axis, one row per entry.

    Parameters
    ----------
    draws : dict of str to ndarray
        Draws of each site, shape ``(n_draws, ...)``.
    level : float
        Credible level, a fraction in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Index ``parameter`` (``'W[0, 1]'``), columns ``lower`` and ``upper``.

    Raises
    ------
    ValueError
        With fewer draws than :func:`min_credible_draws` at ``level``.
    """
    level = check_level(level)
    if draws:
        check_credible_draws(int(np.shape(next(iter(draws.values())))[0]), level,
                             "the fit")
    rows = []
    for name, d in draws.items():
        d = np.asarray(d, dtype=np.float64)
        lo, hi = equal_tailed(d.reshape(d.shape[0], -1), level, axis=0)
        labels = entry_names(name, d.shape[1:])
        rows += [{"parameter": lab, "lower": float(a), "upper": float(b)}
                 for lab, a, b in zip(labels, lo, hi, strict=True)]
    return pd.DataFrame(rows, columns=["parameter", "lower", "upper"]).set_index("parameter")


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
    az = import_arviz()
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


def convergence_status(max_rhat: float, n_divergent: int, rhat_threshold: float, *,
                       worst: str | None = None, num_chains: int | None = None,
                       num_samples: int | None = None) -> tuple[str, str]:
    """The one NUTS convergence rule: R-hat strictly above the threshold, or divergences;
    an R-hat that could not be computed is not 'ok' either.

    Parameters
    ----------
    max_rhat : float
        Largest R-hat over the parameters; NaN when it could not be computed (one chain,
        fewer than 4 draws per chain, or no parameter varies).
    n_divergent : int
        Divergent transitions after warmup, all chains together.
    rhat_threshold : float
        The run is flagged when ``max_rhat > rhat_threshold`` (strictly).
    worst : str or None, default=None
        Name of the parameter with the largest R-hat, for the message.
    num_chains, num_samples : int or None, default=None
        Chains and draws per chain, to say why R-hat is NaN.

    Returns
    -------
    tuple of str
        ``('ok', '')``, ``('not_converged', message)`` or, when R-hat is NaN and nothing
        else is wrong, ``('diagnostics_unavailable', message)``: convergence was not
        checked, so it is not reported as ok.

    Examples
    --------
    >>> convergence_status(1.005, 0, 1.01)
    ('ok', '')
    >>> convergence_status(1.01, 0, 1.01)
    ('ok', '')
    >>> convergence_status(1.2, 3, 1.01)[0]
    'not_converged'
    >>> convergence_status(1.0104, 0, 1.01)[1].split(";")[0]
    'max R-hat 1.0104 exceeds 1.01'
    >>> convergence_status(float("nan"), 0, 1.01, num_chains=1)[0]
    'diagnostics_unavailable'
    """
    problems = []
    if max_rhat > rhat_threshold:
        where = f" (at {worst})" if worst else ""
        # enough digits for the printed value to exceed the threshold (1.0104, not 1.010)
        digits = next((d for d in range(3, 13) if round(max_rhat, d) > rhat_threshold), 15)
        problems.append(f"max R-hat {max_rhat:.{digits}f}{where} exceeds {rhat_threshold:g}")
    if n_divergent > 0:
        problems.append(f"{int(n_divergent)} divergent transition(s) after warmup")
    if not problems and math.isnan(max_rhat):
        return "diagnostics_unavailable", _rhat_unavailable(num_chains, num_samples)
    if not problems:
        return "ok", ""
    # no "NUTS: " prefix: DawidSkene's warning ("dawid_skene NUTS: ...") and the
    # calibration maps' message name the engine, which then read "NUTS: NUTS:"
    return "not_converged", ("; ".join(problems)
                             + "; run longer chains (num_warmup, num_samples), raise the "
                             "target acceptance probability (method=NUTS("
                             "target_accept_prob=0.95)) or reparameterise")


def _rhat_unavailable(num_chains: int | None, num_samples: int | None) -> str:
    """Why R-hat is NaN, for :func:`convergence_status`."""
    if num_chains is not None and num_chains < 2:
        why = ("R-hat compares chains, and one chain gives no between-chain R-hat (run "
               "num_chains >= 2)")
    elif num_samples is not None and num_samples < 4:
        why = (f"R-hat needs at least 4 draws per chain, got {num_samples} (raise "
               "num_samples)")
    else:
        why = "R-hat is undefined (no parameter varies between draws)"
    return why + "; convergence was not checked, so the status is not 'ok'"
