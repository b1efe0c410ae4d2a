"""Judge an artifact's claims against the numbers it shows (its ``<artifact>.csv``).

Verdicts:
  reproduced                 within the claim's band at this scale (or the predicate holds)
  consistent-fitted          within the band, but judged under a configuration with values read off this same
                             artifact (its experiment's `sources:` say `from: this-artifact`): a consistency check
  reproduced-qualitatively   outside the band, but the claim's ``qualitative`` check holds
  not-reproduced             neither
  not-comparable             stand-in data, a scale where the claim has no band, or a run below the claim's
                             declared `regime:` (e.g. a target accuracy at chance level)
Data kinds (the artifact sidecar's ``data`` map): real; real-reencoded (the real images through a lossy codec,
e.g. a JPEG copy of CIFAR-10: judged, the caveat leads the detail); stand-in (every verdict not-comparable).
  not-run                    the number could not be computed (row missing, data unavailable)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedrepro.scorecard.expressions import HELPERS as EXPR_HELPERS  # noqa: F401  (the former name)
from fedrepro.scorecard.expressions import ClaimExpressionError, claim_source, compile_expression, require_columns
from fedrepro.scorecard.reasons import fitted_reason, miss_reason, regime_shortfall

VERDICTS = ("reproduced", "consistent-fitted", "reproduced-qualitatively", "not-reproduced", "not-comparable",
            "not-run")
# `reason`: why a row is not `reproduced` in words a reader can follow (the claim's `miss:` cause and the link to the
# section that explains it, the regime not reached, the fitted values); `detail`: the mechanical evidence.
COLUMNS = ["paper", "claim", "artifact", "statement", "paper_value", "our_value", "verdict", "configuration",
           "data", "scale", "band", "detail", "reason"]
MISSES = ("not-reproduced", "reproduced-qualitatively")


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


def _evaluate(frame: pd.DataFrame, claim: dict, field: str, source: str):
    """A claim expression over the selected rows' columns (numpy arrays), checked against the allow-list."""
    expr = compile_expression(claim[field], field=field, claim=claim["id"], source=source)
    return expr.evaluate(frame, claim=claim["id"], source=source)


def _where(frame: pd.DataFrame, claim: dict, source: str, judged: bool = True) -> pd.DataFrame:
    """The rows a claim's `where` selects (the whole frame without one).

    Where the claim is judged (`judged`: it has a band at this scale), selecting none of the rows the artifact has
    is a registry error (a misspelt value, e.g. 'sumary'), named with the values the `where` reads, unless the
    claim says `may_be_empty: true`; no rows at all stays `not-run`.  At a scale without a band (smoke) the small
    configurations leave out rows the claim reads (e.g. adept's Inception FID), so an empty selection is `not-run`."""
    if not claim.get("where"):
        return frame
    expr = compile_expression(claim["where"], field="where", claim=claim["id"], source=source)
    sel = frame[expr.mask(frame, claim=claim["id"], source=source)]
    if sel.empty and len(frame) and judged and not claim.get("may_be_empty"):
        values = "; ".join(f"{c}: {', '.join(map(str, pd.unique(frame[c])[:8]))}" for c in frame.columns
                           if str(c) in expr.columns)
        raise ClaimExpressionError(f"selects none of the artifact's {len(frame)} rows (values there: {values}); fix "
                                   "the selection, or add `may_be_empty: true` to the claim if it may select nothing",
                                   claim=claim["id"], field="where", text=claim["where"], source=source)
    return sel


def _holds(frame: pd.DataFrame, claim: dict, field: str, source: str) -> tuple[bool, str]:
    """Whether the expression holds on every selected row, and a detail that names what failed."""
    result = np.asarray(_evaluate(frame, claim, field, source), dtype=bool)
    ok = bool(result.all())
    if ok:
        return True, "" if result.ndim == 0 else f"{int(result.sum())}/{result.size} rows hold"
    read = compile_expression(claim[field], field=field, claim=claim["id"], source=source).columns
    return False, failure_detail(frame, result, [c for c in frame.columns if str(c) in read])


# Row labels: columns that never identify a row (bookkeeping, spreads).
_NOT_KEYS = ("configuration",)
_MAX_SHOWN = 4      # failing rows named in a detail
_MAX_VALUES = 8     # values of one column shown for an aggregate that failed


def row_keys(frame: pd.DataFrame, exclude=()) -> list[str]:
    """The first columns (in the CSV's order, at most two) that tell the rows apart: what a reader calls a row.

    Artifact CSVs put their keys first (method, scheme, snr_db, ...); the values the claim reads, spreads
    (`*_std`, `*_sd`) and columns that tell no more rows apart than the keys already chosen (constants, n2 beside
    n1) are skipped."""
    keys: list[str] = []
    told_apart = 1
    key_codes = np.zeros(len(frame), dtype=np.int64)  # rows with equal codes agree on every chosen key
    for col in frame.columns:
        name = str(col)
        if name in _NOT_KEYS or col in exclude or name.endswith(("_std", "_sd")):
            continue
        # the number of distinct (keys..., col) rows, as frame.drop_duplicates(subset=[*keys, col]) counts them
        # (pandas factorizes each column for that too; NaN equals NaN), without building a frame per column
        codes = pd.factorize(frame[col], use_na_sentinel=False)[0].astype(np.int64)
        pairs, combined = np.unique(key_codes * (int(codes.max(initial=0)) + 1) + codes, return_inverse=True)
        distinct = len(pairs)
        if distinct <= told_apart:
            continue
        keys.append(col)
        told_apart = distinct
        key_codes = combined.astype(np.int64)
        if len(keys) == 2 or distinct == len(frame):
            break
    return keys


def _values(series: pd.Series) -> str:
    shown = ", ".join(_fmt(v) for v in series.iloc[:_MAX_VALUES])
    return f"[{shown}{', …' if len(series) > _MAX_VALUES else ''}]"


def failure_detail(frame: pd.DataFrame, result: np.ndarray, read: list[str]) -> str:
    """Name what failed: the failing rows (a row-wise expression) with the values the claim reads, or, for one
    verdict over all rows (an ordering, an aggregate), the values it was computed from."""
    keys = row_keys(frame, exclude=read)
    if result.ndim == 1 and result.size == len(frame) and len(frame):
        bad = frame[~result]
        items = []
        for _, row in bad.head(_MAX_SHOWN).iterrows():
            label = ", ".join(f"{k}={_fmt(row[k])}" for k in keys)
            values = ", ".join(f"{c}={_fmt(row[c])}" for c in read)
            items.append(f"{label}: {values}" if label else values)
        more = f"; +{len(bad) - _MAX_SHOWN} more" if len(bad) > _MAX_SHOWN else ""
        return f"fails at {len(bad)}/{len(frame)} rows: " + "; ".join(items) + more
    shown = [f"{c} = {_values(frame[c])}" for c in [*keys, *read]]
    return "fails on " + ("; ".join(shown) if shown else f"{len(frame)} rows")


def _off_by(ours: float, paper: float, band: dict) -> str:
    """The difference in the band's own terms: absolute for an `abs` band, relative for a `rel` band."""
    diff = ours - paper
    parts = [f"{diff:+.4g}"] if "abs" in band or not paper else []
    if "rel" in band and paper:
        parts.append(f"{diff / abs(paper):+.1%}")
    return "off by " + " = ".join(parts)


def _label(value, per: dict) -> str:
    """A row's label in the paper's terms: `per.labels` names it, else its value and `per.unit` ('6 dB')."""
    labels = {_fmt(k): v for k, v in (per.get("labels") or {}).items()}
    text = _fmt(value)
    return labels.get(text) or f"{text} {per.get('unit', '')}".strip()


def _number(v) -> str:
    """A value of a list: up to six digits, as the paper prints them (125.09, 3777.21)."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return "nan" if math.isnan(v) else f"{float(v):.6g}"
    return str(v)


def _labelled(pairs: list[tuple[str, str]]) -> str:
    return "; ".join(f"{label}: {value}" for label, value in pairs)


def _paper_labels(claim: dict) -> list[tuple[str, object]]:
    """(label, paper's value) in the paper's order; with `per.by` the paper's list repeats for each of `per.groups`
    (the same numbers for, e.g., both feedback models), each label led by its group."""
    paper, per = claim["paper_value"], claim.get("per")
    pairs = [(_label(k, per) if per else str(k), v) for k, v in paper.items()]
    if per and per.get("by"):
        return [(f"{g} {label}", v) for g in per["groups"] for label, v in pairs]
    return pairs


def paper_text(claim: dict) -> str:
    """The paper's value as shown: a mapping `paper_value` as 'label: value; ...' in the paper's order."""
    paper = claim.get("paper_value", "holds")
    if isinstance(paper, dict):
        text = _labelled([(label, _number(v)) for label, v in _paper_labels(claim)])
        return f"{text} ({claim['quantity']})" if claim.get("quantity") else text
    return _fmt(paper)


def _predicate_ours(sel: pd.DataFrame, claim: dict, source: str) -> str:
    """Our value of a predicate claim, keyed and ordered as the paper's (`per:` rows or an `ours:` mapping)."""
    ours, per, paper = claim.get("ours"), claim.get("per"), claim.get("paper_value")
    if isinstance(ours, dict):
        pairs = []
        for label, text in ours.items():
            value = _evaluate(sel, {**claim, "ours": text}, "ours", source)
            pairs.append((str(label), " / ".join(dict.fromkeys(_number(v) for v in np.atleast_1d(value)))))
    elif per:
        require_columns(sel, [per["column"]], claim=claim["id"], field="per.column", source=source)
        values = np.atleast_1d(_evaluate(sel, claim, "ours", source))
        if values.size != len(sel):
            raise ValueError(f"{source}: claim {claim['id']}: `ours` gives {values.size} values for {len(sel)} rows; "
                             f"with `per:` it must give one per row")
        groups = [f"{_fmt(g)} " for g in sel[per["by"]]] if per.get("by") else [""] * len(sel)
        found = {g + _label(k, per): _fmt(v) for g, k, v in zip(groups, sel[per["column"]], values)}
        if len(found) < len(sel):
            raise ValueError(f"{source}: claim {claim['id']}: `per: {per['column']}` labels {len(sel)} rows with only "
                             f"{len(found)} labels; name the column that tells them apart as `per.by`")
        order = [label for label, _ in _paper_labels(claim)] if isinstance(paper, dict) else list(found)
        pairs = [(label, found.get(label, "– (not in this run)")) for label in order]
        pairs += [(label, f"{v} (not in the paper)") for label, v in found.items() if label not in order]
    else:
        text = "; ".join(_fmt(v) for v in np.atleast_1d(_evaluate(sel, claim, "ours", source)))
        # labelled by what it is: the claim's `quantity`, else the expression it was computed by
        return f"{claim.get('quantity') or claim['ours']}: {text}"
    text = _labelled(pairs)
    return f"{text} ({claim['quantity']})" if claim.get("quantity") else text


def _claim_rows(claim: dict, data: pd.DataFrame, scale: str, source: str):
    """Yield (claim id, paper value, our value, verdict-before-data-status, detail, band) for one configuration.

    A column the artifact's data does not have is a registry error (named with close matches), never `not-run`;
    a claim that is deliberately not computed says so with `not_run: <why>`.  The band is shown in the terms of
    the comparison: '±10%' beside a relative difference; for a predicate, what was tested and whether it held.
    """
    band = claim["tolerance"].get(scale)
    band_text = _band_text(band)
    kind = claim["kind"]
    if claim.get("not_run"):
        # a number the paper reports that we do not compute (e.g. a method whose definition is unstated): the
        # claim says so and why, instead of naming a column the artifact does not have
        detail = f"not run here: {claim['not_run']}"
        if kind == "cells":
            for row in claim["paper_table"]:
                label = ",".join(f"{k}={v:g}" for k, v in zip(claim["keys"], row))
                for col, paper in zip(claim["columns"], row[len(claim["keys"]):]):
                    yield f"{claim['id']}[{label},{col}]", paper, float("nan"), "not-run", detail, band_text
        else:
            yield claim["id"], paper_text(claim), float("nan"), "not-run", detail, ""
        return
    if kind == "cells":
        keys, cols = claim["keys"], claim["columns"]
        require_columns(data, keys, claim=claim["id"], field="keys", source=source)
        require_columns(data, cols, claim=claim["id"], field="columns", source=source)
        for row in claim["paper_table"]:
            key_vals, paper_vals = row[: len(keys)], row[len(keys):]
            label = ",".join(f"{k}={v:g}" for k, v in zip(keys, key_vals))
            sel = _select(data, keys, key_vals)
            for col, paper in zip(cols, paper_vals):
                cid = f"{claim['id']}[{label},{col}]"
                if sel.empty:
                    yield cid, paper, float("nan"), "not-run", "no such row in the artifact's data", band_text
                    continue
                ours = float(sel[col].mean())
                if band is None:
                    yield cid, paper, ours, "not-comparable", f"no band at scale {scale}", band_text
                elif math.isnan(ours):
                    yield (cid, paper, ours, "not-reproduced",
                           f"our value is undefined (nan); the paper's is {_fmt(paper)}", band_text)
                else:
                    ok = within(ours, paper, band)
                    yield (cid, paper, ours, "reproduced" if ok else "not-reproduced",
                           f"{_off_by(ours, paper, band)}, {'within' if ok else 'outside'} {band_text}", band_text)
    elif kind == "value":
        require_columns(data, [claim["column"]], claim=claim["id"], field="column", source=source)
        sel = _where(data, claim, source, judged=band is not None)
        paper = claim["paper_value"]
        if sel.empty:
            yield claim["id"], paper, float("nan"), "not-run", "no such row in the artifact's data", band_text
            return
        ours = float(sel[claim["column"]].mean())
        if band is None:
            yield claim["id"], paper, ours, "not-comparable", f"no band at scale {scale}", band_text
            return
        if isinstance(paper, str):
            raise ValueError(f"claim {claim['id']}: paper_value must be a number for kind 'value'")
        rows = f" (mean over {len(sel)} rows)" if len(sel) > 1 else ""
        if math.isnan(ours):
            miss = f"our value is undefined (nan: not reached or not computed in this run); the paper's is {_fmt(paper)}"
        else:
            miss = (f"{_fmt(ours)}{rows} vs the paper's {_fmt(paper)}: {_off_by(ours, paper, band)}, "
                    f"outside {band_text}")
        if within(ours, paper, band):
            yield claim["id"], paper, ours, "reproduced", f"{_off_by(ours, paper, band)}, within {band_text}", band_text
        elif claim.get("qualitative"):
            ok, why = _holds(sel, claim, "qualitative", source)
            if ok:
                yield (claim["id"], paper, ours, "reproduced-qualitatively",
                       f"{miss}; qualitative check holds: {claim['qualitative']}", band_text)
            else:
                yield (claim["id"], paper, ours, "not-reproduced",
                       f"{miss}; qualitative check {claim['qualitative']} {why}", band_text)
        else:
            yield claim["id"], paper, ours, "not-reproduced", miss, band_text
    else:  # predicate
        sel = _where(data, claim, source, judged=band is not None)
        paper = paper_text(claim)
        tested = f"tested {claim['expr']}"
        if sel.empty:
            yield claim["id"], paper, "", "not-run", "no rows selected", f"{tested}: no rows"
            return
        ok, detail = _holds(sel, claim, "expr", source)
        ours = _predicate_ours(sel, claim, source) if claim.get("ours") else ("holds" if ok else "fails")
        held = f"{tested}: {'holds' if ok else 'fails'}"
        if band is None:
            yield claim["id"], paper, ours, "not-comparable", f"no band at scale {scale}; {detail}", held
        elif ok:
            yield claim["id"], paper, ours, "reproduced", detail, held
        elif claim.get("qualitative"):
            q_ok, q_detail = _holds(sel, claim, "qualitative", source)
            q_held = f"{held}; qualitative {claim['qualitative']}: {'holds' if q_ok else 'fails'}"
            if q_ok:
                yield claim["id"], paper, ours, "reproduced-qualitatively", f"{detail}; qualitative check holds", q_held
            else:
                yield claim["id"], paper, ours, "not-reproduced", f"{detail}; qualitative check {q_detail}", q_held
        else:
            yield claim["id"], paper, ours, "not-reproduced", detail, held


def artifact_configurations(registry, paper: str, artifact: str, scale: str | None = None) -> list[str]:
    """The configurations an artifact's runs are made under at `scale` (every scale it is built at: None)."""
    entry = registry.artifact(paper, artifact)
    scales = [scale] if scale else entry["scales"]
    return list(dict.fromkeys(c for s in scales for exp in entry["experiments"]
                              for c in registry.configurations(paper, exp, s)))


def _data_kind(claim: dict, data_status: dict | None, source: str) -> tuple[bool, str, str]:
    """(stand-in?, the data label, the caveat that leads each detail) of one claim.

    The artifact's data status maps each dataset it was made from to its kind; a claim that reads only some of them
    (`datasets:`, e.g. one panel of a figure over three datasets) is judged on those alone, so a stand-in beside them
    does not make it not-comparable."""
    status = dict(data_status or {})
    if claim.get("datasets"):
        unknown = sorted(set(claim["datasets"]) - set(status))
        if status and unknown:
            raise ValueError(f"{source}: claim {claim['id']}: datasets {unknown} are not among the artifact's inputs "
                             f"({', '.join(sorted(status))}); name those the claim reads")
        status = {k: v for k, v in status.items() if k in claim["datasets"]}
    stand_in = any(v == "stand-in" for v in status.values())
    reencoded = sorted(k for k, v in status.items() if v == "real-reencoded")
    data_label = "stand-in" if stand_in else "real-reencoded" if reencoded else "real"
    caveat = (f"re-encoded images ({', '.join(reencoded)}: the real images through a lossy JPEG codec, every pixel off "
              f"by the coding error); ") if reencoded else ""
    return stand_in, data_label, caveat


def evaluate_claims(claims: list[dict], data: pd.DataFrame | None, *, paper: str, artifact: str, scale: str,
                    data_status: dict | None, source: str | None = None,
                    configurations: list[str] | None = None, fitted: dict[str, str] | None = None) -> pd.DataFrame:
    """Scorecard rows of one artifact.  `data` is the artifact's CSV (None when it was not built).

    `source` names the registry file in error messages (default: config/papers/<paper>.yaml).
    `configurations` (see `artifact_configurations`) labels the rows of data without a `configuration` column,
    so that no row has a blank configuration.  `fitted` (`fedrepro.scorecard.reasons.fitted_configurations`):
    configuration -> the values it reads off this artifact; a row judged under one that would be `reproduced` is
    `consistent-fitted`.
    """
    source = source or claim_source(paper)
    label = ", ".join(configurations or []) or "(one)"
    fitted = fitted or {}
    rows = []
    for claim in claims:
        stand_in, data_label, caveat = _data_kind(claim, data_status, source)
        if data is None:
            rows.append([paper, claim["id"], artifact, claim["statement"], paper_text(claim), "", "not-run",
                         label, data_label, scale, _band_text(claim["tolerance"].get(scale)), "artifact not built",
                         "artifact not built"])
            continue
        if "configuration" in data:
            configs = claim.get("configurations") or list(dict.fromkeys(data["configuration"]))
        else:
            configs = [None]
        for config in configs:
            sub = data if config is None else data[data["configuration"] == config]
            row_config = config or label
            shortfall = regime_shortfall(claim, sub, source)
            for cid, paper_value, ours, verdict, detail, band in _claim_rows(claim, sub, scale, source):
                reason = ""
                if stand_in and verdict != "not-run":
                    verdict, detail = "not-comparable", "stand-in data; " + detail
                    reason = "stand-in data: the real dataset is not available here"
                elif verdict == "not-comparable":
                    reason = detail
                elif shortfall and verdict != "not-run":
                    verdict, reason = "not-comparable", shortfall
                elif verdict == "reproduced" and fitted_reason(fitted, row_config):
                    verdict, reason = "consistent-fitted", fitted_reason(fitted, row_config)
                elif verdict in MISSES:
                    reason = miss_reason(claim, row_config)
                elif verdict == "not-run":
                    reason = detail
                if caveat and verdict != "not-run" and not stand_in:
                    detail = caveat + detail
                rows.append([paper, cid, artifact, claim["statement"], _fmt(paper_value), _fmt(ours), verdict,
                             row_config, data_label, scale, band, detail, reason])
    return pd.DataFrame(rows, columns=COLUMNS)


def unbuilt_artifact_rows(registry, scale: str) -> pd.DataFrame:
    """`not-run` rows for the claims of artifacts that this scale does not build (e.g. paper-only ones),
    so the scorecard lists every claim of every registry at every scale."""
    rows = []
    for paper, reg in registry.papers.items():
        for artifact, entry in reg["artifacts"].items():
            if scale in entry["scales"]:
                continue
            configs = ", ".join(artifact_configurations(registry, paper, artifact)) or "(one)"
            for claim in registry.claims(paper, artifact):
                why = f"artifact built only at scale(s) {', '.join(entry['scales'])}"
                rows.append([paper, claim["id"], artifact, claim["statement"], paper_text(claim), "",
                             "not-run", configs, "", scale, _band_text(claim["tolerance"].get(scale)), why, why])
    return pd.DataFrame(rows, columns=COLUMNS)
