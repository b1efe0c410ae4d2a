"""Walk a file's provenance chain back to its raw inputs, re-hashing every file on the way.

Drift is: a file whose bytes no longer match its own sidecar, an input whose bytes no longer match
what the consumer's sidecar recorded, an input sidecar that was rewritten since, or a missing file.
A changed library (src/fedrepro hash) is reported as a note: the numbers may be stale, not tampered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fedrepro.provenance.hashing import hash_tree, sha256_file
from fedrepro.provenance.sidecar import LIBRARY_ROOT, read_sidecar, sidecar_path


@dataclass
class AuditReport:
    lines: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files_checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.drift


def _short(h: str | None) -> str:
    return (h or "-")[:12]


def audit_paths(paths, root: str | Path = ".") -> AuditReport:
    report = AuditReport()
    current_library = hash_tree(LIBRARY_ROOT)
    seen: set[str] = set()
    root = Path(root)

    def visit(path: str, depth: int, expected: dict | None):
        indent = "  " * depth
        p = root / path
        if not p.exists():
            report.drift.append(f"{path}: missing")
            report.lines.append(f"{indent}✗ {path}  MISSING")
            return
        actual = sha256_file(p)
        report.files_checked += 1
        problems = []
        if expected is not None:
            if actual != expected["sha256"]:
                problems.append(f"bytes changed since its consumer was made (recorded {_short(expected['sha256'])}, "
                                f"now {_short(actual)})")
            want_sc = expected.get("sidecar_sha256")
            if want_sc and sidecar_path(p).exists() and sha256_file(sidecar_path(p)) != want_sc:
                problems.append("its sidecar was rewritten since its consumer was made")
        sc = read_sidecar(p)
        if sc is not None and sc.get("sha256") != actual:
            problems.append(f"bytes do not match its own sidecar (recorded {_short(sc.get('sha256'))}, now {_short(actual)})")
        mark = "✗" if problems else "✓"
        origin = f"rule {sc['rule']}" if sc else "raw input (no sidecar)"
        data = ", ".join(f"{k}={v}" for k, v in (sc or {}).get("data", {}).items())
        report.lines.append(f"{indent}{mark} {path}  sha256 {_short(actual)}  [{origin}{'; ' + data if data else ''}]")
        for prob in problems:
            report.drift.append(f"{path}: {prob}")
            report.lines.append(f"{indent}    ! {prob}")
        if sc is None or path in seen:
            return
        seen.add(path)
        if sc.get("library_sha256") and sc["library_sha256"] != current_library:
            report.notes.append(f"{path}: made by a different src/fedrepro (library hash {_short(sc['library_sha256'])}, "
                                f"now {_short(current_library)}); rerun snakemake to refresh")
        if (sc.get("git") or {}).get("dirty"):
            report.notes.append(f"{path}: made from a working tree with uncommitted changes "
                                f"(commit {_short(sc['git'].get('commit'))})")
        for rec in sc.get("inputs", []):
            visit(rec["path"], depth + 1, rec)

    for path in paths:
        visit(str(path), 0, None)
    return report
