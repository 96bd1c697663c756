"""Binned calibration errors (ECE, MCE, classwise, debiased L2, true-label ECE).

Every function here compares predictions with a *target* matrix T (see
:mod:`noisycal.targets`): the bin statistic is the mean of ``T[i, k]`` over the
items in the bin (k the predicted class for top-label ECE, k fixed for classwise
and positive-class ECE). With hard labels this is the textbook ECE, with soft
labels the expected true-label ECE of Tao, Luo, Dong & Xu (2026), "Confidence
Calibration under Ambiguous Ground Truth"; with a corrected target the NC-ECE of
"Noisy-Label Calibration with Multiple Unreliable Labels" (its intervals are in
:mod:`noisycal.metrics.nc.intervals`).
"""

from __future__ import annotations

import numpy as np

from .._util.types import ArrayLike, Seed
from .._util.validation import check_choice, check_level, check_n_bins, check_seed
from ..intervals.estimate import Estimate
from ..intervals.options import (
    Bootstrap,
    Bound,
    Credible,
    IntervalOption,
    Inversion,
    Refit,
    Simultaneous,
    as_interval,
)
from .binned.backend import BinnedRequest, choose_backend
from .binned.bins import BIN_STRATEGIES
from .binned.dask import row_blocks
from .binned.estimate import binned_estimate
from .inputs import (
    check_covariance_memory,
    lean_inputs,
    resolve_inputs,
    with_target_status,
)
from .inputs import resolve_kind as _resolve_kind
from .inputs import target_kind as _target_kind
from .mce import MCE_INTERVALS, MCE_UNUSED, MIN_COUNT, mce_estimate
from .nc.assemble import (
    carries_channel_error,
    delta_cov_hook,
    nc_ece_named,
    with_channel_error,
)
from .nc.intervals import check_nc_ece_metric, nc_ece_interval

__all__ = ["ece", "mce", "resolve_inputs", "lean_inputs",
           "with_target_status", "PAPER_N_BINS",
           "INTERVALS", "ESTIMATORS", "resolve_estimator", "check_binning"]

#: Bin counts used by the four papers, keyed by a short name of each:
#: "ambiguous_ground_truth": Tao, Luo, Dong & Xu (2026), "Confidence Calibration under
#: Ambiguous Ground Truth" (15); "set_mass_conformal": "Adaptive Set-Mass Calibration with
#: Conformal Prediction" (25); "lwcal": "LWCal: Loss-Weighted Calibration for Tabular
#: Classifiers with Noisy Calibration Labels" (15); "noisy_label_calibration": "Noisy-Label
#: Calibration with Multiple Unreliable Labels" (10).
PAPER_N_BINS = {"ambiguous_ground_truth": 15, "set_mass_conformal": 25, "lwcal": 15,
                "noisy_label_calibration": 10}

#: The interval kinds :func:`ece` offers (option classes of :mod:`noisycal.intervals`;
#: ``interval=`` takes an object of one of them, its name as a shorthand, 'auto' or None).
INTERVALS = (Inversion, Bootstrap, Bound, Refit, Credible)

#: Point estimators of the binned ECE: the plug-in (biased upward near 0) and the
#: median-unbiased one of the inverted interval (:mod:`noisycal.intervals.inversion`).
ESTIMATORS = ("plug-in", "median-unbiased")


def check_binning(n_bins: object, n_items: int, strategy: object, norm: object,
                  debias: object) -> int:
    """The checked bin count of a binned ECE, after checking its other binning settings.

    Parameters
    ----------
    n_bins : int
    n_items : int
        Items of the sample (at most 10 bins per item).
    strategy : {'uniform', 'quantile'}
    norm : {'l1', 'l2'}
    debias : bool
        True only with ``norm='l2'`` (Kumar et al. 2019).

    Returns
    -------
    int
    """
    n_bins = check_n_bins(n_bins, n_items)
    check_choice(strategy, "strategy", BIN_STRATEGIES)
    check_choice(norm, "norm", ("l1", "l2"))
    if not isinstance(debias, bool | np.bool_):
        raise ValueError(f"debias must be True or False, got {debias!r}")
    if debias and norm != "l2":
        raise ValueError("debias=True is defined for norm='l2' only (Kumar et al. 2019)")
    return n_bins


def resolve_estimator(estimator: str | None, interval: str | None, debias: bool) -> str:
    """The estimator a binned metric reports, checked against its interval.

    Parameters
    ----------
    estimator : {'plug-in', 'median-unbiased'} or None
        None: 'median-unbiased' with the inverted interval, else 'plug-in' ('debiased'
        with ``debias=True``).
    interval : str or None
        The interval kind's name ('inversion' for :class:`~noisycal.intervals.Inversion`
        and for a :class:`~noisycal.intervals.Refit` that inverts).
    debias : bool

    Returns
    -------
    str
    """
    if estimator is not None:
        check_choice(estimator, "estimator", ESTIMATORS)
    if debias:
        if estimator == "median-unbiased":
            raise ValueError("estimator='median-unbiased' and debias=True are two different "
                             "estimators; give one")
        return "debiased"
    if estimator == "median-unbiased" and interval != "inversion":
        raise ValueError("estimator='median-unbiased' is read off the inverted interval: it "
                         "needs interval='inversion' (Inversion(), or Refit() that inverts)")
    if estimator is None:
        return "median-unbiased" if interval == "inversion" else "plug-in"
    return estimator


def _binned_metric(probs: ArrayLike | None, target: object, logits: ArrayLike | None, *,
                   name: str, kind: str | None, n_bins: int, strategy: str, norm: str,
                   debias: bool, interval: IntervalOption | None, level: float, seed: Seed,
                   cluster: ArrayLike | None, classes: ArrayLike | None = None,
                   items: ArrayLike | None = None, estimator: str | None = None
                   ) -> Estimate:
    """The binned ECE of :func:`ece` with its interval option (already resolved)."""
    blocks = row_blocks(probs, target, classes, logits=logits, items=items)  # Dask input
    P, T, labels, binary = (lean_inputs(probs, target, logits, classes=classes, items=items)
                            if blocks is None else blocks.inputs)
    n_bins = check_binning(n_bins, P.shape[0], strategy, norm, debias)
    level = check_level(level)
    check_seed(seed)
    if isinstance(interval, Bootstrap) and interval.rebin and strategy != "quantile":
        raise ValueError("Bootstrap(rebin=True) re-estimates equal-mass edges per "
                         "replicate; it needs strategy='quantile'")
    kind = _resolve_kind(kind, binary, P.shape[1])
    refit = isinstance(interval, Refit)
    basis = None if interval is None else interval.name
    if refit:  # inverted, or read off the replicates as a bootstrap
        basis = "inversion" if interval.method == "inversion" else "bootstrap"
    if basis == "inversion":  # the covariance of the bin means
        check_covariance_memory(kind, P.shape[1], n_bins)
    estimator = resolve_estimator(estimator, basis, debias)
    groups = ([f"class_{k}" for k in range(P.shape[1])] if kind == "classwise" else [kind])
    label = {"positive_class": f"positive-class {name}", "classwise": f"classwise {name}"
             }.get(kind, name)
    if norm == "l2":
        label = ("debiased " if debias else "") + "L2 " + label
    nc_request = isinstance(interval, Bound | Refit | Credible)
    if nc_request:
        check_nc_ece_metric(interval, n_classes=P.shape[1], norm=norm, debias=debias,
                            kind=kind, strategy=strategy, cluster=cluster)
    channels = carries_channel_error(target, basis, "ece", refit, blocks is not None)
    # a corrected target keeps its item table: the check of its bin means outside [0, 1]
    # needs their within-bin variance (binned_estimate)
    corrected = getattr(target, "kind", None) == "corrected"
    request = BinnedRequest(kind, n_bins, strategy, debias, interval, seed, cluster, "ece",
                            needs_items=nc_request or channels or corrected)
    binned, sums, form, streamed = choose_backend(P, labels, T, blocks, request).gather(
        request)
    hook, ch_det, ch_status = delta_cov_hook(target, P, binned.data[:, :, 1], binned.bins,
                                             kind, n_bins) if channels else (None, {}, None)
    est = binned_estimate(binned, groups, name=label, reduce="ece", norm=norm, sums=sums,
                          debias=debias, interval=None if nc_request else interval,
                          level=level, seed=seed, cluster=cluster,
                          details={"kind": kind, "strategy": strategy, "norm": norm,
                                   "debias": debias, "target_kind": _target_kind(target)},
                          estimator=estimator, form=form, streamed=streamed, cov_hook=hook)
    if channels:
        est = with_channel_error(est, ch_det, ch_status)
    if nc_request:
        est = nc_ece_interval(est, binned.data[0, :, 1], binned.bins[0], target,
                              interval=interval, level=level, seed=seed,
                              probs=np.asarray(P, dtype=np.float64), estimator=estimator)
    if getattr(target, "kind", None) == "corrected":
        est = nc_ece_named(est)
    return with_target_status(est, target, probs, logits)


# ----------------------------------------------------------------------------- public

_COMMON = """probs : array-like of shape (n_items, n_classes) or (n_items,)
        Predicted probabilities; rows sum to 1 (within 1e-6, or K times the machine
        epsilon of a coarser dtype: 2.9e-3 for three float16 classes). A 1-D array holds
        positive-class probabilities of a binary problem. Give ``probs`` or ``logits``.
        A pandas Series/DataFrame's index is checked against the target's item ids, and
        a DataFrame's column labels are matched to the classes (``classes=``, the
        Target's classes or a categorical target's categories) and reordered by label;
        plain arrays are read by position. Dask arrays are read in row blocks
        (:mod:`noisycal.metrics.binned.dask`).
    target : Target, array-like of shape (n_items, n_classes), or labels (n_items,)
        What the predictions are compared with. Rows sum to 1 and lie in [0, 1]; only a
        noise-corrected Target (``kind='corrected'``: :func:`noisycal.targets.corrected`,
        or ``nc.targets.from_matrix(values, kind='corrected')``) may leave [0, 1] (the
        ECE, MCE, CMCE, Brier score, NLL and smooth ECE accept it; the calibration slope
        does not).
        A 1-D vector holds class labels (integers, or any labels with ``classes=``); a
        pandas Categorical is read as a string array is: without ``classes=`` it is
        refused (ValueError naming ``classes``) unless its categories are the integers
        0..K-1 in order, or a DataFrame of predictions names the categories as its
        columns (matched by label); the categories' order is never taken as the order of
        the prediction columns. For two classes a 1-D float vector that is not all
        integers is the positive-class target t (``[1 - t, t]``).
    logits : array-like of shape (n_items, n_classes) or (n_items,), optional
        Pre-softmax scores (1-D: the positive-class logit), instead of ``probs``. Logits
        that look like probabilities (a 1-D vector in [0, 1], or rows in [0, 1] summing
        to 1) give a :class:`~noisycal.NumericalWarning`.
    classes : array-like, optional
        Class labels of the prediction columns in their order (never re-sorted): label
        targets are encoded with it, and a Target's ``classes`` must match it.
    items : array-like of shape (n_items,), optional
        Item ids of the prediction rows (default: a pandas index); a Target carrying
        item ids must list the same ids in the same order (else ValueError).
    n_bins : int, default=15
        Number of bins; at most 10 per item (many more bins than items are refused).
        The papers' choices are in ``noisycal.metrics.PAPER_N_BINS``:
        ``'ambiguous_ground_truth'`` (Tao, Luo, Dong & Xu 2026, "Confidence Calibration
        under Ambiguous Ground Truth") 15, ``'set_mass_conformal'`` ("Adaptive Set-Mass
        Calibration with Conformal Prediction") 25, ``'lwcal'`` ("LWCal: Loss-Weighted
        Calibration for Tabular Classifiers with Noisy Calibration Labels") 15,
        ``'noisy_label_calibration'`` ("Noisy-Label Calibration with Multiple Unreliable
        Labels") 10.
    kind : {'top_label', 'classwise', 'positive_class'}, optional
        Default: 'positive_class' for 1-D binary input, else 'top_label'.
    strategy : {'uniform', 'quantile'}, default='uniform'
        Equal-width bins, or equal-mass bins whose inner edges are midpoints
        between order statistics (see :func:`~noisycal.metrics.binned.bins.quantile_inner_edges`).
    interval : IntervalOption, str or None, default='auto'
        The interval kind, an option object of :mod:`noisycal.intervals` that holds its
        own settings (``nc.intervals.Bootstrap(n_boot=2000, method='bca')``), or its
        name as a shorthand for its defaults (``'bootstrap'`` is ``Bootstrap()``);
        'auto' is the metric's default kind, None no interval. The kinds each metric
        offers are listed with it; a field of an offered kind that the metric does not
        use (``Bootstrap(rebin=True)`` of the MCE) is refused by name.
    level : float, default=0.9
        Interval coverage, a fraction in (0, 1).
    seed : int or jax key, default=0
        Seeds the interval's random draws.
    cluster : array-like of shape (n_items,), optional
        Cluster ids (several rows of one unit); clusters are resampled whole."""

_BOOTSTRAP = """The item bootstrap (:class:`~noisycal.intervals.Bootstrap`) of a binned metric: its
    ``rebin`` re-estimates equal-mass edges in every replicate (``strategy='quantile'``
    only; else the sample's edges are kept); its ``batch_size`` is the replicates per
    vectorised chunk of the exact scheme (default 1 on CPU, a sequential ``lax.map``
    measured fastest there, and as many as fit ~2**25 numbers on accelerators); its
    ``scheme`` says how the replicates are drawn. 'exact': n items drawn with
    replacement per replicate (cost n per replicate). 'poisson': an independent
    Poisson(1) weight per item (or cluster) and replicate, weighted bin means and total
    (:mod:`noisycal.metrics.binned.poisson`; cost n per replicate, shardable over the
    option's ``devices``, which make 'auto' 'poisson'; not with ``rebin``). 'binned':
    the same bootstrap drawn from per-cell statistics (cost independent of n); a cell is
    a bin, split by the target value when every target is 0 or 1. The cell counts are
    drawn exactly (multinomial over cells); given its count N_c, a cell with at least
    ``NORMAL_FROM`` (200) sample items gets the sum of its N_c resampled confidences and
    targets from the normal with their exact conditional mean N_c mu_c and covariance
    N_c Sigma_c (central limit theorem; with hard labels only the confidence sum is
    approximated, and a bin's confidences span at most its width), and items of smaller
    cells are drawn one by one, exactly. It applies to one score group and one target
    value per item without ``cluster`` or ``rebin`` (else ValueError); on the tested
    cases (near and far from calibration, sparse bins, soft targets, L1 and debiased
    L2) its 5% and 95% replicate quantiles agree with the exact bootstrap's within 4
    Monte-Carlo standard errors. 'auto': 'binned' where it applies, else 'exact'.
    ``details['bootstrap']`` says which ran; the replicates of a sharded run equal the
    one-device run's up to summation order."""

_RETURNS = """Estimate
        ``bins`` holds the per-bin table; ``details['per_group']`` the per-class values
        in classwise mode. The status is not 'ok' when the bootstrap is degenerate (one
        item, or all replicates equal: no interval) or the target was built from a fit
        whose status is not 'ok'."""


def _doc(func: object) -> object:
    func.__doc__ = func.__doc__.replace("{common}", _COMMON).replace(
        "{returns}", _RETURNS).replace("{bootstrap}", _BOOTSTRAP)
    return func


@_doc
def ece(probs: ArrayLike | None = None, target: object = None, *,
        logits: ArrayLike | None = None, classes: ArrayLike | None = None,
        items: ArrayLike | None = None, n_bins: int = 15, kind: str | None = None,
        strategy: str = "uniform", norm: str = "l1", debias: bool = False,
        interval: IntervalOption | str | None = "auto", level: float = 0.9,
        estimator: str | None = None, seed: Seed = 0,
        cluster: ArrayLike | None = None) -> Estimate:
    r"""Binned expected calibration error against any target.

    Parameters
    ----------
    {common}
    norm : {'l1', 'l2'}, default='l1'
    debias : bool, default=False
        With ``norm='l2'``: the debiased estimator of Kumar, Liang & Ma (2019).
    interval : Inversion, Bootstrap, Bound, Refit, Credible, str or None, default='auto'
        An option object of :mod:`noisycal.intervals` (``nc.metrics.INTERVALS``), or its
        name for its defaults. 'auto': ``Inversion()``.
        :class:`~noisycal.intervals.Inversion`: the interval of
        :func:`noisycal.intervals.inversion.invert_norm`, which inverts a parametric
        bootstrap test of each candidate value (``n_boot`` Gaussian draws of the bin
        means, bins held fixed). It covers the population binned ECE near 0 as well as
        far from it (``benchmarks/README.md`` has the measured coverage), starts at
        exactly 0 when the data cannot exclude perfect calibration
        (``details['lower_is_zero']``, with ``details['p_value_zero']`` the test's
        p-value), and needs one target value per item. With a one-hot target (hard or
        voted labels) and no ``cluster`` the test of perfect calibration redraws the
        labels from the predictions (consistency resampling, exact however sparsely the
        bins are filled; ``details['zero_test']``), and the upper end is set by the least
        favourable null configuration (``upper_null='least-favourable'`` of
        ``invert_norm``). :class:`~noisycal.intervals.Bootstrap`: the item bootstrap
        read off with its ``method`` (Notes); it inherits the plug-in's upward bias and
        covers poorly for nearly calibrated models (with a corrected target it also
        holds the channels fixed). :class:`~noisycal.intervals.Bound`,
        :class:`~noisycal.intervals.Refit` and :class:`~noisycal.intervals.Credible`:
        the intervals of a noise-corrected target (Notes).
    estimator : {'plug-in', 'median-unbiased'}, optional
        The reported value. Default: 'median-unbiased' with the inverted interval
        (the candidate value whose simulated median equals the plug-in; it lies inside
        the interval), else 'plug-in' (the textbook binned ECE, biased upward near 0).
        ``details['plugin']`` always holds the plug-in with the inverted interval.

    Returns
    -------
    {returns}

    Notes
    -----
    With bins :math:`B_b`, confidences :math:`c_i` and target values :math:`t_i`,

    .. math:: \mathrm{ECE}_1 = \sum_b \frac{|B_b|}{n}\,|\bar t_b - \bar c_b|,
              \qquad
              \mathrm{ECE}_2 = \Big(\sum_b \frac{|B_b|}{n}(\bar t_b - \bar c_b)^2\Big)^{1/2}.

    Classwise values combine the K per-class errors as :math:`(\frac1K\sum_k
    \mathrm{CE}_k^p)^{1/p}` (Kull et al. 2019 for p = 1; Kumar et al. 2019 for p = 2).
    Empty bins contribute nothing. The bootstrap resamples items (or clusters) with
    the bins held fixed, unless ``Bootstrap(rebin=True)``; BCa's acceleration uses the exact
    leave-one-item-out jackknife (bins fixed).

    {bootstrap}

    With a corrected target (:func:`noisycal.targets.corrected`) this is the NC-ECE of
    "Noisy-Label Calibration with Multiple Unreliable Labels": the estimand is the binned
    calibration error against the true label. When the target's channels were fitted
    (EM and MLE fits of the Dawid-Skene family, Hui-Walter moment and GMM fits, and
    NUTS fits of every model), the default inverted interval carries their estimation
    error: the covariance of the bin means gains the delta-method terms of
    :mod:`noisycal.metrics.nc.delta` (the channels' covariance from the fit's per-item
    influence, ``fit.influence()``: the sandwich, or for a NUTS fit the influence on the
    posterior mean from its draws; and its correlation with the items' own terms, items
    matched to the fit by id; ``details['channel_error']``). Status 'weak_channels' when a
    move of two standard errors of the channels makes a used channel singular (the normal
    approximation fails), 'channels_fixed' when the error could not be computed (the interval then
    treats the channels as known). Channels given by the user (``confusion=``, ``a=``,
    ``b=``) are treated as known. Measured coverage: ``benchmarks/README.md``
    (``benchmarks/coverage_nc_ece.py``).

    The other interval kinds of the NC-ECE need the L1 NC-ECE with equal-width bins (two
    classes: the positive-class error; K > 2: the top-label or classwise one):

    - :class:`~noisycal.intervals.Bound`: the finite-sample bound (its Theorem 1 / Eq.
      C.11, or Proposition 1 for channels fitted on the evaluated items, generalised to
      K classes by :func:`noisycal.metrics.nc.bound.nc_ece_bound`; components B-hat,
      sampling radius and channel term in ``details``). Its ``mode`` says how the
      channel term enters: left out ('binned_only'), exact from ``true_channels`` (two
      classes: the rates ``(a, b)``; any K: the (J, K, K) true confusion matrices), or
      ``B * channel_radius`` with ``channel_radius`` a bound on the total-variation
      distance between a true and a fitted confusion row. ``same_sample=None`` infers
      from the target's provenance whether its channels were fitted on the evaluated
      items (Proposition 1) or not (Theorem 1):
      :func:`noisycal.metrics.nc.bound.infer_same_sample`; ``details['statement']`` says
      which was applied. Its ``kind`` is the inequality of the sampling radius:
      'hoeffding' the radius of Theorem 1 / Proposition 1, 'bernstein' the empirical
      Bernstein radius (Maurer & Pontil 2009, Theorem 4), 'auto' the smaller of the two
      at eta/2 each (never wider than 'hoeffding'); ``details['inequality']`` says which
      was used.
    - :class:`~noisycal.intervals.Refit`: with a corrected target built from an EM fit
      of the Dawid-Skene family, refit the channels (and the aggregation weights) on the
      items of every bootstrap replicate (:mod:`noisycal.metrics.nc.refit`; no
      ``cluster``). ``method='inversion'`` (the default): the replicates' covariance of
      the bin means replaces the delta method's in the inverted test
      (:func:`noisycal.metrics.nc.assemble.refit_inversion`); ``method='percentile'``:
      the percentile interval of the replicates (biased upward near 0, like every
      bootstrap of the plug-in; status 'plugin_bias'). Its ``progress`` shows a bar on
      stderr over the refits
      (the other intervals are one compiled pass and show none).
    - :class:`~noisycal.intervals.Credible`: a corrected target built from a NUTS fit:
      the equal-tailed interval of the binned NC-ECE over channel posterior draws x
      Bayesian bootstrap of items, any K. The credible interval, like the percentile
      bootstraps, is the distribution of the plug-in, which is biased upward near 0: it
      misses a nearly calibrated classifier's error from above most of the time
      (coverage in ``benchmarks/README.md``); prefer the default. Its status is always
      'plugin_bias', as is that of every :class:`~noisycal.intervals.Bootstrap` interval
      of the NC-ECE.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    >>> float(nc.ece(p, np.array([0, 1, 1]), n_bins=10, interval=None))
    0.4
    >>> y = np.array([0, 1, 1])
    >>> est = nc.ece(p, y, n_bins=2, interval=nc.intervals.Bootstrap(n_boot=200))
    >>> est.kind, est.method, est.n_boot
    ('bootstrap', 'percentile', 200)
    """
    option = as_interval(interval, INTERVALS, default=Inversion(), where="ece")
    return _binned_metric(probs, target, logits, name="ECE", kind=kind, n_bins=n_bins,
                          strategy=strategy, norm=norm, debias=debias, interval=option,
                          level=level, seed=seed, cluster=cluster, classes=classes,
                          items=items, estimator=estimator)


@_doc
def mce(probs: ArrayLike | None = None, target: object = None, *,
        logits: ArrayLike | None = None, classes: ArrayLike | None = None,
        items: ArrayLike | None = None, n_bins: int = 15, kind: str | None = None,
        strategy: str = "uniform", min_count: int = MIN_COUNT,
        interval: IntervalOption | str | None = "auto", level: float = 0.9, seed: Seed = 0,
        cluster: ArrayLike | None = None) -> Estimate:
    r"""Maximum calibration error: max ``|mean target - mean confidence|`` over bins of min_count.

    Parameters
    ----------
    {common}
    min_count : int, default=20
        Least number of items in a bin of the MCE, part of the estimand (see
        :mod:`noisycal.metrics.mce`); 1: every non-empty bin (the textbook MCE).
    interval : Simultaneous, Bootstrap, str or None, default='auto'
        'auto' = :class:`~noisycal.intervals.Simultaneous` (:mod:`noisycal.metrics.mce`;
        bootstrap-t within bins, ``n_boot`` replicates): it covers near and far from
        calibration (``benchmarks/README.md``). :class:`~noisycal.intervals.Bootstrap`:
        the item bootstrap of the same estimand (no ``rebin``, no ``devices``), biased
        upward near calibration.

    Returns
    -------
    {returns}
        Status 'no_bins' (NaN) when no bin holds ``min_count`` items; ``in_mce`` in ``bins``.

    Notes
    -----
    {bootstrap}

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    >>> float(nc.mce(p, np.array([0, 1, 1]), n_bins=10, min_count=1, interval=None))
    0.8
    """
    if interval == "inversion" or isinstance(interval, Inversion):
        raise ValueError("interval=Inversion() inverts a test of a norm of bin means (the "
                         "ECE), not of their maximum; the MCE's interval='auto' is the "
                         "simultaneous interval of noisycal.metrics.mce")
    option = as_interval(interval, MCE_INTERVALS, default=Simultaneous(), where="mce",
                         unused=MCE_UNUSED)
    return mce_estimate(probs, target, logits, classes=classes, items=items, n_bins=n_bins,
                        kind=kind, strategy=strategy, min_count=min_count, interval=option,
                        level=level, seed=seed, cluster=cluster)
