"""plan_annotations: bad inputs, width against budget, the cheapest budget, seeds, statuses."""

import numpy as np
import pytest

import noisycal as nc
from noisycal.workflows import AnnotationPlan, plan_annotations

K, J = 3, 4
PROBS = np.random.default_rng(0).dirichlet([1.0] * K, size=400)
CHANNELS = np.tile(np.full((K, K), 0.05) + 0.85 * np.eye(K), (J, 1, 1))
# the bootstrap interval keeps the tests fast (the default inverted interval costs seconds)
FAST = nc.intervals.Bootstrap(n_boot=200)


def _plan(channels=CHANNELS, **kw):
    args = dict(n_items=[150, 600], ratings_per_item=[3], width=0.1, n_sims=3, n_bins=10,
                interval=FAST, seed=1)
    args.update(kw)
    return plan_annotations(PROBS, channels, **args)


@pytest.mark.parametrize("kw, match", [
    ({"n_items": []}, "n_items: the grid must be a non-empty"),
    ({"ratings_per_item": []}, "ratings_per_item: the grid must be a non-empty"),
    ({"ratings_per_item": [5]}, "ratings_per_item: 5 ratings per item exceed the 4"),
    ({"n_items": [1.5]}, "n_items must be an integer"),
    ({"width": 0.0}, "width: the target interval width must be a positive"),
    ({"width": -0.1}, "width: the target interval width must be a positive"),
    ({"level": 90}, r"level must be a fraction in \(0, 1\), got 90 \(levels are fractions"),
    ({"n_sims": 0}, "n_sims must be >= 1"),
    ({"truth": "recalibrated"}, "truth must be one of"),
    ({"truth": np.full((400, K), 0.5)}, "truth: each row must be non-negative and sum to 1"),
])
def test_bad_inputs_name_the_argument(kw, match):
    with pytest.raises(ValueError, match=match):
        _plan(**kw)


def test_channels_not_row_stochastic_or_of_another_class_count_are_refused():
    bad = CHANNELS.copy()
    bad[0, 0] = [0.5, 0.3, 0.3]
    with pytest.raises(ValueError, match="channels: each confusion row must be"):
        plan_annotations(PROBS, bad, n_items=[100], ratings_per_item=[2], width=0.1)
    with pytest.raises(ValueError, match="channels have 2 classes, probs has 3 columns"):
        plan_annotations(PROBS, CHANNELS[:, :2, :2] / CHANNELS[:, :2, :2].sum(2, keepdims=True),
                         n_items=[100], ratings_per_item=[2], width=0.1)


def test_the_median_width_falls_with_the_items_and_the_plan_repeats_with_its_seed():
    plan = _plan()
    t = plan.to_frame()
    assert list(t.columns) == ["n_items", "ratings_per_item", "n_ratings", "median_width",
                               "width_q10", "width_q90", "share_not_ok", "coverage", "n_sims"]
    assert t["n_items"].tolist() == [150, 600] and t["n_sims"].tolist() == [3, 3]
    assert plan.population == 0.0  # truth='probs': a calibrated classifier
    med = t["median_width"].to_numpy()
    assert med[1] < med[0] and med[1] < 0.2
    assert med.tolist() == pytest.approx([0.0845268, 0.0501695], rel=1e-5)
    # the percentile bootstrap of the plug-in misses ECE 0 from above (status plugin_bias)
    assert t["share_not_ok"].tolist() == [1.0, 1.0] and t["coverage"].tolist() == [0.0, 0.0]
    again = _plan()
    np.testing.assert_array_equal(again.lower, plan.lower)
    np.testing.assert_array_equal(again.upper, plan.upper)
    assert again.statuses == plan.statuses
    other = _plan(n_items=[150], seed=2)
    assert not np.array_equal(other.upper, plan.upper[:1])


def _hand_plan(widths, n_items, ratings, width=0.1, statuses=None, **kw):
    st = statuses or tuple(("ok", "weak_channels") for _ in widths)
    w = np.asarray(widths, dtype=float)[:, None] * np.ones((1, len(st[0])))
    return AnnotationPlan(np.array(n_items), np.array(ratings), np.zeros_like(w), w, st,
                          0.0, width, 0.9, "probs", **kw)


def test_smallest_budget_takes_the_fewest_ratings_that_reach_the_width():
    plan = _hand_plan([0.20, 0.09, 0.12, 0.08, 0.05, 0.08],
                      [100, 400, 100, 200, 400, 200], [1, 1, 3, 3, 3, 2])
    t = plan.to_frame()
    assert t["n_ratings"].tolist() == [100, 400, 300, 600, 1200, 400]
    assert t["share_not_ok"].tolist() == [0.5] * 6 and t["coverage"].tolist() == [1.0] * 6
    best = plan.smallest_budget(max_share_not_ok=0.5)
    # 400 ratings twice (400 x 1 at 0.09, 200 x 2 at 0.08): the narrower wins
    assert (best.n_items, best.ratings_per_item, best.n_ratings) == (200, 2, 400)
    assert best.median_width == 0.08 and best.share_not_ok == 0.5
    assert best.status == "weak_channels" and best.statuses == ("weak_channels",)
    assert plan.smallest_budget(0.06, max_share_not_ok=0.5).n_ratings == 1200
    none = plan.smallest_budget(0.01)
    assert none.n_items is None and none.ratings_per_item is None
    assert none.status == "width_not_reached" and none.statuses == ("width_not_reached",)
    assert "narrowest median width is 0.05 at 400 items x 3 ratings" in none.message
    with pytest.raises(ValueError, match="width: the target"):
        plan.smallest_budget(0)


def test_a_cell_with_non_ok_simulations_gives_a_non_ok_choice_with_their_statuses():
    plan = _hand_plan([0.08, 0.05], [200, 400], [2, 3],
                      statuses=(("weak_channels", "ok", "plugin_bias", "weak_channels"),
                                ("ok", "ok", "ok", "ok")))
    best = plan.smallest_budget(max_share_not_ok=0.75)
    assert (best.n_items, best.ratings_per_item, best.share_not_ok) == (200, 2, 0.75)
    # most severe first: plugin_bias (a metric's own code) before weak_channels
    assert best.statuses == ("plugin_bias", "weak_channels")
    assert best.status == "plugin_bias"
    assert best.message == ("200 items x 2 ratings, had 3 of 4 simulations (75%) not ok: "
                            "plugin_bias (1), weak_channels (2): the analysis flags the "
                            "planned width in that share of data sets")
    # the default (0: every simulation ok) skips that cell for the dearer clean one
    clean = plan.smallest_budget()
    assert (clean.n_items, clean.ratings_per_item, clean.n_ratings) == (400, 3, 1200)
    assert clean.status == "ok" and clean.statuses == ("ok",) and clean.message == ""
    assert clean.share_not_ok == 0.0
    assert plan.smallest_budget(max_share_not_ok=0.5).n_ratings == 1200


def test_no_choice_when_every_cell_that_reaches_the_width_has_too_many_non_ok():
    plan = _hand_plan([0.20, 0.08, 0.05], [100, 200, 400], [1, 2, 3])
    none = plan.smallest_budget()
    assert none.n_items is None and np.isnan(none.median_width)
    assert none.status == "share_not_ok_exceeded"
    assert none.statuses == ("share_not_ok_exceeded",)
    assert none.message == (
        "every budget that reaches a median width of 0.1 has a share of non-ok simulations "
        "above max_share_not_ok=0: the cheapest, 200 items x 2 ratings, had 1 of 2 "
        "simulations (50%) not ok: weak_channels (1); raise max_share_not_ok to accept it, "
        "or extend the grid")
    assert plan.smallest_budget(max_share_not_ok=0.4).status == "share_not_ok_exceeded"
    assert plan.smallest_budget(max_share_not_ok=0.5).status == "weak_channels"
    for bad in (-0.1, 1.5, True, "0.1"):
        with pytest.raises(ValueError, match="max_share_not_ok: a share in"):
            plan.smallest_budget(max_share_not_ok=bad)


def test_the_channel_fits_statuses_travel_into_every_choice():
    kw = dict(status="channels_not_converged", message="EM stopped",
              channel_statuses=("not_converged", "boundary"))
    plan = _hand_plan([0.08, 0.05], [200, 400], [2, 3],
                      statuses=(("weak_channels", "ok"), ("ok", "ok")), **kw)
    best = plan.smallest_budget()
    assert (best.n_items, best.ratings_per_item) == (400, 3)
    assert best.status == "channels_not_converged"
    assert best.statuses == ("channels_not_converged", "channels_boundary")
    assert best.message == "EM stopped"
    loose = plan.smallest_budget(max_share_not_ok=0.5)
    assert loose.statuses == ("channels_not_converged", "channels_boundary", "weak_channels")
    assert loose.message.startswith("EM stopped; 200 items x 2 ratings, had 1 of 2")
    none = plan.smallest_budget(0.01)
    assert none.statuses == ("channels_not_converged", "channels_boundary",
                             "width_not_reached")
    assert none.message.startswith("EM stopped; no budget of the grid reaches")


def test_a_non_ok_pilot_fit_passed_as_channels_gives_the_plan_its_status():
    rng = np.random.default_rng(3)
    y = rng.integers(0, K, 60)
    item, who = np.repeat(np.arange(60), J), np.tile(np.arange(J), 60)
    label = np.array([rng.choice(K, p=CHANNELS[j, y[i]]) for i, j in zip(item, who, strict=True)])
    ann = nc.Annotations.from_arrays(item, who, label, classes=np.arange(K))
    with pytest.warns(nc.ConvergenceWarning):
        fit = nc.DawidSkene().fit(ann, method=nc.engines.EM(n_starts=1, max_iter=1))
    assert fit.status == "not_converged"
    plan = _plan(channels=fit, n_items=[150], n_sims=1)
    assert plan.status == "channels_not_converged"
    assert plan.channel_statuses == fit.statuses
    assert plan.message.startswith("the channels come from a fit with status not_converged")
    choice = plan.smallest_budget(max_share_not_ok=1.0)
    assert choice.statuses[:len(fit.statuses)] == tuple(f"channels_{s}" for s in fit.statuses)
    assert choice.status == "channels_not_converged" and choice.n_items == 150
    assert _plan(n_items=[150], n_sims=1).status == "ok"


def test_interval_none_is_refused_up_front():
    with pytest.raises(ValueError, match="interval: None gives no interval"):
        _plan(interval=None)
