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

from fedrepro.kernels.intrinsics import prefetch

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)


# The products are generated per column count K (up to MAX_UNROLLED): K named accumulators keep a row's sums in
# registers, which makes them two to three times faster than a loop over k (whose sums go through memory).
MAX_UNROLLED = 16

_MATMUL = """
def kernel(indptr, indices, data, Q, out):
    for i in range(indptr.shape[0] - 1):
        {zero}
        for jj in range(indptr[i], indptr[i + 1]):
            j = indices[jj]
            a = data[jj]
            {accumulate}
        {store}
"""

# Minibatch rows are scattered over the matrix: each one's entries are a fresh miss in every cache level, and
# a loop fetches them one dependent miss after another. The gradient asks for the entries of the row
# PREFETCH_ROWS ahead while it computes (1.4x faster on this machine's 5000-row minibatches).
PREFETCH_ROWS = 8

_GRADIENT = """
def kernel(indptr, indices, data, rows, Q, Ghat, out, ahead):
    out[:, :] = 0.0
    n = rows.shape[0]
    for t in range(n):
        if t + ahead < n:
            _fetch_row(indptr, indices, data, rows[t + ahead])
        f = rows[t]
        lo, hi = indptr[f], indptr[f + 1]
        {zero}
        for jj in range(lo, hi):
            j = indices[jj]
            a = data[jj]
            {accumulate}
        {residual}
        for jj in range(lo, hi):
            j = indices[jj]
            a = data[jj]
            {scatter}
"""


@_jit
def _fetch_row(indptr, indices, data, f):
    lo, hi = indptr[f], indptr[f + 1]
    for jj in range(lo, hi, 8):
        prefetch(data, jj)
    for jj in range(lo, hi, 16):
        prefetch(indices, jj)


def _generate(template: str, K: int):
    acc = [f"r{k}" for k in range(K)]
    src = template.format(
        zero=" = ".join(acc) + " = 0.0",
        accumulate="; ".join(f"r{k} += a * Q[j, {k}]" for k in range(K)),
        store="; ".join(f"out[i, {k}] = r{k}" for k in range(K)),
        residual="; ".join(f"r{k} = r{k} - Ghat[f, {k}]" for k in range(K)),
        scatter="; ".join(f"out[j, {k}] += a * r{k}" for k in range(K)))
    scope: dict = {"_fetch_row": _fetch_row}
    exec(compile(src, f"<fedrepro.kernels.sparse K={K}>", "exec"), scope)
    return numba.njit(nogil=True, boundscheck=False)(scope["kernel"])


_KERNELS: dict = {}


def _kernel(kind: str, K: int):
    if (kind, K) not in _KERNELS:
        if K > MAX_UNROLLED:
            _KERNELS[kind, K] = _csr_matmul_loop if kind == "matmul" else _csr_batch_gradient_loop
        else:
            _KERNELS[kind, K] = _generate(_MATMUL if kind == "matmul" else _GRADIENT, K)
    return _KERNELS[kind, K]


def csr_matmul_into(indptr, indices, data, Q, out) -> None:
    _kernel("matmul", Q.shape[1])(indptr, indices, data, Q, out)


def csr_batch_gradient_into(indptr, indices, data, rows, Q, Ghat, out) -> None:
    _kernel("gradient", Q.shape[1])(indptr, indices, data, rows, Q, Ghat, out, PREFETCH_ROWS)


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
            _fetch_row(indptr, indices, data, rows[t + ahead])
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
