"""Properties of ``nc.DawidSkene().fit`` on tiny designs (EM): fitted distributions, the
order of rows, items, annotators and classes, and refused arguments (oracle in
``prop_support``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st
from prop_support import NO_REFERENCE, check_outcome, ratings, run_property, with_defects

import noisycal as nc

# EM stops on a relative change of the log-likelihood: on the flat likelihoods of tiny
# designs two orders stop up to ~1e-3 apart in the parameters, with the same maximum;
# a mis-aligned item, annotator or class moves them by O(1)
_TOL = {"rtol": 0.0, "atol": 5e-3}


def _fit(df, **kw):
    return nc.DawidSkene().fit(nc.Annotations.from_long(df, **kw), seed=0)


def _params(fit) -> tuple[np.ndarray, ...]:
    return (np.asarray(fit.prevalence), np.asarray(fit.confusion),
            np.asarray(fit.item_posterior), np.asarray(fit.loglik))


def _is_model(got, _want) -> bool:
    prev, conf, post, _ = got
    finite = all(np.all(np.isfinite(a)) for a in got)
    return (finite and np.isclose(prev.sum(), 1.0) and np.allclose(conf.sum(axis=2), 1.0)
            and np.allclose(post.sum(axis=1), 1.0) and prev.min() >= 0 and conf.min() >= 0
            and post.min() >= 0)


@st.composite
def _design(draw):
    df, items, classes, counts, names, rng = draw(ratings(n_max=12, j_max=4, k_max=3))
    return df, items, classes, rng


def test_fits_are_distributions():
    # any tiny design: refused by name, a non-ok status, or distributions that sum to 1
    def body(data):
        df, items, classes, _ = data.draw(_design(), label="design")
        try:
            ann = nc.Annotations.from_long(df)
        except ValueError:
            return  # one observed class: the constructor's property covers it
        check_outcome(lambda: nc.DawidSkene().fit(ann, seed=0), nc.DawidSkene.fit, 0.0,
                      value=_params, equal=_is_model)

    run_property(body, 25, key="distributions")


@st.composite
def _tied_design(draw):
    """Two classes, every item rated by 2 or 4 annotators with random labels: tied votes
    are common, and the two namings of the latent classes fit almost equally well."""
    n = draw(st.integers(4, 8))
    j = draw(st.sampled_from([2, 4]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    classes = np.array(["cat", "dog"], dtype=object)
    df = pd.DataFrame({"item": np.repeat(np.arange(n), j) + 100,
                       "annotator": [f"a{v}" for v in np.tile(np.arange(j), n)],
                       "label": classes[rng.integers(0, 2, n * j)]})
    return df, np.arange(n) + 100, classes, rng


# a design whose likelihood is flat along a ridge (found by the annotators property at 20x
# its examples): 8 items, 3 annotators, 2 classes
_RIDGE = [(1005, "a2", 0), (1082, "a0", 1), (1082, "a1", 1), (1094, "a2", 0),
          (1036, "a0", 0), (1005, "a1", 0), (1016, "a2", 1), (1020, "a1", 1),
          (1093, "a1", 0), (1036, "a2", 1), (1093, "a2", 1), (1016, "a1", 0),
          (1052, "a0", 0), (1093, "a0", 0), (1052, "a2", 1), (1020, "a0", 0),
          (1094, "a1", 1), (1016, "a0", 1)]


@st.composite
def _ridge_design(draw):
    df = pd.DataFrame(_RIDGE, columns=["item", "annotator", "label"])
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return df, pd.unique(df["item"]), np.array([0, 1]), rng


ORDER_VARIANTS = ["rows", "items", "annotators", "classes", "classes_tied_votes",
                  "annotators_ridge"]
ORDER_DEFECTS = {
    "classes_tied_votes":
        "DawidSkene().fit names the latent classes by majority-vote matching with ties "
        "going to the lowest class index, so on tied votes the names follow the order of "
        "classes=: items 1067..1055 (7 items, 4 raters, labels cat/dog) fit with "
        "classes=['cat','dog'] give P(cat)=0.714, with classes=['dog','cat'] P(cat)=0.286, "
        "same log-likelihood, both status 'ok' (other designs: 'ok' vs "
        "'adversarial_channel')",
    "annotators_ridge":
        "DawidSkene().fit of _RIDGE (8 items, 3 annotators) has status 'ok' (identification "
        "checked, n_free=0) on a flat likelihood: with EM(tol=1e-14) the 6 annotator orders "
        "reach log-likelihood -11.33192745677101 (within 5e-14) with prevalence[0] from "
        "0.602 to 0.645 and item posteriors up to 0.25 apart",
}


@pytest.mark.parametrize("kind", with_defects(ORDER_VARIANTS, ORDER_DEFECTS))
def test_fit_ignores_orders(kind):
    # reordering the table's rows, or the items, annotators or classes (said with items=,
    # annotators=, classes=), reorders the fitted parameters the same way and keeps the
    # status: items by id, annotators by id, classes by name. EM's random starts follow
    # the array order, so on a multi-modal likelihood two orders may end in different
    # local maxima: only fits reaching the same maximum are compared
    design = {"classes_tied_votes": _tied_design, "annotators_ridge": _ridge_design
              }.get(kind, _design)()

    def body(data):
        df, items, classes, rng = data.draw(design, label="design")
        raters = pd.unique(df["annotator"])
        base = {"items": items, "annotators": raters, "classes": classes}
        try:
            ref_fit = _quiet_fit(df, **base)
        except ValueError:
            return  # the design is refused (checked by the distributions property)
        prev, conf, post, loglik = _params(ref_fit)
        kw, table = dict(base), df
        if kind == "rows":
            table = df.iloc[rng.permutation(len(df))].reset_index(drop=True)
            want = (prev, conf, post, loglik)
        elif kind == "items":
            s = rng.permutation(len(items))
            kw["items"] = items[s]
            want = (prev, conf, post[s], loglik)
        elif kind.startswith("annotators"):  # another order of the annotators
            s = rng.permutation(len(raters))
            s = s[::-1] if np.array_equal(s, np.arange(len(raters))) else s
            kw["annotators"] = raters[s]
            want = (prev, conf[s], post, loglik)
        else:  # another order of the classes (never the same)
            s = rng.permutation(len(classes))
            s = s[::-1] if np.array_equal(s, np.arange(len(classes))) else s
            kw["classes"] = classes[s]
            want = (prev[s], conf[:, s][:, :, s], post[:, s], loglik)
        try:
            fit = _quiet_fit(table, **kw)
        except ValueError:
            fit = None
        if fit is not None and not np.isclose(fit.loglik, ref_fit.loglik, rtol=0, atol=1e-6):
            return  # another local maximum: not a question of alignment
        ref = want if ref_fit.status == "ok" else NO_REFERENCE
        out = check_outcome(lambda: _fit(table, **kw) if fit is None else fit,
                            nc.DawidSkene.fit, ref, value=_params, equal=_same_fit)
        got_status = out.result.status if out.result is not None else "error"
        assert got_status == ref_fit.status, (got_status, ref_fit.status)

    run_property(body, 12, key=kind, shrink=kind not in ORDER_DEFECTS)


def _same_fit(got, want) -> bool:
    """Same maximum (log-likelihood within 1e-6) and the same parameters up to _TOL."""
    *g, g_ll = got
    *w, w_ll = want
    return bool(np.isclose(g_ll, w_ll, rtol=0, atol=1e-6)) and all(
        np.allclose(a, b, **_TOL) for a, b in zip(g, w, strict=True))


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _quiet_fit(df, **kw):
    return _quiet(lambda: _fit(df, **kw))


BAD_ARGS = ["counts_annotations", "seed_string", "seed_fraction", "method_unknown",
            "gold_unknown_item", "gold_unknown_class", "n_classes_mismatch", "alpha_shape",
            "anchor_unknown", "groups_given", "not_annotations"]
BAD_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(BAD_ARGS, BAD_DEFECTS))
def test_fit_refuses_bad_arguments(kind):
    # arguments that cannot apply are refused naming the argument
    def body(data):
        df, items, classes, _ = data.draw(_design(), label="design")
        try:
            ann = nc.Annotations.from_long(df)
            _quiet(lambda: nc.DawidSkene().fit(ann))
        except ValueError:
            return  # the design itself is refused: the other properties cover it
        model, kw, arg = nc.DawidSkene(), {}, ann
        names = {"counts_annotations": {"annotations"}, "seed_string": {"seed"},
                 "seed_fraction": {"seed"}, "method_unknown": {"method"},
                 "gold_unknown_item": {"gold"}, "gold_unknown_class": {"gold"},
                 "n_classes_mismatch": {"n_classes", "annotations"},
                 "alpha_shape": {"alpha"}, "anchor_unknown": {"anchor"},
                 "groups_given": {"groups"}, "not_annotations": {"annotations"}}[kind]
        if kind == "counts_annotations":
            arg = nc.Annotations.from_counts(ann.counts())
        elif kind == "seed_string":
            kw = {"seed": "abc"}
        elif kind == "seed_fraction":
            kw = {"seed": 0.5}
        elif kind == "method_unknown":
            kw = {"method": "gibbs"}
        elif kind == "gold_unknown_item":
            kw = {"gold": {"no-such-item": classes[0]}}
        elif kind == "gold_unknown_class":
            kw = {"gold": {items[0]: "no-such-class"}}
        elif kind == "n_classes_mismatch":
            model = nc.DawidSkene(n_classes=classes.size + 1)
        elif kind == "alpha_shape":
            model = nc.DawidSkene(alpha=np.ones(classes.size + 1))
        elif kind == "anchor_unknown":
            kw = {"anchor": "no-such-annotator"}
        elif kind == "groups_given":
            kw = {"groups": np.zeros(len(items), dtype=int)}
        elif kind == "not_annotations":
            arg = df
        check_outcome(lambda: model.fit(arg, **kw), names, NO_REFERENCE, value=_params)

    run_property(body, 5, key=kind, shrink=kind not in BAD_DEFECTS)


INVALID_LEVELS = [95, 0.0, 1.0, -0.5, float("nan"), "0.9"]


@pytest.mark.parametrize("level", [repr(v) for v in INVALID_LEVELS])
def test_conf_int_refuses_levels(level):
    # a fitted model's interval level is a fraction in (0, 1); 95 is refused naming level
    value = INVALID_LEVELS[[repr(v) for v in INVALID_LEVELS].index(level)]

    def body(data):
        df, *_ = data.draw(_design(), label="design")
        try:
            fit = _quiet_fit(df)
        except ValueError:
            return
        check_outcome(lambda: fit.conf_int(value, n_boot=5), {"level"}, NO_REFERENCE,
                      value=lambda r: r)

    run_property(body, 3, key=level)
