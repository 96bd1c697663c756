"""Properties of the data entry points: ``nc.Annotations`` constructors and the target
constructors ``nc.targets.hard / soft / voted / from_matrix`` (oracle in ``prop_support``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st
from prop_support import (
    NO_REFERENCE,
    check_outcome,
    class_names,
    one_hot,
    ratings,
    run_property,
    with_defects,
)

import noisycal as nc


def _counts(ann):
    return ann.counts()


LONG_VARIANTS = ["plain", "classes_permuted", "items_given", "rows_shuffled", "categorical",
                 "mapping", "column_names", "repeated_pair", "unused_class", "nan_label",
                 "none_item", "inf_label", "label_not_in_classes", "item_not_in_items",
                 "annotator_not_in_annotators", "missing_column", "one_class", "empty",
                 "item_without_rating", "duplicate_classes", "duplicate_items"]
LONG_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(LONG_VARIANTS, LONG_DEFECTS))
def test_annotations_from_long(kind):
    # a long table's ratings are counted per item and class in the order said (items first
    # seen, classes sorted, or as given); missing or unknown entries are refused by name
    def body(data):
        df, items, classes, counts, names, rng = data.draw(ratings(), label="ratings")
        kw, ref, table = {}, counts, df.copy()
        n = len(items)
        if kind == "classes_permuted":
            perm = rng.permutation(classes.size)
            kw["classes"] = classes[perm]
            ref = counts[:, perm]
        elif kind == "items_given":
            perm = rng.permutation(n)
            kw["items"] = items[perm]
            ref = counts[perm]
        elif kind == "rows_shuffled":
            table = table.iloc[rng.permutation(len(table))].reset_index(drop=True)
            kw = {"items": items, "classes": classes}
        elif kind == "categorical":
            perm = rng.permutation(classes.size)
            table["label"] = pd.Categorical(table["label"], categories=list(classes[perm]))
            ref = counts[:, perm]
        elif kind == "mapping":
            table = {c: table[c].to_numpy() for c in table.columns}
        elif kind == "column_names":
            table = table.rename(columns={"item": "it", "annotator": "who", "label": "y"})
            kw = {"item": "it", "annotator": "who", "label": "y"}
        elif kind == "repeated_pair":
            table = pd.concat([table, table.iloc[:1]], ignore_index=True)
            ref = counts.copy()
            ref[0, list(classes).index(table["label"].iloc[0])] += 1
        elif kind == "unused_class":
            extra = "unused" if classes.dtype == object else 999
            kw["classes"] = np.r_[classes, np.array([extra], dtype=classes.dtype)]
            ref = np.hstack([counts, np.zeros((n, 1), dtype=int)])
        elif kind in ("nan_label", "none_item"):
            col = "label" if kind == "nan_label" else "item"
            table[col] = table[col].astype(object)
            table.loc[len(table) // 2, col] = None
            ref = NO_REFERENCE
        elif kind == "inf_label":
            table["label"] = (np.arange(len(table)) % 2).astype(float)
            table.loc[len(table) // 2, "label"] = np.inf
            ref = NO_REFERENCE
        elif kind == "label_not_in_classes":
            kw["classes"] = classes[1:]
            ref = NO_REFERENCE
        elif kind == "item_not_in_items":
            if n < 2:
                return
            kw["items"] = items[1:]
            ref = NO_REFERENCE
        elif kind == "annotator_not_in_annotators":
            raters = pd.unique(table["annotator"])
            kw["annotators"] = raters[1:]
            ref = NO_REFERENCE
        elif kind == "missing_column":
            table = table.drop(columns="label")
            ref = NO_REFERENCE
        elif kind == "one_class":
            table["label"] = table["label"].iloc[0]
            ref = NO_REFERENCE
        elif kind == "empty":
            table = table.iloc[:0]
            ref = NO_REFERENCE
        elif kind == "item_without_rating":
            extra = "never-rated" if items.dtype == object else -5
            kw["items"] = np.r_[items, np.array([extra], dtype=items.dtype)]
            ref = NO_REFERENCE
        elif kind == "duplicate_classes":
            kw["classes"] = np.r_[classes, classes[:1]]
            ref = NO_REFERENCE
        elif kind == "duplicate_items":
            kw["items"] = np.r_[items, items[:1]]
            ref = NO_REFERENCE
        if ref is not NO_REFERENCE and classes.size < 2 and "classes" not in kw:
            ref = NO_REFERENCE  # a single observed class: fewer than 2 classes
        check_outcome(lambda: nc.Annotations.from_long(table, **kw),
                      nc.Annotations.from_long, ref, value=_counts,
                      equal=lambda g, w: np.array_equal(g, w))

    run_property(body, 12, key=kind, shrink=kind not in LONG_DEFECTS)


COUNT_VARIANTS = ["plain", "classes_items", "int32", "float_integral", "list", "negative",
                  "nan", "inf", "fraction", "bool", "zero_row", "one_dim", "three_dim",
                  "one_column", "classes_length", "duplicate_items", "empty", "dataframe"]
COUNT_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(COUNT_VARIANTS, COUNT_DEFECTS))
def test_annotations_from_counts(kind):
    # a count matrix round-trips; anything but non-negative integers with positive row
    # totals is refused by name
    def body(data):
        n = data.draw(st.integers(1, 20), label="n")
        k = data.draw(st.integers(2, 5), label="k")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        c = rng.integers(0, 4, (n, k))
        c[np.arange(n), rng.integers(0, k, n)] += 1
        i, j = int(rng.integers(0, n)), int(rng.integers(0, k))
        arg, kw, ref = c, {}, c
        if kind == "plain":
            pass
        elif kind == "classes_items":
            kw = {"classes": list(class_names(data.draw, k)),
                  "items": [f"x{v}" for v in rng.permutation(n)]}
        elif kind == "int32":
            arg = c.astype(np.int32)
        elif kind == "float_integral":
            arg = c.astype(float)  # integral floats: read as integers or refused
        elif kind == "list":
            arg = c.tolist()
        elif kind == "dataframe":
            arg = pd.DataFrame(c)
        else:
            ref = NO_REFERENCE
            f = c.astype(float)
            if kind == "negative":
                arg = c.copy()
                arg[i, j] = -1
            elif kind in ("nan", "inf", "fraction"):
                f[i, j] = {"nan": np.nan, "inf": np.inf, "fraction": 0.5}[kind]
                arg = f
            elif kind == "bool":
                arg = c > 0
            elif kind == "zero_row":
                arg = c.copy()
                arg[i] = 0
            elif kind == "one_dim":
                arg = c[:, 0]
            elif kind == "three_dim":
                arg = c[:, :, None]
            elif kind == "one_column":
                arg = c[:, :1] + 1
            elif kind == "classes_length":
                arg, kw = c, {"classes": list(range(k + 1))}
            elif kind == "duplicate_items":
                if n < 2:
                    return
                arg, kw = c, {"items": [0] * n}
            elif kind == "empty":
                arg = c[:0]
        check_outcome(lambda: nc.Annotations.from_counts(arg, **kw),
                      nc.Annotations.from_counts, ref, value=_counts,
                      equal=lambda g, w: np.array_equal(g, w))

    run_property(body, 10, key=kind, shrink=kind not in COUNT_DEFECTS)


# ---------------------------------------------------------------- targets

HARD_VARIANTS = ["ints", "ints_classes", "strings_classes", "categorical", "series",
                 "float_integral", "high", "negative", "nan", "fraction", "strings_no_classes",
                 "string_unknown", "two_dim", "empty", "n_classes_one", "n_classes_small",
                 "duplicate_classes", "both_n_classes_and_classes_disagree"]
HARD_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(HARD_VARIANTS, HARD_DEFECTS))
def test_hard_target(kind):
    # hard(labels) is the one-hot matrix of the labels in the said class order; labels
    # outside the classes, NaN, fractions, wrong shapes are refused by name
    def body(data):
        n = data.draw(st.integers(1, 30), label="n")
        k = data.draw(st.integers(2, 6), label="k")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        y = rng.integers(0, k, n)
        names = class_names(data.draw, k)
        i = int(rng.integers(0, n))
        ref = one_hot(y, k)
        kw: dict = {"n_classes": k}
        labels = y
        if kind == "ints":
            pass
        elif kind == "ints_classes":
            cls = np.asarray(data.draw(st.permutations(range(k))))
            labels, kw = cls[y], {"classes": cls}
        elif kind == "strings_classes":
            labels, kw = names[y], {"classes": names}
        elif kind == "categorical":
            labels, kw = pd.Categorical(names[y], categories=list(names)), {}
        elif kind == "series":
            ids = [f"s{v}" for v in rng.permutation(n)]
            labels = pd.Series(y, index=ids)
        elif kind == "float_integral":
            labels = y.astype(float)
        else:
            ref = NO_REFERENCE
            if kind in ("high", "negative"):
                labels = y.copy()
                labels[i] = k if kind == "high" else -1
            elif kind in ("nan", "fraction"):
                labels = y.astype(float)
                labels[i] = np.nan if kind == "nan" else 0.5
            elif kind == "strings_no_classes":
                labels, kw = names[y], {}
            elif kind == "string_unknown":
                labels = names[y].copy()
                labels[i] = "unknown"
                kw = {"classes": names}
            elif kind == "two_dim":
                labels = one_hot(y, k)
            elif kind == "empty":
                labels = y[:0]
            elif kind == "n_classes_one":
                kw = {"n_classes": 1}
            elif kind == "n_classes_small":
                labels = y.copy()
                labels[i] = k - 1
                kw = {"n_classes": k - 1}
            elif kind == "duplicate_classes":
                labels, kw = names[y], {"classes": np.r_[names, names[:1]]}
            elif kind == "both_n_classes_and_classes_disagree":
                labels, kw = names[y], {"classes": names, "n_classes": k + 1}
        out = check_outcome(lambda: nc.targets.hard(labels, **kw), nc.targets.hard, ref,
                            value=lambda t: t.values)
        if out.kind == "value" and kind == "series":
            assert list(out.result.items) == list(labels.index)
        if out.kind == "value" and "classes" in kw:
            assert list(out.result.classes) == list(kw["classes"])

    run_property(body, 10, key=kind, shrink=kind not in HARD_DEFECTS)


SOFT_VARIANTS = ["counts", "annotations", "distribution", "counts_frame", "counts_float",
                 "negative", "nan", "inf", "zero_row", "one_dim", "distribution_unnormalised",
                 "distribution_negative", "two_sources", "no_source", "empty"]
SOFT_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(SOFT_VARIANTS, SOFT_DEFECTS))
def test_soft_target(kind):
    # soft(...) is the rows of counts divided by their totals; a count or distribution
    # that is not one is refused by name (or a row without ratings gets a status)
    def body(data):
        n = data.draw(st.integers(1, 25), label="n")
        k = data.draw(st.integers(2, 5), label="k")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        c = rng.integers(0, 5, (n, k))
        c[np.arange(n), rng.integers(0, k, n)] += 1
        d = c / c.sum(axis=1, keepdims=True)
        i, j = int(rng.integers(0, n)), int(rng.integers(0, k))
        ref, kw = d, {"counts": c}
        if kind == "annotations":
            kw = {"annotations": nc.Annotations.from_counts(c)}
        elif kind == "distribution":
            kw = {"distribution": d}
        elif kind == "counts_frame":
            kw = {"counts": pd.DataFrame(c, columns=[f"c{v}" for v in range(k)])}
        elif kind == "counts_float":
            kw = {"counts": c.astype(float)}
        elif kind != "counts":
            ref = NO_REFERENCE
            f = c.astype(float)
            if kind == "negative":
                f[i, j] = -1.0
                kw = {"counts": f}
            elif kind in ("nan", "inf"):
                f[i, j] = np.nan if kind == "nan" else np.inf
                kw = {"counts": f}
            elif kind == "zero_row":
                f[i] = 0.0
                kw = {"counts": f}
            elif kind == "one_dim":
                kw = {"counts": c[:, 0]}
            elif kind == "distribution_unnormalised":
                kw = {"distribution": d * 1.1}
            elif kind == "distribution_negative":
                e = d.copy()
                e[i] = 0.0
                e[i, j], e[i, (j + 1) % k] = -0.5, 1.5
                kw = {"distribution": e}
            elif kind == "two_sources":
                kw = {"counts": c, "distribution": d}
            elif kind == "no_source":
                kw = {}
            elif kind == "empty":
                kw = {"counts": c[:0]}
        check_outcome(lambda: nc.targets.soft(**kw), nc.targets.soft, ref,
                      value=lambda t: t.values)

    run_property(body, 10, key=kind, shrink=kind not in SOFT_DEFECTS)


VOTE_VARIANTS = ["lowest", "random", "raise", "random_without_seed", "lowest_with_seed",
                 "unknown_rule", "not_annotations"]
VOTE_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(VOTE_VARIANTS, VOTE_DEFECTS))
def test_voted_target(kind):
    # voted(ann) is the one-hot majority vote: ties to the lowest class, or a seeded choice
    # among the tied classes, or refused (tie='raise') naming tie
    def body(data):
        df, items, classes, counts, names, rng = data.draw(ratings(), label="ratings")
        if classes.size < 2:
            return
        ann = nc.Annotations.from_long(df)
        top = counts == counts.max(axis=1, keepdims=True)
        tied = top.sum(axis=1) > 1
        kw: dict = {}
        ref = one_hot(np.argmax(counts, axis=1), classes.size)
        equal = None
        arg = ann
        if kind == "random":
            kw = {"tie": "random", "seed": 1}
            ref = top.astype(float)

            def equal(got, want):  # one-hot at one of the top classes
                got = np.asarray(got)
                return bool(np.all(got.sum(axis=1) == 1) and np.all(got <= want))
        elif kind == "raise":
            kw = {"tie": "raise"}
            if tied.any():
                ref = NO_REFERENCE
        elif kind == "random_without_seed":
            kw, ref = {"tie": "random"}, NO_REFERENCE
        elif kind == "lowest_with_seed":
            kw, ref = {"tie": "lowest", "seed": 1}, NO_REFERENCE
        elif kind == "unknown_rule":
            kw, ref = {"tie": "highest"}, NO_REFERENCE
        elif kind == "not_annotations":
            arg, ref = counts, NO_REFERENCE
        out = check_outcome(lambda: nc.targets.voted(arg, **kw), nc.targets.voted, ref,
                            value=lambda t: t.values, equal=equal)
        if out.kind == "value":
            assert out.result.details["n_ties"] == int(tied.sum())

    run_property(body, 10, key=kind, shrink=kind not in VOTE_DEFECTS)


MATRIX_VARIANTS = ["matrix", "frame_permuted", "corrected_outside", "nan", "inf",
                   "outside_unit", "unknown_kind", "one_dim", "frame_wrong_columns",
                   "classes_length"]
MATRIX_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(MATRIX_VARIANTS, MATRIX_DEFECTS))
def test_target_from_matrix(kind):
    # from_matrix wraps a matrix (a DataFrame's columns matched to classes= by label);
    # NaN, inf and unknown kinds are refused by name; entries outside [0, 1] are a
    # 'corrected' target's right only (elsewhere: refused, or refused by the metrics)
    def body(data):
        n = data.draw(st.integers(1, 25), label="n")
        k = data.draw(st.integers(2, 5), label="k")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        v = rng.dirichlet(np.ones(k), size=n)
        names = class_names(data.draw, k)
        i, j = int(rng.integers(0, n)), int(rng.integers(0, k))
        arg, kw, ref = v, {}, v
        if kind == "matrix":
            pass
        elif kind == "frame_permuted":
            perm = rng.permutation(k)
            arg = pd.DataFrame(v[:, perm], columns=list(names[perm]))
            kw = {"classes": names}
        elif kind == "corrected_outside":
            arg = v.copy()
            arg[i, j] += 0.7
            arg[i, (j + 1) % k] -= 0.7
            kw, ref = {"kind": "corrected"}, arg
        else:
            ref = NO_REFERENCE
            arg = v.copy()
            if kind in ("nan", "inf"):
                arg[i, j] = np.nan if kind == "nan" else np.inf
            elif kind == "outside_unit":
                arg[i, j] += 0.7
                arg[i, (j + 1) % k] -= 0.7
                ref = arg  # a 'matrix' may hold any finite number; the metrics judge it
            elif kind == "unknown_kind":
                kw = {"kind": "not-a-kind"}
            elif kind == "one_dim":
                arg = v[:, 0]
            elif kind == "frame_wrong_columns":
                cols = list(names)
                cols[0] = "other"
                arg, kw = pd.DataFrame(v, columns=cols), {"classes": names}
            elif kind == "classes_length":
                kw = {"classes": list(names) + ["extra"]}
        check_outcome(lambda: nc.targets.from_matrix(arg, **kw), nc.targets.from_matrix,
                      ref, value=lambda t: t.values)

    run_property(body, 10, key=kind, shrink=kind not in MATRIX_DEFECTS)


WIDE_VARIANTS = ["nan_missing", "sentinel_missing", "frame", "strings_none", "classes_given",
                 "row_unrated", "inf", "one_dim", "sentinel_is_class", "label_not_in_classes"]
WIDE_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("kind", with_defects(WIDE_VARIANTS, WIDE_DEFECTS))
def test_annotations_from_wide(kind):
    # a wide (items x annotators) matrix with missing entries is counted like the long
    # table it encodes; unrated rows, inf and unknown labels are refused by name
    def body(data):
        n = data.draw(st.integers(1, 12), label="n")
        j = data.draw(st.integers(1, 4), label="j")
        k = data.draw(st.integers(2, 4), label="k")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        lab = rng.integers(0, k, (n, j))
        lab[0, 0], lab[-1, -1] = 0, k - 1  # at least two classes observed
        rated = rng.random((n, j)) < 0.7
        rated[np.arange(n), rng.integers(0, j, n)] = True
        rated[0, 0] = rated[-1, -1] = True
        counts = np.stack([np.bincount(lab[i][rated[i]], minlength=k) for i in range(n)])
        used = np.unique(lab[rated])  # the default classes: the observed labels, sorted
        m = np.where(rated, lab, np.nan)
        arg, kw, ref = m, {}, counts[:, used]
        i = int(rng.integers(0, n))
        if kind == "nan_missing":
            pass
        elif kind == "sentinel_missing":
            arg, kw = np.where(rated, lab, -1), {"missing": -1}
        elif kind == "frame":
            arg = pd.DataFrame(m, index=[f"r{v}" for v in range(n)],
                               columns=[f"a{v}" for v in range(j)])
        elif kind == "strings_none":
            names = np.array(class_names(data.draw, k), dtype=object)
            arg = np.where(rated, names[lab], None)
            ref = counts[:, sorted(used, key=lambda c: str(names[c]))]
        elif kind == "classes_given":
            perm = rng.permutation(k)
            kw = {"classes": perm}
            ref = counts[:, perm]
        else:
            ref = NO_REFERENCE
            if kind == "row_unrated":
                arg = m.copy()
                arg[i] = np.nan
            elif kind == "inf":
                arg = m.copy()
                arg[0, 0] = np.inf
            elif kind == "one_dim":
                arg = m[:, 0]
            elif kind == "sentinel_is_class":
                arg, kw = np.where(rated, lab, 0), {"missing": 0, "classes": np.arange(k)}
            elif kind == "label_not_in_classes":
                kw = {"classes": np.arange(k - 1)}
        check_outcome(lambda: nc.Annotations.from_wide(arg, **kw), nc.Annotations.from_wide,
                      ref, value=_counts, equal=lambda g, w: np.array_equal(g, w))

    run_property(body, 10, key=kind, shrink=kind not in WIDE_DEFECTS)
