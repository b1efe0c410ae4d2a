"""One engine for Algorithm 1 (CuteMaxVar, Sec. III-D); AltMaxVar is the same loop with the identity compressor.

Every message goes through ``fedrepro.comm``: the uplink M̂_i and downlink Ĝ are ``TrackedCopy``
error-feedback copies (x̂ <- x̂ + C(x - x̂)), the initial round is sent with ``Identity`` (the only
full-precision exchange), and every message is recorded in a ``BitLedger`` (step 0 = initial round).
BPV and bits are read back from the ledger, never computed from a formula.

Per outer iteration r = 0..R-1:
  nodes:  T (S)GD steps on 1/2 ||X_i Q_i - Ĝ||^2 from Q_i^(r) with step 1/lambda_max(X_i^T X_i)
          (minibatch: (J/B) X_F^T (X_F Q - Ĝ_F), F uniform without replacement; full: X^T X Q - X^T Ĝ);
          M_i = X_i Q_i; send C(M_i - M̂_i)
  server: Y = sum_i (C_J) M̂_i + prox_weight G^(r); G^(r+1) = polar(Y); broadcast C(G^(r+1) - Ĝ)
  log:    f^(r+1) = sum_i 1/2 ||M_i - G^(r+1)||^2 (exact M_i and G: the cost of Problem (7), Sec. V-A.3)
Wall clock (Figs. 6-7, gcca:A-16): t^(r) = (node phase)/I + server phase.  The node phase is one batched
computation over the I simulated nodes, so its duration divided by I is the mean per-node time.  Durations are CPU
time (fedrepro.runtime.compute_clock): the clock of an idle single-threaded machine, whatever the load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedrepro.comm import BitLedger, TrackedCopy, get_compressor
from fedrepro.comm.conventions import gcca_bpv_from_ledger
from fedrepro.gcca.links import CuteMaxVarLinks
from fedrepro.gcca.objective import maxvar_objective, polar
from fedrepro.gcca.views import _Views, sample_rows
from fedrepro.registry.methods import build_compressor
from fedrepro.runtime import compute_clock

_timer = compute_clock()  # CPU time: the timing columns must not change with the machine's load (runtime.compute_clock)


@dataclass(frozen=True)
class EngineConfig(CuteMaxVarLinks):
    K: int
    R: int
    T: int = 10
    batch: int | None = None  # SGD minibatch size; None (or >= J): full gradient
    q: int | None = None  # bits per entry of CuteMaxVar's compressor; None: AltMaxVar (identity, 32 bits)
    compressor: Any = None  # any fedrepro.comm compressor spec in CuteMaxVar's place (overrides q)
    prox_weight: float = 0.0  # 1/alpha_G of the proximal G-step (eq. 15); 0 = the authors' code (A-1)
    center: bool = False  # apply C_J in the G-step (deep only, A-2)
    record: tuple[int, ...] | None = None  # steps at which f is evaluated (None: every step 0..R)


@dataclass
class RunResult:
    steps: np.ndarray  # recorded steps (0 = initialization)
    objective: np.ndarray  # f at those steps
    time: np.ndarray  # cumulative simulated-parallel wall clock (s) at those steps
    time_max_node: np.ndarray  # cumulative max-node variant (batched: equals the mean, see module doc)
    bits_up: np.ndarray  # cumulative uplink bits, all nodes
    bits_down: np.ndarray  # cumulative downlink bits, all nodes (a broadcast counts once per receiver)
    bpv: np.ndarray  # BPV of one node's uplink (value + sign bits per entry, cumulative)
    Q: np.ndarray
    G: np.ndarray
    Ghat: np.ndarray
    ledger: BitLedger = field(repr=False)
    metrics: dict = field(default_factory=dict)  # callback name -> values at the steps it reported (see run_maxvar)
    metric_steps: np.ndarray | None = None


def _center(Y: np.ndarray) -> np.ndarray:
    return Y - Y.mean(axis=-2, keepdims=True)


def _first_calls_off_the_clock(views: _Views, Q: np.ndarray, comp, cfg: EngineConfig, full: bool) -> None:
    """The timed phases' products and copy updates once, on copies and with a private random stream: a compiled
    kernel's first call in a process starts numba (about 1 s, fedrepro.kernels) and would otherwise land in the
    wall clock of the first iteration (Figs. 6-7). Consumes nothing of the run's streams and changes no value."""
    rng = np.random.default_rng(0)
    M = views.apply(Q)
    TrackedCopy(comp).update_in_place(M, rng)
    TrackedCopy(comp, batched=False).update_in_place(np.ascontiguousarray(M[0]), rng)
    if not full:
        views.batch_gradient(sample_rows(rng, views.I, views.J, cfg.batch, increasing=True), Q, M[0])


def run_maxvar(views: _Views, Q0: np.ndarray, cfg: EngineConfig, rng_sgd: np.random.Generator,
               rng_comp: np.random.Generator, callback=None, callback_every: int = 1) -> RunResult:
    """Run Algorithm 1 from Q_i^(0) = Q0 (I, N, K); G^(0) = polar(sum_i M̂_i^(0)) (A-5, A-19).

    ``callback(r, Q, G)`` (optional) is called at r = 0, every ``callback_every`` steps and at R, outside the
    timed phases, and returns a dict of scalar metrics (e.g. Europarl's test AC); they land in ``metrics``."""
    I, J, K = views.I, views.J, cfg.K
    identity = get_compressor("identity")
    comp = build_compressor(cfg.compressor_spec())
    full = cfg.batch is None or cfg.batch >= J
    alpha = (1.0 / views.lambda_max)[:, None, None]
    record = np.arange(cfg.R + 1) if cfg.record is None else np.unique(np.clip(np.asarray(cfg.record), 0, cfg.R))
    want = np.zeros(cfg.R + 1, dtype=bool)
    want[record] = True

    up = TrackedCopy(comp)  # M̂_i, (I, J, K)
    down = TrackedCopy(comp, batched=False)  # Ĝ, (J, K)
    ledger = BitLedger(I)
    Q = np.array(Q0, dtype=np.float64, copy=True)
    _first_calls_off_the_clock(views, Q, comp, cfg, full)

    t0 = _timer()
    M = views.apply(Q)
    ledger.record("up", up.update(M, rng_comp, compressor=identity), step=0)
    t1 = _timer()
    Y = up.value.sum(axis=0)
    G = polar(_center(Y) if cfg.center else Y)
    ledger.record("down", down.update(G, rng_comp, compressor=identity), step=0)
    t2 = _timer()
    clock = (t1 - t0) / I + (t2 - t1)
    clock_max = clock

    objective, times, times_max = [], [], []
    cb_steps, cb_values = [], []

    def _callback(r):
        if callback is not None and (r % callback_every == 0 or r == cfg.R):
            cb_steps.append(r)
            cb_values.append(callback(r, Q, G))

    _callback(0)
    if want[0]:
        objective.append(maxvar_objective(M, G))
        times.append(clock)
        times_max.append(clock_max)
    with np.errstate(over="ignore", invalid="ignore"):
        for r in range(cfg.R):
            t0 = _timer()
            Ghat = down.value
            if full:
                XtG = views.xt(Ghat)
                for _ in range(cfg.T):
                    Q -= alpha * views.full_gradient(Q, XtG)
            else:
                for _ in range(cfg.T):
                    rows = sample_rows(rng_sgd, I, J, cfg.batch, increasing=True)
                    Q -= alpha * views.batch_gradient(rows, Q, Ghat)
            M = views.apply(Q)
            msg_up = up.update_in_place(M, rng_comp)   # = up.update(M, rng_comp): the same x̂, bits and draws
            t1 = _timer()
            Y = up.value.sum(axis=0)
            if cfg.center:
                Y = _center(Y)
            if cfg.prox_weight:
                Y = Y + cfg.prox_weight * G
            G = polar(Y)
            msg_down = down.update_in_place(G, rng_comp)
            t2 = _timer()
            ledger.record("up", msg_up, step=r + 1)
            ledger.record("down", msg_down, step=r + 1)
            clock += (t1 - t0) / I + (t2 - t1)
            clock_max += (t1 - t0) / I + (t2 - t1)
            if want[r + 1]:
                objective.append(maxvar_objective(M, G))
                times.append(clock)
                times_max.append(clock_max)
            _callback(r + 1)

    _, up_bits = ledger.cumulative("up")
    _, down_bits = ledger.cumulative("down")
    _, bpv = gcca_bpv_from_ledger(ledger, J * K, "up", node=0)
    return RunResult(steps=record, objective=np.array(objective), time=np.array(times),
                     time_max_node=np.array(times_max), bits_up=up_bits[record], bits_down=down_bits[record],
                     bpv=bpv[record], Q=Q, G=G, Ghat=down.value, ledger=ledger,
                     metrics={k: np.array([v[k] for v in cb_values]) for k in (cb_values[0] if cb_values else {})},
                     metric_steps=np.array(cb_steps, dtype=int) if cb_steps else None)
