"""Content hashes: files, the library source tree, and resolved configuration subsets."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

_CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def hash_tree(root: str | Path, pattern: str = "*.py") -> str:
    """One hash over every matching file below root: relative path and content, in sorted order."""
    root = Path(root)
    h = hashlib.sha256()
    for p in sorted(root.rglob(pattern)):
        if "__pycache__" in p.parts:
            continue
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(sha256_file(p).encode())
    return h.hexdigest()


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def hash_config(cfg) -> str:
    return hashlib.sha256(canonical_json(cfg).encode()).hexdigest()
