"""Loaders of prepared data (results/data/<dataset>/<dataset>.npz): numpy arrays, torch on request.

Every loader takes the prepared file's path (what a rule lists as input) and returns a small
dataclass; `.status` is "real", "real-reencoded" (a lossy copy of the real images) or "stand-in", as the file's
sidecar says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedrepro.data.formats import load_npz, unpack_strings

DATA_ROOT = Path("results") / "data"


def prepared_path(dataset: str, root: str | Path = ".") -> Path:
    return Path(root) / DATA_ROOT / dataset / f"{dataset}.npz"


@dataclass
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    status: str
    classes: np.ndarray | None = None

    @property
    def n_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max()) + 1)


def _status(z: dict) -> str:
    return str(z.get("data_status", "real"))


def load_images(path: str | Path, *, scale: bool = False, channels_first: bool = False, flatten: bool = False) -> Split:
    """MNIST, Fashion-MNIST, CIFAR-10 (and their stand-ins): uint8 images, int64 labels.

    scale: float32 in [0, 1] (ToTensor's /255); channels_first: (n, C, H, W) (grey images get C=1);
    flatten: (n, H*W*C) rows for linear models (thesis Fig. 3.4, gcca)."""
    z = load_npz(path)

    def fix(x):
        if channels_first:
            x = x[:, None] if x.ndim == 3 else x.transpose(0, 3, 1, 2)
        # the layout copy on the uint8 images (4x fewer bytes than float32), then one float32 array divided in place:
        # the same values as (x / 255.0) of the float copy, without its two extra passes (CIFAR-10: 1.6-3.4 -> 0.3-0.6 s)
        x = np.ascontiguousarray(x)
        if scale:
            x = x.astype(np.float32)
            x /= np.float32(255.0)
        if flatten:
            x = x.reshape(len(x), -1)
        return x

    return Split(fix(z["x_train"]), z["y_train"], fix(z["x_test"]), z["y_test"], _status(z), z.get("classes"))


load_mnist = load_fashion_mnist = load_cifar10 = load_images


def load_multiview(path: str | Path, *, scale: bool = False) -> Split:
    """ModelNet10 12-view renders (or digits-multiview): x (n, views, H, W), views in azimuth order."""
    z = load_npz(path)
    f = (lambda x: x.astype(np.float32) / 255.0) if scale else (lambda x: x)
    return Split(f(z["x_train"]), z["y_train"], f(z["x_test"]), z["y_test"], _status(z), z.get("classes"))


def load_timeseries(path: str | Path) -> Split:
    """MIMIC-III IHM (or synthmimic): x (n, 48, 76) float32 normalized, y 0/1.  Validation stays, when the real
    data has them, are in the npz as x_val / y_val (C-VFL does not use them)."""
    z = load_npz(path)
    return Split(z["x_train"], z["y_train"], z["x_test"], z["y_test"], _status(z), None)


@dataclass
class ImageIndex:
    paths: list            # absolute paths of image files
    labels: np.ndarray
    split: np.ndarray      # 0 train, 1 val
    classes: np.ndarray    # WNIDs
    status: str


def load_image_index(path: str | Path) -> ImageIndex:
    """ImageNet / ImageNet-100 (real: extracted JPEGs; stand-in: PNGs) as an index of files."""
    path = Path(path)
    z = load_npz(path)
    root = path.parent / str(z["root"])
    rel = unpack_strings(z["path_blob"], z["path_offsets"])
    return ImageIndex([str(root / r) for r in rel], z["labels"], z["split"], z["classes"], _status(z))


@dataclass
class ParallelText:
    texts: dict            # language -> list of row-aligned strings
    split: np.ndarray      # 0 train, 1 test, -1 unused
    status: str

    def rows(self, which: int) -> dict:
        sel = np.flatnonzero(self.split == which)
        return {k: [v[i] for i in sel] for k, v in self.texts.items()}


def load_parallel_text(path: str | Path) -> ParallelText:
    z = load_npz(path)
    texts = {str(l): unpack_strings(z[f"text_{l}"], z[f"offsets_{l}"]) for l in z["languages"]}
    return ParallelText(texts, z["split"], _status(z))


@dataclass
class MultiViewMatrices:
    views: np.ndarray      # (n_views, rows, cols) counts
    labels: np.ndarray     # group of each row (rows sorted by group)
    row_codes: np.ndarray
    col_codes: np.ndarray
    status: str


def load_cooccurrence_views(path: str | Path) -> MultiViewMatrices:
    """DE-SynPUF (or its stand-in): three diagnosis x medicine count views, rows grouped by ICD-9 chapter."""
    z = load_npz(path)
    return MultiViewMatrices(z["views"], z["labels"], z["row_codes"], z["col_codes"], _status(z))


def to_torch(*arrays, dtype=None):
    """numpy -> torch without copying where possible (torch imported only here)."""
    import torch

    out = tuple(torch.from_numpy(np.ascontiguousarray(a)) if dtype is None else torch.as_tensor(a, dtype=dtype) for a in arrays)
    return out[0] if len(out) == 1 else out
