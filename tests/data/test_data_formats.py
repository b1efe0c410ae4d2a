"""File formats: idx round trip, deterministic npz, packed text, restricted unpickling, .deb extraction."""

from __future__ import annotations

import gzip
import io
import lzma
import pickle
import tarfile

import numpy as np
import pytest

from fedrepro.data.extract import deb_members
from fedrepro.data.formats import (
    idx_images_bytes,
    idx_labels_bytes,
    load_npz,
    pack_strings,
    read_idx,
    safe_unpickle,
    save_npz,
    unpack_strings,
)
from fedrepro.data.verify import ChecksumMismatch


def test_idx_round_trip(tmp_path):
    x = np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28)
    (tmp_path / "i").write_bytes(idx_images_bytes(x))
    (tmp_path / "l").write_bytes(idx_labels_bytes(np.array([1, 2, 3])))
    assert np.array_equal(read_idx(tmp_path / "i"), x) and read_idx(tmp_path / "l").tolist() == [1, 2, 3]
    (tmp_path / "t").write_bytes(idx_images_bytes(x)[:-5])
    with pytest.raises(ValueError, match="header"):
        read_idx(tmp_path / "t")


def test_npz_is_deterministic_and_pickle_free(tmp_path):
    arrays = {"a": np.arange(5), "s": np.array(["x", "yz"])}
    save_npz(tmp_path / "1.npz", arrays)
    save_npz(tmp_path / "2.npz", arrays)
    assert (tmp_path / "1.npz").read_bytes() == (tmp_path / "2.npz").read_bytes()
    assert load_npz(tmp_path / "1.npz")["s"].tolist() == ["x", "yz"]


def test_packed_strings():
    s = ["", "héllo", "Ελληνικά", "x"]
    assert unpack_strings(*pack_strings(s)) == s


def test_safe_unpickle_allows_arrays_refuses_code():
    data = {"data": np.arange(6, dtype=np.uint8).reshape(2, 3), "labels": [1, 2]}
    out = safe_unpickle(pickle.dumps(data, protocol=2))
    assert np.array_equal(out["data"], data["data"])

    class Evil:
        def __reduce__(self):
            import os
            return (os.system, ("echo pwned",))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        safe_unpickle(pickle.dumps(Evil()))


def make_deb(path, members: dict):
    """A minimal .deb (ar archive with debian-binary, control.tar.xz, data.tar.xz)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    parts = [("debian-binary", b"2.0\n"), ("control.tar.xz", lzma.compress(b"")), ("data.tar.xz", lzma.compress(buf.getvalue()))]
    out = b"!<arch>\n"
    for name, data in parts:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode() + data + (b"\n" if len(data) % 2 else b"")
    path.write_bytes(out)


def test_deb_members_extracts_and_checks(tmp_path):
    raw = b"idx bytes" * 100
    deb = tmp_path / "p.deb"
    make_deb(deb, {"usr/share/d/f.gz": gzip.compress(raw)})
    out = deb_members(deb, {"f": {"path": "usr/share/d/f.gz", "decompress": "gzip"}}, tmp_path, ["f"])
    assert out["f"].read_bytes() == raw
    with pytest.raises(ChecksumMismatch):
        deb_members(deb, {"f": {"path": "usr/share/d/f.gz", "sha256": "0" * 64}}, tmp_path, ["f"])
