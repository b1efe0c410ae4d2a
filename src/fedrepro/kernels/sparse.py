"""CSR products and CuteMaxVar's quantizer as single loops (numba), in SciPy's and NumPy's operation order.

- ``csr_matmul_into``: out = X Q for a CSR X (J, N) and a dense Q (N, K): SciPy's ``csr_matvecs`` loop
  (per row, per stored entry in storage order, y_k += a x_jk starting from 0).
- ``csr_batch_gradient_into``: out = X_Fᵀ (X_F Q - Ĝ_F) for the rows F, without building X_F: per row of F the
  residual r = X_f Q - Ĝ_f (as ``csr_matvecs`` on the row slice computes it), then out_j += a r_k over the row's
  entries, rows in F's order — what ``csc_matvecs`` does for X_Fᵀ: the same sums in the same order.
- ``maxabs_quantize_add``: x̂ += C̃(Δ) with Δ = x - x̂ row by row (gcca eq. 18, MaxAbsStochasticQuantizer's
  NumPy operations: m = max|Δ|, t = |Δ| (S / m), h = ⌊t⌋ + [u < t - ⌊t⌋], C̃ = (sign(Δ) h) (m / S)).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from fedrepro.kernels import _csr_unrolled
from fedrepro.kernels._csr_unrolled import MAX_UNROLLED, fetch_row

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)


# M = X Q with the K sums of a row in K named locals (registers) is two to three times faster than a loop over k
# (whose sums go through memory): ``_csr_unrolled`` holds one such routine per K up to MAX_UNROLLED, written out
# by ``_generate`` into a source file so that numba caches them on disk like every other kernel here; a larger K
# takes the loops below (the same sums in the same order).
#
# Minibatch rows are scattered over the matrix: each one's entries are a fresh miss in every cache level, and
# a loop fetches them one dependent miss after another. The gradient asks for the entries of the row
# PREFETCH_ROWS ahead while it computes (1.4x faster on this machine's 5000-row minibatches).
PREFETCH_ROWS = 8

# The unrolled routines take Q (and the gradient's out) flattened and index the entry loops with unsigned integers:
# numba wraps a negative signed index around (a sign test and a select per load) and reads a 2-D array's row stride
# from memory (a multiply), so the loop over a row's entries carried three integer operations per load. With a
# constant stride K and no sign, M = X Q took 0.64x the time and the minibatch gradient 0.80x on one Fig. 8
# view (2 M entries, K = 5; 0.76x and 0.82x in bench_gcca's blocks); the floating-point operations, and so the
# bits, are the same. CSR indices are non-negative (SciPy checks them when it builds the matrix).


def csr_matmul_into(indptr, indices, data, Q, out) -> None:
    K = Q.shape[1]
    if 0 < K <= MAX_UNROLLED:
        _csr_unrolled.MATMUL[K](indptr, indices, data, np.ascontiguousarray(Q).reshape(-1), out)
    else:
        _csr_matmul_loop(indptr, indices, data, Q, out)


def csr_batch_gradient_into(indptr, indices, data, rows, Q, Ghat, out) -> None:
    K = Q.shape[1]
    if not 0 < K <= MAX_UNROLLED:
        _csr_batch_gradient_loop(indptr, indices, data, rows, Q, Ghat, out, PREFETCH_ROWS)
        return
    contiguous = out.flags.c_contiguous
    flat = out.reshape(-1) if contiguous else np.empty(out.size, dtype=out.dtype)
    _csr_unrolled.GRADIENT[K](indptr, indices, data, rows, np.ascontiguousarray(Q).reshape(-1), Ghat, flat,
                              PREFETCH_ROWS)
    if not contiguous:
        out[...] = flat.reshape(out.shape)


@_jit
def _csr_matmul_loop(indptr, indices, data, Q, out):
    J = indptr.shape[0] - 1
    K = Q.shape[1]
    for i in range(J):
        for k in range(K):
            out[i, k] = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            j = indices[jj]
            a = data[jj]
            for k in range(K):
                out[i, k] += a * Q[j, k]


@_jit
def _csr_batch_gradient_loop(indptr, indices, data, rows, Q, Ghat, out, ahead):
    K = Q.shape[1]
    out[:, :] = 0.0
    r = np.empty(K)
    n = rows.shape[0]
    for t in range(n):
        if t + ahead < n:
            fetch_row(indptr, indices, data, rows[t + ahead])
        f = rows[t]
        lo, hi = indptr[f], indptr[f + 1]
        for k in range(K):
            r[k] = 0.0
        for jj in range(lo, hi):
            j = indices[jj]
            a = data[jj]
            for k in range(K):
                r[k] += a * Q[j, k]
        for k in range(K):
            r[k] = r[k] - Ghat[f, k]
        for jj in range(lo, hi):
            j = indices[jj]
            a = data[jj]
            for k in range(K):
                out[j, k] += a * r[k]


@_jit
def maxabs_quantize_add(x, xhat, u, S):
    """xhat (B, d) += C̃(x - xhat) per row, u (B, d) the uniforms. x may be xhat's shape or None-free only."""
    B, d = xhat.shape
    for b in range(B):
        m = 0.0
        nan = False
        for e in range(d):
            a = abs(x[b, e] - xhat[b, e])
            if a > m:
                m = a
            elif a != a:
                nan = True
        if nan:
            m = math.nan
        scale = S / (m if m > 0 else 1.0)
        step = m / S
        for e in range(d):
            delta = x[b, e] - xhat[b, e]
            t = abs(delta) * scale
            low = np.floor(t)
            h = low + (1.0 if u[b, e] < t - low else 0.0)
            s = 1.0 if delta > 0 else (-1.0 if delta < 0 else (0.0 if delta == 0 else delta))
            xhat[b, e] += (s * h) * step
