"""Every C-VFL artifact (Tables 2-5, D.1, the cost check; Figures 3, 4, D.1-D.8): one function per artifact.

Each function takes a `fedrepro.artifact.Artifact`, writes its outputs (the data CSV the claims read, and the
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
from fedrepro.plotting.paper_values import (
    column_digits,
    mean_std,
    paper_value,
    stand_in_line,
)

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


def _row_name(compressor, b) -> str:
    return f"{label(compressor)} b={b}"


def _markdown(art, text: str):
    from IPython.display import Markdown

    art.write_markdown(text)
    return Markdown(text)


# ---- tables ----------------------------------------------------------------------------------------------
# The paper's tables print means ± population stds over 5 runs; ours over the seeds run (n), the cost to target
# over the seeds that reached it (shown as reached/n; '–' only where none did). Decimals: the artifact's
# `decimals` parameter, as the paper prints them.

def _sizes(art, experiment: str) -> str:
    """What one experiment ran, from its run parameters (never typed by hand)."""
    p = art.run_params(experiment)
    ds = DATASETS[p["dataset"]]
    if "runs" in p:      # the Q experiments: one line per (Q, algorithm)
        qs = sorted({(int(r["Q"]), int(r["alg"]), int(r["epochs"])) for r in p["runs"]})
        return f"{ds}, M = {p['M']}, B = {p['B']}, " + ", ".join(
            f"Q = {q} (Alg. {a}) {e} epochs" for q, a, e in qs) + f", {_seeds(p)}"
    return f"{ds}, M = {p['M']}, Q = {p['Q']}, B = {p['B']}, {p['epochs']} epochs, {_seeds(p)}"


def _seeds(p: dict) -> str:
    n = int(p["n_seeds"])
    return f"{n} seed" + ("s" if n != 1 else "")


def _target_text(art, ds: str, tgt: float) -> str:
    metric = "F1" if ds == "mimic" else ("top-5 accuracy" if ds == "imagenet100" else "accuracy")
    pct = "" if ds == "mimic" else "%"
    paper = (art.params.get("targets") or {}).get(ds)
    fraction = (art.params.get("target_fraction") or {}).get(art.scale)
    how = f" ({fraction:g} × no compression's max, A-22)" if fraction is not None else ""
    return (f"target {metric} = {tgt:g}{pct}{how}"
            + (f"; the paper's: {paper:g}{pct}" if paper is not None and fraction is not None else ""))


def _head(art, experiments, ds: str, tgt: float) -> str:
    lines = [f"{art.label}: {art.caption}", "",
             f"Ours ({art.scale} scale): " + "; ".join(_sizes(art, e) for e in experiments)
             + f"; {_target_text(art, ds, tgt)}."]
    if art.stand_in:
        lines += ["", stand_in_line(art.data_status)]
    return "\n".join(lines) + "\n\n"


def _reached(mean, std, reached: int, seeds: int, digits: int) -> str:
    """A cost or time over the seeds that reached the target, with how many did: '233.1 ± 28.7 (2/2)'."""
    if reached == 0:
        return f"– (0/{seeds})"
    return f"{mean_std(mean, std, reached, digits)} ({reached}/{seeds})"


STD_COLUMN = {"max_metric": "max_std"}     # the std beside each mean column of the tables' data


def _paper(art, row: dict, column: str, digits: int, unit: str = "") -> str:
    """The paper's printed 'mean ± std' of `column` for a table row ('–' where the paper prints none)."""
    claims = art.claims()
    mean = paper_value(claims, row, column)
    std = paper_value(claims, row, STD_COLUMN.get(column, column + "_std"))
    if mean is None:
        return "–"
    return mean_std(mean, std, 5 if std is not None else 1, digits, unit)


def _ordered(t: pd.DataFrame) -> pd.DataFrame:
    """The paper's row order: no compression, then b = 2, 3, 4, each scalar, vector, top-k."""
    return t.assign(_o=(t.b != 32).astype(int)).sort_values(["_o", "b", "comp_id"]).drop(columns="_o")


def _compressor_table(art):
    """Tables 2-4: max metric and cost to target per compressor and b (Q = 10, M = 4), the paper's beside ours."""
    runs = shown_runs(art)
    ds = runs["dataset"].iloc[0]
    sub = main_runs(runs)
    sub = sub[(sub.dataset == ds) & (sub.M == 4)]
    tgt = target(art, runs, ds)
    t = summary_table(sub, tgt)
    art.write_data(t)
    digits = art.params["decimals"]
    cost_digits = column_digits(t.cost_reached_mean, digits["cost"])
    unit, pct = UNITS[ds][0], ("" if ds == "mimic" else "%")
    metric = "Max F1" if ds == "mimic" else "Max accuracy"
    rows = []
    for r in _ordered(t).itertuples():
        key = {"comp_id": r.comp_id, "b": r.b}
        rows.append({
            "Compressor": _row_name(r.compressor, r.b),
            f"{metric}, ours": mean_std(r.max_metric, r.max_std, r.seeds, digits["metric"], pct),
            f"{metric}, paper": _paper(art, key, "max_metric", digits["metric"], pct),
            f"Cost ({unit}) to target, ours (seeds reaching)": _reached(r.cost_reached_mean, r.cost_reached_std,
                                                                        r.reached, r.seeds, cost_digits),
            f"Cost ({unit}) to target, paper": _paper(art, key, "cost", digits["cost"]),
        })
    return _markdown(art, _head(art, art.experiments, ds, tgt) + markdown_table(pd.DataFrame(rows)))


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
    """Table D.1 as the paper prints it: no compression and VQ b = 3 as rows, Q = 1 (Alg. 2), 10, 25 as columns."""
    runs = shown_runs(art)
    sub = runs[(runs.dataset == "mimic") & (runs.compressor.isin(["none", "vector"])) & (runs.b.isin([32, 3]))]
    sub = _q_columns(sub)
    tgt = target(art, runs, "mimic")
    t = summary_table(sub, tgt)
    art.write_data(t)
    paper_digits = art.params["decimals"]["cost"]
    digits = column_digits(t.cost_reached_mean, paper_digits)
    rows = []
    for (comp_id, b), g in _ordered(t).groupby(["comp_id", "b"], sort=False):
        row = {"Compressor": _row_name(g.compressor.iloc[0], b)}
        for r in g.sort_values("Q").itertuples():
            q = f"Q = {r.Q}" + (" (Alg. 2)" if r.alg == 2 else "")
            row[f"{q}, ours"] = _reached(r.cost_reached_mean, r.cost_reached_std, r.reached, r.seeds, digits)
            row[f"{q}, paper"] = _paper(art, {"comp_id": comp_id, "b": b, "Q": r.Q}, "cost", paper_digits)
        rows.append(row)
    head = _head(art, art.experiments, "mimic", tgt) + "Cost (MB) to target (seeds reaching).\n\n"
    return _markdown(art, head + markdown_table(pd.DataFrame(rows)))


def table5(art):
    """Table 5 as the paper prints it: t_c as rows, Q = 1 (Alg. 2), 10, 25 as columns; simulated seconds."""
    runs = shown_runs(art)
    sub = _q_columns(runs[(runs.dataset == "mimic") & (runs.compressor == "vector") & (runs.b == 3)])
    tgt = target(art, runs, "mimic")
    t = time_table(sub, tgt)
    art.write_data(t)
    paper_digits = art.params["decimals"]["time"]
    digits = column_digits(t.time, paper_digits)
    rows = []
    for tc, g in t.groupby("t_c"):
        row = {"t_c (ms)": f"{tc:g}"}
        for r in g.sort_values("Q").itertuples():
            q = f"Q = {r.Q}" + (" (Alg. 2)" if r.alg == 2 else "")
            row[f"{q}, ours"] = _reached(r.time, r.time_std, r.reached, r.seeds, digits)
            row[f"{q}, paper"] = _paper(art, {"t_c": tc, "Q": r.Q}, "time", paper_digits)
        rows.append(row)
    head = (_head(art, art.experiments, "mimic", tgt)
            + "Simulated time (s) to target, VQ b = 3, t_comp = 10 ms per local iteration (seeds reaching).\n\n")
    return _markdown(art, head + markdown_table(pd.DataFrame(rows)))


COST_PARTS = {
    "table2": "Table 2 — MIMIC-III, cost (MB) to F1 = 0.4",
    "table3": "Table 3 — CIFAR-10, cost (GB) to 70%",
    "table4": "Table 4 — ModelNet10, cost (MB) to 75%",
    "tabled1": "Table D.1 — MIMIC-III, cost (MB) to F1 = 0.4, Algorithm 1 (Q = 10, 25)",
    "tabled1_alg2": "Table D.1 — MIMIC-III, cost (MB) to F1 = 0.4, Algorithm 2 (Q = 1)",
    "fig4": "Fig. 4 — ModelNet10, MB per epoch (derived [D])",
    "fig4_axis": "Fig. 4 — ModelNet10, x-axis span (MB): 100 epochs at b = 2",
    "table5_time": "Table 5 — MIMIC-III VQ b = 3, time (s) to F1 = 0.45: rounds x (10 Q + t_c) ms",
    "table5_std": "Table 5 — its stds (s): one round-count std per Q",
    "table5_speedup": "Table 5 — speed-up over Q = 1 (derived [D])",
}


def _num(x, nd=None) -> str:
    if not np.isfinite(x):
        return ""
    return f"{x:.{nd}f}" if nd is not None else f"{x:.8g}"


def tablecost(art):
    """The cost check: the run `cost_formula` (rows of `fedrepro.cvfl.costcheck.cost_check`: the formula at the
    derived epochs beside every printed cost and time), one Markdown table per part."""
    rows = shown_runs(art).reset_index(drop=True)
    art.write_data(rows)
    within = (rows.formula - rows.paper).abs() <= rows.resolution + 1e-9 * rows.paper.abs()
    parts = [(f"**{art.label}** — the formula (or time model) at the derived epochs vs the printed number; "
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
    """One panel: seed-mean curves ± 1 std by epochs or by cost, coloured by compressor or by bit width.

    By cost, the axis ends at the b = 2 budget; a curve that runs past it (no compression: 16x the cost per
    epoch) is drawn to the edge and marked there, so every legend entry is visible."""
    c = cost_curves(runs, x_max_bits) if x == "cost" else curves(runs)
    x_max = float(c["x_max"].iloc[0]) if x == "cost" and "x_max" in c else None
    groups = list(c.groupby(["compressor", "b"]))
    if "comp_id" in runs:                  # legend in the registry's `methods:` order
        rank = runs.groupby("compressor").comp_id.first()
        groups.sort(key=lambda kv: (rank.get(kv[0][0], np.inf), kv[0][1]))
    for (comp, b), g in groups:
        line_color = color(comp) if by == "compressor" else bits_color(b)
        xs = g[x if x == "cost" else "epoch"].to_numpy()
        ax.plot(xs, g["mean"], color=line_color, label=f"{label(comp)} (b = {b})", marker="o", ms=2.5)
        ax.fill_between(xs, g["mean"] - g["std"], g["mean"] + g["std"], color=line_color, alpha=0.18, lw=0)
        if x_max is not None and xs.max() > x_max * (1 + 1e-9):     # leaves the axis: mark where
            ax.plot([x_max], [np.interp(x_max, xs, g["mean"])], marker=">", ms=6, color=line_color, clip_on=False)
    ds = runs["dataset"].iloc[0]
    if x == "cost":
        from matplotlib.ticker import MaxNLocator, ScalarFormatter

        ax.set_xlim(0, x_max)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        fmt = ScalarFormatter(useMathText=True)
        fmt.set_powerlimits((-2, 4))          # tiny stand-in costs get a ×10^k offset, not 0.000250.0005…
        ax.xaxis.set_major_formatter(fmt)
        ax.set_xlabel(f"communication cost ({UNITS[ds][0]})")
    else:
        ax.set_xlabel("epochs")
    ax.set_ylabel(METRIC[ds])
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)      # below the axes: never over the data
    return c.assign(x_kind=x, panel=title)


def _figure(art, panels, ncols: int, summary: pd.DataFrame, experiments=None):
    """Draw the panels (runs, x, by, x_max_bits, title), write the curves + summary rows, save the figure."""
    import matplotlib.pyplot as plt

    apply_style()
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.7 * nrows), squeeze=False)
    data = [_panel(ax, *panel) for ax, panel in zip(axes.ravel(), panels)]
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    sizes = "\n".join(_sizes(art, e) for e in (experiments or art.experiments))
    fig.suptitle(f"{art.label} ({art.scale} scale; mean ± 1 std over seeds)\n{sizes}")
    data = pd.concat(data, ignore_index=True)
    art.write_data(pd.concat([data.assign(row="curve"), summary], ignore_index=True))
    # each panel marked by the data of its own runs (Fig. 3: real CIFAR-10 beside stand-in MIMIC-III, ModelNet10)
    # (rows without an `experiment` column, as a runner's own output before the run rule: the artifact's experiments)
    every = set(experiments or art.experiments)
    art.save_figure(fig, panels={ax: set(panel[0]["experiment"]) if "experiment" in panel[0] else every
                                 for ax, panel in zip(axes.ravel(), panels)})
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
    for k, ds in enumerate(("mimic", "cifar10", "modelnet10")):      # the paper's (a)-(b), (c)-(d), (e)-(f)
        s = main[(main.dataset == ds) & (main.M == 4) & (main.b.isin([2, 32]))]
        if len(s):
            panels += [(s, "epoch", "compressor", None, f"({'ace'[k]}) {DATASETS[ds]}, by epochs"),
                       (s, "cost", "compressor", _b2_budget(s), f"({'bdf'[k]}) {DATASETS[ds]}, by cost")]
        if len(main[main.dataset == ds]):
            summaries.append(_summary(art, runs, s, ds))
    return _figure(art, panels, 2, pd.concat(summaries))


def fig4(art):
    """Figure 4: ModelNet10 vector quantization by cost, M = 4 and M = 12, b in {2, 3, 4, 32}."""
    runs = shown_runs(art)
    main = main_runs(runs)
    s = main[(main.dataset == "modelnet10") & (main.compressor.isin(["none", "vector"]))]
    panels = [(s[s.M == M], "cost", "b", _b2_budget(s[s.M == M]), f"({'ab'[i]}) Parties M = {M}")
              for i, M in enumerate((4, 12))]
    return _figure(art, panels, 2, _summary(art, runs, s, "modelnet10"))


def _by_epochs(art):
    """Figures D.1, D.4: by epochs, one panel per b in {2, 3, 4}, every compressor and no compression."""
    runs, s, ds = _one_dataset(art)
    panels = [(s[s.b.isin([b, 32])], "epoch", "compressor", None, f"({'abc'[i]}) {b} bits per parameter")
              for i, b in enumerate((2, 3, 4))]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def _by_cost_per_b(art):
    """Figures D.2, D.5: by cost, one panel per b in {2, 3, 4}."""
    runs, s, ds = _one_dataset(art)
    panels = [(s[s.b.isin([b, 32])], "cost", "compressor", _b2_budget(s), f"({'abc'[i]}) {b} bits per parameter")
              for i, b in enumerate((2, 3, 4))]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def _by_cost_per_compressor(art):
    """Figures D.3, D.6: by cost, one panel per compressor (every method run below 32 bits, in the registry's order)
    with b in {2, 3, 4, 32} (titles: parameter `panels`, else the label)."""
    runs, s, ds = _one_dataset(art)
    titles = art.params.get("panels") or {}
    compressed = s[s.b != 32].sort_values("comp_id").compressor.unique()
    panels = [(s[s.compressor.isin([c, "none"])], "cost", "b", _b2_budget(s), titles.get(c, label(c)))
              for c in compressed]
    return _figure(art, panels, 3, _summary(art, runs, s, ds))


def _three_panels(art):
    """Figures D.7, D.8: (a) b = 2 by epochs, (b) b = 2 by cost, (c) vector quantization by cost."""
    runs, s, ds = _one_dataset(art)
    b2 = s[s.b.isin([2, 32])]
    vq = s[s.compressor.isin(["vector", "none"])]
    panels = [(b2, "epoch", "compressor", None, "(a) Plotted by epochs (b = 2)"),
              (b2, "cost", "compressor", _b2_budget(s), "(b) Plotted by cost (b = 2)"),
              (vq, "cost", "b", _b2_budget(s), "(c) Vector quantization")]
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
