"""Bad-input catalogue: the Dawid–Skene family (fit, predict, AnnotatorFit methods).

Collected by tests/test_bad_inputs.py (not a test module on its own).
"""

from functools import cache

import numpy as np

import noisycal as nc
from noisycal.annotators import predict

_W = np.array([[0, 0, 0], [1, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 0, 0],
               [1, 1, 1], [0, 1, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]])
_W3 = np.array([[0, 0, 1], [1, 1, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], [2, 1, 2],
                [0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 1, 0], [1, 1, 1], [2, 2, 1]])
_G = np.array([0, 1] * 6)


def _ann():
    return nc.Annotations.from_wide(_W)


def _ann3():
    return nc.Annotations.from_wide(_W3)


def _fit(**kw):
    return nc.DawidSkene().fit(_ann(), **kw)


@cache
def _em_fit():
    return nc.DawidSkene(2).fit(_ann(), method=nc.engines.EM(n_starts=2), seed=0)


@cache
def _mle_fit():
    return nc.DawidSkene(2).fit(_ann(), method="mle", seed=0)


def _grouped(groups, **kw):
    return nc.GroupedDawidSkene(2).fit(_ann(), groups=groups, **kw)


@cache
def _grouped_fit():
    return _grouped(_G, method=nc.engines.EM(n_starts=2), seed=0)


def _nan_groups():
    g = _G.astype(float)
    g[3] = np.nan
    return g


def _none_groups():
    g = _G.astype(object)
    g[0] = None
    return g


R, S, W = "raises", "status", "warns"
VE = ValueError
E = nc.engines

CASES = [
    # ---------------------------------------------------------------- fit: the engine
    ("ds_fit_method_unknown", lambda: _fit(method="gibbs"), R, VE, r"method"),
    ("ds_method_map_not_offered", lambda: _fit(method=E.MAP()), R, VE,
     r"DawidSkene has no MAP engine"),
    ("ds_method_class_not_object", lambda: _fit(method=E.EM), R, VE,
     r"method must be an engine object, not a class"),
    ("ds_method_number", lambda: _fit(method=3), R, VE, r"method"),
    ("ds_mace_has_no_mle", lambda: nc.annotators.MACE().fit(_ann(), method="mle"), R, VE,
     r"MACE has no MLE engine"),
    ("ds_hierarchical_has_no_em",
     lambda: nc.annotators.HierarchicalDawidSkene().fit(_ann(), method=E.EM()), R, VE,
     r"HierarchicalDawidSkene has no EM engine"),
    ("ds_item_difficulty_has_no_mle",
     lambda: nc.annotators.ItemDifficultyModel().fit(_ann(), method="mle"), R, VE,
     r"ItemDifficultyModel has no MLE engine"),
    ("ds_hierarchical_centered_not_a_choice",
     lambda: nc.annotators.HierarchicalDawidSkene(centered="yes").fit(_ann()), R, VE,
     r"centered must be False, True or 'auto', got 'yes'"),
    ("ds_hierarchical_refuses_groups",
     lambda: nc.annotators.HierarchicalDawidSkene().fit(_ann(), groups=_G), R, VE,
     r"groups"),
    ("ds_item_difficulty_refuses_groups",
     lambda: nc.annotators.ItemDifficultyModel().fit(_ann(), groups=_G), R, VE, r"groups"),
    ("ds_item_difficulty_refuses_anchor",
     lambda: nc.annotators.ItemDifficultyModel().fit(_ann(), anchor=0), R, VE,
     r"anchor does not apply"),
    ("ds_em_field_on_nuts", lambda: _fit(method=E.NUTS(n_starts=3)), R, TypeError,
     r"n_starts"),
    ("ds_nuts_field_on_em", lambda: _fit(method=E.EM(num_warmup=10)), R, TypeError,
     r"num_warmup"),
    ("ds_progress_string", lambda: _fit(progress="no"), R, VE, r"progress"),
    # ---------------------------------------------------------------- fit: EM values
    ("ds_em_n_starts_zero", lambda: _fit(method=E.EM(n_starts=0)), R, VE, r"n_starts"),
    ("ds_em_n_starts_negative", lambda: _fit(method=E.EM(n_starts=-5)), R, VE, r"n_starts"),
    ("ds_em_n_starts_float", lambda: _fit(method=E.EM(n_starts=2.0)), R, VE, r"n_starts"),
    ("ds_em_max_iter_zero", lambda: _fit(method=E.EM(max_iter=0)), R, VE, r"max_iter"),
    ("ds_em_tol_string", lambda: _fit(method=E.EM(tol="1e-8")), R, VE, r"tol"),
    ("ds_em_tol_nan", lambda: _fit(method=E.EM(tol=float("nan"))), R, VE, r"tol"),
    ("ds_em_tol_negative", lambda: _fit(method=E.EM(tol=-1e-8)), R, VE, r"tol"),
    ("ds_em_n_boot_negative", lambda: _fit(method=E.EM(n_boot=-1)), R, VE, r"n_boot"),
    ("ds_em_screen_gaps_string", lambda: _fit(method=E.EM(screen_gaps="yes")), R, VE,
     r"screen_gaps"),
    ("ds_em_init_unknown", lambda: _fit(method=E.EM(init="random")), R, VE, r"init"),
    ("ds_mle_max_iter_zero", lambda: _fit(method=E.MLE(max_iter=0)), R, VE, r"max_iter"),
    ("ds_nuts_num_chains_zero", lambda: _fit(method=E.NUTS(num_chains=0)), R, VE,
     r"num_chains"),
    ("ds_nuts_chain_method_unknown", lambda: _fit(method=E.NUTS(chain_method="gpu")), R, VE,
     r"chain_method"),
    ("ds_nuts_progress_string", lambda: _fit(method="nuts", progress="no"), R, VE,
     r"progress"),
    ("ds_nuts_rhat_threshold_below_one", lambda: _fit(method=E.NUTS(rhat_threshold=0.9)), R,
     VE, r"rhat_threshold"),
    # ---------------------------------------------------------------- fit: seed, anchor
    ("ds_seed_2_pow_64", lambda: _fit(seed=2**64), R, VE, r"seed"),
    ("ds_seed_float", lambda: _fit(seed=1.5), R, VE, r"seed"),
    ("ds_seed_none", lambda: _fit(seed=None), R, VE, r"seed"),
    ("ds_anchor_unknown_id", lambda: _fit(anchor="nobody"), R, VE, r"anchor"),
    ("ds_anchor_out_of_range", lambda: _fit(anchor=7), R, VE, r"anchor"),
    ("ds_anchor_negative", lambda: _fit(method=E.EM(screen_gaps=True), anchor=-1), R, VE,
     r"anchor"),
    ("ds_anchor_bool", lambda: _fit(anchor=True), R, VE, r"anchor"),
    ("ds_anchor_three_classes",
     lambda: nc.DawidSkene().fit(_ann3(), anchor=0), R, VE, r"anchor.*two classes"),
    ("ds_init_moments_three_classes",
     lambda: nc.DawidSkene().fit(_ann3(), method=E.EM(init="moments")), R, VE, r"init"),
    ("ds_screen_gaps_three_classes",
     lambda: nc.DawidSkene().fit(_ann3(), method=E.EM(screen_gaps=True)), R, VE,
     r"screen_gaps"),
    # ---------------------------------------------------------------- fit: data, priors
    ("ds_annotations_array", lambda: nc.DawidSkene().fit(_W), R, VE, r"annotations"),
    ("ds_annotations_one_item",
     lambda: nc.DawidSkene().fit(nc.Annotations.from_wide(_W[1:2], classes=[0, 1])), R, VE,
     r"annotations"),
    ("ds_n_classes_mismatch", lambda: nc.DawidSkene(3).fit(_ann()), R, VE, r"n_classes"),
    ("ds_n_classes_one", lambda: nc.DawidSkene(1).fit(_ann()), R, VE, r"n_classes"),
    ("ds_n_classes_float", lambda: nc.DawidSkene(2.0).fit(_ann()), R, VE, r"n_classes"),
    ("ds_alpha_wrong_shape", lambda: nc.DawidSkene(alpha=np.ones(3)).fit(_ann()), R, VE,
     r"alpha"),
    ("ds_alpha_zero", lambda: nc.DawidSkene(alpha=np.array([1.0, 0.0])).fit(_ann()), R, VE,
     r"alpha"),
    ("ds_beta_wrong_shape", lambda: nc.DawidSkene(beta=np.ones((2, 3))).fit(_ann()), R, VE,
     r"beta"),
    ("ds_beta_nan", lambda: nc.DawidSkene(beta=np.full((2, 2), np.nan)).fit(_ann()), R, VE,
     r"beta"),
    ("ds_onecoin_beta_not_one_coin",
     lambda: nc.OneCoinDawidSkene(beta=np.array([[5.0, 1.0], [2.0, 5.0]])).fit(_ann()), R,
     VE, r"beta"),
    ("ds_onecoin_beta_per_annotator",
     lambda: nc.OneCoinDawidSkene(beta=np.ones((3, 2, 2))).fit(_ann()), R, VE, r"beta"),
    ("ds_gold_not_dict", lambda: _fit(gold=[0, 1]), R, VE, r"gold"),
    ("ds_gold_unknown_item", lambda: _fit(gold={99: 0}), R, VE, r"gold"),
    ("ds_gold_unknown_class", lambda: _fit(gold={0: 5}), R, VE, r"gold"),
    # ---------------------------------------------------------------- groups
    ("ds_groups_on_marginal_model", lambda: _fit(groups=_G), R, VE, r"groups"),
    ("ds_grouped_without_groups", lambda: nc.GroupedDawidSkene(2).fit(_ann()), R, VE,
     r"groups"),
    ("ds_grouped_nan_groups", lambda: _grouped(_nan_groups()), R, VE, r"groups"),
    ("ds_grouped_none_groups", lambda: _grouped(_none_groups()), R, VE, r"groups"),
    ("ds_grouped_groups_wrong_length", lambda: _grouped(_G[:5]), R, VE, r"groups"),
    ("ds_grouped_groups_2d", lambda: _grouped(_G[:, None]), R, VE, r"groups"),
    ("ds_grouped_single_group", lambda: _grouped(np.zeros(12)), R, VE, r"groups"),
    ("ds_grouped_mixed_types", lambda: _grouped(np.array([0, "a"] * 6, dtype=object)), R,
     VE, r"groups"),
    ("ds_grouped_channels_unknown",
     lambda: nc.GroupedDawidSkene(2, channels="x").fit(_ann(), groups=_G), R, VE,
     r"channels"),
    # ---------------------------------------------------------------- predict
    ("ds_predict_not_annotations", lambda: predict(_em_fit(), _W), R, VE, r"annotations"),
    ("ds_predict_not_a_fit", lambda: predict("fit", _ann()), R, VE, r"fit"),
    ("ds_predict_unknown_annotator",
     lambda: predict(_em_fit(), nc.Annotations.from_arrays([0, 1], [5, 5], [0, 1])), R, VE,
     r"annotator"),
    ("ds_predict_class_mismatch",
     lambda: predict(_em_fit(), nc.Annotations.from_arrays([0, 1], [0, 0], [0, 2])), R, VE,
     r"classes"),
    ("ds_predict_groups_out_of_range", lambda: predict(_em_fit(), _ann(), groups=_G), R, VE,
     r"groups"),
    ("ds_predict_groups_float",
     lambda: predict(_em_fit(), _ann(), groups=np.zeros(12)), R, VE, r"groups"),
    ("ds_predict_method_groups_wrong_length",
     lambda: _em_fit().predict(_ann(), groups=np.zeros(3, int)), R, VE, r"groups"),
    ("ds_predict_grouped_fit_without_groups",
     lambda: predict(_grouped_fit(), _ann()), R, VE, r"groups is required"),
    ("ds_posterior_grouped_fit_without_groups",
     lambda: nc.targets.posterior(_ann(), _grouped_fit()), R, VE, r"groups is required"),
    # ---------------------------------------------------------------- AnnotatorFit methods
    ("ds_conf_int_level_percent", lambda: _em_fit().conf_int(level=90), R, VE, r"level"),
    ("ds_conf_int_level_zero", lambda: _em_fit().conf_int(level=0.0), R, VE, r"level"),
    ("ds_conf_int_level_string", lambda: _em_fit().conf_int(level="0.9"), R, VE, r"level"),
    ("ds_conf_int_n_boot_zero", lambda: _em_fit().conf_int(n_boot=0), R, VE, r"n_boot"),
    ("ds_conf_int_seed_overflow", lambda: _em_fit().conf_int(seed=2**64), R, VE, r"seed"),
    ("ds_conf_int_mle_has_no_draws", lambda: _mle_fit().conf_int(), R, VE, r"draws"),
    ("ds_bootstrap_draws_n_boot_negative", lambda: _em_fit().bootstrap_draws(-3), R, VE,
     r"n_boot"),
    ("ds_bootstrap_draws_mle", lambda: _mle_fit().bootstrap_draws(10), R, VE, r"refit"),
    # ---------------------------------------------------------------- statuses and warnings
    ("ds_status_unobserved_class",
     lambda: nc.DawidSkene(3).fit(nc.Annotations.from_wide(_W, classes=[0, 1, 2])), S, None,
     r"unobserved_class.*\[2\]"),
    ("ds_warns_unobserved_class",
     lambda: nc.DawidSkene(3).fit(nc.Annotations.from_wide(_W, classes=[0, 1, 2])), W,
     nc.IdentifiabilityWarning, r"never occur"),
    ("ds_status_saturated_two_items",
     lambda: nc.DawidSkene(2).fit(nc.Annotations.from_wide(_W[1:3])), S, None,
     r"over_parametrised|not_identified"),
    ("ds_one_coin_status_saturated_two_items",
     lambda: nc.OneCoinDawidSkene(2).fit(nc.Annotations.from_wide(_W[:2])), S, None,
     r"over_parametrised.*only 4 ratings inform the channels"),
    ("ds_status_two_binary_annotators_not_identified",
     lambda: nc.DawidSkene(2).fit(nc.Annotations.from_wide(_W[:, :2])), S, None,
     r"not_identified.*free parameters"),
    ("ds_status_one_annotator",
     lambda: nc.DawidSkene(2).fit(nc.Annotations.from_wide(_W[:, :1])), S, None,
     r"not_identified.*one annotator"),
    ("ds_status_not_converged", lambda: _fit(method=E.EM(max_iter=1, n_starts=1)), S, None,
     r"not_converged"),
    ("ds_warns_not_converged", lambda: _fit(method=E.EM(max_iter=1, n_starts=1)), W,
     nc.ConvergenceWarning, r"iteration limit"),
    ("ds_predict_not_identified_fit",
     lambda: predict(nc.DawidSkene(2).fit(nc.Annotations.from_wide(_W[:, :1])), _ann()), R,
     VE, r"fit"),
]


def _from_counts():
    return nc.Annotations.from_counts(np.array([[2, 1], [0, 3], [1, 2], [3, 0]]))


CASES += [
    ("ds-from-counts-anonymous", lambda: nc.DawidSkene(2).fit(_from_counts()),
     "raises", ValueError, r"from_counts.*annotator identities are unknown"),
    ("ds-grouped-from-counts-anonymous",
     lambda: nc.GroupedDawidSkene(2).fit(_from_counts(), groups=[0, 1, 0, 1]),
     "raises", ValueError, r"from_counts.*annotator identities are unknown"),
    ("ds-hui-walter-from-counts-anonymous",
     lambda: nc.HuiWalter().fit(_from_counts(), groups=[0, 1, 0, 1]),
     "raises", ValueError, r"from_counts.*annotator identities are unknown"),
]


# ------------------------------------------------------------------ weak_threshold (local
# identification, noisycal.engines.identification)
@cache
def _ann3_binary():
    conf = np.array([[[0.9, 0.1], [0.15, 0.85]], [[0.8, 0.2], [0.2, 0.8]],
                     [[0.85, 0.15], [0.3, 0.7]]])
    return nc.simulate.dawid_skene(200, [0.5, 0.5], conf, seed=0).annotations


def _hw_weak(**kw):
    A = np.tile([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], (3, 1))
    return nc.HuiWalter().fit(A, groups=np.repeat([0, 1], 6), **kw)


CASES += [
    ("ds-weak-threshold-percent", lambda: _fit(method=E.EM(weak_threshold=2)), "raises",
     ValueError, r"weak_threshold"),
    ("ds-weak-threshold-negative", lambda: _fit(method=E.EM(weak_threshold=-0.01)), "raises",
     ValueError, r"weak_threshold"),
    ("ds-weak-threshold-one", lambda: _fit(method=E.EM(weak_threshold=1.0)), "raises",
     ValueError, r"weak_threshold.*< 1"),
    ("ds-weak-threshold-nan", lambda: _fit(method=E.EM(weak_threshold=float("nan"))),
     "raises", ValueError, r"weak_threshold"),
    ("ds-weak-threshold-string", lambda: _fit(method=E.EM(weak_threshold="0.02")), "raises",
     ValueError, r"weak_threshold"),
    ("ds-weak-threshold-bool", lambda: _fit(method=E.EM(weak_threshold=True)), "raises",
     ValueError, r"weak_threshold"),
    ("ds-weak-threshold-with-nuts", lambda: _fit(method=E.NUTS(weak_threshold=0.05)),
     "raises", TypeError, r"weak_threshold"),
    ("ds-mle-weak-threshold-percent", lambda: _fit(method=E.MLE(weak_threshold=5.0)),
     "raises", ValueError, r"weak_threshold"),
    ("ds-hui-walter-weak-threshold-percent",
     lambda: _hw_weak(method=E.Moments(weak_threshold=2.0)), "raises", ValueError,
     r"weak_threshold"),
    ("ds-hui-walter-gmm-weak-threshold-inf",
     lambda: _hw_weak(method=E.GMM(weak_threshold=float("inf"))), "raises", ValueError,
     r"weak_threshold"),
    ("ds-hui-walter-has-no-em", lambda: _hw_weak(method="em"), "raises", ValueError,
     r"HuiWalter has no EM engine"),
    ("ds-hui-walter-refuses-gold", lambda: _hw_weak(gold={0: 1}), "raises", ValueError,
     r"gold does not apply"),
    ("ds-hui-walter-refuses-anchor", lambda: _hw_weak(anchor=0), "raises", ValueError,
     r"anchor does not apply"),
    ("ds-hui-walter-refuses-progress", lambda: _hw_weak(progress=True), "raises", ValueError,
     r"progress"),
    ("ds-hui-walter-moments-refuses-seed", lambda: _hw_weak(seed=3), "raises", ValueError,
     r"seed"),
    ("ds-hui-walter-needs-groups",
     lambda: nc.HuiWalter().fit(np.tile([[0.0, 1.0], [1.0, 1.0]], (3, 1))), "raises",
     ValueError, r"groups"),
    # a threshold near 1 flags every fit with any missing information: the status and the
    # warning say so and name the near-null direction
    ("ds-status-weakly-identified",
     lambda: nc.DawidSkene(2).fit(_ann3_binary(), method=E.EM(weak_threshold=0.99)), "status",
     None,
     r"weakly_identified.*near-null direction loads on"),
    ("ds-warns-weakly-identified",
     lambda: nc.DawidSkene(2).fit(_ann3_binary(), method=E.EM(weak_threshold=0.99)), "warns",
     nc.IdentifiabilityWarning, r"weakly identified"),
]
