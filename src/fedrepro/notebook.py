"""Helpers for the parameterized notebooks: default paths when a notebook is opened by hand."""

from __future__ import annotations

from pathlib import Path


def repo_root(start: str | Path | None = None) -> Path:
    """The directory holding the Snakefile, searched upwards from `start` (default: the working directory)."""
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "Snakefile").exists() and (p / "config" / "papers").is_dir():
            return p
    raise FileNotFoundError(f"no fedrepro checkout (a Snakefile beside config/papers) above {here}")


def default_outputs(root: Path, scale: str, paper: str, artifact: str, kind: str) -> dict[str, str]:
    """Where an artifact goes when the notebook runs by hand: a scratch folder, never the tracked outputs."""
    base = root / "results" / scale / paper / "scratch" / artifact
    suffixes = ("csv", "md") if kind == "table" else ("csv", "pdf", "png")
    return {s: str(base.with_suffix("." + s)) for s in suffixes}


def data_status(root: str | Path, run_files) -> dict:
    """dataset -> 'real' | 'stand-in' over the runs' sidecars (what the artifact's own sidecar will say)."""
    from fedrepro.provenance.sidecar import inherited_data_status

    return inherited_data_status([Path(root) / f for f in run_files])


def uses_stand_in(root: str | Path, run_files) -> bool:
    """True when any input run was made from stand-in data: the figure must then carry the mark."""
    return any(v == "stand-in" for v in data_status(root, run_files).values())
