"""A grouped 2-D convolution with one output channel per group (stride 1, no dilation), in oneDNN's order.

Stacked clients make a convolution grouped, one group per client (``torch.func.vmap`` over a convolution with
per-client weights, fedrepro.adept.fed). Where each client's layer has a single output channel (BasicUNet's last
layer), oneDNN runs the grouped convolution as im2col and a matrix product with one column per group, slowly: for
10 clients, 12 images of 28x28 and 8 -> 1 channels of 5x5 (19 M multiply-adds each way) the forward took 10.6 ms,
the input gradient 30 ms and the weight gradient 19 ms on the 2-core machine, one thread. The loops below make the
same roundings in the same order as oneDNN's AVX2 code there, so their results are oneDNN's bit for bit:

- ``forward``: y[b, g, oh, ow] is one chain of fused multiply-adds from +0 over the group's input channels, then
  the kernel rows, then the kernel columns, the padding's zeros included (im2col, then the matrix product);
- ``input_grad``: dx[b, g·C + c, ih, iw] adds the products w[g, c, kh, kw] · dy[b, g, oh, ow], each rounded on its
  own, to +0 in the order of kh, then kw, skipping the taps that fall in the padding (the product, then col2im);
- ``weight_grad``: per image, each im2col row dotted with the output gradient as oneDNN's transposed matrix-vector
  kernel does it (eight lanes of fused multiply-adds, its horizontal sum, ``_dot_into``), the images added in
  order. That is oneDNN's order with one thread; with more, oneDNN splits the images between threads and adds
  their parts, so its bits depend on the thread count and these do not.

tests/kernels/test_grouped_conv.py checks all three against ``F.conv2d`` and ``convolution_backward`` bit for bit
(one thread) and against float64 sums.
"""

from __future__ import annotations

import numba
import numpy as np

from fedrepro.kernels.intrinsics import fma

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)


@_jit
def pad_into(x, pad, xp):
    """xp = x with `pad` zeros on every side of each image (what F.pad does, in one pass): x (B, N, H, W),
    xp (B, N, H + 2 pad, W + 2 pad), overwritten. The loops read the padded copy: every index is then in range, so
    their inner loops vectorise, and the padding's taps are products with zeros, as in oneDNN's im2col."""
    B, N, H, W = x.shape
    zero = np.float32(0.0)
    for b in range(B):
        for c in range(N):
            out = xp[b, c]
            for i in range(pad):
                out[i, :] = zero
                out[pad + H + i, :] = zero
            for ih in range(H):
                row = out[pad + ih]
                src = x[b, c, ih]
                for i in range(pad):
                    row[i] = zero
                    row[pad + W + i] = zero
                for iw in range(W):
                    row[pad + iw] = src[iw]


@_jit
def forward(xp, w, out):
    """out[b, g] = the group's convolution; xp: (B, G·C, H + K - 1, W + K - 1), the input zero-padded;
    w: (G, C, K, K); out: (B, G, H, W), overwritten."""
    B, G, H, W = out.shape
    C, K = w.shape[1], w.shape[2]
    for b in range(B):
        for g in range(G):
            for oh in range(H):
                row = out[b, g, oh]
                for ow in range(W):
                    row[ow] = np.float32(0.0)
                for c in range(C):
                    for kh in range(K):
                        src = xp[b, g * C + c, oh + kh]
                        for kw in range(K):
                            wv = w[g, c, kh, kw]
                            for ow in range(W):
                                row[ow] = fma(wv, src[ow + kw], row[ow])


@_jit
def input_grad(dy, w, pad, out):
    """out = dL/dx of ``forward`` for the output gradient dy: (B, G, Ho, Wo); w: (G, C, K, K); pad: the
    convolution's zero padding (per side); out: (B, G·C, H, W), overwritten."""
    B, G, Ho, Wo = dy.shape
    C, K = w.shape[1], w.shape[2]
    H, W = out.shape[2], out.shape[3]
    for b in range(B):
        for g in range(G):
            for c in range(C):
                for ih in range(H):
                    row = out[b, g * C + c, ih]
                    for iw in range(W):
                        row[iw] = np.float32(0.0)
                    for kh in range(K):
                        oh = ih + pad - kh
                        if oh < 0 or oh >= Ho:
                            continue
                        src = dy[b, g, oh]
                        for kw in range(K):
                            wv = w[g, c, kh, kw]
                            lo = max(0, kw - pad)
                            hi = min(W, Wo + kw - pad)
                            # slices, so that every index is provably non-negative and the loop vectorises
                            acc = row[lo:hi]
                            s = src[lo + pad - kw:hi + pad - kw]
                            for i in range(hi - lo):
                                acc[i] += wv * s[i]


@_jit
def _lanes_sum(a0, a1, a2, a3, a4, a5, a6, a7):
    """oneDNN's horizontal sum of an 8-lane accumulator (vhaddps, vperm2f128, vaddps, vhaddps)."""
    return np.float32(np.float32(a0 + a1) + np.float32(a4 + a5)) + np.float32(np.float32(a2 + a3) + np.float32(a6 + a7))


@_jit
def _dot_into(y, d, a, n):
    """y + d·a as oneDNN's AVX2 transposed matrix-vector kernel forms it: eight lanes, lane l taking entries
    l, l + 8, l + 16, ... by fused multiply-adds (16 entries a step), the lanes summed and added to y; then the
    remaining 8, 4, 2 and 1 entries, each group in fresh lanes, summed and added to y on its own."""
    z = np.float32(0.0)
    a0 = z
    a1 = z
    a2 = z
    a3 = z
    a4 = z
    a5 = z
    a6 = z
    a7 = z
    j = 0
    while n - j >= 16:
        dj = d[j:j + 16]
        aj = a[j:j + 16]
        a0 = fma(dj[0], aj[0], a0)
        a1 = fma(dj[1], aj[1], a1)
        a2 = fma(dj[2], aj[2], a2)
        a3 = fma(dj[3], aj[3], a3)
        a4 = fma(dj[4], aj[4], a4)
        a5 = fma(dj[5], aj[5], a5)
        a6 = fma(dj[6], aj[6], a6)
        a7 = fma(dj[7], aj[7], a7)
        a0 = fma(dj[8], aj[8], a0)
        a1 = fma(dj[9], aj[9], a1)
        a2 = fma(dj[10], aj[10], a2)
        a3 = fma(dj[11], aj[11], a3)
        a4 = fma(dj[12], aj[12], a4)
        a5 = fma(dj[13], aj[13], a5)
        a6 = fma(dj[14], aj[14], a6)
        a7 = fma(dj[15], aj[15], a7)
        j += 16
    if j > 0:
        y = y + _lanes_sum(a0, a1, a2, a3, a4, a5, a6, a7)
    part = 8
    while part > 0:
        if (n - j) & part:
            lanes = np.zeros(8, np.float32)
            for i in range(part):
                lanes[i] = fma(d[j + i], a[j + i], z)
            y = y + _lanes_sum(lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5], lanes[6], lanes[7])
            j += part
        part >>= 1
    return y


@_jit
def weight_grad(xp, dy, out):
    """out = dL/dw of ``forward``: xp as there; dy: (B, G, H, W); out: (G, C, K, K), overwritten. Per image the
    im2col rows (c, kh, kw) are dotted with the image's output gradient (``_dot_into``), the images added in order."""
    B, G, H, W = dy.shape
    C, K = out.shape[1], out.shape[2]
    n = H * W
    rows = C * K * K
    col = np.empty((rows, n), np.float32)
    for g in range(G):
        res = out[g].reshape(rows)
        for r in range(rows):
            res[r] = np.float32(0.0)
        for b in range(B):
            for c in range(C):
                plane = xp[b, g * C + c]
                for kh in range(K):
                    for kw in range(K):
                        row = col[(c * K + kh) * K + kw]
                        for oh in range(H):
                            src = plane[oh + kh, kw:kw + W]
                            dst = row[oh * W:(oh + 1) * W]
                            for ow in range(W):
                                dst[ow] = src[ow]
            d = dy[b, g].reshape(n)
            for r in range(rows):
                res[r] = _dot_into(res[r], d, col[r], n)
