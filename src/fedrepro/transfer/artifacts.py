"""Thesis Table 5.1 (§5.5): Phase 1, Phase 2 and Scratch against the in-out mixture ratio, as an artifact.

`table5_1(art)` summarizes every configuration that ran (mean and sd over runs of the configuration's reported
metric), puts the paper's values (claim C5.1's `paper_table` in the registry) beside ours, writes the artifact's
CSV and Markdown and returns the Markdown of the configuration shown (then the others).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.plotting import markdown_table
from fedrepro.transfer.table5_1 import METHODS, summarize

TITLES = dict(zip(METHODS, ("Phase 1", "Phase 2", "Scratch")))


def paper_table(art) -> pd.DataFrame:
    """The thesis' 20 rows x 3 methods, from the registry's cells claim of the artifact."""
    cells = next(c for c in art.claims() if c["kind"] == "cells")
    return pd.DataFrame(cells["paper_table"], columns=cells["keys"] + [f"paper_{m}" for m in METHODS])


def table_frame(art) -> pd.DataFrame:
    """One row per (configuration, n1, n2, dB): our mean and sd per method, the metric, runs, the paper's values."""
    tables = []
    for name in art.configurations:
        metric = art.run_params(configuration=name)["metric"]
        runs = art.runs[(art.runs["configuration"] == name) & (art.runs["metric"] == metric)]
        summary = summarize(runs, metric)
        summary.insert(0, "configuration", name)
        summary["metric"] = metric
        # runs behind each mean, counted (the fewest over the row's three methods)
        counts = runs.groupby(["n1", "n2", "db", "method"])["seed"].nunique().groupby(["n1", "n2", "db"]).min()
        summary["n_runs"] = [int(counts.loc[(a, b, c)]) for a, b, c in zip(summary.n1, summary.n2, summary.db)]
        tables.append(summary)
    table = pd.concat(tables, ignore_index=True)
    if art.scale != "smoke":  # smoke shrinks every n by 5, so its rows have no paper counterpart
        table = table.merge(paper_table(art), on=["n1", "n2", "db"], how="left")
    return table


def side_by_side(frame: pd.DataFrame) -> pd.DataFrame:
    """The rendered rows in the paper's orientation: sample configuration, dB, then per method 'ours ± sd (paper
    p)' (only 'ours ± sd' where the paper has no such row), and the runs behind each mean."""
    out = pd.DataFrame({"Sample configuration (n_T1, n_T2)": [f"({a}, {b})" for a, b in zip(frame.n1, frame.n2)],
                        "In-out ratio (dB)": frame.db.map(lambda v: f"{v:g}")})
    for m in METHODS:
        ours = [f"{v:.2f} ± {s:.2f}" for v, s in zip(frame[m], frame[f"{m}_sd"])]
        paper = frame[f"paper_{m}"] if f"paper_{m}" in frame else [np.nan] * len(frame)
        out[TITLES[m]] = [o if np.isnan(p) else f"{o} (paper {p:.2f})" for o, p in zip(ours, paper)]
    out["runs"] = frame.n_runs.astype(int).astype(str)
    return out


def table5_1(art):
    """Thesis Table 5.1: writes the CSV (every configuration) and the Markdown; returns the Markdown."""
    from IPython.display import Markdown

    table = table_frame(art)
    art.write_data(table)
    shown = art.shown
    p = art.run_params(configuration=shown)
    metric = table.loc[table.configuration == shown, "metric"].iloc[0]
    runs = sorted(set(table.n_runs.astype(int)))
    lines = [f"# {art.label} — configuration `{shown}`, scale `{art.scale}`", "",
             *(["**STAND-IN DATA**: the numbers test the pipeline, not the paper.", ""] if art.stand_in else []),
             f"Each cell: ours, mean ± sd over {' or '.join(map(str, runs))} runs (column `runs`)"
             + ("; the paper's value (mean over its 10 runs) in brackets" if "paper_phase1" in table
                else "; no paper value beside it: this scale's sample sizes are not the paper's")
             + f". Metric `{metric}`; d = {p['d']}, q = {p['q']}, {p['n_test']} test samples.", "",
             markdown_table(side_by_side(table[table.configuration == shown])), ""]
    for other in art.configurations:
        if other != shown:
            lines += [f"## Configuration `{other}`", "",
                      f"Metric `{table.loc[table.configuration == other, 'metric'].iloc[0]}`.", "",
                      markdown_table(side_by_side(table[table.configuration == other])), ""]
    text = "\n".join(lines)
    art.write_markdown(text)
    return Markdown(text)


def log_error_summary(art):
    """Per configuration: the summed squared log-error of our 60 cells against the paper's (smaller: closer)."""
    from IPython.display import Markdown

    table = pd.read_csv(art.outputs["csv"])
    if "paper_phase1" not in table:
        return Markdown("No paper values at this scale.")
    lines = []
    for name, sub in table.groupby("configuration", sort=False):
        err = np.concatenate([np.log(sub[m] / sub[f"paper_{m}"]) for m in METHODS])
        lines.append(f"- `{name}`: summed squared log-error over {err.size} cells = {np.sum(err ** 2):.2f}")
    return Markdown("\n".join(lines))
