"""Paper-scale cost of one Fig. 9 iteration (spec §5.7) on synthetic hashed Europarl-like views.

I = 10 views of J = 160,000 sentences, ~nnz_row distinct words per sentence drawn from a Zipf vocabulary of
`vocab` words per language (the kept hashed buckets), K = 10, T = 20, SGD batch 2000, q = 3 (CuteMaxVar) and
AltMaxVar; random Q^(0) (MVLSA is timed separately on one view).  AC: one evaluation on `ac_rows` test rows,
scaled by (10,000 / ac_rows)^2 to the paper's 10,000.  Peak memory from resource.getrusage.

    python benchmarks/bench_gcca_europarl.py [--J 160000] [--vocab 80000] [--iters 3]
"""

import argparse
import resource
import time

import numpy as np
import scipy.sparse as sp

from fedrepro.gcca.alignment import alignment_accuracy
from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.europarl import HashedViews
from fedrepro.runtime import limit_threads


def zipf_view(rng, J, vocab, nnz_row):
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    cols = rng.choice(vocab, size=J * nnz_row, p=p)
    rows = np.repeat(np.arange(J), nnz_row)
    X = sp.csr_matrix((np.ones(J * nnz_row), (rows, cols)), shape=(J, vocab))
    X.sum_duplicates()
    return X


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--I", type=int, default=10)
    ap.add_argument("--J", type=int, default=160000)
    ap.add_argument("--vocab", type=int, default=80000)
    ap.add_argument("--nnz-row", type=int, default=25)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--ac-rows", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    limit_threads(a.threads)
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    Xs = [zipf_view(rng, a.J, a.vocab, a.nnz_row) for _ in range(a.I)]
    print(f"generate: {time.perf_counter() - t:.1f} s, nnz/view {np.mean([x.nnz for x in Xs]):.3g}")
    t = time.perf_counter()
    views = HashedViews(Xs)
    print(f"views + lambda_max (svds k=1 x {a.I}): {time.perf_counter() - t:.1f} s")
    Q0 = rng.standard_normal((a.I, views.N, 10)) * 1e-3
    for q in (None, 3):
        cfg = EngineConfig(K=10, R=a.iters, T=20, batch=2000, q=q)
        t = time.perf_counter()
        res = run_maxvar(views, Q0, cfg, np.random.default_rng(1), np.random.default_rng(2))
        wall = (time.perf_counter() - t) / a.iters
        print(f"{'AltMaxVar' if q is None else 'CuteMaxVar q=3'}: {wall:.2f} s / iteration (incl. f and the init round"
              f" amortized over {a.iters}), simulated-parallel clock {np.diff(res.time).mean():.2f} s / iteration")
    Z = rng.standard_normal((a.I, a.ac_rows, 10))
    t = time.perf_counter()
    alignment_accuracy(Z)
    ac = time.perf_counter() - t
    print(f"AC on {a.ac_rows} test rows: {ac:.1f} s -> {ac * (10000 / a.ac_rows) ** 2:.0f} s at 10,000 (x (10k/n)^2)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
