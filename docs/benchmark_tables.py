"""The tables and numbers of the benchmark pages, computed from the published records.

``RENDERERS[name](records)`` gives the values of the placeholders of
``benchmark_templates/<name>.md.in``; ``records`` maps each result file the template's
header names to its record (``benchmarks/results/<file>.json``), or to None when it has
not been published. Nothing here holds a measured number: every figure is read from a
record (the targets and design constants too, where the script records them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

__all__ = ["RENDERERS"]

Record = dict | None

# -- formatting --------------------------------------------------------------------------


def num(x: object, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals; '-' for None or NaN, 'inf' for infinity."""
    if x is None or isinstance(x, str):
        return "-" if x in (None, "") else str(x)
    x = float(x)
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def sig(x: object, digits: int = 2) -> str:
    """``x`` in scientific notation (``1.0e-10``); '-' for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{float(x):.{digits - 1}e}"


def ratio(x: object, digits: int = 1) -> str:
    """``12.3x``."""
    return "-" if x is None else f"{float(x):.{digits}f}x"


def secs(x: object, digits: int = 2) -> str:
    """``1.23 s``."""
    return "-" if x is None else f"{float(x):.{digits}f} s"


def ms(x: object, digits: int = 1) -> str:
    """Seconds as ``12.3 ms``."""
    return "-" if x is None else f"{1e3 * float(x):.{digits}f} ms"


def pct(x: object, digits: int = 0) -> str:
    """A fraction as ``12%``."""
    return "-" if x is None else f"{100 * float(x):.{digits}f}%"


def count(x: object) -> str:
    """An integer with thousands separators."""
    return f"{int(x):,}"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]],
          align: Sequence[str] | None = None) -> str:
    """A Markdown pipe table; '|' inside a cell is escaped."""
    def cell(v: object) -> str:
        return str(v).replace("|", "\\|")

    rule = ["---" if a == "l" else "---:" for a in (align or "l" * len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def run_line(name: str, rec: Record) -> str:
    """When, how, where and with what the record was measured, as one paragraph."""
    if rec is None:
        return (f"Not published yet: run the command with `--publish` to write "
                f"`benchmarks/results/{name}.json`, then `python docs/benchmark_pages.py`.")
    run = rec["run"]
    day, start = run["started"][:10], run["started"][11:16]
    end = run["finished"][11:16]
    m = run["machine"]
    load = run["load_average"]
    v = dict(run["versions"])
    lib = f"noisycal {v.pop('noisycal')}"
    sha = run["commit"]["sha"]
    if sha:
        lib += f" at commit {sha[:7]}" + (" with local changes" if run["commit"]["dirty"]
                                           else "")
    others = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    return (f"Measured on {day}, {start}-{end} UTC ({run['wall_s']:.0f} s): "
            f"`{run['command']}` on {m['cpu_count']} CPUs ({m['cpu']}), load average "
            f"{load['start'][0]:.1f} at the start and {load['end'][0]:.1f} at the end "
            f"(1-minute; the machine is shared); {lib}, {others} "
            f"(`benchmarks/results/{name}.json`).")


def missing(name: str) -> str:
    """The table of a record that is not published: nothing (``run_line`` says so)."""
    return ""


def result(rec: Record) -> dict:
    return {} if rec is None else rec["result"]


def met(value: float, target: float, *, below: bool = False) -> str:
    """'met' or 'not met' for a target (at least ``target``, or at most with ``below``)."""
    ok = value <= target if below else value >= target
    return "met" if ok else "not met"


# -- pages -------------------------------------------------------------------------------

RENDERERS: dict[str, Callable[[dict[str, Record]], dict[str, str]]] = {}


def renderer(name: str) -> Callable:
    def register(f: Callable) -> Callable:
        RENDERERS[name] = f
        return f
    return register


def _mean(cell: object) -> float:
    """The mean of a ``'0.0096 ± 0.0002'`` cell (NaN for '-' or an empty cell)."""
    text = str(cell).split("±")[0].strip()
    try:
        return float(text)
    except ValueError:
        return math.nan


# -- the long studies (typed tables on their pages; these render a published rerun) -------


@renderer("coverage_study")
def _coverage_study(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    rows = result(rec).get("rows", [])
    body = table(
        ["scenario", "n", "population ECE", "method", "coverage (MC s.e.)",
         "lower end above / upper end below truth", "starts at 0", "mean width",
         "mean value", "mean plug-in", "reps"],
        [[r["scenario"], count(r["n"]), num(r["population_ece"], 4), r["method"],
          f"{num(r['coverage'])} ({num(r['mc_se'])})",
          f"{num(r['low_above_truth'])} / {num(r['high_below_truth'])}",
          num(r["starts_at_zero"], 2), num(r["mean_width"], 4), num(r["mean_value"], 4),
          num(r["mean_plugin"], 4), r["reps"]] for r in rows]) if rows else missing(name)
    return {"run": run_line(name, rec), "table": body}


@renderer("coverage_nc_ece")
def _coverage_nc_ece(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    kinds = [k for k in res.get("kinds", []) if k != "default"]
    rows = []
    for cell, s in res.get("cells", {}).items():
        d = s.get("default", {})
        row = [cell, num(s["population_ece"], 4),
               ", ".join(f"{k} {v}" for k, v in s["fit_statuses"].items()),
               f"{num(d.get('coverage'), 2)} ({num(d.get('coverage_ok'), 2)}; "
               f"{num(d.get('share_ok'), 2)})", num(d.get("mean_width"))]
        row += [num(s[k]["coverage"], 2) if k in s else "-" for k in kinds]
        rows.append(row)
    body = table(["design / n", "ECE", "fit statuses",
                  "default: coverage (ok-only; share ok)", "width"] + kinds,
                 rows) if rows else missing(name)
    return {"run": run_line(name, rec), "table": body}


@renderer("coverage_nc_ece_models")
def _coverage_nc_ece_models(records: dict[str, Record]) -> dict[str, str]:
    rows = []
    for rec in records.values():
        if rec is None:
            continue
        res = result(rec)
        for cell, s in res.get("cells", {}).items():
            for f in res.get("fits", []):
                x = s.get(f)
                if not x:
                    continue
                st = ", ".join(f"{k} {v}" for k, v in sorted(
                    x.get("statuses", {}).items(), key=lambda kv: -kv[1]))
                rows.append([cell, num(s["population_ece"], 4), f, x["runs"],
                             num(x["coverage"], 2),
                             num(x["coverage_ok"], 2) if x["coverage_ok"] is not None else "-",
                             num(x["share_ok"], 2),
                             f"{num(x['low_above'], 2)} / {num(x['high_below'], 2)}",
                             num(x["mean_width"], 3), num(x["mean_value"], 4), st])
    body = table(["design", "ECE", "interval", "runs", "coverage", "ok-only", "share ok",
                  "low above / high below", "width", "mean value", "statuses"],
                 rows) if rows else ""
    outside = [r for r in rows if not 0.85 <= float(r[4]) <= 0.95]
    if outside:
        body += ("\n\nOutside [0.85, 0.95] (coverage; share of runs with status ok; "
                 "statuses): " + "; ".join(f"{r[0]} {r[2]} {r[4]} (ok {r[6]}; {r[10]})"
                                          for r in outside) + ".")
    return {"run": "\n\n".join(run_line(n, rec) for n, rec in records.items()),
            "table": body}


@renderer("ppc_study")
def _ppc_study(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    sim = res.get("sim") or {}
    rows = [[r["check"], r["method"], r["discrepancy"], count(r["n_ppp"]),
             num(r["reject_two_sided"]), num(r["below_0.05"]), num(r["above_0.95"]),
             num(r["mean"]), num(r["sd"])] for r in sim.get("rows", [])]
    body = table(["check", "method", "discrepancy", "ppp values", "rejected at 0.05 "
                  "(two-sided)", "below 0.05", "above 0.95", "mean", "sd"],
                 rows) if rows else ""
    if sim:
        body = (f"{sim['reps']} data sets of {sim['n_items']} items, {sim['n_rep']} "
                f"replicates per check; fit statuses {sim['fit_status']}.\n\n" + body)
    c = res.get("cifar10n")
    if c:
        crow = [[check, x["discrepancy"], x["term"], num(x["observed"], 4),
                 num(x["replicated_mean"], 4), f"[{num(x['low'], 4)}, {num(x['high'], 4)}]",
                 num(x["ppp"])]
                for check in ("em_plugin", "em_refits", "nuts", "map_em_prior_plugin")
                if check in c for x in c[check]]
        cbody = (f"CIFAR-10N, first {count(c['n_items'])} images; fit statuses "
                 f"{c['fit_status']}; the EM and NUTS estimates differ by at most "
                 f"{num(c['max_abs_confusion_diff'], 4)} in a confusion entry and "
                 f"{num(c['max_abs_prevalence_diff'], 4)} in a prevalence"
                 + ("; mean fitted accuracy " + ", ".join(
                     f"{k} {num(v, 4)}" for k, v in c["mean_accuracy"].items())
                    if "mean_accuracy" in c else "") + ".\n\n"
                 + table(["check", "discrepancy", "term", "observed", "replicated mean",
                          "90% replicated range", "ppp"], crow))
    else:
        cbody = "CIFAR-10N: not run (the shared data were absent)."
    return {"run": run_line(name, rec), "table": body, "cifar10n": cbody}


@renderer("coverage_mce")
def _coverage_mce(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    rows = result(rec).get("rows", [])
    body = table(
        ["scenario", "n", "population ECE", "population MCE", "method", "coverage (MC s.e.)",
         "lower end above / upper end below truth", "mean width", "mean value",
         "bins in MCE", "estimate outside"],
        [[r["scenario"], count(r["n"]), num(r["population_ece"]), num(r["population_mce"], 4),
          r["method"], f"{num(r['coverage'])} ({num(r['mc_se'])})",
          f"{num(r['low_above_truth'])} / {num(r['high_below_truth'])}",
          num(r["mean_width"], 4), num(r["mean_value"], 4), num(r["mean_bins_in_mce"], 1),
          num(r["estimate_outside"], 2)] for r in rows]) if rows else missing(name)
    return {"run": run_line(name, rec), "table": body}


@renderer("noise_check_study")
def _noise_check_study(records: dict[str, Record]) -> dict[str, str]:
    rows, cells = [], [c for rec in records.values() for c in result(rec).get("cells", [])]
    for c in cells:
        for ref, rates in c["rates"].items():
            rows.append([c["cell"], num(c["slope"], 2), c["runs"], count(c["n_items"]),
                         f"{num(c['mean_statistic'], 1)} ({c['df']})",
                         num(c["mean_boot_mean"], 1), ref.removeprefix("p_"),
                         *(num(v) for v in rates.values())])
    levels = list(cells[0]["rates"]["p_chi2"]) if rows else []
    body = table(["cell", "slope", "runs", "items", "mean LR (df)", "mean bootstrap LR",
                  "reference", *(f"at {lv}" for lv in levels)], rows) if rows else ""
    run = "\n\n".join(run_line(n, rec) for n, rec in records.items())
    return {"run": run, "table": body}


@renderer("sbc_study")
def _sbc_study(records: dict[str, Record]) -> dict[str, str]:
    cells = {k: c for rec in records.values() for k, c in result(rec).items()}
    body = table(
        ["cell", "parameters", "smallest chi-square p", "smallest ECDF p", "failed fits",
         "sims relabelled", "status", "first sim (compile)", "per sim"],
        [[f"`{k}`", c["n_params"], f"{sig(c['min_chi2_p'])} ({c['min_chi2_p_param']})",
          f"{sig(c['min_ecdf_p'])} ({c['min_ecdf_p_param']})", c["failed_fits"],
          c["sims_relabelled"], c["status"], secs(c["first_sim_s"], 1),
          secs(c["median_sim_s"])] for k, c in cells.items()]) if cells else ""
    if cells:
        body += ("\n\n" + "; ".join(f"`{k}`: {c['n_sims']} simulations, {c['n_params']} "
                                       f"parameters, Bonferroni cut "
                                       f"{sig(0.01 / (2 * c['n_params']))}"
                                       for k, c in cells.items()) + ".")
    run = "\n\n".join(run_line(n, rec) for n, rec in records.items())
    return {"run": run, "table": body}


@renderer("identification_threshold")
def _identification_threshold(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    rows = []
    for design, d in res.get("designs", {}).items():
        r = [x for x in d["r"] if x is not None and not math.isnan(x)]
        r.sort()
        median = (r[len(r) // 2] + r[(len(r) - 1) // 2]) / 2 if r else math.nan
        rows.append([d["kind"], design, sig(min(r)) if r else "-", sig(median),
                     sig(max(r)) if r else "-",
                     sum(s == "ok" for s in d["statuses"]),
                     " / ".join(str(v) for v in d["below"].values())])
    cands = " / ".join(str(c) for c in res.get("candidates", []))
    body = table(["kind", "design", "r min", "r median", "r max", "fits ok",
                  f"seeds below {cands}"], rows) if rows else missing(name)
    well = [d for d in res.get("designs", {}).values() if d["kind"] == "well"]
    if well:
        total = sum(len(d["r"]) for d in well)
        below = " / ".join(str(sum(d["below"][c] for d in well)) for c in well[0]["below"])
        body += (f"\n\nIdentified designs: fits below {cands}: {below} of {total} (a fit "
                 f"below the default threshold is a false alarm).")
    if res.get("population"):
        body += "\n\nPopulation r (EM estimate on 200,000 items):\n\n" + table(
            ["design", "r"], [[k, sig(v)] for k, v in res["population"].items()])
    return {"run": run_line(name, rec), "table": body}


@renderer("gpu_suite")
def _gpu_suite(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    rows = res.get("rows", [])
    if not rows:
        return {"run": run_line(name, rec), "table": missing(name)}
    keys = [k for k in rows[0] if k != "workload"]
    body = (f"Backend: `{res['backend']}`" + (" (quick sizes)" if res.get("quick") else "")
            + "\n\n" + table(["workload", *keys],
                             [[r["workload"], *(num(r[k], 2) if isinstance(r[k], float)
                                                else r[k] for k in keys)] for r in rows]))
    return {"run": run_line(name, rec), "table": body}


def _clean(cell: object) -> str:
    """A ``'mean ± sd'`` cell as written: ``'nan ± nan'`` empty, ``'inf ± nan'`` 'inf'."""
    text = str(cell)
    if text in ("nan ± nan", "nan"):
        return ""
    return text.replace(" ± nan", "")


def _string_table(rows: list[dict], first: str = "method") -> str:
    """A table of records whose cells are already strings (``'0.0096 ± 0.0002'``)."""
    cols = [c for c in rows[0] if c != first and any(_clean(r[c]) for r in rows)]
    return table([first, *cols], [[r[first], *(_clean(r[c]) for c in cols)] for r in rows])


@renderer("cmce_synthetic")
def _cmce_synthetic(records: dict[str, Record]) -> dict[str, str]:
    out = {"verdict": ""}
    for (name, rec), key in zip(records.items(), ("", "_only"), strict=True):
        rows = result(rec).get("table", [])
        out[f"run{key}"] = run_line(name, rec)
        out[f"table{key}"] = _string_table(rows) if rows else missing(name)
    rows = result(next(iter(records.values()))).get("table", [])
    mean = {r["method"]: {c: _mean(r[c]) for c in ("NLL (true p)", "Brier (true p)", "CMCE",
                                                   "accuracy")}
            for r in rows if r["method"] != "True p"}
    mr = "MR a=0.1 MSP C"
    if mr in mean and "Base" in mean:
        lowest = {c: min(mean, key=lambda m: mean[m][c])
                  for c in ("NLL (true p)", "Brier (true p)", "CMCE")}
        cut = mean["Base"]["CMCE"] / mean[mr]["CMCE"]
        below = [m for m in mean if mean[m]["CMCE"] < mean[mr]["CMCE"]]
        out["verdict"] = (
            f"- The paper's claim for MR (MSP, C, alpha = 0.1), the lowest NLL and Brier "
            f"against the true p: lowest NLL here {lowest['NLL (true p)']}, lowest Brier "
            f"{lowest['Brier (true p)']}; MR cuts CMCE from "
            f"{num(mean['Base']['CMCE'], 4)} to {num(mean[mr]['CMCE'], 4)} "
            f"({ratio(cut)}).\n"
            f"- Lower CMCE than MR's: {', '.join(below) if below else 'none'}; the lowest "
            f"is {lowest['CMCE']}'s ({num(mean[lowest['CMCE']]['CMCE'], 4)}).\n"
            f"- Accuracy: Base {num(mean['Base']['accuracy'], 4)}; the one-vs-rest maps "
            + ", ".join(f"{m} {num(mean[m]['accuracy'], 4)}" for m in mean
                        if "OvR" in m) + ".")
    return out


# -- "Adaptive Set-Mass Calibration with Conformal Prediction" ----------------------------

#: The paper's CIFAR-10 ResNet-20 values (its Tables 4 and 6): (row, column) -> value.
#: Typed from the paper (a citation, not a measurement of ours).
PAPER_SET_MASS_R20 = {
    ("Base", "CMCE"): 0.0067, ("Base", "ECE"): 0.0393, ("Base", "cov[0.9,0.92]"): 0.7654,
    ("Temp. scaling", "CMCE"): 0.0025, ("Dirichlet (diag.)", "CMCE"): 0.0016,
    ("Platt (OvR)", "CMCE"): 0.0056, ("Naive CMCE", "CMCE"): 0.0015,
    ("MR a=0.01 MSP C", "CMCE"): 0.0052, ("TS (ours) a=0.01 MSP C", "CMCE"): 0.0027,
    ("TS (ours) a=0.01 MSP C", "cov[0.99,0.995]"): 0.9947,
    ("TS (ours) a=0.1 MSP C", "CMCE"): 0.0230, ("TS (ours) a=0.3 MSP C", "CMCE"): 0.0812,
}
#: Its Isotonic, Venn–Abers (OvA) and Ada-TS rows on ResNet-20 and ResNet-56 (Tables 4, 5):
#: CMCE, ECE, MCE, cwECE, NLL, Brier, cov[0.9,0.92], cov[0.99,0.995].
PAPER_SET_MASS_BASELINES = {
    "Isotonic (OvR)": ("Isotonic", (0.0031, 0.0156, 0.3468, 0.0057, 0.3079, 0.1138, 0.9082,
                                    0.9823),
                       (0.0032, 0.0132, 0.2883, 0.0052, 0.2661, 0.0870, 0.8997, 0.9889)),
    "V.-Abers (OvR)": ("V.-Abers (OvA)", (0.0096, 0.0204, 0.2186, 0.0073, 0.2450, 0.1140,
                                          0.9574, 0.9993),
                       (0.0090, 0.0196, 0.2547, 0.0069, 0.1981, 0.0875, 0.9608, 0.9985)),
    "Ada-TS (ATS)": ("Ada-TS", (0.0031, 0.0284, 0.3457, 0.0073, 0.3219, 0.1185, 0.9103,
                                0.9864),
                     (0.0028, 0.0199, 0.3185, 0.0057, 0.2472, 0.0890, 0.9473, 0.9919)),
}
SET_MASS_COLUMNS = ("CMCE", "ECE", "MCE", "cwECE", "NLL", "Brier", "cov[0.9,0.92]",
                    "cov[0.99,0.995]")


@renderer("cmce_cifar10_table")
def _cmce_cifar10_table(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), (tname, trec) = records.items()
    res, rows = result(rec), result(rec).get("table", [])
    by = {r["method"]: r for r in rows}
    out = {"run": run_line(name, rec), "run_tight": run_line(tname, trec),
           "accuracy": "", "table": missing(name), "paper_table": "", "ranking": "",
           "paper_baselines": ""}
    tight = result(trec).get("table", [])
    out["table_tight"] = _string_table(tight) if tight else missing(tname)
    if not rows:
        return out
    out["accuracy"] = (f"{res['n_splits']} splits, {secs(res['seconds'], 0)} in all; "
                       f"DenseNet-40's accuracy on all 10,000 test images "
                       f"{num(res['accuracy_base'], 4)}.")
    cols = [c for c in rows[0] if c not in ("method", "NLL (+1e-12)")]
    cols = [c for c in cols if any(_clean(r[c]) for r in rows)]
    out["table"] = table(["method", *cols],
                         [[r["method"], *(_clean(r[c]) if c != "NLL" or not r.get("NLL (+1e-12)")
                                          else f"{_clean(r[c])} ({r['NLL (+1e-12)']} with "
                                               f"+1e-12)" for c in cols)] for r in rows])
    out["paper_table"] = table(
        ["row", "column", "paper, ResNet-20", "ours, DenseNet-40"],
        [[m, c, num(v, 4), num(_mean(by[m][c]), 4)]
         for (m, c), v in PAPER_SET_MASS_R20.items() if m in by])
    mean = {m: {c: _mean(r[c]) for c in SET_MASS_COLUMNS} for m, r in by.items()}
    single = [m for m in ("Temp. scaling", "Dirichlet (diag.)", "Platt (OvR)", "Ada-TS (ATS)",
                          "Naive CMCE", "TS (ours) a=0.01 MSP C") if m in mean]
    best = min(single, key=lambda m: mean[m]["CMCE"])
    platt_worse = all(mean["Platt (OvR)"][c] > mean["Base"][c] for c in ("CMCE", "ECE"))
    ts_worse = [a for a in ("0.1", "0.3")
                if mean[f"TS (ours) a={a} MSP C"]["CMCE"] > mean["Base"]["CMCE"]]
    out["ranking"] = (
        f"Among the single-temperature maps and one-vs-rest Platt the lowest mean CMCE is "
        f"{best}'s ({num(mean[best]['CMCE'], 4)}; in the paper the naive CMCE "
        f"temperature's). One-vs-rest Platt is "
        f"{'worse' if platt_worse else 'not worse'} than Base on both CMCE and ECE "
        f"({num(mean['Platt (OvR)']['CMCE'], 4)} and {num(mean['Platt (OvR)']['ECE'], 4)} "
        f"against {num(mean['Base']['CMCE'], 4)} and {num(mean['Base']['ECE'], 4)}), and "
        f"TS (ours) with MSP sets and the constant threshold is worse than Base on CMCE "
        + {2: "at both alpha = 0.1 and 0.3", 0: "at neither alpha = 0.1 nor 0.3"}.get(
            len(ts_worse), f"at alpha = {ts_worse[0]} only")
        + " (in the paper at both).")
    prow = []
    for m, (pname, r20, r56) in PAPER_SET_MASS_BASELINES.items():
        if m in by:
            prow.append([f"{m}, DenseNet-40 (ours)",
                         *(str(by[m][c]).split(" ±")[0] for c in SET_MASS_COLUMNS)])
            prow.append([f"{pname}, paper ResNet-20 / ResNet-56",
                         *(f"{num(a, 4)} / {num(b, 4)}" for a, b in zip(r20, r56,
                                                                       strict=True))])
    out["paper_baselines"] = table(["method", *SET_MASS_COLUMNS], prow)
    return out


# -- "Confidence Calibration under Ambiguous Ground Truth" --------------------------------

#: The paper's ECE_true (%) beside ours: ResNet-50 on CIFAR-10H and RoBERTa-large on
#: ChaosNLI (its Table 2; '*': its Table 4, seed 42; in parentheses: read off its
#: reliability figures). Typed from the paper (a citation, not a measurement of ours).
PAPER_AMBIGUOUS = {
    "Uncalibrated": ("4.97", "27.79"), "TS": ("4.29", "10.55"), "Platt": ("4.29", "11.16"),
    "Dirichlet-Hard": ("4.46", "11.55"), "ATS": ("4.40", "11.36"), "HB": ("(6.8)", "(8.2)"),
    "SLTS": ("1.51", "3.22"), "MCTS": ("1.45", "2.82"), "VS": ("1.35", "3.46"),
    "SoftPlatt": ("1.52", "2.66"), "Dirichlet-Soft": ("1.25", "2.57"),
    "HB-Soft": ("(4.6)", "(1.0)"), "IR-Soft": ("0.72", "2.65"), "LS-TS": ("1.57", "4.16"),
    "Fixed-LS": ("7.44*", "6.46*"), "Ent-LS": ("3.16*", "3.17*"), "C-LS": ("1.48*", "4.15*"),
    "Oracle TS": ("1.50", "3.48"),
}
SOFT_ROWS = ("SLTS", "MCTS", "VS", "SoftPlatt", "IR-Soft", "Dirichlet-Soft")
VOTED_ROWS = ("TS", "ATS", "Platt", "Dirichlet-Hard")
DATASETS = {"cifar10h": "CIFAR-10H / DenseNet-40", "chaosnli": "ChaosNLI / RoBERTa-base"}


def _stats(values: list[float]) -> tuple[float, float]:
    """Mean and SD (ddof 1) of the finite values."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return math.nan, math.nan
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else math.nan
    return m, sd


def _by_method(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["method"], []).append(r)
    return out


def _pm(values: list[float], digits: int = 2) -> str:
    m, sd = _stats(values)
    if math.isnan(m):
        return "-"
    return num(m, digits) + ("" if math.isnan(sd) else f" ± {num(sd, digits)}")


def _ambiguous_claims(rows: list[dict]) -> dict[str, str]:
    """One cell per claim of the paper for one dataset."""
    seeds = sorted({r["seed"] for r in rows})
    e = {s: {r["method"]: r["ece_true_mc"] for r in rows if r["seed"] == s} for s in seeds}
    t = {s: {r["method"]: r["T"] for r in rows if r["seed"] == s} for s in seeds}
    n = len(seeds)
    mean = {m: _stats([e[s][m] for s in seeds])[0] for m in e[seeds[0]]}

    def beats(soft: tuple, voted: tuple) -> tuple[int, list[str]]:
        fails = []
        for s in seeds:
            worst = max(soft, key=lambda m: e[s][m])
            best = min(voted, key=lambda m: e[s][m])
            if e[s][worst] >= e[s][best]:
                fails.append(f"seed {s}: {best} {num(e[s][best], 2)} < {worst} "
                             f"{num(e[s][worst], 2)}")
        return n - len(fails), fails

    def cut(m: str) -> str:
        on_means = 1 - mean[m] / mean["TS"]
        per = [1 - e[s][m] / e[s]["TS"] for s in seeds]
        text = f"{pct(on_means)} ({pct(min(per))} to {pct(max(per))} per seed)"
        if on_means < 0:
            text += f": {num(mean[m] / mean['TS'], 1)} times worse"
        return text

    def lowest(m: str) -> int:
        return sum(min((k for k in e[s] if not k.startswith("Oracle")),
                       key=lambda k: e[s][k]) == m for s in seeds)

    ok, fails = beats(SOFT_ROWS, VOTED_ROWS)
    ok_hb, fails_hb = beats(SOFT_ROWS + ("HB-Soft",), VOTED_ROWS + ("HB",))
    ats = sum(e[s]["ATS"] > e[s]["TS"] for s in seeds)
    return {
        "t": f"{sum(t[s]['SLTS'] > t[s]['TS'] > 1 for s in seeds)}/{n} seeds",
        "soft": (f"{ok}/{n} seeds" + (f" ({'; '.join(fails)})" if fails else "")
                 + f"; {ok_hb}/{n} with HB and HB-Soft"
                 + (f" ({'; '.join(f for f in fails_hb if f not in fails)})"
                    if set(fails_hb) - set(fails) else "")),
        "mcts": f"max {num(max(abs(e[s]['MCTS'] - e[s]['SLTS']) for s in seeds), 2)}",
        "ats": (f"ATS worse in {ats}/{n} seeds; on the means {num(mean['ATS'], 2)} vs "
                f"{num(mean['TS'], 2)}"),
        "dirichlet": cut("Dirichlet-Soft"),
        "lsts": cut("LS-TS"),
        "irsoft": f"{cut('IR-Soft')}; lowest in {lowest('IR-Soft')}/{n} seeds",
        "hbsoft": f"{cut('HB-Soft')}; lowest non-oracle row in {lowest('HB-Soft')}/{n} seeds",
    }


CLAIMS = (
    ("t", "T_SLTS > T_TS > 1 (8/8 settings)"),
    ("soft", "every soft method beats every voted one on ECE_true"),
    ("mcts", "|MCTS S=1 − SLTS| ≤ 0.6 points (8/8 settings)"),
    ("ats", "ATS does not beat TS (8/8 settings)"),
    ("dirichlet", "Dirichlet-Soft cuts ECE_true by 71-84% vs TS on CIFAR-10H and ChaosNLI "
                  "(Section 7; 55-87% on the medical benchmarks)"),
    ("lsts", "LS-TS cuts ECE_true by 9-77% vs TS"),
    ("irsoft", "IR-Soft gives the lowest ECE_true (6/8 settings; cuts of 75-92% vs TS)"),
    ("hbsoft", "HB-Soft (figures only)"),
)


@renderer("ambiguous_gt_tables")
def _ambiguous_gt(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), (aname, arec), (bname, brec) = records.items()
    res = result(rec)
    out = {"run": run_line(name, rec), "run_auto": run_line(aname, arec),
           "run_bootstrap": run_line(bname, brec)}
    data = {k: res[k] for k in DATASETS if isinstance(res.get(k), dict) and res[k]}
    per = {k: _by_method(v["table"]) for k, v in data.items() if "table" in v}
    if per:
        methods = list(next(iter(per.values())))
        head = ["method"]
        for k in per:
            short = "C10H" if k == "cifar10h" else "NLI"
            head += [f"{short} T", f"{short} ECE_true",
                     "paper R50" if k == "cifar10h" else "paper RoB-L",
                     f"{short} aECE", f"{short} cwECE", f"{short} Brier", f"{short} NLL"]
        rows = []
        for m in methods:
            row, bad = [m], []
            for j, (k, by) in enumerate(per.items()):
                rs = by.get(m, [])
                vals = {c: [r[c] for r in rs] for c in ("T", "ece_true_mc", "aece_true_mc",
                                                        "cwece_true_mc", "brier_expected",
                                                        "nll")}
                row += [_pm(vals["T"]), _pm(vals["ece_true_mc"]),
                        PAPER_AMBIGUOUS.get(m, ("", ""))[j],
                        num(_stats(vals["aece_true_mc"])[0], 2),
                        num(_stats(vals["cwece_true_mc"])[0], 2),
                        num(_stats(vals["brier_expected"])[0]), _nll(vals["nll"])]
                bad += sorted({f"{k}: {r['status']}" for r in rs if r["status"] != "ok"})
            rows.append(row if not bad else [f"{m} ({'; '.join(bad)})", *row[1:]])
        out["table"] = (f"{res['seeds']} seeds, {res['n_draws']} label draws, top-label maps "
                        f"scored with the {res['predicted_class']} predicted class.\n\n"
                        + table(head, rows))
        notes = []
        for k, by in per.items():
            mc = {m: _stats([r["ece_true_mc"] for r in rs])[0] for m, rs in by.items()}
            ex = {m: _stats([r["ece_true_expected"] for r in rs])[0] for m, rs in by.items()}
            gap = max(abs(mc[m] - ex[m]) for m in mc)
            voted = {m: _stats([r["ece_voted"] for r in rs])[0] for m, rs in by.items()}
            nonok = sum(r["status"] != "ok" for rs in by.values() for r in rs)
            notes.append(
                f"- {DATASETS[k]}: the expected form of ECE_true is within "
                f"{num(gap, 2)} points of the Monte-Carlo form for every row; against the "
                f"voted labels the ranking reverses (voted ECE: TS {num(voted['TS'], 2)}%, "
                f"ATS {num(voted['ATS'], 2)}%, SLTS {num(voted['SLTS'], 2)}%); "
                f"{nonok} fits of {sum(len(rs) for rs in by.values())} were not `ok`.")
        out["notes"] = "\n".join(notes)
        out["claims"] = table(
            ["claim (paper)", *(DATASETS[k] for k in per)],
            [[label, *(_ambiguous_claims(data[k]["table"])[key] for k in per)]
             for key, label in CLAIMS])
        c10 = per.get("cifar10h", {})
        out["ls_t"] = (f"on CIFAR-10H T is {_pm([r['T'] for r in c10['LS-TS']])} for LS-TS "
                       f"against {_pm([r['T'] for r in c10['SLTS']])} for SLTS"
                       if c10 else "")
    else:
        out.update(table="", notes="", claims="", ls_t="")
    conv = {k: v["mcts"] for k, v in data.items() if "mcts" in v}
    if conv:
        keys = list(conv)
        rows = []
        for i, r0 in enumerate(conv[keys[0]]):
            row = [r0["S"]]
            for k in keys:
                r = conv[k][i]
                row += [num(r["T mean"], 4), "-" if r["S"] == "SLTS" else num(r["T sd"], 4)]
            rows.append(row)
        head = ["S"] + [f"{DATASETS[k].split(' /')[0]} {c}" for k in keys
                        for c in ("mean T", "SD of T")]
        sd = {k: {r["S"]: r["T sd"] for r in v} for k, v in conv.items()}
        ratios = "; ".join(f"{DATASETS[k].split(' /')[0]} {num(sd[k][1] / sd[k][200], 1)}"
                           for k in keys if 1 in sd[k] and 200 in sd[k])
        out["mcts"] = (table(head, rows) + f"\n\nThe SD at S = 1 over the SD at S = 200: "
                       f"{ratios} (theory: the square root of 200, about 14; the paper "
                       f"reports 13.7).")
    else:
        out["mcts"] = ""
    auto, boot = result(arec), result(brec)
    if auto or boot:
        keys = [k for k in DATASETS if k in auto or k in boot]
        head = ["method"]
        for k in keys:
            short = DATASETS[k].split(" /")[0]
            head += [f"{short} ECE_true", "inverted 90%", "percentile bootstrap 90%"]
        methods = [r["method"] for r in (auto or boot)[keys[0]]]
        rows = []
        for m in methods:
            row = [m]
            for k in keys:
                a = {r["method"]: r for r in auto.get(k, [])}.get(m)
                b = {r["method"]: r for r in boot.get(k, [])}.get(m)
                ref = a or b
                row += [num(ref["ece_true_expected"], 2),
                        _iv(a), _iv(b)]
            rows.append(row)
        out["within"] = table(head, rows)
        soft, voted = SOFT_ROWS + ("HB-Soft",), VOTED_ROWS + ("HB",)
        lines = []
        for k in keys:
            for label, rec_ in (("inverted", auto), ("percentile bootstrap", boot)):
                by = {r["method"]: r for r in rec_.get(k, [])}
                if all(m in by for m in soft + voted):
                    below = (max(by[m]["ece_true_expected_hi"] for m in soft)
                             < min(by[m]["ece_true_expected_lo"] for m in voted))
                    lines.append(f"{DATASETS[k].split(' /')[0]}, {label}: every soft row's "
                                 f"interval lies {'entirely' if below else 'NOT entirely'} "
                                 f"below every voted row's")
        out["within"] += ("\n\nSoft rows (SLTS, MCTS, VS, SoftPlatt, Dirichlet-Soft, HB-Soft, "
                          "IR-Soft) against voted rows (TS, Platt, Dirichlet-Hard, ATS, HB): "
                          + "; ".join(lines) + ".")
    else:
        out["within"] = ""
    return out


def _iv(r: dict | None) -> str:
    if r is None:
        return "-"
    return f"[{num(r['ece_true_expected_lo'], 2)}, {num(r['ece_true_expected_hi'], 2)}]"


def _nll(values: list[float]) -> str:
    if any(v is not None and math.isinf(v) for v in values):
        return "inf"
    return num(_stats(values)[0])


@renderer("bench_cmce")
def _bench_cmce(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "verdict": ""}
    body = table(
        ["n x K", "CMCE", "`nc.cmce`", "`np.sort`", "ratio", "peak memory / input",
         f"conformal TS ({r['ts_evaluations']} steps)", "one softmax", "ratio per step"],
        [[f"{count(r['n'])} x {count(r['K'])}", num(r["cmce"], 6), secs(r["t_cmce"], 3),
          secs(r["t_sort"], 3), ratio(r["ratio_cmce_sort"], 2), num(r["ratio_memory"], 2),
          secs(r["t_ts"], 2), secs(r["t_softmax"], 3), num(r["ratio_ts_per_step"], 2)]])
    verdict = (f"Targets: CMCE within 3x a sort {met(r['ratio_cmce_sort'], 3, below=True)} "
               f"({ratio(r['ratio_cmce_sort'], 2)}); memory below 2x the input "
               f"{met(r['ratio_memory'], 2, below=True)}; the conformal step within 5x a "
               f"softmax {met(r['ratio_ts_per_step'], 5, below=True)}. The input is "
               f"{num(r['input_bytes'] / 2**20, 0)} MiB.")
    return {"run": run_line(name, rec), "table": body, "verdict": verdict}


@renderer("lwcal_cifar10n")
def _lwcal_cifar10n(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "setup": "", "table": "", "gate": ""}
    setup = (f"{count(r['n_calibration'])} calibration and {count(r['n_test'])} test "
             f"images; the three annotators' label error rates on the calibration items: "
             f"{', '.join(num(e) for e in r['annotator_error_rates'])}; Dawid–Skene EM "
             f"status `{r['ds_status']}`.")
    body = table(["method (calibration labels)", "ECE x 100", "Brier", "NLL"],
                 [[x["method"], num(100 * x["ece"]), num(x["brier"], 4), num(x["nll"], 4)]
                  for x in r["rows"]])
    rho = r["gated_rho"]
    gate = (f"Gated-LWCal's blend weight rho is {num(rho, 3)} (disagreement "
            f"{num(r['gated_disagreement'], 3)} between the thresholded score and the noisy "
            f"label)" + (": no raw score is mixed in, so it equals LWCal." if rho == 0
                         else "."))
    return {"run": run_line(name, rec), "setup": setup, "table": body, "gate": gate}


@renderer("conformal_sets")
def _conformal_sets(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    out = {"run": run_line(name, rec), "sim_head": "", "simulation": "", "cifar": "",
           "mapie": ""}
    if not r:
        return out
    sim = r["simulation"]
    methods = [m for m in sim if isinstance(sim[m], dict)]
    out["sim_head"] = (f"{sim['seeds']} seeds, mean over seeds ± Monte Carlo s.e.; exact "
                       f"target {num(sim['target'], 4)}")
    out["simulation"] = table(
        ["sets", "coverage ± MC s.e.", "mean size", "class coverage min / max"],
        [[m, f"{num(sim[m]['coverage'], 4)} ± {num(sim[m]['mc_se'], 4)}",
          num(sim[m]["mean_size"], 2),
          f"{num(sim[m]['class_coverage_min'])} / {num(sim[m]['class_coverage_max'])}"]
         for m in methods])
    c = r.get("cifar10_densenet40")
    if c:
        vt = c["val -> test"]
        split_key = next(k for k in c if k.startswith("mean over"))
        sp = c[split_key]
        out["cifar"] = table(
            ["sets", "val -> test: coverage [90%]", "size [90%]", "empty",
             f"{split_key}: coverage (sd)", "size", "empty"],
            [[m, f"{num(vt[m]['coverage'])} [{num(vt[m]['coverage_interval'][0])}, "
                 f"{num(vt[m]['coverage_interval'][1])}]",
              f"{num(vt[m]['mean_size'], 2)} [{num(vt[m]['size_interval'][0], 2)}, "
              f"{num(vt[m]['size_interval'][1], 2)}]", pct(vt[m]["empty"], 1),
              f"{num(sp[m]['coverage'])} ({num(sp[m]['coverage_sd'])})",
              num(sp[m]["mean_size"], 2), pct(sp[m]["empty"], 1)] for m in vt])
    if r.get("mapie"):
        mp = r["mapie"]
        out["mapie"] = table(
            ["", "ours", "MAPIE"],
            [["threshold", repr(mp["quantile_ours"]), repr(mp["quantile_mapie"])],
             ["identical sets", pct(mp["identical_share"], 1) + " of rows; "
              + pct(mp["identical_share_without_ties"], 1) + " without a float tie", ""],
             ["mean size / coverage / empty",
              f"{num(mp['mean_size_ours'])} / {num(mp['coverage_ours'])} / "
              f"{pct(mp['empty_ours'], 1)}",
              f"{num(mp['mean_size_mapie'])} / {num(mp['coverage_mapie'])} / "
              f"{pct(mp['empty_mapie'], 1)}"]])
    return out


@renderer("bad_modes_study")
def _bad_modes_study(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": ""}
    rows = []
    for x in r["rows"]:
        runs = x["runs"]
        flagged = x.get("channel_flags")
        if x["bad"]:
            rate = f"detection {num(x['non_ok'] / runs, 2)}"
        elif flagged is not None:
            rate = f"false alarm {num(flagged / runs, 2)}"
        else:
            rate = ""
        est = "" if x["ok_estimates"] is None else f"{x['ok_estimates']}/{runs}"
        rows.append([x["design"], x["method"].upper(), runs, rate,
                     ", ".join(f"{k} {v}" for k, v in x["statuses"].items()), est])
    body = (f"{r['seeds']} seeds per design, {count(r['n_items'])} items per binary data "
            f"set:\n\n" + table(["design", "engine", "runs", "rate", "fit statuses",
                                  "ok Estimates (ECE vs posterior target)"], rows))
    return {"run": run_line(name, rec), "table": body}


@renderer("cifar10n_targets")
def _cifar10n_targets(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "verdict": ""}
    groups: dict[tuple, list[dict]] = {}
    for x in r["rows"]:
        groups.setdefault((x["map"], x["target"]), []).append(x)

    def cell(rows: list[dict], key: str) -> str:
        m, sd = _stats([x[key] for x in rows])
        return f"{num(m, 4)} ({num(sd, 4)})"

    body = table(["map", "target", "ECE", "NLL", "Brier", "T", "fits not ok"],
                 [[m, t, cell(rs, "ece"), cell(rs, "nll"), cell(rs, "brier"),
                   num(_stats([x["T"] for x in rs])[0], 2) if "T" in rs[0] else "",
                   sum(x["status"] != "ok" for x in rs)]
                  for (m, t), rs in groups.items()])
    lines = []
    for m in dict.fromkeys(k[0] for k in groups if k[0] != "uncalibrated"):
        mean = {t: {s: _stats([x[s] for x in rs])[0] for s in ("ece", "nll", "brier")}
                for (mm, t), rs in groups.items() if mm == m and t != "clean"}
        best = {s: min(mean, key=lambda t: mean[t][s]) for s in ("ece", "nll", "brier")}
        lines.append(f"- {m}: among the targets a user has, the lowest clean ECE comes "
                     f"from the {best['ece']} target, the lowest NLL from the "
                     f"{best['nll']} target, the lowest Brier score from the "
                     f"{best['brier']} target.")
    bad = [x for x in r["rows"] if x["status"] != "ok"]
    if bad:
        lines.append("- Fits not ok (kept in the means): " + "; ".join(
            f"{x['map']} to the {x['target']} target, seed {x['seed']}: `{x['status']}`"
            for x in bad) + ".")
    return {"run": run_line(name, rec), "table": body, "verdict": "\n".join(lines)}


@renderer("bench_isotonic")
def _bench_isotonic(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "verdict": ""}
    sk = r["sklearn_weighted_isotonic_s"]
    body = table(
        [f"n = {count(r['n'])} ({count(r['n_unique_scores'])} distinct scores), best of "
         f"{r['repeat']}", "time", "ratio to scikit-learn"],
        [["LWCal fit (loss, weights, weighted isotonic)", secs(r["lwcal_fit_s"]),
          ratio(r["ratio_lwcal_over_sklearn"], 2)],
         ["noisycal `isotonic_regression` alone", secs(r["noisycal_isotonic_s"]),
          ratio(r["ratio_isotonic_over_sklearn"], 2)],
         ["scikit-learn weighted `IsotonicRegression`", secs(sk), ratio(1, 0)],
         ["vectorised PAV, items sorted by score", secs(r["pav_sorted_s"]), ""],
         ["scipy's compiled PAV, the same items", secs(r["scipy_pav_sorted_s"]), ""],
         ["vectorised PAV, adversarial sequence", secs(r["pav_adversarial_s"]), ""],
         ["scipy's compiled PAV, adversarial sequence", secs(r["scipy_pav_adversarial_s"]),
          ""]])
    verdict = (f"Target LWCal / scikit-learn below 3x: "
               f"{met(r['ratio_lwcal_over_sklearn'], 3, below=True)} "
               f"({ratio(r['ratio_lwcal_over_sklearn'], 2)}). Largest difference of the "
               f"predictions: {sig(r['max_abs_diff_vs_sklearn'])}.")
    return {"run": run_line(name, rec), "table": body, "verdict": verdict}


@renderer("bench_dask")
def _bench_dask(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": ""}
    head = (f"n = {count(r['n'])}, K = {r['k']}, float32, {r['blocks']} blocks of "
            f"{count(r['rows_per_block'])} rows, {r['threads']} threads, median of "
            f"{r['reps']}; dask {r['dask']}:\n\n")
    body = table(["case", "NumPy", "Dask", "Dask / NumPy"],
                 [[c["case"], secs(c["numpy_s"]), secs(c["dask_s"]), num(c["ratio"], 2)]
                  for c in r["cases"]], align="lrrr")
    return {"run": run_line(name, rec), "table": head + body}


@renderer("bench_calibrators")
def _bench_calibrators(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    out = {"run": run_line(name, rec), "ts_table": "", "ts_verdict": "", "dirichlet": ""}
    if not r:
        return out
    t = r["ts_noisycal_s"]
    rows = [[f"noisycal exact 1-D solve ({r['ts_noisycal_passes']} double-precision "
             f"pass(es))", ms(t, 2), "1", num(r["ts_T_noisycal"], 8)]]
    if "ts_netcal_s" in r:
        rows.append([f"netcal {r['netcal_version']} `TemperatureScaling('mle')` (torch "
                     f"{r['torch_version']}, {r['torch_threads']} threads)",
                     ms(r["ts_netcal_s"], 2), ratio(r["ratio_netcal_over_noisycal"]),
                     num(r["ts_T_netcal"], 8)])
    rows += [[f"scipy L-BFGS-B, finite differences ({r['ts_scipy_fd_nfev']} evaluations)",
              ms(r["ts_scipy_fd_s"], 2), ratio(r["ratio_fd_over_noisycal"]),
              num(r["ts_T_scipy_fd"], 8)],
             [f"scipy L-BFGS-B, analytic gradient ({r['ts_scipy_analytic_nfev']} "
              f"evaluations)", ms(r["ts_scipy_analytic_s"], 2),
              ratio(r["ratio_analytic_over_noisycal"]), num(r["ts_T_scipy_analytic"], 8)]]
    out["ts_table"] = (f"Temperature scaling, n = {count(r['n'])}, K = {r['K']}, best of "
                       f"{r['repeat']}:\n\n"
                       + table(["fit", "time", "ratio to noisycal", "T"], rows))
    if "ratio_netcal_over_noisycal" in r:
        out["ts_verdict"] = (f"Target at least 10x against netcal: "
                             f"{met(r['ratio_netcal_over_noisycal'], 10)} in this run "
                             f"({ratio(r['ratio_netcal_over_noisycal'])}).")
    else:
        out["ts_verdict"] = ("netcal was not installed in the environment of this run, so "
                             "the target against it is not measured here.")
    if "dirichlet_noisycal_s" in r:
        out["dirichlet"] = table(
            ["fit", "time", "L-BFGS-B iterations", "per iteration"],
            [["noisycal `DirichletCalibration` (JAX gradients, one BLAS thread)",
              secs(r["dirichlet_noisycal_s"], 1), r["dirichlet_noisycal_iterations"],
              ms(r["dirichlet_noisycal_s_per_iteration"], 0)],
             ["plain scipy L-BFGS-B, NumPy gradient, one BLAS thread",
              secs(r["dirichlet_scipy_s"], 1), r["dirichlet_scipy_iterations"],
              ms(r["dirichlet_scipy_one_blas_thread_s_per_iteration"], 0)],
             ["ratio noisycal / scipy (target: within 2x)",
              num(r["ratio_dirichlet_noisycal_over_scipy"], 2), "", ""]])
    return out


@renderer("bench_nuts")
def _bench_nuts(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "agreement": ""}
    nc_, b = r["noisycal"], r.get("baseline")
    head = (f"{r['num_chains']} chains x ({r['num_warmup']} + {r['num_samples']}), "
            f"sequential on both sides:\n\n")
    if b is None:
        return {"run": run_line(name, rec), "table": head + table(
            ["run", "noisycal"], [["cold", secs(nc_["cold_s"])], ["warm", secs(nc_["warm_s"])]]),
            "agreement": f"Baseline not run: {r['baseline_error']}"}
    target = r["target_speedup"]
    rows = [[run, secs(nc_[f"{run}_s"]), secs(b[f"{run}_s"]), ratio(r["speedup"][run], 2),
             met(r["speedup"][run], target)] for run in ("cold", "warm")]
    body = head + table(["run", "noisycal", "baseline", "ratio", f"target {target:g}x"],
                        rows)
    a = r["agreement"]
    agreement = (
        f"noisycal's fit: status `{nc_['status']}`, max R-hat {num(nc_['max_rhat'])}, "
        f"min bulk ESS {num(nc_['min_ess_bulk'], 0)}, {nc_['num_divergences']} divergences. "
        f"Agreement (warm runs): {len(a['baseline_relabelled_chains'])} of "
        f"{r['num_chains']} baseline chains needed a permutation; the largest |difference| of "
        f"posterior means is {sig(a['prevalence']['max_abs_diff'])} (prevalence) and "
        f"{sig(a['confusion']['max_abs_diff'])} (confusion) against a median combined MCSE "
        f"of {sig(a['confusion']['median_combined_mcse'])}; the largest |d| / MCSE over the "
        f"{a['n_entries']} entries is {num(a['max_z'], 2)} ({a['n_entries_z_above_2']} above "
        f"2): {'within' if a['agree'] else 'NOT within'} the threshold of 4. Posterior mean "
        f"prevalence: noisycal ({', '.join(num(v) for v in a['prevalence']['mean_noisycal'])}"
        f"), baseline ({', '.join(num(v) for v in a['prevalence']['mean_baseline'])}).")
    return {"run": run_line(name, rec), "table": body, "agreement": agreement}


@renderer("bench_em")
def _bench_em(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "verdict": "", "memory": ""}
    rows, verdict, memory = [], [], []
    for s in r["sizes"]:
        nc_, ck = s["noisycal"], s.get("crowdkit")
        row = [s["design"], f"{count(s['n'])} x {s['ratings_per_item']} of "
               f"{s['n_annotators']}", count(nc_["memory"]["n_patterns"]),
               f"{num(s['load_avg_start'][0], 1)}, {num(s.get('load_avg_end', [math.nan])[0], 1)}",
               secs(nc_["build_annotations_s"]),
               f"{', '.join(num(t, 2) for t in nc_['fit_runs_s'])} s: **{secs(nc_['fit_s'])}** "
               f"(CPU {secs(nc_['fit_cpu_s'])})", secs(nc_["compile_first_fit_s"])]
        if ck:
            row += [f"{secs(ck['fit_s'])} (CPU {secs(ck['fit_cpu_s'])})",
                    f"**{ratio(s['speedup'])}**", ratio(s["speedup_cpu"]),
                    ratio(s["speedup_including_build"]),
                    sig(s["max_abs_difference"]["posterior"])]
            if s["meets_target"] is not None:
                verdict.append(f"{s['design']} {met(s['speedup'], r['target_speedup'])} "
                               f"({ratio(s['speedup'])}; CPU {ratio(s['speedup_cpu'])})")
        else:
            row += ["-"] * 5
        rows.append(row)
        m = nc_["memory"]
        memory.append(f"{s['design']} {num(m['bytes_per_rating'], 1)}")
    body = table(["design", "items x ratings of annotators", "EM rows (patterns)",
                  "load (start, end)", "`Annotations.from_arrays` (separate)",
                  "noisycal fit: timed runs, median (CPU)", "compile + first fit",
                  "crowd-kit fit (CPU)", "ratio", "CPU ratio",
                  "ratio counting both input builds", "max posterior difference"], rows)
    target = (f"Target: at least {r['target_speedup']:g}x at n = {count(r['target_n'])}: "
              + ("; ".join(verdict) if verdict else "not assessed in this run") + ".")
    mem = ("Engine memory, bytes per rating (index arrays, slot layout and float64 "
           "per-row arrays, as the script counts them): " + ", ".join(memory) + ".")
    return {"run": run_line(name, rec), "table": body, "verdict": target, "memory": mem}


@renderer("bench_metrics")
def _bench_metrics(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), (mname, mrec) = records.items()
    r = result(rec)
    out = {"run": run_line(name, rec), "run_memory": run_line(mname, mrec), "speed": "",
           "verdict": "", "intervals": "", "poisson": "", "ucal": "", "memory": ""}
    if r:
        np_ = r["numpy_loop"]
        out["speed"] = (
            f"n = {count(r['n'])}, K = {r['n_classes']}, {r['n_bins']} bins, "
            f"{pct(r['level'])} interval; the NumPy loop ran {np_['replicates_run']} "
            f"replicates, {ms(np_['per_replicate_s'], 0)} each, extrapolated to each B:\n\n"
            + table(["B", "scheme", "compile + first run", "timed run", "NumPy loop",
                     "ratio", "target"],
                    [[b, v["scheme"], secs(v["compile_first_s"]), secs(v["total_s"], 3),
                      secs(v["numpy_total_s"], 1), f"**{ratio(v['speedup'])}**",
                      "" if v["target"] is None else
                      f"{v['target']:g}x: {met(v['speedup'], v['target'])}"]
                     for b, v in r["noisycal"].items()]))
        runs = r["noisycal"]
        b_max = max(runs, key=int)
        iv = runs[b_max]["interval"]
        text = (f"At B = {b_max} the binned interval is [{num(iv[0], 6)}, {num(iv[1], 6)}] "
                f"(point ECE {num(r['point_ece']['noisycal'], 6)})")
        ex = r.get("noisycal_exact")
        if ex:
            e = ex["interval"]
            text += (f"; the exact item bootstrap's (another seed, "
                     f"{secs(ex['total_s_with_compile'], 1)} with compilation) is "
                     f"[{num(e[0], 6)}, {num(e[1], 6)}]: the ends differ by "
                     f"{sig(abs(e[0] - iv[0]))} and {sig(abs(e[1] - iv[1]))}")
        out["intervals"] = text + "."
        pois = [p for p in r.get("noisycal_poisson", []) if "failed" not in p]
        if pois:
            out["poisson"] = "Poisson bootstrap, same data and NumPy loop:\n\n" + table(
                ["B", "device(s)", "compile + first run", "timed run", "ratio vs NumPy loop",
                 "90% interval", "vs 1 device"],
                [[p["n_boot"], p["devices"] if p["devices"] == 1
                  else f"{p['devices']} forced host, own process",
                  secs(p["compile_first_s"]), secs(p["total_s"]), ratio(p["speedup"]),
                  f"[{num(p['interval'][0], 6)}, {num(p['interval'][1], 6)}]",
                  sig(p["interval_diff_vs_1"]) if "interval_diff_vs_1" in p else ""]
                 for p in pois])
        u = r.get("uncertainty_calibration", {})
        out["ucal"] = (
            f"uncertainty-calibration {u['version']} at n = {count(u['n'])}, K = "
            f"{u['n_classes']}: {ms(u['ucal_per_replicate_s'])} per replicate against "
            f"noisycal's {ms(u['noisycal_per_replicate_s'], 3)}, "
            f"{ratio(u['ratio'], 0)}." if u.get("installed")
            else "uncertainty-calibration was not installed in this run.")
        verdicts = [f"{v['target']:g}x at B = {b} {met(v['speedup'], v['target'])}"
                    for b, v in runs.items() if v["target"] is not None]
        out["verdict"] = "Targets: " + "; ".join(verdicts) + "." if verdicts else ""
    m = result(mrec)
    if m:
        cases = [c for c in m.get("cases", []) if "failed" not in c]
        mib = num(cases[0]["input_bytes"] / 2**20, 0) if cases else "-"
        out["memory"] = (
            f"n = {count(m['n'])}, K = {m['n_classes']}, float32 probabilities ({mib} "
            f"MiB) and int64 labels; {m['memory_boot']} bootstrap replicates; one fresh "
            f"process per case; multiples of the probability matrix in parentheses:\n\n")
        out["memory"] += table(
            ["case", "NumPy peak", "peak RSS growth", "seconds"],
            [[c["case"], f"{num(c['tracemalloc_peak_bytes'] / 2**20, 0)} MiB "
              f"({num(c['tracemalloc_peak_bytes'] / c['input_bytes'], 2)}x)",
              f"{num(c['rss_peak_growth_bytes'] / 2**20, 0)} MiB "
              f"({num(c['rss_peak_growth_bytes'] / c['input_bytes'], 2)}x)",
              num(c["seconds"], 1)] for c in m.get("cases", []) if "failed" not in c])
    return out


_FIRST_CALL_MODES = ("cold", "cache-fill", "cache-warm", "cache-warm-blas1")


def _first_call_row(mode: str, x: dict) -> list[str]:
    """One process's row of a bench_first_call table: modules, first fit and its phases,
    second fit, ratio to crowd-kit's first fit."""
    ph = x["first_fit_phases_s"]
    return [mode, secs(x["modules_s"]),
            f"**{secs(x['first_fit_s'])}**: {secs(ph['multistart_em'])} + "
            f"{secs(ph['ds_identification'])}", secs(x["second_fit_s"]),
            ratio(x["ratio_to_crowdkit"]) if "ratio_to_crowdkit" in x else "-"]


def _first_call_with_imports(x: dict | None, ck: dict | None) -> str:
    """The cold process's whole first call against crowd-kit's, imports counted ('' when
    either is missing): noisycal's import, the modules the fit needs and the first fit;
    crowd-kit's import and first fit."""
    if not x or not ck:
        return ""
    ours = x["import_s"] + x["modules_s"] + x["first_fit_s"]
    theirs = ck["import_s"] + ck["first_fit_s"]
    return (f" Counting imports, the cold process took {secs(ours)} (import, modules, first "
            f"fit) against crowd-kit's {secs(theirs)} (import, first fit): "
            f"{ratio(ours / theirs, 2)}.")


def _first_call_simulated(sim: dict | None) -> str:
    """The simulated design's table of a bench_first_call record ('' when the record has
    none: the records before the design was added)."""
    if not sim:
        return ""
    modes = [m for m in _FIRST_CALL_MODES if m in sim]
    ck = sim.get("crowdkit")
    head = (f"Simulated with `nc.simulate.dawid_skene` (seed {sim['seed']}): "
            f"{count(sim['n_items'])} items, {sim['n_annotators']} annotators each rating "
            f"every item ({count(sim['n_ratings'])} ratings), {sim['n_classes']} classes, "
            f"{sim['prevalence']} prevalence, each annotator's confusion matrix "
            f"{num(sim['accuracy'], 2)} on the diagonal and {num(sim['off_diagonal'], 4)} "
            f"elsewhere. noisycal's processes and crowd-kit's read the same ratings.\n\n")
    rows = []
    for m in modes:
        x = sim[m]
        rows.append(_first_call_row(m, x) + [
            f"{num(x['map_accuracy'], 4)} (`{x['status']}`, {x['n_iter']} iterations)",
            num(x.get("map_agreement_crowdkit"), 4)])
    body = head + table(["process", "modules the fit needs",
                         "first fit: EM + identification", "second fit",
                         "first fit / crowd-kit's", "MAP accuracy (status)",
                         "MAP labels equal to crowd-kit's"], rows)
    if ck:
        body += (f"\n\ncrowd-kit's first fit: {secs(ck['first_fit_s'])} ({ck['n_iter']} "
                 f"iterations; its import {secs(ck['import_s'])}); its MAP labels' "
                 f"accuracy {num(ck['map_accuracy'], 4)}."
                 + _first_call_with_imports(sim.get("cold"), ck))
    return body


def _first_call_one(name: str, rec: Record) -> dict[str, str]:
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "import_line": "", "table": "", "fits": "",
                "simulated": "", "replications": ""}
    imp = r["import"]
    import_line = (f"`import noisycal`: {secs(imp['import_median_s'])} (median of fresh "
                   f"processes less an empty interpreter's "
                   f"{secs(imp['empty_interpreter_median_s'])}); `-X importtime`: "
                   f"{secs(imp['importtime_cumulative_s'])}. {count(r['n_items'])} "
                   f"CIFAR-10N items.")
    modes = [m for m in _FIRST_CALL_MODES if m in r]
    ck = r.get("crowdkit")
    rows = []
    for m in modes:
        rows.append(_first_call_row(m, r[m]))
    body = table(["process", "modules the fit needs",
                  "first fit: EM + identification", "second fit",
                  "first fit / crowd-kit's"], rows)
    if ck:
        body += (f"\n\ncrowd-kit's first fit: {secs(ck['first_fit_s'])} ({ck['n_iter']} "
                 f"iterations; its import {secs(ck['import_s'])})."
                 + _first_call_with_imports(r.get("cold"), ck))
    fits = ""
    if modes:  # CIFAR-10N measured (its data were found)
        same = {(r[m]["loglik"], r[m]["n_iter"], r[m]["status"]) for m in modes}
        x = r[modes[0]]
        fits = (f"Every process gave the same fit (log-likelihood {num(x['loglik'], 6)}, "
                f"{x['n_iter']} iterations, {x['n_patterns']} rating patterns, status "
                f"`{x['status']}`)." if len(same) == 1 else
                "The processes did not all give the same fit: " + "; ".join(
                    f"{m}: {r[m]['loglik']}, {r[m]['n_iter']}, {r[m]['status']}"
                    for m in modes) + ".")
    else:
        body = "CIFAR-10N not measured (its data were not found)."
    rep = r.get("replications")
    reps = ""
    if rep:
        reps = (f"{len(rep['n_patterns'])} simulated data sets of "
                f"{count(rep['n_items'])} items in one process (rating patterns "
                f"{', '.join(str(v) for v in rep['n_patterns'])}):\n\n" + table(
                    ["model", "first fit", "later fits: median", "later fits: total",
                     "each later fit"],
                    [[m, secs(rep[m]["first_s"]), secs(rep[m]["later_median_s"], 3),
                      secs(rep[m]["later_total_s"]),
                      ", ".join(f"{v:.2f}" for v in rep["seconds"][m][1:])]
                     for m in ("dawid_skene", "mace", "dawid_skene_mle_complete")
                     if m in rep], "lrrrl"))
    return {"run": run_line(name, rec), "import_line": import_line, "table": body,
            "fits": fits, "simulated": _first_call_simulated(r.get("simulated")),
            "replications": reps}


def _with_before(records: dict[str, Record],
                 one: Callable[[str, Record], dict[str, str]]) -> dict[str, str]:
    """``one``'s fields of every record, those of a ``*_before`` record suffixed
    ``_before``."""
    out = {}
    for name, rec in records.items():
        suffix = "_before" if name.endswith("_before") else ""
        out.update({k + suffix: v for k, v in one(name, rec).items()})
    return out


@renderer("bench_first_call")
def _bench_first_call(records: dict[str, Record]) -> dict[str, str]:
    return _with_before(records, _first_call_one)


def _first_nuts_one(name: str, rec: Record) -> dict[str, str]:
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": ""}
    goal = r["goal_s"]
    rows = []
    for model in r["models"]:
        for mode in ("cold", "cache-fill", "cache-warm"):
            x = r[model].get(mode)
            if x is None:
                continue
            first, arviz = x["first_fit_s"], x["first_to_arviz_s"]
            rows.append([model if mode == "cold" else "", mode, secs(first), secs(arviz),
                         secs(x["new_data_fit_s"]), f"`{x['status']}`",
                         met(max(first, arviz), goal, below=True)
                         if mode == "cache-warm" else ""])
    x = r[r["models"][0]]["cold"]
    head = (f"{x['n_items'][0]} patients ({x['n_patterns'][0]} rating patterns) for the "
            f"first fit, {x['n_items'][1]} ({x['n_patterns'][1]} patterns) for the new "
            f"data; {r['num_chains']} chains x ({r['num_warmup']} + {r['num_samples']}).\n\n")
    return {"run": run_line(name, rec), "table": head + table(
        ["model", "process", "first fit", "first to_arviz()", "new data, same process",
         "status", f"warm: both under {goal:g} s"], rows, "llrrrll")}


@renderer("bench_first_nuts")
def _bench_first_nuts(records: dict[str, Record]) -> dict[str, str]:
    return _with_before(records, _first_nuts_one)


def _nc_memory_rows(r: dict) -> tuple[list, list, list]:
    """(simulated rows, CIFAR-10N rows, compare rows) of a bench_nc_memory record."""
    sim, cifar, comp = [], [], []
    goal = r.get("goal_peak_bytes", 1e9)
    for c in r.get("cases", []):
        if "failed" in c:
            sim.append([c["case"], "failed", "", "", "", "", ""])
        elif c["case"] == "simulated":
            sim.append([count(c["n"]), f"{c['peak_growth_bytes'] / 2**20:,.0f} MiB",
                        ratio(c["peak_growth_bytes"] / c["input_bytes"]),
                        met(c["peak_growth_bytes"], goal, below=True) if c["n"] == 50_000
                        else "-", secs(c["seconds"], 1), secs(c["fit_and_target_s"], 1),
                        f"{num(c['value'], 4)} [{num(c['interval'][0], 4)}, "
                        f"{num(c['interval'][1], 4)}] `{c['status']}`"])
        elif c["case"] == "cifar10n":
            cifar.append([count(c["n_fitted"]), count(c["n_scored"]), secs(c["fit_s"], 1),
                          secs(c["target_s"], 1), secs(c["seconds"], 1),
                          f"**{secs(c['total_s'], 1)}** "
                          f"({met(c['total_s'], r['goal_cifar10n_s'], below=True)})",
                          f"{c['peak_growth_bytes'] / 2**20:,.0f} MiB",
                          f"{num(c['value'], 4)} [{num(c['interval'][0], 4)}, "
                          f"{num(c['interval'][1], 4)}] `{c['status']}`"])
        elif c["case"] == "compare":
            x = c["peak_growth_bytes"] / c["input_bytes"]
            comp.append([count(c["n_ratings"]), f"{c['peak_growth_bytes'] / 2**20:,.0f} MiB",
                         f"{ratio(x, 2)} ({met(x, r['goal_compare_ratio'], below=True)})",
                         secs(c["seconds"])])
    return sim, cifar, comp


@renderer("bench_nc_memory")
def _bench_nc_memory(records: dict[str, Record]) -> dict[str, str]:
    out = {}
    for name, rec in records.items():
        key = "before" if name.endswith("_before") else "after"
        r = result(rec)
        sim, cifar, comp = _nc_memory_rows(r) if r else ([], [], [])
        parts = []
        if sim:
            parts.append(table(["items", "NC-ECE peak growth", "x probabilities",
                                "goal (<= 1 GB at 50,000)", "NC-ECE time",
                                "fit + target time", "NC-ECE [90%] status"], sim,
                               "rrrlrrl"))
        if cifar:
            parts.append(table(["images fitted", "images scored", "DS fit", "target",
                                "NC-ECE", "total (goal < 60 s)", "NC-ECE peak growth",
                                "NC-ECE [90%] status"], cifar, "rrrrrrrl"))
        if comp:
            parts.append(table(["ratings", "peak growth", "x ratings' arrays (goal <= 2)",
                                "time"], comp, "rrrr"))
        out[f"run_{key}"] = run_line(name, rec)
        out[f"table_{key}"] = "\n\n".join(parts)
    return out


@renderer("bench_nuts_patterns")
def _bench_nuts_patterns(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "verdict": ""}
    body = (f"Data: {r['source']}; {count(r['n_items'])} items, {count(r['n_patterns'])} "
            f"distinct rating patterns ({num(r['n_items'] / r['n_patterns'], 1)} items per "
            f"pattern); {r['chains']} chains x ({r['warmup']} + {r['samples']}).\n\n"
            + table(["patterns cold", "patterns warm", "full cold", "full warm",
                     "ratio cold", "ratio warm", "max \\|diff\\| / MCSE", "public fit"],
                    [[secs(r["patterns_cold_s"], 1), secs(r["patterns_warm_s"], 1),
                      secs(r["full_cold_s"], 1), secs(r["full_warm_s"], 1),
                      ratio(r["ratio_cold"], 2), f"**{ratio(r['ratio_warm'], 2)}**",
                      f"{num(r['max_z'], 2)} ({r['n_entries']} entries)",
                      f"{secs(r['public_fit_s'], 1)} (`{r['public_status']}`)"]]))
    verdict = (f"Target at least 3x warm: {met(r['ratio_warm'], 3)}; the posterior means "
               f"{'agree' if r['max_z'] < 4 else 'do NOT agree'} within Monte-Carlo error; "
               f"item posteriors differ by at most {sig(r['max_item_posterior_diff'])}.")
    return {"run": run_line(name, rec), "table": body, "verdict": verdict}


@renderer("bench_hierarchical")
def _bench_hierarchical(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": ""}
    runs = r["runs"]
    rows = []
    for kind, title in (("dawid_skene", "Dawid–Skene NUTS"),
                        ("hierarchical", "hierarchical DS NUTS")):
        c, w = runs[f"{kind}_cold"], runs[f"{kind}_warm"]
        rows.append([title, secs(c["seconds"], 1), secs(w["seconds"], 1),
                     num(w["mean_leapfrog_steps"], 1), num(w["max_rhat"]),
                     num(w["min_ess_bulk"], 0), w["num_divergences"], f"`{w['status']}`"])
    rows.append(["**ratio**", f"**{ratio(r['ratio']['cold'], 2)}**",
                 f"**{ratio(r['ratio']['warm'], 2)}**", "", "", "", "", ""])
    body = (f"Data: {r['source']}, {count(r['n_items'])} items, {count(r['n_ratings'])} "
            f"ratings; {r['num_chains']} chains x ({r['num_warmup']} + "
            f"{r['num_samples']}); diagnostics of the warm fits.\n\n"
            + table(["fit", "cold (compile + run)", "warm (cached program)",
                     "mean leapfrog steps", "max R-hat", "min bulk ESS", "divergences",
                     "status"], rows)
            + f"\n\nGoal at most 3x: cold {met(r['ratio']['cold'], 3, below=True)}, warm "
              f"{met(r['ratio']['warm'], 3, below=True)}. Largest difference between the "
              f"two posterior-mean channels: {num(r['max_mean_channel_difference'])}.")
    return {"run": run_line(name, rec), "table": body}


@renderer("bound_study")
def _bound_study(records: dict[str, Record]) -> dict[str, str]:
    rows, cells, failed = [], [], 0
    for rec in records.values():
        failed += sum(result(rec).get("failed_fits", {}).values())
        cells += result(rec).get("table", [])
    order = {"positive_class": 0, "top_label": 1, "classwise": 2}
    cells.sort(key=lambda x: (x["K"], order.get(x["kind"], 3), x["channels"] != "true",
                              x["n"]))
    for x in cells:
        kind = {"positive_class": "positive class", "top_label": "top-label"}.get(
            x["kind"], x["kind"])
        rows.append([x["K"], kind, x["channels"], count(x["n"]), x["reps"],
                     num(x["oracle_width"], 4),
                     *(f"{num(x[f'{k}_cover'])}, {ratio(x[f'{k}_ratio'])}"
                       for k in ("hoeffding", "bernstein", "auto")),
                     num(x["auto_bernstein_share"], 2), num(x["auto_worst_share"], 2),
                     num(x["binned_only_cover"]) if "binned_only_cover" in x else "-"])
    body = table(["K", "NC-ECE", "channels", "n", "reps", "oracle width",
                  "Hoeffding: cover, x oracle", "Bernstein", "auto (default)",
                  "auto took Bernstein", "error / radius", "binned_only"], rows) if rows else ""
    if cells:
        covers = [x[f"{k}_cover"] for x in cells for k in ("hoeffding", "bernstein", "auto")]
        body += (f"\n\nOver the {len(cells)} cells the lowest coverage of any radius is "
                 f"{num(min(covers))}, and the largest |NC-ECE - ECE_B| of any replication "
                 f"used {pct(max(x['auto_worst_share'] for x in cells))} of its 'auto' "
                 f"radius; {failed} EM fits were not ok.")
    run = "\n\n".join(run_line(n, rec) for n, rec in records.items())
    return {"run": run, "table": body}


# -- "LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels"

LWCAL_TITLES = {"raw": "Raw", "platt": "Platt", "isotonic": "Isotonic", "beta": "Beta",
                "trimcal_iso": "TrimCal-Iso", "trimcal_beta": "TrimCal-Beta",
                "lwcal": "LWCal", "gated_lwcal": "Gated-LWCal",
                "oracle": "Clean-label isotonic (oracle)"}


def _vp(value: float, paper: float | None) -> str:
    """``ours (paper)``, the paper's value left out where it has none."""
    if paper is None or (isinstance(paper, float) and math.isnan(paper)):
        return num(value)
    return f"{num(value)} ({num(paper)})"


def _four_table(rows: list[dict], key: str, label: str) -> str:
    cols = [f"{m}_{k}" for m in ("ece", "nll")
            for k in ("raw", "isotonic", "lwcal", "gated_lwcal")]
    heads = [f"{m.upper()} {t}" for m in ("ece", "nll")
             for t in ("raw", "iso", "LWCal", "Gated")]
    return table([label, *heads], [[x[key], *(_vp(x[c], x.get(f"paper_{c}")) for c in cols)]
                                   for x in rows])


@renderer("lwcal_protocol")
def _lwcal_protocol(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    keys = ("cells", "method", "statuses", "rate", "mode", "gate", "task", "klass",
            "bootstrap", "robustness", "orderings")
    out = {"run": run_line(name, rec), **{k: "" for k in keys}}
    if not r:
        return out
    c = r["cells"]
    out["cells"] = (f"{c['noisy_rf']} noisy and {c['clean_rf']} clean random-forest cells "
                    f"(seeds {', '.join(map(str, r['seeds']))}), "
                    f"{num(r['seconds_per_cell'], 1)} s per cell on average; gate variants "
                    f"{'included' if r['gate_grid'] else 'not run'}; learners "
                    f"{', '.join(c['learners'])}.")
    out["method"] = table(
        ["method", "ECE", "Brier", "NLL", "AUC", "fits not ok"],
        [[LWCAL_TITLES.get(x["method"], x["method"]),
          *(_vp(x[m], x.get(f"paper_{m}")) for m in ("ece", "brier", "nll", "auc")),
          x["not_ok"]] for x in r["method"]])
    st = r["statuses"]
    lines = []
    for part in ("noisy", "clean"):
        bad = {m: {s: n for s, n in v.items() if s != "ok"} for m, v in st[part].items()}
        bad = {m: v for m, v in bad.items() if v}
        text = "; ".join(f"{LWCAL_TITLES.get(m, m)} {sum(v.values())} ("
                         + ", ".join(f"{s} {n}" for s, n in v.items()) + ")"
                         for m, v in bad.items()) or "none"
        lines.append(f"- fits not `ok` over the {part} cells: {text}.")
    out["statuses"] = "\n".join(lines)
    out["rate"] = _four_table(r["rate"], "rate", "rate")
    out["mode"] = _four_table(r["mode"], "mode", "mode")
    if r["gate"]:
        out["gate"] = "**Table VII** (gate sensitivity):\n\n" + table(
            ["centre", "width", "ECE", "Brier", "NLL"],
            [[num(x["center"], 2), num(x["width"], 2),
              *(_vp(x[m], x.get(f"paper_{m}")) for m in ("ece", "brier", "nll"))]
             for x in r["gate"]])
    out["task"] = table(
        ["task", "raw ECE", "LWCal ECE", "raw NLL", "Gated NLL"],
        [[x["task"], *(_vp(x[k], x.get(f"paper_{k}"))
                       for k in ("raw_ece", "lwcal_ece", "raw_nll", "gated_nll"))]
         for x in r["task"]])
    out["klass"] = table(
        ["method", "classwise ECE", "minority ECE", "class gap"],
        [[LWCAL_TITLES.get(x["method"], x["method"]),
          *(_vp(x[k], x.get(f"paper_{k}"))
            for k in ("classwise_ece", "minority_ece", "class_gap"))] for x in r["class"]])

    def boot(rows: list[dict]) -> str:
        return table(["metric", "baseline", "delta", "95% CI", "cells", "paper (Table VI)"],
                     [[x["metric"], x["baseline"], f"{x['delta']:+.4f}",
                       f"[{x['low']:+.4f}, {x['high']:+.4f}]", x["cells"],
                       f"{x['paper_delta']:+.4f} [{x['paper_low']:+.4f}, "
                       f"{x['paper_high']:+.4f}]"] for x in rows])

    out["bootstrap"] = boot(r["bootstrap_main"])
    if r.get("robustness"):
        out["robustness"] = (
            "**Table X** (20-30% noise, seeds 0-2, both modes):\n\n" + table(
                ["learner", "method", "ECE", "NLL", "cells"],
                [[x["learner"], LWCAL_TITLES.get(x["method"], x["method"]),
                  _vp(x["ece"], x.get("paper_ece")), _vp(x["nll"], x.get("paper_nll")),
                  x["cells"]] for x in r["robustness"]])
            + "\n\nPaired bootstrap over the robustness cells:\n\n"
            + boot(r["bootstrap_robustness"]))
    out["orderings"] = "\n".join(f"- {k}: {'holds' if v else 'does NOT hold'}"
                                 for k, v in r["orderings"].items())
    return out


@renderer("layout_census")
def _layout_census(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    if not res:
        return {"run": run_line(name, rec), "table": missing(name)}
    now = res["current"]
    base = res.get("baseline", {}).get("census")
    head = ["measure"] + ([f"baseline ({res['baseline']['commit'][:7]})"] if base else []) \
        + ["now"]

    def row(label: str, get: Callable[[dict], object]) -> list[object]:
        return [label] + ([get(base)] if base else []) + [get(now)]

    rows = [row("modules", lambda c: count(c["modules"])),
            row("lines", lambda c: count(c["lines"])),
            row("import units (top-level files and folders)", lambda c: c["units"]),
            row("edges between units", lambda c: c["unit_edges"]),
            row("floors", lambda c: c["floors"]),
            row("modules of 455 lines or more", lambda c: c["modules_455_or_more_lines"]),
            row("longest module", lambda c: f"{c['longest_modules'][0][1]} "
                                            f"({c['longest_modules'][0][0]})"),
            row("private modules at the package top",
                lambda c: len(c["top_level_private_modules"])),
            row("most modules in one folder", lambda c: f"{c['most_modules_in_a_folder'][1]} "
                                                        f"({c['most_modules_in_a_folder'][0]})")]
    rows += [row(f"`nc.{m}` parameters", lambda c, m=m: c["metric_parameters"].get(m, "-"))
             for m in now["metric_parameters"]]
    rows += [row(f"`{m}.fit` parameters",
                 lambda c, m=m: (f"{c['fit_parameters'][m]['n']}"
                                 + (" + **kwargs" if c["fit_parameters"][m]["var_keyword"]
                                    else "")) if m in c["fit_parameters"] else "-")
             for m in now["fit_parameters"]]
    return {"run": run_line(name, rec),
            "table": table(head, rows, "l" + "r" * (len(head) - 1))}


@renderer("coverage_crossfit_kclass")
def _coverage_crossfit_kclass(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    cells = res.get("cells", {})
    if not cells:
        return {"run": run_line(name, rec), "design": "", "table": missing(name),
                "verdict": ""}
    rows, covers, widths, errors = [], [], [], []
    for cell, c in cells.items():
        for kind in res["kinds"]:
            s = c[kind]
            covers.append(s["coverage"])
            widths.append(s["mean_width"])
            errors.append(s["mean_abs_error"])
            rows.append([cell, kind, count(s["runs"]), num(s["population"], 4),
                         f"{num(s['coverage'], 2)} ({num(s['mc_se'], 2)})",
                         f"{num(s['low_above'], 2)} / {num(s['high_below'], 2)}",
                         num(s["mean_width"]), num(s["mean_value"], 4),
                         num(s["mean_abs_error"], 4),
                         ", ".join(f"{k} {v}" for k, v in s["statuses"].items())])
    body = table(["design / n", "estimand", "runs", "population error",
                  "coverage (MC s.e.)", "lower end above / upper end below",
                  "mean width", "mean value", "mean abs. error", "statuses"], rows)
    design = (f"Settings of this run: {res['n_folds']} folds, {res['n_bins']} equal-width "
              f"bins, level {num(res['level'], 2)}, annotator accuracies "
              f"{', '.join(num(a, 2) for a in res['accuracies'])} (errors spread evenly), "
              f"{count(res['reps'])} runs per cell, population errors of the "
              f"overconfident designs on {count(res['mc_items'])} Monte Carlo items.")
    span = (f"is {num(min(covers), 2)} in every cell" if num(min(covers), 2) ==
            num(max(covers), 2) else
            f"ranges from {num(min(covers), 2)} to {num(max(covers), 2)}")
    verdict = (f"**What the table says.** Coverage {span} at the nominal "
               f"{num(res['level'], 2)}: the bound is "
               f"conservative (a union over the sign vectors of the bins, the folds and "
               f"the classes), and its mean width runs from {num(min(widths))} to "
               f"{num(max(widths))}. The channels are fitted, which the bound leaves out; the "
               f"mean absolute error of the value is at most {num(max(errors), 4)}, against "
               f"a smallest mean half-width of {num(min(widths) / 2)}.")
    return {"run": run_line(name, rec), "design": design, "table": body,
            "verdict": verdict}


@renderer("bench_glad")
def _bench_glad(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r:
        return {"run": run_line(name, rec), "table": "", "verdict": ""}
    rows = []
    for c in r["cases"]:
        ck = "crowdkit_fit_s" in c
        rows.append([
            f"{c['data']} ({count(c['n_items'])} items, {c['n_annotators']} annotators, "
            f"K = {c['n_classes']})",
            secs(c["noisycal_first_fit_s"]), secs(c["noisycal_fit_s"]),
            secs(c["crowdkit_fit_s"]) if ck else "-",
            f"**{ratio(c['speedup'])}**" if ck else "-",
            f"{num(c['noisycal_accuracy'], 4)} / "
            + (num(c["crowdkit_accuracy"], 4) if ck else "-"),
            num(c["ability_corr"], 6) if ck else "-",
            sig(c["ability_max_abs_diff"]) if ck else "-",
            sig(c["log_easiness_max_abs_diff"]) if ck else "-",
            f"{c['noisycal_n_iter']} / " + (str(c["crowdkit_n_iter"]) if ck else "-"),
            f"`{c['noisycal_status']}`"])
    body = table(["data", "noisycal first fit", "noisycal fit", "crowd-kit fit",
                  "crowd-kit / noisycal", "accuracy (noisycal / crowd-kit)",
                  "ability correlation", "ability max abs diff",
                  "log-easiness max abs diff", "EM iterations (noisycal / crowd-kit)",
                  "status"], rows, align="lrrrrrrrrrl")
    speed = [c["speedup"] for c in r["cases"] if "speedup" in c]
    verdict = ("crowd-kit was not run." if not speed else
               "Goal, noisycal at least 10x faster: " + "; ".join(
                   f"{c['data']} {met(c['speedup'], 10)} ({ratio(c['speedup'])})"
                   for c in r["cases"] if "speedup" in c) + ".")
    if r.get("cifar10n_skipped"):
        verdict += f" CIFAR-10N skipped: {r['cifar10n_skipped']}."
    return {"run": run_line(name, rec), "table": body, "verdict": verdict}


@renderer("bench_cifar10n_accuracy")
def _bench_cifar10n_accuracy(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r.get("rows"):
        note = f"CIFAR-10N skipped: {r['skipped']}." if r.get("skipped") else ""
        return {"run": run_line(name, rec), "table": "", "verdict": note, "quality": ""}
    rows = r["rows"]
    body = table(["method", "library", "accuracy", "first fit", "second fit", "status"],
                 [[c["method"] + (f" ({count(c['n_ties'])} ties, each given to the lowest "
                                  "class index)" if "n_ties" in c else ""),
                   c["library"], num(c["accuracy"], 4),
                   secs(c["first_fit_s"], 3), secs(c["fit_s"], 3),
                   f"`{c['status']}`" if c["status"] else "-"] for c in rows],
                 align="llrrrl")
    ranked = sorted(rows, key=lambda c: -c["accuracy"])
    best, second = ranked[0], ranked[1]

    def who(c: dict) -> str:
        return c["method"] + (" (crowd-kit)" if c["library"] == "crowd-kit" else "")

    clf = [c for c in rows if c["library"] == "-"]
    crowd = [c for c in rows if c["library"] != "-" and c is not best]
    verdict = (f"**Most accurate: {who(best)}, {num(best['accuracy'], 4)}**, "
               f"{num(100 * (best['accuracy'] - second['accuracy']), 2)} percentage points "
               f"ahead of the next, {who(second)} ({num(second['accuracy'], 4)})")
    if clf and clf[0] is not best and clf[0] is not second:
        verdict += (f"; {num(100 * (best['accuracy'] - clf[0]['accuracy']), 2)} points ahead "
                    f"of the classifier alone ({num(clf[0]['accuracy'], 4)})")
    if crowd:
        top = max(crowd, key=lambda c: c["accuracy"])
        if top is not second:
            verdict += (f"; {num(100 * (best['accuracy'] - top['accuracy']), 2)} points "
                        f"ahead of the best other aggregator of the labels, {who(top)} "
                        f"({num(top['accuracy'], 4)})")
    verdict += "."
    ref = r.get("reference", {})
    if ref:
        verdict += (" For context only, the issue reporter's numbers from another machine "
                    "(not measured here): " + ", ".join(f"{k} {float(v):g}"
                                                        for k, v in ref.items()) + ".")
    if r.get("crowdkit_skipped"):
        verdict += f" crowd-kit rows left out: {r['crowdkit_skipped']}."
    elif r.get("crowdkit_version"):
        verdict += f" crowd-kit {r['crowdkit_version']}."
    q = r.get("annotator_quality", [])
    quality = table(["annotator", "ratings", "fitted accuracy", "accuracy on the clean labels",
                     "fitted - clean"],
                    [[a["annotator"], count(a["n_ratings"]), num(a["fitted_accuracy"], 4),
                      num(a["clean_accuracy"], 4),
                      num(a["fitted_accuracy"] - a["clean_accuracy"], 4)] for a in q],
                    align="lrrrr") if q else ""
    return {"run": run_line(name, rec), "table": body, "verdict": verdict,
            "quality": quality}


@renderer("plan_annotations_validation")
def _plan_annotations_validation(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    res = result(rec)
    designs = res.get("designs", {})
    if not designs:
        return {"run": run_line(name, rec), "design": "", "table": missing(name),
                "verdict": ""}
    rows, goals = [], []
    for d, c in designs.items():
        chosen = c["n_items"] is not None
        rows.append([
            d, num(c["population"], 4), f"`{c['pilot_status']}`",
            num(c["pilot_max_channel_error"], 3),
            f"{count(c['n_items'])} x {c['ratings_per_item']}" if chosen else "none",
            num(c["planned_median"], 4) if chosen else "-",
            num(c["achieved_median"], 4) if chosen else "-",
            num(c["ratio"], 2) if chosen else "-",
            num(c["check_coverage"], 2) if chosen else "-",
            num(c["check_share_not_ok"], 2) if chosen else "-",
            secs(c["plan_s"], 0)])
        if chosen:
            goals.append(f"{d} {met(abs(c['ratio'] - 1), 0.2, below=True)} "
                         f"(ratio {num(c['ratio'], 2)})")
        else:
            goals.append(f"{d}: no budget chosen ({c['choice_message']})")
    body = table(["design", "population ECE", "pilot fit", "pilot max channel error",
                  "chosen items x ratings", "planned median width",
                  "achieved median width", "planned / achieved", "check coverage",
                  "check share not ok", "plan time"], rows)
    design = (f"Settings of this run: target width {num(res['width'], 3)}, level "
              f"{num(res['level'], 2)}, {res['n_bins']} bins, annotator accuracies "
              f"{', '.join(num(a, 2) for a in res['accuracies'])} (errors spread evenly), "
              f"pilot {count(res['pilot_items'])} items x {res['pilot_ratings']} ratings, "
              f"pool {count(res['pool'])} items, grid {res['grid_items']} items x "
              f"{res['grid_ratings']} ratings, {res['plan_sims']} simulations per cell in "
              f"the plan, {res['check_sims']} in the check.")
    verdict = ("Goal, planned median width within 20% of the achieved one: "
               + "; ".join(goals) + ". With so few simulations the medians themselves are "
               "noisy (a few percent to tens of percent), so this checks the planner's "
               "order of magnitude, not its second digit.")
    return {"run": run_line(name, rec), "design": design, "table": body,
            "verdict": verdict}


ABLATION_METRICS = (("ece_true_expected", "True-label ECE, expected form (%)", 2),
                    ("aece_true_mc", "True-label aECE (%)", 2),
                    ("cwece_true_mc", "Classwise true-label ECE (%)", 2),
                    ("ece_voted", "ECE against the voted labels (%)", 2),
                    ("brier_expected", "Brier (expected form)", 4), ("nll", "NLL", 4),
                    ("T", "Temperature T (single-temperature rows; ATS: the mean T_i)", 2))


def _ablation_cells(rows: list[dict], key: str) -> tuple[list, list, dict]:
    """The grid values (in run order), the methods, and the rows of each (method, value)."""
    grid = list(dict.fromkeys(r[key] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["method"], r[key]), []).append(r)
    return grid, methods, by


def _ablation_means(by: dict, grid: list, method: str, metric: str) -> dict:
    return {g: _stats([r[metric] for r in by.get((method, g), [])])[0] for g in grid}


def _converged(means: dict, grid: list, tol: float) -> object:
    """The smallest grid value from which every mean lies within ``tol`` of the last."""
    full, first = means[grid[-1]], grid[-1]
    for g in reversed(grid):
        if not abs(means[g] - full) <= tol:
            break
        first = g
    return first


def _ablation_cell(values: list[float], digits: int) -> str:
    """Mean ± SD, or how many fits gave an infinite value (an NLL of a binning map)."""
    inf = sum(v is not None and math.isinf(v) for v in values)
    return f"inf in {inf}/{len(values)}" if inf else _pm(values, digits)


def _ablation_table(rows: list[dict], key: str, label: str, metric: str, digits: int,
                    tol: float | None = None) -> str:
    grid, methods, by = _ablation_cells(rows, key)
    head = ["method", *(f"{label} {g}" for g in grid)]
    if tol is not None:
        head += ["smallest − full", f"converged from (±{num(tol, 2)})"]
    body = []
    for m in methods:
        bad = [r["status"] for g in grid for r in by.get((m, g), []) if r["status"] != "ok"]
        n = sum(len(by.get((m, g), [])) for g in grid)
        name = m + (f" ({', '.join(f'{s} {bad.count(s)}/{n}' for s in sorted(set(bad)))})"
                    if bad else "")
        row = [name, *(_ablation_cell([r[metric] for r in by.get((m, g), [])], digits)
                       for g in grid)]
        if tol is not None:
            mean = _ablation_means(by, grid, m, metric)
            row += [num(mean[grid[0]] - mean[grid[-1]], digits),
                    str(_converged(mean, grid, tol))]
        body.append(row)
    return table(head, body, align="l" + "r" * (len(head) - 1))


def _size_findings(r: dict) -> str:
    rows, tol, paper = r["size_rows"], r["tolerance"], r["paper"]
    grid, _, by = _ablation_cells(rows, "size")
    e = {m: _ablation_means(by, grid, m, "ece_true_mc")
         for m in ("TS", "SLTS", "MCTS", "IR-Soft", "Dirichlet-Soft")}
    conv = {m: _converged(v, grid, tol) for m, v in e.items()}
    at = paper["stable_from_size"]

    def near(m: str) -> str:
        if at not in e[m]:
            return f"{m}: no cell of {at} images"
        return (f"{m} {num(e[m][at], 2)} at {at} images against {num(e[m][grid[-1]], 2)} "
                f"on the full set")

    ts = e["TS"].values()
    soft_slowest = max(grid.index(conv["SLTS"]), grid.index(conv["MCTS"]))
    faster = [m for m in ("IR-Soft", "Dirichlet-Soft") if grid.index(conv[m]) < soft_slowest]
    return "\n".join([
        f"- **Paper: TS's true-label ECE is flat across sizes.** Ours: TS's mean lies between "
        f"{num(min(ts), 2)} and {num(max(ts), 2)} over the sizes "
        f"({num(max(ts) - min(ts), 2)} points apart), converged from {conv['TS']} images.",
        f"- **Paper: SLTS and MCTS are stable from 5-10% of the calibration set (about {at} "
        f"images).** Ours: {near('SLTS')}; {near('MCTS')}; within ±{num(tol, 2)} points of "
        f"the full-set value from {conv['SLTS']} (SLTS) and {conv['MCTS']} (MCTS) images.",
        f"- **Paper: IR-Soft and Dirichlet-Soft converge faster.** Ours: converged from "
        f"{conv['IR-Soft']} (IR-Soft) and {conv['Dirichlet-Soft']} (Dirichlet-Soft) images, "
        f"against {conv['SLTS']} and {conv['MCTS']} for SLTS and MCTS: "
        + (f"faster for {' and '.join(faster)}" if faster else "neither is faster")
        + f"; {near('IR-Soft')}; {near('Dirichlet-Soft')}."])


def _ratings_findings(r: dict) -> str:
    rows, tol, paper = r["ratings_rows"], r["tolerance"], r["paper"]
    grid, methods, by = _ablation_cells(rows, "m")
    e = {m: _ablation_means(by, grid, m, "ece_true_mc") for m in methods}
    two, full = paper["ratings_stable_from_m"], grid[-1]
    soft = [m for m in (*SOFT_ROWS, "HB-Soft") if m in e]
    lines = []
    if two in grid:
        gap = {m: e[m][two] - e[m][full] for m in soft}
        worst = max(gap, key=lambda m: abs(gap[m]))
        lines.append(
            f"- **Paper: the ambiguity-aware methods are stable for m ≥ {two}.** Ours: from "
            f"m = {two} to m = {full} the soft rows ({', '.join(soft)}) move by at most "
            f"{num(abs(gap[worst]), 2)} points ({worst}); converged from m = "
            + ", ".join(f"{_converged(e[m], grid, tol)} ({m})" for m in soft) + ".")
        lines.append(
            f"- **Paper: from m = {two} to all ratings SLTS and MCTS lower their true-label "
            f"ECE by less than {num(paper['ratings_gain_max_points'], 1)} points.** Ours: "
            f"SLTS {num(gap['SLTS'], 2)}, MCTS {num(gap['MCTS'], 2)} points (mean at m = "
            f"{two} minus the value with all ratings; positive is a gain).")
    else:
        lines.append(f"- no cell of m = {two}: the paper's stability claims are not checked.")
    lines.append(
        f"- **Paper: LS-TS converges by m ≈ {paper['lsts_converged_m']}.** Ours: within "
        f"±{num(tol, 2)} points of its all-ratings value from m = "
        f"{_converged(e['LS-TS'], grid, tol)}; {num(e['LS-TS'][grid[0]], 2)} at m = "
        f"{grid[0]} against {num(e['LS-TS'][full], 2)} with all ratings (LS-TS fails on "
        f"these logits, see the table reproduction).")
    ts = [e["TS"][g] for g in grid]
    ups = sum(b > a for a, b in zip(ts[:-1], ts[1:], strict=True))
    lines.append(
        f"- **Paper: TS's true-label ECE increases with m** (with more ratings the voted "
        f"label approaches the hard majority). Ours: {num(ts[0], 2)} at m = {grid[0]}, "
        f"{num(ts[-1], 2)} with all ratings; it rises in {ups} of the {len(ts) - 1} steps "
        f"of the grid. At m = {grid[0]} TS and SLTS fit "
        + ("the same one-hot target (TS − SLTS: "
           f"{num(ts[0] - e['SLTS'][grid[0]], 2)} points)." if grid[0] == 1 else
           "different targets."))
    return "\n".join(lines)


@renderer("ambiguous_gt_ablations")
def _ambiguous_gt_ablations(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    out = {"run": run_line(name, rec)}
    keys = ("setup", "size_table", "size_findings", "size_other", "ratings_table",
            "ratings_findings", "ratings_other")
    out.update(dict.fromkeys(keys, ""))
    if not r:
        return out
    lo, hi = r["ratings_per_image"]
    test = "of all ratings" if r["test_ratings"] == "full" else "subsampled to m ratings"
    out["setup"] = (f"{r['dataset']}: {count(r['n_cal'])} calibration / "
                    f"{count(r['n_test'])} test images (split seed {r['split_seed']}), "
                    f"{lo} to {hi} ratings per image; {r['reps']} repetitions per "
                    f"subsampled cell, {r['n_draws']} label draws, test distributions "
                    f"{test} (`--test-ratings {r['test_ratings']}`); convergence tolerance "
                    f"±{num(r['tolerance'], 2)} points of true-label ECE (ours).")
    for part, key, label in (("size", "size", "n ="), ("ratings", "m", "m =")):
        rows = r.get(f"{part}_rows")
        if not rows:
            continue
        out[f"{part}_table"] = (_ablation_table(rows, key, label, "ece_true_mc", 2,
                                                r["tolerance"])
                                + f"\n\nThis ablation took {secs(r[f'{part}_seconds'], 0)}.")
        out[f"{part}_findings"] = (_size_findings if part == "size" else _ratings_findings)(r)
        out[f"{part}_other"] = "\n\n".join(
            f"{title}:\n\n{_ablation_table(rows, key, label, metric, digits)}"
            for metric, title, digits in ABLATION_METRICS)
    return out


# -- "Noisy-Label Calibration with Multiple Unreliable Labels": the Gaussian toy, Table 1 --

TOY_ROWS = {"majority_vote": "naive, majority vote", "soft_vote": "naive, soft vote",
            "nc_true": "NC-ECE, true channels", "nc_em": "NC-ECE, Dawid–Skene EM channels",
            "oracle": "Gaussian Oracle ECE (labels m(Z_i))"}


@renderer("gaussian_toy_table1")
def _gaussian_toy_table1(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    r = result(rec)
    if not r.get("truths"):
        return {"run": run_line(name, rec), "design": "", "table": missing(name),
                "verdict": ""}
    reps = r["reps"]
    design = (f"Settings of this run: {count(reps)} repetitions per truth (the paper's "
              f"Table 1: {count(r['paper_reps'])}"
              + ("" if reps == r["paper_reps"] else "; reduced") + f"), "
              f"n_ev = {count(r['n_ev'])} evaluation items, "
              + (f"n_ch = {count(r['n_ch'])} items in an independent channel sample"
                 if r["n_ch"] else "channels fitted on the evaluation items")
              + f", M = {r['n_bins']} equal-width bins, '{r['weights']}' weights, level "
              f"{num(r['level'], 2)}; annotator false-positive rates "
              f"{', '.join(num(x, 2) for x in r['a'])} and true-positive rates "
              f"{', '.join(num(x, 2) for x in r['b'])} (the paper's).")
    parts, lines = [], []
    for truth, s in r["truths"].items():
        pop = s["population"]
        rows = []
        for est, label in TOY_ROWS.items():
            x = s["rows"].get(est)
            if x is None:
                continue
            nc_row = "coverage" in x
            rows.append([label, count(x["runs"]), num(x["mean"], 4), num(x["sd"], 4),
                         num(x["bias"], 4), f"{num(x['mae'], 4)} ({num(x['mae_se'], 4)})",
                         num(x["mae_binned"], 4),
                         f"{num(x['default_mean'], 4)} ({num(x['default_mae'], 4)})"
                         if nc_row else "-",
                         num(x["coverage_binned"], 2) if nc_row else "-",
                         num(x["coverage"], 2) if nc_row else "-",
                         num(x["mean_width"], 4) if nc_row else "-",
                         ", ".join(f"{k} {v}" for k, v in x["statuses"].items())
                         if nc_row else "-"])
        head = (f"**{truth.capitalize()}**: ECE(f) = E|m(Z) - Z| = {num(pop['ece'], 4)}, "
                f"population binned ECE {num(pop['ece_binned'], 4)}")
        if "fit_statuses" in s:
            head += ("; EM fit statuses: " + ", ".join(f"{k} {v}" for k, v in
                                                       s["fit_statuses"].items())
                     + f", {s['refused']} refused; mean fitted a "
                     f"({', '.join(num(v, 3) for v in s['fitted_a_mean'])}), b "
                     f"({', '.join(num(v, 3) for v in s['fitted_b_mean'])})")
        parts.append(head + ".\n\n" + table(
            ["estimator", "reps", "mean", "SD", "bias", "MAE (MC s.e.)", "MAE vs binned",
             "default value: mean (MAE)", "coverage of binned ECE", "coverage of ECE(f)",
             "mean width", "interval statuses"], rows, align="lrrrrrrrrrrl"))
        got = {k: v["mae"] for k, v in s["rows"].items() if k != "oracle"}
        best = min(got, key=got.get)
        lines.append(f"{truth.capitalize()}: the smallest MAE short of the oracle is "
                     f"{TOY_ROWS[best]} ({num(got[best], 4)}), against "
                     f"{num(got['majority_vote'], 4)} for the majority vote and "
                     f"{num(got['soft_vote'], 4)} for the soft vote")
    verdict = "**What the table says.** " + ". ".join(lines) + "."
    return {"run": run_line(name, rec), "design": design, "table": "\n\n".join(parts),
            "verdict": verdict}


# -- the set-mass paper's Ada-TS in its MLP form ------------------------------------------

#: The paper's temperature-scaling rows on ResNet-20 and ResNet-56 (its Tables 4 and 5):
#: CMCE, ECE, MCE, cwECE, NLL, Brier, cov[0.9,0.92], cov[0.99,0.995]. Typed from the paper
#: (a citation, not a measurement of ours); its Ada-TS rows are in PAPER_SET_MASS_BASELINES.
PAPER_SET_MASS_TS = ((0.0025, 0.0159, 0.4926, 0.0063, 0.2374, 0.1132, 0.8936, 0.9919),
                     (0.0036, 0.0117, 0.2539, 0.0053, 0.1909, 0.0863, 0.8889, 0.9982))


@renderer("ada_ts_mlp")
def _ada_ts_mlp(records: dict[str, Record]) -> dict[str, str]:
    (name, rec), = records.items()
    out = {"run": run_line(name, rec), "table": missing(name), "fits": "", "paper": "",
           "verdict": ""}
    res = result(rec)
    rows, fits = res.get("table", []), res.get("fits", [])
    if not rows:
        return out
    floored = [f["nll_floored"] for f in fits]
    n_inf = sum(f["n_zero_probability"] > 0 for f in fits)
    mlp_nll = (f"{_clean(next(r['NLL'] for r in rows if r['method'] == 'Ada-TS (MLP)'))} "
               f"({_pm(floored, 4)} with +1e-12; infinite in {n_inf} of {len(fits)} splits)")
    cols = [c for c in rows[0] if c != "method" and any(_clean(r[c]) for r in rows)]
    out["table"] = (f"{res['n_splits']} splits, {secs(res['seconds'], 0)} in all; "
                    f"{count(res['n_calibration'])} calibration images per split.\n\n"
                    + table(["method", *cols],
                            [[r["method"], *(mlp_nll if c == "NLL" and r["method"] ==
                                             "Ada-TS (MLP)" else _clean(r[c]) for c in cols)]
                             for r in rows]))
    out["fits"] = table(
        ["split", "status", "epochs", "fitting NLL, MLP / TS", "TS temperature",
         "MLP T on the test part: mean (5%-95%)", "NLL +1e-12", "items with p_y = 0"],
        [[f["split"], f["status"], f["epochs_run"],
          f"{num(f['fitting_nll'], 4)} / {num(f['ts_fitting_nll'], 4)}",
          num(f["ts_temperature"], 3),
          f"{num(f['mlp_T_mean'], 2)} ({num(f['mlp_T_q05'], 3)}-{num(f['mlp_T_q95'], 2)})",
          num(f["nll_floored"], 4), f["n_zero_probability"]] for f in fits],
        align="lllrrlrr")
    by = {r["method"]: r for r in rows}
    _, ada20, ada56 = PAPER_SET_MASS_BASELINES["Ada-TS (ATS)"]
    prow = []
    for m in ("Temp. scaling", "Ada-TS (ATS)", "Ada-TS (MLP)"):
        cells = [str(by[m][c]).split(" ±")[0] for c in SET_MASS_COLUMNS]
        if m == "Ada-TS (MLP)":
            cells[SET_MASS_COLUMNS.index("NLL")] = f"{num(_stats(floored)[0], 4)} (+1e-12)"
        prow.append([f"{m}, DenseNet-40 (ours)", *cells])
    for pname, (a, b) in (("Temp. scaling", PAPER_SET_MASS_TS), ("Ada-TS", (ada20, ada56))):
        prow.append([f"{pname}, paper ResNet-20 / ResNet-56",
                     *(f"{num(x, 4)} / {num(y, 4)}" for x, y in zip(a, b, strict=True))])
    out["paper"] = table(["method", *SET_MASS_COLUMNS], prow)
    mean = {m: {c: _mean(by[m][c]) for c in SET_MASS_COLUMNS} for m in by}
    mean["Ada-TS (MLP)"]["NLL"] = _stats(floored)[0]
    worse = [c for c in ("CMCE", "ECE", "NLL", "Brier")
             if mean["Ada-TS (MLP)"][c] > mean["Temp. scaling"][c]]
    paper_worse = [c for c in ("CMCE", "ECE", "NLL", "Brier")
                   if all(p[SET_MASS_COLUMNS.index(c)] > t[SET_MASS_COLUMNS.index(c)]
                          for p, t in zip((ada20, ada56), PAPER_SET_MASS_TS, strict=True))]
    overfit = sum(f["fitting_nll"] < f["ts_fitting_nll"] for f in fits)
    out["verdict"] = (
        f"- The MLP form is worse than temperature scaling here on {len(worse)} of "
        f"CMCE, ECE, NLL (+1e-12) and Brier ({', '.join(worse) or 'none'}; "
        f"CMCE {num(mean['Ada-TS (MLP)']['CMCE'], 4)} against "
        f"{num(mean['Temp. scaling']['CMCE'], 4)}, ECE {num(mean['Ada-TS (MLP)']['ECE'], 4)} "
        f"against {num(mean['Temp. scaling']['ECE'], 4)}); the paper's Ada-TS is worse than "
        f"its temperature scaling on both ResNets on {len(paper_worse)} of these "
        f"({', '.join(paper_worse) or 'none'}).\n"
        f"- It fits the calibration part better than temperature scaling (lower fitting NLL) "
        f"in {overfit} of {len(fits)} splits while doing worse on the test part: with "
        f"{count(res['n_calibration'])} images and a network of this size (100 epochs, no "
        f"early stopping) it overfits, and a few test temperatures near 0 give some test "
        f"images probability 0 on their own class.\n"
        f"- The feature-based ATS (`AdaptiveTemperatureScaling`) stays at temperature "
        f"scaling (CMCE {num(mean['Ada-TS (ATS)']['CMCE'], 4)}, NLL "
        f"{num(mean['Ada-TS (ATS)']['NLL'], 4)}).")
    return out


@renderer("bench_vignettes")
def _bench_vignettes(records: dict[str, Record]) -> dict[str, str]:
    rec = records.get("bench_vignettes")
    r = result(rec) if rec else {}
    if not r:
        return {"run": run_line("bench_vignettes", rec), "table": ""}
    rows = []
    for c in r["cases"]:
        first, second, goal = c["first"], c["second"], c.get("goal_cpu_s")
        rows.append([f"`{c['vignette']}`", c["size"],
                     f"{secs(first['cpu_s'], 1)} ({secs(first['wall_s'], 1)})",
                     f"{secs(second['cpu_s'], 1)} ({secs(second['wall_s'], 1)})",
                     "-" if goal is None else f"{goal:g} s",
                     "-" if goal is None else met(first["cpu_s"], goal, below=True),
                     "-" if goal is None else met(second["cpu_s"], goal, below=True),
                     "yes" if c["same_output"] else "no",
                     f"{first['returncode']} / {second['returncode']}"])
    return {"run": run_line("bench_vignettes", rec), "table": table(
        ["vignette", "size", "first run: CPU (wall)", "second run: CPU (wall)", "goal (CPU)",
         "first run", "second run", "same output", "exit codes"], rows, "llrrrllll")}
