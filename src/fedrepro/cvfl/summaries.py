"""C-VFL tables and figures from the tidy run CSVs (the paper's Sec. 5 and App. D).

The metric is the run rows' ``test_metric`` (F1 or top-1 accuracy), except ImageNet-100's ``test_top5``
(Fig. D.8, §4 item 3).

- max metric: argmax of the seed-mean curve, reported with the population std (ddof=0, A-16) at that epoch;
- cost to target: per seed, the first evaluated epoch whose metric >= target, times the per-epoch cost of
  the paper's formula (bits_table); "–" (NaN) when any seed never reaches it (A-23), with the reached count;
- Table 5: time = rounds to target x (Q t_comp + t_c), t_comp = 10 ms (A-14).

A compressor's `comp_id` is its method's position in the experiment's `methods:` (the run rows carry it), so the
tables and claims key on the registry's order and a new method gets the next id.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

UNITS = {"mimic": ("MB", 8 * 2**20), "cifar10": ("GB", 8 * 2**30), "modelnet10": ("MB", 8 * 2**20),
         "imagenet100": ("GB", 8 * 2**30)}
METRIC = {"mimic": "test F1", "cifar10": "test accuracy (%)", "modelnet10": "test accuracy (%)",
          "imagenet100": "top-5 test accuracy (%)"}
METRIC_COLUMN = {"imagenet100": "test_top5"}       # the run-row column each dataset is judged on
RUN_KEYS = ["dataset", "M", "Q", "alg", "compressor", "b"]
T_COMP_MS = 10.0  # one local iteration


def simulated_time_s(rounds, Q: int, t_c_ms: float, t_comp_ms: float = T_COMP_MS):
    """Table 5's time model (§4 item 9, A-14), in seconds: R rounds, each Q local iterations of t_comp (parties and
    server in parallel) and one round trip t_c, whatever the message size."""
    return np.asarray(rounds, dtype=np.float64) * (Q * t_comp_ms + t_c_ms) / 1000.0


def metric_column(runs: pd.DataFrame) -> str:
    return METRIC_COLUMN.get(runs["dataset"].iloc[0], "test_metric") if len(runs) else "test_metric"


def resolve_target(runs: pd.DataFrame, target, fraction_of_none: float | None = None, Q: int = 10) -> float:
    """A number, or (A-22, quick scale) `fraction_of_none` x the max of the uncompressed seed-mean curve."""
    if fraction_of_none is None:
        return float(target)
    none = runs[(runs.compressor == "none") & (runs.Q == Q) & (runs.alg == 1)]
    mean = none.groupby(["M", "epoch"])[metric_column(runs)].mean()
    return round(float(fraction_of_none * mean.max()), 2 if mean.max() <= 1 else 1)


def curves(runs: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
    metric = metric or metric_column(runs)
    g = runs.groupby(RUN_KEYS + ["epoch"])
    out = g.agg(mean=(metric, "mean"), std=(metric, lambda v: float(np.std(v, ddof=0))), n=(metric, "size"),
                bits=("bits_table", "first"), rounds=("rounds", "first")).reset_index()
    return out


def summary_table(runs: pd.DataFrame, target: float, *, max_epoch: dict | None = None) -> pd.DataFrame:
    """One row per run configuration: max metric ± std, cost to target ± std (paper units), reduction."""
    ds = runs["dataset"].iloc[0]
    unit, per = UNITS[ds]
    metric = metric_column(runs)
    rows = []
    for key, g in runs.groupby(RUN_KEYS, sort=False):
        d = dict(zip(RUN_KEYS, key))
        gg = g if not max_epoch or d["Q"] not in max_epoch else g[g.epoch <= max_epoch[d["Q"]]]
        m = gg.groupby("epoch")[metric]
        mean, std = m.mean(), m.apply(lambda v: float(np.std(v, ddof=0)))
        e_star = int(mean.idxmax())
        costs, rounds = [], []
        for _, s in g.groupby("seed"):
            hit = s[s[metric] >= target].sort_values("epoch")
            costs.append(hit.bits_table.iloc[0] / per if len(hit) else np.nan)
            rounds.append(hit.rounds.iloc[0] if len(hit) else np.nan)
        costs, rounds = np.array(costs, float), np.array(rounds, float)
        reached = int(np.isfinite(costs).sum())
        rows.append({**d, "comp_id": int(g.comp_id.iloc[0]), "seeds": len(costs), "reached": reached,
                     "max_metric": float(mean[e_star]), "max_std": float(std[e_star]), "max_epoch": e_star,
                     "cost": float(costs.mean()) if reached == len(costs) else np.nan,
                     "cost_std": float(costs.std()) if reached == len(costs) else np.nan,
                     "cost_reached_mean": float(np.nanmean(costs)) if reached else np.nan,
                     "cost_reached_std": float(np.nanstd(costs)) if reached else np.nan,
                     "rounds": float(rounds.mean()) if reached == len(costs) else np.nan,
                     "rounds_list": ";".join("nan" if not np.isfinite(r) else str(int(r)) for r in rounds),
                     "epoch_cost": float(g[g.epoch == 1].bits_table.iloc[0] / per) if (g.epoch == 1).any() else np.nan,
                     "target": target, "unit": unit})
    t = pd.DataFrame(rows)
    for M, g in t.groupby("M"):
        none = g[(g.compressor == "none") & (g.Q == 10) & (g.alg == 1)]
        base = float(none.cost.iloc[0]) if len(none) else np.nan
        t.loc[g.index, "reduction_pct"] = 100 * (1 - g.cost / base)
    return t


def time_table(runs: pd.DataFrame, target: float, t_cs=(1, 10, 50, 200), t_comp_ms: float = T_COMP_MS) -> pd.DataFrame:
    """Table 5: simulated time (s) to target per (t_c, Q); mean ± population std over the seeds that reach it."""
    rows = []
    for (Q, alg), g in runs.groupby(["Q", "alg"]):
        R = []
        for _, s in g.groupby("seed"):
            hit = s[s.test_metric >= target].sort_values("epoch")
            R.append(float(hit.rounds.iloc[0]) if len(hit) else np.nan)
        R = np.array(R)
        ok = R[np.isfinite(R)]
        for tc in t_cs:
            t = simulated_time_s(ok, Q, tc, t_comp_ms)
            rows.append({"t_c": tc, "Q": int(Q), "alg": int(alg), "seeds": len(R), "reached": len(ok),
                         "time": float(t.mean()) if len(ok) else np.nan, "time_std": float(t.std()) if len(ok) else np.nan,
                         "rounds": float(ok.mean()) if len(ok) else np.nan, "target": target})
    out = pd.DataFrame(rows)
    for tc, g in out.groupby("t_c"):
        base = g[g.Q == 1].time
        if len(base):
            out.loc[g.index, "speedup_vs_q1"] = float(base.iloc[0]) / g.time
    return out


def cost_curves(runs: pd.DataFrame, x_max_bits: float | None = None) -> pd.DataFrame:
    """Seed-mean curves against cumulative cost (paper units), cut at x_max (the b=2 budget, §4 item 8).

    Each curve keeps its first point past the cut, so a curve that leaves the axis (no compression costs 16x
    b = 2 per epoch) is drawn up to the axis edge instead of vanishing; `x_max` (paper units) is the axis end.
    """
    c = curves(runs)
    _, per = UNITS[runs["dataset"].iloc[0]]
    c["cost"] = c["bits"] / per
    if x_max_bits is not None:
        inside = c.bits <= x_max_bits * (1 + 1e-9)
        first_past = c[~inside].sort_values("epoch").groupby(RUN_KEYS).head(1).index
        c = c[inside | c.index.isin(first_past)].assign(x_max=x_max_bits / per)
    return c
