"""Batch sources: where a C-VFL run's minibatches come from (Algorithm 1, cvfl:A-1, App. C.3).

A source is an iterable; one iteration is one pass over its samples (a training epoch, or one sweep of an
evaluation set) and yields ``(x, y)`` with ``x`` party-stacked, shape (M, B, ...), and ``y`` the B labels.
``n`` is the number of samples of a pass and ``len(source)`` its number of batches, ceil(n / B).

- ``TensorBatches``   in-memory party-stacked tensors (M, N, ...): one fixed order drawn once and reused every
                      epoch (A-1, the authors' MIMIC / CIFAR / ModelNet code), a fresh order every epoch, or
                      index order in chunks (evaluation).
- ``QuadrantBatches`` ImageNet-100 quadrants (§5.A.4) decoded on the fly from an image folder by a torch
                      DataLoader (``fedrepro.data.imagefolder``): (4, B, 3, S/2, S/2) per batch, reshuffled every
                      epoch ([C]) or one fixed order, with fresh augmentation draws every epoch; evaluation
                      sweeps the split in order with the deterministic eval transform.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np
import torch

from fedrepro.data.imagefolder import EpochBatchSampler, QuadrantImages, SequentialBatches, make_loader


class BatchSource(Protocol):
    n: int

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]: ...


def quadrant_crop_flip(x: torch.Tensor, gen: torch.Generator, pad: int = 4, fill: float = -1.0) -> torch.Tensor:
    """CIFAR-10's training augmentation on party-stacked quadrants (cvfl §5.A.2, [C]): RandomCrop(H, padding=pad)
    and RandomHorizontalFlip of the *whole* image, one draw per image, then the quadrants again, so every party
    sees its part of the same augmented image.  x: (4, B, C, h, w); `fill` is the padding after
    Normalize(0.5, 0.5) (a black pixel is -1)."""
    top = torch.cat([x[0], x[1]], dim=-1)
    full = torch.cat([top, torch.cat([x[2], x[3]], dim=-1)], dim=-2)             # (B, C, 2h, 2w)
    B, C, H, W = full.shape
    padded = torch.nn.functional.pad(full, (pad, pad, pad, pad), value=fill)
    dy, dx = (torch.randint(0, 2 * pad + 1, (B,), generator=gen).to(x.device) for _ in range(2))
    flip = (torch.rand(B, generator=gen) < 0.5).to(x.device)
    rows = dy[:, None] + torch.arange(H, device=x.device)                          # (B, H)
    cols = dx[:, None] + torch.arange(W, device=x.device)                          # (B, W)
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    b = torch.arange(B, device=x.device)[:, None, None]
    crop = padded.permute(0, 2, 3, 1)[b, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)
    h, w = H // 2, W // 2
    return torch.stack([crop[..., :h, :w], crop[..., :h, w:], crop[..., h:, :w], crop[..., h:, w:]])


class TensorBatches:
    """Batches of in-memory party-stacked tensors ``x`` (M, N, ...) and labels ``y`` (N,).

    order: the batch order, used unchanged every pass (A-1); None: index order (evaluation chunks).
    shuffle_seed: instead draw a new order every pass from this seed (``reshuffle_each_epoch``).
    augment: applied to every training batch's x (e.g. ``quadrant_crop_flip`` bound to a generator)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch: int, order: np.ndarray | None = None,
                 shuffle_seed: int | None = None, augment=None) -> None:
        if x.shape[1] != y.shape[0]:
            raise ValueError(f"x holds {x.shape[1]} samples per party but y has {y.shape[0]} labels")
        self.x, self.y, self.batch, self.order, self.augment = x, y, int(batch), order, augment
        self.rng = None if shuffle_seed is None else np.random.default_rng(shuffle_seed)
        self.n = int(y.shape[0])

    def __len__(self) -> int:
        return -(-self.n // self.batch)

    def __iter__(self):
        order = self.rng.permutation(self.n) if self.rng is not None else self.order
        for s in range(0, self.n, self.batch):
            if order is None:
                xb, yb = self.x[:, s:s + self.batch], self.y[s:s + self.batch]
            else:
                idx = torch.as_tensor(order[s:s + self.batch], device=self.x.device)
                xb, yb = self.x[:, idx], self.y[idx]
            yield (xb if self.augment is None else self.augment(xb)), yb


class QuadrantBatches:
    """ImageNet-100 quadrant batches streamed from a ``QuadrantImages`` split: x (4, B, 3, S/2, S/2), y (B,).

    shuffle True: a new order every pass ([C]); False: one order drawn once (A-1); None: evaluation, no random
    draws, the positions in ``order`` (default: index order) every pass. Augmentation seeds come from the sampler
    (main process), so the batches are the same whatever the number of loader ``workers``."""

    def __init__(self, dataset: QuadrantImages, batch: int, *, seed: int = 0, shuffle: bool | None = True,
                 order: np.ndarray | None = None, workers: int = 0, pin_memory: bool = False) -> None:
        self.n = len(dataset) if shuffle is not None or order is None else len(order)
        if shuffle is None:
            self.sampler = SequentialBatches(self.n, batch, subset=order)
        else:   # epochs=1: every pass is one epoch; the sampler's RNG carries on from pass to pass
            self.sampler = EpochBatchSampler(self.n, batch, seed, shuffle=shuffle, epochs=1)
        self.loader = make_loader(dataset, self.sampler, workers, pin_memory)

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        for x, y in self.loader:
            yield x.transpose(0, 1).contiguous(), y           # (B, 4, ...) -> party-stacked (4, B, ...)
