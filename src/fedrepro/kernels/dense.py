"""The decentral engine's element-wise passes as single loops (numba), in torch's operation order.

torch's ``a.add_(b, alpha=s)`` is a fused multiply-add, fma(b, s, a), and its Python scalars are rounded to
the tensor's dtype before use; every other product and sum is rounded on its own. The kernels below do the
same operations on the same values, one element at a time, so the engine's trajectories keep their bits:

- ``momentum_step``: v = (v c) + g;  x = fma(fma(v, β, g), -η, x)  (Nesterov)  or  x = fma(v, -η, x),
  with g = (x wd) + g first when weight decay is on — one pass where torch makes four or five.
- ``gossip_add``: x_i += γ (((w_i1 y_j1 + w_i2 y_j2) + ...) - y_i) over each row's neighbour list (padded with
  zero weights), the GatherMixer/SliceMixer sums (fedrepro.decentral.mixing), the difference, the γ product
  (skipped for γ = 1, as the engine skips it) and the update of x in one pass instead of eight.
"""

from __future__ import annotations

import numba
import numpy as np

from fedrepro.kernels.intrinsics import fma

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)


@_jit
def momentum_step(x, v, g, c, beta, neg_eta, wd, nesterov):
    """x, v (updated in place), g: 1-D arrays of one dtype; c, beta, neg_eta, wd: scalars of that dtype."""
    use_wd = wd != 0
    for i in range(x.shape[0]):
        gi = g[i]
        if use_wd:
            gi = x[i] * wd + gi
        vi = v[i] * c + gi
        v[i] = vi
        if nesterov:
            x[i] = fma(fma(vi, beta, gi), neg_eta, x[i])
        else:
            x[i] = fma(vi, neg_eta, x[i])


@_jit
def gossip_add(x, y, idx, w, gamma, scale):
    """x (n, d) += γ (W y - y) row by row; idx (n, k) neighbour rows in increasing order (padded with the row
    itself), w (n, k) their weights (0 for padding) in y's dtype; scale False skips the γ product."""
    n, d = y.shape
    k = idx.shape[1]
    acc = np.empty(d, dtype=y.dtype)
    for i in range(n):
        src, wi = y[idx[i, 0]], w[i, 0]
        for e in range(d):
            acc[e] = wi * src[e]
        for j in range(1, k):
            src, wi = y[idx[i, j]], w[i, j]
            for e in range(d):
                acc[e] = acc[e] + wi * src[e]
        yi, xi = y[i], x[i]
        if scale:
            for e in range(d):
                xi[e] = xi[e] + (acc[e] - yi[e]) * gamma
        else:
            for e in range(d):
                xi[e] = xi[e] + (acc[e] - yi[e])


@_jit
def top_magnitudes(x, k, idx):
    """idx (B, k) = the columns of the k largest |x| of each row of x (B, d), largest first — what torch.topk
    (partial sort, used for k·64 <= d) returns — where that answer is unique: the k largest magnitudes all
    distinct and larger than the (k+1)-th. Returns False (idx unspecified) if a row has a tie there or a NaN."""
    B, d = x.shape
    vals = np.empty(k + 1, dtype=x.dtype)
    cols = np.empty(k + 1, dtype=np.int64)
    for r in range(B):
        row = x[r]
        m = 0                                   # entries held, sorted decreasing in vals[:m]
        for e in range(d):
            v = abs(row[e])
            if v != v:
                return False
            if m == k + 1 and not v > vals[k]:
                continue
            pos = m if m < k + 1 else k         # insert v before the first smaller value (after equal ones)
            while pos > 0 and vals[pos - 1] < v:
                vals[pos], cols[pos] = vals[pos - 1], cols[pos - 1]
                pos -= 1
            vals[pos], cols[pos] = v, e
            if m < k + 1:
                m += 1
        if m < k + 1:
            return False
        for j in range(k):
            if not vals[j] > vals[j + 1]:
                return False
            idx[r, j] = cols[j]
    return True
