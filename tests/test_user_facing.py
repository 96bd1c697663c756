"""What a user touches: reprs (text and HTML), target subsetting, calibrator calls and the
diagnostics' messages."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal.engines.density.diagnostics import convergence_status

CONF = np.array([[[0.85, 0.15], [0.20, 0.80]],
                 [[0.75, 0.25], [0.10, 0.90]],
                 [[0.90, 0.10], [0.25, 0.75]]])


@pytest.fixture(scope="module")
def sim_fit():
    sim = nc.simulate.dawid_skene(300, [0.6, 0.4], CONF, seed=3)
    fit = nc.DawidSkene(n_classes=2).fit(sim.annotations, method=nc.engines.EM(n_starts=1), seed=0)
    return sim, fit


# ------------------------------------------------------------------ Estimate repr
def test_median_unbiased_estimate_prints_its_plug_in_beside_it():
    est = nc.Estimate("ECE", 0.0, (0.0, 0.0089), 0.9, "inversion", "parametric", n=100,
                      estimator="median-unbiased", details={"plugin": 0.0074})
    assert repr(est) == ("ECE 0.0000 (plug-in 0.0074) [0.0000, 0.0089] 90% inversion "
                         "(parametric), median-unbiased estimate")
    assert str(est) == repr(est)


def test_a_plug_in_estimate_does_not_repeat_itself():
    est = nc.Estimate("Brier", 0.25, (0.2, 0.3), 0.9, "bootstrap", "percentile",
                      estimator="plug-in", details={"plugin": 0.25})
    assert repr(est) == "Brier 0.2500 [0.2000, 0.3000] 90% bootstrap (percentile)"
    nan_plugin = nc.Estimate("ECE", 0.1, estimator="median-unbiased",
                             details={"plugin": float("nan")})
    assert "plug-in" not in repr(nan_plugin)


def test_default_ece_repr_shows_the_stored_plug_in():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=2000)
    y = (rng.uniform(size=2000) < p).astype(int)
    est = nc.ece(p, y)
    assert est.estimator == "median-unbiased"
    plugin = est.details["plugin"]
    m = re.match(r"positive-class ECE ([0-9.]+) \(plug-in ([0-9.]+)\) \[", repr(est))
    assert m, repr(est)
    assert float(m.group(1)) == round(float(est), 4)
    assert float(m.group(2)) == round(plugin, 4)
    # the plug-in is biased upward near 0: here it exceeds the median-unbiased value
    assert plugin > float(est)


# ------------------------------------------------------------------ HTML views
def test_estimate_html_shows_value_plug_in_interval_and_status():
    est = nc.Estimate("ECE <top>", 0.0123, (0.01, 0.02), 0.9, "inversion", "parametric",
                      n=50, estimator="median-unbiased", details={"plugin": 0.0456},
                      status="degenerate", message="a & b")
    text = est._repr_html_()
    assert "ECE &lt;top&gt;" in text and "<top>" not in text  # escaped
    for part in ("0.0123", "0.0456", "[0.0100, 0.0200]", "90%", "inversion (parametric)",
                 "median-unbiased", "status degenerate", "a &amp; b"):
        assert part in text, part


def test_estimate_html_has_the_per_bin_table():
    sim = nc.simulate.classifier(200, 3, seed=0)
    est = nc.ece(sim.probs, sim.labels, n_bins=5, interval=None)
    text = est._repr_html_()
    assert "per-bin table (5 rows)" in text
    # value, estimator, estimand, n (no interval rows); then the bins' header and 5 bins
    assert text.count("<tr>") == 4 + 1 + 5
    assert "<th" in text and "mean_target" in text
    assert f"{float(est):.4f}" in text


def test_annotator_fit_html_shows_prevalence_and_channel_diagonals(sim_fit):
    _, fit = sim_fit
    text = fit._repr_html_()
    assert "dawid_skene fit by em" in text and "status <b>ok</b>" in text
    for v in np.r_[fit.prevalence, np.diagonal(fit.confusion, axis1=1, axis2=2).ravel()]:
        assert f"{v:.4f}" in text
    assert f"{fit.n_items} items, 3 annotators, 2 classes" in text


def test_target_html_lists_items_and_flags_off_simplex_rows(sim_fit):
    sim, fit = sim_fit
    t = nc.targets.corrected(sim.annotations, fit)
    text = t._repr_html_()
    assert "Target (corrected)" in text and "300 items, 2 classes" in text
    assert ("rows leave the probability simplex" in text) == (not t.is_probability)
    assert "... 280 more items" in text  # 20 rows shown
    assert text.count("<tr>") == 1 + 20
    assert f"{t.values[0, 1]:.4f}" in text


# ------------------------------------------------------------------ Target[idx]
def test_target_rows_by_integer_array_mask_and_slice():
    t = nc.targets.hard(["b", "a", "b", "c"], classes=["c", "b", "a"],
                        items=["i0", "i1", "i2", "i3"])
    sub = t[np.array([2, 0])]
    assert sub.items.tolist() == ["i2", "i0"]
    np.testing.assert_array_equal(sub.values, [[0, 1, 0], [0, 1, 0]])
    assert sub.classes.tolist() == ["c", "b", "a"] and sub.kind == "hard"
    mask = t[np.array([False, True, False, True])]
    assert mask.items.tolist() == ["i1", "i3"]
    np.testing.assert_array_equal(mask.values, [[0, 0, 1], [1, 0, 0]])
    assert t[1:3].items.tolist() == ["i1", "i2"] and t[::-1].items.tolist()[0] == "i3"
    assert t[[-1]].items.tolist() == ["i3"]
    assert t[[0, 1]].values.flags.writeable is False  # still a read-only matrix


def test_target_rows_keep_status_message_and_details(sim_fit):
    sim, fit = sim_fit
    t = nc.targets.corrected(sim.annotations, fit)
    failed = t.__class__(t.values, "corrected", classes=t.classes, items=t.items,
                         details=t.details, status="not_converged", message="why")
    idx = np.arange(0, 300, 3)
    sub = failed[idx]
    assert (sub.status, sub.message, sub.kind) == ("not_converged", "why", "corrected")
    np.testing.assert_array_equal(sub.values, t.values[idx])
    np.testing.assert_array_equal(sub.items, t.items[idx])
    # the per-item details follow the rows; the channels and weights stay
    np.testing.assert_array_equal(sub.details["ratings"], t.details["ratings"][idx])
    np.testing.assert_array_equal(sub.details["observed"], t.details["observed"][idx])
    assert sub.details["confusion"] is t.details["confusion"]
    np.testing.assert_array_equal(sub.details["weights"], t.details["weights"])


def test_a_split_of_a_corrected_target_equals_the_target_of_the_split(sim_fit):
    sim, fit = sim_fit
    t = nc.targets.corrected(sim.annotations, fit)
    rng = np.random.default_rng(1)
    test = np.sort(rng.choice(300, 120, replace=False))
    sub_ann = sim.annotations.subset(test)
    direct = nc.targets.corrected(sub_ann, fit, weights=t.details["weights"])
    np.testing.assert_allclose(t[test].values, direct.values, rtol=1e-12, atol=1e-12)
    probs = np.clip(t.values[:, 1] * 0.0 + 0.5 + 0.3 * (sim.true_class - 0.5), 0, 1)
    e_split = nc.ece(probs[test], t[test], n_bins=5, interval=None)
    e_direct = nc.ece(probs[test], direct, n_bins=5, interval=None)
    assert float(e_split) == pytest.approx(float(e_direct), rel=1e-12)


@pytest.mark.parametrize("index, message", [
    (1, "single integer"), (np.array([[0]]), "one-dimensional"),
    (np.array([True, False]), "one entry per item"), ([4], "outside the 4 rows"),
    ([-5], "outside the 4 rows"), ([0.5], "integers or booleans"),
])
def test_target_rows_refuse_bad_indices(index, message):
    t = nc.targets.hard([0, 1, 1, 0], n_classes=2)
    with pytest.raises(ValueError, match=message):
        t[index]


# ------------------------------------------------------------------ calibrators
def _calibrators():
    return [cls for name in nc.calibrators.__all__ if name != "Calibrator"
            and isinstance(cls := getattr(nc.calibrators, name), type)
            and issubclass(cls, nc.calibrators.Calibrator)]


@pytest.mark.parametrize("cls", _calibrators(), ids=lambda c: c.__name__)
def test_positional_fit_says_how_to_call_it(cls):
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match=rf"{cls.__name__}\.fit takes its inputs by keyword"
                       r".*call fit\(probs=\.\.\., (target|annotations)=\.\.\.\)") as info:
        cls().fit(rng.uniform(size=20), rng.integers(0, 2, 20))
    assert "2 positional argument(s)" in str(info.value)


def test_positional_predict_proba_says_both_inputs_and_keywords_still_work():
    sim = nc.simulate.classifier(300, 3, seed=0)
    z = sim.logits
    cal = nc.calibrators.VectorScaling().fit(logits=z, target=sim.labels)
    with pytest.raises(TypeError, match=r"call predict_proba\(probs=\.\.\.\) or "
                                        r"predict_proba\(logits=\.\.\.\)"):
        cal.predict_proba(z)
    np.testing.assert_allclose(cal.predict_proba(logits=z).sum(1), 1.0, rtol=1e-12)
    import inspect

    # the signature users see is still the keyword-only one
    params = inspect.signature(nc.calibrators.VectorScaling.fit).parameters
    assert all(p.kind is p.KEYWORD_ONLY for n, p in params.items() if n != "self")


# ------------------------------------------------------------------ messages
def test_r_hat_message_prints_enough_digits_to_be_true():
    status, message = convergence_status(1.0104, 0, 1.01)
    assert status == "not_converged"
    assert "max R-hat 1.0104 exceeds 1.01" in message
    printed = float(re.search(r"R-hat ([0-9.]+)", message).group(1))
    assert printed > 1.01
    assert "max R-hat 1.200 exceeds 1.01" in convergence_status(1.2, 0, 1.01)[1]
    tiny = convergence_status(1.0100000003, 0, 1.01)[1]
    assert float(re.search(r"R-hat ([0-9.]+)", tiny).group(1)) > 1.01


def test_nuts_is_named_once_in_the_fit_warning():
    message = convergence_status(1.2, 2, 1.01)[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nc.DawidSkene(n_classes=2)._warn("NUTS", "not_converged", message)
    text = str(caught[0].message)
    assert text.startswith("dawid_skene NUTS: max R-hat 1.200")
    assert text.count("NUTS:") == 1  # the engine named once; the advice names NUTS(...)
