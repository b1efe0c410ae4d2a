"""Algorithm 1 of thesis ch. 3 (SQuARM-SGD) for n nodes held as one stacked parameter matrix X (n, d).

Per iteration t (thesis Algorithm 1, Sec. 3.2.1):
  g = ∇F_i(x_i, ξ_i) (+ wd x_i);  v = β (η_{t-1}/η_t) v + g;  x^{t+1/2} = x - η (β v + g)   (Nesterov)
  if (t+1) % H == 0 (sync):  fire_i = ‖x_i^{t+1/2} - x̂_i‖² > c_t η_t²  (all fire at the first sync)
      x̂ ← x̂ + C(x^{t+1/2} - x̂) on firing rows (fedrepro.comm.TrackedCopy, per tensor segment, A-06)
      x ← x^{t+1/2} + γ (W x̂ - x̂)
  else x ← x^{t+1/2}.
CHOCO-SGD = (H=1, c=0); vanilla decentralized SGD = (identity, γ=1, H=1, c=0): x ← W x^{t+1/2} (A-13).
The copies of node j held by j and all its neighbours are identical, so one x̂ per node stands for all.

Every message goes through fedrepro.comm: bits are the compressors' measured payload (B32: 32-bit values,
indices and scales), recorded in a BitLedger (so other conventions can re-price them), once per sender per
sync round (broadcast, A-26); a non-firing node sends 0 bits (A-25), plus `flag_bits` if set.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from fedrepro import kernels
from fedrepro.comm import BitLedger, TrackedCopy, get_compressor
from fedrepro.decentral.mixing import DenseMixer, make_mixer, neighbour_lists
from fedrepro.decentral.trigger import TriggerReference, trigger_mask

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import dense  # noqa: F401


@dataclass
class EngineConfig:
    compressor: str = "identity"
    compressor_params: dict = field(default_factory=dict)
    per_tensor_ratio: float | None = None   # k_l = max(1, floor(ratio d_l)) per tensor; None: compressor_params
    H: int = 1
    gamma: float = 1.0
    beta: float = 0.9
    nesterov: bool = True
    lr_correction: bool = True        # the η_{t-1}/η_t factor of Algorithm 1
    weight_decay: float = 0.0
    force_first: bool = True
    memory_efficient: bool = False    # s_i = Σ_j w_ij x̂_j kept and updated with W q (the memory-efficient version, Sec. 3.2.1)
    flag_bits: int = 0                # A-25 optional 1-bit "no update" flag
    trigger_reference: str = "copy"   # ch3:A-trigger-ref: drift against x̂ ("copy") or the last sent iterate
    keep_ledger: bool = True

    def as_dict(self) -> dict:
        return asdict(self)


# The engine's algorithms (a registry method's `algorithm:`); the compressor is data (fedrepro/registry/methods.py).
ALGORITHMS = {
    "squarm": "SQuARM-SGD: H local steps, event-triggered at sync rounds (threshold c_t)",
    "choco": "CHOCO-SGD: H = 1, no trigger",
    "dsgd": "vanilla decentralized SGD: H = 1, no trigger, the identity and gamma = 1 (A-13)",
}


def algorithm_config(algorithm: str, compressor=None, *, gamma: float, H: int | None = None, beta: float = 0.9,
                     weight_decay: float = 0.0, lr_correction: bool = True, **extra) -> EngineConfig:
    """EngineConfig of one of the ALGORITHMS (all special cases of Algorithm 1) with a compressor spec (a
    fedrepro.comm name or {name, parameters}; a sparsifier's `ratio` gives each tensor segment its own k, A-14).
    `H` is SQuARM's; CHOCO and DSGD sync every step."""
    from fedrepro.registry.methods import compressor_spec

    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    if algorithm == "dsgd":
        if compressor not in (None, "identity"):
            raise ValueError(f"algorithm dsgd sends the iterates uncompressed; got compressor {compressor!r} "
                             f"(use algorithm choco with a compressor)")
        gamma = 1.0
    if algorithm == "squarm" and H is None:
        raise ValueError("algorithm squarm needs H, its number of local steps")
    name, params = compressor_spec(compressor)
    return EngineConfig(compressor=name, compressor_params=params,
                        H=int(H) if algorithm == "squarm" else 1, gamma=float(gamma), beta=beta,
                        weight_decay=weight_decay, lr_correction=lr_correction, **extra)


class DecentralEngine:
    """State: X, V (n, d); one TrackedCopy x̂ per tensor segment.  `step(grad_fn)` runs one iteration.

    X, V and the copies are updated in place in preallocated buffers (the grad_fn's result is only read). The
    arithmetic is that of the plain formulas above; the compiled passes (fedrepro.kernels.dense) agree with
    torch's operations to float rounding (tests/decentral/test_engine_reference.py checks the engine against an
    implementation written from Algorithm 1 alone).
    """

    def __init__(self, W: np.ndarray, x0: torch.Tensor, cfg: EngineConfig, lr, threshold=None,
                 segments: list[tuple[int, int]] | None = None, generator: torch.Generator | None = None):
        self.cfg = cfg
        self.n, self.d = x0.shape
        self.dtype, self.device = x0.dtype, x0.device
        self.W = torch.as_tensor(np.asarray(W), dtype=self.dtype, device=self.device)
        self.mix = make_mixer(np.asarray(W), self.dtype, self.device)
        # the compiled one-pass kernels (fedrepro.kernels.dense): CPU, float32/float64, numba installed, and a
        # model of n d >= kernels.MIN_WORK entries (smaller ones keep torch's passes: the kernel would not pay)
        self._fused = None
        if self.device.type == "cpu" and self.dtype in (torch.float32, torch.float64):
            self._fused = kernels.compiled("dense", self.n * self.d)
        self._compiled = self._fused is not None
        self._scalar = np.float32 if self.dtype == torch.float32 else np.float64
        self._nbrs = None
        if self._compiled and not isinstance(self.mix, DenseMixer):
            idx, wts = neighbour_lists(np.asarray(W))
            self._nbrs = (idx, wts.astype(self._scalar))
        self.X = x0.clone()
        self.V = torch.zeros_like(self.X)
        self._step_buf = torch.empty_like(self.X)     # G + βV (Nesterov), G + wd X
        self.lr = lr
        self.threshold = threshold
        self.segments = segments or [(0, self.d)]
        self.copies = []
        for a, b in self.segments:
            params = dict(cfg.compressor_params)
            if cfg.per_tensor_ratio is not None:
                params = {"k": max(1, int(np.floor(cfg.per_tensor_ratio * (b - a) + 1e-9)))}
            self.copies.append(TrackedCopy(get_compressor(cfg.compressor, **params)))
        # per segment, contiguous (n, d_l) scratch: x^{t+1/2} - x̂, and (x^{t+1/2} - x̂)² then W x̂ - x̂
        self._diff, self._work = ([torch.empty(self.n, b - a, dtype=self.dtype, device=self.device)
                                   for a, b in self.segments] for _ in range(2))
        self.S = [None] * len(self.segments)   # memory-efficient s_i per segment
        self.generator = generator
        self.reference = TriggerReference(cfg.trigger_reference)
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
        """One iteration. ``grad_fn(X, t)`` returns the stacked minibatch gradients (n, d) as a tensor."""
        cfg, t = self.cfg, self.t
        eta = float(self.lr(t))
        eta_prev = eta if self.eta_prev is None else self.eta_prev
        G = grad_fn(self.X, t)
        corr = (eta_prev / eta) if cfg.lr_correction else 1.0
        self._momentum(G, corr, eta)
        info = {"t": t, "eta": eta, "sync": False}
        if (t + 1) % cfg.H == 0:
            info.update(self._sync(self.X, t, eta))
        self.eta_prev = eta
        self.t += 1
        return info

    def _momentum(self, G: torch.Tensor, corr: float, eta: float) -> None:
        """v = β (η_{t-1}/η_t) v + g;  x = x - η (β v + g) (or x - η v): one compiled pass where it applies, else
        torch's operations."""
        cfg, f = self.cfg, self._scalar
        if self._compiled and self._fuse_ok(G):
            self._fused.momentum_step(self.X.view(-1).numpy(), self.V.view(-1).numpy(), G.reshape(-1).numpy(),
                                      f(cfg.beta * corr), f(cfg.beta), f(-eta), f(cfg.weight_decay),
                                      bool(cfg.nesterov))
        else:
            self._momentum_torch(G, corr, eta)

    def _fuse_ok(self, G: torch.Tensor) -> bool:
        return (G.device.type == "cpu" and G.dtype == self.dtype and G.is_contiguous() and not G.requires_grad
                and G.shape == self.X.shape)

    def _momentum_torch(self, G: torch.Tensor, corr: float, eta: float) -> None:
        """The momentum and Nesterov steps as torch operations (the compiled kernel's reference)."""
        cfg = self.cfg
        if cfg.weight_decay:
            G = torch.mul(self.X, cfg.weight_decay, out=self._step_buf).add_(G)   # G + wd X
        self.V.mul_(cfg.beta * corr).add_(G)                          # v = β (η_{t-1}/η_t) v + g
        if cfg.nesterov:
            self.X.add_(torch.add(G, self.V, alpha=cfg.beta, out=self._step_buf), alpha=-eta)
        else:
            self.X.add_(self.V, alpha=-eta)                            # X is now x^{t+1/2}

    def _sync(self, X: torch.Tensor, t: int, eta: float) -> dict:
        """x̂ ← x̂ + C(x^{t+1/2} - x̂) on the firing rows, then x ← x^{t+1/2} + γ (W x̂ - x̂), all in place in X."""
        cfg = self.cfg
        sq = torch.zeros(self.n, dtype=torch.float64, device=self.device)
        for i, (c, (a, b)) in enumerate(zip(self.copies, self.segments)):
            if c.value is None:
                c.value = torch.zeros(self.n, b - a, dtype=self.dtype, device=self.device)
            diff = torch.sub(X[:, a:b], c.value, out=self._diff[i])
            square = torch.mul(diff, diff, out=self._work[i])
            sq += square.sum(dim=1).to(torch.float64)
        c_t = float(self.threshold(t, eta)) if self.threshold is not None else 0.0
        drift = self.reference.drift(sq, X)            # ‖x^{t+1/2} - r_i‖², r_i per ch3:A-trigger-ref
        fire = trigger_mask(drift, c_t, eta, self.first_sync, cfg.force_first)
        self.reference.sent(X, fire)                   # copies the rows: X is updated in place below
        self.first_sync = False
        step_bits = np.zeros(self.n, dtype=np.int64)
        any_fire = bool(fire.any())
        for i, (c, (a, b)) in enumerate(zip(self.copies, self.segments)):
            q = None
            if any_fire:
                out = c.apply_difference(self._diff[i], self.generator, mask=None if fire.all() else fire,
                                         message=cfg.memory_efficient)
                step_bits += out.bits
                if self.ledger is not None:
                    self.ledger.record("p2p", out, step=t)
                q = out.value
            xh_l, mixed = c.value, self._work[i]
            if cfg.memory_efficient:
                if self.S[i] is None:
                    self.S[i] = torch.zeros_like(xh_l)
                if q is not None:
                    self.S[i] = self.S[i] + self.mix(q)
                torch.sub(self.S[i], xh_l, out=mixed)
            elif self._nbrs is not None:            # the next four lines in one pass
                self._fused.gossip_add(X[:, a:b].numpy(), xh_l.numpy(), self._nbrs[0], self._nbrs[1],
                           self._scalar(cfg.gamma), cfg.gamma != 1.0)
                continue
            else:
                torch.sub(self.mix(xh_l, out=mixed), xh_l, out=mixed)
            if cfg.gamma != 1.0:                    # γ (W x̂ - x̂); a product with 1.0 is exact, so it is skipped
                mixed.mul_(cfg.gamma)
            X[:, a:b] += mixed
        if cfg.flag_bits:
            step_bits += np.where(fire, 0, cfg.flag_bits)
        self.bits += step_bits
        self.n_sync += 1
        self.n_fired += fire
        if any_fire:
            self.rounds += 1
        mx = int(step_bits.max())
        self.airtime_bits += mx
        self.sync_log.append((t, int(fire.sum()), mx))
        return {"sync": True, "fire": fire, "c_t": c_t, "sq_drift": drift, "step_bits": step_bits}

    # ---- checkpoint -------------------------------------------------------------------------
    _COUNTERS = ("t", "eta_prev", "first_sync", "bits", "n_sync", "n_fired", "rounds", "airtime_bits", "sync_log")

    def state_dict(self) -> dict:
        """Everything a later step reads: the iterates, momenta, public copies and memory-efficient sums, the
        trigger reference, the compressor's random stream, the ledger and the counters (copies, so the engine may
        go on).  An engine built from the same configuration and `load_state_dict` of it continues exactly where
        this one stopped (a run resumed from a checkpoint, docs/cluster.md)."""
        def clone(x):
            return None if x is None else x.clone()

        return {"X": self.X.clone(), "V": self.V.clone(), "copies": [clone(c.value) for c in self.copies],
                "S": [clone(s) for s in self.S], "reference": clone(self.reference.last),
                "generator": None if self.generator is None else self.generator.get_state(),
                "ledger": copy.deepcopy(self.ledger), **{k: copy.deepcopy(getattr(self, k)) for k in self._COUNTERS}}

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()` of an engine of the same configuration (the buffers keep their identity)."""
        if tuple(state["X"].shape) != (self.n, self.d) or len(state["copies"]) != len(self.copies):
            raise ValueError(f"checkpoint of a {tuple(state['X'].shape)} model with {len(state['copies'])} segments; "
                             f"this engine is {(self.n, self.d)} with {len(self.copies)}")
        self.X.copy_(state["X"])
        self.V.copy_(state["V"])
        for c, value in zip(self.copies, state["copies"]):
            c.value = None if value is None else value.clone()
        self.S = [None if s is None else s.clone() for s in state["S"]]
        self.reference.last = None if state["reference"] is None else state["reference"].clone()
        if self.generator is not None:
            self.generator.set_state(state["generator"])
        self.ledger = copy.deepcopy(state["ledger"])
        for k in self._COUNTERS:
            setattr(self, k, copy.deepcopy(state[k]))

    # ---- diagnostics ------------------------------------------------------------------------
    def trigger_rate(self) -> float:
        return float(self.n_fired.sum() / max(1, self.n_sync * self.n))

    def consensus_distance(self) -> float:
        m = self.X.mean(dim=0, keepdim=True)
        return float(((self.X - m) ** 2).sum() / self.n)

