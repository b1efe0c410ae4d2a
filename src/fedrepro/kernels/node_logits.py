"""Z_i = x_i W_i for every node i: x (n, 5, K) minibatch rows times W (n, K, 10) weights, binary32, in the order
OpenBLAS's SGEMM sums each node's product on this project's AVX2 machine without AVX-512 (an AMD EPYC).

The decentral MNIST task's softmax residuals start from this product: 60 nodes' batches of 5 rows against their
784 x 10 weights, every iteration. NumPy's matmul takes it as 60 calls of OpenBLAS's SGEMM, each mostly call and
packing overhead (about 4.7 us for 39,200 multiply-adds): 11 % of a quick `fig3_4_gamma` run. The order, found by
testing hypotheses against OpenBLAS's outputs and checked on every entry of random products:

- K is cut into parts as OpenBLAS's level-3 driver cuts it (``k_parts``: 320 while twice that remains, then the
  rest in two halves rounded up to 8; for K = 784: 320, 232, 232), each part summed on its own from +0 and added
  to the running total in turn;
- within a part, the inner block (rows 0-3, columns 0-7) takes two chains of fused multiply-adds, one over the
  even k and one over the odd k of the part, added (even + odd) at its end;
- the edges (row 4; columns 8 and 9) take one chain of fused multiply-adds over the part's k.

``logits`` makes the same roundings in the same order: the inner block and row 4 as eight-lane vectors (``fma8``)
and the edges as ten scalar chains, in passes over 64 k at a time so that each node's weights are read from memory
once. Callers check the order on their machine first (``fedrepro.models.logreg.logits_like_blas``): OpenBLAS picks
its kernels by CPU. tests/kernels/test_node_logits.py checks the loops against a scalar transcription of the order
above on any machine, and against NumPy bit for bit where the probe agrees.
"""

from __future__ import annotations

import numba
import numpy as np

from fedrepro.kernels.intrinsics import add8, fma, fma8, load8, splat8, store8

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)

ROWS, COLUMNS = 5, 10      # the shape the order above is known for
PART, PART_ROUND = 320, 8  # OpenBLAS's K blocking as observed here
CHUNK = 64                 # k per pass: an even count, so each pass starts on an even k of its part


@_jit
def k_parts(K):
    """The starts and end of K's parts: [0, 320, 552, 784] for K = 784."""
    bounds = [0]
    start = 0
    while start < K:
        rest = K - start
        if rest >= 2 * PART:
            size = PART
        elif rest > PART:
            size = (rest // 2 + PART_ROUND - 1) // PART_ROUND * PART_ROUND
        else:
            size = rest
        start += size
        bounds.append(start)
    return bounds


# inlined in numba's IR: left to LLVM, the call made the kernel 6 % slower
@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _rows_step(xi, k, r1, r2, r3, r4, wk, a0, a1, a2, a3, a4):
    """a_r + x[r, k] w[k, 0:8] for the rows r = 0..4 (xi: the node's rows, flat; r1..r4: rows 1-4's offsets in it),
    each one fused multiply-add."""
    return (fma8(splat8(xi[k]), wk, a0), fma8(splat8(xi[r1 + k]), wk, a1), fma8(splat8(xi[r2 + k]), wk, a2),
            fma8(splat8(xi[r3 + k]), wk, a3), fma8(splat8(xi[r4 + k]), wk, a4))


@_jit
def logits(x, W, Z):
    """Z[i] = x[i] @ W[i]: x (n, 5, K), W (n, K, 10), Z (n, 5, 10), binary32, C-contiguous; Z overwritten.
    K even (each part's length then is too)."""
    n, _, K0 = x.shape
    bounds = k_parts(K0)
    # unsigned indices: numba wraps negative signed ones around (a sign test per load)
    K, C, one, two = np.uint64(K0), np.uint64(COLUMNS), np.uint64(1), np.uint64(2)
    r1, r2, r3, r4 = K, np.uint64(2) * K, np.uint64(3) * K, np.uint64(4) * K   # the rows' offsets in xi
    c8, c9, chunk = np.uint64(8), np.uint64(9), np.uint64(CHUNK)
    total = np.zeros(ROWS * 8, dtype=np.float32)      # rows 0-4, columns 0-7
    edge_total = np.zeros(ROWS * 2, dtype=np.float32)  # rows 0-4, columns 8-9
    vec = np.zeros(9 * 8, dtype=np.float32)           # a part's vector chains, between passes
    edge = np.zeros(ROWS * 2, dtype=np.float32)       # a part's edge chains, between passes
    for i in range(n):
        w = W[i].reshape(K0 * COLUMNS)
        xi = x[i].reshape(ROWS * K0)
        total[:] = 0.0
        edge_total[:] = 0.0
        for p in range(len(bounds) - 1):
            start, end = np.uint64(bounds[p]), np.uint64(bounds[p + 1])
            vec[:] = 0.0
            edge[:] = 0.0
            for k0 in range(start, end, chunk):
                k1 = min(end, k0 + chunk)
                e0, o0, e1, o1 = load8(vec, 0), load8(vec, 8), load8(vec, 16), load8(vec, 24)
                e2, o2, e3, o3, row4 = load8(vec, 32), load8(vec, 40), load8(vec, 48), load8(vec, 56), load8(vec, 64)
                for k in range(k0, k1, two):              # even k, then odd k: the inner block's two chains
                    e0, e1, e2, e3, row4 = _rows_step(xi, k, r1, r2, r3, r4, load8(w, k * C), e0, e1, e2, e3, row4)
                    k_odd = k + one
                    o0, o1, o2, o3, row4 = _rows_step(xi, k_odd, r1, r2, r3, r4, load8(w, k_odd * C), o0, o1, o2, o3, row4)
                store8(vec, 0, e0)
                store8(vec, 8, o0)
                store8(vec, 16, e1)
                store8(vec, 24, o1)
                store8(vec, 32, e2)
                store8(vec, 40, o2)
                store8(vec, 48, e3)
                store8(vec, 56, o3)
                store8(vec, 64, row4)
                a0, b0, a1, b1, a2 = edge[0], edge[1], edge[2], edge[3], edge[4]
                b2, a3, b3, a4, b4 = edge[5], edge[6], edge[7], edge[8], edge[9]
                for k in range(k0, k1):                   # columns 8 (a) and 9 (b) of rows 0-4: ten chains
                    w8, w9 = w[k * C + c8], w[k * C + c9]
                    x0, x1, x2, x3, x4 = xi[k], xi[r1 + k], xi[r2 + k], xi[r3 + k], xi[r4 + k]
                    a0, b0 = fma(x0, w8, a0), fma(x0, w9, b0)
                    a1, b1 = fma(x1, w8, a1), fma(x1, w9, b1)
                    a2, b2 = fma(x2, w8, a2), fma(x2, w9, b2)
                    a3, b3 = fma(x3, w8, a3), fma(x3, w9, b3)
                    a4, b4 = fma(x4, w8, a4), fma(x4, w9, b4)
                edge[0], edge[1], edge[2], edge[3], edge[4] = a0, b0, a1, b1, a2
                edge[5], edge[6], edge[7], edge[8], edge[9] = b2, a3, b3, a4, b4
            for r in range(4):
                store8(total, 8 * r, add8(load8(total, 8 * r), add8(load8(vec, 16 * r), load8(vec, 16 * r + 8))))
            store8(total, 32, add8(load8(total, 32), load8(vec, 64)))
            for j in range(ROWS * 2):
                edge_total[j] += edge[j]
        zi = Z[i].reshape(ROWS * COLUMNS)
        for r in range(ROWS):
            for c in range(8):
                zi[r * COLUMNS + c] = total[r * 8 + c]
            zi[r * COLUMNS + 8] = edge_total[2 * r]
            zi[r * COLUMNS + 9] = edge_total[2 * r + 1]
