"""The one status ranking: order, repeats, 'ok', a target's statuses, unlisted codes."""

import pytest

from noisycal._util.statuses import SEVERITY, join_messages, ordered_statuses, severity


def test_the_ranking_lists_each_status_once_and_ends_with_the_mildest():
    assert len(set(SEVERITY)) == len(SEVERITY)
    assert SEVERITY[0] == "nonfinite" and SEVERITY[-1] == "estimate_outside_interval"
    assert "ok" not in SEVERITY


def test_ordered_statuses_sorts_most_severe_first_without_repeats_or_ok():
    assert ordered_statuses(["boundary", "ok", "not_converged", "boundary", "small_gap"]) \
        == ("not_converged", "small_gap", "boundary")
    assert ordered_statuses(["unobserved_class", "over_parametrised", "not_identified"]) \
        == ("unobserved_class", "not_identified", "over_parametrised")
    assert ordered_statuses(["adversarial_channel", "weakly_identified", "boundary"]) \
        == ("adversarial_channel", "weakly_identified", "boundary")


@pytest.mark.parametrize("given", [[], ["ok"], ["ok", "ok"], ["", "ok"]])
def test_nothing_but_ok_is_ok(given):
    assert ordered_statuses(given) == ("ok",)


def test_a_targets_statuses_rank_before_an_estimates_own_in_their_fits_order():
    assert ordered_statuses(["estimate_outside_interval", "nonfinite", "target_boundary",
                             "target_not_converged", "weak_channels"]) == (
        "target_not_converged", "target_boundary", "nonfinite", "weak_channels",
        "estimate_outside_interval")


def test_unlisted_statuses_rank_between_the_fit_checks_and_weak_channels_in_given_order():
    assert ordered_statuses(["estimate_outside_interval", "no_bins", "weak_channels",
                             "too_few_items", "weakly_identified"]) == (
        "weakly_identified", "no_bins", "too_few_items", "weak_channels",
        "estimate_outside_interval")
    assert severity("separation") == severity("nonfinite_se")


def test_join_messages_skips_empty_and_repeated_parts():
    assert join_messages("", "a", "", "a") == "a"
    assert join_messages("x; also y", "y", "z") == "x; also y; z"
