"""The K-class NC-ECE bound and the empirical-Bernstein radius (issue 22, item 2): the
range and channel lemmas by hand, the radii's formulas, the same-sample decomposition,
and reduced seeded coverage checks (the full study is benchmarks/bound_study.py)."""

import itertools
import math

import numpy as np
import pytest

import noisycal as nc
from noisycal.correction import correction_range
from noisycal.metrics.binned.bins import equal_width_bins
from noisycal.metrics.nc.bound import (
    _squares,
    channel_errors,
    class_ranges,
    nc_ece_bound,
)
from noisycal.metrics.nc.intervals import nc_ece_items

A_TOY, B_TOY = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B
M, LEVEL = 10, 0.9


def _channels(K=4, diag=(0.85, 0.75, 0.65), seed=7):
    """Confusion matrices with the given diagonals and Dirichlet(2) off-diagonal rows."""
    rng = np.random.default_rng(seed)
    out = []
    for d in diag:
        C = np.zeros((K, K))
        for y in range(K):
            C[y, np.arange(K) != y] = (1 - d) * rng.dirichlet(2.0 * np.ones(K - 1))
            C[y, y] = d
        out.append(C)
    return np.stack(out)


C4 = _channels()


def _kclass(n, seed, C=C4):
    """simulate.classifier's predictions, labels from its true probabilities, and
    Dawid-Skene ratings through C."""
    sim = nc.simulate.classifier(n, C.shape[1], seed=seed)
    rng = np.random.default_rng(10_000 + seed)
    cum = np.cumsum(C[:, sim.labels], axis=2)
    A = (rng.random((C.shape[0], n))[:, :, None] >= cum).sum(axis=2).clip(0, C.shape[1] - 1)
    return sim, A.T


def _population(kind, big=400_000):
    sim = nc.simulate.classifier(big, 4, seed=999)
    p, q = sim.probs, sim.true_probs

    def one(c, t):
        b = equal_width_bins(c, M)
        return np.abs(np.bincount(b, weights=t - c, minlength=M)).sum() / c.size

    if kind == "top_label":
        k = p.argmax(axis=1)
        return one(p.max(axis=1), q[np.arange(big), k])
    return np.mean([one(p[:, c], q[:, c]) for c in range(4)])


def _bound(probs, T, kind, **kw):
    items = nc_ece_items(probs, kind, M)
    counts = np.stack([np.bincount(b, minlength=M) for b in items[1]])
    x = probs[:, 1] if kind == "positive_class" else probs
    value = float(nc.ece(x, T, n_bins=M, kind=kind, interval=None))
    return value, items, nc_ece_bound(value, T, counts, LEVEL, items=items, **kw)


# ------------------------------------------------------------------ Lemma 1 (range)

def test_class_ranges_by_hand():
    # C = 0.7 I + 0.1 11': inverse (I - 0.1 11') / 0.7, every column's range 1 / 0.7
    # and C = 0.5 I + 11'/6: column ranges 1 / 0.5
    C = np.stack([0.7 * np.eye(3) + 0.1, 0.5 * np.eye(3) + 0.5 / 3])
    A = np.array([[0, 1], [2, 2], [1, np.nan]])
    rated_by_one = nc.targets.corrected(A[2:], confusion=C, weights=[0.75, 0.25])
    np.testing.assert_allclose(class_ranges(rated_by_one.details), [1 / 0.7] * 3,
                               rtol=1e-12)
    # fully rated items: .75 / .7 + .25 / .5, the item maximum
    T = nc.targets.corrected(A, confusion=C, weights=[0.75, 0.25])
    np.testing.assert_allclose(class_ranges(T.details), [0.75 / 0.7 + 0.25 / 0.5] * 3,
                               rtol=1e-12)
    # two classes: both columns are the paper's sum_j alpha_j / delta_j
    U = nc.targets.corrected(nc.simulate.gaussian_toy(50, seed=0).annotations, a=A_TOY,
                             b=B_TOY)
    want = correction_range(U.details["weights"], A_TOY, B_TOY)
    np.testing.assert_allclose(class_ranges(U.details), [want, want], rtol=1e-12)


def test_corrected_labels_stay_within_their_class_range():
    """|T_i[k] - c| <= B_k for every c in [0, 1]: 20 seeded runs at n = 300, K = 4,
    ratings missing at random. The largest deviation reaches 0.75 B_k (the supremum is
    max(sum_j w_j max_a G_j[a, k], 1 - sum_j w_j min_a G_j[a, k]) < B_k)."""
    close = 0.0
    for seed in range(20):
        _, A = _kclass(300, seed)
        A = A.astype(float)
        A[np.random.default_rng(seed).random(A.shape) < 0.3] = np.nan
        A[np.isnan(A).all(axis=1), 0] = 1.0
        T = nc.targets.corrected(A, confusion=C4, weights="equal")
        Bk = class_ranges(T.details)
        dev = np.maximum(np.abs(T.values), np.abs(T.values - 1)).max(axis=0)
        assert np.all(dev <= Bk + 1e-12)
        close = max(close, float(np.min(dev / Bk)))
    assert close == pytest.approx(0.75, abs=0.01)


# ---------------------------------------------------------- Lemma 2 (channel term)

def test_channel_errors_bound_the_exact_bias():
    """E[T[k] | Y = y] - 1(y = k) computed exactly: at most sum_j w_j e_jk, and
    e_jk <= tau_j D_jk with tau_j the largest row total-variation distance."""
    rng = np.random.default_rng(3)
    C_true = C4
    C_hat = 0.9 * C4 + 0.1 * rng.dirichlet(np.ones(4), size=(3, 4))
    w = np.array([0.5, 0.3, 0.2])
    G = np.linalg.inv(C_hat)
    bias = np.einsum("j,jya,jak->yk", w, C_true, G) - np.eye(4)
    e = channel_errors(C_hat, C_true)
    assert np.all(np.abs(bias) <= (w @ e)[None, :] + 1e-12)
    # one annotator: the bound is attained in every column
    np.testing.assert_allclose(np.abs(C_true[0] @ G[0] - np.eye(4)).max(axis=0), e[0],
                               rtol=1e-12)
    tau = 0.5 * np.abs(C_true - C_hat).sum(axis=2).max(axis=1)
    D = G.max(axis=1) - G.min(axis=1)
    assert np.all(e <= tau[:, None] * D + 1e-12)
    # two classes: the paper's e_j / delta_j
    a, b = np.array([0.1, 0.2]), np.array([0.9, 0.8])
    ah, bh = a + [0.02, -0.01], b + [-0.03, 0.01]
    two = [np.stack([np.stack([1 - x, x], 1), np.stack([1 - y, y], 1)], 1)
           for x, y in ((ah, bh), (a, b))]
    np.testing.assert_allclose(channel_errors(*two)[:, 1],
                               np.maximum(np.abs(ah - a), np.abs(bh - b)) / (bh - ah),
                               rtol=1e-12)


def test_oracle_channel_term_bounds_the_shift_of_wrong_channels():
    """Target built with wrong channels, n = 200,000: the NC-ECE moves from the one with
    the true channels by at most the oracle channel term (K = 4; measured: 45% of it
    top-label, 24% classwise)."""
    rng = np.random.default_rng(5)
    C_hat = 0.85 * C4 + 0.15 * rng.dirichlet(np.ones(4), size=(3, 4))
    sim, A = _kclass(200_000, 0)
    T_true = nc.targets.corrected(A.astype(float), confusion=C4, weights="equal")
    T_hat = nc.targets.corrected(A.astype(float), confusion=C_hat, weights="equal")
    for kind in ("top_label", "classwise"):
        v_true = float(nc.ece(sim.probs, T_true, n_bins=M, kind=kind, interval=None))
        v_hat, _, (_, det) = _bound(sim.probs, T_hat, kind, mode="oracle",
                                    true_channels=C4, bound_kind="hoeffding")
        shift = abs(v_hat - v_true)
        assert shift <= det["channel_term"], kind
        assert shift / det["channel_term"] == pytest.approx(
            {"top_label": 0.45, "classwise": 0.24}[kind], abs=0.02)
        _, _, (_, rad) = _bound(sim.probs, T_hat, kind, mode="radius", bound_kind="hoeffding",
                                channel_radius=float(0.5 * np.abs(C4 - C_hat).sum(2).max()))
        assert det["channel_term"] <= rad["channel_term"] + 1e-12


def test_binary_oracle_term_is_the_papers():
    t = nc.simulate.gaussian_toy(400, truth="shifted", seed=2)
    a_hat, b_hat = A_TOY + [0.02, 0.0, -0.01], B_TOY + [0.0, 0.03, 0.0]
    U = nc.targets.corrected(t.annotations, a=a_hat, b=b_hat)
    _, _, (_, det) = _bound(np.c_[1 - t.z, t.z], U, "positive_class", mode="oracle",
                            true_channels=(A_TOY, B_TOY))
    e = np.maximum(np.abs(a_hat - A_TOY), np.abs(b_hat - B_TOY))
    assert det["channel_term"] == pytest.approx(
        np.sum(U.details["weights"] * e / (b_hat - a_hat)), rel=1e-12)


# ------------------------------------------------------------------------ radii

@pytest.mark.parametrize("kind, same, log_c", [
    ("top_label", False, math.log(2)),
    ("classwise", False, math.log(8)),
    ("top_label", True, math.log(2) + 4 * math.log(3 * 3 * 15 + 1)),
    ("classwise", True, math.log(8 * (3 * 3 * 15 + 1))),
])
def test_kclass_radii_by_hand(kind, same, log_c):
    sim, A = _kclass(1500, 1)
    T = nc.targets.corrected(A.astype(float), confusion=C4, weights="equal")
    n = 1500
    L = M * math.log(2) + log_c + math.log(1 / (1 - LEVEL))
    Bk = class_ranges(T.details)
    B = Bk.max() if kind == "top_label" else Bk  # (K,) per class for classwise
    v, items, (ci, hoe) = _bound(sim.probs, T, kind, same_sample=same, bound_kind="hoeffding")
    assert hoe["log_union"] == pytest.approx(log_c, rel=1e-12)
    assert hoe["sampling_radius"] == pytest.approx(np.mean(B * math.sqrt(2 * L / n)),
                                                   rel=1e-12)
    assert ci == (pytest.approx(max(0, v - hoe["sampling_radius"])),
                  pytest.approx(v + hoe["sampling_radius"]))
    conf, _, cols = items
    V = _squares(T.details, T.values, items, np.broadcast_to(B, conf.shape[:1]), same)
    if not same:  # the residuals' sum of squares over n - 1
        psi = np.take_along_axis(T.values, cols.T, axis=1).T - conf
        np.testing.assert_allclose(V, (psi ** 2).sum(axis=1) / (n - 1), rtol=1e-12)
    bern = _bound(sim.probs, T, kind, same_sample=same, bound_kind="bernstein")[2][1]
    rho_b = np.sqrt(2 * V * L / n) + 14 * B * L / (3 * (n - 1))
    assert bern["sampling_radius"] == pytest.approx(np.mean(rho_b), rel=1e-12)
    auto = _bound(sim.probs, T, kind, same_sample=same)[2][1]
    rho_a = np.sqrt(2 * V * (L + math.log(2)) / n) + 14 * B * (L + math.log(2)) / (3 * (n - 1))
    want = np.minimum(np.broadcast_to(B * math.sqrt(2 * L / n), rho_a.shape), rho_a)
    assert auto["sampling_radius"] == pytest.approx(np.mean(want), rel=1e-12)
    assert auto["sampling_radius"] <= hoe["sampling_radius"] + 1e-15


def test_binary_bernstein_by_hand_and_the_papers_decomposition():
    """Two classes: V is the residuals' mean square (fixed channels); with the same
    sample, r_i^2 = B sum_j (w_j / delta_j) [(1 - b_j) A + delta_j (A - z)^2 + a_j (1 - A)]
    (the paper's decomposition A - a - delta z = (1 - b) A + delta (A - z) + a (A - 1))."""
    t = nc.simulate.gaussian_toy(2000, truth="shifted", seed=4)
    U = nc.targets.corrected(t.annotations, a=A_TOY, b=B_TOY, weights="equal")
    probs = np.c_[1 - t.z, t.z]
    B = 1 / 0.76
    L = M * math.log(2) + math.log(2 / 0.1)
    _, items, (_, det) = _bound(probs, U, "positive_class", bound_kind="bernstein",
                                same_sample=False)
    V = np.sum((U.values[:, 1] - t.z) ** 2) / 1999
    assert det["second_moment"] == pytest.approx(V, rel=1e-12)
    assert det["sampling_radius"] == pytest.approx(
        math.sqrt(2 * V * L / 2000) + 14 * B * L / (3 * 1999), rel=1e-12)
    A, z, d = t.annotations, t.z[:, None], B_TOY - A_TOY
    q = ((1 - B_TOY) * A + d * (A - z) ** 2 + A_TOY * (1 - A)) / d
    r2 = B * q.mean(axis=1)
    same = _bound(probs, U, "positive_class", bound_kind="bernstein", same_sample=True)[2][1]
    assert same["second_moment"] == pytest.approx(r2.sum() / 1999, rel=1e-12)
    assert np.all(r2 >= (U.values[:, 1] - t.z) ** 2 - 1e-12)
    L6 = M * math.log(2) + math.log(6 * 3 / 0.1)
    assert same["sampling_radius"] == pytest.approx(
        math.sqrt(2 * r2.sum() / 1999 * L6 / 2000) + 14 * B * L6 / (3 * 1999), rel=1e-12)


def test_same_sample_decomposition_is_exact_for_k_classes():
    """The Notes' identity G[a, k] - c = D sum_S lambda_S [(1-u-v) 1_S(a) + v (1_S(a) - c)
    + u (1_S(a) - 1)] over the upper level sets of column k, and its squares' mean q."""
    G = np.linalg.inv(C4[2])
    for k, c in itertools.product(range(4), (0.0, 0.37, 1.0)):
        col = G[:, k]
        lo, D = col.min(), col.max() - col.min()
        phi, u, v = (col - lo) / D, -lo / D, 1 / D
        assert u >= 0 and v >= 0 and u + v <= 1 + 1e-12
        levels = np.unique(phi)
        lam = np.diff(np.r_[0.0, levels])
        sets = [phi >= t for t in levels]
        for a in range(4):
            parts = [(1 - u - v) * s[a] + v * (s[a] - c) + u * (s[a] - 1) for s in sets]
            assert D * np.dot(lam, parts) == pytest.approx(col[a] - c, abs=1e-12)
            sq = [(1 - u - v) * s[a] + v * (s[a] - c) ** 2 + u * (s[a] - 1) ** 2
                  for s in sets]
            q = (1 - u - v) * phi[a] + v * (phi[a] * (1 - 2 * c) + c * c) + u * (1 - phi[a])
            assert np.dot(lam, sq) == pytest.approx(q, abs=1e-12)


# -------------------------------------------------------------- the public path

def test_ece_bound_for_k_classes_through_the_public_api():
    sim, A = _kclass(800, 2)
    T = nc.targets.corrected(A.astype(float), confusion=C4, weights="equal")
    for kind in ("top_label", "classwise"):
        est = nc.ece(sim.probs, T, n_bins=M, kind=kind, interval="bound", level=LEVEL)
        _, _, (ci, det) = _bound(sim.probs, T, kind)
        assert est.interval == (pytest.approx(ci[0], abs=1e-12), pytest.approx(ci[1]))
        assert est.kind == "bound"
        assert est.method == det["bound_method"] and est.method.endswith("-union")
        assert est.details["statement"] == "Theorem 1 / Eq. C.11, generalised to K classes"
        assert "assumes exact channels" in est.message
    with pytest.raises(ValueError, match="top-label or classwise"):
        nc.ece(sim.probs, T, kind="top_label", strategy="quantile", interval="bound")
    with pytest.raises(ValueError, match="true_channels must give channels of shape"):
        nc.ece(sim.probs, T, kind="top_label", interval=nc.intervals.Bound(true_channels=C4[:2]))


def test_bound_options_for_k_classes():
    opts = nc.intervals.Bound(mode="oracle", true_channels=C4, kind="hoeffding")
    assert opts.kind == "hoeffding" and opts.true_channels.shape == (3, 4, 4)
    two = nc.intervals.Bound(mode="oracle", true_channels=(A_TOY, B_TOY)).true_channels
    np.testing.assert_allclose(two[:, 1, 1], B_TOY, rtol=1e-12)
    np.testing.assert_allclose(two[:, 0, 1], A_TOY, rtol=1e-12)
    with pytest.raises(ValueError, match="kind must be one of"):
        nc.intervals.Bound(kind="chernoff")
    # the bound's options belong to its object: no other interval kind takes them
    with pytest.raises(TypeError, match="kind"):
        nc.intervals.Bootstrap(kind="hoeffding")
    with pytest.raises(ValueError, match="rows are not all probability vectors"):
        nc.intervals.Bound(mode="oracle", true_channels=C4 * 0.9)
    sim, A = _kclass(50, 0)
    T = nc.targets.corrected(A.astype(float), confusion=C4, weights="equal")
    with pytest.raises(ValueError, match="items"):
        nc_ece_bound(0.1, T, np.ones((1, M)) * 5, LEVEL, bound_kind="hoeffding")


# ------------------------------------------------------- reduced coverage checks

def test_kclass_bounds_hold_with_true_channels():
    """K = 4, n = 2000, true channels, 40 seeded runs: every inequality covers the
    population binned ECE in at least 90% of runs (the study measures 1.000), 'auto' is
    never wider than Hoeffding, and Bernstein is narrower than Hoeffding here."""
    pop = {k: _population(k) for k in ("top_label", "classwise")}
    hits = {(k, b): 0 for k in pop for b in ("hoeffding", "bernstein", "auto")}
    narrower = 0
    for seed in range(40):
        sim, A = _kclass(2000, 100 + seed)
        T = nc.targets.corrected(A.astype(float), confusion=C4, weights="equal")
        for kind in pop:
            rad = {}
            for bk in ("hoeffding", "bernstein", "auto"):
                _, _, (ci, det) = _bound(sim.probs, T, kind, bound_kind=bk)
                hits[kind, bk] += ci[0] <= pop[kind] <= ci[1]
                rad[bk] = det["sampling_radius"]
            assert rad["auto"] <= rad["hoeffding"] + 1e-15
            narrower += rad["bernstein"] < rad["hoeffding"]
    assert min(hits.values()) >= 36, hits
    assert narrower == 80


@pytest.mark.slow
def test_kclass_bounds_hold_with_em_channels():
    """K = 4, n = 3000, Dawid-Skene EM channels fitted on the evaluated items (the
    K-class Proposition 1, oracle channel term), 3 seeded runs: every run covers (each
    fit compiles anew, so few runs; the study has 200 per cell)."""
    pop = {k: _population(k) for k in ("top_label", "classwise")}
    for seed in range(3):
        sim, A = _kclass(3000, 200 + seed)
        ann = nc.Annotations.from_wide(A, classes=np.arange(4))
        fit = nc.DawidSkene(4).fit(ann, seed=seed)
        assert fit.status == "ok"
        T = nc.targets.corrected(ann, fit)
        for kind in pop:
            est = nc.ece(sim.probs, T, n_bins=M, kind=kind,
                         interval=nc.intervals.Bound(true_channels=C4), level=LEVEL)
            assert est.details["statement"] == "Proposition 1, generalised to K classes"
            assert est.low <= pop[kind] <= est.high, (seed, kind)
