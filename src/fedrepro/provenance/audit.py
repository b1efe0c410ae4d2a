"""Walk a file's provenance chain back to its raw inputs, re-hashing every file on the way.

Drift is: a file whose bytes no longer match its own sidecar, an input whose bytes no longer match
what the consumer's sidecar recorded, an input sidecar that was rewritten since, a missing file, or a
generated file (under results/, except the raw downloads) without a sidecar.
A changed library (src/fedrepro hash) is reported as a note: the numbers may be stale, not tampered.

Each file is hashed and reported once however many consumers it has; every file built (directly or not) from
a drifted one, and every input of a drifted one, is marked; the report ends with the command that rebuilds.

A claim's audit (`claim_runs`, `claim_summary`) starts with the claim as the scorecard judged it and walks only the
runs the claim reads: its configurations, and the experiments on its `datasets:` (a CIFAR-10 panel's claim does not
re-hash the MIMIC-III and ModelNet10 runs of the same figure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fedrepro.provenance.hashing import hash_tree, sha256_file
from fedrepro.provenance.sidecar import LIBRARY_ROOT, SIDECAR_SUFFIX, read_sidecar, sidecar_path
from fedrepro.provenance.verify import is_generated


@dataclass
class AuditReport:
    lines: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    repair: list[str] = field(default_factory=list)
    files_checked: int = 0
    skipped: set[str] = field(default_factory=set)   # runs of the artifact that the audited claim does not read

    @property
    def ok(self) -> bool:
        return not self.drift


@dataclass
class _Node:
    path: str
    exists: bool
    sha256: str | None = None
    sidecar: dict | None = None
    problems: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)


def _short(h: str | None) -> str:
    return (h or "-")[:12]


def _add(problems: list[str], text: str) -> None:
    if text not in problems:
        problems.append(text)


def _is_run(path: str) -> bool:
    parts = Path(path).parts
    return len(parts) >= 5 and parts[0] == "results" and parts[3] == "runs" and path.endswith(".csv")


def _walk(paths, root: Path, report: AuditReport, runs: set[str] | None = None) -> dict[str, _Node]:
    """Every file of the chains below `paths`, hashed once, with its own problems and the edge problems
    (what its consumers recorded about it) attached to it.  `runs`: the run CSVs to follow (None: every one);
    another run recorded as an input is neither hashed nor shown."""
    nodes: dict[str, _Node] = {}
    stack = [(str(p), None, None) for p in reversed(list(paths))]
    while stack:
        path, consumer, record = stack.pop()
        node = nodes.get(path)
        if node is None:
            p = root / path
            node = nodes[path] = _Node(path, p.exists())
            if not node.exists:
                node.problems.append("missing")
            else:
                node.sha256 = sha256_file(p)
                report.files_checked += 1
                node.sidecar = read_sidecar(p)
                sc = node.sidecar
                if sc is None and is_generated(path, root):
                    node.problems.append("a generated file without its sidecar: where it came from is unknown")
                if sc is not None and sc.get("sha256") != node.sha256:
                    node.problems.append(f"bytes do not match its own sidecar (recorded {_short(sc.get('sha256'))},"
                                         f" now {_short(node.sha256)})")
                if (folders := ((sc or {}).get("extra") or {}).get("image_folders")) is not None:
                    from fedrepro.provenance.folders import changed_folders, describe

                    if changed := changed_folders(p, folders, deep=True):
                        node.problems.append(describe(changed))
                for rec in reversed((sc or {}).get("inputs", [])):
                    if runs is not None and _is_run(rec["path"]) and rec["path"] not in runs:
                        report.skipped.add(rec["path"])
                        continue
                    stack.append((rec["path"], path, rec))
        if consumer is not None:
            if consumer not in node.consumers:
                node.consumers.append(consumer)
            if path not in nodes[consumer].inputs:
                nodes[consumer].inputs.append(path)
            if node.exists and record is not None:
                own = (node.sidecar or {}).get("sha256")
                # the same change as "does not match its own sidecar" is not reported twice
                if node.sha256 != record["sha256"] and not (own != node.sha256 and own == record["sha256"]):
                    _add(node.problems, f"bytes changed since a consumer was made from it (recorded "
                                        f"{_short(record['sha256'])}, now {_short(node.sha256)})")
                want_sc = record.get("sidecar_sha256")
                if want_sc and sidecar_path(root / path).exists() and sha256_file(sidecar_path(root / path)) != want_sc:
                    _add(node.problems, "its sidecar was rewritten since a consumer was made from it")
    return nodes


def _closure(start: str, nodes: dict[str, _Node], edges: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in getattr(nodes[todo.pop()], edges):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _repair(nodes: dict[str, _Node], drifted: list[str], roots: list[str], scale: str | None,
            root: Path) -> list[str]:
    """The rules to force: each drifted file's own rule, or (a raw file, a file without sidecar) the rule
    of the files made from it; then the audited targets rebuild on top."""
    rules, deletions = [], []
    for path in drifted:
        node = nodes[path]
        rule = (node.sidecar or {}).get("rule")
        if rule is None:
            consumers = [nodes[c].sidecar.get("rule") for c in node.consumers if nodes[c].sidecar]
            rule = consumers[0] if consumers else None
            if node.exists and is_generated(path, root) and node.sidecar is None:
                deletions.append(path)
        if rule and rule not in rules:
            rules.append(rule)
    targets = " ".join(r for r in roots if not r.endswith(SIDECAR_SUFFIX))
    config = f" --config scale={scale}" if scale else ""
    lines = []
    if deletions:
        lines.append(f"rm {' '.join(deletions)}   # generated files of unknown origin")
    force = f" --forcerun {' '.join(rules)}" if rules else ""
    # targets first: --config and --forcerun take every word up to the next option
    lines.append(f"snakemake --cores 1 {targets}{force}{config}")
    return lines


def audit_paths(paths, root: str | Path = ".", scale: str | None = None, runs=None) -> AuditReport:
    """The hash tree below `paths`; `runs` (a claim's run CSVs): follow only those runs."""
    report = AuditReport()
    root = Path(root)
    roots = [str(p) for p in paths]
    nodes = _walk(roots, root, report, None if runs is None else {str(r) for r in runs})
    drifted = [p for p, n in nodes.items() if n.problems]
    built_on, feeds = {}, {}
    for path in drifted:
        for up in _closure(path, nodes, "consumers"):
            built_on.setdefault(up, path)
        for down in _closure(path, nodes, "inputs"):
            feeds.setdefault(down, path)

    current_library = hash_tree(LIBRARY_ROOT)
    shown: set[str] = set()
    input_lists: dict[tuple, str] = {}
    stale: dict[str, list[str]] = {}          # library hash -> files made by it (one note per hash)

    def render(path: str, depth: int):
        node, indent = nodes[path], "  " * depth
        if path in shown:
            report.lines.append(f"{indent}  {path}  (shown above)")
            return
        shown.add(path)
        sc = node.sidecar
        if not node.exists:
            report.lines.append(f"{indent}✗ {path}  MISSING")
        else:
            origin = f"rule {sc['rule']}" if sc else ("generated, NO SIDECAR" if is_generated(path, root)
                                                      else "raw input (no sidecar)")
            data = ", ".join(f"{k}={v}" for k, v in (sc or {}).get("data", {}).items())
            if node.problems:
                mark, why = "✗", ""
            elif path in built_on:
                mark, why = "⚠", f"  (built on drifted {built_on[path]})"
            elif path in feeds:
                mark, why = "⚠", f"  (input of drifted {feeds[path]})"
            else:
                mark, why = "✓", ""
            report.lines.append(f"{indent}{mark} {path}  sha256 {_short(node.sha256)}  "
                                f"[{origin}{'; ' + data if data else ''}]{why}")
        for prob in node.problems:
            report.lines.append(f"{indent}    ! {prob}")
        if sc is not None:
            if sc.get("library_sha256") and sc["library_sha256"] != current_library:
                stale.setdefault(sc["library_sha256"], []).append(path)
            if (sc.get("git") or {}).get("dirty"):
                report.notes.append(f"{path}: made from a working tree with uncommitted changes "
                                    f"(commit {_short(sc['git'].get('commit'))})")
        same = input_lists.get(tuple(node.inputs))
        if same is not None and node.inputs:
            report.lines.append(f"{indent}    (inputs as for {same})")     # e.g. a figure's pdf, png and csv
            return
        input_lists[tuple(node.inputs)] = path
        for child in node.inputs:
            render(child, depth + 1)

    for path in roots:
        render(path, 0)
    for old, files in stale.items():
        report.notes.insert(0, f"made by a different src/fedrepro (library hash {_short(old)}, now "
                               f"{_short(current_library)}; rerun snakemake to refresh): {', '.join(files)}")
    report.drift = [f"{p}: {'; '.join(nodes[p].problems)}" for p in drifted]
    affected = sorted(set(built_on) - set(drifted))
    if affected:
        report.notes.append(f"{len(affected)} file(s) built on drifted files: {', '.join(affected)}")
    if report.skipped:
        report.notes.append(f"{len(report.skipped)} run(s) of the artifact that this claim does not read were not "
                            f"re-hashed: {', '.join(sorted(report.skipped))}")
    if drifted:
        report.repair = _repair(nodes, drifted, roots, scale, root)
    return report


# ---- a claim's audit ---------------------------------------------------------------------------------------

def claim_runs(registry, paper: str, claim: dict, scale: str) -> list[str]:
    """The run CSVs a claim reads at `scale`: its artifact's experiments on the claim's `datasets:` (all of them
    where it names none), at the claim's `configurations:` (all where it names none)."""
    entry = registry.artifact(paper, claim["artifact"])
    datasets, confs = claim.get("datasets"), claim.get("configurations")
    out = []
    for exp in entry["experiments"]:
        dataset = registry.run_spec(paper, exp, scale).get("dataset")
        if datasets and dataset and dataset not in datasets:
            continue
        for conf in registry.configurations(paper, exp, scale):
            if not confs or conf in confs:
                out.append(f"results/{scale}/{paper}/runs/{exp}/{conf}.csv")
    return out


CLAIM_FIELDS = (("paper", "paper_value"), ("ours", "our_value"), ("band", "band"), ("verdict", "verdict"),
                ("configuration", "configuration"), ("data", "data"), ("detail", "detail"))


def claim_summary(paper: str, claim: dict, claims_csv: str | Path) -> list[str]:
    """The claim as the scorecard judged it: statement and expression from the registry, then one block per row of
    the artifact's claims CSV (a configuration, or an element of a `cells` claim)."""
    import pandas as pd

    lines = [f"Claim {paper}:{claim['id']} ({claim.get('kind', '')}, artifact {paper}:{claim['artifact']})",
             f"  statement:  {claim.get('statement', '')}"]
    expression = [f"{k} {claim[k]}" for k in ("where", "expr", "ours", "column") if claim.get(k)]
    if claim.get("kind") == "cells":
        expression.append(f"cells of {', '.join(claim.get('columns', []))} keyed by {', '.join(claim.get('keys', []))}")
    lines.append(f"  expression: {'; '.join(expression) or '-'}")
    frame = pd.read_csv(claims_csv, keep_default_na=False)
    rows = frame[(frame.claim == claim["id"]) | frame.claim.astype(str).str.startswith(claim["id"] + "[")]
    if not len(rows):
        lines.append(f"  (no row for this claim in {claims_csv})")
    for r in rows.itertuples():
        head = f"  [{r.claim}]" if r.claim != claim["id"] else "  ---"
        lines.append(head)
        for name, col in CLAIM_FIELDS:
            value = getattr(r, col, "")
            if str(value) != "":
                lines.append(f"    {name + ':':<15}{value}")
    return lines
