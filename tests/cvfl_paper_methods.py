"""The paper's four compressors as the registry declares them (config/papers/cvfl.yaml, `methods:`), for tests."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def methods() -> dict:
    reg = yaml.safe_load((REPO / "config" / "papers" / "cvfl.yaml").read_text())
    return reg["experiments"]["mimic"]["configurations"]["as-stated"]["methods"]


def method(name: str) -> dict:
    """CvflConfig keywords of a registry method: CvflConfig(..., **method("vector"), b=2)."""
    spec = methods()[name]
    return {"method": name, "embedding": spec["compressor"], "server": spec.get("server")}
