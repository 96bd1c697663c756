"""Tests for noisycal.plots.reliability_diagram: what is drawn, which bars, errors."""

from __future__ import annotations

import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from numpy.testing import assert_allclose
from statsmodels.stats.proportion import proportion_confint

import noisycal as nc
from noisycal.plots import reliability_diagram

# ----------------------------------------------------------------------------------------
# hand-built binary case, positive-class ECE with 5 equal-width bins
#
#   bin [0.0, 0.2): p = 0.10, 0.15, 0.12  y = 0, 0, 1   -> conf 0.123333, target 1/3
#   bin [0.2, 0.4): empty
#   bin [0.4, 0.6): empty
#   bin [0.6, 0.8): p = 0.70, 0.75, 0.72, 0.78  y = 1, 1, 0, 1  -> conf 0.7375, target 3/4
#   bin [0.8, 1.0]: p = 0.90  y = 1  -> conf 0.9, target 1
# ----------------------------------------------------------------------------------------

P = np.array([0.10, 0.15, 0.12, 0.70, 0.75, 0.72, 0.78, 0.90])
Y = np.array([0, 0, 1, 1, 1, 0, 1, 1])
CONF = np.array([0.37 / 3, 0.7375, 0.9])
TARGET = np.array([1 / 3, 0.75, 1.0])
COUNT = np.array([3, 4, 1])


def _points(ax: Axes) -> tuple[np.ndarray, np.ndarray]:
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == "bin: mean target"]
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def _bars(ax: Axes) -> tuple[str, np.ndarray, np.ndarray, np.ndarray] | None:
    lines = [ln for ln in ax.get_lines() if "interval" in str(ln.get_label())]
    if not lines:
        return None
    (line,) = lines
    # vertical bars as one line broken by NaN: (x, low), (x, high), (nan, nan) per bin
    xy = np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float).reshape(-1, 3, 2)
    assert np.all(np.isnan(xy[:, 2])) and np.array_equal(xy[:, 0, 0], xy[:, 1, 0])
    return str(line.get_label()), xy[:, 0, 0], xy[:, 0, 1], xy[:, 1, 1]


@pytest.fixture(scope="module")
def sim():
    return nc.simulate.classifier(600, 3, temperature=0.6, n_annotators=7, seed=1)


def test_returns_axes_and_uses_given_axes():
    est = nc.ece(P, Y, n_bins=5, interval=None)
    ax = reliability_diagram(est)
    assert isinstance(ax, Axes)
    fig, given = plt.subplots()
    assert reliability_diagram(est, ax=given) is given


def test_points_are_the_nonempty_bins():
    est = nc.ece(P, Y, n_bins=5, interval=None)
    table = est.bins
    assert table["count"].tolist() == [3, 0, 0, 4, 1]
    x, y = _points(reliability_diagram(est))
    assert_allclose(x, CONF, rtol=1e-12)
    assert_allclose(y, TARGET, rtol=1e-12)
    nonempty = table[table["count"] > 0]
    assert_allclose(x, nonempty["mean_conf"], rtol=1e-12)
    assert_allclose(y, nonempty["mean_target"], rtol=1e-12)


def test_wilson_bars_match_statsmodels():
    est = nc.ece(P, Y, n_bins=5, interval=None)
    label, bx, lo, hi = _bars(reliability_diagram(est))  # auto: 0/1 targets -> Wilson
    assert label == "90% Wilson interval"
    ref_lo, ref_hi = proportion_confint(COUNT * TARGET, COUNT, alpha=0.1, method="wilson")
    assert_allclose(bx, CONF, rtol=1e-12)
    assert_allclose(lo, ref_lo, rtol=1e-12)
    assert_allclose(hi, ref_hi, rtol=1e-12)
    label, _, lo, hi = _bars(reliability_diagram(est, interval="wilson", level=0.95))
    assert label == "95% Wilson interval"
    ref_lo, ref_hi = proportion_confint(COUNT * TARGET, COUNT, alpha=0.05, method="wilson")
    assert_allclose(lo, ref_lo, rtol=1e-12)
    assert_allclose(hi, ref_hi, rtol=1e-12)


def test_wilson_level_defaults_to_the_estimate_level():
    est = nc.ece(P, Y, n_bins=5, level=0.8, interval=nc.intervals.Bootstrap(n_boot=50))
    label, _, lo, _ = _bars(reliability_diagram(est, interval="wilson"))
    assert label == "80% Wilson interval"
    ref_lo, _ = proportion_confint(COUNT * TARGET, COUNT, alpha=0.2, method="wilson")
    assert_allclose(lo, ref_lo, rtol=1e-12)


def test_bootstrap_bars_are_the_bins_low_high(sim):
    est = nc.ece(sim.probs, sim.labels, n_bins=10, interval=nc.intervals.Bootstrap(n_boot=200),
                 seed=3)
    label, bx, lo, hi = _bars(reliability_diagram(est))  # auto: bootstrap columns present
    assert label == "90% bootstrap interval"
    nonempty = est.bins[est.bins["count"] > 0]
    assert_allclose(bx, nonempty["mean_conf"], rtol=1e-12)
    assert_allclose(lo, nonempty["low"], rtol=1e-12)
    assert_allclose(hi, nonempty["high"], rtol=1e-12)
    # an explicit 'wilson' still works for hard labels
    label, *_ = _bars(reliability_diagram(est, interval="wilson"))
    assert label == "90% Wilson interval"


def test_bootstrap_unavailable_or_level_mismatch_raises():
    est = nc.ece(P, Y, n_bins=5, interval=None)
    with pytest.raises(ValueError, match="interval='bootstrap'"):
        reliability_diagram(est, interval="bootstrap")
    est = nc.ece(P, Y, n_bins=5, interval=nc.intervals.Bootstrap(n_boot=50))
    with pytest.raises(ValueError, match="level"):
        reliability_diagram(est, interval="bootstrap", level=0.95)
    with pytest.raises(ValueError, match="interval must be one of"):
        reliability_diagram(est, interval="bca")


def test_classwise_group_selection(sim):
    est = nc.ece(sim.probs, sim.labels, n_bins=10, kind="classwise", interval=None)
    for group in ("class_1", 1):
        ax = reliability_diagram(est, group=group)
        rows = est.bins[(est.bins["group"] == "class_1") & (est.bins["count"] > 0)]
        x, y = _points(ax)
        assert_allclose(x, rows["mean_conf"], rtol=1e-12)
        assert_allclose(y, rows["mean_target"], rtol=1e-12)
        assert "class_1" in ax.get_title()
    x, _ = _points(reliability_diagram(est))  # default: the first group
    rows = est.bins[(est.bins["group"] == "class_0") & (est.bins["count"] > 0)]
    assert_allclose(x, rows["mean_conf"], rtol=1e-12)


def test_unknown_group_raises_with_the_names(sim):
    est = nc.ece(sim.probs, sim.labels, n_bins=10, kind="classwise", interval=None)
    with pytest.raises(ValueError, match=r"group must be one of .*class_0.*class_2.*'cat'"):
        reliability_diagram(est, group="cat")
    with pytest.raises(ValueError, match="group"):
        reliability_diagram(est, group=3)


def test_soft_target_estimates(sim):
    soft = nc.targets.soft(counts=sim.counts)
    est = nc.true_label_ece(sim.probs, soft, form="expected", n_bins=10, interval=None)
    ax = reliability_diagram(est)  # soft labels, no bootstrap: no bars
    assert _bars(ax) is None
    x, y = _points(ax)
    assert_allclose(y, est.bins.loc[est.bins["count"] > 0, "mean_target"], rtol=1e-12)
    with pytest.raises(ValueError, match="interval='wilson'"):
        reliability_diagram(est, interval="wilson")
    # the same soft target through ece(): non-integer successes, so not hard either
    with pytest.raises(ValueError, match="interval='wilson'"):
        reliability_diagram(nc.ece(sim.probs, soft, n_bins=10, interval=None),
                            interval="wilson")
    est = nc.true_label_ece(sim.probs, soft, form="mc", n_draws=20, n_bins=10,
                            interval=nc.intervals.Bootstrap(n_boot=50))
    label, *_ = _bars(reliability_diagram(est))
    assert label == "90% bootstrap interval"
    assert "true-label ECE" in reliability_diagram(est).get_title()


def test_hard_override(sim):
    est = nc.ece(P, Y, n_bins=5, interval=None)
    assert _bars(reliability_diagram(est, hard=False)) is None
    with pytest.raises(ValueError, match="interval='wilson'"):
        reliability_diagram(est, interval="wilson", hard=False)


def test_targets_outside_unit_interval_are_not_clipped(sim):
    # a noise-corrected target in [-0.2, 1.4], rows summing to 1 (issue 23: declared)
    T = nc.targets.from_matrix(np.eye(3)[sim.labels] * 1.6 - 0.2, kind="corrected")
    est = nc.ece(sim.probs, T, n_bins=10, interval=nc.intervals.Bootstrap(n_boot=50))
    ax = reliability_diagram(est)
    _, y = _points(ax)
    assert_allclose(y, est.bins.loc[est.bins["count"] > 0, "mean_target"], rtol=1e-12)
    lo, hi = ax.get_ylim()
    assert lo <= np.nanmin(est.bins["low"]) and hi >= np.nanmax(est.bins["high"])
    assert lo < 0.0 or hi > 1.0


def test_count_histogram(sim):
    est = nc.ece(sim.probs, sim.labels, n_bins=10, interval=None)
    ax = reliability_diagram(est)
    (hist,) = ax.child_axes
    heights = [patch.get_height() for patch in hist.patches]
    assert_allclose(heights, est.bins["count"], rtol=0)
    assert hist.get_xlabel() == "mean confidence"
    assert not reliability_diagram(est, show_counts=False).child_axes


def test_titles():
    est = nc.ece(P, Y, n_bins=5, interval=nc.intervals.Bootstrap(n_boot=50))
    title = reliability_diagram(est).get_title()
    assert title == (f"positive-class ECE {est.value:.4f} [{est.low:.4f}, {est.high:.4f}] "
                     "(90% bootstrap)")
    est = nc.ece(P, Y, n_bins=5, interval=None)
    assert reliability_diagram(est).get_title() == f"positive-class ECE {est.value:.4f}"
    assert reliability_diagram(est, title="").get_title() == ""
    assert reliability_diagram(est, title="mine").get_title() == "mine"


def test_misuse():
    with pytest.raises(ValueError, match="binned metric"):
        reliability_diagram(nc.brier(P, Y, interval=None))
    with pytest.raises(TypeError, match="Estimate"):
        reliability_diagram(P)
    est = nc.ece(P, Y, n_bins=5, interval=None)
    with pytest.raises(ValueError, match="level"):
        reliability_diagram(est, level=90)
    with pytest.raises(ValueError, match="hard"):
        reliability_diagram(est, hard="yes")
    with pytest.raises(ValueError, match="ax must be a matplotlib Axes"):
        reliability_diagram(est, ax="left")
    with pytest.raises(ValueError, match="show_counts"):
        reliability_diagram(est, show_counts="no")
    with pytest.raises(ValueError, match="title"):
        reliability_diagram(est, title=3)
    with pytest.raises(ValueError, match="level"):
        reliability_diagram(est, level=float("nan"))


def test_same_drawing_with_given_axes_and_without_counts():
    import matplotlib.pyplot as plt

    est = nc.ece(P, Y, n_bins=5, interval=None)
    a = reliability_diagram(est, show_counts=False)
    _, b = plt.subplots()
    assert reliability_diagram(est, ax=b, show_counts=False) is b
    assert not a.child_axes and not b.child_axes
    assert a.get_xlabel() == b.get_xlabel() == "mean confidence"
    for la, lb in zip(a.get_lines(), b.get_lines(), strict=True):
        np.testing.assert_array_equal(la.get_xydata(), lb.get_xydata())
    assert a.get_ylim() == b.get_ylim() and a.get_title() == b.get_title()


def test_import_noisycal_does_not_import_matplotlib():
    code = ("import noisycal, noisycal.plots, noisycal.datasets, sys; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr


def test_hard_and_level_only_where_they_apply(sim):
    """hard= with bootstrap bars, level= with no bars, and hard=True on targets that are
    not 0/1 are errors, not ignored or rounded."""
    boot = nc.ece(P, Y, n_bins=5, interval=nc.intervals.Bootstrap(n_boot=50), seed=1)
    for hard in (True, False):
        with pytest.raises(ValueError, match=f"hard={hard} does not apply to bootstrap"):
            reliability_diagram(boot, hard=hard)
    plain = nc.ece(P, Y, n_bins=5, interval=None)
    with pytest.raises(ValueError, match="level=0.95 does not apply"):
        reliability_diagram(plain, hard=False, level=0.95)
    soft = nc.targets.soft(counts=sim.counts)
    soft_est = nc.ece(sim.probs, soft, n_bins=10, interval=None)
    with pytest.raises(ValueError, match="level=0.8 does not apply"):
        reliability_diagram(soft_est, level=0.8)
    with pytest.raises(ValueError, match=r"hard=True, but the bins' successes .* not whole"):
        reliability_diagram(soft_est, hard=True)
    # where they apply they still work: Wilson bars at the given level, hard labels
    label, *_ = _bars(reliability_diagram(plain, hard=True, level=0.95))
    assert label == "95% Wilson interval"


def test_consistency_bands_are_binomial_ranges_and_normal_bars_say_so():
    from matplotlib.collections import PolyCollection
    from scipy import stats as sps

    sim = nc.simulate.classifier(2000, 3, temperature=1.0, seed=0)
    est = nc.ece(sim.probs, sim.labels, n_bins=10)          # default: inverted interval
    ax = reliability_diagram(est, bands=True)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "90% normal interval" in labels and "90% consistency band" in labels
    rows = est.bins[est.bins["count"] > 0]
    polys = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(polys) == len(rows)
    r = rows.iloc[0]
    ys = polys[0].get_paths()[0].vertices[:, 1]
    lo = sps.binom.ppf(0.05, r["count"], r["mean_conf"]) / r["count"]
    hi = sps.binom.ppf(0.95, r["count"], r["mean_conf"]) / r["count"]
    assert ys.min() == pytest.approx(lo) and ys.max() == pytest.approx(hi)
    plt.close("all")


# ----------------------------------------------------------------------------------------
# bars clipped to [0, 1], titles that fit, the namespace, set sizes and channel heatmaps
# ----------------------------------------------------------------------------------------

# every item of the top bin is positive with confidences spread over [0.91, 0.99]: the
# normal interval mean target +- z * se(gap) of that bin crosses 1
P_TOP = np.array([0.10, 0.15, 0.12, 0.30, 0.35, 0.91, 0.93, 0.95, 0.97, 0.99])
Y_TOP = np.array([0, 0, 1, 0, 1, 1, 1, 1, 1, 1])


def test_normal_bars_of_unit_targets_are_clipped_to_the_unit_interval():
    est = nc.ece(P_TOP, Y_TOP, n_bins=5)  # default inverted interval: normal bin bars
    nonempty = est.bins[est.bins["count"] > 0]
    assert nonempty["high"].max() > 1.0  # the stored bar crosses 1
    label, _, lo, hi = _bars(reliability_diagram(est))
    assert label == "90% normal interval"
    assert_allclose(hi, np.clip(nonempty["high"], 0, 1), rtol=1e-12)
    assert_allclose(lo, np.clip(nonempty["low"], 0, 1), rtol=1e-12)
    assert hi.max() == 1.0
    # a soft target lies in [0, 1] too
    soft = nc.targets.soft(distribution=np.column_stack([1 - Y_TOP * 0.9, Y_TOP * 0.9]))
    est = nc.ece(P_TOP, soft, n_bins=5)
    _, _, lo, hi = _bars(reliability_diagram(est))
    assert np.all((lo >= 0) & (hi <= 1))


def test_long_default_titles_are_wrapped_inside_the_figure(sim):
    cases = [nc.ece(P, Y, n_bins=5),  # '... (90% inversion, parametric)': wider than 5 in
             nc.ece(sim.probs, sim.labels, n_bins=10, kind="classwise")]
    for est in cases:
        ax = reliability_diagram(est, group=1 if "classwise" in est.name else None)
        fig = ax.figure
        fig.canvas.draw()
        box = ax.title.get_window_extent()
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (ax.get_title(), box)
        assert box.y1 <= fig.bbox.height, (ax.get_title(), box)
        assert "\n" in ax.get_title()
        text = " ".join(ax.get_title().split())
        assert text.startswith(f"{est.name} {est.value:.4f} [{est.low:.4f}, {est.high:.4f}] "
                               "(90% inversion, parametric)")


def test_plots_namespace_exports_only_plots():
    public = {name for name in dir(nc.plots) if not name.startswith("_")}
    assert public == set(nc.plots.__all__)
    assert not {"np", "pd", "Estimate", "TYPE_CHECKING"} & public
    assert {"reliability_diagram", "cumulative_mass_curve", "set_size_plot",
            "confusion_heatmap", "forest_plot"} <= public


SETS = np.array([[True, False, False], [True, True, False], [False, False, False],
                 [False, True, False], [True, True, True]])


def test_set_size_plot_bars_are_the_shares_of_each_size():
    ax = nc.plots.set_size_plot(SETS)
    # sizes 1, 2, 0, 1, 3 -> shares of 0, 1, 2, 3
    assert_allclose([p.get_height() for p in ax.patches], [0.2, 0.4, 0.2, 0.2], rtol=1e-12)
    assert ax.get_title() == "5 sets: mean size 1.4, 20.0% empty"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3"]


def test_set_size_plot_splits_covered_and_missed_sets():
    labels = np.array([0, 2, 1, 1, 2])  # covered: yes, no, no (empty), yes, yes
    ax = nc.plots.set_size_plot(SETS.astype(int), labels=labels)
    heights = np.array([p.get_height() for p in ax.patches]).reshape(2, 4)
    bottoms = np.array([p.get_y() for p in ax.patches]).reshape(2, 4)
    assert_allclose(heights[0], [0.0, 0.4, 0.0, 0.2], atol=1e-12)  # contain the label
    assert_allclose(heights[1], [0.2, 0.0, 0.2, 0.0], atol=1e-12)  # miss it
    assert_allclose(bottoms[1], heights[0], atol=1e-12)
    assert ax.get_title().endswith("coverage 0.600")


@pytest.mark.parametrize("sets, labels, match", [
    (np.ones(3, dtype=bool), None, "shape"), (np.full((2, 2), 0.5), None, "boolean"),
    (SETS, [0, 1], "labels must be 5"), (SETS, [0, 1, 2, 3, 0], "labels must be 5"),
])
def test_set_size_plot_misuse(sets, labels, match):
    with pytest.raises(ValueError, match=match):
        nc.plots.set_size_plot(sets, labels=labels)


def test_confusion_heatmap_draws_each_annotators_matrix():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.3, 0.7]],
                     [[0.5, 0.5], [0.5, 0.5]]])
    axes = nc.plots.confusion_heatmap(conf)
    assert [a.get_title() for a in axes] == ["annotator 0", "annotator 1", "annotator 2"]
    for a, mat in zip(axes, conf, strict=True):
        assert_allclose(a.images[0].get_array(), mat, rtol=0)
        assert [t.get_text() for t in a.texts] == [f"{v:.2f}" for v in mat.ravel()]
        assert a.get_xlabel() == "observed" and a.get_ylabel() == "true"
    (one,) = nc.plots.confusion_heatmap(conf, annotators=[2])
    assert one.get_title() == "annotator 2"


def test_confusion_heatmap_of_a_fit_uses_its_ids_and_classes():
    conf = np.array([[[0.85, 0.15], [0.2, 0.8]], [[0.75, 0.25], [0.1, 0.9]],
                     [[0.9, 0.1], [0.25, 0.75]]])
    long = nc.simulate.dawid_skene(200, [0.6, 0.4], conf, seed=0).annotations.to_long()
    long["annotator"] = np.array(["ann", "bob", "cid"])[long["annotator"]]
    long["label"] = np.array(["no", "yes"])[long["label"]]
    ann = nc.Annotations.from_long(long, item="item", annotator="annotator", label="label")
    fit = nc.DawidSkene(n_classes=2).fit(ann, method=nc.engines.EM(n_starts=1), seed=0)
    _, given = plt.subplots()
    (ax,) = nc.plots.confusion_heatmap(fit, annotators="bob", ax=given)
    assert ax is given and ax.get_title() == "annotator bob"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["no", "yes"]
    assert_allclose(ax.images[0].get_array(), fit.confusion[1], rtol=0)
    with pytest.raises(ValueError, match="neither an annotator id"):
        nc.plots.confusion_heatmap(fit, annotators="eve")
    with pytest.raises(ValueError, match="ax holds one panel"):
        nc.plots.confusion_heatmap(fit, ax=given)
    with pytest.raises(ValueError, match="confusion matrices"):
        nc.plots.confusion_heatmap(np.ones((2, 3)))
