"""noisycal.report: the calibration report table, its exporters and its forest plot."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import noisycal as nc
from noisycal.workflows.report import COLUMNS, Report, to_html, to_latex, to_markdown


@pytest.fixture(scope="module")
def sim():
    return nc.simulate.classifier(500, 3, temperature=0.6, n_annotators=5, seed=2)


@pytest.fixture(scope="module")
def table(sim):
    soft = nc.targets.soft(counts=sim.counts)
    return nc.report(sim.probs, {"labels": sim.labels, "soft": soft},
                     metrics=["ece", "brier", "calibration_slope"], seed=4,
                     interval={"ece": nc.intervals.Inversion(n_boot=200),
                               "brier": nc.intervals.Bootstrap(n_boot=200)})


def test_report_rows_are_the_metrics_called_directly(sim, table):
    assert isinstance(table, Report) and isinstance(table, pd.DataFrame)
    assert list(table.columns) == list(COLUMNS)
    assert list(table["target"]) == ["labels"] * 3 + ["soft"] * 3
    assert list(table["metric"]) == ["ECE", "Brier", "calibration slope"] * 2
    soft = nc.targets.soft(counts=sim.counts)
    inv, boot = nc.intervals.Inversion(n_boot=200), nc.intervals.Bootstrap(n_boot=200)
    direct = [nc.ece(sim.probs, sim.labels, interval=inv, seed=4),
              nc.brier(sim.probs, sim.labels, interval=boot, seed=4),
              nc.calibration_slope(sim.probs, sim.labels, seed=4),
              nc.ece(sim.probs, soft, interval=inv, seed=4),
              nc.brier(sim.probs, soft, interval=boot, seed=4),
              nc.calibration_slope(sim.probs, soft, seed=4)]
    for row, est in zip(table.itertuples(index=False), direct, strict=True):
        assert row.estimate == float(est) and (row.low, row.high) == est.interval
        assert (row.level, row.estimator, row.estimand) == (0.9, est.estimator, est.estimand)
        assert (row.status, row.message, row.n) == (est.status, est.message, 500)
    # the ECE reports the median-unbiased value; the plug-in column keeps the plug-in
    ece_row = table.iloc[0]
    assert ece_row["estimator"] == "median-unbiased"
    assert ece_row["plugin"] == direct[0].details["plugin"]
    assert ece_row["interval"] == "inversion (parametric)"
    assert table.iloc[1]["plugin"] == table.iloc[1]["estimate"]
    assert table.iloc[1]["interval"] == "bootstrap (percentile)"


def test_a_single_target_and_a_list_name_their_rows(sim):
    voted = nc.targets.hard(sim.labels, n_classes=3)
    boot = nc.intervals.Bootstrap(n_boot=100)
    one = nc.report(sim.probs, voted, metrics="brier", interval=boot)
    assert list(one["target"]) == ["hard"]
    two = nc.report(sim.probs, [voted, sim.labels, voted], metrics=["nll"], interval=boot)
    assert list(two["target"]) == ["hard 0", "target 1", "hard 2"]
    assert two["estimate"].iloc[0] == two["estimate"].iloc[1] == two["estimate"].iloc[2]


def test_a_metric_that_refuses_a_target_gives_a_row_with_a_status(sim):
    def unit_only(probs=None, target=None, **kw):
        T = np.asarray(target, dtype=float)
        if T.ndim == 2 and (T.min() < 0 or T.max() > 1):
            raise ValueError("target must lie in [0, 1] for this metric")
        return nc.brier(probs, target, **kw)

    corrected_like = np.eye(3)[sim.labels] * 1.5 - 0.25
    table = nc.report(sim.probs, {"labels": sim.labels, "corrected": corrected_like},
                      metrics=[unit_only], interval=nc.intervals.Bootstrap(n_boot=100))
    ok, refused = table.iloc[0], table.iloc[1]
    assert ok["status"] == "ok" and ok["metric"] == "Brier"
    assert refused["status"] == "not_applicable" and refused["metric"] == "unit_only"
    assert refused["message"] == "target must lie in [0, 1] for this metric"
    assert math.isnan(refused["estimate"]) and math.isnan(refused["low"])


@pytest.mark.parametrize("kwargs, match", [
    ({"target": np.zeros((4, 3))}, r"target 'target' must have shape \(500, 3\)"),
    ({"target": None}, "target is required"),
    ({"target": {}}, "target is empty"),
    ({"metrics": ["ece", "auc"]}, "'auc' is not one of"),
    ({"metrics": []}, "non-empty list"),
    ({"level": 90}, "level"),
])
def test_report_misuse_raises(sim, kwargs, match):
    args = {"target": sim.labels, "metrics": ["brier"], **kwargs}
    with pytest.raises(ValueError, match=match):
        nc.report(sim.probs, **args)


def test_report_with_logits_equals_report_with_probs(sim):
    boot = nc.intervals.Bootstrap(n_boot=100)
    a = nc.report(sim.probs, sim.labels, metrics=["brier", "nll"], interval=boot)
    b = nc.report(logits=sim.logits, target=sim.labels, metrics=["brier", "nll"],
                  interval=boot)
    assert_allclose(a["estimate"], b["estimate"], rtol=1e-10)
    with pytest.raises(ValueError, match="exactly one of probs= or logits="):
        nc.report(sim.probs, sim.labels, logits=sim.logits)


def test_the_interval_option_is_passed_on(sim):
    # one option for every metric: a metric that does not offer its kind gives a row
    table = nc.report(sim.probs, sim.labels, metrics=["ece", "brier", "calibration_slope"],
                      interval=nc.intervals.Wald())
    assert list(table["status"]) == ["not_applicable", "ok", "ok"]
    assert table.iloc[0]["message"].startswith("ece does not offer interval=Wald()")
    assert list(table["interval"])[1:] == ["wald", "wald"]
    # None: no intervals; a dict: per metric, the others at their default
    none = nc.report(sim.probs, sim.labels, metrics=["brier", "nll"], interval=None)
    assert none["low"].isna().all() and list(none["status"]) == ["ok", "ok"]
    mixed = nc.report(sim.probs, sim.labels, metrics=["brier", "nll"],
                      interval={"nll": "wald"})
    assert list(mixed["interval"]) == ["bootstrap (percentile)", "wald"]
    with pytest.raises(ValueError, match=r"interval: \['ece'\] are not metrics of this "
                                         r"report"):
        nc.report(sim.probs, sim.labels, metrics=["brier"], interval={"ece": None})
    with pytest.raises(ValueError, match="interval must be 'auto', None"):
        nc.report(sim.probs, sim.labels, metrics=["brier"], interval="wilson")
    with pytest.raises(TypeError, match="n_boot"):
        nc.report(sim.probs, sim.labels, metrics=["brier"], n_boot=100)


def test_derived_tables_are_plain_frames(table):
    ok = table[table["status"] == "ok"]
    assert type(ok) is pd.DataFrame
    assert to_markdown(ok) == table.to_markdown()  # every row is ok here


# ------------------------------------------------------------------ exporters
FRAME = pd.DataFrame({"target": ["t_1", "a|b"], "metric": ["ECE", "NLL"],
                      "estimate": [0.012345, 1.5], "low": [0.0, float("nan")],
                      "high": [0.02, float("nan")], "level": [0.9, None],
                      "status": ["ok", "degenerate"], "message": ["", "50% & {x}"]})
COLS = ["target", "metric", "estimate", "low", "high", "level", "status", "message"]


def test_markdown_export_by_hand():
    assert to_markdown(FRAME, columns=COLS, digits=3) == (
        "| target | metric | estimate | low | high | level | status | message |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| t_1 | ECE | 0.012 | 0.000 | 0.020 | 90% | ok |  |\n"
        "| a\\|b | NLL | 1.500 |  |  |  | degenerate | 50% &amp; {x} |")  # & as an entity


def test_latex_export_by_hand():
    assert to_latex(FRAME, columns=["target", "estimate", "level", "message"],
                    caption="ECE_1 & co", label="tab:ece") == (
        "\\begin{table}[ht]\n\\centering\n\\begin{tabular}{lrrl}\n\\toprule\n"
        "target & estimate & level & message \\\\\n\\midrule\n"
        "t\\_1 & 0.0123 & 90\\% &  \\\\\n"
        "a|b & 1.5000 &  & 50\\% \\& \\{x\\} \\\\\n"
        "\\bottomrule\n\\end{tabular}\n\\caption{ECE\\_1 \\& co}\n\\label{tab:ece}\n"
        "\\end{table}")


def test_html_export_escapes_and_keeps_the_cells():
    text = to_html(FRAME, columns=COLS)
    assert text.startswith("<table") and text.endswith("</table>")
    assert text.count("<tr>") == 3 and text.count("<th ") == len(COLS)
    for cell in ("0.0123", "90%", "degenerate", "50% &amp; {x}", "a|b"):
        assert f">{cell}</td>" in text, cell


def test_exporters_refuse_unknown_columns_and_bad_digits():
    with pytest.raises(ValueError, match=r"columns \['width'\] are not in the table"):
        to_markdown(FRAME, columns=["target", "width"])
    with pytest.raises(ValueError, match="digits"):
        to_latex(FRAME, columns=COLS, digits=-1)


def test_report_exports_its_default_columns(table):
    md = table.to_markdown().splitlines()
    # the plug-in value and n are exported beside the estimate ("nothing silent" issue)
    assert md[0] == ("| target | metric | estimate | plugin | low | high | level | interval | "
                     "estimator | n | statuses | message |")
    assert len(md) == 2 + len(table)
    assert md[2].startswith(f"| labels | ECE | {table['estimate'].iloc[0]:.4f} | "
                            f"{table['plugin'].iloc[0]:.4f} | "
                            f"{table['low'].iloc[0]:.4f} | {table['high'].iloc[0]:.4f} | 90% "
                            f"| inversion (parametric) | median-unbiased | "
                            f"{table['n'].iloc[0]} | ok |")
    assert table.to_latex().count("\\\\") == 1 + len(table)
    assert table.to_html().count("<tr>") == 1 + len(table)


# ------------------------------------------------------------------ forest plot
def test_forest_plot_draws_each_interval_in_its_metrics_panel(table):
    axes = table.forest_plot()
    assert len(axes) == 3
    assert [a.get_xlabel() for a in axes] == ["ECE", "Brier", "calibration slope"]
    assert axes[0].get_title() == "90% intervals"
    for ax, metric in zip(axes, ["ECE", "Brier", "calibration slope"], strict=True):
        rows = table[table["metric"] == metric]
        bars, points = ax.get_lines()[:2]
        xy = np.asarray(bars.get_xydata(), dtype=float).reshape(-1, 3, 2)
        assert_allclose(xy[:, 0, 0], rows["low"], rtol=1e-12)
        assert_allclose(xy[:, 1, 0], rows["high"], rtol=1e-12)
        assert_allclose(points.get_xdata(), rows["estimate"], rtol=1e-12)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["labels", "soft"]


def test_forest_plot_marks_rows_that_are_not_ok():
    ests = {"a": nc.Estimate("ECE", 0.1, (0.05, 0.2), 0.9, "bootstrap"),
            "b": nc.Estimate("ECE", 0.3, (0.1, 0.2), 0.9, "bootstrap", status="weak",
                             message="m"),
            "c": nc.Estimate("ECE", 0.2)}
    _, given = plt.subplots()
    with pytest.warns(nc.NumericalWarning):  # d's value lies outside its interval
        ests["d"] = nc.Estimate("ECE", 0.5, (0.1, 0.2), 0.9, "bootstrap")
    (ax,) = nc.plots.forest_plot(ests, ax=given, title="mine")
    assert ax is given and ax.get_title() == "mine"
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "a", "b (weak)", "c", "d (estimate_outside_interval)"]
    bars, ok, bad = ax.get_lines()
    assert np.isnan(bars.get_xydata()).any() and len(bars.get_xdata()) == 9  # 3 intervals
    assert_allclose(ok.get_xdata(), [0.1, 0.2])
    assert_allclose(bad.get_xdata(), [0.3, 0.5])
    assert bad.get_markerfacecolor() == "white"


def test_forest_plot_misuse(table):
    with pytest.raises(ValueError, match="must have the columns"):
        nc.plots.forest_plot(pd.DataFrame({"metric": ["x"]}))
    with pytest.raises(ValueError, match="list or dict of Estimates"):
        nc.plots.forest_plot([1, 2])
    _, given = plt.subplots()
    with pytest.raises(ValueError, match="ax holds one panel"):
        nc.plots.forest_plot(table, ax=given)
    with pytest.raises(ValueError, match="no rows"):
        nc.plots.forest_plot(table.iloc[:0])


# ------------------------------------------------------------------ every status
def test_a_row_lists_every_status_of_its_estimate():
    from noisycal.engines.results import AnnotatorFit

    n, K = 6, 2
    fit = AnnotatorFit("dawid_skene", "em", np.arange(K), np.arange(3), np.arange(n),
                       np.full((1, K), 0.5), np.tile(np.eye(K), (3, 1, 1)),
                       np.tile([0.7, 0.3], (n, 1)), -1.0, 7, "not_converged",
                       "the iteration limit was reached", False, 1, statuses=("boundary",))
    t = nc.targets.posterior(None, fit)
    probs = np.array([0.2, 0.7, 0.1, 0.6, 0.5, 0.55])
    table = nc.report(probs, {"posterior": t}, metrics=["brier", "nll"], interval=None)
    assert list(table["status"]) == ["target_not_converged"] * 2
    assert list(table["statuses"]) == ["target_not_converged, target_boundary"] * 2
    md = table.to_markdown().splitlines()
    assert md[0].endswith("| statuses | message |")
    assert "| target_not_converged, target_boundary | the target is not reliable" in md[2]
