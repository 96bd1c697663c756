"""Benchmark: LWCal and weighted isotonic regression against scikit-learn, on 1e6 scores.

What is compared
----------------
On the same n = 1,000,000 calibration scores with noisy 0/1 labels (a seeded
under-confident score, 20% symmetric label noise, scores rounded to 4 decimals so that
ties occur, as with tree ensembles):

- ``nc.calibrators.LWCal().fit(probs=p, target=y)``: the whole method (Eq. 1 loss,
  median/MAD weights, weighted isotonic regression with tie merging), against
- ``sklearn.isotonic.IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
  .fit(p, y, sample_weight=w)`` with LWCal's own weights ``w`` (the weighted isotonic fit
  alone, which is the part scikit-learn can do);
- ``noisycal.calibrators.isotonic.isotonic_regression(p, y, w)`` alone against the same
  scikit-learn call.

Before timing, the two fits' predictions are checked to agree to 1e-12 on the scores.
Each fit is timed as the best of ``--repeat`` runs (3). The target is LWCal within 3x of
scikit-learn's weighted isotonic fit (a ratio LWCal / sklearn below 3).

Also timed: the vectorised PAV on its own against scipy's compiled
``optimize.isotonic_regression`` (when scipy >= 1.12), on the sorted data and on an
adversarial sequence (a long increasing run ending in a large drop, where every
vectorised pass pools one block and the stack PAV finishes).

Results are printed and written to ``benchmarks/output/bench_isotonic.json``.

Usage::

    python benchmarks/bench_isotonic.py             # n = 1e6
    python benchmarks/bench_isotonic.py --n 100000  # smaller
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)

import noisycal as nc
from noisycal.calibrators.isotonic import (
    isotonic_predict,
    isotonic_regression,
    pool_adjacent_violators,
)


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    add_publish_argument(ap)
    args = ap.parse_args()
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(args.seed)
    z = rng.normal(0, 2, args.n)
    p = np.round(1 / (1 + np.exp(-0.6 * z)), 4)
    y = (rng.random(args.n) < 1 / (1 + np.exp(-z))).astype(np.int64)
    y = np.where(rng.random(args.n) < 0.2, 1 - y, y)
    yf = y.astype(np.float64)

    t_lw, lw = _best(lambda: nc.calibrators.LWCal().fit(probs=p, target=y), args.repeat)
    w = lw.weights_

    def sk_fit():
        return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
            p, yf, sample_weight=w)

    t_sk, sk = _best(sk_fit, args.repeat)
    t_iso, fit = _best(lambda: isotonic_regression(p, yf, w, y_min=0.0, y_max=1.0),
                       args.repeat)
    diff = float(np.max(np.abs(lw.predict_proba(probs=p) - sk.predict(p))))
    diff_iso = float(np.max(np.abs(isotonic_predict(fit.x_thresholds, fit.y_thresholds, p)
                                   - sk.predict(p))))
    assert diff <= 1e-12 and diff_iso <= 1e-12, (diff, diff_iso)

    # PAV alone: the items sorted by score, vs scipy's compiled PAV
    order = np.argsort(p, kind="stable")
    ys, ws = yf[order], w[order]
    adversarial = np.concatenate([np.linspace(0.0, 1.0, args.n - 1), [-1e6]])
    t_pav, _ = _best(lambda: pool_adjacent_violators(ys, ws), args.repeat)
    t_adv, _ = _best(lambda: pool_adjacent_violators(adversarial, np.ones(args.n)), 1)
    t_scipy = t_scipy_adv = None
    try:
        from scipy.optimize import isotonic_regression as scipy_iso

        t_scipy, _ = _best(lambda: scipy_iso(ys, weights=ws), args.repeat)
        t_scipy_adv, _ = _best(lambda: scipy_iso(adversarial), 1)
    except ImportError:  # scipy < 1.12
        pass

    result = {
        "n": args.n, "repeat": args.repeat, "platform": platform.platform(),
        "n_unique_scores": int(np.unique(p).size),
        "lwcal_fit_s": t_lw, "sklearn_weighted_isotonic_s": t_sk,
        "ratio_lwcal_over_sklearn": t_lw / t_sk,
        "noisycal_isotonic_s": t_iso, "ratio_isotonic_over_sklearn": t_iso / t_sk,
        "max_abs_diff_vs_sklearn": max(diff, diff_iso),
        "pav_sorted_s": t_pav, "scipy_pav_sorted_s": t_scipy,
        "pav_adversarial_s": t_adv, "scipy_pav_adversarial_s": t_scipy_adv,
    }
    print(f"n = {args.n:,} scores ({result['n_unique_scores']:,} distinct), "
          f"best of {args.repeat}")
    print(f"  LWCal fit (loss, weights, weighted isotonic): {t_lw:8.3f} s")
    print(f"  scikit-learn weighted IsotonicRegression:     {t_sk:8.3f} s")
    print(f"  ratio LWCal / scikit-learn:                   {t_lw / t_sk:8.2f}  (target < 3)")
    print(f"  noisycal isotonic_regression alone:           {t_iso:8.3f} s "
          f"(ratio {t_iso / t_sk:.2f})")
    print(f"  max |difference| of the predictions:          {max(diff, diff_iso):.1e}")
    print(f"  vectorised PAV on the items sorted by score:  {t_pav:8.3f} s"
          + (f"  (scipy compiled PAV {t_scipy:.3f} s)" if t_scipy is not None else ""))
    print(f"  adversarial sequence (stack finish):          {t_adv:8.3f} s"
          + (f"  (scipy {t_scipy_adv:.3f} s)" if t_scipy_adv is not None else ""))
    write_result("bench_isotonic", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
