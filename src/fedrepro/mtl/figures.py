"""The four-panel figures 4.1 and 4.2 from the artifact's data (``experiments.figure_data``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fedrepro.mtl.experiments import SCHEME_LABELS, SCHEMES
from fedrepro.plotting import apply_style

CONVENTION_LABEL = {"bits_P": "convention P: idx ⌈log2 d⌉ bits, no sign scale",
                    "bits_F": "convention F: P + 32-bit sign scale",
                    "bits_measured": "fedrepro.comm default: 32-bit idx and scale"}


def four_panels(data: pd.DataFrame, configuration: str, *, second: str, second_label: str, title: str,
                bits: str = "bits_P", edge_label: str = "g_ij on a random edge"):
    """(a) relative cost gap vs t; (b) `second` vs t; (c) gap vs cumulative bits (log-log); (d) tracked edge's g.
    Colour = scheme, solid = sample feedback, dashed = bandit feedback."""
    apply_style()
    cur = data[(data.row == "curve") & (data.configuration == configuration)]
    pal = sns.color_palette("colorblind", 5)
    colors = dict(zip(SCHEMES, [pal[0], pal[1], pal[2], pal[4]]))
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
            label = SCHEME_LABELS[sch] + (" (Bandit)" if fb == "bandit" else "")
            ax.plot(g[x], g[y], color=colors[sch], ls="-" if fb == "sample" else "--", lw=width[sch], label=label,
                    alpha=0.9)
        ax.set_yscale(yscale)
        if x != "step":
            ax.set_xscale("log")
        ax.set_title(ttl, loc="left", fontsize=10)
        ax.set_xlabel(xl)
    axes[0, 0].set_ylabel("(F(x̄) − F*) / (F(x̄⁽¹⁾) − F*)")
    axes[0, 1].set_ylabel(second_label)
    axes[1, 0].set_ylabel("relative cost gap")
    axes[1, 1].set_ylabel("g_ij(x̄_i, x̄_j)")
    axes[1, 1].axhline(0.0, color="0.3", lw=0.8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    order = [labels.index(SCHEME_LABELS[s] + suf) for suf in ("", " (Bandit)") for s in SCHEMES
             if SCHEME_LABELS[s] + suf in labels]
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="lower center", ncol=4,
               bbox_to_anchor=(0.5, -0.06))
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def savings_table(data: pd.DataFrame) -> pd.DataFrame:
    """Bit savings at τ per configuration, feedback and scheme under the three pricings, with the paper's."""
    s = data[data.row == "summary"]
    cols = ["configuration", "feedback", "scheme", "tau", "t_tau", "savings_P", "savings_F", "savings_measured",
            "paper_savings", "ratio_per_iter_P", "ratio_per_iter_F", "final_gap", "final_g_edge", "final_g_max"]
    cols += [c for c in ("final_param_err", "final_acc") if c in s]
    return s[cols].reset_index(drop=True)


__all__ = ["four_panels", "savings_table", "np"]
