"""What Figs. 9-13 show, computed from the run CSVs (the notebooks plot these and write them as the artifact CSV).

Conventions as in ``summaries``: ``kind`` "curve" rows are plotted, the other kinds hold what the claims read.
R = 1-based index of the first entry of the (trial-mean) curve meeting the level (Sec. V-A.3); for curves
evaluated every few iterations (Europarl AC) R = step + 1 of the first evaluation meeting it.
CR = 1 - q R_C / (32 R_A), rounded half to even to 4 decimals; NaN when a method never meets the level.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.comm.conventions import gcca_iterations_to_level
from fedrepro.gcca.summaries import cr

LEVELS = (1.5, 2.0, 4.0)


def _R(values, level, reach="below") -> float:
    R = gcca_iterations_to_level(values, level, reach=reach)
    return float("nan") if R is None else float(R)


def _R_sparse(steps, values, level, reach) -> float:
    """R for a curve evaluated at some steps only: step + 1 of the first evaluation meeting the level."""
    values = np.asarray(values, dtype=float)
    hit = np.flatnonzero(values < level if reach == "below" else values >= level)
    return float(np.asarray(steps)[hit[0]] + 1) if hit.size else float("nan")


# ---- Fig. 9 (Europarl) --------------------------------------------------------------------------------------------

def fig9(runs: pd.DataFrame, ac_level: float = 0.5) -> pd.DataFrame:
    ref = runs[runs.kind == "reference"].set_index("metric")["value"]
    v_star = float(ref["v_star"])
    cv = runs[runs.kind == "curve"].pivot_table(index=["method", "q", "step"], columns="metric", values="value")
    cv = cv.reset_index()
    cv["kind"] = "curve"
    cv["ratio"] = cv["objective"] / v_star
    q = int(cv.loc[cv.method == "cutemaxvar", "q"].iloc[0])
    alt = cv[cv.method == "altmaxvar"].sort_values("step")
    cute = cv[cv.method == "cutemaxvar"].sort_values("step")
    rows = [{"kind": "reference", **{k: float(v) for k, v in ref.items()}}]
    for level in LEVELS:
        R_A, R_C = _R(alt.objective, level * v_star), _R(cute.objective, level * v_star)
        rows.append({"kind": "level", "level": level, "R_A": R_A, "R_C": R_C, "q": q, "cr": cr(R_C, R_A, q)})
    a_ac, c_ac = alt.dropna(subset=["ac"]), cute.dropna(subset=["ac"])
    reach = "below" if a_ac.ac.iloc[0] >= ac_level else "at_least"  # the direction Alt crosses first
    R_A, R_C = _R_sparse(a_ac.step, a_ac.ac, ac_level, reach), _R_sparse(c_ac.step, c_ac.ac, ac_level, reach)
    rows.append({"kind": "ac_level", "level": ac_level, "direction": "falls below" if reach == "below" else "rises to",
                 "R_A": R_A, "R_C": R_C, "q": q, "cr": cr(R_C, R_A, q), "ac0": float(a_ac.ac.iloc[0]),
                 "ac_final_alt": float(a_ac.ac.iloc[-1]), "ac_final_cute": float(c_ac.ac.iloc[-1])})
    m = alt.merge(cute, on="step", suffixes=("_a", "_c"))
    late = m[m.step >= 5]
    acm = m.dropna(subset=["ac_a", "ac_c"])
    rows.append({"kind": "overlap", "max_gap": float((abs(late.objective_c - late.objective_a) / late.objective_a).max()),
                 "max_ac_gap": float(abs(acm.ac_c - acm.ac_a).max()),
                 "bpv_ratio": float(cute.bpv.iloc[-1] / alt.bpv.iloc[-1]), "q": q})
    return pd.concat([cv, pd.DataFrame(rows)], ignore_index=True)


# ---- Figs. 10-11 (deep toy) ---------------------------------------------------------------------------------------

def fig10(runs: pd.DataFrame) -> pd.DataFrame:
    pts = runs[runs.kind == "points"][["kind", "method", "view", "x", "y", "label"]]
    fin = runs[(runs.kind == "final") & (runs.metric == "cluster_acc")]
    acc = fin.assign(kind="cluster", cluster_acc=fin.value)[["kind", "method", "view", "cluster_acc"]]
    get = lambda m, v: float(fin[(fin.method == m) & (fin.view.astype(str) == v)].value.iloc[0])
    raw = [get("raw", str(i)) for i in (1, 2, 3)]
    summary = pd.DataFrame([{"kind": "cluster_G", "alt": get("altmaxvar", "G"), "cute": get("cutemaxvar", "G"),
                             "raw_max": max(raw), "raw_mean": float(np.mean(raw))}])
    return pd.concat([pts, acc, summary], ignore_index=True)


def accuracy_curves(runs: pd.DataFrame) -> pd.DataFrame:
    cv = runs[runs.kind == "curve"]
    acc = cv[cv.metric == "accuracy"].groupby(["method", "q", "step"])["value"].agg(["mean", "std", "count"])
    bpv = cv[cv.metric == "bpv"].groupby(["method", "q", "step"])["value"].mean().rename("bpv")
    obj = cv[cv.metric == "objective"].groupby(["method", "q", "step"])["value"].mean().rename("objective")
    out = acc.rename(columns={"mean": "accuracy", "std": "accuracy_std", "count": "trials"}).join(bpv).join(obj)
    out = out.reset_index()
    out["accuracy_std"] = out["accuracy_std"].fillna(0.0)
    out.insert(0, "kind", "curve")
    return out


def _deep_cr(cv: pd.DataFrame, level: float) -> dict:
    alt = cv[cv.method == "altmaxvar"].sort_values("step")
    cute = cv[cv.method == "cutemaxvar"].sort_values("step")
    q = int(cute.q.iloc[0])
    R_A, R_C = _R(alt.accuracy, level, "at_least"), _R(cute.accuracy, level, "at_least")
    return {"kind": "cr", "level": level, "R_A": R_A, "R_C": R_C, "q": q, "cr": cr(R_C, R_A, q),
            "best_alt": float(alt.accuracy.max()), "best_cute": float(cute.accuracy.max())}


def fig11(runs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    cv = accuracy_curves(runs)
    alt = cv[cv.method == "altmaxvar"].set_index("step")
    cute = cv[cv.method == "cutemaxvar"].set_index("step")
    excess = (abs(cute.accuracy - alt.accuracy) - np.maximum(alt.accuracy_std, cute.accuracy_std)).loc[1:]
    band = {"kind": "band", "within_band_frac": float((excess <= 0).mean()), "max_excess": float(excess.max()),
            "trials": int(alt.trials.min())}
    return pd.concat([cv, pd.DataFrame([_deep_cr(cv, level), band])], ignore_index=True)


# ---- Figs. 12-13 (EHR) --------------------------------------------------------------------------------------------

def fig12(runs: pd.DataFrame) -> pd.DataFrame:
    pts = runs[runs.kind == "points"][["kind", "method", "view", "x", "y", "label"]]
    fin = runs[(runs.kind == "final") & (runs.metric == "svm_acc")]
    acc = fin.assign(kind="svm", svm_acc=fin.value)[["kind", "method", "svm_acc"]]
    info = runs[runs.kind == "info"].set_index("metric")["value"]
    get = lambda m: float(fin[fin.method == m].value.iloc[0])
    rows = [{"kind": "acc_summary", "raw": get("raw"), "alt": get("altmaxvar"), "cute": get("cutemaxvar")},
            {"kind": "info", "J": int(info["diagnoses_kept"]), "medicines": int(info["medicines"]),
             "groups": int(info["groups"]), "J_train": int(info["J_train"]), "J_test": int(info["J_test"])}]
    return pd.concat([pts, acc, pd.DataFrame(rows)], ignore_index=True)


def fig13(runs: pd.DataFrame, level: float = 0.80, early: int = 5) -> pd.DataFrame:
    cv = accuracy_curves(runs)
    alt = cv[cv.method == "altmaxvar"].set_index("step")
    cute = cv[cv.method == "cutemaxvar"].set_index("step")
    shape = {"kind": "shape", "early_gap": float((alt.accuracy - cute.accuracy).loc[1:early].mean()),
             "best_step_alt": int(alt.accuracy.idxmax()), "best_step_cute": int(cute.accuracy.idxmax()),
             "trials": int(alt.trials.min())}
    return pd.concat([cv, pd.DataFrame([_deep_cr(cv, level), shape])], ignore_index=True)
