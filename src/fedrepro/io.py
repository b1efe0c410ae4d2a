"""Atomic file writes: a half-written file never sits where a later step would trust it."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(final: str | Path, suffix: str | None = None):
    """Yield a temporary path beside `final`; move it into place only if the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=suffix or final.suffix + ".part", dir=final.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_csv(path: str | Path, frame) -> None:
    """Deterministic CSV (no index, fixed float format) so reruns are byte-identical."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.10g", lineterminator="\n")
