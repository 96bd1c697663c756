"""The cell grid of the LWCal protocol: build, run (in parallel, resumably), store tidy.

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"
(Section IV): a cell is (base learner, task, seed, noise mode, noise rate). In each cell
one base learner is fitted to the noisy training labels and every method is fitted to the
same noisy calibration scores and labels and scored on the clean test labels. The results
table has one row per (cell, method).

- :func:`main_cells`: the random-forest study, 9 tasks x 6 seeds x 2 modes x 4 noisy
  rates = 432 noisy cells, plus one clean cell (``mode='none'``, ``rate=0``) per task and
  seed, stored but left out of the headline means. Cells are ordered seed first, so a
  partial run holds whole seeds.
- :func:`robustness_cells`: 3 learners x 9 tasks x seeds 0-2 x 2 modes x rates
  {0.2, 0.3} = 324 cells (the paper's count; its composition is not stated, and this one
  is ours). Its random-forest cells are main-study cells (same seeds and noise), so they
  are run once.
- :func:`small_cells`: a quick grid for the vignette and CI.
"""

from __future__ import annotations

import csv
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pandas as pd

from .._util.validation import check_choice, check_int
from ..calibrators.lwcal import disagreement
from .evaluate import CELL_KEYS, evaluate
from .methods import LEARNERS, fit_method, make_learner, method_specs
from .noise import MODES, check_splits, noisy_labels, split_indices
from .tasks import TASK_NAMES, load_task

__all__ = ["SEEDS", "NOISY_RATES", "SMALL_TASKS", "Cell", "main_cells", "robustness_cells",
           "small_cells", "cell_methods", "run_cell", "run_grid", "read_results", "COLUMNS"]

#: Seeds of the main study (the paper's six seeds are not given; ours).
SEEDS = (0, 1, 2, 3, 4, 5)
#: Noisy rates of the headline means.
NOISY_RATES = (0.1, 0.2, 0.3, 0.4)
#: Tasks of the quick grid.
SMALL_TASKS = ("breast_cancer", "digits_high", "synthetic_imbalance")

Cell = tuple  # (learner, task, seed, mode, rate), in the order of CELL_KEYS

#: Columns of the results table.
COLUMNS = (*CELL_KEYS, "method", "ece", "brier", "nll", "auc", "ece_neg", "ece_pos", "status",
           "message", "n_train", "n_cal", "n_test", "n_pos_test", "flip_train", "flip_cal",
           "disagreement", "seconds")


def main_cells(*, tasks: Sequence[str] = TASK_NAMES, seeds: Sequence[int] = SEEDS,
               modes: Sequence[str] = MODES, rates: Sequence[float] = NOISY_RATES,
               clean: bool = True, learner: str = "rf") -> list[Cell]:
    """Cells of the main study, seed first.

    Parameters
    ----------
    tasks, seeds, modes, rates
        The grid (defaults: the paper's 9 x 6 x 2 x 4).
    clean : bool, default=True
        Add one clean cell (``mode='none'``, ``rate=0.0``) per task and seed.
    learner : {'rf', 'et', 'gb'}, default='rf'

    Returns
    -------
    list of tuple
        ``(learner, task, seed, mode, rate)``.
    """
    check_choice(learner, "learner", LEARNERS)
    cells = []
    for s in seeds:
        for t in tasks:
            check_choice(t, "tasks", TASK_NAMES)
            if clean:
                cells.append((learner, t, int(s), "none", 0.0))
            for m in modes:
                check_choice(m, "modes", MODES)
                cells += [(learner, t, int(s), m, float(r)) for r in rates]
    return cells


def robustness_cells(*, tasks: Sequence[str] = TASK_NAMES, seeds: Sequence[int] = (0, 1, 2),
                     modes: Sequence[str] = MODES, rates: Sequence[float] = (0.2, 0.3),
                     learners: Sequence[str] = LEARNERS) -> list[Cell]:
    """Cells of the base-learner robustness study (324 by default), seed first.

    Parameters
    ----------
    tasks, seeds, modes, rates, learners
        The grid.

    Returns
    -------
    list of tuple
    """
    return [c for s in seeds for lr in learners
            for c in main_cells(tasks=tasks, seeds=(s,), modes=modes, rates=rates,
                                clean=False, learner=lr)]


def small_cells() -> list[Cell]:
    """The quick grid: 3 tasks x seeds (0, 1) x 2 modes x rates {0.2, 0.3}, random forest."""
    return main_cells(tasks=SMALL_TASKS, seeds=(0, 1), rates=(0.2, 0.3), clean=False)


def cell_methods(cell: Cell, *, gate_grid: bool = True) -> list[str]:
    """Names of the methods a cell runs (the gate variants on random-forest cells only).

    Parameters
    ----------
    cell : tuple
        ``(learner, task, seed, mode, rate)``.
    gate_grid : bool, default=True

    Returns
    -------
    list of str
    """
    return list(method_specs(gate_grid=gate_grid and cell[0] == "rf"))


def run_cell(cell: Cell, *, gate_grid: bool = True, trim_retain: float = 0.9,
             platt_input: str = "probability", neg_ratio: float = 0.5,
             nll_clip: float = 1e-15, methods: Sequence[str] | None = None,
             splits: Mapping[str, object] | None = None) -> list[dict]:
    """Fit the base learner of one cell and every method on it; score on clean labels.

    Parameters
    ----------
    cell : tuple
        ``(learner, task, seed, mode, rate)``; ``mode='none'`` with ``rate=0`` is the clean
        cell.
    gate_grid : bool, default=True
        Add the gate-sensitivity variants (random-forest cells only).
    trim_retain, platt_input
        As in :func:`noisycal.experiments.methods.method_specs`.
    neg_ratio : float, default=0.5
        Asymmetric noise: negatives flip at ``neg_ratio * rate``.
    nll_clip : float, default=1e-15
        As in :func:`noisycal.experiments.evaluate.evaluate`.
    methods : sequence of str, optional
        Run only these methods (default: all of :func:`cell_methods`); the base learner
        is deterministic given the cell, so rows added later match the earlier ones.
    splits : mapping, optional
        Given ``{'train': idx, 'cal': idx, 'test': idx}`` item indices of the task instead
        of the seeded stratified split (:func:`noisycal.experiments.noise.split_indices`):
        non-empty, distinct indices in range, the three parts disjoint
        (:func:`noisycal.experiments.noise.check_splits`). The cell's seed still seeds the
        label noise and the base learner.

    Returns
    -------
    list of dict
        One row per method, with the columns :data:`COLUMNS`.
    """
    learner, task, seed, mode, rate = cell
    t0 = time.perf_counter()
    X, y = load_task(task)
    idx = split_indices(y, seed) if splits is None else check_splits(
        splits, y.size, ("train", "cal", "test"))
    y_tr, y_cal_clean, y_te = y[idx["train"]], y[idx["cal"]], y[idx["test"]]
    if mode == "none":
        if rate != 0:
            raise ValueError(f"cell {cell}: mode 'none' is the clean cell, rate must be 0")
        y_tr_noisy, y_cal = y_tr, y_cal_clean
    else:
        kw = dict(seed=seed, task=task, mode=mode, rate=rate, neg_ratio=neg_ratio)
        y_tr_noisy = noisy_labels(y_tr, part="train", **kw)
        y_cal = noisy_labels(y_cal_clean, part="cal", **kw)
    model = make_learner(learner, seed).fit(X[idx["train"]], y_tr_noisy)
    if list(model.classes_) != [0, 1]:
        raise ValueError(f"cell {cell}: the noisy training labels hold one class only")
    p_cal = model.predict_proba(X[idx["cal"]])[:, 1]
    p_te = model.predict_proba(X[idx["test"]])[:, 1]
    common = dict(zip(CELL_KEYS, cell, strict=True))
    common.update(n_train=idx["train"].size, n_cal=idx["cal"].size, n_test=idx["test"].size,
                  n_pos_test=int(y_te.sum()), flip_train=float(np.mean(y_tr_noisy != y_tr)),
                  flip_cal=float(np.mean(y_cal != y_cal_clean)),
                  disagreement=disagreement(p_cal, y_cal))
    specs = method_specs(trim_retain=trim_retain, platt_input=platt_input,
                         gate_grid=gate_grid and learner == "rf")
    if methods is not None:
        unknown = set(methods) - set(specs)
        if unknown:
            raise ValueError(f"methods: unknown for cell {cell}: {sorted(unknown)}")
        specs = {k: v for k, v in specs.items() if k in methods}
    rows = []
    for name, spec in specs.items():
        p_hat, status, message = fit_method(spec, p_cal, y_cal, y_cal_clean, p_te)
        rows.append({**common, "method": name, **evaluate(p_hat, y_te, nll_clip=nll_clip),
                     "status": status, "message": message})
    secs = time.perf_counter() - t0
    for r in rows:
        r["seconds"] = secs
    return rows


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """The results table written by :func:`run_grid` (empty with its columns if absent)."""
    p = Path(path)
    if not p.exists() or p.stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    df = pd.read_csv(p, dtype={"message": str, "status": str, "mode": str})
    df["message"] = df["message"].fillna("")
    return df


def _done(df: pd.DataFrame) -> dict[Cell, set[str]]:
    """The methods already stored for each cell."""
    out: dict[Cell, set[str]] = {}
    for a, b, c, d, e, m in df[[*CELL_KEYS, "method"]].itertuples(index=False):
        out.setdefault((str(a), str(b), int(c), str(d), float(e)), set()).add(str(m))
    return out


def _append(path: Path, rows: list[dict]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        if new:
            w.writeheader()
        w.writerows(rows)


def run_grid(cells: Iterable[Cell], out: str | os.PathLike, *, jobs: int = 2,
             progress: bool = True, **cell_kwargs: object) -> pd.DataFrame:
    """Run the cells not yet in ``out`` and append their rows to it.

    Each finished cell's rows are appended at once, so an interrupted run resumes where
    it stopped: cells already in the file are skipped, and a cell that lacks some of its
    methods (for example a method added to the registry since) runs those only.

    Parameters
    ----------
    cells : iterable of tuple
        ``(learner, task, seed, mode, rate)``.
    out : path
        The results CSV (created if absent).
    jobs : int, default=2
        Worker processes (1: run in this process).
    progress : bool, default=True
        Print one line per finished cell to stderr, with the elapsed time and an estimate
        of the time left.
    **cell_kwargs
        Passed to :func:`run_cell` (``gate_grid``, ``trim_retain``, ``platt_input``,
        ``neg_ratio``, ``nll_clip``), and ``splits``: a mapping from ``(task, seed)`` to
        that task's given ``{'train', 'cal', 'test'}`` indices (``splits=`` of
        :func:`run_cell`), required for every cell's task and seed when given. The
        results file does not record the splits: resume a run with the same ones.

    Returns
    -------
    pandas.DataFrame
        The whole results table after the run.
    """
    jobs = check_int(jobs, "jobs", minimum=1)
    given = cell_kwargs.pop("splits", None)
    unknown = set(cell_kwargs) - {"gate_grid", "trim_retain", "platt_input", "neg_ratio",
                                  "nll_clip"}
    if unknown:
        raise ValueError(f"unknown keyword(s) for run_cell: {sorted(unknown)}")
    if given is not None and not isinstance(given, Mapping):
        raise ValueError(f"splits must map (task, seed) to a split's indices, got "
                         f"{type(given).__name__}")
    path = Path(out)
    done = _done(read_results(path))
    gate = bool(cell_kwargs.get("gate_grid", True))
    todo: list[tuple[Cell, list[str] | None]] = []
    for c in dict.fromkeys(tuple(c) for c in cells):
        have = done.get(c, set())
        missing = [m for m in cell_methods(c, gate_grid=gate) if m not in have]
        if missing:
            todo.append((c, None if not have else missing))
    split_of: dict[Cell, object] = {}
    if given is not None:
        absent = sorted({(c[1], c[2]) for c, _ in todo} - set(given))
        if absent:
            raise ValueError(f"splits: no split for (task, seed) {absent}")
        split_of = {c: given[(c[1], c[2])] for c, _ in todo}
    t0 = time.perf_counter()

    def report(k: int, cell: Cell, only: list[str] | None) -> None:
        if progress:
            el = time.perf_counter() - t0
            eta = el / k * (len(todo) - k)
            what = "" if only is None else f" (adding {', '.join(only)})"
            print(f"[{k}/{len(todo)}] {'/'.join(map(str, cell))}{what} elapsed {el:.0f}s, "
                  f"left ~{eta:.0f}s", file=sys.stderr, flush=True)

    if jobs == 1:
        for k, (cell, only) in enumerate(todo, 1):
            _append(path, run_cell(cell, methods=only, splits=split_of.get(cell),
                                   **cell_kwargs))
            report(k, cell, only)
    elif todo:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as ex:
            futs = {ex.submit(run_cell, c, methods=only, splits=split_of.get(c),
                              **cell_kwargs): (c, only) for c, only in todo}
            for k, f in enumerate(as_completed(futs), 1):
                _append(path, f.result())
                report(k, *futs[f])
    return read_results(path)
