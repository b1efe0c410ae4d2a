"""Each setting's numbers from run CSVs, by the figure's own summary code, so that the papers' own compressors get
exactly their figure's numbers and every other compressor is measured the same way.

`METRICS[setting](own, board, ctx)` -> rows (compressor, setting, column, value, method, source): `own` is the
figure's run (its methods renamed to compressors by config/leaderboard.yaml's `own.methods`), `board` the board
run(s) (or None); `ctx` holds the setting's spec, the scale and the registry.  A compressor that the board run
marked "n/a" gets one row with `value` NaN and the reason in `note`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

COLUMNS = ["setting", "column", "compressor", "value", "note", "method", "source"]


@dataclass
class SettingContext:
    name: str
    spec: dict
    scale: str
    registry: object

    @property
    def own_methods(self) -> dict[str, str]:
        """figure method -> compressor."""
        return {m: c for c, m in self.spec["own"]["methods"].items()}

    def run_params(self, experiment: str) -> dict:
        return self.registry.params(self.spec["paper"], experiment, self.spec["own"]["configuration"], self.scale)

    def artifact_params(self) -> dict:
        return dict(self.registry.artifact(self.spec["paper"], self.spec["figure"]).get("parameters") or {})


def _row(ctx, column, compressor, value, method, source, note=""):
    return {"setting": ctx.name, "column": column, "compressor": compressor, "value": float(value),
            "note": note, "method": method, "source": source}


def not_applicable_rows(ctx, board: pd.DataFrame | None, columns: list[str]) -> list[dict]:
    if board is None or "board_status" not in board:
        return []
    na = board[board.board_status != "ok"].drop_duplicates("board_compressor")
    return [_row(ctx, col, r.board_compressor, np.nan, "", "board", r.board_status)
            for r in na.itertuples() for col in columns]


def _ok(board: pd.DataFrame | None) -> pd.DataFrame | None:
    if board is None or "board_status" not in board:
        return None
    ok = board[board.board_status == "ok"]
    return ok if len(ok) else None


# ---- gcca: Table I's instance ----------------------------------------------------------------------------------

def gcca(own: pd.DataFrame, board: pd.DataFrame | None, ctx: SettingContext) -> list[dict]:
    """Bits per variable at the first step whose trial-mean objective is below level x v* (Table I's R), and the
    final f / v* of the trial-mean curve (Table I's `final_ratio`)."""
    from fedrepro.gcca.summaries import crossing, curves, reference

    level = float(ctx.spec.get("level", 1.5))
    rows = []
    for source, runs in (("figure", own), ("board", _ok(board))):
        if runs is None:
            continue
        v_star = reference(runs, "v_star")
        cv = curves(runs)
        for variant, c in cv.groupby("variant", sort=False):
            if source == "figure" and variant not in ctx.own_methods:
                continue
            c = c.sort_values("step")
            R = crossing(c, level * v_star)
            bpv = float(c.loc[c.step == R, "bpv"].iloc[0]) if np.isfinite(R) else np.nan
            name = ctx.own_methods.get(variant, variant) if source == "figure" else variant
            note = "" if np.isfinite(R) else f"not reached in {int(c.step.iloc[-1])} iterations"
            rows.append(_row(ctx, f"bpv to {level:g} v*", name, bpv, variant, source, note))
            rows.append(_row(ctx, "final f/v*", name, c.objective.iloc[-1] / v_star, variant, source))
    return rows + not_applicable_rows(ctx, board, [f"bpv to {level:g} v*", "final f/v*"])


# ---- C-VFL: Fig. 3 (b = 2) -------------------------------------------------------------------------------------

def cvfl_target(ctx: SettingContext, own_ds: pd.DataFrame, dataset: str) -> float:
    """The figure's target on a dataset (fedrepro.cvfl.artifacts.target, from the artifact's parameters)."""
    from fedrepro.cvfl.summaries import resolve_target

    p = ctx.artifact_params()
    fraction = (p.get("target_fraction") or {}).get(ctx.scale)
    fixed = (p.get("targets") or {}).get(dataset)
    if fraction is None:
        return float(fixed)
    return resolve_target(own_ds, None, min(0.99, float(fraction)))


def cvfl(own: pd.DataFrame, board: pd.DataFrame | None, ctx: SettingContext) -> list[dict]:
    """Communication cost (the paper's unit) to the figure's target on each dataset, mean over seeds (nan where a
    seed misses it), for Algorithm 1, Q = 10, M = 4, b = `b` (Fig. 3's curves)."""
    from fedrepro.cvfl.summaries import UNITS, summary_table

    b = int(ctx.spec.get("b", 2))
    rows = []
    ok = _ok(board)
    for ds in own.dataset.unique():
        own_ds = own[own.dataset == ds]
        target = cvfl_target(ctx, own_ds, ds)
        column = f"cost to target, {ds} ({UNITS[ds][0]})"
        for source, runs in (("figure", own_ds), ("board", None if ok is None else ok[ok.dataset == ds])):
            if runs is None or not len(runs):
                continue
            main = runs[(runs.Q == 10) & (runs.alg == 1) & (runs.M == 4) & runs.b.isin([b, 32])]
            for r in summary_table(main, target).itertuples():
                if source == "figure" and r.compressor not in ctx.own_methods:
                    continue
                name = ctx.own_methods.get(r.compressor, r.compressor) if source == "figure" else r.compressor
                note = "" if np.isfinite(r.cost) else f"{r.reached}/{r.seeds} seeds reach {target:g}"
                rows.append(_row(ctx, column, name, r.cost, r.compressor, source, note))
        rows += not_applicable_rows(ctx, None if board is None else board[board.dataset == ds], [column])
    return rows


# ---- thesis ch. 3: Fig. 3.2 ------------------------------------------------------------------------------------

def ch3(own: pd.DataFrame, board: pd.DataFrame | None, ctx: SettingContext) -> list[dict]:
    """Bits (B32, all nodes) at the first evaluation whose seed-mean test metric reaches the figure's target (the
    target the figure's summary chose: the stated one, or A-49's fallback that every paper method reaches)."""
    from fedrepro.decentral.figures import curves, summary

    p, conf = ctx.artifact_params(), ctx.spec["own"]["configuration"]
    metric, higher = p["metric"], bool(p["higher"])
    n_nodes = int(ctx.run_params(ctx.spec["own"]["experiment"])["n"])
    own = own[own.configuration == conf]
    summ = summary(curves(own), metric=metric, target=float(p["target"]), higher=higher, n_nodes=n_nodes,
                   paper=p.get("paper_savings"))
    target = float(summ.target.iloc[0])
    column = "bits to target (B32)"
    rows = [_row(ctx, column, ctx.own_methods[r.method], r.bits_B32_to_target, r.method, "figure",
                 "" if r.reached else f"{metric} {target:g} not reached")
            for r in summ.itertuples() if r.method in ctx.own_methods]
    ok = _ok(board)
    if ok is not None:
        for method, c in curves(ok).groupby("method", sort=False):
            hit = c[c[metric] >= target] if higher else c[c[metric] <= target]
            rows.append(_row(ctx, column, method, hit.bits_B32.iloc[0] if len(hit) else np.nan, method, "board",
                             "" if len(hit) else f"{metric} {target:g} not reached"))
    return rows + not_applicable_rows(ctx, board, [column])


# ---- thesis ch. 4: Fig. 4.1 ------------------------------------------------------------------------------------

def ch4(own: pd.DataFrame, board: pd.DataFrame | None, ctx: SettingContext) -> list[dict]:
    """Bits (convention P) at t_tau, the first iteration whose relative gap is below tau (log-interpolated between
    logged points; fedrepro.mtl.experiments.summarize), with sample feedback (Algorithm 2)."""
    from fedrepro.mtl.experiments import crossing, curves

    feedback = ctx.spec.get("feedback", "sample")
    tau = float(ctx.run_params(ctx.spec["own"]["experiment"])["tau"])
    column = f"bits to gap {tau:g} (P)"
    rows = []
    for source, runs in (("figure", own), ("board", _ok(board))):
        if runs is None:
            continue
        cv = curves(runs[runs.feedback == feedback])
        for scheme, g in cv.groupby("scheme", sort=False):
            if source == "figure" and scheme not in ctx.own_methods:
                continue
            g = g.sort_values("step")
            steps = g.step.to_numpy()
            t_tau = crossing(steps, g.gap.to_numpy(), tau)
            bits = float(np.interp(t_tau, steps, g.bits_P.to_numpy())) if np.isfinite(t_tau) else np.nan
            name = ctx.own_methods.get(scheme, scheme) if source == "figure" else scheme
            rows.append(_row(ctx, column, name, bits, scheme, source,
                             "" if np.isfinite(t_tau) else f"gap {tau:g} not reached in {int(steps[-1])} iterations"))
    return rows + not_applicable_rows(ctx, board, [column])


METRICS = {"gcca": gcca, "cvfl": cvfl, "ch3": ch3, "ch4": ch4}
