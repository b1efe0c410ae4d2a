"""Time per CuteMaxVar iteration (q = 3, T = 10) at the Fig. 8 size and at the small synthetic size.

    PYTHONPATH=src python benchmarks/bench_gcca.py [--threads 1] [--iters 20]

Sizes: (J, N, rho, K, I) = (50000, 2000, 0.02, 5, 3) sparse (D = 200, A-25 densities) and (500, 25, dense, 5, 3)
(D = 20).  Reported: setup (generation, Gram eigensystems, MVLSA, v* by Lanczos at the large size) and the mean
wall time per outer iteration for SGD (batch 5000 / 150) and for the full gradient, with the simulated-parallel
clock of §4.10 beside the plain wall time.  Goal (issue 5): < 0.3 s per iteration at the large size.
"""

from __future__ import annotations

import argparse
import time

from fedrepro.gcca import EngineConfig, run_maxvar
from fedrepro.gcca.generators import dense_views, sparse_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.optimum import optimum
from fedrepro.runtime import limit_threads, rng_stream


def bench(name, make, K, K_tilde, batches, iters, lanczos):
    t0 = time.perf_counter()
    views = make()
    t1 = time.perf_counter()
    warm = mvlsa(views, K, K_tilde)
    t2 = time.perf_counter()
    line = f"{name}: generate+Gram eig {t1 - t0:.2f} s, MVLSA {t2 - t1:.2f} s"
    if lanczos:
        t3 = time.perf_counter()
        opt = optimum(views, K)
        line += f", v* ({opt.method}) {time.perf_counter() - t3:.2f} s"
    print(line)
    for batch in batches:
        for q in (3, None):
            cfg = EngineConfig(K=K, R=iters, T=10, batch=batch, q=q)
            t = time.perf_counter()
            res = run_maxvar(views, warm.Q, cfg, rng_stream(0, "bench", "sgd"), rng_stream(0, "bench", "c"))
            wall = (time.perf_counter() - t) / iters
            method = "CuteMaxVar q=3" if q else "AltMaxVar     "
            print(f"  {method} {'full gradient' if batch is None else f'SGD batch {batch}':>16}: "
                  f"{1e3 * wall:7.1f} ms/iteration (wall, incl. objective), simulated-parallel clock "
                  f"{1e3 * res.time[-1] / iters:7.1f} ms/iteration")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    limit_threads(a.threads)
    print(f"BLAS threads: {a.threads}")
    bench("small dense (500, 25, 20, 5, 3)",
          lambda: dense_views(rng_stream(0, "bench", "small"), 500, 25, 20, 3, 0.1), 5, 10, [150, None], 200, True)
    bench("large sparse (50000, 2000, rho 0.02, 5, 3)",
          lambda: sparse_views(rng_stream(0, "bench", "large"), 50000, 2000, 200, 3, 0.1), 5, 50, [5000, None],
          a.iters, True)


if __name__ == "__main__":
    main()
