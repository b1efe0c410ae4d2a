"""A changed file is never built upon: before a job reads its inputs, each one that has a sidecar must still
have the bytes its sidecar recorded, and a generated file (anything under results/ but the raw downloads) must
have a sidecar at all.  The error names the file, both hashes and the command that rebuilds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from fedrepro.provenance.hashing import sha256_file
from fedrepro.provenance.sidecar import SIDECAR_SUFFIX, read_sidecar

RAW_DOWNLOADS = ("results", "downloads")
DOWNLOAD_RECORDS = ("manifest.json",)     # made by the fetch rule beside the raw files, with a sidecar


def _relative(path: str | Path, root: Path) -> PurePosixPath:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(root.resolve())
        except ValueError:
            return PurePosixPath(p.as_posix())
    return PurePosixPath(p.as_posix())


def is_generated(path: str | Path, root: str | Path = ".") -> bool:
    """Made by a rule, so it must have a sidecar: anything under results/ except the raw files under
    results/downloads/ (which the fetch step's manifest vouches for instead)."""
    rel = _relative(path, Path(root))
    parts = rel.parts
    if not parts or parts[0] != "results" or rel.name.endswith(SIDECAR_SUFFIX):
        return False
    if parts[:2] == RAW_DOWNLOADS:
        return rel.name in DOWNLOAD_RECORDS
    return True


def _flatten(paths) -> list[str]:
    out = []
    for p in paths if not isinstance(paths, (str, Path)) else [paths]:
        if isinstance(p, (list, tuple)):
            out += _flatten(p)
        else:
            out.append(str(p))
    return out


@dataclass(frozen=True)
class Drift:
    """One file that must not be used: what is wrong, the hashes, and how to rebuild it."""

    path: str
    problem: str
    recorded: str | None = None
    actual: str | None = None
    rule: str | None = None

    def repair(self) -> str:
        delete = f"delete {self.path} (and {self.path}{SIDECAR_SUFFIX}) and rerun snakemake"
        if self.rule:
            # the target goes before --forcerun, whose list would swallow it
            return f"`snakemake --cores 1 {self.path} --forcerun {self.rule}`, or {delete}"
        return delete

    def __str__(self) -> str:
        hashes = f" (sidecar records sha256 {self.recorded}, the file now has {self.actual})" if self.recorded else ""
        return f"{self.path}: {self.problem}{hashes}; rebuild it: {self.repair()}"


class InputDrift(RuntimeError):
    """An input changed since it was made (or lost its sidecar); the job stops before reading it."""

    def __init__(self, drifts: list[Drift]):
        self.drifts = drifts
        head = "an input of this job cannot be trusted" if len(drifts) == 1 else \
            f"{len(drifts)} inputs of this job cannot be trusted"
        super().__init__(head + ":\n" + "\n".join(f"  - {d}" for d in drifts))


def check_file(path: str | Path, root: str | Path = ".") -> Drift | None:
    """The drift of one existing file against its own sidecar (None: fine, or a file that needs no sidecar)."""
    root = Path(root)
    p = Path(path) if Path(path).is_absolute() else root / path
    if not p.is_file():
        return None                   # a missing input is Snakemake's business (it says which rule makes it)
    sc = read_sidecar(p)
    if sc is None:
        if is_generated(path, root):
            return Drift(str(path), "a generated file without its sidecar (.prov.json): where it came from is "
                                    "unknown")
        return None
    actual = sha256_file(p)
    if sc.get("sha256") != actual:
        return Drift(str(path), "bytes changed since it was made", sc.get("sha256"), actual, sc.get("rule"))
    folders = (sc.get("extra") or {}).get("image_folders")
    if folders:
        from fedrepro.provenance.folders import changed_folders, describe

        if changed := changed_folders(p, folders, deep=False):
            return Drift(str(path), describe(changed), rule=sc.get("rule"))
    return None


def find_drift(paths: Iterable, root: str | Path = ".") -> list[Drift]:
    """Every file of `paths` whose bytes no longer match its sidecar, or that is generated and has none.
    Cheap (one hash per file, no walk up the chain): meant before each job, and for final artifacts in `all`."""
    drifts, seen = [], set()
    for path in _flatten(paths):
        if path in seen or path.endswith(SIDECAR_SUFFIX):
            continue
        seen.add(path)
        if (d := check_file(path, root)) is not None:
            drifts.append(d)
    return drifts


def verify_inputs(paths: Iterable, root: str | Path = ".") -> None:
    """Raise InputDrift (file, both hashes, the rebuild command) if any input changed since it was made.

    `paths` may be Snakemake's `input` (nested lists are flattened); inputs without a sidecar that are not
    generated (code, registry, raw downloads) pass: their content is covered by the sidecars of their consumers.
    """
    drifts = find_drift(paths, root)
    if drifts:
        raise InputDrift(drifts)
