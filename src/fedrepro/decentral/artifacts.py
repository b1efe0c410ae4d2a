"""Thesis ch. 3 artifacts: Figs. 3.1-3.4 and the event-trigger threshold sweep, one function each.

Each function takes the notebook's `fedrepro.notebook.Artifact`, computes the figure's data with
`fedrepro.decentral.figures` (what the claims read), writes the artifact's CSV, PDF and PNG and returns the
figure.  `to_target_table` / `sweep_table` give the numbers behind it as Markdown (read from the CSV just
written).  Per-artifact numbers (metric, target, the paper's savings) come from the registry's `parameters:`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.decentral.figures import figure_data, trigger_sweep_data
from fedrepro.plotting import apply_style, color, label, markdown_table

# (x column, y column, log x, panel title) per figure; Fig. 3.3 has its own layout (`fig3_3`).
PANELS = {
    "fig3_1": [("epoch", "train_loss", False, "(a) training loss vs epochs"),
               ("bits_B32", "train_loss", True, "(b) training loss vs total bits"),
               ("bits_B32", "test_acc", True, "(c) Top-1 accuracy vs total bits")],
    "fig3_2": [("epoch", "train_loss", False, "(a) training loss vs epochs"),
               ("bits_B32", "test_acc", True, "(b) Top-1 test accuracy vs total bits (B32)")],
    "fig3_4": [("rounds", "test_error", False, "(a) test error vs communication rounds"),
               ("bits_B32", "test_error", True, "(b) test error vs total bits (B32)")],
}

TO_TARGET_COLUMNS = ["method", "target", "target_rule", "reached", "step_to_target", "rounds_to_target",
                     "bits_B32_to_target", "savings_bits_B32", "savings_bits_B64idx", "savings_bits_Blog",
                     "savings_airtime_s", "savings_wall_s", "savings_wall_cal_s", "trigger_rate", "final_test_error",
                     "final_train_loss"]


def _title(art, extra: str = "") -> str:
    return f"{art.label} — `{art.shown}`, scale `{art.scale}`{extra}" + (" (stand-in data)" if art.stand_in else "")


def _figure_frame(art) -> pd.DataFrame:
    """The figure's data (curves + per-method summary) from the artifact's runs; written as the artifact's CSV."""
    p = art.params
    data = figure_data(art.runs, metric=p["metric"], target=float(p["target"]), higher=bool(p["higher"]),
                       n_nodes=int(art.run_params()["n"]), paper=p.get("paper_savings"))
    art.write_data(data)
    return data


def _summary(data: pd.DataFrame, configuration: str) -> pd.DataFrame:
    return data[(data.row == "summary") & (data.configuration == configuration)]


def _format(frame: pd.DataFrame) -> pd.DataFrame:
    """Floats to 4 significant digits (blank where NaN), other columns as they are."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = [f"{v:.4g}" if np.isfinite(v) else "–" for v in out[col]]
    return out


def _detached(fig):
    """Close the figure in pyplot and return it: a notebook then shows it once, as the cell's result (the inline
    backend would otherwise draw every open figure a second time)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


# ---- drawing ------------------------------------------------------------------------------------------------

def plot_panels(data: pd.DataFrame, configuration: str, panels, title: str = "", target: float | None = None):
    """panels: (x column, y column, log x, panel title), one axis each, a curve per method."""
    import matplotlib.pyplot as plt

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8))
    axes = np.atleast_1d(axes)
    for ax, (x, y, logx, ptitle) in zip(axes, panels):
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0] if logx else c
            ax.plot(c[x], c[y], label=label(m), color=color(m))
        if logx:
            ax.set_xscale("log")
        if target is not None and y in ("test_error", "test_acc"):
            ax.axhline(target, color="k", lw=0.7, ls=":")
        ax.set(xlabel=x.replace("_", " "), ylabel=y.replace("_", " "), title=ptitle)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def time_bars(data: pd.DataFrame, configuration: str, ax, column: str = "wall_s_to_target", title: str = ""):
    s = _summary(data, configuration)
    ax.bar([label(m).replace(" decentralized", "\ndecentralized") for m in s.method], s[column].fillna(0),
           color=[color(m) for m in s.method])
    ax.set_yscale("log")
    ax.set(ylabel="seconds to target", title=title)
    ax.tick_params(axis="x", labelsize=6)


def fig3_3_figure(data: pd.DataFrame, configuration: str, title: str = "", target: float | None = None):
    """(a) accuracy vs airtime at 100 Kbps, (b-i) total time to target per scheme (bars, log y; measured compute
    time), (b-ii) accuracy vs wall-clock (ERRATA E-4: both readings of panel (b))."""
    import matplotlib.pyplot as plt

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.9))
    for ax, x, t in ((axes[0], "airtime_s", "(a) accuracy vs communication time"),
                     (axes[2], "wall_s", "(b-ii) accuracy vs wall-clock")):
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0]
            ax.plot(c[x], c["test_acc"], label=label(m), color=color(m))
        ax.set(xscale="log", xlabel=f"{x.replace('_s', '')} [s] at 100 Kbps", ylabel="Top-1 test accuracy", title=t)
        if target is not None:
            ax.axhline(target, color="k", lw=0.7, ls=":")
    tgt = _summary(data, configuration)["target"]
    time_bars(data, configuration, axes[1], title=f"(b-i) total time to Top-1 {float(tgt.iloc[0]):.3f}" if len(tgt) else "")
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def scale_label(s: float) -> str:
    """0 -> '0 (no trigger)', 1 -> '1 (as specified)', powers of ten as 10^k."""
    if s == 0:
        return "0 (no trigger)"
    if s == 1:
        return "1 (as specified)"
    k = np.log10(s)
    return f"$10^{{{round(k)}}}$" if abs(k - round(k)) < 1e-9 else f"{s:g}"


def trigger_sweep_figure(data: pd.DataFrame, configuration: str, metric: str = "test_error", title: str = ""):
    """(a) observed trigger rate vs threshold scale (log x; scale 0 drawn one decade left of the smallest positive
    scale), (b) metric vs total bits (B32, log x) per scale, (c) bits to target (left, log) and final metric (right)
    vs the trigger rate."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    summ = _summary(data, configuration).sort_values("trigger_scale")
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
    ax.set_xticks(ticks, ["0"] + [f"{s:g}" if s < 1000 else f"$10^{{{round(np.log10(s))}}}$" for s in pos])
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
    rate = summ["trigger_rate"].to_numpy()
    handles = []
    series = [("bits_B32_to_target", "reached", tgt, "common target of the scales", "o", "-")]
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
    return fig


# ---- the artifacts ------------------------------------------------------------------------------------------

def _panels_artifact(art):
    data = _figure_frame(art)
    target = float(_summary(data, art.shown)["target"].iloc[0])
    fig = plot_panels(data, art.shown, PANELS[art.name], title=_title(art), target=target)
    art.save_figure(fig)
    return _detached(fig)


def fig3_1(art):
    """Thesis Fig. 3.1: ImageNet ResNet-50, (a) training loss vs epochs, (b) vs bits, (c) Top-1 vs bits."""
    return _panels_artifact(art)


def fig3_2(art):
    """Thesis Fig. 3.2: CIFAR-10 ResNet-20, (a) training loss vs epochs, (b) Top-1 vs bits."""
    return _panels_artifact(art)


def fig3_4(art):
    """Thesis Fig. 3.4: MNIST logistic regression, test error vs (a) communication rounds, (b) bits."""
    return _panels_artifact(art)


def fig3_3(art):
    """Thesis Fig. 3.3: the Fig. 3.2 runs through a 100 Kbps link: accuracy vs airtime, time to target, wall clock."""
    data = _figure_frame(art)
    target = float(_summary(data, art.shown)["target"].iloc[0])
    fig = fig3_3_figure(data, art.shown, title=_title(art, ", 100 Kbps"), target=target)
    art.save_figure(fig)
    return _detached(fig)


def _sweep_frame(art) -> pd.DataFrame:
    """The sweep's data; Fig. 3.4's runs (when present) give its own target and the scale-1 consistency check."""
    p = art.params
    reference = art.runs_of("fig3_4") if any(Path(f).parent.name == "fig3_4" for f in art.run_files) else None
    data = trigger_sweep_data(art.runs_of("fig3_4_trigger"), metric=p["metric"], target=float(p["target"]),
                              higher=bool(p["higher"]), reference=reference)
    art.write_data(data)
    return data


def fig3_4_trigger(art):
    """Fig. 3.4 sensitivity (not a thesis figure): SQuARM-SGD's event-trigger threshold scaled by s."""
    data = _sweep_frame(art)
    fig = trigger_sweep_figure(data, art.shown, metric=art.params["metric"], title=_title(art))
    art.save_figure(fig)
    return _detached(fig)


# ---- the numbers behind the figures (Markdown) --------------------------------------------------------------

def to_target_table(art):
    """Per method: target, steps / rounds / bits to it, SQuARM's savings under each convention, airtime and wall
    clock savings, trigger rate, final values (the summary rows of the CSV the figure function wrote)."""
    from IPython.display import Markdown

    data = pd.read_csv(art.outputs["csv"])
    return Markdown(markdown_table(_format(_summary(data, art.shown)[TO_TARGET_COLUMNS])))


def sweep_table(art):
    """Per threshold scale: trigger rate, bits and rounds to both targets, final and best error, consensus."""
    from IPython.display import Markdown

    metric = art.params["metric"]
    summ = _summary(pd.read_csv(art.outputs["csv"]), art.shown)
    cols = ["trigger_scale", "trigger_rate", "final_rounds", "target_fig3_4", "bits_B32_to_fig3_4_target",
            "rounds_to_fig3_4_target", "target", "bits_B32_to_target", "rounds_to_target",
            "bits_to_target_vs_specified", f"final_{metric}", f"best_{metric}", f"final_{metric}_minus_no_trigger",
            "final_bits_B32", "final_consensus_dist"]
    first = summ.iloc[0]
    head = (f"Fig. 3.4's target: {first['target_fig3_4']:.4g} ({first['target_rule_fig3_4']}); common target of the "
            f"scales: {first['target']:.4g} ({first['target_rule']}); scale 1 vs Fig. 3.4's SQuARM run, max "
            f"|difference| in {metric}: {first['max_abs_diff_vs_fig3_4']:.4g}.")
    return Markdown(head + "\n\n" + markdown_table(_format(summ[[c for c in cols if c in summ]])))
