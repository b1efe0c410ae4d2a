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
