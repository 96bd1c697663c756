"""Bad-input catalogue, engines area: HuiWalter (mom, gmm), moment_triple, equal_count_groups,
gmm_fit_moments, fit_map, run_nuts and DirichletSoftLabels.

Collected by ``tests/test_bad_inputs.py``; see its docstring for the case format.
"""

from types import SimpleNamespace

import numpy as np

from noisycal.exceptions import ConvergenceWarning, IdentifiabilityWarning

R = "raises"

_C3 = np.stack([0.7 * np.eye(3) + 0.1] * 3)
_PI3 = np.array([0.5, 0.3, 0.2])
_A3 = np.array([[0, 1, 0], [1, 1, 2], [2, 2, 2], [0, 1, 1]] * 3)
_P3 = np.tile([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], (6, 1))


def _kc(name, *args):
    from noisycal import correction

    return getattr(correction, name)(*args)


def _k3_corrected(**kw):
    import noisycal as nc

    return nc.targets.corrected(_A3, confusion=_C3, **kw)


def _k3_interval(probs=_P3, credible=False, n_draws=20):
    """A K = 3 NC-ECE interval from a stub EM (or NUTS) fit behind the corrected target."""
    import noisycal as nc
    from noisycal.engines.results import AnnotatorFit
    from noisycal.metrics.nc.intervals import nc_ece_interval

    draws = np.stack([_C3] * n_draws)
    draws[1, 0] = 1 / 3  # a singular channel in the second draw
    fit = AnnotatorFit("dawid_skene", "nuts" if credible else "em", np.arange(3),
                       np.arange(3), np.arange(12), _PI3[None], _C3, np.full((12, 3), 1 / 3),
                       0.0, 0, "ok", "", True, 0, {"confusion": draws})
    target = nc.targets.corrected(_A3, fit)
    est = nc.ece(_P3, target, n_bins=2, interval=None)
    interval = (nc.intervals.Credible() if credible
                else nc.intervals.Refit(method="percentile", n_boot=5))
    return nc_ece_interval(est, None, None, target, interval=interval, level=0.9, seed=0,
                           probs=probs)


def _hw(A=None, **kwargs):
    from noisycal.annotators import HuiWalter

    if A is None:
        A = np.tile([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], (3, 1))
    kwargs.setdefault("groups", np.repeat([0, 1], A.shape[0] // 2))
    return HuiWalter().fit(A, **kwargs)


def _hw_sample(n=400, seed=0):
    """Two annotators with channels (0.1, 0.9), (0.2, 0.8) and a score-ordered prevalence."""
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1, 2, 3], n // 4)
    y = rng.random(n) < np.array([0.1, 0.3, 0.6, 0.9])[g]
    A = np.column_stack([np.where(y, rng.random(n) < b, rng.random(n) < a)
                         for a, b in [(0.1, 0.9), (0.2, 0.8)]]).astype(float)
    return A, g


def _gmm(**kwargs):
    from noisycal.engines import GMM

    A, g = _hw_sample()
    fields = {k: kwargs.pop(k) for k in ("weight", "min_gap", "min_separation", "n_starts",
                                         "max_iter", "weak_threshold") if k in kwargs}
    return _hw(A, groups=kwargs.pop("groups", g), method=GMM(**fields), **kwargs)


def _engine(name, **fields):
    from noisycal import engines

    return getattr(engines, name)(**fields)


def _triple(A=None, **kwargs):
    from noisycal.annotators import moment_triple

    if A is None:
        A = np.array([[0, 0, 0], [1, 1, 1], [1, 0, 1], [0, 1, 0]] * 5)
    return moment_triple(A, **kwargs)


def _triple_status():
    # three independent annotators: the covariances vanish, the triple is not informative
    rng = np.random.default_rng(1)
    return SimpleNamespace(**_triple((rng.random((200, 3)) < 0.5).astype(int)))


def _ecg(scores=(0.1, 0.5, 0.3, 0.9), **kwargs):
    from noisycal.annotators import equal_count_groups

    return equal_count_groups(scores, **kwargs)


def _gmm_moments(**kwargs):
    from noisycal.engines.gmm import gmm_fit_moments

    kwargs.setdefault("moments", np.full(6, 0.4))
    kwargs.setdefault("n_groups", 2)
    return gmm_fit_moments(kwargs.pop("moments"), kwargs.pop("n_groups"), **kwargs)


def _normal_mean(y):
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("obs", y.shape[0], dim=-1):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def _normal_scale(y):
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma", dist.LogNormal(2.0, 1.0))
    with numpyro.plate("obs", y.shape[0], dim=-1):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def _discrete(y):
    import numpyro
    import numpyro.distributions as dist

    z = numpyro.sample("z", dist.Bernoulli(0.5))
    numpyro.sample("y", dist.Normal(z, 1.0), obs=y)


_Y = np.array([0.3, -0.2, 1.1, 0.4, 0.9])


def _fit_map(**kwargs):
    from noisycal.engines.density.mle import fit_map

    kwargs.setdefault("model_args", (_Y,))
    return fit_map(kwargs.pop("model", _normal_mean), **kwargs)


def _run_nuts(**kwargs):
    from noisycal.engines.density.nuts import run_nuts

    kwargs.setdefault("model_args", (_Y,))
    kwargs.setdefault("progress_bar", False)
    return run_nuts(kwargs.pop("model", _normal_mean), **kwargs)


_P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]] * 4)
_C = np.array([[6, 3, 1], [2, 6, 2], [1, 1, 8]] * 4)


def _dsl(prior_scale=1.0, **kwargs):
    from noisycal.annotators import DirichletSoftLabels

    kwargs.setdefault("counts", _C)
    if "logits" not in kwargs:
        kwargs.setdefault("probs", _P)
    return DirichletSoftLabels(prior_scale).fit(**kwargs)


CASES = [
    # HuiWalter, method='mom'
    ("engines_hw_mom_nan_groups", lambda: _hw(groups=[0.0] * 6 + [1.0] * 5 + [np.nan]), R,
     ValueError, r"groups"),
    ("engines_hw_mom_none_groups",
     lambda: _hw(groups=np.array(["a"] * 6 + ["b"] * 5 + [None], dtype=object)), R,
     ValueError, r"groups"),
    ("engines_hw_mom_weight_option", lambda: _hw(method=_engine("Moments", weight="efficient")),
     R, TypeError, r"weight"),
    ("engines_hw_mom_seed_option", lambda: _hw(seed=3), R, ValueError, r"seed"),
    ("engines_hw_mom_n_starts_option", lambda: _hw(method=_engine("Moments", n_starts=2)), R,
     TypeError, r"n_starts"),
    ("engines_hw_mom_three_groups", lambda: _hw(groups=np.repeat([0, 1, 2], 4)), R,
     ValueError, r"groups"),
    ("engines_hw_groups_length", lambda: _hw(groups=[0, 1]), R, ValueError, r"groups"),
    ("engines_hw_groups_complex", lambda: _hw(groups=np.repeat([0j, 1j], 6)), R, ValueError,
     r"groups"),
    ("engines_hw_annotations_three_columns", lambda: _hw(np.zeros((12, 3))), R, ValueError,
     r"annotations"),
    ("engines_hw_annotations_label_2", lambda: _hw(np.full((12, 2), 2.0)), R, ValueError,
     r"annotations"),
    ("engines_hw_annotations_nan", lambda: _hw(np.full((12, 2), np.nan)), R, ValueError,
     r"annotations"),
    ("engines_hw_annotations_strings", lambda: _hw(np.full((12, 2), "yes")), R, ValueError,
     r"annotations"),
    ("engines_hw_method_unknown", lambda: _hw(method="em"), R, ValueError, r"method"),
    ("engines_hw_mom_equal_groups_status", lambda: _hw(), "status", None, r"infeasible_mom"),
    ("engines_hw_mom_equal_groups_warns", lambda: _hw(), "warns", IdentifiabilityWarning,
     r"Hui-Walter"),
    # HuiWalter, method='gmm'
    ("engines_hw_gmm_string_groups",
     lambda: _gmm(groups=np.repeat(["a", "b", "c", "d"], 100)), R, ValueError, r"groups"),
    ("engines_hw_gmm_inf_groups",
     lambda: _gmm(groups=np.r_[np.repeat([0.0, 1.0, 2.0], 100), [np.inf] * 100]), R,
     ValueError, r"groups"),
    ("engines_hw_gmm_one_group", lambda: _gmm(groups=np.zeros(400)), R, ValueError,
     r"groups"),
    ("engines_hw_gmm_min_gap_1", lambda: _gmm(min_gap=1.0), R, ValueError, r"min_gap"),
    ("engines_hw_gmm_min_separation_str", lambda: _gmm(min_separation="1e-5"), R, ValueError,
     r"min_separation"),
    ("engines_hw_gmm_n_starts_0", lambda: _gmm(n_starts=0), R, ValueError, r"n_starts"),
    ("engines_hw_gmm_max_iter_float", lambda: _gmm(max_iter=10.5), R, ValueError,
     r"max_iter"),
    ("engines_hw_gmm_seed_2pow64", lambda: _gmm(seed=2**64), R, ValueError, r"seed"),
    ("engines_hw_gmm_seed_none", lambda: _gmm(seed=None), R, ValueError, r"seed"),
    ("engines_hw_gmm_weight_unknown", lambda: _gmm(weight="optimal"), R, ValueError,
     r"weight"),
    ("engines_hw_gmm_equal_groups_status",
     lambda: _hw(groups=np.tile([0, 1, 2], 4), method=_engine("GMM", n_starts=1)), "status",
     None,
     r"not_identified"),
    # moment_triple
    ("engines_triple_two_columns", lambda: _triple(np.zeros((10, 2))), R, ValueError,
     r"annotations"),
    ("engines_triple_nan", lambda: _triple(np.full((10, 3), np.nan)), R, ValueError,
     r"annotations"),
    ("engines_triple_label_2", lambda: _triple(np.full((10, 3), 2)), R, ValueError,
     r"annotations"),
    ("engines_triple_one_item", lambda: _triple(np.ones((1, 3))), R, ValueError,
     r"annotations"),
    ("engines_triple_anchor_3", lambda: _triple(anchor=3), R, ValueError, r"anchor"),
    ("engines_triple_anchor_bool", lambda: _triple(anchor=True), R, ValueError, r"anchor"),
    ("engines_triple_anchor_float", lambda: _triple(anchor=1.0), R, ValueError, r"anchor"),
    ("engines_triple_independent_status", _triple_status, "status", None, r"infeasible_mom"),
    # equal_count_groups
    ("engines_ecg_n_groups_1", lambda: _ecg(n_groups=1), R, ValueError, r"n_groups"),
    ("engines_ecg_n_groups_above_n", lambda: _ecg(n_groups=5), R, ValueError, r"n_groups"),
    ("engines_ecg_n_groups_float", lambda: _ecg(n_groups=2.0), R, ValueError, r"n_groups"),
    ("engines_ecg_nan_scores", lambda: _ecg((0.1, np.nan, 0.3)), R, ValueError, r"scores"),
    ("engines_ecg_2d_scores", lambda: _ecg(np.zeros((4, 2))), R, ValueError, r"scores"),
    ("engines_ecg_odd_unknown", lambda: _ecg(odd="middle"), R, ValueError, r"odd"),
    # gmm_fit_moments
    ("engines_gmm_moments_shape", lambda: _gmm_moments(moments=np.full(5, 0.4)), R,
     ValueError, r"moments"),
    ("engines_gmm_weight_not_symmetric",
     lambda: _gmm_moments(weight_matrix=np.triu(np.ones((6, 6)))), R, ValueError,
     r"weight_matrix"),
    ("engines_gmm_weight_not_pd", lambda: _gmm_moments(weight_matrix=-np.eye(6)), R,
     ValueError, r"weight_matrix"),
    ("engines_gmm_init_outside_unit", lambda: _gmm_moments(init=np.full(6, 1.5)), R,
     ValueError, r"init"),
    ("engines_gmm_n_groups_1", lambda: _gmm_moments(n_groups=1, moments=np.full(3, 0.4)), R,
     ValueError, r"n_groups"),
    # fit_map
    ("engines_fit_map_tol_str", lambda: _fit_map(tol="1e-8"), R, ValueError, r"tol"),
    ("engines_fit_map_tol_inf", lambda: _fit_map(tol=np.inf), R, ValueError, r"tol"),
    ("engines_fit_map_seed_2pow64", lambda: _fit_map(seed=2**64), R, ValueError, r"seed"),
    ("engines_fit_map_max_iter_0", lambda: _fit_map(max_iter=0), R, ValueError, r"max_iter"),
    ("engines_fit_map_model_args_list", lambda: _fit_map(model_args=[_Y]), R, ValueError,
     r"model_args"),
    ("engines_fit_map_model_kwargs_list", lambda: _fit_map(model_kwargs=[1]), R, ValueError,
     r"model_kwargs"),
    ("engines_fit_map_not_callable", lambda: _fit_map(model="normal"), R, ValueError,
     r"model"),
    ("engines_fit_map_jacobian_without_prior", lambda: _fit_map(prior=False, jacobian=True),
     R, ValueError, r"jacobian"),
    ("engines_fit_map_prior_str", lambda: _fit_map(prior="yes"), R, ValueError, r"prior"),
    ("engines_fit_map_unknown_init_site", lambda: _fit_map(init_params={"sigma": 1.0}), R,
     ValueError, r"init_params"),
    ("engines_fit_map_discrete_latent", lambda: _fit_map(model=_discrete), R, ValueError,
     r"model has discrete latent"),
    # run_nuts
    ("engines_nuts_num_chains_0", lambda: _run_nuts(num_chains=0), R, ValueError,
     r"num_chains"),
    ("engines_nuts_num_samples_negative", lambda: _run_nuts(num_samples=-5), R, ValueError,
     r"num_samples"),
    ("engines_nuts_num_warmup_float", lambda: _run_nuts(num_warmup=10.0), R, ValueError,
     r"num_warmup"),
    ("engines_nuts_rhat_threshold_1", lambda: _run_nuts(rhat_threshold=1), R, ValueError,
     r"rhat_threshold"),
    ("engines_nuts_rhat_threshold_inf", lambda: _run_nuts(rhat_threshold=np.inf), R,
     ValueError, r"rhat_threshold"),
    ("engines_nuts_chain_method_unknown", lambda: _run_nuts(chain_method="threads"), R,
     ValueError, r"chain_method"),
    ("engines_nuts_seed_2pow64", lambda: _run_nuts(seed=2**64), R, ValueError, r"seed"),
    ("engines_nuts_seed_none", lambda: _run_nuts(seed=None), R, ValueError, r"seed"),
    ("engines_nuts_target_accept_1", lambda: _run_nuts(target_accept_prob=1.0), R,
     ValueError, r"target_accept_prob"),
    ("engines_nuts_max_tree_depth_0", lambda: _run_nuts(max_tree_depth=0), R, ValueError,
     r"max_tree_depth"),
    ("engines_nuts_progress_bar_str", lambda: _run_nuts(progress_bar="no"), R, ValueError,
     r"progress_bar"),
    ("engines_nuts_cache_str", lambda: _run_nuts(cache="yes"), R, ValueError, r"cache"),
    ("engines_nuts_dense_mass_int", lambda: _run_nuts(dense_mass=1), R, ValueError,
     r"dense_mass"),
    ("engines_nuts_init_params_list", lambda: _run_nuts(init_params=[0.0]), R, ValueError,
     r"init_params"),
    # DirichletSoftLabels
    ("engines_dsl_prior_scale_0", lambda: _dsl(prior_scale=0.0), R, ValueError,
     r"prior_scale"),
    ("engines_dsl_prior_scale_str", lambda: _dsl(prior_scale="1"), R, ValueError,
     r"prior_scale"),
    ("engines_dsl_counts_negative", lambda: _dsl(counts=-_C), R, ValueError, r"counts"),
    ("engines_dsl_counts_fractional", lambda: _dsl(counts=_C + 0.5), R, ValueError,
     r"counts"),
    ("engines_dsl_counts_shape", lambda: _dsl(counts=_C[:, :2]), R, ValueError, r"counts"),
    ("engines_dsl_counts_nan", lambda: _dsl(counts=np.where(_C == 6, np.nan, _C)), R,
     ValueError, r"counts"),
    ("engines_dsl_counts_empty_row", lambda: _dsl(counts=np.vstack([_C[:-1], [0, 0, 0]])), R,
     ValueError, r"counts"),
    ("engines_dsl_probs_and_logits", lambda: _dsl(logits=np.log(_P), probs=_P), R,
     ValueError, r"probs|logits"),
    ("engines_dsl_probs_zero",
     lambda: _dsl(probs=np.vstack([_P[:-1], [1.0, 0.0, 0.0]])), R, ValueError, r"probs"),
    ("engines_dsl_prior_scale_under_mle", lambda: _dsl(prior_scale=0.5, method="mle"), R,
     ValueError, r"prior_scale"),
    ("engines_dsl_method_unknown", lambda: _dsl(method="em"), R, ValueError, r"method"),
    ("engines_dsl_nuts_option_under_mle", lambda: _dsl(method=_engine("MLE", num_chains=2)),
     R, TypeError, r"num_chains"),
    ("engines_dsl_jacobian_under_mle", lambda: _dsl(method=_engine("MLE", jacobian=True)), R,
     TypeError, r"jacobian"),
    ("engines_dsl_weak_threshold_under_mle",
     lambda: _dsl(method=_engine("MLE", weak_threshold=0.1)), R, ValueError,
     r"weak_threshold"),
    ("engines_dsl_nuts_progress_str", lambda: _dsl(method="nuts", progress="yes"), R,
     ValueError, r"progress"),
    ("engines_dsl_tol_str", lambda: _dsl(method=_engine("MLE", tol="1e-8")), R, ValueError,
     r"tol"),
    ("engines_dsl_seed_2pow64", lambda: _dsl(seed=2**64), R, ValueError, r"seed"),
    ("engines_dsl_nuts_num_chains_0", lambda: _dsl(method=_engine("NUTS", num_chains=0)), R,
     ValueError, r"num_chains"),
    ("engines_dsl_nuts_rhat_threshold_1",
     lambda: _dsl(method=_engine("NUTS", rhat_threshold=1)), R, ValueError,
     r"rhat_threshold"),
    ("engines_dsl_unknown_init_site", lambda: _dsl(init_params={"W_full": np.eye(3)}), R,
     ValueError, r"init_params"),
    # statuses and warnings of the engines
    ("engines_fit_map_max_iter_1_status",
     lambda: _fit_map(model=_normal_scale, max_iter=1), "status", None,
     r"not_converged.*max_iter"),
    ("engines_fit_map_max_iter_1_warns",
     lambda: _fit_map(model=_normal_scale, max_iter=1), "warns",
     ConvergenceWarning, r"^fit_map: L-BFGS-B did not converge after 1 iterations "
     r"\(max_iter=1\)"),
    # K > 2 channel uncertainty: K-class IV weights, refit bootstrap, credible interval
    ("kclass_noise_covariance_singular",
     lambda: _kc("noise_covariance", np.stack([np.full((3, 3), 1 / 3)] * 2), _PI3), R,
     ValueError, r"confusion: annotator\(s\) \[0, 1\] have a \(nearly\) singular channel"),
    ("kclass_noise_covariance_rows", lambda: _kc("noise_covariance", 0.9 * _C3, _PI3), R,
     ValueError, r"confusion rows must be probability distributions"),
    ("kclass_noise_covariance_not_square",
     lambda: _kc("noise_covariance", np.ones((2, 3, 2)) / 2, _PI3), R, ValueError,
     r"confusion must have shape \(n_annotators, K, K\)"),
    ("kclass_iv_weights_prevalence_scalar", lambda: _kc("kclass_iv_weights", _C3, 0.3), R,
     ValueError, r"prevalence for K = 3 classes must be a length-3 probability vector"),
    ("kclass_iv_weights_prevalence_length",
     lambda: _kc("kclass_iv_weights", _C3, [0.5, 0.5]), R, ValueError,
     r"prevalence must be a length-3 probability vector"),
    ("kclass_iv_weights_prevalence_percent",
     lambda: _kc("kclass_iv_weights", _C3, [50.0, 30.0, 20.0]), R, ValueError,
     r"prevalence must be a length-3 probability vector"),
    ("kclass_iv_weights_prevalence_nan",
     lambda: _kc("kclass_iv_weights", _C3, [np.nan, 0.5, 0.5]), R, ValueError,
     r"prevalence contains 1 NaN"),
    ("kclass_corrected_prevalence_not_summing",
     lambda: _k3_corrected(prevalence=[0.2, 0.2, 0.2]), R, ValueError,
     r"prevalence must be a length-3 probability vector"),
    ("kclass_interval_without_probs", lambda: _k3_interval(probs=None), R, ValueError,
     r"interval=Refit\(n_boot=5, method='percentile'\) with 3 classes needs the "
     r"predictions: pass probs="),
    ("kclass_interval_probs_shape", lambda: _k3_interval(probs=np.full((12, 2), 0.5)), R,
     ValueError, r"probs must have shape \(12, 3\)"),
    ("kclass_interval_probs_nan", lambda: _k3_interval(probs=np.full((12, 3), np.nan)), R,
     ValueError, r"probs contains 36 NaN"),
    ("kclass_credible_singular_draw", lambda: _k3_interval(credible=True), "status", None,
     r"nonfinite 1 of 20 channel draws cannot be inverted"),
    ("kclass_credible_too_few_draws", lambda: _k3_interval(credible=True, n_draws=2), R,
     ValueError, r"NUTS fit has 2 posterior draw\(s\).*at least 20"),
]
