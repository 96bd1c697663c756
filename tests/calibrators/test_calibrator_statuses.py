"""A fitted calibrator keeps every status that applies in ``statuses_``: a failed
target's (which is ``status_``) and the fit's own."""

import warnings

import numpy as np

import noisycal as nc


def _not_converged_target(n=60):
    conf = np.array([[[0.8, 0.2], [0.3, 0.7]]] * 3)
    sim = nc.simulate.dawid_skene(n, [0.6, 0.4], conf, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        fit = nc.DawidSkene(2).fit(sim.annotations,
                                   method=nc.engines.EM(n_starts=1, max_iter=1))
    assert fit.status == "not_converged"
    return nc.targets.posterior(sim.annotations, fit), sim


def test_a_failed_target_and_the_fits_own_status_are_both_kept():
    """The same fit on the target's matrix (no status) and on the Target: the Target's
    failure is status_, the fit's own outcome follows it in statuses_."""
    target, sim = _not_converged_target()
    cases = [(nc.calibrators.TemperatureScaling, np.zeros(60), "not_identified"),
             (nc.calibrators.PlattScaling, 1e-3 * np.sign(np.arange(60) - 29.5),
              "boundary")]
    for cls, z, own in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nc.NoisycalWarning)
            alone = cls().fit(logits=z, target=target.values)
            cal = cls().fit(logits=z, target=target)
        assert alone.statuses_ == (own,) and alone.status_ == own
        assert cal.status_ == "target_not_ok"
        assert cal.statuses_ == ("target_not_ok", own)


def test_a_refit_starts_its_statuses_afresh():
    target, sim = _not_converged_target()
    rng = np.random.default_rng(1)
    z = rng.normal(size=60)
    y = (rng.random(60) < 1 / (1 + np.exp(-z))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        ts = nc.calibrators.TemperatureScaling().fit(logits=z, target=target)
    assert ts.statuses_[0] == "target_not_ok"
    ts.fit(logits=z, target=y)
    assert ts.status_ == "ok" and ts.statuses_ == ("ok",)
