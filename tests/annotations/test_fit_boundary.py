"""One boundary where a fit meets data: the held-out cases of the redesign issue.

Each case once gave a number silently (the fit's own ratings checked instead of the given
ones, targets and predictions in different class orders, fits of other data compared,
pandas inputs read by position); each now raises a ValueError naming the problem, or
aligns and gives the number of the aligned input.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import noisycal as nc
from noisycal.annotations.matching import (
    FitIds,
    match_ratings,
    rating_codes,
    same_ratings,
    with_classes,
)
from noisycal.calibrators.conformal.evaluate import evaluate_sets
from noisycal.engines.results import fit_ids

CONF = np.array([[[0.85, 0.15], [0.2, 0.8]], [[0.8, 0.2], [0.1, 0.9]],
                 [[0.9, 0.1], [0.25, 0.75]], [[0.75, 0.25], [0.15, 0.85]]])


def _long(ann):
    return pd.DataFrame({"item": ann.items[ann.item_index],
                         "annotator": ann.annotators[ann.annotator_index],
                         "label": ann.classes[ann.label_index]})


@pytest.fixture(scope="module")
def binary():
    """400 items, four annotators, two classes; EM fits of Dawid-Skene and one-coin."""
    sim = nc.simulate.dawid_skene(400, [0.4, 0.6], CONF, seed=3)
    ann = sim.annotations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        em = nc.engines.EM(n_starts=2)
        fits = {"ds": nc.DawidSkene(2).fit(ann, method=em, seed=0),
                "one_coin": nc.OneCoinDawidSkene(2).fit(ann, method=em, seed=0)}
    rng = np.random.default_rng(4)
    z = np.clip(0.5 + 0.35 * (2 * sim.true_class - 1) + rng.normal(0, 0.2, ann.n_items),
                0.01, 0.99)
    return sim, ann, fits, z


# ------------------------------------------------------------------- the one function
def test_match_reads_annotators_by_id_classes_by_name_items_by_id():
    fit = FitIds(annotators=["x", "y", "z"], classes=["no", "yes"], items=[10, 11, 12])
    ann = nc.Annotations.from_arrays([12, 12, 10], ["z", "x", "z"], ["yes", "no", "no"],
                                     classes=["yes", "no"])
    m = match_ratings(ann, fit, items="fitted")
    assert m.annotator_index.tolist() == [2, 0] and m.class_index.tolist() == [1, 0]
    assert m.channel.tolist() == [2, 0, 2] and m.label.tolist() == [1, 0, 0]
    assert m.item_index.tolist() == [2, 0]
    new = nc.Annotations.from_arrays([99], ["x"], ["no"], classes=["no", "yes"])
    assert match_ratings(new, fit).item_index.tolist() == [-1]  # items="any"
    with pytest.raises(ValueError, match=r"items the fit was not fitted on: \[99\]"):
        match_ratings(new, fit, items="fitted")
    stranger = nc.Annotations.from_arrays([10], ["w"], ["no"], classes=["no", "yes"])
    with pytest.raises(ValueError, match=r"has not seen: \['w'\]"):
        match_ratings(stranger, fit)
    third = nc.Annotations.from_arrays([10], ["x"], ["maybe"], classes=["no", "maybe"])
    with pytest.raises(ValueError, match=r"not classes of the fit: \['maybe'\].*missing "
                       r"from the annotations: \['yes'\]"):
        match_ratings(third, fit)
    with pytest.raises(ValueError, match="annotations must be a noisycal.Annotations"):
        match_ratings(np.zeros((2, 2)), fit)
    with pytest.raises(ValueError, match="items must be one of"):
        match_ratings(ann, fit, items="new")


def test_the_data_identity_includes_who_rated_and_is_vectorised():
    # two ratings of item 0 swapped between annotators x and y: the same (item, label)
    # pairs, other data
    fit_ann = nc.Annotations.from_arrays([0, 0, 1], ["x", "y", "x"], [1, 0, 0])
    swapped = nc.Annotations.from_arrays([0, 0, 1], ["y", "x", "x"], [1, 0, 0])
    reordered = nc.Annotations.from_arrays([1, 0, 0], ["x", "y", "x"], [0, 0, 1],
                                           annotators=["y", "x"], classes=[1, 0])
    ids = FitIds(fit_ann.annotators, fit_ann.classes, fit_ann.items,
                 ratings=(fit_ann.item_index, fit_ann.annotator_index, fit_ann.label_index))
    assert same_ratings(match_ratings(reordered, ids), ids) is None
    assert "ratings differ" in same_ratings(match_ratings(swapped, ids), ids)
    codes = rating_codes(fit_ann.item_index, fit_ann.annotator_index, fit_ann.label_index,
                         2, 2)
    assert codes.dtype == np.int64 and codes.shape == (3,)  # one integer per rating


def test_with_classes_reorders_the_class_list_only():
    ann = nc.Annotations.from_arrays([0, 1, 1], [0, 0, 1], ["b", "a", "b"])
    other = with_classes(ann, ["b", "a"])
    assert other.classes.tolist() == ["b", "a"] and other.label_index.tolist() == [0, 1, 0]
    assert with_classes(ann, ["a", "b"]) is ann
    with pytest.raises(ValueError, match="classes must list"):
        with_classes(ann, ["a", "c"])


# ------------------------------------------------------------------- ppc
def test_ppc_refuses_ratings_the_fit_never_saw(binary):
    """75 flipped ratings moved to an unknown annotator gave a table identical to the
    fit's own (the fallback to ``fit.annotations``)."""
    _, ann, fits, _ = binary
    frame = _long(ann)
    rows = np.flatnonzero(frame["annotator"].to_numpy() == 0)[:75]
    frame.loc[rows, "label"] = 1 - frame.loc[rows, "label"]
    frame["annotator"] = frame["annotator"].astype(str)
    frame.loc[rows, "annotator"] = "newcomer"
    moved = nc.Annotations.from_long(frame, classes=[0, 1])
    renamed = _long(ann).assign(annotator=lambda f: f["annotator"].astype(str))
    fit = nc.DawidSkene(2).fit(nc.Annotations.from_long(renamed, classes=[0, 1]),
                               method=nc.engines.EM(n_starts=1))
    assert moved.n_ratings == fit.annotations.n_ratings  # the old fallback's condition
    with pytest.raises(ValueError, match=r"has not seen: \['newcomer'\]"):
        nc.annotators.ppc(fit, moved, n_rep=20, discrepancies="unanimity")
    wider = nc.Annotations.from_long(_long(ann), classes=[0, 1, 2])
    with pytest.raises(ValueError, match=r"but the fit has classes \[0, 1\].*missing"
                       r"|not classes of the fit: \[2\]"):
        nc.annotators.ppc(fits["ds"], wider, n_rep=20, discrepancies="unanimity")


def test_ppc_aligns_pandas_scores(binary):
    _, ann, fits, z = binary
    ref = nc.annotators.ppc(fits["ds"], ann, n_rep=20, seed=0,
                            discrepancies="score_agreement", scores=z)
    same = nc.annotators.ppc(fits["ds"], ann, n_rep=20, seed=0,
                             discrepancies="score_agreement",
                             scores=pd.Series(z, index=ann.items))
    pd.testing.assert_frame_equal(same.table, ref.table)
    with pytest.raises(ValueError, match="scores: its index does not list"):
        nc.annotators.ppc(fits["ds"], ann, n_rep=20, discrepancies="score_agreement",
                          scores=pd.Series(z, index=ann.items[::-1]))


# ------------------------------------------------------------------- compare
def test_compare_refuses_a_fit_of_other_data(binary):
    """Two annotators swapped on half the items: the same (item, label) pairs, so the
    old check passed, and that fit won the BIC comparison."""
    _, ann, fits, _ = binary
    frame = _long(ann)
    half = frame["item"].to_numpy() < ann.n_items // 2
    who = frame["annotator"].to_numpy().copy()
    swap = {0: 1, 1: 0}
    who[half] = [swap.get(a, a) for a in who[half]]
    swapped = nc.Annotations.from_long(frame.assign(annotator=who), classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        other = nc.DawidSkene(2).fit(swapped, method=nc.engines.EM(n_starts=2), seed=0)
    with pytest.raises(ValueError, match="fits must all be fitted on annotations: 'other'"
                       ".*ratings differ"):
        nc.annotators.compare({"ds": fits["ds"], "other": other}, ann, ic="bic")
    # the same ratings listed in another order are the same data
    shuffled = nc.Annotations.from_long(frame.sample(frac=1.0, random_state=1),
                                        classes=[1, 0], annotators=[3, 2, 1, 0])
    res = nc.annotators.compare(fits, shuffled, ic="bic")
    assert res.ranks == nc.annotators.compare(fits, ann, ic="bic").ranks


def test_compare_refuses_gold_fits_against_plain_ones(binary):
    sim, ann, fits, _ = binary
    gold = {ann.items[i]: int(sim.true_class[i]) for i in range(40)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        with_gold = nc.DawidSkene(2).fit(ann, gold=gold, method=nc.engines.EM(n_starts=2), seed=0)
    with pytest.raises(ValueError, match=r"\['gold'\] were fitted with gold labels and "
                       r"\['one_coin'\] without"):
        nc.annotators.compare({"gold": with_gold, "one_coin": fits["one_coin"]}, ann,
                              ic="bic")


# ------------------------------------------------------------------- compare_calibration
def test_compare_calibration_ties_probs_to_the_fits_classes(binary):
    """Annotations listing the classes as [1, 0] gave NC-ECE 0.687 instead of 0.000: the
    corrected targets followed the annotations' class order, the probabilities were
    positional. The targets are now built in the fits' class order."""
    _, ann, fits, z = binary
    P = np.column_stack([1 - z, z])
    ref = nc.compare_calibration(fits, ann, P, ic="bic", n_bins=5)
    swapped = with_classes(ann, [1, 0])
    got = nc.compare_calibration(fits, swapped, P, ic="bic", n_bins=5)
    np.testing.assert_allclose(got.nc_ece["plugin"], ref.nc_ece["plugin"], rtol=0,
                               atol=1e-12)
    assert float(got.averaged) == pytest.approx(float(ref.averaged), abs=1e-12)
    for name, fit in fits.items():  # each model's NC-ECE is its corrected target's
        direct = float(nc.ece(P, nc.targets.corrected(ann, fit), n_bins=5, interval=None))
        assert got.nc_ece.set_index("model").loc[name, "plugin"] == pytest.approx(
            direct, abs=1e-12)
    # a DataFrame's columns are matched by label, whatever their order
    frame = pd.DataFrame(P[:, ::-1], columns=[1, 0], index=ann.items)
    by_label = nc.compare_calibration(fits, swapped, frame, ic="bic", n_bins=5)
    np.testing.assert_allclose(by_label.nc_ece["plugin"], ref.nc_ece["plugin"], rtol=0,
                               atol=1e-12)
    with pytest.raises(ValueError, match="column labels"):
        nc.compare_calibration(fits, ann, pd.DataFrame(P, columns=["a", "b"]), ic="bic")
    # fits listing their classes in other orders give the columns no one meaning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        flipped = nc.OneCoinDawidSkene(2).fit(swapped, method=nc.engines.EM(n_starts=2), seed=0)
    mixed = {"ds": fits["ds"], "flipped": flipped}
    nc.annotators.compare(mixed, ann, ic="bic")  # the same data: comparable
    with pytest.raises(ValueError, match="list their classes in different orders"):
        nc.compare_calibration(mixed, ann, P, ic="bic")


# ------------------------------------------------------------------- grouped channels
def test_channels_per_group_work_through_the_match():
    sim = nc.simulate.dawid_skene(200, [0.5, 0.5], CONF[:3], seed=7)
    ann = sim.annotations
    groups = np.arange(ann.n_items) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nc.NoisycalWarning)
        fit = nc.GroupedDawidSkene(2, channels="group").fit(
            ann, groups=groups, method=nc.engines.EM(n_starts=2))
    assert fit.details["channel_annotators"].tolist() == [0, 0, 1, 1, 2, 2]
    m = fit.match(ann)  # the original annotator ids: each rating's channel by its group
    np.testing.assert_array_equal(m.channel, fit.annotations.annotator_index)
    assert m.annotator_index is None
    assert same_ratings(m, fit_ids(fit)) is None
    np.testing.assert_allclose(fit.predict(ann, groups), fit.item_posterior, rtol=0,
                               atol=1e-12)
    np.testing.assert_array_equal(fit.match(fit.annotations).channel, m.channel)
    # new items need their groups; corrected labels need one channel per annotator
    new = nc.Annotations.from_arrays(["n0", "n0"], [0, 1], [1, 1], classes=[0, 1])
    with pytest.raises(ValueError, match=r"items the fit was not fitted on: \['n0'\]"):
        fit.match(new)
    assert fit.match(new, groups=[1]).channel.tolist() == [1, 3]
    with pytest.raises(ValueError, match="channels per \\(annotator, group\\)"):
        nc.targets.corrected(ann, fit)
    nc.targets.corrected(fit.annotations, fit)  # its ratings by channel


# ------------------------------------------------------------------- pandas inputs
def test_noise_check_reads_pandas_scores_by_id(binary):
    _, ann, _, z = binary
    with pytest.raises(ValueError, match="scores: its index does not list the annotations'"):
        nc.annotators.noise_check(ann, pd.Series(z, index=ann.items[::-1]), method="chi2")
    with pytest.raises(ValueError, match="must not repeat an id"):
        nc.annotators.noise_check(ann, pd.Series(z, index=np.zeros(ann.n_items, int)),
                                  method="chi2")
    with pytest.raises(ValueError, match="column labels"):
        nc.annotators.noise_check(ann, pd.DataFrame(np.column_stack([1 - z, z]),
                                                    columns=["a", "b"], index=ann.items))


def test_evaluate_sets_reads_pandas_by_id():
    sets = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]], dtype=bool)
    y = np.array([0, 1, 2, 2])
    ids = ["a", "b", "c", "d"]
    ref = evaluate_sets(sets, y)
    frame = pd.DataFrame(sets[:, ::-1], index=ids, columns=[2, 1, 0])
    same = evaluate_sets(frame, pd.Series(y, index=ids).astype(pd.CategoricalDtype([0, 1, 2])))
    assert float(same.coverage) == float(ref.coverage) == 1.0
    with pytest.raises(ValueError, match="sets: its index does not list"):
        evaluate_sets(pd.DataFrame(sets, index=ids[::-1]), pd.Series(y, index=ids))
    with pytest.raises(ValueError, match="target \\(its index\\) must not repeat"):
        evaluate_sets(sets, pd.Series(y, index=["a", "a", "b", "c"]))


def test_calibrators_refuse_a_repeated_index_and_match_columns():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 2, (60, 3))
    y = np.argmax(z + rng.gumbel(0, 1.5, (60, 3)), axis=1)
    ids = [f"i{k}" for k in range(60)]
    ts = nc.calibrators.TemperatureScaling
    with pytest.raises(ValueError, match="logits \\(its index\\) must not repeat an id"):
        ts().fit(logits=pd.DataFrame(z, index=["a"] * 60), target=y)
    with pytest.raises(ValueError, match="probs \\(its index\\) must not repeat an id"):
        nc.calibrators.PlattScaling().fit(probs=pd.Series(rng.random(60), index=[0] * 60),
                                          target=y % 2)
    ref = ts().fit(logits=z, target=y)
    cls = ["a", "b", "c"]
    t = nc.targets.hard(np.asarray(cls)[y], classes=cls, items=ids)
    frame = pd.DataFrame(z[:, [2, 0, 1]], columns=["c", "a", "b"], index=ids)
    fitted = ts().fit(logits=frame, target=t)  # columns matched to the target's classes
    assert fitted.temperature_ == pytest.approx(ref.temperature_, rel=1e-12)
    np.testing.assert_allclose(fitted.predict_proba(logits=frame),
                               ref.predict_proba(logits=z), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="column labels"):
        fitted.predict_proba(logits=pd.DataFrame(z, columns=["x", "y", "z"]))
    with pytest.raises(ValueError, match="repeated|must not repeat"):
        fitted.predict_proba(logits=pd.DataFrame(z, index=[0] * 60, columns=cls))


# ------------------------------------------------------------------- loaders
def _write(path, **arrays):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("counts, labels, names, match", [
    (np.array([[2, -1], [1, 1]]), [0, 1], ["a", "b"], "non-negative counts"),
    (np.array([[1.5, 1], [1, 1]]), [0, 1], ["a", "b"], "whole numbers"),
    (np.array([[0, 0], [1, 1]]), [0, 1], ["a", "b"], "rows without a vote"),
    (np.array([[1, 1], [1, 1]]), [0, 10], ["a", "b"], "class codes in 0..9"),
])
def test_cifar10h_loader_validates_its_file(tmp_path, counts, labels, names, match):
    wide = np.zeros((2, 10), counts.dtype)
    wide[:, :2] = counts
    path = _write(tmp_path / "cifar10h" / "cifar10h.npz", counts=wide,
                  cifar10_test_labels=np.array(labels),
                  class_names=np.array(names + [f"c{k}" for k in range(8)]))
    with pytest.raises(ValueError, match=match) as info:
        nc.datasets.load_cifar10h(data=tmp_path)
    assert str(path) in str(info.value)


def test_logit_and_label_loaders_validate_their_files(tmp_path):
    good = dict(logits_test=np.zeros((3, 10)), y_test=np.array([0, 1, 2]),
                logits_val=np.zeros((2, 10)), y_val=np.array([0, 1]),
                val_train_idx=np.array([5, 7]))
    path = tmp_path / "cifar10_logits" / "densenet40_c10.npz"
    for change, match in ((dict(logits_test=np.full((3, 10), np.inf)), "must be finite"),
                          (dict(y_val=np.array([0, 11])), "class codes"),
                          (dict(val_train_idx=np.array([5, 5])), "must not repeat an id"),
                          (dict(y_test=np.array([0, 1])), "has shape")):
        _write(path, **{**good, **change})
        with pytest.raises(ValueError, match=match) as info:
            nc.datasets.load_cifar10_logits(data=tmp_path)
        assert str(path) in str(info.value)
    _write(path, **good)
    assert nc.datasets.load_cifar10_logits(data=tmp_path).y_test.tolist() == [0, 1, 2]
    keys = ("random_label1", "random_label2", "random_label3", "clean_label", "aggre_label")
    noisy = _write(tmp_path / "cifar10n" / "cifar10n.npz",
                   **{k: np.array([0, 1, -1 if k == "random_label2" else 2]) for k in keys})
    with pytest.raises(ValueError, match="'random_label2' must hold class codes") as info:
        nc.datasets.load_cifar10n(data=tmp_path)
    assert str(noisy) in str(info.value)


def test_chaosnli_loader_validates_its_file(tmp_path):
    good = dict(uid=np.array(["u1", "u2", "u3"]), class_names=np.array(["e", "n", "c"]),
                counts=np.array([[50, 30, 20], [0, 100, 0], [10, 10, 80]]),
                majority_label=np.array([0, 1, 2]), old_label=np.array([0, 1, 2]),
                logits_m=np.array([[1.0, 0.0, 0.0], [np.nan] * 3, [0.0, 0.0, 1.0]]),
                dd_split=np.array([0, -1, 1]))
    path = tmp_path / "chaosnli" / "chaosnli_snli.npz"
    _write(path, **good)
    d = nc.datasets.load_chaosnli(data=tmp_path)  # a whole NaN row: no prediction
    assert np.isnan(d.logits["m"][1]).all() and d.split.tolist() == [0, -1, 1]
    for change, match in ((dict(uid=np.array(["u1", "u1", "u3"])), "must not repeat an id"),
                          (dict(counts=np.array([[50, -1, 20], [0, 100, 0], [1, 1, 8]])),
                           "non-negative counts"),
                          (dict(old_label=np.array([0, 3, 2])), "class codes in 0..2"),
                          (dict(logits_m=np.array([[1.0, np.nan, 0.0]] * 3)),
                           "NaN only as whole rows"),
                          (dict(majority_label=np.array([0, 1])), "has shape")):
        _write(path, **{**good, **change})
        with pytest.raises(ValueError, match=match) as info:
            nc.datasets.load_chaosnli(data=tmp_path)
        assert str(path) in str(info.value)
