"""Review fixes in metrics, intervals, targets and correction (each test fails without its fix)."""

import inspect

import numpy as np
import pandas as pd
import pytest

import jax.numpy as jnp

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.correction import corrected_from_channels, fit_prevalence, marginal_prevalence
from noisycal.intervals.bootstrap import replicate_weights
from noisycal.metrics.binned import bins as binning
from noisycal.metrics.binned import estimate as binned_estimate
from noisycal.workflows.crossfit import _fold_ids


def _grouped_data(n=150, seed=0):
    """Two groups of unequal size and prevalence (100 items at 0.2, 50 at 0.8)."""
    rng = np.random.default_rng(seed)
    g = np.where(np.arange(n) < 100, "a", "b")
    y = rng.random(n) < np.where(g == "a", 0.2, 0.8)
    A = (rng.random((n, 3)) < np.where(y[:, None], [0.85, 0.8, 0.75],
                                       [0.1, 0.2, 0.15])).astype(int)
    ann = nc.Annotations.from_wide(A, classes=[0, 1])
    z = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    return ann, z, pd.Series(g, index=ann.items)


class _GroupedOnItems:
    """A grouped Dawid-Skene whose groups follow the items of whatever it is fitted to."""

    def __init__(self, groups: pd.Series) -> None:
        self.groups = groups

    def fit(self, annotations, **kw):
        return nc.GroupedDawidSkene(2).fit(annotations,
                                           groups=self.groups.loc[annotations.items].to_numpy(),
                                           **kw)


def test_fit_prevalence_weights_groups_by_size():
    ann, _, g = _grouped_data()
    fit = nc.GroupedDawidSkene(2).fit(ann, groups=g.to_numpy(), seed=0)
    gp = np.asarray(fit.group_prevalence)[:, 1]
    sizes = np.bincount(fit.details["group_index"])
    assert sizes.tolist() == [100, 50]
    assert fit_prevalence(fit) == pytest.approx(float(sizes @ gp / 150), rel=1e-12)
    assert abs(fit_prevalence(fit) - gp.mean()) > 0.05  # the unweighted mean is different
    with x64():
        on_jax = float(marginal_prevalence(jnp.asarray(gp), jnp.asarray(sizes, float), xp=jnp))
    assert on_jax == pytest.approx(fit_prevalence(fit), rel=1e-12)


def test_crossfit_uses_the_size_weighted_prevalence_of_a_grouped_fit():
    ann, z, g = _grouped_data()
    folds = np.arange(150) % 3
    est = nc.workflows.nc_ece_crossfit(z, ann, model=_GroupedOnItems(g), folds=folds,
                                     n_bins=10, seed=0)
    u = np.empty(150)
    u_unweighted = np.empty(150)
    for k in range(3):
        train, test = np.flatnonzero(folds != k), np.flatnonzero(folds == k)
        fit = _GroupedOnItems(g).fit(ann.subset(train), seed=0)
        mu = np.asarray(fit.group_prevalence)[:, 1]
        sizes = np.bincount(fit.details["group_index"])
        for out, prev in ((u, float(sizes @ mu / sizes.sum())), (u_unweighted, mu.mean())):
            out[test] = nc.targets.corrected(ann.subset(test), confusion=fit.confusion,
                                             prevalence=prev).values[:, 1]
    bins = binning.equal_width_bins(z, 10)
    with x64():
        expected = float(binning.residual_ece(np.ones(150), u, z, bins, 10))
        unweighted = float(binning.residual_ece(np.ones(150), u_unweighted, z, bins, 10))
    assert float(est) == pytest.approx(expected, rel=1e-10)
    assert abs(unweighted - expected) > 1e-6  # the old (unweighted) value differs


def test_crossfit_checks_the_alignment_of_probs_with_the_annotations():
    ann, z, _ = _grouped_data(60)
    ref = float(nc.workflows.nc_ece_crossfit(z, ann, n_folds=3, seed=0))
    aligned = nc.workflows.nc_ece_crossfit(pd.Series(z, index=ann.items), ann, n_folds=3, seed=0)
    assert float(aligned) == ref
    assert float(nc.workflows.nc_ece_crossfit(z, ann, n_folds=3, seed=0, items=ann.items)) == ref
    with pytest.raises(ValueError, match="probs: the predictions' item ids"):
        nc.workflows.nc_ece_crossfit(pd.Series(z, index=ann.items[::-1]), ann, seed=0)
    with pytest.raises(ValueError, match="give n_folds or folds, not both"):
        _fold_ids(np.arange(60) % 2, 5, 60, 0)
    assert _fold_ids(None, None, 60, 0)[1] == 5  # the default F


def test_corrected_from_channels_is_the_corrected_labels_formula_on_numpy_and_jax():
    rng = np.random.default_rng(0)
    A = (rng.random((30, 4)) < 0.5).astype(float)
    A[rng.random((30, 4)) < 0.2] = np.nan
    A[:, 0] = np.where(np.isnan(A[:, 0]), 1.0, A[:, 0])
    a, b = np.array([0.1, 0.2, 0.3, 0.5]), np.array([0.9, 0.8, 0.7, 0.5])
    t = nc.targets.corrected(A, a=a[:3].tolist() + [0.45], b=b[:3].tolist() + [0.9],
                             informative=np.array([True, True, True, False]))
    d = t.details
    args = (d["ratings"], d["observed"], d["informative"], d["weights"], d["confusion"])
    np.testing.assert_allclose(corrected_from_channels(*args), t.values, atol=1e-14)
    with x64():
        via_jax = corrected_from_channels(*(jnp.asarray(x) for x in args), xp=jnp)
    np.testing.assert_allclose(np.asarray(via_jax), t.values, atol=1e-12)
    # the binary closed form U = sum_j alpha_j (A_ij - a_j) / (b_j - a_j)
    aa, bb = d["confusion"][:, 0, 1], d["confusion"][:, 1, 1]
    w = np.where(d["observed"] & d["informative"], d["weights"], 0.0)
    u = np.nansum(w * (np.nan_to_num(A) - aa) / (bb - aa), 1) / w.sum(1)
    np.testing.assert_allclose(t.values[:, 1], u, atol=1e-12)


def test_unused_parameters_are_gone():
    assert "n" not in inspect.signature(replicate_weights).parameters
    assert "n_bins" not in inspect.signature(binned_estimate._jackknife_items).parameters


def test_paper_bin_counts_are_keyed_by_readable_names():
    assert nc.metrics.PAPER_N_BINS == {"ambiguous_ground_truth": 15, "set_mass_conformal": 25,
                                       "lwcal": 15, "noisy_label_calibration": 10}
    doc = " ".join(nc.ece.__doc__.split())
    assert "Confidence Calibration under Ambiguous Ground Truth" in doc
    assert "LWCal" in doc and "Adaptive Set-Mass Calibration" in doc


def test_bound_options_are_checked_and_belong_to_their_mode():
    opts = nc.intervals.Bound(same_sample=False)
    assert (opts.mode, opts.channel_radius, opts.true_channels, opts.same_sample,
            opts.kind) == ("binned_only", None, None, False, "auto")
    with pytest.raises(ValueError, match="same_sample must be True or False"):
        nc.intervals.Bound(same_sample="no")
    with pytest.raises(ValueError, match="mode='radius' needs"):
        nc.intervals.Bound(mode="radius", same_sample=False)
    A = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]] * 10)
    t = nc.targets.corrected(A, a=[0.1] * 3, b=[0.9] * 3)
    z = np.linspace(0.05, 0.95, 40)
    wide = nc.ece(z, t, interval=nc.intervals.Bound(same_sample=True))
    narrow = nc.ece(z, t, interval=nc.intervals.Bound(same_sample=False))
    assert wide.details["sampling_radius"] > narrow.details["sampling_radius"]
    assert wide.details["same_sample"] is True


def test_one_n_bins_rule_for_metrics_and_calibrators():
    z, y = np.array([0.2, 0.8]), np.array([0, 1])
    assert nc.ece(z, y, n_bins=20, interval=None).details["n_bins"] == 20
    for call in (lambda: nc.ece(z, y, n_bins=21, interval=None),  # was allowed up to 100
                 lambda: nc.calibrators.HistogramBinning(n_bins=21).fit(probs=z, target=y)):
        with pytest.raises(ValueError, match="n_bins=21 is far above the 2 item"):
            call()


def test_slope_and_bootstrap_messages_name_their_arguments():
    with pytest.raises(ValueError, match=r"^probs: "):
        nc.calibration_slope(np.array([1.0, 0.5]), np.array([1, 0]))
    from noisycal.intervals import bootstrap
    from noisycal.metrics.scores import weighted_mean
    with pytest.raises(ValueError, match=r"^arrays: "):
        bootstrap(weighted_mean)
