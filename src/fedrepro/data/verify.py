"""Checksums: every byte the pipeline uses is compared with a published (or pinned) hash first."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

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


# ---- format checks: a file without a published checksum is read whole before its hash is trusted ---------

def _drain(stream) -> None:
    while stream.read(_CHUNK):
        pass


def _check_tar(path: Path) -> None:
    import io
    import tarfile

    with tarfile.open(path, "r:*") as tf:      # decompresses every byte: a truncated .tgz raises EOFError
        for member in tf:
            if member.isfile():
                _drain(tf.extractfile(member))
        if not isinstance(tf.fileobj, io.BufferedReader):
            return                             # .tgz/.tbz2/.txz: the compressed stream's own end was checked
        # tarfile ends its listing silently where the bytes end; a complete archive ends with a zero block
        # (end-of-archive marker), a plain .tar cut at a 512-byte boundary between members does not
        tf.fileobj.seek(tf.offset)
        if tf.fileobj.read(tarfile.BLOCKSIZE) != bytes(tarfile.BLOCKSIZE):
            raise EOFError(f"no end-of-archive block after {len(tf.members)} members (cut off at byte {tf.offset}?)")


def _check_zip(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path) as zf:          # no central directory (a cut-off zip) raises BadZipFile
        bad = zf.testzip()                     # reads every member and checks its CRC
        if bad is not None:
            raise ValueError(f"member {bad} is corrupt (CRC mismatch)")
        if path.suffix == ".npz":
            import numpy as np

            with np.load(path, allow_pickle=False) as z:
                for key in z.files:
                    z[key]


def _check_stream(path: Path, opener) -> None:
    with opener(path, "rb") as f:
        _drain(f)


def _check_csv(path: Path) -> None:
    import csv

    with open(path, newline="", encoding="utf-8", errors="strict") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if not header:
            raise ValueError("empty CSV")
        for i, row in enumerate(rows, start=2):
            if row and len(row) != len(header):
                raise ValueError(f"line {i} has {len(row)} fields, the header {len(header)} (cut off?)")


def _check_npy(path: Path) -> None:
    import numpy as np

    np.load(path, allow_pickle=False)


def _check_json(path: Path) -> None:
    import json

    json.loads(path.read_text(encoding="utf-8"))


def _check_idx(path: Path) -> None:
    from fedrepro.data.formats import read_idx

    read_idx(path)


def _format_checker(name: str):
    import bz2
    import gzip
    import lzma

    low = name.lower()
    if low.endswith((".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")):
        return "tar archive", _check_tar
    if low.endswith((".zip", ".npz", ".whl")):
        return "zip archive", _check_zip
    for ext, opener in ((".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)):
        if low.endswith(ext):
            return f"{ext[1:]} stream", lambda p, o=opener: _check_stream(p, o)
    if low.endswith(".csv"):
        return "CSV table", _check_csv
    if low.endswith(".npy"):
        return "npy array", _check_npy
    if low.endswith(".json"):
        return "JSON document", _check_json
    if low.endswith("-ubyte"):
        return "idx file", _check_idx
    return None, None


def format_problem(path: str | Path, name: str | None = None) -> str | None:
    """Why `path` is not a complete file of the kind its name says, or None when it reads whole.

    Archives are listed and every member decompressed, zips CRC-checked, npz/npy loaded, CSVs parsed (every row
    as wide as the header; a cut inside a row's last field cannot be seen), gz/bz2/xz streams decompressed to
    the end.  A name without a known extension only
    gets the HTML-page check.  Used before pinning a file that has no published checksum.
    """
    path = Path(path)
    name = name or path.name
    with open(path, "rb") as f:
        head = f.read(512)
    if not head:
        return "an empty file"
    if head.lstrip()[:1] == b"<" and b"html" in head.lower():
        return "an HTML page, not data"
    kind, checker = _format_checker(name)
    if checker is None:
        return None
    try:
        checker(path)
    except Exception as exc:  # noqa: BLE001 - any failure to read it whole means: not a complete file
        return f"not a complete {kind} ({type(exc).__name__}: {exc})"
    return None


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
