"""Tests for noisycal.plots.cumulative_mass_curve: the points drawn are the per-bin
(mass, coverage) of the CMCE table."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import noisycal as nc  # noqa: E402
from noisycal.plots import cumulative_mass_curve  # noqa: E402


def test_points_are_the_table():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(5) * 0.5, size=300)
    y = rng.integers(0, 5, 300)
    est = nc.cmce(P, y, n_bins=10)
    ax = cumulative_mass_curve(est)
    ne = est.bins[est.bins["count"] > 0]
    curve = [ln for ln in ax.get_lines() if ln.get_label().startswith("CMCE")][0]
    np.testing.assert_allclose(curve.get_xdata(), ne["mean_conf"])
    np.testing.assert_allclose(curve.get_ydata(), ne["mean_target"])
    assert len(ax.child_axes) == 1 and "CMCE" in ax.get_title()
    # a second curve on the same axes, no second diagonal
    cumulative_mass_curve(nc.cmce(P, y, n_bins=10, interval=None), ax=ax, show_counts=False,
                          label="again")
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert labels.count("perfect calibration") == 1 and "again" in labels
    plt.close("all")


def test_refuses_other_estimates():
    est = nc.ece(np.array([0.2, 0.7, 0.9, 0.4]), [0, 1, 1, 0], n_bins=2, interval=None)
    with pytest.raises(ValueError, match="cmce"):
        cumulative_mass_curve(est)
    with pytest.raises(TypeError, match="Estimate"):
        cumulative_mass_curve(0.1)
