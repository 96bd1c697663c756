"""Tests for noisycal.annotations.core.Annotations: construction, counts, votes, agreement,
errors."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from noisycal.annotations.core import Annotations, EngineArrays
from noisycal.exceptions import NumericalWarning

# ----------------------------------------------------------------------------------------
# the small hand-computed case
#
# 4 items (ids 10, 20, 30, 40), 3 annotators ("a", "b", "c"), classes {0, 1, 2}.
# Item 20 misses annotator c; annotator c rates item 30 twice (labels 2 and 1).
#
#   item  a  b  c        counts   n_i  majority  tied
#   10    0  0  1        [2,1,0]   3     0        no
#   20    1  2  -        [0,1,1]   2     1        yes (1, 2)
#   30    2  2  2,1      [0,1,3]   4     2        no
#   40    0  1  2        [1,1,1]   3     0        yes (0, 1, 2)
# ----------------------------------------------------------------------------------------

SMALL = pd.DataFrame(
    {
        "item": [10, 10, 10, 20, 20, 30, 30, 30, 30, 40, 40, 40],
        "annotator": ["a", "b", "c", "a", "b", "a", "b", "c", "c", "a", "b", "c"],
        "label": [0, 0, 1, 1, 2, 2, 2, 2, 1, 0, 1, 2],
    }
)
SMALL_COUNTS = np.array([[2, 1, 0], [0, 1, 1], [0, 1, 3], [1, 1, 1]])


@pytest.fixture
def small() -> Annotations:
    return Annotations.from_long(SMALL)


def test_small_basic_shapes(small):
    assert small.n_items == 4 and len(small) == 4
    assert small.n_annotators == 3
    assert small.n_classes == 3
    assert small.n_ratings == 12
    assert_array_equal(small.items, [10, 20, 30, 40])
    assert_array_equal(small.annotators, ["a", "b", "c"])
    assert_array_equal(small.classes, [0, 1, 2])
    assert_array_equal(small.item_index, [0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3])
    assert_array_equal(small.annotator_index, [0, 1, 2, 0, 1, 0, 1, 2, 2, 0, 1, 2])
    assert_array_equal(small.label_index, SMALL["label"].to_numpy())
    assert small.item_index.dtype == np.int64
    assert repr(small) == "Annotations(n_items=4, n_annotators=3, n_classes=3, n_ratings=12)"


def test_small_counts_and_soft_labels(small):
    c = small.counts()
    assert c.dtype == np.int64
    assert_array_equal(c, SMALL_COUNTS)
    assert_array_equal(small.n_ratings_per_item(), [3, 2, 4, 3])
    expected = np.array(
        [[2 / 3, 1 / 3, 0], [0, 1 / 2, 1 / 2], [0, 1 / 4, 3 / 4], [1 / 3, 1 / 3, 1 / 3]]
    )
    assert_allclose(small.soft_labels(), expected, rtol=1e-15)
    assert small.soft_labels().dtype == np.float64


def test_small_majority_vote_and_ties(small):
    assert_array_equal(small.ties(), [False, True, False, True])
    # lowest: argmax convention -> class 1 for item 20 (1 vs 2), class 0 for item 40
    mv = small.majority_vote()
    assert mv.dtype == np.int64
    assert_array_equal(mv, [0, 1, 2, 0])
    assert_array_equal(small.majority_vote(tie="lowest"), [0, 1, 2, 0])
    with pytest.raises(ValueError, match=r"tie='raise'.*2 item\(s\).*\[20, 40\]"):
        small.majority_vote(tie="raise")
    rnd = small.majority_vote(tie="random", seed=0)
    assert rnd[0] == 0 and rnd[2] == 2
    assert rnd[1] in (1, 2) and rnd[3] in (0, 1, 2)


def test_small_agreement_and_kappa(small):
    # P_i = sum_k n_ik (n_ik - 1) / (n_i (n_i - 1)):
    #   item 10: (2*1 + 1*0 + 0) / (3*2) = 2/6 = 1/3
    #   item 20: (0 + 1*0 + 1*0) / (2*1) = 0
    #   item 30: (0 + 1*0 + 3*2) / (4*3) = 6/12 = 1/2
    #   item 40: 0 / 6 = 0
    # P_bar = (1/3 + 0 + 1/2 + 0) / 4 = 5/24
    assert_allclose(small.percent_agreement(), 5 / 24, rtol=1e-14)
    # class totals [3, 4, 5] of 12 -> p = [1/4, 1/3, 5/12]
    # P_e = 1/16 + 1/9 + 25/144 = (9 + 16 + 25) / 144 = 25/72
    # kappa = (5/24 - 25/72) / (1 - 25/72) = (-10/72) / (47/72) = -10/47
    assert_allclose(small.fleiss_kappa(), -10 / 47, rtol=1e-14)


def test_small_annotator_summary(small):
    s = small.annotator_summary()
    assert list(s.index) == ["a", "b", "c"]
    assert s.index.name == "annotator"
    assert list(s.columns) == [
        "n_ratings", "n_items", "agreement_with_majority", "share_0", "share_1", "share_2",
    ]
    assert_array_equal(s["n_ratings"], [4, 4, 4])
    # c rates item 30 twice: 3 distinct items
    assert_array_equal(s["n_items"], [4, 4, 3])
    # majority (lowest ties, own rating included) = [0, 1, 2, 0] for items 10..40
    #   a: 0,1,2,0 -> 4/4 agree;  b: 0,2,2,1 -> items 10, 30 agree -> 2/4
    #   c: 1 (10), 2 and 1 (30), 2 (40) -> only the 2 on item 30 agrees -> 1/4
    assert_allclose(s["agreement_with_majority"], [1.0, 0.5, 0.25], rtol=1e-15)
    #   a labels 0,1,2,0; b labels 0,2,2,1; c labels 1,2,1,2
    assert_allclose(s["share_0"], [0.5, 0.25, 0.0], atol=1e-15)
    assert_allclose(s["share_1"], [0.25, 0.25, 0.5], atol=1e-15)
    assert_allclose(s["share_2"], [0.25, 0.5, 0.5], atol=1e-15)


def test_annotator_summary_string_classes_and_idle_annotator():
    m = np.array([["cat", "dog", None], ["dog", "dog", None]], dtype=object)
    ann = Annotations.from_wide(m, annotators=["x", "y", "z"])
    s = ann.annotator_summary()
    assert list(s.columns[-2:]) == ["share_cat", "share_dog"]
    assert_array_equal(s.loc["z", ["n_ratings", "n_items"]], [0, 0])
    assert np.isnan(s.loc["z", "agreement_with_majority"])
    # majority: item 0 tie cat/dog -> cat (lowest), item 1 dog
    assert_allclose(s["agreement_with_majority"].iloc[:2], [1.0, 0.5], rtol=1e-15)


# ----------------------------------------------------------------------------------------
# Fleiss' kappa references
# ----------------------------------------------------------------------------------------

# Fleiss (1971), as reproduced in Wikipedia's "Fleiss' kappa" article: 10 subjects,
# 14 raters each, 5 categories; kappa = 0.210 (statsmodels: 0.20993).
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def test_fleiss_kappa_textbook_example():
    ann = Annotations.from_counts(FLEISS_1971)
    assert ann.n_items == 10 and ann.n_ratings == 140 and ann.n_annotators == 14
    assert round(ann.fleiss_kappa(), 4) == 0.2099
    assert_allclose(ann.fleiss_kappa(), 0.20993, atol=5e-6)
    # Wikipedia: P_bar = 0.378 (3.780 / 10 subjects... printed to 3 decimals)
    assert round(ann.percent_agreement(), 3) == 0.378


def test_fleiss_kappa_matches_statsmodels_balanced():
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(12345)
    probs = rng.dirichlet(np.ones(4), size=60)
    counts = np.array([rng.multinomial(6, p) for p in probs])
    ann = Annotations.from_counts(counts)
    expected = inter_rater.fleiss_kappa(counts, method="fleiss")
    assert_allclose(ann.fleiss_kappa(), expected, rtol=1e-12)
    assert_allclose(
        Annotations.from_counts(FLEISS_1971).fleiss_kappa(),
        inter_rater.fleiss_kappa(FLEISS_1971, method="fleiss"),
        rtol=1e-12,
    )


def test_kappa_excludes_single_rating_items_and_nan_when_one_class():
    # item 2 has one rating: excluded from both P_bar and p_k
    ann = Annotations.from_counts([[2, 0], [1, 1], [0, 1]])
    # P_i: item0 2*1/(2*1) = 1, item1 0 -> P_bar = 1/2; p = [3/4, 1/4], P_e = 10/16
    # kappa = (1/2 - 5/8) / (3/8) = -1/3
    assert_allclose(ann.percent_agreement(), 0.5, rtol=1e-15)
    assert_allclose(ann.fleiss_kappa(), -1 / 3, rtol=1e-14)
    one_class = Annotations.from_counts([[3, 0], [2, 0]])
    assert one_class.percent_agreement() == 1.0
    with pytest.warns(NumericalWarning, match="fleiss_kappa is undefined") as rec:
        assert np.isnan(one_class.fleiss_kappa())
    assert rec[0].filename == __file__  # the warning points at the caller


def test_agreement_needs_two_ratings():
    ann = Annotations.from_counts([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="at least 2 ratings"):
        ann.percent_agreement()
    with pytest.raises(ValueError, match="at least 2 ratings"):
        ann.fleiss_kappa()


# ----------------------------------------------------------------------------------------
# constructors agree
# ----------------------------------------------------------------------------------------

NO_REPEAT = SMALL.drop(index=8).reset_index(drop=True)  # drop c's second rating of item 30
WIDE = np.array([[0, 0, 1], [1, 2, -1], [2, 2, 2], [0, 1, 2]])


def test_constructors_agree():
    long = Annotations.from_long(NO_REPEAT)
    wide = Annotations.from_wide(WIDE, missing=-1, items=[10, 20, 30, 40],
                                 annotators=["a", "b", "c"])
    arrays = Annotations.from_arrays(NO_REPEAT["item"], NO_REPEAT["annotator"],
                                     NO_REPEAT["label"])
    expected_counts = [[2, 1, 0], [0, 1, 1], [0, 0, 3], [1, 1, 1]]
    for ann in (long, wide, arrays):
        assert_array_equal(ann.counts(), expected_counts)
        assert_array_equal(ann.items, [10, 20, 30, 40])
        assert_array_equal(ann.annotators, ["a", "b", "c"])
        assert_array_equal(ann.to_wide(), WIDE)
        pd.testing.assert_frame_equal(ann.to_long(), NO_REPEAT, check_dtype=False)
    counts = Annotations.from_counts(np.array(expected_counts))
    assert_array_equal(counts.counts(), expected_counts)
    assert_allclose(counts.soft_labels(), long.soft_labels(), rtol=1e-15)
    assert counts.fleiss_kappa() == pytest.approx(long.fleiss_kappa(), rel=1e-14)


def test_from_long_mapping_and_round_trip(small):
    again = Annotations.from_long(small.to_long())
    for name in ("item_index", "annotator_index", "label_index", "items", "annotators",
                 "classes"):
        assert_array_equal(getattr(again, name), getattr(small, name))
    mapping = Annotations.from_long(
        {"i": [1, 1, 2], "r": ["u", "v", "u"], "y": ["no", "yes", "no"]},
        item="i", annotator="r", label="y",
    )
    assert_array_equal(mapping.counts(), [[1, 1], [1, 0]])
    assert_array_equal(mapping.classes, ["no", "yes"])


def test_from_wide_nan_float_and_dataframe():
    m = np.array([[0.0, np.nan, 1.0], [np.nan, 1.0, 1.0]])
    ann = Annotations.from_wide(m)
    assert ann.classes.dtype.kind == "i"
    assert_array_equal(ann.classes, [0, 1])
    assert_array_equal(ann.counts(), [[1, 1], [0, 2]])
    assert_array_equal(ann.to_wide(missing=-9), [[0, -9, 1], [-9, 1, 1]])
    df = pd.DataFrame(m, index=["p", "q"], columns=["x", "y", "z"])
    from_df = Annotations.from_wide(df)
    assert_array_equal(from_df.items, ["p", "q"])
    assert_array_equal(from_df.annotators, ["x", "y", "z"])
    assert_array_equal(from_df.counts(), [[1, 1], [0, 2]])


def test_from_wide_keeps_unrated_annotator_and_given_order():
    m = np.array([[1, -1, 0], [0, -1, 0]])
    ann = Annotations.from_wide(m, missing=-1, items=["r2", "r1"], annotators=[2, 0, 1])
    assert ann.n_annotators == 3
    # rows and columns keep the given order (never sorted); annotator 0 has no rating
    assert_array_equal(ann.items, ["r2", "r1"])
    assert_array_equal(ann.annotators, [2, 0, 1])
    assert_array_equal(ann.to_wide(), [[1, -1, 0], [0, -1, 0]])
    assert_array_equal(ann.counts(), [[1, 1], [2, 0]])


def test_from_counts_anonymous_annotators_and_given_classes():
    ann = Annotations.from_counts([[2, 1], [0, 3]])
    assert ann.n_annotators == 3
    # annotator j = j-th rating of the item, ratings ordered by class
    assert_array_equal(ann.annotator_index, [0, 1, 2, 0, 1, 2])
    assert_array_equal(ann.label_index, [0, 0, 1, 1, 1, 1])
    # classes label the columns in the given order; the columns are not reordered
    flipped = Annotations.from_counts([[1, 2], [3, 0]], classes=["z", "a"])
    assert_array_equal(flipped.classes, ["z", "a"])
    assert_array_equal(flipped.counts(), [[1, 2], [3, 0]])


# ----------------------------------------------------------------------------------------
# classes
# ----------------------------------------------------------------------------------------


def test_classes_sorted_and_string_labels():
    ann = Annotations.from_arrays([0, 0, 1], ["u", "v", "u"], ["dog", "cat", "dog"])
    assert_array_equal(ann.classes, ["cat", "dog"])
    assert_array_equal(ann.counts(), [[1, 1], [0, 1]])
    assert_array_equal(ann.majority_vote(), [0, 1])
    assert_array_equal(ann.to_long()["label"], ["dog", "cat", "dog"])


def test_classes_with_unused_class_kept_in_given_order():
    ann = Annotations.from_arrays([0, 0, 1], [0, 1, 0], ["dog", "cat", "dog"],
                                  classes=["dog", "cat", "bird"])
    assert_array_equal(ann.classes, ["dog", "cat", "bird"])
    assert ann.n_classes == 3
    assert_array_equal(ann.counts(), [[1, 1, 0], [1, 0, 0]])
    ints = Annotations.from_wide([[0, 1], [1, 1]], classes=[3, 0, 1, 2])
    assert_array_equal(ints.classes, [3, 0, 1, 2])
    assert_array_equal(ints.counts(), [[0, 1, 1, 0], [0, 0, 2, 0]])


def test_non_integer_float_labels_need_classes():
    with pytest.raises(ValueError, match="matrix.*non-integer.*classes="):
        Annotations.from_wide([[0.5, 1.5], [0.5, 0.5]])
    ann = Annotations.from_wide([[0.5, 1.5], [0.5, 0.5]], classes=[1.5, 0.5])
    assert_array_equal(ann.classes, [1.5, 0.5])
    assert_array_equal(ann.counts(), [[1, 1], [0, 2]])


# ----------------------------------------------------------------------------------------
# random tie-breaking
# ----------------------------------------------------------------------------------------


def test_random_ties_reproducible_and_only_on_tied_items(small):
    import jax

    lowest = small.majority_vote()
    tied = small.ties()
    draws = np.array([small.majority_vote(tie="random", seed=s) for s in range(40)])
    assert_array_equal(draws, [small.majority_vote(tie="random", seed=s) for s in range(40)])
    assert_array_equal(small.majority_vote(tie="random", seed=jax.random.key(3)), draws[3])
    # untied items never change
    assert np.all(draws[:, ~tied] == lowest[~tied])
    # tied items take every tied class across seeds, and only those
    assert set(draws[:, 1]) == {1, 2}
    assert set(draws[:, 3]) == {0, 1, 2}


def test_random_ties_are_uniform():
    # 4000 items tied 2-2 between classes 0 and 2 (class 1 unused): P(class 2) = 1/2
    ann = Annotations.from_counts(np.tile([2, 0, 2], (4000, 1)))
    votes = ann.majority_vote(tie="random", seed=7)
    assert set(np.unique(votes)) == {0, 2}
    # binomial sd = sqrt(4000 / 4) ~ 32; 5 sd margin
    assert abs(np.sum(votes == 2) - 2000) < 160


# ----------------------------------------------------------------------------------------
# other methods and immutability
# ----------------------------------------------------------------------------------------


def test_engine_arrays(small):
    ea = small.engine_arrays()
    assert isinstance(ea, EngineArrays)
    for arr in (ea.item, ea.annotator, ea.label):
        assert arr.dtype == np.int32
    assert_array_equal(ea.item, small.item_index)
    assert (ea.n_items, ea.n_annotators, ea.n_classes) == (4, 3, 3)


def test_subset(small):
    sub = small.subset([3, 0])
    assert_array_equal(sub.items, [10, 40])
    assert_array_equal(sub.counts(), SMALL_COUNTS[[0, 3]])
    assert sub.n_annotators == 3 and sub.n_classes == 3
    by_mask = small.subset(np.array([False, True, True, False]))
    assert_array_equal(by_mask.counts(), SMALL_COUNTS[[1, 2]])
    assert by_mask.n_ratings == 6
    with pytest.raises(ValueError, match="items"):
        small.subset([0, 0])
    with pytest.raises(ValueError, match="items"):
        small.subset([4])
    with pytest.raises(ValueError, match="items"):
        small.subset(np.zeros(4, dtype=bool))


def test_immutable_and_picklable(small):
    with pytest.raises(AttributeError):
        small.n_items = 3
    with pytest.raises(AttributeError):
        small._items = None
    for arr in (small.item_index, small.annotator_index, small.label_index, small.items,
                small.annotators, small.classes):
        assert not arr.flags.writeable
    with pytest.raises(ValueError):
        small.item_index[0] = 1
    clone = pickle.loads(pickle.dumps(small))
    assert_array_equal(clone.counts(), small.counts())
    assert not clone.label_index.flags.writeable


def test_to_wide_repeated_ratings_raises(small):
    with pytest.raises(ValueError, match="to_wide cannot represent repeated ratings"):
        small.to_wide()
    with pytest.raises(ValueError, match="missing"):
        Annotations.from_wide(WIDE, missing=-1).to_wide(missing=1)


def test_scale_200k_ratings():
    rng = np.random.default_rng(0)
    n_ratings, n_items, n_ann, K = 200_000, 20_000, 50, 10
    item = np.concatenate([np.arange(n_items), rng.integers(0, n_items, n_ratings - n_items)])
    annotator = rng.integers(0, n_ann, n_ratings)
    label = rng.integers(0, K, n_ratings)
    ann = Annotations.from_arrays(item, annotator, label)
    c = ann.counts()
    expected = np.zeros((n_items, K), dtype=np.int64)
    np.add.at(expected, (item, label), 1)
    assert_array_equal(c, expected)
    assert c.sum() == n_ratings
    assert ann.n_ratings_per_item().sum() == n_ratings
    assert ann.annotator_summary()["n_ratings"].sum() == n_ratings
    assert ann.majority_vote(tie="random", seed=1).shape == (n_items,)
    # independent uniform labels: kappa 0; its sd with 20,000 items of ~10 ratings is
    # about 0.001, so this absolute band (not a relative one: the truth is 0) is 50 sd
    assert -0.05 < ann.fleiss_kappa() < 0.05
    long = Annotations.from_long(ann.to_long())
    assert_array_equal(long.counts(), c)


# ----------------------------------------------------------------------------------------
# bad inputs: ValueError naming the argument
# ----------------------------------------------------------------------------------------


def test_missing_column():
    with pytest.raises(ValueError, match=r"df has no column 'rating'.*available.*'label'"):
        Annotations.from_long(SMALL, label="rating")


@pytest.mark.parametrize("column", ["item", "annotator", "label"])
def test_missing_value_in_long_table(column):
    df = SMALL.astype(object)
    df.loc[4, column] = None if column != "label" else np.nan
    with pytest.raises(ValueError, match=rf"{column}.*missing value.*drop those rows"):
        Annotations.from_long(df)


def test_nan_in_from_arrays():
    with pytest.raises(ValueError, match="label.*missing"):
        Annotations.from_arrays([0, 1], [0, 0], [1.0, np.nan])


def test_unknown_label_with_classes():
    with pytest.raises(ValueError, match=r"label.*'fish'.*not in classes"):
        Annotations.from_arrays([0, 1, 1], [0, 0, 1], ["cat", "fish", "dog"],
                                classes=["cat", "dog"])
    with pytest.raises(ValueError, match=r"matrix.*label 5.*not in classes"):
        Annotations.from_wide([[0, 5], [1, 1]], classes=[0, 1])


def test_item_with_no_rating_in_wide():
    m = np.array([[0, 1], [np.nan, np.nan], [1, 1], [-1, -1]])
    with pytest.raises(ValueError, match=r"matrix.*row\(s\) \[1, 3\] have no rating"):
        Annotations.from_wide(m, missing=-1)


def test_wrong_ndim():
    with pytest.raises(ValueError, match="matrix must be 2-dimensional"):
        Annotations.from_wide([0, 1, 1])
    with pytest.raises(ValueError, match="counts must have 2 dimensions"):
        Annotations.from_counts([1, 2])
    with pytest.raises(ValueError, match="item must be one-dimensional"):
        Annotations.from_arrays([[0, 1]], [0, 1], [0, 1])


def test_fewer_than_two_classes():
    with pytest.raises(ValueError, match="classes: at least 2 classes"):
        Annotations.from_arrays([0, 1], [0, 0], ["a", "a"])
    with pytest.raises(ValueError, match="classes: at least 2 classes"):
        Annotations.from_arrays([0, 1], [0, 0], ["a", "a"], classes=["a"])
    with pytest.raises(ValueError, match="classes: at least 2 classes"):
        Annotations.from_counts([[3], [2]])
    with pytest.raises(ValueError, match="classes must not contain duplicates"):
        Annotations.from_arrays([0, 1], [0, 0], ["a", "b"], classes=["a", "b", "a"])


@pytest.mark.parametrize(
    ("counts", "match"),
    [
        ([[1, -1], [2, 0]], "counts must be non-negative"),
        ([[1.5, 0], [2, 0]], "counts must be integers"),
        ([[1, np.nan], [2, 0]], "counts contains 1 NaN"),
        ([[1, 0], [0, 0]], r"counts: item\(s\) at row\(s\) \[1\] have no rating"),
        ([["a", "b"]], "counts must be numeric"),
    ],
)
def test_bad_counts(counts, match):
    with pytest.raises(ValueError, match=match):
        Annotations.from_counts(counts)


def test_counts_classes_length():
    with pytest.raises(ValueError, match="classes must have one label per column"):
        Annotations.from_counts([[1, 2]], classes=[0, 1, 2])


def test_bad_tie_and_missing_seed(small):
    with pytest.raises(ValueError, match=r"tie must be one of \('lowest', 'random', 'raise'\)"):
        small.majority_vote(tie="first")
    with pytest.raises(ValueError, match="seed is required with tie='random'"):
        small.majority_vote(tie="random")


def test_bad_shapes_and_ids():
    with pytest.raises(ValueError, match="same length"):
        Annotations.from_arrays([0, 1], [0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="items must have one id per row"):
        Annotations.from_wide([[0, 1], [1, 1]], items=[1, 2, 3])
    with pytest.raises(ValueError, match="annotators must not contain duplicates"):
        Annotations.from_wide([[0, 1], [1, 1]], annotators=["x", "x"])
    with pytest.raises(ValueError, match="df must be a pandas DataFrame"):
        Annotations.from_long([[0, 0, 1]])
    with pytest.raises(ValueError, match="df contains no ratings"):
        Annotations.from_long(SMALL.iloc[:0])
    with pytest.raises(ValueError, match="annotator mixes values"):
        Annotations.from_arrays([0, 1], np.array([1, "b"], dtype=object), [0, 1])


def test_low_level_constructor_validates():
    with pytest.raises(ValueError, match="label_index must lie in 0..1"):
        Annotations([0, 1], [0, 0], [0, 2], items=[0, 1], annotators=[0], classes=[0, 1])
    with pytest.raises(ValueError, match=r"item\(s\) \[1\] have no rating"):
        Annotations([0, 0], [0, 0], [0, 1], items=[0, 1], annotators=[0], classes=[0, 1])
    with pytest.raises(ValueError, match="classes must not contain duplicates"):
        Annotations([0], [0], [0], items=[0], annotators=[0], classes=[1, 1])
    # any order is allowed and kept
    ann = Annotations([0, 1], [0, 0], [0, 1], items=[5, 3], annotators=[0],
                      classes=["b", "a"])
    assert_array_equal(ann.items, [5, 3])
    assert_array_equal(ann.classes, ["b", "a"])


# ----------------------------------------------------------------------------------------
# order: classes as given, declared categories, items and annotators as given / first seen
# ----------------------------------------------------------------------------------------


def test_given_classes_keep_their_order_everywhere():
    # the example: classes=['dog', 'cat', 'bird'] must not become sorted
    ann = Annotations.from_arrays([0, 0, 1, 1], ["u", "v", "u", "v"],
                                  ["cat", "cat", "dog", "bird"],
                                  classes=["dog", "cat", "bird"])
    assert_array_equal(ann.classes, ["dog", "cat", "bird"])
    assert_array_equal(ann.label_index, [1, 1, 0, 2])
    assert_array_equal(ann.counts(), [[0, 2, 0], [1, 0, 1]])
    # tie='lowest' picks the class listed first: dog (index 0) for item 1
    assert_array_equal(ann.majority_vote(), [1, 0])
    assert list(ann.annotator_summary().columns[-3:]) == ["share_dog", "share_cat",
                                                          "share_bird"]
    # ChaosNLI order lines up with logits columns
    nli = ["entailment", "neutral", "contradiction"]
    long = Annotations.from_long({"item": [0, 0, 1], "annotator": [0, 1, 0],
                                  "label": ["neutral", "contradiction", "entailment"]},
                                 classes=nli)
    assert_array_equal(long.classes, nli)
    assert_array_equal(long.counts(), [[0, 1, 1], [1, 0, 0]])
    wide = Annotations.from_wide([["neutral", "entailment"]], classes=nli)
    assert_array_equal(wide.classes, nli)
    assert_array_equal(wide.counts(), [[1, 1, 0]])
    counts = Annotations.from_counts([[3, 1, 0]], classes=nli)
    assert_array_equal(counts.classes, nli)
    assert_array_equal(counts.counts(), [[3, 1, 0]])
    # the order survives pickling and subsetting
    assert_array_equal(pickle.loads(pickle.dumps(ann)).classes, ["dog", "cat", "bird"])
    assert_array_equal(ann.subset([1]).classes, ["dog", "cat", "bird"])


def test_sorted_unique_labels_only_when_nothing_is_given():
    ann = Annotations.from_arrays([0, 1, 2], [0, 0, 0], ["dog", "cat", "bird"])
    assert_array_equal(ann.classes, ["bird", "cat", "dog"])
    ints = Annotations.from_arrays([0, 1, 2], [0, 0, 0], [10, 2, 1])
    assert_array_equal(ints.classes, [1, 2, 10])  # numeric, not string, order


def test_labels_outside_given_classes_raise_naming_classes_and_column():
    with pytest.raises(ValueError, match=r"df\['label'\].*'bird'.*not in classes"):
        Annotations.from_long({"item": [0, 1], "annotator": [0, 0],
                               "label": ["cat", "bird"]}, classes=["dog", "cat"])
    with pytest.raises(ValueError, match=r"classes must have one label per column of counts"):
        Annotations.from_counts([[1, 2, 3]], classes=["a", "b"])


def test_categorical_label_column_keeps_declared_categories():
    cats = pd.CategoricalDtype(["low", "mid", "high"])
    df = pd.DataFrame({"item": [0, 0, 1], "annotator": ["a", "b", "a"],
                       "label": pd.Series(["high", "low", "high"], dtype=cats)})
    ann = Annotations.from_long(df)
    # declared order, and the unused category "mid" is kept
    assert_array_equal(ann.classes, ["low", "mid", "high"])
    assert_array_equal(ann.counts(), [[1, 0, 1], [0, 0, 1]])
    arrays = Annotations.from_arrays(df["item"], df["annotator"],
                                     pd.Categorical(["high", "low", "high"],
                                                    categories=["high", "mid", "low"]))
    assert_array_equal(arrays.classes, ["high", "mid", "low"])
    # classes= still wins over the categories
    given = Annotations.from_long(df, classes=["high", "low"])
    assert_array_equal(given.classes, ["high", "low"])
    # a wide DataFrame of categorical columns sharing one dtype
    wide = pd.DataFrame({"r1": pd.Series(["mid", "low"], dtype=cats),
                         "r2": pd.Series(["mid", None], dtype=cats)})
    w = Annotations.from_wide(wide)
    assert_array_equal(w.classes, ["low", "mid", "high"])
    assert_array_equal(w.counts(), [[0, 2, 0], [1, 0, 0]])
    # categorical annotator column: declared annotators kept, even without ratings
    ann2 = Annotations.from_arrays([0, 1], pd.Categorical(["y", "y"], categories=["x", "y"]),
                                   [0, 1])
    assert_array_equal(ann2.annotators, ["x", "y"])
    assert_array_equal(ann2.annotator_summary()["n_ratings"], [0, 2])


def test_item_ids_keep_first_seen_order_not_string_order():
    ids = ["0", "1", "10", "2", "100", "11"]
    ann = Annotations.from_arrays(ids, ["a"] * 6, [0, 1, 1, 0, 1, 0])
    assert_array_equal(ann.items, ids)
    assert_array_equal(ann.item_index, np.arange(6))
    assert_array_equal(ann.majority_vote(), [0, 1, 1, 0, 1, 0])
    # first seen, with repeats interleaved
    rep = Annotations.from_long({"item": ["10", "2", "10", "1"], "annotator": [0, 0, 1, 0],
                                 "label": [1, 0, 1, 1]})
    assert_array_equal(rep.items, ["10", "2", "1"])
    assert_array_equal(rep.counts(), [[0, 2], [1, 0], [0, 1]])
    # integer ids: first seen, not numeric order either
    assert_array_equal(Annotations.from_arrays([5, 3, 9], [0, 0, 0], [0, 1, 1]).items,
                       [5, 3, 9])
    # given order (items=) wins over first appearance
    given = Annotations.from_arrays(["2", "10", "1"], [0, 0, 0], [0, 1, 1],
                                    items=["1", "2", "10"])
    assert_array_equal(given.items, ["1", "2", "10"])
    assert_array_equal(given.majority_vote(), [1, 0, 1])
    # wide: row order (the DataFrame index) is kept
    df = pd.DataFrame([[0, 1], [1, 1], [0, 0]], index=["0", "10", "2"], columns=["b", "a"])
    w = Annotations.from_wide(df)
    assert_array_equal(w.items, ["0", "10", "2"])
    assert_array_equal(w.annotators, ["b", "a"])
    assert_array_equal(w.to_wide(), [[0, 1], [1, 1], [0, 0]])
    # a round trip through the long table keeps the order
    assert_array_equal(Annotations.from_long(w.to_long()).items, ["0", "10", "2"])


def test_annotators_first_seen_or_given():
    ann = Annotations.from_arrays([0, 0, 1], ["zed", "amy", "bob"], [0, 1, 1])
    assert_array_equal(ann.annotators, ["zed", "amy", "bob"])
    assert list(ann.annotator_summary().index) == ["zed", "amy", "bob"]
    given = Annotations.from_arrays([0, 0, 1], ["zed", "amy", "bob"], [0, 1, 1],
                                    annotators=["amy", "bob", "zed", "idle"])
    assert_array_equal(given.annotators, ["amy", "bob", "zed", "idle"])
    assert_array_equal(given.annotator_index, [2, 0, 1])
    assert given.annotator_summary().loc["idle", "n_ratings"] == 0
    with pytest.raises(ValueError, match=r"annotator contains id 'bob'.*not in annotators"):
        Annotations.from_arrays([0, 1], ["amy", "bob"], [0, 1], annotators=["amy"])
    with pytest.raises(ValueError, match=r"item contains id 7.*not in items"):
        Annotations.from_arrays([0, 7], ["amy", "amy"], [0, 1], items=[0, 1])
    with pytest.raises(ValueError, match=r"item\(s\) \[1\] have no rating"):
        Annotations.from_arrays([0, 0], ["amy", "bob"], [0, 1], items=[0, 1])


def test_annotators_known_property():
    assert Annotations.from_long(SMALL).annotators_known is True
    assert Annotations.from_wide(WIDE, missing=-1).annotators_known is True
    counts = Annotations.from_counts(SMALL_COUNTS)
    assert counts.annotators_known is False
    # kept by subset and pickling; the low-level constructor takes it
    assert counts.subset([0, 1]).annotators_known is False
    assert pickle.loads(pickle.dumps(counts)).annotators_known is False
    low = Annotations([0], [0], [1], items=[0], annotators=[0], classes=[0, 1],
                      annotators_known=False)
    assert low.annotators_known is False
    with pytest.raises(AttributeError):
        counts.annotators_known = True
    with pytest.raises(ValueError, match="annotators_known must be a bool"):
        Annotations([0], [0], [1], items=[0], annotators=[0], classes=[0, 1],
                    annotators_known="no")
