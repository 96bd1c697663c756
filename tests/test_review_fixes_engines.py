"""Review fixes in the engines and annotators: one formula per helper, docstrings that say
what the code does."""

import inspect

import numpy as np
import pytest

import noisycal as nc


def test_moment_start_uses_the_one_proposition_d2_helper(monkeypatch):
    """moment_start takes its channels from moments.triple_channels (the helper
    moment_triple uses), and the result is the formula written out."""
    from noisycal.engines import moments
    from noisycal.engines.em import starts

    rng = np.random.default_rng(3)
    y = rng.random(4000) < 0.4
    a, b = np.array([0.1, 0.2, 0.15, 0.3]), np.array([0.85, 0.75, 0.9, 0.8])
    A = (rng.random((4000, 4)) < np.where(y[:, None], b, a)).astype(int)
    ann = nc.Annotations.from_wide(A, classes=[0, 1])
    calls = []

    def spy(*args, **kw):
        calls.append(args)
        return moments.triple_channels(*args, **kw)

    monkeypatch.setattr(starts, "triple_channels", spy)
    prev, conf, note = starts.moment_start(ann, None, 1, 0)
    assert note == "" and len(calls) == 1
    # the formula written out: delta_j = C_0j / (mu (1 - mu) delta_0), a = q - mu delta
    X = A.astype(float)
    mu, d0, _, _ = moments.triple_core(X[:, [0, 1, 2]])
    D = X - X.mean(0)
    delta = np.array([d0] + [np.mean(D[:, 0] * D[:, j]) / (mu * (1 - mu) * d0)
                             for j in (1, 2, 3)])
    a_hat = np.clip(X.mean(0) - mu * delta, 0.01, 0.99)
    np.testing.assert_allclose(conf[:, 0, 1], a_hat, atol=1e-12)
    np.testing.assert_allclose(conf[:, 1, 1], np.clip(a_hat + delta, 0.01, 0.99), atol=1e-12)


def test_triple_channels_is_moment_triple():
    from noisycal.engines.moments import moment_triple, triple_channels, triple_core

    rng = np.random.default_rng(0)
    y = rng.random(5000) < 0.3
    A = np.column_stack([np.where(y, rng.random(5000) < b, rng.random(5000) < a)
                         for a, b in [(0.1, 0.9), (0.2, 0.8), (0.05, 0.7)]]).astype(float)
    mu, d1, C12, C13 = triple_core(A)
    a, b, delta = triple_channels(mu, d1, np.array([0.0, C12, C13]), A.mean(0), 0)
    ref = moment_triple(A)
    np.testing.assert_array_equal(a, ref["a"])
    np.testing.assert_array_equal(b, ref["b"])
    np.testing.assert_allclose(b - a, delta, atol=1e-15)


def test_multinomial_counts_is_the_one_bootstrap_draw():
    """engines.resample.multinomial_counts: n draws with replacement over n units; the
    item weights of resample_weights are exactly its draw."""
    import jax
    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.engines.em.resample import multinomial_counts, resample_weights

    with x64():
        key = jax.random.PRNGKey(7)
        w = multinomial_counts(key, 50, dtype=jnp.float64)
        assert w.shape == (50,) and w.dtype == jnp.float64 and float(w.sum()) == 50.0
        idx = jax.random.randint(key, (50,), 0, 50, dtype=jnp.int32)
        np.testing.assert_array_equal(np.asarray(w), np.bincount(np.asarray(idx), minlength=50))
        pattern = jnp.arange(50) % 5
        w_items, w_pat = resample_weights(key, pattern, 5)
        np.testing.assert_array_equal(np.asarray(w_items), np.asarray(w))
        np.testing.assert_array_equal(np.asarray(w_pat),
                                      np.bincount(np.arange(50) % 5, weights=np.asarray(w)))


def test_grouped_fit_predict_needs_groups():
    A = np.array([[0, 0, 0], [1, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 0, 0],
                  [1, 1, 1], [0, 1, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]])
    ann = nc.Annotations.from_wide(A)
    groups = np.array([0, 1] * 6)
    fit = nc.GroupedDawidSkene(2).fit(ann, groups=groups, method=nc.engines.EM(n_starts=2), seed=0)
    with pytest.raises(ValueError, match="groups is required"):
        fit.predict(ann)
    with pytest.raises(ValueError, match="groups is required"):
        nc.targets.posterior(ann, fit)
    np.testing.assert_allclose(fit.predict(ann, groups), fit.item_posterior, atol=1e-8)
    # one group: groups may be left out
    one = nc.DawidSkene(2).fit(ann, method=nc.engines.EM(n_starts=2), seed=0)
    np.testing.assert_allclose(one.predict(ann), one.item_posterior, atol=1e-8)


def test_docstrings_cite_by_title_and_say_what_the_code_does():
    from noisycal.annotators import DawidSkene, soft_labels
    from noisycal.engines.moments import hui_walter_moments

    fit_doc = inspect.getdoc(DawidSkene.fit)
    assert "reaches it" not in fit_doc and "strictly greater than it" in fit_doc
    src = inspect.getsource(soft_labels)
    assert "[000]" not in src
    doc = inspect.getdoc(hui_walter_moments)
    assert "Eq. 13" in doc and "Noisy-Label Calibration with Multiple Unreliable Labels" in doc
