"""Thesis ch. 3 artifacts: Figs. 3.1-3.4 and the event-trigger threshold sweep, one function each.

Each function takes the notebook's `fedrepro.artifact.Artifact`, computes the figure's data with
`fedrepro.decentral.figures` (what the claims read), writes the artifact's CSV, PDF and PNG and returns the
figure.  `to_target_table` / `sweep_table` give the numbers behind it as Markdown (read from the CSV just
written), `describe_run` the sizes the runs used and `differences` what differs from the paper and why.
Per-artifact numbers (metric, target, the paper's savings, the recorded reasons) come from the registry's
`parameters:`; sizes come from the run parameters, never from the text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.decentral.figures import figure_data, trigger_sweep_data
from fedrepro.plotting import apply_style, color, label, markdown_table
from fedrepro.registry.methods import compressor_spec

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
AXIS_LABELS = {"epoch": "epochs", "rounds": "communication rounds", "bits_B32": "total bits (B32)",
               "train_loss": "training loss", "test_acc": "Top-1 test accuracy", "test_error": "test error"}
DATASETS = {"mnist": "MNIST", "cifar10": "CIFAR-10", "imagenet": "ImageNet"}

TO_TARGET_COLUMNS = ["method", "target", "target_rule", "reached", "step_to_target", "rounds_to_target",
                     "bits_B32_to_target", "savings_bits_B32", "savings_bits_B64idx", "savings_bits_Blog",
                     "savings_airtime_s", "savings_wall_s", "savings_wall_cal_s", "trigger_rate", "final_test_error",
                     "final_train_loss"]


# ---- which runs an artifact shows ---------------------------------------------------------------------------
# Fig. 3.4 shows, besides its own `as-stated` runs, configurations derived from the fig3_4_gamma grid: each method
# at the γ the whole-run criterion chose (assumption ch3:A-10), per data split (ch3:A-45) and trigger reference
# (ch3:A-trigger-ref); the registry artifact's `parameters: derived:` names them.

GRID_EXPERIMENT = "fig3_4_gamma"


def _has_runs(art, experiment: str) -> bool:
    return any(Path(f).parent.name == experiment for f in art.run_files)


def grid_summary_of(art) -> pd.DataFrame | None:
    """The fig3_4_gamma grid's per-γ summary (fedrepro.decentral.tuning.grid_summary), None without its runs."""
    from fedrepro.decentral.tuning import grid_summary

    if not _has_runs(art, GRID_EXPERIMENT):
        return None
    if "_grid_summary" not in art.__dict__:
        art.__dict__["_grid_summary"] = grid_summary(art.runs_of(GRID_EXPERIMENT),
                                                     tune_frac=float(art.params.get("tune_frac", 0.1)),
                                                     growth_max=float(art.params.get("growth_max", 2.0)))
    return art.__dict__["_grid_summary"]


def figure_runs(art) -> pd.DataFrame:
    """The runs the figure draws: its own experiment's, plus (with `derived:`) the grid's runs at the chosen γ."""
    from fedrepro.decentral.tuning import derived_runs

    derived = art.params.get("derived")
    if not derived:
        return art.runs
    if "_figure_runs" not in art.__dict__:
        parts = [art.runs_of(e) for e in art.experiments if e != GRID_EXPERIMENT and _has_runs(art, e)]
        summ = grid_summary_of(art)
        if summ is not None:
            parts.append(derived_runs(art.runs_of(GRID_EXPERIMENT), summ, derived))
        if not parts:
            raise FileNotFoundError(f"{art.paper}:{art.name}: no run files; build them with: snakemake --cores 2 "
                                    f"{art.paper}_{art.name} --config scale={art.scale}")
        art.__dict__["_figure_runs"] = pd.concat(parts, ignore_index=True)
    return art.__dict__["_figure_runs"]


def shown(art) -> str:
    """The configuration drawn: the one asked for if present (derived ones included), else the first."""
    configs = list(dict.fromkeys(figure_runs(art)["configuration"]))
    return art.configuration if art.configuration in configs else configs[0]


def run_params_of(art, configuration: str | None = None) -> dict:
    """The resolved run parameters behind a configuration (a derived one: its grid configuration's)."""
    configuration = configuration or shown(art)
    derived = art.params.get("derived") or {}
    if configuration in derived:
        return art.registry.params(art.paper, GRID_EXPERIMENT, derived[configuration]["grid"], art.scale)
    experiment = next(e for e in art.experiments if e != GRID_EXPERIMENT)
    return art.run_params(experiment, configuration)


# ---- what was run -------------------------------------------------------------------------------------------

def model_name(p: dict) -> str:
    """The model as the runs built it: ResNet-(6b+2) for the CIFAR family with b blocks per stage, its width."""
    if p["model"] == "logreg":
        return "multinomial logistic regression"
    if p["model"] == "resnet20":
        blocks, width = int(p.get("depth_blocks", 3)), int(p.get("width", 16))
        return f"ResNet-{6 * blocks + 2}" + (f" (width {width})" if width != 16 else "")
    return {"resnet50": "ResNet-50"}.get(p["model"], p["model"])


def horizon(p: dict) -> str:
    if "T" in p:
        return f"T = {p['T']} iterations"
    if p.get("iters_per_epoch"):
        return f"{p['epochs']} epochs × {p['iters_per_epoch']} iterations"
    return f"{p['epochs']} epochs"


def run_sizes(p: dict) -> str:
    """One line of the sizes a run used (from its resolved parameters): data, model, nodes, horizon, batch, seeds."""
    seeds = int(p.get("seeds", 1))
    return (f"{DATASETS.get(p['dataset'], p['dataset'])}, {model_name(p)}, n = {p['n']} ({p['topology']}), "
            f"{horizon(p)}, batch {p['batch']}/node, {seeds} seed{'s' if seeds > 1 else ''}")


def configuration_text(art, configuration: str) -> str:
    """What a configuration assumes, in words: the data split, how γ was chosen (each method's γ) and the trigger
    reference (Fig. 3.4's derived configurations; the others: the split only)."""
    p = run_params_of(art, configuration)
    spec = (art.params.get("derived") or {}).get(configuration)
    parts = [PARTITION_TEXT.get(p.get("partition"), str(p.get("partition")))]
    if spec is not None or art.params.get("derived"):
        gammas = ", ".join(f"{SHORT.get(m, m)} {g:g}" for m, g in method_gammas(art, configuration).items())
        parts.append(f"γ {'by the whole run' if spec else 'by A-10'} ({gammas})")
        ref = spec["trigger_reference"] if spec else p.get("trigger_reference", "copy")
        parts.append(f"trigger vs {REFERENCE_SHORT.get(ref, ref)}")
    return "; ".join(parts)


SHORT = {"squarm": "SQuARM", "squarm_noet": "SQuARM no-ET", "choco_sign": "CHOCO-Sign", "choco_topk": "CHOCO-TopK",
         "vanilla": "vanilla"}


def _title(art, extra: str = "") -> str:
    conf = shown(art)
    return (f"{art.label}: {run_sizes(run_params_of(art))}{extra}\nconfiguration `{conf}`, scale `{art.scale}`"
            + (" (stand-in data)" if art.stand_in else "") + f"\n{configuration_text(art, conf)}")


PARTITION_TEXT = {"sorted": "label-sorted shards, one class per node", "two_classes": "two classes per node",
                  "iid": "iid shards"}
REFERENCE_TEXT = {"copy": "the public copy x̂", "last_sent": "the node's iterate at its last transmission"}
REFERENCE_SHORT = {"copy": "x̂ (copy)", "last_sent": "last sent"}


def method_gammas(art, configuration: str) -> dict[str, float]:
    """The γ each method ran with in a configuration (from the runs: derived configurations choose it)."""
    runs = figure_runs(art)
    runs = runs[runs["configuration"] == configuration]
    if "gamma" not in runs:
        return {name: 1.0 if m.get("algorithm") == "dsgd" else float(m.get("gamma", 1.0))
                for name, m in run_params_of(art, configuration)["methods"].items()}
    return {m: float(g["gamma"].iloc[0]) for m, g in runs.groupby("method", sort=False)}


def _compression(spec) -> str:
    """A compressor spec in words: 'sign_topk, k = 10 coordinates' or 'sign_topk, top 1 % of each tensor'."""
    name, params = compressor_spec(spec)
    if "k" in params:
        return f"{label(name)} with k = {params['k']} coordinates"
    if "ratio" in params:
        return f"{label(name)} with the top {100 * params['ratio']:g} % of each tensor"
    return label(name)


def describe_run(art):
    """What the runs behind the figure used, from the run parameters (Markdown)."""
    from IPython.display import Markdown

    conf = shown(art)
    p = run_params_of(art, conf)
    derived = (art.params.get("derived") or {}).get(conf)
    compression = ", ".join(_compression(m.get("compressor")) for m in p["methods"].values()
                            if m.get("algorithm") == "squarm") or "none"
    gammas = ", ".join(f"{label(m)} {g:g}" for m, g in method_gammas(art, conf).items())
    how = ("chosen on the whole run from the fig3_4_gamma grid (ch3:A-10)" if derived else
           "tuned by A-10 in the run" if p.get("tune_gamma") else "fixed")
    reference = derived["trigger_reference"] if derived else p.get("trigger_reference", "copy")
    lines = [f"**What we ran** (configuration `{conf}`, scale `{art.scale}`; from the run parameters):",
             f"- {run_sizes(p)}; {PARTITION_TEXT.get(p['partition'], p['partition'])} (ch3:A-45)",
             f"- SQuARM-SGD: H = {p['H']} local steps, {compression}, trigger `{p['trigger']['kind']}` "
             f"(c₀ = {p['trigger']['c0']:g}) measured against {REFERENCE_TEXT.get(reference, reference)} "
             f"(ch3:A-trigger-ref); methods: {', '.join(label(m) for m in p['methods'])}",
             f"- consensus step size γ ({how}): {gammas}"]
    status = {k: v for k, v in art.data_status.items() if v == "stand-in"}
    if status:
        lines.append(f"- **stand-in data** for {', '.join(status)}: the numbers test the pipeline, not the paper")
    return Markdown("\n".join(lines))


# ---- the figure's data --------------------------------------------------------------------------------------

def _figure_frame(art) -> pd.DataFrame:
    """The figure's data (curves + per-method summary) from the artifact's runs; written as the artifact's CSV."""
    p = art.params
    data = figure_data(figure_runs(art), metric=p["metric"], target=float(p["target"]), higher=bool(p["higher"]),
                       n_nodes=int(run_params_of(art)["n"]), paper=p.get("paper_savings"))
    art.write_data(data)
    return data


def _summary(data: pd.DataFrame, configuration: str) -> pd.DataFrame:
    return data[(data.row == "summary") & (data.configuration == configuration)]


def _format(frame: pd.DataFrame) -> pd.DataFrame:
    """Floats to 4 significant digits (a dash where NaN), other columns as they are."""
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


def target_label(summ: pd.DataFrame, paper_target: float, metric: str) -> str:
    """The target line's legend text: the level and, at an A-49 fallback, why it is not the paper's."""
    tgt, rule = float(summ["target"].iloc[0]), summ["target_rule"].iloc[0]
    name = "test error" if metric == "test_error" else "Top-1"
    if rule == "stated":
        return f"target {name} {tgt:.3g} (the paper's)"
    return f"target {name} {tgt:.3g} (A-49 fallback: not every method reaches the paper's {paper_target:g})"


def _figure_legend(fig, axes, ncol: int = 3):
    """One legend below the panels with every labelled artist of every panel, each label once."""
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=ncol)


# ---- drawing ------------------------------------------------------------------------------------------------

def plot_panels(data: pd.DataFrame, configuration: str, panels, title: str = "", target_text: str | None = None):
    """panels: (x column, y column, log x, panel title), one axis each, a curve per method; the target level (in
    the summary rows) drawn on the panels of the target's metric when `target_text` labels it."""
    import matplotlib.pyplot as plt

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    summ = _summary(data, configuration)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.1))
    axes = np.atleast_1d(axes)
    for ax, (x, y, logx, ptitle) in zip(axes, panels):
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0] if logx else c
            ax.plot(c[x], c[y], label=label(m), color=color(m))
        if logx:
            ax.set_xscale("log")
        if target_text and y in ("test_error", "test_acc"):
            ax.axhline(float(summ["target"].iloc[0]), color="k", lw=0.8, ls=":", label=target_text)
        ax.set(xlabel=AXIS_LABELS.get(x, x), ylabel=AXIS_LABELS.get(y, y), title=ptitle)
    _figure_legend(fig, axes)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def time_bars(data: pd.DataFrame, configuration: str, ax, column: str = "wall_s_to_target", title: str = ""):
    """Seconds to target per method (log y), the value on each bar; 'not reached' where a method never got there."""
    s = _summary(data, configuration)
    values = s[column].to_numpy(dtype=float)
    reached = np.isfinite(values)
    floor = values[reached].min() / 3 if reached.any() else 1.0
    x = np.arange(len(s))
    bars = ax.bar(x, np.where(reached, values, floor), color=[color(m) for m in s.method])
    for bar, r in zip(bars, reached):
        bar.set_alpha(1.0 if r else 0.25)
    for xi, v, r in zip(x, values, reached):
        ax.annotate(f"{v:.3g} s" if r else "not reached", (xi, v if r else floor), textcoords="offset points",
                    xytext=(0, 2), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [label(m).replace(" decentralized", "\ndecentralized").replace(" (", "\n(") for m in s.method])
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, (values[reached].max() if reached.any() else 1.0) * 4)
    ax.set(ylabel="seconds to target (computation + communication)", title=title)
    ax.tick_params(axis="x", labelsize=7)


def fig3_3_figure(data: pd.DataFrame, configuration: str, title: str = "", target_text: str | None = None):
    """(a) accuracy vs airtime at 100 Kbps, (b-i) total time to target per scheme (bars, log y; measured compute
    time), (b-ii) accuracy vs wall-clock (ERRATA E-4: both readings of panel (b))."""
    import matplotlib.pyplot as plt

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    summ = _summary(data, configuration)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.3))
    for ax, x, t, xl in ((axes[0], "airtime_s", "(a) accuracy vs communication time", "airtime at 100 Kbps [s]"),
                         (axes[2], "wall_s", "(b-ii) accuracy vs wall-clock", "wall clock at 100 Kbps [s]")):
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0]
            ax.plot(c[x], c["test_acc"], label=label(m), color=color(m))
        ax.set(xscale="log", xlabel=xl, ylabel="Top-1 test accuracy", title=t)
        if target_text:
            ax.axhline(float(summ["target"].iloc[0]), color="k", lw=0.8, ls=":", label=target_text)
    tgt = float(summ["target"].iloc[0]) if len(summ) else np.nan
    time_bars(data, configuration, axes[1], title=f"(b-i) total time to Top-1 {tgt:.3g}")
    _figure_legend(fig, axes[[0, 2]])
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


def identical_scales(cur: pd.DataFrame, scales, metric: str) -> list[list[float]]:
    """Scales whose runs are identical (same bits and metric at every step), grouped in scale order: they are
    drawn once, under one legend entry, since the later one would hide the earlier."""
    groups: list[list[float]] = []
    keyed: dict[tuple, list[float]] = {}
    for s in scales:
        c = cur[cur.trigger_scale == s].sort_values("step")
        key = (tuple(c["bits_B32"].round(6)), tuple(c[metric].round(12)))
        if key in keyed:
            keyed[key].append(s)
        else:
            keyed[key] = [s]
            groups.append(keyed[key])
    return groups


def trigger_sweep_figure(data: pd.DataFrame, configuration: str, metric: str = "test_error", title: str = ""):
    """(a) observed trigger rate vs threshold scale (log x; scale 0 drawn one decade left of the smallest positive
    scale), (b) metric vs total bits (B32, log x) per scale, (c) bits to target (left, log) and final metric (right)
    vs the trigger rate.  Colour = scale in every panel; legends below the panels, never over the data."""
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
    tgt_ref = float(summ["target_fig3_4"].iloc[0]) if "target_fig3_4" in summ and len(summ) else np.nan
    mname = metric.replace("_", " ")
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2))

    ax = axes[0]
    ax.plot(xs, summ["trigger_rate"], color="0.6", lw=1, zorder=1)
    for x, s, rate in zip(xs, scales, summ["trigger_rate"]):
        ax.scatter([x], [rate], color=colors[s], s=40, zorder=2, marker="s" if s == 0 else "o")
        ax.annotate(f"{rate:.3f}", (x, rate), textcoords="offset points", xytext=(3, 5), fontsize=7)
    ax.set_xscale("log")
    ax.set_xticks([zero_x, *pos], ["0"] + [f"{s:g}" if s < 1000 else f"$10^{{{round(np.log10(s))}}}$" for s in pos])
    ax.minorticks_off()
    ax.set(xlabel="threshold scale s (threshold s·c_t·η_t²; 0 = no trigger)", ylabel="observed trigger rate",
           ylim=(-0.03, 1.08), title="(a) trigger rate vs threshold scale")
    ax.axhline(1.0, color="k", lw=0.6, ls=":")

    ax = axes[1]
    for group in identical_scales(cur, scales, metric):
        c = cur[(cur.trigger_scale == group[-1]) & (cur.bits_B32 > 0)]
        text = ", ".join(scale_label(s) for s in group) + (": identical runs" if len(group) > 1 else "")
        ax.plot(c["bits_B32"], c[metric], color=colors[group[-1]], label=f"s = {text}")
    ax.set_xscale("log")
    if np.isfinite(tgt):
        ax.axhline(tgt, color="k", lw=0.8, ls="-", label=f"common target of the scales ({tgt:.3f})")
    if np.isfinite(tgt_ref):
        ax.axhline(tgt_ref, color="k", lw=0.8, ls="--", label=f"Fig. 3.4's target ({tgt_ref:.3f})")
    ax.set(xlabel="total bits (B32)", ylabel=mname, title=f"(b) {mname} vs bits")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)

    ax = axes[2]
    rate = summ["trigger_rate"].to_numpy()
    handles = []
    series = [("bits_B32_to_target", "reached", tgt, "common target of the scales", "o", "-")]
    if np.isfinite(tgt_ref):
        series.insert(0, ("bits_B32_to_fig3_4_target", "reached_fig3_4_target", tgt_ref, "Fig. 3.4's target", "D", "--"))
    for col, ok_col, level, name, marker, ls in series:
        ok = summ[ok_col].to_numpy() == 1
        bits = np.where(ok, summ[col], summ["final_bits_B32"])
        ax.plot(rate, bits, color="0.6", lw=0.8, ls=ls, zorder=1)
        for r, b, s, hit in zip(rate, bits, scales, ok):
            ax.scatter([r], [b], s=36, zorder=2, marker=marker if hit else "^", edgecolors=[colors[s]],
                       facecolors=[colors[s]] if hit else "none")
        handles.append(Line2D([], [], marker=marker, color="0.4", ls=ls, label=f"bits to {name} ({level:.3f})"))
    handles.append(Line2D([], [], marker="^", color="0.4", mfc="none", ls="", label="not reached: final bits"))
    ax.set_yscale("log")
    ax.set_xlim(-0.06, 1.06)
    ax.set(xlabel="observed trigger rate (colour: scale s, as in (b))", ylabel=f"bits (B32) to the {mname} target",
           title=f"(c) bits to target and final {mname} vs trigger rate")
    ax2 = ax.twinx()
    ax2.plot(rate, summ["final_" + metric], color="tab:red", lw=0.8, ls=":", marker="x")
    ax2.set_ylabel("final " + mname, color="tab:red")
    ax2.tick_params(axis="y", colors="tab:red")
    ax2.grid(False)
    handles.append(Line2D([], [], marker="x", color="tab:red", ls=":", label="final " + mname + " (right axis)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


# ---- the artifacts ------------------------------------------------------------------------------------------

def _target_text(art, data) -> str:
    return target_label(_summary(data, shown(art)), float(art.params["target"]), art.params["metric"])


def _panels_artifact(art):
    data = _figure_frame(art)
    fig = plot_panels(data, shown(art), PANELS[art.name], title=_title(art), target_text=_target_text(art, data))
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
    fig = fig3_3_figure(data, shown(art), title=_title(art, ", 100 Kbps link"), target_text=_target_text(art, data))
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
    fig = trigger_sweep_figure(data, shown(art), metric=art.params["metric"], title=_title(art))
    art.save_figure(fig)
    return _detached(fig)


# ---- the numbers behind the figures (Markdown) --------------------------------------------------------------

def to_target_table(art):
    """Per method: target, steps / rounds / bits to it, SQuARM's savings under each convention, airtime and wall
    clock savings, trigger rate, final values (the summary rows of the CSV the figure function wrote)."""
    from IPython.display import Markdown

    data = pd.read_csv(art.outputs["csv"])
    return Markdown(markdown_table(_format(_summary(data, shown(art))[TO_TARGET_COLUMNS])))


def configurations_figure(art, x: str = "bits_B32"):
    """Panel (b) of the figure (metric vs total bits, log x) once per configuration, each with its own target: the
    named configurations side by side (read from the CSV the figure function wrote; not saved)."""
    import matplotlib.pyplot as plt

    apply_style()
    p = art.params
    metric = p["metric"]
    data = pd.read_csv(art.outputs["csv"])
    present = list(dict.fromkeys(data.loc[data.row == "summary", "configuration"]))
    derived = p.get("derived") or {}
    order = [c for c in present if c not in derived] + [c for c in derived if c in present]
    cols = min(4, len(order))
    rows = -(-len(order) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), sharey=True, squeeze=False)
    for ax, conf in zip(axes.flat, order):
        cur = data[(data.row == "curve") & (data.configuration == conf)]
        summ = _summary(data, conf)
        for m, c in cur.groupby("method", sort=False):
            c = c[c[x] > 0]
            ax.plot(c[x], c[metric], label=label(m), color=color(m))
        tgt, rule = float(summ["target"].iloc[0]), summ["target_rule"].iloc[0]
        ax.axhline(tgt, color="k", lw=0.8, ls=":", label="target (the paper's, or the A-49 fallback)")
        ax.set_xscale("log")
        ax.set_title(f"{conf}: target {tgt:.3g}" + ("" if rule == "stated" else " (A-49)"), fontsize=9)
        ax.set_xlabel(AXIS_LABELS.get(x, x), fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(AXIS_LABELS.get(metric, metric))
    for ax in list(axes.flat)[len(order):]:
        ax.set_visible(False)
    _figure_legend(fig, [ax for ax in axes.flat if ax.get_visible()], ncol=5)
    fig.suptitle(f"{art.label}, every configuration: {AXIS_LABELS.get(metric, metric)} vs total bits", fontsize=10)
    return _detached(fig)


def configurations_table(art):
    """One row per configuration (Fig. 3.4: as-stated and the derived ones): the assumption alternatives it runs,
    the target and how it was chosen, SQuARM's savings against each baseline, its trigger rate and the final test
    errors; read from the CSV the figure function wrote."""
    from IPython.display import Markdown

    p = art.params
    metric = p["metric"]
    data = pd.read_csv(art.outputs["csv"])
    summ = data[data.row == "summary"]
    derived = p.get("derived") or {}
    rows = []
    present = list(dict.fromkeys(summ["configuration"]))
    order = [c for c in present if c not in derived] + [c for c in derived if c in present]
    for conf in order:
        g = summ[summ.configuration == conf].set_index("method")
        params = run_params_of(art, conf)
        spec = derived.get(conf)
        row = {"configuration": conf,
               "split (ch3:A-45)": PARTITION_TEXT.get(params.get("partition"), params.get("partition")),
               "γ (ch3:A-10)": "whole run" if spec else ("A-10 in the run" if params.get("tune_gamma") else "A-10, fixed"),
               "trigger vs (ch3:A-trigger-ref)": (spec or {}).get("trigger_reference",
                                                                  params.get("trigger_reference", "copy")),
               "target": f"{float(g['target'].iloc[0]):.3g} ({g['target_rule'].iloc[0]})"}
        for m in ("choco_sign", "choco_topk", "vanilla"):
            if m in g.index:
                row[f"{label(m)} / SQuARM bits"] = g.loc[m, "savings_bits_B32"]
        if "squarm" in g.index:
            row["SQuARM trigger rate"] = g.loc["squarm", "trigger_rate"]
            row[f"SQuARM final {metric.replace('_', ' ')}"] = g.loc["squarm", f"final_{metric}"]
        if "vanilla" in g.index:
            row[f"vanilla final {metric.replace('_', ' ')}"] = g.loc["vanilla", f"final_{metric}"]
        rows.append(row)
    return Markdown(markdown_table(_format(pd.DataFrame(rows))))


def sweep_table(art):
    """Per threshold scale: trigger rate, bits and rounds to both targets, final and best error, consensus."""
    from IPython.display import Markdown

    metric = art.params["metric"]
    summ = _summary(pd.read_csv(art.outputs["csv"]), shown(art))
    cols = ["trigger_scale", "trigger_rate", "final_rounds", "target_fig3_4", "bits_B32_to_fig3_4_target",
            "rounds_to_fig3_4_target", "target", "bits_B32_to_target", "rounds_to_target",
            "bits_to_target_vs_specified", f"final_{metric}", f"best_{metric}", f"final_{metric}_minus_no_trigger",
            "final_bits_B32", "final_consensus_dist"]
    first = summ.iloc[0]
    head = (f"Fig. 3.4's target: {first['target_fig3_4']:.4g} ({first['target_rule_fig3_4']}); common target of the "
            f"scales: {first['target']:.4g} ({first['target_rule']}); scale 1 vs Fig. 3.4's SQuARM run, max "
            f"|difference| in {metric}: {first['max_abs_diff_vs_fig3_4']:.4g}.")
    return Markdown(head + "\n\n" + markdown_table(_format(summ[[c for c in cols if c in summ]])))


def difference_facts(art, rise: float = 0.05) -> list[str]:
    """What the figure shows against the paper, from the CSV the figure function wrote: whether each method
    reaches the paper's target, and every method whose metric ends more than `rise` worse than its best."""
    p = art.params
    data = pd.read_csv(art.outputs["csv"])
    cur = data[(data.row == "curve") & (data.configuration == shown(art))]
    summ = _summary(data, shown(art))
    metric, paper_target, higher = p["metric"], float(p["target"]), bool(p["higher"])
    name = AXIS_LABELS.get(metric, metric)
    gamma = method_gammas(art, shown(art))
    facts = []
    best = {m: (c[metric].max() if higher else c[metric].min()) for m, c in cur.groupby("method", sort=False)}
    missing = [label(m) for m, b in best.items() if (b < paper_target if higher else b > paper_target)]
    if missing:
        who = "no method reaches it" if len(missing) == len(best) else f"{', '.join(missing)} never reach it"
        facts.append(f"The paper reads its savings at {name} {paper_target:g}; {who} here, so the savings are read "
                     f"at the A-49 fallback {float(summ['target'].iloc[0]):.3g}, the loosest level every method "
                     "reaches.")
    for m, c in cur.groupby("method", sort=False):
        c = c.sort_values("step")
        i = c[metric].idxmax() if higher else c[metric].idxmin()
        final = float(c[metric].iloc[-1])
        worse = (c.loc[i, metric] - final) if higher else (final - c.loc[i, metric])
        if worse > rise:
            x, unit = ("rounds", "round") if "rounds" in c else ("step", "step")
            text = (f"{label(m)} (γ = {gamma.get(m, float('nan')):g}): {name} {c.loc[i, metric]:.2f} at its best "
                    f"({unit} {c.loc[i, x]:g}), {final:.2f} at the end")
            if "consensus_dist" in c and np.isfinite(c["consensus_dist"].iloc[-1]):
                text += f"; consensus distance (1/n)‖X − X̄‖² {c['consensus_dist'].iloc[-1]:.1e} at the end"
            facts.append(text + ".")
    sq = summ[summ.method == "squarm"]
    if len(sq) and float(sq["trigger_rate"].iloc[0]) >= 0.999:
        facts.append(f"SQuARM-SGD's event trigger never skipped (rate {float(sq['trigger_rate'].iloc[0]):.3f}): its "
                     "savings come from Sign∘TopK and H local steps alone.")
    return facts


def differences(art):
    """'What differs from the paper and why' (Markdown): the facts measured on this figure's data, then the
    reasons recorded for them (the registry artifact's `differs:`, from the chapter's docs)."""
    from IPython.display import Markdown

    facts, reasons = difference_facts(art), list(art.params.get("differs") or [])
    if not facts and not reasons:
        return Markdown("")
    lines = ["### What differs from the paper and why", "", *(f"- {f}" for f in facts)]
    if reasons:
        lines += ["", "Why:", "", *(f"- {r}" for r in reasons)]
    return Markdown("\n".join(lines))


# ---- the consensus step size grid (assumption ch3:A-10; artifact fig3_4_gamma) ------------------------------

GRID_COLUMNS = ["configuration", "method", "trigger_reference", "gamma", "final_test_error", "best_test_error",
                "best_step", "train_loss_at_tune", "tune_step", "consensus_half", "consensus_final",
                "consensus_growth", "stable", "chosen_whole_run", "chosen_a10", "trigger_rate", "final_bits_B32",
                "n_seeds", "T", "figure_configurations"]


def gamma_grid_frame(art) -> pd.DataFrame:
    """grid_summary of the fig3_4_gamma runs, plus the Fig. 3.4 configurations each whole-run choice feeds."""
    summ = grid_summary_of(art).copy()
    derived = art.params.get("derived") or {}
    names = []
    for conf, method, ref, chosen in zip(summ.configuration, summ.method, summ.trigger_reference,
                                         summ.chosen_whole_run):
        names.append("; ".join(n for n, d in derived.items() if chosen and d["grid"] == conf
                               and ref in ("-", d.get("trigger_reference", "copy"))))
    summ["figure_configurations"] = names
    return summ[[c for c in GRID_COLUMNS if c in summ]]


def _cell(row) -> str:
    """Final test error with its marks: * the whole-run choice, † the A-10 choice, (unstable) when its consensus
    distance grows faster than t over the second half."""
    text = f"{row.final_test_error:.3f}"
    if not row.stable:
        text += " (unstable)"
    return text + ("*" if row.chosen_whole_run else "") + ("†" if row.chosen_a10 else "")


def gamma_grid_markdown(frame: pd.DataFrame) -> str:
    """One table per data split: a row per method (and trigger reference), a column per γ."""
    parts = []
    for conf, g in frame.groupby("configuration", sort=False):
        rows = []
        for (method, ref), h in g.groupby(["method", "trigger_reference"], sort=False):
            h = h.sort_values("gamma")
            name = label(method) + (f", trigger vs {REFERENCE_SHORT.get(ref, ref)}" if ref != "-" else "")
            cells = {f"γ = {gm:g}": _cell(r) for gm, r in zip(h["gamma"], h.itertuples())}
            wr, a10 = h[h.chosen_whole_run == 1], h[h.chosen_a10 == 1]
            cells["whole-run γ"] = f"{float(wr.gamma.iloc[0]):g}" if len(wr) else "none stable"
            cells["A-10 γ"] = f"{float(a10.gamma.iloc[0]):g}" if len(a10) else "–"
            rows.append({"method": name, **cells})
        table = pd.DataFrame(rows).fillna("–")
        T = int(g["T"].iloc[0])
        parts.append(f"**{conf}** (T = {T}; final test error of the averaged model)\n\n" + markdown_table(table))
    legend = ("\\* the whole-run choice (lowest final test error among the stable runs), † the A-10 choice (lowest "
              "training loss at 10 % of the run); unstable: the consensus distance grows more than twice from T/2 "
              "to T (faster than t, while the step decays like 1/t).")
    return "\n\n".join(parts + [legend])


def gamma_grid_figure(frame: pd.DataFrame):
    """The γ grid drawn: final test error against γ, one panel per configuration (data split), one line per method
    and trigger reference; hollow markers where the consensus distance grew (unstable), a ring on the γ the
    whole-run criterion chose and a cross on the one the 10 % rule (ch3:A-10) chose."""
    import matplotlib.pyplot as plt

    apply_style()
    confs = list(dict.fromkeys(frame["configuration"]))
    fig, axes = plt.subplots(1, len(confs), figsize=(3.6 * len(confs), 3.2), sharey=True, squeeze=False)
    for ax, conf in zip(axes[0], confs):
        part = frame[frame["configuration"] == conf]
        for (method, ref), rows in part.groupby(["method", "trigger_reference"], sort=False):
            rows = rows.sort_values("gamma")
            c = color(method)
            ax.plot(rows["gamma"], rows["final_test_error"], color=c, lw=1.2, ls="-" if ref in ("-", "copy") else "--",
                    label=label(method) + ("" if ref in ("-", "copy") else f", {ref}"))
            stable = rows["stable"] == 1
            ax.scatter(rows.loc[stable, "gamma"], rows.loc[stable, "final_test_error"], color=c, s=14, zorder=3)
            ax.scatter(rows.loc[~stable, "gamma"], rows.loc[~stable, "final_test_error"], facecolors="none",
                       edgecolors=c, s=14, zorder=3)
            for flag, marker, size in (("chosen_whole_run", "o", 70), ("chosen_a10", "x", 45)):
                pick = rows[rows[flag] == 1]
                ax.scatter(pick["gamma"], pick["final_test_error"], marker=marker, s=size, zorder=4,
                           facecolors="none" if marker == "o" else c, edgecolors=c if marker == "o" else None)
        ax.set_xscale("log")
        ax.set_title(conf)
        ax.set_xlabel("consensus step γ")
    axes[0][0].set_ylabel("final test error")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle("γ grid (ch3:A-10): ring = whole-run choice, × = 10 % rule, hollow = unstable", fontsize=9)
    fig.set_layout_engine("tight")   # in place of the style's constrained layout (tight_layout() would warn)
    return _detached(fig)


def fig3_4_gamma(art):
    """The γ grid behind Fig. 3.4's derived configurations (not a thesis table): writes the CSV (one row per
    configuration, method, trigger reference and γ), shows the grid as a plot and returns the per-split tables as
    Markdown."""
    from IPython.display import Markdown, display

    frame = gamma_grid_frame(art)
    art.write_data(frame)
    if len(frame):
        display(gamma_grid_figure(frame))   # shown in the notebook; the artifact's outputs stay the table
    text = ("No paper values: the thesis states no consensus step γ and reports no tuning grid (ch3:A-10).\n\n"
            + gamma_grid_markdown(frame))
    art.write_markdown(text)
    return Markdown(text)
