"""The decentral engine's element-wise passes as single loops (numba): one pass over memory where torch makes
several. They compute torch's formulas (``a.add_(b, alpha=s)`` as a fused multiply-add, Python scalars in the
tensor's dtype); results agree with torch's to float rounding (tests/kernels/test_dense_kernels.py).

- ``momentum_step``: v = (v c) + g;  x = fma(fma(v, β, g), -η, x)  (Nesterov)  or  x = fma(v, -η, x), with
  g = (x wd) + g first when weight decay is on: one pass where torch makes four or five.
- ``gossip_add``: x_i += γ (((w_i1 y_j1 + w_i2 y_j2) + ...) - y_i) over each row's neighbour list (padded with
  zero weights), the GatherMixer/SliceMixer sums (fedrepro.decentral.mixing), the difference, the γ product
  (skipped for γ = 1) and the update of x in one pass instead of eight.
"""

from __future__ import annotations

import math

import numba
import numba.extending
import numpy as np

from fedrepro.kernels.intrinsics import bits32, bits64, fma

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)


@_jit
def momentum_step(x, v, g, c, beta, neg_eta, wd, nesterov):
    """x, v (updated in place), g: 1-D arrays of one dtype; c, beta, neg_eta, wd: scalars of that dtype."""
    if wd != 0:
        for e in range(x.shape[0]):
            g_e = x[e] * wd + g[e]
            v_e = v[e] * c + g_e
            v[e] = v_e
            x[e] = fma(fma(v_e, beta, g_e), neg_eta, x[e]) if nesterov else fma(v_e, neg_eta, x[e])
    elif nesterov:                 # one loop per case: a branch inside would keep the loop from vectorizing
        for e in range(x.shape[0]):
            v_e = v[e] * c + g[e]
            v[e] = v_e
            x[e] = fma(fma(v_e, beta, g[e]), neg_eta, x[e])
    else:
        for e in range(x.shape[0]):
            v_e = v[e] * c + g[e]
            v[e] = v_e
            x[e] = fma(v_e, neg_eta, x[e])



@_jit
def gossip_add(x, y, idx, w, gamma, scale):
    """x (n, d) += γ (W y - y) row by row; idx (n, k) neighbour rows in increasing order (padded with the row
    itself), w (n, k) their weights (0 for padding) in y's dtype; scale False skips the γ product."""
    n, d = y.shape
    k = idx.shape[1]
    if k == 3:                   # a ring: the same operations in one loop over the row (2.1x faster)
        _gossip_add_three(x, y, idx, w, gamma, scale)
        return
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
def _gossip_add_three(x, y, idx, w, gamma, scale):
    """gossip_add for three entries per row, each entry's chain of products and sums in registers (a loop over
    the neighbours inside the loop over the row does not vectorize)."""
    n, d = y.shape
    for i in range(n):
        a, b, c = y[idx[i, 0]], y[idx[i, 1]], y[idx[i, 2]]
        wa, wb, wc = w[i, 0], w[i, 1], w[i, 2]
        yi, xi = y[i], x[i]
        if scale:
            for e in range(d):
                acc = wa * a[e]
                acc = acc + wb * b[e]
                acc = acc + wc * c[e]
                xi[e] = xi[e] + (acc - yi[e]) * gamma
        else:
            for e in range(d):
                acc = wa * a[e]
                acc = acc + wb * b[e]
                acc = acc + wc * c[e]
                xi[e] = xi[e] + (acc - yi[e])


@_jit
def sign_scale_add(x, xhat, scale, zero_is_positive):
    """xhat (B, d) += scale[b] · s(x[b, e]) in place: s = torch.sign, s(0) = +1 if zero_is_positive else 0, and
    x̂ + x for a NaN x (torch.sign gives 0 there, but a NaN in a row makes its scale ||x||_1 / d NaN, where both
    give NaN); scale (B,) of x's dtype. ±1 times the scale is exact, so adding the scale or its negation is
    torch's sum.

    A row with a finite scale adds one of three values picked without a branch (the signs of x - x̂ are random, and
    a branch per entry mispredicted half the time: 19x slower); a row with a NaN or infinite scale (the row holds
    a NaN or an infinity) takes the entry-by-entry branches, which keep each NaN's payload and sign as torch does."""
    B, d = x.shape
    zeros = np.empty(1, dtype=xhat.dtype)
    for r in range(B):
        xr, hr, sc = x[r], xhat[r], scale[r]
        if math.isfinite(sc):
            neg = -sc
            zeros[0] = sc * 0          # in xhat's dtype (exact), so that the loop's values stay in it
            at_zero = sc if zero_is_positive else zeros[0]
            for e in range(d):
                v = xr[e]
                hr[e] = hr[e] + (sc if v > 0 else (neg if v < 0 else (at_zero if v == 0 else v)))
            continue
        for e in range(d):
            v = xr[e]
            if v > 0 or (v == 0 and zero_is_positive):
                hr[e] = hr[e] + sc
            elif v < 0:
                hr[e] = hr[e] - sc
            elif v == 0:
                hr[e] = hr[e] + sc * 0     # +0 (or NaN for an infinite or NaN scale), as 0 · scale in torch
            else:
                hr[e] = hr[e] + v          # NaN


TOP_BLOCKS = 256                 # top_magnitudes' strided blocks per row (at least 4 (k + 1))
_ABS32 = np.int32(2**31 - 1)
_ABS64 = np.int64(2**63 - 1)


def _magnitude_key(v):
    """|v|'s bits as an integer (binary32 -> int32, binary64 -> int64): ordered as the magnitudes, NaN above all."""
    raise NotImplementedError


@numba.extending.overload(_magnitude_key)
def _magnitude_key_for(v):
    if v == numba.types.float32:
        return lambda v: np.int32(bits32(v) & _ABS32)
    if v == numba.types.float64:
        return lambda v: np.int64(bits64(v) & _ABS64)
    return None


def _keys(x, n):
    """An uninitialised array of n magnitude keys for x's dtype."""
    raise NotImplementedError


@numba.extending.overload(_keys)
def _keys_for(x, n):
    if x.dtype == numba.types.float32:
        return lambda x, n: np.empty(n, dtype=np.int32)
    return lambda x, n: np.empty(n, dtype=np.int64)


@_jit
def _insert(vals, cols, m, k, v, e):
    """Insert value v of column e among the m (<= k + 1) held, sorted decreasing (after equal ones), keeping the
    k + 1 largest; returns the new count."""
    if m == k + 1 and not v > vals[k]:
        return m
    pos = m if m < k + 1 else k
    while pos > 0 and vals[pos - 1] < v:
        vals[pos], cols[pos] = vals[pos - 1], cols[pos - 1]
        pos -= 1
    vals[pos], cols[pos] = v, e
    return m + 1 if m < k + 1 else m


@_jit
def top_magnitudes(x, k, idx):
    """idx (B, k) = the columns of the k largest |x| of each row of x (B, d), largest first — what torch.topk
    (partial sort, used for k·64 <= d) returns — where that answer is unique: the k largest magnitudes all
    distinct and larger than the (k+1)-th. Returns False (idx unspecified) if a row has a tie there or a NaN.

    Per row, the largest magnitude of each of nb strided blocks (block j: columns j, j + nb, j + 2 nb, ...) first,
    on the bits (which order magnitudes as the values do and put a NaN above them all), as an element-wise
    maximum over the row's consecutive nb-entry slices: vectorized, no reduction inside a block. The (k+1)-th
    largest block maximum T is at most the row's (k+1)-th largest magnitude (the maxima are k + 1 distinct
    entries), so only the blocks whose maximum reaches T can hold the k + 1 largest, and only their entries at
    or above T are sorted in (the answer does not depend on the order they come in: a tie returns False)."""
    B, d = x.shape
    nb = min(d, max(TOP_BLOCKS, 4 * (k + 1)))
    vals = np.empty(k + 1, dtype=x.dtype)
    cols = np.empty(k + 1, dtype=np.int64)
    bmax = _keys(x, nb)
    top = _keys(x, k + 1)                          # the k + 1 largest block maxima, decreasing
    top_blocks = np.empty(k + 1, dtype=np.int64)   # (their blocks: unused)
    for r in range(B):
        row = x[r]
        for j in range(nb):
            bmax[j] = _magnitude_key(row[j])
        for s in range(nb, d - nb + 1, nb):
            piece = row[s : s + nb]
            # a select stored every time: max() does not vectorize, and a store under an `if` needs masked
            # stores (AVX-512); on AVX2 it ran 5.5x slower than this form
            for j in range(nb):
                b = _magnitude_key(piece[j])
                c = bmax[j]
                bmax[j] = b if b > c else c
        tail = d - d % nb if d % nb else d
        for e in range(max(tail, nb), d):
            b = _magnitude_key(row[e])
            if b > bmax[e - tail]:
                bmax[e - tail] = b
        held = 0
        for j in range(nb):
            held = _insert(top, top_blocks, held, k, bmax[j], j)
        threshold = top[k]
        m = 0
        for j in range(nb):
            if bmax[j] < threshold:
                continue
            for e in range(j, d, nb):
                if _magnitude_key(row[e]) < threshold:
                    continue
                v = abs(row[e])
                if v != v:
                    return False
                m = _insert(vals, cols, m, k, v, e)
        if m < k + 1:
            return False
        for j in range(k):
            if not vals[j] > vals[j + 1]:
                return False
            idx[r, j] = cols[j]
    return True
