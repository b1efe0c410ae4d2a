"""Checksums: every byte the pipeline uses is compared with a published (or pinned) hash first."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Mapping

_CHUNK = 1 << 20


class ChecksumMismatch(ValueError):
    """A file's size or hash differs from the expected one.  The file has been (or must be) discarded."""

    def __init__(self, what: str, algo: str, expected, actual):
        self.what, self.algo, self.expected, self.actual = what, algo, expected, actual
        exp = " or ".join(expected) if isinstance(expected, (list, tuple)) else expected
        super().__init__(f"{what}: {algo} mismatch: expected {exp}, got {actual}")


def file_hashes(path: str | Path, algos=("sha256", "md5")) -> dict:
    """Hash a file once for several algorithms (one read)."""
    hs = {a: hashlib.new(a) for a in algos}
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            for h in hs.values():
                h.update(chunk)
    return {a: h.hexdigest() for a, h in hs.items()}


def bytes_hashes(data: bytes, algos=("sha256", "md5")) -> dict:
    return {a: hashlib.new(a, data).hexdigest() for a in algos}


def check(path: str | Path, expected: Mapping, what: str | None = None) -> dict:
    """Verify size/md5/sha256 of a file against `expected`; return the actual sha256/md5/size.

    Raises ChecksumMismatch naming the expected and the actual value.  Keys missing from
    `expected` are not checked (the caller pins the returned sha256 in that case).
    """
    path = Path(path)
    what = what or path.name
    size = path.stat().st_size
    if "size" in expected and int(expected["size"]) != size:
        raise ChecksumMismatch(what, "size", int(expected["size"]), size)
    actual = file_hashes(path)
    compare(actual, expected, what)
    return {"size": size, **actual}


def compare(actual: Mapping, expected: Mapping, what: str) -> None:
    for algo in ("md5", "sha256"):
        want = expected.get(algo)
        if want is None:
            continue
        accepted = [w.lower() for w in want] if isinstance(want, (list, tuple)) else [want.lower()]
        if actual[algo] not in accepted:
            raise ChecksumMismatch(what, algo, accepted if len(accepted) > 1 else accepted[0], actual[algo])


def has_checksum(expected: Mapping) -> bool:
    return bool(expected.get("md5") or expected.get("sha256"))


# ---- pins: sha256 recorded on first download for files without a published checksum --------------------

PINS_FILE = "pinned.sha256"


def read_pins(folder: str | Path) -> dict:
    """`sha256  name` lines (the sha256sum format), so `sha256sum -c pinned.sha256` also works by hand."""
    p = Path(folder) / PINS_FILE
    if not p.exists():
        return {}
    pins = {}
    for line in p.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(None, 1)
            pins[name.strip()] = digest
    return pins


def write_pins(folder: str | Path, pins: Mapping) -> None:
    from fedrepro.io import write_text

    lines = ["# sha256 recorded at first verified download (no published checksum); later runs must match.",
             "# To make a pin permanent, copy it into config/datasets.yaml as `sha256:` of that file."]
    lines += [f"{d}  {n}" for n, d in sorted(pins.items())]
    write_text(Path(folder) / PINS_FILE, "\n".join(lines) + "\n")


def expected_with_pin(expected: Mapping, name: str, pins: Mapping) -> dict:
    """The checks for a file: its published checksums, or else its pin (if any)."""
    exp = dict(expected)
    if not has_checksum(exp) and name in pins:
        exp["sha256"] = pins[name]
    return exp
