"""Why Fig. 6's fastest curves (to 2 v*) are the full gradient (issue 17): time per iteration, split.

    PYTHONPATH=src python benchmarks/bench_gcca_fig6.py [--threads 1] [--iters 60] [--large-J 50000]

One outer iteration of Algorithm 1 for each Fig. 6 variant (CuteMaxVar q = 3 with SGD batch 10 .. 350 and the full
gradient, AltMaxVar full gradient; T = 10, K = 5, I = 3, N = 25, D = 20), replayed with the engine's own building
blocks (row selection, gradient, M = X Q, uplink copy update, server G-step and downlink) and each block timed:

  select    `sample_rows`: T draws of B rows per view (O(J) per draw: J random keys, then a partition)
  gradient  the T gradient steps (SGD: gather B rows, two B x N x K products; full: X^T G once, then the
            precomputed N x N Gram times Q, independent of J)
  apply     M_i = X_i Q_i (2 J N K flops per view)
  uplink    the error-feedback copy update C(M_i - M_i^) (the compressor: O(J K) element work and random draws)
  server    sum, polar factor of the J x K sum, downlink copy update

The simulated-parallel clock of §4.10 is (select + gradient + apply + uplink) / I + server.  `flops` is the
arithmetic each block must do, and `floor` that arithmetic at the rate one BLAS thread reaches on a large
matrix product: what the block would cost without per-call overhead.  Sizes: J = 500 (the paper's Fig. 6 size,
which quick runs unchanged) and a large J (default 50,000, the paper's Fig. 8 J) with the same N.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fedrepro.comm import TrackedCopy, get_compressor
from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.generators import dense_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.objective import polar
from fedrepro.gcca.views import sample_rows
from fedrepro.runtime import limit_threads, rng_stream

N, D, K, I, T, NU = 25, 20, 5, 3, 10, 0.1
# "cute-bJ": the full gradient as a minibatch of all J rows (gather + two J x N x K products per step), the way the
# authors' Fig. 6 driver runs its full-gradient curves (batch_size = L through the SGD path); the engine never does.
VARIANTS = ([("alt", None, None)] + [(f"cute-b{b}", 3, b) for b in (10, 50, 100, 200, 350)]
            + [("cute-full", 3, None), ("cute-bJ", 3, "J")])
BLOCKS = ("select", "gradient", "apply", "uplink", "server")


def blas_rate(n: int = 600, repeats: int = 5) -> float:
    """flop/s of one dense n x n product (the BLAS's large-matrix rate at the current thread count)."""
    a, b = np.random.default_rng(0).standard_normal((2, n, n))
    best = min(_timed(lambda: a @ b)[1] for _ in range(repeats))
    return 2 * n ** 3 / best


def _timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def flops(J: int, batch: int | None) -> dict[str, float]:
    """Arithmetic per outer iteration, all I views (multiply-adds count 2)."""
    full = batch is None  # the engine's Gram path; an integer batch (up to J) goes through the minibatch path
    grad = (2 * J * N * K + T * 2 * N * N * K) if full else T * 2 * 2 * min(batch, J) * N * K
    return {"select": 0.0, "gradient": I * grad, "apply": I * 2 * J * N * K, "uplink": I * 4 * J * K,
            "server": I * J * K + 2 * J * K * K + 4 * J * K}


def breakdown(views, Q0: np.ndarray, q: int | None, batch, iters: int) -> dict[str, float]:
    """Median seconds per outer iteration of each block (the engine's loop, block by block)."""
    J = views.J
    batch = J if batch == "J" else batch
    full = batch is None
    rng_sgd, rng_comp = rng_stream(0, "fig6-bench", "sgd"), rng_stream(0, "fig6-bench", "comp")
    identity = get_compressor("identity")
    comp = identity if q is None else get_compressor("cutemaxvar", q=q)
    up, down = TrackedCopy(comp), TrackedCopy(comp, batched=False)
    alpha = (1.0 / views.lambda_max)[:, None, None]
    Q = Q0.copy()
    up.update(views.apply(Q), rng_comp, compressor=identity)
    down.update(polar(up.value.sum(axis=0)), rng_comp, compressor=identity)
    rows_out = {b: [] for b in BLOCKS}
    for _ in range(iters):
        t = dict.fromkeys(BLOCKS, 0.0)
        Ghat = down.value
        if full:
            XtG, t["gradient"] = _timed(lambda: views.xt(Ghat))
            for _ in range(T):
                t0 = time.perf_counter()
                Q -= alpha * views.full_gradient(Q, XtG)
                t["gradient"] += time.perf_counter() - t0
        else:
            for _ in range(T):
                rows, dt = _timed(lambda: sample_rows(rng_sgd, I, J, batch))
                t["select"] += dt
                t0 = time.perf_counter()
                Q -= alpha * views.batch_gradient(rows, Q, Ghat)
                t["gradient"] += time.perf_counter() - t0
        M, t["apply"] = _timed(lambda: views.apply(Q))
        _, t["uplink"] = _timed(lambda: up.update(M, rng_comp))
        _, t["server"] = _timed(lambda: down.update(polar(up.value.sum(axis=0)), rng_comp))
        for b in BLOCKS:
            rows_out[b].append(t[b])
    return {b: float(np.median(v)) for b, v in rows_out.items()}


def engine_clock(views, Q0, q, batch, iters) -> tuple[float, float]:
    """The engine's own simulated-parallel clock per iteration (what Fig. 6 plots): median and mean.

    The clock is wall time (perf_counter), so time the process spends descheduled by other load counts; the mean
    (what a cumulative curve shows) carries it, the median mostly not."""
    res = run_maxvar(views, Q0, EngineConfig(K=K, R=iters, T=T, batch=batch, q=q),
                     rng_stream(0, "fig6-bench", "sgd"), rng_stream(0, "fig6-bench", "comp"))
    per_iteration = np.diff(res.time)
    return float(np.median(per_iteration)), float(per_iteration.mean())


def report(J: int, iters: int, rate: float) -> None:
    views = dense_views(rng_stream(0, "fig6-bench", J), J, N, D, I, NU)
    Q0 = mvlsa(views, K, 10).Q
    print(f"\nJ = {J}, N = {N}, D = {D}, K = {K}, I = {I}, T = {T}: ms per outer iteration (median of {iters})")
    head = "".join(f"{b:>10}" for b in BLOCKS)
    print(f"{'variant':<10}{head}{'clock':>9}{'floor':>9}{'overhead':>10}{'engine':>9}{'(mean)':>9}")
    for name, q, batch in VARIANTS:
        t = breakdown(views, Q0, q, batch, iters)
        node = sum(t[b] for b in BLOCKS if b != "server")
        clock = node / I + t["server"]
        f = flops(J, J if batch == "J" else batch)
        floor = (sum(f[b] for b in BLOCKS if b != "server") / I + f["server"]) / rate
        engine = engine_clock(views, Q0, q, batch, iters) if batch != "J" else (np.nan, np.nan)
        print(f"{name:<10}" + "".join(f"{1e3 * t[b]:10.3f}" for b in BLOCKS)
              + f"{1e3 * clock:9.3f}{1e3 * floor:9.3f}{100 * (1 - floor / clock):9.0f}%"
              + "".join(f"{1e3 * e:9.3f}" for e in engine))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--large-J", type=int, default=50000)
    a = ap.parse_args()
    limit_threads(a.threads)
    rate = blas_rate()
    print(f"BLAS threads: {a.threads}; large-product rate {rate / 1e9:.1f} Gflop/s (the floor's rate)")
    print("clock = (select + gradient + apply + uplink) / I + server; floor = the clock's flops at that rate; "
          "overhead = 1 - floor / clock; engine = run_maxvar's own clock per iteration, median and mean")
    for J in (500, a.large_J):
        report(J, a.iters, rate)


if __name__ == "__main__":
    main()
