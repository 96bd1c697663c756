"""The true-label ECE: the ECE against labels drawn from the annotator distribution.

It is the metric of Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous
Ground Truth"."""

from __future__ import annotations

import numpy as np

import jax

from .._util.jax import as_key, as_numpy_rng
from .._util.types import ArrayLike, Seed
from .._util.validation import PROB_ATOL, check_choice, check_int, check_level, check_seed
from ..intervals.estimate import Estimate
from ..intervals.options import Bootstrap, IntervalOption, Inversion, as_interval
from .binned.bins import group_scores, make_binned
from .binned.estimate import binned_estimate
from .ece import _doc, check_binning, resolve_estimator
from .inputs import resolve_inputs, with_target_status
from .inputs import resolve_kind as _resolve_kind

__all__ = ["true_label_ece", "TRUE_LABEL_INTERVALS", "TRUE_LABEL_UNUSED"]

#: The interval kinds of :func:`true_label_ece`.
TRUE_LABEL_INTERVALS = (Inversion, Bootstrap)

#: The fields of :data:`TRUE_LABEL_INTERVALS` the true-label ECE does not use.
TRUE_LABEL_UNUSED = {Bootstrap: {
    "rebin": "its bins are held fixed (the label draws share them)",
    "devices": "its bootstrap runs on one device"}}


def _class_indices(value: ArrayLike, name: str, shape: tuple[int, ...], n_classes: int
                   ) -> np.ndarray:
    """``value`` as an int array of ``shape`` with entries in ``0 .. n_classes - 1``."""
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or (
            np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr))
            and np.all(arr == np.round(arr)))):
        raise ValueError(f"{name} must hold class indices (integers), got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name} must hold class indices in 0..{n_classes - 1} (the "
                         f"columns of probs), got values in {int(arr.min())}.."
                         f"{int(arr.max())}")
    return arr.astype(np.int64)


def _label_draws(S: np.ndarray, n_draws: int, key: jax.Array) -> np.ndarray:
    """(n_draws, n) labels drawn from the rows of S (inverse-CDF sampling)."""
    rng = as_numpy_rng(key)
    cum = np.cumsum(np.clip(S, 0.0, None), axis=1)
    cum /= cum[:, -1:]
    u = rng.random((n_draws, S.shape[0]))
    return np.minimum((u[:, :, None] >= cum[None, :, :]).sum(axis=2), S.shape[1] - 1)


@_doc
def true_label_ece(probs: ArrayLike | None = None, target: object = None, *,
                   logits: ArrayLike | None = None, classes: ArrayLike | None = None,
                   items: ArrayLike | None = None, form: str = "mc", n_draws: int = 100,
                   draws: ArrayLike | None = None, predicted: ArrayLike | None = None,
                   n_bins: int = 15, kind: str | None = None, strategy: str = "uniform",
                   interval: IntervalOption | str | None = "auto", level: float = 0.9,
                   seed: Seed = 0, cluster: ArrayLike | None = None) -> Estimate:
    r"""True-label ECE: the ECE against labels drawn from the annotator distribution.

    Tao, Luo, Dong & Xu (2026), "Confidence Calibration under Ambiguous Ground Truth",
    Section 3.2. ``target`` must hold annotator distributions pi-hat_i (rows on the
    simplex, e.g. :func:`noisycal.targets.soft`).

    Parameters
    ----------
    {common}
    form : {'mc', 'expected'}, default='mc'
        'mc': draw :math:`\tilde y_i^{(s)} \sim \hat\pi_i` for s = 1..n_draws, compute the
        ECE of each draw with the same bins, and average the ECEs (the draws are not
        pooled). 'expected': the ECE with the soft target itself,
        :math:`\sum_b \frac{|B_b|}{n}|\mathrm{mean}_{i\in B_b}\hat\pi_{i\hat c_i} - \bar c_b|`,
        the deterministic version; by Jensen the 'mc' form's expectation is at least it.
    n_draws : int, default=100
        Number of label draws S for ``form='mc'``. The seed also seeds the draws.
    draws : array-like of shape (S, n_items), optional
        Given label draws for ``form='mc'`` instead of seeded ones (to reproduce a
        published run, or to share draws with another tool): ``draws[s, i]`` is the class
        index (a column of ``probs``, 0 .. n_classes - 1) of draw s of item i, in the row
        order of ``probs``. ``n_draws`` is then ignored (S is ``draws.shape[0]``) and
        ``seed`` seeds only the bootstrap.
    predicted : array-like of shape (n_items,), optional
        Top-label only: the class scored for each item (a column index, in the row order
        of ``probs``), with confidence ``probs[i, predicted[i]]``. Default ``argmax``
        of ``probs`` (lowest index on ties). A top-label recalibration map (histogram
        binning, IR-Soft) keeps the *uncalibrated* predicted class and changes only its
        confidence, as in "Confidence Calibration under Ambiguous Ground Truth"; pass
        that class here to score it so even where its rebuilt vector has another argmax.
    interval : Inversion, Bootstrap, str or None, default='auto'
        'auto': ``Inversion()`` (the inverted-test interval of :func:`ece`, with its
        median-unbiased estimate) for ``form='expected'``, ``Bootstrap()`` for
        ``form='mc'``, whose value averages the plug-in ECEs of the draws and so has no
        one-value-per-item form to invert. The bootstrap keeps the bins fixed (no
        ``rebin``) and runs on one device (no ``devices``).

    Returns
    -------
    {returns}
        The bootstrap resamples items and keeps each item's draws, so the interval
        reflects sampling of items, not the Monte-Carlo error of the draws.

    Notes
    -----
    {bootstrap}
    """
    check_choice(form, "form", ("mc", "expected"))
    interval = as_interval(interval, TRUE_LABEL_INTERVALS,
                           default=Inversion() if form == "expected" else Bootstrap(),
                           where="true_label_ece", unused=TRUE_LABEL_UNUSED)
    if isinstance(interval, Inversion) and form != "expected":
        raise ValueError("interval=Inversion() needs form='expected' (one target value per "
                         "item); the 'mc' form averages the ECEs of label draws, use "
                         "interval=Bootstrap()")
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    if draws is not None and form != "mc":
        raise ValueError("draws= are label draws of the 'mc' form; form='expected' uses "
                         "the distributions themselves")
    P, _, S, binary = resolve_inputs(probs, target, logits, classes=classes, items=items)
    n_bins = check_binning(n_bins, P.shape[0], strategy, "l1", False)
    level = check_level(level)
    check_seed(seed)
    kind = _resolve_kind(kind, binary, P.shape[1])
    n, K = P.shape
    if predicted is not None:
        if kind != "top_label":
            raise ValueError(f"predicted= is the scored class of the top-label ECE; it "
                             f"does not apply to kind={kind!r}")
        predicted = _class_indices(predicted, "predicted", (n,), K)
    given_draws = draws is not None
    if given_draws:
        if np.ndim(draws) != 2 or np.shape(draws)[0] < 1:
            raise ValueError(f"draws must have shape (S, {n}) with S >= 1 (one row of class "
                             f"indices per draw), got shape {np.shape(draws)}")
        draws = _class_indices(draws, "draws", (np.shape(draws)[0], n), K)
        n_draws = int(draws.shape[0])
    if np.any(S < -PROB_ATOL) or np.any(np.abs(S.sum(1) - 1.0) > PROB_ATOL):
        raise ValueError("target rows must be probability distributions (non-negative, "
                         "summing to 1) for the true-label ECE")
    draw_key, boot_key = jax.random.split(as_key(seed))
    if draws is None and form == "mc":
        draws = _label_draws(S, n_draws, draw_key)
    conf, tgt, groups = group_scores(P, S, kind, draws=draws, pred=predicted)
    binned = make_binned(conf, tgt, n_bins, strategy, with_sq=False)
    label = {"top_label": "true-label ECE", "positive_class": "positive-class true-label ECE",
             "classwise": "classwise true-label ECE"}[kind]
    est = binned_estimate(binned, groups, name=label, reduce="ece", norm="l1", debias=False,
                          interval=interval, level=level, seed=boot_key, cluster=cluster,
                          estimator=resolve_estimator(
                              None, None if interval is None else interval.name, False),
                          details={"kind": kind, "form": form, "n_draws": n_draws
                                    if form == "mc" else None, "strategy": strategy,
                                    "target_kind": "sampled" if form == "mc" else "soft",
                                    "given_draws": given_draws,
                                    "predicted": "given" if predicted is not None
                                    else "argmax"})
    return with_target_status(est, target, probs, logits)
