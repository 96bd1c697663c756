"""Conformal prediction sets: coverage and size of MSP, deterministic and randomised APS
("Classification with Valid and Adaptive Coverage"), RAPS ("Uncertainty Sets for Image
Classifiers using Conformal Prediction") and class-conditional APS at alpha = 0.1 (not a
timing), and agreement with MAPIE's randomised APS sets at the same uniforms.

1. Simulation with known truth: the Gaussian grid (:func:`noisycal.simulate.gaussian_grid`,
   K = 10) and an over-confident noisy model ``2.5 * true_logits + N(0, 1)``; 1,000
   calibration and 2,000 test draws per seed. The coverage of a seed's sets is computed
   exactly from the true p(y | x) (``sum_{y in C(x)} p(y | x)`` averaged over the test
   draws); across seeds its mean estimates the marginal coverage, with the Monte Carlo
   standard error sd / sqrt(seeds). Exact target: k / (n + 1) = 901 / 1001. The
   coverage given each true class is computed the same way (its mean over seeds; the
   smallest and largest over the classes are reported).
2. CIFAR-10 DenseNet-40 logits (``nc.datasets.load_cifar10_logits``): calibration on the
   5,000 validation rows and test on the 10,000 test rows, then ``--splits`` random 50/50
   splits of the test rows (mean over splits, and split 0 with its intervals from
   :func:`noisycal.calibrators.conformal.evaluate.evaluate_sets`).
3. With ``--mapie-python`` (a Python with MAPIE installed, e.g. a scratch venv): MAPIE's
   ``SplitConformalClassifier(conformity_score='aps', random_state=seed)`` with
   ``include_last_label='randomized'`` on split 0, against ``SplitConformal(score='aps')``
   given ``u = 1 - U`` for MAPIE's draws ``RandomState(seed).uniform`` (MAPIE's score is
   the inclusive mass minus U p_y).

Usage::

    python benchmarks/conformal_sets.py --seeds 50 --splits 20 \\
        --mapie-python /tmp/mapie_env/bin/python
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)
from scipy.special import softmax

import noisycal as nc
from noisycal.calibrators.conformal.evaluate import evaluate_sets

ALPHA = 0.1
METHODS = {
    "MSP": dict(score="msp"),
    "APS deterministic": dict(score="aps", randomized=False),
    "APS randomised": dict(score="aps"),
    "RAPS (lam 0.01, k_reg 1)": dict(score="raps", lam=0.01, k_reg=1),
    "APS randomised, class-conditional": dict(score="aps", mondrian=True),
}

MAPIE_CODE = r'''
import sys
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from mapie.classification import SplitConformalClassifier

class Identity(ClassifierMixin, BaseEstimator):
    def fit(self, X, y=None):
        self.classes_ = np.arange(X.shape[1]); self.n_features_in_ = X.shape[1]; return self
    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)
    def predict(self, X):
        return np.argmax(X, axis=1)

d = np.load(sys.argv[1])
m = SplitConformalClassifier(Identity().fit(d["Pc"]), confidence_level=1 - float(d["alpha"]),
                             conformity_score="aps", prefit=True, random_state=int(d["seed"]))
m.conformalize(d["Pc"], d["yc"])
_, S = m.predict_set(d["Pt"], conformity_score_params={"include_last_label": "randomized"})
q = m._mapie_classifier.conformity_score_function_.quantiles_
np.savez(sys.argv[2], sets=S[:, :, 0], q=q)
'''


def simulation(seeds: int) -> dict:
    """Exact coverage (true p) and size of each method's sets, mean and MC s.e. over seeds."""
    cov = {m: [] for m in METHODS}
    size = {m: [] for m in METHODS}
    by_class = {m: [] for m in METHODS}
    for r in range(seeds):
        g = nc.simulate.gaussian_grid(3000, 10, seed=r)
        z = 2.5 * g.true_logits + np.random.default_rng(r + 1000).normal(
            size=g.true_logits.shape)
        for name, kw in METHODS.items():
            cp = nc.calibrators.SplitConformal(alpha=ALPHA, seed=r, **kw)
            S = cp.fit(logits=z[:1000], target=g.labels[:1000]).predict_sets(
                logits=z[1000:])
            pt = g.true_probs[1000:]
            cov[name].append(float(np.mean(np.sum(np.where(S, pt, 0.0), axis=1))))
            size[name].append(float(S.sum(axis=1).mean()))
            # exact coverage given the true class c: E[1{c in C(X)} p(c|X)] / E[p(c|X)]
            by_class[name].append(np.sum(np.where(S, pt, 0.0), axis=0) / pt.sum(axis=0))
    return {m: {"coverage": float(np.mean(cov[m])),
                "mc_se": float(np.std(cov[m], ddof=1) / np.sqrt(seeds)),
                "mean_size": float(np.mean(size[m])),
                "class_coverage_min": float(np.min(np.mean(by_class[m], axis=0))),
                "class_coverage_max": float(np.max(np.mean(by_class[m], axis=0)))}
            for m in METHODS} | {"target": 901 / 1001, "seeds": seeds}


def _evaluate(zc: np.ndarray, yc: np.ndarray, zt: np.ndarray, yt: np.ndarray,
              seed: int) -> dict:
    out = {}
    for name, kw in METHODS.items():
        cp = nc.calibrators.SplitConformal(alpha=ALPHA, seed=seed, **kw).fit(logits=zc,
                                                                            target=yc)
        out[name] = evaluate_sets(cp.predict_sets(logits=zt), yt)
    return out


def _row(ev: object) -> dict:
    return {"coverage": float(ev.coverage), "coverage_interval": ev.coverage.interval,
            "mean_size": float(ev.size), "size_interval": ev.size.interval,
            "empty": float(ev.empty),
            "worst_class_coverage": float(ev.per_class["coverage"].min())}


def cifar(n_splits: int) -> tuple[dict, tuple]:
    """val -> test, and random 50/50 splits of the test rows."""
    d = nc.datasets.load_cifar10_logits()
    res = {"val -> test": {m: _row(e) for m, e in _evaluate(
        d.logits_val, d.y_val, d.logits_test, d.y_test, 0).items()}}
    rows = {m: [] for m in METHODS}
    split0 = None
    for s in range(n_splits):
        perm = np.random.default_rng(s).permutation(10000)
        ic, it = perm[:5000], perm[5000:]
        ev = _evaluate(d.logits_test[ic], d.y_test[ic], d.logits_test[it], d.y_test[it], s)
        if s == 0:
            res["split 0"] = {m: _row(e) for m, e in ev.items()}
            split0 = (d.logits_test[ic], d.y_test[ic], d.logits_test[it], d.y_test[it])
        for m, e in ev.items():
            rows[m].append((float(e.coverage), float(e.size), float(e.empty)))
    res[f"mean over {n_splits} splits"] = {
        m: dict(zip(("coverage", "mean_size", "empty"), np.mean(v, axis=0).tolist(),
                    strict=True)) | {"coverage_sd": float(np.std(np.array(v)[:, 0], ddof=1))}
        for m, v in rows.items()}
    return res, split0


def mapie_agreement(python: str, split: tuple, seed: int = 0) -> dict:
    """MAPIE's randomised APS sets against ours at the same uniforms."""
    zc, yc, zt, yt = split
    Pc, Pt = softmax(zc, axis=1), softmax(zt, axis=1)
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(inp, Pc=Pc, yc=yc, Pt=Pt, alpha=ALPHA, seed=seed)
        subprocess.run([python, "-c", MAPIE_CODE, str(inp), str(out)], check=True)
        m = np.load(out)
        M, q = m["sets"], float(m["q"][0])
    uc = 1 - np.random.RandomState(seed).uniform(size=len(Pc))
    ut = 1 - np.random.RandomState(seed).uniform(size=len(Pt))
    cp = nc.calibrators.SplitConformal(alpha=ALPHA, score="aps").fit(probs=Pc, target=yc,
                                                                     u=uc)
    S = cp.predict_sets(probs=Pt, u=ut)
    same = np.all(S == M, axis=1)
    # rows whose cumulative mass is tied (in float) at the boundary rank: saturated
    # softmax rows, where MAPIE's argmin picks the last class by column index
    cs = np.cumsum(-np.sort(-Pt, axis=1), axis=1)
    L = np.argmax(cs >= cp.quantile_ - 1e-8, axis=1)
    Lc = np.minimum(L + 1, Pt.shape[1] - 1)
    tie = (L < Pt.shape[1] - 1) & (cs[np.arange(len(L)), L] == cs[np.arange(len(L)), Lc])
    return {"quantile_ours": cp.quantile_, "quantile_mapie": q,
            "identical_share": float(same.mean()),
            "identical_share_without_ties": float(same[~tie].mean()),
            "tied_rows_share": float(tie.mean()),
            "mean_size_ours": float(S.sum(axis=1).mean()),
            "mean_size_mapie": float(M.sum(axis=1).mean()),
            "coverage_ours": float(S[np.arange(len(yt)), yt].mean()),
            "coverage_mapie": float(M[np.arange(len(yt)), yt].mean()),
            "empty_ours": float(np.mean(S.sum(axis=1) == 0)),
            "empty_mapie": float(np.mean(M.sum(axis=1) == 0)),
            "mapie_extra_labels_max_prob": float(Pt[M & ~S].max()) if (M & ~S).any()
            else None,
            "labels_ours_not_mapie": int(np.sum(S & ~M))}


def main(argv: list[str] | None = None) -> dict:
    """Run the three parts and write benchmarks/output/conformal_sets.json."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--splits", type=int, default=20)
    ap.add_argument("--mapie-python", default=None)
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    result = {"alpha": ALPHA, "simulation": simulation(args.seeds)}
    try:
        result["cifar10_densenet40"], split0 = cifar(args.splits)
    except FileNotFoundError as e:
        print(f"CIFAR-10 logits absent: {e}", file=sys.stderr)
        split0 = None
    if args.mapie_python and split0 is not None:
        result["mapie"] = mapie_agreement(args.mapie_python, split0)
    write_result("conformal_sets", result, publish=args.publish)
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(main(), indent=1, default=str))
