"""n copies of one torch module trained as one stacked parameter matrix (n, d) with torch.func.

Parameters are flattened in `named_parameters()` order into rows of X; `segments` are the per-tensor column
ranges (for per-tensor compression, thesis A-06).  Buffers (BN running statistics) are stacked per node and
stay local (A-07); `grad(X, xb, yb)` returns the per-node mean cross-entropy gradients (n, d) computed by
vmap(grad(loss)) over nodes, and updates each node's BN statistics (train mode).  `predict(w, x)` evaluates one
parameter vector with the node-averaged BN statistics (A-07, A-29)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.func import functional_call, grad, vmap


class StackedModel:
    def __init__(self, module: nn.Module, n: int, device: str | torch.device = "cpu", dtype=torch.float32):
        self.module = module.to(device=device, dtype=dtype)
        self.n = n
        self.names = [k for k, _ in module.named_parameters()]
        self.shapes = [p.shape for _, p in module.named_parameters()]
        sizes = [p.numel() for _, p in module.named_parameters()]
        self.segments, a = [], 0
        for s in sizes:
            self.segments.append((a, a + s))
            a += s
        self.d = a
        self.buffer_names = [k for k, _ in module.named_buffers()]
        self.buffers = {k: b.detach().unsqueeze(0).repeat(n, *([1] * b.dim())).clone()
                        for k, b in module.named_buffers()}

        def loss(params, buffers, x, y):
            out = functional_call(self.module, (params, buffers), (x,))
            return nn.functional.cross_entropy(out, y)

        self._grad = vmap(grad(loss), in_dims=(0, 0, 0, 0), randomness="different")

    def x0(self) -> torch.Tensor:
        """The module's initial parameters as one row, repeated for every node (A-02: common init)."""
        flat = torch.cat([p.detach().reshape(-1) for p in self.module.parameters()])
        return flat.unsqueeze(0).repeat(self.n, 1)

    def unflatten(self, X: torch.Tensor) -> dict:
        """(n, d) -> {name: (n, *shape)} views."""
        return {k: X[:, a:b].view(X.shape[0], *s) for k, (a, b), s in zip(self.names, self.segments, self.shapes)}

    def grad(self, X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        self.module.train()
        g = self._grad(self.unflatten(X), self.buffers, xb, yb)
        return torch.cat([g[k].reshape(X.shape[0], -1) for k in self.names], dim=1)

    @torch.no_grad()
    def predict_logits(self, w: torch.Tensor, x: torch.Tensor, batch: int = 1000) -> torch.Tensor:
        self.module.eval()
        params = {k: w[a:b].view(s) for k, (a, b), s in zip(self.names, self.segments, self.shapes)}
        bufs = {k: (v.float().mean(0).to(v.dtype) if v.is_floating_point() else v[0]) for k, v in self.buffers.items()}
        outs = [functional_call(self.module, (params, bufs), (x[i:i + batch],)) for i in range(0, len(x), batch)]
        return torch.cat(outs)
