"""Fixed rows times a changing narrow matrix: x @ W with torch's bits, faster where compiled loops give them.

A decentral run scores its averaged model on the same evaluation rows every few iterations (10,000 MNIST test
rows and 5,000 training rows against the 784 x 10 weights: two of torch's products, that is oneMKL's, 20 ms a
time here). fedrepro.kernels.narrow_product makes oneMKL's roundings in oneMKL's order as this project's AVX2
machine runs it, about three times faster. Whether the machine at hand sums that way is not known in advance
(oneMKL picks its code by CPU, shape and thread count), so ``FixedRowsProduct`` checks: before the first product
of each width and thread count it takes one product of the rows themselves with random weights both ways, and it
uses the loops only if the two agree to the bit. Everywhere else (another CPU or dtype, a GPU, autograd, kernels
off with FEDREPRO_KERNELS=0) the product is torch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from fedrepro.kernels import compiled

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import narrow_product  # noqa: F401

# the column counts whose order the loops follow (with K a multiple of 4); tests/kernels/test_narrow_product.py
NARROW_COLUMNS = (8, 10)
# torch's products before the loops take over: their start (the probe, the rows' layout: about three of torch's
# products; numba's import in a process that has not loaded it: about thirty) pays back only over a run's many
# evaluations (quick Fig. 3.4: 31 a run), not over a smoke run's 7
TORCH_FIRST = 8


class FixedRowsProduct:
    """``product(w)`` = ``x @ w`` for the rows x (n, K) given once and weights w (K, C) that change."""

    def __init__(self, x: torch.Tensor):
        self.x = x
        self._blocked: np.ndarray | None = None
        self._agrees: dict[tuple, bool] = {}     # (C, torch threads) -> the loops give torch's bits
        self.calls = 0

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        kernels = self._kernels(w) if self.calls > TORCH_FIRST else None
        if kernels is None:
            return self.x @ w
        key = (w.shape[1], torch.get_num_threads())
        if key not in self._agrees:
            self._agrees[key] = self._probe(kernels, w.shape[1])
        return self._loops(kernels, w) if self._agrees[key] else self.x @ w

    def _probe(self, kernels, C: int) -> bool:
        """Whether the loops give torch's bits for these rows and C columns of random weights (not the caller's:
        a run's first weights are often zeros, whose products agree in any order). Its own generator: no run's
        random stream is touched."""
        w = torch.from_numpy(np.random.default_rng(C).standard_normal((self.x.shape[1], C)).astype(np.float32))
        return self._loops(kernels, w).numpy().tobytes() == (self.x @ w).numpy().tobytes()

    def _kernels(self, w: torch.Tensor):
        x = self.x
        n, K = x.shape
        if not (x.device.type == w.device.type == "cpu" and x.dtype == w.dtype == torch.float32
                and w.dim() == 2 and w.shape[0] == K and w.shape[1] in NARROW_COLUMNS and K % 4 == 0
                and not (x.requires_grad or w.requires_grad) and x.is_contiguous()):
            return None
        return compiled("narrow_product", n * K * w.shape[1])

    def _loops(self, kernels, w: torch.Tensor) -> torch.Tensor:
        if self._blocked is None:
            self._blocked = kernels.blocked_rows(self.x.numpy())
        out = torch.empty(self.x.shape[0], w.shape[1], dtype=torch.float32)
        kernels.product(self._blocked, self.x.shape[0], w.contiguous().numpy(), out.numpy())
        return out
