"""Benchmark: temperature scaling and Dirichlet calibration fits on 10,000 x 100 logits.

What is compared
----------------
On the same seeded n = 10,000 items with K = 100 classes (logits ``z ~ N(0, 3^2)``,
labels drawn from ``softmax(z / 1.8)``, so the true temperature is 1.8):

1. **Temperature scaling.** ``nc.calibrators.TemperatureScaling().fit(logits=z,
   target=y)``, the exact 1-D solve (Halley's root of the derivative in beta = 1/T from a
   subset's root refined by one single-precision pass, the limits decided first, every
   pass over cache-sized row blocks), against

   - netcal's ``TemperatureScaling(method='mle')`` (``netcal.scaling``), fitted to
     ``softmax(z)`` in float64 (computed before the clock starts: netcal takes
     probabilities and takes their log, clipped at float64's machine epsilon, which these
     logits never reach, so it sees ``z`` up to a per-row constant). netcal needs
     PyTorch, which noisycal does not install: without netcal this row is skipped with
     a line saying so;
   - the netcal-like stand-in used before netcal could be installed: scipy's L-BFGS-B
     on log T of the NLL from T = 1 with **finite-difference** gradients (scipy's default
     ``jac=None``);
   - scipy's L-BFGS-B on log T with the **analytic gradient**.

   The script checks that all give the same T to 1e-4 (relative) before it reports the
   ratios baseline / noisycal (target: at least 10x against netcal).

2. **Dirichlet calibration.** ``nc.calibrators.DirichletCalibration(reg_lambda=1e-3)
   .fit(logits=z, target=y)`` (``softmax(W log p + b)``, K^2 + K = 10,100 parameters,
   ODIR with lambda = mu = 1e-3, L-BFGS-B on JAX gradients) against a plain scipy
   L-BFGS-B on the same objective with a hand-written NumPy gradient, the same start
   (W = I, b = 0), box and tolerances. The script checks that the two objectives agree
   to 1e-6 (relative) and reports the ratio noisycal / scipy (target: within 2x). The
   JAX objective is compiled by one evaluation before the clock starts (reported
   separately). The script also profiles one objective-and-gradient evaluation of each
   (best of 5) and counts the JAX compilations of the shared objective
   (``_value_and_grad``'s cache size) during the timed fits, so that a recompilation per
   fit would show. ``--max-iter`` caps both fits at the same iteration limit.
   noisycal runs L-BFGS-B with BLAS limited to one thread
   (:func:`noisycal.calibrators.scaling.multiclass.single_thread_blas`); the baseline is timed
   under the same limit, and once more without it for ``--plain-iter`` iterations (the
   per-iteration cost of a plain scipy run).

Each fit is timed as the best of ``--repeat`` runs. Results are printed and written to
``benchmarks/output/bench_calibrators.json``.

Usage::

    python benchmarks/bench_calibrators.py                # n = 10,000, K = 100
    python benchmarks/bench_calibrators.py --quick        # n = 2,000, K = 20
    python benchmarks/bench_calibrators.py --repeat-dirichlet 1   # one timed Dirichlet fit
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
import warnings

import numpy as np
from _output import add_publish_argument, write_result  # benchmarks/_output.py (run as a script)
from scipy import optimize
from scipy.special import log_softmax, logsumexp, softmax

import noisycal as nc
from noisycal.calibrators.scaling.multiclass import LBFGS_FTOL, LBFGS_GTOL


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def _ts_nll(u, Z, y):
    """Mean NLL of softmax(z / T) at u = log T."""
    eta = Z * math.exp(-u[0])
    return float(np.mean(logsumexp(eta, axis=1) - eta[np.arange(y.size), y]))


def _ts_nll_grad(u, Z, y):
    beta = math.exp(-u[0])
    eta = Z * beta
    q = softmax(eta, axis=1)
    value = float(np.mean(logsumexp(eta, axis=1) - eta[np.arange(y.size), y]))
    d_beta = float(np.mean(np.sum(q * Z, axis=1) - Z[np.arange(y.size), y]))
    return value, np.array([-beta * d_beta])


def ts_scipy(Z, y, *, finite_differences):
    """L-BFGS-B on log T from T = 1, finite-difference or analytic gradient."""
    if finite_differences:
        res = optimize.minimize(_ts_nll, np.zeros(1), args=(Z, y), method="L-BFGS-B")
    else:
        res = optimize.minimize(_ts_nll_grad, np.zeros(1), args=(Z, y), jac=True,
                                method="L-BFGS-B")
    return float(math.exp(res.x[0])), res


def ts_netcal(P, y):
    """netcal's TemperatureScaling (method 'mle') on probabilities; T = 1 / its weight."""
    from netcal.scaling import TemperatureScaling as NetcalTS

    model = NetcalTS(method="mle", detection=False, use_cuda=False)
    model.fit(P, y, tensorboard=False)
    return 1.0 / float(np.ravel(model.temperature)[0])


def netcal_versions():
    """(netcal version, torch version), or None when netcal cannot be imported."""
    try:
        import netcal
        import torch
    except ImportError:
        return None
    return netcal.__version__, torch.__version__


def dirichlet_objective(S, T, lam, mu):
    """The Dirichlet/ODIR objective and its NumPy gradient, ``f(theta) -> (value, grad)``."""
    n, K = S.shape
    off = ~np.eye(K, dtype=bool)
    c_w, c_b = lam / (K * (K - 1)), mu / K

    def f(theta):
        W = theta[: K * K].reshape(K, K)
        b = theta[K * K:]
        eta = S @ W.T + b
        lq = log_softmax(eta, axis=1)
        value = -np.sum(T * lq) / n + c_w * np.sum(W[off] ** 2) + c_b * np.sum(b * b)
        G = (np.exp(lq) - T) / n  # rows of T sum to 1
        gW = G.T @ S + 2 * c_w * np.where(off, W, 0.0)
        gb = G.sum(0) + 2 * c_b * b
        return value, np.concatenate([gW.ravel(), gb])

    return f


def dirichlet_scipy(S, T, lam, mu, bounds, max_iter):
    """Plain scipy L-BFGS-B on the Dirichlet/ODIR objective with a NumPy gradient."""
    K = S.shape[1]
    f = dirichlet_objective(S, T, lam, mu)
    x0 = np.concatenate([np.eye(K).ravel(), np.zeros(K)])
    return optimize.minimize(f, x0, jac=True, method="L-BFGS-B",
                             bounds=[bounds] * (K * K + K),
                             options={"maxiter": max_iter, "ftol": LBFGS_FTOL,
                                      "gtol": LBFGS_GTOL})


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=2000,
                    help="L-BFGS-B iteration limit of both Dirichlet fits (the default of "
                         "DirichletCalibration)")
    ap.add_argument("--plain-iter", type=int, default=50,
                    help="iterations of the scipy baseline run without the BLAS limit")
    ap.add_argument("--repeat-dirichlet", type=int, default=None,
                    help="timed runs of each Dirichlet fit (default: --repeat)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="n = 2,000, K = 20")
    ap.add_argument("--skip-dirichlet", action="store_true")
    add_publish_argument(ap)
    args = ap.parse_args()
    n, K = (2000, 20) if args.quick else (args.n, args.k)
    rng = np.random.default_rng(args.seed)
    Z = rng.normal(0.0, 3.0, size=(n, K))
    y = (softmax(Z / 1.8, axis=1).cumsum(1) > rng.random((n, 1))).argmax(1)
    result = {"n": n, "K": K, "repeat": args.repeat, "platform": platform.platform(),
              "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg())}
    print(f"n = {n:,} items, K = {K} classes, best of {args.repeat}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    # ------------------------------------------------------------------ temperature
    t_nc, ts = _best(lambda: nc.calibrators.TemperatureScaling().fit(logits=Z, target=y),
                     args.repeat)
    t_fd, (T_fd, r_fd) = _best(lambda: ts_scipy(Z, y, finite_differences=True),
                               args.repeat)
    t_an, (T_an, r_an) = _best(lambda: ts_scipy(Z, y, finite_differences=False),
                               args.repeat)
    T_nc = ts.temperature_
    assert ts.status_ == "ok", ts.message_
    versions = netcal_versions()
    t_ncal = T_ncal = None
    if versions is not None:
        P = softmax(Z, axis=1)
        t_ncal, T_ncal = _best(lambda: ts_netcal(P, y), args.repeat)
        import torch
        result.update({"netcal_version": versions[0], "torch_version": versions[1],
                       "torch_threads": torch.get_num_threads(),
                       "ts_T_netcal": T_ncal, "ts_netcal_s": t_ncal,
                       "ratio_netcal_over_noisycal": t_ncal / t_nc})
    checks = [("finite differences", T_fd), ("analytic gradient", T_an)]
    if T_ncal is not None:
        checks.append(("netcal", T_ncal))
    for name, T in checks:
        assert abs(T - T_nc) <= 1e-4 * T_nc, (name, T, T_nc)
    result.update({
        "ts_T_noisycal": T_nc, "ts_T_scipy_fd": T_fd, "ts_T_scipy_analytic": T_an,
        "ts_noisycal_s": t_nc, "ts_scipy_fd_s": t_fd, "ts_scipy_analytic_s": t_an,
        "ts_scipy_fd_nfev": int(r_fd.nfev), "ts_scipy_analytic_nfev": int(r_an.nfev),
        "ts_noisycal_passes": ts.n_iter_,
        "ratio_fd_over_noisycal": t_fd / t_nc, "ratio_analytic_over_noisycal": t_an / t_nc,
    })
    print(f"temperature scaling (T: noisycal {T_nc:.8f}, scipy FD {T_fd:.8f}, "
          f"scipy analytic {T_an:.8f})")
    print(f"  noisycal exact 1-D solve ({ts.n_iter_} double-precision Halley pass(es)): "
          f"{t_nc * 1e3:9.2f} ms")
    if versions is None:
        print("  netcal: skipped (netcal/torch not installed)")
    else:
        print(f"  netcal {versions[0]} TemperatureScaling('mle') (torch {versions[1]}; "
              f"T {T_ncal:.8f}): {t_ncal * 1e3:9.2f} ms  ratio {t_ncal / t_nc:6.1f}x  "
              "(target >= 10x)")
    print(f"  netcal-like stand-in (scipy L-BFGS-B, finite differences, {r_fd.nfev} "
          f"evaluations): {t_fd * 1e3:9.2f} ms  ratio {t_fd / t_nc:6.1f}x  (target >= 10x)")
    print(f"  scipy L-BFGS-B, analytic gradient ({r_an.nfev} evaluations): "
          f"{t_an * 1e3:9.2f} ms  ratio {t_an / t_nc:6.1f}x")

    # ------------------------------------------------------------------ Dirichlet
    if not args.skip_dirichlet:
        from noisycal.calibrators.scaling.multiclass import _value_and_grad, single_thread_blas

        rep_dir = args.repeat if args.repeat_dirichlet is None else args.repeat_dirichlet

        def fit_dir():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a status other than ok is checked below
                return nc.calibrators.DirichletCalibration(
                    reg_lambda=1e-3, max_iter=args.max_iter).fit(logits=Z, target=y)

        S = log_softmax(Z, axis=1)
        T1 = np.eye(K)[y]
        # one objective-and-gradient evaluation of each at the start (W = I, b = 0); the
        # first JAX call compiles the objective that every fit of these shapes reuses
        from noisycal._util.jax import x64

        x0 = np.concatenate([np.eye(K).ravel(), np.zeros(K)])
        f_np = dirichlet_objective(S, T1, 1e-3, 1e-3)
        with x64():
            import jax.numpy as jnp

            Sj, Tj = jnp.asarray(S), jnp.asarray(T1)

            def f_jax():
                v, g = _value_and_grad(jnp.asarray(x0), Sj, Tj, 1e-3, 1e-3, kind="affine",
                                       loss="log", binary=False)
                return float(v), np.asarray(g)

            t0 = time.perf_counter()
            f_jax()
            t_first = time.perf_counter() - t0
            t_eval_jax, (v_j, g_j) = _best(f_jax, 5)
        t_eval_np, (v_n, g_n) = _best(lambda: f_np(x0), 5)
        assert abs(v_j - v_n) <= 1e-10 * abs(v_n) and np.allclose(g_j, g_n, rtol=0,
                                                                   atol=1e-12)
        cache_before = _value_and_grad._cache_size()
        t_dir, dc = _best(fit_dir, rep_dir)
        cache_after = _value_and_grad._cache_size()
        # the baseline runs under the same one-thread BLAS limit as noisycal's L-BFGS-B
        # (its NumPy gradient then also has one BLAS thread); a short run without the
        # limit gives the plain per-iteration cost
        with single_thread_blas():
            t_sp, sp = _best(lambda: dirichlet_scipy(S, T1, 1e-3, 1e-3, dc.bounds,
                                                     dc.max_iter), rep_dir)
        n_plain = min(args.plain_iter, dc.max_iter)
        t_plain, sp_plain = _best(lambda: dirichlet_scipy(S, T1, 1e-3, 1e-3, dc.bounds,
                                                          n_plain), 1)
        rel = abs(dc.objective_ - sp.fun) / abs(sp.fun)
        both_converged = dc.status_ == "ok" and bool(sp.success)
        if both_converged:
            assert rel <= 1e-6, (dc.objective_, sp.fun)
        else:  # capped by --max-iter: the two L-BFGS-B paths stop at different points
            print(f"  (not both converged: noisycal {dc.status_!r}, scipy "
                  f"{sp.message!r}; the objectives are not required to agree)")
        result.update({
            "dirichlet_max_iter": args.max_iter, "dirichlet_both_converged": both_converged,
            "dirichlet_status": dc.status_, "dirichlet_objective_noisycal": dc.objective_,
            "dirichlet_objective_scipy": float(sp.fun), "dirichlet_objective_rel_diff": rel,
            "dirichlet_compile_first_evaluation_s": t_first, "dirichlet_noisycal_s": t_dir,
            "dirichlet_scipy_s": t_sp, "dirichlet_noisycal_iterations": dc.n_iter_,
            "dirichlet_scipy_iterations": int(sp.nit),
            "ratio_dirichlet_noisycal_over_scipy": t_dir / t_sp,
            "dirichlet_repeat": rep_dir, "dirichlet_scipy_nfev": int(sp.nfev),
            "dirichlet_eval_jax_s": t_eval_jax, "dirichlet_eval_numpy_s": t_eval_np,
            "dirichlet_jax_compilations_during_timed_fits": cache_after - cache_before,
            "dirichlet_scipy_default_blas_threads_s_per_iteration":
                t_plain / max(1, int(sp_plain.nit)),
            "dirichlet_scipy_one_blas_thread_s_per_iteration": t_sp / max(1, int(sp.nit)),
            "dirichlet_noisycal_s_per_iteration": t_dir / max(1, dc.n_iter_),
        })
        print(f"Dirichlet calibration ({K * K + K:,} parameters; objectives "
              f"{dc.objective_:.10f} vs {sp.fun:.10f}, relative difference {rel:.1e}; "
              f"status {dc.status_!r})")
        print(f"  noisycal (JAX gradients), {dc.n_iter_} iterations: {t_dir:8.2f} s "
              f"(compiled before, by one evaluation: {t_first:.2f} s)")
        print(f"  plain scipy L-BFGS-B (NumPy gradient, one BLAS thread), {sp.nit} "
              f"iterations: {t_sp:8.2f} s")
        print(f"  ratio noisycal / scipy: {t_dir / t_sp:.2f}  (target <= 2)")
        print(f"  one objective + gradient: JAX {t_eval_jax * 1e3:.1f} ms, NumPy "
              f"{t_eval_np * 1e3:.1f} ms; scipy {sp.nfev} evaluations; JAX compilations "
              f"during the timed fits: {cache_after - cache_before}")
        print(f"  per iteration: noisycal {1e3 * t_dir / max(1, dc.n_iter_):.1f} ms, scipy "
              f"with one BLAS thread {1e3 * t_sp / max(1, int(sp.nit)):.1f} ms, scipy with "
              f"the default BLAS threads {1e3 * t_plain / max(1, int(sp_plain.nit)):.1f} ms "
              f"({sp_plain.nit} iterations)")
    write_result("bench_calibrators", result, publish=args.publish)
    return result


if __name__ == "__main__":
    main()
