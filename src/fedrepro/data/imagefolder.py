"""Streaming image-folder batches (ImageNet, ImageNet-100 and their stand-ins) for torch training loops.

ImageNet does not fit in memory, so the prepared index (`load_image_index`) is decoded on the fly by a
torch DataLoader.  Two batch layouts:

  node batches      (n, B, 3, S, S): one minibatch per decentralized node from its own shard, each node
                    reshuffling its shard every epoch (thesis A-40, Fig. 3.1);
  quadrant batches  (4, B, 3, S/2, S/2): one image cut into a 2x2 grid, one quadrant per C-VFL party
                    (cvfl §5.A.4, Fig. D.8).

Augmentation is the standard ImageNet recipe (RandomResizedCrop(S) scale (0.08, 1), ratio (3/4, 4/3), with a
horizontal flip; evaluation: Resize(S*256/224) then CenterCrop(S); mean/std normalization).  Every random draw
comes from a per-sample seed that the sampler (main process) hands to the dataset together with the index, so a
run is reproducible whatever the number of loader workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from fedrepro.data.loaders import ImageIndex

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
TRAIN, VAL = 0, 1


# ---- transforms ------------------------------------------------------------------------------------------

def random_resized_crop_box(width: int, height: int, rng: np.random.Generator, scale=(0.08, 1.0),
                            ratio=(3 / 4, 4 / 3)) -> tuple[int, int, int, int]:
    """torchvision's RandomResizedCrop.get_params, drawn from `rng`: (left, top, w, h).  Ten tries at a random
    area fraction and log-uniform aspect ratio; otherwise the largest central crop with a ratio in range."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1)), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def center_crop_box(width: int, height: int, size: int, resize: int) -> tuple[float, float, float, float]:
    """The region of the original image that Resize(resize) (shorter side) + CenterCrop(size) keeps."""
    s = resize / min(width, height)
    side = size / s
    return (width - side) / 2, (height - side) / 2, side, side


@dataclass(frozen=True)
class ImageTransform:
    """train: RandomResizedCrop(size) + horizontal flip; eval: Resize(resize) + CenterCrop(size); then
    ToTensor and ImageNet mean/std normalization.  `__call__(img, rng)` -> float32 (3, size, size)."""
    size: int = 224
    train: bool = True
    resize: int | None = None       # eval only; default size * 256 / 224

    def crop(self, img: Image.Image, rng: np.random.Generator | None, flip: bool = True) -> Image.Image:
        w, h = img.size
        if self.train:
            left, top, cw, ch = random_resized_crop_box(w, h, rng)
            out = img.resize((self.size, self.size), Image.BILINEAR, box=(left, top, left + cw, top + ch))
            return out.transpose(Image.FLIP_LEFT_RIGHT) if flip and rng.random() < 0.5 else out
        left, top, cw, ch = center_crop_box(w, h, self.size, self.resize or round(self.size * 256 / 224))
        return img.resize((self.size, self.size), Image.BILINEAR, box=(left, top, left + cw, top + ch))

    def __call__(self, img: Image.Image, rng: np.random.Generator | None = None) -> torch.Tensor:
        return to_normalized_tensor(self.crop(img, rng))


_MEAN = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
_STD = torch.tensor(IMAGENET_STD).view(3, 1, 1)


def to_normalized_tensor(img: Image.Image) -> torch.Tensor:
    x = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1).float().div_(255.0)
    return (x - _MEAN) / _STD


def quadrants(x: torch.Tensor) -> torch.Tensor:
    """(3, S, S) -> (4, 3, S/2, S/2): top-left, top-right, bottom-left, bottom-right (party 0..3)."""
    c, h, w = x.shape
    return x.view(c, 2, h // 2, 2, w // 2).permute(1, 3, 0, 2, 4).reshape(4, c, h // 2, w // 2)


# ---- datasets (index + per-sample seed -> tensors) ---------------------------------------------------------

class ImageFiles(torch.utils.data.Dataset):
    """The images of one split of an ImageIndex.  Items are addressed by (position, seed) pairs; the seed drives
    the augmentation, so workers need no shared RNG state."""

    def __init__(self, index: ImageIndex, split: int, transform: ImageTransform):
        sel = np.flatnonzero(np.asarray(index.split) == split)
        if not len(sel):
            raise ValueError(f"the image index has no {'train' if split == TRAIN else 'val'} images")
        self.paths = [index.paths[i] for i in sel]
        self.labels = np.asarray(index.labels)[sel]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def open(self, i: int) -> Image.Image:
        with Image.open(self.paths[i]) as img:
            return img.convert("RGB")

    def __getitem__(self, key):
        i, seed = key if isinstance(key, tuple) else (key, 0)
        rng = np.random.default_rng(seed)
        return self.transform(self.open(i), rng), int(self.labels[i])


class QuadrantImages(ImageFiles):
    """C-VFL ImageNet-100 parties: each item is (4, 3, S/2, S/2).  crop "shared" (A-18): one RandomResizedCrop and
    one flip of the whole image, then the 2x2 grid.  crop "independent" (the authors' code): each party draws its
    own RandomResizedCrop(S) and flip and keeps its own quadrant of it."""

    def __init__(self, index: ImageIndex, split: int, transform: ImageTransform, crop: str = "shared"):
        if crop not in ("shared", "independent"):
            raise ValueError(f"crop must be 'shared' or 'independent', got {crop!r}")
        if transform.size % 2:
            raise ValueError(f"image size {transform.size} does not split into 2x2 quadrants")
        super().__init__(index, split, transform)
        self.crop = crop

    def __getitem__(self, key):
        i, seed = key if isinstance(key, tuple) else (key, 0)
        rng = np.random.default_rng(seed)
        img = self.open(i)
        if self.crop == "shared" or not self.transform.train:
            return quadrants(self.transform(img, rng)), int(self.labels[i])
        parts = []
        for m in range(4):                               # crop, keep quadrant m, then flip the quadrant
            q = quadrants(to_normalized_tensor(self.transform.crop(img, rng, flip=False)))[m]
            parts.append(q.flip(-1) if rng.random() < 0.5 else q)
        return torch.stack(parts), int(self.labels[i])


# ---- samplers (main process: which positions, with which seeds) ---------------------------------------------

class NodeBatchSampler:
    """Node-major batches for n decentralized nodes: shards (n, m) of positions; every node walks a fresh
    permutation of its shard each epoch in steps of `batch` (the last step of an epoch is shorter, A-40).
    Yields lists of n * b (position, seed) pairs, node 0's b first."""

    def __init__(self, shards: np.ndarray, batch: int, seed: int):
        self.shards = np.asarray(shards)
        self.batch = int(batch)
        self.rng = np.random.default_rng(seed)
        self.steps_per_epoch = -(-self.shards.shape[1] // self.batch)

    def __iter__(self):
        n, m = self.shards.shape
        while True:
            perm = np.argsort(self.rng.random((n, m)), axis=1)          # one permutation per node
            order = np.take_along_axis(self.shards, perm, axis=1)
            for s in range(0, m, self.batch):
                block = order[:, s:s + self.batch].reshape(-1)
                seeds = self.rng.integers(0, 2**63 - 1, size=block.size)
                yield list(zip(block.tolist(), seeds.tolist()))


class EpochBatchSampler:
    """Batches of B (position, seed) pairs over N items for a finite number of passes; reshuffled every epoch
    (shuffle=True) or one order drawn once (cvfl A-1)."""

    def __init__(self, n: int, batch: int, seed: int, shuffle: bool = True, epochs: int = 1):
        self.n, self.batch, self.shuffle, self.epochs = int(n), int(batch), shuffle, int(epochs)
        self.rng = np.random.default_rng(seed)
        self.fixed = self.rng.permutation(self.n)

    def __len__(self) -> int:
        return self.epochs * -(-self.n // self.batch)

    def __iter__(self):
        for _ in range(self.epochs):
            order = self.rng.permutation(self.n) if self.shuffle else self.fixed
            for s in range(0, self.n, self.batch):
                block = order[s:s + self.batch]
                yield list(zip(block.tolist(), self.rng.integers(0, 2**63 - 1, size=block.size).tolist()))


class SequentialBatches:
    """Evaluation: positions `subset` (default all) in order, in batches; no randomness."""

    def __init__(self, n: int, batch: int, subset: np.ndarray | None = None):
        self.positions = np.arange(n) if subset is None else np.asarray(subset)
        self.batch = int(batch)

    def __len__(self) -> int:
        return -(-len(self.positions) // self.batch)

    def __iter__(self):
        for s in range(0, len(self.positions), self.batch):
            yield [(int(i), 0) for i in self.positions[s:s + self.batch]]


def loader_workers(requested, threads) -> int:
    """The decoding processes a run may start: the `requested` number, within the `threads` its job was granted
    (one of them is the training process's own), so that a job never runs more processes than its CPU request
    covers (a 1-thread job decodes in its own process).  Workers change speed only, never the samples."""
    return max(0, min(int(requested or 0), int(threads) - 1))


def make_loader(dataset: torch.utils.data.Dataset, batch_sampler, workers: int = 0, pin_memory: bool = False):
    """A DataLoader over (position, seed) batches.  Workers only change speed, never the samples."""
    return torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler, num_workers=int(workers),
                                       pin_memory=pin_memory, persistent_workers=int(workers) > 0,
                                       prefetch_factor=4 if int(workers) > 0 else None)


def node_batches(dataset: ImageFiles, shards: np.ndarray, batch: int, seed: int, workers: int = 0,
                 pin_memory: bool = False):
    """An endless iterator of (x (n, b, 3, S, S), y (n, b)) node batches."""
    n = np.asarray(shards).shape[0]
    loader = make_loader(dataset, NodeBatchSampler(shards, batch, seed), workers, pin_memory)
    for x, y in loader:
        yield x.view(n, -1, *x.shape[1:]), y.view(n, -1)
