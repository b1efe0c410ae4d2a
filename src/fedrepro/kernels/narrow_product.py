"""x @ W for many rows x (n, K) and a narrow W (K, C), binary32, in the order oneMKL's one-thread SGEMM sums it on
this project's AVX2 machine without AVX-512 (an AMD EPYC).

The decentral MNIST task scores the averaged model on 10,000 test and 5,000 training rows every 50 iterations: two
products with C = 10 columns that oneMKL (torch's BLAS on the CPU) took 13 and 6.5 ms for here, about a sixth of a
quick `fig3_4_gamma` run. Its order, found by testing hypotheses against its outputs (the layout is this module's
own; oneMKL's source is not public):

- every product is rounded on its own, then added (no fused multiply-add), from +0, over k = 0, 1, ..., K - 1;
- except in the first ``C mod 8`` columns of the odd rows (row indices 1, 3, 5, ...): there each odd group of four
  (k = 4..7, 12..15, ...) is summed on its own first, ((p0 + p1) + p2) + p3, and then added to the chain.

``product`` makes the same roundings in the same order with 8-lane vectors (``float32x8``): a block of 16 rows,
its 8 even rows in one vector and its 8 odd rows in another, against one column at a time (four at a time for
the plain columns). ``blocked_rows`` lays x out that way once, since x (the evaluation rows) does not change.
Callers check the order on their machine before they rely on it (fedrepro.models.fixed_rows): on another CPU, or
another oneMKL, the product is torch's. tests/kernels/test_narrow_product.py checks the loops against a scalar
transcription of the order above on any machine, and against torch bit for bit where torch sums that way.
"""

from __future__ import annotations

import numba
import numpy as np

from fedrepro.kernels.intrinsics import add8, load8, mul8, splat8, store8

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)

ROWS = 16    # rows per block: 8 even, 8 odd


def blocked_rows(x: np.ndarray) -> np.ndarray:
    """x (n, K) binary32 -> (ceil(n / 16), K, 16): block b, feature k holds rows 16b, 16b + 2, ..., 16b + 14 in
    lanes 0-7 and rows 16b + 1, ..., 16b + 15 in lanes 8-15 (zeros past row n)."""
    n, K = x.shape
    nb = -(-n // ROWS)
    padded = np.zeros((nb * ROWS, K), dtype=np.float32)
    padded[:n] = x
    return np.ascontiguousarray(padded.reshape(nb, ROWS // 2, 2, K).transpose(0, 3, 2, 1).reshape(nb, K, ROWS))


@_jit
def _write(out, n, b, c, even, odd, lanes):
    store8(lanes, 0, even)
    store8(lanes, 8, odd)
    for j in range(8):
        i = ROWS * b + 2 * j
        if i < n:
            out[i, c] = lanes[j]
        if i + 1 < n:
            out[i + 1, c] = lanes[8 + j]


@_jit
def product(xb, n, w, out):
    """out = x @ w in the order above. xb: ``blocked_rows(x)`` (nb, K, 16); n: x's rows; w: (K, C) binary32;
    out: (n, C) binary32, overwritten."""
    nb, K, _ = xb.shape
    C = w.shape[1]
    tail = C % 8
    wt = np.empty(C * K, dtype=np.float32)        # W's columns, each contiguous
    for k in range(K):
        for c in range(C):
            wt[c * K + k] = w[k, c]
    lanes = np.empty(ROWS, dtype=np.float32)
    zero = splat8(np.float32(0.0))
    for b in range(nb):
        x = xb[b].reshape(K * ROWS)
        c = tail
        while c + 4 <= C:                         # four plain columns: one chain per lane, k in order
            e0 = o0 = e1 = o1 = e2 = o2 = e3 = o3 = zero
            for k in range(K):
                e = load8(x, k * ROWS)
                o = load8(x, k * ROWS + 8)
                w0 = splat8(wt[c * K + k])
                w1 = splat8(wt[(c + 1) * K + k])
                w2 = splat8(wt[(c + 2) * K + k])
                w3 = splat8(wt[(c + 3) * K + k])
                e0 = add8(e0, mul8(e, w0))
                o0 = add8(o0, mul8(o, w0))
                e1 = add8(e1, mul8(e, w1))
                o1 = add8(o1, mul8(o, w1))
                e2 = add8(e2, mul8(e, w2))
                o2 = add8(o2, mul8(o, w2))
                e3 = add8(e3, mul8(e, w3))
                o3 = add8(o3, mul8(o, w3))
            _write(out, n, b, c, e0, o0, lanes)
            _write(out, n, b, c + 1, e1, o1, lanes)
            _write(out, n, b, c + 2, e2, o2, lanes)
            _write(out, n, b, c + 3, e3, o3, lanes)
            c += 4
        while c < C:
            e0 = o0 = zero
            for k in range(K):
                w0 = splat8(wt[c * K + k])
                e0 = add8(e0, mul8(load8(x, k * ROWS), w0))
                o0 = add8(o0, mul8(load8(x, k * ROWS + 8), w0))
            _write(out, n, b, c, e0, o0, lanes)
            c += 1
        for c in range(tail):                     # the first C mod 8 columns: odd rows sum odd groups of 4 first
            e0 = o0 = zero
            for g in range(0, K, 4):
                end = min(K, g + 4)
                if (g >> 2) & 1:
                    w0 = splat8(wt[c * K + g])
                    e0 = add8(e0, mul8(load8(x, g * ROWS), w0))
                    group = mul8(load8(x, g * ROWS + 8), w0)
                    for k in range(g + 1, end):
                        w0 = splat8(wt[c * K + k])
                        e0 = add8(e0, mul8(load8(x, k * ROWS), w0))
                        group = add8(group, mul8(load8(x, k * ROWS + 8), w0))
                    o0 = add8(o0, group)
                else:
                    for k in range(g, end):
                        w0 = splat8(wt[c * K + k])
                        e0 = add8(e0, mul8(load8(x, k * ROWS), w0))
                        o0 = add8(o0, mul8(load8(x, k * ROWS + 8), w0))
            _write(out, n, b, c, e0, o0, lanes)
