"""ImageNet preparation from (fake) ILSVRC2012 archives and the streaming image-folder batches."""

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from fedrepro.data.imagefolder import (
    TRAIN,
    VAL,
    EpochBatchSampler,
    ImageFiles,
    ImageTransform,
    NodeBatchSampler,
    QuadrantImages,
    SequentialBatches,
    center_crop_box,
    make_loader,
    node_batches,
    quadrants,
    random_resized_crop_box,
)
from fedrepro.data.loaders import ImageIndex, load_image_index
from fedrepro.data.prepare import prepare
from fedrepro.provenance.hashing import sha256_file
from fedrepro.registry.datasets import load_registry

REPO = Path(__file__).resolve().parents[2]


def _jpeg(rgb, size=(40, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, tuple(int(v) for v in rgb)).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def fake_ilsvrc(folder: Path, wnids_with_images: list[str], n_train: int = 3, n_val: int = 2) -> dict:
    """The three ILSVRC2012 files in their real layouts, at toy size: a devkit (meta.mat with 1000 leaf synsets
    and the validation ground truth), a train tar of per-class tars, a flat val tar.  Images of class c are a
    flat colour (c, 2c, 3c) so labels can be checked from pixels."""
    from scipy.io import savemat

    wnids = sorted(wnids_with_images + [f"n{90000000 + i:08d}" for i in range(1000 - len(wnids_with_images))])
    synsets = np.zeros((1000,), dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O")])
    perm = np.random.default_rng(0).permutation(1000)              # IDs not in WNID order, as in the real devkit
    for i, w in enumerate(wnids):
        synsets[i] = (int(perm[i]) + 1, w)
    meta = io.BytesIO()
    savemat(meta, {"synsets": synsets})
    id_of = {w: int(perm[i]) + 1 for i, w in enumerate(wnids)}
    colour = {w: (10 * k + 10, 20 * k + 5, 7 * k) for k, w in enumerate(wnids_with_images)}
    val_truth = []
    with tarfile.open(folder / "ILSVRC2012_devkit_t12.tar.gz", "w:gz") as dev:
        _add(dev, "ILSVRC2012_devkit_t12/data/meta.mat", meta.getvalue())
        vals = [w for w in wnids_with_images for _ in range(n_val)] + [wnids[-1]]    # one val image of a dropped class
        val_truth = [id_of[w] for w in vals]
        _add(dev, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt",
             "".join(f"{i}\n" for i in val_truth).encode())
    with tarfile.open(folder / "ILSVRC2012_img_train.tar", "w") as outer:
        for w in wnids_with_images:
            inner = io.BytesIO()
            with tarfile.open(fileobj=inner, mode="w") as t:
                for j in range(n_train):
                    _add(t, f"{w}_{j}.JPEG", _jpeg(colour[w]))
            _add(outer, f"{w}.tar", inner.getvalue())
    with tarfile.open(folder / "ILSVRC2012_img_val.tar", "w") as val:
        for j, w in enumerate(vals):
            _add(val, f"ILSVRC2012_val_{j + 1:08d}.JPEG", _jpeg(colour.get(w, (0, 0, 0))))
    return colour


@pytest.fixture(scope="module")
def imagenet100_from_archives(tmp_path_factory):
    """ImageNet-100 prepared by the real code path from fake archives holding 3 of its classes and one other."""
    reg = load_registry(REPO)
    ds = reg["imagenet100"]
    keep = list(ds.prepare["classes"][:3])
    tmp = tmp_path_factory.mktemp("ilsvrc")
    colour = fake_ilsvrc(tmp, keep + ["n99999999"])
    # a manifest as acquire() records it: prepare re-checks size and sha256 before trusting the bytes
    files = {n: {"path": str(tmp / n), "source": "user-folder", "size": (tmp / n).stat().st_size,
                 "sha256": sha256_file(tmp / n)}
             for n in ("ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12.tar.gz")}
    out = tmp / "prepared"
    res = prepare(ds, {"status": "real", "files": files, "location": str(tmp)}, out)
    return load_image_index(res.outputs[0]), colour, ds.prepare["classes"]


def test_prepare_imagenet_keeps_the_subset_with_devkit_labels(imagenet100_from_archives):
    idx, colour, classes = imagenet100_from_archives
    assert idx.status == "real" and list(idx.classes) == list(classes)
    assert (idx.split == TRAIN).sum() == 9 and (idx.split == VAL).sum() == 6      # class n99999999 dropped
    for path, label in zip(idx.paths, idx.labels):
        wnid = classes[label]
        assert Path(path).parent.name == wnid
        pixel = np.asarray(Image.open(path).convert("RGB"))[15, 20].astype(int)
        assert np.abs(pixel - np.array(colour[wnid])).max() <= 3                   # JPEG rounding


def test_image_files_decode_with_labels(imagenet100_from_archives):
    idx, colour, classes = imagenet100_from_archives
    ds = ImageFiles(idx, VAL, ImageTransform(size=16, train=False))
    x, y = ds[(0, 0)]
    assert x.shape == (3, 16, 16) and x.dtype == torch.float32
    want = (torch.tensor(colour[classes[y]]) / 255.0 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor(
        [0.229, 0.224, 0.225])
    assert torch.allclose(x.mean(dim=(1, 2)), want, atol=0.06)


def test_random_resized_crop_box_stays_in_range():
    rng = np.random.default_rng(1)
    for w, h in ((500, 375), (64, 64), (30, 200)):
        for _ in range(200):
            left, top, cw, ch = random_resized_crop_box(w, h, rng)
            assert 0 <= left and left + cw <= w and 0 <= top and top + ch <= h and cw > 0 and ch > 0
    # the fallback for an extreme aspect ratio is a central crop with ratio 3/4
    assert random_resized_crop_box(30, 2000, np.random.default_rng(0), scale=(0.99, 1.0)) == (0, 980, 30, 40)


def test_eval_transform_matches_torchvision_resize_center_crop():
    from torchvision import transforms as T

    yy, xx = np.mgrid[0:300, 0:420]
    arr = np.stack([(xx * 0.6) % 256, (yy * 0.8) % 256, (xx + yy) % 256], -1).astype(np.uint8)
    img = Image.fromarray(arr)
    ours = ImageTransform(size=224, train=False)(img)
    ref = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                     T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])(img)
    assert ours.shape == ref.shape == (3, 224, 224)
    assert (ours - ref).abs().mean() < 0.03                # one resample (ours) vs resize-then-crop
    assert center_crop_box(420, 300, 224, 256) == pytest.approx(((420 - 262.5) / 2, (300 - 262.5) / 2, 262.5, 262.5))


def _folder(tmp_path, n_per_class=6, classes=3, size=(48, 40)):
    rng = np.random.default_rng(0)
    paths, labels, split = [], [], []
    for c in range(classes):
        for j in range(n_per_class):
            p = tmp_path / f"c{c}_{j}.png"
            Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(p)
            paths.append(str(p)), labels.append(c), split.append(TRAIN if j < n_per_class - 1 else VAL)
    return ImageIndex(paths, np.array(labels), np.array(split), np.array([f"c{c}" for c in range(classes)]), "real")


def test_shared_quadrants_reassemble_the_full_crop(tmp_path):
    idx = _folder(tmp_path)
    tf = ImageTransform(size=32, train=True)
    full, y = ImageFiles(idx, TRAIN, tf)[(3, 12345)]
    quads, y2 = QuadrantImages(idx, TRAIN, tf, crop="shared")[(3, 12345)]
    assert y == y2 and quads.shape == (4, 3, 16, 16)
    assert torch.equal(quads, quadrants(full))
    top = torch.cat([quads[0], quads[1]], dim=-1)
    bottom = torch.cat([quads[2], quads[3]], dim=-1)
    assert torch.equal(torch.cat([top, bottom], dim=-2), full)
    indep, _ = QuadrantImages(idx, TRAIN, tf, crop="independent")[(3, 12345)]
    assert indep.shape == quads.shape and not torch.equal(indep, quads)
    # evaluation has no randomness: both crop modes give the centre crop's quadrants
    ev = ImageTransform(size=32, train=False)
    assert torch.equal(QuadrantImages(idx, VAL, ev, crop="independent")[(0, 1)][0],
                       quadrants(ImageFiles(idx, VAL, ev)[(0, 99)][0]))


def test_node_batch_sampler_walks_each_shard_once_per_epoch():
    shards = np.arange(24).reshape(3, 8)
    it = iter(NodeBatchSampler(shards, batch=3, seed=0))
    epochs = []
    for _ in range(2):
        steps = [next(it) for _ in range(3)]                    # ceil(8 / 3) = 3 steps, the last of 2 per node
        assert [len(s) for s in steps] == [9, 9, 6]
        per_node = [np.concatenate([np.array([p for p, _ in s]).reshape(3, -1)[i] for s in steps]) for i in range(3)]
        for i in range(3):
            assert sorted(per_node[i]) == list(shards[i])      # node i sees exactly its shard
        epochs.append(per_node)
    assert any(not np.array_equal(a, b) for a, b in zip(*epochs))   # reshuffled every epoch


def test_epoch_sampler_fixed_or_reshuffled():
    fixed = [p for b in EpochBatchSampler(10, 4, seed=3, shuffle=False, epochs=2) for p, _ in b]
    assert fixed[:10] == fixed[10:] and sorted(fixed[:10]) == list(range(10))
    moving = [p for b in EpochBatchSampler(10, 4, seed=3, shuffle=True, epochs=2) for p, _ in b]
    assert sorted(moving[:10]) == sorted(moving[10:]) == list(range(10)) and moving[:10] != moving[10:]
    assert len(EpochBatchSampler(10, 4, seed=3, epochs=2)) == 6
    assert [len(b) for b in SequentialBatches(10, 4)] == [4, 4, 2]


def test_node_batches_shapes_and_worker_invariance(tmp_path):
    idx = _folder(tmp_path)
    ds = ImageFiles(idx, TRAIN, ImageTransform(size=16, train=True))
    shards = np.arange(15)[np.random.default_rng(0).permutation(15)].reshape(3, 5)
    one = node_batches(ds, shards, batch=2, seed=7)
    x, y = next(one)
    assert x.shape == (3, 2, 3, 16, 16) and y.shape == (3, 2)
    for i in range(3):                                          # node i's labels come from its own shard
        assert set(y[i].tolist()) <= set(ds.labels[shards[i]].tolist())
    a = [next(one) for _ in range(4)]
    two = node_batches(ds, shards, batch=2, seed=7, workers=2)
    b = [next(two) for _ in range(5)][1:]
    for (xa, ya), (xb, yb) in zip(a, b):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_loader_labels_follow_positions(tmp_path):
    idx = _folder(tmp_path)
    ds = ImageFiles(idx, TRAIN, ImageTransform(size=16, train=False))
    xs, ys = zip(*make_loader(ds, SequentialBatches(len(ds), 4)))
    assert torch.cat(ys).tolist() == ds.labels.tolist()


def test_changed_images_are_found_by_the_build_check_and_by_audit(tmp_path):
    """The ImageNet stand-in (fewer classes) with its sidecar: blackened validation images stop a job that reads
    the index and fail `audit`, naming the folder; files only touched (same bytes) pass."""
    import copy
    import os

    from loopback import REPO
    from PIL import Image

    from fedrepro.data.prepare import prepare
    from fedrepro.provenance.audit import audit_paths
    from fedrepro.provenance.sidecar import write_sidecars
    from fedrepro.provenance.verify import InputDrift, verify_inputs
    from fedrepro.registry.datasets import Dataset, load_registry

    real = load_registry(REPO)["imagenet"]
    entry = copy.deepcopy(real.entry)
    entry["standin"]["params"]["n_classes"] = 12
    ds = Dataset("imagenet", entry)
    out = tmp_path / "results" / "data" / "imagenet"
    manifest = {"dataset": "imagenet", "status": "unavailable", "files": {}, "missing": list(ds.files),
                "attempts": []}
    result = prepare(ds, manifest, out, on_missing="standin")
    npz = out / "imagenet.npz"
    write_sidecars([npz], rule="data_prepare", data={"imagenet": result.status}, extra=result.extra)
    folders = result.extra["image_folders"]["folders"]
    assert "val/standin0003" in folders and folders["val/standin0003"]["files"] == 1
    verify_inputs([str(npz)])
    assert audit_paths([str(npz)], root=tmp_path).ok
    for png in sorted((out / "images" / "train").rglob("*.png"))[:3]:      # touched, same bytes: still fine
        os.utime(png, ns=(png.stat().st_atime_ns, png.stat().st_mtime_ns + 10**9))
    verify_inputs([str(npz)])
    for png in (out / "images" / "val").rglob("*.png"):
        Image.new("RGB", (32, 32)).save(png)
    with pytest.raises(InputDrift, match=r"image folder\(s\) changed since the index was made: .*images/val/standin"):
        verify_inputs([str(npz)])
    report = audit_paths([str(npz)], root=tmp_path)
    assert not report.ok and "images/val/standin0000" in report.drift[0]
    assert "--forcerun data_prepare" in report.repair[-1]
