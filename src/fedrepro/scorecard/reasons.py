"""Why a scorecard row is not a plain `reproduced`: the regime a claim needs, the fitted configurations, the cause
of a miss.  Each reads a registry key (docs/architecture.md, "Claims"):

* a claim's ``regime: {expr, why, where?}``: a claim expression over the artifact's CSV (one configuration's rows)
  that must hold for the run to speak to the claim (a target accuracy meaningfully above chance, an FID within a
  factor of the paper's); below it the verdict is ``not-comparable``;
* an experiment's ``sources: {<configuration>: {<value> | default: {from, where, artifacts?}}}``: where each
  filled-in value of a configuration comes from; ``from: this-artifact`` makes the claims of the artifacts it was
  read off (``artifacts:``, default every artifact built from the experiment) ``consistent-fitted``, not reproduced;
* a claim's ``miss: {cause, ref, note}`` (or a list of them, each with ``configurations:``): the cause of a
  not-reproduced or qualitative row, with the doc or notebook section that explains it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from fedrepro.registry.config import ConfigError

ORIGINS = ("paper-text", "authors-code", "other-artifact", "this-artifact", "assumption")
CAUSES = ("assumption", "budget", "paper-inconsistency", "defect")
NOT_REACHED = "regime not reached at this scale"


# ---- regime -------------------------------------------------------------------------------------------------
def regime_shortfall(claim: dict, frame, source: str) -> str | None:
    """None when the claim declares no regime or the run reaches it; else the reason (the regime's `why` and the
    values it was judged on)."""
    from fedrepro.scorecard.evaluate import failure_detail
    from fedrepro.scorecard.expressions import compile_expression

    regime = claim.get("regime")
    if not regime:
        return None
    cid = claim["id"]
    if regime.get("where"):
        frame = frame[compile_expression(regime["where"], field="regime.where", claim=cid, source=source)
                      .mask(frame, claim=cid, source=source)]
    if frame.empty:
        return f"{NOT_REACHED}: {regime['why']} (no rows to judge the regime on)"
    expr = compile_expression(regime["expr"], field="regime.expr", claim=cid, source=source)
    result = np.asarray(expr.evaluate(frame, claim=cid, source=source), dtype=bool)
    if result.all():
        return None
    read = [c for c in frame.columns if str(c) in expr.columns]
    return f"{NOT_REACHED}: {regime['why']} (tested {regime['expr']}: {failure_detail(frame, result, read)})"


# ---- fitted configurations ----------------------------------------------------------------------------------
def _entries(sources: dict) -> dict:
    return {name: entry for name, entry in (sources or {}).items()}


def fitted_configurations(registry, paper: str, artifact: str) -> dict[str, str]:
    """configuration -> 'c_u, sigma_test read off Table 5.1' for the configurations of the artifact's experiments
    that take a value from this same artifact (`from: this-artifact`)."""
    reg = registry.papers[paper]
    entry = reg["artifacts"][artifact]
    out: dict[str, str] = {}
    for exp in entry["experiments"]:
        e = reg["experiments"][exp]
        users = [a for a, ae in reg["artifacts"].items() if exp in ae["experiments"]]
        for config, values in (e.get("sources") or {}).items():
            fitted = [(name, src) for name, src in _entries(values).items() if src.get("from") == "this-artifact"
                      and artifact in (src.get("artifacts") or users)]
            if fitted:
                names = ", ".join(n for n, _ in fitted)
                wheres = "; ".join(dict.fromkeys(src["where"] for _, src in fitted))
                text = f"{names} read off {wheres}"
                out[config] = f"{out[config]}; {text}" if config in out else text
    return out


def fitted_reason(fitted: dict[str, str], configuration: str) -> str:
    """The reason of a consistent-fitted row ('' when none of the row's configurations is fitted)."""
    texts = [fitted[c] for c in configuration.split(", ") if c in fitted]
    if not texts:
        return ""
    return ("fitted: judged under values taken from this same artifact (" + "; ".join(texts)
            + "), so agreement is a consistency check, not a reproduction")


# ---- the cause of a miss ------------------------------------------------------------------------------------
def _misses(claim: dict) -> list[dict]:
    miss = claim.get("miss")
    if not miss:
        return []
    return list(miss) if isinstance(miss, list) else [miss]


def miss_entry(claim: dict, configuration: str) -> dict | None:
    """The claim's `miss:` entry for a row's configuration: the first whose `configurations:` include one of the
    row's (an entry without `configurations:` applies to every configuration)."""
    configs = set(configuration.split(", "))
    for entry in _misses(claim):
        if not entry.get("configurations") or configs & set(entry["configurations"]):
            return entry
    return None


def miss_reason(claim: dict, configuration: str) -> str:
    entry = miss_entry(claim, configuration)
    if entry is None:
        return ""
    return f"{entry['cause']}: {entry['note']} (see {entry['ref']})"


# ---- links --------------------------------------------------------------------------------------------------
REF = re.compile(r"\b((?:docs|notebooks)/[\w./-]+?\.(?:md|py))(#[\w-]+)?")


def linked_markdown(text: str, prefix: str) -> str:
    """Reasons name the doc section that explains them ('docs/adept.md#table-3'): a Markdown link from a page
    `prefix` away from the repository root ('../../' for results/<scale>/claims.md)."""
    return REF.sub(lambda m: f"[{m.group(0)}]({prefix}{m.group(1)}{m.group(2) or ''})", text)


# ---- checks -------------------------------------------------------------------------------------------------
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchor(heading: str) -> str:
    """The GitHub anchor of a Markdown heading (lower case, punctuation dropped, spaces to hyphens)."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown doc's headings, or of a jupytext notebook's Markdown headings (`# ## ...`)."""
    found = set()
    for line in path.read_text().splitlines():
        line = line[2:] if path.suffix == ".py" and line.startswith("# #") else line
        m = _HEADING.match(line)
        if m:
            found.add(anchor(m.group(1)))
    return found


def check_ref(root: Path, ref: str) -> str | None:
    """None when `ref` ('docs/adept.md#table-3') names an existing file and, when it has one, an anchor of it."""
    path, _, frag = ref.partition("#")
    file = Path(root) / path
    if not file.is_file():
        return f"no file {path}"
    if frag and frag not in anchors(file):
        return f"{path} has no section with the anchor #{frag}"
    return None


def check_claim_keys(registry) -> None:
    """Every experiment's `sources:` names its own configurations and their values; every `miss:` names an
    existing doc section; every claim's list value (a mapping `paper_value`) says how ours is keyed (`per:` or an
    `ours:` mapping).  Raises one ConfigError listing every problem."""
    problems = []
    root = Path(registry.root)
    for paper, reg in registry.papers.items():
        where = f"config/papers/{paper}.yaml"
        for exp, e in reg["experiments"].items():
            sources = e.get("sources") or {}
            for config in e["configurations"]:
                if config not in sources:
                    problems.append(f"{where}: experiments.{exp}.sources has no entry for configuration {config!r} "
                                    f"(say where each of its values comes from: {', '.join(ORIGINS)})")
            for config, values in sources.items():
                if config not in e["configurations"]:
                    problems.append(f"{where}: experiments.{exp}.sources names {config!r}, which is no configuration "
                                    f"of {exp} ({', '.join(e['configurations'])})")
                    continue
                params = e["configurations"][config]
                for name, src in _entries(values).items():
                    if name != "default" and name.split(".")[0] not in params:
                        problems.append(f"{where}: experiments.{exp}.sources.{config}.{name}: configuration {config!r} "
                                        f"has no value {name!r} ({', '.join(params)})")
                    for a in src.get("artifacts") or []:
                        if a not in reg["artifacts"] or exp not in reg["artifacts"][a]["experiments"]:
                            problems.append(f"{where}: experiments.{exp}.sources.{config}.{name}.artifacts names "
                                            f"{a!r}, which is no artifact built from {exp}")
        for claim in reg["claims"]:
            for entry in _misses(claim):
                bad = check_ref(root, entry["ref"])
                if bad:
                    problems.append(f"{where}: claim {claim['id']}: miss.ref {entry['ref']!r}: {bad}")
            if isinstance(claim.get("paper_value"), dict) and not (claim.get("per")
                                                                   or isinstance(claim.get("ours"), dict)):
                problems.append(f"{where}: claim {claim['id']}: paper_value is a mapping but neither `per:` nor an "
                                f"`ours:` mapping says how ours is keyed by the same labels")
    if problems:
        raise ConfigError(f"{len(problems)} scorecard registry problem(s):\n" + "\n".join(problems))
