"""Thesis ch. 4 artifacts: Figs. 4.1 (QCQP) and 4.2 (logistic regression), one function each.

Each function takes the notebook's `fedrepro.artifact.Artifact`, computes the figure's data with
`fedrepro.mtl.experiments.figure_data` (curves + per-scheme summary, what the claims read), writes the
artifact's CSV, PDF and PNG and returns the four-panel figure.  `savings_table` gives the bit savings
behind it as Markdown, `bits_panels` panel (c) under the other two pricings (for reading, not saved).
The target gap τ of each configuration is a run parameter; the paper's savings are the artifact's `parameters:`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.mtl.experiments import figure_data, iterations
from fedrepro.plotting import apply_style, color, label, markdown_table
from fedrepro.registry.methods import compressor_spec

CONVENTION_LABEL = {"bits_P": "convention P: idx ⌈log2 d⌉ bits, no sign scale",
                    "bits_F": "convention F: P + 32-bit sign scale",
                    "bits_measured": "fedrepro.comm default: 32-bit idx and scale"}

# panel (b): the second quantity per figure, and its axis label
SECOND = {"fig4_1": ("param_err", "relative parameter error ‖x̄ − x*‖ / ‖x*‖"),
          "fig4_2": ("acc", "test accuracy (pooled, 500 per node)")}

SAVINGS_COLUMNS = ["configuration", "feedback", "scheme", "tau", "t_tau", "savings_P", "savings_F",
                   "savings_measured", "paper_savings", "ratio_per_iter_P", "ratio_per_iter_F", "final_gap",
                   "final_g_edge", "final_g_max", "final_param_err", "final_acc"]


def scheme_label(scheme: str, feedback: str) -> str:
    return label(scheme) + (" (Bandit)" if feedback == "bandit" else "")


def _figure_frame(art) -> pd.DataFrame:
    """Curves and summary of every configuration that ran, τ from each configuration's run parameters."""
    taus = {c: float(art.run_params(configuration=c)["tau"]) for c in art.configurations}
    data = figure_data(art.runs, taus, art.params.get("paper_savings", {}))
    art.write_data(data)
    return data


PROBLEMS = {"qcqp": "QCQP (4.15)", "logistic": "logistic regression (4.16)"}


def run_sizes(p: dict) -> str:
    """One line of the sizes a run used (from its resolved parameters); k: the sparsifiers' entries kept."""
    runs = int(p.get("runs", 1))
    ks = sorted({compressor_spec(m.get("compressor") if m else None)[1].get("k") for m in p["methods"].values()}
                - {None})
    k = f", k = {', '.join(str(v) for v in ks)}" if ks else ""
    return (f"{PROBLEMS.get(p['problem'], p['problem'])}, n = {p['n']} (Erdős–Rényi p = {p['p']:g}), d = {p['d']}, "
            f"T = {iterations(p)}, η = {p['eta']:g}{k}, {runs} run{'s' if runs > 1 else ''}")


def _title(art) -> str:
    return f"{art.label}: {run_sizes(art.run_params())}\nconfiguration `{art.shown}`, scale `{art.scale}`"


def describe_run(art):
    """What the runs behind the figure used, per configuration, from the run parameters (Markdown)."""
    from IPython.display import Markdown

    lines = [f"**What we ran** (scale `{art.scale}`; from the run parameters; the figure shows `{art.shown}`):"]
    for c in art.configurations:
        p = art.run_params(configuration=c)
        lines.append(f"- `{c}`: {run_sizes(p)}; δ = {p['delta']:g}, ζ = {p['zeta']:g}; savings read at the relative "
                     f"gap τ = {p['tau']:g}")
    return Markdown("\n".join(lines))


def _detached(fig):
    """Close the figure in pyplot and return it: a notebook then shows it once, as the cell's result (the inline
    backend would otherwise draw every open figure a second time)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


def four_panels(data: pd.DataFrame, configuration: str, *, second: str, second_label: str, title: str,
                bits: str = "bits_P", edge_label: str = "g_ij on a random edge", tau: float | None = None,
                schemes: list[str] | None = None):
    """(a) relative cost gap vs t; (b) `second` vs t; (c) gap vs cumulative bits (log-log); (d) tracked edge's g.
    Colour = scheme, solid = sample feedback, dashed = bandit feedback; `tau`, the gap the savings are read at,
    as a dotted line on the gap panels.  `schemes`: the legend's order (the registry's methods); schemes not named
    there follow in the data's order."""
    import matplotlib.pyplot as plt

    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    # with k = 1 TopK and Sign+TopK have the same iterates (A-K): Sign+TopK is drawn wide underneath
    width = {"vanilla": 1.4, "sign": 1.4, "topk": 1.4, "sign_topk": 3.2}
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    panels = [("step", "gap", "(a) relative cost gap", "iteration t", "log"),
              ("step", second, f"(b) {second_label}", "iteration t", "log" if second != "acc" else "linear"),
              (bits, "gap", "(c) relative cost gap vs bits", f"cumulative bits ({CONVENTION_LABEL[bits]})", "log"),
              ("step", "g_edge", f"(d) {edge_label}", "iteration t", "linear")]
    for ax, (x, y, ttl, xl, yscale) in zip(axes.flat, panels):
        groups = sorted(cur.groupby(["feedback", "scheme"]), key=lambda kv: kv[0][1] != "sign_topk")
        for (fb, sch), g in groups:
            g = g.sort_values("step")
            ax.plot(g[x], g[y], color=color(sch), ls="-" if fb == "sample" else "--", lw=width.get(sch, 1.4),
                    label=scheme_label(sch, fb), alpha=0.9)
        ax.set_yscale(yscale)
        if x != "step":
            ax.set_xscale("log")
        if tau is not None and y == "gap":
            ax.axhline(tau, color="k", lw=0.8, ls=":", label=f"τ = {tau:g} (bit savings read here)")
        ax.set_title(ttl, loc="left", fontsize=10)
        ax.set_xlabel(xl)
    axes[0, 0].set_ylabel("(F(x̄) − F*) / (F(x̄⁽¹⁾) − F*)")
    axes[0, 1].set_ylabel(second_label)
    axes[1, 0].set_ylabel("relative cost gap")
    axes[1, 1].set_ylabel("g_ij(x̄_i, x̄_j)")
    axes[1, 1].axhline(0.0, color="0.3", lw=0.8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    names = list(dict.fromkeys(list(schemes or []) + list(cur.scheme.unique())))
    order = [labels.index(scheme_label(s, fb)) for fb in ("sample", "bandit") for s in names
             if scheme_label(s, fb) in labels] + [i for i, lab in enumerate(labels) if lab.startswith("τ =")]
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center", ncol=5)
    fig.suptitle(title, fontsize=11)
    return fig


def _four_panel_artifact(art):
    data = _figure_frame(art)
    second, second_label = SECOND[art.name]
    params = art.run_params()
    fig = four_panels(data, art.shown, second=second, second_label=second_label, title=_title(art),
                      tau=float(params["tau"]), schemes=list(params["methods"]))
    art.save_figure(fig)
    return _detached(fig)


def fig4_1(art):
    """Thesis Fig. 4.1: decentralized QCQP (4.15), gap / parameter error / gap vs bits / edge constraint."""
    return _four_panel_artifact(art)


def fig4_2(art):
    """Thesis Fig. 4.2: decentralized logistic regression (4.16), gap / accuracy / gap vs bits / edge constraint."""
    return _four_panel_artifact(art)


# ---- the numbers behind the figures -------------------------------------------------------------------------

def savings_table(art):
    """Bit savings at τ per configuration, feedback and scheme under the three pricings, with the paper's
    (the summary rows of the CSV the figure function wrote), as Markdown."""
    from IPython.display import Markdown

    s = pd.read_csv(art.outputs["csv"])
    s = s[s.row == "summary"]
    table = s[[c for c in SAVINGS_COLUMNS if c in s]].reset_index(drop=True)
    for col in table.columns:
        if table[col].dtype.kind == "f":
            table[col] = [f"{v:.4g}" if np.isfinite(v) else "–" for v in table[col]]
    return Markdown(markdown_table(table))


def bits_panels(art):
    """Panel (c) under convention F and fedrepro.comm's measured payload (for reading; not an output)."""
    import matplotlib.pyplot as plt

    apply_style()
    data = pd.read_csv(art.outputs["csv"])
    cur = data[(data.row == "curve") & (data.configuration == art.shown)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, bits in zip(axes, ("bits_F", "bits_measured")):
        for (fb, sch), g in cur.groupby(["feedback", "scheme"]):
            ax.plot(g[bits], g["gap"], ls="-" if fb == "sample" else "--", color=color(sch),
                    label=scheme_label(sch, fb))
        ax.set(xscale="log", yscale="log", xlabel=f"cumulative bits ({CONVENTION_LABEL[bits]})",
               title=f"gap vs bits, {bits}")
    axes[0].set_ylabel("relative cost gap")
    axes[1].legend(fontsize=7, ncol=2)
    return _detached(fig)


def _range(values, fmt: str = ".2f") -> str:
    lo, hi = format(float(values.min()), fmt), format(float(values.max()), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def difference_facts(art) -> list[str]:
    """What the figure shows against the paper, from the CSV the figure function wrote, per configuration: the
    schemes that never reach τ (and those that end above their starting gap, i.e. diverge), edge constraints that
    end positive, and the savings against the paper's where they exist."""
    s = pd.read_csv(art.outputs["csv"])
    s = s[s.row == "summary"]
    facts = []
    for c, g in s.groupby("configuration", sort=False):
        tau = float(g["tau"].iloc[0])
        missed = g[~np.isfinite(g["t_tau"])]
        if len(missed) == len(g):
            facts.append(f"`{c}`: no scheme reaches the relative gap τ = {tau:g} (final gaps "
                         f"{_range(missed['final_gap'], '.2g')}): no savings to compare.")
        elif len(missed):
            names = ", ".join(scheme_label(r.scheme, r.feedback) for r in missed.itertuples())
            diverge = ", above the starting gap of 1: they diverge" if (missed["final_gap"] > 1).all() else ""
            facts.append(f"`{c}`: {names} never reach τ = {tau:g} (final gaps {_range(missed['final_gap'], '.2g')}"
                         f"{diverge}).")
        if "acc_diff_vs_vanilla" in g and (g["acc_diff_vs_vanilla"] < -0.01).any():
            low = g[g["acc_diff_vs_vanilla"] < -0.01]
            vanilla = g.loc[g.scheme == "vanilla", "final_acc"]
            names = ", ".join(scheme_label(r.scheme, r.feedback) for r in low.itertuples())
            facts.append(f"`{c}`: final test accuracy {_range(low['final_acc'])} for {names}, against vanilla's "
                         f"{_range(vanilla)}; the paper's are similar to vanilla's.")
        bad = g[g["final_g_edge"] > 0]
        if len(bad):
            facts.append(f"`{c}`: the tracked edge's constraint ends positive (infeasible) for "
                         f"{', '.join(scheme_label(r.scheme, r.feedback) for r in bad.itertuples())} "
                         f"(g = {_range(bad['final_g_edge'], '.2g')}); the paper's are negative.")
        ok = g[np.isfinite(g["savings_P"]) & (g.scheme != "vanilla")]
        if len(ok) and len(missed):
            facts.append(f"`{c}`: savings (convention P) where τ is reached: "
                         + "; ".join(f"{scheme_label(r.scheme, r.feedback)} {r.savings_P:.3g}× (paper {r.paper_savings:g}×)"
                                     for r in ok.itertuples()) + ".")
    return facts


def differences(art):
    """'What differs from the paper and why' (Markdown): the facts measured on this figure's data, then the
    reasons recorded for them (the registry artifact's `differs:`, from the chapter's docs)."""
    from IPython.display import Markdown

    facts, reasons = difference_facts(art), list(art.params.get("differs") or [])
    if not facts and not reasons:
        return Markdown("### What differs from the paper\n\nNothing measured on this figure contradicts the paper's; "
                        "the scorecard judges each claim.")
    lines = ["### What differs from the paper and why", "", *(f"- {f}" for f in facts)]
    if reasons:
        lines += ["", "Why:", "", *(f"- {r}" for r in reasons)]
    return Markdown("\n".join(lines))
