"""ECE estimation on the Gaussian toy of "Noisy-Label Calibration with Multiple Unreliable
Labels" (its Figure 1 / Table 1 design), as a quantitative table (not a timing).

The paper gives the design but no result numbers; every size it leaves open is an
argument here, with the default named below.

Design (the paper's): ``X ~ 1/2 N(-1, 1) + 1/2 N(1, 1)``, scores ``Z = sigmoid(0.3 - X)``,
true labels ``Y ~ Bernoulli(m(Z))`` with the three truths of ``nc.simulate.gaussian_toy``
('calibrated': m(z) = z; 'shifted'; 'nonlinear'), three annotators labelling every item
with the paper's channels (false-positive rates 0.08, 0.13, 0.18; true-positive rates
0.84, 0.89, 0.94). Table 1 reports sample SDs over 200 repetitions (``--reps``).

Estimators, each on the same ``n_ev`` evaluation items and the same ``n_bins`` equal-width
bins of Z (positive-class ECE):

* ``majority_vote``: the binned ECE against the majority vote of the three labels
  (``nc.targets.voted``; three binary labels never tie);
* ``soft_vote``: against the share of positive labels (``nc.targets.soft``);
* ``nc_true``: the NC-ECE against the corrected target with the true channels
  (``nc.targets.corrected(ann, a=..., b=...)``, ``--weights``);
* ``nc_em``: the NC-ECE with channels fitted by Dawid-Skene EM (``nc.DawidSkene(2)``,
  default ``EM()``) on an independent channel sample of ``n_ch`` items (``--n-ch 0``:
  on the evaluation items themselves);
* ``oracle``: the paper's Gaussian Oracle ECE, the bin moments with the labels replaced
  by m(Z_i): ``sum_b |sum_{i in b} (m(Z_i) - Z_i)| / n``.

Every value above is the plug-in binned ECE (the paper's estimator). For the two NC-ECE
rows the library's default interval (``nc.ece(z, U, n_bins=...)``: the inverted test,
with the fitted channels' error carried by the delta method for ``nc_em``) is also
computed, with its default reported value (median-unbiased) and its status.

Reference values, by numerical integration over X (``scipy.integrate.quad``; exact up
to the quadrature tolerance): the paper's reference ``ECE(f) = E|m(Z) - Z|`` and the
population binned ECE of the same bins, ``sum_b |E[(m(Z) - Z) 1(Z in B_b)]|``, the
estimand of the intervals.

Defaults that are ours (the paper does not state them): ``n_ev = n_ch = 5000``,
``n_bins = 10`` (the bin count of the paper's other experiments), IV weights (the
paper's main aggregation rule elsewhere), level 0.9, an independent channel sample.

Usage::

    python benchmarks/gaussian_toy_table1.py --reps 200 --publish
    python benchmarks/gaussian_toy_table1.py --reps 5 --truths shifted

Writes ``benchmarks/output/gaussian_toy_table1.json`` (``--publish``: also the committed
``benchmarks/results/gaussian_toy_table1.json``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import integrate
from scipy.special import expit, logit

import noisycal as nc

TRUTHS = ("calibrated", "shifted", "nonlinear")
ESTIMATORS = ("majority_vote", "soft_vote", "nc_true", "nc_em", "oracle")
NC_ROWS = ("nc_true", "nc_em")
#: X is integrated over [-X_MAX, X_MAX]; the mixture's mass outside is below 1e-80.
X_MAX = 20.0


def _mixture_pdf(x: float) -> float:
    return 0.5 * (np.exp(-0.5 * (x + 1) ** 2) + np.exp(-0.5 * (x - 1) ** 2)) / np.sqrt(
        2 * np.pi)


def _gap(x: float, truth: str) -> float:
    z = expit(0.3 - x)
    return float(nc.simulate.gaussian_toy_truth(np.array([z]), truth)[0] - z)


def population(truth: str, n_bins: int) -> dict:
    """``ECE(f) = E|m(Z) - Z|`` and the population binned ECE, by quadrature over X.

    Bin b of Z, ``[lo, hi)``, is the X interval ``(0.3 - logit(hi), 0.3 - logit(lo)]``.
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # X bounds of the bins, from Z = 1 (X = -X_MAX) to Z = 0 (X = X_MAX)
    xs = np.clip(0.3 - logit(edges[::-1]), -X_MAX, X_MAX)
    kw = {"limit": 400, "epsabs": 1e-13, "epsrel": 1e-11}
    binned, unbinned = 0.0, 0.0
    for lo, hi in zip(xs[:-1], xs[1:], strict=True):
        signed, _ = integrate.quad(lambda x: _gap(x, truth) * _mixture_pdf(x), lo, hi, **kw)
        absolute, _ = integrate.quad(lambda x: abs(_gap(x, truth)) * _mixture_pdf(x), lo,
                                     hi, **kw)
        binned += abs(signed)
        unbinned += absolute
    return {"ece": unbinned, "ece_binned": binned}


def oracle_ece(z: np.ndarray, m: np.ndarray, n_bins: int) -> float:
    """The Gaussian Oracle ECE: the binned ECE of ``z`` against the labels ``m(Z_i)``."""
    target = nc.targets.soft(distribution=np.column_stack([1 - m, m]))
    return float(nc.ece(z, target, n_bins=n_bins, interval=None))


def _interval(e: object) -> dict:
    return {"plugin": float(e.details["plugin"]), "default": float(e), "low": float(e.low),
            "high": float(e.high), "status": e.status}


def replicate(truth: str, r: int, *, n_ev: int, n_ch: int, n_bins: int, weights: str,
              level: float, em: bool = True) -> dict:
    """One repetition: {estimator: plug-in value, or a dict for the NC-ECE rows}.

    Parameters
    ----------
    truth : {'calibrated', 'shifted', 'nonlinear'}
        The calibration curve m.
    r : int
        The repetition: the evaluation sample has seed ``r`` (the same scores for every
        truth), the channel sample ``1_000_000 + r``, the EM fit ``r``.
    n_ev, n_ch : int
        Evaluation and channel-sample sizes (``n_ch = 0``: channels fitted on the
        evaluation items).
    n_bins : int
        Equal-width bins of Z.
    weights : str
        Aggregation weights of the corrected target (``nc.targets.corrected``).
    level : float
        Level of the default interval of the NC-ECE rows.
    em : bool, default=True
        Fit the channels and compute the ``nc_em`` row (False: leave it out; the first
        interval with fitted channels compiles for seconds).

    Returns
    -------
    dict
    """
    A_true, B_true = nc.simulate.GAUSSIAN_TOY_A, nc.simulate.GAUSSIAN_TOY_B
    ev = nc.simulate.gaussian_toy(n_ev, truth=truth, seed=r)
    ann = nc.Annotations.from_wide(ev.annotations, classes=[0, 1])
    ch_ann = ann if n_ch == 0 else nc.Annotations.from_wide(
        nc.simulate.gaussian_toy(n_ch, truth=truth, seed=1_000_000 + r).annotations,
        classes=[0, 1])
    kw = {"n_bins": n_bins}
    out: dict = {
        "majority_vote": float(nc.ece(ev.z, nc.targets.voted(ann), interval=None, **kw)),
        "soft_vote": float(nc.ece(ev.z, nc.targets.soft(ann), interval=None, **kw)),
        "oracle": oracle_ece(ev.z, ev.m, n_bins),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        U = nc.targets.corrected(ann, a=A_true, b=B_true, weights=weights)
        out["nc_true"] = _interval(nc.ece(ev.z, U, level=level, seed=r, **kw))
        if not em:
            return out
        fit = nc.DawidSkene(2).fit(ch_ann, seed=r)
        out["fit_status"] = fit.status
        out["fitted_a"] = fit.confusion[:, 0, 1].tolist()
        out["fitted_b"] = fit.confusion[:, 1, 1].tolist()
        try:
            U = nc.targets.corrected(ann, fit, weights=weights)
            out["nc_em"] = _interval(nc.ece(ev.z, U, level=level, seed=r, **kw))
        except ValueError as exc:  # fitted channels that cannot be inverted
            out["nc_em_refused"] = str(exc)
    return out


def summarise(reps: list, pop: dict) -> dict:
    """Per estimator: mean, SD, bias and MAE against both references; interval rows."""
    rows = {}
    for est in ESTIMATORS:
        got = [rep[est] for rep in reps if est in rep]
        if not got:
            continue
        vals = np.array([g["plugin"] if est in NC_ROWS else g for g in got], float)
        row = {"runs": len(got), "mean": float(vals.mean()),
               "sd": float(vals.std(ddof=1)) if vals.size > 1 else float("nan"),
               "bias": float(np.mean(vals - pop["ece"])),
               "mae": float(np.mean(np.abs(vals - pop["ece"]))),
               "mae_se": float(np.std(np.abs(vals - pop["ece"]), ddof=1) / np.sqrt(vals.size))
               if vals.size > 1 else float("nan"),
               "mae_binned": float(np.mean(np.abs(vals - pop["ece_binned"])))}
        if est in NC_ROWS:
            lo = np.array([g["low"] for g in got])
            hi = np.array([g["high"] for g in got])
            default = np.array([g["default"] for g in got])
            statuses: dict = {}
            for g in got:
                statuses[g["status"]] = statuses.get(g["status"], 0) + 1
            row.update({
                "default_mean": float(default.mean()),
                "default_mae": float(np.mean(np.abs(default - pop["ece"]))),
                "coverage_binned": float(np.mean((lo <= pop["ece_binned"])
                                                 & (pop["ece_binned"] <= hi))),
                "coverage": float(np.mean((lo <= pop["ece"]) & (pop["ece"] <= hi))),
                "mean_width": float(np.mean(hi - lo)),
                "statuses": statuses})
        rows[est] = row
    out = {"population": pop, "rows": rows}
    fitted = [rep for rep in reps if "fit_status" in rep]
    if fitted:
        fits: dict = {}
        for rep in fitted:
            fits[rep["fit_status"]] = fits.get(rep["fit_status"], 0) + 1
        out.update({"fit_statuses": fits,
                    "refused": sum("nc_em_refused" in rep for rep in fitted),
                    "fitted_a_mean": np.mean([rep["fitted_a"] for rep in fitted], 0).tolist(),
                    "fitted_b_mean": np.mean([rep["fitted_b"] for rep in fitted], 0).tolist()})
    return out


def main(argv: list[str] | None = None) -> dict:
    from _output import add_publish_argument, write_result  # benchmarks/_output.py

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200,
                    help="repetitions per truth (the paper's Table 1: 200)")
    ap.add_argument("--truths", default=",".join(TRUTHS),
                    help=f"comma-separated, of {', '.join(TRUTHS)}")
    ap.add_argument("--n-ev", type=int, default=5000, help="evaluation items (ours)")
    ap.add_argument("--n-ch", type=int, default=5000,
                    help="channel-sample items for the EM fit; 0: the evaluation items (ours)")
    ap.add_argument("--n-bins", type=int, default=10,
                    help="equal-width bins (ours; the paper's other experiments use 10)")
    ap.add_argument("--weights", default="iv", help="corrected-target weights (ours)")
    ap.add_argument("--level", type=float, default=0.9, help="interval level (ours)")
    ap.add_argument("--out", default="gaussian_toy_table1")
    add_publish_argument(ap)
    args = ap.parse_args(argv)
    truths = [t for t in args.truths.split(",") if t]
    for t in truths:
        if t not in TRUTHS:
            raise ValueError(f"--truths: {t!r} is not one of {', '.join(TRUTHS)}")
    result: dict = {"reps": args.reps, "n_ev": args.n_ev, "n_ch": args.n_ch,
                    "n_bins": args.n_bins, "weights": args.weights, "level": args.level,
                    "paper_reps": 200, "a": nc.simulate.GAUSSIAN_TOY_A.tolist(),
                    "b": nc.simulate.GAUSSIAN_TOY_B.tolist(), "truths": {}}
    t0 = time.perf_counter()
    for truth in truths:
        pop = population(truth, args.n_bins)
        reps = [replicate(truth, r, n_ev=args.n_ev, n_ch=args.n_ch, n_bins=args.n_bins,
                          weights=args.weights, level=args.level) for r in range(args.reps)]
        result["truths"][truth] = summarise(reps, pop)
        rows = result["truths"][truth]["rows"]
        print(f"{truth}: ECE {pop['ece']:.4f} (binned {pop['ece_binned']:.4f}); "
              + "; ".join(f"{k} {v['mean']:.4f} +- {v['sd']:.4f} (MAE {v['mae']:.4f})"
                          for k, v in rows.items()), flush=True)
    result["seconds"] = time.perf_counter() - t0
    write_result(args.out, result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
