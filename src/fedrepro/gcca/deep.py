"""Deep federated MAX-VAR: CuteMaxVar-Deep and AltMaxVar-Deep (Sec. II-B, Algorithm 1, Sec. V-B.1) in torch.

The I per-view MLPs are one stacked network (``StackedMLP``): every layer holds (I, n_in, n_out)
weights and runs as one ``torch.bmm`` over the views, BatchNorm is a per-view batched BN
(statistics over the batch axis of each view), so no Python loop over views in a forward or
backward pass.  Hidden layers are Linear -> BatchNorm1d -> ReLU, the output layer a plain Linear
with K units (A-7), PyTorch's default initialisation (U(-1/sqrt(n_in), 1/sqrt(n_in)) for weights and
biases, BN gamma = 1, beta = 0).  Since the views have independent parameters, one Adam over the
stacked tensors is exactly I per-view Adams (Adam is element-wise; A-8).

Per outer iteration r (the same loop as the linear engine, ``fedrepro.gcca.engine``):
  nodes:  T optimiser steps (train mode) on l = sum_i 1/(2|F_i|) ||Q(X_i(F_i); theta_i) - Ĝ(F_i)||^2
          (``loss_form="nonsq"``: the code's 1/(2|F|) ||.||_F, not squared), F_i uniform without
          replacement, drawn per view; then a full pass in eval mode M_i = Q(X_i; theta_i);
          send C(M_i - M̂_i) through a ``fedrepro.comm.TrackedCopy``
  server: Y = sum_i C_J M̂_i (A-9: always centred), G = polar(Y), broadcast C(G - Ĝ)
Step 0 (the full-precision initial round) sends M_i^(0) and G^(0) with ``Identity``; every message
is recorded in a ``BitLedger`` and BPV is read from it.  The messages travel in float64 numpy (the
J x K matrices are small); the networks run in ``dtype`` (float32 by default, A-6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedrepro.comm import BitLedger, TrackedCopy, get_compressor
from fedrepro.comm.conventions import gcca_bpv_from_ledger
from fedrepro.gcca.links import CuteMaxVarLinks
from fedrepro.gcca.objective import maxvar_objective, polar
from fedrepro.gcca.views import sample_rows
from fedrepro.registry.methods import build_compressor


class StackedLinear(torch.nn.Module):
    def __init__(self, I: int, n_in: int, n_out: int, bias: bool = True, generator=None, dtype=torch.float32):
        super().__init__()
        bound = 1.0 / math.sqrt(n_in)
        w = (torch.rand(I, n_in, n_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
        self.weight = torch.nn.Parameter(w.to(dtype))
        if bias:
            b = (torch.rand(I, 1, n_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
            self.bias = torch.nn.Parameter(b.to(dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):  # (I, B, n_in) -> (I, B, n_out)
        out = torch.bmm(x, self.weight)
        return out if self.bias is None else out + self.bias


class StackedBatchNorm(torch.nn.Module):
    """BatchNorm1d for each of I views at once: x (I, B, H); running statistics (I, H)."""

    def __init__(self, I: int, H: int, eps: float = 1e-5, momentum: float = 0.1, dtype=torch.float32):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight = torch.nn.Parameter(torch.ones(I, 1, H, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(I, 1, H, dtype=dtype))
        self.register_buffer("running_mean", torch.zeros(I, 1, H, dtype=dtype))
        self.register_buffer("running_var", torch.ones(I, 1, H, dtype=dtype))

    def forward(self, x):
        if self.training:
            mean = x.mean(dim=1, keepdim=True)
            var = x.var(dim=1, unbiased=False, keepdim=True)
            with torch.no_grad():
                n = x.shape[1]
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / max(n - 1, 1), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class StackedMLP(torch.nn.Module):
    """I MLPs N -> hidden... -> K with stacked weights (A-7); ``hidden=()`` is the linear map X_i Q_i (+ bias)."""

    def __init__(self, I: int, N: int, hidden: tuple[int, ...], K: int, *, bias: bool = True, batch_norm: bool = True,
                 generator=None, dtype=torch.float32):
        super().__init__()
        layers, n_in = [], N
        for h in hidden:
            layers.append(StackedLinear(I, n_in, h, bias, generator, dtype))
            if batch_norm:
                layers.append(StackedBatchNorm(I, h, dtype=dtype))
            layers.append(torch.nn.ReLU())
            n_in = h
        layers.append(StackedLinear(I, n_in, K, bias, generator, dtype))
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


@dataclass(frozen=True)
class DeepConfig(CuteMaxVarLinks):
    K: int
    R: int
    hidden: tuple[int, ...] = (128, 64)
    T: int = 10
    batch: int = 1000
    lr: float = 1e-3
    q: int | None = None  # None: AltMaxVar-Deep (identity compressor)
    compressor: Any = None  # any fedrepro.comm compressor spec in CuteMaxVar's place (overrides q)
    optimizer: str = "adam"  # adam | sgd (sgd: lr may be per view, for the linear check)
    loss_form: str = "sq"  # sq: 1/(2|F|) ||.||_F^2 (A-8); nonsq: 1/(2|F|) ||.||_F (the authors' code)
    inner_unit: str = "steps"  # steps | epochs
    center: bool = True  # C_J in the G-step
    bias: bool = True
    batch_norm: bool = True
    dtype: str = "float32"


@dataclass
class DeepResult:
    steps: np.ndarray
    objective: np.ndarray
    bpv: np.ndarray
    bits_up: np.ndarray
    bits_down: np.ndarray
    metrics: dict  # name -> array over steps (from the callback)
    G: np.ndarray
    model: StackedMLP = field(repr=False)
    ledger: BitLedger = field(repr=False)


def _center(Y):
    return Y - Y.mean(axis=-2, keepdims=True)


def full_pass(model: StackedMLP, X: torch.Tensor, chunk: int = 65536) -> np.ndarray:
    """M_i = Q(X_i; theta_i) for every row, eval mode (running BN statistics), as float64 numpy (I, J, K)."""
    was = model.training
    model.eval()
    with torch.no_grad():
        out = torch.cat([model(X[:, s:s + chunk]) for s in range(0, X.shape[1], chunk)], dim=1)
    model.train(was)
    return out.to(torch.float64).cpu().numpy()


def test_representation(model: StackedMLP, X_test: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(per-view outputs (I, J_test, K), G_test = polar(sum_i C M_i^test)) (Sec. V-B.4)."""
    M = full_pass(model, X_test)
    return M, polar(_center(M).sum(axis=0))


def run_deep(X: np.ndarray, cfg: DeepConfig, rng_sgd: np.random.Generator, rng_comp: np.random.Generator, *,
             seed_init: int = 0, callback: Callable | None = None, model: StackedMLP | None = None,
             device: str = "cpu") -> DeepResult:
    """Run CuteMaxVar-Deep (cfg.q) or AltMaxVar-Deep (cfg.q None) on stacked views X (I, J, N).

    ``callback(model, r, G)`` is called at every step r = 0..R (after the G-step) and returns a dict of
    scalar metrics (e.g. test accuracy).  ``model``: a prebuilt network (e.g. the linear check), else
    a fresh ``StackedMLP`` seeded with ``seed_init``.
    """
    dtype = getattr(torch, cfg.dtype)
    I, J, N = X.shape
    Xt = torch.as_tensor(X, dtype=dtype, device=device)
    if model is None:
        gen = torch.Generator().manual_seed(int(seed_init))
        model = StackedMLP(I, N, tuple(cfg.hidden), cfg.K, bias=cfg.bias, batch_norm=cfg.batch_norm, generator=gen,
                           dtype=dtype)
    model = model.to(device)
    params = [p for p in model.parameters()]
    if cfg.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=float(cfg.lr))
        lr_view = None
    elif cfg.optimizer == "sgd":
        opt = None
        lr_view = torch.as_tensor(np.broadcast_to(np.asarray(cfg.lr, dtype=np.float64), (I,)).copy(), dtype=dtype,
                                  device=device).view(I, 1, 1)
    else:
        raise ValueError(f"optimizer must be 'adam' or 'sgd'; got {cfg.optimizer!r}")
    if cfg.loss_form not in ("sq", "nonsq"):
        raise ValueError(f"loss_form must be 'sq' or 'nonsq'; got {cfg.loss_form!r}")
    B = min(int(cfg.batch), J)
    steps_per_iter = cfg.T if cfg.inner_unit == "steps" else cfg.T * max(1, J // B)
    identity = get_compressor("identity")
    comp = build_compressor(cfg.compressor_spec())
    up, down = TrackedCopy(comp), TrackedCopy(comp, batched=False)
    ledger = BitLedger(I)
    view_idx = torch.arange(I, device=device)[:, None]

    def g_step(Mhat):
        Y = Mhat.sum(axis=0) if not cfg.center else _center(Mhat).sum(axis=0)
        return polar(Y)

    M = full_pass(model, Xt)
    ledger.record("up", up.update(M, rng_comp, compressor=identity), step=0)
    G = g_step(up.value)
    ledger.record("down", down.update(G, rng_comp, compressor=identity), step=0)
    objective, metrics = [maxvar_objective(M, G)], []
    if callback:
        metrics.append(callback(model, 0, G))
    model.train()
    for r in range(cfg.R):
        Ghat = torch.as_tensor(down.value, dtype=dtype, device=device)
        for _ in range(steps_per_iter):
            rows = torch.as_tensor(sample_rows(rng_sgd, I, J, B), device=device)
            out = model(Xt[view_idx, rows])  # (I, B, K)
            sq = ((out - Ghat[rows]) ** 2).sum(dim=(1, 2))
            loss = (sq if cfg.loss_form == "sq" else torch.sqrt(sq)).sum() / (2 * B)
            if opt is not None:
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            else:
                for p in params:
                    p.grad = None
                loss.backward()
                with torch.no_grad():
                    for p in params:
                        p -= lr_view.view(I, *([1] * (p.dim() - 1))) * p.grad
        M = full_pass(model, Xt)
        msg_up = up.update(M, rng_comp)
        G = g_step(up.value)
        msg_down = down.update(G, rng_comp)
        ledger.record("up", msg_up, step=r + 1)
        ledger.record("down", msg_down, step=r + 1)
        objective.append(maxvar_objective(M, G))
        if callback:
            metrics.append(callback(model, r + 1, G))
    steps = np.arange(cfg.R + 1)
    _, up_bits = ledger.cumulative("up")
    _, down_bits = ledger.cumulative("down")
    _, bpv = gcca_bpv_from_ledger(ledger, J * cfg.K, "up", node=0)
    names = sorted({k for m in metrics for k in m})
    return DeepResult(steps=steps, objective=np.array(objective), bpv=bpv, bits_up=up_bits, bits_down=down_bits,
                      metrics={k: np.array([m.get(k, np.nan) for m in metrics]) for k in names}, G=G, model=model,
                      ledger=ledger)
