"""results/<scale>/report_summary.rst: what `snakemake --report` opens with (workflow/report/workflow.rst includes it).

The verdict counts per paper and configuration as an rst table, one sentence per paper, the scale note and the
stand-in legend: the landing page's opening, in reStructuredText for the report's docutils renderer.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from fedrepro.scorecard.evaluate import VERDICTS
from fedrepro.scorecard.pages import (
    VERDICT_MEANING,
    _data_kinds,
    _datasets,
    _scale_facts,
    _used_text,
    artifact_order,
    not_real_datasets,
    paper_order,
    paper_summary,
    verdict_counts,
)

_RST_SPECIAL = re.compile(r"([\\`*_|\[\]])")


def rst_text(text) -> str:
    """Plain text safe in rst running text and table cells: markup characters escaped, one line."""
    return _RST_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def rst_list_table(header: list[str], rows: list[list]) -> list[str]:
    """A `list-table` (every cell escaped; an empty cell shows as a blank)."""
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        cells = [rst_text(c) or " " for c in row]
        out += [f"   * - {cells[0]}", *[f"     - {c}" for c in cells[1:]]]
    return out + [""]


def report_summary_rst(registry, scale: str, claims: pd.DataFrame, root: Path | None = None) -> str:
    """The report's opening for `scale` from the scorecard's rows (`claims`: the combined claims table)."""
    root = Path(root or registry.root)
    papers = [p for p in paper_order(registry) if any(True for _ in registry.artifacts(paper=p, scale=scale))]
    out = [f"**Verdicts at scale** ``{scale}`` (per paper and configuration; every row with its reason in "
           f"``results/{scale}/claims.md`` and on the landing page ``results/{scale}/index.html``):", ""]
    if claims.empty:
        out += ["No claims at this scale.", ""]
    else:
        counts = verdict_counts(claims, papers)
        verdicts = [c for c in counts.columns if c not in ("paper", "configuration")]
        out += rst_list_table(["paper", "configuration", *verdicts],
                              [[r["paper"], r["configuration"], *[r[v] for v in verdicts]]
                               for r in counts.to_dict("records")])
        out += [f"- {rst_text(paper_summary(p, claims)[0])}" for p in papers if (claims["paper"] == p).any()] + [""]
    out += ["Verdicts: " + "; ".join(f"*{v}*: {rst_text(VERDICT_MEANING[v])}" for v in VERDICTS) + ".", ""]

    facts = _scale_facts(root, scale)
    note = f"**Scale** ``{scale}``"
    if facts.get("description"):
        note += ": " + rst_text(facts["description"]).rstrip(".")
    if scale != "paper":
        note += (". This is not the papers' scale: runs use reduced sizes (fewer iterations, nodes, samples or "
                 "seeds; the landing page lists what this scale changes) and, where a dataset is not available here, "
                 "a synthetic stand-in; a claim is judged only where the run reaches the regime it needs. The "
                 "papers' own settings are ``--config scale=paper``.")
    out += [note, ""]

    order = {p: artifact_order(registry, p, scale) for p in papers}
    not_real = not_real_datasets(_data_kinds(registry, scale), papers, order)
    datasets = _datasets(root)
    out += ["**Stand-in data**: a figure or panel marked STAND-IN DATA was made from synthetic or substitute data "
            "because the real dataset is not available here (credentialed, too large, or not downloadable); the "
            "code path is the same, the numbers are not the paper's and its claims are not-comparable. A lighter "
            "RE-ENCODED JPEG mark means the real images through a lossy codec, judged like real data.", ""]
    if not_real:
        out += ["What this build used, per dataset that is not the real one:", ""]
        out += rst_list_table(
            ["dataset", "what it is", "what this build used", "artifacts"],
            [[d, (datasets.get(d) or {}).get("title", ""), _used_text(kind, datasets.get(d) or {}),
              ", ".join(f"{p} {registry.artifact(p, a)['label']}" for p, a in arts)]
             for (d, kind), arts in not_real.items()])
    else:
        out += ["Every artifact at this scale was made from the real datasets.", ""]
    return "\n".join(out)
