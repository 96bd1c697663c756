"""The statsmodels-like summary of annotator fits, and the one fit/annotations check."""

import warnings

import numpy as np
import pandas as pd
import pytest

import noisycal as nc
from noisycal.engines.results import check_fit
from noisycal.engines.summary import WIDTH, Summary


@pytest.fixture(scope="module")
def ds1979():
    return nc.datasets.load_dawid_skene_1979()


@pytest.fixture(scope="module")
def em(ds1979):
    return nc.DawidSkene(4).fit(ds1979, method=nc.engines.EM(n_starts=2, n_boot=40), seed=0)


@pytest.fixture(scope="module")
def nuts(ds1979):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.ConvergenceWarning)  # short chains
        return nc.DawidSkene(4).fit(ds1979, method=nc.engines.NUTS(num_chains=2, num_warmup=60,
                                                                   num_samples=60), seed=0)


def test_em_header_and_tables_by_hand(em, ds1979, capsys):
    s = em.summary()
    assert capsys.readouterr().out == ""
    assert isinstance(s, Summary) and s.title == "dawid_skene fit by em"
    h = s.header
    # 45 patients, 5 clinicians (the first rated each patient 3 times): 315 ratings
    assert (h["n_items"], h["n_annotators"], h["n_classes"], h["n_ratings"]) == (45, 5, 4, 315)
    # free parameters: 3 prevalences + 5 annotators x 4 rows x 3 = 63
    assert h["n_params"] == 63 and h["loglik"] == em.loglik
    assert h["aic"] == pytest.approx(2 * 63 - 2 * em.loglik, rel=1e-12)
    assert h["bic"] == pytest.approx(63 * np.log(45) - 2 * em.loglik, rel=1e-12)
    assert h["status"] == em.status and "elpd_loo" not in h
    prev = s.table("prevalence")
    np.testing.assert_allclose(prev["estimate"], em.prevalence, rtol=1e-12)
    draws = np.asarray(em.draws["prevalence"])[:, 0]
    np.testing.assert_allclose(prev["low"], np.quantile(draws, 0.05, axis=0), rtol=1e-12)
    np.testing.assert_allclose(prev["high"], np.quantile(draws, 0.95, axis=0), rtol=1e-12)
    acc = s.table("accuracy")
    assert len(acc) == 5 * (4 + 1)
    diag = np.diagonal(em.confusion, axis1=1, axis2=2)
    first = acc[acc["annotator"] == em.annotators[0]]
    np.testing.assert_allclose(first["estimate"].to_numpy()[:4], diag[0], rtol=1e-12)
    assert first["estimate"].to_numpy()[4] == pytest.approx(diag[0].mean(), rel=1e-12)
    assert first["class"].tolist()[-1] == "mean"
    assert "r_hat" not in acc.columns
    text = str(s)
    assert "aic:" in text and f"{em.aic:.6g}" in text and "loglik:" in text
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    with pytest.raises(ValueError, match="title must be one of"):
        s.table("channels")


def test_summary_level_and_refusals(em):
    wide, narrow = em.summary(level=0.9), em.summary(level=0.5)
    assert (wide.table("prevalence")["low"] <= narrow.table("prevalence")["low"]).all()
    with pytest.raises(ValueError, match="level"):
        em.summary(level=90)
    with pytest.raises(ValueError, match="loo must be"):
        em.summary(loo="yes")


def test_nuts_summary_has_rhat_and_ess(nuts):
    az = pytest.importorskip("arviz")
    s = nuts.summary()
    prev, acc = s.table("prevalence"), s.table("accuracy")
    for t in (prev, acc):
        assert {"low", "high", "r_hat", "ess_bulk", "ess_tail"} <= set(t.columns)
    by_chain = np.asarray(nuts.draws["prevalence"])[:, 0, 0].reshape(2, -1)
    assert prev["r_hat"].iloc[0] == pytest.approx(float(az.rhat(by_chain)), rel=1e-10)
    assert prev["ess_bulk"].iloc[0] == pytest.approx(float(az.ess(by_chain)), rel=1e-10)
    assert prev["ess_tail"].iloc[0] == pytest.approx(
        float(az.ess(by_chain, method="tail")), rel=1e-10)
    mean_acc = np.diagonal(np.asarray(nuts.draws["confusion"])[:, 0], axis1=1,
                           axis2=2).mean(-1).reshape(2, -1)
    assert acc["r_hat"].iloc[4] == pytest.approx(float(az.rhat(mean_acc)), rel=1e-10)
    h = s.header
    assert h["draws"] == 120 and h["chains"] == 2 and "aic" not in h
    assert h["elpd_loo"] is None  # not computed unless asked (or by compare)
    with_loo = nuts.summary(loo=True).header
    assert np.isfinite(with_loo["elpd_loo"]) and with_loo["p_loo"] > 0
    assert nuts.summary().header["elpd_loo"] == with_loo["elpd_loo"]  # cached on the fit
    text = str(s)
    assert "r_hat" in text and max(len(line) for line in text.splitlines()) <= WIDTH


def test_ten_classes_three_annotators_fit_in_88_columns():
    K = 10
    conf = np.tile(np.full((K, K), 0.2 / (K - 1)) + np.eye(K) * (0.8 - 0.2 / (K - 1)),
                   (3, 1, 1))
    ann = nc.simulate.dawid_skene(400, np.full(K, 0.1), conf, seed=0).annotations
    fit = nc.DawidSkene(K).fit(ann, method=nc.engines.EM(n_starts=1, n_boot=20), seed=0)
    text = str(fit.summary())
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert len(fit.summary().table("accuracy")) == 3 * (K + 1)
    assert fit.to_frame().shape[0] == K + 3 * K * K  # the long table stays available


def test_html_holds_the_tables(em):
    page = em.summary()._repr_html_()
    assert page.count("<table") == 3 and "prevalence" in page and "accuracy" in page
    assert f"{em.prevalence[0]:.4f}" in page


def test_match_is_the_one_check(em, ds1979):
    with pytest.raises(ValueError, match="fit must be an AnnotatorFit"):
        check_fit(object(), "predict")
    with pytest.raises(ValueError, match="annotations must be a noisycal.Annotations"):
        em.match(np.zeros((3, 5)))
    m = em.match(ds1979)
    assert m.annotator_index.tolist() == [0, 1, 2, 3, 4] and m.class_index.tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(m.channel, ds1979.annotator_index)
    # the same ratings under other annotator ids: refused by name, never replaced by the
    # fit's own ratings
    frame = ds1979.to_long()
    frame = frame.assign(annotator=frame["annotator"].astype(str) + "x")
    other = nc.Annotations.from_long(frame)
    with pytest.raises(ValueError, match=r"has not seen: \['1x', '2x'"):
        em.match(other)
    with pytest.raises(ValueError, match=r"has not seen: \['1x'"):
        em.predict(other)
    bad = type(em)(**{**em._values(), "confusion": np.full_like(em.confusion, np.nan)})
    for use, call in (("predict", lambda: bad.predict(ds1979)),
                      ("replicate ratings", lambda: nc.annotators.ppc(bad, ds1979))):
        with pytest.raises(ValueError, match=f"fit has no finite estimates .*cannot {use}"):
            call()
    assert isinstance(em.summary().tables[0], pd.DataFrame)
