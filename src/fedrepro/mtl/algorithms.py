"""Algorithms 2 (sample feedback) and 3 (bandit feedback) of thesis ch. 4, and the vanilla scheme.

All nodes and edges are processed at once (edge index arrays and a sparse incidence matrix).
Per iteration t = 1..T (Algorithm 2, Sec. 4.3.1):

    q_i     = C(x~_i(t) - x^_i(t-1))            (t = 1: uncompressed, x^(0) = 0)     fedrepro.comm.TrackedCopy
    x^_i(t) = x^_i(t-1) + q_i;  x_i(t) = Π(x^_i(t))                                  Π onto X (Alg. 3: X~)
    xbar(t) = x(t)/t + (t-1)/t xbar(t-1)                                           the output (A-M1)
    p_i     = ∇f_i(x_i, ξ_i) (Alg. 2)  or  d/(2ζ)[f_i(x_i+ζu_i, ξ_i) - f_i(x_i-ζu_i, ξ_i)] u_i (Alg. 3)
    x~_i(t+1) = Π(x~_i(t) - η p_i - 2η Σ_j λ_ij ∇_{x_i} g_ij(x_i, x_j))
    λ_ij(t+1) = [λ_ij + η(g_ij(x_i, x_j) - δ η λ_ij)]^+

One λ per undirected edge (λ_ij = λ_ji by induction; both endpoints compute it from public copies:
never transmitted).  Every message goes through ``fedrepro.comm``: node i unicasts q_i to each of
its |N_i| neighbours, recorded in a ``BitLedger`` with ``copies=degree`` (A-B1).  The vanilla
scheme sends x~_i itself at full precision every iteration (32 d bits per message) and computes at
x = x~; with the identity compressor Algorithm 2 gives the same iterates (tested).

The ledger is keyed by logging bucket (records of one step are summed), so it stays small; its
cumulative bits at bucket k are exact at the k-th logged iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fedrepro.comm import BitLedger, Identity, TrackedCopy
from fedrepro.comm.base import Compressor
from fedrepro.mtl.problems import constraint_gradient, edge_values
from fedrepro.mtl.projection import project_ball, project_shrunk
from fedrepro.mtl.zeroth_order import sphere_directions, two_point_estimate

FEEDBACKS = ("sample", "bandit")


@dataclass
class RunResult:
    log_steps: np.ndarray
    metrics: dict[str, np.ndarray]
    ledger: BitLedger
    xbar: np.ndarray
    x: np.ndarray
    x_tilde: np.ndarray
    lam: np.ndarray
    history: list = field(default_factory=list)  # (t, x(t), λ(t)) per iteration when keep_history


def log_grid(T: int, n_points: int = 200) -> np.ndarray:
    """Logged iterations: half geometric, half linear in [1, T], always with 1 and T."""
    geo = np.geomspace(1, T, max(2, n_points // 2))
    lin = np.linspace(1, T, max(2, n_points // 2))
    return np.unique(np.round(np.concatenate([geo, lin, [1, T]])).astype(np.int64))


def run_scheme(problem, x_init: np.ndarray, *, compressor: Compressor | None, feedback: str, eta: float,
               delta: float, zeta: float, T: int, rng_samples: np.random.Generator,
               rng_directions: np.random.Generator | None = None, rng_compressor: np.random.Generator | None = None,
               log_steps: np.ndarray | None = None, metrics_fn: Callable | None = None, keep_history: bool = False,
               progress=None) -> RunResult:
    """Run one scheme for T iterations.  ``compressor=None`` is the vanilla (uncompressed) scheme.

    x_init: x~(1), already in X (Alg. 2) or X~ (Alg. 3).  metrics_fn(xbar, x, lam) -> {name: float}
    is evaluated at the logged iterations.  ``rng_compressor``: the random stream of a randomized compressor
    (Rand-k, QSGD; drawn once per sender and message; Sec. 4.3.1), its own stream so that the sample and
    direction streams draw the same numbers whichever compressor runs; deterministic compressors ignore it.
    """
    if feedback not in FEEDBACKS:
        raise ValueError(f"feedback must be one of {FEEDBACKS}; got {feedback!r}")
    graph = problem.graph
    n, d = x_init.shape
    B = graph.incidence()
    degree = graph.degree
    radius = problem.radius
    if feedback == "bandit":
        def proj(Y):
            return project_shrunk(Y, radius, zeta)
        if rng_directions is None:
            raise ValueError("bandit feedback needs rng_directions")
    else:
        def proj(Y):
            return project_ball(Y, radius)
    log_steps = log_grid(T) if log_steps is None else np.asarray(log_steps, dtype=np.int64)
    bucket = np.searchsorted(log_steps, np.arange(T + 1))  # iteration t -> its logging bucket
    is_logged = np.zeros(T + 1, dtype=bool)
    is_logged[log_steps[log_steps <= T]] = True

    ledger = BitLedger(n)
    identity = Identity()
    copy = None if compressor is None else TrackedCopy(compressor)
    x_tilde = np.array(x_init, dtype=np.float64, copy=True)
    lam = np.zeros(graph.n_edges)
    xbar = np.zeros_like(x_tilde)
    metrics: dict[str, list] = {}
    history = []
    steps = range(1, T + 1) if progress is None else progress(range(1, T + 1))
    for t in steps:
        # lines 2-7: messages and copies
        if copy is None:
            msg = identity(x_tilde, None)  # vanilla: the parameter itself, full precision
            x = x_tilde
        else:
            msg = copy.update(x_tilde, rng_compressor, compressor=identity if t == 1 else None)
            x = proj(copy.value)
        ledger.record("p2p", msg, step=int(bucket[t]), copies=degree)
        # line 8: running average (the output)
        xbar += (x - xbar) / t
        # lines 9-11: local (estimated) gradient at x, constraint term, primal step
        sample = problem.draw(rng_samples)
        if feedback == "sample":
            g_f = problem.grad(x, sample)
        else:
            U = sphere_directions(rng_directions, n, d)
            g_f = two_point_estimate(lambda Y: problem.loss(Y, sample), x, zeta, U)
        g_edges = edge_values(x, graph, problem.c)
        step = g_f + constraint_gradient(x, lam, graph, B)
        x_tilde = proj(x_tilde - eta * step)
        if keep_history:
            history.append((t, x.copy(), lam.copy()))  # x(t), λ(t)
        # line 12: dual step, one λ per undirected edge
        lam = np.maximum(0.0, lam + eta * (g_edges - delta * eta * lam))
        if is_logged[t] and metrics_fn is not None:
            for k, v in metrics_fn(xbar, x, lam).items():
                metrics.setdefault(k, []).append(v)
    logged = log_steps[log_steps <= T]
    return RunResult(log_steps=logged, metrics={k: np.asarray(v) for k, v in metrics.items()}, ledger=ledger,
                     xbar=xbar, x=np.array(x, copy=True), x_tilde=x_tilde, lam=lam, history=history)
