"""First-call cost: a lazy ``import noisycal``, the opt-in compilation cache, progress bars."""

import subprocess
import sys

import numpy as np
import pytest

import noisycal as nc

HEAVY = ("jax", "numpyro", "arviz", "statsmodels", "matplotlib", "pandas", "scipy")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return out.stdout.strip()


def test_import_loads_no_heavy_dependency():
    loaded = _run("import sys, noisycal; "
                  f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    assert loaded == "[]"


def test_a_public_name_loads_only_what_it_needs():
    # a metric or an annotator model brings JAX in, not the plotting or PPL stack
    code = ("import sys, noisycal as nc; nc.ece, nc.DawidSkene, nc.calibrators.TemperatureScaling;"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'jax', 'numpyro', 'arviz', 'statsmodels', 'matplotlib'}))")
    assert _run(code) == "['jax']"


def test_a_first_dawid_skene_em_fit_does_not_import_the_heavy_stacks():
    """The first EM fit (identification check included) needs JAX and parts of SciPy, not
    scipy.stats (0.4-0.7 s of a cold process), NumPyro, statsmodels, arviz or matplotlib."""
    code = ("import sys, numpy as np, noisycal as nc;"
            "A = np.random.default_rng(0).integers(0, 3, (60, 3));"
            "fit = nc.DawidSkene().fit(nc.Annotations.from_wide(A, classes=[0, 1, 2]));"
            "assert fit.details['identification'] is not None;"
            "print(sorted({m for m in sys.modules if m == 'scipy.stats' or "
            "m.split('.')[0] in ('numpyro', 'arviz', 'statsmodels', 'matplotlib')}))")
    assert _run(code) == "[]"


@pytest.mark.parametrize("package", ["noisycal", "noisycal.metrics", "noisycal.intervals",
                                     "noisycal.annotators", "noisycal.calibrators",
                                     "noisycal.datasets", "noisycal.engines",
                                     "noisycal.ambiguity"])
def test_every_public_name_resolves_and_is_listed(package):
    import importlib

    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, (package, name)
        assert name in dir(mod), (package, name)


def test_a_function_keeps_its_name_when_its_module_is_imported():
    # metrics/ece.py defines ece and mce, and metrics/mce.py exists: importing the modules
    # must not turn the public functions into modules (as an eager import never did)
    code = ("import noisycal.metrics.mce, noisycal.metrics.ece, noisycal.intervals.bootstrap;"
            "import noisycal as nc, types;"
            "print([isinstance(f, types.FunctionType) for f in "
            "(nc.mce, nc.metrics.mce, nc.metrics.ece, nc.intervals.bootstrap, nc.bootstrap)])")
    assert _run(code) == "[True, True, True, True, True]"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        nc.no_such_thing  # noqa: B018
    assert not hasattr(nc.metrics, "no_such_metric")


def test_a_submodule_not_listed_is_imported_on_access():
    assert _run("import noisycal as nc; print(nc.engines.em.__name__)") == "noisycal.engines.em"


# ---------------------------------------------------------------- compilation cache
_CACHE_RUN = r"""
import json, sys, jax, numpy as np, noisycal as nc
hits = []
jax.monitoring.register_event_listener(
    lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
nc.set_compilation_cache(sys.argv[1])
rng = np.random.default_rng(0)
y = rng.integers(0, 3, 150)
wide = np.where(rng.random((150, 3)) < 0.8, y[:, None], rng.integers(0, 3, (150, 3)))
# MACE: its EM and identification Hessians are compiled (a small Dawid-Skene fit runs
# in NumPy and compiles nothing)
fit = nc.annotators.MACE().fit(nc.Annotations.from_wide(wide),
                               method=nc.engines.EM(n_starts=2), seed=0)
print(json.dumps({"loglik": repr(fit.loglik), "hits": len(hits)}))
"""


def test_the_compilation_cache_is_filled_then_read_with_the_same_fit(tmp_path):
    import json

    runs = [json.loads(_run_args(_CACHE_RUN, str(tmp_path))) for _ in range(2)]
    assert any(tmp_path.iterdir())  # the first process wrote compiled programs
    assert runs[0]["hits"] == 0
    assert runs[1]["hits"] >= 2  # at least the EM loop and the identification Hessians
    assert runs[1]["loglik"] == runs[0]["loglik"]


def _run_args(code: str, *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def test_the_cache_is_off_unless_asked_and_can_be_turned_off(tmp_path):
    code = ("import jax, noisycal as nc; nc.ece; a = jax.config.jax_compilation_cache_dir;"
            "b = nc.set_compilation_cache(sys.argv[1]); "
            "c = jax.config.jax_persistent_cache_min_compile_time_secs;"
            "nc.set_compilation_cache(None); print(a, b == sys.argv[1], c, "
            "jax.config.jax_compilation_cache_dir)")
    assert _run_args("import sys;" + code, str(tmp_path / "new")) == "None True 0.0 None"
    assert (tmp_path / "new").is_dir()


@pytest.mark.parametrize("kwargs, match", [({"path": 3}, "path"),
                                           ({"path": "x", "min_compile_time": -1.0},
                                            "min_compile_time"),
                                           ({"path": "x", "min_compile_time": True},
                                            "min_compile_time")])
def test_set_compilation_cache_names_a_bad_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nc.set_compilation_cache(**kwargs)


# ---------------------------------------------------------------- progress bars
def _small_annotations(n=120, K=3, J=3, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    wide = np.where(rng.random((n, J)) < 0.75, y[:, None], rng.integers(0, K, (n, J)))
    return nc.Annotations.from_wide(wide), rng.random(n) * 0.5 + 0.5 * (y == 1)


def test_the_bar_draws_label_count_and_a_final_line():
    import io

    from noisycal._util.progress import ProgressBar

    out = io.StringIO()
    with ProgressBar(4, "refits", stream=out, min_interval=0.0) as bar:
        bar.update(2)
        bar.update(5)  # never past the total
    text = out.getvalue()
    assert text.startswith("\rrefits [....")
    assert "\rrefits [###############...............] 2/4" in text
    assert text.endswith("4/4 " + text.rsplit("4/4 ", 1)[1]) and text.endswith(" s\n")
    quiet = io.StringIO()
    with ProgressBar(4, "refits", enabled=False, stream=quiet) as bar:
        bar.update(1)
    assert quiet.getvalue() == ""


def test_em_starts_and_bootstrap_show_a_bar_on_stderr_and_the_same_fit(capsys):
    import numpy as np

    ann, _ = _small_annotations()
    em = nc.engines.EM(n_starts=3, n_boot=4)
    quiet = nc.DawidSkene(n_classes=3).fit(ann, method=em, seed=1)
    assert capsys.readouterr().err == ""
    shown = nc.DawidSkene(n_classes=3).fit(ann, method=em, seed=1, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "EM iterations, 3 starts [" in captured.err
    assert f"{shown.n_iter}/1000" in captured.err  # the slowest start's iterations
    assert "EM bootstrap refits [##############################] 4/4" in captured.err
    assert shown.loglik == quiet.loglik
    for a, b in ((shown.confusion, quiet.confusion), (shown.prevalence, quiet.prevalence),
                 (shown.draws["confusion"], quiet.draws["confusion"])):
        np.testing.assert_array_equal(a, b)


def test_nuts_and_mle_fits_show_a_bar_only_when_asked(capsys):
    import warnings

    import numpy as np

    ann, _ = _small_annotations(n=40, K=2)
    nuts = nc.engines.NUTS(num_chains=2, num_warmup=5, num_samples=5)
    with warnings.catch_warnings():  # short chains: they do not converge
        warnings.simplefilter("ignore")
        quiet = nc.DawidSkene(2).fit(ann, method=nuts)
        assert capsys.readouterr().err == ""
        shown = nc.DawidSkene(2).fit(ann, method=nuts, progress=True)
        assert "2 chains sample" in capsys.readouterr().err  # the chunked (tqdm) bar
        nc.DawidSkene(2).fit(ann, method="mle", progress=True)
        assert "L-BFGS-B iterations [" in capsys.readouterr().err
    np.testing.assert_allclose(shown.draws["confusion"], quiet.draws["confusion"], rtol=1e-9)


def test_noise_check_bootstrap_shows_a_bar_and_the_same_test(capsys):
    import numpy as np

    ann, scores = _small_annotations(n=150, K=2, J=3, seed=2)
    kw = dict(n_groups=2, test="bootstrap", n_boot=3, method=nc.engines.EM(n_starts=2), seed=0)
    quiet = nc.annotators.noise_check(ann, scores, **kw)
    assert capsys.readouterr().err == ""
    shown = nc.annotators.noise_check(ann, scores, progress=True, **kw)
    err = capsys.readouterr().err
    assert "noise check bootstrap [##############################] 3/3" in err
    assert "EM iterations, 2 starts [" in err
    assert shown.p_value == quiet.p_value
    np.testing.assert_array_equal(shown.details["boot_statistics"],
                                  quiet.details["boot_statistics"])


@pytest.mark.parametrize("call", ["fit", "noise_check"])
def test_progress_must_be_a_bool(call):
    ann, scores = _small_annotations(K=2)
    with pytest.raises(ValueError, match="progress must be True or False"):
        if call == "fit":
            nc.DawidSkene(n_classes=2).fit(ann, progress="yes")
        else:
            nc.annotators.noise_check(ann, scores, progress=1)


@pytest.mark.parametrize("interval", ["bootstrap", "inversion"])
def test_nc_ece_channel_refits_show_a_bar_and_the_same_interval(interval, capsys):
    import numpy as np

    toy = nc.simulate.gaussian_toy(600, truth="shifted", seed=3)
    ann = nc.Annotations.from_wide(toy.annotations, classes=[0, 1])
    T = nc.targets.corrected(ann, nc.DawidSkene(2).fit(ann))
    n_boot = 100 if interval == "inversion" else 6  # the inversion needs 100 draws
    method = "percentile" if interval == "bootstrap" else interval
    kw = dict(n_bins=10, seed=7)
    capsys.readouterr()
    quiet = nc.ece(toy.z, T, interval=nc.intervals.Refit(n_boot=n_boot, method=method), **kw)
    assert capsys.readouterr().err == ""
    shown = nc.ece(toy.z, T, interval=nc.intervals.Refit(n_boot=n_boot, method=method,
                                                          progress=True), **kw)
    assert f"NC-ECE channel refits [##############################] {n_boot}/{n_boot}" \
        in capsys.readouterr().err
    assert float(shown) == float(quiet) and shown.interval == quiet.interval
    np.testing.assert_array_equal(shown.replicates, quiet.replicates)


def test_em_starts_run_one_by_one_tick_once_each_with_the_same_states():
    # from PROB_MIN_ITEMS rows on the starts run one after another (lax.map): the bar
    # counts finished starts
    import io

    import numpy as np

    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal._util.progress import ProgressBar
    from noisycal.engines.em.dawid_skene import fit_em
    from noisycal.engines.em.estep import PROB_MIN_ITEMS
    from noisycal.models.dawid_skene import make_data

    n, J, K = PROB_MIN_ITEMS, 3, 2
    rng = np.random.default_rng(4)
    y = rng.integers(0, K, n)
    labels = np.where(rng.random((n, J)) < 0.8, y[:, None], 1 - y[:, None])
    with x64():
        data = make_data(np.repeat(np.arange(n), J), np.tile(np.arange(J), n),
                         labels.ravel(), n_items=n, n_annotators=J, n_classes=K)
        soft = np.stack([(labels == k).mean(1) for k in range(K)], axis=1)
        post0 = jnp.asarray(np.stack([soft, 0.5 * soft + 0.25]))
        kw = dict(one_coin=False, max_iter=50, tol=1e-8)
        quiet = fit_em(post0, data, None, None, None, **kw)
        out = io.StringIO()
        with ProgressBar(2, "EM, 2 starts", stream=out, min_interval=0.0) as bar:
            shown = bar.wait(fit_em(post0, data, None, None, None, progress=True, **kw))
    assert "2/2" in out.getvalue()
    for a, b in zip(quiet, shown, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------- identification in NumPy
def _design(kind):
    """A simulated fit of each Dawid–Skene family member and what the check needs."""
    import numpy as np

    K, J = 3, 4
    conf = np.array([[[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]]] * J)
    conf[0] = [[0.97, 0.03, 0.0], [0.1, 0.8, 0.1], [0.0, 0.15, 0.85]]  # boundary zeros
    sim = nc.simulate.dawid_skene(400, [0.5, 0.3, 0.2], conf, p_rate=0.8, seed=1)
    ann, kw, L = sim.annotations, {}, 1
    model = nc.OneCoinDawidSkene if kind == "one_coin" else nc.DawidSkene
    if kind == "grouped":
        kw["groups"], L, model = np.arange(ann.n_items) % 2, 2, nc.GroupedDawidSkene
    if kind == "gold":
        known = np.asarray(ann.classes)[sim.true_class[:60]]
        kw["gold"] = dict(zip(list(ann.items)[:60], known, strict=True))
    fit = model(n_classes=K).fit(ann, seed=0, **kw)
    gold = None
    if kind == "gold":
        gold = np.full(ann.n_items, -1)
        gold[:60] = sim.true_class[:60]
    return ann, fit, kw.get("groups"), gold, L


def _information_inputs(ann, fit, group, gold, L, one_coin):
    import numpy as np

    from noisycal._util.jax import x64
    from noisycal.engines.em.dawid_skene import pattern_data
    from noisycal.engines.free_params import free_parameters

    prev = np.asarray(fit.prevalence, float).reshape(L, -1)
    conf = np.asarray(fit.confusion, float)
    K, J = prev.shape[1], conf.shape[0]
    arr = ann.engine_arrays()
    with x64():
        pd_ = pattern_data(arr.item, arr.annotator, arr.label, n_items=ann.n_items,
                           n_annotators=J, n_classes=K, group=group, n_groups=L, gold=gold)
    labels = {"prevalence": [f"p{i}" for i in range(L * K)],
              "confusion": [f"c{i}" for i in range(J * K * K)],
              "accuracy": [f"a{j}" for j in range(J)]}
    post, B, names, _ = free_parameters(prev, conf, pd_.data, pd_.counts, pd_.gold,
                                        one_coin=one_coin, labels=labels)
    x0 = np.concatenate([prev.ravel(), conf[:, 0, 0] if one_coin else conf.ravel()])
    return prev, conf, pd_, post, B, x0, np.asarray(pd_.counts, float)


def _traced(x0, B, post, w, pd_, one_coin):
    """The Hessians by JAX autodiff (the reference the NumPy information replaced)."""
    import numpy as np

    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.engines.em.dawid_skene import split_data
    from noisycal.engines.identification import _hessians

    arrays, sizes = split_data(pd_.data)
    with x64():
        gold = None if pd_.gold is None else jnp.asarray(pd_.gold)
        info, complete = _hessians(jnp.asarray(x0), jnp.asarray(B), jnp.asarray(post),
                                   jnp.asarray(w), gold, arrays, sizes=sizes,
                                   one_coin=one_coin)
    return np.asarray(info), np.asarray(complete)


@pytest.mark.parametrize("kind", ["full", "one_coin", "grouped", "gold"])
def test_numpy_information_equals_the_traced_hessians(kind):
    import numpy as np

    import jax.numpy as jnp

    from noisycal._util.jax import x64
    from noisycal.engines.em.dawid_skene import posteriors_at
    from noisycal.engines.free_params import posteriors_np
    from noisycal.engines.identification import _information

    ann, fit, group, gold, L = _design(kind)
    one_coin = kind == "one_coin"
    prev, conf, pd_, post, B, x0, w = _information_inputs(ann, fit, group, gold, L, one_coin)
    assert B.shape[1] >= 6
    assert one_coin or (np.abs(B).sum(1) == 0).any()  # some entries held fixed
    with x64():
        ref_post = np.asarray(posteriors_at(jnp.asarray(prev)[None], jnp.asarray(conf)[None],
                                            pd_.data, gold=pd_.gold)[0])
    np.testing.assert_allclose(posteriors_np(prev, conf, pd_.data, pd_.gold), ref_post,
                               rtol=0, atol=1e-12)
    info, complete = _information(x0, B, post, w, pd_.data, one_coin=one_coin)
    ref_info, ref_complete = _traced(x0, B, post, w, pd_, one_coin)
    scale = np.abs(ref_complete).max()
    np.testing.assert_allclose(info, ref_info, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(complete, ref_complete, rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("kind", ["full", "one_coin", "gold"])
def test_identification_and_fit_are_those_of_the_traced_path(kind, monkeypatch):
    """Statuses and numbers to 1e-10 against the former path (traced Hessians, compiled
    posteriors for the starts and the check)."""
    import numpy as np

    import jax.numpy as jnp

    import noisycal.engines.em.starts as starts
    import noisycal.engines.free_params as fp
    import noisycal.engines.identification as idm
    from noisycal._util.jax import x64
    from noisycal.engines.em.dawid_skene import posteriors_at

    def jax_posteriors(prev, conf, data, gold):
        with x64():
            return np.asarray(posteriors_at(jnp.asarray(prev)[None], jnp.asarray(conf)[None],
                                            data, gold=None if gold is None
                                            else jnp.asarray(gold))[0])

    def traced(x0, B, post, w, data, *, one_coin):
        class _P:  # what _traced reads of the pattern data
            pass
        p = _P()
        p.data, p.gold = data, traced.gold
        return _traced(x0, B, post, w, p, one_coin)

    ann, fit, group, gold, L = _design(kind)
    one_coin = kind == "one_coin"
    new = idm.dawid_skene_identification(ann, fit.prevalence.reshape(L, -1), fit.confusion,
                                         group=group, gold=gold, one_coin=one_coin,
                                         threshold=0.3)
    with monkeypatch.context() as m:
        m.setattr(idm, "_information", traced)
        m.setattr(fp, "posteriors_np", jax_posteriors)
        m.setattr(starts, "posteriors_np", jax_posteriors)
        from noisycal.engines.em.dawid_skene import pattern_data
        arr = ann.engine_arrays()
        with x64():
            traced.gold = pattern_data(arr.item, arr.annotator, arr.label,
                                       n_items=ann.n_items, n_annotators=fit.confusion.shape[0],
                                       n_classes=3, group=group, n_groups=L, gold=gold).gold
        old = idm.dawid_skene_identification(ann, fit.prevalence.reshape(L, -1),
                                             fit.confusion, group=group, gold=gold,
                                             one_coin=one_coin, threshold=0.3)
        _, old_fit, *_ = _design(kind)
    assert new.status == old.status and new.names == old.names
    assert new.loading == old.loading
    for a, b in ((new.relative_information, old.relative_information),
                 (new.max_se, old.max_se), (new.condition_number, old.condition_number)):
        assert abs(a - b) <= 1e-10 * max(1.0, abs(b))
    np.testing.assert_allclose(new.null_direction, old.null_direction, rtol=0, atol=1e-10)
    assert old_fit.status == fit.status
    assert abs(old_fit.loglik - fit.loglik) <= 1e-10 * abs(fit.loglik)
    np.testing.assert_allclose(fit.confusion, old_fit.confusion, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fit.item_posterior, old_fit.item_posterior, rtol=0, atol=1e-10)


def test_dir_lists_public_names_not_the_lazy_helpers():
    import noisycal as nc

    shown = dir(nc)
    assert "TYPE_CHECKING" not in shown and "attach" not in shown
    assert {"ece", "DawidSkene", "targets", "__version__"} <= set(shown)
    assert "TYPE_CHECKING" not in dir(nc.metrics) and "hpr_sets" in dir(nc.metrics)


def test_bucket_sizes_pad_at_most_a_quarter():
    from noisycal.engines.em.dawid_skene import BUCKETS_PER_OCTAVE, bucket

    assert (bucket(1), bucket(16), bucket(17), bucket(166), bucket(172), bucket(193)) == (
        16, 16, 20, 192, 192, 224)
    sizes = [bucket(n) for n in range(17, 20_000)]
    assert all(b >= n and b <= 1.25 * n for n, b in zip(range(17, 20_000), sizes, strict=True))
    for k in range(5, 14):    # sizes in (2^k, 2^(k+1)]
        assert len({bucket(n) for n in range(2**k + 1, 2**(k + 1) + 1)}) == BUCKETS_PER_OCTAVE


def _ds_data(n, seed, p_rate):
    conf = np.tile([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], (4, 1, 1))
    return nc.simulate.dawid_skene(n, [0.3, 0.3, 0.4], conf, p_rate=p_rate,
                                   seed=seed).annotations


def test_new_data_of_a_similar_size_reuse_the_compiled_em_program(monkeypatch):
    """Two data sets whose rating patterns (166 and 172, three slots each) fall in one
    bucket: the second fit compiles no new EM program (the NumPy path turned off)."""
    from noisycal.engines.em import dawid_skene as em
    from noisycal.engines.em import numpy_em

    monkeypatch.setattr(numpy_em, "NUMPY_EM_MAX_CELLS", 0)
    a, b = _ds_data(520, 1, 0.7), _ds_data(610, 2, 0.7)
    start = em._fit_em._cache_size()
    fa = nc.DawidSkene().fit(a, seed=0)
    before = em._fit_em._cache_size()
    assert before >= start
    fb = nc.DawidSkene().fit(b, seed=0)
    assert fa.details["n_patterns"] != fb.details["n_patterns"]
    assert em.bucket(fa.details["n_patterns"]) == em.bucket(fb.details["n_patterns"])
    assert em._fit_em._cache_size() == before


@pytest.mark.parametrize("model", [nc.DawidSkene, nc.OneCoinDawidSkene, nc.annotators.MACE])
def test_padded_em_gives_the_unpadded_fit(model, monkeypatch):
    """The padding (empty rows of weight 0, empty overflow codes) changes no number beyond
    rounding: missing ratings (overflow slots) and gold items included."""
    from noisycal.engines.em import dawid_skene as em
    from noisycal.engines.em import numpy_em

    monkeypatch.setattr(numpy_em, "NUMPY_EM_MAX_CELLS", 0)
    ann = _ds_data(400, 3, 0.6)
    kw = {"gold": dict.fromkeys(ann.items[:20].tolist(), 1)} if model is nc.DawidSkene else {}
    padded = model().fit(ann, seed=0, **kw)
    monkeypatch.setattr(em, "BUCKET_MAX_ROWS", 0)
    plain = model().fit(ann, seed=0, **kw)
    assert padded.status == plain.status
    assert padded.loglik == pytest.approx(plain.loglik, rel=1e-13)
    np.testing.assert_allclose(padded.confusion, plain.confusion, rtol=0, atol=1e-13)
    np.testing.assert_allclose(padded.item_posterior, plain.item_posterior, rtol=0,
                               atol=1e-12)


@pytest.mark.parametrize("case", ["ds", "one_coin", "gold", "map", "grouped", "map_one_coin"])
def test_the_numpy_em_path_gives_the_compiled_fit(case, monkeypatch):
    """Small fits of the full and one-coin channels run EM in NumPy; every number equals
    the compiled program's to round-off (the same iterations): missing ratings, gold
    items, Dirichlet priors (MAP-EM) and groups."""
    from noisycal.engines.em import numpy_em

    ann = _ds_data(400, 4, 0.6)
    model, kw = {
        "ds": (nc.DawidSkene(), {}),
        "one_coin": (nc.OneCoinDawidSkene(), {}),
        "gold": (nc.DawidSkene(), {"gold": dict.fromkeys(ann.items[:25].tolist(), 2)}),
        "map": (nc.DawidSkene(alpha=np.full(3, 2.0), beta=np.full((3, 3), 1.5)
                              + np.eye(3)), {}),
        "grouped": (nc.GroupedDawidSkene(), {"groups": np.arange(400) % 2}),
        "map_one_coin": (nc.OneCoinDawidSkene(beta=np.full((3, 3), 1.5)
                                              + 2.5 * np.eye(3)), {}),
    }[case]
    calls = []
    real = numpy_em.fit_em_numpy
    monkeypatch.setattr(numpy_em, "fit_em_numpy",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    from noisycal.engines.em import dawid_skene as em

    monkeypatch.setattr(em, "fit_em_numpy", numpy_em.fit_em_numpy)
    fast = model.fit(ann, seed=0, **kw)
    assert calls, "the NumPy path did not run"
    monkeypatch.setattr(numpy_em, "NUMPY_EM_MAX_CELLS", 0)
    compiled = model.fit(ann, seed=0, **kw)
    assert len(calls) == 1
    assert fast.status == compiled.status
    assert fast.n_iter == compiled.n_iter
    np.testing.assert_allclose(fast.details["start_objectives"],
                               compiled.details["start_objectives"], rtol=1e-13)
    assert fast.loglik == pytest.approx(compiled.loglik, rel=1e-13)
    np.testing.assert_allclose(fast.confusion, compiled.confusion, rtol=0, atol=1e-13)
    np.testing.assert_allclose(fast.group_prevalence, compiled.group_prevalence, rtol=0,
                               atol=1e-13)
    np.testing.assert_allclose(fast.item_posterior, compiled.item_posterior, rtol=0,
                               atol=1e-12)


@pytest.mark.parametrize("model", [nc.annotators.MACE, nc.annotators.ClassConditionalDawidSkene])
def test_the_identification_hessians_are_bucketed_too(model, monkeypatch):
    """The constrained channels' identification check (autodiff Hessians) runs on the
    bucketed patterns: the numbers of the unpadded check, and a second data set in the
    same bucket compiles no new Hessian program."""
    from noisycal.engines import identification as ident
    from noisycal.engines.em import dawid_skene as em

    a, b = _ds_data(520, 1, 0.7), _ds_data(610, 2, 0.7)
    fa = model().fit(a, seed=0)
    before = ident._hessians._cache_size()
    model().fit(b, seed=0)
    assert ident._hessians._cache_size() == before
    monkeypatch.setattr(em, "BUCKET_MAX_ROWS", 0)
    plain = model().fit(a, seed=0)
    for key in ("relative_information", "condition_number", "max_se"):
        assert fa.details["identification"][key] == pytest.approx(
            plain.details["identification"][key], rel=1e-9), key
    assert fa.details["identification"]["status"] == plain.details["identification"]["status"]


def test_a_second_mle_fit_on_new_data_of_the_same_shapes_compiles_nothing():
    """noisycal's own models keep their MLE programs (objective and gradient, Hessian,
    the constraining map and its Jacobian, the start): a replication of a simulation study
    compiles nothing, and gives what a freshly built program gives."""
    from noisycal.engines.density import mle

    a, b = _ds_data(300, 5, 1.0), _ds_data(300, 6, 1.0)   # complete: 1,200 ratings each
    mle.PROGRAMS.clear()
    fa = nc.DawidSkene().fit(a, method="mle", seed=0)
    assert len(mle.PROGRAMS) == 1
    prog = next(iter(mle.PROGRAMS.values()))
    parts = (prog.initial, prog.constrain, prog.log_parts, prog.neg_value_and_grad,
             prog.neg_hessian, prog.constrain_jacobian)
    assert [f._cache_size() for f in parts] == [1] * 6
    fb = nc.DawidSkene().fit(b, method="mle", seed=0)
    assert len(mle.PROGRAMS) == 1 and next(iter(mle.PROGRAMS.values())) is prog
    assert [f._cache_size() for f in parts] == [1] * 6
    assert fa.status == fb.status == "ok" and fa.loglik != fb.loglik
    mle.PROGRAMS.clear()
    fresh = nc.DawidSkene().fit(b, method="mle", seed=0)
    assert fresh.loglik == fb.loglik and fresh.n_iter == fb.n_iter
    np.testing.assert_array_equal(fresh.confusion, fb.confusion)


def test_user_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    """$NOISYCAL_CACHE_DIR, set and empty for none, else $XDG_CACHE_HOME/noisycal/jax,
    else ~/.cache/noisycal/jax; nothing is created."""
    import os

    monkeypatch.setenv("NOISYCAL_CACHE_DIR", str(tmp_path / "mine"))
    assert nc.user_cache_folder() == str(tmp_path / "mine")
    monkeypatch.setenv("NOISYCAL_CACHE_DIR", "")
    assert nc.user_cache_folder() is None
    monkeypatch.delenv("NOISYCAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nc.user_cache_folder() == os.path.join(tmp_path, "xdg", "noisycal", "jax")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert nc.user_cache_folder() == os.path.join(tmp_path, "home", ".cache", "noisycal",
                                                  "jax")
    assert not any(tmp_path.iterdir())
