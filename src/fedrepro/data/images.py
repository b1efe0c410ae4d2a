"""Real image datasets: idx (MNIST family), CIFAR-10 batches, MVCNN 12-view renders, ImageNet archives."""

from __future__ import annotations

import io
import logging
import re
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from fedrepro.data.formats import pack_strings, read_idx, safe_unpickle
from fedrepro.data.verify import bytes_hashes, compare

log = logging.getLogger("fedrepro.data")


def prepare_idx(files: dict) -> dict:
    """The four idx files -> x_{train,test} (n, 28, 28) uint8, y_{train,test} int64."""
    return {
        "x_train": read_idx(files["train-images-idx3-ubyte"]),
        "y_train": read_idx(files["train-labels-idx1-ubyte"]).astype(np.int64),
        "x_test": read_idx(files["t10k-images-idx3-ubyte"]),
        "y_test": read_idx(files["t10k-labels-idx1-ubyte"]).astype(np.int64),
    }


def prepare_cifar10(tarball: Path, members: dict) -> dict:
    """cifar-10-python.tar.gz -> x (n, 32, 32, 3) uint8 HWC, y int64, class names; each batch's md5 checked
    before it is unpickled (and unpickling admits numpy arrays only)."""
    batches = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for name, spec in members.items():
            raw = tar.extractfile(name).read()
            compare(bytes_hashes(raw), spec, f"{tarball.name}:{name}")
            batches[name.rsplit("/", 1)[-1]] = safe_unpickle(raw)

    def stack(keys):
        x = np.concatenate([np.asarray(batches[k]["data"], dtype=np.uint8) for k in keys])
        y = np.concatenate([np.asarray(batches[k]["labels"], dtype=np.int64) for k in keys])
        return x.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy(), y

    x_train, y_train = stack([f"data_batch_{i}" for i in range(1, 6)])
    x_test, y_test = stack(["test_batch"])
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test,
            "classes": np.array(batches["batches.meta"]["label_names"])}


# ---- MVCNN renders -------------------------------------------------------------------------------------

_VIEW = re.compile(r"^(?P<obj>.+?)[_.-]?(?P<view>\d+)\.(png|jpg|jpeg)$", re.I)


class Archive:
    """Random access to the files of a tar (uncompressed is fastest) or zip archive, kept open while used."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if zipfile.is_zipfile(self.path):
            self._zip, self._tar = zipfile.ZipFile(self.path), None
            self.names = [i.filename for i in self._zip.infolist() if not i.is_dir()]
        else:
            self._zip, self._tar = None, tarfile.open(self.path)
            self._members = {m.name: m for m in self._tar.getmembers() if m.isfile()}
            self.names = list(self._members)

    def read(self, name: str) -> bytes:
        if self._zip is not None:
            return self._zip.read(name)
        return self._tar.extractfile(self._members[name]).read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        (self._zip or self._tar).close()


def modelnet_view_groups(names, classes, views: int) -> dict:
    """Group archive paths into objects: {(split, class, object): [view paths sorted by view index]}.

    Works for the MVCNN layouts (<class>/<train|test>/<object>_<view>.png, with or without a top folder);
    views are sorted numerically so that consecutive views are adjacent azimuths (cvfl A-5).
    """
    groups: dict = {}
    wanted = set(classes)
    for name in names:
        parts = Path(name).parts
        m = _VIEW.match(parts[-1]) if parts else None
        split = next((p for p in parts if p in ("train", "test")), None)
        cls = next((p for p in parts if p in wanted), None)
        if not (m and split and cls):
            continue
        groups.setdefault((split, cls, m["obj"]), []).append((int(m["view"]), name))
    out = {}
    for key, vs in groups.items():
        vs.sort()
        if len(vs) != views:
            log.warning("skipping %s: %d views instead of %d", key, len(vs), views)
            continue
        out[key] = [n for _, n in vs]
    return dict(sorted(out.items()))


def prepare_modelnet_views(archive: Path, classes, views: int, image_size: int) -> dict:
    """The 12-view render archive -> x_{train,test} (n, views, size, size) uint8 grey, y int64 (class index)."""
    from PIL import Image

    out = {}
    cls_index = {c: i for i, c in enumerate(classes)}
    with Archive(archive) as arc:
        groups = modelnet_view_groups(arc.names, classes, views)
        if not groups:
            raise ValueError(f"{archive.name}: no objects of classes {list(classes)} with {views} views found")
        for split in ("train", "test"):
            keys = [k for k in groups if k[0] == split]
            x = np.empty((len(keys), views, image_size, image_size), dtype=np.uint8)
            for i, key in enumerate(keys):                      # decoding is per file
                for v, name in enumerate(groups[key]):
                    img = Image.open(io.BytesIO(arc.read(name))).convert("L")
                    x[i, v] = np.asarray(img.resize((image_size, image_size), Image.BILINEAR))
            out[f"x_{split}"] = x
            out[f"y_{split}"] = np.array([cls_index[k[1]] for k in keys], dtype=np.int64)
            out[f"objects_{split}"] = np.array([k[2] for k in keys])
    out["classes"] = np.array(list(classes))
    return out


# ---- ImageNet ------------------------------------------------------------------------------------------

def _devkit_val_labels(devkit: Path) -> tuple[list[str], np.ndarray]:
    """(WNIDs by ILSVRC2012_ID, validation ground truth as ILSVRC2012_IDs) from the devkit."""
    from scipy.io import loadmat

    with tarfile.open(devkit, "r:gz") as tar:
        meta = next(m for m in tar if m.name.endswith("data/meta.mat"))
        gt = next(m for m in tar if m.name.endswith("ILSVRC2012_validation_ground_truth.txt"))
        synsets = loadmat(io.BytesIO(tar.extractfile(meta).read()), squeeze_me=True)["synsets"]
        truth = np.loadtxt(io.BytesIO(tar.extractfile(gt).read()), dtype=np.int64)
    ids = np.asarray([s[0] for s in synsets], dtype=np.int64)
    wnids = [str(s[1]) for s in synsets]
    by_id = {int(i): w for i, w in zip(ids, wnids)}
    return [by_id[i] for i in range(1, 1001)], truth


def prepare_imagenet(files: dict, out_dir: Path, classes=None) -> dict:
    """Extract ILSVRC2012 (or only `classes`) into out_dir/images/{train,val}/<wnid>/ and return the index.

    The archives were verified in place (data.credentials.imagenet); images are streamed out of the
    outer train tar (one inner tar per class) without unpacking anything else.
    """
    wnid_by_id, truth = _devkit_val_labels(Path(files["ILSVRC2012_devkit_t12.tar.gz"]))
    classes = list(classes) if classes is not None else sorted(wnid_by_id)
    keep = set(classes)
    cls_index = {c: i for i, c in enumerate(classes)}
    root = out_dir / "images"
    paths, labels, splits = [], [], []
    with tarfile.open(files["ILSVRC2012_img_train.tar"]) as outer:
        for m in outer:
            wnid = Path(m.name).stem
            if not (m.isfile() and wnid in keep):
                continue
            (root / "train" / wnid).mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=outer.extractfile(m)) as inner:
                for im in inner:
                    if im.isfile():
                        rel = f"train/{wnid}/{Path(im.name).name}"
                        (root / rel).write_bytes(inner.extractfile(im).read())
                        paths.append(rel), labels.append(cls_index[wnid]), splits.append(0)
    with tarfile.open(files["ILSVRC2012_img_val.tar"]) as val:
        members = sorted((m for m in val if m.isfile()), key=lambda m: m.name)
        for m, gt in zip(members, truth):               # val files are numbered in ground-truth order
            wnid = wnid_by_id[int(gt) - 1]
            if wnid in keep:
                rel = f"val/{wnid}/{Path(m.name).name}"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(val.extractfile(m).read())
                paths.append(rel), labels.append(cls_index[wnid]), splits.append(1)
    return folder_index(paths, labels, splits, classes)


def folder_index(paths, labels, splits, classes) -> dict:
    """The index both real and stand-in image folders use: packed relative paths, labels, split (0 train, 1 val)."""
    blob, offsets = pack_strings(paths)
    return {"path_blob": blob, "path_offsets": offsets, "labels": np.asarray(labels, dtype=np.int64),
            "split": np.asarray(splits, dtype=np.int8), "classes": np.array(list(classes)), "root": np.array("images")}
