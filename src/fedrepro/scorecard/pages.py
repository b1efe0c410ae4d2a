"""The scorecard pages: results/<scale>/claims.{csv,md}, the assumption tables and the landing page index.html.

index.html is one static page that opens from the file system (no script, no build step, relative links only):
an introduction naming the four works, a table of contents, what the scale reduces, the stand-in legend, the
verdict counts per paper and configuration, then each paper's artifacts in the paper's own order with their
figure or table, caption, links and claims (paper value, ours, band, verdict and the reason in one row).
"""

from __future__ import annotations

import difflib
import html
import json
import os
import re
from pathlib import Path

import pandas as pd

from fedrepro.plotting.tables import markdown_table, markdown_to_html
from fedrepro.scorecard.evaluate import COLUMNS, VERDICTS
from fedrepro.scorecard.reasons import REF as _REF
from fedrepro.scorecard.reasons import linked_markdown

VERDICT_COLOURS = {"reproduced": "#1a7f37", "consistent-fitted": "#0969da", "reproduced-qualitatively": "#9a6700",
                   "not-reproduced": "#cf222e", "not-comparable": "#57606a", "not-run": "#8c959f"}
VERDICT_MEANING = {
    "reproduced": "within the claim's band at this scale (or the stated property holds)",
    "consistent-fitted": "within the band, but under values read off the same table or figure (a consistency check, "
                         "not a reproduction)",
    "reproduced-qualitatively": "outside the band, but the claim's qualitative check holds",
    "not-reproduced": "neither",
    "not-comparable": "stand-in data, a scale where the claim has no band, or a run below the regime the claim "
                      "needs (e.g. a target accuracy at chance level)",
    "not-run": "the number could not be computed here (artifact not built at this scale, row missing, not implemented)",
}
NOT_JUDGED = "not judged"


# ---- ordering: the papers' own order ------------------------------------------------------------------------
def paper_order(registry) -> list[str]:
    """Papers in the order of their source texts (gcca, cvfl, thesis, adept), not alphabetically."""
    return sorted(registry.papers, key=lambda p: (str(registry.papers[p].get("source", "")), p))


_LABEL = re.compile(r"^\s*(fig(?:ure)?s?\.?|tables?)\s+(?:([A-Z])\.)?(\d+|[IVXL]+)\b(?:\.(\d+))?", re.IGNORECASE)
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50}


def _roman(text: str) -> int:
    values = [_ROMAN[c] for c in text.upper()]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def label_position(label: str) -> tuple[tuple, str, tuple]:
    """(group, kind, number) of a label: 'Figure 3.4' -> ((3,), figure, (4,)); 'Fig. D.2' -> appendix D after
    every numbered chapter; 'Table I' -> 1; a label without a number sorts last within its kind."""
    m = _LABEL.match(label)
    if not m:
        return (0,), "table" if "table" in label.lower() else "figure", (float("inf"),)
    word, appendix, number, sub = m.groups()
    kind = "table" if word.lower().startswith("table") else "figure"
    value = int(number) if number.isdigit() else _roman(number)
    if appendix:
        return (1, appendix), kind, (value,)
    if sub is not None:            # chapter.number (the thesis)
        return (0, value), kind, (int(sub),)
    return (0,), kind, (value,)


def artifact_order(registry, paper: str, scale: str | None = None) -> list[str]:
    """The artifacts of one paper in the paper's order: grouped by chapter (appendices last); within a group
    the registry's pattern of figure and table slots is kept and each kind fills its slots in numeric order
    (Fig. 3.2 before Fig. 3.4, Fig. 9 before Fig. 10, Table I after Fig. 4 where the registry puts it there)."""
    entries = [(a, e) for p, a, e in registry.artifacts(paper=paper, scale=scale)]
    groups: dict[tuple, list[tuple[str, str, tuple]]] = {}
    for a, e in entries:
        group, kind, number = label_position(e["label"])
        groups.setdefault(group, []).append((a, kind, number))
    ordered: list[str] = []
    for group in sorted(groups, key=lambda g: (g[0], *(str(x).zfill(6) for x in g[1:]))):
        members = groups[group]
        by_kind = {k: iter(sorted((m for m in members if m[1] == k), key=lambda m: m[2])) for k in ("figure", "table")}
        ordered += [next(by_kind[kind])[0] for _, kind, _ in members]
    return ordered


# ---- the claims table --------------------------------------------------------------------------------------
def combine(files) -> pd.DataFrame:
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def verdict_counts(claims: pd.DataFrame, papers: list[str] | None = None) -> pd.DataFrame:
    """paper x configuration -> count per verdict (papers in the given order) and the total."""
    counts = claims.groupby(["paper", "configuration", "verdict"]).size().unstack(fill_value=0)
    counts = counts.reindex(columns=[v for v in VERDICTS if v in counts.columns])
    counts.columns.name = None
    counts["total"] = counts.sum(axis=1)
    counts = counts.reset_index()
    if papers:
        rank = {p: i for i, p in enumerate(papers)}
        counts = counts.sort_values(["paper", "configuration"], key=lambda s: s.map(rank) if s.name == "paper" else s,
                                    kind="stable").reset_index(drop=True)
    return counts


def claims_markdown(claims: pd.DataFrame, scale: str, papers: list[str] | None = None) -> str:
    out = [f"# Claims scorecard — scale `{scale}`", "",
           "Each row: one number or statement of a paper, our value, and the verdict "
           "(reproduced / consistent-fitted / reproduced-qualitatively / not-reproduced / not-comparable / not-run). "
           "`consistent-fitted` rows were judged under values read off the same table or figure and are counted "
           "apart from `reproduced`. `reason` gives the cause of every miss (a named assumption, this scale's budget, "
           "the paper's own inconsistency, or a defect) with the section that explains it. Where the paper-scale "
           "build is published (published/paper/), `paper_scale_value` and `paper_scale_verdict` give its value and "
           "verdict beside this scale's.", ""]
    if claims.empty:
        return "\n".join(out + ["No claims at this scale."]) + "\n"
    out += ["## Summary", "", markdown_table(verdict_counts(claims, papers)), ""]
    order = papers or list(dict.fromkeys(claims["paper"]))
    for paper in order:
        sub = claims[claims["paper"] == paper]
        if sub.empty:
            continue
        shown = sub.assign(reason=sub["reason"].map(lambda r: linked_markdown(r, "../../"))) \
            if "reason" in sub else sub.assign(reason="")
        beside = ["paper_scale_value", "paper_scale_verdict"] if "paper_scale_verdict" in shown else []
        out += [f"## {paper}", "", markdown_table(shown[["claim", "configuration", "paper_value", "our_value", "verdict",
                                                         *beside, "band", "reason", "data", "statement"]]), ""]
    return "\n".join(out)


# ---- assumption tables -------------------------------------------------------------------------------------
def _base(claim_id: str) -> str:
    return claim_id.split("[", 1)[0]


def _summarize(verdicts: pd.Series) -> str:
    """One cell: the verdict, or for several numbers (a table's cells) the count per verdict."""
    if verdicts.empty:
        return NOT_JUDGED
    counts = verdicts.value_counts()
    if len(verdicts) == 1:
        return str(verdicts.iloc[0])
    return ", ".join(f"{counts[v]}/{len(verdicts)} {v}" for v in VERDICTS if v in counts)


def _in_configurations(label: str, configurations: list[str]) -> bool:
    """A claims row's configuration label (one name, or 'a, b' for data without a configuration column)."""
    return set(label.split(", ")) <= set(configurations)


def assumption_rows(registry, paper: str, claims: pd.DataFrame) -> pd.DataFrame:
    """claim x alternative -> verdict for every assumption of a paper (long format, one row per cell)."""
    mine = claims[claims["paper"] == paper]
    bases = mine["claim"].map(_base)
    statements = {c["id"]: c["statement"] for c in registry.claims(paper)}
    rows = []
    for aid, entry in registry.assumptions(paper).items():
        alternatives = entry["alternatives"]
        configs = [c for cs in alternatives.values() for c in cs]
        touched = list(entry.get("claims") or dict.fromkeys(
            b for b, label in zip(bases, mine["configuration"]) if set(label.split(", ")) & set(configs)))
        for claim in touched:
            for alternative, alt_configs in alternatives.items():
                in_alt = mine["configuration"].map(lambda c: _in_configurations(c, alt_configs)).astype(bool)
                sel = mine[(bases == claim) & in_alt]
                rows.append({"assumption": aid, "claim": claim, "alternative": alternative,
                             "configurations": ", ".join(alt_configs), "verdict": _summarize(sel["verdict"]),
                             "numbers": len(sel), "reproduced": int((sel["verdict"] == "reproduced").sum()),
                             "statement": statements.get(claim, "")})
    return pd.DataFrame(rows, columns=["assumption", "claim", "alternative", "configurations", "verdict", "numbers",
                                       "reproduced", "statement"])


def _shorten(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def assumptions_markdown(registry, paper: str, rows: pd.DataFrame, scale: str) -> str:
    """One section per assumption: what the paper leaves open, its alternatives as columns, a claim per row."""
    out = [f"# Assumption sensitivity — {paper}, scale `{scale}`", "",
           "Each section: one detail the paper leaves open (an ASSUMPTION), its alternatives (each run as the named "
           "configurations), and the verdict of every claim it touches under each alternative, from "
           f"`results/{scale}/claims.csv`. A cell with several numbers (a table's cells) counts the verdicts; "
           f"'{NOT_JUDGED}' means no run of that configuration is judged at this scale.", ""]
    assumptions = registry.assumptions(paper)
    if not assumptions:
        return "\n".join(out + ["This paper registers no assumptions yet (`assumptions:` in its registry)."]) + "\n"
    signatures = {a: tuple(sorted((k, tuple(v)) for k, v in e["alternatives"].items())) for a, e in assumptions.items()}
    for aid, entry in assumptions.items():
        out += [f"## {aid}: {entry['statement']}", ""]
        if entry.get("doc"):
            out += [f"Argued in `{entry['doc']}`.", ""]
        together = [b for b in assumptions if b != aid and signatures[b] == signatures[aid]]
        if together:
            out += [f"Its alternatives are the same configurations as those of {', '.join(together)}: these change "
                    "together, so a verdict that differs between the columns cannot be attributed to one of them.", ""]
        if len(entry["alternatives"]) == 1:
            out += ["Only one alternative has a configuration so far: the column records the verdicts under it.", ""]
        sub = rows[rows["assumption"] == aid]
        if sub.empty:
            out += ["No claim is judged under these configurations at this scale.", ""]
            continue
        wide = sub.pivot_table(index="claim", columns="alternative", values="verdict", aggfunc="first", sort=False)
        wide = wide.reindex(columns=list(entry["alternatives"]), index=list(dict.fromkeys(sub["claim"])))
        wide.columns = [f"{alt} (`{', '.join(entry['alternatives'][alt])}`)" for alt in wide.columns]
        statements = sub.drop_duplicates("claim").set_index("claim")["statement"].map(_shorten)
        table = wide.reset_index()
        table.insert(1, "statement", table["claim"].map(statements))
        out += [markdown_table(table.fillna(NOT_JUDGED)), ""]
    return "\n".join(out)


def write_assumption_tables(registry, scale: str, claims: pd.DataFrame, files: dict[str, dict[str, str]]) -> None:
    """files: paper -> {csv, md}: results/<scale>/<paper>/tables/assumptions.{csv,md}."""
    from fedrepro.io import write_csv, write_text

    for paper, out in files.items():
        rows = assumption_rows(registry, paper, claims)
        write_csv(out["csv"], rows)
        write_text(out["md"], assumptions_markdown(registry, paper, rows, scale))


def assumption_files(scale: str, paper: str) -> dict[str, str]:
    return {ext: f"results/{scale}/{paper}/tables/assumptions.{ext}" for ext in ("csv", "md")}


# ---- one sentence per paper --------------------------------------------------------------------------------
_JUDGED = ("reproduced", "consistent-fitted", "reproduced-qualitatively", "not-reproduced")
CAUSE_WORDS = {"assumption": "a reading of what the paper leaves open", "budget": "this scale's budget",
               "paper-inconsistency": "the paper's own inconsistency", "defect": "a defect of ours"}


def paper_summary(paper: str, claims: pd.DataFrame) -> tuple[str, list[str]]:
    """(one sentence on what reproduces at this scale, what does not and why; the doc sections it cites, most
    cited first) of one paper's scorecard rows."""
    sub = claims[claims["paper"] == paper]
    verdicts = sub["verdict"].value_counts()
    judged = int(sum(verdicts.get(v, 0) for v in _JUDGED))
    n = {v: int(verdicts.get(v, 0)) for v in VERDICTS}
    if not judged:
        return f"{paper}: no number is judged at this scale ({n['not-comparable']} not comparable, {n['not-run']} " \
               "not run).", []
    text = f"{paper}: {n['reproduced']} of {judged} judged numbers reproduce at this scale"
    if n["consistent-fitted"]:
        fitted = sorted(set(sub.loc[sub["verdict"] == "consistent-fitted", "artifact"]))
        text += f", {n['consistent-fitted']} more agree only under values fitted to the same artifact ({', '.join(fitted)})"
    if n["reproduced-qualitatively"]:
        text += f", {n['reproduced-qualitatively']} only qualitatively"
    misses = sub[sub["verdict"].isin(("not-reproduced", "reproduced-qualitatively"))]
    causes = misses["reason"].map(lambda r: str(r).split(":", 1)[0]).value_counts() if "reason" in misses else None
    refs: list[str] = []
    if n["not-reproduced"]:
        text += f"; {n['not-reproduced']} do not"
    if causes is not None and len(misses):
        named = [f"{int(k)} {CAUSE_WORDS[c]}" for c, k in causes.items() if c in CAUSE_WORDS]
        if named:
            text += f"; the causes of these {len(misses)} misses (not reproduced or only qualitatively): " + ", ".join(named)
        counts: dict[str, int] = {}
        for r in misses["reason"]:
            for m in _REF.finditer(str(r)):
                counts[m.group(0)] = counts.get(m.group(0), 0) + 1
        refs = sorted(counts, key=lambda k: -counts[k])
    regime = int(sub["reason"].astype(str).str.startswith("regime not reached").sum()) if "reason" in sub else 0
    if n["not-comparable"]:
        text += f"; {n['not-comparable']} are not comparable here"
        if regime:
            text += f" ({regime} because the run is below the regime the claim needs)"
    return text + ".", refs


def paper_summary_html(registry, paper: str, claims: pd.DataFrame, root: Path, here: Path) -> str:
    text, refs = paper_summary(paper, claims)
    links = ", ".join(linked_html(r, root, here) for r in refs[:4])
    return html.escape(text) + (f" Why: {links}." if links else "")


# ---- the landing page ---------------------------------------------------------------------------------------
def _rel(target: str | Path, start: Path) -> str:
    return os.path.relpath(target, start).replace(os.sep, "/")


def _inline_markdown(rendered_html: str) -> str:
    """`**bold**` left by the pipe-table converter (the STAND-IN DATA mark) becomes <strong>."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", rendered_html)


def _norm(text: str) -> str:
    return re.sub(r"[\s#*_`]+", " ", text).strip().lower()


def table_body(md: str, label: str, caption: str) -> tuple[str, str]:
    """(subtitle, rest) of a table's Markdown: its first line repeats the label (and often the caption); the page
    prints the caption once, so that line is dropped, or kept as a subtitle when it adds something (the target,
    the configuration shown)."""
    lines = md.strip("\n").splitlines()
    if not lines or lines[0].lstrip().startswith("|"):
        return "", md
    first = _norm(lines[0])
    if not first.startswith(_norm(label)):
        return "", md
    rest = "\n".join(lines[1:])
    extra = lines[0].lstrip("#* ")
    extra = re.sub(r"^\**\s*" + re.escape(label) + r"\s*\**", "", extra).lstrip(" :—–-").strip()
    if not extra or difflib.SequenceMatcher(None, _norm(extra), _norm(caption)).ratio() > 0.6 \
            or _norm(caption).startswith(_norm(extra)[:60]):
        return "", rest
    return extra, rest


def _scale_facts(root: Path, scale: str) -> dict:
    from fedrepro.registry.config import load_yaml

    path = root / "config" / "scales" / f"{scale}.yaml"
    return load_yaml(path) if path.exists() else {}


def _flatten(params: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (params or {}).items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _short_value(v) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else v
    return _shorten(text, 40)


def reduced_parameters(registry, paper: str, scale: str) -> list[tuple[str, str]]:
    """(experiment, 'key = value here (paper: value)') for the parameters this scale changes from the paper's."""
    if scale == "paper":
        return []
    out = []
    for exp in registry.papers[paper]["experiments"]:
        configs = registry.configurations(paper, exp, scale)
        if not configs:
            continue
        here = _flatten(registry.params(paper, exp, configs[0], scale))
        there = _flatten(registry.params(paper, exp, configs[0], "paper"))
        changed = [f"{k} = {_short_value(here[k])} (paper: {_short_value(there.get(k, '–'))})"
                   for k in here if here[k] != there.get(k, object())]
        if changed:
            out.append((exp, "; ".join(changed)))
    return out


DATA_KIND_TEXT = {"real": "real data", "real-reencoded": "real images, re-encoded JPEG (every pixel off by the "
                  "JPEG error; judged like real data)"}


def _used_text(kind: str, dataset: dict) -> str:
    """What a build used for a dataset, from the data kind its sidecars recorded: a stand-in names itself by the
    registry's text; a real (or re-encoded real) dataset never gets the stand-in's description."""
    if kind == "stand-in":
        return "stand-in: " + ((dataset.get("standin") or {}).get("differs") or "synthetic data of the same shapes")
    return DATA_KIND_TEXT.get(kind, kind)


def _data_kinds(registry, scale: str) -> dict[tuple[str, str], dict]:
    """(paper, artifact) -> {dataset: real | stand-in | ...} from each artifact's data sidecar."""
    from fedrepro.provenance import read_sidecar

    kinds = {}
    for p, a, _ in registry.artifacts(scale=scale):
        sidecar = read_sidecar(registry.root / registry.artifact_data(p, a, scale)) or {}
        kinds[(p, a)] = dict(sidecar.get("data") or {})
    return kinds


def not_real_datasets(kinds: dict, papers: list[str], order: dict[str, list[str]]) -> dict:
    """The stand-in legend: (dataset, kind) -> the (paper, artifact)s made from it, in the papers' order, for every
    dataset whose build recorded a kind other than `real` (each labelled by what its runs' sidecars say it used,
    never by the stand-in it would have used)."""
    rank = {(p, a): (i, j) for i, p in enumerate(papers) for j, a in enumerate(order[p])}
    not_real: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for (p, a), data in kinds.items():
        for dataset, kind in data.items():
            if kind != "real":
                not_real.setdefault((dataset, kind), []).append((p, a))
    return {k: sorted(set(arts), key=lambda pa: rank.get(pa, (len(papers), 0))) for k, arts in sorted(not_real.items())}


def _datasets(root: Path) -> dict:
    from fedrepro.registry.config import load_yaml

    path = root / "config" / "datasets.yaml"
    return (load_yaml(path).get("datasets") or {}) if path.exists() else {}


def _doc_links(root: Path, paper: str, here: Path) -> list[str]:
    docs = sorted((root / "docs").glob(f"{paper}*.md")) if (root / "docs").is_dir() else []
    return [f"<a href='{_rel(d, here)}'>{html.escape(d.name)}</a>" for d in docs]


CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1180px;margin:1.5em auto;padding:0 1em;
color:#1f2328}
h1{margin-bottom:.2em} h2{border-bottom:2px solid #444;padding-bottom:.15em;margin-top:2.2em}
h3{margin:1.6em 0 .3em} h3 small{font-weight:400;color:#57606a}
table{border-collapse:collapse;font-size:12px;margin:.4em 0} td,th{border:1px solid #d0d7de;padding:2px 6px;
vertical-align:top} th{background:#f6f8fa;text-align:left}
img{max-width:min(100%,820px);border:1px solid #d0d7de} .art{margin-bottom:1.5em}
.v{font-weight:600;white-space:nowrap} .sub{color:#57606a;margin:.2em 0}
.standin{display:inline-block;background:#cf222e;color:#fff;font-weight:700;font-size:11px;padding:1px 6px;
border-radius:3px;letter-spacing:.03em} .note{background:#fff8c5;border:1px solid #d4a72c;padding:.4em .8em}
nav.toc{columns:2;font-size:13px;background:#f6f8fa;padding:.6em 1em;border:1px solid #d0d7de}
nav.toc ul{margin:.1em 0 .5em;padding-left:1.2em} nav.toc>ul{padding-left:0;list-style:none;margin:0}
nav.toc>ul>li{break-inside:avoid}
td.reason{max-width:520px} code{font-size:12px} td>code{white-space:nowrap} details>summary{cursor:pointer}
"""


def _artifact_link(registry, paper_artifact: tuple[str, str]) -> str:
    paper, artifact = paper_artifact
    label = registry.artifact(paper, artifact)["label"]
    return f"<a href='#{html.escape(paper)}-{html.escape(artifact)}'>{html.escape(paper)} {html.escape(label)}</a>"


def _verdict_cell(verdict: str) -> str:
    return (f"<td class='v' style='color:{VERDICT_COLOURS.get(verdict, '#000')}'>"
            f"{html.escape(verdict)}</td>")


def _counts_table(counts: pd.DataFrame) -> str:
    verdicts = [c for c in counts.columns if c not in ("paper", "configuration")]
    head = "<tr><th>paper</th><th>configuration</th>" + "".join(
        f"<th style='color:{VERDICT_COLOURS.get(v, '#000')}'>{html.escape(v)}</th>" for v in verdicts) + "</tr>"
    body = []
    for paper, sub in counts.groupby("paper", sort=False):
        for i, r in enumerate(sub.to_dict("records")):
            cells = (f"<td rowspan='{len(sub)}'><a href='#{html.escape(paper)}'>{html.escape(paper)}</a></td>"
                     if i == 0 else "")
            cells += f"<td class='config'>{html.escape(str(r['configuration']))}</td>"
            cells += "".join(f"<td>{r[v]}</td>" for v in verdicts)
            body.append(f"<tr>{cells}</tr>")
    return f"<table class='counts'>{head}{''.join(body)}</table>"


def linked_html(text: str, root: Path, here: Path) -> str:
    """Escaped text whose doc references ('docs/adept.md#table-3') are links relative to the page."""
    out, last = [], 0
    for m in _REF.finditer(text):
        out.append(html.escape(text[last:m.start()]))
        out.append(f"<a href='{_rel(root / m.group(1), here)}{m.group(2) or ''}'>{html.escape(m.group(0))}</a>")
        last = m.end()
    return "".join(out) + html.escape(text[last:])


def _reason_cell(r, root: Path | None, here: Path | None) -> str:
    """The reason (linked) and, below it, the mechanical detail it rests on."""
    reason = str(getattr(r, "reason", "") or "")
    detail = str(r.detail or "")
    head = linked_html(reason, root, here) if root is not None and reason else html.escape(reason)
    if reason and detail and detail != reason:
        return f"{head}<br><small>{html.escape(detail)}</small>"
    return head or html.escape(detail)


def _claims_table(sub: pd.DataFrame, root: Path | None = None, here: Path | None = None) -> str:
    esc = html.escape
    beside = "paper_scale_verdict" in sub   # the published paper-scale build, beside this scale's verdict

    def paper_scale(r) -> str:
        if not beside:
            return ""
        if not r.paper_scale_verdict:
            return "<td>–</td>"
        return (f"<td class='v' style='color:{VERDICT_COLOURS.get(r.paper_scale_verdict, '#000')}'>"
                f"{esc(r.paper_scale_verdict)}<br><small>{esc(r.paper_scale_value)}</small></td>")

    rows = "".join(
        f"<tr><td><code>{esc(r.claim)}</code></td><td class='config'>{esc(r.configuration)}</td><td>{esc(r.paper_value)}</td>"
        f"<td>{esc(r.our_value)}</td><td>{esc(r.band) or '–'}</td>{_verdict_cell(r.verdict)}{paper_scale(r)}"
        f"<td class='reason'>{_reason_cell(r, root, here)}</td></tr>" for r in sub.itertuples())
    return ("<table class='claims'><tr><th>claim</th><th>configuration</th><th>paper</th><th>ours</th><th>band</th><th>verdict</th>"
            + ("<th>at paper scale</th>" if beside else "") + f"<th>reason</th></tr>{rows}</table>")


def _leaderboard_section(root: Path, scale: str, link, here: Path) -> str:
    """The cross-paper leaderboard (config/leaderboard.yaml): its figure, its table and the links to its files."""
    base = f"results/{scale}/leaderboard"
    out = ["<h2 id='leaderboard'>Leaderboard: every registered compressor in each work's setting</h2>"]
    if not (root / f"{base}.md").exists():
        return out[0] + "<p>Not built at this scale (<code>snakemake results/" + html.escape(scale) + \
            "/leaderboard.csv</code>).</p>"
    out.append(f"<p>{link(f'{base}.csv', 'leaderboard.csv')} · {link(f'{base}.md', 'leaderboard.md')} · "
               f"{link(f'results/{scale}/notebooks/leaderboard.html', 'notebook')} · "
               f"{link(f'{base}.csv.prov.json', 'provenance')}</p>")
    out.append(f"<img src='{_rel(root / f'{base}.png', here)}' alt='leaderboard' style='max-width:100%'>")
    text = (root / f"{base}.md").read_text().split("\n", 1)[-1]   # its own title is this section's heading
    out.append(_inline_markdown(markdown_to_html(text)))
    return "".join(out)


def index_html(registry, scale: str, claims: pd.DataFrame, page: Path, root: Path | None = None) -> str:
    """The landing page of one scale (see the module docstring)."""
    root = Path(root or registry.root)
    here = (root / page).parent if not Path(page).is_absolute() else Path(page).parent
    esc = html.escape
    papers = [p for p in paper_order(registry) if any(True for _ in registry.artifacts(paper=p, scale=scale))]
    order = {p: artifact_order(registry, p, scale) for p in papers}
    kinds = _data_kinds(registry, scale)
    facts = _scale_facts(root, scale)
    datasets = _datasets(root)

    def link(target: str | Path, text: str) -> str:
        return f"<a href='{_rel(root / target, here)}'>{esc(text)}</a>"

    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>fedrepro results — scale {esc(scale)}</title><style>{CSS}</style></head><body>",
             "<h1>fedrepro: four federated-learning works, regenerated and scored</h1>",
             f"<p class='sub'>Scale <code>{esc(scale)}</code> · {link(f'results/{scale}/claims.md', 'claims.md')} · "
             f"{link(f'results/{scale}/claims.csv', 'claims.csv')}</p>"]

    # introduction
    parts.append("<h2 id='introduction'>Introduction</h2><p>This page shows every figure and table that fedrepro "
                 "regenerates from the descriptions in four works on communication-efficient and personalized "
                 "federated learning, and judges each number they report against ours. Each artifact below has its "
                 "figure or table, the paper's caption, links to the executed notebook and to the provenance "
                 "record, and its claims: the paper's value, ours, the band within which we call it reproduced, "
                 "the verdict and the reason.</p><ol>")
    for p in papers:
        reg = registry.papers[p]
        docs = _doc_links(root, p, here)
        parts.append(f"<li><a href='#{esc(p)}'><b>{esc(p)}</b></a>: {esc(reg['title'])}."
                     + (f" Decisions: {', '.join(docs)}." if docs else "") + "</li>")
    parts.append("</ol>")

    # table of contents
    toc = ["<nav class='toc' id='contents'><ul>",
           "<li><a href='#introduction'>Introduction</a> · <a href='#scale'>Scale</a> · "
           "<a href='#stand-ins'>Stand-in data</a> · <a href='#verdicts'>Verdicts</a> · "
           "<a href='#leaderboard'>Leaderboard</a></li>"]
    for p in papers:
        items = "".join(f"<li><a href='#{esc(p)}-{esc(a)}'>{esc(registry.artifact(p, a)['label'])}</a></li>"
                        for a in order[p])
        toc.append(f"<li><a href='#{esc(p)}'><b>{esc(p)}</b></a> · <a href='#{esc(p)}-assumptions'>assumptions</a>"
                   f"<ul>{items}</ul></li>")
    parts.append("".join(toc) + "</ul></nav>")

    # the scale and what it reduces
    parts.append(f"<h2 id='scale'>Scale <code>{esc(scale)}</code></h2>")
    if facts.get("description"):
        budget = f" (budget {facts['budget_minutes']} min)" if facts.get("budget_minutes") else ""
        parts.append(f"<p>{esc(facts['description'])}{esc(budget)}</p>")
    if scale != "paper":
        parts.append("<p class='note'>This is not the paper's scale: runs use reduced sizes (fewer iterations, "
                     "nodes, samples or seeds; listed below) and, where a dataset is not available here, a "
                     "synthetic stand-in. A claim made from stand-in data is <i>not-comparable</i>; a claim with no "
                     "band at this scale is too. The paper-scale runs are <code>--config scale=paper</code>.</p>")
        rows = [(p, exp, change) for p in papers for exp, change in reduced_parameters(registry, p, scale)]
        if rows:
            body = "".join(f"<tr><td>{esc(p)}</td><td><code>{esc(e)}</code></td><td>{esc(c)}</td></tr>"
                           for p, e, c in rows)
            parts.append(f"<details><summary>What <code>{esc(scale)}</code> changes from the paper's parameters "
                         f"({len(rows)} experiments)</summary><table><tr><th>paper</th><th>experiment</th>"
                         f"<th>parameters at this scale (paper scale)</th></tr>{body}</table></details>")

    not_real = not_real_datasets(kinds, papers, order)
    parts.append("<h2 id='stand-ins'>Stand-in data</h2><p><span class='standin'>STAND-IN DATA</span> on an artifact "
                 "(and as a watermark on its figure's panels) means that at least one of its runs was made from "
                 "synthetic or substitute data because the real dataset is not available here (credentialed, too "
                 "large, or not downloadable). The code path is the same; the numbers are not the paper's, so its "
                 "claims are not-comparable. A dataset used as <em>real, re-encoded</em> is the real images through a "
                 "lossy codec: judged like real data, its figures carry a lighter mark.</p>")
    if not_real:
        body = "".join(
            f"<tr><td><code>{esc(d)}</code></td><td>{esc((datasets.get(d) or {}).get('title', ''))}</td>"
            f"<td>{esc(_used_text(kind, datasets.get(d) or {}))}</td>"
            f"<td>{', '.join(_artifact_link(registry, pa) for pa in arts)}</td></tr>"
            for (d, kind), arts in not_real.items())
        parts.append("<table><tr><th>dataset</th><th>what it is</th><th>what this build used</th><th>artifacts</th>"
                     f"</tr>{body}</table>")
    else:
        parts.append("<p>Every artifact at this scale was made from the real datasets.</p>")

    # verdicts
    parts.append("<h2 id='verdicts'>Verdicts per paper and configuration</h2>")
    parts.append("<p>" + " · ".join(f"<span class='v' style='color:{VERDICT_COLOURS[v]}'>{esc(v)}</span>: "
                                    f"{esc(VERDICT_MEANING[v])}" for v in VERDICTS) + "</p>")
    if not claims.empty:
        parts.append(_counts_table(verdict_counts(claims, papers)))
        parts.append("<ul class='summary'>" + "".join(
            f"<li>{paper_summary_html(registry, p, claims, root, here)}</li>" for p in papers) + "</ul>")

    parts.append(_leaderboard_section(root, scale, link, here))

    # papers and artifacts
    for p in papers:
        reg = registry.papers[p]
        parts.append(f"<h2 id='{esc(p)}'>{esc(p)}: {esc(reg['title'])}</h2>")
        if not claims.empty:
            parts.append(f"<p class='sub'>{paper_summary_html(registry, p, claims, root, here)}</p>")
        files = assumption_files(scale, p)
        block = (f"<div id='{esc(p)}-assumptions'><p>Assumption sensitivity (claim × alternative → verdict): "
                 f"{link(files['md'], 'assumptions.md')} · {link(files['csv'], 'assumptions.csv')}</p>")
        if (root / files["md"]).exists():
            block += ("<details><summary>the assumption tables</summary>"
                      + _inline_markdown(markdown_to_html((root / files["md"]).read_text())) + "</details>")
        parts.append(block + "</div>")
        for a in order[p]:
            parts.append(_artifact_html(registry, p, a, scale, claims, kinds.get((p, a), {}), root, here))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _artifact_html(registry, paper: str, artifact: str, scale: str, claims: pd.DataFrame, data: dict, root: Path,
                   here: Path) -> str:
    esc = html.escape
    entry = registry.artifact(paper, artifact)
    files = registry.artifact_files(paper, artifact, scale)
    mark = " <span class='standin'>STAND-IN DATA</span>" if any(v == "stand-in" for v in data.values()) else ""
    out = [f"<div class='art' id='{esc(paper)}-{esc(artifact)}'><h3>{esc(entry['label'])}{mark} "
           f"<small><code>{esc(paper)}_{esc(artifact)}</code></small></h3><p>{esc(entry['caption'])}</p>"]
    if entry["kind"] == "figure" and (root / files["png"]).exists():
        out.append(f"<a href='{_rel(root / files['pdf'], here)}'><img src='{_rel(root / files['png'], here)}' "
                   f"alt='{esc(entry['label'])}'></a>")
    elif entry["kind"] == "table" and (root / files["md"]).exists():
        subtitle, body = table_body((root / files["md"]).read_text(), entry["label"], entry["caption"])
        if subtitle:
            out.append(f"<p class='sub'>{_inline_markdown(markdown_to_html(subtitle))}</p>")
        out.append(_inline_markdown(markdown_to_html(body)))
    names = {"ipynb": "notebook (.ipynb)", "html": "executed notebook"}
    links = [f"<a href='{_rel(root / files[k], here)}'>{esc(names.get(k, k))}</a>" for k in files
             if (root / files[k]).exists()]
    links += [f"<a href='{_rel(root / (files['csv'] + '.prov.json'), here)}'>provenance</a>"]
    if not (root / (files["csv"] + ".prov.json")).exists():
        links.pop()
    if data:
        links.append("data: " + ", ".join(f"{esc(d)} ({esc(k)})" for d, k in sorted(data.items())))
    out.append("<p class='sub'>" + " · ".join(links) + "</p>")
    sub = claims[(claims["paper"] == paper) & (claims["artifact"] == artifact)] if not claims.empty else claims
    if not sub.empty:
        summary = ", ".join(f"{n} {v}" for v, n in sub["verdict"].value_counts().reindex(VERDICTS).dropna()
                            .astype(int).items())
        opened = " open" if len(sub) <= 20 else ""
        out.append(f"<details{opened}><summary>claims: {esc(summary)}</summary>{_claims_table(sub, root, here)}"
                   "</details>")
    out.append("</div>")
    return "\n".join(out)
