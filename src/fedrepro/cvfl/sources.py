"""Batch sources: where a C-VFL run's minibatches come from (cvfl.md §3.1, A-1, §5.A.4).

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

from typing import Iterator, Protocol

import numpy as np
import torch

from fedrepro.data.imagefolder import EpochBatchSampler, QuadrantImages, SequentialBatches, make_loader


class BatchSource(Protocol):
    n: int

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]: ...


class TensorBatches:
    """Batches of in-memory party-stacked tensors ``x`` (M, N, ...) and labels ``y`` (N,).

    order: the batch order, used unchanged every pass (A-1); None: index order (evaluation chunks).
    shuffle_seed: instead draw a new order every pass from this seed (``reshuffle_each_epoch``)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch: int, order: np.ndarray | None = None,
                 shuffle_seed: int | None = None) -> None:
        if x.shape[1] != y.shape[0]:
            raise ValueError(f"x holds {x.shape[1]} samples per party but y has {y.shape[0]} labels")
        self.x, self.y, self.batch, self.order = x, y, int(batch), order
        self.rng = None if shuffle_seed is None else np.random.default_rng(shuffle_seed)
        self.n = int(y.shape[0])

    def __len__(self) -> int:
        return -(-self.n // self.batch)

    def __iter__(self):
        order = self.rng.permutation(self.n) if self.rng is not None else self.order
        for s in range(0, self.n, self.batch):
            if order is None:
                yield self.x[:, s:s + self.batch], self.y[s:s + self.batch]
            else:
                idx = torch.as_tensor(order[s:s + self.batch], device=self.x.device)
                yield self.x[:, idx], self.y[idx]


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
