"""The consensus step size γ of thesis ch. 3, read from grid runs (assumption ch3:A-10).

The thesis says only that γ is "initialized (see Theorem 2)"; Theorem 2's value is unusable (about 1e-5 on these
rings), so γ must be tuned, and the criterion decides the result:
  "a10"        the pre-registered A-10 rule: the lowest training loss of the averaged model after `tune_frac` of the run.
               It sees the start only: on one class per node it picks γ = 1 for SQuARM, whose local models then
               drift apart (consensus distance ~1e8-1e9) while the test error rises after an early best.
  "whole_run"  the lowest final test error among the stable runs: those whose consensus distance (1/n)‖X − X̄‖²
               at T is at most `growth_max` (2) times its value at T/2, i.e. grows no faster than t over the second
               half while the step η_t = 1/(t + 100) decays like 1/t.  A stable error-feedback loop keeps it level
               or shrinking (the trigger threshold's steps at t = 1000, 2000, ... let it creep up a little);
               unstable γ's grow it geometrically, by 10³-10³⁰ on Fig. 3.4's runs.
Both are read from the same runs (every γ of the grid over the whole horizon: `gamma_grid_runs`), per
configuration, method and trigger reference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CRITERIA = ("whole_run", "a10")
GROUP = ["configuration", "method", "trigger_reference"]


def _wide(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, method, trigger reference, γ, seed, step) with every metric as a column."""
    runs = runs.copy()
    if "trigger_reference" not in runs:
        runs["trigger_reference"] = np.nan
    # methods without a trigger have no reference: "-" keeps them in group-bys
    runs["trigger_reference"] = runs["trigger_reference"].fillna("-")
    keys = [*GROUP, "gamma", "seed", "step"]
    wide = runs.pivot_table(index=keys, columns="metric", values="value").reset_index()
    ids = runs.drop_duplicates(keys)[keys + [c for c in ("bits_B32", "rounds") if c in runs]]
    return wide.merge(ids, on=keys)


def grid_summary(runs: pd.DataFrame, *, tune_frac: float = 0.1, growth_max: float = 2.0) -> pd.DataFrame:
    """Per (configuration, method, trigger reference, γ), means over seeds: final and best test error, the A-10
    criterion (training loss at the first evaluation at or after tune_frac·T), the consensus distance at T/2 and at
    T and their ratio, `stable`, trigger rate and final bits; `chosen_whole_run` / `chosen_a10` mark each
    criterion's γ in its group."""
    wide = _wide(runs)
    rows = []
    for key, g in wide.groupby([*GROUP, "gamma", "seed"], sort=False):
        g = g.sort_values("step")
        T = int(g["step"].iloc[-1])
        tune = g[g["step"] >= tune_frac * T].iloc[0]
        half = g[g["step"] <= T / 2].iloc[-1]
        last = g.iloc[-1]
        err = g["test_error"].to_numpy()
        rows.append(dict(zip([*GROUP, "gamma", "seed"], key), T=T, final_test_error=float(last["test_error"]),
                         best_test_error=float(np.nanmin(err)), best_step=int(g["step"].iloc[int(np.nanargmin(err))]),
                         tune_step=int(tune["step"]), train_loss_at_tune=float(tune["train_loss"]),
                         final_train_loss=float(last["train_loss"]),
                         consensus_half=float(half["consensus_dist"]), consensus_final=float(last["consensus_dist"]),
                         trigger_rate=float(last["trigger_rate"]), final_bits_B32=float(last.get("bits_B32", np.nan))))
    per_seed = pd.DataFrame(rows)
    # the runs' own order of configurations and methods (pivot_table sorted them by name), then γ
    for col in ("configuration", "method"):
        per_seed[col] = pd.Categorical(per_seed[col], categories=list(dict.fromkeys(runs[col])))
    per_seed = per_seed.sort_values([*GROUP, "gamma"], kind="stable")
    out = per_seed.groupby([*GROUP, "gamma"], sort=False, observed=True).mean(numeric_only=True).reset_index()
    for col in ("configuration", "method"):
        out[col] = out[col].astype(str)
    out["n_seeds"] = per_seed.groupby([*GROUP, "gamma"], sort=False, observed=True)["seed"].nunique().to_numpy()
    out = out.drop(columns="seed")
    out["consensus_growth"] = out["consensus_final"] / out["consensus_half"]
    out["growth_max"] = growth_max
    finite = np.isfinite(out["final_test_error"]) & np.isfinite(out["consensus_final"])
    out["stable"] = (finite & (out["consensus_growth"] <= growth_max)).astype(int)
    out["chosen_whole_run"] = 0
    out["chosen_a10"] = 0
    for _, g in out.groupby(GROUP, sort=False):
        ok = g[g["stable"] == 1]
        if len(ok):
            out.loc[ok["final_test_error"].idxmin(), "chosen_whole_run"] = 1
        a10 = g[np.isfinite(g["train_loss_at_tune"])]
        if len(a10):
            out.loc[a10["train_loss_at_tune"].idxmin(), "chosen_a10"] = 1
    return out


def chosen_gammas(summary: pd.DataFrame, criterion: str = "whole_run") -> dict[tuple[str, str, str], float]:
    """(configuration, method, trigger reference) -> the γ the criterion chose (vanilla: its one γ)."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}; got {criterion!r}")
    pick = summary[summary[f"chosen_{criterion}"] == 1]
    return {(c, m, r): float(g) for c, m, r, g in zip(pick.configuration, pick.method, pick.trigger_reference, pick.gamma)}


def derived_runs(runs: pd.DataFrame, summary: pd.DataFrame, derived: dict, criterion: str = "whole_run") -> pd.DataFrame:
    """The grid rows at the chosen γ, relabelled as named configurations of the figure.

    derived: {name: {grid: <grid configuration>, trigger_reference: copy | last_sent}}; each name gets the chosen
    run of every method of that grid configuration (SQuARM with that reference; methods without a trigger as they
    are).  A method with no stable γ is left out of that configuration (the figure and claims say so)."""
    chosen = chosen_gammas(summary, criterion)
    runs = runs.copy()
    ref = runs["trigger_reference"].fillna("-") if "trigger_reference" in runs else pd.Series("-", index=runs.index)
    frames = []
    for name, spec in derived.items():
        grid, want = spec["grid"], spec.get("trigger_reference", "copy")
        for (conf, method, r), gamma in chosen.items():
            if conf != grid or r not in ("-", want):
                continue
            sel = (runs["configuration"] == conf) & (runs["method"] == method) & (ref == r) & \
                  np.isclose(runs["gamma"].astype(float), gamma)
            part = runs[sel].copy()
            part["configuration"] = name
            part["grid_configuration"] = grid
            part["trigger_reference"] = r
            frames.append(part)
    if not frames:
        return runs.iloc[0:0]
    return pd.concat(frames, ignore_index=True)
