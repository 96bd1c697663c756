"""The calibrators follow scikit-learn's estimator protocol (scikit-learn is a test extra).

Run from scikit-learn's own estimator checks (``sklearn.utils.estimator_checks``), the ones
that need only the estimator object:

- ``check_estimator_cloneable``, ``check_estimator_repr``,
  ``check_no_attributes_set_in_init``, ``check_parameters_default_constructible``,
  ``check_get_params_invariance``, ``check_set_params``,
  ``check_do_not_raise_errors_in_init_or_set_params``, ``check_estimator_tags_renamed``,
  ``check_valid_tag_types``.

Not applicable, and why: every other check calls ``fit(X, y)`` / ``predict_proba(X)``
positionally with a 2-D feature matrix ``X`` (``check_dont_overwrite_parameters``,
``check_estimators_overwrite_params``, ``check_estimators_fit_returns_self``,
``check_estimators_unfitted``, ``check_fit_check_is_fitted``, ``check_fit_idempotent``,
``check_n_features_in*``, ``check_estimators_nan_inf``, ``check_estimators_pickle``,
``check_fit2d_*``, ``check_methods_*_invariance``, the classifier and regressor checks,
...). noisycal's calibrators take their inputs as explicit keywords, ``probs=`` or
``logits=`` of shape (n,) and ``target=`` (``annotations=`` for ``JointMap``), because
probabilities and logits are never guessed; and they are maps of the scores (binary (n,)
or, for the scaling maps, (n, K)), not models of a feature matrix. ``check_estimator`` as
a whole therefore cannot run. What those checks test is tested here with keyword inputs
instead: ``fit`` returns ``self``, leaves the parameters untouched (same objects) and adds
only attributes ending in ``_``;
``predict_proba`` before ``fit`` raises :class:`noisycal.calibrators.NotFittedError`
(which ``sklearn.utils.validation.check_is_fitted`` also recognises); refitting is
idempotent; fitted calibrators pickle; NaN and infinite inputs raise ``ValueError``.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import noisycal as nc

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError as SklearnNotFittedError  # noqa: E402
from sklearn.utils import estimator_checks as ec  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

CAL = nc.calibrators

#: Every calibrator with non-default parameters (so clone and set_params are exercised).
ESTIMATORS = [
    CAL.TemperatureScaling(eps=1e-4, bounds=(0.1, 10.0)),
    CAL.PlattScaling(eps=1e-5, bounds=(-5.0, 5.0)),
    CAL.VectorScaling(eps=1e-5, bounds=(0.1, 10.0), loss="log", max_iter=500),
    CAL.MatrixScaling(reg_lambda=1e-2, reg_mu=0.0, bounds=(-50.0, 50.0), max_iter=500),
    CAL.DirichletCalibration(eps=1e-8, reg_lambda=1e-2, loss="log"),
    CAL.BetaCalibration(parameters="ab", monotone=False, eps=1e-5, bounds=(-50.0, 50.0),
                        max_iter=500),
    CAL.AdaptiveTemperatureScaling(reg_lambda=1e-2, eps=1e-5, bounds=(-20.0, 20.0),
                                   max_iter=500),
    CAL.HistogramBinning(n_bins=7, empty_bins="center"),
    CAL.JointMap(n_bins=4, n_starts=2, max_iter=200, tol=1e-7, seed=3, anchor=1),
    CAL.MassRescaling(conformal=CAL.SplitConformal(alpha=0.45, score="aps", randomized=False),
                      degenerate_tol=(1e-9, 1e-6)),
    CAL.ConformalTemperature(conformal=CAL.SplitConformal(alpha=0.45), tau_max=1e5,
                             tol=1e-11),
    CAL.NaiveCMCETemperature(grid="log", n_bins=10),
    CAL.OneVsRestPlatt(eps=1e-5, bounds=(-5.0, 5.0)),
    CAL.OneVsRestIsotonic(interpolation="step"),
    CAL.MLPTemperatureScaling(hidden=(8,), epochs=3, batch_size=64, seed=1),
]
IDS = [type(e).__name__ for e in ESTIMATORS]

# MassRescaling leaves rows whose conformal set is empty or full unchanged and says so
# with a NumericalWarning (tested in test_conformal.py); binary sets are always a
# singleton, empty or full, so the protocol checks here meet such rows: that one warning
# is allowed, every other warning still fails
pytestmark = pytest.mark.filterwarnings(
    "ignore:MassRescaling.*rows are degenerate:noisycal.NumericalWarning")


def _ok_status(est: CAL.Calibrator) -> str:
    """'ok', or for MassRescaling 'degenerate_rows' exactly when it counted such rows."""
    return "degenerate_rows" if getattr(est, "row_status_counts_", {}).get("degenerate") \
        and isinstance(est, CAL.MassRescaling) else "ok"

SKLEARN_CHECKS = [
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
]


def _data(n: int = 400, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < z).astype(np.int64)
    A = np.where(rng.random((n, 3)) < 0.85, y[:, None], 1 - y[:, None])
    return {"z": z, "y": y, "A": A}


def _fit(est: CAL.Calibrator, d: dict) -> CAL.Calibrator:
    if isinstance(est, CAL.JointMap):
        return est.fit(probs=d["z"], annotations=d["A"])
    return est.fit(probs=d["z"], target=d["y"])


@pytest.mark.parametrize("check", SKLEARN_CHECKS)
@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_sklearn_estimator_checks(est, check):
    # check_set_params warns (UserWarning) when set_params validates; ours never does, so
    # any warning here is a failure (pytest runs with filterwarnings = error)
    fn = getattr(ec, check, None)
    if fn is None:  # the tag checks exist from scikit-learn 1.6
        pytest.skip(f"{check} is not in scikit-learn {sklearn.__version__}")
    fn(type(est).__name__, est)


def _values(params: dict) -> dict:
    """Parameters with a nested estimator (a conformal map's SplitConformal) replaced by
    its type and parameters, so that a clone compares equal."""
    return {k: (type(v), v.get_params()) if hasattr(v, "get_params") else v
            for k, v in params.items()}


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_clone_get_params_set_params_round_trip(est):
    params = est.get_params(deep=False)
    assert list(params) == list(type(est)._get_param_names())
    # nested estimators (the conformal maps' SplitConformal) add '<name>__<parameter>'
    deep = est.get_params()
    nested = {f"{k}__{n}": w for k, v in params.items() if hasattr(v, "get_params")
              for n, w in v.get_params().items()}
    assert deep == {**nested, **params}
    twin = clone(est)
    assert twin is not est and type(twin) is type(est)
    assert _values(twin.get_params()) == _values(deep)  # clone copies containers
    assert all(getattr(twin, k) is not v for k, v in params.items()
               if hasattr(v, "get_params"))  # and nested estimators
    # set_params returns self and stores the values unchanged (not copied or cast)
    fresh = type(est)()
    assert fresh.set_params(**params) is fresh
    for name, value in fresh.get_params(deep=False).items():
        assert value is params[name]
    assert repr(fresh) == repr(est) and repr(type(est)()) == f"{type(est).__name__}()"
    with pytest.raises(ValueError, match="unknown parameter 'nope'"):
        fresh.set_params(nope=1)
    # clone of a fitted calibrator is unfitted, with the same parameters
    fitted = _fit(clone(est), _data())
    again = clone(fitted)
    assert _values(again.get_params()) == _values(deep)
    assert not hasattr(again, fitted._fitted_attr)


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_fit_returns_self_keeps_params_and_adds_only_underscore_attributes(est):
    est = clone(est)
    before = dict(vars(est))
    with pytest.raises(CAL.NotFittedError, match="not fitted"):
        est.predict_proba(probs=np.array([0.5]))
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(est)
    d = _data()
    assert _fit(est, d) is est
    check_is_fitted(est)
    for name, value in before.items():
        assert vars(est)[name] is value  # parameters not overwritten by fit
    added = set(vars(est)) - set(before)
    public = {a for a in added if not a.startswith("_")}
    assert public and all(a.endswith("_") for a in public), sorted(public)
    assert est.status_ == _ok_status(est) and (est.message_ == "") == (est.status_ == "ok")
    # idempotent refit, and a pickled copy predicts the same
    p1 = est.predict_proba(probs=d["z"])
    p2 = _fit(est, d).predict_proba(probs=d["z"])
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(probs=d["z"]),
                                  p1)
    assert p1.shape == (d["z"].size,) and np.all((p1 >= 0) & (p1 <= 1))


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_scores_raise(est, bad):
    d = _data(50)
    z = d["z"].copy()
    z[3] = bad
    with pytest.raises(ValueError, match="probs"):
        _fit(clone(est), {**d, "z": z})
    fitted = _fit(clone(est), d)
    with pytest.raises(ValueError, match="probs"):
        fitted.predict_proba(probs=z)


def test_not_fitted_error_is_a_value_error():
    assert issubclass(CAL.NotFittedError, ValueError)
    assert issubclass(CAL.NotFittedError, AttributeError)


def test_calibrators_work_in_a_grid_of_clones():
    # the pattern GridSearchCV uses: clone, set_params, fit; parameters drive the fit
    d = _data(2000, seed=1)
    base = CAL.HistogramBinning()
    values = {}
    for n_bins in (2, 5, 10):
        est = clone(base).set_params(n_bins=n_bins)
        values[n_bins] = _fit(est, d).values_
        assert values[n_bins].shape == (n_bins,)
    assert base.get_params() == {"n_bins": 10, "empty_bins": "mean"}
    np.testing.assert_array_equal(values[10], _fit(CAL.HistogramBinning(), d).values_)


@pytest.mark.parametrize("cls", [CAL.TemperatureScaling, CAL.VectorScaling, CAL.PlattScaling,
                                 CAL.MatrixScaling, CAL.DirichletCalibration,
                                 CAL.MassRescaling, CAL.NaiveCMCETemperature,
                                 CAL.OneVsRestPlatt, CAL.OneVsRestIsotonic,
                                 CAL.AdaptiveTemperatureScaling, CAL.HistogramBinning])
def test_multiclass_maps_follow_the_protocol_on_matrices(cls):
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(500, 4)) * 2
    y = (np.exp(Z / 2).cumsum(1) / np.exp(Z / 2).sum(1, keepdims=True)
         > rng.random((500, 1))).argmax(1)
    est = cls()
    before = dict(vars(est))
    assert est.fit(logits=Z, target=y) is est
    check_is_fitted(est)
    assert all(vars(est)[k] is v for k, v in before.items())
    public = {a for a in set(vars(est)) - set(before) if not a.startswith("_")}
    assert all(a.endswith("_") for a in public), sorted(public)
    assert est.status_ == _ok_status(est) and est.n_classes_ == 4
    p1 = est.predict_proba(logits=Z)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(logits=Z), p1)
    np.testing.assert_array_equal(clone(est).fit(logits=Z, target=y).predict_proba(logits=Z),
                                  p1)
    assert est.__sklearn_tags__().input_tags.two_d_array
