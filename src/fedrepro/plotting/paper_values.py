"""The paper's number for a cell of one of our tables, and numbers printed the way the paper prints them.

The registry holds every printed number once, in the artifact's claims: a `cells` claim's `paper_table` (rows of
key values then column values) or a `value` claim's `paper_value` (its `where` selects the rows it applies to).
A table shows that number beside ours, so the two can never disagree.
"""

from __future__ import annotations

import math

import pandas as pd


def paper_value(claims: list[dict], row: dict, column: str) -> float | None:
    """The paper's value of `column` in the table row `row` (a dict with the claim's key columns), or None."""
    for claim in claims:
        if claim["kind"] == "cells" and column in claim["columns"] and all(k in row for k in claim["keys"]):
            n = len(claim["keys"])
            j = n + claim["columns"].index(column)
            for printed in claim["paper_table"]:
                if all(math.isclose(float(row[k]), float(v)) for k, v in zip(claim["keys"], printed[:n])):
                    return float(printed[j])
        elif claim["kind"] == "value" and claim.get("column") == column and _is_number(claim.get("paper_value")):
            where = claim.get("where")
            try:
                applies = not where or len(pd.DataFrame([row]).query(where)) == 1
            except (KeyError, NameError, pd.errors.UndefinedVariableError):
                applies = False
            if applies:
                return float(claim["paper_value"])
    return None


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def number(x: float, digits: int) -> str:
    """`x` with the paper's `digits` decimals; a nonzero value those digits would print as zero gets two
    significant digits instead (3e-4 GB is '0.00030', never '0.00')."""
    if x is None or not math.isfinite(x):
        return "–"
    if x != 0 and round(x, digits) == 0:
        return f"{x:.2g}"
    return f"{x:.{digits}f}"


def column_digits(values, digits: int, most: int = 6) -> int:
    """The decimals for a column of our numbers: the paper's, or more where a nonzero value would show fewer than
    two significant digits (stand-in runs can be a thousand times cheaper than the paper's)."""
    need = [math.ceil(-math.log10(abs(v))) + 1 for v in values if v is not None and math.isfinite(v) and v != 0]
    return min(max([digits, *need]), most)


def mean_std(mean: float, std: float, n: int, digits: int, unit: str = "") -> str:
    """'mean ± std' (population std over n runs); one run has no spread, so it shows the mean alone."""
    if mean is None or not math.isfinite(mean):
        return "–"
    if n <= 1 or std is None or not math.isfinite(std):
        return number(mean, digits) + unit
    return f"{number(mean, digits)}{unit} ± {number(std, digits)}{unit}"


def beside(ours: str, paper: float | str | None, digits: int = 2, unit: str = "") -> str:
    """Our cell with the paper's number beside it: '82.0 ± 0.2 (paper 87.3)'; '(paper –)' where it prints none."""
    if paper is None:
        return f"{ours} (paper –)"
    shown = paper if isinstance(paper, str) else number(paper, digits) + unit
    return f"{ours} (paper {shown})"


def runs_text(counts) -> str:
    """How many runs are behind each mean: 'mean ± std over 3 runs', 'one run (no std)', or the range."""
    counts = sorted({int(c) for c in counts})
    if counts == [1]:
        return "one run per cell (no std)"
    if len(counts) == 1:
        return f"mean ± std over {counts[0]} runs"
    return f"mean ± std over {counts[0]}–{counts[-1]} runs (a cell from one run shows no std)"


def stand_in_line(status: dict) -> str:
    """The plain-text stand-in mark of a table (Markdown bold would show its asterisks on the index page)."""
    names = ", ".join(sorted(k for k, v in status.items() if v == "stand-in"))
    return f"STAND-IN DATA ({names}): not comparable with the paper's numbers."
