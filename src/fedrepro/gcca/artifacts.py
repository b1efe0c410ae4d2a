"""Every gcca artifact (Figs. 2-13, Table I) drawn from the run CSVs: one function per artifact.

Each function takes the notebook's `fedrepro.artifact.Artifact`, writes `art.outputs` (the data CSV, then the
figure or the Markdown table) and returns the matplotlib Figure or an `IPython.display.Markdown`.  The numbers
come from `summaries` (Figs. 3-8, Table I) and `data_summaries` (Figs. 9-13), computed per configuration so the
claims can judge each one; the figure shows `art.shown`.  Per-artifact numbers (levels, targets) come from the
registry's `parameters:` of the artifact, the paper's values from its claims.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedrepro.gcca import data_summaries, summaries
from fedrepro.plotting import apply_style, color, label, markdown_table

# Non-curve rows worth showing under a figure: what the claims read (everything but plotted points).
_PLOTTED_KINDS = ("curve", "points")


# ---- shared helpers ---------------------------------------------------------------------------------------------

def _summarize(art, summarize, **kwargs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The summary of every configuration (written as the artifact's CSV) and the rows of the shown one."""
    runs = art.runs
    table = pd.concat([summarize(runs[runs.configuration == c], **kwargs).assign(configuration=c)
                       for c in art.configurations], ignore_index=True)
    art.write_data(table)
    return table, table[table.configuration == art.shown]


def _method_label(method: str, q: int, deep: bool = False) -> str:
    """'AltMaxVar (32 bits)' / 'CuteMaxVar (q = 3)', with '-Deep' for the deep variants."""
    name = label(method) + ("-Deep" if deep else "")
    return f"{name} (32 bits)" if method == "altmaxvar" else f"{name} (q = {int(q)})"


def _q_label(q: int) -> str:
    return _method_label("altmaxvar", 32) if int(q) == 32 else label(f"cutemaxvar_q{int(q)}")


def _q_color(q: int) -> str:
    return color("altmaxvar") if int(q) == 32 else color(f"cutemaxvar_q{int(q)}")


def _line_width(method: str) -> float:
    """AltMaxVar drawn wider, under CuteMaxVar: where the two coincide (the paper's point) both stay visible."""
    return 2.6 if method == "altmaxvar" else 1.3


def _ordered_colors(n: int) -> list:
    """n well-separated colours in order (light to dark is too faint for six batch sizes): the plasma map."""
    cmap = plt.get_cmap("plasma")
    return [cmap(x) for x in np.linspace(0.0, 0.85, n)] if n > 1 else [cmap(0.4)]


def _fmt_cr(value: float) -> str:
    return "–" if np.isnan(value) else f"{value:.4f}"


def _sizes(art, keys=("J", "N", "D", "K", "I"), experiment: str | None = None) -> str:
    """'(J, N, D, K, I) = (500, 25, 20, 5, 3), 5 trials' from the run's resolved parameters, never typed by hand."""
    p = art.run_params(experiment, art.shown)
    return f"({', '.join(keys)}) = ({', '.join(str(p[k]) for k in keys)}), {p['trials']} trial{'s' * (p['trials'] != 1)}"


def _cost_panels():
    """Cost vs. BPV (left) and vs. iteration or time (right): one shared y axis, so tick labels never collide."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    return fig, axes


def _legend_outside(fig, ax) -> None:
    """The legend of `ax` (which holds every entry) beside the panels, where it covers no data."""
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper")


def _sweep_colors(n: int) -> list[str]:
    """Colours for a swept setting (the number of views I): the style's palette minus the method colours."""
    from fedrepro.plotting.names import PALETTE

    taken = {color("altmaxvar"), color("cutemaxvar"), color("mvlsa")}
    return [c for c in PALETTE if c not in taken][:n]


def _plain_log_ticks(*axes) -> None:
    """Tick labels of log axes that never collide: over a decade or more only the powers of ten are labelled
    (matplotlib also labels some minor ticks, '3 x 10^-4' beside '4 x 10^-4'); within less than a decade there may
    be no power of ten, so the minor ticks carry plain numbers ('0.013'). Call after the limits are final."""
    import math

    from matplotlib.ticker import FuncFormatter, NullFormatter

    def plain(low, high):
        # the ticks in view are m x 10^k, m = 1..9; more than four of them crowd the upper end of the decade
        # ('0.0008', '0.0009', '0.001'), so then only m = 1, 2, 3, 5 are labelled
        ticks = [m * 10.0 ** k for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
                 for m in range(1, 10) if low <= m * 10.0 ** k <= high]
        thin = len(ticks) > 4

        def label(v, _):
            mantissa = round(v / 10.0 ** math.floor(math.log10(v) + 1e-9)) if v > 0 else 0
            return f"{v:.3g}" if not thin or mantissa in (1, 2, 3, 5) else ""

        return FuncFormatter(label)

    for ax in axes:
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            if axis.get_scale() != "log" or low <= 0:
                continue
            low, high = sorted((low, high))
            if high / low >= 10:
                axis.set_minor_formatter(NullFormatter())
            else:
                axis.set_major_formatter(plain(low, high))
                axis.set_minor_formatter(plain(low, high))


def run_parameters(art) -> str:
    """The resolved parameters of the runs behind the artifact (the sizes of this scale, never typed by hand)."""
    parts = []
    for exp in art.experiments:
        items = []
        for key, value in art.run_params(exp, art.shown).items():
            if isinstance(value, dict):
                continue
            if isinstance(value, list):
                value = ", ".join(str(v.get("label", v)) if isinstance(v, dict) else str(v) for v in value)
            items.append(f"{key} = {value}")
        parts.append(f"experiment `{exp}`: " + "; ".join(items))
    return "\n\n".join(parts)


def summary(art):
    """What the artifact was made from (scale, configurations, run parameters) and the rows the claims read."""
    from IPython.display import Markdown

    lines = [f"Scale `{art.scale}`, configuration shown `{art.shown}` (configurations run: "
             + ", ".join(f"`{c}`" for c in art.configurations) + ")" + (", **stand-in data**" if art.stand_in else "")
             + ".", "", run_parameters(art), ""]
    if art.kind == "figure":
        data = pd.read_csv(art.outputs["csv"])
        data = data[~data["kind"].isin(_PLOTTED_KINDS) & (data.configuration == art.shown)]
        lines += ["Numbers the claims read:", "", markdown_table(data.dropna(axis=1, how="all"), floatfmt=".4g"), ""]
    return Markdown("\n".join(lines))


# ---- Fig. 2 ------------------------------------------------------------------------------------------------------

def fig2(art):
    """The compression operation (eqs. 18-19) of the project's own quantizer on one random Δ, from the run's rows."""
    runs = art.runs
    art.write_data(runs)
    data = runs[runs.configuration == art.shown]
    msg = data[data.kind == "message"].iloc[0]
    entries = data[data.kind == "entry"].sort_values("t").reset_index(drop=True)
    hist = data[data.kind == "histogram"]
    S, draws = int(msg.S), int(msg.draws)
    grid = np.arange(S + 1) / S
    def fraction(p: int) -> str:  # p/S as the paper writes the grid
        return "0" if p == 0 else ("−" if p < 0 else "") + ("1" if abs(p) == S else f"{abs(p)}/{S}")

    apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), width_ratios=(1.2, 1, 1))

    ax = axes[0]  # (a) the number line: each normalized value and where one draw put it
    for x in grid:
        ax.axvline(x, color="grey", lw=0.8, ls=":")
    y = np.arange(len(entries))
    up = (np.rint(entries.level * S) > entries.p).to_numpy()  # rounded to (p+1)/S, the upper end of its interval
    for i, row in entries.iterrows():
        ax.annotate("", xy=(row.level, i), xytext=(row.t, i),
                    arrowprops={"arrowstyle": "->", "color": "C2" if up[i] else "C3", "lw": 0.9})
    ax.plot(entries.t, y, "o", color="k", ms=4, label="|Δ(j,k)| / ‖Δ‖_max")
    ax.plot(entries.level[up], y[up], ">", color="C2", ms=5, label="rounded up to (p+1)/S")
    ax.plot(entries.level[~up], y[~up], "<", color="C3", ms=5, label="rounded down to p/S")
    ax.set(xticks=grid, xticklabels=[fraction(p) for p in range(S + 1)], yticks=[], xlim=(-0.05, 1.05),
           xlabel="normalized value", ylabel=f"the {len(entries)} entries of Δ, sorted",
           title=f"(a) one draw: S = {S} intervals")
    ax.legend(loc="lower right")

    ax = axes[1]  # (b) eq. (18): the probability of rounding up is the position within the interval
    sd = np.sqrt(entries.frac * (1 - entries.frac) / draws)
    ax.plot([0, 1], [0, 1], color="k", lw=1, label="eq. (18): P(up) = tS − p")
    ax.errorbar(entries.frac, entries.up_rate, yerr=2 * sd, fmt="o", ms=4, color=color("cutemaxvar"),
                label=f"{label('cutemaxvar')} quantizer, {draws} draws (± 2σ)")
    ax.set(xlabel="position in the interval, tS − p", ylabel="share of draws rounded up",
           title="(b) stochastic rounding", xlim=(-0.02, 1.02), ylim=(-0.02, 1.02))
    ax.legend(loc="upper left")

    ax = axes[2]  # (c) the decoded values sit on the grid ±p/S (times ‖Δ‖_max)
    ax.bar(hist.level, hist["count"] / hist["count"].sum(), width=0.6 / S, color=color("cutemaxvar"),
           label="C̃(Δ)(j,k) / ‖Δ‖_max, all draws")
    ax.plot(entries.delta / msg.m, np.zeros(len(entries)), "|", color="k", ms=12, label="Δ(j,k) / ‖Δ‖_max")
    ax.set(xticks=np.arange(-S, S + 1) / S, xticklabels=[fraction(p) for p in range(-S, S + 1)], xlim=(-1.1, 1.1),
           xlabel="signed normalized value", ylabel="share of decoded entries", title="(c) decoded values")
    ax.legend(loc="upper left")
    fig.suptitle(f"{art.label}: the compression operation C̃ (q = {int(msg.q)} bits, {int(msg.bits)} bits per "
                 f"message) on one random {int(msg.J)} × {int(msg.K)} Δ")
    art.save_figure(fig)
    return fig


# ---- Fig. 3 ------------------------------------------------------------------------------------------------------

def fig3(art):
    """Cost vs. iteration from the warm and the randn start, with v* and the MVLSA cost."""
    _, data = _summarize(art, summaries.fig3)
    apply_style()
    ref = data[data.kind == "reference"].iloc[0]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for (method, start), c in data[data.kind == "curve"].groupby(["method", "start"]):
        c = c.sort_values("step")
        q = int(c.q.iloc[0])
        ax.plot(c.step + 1, c.objective, color=color(method), lw=_line_width(method),
                ls="-" if start == "warm" else "--", label=f"{label(method)} ({q} bits), {start} start")
    ax.axhline(ref.v_star, color="k", lw=1, label="Optimal (v*)")
    ax.axhline(ref.mvlsa, color=color("mvlsa"), lw=1, ls=":", label=label("mvlsa"))
    ax.set(xscale="log", yscale="log", xlabel="iteration + 1", ylabel="cost value f",
           title=f"{art.label}: {_sizes(art)}")
    ax.legend()
    _plain_log_ticks(*fig.axes)
    art.save_figure(fig)
    return fig


# ---- Fig. 4, Table I, Fig. 5 -------------------------------------------------------------------------------------

def _q_panels(axes, cv: pd.DataFrame) -> None:
    """Cost vs. BPV (left) and vs. iteration (right), one curve per compression level q."""
    for (_, q), c in cv.groupby(["variant", "q"], sort=False):
        c = c.sort_values("step")
        method = "altmaxvar" if int(q) == 32 else "cutemaxvar"
        style = {"color": _q_color(q), "lw": _line_width(method), "label": _q_label(q)}
        axes[0].plot(c.bpv, c.objective, **style)
        axes[1].plot(c.step + 1, c.objective, **style)


def fig4(art):
    _, data = _summarize(art, summaries.fig4)
    apply_style()
    cv = data[data.kind == "curve"]
    v_star = float(cv.v_star.iloc[0])
    fig, axes = _cost_panels()
    _q_panels(axes, cv)
    for ax, xl in zip(axes, ("bits per variable (BPV)", "iteration + 1")):
        ax.axhline(v_star, color="k", lw=1, label="Optimal (v*)")
        ax.set(xscale="log", yscale="log", xlabel=xl)
    axes[0].set_ylabel("cost value f")
    _legend_outside(fig, axes[1])
    fig.suptitle(f"{art.label}: {_sizes(art)}")
    _plain_log_ticks(*fig.axes)
    art.save_figure(fig)
    return fig


def _paper_cr(art) -> dict[int, float]:
    """Table I's printed CR per q, from the artifact's `cells` claims (q -> CR); a q the paper prints as '-' is absent."""
    paper = {}
    for claim in art.claims():
        if claim["kind"] == "cells" and claim["keys"] == ["q"] and claim["columns"] == ["cr"]:
            paper.update({int(q): float(v) for q, v in claim["paper_table"]})
    return paper


def _claim(art, claim_id: str) -> dict:
    return next(c for c in art.claims() if c["id"] == claim_id)


def _compressor_check(rng_key: tuple, q: int = 3, shape=(500, 5), draws: int = 2000) -> dict:
    """Monte-Carlo check of Facts 1-2 for the compressor the runs use: bias and E||C(D) - D||^2 vs. its bound."""
    from fedrepro.comm import get_compressor
    from fedrepro.runtime import rng_stream

    rng = rng_stream(*rng_key)
    delta = rng.standard_normal(shape)
    comp = get_compressor("cutemaxvar", q=q)
    samples = np.stack([comp(delta, rng, batched=False).value for _ in range(draws)])
    m, S = np.abs(delta).max(), comp.S
    return {"row": "fact2", "q": q, "bias_over_m": float(np.abs(samples.mean(0) - delta).max() / m),
            "mse_over_bound": float(((samples - delta) ** 2).sum(axis=(1, 2)).mean() / (delta.size * m**2 / (4 * S**2)))}


def _table1_markdown(t: pd.DataFrame, paper: dict[int, float], level: float) -> str:
    """One configuration in the paper's orientation (a column per q), the paper's value beside ours in every CR cell."""
    t = t.sort_values("q")
    n = int(t.trials.iloc[0])
    def dash(v, fmt: str) -> str:
        return "–" if np.isnan(v) else format(v, fmt)

    head = [""] + [f"{q} bits" for q in t.q.astype(int)]
    rows = [
        ["CR, ours (paper)"] + [f"{dash(v, '.4f')} (paper {dash(paper.get(int(q), np.nan), '.4f')})"
                                for q, v in zip(t.q, t.cr)],
        [f"trials reaching {level:g} v*, CuteMaxVar"] + [f"{int(r)}/{n}" for r in t.reached_C],
        [f"iterations to {level:g} v*, R_C / R_A"] + [f"{dash(c, '.0f')} / {dash(a, '.0f')}" for c, a in zip(t.R_C, t.R_A)],
        ["final f / v*"] + [f"{v:.3g}" for v in t.final_ratio],
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def table1(art):
    """CR to reach `level` x v* per q (Table I), the §3.8 motivating arithmetic and the compressor check."""
    from IPython.display import Markdown

    level = float(art.params.get("level", 1.5))
    table, _ = _summarize(art, summaries.table1, level=level)
    shown = art.shown
    fact2 = _compressor_check((0, "table1", "fact2")) | {"configuration": shown}
    extra = pd.DataFrame([summaries.motivating_example() | {"configuration": shown}, fact2])
    table = pd.concat([table, extra], ignore_index=True)
    art.write_data(table)

    paper = _paper_cr(art)
    lines = [f"# {art.label}: compression ratios of CuteMaxVar for the experiment of Fig. 4 (scale `{art.scale}`)", ""]
    if art.stand_in:
        lines += ["STAND-IN DATA: some runs behind this table used stand-in data.", ""]
    lines += [(f"CR = 1 − q R_C / (32 R_A), R = the iterations the trial-mean curve needs to fall below {level:g} v*; "
               "the paper's value in parentheses; '–': the mean curve never gets there (the next row counts the trials "
               "that do)."), ""]
    for c in art.configurations:
        t = table[(table.configuration == c) & (table.row == "cr")]
        p = art.run_params(art.experiments[0], c)
        sizes = ", ".join(str(p[k]) for k in ("J", "N", "D", "K", "I"))
        heading = (f"## Configuration `{c}`: (J, N, D, K, I) = ({sizes}), ν = {p['nu']:g}, mean curves of "
                   f"{int(t.trials.iloc[0])} trials, v* = {t.v_star.iloc[0]:.3g}")
        lines += [heading, "", _table1_markdown(t, paper, level), ""]
    mot, c27, c28 = extra.iloc[0], _claim(art, "C27"), _claim(art, "C28")
    motivating = (f"Motivating example (§3.8): J = {mot.J:.0f}, K = {mot.K:.0f}, 32-bit floats: {mot.bits:.3g} bits = "
                  f"{mot.gigabytes:.2f} GB per node per iteration (paper: {c27['paper_value']} GB).")
    check = (f"Compressor check (q = {fact2['q']}, 2000 draws on a 500 × 5 Δ): max |mean − Δ| / m = "
             f"{fact2['bias_over_m']:.3g}; E‖C̃(Δ) − Δ‖² / (JK m²/4S²) = {fact2['mse_over_bound']:.3f} "
             f"(Fact 2: {c28['paper_value']}).")
    lines += [motivating, "", check, ""]
    text = "\n".join(lines)
    art.write_markdown(text)
    return Markdown(text)


def fig5(art):
    """CuteMaxVar (q) and AltMaxVar vs. BPV near v*, each level annotated with its CR."""
    q = int(art.params.get("q", 3))
    levels = tuple(art.params.get("levels", summaries.LEVELS))
    _, data = _summarize(art, summaries.fig5, q=q, levels=levels)
    apply_style()
    cv, lv = data[data.kind == "curve"], data[data.kind == "level"]
    v_star = float(lv.v_star.iloc[0])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for (method, cq), c in cv.groupby(["method", "q"]):
        c = c.sort_values("step")
        ax.plot(c.bpv, c.objective, color=_q_color(cq), lw=_line_width(method), label=_q_label(cq))
    ax.axhline(v_star, color="k", lw=1, label="Optimal (v*)")
    for _, row in lv.iterrows():
        ax.axhline(row.level * v_star, color="grey", lw=0.8, ls="--")
        ax.annotate(f"{row.level:g} v*: CR = {_fmt_cr(row.cr)}", (0.98, row.level * v_star),
                    xycoords=("axes fraction", "data"), ha="right", va="bottom", fontsize=8)
    ax.set(xscale="log", yscale="log", xlabel="bits per variable (BPV)", ylabel="cost value f",
           ylim=(0.7 * v_star, 5 * v_star), title=f"{art.label}: q = {q}, {_sizes(art)}")
    ax.legend(loc="lower left")
    _plain_log_ticks(*fig.axes)
    art.save_figure(fig)
    return fig


# ---- Figs. 6-8 ----------------------------------------------------------------------------------------------------

# Figs. 6-7's time axis: the paper's wall clock, measured as the process's CPU time (fedrepro.runtime.compute_clock:
# the waiting for a core under load is left out) on the simulated-parallel clock of gcca:A-16 (node phase / I +
# server phase per iteration).
TIME_AXIS = "time (s; CPU clock, nodes in parallel)"


def fig6(art):
    """Batch sizes: cost vs. BPV (left) and vs. time (right; TIME_AXIS)."""
    _, data = _summarize(art, summaries.fig6)
    apply_style()
    cv = data[data.kind == "curve"]
    v_star = float(cv.v_star.iloc[0])
    fig, axes = _cost_panels()
    order = cv.drop_duplicates("variant").sort_values(["method", "batch"]).variant.tolist()
    cute = [v for v in order if not cv[cv.variant == v].method.eq("altmaxvar").any()]
    shade = dict(zip(cute, _ordered_colors(len(cute))))
    for variant in order:
        c = cv[cv.variant == variant].sort_values("step")
        method, batch = c.method.iloc[0], int(c.batch.iloc[0])
        if method == "altmaxvar":
            name, col = f"{label(method)} (full gradient)", color(method)
        else:
            full = batch >= c.batch.max() and variant.endswith("full")
            name, col = f"{label(method)}, full gradient" if full else f"{label(method)}, batch {batch}", shade[variant]
        for ax, x in zip(axes, (c.bpv, c.time)):
            ax.plot(x, c.objective, color=col, lw=_line_width(method), label=name)
    for ax, xl in zip(axes, ("bits per variable (BPV)", TIME_AXIS)):
        ax.axhline(v_star, color="k", lw=1, label="Optimal (v*)")
        ax.set(xscale="log", yscale="log", xlabel=xl)
    axes[0].set_ylabel("cost value f")
    _legend_outside(fig, axes[1])
    fig.suptitle(f"{art.label}: {_sizes(art)}")
    _plain_log_ticks(*fig.axes)
    art.save_figure(fig)
    return fig


def fig7(art):
    """Number of views I: cost vs. BPV (left) and vs. time (right; TIME_AXIS), v* per I dotted."""
    _, data = _summarize(art, summaries.fig7)
    apply_style()
    cv = data[data.kind == "curve"]
    views = sorted(cv.I.unique())
    by_view = dict(zip(views, _sweep_colors(len(views))))
    fig, axes = _cost_panels()
    for (I, method), c in cv.groupby(["I", "method"]):
        c = c.sort_values("step")
        style = {"color": by_view[I], "lw": _line_width(method), "ls": "-" if method == "altmaxvar" else "--",
                 "label": f"{_method_label(method, c.q.iloc[0])}, I = {I}"}
        axes[0].plot(c.bpv, c.objective, **style)
        axes[1].plot(c.time, c.objective, **style)
        if method == "altmaxvar":
            for ax in axes:
                ax.axhline(c.v_star.iloc[0], color=by_view[I], lw=0.8, ls=":")
    for ax, xl in zip(axes, ("bits per variable (BPV)", TIME_AXIS)):
        ax.set(xscale="log", yscale="log", xlabel=xl)
    axes[0].set_ylabel("cost value f")
    _legend_outside(fig, axes[1])
    p = art.run_params()
    fig.suptitle(f"{art.label}: {_sizes(art, ('J', 'N', 'D', 'K'))}, q = 3, I = "
                 f"{', '.join(str(i) for i in p.get('I_values', [p['I']]))} (dotted: v* per I)")
    _plain_log_ticks(*fig.axes)
    art.save_figure(fig)
    return fig


def fig8(art):
    """Large sparse views: cost vs. BPV (left) and vs. iteration (right) per q, with v* and the common level."""
    _, data = _summarize(art, summaries.fig8)
    apply_style()
    cv, fin = data[data.kind == "curve"], data[data.kind == "final"]
    v_star = float(fin.v_star.iloc[0])
    fig, axes = _cost_panels()
    _q_panels(axes, cv)
    top = 1.3 * float(cv[cv.q == 32].objective.max())  # q = 2 diverges off the top
    for ax, xl in zip(axes, ("bits per variable (BPV)", "iteration + 1")):
        ax.axhline(v_star, color="k", lw=1, label="Optimal (v*)")
        ax.axhline(fin.level.iloc[0], color="grey", lw=0.8, ls="--", label="common level")
        ax.set(xscale="log", yscale="log", xlabel=xl, ylim=(0.97 * v_star, top))
    axes[0].set_ylabel("cost value f")
    _plain_log_ticks(*axes)
    _legend_outside(fig, axes[1])
    fig.suptitle(f"{art.label}: {_sizes(art)}, density ≈ {fin.density.iloc[0]:.4f}")
    art.save_figure(fig)
    return fig


# ---- Fig. 9 (Europarl) --------------------------------------------------------------------------------------------

def fig9(art):
    """Training cost vs. BPV with v*, 1.5 v*, 2 v* (left) and test AC vs. BPV (right)."""
    ac_level = float(art.params.get("ac_level", 0.5))
    _, data = _summarize(art, data_summaries.fig9, ac_level=ac_level)
    apply_style()
    cv = data[data.kind == "curve"]
    ref = data[data.kind == "reference"].iloc[0]
    lv = data[data.kind == "level"]
    acl = data[data.kind == "ac_level"].iloc[0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for method, c in cv[cv.method.isin(["altmaxvar", "cutemaxvar"])].groupby("method"):
        c = c.sort_values("step")
        style = {"color": color(method), "label": _method_label(method, c.q.iloc[0])}
        axes[0].plot(c.bpv, c.objective, lw=_line_width(method), **style)
        a = c.dropna(subset=["ac"])
        axes[1].plot(a.bpv, 100 * a.ac, marker=".", **style)
    for mult, ls in ((1, "-"), (1.5, "--"), (2, ":")):
        axes[0].axhline(mult * ref.v_star, color="k", lw=0.8, ls=ls, label=f"{mult:g} v*")
    axes[1].axhline(100 * ac_level, color="grey", lw=0.8, ls="--", label=f"AC = {100 * ac_level:g}%")
    axes[0].set(xscale="log", yscale="log", xlabel="bits per variable (BPV)", ylabel="training cost f")
    axes[1].set(xscale="log", xlabel="bits per variable (BPV)", ylabel="test AC (%)")
    axes[0].legend()
    axes[1].legend()
    l15 = lv[lv.level == 1.5].iloc[0]
    fig.suptitle(f"{art.label}: I = {ref.I:.0f}, J = {ref.J_train:.0f} / {ref.J_test:.0f}; "
                 f"CR(1.5 v*) = {_fmt_cr(l15.cr)}, CR(AC {100 * ac_level:g}%, {acl.direction}) = {_fmt_cr(acl.cr)}")
    _plain_log_ticks(*fig.axes)
    art.save_figure(fig)
    return fig


# ---- Figs. 10-11 (deep toy) ---------------------------------------------------------------------------------------

def _embedding(art, summarize) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figs. 10 and 12: the summary table and its 2-D points to scatter (style applied)."""
    _, data = _summarize(art, summarize)
    apply_style()
    return data, data[data.kind == "points"]


def _deep_panels(raw_title: str, cute_suffix: str = "") -> list[tuple[str, str]]:
    """Figs. 10 and 12's columns: the raw view, AltMaxVar-Deep and CuteMaxVar-Deep (method, title)."""
    return [("raw", raw_title), ("altmaxvar", f"{label('altmaxvar')}-Deep"),
            ("cutemaxvar", f"{label('cutemaxvar')}-Deep{cute_suffix}")]


def fig10(art):
    """Raw test views and the views transformed by each method (columns), G at the bottom, clustering accuracy."""
    data, pts = _embedding(art, data_summaries.fig10)
    acc = data[data.kind == "cluster"].set_index(["method", "view"])["cluster_acc"]
    cols = _deep_panels("raw view")
    fig, axes = plt.subplots(4, 3, figsize=(10, 12))
    for j, (method, title) in enumerate(cols):
        for i, view in enumerate(["1", "2", "3", "G"]):
            ax = axes[i, j]
            p = pts[(pts.method == method) & (pts.view.astype(str) == view)]
            if p.empty:
                ax.axis("off")
                continue
            ax.scatter(p.x, p.y, c=p.label, cmap="coolwarm", s=3)
            ax.set_title(f"{title}: {'G' if view == 'G' else f'view {view}'}")
            ax.set_xlabel(f"spectral clustering acc. {100 * acc[(method, view)]:.1f}%")
    fig.suptitle(art.label)
    art.save_figure(fig)
    return fig


def _accuracy_figure(art, summarize, level: float):
    """Test accuracy vs. BPV (left) and vs. iteration (right), the target as a line: the trial mean with a
    +-1 std band when there are several trials, and "1 trial" in the title when there is one (no band to draw)."""
    _, data = _summarize(art, summarize, level=level)
    apply_style()
    cv = data[data.kind == "curve"]
    crrow = data[data.kind == "cr"].iloc[0]
    trials = int(cv.trials.min())
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for method, c in cv.groupby("method"):
        c = c.sort_values("step")
        col = color(method)
        for ax, x in zip(axes, (c.bpv, c.step)):
            ax.plot(x, 100 * c.accuracy, color=col, label=_method_label(method, c.q.iloc[0], deep=True))
            if trials > 1:
                ax.fill_between(x, 100 * (c.accuracy - c.accuracy_std), 100 * (c.accuracy + c.accuracy_std),
                                color=col, alpha=0.2, lw=0)
    for ax, xl in zip(axes, ("bits per variable (BPV)", "iteration r")):
        ax.axhline(100 * level, color="grey", lw=0.8, ls="--", label=f"{100 * level:g}%")
        ax.set(xlabel=xl, ylabel="test accuracy (%)")
    axes[1].legend()
    spread = f"mean ± 1 std over {trials} trials" if trials > 1 else "1 trial, no spread to show"
    fig.suptitle(f"{art.label} ({spread}): CR at {100 * level:g}% = {_fmt_cr(crrow.cr)}")
    return fig, axes


def fig11(art):
    fig, axes = _accuracy_figure(art, data_summaries.fig11, float(art.params.get("accuracy_level", 0.95)))
    if "bpv_axis_max" in art.params:
        axes[0].set_xlim(0, float(art.params["bpv_axis_max"]))
    art.save_figure(fig)
    return fig


# ---- Figs. 12-13 (EHR) --------------------------------------------------------------------------------------------

def fig12(art):
    """t-SNE of the test diagnoses: raw X_1, AltMaxVar-Deep G, CuteMaxVar-Deep G, with RBF-SVM accuracy."""
    data, pts = _embedding(art, data_summaries.fig12)
    acc = data[data.kind == "svm"].set_index("method")["svm_acc"]
    info = data[data.kind == "info"].iloc[0]
    q = int(art.runs.loc[art.runs.method == "cutemaxvar", "q"].iloc[0])
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4))
    panels = _deep_panels("raw view X_1", f" (q = {q})")
    for ax, (method, title) in zip(axes, panels):
        p = pts[pts.method == method]
        ax.scatter(p.x, p.y, c=p.label, cmap="tab10", vmin=0, vmax=9, s=8)
        ax.set_title(f"{title}\nRBF-SVM accuracy {100 * acc[method]:.1f}%")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"{art.label}: J = {info.J:.0f} ({info.J_train:.0f} train / {info.J_test:.0f} test), "
                 f"{info.medicines:.0f} medicines, {info.groups:.0f} groups")
    art.save_figure(fig)
    return fig


def fig13(art):
    fig, _ = _accuracy_figure(art, data_summaries.fig13, float(art.params.get("accuracy_level", 0.80)))
    art.save_figure(fig)
    return fig
