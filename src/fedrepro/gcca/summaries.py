"""What each artifact shows, computed from the run CSVs (the notebooks plot these and write them as the artifact's CSV).

Every table has a ``kind`` column: ``curve`` rows are the plotted trial-mean curves, the other kinds hold
the numbers the claims read (crossing iterations, CR, final ratios, ...): trial means (Sec. V-A.4), R and CR
(Sec. V-A.3: R = 1-based first index strictly below c v*, CR = 1 - q R_C / (32 R_A), "-" = NaN) and BPV (Sec. V-A.3).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.comm.conventions import Q_FULL, gcca_cr, round_half_even
from fedrepro.gcca.experiments import iterations_to_level, mean_curves, reference

LEVELS = (1.5, 2.0, 4.0)


def curves(runs: pd.DataFrame, by=("variant", "method", "start", "q", "batch", "I")) -> pd.DataFrame:
    """Trial-mean objective, BPV and cumulative time per variant and step."""
    by = [b for b in by if b in runs]
    obj = mean_curves(runs, by, "objective")
    for metric in ("bpv", "time"):
        m = mean_curves(runs, by, metric)[by + ["step", metric]]
        obj = obj.merge(m, on=by + ["step"], how="left")
    obj.insert(0, "kind", "curve")
    return obj


def crossing(curve: pd.DataFrame, level: float) -> float:
    c = curve.sort_values("step")
    return iterations_to_level(c["objective"].to_numpy(), c["step"].to_numpy(), level)


def cr(r_c: float, r_a: float, q: int) -> float:
    if np.isnan(r_c) or np.isnan(r_a):
        return float("nan")
    return round_half_even(gcca_cr(int(r_c), int(r_a), q), 4)


def with_ratio(cv: pd.DataFrame, v_star) -> pd.DataFrame:
    cv = cv.copy()
    cv["v_star"] = v_star if np.isscalar(v_star) else cv["I"].map(v_star)
    cv["ratio"] = cv["objective"] / cv["v_star"]
    return cv


# ---- Fig. 3 ----------------------------------------------------------------------------------------------------

def fig3(runs: pd.DataFrame) -> pd.DataFrame:
    v_star, mv = reference(runs, "v_star"), reference(runs, "mvlsa")
    cv = with_ratio(curves(runs), v_star)
    rows = [{"kind": "reference", "v_star": v_star, "mvlsa": mv}]
    for start in ("warm", "randn"):
        for level in LEVELS:
            R = {m: crossing(cv[(cv.start == start) & (cv.method == m)], level * v_star) for m in ("altmaxvar", "cutemaxvar")}
            rows.append({"kind": "crossing", "start": start, "level": level, "R_alt": R["altmaxvar"], "R_cute": R["cutemaxvar"]})
    for (variant, method, start), c in cv.groupby(["variant", "method", "start"]):
        c = c.sort_values("step")
        rows.append({"kind": "final", "variant": variant, "method": method, "start": start,
                     "R": int(c.step.iloc[-1]), "final_ratio": float(c.ratio.iloc[-1]),
                     "R15": crossing(c, 1.5 * v_star)})
    return pd.concat([cv, pd.DataFrame(rows)], ignore_index=True)


# ---- Fig. 4, Table I, Fig. 5 -------------------------------------------------------------------------------------

def fig4(runs: pd.DataFrame) -> pd.DataFrame:
    v_star = reference(runs, "v_star")
    return with_ratio(curves(runs), v_star)


def trials_reaching(runs: pd.DataFrame, level: float) -> pd.Series:
    """Per (method, q): how many trials' own curves fall below level x their own v* (a dash in a table says 0)."""
    v_star = runs[(runs.variant == "reference") & (runs.metric == "v_star")].set_index("seed")["value"]
    obj = runs[(runs.metric == "objective") & (runs.variant != "reference")].sort_values("step")
    reached = obj.groupby(["method", "q", "seed"]).apply(
        lambda c: bool((c.value.to_numpy() < level * v_star[c.name[2]]).any()), include_groups=False)
    return reached.groupby(["method", "q"]).sum()


def table1(runs: pd.DataFrame, level: float = 1.5) -> pd.DataFrame:
    """CR per q at level x v* (Table I): R_A of AltMaxVar, R_C of each CuteMaxVar q (trial-mean curves), and how
    many of the trials behind the means reach the level on their own."""
    v_star = reference(runs, "v_star")
    cv = curves(runs)
    R_A = crossing(cv[cv.method == "altmaxvar"], level * v_star)
    reached = trials_reaching(runs, level)
    trials = int(runs.loc[runs.variant != "reference", "seed"].nunique())
    rows = []
    for q in sorted(cv.loc[cv.method == "cutemaxvar", "q"].unique()):
        R_C = crossing(cv[(cv.method == "cutemaxvar") & (cv.q == q)], level * v_star)
        final = cv[(cv.method == "cutemaxvar") & (cv.q == q)].sort_values("step").objective.iloc[-1] / v_star
        rows.append({"row": "cr", "q": int(q), "level": level, "R_A": R_A, "R_C": R_C, "cr": cr(R_C, R_A, int(q)),
                     "final_ratio": final, "v_star": v_star, "trials": trials,
                     "reached_A": int(reached.loc[("altmaxvar", 32)]), "reached_C": int(reached.loc[("cutemaxvar", q)])})
    return pd.DataFrame(rows)


def fig5(runs: pd.DataFrame, q: int = 3, levels=LEVELS) -> pd.DataFrame:
    v_star = reference(runs, "v_star")
    cv = with_ratio(curves(runs), v_star)
    cv = cv[(cv.method == "altmaxvar") | (cv.q == q)]
    alt, cute = cv[cv.method == "altmaxvar"], cv[cv.method == "cutemaxvar"]
    rows = []
    for level in levels:
        R_A, R_C = crossing(alt, level * v_star), crossing(cute, level * v_star)
        rows.append({"kind": "level", "level": level, "q": q, "R_A": R_A, "R_C": R_C, "cr": cr(R_C, R_A, q), "v_star": v_star})
    return pd.concat([cv, pd.DataFrame(rows)], ignore_index=True)


# ---- Fig. 6 --------------------------------------------------------------------------------------------------------

def fig6(runs: pd.DataFrame, level: float = 2.0) -> pd.DataFrame:
    """Per variant: final f/v*, the mean wall clock to first reach level x v* (NaN: never), time per iteration."""
    v_star = reference(runs, "v_star")
    cv = with_ratio(curves(runs), v_star)
    rows = []
    for (variant, method, batch), c in cv.groupby(["variant", "method", "batch"]):
        c = c.sort_values("step")
        R = crossing(c, level * v_star)
        t_reach = float(c.time.iloc[int(R) - 1]) if not np.isnan(R) else float("nan")
        rows.append({"kind": "final", "variant": variant, "method": method, "batch": int(batch), "level": level,
                     "final_ratio": float(c.ratio.iloc[-1]), "R_level": R, "t_reach": t_reach,
                     "time_per_iter": float(c.time.iloc[-1] / c.step.iloc[-1])})
    return pd.concat([cv, pd.DataFrame(rows)], ignore_index=True)


# ---- Fig. 7 --------------------------------------------------------------------------------------------------------

def fig7(runs: pd.DataFrame, from_step: int = 5) -> pd.DataFrame:
    v_star = reference(runs, "v_star", by=["I"])
    cv = with_ratio(curves(runs), v_star)
    rows = []
    for I, c in cv.groupby("I"):
        a = c[c.method == "altmaxvar"].set_index("step").objective
        u = c[c.method == "cutemaxvar"].set_index("step").objective
        gap = ((u - a).abs() / a)[a.index >= from_step]
        rows.append({"kind": "per_I", "I": int(I), "v_star": float(v_star[I]), "max_gap": float(gap.max()),
                     "final_ratio_alt": float(a.iloc[-1] / v_star[I]), "final_ratio_cute": float(u.iloc[-1] / v_star[I]),
                     "time_per_iter_alt": float(c[c.method == "altmaxvar"].time.max() / a.index.max()),
                     "time_per_iter_cute": float(c[c.method == "cutemaxvar"].time.max() / u.index.max())})
    return pd.concat([cv, pd.DataFrame(rows)], ignore_index=True)


# ---- Fig. 8 --------------------------------------------------------------------------------------------------------

def fig8(runs: pd.DataFrame, from_step: int = 5) -> pd.DataFrame:
    """Per variant: final f/v*, max relative gap to AltMaxVar per iteration, BPV to reach the common level.

    The common level is the mean of f(0) and AltMaxVar's final value (halfway down AltMaxVar's descent), so
    every compression level is judged on the same target; NaN BPV: never reached."""
    v_star, density = reference(runs, "v_star"), reference(runs, "density")
    cv = with_ratio(curves(runs), v_star)
    alt = cv[cv.method == "altmaxvar"].set_index("step").objective
    level = 0.5 * (alt.iloc[0] + alt.iloc[-1])
    rows = []
    for (variant, method, q), c in cv.groupby(["variant", "method", "q"]):
        c = c.sort_values("step")
        R = crossing(c, level)
        o = c.set_index("step").objective
        gap = ((o - alt).abs() / alt)[alt.index >= from_step]
        rows.append({"kind": "final", "variant": variant, "method": method, "q": int(q), "level": level,
                     "final_ratio": float(c.ratio.iloc[-1]), "R_level": R,
                     "bpv_level": float(c.bpv.iloc[int(R) - 1]) if not np.isnan(R) else float("nan"),
                     "max_gap": float(gap.max()), "v_star": v_star, "density": density,
                     "mvlsa_ratio": reference(runs, "mvlsa") / v_star})
    return pd.concat([cv, pd.DataFrame(rows)], ignore_index=True)


def motivating_example(J: int = 10**6, K: int = 300) -> dict:
    """Sec. III-A / C27: one J x K full-precision message, in bits, bytes and GB (10^9 bytes), via the comm ledger."""
    from fedrepro.comm import BitLedger, get_compressor

    msg = get_compressor("identity")(np.zeros((1, K)), batched=True)  # one row of the message
    ledger = BitLedger(1)
    ledger.record("up", msg.bits * J, step=0)
    bits = ledger.total_bits("up")
    return {"row": "motivating", "J": J, "K": K, "bits": bits, "gigabytes": bits / 8 / 1e9, "q_full": Q_FULL}
