"""Clients batched in one process: stacked parameters, torch.func.vmap(functional_call), and the ADEPT /
local / FedAvg / FedAvg+fine-tuning update rules of adept.md 3.3.1, 3.4 and 3.5.

Every parameter tensor has a leading client axis m.  Optimiser states are elementwise, so one torch
optimiser over the stacked tensors is exactly m independent per-client optimisers; only the l-inf
clipping couples a client's tensors, and it is computed per client.

Devices: the parameters, client data, sigma and optimiser state live on one device (the run's `ctx.device`), and
whatever `train` makes it makes beside the parameters.  Every random number is still drawn on the CPU (numpy
Generators, CPU `torch.Generator`s, models initialised on the CPU under `torch.manual_seed`) and then moved, so a
run draws the same numbers on any device and a CPU run is bit-identical to one made before devices existed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap


def stacked_init(make_model, m: int, gen_seed: int, same: bool, device: str | torch.device = "cpu"):
    """m models' parameters stacked on axis 0 on `device`; independent inits (seed + client) or one init replicated.

    The models are built (and initialised) on the CPU, under the CPU seed, and their stacked parameters moved."""
    models = []
    for i in range(m):
        torch.manual_seed(gen_seed + (0 if same else i))
        models.append(make_model())
    params, _ = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    return base, {k: v.detach().clone().to(device) for k, v in params.items()}


def client_forward(base):
    """f(params_stacked, x_stacked (m, B, ...)) -> (m, B, ...)."""
    def one(p, x):
        return functional_call(base, p, (x,))
    return vmap(one)


def linf_scale(grads: dict, limit: float) -> torch.Tensor:
    """Per-client factor min(1, limit / max_j |g_j|) over all tensors jointly (CODE clipping).

    max_j |g_j| = max(max_j g_j, -min_j g_j): two exact reductions, without writing |g| (0.74x the time; the
    same value up to the sign of a zero maximum, which clamp_min makes 1e-30 either way; NaN propagates in both)."""
    mx = torch.stack([torch.maximum(f.amax(1), f.amin(1).neg()) for f in (g.flatten(1) for g in grads.values())]
                     ).amax(0)
    return torch.clamp(limit / mx.clamp_min(1e-30), max=1.0)


def _bc(s: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return s.reshape(-1, *([1] * (like.dim() - 1)))


def mean_bcast(t: dict) -> None:
    for v in t.values():
        v.copy_(v.mean(0, keepdim=True).expand_as(v))


def sigma_grad(s: torch.Tensor, delta: torch.Tensor, xi: float) -> torch.Tensor:
    """d/dsigma of the per-weight regulariser sum_j log s_j + (2 xi + delta_j^2) / (2 s_j^2)."""
    return 1.0 / s - (2 * xi + delta ** 2) / s ** 3


def _average(theta, names, mu, sigma, adept: bool, communicate: bool) -> None:
    """End of a round: the server averages the global model and sigma (ADEPT) or the models (FedAvg)."""
    with torch.no_grad():
        if adept:
            mean_bcast(mu)
            mean_bcast(sigma)
        if communicate:
            mean_bcast({k: theta[k] for k in names})


@dataclass
class FedConfig:
    method: str                 # adept | local | fedavg | fedavg_ft
    epochs: int
    tau: int                    # local iterations per round (= epoch)
    opt: str = "sgd"            # personal optimiser: sgd (momentum 0.9) | adam
    lr: float = 0.01
    lr_global: float = 0.01
    opt_global: str = "sgd"     # sgd | adam
    lr_sigma: float = 1e-3
    sigma0: float = 1.0
    lazy_epochs: int = 2
    xi: float = 1e-6
    lambda_reg: float | torch.Tensor = 0.1
    clip: float = 1.0
    sigma_clip: float = 10.0
    sigma_range: tuple = (1e-3, 1e2)
    ft_epoch: int = 50          # fedavg_ft: FedAvg until this epoch, then local
    lr_milestone: int | None = None   # epoch at which lr and lr_global are multiplied by 0.1
    frozen: tuple = ()          # parameter names never updated (AE synthetic baseline: the true decoder)
    # Communication period in iterations; None: one round per epoch (the tau batches `batches(epoch)` yields).
    # The authors' adept_ae/main.py counts it in iterations (H = 20) whatever an epoch holds: with full-batch
    # synthetic data (one iteration per epoch) a round then spans 20 epochs (adept:A-sigma-schedule).
    round_iters: int | None = None
    # fresh: each sigma step uses the gradient at that iteration (Algorithm 2).  accumulated: the authors' code
    # never zeroes sigma's gradient between sigma steps, so a step applies the sum, over every iteration since
    # the last step, of dR/dsigma (its own backward pass) + lambda_reg dR/dsigma (the personal loss's backward).
    sigma_grad: str = "fresh"
    log: dict = field(default_factory=dict)


def _optim(kind, tensors, lr):
    if kind == "adam":
        return torch.optim.Adam(tensors, lr=lr)
    if kind == "sgd_nomom":
        return torch.optim.SGD(tensors, lr=lr)
    return torch.optim.SGD(tensors, lr=lr, momentum=0.9)


def train(base, theta: dict, loss_fn, batches, cfg: FedConfig, *, mu0: dict | None = None, on_epoch=None):
    """Run `cfg.method` for cfg.epochs rounds of cfg.tau iterations.

    theta: stacked personal parameters (modified in place; requires_grad set here).
    loss_fn(params, batch) -> (m,) per-client losses.  batches(epoch) yields cfg.tau batches.
    on_epoch(epoch, theta) is called after each round (after averaging).  Returns (theta, mu, sigma).
    """
    names = [k for k in theta if k not in cfg.frozen]
    for k in names:
        theta[k].requires_grad_(True)
    first = next(iter(theta.values()))
    m, device = first.shape[0], first.device
    opt = _optim(cfg.opt, [theta[k] for k in names], cfg.lr)
    adept = cfg.method == "adept"
    mu = sigma = None
    if adept:
        mu = {k: (mu0[k].to(device) if mu0 is not None else theta[k].detach()[:1]).expand_as(theta[k]).clone()
              for k in names}
        sigma = {k: torch.full_like(theta[k].detach(), cfg.sigma0) for k in names}
        opt_mu = _optim("adam" if cfg.opt_global == "adam" else "sgd_nomom", list(mu.values()), cfg.lr_global)
    lam = (cfg.lambda_reg.to(device) if torch.is_tensor(cfg.lambda_reg)
           else torch.full((m,), float(cfg.lambda_reg), device=device))
    if cfg.sigma_grad not in ("fresh", "accumulated"):
        raise ValueError(f"sigma_grad must be fresh or accumulated, not {cfg.sigma_grad!r}")
    acc = {k: torch.zeros_like(s) for k, s in sigma.items()} if adept and cfg.sigma_grad == "accumulated" else None
    period = cfg.round_iters
    it = 0                      # iterations so far (all epochs)
    for epoch in range(cfg.epochs):
        if cfg.lr_milestone is not None and epoch == cfg.lr_milestone:
            for o in ([opt] + ([opt_mu] if adept else [])):
                for gr in o.param_groups:
                    gr["lr"] *= 0.1
        communicate = cfg.method == "fedavg" or (cfg.method == "fedavg_ft" and epoch < cfg.ft_epoch)
        for k_it, batch in enumerate(batches(epoch)):
            round_start = k_it == 0 if period is None else it % period == 0
            with torch.no_grad():
                if acc is not None:      # the sigma backward pass of every iteration (CODE)
                    for k in names:
                        acc[k].add_(sigma_grad(sigma[k], mu[k] - theta[k], cfg.xi))
                if adept and round_start and epoch >= cfg.lazy_epochs and cfg.lr_sigma > 0:
                    for k in names:       # sigma step at the first iteration of the round (modification c)
                        s = sigma[k]
                        g = acc[k] if acc is not None else sigma_grad(s, mu[k] - theta[k], cfg.xi)
                        sc = torch.clamp(cfg.sigma_clip / g.abs().flatten(1).amax(1).clamp_min(1e-30), max=1.0)
                        s.sub_(cfg.lr_sigma * g * _bc(sc, g)).clamp_(*cfg.sigma_range)
                        if acc is not None:
                            acc[k].zero_()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(theta, batch)
            grads = torch.autograd.grad(loss.sum(), [theta[k] for k in names])
            grads = dict(zip(names, grads))
            with torch.no_grad():
                if adept:           # + lambda * d/dtheta sum_j (mu_j - theta_j)^2 / (2 sigma_j^2)
                    for k in names:
                        grads[k] = grads[k] + _bc(lam, grads[k]) * (theta[k] - mu[k]) / sigma[k] ** 2
                        if acc is not None:   # the personal loss lambda * R also reaches sigma's gradient (CODE)
                            acc[k].add_(_bc(lam, acc[k]) * sigma_grad(sigma[k], mu[k] - theta[k], cfg.xi))
                if cfg.clip:
                    sc = linf_scale(grads, cfg.clip)
                    for k in names:
                        grads[k] = grads[k] * _bc(sc, grads[k])
                for k in names:
                    theta[k].grad = grads[k]
            opt.step()
            if adept:               # global model stepped at every local iteration (modification d), CODE gradient
                with torch.no_grad():
                    gm = {k: 2 * (mu[k] - theta[k].detach()) for k in names}
                    sc = linf_scale(gm, cfg.clip) if cfg.clip else torch.ones(m, device=device)
                    for k in names:
                        mu[k].grad = gm[k] * _bc(sc, gm[k])
                opt_mu.step()
            it += 1
            if period is not None and it % period == 0:
                _average(theta, names, mu, sigma, adept, communicate)
        if period is None:
            _average(theta, names, mu, sigma, adept, communicate)
        if on_epoch is not None:
            on_epoch(epoch, theta, sigma)
    for k in names:
        theta[k].requires_grad_(False)
    return theta, mu, sigma


class ClientData:
    """Per-client arrays padded to a common length, with counts; minibatches of floor(n_i / tau) per client.

    The padded tensor lives on `device`; the batch indices are drawn on the CPU (numpy) and moved."""

    def __init__(self, xs: list[np.ndarray], dtype=torch.float32, device: str | torch.device = "cpu"):
        self.n = np.array([len(x) for x in xs])
        nmax = int(self.n.max())
        shape = xs[0].shape[1:]
        x = np.zeros((len(xs), nmax, *shape), dtype=np.float32)
        for i, xi in enumerate(xs):
            x[i, : len(xi)] = xi
        self.x = torch.from_numpy(x).to(dtype).to(device)
        self.m = len(xs)
        self.device = self.x.device

    def mask(self) -> torch.Tensor:
        n = torch.from_numpy(self.n).to(self.device)
        return (torch.arange(self.x.shape[1], device=self.device)[None] < n[:, None]).float()

    def epoch_batches(self, tau: int, rng: np.random.Generator, batch: int | None = None):
        """tau batches; client i's batch has b_i = floor(n_i / tau) rows (padded to max b with mask 0)."""
        b = np.maximum(self.n // tau, 1) if batch is None else np.minimum(self.n, batch)
        bmax = int(b.max())
        idx = np.zeros((tau, self.m, bmax), dtype=np.int64)
        msk = np.zeros((tau, self.m, bmax), dtype=np.float32)
        steps = np.arange(tau)[:, None]
        for i in range(self.m):               # one permutation per client per epoch (not per step)
            perm = rng.permutation(self.n[i])
            # step k takes b_i consecutive entries of perm from (k b_i) mod n_i on, wrapping to its start (b_i <= n_i)
            idx[:, i, : b[i]] = perm[(steps * b[i] % self.n[i] + np.arange(b[i])) % self.n[i]]
            msk[:, i, : b[i]] = 1
        ar = torch.arange(self.m, device=self.device)[:, None]
        for k in range(tau):
            ii = torch.from_numpy(idx[k]).to(self.device)
            yield self.x[ar, ii], torch.from_numpy(msk[k]).to(self.device)
