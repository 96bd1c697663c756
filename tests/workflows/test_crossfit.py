"""Cross-fitted NC-ECE (nc.workflows.nc_ece_crossfit): fold ids, alignment of the
predictions with the annotations, the size-weighted prevalence of grouped fits."""

import numpy as np
import pandas as pd
import pytest

import noisycal as nc
from noisycal._util.jax import x64
from noisycal.metrics.binned import bins as binning
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
