"""Content digests of image folders (ImageNet and its stand-ins): the files a prepared index points to.

A prepared image-folder dataset is an index (`<dataset>.npz`: paths and labels) over files that no sidecar
covers one by one.  Its sidecar records, under `extra.image_folders`, one entry per folder of files
(`train/<wnid>`, `val/<wnid>`): the sha256 of its sorted "name TAB sha256" lines, and a stamp (file count, bytes,
newest mtime).  A job that reads the index compares the stamps (one stat per file: milliseconds for thousands of
files) and re-hashes only a folder whose stamp moved; `audit` re-hashes every folder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

FIELD = "image_folders"


def _files(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as it:
        return sorted((e for e in it if e.is_file()), key=lambda e: e.name)


def _stamp(entries) -> dict:
    stats = [e.stat() for e in entries]
    return {"files": len(stats), "bytes": sum(s.st_size for s in stats),
            "mtime_ns": max((s.st_mtime_ns for s in stats), default=0)}


def _file_sha256(path: str) -> str:
    # image files are small: one read each (sha256_file's two stats and its cache cost more than the hash here)
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _tree_sha256(folder: Path, entries) -> str:
    lines = "".join(f"{e.name}\t{_file_sha256(e.path)}\n" for e in entries)
    return hashlib.sha256(lines.encode()).hexdigest()


def folder_digests(root: str | Path, relative_to: str | Path) -> dict:
    """The sidecar record of every folder of files below `root` (its path stored relative to `relative_to`,
    the folder of the index file)."""
    root = Path(root)
    folders = {}
    for here, _dirs, files in sorted(os.walk(root)):
        if files:
            entries = _files(Path(here))
            folders[Path(here).relative_to(root).as_posix()] = {**_stamp(entries),
                                                                "sha256": _tree_sha256(Path(here), entries)}
    return {"root": Path(os.path.relpath(root, relative_to)).as_posix(), "folders": folders}


def changed_folders(index_file: str | Path, record: dict, *, deep: bool) -> list[str]:
    """The folders (as paths) whose files differ from `record` (the index sidecar's `extra.image_folders`).

    deep=False: only a folder whose stamp (count, bytes, newest mtime) moved is re-hashed, so an untouched tree
    costs one stat per file; deep=True (audit): every folder is re-hashed."""
    root = Path(index_file).parent / record["root"]
    changed = []
    for rel, want in record["folders"].items():
        folder = root / rel
        if not folder.is_dir():
            changed.append(f"{folder.as_posix()} (missing)")
            continue
        entries = _files(folder)
        if not deep and _stamp(entries) == {k: want[k] for k in ("files", "bytes", "mtime_ns")}:
            continue
        if _tree_sha256(folder, entries) != want["sha256"]:
            changed.append(folder.as_posix())
    return changed


def describe(changed: list[str]) -> str:
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return f"image folder(s) changed since the index was made: {shown}"
