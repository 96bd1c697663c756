"""AnnotatorFit.statuses: every problem of a fit, most severe first; status == statuses[0]."""

import warnings

import numpy as np
import pytest

import noisycal as nc
from noisycal._util.statuses import severity
from noisycal.engines.results import AnnotatorFit
from noisycal.engines.status import (
    design_problems,
    design_status,
    estimate_problems,
    estimate_status,
    every_status,
    first_status,
)


def test_design_problems_lists_every_problem_and_design_status_the_first():
    # class 'c' never rated; 12 parameters, 8 pattern frequencies, 6 ratings of 3 items
    args = (np.array([3, 3, 0]), np.array(["a", "b", "c"]), 12, 6)
    found = design_problems(*args, J=2, L=1, n_items=3)
    assert [code for code, _ in found] == ["unobserved_class", "not_identified",
                                           "over_parametrised"]
    assert design_status(*args, J=2, L=1, n_items=3) == found[0]
    assert design_status(np.array([5, 5]), np.array([0, 1]), 3, 100, J=3, L=1) == ("ok", "")


def test_estimate_problems_lists_not_converged_small_gap_and_boundary():
    prev = np.array([[1.0 - 1e-9, 1e-9]])
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.6, 0.4]]])  # gap 0
    found = estimate_problems(prev, conf, converged=False)
    assert [code for code, _ in found] == ["not_converged", "small_gap", "boundary"]
    assert estimate_status(prev, conf, False) == found[0]
    assert estimate_problems(np.array([[0.5, 0.5]]), conf[:1], True) == []


def test_first_status_and_every_status_follow_the_one_ranking():
    found = [("boundary", "b"), ("small_gap", "g"), ("not_converged", "n")]
    assert first_status(found) == (("not_converged", "n"), [("small_gap", "g"),
                                                            ("boundary", "b")])
    assert first_status([]) == (("ok", ""), [])
    assert every_status("small_gap", "g", ("boundary", "b"), ("ok", "")) == (
        "small_gap", "g; b", ("small_gap", "boundary"))


def _fit(status, statuses=()):
    K, J, n = 2, 2, 3
    return AnnotatorFit("dawid_skene", "em", np.arange(K), np.arange(J), np.arange(n),
                        np.full((1, K), 0.5), np.tile(np.eye(K), (J, 1, 1)),
                        np.full((n, K), 0.5), -1.0, 5, status, "m", True, 1,
                        statuses=statuses)


def test_a_hand_built_fit_orders_its_statuses_and_shows_them():
    fit = _fit("boundary", ("weakly_identified", "boundary", "ok"))
    assert fit.statuses == ("weakly_identified", "boundary")
    assert fit.status == "weakly_identified"
    assert "statuses=('weakly_identified', 'boundary')" in repr(fit)
    assert "statuses weakly_identified, boundary" in fit._repr_html_()
    assert _fit("ok").statuses == ("ok",) and "status='ok'" in repr(_fit("ok"))


def test_copies_and_pickles_keep_the_statuses():
    import copy
    import pickle

    fit = _fit("not_converged", ("boundary",))
    for other in (copy.copy(fit), copy.deepcopy(fit), pickle.loads(pickle.dumps(fit))):
        assert other.statuses == ("not_converged", "boundary")


def test_an_em_fit_with_several_problems_lists_them_in_severity_order():
    sim = nc.simulate.dawid_skene(60, [0.6, 0.4], np.array(
        [[[0.9, 0.1], [0.2, 0.8]], [[0.85, 0.15], [0.1, 0.9]], [[0.8, 0.2], [0.3, 0.7]]]),
        seed=0)
    ann = sim.annotations
    three = nc.Annotations.from_arrays(ann.item_index, ann.annotator_index, ann.label_index,
                                       classes=[0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        fit = nc.DawidSkene(3).fit(three, method=nc.engines.EM(n_starts=1, max_iter=1))
    # the design problem is still the status; the convergence failure is no longer lost
    assert fit.status == "unobserved_class"
    assert fit.statuses == ("unobserved_class", "not_converged", "boundary")
    assert fit.statuses == tuple(sorted(fit.statuses, key=severity))
    assert fit.message.startswith("class(es) [2] never occur")
    assert "iteration limit" in fit.message and "boundary" in fit.message
    assert "statuses=('unobserved_class', 'not_converged', 'boundary')" in repr(fit)
    # a target from it carries all three, and so does an Estimate against that target
    t = nc.targets.posterior(None, fit)
    assert t.statuses == fit.statuses
    est = nc.brier(np.full((60, 3), 1 / 3), t, interval=None)
    assert est.statuses == ("target_unobserved_class", "target_not_converged",
                            "target_boundary")


@pytest.mark.parametrize("make", [
    lambda s, more: _fit(s, more),
    lambda s, more: nc.Target(np.eye(2), "matrix", status=s, statuses=more),
    lambda s, more: nc.Estimate("x", 0.1, status=s, statuses=more),
    lambda s, more: nc.metrics.CalibrationTest(0.1, 0.5, "gaussian", 10, 9,
                                                           status=s, statuses=more),
])
@pytest.mark.parametrize("status, more", [
    ("ok", ()), ("ok", ("boundary",)), ("boundary", ("not_converged", "no_bins")),
    ("estimate_outside_interval", ("target_boundary",)), ("weak_channels", ("ok", "ok")),
])
def test_status_is_always_the_first_of_statuses(make, status, more):
    result = make(status, more)
    assert result.status == result.statuses[0]
    assert len(set(result.statuses)) == len(result.statuses)
    assert ("ok" in result.statuses) == (result.statuses == ("ok",))
    assert set(result.statuses) >= {s for s in (status, *more) if s != "ok"}
