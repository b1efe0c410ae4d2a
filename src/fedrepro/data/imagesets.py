"""Image-folder sets: a dataset as one image file per picture, `<root>/<split>/<class>/<name>.<png|jpg>`.

Source kind `imagefolder` of config/datasets.yaml (CIFAR-10).  The set is a folder or an archive of one (.tar,
.tar.gz, .zip: a JPEG mirror of CIFAR-10, Kaggle's PNG folder), at the path the user names in config/config.yaml
under `data.images.<key>`.  It is accepted only when its sha256 is one of the source's known `sets:` (an archive:
the sha256 of its bytes; a folder: `tree_sha256`, the sha256 of its sorted file list with each file's sha256), and
each known set says its data kind:

  real            the official pixels (a lossless PNG export)
  real-reencoded  the real images through a lossy codec (every pixel off by the JPEG error): judged like real
                  data, with the caveat carried to every claim and figure
  (stand-in is what the dataset's `standin:` generator makes when no source works)

`prepare_imageset` decodes every image into the same arrays the official archive gives (x uint8 (n, H, W, 3),
y int64 in the official class order, class names), then puts each split into a fixed pseudo-random order: the files
are numbered per class, and an array sorted by class would hand every "first n" subset a single class.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np

from fedrepro.data.verify import ChecksumMismatch, file_hashes

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


class ImageSetError(ValueError):
    """The configured image set is missing, unknown or malformed; the message says what to do."""


# ---- identity ----------------------------------------------------------------------------------------------

def tree_sha256(folder: str | Path) -> tuple[str, int]:
    """sha256 of a folder's sorted 'relative/path<TAB>sha256<LF>' lines (every file), and the total bytes."""
    folder = Path(folder)
    lines, total = [], 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            lines.append(f"{rel}\t{file_hashes(path, ('sha256',))['sha256']}\n")
            total += path.stat().st_size
    digest = hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()
    return digest, total


def set_hashes(path: str | Path) -> dict:
    """{'sha256', 'size'} of an archive (its bytes) or a folder (`tree_sha256`)."""
    path = Path(path)
    if path.is_dir():
        digest, size = tree_sha256(path)
        return {"sha256": digest, "size": size}
    return {"sha256": file_hashes(path, ("sha256",))["sha256"], "size": path.stat().st_size}


def identify(path: str | Path, sets: dict, what: str) -> tuple[str, dict, dict]:
    """The known set `path` is: (its name in `sets`, its registry entry, its hashes).  Raises ImageSetError."""
    path = Path(path)
    if not path.exists():
        raise ImageSetError(f"{what}: {path} does not exist")
    actual = set_hashes(path)
    for name, spec in sets.items():
        if actual["sha256"] == spec["sha256"].lower():
            if "size" in spec and int(spec["size"]) != actual["size"]:
                raise ChecksumMismatch(f"{what}: {path}", "size", int(spec["size"]), actual["size"])
            return name, spec, actual
    known = ", ".join(f"{n} ({s['sha256'][:12]}...)" for n, s in sets.items())
    raise ImageSetError(f"{what}: {path} has sha256 {actual['sha256']}, which is none of the known sets ({known}). "
                        f"If these are the right images, add the hash under the source's sets: in config/datasets.yaml "
                        f"with their data kind (real for the official pixels, real-reencoded for a lossy copy)")


# ---- reading -----------------------------------------------------------------------------------------------

def _members(path: Path):
    """(posix relative name, bytes) of every image file of a folder or archive, in name order."""
    if path.is_dir():
        names = sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                       if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        for name in names:
            yield name, (path / name).read_bytes()
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            for name in sorted(n for n in zf.namelist() if n.lower().endswith(IMAGE_SUFFIXES)):
                yield name, zf.read(name)
    else:
        with tarfile.open(path, "r:*") as tf:
            found = [(m.name, tf.extractfile(m).read()) for m in tf
                     if m.isfile() and m.name.lower().endswith(IMAGE_SUFFIXES)]
        yield from sorted(found)


def _locate(name: str, splits: dict, classes: list) -> tuple[str, int] | None:
    """(split, class index) from '<...>/<split>/<class>/<file>'; None for a file outside that layout."""
    parts = PurePosixPath(name).parts
    if len(parts) < 3 or parts[-3] not in splits or parts[-2] not in classes:
        return None
    return parts[-3], classes.index(parts[-2])


def jpeg_frame(raw: bytes) -> tuple[int, int] | None:
    """(sample precision, colour components) from a JPEG's frame header (SOFn); None for anything else."""
    if raw[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 4 <= len(raw) and raw[i] == 0xFF:
        marker = raw[i + 1]
        if marker == 0xFF:                                  # fill byte before a marker
            i += 1
            continue
        if marker == 0xDA:                                  # scan data before any frame header: not a valid JPEG
            return None
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC) and i + 9 < len(raw):
            return raw[i + 4], raw[i + 9]                  # FF Cn, length (2), precision, height (2), width (2), Nf
        i += 2 + int.from_bytes(raw[i + 2:i + 4], "big")    # any other segment: marker + its length
    return None


def decode_rgb(raws: list[bytes]) -> list[np.ndarray]:
    """Each image as the (H, W, 3) uint8 array that PIL's ``Image.open(...).convert("RGB")`` gives.

    8-bit grey and three-component JPEGs are decoded in one call to torchvision's ``decode_jpeg``: libjpeg-turbo, as
    inside PIL, with the same colour conversion and upsampling, so the same pixels (checked on all 60,000 images of
    the CIFAR-10 JPEG mirror, and in tests/data/test_data_imagesets.py) in a third of the time.  Every other file
    goes through PIL: PNGs, 12-bit JPEGs, and CMYK ones (torchvision converts CMYK in its own code, which agreed with
    PIL on the tests' files, but nothing promises that)."""
    from PIL import Image

    fast = [i for i, raw in enumerate(raws) if jpeg_frame(raw) in ((8, 1), (8, 3))]
    out: list = [None] * len(raws)
    if fast:
        import torch
        from torchvision.io import ImageReadMode, decode_jpeg

        data = [torch.frombuffer(bytearray(raws[i]), dtype=torch.uint8) for i in fast]
        try:
            for i, img in zip(fast, decode_jpeg(data, mode=ImageReadMode.RGB)):
                out[i] = img.permute(1, 2, 0).numpy()
        except RuntimeError:         # a damaged file: PIL decodes the others and raises (or not) on it, as before
            out = [None] * len(raws)
    for i, raw in enumerate(raws):
        if out[i] is None:
            with Image.open(io.BytesIO(raw)) as im:
                out[i] = np.asarray(im.convert("RGB"), dtype=np.uint8)
    return out


def prepare_imageset(path: str | Path, layout: dict) -> dict:
    """Decode a set into x_<split> (n, H, W, 3) uint8, y_<split> int64 and `classes`.

    `layout`: classes (official label order), per_class {split: images per class}, image_size [H, W], order_seed.
    Every split must hold exactly per_class images of every class, each of size image_size (else ImageSetError)."""
    path = Path(path)
    classes, per_class = list(layout["classes"]), dict(layout["per_class"])
    H, W = layout["image_size"]
    members: dict = {s: [] for s in per_class}      # per split: indices into names / raws
    labels: dict = {s: [] for s in per_class}
    names, raws, skipped = [], [], 0
    for name, raw in _members(path):
        where = _locate(name, per_class, classes)
        if where is None:
            skipped += 1
            continue
        names.append(name)
        raws.append(raw)
        labels[where[0]].append(where[1])
        members[where[0]].append(len(raws) - 1)
    decoded = decode_rgb(raws)
    for name, x in zip(names, decoded):
        if x.shape != (H, W, 3):
            raise ImageSetError(f"{path}: {name} is {x.shape[1]}x{x.shape[0]}, not {W}x{H}")
    images = {split: [decoded[i] for i in idx] for split, idx in members.items()}
    out = {"classes": np.array(classes)}
    for split, n in per_class.items():
        y = np.asarray(labels[split], dtype=np.int64)
        counts = np.bincount(y, minlength=len(classes))
        if len(y) == 0 or not np.all(counts == n):
            raise ImageSetError(f"{path}: split {split!r} has {counts.tolist()} images per class ({classes}); "
                                f"expected {n} each ({skipped} files outside <split>/<class>/ skipped)")
        order = np.random.default_rng([int(layout.get("order_seed", 0)), len(y)]).permutation(len(y))
        out[f"x_{split}"] = np.stack(images[split])[order]
        out[f"y_{split}"] = y[order]
    return out
