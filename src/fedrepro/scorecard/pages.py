"""The scorecard pages: results/<scale>/claims.{csv,md} and the browsable results/<scale>/index.html."""

from __future__ import annotations

import html
import os
from pathlib import Path

import pandas as pd

from fedrepro.plotting.tables import markdown_table, markdown_to_html
from fedrepro.scorecard.evaluate import COLUMNS, VERDICTS

VERDICT_COLOURS = {"reproduced": "#1a7f37", "reproduced-qualitatively": "#9a6700", "not-reproduced": "#cf222e",
                   "not-comparable": "#57606a", "not-run": "#8c959f"}


def combine(files) -> pd.DataFrame:
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def verdict_counts(claims: pd.DataFrame) -> pd.DataFrame:
    counts = claims.groupby(["paper", "configuration", "verdict"]).size().unstack(fill_value=0)
    counts = counts.reindex(columns=[v for v in VERDICTS if v in counts.columns])
    counts.columns.name = None
    return counts.reset_index()


def claims_markdown(claims: pd.DataFrame, scale: str) -> str:
    out = [f"# Claims scorecard — scale `{scale}`", "",
           "Each row: one number or statement of a paper, our value, and the verdict "
           "(reproduced / reproduced-qualitatively / not-reproduced / not-comparable / not-run).", ""]
    if claims.empty:
        return "\n".join(out + ["No claims at this scale."]) + "\n"
    out += ["## Summary", "", markdown_table(verdict_counts(claims)), ""]
    for paper, sub in claims.groupby("paper", sort=False):
        out += [f"## {paper}", "", markdown_table(sub[["claim", "configuration", "paper_value", "our_value", "verdict",
                                                       "band", "data", "statement"]]), ""]
    return "\n".join(out)


def _rel(target: str | Path, start: Path) -> str:
    return os.path.relpath(target, start).replace(os.sep, "/")


def index_html(registry, scale: str, claims: pd.DataFrame, page: Path) -> str:
    """One page: every artifact with its thumbnail or table, caption, claims, notebook and sidecar links."""
    here = page.parent
    esc = html.escape
    parts = [f"<!doctype html><meta charset='utf-8'><title>fedrepro — {esc(scale)}</title>",
             "<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}"
             "img{max-width:100%;border:1px solid #ddd}.art{border-top:2px solid #444;margin-top:2em}"
             ".v{font-weight:600}</style>",
             f"<h1>fedrepro results — scale <code>{esc(scale)}</code></h1>",
             f"<p><a href='{_rel(here / 'claims.md', here)}'>claims.md</a> · "
             f"<a href='{_rel(here / 'claims.csv', here)}'>claims.csv</a></p>"]
    if not claims.empty:
        parts.append("<h2>Verdicts</h2>" + verdict_counts(claims).to_html(index=False))
    for paper, artifact, entry in registry.artifacts(scale=scale):
        files = registry.artifact_files(paper, artifact, scale)
        parts.append(f"<div class='art' id='{esc(paper)}-{esc(artifact)}'><h2>{esc(paper)} · {esc(entry['label'])}"
                     f" <small>(<code>{esc(paper)}_{esc(artifact)}</code>)</small></h2><p>{esc(entry['caption'])}</p>")
        if entry["kind"] == "figure" and Path(files["png"]).exists():
            parts.append(f"<a href='{_rel(files['pdf'], here)}'><img src='{_rel(files['png'], here)}'></a>")
        elif entry["kind"] == "table" and Path(files["md"]).exists():
            parts.append(markdown_to_html(Path(files["md"]).read_text()))
        links = [f"<a href='{_rel(files[k], here)}'>{k}</a>" for k in files if Path(files[k]).exists()]
        links += [f"<a href='{_rel(files[k] + '.prov.json', here)}'>{k} provenance</a>"
                  for k in ("csv",) if Path(files[k] + ".prov.json").exists()]
        parts.append("<p>" + " · ".join(links) + "</p>")
        sub = claims[(claims["paper"] == paper) & (claims["artifact"] == artifact)] if not claims.empty else claims
        if not sub.empty:
            rows = "".join(
                f"<tr><td>{esc(r.claim)}</td><td>{esc(r.configuration)}</td><td>{esc(r.paper_value)}</td>"
                f"<td>{esc(r.our_value)}</td><td class='v' style='color:{VERDICT_COLOURS.get(r.verdict, '#000')}'>"
                f"{esc(r.verdict)}</td><td>{esc(r.data)}</td></tr>" for r in sub.itertuples())
            parts.append("<details><summary>claims ("
                         + ", ".join(f"{n} {v}" for v, n in sub["verdict"].value_counts().items())
                         + ")</summary><table><tr><th>claim</th><th>configuration</th><th>paper</th><th>ours</th>"
                         f"<th>verdict</th><th>data</th></tr>{rows}</table></details>")
        parts.append("</div>")
    return "\n".join(parts) + "\n"
