"""Published results: what a build made, committed under `published/<scale>/` with the same relative paths as under
`results/<scale>/`, so a reader sees the figures, tables and verdicts without running anything (docs/architecture.md,
"Published results").

`publish` copies, from one scale's build, each artifact whose files are all there (figure or table, its executed
notebook as HTML, its claims) with the run CSVs it reads, every file with its sidecar, and at quick scale the
scorecard (claims.csv/md).  Each file is re-hashed against its sidecar first: nothing unverified is published.
Large intermediates (prepared data, run side files, executed .ipynb, PDFs) stay out, and a run CSV over 5 MB is
published as its sidecar alone (its hash, cost and code; the figure's CSV holds the numbers shown).

`audit_published` re-hashes every published file and the links between them (each recorded input that is
published must have the recorded bytes), and says per file whether the code that made it, its import closure, is
still today's code: `current`, or `stale` with the files changed since.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fedrepro.provenance.hashing import sha256_file
from fedrepro.provenance.sidecar import SIDECAR_SUFFIX, read_sidecar, sidecar_path

if TYPE_CHECKING:
    import pandas as pd

PUBLISHED = "published"
# what a reader needs; PDFs duplicate the PNGs and executed .ipynb the HTML
PUBLISHED_KINDS = ("csv", "md", "png", "html")
# a run CSV above this is published as its sidecar alone (sha256, cost, code): paper-scale logs of every iteration
# of every trial reach 90 MB, the figure's own CSV holds the numbers it shows
MAX_RUN_CSV_BYTES = 5_000_000


class PublishError(ValueError):
    """A file that would be published does not have the bytes its sidecar records (or has no sidecar)."""


def published_path(results_path: str | Path) -> Path:
    """results/<scale>/x -> published/<scale>/x."""
    parts = Path(results_path).parts
    if not parts or parts[0] != "results":
        raise ValueError(f"{results_path}: not under results/")
    return Path(PUBLISHED, *parts[1:])


def results_path(published: str | Path) -> Path:
    """published/<scale>/x -> results/<scale>/x (the path sidecars name)."""
    parts = Path(published).parts
    return Path("results", *parts[1:])


def _verified(root: Path, rel: str) -> None:
    record = read_sidecar(root / rel)
    if record is None:
        raise PublishError(f"{rel}: no sidecar ({rel}{SIDECAR_SUFFIX}); rebuild it with Snakemake before publishing")
    actual = sha256_file(root / rel)
    if record["sha256"] != actual:
        raise PublishError(f"{rel}: its bytes ({actual[:12]}) are not those its sidecar records "
                           f"({record['sha256'][:12]}); rebuild it (snakemake --cores 2 {rel}) before publishing")


def _names_no_machine_path(root: Path, rel: str) -> None:
    """A published page or table names no path of the machine that built it (a warning's traceback in an executed
    notebook would): published files are committed and read anywhere."""
    if Path(rel).suffix not in (".html", ".md", ".csv"):
        return
    here = str(root.resolve())
    if here in (root / rel).read_text(errors="replace"):
        raise PublishError(f"{rel} names this machine's path {here} (a warning or traceback in the notebook's "
                           f"output?); make it relative or fix its cause, rebuild, then publish")


def publishable_files(registry, scale: str, root: str | Path = ".") -> list[str]:
    """Under results/<scale>/: every complete artifact's shown files and claims, the runs they read, the other run
    CSVs there (board runs) and, when built, the scorecard; results/-relative paths, sorted."""
    root = Path(root)
    files: set[str] = set()
    for paper, artifact, _ in registry.artifacts(scale=scale):
        made = {k: v for k, v in registry.artifact_files(paper, artifact, scale).items() if k in PUBLISHED_KINDS}
        made["claims"] = registry.claims_file(paper, artifact, scale)
        if all((root / f).is_file() for f in made.values()):
            files |= set(made.values())
            files |= set(registry.artifact_runs(paper, artifact, scale))
    files |= {p.relative_to(root).as_posix() for p in (root / "results" / scale).glob("*/runs/*/*.csv")}
    files |= {f"results/{scale}/claims.{x}" for x in ("csv", "md") if (root / f"results/{scale}/claims.{x}").is_file()}
    missing = sorted(f for f in files if not (root / f).is_file())
    if missing:
        raise PublishError(f"artifacts whose runs are missing: {', '.join(missing)}")
    return sorted(files)


def publish(registry, scale: str, root: str | Path = ".", clean: bool = True) -> list[Path]:
    """Copy `publishable_files` and their sidecars to published/<scale>/ (replacing what was there when `clean`);
    a run CSV over MAX_RUN_CSV_BYTES goes as its sidecar alone.  Returns the published paths (sidecars excluded)."""
    root = Path(root)
    files = publishable_files(registry, scale, root)
    if not files:
        raise PublishError(f"nothing built under results/{scale}/ to publish; build first "
                           f"(snakemake --cores 2 <targets> --config scale={scale})")
    for rel in files:
        _verified(root, rel)
        _names_no_machine_path(root, rel)
    dest_root = root / PUBLISHED / scale
    if clean and dest_root.exists():
        shutil.rmtree(dest_root)
    out = []
    for rel in files:
        dest = root / published_path(rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not _sidecar_only(root / rel):
            shutil.copy2(root / rel, dest)
            out.append(dest.relative_to(root))
        shutil.copy2(sidecar_path(root / rel), sidecar_path(dest))
    return out


def _sidecar_only(path: Path) -> bool:
    return path.parent.parent.name == "runs" and path.stat().st_size > MAX_RUN_CSV_BYTES


@dataclass
class PublishedFile:
    path: str                       # published/<scale>/... (a run CSV published as its sidecar alone: absent)
    problems: list[str] = field(default_factory=list)   # broken chain: bytes or links that do not match
    stale: list[str] = field(default_factory=list)      # code (or registry, notebook) changed since it was made
    unchecked: list[str] = field(default_factory=list)  # inputs not published and not in the repository (data)

    @property
    def state(self) -> str:
        if self.problems:
            return "broken: " + "; ".join(self.problems)
        return "stale: " + ", ".join(self.stale) if self.stale else "current"


def _published_files(root: Path, scale: str | None) -> list[Path]:
    """Every published file, by its sidecar (so a run CSV published as its sidecar alone is listed too)."""
    base = root / PUBLISHED / scale if scale else root / PUBLISHED
    return sorted(Path(str(p)[: -len(SIDECAR_SUFFIX)]) for p in base.rglob(f"*{SIDECAR_SUFFIX}"))


def audit_file(root: Path, path: Path) -> PublishedFile:
    """One published file: its bytes against its sidecar, each recorded input against what is published or in the
    repository, and its code against today's (`fedrepro.workflow.codedeps.stale_files`)."""
    from fedrepro.workflow.codedeps import stale_files

    rel = path.relative_to(root).as_posix()
    result = PublishedFile(rel)
    record = read_sidecar(path)
    if record is None:
        result.problems.append("no sidecar")
        return result
    if path.is_file() and sha256_file(path) != record.get("sha256"):
        result.problems.append("bytes differ from the sidecar")
    for item in record.get("inputs", []):
        name = item["path"]
        if name.startswith("results/"):
            local = root / published_path(name)
            side = sidecar_path(local)
            if not local.is_file() and side.is_file():      # published as its sidecar alone: the recorded hashes
                if read_sidecar(local).get("sha256") != item["sha256"]:
                    result.problems.append(f"input {name}'s sidecar records other bytes than it was made from")
                elif "sidecar_sha256" in item and sha256_file(side) != item["sidecar_sha256"]:
                    result.problems.append(f"input {name}'s sidecar differs")
                continue
            if not local.is_file():
                result.unchecked.append(name)
                continue
            if sha256_file(local) != item["sha256"]:
                result.problems.append(f"input {name} differs from what it was made from")
            if "sidecar_sha256" in item and side.is_file() and sha256_file(side) != item["sidecar_sha256"]:
                result.problems.append(f"input {name}'s sidecar differs")
        elif (root / name).is_file():
            if sha256_file(root / name) != item["sha256"]:
                result.stale.append(name)
        else:
            result.stale.append(f"{name} (removed)")
    if record.get("code"):
        result.stale += [f for f in stale_files(root, record["code"]) if f not in result.stale]
    elif record.get("rule") in ("run", "render_table", "render_figure"):
        result.stale.append("no code record (made before sidecars recorded code)")
    return result


def audit_published(root: str | Path = ".", scale: str | None = None) -> list[PublishedFile]:
    """`audit_file` for every published file (of one scale, or all)."""
    root = Path(root)
    return [audit_file(root, p) for p in _published_files(root, scale)]


def published_claims_files(scale: str, root: str | Path = ".") -> list[Path]:
    """The published scorecard of a scale (claims.csv, at quick), else its artifacts' claims files."""
    root = Path(root)
    card = root / PUBLISHED / scale / "claims.csv"
    if card.is_file():
        return [card]
    return sorted((root / PUBLISHED / scale).glob("*/claims/*.csv"))


def stale_artifacts(results: list[PublishedFile], root: str | Path = ".") -> set[tuple[str, str, str]]:
    """(scale, paper, artifact) whose claims, or a run those claims were judged on, are not `current`."""
    root = Path(root)
    by_path = {r.path: r for r in results}
    out = set()
    for r in results:
        parts = Path(r.path).parts            # published, scale, paper, claims, artifact.csv
        if len(parts) != 5 or parts[3] != "claims":
            continue
        chain = [r]
        figure = read_sidecar(root / r.path) or {}
        for item in figure.get("inputs", []):
            upstream = by_path.get(published_path(item["path"]).as_posix()) if item["path"].startswith("results/") else None
            if upstream:
                chain.append(upstream)
                for run in (read_sidecar(root / upstream.path) or {}).get("inputs", []):
                    if run["path"].startswith("results/") and published_path(run["path"]).as_posix() in by_path:
                        chain.append(by_path[published_path(run["path"]).as_posix()])
        if any(c.state != "current" for c in chain):
            out.add((parts[1], parts[2], Path(parts[4]).stem))
    return out


def paper_scale_verdicts(files) -> pd.DataFrame:
    """The published paper-scale value and verdict of each claim (paper, claim, configuration), to show beside
    another scale's (the scorecard's columns `paper_scale_value` and `paper_scale_verdict`)."""
    import pandas as pd

    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    if not frames:
        return pd.DataFrame(columns=["paper", "claim", "configuration", "paper_scale_value", "paper_scale_verdict"])
    table = pd.concat(frames, ignore_index=True)
    return (table[["paper", "claim", "configuration", "our_value", "verdict"]]
            .rename(columns={"our_value": "paper_scale_value", "verdict": "paper_scale_verdict"})
            .drop_duplicates(["paper", "claim", "configuration"]))
