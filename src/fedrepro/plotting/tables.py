"""Markdown tables for artifacts and the scorecard, and a small pipe-table to HTML converter."""

from __future__ import annotations

import html
import re

import pandas as pd


def _cell(v, floatfmt: str) -> str:
    if isinstance(v, float):
        return format(v, floatfmt) if v == v else "–"
    return str(v).replace("|", "\\|")


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".2f") -> str:
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, floatfmt) for v in row) + " |")
    return "\n".join(lines)


def markdown_to_html(text: str) -> str:
    """Pipe tables become <table>, '#' lines headings, other lines paragraphs (enough for our artifacts)."""
    out, table = [], []

    def inline(text: str) -> str:
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))

    def flush():
        if table:
            head, body = table[0], [r for r in table[2:]]
            out.append("<table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table>")
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            table.append([c.strip().replace("\\|", "|") for c in line.strip().strip("|").split(" | ")])
            continue
        flush()
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")) + 2, 6)
            out.append(f"<h{level}>{inline(line.lstrip('#').strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    return "\n".join(out)
