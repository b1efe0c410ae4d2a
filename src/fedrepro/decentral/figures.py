"""Figure data and plots for thesis Figs. 3.1-3.4 (spec §4, §5, §8) and the threshold-scale sweep (RISK R-1).

`figure_data(runs, ...)` -> one tidy frame: `row == "curve"` (seed-mean per method and eval step) and
`row == "summary"` (per method: X-to-target under B32/B64idx/Blog, savings of SQuARM against it, rounds, airtime
and wall-clock to target at 100 Kbps, trigger rate, final metrics) that the claims read.
`trigger_sweep_data(runs, ...)` -> the same two kinds of rows per threshold scale (`trigger_scale`) of SQuARM.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.decentral.labels import CONVENTIONS, METHOD_LABELS
from fedrepro.decentral.linkmodel import RATE_100KBPS, TAU_OH, airtime, wall_clock

COLORS = {"squarm": "#d62728", "squarm_noet": "#ff9896", "choco_sign": "#1f77b4", "choco_topk": "#2ca02c",
          "vanilla": "#7f7f7f"}


def curves(runs: pd.DataFrame, by: tuple[str, ...] = ("method",)) -> pd.DataFrame:
    """Seed means per configuration, `by` (the method; the threshold sweep adds `trigger_scale`) and eval step."""
    keys = ["configuration", *by, "step"]
    wide = runs.pivot_table(index=keys + ["seed"], columns="metric", values="value").reset_index()
    extra = [c for c in ("epoch", "bits_B32", "bits_B64idx", "bits_Blog", "bits_per_node", "rounds", "transmissions",
                         "airtime_bits", "gamma", "seconds_per_iter") if c in runs]
    ids = runs.drop_duplicates(keys + ["seed"])[keys + ["seed"] + extra]
    wide = wide.merge(ids, on=keys + ["seed"])
    num = [c for c in wide.columns if c not in keys + ["seed"]]
    out = wide.groupby(keys, sort=False)[num].mean().reset_index()
    out["n_seeds"] = wide.groupby(keys, sort=False)["seed"].nunique().to_numpy()
    return out


def _first_reach(c: pd.DataFrame, metric: str, target: float, higher: bool):
    ok = c[metric] >= target if higher else c[metric] <= target
    return c[ok].iloc[0] if ok.any() else None


def choose_target(cur: pd.DataFrame, metric: str, target: float, higher: bool, fallback: float = 0.005,
                  by: str | list[str] = "method"):
    """The stated target if every method (every group of `by`) reaches it; else (A-49) the loosest level every one
    reaches, ± 0.005."""
    best = cur.groupby(by)[metric].max() if higher else cur.groupby(by)[metric].min()
    if (best >= target).all() if higher else (best <= target).all():
        return target, "stated"
    return (float(best.min()) - fallback, "fallback A-49") if higher else (float(best.max()) + fallback, "fallback A-49")


def summary(cur: pd.DataFrame, *, metric: str, target: float, higher: bool, n_nodes: int, paper: dict,
            tau_comp: float | None = None, rate: float = RATE_100KBPS, tau_oh: float = TAU_OH) -> pd.DataFrame:
    rows = []
    for conf, cc in cur.groupby("configuration", sort=False):
        tgt, how = choose_target(cc, metric, target, higher)
        cc = cc.copy()
        per_node_compute = float(cc["seconds_per_iter"].mean()) / n_nodes if tau_comp is None else tau_comp
        cc["airtime_s"] = airtime(cc["airtime_bits"], rate)
        cc["wall_s"] = wall_clock(cc["step"], cc["airtime_bits"], cc["rounds"], per_node_compute, rate, tau_oh)
        hit = {m: _first_reach(c, metric, tgt, higher) for m, c in cc.groupby("method", sort=False)}
        sq = hit.get("squarm")
        # calibrated compute time (spec §4): total compute to target = 0.345 x SQuARM's airtime to target
        tau_cal = (0.345 * sq["airtime_s"] / max(1.0, sq["step"])) if sq is not None else np.nan
        van = cc[cc.method == "vanilla"]
        for m, c in cc.groupby("method", sort=False):
            h, last = hit[m], c.iloc[-1]
            r = {"configuration": conf, "row": "summary", "method": m, "label": METHOD_LABELS.get(m, m),
                 "target": tgt, "target_rule": how, "reached": int(h is not None),
                 "final_" + metric: float(last[metric]), "final_train_loss": float(last["train_loss"]),
                 "final_test_error": float(last["test_error"]), "final_test_acc": float(last["test_acc"]),
                 "trigger_rate": float(last["trigger_rate"]), "final_bits_B32": float(last["bits_B32"]),
                 "paper_savings": float(paper.get(m, np.nan)) if paper else np.nan, "tau_comp": per_node_compute,
                 "tau_comp_calibrated": tau_cal}
            for key in ["step", "rounds", "airtime_s", "wall_s"] + [f"bits_{k}" for k in CONVENTIONS]:
                col = key if key != "step" else "step"
                r[f"{key}_to_target"] = float(h[col]) if h is not None else np.nan
            if h is not None and np.isfinite(tau_cal):
                r["wall_cal_s_to_target"] = float(h["step"] * tau_cal + h["airtime_s"] + tau_oh * h["rounds"])
            else:
                r["wall_cal_s_to_target"] = np.nan
            r["final_metric_vanilla"] = float(van[metric].iloc[-1]) if len(van) else np.nan
            rows.append(r)
    out = pd.DataFrame(rows)
    # savings of SQuARM against each method (method / squarm), per measure
    for conf, idx in out.groupby("configuration").groups.items():
        sub = out.loc[idx]
        sqr = sub[sub.method == "squarm"]
        for key in [f"bits_{k}" for k in CONVENTIONS] + ["airtime_s", "wall_s", "wall_cal_s", "rounds", "step"]:
            base = float(sqr[f"{key}_to_target"].iloc[0]) if len(sqr) else np.nan
            out.loc[idx, f"savings_{key}"] = sub[f"{key}_to_target"] / base
        van = sub[sub.method == "vanilla"]
        out.loc[idx, "rounds_to_target_vanilla"] = float(van["rounds_to_target"].iloc[0]) if len(van) else np.nan
        out.loc[idx, "final_train_loss_vanilla"] = float(van["final_train_loss"].iloc[0]) if len(van) else np.nan
        out.loc[idx, "final_bits_squarm"] = float(sqr["final_bits_B32"].iloc[0]) if len(sqr) else np.nan
    ratios = out[[f"savings_bits_{k}" for k in CONVENTIONS]].div(out["paper_savings"], axis=0)
    # closest convention's factor to the paper's value (spec §8: within x3 under at least one convention)
    out["best_factor"] = np.exp(np.abs(np.log(ratios.astype(float))).min(axis=1, skipna=True))
    out["savings_B32"] = out["savings_bits_B32"]
    return out


def figure_data(runs: pd.DataFrame, *, metric: str, target: float, higher: bool, n_nodes: int, paper: dict,
                tau_comp: float | None = None) -> pd.DataFrame:
    cur = curves(runs)
    cur.insert(1, "row", "curve")
    cur["airtime_s"] = airtime(cur["airtime_bits"])
    summ = summary(cur, metric=metric, target=target, higher=higher, n_nodes=n_nodes, paper=paper, tau_comp=tau_comp)
    taus = summ.groupby("configuration")["tau_comp"].first()
    cur["wall_s"] = [float(wall_clock(s, a, r, taus[c])) for s, a, r, c in
                     zip(cur["step"], cur["airtime_bits"], cur["rounds"], cur["configuration"])]
    return pd.concat([cur, summ], ignore_index=True, sort=False)


def plot_panels(data: pd.DataFrame, configuration: str, panels: list[tuple[str, str, bool, str]], title: str = "",
                target: float | None = None):
    """panels: (x column, y column, log x, panel title).  Returns the figure."""
    import matplotlib.pyplot as plt

    from fedrepro.plotting import apply_style

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8))
    axes = np.atleast_1d(axes)
    for ax, (x, y, logx, ptitle) in zip(axes, panels):
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0] if logx else c
            ax.plot(c[x], c[y], label=METHOD_LABELS.get(m, m), color=COLORS.get(m))
        if logx:
            ax.set_xscale("log")
        if target is not None and y in ("test_error", "test_acc"):
            ax.axhline(target, color="k", lw=0.7, ls=":")
        ax.set(xlabel=x.replace("_", " "), ylabel=y.replace("_", " "), title=ptitle)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def time_bars(data: pd.DataFrame, configuration: str, ax, column: str = "wall_s_to_target", title: str = ""):
    s = data[(data.row == "summary") & (data.configuration == configuration)]
    ax.bar([METHOD_LABELS.get(m, m).replace(" decentralized", "\ndecentralized") for m in s.method],
           s[column].fillna(0), color=[COLORS.get(m) for m in s.method])
    ax.set_yscale("log")
    ax.set(ylabel="seconds to target", title=title)
    ax.tick_params(axis="x", labelsize=6)


def fig3_3_figure(data: pd.DataFrame, configuration: str, title: str = "", target: float | None = None):
    """(a) accuracy vs airtime at 100 Kbps, (b-i) total time to target per scheme (bars, log y; measured compute
    time), (b-ii) accuracy vs wall-clock (ERRATA E-4: both readings of panel (b))."""
    import matplotlib.pyplot as plt

    from fedrepro.plotting import apply_style

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.9))
    for ax, x, t in ((axes[0], "airtime_s", "(a) accuracy vs communication time"),
                     (axes[2], "wall_s", "(b-ii) accuracy vs wall-clock")):
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0]
            ax.plot(c[x], c["test_acc"], label=METHOD_LABELS.get(m, m), color=COLORS.get(m))
        ax.set(xscale="log", xlabel=f"{x.replace('_s', '')} [s] at 100 Kbps", ylabel="Top-1 test accuracy", title=t)
        if target is not None:
            ax.axhline(target, color="k", lw=0.7, ls=":")
    tgt = data[(data.row == "summary") & (data.configuration == configuration)]["target"]
    time_bars(data, configuration, axes[1], title=f"(b-i) total time to Top-1 {float(tgt.iloc[0]):.3f}" if len(tgt) else "")
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# ---- the event-trigger threshold sweep (spec RISK R-1, §7.2; artifact fig3_4_trigger) ----------------------

def trigger_sweep_data(runs: pd.DataFrame, *, metric: str = "test_error", target: float = 0.12,
                       higher: bool = False, method: str = "squarm", reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """`row == "curve"`: seed means per threshold scale and eval step; `row == "summary"`: one row per scale with the
    observed trigger rate, bits / rounds / steps to target, final and best metric and final consensus distance.

    Two targets, both by Fig. 3.4's rule (`choose_target`: the stated target if every curve reaches it, else the
    loosest level every curve reaches + 0.005; A-37, A-49):
      `target_fig3_4`  the target of the Fig. 3.4 artifact itself, from `reference` (the fig3_4 runs: its four
                       methods): `*_to_fig3_4_target` columns;
      `target`         the same rule over the scales of the sweep (the loosest level every scale reaches).
    Ratios against scale 1 (the threshold as specified) and scale 0 (no trigger) are given where those scales ran.
    With `reference`, `max_abs_diff_vs_fig3_4` is the largest |difference| of the metric between the scale-1 curve
    and the reference's SQuARM curve at common steps (0 when the sweep re-runs Fig. 3.4's SQuARM exactly)."""
    runs = runs[runs["method"] == method]
    cur = curves(runs, by=("method", "trigger_scale"))
    cur.insert(1, "row", "curve")
    ref = curves(reference) if reference is not None and len(reference) else None
    rows = []
    for conf, cc in cur.groupby("configuration", sort=False):
        tgt, how = choose_target(cc, metric, target, higher, by="trigger_scale")
        rc = ref[ref.configuration == conf] if ref is not None else None
        ref_tgt, ref_how = choose_target(rc, metric, target, higher) if rc is not None and len(rc) else (np.nan, "")
        diff = np.nan
        if rc is not None and len(rc) and (cc.trigger_scale == 1).any():
            a = cc[cc.trigger_scale == 1].set_index("step")[metric]
            b = rc[rc.method == method].set_index("step")[metric]
            common = a.index.intersection(b.index)
            diff = float((a[common] - b[common]).abs().max()) if len(common) else np.nan
        for scale, c in cc.groupby("trigger_scale", sort=True):
            c = c.sort_values("step")
            h, last = _first_reach(c, metric, tgt, higher), c.iloc[-1]
            hr = _first_reach(c, metric, ref_tgt, higher) if np.isfinite(ref_tgt) else None
            r = {"configuration": conf, "row": "summary", "method": method, "trigger_scale": float(scale),
                 "target_fig3_4": ref_tgt, "target_rule_fig3_4": ref_how, "reached_fig3_4_target": int(hr is not None),
                 "bits_B32_to_fig3_4_target": float(hr["bits_B32"]) if hr is not None else np.nan,
                 "rounds_to_fig3_4_target": float(hr["rounds"]) if hr is not None else np.nan,
                 "step_to_fig3_4_target": float(hr["step"]) if hr is not None else np.nan,
                 "max_abs_diff_vs_fig3_4": diff,
                 "target": tgt, "target_rule": how, "reached": int(h is not None),
                 "trigger_rate": float(last["trigger_rate"]), "final_rounds": float(last["rounds"]),
                 "final_transmissions": float(last["transmissions"]), "final_bits_B32": float(last["bits_B32"]),
                 "final_" + metric: float(last[metric]),
                 "best_" + metric: float(c[metric].max() if higher else c[metric].min()),
                 "final_train_loss": float(last["train_loss"]), "final_consensus_dist": float(last["consensus_dist"]),
                 "n_seeds": int(last["n_seeds"])}
            for key in ["step", "rounds"] + [f"bits_{k}" for k in CONVENTIONS]:
                r[f"{key}_to_target"] = float(h[key]) if h is not None else np.nan
            rows.append(r)
    summ = pd.DataFrame(rows)
    for conf, idx in summ.groupby("configuration").groups.items():
        sub = summ.loc[idx]
        for ref_scale, name in ((1.0, "specified"), (0.0, "no_trigger")):
            base = sub[sub.trigger_scale == ref_scale]
            b = float(base["bits_B32_to_target"].iloc[0]) if len(base) else np.nan
            e = float(base["final_" + metric].iloc[0]) if len(base) else np.nan
            summ.loc[idx, f"bits_to_target_vs_{name}"] = sub["bits_B32_to_target"] / b
            summ.loc[idx, f"final_{metric}_minus_{name}"] = sub["final_" + metric] - e
    return pd.concat([cur, summ], ignore_index=True, sort=False)


def scale_label(s: float) -> str:
    """0 -> '0 (no trigger)', 1 -> '1 (as specified)', powers of ten as 10^k."""
    if s == 0:
        return "0 (no trigger)"
    if s == 1:
        return "1 (as specified)"
    k = np.log10(s)
    return f"$10^{{{int(round(k))}}}$" if abs(k - round(k)) < 1e-9 else f"{s:g}"


def trigger_sweep_figure(data: pd.DataFrame, configuration: str, metric: str = "test_error", title: str = ""):
    """(a) observed trigger rate vs threshold scale (log x; scale 0 drawn one decade left of the smallest positive
    scale), (b) metric vs total bits (B32, log x) per scale, (c) bits to target (left, log) and final metric (right)
    vs the trigger rate."""
    import matplotlib.pyplot as plt

    from fedrepro.plotting import apply_style

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    summ = data[(data.row == "summary") & (data.configuration == configuration)].sort_values("trigger_scale")
    scales = summ["trigger_scale"].to_numpy(dtype=float)
    cmap = plt.get_cmap("viridis")
    colors = {s: cmap(i / max(1, len(scales) - 1)) for i, s in enumerate(scales)}
    pos = scales[scales > 0]
    zero_x = (pos.min() / 10) if pos.size else 0.1
    xs = np.where(scales > 0, scales, zero_x)
    tgt = float(summ["target"].iloc[0]) if len(summ) else np.nan
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))

    ax = axes[0]
    ax.plot(xs, summ["trigger_rate"], color="0.6", lw=1, zorder=1)
    for x, s, rate in zip(xs, scales, summ["trigger_rate"]):
        ax.scatter([x], [rate], color=colors[s], s=40, zorder=2, marker="s" if s == 0 else "o")
        ax.annotate(f"{rate:.3f}", (x, rate), textcoords="offset points", xytext=(3, 5), fontsize=6)
    ax.set_xscale("log")
    ticks = [zero_x, *pos]
    ax.set_xticks(ticks, ["0"] + [f"{s:g}" if s < 1000 else f"$10^{{{int(round(np.log10(s)))}}}$" for s in pos])
    ax.minorticks_off()
    ax.set(xlabel="threshold scale s (threshold s·c_t·η_t²; 0 = no trigger)", ylabel="observed trigger rate",
           ylim=(-0.03, 1.05), title="(a) trigger rate vs threshold scale")
    ax.axhline(1.0, color="k", lw=0.6, ls=":")

    ax = axes[1]
    for s in scales:
        c = cur[(cur.trigger_scale == s) & (cur.bits_B32 > 0)]
        ax.plot(c["bits_B32"], c[metric], color=colors[s], label=f"s = {scale_label(s)}")
    ax.set_xscale("log")
    if np.isfinite(tgt):
        ax.axhline(tgt, color="k", lw=0.7, ls="-", label=f"common target of the scales ({tgt:.3f})")
    tgt_ref = float(summ["target_fig3_4"].iloc[0]) if "target_fig3_4" in summ and len(summ) else np.nan
    if np.isfinite(tgt_ref):
        ax.axhline(tgt_ref, color="k", lw=0.7, ls="--", label=f"Fig. 3.4's target ({tgt_ref:.3f})")
    ax.set(xlabel="total bits (B32)", ylabel=metric.replace("_", " "), title=f"(b) {metric.replace('_', ' ')} vs bits")
    ax.legend(fontsize=6, ncol=2, loc="upper left")

    ax = axes[2]
    from matplotlib.lines import Line2D

    rate = summ["trigger_rate"].to_numpy()
    handles = []
    series = [("bits_B32_to_target", "reached", tgt, "common target of the scales", "o", "-")]
    tgt_ref = float(summ["target_fig3_4"].iloc[0]) if "target_fig3_4" in summ and len(summ) else np.nan
    if np.isfinite(tgt_ref):
        series.insert(0, ("bits_B32_to_fig3_4_target", "reached_fig3_4_target", tgt_ref, "Fig. 3.4's target", "D", "--"))
    for j, (col, ok_col, level, name, marker, ls) in enumerate(series):
        ok = summ[ok_col].to_numpy() == 1
        bits = np.where(ok, summ[col], summ["final_bits_B32"])
        ax.plot(rate, bits, color="0.6", lw=0.8, ls=ls, zorder=1)
        for i, (r, b, s, hit) in enumerate(zip(rate, bits, scales, ok)):
            ax.scatter([r], [b], s=36, zorder=2, marker=marker if hit else "^", edgecolors=[colors[s]],
                       facecolors=[colors[s]] if hit else "none")
            if j == len(series) - 1:
                ax.annotate(f"s={s:g}", (r, b), textcoords="offset points", xytext=(-6, 7 if i % 2 == 0 else -12),
                            fontsize=6, color=colors[s])
        handles.append(Line2D([], [], marker=marker, color="0.4", ls=ls, label=f"bits to {name} ({level:.3f})"))
    handles.append(Line2D([], [], marker="^", color="0.4", mfc="none", ls="", label="not reached: final bits"))
    ax.set_yscale("log")
    ax.set_xlim(-0.06, 1.06)
    ax.set(xlabel="observed trigger rate", ylabel=f"bits (B32) to {metric.replace('_', ' ')} target",
           title="(c) bits to target and final error vs trigger rate")
    ax2 = ax.twinx()
    ax2.plot(rate, summ["final_" + metric], color="tab:red", lw=0.8, ls=":", marker="x")
    ax2.set_ylabel("final " + metric.replace("_", " "), color="tab:red")
    ax2.tick_params(axis="y", colors="tab:red")
    handles.append(Line2D([], [], marker="x", color="tab:red", ls=":", label="final " + metric.replace("_", " ")))
    ax.legend(handles=handles, fontsize=6, loc="center left")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
