"""Time per CuteMaxVar iteration at the Fig. 8 size, beside a plain NumPy/SciPy reference and the memory bound.

    PYTHONPATH=src python benchmarks/bench_gcca.py [--threads 1] [--iters 5] [--pairs 5] [--parts]

--parts also times reading the minibatch rows alone (their stored entries, nothing computed): the floor the
minibatch gradients cannot go below however they compute, which the byte-count limit underestimates.

Size: (J, N, rho, K, I) = (50000, 2000, 0.02, 5, 3) sparse views (D = 200, A-25 densities), SGD batch 5000,
T = 10, q = 3, warm start from MVLSA. Compared, interleaved in one process (blocks of --iters outer iterations,
--pairs rounds, CPU time of this process; medians):

- engine:    fedrepro.gcca.run_maxvar (CuteMaxVar q = 3; AltMaxVar beside it; and CuteMaxVar with the compiled
             kernels switched off, FEDREPRO_KERNELS=0: SciPy's products and NumPy's quantizer),
- reference: benchmarks/reference/cutemaxvar_numpy.py, a plain implementation with the engine's random streams
             that samples minibatch rows as the engine did before issue 19 (its "before"),
- limit:     bytes a fused implementation must move per iteration (minibatch keys and rows, one pass over
             each view for M = X Q, the compressor's passes, the objective) / copy bandwidth measured here.

The CuteMaxVar runs use the same streams, so their objectives must agree to rounding (checked).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np

from fedrepro.runtime import limit_threads, rng_stream

HERE = Path(__file__).resolve().parent
SIZE = dict(J=50000, N=2000, D=200, I=3, nu=0.1)
K, K_TILDE, T, BATCH, Q_BITS = 5, 50, 10, 5000, 3


def load_reference():
    spec = importlib.util.spec_from_file_location("cutemaxvar_numpy", HERE / "reference" / "cutemaxvar_numpy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def copy_bandwidth(nbytes: int = 256 * 2**20, repeats: int = 5) -> float:
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best


def bytes_per_iteration(views, batch: int, T: int, K: int) -> int:
    I, J, N = views.I, views.J, views.N
    nnz = sum(x.nnz for x in views.Xs)
    per_nnz = views.Xs[0].data.itemsize + views.Xs[0].indices.itemsize
    sgd = T * (I * 2 * J * 8 + batch / J * nnz * per_nnz + I * batch * K * 8 + I * 2 * N * K * 8)
    apply = nnz * per_nnz + I * J * K * 8
    compress = 5 * (I + 1) * J * K * 8           # read x and x̂, write and read the uniforms, write x̂
    objective = (I + 1) * J * K * 8
    return int(sgd + apply + compress + objective)


def row_floor(views, rows) -> float:
    """Read every stored entry (index and value) of each view's minibatch rows once, in the rows' order, and nothing
    else: what the minibatch gradient cannot avoid reading. The rows lie scattered over the views' CSR arrays, so
    this is bound by the latency of their first cache lines, which the byte count (the memory limit) does not see."""
    import numba

    global _touch
    if "_touch" not in globals():
        @numba.njit(cache=False, nogil=True, boundscheck=False)
        def _touch(indptr, indices, data, r):
            s, c = 0.0, 0
            for i in r:
                for p in range(indptr[i], indptr[i + 1]):
                    s += data[p]
                    c += indices[p]
            return s + c
    return sum(_touch(x.indptr, x.indices, x.data, r) for x, r in zip(views.Xs, rows))


def parts(views, Q0, bw: float) -> None:
    """ms per outer iteration of each block of the engine's iteration, kernels on and off, beside the bytes
    that block must move over the copy bandwidth (its memory limit)."""
    from fedrepro.comm import TrackedCopy, get_compressor
    from fedrepro.gcca.objective import maxvar_objective, polar
    from fedrepro.gcca.views import sample_rows

    rng = np.random.default_rng(0)
    Q = Q0.copy()
    Ghat = polar(views.apply(Q).sum(axis=0))
    rows = sample_rows(rng, views.I, views.J, BATCH, increasing=True)
    M = views.apply(Q)
    nnz = sum(x.nnz for x in views.Xs)
    up = TrackedCopy(get_compressor("cutemaxvar", q=Q_BITS), init=M * 0.5)
    blocks = {
        "sample_rows (x T)": (lambda: [sample_rows(rng, views.I, views.J, BATCH, increasing=True) for _ in range(T)],
                              T * views.I * views.J * 16),
        "batch_gradient (x T)": (lambda: [views.batch_gradient(rows, Q, Ghat) for _ in range(T)],
                                 T * (BATCH / views.J * nnz * 12 + views.I * BATCH * K * 16)),
        "apply M = X Q": (lambda: views.apply(Q), nnz * 12 + M.size * 8),
        "uplink copy update": (lambda: up.update_in_place(M, rng), 5 * M.size * 8),
        "objective": (lambda: maxvar_objective(M, Ghat), (views.I + 1) * views.J * K * 8),
    }
    blocks["batch rows read only (x T): the scattered-row floor"] = (
        lambda: [row_floor(views, rows) for _ in range(T)], T * (BATCH / views.J * nnz * 12))
    print("| block | kernels on (ms) | kernels off (ms) | memory limit (ms) | on / limit |\n|---|---|---|---|---|")
    for name, (fn, nbytes) in blocks.items():
        got = {}
        for flag in ("1", "0", "1", "0"):
            os.environ["FEDREPRO_KERNELS"] = flag
            fn()
            t = time.process_time()
            fn()
            got.setdefault(flag, []).append(1e3 * (time.process_time() - t))
        os.environ.pop("FEDREPRO_KERNELS")
        on, off, lim = min(got["1"]), min(got["0"]), 1e3 * nbytes / bw
        print(f"| {name} | {on:.1f} | {off:.1f} | {lim:.1f} | {on / lim:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--parts", action="store_true", help="also time each block of one iteration")
    a = ap.parse_args()
    limit_threads(a.threads)
    from fedrepro.gcca.engine import EngineConfig, run_maxvar
    from fedrepro.gcca.generators import sparse_views
    from fedrepro.gcca.mvlsa import mvlsa

    ref = load_reference()
    t0 = time.perf_counter()
    views = sparse_views(rng_stream(0, "bench", "large"), SIZE["J"], SIZE["N"], SIZE["D"], SIZE["I"], SIZE["nu"])
    Q0 = mvlsa(views, K, K_TILDE).Q
    lam = ref.step_sizes(views.Xs)
    bw = copy_bandwidth()
    limit_ms = 1e3 * bytes_per_iteration(views, BATCH, T, K) / bw
    print(f"setup {time.perf_counter() - t0:.1f} s; BLAS threads {a.threads}; {a.pairs} interleaved rounds of "
          f"{a.iters} iterations; copy bandwidth {bw / 1e9:.1f} GB/s; load average {os.getloadavg()[0]:.2f}")
    if a.parts:
        parts(views, Q0, bw)

    def engine(q, compiled=True):
        cfg = EngineConfig(K=K, R=a.iters, T=T, batch=BATCH, q=q)

        def run():
            os.environ["FEDREPRO_KERNELS"] = "1" if compiled else "0"
            try:
                return run_maxvar(views, Q0, cfg, rng_stream(0, "bench", "sgd"), rng_stream(0, "bench", "c")).objective[1:]
            finally:
                os.environ.pop("FEDREPRO_KERNELS")
        return run

    def reference():
        return ref.run(views.Xs, lam, Q0, R=a.iters, T=T, batch=BATCH, q=Q_BITS, rng_sgd=rng_stream(0, "bench", "sgd"),
                       rng_comp=rng_stream(0, "bench", "c"))

    runs = {"engine CuteMaxVar q=3": engine(Q_BITS), "engine AltMaxVar": engine(None),
            "engine CuteMaxVar q=3, kernels off": engine(Q_BITS, compiled=False), "reference CuteMaxVar q=3": reference}
    ms = {k: [] for k in runs}
    last = {}
    for i in range(a.pairs):
        names = list(runs)
        for k in names[i % len(names):] + names[: i % len(names)]:
            t = time.process_time()
            last[k] = runs[k]()
            ms[k].append(1e3 * (time.process_time() - t) / a.iters)
    eng = np.array(ms["engine CuteMaxVar q=3"])
    ratio = np.median(np.array(ms["reference CuteMaxVar q=3"]) / eng)
    ratio_off = np.median(np.array(ms["engine CuteMaxVar q=3, kernels off"]) / eng)
    agree = np.max(np.abs(last["engine CuteMaxVar q=3"] / last["reference CuteMaxVar q=3"] - 1))
    off_agree = np.max(np.abs(last["engine CuteMaxVar q=3"] / last["engine CuteMaxVar q=3, kernels off"] - 1))
    print("| run | ms / iteration (median) | / memory limit |\n|---|---|---|")
    for k, v in ms.items():
        print(f"| {k} | {np.median(v):.1f} | {np.median(v) / limit_ms:.1f} |")
    print(f"| memory limit | {limit_ms:.1f} | 1 |")
    print(f"reference / engine (paired median): {ratio:.2f}; kernels off / on: {ratio_off:.2f}; objectives agree to "
          f"{agree:.1e} (relative), kernels on and off to {off_agree:.1e}; "
          f"load average after {os.getloadavg()[0]:.2f}")
    assert agree < 1e-6, agree
    assert off_agree < 1e-10, off_agree


if __name__ == "__main__":
    main()
