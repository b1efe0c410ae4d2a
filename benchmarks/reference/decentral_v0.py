"""The decentralized engine as it was before issue 19 (commit 6dc9b13), frozen as the reference that the optimized
engine (fedrepro.decentral.engine) must reproduce bit for bit: generic index-gather mixing, the generic
TrackedCopy.update, fresh tensors every step, and the logistic-regression gradient through advanced indexing.
Used by tests/decentral/test_engine_reference.py and benchmarks/bench_decentral.py (the "before" column)."""

from __future__ import annotations

import numpy as np
import torch

from fedrepro.comm import BitLedger, TrackedCopy, get_compressor
from fedrepro.decentral.engine import EngineConfig  # the configuration is shared
from fedrepro.decentral.trigger import trigger_mask


def softmax_regression_grad(X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Mean cross-entropy gradient per node, X (n, p*C), xb (n, b, p), yb (n, b) -> (n, p*C) (CPU, numpy matmul)."""
    n, b, p = xb.shape
    Wm = X.numpy().reshape(n, p, n_classes)
    x = xb.numpy()
    Z = np.matmul(x, Wm)
    Z -= Z.max(axis=2, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=2, keepdims=True)
    Z[np.arange(n)[:, None], np.arange(b)[None, :], yb.numpy()] -= 1.0
    G = np.matmul(x.transpose(0, 2, 1), Z).reshape(n, p * n_classes)
    G /= b
    return torch.from_numpy(G)


def mnist_grad(task):
    """The MnistTask gradient of 6dc9b13 (rows gathered by advanced indexing) for a fedrepro MnistTask."""
    def grad(X, t):
        idx = task.sampler()
        return softmax_regression_grad(X, task.x[idx], task.y[idx], task.C)
    return grad


def make_mixer(W: np.ndarray, dtype, device):
    """Y -> W @ Y.  Sparse graphs (a ring: 3 non-zeros per row) gather the neighbours' rows instead of a dense
    (n, n) @ (n, d) product; dense graphs use the matmul."""
    W = np.asarray(W, dtype=np.float64)
    n = W.shape[0]
    nnz = (W != 0).sum(axis=1)
    if nnz.max() * 4 > n:
        Wt = torch.as_tensor(W, dtype=dtype, device=device)
        return lambda Y: Wt @ Y
    k = int(nnz.max())
    idx = np.zeros((n, k), dtype=np.int64)
    wts = np.zeros((n, k))
    for i in range(n):
        nz = np.flatnonzero(W[i])
        idx[i, :nz.size], wts[i, :nz.size] = nz, W[i, nz]
        idx[i, nz.size:] = i
    cols = [(torch.as_tensor(idx[:, j], device=device), torch.as_tensor(wts[:, j], dtype=dtype, device=device)[:, None])
            for j in range(k)]

    def mix(Y):
        out = cols[0][1] * Y[cols[0][0]]
        for ix, w in cols[1:]:
            out = out + w * Y[ix]
        return out

    return mix


class DecentralEngine:
    """State: X, V (n, d); one TrackedCopy x̂ per tensor segment.  `step(grad_fn)` runs one iteration."""

    def __init__(self, W: np.ndarray, x0: torch.Tensor, cfg: EngineConfig, lr, threshold=None,
                 segments: list[tuple[int, int]] | None = None, generator: torch.Generator | None = None):
        self.cfg = cfg
        self.n, self.d = x0.shape
        self.dtype, self.device = x0.dtype, x0.device
        self.W = torch.as_tensor(np.asarray(W), dtype=self.dtype, device=self.device)
        self.mix = make_mixer(np.asarray(W), self.dtype, self.device)
        self.X = x0.clone()
        self.V = torch.zeros_like(self.X)
        self.lr = lr
        self.threshold = threshold
        self.segments = segments or [(0, self.d)]
        self.copies = []
        for a, b in self.segments:
            params = dict(cfg.compressor_params)
            if cfg.per_tensor_ratio is not None:
                params = {"k": max(1, int(np.floor(cfg.per_tensor_ratio * (b - a) + 1e-9)))}
            self.copies.append(TrackedCopy(get_compressor(cfg.compressor, **params)))
        self.S = [None] * len(self.segments)   # memory-efficient s_i per segment
        self.generator = generator
        self.ledger = BitLedger(self.n) if cfg.keep_ledger else None
        self.t = 0
        self.eta_prev = None
        self.first_sync = True
        # logs
        self.bits = np.zeros(self.n, dtype=np.int64)          # cumulative measured bits per node (B32)
        self.n_sync = 0
        self.n_fired = np.zeros(self.n, dtype=np.int64)        # transmissions per node
        self.rounds = 0                                        # sync rounds where >= 1 node fired
        self.airtime_bits = 0                                  # Σ_sync max_i bits_i
        self.sync_log: list[tuple[int, int, int]] = []         # (t, n_fired, max bits) per sync

    @property
    def xhat(self) -> torch.Tensor:
        vals = [c.value if c.value is not None else torch.zeros(self.n, b - a, dtype=self.dtype, device=self.device)
                for c, (a, b) in zip(self.copies, self.segments)]
        return torch.cat(vals, dim=1)

    def mean_model(self) -> torch.Tensor:
        return self.X.mean(dim=0)

    def step(self, grad_fn) -> dict:
        cfg, t = self.cfg, self.t
        eta = float(self.lr(t))
        eta_prev = eta if self.eta_prev is None else self.eta_prev
        G = grad_fn(self.X, t)
        if cfg.weight_decay:
            G = G + cfg.weight_decay * self.X
        corr = (eta_prev / eta) if cfg.lr_correction else 1.0
        self.V.mul_(cfg.beta * corr).add_(G)
        if cfg.nesterov:
            Xh = self.X.add(torch.add(G, self.V, alpha=cfg.beta), alpha=-eta)
        else:
            Xh = self.X.add(self.V, alpha=-eta)
        info = {"t": t, "eta": eta, "sync": False}
        if (t + 1) % cfg.H == 0:
            info.update(self._sync(Xh, t, eta))
        else:
            self.X = Xh
        self.eta_prev = eta
        self.t += 1
        return info

    def _sync(self, Xh: torch.Tensor, t: int, eta: float) -> dict:
        cfg = self.cfg
        sq = torch.zeros(self.n, dtype=torch.float64, device=self.device)
        for c, (a, b) in zip(self.copies, self.segments):
            diff = Xh[:, a:b] if c.value is None else Xh[:, a:b] - c.value
            sq += (diff * diff).sum(dim=1).to(torch.float64)
        c_t = float(self.threshold(t, eta)) if self.threshold is not None else 0.0
        fire = trigger_mask(sq.cpu().numpy(), c_t, eta, self.first_sync, cfg.force_first)
        self.first_sync = False
        step_bits = np.zeros(self.n, dtype=np.int64)
        X = Xh                      # a fresh tensor: updated in place segment by segment after its message
        any_fire = bool(fire.any())
        for i, (c, (a, b)) in enumerate(zip(self.copies, self.segments)):
            if c.value is None:
                c.value = torch.zeros(self.n, b - a, dtype=self.dtype, device=self.device)
            if any_fire:
                out = c.update(Xh[:, a:b], self.generator, mask=None if fire.all() else fire)
                step_bits += out.bits
                if self.ledger is not None:
                    self.ledger.record("p2p", out, step=t)
                q = out.value
            else:
                q = None
            xh_l = c.value
            if cfg.memory_efficient:
                if self.S[i] is None:
                    self.S[i] = torch.zeros_like(xh_l)
                if q is not None:
                    self.S[i] = self.S[i] + self.mix(q)
                X[:, a:b] += cfg.gamma * (self.S[i] - xh_l)
            else:
                X[:, a:b] += cfg.gamma * (self.mix(xh_l) - xh_l)
        if cfg.flag_bits:
            step_bits += np.where(fire, 0, cfg.flag_bits)
        self.X = X
        self.bits += step_bits
        self.n_sync += 1
        self.n_fired += fire
        if any_fire:
            self.rounds += 1
        mx = int(step_bits.max())
        self.airtime_bits += mx
        self.sync_log.append((t, int(fire.sum()), mx))
        return {"sync": True, "fire": fire, "c_t": c_t, "sq_drift": sq.cpu().numpy(), "step_bits": step_bits}

    # ---- diagnostics ------------------------------------------------------------------------
    def trigger_rate(self) -> float:
        return float(self.n_fired.sum() / max(1, self.n_sync * self.n))

    def consensus_distance(self) -> float:
        m = self.X.mean(dim=0, keepdim=True)
        return float(((self.X - m) ** 2).sum() / self.n)
