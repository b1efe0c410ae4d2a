"""CSR products and CuteMaxVar's quantizer as single loops (numba), in SciPy's and NumPy's operation order.

- ``csr_matmul_into``: out = X Q for a CSR X (J, N) and a dense Q (N, K): SciPy's ``csr_matvecs`` loop
  (per row, per stored entry in storage order, y_k += a x_jk starting from 0).
- ``maxabs_quantize_add``: x̂ += C̃(Δ) with Δ = x - x̂ row by row (gcca eq. 18, MaxAbsStochasticQuantizer's
  NumPy operations: m = max|Δ|, t = |Δ| (S / m), h = ⌊t⌋ + [u < t - ⌊t⌋], C̃ = (sign(Δ) h) (m / S)).
"""

from __future__ import annotations

import math

import numba
import numpy as np

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

def _generate(template: str, K: int):
    acc = [f"r{k}" for k in range(K)]
    src = template.format(
        zero=" = ".join(acc) + " = 0.0",
        accumulate="; ".join(f"r{k} += a * Q[j, {k}]" for k in range(K)),
        store="; ".join(f"out[i, {k}] = r{k}" for k in range(K)))
    scope: dict = {}
    exec(compile(src, f"<fedrepro.kernels.sparse K={K}>", "exec"), scope)
    return numba.njit(nogil=True, boundscheck=False)(scope["kernel"])


_KERNELS: dict = {}


def csr_matmul_into(indptr, indices, data, Q, out) -> None:
    K = Q.shape[1]
    if K not in _KERNELS:
        _KERNELS[K] = _csr_matmul_loop if K > MAX_UNROLLED else _generate(_MATMUL, K)
    _KERNELS[K](indptr, indices, data, Q, out)


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
