"""Judge an artifact's claims against the numbers it shows (its ``<artifact>.csv``).

Verdicts:
  reproduced                 within the claim's band at this scale (or the predicate holds)
  reproduced-qualitatively   outside the band, but the claim's ``qualitative`` check holds
  not-reproduced             neither
  not-comparable             stand-in data, or a scale where the claim has no band
  not-run                    the number could not be computed (row missing, data unavailable)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

VERDICTS = ("reproduced", "reproduced-qualitatively", "not-reproduced", "not-comparable", "not-run")
COLUMNS = ["paper", "claim", "artifact", "statement", "paper_value", "our_value", "verdict", "configuration",
           "data", "scale", "band", "detail"]


def _fmt(x) -> str:
    if isinstance(x, (float, np.floating)):
        return "nan" if math.isnan(x) else f"{x:.4g}"
    return str(x)


def _band_text(band: dict | None) -> str:
    if band is None:
        return ""
    parts = [f"±{band['rel']:.0%}" if "rel" in band else "", f"±{band['abs']:g}" if "abs" in band else ""]
    return " or ".join(p for p in parts if p) or "holds"


def within(ours: float, paper: float, band: dict) -> bool:
    diff = abs(ours - paper)
    ok_rel = "rel" in band and diff <= band["rel"] * abs(paper)
    ok_abs = "abs" in band and diff <= band["abs"]
    return ok_rel or ok_abs


def _select(frame: pd.DataFrame, keys: list[str], values) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for k, v in zip(keys, values):
        mask &= np.isclose(frame[k].astype(float).to_numpy(), float(v))
    return frame[mask]


def _ordered(values, by, sign: int) -> bool:
    order = np.argsort(np.asarray(by, dtype=float), kind="stable")
    steps = np.diff(np.asarray(values, dtype=float)[order])
    return bool(np.all(sign * steps > 0))


# What a claim's `expr`, `ours` and `qualitative` expressions may use besides the artifact's columns.
EXPR_HELPERS = {
    "np": np, "abs": np.abs, "all": np.all, "any": np.any, "min": np.min, "max": np.max, "mean": np.mean,
    "len": len, "sum": sum, "float": float, "int": int, "bool": bool, "round": round, "zip": zip,
    "sorted": sorted, "list": list, "range": range,
    "increasing": lambda values, by: _ordered(values, by, +1),   # strictly increasing when sorted by `by`
    "decreasing": lambda values, by: _ordered(values, by, -1),
}


def _evaluate(frame: pd.DataFrame, expr: str):
    """Evaluate a registry expression with the selected rows' columns as numpy arrays (trusted config)."""
    names = {str(c): frame[c].to_numpy() for c in frame.columns}
    return eval(expr, {"__builtins__": {}}, {**EXPR_HELPERS, **names})  # noqa: S307


def _holds(frame: pd.DataFrame, expr: str) -> tuple[bool, str]:
    result = np.asarray(_evaluate(frame, expr), dtype=bool)
    if result.ndim == 0:
        return bool(result), ""
    return bool(result.all()), f"{int(result.sum())}/{result.size} rows hold"


def _claim_rows(claim: dict, data: pd.DataFrame, scale: str):
    """Yield (claim id, paper value, our value, verdict-before-data-status, detail) for one configuration."""
    band = claim["tolerance"].get(scale)
    kind = claim["kind"]
    if kind == "cells":
        keys, cols = claim["keys"], claim["columns"]
        for row in claim["paper_table"]:
            key_vals, paper_vals = row[: len(keys)], row[len(keys):]
            label = ",".join(f"{k}={v:g}" for k, v in zip(keys, key_vals))
            sel = _select(data, keys, key_vals)
            for col, paper in zip(cols, paper_vals):
                cid = f"{claim['id']}[{label},{col}]"
                if sel.empty or col not in sel:
                    yield cid, paper, float("nan"), "not-run", "no such row in the artifact's data"
                    continue
                ours = float(sel[col].mean())
                if band is None:
                    yield cid, paper, ours, "not-comparable", f"no band at scale {scale}"
                else:
                    verdict = "reproduced" if within(ours, paper, band) else "not-reproduced"
                    yield cid, paper, ours, verdict, f"ratio {ours / paper:.3g}" if paper else ""
    elif kind == "value":
        sel = data.query(claim["where"]) if claim.get("where") else data
        paper = claim["paper_value"]
        if sel.empty or claim["column"] not in sel:
            yield claim["id"], paper, float("nan"), "not-run", "no such row in the artifact's data"
            return
        ours = float(sel[claim["column"]].mean())
        if band is None:
            yield claim["id"], paper, ours, "not-comparable", f"no band at scale {scale}"
            return
        if isinstance(paper, str):
            raise ValueError(f"claim {claim['id']}: paper_value must be a number for kind 'value'")
        if within(ours, paper, band):
            yield claim["id"], paper, ours, "reproduced", ""
        elif claim.get("qualitative") and _holds(sel, claim["qualitative"])[0]:
            yield claim["id"], paper, ours, "reproduced-qualitatively", f"qualitative check holds: {claim['qualitative']}"
        else:
            yield claim["id"], paper, ours, "not-reproduced", ""
    else:  # predicate
        sel = data.query(claim["where"]) if claim.get("where") else data
        if sel.empty:
            yield claim["id"], claim.get("paper_value", "holds"), "", "not-run", "no rows selected"
            return
        ok, detail = _holds(sel, claim["expr"])
        ours = "; ".join(_fmt(v) for v in np.atleast_1d(_evaluate(sel, claim["ours"]))) if claim.get("ours") else ("holds" if ok else "fails")
        if band is None:
            yield claim["id"], claim.get("paper_value", "holds"), ours, "not-comparable", f"no band at scale {scale}; {detail}"
        elif ok:
            yield claim["id"], claim.get("paper_value", "holds"), ours, "reproduced", detail
        elif claim.get("qualitative") and _holds(sel, claim["qualitative"])[0]:
            yield claim["id"], claim.get("paper_value", "holds"), ours, "reproduced-qualitatively", detail
        else:
            yield claim["id"], claim.get("paper_value", "holds"), ours, "not-reproduced", detail


def evaluate_claims(claims: list[dict], data: pd.DataFrame | None, *, paper: str, artifact: str, scale: str,
                    data_status: dict | None) -> pd.DataFrame:
    """Scorecard rows of one artifact.  `data` is the artifact's CSV (None when it was not built)."""
    stand_in = any(v == "stand-in" for v in (data_status or {}).values())
    data_label = "stand-in" if stand_in else "real"
    rows = []
    for claim in claims:
        if data is None:
            rows.append([paper, claim["id"], artifact, claim["statement"], claim.get("paper_value", ""), "", "not-run",
                         "", data_label, scale, _band_text(claim["tolerance"].get(scale)), "artifact not built"])
            continue
        if "configuration" in data:
            configs = claim.get("configurations") or list(dict.fromkeys(data["configuration"]))
        else:
            configs = [None]
        for config in configs:
            sub = data if config is None else data[data["configuration"] == config]
            for cid, paper_value, ours, verdict, detail in _claim_rows(claim, sub, scale):
                if stand_in and verdict != "not-run":
                    verdict, detail = "not-comparable", "stand-in data; " + detail
                rows.append([paper, cid, artifact, claim["statement"], _fmt(paper_value), _fmt(ours), verdict,
                             config or "", data_label, scale, _band_text(claim["tolerance"].get(scale)), detail])
    return pd.DataFrame(rows, columns=COLUMNS)


def unbuilt_artifact_rows(registry, scale: str) -> pd.DataFrame:
    """`not-run` rows for the claims of artifacts that this scale does not build (e.g. paper-only ones),
    so the scorecard lists every claim of every registry at every scale."""
    rows = []
    for paper, reg in registry.papers.items():
        for artifact, entry in reg["artifacts"].items():
            if scale in entry["scales"]:
                continue
            for claim in registry.claims(paper, artifact):
                rows.append([paper, claim["id"], artifact, claim["statement"], _fmt(claim.get("paper_value", "")), "",
                             "not-run", "", "", scale, _band_text(claim["tolerance"].get(scale)),
                             f"artifact built only at scale(s) {', '.join(entry['scales'])}"])
    return pd.DataFrame(rows, columns=COLUMNS)
