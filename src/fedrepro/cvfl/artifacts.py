"""Every C-VFL artifact (Tables 2-5, D.1, the cost check; Figures 3, 4, D.1-D.8): one function per artifact.

Each function takes a `fedrepro.notebook.Artifact`, writes its outputs (the data CSV the claims read, and the
Markdown table or the PDF + PNG) and returns the `Markdown` table or the matplotlib Figure.  The numbers an artifact
needs beyond its runs come from the registry's `parameters:` of the artifact:

- `targets`: the paper's target per dataset (F1 0.4 / 0.45, 70%, 75%; ImageNet-100 has none);
- `target_fraction`: per scale, the relative target used instead (A-22): that fraction of the uncompressed
  runs' max seed-mean metric. A scale without one uses the paper's target.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.cvfl.summaries import (
    METRIC,
    UNITS,
    cost_curves,
    curves,
    resolve_target,
    summary_table,
    time_table,
)
from fedrepro.plotting import apply_style, bits_color, color, label, markdown_table

DATASETS = {"mimic": "MIMIC-III", "cifar10": "CIFAR-10", "modelnet10": "ModelNet10", "imagenet100": "ImageNet-100"}


# ---- shared pieces ---------------------------------------------------------------------------------------
def shown_runs(art) -> pd.DataFrame:
    """The runs of the configuration shown (C-VFL has one, as-stated)."""
    runs = art.runs
    return runs[runs["configuration"] == art.shown]


def main_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Algorithm 1 with Q = 10: the setting of every table and figure except Table 5 and D.1."""
    return runs[(runs.Q == 10) & (runs.alg == 1)]


def target(art, runs: pd.DataFrame, dataset: str) -> float:
    """The artifact's target on `dataset`: the paper's, or at a scale with a `target_fraction` that fraction of the
    uncompressed runs' max (A-22; ImageNet-100, which has no paper target, is relative at every scale)."""
    fraction = (art.params.get("target_fraction") or {}).get(art.scale)
    fixed = (art.params.get("targets") or {}).get(dataset)
    if fraction is None and fixed is not None:
        return float(fixed)
    if fraction is None:
        raise ValueError(f"cvfl:{art.name}: no target for {dataset} at scale {art.scale}: give the artifact's "
                         f"parameters a `targets` entry or a `target_fraction` for this scale")
    return resolve_target(runs[runs.dataset == dataset], None, min(0.99, float(fraction)))


def _fmt_pm(m, s, nd=3):
    return "–" if not np.isfinite(m) else f"{m:.{nd}f} ± {s:.{nd}f}"


def _row_name(compressor, b) -> str:
    return f"{label(compressor)} b={b}"


def _markdown(art, text: str):
    from IPython.display import Markdown

    art.write_markdown(text)
    return Markdown(text)


# ---- tables ----------------------------------------------------------------------------------------------
def _compressor_table(art):
    """Tables 2-4: max metric and cost to target per compressor and b (Q = 10, M = 4)."""
    runs = shown_runs(art)
    ds = runs["dataset"].iloc[0]
    sub = main_runs(runs)
    sub = sub[(sub.dataset == ds) & (sub.M == 4)]
    tgt = target(art, runs, ds)
    t = summary_table(sub, tgt)
    art.write_data(t)
    nd = 3 if ds == "mimic" else 2
    shown = pd.DataFrame({
        "Compressor": [_row_name(c, b) for c, b in zip(t.compressor, t.b)],
        "Max metric": [_fmt_pm(m, s, nd) for m, s in zip(t.max_metric, t.max_std)],
        f"Cost ({UNITS[ds][0]}) to target": [_fmt_pm(m, s, 3) for m, s in zip(t.cost, t.cost_std)],
        "seeds reaching": [f"{r}/{n}" for r, n in zip(t.reached, t.seeds)],
        "reduction": ["–" if not np.isfinite(r) else f"{r:.1f}%" for r in t.reduction_pct],
    })
    return _markdown(art, f"**{art.label}** — target {tgt} ({METRIC[ds]})\n\n" + markdown_table(shown))


def table2(art):
    """Table 2: MIMIC-III, max test F1 and cost (MB) to the target F1."""
    return _compressor_table(art)


def table3(art):
    """Table 3: CIFAR-10, max test accuracy and cost (GB) to the target accuracy."""
    return _compressor_table(art)


def table4(art):
    """Table 4: ModelNet10, max test accuracy and cost (MB) to the target accuracy."""
    return _compressor_table(art)


def _q_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """MIMIC-III runs of Table 5 / D.1: Q = 1 only with Algorithm 2 (A-13), Q > 1 with Algorithm 1."""
    return runs[~((runs.Q == 1) & (runs.alg == 1))]


def tabled1(art):
    """Table D.1: MIMIC-III cost (MB) to the target for no compression and VQ b = 3 against Q (Q = 1: Alg. 2)."""
    runs = shown_runs(art)
    sub = runs[(runs.dataset == "mimic") & (runs.compressor.isin(["none", "vector"])) & (runs.b.isin([32, 3]))]
    sub = _q_columns(sub)
    tgt = target(art, runs, "mimic")
    t = summary_table(sub, tgt)
    art.write_data(t)
    shown = pd.DataFrame({
        "Compressor": [_row_name(c, b) for c, b in zip(t.compressor, t.b)], "Q": t.Q, "alg": t.alg,
        "Cost (MB)": [_fmt_pm(m, s, 3) for m, s in zip(t.cost, t.cost_std)],
        "seeds reaching": [f"{r}/{n}" for r, n in zip(t.reached, t.seeds)]})
    return _markdown(art, f"**{art.label}** — cost to target {tgt}\n\n" + markdown_table(shown))


def table5(art):
    """Table 5: MIMIC-III VQ b = 3, simulated time (s) to the target F1 against Q and the round latency t_c."""
    runs = shown_runs(art)
    sub = _q_columns(runs[(runs.dataset == "mimic") & (runs.compressor == "vector") & (runs.b == 3)])
    tgt = target(art, runs, "mimic")
    t = time_table(sub, tgt)
    art.write_data(t)
    wide = t.assign(cell=[_fmt_pm(m, s, 2) + f" ({r}/{n})"
                          for m, s, r, n in zip(t.time, t.time_std, t.reached, t.seeds)])
    wide = wide.pivot(index="t_c", columns="Q", values="cell").reset_index()
    wide.columns = ["t_c (ms)"] + [f"Q = {q}" for q in wide.columns[1:]]
    return _markdown(art, f"**{art.label}** — simulated time (s) to target {tgt}, VQ b=3 (seeds reaching)\n\n"
                     + markdown_table(wide))


COST_PARTS = {
    "table2": "Table 2 — MIMIC-III, cost (MB) to F1 = 0.4",
    "table3": "Table 3 — CIFAR-10, cost (GB) to 70%",
    "table4": "Table 4 — ModelNet10, cost (MB) to 75%",
    "tabled1": "Table D.1 — MIMIC-III, cost (MB) to F1 = 0.4, Algorithm 1 (Q = 10, 25)",
    "tabled1_alg2": "Table D.1 — MIMIC-III, cost (MB) to F1 = 0.4, Algorithm 2 (Q = 1)",
    "fig4": "Fig. 4 — ModelNet10, MB per epoch (spec [D])",
    "fig4_axis": "Fig. 4 — ModelNet10, x-axis span (MB): 100 epochs at b = 2",
    "table5_time": "Table 5 — MIMIC-III VQ b = 3, time (s) to F1 = 0.45: rounds x (10 Q + t_c) ms",
    "table5_std": "Table 5 — its stds (s): one round-count std per Q",
    "table5_speedup": "Table 5 — speed-up over Q = 1 (spec [D])",
}


def _num(x, nd=None) -> str:
    if not np.isfinite(x):
        return ""
    return f"{x:.{nd}f}" if nd is not None else f"{x:.8g}"


def tablecost(art):
    """The cost check: the run `cost_formula` (rows of `fedrepro.cvfl.costcheck.cost_check`: the formula at the
    spec's derived epochs beside every printed cost and time), one Markdown table per part."""
    rows = shown_runs(art).reset_index(drop=True)
    art.write_data(rows)
    within = (rows.formula - rows.paper).abs() <= rows.resolution + 1e-9 * rows.paper.abs()
    parts = [(f"**{art.label}** — the formula (or time model) at the spec's derived epochs vs the printed number; "
              f"{int(within.sum())} of {len(rows)} within the printed digits. "
              "'implied': the epochs (Table 5: rounds) the printed number implies; "
              "'whole runs': a whole number of them per run, averaged over the runs, fits the print rounding (§3.6).")]
    for part, g in rows.groupby("part", sort=False):
        ok = within[g.index]
        count_name = {"table5_time": "rounds (spec)", "table5_std": "round std (one per Q)"}.get(part, "epochs (spec)")
        shown = pd.DataFrame({
            "cell": g.label,
            "paper": [_num(v, int(d)) for v, d in zip(g.paper, g.decimals)],
            "formula": [_num(v, int(d) + 3) for v, d in zip(g.formula, g.decimals)],
            "rel. error": [f"{e:+.2e}" for e in g.rel_err],
            count_name: [_num(v) for v in g["derived"]],
            "implied": [_num(v) for v in g.implied],
            "runs": ["" if not np.isfinite(r) else str(int(r)) for r in g.runs],
            "whole runs": ["" if not np.isfinite(v) else ("yes" if v == 1 else "no") for v in g.on_grid],
            "printed digits": ["yes" if v else "no" for v in ok],
        })
        if part == "table5_speedup":
            shown.insert(3, "from the printed times", [_num(v, 4) for v in g.from_paper_times])
        shown = shown.loc[:, [c for c in shown.columns if (shown[c] != "").any()]]
        parts.append(f"### {COST_PARTS.get(part, part)}\n\nunit {g.unit.iloc[0]}; source: {g.source.iloc[0]}\n\n"
                     + markdown_table(shown))
    return _markdown(art, "\n\n".join(parts))


# ---- figures ---------------------------------------------------------------------------------------------
def _b2_budget(runs: pd.DataFrame):
    """The cost axis ends where the b = 2 runs end (§4 item 8)."""
    b2 = runs[runs.b == 2]
    return float(b2.bits_table.max()) if len(b2) else None


def _panel(ax, runs: pd.DataFrame, x: str, by: str, x_max_bits=None, title: str = "") -> pd.DataFrame:
    """One panel: seed-mean curves ± 1 std by epochs or by cost, coloured by compressor or by bit width."""
    c = cost_curves(runs, x_max_bits) if x == "cost" else curves(runs)
    for (comp, b), g in c.groupby(["compressor", "b"]):
        line_color = color(comp) if by == "compressor" else bits_color(b)
        xs = g[x if x == "cost" else "epoch"].to_numpy()
        ax.plot(xs, g["mean"], color=line_color, label=f"{label(comp)} (b={b})")
        ax.fill_between(xs, g["mean"] - g["std"], g["mean"] + g["std"], color=line_color, alpha=0.18, lw=0)
    ds = runs["dataset"].iloc[0]
    ax.set_xlabel("epochs" if x == "epoch" else f"communication cost ({UNITS[ds][0]}, paper formula)")
    ax.set_ylabel(METRIC[ds])
    ax.set_title(title)
    ax.legend()
    return c.assign(x_kind=x, panel=title)


def _figure(art, panels, ncols: int, summary: pd.DataFrame):
    """Draw the panels (runs, x, by, x_max_bits, title), write the curves + summary rows, save the figure."""
    import matplotlib.pyplot as plt

    apply_style()
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.3 * nrows), squeeze=False)
    data = [_panel(ax, *panel) for ax, panel in zip(axes.ravel(), panels)]
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.suptitle(art.label)
    data = pd.concat(data, ignore_index=True)
    art.write_data(pd.concat([data.assign(row="curve"), summary], ignore_index=True))
    art.save_figure(fig)
    return fig


def _one_dataset(art) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(all shown runs, Q = 10 Alg. 1 runs with M = 4, dataset) of an artifact drawn from one dataset."""
    runs = shown_runs(art)
    ds = runs["dataset"].iloc[0]
    main = main_runs(runs)
    return runs, main[(main.dataset == ds) & (main.M == 4)], ds


def _summary(art, runs, sub, ds) -> pd.DataFrame:
    return summary_table(sub, target(art, runs, ds)).assign(row="summary")


def fig3(art):
    """Figure 3: b = 2 on MIMIC-III, CIFAR-10 and ModelNet10, by epochs and by cost."""
    runs = shown_runs(art)
    main = main_runs(runs)
    panels, summaries = [], []
    for ds in ("mimic", "cifar10", "modelnet10"):
        s = main[(main.dataset == ds) & (main.M == 4) & (main.b.isin([2, 32]))]
        if len(s):
            panels += [(s, "epoch", "compressor", None, f"{DATASETS[ds]}: by epochs, b=2"),
                       (s, "cost", "compressor", _b2_budget(s), f"{DATASETS[ds]}: by cost, b=2")]
        if len(main[main.dataset == ds]):
            summaries.append(_summary(art, runs, s, ds))
    return _figure(art, panels, 2, pd.concat(summaries))


def fig4(art):
    """Figure 4: ModelNet10 vector quantization by cost, M = 4 and M = 12, b in {2, 3, 4, 32}."""
    runs = shown_runs(art)
    main = main_runs(runs)
    s = main[(main.dataset == "modelnet10") & (main.compressor.isin(["none", "vector"]))]
    panels = [(s[s.M == M], "cost", "b", _b2_budget(s[s.M == M]), f"ModelNet10 VQ, M = {M}") for M in (4, 12)]
    return _figure(art, panels, 2, _summary(art, runs, s, "modelnet10"))


def _by_epochs(art):
    """Figures D.1, D.4: by epochs, one panel per b in {2, 3, 4}, every compressor and no compression."""
    runs, s, ds = _one_dataset(art)
    panels = [(s[s.b.isin([b, 32])], "epoch", "compressor", None, f"b = {b}") for b in (2, 3, 4)]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def _by_cost_per_b(art):
    """Figures D.2, D.5: by cost, one panel per b in {2, 3, 4}."""
    runs, s, ds = _one_dataset(art)
    panels = [(s[s.b.isin([b, 32])], "cost", "compressor", _b2_budget(s), f"b = {b}") for b in (2, 3, 4)]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def _by_cost_per_compressor(art):
    """Figures D.3, D.6: by cost, one panel per compressor with b in {2, 3, 4, 32} (titles: parameter `panels`)."""
    runs, s, ds = _one_dataset(art)
    titles = art.params.get("panels") or {}
    panels = [(s[s.compressor.isin([c, "none"])], "cost", "b", _b2_budget(s), titles.get(c, label(c)))
              for c in ("scalar", "vector", "topk")]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def _three_panels(art):
    """Figures D.7, D.8: (a) b = 2 by epochs, (b) b = 2 by cost, (c) vector quantization by cost."""
    runs, s, ds = _one_dataset(art)
    b2 = s[s.b.isin([2, 32])]
    vq = s[s.compressor.isin(["vector", "none"])]
    panels = [(b2, "epoch", "compressor", None, "(a) b = 2, by epochs"),
              (b2, "cost", "compressor", _b2_budget(s), "(b) b = 2, by cost"),
              (vq, "cost", "b", _b2_budget(s), "(c) vector quantization, by cost")]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def figd1(art):
    """Figure D.1: MIMIC-III test F1 by epochs, panels b = 2, 3, 4."""
    return _by_epochs(art)


def figd2(art):
    """Figure D.2: MIMIC-III test F1 by cost, panels b = 2, 3, 4."""
    return _by_cost_per_b(art)


def figd3(art):
    """Figure D.3: MIMIC-III test F1 by cost, panels scalar, vector, top-k."""
    return _by_cost_per_compressor(art)


def figd4(art):
    """Figure D.4: ModelNet10 test accuracy by epochs, panels b = 2, 3, 4."""
    return _by_epochs(art)


def figd5(art):
    """Figure D.5: ModelNet10 test accuracy by cost, panels b = 2, 3, 4."""
    return _by_cost_per_b(art)


def figd6(art):
    """Figure D.6: ModelNet10 test accuracy by cost, panels scalar, vector, top-k."""
    return _by_cost_per_compressor(art)


def figd7(art):
    """Figure D.7: CIFAR-10, (a) by epochs and (b) by cost at b = 2, (c) vector quantization by cost."""
    return _three_panels(art)


def figd8(art):
    """Figure D.8: ImageNet-100 top-5 accuracy, panels as Figure D.7."""
    return _three_panels(art)
