"""Tables of the LWCal protocol beside the paper's (Tables III-X).

"LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels":
every table is a plain, unweighted mean over cells (Section IV; the paper's tables are
consistent with that, e.g. Table III is the mean of the rows of Table IV), over the noisy
cells only (``rate > 0``). The paper's numbers are kept here for the side-by-side view;
exact agreement is not expected (its seeds, split fractions, asymmetric law and synthetic
generators are not given).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .evaluate import CELL_KEYS, METRICS, paired_bootstrap
from .methods import GATE_CENTERS, GATE_WIDTHS, METHOD_TITLES, gate_method_name
from .tasks import TASKS

__all__ = ["PAPER_TABLE_III", "PAPER_TABLE_IV", "PAPER_TABLE_V", "PAPER_TABLE_VIII",
           "PAPER_TABLE_X", "PAPER_TABLE_VII", "noisy", "method_table", "rate_table",
           "mode_table", "dataset_table", "gate_table", "class_table", "robustness_table",
           "bootstrap_table", "pattern_checks", "render"]

#: Table III: method -> (ECE, Brier, NLL, AUC), 432 noisy random-forest cells.
PAPER_TABLE_III = {
    "gated_lwcal": (0.122, 0.125, 0.396, 0.895), "lwcal": (0.113, 0.126, 0.409, 0.891),
    "isotonic": (0.147, 0.134, 0.424, 0.879), "raw": (0.188, 0.138, 0.438, 0.900),
    "trimcal_beta": (0.146, 0.138, 0.441, 0.896), "platt": (0.187, 0.147, 0.457, 0.880),
    "beta": (0.189, 0.149, 0.461, 0.878), "trimcal_iso": (0.125, 0.134, 0.487, 0.858),
}
#: Clean-calibration isotonic oracle (Section V-A): ECE, NLL.
PAPER_ORACLE = (0.057, 0.340)
_FOUR = ("raw", "isotonic", "lwcal", "gated_lwcal")
#: Table IV: rate -> ECE of raw, iso, lwcal, gated, then NLL of the same.
PAPER_TABLE_IV = {
    0.1: (0.158, 0.085, 0.053, 0.053, 0.298, 0.243, 0.223, 0.223),
    0.2: (0.197, 0.151, 0.074, 0.075, 0.381, 0.347, 0.279, 0.278),
    0.3: (0.212, 0.188, 0.127, 0.159, 0.479, 0.485, 0.432, 0.442),
    0.4: (0.185, 0.166, 0.198, 0.200, 0.594, 0.620, 0.700, 0.640),
}
#: Table V: mode -> as Table IV.
PAPER_TABLE_V = {
    "symmetric": (0.191, 0.151, 0.080, 0.112, 0.448, 0.434, 0.367, 0.382),
    "asymmetric": (0.185, 0.144, 0.146, 0.132, 0.428, 0.414, 0.450, 0.410),
}
#: Table VII: (centre, width) -> ECE, Brier, NLL.
PAPER_TABLE_VII = {
    (0.25, 0.08): (0.130, 0.125, 0.396), (0.25, 0.12): (0.126, 0.124, 0.393),
    (0.25, 0.16): (0.124, 0.124, 0.392), (0.29, 0.08): (0.125, 0.125, 0.397),
    (0.29, 0.12): (0.122, 0.125, 0.396), (0.29, 0.16): (0.120, 0.125, 0.396),
    (0.33, 0.08): (0.121, 0.126, 0.401), (0.33, 0.12): (0.119, 0.126, 0.402),
    (0.33, 0.16): (0.118, 0.126, 0.401), (0.35, 0.08): (0.121, 0.127, 0.406),
    (0.35, 0.12): (0.119, 0.126, 0.405), (0.35, 0.16): (0.116, 0.126, 0.405),
}
#: Table VIII: task -> raw ECE, LWCal ECE, raw NLL, Gated-LWCal NLL.
PAPER_TABLE_VIII = {
    "breast_cancer": (0.194, 0.119, 0.408, 0.367), "digits_even": (0.216, 0.094, 0.416, 0.309),
    "digits_high": (0.226, 0.095, 0.432, 0.315),
    "iris_versicolor": (0.184, 0.134, 0.399, 0.441),
    "synthetic_imbalance": (0.162, 0.095, 0.450, 0.447),
    "synthetic_overlap": (0.174, 0.118, 0.517, 0.486),
    "synthetic_sparse": (0.146, 0.166, 0.618, 0.621),
    "wine_class0": (0.196, 0.106, 0.362, 0.317), "wine_class2": (0.196, 0.089, 0.341, 0.260),
}
#: Table IX: method -> classwise ECE, minority ECE, class gap.
PAPER_TABLE_IX = {"raw": (0.342, 0.384, 0.140), "isotonic": (0.317, 0.359, 0.153),
                  "lwcal": (0.238, 0.302, 0.223), "gated_lwcal": (0.259, 0.317, 0.186)}
#: Table X: (learner, method) -> ECE, NLL at 20-30% noise.
PAPER_TABLE_X = {
    ("rf", "raw"): (0.204, 0.432), ("rf", "isotonic"): (0.169, 0.414),
    ("rf", "beta"): (0.215, 0.459), ("rf", "lwcal"): (0.105, 0.363),
    ("rf", "gated_lwcal"): (0.120, 0.364), ("et", "raw"): (0.221, 0.433),
    ("et", "isotonic"): (0.168, 0.397), ("et", "beta"): (0.226, 0.446),
    ("et", "lwcal"): (0.103, 0.342), ("et", "gated_lwcal"): (0.120, 0.350),
    ("gb", "raw"): (0.178, 0.461), ("gb", "isotonic"): (0.156, 0.471),
    ("gb", "beta"): (0.194, 0.492), ("gb", "lwcal"): (0.117, 0.457),
    ("gb", "gated_lwcal"): (0.124, 0.441),
}
#: Table VI: (metric, baseline) -> delta, low, high (Gated-LWCal minus baseline).
PAPER_TABLE_VI = {
    ("ece", "raw"): (-0.0796, -0.0883, -0.0713), ("ece", "isotonic"): (-0.0427, -0.0501, -0.0353),
    ("ece", "beta"): (-0.0904, -0.0988, -0.0819), ("ece", "lwcal"): (0.0131, 0.0083, 0.0176),
    ("brier", "raw"): (-0.0196, -0.0227, -0.0166),
    ("brier", "isotonic"): (-0.0149, -0.0172, -0.0125),
    ("brier", "beta"): (-0.0290, -0.0324, -0.0258),
    ("brier", "lwcal"): (0.0010, -0.0005, 0.0024),
    ("nll", "raw"): (-0.0574, -0.0683, -0.0464), ("nll", "isotonic"): (-0.0428, -0.0518, -0.0338),
    ("nll", "beta"): (-0.0809, -0.0924, -0.0696), ("nll", "lwcal"): (-0.0028, -0.0091, 0.0029),
}


def noisy(df: pd.DataFrame, learner: str | None = "rf") -> pd.DataFrame:
    """The noisy cells (``rate > 0``), of one learner (None: all).

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, or None, default='rf'
        Keep this base learner's cells (None: all).

    Returns
    -------
    pandas.DataFrame
    """
    out = df[df["rate"] > 0]
    return out if learner is None else out[out["learner"] == learner]


def _n_cells(df: pd.DataFrame) -> int:
    return int(df[["learner", "task", "seed", "mode", "rate"]].drop_duplicates().shape[0])


def method_table(df: pd.DataFrame, *, learner: str = "rf") -> pd.DataFrame:
    """Table III: mean ECE, Brier, NLL, AUC per method over the noisy cells, sorted by NLL,
    with the paper's values (``paper_*``) where it has them.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, default='rf'
        Base learner whose cells are averaged.

    Returns
    -------
    pandas.DataFrame
    """
    d = noisy(df, learner)
    d = d[d["method"].isin(METHOD_TITLES)]
    t = d.groupby("method")[list(METRICS)].mean()
    t["cells"] = d.groupby("method").size()
    t["not_ok"] = d.assign(b=d["status"] != "ok").groupby("method")["b"].sum()
    for i, m in enumerate(METRICS):
        t[f"paper_{m}"] = [PAPER_TABLE_III.get(k, (np.nan,) * 4)[i] for k in t.index]
    if "oracle" in t.index:
        t.loc["oracle", ["paper_ece", "paper_nll"]] = PAPER_ORACLE
    return t.sort_values("nll")


def _four(d: pd.DataFrame, by: str, paper: dict) -> pd.DataFrame:
    d = d[d["method"].isin(_FOUR)]
    t = d.pivot_table(index=by, columns="method", values=["ece", "nll"], aggfunc="mean")
    cols = [(m, k) for m in ("ece", "nll") for k in _FOUR]
    t = t.reindex(columns=pd.MultiIndex.from_tuples(cols))
    t.columns = [f"{m}_{k}" for m, k in cols]
    for j, (m, k) in enumerate(cols):
        t[f"paper_{m}_{k}"] = [paper.get(i, (np.nan,) * 8)[j] for i in t.index]
    return t


def rate_table(df: pd.DataFrame, *, learner: str = "rf") -> pd.DataFrame:
    """Table IV: ECE and NLL of raw, isotonic, LWCal and Gated-LWCal by noise rate.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, default='rf'
        Base learner whose cells are averaged.

    Returns
    -------
    pandas.DataFrame
    """
    return _four(noisy(df, learner), "rate", PAPER_TABLE_IV)


def mode_table(df: pd.DataFrame, *, learner: str = "rf") -> pd.DataFrame:
    """Table V: ECE and NLL of raw, isotonic, LWCal and Gated-LWCal by noise mechanism.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, default='rf'
        Base learner whose cells are averaged.

    Returns
    -------
    pandas.DataFrame
    """
    return _four(noisy(df, learner), "mode", PAPER_TABLE_V)


def dataset_table(df: pd.DataFrame, *, learner: str = "rf") -> pd.DataFrame:
    """Table VIII: raw and LWCal ECE, raw and Gated-LWCal NLL per task.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, default='rf'
        Base learner whose cells are averaged.

    Returns
    -------
    pandas.DataFrame
    """
    d = noisy(df, learner)
    g = d.pivot_table(index="task", columns="method", values=["ece", "nll"], aggfunc="mean")
    t = pd.DataFrame({"raw_ece": g[("ece", "raw")], "lwcal_ece": g[("ece", "lwcal")],
                      "raw_nll": g[("nll", "raw")], "gated_nll": g[("nll", "gated_lwcal")]})
    paper = pd.DataFrame(PAPER_TABLE_VIII, index=["paper_raw_ece", "paper_lwcal_ece",
                                                  "paper_raw_nll", "paper_gated_nll"]).T
    t = t.join(paper)
    t.index = pd.Index([TASKS[i].title for i in t.index], name="task")
    return t.sort_index()


def gate_table(df: pd.DataFrame, *, learner: str = "rf") -> pd.DataFrame:
    """Table VII: ECE, Brier, NLL of the gate-sensitivity variants.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, default='rf'
        Base learner whose cells are averaged.

    Returns
    -------
    pandas.DataFrame
    """
    d = noisy(df, learner)
    rows = []
    for c in GATE_CENTERS:
        for w in GATE_WIDTHS:
            s = d[d["method"] == gate_method_name(c, w)]
            if s.empty:
                continue
            p = PAPER_TABLE_VII[(c, w)]
            rows.append(dict(center=c, width=w, ece=s["ece"].mean(), brier=s["brier"].mean(),
                             nll=s["nll"].mean(), paper_ece=p[0], paper_brier=p[1],
                             paper_nll=p[2]))
    return pd.DataFrame(rows)


def class_table(df: pd.DataFrame, *, learner: str = "rf") -> pd.DataFrame:
    """Table IX with our definitions (the paper gives none): classwise ECE
    ``(ECE_0 + ECE_1) / 2``, minority ECE (the class with fewer test items), class gap
    ``|ECE_1 - ECE_0|``, each averaged over cells.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table (:func:`noisycal.experiments.grid.read_results`).
    learner : str, default='rf'
        Base learner whose cells are averaged.

    Returns
    -------
    pandas.DataFrame
    """
    d = noisy(df, learner)
    d = d[d["method"].isin(_FOUR)].copy()
    minority_pos = d["n_pos_test"] < d["n_test"] - d["n_pos_test"]
    d["classwise_ece"] = (d["ece_neg"] + d["ece_pos"]) / 2
    d["minority_ece"] = np.where(minority_pos, d["ece_pos"], d["ece_neg"])
    d["class_gap"] = (d["ece_pos"] - d["ece_neg"]).abs()
    t = d.groupby("method")[["classwise_ece", "minority_ece", "class_gap"]].mean()
    for i, k in enumerate(("classwise_ece", "minority_ece", "class_gap")):
        t[f"paper_{k}"] = [PAPER_TABLE_IX[m][i] for m in t.index]
    return t.reindex([m for m in _FOUR if m in t.index])


def robustness_table(df: pd.DataFrame, *, seeds: tuple[int, ...] = (0, 1, 2),
                     rates: tuple[float, ...] = (0.2, 0.3)) -> pd.DataFrame:
    """Table X: ECE and NLL by base learner over the robustness cells.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table.
    seeds : tuple of int, default=(0, 1, 2)
    rates : tuple of float, default=(0.2, 0.3)

    Returns
    -------
    pandas.DataFrame
    """
    d = df[df["seed"].isin(seeds) & df["rate"].isin(rates)
           & df["method"].isin(("raw", "isotonic", "beta", "lwcal", "gated_lwcal"))]
    t = d.groupby(["learner", "method"])[["ece", "nll"]].mean()
    t["cells"] = d.groupby(["learner", "method"]).size()
    t["paper_ece"] = [PAPER_TABLE_X.get(i, (np.nan, np.nan))[0] for i in t.index]
    t["paper_nll"] = [PAPER_TABLE_X.get(i, (np.nan, np.nan))[1] for i in t.index]
    return t


def bootstrap_table(df: pd.DataFrame, *, baselines: tuple[str, ...] = ("raw", "isotonic",
                                                                     "beta", "lwcal"),
                    metrics: tuple[str, ...] = ("ece", "brier", "nll"), n_boot: int = 2000,
                    level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Table VI: Gated-LWCal minus each baseline over the matched cells of ``df``.

    Each pair uses the cells of ``df`` that hold both methods; ``cells`` says how many.

    Parameters
    ----------
    df : pandas.DataFrame
        The cells to pair (every cell must hold every method compared).
    baselines : tuple of str
        Baselines absent from ``df`` are skipped.
    metrics : tuple of str, default=('ece', 'brier', 'nll')
    n_boot : int, default=2000
    level : float, default=0.95
    seed : int, default=0

    Returns
    -------
    pandas.DataFrame
        One row per (metric, baseline): ``delta``, ``low``, ``high``, ``cells`` and the
        paper's values.
    """
    have = set(df["method"])
    rows = []
    for m in metrics:
        for b in baselines:
            if b not in have:
                continue
            keys = list(CELL_KEYS)
            both = (df[df["method"].isin(("gated_lwcal", b))].groupby(keys)["method"]
                    .nunique().loc[lambda x: x == 2].index)
            pair = df.set_index(keys).loc[both].reset_index()  # cells holding both methods
            e = paired_bootstrap(pair, "gated_lwcal", b, m, n_boot=n_boot, level=level,
                                 seed=seed)
            p = PAPER_TABLE_VI.get((m, b), (np.nan,) * 3)
            rows.append(dict(metric=m, baseline=b, delta=e.value, low=e.interval[0],
                             high=e.interval[1], cells=e.n, paper_delta=p[0], paper_low=p[1],
                             paper_high=p[2]))
    return pd.DataFrame(rows)


def pattern_checks(df: pd.DataFrame, *, learner: str = "rf") -> dict[str, bool]:
    """The paper's main orderings, checked on the noisy cells of ``learner``.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table.
    learner : str, default='rf'

    Returns
    -------
    dict
        Claim to whether it holds here.
    """
    t = method_table(df, learner=learner)
    t = t.drop(index="oracle", errors="ignore")
    r = rate_table(df, learner=learner)
    mo = mode_table(df, learner=learner)
    out = {
        "LWCal has the lowest mean ECE": t["ece"].idxmin() == "lwcal",
        "Gated-LWCal has the lowest mean NLL": t["nll"].idxmin() == "gated_lwcal",
        "Raw has the highest mean AUC": t["auc"].idxmax() == "raw",
        "Gated-LWCal AUC >= LWCal AUC": t.loc["gated_lwcal", "auc"] >= t.loc["lwcal", "auc"],
        "Isotonic ECE between LWCal and raw":
            t.loc["lwcal", "ece"] < t.loc["isotonic", "ece"] < t.loc["raw", "ece"],
        "TrimCal-Iso has the worst mean NLL": t["nll"].idxmax() == "trimcal_iso",
        "Gated-LWCal Brier <= LWCal Brier + 0.002":
            t.loc["gated_lwcal", "brier"] <= t.loc["lwcal", "brier"] + 0.002,
    }
    for m in ("platt", "beta"):
        if m in t.index:
            out[f"{METHOD_TITLES[m]} NLL above raw"] = t.loc[m, "nll"] > t.loc["raw", "nll"]
    ds = dataset_table(df, learner=learner)
    worse = sorted(ds.index[ds["lwcal_ece"] >= ds["raw_ece"]])
    out[f"LWCal fails to reduce ECE only on Synthetic Sparse (here: {worse or 'none'})"] = \
        worse == ["Synthetic Sparse"]
    low = [x for x in r.index if x <= 0.3]
    if low:
        out["At rates <= 0.3, LWCal and Gated-LWCal beat raw and isotonic on ECE and NLL"] = \
            all(r.loc[x, f"{m}_{a}"] < r.loc[x, f"{m}_{b}"] for x in low
                for m in ("ece", "nll") for a in ("lwcal", "gated_lwcal")
                for b in ("raw", "isotonic"))
    if 0.4 in r.index:
        out["At rate 0.4, raw has the best NLL of the four"] = \
            r.loc[0.4, [f"nll_{k}" for k in _FOUR]].idxmin() == "nll_raw"
    if "asymmetric" in mo.index:
        a = mo.loc["asymmetric"]
        out["Asymmetric: Gated-LWCal NLL < raw NLL < LWCal NLL"] = \
            a["nll_gated_lwcal"] < a["nll_raw"] < a["nll_lwcal"]
    return {k: bool(v) for k, v in out.items()}


def _cell(v: object) -> str:
    if isinstance(v, float | np.floating):
        return "" if np.isnan(v) else f"{v:.3f}"
    return str(v)


def _md(t: pd.DataFrame, index: bool = True) -> str:
    """A markdown pipe table (three decimals)."""
    t = t.reset_index() if index else t
    head = [str(c) for c in t.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |"
              for row in t.itertuples(index=False)]
    return "\n".join(lines)


def render(df: pd.DataFrame, *, bootstrap: bool = True, n_boot: int = 2000) -> str:
    """All tables as markdown text, the paper's values beside ours.

    Parameters
    ----------
    df : pandas.DataFrame
        The results table.
    bootstrap : bool, default=True
        Add the paired bootstrap table (over every noisy cell of every learner).
    n_boot : int, default=2000

    Returns
    -------
    str
    """
    parts = []
    n = _n_cells(noisy(df))
    parts += [f"## Table III: method means over {n} noisy random-forest cells", "",
              _md(method_table(df)), ""]
    parts += ["## Table IV: by noise rate", "", _md(rate_table(df)), ""]
    parts += ["## Table V: by noise mechanism", "", _md(mode_table(df)), ""]
    g = gate_table(df)
    if not g.empty:
        parts += ["## Table VII: gate sensitivity", "", _md(g, index=False), ""]
    parts += ["## Table VIII: by task", "", _md(dataset_table(df)), ""]
    parts += ["## Table IX: class-conditional ECE (our definitions)", "", _md(class_table(df)),
              ""]
    if set(df["learner"]) - {"rf"}:
        parts += ["## Table X: base learners at 20-30% noise", "", _md(robustness_table(df)),
                  ""]
    if bootstrap:
        cells = df[df["rate"] > 0]
        parts += [f"## Paired bootstrap, Gated-LWCal minus baseline ({n_boot} resamples, "
                  "95% percentile), all noisy cells of every learner", "",
                  _md(bootstrap_table(cells, n_boot=n_boot), index=False), ""]
    parts += ["## The paper's orderings", ""]
    parts += [f"- {k}: {'holds' if v else 'does NOT hold'}" for k, v in
              pattern_checks(df).items()]
    return "\n".join(parts) + "\n"
